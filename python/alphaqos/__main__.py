"""``python -m alphaqos``: the same as the ``alphaqos`` command."""

from .cli import entry

entry()
