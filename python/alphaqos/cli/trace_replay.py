"""``alphaqos trace-replay TRACE --queue SPEC``: replay a packet trace into a
link of beta times its mean rate and measure the queue (:mod:`alphaqos.trace`)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..output import default_run_dir, new_output_directory, saving
from ._tables import _table


def register(commands: argparse._SubParsersAction) -> None:
    from ..trace import DEFAULT_BETA

    p = commands.add_parser(
        "trace-replay", help="replay a packet trace into a link of beta x its mean rate and measure the queue",
        description="Replay a pcap or CSV trace into a downstream link of --beta times the trace's mean rate, with "
        "an unbounded buffer, once per --queue, and write a run directory (replay.parquet, replay_series.parquet, "
        "qlen_hist.parquet, summary.json, plots/queue_ccdf.png). Liberatore, 'Local Flow Separation', Section IV.",
    )  # fmt: skip
    p.add_argument("trace", metavar="TRACE", type=Path, help="pcap, or CSV (time,size,src,dst,sport,dport,proto)")
    p.add_argument("--queue", metavar="[LABEL=]SPEC", dest="queues", action="append", required=True,
                   help="a discipline (fifo, yaqs, fq_codel, sfq), its YAML ('yaqs: {r: 0.1}'), or a queue, "
                   "policy or scenario file; repeat to compare")  # fmt: skip
    p.add_argument("--beta", metavar="B", type=float, default=DEFAULT_BETA,
                   help=f"downstream rate over the trace's mean rate (default {DEFAULT_BETA})")  # fmt: skip
    p.add_argument("--out", metavar="DIR", type=Path, help="run directory to create (must not exist)")
    p.add_argument("--quiet", action="store_true", help="no table; print the run directory")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from .._version import __version__
    from ..trace import TraceError, number_labels, parse_queue, run_all, trace_info, write_run

    try:
        if not (args.beta > 0 and math.isfinite(args.beta)):
            raise TraceError(f"--beta must be above 0, got {args.beta:g}")
        specs = number_labels([parse_queue(text) for text in args.queues])
        info = trace_info(args.trace)
        if args.beta < 1:
            print(f"alphaqos: note: --beta {args.beta:g} is below 1: the downstream link is slower than the trace's mean "
                  "rate and the queue grows for good", file=sys.stderr)  # fmt: skip
        started = time.perf_counter()
        runs = run_all(info, specs, args.beta)
    except TraceError as exc:
        raise UsageError(str(exc)) from None
    target = args.out if args.out is not None else default_run_dir(f"trace-replay-{args.trace.stem}")
    manifest = {"alphaqos": __version__, "command": args.invocation, "wall_time_s": round(time.perf_counter() - started, 3)}
    with new_output_directory(target) as staging:
        saving("the replay", target, lambda: write_run(staging, info, args.beta, runs, manifest))
    if args.quiet:
        print(target)
    else:
        _print(info, args.beta, runs, target)
    return 0


def _print(info, beta: float, runs: dict[str, Any], target: Path) -> None:
    from rich import box
    from rich.console import Console

    from .. import units
    from ..trace import PLOT

    rate = next(iter(runs.values()))["summary"]["rate_bps"]
    table = _table(
        f"{info.path.name}: {info.packets:,} packets over {info.span_s:.1f} s, mean {units.fmt_rate(info.mean_rate_bps)}; "
        f"downstream {units.fmt_rate(rate)} (beta {beta:g})", box.SIMPLE_HEAD, ["queue"],
        ["max (KB)", "mean (KB)", "p90 (KB)", "drops", "slow flows max / mean", "slow share", "nop share",
         "false pos. / strict"],
    )  # fmt: skip
    for name, r in runs.items():
        s = r["summary"]
        yaqs = "slow_flows_max" in s
        pct = lambda v: "-" if v is None else f"{v:.4f}%"  # noqa: E731
        table.add_row(
            name, f"{s['qmax_bytes'] / 1e3:,.1f}", f"{s['qmean_bytes'] / 1e3:,.1f}", f"{s['q90_bytes'] / 1e3:,.1f}",
            f"{s['drops']:,}",
            f"{s['slow_flows_max']} / {s['slow_flows_mean']:.2f}" if yaqs else "-",
            f"{100 * s['slow_share']:.1f}%" if yaqs else "-",
            f"{100 * s['nop_share']:.1f}%" if yaqs else "-",
            f"{pct(s['false_positive_pct'])} / {pct(s['strict_false_positive_pct'])}" if yaqs else "-",
        )  # fmt: skip
    console = Console() if sys.stdout.isatty() else Console(width=140)
    console.print(table)
    console.print("(for YAQS the queue is its fast queue, the one other flows wait in)")
    console.print(f"results: {target}/ (replay.parquet, replay_series.parquet, qlen_hist.parquet, summary.json)")
    console.print(f"plot:    {target / 'plots' / PLOT}")
