"""Errors raised for bad input, each one readable on a single line.

A :class:`ScenarioError` carries every :class:`Issue` found in a scenario;
its message is the first one, located by file, line and field path::

    scenario.yaml:12: flows[0].tcp.cc: unknown congestion control 'foo' (expected one of: newreno)

A scenario given as a dict has no file: the message starts at the path.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Issue", "ScenarioError", "format_path"]


def format_path(loc: tuple[str | int, ...]) -> str:
    """``("flows", 0, "tcp", "cc")`` -> ``"flows[0].tcp.cc"``."""
    text = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


@dataclass(frozen=True)
class Issue:
    """One problem in a scenario: where it is and what was expected."""

    loc: tuple[str | int, ...]
    message: str
    source: str | None = None
    line: int | None = None

    @property
    def path(self) -> str:
        return format_path(self.loc)

    def __str__(self) -> str:
        where = [self.source] if self.source else []
        if self.source and self.line is not None:
            where = [f"{self.source}:{self.line}"]
        if self.loc:
            where.append(self.path)
        return ": ".join([*where, self.message])


class ScenarioError(ValueError):
    """A scenario (or an override of one) is invalid; nothing was run."""

    def __init__(self, issues: list[Issue]):
        if not issues:
            raise ValueError("ScenarioError needs at least one issue")
        self.issues = list(issues)
        message = str(self.issues[0])
        if len(self.issues) > 1:
            others = len(self.issues) - 1
            message += f" (and {others} more problem{'s' if others > 1 else ''})"
        super().__init__(message)
