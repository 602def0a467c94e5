"""The ``alphaqos`` command line.

``alphaqos run SCENARIO [--out DIR] [--seed N] [--duration D] [--host-profile NAME] [--quiet]``
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

The package has a module per subcommand (as pip's ``commands/``), listed in
:data:`COMMANDS`; each has ``register(commands)``, which adds its parser
with ``set_defaults(handler=...)``, and its handler, which takes the parsed
arguments and returns the exit status, raising
:class:`~alphaqos.errors.UsageError` (exit 2) or
:class:`~alphaqos.errors.RunFailure` (exit 1). Output is written through
:mod:`alphaqos.output`. Every parser is here (:mod:`.cmdline` has the
shared option types): the feature packages are libraries that neither
import this package nor argparse.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import shlex
import signal
import sys
from typing import NamedTuple

from .._version import __version__
from .cmdline import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE, OneLineParser, print_error
from ..errors import RunFailure, ScenarioError, Terminated, UsageError
from ._common import scenario_error

__all__ = ["COMMANDS", "EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TERMINATED", "EXIT_USAGE", "RunFailure",
           "UsageError", "entry", "main"]  # fmt: skip


class Command(NamedTuple):
    """A subcommand: the module (in this package) whose ``register(commands)``
    adds its parser, and the line ``alphaqos --help`` shows for it."""

    module: str
    help: str


#: The subcommands in the order ``alphaqos --help`` lists them. As pip's
#: ``commands_dict``, the list is data: only the module of the command that
#: runs is imported (``alphaqos --help`` imports none), so each command's
#: heavy modules load only when it runs. ``help`` repeats what the module
#: registers; tests/test_cli_package.py keeps the two equal.
COMMANDS: dict[str, Command] = {
    "run": Command("run", "simulate a scenario and write its results"),
    "validate": Command("validate", "check scenario files without running them"),
    "reproduce": Command("reproduce", "run a source document's experiments and report beside it"),
    "reproduce-summary": Command("reproduce_summary", "count the graded findings of reproduction reports, per document"),
    "reference": Command("reference", "write the scenario and policy reference (markdown) from the schema"),
    "sweep": Command("sweep", "run a grid of scenario variants and tabulate their headline figures"),
    "flows": Command("flows", "identify alpha flows in router flow records"),
    "provision": Command("provision", "render the α prefix table and a policy as router/host configuration"),
    "dimension": Command("dimension", "dimension a service for customer profiles (Relative Service)"),
    "shape": Command("shape", "shape what a host sends on a device to a share of its circuit (HTB over netlink)"),
    "emulate": Command("emulate", "run a scenario's path between two real interfaces, in real time (alphaqos-emu)"),
    "plan-transfer": Command("plan_transfer", "plan a deadline transfer: its reservation schedule, completion and reserved bandwidth"),
    "trace-replay": Command("trace_replay", "replay a packet trace into a link of beta x its mean rate and measure the queue"),
    "circuits": Command("circuits", "advance reservation of bandwidth: the service and its client"),
    "transfer": Command("transfer", "move a file by its deadline over a reserved circuit (alphaqos-xfer)"),
}  # fmt: skip


def _terminate(signum, frame) -> None:
    raise Terminated


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
        args = _parser(_chosen(arguments)).parse_args(arguments)
        args.invocation = shlex.join(["alphaqos", *arguments])
        return args.handler(args)
    except ScenarioError as exc:
        scenario_error(exc)
        return EXIT_USAGE
    except UsageError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    except _failures() as exc:
        print_error(str(exc))
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("alphaqos: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("alphaqos: terminated", file=sys.stderr)
        return EXIT_TERMINATED


def _failures() -> tuple[type[BaseException], ...]:
    """The exceptions that end a command with status 1: RunFailure, and the
    engine's and the runner's own where their modules were loaded (an
    exception of a module never imported cannot have been raised)."""
    failures: list[type[BaseException]] = [RunFailure]
    for module, name in (("alphaqos.engine", "EngineMissingError"), ("alphaqos.runner", "RunError")):
        if (loaded := sys.modules.get(module)) is not None:
            failures.append(getattr(loaded, name))
    return tuple(failures)


def command_module(name: str):
    """The module of subcommand ``name`` (a key of :data:`COMMANDS`)."""
    return importlib.import_module(f"{__name__}.{COMMANDS[name].module}")


def _chosen(arguments: list[str]) -> str | None:
    """The subcommand the arguments name: the first that is not an option
    (``alphaqos`` itself has only ``--help`` and ``--version``)."""
    for argument in arguments:
        if argument == "--":
            return None
        if not argument.startswith("-"):
            return argument if argument in COMMANDS else None
    return None


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``alphaqos``: every subcommand by name and help line,
    and the full parser of ``command`` only (``None``: of none, as for
    ``alphaqos --help``; ``"*"``: of all)."""
    parser = OneLineParser(prog="alphaqos", description="Packet-level simulation of QoS for large dataset transfers.")
    parser.add_argument("--version", action="version", version=f"alphaqos {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, spec in COMMANDS.items():
        if command in (name, "*"):
            command_module(name).register(commands)
        else:
            commands.add_parser(name, help=spec.help)
    return parser
