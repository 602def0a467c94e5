"""Cross-check alphaqos against ns-2 (2.35) on the set-ups of its documents.

Not part of the test suite: it needs ns-2 (Debian's ``ns2`` package, whose
``ns`` it installs with apt-get if it is missing, which needs root). Each
case runs the same dumbbell in both simulators and prints goodput, the
bottleneck queue (mean and 90th percentile of the backlog, packets,
sampled every 10 ms), drops, retransmissions, timeouts and, for the web
mix, flow-completion times, side by side with the ratio alphaqos / ns-2.

The dumbbell::

    S0, S1 --100 Mbps-- R1 ==45 Mbps, 18 ms== R2 --100 Mbps-- D0, D1

- Two long-lived flows, S0 -> D0 with 1 ms access links (40 ms of
  propagation round trip) and S1 -> D1 with 11 ms ones (80 ms), start at 0
  and 0.1 s; goodput is what each acknowledged between 5 s and the end
  (30 s).
- Bottleneck queue, in R1 towards R2: drop-tail of 50 packets (ns-2's
  default ``queue-limit``), or RED as Floyd & Jacobson with the thresholds
  in packets: min_th 5, max_th 15, max_p 0.1 (ns-2's ``linterm_ 10``),
  w_q 0.002, gentle, hard limit 50 packets, mean packet 1500 B for the
  idle-time decay. ns-2's ``wait_`` (on by default: it spaces drops
  further than the RED paper's count rule) is turned off for the rows
  against alphaqos's default hosts, whose RED follows the paper, and left
  on for the rows against ``host_profile: ns2``, with alphaqos's RED
  ``wait: true``; ``queue_in_bytes_`` (ns-2's default) is off.
- Three columns of results: ns-2 with ``wait_`` off against alphaqos's
  default hosts (the RFC TCP above), and ns-2 as it comes (``wait_`` on)
  against alphaqos with ``host_profile: ns2`` (ns-2's Sack1 sender and
  DelAck sink, ``tcp/ns2.rs``; ``tcp_tick`` 1 ms as ``tcpTick_`` here).
- Sizes: ns-2's ``packetSize_`` is payload; it adds ``tcpip_base_hdr_size_``
  (40 B) and, with timestamps, ``ts_option_size_``, set to 12 B so that a
  data packet is 1448 + 52 = 1500 B as alphaqos's (MSS 1448 with RFC 7323
  timestamps); ns-2 links add nothing, so the alphaqos links get
  ``overhead: 0B``.
- TCP: ns-2's ``Agent/TCP/Sack1`` (RFC 2018 SACK with the 1996 Fall & Floyd
  recovery) against alphaqos's SACK sender (RFC 6675), NewReno's window
  rules on both sides, initial window 2 segments (ns-2's ``windowInit_``),
  minimum RTO 200 ms, ``tcpTick_`` 1 ms; the window is never limited by the
  receiver. Sinks: ``Agent/TCPSink/Sack1`` (one ACK per segment) or
  ``Agent/TCPSink/Sack1/DelAck`` (every second segment, 100 ms timer:
  ``interval_``'s default), alphaqos ``ack_every: 2, delack_timeout: 100ms``.
- Handshake: ns-2's one-way TCP (``syn_ true``, its default) sends a 40 B
  SYN and waits for its ACK; the web mix's transfers are alphaqos workload
  transfers with ``handshake: true``; the long-lived flows, alphaqos
  ``flows`` without one, start one propagation RTT later.
- The web mix (``web-red``): one 4 MB transfer at 0.5 s with short
  transfers from S0 to D0 through RED, sizes Pareto (shape 1.2, mean
  30 kB, at least one segment, at most 20 MB), Poisson arrivals at 10 a
  second until 25 s (about 250); the same list (seeded) in both simulators. Flow-completion time
  from the SYN to the last byte acknowledged.

Cases: ``dt``, ``dt-delack``, ``red``, ``red-delack``, ``web-red``.

Usage (from the repository root, with the project's virtualenv)::

    .venv/bin/python benches/ns2_crosscheck.py [CASE ...] [--save DIR]

``--save DIR`` keeps each case's ns-2 script and output.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

MSS = 1448
HEADERS = 52  # IPv4 20 + TCP 20 + timestamps option 12
BOTTLENECK_BPS = 45_000_000
ACCESS_BPS = 100_000_000
BOTTLENECK_DELAY_MS = 18
QUEUE_LIMIT = 50
SAMPLE_S = 0.01


@dataclass(frozen=True)
class Case:
    queue: str  # "droptail" or "red"
    delack: bool
    # Long-lived flows: access delay (ms, each access link of the flow) and start (s).
    bulk: tuple[tuple[int, float], ...] = ((1, 0.0), (11, 0.1))
    # Finite transfers: (start s, bytes), all S0 -> D0.
    web: bool = False
    duration_s: float = 30.0
    measure_from_s: float = 5.0
    init_cwnd: int = 2
    transfers: tuple[tuple[float, int], ...] = field(default=())


def web_transfers(seed: int = 1, until: float = 25.0, rate: float = 10.0, shape: float = 1.2,
                  mean: float = 30e3) -> tuple[tuple[float, int], ...]:
    """The 4 MB transfer and Pareto-sized ones at Poisson arrivals until `until` s."""
    rng = random.Random(seed)
    scale = mean * (shape - 1) / shape  # Pareto minimum for this mean
    out, t = [(0.5, 4_000_000)], rng.expovariate(rate)
    while t < until:
        t += rng.expovariate(rate)
        size = max(MSS, int(scale / (1 - rng.random()) ** (1 / shape)))
        out.append((round(t, 6), min(size, 20_000_000)))
    return tuple(sorted(out))


CASES = {
    "dt": Case("droptail", False),
    "dt-delack": Case("droptail", True),
    "red": Case("red", False),
    "red-delack": Case("red", True),
    "web-red": Case("red", False, bulk=(), web=True, transfers=web_transfers()),
}


# --- ns-2 ----------------------------------------------------------------------


def ns2_binary() -> str:
    """Debian's ns-2, installed with apt-get on first use."""
    path = shutil.which("ns")
    if path:
        return path
    print("ns2-crosscheck: installing Debian's ns2 with apt-get", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "-q", "ns2"], check=True,
                   env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    path = shutil.which("ns")
    if not path:
        raise SystemExit("ns2-crosscheck: apt-get installed ns2 but no `ns` is on PATH")
    return path


def ns2_script(c: Case, wait: bool = False) -> str:
    """The case as an ns-2 Tcl script; it prints `key value...` lines."""
    queue = "RED" if c.queue == "red" else "DropTail"
    sink = "Agent/TCPSink/Sack1/DelAck" if c.delack else "Agent/TCPSink/Sack1"
    lines = [
        "set ns [new Simulator]",
        f"Agent/TCP set packetSize_ {MSS}",
        "Agent/TCP set window_ 100000",
        f"Agent/TCP set windowInit_ {c.init_cwnd}",
        "Agent/TCP set timestamps_ true",
        "Agent/TCP set ts_option_size_ 12",
        "Agent/TCP set minrto_ 0.2",
        "Agent/TCP set tcpTick_ 0.001",
        "Agent/TCPSink set ts_echo_rfc1323_ true",
        "Agent/TCPSink/DelAck set interval_ 0.1",
        "Queue/RED set thresh_ 5",
        "Queue/RED set maxthresh_ 15",
        "Queue/RED set q_weight_ 0.002",
        "Queue/RED set linterm_ 10",
        "Queue/RED set gentle_ true",
        f"Queue/RED set wait_ {'true' if wait else 'false'}",
        "Queue/RED set queue_in_bytes_ false",
        "Queue/RED set mean_pktsize_ 1500",
        "set R1 [$ns node]", "set R2 [$ns node]",
        f"$ns duplex-link $R1 $R2 {BOTTLENECK_BPS}b {BOTTLENECK_DELAY_MS}ms {queue}",
        f"$ns queue-limit $R1 $R2 {QUEUE_LIMIT}",
        "set qmon [$ns monitor-queue $R1 $R2 \"\"]",
        "set qs {}",
        f"proc sample {{}} {{ global ns qmon qs; lappend qs [$qmon set pkts_]; $ns at [expr [$ns now] + {SAMPLE_S}] sample }}",
        f"$ns at {SAMPLE_S} sample",
    ]
    pairs = [(d, f"bulk{i}") for i, (d, _) in enumerate(c.bulk)] or [(1, "web")]
    for i, (delay, _) in enumerate(pairs):
        lines += [
            f"set S{i} [$ns node]", f"set D{i} [$ns node]",
            f"$ns duplex-link $S{i} $R1 {ACCESS_BPS}b {delay}ms DropTail",
            f"$ns duplex-link $R2 $D{i} {ACCESS_BPS}b {delay}ms DropTail",
            f"$ns queue-limit $S{i} $R1 100000", f"$ns queue-limit $R1 $S{i} 100000",
            f"$ns queue-limit $R2 $D{i} 100000", f"$ns queue-limit $D{i} $R2 100000",
        ]
    agents = []
    for i, (delay, start) in enumerate(c.bulk):
        lines += [
            f"set t{i} [new Agent/TCP/Sack1]", f"set k{i} [new {sink}]",
            f"$ns attach-agent $S{i} $t{i}", f"$ns attach-agent $D{i} $k{i}", f"$ns connect $t{i} $k{i}",
            f"set f{i} [$t{i} attach-app FTP]", f"$ns at {start} \"$f{i} start\"",
            f"$ns at {c.measure_from_s} \"puts \\\"acked_from bulk{i} [$t{i} set ack_]\\\"\"",
        ]
        agents.append((f"t{i}", f"bulk{i}"))
    for j, (start, size) in enumerate(c.transfers):
        pkts = -(-size // MSS)
        name = f"w{j}"
        lines += [
            f"set {name} [new Agent/TCP/Sack1]", f"set {name}k [new {sink}]",
            f"$ns attach-agent $S0 ${name}", f"$ns attach-agent $D0 ${name}k", f"$ns connect ${name} ${name}k",
            f"${name} proc done {{}} {{ global ns; puts \"done {name} [$ns now]\" }}",
            f"$ns at {start} \"${name} advance {pkts}\"",
        ]
        agents.append((name, name))
    report = ["proc report {} {", "global ns qmon qs " + " ".join(a for a, _ in agents)]
    for a, label in agents:
        report.append(f"puts \"agent {label} [${a} set ack_] [${a} set ndatapack_] [${a} set nrexmitpack_]"
                      f" [${a} set nrexmit_]\"")
    report += ["puts \"queue [$qmon set pdrops_] [$qmon set pdepartures_]\"", "puts \"samples $qs\"", "exit 0", "}"]
    lines += report + [f"$ns at {c.duration_s} report", "$ns run"]
    return "\n".join(lines) + "\n"


def run_ns2(ns: str, c: Case, save: Path | None, name: str, wait: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / f"{name}{'-wait' if wait else ''}.tcl"
        script.write_text(ns2_script(c, wait))
        start = time.perf_counter()
        out = subprocess.run([ns, str(script)], capture_output=True, text=True, cwd=tmp)
        wall = time.perf_counter() - start
        if save:
            save.mkdir(parents=True, exist_ok=True)
            shutil.copy(script, save / script.name)
            (save / f"{script.stem}.ns2.out").write_text(out.stdout + out.stderr)
    if out.returncode != 0:
        raise RuntimeError(f"ns-2 failed on {name} ({out.returncode}):\n{out.stderr[-3000:]}")
    r: dict = {"acked_from": {}, "agents": {}, "done": {}, "wall_s": wall}
    for line in out.stdout.splitlines():
        key, *v = line.split()
        if key == "acked_from":
            r["acked_from"][v[0]] = int(v[1])
        elif key == "agent":
            r["agents"][v[0]] = [int(x) for x in v[1:]]
        elif key == "done":
            r["done"][v[0]] = float(v[1])
        elif key == "queue":
            r["drops"] = int(v[0])
        elif key == "samples":
            r["samples"] = [int(x) for x in v]
    return measures_ns2(r, c)


def measures_ns2(r: dict, c: Case) -> dict:
    span = c.duration_s - c.measure_from_s
    agents = r["agents"]
    # ack_: the highest packet acknowledged (ns-2 counts packets from 0).
    goodput = [(agents[f"bulk{i}"][0] - r["acked_from"][f"bulk{i}"]) * MSS * 8 / span for i in range(len(c.bulk))]
    fct = [r["done"][f"w{j}"] - start if f"w{j}" in r["done"] else None for j, (start, _) in enumerate(c.transfers)]
    return {
        "goodput_bps": goodput,
        "samples": r["samples"],
        "drops": r["drops"],
        "retransmits": sum(a[2] for a in agents.values()),
        "timeouts": sum(a[3] for a in agents.values()),
        "fct_s": fct,
        "wall_s": r["wall_s"],
    }


# --- alphaqos ------------------------------------------------------------------


def alphaqos_scenario(c: Case, ns2: bool = False, profile: str | None = None) -> dict:
    """The case as an alphaqos scenario: the front's default hosts (or the
    host ``profile`` named), or (``ns2``) the ``ns2`` host profile with
    RED's ``wait`` as ns-2's default."""
    link = {"mtu": "1500B", "overhead": "0B"}
    red = {"limit": QUEUE_LIMIT, "min_th": 5, "max_th": 15, "max_p": 0.1, "w_q": 0.002, "gentle": True,
           "mean_pkt_size": "1500B", **({"wait": True} if ns2 else {})}
    queue = {"red": red} if c.queue == "red" else {"fifo": {"limit": QUEUE_LIMIT}}
    nodes: dict = {"R1": {"router": True}, "R2": {"router": True}}
    links: list = [{"between": ["R1", "R2"], "rate": f"{BOTTLENECK_BPS}bps", "delay": f"{BOTTLENECK_DELAY_MS}ms",
                    "queues": {"R1": queue}, **link}]
    tcp = {"cc": "newreno", "sack": True, "mss": f"{MSS}B", "init_cwnd": c.init_cwnd, "min_rto": "200ms",
           "delayed_ack": c.delack, "ack_every": 2, "delack_timeout": "100ms", "rto": "rfc6298",
           **({"host_profile": "ns2", "tcp_tick": "1ms"} if ns2 else {"host_profile": profile} if profile else {})}
    pairs = [d for d, _ in c.bulk] or [1]
    for i, delay in enumerate(pairs):
        nodes[f"S{i}"] = {"address": f"10.1.{i}.1"}
        nodes[f"D{i}"] = {"address": f"10.2.{i}.1"}
        for a, b in ((f"S{i}", "R1"), ("R2", f"D{i}")):
            links.append({"between": [a, b], "rate": f"{ACCESS_BPS}bps", "delay": f"{delay}ms",
                          "queue": {"fifo": {"limit": "unlimited"}}, **link})
    flows = []
    for i, (delay, start) in enumerate(c.bulk):
        rtt_ms = 2 * (BOTTLENECK_DELAY_MS + 2 * delay)  # the SYN exchange ns-2 runs first
        flows.append({"name": f"bulk{i}", "tcp": {"from": f"S{i}", "to": f"D{i}", **tcp},
                      "start": f"{round(start * 1000) + rtt_ms}ms"})
    workloads = [{"name": f"w{j}", "transfer": {"from": "S0", "to": "D0", "size": f"{size}B"},
                  "start": f"{round(start * 1e6)}us", "handshake": True, "tcp": tcp}
                 for j, (start, size) in enumerate(c.transfers)]
    return {"name": "ns2-crosscheck", "duration": f"{round(c.duration_s * 1000)}ms",
            "metric_interval": f"{round(SAMPLE_S * 1000)}ms", "nodes": nodes, "links": links,
            "flows": flows, "workloads": workloads}


def run_alphaqos(c: Case, ns2: bool = False, profile: str | None = None) -> dict:
    import alphaqos
    import polars as pl

    start = time.perf_counter()
    res = alphaqos.run(alphaqos_scenario(c, ns2, profile))
    wall = time.perf_counter() - start
    span = c.duration_s - c.measure_from_s
    goodput, retx, timeouts = [], 0, 0
    for i in range(len(c.bulk)):
        tcp = res.tcp.filter(pl.col("flow") == f"bulk{i}").sort("time")
        times, acked = tcp["time"].to_list(), tcp["bytes_acked"].to_list()
        k = min(range(len(times)), key=lambda j: abs(times[j] - c.measure_from_s))
        goodput.append((acked[-1] - acked[k]) * 8 / span)
        retx += tcp["retransmits"][-1]
        timeouts += tcp["timeouts"][-1]
    fct = []
    if c.transfers:
        ts = res.transfer_streams
        by_name = {w: (f, r, t) for w, f, r, t in zip(ts["workload"], ts["fct"], ts["retransmits"], ts["timeouts"])}
        for j in range(len(c.transfers)):
            f, r, t = by_name.get(f"w{j}", (None, 0, 0))
            fct.append(f)  # seconds
            retx += r
            timeouts += t
    queue = res.queue.filter(pl.col("queue") == "R1->R2").sort("time")
    bottleneck = res.queue_summary.filter(pl.col("queue") == "R1->R2")
    return {
        "goodput_bps": goodput,
        "samples": [v for v in queue["len_pkts"].to_list() if v is not None],
        "drops": int(bottleneck["drop_pkts"].sum()),
        "retransmits": retx,
        "timeouts": timeouts,
        "fct_s": fct,
        "wall_s": wall,
    }


# --- report --------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def rows(c: Case, n2: dict, aq: dict) -> list[tuple[str, float | None, float | None, str]]:
    out = []
    for i, (g2, ga) in enumerate(zip(n2["goodput_bps"], aq["goodput_bps"])):
        rtt = 2 * (BOTTLENECK_DELAY_MS + 2 * c.bulk[i][0])
        out.append((f"goodput, flow {i} (RTT {rtt} ms)", g2 / 1e6, ga / 1e6, "Mbps"))
    out += [
        ("queue mean", mean(n2["samples"]), mean(aq["samples"]), "pkts"),
        ("queue p90", percentile(n2["samples"], 0.9), percentile(aq["samples"], 0.9), "pkts"),
        ("drops", n2["drops"], aq["drops"], "pkts"),
        ("retransmissions", n2["retransmits"], aq["retransmits"], "pkts"),
        ("timeouts", n2["timeouts"], aq["timeouts"], ""),
    ]
    if c.transfers:
        big = [j for j, (_, s) in enumerate(c.transfers) if s == 4_000_000]
        short = [j for j in range(len(c.transfers)) if j not in big]
        f2, fa = n2["fct_s"], aq["fct_s"]
        done2, donea = [f2[j] for j in short if f2[j] is not None], [fa[j] for j in short if fa[j] is not None]
        out += [
            ("4 MB transfer FCT", f2[big[0]], fa[big[0]], "s"),
            ("short transfers done", len(done2), len(donea), f"of {len(short)}"),
            ("short FCT mean", mean(done2), mean(donea), "s"),
            ("short FCT p90", percentile(done2, 0.9), percentile(donea, 0.9), "s"),
        ]
    return out


def report(name: str, c: Case, n2: dict, aq: dict, n2w: dict, aqn: dict) -> str:
    """One case's table: ns-2 (``wait_`` off) against alphaqos's default
    hosts, and ns-2 as it comes against ``host_profile: ns2``."""
    show = lambda v: "-" if v is None else (f"{v:,.0f}" if isinstance(v, int) else f"{v:,.3g}")  # noqa: E731
    ratio = lambda a, b: f"{b / a:.2f}" if a and b is not None else "-"  # noqa: E731
    lines = [f"### {name}", "",
             "| measure | ns-2 | alphaqos default | ratio | ns-2, wait_ on | alphaqos ns2 | ratio | unit |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for (label, a, b, unit), (_, a2, b2, _) in zip(rows(c, n2, aq), rows(c, n2w, aqn)):
        lines.append(f"| {label} | {show(a)} | {show(b)} | {ratio(a, b)} | {show(a2)} | {show(b2)} | {ratio(a2, b2)} | {unit} |")
    lines.append(f"\nwall time: ns-2 {n2['wall_s']:.1f} + {n2w['wall_s']:.1f} s, "
                 f"alphaqos {aq['wall_s']:.1f} + {aqn['wall_s']:.1f} s\n")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", metavar="CASE")
    p.add_argument("--save", type=Path, metavar="DIR")
    a = p.parse_args(argv)
    unknown = [n for n in a.cases if n not in CASES]
    if unknown:
        print(f"ns2-crosscheck: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    ns = ns2_binary()
    for name in a.cases or list(CASES):
        c = CASES[name]
        n2, aq = run_ns2(ns, c, a.save, name), run_alphaqos(c)
        n2w, aqn = run_ns2(ns, c, a.save, name, wait=True), run_alphaqos(c, ns2=True)
        print(report(name, c, n2, aq, n2w, aqn), flush=True)
        if a.save:
            (a.save / f"{name}.json").write_text(json.dumps({"ns2": n2, "alphaqos": aq, "ns2_wait": n2w,
                                                             "alphaqos_ns2": aqn}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
