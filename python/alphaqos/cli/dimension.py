"""``alphaqos dimension relative``: dimension a Relative Service (:mod:`alphaqos.dimension`).

Its parser and handlers live with the feature, as they did before the
command line became a package; this module adds them to ``alphaqos``."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    from ..dimension import add_dimension_command

    add_dimension_command(commands)
