"""``alphaqos plan-transfer [SCENARIO] [--size ... --deadline ... --rate ... --rtt ...]``:
plan a deadline transfer: its reservation schedule, expected completion
and reserved bandwidth (see :mod:`alphaqos.plan`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .. import units
from ..errors import Issue, ScenarioError
from ..output import write_atomic


def _refused(where: str, message: str) -> ScenarioError:
    return ScenarioError([Issue((where,), message)])


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "plan-transfer", help="plan a deadline transfer: its reservation schedule, completion and reserved bandwidth",
        description="Run a deadline transfer on the engine over a path (a scenario's, or the slides' model from "
        "--rate, --rtt, --background) and print the reservation schedule its method requests, the expected "
        "completion time and the reserved-bandwidth integral against a constant reservation; --out writes the "
        "scenario that checks it (alphaqos run).",
    )  # fmt: skip
    p.add_argument("scenario", metavar="SCENARIO", nargs="?", help="a scenario holding the deadline transfer")
    p.add_argument("--transfer", metavar="NAME", help="which deadline transfer of the scenario")
    p.add_argument("--size", help="file size, e.g. 10GB")
    p.add_argument("--deadline", help="time from the start, e.g. 60s")
    p.add_argument("--rate", help="the path's bottleneck rate, e.g. 1Gbps")
    p.add_argument("--rtt", help="the path's round-trip time, e.g. 20ms")
    p.add_argument("--background", default="0bps", help="constant-rate background marked OUT (default none)")
    p.add_argument("--method", default="proposed", help="proposed, fixed-cwnd, two-connections or conventional")
    p.add_argument("--block", default="1MB", help="block size (default 1MB)")
    p.add_argument("--margin", type=float, default=1.05, help="reservation margin (default 1.05)")
    p.add_argument("--out", metavar="FILE", type=Path, help="write the scenario that checks the plan")
    p.add_argument("--json", action="store_true", help="print the plan as one JSON document, without the progress bar")
    p.set_defaults(handler=run)


def _flag_scenario(args: argparse.Namespace) -> dict[str, Any]:
    from ..plan import path_scenario

    missing = [f"--{k}" for k in ("size", "deadline", "rate", "rtt") if getattr(args, k) is None]
    if missing:
        raise _refused("plan-transfer", f"give a SCENARIO, or {', '.join(missing)}")
    parsed = {}
    for key, parse in (("size", units.parse_size), ("deadline", units.parse_time), ("rate", units.parse_rate),
                       ("rtt", units.parse_time), ("background", units.parse_rate), ("block", units.parse_size)):  # fmt: skip
        try:
            parsed[key] = parse(getattr(args, key))
        except ValueError as exc:
            raise _refused(f"--{key}", str(exc)) from None
    return path_scenario(**parsed, method=args.method, margin=args.margin)


def run(args: argparse.Namespace) -> int:
    from ..plan import plan

    given = [k for k in ("size", "deadline", "rate", "rtt") if getattr(args, k) is not None]
    if args.scenario is not None and given:
        raise _refused("plan-transfer", f"give a SCENARIO or --{', --'.join(given)}, not both")
    source = args.scenario if args.scenario is not None else _flag_scenario(args)
    # The run's progress on stderr for people; --json is for scripts: quiet.
    found, scenario = plan(source, args.transfer, progress=not args.json)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out, scenario.to_yaml())
    if args.json:
        print(json.dumps({**found.to_json(), "scenario": None if args.out is None else str(args.out)}))
        return 0
    for line in found.lines():
        print(line)
    if args.out is not None:
        print(f"scenario written to {args.out} (check it with: alphaqos run {args.out})")
    return 0
