"""``alphaqos plan-transfer``: a deadline transfer's reservation schedule, completion and reserved bandwidth (:mod:`alphaqos.plan`).

Its parser and handlers live with the feature, as they did before the
command line became a package; this module adds them to ``alphaqos``."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    from ..plan import add_plan_command

    add_plan_command(commands)
