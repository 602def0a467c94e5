"""``alphaqos reproduce-summary DIR...``: count the graded findings of
reproduction reports, per document."""

from __future__ import annotations

import argparse
from pathlib import Path

from .cmdline import EXIT_OK
from ..errors import UsageError
from ..output import write_atomic


def register(commands: argparse._SubParsersAction) -> None:
    summary = commands.add_parser("reproduce-summary", help="count the graded findings of reproduction reports, per document")
    summary.add_argument("dirs", metavar="DIR", nargs="+", type=Path, help="a report directory of alphaqos reproduce (its results.json)")
    summary.add_argument("--save", metavar="FILE", type=Path, help="also write the graded findings the table counts (JSON)")
    summary.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..reproduce.grading import graded_findings, summary_table

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
    if args.save is not None:
        try:
            write_atomic(args.save, json.dumps(graded, indent=2, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise UsageError(f"cannot write {str(args.save)!r}: {exc.strerror or exc}") from None
    print(summary_table(graded))
    return EXIT_OK
