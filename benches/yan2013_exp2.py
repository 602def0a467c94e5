"""Benchmark (`make bench`): the first document's experiment 2 in full.

4 runs (one per configuration: a 10 Gbps α flow for 181 s while the UDP
background steps through 0.5-3 Gbps by 0.5 in an on-off pattern, as the
document's Fig. 4) fanned out over the machine's cores, as
`alphaqos reproduce yan2013` runs them. Prints the wall time of the whole
experiment and the simulated seconds per wall second of its runs; checks
the outcome first (Table I's 2-queues column: near line rate without
background, falling as the background grows).

Usage: python benches/yan2013_exp2.py [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from alphaqos.reproduce import run_specs, yan2013


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    specs = [s for s in yan2013.plan(quick=False) if s.key.startswith("exp2/")]
    started = time.perf_counter()
    measured = run_specs(yan2013.__name__, specs, jobs=args.jobs)
    wall = time.perf_counter() - started

    cells = yan2013.split_steps(measured)
    two = [cells[f"exp2/2q (50,50)/{r:g}"]["throughput_bps"] / 1e9 for r in yan2013.EXP2_RATES]
    assert two[0] > 8.5, f"2-queues without background: {two[0]:.2f} Gbps"
    assert all(a > b for a, b in zip(two, two[1:])), f"2-queues column not falling: {two}"

    speeds = [m["sim_time_s"] / m["wall_time_s"] for m in measured.values()]
    events = sum(m["events"] for m in measured.values())
    run_time = sum(m["wall_time_s"] for m in measured.values())
    sim = max(m["sim_time_s"] for m in measured.values())
    print(f"experiment 2: {len(measured)} runs of {sim:g} s simulated on {args.jobs} worker(s)")
    print(f"  wall time           {wall:8.1f} s   (runs add up to {run_time:.1f} s)")
    print(f"  sim s per wall s    {statistics.mean(speeds):8.2f}     per run; slowest {min(speeds):.2f}, fastest {max(speeds):.2f}")
    print(f"  events per second   {events / run_time / 1e6:8.2f} M   per worker")
    print("  2-queues column (Gbps): " + ", ".join(f"{t:.2f}" for t in two) + "  (Table I: 9.12 ... 6.46)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
