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

Only IPv4 is rendered (the policy schema is IPv4); IPv6 prefixes of the
table are counted and reported as not rendered.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..policy import PRIORITIES, DropProfile, Policy, Term, check_policy
from ..scenario import load_policy_file

__all__ = [
    "DEFAULT_AGING_DAYS",
    "DEFAULT_POLICY",
    "ClassPlan",
    "Plan",
    "PrefixEntry",
    "build_plan",
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
    ingress: str | None = None
    egress: str | None = None
    skipped_v6: int = 0
    notes: list[str] = field(default_factory=list)

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

    def note(self, target: str, what: str) -> str:
        """Record a feature ``target`` cannot render; returns the comment text."""
        text = f"not rendered: {what}"
        self.notes.append(f"{target}: {what}")
        return text


# --- policy ------------------------------------------------------------------


def load_policy(path: str | Path | None) -> Policy:
    """The policy document in ``path`` (or :data:`DEFAULT_POLICY`); errors
    as a ScenarioError naming the file, line and field."""
    if path is None:
        return Policy.model_validate(DEFAULT_POLICY)
    data, document = load_policy_file(path)
    policy = Policy.model_validate(data)
    problems = [document.issue(loc, message) for loc, message in check_policy(policy)]
    if problems:
        raise ScenarioError(problems)
    return policy


def _classes(policy: Policy) -> list[ClassPlan]:
    """Each class's share of the link, whatever the scheduler: Junos
    transmit rates as given; WRR/MDRR weights and DRR quanta as their
    proportion of the sum (the long-run share of a backlogged class);
    strict priority has no shares."""
    weights: dict[str, float] = {}
    if policy.scheduler in ("wrr", "mdrr"):
        weights = {n: float(c.weight or 0) for n, c in policy.classes.items()}
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
    ingress: str | None = None,
    egress: str | None = None,
) -> Plan:
    if alpha_class not in policy.classes:
        raise InputError(f"the α class {alpha_class!r} is not a class of the policy (classes: {', '.join(policy.classes)})")
    return Plan(
        policy=policy, classes=_classes(policy), alpha_class=alpha_class,
        alpha_src=_sorted_v4(entries, "src"), alpha_dst=_sorted_v4(entries, "dst"),
        aging_s=aging_s, reference=reference, link_rate_bps=link_rate_bps, ingress=ingress, egress=egress,
        skipped_v6=sum(e.family != 4 for e in entries),
    )  # fmt: skip


def fmt_duration(seconds: int) -> str:
    """nftables time: ``29d23h59m30s`` (``30d``)."""
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "1s"
