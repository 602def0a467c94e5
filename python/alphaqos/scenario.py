"""The scenario schema: what users write, validated, then resolved for the engine.

A scenario is a YAML file (or a dict of the same shape) describing a
topology, its queues and the traffic that crosses it::

    name: two-hosts
    duration: 20s                    # seed (1) and metric_interval (100ms) optional
    nodes:
      H1: {address: 10.0.1.1}        # a host needs an IPv4 address
      H2: {address: 10.0.2.1}
      R:  {router: true}             # a router's address is optional
    links:
      - {between: [H1, R], rate: 10Gbps, delay: 0.05ms}
      - between: [R, H2]
        rate: 1Gbps
        delay: 1ms
        queues: {R: {fifo: {limit: 125MB}}}   # egress of R towards H2
    flows:
      - {name: bulk, tcp: {from: H1, to: H2, cc: newreno}, start: 1s}
      - {name: probe, ping: {from: H2, to: H1, interval: 100ms}}

Every key and its default is documented on the models below. Validation
happens in two passes, both reported through
:class:`~alphaqos.errors.ScenarioError` with the file, line and field path:

1. structure (pydantic models, ``extra='forbid'``): known keys, types, units
   (via :mod:`alphaqos.units`), ranges of single values;
2. cross-field checks (:func:`_cross_checks`): names that must exist,
   unique addresses, flow names and links, flows between hosts that a path
   joins (routed as the engine routes: fewest hops, only routers forward),
   packets that fit every MTU on that path, flow times within the run,
   ascending UDP schedules, consistent RED thresholds and TCP timers.

:func:`resolve` then turns a valid :class:`Scenario` into the engine's
resolved configuration (integers in base units, every default filled in),
as documented in ``docs/engine-config.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import difflib
import ipaddress
import warnings
from pathlib import Path
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import (
    AfterValidator,
    BeforeValidator,
    BaseModel,
    Field,
    PlainValidator,
    Strict,
    ValidationError,
    model_validator,
)

from . import units
from .fields import Dscp, Flag, Name, Port, PositiveRate, PositiveSize, PositiveTime, QueueLimit, Rate, Size, ThresholdField, Time
from .fields import fmt_threshold as _fmt_threshold
from .fields import Model as _Model
from .policy import Child, FqCodel, Policy, Sfq, Yaqs, resolve_yaqs, check_policy, child_config, fq_codel_config, resolve_egress, resolve_filter, sfq_config
from .agents import ControlAgent, resolve_agent
from .cc import CC_PARAMS, resolve_cc_params, validate_cc_params
from .deadline import DeadlineTransfer, check_deadline_edges, check_deadline_transfers
from .deadline import expand as _expand_deadline_transfers
from .errors import FieldError, Issue, ScenarioError, ScenarioNote
from .source import DUMPER, Source, read_source

__all__ = [
    "CONGESTION_CONTROLS",
    "Fifo",
    "Flow",
    "Link",
    "Node",
    "Http",
    "OnOffUdp",
    "Ping",
    "Poisson",
    "Video",
    "Queue",
    "Red",
    "Scenario",
    "Tcp",
    "Udp",
    "load_scenario",
    "resolve",
]

#: Congestion-control algorithms the engine implements, with their
#: parameters in :mod:`alphaqos.cc`.
CONGESTION_CONTROLS: tuple[str, ...] = tuple(CC_PARAMS)

# Smallest IP packets the apps can send: IPv4 header 20 B + UDP or ICMP
# header 8 B. Largest: the IPv4 total-length field's 65535 B.
MIN_PACKET_BYTES = 28
MAX_PACKET_BYTES = 65535
MIN_IPV4_MTU_BYTES = 68  # RFC 791: every IPv4 link carries 68-byte packets

NS_PER_S = 10**9
NS_PER_MS = 10**6


# --- the engine's defaults --------------------------------------------------


def _engine_defaults() -> dict[str, Any]:
    """What the engine applies to a scenario that gives only what it must:
    ``_core.applied_config`` of a probe (two links: one with the default
    queue, one with FQ-CoDel one way and SFQ the other, without
    parameters). The models below take their defaults from here, so that
    Python and the engine cannot disagree on them (``tests/test_engine_defaults.py``)."""
    try:
        from . import _core
    except ImportError as exc:
        raise ImportError(f"the simulation engine alphaqos._core is not available ({exc}); build it with `make build`") from exc
    link = {"a": "a", "b": "b", "rate_bps": 1, "delay_ns": 0}
    probe = {"duration_ns": 1, "nodes": [], "links": [link, {**link, "queue_ab": {"fq_codel": {}}, "queue_ba": {"sfq": {}}}]}
    applied = json.loads(_core.applied_config(json.dumps(probe)))
    plain, per_flow = applied["links"]
    return {
        "seed": applied["seed"],
        "metric_interval_ns": applied["metric_interval_ns"],
        "link": {k: plain[k] for k in ("mtu_bytes", "overhead_bytes")},
        "queue": plain["queue_ab"],
        # A link's own per-flow queue; inside a class it takes the class's buffer.
        "fq_codel": per_flow["queue_ab"]["fq_codel"],
        "sfq": per_flow["queue_ba"]["sfq"],
    }


#: The engine's defaults (:func:`_engine_defaults`), in its base units.
ENGINE_DEFAULTS = _engine_defaults()


def _engine_limit(queue: dict[str, Any]) -> units.QueueLimit:
    return units.QueueLimit(pkts=queue["limit_pkts"], bytes=queue["limit_bytes"])


# --- value types ------------------------------------------------------------


def _packet_size(value: int) -> int:
    if not MIN_PACKET_BYTES <= value <= MAX_PACKET_BYTES:
        raise ValueError(
            f"an IP packet size must be between {MIN_PACKET_BYTES}B (IP + UDP/ICMP headers) "
            f"and {MAX_PACKET_BYTES}B, got {value}B"
        )
    return value


def _mtu(value: int) -> int:
    if not MIN_IPV4_MTU_BYTES <= value <= MAX_PACKET_BYTES:
        raise ValueError(
            f"an IPv4 MTU must be between {MIN_IPV4_MTU_BYTES}B and {MAX_PACKET_BYTES}B, "
            f"got {value}B"
        )
    return value


PacketSize = Annotated[Size, AfterValidator(_packet_size)]
Mtu = Annotated[Size, AfterValidator(_mtu)]

Count = Annotated[int, Strict(), Field(ge=1)]
Fraction = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Seed = Annotated[int, Strict(), Field(ge=0, lt=2**64)]



def _parse_ipv4(value: object) -> str:
    try:
        return str(ipaddress.IPv4Address(value if isinstance(value, str) else ""))
    except ipaddress.AddressValueError:
        raise ValueError(f"expected a dotted IPv4 address like '10.0.1.1', got {value!r}") from None


IPv4 = Annotated[str, PlainValidator(_parse_ipv4)]


def _congestion_control(value: object) -> str:
    if value not in CONGESTION_CONTROLS:
        raise ValueError(
            f"unknown congestion control {value!r} (expected one of: {', '.join(CONGESTION_CONTROLS)})"
        )
    return value


CongestionControl = Annotated[str, PlainValidator(_congestion_control)]


# --- models -----------------------------------------------------------------


def _exactly_one(model: BaseModel, keys: tuple[str, ...]) -> None:
    values = model.__dict__  # a model's fields, without pydantic's attribute machinery
    present = [key for key in keys if values[key] is not None]
    if len(present) != 1:
        got = f"got {', '.join(present)}" if present else "got none"
        raise ValueError(f"expected exactly one of: {', '.join(keys)} ({got})")


class Node(_Model):
    """A host (needs ``address``) or a router (``router: true``)."""

    address: IPv4 | None = None
    router: Flag = False
    #: A router applies this policy's firewall filter to what it forwards.
    policy: Name | None = None


class Fifo(_Model):
    """Drop-tail FIFO queue."""

    limit: QueueLimit = _engine_limit(ENGINE_DEFAULTS["queue"]["fifo"])


class Red(_Model):
    """Random Early Detection (Floyd & Jacobson, "Random Early Detection
    Gateways for Congestion Avoidance", 1993), with the "gentle" variant.
    Thresholds are packet counts (numbers) or sizes (``"30KB"``), both of
    the same kind."""

    limit: QueueLimit = units.QueueLimit(pkts=1000)
    min_th: ThresholdField
    max_th: ThresholdField
    max_p: Fraction = 0.1
    w_q: Fraction = 0.002
    gentle: Flag = True
    byte_mode: Flag = False
    mean_pkt_size: PositiveSize = 1000


QUEUE_KINDS = ("fifo", "red", "policy", "htb", "fq_codel", "sfq", "yaqs")


class HtbClass(_Model):
    """An HTB class (``tc class add ... htb``); ``parent`` names another
    class declared before it."""

    parent: str | None = None
    rate: PositiveRate
    ceil: PositiveRate | None = None
    burst: PositiveSize | None = None
    cburst: PositiveSize | None = None
    quantum: PositiveSize | None = None
    prio: Annotated[int, Strict(), Field(ge=0, le=7)] = 0
    limit: QueueLimit = units.QueueLimit(pkts=1000)
    #: A leaf's discipline on its ``limit`` (default a FIFO), as
    #: ``tc qdisc add ... parent 1:10 fq_codel`` attaches one.
    child: Child | None = None


class HtbFilter(_Model):
    """A u32-style filter: packets matching ``src``/``dst`` go to ``class``."""

    src: str | None = None
    dst: str | None = None
    protocol: Literal["tcp", "udp", "icmp"] | None = None
    class_: str = Field(alias="class")


class Htb(_Model):
    """Linux HTB host shaping (the second source document's tool): classes
    by tc class id, in parent-first order, filters, and a ``default`` class
    for unmatched packets (else they go out unshaped, as in Linux)."""

    classes: Annotated[dict[str, HtbClass], Field(min_length=1)]
    filters: list[HtbFilter] = []
    default: str | None = None


class Queue(_Model):
    """An egress queue: exactly one of ``fifo``, ``red``, ``policy`` (the
    classes of a QoS policy, see :mod:`alphaqos.policy`), ``htb``, and the
    per-flow ``fq_codel`` (``{target: 5ms, interval: 100ms, quantum: 1514B,
    limit: 10240p}``) and ``sfq`` (see :class:`~alphaqos.policy.FqCodel`,
    :class:`~alphaqos.policy.Sfq`)."""

    fifo: Fifo | None = None
    red: Red | None = None
    policy: Name | None = None
    htb: Htb | None = None
    fq_codel: FqCodel | None = None
    sfq: Sfq | None = None
    yaqs: Yaqs | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Queue:
        _exactly_one(self, QUEUE_KINDS)
        return self

    @property
    def kind(self) -> str:
        return _first_given(self, QUEUE_KINDS)


DEFAULT_QUEUE = Queue(fifo=Fifo())


class Reorder(_Model):
    """A ``fraction`` of the packets arrives ``by`` positions late."""

    fraction: Probability
    by: Count


class Impair(_Model):
    """What the wire does after the queue: random ``loss`` (a probability
    per packet) and ``reorder``."""

    loss: Probability = 0.0
    reorder: Reorder | None = None


NO_IMPAIRMENT = Impair()


class Link(_Model):
    """A full-duplex link. ``queue`` applies to both directions unless
    ``queues`` overrides it for the direction leaving a given node; the same
    for ``impair`` and ``impairs``."""

    between: tuple[Name, Name]
    rate: PositiveRate
    delay: Time
    mtu: Mtu = ENGINE_DEFAULTS["link"]["mtu_bytes"]
    # Bytes added to each packet on the wire: Ethernet preamble 7 + SFD 1 +
    # header 14 + FCS 4 + inter-frame gap 12 = 38.
    overhead: Size = ENGINE_DEFAULTS["link"]["overhead_bytes"]
    queue: Queue = DEFAULT_QUEUE
    queues: dict[Name, Queue] = Field(default_factory=dict)
    impair: Impair = NO_IMPAIRMENT
    impairs: dict[Name, Impair] = Field(default_factory=dict)
    #: Write what the link sends to a pcap (headers only) in the run's
    #: ``taps/``: ``true`` writes ``<from>-<to>.pcap`` per direction, a name
    #: ``NAME-<from>-<to>.pcap``; ``taps`` per sending node (``true`` or
    #: that direction's file name), as ``queues``.
    tap: bool | str = False
    taps: dict[Name, bool | str] = Field(default_factory=dict)
    #: Count reorderings from TCP sequence numbers and the queue length seen
    #: by each arrival (the ``monitor`` table); ``monitors`` per sending node.
    monitor: Flag = False
    monitors: dict[Name, bool] = Field(default_factory=dict)

    def monitor_from(self, sender: str) -> bool:
        return self.monitors.get(sender, self.monitor)

    def queue_from(self, sender: str) -> Queue:
        """The egress queue of ``sender`` onto this link."""
        return self.queues.get(sender, self.queue)

    def impair_from(self, sender: str) -> Impair:
        """The impairment of the direction leaving ``sender``."""
        return self.impairs.get(sender, self.impair)


class _Endpoints(_Model):
    src: Name = Field(alias="from")
    dst: Name = Field(alias="to")


class TcpOptions(_Model):
    """The TCP options of a connection, as the host's stack runs it."""

    cc: CongestionControl
    rwnd: PositiveSize = 64 * 2**20
    mss: PositiveSize = 1448
    init_cwnd: Count = 10
    delayed_ack: Flag = True
    ack_every: Count = 2
    delack_timeout: PositiveTime = 40 * NS_PER_MS
    min_rto: PositiveTime = 200 * NS_PER_MS
    initial_rto: PositiveTime = 1 * NS_PER_S
    max_rto: PositiveTime = 60 * NS_PER_S
    # How RTO follows SRTT/RTTVAR: Linux's SRTT + max(4 RTTVAR, min_rto), or
    # RFC 6298's max(min_rto, SRTT + 4 RTTVAR) (whose own min_rto is 1s).
    rto: Literal["linux", "rfc6298"] = "linux"
    dupthresh: Count = 3
    # Selective acknowledgements (RFC 2018); on by default, as in Linux (as
    # are window scaling and limited transmit).
    sack: Flag = True
    window_scaling: Flag = True
    limited_transmit: Flag = True
    sndbuf: PositiveSize | None = None
    max_pacing_rate: PositiveRate | None = None
    pacing: Flag = False
    # RACK-style loss detection (RFC 8985) instead of DupThresh; needs SACK.
    rack: Flag = False
    cc_params: dict[str, Any] = Field(default_factory=dict)
    # A bundle of host behaviours (the engine's tcp/linux.rs): "default"
    # (the RFC behaviour above) or "linux-2.6.33" (FACK, the adaptive
    # reordering metric, undo by timestamps and D-SACK, cwnd moderation,
    # rate-halving, 64 KB TSO frames, quick ACKs after a duplicate, GRO at
    # the receiver). Each
    # behaviour below, left unset, takes the profile's value.
    host_profile: Literal["default", "linux-2.6.33"] = "default"
    fack: Flag | None = None
    adaptive_reordering: Flag | None = None
    max_reordering: Count | None = None
    undo: Flag | None = None
    dsack: Flag | None = None
    moderate_cwnd: Flag | None = None
    rate_halving: Flag | None = None
    # Largest TSO/GSO frame (0: no TSO).
    tso: Size | None = None
    quickack_after_dup: Flag | None = None
    # The TCP timestamp clock's tick (Linux: one jiffy, 1/HZ).
    ts_tick: PositiveTime | None = None
    # The receiving host's NIC coalesces in-order segments (GRO, up to 64
    # KB) in NAPI polls, one interrupt per napi_interval at most (ixgbe's
    # bulk-traffic default: 125 µs); TCP sees and ACKs coalesced packets.
    gro: Flag | None = None
    napi_interval: PositiveTime | None = None


class Tcp(TcpOptions, _Endpoints):
    """A bulk TCP transfer (unlimited unless ``size`` is given)."""

    size: PositiveSize | None = None


class WorkloadTcp(TcpOptions):
    """TCP options of a workload's connections (CUBIC, Linux's default,
    unless ``cc`` says otherwise)."""

    cc: CongestionControl = "cubic"
    #: In-order segments acknowledged at once at a connection's start
    #: (Linux's quick-ACK mode, TCP_MAX_QUICKACKS).
    quickack: Annotated[int, Strict(), Field(ge=0)] = 16


#: The TCP options of every workload that gives none: one object, shared.
#: It is frozen (assigning a field raises), as every model here is, and
#: nothing changes a scenario in place (``model_copy(update=...)`` makes a
#: new one), so sharing it is safe; a copy per workload (pydantic deep-copies
#: a default it cannot hash, and this one holds a dict) cost 10^4 workloads
#: a third of their validation (issue 20).
DEFAULT_WORKLOAD_TCP = WorkloadTcp()


class Udp(_Endpoints):
    """Constant-bit-rate UDP: a fixed ``rate`` or a step ``schedule`` of
    ``[time, rate]`` pairs (times from the start of the run, ascending)."""

    rate: PositiveRate | None = None
    schedule: Annotated[list[tuple[Time, Rate]], Field(min_length=1)] | None = None
    size: PacketSize = 1500

    @model_validator(mode="after")
    def _rate_or_schedule(self) -> Udp:
        _exactly_one(self, ("rate", "schedule"))
        return self


class Poisson(_Endpoints):
    """UDP packets with exponential inter-arrival times at a mean ``rate``;
    packet sizes ``fixed`` or ``exponential`` with mean ``size``."""

    rate: PositiveRate
    size: PacketSize = 1500
    sizes: Literal["fixed", "exponential"] = "fixed"


class Ping(_Endpoints):
    """ICMP echo every ``interval``; ``size`` is the IP packet size
    (84 B = IP 20 + ICMP 8 + ping's default 56 data bytes)."""

    interval: PositiveTime = 1 * NS_PER_S
    size: PacketSize = 84


class OnOffUdp(_Endpoints):
    """UDP ON/OFF: constant ``rate`` while ON, in ``size`` packets; ON and
    OFF periods of mean ``on_mean`` and ``off_mean`` (not ``on``/``off``,
    which YAML reads as booleans), exponential (defaults: ITU-T P.59's talk
    spurt, 1.004 s, and pause, 1.587 s: a VoIP talker with silence
    suppression) or Pareto of shape ``pareto_shape`` (a VBR source)."""

    rate: PositiveRate
    size: PacketSize = 1500
    on_mean: PositiveTime = 1_004 * NS_PER_MS
    off_mean: PositiveTime = 1_587 * NS_PER_MS
    pareto_shape: Annotated[float, Field(gt=1.0, allow_inf_nan=False)] | None = None


class Video(_Endpoints):
    """MPEG-like video: a GOP ``IBBPBBPBBPBB`` at ``fps`` frames a second,
    frame sizes I : P : B = 5 : 3 : 1 varying by a lognormal factor of
    log-deviation ``sigma``, averaging ``rate`` in ``size`` packets."""

    rate: PositiveRate
    size: PacketSize = 1500
    fps: Annotated[float, Field(gt=0, le=1000, allow_inf_nan=False)] = 25.0
    sigma: Annotated[float, Field(ge=0, le=3, allow_inf_nan=False)] = 0.3


FLOW_KINDS = ("tcp", "udp", "ping", "poisson", "onoff", "video")


class Flow(_Model):
    """One application flow: exactly one of ``tcp``, ``udp``, ``ping``,
    ``poisson``, ``onoff``, ``video``, active from ``start`` to ``stop``
    (default: end of run)."""

    name: Annotated[str, Strict(), Field(min_length=1)]
    tcp: Tcp | None = None
    udp: Udp | None = None
    ping: Ping | None = None
    poisson: Poisson | None = None
    onoff: OnOffUdp | None = None
    video: Video | None = None
    start: Time = 0
    stop: Time | None = None
    #: DiffServ marking of the flow's packets (both directions).
    dscp: Dscp = 0
    #: Transport ports; default: an ephemeral source port and 5001.
    src_port: Port | None = None
    dst_port: Port | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Flow:
        _exactly_one(self, FLOW_KINDS)
        return self

    @property
    def kind(self) -> str:
        return _first_given(self, FLOW_KINDS)

    @property
    def spec(self) -> Tcp | Udp | Ping | Poisson | OnOffUdp | Video:
        return getattr(self, self.kind)


# --- workloads ------------------------------------------------------------


class Pareto(_Model):
    """Pareto (type I) sizes of tail index ``shape`` (> 1) and ``mean``."""

    shape: Annotated[float, Field(gt=1.0)] = 1.2
    mean: PositiveSize = 8000


class Lognormal(_Model):
    """Lognormal sizes of ``mean`` whose logarithm has deviation ``sigma``."""

    mean: PositiveSize
    sigma: Annotated[float, Field(ge=0.0)]


class Exponential(_Model):
    mean: PositiveSize


def _fixed_size(value: object) -> object:
    # A bare size ("10GB") is a fixed size.
    return {"fixed": value} if isinstance(value, (str, int)) and not isinstance(value, bool) else value


class SizeDist(_Model):
    """Transfer sizes: exactly one of ``fixed``, ``exponential``, ``pareto``,
    ``lognormal``, ``empirical`` (a CDF: ``[[size, probability], ...]``,
    sizes increasing, probabilities non-decreasing up to 1); ``max`` cuts
    every draw. A bare size (``10GB``) is a fixed size."""

    fixed: PositiveSize | None = None
    exponential: Exponential | None = None
    pareto: Pareto | None = None
    lognormal: Lognormal | None = None
    empirical: Annotated[list[tuple[Size, Annotated[float, Field(ge=0.0, le=1.0)]]], Field(min_length=1)] | None = None
    max: PositiveSize | None = None

    @model_validator(mode="after")
    def _one(self) -> SizeDist:
        _exactly_one(self, SIZE_KINDS)
        if self.empirical is not None:
            for i, ((x0, p0), (x1, p1)) in enumerate(zip(self.empirical, self.empirical[1:]), start=1):
                if x1 <= x0:
                    raise ValueError(f"empirical[{i}]: sizes must increase ({units.fmt_size(x1)} after {units.fmt_size(x0)})")
                if p1 < p0:
                    raise ValueError(f"empirical[{i}]: the CDF is not monotone ({p1} after {p0})")
            if abs(self.empirical[-1][1] - 1.0) > 1e-9:
                raise ValueError(f"empirical: the last probability must be 1, got {self.empirical[-1][1]}")
        return self


SIZE_KINDS = ("fixed", "exponential", "pareto", "lognormal", "empirical")
Sizes = Annotated[SizeDist, BeforeValidator(_fixed_size)]


class Transfer(_Endpoints):
    """One file of ``size`` bytes, at the workload's start."""

    size: PositiveSize


class Pairs(_Model):
    """Which hosts a transfer joins: ``all`` ordered pairs of distinct hosts
    of a list, one of a ``list`` of ``[from, to]`` pairs, or a host of
    ``from`` to a host of ``to``; each uniformly at random."""

    all: Annotated[list[Name], Field(min_length=2)] | None = None
    list_: Annotated[list[tuple[Name, Name]], Field(min_length=1)] | None = Field(None, alias="list")
    src: Annotated[list[Name], Field(min_length=1)] | None = Field(None, alias="from")
    dst: Annotated[list[Name], Field(min_length=1)] | None = Field(None, alias="to")

    @model_validator(mode="after")
    def _one(self) -> Pairs:
        given = [k for k, v in (("all", self.all), ("list", self.list_), ("from/to", self.src or self.dst)) if v]
        if len(given) != 1:
            raise ValueError(f"give exactly one of all, list, from/to (got {', '.join(given) or 'none'})")
        if (self.src is None) != (self.dst is None):
            raise ValueError("from and to go together")
        return self

    def hosts(self) -> list[str]:
        if self.all is not None:
            return list(self.all)
        if self.list_ is not None:
            return [h for pair in self.list_ for h in pair]
        return [*self.src, *self.dst]


class LinkShare(_Model):
    """A share of the rate of the link ``link: [A, B]`` (either direction's rate)."""

    share: Annotated[float, Field(gt=0.0, le=1.0)]
    link: tuple[Name, Name]


class PoissonArrivals(_Model):
    """Transfers arriving as a Poisson process: ``rate`` arrivals per
    second, or an offered ``load`` (a rate such as ``50Mbps``, or
    ``{share: 0.5, link: [R1, R2]}``) from which the rate follows with the
    mean size."""

    rate: Annotated[float, Field(gt=0.0)] | None = None
    load: PositiveRate | LinkShare | None = None
    pairs: Pairs
    size: Sizes

    @model_validator(mode="after")
    def _rate_or_load(self) -> PoissonArrivals:
        _exactly_one(self, ("rate", "load"))
        return self


class OnOff(_Model):
    """Web-like sources: every host of ``hosts`` alternates between a
    transfer to a random host of ``peers`` and an idle time, exponential of
    mean ``idle`` after each transfer, or, with ``mean_rate``, a think time
    between starts of mean (mean size / mean_rate). Default sizes: Pareto of
    shape 1.2 and mean 8 KB (Liberatore, "Local Flow Separation")."""

    hosts: Annotated[list[Name], Field(min_length=1)]
    peers: Annotated[list[Name], Field(min_length=1)]
    size: Sizes = SizeDist(pareto=Pareto())
    idle: PositiveTime | None = None
    mean_rate: PositiveRate | None = None

    @model_validator(mode="after")
    def _idle_or_rate(self) -> OnOff:
        _exactly_one(self, ("idle", "mean_rate"))
        return self


class Http(_Model):
    """HTTP browsing: ``sessions`` sessions on each host of ``clients``,
    each alternating a page from ``server`` (a request of ``request``
    bytes, then a response of a ``response`` size, heavy-tailed by default:
    Pareto of shape 1.2 and mean 12 KB) and an exponential think time: of
    mean ``think`` after the response, or between page starts so that the
    workload offers ``mean_rate`` of responses in all."""

    server: Name
    clients: Annotated[list[Name], Field(min_length=1)]
    sessions: Count = 1
    request: PositiveSize = 350
    response: Sizes = SizeDist(pareto=Pareto(shape=1.2, mean="12KB"))
    think: PositiveTime | None = None
    mean_rate: PositiveRate | None = None

    @model_validator(mode="after")
    def _think_or_rate(self) -> Http:
        _exactly_one(self, ("think", "mean_rate"))
        return self


class StreamOptions(_Model):
    """What one stream of a transfer does differently from the workload's
    ``tcp`` and ``dscp`` (e.g. a base connection with ``cc: base_flow`` in
    the AF class beside an additional one marked out of profile)."""

    cc: CongestionControl | None = None
    cc_params: dict[str, Any] | None = None
    dscp: Dscp | None = None
    max_pacing_rate: PositiveRate | None = None


WORKLOAD_KINDS = ("transfer", "poisson", "onoff", "http")


class Workload(_Model):
    """Traffic that opens TCP connections as the run goes: exactly one of
    ``transfer``, ``poisson``, ``onoff``, ``http``. No transfer starts before
    ``start`` or at or after ``stop``; each runs over ``streams`` parallel
    connections (GridFTP-style striping)."""

    name: Annotated[str, Strict(), Field(min_length=1)]
    transfer: Transfer | None = None
    poisson: PoissonArrivals | None = None
    onoff: OnOff | None = None
    http: Http | None = None
    tcp: WorkloadTcp = Field(default_factory=lambda: DEFAULT_WORKLOAD_TCP)
    #: Open each connection with a three-way handshake.
    handshake: Flag = True
    streams: Count = 1
    start: Time = 0
    stop: Time | None = None
    dscp: Dscp = 0
    dst_port: Port | None = None
    #: An application-limited sender: data written at ``app_rate`` in writes
    #: of ``write_size`` (default one MSS) instead of all at once.
    app_rate: PositiveRate | None = None
    write_size: PositiveSize | None = None
    #: How a file is split among its streams: ``static`` (equal stripes) or
    #: ``dynamic`` (blocks of ``block`` handed to whichever stream has room,
    #: as GridFTP's extended block mode).
    striping: Literal["static", "dynamic"] = "static"
    block: PositiveSize = 256 * 1024
    #: Per-stream differences (entry i for stream i).
    stream_options: list[StreamOptions] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_kind(self) -> Workload:
        _exactly_one(self, WORKLOAD_KINDS)
        if len(self.stream_options) > self.streams:
            raise ValueError(f"stream_options has {len(self.stream_options)} entries for {self.streams} streams")
        return self

    @property
    def kind(self) -> str:
        return _first_given(self, WORKLOAD_KINDS)

    def hosts(self) -> list[tuple[tuple, str]]:
        """(field path, host name) of every host it names."""
        if self.transfer is not None:
            return [(("transfer", "from"), self.transfer.src), (("transfer", "to"), self.transfer.dst)]
        if self.poisson is not None:
            return [(("poisson", "pairs"), h) for h in self.poisson.pairs.hosts()]
        if self.http is not None:
            return [(("http", "server"), self.http.server)] + [(("http", "clients"), h) for h in self.http.clients]
        return [(("onoff", "hosts"), h) for h in self.onoff.hosts] + [(("onoff", "peers"), h) for h in self.onoff.peers]


class Scenario(_Model):
    """A whole scenario; see the module docstring for the YAML form."""

    name: Name
    description: str = ""
    duration: PositiveTime
    seed: Seed = ENGINE_DEFAULTS["seed"]
    metric_interval: PositiveTime = ENGINE_DEFAULTS["metric_interval_ns"]
    nodes: Annotated[dict[Name, Node], Field(min_length=1)]
    policies: dict[Name, Policy] = {}
    links: list[Link] = []
    flows: list[Flow] = []
    #: Traffic that opens connections at run time.
    workloads: list[Workload] = []
    #: Control agents (see :mod:`alphaqos.agents`).
    control: list[ControlAgent] = []
    #: Files due by a deadline, over a base and an additional connection
    #: (:mod:`alphaqos.deadline`).
    deadline_transfers: list[DeadlineTransfer] = []

    @model_validator(mode="after")
    def _per_flow_limits(self) -> Scenario:
        """Every ``fq_codel`` or ``sfq`` without a ``limit`` has the one the
        engine gives it: a link's own, Linux's (10240p, 127p); a class's
        child (HTB, or a policy's class), the class's buffer (see
        :func:`_fill_per_flow_limits`)."""
        _fill_per_flow_limits(self)
        return self

    def resolved(self) -> Scenario:
        """The same scenario with every flow's stop time filled in and the
        router addresses the engine assigns (``_core.check``; without a
        built engine, routers without an address are left without one)."""
        scenario = self.with_stops()
        addresses = router_addresses(scenario)
        nodes = {name: node.model_copy(update={"address": addresses.get(name, node.address)}) for name, node in self.nodes.items()}
        return scenario.model_copy(update={"nodes": nodes})

    def with_stops(self) -> Scenario:
        """The same scenario with every flow's stop time filled in."""
        flows = [flow.model_copy(update={"stop": self.stop_of(flow)}) for flow in self.flows]
        return self.model_copy(update={"flows": flows})

    def stop_of(self, flow: Flow) -> int:
        """A flow's stop time in ns (the end of the run by default)."""
        return self.duration if flow.stop is None else flow.stop

    def to_yaml(self) -> str:
        """The scenario as YAML in human units; :func:`load_scenario` reads
        it back to an equal scenario."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return yaml.dump(data, Dumper=DUMPER, sort_keys=False, default_flow_style=None, allow_unicode=True, width=100)


# --- limits the engine fills in ---------------------------------------------


def _per_flow_queues(scenario: Scenario):
    """Every place a per-flow queue (``fq_codel``, ``sfq``) without a limit
    is built: (link index, sender, the model, its path in the engine's
    queue configuration). Link queues, HTB leaves' children, and the
    children of the classes of the policies links use."""
    for index, link in enumerate(scenario.links):
        for sender in dict.fromkeys(link.between):
            queue = link.queue_from(sender)
            if queue.htb is not None:
                children = [(("htb", "classes", i, "child"), c.child) for i, c in enumerate(queue.htb.classes.values())]
            elif queue.policy is not None and queue.policy in scenario.policies:
                policy = scenario.policies[queue.policy]
                kind = policy.scheduler.replace("-", "_")
                children = [((kind, "classes", i, "child"), c.child) for i, c in enumerate(policy.classes.values())]
            else:
                children = [((), queue)]
            for path, holder in children:
                for kind in ("fq_codel", "sfq"):
                    spec = getattr(holder, kind, None) if holder is not None else None
                    if spec is not None and spec.limit is None:
                        yield index, sender, spec, (*path, kind)


def _fill_per_flow_limits(scenario: Scenario) -> None:
    """Set the limit of every per-flow queue the scenario leaves without
    one (:func:`_per_flow_queues`) to what the engine applies
    (``_core.applied_config``, which fills a class's child from the class's
    buffer as the builder does), so that what reads the scenario (plots,
    summaries) knows it. The limit is not marked as set by the user
    (``model_fields_set``): a trace replay still lifts it. A policy used on
    links where its child's limit comes out differently is left unset; a
    queue the engine cannot read is left to the checks that report it."""
    found = list(_per_flow_queues(scenario))
    if not found:
        return
    from . import _core

    directions, links = [], []
    for index, sender in dict.fromkeys((index, sender) for index, sender, _, _ in found):
        link = scenario.links[index]
        try:
            queue = _resolve_queue(link.queue_from(sender), scenario.policies)
        except Exception:  # noqa: BLE001 - a queue the cross-checks refuse: they report it, with its path
            continue
        directions.append((index, sender))
        links.append({"a": "a", "b": "b", "rate_bps": link.rate, "delay_ns": 0, "mtu_bytes": link.mtu, "queue_ab": queue})
    try:
        applied = json.loads(_core.applied_config(json.dumps({"duration_ns": 1, "nodes": [], "links": links})))
    except ValueError:
        return
    limits: dict[int, tuple[Any, set]] = {}
    for index, sender, spec, path in found:
        if (index, sender) not in directions:
            continue
        node = applied["links"][directions.index((index, sender))]["queue_ab"]
        for part in path:
            node = node[part] if isinstance(node, (dict, list)) and (isinstance(part, int) or part in node) else None
        if not isinstance(node, dict) or (node.get("limit_pkts") is None and node.get("limit_bytes") is None):
            continue  # not filled in: the engine leaves it to the build
        limits.setdefault(id(spec), (spec, set()))[1].add(units.QueueLimit(pkts=node["limit_pkts"], bytes=node["limit_bytes"]))
    for spec, seen in limits.values():
        if len(seen) == 1:
            object.__setattr__(spec, "limit", seen.pop())


# --- loading and validation -------------------------------------------------


def load_scenario(
    path_or_dict: str | Path | dict, *, seed: int | None = None, duration: str | None = None
) -> Scenario:
    """Read and validate a scenario (a YAML file's path, or a dict).

    ``seed`` overrides the scenario's seed. ``duration`` (a time string such
    as ``"10s"``) runs the scenario's timeline for that long instead: flow
    stops and UDP schedule steps past the new end are cut, flows that stop
    at the end of the run follow it, and flows that start at or after the
    new end are left out, each with a :class:`~alphaqos.errors.ScenarioNote`
    warning. Nothing is rescaled.
    Raises :class:`~alphaqos.errors.ScenarioError` with every problem found
    (the structure's, or if the structure is sound, the cross-field checks').
    """
    with _collector_paused():
        return _load_scenario(path_or_dict, seed=seed, duration=duration)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a scenario is loaded:
    validation makes 10^5 objects for 10^4 items, none of them in a cycle
    worth collecting, and each full collection walks them all (a fifth of
    the time of loading 10^4 workloads, issue 20). Reference counting
    still frees what is dropped; the collector's state is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _load_scenario(path_or_dict: str | Path | dict, *, seed: int | None, duration: str | None) -> Scenario:
    source = read_source(path_or_dict)
    if not isinstance(source.data, dict):
        raise ScenarioError([source.issue((), "expected a mapping with name, duration, nodes, links and flows")])
    data, issues = _with_policy_files(source)
    data = data if seed is None else {**data, "seed": seed}
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        issues += _pydantic_issues(exc, source, seed, data=data)
    if issues:
        raise ScenarioError(_sorted(issues))
    problems = _cross_checks(scenario) or _engine_checks(scenario) or _deadline_checks(scenario)
    if problems:
        raise ScenarioError(_sorted([source.issue(loc, message) for loc, message in problems]))
    if duration is None:
        return scenario
    shortened, left_out = _with_duration(scenario, _duration_override(duration, source))
    note = f" (the duration override ends the run at {_t(shortened.duration)})"
    problems = _cross_checks(shortened)
    if problems:
        raise ScenarioError(_sorted([source.issue(loc, message + note) for loc, message in problems]))
    for loc, what, name, start in left_out:
        issue = source.issue(loc, (
            f"{what} {name!r} starts at {_t(start)}, not before the end of the shortened run "
            f"({_t(shortened.duration)}): left out"
        ))  # fmt: skip
        warnings.warn(ScenarioNote(str(issue)), stacklevel=3)
    return shortened


def _engine_checks(scenario: Scenario) -> list[tuple[tuple, str]]:
    """What the engine itself refuses in the resolved configuration (paths,
    MTUs, size distributions...), every problem at the user's field path
    (:func:`alphaqos.engine.engine_loc`), and the deadline transfers' edge
    routers off the engine's own routes. The engine is the one source of
    truth for what it checks; without a built engine this step is left to
    the run."""
    from .engine import EngineMissingError, check

    pairs = [(t.src, t.dst) for t in scenario.deadline_transfers]
    try:
        problems, applied = check(scenario, pairs)
    except EngineMissingError:
        return []
    return problems or list(check_deadline_edges(scenario, applied["paths"]))


def router_addresses(scenario: Scenario) -> dict[str, str]:
    """Every node's address as the engine assigns it (a router without one
    draws from the engine's pool); empty without a built engine."""
    from .engine import EngineMissingError, check

    try:
        return check(scenario)[1]["addresses"]
    except EngineMissingError:
        return {}


def _deadline_checks(scenario: Scenario) -> list[tuple[tuple, str]]:
    """Deadlines no path could meet (the engine estimates the earliest
    completion; without a built engine this is left to the run)."""
    try:
        from . import _core  # noqa: F401
    except ImportError:
        return []
    from .deadline import check_feasible

    return list(check_feasible(scenario))


def _with_policy_files(source: Source) -> tuple[dict[str, Any], list[Issue]]:
    """The scenario with every policy given as a file name (``policies:
    {two-queues: policies/two-queues.yaml}``, relative to the scenario's
    directory, or ``other-scenario.yaml#two-queues`` for a policy of another
    scenario) read in: the same policy document can then serve several
    scenarios and ``alphaqos provision``. Also the problems of those files;
    a policy whose file has problems is left out."""
    policies = source.data.get("policies")
    if not isinstance(policies, dict) or not any(isinstance(v, str) for v in policies.values()):
        return source.data, []
    base = Path(source.name).parent if source.name else Path.cwd()
    included, issues = {}, []
    for name, value in policies.items():
        if not isinstance(value, str):
            included[name] = value
            continue
        try:
            included[name] = load_policy_file(base / value, key=name)[0]
        except ScenarioError as exc:
            issues += exc.issues
    return {**source.data, "policies": included}, issues


def load_policy_file(path: str | Path, *, key: str | None = None) -> tuple[dict[str, Any], Source]:
    """Read a file holding one policy document and check it against the
    policy schema; return its data and source (whose lines are the policy's,
    keyed by paths within it). ``FILE#NAME`` reads the policy ``NAME`` out
    of a scenario file's ``policies`` (itself a policy, or a reference to a
    policy file relative to that scenario). Errors name the file and line,
    and the field as ``policies.<key>.<path>`` (a scenario's entry), or
    without ``key`` as the path within the file."""
    path, name = _split_policy_reference(path)
    document = read_source(path, what="scenario" if name else "policy file")
    prefix: tuple[str, ...] = ("policies", key or "_")
    data, lines = document.data, document.lines
    if name is not None:
        policies = data.get("policies") if isinstance(data, dict) else None
        if not isinstance(policies, dict) or name not in policies:
            known = ", ".join(map(str, policies)) if isinstance(policies, dict) and policies else "none"
            raise ScenarioError([document.issue(("policies",), f"no policy {name!r} in this scenario (policies: {known})")])
        if isinstance(policies[name], str):
            return load_policy_file(Path(path).parent / policies[name], key=key)
        data = policies[name]
        lines = {loc[2:]: line for loc, line in lines.items() if loc[:2] == ("policies", name)}
        prefix = ("policies", key or name)
    if not isinstance(data, dict):
        raise ScenarioError([Source(data, document.name, lines).issue((), "a policy is a mapping with classes")])
    # Word pydantic's errors as a scenario's (the allowed keys below
    # policies.<name> are known), at the line in the policy file.
    scoped = Source(data=data, name=document.name, lines={(*prefix, *loc): line for loc, line in lines.items()})
    try:
        Policy.model_validate(data)
    except ValidationError as exc:
        issues = _pydantic_issues(exc, scoped, None, prefix=prefix, data=data)
        if key is None and name is None:
            issues = [dataclasses.replace(issue, loc=issue.loc[2:]) for issue in issues]
        raise ScenarioError(_sorted(issues)) from None
    return data, Source(data=data, name=document.name, lines=lines)


def _split_policy_reference(path: str | Path) -> tuple[Path, str | None]:
    """``scenario.yaml#two-queues`` -> (``scenario.yaml``, ``two-queues``);
    a file whose own name holds a ``#`` is taken as it is."""
    text = str(path)
    if "#" not in text or Path(text).exists():
        return Path(text), None
    file, _, name = text.rpartition("#")
    return Path(file), name


def _duration_override(duration: str, source: Source) -> int:
    try:
        value = units.parse_time(duration)
        if value <= 0:
            raise ValueError(f"must be greater than 0s, got {duration!r}")
    except ValueError as exc:
        raise ScenarioError([Issue(loc=("duration",), message=f"{exc} (duration override)", source=source.name)]) from None
    return value


def _with_duration(scenario: Scenario, duration: int) -> tuple[Scenario, list[tuple[tuple, str, str, int]]]:
    """``scenario`` run for ``duration``, and what is left out of it (field
    path, "flow" or "workload", name, start): flows and workloads that start
    at or after the new end are left out, explicit stops and schedule steps
    past it are cut, default stops follow it."""
    flows, workloads, left_out = [], [], []
    for index, workload in enumerate(scenario.workloads):
        if workload.start >= duration:
            left_out.append((("workloads", index), "workload", workload.name, workload.start))
        elif workload.stop is not None and workload.stop > duration:
            workloads.append(workload.model_copy(update={"stop": duration}))
        else:
            workloads.append(workload)
    for index, flow in enumerate(scenario.flows):
        if flow.start >= duration:
            left_out.append((("flows", index), "flow", flow.name, flow.start))
            continue
        update: dict[str, Any] = {}
        if flow.stop is not None:
            update["stop"] = min(flow.stop, duration)
        if flow.udp is not None and flow.udp.schedule is not None:
            steps = [(time, rate) for time, rate in flow.udp.schedule if time < duration]
            # Every step past the end: the flow stays silent, at 0 bit/s.
            update["udp"] = flow.udp.model_copy(update={"schedule": steps or [(0, 0)]})
        flows.append(flow.model_copy(update=update))
    return scenario.model_copy(update={"duration": duration, "flows": flows, "workloads": workloads}), left_out


def _sorted(issues: list[Issue]) -> list[Issue]:
    """Issues in file order, so the first one reported is the topmost (a
    missing key after the other problems of its mapping)."""
    return sorted(issues, key=lambda issue: issue.sort_key)


def _pydantic_issues(
    exc: ValidationError, source: Source, seed: int | None, prefix: tuple = (), data: Any = None
) -> list[Issue]:
    """Every pydantic error of validating ``data`` (default: the source's) as
    an issue. A misspelt key is reported once, as an unknown key with its
    likely spelling: the "required key is missing" its misspelling caused is
    folded into it. Where a value may take one of several forms (``discard``
    or ``{class: X}``), only the errors of the form written are kept, at the
    value's own path."""
    data = source.data if data is None else data
    errors = []
    for error in exc.errors():
        loc, node, branch = _without_union_tags(tuple(error["loc"]), data, error["type"])
        if branch and _other_branch(error["type"], node):
            continue
        errors.append({**error, "loc": (*prefix, *loc)})
    missing = {tuple(e["loc"]) for e in errors if e["type"] == "missing"}
    folded = set()
    for error in errors:
        if error["type"] == "extra_forbidden":
            loc = tuple(error["loc"])
            guess = _did_you_mean(loc)
            if guess is not None and (*loc[:-1], guess) in missing:
                folded.add((*loc[:-1], guess))
    return [
        _issue_from_pydantic(error, source, seed)
        for error in errors
        if not (error["type"] == "missing" and tuple(error["loc"]) in folded)
    ]


def _without_union_tags(loc: tuple, data: Any, kind: str) -> tuple[tuple, Any, bool]:
    """``loc`` without pydantic's union-member tags (``ClassRef``,
    ``literal[...]``): parts that name nothing in ``data`` (but the last
    one of a missing or unknown key). Also the value at the tagged position
    and whether there was a tag."""
    kept, node, tagged, at = [], data, False, data
    for index, part in enumerate(loc):
        last_key = index == len(loc) - 1 and kind in ("missing", "extra_forbidden")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif not last_key and not tagged:
            tagged, at = True, node
            continue
        kept.append(part)
    return tuple(kept), at, tagged


def _other_branch(kind: str, value: Any) -> bool:
    """Whether an error of a union member is about a form other than the one
    written: a choice of words for a mapping, a mapping for a word."""
    if isinstance(value, dict):
        return kind in ("literal_error", "string_type", "enum")
    return kind in ("model_type", "model_attributes_type", "dict_type")


def _did_you_mean(loc: tuple) -> str | None:
    """The key the model at ``loc[:-1]`` accepts that ``loc[-1]`` most
    likely misspells (difflib's closest match), if any."""
    if not isinstance(loc[-1], str):
        return None
    matches = difflib.get_close_matches(loc[-1], _allowed_keys(loc[:-1]), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _issue_from_pydantic(error: dict[str, Any], source: Source, seed: int | None) -> Issue:
    """Reword one pydantic error as "what was expected", at its YAML path."""
    loc = tuple(error["loc"])
    kind = error["type"]
    order = None
    if kind == "value_error":
        cause = error["ctx"]["error"]
        message = str(cause)
        if isinstance(cause, FieldError):
            loc = (*loc, *cause.loc)
    elif kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        guess = _did_you_mean(loc)
        message = f"unknown key {loc[-1]!r}" + (f": did you mean {guess!r}?" if guess else "")
        message += f" (expected one of: {', '.join(allowed)})" if allowed else ""
    elif kind == "missing":
        message = "required key is missing"
        # Shown at the mapping's line, reported after the mapping's other problems.
        within = [line for at, line in source.lines.items() if at[: len(loc) - 1] == loc[:-1]]
        order = (max(within), 1) if within else None
    else:
        message = error["msg"]
        if message.startswith("Input should be "):
            message = "expected " + message.removeprefix("Input should be ")
        if "input" in error and not isinstance(error["input"], (dict, list)) and ", got" not in message:
            message += f", got {error['input']!r}"
    if loc and loc[-1] == "[key]":
        loc, message = loc[:-1], f"invalid key: {message}"
    if seed is not None and loc == ("seed",):
        return Issue(loc=loc, message=f"{message} (seed override)", source=source.name)
    return dataclasses.replace(source.issue(loc, message), order=order)


def _allowed_keys(loc: tuple) -> list[str]:
    """The keys the model at ``loc`` (a path into a Scenario) accepts."""
    annotation: Any = Scenario
    for part in loc:
        annotation = _strip(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = {info.alias or name: info for name, info in annotation.model_fields.items()}
            if part not in fields:
                return []
            annotation = fields[part].annotation
        elif get_origin(annotation) in (list, dict):
            annotation = get_args(annotation)[-1]
        else:
            return []
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [info.alias or name for name, info in annotation.model_fields.items()]
    return []


def _strip(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` -> ``X``."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union or type(annotation).__name__ == "UnionType":
            # A model among the forms, if any: it is the one with keys.
            forms = [arg for arg in get_args(annotation) if arg is not type(None)]
            annotation = next((f for f in forms if isinstance(_strip(f), type) and issubclass(_strip(f), BaseModel)), forms[0])
        else:
            return annotation


# --- cross-field checks -----------------------------------------------------


def _cross_checks(scenario: Scenario) -> list[tuple[tuple, str]]:
    """Everything a single field cannot check alone, as (path, message)."""
    return [
        *_check_nodes(scenario),
        *_check_policies(scenario),
        *_check_links(scenario),
        *_check_flows(scenario),
        *_check_workloads(scenario),
        *check_deadline_transfers(scenario),
        *_check_run(scenario),
    ]


def _check_run(scenario: Scenario):
    if scenario.metric_interval > scenario.duration:
        yield ("metric_interval",), f"{_t(scenario.metric_interval)} is longer than the run ({_t(scenario.duration)})"


def _t(ns: int) -> str:
    return units.fmt_time_ns(ns, exact=True)


def _check_nodes(scenario: Scenario):
    owner: dict[str, str] = {}
    for name, node in scenario.nodes.items():
        if node.policy is not None:
            if not node.router:
                yield ("nodes", name, "policy"), "only routers apply a policy's filter (add 'router: true')"
            elif node.policy not in scenario.policies:
                yield ("nodes", name, "policy"), _unknown_policy(node.policy, scenario)
        if not node.router and node.address is None:
            yield ("nodes", name), "a host needs an IPv4 address (add 'address: ...', or 'router: true')"
        if node.address is None:
            continue
        if node.address in owner:
            yield ("nodes", name, "address"), f"address {node.address} is already used by node {owner[node.address]!r}"
        owner.setdefault(node.address, name)


def _check_policies(scenario: Scenario):
    for name, policy in scenario.policies.items():
        for loc, message in check_policy(policy):
            yield ("policies", name, *loc), message


def _unknown_policy(name: str, scenario: Scenario) -> str:
    known = ", ".join(scenario.policies) or "none defined under 'policies'"
    return f"unknown policy {name!r} (policies: {known})"


def _check_links(scenario: Scenario):
    joined: dict[frozenset, int] = {}
    for index, link in enumerate(scenario.links):
        a, b = link.between
        for end_index, end in enumerate(link.between):
            if end not in scenario.nodes:
                yield ("links", index, "between", end_index), _unknown_node(end, scenario)
        if a == b:
            yield ("links", index, "between"), f"a link joins two different nodes, got {a!r} twice"
        pair = frozenset(link.between)
        if pair in joined:
            yield ("links", index, "between"), f"duplicate link: links[{joined[pair]}] already joins {a!r} and {b!r}"
        joined.setdefault(pair, index)
        for key, per_sender in (("queues", link.queues), ("impairs", link.impairs), ("taps", link.taps), ("monitors", link.monitors)):
            for sender in per_sender:
                if sender not in link.between:
                    yield (
                        ("links", index, key, sender),
                        f"{sender!r} is not an end of this link (expected {a!r} or {b!r})",
                    )
        taps = [(("links", index, "tap"), link.tap)] + [(("links", index, "taps", s), t) for s, t in link.taps.items()]
        for loc, tap in taps:
            if isinstance(tap, str) and (not tap or "/" in tap or tap.startswith(".")):
                yield loc, f"a tap is true or a file name (no directory, not hidden), got {tap!r}"
        queues = [(("links", index, "queue"), link.queue)]
        queues += [(("links", index, "queues", sender), queue) for sender, queue in link.queues.items()]
        for loc, queue in queues:
            if queue.red is not None:
                yield from _check_red(queue.red, (*loc, "red"))
            if queue.policy is not None and queue.policy not in scenario.policies:
                yield (*loc, "policy"), _unknown_policy(queue.policy, scenario)
            if queue.htb is not None:
                yield from _check_htb(queue.htb, (*loc, "htb"))


def _check_htb(htb: Htb, loc: tuple):
    declared: list[str] = []
    for name, c in htb.classes.items():
        if c.parent is not None and c.parent not in declared:
            yield (*loc, "classes", name, "parent"), f"parent {c.parent!r} must be a class declared before {name!r}"
        if c.ceil is not None and c.ceil < c.rate:
            yield (*loc, "classes", name, "ceil"), "ceil must not be below rate"
        declared.append(name)
    parents = {c.parent for c in htb.classes.values()}
    leaves = [name for name in htb.classes if name not in parents]
    for name, c in htb.classes.items():
        if c.child is not None and name in parents:
            yield (*loc, "classes", name, "child"), f"{name!r} is an inner class: it holds no packets, so it takes no child (leaves: {', '.join(leaves)})"
    for i, f in enumerate(htb.filters):
        if f.class_ not in leaves:
            yield (*loc, "filters", i, "class"), f"{f.class_!r} is not a leaf class (leaves: {', '.join(leaves)})"
        for key in ("src", "dst"):
            value = getattr(f, key)
            if value is not None:
                try:
                    ipaddress.IPv4Network(value, strict=False)
                except ValueError:
                    yield (*loc, "filters", i, key), f"expected an IPv4 prefix like '10.0.2.0/24', got {value!r}"
    if htb.default is not None and htb.default not in leaves:
        yield (*loc, "default"), f"{htb.default!r} is not a leaf class (leaves: {', '.join(leaves)})"


def _check_red(red: Red, loc: tuple):
    if red.min_th.in_bytes != red.max_th.in_bytes:
        yield (*loc, "max_th"), "min_th and max_th must both be packet counts or both be sizes"
    elif red.min_th.value >= red.max_th.value:
        yield (*loc, "max_th"), (
            f"must be greater than min_th ({_fmt_threshold(red.min_th)}), got {_fmt_threshold(red.max_th)}"
        )


def _check_flows(scenario: Scenario):
    first_use: dict[str, int] = {}
    for index, flow in enumerate(scenario.flows):
        loc = ("flows", index)
        if flow.name in first_use:
            yield (*loc, "name"), f"duplicate flow name {flow.name!r} (also flows[{first_use[flow.name]}])"
        first_use.setdefault(flow.name, index)
        yield from _check_endpoints(scenario, flow, loc)
        yield from _check_times(scenario, flow, loc)
        if flow.udp is not None and flow.udp.schedule is not None:
            yield from _check_schedule(scenario, flow.udp.schedule, (*loc, "udp", "schedule"))
        if flow.tcp is not None:
            yield from _check_tcp(flow.tcp, (*loc, "tcp"))
        if flow.ping is not None:
            for key in ("src_port", "dst_port"):
                if getattr(flow, key) is not None:
                    yield (*loc, key), "a ping (ICMP) has no ports"


def _check_workloads(scenario: Scenario):
    """Names a workload uses, its times and TCP options. What needs the
    engine's arithmetic (paths and MTUs, size distributions' parameters) the
    engine checks, and its errors come back with the workload's path."""
    seen: dict[str, int] = {}
    for index, wl in enumerate(scenario.workloads):
        loc = ("workloads", index)
        if wl.name in seen:
            yield (*loc, "name"), f"duplicate workload name {wl.name!r} (also workloads[{seen[wl.name]}])"
        seen.setdefault(wl.name, index)
        for key, host in wl.hosts():
            node = scenario.nodes.get(host)
            if node is None:
                yield (*loc, *key), _unknown_node(host, scenario)
            elif node.router:
                yield (*loc, *key), f"{host!r} is a router; transfers run between hosts"
        if wl.transfer is not None and wl.transfer.src == wl.transfer.dst:
            yield (*loc, "transfer", "to"), f"a transfer needs two different hosts, got {wl.transfer.src!r} twice"
        if wl.http is not None and wl.http.server in wl.http.clients:
            i = wl.http.clients.index(wl.http.server)
            yield (*loc, "http", "clients", i), f"{wl.http.server!r} is the server; clients fetch from another host"
        load = wl.poisson.load if wl.poisson is not None else None
        if isinstance(load, LinkShare) and _link_between(scenario, *load.link) is None:
            yield (*loc, "poisson", "load", "link"), f"no link between {load.link[0]!r} and {load.link[1]!r}"
        stop = wl.stop if wl.stop is not None else scenario.duration
        if stop > scenario.duration:
            yield (*loc, "stop"), f"{_t(stop)} is after the end of the run (duration {_t(scenario.duration)})"
        elif wl.start >= stop:
            yield (*loc, "start"), f"{_t(wl.start)} is not before {_t(stop)}"
        yield from _check_tcp(wl.tcp, (*loc, "tcp"))
        for i, o in enumerate(wl.stream_options):
            if o.cc is not None or o.cc_params is not None:
                try:
                    _validated_cc_params(o.cc or wl.tcp.cc, o.cc_params or {})
                except ValueError as exc:
                    yield (*loc, "stream_options", i, "cc_params"), str(exc)


def _first_given(model: BaseModel, keys: tuple[str, ...]) -> str:
    """The first of ``keys`` whose field is set (a model's kind)."""
    values = model.__dict__
    for key in keys:
        if values[key] is not None:
            return key
    raise ValueError(f"none of {', '.join(keys)} is given")


def _link_between(scenario: Scenario, a: str, b: str) -> Link | None:
    return next((link for link in scenario.links if set(link.between) == {a, b}), None)


def _check_endpoints(scenario: Scenario, flow: Flow, loc: tuple):
    """The flow's ends are two hosts of the scenario; whether a path joins
    them and its packets fit it, the engine checks (:func:`_engine_checks`)."""
    spec, kind = flow.spec, flow.kind
    usable = True
    for key, end in (("from", spec.src), ("to", spec.dst)):
        node = scenario.nodes.get(end)
        if node is None:
            yield (*loc, kind, key), _unknown_node(end, scenario)
            usable = False
        elif node.router:
            yield (*loc, kind, key), f"{end!r} is a router; flows run between hosts"
            usable = False
    if usable and spec.src == spec.dst:
        yield (*loc, kind, "to"), f"a flow needs two different hosts, got {spec.src!r} twice"


def _check_times(scenario: Scenario, flow: Flow, loc: tuple):
    stop = scenario.stop_of(flow)
    if stop > scenario.duration:
        yield (*loc, "stop"), f"{_t(stop)} is after the end of the run (duration {_t(scenario.duration)})"
    elif flow.start >= stop:
        end = "its stop" if flow.stop is not None else "the end of the run"
        yield (*loc, "start"), f"{_t(flow.start)} is not before {end} ({_t(stop)})"


def _check_schedule(scenario: Scenario, schedule: list[tuple[int, int]], loc: tuple):
    for step, (time, _rate) in enumerate(schedule):
        if time >= scenario.duration:
            yield (*loc, step, 0), f"{_t(time)} is not before the end of the run ({_t(scenario.duration)})"
        if step and time <= schedule[step - 1][0]:
            yield (*loc, step, 0), f"schedule times must ascend: {_t(time)} follows {_t(schedule[step - 1][0])}"


def _check_tcp(tcp: Tcp, loc: tuple):
    if tcp.rwnd < tcp.mss:
        yield (*loc, "rwnd"), f"must be at least one segment (mss {units.fmt_size(tcp.mss, exact=True)})"
    if tcp.min_rto > tcp.max_rto:
        yield (*loc, "max_rto"), f"must not be less than min_rto ({_t(tcp.min_rto)})"
    elif not tcp.min_rto <= tcp.initial_rto <= tcp.max_rto:
        yield (*loc, "initial_rto"), f"must lie between min_rto ({_t(tcp.min_rto)}) and max_rto ({_t(tcp.max_rto)})"
    if tcp.rack and not tcp.sack:
        yield (*loc, "rack"), "RACK loss detection needs sack: true"
    try:
        _validated_cc_params(tcp.cc, tcp.cc_params)
    except ValueError as exc:
        yield (*loc, "cc_params"), str(exc)


#: Controller parameters validated so far, by (controller, ``repr`` of
#: the parameters): the model, or the message of the error it raised.
_CC_VALIDATED: dict[tuple[Any, str], Any] = {}
_CC_VALIDATED_MAX = 1024


def _validated_cc_params(cc: str, params: Any) -> Any:
    """:func:`~alphaqos.cc.validate_cc_params` once per distinct value
    (10^4 workloads mostly share one), raising the same error each time.
    The model it returns is frozen. Values are told apart by ``repr``, which
    keeps what the check sees (``1`` from ``1.0`` and ``True``, the order of
    keys, which orders the errors) for the plain data a file gives; anything
    else is validated every time."""
    if not (params is None or type(params) is dict) or type(cc) is not str:
        return validate_cc_params(cc, params)
    key = (cc, repr(params))
    found = _CC_VALIDATED.get(key)
    if found is None:
        try:
            found = validate_cc_params(cc, params)
        except ValueError as exc:
            found = str(exc)
        if len(_CC_VALIDATED) < _CC_VALIDATED_MAX:
            _CC_VALIDATED[key] = found
    if isinstance(found, str):
        raise ValueError(found)
    return found


def _unknown_node(name: str, scenario: Scenario) -> str:
    return f"unknown node {name!r} (nodes: {', '.join(scenario.nodes)})"


# --- the engine's resolved configuration -----------------------------------


def resolve(scenario: Scenario, *, tap_dir: str | Path | None = None) -> dict[str, Any]:
    """The engine configuration of ``docs/engine-config.md``: plain JSON
    types, integers in base units (ns, bit/s, bytes), all defaults filled.
    Link taps are written into ``tap_dir``; without it nothing is captured."""
    scenario = _expand_deadline_transfers(scenario)
    tcp_memo: dict[int, dict[str, Any]] = {}  # workloads share their TCP options (DEFAULT_WORKLOAD_TCP)
    return {
        "tap_dir": None if tap_dir is None else str(tap_dir),
        "name": scenario.name,
        "seed": scenario.seed,
        "duration_ns": scenario.duration,
        "metric_interval_ns": scenario.metric_interval,
        "nodes": [
            {
                "name": name,
                "router": node.router,
                "address": node.address,
                "filter": resolve_filter(scenario.policies[node.policy]) if node.policy else [],
            }
            for name, node in scenario.nodes.items()
        ],
        "links": [_resolve_link(link, scenario.policies, taps=tap_dir is not None) for link in scenario.links],
        "flows": [_resolve_flow(flow, scenario.stop_of(flow)) for flow in scenario.flows],
        "workloads": [_resolve_workload(wl, scenario, tcp_memo) for wl in scenario.workloads],
        "control": [resolve_agent(a) for a in scenario.control],
    }


def _tap_file(link: Link, sender: str, receiver: str) -> str | None:
    """``taps: {X: FILE}`` is that direction's file; ``tap: NAME`` (both
    directions) writes ``NAME-<from>-<to>.pcap``; ``true``, ``<from>-<to>.pcap``."""
    direction = f"{sender}-{receiver}.pcap"
    if sender in link.taps:
        tap = link.taps[sender]
        return None if tap is False else direction if tap is True else tap
    if link.tap is False:
        return None
    return direction if link.tap is True else f"{link.tap.removesuffix('.pcap')}-{direction}"


def _resolve_link(link: Link, policies: dict[str, Policy], *, taps: bool = False) -> dict[str, Any]:
    a, b = link.between
    return {
        "monitor_ab": link.monitor_from(a),
        "monitor_ba": link.monitor_from(b),
        "tap_ab": _tap_file(link, a, b) if taps else None,
        "tap_ba": _tap_file(link, b, a) if taps else None,
        "a": a,
        "b": b,
        "rate_bps": link.rate,
        "delay_ns": link.delay,
        "mtu_bytes": link.mtu,
        "overhead_bytes": link.overhead,
        "queue_ab": _resolve_queue(link.queue_from(a), policies),
        "queue_ba": _resolve_queue(link.queue_from(b), policies),
        "impair_ab": _resolve_impair(link.impair_from(a)),
        "impair_ba": _resolve_impair(link.impair_from(b)),
    }


def _resolve_impair(impair: Impair) -> dict[str, Any]:
    reorder = impair.reorder
    return {
        "loss": impair.loss,
        "reorder_fraction": reorder.fraction if reorder else 0.0,
        "reorder_by": reorder.by if reorder else 0,
    }


def _resolve_queue(queue: Queue, policies: dict[str, Policy]) -> dict[str, Any]:
    if queue.policy is not None:
        return resolve_egress(policies[queue.policy])
    if queue.htb is not None:
        return {"htb": _resolve_htb(queue.htb)}
    if queue.fifo is not None:
        return {"fifo": _resolve_limit(queue.fifo.limit)}
    if queue.fq_codel is not None:
        return {"fq_codel": fq_codel_config(queue.fq_codel)}
    if queue.sfq is not None:
        return {"sfq": sfq_config(queue.sfq)}
    if queue.yaqs is not None:
        return {"yaqs": resolve_yaqs(queue.yaqs)}
    red = queue.red
    return {
        "red": {
            **_resolve_limit(red.limit),
            "min_th": red.min_th.value,
            "max_th": red.max_th.value,
            "thresholds_in_bytes": red.min_th.in_bytes,
            "max_p": red.max_p,
            "w_q": red.w_q,
            "gentle": red.gentle,
            "byte_mode": red.byte_mode,
            "mean_pkt_bytes": red.mean_pkt_size,
        }
    }


def _resolve_htb(htb: Htb) -> dict[str, Any]:
    protocols = {"icmp": 1, "tcp": 6, "udp": 17}
    return {
        "classes": [
            {
                "name": name, "parent": c.parent, "rate_bps": c.rate, "ceil_bps": c.ceil, "burst_bytes": c.burst,
                "cburst_bytes": c.cburst, "quantum_bytes": c.quantum, "prio": c.prio,
                "limit_pkts": c.limit.pkts, "limit_bytes": c.limit.bytes, **child_config(c.child),
            }
            for name, c in htb.classes.items()
        ],
        "filters": [
            {"src": f.src, "dst": f.dst, "proto": protocols[f.protocol] if f.protocol else None, "class": f.class_}
            for f in htb.filters
        ],
        "default_class": htb.default,
    }  # fmt: skip


def _resolve_limit(limit: units.QueueLimit) -> dict[str, int | None]:
    return {"limit_pkts": limit.pkts, "limit_bytes": limit.bytes}


def _resolve_tcp(tcp: TcpOptions) -> dict[str, Any]:
    return {
        "cc": tcp.cc,
        "mss_bytes": tcp.mss,
        "init_cwnd_pkts": tcp.init_cwnd,
        "rwnd_bytes": tcp.rwnd,
        "delayed_ack": tcp.delayed_ack,
        "ack_every": tcp.ack_every,
        "delack_timeout_ns": tcp.delack_timeout,
        "min_rto_ns": tcp.min_rto,
        "initial_rto_ns": tcp.initial_rto,
        "max_rto_ns": tcp.max_rto,
        "rto_style": tcp.rto,
        "dupthresh": tcp.dupthresh,
        "size_bytes": tcp.size if isinstance(tcp, Tcp) else None,
        "sack": tcp.sack,
        "window_scaling": tcp.window_scaling,
        "limited_transmit": tcp.limited_transmit,
        "sndbuf_bytes": tcp.sndbuf,
        "max_pacing_rate_bps": tcp.max_pacing_rate,
        "pacing": tcp.pacing,
        "rack": tcp.rack,
        "cc_params": resolve_cc_params(_validated_cc_params(tcp.cc, tcp.cc_params)),
        "host_profile": tcp.host_profile,
        "fack": tcp.fack,
        "adaptive_reordering": tcp.adaptive_reordering,
        "max_reordering": tcp.max_reordering,
        "undo": tcp.undo,
        "dsack": tcp.dsack,
        "moderate_cwnd": tcp.moderate_cwnd,
        "rate_halving": tcp.rate_halving,
        "tso_max_bytes": tcp.tso,
        "quickack_after_dup": tcp.quickack_after_dup,
        "ts_tick_ns": tcp.ts_tick,
        "gro": tcp.gro,
        "napi_interval_ns": tcp.napi_interval,
    }


def _resolve_size(size: SizeDist) -> dict[str, Any]:
    if size.fixed is not None:
        body: dict[str, Any] = {"fixed": {"bytes": size.fixed}}
    elif size.exponential is not None:
        body = {"exponential": {"mean_bytes": float(size.exponential.mean)}}
    elif size.pareto is not None:
        body = {"pareto": {"shape": size.pareto.shape, "mean_bytes": float(size.pareto.mean)}}
    elif size.lognormal is not None:
        body = {"lognormal": {"mean_bytes": float(size.lognormal.mean), "sigma": size.lognormal.sigma}}
    else:
        body = {"empirical": {"cdf": [[float(x), p] for x, p in size.empirical]}}
    next(iter(body.values()))["max_bytes"] = size.max
    return body


def _resolve_stream_options(o: StreamOptions, tcp: TcpOptions) -> dict[str, Any]:
    cc = o.cc or tcp.cc
    params = o.cc_params if o.cc_params is not None else ({} if o.cc else tcp.cc_params)
    return {
        "cc": o.cc, "cc_params": resolve_cc_params(_validated_cc_params(cc, params)) if (o.cc or o.cc_params is not None) else None,
        "dscp": o.dscp, "max_pacing_rate_bps": o.max_pacing_rate,
    }  # fmt: skip


def _resolve_workload(wl: Workload, scenario: Scenario, tcp_memo: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The engine's workload; ``tcp_memo`` keeps the resolved TCP options
    of each options object seen (by identity), so that workloads sharing
    one are resolved once; each still gets dicts of its own."""
    memo = {} if tcp_memo is None else tcp_memo
    base = memo.get(id(wl.tcp))
    if base is None:
        base = memo[id(wl.tcp)] = {**_resolve_tcp(wl.tcp), "quickack_segments": wl.tcp.quickack}
        base.pop("size_bytes")
    tcp = {**base, "cc_params": dict(base["cc_params"])}
    out: dict[str, Any] = {
        "name": wl.name, "tcp": tcp, "handshake": wl.handshake, "streams": wl.streams,
        "start_ns": wl.start, "stop_ns": wl.stop, "dscp": wl.dscp, "dst_port": wl.dst_port,
        "app_rate_bps": wl.app_rate, "write_bytes": wl.write_size,
        "striping": wl.striping, "block_bytes": wl.block,
        "stream_options": [_resolve_stream_options(o, wl.tcp) for o in wl.stream_options],
    }  # fmt: skip
    if wl.transfer is not None:
        out["transfer"] = {"src": wl.transfer.src, "dst": wl.transfer.dst, "size_bytes": wl.transfer.size}
    elif wl.poisson is not None:
        p = wl.poisson
        pairs = p.pairs
        if pairs.all is not None:
            pairs_cfg: dict[str, Any] = {"all": list(pairs.all)}
        elif pairs.list_ is not None:
            pairs_cfg = {"list": [list(x) for x in pairs.list_]}
        else:
            pairs_cfg = {"groups": {"from": list(pairs.src), "to": list(pairs.dst)}}
        load = p.load
        if isinstance(load, LinkShare):
            load = round(load.share * _link_between(scenario, *load.link).rate)
        out["poisson"] = {"rate_per_s": p.rate, "load_bps": load, "pairs": pairs_cfg, "size": _resolve_size(p.size)}
    elif wl.http is not None:
        h = wl.http
        out["http"] = {
            "server": h.server, "clients": list(h.clients), "sessions": h.sessions, "request_bytes": h.request,
            "response": _resolve_size(h.response), "think_mean_ns": h.think, "mean_rate_bps": h.mean_rate,
        }  # fmt: skip
    else:
        o = wl.onoff
        out["onoff"] = {
            "hosts": list(o.hosts), "peers": list(o.peers), "size": _resolve_size(o.size),
            "idle_mean_ns": o.idle, "mean_rate_bps": o.mean_rate,
        }  # fmt: skip
    return out


def _resolve_flow(flow: Flow, stop: int) -> dict[str, Any]:
    """The engine's flow, active from its start to ``stop`` (ns)."""
    spec = flow.spec
    common = {
        "name": flow.name, "src": spec.src, "dst": spec.dst, "start_ns": flow.start, "stop_ns": stop,
        "dscp": flow.dscp, "src_port": flow.src_port, "dst_port": flow.dst_port,
    }  # fmt: skip
    if flow.tcp is not None:
        app = _resolve_tcp(flow.tcp)
    elif flow.udp is not None:
        udp = flow.udp
        schedule = udp.schedule if udp.schedule is not None else [(flow.start, udp.rate)]
        app = {"size_bytes": udp.size, "schedule": [[time, rate] for time, rate in schedule]}
    elif flow.poisson is not None:
        poisson = flow.poisson
        app = {"rate_bps": poisson.rate, "size_bytes": poisson.size, "exp_size": poisson.sizes == "exponential"}
    elif flow.onoff is not None:
        o = flow.onoff
        app = {"rate_bps": o.rate, "size_bytes": o.size, "on_mean_ns": o.on_mean, "off_mean_ns": o.off_mean, "pareto_shape": o.pareto_shape}
    elif flow.video is not None:
        v = flow.video
        app = {"mean_rate_bps": v.rate, "size_bytes": v.size, "fps": v.fps, "sigma": v.sigma}
    else:
        app = {"interval_ns": flow.ping.interval, "size_bytes": flow.ping.size}
    return {**common, flow.kind: app}
