"""alphaqos benchmark (`make bench`): simulated seconds per wall second,
events per second and peak memory of the engine on reference scenarios.

Each case runs in a fresh child process so that its peak memory (the
process's maximum resident set, Python and the engine together) is its
own. A case's outcome is checked before its speed is reported: a fast
wrong answer is not a result.

Usage: python benches/run.py [CASE ...]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> (scenario file, description)
CASES = {
    "reference": (
        "reference-newreno-10g.yaml",
        "one NewReno flow, 10 Gbps bottleneck, 20 ms RTT, BDP buffer, 10 s",
    ),
    "cubic-100ms": (
        "cubic-10g-100ms.yaml",
        "one CUBIC flow, 10 Gbps, 100 ms RTT, BDP buffer, 30 s",
    ),
    "cubic-8flows": (
        "cubic-8flows-10g.yaml",
        "eight CUBIC flows sharing 10 Gbps, 20 ms RTT, BDP buffer, 10 s",
    ),
    "red-10g": (
        "red-10g.yaml",
        "eight CUBIC flows sharing 10 Gbps through RED (the baseline of wred-10g), 10 s",
    ),
    "wred-10g": (
        "wred-rtt-10g.yaml",
        "red-10g with wred_rtt_tuning every 50 ms (control plane cost)",
    ),
    "yaqs": (
        "reference-yaqs-10g.yaml",
        "the reference case with a YAQS bottleneck (c_f 16.5 kB, r 0.5): YAQS's per-packet cost",
    ),
    "fqcodel": (
        "reference-fqcodel-10g.yaml",
        "the reference case with an FQ-CoDel bottleneck (Linux defaults): FQ-CoDel's per-packet cost",
    ),
    "cubic-100g": (
        "cubic-100g-9000.yaml",
        "one CUBIC flow, 100 Gbps, 100 ms RTT, MTU 9000, BDP buffer (1.25 GB; window at most 1.07 GB), 20 s",
    ),
    "manyflows": (
        "manyflows-10g.yaml",
        "10 Gbps at 80% load of Poisson transfers (Pareto, mean 1 MB) + two CUBIC alpha flows, 20 ms RTT, 10 s",
    ),
}

# TCP payload per Ethernet frame with IPv4, TCP and timestamps: 1448 of 1538 B.
MAX_GOODPUT_10G = 10e9 * 1448 / 1538
# The largest window TCP can advertise, 65,535 << 14 B (RFC 7323 2.3), per
# 100 ms round trip: the one-flow ceiling of the 100 Gbps case (85.9 Gbit/s).
MAX_WINDOW_RATE_100MS = (65_535 << 14) * 8 / 0.1


def _mean_after(tcp: dict, flow: str, after_ns: float) -> float:
    rates = [g for f, t, g in zip(tcp["flow"], tcp["time_ns"], tcp["goodput_bps"]) if f == flow and t > after_ns]
    return sum(rates) / len(rates)


def check(name: str, tables: dict) -> str:
    """Assert the case's outcome; return a one-line description of it."""
    tcp = tables["tcp"]
    if name == "reference":
        util = _mean_after(tcp, "tcp", 3e9) / MAX_GOODPUT_10G
        assert util >= 0.95, f"reference case: utilization {util:.3f} < 0.95"
        return f"bottleneck utilization {util:.1%} after 3 s"
    if name == "cubic-100ms":
        util = _mean_after(tcp, "tcp", 10e9) / MAX_GOODPUT_10G
        assert util >= 0.9, f"cubic-100ms: utilization {util:.3f} < 0.9"
        return f"bottleneck utilization {util:.1%} after 10 s"
    if name == "cubic-100g":
        rate = _mean_after(tcp, "tcp", 5e9)
        assert rate >= 0.95 * MAX_WINDOW_RATE_100MS, f"cubic-100g: {rate / 1e9:.2f} Gbit/s < 95% of the window's limit"
        return f"goodput {rate / 1e9:.1f} Gbit/s after 5 s ({rate / MAX_WINDOW_RATE_100MS:.1%} of one window per RTT)"
    if name == "cubic-8flows":
        flows = sorted(set(tcp["flow"]))
        rates = [_mean_after(tcp, f, 3e9) for f in flows]
        util = sum(rates) / MAX_GOODPUT_10G
        jain = sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))
        assert util >= 0.95, f"cubic-8flows: utilization {util:.3f} < 0.95"
        return f"utilization {util:.1%}, Jain's index {jain:.3f} after 3 s"
    if name in ("red-10g", "wred-10g"):
        util = sum(_mean_after(tcp, f, 3e9) for f in set(tcp["flow"])) / MAX_GOODPUT_10G
        changes = len(tables["control"]["knob"])
        assert util >= 0.8, f"{name}: utilization {util:.3f} < 0.8"
        assert (changes > 300) == (name == "wred-10g"), f"{name}: {changes} knob changes"
        return f"bottleneck utilization {util:.1%} after 3 s, {changes} knob changes"
    if name in ("yaqs", "fqcodel"):
        util = _mean_after(tcp, "tcp", 3e9) / MAX_GOODPUT_10G
        assert util >= 0.3, f"{name}: utilization {util:.3f} < 0.3"
        return f"bottleneck utilization {util:.1%} after 3 s"
    if name == "manyflows":
        t = tables["transfers"]
        started = len(t["fct_ns"])
        done = sum(f is not None for f in t["fct_ns"])
        offered = sum(t["size_bytes"]) * 8 / 10
        assert done >= 0.9 * started, f"manyflows: only {done} of {started} transfers completed"
        assert 0.5 * 8e9 < offered < 2 * 8e9, f"manyflows: offered {offered / 1e9:.2f} Gbit/s for 8"
        alpha = [g for f, g in zip(tables["flow_summary"]["flow"], tables["flow_summary"]["goodput_bps"]) if f.startswith("alpha")]
        assert all(g > 0 for g in alpha), f"manyflows: an alpha flow got nothing: {alpha}"
        return (f"{done:,} of {started:,} transfers done, offered {offered / 1e9:.2f} Gbit/s,"
                f" alpha flows {alpha[0] / 1e9:.2f} and {alpha[1] / 1e9:.2f} Gbit/s")
    raise KeyError(name)


def child(name: str) -> None:
    """Run one case in this process and print its figures as JSON."""
    from alphaqos import _core, load_scenario, resolve

    scenario = load_scenario(HERE / CASES[name][0])
    config = json.dumps(resolve(scenario))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    sim = _core.Simulation(config)
    sim.advance(sim.duration_ns)
    wall = time.perf_counter() - start
    tables = sim.results()
    outcome = check(name, tables)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    streams = tables.get("transfer_streams", {}).get("end_ns", [])
    print(json.dumps({
        "conns": sum(e is not None for e in streams),
        "case": name,
        "sim_s": sim.duration_ns / 1e9,
        "wall_s": wall,
        "events": sim.events,
        "peak_rss_mb": peak / 1024,
        "rss_before_mb": rss_before / 1024,
        "outcome": outcome,
    }))


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--child":
        child(argv[1])
        return 0
    names = argv or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"bench: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    print(f"{'case':<14} {'sim s/wall s':>12} {'events/s':>12} {'peak MB':>8}  outcome")
    ns_per_event: dict[str, float] = {}
    speed = {}
    for name in names:
        out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            print(f"bench: case {name} failed", file=sys.stderr)
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        speed[name] = (r["sim_s"] / r["wall_s"], r["events"] / r["wall_s"])
        print(
            f"{name:<14} {r['sim_s'] / r['wall_s']:>12.2f} {r['events'] / r['wall_s'] / 1e6:>11.2f}M"
            f" {r['peak_rss_mb']:>8.0f}  {r['outcome']}"
        )
        print(f"{'':<14} {CASES[name][1]}; {r['events']:,} events in {r['wall_s']:.2f} s;"
              f" RSS before the run {r['rss_before_mb']:.0f} MB")
        ns_per_event[name] = r["wall_s"] / r["events"] * 1e9
        if r["conns"]:
            print(f"{'':<14} {r['conns']:,} connections completed: {r['conns'] / r['wall_s']:,.0f} per wall second")
    if "red-10g" in speed and "wred-10g" in speed:
        # The agent changes the run (other thresholds, other events): its
        # cost is read on the wall time per event, and on the speed.
        per_event = speed["red-10g"][1] / speed["wred-10g"][1] - 1
        per_sim_s = speed["red-10g"][0] / speed["wred-10g"][0] - 1
        print(f"control: a 50 ms wred_rtt_tuning costs {per_event:+.1%} wall time per event,"
              f" {per_sim_s:+.1%} per simulated second on a 10 Gbps run (target under 5%)")
    print("control: with no agent declared, compare the reference case with the same case on a build"
          " without the control plane (target: within 2%); `make bench` on main gives that figure")
    # The queue disciplines' cost per event against the FIFO reference (the
    # same topology and flow: the events are nearly all packet hops).
    if "reference" in ns_per_event:
        for name in ("yaqs", "fqcodel"):
            if name in ns_per_event:
                ratio = ns_per_event[name] / ns_per_event["reference"]
                print(f"{name}: {ns_per_event[name]:.0f} ns per event, {ratio:.2f} x the FIFO reference's {ns_per_event['reference']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
