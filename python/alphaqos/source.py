"""YAML scenario files read with the line of every key and list item.

PyYAML's composer gives every node a start mark; :func:`load_yaml` walks that
node tree to build plain Python data and, beside it, a table from each path
(``("flows", 0, "tcp", "cc")``) to its 1-based line. An error found later,
by pydantic or by the cross-field checks, is reported at the line of the
deepest part of its path that the file spells out. Duplicate keys, which
PyYAML would silently collapse, are rejected here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import Issue, ScenarioError

__all__ = ["Source", "load_yaml", "read_source"]

Loc = tuple[str | int, ...]


@dataclass
class Source:
    """Scenario data as read, with where each part of it came from."""

    data: Any
    name: str | None = None  # the file, as the user named it; None for a dict
    lines: dict[Loc, int] = field(default_factory=dict)

    def line(self, loc: Loc) -> int | None:
        """Line of the longest prefix of ``loc`` present in the file."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None

    def issue(self, loc: Loc, message: str) -> Issue:
        return Issue(loc=tuple(loc), message=message, source=self.name, line=self.line(loc))


def read_source(path_or_dict: str | Path | dict, *, what: str = "scenario") -> Source:
    """A YAML file (a scenario, or ``what`` it holds) or an in-memory dict,
    ready for validation; an unreadable file is a ScenarioError naming it."""
    if isinstance(path_or_dict, dict):
        return Source(data=path_or_dict)
    name = str(path_or_dict)
    try:
        text = Path(path_or_dict).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ScenarioError([Issue(loc=(), message=f"cannot read {what}: {reason}", source=name)]) from None
    return load_yaml(text, name)


# libyaml's parser when PyYAML was built with it (the wheels are): the same
# nodes, marks and errors as the pure-Python one, about ten times faster on a
# scenario of thousands of workloads.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load_yaml(text: str, name: str | None = None) -> Source:
    """Parse one YAML document, recording the line of every key and item."""
    try:
        return _parse(text, name, _LOADER)
    except ScenarioError:
        if _LOADER is yaml.SafeLoader:
            raise
        # Malformed: PyYAML's own parser words the problem (libyaml's
        # messages differ) and points at the same line.
        return _parse(text, name, yaml.SafeLoader)


def _parse(text: str, name: str | None, loader_class: type) -> Source:
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        if root is None:
            raise ScenarioError([Issue(loc=(), message="the file is empty (expected a scenario mapping)", source=name)])
        lines: dict[Loc, int] = {}
        data = _build(loader, root, (), lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        line = mark.line + 1 if mark is not None else None
        raise ScenarioError([Issue(loc=(), message=f"invalid YAML: {problem}", source=name, line=line)]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([Issue(loc=(), message=f"invalid YAML: {exc}", source=name)]) from None
    finally:
        loader.dispose()
    return Source(data=data, name=name, lines=lines)


def _build(loader: yaml.SafeLoader, node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> Any:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolves merge keys ("<<: *defaults")
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise _located("a mapping key must be a plain value", key_node)
            if key in mapping:
                raise _located(f"duplicate key {key!r}", key_node)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            mapping[key] = _build(loader, value_node, (*loc, key), lines)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, (*loc, index), lines) for index, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def _located(problem: str, node: yaml.Node) -> yaml.MarkedYAMLError:
    return yaml.MarkedYAMLError(problem=problem, problem_mark=node.start_mark)
