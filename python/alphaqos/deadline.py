"""Deadline transfers: a file that must arrive by a deadline over a DiffServ
AF network, reserving as little bandwidth as it can.

The method is the third source document's (slides, "deadline-driven file
transfer over DiffServ AF networks"): the sender cuts the file into blocks
and hands the next block to whichever of two TCP connections has room
(the receiver merges them):

- the **base** connection carries the reservation: its packets are marked
  IN (green) by the edge router's policer as long as its rate stays within
  the reservation, OUT (red) beyond; its window follows the committed
  target rate (CTR) with the ``base_flow`` controller (cwnd = CTR x RTT,
  binary search increase, ``tcp/cc/base_flow.rs``);
- the **additional** connection (NewReno, or any controller) has no
  reservation: every packet is OUT, and it takes whatever capacity the
  reservations leave;
- the reservation itself is recomputed every ``interval`` as (bytes left)
  x 8 / (time to the deadline) x ``margin`` ("dynamic control of reserved
  bandwidth"), and applied to the edge policer and to the base
  connection's CTR.

Core routers run RIO (RED with In and Out: ``drop_profile: {rio: ...}``),
dropping OUT packets first when congested; that is the scenario's own
policy, as is the marking of other traffic (the slides' background is
marked OUT).

A scenario declares it under ``deadline_transfers``::

    deadline_transfers:
      - name: backup
        from: S
        to: D
        size: 2GB
        deadline: 40s
        method: proposed          # proposed | fixed-cwnd | two-connections | conventional
        base: {dscp: af11}        # required: the connection with the reservation
        additional: {cc: newreno, dscp: af13}
        block: 1MB
        reservation: {edge: E, margin: 1.05, interval: 50ms}

The methods the slides compare are presets of three choices, each of which
may also be given explicitly (``base.window``, ``additional``,
``reservation.dynamic``):

=================  ===================  ==========  ===================
method             base window          additional  reservation
=================  ===================  ==========  ===================
proposed           binary (base_flow)   yes         dynamic
fixed-cwnd         fixed (CTR x RTTmin) yes         dynamic
two-connections    newreno              yes         static
conventional       newreno              no          static
=================  ===================  ==========  ===================

``two-connections`` is the slides' "method used in our previous work"
("using two TCP, without dynamic control"): neither the reservation nor
the base window is controlled. ``conventional`` is "TCP NewReno +
bandwidth reservation". A static reservation is ``reservation.rate``
(default: size x 8 / deadline x margin).

What it becomes (:func:`expand`, called by :func:`alphaqos.scenario.resolve`):
a workload of one transfer over one or two connections with dynamic
striping and per-stream options; on the edge router's filter, ahead of its
own terms, a term policing the base connection at the reservation (out of
profile: loss priority high, i.e. red) and one marking the additional
connection red; and, for a dynamic reservation, a ``deadline_reservation``
agent.

The dynamic reservation is the control plane's ``deadline_reservation``
agent (``crates/alphaqos-sim/src/control/deadline.rs``): every ``interval``
it sets the transfer's ``ctr_bps`` (its base_flow stream's CTR) and the
edge term's policer rate (raised by the headers' share, as here).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, model_validator

from .fields import Dscp, Flag, Model, Name, PositiveRate, PositiveSize, PositiveTime, Time
from .units import fmt_rate, fmt_size, fmt_time_ns

if TYPE_CHECKING:
    from .scenario import Scenario

__all__ = ["DeadlineTransfer", "METHODS", "expand", "check_deadline_edges", "check_deadline_transfers", "static_rate"]

NS_PER_S = 10**9
TCP_HEADER_BYTES = 52  # IP 20 + TCP 20 + timestamps 12, as the engine counts a segment

#: Each method's (base window, additional connection, dynamic reservation).
METHODS: dict[str, tuple[str, bool, bool]] = {
    "proposed": ("binary", True, True),
    "fixed-cwnd": ("fixed", True, True),
    "two-connections": ("newreno", True, False),
    "conventional": ("newreno", False, False),
}

#: The base window's controller and its rtt_filter.
WINDOWS = {"binary": ("base_flow", "latest"), "fixed": ("base_flow", "base"), "newreno": ("newreno", None)}


class BaseConnection(Model):
    """The connection that carries the reservation (IN within it)."""

    #: binary (CTR x RTT, binary search increase), fixed (CTR x the
    #: smallest RTT) or newreno; default: the method's.
    window: Literal["binary", "fixed", "newreno"] | None = None
    dscp: Dscp = 10  # af11
    #: More base_flow parameters (alpha_segments, min/max_increment_segments...).
    cc_params: dict[str, Any] = {}
    #: Pace the connection at the reservation (the policer's rate: its
    #: ``max_pacing_rate``, Linux's SO_MAX_PACING_RATE, as ``alphaqos
    #: transfer`` sets it on real hosts), so that it never sends faster than
    #: its profile; a static reservation only.
    pacing: Flag = False


class AdditionalConnection(Model):
    """The connection without a reservation (every packet OUT)."""

    cc: str = "newreno"
    cc_params: dict[str, Any] = {}
    dscp: Dscp = 14  # af13


class Reservation(Model):
    """The reservation: where it is policed and how it is controlled."""

    #: The edge router whose filter marks the base connection green within
    #: the reservation and red beyond (a router on the transfer's path).
    edge: Name
    #: Recomputed every interval (default: the method's choice).
    dynamic: Flag | None = None
    #: A static reservation (payload bit/s); default size x 8 / deadline x margin.
    rate: PositiveRate | None = None
    margin: Annotated[float, Field(ge=1.0, allow_inf_nan=False)] = 1.05
    interval: PositiveTime = 50 * 10**6
    #: The policer's bucket depth.
    burst: PositiveSize = 64 * 1024


class DeadlineTransfer(Model):
    """A file of ``size`` bytes from ``from`` to ``to``, started at
    ``start`` and due ``deadline`` after it; see the module doc."""

    name: Name
    src: Name = Field(alias="from")
    dst: Name = Field(alias="to")
    size: PositiveSize
    deadline: PositiveTime
    start: Time = 0
    method: Literal["proposed", "fixed-cwnd", "two-connections", "conventional"] = "proposed"
    base: BaseConnection
    #: The additional connection; ``false``: none; default: the method's.
    additional: AdditionalConnection | Literal[False] | None = None
    block: PositiveSize = 1_000_000
    reservation: Reservation
    mss: PositiveSize = 1448
    rwnd: PositiveSize = 64 * 2**20
    #: More TCP options of both connections, as a workload's ``tcp`` takes
    #: them (``host_profile``, ``sack``, ``delayed_ack``...); ``cc`` is the
    #: method's, ``mss`` and ``rwnd`` are the keys above.
    tcp: dict[str, Any] = {}

    @model_validator(mode="after")
    def _tcp(self) -> DeadlineTransfer:
        from pydantic import ValidationError

        from .errors import FieldError
        from .scenario.models import WorkloadTcp

        own = sorted(set(self.tcp) & {"cc", "mss", "rwnd"})
        if own:
            raise FieldError(("tcp", own[0]), "set by the transfer itself (cc by its method, mss and rwnd as its own keys)")
        try:
            WorkloadTcp.model_validate(self.tcp)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise FieldError(("tcp", *first["loc"]), first["msg"]) from None
        return self

    @model_validator(mode="after")
    def _block(self) -> DeadlineTransfer:
        if self.block > self.size:
            from .errors import FieldError

            raise FieldError(("block",), f"a block ({fmt_size(self.block, exact=True)}) larger than the file ({fmt_size(self.size, exact=True)})")
        return self

    @property
    def window(self) -> str:
        return self.base.window or METHODS[self.method][0]

    @property
    def additional_connection(self) -> AdditionalConnection | None:
        if self.additional is False:
            return None
        if self.additional is None:
            return AdditionalConnection() if METHODS[self.method][1] else None
        return self.additional

    @property
    def dynamic(self) -> bool:
        d = self.reservation.dynamic
        return METHODS[self.method][2] if d is None else d


def static_rate(t: DeadlineTransfer) -> int:
    """The static (or initial) reservation, payload bit/s: ``rate``, or
    size x 8 / deadline x margin."""
    if t.reservation.rate is not None:
        return t.reservation.rate
    return math.ceil(t.size * 8 * NS_PER_S / t.deadline * t.reservation.margin)


def wire_rate(t: DeadlineTransfer, payload_bps: int) -> int:
    """The policer's rate for a payload rate: the policer counts IP bytes,
    a full segment being MSS + 52 of them."""
    return math.ceil(payload_bps * (t.mss + TCP_HEADER_BYTES) / t.mss)


# --- checks -------------------------------------------------------------------


def check_deadline_transfers(scenario: Scenario) -> Any:
    """Cross-field checks, as (path, message): names, hosts, the edge a
    router, unique names among workloads, the dynamic reservation's agent.
    The edge on the path: :func:`check_deadline_edges`."""
    workloads = {w.name for w in scenario.workloads}
    seen: dict[str, int] = {}
    for index, t in enumerate(scenario.deadline_transfers):
        loc = ("deadline_transfers", index)
        if t.name in workloads or t.name in seen:
            yield (*loc, "name"), f"{t.name!r} is already a workload or deadline transfer name"
        seen.setdefault(t.name, index)
        ends_ok = True
        for key, host in (("from", t.src), ("to", t.dst)):
            node = scenario.nodes.get(host)
            if node is None or node.router:
                ends_ok = False
                yield (*loc, key), f"{host!r} is not a host of this scenario"
        if ends_ok and t.src == t.dst:
            yield (*loc, "to"), f"a transfer needs two different hosts, got {t.src!r} twice"
        if t.start >= scenario.duration:
            yield (*loc, "start"), f"{fmt_time_ns(t.start)} is not before the end of the run ({fmt_time_ns(scenario.duration)})"
        edge = scenario.nodes.get(t.reservation.edge)
        if edge is None or not edge.router:
            yield (*loc, "reservation", "edge"), f"{t.reservation.edge!r} is not a router of this scenario"
        if t.window in ("binary", "fixed"):
            from .cc import validate_cc_params

            try:
                validate_cc_params("base_flow", {**t.base.cc_params, "ctr": "1bps"})
            except ValueError as exc:
                yield (*loc, "base", "cc_params"), str(exc)
        elif t.base.cc_params:
            yield (*loc, "base", "cc_params"), f"the {t.window} window takes no parameters"
        extra = t.additional_connection
        if extra is not None:
            from .cc import validate_cc_params

            try:
                validate_cc_params(extra.cc, extra.cc_params)
            except ValueError as exc:
                yield (*loc, "additional", "cc_params"), str(exc)
        if t.dynamic and t.base.pacing:
            yield (*loc, "base", "pacing"), "pacing follows a static reservation: a dynamic one moves the policer's rate, which the pacing rate does not follow"
        if t.dynamic and t.window == "newreno":
            yield (*loc, "reservation", "dynamic"), "a dynamic reservation steers the base connection's target rate: give it the binary or fixed window"


def check_deadline_edges(scenario: Scenario, paths: list[list[int] | None]) -> Any:
    """Each transfer's edge router on its path, as (path, message); ``paths``
    are the links the engine routes each transfer over (None: no path, which
    the engine reports itself)."""
    for index, (t, path) in enumerate(zip(scenario.deadline_transfers, paths, strict=True)):
        if path is not None and not any(t.reservation.edge in scenario.links[i].between for i in path):
            yield ("deadline_transfers", index, "reservation", "edge"), f"router {t.reservation.edge!r} is not on the path from {t.src} to {t.dst}"


def earliest_completion(scenario: Scenario, index: int) -> int:
    """The earliest the file of deadline transfer ``index`` can arrive, ns
    after its start: alone on its path at the path's full rate, as the
    engine estimates an ideal completion (``workload::ideal_fct``: the
    handshake, slow start, the rest at the bottleneck's rate, the last ACK),
    asked of the engine itself on the scenario's topology."""
    import json

    from . import _core
    from .scenario import resolve

    t = scenario.deadline_transfers[index]
    alone = scenario.model_copy(update={
        "flows": [], "workloads": [], "deadline_transfers": [t.model_copy(update={"start": 0})],
        "duration": NS_PER_S, "metric_interval": NS_PER_S,
    })  # fmt: skip
    sim = _core.Simulation(json.dumps(resolve(alone)))
    sim.advance(1)
    return int(sim.results()["transfers"]["ideal_fct_ns"][0])


def check_feasible(scenario: Scenario) -> Any:
    """A deadline the file cannot meet even at the path's full rate, as
    (path, message) with the earliest possible completion time."""
    for index, t in enumerate(scenario.deadline_transfers):
        earliest = earliest_completion(scenario, index)
        if t.deadline < earliest:
            yield ("deadline_transfers", index, "deadline"), infeasible(t, earliest)


def infeasible(t: DeadlineTransfer, earliest_ns: int) -> str:
    return (
        f"deadline {fmt_time_ns(t.deadline)} is infeasible: even alone at the path's full rate {fmt_size(t.size)} "
        f"arrives {fmt_time_ns(earliest_ns)} after its start at the earliest (earliest possible completion)"
    )


# --- expansion ------------------------------------------------------------------


def expand(scenario: Scenario) -> Scenario:
    """The scenario with every deadline transfer turned into what the engine
    runs: a workload, the edge routers' marking terms (ahead of their own),
    and (dynamic reservations) an agent."""
    if not scenario.deadline_transfers:
        return scenario
    from .policy import Policy
    from .scenario import Workload

    from .agents import ControlAgent

    workloads = list(scenario.workloads)
    control = list(scenario.control)
    terms: dict[str, list[dict[str, Any]]] = {}
    for t in scenario.deadline_transfers:
        rate = static_rate(t)
        cc, rtt_filter = WINDOWS[t.window]
        base_params = {**t.base.cc_params, "ctr": fmt_rate(rate, exact=True), "rtt_filter": rtt_filter} if cc == "base_flow" else {}
        options = [{"cc": cc, "cc_params": base_params, "dscp": t.base.dscp}]
        if t.base.pacing:
            options[0]["max_pacing_rate"] = fmt_rate(wire_rate(t, rate), exact=True)
        extra = t.additional_connection
        if extra is not None:
            options.append({"cc": extra.cc, "cc_params": extra.cc_params, "dscp": extra.dscp})
        workloads.append(Workload.model_validate({
            "name": t.name,
            "transfer": {"from": t.src, "to": t.dst, "size": fmt_size(t.size, exact=True)},
            "tcp": {**t.tcp, "cc": "newreno", "mss": fmt_size(t.mss, exact=True), "rwnd": fmt_size(t.rwnd, exact=True)},
            "streams": len(options),
            "start": fmt_time_ns(t.start, exact=True),
            "striping": "dynamic",
            "block": fmt_size(t.block, exact=True),
            "stream_options": options,
        }))  # fmt: skip
        src, dst = scenario.nodes[t.src].address, scenario.nodes[t.dst].address
        match = {"source": f"{src}/32", "destination": f"{dst}/32", "protocol": "tcp"}
        mine = [{
            "name": f"{t.name}-base",
            "from": {**match, "dscp": t.base.dscp},
            "then": {"policer": {"rate": fmt_rate(wire_rate(t, rate), exact=True), "burst": fmt_size(t.reservation.burst, exact=True),
                                 "out_of_profile": "loss_priority_high"}},
        }]  # fmt: skip
        if extra is not None:
            mine.append({"name": f"{t.name}-additional", "from": {**match, "dscp": extra.dscp}, "then": {"loss_priority": "high"}})
        terms.setdefault(t.reservation.edge, []).extend(mine)
        if t.dynamic:
            control.append(ControlAgent.model_validate({"deadline_reservation": {
                "name": f"{t.name}-reservation", "transfer": t.name, "deadline": fmt_time_ns(t.deadline, exact=True),
                "margin": t.reservation.margin, "interval": fmt_time_ns(t.reservation.interval, exact=True),
                "policer": f"{t.reservation.edge}/{t.name}-base",
            }}))  # fmt: skip
    nodes = dict(scenario.nodes)
    policies = dict(scenario.policies)
    for edge, new in terms.items():
        node = nodes[edge]
        if node.policy is not None:
            base = policies[node.policy].model_dump(mode="json", by_alias=True, exclude_none=True)
        else:
            base = {"classes": {"be": {"transmit_rate": "100%", "buffer_size": "100%"}}, "filter": []}
        name = f"{node.policy or 'edge'}+deadline@{edge}"
        policies[name] = Policy.model_validate({**base, "filter": new + base.get("filter", [])})
        nodes[edge] = node.model_copy(update={"policy": name})
    update = {"workloads": workloads, "nodes": nodes, "policies": policies, "control": control, "deadline_transfers": []}
    return scenario.model_copy(update=update)
