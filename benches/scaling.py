"""How the engine's cost grows with the work (issue 25, `make bench`).

Two series, each point run in a fresh child process so that its peak
memory (the process's maximum resident set) is its own:

- **flows**: N concurrent long-lived CUBIC flows (N = 1, 10, 100, 1,000,
  10,000) through one 100 Gbps bottleneck: four senders and four receivers
  on 400 Gbps access links, MTU 9000 (MSS 8948 B), 20 ms round trip,
  buffer of one bandwidth-delay product (250 MB). Flows start spread
  evenly over the first 100 ms (half the run if shorter). The aggregate rate is the same at every N,
  so the events per simulated second are nearly so, and events per wall
  second show the cost of one event against the number of flows.
- **topology**: a research backbone of R = 10, 50, 200 routers: a Waxman
  random graph (B. M. Waxman, "Routing of multipoint connections", IEEE
  JSAC 6(9), 1988: nodes uniform on a 4,000 x 2,500 km plane, an edge with
  probability beta exp(-d / (alpha L)), L the largest distance, alpha
  0.25, beta set for a mean degree of 3), joined into one component by its
  shortest missing edges, fixed seed. Backbone
  links 100 Gbps, MTU 9000, delay 5 us/km of fibre (light at 2/3 c). Each
  router has one edge host on a 10 Gbps access link. Traffic grows with
  R: R/10 alpha transfers (long-lived CUBIC flows, MSS 8948 B) and a
  web-like mix (Poisson arrivals, 20 per second per host, Pareto sizes of
  shape 1.2 and mean 100 KB cut at 100 MB, MSS 1448 B: SURGE-like heavy
  tails, Barford & Crovella, SIGMETRICS 1998), both between edge hosts
  drawn at random.

Each point runs `--warmup` simulated seconds first (slow start, the
flows' staggered starts), then `--measure` more; the figures are those of
the measured part: events per wall second, simulated seconds per wall
second, and the peak resident memory of the whole process (Python and the
engine; "engine MB" is the peak less the resident set before the
simulation was built). Setup (validation, routes, building) is timed
apart. Bytes per open connection: the slope of the resident set after the
warm-up (every flow open) between the two largest flow counts.

Usage: python benches/scaling.py [--series flows|topology|both]
           [--flows 1,10,...] [--routers 10,50,200] [--warmup S] [--measure S]
           [--repeat N] [--realtime] [--json OUT] [--plot DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

FLOWS = [1, 10, 100, 1_000, 10_000]
ROUTERS = [10, 50, 200]
# Fibre: light at about 2/3 c, 5 us per km.
US_PER_KM = 5.0


def flows_scenario(n: int, warmup: float, measure: float) -> dict:
    """N long-lived CUBIC flows through one 100 Gbps bottleneck."""
    k = 4
    nodes = {f"S{i}": {"address": f"10.0.0.{i}"} for i in range(1, k + 1)}
    nodes |= {f"D{i}": {"address": f"10.0.1.{i}"} for i in range(1, k + 1)}
    nodes |= {"R1": {"router": True}, "R2": {"router": True}}
    links = [{"between": [f"S{i}", "R1"], "rate": "400Gbps", "delay": "1us", "mtu": "9000B"} for i in range(1, k + 1)]
    # 100 Gbps x 20 ms = 250 MB of buffer.
    links.append({"between": ["R1", "R2"], "rate": "100Gbps", "delay": "9.998ms", "mtu": "9000B",
                  "queues": {"R1": {"fifo": {"limit": "250MB"}}}})
    links += [{"between": ["R2", f"D{i}"], "rate": "400Gbps", "delay": "1us", "mtu": "9000B"} for i in range(1, k + 1)]
    # Starts spread over the first 100 ms (half the run if shorter).
    spread_us = int(min(0.1, (warmup + measure) / 2) * 1e6)
    flows = [
        {"name": f"f{j}", "start": f"{spread_us * j // n}us",
         "tcp": {"from": f"S{j % k + 1}", "to": f"D{j % k + 1}", "host_profile": "default", "cc": "cubic", "mss": "8948B", "rwnd": "1GiB"}}
        for j in range(n)
    ]
    return {"name": f"scaling-flows-{n}", "duration": f"{warmup + measure}s", "seed": 1,
            "metric_interval": f"{min(0.1, warmup + measure):g}s", "nodes": nodes, "links": links, "flows": flows}


def waxman(n: int, seed: int = 1, alpha: float = 0.25, degree: float = 3.0) -> tuple[list[tuple[float, float]], list[tuple[int, int]]]:
    """Router positions (km) and edges of a connected Waxman graph whose
    beta gives a mean degree of `degree` (ESnet's and GEANT's are about 3)
    at every size, as a backbone's is, instead of growing with n."""
    rng = random.Random(f"waxman:{n}:{seed}")
    pos = [(rng.uniform(0, 4000), rng.uniform(0, 2500)) for _ in range(n)]
    d = lambda a, b: math.dist(pos[a], pos[b])  # noqa: E731
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    big = max(d(a, b) for a, b in pairs)
    weight = [math.exp(-d(a, b) / (alpha * big)) for a, b in pairs]
    beta = min(1.0, degree * n / 2 / sum(weight))
    edges = [e for e, w in zip(pairs, weight) if rng.random() < beta * w]
    # Join the components by the shortest edge between two of them (Kruskal).
    root = list(range(n))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for a, b in edges:
        root[find(a)] = find(b)
    for a, b in sorted(((a, b) for a in range(n) for b in range(a + 1, n)), key=lambda e: d(*e)):
        if find(a) != find(b):
            root[find(a)] = find(b)
            edges.append((a, b))
    return pos, edges


def topology_scenario(r: int, warmup: float, measure: float) -> dict:
    """A Waxman backbone of `r` routers, an edge host each, alpha and web traffic."""
    pos, edges = waxman(r)
    nodes = {f"R{i}": {"router": True} for i in range(r)}
    nodes |= {f"H{i}": {"address": f"10.{i // 250}.{i % 250 + 1}.1"} for i in range(r)}
    links = [
        {"between": [f"R{a}", f"R{b}"], "rate": "100Gbps", "mtu": "9000B",
         "delay": f"{max(1.0, US_PER_KM * math.dist(pos[a], pos[b])):.0f}us", "queue": {"fifo": {"limit": "50MB"}}}
        for a, b in edges
    ]
    links += [{"between": [f"H{i}", f"R{i}"], "rate": "10Gbps", "delay": "10us", "mtu": "9000B",
               "queue": {"fifo": {"limit": "12.5MB"}}} for i in range(r)]
    rng = random.Random(f"alpha:{r}")
    hosts = [f"H{i}" for i in range(r)]
    flows = []
    for j in range(max(1, r // 10)):
        a, b = rng.sample(hosts, 2)
        flows.append({"name": f"alpha{j}", "start": f"{10 * j}ms",
                      "tcp": {"from": a, "to": b, "host_profile": "default", "cc": "cubic", "mss": "8948B", "rwnd": "256MiB"}})
    web = {"name": "web", "poisson": {"rate": 20.0 * r, "pairs": {"all": hosts},
                                      "size": {"pareto": {"shape": 1.2, "mean": "100KB"}, "max": "100MB"}},
           "tcp": {"host_profile": "default", "mss": "1448B"}}
    return {"name": f"scaling-topology-{r}", "duration": f"{warmup + measure}s", "seed": 1,
            "metric_interval": f"{min(0.1, warmup + measure):g}s", "nodes": nodes, "links": links, "flows": flows, "workloads": [web]}


def rss_mb() -> float:
    """The resident set now (MB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def realtime(on: bool) -> None:
    """SCHED_FIFO 50 pinned to CPU 1 (`chrt -f 50 taskset -c 1`) for the
    measured part only, so that other jobs cannot take the core; back to
    the normal policy after. Without CAP_SYS_NICE it stays as it was."""
    try:
        if on:
            cpus = os.sched_getaffinity(0)
            os.sched_setaffinity(0, {1} if 1 in cpus else cpus)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
        else:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except PermissionError:
        pass


def child(series: str, size: int, warmup: float, measure: float, rt: bool = False) -> dict:
    """Run one point in this process; its figures."""
    from alphaqos import _core, load_scenario, resolve

    build = flows_scenario if series == "flows" else topology_scenario
    rss0 = rss_mb()
    t0 = time.perf_counter()
    config = json.dumps(resolve(load_scenario(build(size, warmup, measure))))
    sim = _core.Simulation(config)
    setup = time.perf_counter() - t0
    sim.advance(int(warmup * 1e9))
    open_rss = rss_mb()
    if rt:
        realtime(True)
    e0, t1, c1 = sim.events, time.perf_counter(), time.process_time()
    sim.advance(sim.duration_ns)
    wall, cpu = time.perf_counter() - t1, time.process_time() - c1
    if rt:
        realtime(False)
    events = sim.events - e0
    tables = sim.results()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    summary = tables["flow_summary"]
    tx = sum(summary["tx_bytes"])
    done = sum(e is not None for e in tables.get("transfers", {}).get("fct_ns", []))
    return {
        "series": series, "size": size, "setup_s": setup, "sim_s": measure, "wall_s": wall, "cpu_s": cpu,
        "events": events, "events_per_s": events / wall, "sim_per_wall": measure / wall,
        "peak_mb": peak, "engine_mb": peak - rss0, "open_rss_mb": open_rss - rss0,
        "flows_tx_gbit": tx * 8 / 1e9, "transfers_done": done,
    }


def run_point(series: str, size: int, warmup: float, measure: float, rt: bool = False) -> dict:
    args = [series, str(size), str(warmup), str(measure)] + (["--realtime"] if rt else [])
    out = subprocess.run([sys.executable, __file__, "--child", *args],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"scaling: {series} {size} failed:\n{out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def check(r: dict) -> None:
    """A point's outcome is sane before its speed counts."""
    where = f"scaling: {r['series']} {r['size']}"
    assert r["events"] > 0 and r["wall_s"] > 0, f"{where}: no events"
    assert r["flows_tx_gbit"] > 0, f"{where}: the flows sent nothing"
    if r["series"] == "topology":
        assert r["transfers_done"] > 0, f"{where}: no web transfer completed"


def plot(results: list[dict], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for series, xlabel in (("flows", "concurrent long-lived flows (100 Gbps bottleneck)"),
                           ("topology", "backbone routers (Waxman graph, an edge host each)")):
        rows = sorted((r for r in results if r["series"] == series), key=lambda r: r["size"])
        if not rows:
            continue
        x = [r["size"] for r in rows]
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
        for ax, key, label in zip(axes, ("events_per_s", "sim_per_wall", "peak_mb"),
                                  ("events per wall second", "simulated s per wall s", "peak resident memory (MB)")):
            ax.plot(x, [r[key] for r in rows], "o-")
            ax.set_xscale("log")
            if key != "events_per_s":
                ax.set_yscale("log")
            ax.set_xlabel(xlabel, fontsize=8)
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylim(bottom=0)
        fig.suptitle(f"alphaqos engine cost against {'flows' if series == 'flows' else 'topology size'}"
                     f" ({rows[0]['sim_s']:g} simulated s measured per point)")
        fig.tight_layout()
        path = out / f"scaling-{series}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        series, size, warmup, measure = argv[1], int(argv[2]), float(argv[3]), float(argv[4])
        print(json.dumps(child(series, size, warmup, measure, rt="--realtime" in argv)))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--series", choices=["flows", "topology", "both"], default="both")
    p.add_argument("--flows", default=",".join(map(str, FLOWS)), help="flow counts (comma-separated)")
    p.add_argument("--routers", default=",".join(map(str, ROUTERS)), help="router counts (comma-separated)")
    p.add_argument("--warmup", type=float, default=0.3, help="simulated seconds before measuring (default 0.3)")
    p.add_argument("--measure", type=float, default=0.3, help="simulated seconds measured (default 0.3)")
    p.add_argument("--repeat", type=int, default=2,
                   help="runs per point, the fastest kept (wall time on a shared machine only errs slow; default 2)")
    p.add_argument("--realtime", action="store_true",
                   help="the measured part of each point at SCHED_FIFO 50 on CPU 1 where permitted (as `make bench` runs it)")
    p.add_argument("--json", type=Path, help="write every point's figures here")
    p.add_argument("--plot", type=Path, help="write scaling-flows.png and scaling-topology.png here")
    a = p.parse_args(argv)

    def counts(text: str, what: str) -> list[int]:
        try:
            values = [int(v) for v in text.split(",")]
        except ValueError:
            p.error(f"--{what}: expected comma-separated whole numbers, got {text!r}")
        if any(v < 1 for v in values) or (what == "routers" and any(v < 2 for v in values)):
            p.error(f"--{what}: every count must be at least {2 if what == 'routers' else 1}, got {text!r}")
        return values

    if a.warmup < 0 or a.measure <= 0:
        p.error("--warmup must be >= 0 and --measure > 0")
    if a.repeat < 1:
        p.error(f"--repeat must be at least 1, got {a.repeat}")
    points = []
    if a.series in ("flows", "both"):
        points += [("flows", n) for n in counts(a.flows, "flows")]
    if a.series in ("topology", "both"):
        points += [("topology", r) for r in counts(a.routers, "routers")]
    print(f"scaling: {a.warmup:g} simulated s of warm-up, then {a.measure:g} measured, per point;"
          f" the fastest of {a.repeat} runs")
    print(f"{'series':<9} {'size':>6} {'setup s':>8} {'events':>11} {'events/s':>9} {'sim s/wall s':>12}"
          f" {'CPU/wall':>8} {'peak MB':>8} {'engine MB':>9}")
    results = []
    for series, size in points:
        r = max((run_point(series, size, a.warmup, a.measure, a.realtime) for _ in range(a.repeat)),
                key=lambda r: r["events_per_s"])
        check(r)
        results.append(r)
        print(f"{series:<9} {size:>6,} {r['setup_s']:>8.2f} {r['events']:>11,} {r['events_per_s'] / 1e6:>8.2f}M"
              f" {r['sim_per_wall']:>12.3f} {r['cpu_s'] / r['wall_s']:>8.2f} {r['peak_mb']:>8.0f} {r['engine_mb']:>9.0f}", flush=True)
    flows = sorted((r for r in results if r["series"] == "flows"), key=lambda r: r["size"])
    if len(flows) >= 2 and flows[-1]["size"] > flows[-2]["size"]:
        hi, lo = flows[-1], flows[-2]
        per = (hi["open_rss_mb"] - lo["open_rss_mb"]) * 2**20 / (hi["size"] - lo["size"])
        print(f"bytes per open connection: {per:,.0f} (resident set after the warm-up,"
              f" {lo['size']:,} to {hi['size']:,} flows)")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(results, indent=1))
    if a.plot:
        for path in plot(results, a.plot):
            print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
