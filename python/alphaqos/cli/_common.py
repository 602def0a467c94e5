"""What the subcommands of this package share beyond :mod:`.cmdline`: a
scenario's problems and notes on standard error, the runner's options, a
feature's options dataclass filled from the parsed arguments."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from .cmdline import positive_int, print_error
from ..errors import ScenarioError, ScenarioNote


def scenario_error(exc: ScenarioError) -> None:
    """Every problem of a file, one line each (at most MAX_REPORTED)."""
    for line in exc.lines():
        print_error(line)


@contextmanager
def notes() -> Iterator[None]:
    """Print what loading a scenario noted (a flow left out of a shortened
    run) as ``alphaqos: note: ...`` lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ScenarioNote)
        yield
    for warning in caught:
        print(f"alphaqos: note: {warning.message}", file=sys.stderr)


def add_runner_options(command: argparse.ArgumentParser) -> None:
    """``--jobs N | --dask ADDRESS``: where the runs of a command go (:mod:`alphaqos.runner`)."""
    where = command.add_mutually_exclusive_group()
    where.add_argument("--jobs", metavar="N", type=positive_int, help="parallel runs (default: one per core)")
    where.add_argument("--dask", metavar="ADDRESS",
                       help="run on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.5:8786)")  # fmt: skip


def options_from(args: argparse.Namespace, options: type):
    """The dataclass ``options`` (a feature's options, e.g.
    :class:`alphaqos.transfer.mover.SendOptions`) with each field taken from
    the parsed argument of the same name."""
    return options(**{field.name: getattr(args, field.name) for field in dataclasses.fields(options)})
