"""Errors raised for bad input, each one readable on a single line.

A :class:`ScenarioError` carries every :class:`Issue` found in a scenario,
in file order; each is located by file, line and field path::

    scenario.yaml:12: flows[0].tcp.cc: unknown congestion control 'foo' (expected one of: newreno)

Its message is the first issue and a count of the others; :meth:`ScenarioError.lines`
gives them all, one per line, as the command line prints them (at most
:data:`MAX_REPORTED`). A scenario given as a dict has no file: an issue
starts at the path.

A model validator that can tell which field below its model is at fault
raises :class:`FieldError` with that field's path, so the issue points at
the field's line rather than the model's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "MAX_REPORTED",
    "FieldError",
    "Issue",
    "RunFailure",
    "ScenarioError",
    "ScenarioNote",
    "Terminated",
    "UsageError",
    "format_path",
]

#: Issues of one file the command line prints before "... and N more".
MAX_REPORTED = 20


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
    """One problem in a scenario: where it is and what was expected.

    ``order`` places the issue among the others of its file when that is
    not its own line: a missing key is shown at its mapping's first line
    but reported after the mapping's other problems (an unknown key in it
    may be the reason it is missing)."""

    loc: tuple[str | int, ...]
    message: str
    source: str | None = None
    line: int | None = None
    order: tuple[int, int] | None = field(default=None, compare=False)

    @property
    def path(self) -> str:
        return format_path(self.loc)

    @property
    def sort_key(self) -> tuple[int, int]:
        return self.order if self.order is not None else (self.line or 0, 0)

    def __str__(self) -> str:
        where = [self.source] if self.source else []
        if self.source and self.line is not None:
            where = [f"{self.source}:{self.line}"]
        if self.loc:
            where.append(self.path)
        return ": ".join([*where, self.message])


class FieldError(ValueError):
    """A model validator's error about the field at ``loc`` below the model
    (e.g. ``("filter", 2, "then", "class")``): reported at that field."""

    def __init__(self, loc: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.loc = tuple(loc)


class ScenarioNote(UserWarning):
    """Something worth telling about a scenario that is not an error (a flow
    left out of a shortened run); the command line prints it as a note."""


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

    def lines(self, limit: int = MAX_REPORTED) -> list[str]:
        """Every issue on a line of its own, the first ``limit`` of them, and
        a last line counting the rest."""
        lines = [str(issue) for issue in self.issues[:limit]]
        rest = len(self.issues) - limit
        if rest > 0:
            lines.append(f"... and {rest} more problem{'s' if rest > 1 else ''} ({len(self.issues)} in all)")
        return lines


class UsageError(Exception):
    """Bad input to a command (an option, a path, a file that is not what
    it should be): the command line prints it on one line, exit status 2."""


class RunFailure(Exception):
    """A command could not complete for a reason other than its input (the
    results could not be written): one line, exit status 1."""


class Terminated(BaseException):
    """SIGTERM arrived and was raised where the program stood, so that its
    clean-ups run as for Ctrl-C (a BaseException, so that no ``except
    Exception`` swallows it); the command line exits 143."""
