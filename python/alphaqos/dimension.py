"""``alphaqos dimension relative``: dimension a Relative Service (Bouras &
Sevasti, "Performance analysis for a DiffServ-enabled network: The case of
Relative Service", the fifth source document) for a set of customer
profiles.

Given each customer's token bucket (r_i, b_i), the link rate C, the
high-priority load h served by the strict low-latency queue, and Cisco
MDRR's quantum rule (``quantum = MTU + (weight - 1) x 512`` bytes, weights
1..2048; Cisco, "Understanding and Configuring MDRR and WRED on the Cisco
12000 Series Internet Router"), it computes:

- **weight_REL**: the smallest Relative-queue weight whose MDRR share of
  what the strict queue leaves meets the document's equation 1 with the
  headroom asked for: ``r = (C - h) q_REL / (q_REL + q_BE) >= (1 +
  headroom) sum r_i``, where ``q`` are the quanta of the Relative and
  best-effort queues (``--be-weight``) while both are backlogged;
- **WRED thresholds per colour** from equation 2 on the Relative queue's
  service rate r, a round-trip time and the MTU: ``max_th = r RTT / (MTU
  8)`` packets, ``min_th = 0.15 max_th`` (Section 5.1); the same
  thresholds for green and yellow, ``max_p`` 0.2 for green and 0.4 for
  yellow: the document's Case 1, its case B2 (Section 5.2.2), which it
  recommends; any colour may be set by hand with ``--wred``.

Classes (the document's design, Section 5 and Fig. 2b): high-priority
traffic, marked EF (DSCP 46) by the customer, in MDRR's strict low-latency
queue; each customer's traffic, by its prefix, in the Relative queue
through a trTCM on its profile (green within, yellow beyond: the document's
case B2); everything else, unmarked or marked by a non-customer, best
effort.

It prints the result and the equivalent Cisco 12000 lines (edge marking
with CAR by IP precedence, then a legacy ``cos-queue-group``: precedence 5
low-latency, 2 and 1 Relative, 0 best effort), and writes
``DIR/policy.yaml``: a policy document (``scheduler: mdrr``, classes
``be``, ``relative``, ``hp`` with the strict low-latency queue, a filter
with the EF term and one trTCM policer per customer whose committed bucket
is (r_i, b_i)), which
``alphaqos provision --policy DIR/policy.yaml --prefix-list
DIR/prefixes.txt --alpha-class relative --target cisco`` renders as Cisco
MQC (``bandwidth`` by MDRR quantum share, ``random-detect discard-class``);
``DIR/policy-junos.yaml``, the same with the WRED thresholds as Junos
drop-profile curves on the Relative queue's fill (Junos has no average in
packets), for ``--target junos``; and ``DIR/dimension.json`` with every
number. The policies carry what the routers take: WRED thresholds in whole
packets, Junos fill levels in whole percents (rounding rules in
:func:`.provision.model.cisco_wred` and :func:`.provision.model.junos_curve`;
``dimension.json`` keeps equation 2's own values), so a run of the policy
is what the router does.

``--check`` then runs the scenario the result implies (the document's
Fig. 2b: each customer behind its access link, TCP sources filling it,
best-effort traffic that takes what is left, the high-priority load as
constant-rate UDP) and reports whether each customer gets its contracted
rate (90 % of r_i or more, the document's own criterion in Section 5.2.1)
and the Relative queue's mean queueing delay against the bound its WRED
implies (``max_th`` packets at r).

Bad input (profiles that cannot fit: sum r_i at or above C - h; a weight
outside 1..2048; a colour with ``min_th`` not below ``max_th``) is one
line naming the option, exit status 2, and nothing written.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from . import units

__all__ = ["Colour", "Customer", "Dimensioning", "dimension", "equation2", "quantum"]

MDRR_MIN_WEIGHT, MDRR_MAX_WEIGHT = 1, 2048
#: Cisco MDRR: each weight step adds 512 bytes to the quantum.
QUANTUM_STEP = 512
MIN_TH_SHARE = 0.15  # Section 5.1: min_th = 0.15 max_th
EQ3_SHARE = 0.25  # equation 3: the mean queue is within 0.2-0.25 of the bandwidth-delay product
COLOURS = ("green", "yellow", "red")


class DimensionError(ValueError):
    """Input that cannot be dimensioned: the message names the option."""


def quantum(weight: int, mtu: int) -> int:
    """Cisco MDRR's quantum in bytes: ``MTU + (weight - 1) x 512``."""
    if not MDRR_MIN_WEIGHT <= weight <= MDRR_MAX_WEIGHT:
        raise DimensionError(f"weight {weight} is outside Cisco's MDRR range {MDRR_MIN_WEIGHT}..{MDRR_MAX_WEIGHT}")
    return mtu + (weight - 1) * QUANTUM_STEP


def equation2(rate_bps: float, rtt_s: float, mtu: int) -> float:
    """max_th = r RTT / (MTU 8) packets (the document's equation 2)."""
    return rate_bps * rtt_s / (mtu * 8)


@dataclass(frozen=True)
class Customer:
    name: str
    rate_bps: int
    burst_bytes: int
    prefix: str | None = None


@dataclass(frozen=True)
class Colour:
    min_th: float
    max_th: float
    max_p: float


@dataclass
class Dimensioning:
    customers: list[Customer]
    link_bps: int
    hp_bps: int
    mtu: int
    headroom: float
    rtt_s: float
    be_weight: int
    weight_rel: int
    quantum_rel: int
    quantum_be: int
    service_rate_bps: float  # r, the Relative queue's MDRR share
    wred: dict[str, Colour] = field(default_factory=dict)

    @property
    def contracted_bps(self) -> int:
        return sum(c.rate_bps for c in self.customers)

    @property
    def delay_bound_s(self) -> float:
        """The bound on the mean queueing delay of green packets: equation
        3's mean queue, at most 0.25 of the green max_th, in MTU-sized
        packets at the service rate r."""
        return EQ3_SHARE * self.wred["green"].max_th * self.mtu * 8 / self.service_rate_bps

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out |= {"contracted_bps": self.contracted_bps, "delay_bound_s": self.delay_bound_s}
        return out


def dimension(
    customers: list[Customer], *, link_bps: int, hp_bps: int, mtu: int = 1500, headroom: float = 0.1,
    rtt_s: float, be_weight: int = 20, wred: dict[str, Colour] | None = None,
) -> Dimensioning:
    """weight_REL for equation 1 with ``headroom``, WRED from equation 2."""
    if not customers:
        raise DimensionError("--profile: give at least one customer profile")
    if not MDRR_MIN_WEIGHT <= be_weight <= MDRR_MAX_WEIGHT:
        raise DimensionError(f"--be-weight: {be_weight} is outside Cisco's MDRR range {MDRR_MIN_WEIGHT}..{MDRR_MAX_WEIGHT}")
    if hp_bps >= link_bps:
        raise DimensionError(f"--hp-load: {units.fmt_rate(hp_bps)} leaves nothing of the {units.fmt_rate(link_bps)} link")
    left = link_bps - hp_bps
    need = (1 + headroom) * sum(c.rate_bps for c in customers)
    total = sum(c.rate_bps for c in customers)
    if total >= left:
        raise DimensionError(
            f"--profile: the contracted rates add up to {units.fmt_rate(total)}, at or above the "
            f"{units.fmt_rate(left)} the link leaves after the high-priority load"
        )
    if need >= left:
        raise DimensionError(
            f"--headroom: {headroom:.0%} over {units.fmt_rate(total)} needs {units.fmt_rate(need)}, at or above the "
            f"{units.fmt_rate(left)} the link leaves after the high-priority load"
        )
    q_be = quantum(be_weight, mtu)
    # r = left q / (q + q_be) >= need  <=>  q >= q_be need / (left - need)
    q_needed = q_be * need / (left - need)
    weight = max(MDRR_MIN_WEIGHT, math.ceil((q_needed - mtu) / QUANTUM_STEP) + 1)
    if weight > MDRR_MAX_WEIGHT:
        raise DimensionError(
            f"weight_REL: the contracts need weight {weight}, outside Cisco's MDRR range "
            f"{MDRR_MIN_WEIGHT}..{MDRR_MAX_WEIGHT}; lower --be-weight ({be_weight})"
        )
    q_rel = quantum(weight, mtu)
    r = left * q_rel / (q_rel + q_be)
    max_th = equation2(r, rtt_s, mtu)
    colours = {
        "green": Colour(round(MIN_TH_SHARE * max_th, 1), round(max_th, 1), 0.2),
        "yellow": Colour(round(MIN_TH_SHARE * max_th, 1), round(max_th, 1), 0.4),
    }
    for colour, given in (wred or {}).items():
        colours[colour] = given
    for colour, c in colours.items():
        if c.min_th >= c.max_th:
            raise DimensionError(f"--wred {colour}: min_th ({c.min_th:g}) must be below max_th ({c.max_th:g})")
        if c.max_th < 1:
            raise DimensionError(f"--wred {colour}: max_th ({c.max_th:g}) is under one packet; is --rtt right?")
    return Dimensioning(
        customers=customers, link_bps=link_bps, hp_bps=hp_bps, mtu=mtu, headroom=headroom, rtt_s=rtt_s,
        be_weight=be_weight, weight_rel=weight, quantum_rel=q_rel, quantum_be=q_be, service_rate_bps=r, wred=colours,
    )  # fmt: skip


#: The classes of the document's design (Section 5, Fig. 2b), as the policy
#: names them: best effort (the default class, queue 0), the Relative queue,
#: and the high-priority queue with MDRR's strict priority.
BE, RELATIVE, HP = "be", "relative", "hp"
#: High-priority traffic arrives marked EF (RFC 3246, DSCP 46: IP precedence
#: 5, the 12000's ``precedence 5 queue low-latency``).
HP_DSCP = 46
#: The 12000's legacy form marks at the edge with IP precedence (CAR), as
#: its cos-queue-group reads it: Relative traffic in profile 2, beyond it 1
#: (the lower precedence, dropped first); everything else is reset to 0.
PRECEDENCE = {"hp": 5, "green": 2, "yellow": 1, "be": 0}


def customer_term(d: Dimensioning, c: Customer, source: str | None = None) -> dict[str, Any]:
    """Customer ``c``'s term: its traffic (from ``source``, default its
    prefix) to the Relative queue through a trTCM whose committed bucket is
    the contract (r_i, b_i): green within it, yellow beyond, both sent on
    (the document's case B2: yellow in the same queue, dropped earlier by
    its WRED curve)."""
    return {"name": f"{c.name}-relative", "from": {"source": source or c.prefix}, "then": {
        "class": RELATIVE,
        "policer": {"trtcm": {"cir": units.fmt_rate(c.rate_bps, exact=True), "cbs": f"{c.burst_bytes}B",
                              "pir": units.fmt_rate(d.link_bps, exact=True), "pbs": f"{max(c.burst_bytes, d.mtu)}B"},
                    "yellow": "transmit", "red": "transmit"},
    }}  # fmt: skip


def hp_term() -> dict[str, Any]:
    """High-priority traffic, marked EF by the customer, to the strict queue."""
    return {"name": "hp", "from": {"dscp": HP_DSCP}, "then": {"class": HP}}


def policy(d: Dimensioning, *, buffer_pkts: int = 1000) -> dict[str, Any]:
    """The policy document: MDRR with best effort (the default class), the
    Relative queue with WRED per colour, the strict low-latency queue; a
    filter that classifies what the document's design needs: EF-marked
    traffic to the strict queue, each customer's traffic (by its prefix)
    through a trTCM (committed bucket = the contract) to the Relative
    queue, and everything else, unmarked or not a customer's, to best
    effort. A customer without a prefix cannot be classified and has no
    term (:func:`summary` says so). The WRED thresholds are in whole
    packets, as the router takes them (:func:`.provision.model.cisco_wred`),
    so that a run of this policy is what the router does."""
    from .provision.model import cisco_wred

    wred: dict[str, Any] = {"exponential_weighting_constant": 9}
    for colour, c in d.wred.items():
        low, high, _ = cisco_wred(c.min_th, c.max_th, c.max_p)
        wred[colour] = {"min_th": low, "max_th": high, "max_p": c.max_p}
    terms = [hp_term()] + [customer_term(d, c) for c in d.customers if c.prefix]
    return {
        "scheduler": "mdrr",
        "buffer": f"{buffer_pkts}p",
        "classes": {
            BE: {"weight": d.be_weight, "buffer_size": "50%"},
            RELATIVE: {"weight": d.weight_rel, "buffer_size": "35%", "drop_profile": {"wred": wred}},
            HP: {"weight": 1, "buffer_size": "15%", "low_latency": "strict-priority"},
        },
        "filter": terms,
    }


JUNOS_COLOURS = {"green": "low", "yellow": "medium_high", "red": "high"}


def junos_policy(d: Dimensioning, *, buffer_pkts: int = 1000) -> dict[str, Any]:
    """The same policy for Junos, whose drop profiles are interpolated
    curves on the queue's fill (% of its buffer) rather than thresholds on
    an average in packets: per colour (loss priority), no drops below
    ``min_th``, ``max_p`` at ``max_th`` (as fills of the Relative queue's
    buffer), then up to 100 % at a full buffer; in whole percents, as
    Junos takes them (:func:`.provision.model.junos_curve`)."""
    from .provision.model import junos_curve

    out = policy(d, buffer_pkts=buffer_pkts)
    relative = out["classes"][RELATIVE]
    held = buffer_pkts * float(relative["buffer_size"].rstrip("%")) / 100
    curves = {}
    for colour, c in d.wred.items():
        lo, hi = min(100 * c.min_th / held, 98.0), min(100 * c.max_th / held, 99.0)
        points = [(0, 0), (lo, 0), (max(hi, lo + 0.5), 100 * c.max_p), (100, 100)]
        curves[JUNOS_COLOURS[colour]] = [list(point) for point in junos_curve(points)]
    relative["drop_profile"] = curves
    return out


def gsr_lines(d: Dimensioning) -> list[str]:
    """The Cisco 12000 (GSR) legacy configuration: edge marking with CAR
    (``rate-limit input``) on the customer-facing interfaces, then a
    cos-queue-group reading IP precedence: 5 (EF) to the low-latency queue,
    2 and 1 (a customer's Relative traffic within and beyond its profile)
    to the Relative queue with a WRED label each, 0 (everything else) to
    best effort. Thresholds in whole packets and the mark-probability
    denominator whole (:func:`.provision.model.cisco_wred`); CAR rates in
    steps of 8000 bit/s, as CAR takes them (rounded up)."""
    from .provision.model import cisco_wred

    lines = ["! edge marking (CAR), on each customer-facing interface:",
             "access-list 150 permit ip any any precedence critical"]  # fmt: skip
    # CAR's statements are tried in order and the first that matches acts: EF keeps its
    # precedence, a customer's traffic is marked by its profile, the rest is reset to 0.
    car = ["interface CUSTOMER-FACING",
           f" rate-limit input access-group 150 {_car_rate(d.link_bps)} 8000 8000 conform-action transmit exceed-action transmit"]  # fmt: skip
    for i, c in enumerate((c for c in d.customers if c.prefix), start=151):
        net = ipaddress.IPv4Network(c.prefix)
        lines.append(f"access-list {i} permit ip {net.network_address} {net.hostmask} any")
        car.append(f" rate-limit input access-group {i} {_car_rate(c.rate_bps)} {c.burst_bytes} {c.burst_bytes} "
                   f"conform-action set-prec-transmit {PRECEDENCE['green']} exceed-action set-prec-transmit {PRECEDENCE['yellow']}")  # fmt: skip
    car.append(f" rate-limit input {_car_rate(d.link_bps)} 8000 8000 conform-action set-prec-transmit {PRECEDENCE['be']} "
               f"exceed-action set-prec-transmit {PRECEDENCE['be']}")  # fmt: skip
    lines += car
    lines += ["! output, on the backbone interface: tx-cos relative-service",
              "cos-queue-group relative-service",
              f"  precedence {PRECEDENCE['be']} queue 0",
              f"  precedence {PRECEDENCE['yellow']} queue 1", f"  precedence {PRECEDENCE['green']} queue 1",
              f"  precedence {PRECEDENCE['hp']} queue low-latency",
              f"  queue 0 {d.be_weight}", f"  queue 1 {d.weight_rel}", "  queue low-latency strict-priority"]  # fmt: skip
    for label, colour in enumerate(c for c in ("green", "yellow") if c in d.wred):
        w = d.wred[colour]
        low, high, denominator = cisco_wred(w.min_th, w.max_th, w.max_p)
        lines.append(f"  random-detect-label {label} {low} {high} {denominator}")
        lines.append(f"  precedence {PRECEDENCE[colour]} random-detect-label {label}")
    if "red" in d.wred:
        lines.append("  ! red: CAR marks two colours, so the 12000's form has no red label (MQC's discard-class 2 has)")
    return lines


def _car_rate(bps: int) -> int:
    """CAR's rate: a multiple of 8000 bit/s, at least 8000 (rounded up)."""
    return max(8000, math.ceil(bps / 8000) * 8000)


def summary(d: Dimensioning) -> list[str]:
    rate = units.fmt_rate
    lines = [
        f"customers: {', '.join(f'{c.name} ({rate(c.rate_bps)}, {c.burst_bytes} B)' for c in d.customers)}; "
        f"sum r_i = {rate(d.contracted_bps)}",
        f"link {rate(d.link_bps)}, high priority {rate(d.hp_bps)}: {rate(d.link_bps - d.hp_bps)} left for MDRR",
        f"weight_REL {d.weight_rel} (quantum {d.quantum_rel} B) against best effort {d.be_weight} (quantum {d.quantum_be} B): "
        f"r = {rate(d.service_rate_bps)} >= (1 + {d.headroom:.0%}) sum r_i = {rate((1 + d.headroom) * d.contracted_bps)} (equation 1)",
        f"WRED from equation 2 at RTT {d.rtt_s * 1e3:g} ms, MTU {d.mtu} B: "
        + "; ".join(f"{colour} min_th {c.min_th:g}, max_th {c.max_th:g}, max_p {c.max_p:g}" for colour, c in d.wred.items()),
        f"Relative queue mean delay bound (equation 3: 0.25 x green max_th at r): {d.delay_bound_s * 1e3:.0f} ms",
        f"classes: EF (DSCP {HP_DSCP}) -> {HP} (strict priority); each customer's prefix -> {RELATIVE} "
        f"(trTCM on its profile: green within, yellow beyond); everything else -> {BE}",
        *(f"warning: customer {c.name} has no prefix (NAME=RATE/BURST@PREFIX): the policy has no term for it"
          for c in d.customers if not c.prefix),
        "Cisco 12000 MDRR:",
        *(f"  {line}" for line in gsr_lines(d)),
    ]  # fmt: skip
    return lines


# --- --check: the scenario the dimensioning implies --------------------------------------


CHECK_WARMUP_S = 20.0
REL_MSS = 448  # 500-byte IP packets, as the document's Relative sources
SOURCE_BPS = 100_000


def check_scenario(d: Dimensioning, duration_s: float) -> dict[str, Any]:
    """Fig. 2b for these customers: each behind an access link of twice its
    rate, TCP sources of 100 kb/s (500 B packets) offering 1.5 r_i, best
    effort from two long TCP transfers, the high-priority load as UDP, the
    policy of :func:`policy` on the backbone; RTT ``d.rtt_s`` of propagation."""
    one_way = d.rtt_s / 2
    leg = max(one_way / 4, 1e-4)
    pol = policy(d)
    nodes: dict[str, Any] = {"PE": {"router": True, "policy": "relative"}, "P1": {"router": True},
                             "BE": {"address": "10.250.0.1"}, "BD": {"address": "10.250.1.1"},
                             "HP": {"address": "10.250.0.2"}, "HD": {"address": "10.250.1.2"}}  # fmt: skip
    link = units.fmt_rate(d.link_bps, exact=True)
    links = [{"between": ["PE", "P1"], "rate": link, "delay": f"{(one_way - 2 * leg) * 1e3:.3f}ms", "mtu": f"{d.mtu}B",
              "queues": {"PE": {"policy": "relative"}}},
             {"between": ["BE", "PE"], "rate": "10Gbps", "delay": f"{leg * 1e3:.3f}ms"},
             {"between": ["P1", "BD"], "rate": "10Gbps", "delay": f"{leg * 1e3:.3f}ms"},
             {"between": ["HP", "PE"], "rate": "10Gbps", "delay": f"{leg * 1e3:.3f}ms"},
             {"between": ["P1", "HD"], "rate": "10Gbps", "delay": f"{leg * 1e3:.3f}ms"}]  # fmt: skip
    pol["filter"] = [hp_term()]  # the high-priority load is marked EF, as the policy expects
    workloads: list[dict[str, Any]] = [{"name": "best-effort", "transfer": {"from": "BE", "to": "BD", "size": "100GB"}, "streams": 2}]
    flows: list[dict[str, Any]] = []
    if d.hp_bps:
        flows.append({"name": "hp", "udp": {"from": "HP", "to": "HD", "rate": units.fmt_rate(d.hp_bps, exact=True), "size": "200B"},
                      "dscp": HP_DSCP})  # fmt: skip
    for i, c in enumerate(d.customers, start=1):
        host, sink = f"C{i}", f"S{i}"
        nodes[host] = {"address": f"10.251.{i}.1"}
        nodes[sink] = {"address": f"10.252.{i}.1"}
        access = max(2 * c.rate_bps, 4 * SOURCE_BPS)
        links += [{"between": [host, "PE"], "rate": units.fmt_rate(access, exact=True), "delay": f"{leg * 1e3:.3f}ms"},
                  {"between": ["P1", sink], "rate": "10Gbps", "delay": f"{leg * 1e3:.3f}ms"}]  # fmt: skip
        pol["filter"].append(customer_term(d, c, source=f"10.251.{i}.0/24"))
        n = max(1, math.ceil(1.5 * c.rate_bps / SOURCE_BPS))
        payload = SOURCE_BPS * REL_MSS / (REL_MSS + 52)
        workloads.append({"name": f"rel-{c.name}", "transfer": {"from": host, "to": sink, "size": f"{int(n * payload * duration_s / 8 * 1.1) + 1}B"},
                          "streams": n, "app_rate": f"{payload:g}bps", "write_size": f"{REL_MSS}B",
                          "tcp": {"cc": "newreno", "mss": f"{REL_MSS}B"}})  # fmt: skip
    return {"name": "dimension-relative-check", "duration": f"{duration_s:g}s", "metric_interval": "50ms", "nodes": nodes,
            "policies": {"relative": pol}, "links": links, "flows": flows, "workloads": workloads}  # fmt: skip


def check(d: Dimensioning, duration_s: float) -> dict[str, Any]:
    """Run :func:`check_scenario`; each customer's delivered rate (IP bytes)
    against 90 % of r_i, and the Relative queue's mean sojourn against the
    bound."""
    import polars as pl

    from . import columns as col
    from .engine import simulate
    from .scenario import load_scenario

    if duration_s <= CHECK_WARMUP_S:
        raise DimensionError(f"--duration: must be longer than the {CHECK_WARMUP_S:g} s warm-up")
    results = simulate(load_scenario(check_scenario(d, duration_s)), command="alphaqos dimension relative --check")
    w0, w1 = CHECK_WARMUP_S, duration_s
    interval = results.scenario.metric_interval / 1e9
    lines, ok, rates = [f"check: {duration_s:g} s run, measured after {w0:g} s"], True, {}
    for c in d.customers:
        rows = results.workload.filter((pl.col(col.WORKLOAD) == f"rel-{c.name}") & (pl.col(col.TIME) > w0))
        got = float(rows[col.DELIVERED_BPS].sum()) * interval / (w1 - w0) * (REL_MSS + 52) / REL_MSS
        met = got >= 0.9 * c.rate_bps
        ok &= met
        rates[c.name] = got
        lines.append(f"  {c.name}: {units.fmt_rate(got)} of {units.fmt_rate(c.rate_bps)} contracted "
                     f"({got / c.rate_bps:.0%}): {'met' if met else 'NOT met'}")  # fmt: skip
    queue = results.queue.filter((pl.col(col.QUEUE) == "PE->P1/relative") & (pl.col(col.TIME) > w0))
    mean_pkts = float(queue[col.LEN_PKTS].mean())
    summary_row = results.queue_summary.filter(pl.col(col.QUEUE) == "PE->P1/relative").row(0, named=True)
    delay = summary_row[col.SOJOURN_MEAN] or 0.0
    within = delay <= d.delay_bound_s
    ok &= within
    lines.append(f"  Relative queue: mean {mean_pkts:.1f} packets, mean delay {delay * 1e3:.1f} ms against the bound "
                 f"{d.delay_bound_s * 1e3:.0f} ms: {'within' if within else 'NOT within'}")  # fmt: skip
    return {"ok": ok, "rates_bps": rates, "queue_mean_pkts": mean_pkts, "delay_mean_s": delay, "lines": lines}
