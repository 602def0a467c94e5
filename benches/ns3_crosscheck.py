"""Cross-check alphaqos against ns-3 on a TCP dumbbell.

Not part of the test suite: it needs ns-3 (the PyPI package ``ns3``, cppyy
bindings, in its own virtualenv ``.venv-ns3/`` at the repository root,
created on first use: a few minutes, as pip builds cppyy's C++ parts), and
ns-3 is slow here. At 1 Gbps it needs about 7 s of wall time per simulated
second once the flows are in congestion avoidance, but its TCP walks the
whole send buffer's segment list on every ACK, so the loss episode that ends
slow start (thousands of segments in flight, up to a thousand lost) costs
minutes: 3 to 10 minutes per case with ``--sack``, 15 to 25 without (ns-3's
NewReno without SACK then stays in a loop of spurious fast recoveries).

The dumbbell, the same in both simulators::

    S0 ..SN-1 --10 Gbps-- R1 ==1 Gbps, drop-tail BDP buffer== R2 --10 Gbps-- D0 ..DN-1

- Round trip 20 ms of propagation (access links 1 us each way, bottleneck
  the rest); the bottleneck buffer is one bandwidth-delay product of
  1500-byte packets (1 Gbps x 20 ms / 1500 B = 1666 packets), in R1's
  egress queue towards R2. Every other queue is too large to fill.
- Framing: ns-3's PointToPoint links add a 2-byte PPP header per frame, so
  the alphaqos links get ``overhead: 2B`` (instead of Ethernet's 38 B).
- TCP: MTU 1500 B, MSS 1448 B with RFC 7323 timestamps, initial window 10
  segments, minimum RTO 200 ms, 64 MiB send and receive buffers (cwnd is
  the limit), delayed ACKs every 2 segments with a 40 ms timeout (alphaqos's
  default, like Linux; ns-3's 200 ms default is overridden), SACK off unless
  ``--sack`` (which needs an alphaqos that supports SACK).
- ns-3 recovery: TcpClassicRecovery (cwnd = ssthresh on entry, as alphaqos
  models it), not ns-3's default PRR.
- Flow i starts at i x 0.1 s. Each case runs 20 s; goodput is the payload
  the receivers got between 5 s and 20 s (ns-3: PacketSink bytes; alphaqos:
  bytes acknowledged, which lag them by less than a round trip at both ends
  of the window).

Cases: NewReno and CUBIC (ns-3: TcpNewReno, TcpCubic with its default
HyStart), one flow and four flows; for four flows also Jain's fairness
index of the per-flow goodputs. Case ``fqcodel-2rtt`` (issue 9) changes the
dumbbell: 100 Mbps bottleneck, 1 Gbps access links, two NewReno flows of 20
and 80 ms propagation RTT (the second flow's access links add 15 ms each
way), and a bottleneck queue of FQ-CoDel with Linux's defaults (limit 10240
packets, 1024 flows, quantum 1514 B, target 5 ms, interval 100 ms; ns-3:
``FqCoDelQueueDisc`` on R1's bottleneck device over a one-packet device
queue; alphaqos: ``queue: {fq_codel: {}}``). It adds a table of the
per-flow goodputs and of the bottleneck's mean sojourn in both simulators
with their ratios (see ``report_split``); ``fqcodel-2rtt-cubic`` is the same
with CUBIC, the congestion control of ``tests/fq.rs``. Run both with
``--sack``: without SACK the NewReno case compares start-ups, not FQ-CoDel.
With SACK both simulators agree within 2.5 % per flow over 5-60 s (within
10 % over 5-20 s). Without SACK, alphaqos's slow start (faster than ns-3's
TcpNewReno, which adds one segment per ACK where alphaqos, like Linux,
adds the segments acked) ends with several times ns-3's losses (43 to 71
drops against 11 over 20 s); NewReno repairs one per round trip while
window inflation keeps the queue long (cwnd up to 1800 segments), and the
retransmission timer of one flow, re-armed on the first partial ACK only
(RFC 6582's "impatient" variant, ``tcp/sender.rs``), expires. Which flow
it hits turns on details: the 80 ms flow before CoDel followed Linux's
Newton arithmetic (it restarted from ssthresh 8 segments and got 0.54 of
ns-3's goodput over 5-20 s), the 20 ms flow after (0.94). A case whose congestion control alphaqos
does not implement yet (``alphaqos.scenario.CONGESTION_CONTROLS``) is
skipped, with a note.

Usage (from the repository root, with the project's virtualenv)::

    .venv/bin/python benches/ns3_crosscheck.py [CASE ...] [--sack] [--jobs N]
                                               [--duration S] [--save DIR]

``--save DIR`` writes, per case, both runs' series (per flow, every 100 ms:
bytes delivered, cwnd and ssthresh) and counters as JSON, and a cwnd plot
as PNG.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NS3_VENV = REPO / ".venv-ns3"
NS3_SCRIPT = HERE / "ns3_dumbbell.py"
# ns-3 3.44 is published on PyPI only as the post-release 3.44.post0
# (packaging fixes), which `ns3==3.44` does not match.
NS3_VERSION = "3.44.post0"

@dataclass(frozen=True)
class Dumbbell:
    """The shared topology and TCP settings; times in microseconds, rates
    in bit/s, so that both simulators get the same exact integers."""

    bottleneck_bps: int = 1_000_000_000
    access_factor: int = 10
    rtt_us: int = 20_000
    access_delay_us: int = 1
    mtu: int = 1500
    overhead: int = 2  # PPP header, ns-3 PointToPoint
    mss: int = 1448
    init_cwnd: int = 10
    socket_buffers: int = 64 * 2**20
    ack_every: int = 2
    delack_timeout_ms: int = 40
    min_rto_ms: int = 200
    stagger_ms: int = 100
    interval_ms: int = 100
    duration_s: float = 20.0
    measure_from_s: float = 5.0
    # Per-flow one-way access delay (both access links of flow i), when the
    # flows' RTTs differ; None: access_delay_us for every flow.
    access_delays_us: tuple[int, ...] | None = None
    # The bottleneck queue: "drop-tail" (buffer_pkts) or "fq_codel" (Linux
    # defaults: limit 10240 packets, 1024 flows, quantum 1514 B, target
    # 5 ms, interval 100 ms).
    queue: str = "drop-tail"

    def flow_access_delay_us(self, i: int) -> int:
        return self.access_delays_us[i] if self.access_delays_us else self.access_delay_us

    def flow_rtt_us(self, i: int) -> int:
        """Flow i's propagation round trip."""
        return 2 * (self.bottleneck_delay_us + 2 * self.flow_access_delay_us(i))

    @property
    def access_bps(self) -> int:
        return self.bottleneck_bps * self.access_factor

    @property
    def bottleneck_delay_us(self) -> int:
        """One-way bottleneck delay so that the propagation RTT is rtt_us."""
        return self.rtt_us // 2 - 2 * self.access_delay_us

    @property
    def buffer_pkts(self) -> int:
        """One bandwidth-delay product of MTU-sized packets (drop-tail), or
        FQ-CoDel's limit."""
        if self.queue == "fq_codel":
            return FQ_CODEL_LIMIT
        return self.bottleneck_bps * self.rtt_us // 1_000_000 // 8 // self.mtu

    @property
    def max_goodput_bps(self) -> float:
        """Payload rate of a saturated bottleneck: MSS bytes per MTU + framing."""
        return self.bottleneck_bps * self.mss / (self.mtu + self.overhead)


# Linux's fq_codel default limit, packets (net/sched/sch_fq_codel.c).
FQ_CODEL_LIMIT = 10240

# The FQ-CoDel dumbbell of issue 9: 100 Mbps bottleneck, 20 and 80 ms RTT.
FQ_CODEL_2RTT = Dumbbell(bottleneck_bps=100_000_000, access_delays_us=(1, 15_001), queue="fq_codel")

# case name -> (congestion control, number of flows, dumbbell)
CASES: dict[str, tuple[str, int, Dumbbell]] = {
    "newreno-1": ("newreno", 1, Dumbbell()),
    "newreno-4": ("newreno", 4, Dumbbell()),
    "cubic-1": ("cubic", 1, Dumbbell()),
    "cubic-4": ("cubic", 4, Dumbbell()),
    # FQ-CoDel (issue 9): two NewReno flows of 20 and 80 ms RTT through a
    # 100 Mbps bottleneck whose queue is FQ-CoDel with Linux's defaults;
    # the 80 ms flow's access links add 15 ms each way on both sides.
    "fqcodel-2rtt": ("newreno", 2, FQ_CODEL_2RTT),
    # The same with CUBIC (ns-3: TcpCubic with HyStart), the congestion
    # control of tests/fq.rs's FQ-CoDel test.
    "fqcodel-2rtt-cubic": ("cubic", 2, FQ_CODEL_2RTT),
}


# --- ns-3 ----------------------------------------------------------------------


def ns3_python() -> Path:
    """The ns-3 virtualenv's interpreter, creating the virtualenv if needed."""
    python = NS3_VENV / "bin" / "python"
    if python.exists() and _installed_ns3(python) == NS3_VERSION:
        return python
    print(f"ns3-crosscheck: installing ns3=={NS3_VERSION} into {NS3_VENV.name}/ (one time, a few minutes)",
          file=sys.stderr)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(NS3_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"ns3=={NS3_VERSION}"], check=True)
    # The bindings compile their headers on import; fail here, not mid-run.
    subprocess.run([str(python), "-c", "from ns import ns; ns.TcpCubic.GetTypeId()"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return python


def _installed_ns3(python: Path) -> str | None:
    out = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('ns3'))"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def run_ns3(python: Path, d: Dumbbell, cc: str, flows: int, sack: bool) -> dict:
    """Run one case in ns-3 (a child process); its JSON result."""
    args = [
        str(python), str(NS3_SCRIPT),
        "--cc", cc,
        "--flows", str(flows),
        "--duration", str(d.duration_s),
        "--stagger", str(d.stagger_ms / 1000),
        "--interval", str(d.interval_ms / 1000),
        "--bottleneck", f"{d.bottleneck_bps}bps",
        "--access", f"{d.access_bps}bps",
        "--bottleneck-delay", f"{d.bottleneck_delay_us}us",
        "--access-delays", ",".join(f"{d.flow_access_delay_us(i)}us" for i in range(flows)),
        "--buffer", str(d.buffer_pkts),
        "--qdisc", "fq_codel" if d.queue == "fq_codel" else "none",
        "--mss", str(d.mss),
        "--init-cwnd", str(d.init_cwnd),
        "--buffers", str(d.socket_buffers),
        "--delack-count", str(d.ack_every),
        "--delack-timeout", f"{d.delack_timeout_ms}ms",
        "--min-rto", f"{d.min_rto_ms}ms",
        "--recovery", "classic",
    ] + (["--sack"] if sack else [])
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"ns-3 run failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ns3_measures(result: dict, d: Dumbbell) -> dict:
    """Per-flow goodput over the measurement window and loss counters."""
    times = result["times"]
    first, last = _index(times, d.measure_from_s), _index(times, d.duration_s)
    span = d.duration_s - d.measure_from_s
    flows = result["flows"]
    total, count = result["sojourn_sum_s"], result["sojourn_count"]
    window = count[last] - count[first]
    return {
        "goodput_bps": [(f["rx_bytes"][last] - f["rx_bytes"][first]) * 8 / span for f in flows],
        # The queue disc's mean sojourn, over the whole run and over the
        # measurement window (None without a queue disc).
        "sojourn_mean_s": total[-1] / count[-1] if count and count[-1] else None,
        "sojourn_window_s": (total[last] - total[first]) / window if window else None,
        "backlog_delay_s": backlog_delay(result["backlog_bytes"][first:last + 1], d),
        "recoveries": sum(f["recoveries"] for f in flows),
        "timeouts": sum(f["timeouts"] for f in flows),
        "retransmits": sum(f["retransmits"] for f in flows),
        "drops": result["bottleneck_drops"],
        "wall_s": result["wall_s"],
        "series": {
            f["name"]: {
                "time": times,
                "cwnd_bytes": f["cwnd_bytes"],
                "ssthresh_bytes": f["ssthresh_bytes"],
                "rx_bytes": f["rx_bytes"],
            }
            for f in flows
        },
    }


def _index(times: list[float], t: float) -> int:
    """The index of sample time t (samples fall on whole intervals)."""
    return min(range(len(times)), key=lambda k: abs(times[k] - t))


# --- alphaqos ------------------------------------------------------------------


def alphaqos_scenario(d: Dumbbell, cc: str, flows: int, sack: bool) -> dict:
    """The dumbbell as an alphaqos scenario dict."""
    from alphaqos.scenario import Tcp

    supported = Tcp.model_fields
    access = {"rate": f"{d.access_bps}bps", "mtu": f"{d.mtu}B",
              "overhead": f"{d.overhead}B", "queue": {"fifo": {"limit": "unlimited"}}}
    # FQ-CoDel with every parameter at its (Linux) default.
    queue = {"fq_codel": {}} if d.queue == "fq_codel" else {"fifo": {"limit": d.buffer_pkts}}
    nodes: dict = {"R1": {"router": True}, "R2": {"router": True}}
    links: list = [{
        "between": ["R1", "R2"], "rate": f"{d.bottleneck_bps}bps", "delay": f"{d.bottleneck_delay_us}us",
        "mtu": f"{d.mtu}B", "overhead": f"{d.overhead}B", "queue": queue,
    }]
    tcp_flows: list = []
    for i in range(flows):
        nodes[f"S{i}"] = {"address": f"10.1.{i}.1"}
        nodes[f"D{i}"] = {"address": f"10.2.{i}.1"}
        delay = f"{d.flow_access_delay_us(i)}us"
        links.append({"between": [f"S{i}", "R1"], "delay": delay, **access})
        links.append({"between": ["R2", f"D{i}"], "delay": delay, **access})
        tcp = {
            "from": f"S{i}", "to": f"D{i}", "cc": cc,
            "mss": f"{d.mss}B", "init_cwnd": d.init_cwnd, "rwnd": f"{d.socket_buffers}B",
            "delayed_ack": True, "ack_every": d.ack_every, "delack_timeout": f"{d.delack_timeout_ms}ms",
            "min_rto": f"{d.min_rto_ms}ms",
        }
        # Options of newer alphaqos versions, set to what the ns-3 side runs
        # (alphaqos's defaults follow Linux: SACK on, for one).
        tcp |= {key: value for key, value in {
            "host_profile": "default",  # the RFC host, as ns-3's (not linux-6, the scenarios' default)
            "sack": sack,
            "window_scaling": True,
            "limited_transmit": True,
            "sndbuf": f"{d.socket_buffers}B",
            "pacing": False,
            "rack": False,
        }.items() if key in supported}
        tcp_flows.append({"name": f"tcp{i}", "tcp": tcp, "start": f"{i * d.stagger_ms}ms"})
    return {
        "name": f"ns3-crosscheck-{cc}-{flows}",
        "duration": f"{round(d.duration_s * 1000)}ms",
        "metric_interval": f"{d.interval_ms}ms",
        "nodes": nodes,
        "links": links,
        "flows": tcp_flows,
    }


def run_alphaqos(d: Dumbbell, cc: str, flows: int, sack: bool) -> dict:
    """Run one case in alphaqos (this process); the same measures as ns-3's."""
    import alphaqos
    import polars as pl

    res = alphaqos.run(alphaqos_scenario(d, cc, flows, sack))
    span = d.duration_s - d.measure_from_s
    goodputs, series = [], {}
    fast_retransmits = timeouts = retransmits = 0
    for i in range(flows):
        tcp = res.tcp.filter(pl.col("flow") == f"tcp{i}").sort("time")
        times = tcp["time"].to_list()
        acked = tcp["bytes_acked"].to_list()
        first, last = _index(times, d.measure_from_s), _index(times, d.duration_s)
        goodputs.append((acked[last] - acked[first]) * 8 / span)
        fast_retransmits += tcp["fast_retransmits"][-1]
        timeouts += tcp["timeouts"][-1]
        retransmits += tcp["retransmits"][-1]
        series[f"tcp{i}"] = {
            "time": times,
            "cwnd_bytes": tcp["cwnd_bytes"].to_list(),
            "ssthresh_bytes": tcp["ssthresh_bytes"].to_list(),
            "bytes_acked": acked,
        }
    bottleneck = res.queue_summary.filter(pl.col("queue") == "R1->R2")
    queue = res.queue.filter(pl.col("queue") == "R1->R2").sort("time")
    first, last = _index(queue["time"].to_list(), d.measure_from_s), _index(queue["time"].to_list(), d.duration_s)
    return {
        "goodput_bps": goodputs,
        "recoveries": fast_retransmits,
        "timeouts": timeouts,
        "retransmits": retransmits,
        "drops": int(bottleneck["drop_pkts"].sum()),
        # Whole run: the engine's summary has no windowed sojourn.
        "sojourn_mean_s": bottleneck["sojourn_mean"][0] if "sojourn_mean" in bottleneck.columns else None,
        "backlog_delay_s": backlog_delay(queue["len_bytes"].to_list()[first:last + 1], d),
        "wall_s": res.manifest.get("wall_time_s"),
        "series": series,
    }


def backlog_delay(samples: list, d: Dumbbell) -> float | None:
    """The queueing delay the sampled backlog implies: its mean (bytes at
    every interval boundary of the window) over the bottleneck rate."""
    values = [v for v in samples if v is not None]
    return sum(values) / len(values) * 8 / d.bottleneck_bps if values else None


def unsupported(cc: str, sack: bool) -> str | None:
    """Why alphaqos cannot run this case yet, or None."""
    from alphaqos.scenario import CONGESTION_CONTROLS, Tcp

    if cc not in CONGESTION_CONTROLS:
        return f"alphaqos has no '{cc}' congestion control yet (it has: {', '.join(CONGESTION_CONTROLS)})"
    if sack and "sack" not in Tcp.model_fields:
        return "alphaqos has no SACK option yet"
    return None


# --- report --------------------------------------------------------------------


def jain(values: list[float]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one takes all."""
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values)) if any(values) else 0.0


def report_case(name: str, ns3: dict, aq: dict) -> None:
    """The case's table row, then one line of counters per simulator."""
    n3, a = sum(ns3["goodput_bps"]), sum(aq["goodput_bps"])
    diff = (a - n3) / n3 * 100 if n3 else float("nan")
    fairness = ""
    if len(ns3["goodput_bps"]) > 1:
        fairness = f"{jain(ns3['goodput_bps']):>7.3f} {jain(aq['goodput_bps']):>7.3f}"
    print(f"{name:<10} {n3 / 1e6:>9.1f} {a / 1e6:>9.1f} {diff:>+7.1f}% {fairness:>15} "
          f"{ns3['wall_s']:>8.0f} {aq['wall_s'] or float('nan'):>8.1f}")
    for label, m in (("ns-3", ns3), ("alphaqos", aq)):
        flows = " ".join(f"{g / 1e6:.0f}" for g in m["goodput_bps"]) if len(m["goodput_bps"]) > 1 else ""
        print(f"{'':<10}   {label:<8} drops {m['drops']:>6}, fast recoveries {m['recoveries']:>4}, "
              f"timeouts {m['timeouts']:>3}, retransmits {m['retransmits']:>6}"
              + (f"; per flow Mbps: {flows}" if flows else ""))


def report_split(name: str, d: Dumbbell, ns3: dict, aq: dict) -> None:
    """Per-flow goodput and the bottleneck's mean sojourn, side by side.

    Sojourn: from the packet's entry into the bottleneck queue to its
    dequeue for transmission, averaged over every packet of the whole run
    (alphaqos: the queue summary's sojourn_mean; ns-3: the FqCoDelQueueDisc's
    SojournTime trace, which fires when the queue disc hands a packet to
    the device; the device's one-packet queue then holds it for at most one
    transmission time, 120 us at 100 Mbps, which neither side counts).
    """
    print(f"{name}: per flow and bottleneck sojourn (ratio = alphaqos / ns-3)")
    print(f"  {'':<28} {'ns-3':>10} {'alphaqos':>10} {'ratio':>7}")

    def row(label: str, n3: float | None, a: float | None, unit: str, scale: float) -> None:
        ratio = f"{a / n3:>7.3f}" if n3 and a is not None else f"{'-':>7}"
        show = lambda v: f"{v * scale:>10.2f}" if v is not None else f"{'-':>10}"  # noqa: E731
        print(f"  {label:<28} {show(n3)} {show(a)} {ratio}  {unit}")

    for i, (g3, ga) in enumerate(zip(ns3["goodput_bps"], aq["goodput_bps"])):
        row(f"tcp{i} goodput (RTT {d.flow_rtt_us(i) / 1000:g} ms)", g3, ga, "Mbps", 1e-6)
    row("total goodput", sum(ns3["goodput_bps"]), sum(aq["goodput_bps"]), "Mbps", 1e-6)
    row("Jain's index", jain(ns3["goodput_bps"]), jain(aq["goodput_bps"]), "", 1)
    row("mean sojourn, whole run", ns3["sojourn_mean_s"], aq["sojourn_mean_s"], "ms", 1e3)
    row("mean sojourn, after warm-up", ns3["sojourn_window_s"], None, "ms (ns-3 only)", 1e3)
    row("backlog / rate, after warm-up", ns3["backlog_delay_s"], aq["backlog_delay_s"], "ms", 1e3)
    row("bottleneck drops", ns3["drops"], aq["drops"], "packets", 1)


def save_case(directory: Path, name: str, ns3: dict, aq: dict, mss: int) -> None:
    """Both runs' series as JSON and the congestion windows as a PNG."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps({"ns3": ns3, "alphaqos": aq}) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    for label, m, style in (("ns-3", ns3, "-"), ("alphaqos", aq, "--")):
        for k, (flow, s) in enumerate(m["series"].items()):  # one colour per flow
            cwnd = [c / mss for c in s["cwnd_bytes"]]
            ax.plot(s["time"], cwnd, style, color=f"C{k}", lw=1, label=f"{label} {flow}")
    ax.set(xlabel="time (s)", ylabel="cwnd (segments, sampled every 100 ms)", title=f"{name}: ns-3 solid, alphaqos dashed")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(directory / f"{name}-cwnd.png", dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", metavar="CASE", help=f"default: all ({', '.join(CASES)})")
    p.add_argument("--sack", action="store_true", help="SACK on in both simulators")
    p.add_argument("--jobs", type=int, default=1, help="ns-3 runs at a time (default 1: undisturbed wall times)")
    p.add_argument("--duration", type=float, default=Dumbbell.duration_s, help="simulated seconds (default 20)")
    p.add_argument("--save", type=Path, metavar="DIR", help="write each case's series and cwnd plot here")
    args = p.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    if args.duration <= Dumbbell.measure_from_s:
        p.error(f"--duration must exceed the {Dumbbell.measure_from_s:g} s warm-up")
    dumbbells = {name: replace(CASES[name][2], duration_s=args.duration) for name in CASES}

    runnable = []
    for name in args.cases or list(CASES):
        cc, flows, _ = CASES[name]
        reason = unsupported(cc, args.sack)
        if reason:
            print(f"ns3-crosscheck: skipping {name}: {reason}", file=sys.stderr)
        else:
            runnable.append(name)
    if not runnable:
        return 0
    python = ns3_python()

    # ns-3 runs in child processes (the slow part) while alphaqos runs here.
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        pending: dict[str, Future] = {
            name: pool.submit(run_ns3, python, dumbbells[name], *CASES[name][:2], args.sack) for name in runnable
        }
        aq = {name: run_alphaqos(dumbbells[name], *CASES[name][:2], args.sack) for name in runnable}
        ns3 = {name: ns3_measures(future.result(), dumbbells[name]) for name, future in pending.items()}

    for d in {dumbbells[name] for name in runnable}:
        rtts = sorted({d.flow_rtt_us(i) / 1000 for name in runnable if dumbbells[name] == d
                       for i in range(CASES[name][1])})
        print(f"ns-3 {NS3_VERSION} vs alphaqos: {d.bottleneck_bps / 1e9:g} Gbps dumbbell, "
              f"RTT {'/'.join(f'{r:g}' for r in rtts)} ms, {d.queue} {d.buffer_pkts} packets, "
              f"SACK {'on' if args.sack else 'off'}, goodput over {d.measure_from_s:g}-{d.duration_s:g} s "
              f"(max {d.max_goodput_bps / 1e6:.1f} Mbps): "
              + ", ".join(name for name in runnable if dumbbells[name] == d))
    print("diff = (alphaqos - ns-3) / ns-3 of the total goodput; Jain's index of the per-flow goodputs; "
          "wall = wall time of the simulation itself")
    print(f"{'case':<10} {'ns-3':>9} {'alphaqos':>9} {'diff':>8} {'Jain ns-3/aq':>15} {'ns-3 wall':>8} {'aq wall':>8}")
    print(f"{'':<10} {'Mbps':>9} {'Mbps':>9} {'':>8} {'':>15} {'s':>8} {'s':>8}")
    for name in runnable:
        report_case(name, ns3[name], aq[name])
        if args.save:
            save_case(args.save, name, ns3[name], aq[name], dumbbells[name].mss)
    for name in runnable:
        if dumbbells[name].queue == "fq_codel":
            report_split(name, dumbbells[name], ns3[name], aq[name])
    print(f"total wall time {time.perf_counter() - started:.0f} s (ns-3 jobs: {args.jobs})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
