"""Benchmark of scenario validation with many workloads (issue 20: 3,300
transfer workloads took 2.4 s to validate; the aim is 10^4 under a second).

    .venv/bin/python benches/validate_many.py [--workloads 10000] [--repeat 3]

Builds a 60 s scenario of ``--workloads`` transfer workloads between two
hosts, checks that :func:`alphaqos.scenario.load_scenario` accepts it with
every workload (and fills each one's TCP defaults), then prints the best of
``--repeat`` wall times and where it goes (cProfile, top entries).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from alphaqos.scenario import load_scenario


def scenario(n: int) -> dict:
    return {
        "name": "many", "duration": "60s",
        "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}},
        "links": [{"between": ["A", "B"], "rate": "10Gbps", "delay": "1ms"}],
        "workloads": [{"name": f"w{i}", "transfer": {"from": "A", "to": "B", "size": "20MB"},
                       "start": f"{i * 50_000 // n}ms"} for i in range(n)],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    doc = scenario(args.workloads)
    loaded = load_scenario(doc)
    assert len(loaded.workloads) == args.workloads and loaded.workloads[-1].tcp is not loaded.workloads[0].tcp
    best = float("inf")
    for _ in range(args.repeat):
        begin = time.perf_counter()
        load_scenario(doc)
        best = min(best, time.perf_counter() - begin)
    print(f"{args.workloads:,} workloads validated in {best:.2f} s (best of {args.repeat})")
    profile = cProfile.Profile()
    profile.runcall(load_scenario, doc)
    pstats.Stats(profile).sort_stats("cumulative").print_stats(12)


if __name__ == "__main__":
    main()
