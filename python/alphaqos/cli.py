"""The ``alphaqos`` command line.

``alphaqos run SCENARIO [--out DIR] [--seed N] [--duration D] [--quiet]``
    Validate the scenario, simulate it with a progress bar, write the run
    directory (see :mod:`alphaqos.results`) and print a summary per flow and
    per queue. The default directory is ``runs/<name>-<UTC time>``; an
    existing ``--out`` is an error. The run is written into a hidden
    directory beside the target and renamed at the end, so a failed or
    interrupted run leaves nothing behind.

``alphaqos validate SCENARIO...``
    Check scenarios without running them; one line per file.

``alphaqos reproduce NAME [--quick] [--out DIR] [--jobs N | --dask ADDRESS]``
    Run a source document's experiments (``yan2013``), fanned out over the
    cores or a Dask cluster (:mod:`alphaqos.runner`), and write a report
    directory: ``report.md`` (tables beside the document's with their
    ratios, the findings graded by direction and size: holds, direction
    only, fails), ``results.json``, plots and every
    run's scenario. ``--quick`` shortens the timelines (about a minute).
    Exit status 0 if every finding holds, 1 otherwise (see
    :mod:`alphaqos.reproduce.grading`; a finding may also be "not graded").

``alphaqos reproduce-summary DIR... [--save FILE]``
    Count the graded findings of reproduction report directories per
    document and grade (holds, direction only, fails, not graded) with the
    mode and commit each came from, as a markdown table (the README's);
    ``--save`` also writes the graded findings it counted (JSON).

``alphaqos reference [--out FILE]``
    Write ``docs/scenario-reference.md``: every key of a scenario and a
    policy with its type, unit, default and an example, from the schema
    (:mod:`alphaqos.reference`).

``alphaqos sweep SCENARIO --set PATH=V1,V2,... [--set ...] [--seeds N] [--out DIR] [--jobs N | --dask ADDRESS]``
    Run the grid of the scenario's variants, each in a process of its own,
    and write ``sweep.parquet`` (one row per run: the swept values, the
    seed, ok or failed, the headline figures) and a plot of each figure
    against each swept path (see :mod:`alphaqos.sweep`). An existing
    ``--out`` of the same sweep is resumed: only the runs it lacks are made;
    one of another grid is refused (exit 2) unless ``--force`` replaces it.
    Exit status 1 if a run failed (its row says why; the others ran).

``alphaqos dimension relative --profile NAME=RATE/BURST ... --link RATE --rtt T [--check] [--out DIR]``
    Dimension a Relative Service (the fifth source document): weight_REL
    for equation 1, WRED per colour from equation 2, a policy document for
    ``alphaqos provision`` (see :mod:`alphaqos.dimension`).

``alphaqos provision (--prefixes DB | --prefix-list FILE) [--policy FILE] --out DIR``
    Render the α prefix table of ``flows identify`` and a policy document
    (default: the first document's two queues) as Junos, Cisco IOS, Linux
    tc and nftables configuration, each with a diff against the previous
    run in ``DIR`` (see :mod:`alphaqos.provision`).

``alphaqos shape DEV --rate RATE [--share 90%] [--match ...] [--dry-run | --show | --remove]``
    Shape what the host sends on DEV to a share of a reserved circuit with
    HTB, applied over netlink (see :mod:`alphaqos.provision.shape`).

``alphaqos emulate SCENARIO --link A-B --ifaces [NS:]IF,[NS:]IF [--duration D] [--out DIR]``
    Run the scenario's path between two real interfaces in real time with
    the engine's QoS (the ``alphaqos-emu`` binary; see :mod:`alphaqos.emulate`).

``alphaqos trace-replay TRACE --queue SPEC [--queue ...] [--beta 1.15] [--out DIR]``
    Replay a pcap or CSV packet trace into a link of beta times its mean
    rate with an unbounded buffer, under each discipline, and write the
    queue's maximum, mean and 90th percentile (and YAQS's slow flows, nop
    share and false positives) with a CCDF plot (see :mod:`alphaqos.trace`).

Bad input (an invalid scenario, an existing or unwritable output directory,
a malformed option) is reported on one line, ``alphaqos: error: ...``, with
exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import secrets
import shlex
import shutil
import signal
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from . import columns as col
from . import units
from ._version import __version__
from .engine import EngineMissingError, simulate
from .errors import ScenarioError, ScenarioNote
from .runner import RunError
from .results import PLOTS_DIR, Results
from .scenario import Scenario, load_scenario

__all__ = ["entry", "main"]

EXIT_OK = 0
EXIT_FAILURE = 1  # the engine is missing, or the results could not be written
EXIT_USAGE = 2  # bad input
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_TERMINATED = 143  # 128 + SIGTERM

DEFAULT_RUNS_DIR = Path("runs")


class UsageError(Exception):
    """Bad command-line input, reported on one line with exit status 2."""


class RunFailure(Exception):
    """The run could not complete for a reason other than its input."""


class Terminated(BaseException):
    """SIGTERM arrived: unwound like Ctrl-C, so that nothing half-written
    stays (a BaseException, so that no ``except Exception`` swallows it)."""


def _terminate(signum, frame) -> None:
    raise Terminated


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage dump)."""

    def error(self, message: str):
        raise UsageError(message)


def entry() -> None:
    """The ``alphaqos`` command and ``python -m alphaqos``: :func:`main`,
    then exit with its status. Interrupted (Ctrl-C, SIGTERM), the process
    ends as soon as :func:`main` has cleaned up (the staged run directory
    removed, the message written): the interpreter's teardown of polars,
    the engine and matplotlib takes 0.4 s here and seconds on a loaded
    machine, and an interrupt is to be honoured within a second."""
    status = main()
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()
        os._exit(status)
    raise SystemExit(status)


def main(argv: list[str] | None = None) -> int:
    """Run the ``alphaqos`` command with ``argv`` (default: the process's
    arguments) and return the exit status; :func:`entry` is the command."""
    arguments = sys.argv[1:] if argv is None else argv
    # SIGTERM would end the process where it stands; raised as an exception
    # instead, it unwinds through the clean-ups (the staged run directory).
    # The engine looks at signals every ~10^6 events (alphaqos._core).
    previous = None
    with contextlib.suppress(ValueError):  # not the main thread: leave it
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(arguments)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(arguments: list[str]) -> int:
    try:
        args = _parser().parse_args(arguments)
        args.invocation = shlex.join(["alphaqos", *arguments])
        return args.handler(args)
    except ScenarioError as exc:
        _scenario_error(exc)
        return EXIT_USAGE
    except UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except (EngineMissingError, RunFailure, RunError) as exc:
        _error(str(exc))
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("alphaqos: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("alphaqos: terminated", file=sys.stderr)
        return EXIT_TERMINATED


def _error(message: str) -> None:
    print(f"alphaqos: error: {' '.join(message.split())}", file=sys.stderr)


def _scenario_error(exc: ScenarioError) -> None:
    """Every problem of a file, one line each (at most MAX_REPORTED)."""
    for line in exc.lines():
        _error(line)


@contextmanager
def _notes() -> Iterator[None]:
    """Print what loading a scenario noted (a flow left out of a shortened
    run) as ``alphaqos: note: ...`` lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ScenarioNote)
        yield
    for warning in caught:
        print(f"alphaqos: note: {warning.message}", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="alphaqos", description="Packet-level simulation of QoS for large dataset transfers.")
    parser.add_argument("--version", action="version", version=f"alphaqos {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="simulate a scenario and write its results")
    run.add_argument("scenario", metavar="SCENARIO", help="scenario file (YAML)")
    run.add_argument("--out", metavar="DIR", type=Path, help="run directory to create (must not exist)")
    run.add_argument("--seed", metavar="N", type=int, help="override the scenario's seed")
    run.add_argument("--duration", metavar="D", type=_time_argument, help="run for D instead (e.g. 10s): the timeline is cut, not rescaled; flows and workloads that start at or after D are left out (with a note)")
    run.add_argument("--quiet", action="store_true", help="no progress bar or summary; print the run directory")
    run.set_defaults(handler=_run)

    validate = commands.add_parser("validate", help="check scenario files without running them")
    validate.add_argument("scenarios", metavar="SCENARIO", nargs="+", help="scenario file (YAML)")
    validate.set_defaults(handler=_validate)

    from .reproduce import REPRODUCTIONS

    reproduce = commands.add_parser("reproduce", help="run a source document's experiments and report beside it")
    reproduce.add_argument("name", metavar="NAME", choices=sorted(REPRODUCTIONS),
                           help=f"which document: {', '.join(sorted(REPRODUCTIONS))}")  # fmt: skip
    reproduce.add_argument("--quick", action="store_true", help="shortened timelines (about a minute on 2 cores)")
    reproduce.add_argument("--out", metavar="DIR", type=Path, help="report directory to create (must not exist)")
    _add_runner_options(reproduce)
    reproduce.add_argument("--quiet", action="store_true", help="no progress bar or tables; print the directory")
    reproduce.set_defaults(handler=_reproduce)
    summary = commands.add_parser("reproduce-summary", help="count the graded findings of reproduction reports, per document")
    summary.add_argument("dirs", metavar="DIR", nargs="+", type=Path, help="a report directory of alphaqos reproduce (its results.json)")
    summary.add_argument("--save", metavar="FILE", type=Path, help="also write the graded findings the table counts (JSON)")
    summary.set_defaults(handler=_reproduce_summary)

    reference = commands.add_parser("reference", help="write the scenario and policy reference (markdown) from the schema")
    reference.add_argument("--out", metavar="FILE", type=Path, help="file to write (default: standard output)")
    reference.set_defaults(handler=_reference)
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
    sweep.add_argument("--seeds", metavar="N", type=_positive_int, default=1,
                       help="run each variant with the scenario's seed and the N-1 next ones (default 1)")  # fmt: skip
    sweep.add_argument("--out", metavar="DIR", type=Path, help="sweep directory: created, or resumed if it holds the same sweep")
    sweep.add_argument("--force", action="store_true", help="replace a sweep of another grid in --out")
    _add_runner_options(sweep)
    sweep.add_argument("--quiet", action="store_true", help="no progress bar or summary; print the directory")
    sweep.set_defaults(handler=_sweep)

    from .flows.cli import add_flows_command

    add_flows_command(commands)

    from .provision.cli import add_provision_command

    add_provision_command(commands)

    from .dimension import add_dimension_command

    add_dimension_command(commands)

    from .provision.shape import add_shape_command

    add_shape_command(commands)

    from .emulate import add_emulate_command

    add_emulate_command(commands)

    from .plan import add_plan_command

    add_plan_command(commands)

    from .trace import add_trace_replay_command

    add_trace_replay_command(commands)

    from .circuits.cli import add_circuits_command

    add_circuits_command(commands)

    from .transfer.cli import add_transfer_command

    add_transfer_command(commands)
    return parser


def _add_runner_options(command: argparse.ArgumentParser) -> None:
    where = command.add_mutually_exclusive_group()
    where.add_argument("--jobs", metavar="N", type=_positive_int, help="parallel runs (default: one per core)")
    where.add_argument("--dask", metavar="ADDRESS",
                       help="run on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.5:8786)")  # fmt: skip


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _time_argument(text: str) -> str:
    """Check a time option here, so that a bad one is named as the option."""
    try:
        units.parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


# --- alphaqos run -----------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    with _notes():
        scenario = load_scenario(args.scenario, seed=args.seed, duration=args.duration)
    target = args.out if args.out is not None else _default_run_dir(scenario.name)
    with _staged_directory(target) as staging:
        taps = staging / "taps" if any(link.tap or link.taps for link in scenario.links) else None
        results = simulate(scenario, progress=not args.quiet, command=args.invocation, tap_dir=taps)
        _save("the results", target, lambda: results.save(staging))
    if args.quiet:
        print(target)
    else:
        _print_summary(results, target)
    return EXIT_OK


def _default_run_dir(name: str) -> Path:
    """``runs/<name>-<UTC time>``, with a counter if that is taken."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = DEFAULT_RUNS_DIR / f"{name}-{stamp}"
    candidate, counter = base, 1
    while candidate.exists():
        counter += 1
        candidate = base.with_name(f"{base.name}-{counter}")
    return candidate


def _save(what: str, target: Path, save):
    """Return ``save()``; an OSError becomes a RunFailure naming ``target``."""
    try:
        return save()
    except OSError as exc:
        raise RunFailure(f"cannot write {what} into {str(target)!r}: {exc.strerror or exc}") from None


@contextmanager
def _staged_directory(target: Path) -> Iterator[Path]:
    """Yield a fresh hidden directory beside ``target``; rename it to
    ``target`` if the body succeeds, else remove it (and any parent
    directories made for it)."""
    if target.exists() or target.is_symlink():
        raise UsageError(f"output directory {str(target)!r} already exists")
    created: list[Path] = []
    try:
        created = _make_parents(target.parent)
        staging = target.with_name(f".{target.name}.partial-{secrets.token_hex(4)}")
        staging.mkdir()  # unlike tempfile.mkdtemp, keeps the umask's permissions
    except OSError as exc:
        _remove_empty(created)
        raise UsageError(f"cannot create output directory {str(target)!r}: {exc.strerror or exc}") from None
    try:
        yield staging
        if target.exists():
            raise UsageError(f"output directory {str(target)!r} appeared during the run; results not saved")
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(created)
        raise


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents; return those created,
    outermost first."""
    missing = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    created = []
    try:
        for path in reversed(missing):
            path.mkdir()
            created.append(path)
    except OSError:
        _remove_empty(created)
        raise
    return created


def _remove_empty(directories: list[Path]) -> None:
    """Remove directories we made, innermost first; one that is no longer
    empty is not ours to force and stays."""
    for path in reversed(directories):
        with contextlib.suppress(OSError):
            path.rmdir()


def _print_summary(results: Results, target: Path) -> None:
    from rich import box

    summary = results.summary
    flows = _table(f"Flows of {summary[col.NAME]}, seed {summary[col.SEED]}", box.SIMPLE_HEAD,
                   ["flow", "kind", "path"], ["rate", "loss", "delay mean", "delay p99", "ping RTT"])  # fmt: skip
    for name, flow in summary[col.FLOWS].items():
        ping = flow[col.KIND] == "ping"
        rtt = "-"
        if ping and flow[col.RTT_MEAN] is not None:
            # Median and spread, not a mean: probes that cross idle and
            # loaded times average to a delay no probe saw (per phase below).
            rtt = f"median {_ms(flow[col.RTT_P50])}, p90 {_ms(flow[col.RTT_P90])}, max {_ms(flow[col.RTT_MAX])}"
        flows.add_row(
            name,
            flow[col.KIND],
            f"{flow[col.SRC]}→{flow[col.DST]}",
            "-" if ping or flow[col.GOODPUT_BPS] is None else units.fmt_rate(flow[col.GOODPUT_BPS]),
            f"{flow[col.LOSS]:.2%}",
            "-" if ping else _ms(flow[col.DELAY_MEAN]),  # a ping's one-way delay would mislead beside its RTT
            "-" if ping else _ms(flow[col.DELAY_P99]),
            rtt,
        )
    phases = _table("Ping RTT while other traffic runs", box.SIMPLE_HEAD, ["ping", "from", "to", "running"],
                    ["pings", "lost", "RTT median", "RTT mean", "RTT max"])  # fmt: skip
    for name, flow in summary[col.FLOWS].items():
        for phase in flow.get(col.RTT_PHASES) or []:
            phases.add_row(
                name, _seconds(phase[col.START]), _seconds(phase[col.END]), _names(phase[col.ACTIVE]),
                f"{phase[col.PINGS_SENT]:,}", f"{phase[col.PINGS_LOST]:,}",
                *(_ms(phase[c]) for c in (col.RTT_P50, col.RTT_MEAN, col.RTT_MAX)),
            )  # fmt: skip
    tcp_flows = {name: flow for name, flow in summary[col.FLOWS].items() if flow[col.KIND] == "tcp"}
    tcp = _table("TCP loss recovery (sender) and arrivals out of sequence (receiver)", box.SIMPLE_HEAD, ["flow"],
                 ["retransmits", "fast rtx", "timeouts", "spurious", "out of seq.", "dup ACKs"])  # fmt: skip
    for name, flow in tcp_flows.items():
        tcp.add_row(name, *(f"{flow[c]:,}" for c in (
            col.RETRANSMITS, col.FAST_RETRANSMITS, col.TIMEOUTS, col.SPURIOUS_RETRANSMITS, col.OOO_ARRIVALS,
            col.DUP_ACKS_SENT,
        )))  # fmt: skip
    queues = _table("Queues that carried packets", box.SIMPLE_HEAD,
                    ["queue"], ["enqueued", "tail drops", "AQM drops", "policer drops", "max length"])  # fmt: skip
    busy = {name: queue for name, queue in summary[col.QUEUES].items() if queue[col.ENQ_PKTS]}
    for name, queue in busy.items():
        queues.add_row(
            name,
            f"{queue[col.ENQ_PKTS]:,}",
            f"{queue[col.DROP_TAIL_PKTS]:,}",
            f"{queue[col.DROP_AQM_PKTS]:,}",
            f"{queue[col.DROP_POLICER_PKTS]:,}",
            f"{queue[col.MAX_LEN_PKTS]:,} pkts, {units.fmt_size(queue[col.MAX_LEN_BYTES])}",
        )
    console = _console()
    if summary[col.FLOWS]:
        console.print(_fit(flows))
    if phases.row_count:
        console.print(_fit(phases))
    if tcp_flows:
        console.print(_fit(tcp))
    workloads = summary.get(col.WORKLOADS) or {}
    if workloads:
        console.print(_fit(_workload_table(workloads)))
    console.print(_fit(queues))
    if results.filter.height:
        terms = _table("Firewall filter terms", box.SIMPLE_HEAD, ["router", "term"],
                       ["matched", "out of profile", "discarded", "green", "yellow", "red"])  # fmt: skip
        for row in results.filter.iter_rows(named=True):
            terms.add_row(row[col.NODE], row[col.TERM], *(f"{row[c]:,}" for c in (
                col.MATCHED_PKTS, col.OUT_OF_PROFILE_PKTS, col.DISCARDED_PKTS, col.GREEN_PKTS, col.YELLOW_PKTS,
                col.RED_PKTS,
            )))  # fmt: skip
        console.print(_fit(terms))
    idle = len(summary[col.QUEUES]) - len(busy)
    if idle:
        console.print(f"({idle} idle queue{'s' if idle > 1 else ''} not shown)")
    for line in _unfinished(workloads):
        console.print(f"[bold yellow]{line}[/]", highlight=False)
    console.print(
        f"{summary[col.EVENTS]:,} events in {results.manifest.get('wall_time_s', 0):.1f} s of wall time "
        f"for {units.fmt_time_ns(results.scenario.duration)} simulated"
    )
    console.print(f"results: {target}/ (Parquet tables, summary.json, scenario.yaml, manifest.json)")
    console.print(f"plots:   {target / PLOTS_DIR}/")


#: Workload rows of the summary table; beyond, the rest are added up.
WORKLOAD_ROWS = 10


def _workload_table(workloads: dict[str, dict]):
    """Workloads with unfinished transfers first, then the largest; beyond
    WORKLOAD_ROWS, one row adds up the others."""
    from rich import box

    table = _table("Workloads (transfers started in the run)", box.SIMPLE_HEAD, ["workload", "kind"],
                   ["started", "completed", "unfinished", "failed", "delivered", "of", "FCT p50", "FCT p99",
                    "slowdown mean"])  # fmt: skip
    order = sorted(workloads, key=lambda n: (-workloads[n][col.TRANSFERS_UNFINISHED], -workloads[n][col.BYTES_OFFERED]))
    shown = order if len(order) <= WORKLOAD_ROWS + 1 else order[:WORKLOAD_ROWS]
    for name in shown:
        w = workloads[name]
        table.add_row(
            name, w[col.KIND], *_counts(w), _secs(w[col.FCT_P50]), _secs(w[col.FCT_P99]),
            "-" if w[col.SLOWDOWN_MEAN] is None else f"{w[col.SLOWDOWN_MEAN]:.3g}",
        )  # fmt: skip
    rest = [workloads[name] for name in order[len(shown):]]
    if rest:
        total = {c: sum(w[c] for w in rest) for c in _COUNTED}
        kinds = Counter(w[col.KIND] for w in rest)
        table.add_row(f"{len(rest):,} others", ", ".join(f"{n} {k}" for k, n in kinds.items()), *_counts(total),
                      "-", "-", "-")  # fmt: skip
    return table


_COUNTED = (col.TRANSFERS_STARTED, col.TRANSFERS_COMPLETED, col.TRANSFERS_UNFINISHED, col.TRANSFERS_FAILED,
            col.BYTES_DELIVERED, col.BYTES_OFFERED)  # fmt: skip


def _counts(w: dict) -> list[str]:
    return [*(f"{w[c]:,}" for c in _COUNTED[:4]), units.fmt_size(w[col.BYTES_DELIVERED]), units.fmt_size(w[col.BYTES_OFFERED])]


def _unfinished(workloads: dict[str, dict]) -> list[str]:
    """One line per workload whose transfers had not all finished when the
    run ended (a transfer of 20 GB cut by the end of a 10 s run)."""
    lines = []
    for name, w in workloads.items():
        if w[col.TRANSFERS_UNFINISHED]:
            n = w[col.TRANSFERS_UNFINISHED]
            lines.append(
                f"workload {name}: {n:,} of {w[col.TRANSFERS_STARTED]:,} transfer{'s' if n > 1 else ''} unfinished "
                f"when the run ended ({units.fmt_size(w[col.BYTES_DELIVERED])} of "
                f"{units.fmt_size(w[col.BYTES_OFFERED])} delivered)"
            )
    if len(lines) > WORKLOAD_ROWS:
        more = len(lines) - WORKLOAD_ROWS
        lines = [*lines[:WORKLOAD_ROWS], f"... and {more:,} more workloads with unfinished transfers"]
    return lines


def _console():
    """The terminal's width on a terminal; wide enough for any table in a
    file or a pipe (never a number cut to fit 120 columns)."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH)


#: Width of the output when it goes to a file or a pipe.
PIPE_WIDTH = 1000


def _table(title: str, style, left: list[str], right: list[str]):
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=style)
    for heading in left:
        table.add_column(heading, overflow="fold")
    for heading in right:
        table.add_column(heading, justify="right", no_wrap=True)
    return table


def _fit(table):
    """Never cut a number: its column is as wide as its widest cell (names
    fold onto more lines instead, on a narrow terminal)."""
    for column in table.columns:
        if column.justify == "right":
            column.min_width = max((len(str(cell)) for cell in column._cells), default=0)
    return table


def _names(names: list[str], shown: int = 4) -> str:
    if not names:
        return "nothing else"
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _seconds(s: float) -> str:
    return f"{s:g} s"


def _secs(seconds: float | None) -> str:
    """A completion time: ms below a second, else seconds (3 digits)."""
    if seconds is None:
        return "-"
    return _ms(seconds) if seconds < 1 else f"{seconds:.3g} s"


def _ms(seconds: float | None) -> str:
    """Seconds as milliseconds to 3 significant digits (at least 0.001 ms)."""
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.3g} ms" if ms >= 1 else f"{ms:.3f} ms"


# --- alphaqos reproduce -------------------------------------------------------


def _reproduce(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .emulate import EmuError
    from .reproduce import reproduce

    target = args.out if args.out is not None else _default_run_dir(f"reproduce-{args.name}{'-quick' if args.quick else ''}")
    with _staged_directory(target) as staging:
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
        _save("the report", target, lambda: reproduction.save(staging))
    if args.quiet:
        print(target)
    else:
        _print_reproduction(reproduction, target)
    return EXIT_OK if reproduction.all_hold else EXIT_FAILURE


def _reproduce_summary(args: argparse.Namespace) -> int:
    import json

    from .reproduce.grading import graded_findings, summary_table

    graded: dict[str, dict] = {}
    for directory in args.dirs:
        path = directory / "results.json"
        try:
            document = json.loads(path.read_text())
            name = document["reproduction"]
            graded[name] = graded_findings(document)
            summary_table({name: graded[name]})  # refuses an unknown grade
        except OSError as exc:
            raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}: not the results.json of alphaqos reproduce ({exc})") from None
    if args.save is not None:  # written beside and renamed: never half-written
        staging = args.save.with_name(f".{args.save.name}.partial-{secrets.token_hex(4)}")
        try:
            staging.write_text(json.dumps(graded, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            staging.replace(args.save)
        except OSError as exc:
            staging.unlink(missing_ok=True)
            raise UsageError(f"cannot write {str(args.save)!r}: {exc.strerror or exc}") from None
    print(summary_table(graded))
    return EXIT_OK


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


# --- alphaqos reference -------------------------------------------------------


def _reference(args: argparse.Namespace) -> int:
    from .reference import generate

    text = generate()
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    # Written beside the target and renamed: never a half-written file.
    staging = args.out.with_name(f".{args.out.name}.partial-{secrets.token_hex(4)}")
    try:
        staging.write_text(text, encoding="utf-8")
        staging.replace(args.out)
    except OSError as exc:
        staging.unlink(missing_ok=True)
        raise UsageError(f"cannot write {str(args.out)!r}: {exc.strerror or exc}") from None
    return EXIT_OK

# --- alphaqos sweep -----------------------------------------------------------


def _sweep(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from . import sweep

    plan = sweep.plan_sweep(args.scenario, args.sets, args.seeds)
    target = args.out if args.out is not None else _default_run_dir(f"sweep-{plan.name}")
    if not target.exists():
        with _staged_directory(target) as staging:
            _save("the sweep", target, lambda: sweep.prepare(plan, staging))
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

        result = _save(
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


# --- alphaqos validate --------------------------------------------------------


def _validate(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for path in args.scenarios:
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            _scenario_error(exc)
            status = EXIT_USAGE
            continue
        print(f"{path}: ok: {_describe(scenario)}")
    return status


def _describe(scenario: Scenario) -> str:
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
