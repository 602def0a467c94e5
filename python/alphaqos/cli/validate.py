"""``alphaqos validate SCENARIO...``: check scenarios without running them."""

from __future__ import annotations

import argparse
from collections import Counter

from .. import units
from .cmdline import EXIT_OK, EXIT_USAGE
from ..errors import ScenarioError
from ._common import scenario_error


def register(commands: argparse._SubParsersAction) -> None:
    validate = commands.add_parser("validate", help="check scenario files without running them")
    validate.add_argument("scenarios", metavar="SCENARIO", nargs="+", help="scenario file (YAML)")
    validate.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..scenario import load_scenario

    status = EXIT_OK
    for path in args.scenarios:
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            scenario_error(exc)
            status = EXIT_USAGE
            continue
        print(f"{path}: ok: {_describe(scenario)}")
    return status


def _describe(scenario) -> str:
    """``name, 5 hosts, 2 routers, 6 links, 3 flows (1 tcp, 1 udp, 1 ping),
    2 workloads (1 transfer, 1 poisson), 200 s, seed 1``: every source of
    traffic is counted (workloads and deadline transfers when there are)."""
    routers = sum(node.router for node in scenario.nodes.values())
    parts = [scenario.name, _count("host", len(scenario.nodes) - routers), _count("router", routers),
             _count("link", len(scenario.links)), _count("flow", len(scenario.flows), [f.kind for f in scenario.flows])]  # fmt: skip
    if scenario.workloads:
        parts.append(_count("workload", len(scenario.workloads), [w.kind for w in scenario.workloads]))
    if scenario.deadline_transfers:
        parts.append(_count("deadline transfer", len(scenario.deadline_transfers)))
    return ", ".join([*parts, units.fmt_time_ns(scenario.duration), f"seed {scenario.seed}"])


def _count(noun: str, n: int, kinds: list[str] = ()) -> str:
    """``3 flows (1 tcp, 2 udp)``, ``1 router``."""
    text = f"{n:,} {noun}{'' if n == 1 else 's'}"
    if kinds:
        text += " (" + ", ".join(f"{count:,} {kind}" for kind, count in Counter(kinds).items()) + ")"
    return text
