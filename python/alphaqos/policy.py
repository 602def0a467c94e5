"""QoS policies: the class-of-service configuration of a router, as one
document that a scenario simulates and that provisioning will render into
router configuration.

The vocabulary is Junos class-of-service (with Cisco MQC equivalents in
mind): forwarding classes, each with its queue's ``transmit_rate``,
``buffer_size``, ``priority`` and drop profile, and a firewall ``filter`` whose
terms classify and police packets::

    policies:
      two-queues:
        buffer: 125MB                  # the interface buffer the queues share
        classes:                       # queue order; the first is the default class
          beta:  {transmit_rate: 40%, buffer_size: 40%, priority: medium-low}
          alpha: {transmit_rate: 60%, buffer_size: 60%, priority: medium-high}
        filter:
          - name: alpha-transfers
            from: {source: 10.0.2.0/24, destination: 10.0.1.1/32, protocol: tcp}
            then: {class: alpha}

A policy may also live in a file of its own, named instead of written out
(``policies: {two-queues: ../policies/two-queues.yaml}``, relative to the
scenario), so that one document serves several scenarios and the
provisioning commands.

A router applies a policy's filter to every packet it forwards
(``nodes: {WR: {router: true, policy: two-queues}}``); an egress queue built
from the policy (``queue: {policy: two-queues}``) schedules the classes, with
the default ``scheduler: junos``, as the Juniper routers of the first source
document do (Yan et al. 2013, Section III-A): a WFQ stage marks each queue
in or out of profile against its transmit rate, a priority stage serves
in-profile queues first.
A policer (``then: {policer: {rate: 1Gbps, burst: 31KB, out_of_profile: ...}}``)
handles out-of-profile packets as the document's three options: ``discard``,
``loss_priority_high`` (kept, subject to the class's drop profile for high
loss priority), or ``{class: scavenger}``.

Schedulers
----------
``scheduler:`` picks the egress scheduler (``qos/sched/`` in the engine);
every class keeps its ``buffer_size`` share of ``buffer`` (strictly
partitioned) and takes only the parameters its scheduler uses; any other
is an error naming the class and the field:

- ``junos`` (default): ``transmit_rate`` (required), ``priority``
  (default ``low``), ``exact``, ``burst`` or ``meter_window``, as above;
  ``excess_priority`` and ``excess_rate`` (see below); a ``buffer_size``
  may be ``{temporal: 100ms}``, Junos's ``buffer-size temporal``: the
  bytes the class's transmit rate sends in that time;
- ``strict-priority``: ``priority``, the Junos level names ordered
  ``strict-high`` > ``high`` > ``medium-high`` > ``medium-low`` > ``low``
  (default ``low``); the highest backlogged level is always served first,
  round robin within a level;
- ``wrr``: ``weight``, packets per round (an integer >= 1, required);
- ``drr``: ``quantum``, bytes per round (a size like ``1514B``, required;
  Shreedhar & Varghese's deficit round robin);
- ``mdrr``: Cisco 12000 MDRR. ``weight`` 1..2048 (required, except
  for a ``low_latency: strict-priority`` class, which never uses it), the quantum
  being ``MTU + (weight - 1) * 512`` bytes on the link's MTU (Cisco,
  "Understanding and Configuring MDRR and WRED on the Cisco 12000 Series
  Internet Router"); one class may be the low-latency queue with
  ``low_latency: strict-priority`` (served whenever backlogged) or
  ``low_latency: alternate-priority`` (alternating with the other queues,
  its own ``weight`` setting its turn), as IOS's ``queue low-latency
  strict-priority`` / ``alternate-priority`` commands do::

    policies:
      gsr:
        scheduler: mdrr
        buffer: 1000p
        classes:
          be:    {weight: 1, buffer_size: 50%}
          af:    {weight: 3, buffer_size: 30%}
          voice: {weight: 1, buffer_size: 20%, low_latency: strict-priority}

The MX Series Trio scheduler
---------------------------
``junos`` models by default the description of the first source document
(excess bandwidth by priority). What the MX80's Trio chipset does where
Juniper documents it (``crates/alphaqos-sim/src/qos/sched/junos.rs``):
``excess: proportional`` on the policy gives a queue above its transmit
rate the excess at its excess priority, excess high (``strict-high`` and
``high`` queues, or ``excess_priority: high``/``medium-high``) before
excess low, shared in proportion to ``excess_rate`` (a percentage,
default the transmit rate); ``excess_priority: none`` keeps the queue at
its priority above its rate. The in/out-of-profile meter's depth is
undocumented: ``burst`` (bytes, default 1500B) or ``meter_window`` (the
transmit rate times that time)::

    policies:
      trio:
        excess: proportional
        buffer: 125MB
        classes:
          beta:  {transmit_rate: 50%, buffer_size: 50%, priority: medium-low}
          alpha: {transmit_rate: 49%, buffer_size: {temporal: 100ms}, priority: medium-high, meter_window: 1ms}
          scavenger: {transmit_rate: 1%, buffer_size: 1%, priority: low, excess_rate: 1%}

Three-colour policers
---------------------
Besides the single-rate ``{rate, burst, out_of_profile}``, a term's
``policer`` may meter with RFC 2697's srTCM (``srtcm: {cir, cbs, ebs}``,
at least one burst > 0) or RFC 2698's trTCM (``trtcm: {cir, cbs, pir,
pbs}``, ``pir >= cir``, bursts > 0), colour-blind unless ``color_aware:
true`` (a packet already coloured by an upstream policer is never
promoted), with an action for ``yellow`` (default ``transmit``) and ``red``
(default ``discard``): ``transmit`` (forward, keeping the colour for the
class's drop profile: Junos's loss priority medium-high for yellow, high
for red), ``loss_priority_high`` (forward coloured red), ``discard``, or
``{class: X}``::

    then:
      class: af
      policer: {srtcm: {cir: 200Mbps, cbs: 30KB, ebs: 60KB}, yellow: transmit, red: {class: scavenger}}

Drop profiles
-------------
A class's ``drop_profile`` is exactly one of:

- Junos interpolated curves (``fill %``, ``drop %`` points on the
  instantaneous fill of the class buffer in bytes, held as a 64-level table
  as Junos holds them) per loss priority:
  ``low`` (green), ``medium_high`` (yellow), ``high`` (red);
- ``wred``: Cisco IOS WRED (``random-detect``) per colour: ``{min_th,
  max_th}`` in packets and ``mark_prob_denominator`` (default 10, Cisco's)
  or ``max_p``, on an average queue with ``exponential_weighting_constant``
  n (default 9: weight 2^-n);
- ``rio``: RED with In and Out (Clark & Fang 1998): ``in`` (green, judged
  on the average of green packets) and ``out`` (yellow and red, on the
  average of the whole queue), each a RED curve;
- ``gred``: Linux GRED drop precedences, a RED curve per colour on one
  shared average.

A RED curve is ``{min_th, max_th, max_p (0.1), w_q (0.002), gentle (true),
byte_mode (false), mean_pkt_size (1000B)}``, thresholds packet counts or
sizes (``"30KB"``) as in a ``red`` queue::

    drop_profile:
      wred:
        exponential_weighting_constant: 9
        green: {min_th: 40, max_th: 80, mark_prob_denominator: 10}
        red:   {min_th: 10, max_th: 40, max_p: 0.5}

Child disciplines
-----------------
A class's queue is a FIFO on its buffer share, or, with ``child``, another
discipline on that share: ``red`` (a RED curve as above), ``fq_codel``
(FQ-CoDel, RFC 8290, with Linux's defaults: ``target: 5ms``, ``interval:
100ms``, ``quantum`` the link MTU + 14 B, ``buckets: 1024``, ``limit`` the
class's buffer) or ``sfq`` (hashed deficit round robin), or ``fifo: {}``. A
``drop_profile`` is a FIFO with that profile, so a class takes one or the
other::

    classes:
      bulk: {transmit_rate: 70%, buffer_size: 70%, child: {fq_codel: {target: 5ms, quantum: 1514B}}}
      web:  {transmit_rate: 30%, buffer_size: 30%, child: {sfq: {buckets: 256}}}

The same kinds (``fq_codel``, ``sfq``) are link queues of their own in a
scenario (``queues: {R: {fq_codel: {}}}``) and HTB leaves' ``child``.
"""

from __future__ import annotations

from dataclasses import dataclass
import ipaddress
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PlainSerializer, PlainValidator, Strict, model_validator

from . import units
from .errors import FieldError
from .fields import Dscp, Flag, Model, Name, PortRange, PositiveRate, PositiveSize, PositiveTime, QueueLimit, Size, ThresholdField

__all__ = ["Child", "FqCodel", "Policy", "Sfq", "Temporal", "check_policy", "child_config", "fq_codel_config", "resolve_egress", "resolve_filter", "sfq_config"]

#: A positive count.
Count = Annotated[int, Strict(), Field(ge=1)]
#: A probability or a fraction in [0, 1].
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]

PROTOCOLS = {"icmp": 1, "tcp": 6, "udp": 17}


def _prefix(value: object) -> str:
    try:
        return str(ipaddress.IPv4Network(value if isinstance(value, str) else "", strict=False))
    except ValueError:
        raise ValueError(f"expected an IPv4 prefix like '10.0.2.0/24', got {value!r}") from None


Prefix = Annotated[str, PlainValidator(_prefix)]


def _percent(value: object) -> float:
    text = str(value).strip()
    if not text.endswith("%"):
        raise ValueError(f"expected a percentage like '40%', got {value!r}")
    try:
        p = float(text[:-1])
    except ValueError:
        raise ValueError(f"expected a percentage like '40%', got {value!r}") from None
    if not 0 <= p <= 100:
        raise ValueError(f"a percentage must be between 0% and 100%, got {value!r}")
    return p


def _fmt_percent(p: float) -> str:
    return f"{p:g}%"


Percent = Annotated[float, PlainValidator(_percent), PlainSerializer(_fmt_percent, when_used="json")]


@dataclass(frozen=True)
class Temporal:
    """Junos ``buffer-size temporal``: the bytes the queue's transmit rate
    sends in ``ns`` nanoseconds."""

    ns: int


def _buffer_size(value: object) -> float | Temporal:
    """'40%' -> 40.0 (percent of the policy's buffer); {temporal: 100ms} -> Temporal."""
    if isinstance(value, dict):
        if set(value) != {"temporal"}:
            raise ValueError(f"expected a percentage like '40%' or {{temporal: 100ms}}, got {value!r}")
        try:
            ns = units.parse_time(value["temporal"])
        except ValueError as exc:
            raise ValueError(f"temporal: {exc}") from None
        if ns <= 0:
            raise ValueError("temporal: must be greater than 0s")
        return Temporal(ns)
    return _percent(value)


def _fmt_buffer_size(value: float | Temporal) -> str | dict[str, str]:
    if isinstance(value, Temporal):
        return {"temporal": units.fmt_time_ns(value.ns, exact=True)}
    return _fmt_percent(value)


BufferSize = Annotated[float | Temporal, PlainValidator(_buffer_size), PlainSerializer(_fmt_buffer_size, when_used="json")]


def _transmit_rate(value: object) -> float | int | str:
    """'40%' -> 40.0 (percent), '3Gbps' -> 3000000000 (bit/s), 'remainder'."""
    if value == "remainder":
        return "remainder"
    if isinstance(value, str) and value.strip().endswith("%"):
        return _percent(value)
    try:
        rate = units.parse_rate(value)
    except ValueError:
        raise ValueError(f"expected a percentage ('60%'), a rate ('3Gbps') or 'remainder', got {value!r}") from None
    if rate <= 0:
        raise ValueError("a transmit rate must be greater than 0bps")
    return rate


def _fmt_transmit_rate(value: float | int | str) -> str:
    if isinstance(value, float):
        return _fmt_percent(value)
    if isinstance(value, int):
        return units.fmt_rate(value, exact=True)
    return value


TransmitRate = Annotated[
    float | int | str, PlainValidator(_transmit_rate), PlainSerializer(_fmt_transmit_rate, when_used="json")
]

def _check_curve(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Junos drop-profile points: (fill %, drop %) in [0, 100], fills
    increasing, probabilities not decreasing (the engine's ``DropCurve``)."""
    for i, (fill, drop) in enumerate(points):
        if not (0 <= fill <= 100 and 0 <= drop <= 100):
            raise ValueError(f"point {i} ({fill:g}%, {drop:g}%): fill and drop must be percentages in [0, 100]")
        if i and fill <= points[i - 1][0]:
            raise ValueError(f"point {i}: fill levels must increase, got {points[i - 1][0]:g}% then {fill:g}%")
        if i and drop < points[i - 1][1]:
            raise ValueError(f"point {i}: drop probabilities must not decrease, got {points[i - 1][1]:g}% then {drop:g}%")
    return points


Curve = Annotated[list[tuple[float, float]], AfterValidator(_check_curve)]


class CiscoThreshold(Model):
    """Cisco WRED thresholds of one colour: packets, and the drop
    probability at ``max_th`` as ``1 / mark_prob_denominator`` or ``max_p``."""

    min_th: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    max_th: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    mark_prob_denominator: Annotated[int, Strict(), Field(ge=1)] | None = None
    max_p: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] | None = None

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _consistent(self) -> CiscoThreshold:
        if self.min_th >= self.max_th:
            raise ValueError(f"min_th ({self.min_th:g}) must be below max_th ({self.max_th:g})")
        if self.mark_prob_denominator is not None and self.max_p is not None:
            raise ValueError("give mark_prob_denominator or max_p, not both")
        return self

    def probability(self) -> float:
        if self.max_p is not None:
            return self.max_p
        return 1 / (self.mark_prob_denominator or 10)


class Wred(Model):
    """Cisco IOS WRED per colour (``random-detect``)."""

    exponential_weighting_constant: Annotated[int, Strict(), Field(ge=0, le=30)] = 9
    green: CiscoThreshold | None = None
    yellow: CiscoThreshold | None = None
    red: CiscoThreshold | None = None


class RedCurve(Model):
    """RED parameters of one curve (Floyd & Jacobson), the class buffer
    being the queue's limit."""

    min_th: ThresholdField
    max_th: ThresholdField
    max_p: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.1
    w_q: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.002
    gentle: Flag = True
    byte_mode: Flag = False
    mean_pkt_size: PositiveSize = 1000

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _consistent(self) -> RedCurve:
        if self.min_th.in_bytes != self.max_th.in_bytes:
            raise ValueError("min_th and max_th must both be packet counts or both be sizes")
        if self.min_th.value >= self.max_th.value:
            raise ValueError(f"min_th ({self.min_th.value:g}) must be below max_th ({self.max_th.value:g})")
        return self


class Rio(Model):
    """RED with In (green) and Out (yellow, red) curves."""

    in_: RedCurve = Field(alias="in")
    out: RedCurve


class Gred(Model):
    """Linux GRED: one RED curve per drop precedence (colour), on one shared
    average, so the curves agree on its ``w_q``, ``mean_pkt_size`` and on
    counting packets or bytes."""

    green: RedCurve | None = None
    yellow: RedCurve | None = None
    red: RedCurve | None = None

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _one_average(self) -> Gred:
        curves = [(c, getattr(self, c)) for c in ("green", "yellow", "red") if getattr(self, c) is not None]
        for colour, curve in curves[1:]:
            first, ref = curves[0]
            if (curve.w_q, curve.mean_pkt_size, curve.min_th.in_bytes) != (ref.w_q, ref.mean_pkt_size, ref.min_th.in_bytes):
                raise ValueError(
                    f"{colour}: the colours share one average, so w_q, mean_pkt_size and the threshold kind "
                    f"(packets or bytes) must be those of {first}"
                )
        return self


class DropProfile(Model):
    """A class's early drops: Junos curves per loss priority (``low``,
    ``medium_high``, ``high``: fill %, drop % points, interpolated, on the
    queue's instantaneous fill; the first document's experiment 3 is
    ``high: [[0, 0], [100, 100]]``), or exactly one of ``wred``, ``rio``,
    ``gred``."""

    low: Curve | None = None
    medium_high: Curve | None = None
    high: Curve | None = None
    wred: Wred | None = None
    rio: Rio | None = None
    gred: Gred | None = None

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _one_form(self) -> DropProfile:
        forms = [f for f in ("wred", "rio", "gred") if getattr(self, f) is not None]
        if any(getattr(self, k) is not None for k in ("low", "medium_high", "high")):
            forms.insert(0, "low/medium_high/high")
        if len(forms) != 1:
            got = " and ".join(forms) if forms else "none"
            raise ValueError(f"give exactly one drop profile form: low/medium_high/high (Junos curves), wred, rio or gred; got {got}")
        for colour in ("wred", "gred"):
            per = getattr(self, colour)
            if per is not None and all(getattr(per, c) is None for c in ("green", "yellow", "red")):
                raise ValueError(f"{colour}: give parameters for at least one of green, yellow, red")
        return self


class FqCodel(Model):
    """FQ-CoDel as Linux runs it (RFC 8290; ``tc qdisc ... fq_codel``): a
    queue per hashed flow, new flows served first, deficit round robin by
    ``quantum``, CoDel per flow (RFC 8289) keeping each flow's queueing
    delay near ``target`` (dropping once it has stayed above for
    ``interval``); over ``limit``, the fattest flow loses packets.
    Defaults are Linux's: ``limit`` 10240p on a link (a class's own buffer
    inside a class), ``buckets`` 1024, ``quantum`` the link MTU + 14 B
    (1514B on a 1500 B link), ``target`` 5ms, ``interval`` 100ms,
    ``drop_batch`` 64."""

    limit: QueueLimit | None = None
    buckets: Annotated[int, Strict(), Field(ge=1, le=65536)] = 1024
    quantum: Annotated[PositiveSize, Field(le=2**32 - 1)] | None = None
    target: PositiveTime = 5_000_000
    interval: PositiveTime = 100_000_000
    drop_batch: Annotated[int, Strict(), Field(ge=1, le=2**32 - 1)] = 64

    # Python's own check: the engine's error names neither a policy class's field nor trace-replay's --queue.
    @model_validator(mode="after")
    def _consistent(self) -> FqCodel:
        if self.target >= self.interval:
            raise ValueError(
                f"target ({units.fmt_time_ns(self.target)}) must be below interval ({units.fmt_time_ns(self.interval)})"
            )
        return self


class Sfq(Model):
    """Hashed deficit round robin, SFQ-like (``tc qdisc ... sfq``): a
    queue per hashed flow, served round robin by ``quantum`` bytes; over
    ``limit`` the longest flow loses its last packet. Defaults: ``limit``
    127p on a link (Linux's; a class's own buffer inside a class),
    ``buckets`` 1024, ``quantum`` the link MTU + 14 B."""

    limit: QueueLimit | None = None
    buckets: Annotated[int, Strict(), Field(ge=1, le=65536)] = 1024
    quantum: Annotated[PositiveSize, Field(le=2**32 - 1)] | None = None


class ClassFifo(Model):
    """A FIFO on the class's buffer (the default child)."""


class Yaqs(Model):
    """YAQS local flow separation (Liberatore, "Local Flow Separation",
    Algorithms 1 and 2; ``crates/alphaqos-sim/src/qos/yaqs.rs``): a flow
    holding more than ``c_f`` of the fast queue (a Count-Sketch estimate of
    ``sketch_rows`` x ``sketch_buckets``) or more than ``c_s`` of the slow
    queue (exact) is queued in the slow queue, served with weight ``r``
    (0..1) against the fast queue's 1. ``limit`` is each queue's buffer.
    ``epsilon`` measures false positives (Definitions 3 and 4); ``counter:
    combined`` and ``slow_counts: approximate`` are the document's weaker
    variants, for comparison."""

    limit: QueueLimit = units.QueueLimit()
    c_f: Size = 16500
    c_s: Size = 0
    r: Probability = 0.5
    sketch_rows: Annotated[int, Strict(), Field(ge=1, le=31)] = 3
    sketch_buckets: Count = 32
    inflate: Flag = True
    counter: Literal["two", "combined"] = "two"
    slow_counts: Literal["exact", "approximate"] = "exact"
    epsilon: Probability | None = None


CHILD_KINDS = ("fifo", "red", "fq_codel", "sfq", "yaqs")


class Child(Model):
    """The discipline inside a class (exactly one of ``fifo``, ``red``,
    ``fq_codel``, ``sfq``), on the class's buffer. A ``drop_profile`` is a
    FIFO with that profile, so a class has one or the other."""

    fifo: ClassFifo | None = None
    red: RedCurve | None = None
    fq_codel: FqCodel | None = None
    sfq: Sfq | None = None
    yaqs: Yaqs | None = None

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _one_kind(self) -> Child:
        present = [k for k in CHILD_KINDS if getattr(self, k) is not None]
        if len(present) != 1:
            got = ", ".join(present) if present else "none"
            raise ValueError(f"expected exactly one of: {', '.join(CHILD_KINDS)} (got {got})")
        return self


PRIORITIES = ("strict-high", "high", "medium-high", "medium-low", "low")

#: The class parameters each scheduler uses (all others must be left unset).
SCHEDULER_FIELDS: dict[str, tuple[str, ...]] = {
    "junos": ("transmit_rate", "priority", "exact", "burst", "meter_window", "excess_rate", "excess_priority"),
    "strict-priority": ("priority",),
    "wrr": ("weight",),
    "drr": ("quantum",),
    "mdrr": ("weight", "low_latency"),
}
#: The engine keeps weights and quanta in 32 bits.
U32_MAX = 2**32 - 1
#: Cisco 12000 MDRR weights are 1..2048.
MDRR_MAX_WEIGHT = 2048
#: ... and those it needs.
SCHEDULER_REQUIRED: dict[str, tuple[str, ...]] = {
    "junos": ("transmit_rate",),
    "strict-priority": (),
    "wrr": ("weight",),
    "drr": ("quantum",),
    "mdrr": ("weight",),
}


class ForwardingClass(Model):
    """One forwarding class and its queue. ``buffer_size`` applies to every
    scheduler; the other parameters to the schedulers listed in the module
    doc."""

    #: A share of the policy's buffer, or (junos) ``{temporal: 100ms}``:
    #: the bytes the transmit rate sends in that time.
    buffer_size: BufferSize
    transmit_rate: TransmitRate | None = None
    priority: Literal["strict-high", "high", "medium-high", "medium-low", "low"] | None = None
    exact: Flag = False
    #: Depth of the meter that decides in/out of profile (default 1500B).
    burst: PositiveSize | None = None
    #: ... or that depth as the bytes the transmit rate allows in a window.
    meter_window: PositiveTime | None = None
    #: Junos ``excess-rate percent``: weight in the excess (``excess: proportional``).
    excess_rate: Percent | None = None
    #: Junos ``excess-priority``.
    excess_priority: Literal["high", "medium-high", "medium-low", "low", "none"] | None = None
    weight: Annotated[int, Strict(), Field(ge=1, le=U32_MAX)] | None = None
    quantum: Annotated[PositiveSize, Field(le=U32_MAX)] | None = None
    low_latency: Literal["strict-priority", "alternate-priority"] | None = None
    drop_profile: DropProfile | None = None
    #: The class's discipline (default a FIFO; see :class:`Child`).
    child: Child | None = None

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _profile_or_child(self) -> ForwardingClass:
        if self.drop_profile is not None and self.child is not None:
            raise ValueError("give drop_profile (a FIFO with that profile) or child, not both")
        if self.burst is not None and self.meter_window is not None:
            raise ValueError("give burst (the meter depth) or meter_window (the depth as a time at the transmit rate), not both")
        return self

    def scheduler_fields(self) -> list[str]:
        """The scheduler parameters this class sets (not left at their default)."""
        names = [name for name in ("transmit_rate", "priority", "burst", "meter_window", "excess_rate", "excess_priority",
                                   "weight", "quantum", "low_latency")
                 if getattr(self, name) is not None]  # fmt: skip
        return names + (["exact"] if self.exact else [])


class ClassRef(Model):
    class_: Name = Field(alias="class")


Action = Literal["transmit", "discard", "loss_priority_high"] | ClassRef


class Srtcm(Model):
    """RFC 2697 parameters: committed rate, committed and excess bursts."""

    cir: PositiveRate
    cbs: Size
    ebs: Size

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _consistent(self) -> Srtcm:
        if self.cbs <= 0 and self.ebs <= 0:
            raise ValueError("at least one of cbs and ebs must be greater than 0B (RFC 2697 Section 2)")
        return self


class Trtcm(Model):
    """RFC 2698 parameters: committed and peak rates and bursts."""

    cir: PositiveRate
    cbs: PositiveSize
    pir: PositiveRate
    pbs: PositiveSize

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _consistent(self) -> Trtcm:
        if self.pir < self.cir:
            raise ValueError(
                f"pir ({units.fmt_rate(self.pir, exact=True)}) must be at least cir "
                f"({units.fmt_rate(self.cir, exact=True)}) (RFC 2698 Section 2)"
            )
        return self


class Policer(Model):
    """A policer: a single-rate two-colour token bucket (``rate``,
    ``burst``) and what happens to out-of-profile packets; or an srTCM or
    trTCM meter with actions for yellow and red packets."""

    rate: PositiveRate | None = None
    burst: PositiveSize | None = None
    out_of_profile: Literal["discard", "loss_priority_high"] | ClassRef | None = None
    srtcm: Srtcm | None = None
    trtcm: Trtcm | None = None
    color_aware: Flag = False
    yellow: Action | None = None
    red: Action | None = None

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _one_meter(self) -> Policer:
        single = [k for k in ("rate", "burst", "out_of_profile") if getattr(self, k) is not None]
        forms = (["rate/burst/out_of_profile"] if single else []) + [k for k in ("srtcm", "trtcm") if getattr(self, k) is not None]
        if len(forms) != 1:
            got = " and ".join(forms) if forms else "none"
            raise ValueError(f"give exactly one meter: rate/burst/out_of_profile (single rate), srtcm or trtcm; got {got}")
        if single:
            missing = [k for k in ("rate", "burst", "out_of_profile") if k not in single]
            if missing:
                raise ValueError(f"the single-rate policer needs rate, burst and out_of_profile (missing: {', '.join(missing)})")
            extra = [k for k in ("yellow", "red") if getattr(self, k) is not None] + (["color_aware"] if self.color_aware else [])
            if extra:
                raise ValueError(f"{', '.join(extra)}: only for the three-colour meters (srtcm, trtcm); use out_of_profile")
        return self

    def class_refs(self) -> list[tuple[tuple[str, str], str]]:
        """The classes the policer's actions name, with each action's path."""
        actions = {"out_of_profile": self.out_of_profile, "yellow": self.yellow, "red": self.red}
        return [((key, "class"), a.class_) for key, a in actions.items() if isinstance(a, ClassRef)]


class Match(Model):
    """Junos ``from``: prefixes, protocol, port ranges (``5001`` or
    ``"5000-5010"``) and DSCP values (a name such as ``ef`` or ``af11``, a
    number, or a list of them); every condition given must hold."""

    source: Prefix | None = None
    destination: Prefix | None = None
    protocol: Literal["tcp", "udp", "icmp"] | None = None
    source_port: PortRange | None = None
    destination_port: PortRange | None = None
    dscp: Dscp | Annotated[list[Dscp], Field(min_length=1)] | None = None


class Then(Model):
    class_: Name | None = Field(default=None, alias="class")
    #: Junos ``then loss-priority``: the colour the class's drop profile sees.
    loss_priority: Literal["low", "high"] | None = None
    policer: Policer | None = None
    discard: Flag = False


class Term(Model):
    name: Name
    from_: Match = Field(default=Match(), alias="from")
    then: Then


class Policy(Model):
    scheduler: Literal["junos", "strict-priority", "wrr", "drr", "mdrr"] = "junos"
    #: junos: what queues above their transmit rates get of the excess:
    #: ``priority`` (default; by priority, the document's description) or
    #: ``proportional`` (MX Trio: excess high then low, in proportion to
    #: ``excess_rate``, by default the transmit rates).
    excess: Literal["priority", "proportional"] | None = None
    buffer: QueueLimit = units.QueueLimit(pkts=1000)
    classes: Annotated[dict[Name, ForwardingClass], Field(min_length=1)]
    filter: list[Term] = []

    # Python's own check: `alphaqos provision` and `shape --policy` read policies without the engine.
    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        shares = sum(c.buffer_size for c in self.classes.values() if isinstance(c.buffer_size, float))
        if shares > 100 + 1e-9:
            raise ValueError(f"buffer_size shares add up to {shares:g}%, more than 100%")
        rates = sum(c.transmit_rate for c in self.classes.values() if isinstance(c.transmit_rate, float))
        if rates > 100 + 1e-9:
            raise ValueError(f"transmit_rate percentages add up to {rates:g}%, more than 100%")
        for index, term in enumerate(self.filter):
            refs = [(("then", "class"), term.then.class_)]
            if term.then.policer is not None:
                refs += [(("then", "policer", *at), ref) for at, ref in term.then.policer.class_refs()]
            for at, ref in refs:
                if ref is not None and ref not in self.classes:
                    raise FieldError(
                        ("filter", index, *at),
                        f"filter term {term.name!r}: unknown class {ref!r} (classes: {', '.join(self.classes)})",
                    )
        return self

    def class_index(self, name: str) -> int:
        return list(self.classes).index(name)


def check_policy(policy: Policy):
    """What the model cannot check field by field: each class's parameters
    against the scheduler. Yields (path below the policy, message)."""
    used, required = SCHEDULER_FIELDS[policy.scheduler], SCHEDULER_REQUIRED[policy.scheduler]
    if policy.excess is not None and policy.scheduler != "junos":
        yield ("excess",), f"excess is a junos scheduler parameter (this policy's scheduler: {policy.scheduler})"
    for name, c in policy.classes.items():
        if isinstance(c.buffer_size, Temporal) and policy.scheduler != "junos":
            yield ("classes", name, "buffer_size"), (
                f"class {name!r}: a temporal buffer_size needs the junos scheduler's transmit_rate (use a percentage)"
            )
        if c.excess_rate is not None and policy.excess != "proportional" and "excess_rate" in used:
            yield ("classes", name, "excess_rate"), (
                f"class {name!r}: excess_rate is a weight of the proportional excess sharing (set the policy's excess: proportional)"
            )
        for field in c.scheduler_fields():
            if field not in used:
                yield ("classes", name, field), (
                    f"class {name!r}: {field} is not used by the {policy.scheduler} scheduler "
                    f"(its class parameters: {', '.join(used)})"
                )
        for field in required:
            # Cisco's strict-priority low-latency queue is served whenever
            # backlogged: its weight (quantum) is never used.
            if field == "weight" and c.low_latency == "strict-priority":
                continue
            if getattr(c, field) is None:
                yield ("classes", name), f"class {name!r}: the {policy.scheduler} scheduler needs {field}"
    if policy.scheduler == "mdrr":
        for name, c in policy.classes.items():
            if c.weight is not None and c.weight > MDRR_MAX_WEIGHT:
                yield ("classes", name, "weight"), f"class {name!r}: an MDRR weight is at most {MDRR_MAX_WEIGHT}, got {c.weight}"
    llqs = [name for name, c in policy.classes.items() if c.low_latency is not None]
    for name in llqs[1:]:
        yield ("classes", name, "low_latency"), f"only one low-latency queue per interface ({llqs[0]!r} is one already)"


def _action(action: str | ClassRef | None, policy: Policy) -> str | dict[str, int] | None:
    return {"fclass": policy.class_index(action.class_)} if isinstance(action, ClassRef) else action


def _policer(p: Policer, policy: Policy) -> dict[str, Any]:
    if p.srtcm is None and p.trtcm is None:
        return {"rate_bps": p.rate, "burst_bytes": p.burst, "out_of_profile": _action(p.out_of_profile, policy)}
    meter = (
        {"srtcm": {"cir_bps": p.srtcm.cir, "cbs_bytes": p.srtcm.cbs, "ebs_bytes": p.srtcm.ebs}}
        if p.srtcm is not None
        else {"trtcm": {"cir_bps": p.trtcm.cir, "cbs_bytes": p.trtcm.cbs, "pir_bps": p.trtcm.pir, "pbs_bytes": p.trtcm.pbs}}
    )
    return {**meter, "color_aware": p.color_aware, "yellow": _action(p.yellow or "transmit", policy),
            "red": _action(p.red or "discard", policy)}  # fmt: skip


def resolve_filter(policy: Policy) -> list[dict[str, Any]]:
    """The engine's firewall filter terms (docs/engine-config.md)."""
    terms = []
    for term in policy.filter:
        then, match = term.then, term.from_
        terms.append({
            "name": term.name,
            "src": match.source,
            "dst": match.destination,
            "proto": PROTOCOLS[match.protocol] if match.protocol else None,
            "src_port": list(match.source_port) if match.source_port else None,
            "dst_port": list(match.destination_port) if match.destination_port else None,
            "dscp": None if match.dscp is None else [match.dscp] if isinstance(match.dscp, int) else match.dscp,
            "loss_priority": then.loss_priority,
            "fclass": policy.class_index(then.class_) if then.class_ else None,
            "policer": _policer(then.policer, policy) if then.policer is not None else None,
            "discard": then.discard,
        })  # fmt: skip
    return terms


def _red_curve(c: RedCurve) -> dict[str, Any]:
    return {
        "min_th": c.min_th.value, "max_th": c.max_th.value, "thresholds_in_bytes": c.min_th.in_bytes,
        "max_p": c.max_p, "w_q": c.w_q, "gentle": c.gentle, "byte_mode": c.byte_mode, "mean_pkt_bytes": c.mean_pkt_size,
    }  # fmt: skip


def _per_color(per: Wred | Gred, resolve_one) -> dict[str, Any]:
    return {c: resolve_one(getattr(per, c)) if getattr(per, c) is not None else None for c in ("green", "yellow", "red")}


def _drop_profile(d: DropProfile | None) -> dict[str, Any] | None:
    """The engine's ``drop_profile`` (docs/engine-config.md)."""
    if d is None:
        return None
    if d.wred is not None:
        def cisco(t: CiscoThreshold) -> dict[str, float]:
            return {"min_th": t.min_th, "max_th": t.max_th, "max_p": t.probability()}

        return {"cisco_wred": {"exp_weight": d.wred.exponential_weighting_constant, "per_color": _per_color(d.wred, cisco)}}
    if d.rio is not None:
        return {"rio": {"in_profile": _red_curve(d.rio.in_), "out_profile": _red_curve(d.rio.out)}}
    if d.gred is not None:
        return {"gred": _per_color(d.gred, _red_curve)}
    return {"curves": {"green": _points(d.low), "yellow": _points(d.medium_high), "red": _points(d.high)}}


def fq_codel_config(q: FqCodel) -> dict[str, Any]:
    """The engine's ``fq_codel`` queue (docs/engine-config.md)."""
    return {
        **_limit(q.limit), "buckets": q.buckets, "quantum_bytes": q.quantum,
        "target_ns": q.target, "interval_ns": q.interval, "drop_batch": q.drop_batch,
    }  # fmt: skip


def sfq_config(q: Sfq) -> dict[str, Any]:
    """The engine's ``sfq`` queue."""
    return {**_limit(q.limit), "buckets": q.buckets, "quantum_bytes": q.quantum}


def _limit(limit: units.QueueLimit | None) -> dict[str, int | None]:
    """A per-flow queue's own limit, if given (else the engine's default)."""
    return {"limit_pkts": limit.pkts if limit else None, "limit_bytes": limit.bytes if limit else None}


def child_config(c: Child | None) -> dict[str, Any]:
    """The engine's ``child`` key of a class (none for the default FIFO)."""
    if c is None:
        return {}
    if c.red is not None:
        return {"child": {"red": _red_curve(c.red)}}
    if c.fq_codel is not None:
        return {"child": {"fq_codel": fq_codel_config(c.fq_codel)}}
    if c.sfq is not None:
        return {"child": {"sfq": sfq_config(c.sfq)}}
    if c.yaqs is not None:
        return {"child": {"yaqs": resolve_yaqs(c.yaqs)}}
    return {"child": {"fifo": {}}}


def resolve_yaqs(y: Yaqs) -> dict[str, Any]:
    """A YAQS's engine configuration."""
    return {
        "limit_pkts": y.limit.pkts, "limit_bytes": y.limit.bytes, "c_f_bytes": y.c_f, "c_s_bytes": y.c_s, "r": y.r,
        "sketch_rows": y.sketch_rows, "sketch_buckets": y.sketch_buckets, "inflate": y.inflate,
        "counter": y.counter, "slow_counts": y.slow_counts, "epsilon": y.epsilon,
    }  # fmt: skip


def _points(curve: Curve | None) -> list[list[float]] | None:
    return [list(p) for p in curve] if curve else None


#: Engine queue kind and level of each strict-priority name.
STRICT_LEVELS = {name: len(PRIORITIES) - 1 - i for i, name in enumerate(PRIORITIES)}
LOW_LATENCY = {"strict-priority": "strict", "alternate-priority": "alternate"}


def _class_parameters(policy: Policy, c: ForwardingClass) -> dict[str, Any]:
    if policy.scheduler == "junos":
        rate = c.transmit_rate
        return {
            "transmit_rate_percent": rate if isinstance(rate, float) else None,
            "transmit_rate_bps": rate if isinstance(rate, int) else None,
            "transmit_rate_remainder": rate == "remainder",
            "priority": c.priority or "low",
            "exact": c.exact,
            "burst_bytes": c.burst,
            "meter_window_ns": c.meter_window,
            "excess_rate_percent": c.excess_rate,
            "excess_priority": c.excess_priority,
        }
    if policy.scheduler == "strict-priority":
        return {"priority": STRICT_LEVELS[c.priority or "low"]}
    if policy.scheduler == "drr":
        return {"quantum_bytes": c.quantum}
    if policy.scheduler == "mdrr":
        # The engine wants a weight for every MDRR class; a strict LLQ's is unused.
        return {"weight": c.weight or 1, "low_latency": LOW_LATENCY.get(c.low_latency)}
    return {"weight": c.weight}


def resolve_egress(policy: Policy) -> dict[str, Any]:
    """The engine's egress queue for this policy: the Junos scheduler, or
    ``strict_priority``, ``wrr``, ``drr``, ``mdrr``."""
    classes = [
        {
            "name": name, **_class_parameters(policy, c), **_buffer(c.buffer_size),
            "drop_profile": _drop_profile(c.drop_profile), **child_config(c.child),
        }
        for name, c in policy.classes.items()
    ]
    kind = policy.scheduler.replace("-", "_")
    excess = {"excess": policy.excess} if policy.excess is not None else {}
    return {kind: {"buffer_pkts": policy.buffer.pkts, "buffer_bytes": policy.buffer.bytes, **excess, "classes": classes}}


def _buffer(size: float | Temporal) -> dict[str, Any]:
    """A class's ``buffer_percent``, or (junos) ``buffer_temporal_ns``."""
    if isinstance(size, Temporal):
        return {"buffer_temporal_ns": size.ns}
    return {"buffer_percent": size}
