"""What every ``alphaqos`` subcommand's module shares: exit statuses, the
one-line error, a parser whose errors are one line, and the types of
common options. It imports only :mod:`alphaqos.errors` and
:mod:`alphaqos.units` (``alphaqos --help`` loads nothing heavier)."""

from __future__ import annotations

import argparse
import sys

from .. import units
from ..errors import UsageError

__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "OneLineParser",
    "percent_argument",
    "percent_value",
    "print_error",
    "positive_int",
    "rate_argument",
    "size_argument",
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


def rate_argument(text: str) -> int:
    """A rate in bit/s, in any spelling :func:`alphaqos.units.parse_rate`
    reads (``10gbit``, tc's; ``10Gbps``, the scenarios'), above 0."""
    try:
        value = units.parse_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a rate must be greater than 0, got {text!r}")
    return value


def percent_value(text: str) -> float:
    """A percentage (``90%`` or ``90``), its range left to the caller."""
    try:
        return float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage like 90%, got {text!r}") from None


def percent_argument(text: str) -> float:
    """A share in percent (``90%`` or ``90``), above 0 and at most 100."""
    value = percent_value(text)
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"a share must be above 0% and at most 100%, got {text!r}")
    return value


def size_argument(text: str) -> int:
    """A size in bytes, in any spelling :func:`alphaqos.units.parse_size` reads (``1GB``, ``128KiB``)."""
    try:
        return int(units.parse_size(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
