"""``alphaqos emulate SCENARIO --link A-B --ifaces [NS:]IF,[NS:]IF``: run the
scenario's path between two real interfaces in real time with the engine's
QoS (the ``alphaqos-emu`` binary; see :mod:`alphaqos.emulate`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from ..output import default_run_dir, new_output_directory


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "emulate", help="run a scenario's path between two real interfaces, in real time (alphaqos-emu)",
        description="Forward frames between two interfaces through the scenario's links from the first node of "
        "--link to the last (filters, policers, queues, rates, delays), for --duration, and write a run directory.",
    )  # fmt: skip
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (YAML)")
    p.add_argument("--link", metavar="A-B[-C...]", required=True, help="the scenario's nodes the path crosses, in order")
    p.add_argument("--ifaces", metavar="[NS:]IF,[NS:]IF", required=True,
                   help="the interface at the first node of --link, then at the last (NS: its network namespace)")  # fmt: skip
    p.add_argument("--duration", metavar="D", default="10s", help="how long to run (default 10s)")
    p.add_argument("--out", metavar="DIR", type=Path, help="run directory to create (must not exist)")
    p.add_argument("--no-realtime", action="store_true", help="do not ask for SCHED_FIFO")
    p.add_argument("--spin", action="store_true", help="never sleep between events (one core at 100%%)")
    p.set_defaults(handler=run)


def _parse_ifaces(text: str) -> list[tuple[str | None, str]]:
    from ..emulate import EmuError

    items = [t.strip() for t in text.split(",")]
    if len(items) != 2 or not all(items):
        raise EmuError(f"--ifaces: expected two interfaces, [NS:]IF,[NS:]IF, got {text!r}")
    out = []
    for item in items:
        ns, sep, name = item.rpartition(":")
        out.append((ns if sep else None, name))
    return out


def run(args: argparse.Namespace) -> int:
    from .. import units
    from ..emulate import Emulator, EmuError, emu_binary, emu_config, save_run, timing
    from ..scenario import load_scenario, resolve

    scenario = load_scenario(args.scenario)
    try:
        duration_ns = units.parse_time(args.duration)
    except ValueError as exc:
        raise UsageError(f"--duration: {exc}") from None
    try:
        config = emu_config(resolve(scenario), args.link.split("-"), _parse_ifaces(args.ifaces),
                            duration_ns=int(duration_ns), spin=args.spin, realtime=not args.no_realtime)  # fmt: skip
        emu_binary()
    except EmuError as exc:
        raise UsageError(str(exc)) from None
    target = args.out if args.out is not None else default_run_dir(f"emulate-{scenario.name}")
    with new_output_directory(target) as staging:
        try:
            with Emulator(config) as emu:
                emu._proc.wait()
                tables = emu.stop()
        except EmuError as exc:
            raise UsageError(str(exc)) from None
        save_run(tables, staging, {"command": args.invocation, "config": config})
    for t in timing(tables):
        err = " ".join(f"{k} {t[f'delay_error_{k}_s'] * 1e6:.0f} µs" for k in ("p50", "p99", "max") if t[f"delay_error_{k}_s"] is not None)
        rate = t["achieved_rate_bps"]
        print(f"{t['direction']}: {t['sent_pkts']} frames; rate {units.fmt_rate(t['configured_rate_bps'])}"
              f"{f', achieved {units.fmt_rate(rate)}' if rate else ''}; delay error {err or '-'}")  # fmt: skip
    print(f"results: {target}/")
    return 0
