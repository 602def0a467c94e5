"""``alphaqos flows COMMAND``: the subcommands come from the modules in
:data:`COMMAND_MODULES`, each exposing ``register(subparsers)`` that adds
its parsers with ``set_defaults(handler=...)``; a handler takes the parsed
arguments and returns the exit status, raising ``alphaqos.errors.UsageError``
for bad input (exit 2)."""

from __future__ import annotations

import argparse
import importlib

__all__ = ["COMMAND_MODULES", "add_flows_command"]

#: Modules (in this package) that contribute subcommands.
COMMAND_MODULES: tuple[str, ...] = ("collect", "ingest", "identify", "backtest")


def add_flows_command(commands: argparse._SubParsersAction) -> None:
    if not COMMAND_MODULES:
        return
    flows = commands.add_parser("flows", help="identify alpha flows in router flow records")
    sub = flows.add_subparsers(dest="flows_command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.{name}").register(sub)
