"""The scenario's models: what users write, validated field by field, with
the engine's defaults (see the package's docstring for the YAML form)."""

from __future__ import annotations

import json
import ipaddress
from typing import Annotated, Any, Literal
import yaml
from pydantic import AfterValidator, BeforeValidator, BaseModel, Field, PlainValidator, Strict, model_validator
from .. import units
from ..fields import Dscp, Flag, Name, Port, PositiveRate, PositiveSize, PositiveTime, QueueLimit, Rate, Size, ThresholdField, Time
from ..fields import Model as _Model
from ..policy import Child, FqCodel, Policy, Sfq, Yaqs
from ..agents import ControlAgent
from ..cc import CC_PARAMS
from ..deadline import DeadlineTransfer
from ..source import DUMPER


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
        from .. import _core
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
    # ns-2's wait_: no early drop until count x p_b reaches 1 after the
    # last one (drops spaced 1/p_b to 2/p_b packets apart).
    wait: Flag = False


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
    # A bundle of host behaviours (the engine's tcp/linux.rs, tcp/linux6.rs,
    # tcp/ns2.rs): "default" (the RFC behaviour above), "linux-2.6.33" (FACK,
    # the adaptive reordering metric, undo by timestamps and D-SACK, cwnd
    # moderation, rate-halving, 64 KB TSO frames, quick ACKs after a
    # duplicate, GRO at the receiver), "linux-6" (Linux 6 as this machine's
    # 6.18 runs it: RACK with tail loss probes, PRR, D-SACK and undo, the
    # adaptive reordering metric, TSO frames and the TSQ limit sized from
    # the pacing rate, no pacing, quick ACKs after a duplicate, GRO at the
    # receiver; rack true where left unset, with sack) or "ns2" (ns-2.35's
    # Agent/TCP/Sack1 and its DelAck sink: per-ACK window growth, Sack1
    # recovery, no early ACK for PSH, a 10 ms RTT clock; init_cwnd 2, delack_timeout 100ms, initial_rto 3s, rto rfc6298
    # and quickack 0 where left unset). Each behaviour below, left unset,
    # takes the profile's value. Default: linux-6, hosts as they run today
    # (reproductions pin their document's profile).
    host_profile: Literal["default", "linux-2.6.33", "linux-6", "ns2"] = "linux-6"
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
    # ns-2's window growth: +1 packet (slow start) or +1/cwnd (after) per
    # ACK, whatever it acknowledges (no byte counting).
    per_ack_growth: Flag | None = None
    # ns-2's Agent/TCP/Sack1 loss recovery (pipe counted by ACKs) instead of
    # RFC 6675; needs sack.
    sack1: Flag | None = None
    # ns-2's DelAck sink: a pushed segment waits for the delayed-ACK timer.
    ns2_delack: Flag | None = None
    # ns-2's RTT clock (tcpTick_): samples and RTO in whole ticks.
    tcp_tick: PositiveTime | None = None
    # Tail loss probes (RFC 8985 section 7, Linux's tcp_schedule_loss_probe).
    tlp: Flag | None = None
    # Proportional rate reduction in recovery (RFC 6937, tcp_cwnd_reduction).
    prr: Flag | None = None
    # TSO frames and the TSQ limit sized from the pacing rate, about 1 ms of
    # it (tcp_tso_autosize, tcp_small_queue_check).
    tso_autosize: Flag | None = None

    @model_validator(mode="after")
    def _profile_values(self) -> TcpOptions:
        """The host profile's values of the keys left unset, as if given
        (:func:`profile_unset`): what the model holds is what runs, and a
        dumped scenario reads back equal whatever the default profile. Set
        in place: the model is new, and a validator may return only itself."""
        unset = profile_unset(self)
        for key, value in unset.items():
            object.__setattr__(self, key, value)
        self.model_fields_set.update(unset)
        return self


def profile_unset(tcp: TcpOptions) -> dict[str, Any]:
    """The keys ``tcp`` leaves unset that its host profile gives a value
    (:data:`PROFILE_DEFAULTS`), with those values."""
    defaults = PROFILE_DEFAULTS.get(tcp.host_profile, {})
    if tcp.host_profile == "linux-6" and not tcp.sack:
        return {}  # RACK needs SACK
    return {k: v for k, v in defaults.items() if k in type(tcp).model_fields and k not in tcp.model_fields_set}


#: A host profile's values of the TCP keys a scenario leaves unset. ns2:
#: ns-2.35's ``tcl/lib/ns-default.tcl`` (``windowInit_ 2``,
#: ``Agent/TCPSink/Sack1/DelAck set interval_ 100ms``, ``rtxcur_init_ 3.0``;
#: ``rtt_timeout`` with ``rfc2988_ true`` is max(minrto_, SRTT + 4 RTTVAR);
#: no quick ACKs). linux-6: RACK (``tcp_recovery`` 1, on since 4.18), which
#: needs SACK. ``cc`` stays the scenario's: a flow names it, a workload's
#: connections are CUBIC (Linux's default) unless it says otherwise.
PROFILE_DEFAULTS: dict[str, dict[str, Any]] = {
    "ns2": {"init_cwnd": 2, "delack_timeout": 100 * NS_PER_MS, "initial_rto": 3 * NS_PER_S, "rto": "rfc6298", "quickack": 0},
    "linux-6": {"rack": True},
}


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
        from .loading import router_addresses

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
    from .. import _core
    from .resolution import _resolve_queue

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

def _first_given(model: BaseModel, keys: tuple[str, ...]) -> str:
    """The first of ``keys`` whose field is set (a model's kind)."""
    values = model.__dict__
    for key in keys:
        if values[key] is not None:
            return key
    raise ValueError(f"none of {', '.join(keys)} is given")
