"""What every ``alphaqos`` subcommand's code shares, in :mod:`alphaqos.cli`
and in the feature packages that keep their own subcommands
(``flows``, ``provision``, ``circuits``, ``transfer``, ...): exit
statuses, the one-line error, a parser whose errors are one line, and the
types of common options. A leaf: it imports only :mod:`alphaqos.errors`
and :mod:`alphaqos.units`, never :mod:`alphaqos.cli`."""

from __future__ import annotations

import argparse
import sys

from . import units
from .errors import UsageError

__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "OneLineParser",
    "print_error",
    "positive_int",
    "time_argument",
]

EXIT_OK = 0
EXIT_FAILURE = 1  # the engine is missing, or the results could not be written
EXIT_USAGE = 2  # bad input
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_TERMINATED = 143  # 128 + SIGTERM


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage dump)."""

    def error(self, message: str):
        raise UsageError(message)


def print_error(message: str) -> None:
    """``alphaqos: error: MESSAGE`` on standard error, on one line."""
    print(f"alphaqos: error: {' '.join(message.split())}", file=sys.stderr)


def positive_int(text: str) -> int:
    """An option's whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def time_argument(text: str) -> str:
    """Check a time option here, so that a bad one is named as the option."""
    try:
        units.parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
