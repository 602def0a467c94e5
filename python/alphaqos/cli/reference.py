"""``alphaqos reference [--out FILE]``: the scenario and policy reference
(markdown) from the schema."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cmdline import EXIT_OK
from ..errors import UsageError
from ..output import write_atomic


def register(commands: argparse._SubParsersAction) -> None:
    reference = commands.add_parser("reference", help="write the scenario and policy reference (markdown) from the schema")
    reference.add_argument("--out", metavar="FILE", type=Path, help="file to write (default: standard output)")
    reference.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..reference import generate

    text = generate()
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        write_atomic(args.out, text)
    except OSError as exc:
        raise UsageError(f"cannot write {str(args.out)!r}: {exc.strerror or exc}") from None
    return EXIT_OK
