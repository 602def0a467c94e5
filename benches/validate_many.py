"""Benchmark of scenario validation with many items (issue 20: 3,300
transfer workloads took 2.4 s to validate; the aim is 10^4 under a second).

    .venv/bin/python benches/validate_many.py [--workloads 10000] [--flows 10000] [--repeat 3] [--profile]

Builds a 60 s scenario of ``--workloads`` transfer workloads between two
hosts, and one of ``--flows`` flows of every kind (TCP, UDP, ping, Poisson,
ON/OFF, video in turn); checks that :func:`alphaqos.scenario.load_scenario`
accepts each with every item (and fills the workloads' TCP defaults), then
prints the best of ``--repeat`` wall times of each (0 items: skipped) and,
with ``--profile``, where the time goes (cProfile, top entries).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from alphaqos.scenario import DEFAULT_WORKLOAD_TCP, load_scenario

HOSTS = {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}}
LINKS = [{"between": ["A", "B"], "rate": "10Gbps", "delay": "1ms"}]


def scenario(n: int) -> dict:
    """``n`` transfer workloads, starting every 50 s / n."""
    return {
        "name": "many", "duration": "60s", "nodes": HOSTS, "links": LINKS,
        "workloads": [{"name": f"w{i}", "transfer": {"from": "A", "to": "B", "size": "20MB"},
                       "start": f"{i * 50_000 // n}ms"} for i in range(n)],
    }  # fmt: skip


FLOW_KINDS = {
    "tcp": {"cc": "cubic", "size": "10MB"},
    "udp": {"rate": "10Mbps"},
    "ping": {"interval": "100ms"},
    "poisson": {"rate": "5Mbps"},
    "onoff": {"rate": "64kbps", "size": "200B"},
    "video": {"rate": "4Mbps"},
}


def flows_scenario(n: int) -> dict:
    """``n`` flows, the kinds of :data:`FLOW_KINDS` in turn, starting every 50 s / n."""
    kinds = list(FLOW_KINDS.items())
    flows = []
    for i in range(n):
        kind, spec = kinds[i % len(kinds)]
        flows.append({"name": f"f{i}", kind: {"from": "A", "to": "B", **spec}, "start": f"{i * 50_000 // n}ms"})
    return {"name": "many-flows", "duration": "60s", "nodes": HOSTS, "links": LINKS, "flows": flows}


def best_of(repeat: int, doc: dict) -> float:
    best = float("inf")
    for _ in range(repeat):
        begin = time.perf_counter()
        load_scenario(doc)
        best = min(best, time.perf_counter() - begin)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--flows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    args = parser.parse_args()
    if args.workloads:
        doc = scenario(args.workloads)
        loaded = load_scenario(doc)
        assert len(loaded.workloads) == args.workloads
        # Workloads without tcp share the frozen default (see DEFAULT_WORKLOAD_TCP).
        assert all(wl.tcp is DEFAULT_WORKLOAD_TCP for wl in loaded.workloads)
        assert loaded.workloads[-1].start == (args.workloads - 1) * 50_000 // args.workloads * 10**6
        report(f"{args.workloads:,} workloads", doc, args)
    if args.flows:
        doc = flows_scenario(args.flows)
        loaded = load_scenario(doc)
        assert len(loaded.flows) == args.flows
        assert [f.kind for f in loaded.flows[: len(FLOW_KINDS)]] == list(FLOW_KINDS)[: args.flows]
        report(f"{args.flows:,} flows", doc, args)


def report(what: str, doc: dict, args: argparse.Namespace) -> None:
    """Print the best wall time of loading ``doc`` and, asked, its profile."""
    print(f"{what} validated in {best_of(args.repeat, doc):.2f} s (best of {args.repeat})")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(load_scenario, doc)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(12)

if __name__ == "__main__":
    main()
