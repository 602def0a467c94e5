"""``alphaqos reproduce NAME``: run a source document's experiments and
report beside it."""

from __future__ import annotations

import argparse
from pathlib import Path

from .cmdline import EXIT_FAILURE, EXIT_OK
from ..errors import UsageError
from ..output import default_run_dir, new_output_directory, saving
from ._common import add_runner_options
from ._tables import _console, _fit, _table


def register(commands: argparse._SubParsersAction) -> None:
    from ..reproduce import REPRODUCTIONS

    reproduce = commands.add_parser("reproduce", help="run a source document's experiments and report beside it")
    reproduce.add_argument("name", metavar="NAME", choices=sorted(REPRODUCTIONS),
                           help=f"which document: {', '.join(sorted(REPRODUCTIONS))}")  # fmt: skip
    reproduce.add_argument("--quick", action="store_true", help="shortened timelines (about a minute on 2 cores)")
    reproduce.add_argument("--out", metavar="DIR", type=Path, help="report directory to create (must not exist)")
    add_runner_options(reproduce)
    reproduce.add_argument("--quiet", action="store_true", help="no progress bar or tables; print the directory")
    reproduce.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..emulate import EmuError
    from ..reproduce import reproduce

    target = args.out if args.out is not None else default_run_dir(f"reproduce-{args.name}{'-quick' if args.quick else ''}")
    with new_output_directory(target) as staging:
        display = Progress(
            TextColumn(f"[bold]{args.name}{' (quick)' if args.quick else ''}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("runs"), TimeElapsedColumn(), TextColumn("{task.fields[last]}"),
            console=Console(stderr=True), disable=args.quiet,
        )  # fmt: skip
        with display:
            task = display.add_task("runs", total=None, last="")
            try:
                reproduction = reproduce(
                    args.name,
                    quick=args.quick,
                    jobs=args.jobs,
                    dask=args.dask,
                    on_plan=lambda n: display.update(task, total=n),
                    on_done=lambda key, done, total: display.update(task, completed=done, last=key),
                )
            except EmuError as exc:  # the emulated runs cannot run here (root, tools, emulator)
                raise UsageError(str(exc)) from None
        saving("the report", target, lambda: reproduction.save(staging))
    if args.quiet:
        print(target)
    else:
        _print_reproduction(reproduction, target)
    return EXIT_OK if reproduction.all_hold else EXIT_FAILURE




def _print_reproduction(reproduction, target: Path) -> None:
    from rich import box

    console = _console()
    for title, rows in reproduction.tables.items():
        heads = list(rows[0])
        table = _table(title, box.SIMPLE_HEAD, heads[:1], heads[1:])
        for row in rows:
            table.add_row(*(str(row[h]) for h in heads))
        console.print(_fit(table))
    colours = {"holds": "green", "direction only": "yellow", "fails": "red", "not graded": "dim"}
    for finding in reproduction.findings:
        mark = f"[{colours.get(finding.grade, 'red')}]{finding.grade}[/]"
        console.print(f"{mark}  {finding.claim}\n       [dim]{finding.evidence}; {finding.sizes()}[/dim]")
    console.print(
        f"{reproduction.runs} runs in {reproduction.wall_time_s:.0f} s wall time "
        f"({reproduction.cpu_time_s:.0f} s of run time)"
    )
    console.print(f"report: {target / 'report.md'} (results.json, plots, scenarios/)")
