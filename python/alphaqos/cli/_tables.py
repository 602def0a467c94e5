"""Tables for people (rich): as wide as the terminal, or wide enough
for any table in a file or a pipe; numbers are never cut."""

from __future__ import annotations

import sys

def _console():
    """The terminal's width on a terminal; wide enough for any table in a
    file or a pipe (never a number cut to fit 120 columns)."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH)


#: Width of the output when it goes to a file or a pipe.
PIPE_WIDTH = 1000


def _table(title: str, style, left: list[str], right: list[str]):
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=style)
    for heading in left:
        table.add_column(heading, overflow="fold")
    for heading in right:
        table.add_column(heading, justify="right", no_wrap=True)
    return table


def _fit(table):
    """Never cut a number: its column is as wide as its widest cell (names
    fold onto more lines instead, on a narrow terminal)."""
    for column in table.columns:
        if column.justify == "right":
            column.min_width = max((len(str(cell)) for cell in column._cells), default=0)
    return table


def _names(names: list[str], shown: int = 4) -> str:
    if not names:
        return "nothing else"
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _seconds(s: float) -> str:
    return f"{s:g} s"


def _secs(seconds: float | None) -> str:
    """A completion time: ms below a second, else seconds (3 digits)."""
    if seconds is None:
        return "-"
    return _ms(seconds) if seconds < 1 else f"{seconds:.3g} s"


def _ms(seconds: float | None) -> str:
    """Seconds as milliseconds to 3 significant digits (at least 0.001 ms)."""
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.3g} ms" if ms >= 1 else f"{ms:.3f} ms"
