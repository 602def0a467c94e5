"""``alphaqos circuits``: the reservation service, its tokens and its client (:mod:`alphaqos.circuits.cli`).

Its parser and handlers live with the feature, as they did before the
command line became a package; this module adds them to ``alphaqos``."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    from ..circuits.cli import add_circuits_command

    add_circuits_command(commands)
