"""The experiments of Bouras and Sevasti, "Performance analysis for a
DiffServ-enabled network: The case of Relative Service" (the fifth source
document), Section 5.

**Section 5.1** (its Fig. 2a): one 10 Mb/s backbone link N0 -> N1 whose
single queue runs Cisco WRED (``random-detect``, exponential weighting
constant 9), congested to 120 % of its capacity by HTTP (a server behind N0,
clients behind N1, 1 Mb/s of responses offered) and TCP background traffic
(8 Mb/s of web-like transfers offered, and three greedy transfers). (i)
The iterative method of its Section 5.1: a first run with a drop-tail
queue, then runs with ``max_th`` from equation 2 on the previous run's mean
round-trip time, ``min_th = 0.15 max_th`` and ``max_p =
0.2``; and a fixed grid of ``max_th`` values (its Figs. 3a, 3b and the static
curve of Fig. 4): the queue-size distribution, the mean queue as a share of
``max_th``, the check of equation 3 (mean queue within 0.2-0.25 x RTT x
bandwidth / (MTU x 8)), the HTTP throughput. (ii) Static against dynamic
WRED (its Fig. 4): the same grid of ``max_th`` values as the initial values
of the engine's ``wred_rtt_tuning`` agent, which every 50 ms sets ``max_th``
by equation 2 from the mean RTT of the TCP traffic's samples over the
interval (``min_th = 0.15 max_th``, ``max_p = 0.2``): the spread of the mean
queue and of the HTTP throughput across the initial values, static against
dynamic.

**Section 5.2** (its Fig. 2b): customers C1-C3 behind PoP0, policed at
PoP0's ingress to (240 kb/s, 5000 B), (400 kb/s, 5000 B), (1 Mb/s, 5000 B)
by an RFC 2698 trTCM whose committed bucket is the document's token bucket
(green within it, yellow beyond; the peak bucket, 100 Mb/s, never runs
out); the backbone PoP0 -> PoP1 (10 Mb/s) is a Cisco MDRR with a strict
low-latency queue for the high-priority UDP traffic of its Table 1, a
Relative queue and a best-effort queue. Tables 2 (weight_REL 30/20/10,
yellow dropped), 3 (yellow to best effort, case A), 4 (WRED B1/B2/B3 and no
WRED, yellow in the Relative queue), 5 (case C) and Fig. 6 (the Relative
queue's size distribution).

What the document leaves open, and the choices made (also in the report):

- access links: C1 512 kb/s, C2 1 Mb/s, C3 2 Mb/s, so that each customer
  can send what the document measured in its best case (C1 352 kb/s, C2
  512, C3 1092); each carries ``floor((access - high-priority mean) /
  100 kb/s)`` Relative TCP sources (4, 6 and 14), "occupying all the
  available capacity in the access links after the high-priority traffic";
- the best-effort MDRR weight (79): the document gives weight_REL only.
  At weight_REL 10 the Relative queue is saturated and gets exactly its
  MDRR share (quanta ``MTU + (weight - 1) 512``), so the weight is fitted
  to Table 2's weight-10 row: the Relative total 1157 kb/s of what 1.1 Mb/s
  of high-priority traffic leaves; weight 20 then serves more than sum r_i
  = 1.64 Mb/s, as the document says. The weight-10 throughputs rest on
  this fit: shown beside the document's, not counted;
- round trips: 100 ms of propagation for the customers (5 ms access, 40 ms
  backbone, 5 ms to the sinks, each way), 60 ms in Section 5.1;
- buffers: MDRR 1000 packets (best effort 50 %, Relative 35 %, high
  priority 15 %); Section 5.1's queue 500 packets;
- run length: the high-priority traffic starts at 300 s as in the document;
  measured from 300 s to 600 s (quick: starts at 20 s, measured to 60 s);
  Section 5.1: 300 s measured after 60 s (quick: 60 s after 15 s);
- the high-priority models (``apps/onoff.rs``, ``apps/video.rs``): VoIP with
  ITU-T P.59 talk spurts (31.0 kb/s mean each), the MPEG-like GOP at 333
  kb/s, VBR as a Pareto ON/OFF source (shape 1.5, 896 kb/s while ON, 0.5 s
  mean periods: ns-2's ``Application/Traffic/Pareto`` defaults) at 448 kb/s
  mean: 0.905 Mb/s in all, where the document measured 1.1 Mb/s (its
  number equals the sum with the VoIP flows always ON: 4 x 80 + 333 + 448);
- the Relative packets are 500 B IP packets (448 B of payload + 52 B of
  headers), written at 100 kb/s of IP bytes by each source; throughput is
  reported in IP bytes (delivered payload x 500 / 448), as the background's
  (x 1500 / 1448);
- background: the document's is a "realistic" synthesis from a
  generator it cites but does not describe, averaging 9 Mb/s on the
  backbone in Section 5.2 (its tables measure 6.7-7.0 Mb/s of it) and, with
  the HTTP server, loading Section 5.1's link to 120 %. Here (``_background``):
  web-like TCP transfers from four hosts to four, arriving as a Poisson
  process (Pareto sizes of shape 1.2, mean 12 KB) that offers 6 Mb/s
  (Section 5.2) or 8 Mb/s (Section 5.1), and three long greedy TCP
  transfers (sized to outlast the run) that take whatever is left: the
  offered total is not fixed at 9 Mb/s;
- the max RTT is that of a ping from each customer to its sink every
  100 ms, classified into the Relative queue (green): it crosses the
  customer's access link and the Relative queue as the Relative packets do;
- simulator: ns-2, with no version named (its reference [5] is the
  simulator's web page); no ns-2 queue default enters here, as WRED's
  thresholds, max_p and weighting constant are the document's own
  (``docs/ns2-crosscheck.md``, "The ns-2 documents' set-ups"); the engine's
  WRED has no ``wait_`` spacing (ns-2's RED option), and the document's WRED
  is Cisco's, not ns-2's RED;
- hosts: the document names no TCP agent nor sink. Every TCP connection
  (Relative sources, HTTP, background) runs ns-2's hosts, ``host_profile:
  ns2`` (``Agent/TCP/Sack1``'s recovery and per-ACK window growth, a 10 ms
  RTT clock, initial window 2, ns-2.35's timer defaults: no version is
  named), with NewReno's window rule (``cc: newreno``; the background and
  HTTP connections ran the engine's CUBIC before: ns-2 had no CUBIC until
  its Linux TCP module of 2.33, 2008), and a sink that acknowledges every
  packet (``delayed_ack: false``, ``Agent/TCPSink/Sack1``: ns-2 delays
  ACKs only in the DelAck sinks a script names). Sack1 rather than ns-2's
  default ``Agent/TCP`` (Tahoe, which the engine does not model) or
  ``Agent/TCP/Newreno``: a choice, stated, not the document's. With the
  DelAck sink instead (ACKs every second packet, so the window grows half
  a packet a round trip), the mean queue along the iterative method fell
  to 0.14-0.19 of max_th (``docs/ns2-crosscheck.md``, session 10).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .. import columns as col
from ..results import Results
from . import Reproduction, RunSpec
from .grading import DEFAULT_FACTOR, Cell, Finding, fmt_cell, doc_section, save_figure

TITLE = (
    "Bouras, Sevasti: Performance analysis for a DiffServ-enabled network: "
    "The case of Relative Service (Section 5)"
)
KBPS = 1e3
MTU = 1500
BACKBONE_BPS = 10_000_000

# --- what the document reports -------------------------------------------------

#: Table 2: capacity (kb/s) on the backbone: BE, C1, C2, C3 per weight_REL.
PAPER_TABLE2 = {30: (7002, 215, 384, 949), 20: (7005, 216, 384, 952), 10: (7271, 192, 238, 727)}
#: Table 3: background, C1, C2, C3 (kb/s): yellow dropped, case A. Its
#: "drop" column is Table 2's weight_REL = 20 run, but prints C2 as 284
#: where Table 2 has 384 (:data:`TABLE3_C2_CONFLICT`).
PAPER_TABLE3 = {"drop": (7005, 216, 284, 949), "A": (6838, 341, 388, 1092)}
#: Table 4 / 5: background, C1, C2, C3 (kb/s); green avg, max; yellow avg, max (packets); max RTT (ms).
PAPER_TABLE4 = {
    "B1": (6992, 352, 512, 1035, 22, 125, 6, 88, 419),
    "B2": (6973, 342, 494, 1067, 13, 100, 3, 70, 259),
    "B3": (6682, 341, 514, 1040, 20, 125, 5, 88, 364),
    "none": (6826, 347, 400, 1086, 47, 250, 11, 98, 1021),
    "C": (6939, 348, 499, 1055, 24, 107, 6, 88, 512),
}
#: Section 5.2.1: the high-priority load the document measured, kb/s.
PAPER_HP_KBPS = 1100


def relative_gain_paper(c2_dropped: float = PAPER_TABLE3["drop"][2]) -> float:
    """Table 3's Relative gain of case A (kb/s): its three customers' sum
    against the sum with yellow dropped, C2 dropped taken as ``c2_dropped``
    (Table 3's 284 by default; Table 2 prints 384)."""
    dropped = PAPER_TABLE3["drop"][1:]
    return sum(PAPER_TABLE3["A"][1:]) - (dropped[0] + c2_dropped + dropped[2])


TABLE3_C2_CONFLICT = (
    f"Table 3 prints C2's throughput with yellow dropped as {PAPER_TABLE3['drop'][2]} kb/s, Table 2 as "
    f"{PAPER_TABLE2[20][2]} for the same configuration (weight_REL 20, its other numbers equal or near Table 3's): one "
    f"of them is a misprint; the cells use Table 3's {PAPER_TABLE3['drop'][2]}, and with it case A's Relative gain is "
    f"{relative_gain_paper():g} kb/s ({relative_gain_paper(PAPER_TABLE2[20][2]):g} with Table 2's {PAPER_TABLE2[20][2]})"
)
#: Section 5.2.1: the Relative queue with weight_REL 30 or 20 stays at or
#: below this many packets ("does not exceed ... 10 packets", Fig. 6): a maximum.
PAPER_RELATIVE_QUEUE_MAX = 10
#: Section 5.1: the HTTP flow's ideal throughput, and the max_th below which it degrades.
PAPER_HTTP_IDEAL_BPS = 1_000_000
PAPER_DEGRADE_BELOW = 60
#: Equation 3: the mean queue within this share of RTT x bandwidth / (MTU x 8).
EQ3_BAND = (0.2, 0.25)
#: The max_th values the HTTP throughput below PAPER_DEGRADE_BELOW is compared with.
HTTP_REFERENCE_MAX_TH = (120, 180)

# --- Section 5.2: customers, traffic, policy ------------------------------------

#: Token buckets (r_i b/s, b_i bytes), access link rates, high-priority flows.
CUSTOMERS = {
    "C1": {"profile": (240_000, 5000), "access": 512_000, "hp": ["voip", "voip"]},
    "C2": {"profile": (400_000, 5000), "access": 1_000_000, "hp": ["video"]},
    "C3": {"profile": (1_000_000, 5000), "access": 2_000_000, "hp": ["vbr", "voip", "voip"]},
}
#: How the report reads two of the document's units, and Table 3's conflict.
INTERPRETATIONS = (
    "**Interpretations of the document's units.** Tables 4 and 5 head their last row \"Max RTT (sec)\" with values "
    f"{min(v[8] for v in PAPER_TABLE4.values())} to {max(v[8] for v in PAPER_TABLE4.values())}: read as milliseconds "
    "(round trips of that many seconds cannot occur on this topology). Section 5.2.1 gives the high-priority load as "
    f"\"{PAPER_HP_KBPS}Mbps\" on a {BACKBONE_BPS / 1e6:g} Mb/s backbone: read as {PAPER_HP_KBPS} kb/s, which also gives "
    f"the share of the remaining capacity the same sentence states for Σ r_i "
    f"({100 * sum(c['profile'][0] for c in CUSTOMERS.values()) / (BACKBONE_BPS - PAPER_HP_KBPS * KBPS):.1f} %). Both readings are the report's, not the document's; "
    "the cells compare with them. " + TABLE3_C2_CONFLICT + "."
)
#: Each high-priority model: its flow spec (without endpoints) and mean rate.
VOIP = {"onoff": {"rate": "80kbps", "size": "188B"}}  # ITU-T P.59 periods (the defaults)
VIDEO = {"video": {"rate": "333kbps", "size": "200B"}}
VBR = {"onoff": {"rate": "896kbps", "size": "1500B", "on_mean": "500ms", "off_mean": "500ms", "pareto_shape": 1.5}}
HP_MODELS = {"voip": (VOIP, 80_000 * 1.004 / 2.591), "video": (VIDEO, 333_000), "vbr": (VBR, 448_000)}

REL_PACKET, REL_MSS = 500, 448  # IP bytes, TCP payload bytes
#: Every TCP connection's hosts (Relative sources, HTTP, background): ns-2's
#: (``host_profile: ns2``: ``Agent/TCP/Sack1``), the simulator the document
#: ran, with NewReno's window rule (ns-2 of its time had no CUBIC) and a sink
#: that acknowledges every packet (``Agent/TCPSink/Sack1``: ns-2's sinks
#: delay ACKs only when a script names a DelAck one). The document names no
#: TCP agent nor sink (see the module doc).
TCP = {"cc": "newreno", "host_profile": "ns2", "delayed_ack": False}
REL_SOURCE_BPS = 100_000  # IP bytes per second of one Relative source
BG_MSS = 1448
BE_WEIGHT = 79
FITTED_W10 = "the best-effort weight (79) is fitted to this row's Relative total"
WEIGHTS = (30, 20, 10)
ACCESS_DELAY, BACKBONE_DELAY, SINK_DELAY = "5ms", "40ms", "5ms"

#: Case B and C WRED settings (Section 5.2.2): (min_th, max_th, max_p) per colour.
WRED_CASES = {
    "B1": {"green": (22, 149, 0.2), "yellow": (22, 149, 0.4)},
    "B2": {"green": (15, 100, 0.2), "yellow": (15, 100, 0.4)},
    "B3": {"green": (15, 100, 0.2), "yellow": (15, 100, 0.8)},
    "C": {"green": (40, 100, 0.2), "yellow": (15, 40, 0.4)},
}


def hp_mean_bps(customer: str) -> float:
    return sum(HP_MODELS[m][1] for m in CUSTOMERS[customer]["hp"])


def relative_sources(customer: str) -> int:
    """Sources that fill the access link after the high-priority mean."""
    c = CUSTOMERS[customer]
    return int((c["access"] - hp_mean_bps(customer)) // REL_SOURCE_BPS)


def _prefix(customer: str) -> str:
    return f"10.1.{customer[1]}.0/24"


def pop0_policy(weight_rel: int, yellow: Any, wred: dict[str, tuple] | None) -> dict[str, Any]:
    """PoP0's egress to the backbone and its ingress filter. ``yellow``:
    the trTCM's action for out-of-profile Relative packets."""
    relative: dict[str, Any] = {"weight": weight_rel, "buffer_size": "35%"}
    if wred:
        relative["drop_profile"] = {"wred": {
            "exponential_weighting_constant": 9,
            **{colour: {"min_th": t[0], "max_th": t[1], "max_p": t[2]} for colour, t in wred.items()},
        }}  # fmt: skip
    terms = []
    for name, c in CUSTOMERS.items():
        rate, burst = c["profile"]
        src = _prefix(name)
        terms += [
            {"name": f"{name}-hp", "from": {"source": src, "protocol": "udp"}, "then": {"class": "hp"}},
            {"name": f"{name}-probe", "from": {"source": src, "protocol": "icmp"}, "then": {"class": "relative"}},
            {"name": f"{name}-relative", "from": {"source": src, "protocol": "tcp"}, "then": {
                "class": "relative",
                "policer": {"trtcm": {"cir": f"{rate}bps", "cbs": f"{burst}B", "pir": "100Mbps", "pbs": f"{burst}B"},
                            "yellow": yellow, "red": yellow},
            }},
        ]  # fmt: skip
    return {
        "scheduler": "mdrr",
        "buffer": "1000p",
        "classes": {
            "be": {"weight": BE_WEIGHT, "buffer_size": "50%"},
            "relative": relative,
            "hp": {"weight": 1, "buffer_size": "15%", "low_latency": "strict-priority"},
        },
        "filter": terms,
    }


#: The Section 5.2 configurations: (weight_REL, yellow action, WRED case).
CONFIGS_52 = {
    "w30": (30, "discard", None),
    "w20": (20, "discard", None),
    "w10": (10, "discard", None),
    "A": (20, {"class": "be"}, None),
    "none": (20, "transmit", None),
    "B1": (20, "transmit", "B1"),
    "B2": (20, "transmit", "B2"),
    "B3": (20, "transmit", "B3"),
    "C": (20, "transmit", "C"),
}

#: Seeds per Section 5.2 configuration; the tables show their mean.
SEEDS_52 = {False: (1, 2, 3), True: (1,)}
#: (hp start, measurement window end = duration) in seconds.
TIMELINE_52 = {False: (300.0, 600.0), True: (20.0, 60.0)}


def topology_52(name: str, policy: dict[str, Any], quick: bool) -> dict[str, Any]:
    hp_start, duration = TIMELINE_52[quick]
    nodes: dict[str, Any] = {"PoP0": {"router": True, "policy": "pop0"}, "PoP1": {"router": True}}
    links = [{"between": ["PoP0", "PoP1"], "rate": "10Mbps", "delay": BACKBONE_DELAY, "queues": {"PoP0": {"policy": "pop0"}}}]
    flows: list[dict[str, Any]] = []
    workloads: list[dict[str, Any]] = []
    for c, spec in CUSTOMERS.items():
        k = c[1]
        nodes[c] = {"address": f"10.1.{k}.1"}
        nodes[f"S{k}"] = {"address": f"10.2.{k}.1"}
        links.append({"between": [c, "PoP0"], "rate": f"{spec['access']}bps", "delay": ACCESS_DELAY})
        links.append({"between": ["PoP1", f"S{k}"], "rate": "100Mbps", "delay": SINK_DELAY})
        for i, model in enumerate(spec["hp"]):
            kind, body = next(iter(HP_MODELS[model][0].items()))
            flows.append({"name": f"{c}-{model}{i}", kind: {"from": c, "to": f"S{k}", **body}, "start": f"{hp_start:g}s"})
        flows.append({"name": f"{c}-probe", "ping": {"from": c, "to": f"S{k}", "interval": "100ms"}, "start": "1s"})
        n = relative_sources(c)
        payload_bps = REL_SOURCE_BPS * REL_MSS / REL_PACKET
        workloads.append({
            "name": f"rel-{c}",
            "transfer": {"from": c, "to": f"S{k}", "size": f"{int(n * payload_bps * duration / 8 * 1.1)}B"},
            "streams": n,
            "app_rate": f"{payload_bps:g}bps",
            "write_size": f"{REL_MSS}B",
            "tcp": {**TCP, "mss": f"{REL_MSS}B"},
        })  # fmt: skip
    workloads += _background(nodes, links, "PoP0", "PoP1", web_bps=6_000_000, bulk=3, duration=duration)
    return {
        "name": name,
        "description": f"Bouras & Sevasti Section 5.2: {name}",
        "duration": f"{duration:g}s",
        "seed": 1,
        "metric_interval": "50ms",
        "nodes": nodes,
        "policies": {"pop0": policy},
        "links": links,
        "flows": flows,
        "workloads": workloads,
    }


def _background(nodes: dict, links: list, left: str, right: str, *, web_bps: int, bulk: int, duration: float) -> list[dict]:
    """Web-like transfers arriving as a Poisson process from four hosts
    behind ``left`` to four behind ``right`` (Pareto sizes of shape 1.2,
    mean 12 KB) offering ``web_bps``, and ``bulk`` long-lived FTP-like
    transfers that take whatever is left."""
    for j in range(1, 5):
        nodes[f"B{j}"] = {"address": f"10.3.0.{j}"}
        nodes[f"D{j}"] = {"address": f"10.4.0.{j}"}
        links.append({"between": [f"B{j}", left], "rate": "100Mbps", "delay": "1ms"})
        links.append({"between": [right, f"D{j}"], "rate": "100Mbps", "delay": "1ms"})
    hosts, peers = [f"B{j}" for j in range(1, 5)], [f"D{j}" for j in range(1, 5)]
    return [
        {"name": "bg-web", "poisson": {"pairs": {"from": hosts, "to": peers}, "size": {"pareto": {"shape": 1.2, "mean": "12KB"}},
                                       "load": f"{web_bps}bps"}, "tcp": TCP},
        {"name": "bg-bulk", "transfer": {"from": "B1", "to": "D1", "size": f"{int(bulk * BACKBONE_BPS * duration / 8)}B"},
         "streams": bulk, "tcp": TCP},
    ]  # fmt: skip


# --- Section 5.1 ---------------------------------------------------------------------

#: (warm-up, duration) in seconds.
TIMELINE_51 = {False: (60.0, 300.0), True: (15.0, 60.0)}
GRID_51 = {False: (30, 45, 60, 90, 120, 150, 180), True: (30, 60, 120, 180)}
ITERATIONS_51 = {False: 5, True: 3}
QUEUE_51 = "N0->N1"
BUFFER_51 = 500
BASE_RTT_51 = 0.060
HTTP_THINK = "1600ms"


def topology_51(name: str, max_th: float | None, quick: bool, *, dynamic: bool = False) -> dict[str, Any]:
    """Fig. 2a: N0 -> N1 at 10 Mb/s, one queue, WRED at ``max_th`` (None:
    drop tail), HTTP server W behind N0, clients behind N1; ``dynamic``:
    max_th re-tuned every 50 ms from the TCP traffic's RTT (equation 2)."""
    warm, duration = TIMELINE_51[quick]
    klass: dict[str, Any] = {"weight": 1, "buffer_size": "100%"}
    if max_th is not None:
        klass["drop_profile"] = {"wred": {"exponential_weighting_constant": 9,
                                          "green": {"min_th": round(0.15 * max_th, 2), "max_th": round(max_th, 2), "max_p": 0.2}}}
    policy = {"scheduler": "mdrr", "buffer": f"{BUFFER_51}p", "classes": {"all": klass}}
    nodes: dict[str, Any] = {"N0": {"router": True}, "N1": {"router": True}, "W": {"address": "10.5.0.1"},
                             "P": {"address": "10.5.0.2"}, "Q": {"address": "10.6.0.2"}}  # fmt: skip
    links = [
        {"between": ["N0", "N1"], "rate": "10Mbps", "delay": "28ms", "queues": {"N0": {"policy": "n0"}}},
        {"between": ["W", "N0"], "rate": "100Mbps", "delay": "1ms"},
        {"between": ["P", "N0"], "rate": "100Mbps", "delay": "1ms"},
        {"between": ["N1", "Q"], "rate": "100Mbps", "delay": "1ms"},
    ]
    clients = []
    for j in range(1, 5):
        nodes[f"H{j}"] = {"address": f"10.6.1.{j}"}
        links.append({"between": ["N1", f"H{j}"], "rate": "100Mbps", "delay": "1ms"})
        clients.append(f"H{j}")
    # Closed-loop users: 20 sessions thinking 1.6 s after each response
    # offer about 1 Mb/s while a page takes 0.3 s, less as pages slow down.
    workloads = [{"name": "http", "http": {"server": "W", "clients": clients, "sessions": 5, "think": HTTP_THINK}, "tcp": TCP}]
    # TCP background: 8 Mb/s of web-like transfers and 3 greedy bulk transfers.
    workloads += _background(nodes, links, "N0", "N1", web_bps=8_000_000, bulk=3, duration=duration)
    scenario = {
        "name": name,
        "description": f"Bouras & Sevasti Section 5.1: {name}",
        "duration": f"{duration:g}s",
        "seed": 1,
        "metric_interval": "50ms",
        "nodes": nodes,
        "policies": {"n0": policy},
        "links": links,
        "flows": [{"name": "probe", "ping": {"from": "P", "to": "Q", "interval": "100ms"}, "start": "1s"}],
        "workloads": workloads,
    }
    if dynamic:
        scenario["control"] = [{"wred_rtt_tuning": {"class": f"{QUEUE_51}/all", "traffic": ["http", "bg-web", "bg-bulk"],
                                                    "interval": "50ms", "max_p": 0.2, "min_fraction": 0.15}}]  # fmt: skip
    return scenario


def equation2(rate_bps: float, rtt_s: float, mtu: int = MTU) -> float:
    """max_th = r RTT / (MTU 8) packets (the document's equation 2)."""
    return rate_bps * rtt_s / (mtu * 8)


# --- the plan -------------------------------------------------------------------------


def plan(*, quick: bool) -> list[RunSpec]:
    specs = [_spec_51("5.1/iter0", None, quick)]
    specs += [_spec_51(f"5.1/grid/{m}", m, quick) for m in GRID_51[quick]]
    specs += [_spec_51(f"5.1/dynamic/{m}", m, quick, dynamic=True) for m in GRID_51[quick]]
    hp_start, duration = TIMELINE_52[quick]
    for key, (weight, yellow, wred) in CONFIGS_52.items():
        policy = pop0_policy(weight, yellow, WRED_CASES[wred] if wred else None)
        for seed in SEEDS_52[quick]:
            scenario = topology_52(f"bouras-5.2-{key}-s{seed}", policy, quick)
            scenario["seed"] = seed
            specs.append(RunSpec(key=f"5.2/{key}/s{seed}", scenario=scenario,
                                 measure={"section": "5.2", "window": (hp_start, duration), "cost": duration}))  # fmt: skip
    return specs


def _spec_51(key: str, max_th: float | None, quick: bool, *, dynamic: bool = False) -> RunSpec:
    warm, duration = TIMELINE_51[quick]
    name = "bouras-5.1-" + key.split("/", 1)[1].replace("/", "-")
    return RunSpec(key=key, scenario=topology_51(name, max_th, quick, dynamic=dynamic),
                   measure={"section": "5.1", "window": (warm, duration), "max_th": max_th, "cost": duration})  # fmt: skip


def follow_up(measured: dict[str, dict[str, Any]], *, quick: bool) -> list[RunSpec]:
    """The next run of the iterative method (Section 5.1): max_th from
    equation 2 on the last run's mean RTT; none once ``ITERATIONS_51`` runs
    are made or max_th moved by less than 5 %."""
    done = sorted(int(k.rsplit("iter", 1)[1]) for k in measured if k.startswith("5.1/iter"))
    last = done[-1]
    if last >= ITERATIONS_51[quick]:
        return []
    m = measured[f"5.1/iter{last}"]
    nxt = equation2(BACKBONE_BPS, m["rtt_mean_s"])
    if m["max_th"] is not None and abs(nxt - m["max_th"]) < 0.05 * m["max_th"]:
        return []
    return [_spec_51(f"5.1/iter{last + 1}", nxt, quick)]


# --- measuring one run (in the worker) ---------------------------------------------


def _window(frame: pl.DataFrame, w0: float, w1: float) -> pl.DataFrame:
    return frame.filter((pl.col(col.TIME) > w0) & (pl.col(col.TIME) <= w1))


def _delivered_bps(results: Results, workload: str, w0: float, w1: float) -> float:
    rows = _window(results.workload.filter(pl.col(col.WORKLOAD) == workload), w0, w1)
    interval = results.scenario.metric_interval / 1e9
    return float(rows[col.DELIVERED_BPS].sum()) * interval / (w1 - w0) if rows.height else 0.0


def _queue_stats(results: Results, queue: str, w0: float, w1: float) -> dict[str, Any]:
    q = _window(results.queue.filter(pl.col(col.QUEUE) == queue), w0, w1)
    lengths = q[col.LEN_PKTS].to_numpy()
    hist = np.bincount(lengths) if len(lengths) else np.zeros(1, dtype=int)
    out = {"mean": float(lengths.mean()), "max": int(lengths.max()), "hist": hist.tolist()}
    for colour, column in (("green", col.LEN_GREEN_PKTS), ("yellow", col.LEN_YELLOW_PKTS)):
        values = q[column].to_numpy()
        out[colour] = {"mean": float(values.mean()), "max": int(values.max())}
    return out


def _ping(results: Results, flow: str, w0: float, w1: float) -> dict[str, Any]:
    pings = _window(results.ping.filter(pl.col(col.FLOW) == flow), w0, w1)
    rtt = pings[col.RTT].drop_nulls()
    return {"mean": rtt.mean(), "max": rtt.max(), "sent": pings.height, "lost": pings.height - rtt.len()}


def measure(results: Results, params: dict[str, Any]) -> dict[str, Any]:
    w0, w1 = params["window"]
    if params["section"] == "5.1":
        probe = _ping(results, "probe", w0, w1)
        # The HTTP workload's goodput is its responses' and its requests'
        # (350 B each); the requests started in the window are taken off.
        transfers = results.transfers.filter(
            (pl.col(col.WORKLOAD) == "http") & (pl.col(col.SRC) != "W") & (pl.col(col.START) > w0) & (pl.col(col.START) <= w1)
        )
        http = _delivered_bps(results, "http", w0, w1) - float(transfers[col.SIZE_BYTES].sum()) * 8 / (w1 - w0)
        # Dynamic WRED: the max_th the agent set during the window.
        tuned = results.control.filter((pl.col(col.KNOB) == "max_th") & (pl.col(col.TIME) > w0) & (pl.col(col.TIME) <= w1))
        return {
            "max_th": params["max_th"],
            "tuned_max_th": {"mean": float(tuned[col.NEW_VALUE].mean()), "min": float(tuned[col.NEW_VALUE].min()),
                             "max": float(tuned[col.NEW_VALUE].max()), "changes": tuned.height} if tuned.height else None,
            "rtt_mean_s": probe["mean"],
            "probe_loss": probe["lost"] / max(1, probe["sent"]),
            "queue": _queue_stats(results, f"{QUEUE_51}/all", w0, w1),
            "http_bps": http,
            "background_bps": (_delivered_bps(results, "bg-web", w0, w1) + _delivered_bps(results, "bg-bulk", w0, w1)) * 1500 / BG_MSS,
        }  # fmt: skip
    # The UDP series counts received bytes cumulatively per flow.
    hp_bps = 0.0
    for _, rows in results.udp.group_by(col.FLOW):
        before = rows.filter(pl.col(col.TIME) <= w0)[col.RX_BYTES]
        after = rows.filter(pl.col(col.TIME) <= w1)[col.RX_BYTES]
        hp_bps += (after[-1] - (before[-1] if before.len() else 0)) * 8 / (w1 - w0)
    out: dict[str, Any] = {
        "customers": {c: _delivered_bps(results, f"rel-{c}", w0, w1) * REL_PACKET / REL_MSS for c in CUSTOMERS},
        "background_bps": (_delivered_bps(results, "bg-web", w0, w1) + _delivered_bps(results, "bg-bulk", w0, w1)) * 1500 / BG_MSS,
        "hp_bps": hp_bps,
        "queue": _queue_stats(results, "PoP0->PoP1/relative", w0, w1),
        "be_queue_mean": _queue_stats(results, "PoP0->PoP1/be", w0, w1)["mean"],
        "rtt_max_s": max(_ping(results, f"{c}-probe", w0, w1)["max"] or 0.0 for c in CUSTOMERS),
        "rtt_mean_s": {c: _ping(results, f"{c}-probe", w0, w1)["mean"] for c in CUSTOMERS},
        "filter": {row[col.TERM]: {k: row[k] for k in (col.GREEN_PKTS, col.YELLOW_PKTS, col.RED_PKTS)}
                   for row in results.filter.iter_rows(named=True) if row[col.TERM].endswith("-relative")},
    }  # fmt: skip
    return out


# --- the report ---------------------------------------------------------------------


def _mean_tree(values: list[Any]) -> Any:
    """The element-wise mean of equally shaped measurements (dicts of
    numbers); lists (histograms) are summed."""
    first = values[0]
    if isinstance(first, dict):
        return {k: _mean_tree([v[k] for v in values]) for k in first}
    if isinstance(first, list):
        n = max(len(v) for v in values)
        return [sum(v[i] for v in values if i < len(v)) for i in range(n)]
    if first is None or isinstance(first, str):
        return first
    return sum(values) / len(values)


def m52(measured: dict[str, dict[str, Any]], config: str) -> dict[str, Any]:
    """A Section 5.2 configuration's measurements, averaged over its seeds."""
    runs = [m for k, m in measured.items() if k.startswith(f"5.2/{config}/s")]
    return _mean_tree([{k: v for k, v in m.items() if k in ("customers", "background_bps", "hp_bps", "queue", "rtt_max_s", "be_queue_mean")} for m in runs])


def runs51(measured: dict[str, dict[str, Any]], kind: str) -> list[tuple[str, dict[str, Any]]]:
    """The Section 5.1 runs of one kind ("iter" or "grid"), in order."""
    keys = [k for k in measured if k.startswith(f"5.1/{kind}")]
    order = (lambda k: int(k.rsplit("iter", 1)[1])) if kind == "iter" else (lambda k: float(k.rsplit("/", 1)[1]))
    # kind: "iter", "grid" (static) or "dynamic" (grid values as initial max_th)
    return [(k, measured[k]) for k in sorted(keys, key=order)]


def eq3_ratio(m: dict[str, Any]) -> float:
    """The mean queue over the bandwidth-delay product in packets at the
    RTT max_th was set from: max_th itself in the iterative method (equation
    3 puts the ratio within 0.2-0.25)."""
    return m["queue"]["mean"] / m["max_th"]


def _kb(bps: float) -> float:
    return bps / KBPS


def findings(measured: dict[str, dict[str, Any]]) -> list[Finding]:
    out = []
    rates = {c: CUSTOMERS[c]["profile"][0] for c in CUSTOMERS}
    sum_r = sum(rates.values())

    def contracted_claim(w: int) -> str:
        return (f"weight_REL = {w} (r ≥ Σ r_i, equation 1): every customer gets 90-95 % or more of its contracted rate, "
                f"and the Relative queue never exceeds {PAPER_RELATIVE_QUEUE_MAX} packets (its maximum, Fig. 6)")

    for w in (30, 20):
        m = m52(measured, f"w{w}")
        shares = {c: m["customers"][c] / rates[c] for c in CUSTOMERS}
        out.append(Finding(
            contracted_claim(w),
            all(s >= 0.9 for s in shares.values()) and m["queue"]["max"] <= PAPER_RELATIVE_QUEUE_MAX,
            ", ".join(f"{c} {shares[c]:.0%} of r_i" for c in CUSTOMERS)
            + f"; Relative queue mean {m['queue']['mean']:.1f}, max {m['queue']['max']:.0f} packets",
            [Cell(f"w{w} {c} (kb/s)", _kb(m["customers"][c]), PAPER_TABLE2[w][i + 1]) for i, c in enumerate(CUSTOMERS)]
            + [Cell(f"w{w} BE (kb/s)", _kb(m["background_bps"]), PAPER_TABLE2[w][0]),
               Cell(f"w{w} Relative queue max (packets)", m["queue"]["max"], PAPER_RELATIVE_QUEUE_MAX, bound=True)],
        ))  # fmt: skip
    m10, m20 = m52(measured, "w10"), m52(measured, "w20")
    total10, total20 = sum(m10["customers"].values()), sum(m20["customers"].values())
    out.append(Finding(
        "weight_REL = 10 (r < Σ r_i): the contracted rates are not met",
        total10 < 0.9 * sum_r and total10 < total20 and any(m10["customers"][c] < 0.9 * rates[c] for c in CUSTOMERS),
        f"Relative {_kb(total10):.0f} kb/s in all against Σ r_i = {_kb(sum_r):.0f} (weight 20: {_kb(total20):.0f}); "
        + ", ".join(f"{c} {m10['customers'][c] / rates[c]:.0%}" for c in CUSTOMERS),
        [Cell(f"w10 {c} (kb/s)", _kb(m10["customers"][c]), PAPER_TABLE2[10][i + 1], fitted=True, why=FITTED_W10)
         for i, c in enumerate(CUSTOMERS)]
        + [Cell("w10 BE (kb/s)", _kb(m10["background_bps"]), PAPER_TABLE2[10][0], fitted=True, why=FITTED_W10)],
    ))  # fmt: skip
    ma = m52(measured, "A")
    rel_a, rel_d = sum(ma["customers"].values()), total20
    out.append(Finding(
        "Case A (yellow to best effort) raises the Relative throughput at best effort's expense",
        rel_a > rel_d and ma["background_bps"] < m20["background_bps"],
        f"Relative {_kb(rel_d):.0f} -> {_kb(rel_a):.0f} kb/s, background {_kb(m20['background_bps']):.0f} -> "
        f"{_kb(ma['background_bps']):.0f} kb/s",
        # Table 3's "drop" column is Table 2's weight_REL = 20 run, whose
        # levels the weight-20 finding counts: shown here, not counted again.
        [Cell(f"{label} {c} (kb/s)" + (" [Table 3's 284; Table 2: 384]" if (key, c) == ("drop", "C2") else ""),
              _kb(m["customers"][c]), PAPER_TABLE3[key][i + 1], elsewhere=contracted_claim(20) if key == "drop" else "")
         for label, key, m in (("drop", "drop", m20), ("A", "A", ma)) for i, c in enumerate(CUSTOMERS)]
        + [Cell(f"{label} background (kb/s)", _kb(m["background_bps"]), PAPER_TABLE3[key][0],
                elsewhere=contracted_claim(20) if key == "drop" else "")
           for label, key, m in (("drop", "drop", m20), ("A", "A", ma))]
        # The finding is a change: its sizes too, not only the levels. The
        # gain rests on Table 3's C2 of 284 (TABLE3_C2_CONFLICT).
        + [Cell(f"A: Relative gain (kb/s) [from Table 3's C2 284; with Table 2's 384: {relative_gain_paper(PAPER_TABLE2[20][2]):g}]",
                _kb(rel_a - rel_d), relative_gain_paper()),
           Cell("A: background loss (kb/s)", _kb(m20["background_bps"] - ma["background_bps"]),
                PAPER_TABLE3["drop"][0] - PAPER_TABLE3["A"][0])],
    ))  # fmt: skip
    none = m52(measured, "none")
    cases = {b: m52(measured, b) for b in ("B1", "B2", "B3")}
    spread = max(abs(m["customers"][c] / none["customers"][c] - 1) for m in cases.values() for c in CUSTOMERS)
    out.append(Finding(
        "WRED (B1-B3) does not change the capacity split among the customers much (each within 25 % of no WRED)",
        spread <= 0.25,
        f"largest change of a customer's throughput against no WRED: {spread:.0%}",
        [Cell(f"{b} {c} (kb/s)", _kb(m["customers"][c]), PAPER_TABLE4[b][i + 1])
         for b, m in (*cases.items(), ("none", none)) for i, c in enumerate(CUSTOMERS)],
    ))  # fmt: skip
    cut_claim = "WRED cuts the Relative queue's mean and maximum (green and yellow) against no WRED"
    out.append(Finding(
        cut_claim,
        all(m["queue"][k]["mean"] < none["queue"][k]["mean"] and m["queue"][k]["max"] < none["queue"][k]["max"]
            for m in cases.values() for k in ("green", "yellow")),
        "; ".join(f"{b} green {m['queue']['green']['mean']:.1f} ({m['queue']['green']['max']:.0f})"
                  for b, m in (*cases.items(), ("none", none))),
        [Cell(f"{b} {k} {stat}", m["queue"][k][stat], PAPER_TABLE4[b][4 + 2 * j + (stat == "max")])
         for b, m in (*cases.items(), ("none", none)) for j, k in enumerate(("green", "yellow")) for stat in ("mean", "max")]
        + [Cell(f"{b} max RTT (ms)", m["rtt_max_s"] * 1e3, PAPER_TABLE4[b][8]) for b, m in (*cases.items(), ("none", none))],
    ))  # fmt: skip
    means = {b: m["queue"]["mean"] for b, m in cases.items()}
    out.append(Finding(
        "B2 gives the lowest mean Relative queue of B1-B3",
        means["B2"] <= min(means.values()),
        ", ".join(f"{b} {v:.1f}" for b, v in means.items()) + " packets (green and yellow)",
        # Table 4's green means of B1-B3 are counted by the finding above.
        [Cell(f"{b} green mean", cases[b]["queue"]["green"]["mean"], PAPER_TABLE4[b][4], elsewhere=cut_claim) for b in cases],
    ))  # fmt: skip
    mc = m52(measured, "C")
    out.append(Finding(
        "Case C (staggered thresholds, Case 2 of Section 3) gives a larger mean Relative queue than B2",
        mc["queue"]["mean"] > cases["B2"]["queue"]["mean"],
        f"C {mc['queue']['mean']:.1f} against B2 {cases['B2']['queue']['mean']:.1f} packets",
        [Cell(f"C {k} {stat}", mc["queue"][k][stat], PAPER_TABLE4["C"][4 + 2 * j + (stat == "max")])
         for j, k in enumerate(("green", "yellow")) for stat in ("mean", "max")]
        + [Cell("C max RTT (ms)", mc["rtt_max_s"] * 1e3, PAPER_TABLE4["C"][8])]
        + [Cell(f"C {c} (kb/s)", _kb(mc["customers"][c]), PAPER_TABLE4["C"][i + 1]) for i, c in enumerate(CUSTOMERS)],
    ))  # fmt: skip
    # Section 5.1.
    iters = [(k, m) for k, m in runs51(measured, "iter") if m["max_th"] is not None]
    ratios = [eq3_ratio(m) for _, m in iters]
    out.append(Finding(
        "Section 5.1, equation 3: with max_th from equation 2 on the measured RTT, the mean queue stays within "
        "0.2-0.25 × RTT × bandwidth / (MTU × 8), i.e. of that max_th (tolerance ±0.05)",
        bool(ratios) and all(0.15 <= r <= 0.30 for r in ratios),
        ", ".join(f"max_th {m['max_th']:.0f}: {r:.2f}" for (_, m), r in zip(iters, ratios, strict=True)),
        [Cell(f"max_th {m['max_th']:.0f} ratio", r, 0.225) for (_, m), r in zip(iters, ratios, strict=True)],
        factor=1.34,
    ))  # fmt: skip
    grid = runs51(measured, "grid")
    queue_means = [m["queue"]["mean"] for _, m in grid]
    out.append(Finding(
        "Section 5.1: a smaller max_th shifts the queue-size distribution to the left (mean queue rises with max_th)",
        all(a < b for a, b in zip(queue_means, queue_means[1:])),
        ", ".join(f"max_th {m['max_th']:g}: {m['queue']['mean']:.1f}" for _, m in grid),
    ))  # fmt: skip
    low = [m for _, m in grid if m["max_th"] < PAPER_DEGRADE_BELOW]
    high = [m for _, m in grid if HTTP_REFERENCE_MAX_TH[0] <= m["max_th"] <= HTTP_REFERENCE_MAX_TH[1]]
    low_bps = np.mean([m["http_bps"] for m in low]) if low else math.nan
    high_bps = np.mean([m["http_bps"] for m in high]) if high else math.nan
    out.append(Finding(
        f"Section 5.1: the HTTP throughput degrades for max_th below about {PAPER_DEGRADE_BELOW} "
        "(against max_th 120-180, by more than 10 %)",
        bool(low and high) and low_bps < 0.9 * high_bps,
        f"HTTP {_kb(low_bps):.0f} kb/s below max_th {PAPER_DEGRADE_BELOW}, {_kb(high_bps):.0f} kb/s at 120-180",
        [Cell("HTTP at max_th 120-180 (kb/s)", _kb(high_bps), PAPER_HTTP_IDEAL_BPS / KBPS)],
    ))  # fmt: skip
    dynamic = runs51(measured, "dynamic")
    if dynamic:
        static_q = [m["queue"]["mean"] for _, m in grid]
        dynamic_q = [m["queue"]["mean"] for _, m in dynamic]
        static_h = [m["http_bps"] for _, m in grid]
        dynamic_h = [m["http_bps"] for _, m in dynamic]
        # Runs that come out the same whatever their initial max_th show
        # nothing about holding steady: the initial value had no effect.
        identical = len(dynamic) > 1 and np.ptp(dynamic_q) == 0 and np.ptp(dynamic_h) == 0
        out.append(Finding(
            "Section 5.1 (ii), Fig. 4: dynamic WRED (max_th re-tuned every 50 ms) holds the mean queue steadier across "
            "initial max_th values than static WRED across the same values, and the HTTP throughput with it",
            np.std(dynamic_q) < np.std(static_q) and np.ptp(dynamic_h) <= np.ptp(static_h),
            f"mean queue {min(static_q):.1f}-{max(static_q):.1f} packets static, {min(dynamic_q):.1f}-{max(dynamic_q):.1f} "
            f"dynamic (standard deviation {np.std(static_q):.1f} against {np.std(dynamic_q):.1f}); HTTP "
            f"{_kb(min(static_h)):.0f}-{_kb(max(static_h)):.0f} kb/s static, {_kb(min(dynamic_h)):.0f}-{_kb(max(dynamic_h)):.0f} dynamic",
            [Cell("dynamic HTTP, mean over initial max_th (kb/s)", _kb(float(np.mean(dynamic_h))), PAPER_HTTP_IDEAL_BPS / KBPS)],
            not_graded=(f"the {len(dynamic)} dynamic runs give the same mean queue and HTTP throughput whatever their "
                        "initial max_th, so \"steadier\" holds by "
                        "construction: shown, not counted") if identical else "",
        ))  # fmt: skip
    for f in out:  # numpy numbers and comparisons to plain ones, for JSON
        f.direction = bool(f.direction)
        f.cells = [dataclasses.replace(c, model=float(c.model)) for c in f.cells]
    return out


def tables(measured: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    def cell(model: float, paper: float, fmt: str = "{:.0f}") -> str:
        return fmt_cell(fmt.format(model), f"{paper:g}", Cell("", model, paper))

    t2 = []
    for w in WEIGHTS:
        m = m52(measured, f"w{w}")
        row = {"weight_REL": w, "r (kb/s)": f"{_kb(relative_rate(w, BE_WEIGHT, sum(hp_mean_bps(c) for c in CUSTOMERS))):.0f}",
               "BE": cell(_kb(m["background_bps"]), PAPER_TABLE2[w][0])}  # fmt: skip
        row |= {c: cell(_kb(m["customers"][c]), PAPER_TABLE2[w][i + 1]) for i, c in enumerate(CUSTOMERS)}
        row["Relative queue mean (max)"] = f"{m['queue']['mean']:.1f} ({m['queue']['max']:.0f})"
        row["high priority"] = cell(_kb(m["hp_bps"]), PAPER_HP_KBPS)
        t2.append(row)
    t3 = []
    for label, key, config in (("Drop yellow packets", "drop", "w20"), ("Case A", "A", "A")):
        m = m52(measured, config)
        row = {"case": label, "background": cell(_kb(m["background_bps"]), PAPER_TABLE3[key][0])}
        row |= {c: cell(_kb(m["customers"][c]), PAPER_TABLE3[key][i + 1]) for i, c in enumerate(CUSTOMERS)}
        t3.append(row)
    t4 = []
    configs = ("B1", "B2", "B3", "none", "C")
    ms = {b: m52(measured, b) for b in configs}
    lines = [("Background traffic (kb/s)", lambda m: _kb(m["background_bps"]), 0)]
    lines += [(f"Relative traffic-{c} (kb/s)", lambda m, c=c: _kb(m["customers"][c]), i + 1) for i, c in enumerate(CUSTOMERS)]
    lines += [("Green queue avg (pkts)", lambda m: m["queue"]["green"]["mean"], 4), ("Green queue max", lambda m: m["queue"]["green"]["max"], 5),
              ("Yellow queue avg (pkts)", lambda m: m["queue"]["yellow"]["mean"], 6), ("Yellow queue max", lambda m: m["queue"]["yellow"]["max"], 7),
              ("Max RTT (ms)", lambda m: m["rtt_max_s"] * 1e3, 8)]  # fmt: skip
    for label, get, i in lines:
        row = {"measure": label}
        row |= {b: cell(get(ms[b]), PAPER_TABLE4[b][i], "{:.0f}" if "kb/s" in label or "RTT" in label else "{:.1f}") for b in configs}
        t4.append(row)
    t51 = []
    for kind in ("iter", "grid", "dynamic"):
        for key, m in runs51(measured, kind):
            max_th = m["max_th"]
            tuned = m.get("tuned_max_th")
            t51.append({
                "run": key.split("/", 1)[1],
                "max_th": "drop tail" if max_th is None else f"{max_th:.0f}" if tuned is None
                else f"{max_th:.0f} -> {tuned['mean']:.0f} ({tuned['min']:.0f}-{tuned['max']:.0f})",
                "min_th": "-" if max_th is None else f"{0.15 * (tuned['mean'] if tuned else max_th):.1f}",
                "mean RTT (ms)": f"{m['rtt_mean_s'] * 1e3:.1f}",
                "next max_th (eq. 2)": f"{equation2(BACKBONE_BPS, m['rtt_mean_s']):.0f}",
                "mean queue (pkts)": f"{m['queue']['mean']:.1f}",
                "mean / max_th (eq. 3: 0.2-0.25)": "-" if max_th is None
                else f"{m['queue']['mean'] / tuned['mean']:.2f}" if tuned else f"{eq3_ratio(m):.2f}",
                "mean / BDP at own RTT": f"{m['queue']['mean'] / equation2(BACKBONE_BPS, m['rtt_mean_s']):.2f}",
                "HTTP (kb/s)": f"{_kb(m['http_bps']):.0f}",
                "background (kb/s)": f"{_kb(m['background_bps']):.0f}",
            })  # fmt: skip
    return {
        "Table 2: capacity on the backbone (kb/s) per weight_REL, yellow dropped; model vs paper (ratio)": t2,
        "Table 3: throughput (kb/s), yellow dropped against case A (yellow to best effort); C2 dropped: Table 3's 284, "
        "where Table 2 has 384": t3,
        "Tables 4 and 5: WRED B1, B2, B3, none, case C (yellow in the Relative queue)": t4,
        "Section 5.1: the iterative method (iter), the static max_th grid and dynamic WRED from the same initial "
        "values (initial -> mean tuned (range) in the window; min_th and the share of max_th on the mean tuned); "
        "the document gives no numbers": t51,
    }


def relative_rate(weight_rel: int, weight_be: int, hp_bps: float, link_bps: float = BACKBONE_BPS, mtu: int = MTU) -> float:
    """The Relative queue's service rate r when both MDRR queues are
    backlogged: its quantum's share of what the strict queue leaves."""
    q_rel, q_be = mtu + (weight_rel - 1) * 512, mtu + (weight_be - 1) * 512
    return (link_bps - hp_bps) * q_rel / (q_rel + q_be)


GRADING = (
    f"Each finding holds if the model shows its direction and every number of the document it rests on is within a "
    f"factor of {DEFAULT_FACTOR:g} (unless the finding states its own tolerance); cells read \"model vs paper "
    "(×ratio)\", † outside the factor."
)


def report(
    measured: dict[str, dict[str, Any]], scenarios: dict[str, dict[str, Any]], *, quick: bool, wall_time_s: float
) -> Reproduction:
    mode = "quick (shortened timelines, one seed)" if quick else "full (HP traffic at 300 s, three seeds per Section 5.2 case)"
    return Reproduction.assemble(
        "bouras-relative", title=TITLE, mode=mode, quick=quick, measured=measured, scenarios=scenarios,
        findings=findings(measured), tables=tables(measured), grading=GRADING, wall_time_s=wall_time_s,
        plots=[("Fig. 3", "fig3_max_th.png"), ("Fig. 4", "fig4_static_dynamic.png"), ("Fig. 6", "fig6_relative_queue.png"), ("Tables 2-5 against the model", "tables2_5.png")],
        tail=[discussion(measured), "## Parameters the document leaves open", OPEN_PARAMETERS, INTERPRETATIONS],
        write_plots=lambda directory: write_plots(measured, directory),
        paper={"table2": PAPER_TABLE2, "table3": PAPER_TABLE3, "table4_5": PAPER_TABLE4, "hp_kbps": PAPER_HP_KBPS},
    )  # fmt: skip


def discussion(measured: dict[str, dict[str, Any]]) -> str:
    """What matches, what differs, and why; every number the model's, from
    ``measured``, or the document's, from its tables."""
    rates = {c: CUSTOMERS[c]["profile"][0] for c in CUSTOMERS}

    def shares(w: int) -> list[float]:
        m = m52(measured, f"w{w}")
        return [m["customers"][c] / rates[c] for c in CUSTOMERS]

    def span(values: list[float], fmt: str = "{:.0%}") -> str:
        lo, hi = fmt.format(min(values)), fmt.format(max(values))
        return lo if lo == hi else f"{lo}-{hi}"

    *full, short = WEIGHTS  # weights meeting equation 1, and the one that does not
    provisioned = [x for w in full for x in shares(w)]
    paper_provisioned = [PAPER_TABLE2[w][i + 1] * KBPS / rates[c] for w in full for i, c in enumerate(CUSTOMERS)]
    queues = [m52(measured, f"w{w}")["queue"] for w in full]
    q_be = MTU + (BE_WEIGHT - 1) * 512  # bytes per MDRR round (Cisco: MTU + (weight - 1) 512 B)
    round_s = q_be * 8 / BACKBONE_BPS
    m20, ma = m52(measured, f"w{full[1]}"), m52(measured, "A")
    arriving = sum(m20["customers"].values()) * round_s / (REL_PACKET * 8)
    gain = {c: _kb(ma["customers"][c] - m20["customers"][c]) for c in CUSTOMERS}
    paper_gain = {c: PAPER_TABLE3["A"][i + 1] - PAPER_TABLE3["drop"][i + 1] for i, c in enumerate(CUSTOMERS)}
    none = m52(measured, "none")
    wred = {b: m52(measured, b) for b in ("B1", "B2", "B3")}
    cut = [none["queue"][k][stat] / max(m["queue"][k][stat], 1e-9) for m in wred.values() for k in ("green", "yellow") for stat in ("mean", "max")]
    mc = m52(measured, "C")
    means = {b: m["queue"]["mean"] for b, m in wred.items()}
    lowest = min(means, key=means.get)
    b2_lowest, c_above = lowest == "B2", mc["queue"]["mean"] > means["B2"]
    if b2_lowest and c_above:
        order = "the model keeps that order (B2 lowest, C above it)"
    else:
        wrong = ([f"{lowest} comes out lowest ({means[lowest]:.1f} against B2's {means['B2']:.1f} packets)"] if not b2_lowest else []) \
            + ([f"C comes out at {mc['queue']['mean']:.1f}, not above B2's {means['B2']:.1f}"] if not c_above else [])
        order = "in the model " + " and ".join(wrong) + (", so that finding fails on its direction" if len(wrong) == 1
                                                          else ", so those two findings fail on their direction")
    md = ["## What matches, what differs, and why", ""]
    md.append(
        f"- **Provisioning by equation 1 (Table 2)**: at weight_REL {full[0]} and {full[1]} every customer gets {span(provisioned)} "
        f"of its contract (the document: {span(paper_provisioned)}); at weight {short} the customers get {span(shares(short))}. "
        f"The best-effort weight was inferred from that weight-{short} row (the saturated queue gets exactly its MDRR "
        f"share), so weight {short}'s total is close to the document's by construction; the split among the customers is "
        f"not. The Relative queue's mean is {span([q['mean'] for q in queues], '{:.1f}')} packets, its maximum "
        f"{span([q['max'] for q in queues], '{:.0f}')}: MDRR serves best effort a quantum of {q_be / 1e3:.1f} KB "
        f"({round_s * 1e3:.0f} ms of the link) per round, during which some {arriving:.0f} Relative packets of "
        f"{REL_PACKET} B arrive (at weight {full[1]}'s Relative rate)."
    )
    md.append(
        "- **Case A (Table 3)**: yellow packets sent to best effort change the customers' throughput by "
        + ", ".join(f"{c} {gain[c]:+.0f} kb/s" for c in CUSTOMERS)
        + " (the document: " + ", ".join(f"{c} {paper_gain[c]:+d}" for c in CUSTOMERS) + "), and best effort's by "
        f"{_kb(ma['background_bps'] - m20['background_bps']):+.0f} kb/s (the document: {PAPER_TABLE3['A'][0] - PAPER_TABLE3['drop'][0]:+d}). "
        "In the model best effort's long TCP transfers keep its queue long, so a yellow packet there meets a long "
        f"queue (best effort's mean queue in case A: {ma['be_queue_mean']:.0f} packets)."
    )
    md.append(
        f"- **WRED (Tables 4 and 5)** divides the Relative queue's mean and maximum (green and yellow) of no WRED "
        f"by {span(cut, '{:.1f}')} across B1-B3. Without WRED the model's Relative queue averages "
        f"{none['queue']['green']['mean']:.0f} green packets (the document: {PAPER_TABLE4['none'][4]}): the TCP sources "
        "fill whatever buffer they get, and the document does not give its buffer. The document's ordering among "
        f"B1, B2, B3 and C (B2 lowest, C above B2) is a matter of a few packets; {order}."
    )
    iters = [m for _, m in runs51(measured, "iter") if m["max_th"] is not None]
    grid = [m for _, m in runs51(measured, "grid")]
    if iters:
        ratios = [eq3_ratio(m) for m in iters]
        later = f", {span(ratios[1:], '{:.2f}')} after it" if len(ratios) > 1 else ""
        within = [i for i, r in enumerate(ratios) if EQ3_BAND[0] <= r <= EQ3_BAND[1]]
        steps = [str(i) for i in within]
        where = "at no step" if not within else "at every step" if len(within) == len(ratios) else \
            f"only at step {steps[0]}" if len(steps) == 1 else "only at steps " + ", ".join(steps[:-1]) + f" and {steps[-1]}"
        low = [m["http_bps"] for m in grid if m["max_th"] < PAPER_DEGRADE_BELOW]
        high = [m["http_bps"] for m in grid if HTTP_REFERENCE_MAX_TH[0] <= m["max_th"] <= HTTP_REFERENCE_MAX_TH[1]]
        loss = 1 - np.mean(low) / np.mean(high) if low and high else math.nan
        md.append(
            f"- **Section 5.1**: along the iterative method the mean queue is {ratios[0]:.2f} of max_th at the first step"
            f"{later} (max_th {iters[-1]['max_th']:.0f} packets at the last): equation 3's {EQ3_BAND[0]:g}-{EQ3_BAND[1]:g} is met {where}. On "
            f"the static grid the share goes from {eq3_ratio(grid[0]):.2f} at max_th {grid[0]['max_th']:g} to "
            f"{eq3_ratio(grid[-1]):.2f} at {grid[-1]['max_th']:g}, and the distribution moves left as max_th falls, as "
            f"the document's Fig. 3a shows. The HTTP users (closed-loop, heavy-tailed pages) lose {loss:.0%} below max_th "
            f"{PAPER_DEGRADE_BELOW} against {HTTP_REFERENCE_MAX_TH[0]}-{HTTP_REFERENCE_MAX_TH[1]}, where the document saw a "
            "serious degradation. The document does "
            "not describe its HTTP model; with most pages a few segments long, a page here rarely meets a drop."
        )
    dynamic = [m for _, m in runs51(measured, "dynamic")]
    if dynamic and grid:
        dq, sq = [m["queue"]["mean"] for m in dynamic], [m["queue"]["mean"] for m in grid]
        same = max(dq) == min(dq)
        md.append(
            "- **Static against dynamic WRED (Fig. 4)**: the `wred_rtt_tuning` agent sets max_th from the TCP "
            "traffic's RTT samples from its first interval on, before the queue has first built up, so the initial "
            "max_th is soon forgotten: the dynamic mean queue is "
            + (f"{dq[0]:.1f} packets from every initial value (the same run, packet for packet)" if same
               else f"{min(dq):.1f}-{max(dq):.1f} packets across the initial values")
            + f", where the static one goes from {min(sq):.1f} to {max(sq):.1f}. The document's dynamic curve still "
            "varied a little, which would need a slower first re-tuning than its interval suggests."
        )
    return "\n".join(md)


OPEN_PARAMETERS = doc_section(__doc__, "What the document leaves open, and the choices made (also in the report):")


# --- plots ----------------------------------------------------------------------------


def write_plots(measured: dict[str, dict[str, Any]], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    return [save_figure(fig3(measured), directory / "fig3_max_th.png"), save_figure(fig4(measured), directory / "fig4_static_dynamic.png"),
            save_figure(fig6(measured), directory / "fig6_relative_queue.png"),
            save_figure(fig_tables(measured), directory / "tables2_5.png")]


def _paired_bars(axes: Any, groups: list[str], model: list[float], paper: list[float], title: str, ylabel: str) -> None:
    """The model's value beside the document's for each group."""
    x = np.arange(len(groups))
    axes.bar(x - 0.2, model, 0.4, label="model")
    axes.bar(x + 0.2, paper, 0.4, label="document", hatch="//", alpha=0.6)
    axes.set_xticks(x, groups, fontsize="x-small", rotation=45, ha="right")
    axes.set(title=title, ylabel=ylabel)
    axes.grid(True, axis="y", alpha=0.3)


def fig_tables(measured: dict[str, dict[str, Any]]) -> Any:
    """Tables 2-5 against the model: the customers' throughput per
    weight_REL (Table 2), yellow dropped against case A (Table 3), per WRED
    case (Table 4), and the Relative queue and maximum RTT per case (Table 5)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 8), layout="constrained")
    t2, t3, t4, t5 = fig.subplots(2, 2).flat
    names = list(CUSTOMERS)
    groups = [f"w{w} {c}" for w in WEIGHTS for c in names]
    _paired_bars(t2, groups, [_kb(m52(measured, f"w{w}")["customers"][c]) for w in WEIGHTS for c in names],
                 [PAPER_TABLE2[w][i + 1] for w in WEIGHTS for i in range(len(names))], "Table 2: capacity per weight_REL", "kb/s")
    cases3 = (("drop", "w20"), ("A", "A"))
    _paired_bars(t3, [f"{k} {c}" for k, _ in cases3 for c in names],
                 [_kb(m52(measured, cfg)["customers"][c]) for _, cfg in cases3 for c in names],
                 [PAPER_TABLE3[k][i + 1] for k, _ in cases3 for i in range(len(names))], "Table 3: yellow dropped / to best effort", "kb/s")
    cases = ("B1", "B2", "B3", "none", "C")
    ms = {b: m52(measured, b) for b in cases}
    _paired_bars(t4, [f"{b} {c}" for b in cases for c in names], [_kb(ms[b]["customers"][c]) for b in cases for c in names],
                 [PAPER_TABLE4[b][i + 1] for b in cases for i in range(len(names))], "Table 4: throughput per WRED case", "kb/s")
    _paired_bars(t5, [f"{b} {k}" for b in cases for k in ("green", "yellow")],
                 [ms[b]["queue"][k]["mean"] for b in cases for k in ("green", "yellow")],
                 [PAPER_TABLE4[b][4 + 2 * j] for b in cases for j in range(2)], "Table 5: mean Relative queue", "packets")
    t2.legend(fontsize="small")
    return fig


def fig4(measured: dict[str, dict[str, Any]]) -> Any:
    """Fig. 4: mean queue and HTTP throughput per (initial) max_th, static
    against dynamic WRED."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.2), layout="constrained")
    queue, http = fig.subplots(1, 2)
    for kind, label, marker in (("grid", "static", "o-"), ("dynamic", "dynamic (initial max_th)", "s-")):
        runs = runs51(measured, kind)
        if not runs:
            continue
        xs = [m["max_th"] for _, m in runs]
        queue.plot(xs, [m["queue"]["mean"] for _, m in runs], marker, label=label)
        http.plot(xs, [m["http_bps"] / 1e6 for _, m in runs], marker, label=label)
    queue.set(title="Mean queue (Fig. 4)", xlabel="max_th (packets)", ylabel="packets", ylim=(0, None))
    http.set(title="HTTP throughput (Fig. 4)", xlabel="max_th (packets)", ylabel="Mb/s", ylim=(0, None))
    for axes in (queue, http):
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    return fig


def _cdf(hist: list[float]) -> tuple[np.ndarray, np.ndarray]:
    h = np.asarray(hist, dtype=float)
    return np.arange(len(h)), np.cumsum(h) / max(h.sum(), 1)


def fig3(measured: dict[str, dict[str, Any]]) -> Any:
    """Fig. 3a: queue-size distribution per max_th; Fig. 3b: mean queue as
    a share of max_th; and the HTTP throughput per max_th."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4.2), layout="constrained")
    dist, share, http = fig.subplots(1, 3)
    for _, m in runs51(measured, "grid"):
        x, y = _cdf(m["queue"]["hist"])
        dist.plot(x, y, label=f"max_th {m['max_th']:g}")
    dist.set(title="Queue-size distribution (Fig. 3a)", xlabel="queue (packets)", ylabel="P(queue ≤ x)", xlim=(0, 200))
    dist.legend(fontsize="small")
    for kind, marker in (("grid", "o"), ("iter", "s")):
        pts = [(m["max_th"], m["queue"]["mean"] / m["max_th"], m["http_bps"]) for _, m in runs51(measured, kind) if m["max_th"] is not None]
        if pts:
            xs, ys, hs = zip(*sorted(pts), strict=True)
            share.plot(xs, ys, marker + "-", label=kind)
            http.plot(xs, np.array(hs) / 1e6, marker + "-", label=kind)
    share.axhspan(0.2, 0.25, alpha=0.15, color="green", label="0.2-0.25")
    share.set(title="Mean queue / max_th (Fig. 3b)", xlabel="max_th (packets)", ylabel="share")
    http.axvline(PAPER_DEGRADE_BELOW, linestyle=":", color="grey")
    http.set(title="HTTP throughput", xlabel="max_th (packets)", ylabel="Mb/s", ylim=(0, None))
    for axes in (dist, share, http):
        axes.grid(True, alpha=0.3)
    share.legend(fontsize="small")
    http.legend(fontsize="small")
    return fig


def fig6(measured: dict[str, dict[str, Any]]) -> Any:
    """Fig. 6: the Relative queue's size distribution per weight_REL."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.2), layout="constrained")
    axes = fig.subplots()
    for w in WEIGHTS:
        x, y = _cdf(m52(measured, f"w{w}")["queue"]["hist"])
        axes.plot(x, y, label=f"weight_REL {w}")
    axes.axvline(10, linestyle=":", color="grey")
    axes.set(title="Relative queue size (Fig. 6)", xlabel="packets", ylabel="P(queue ≤ x)", xscale="symlog")
    axes.grid(True, alpha=0.3)
    axes.legend()
    return fig


