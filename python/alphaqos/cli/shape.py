"""``alphaqos shape DEV --rate RATE``: shape what a host sends to a share of its circuit (:mod:`alphaqos.provision.shape`).

Its parser and handlers live with the feature, as they did before the
command line became a package; this module adds them to ``alphaqos``."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    from ..provision.shape import add_shape_command

    add_shape_command(commands)
