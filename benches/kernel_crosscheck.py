"""The real kernel as the judge of the engine's TCP (issue 21).

Each case runs the same path twice: in the simulator, once per host
profile of :data:`PROFILES`, and with this machine's Linux TCP (CUBIC,
RACK-TLP, PRR, as the running kernel has them) between network
namespaces through ``alphaqos emulate`` (:func:`alphaqos.emulate.bench`,
:class:`alphaqos.emulate.Emulator`, iperf3 as
:mod:`alphaqos.reproduce.zurawski` runs it). Reported side by side, the
kernel = 1: goodput, retransmissions and the time-sequence (bytes
delivered at the receiver: the simulator's every 100 ms, iperf3's server
intervals). The hosts' interfaces into the
emulator send without TSO/GSO/GRO (:func:`alphaqos.emulate.wire_like`),
so every simulated profile is run with ``gro: false``, and all but the
``linux-6`` ones with ``tso: 0`` (:data:`HOST_GSO`: Linux 6's TCP builds
GSO frames all the same).

Flows of different RTTs (case ``two-rtts``): in the simulator each flow
has a sender of its own (``snd``, ``snd1``), the further one on a host
link with the extra delay; in the kernel's run the sender namespace has
one address per flow (:meth:`alphaqos.emulate.Bench.add_sender`), one
iperf3 client and server pair per flow, and the emulator delays the
packets of the further address both ways before the shared path
(``flow_delays``). Reported per flow, and the short-RTT flow's goodput
over the long one's (RTT unfairness) against the kernel's.

The unpaced reference (``--unpaced``, source ``kernel-unpaced``): the
same path once more with a kernel sender that does not pace (Reno from the
socket's creation, :data:`UNPACED_CC`), against ``linux-6`` run with the
same controller (:data:`UNPACED_PROFILES`): the profile as the scenarios
run it by default, unpaced, has its own reference there.

Usage: ``kernel_crosscheck.py [--cases a,b] [--seconds S] [--out DIR] [--unpaced]``
(root; ``make bench`` runs every case). Writes ``DIR/results.json``, one
plot per case (``DIR/CASE.png``) and prints the table that
``docs/kernel-crosscheck.md`` carries.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: The simulated host profiles. "linux-6" is the engine's Linux 6 profile
#: (``tcp/linux6.rs``: RACK-TLP, PRR, TSO autosizing and TSQ from the
#: unpaced pacing rate, no pacing); "near-linux-6" is the combination of
#: single options that stood in for it before (CUBIC, SACK, D-SACK and
#: undo, the adaptive reordering metric, RACK and pacing) on the
#: ``default`` profile (named: the front's default is ``linux-6`` now),
#: kept because it shows what pacing does to the policer and scavenger cases.
#: "linux-6-paced" is the kernel's sender as this bench runs it: iperf3
#: 3.12 sets ``-C cubic`` after connect(), when the system default (bbr
#: here) has already run ``bbr_init``, which sets the socket's
#: ``sk_pacing_status`` to SK_PACING_NEEDED, so its CUBIC paces (a trace
#: shows a third of its skbs sent by the pacing timer, ``tcp_pace_kick``),
#: frame by frame (docs/kernel-crosscheck.md, session 12).
PROFILES: dict[str, dict[str, Any]] = {
    "default": {"host_profile": "default"},
    "linux-2.6.33": {"host_profile": "linux-2.6.33"},
    "near-linux-6": {"host_profile": "default", "sack": True, "rack": True, "pacing": True, "dsack": True, "undo": True, "adaptive_reordering": True},
    "linux-6": {"host_profile": "linux-6"},
    "linux-6-paced": {"host_profile": "linux-6", "pacing": True},
}
#: The unpaced kernel reference (source ``kernel-unpaced``, ``--unpaced``):
#: the sender namespace's default congestion control is set to Reno, so the
#: socket is created with it and no controller that asks for pacing (bbr,
#: this machine's default) ever runs on it; iperf3's ``-C reno`` after
#: connect() then changes nothing. A trace of this kernel shows such a
#: socket sending from ACK processing only, never from the pacing timer
#: (docs/kernel-crosscheck.md, sessions 12 and 13). Compared with these
#: profiles run with the same controller.
UNPACED_CC = "reno"
UNPACED_PROFILES: dict[str, dict[str, Any]] = {"linux-6": {"host_profile": "linux-6", "cc": UNPACED_CC}}
#: As the emulated hosts send and receive (wire_like: no offloads).
HOST = {"tso": "0B", "gro": False}
#: The same for the ``linux-6`` profiles: TSO frames stay on, because Linux
#: TCP builds GSO skbs whatever the device offers (``sk_setup_caps`` sets
#: NETIF_F_GSO on every TCP socket: "tcp: switch to GSO being always on",
#: 2018) and the device without TSO/GSO segments them in software, back to
#: back: a trace of this bench's kernel sender shows skbs of
#: ``tcp_tso_autosize``'s goal, ~1 ms of the pacing rate
#: (docs/kernel-crosscheck.md, session 12).
HOST_GSO = {"gro": False}
#: The simulator's receive window: the kernel's hosts' socket buffers go up
#: to 32 MB (zurawski's TCP_MEM, set by its _socket_buffers).
RWND = "32MiB"
TARGET = 0.15
SND, RCV = "10.10.200.20", "10.10.200.10"


def sender_ip(i: int) -> str:
    """Flow ``i``'s sender address in a case of several RTTs (flow 0: :data:`SND`)."""
    return f"10.10.200.{20 + i}"


def case_spec(name: str, seconds: float) -> dict[str, Any]:
    """The case's path (rate, RTT, bottleneck queue, router policy) and its flows."""
    bdp = lambda rate, rtt: int(rate / 8 * rtt)  # noqa: E731  bytes
    if name == "droptail":
        rate, rtt = 50_000_000, 0.020
        return {"rate": rate, "rtt": rtt, "queue": {"fifo": {"limit": f"{bdp(rate, rtt)}B"}}, "seconds": seconds}
    if name in ("policer", "policer-htb"):
        rate, rtt = 200_000_000, 0.020
        police = 100_000_000
        return {"rate": rate, "rtt": rtt, "queue": {"fifo": {"limit": f"{bdp(rate, rtt)}B"}}, "seconds": seconds,
                "policy": {"classes": {"be": {"transmit_rate": "100%", "buffer_size": "100%"}},
                           "filter": [{"name": "circuit", "from": {"source": f"{SND}/32"},
                                       "then": {"policer": {"rate": f"{police}bps", "burst": "31KB", "out_of_profile": "discard"}}}]},
                "shape": (police, 90.0, 31_000) if name == "policer-htb" else None}  # fmt: skip
    if name == "scavenger":
        rate, rtt = 100_000_000, 0.020
        return {"rate": rate, "rtt": rtt, "seconds": seconds, "queue": {"policy": "wr"},
                "policy": {"buffer": f"{2 * bdp(rate, rtt)}B", "excess": "proportional",
                           "classes": {"alpha": {"transmit_rate": "95%", "buffer_size": "80%", "priority": "medium-high"},
                                       "scavenger": {"transmit_rate": "5%", "buffer_size": "20%", "priority": "low"}},
                           "filter": [{"name": "alpha", "from": {"source": f"{SND}/32"},
                                       "then": {"class": "alpha", "policer": {"rate": "60Mbps", "burst": "31KB",
                                                                              "out_of_profile": {"class": "scavenger"}}}}]}}  # fmt: skip
    if name == "red":
        rate, rtt = 100_000_000, 0.020
        return {"rate": rate, "rtt": rtt, "seconds": seconds,
                "queue": {"red": {"limit": f"{2 * bdp(rate, rtt)}B", "min_th": 20, "max_th": 120, "max_p": 0.1}}}  # fmt: skip
    if name == "twoflows":
        rate, rtt = 100_000_000, 0.020
        return {"rate": rate, "rtt": rtt, "seconds": seconds, "flows": 2, "queue": {"fifo": {"limit": f"{bdp(rate, rtt)}B"}}}
    if name == "two-rtts":
        # Flow 0 at 10 ms, flow 1 at 40 ms (its sender 15 ms further away
        # each way); the FIFO one BDP at the mean RTT, 25 ms.
        rate, rtts = 100_000_000, (0.010, 0.040)
        return {"rate": rate, "rtt": rtts[0], "rtts": rtts, "seconds": seconds, "flows": len(rtts),
                "queue": {"fifo": {"limit": f"{bdp(rate, sum(rtts) / len(rtts))}B"}}}  # fmt: skip
    raise SystemExit(f"kernel_crosscheck: unknown case {name!r} (cases: {', '.join(CASES)})")


CASES = ("droptail", "policer", "policer-htb", "twoflows", "two-rtts", "scavenger", "red")


def scenario(spec: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    """The path snd - rtr - rcv: a 1 Gbit/s host link (the sender's HTB
    class if the case shapes), the bottleneck at ``rtr`` with the RTT's
    delay. A case of several RTTs (``rtts``) has one sender per flow,
    ``snd``, ``snd1`` ..., each on a host link whose delay makes up its RTT."""
    rtr: dict[str, Any] = {"router": True}
    sc: dict[str, Any] = {"name": "kernel-crosscheck", "duration": f"{spec['seconds']:g}s", "seed": 1, "metric_interval": "100ms"}
    if "policy" in spec:
        rtr["policy"] = "wr"
        sc["policies"] = {"wr": spec["policy"]}
    host_link: dict[str, Any] = {"between": ["snd", "rtr"], "rate": "1Gbps", "delay": "0.01ms"}
    if spec.get("shape"):
        plan = shape_plan(spec, None)
        host_link["queues"] = {"snd": {"htb": {
            "classes": {"1:10": {"rate": f"{plan.rate_bps}bps", "burst": f"{plan.burst_bytes}B", "cburst": f"{plan.burst_bytes}B"},
                        "1:20": {"rate": "1Gbps"}},
            "filters": [{"src": f"{SND}/32", "class": "1:10"}], "default": "1:20"}}}  # fmt: skip
    host = HOST_GSO if profile.get("host_profile") == "linux-6" else HOST
    tcp = {"from": "snd", "to": "rcv", "cc": "cubic", "rwnd": RWND, **host, **profile}
    nodes: dict[str, Any] = {"snd": {"address": SND}, "rtr": rtr, "rcv": {"address": RCV}}
    links = [host_link, {"between": ["rtr", "rcv"], "rate": f"{spec['rate']}bps", "delay": f"{spec['rtt'] / 2 * 1e3:g}ms",
                         "queues": {"rtr": spec["queue"]}}]  # fmt: skip
    flows = [{"name": f"f{i}", "tcp": tcp} for i in range(spec.get("flows", 1))]
    for i, extra_s in enumerate(access_delays(spec)[1:], start=1):
        nodes[f"snd{i}"] = {"address": sender_ip(i)}
        links.append({"between": [f"snd{i}", "rtr"], "rate": "1Gbps", "delay": f"{(0.01e-3 + extra_s) * 1e3:g}ms"})
        flows[i]["tcp"] = {**tcp, "from": f"snd{i}"}
    sc |= {"nodes": nodes, "links": links, "flows": flows}
    return sc


def access_delays(spec: dict[str, Any]) -> list[float]:
    """Per flow of a case of several RTTs: the one-way delay (s) its sender
    is further away than flow 0's (``[]`` for the other cases)."""
    rtts = spec.get("rtts") or ()
    return [(r - spec["rtt"]) / 2 for r in rtts]


def shape_plan(spec: dict[str, Any], netns: str | None):
    """The class ``alphaqos shape`` applies: ``share`` % of the policer's rate, the burst bounded by its bucket."""
    from alphaqos.provision.shape import parse_match, plan_shape

    rate, share, bucket = spec["shape"]
    return plan_shape("s0", rate, share, match=parse_match(f"src={SND}/32"), policer_burst=bucket, netns_name=netns, gso_max_segs=None)


def path_counters(tables: dict[str, Any]) -> dict[str, Any]:
    """What the path did to the flow's packets, the same in both runs (the
    emulator runs the engine's queues and policers): per queue of the
    router's links, packets enqueued and dropped; per filter term, packets
    out of profile. Where the sender's bursts meet the policer, these show
    them (issue 21: the policer and scavenger cases)."""

    def cols(t: Any) -> dict[str, list]:
        return t if isinstance(t, dict) else (t.to_dict(as_series=False) if t is not None else {})

    q, f = cols(tables.get("queue_summary")), cols(tables.get("filter"))
    queues = {name: {"enq_pkts": e, "drop_pkts": d} for name, e, d in zip(q.get("queue", []), q.get("enq_pkts", []), q.get("drop_pkts", []))
              if name.startswith("rtr->")}  # fmt: skip
    terms = {term: {"matched_pkts": m, "out_of_profile_pkts": o} for term, m, o in zip(f.get("term", []), f.get("matched_pkts", []), f.get("out_of_profile_pkts", []))}
    return {"queues": queues, "filter": terms}


def simulated(spec: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    """Goodput (bit/s, bytes acked over the run), retransmissions and bytes
    acked every 100 ms (summed over the flows); each flow's goodput in
    ``flow_bps`` (f0, f1 ...); the path's counters (:func:`path_counters`)."""
    import alphaqos

    tables = alphaqos.run(scenario(spec, profile)).tables()
    tcp = tables["tcp"].sort("time")
    per_t: dict[float, int] = {}
    retx = recoveries = 0
    flow_bps = []
    for flow in sorted(tcp["flow"].unique()):
        rows = tcp.filter(tcp["flow"] == flow)
        for t, b in zip(rows["time"], rows["bytes_acked"]):
            per_t[round(t, 3)] = per_t.get(round(t, 3), 0) + int(b)
        retx += int(rows["retransmits"].max())
        recoveries += int(rows["fast_retransmits"].max())
        flow_bps.append(8 * int(rows["bytes_acked"].max()) / spec["seconds"])
    times = sorted(per_t)
    acked = [per_t[t] for t in times]
    return {"goodput_bps": 8 * acked[-1] / spec["seconds"], "retransmits": retx, "recoveries": recoveries, "time": times, "bytes": acked, "flow_bps": flow_bps,
            "path": path_counters(tables)}  # fmt: skip


#: The sender's TCP counters (``nstat``, the namespace's own MIB) kept with
#: each kernel run: how its slow starts ended and how many recoveries it
#: made, to set beside the engine's (``fast_retransmits``).
COUNTERS = ("TcpExtTCPSackRecovery", "TcpExtTCPLostRetransmit", "TcpExtTCPLossProbes", "TcpExtTCPTimeouts",
            "TcpExtTCPHystartTrainDetect", "TcpExtTCPHystartTrainCwnd", "TcpExtTCPHystartDelayDetect",
            "TcpExtTCPHystartDelayCwnd", "TcpExtTCPSackRecoveryFail", "TcpExtTCPFullUndo", "TcpExtTCPPartialUndo",
            "TcpExtTCPDSACKUndo")  # fmt: skip


def parse_nstat(text: str) -> dict[str, int]:
    """``nstat -az``'s lines (name, value, rate) to the :data:`COUNTERS`, 0
    for those it does not list."""
    seen = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in COUNTERS and parts[1].isdigit():
            seen[parts[0]] = int(parts[1])
    return {name: seen.get(name, 0) for name in COUNTERS}


def kernel(spec: dict[str, Any], cc: str = "cubic", netns_default: bool = False) -> dict[str, Any]:
    """The same path with real TCP: namespaces, the emulator, iperf3
    (``-P`` flows; in a case of several RTTs one client per flow, each
    from its own address, which the emulator delays by its access delay),
    everything removed after, also on failure. The sender's congestion
    control ``cc`` is set by iperf3 after connect(); with ``netns_default``
    it is the sender namespace's default too, so the socket has it from
    its creation (:data:`UNPACED_CC`)."""
    from alphaqos.emulate import Emulator, EmuError, bench, emu_config, timing, wait_for
    from alphaqos.provision.shape import apply
    from alphaqos.reproduce.zurawski import _end, _iperf_report, _listening, _server_done, _socket_buffers, _spawn
    from alphaqos.scenario import load_scenario, resolve

    engine = resolve(load_scenario(scenario({**spec, "shape": None, "rtts": None}, {})))  # the shaping is the host's own here
    delays = access_delays(spec)
    # (source address, server port, parallel streams) per iperf3 client.
    clients = [(sender_ip(i), 5201 + i, 1) for i in range(len(delays))] or [(SND, 5201, spec.get("flows", 1))]
    flow_delays = [({"src": f"{sender_ip(i)}/32"}, round(d * 1e9)) for i, d in enumerate(delays) if d > 0]
    procs: list[subprocess.Popen] = []
    load0 = os.getloadavg()[0]
    with bench("aqkx") as b:
        try:
            _socket_buffers(b)
            if netns_default:
                b.run(b.snd, "sysctl", "-qw", f"net.ipv4.tcp_congestion_control={cc}", check=True)
            for ip, _, _ in clients[1:]:
                b.add_sender(ip)
            if spec.get("shape"):
                apply(shape_plan(spec, b.snd))
            # The sender's host link is the veth itself: the path the emulator runs starts at rtr.
            config = emu_config(engine, ["snd", "rtr", "rcv"], b.ifaces, lag_ns=2_000_000, flow_delays=flow_delays)
            with Emulator(config) as emu:
                servers = [_spawn(procs, b.rcv, "iperf3", "-s", "-1", "-B", b.rcv_ip, "-p", str(port), "-J", "-i", "0.1") for _, port, _ in clients]
                if not wait_for(lambda: all(_listening(b, port) for _, port, _ in clients), 10):
                    raise EmuError("iperf3 -s did not start listening in the receiver's namespace")
                running = [_spawn(procs, b.snd, "iperf3", "-c", b.rcv_ip, "-p", str(port), "-B", ip, "-t", f"{spec['seconds']:g}",
                                  "-i", "0.1", "-J", "-C", cc, "-P", str(n), "--get-server-output")
                           for ip, port, n in clients]  # fmt: skip
                done = []
                for proc in running:
                    try:
                        out, err = proc.communicate(timeout=spec["seconds"] + 60)
                    except subprocess.TimeoutExpired:
                        raise EmuError(f"iperf3 -c did not finish within {spec['seconds'] + 60:g} s") from None
                    done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
                tables = emu.stop()
            nstat = b.run(b.snd, "nstat", "-az")
            counters = parse_nstat(nstat.stdout) if nstat.returncode == 0 else None
            for server, c in zip(servers, done):
                _server_done(server, c)
        finally:
            _end(procs)
    reports = [_iperf_report(c) for c in done]
    # Per client: (interval end, bytes received so far), its server's intervals; summed interval by interval.
    series = []
    for report in reports:
        server_intervals = (report.get("server_output_json") or {}).get("intervals") or report["intervals"]
        ends = [round(iv["sum"]["end"], 3) for iv in server_intervals]
        series.append(list(zip(ends, itertools.accumulate(int(iv["sum"]["bytes"]) for iv in server_intervals))))
    n = max(len(x) for x in series)
    per_t = {j: (max(x[min(j, len(x) - 1)][0] for x in series), sum(x[min(j, len(x) - 1)][1] for x in series)) for j in range(n)}
    flow_bps = [8 * r["end"]["sum_received"]["bytes"] / spec["seconds"] for r in reports]
    held = timing(tables)
    return {
        "goodput_bps": sum(flow_bps),
        "retransmits": sum(int(r["end"]["sum_sent"].get("retransmits", 0)) for r in reports),
        "time": [per_t[j][0] for j in sorted(per_t)], "bytes": [per_t[j][1] for j in sorted(per_t)],
        "flow_bps": flow_bps if len(reports) > 1 else None,
        "delay_error_p99_s": max((t["delay_error_p99_s"] or 0.0) for t in held),
        "load_avg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)],
        "path": path_counters(tables),
        "counters": counters,
    }  # fmt: skip


def at(series: dict[str, Any], t: float) -> int:
    """Bytes delivered by time ``t`` (the last sample at or before it; iperf3's
    intervals end a few ms after their nominal time, taken as at it)."""
    out = 0
    for ts, b in zip(series["time"], series["bytes"]):
        if ts > t + 0.05:
            break
        out = b
    return out


def seq_error(k: dict[str, Any], s: dict[str, Any], seconds: float) -> float:
    """The time-sequence's largest gap, simulator against kernel, each
    whole second from 2 s to the last but one (iperf3's server intervals
    end up to a second before the run does), as a share of the kernel's
    bytes then."""
    gaps = [abs(at(s, t) - at(k, t)) / max(1, at(k, t)) for t in range(2, int(seconds))]
    return max(gaps) if gaps else float("nan")


def combine(runs: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Several kernel runs of one case as one reference: goodput and
    retransmissions their medians, with each one's range over the runs
    (``spread``); the time-sequence the median of the runs' bytes at each
    0.1 s; ``spread["seq"]`` the largest gap of any run from that median
    (:func:`seq_error`), the kernel's own time-sequence spread; per-flow
    goodput and the path's counters those of the run whose goodput is the
    median's nearest. One run is returned as it is."""
    if len(runs) == 1:
        return runs[0]
    median = statistics.median
    times = [round(0.1 * i, 3) for i in range(1, int(round(seconds * 10)) + 1)]
    goodput = median([r["goodput_bps"] for r in runs])
    k = dict(min(runs, key=lambda r: abs(r["goodput_bps"] - goodput)))
    k["goodput_bps"] = goodput
    k["retransmits"] = median([r["retransmits"] for r in runs])
    k["time"] = times
    k["bytes"] = [median([at(r, t) for r in runs]) for t in times]
    k["delay_error_p99_s"] = max(r["delay_error_p99_s"] for r in runs)
    k["load_avg_1min"] = [runs[0]["load_avg_1min"][0], runs[-1]["load_avg_1min"][-1]]
    k["runs"] = [{"goodput_bps": r["goodput_bps"], "retransmits": r["retransmits"], "seq_gap": seq_error(k, r, seconds),
                  "counters": r.get("counters")} for r in runs]  # fmt: skip
    k["spread"] = {
        "goodput_bps": [min(r["goodput_bps"] for r in runs), max(r["goodput_bps"] for r in runs)],
        "retransmits": [min(r["retransmits"] for r in runs), max(r["retransmits"] for r in runs)],
        "seq": max(x["seq_gap"] for x in k["runs"]),
    }
    return k


def verdict(s: dict[str, Any], k: dict[str, Any], key: str, ratio: float | None) -> str:
    """Within :data:`TARGET` of the kernel's (median) figure, else inside
    the kernel's own range over its runs, else by how much it misses."""
    if ratio is not None and abs(ratio - 1) <= TARGET:
        return "yes"
    lo, hi = (k.get("spread") or {}).get(key, (None, None))
    if lo is not None and lo <= s[key] <= hi:
        return "in kernel range"
    return "no" if ratio is None else f"no ({abs(ratio - 1) * 100 - TARGET * 100:.1f} pts over)"


def compare(spec: dict[str, Any], k: dict[str, Any], profiles: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each profile's simulated run against the kernel's ``k``: ratios, the time-sequence gap, the target."""
    if k.get("flow_bps"):
        k["unfairness"] = k["flow_bps"][0] / max(k["flow_bps"][-1], 1.0)
    out = {}
    for prof, opts in profiles.items():
        s = simulated(spec, opts)
        s["goodput_ratio"] = s["goodput_bps"] / k["goodput_bps"]
        s["retx_ratio"] = s["retransmits"] / k["retransmits"] if k["retransmits"] else None
        s["seq_max_error"] = seq_error(k, s, spec["seconds"])
        s["goodput_verdict"] = verdict(s, k, "goodput_bps", s["goodput_ratio"])
        s["retx_verdict"] = verdict(s, k, "retransmits", s["retx_ratio"])
        if k.get("flow_bps"):
            # RTT unfairness: the short-RTT flow's goodput over the long one's, against the kernel's.
            s["flow_ratio"] = [b / kb for b, kb in zip(s["flow_bps"], k["flow_bps"])]
            s["unfairness"] = s["flow_bps"][0] / max(s["flow_bps"][-1], 1.0)
            s["unfairness_ratio"] = s["unfairness"] / k["unfairness"]
        out[prof] = s
    return out


def run_case(name: str, seconds: float, unpaced: bool = False, repeat: int = 1) -> dict[str, Any]:
    """The kernel (iperf3's CUBIC) against :data:`PROFILES`; with
    ``unpaced`` also the unpaced kernel (``kernel-unpaced``,
    :data:`UNPACED_CC`) against :data:`UNPACED_PROFILES` (``sim-unpaced``).
    Each kernel reference is ``repeat`` runs (:func:`combine`): the
    simulator is deterministic, the kernel is not."""
    spec = case_spec(name, seconds)
    ref = combine([kernel(spec) for _ in range(repeat)], seconds)
    out: dict[str, Any] = {"case": name, "spec": {k: v for k, v in spec.items() if k != "policy"}, "kernel": ref}
    out["sim"] = compare(spec, out["kernel"], PROFILES)
    if unpaced:
        out["kernel-unpaced"] = combine([kernel(spec, UNPACED_CC, netns_default=True) for _ in range(repeat)], seconds)
        out["sim-unpaced"] = compare(spec, out["kernel-unpaced"], UNPACED_PROFILES)
    return out


def sources(result: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(kernel source, its run, the simulated runs against it) of a case's result."""
    out = [("kernel", result["kernel"], result["sim"])]
    if "kernel-unpaced" in result:
        out.append(("kernel-unpaced", result["kernel-unpaced"], result["sim-unpaced"]))
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4))
    for src, k, sims in sources(result):
        unpaced = src != "kernel"
        runs = f", median of {len(k['runs'])} runs" if k.get("runs") else ""
        ax.plot(k["time"], [b / 1e6 for b in k["bytes"]], "k:" if unpaced else "k-", lw=2, label=f"{src} (Linux 6.18{', ' + UNPACED_CC if unpaced else ''}{runs})")
        for prof, s in sims.items():
            ax.plot(s["time"], [b / 1e6 for b in s["bytes"]], ":" if unpaced else "-", lw=1,
                    label=f"sim {prof}{' ' + UNPACED_CC if unpaced else ''} (x{s['goodput_ratio']:.2f})")  # fmt: skip
    ax.set(xlabel="time (s)", ylabel="bytes delivered (MB)", title=f"kernel cross-check: {result['case']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def table(results: list[dict[str, Any]]) -> str:
    """Goodput, retransmissions and the time-sequence against the kernel's;
    a kernel of several runs shows its medians with their ranges and its own
    time-sequence spread (:func:`combine`). Verdicts: within 15 %, else
    inside the kernel's range, else by how much not."""
    lines = ["| case | source | goodput Mbit/s | ratio | goodput within | retx | retx ratio | retx within | time-seq max gap |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r, (src, k, sims) in ((r, x) for r in results for x in sources(r)):
        sp = k.get("spread")
        g = f"{k['goodput_bps'] / 1e6:.1f}" + (f" ({sp['goodput_bps'][0] / 1e6:.1f}-{sp['goodput_bps'][1] / 1e6:.1f})" if sp else "")
        x = f"{k['retransmits']:g}" + (f" ({sp['retransmits'][0]}-{sp['retransmits'][1]})" if sp else "")
        own = f"{sp['seq'] * 100:.0f} % (runs)" if sp else "-"
        name = f"{src} x{len(k['runs'])}" if sp else src
        lines.append(f"| {r['case'] if src == 'kernel' else ''} | {name} | {g} | 1 | - | {x} | 1 | - | {own} |")
        for prof, s in sims.items():
            rr = "-" if s["retx_ratio"] is None else f"{s['retx_ratio']:.2f}"
            lines.append(f"| | {prof} | {s['goodput_bps'] / 1e6:.1f} | {s['goodput_ratio']:.2f} | {s['goodput_verdict']} | {s['retransmits']} | {rr} | "
                         f"{s['retx_verdict']} | {s['seq_max_error'] * 100:.0f} % |")  # fmt: skip
    return "\n".join(lines)


def flow_table(results: list[dict[str, Any]]) -> str:
    """Per flow of the cases with several RTTs: goodput, its ratio to the
    kernel's, and the short-RTT flow's goodput over the long one's (RTT
    unfairness) against the kernel's."""
    rows = [r for r in results if r["kernel"].get("flow_bps")]
    if not rows:
        return ""
    lines = ["| case | source | goodput per flow Mbit/s (RTT) | ratio per flow | short / long | against the kernel's |", "|---|---|---|---|---|---|"]
    for r in rows:
        k, rtts = r["kernel"], r["spec"]["rtts"]
        per = lambda bps: ", ".join(f"{b / 1e6:.1f} ({t * 1e3:g} ms)" for b, t in zip(bps, rtts))  # noqa: E731
        lines.append(f"| {r['case']} | kernel | {per(k['flow_bps'])} | 1 | {k['unfairness']:.2f} | 1 |")
        for prof, s in r["sim"].items():
            lines.append(f"| | {prof} | {per(s['flow_bps'])} | {', '.join(f'{x:.2f}' for x in s['flow_ratio'])} | "
                         f"{s['unfairness']:.2f} | {s['unfairness_ratio']:.2f} |")  # fmt: skip
    return "\n".join(lines)


def recovery_table(results: list[dict[str, Any]]) -> str:
    """Per case: the kernel sender's SACK recoveries, HyStart exits (by the
    ACK train or the delay increase, with the summed cwnd at them), lost
    retransmissions and timeouts, each run's (:data:`COUNTERS`), beside each
    profile's recoveries (the engine's ``fast_retransmits``)."""
    lines = ["| case | source | recoveries | HyStart exits: train (cwnd), delay (cwnd) | lost retransmissions | timeouts |", "|---|---|---|---|---|---|"]
    for r in results:
        for src, k, sims in sources(r):
            runs = [x.get("counters") for x in (k.get("runs") or [k])]
            if not all(runs):
                continue
            col = lambda f: " / ".join(f(c) for c in runs)  # noqa: E731
            hs = col(lambda c: f"{c['TcpExtTCPHystartTrainDetect']} ({c['TcpExtTCPHystartTrainCwnd']}), "
                               f"{c['TcpExtTCPHystartDelayDetect']} ({c['TcpExtTCPHystartDelayCwnd']})")  # fmt: skip
            lines.append(f"| {r['case'] if src == 'kernel' else ''} | {src} | {col(lambda c: str(c['TcpExtTCPSackRecovery']))} | {hs} | "
                         f"{col(lambda c: str(c['TcpExtTCPLostRetransmit']))} | {col(lambda c: str(c['TcpExtTCPTimeouts']))} |")  # fmt: skip
            for prof, sim in sims.items():
                lines.append(f"| | {prof} | {sim.get('recoveries', '-')} | - | - | - |")
    return "\n".join(lines)


def path_table(results: list[dict[str, Any]]) -> str:
    """Per case and source: drops at each of the router's queues and packets
    out of profile at its filter terms (what the sender's bursts cost)."""
    lines = ["| case | source | drops per router queue (of enqueued) | out of profile (of matched) |", "|---|---|---|---|"]
    for r in results:
        runs = [(src, d) for src, k, sims in sources(r) for src, d in [(src, k)] + list(sims.items())]
        for src, d in runs:
            p = d.get("path") or {}
            qs = ", ".join(f"{n.removeprefix('rtr->')}: {v['drop_pkts']} ({v['enq_pkts']})" for n, v in (p.get("queues") or {}).items() if v["enq_pkts"])
            fs = ", ".join(f"{n}: {v['out_of_profile_pkts']} ({v['matched_pkts']})" for n, v in (p.get("filter") or {}).items())
            lines.append(f"| {r['case'] if src == 'kernel' else ''} | {src} | {qs or '-'} | {fs or '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--out", type=Path, default=Path("runs/kernel-crosscheck"))
    ap.add_argument("--repeat", type=int, default=1, help="kernel runs per reference (their medians and ranges; the simulator is deterministic)")
    ap.add_argument("--unpaced", action="store_true", help=f"also the unpaced kernel ({UNPACED_CC} from socket creation) against linux-6 with {UNPACED_CC}")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        print(f"kernel_crosscheck: --repeat must be at least 1, got {args.repeat}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("kernel_crosscheck: the kernel's runs make network namespaces, which needs root", file=sys.stderr)
        return 2
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        case_spec(c, args.seconds)  # unknown names refused before anything runs
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for c in cases:
        t0 = time.perf_counter()
        r = run_case(c, args.seconds, unpaced=args.unpaced, repeat=args.repeat)
        r["wall_time_s"] = round(time.perf_counter() - t0, 1)
        results.append(r)
        plot(r, args.out / f"{c}.png")
        for src, k, sims in sources(r):
            cc = f" ({UNPACED_CC})" if src != "kernel" else ""
            print(f"{c}: {src} {k['goodput_bps'] / 1e6:.1f} Mbit/s retx {k['retransmits']:g}, load {k['load_avg_1min']}, "
                  f"emulator p99 delay error {k['delay_error_p99_s'] * 1e3:.2f} ms; "
                  + ", ".join(f"{p}{cc} x{s['goodput_ratio']:.2f} retx {s['retransmits']}" for p, s in sims.items()), flush=True)  # fmt: skip
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(table(results))
    print(flow_table(results))
    print(path_table(results))
    print(recovery_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
