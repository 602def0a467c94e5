"""``alphaqos provision``: the α prefix table and a policy as router and host configuration (:mod:`alphaqos.provision`).

Its parser and handlers live with the feature, as they did before the
command line became a package; this module adds them to ``alphaqos``."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    from ..provision.cli import add_provision_command

    add_provision_command(commands)
