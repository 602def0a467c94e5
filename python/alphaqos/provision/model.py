"""What to render: the α prefixes and the policy, resolved once for every
target.

Inputs
    *Prefixes*: the ``prefixes`` table of ``alphaqos flows identify`` (a
    DuckDB file; its ``settings`` give the aging period, its ``processed``
    table the reference time the table was aged at), or a text file of
    lines ``src|dst PREFIX [LAST_SEEN]`` (``#`` starts a comment;
    ``LAST_SEEN`` an ISO 8601 UTC time, optional).

    *Policy*: one policy document, the schema of a scenario's ``policies:``
    entry (:class:`alphaqos.policy.Policy`), errors reported with the file's
    name and line. Without one, :data:`DEFAULT_POLICY`.

Defaults
    :data:`DEFAULT_POLICY` is the first document's recommendation (Yan et
    al. 2013, Sections III-B and IV): two queues and no policing. The
    numbers are those of its experiment 1 "2-queues" configuration
    (``scenarios/yan2013/exp1-2queues.yaml``): ``alpha`` 60% of the
    transmit rate and of the buffer at ``medium-high`` priority, ``beta``
    (everything else, the default class) 40% at ``medium-low``, on the
    125 MB interface buffer measured on the testbed's MX80. α traffic is a
    packet whose source is in the α source list and whose destination is in
    the α destination list (Section II).

Aging
    An entry leaves the table when ``aging`` has passed since its
    ``last_seen`` (:mod:`alphaqos.flows.identify`), so a router that ages
    entries itself (nftables set timeouts) is given ``aging - (reference -
    last_seen)`` for each, ``reference`` being the time the table was aged
    at (default: the end of the data identify processed; ``--reference``).

What a target cannot express
    A renderer that meets a policy element its target has no statement for
    records it with :meth:`Plan.note` (the element, the target, and why);
    the command refuses to write anything while any is recorded, unless
    ``--allow-partial``, and then each file lists what it leaves out in a
    comment at its top and beside the place the element belongs.

Interfaces
    Names are given per platform (``junos``, ``cisco``, ``linux``; the tc,
    nftables and DTN files are ``linux``), for the ingress (the filter, the
    input policy) and the egress (the schedulers, the output policy, the
    tc device) separately: one name never serves every target.

Only IPv4 is rendered (the policy schema is IPv4); IPv6 prefixes of the
table are counted and reported as not rendered.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..policy import PRIORITIES, ClassRef, DropProfile, Policy, Temporal, Term, check_policy
from ..scenario import load_policy_file

#: A DTN shapes its sending to this share of its circuit's reservation
#: (Zurawski 2013, Section 5: 90-92 %); `shape --share`, `provision
#: --host-share` and the circuits southbound default to it.
HOST_SHARE_PERCENT = 90.0

__all__ = [
    "DEFAULT_AGING_DAYS",
    "PLATFORMS",
    "Missing",
    "DEFAULT_POLICY",
    "ClassPlan",
    "Plan",
    "PrefixEntry",
    "build_plan",
    "cisco_wred",
    "junos_curve",
    "load_policy",
    "read_prefix_db",
    "read_prefix_list",
]

#: Yan et al. 2013, experiment 1 "2-queues" (see the module doc).
DEFAULT_POLICY: dict[str, Any] = {
    "buffer": "125MB",
    "classes": {
        "beta": {"transmit_rate": "40%", "buffer_size": "40%", "priority": "medium-low"},
        "alpha": {"transmit_rate": "60%", "buffer_size": "60%", "priority": "medium-high"},
    },
}
#: HNTES's aging period (Section II), for a prefix list without a database.
DEFAULT_AGING_DAYS = 30
#: The platforms interface names are given for; the targets rendered for each.
PLATFORMS = {"junos": ("junos",), "cisco": ("cisco",), "linux": ("tc", "nftables", "dtn")}


class InputError(ValueError):
    """Bad prefix input (a line of a prefix list, a database without a
    prefix table); the command reports it with exit status 2."""


@dataclass(frozen=True)
class PrefixEntry:
    prefix: str
    role: str  # "src" or "dst"
    family: int = 4
    last_seen: datetime | None = None


@dataclass(frozen=True)
class ClassPlan:
    """One forwarding class as the targets see it. ``percent`` is the share
    of the link (transmit-rate percentage, or the scheduler's weights and
    quanta as shares); ``rate_bps`` an absolute transmit rate instead."""

    name: str
    index: int  # queue number: the policy's order, 0 the default class
    percent: float | None
    rate_bps: int | None
    remainder: bool
    priority: str
    exact: bool
    buffer_percent: float
    drop_profile: DropProfile | None


@dataclass(frozen=True)
class Missing:
    """A policy element a target cannot express: ``element`` names it as
    the policy does (``term 'scavenge': red action class scavenger``),
    ``reason`` says what the target lacks."""

    target: str
    element: str
    reason: str

    def __str__(self) -> str:
        return f"{self.target} cannot express {self.element} ({self.reason})"


def action_name(action: str | ClassRef | None) -> str:
    """A policer action as the policy writes it: ``discard``, ``transmit``,
    ``loss_priority_high`` or ``class scavenger``."""
    if isinstance(action, ClassRef):
        return f"class {action.class_}"
    return str(action)


@dataclass
class Plan:
    policy: Policy
    classes: list[ClassPlan]
    alpha_class: str
    alpha_src: list[PrefixEntry]
    alpha_dst: list[PrefixEntry]
    aging_s: int
    reference: datetime | None
    link_rate_bps: int
    #: Interface names per platform (:data:`PLATFORMS`).
    ingress: dict[str, str] = field(default_factory=dict)
    egress: dict[str, str] = field(default_factory=dict)
    #: tc leaf queues: ``fq_codel``, ``bfifo`` (rate x 10 ms) or ``policy``
    #: (the class's share of the policy's buffer).
    tc_leaf: str = "fq_codel"
    #: Junos: the share of the link kept for network-control (queue 3).
    network_control_percent: float = 5.0
    #: DTN host shaping: the circuit's rate (default: the link rate), the
    #: share of it to shape to, and the shaper (``htb`` or ``fq``).
    circuit_rate_bps: int | None = None
    host_share_percent: float = HOST_SHARE_PERCENT
    host_shaper: str = "htb"
    skipped_v6: int = 0
    missing: list[Missing] = field(default_factory=list)

    @property
    def terms(self) -> list[Term]:
        return list(self.policy.filter)

    @property
    def default_class(self) -> ClassPlan:
        return self.classes[0]

    def klass(self, name: str) -> ClassPlan:
        return next(c for c in self.classes if c.name == name)

    def timeout_s(self, entry: PrefixEntry) -> int:
        """Seconds left before ``entry`` ages out (the full aging period if
        its last sighting is unknown); at least 1."""
        if entry.last_seen is None or self.reference is None:
            return self.aging_s
        left = self.aging_s - (self.reference - entry.last_seen).total_seconds()
        return max(1, int(left))

    def note(self, target: str, element: str, reason: str) -> str:
        """Record a policy element ``target`` cannot express; returns the
        comment to write where it belongs."""
        item = Missing(target, element, reason)
        if item not in self.missing:
            self.missing.append(item)
        return f"not rendered: {element} ({reason})"

    def partial_header(self, target: str, comment: str) -> list[str]:
        """The comment lines that open a partial file: what it leaves out."""
        items = [m for m in self.missing if m.target == target]
        if not items:
            return []
        out = [f"{comment} PARTIAL (--allow-partial): this file does not do everything the policy does.",
               f"{comment} Not rendered:"]  # fmt: skip
        out += [f"{comment}   - {m.element} ({m.reason})" for m in items]
        return out

    def class_notes(self, target: str, c: ClassPlan, burst_reason: str | None, alternate_reason: str) -> list[str]:
        """Record the class parameters ``target`` has no statement for (its
        ``burst``, unless ``burst_reason`` is None, and MDRR's alternating
        low-latency queue); returns their comment texts."""
        klass = self.policy.classes[c.name]
        out = []
        if klass.burst is not None and burst_reason is not None:
            out.append(self.note(target, f"class {c.name!r}: burst {klass.burst}B", burst_reason))
        if klass.meter_window is not None and burst_reason is not None:
            out.append(self.note(target, f"class {c.name!r}: meter_window {klass.meter_window}ns", burst_reason))
        for field in ("excess_rate", "excess_priority"):
            if getattr(klass, field) is not None:
                out.append(self.note(target, f"class {c.name!r}: {field} {getattr(klass, field)}", "not rendered yet"))
        if klass.low_latency == "alternate-priority":
            out.append(self.note(target, f"class {c.name!r}: MDRR low_latency alternate-priority", alternate_reason))
        return out

    def colour_matters(self, class_name: str) -> bool:
        """Whether a packet's colour (loss priority) changes what happens to
        it in ``class_name``: only a drop profile reads it."""
        return self.klass(class_name).drop_profile is not None


# --- policy ------------------------------------------------------------------


def load_policy(path: str | Path | None) -> Policy:
    """The policy document in ``path`` (or :data:`DEFAULT_POLICY`); errors
    as a ScenarioError naming the file, line and field."""
    if path is None:
        return Policy.model_validate(DEFAULT_POLICY)
    data, document = load_policy_file(path)
    policy = Policy.model_validate(data)
    problems = [document.issue(loc, message) for loc, message in [*check_policy(policy), *_unrendered(policy)]]
    if problems:
        raise ScenarioError(problems)
    return policy


def _unrendered(policy: Policy):
    """The policy parameters no provisioning target renders yet."""
    for name, c in policy.classes.items():
        if isinstance(c.buffer_size, Temporal):
            yield ("classes", name, "buffer_size"), f"class {name!r}: provisioning renders buffer_size percentages only, not temporal"


#: The MTU MDRR quanta are rendered for.
MDRR_MTU = 1500


def _classes(policy: Policy) -> list[ClassPlan]:
    """Each class's share of the link, whatever the scheduler: Junos
    transmit rates as given; WRR/MDRR weights and DRR quanta as their
    proportion of the sum (the long-run share of a backlogged class; MDRR's
    by quantum, without its strict low-latency queue);
    strict priority has no shares."""
    weights: dict[str, float] = {}
    if policy.scheduler == "wrr":
        weights = {n: float(c.weight or 0) for n, c in policy.classes.items()}
    elif policy.scheduler == "mdrr":
        # MDRR shares by quantum, MTU + (weight - 1) 512 bytes (1500-byte
        # MTU), among the queues it rotates over: a strict low-latency
        # queue is served first and takes no share.
        weights = {n: 0.0 if c.low_latency == "strict-priority" else float(MDRR_MTU + ((c.weight or 1) - 1) * 512)
                   for n, c in policy.classes.items()}  # fmt: skip
    elif policy.scheduler == "drr":
        weights = {n: float(c.quantum or 0) for n, c in policy.classes.items()}
    total = sum(weights.values())
    out = []
    for index, (name, c) in enumerate(policy.classes.items()):
        rate = c.transmit_rate
        percent = rate if isinstance(rate, float) else None
        if weights:
            percent = round(100 * weights[name] / total, 3)
        priority = c.priority or "low"
        if policy.scheduler == "mdrr" and c.low_latency == "strict-priority":
            priority = "strict-high"
        out.append(ClassPlan(
            name=name, index=index, percent=percent, rate_bps=rate if isinstance(rate, int) else None,
            remainder=rate == "remainder", priority=priority, exact=c.exact, buffer_percent=c.buffer_size,
            drop_profile=c.drop_profile,
        ))  # fmt: skip
    return out


def priority_rank(priority: str) -> int:
    """0 for strict-high ... 4 for low (HTB's prio: lower is served first)."""
    return PRIORITIES.index(priority)


# --- prefixes ----------------------------------------------------------------


def read_prefix_list(path: str | Path) -> list[PrefixEntry]:
    """Lines ``src|dst PREFIX [LAST_SEEN]``; a bad line is an InputError
    naming the file and line."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"{name}: cannot read prefix list: {reason}") from None
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) not in (2, 3) or words[0] not in ("src", "dst"):
            raise InputError(f"{name}:{number}: expected 'src|dst PREFIX [LAST_SEEN]', got {line.strip()!r}")
        try:
            network = ipaddress.ip_network(words[1], strict=False)
        except ValueError:
            raise InputError(f"{name}:{number}: not an address prefix: {words[1]!r}") from None
        last_seen = None
        if len(words) == 3:
            try:
                last_seen = datetime.fromisoformat(words[2])
            except ValueError:
                raise InputError(f"{name}:{number}: LAST_SEEN is not an ISO 8601 time: {words[2]!r}") from None
            last_seen = last_seen.replace(tzinfo=UTC) if last_seen.tzinfo is None else last_seen.astimezone(UTC)
        entries.append(PrefixEntry(str(network), words[0], network.version, last_seen))
    return entries


def read_prefix_db(path: str | Path) -> tuple[list[PrefixEntry], int | None, datetime | None]:
    """The ``prefixes`` table of an identify database, with the aging
    period (seconds) and the reference time it was aged at, if recorded."""
    import duckdb

    if not Path(path).is_file():
        raise InputError(f"{str(path)!r}: no such database")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise InputError(f"{str(path)!r}: cannot open the database: {exc}") from None
    try:
        rows = con.execute("SELECT prefix, role, family, last_seen FROM prefixes ORDER BY role, prefix").fetchall()
        settings = dict(con.execute("SELECT name, value FROM settings").fetchall())
        (end_us,) = con.execute("SELECT max(data_end_us) FROM processed").fetchone()
    except duckdb.Error as exc:
        raise InputError(f"{str(path)!r}: not a database of 'alphaqos flows identify': {exc}") from None
    finally:
        con.close()
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    entries = [PrefixEntry(p, r, int(f), s.replace(tzinfo=UTC)) for p, r, f, s in rows]
    aging = int(settings["aging_us"]) // 1_000_000 if "aging_us" in settings else None
    reference = epoch + timedelta(microseconds=int(end_us)) if end_us is not None else None
    return entries, aging, reference


def _sorted_v4(entries: list[PrefixEntry], role: str) -> list[PrefixEntry]:
    chosen = {e.prefix: e for e in entries if e.role == role and e.family == 4}
    return sorted(chosen.values(), key=lambda e: ipaddress.ip_network(e.prefix))


def build_plan(
    policy: Policy,
    entries: list[PrefixEntry],
    *,
    alpha_class: str = "alpha",
    aging_s: int = DEFAULT_AGING_DAYS * 86_400,
    reference: datetime | None = None,
    link_rate_bps: int = 10_000_000_000,
    **options: Any,
) -> Plan:
    if alpha_class not in policy.classes:
        raise InputError(f"the α class {alpha_class!r} is not a class of the policy (classes: {', '.join(policy.classes)})")
    return Plan(
        policy=policy, classes=_classes(policy), alpha_class=alpha_class,
        alpha_src=_sorted_v4(entries, "src"), alpha_dst=_sorted_v4(entries, "dst"),
        aging_s=aging_s, reference=reference, link_rate_bps=link_rate_bps,
        skipped_v6=sum(e.family != 4 for e in entries), **options,
    )  # fmt: skip


# --- what each platform accepts -------------------------------------------------

#: IOS ``random-detect`` thresholds and mark-probability denominators.
CISCO_WRED_MAX_TH = 65_535
CISCO_MARK_DENOMINATOR = range(1, 65_536)


def _half_up(value: float) -> int:
    """Round to the nearest integer, halves up (``2.5`` -> 3, not Python's 2)."""
    return math.floor(value + 0.5)


def cisco_wred(min_th: float, max_th: float, probability: float) -> tuple[int, int, int]:
    """WRED thresholds as IOS takes them (``random-detect discard-class N
    MIN MAX DENOMINATOR``, and the 12000's ``random-detect-label``): whole
    packets, so each threshold is rounded to the nearest packet (halves
    up), ``min_th`` to at least 1 and ``max_th`` to at least ``min_th +
    1`` (IOS refuses ``min >= max``); the mark-probability denominator is
    the whole number whose ``1 / d`` is nearest ``probability`` (0.4 -> 3,
    1/3 being nearer 0.4 than 1/2), within 1..65535."""
    low = max(1, _half_up(min_th))
    high = min(CISCO_WRED_MAX_TH, max(low + 1, _half_up(max_th)))
    low = min(low, high - 1)
    inverse = 1 / probability
    candidates = {max(1, math.floor(inverse)), max(1, math.ceil(inverse))}
    denominator = min(sorted(candidates), key=lambda d: abs(1 / d - probability))
    return low, high, min(denominator, CISCO_MARK_DENOMINATOR[-1])


def junos_curve(points: list[tuple[float, float]] | list[list[float]]) -> list[tuple[int, int]]:
    """A drop-profile curve as Junos takes it (``interpolate fill-level [
    ... ] drop-probability [ ... ]``): whole percents, fill levels rising,
    probabilities not falling. Each value is rounded to the nearest percent
    (halves up); a fill level that rounds onto (or below) the one before
    moves up to one above it, and if that passes 100 the earlier ones move
    down, so the points stay distinct within 0..100; each probability is
    at least the one before (a running maximum)."""
    if len(points) > 101:
        raise ValueError(f"a Junos curve of {len(points)} points cannot have distinct whole-percent fill levels")
    fills = [min(100, max(0, _half_up(f))) for f, _ in points]
    for i in range(1, len(fills)):
        fills[i] = max(fills[i], fills[i - 1] + 1)
    for i in range(len(fills) - 1, -1, -1):
        fills[i] = min(fills[i], 100 if i == len(fills) - 1 else fills[i + 1] - 1)
    drops, top = [], 0
    for _, d in points:
        top = max(top, min(100, max(0, _half_up(d))))
        drops.append(top)
    return list(zip(fills, drops))


def fmt_duration(seconds: int) -> str:
    """nftables time: ``29d23h59m30s`` (``30d``)."""
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "1s"
