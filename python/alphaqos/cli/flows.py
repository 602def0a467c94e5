"""``alphaqos flows identify|backtest|ingest|collect ...``: α flows in router flow records (:mod:`alphaqos.flows`).

Its parser and handlers live with the feature, as they did before the
command line became a package; this module adds them to ``alphaqos``."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    from ..flows.cli import add_flows_command

    add_flows_command(commands)
