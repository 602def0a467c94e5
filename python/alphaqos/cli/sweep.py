"""``alphaqos sweep SCENARIO --set PATH=V1,V2,...``: run a grid of
scenario variants and tabulate their headline figures."""

from __future__ import annotations

import argparse
from pathlib import Path

from .cmdline import EXIT_FAILURE, EXIT_OK, positive_int
from ..errors import UsageError
from ..output import default_run_dir, new_output_directory, saving
from ._common import add_runner_options
from ._tables import _console


def register(commands: argparse._SubParsersAction) -> None:
    sweep = commands.add_parser(
        "sweep", help="run a grid of scenario variants and tabulate their headline figures",
        description="Run every combination of the --set values (times --seeds seeds), each in its own process, "
        "and write sweep.parquet (one row per run) and plots of each figure against each swept path. "
        "An existing --out of the same sweep is resumed: only the missing runs are made (one of another grid is "
        "refused without --force). Exit status 1 if a run failed "
        "(its row says why; the others ran). Paths, values and the table's columns: the alphaqos.sweep module.",
    )  # fmt: skip
    sweep.add_argument("scenario", metavar="SCENARIO", help="scenario file (YAML)")
    sweep.add_argument("--set", metavar="PATH=V1,V2,...", dest="sets", action="append", default=[],
                       help="a scenario field by its path (links[2].rate, flows[alpha].tcp.cc) and the values "
                       "to try, in the scenario's units; repeat for more dimensions")  # fmt: skip
    sweep.add_argument("--seeds", metavar="N", type=positive_int, default=1,
                       help="run each variant with the scenario's seed and the N-1 next ones (default 1)")  # fmt: skip
    sweep.add_argument("--out", metavar="DIR", type=Path, help="sweep directory: created, or resumed if it holds the same sweep")
    sweep.add_argument("--force", action="store_true", help="replace a sweep of another grid in --out")
    add_runner_options(sweep)
    sweep.add_argument("--quiet", action="store_true", help="no progress bar or summary; print the directory")
    sweep.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .. import sweep

    plan = sweep.plan_sweep(args.scenario, args.sets, args.seeds)
    target = args.out if args.out is not None else default_run_dir(f"sweep-{plan.name}")
    if not target.exists():
        with new_output_directory(target) as staging:
            saving("the sweep", target, lambda: sweep.prepare(plan, staging))
    elif not (target / sweep.SWEEP_FILE).is_file():
        raise UsageError(f"output directory {str(target)!r} exists and holds no sweep ({sweep.SWEEP_FILE})")
    elif not args.force:
        _same_grid(target / sweep.SWEEP_FILE, plan.describe())
    display = Progress(
        TextColumn(f"[bold]sweep {escape(plan.name)}"), BarColumn(), MofNCompleteColumn(), TextColumn("runs"),
        TimeElapsedColumn(), TextColumn("{task.fields[last]}"), console=Console(stderr=True), disable=args.quiet,
    )  # fmt: skip
    with display:
        task = display.add_task("runs", total=None, last="")

        def started(todo: int, done: int) -> None:
            display.update(task, total=todo, last=f"({done} done before)" if done else "")

        def finished(variant, outcome) -> None:
            display.update(task, advance=1, last=escape(f"{variant.label}: {'ok' if outcome.ok else 'FAILED'}"))

        result = saving(
            "the sweep", target, lambda: sweep.run_sweep(plan, target, jobs=args.jobs, dask=args.dask, on_start=started, on_done=finished)
        )
    if args.quiet:
        print(target)
    else:
        console = _console()
        failed = result.failed
        for row in failed.iter_rows(named=True):
            values = " ".join([*(f"{d.path}={row[d.path]}" for d in plan.dimensions), f"seed={row[sweep.SEED]}"])
            console.print(f"[red]failed[/red] {escape(values)}: {escape(row[sweep.ERROR])}", highlight=False)
        console.print(
            f"{result.table.height} runs ({result.ran} run now, {result.reused} done before, {failed.height} failed)"
        )
        console.print(f"table: {target / sweep.TABLE_FILE}")
        console.print(f"plots: {target / sweep.PLOTS_DIR}/ ({len(result.plots)})")
    return EXIT_OK if result.failed.is_empty() else EXIT_FAILURE


def _same_grid(path: Path, wanted: dict) -> None:
    """Resume only the sweep asked for: a directory holding a sweep of
    another grid (other --set values, seeds or scenario) is refused, since
    its table and plots would be replaced."""
    import json

    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {str(path)!r}: {exc}") from None
    if held.get("runs") == wanted["runs"]:
        return
    sets = " ".join(f"--set {s}" for s in held.get("sets", [])) or "no --set"
    raise UsageError(
        f"{str(path.parent)!r} holds another sweep ({held.get('scenario')}, {sets}, --seeds {held.get('seeds')}); "
        "give another --out, or --force to replace it"
    )
