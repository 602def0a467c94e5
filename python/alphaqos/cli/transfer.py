"""``alphaqos transfer``: the data mover (:mod:`alphaqos.transfer.cli`).

Its parser and handlers live with the feature, as they did before the
command line became a package; this module adds them to ``alphaqos``."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    from ..transfer.cli import add_transfer_command

    add_transfer_command(commands)
