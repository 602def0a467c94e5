"""Southbound: what a provisioned reservation installs at the edge of the
network, the edge router's ingress policer and the source host's shaping,
with rates and bursts that fit each other.

Why both ends
    Yan et al., "On How to Provision QoS for Large Dataset Transfers"
    (CTRQ 2013), Section II: an advance-reservation system (OSCARS) polices
    a circuit at its ingress with a single-rate token bucket whose token
    rate is the reserved rate, and out-of-profile packets are dropped,
    moved to a scavenger-service class, or kept with a higher drop
    precedence. Zurawski, "Using Linux Traffic Control on Virtual Circuits"
    (Internet2 2013), Sections 4-5: a TCP sender that meets such a policer
    at full speed stalls; shaped on the host with HTB to 90-92% of the
    reservation it keeps the circuit full. The service does both, from the
    one reservation, so the two can not drift apart.

The router (one template per vendor, like OSCARS's per-vendor templates)
    A policy document (:func:`circuit_policy`, the schema of a scenario's
    ``policies:`` entry) with OSCARS's four classes (Yan et al. 2013,
    Section III: network-control, best-effort, science-data, scavenger; 5,
    20, 70 and 5% of rate and buffer) and one filter term, ``circuit-<id>``,
    matching the source host's and the destination host's addresses,
    putting the packets into ``science-data`` and policing them at the
    reserved rate. It is rendered by :mod:`alphaqos.provision.junos` and
    :mod:`alphaqos.provision.cisco` and checked by
    :mod:`alphaqos.provision.check`; a file that fails the check is an
    error, nothing written. The Junos filter is named after the circuit
    (``circuit-<id>``, not provision's shared ``alphaqos``) so that
    circuits on one router do not replace each other's filter, and the
    file leaves the α prefix lists of ``alphaqos provision`` alone.

Policing modes (:data:`POLICING`), the reservation's ``policing``
    ``hard``: out-of-profile packets are discarded; ``soft`` (the default):
    they go on as best effort (Junos ``forwarding-class best-effort`` with
    ``loss-priority high``; MQC ``set-qos-transmit`` to best effort's
    qos-group); ``scavenger``: they go to the scavenger class (OSCARS's own
    choice, Yan et al. 2013 Section III).

Rates and bursts (see :func:`match_rates`)
    Policer: rate ``R`` = the reservation's rate; bucket ``P`` =
    :data:`REFERENCE_BUCKET` scaled with ``R`` (31 KB at 1 Gbit/s, the
    bucket of Yan et al. 2013, Section III-C, whose sender never lost
    in-profile packets), at least :data:`MIN_BUCKET_FRAMES` frames.
    Host: HTB at ``r`` = 90% of ``R`` (Zurawski 2013) with ``burst`` =
    ``cburst`` = ``b`` = the smaller of provision's 1 ms burst and ``P``
    less one frame, through :func:`alphaqos.provision.shape.plan_shape`.
    An HTB class sends while its tokens are not negative, so its output
    conforms to the token bucket ``(r, b + one frame)``; a stream that
    conforms to ``(r, b')`` with ``r <= R`` and ``b' <= P`` never meets an
    empty RFC 2697 committed bucket of rate ``R`` and size ``P`` (every
    packet is green, RFC 2697 Section 3). :func:`match_rates` checks that
    inequality and refuses otherwise.

The host's segmentation offload
    HTB sees what the stack hands it; with TCP's GSO those are packets of
    up to 64 KB, which pass a bucket of a few frames as one burst. The
    zurawski-tc study (``python/alphaqos/reproduce/zurawski.py``, GSO)
    needed ``gso_max_segs 1`` on the sender's device for the shaping to
    hold; the script sets it, and the ``linux`` back-end has
    :func:`alphaqos.provision.shape.apply` set it over netlink
    (``IFLA_GSO_MAX_SEGS``) and record the device's value, which
    :func:`alphaqos.provision.shape.remove` puts back on release.

Profiles
    A reservation whose rate is a step function is policed at its peak
    (``rate_bps``) unless ``at`` names the instant whose step to use: the
    router never drops what the reservation allows at any time of its
    window. ``southbound.json`` lists the profile and the next change
    after ``at`` for a caller that re-renders at each step.

Back-ends
    ``dry-run`` writes the files only; ``linux`` also applies the shaping
    to ``device`` over rtnetlink (:func:`alphaqos.provision.shape.apply`):
    the first call builds the HTB tree, later ones (a modify) change the
    shaped class in place (same handles, the queue and its counters kept).

Files in ``out_dir`` (one directory per reservation): ``junos.conf``,
``cisco.cfg``, ``host-shaping.sh`` (``sh host-shaping.sh DEVICE`` on the
source host), ``southbound.json`` (the numbers), and beside each text file
a ``.diff`` against the one the previous call left.

Tests: ``tests/test_circuits_southbound.py``.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..provision.model import HOST_SHARE_PERCENT
from ..provision.shape import GSO_MAX_SEGS, Match, ShapeError, apply, plan_shape, read_state, remove
from ..provision.tc import MTU_FRAME

__all__ = [
    "BACKENDS",
    "HOST_SHARE_PERCENT",
    "POLICING",
    "Matched",
    "SouthboundError",
    "circuit_policy",
    "circuit_term",
    "match_rates",
    "policer_bucket",
    "policy_document",
    "release_southbound",
    "render_southbound",
]

#: Policing mode -> the policer's out-of-profile action (policy schema).
POLICING: dict[str, Any] = {"hard": "discard", "soft": {"class": "best-effort"}, "scavenger": {"class": "scavenger"}}
BACKENDS = ("dry-run", "linux")
#: OSCARS's classes on the routers' egress (Yan et al. 2013, Section III),
#: priorities as that paper's experiment 2 gave its three queues.
CLASSES: dict[str, dict[str, str]] = {
    "best-effort": {"transmit_rate": "20%", "buffer_size": "20%", "priority": "medium-low"},
    "science-data": {"transmit_rate": "70%", "buffer_size": "70%", "priority": "medium-high"},
    "scavenger": {"transmit_rate": "5%", "buffer_size": "5%", "priority": "low"},
    "network-control": {"transmit_rate": "5%", "buffer_size": "5%", "priority": "high"},
}
CIRCUIT_CLASS = "science-data"
#: The interface buffer of the MX80 in Yan et al. 2013 (provision's default).
ROUTER_BUFFER = "125MB"
#: The circuit policer's bucket at :data:`REFERENCE_RATE_BPS` (Yan et al.
#: 2013, Section III-C: "burst-size <= 31 KB" at 1 Gbit/s); scaled with the rate.
REFERENCE_BUCKET = 31_000
REFERENCE_RATE_BPS = 1_000_000_000
#: The smallest bucket, in frames of :data:`POLICED_FRAME` bytes (a bucket
#: of a few frames drops a host's back-to-back frames however it is shaped).
MIN_BUCKET_FRAMES = 10
#: What an L2 circuit's policer counts for a 1500-byte packet: the frame
#: HTB sends (:data:`..provision.tc.MTU_FRAME`, Ethernet header 14 + 1500)
#: plus the 802.1Q tag (4, IEEE 802.1Q) and the FCS (4) the wire adds: 1522.
DOT1Q_TAG_BYTES = 4
FCS_BYTES = 4
POLICED_FRAME = MTU_FRAME + DOT1Q_TAG_BYTES + FCS_BYTES
# GSO_MAX_SEGS (provision.shape): ``ip link set DEV gso_max_segs 1``, the stack
# hands the qdisc single frames (the zurawski-tc study's finding).


class SouthboundError(ValueError):
    """A reservation or topology the southbound cannot render; nothing written."""


@dataclass(frozen=True)
class Matched:
    """The policer and the host shaping of one circuit (bit/s, bytes)."""

    policer_rate_bps: int
    policer_bucket_bytes: int
    shaped_rate_bps: int
    shaped_burst_bytes: int
    host_share_percent: float

    @property
    def host_bucket_bytes(self) -> int:
        """The token bucket the host's output conforms to: burst + the one
        frame HTB lets out beyond it (:data:`..provision.tc.MTU_FRAME`)."""
        return self.shaped_burst_bytes + MTU_FRAME


def policer_bucket(rate_bps: int) -> int:
    """The ingress policer's bucket (bytes) at ``rate_bps``: 31 KB per
    Gbit/s (Yan et al. 2013), at least :data:`MIN_BUCKET_FRAMES` frames."""
    return max(round(REFERENCE_BUCKET * rate_bps / REFERENCE_RATE_BPS), MIN_BUCKET_FRAMES * POLICED_FRAME)


def match_rates(rate_bps: int, *, share_percent: float = HOST_SHARE_PERCENT, bucket: int | None = None,
                device: str = "$DEV", netns: str | None = None, match=None):  # fmt: skip
    """The policer and the host's shaping for a circuit of ``rate_bps``:
    ``(Matched, shape.ShapePlan)``. The shaping comes from
    :func:`alphaqos.provision.shape.plan_shape` with the policer's bucket;
    the result is checked: the host's token bucket ``(r, b + frame)`` lies
    within the policer's ``(R, P)`` (RFC 2697 committed bucket)."""

    if not isinstance(rate_bps, int) or rate_bps <= 0:
        raise SouthboundError(f"rate_bps: must be a positive number of bit/s, got {rate_bps!r}")
    p = policer_bucket(rate_bps) if bucket is None else int(bucket)
    try:
        # shape sets gso_max_segs with the tree and records the device's value
        # from before, which its remove puts back (one GSO setter in the project).
        plan = plan_shape(device, rate_bps, share_percent, match=match, policer_burst=p, netns_name=netns,
                          gso_max_segs=GSO_MAX_SEGS)
    except ShapeError as exc:
        raise SouthboundError(f"host shaping for {rate_bps} bit/s: {exc}") from None
    m = Matched(rate_bps, p, plan.rate_bps, plan.burst_bytes, share_percent)
    if not (m.shaped_rate_bps <= m.policer_rate_bps and m.host_bucket_bytes <= m.policer_bucket_bytes):
        raise SouthboundError(
            f"the host's shaping ({m.shaped_rate_bps} bit/s, {m.host_bucket_bytes} B) does not fit the policer "
            f"({m.policer_rate_bps} bit/s, {m.policer_bucket_bytes} B)"
        )
    return m, plan


# --- the reservation -----------------------------------------------------------


def _safe_id(resv: dict) -> str:
    raw = str(resv.get("id", ""))
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", raw).strip("-.")
    if not name:
        raise SouthboundError(f"id: a reservation needs an id, got {raw!r}")
    return name


def _time(value: Any, field: str) -> datetime:
    if isinstance(value, datetime):
        t = value
    else:
        try:
            t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise SouthboundError(f"{field}: not an RFC 3339 time: {value!r}") from None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def policed_rate(resv: dict, at: datetime | None = None) -> tuple[int, datetime | None]:
    """The rate to police (bit/s) and the next change of the profile after
    ``at`` (None when there is none or ``at`` is not given): the peak
    ``rate_bps``, or with ``at`` the profile's step in force then (the
    first step's before the start)."""
    profile = resv.get("profile") or []
    peak = resv.get("rate_bps")
    if at is None or not profile:
        rate = peak if peak is not None else max((int(r) for _, r in profile), default=None)
        if rate is None:
            raise SouthboundError("rate_bps: the reservation has no rate")
        return int(rate), None
    at = at.astimezone(UTC)
    steps = [(_time(t, f"profile[{i}][0]"), int(r)) for i, (t, r) in enumerate(profile)]
    current = steps[0][1]
    for t, r in steps:
        if t <= at:
            current = r
    later = [t for t, _ in steps if t > at]
    if current <= 0:  # a step at zero books nothing: police at the peak instead of a zero rate
        current = max(r for _, r in steps)
    return current, min(later) if later else None


def _address(topology: Any, host: str, field: str) -> str:
    """The IPv4 address of ``host``: the topology's, or the name itself if it is one."""
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        pass
    for getter in ("address_of", "host_address"):
        fn = getattr(topology, getter, None)
        if callable(fn):
            try:
                value = fn(host)
            except (KeyError, ValueError, LookupError):
                value = None
            if value:
                return str(value)
    nodes = getattr(topology, "nodes", None) or {}
    node = nodes.get(host) if hasattr(nodes, "get") else None
    value = node.get("address") if isinstance(node, dict) else getattr(node, "address", None)
    if value:
        return str(value)
    raise SouthboundError(f"{field}: no IPv4 address for endpoint {host!r} in the topology")


def _edge(topology: Any, host: str) -> tuple[str | None, dict]:
    """The edge router of ``host`` and its port's settings (interface names
    per platform, a policer bucket), where the topology gives them."""
    fn = getattr(topology, "edge_router_of", None)
    edge = fn(host) if callable(fn) else None
    port: Any = None
    name = edge
    if edge is not None and not isinstance(edge, str):  # a port object or dict
        port = edge
        name = edge.get("router") if isinstance(edge, dict) else getattr(edge, "router", None) or getattr(edge, "name", None)
    port_fn = getattr(topology, "edge_port_of", None)
    if port is None and callable(port_fn):
        port = port_fn(host)
    link_fn = getattr(topology, "link", None)
    if port is None and name is not None and callable(link_fn):  # circuits.topology: the host's link into its edge router
        try:
            port = {"policing": getattr(link_fn(f"{host}-{name}"), "policing", None)}
        except KeyError:
            port = None
    settings: dict = {}
    if isinstance(port, dict):
        settings = dict(port)
    elif port is not None:
        settings = {k: getattr(port, k) for k in ("junos", "cisco", "interface", "burst", "policing") if hasattr(port, k)}
    return (str(name) if name is not None else None), settings


def circuit_term(name: str, source: str, destination: str, rate_bps: int, bucket: int, mode: str = "soft") -> dict:
    """A filter term (policy schema) steering ``source`` -> ``destination``
    into the circuit class, policed at ``rate_bps`` with a ``bucket``-byte
    bucket, out-of-profile packets as ``mode`` says (:data:`POLICING`)."""
    if mode not in POLICING:
        raise SouthboundError(f"policing: expected one of {', '.join(POLICING)}, got {mode!r}")
    return {
        "name": name, "from": {"source": source, "destination": destination},
        "then": {"class": CIRCUIT_CLASS,
                 "policer": {"rate": f"{rate_bps}bps", "burst": f"{bucket}B", "out_of_profile": POLICING[mode]}},
    }  # fmt: skip


def policy_document(terms: list[dict]) -> dict:
    """OSCARS's classes (:data:`CLASSES`) and ``terms``, as a policy document."""
    return {"buffer": ROUTER_BUFFER, "classes": CLASSES, "filter": terms}


def circuit_policy(resv: dict, src_address: str, dst_address: str, rate_bps: int, bucket: int):
    """The edge router's policy for the circuit (see the module doc)."""
    from ..policy import Policy

    term = circuit_term(f"circuit-{_safe_id(resv)}", f"{src_address}/32", f"{dst_address}/32", rate_bps, bucket,
                        resv.get("policing") or "soft")  # fmt: skip
    return Policy.model_validate(policy_document([term]))


def _router_files(resv: dict, policy, ingress: dict[str, str], previous: dict[str, str | None]) -> dict[str, str]:
    """``junos.conf`` and ``cisco.cfg`` for the edge router, checked."""
    from ..provision import check, cisco, junos
    from ..provision.model import build_plan

    plan = build_plan(policy, [], alpha_class=CIRCUIT_CLASS, ingress=ingress)
    name = f"circuit-{_safe_id(resv)}"
    text = junos.render(plan, previous=previous.get(junos.FILENAME))
    # One filter per circuit, and the α prefix lists of `alphaqos provision` left alone.
    shared = re.compile(rf"\bfilter (input )?{re.escape(junos.FILTER)}\b")
    renamed = [shared.sub(lambda m: f"filter {m.group(1) or ''}{name}", line) for line in text.splitlines()
               if not line.startswith("delete policy-options prefix-list alpha-")]  # fmt: skip
    if not any(f"filter {name} " in line for line in renamed):
        raise SouthboundError(f"junos: the rendered filter is not named {junos.FILTER!r} any more; cannot name it {name!r}")
    out = {junos.FILENAME: "\n".join(renamed) + "\n",
           cisco.FILENAME: cisco.render(plan, previous=previous.get(cisco.FILENAME))}  # fmt: skip
    if plan.missing:
        raise SouthboundError("; ".join(map(str, plan.missing)))
    for filename, body in out.items():
        problems = check.check(filename, body)
        if problems:
            raise SouthboundError(f"{filename}: the rendered file fails the check: {problems[0]}")
    return out


def _host_script(resv: dict, matched: Matched, shape_plan, dst_address: str) -> str:
    from ..provision.shape import tc_commands
    from ..provision.tc import bits

    lines = [
        "#!/bin/sh",
        f"# alphaqos circuits: host shaping of the source of reservation {resv.get('id')} (version {resv.get('version')}).",
        "# Run on the source host: sh host-shaping.sh DEVICE (the circuit's interface).",
        f"# Shapes what goes to {dst_address} to {matched.host_share_percent:g}% of the reserved "
        f"{bits(matched.policer_rate_bps)}: {bits(matched.shaped_rate_bps)},",
        f"# burst {matched.shaped_burst_bytes} B + one {MTU_FRAME} B frame <= the policer's bucket of "
        f"{matched.policer_bucket_bytes} B (RFC 2697; Zurawski 2013: 90-92%).",
        "# To change the rate in place (same handles, the queue kept), use `alphaqos shape DEVICE --rate ...`;",
        "# these commands replace the root qdisc.",
        "set -e",
        'DEV="${1:?usage: sh host-shaping.sh DEVICE}"',
        "# One frame per packet to the qdisc (the zurawski-tc study: TCP's GSO packets pass a small bucket as one burst):",
        "# the last line, gso_max_segs.",
    ]
    lines += [c.replace(" dev $DEV ", ' dev "$DEV" ') for c in tc_commands(shape_plan)]
    return "\n".join(lines) + "\n"


def render_southbound(resv: dict, topology: Any, out_dir: Path, backend: str = "dry-run", device: str | None = None, *,
                      at: datetime | None = None, netns: str | None = None) -> dict[str, Path]:  # fmt: skip
    """Render (and with ``backend="linux"`` apply) the circuit's policer and
    host shaping into ``out_dir``; returns ``{"junos", "cisco", "shaping",
    "manifest"}`` -> paths. Everything is rendered and checked before
    anything is written or applied; a SouthboundError names what is wrong."""
    from ..provision.cli import _replace

    if backend not in BACKENDS:
        raise SouthboundError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "linux" and not device:
        raise SouthboundError("device: the linux back-end needs the device to shape")
    for field in ("src", "dst"):
        if not resv.get(field):
            raise SouthboundError(f"{field}: the reservation has no {field}")
    out_dir = Path(out_dir)
    src_address = _address(topology, resv["src"], "src")
    dst_address = _address(topology, resv["dst"], "dst")
    edge, port = _edge(topology, resv["src"])
    rate, next_change = policed_rate(resv, at)
    matched, shape_plan = match_rates(rate, bucket=port.get("burst"), device=device or "$DEV", netns=netns,
                                      match=Match("dst", f"{dst_address}/32"))  # fmt: skip
    if port.get("policing") and not resv.get("policing"):
        resv = {**resv, "policing": port["policing"]}
    ingress = {k: str(port[k]) for k in ("junos", "cisco") if port.get(k)}
    previous = {name: (out_dir / name).read_text(encoding="utf-8") if (out_dir / name).is_file() else None
                for name in ("junos.conf", "cisco.cfg", "host-shaping.sh")}  # fmt: skip
    policy = circuit_policy(resv, src_address, dst_address, rate, matched.policer_bucket_bytes)
    texts = _router_files(resv, policy, ingress, previous)
    head = (f"alphaqos circuits: reservation {resv.get('id')} version {resv.get('version')}, {resv['src']} -> {resv['dst']}, "
            f"edge router {edge or '(not in the topology)'}, policing {resv.get('policing') or 'soft'}")  # fmt: skip
    texts["junos.conf"] = f"# {head}\n" + texts["junos.conf"]
    texts["cisco.cfg"] = f"! {head}\n" + texts["cisco.cfg"]
    texts["host-shaping.sh"] = _host_script(resv, matched, shape_plan, dst_address)
    manifest = {
        "reservation": resv.get("id"), "version": resv.get("version"), "edge_router": edge,
        "src": resv["src"], "src_address": src_address, "dst": resv["dst"], "dst_address": dst_address,
        "policing": resv.get("policing") or "soft", "backend": backend, "device": device,
        "profile": resv.get("profile") or [], "policed_at": at.astimezone(UTC).isoformat() if at else None,
        "next_change": next_change.isoformat() if next_change else None, **asdict(matched),
        "gso_max_segs": GSO_MAX_SEGS,
    }  # fmt: skip
    applied: dict[str, Any] = {}
    if backend == "linux":
        try:
            done = apply(shape_plan)
        except ShapeError as exc:
            raise SouthboundError(f"device {device}: {exc}") from None
        # shape.apply set gso_max_segs and keeps the value from before the
        # first apply (a modify changes the tree in place and keeps it too).
        gso = read_state(device, netns)["gso_max_segs"]
        gso_before = done.previous.get("gso_max_segs")
        applied = {"device": device, "changed_in_place": done.changed_in_place, "txqueuelen": done.txqueuelen,
                   "notes": done.notes, "gso_max_segs": gso, "gso_max_segs_before": gso_before}  # fmt: skip
        manifest["applied"] = applied
    texts["southbound.json"] = json.dumps(manifest, indent=2, default=str) + "\n"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            if name != "southbound.json":
                old = previous.get(name)
                diff = difflib.unified_diff((old or "").splitlines(keepends=True), text.splitlines(keepends=True),
                                            fromfile=f"a/{name}" if old is not None else "/dev/null", tofile=f"b/{name}")  # fmt: skip
                _replace(out_dir / f"{name}.diff", "".join(diff))
            _replace(out_dir / name, text, executable=name.endswith(".sh"))
    except OSError as exc:
        raise SouthboundError(f"out_dir {str(out_dir)!r}: cannot write: {exc.strerror or exc}") from None
    keys = {"junos": "junos.conf", "cisco": "cisco.cfg", "shaping": "host-shaping.sh", "manifest": "southbound.json"}
    return {key: out_dir / name for key, name in keys.items()}


def release_southbound(resv: dict, out_dir: Path, backend: str = "dry-run", device: str | None = None, *,
                       netns: str | None = None) -> dict[str, Path]:  # fmt: skip
    """Undo the host side on ``release``/``terminate``: with the ``linux``
    back-end, remove the shaping tree from ``device`` (the root it replaced
    comes back, :func:`alphaqos.provision.shape.remove`); record it in
    ``out_dir/released.json``. The router files are not undone here: the
    policer stays until the operator removes the circuit's filter."""
    from ..provision.cli import _replace

    if backend not in BACKENDS:
        raise SouthboundError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "linux" and not device:
        raise SouthboundError("device: the linux back-end needs the device to shape")
    record: dict[str, Any] = {"reservation": resv.get("id"), "version": resv.get("version"), "backend": backend, "device": device}
    if backend == "linux":
        try:
            removed, now, previous = remove(device, netns)
        except ShapeError as exc:
            raise SouthboundError(f"device {device}: {exc}") from None
        # shape.remove put the device's gso_max_segs from before the shaping back.
        record.update(removed=removed, root_now=now, root_before=previous.get("kind"),
                      gso_max_segs=previous.get("gso_max_segs"))
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        _replace(out_dir / "released.json", json.dumps(record, indent=2) + "\n")
    except OSError as exc:
        raise SouthboundError(f"out_dir {str(out_dir)!r}: cannot write: {exc.strerror or exc}") from None
    return {"released": out_dir / "released.json"}
