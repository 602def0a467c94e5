"""The engine's layering (issue 24's done-test): the module graph drawn from
the `use` lines of `crates/alphaqos-sim/src` has no circle, and the control
plane (`control/`) imports nothing of the components it drives (`qos/`,
`tcp/`, `apps/`): it sees the engine only through its `World` trait.

The graph is per file (a `mod.rs` is its directory's module); `#[cfg(test)]`
modules are left out (a unit test may reach anywhere).
"""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "crates" / "alphaqos-sim" / "src"

USE = re.compile(r"\buse\s+(crate|super|self)((?:::\w+)*)(?:::\{([^;]*)\})?", re.S)
PATH = re.compile(r"\bcrate((?:::\w+)+)")


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts)


def module_graph(root: Path = SRC) -> dict[str, set[str]]:
    """module -> the modules it imports (by `use` or a `crate::` path)."""
    modules = {_module(p, root): p for p in sorted(root.rglob("*.rs"))}

    def resolve(parts: list[str]) -> str | None:
        for n in range(len(parts), 0, -1):
            name = "::".join(parts[:n])
            if name in modules:
                return name
        return None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        text = path.read_text()
        text = text.split("#[cfg(test)]", 1)[0]
        text = re.sub(r"//[^\n]*", "", text)
        here = name.split("::") if name else []
        targets: set[str] = set()
        for m in USE.finditer(text):
            base, rest, group = m.groups()
            prefix = [] if base == "crate" else here[:-1] if base == "super" else here
            parts = [x for x in rest.split("::") if x]
            while parts and parts[0] == "super":
                prefix, parts = prefix[:-1], parts[1:]
            items = [g.strip().split("::")[0].split(" ")[0] for g in group.split(",") if g.strip()] if group else [""]
            for item in items:
                t = resolve(prefix + parts + ([item] if item and item != "self" else []))
                if t is not None and t != name:
                    targets.add(t)
        for m in PATH.finditer(text):
            t = resolve([x for x in m.group(1).split("::") if x])
            if t is not None and t != name:
                targets.add(t)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_engines_modules_import_in_no_circle():
    assert circles(module_graph()) == []


def test_the_control_plane_imports_none_of_the_components_it_drives():
    graph = module_graph()
    upward = sorted(
        (a, b) for a, targets in graph.items() if a.split("::")[0] == "control" for b in targets if b.split("::")[0] in ("qos", "tcp", "apps", "sim", "network")
    )
    assert upward == []


def test_the_analysis_finds_a_circle_and_an_upward_import(tmp_path):
    # A small crate with a -> b -> a and control -> qos: both are found.
    (tmp_path / "control").mkdir()
    (tmp_path / "qos").mkdir()
    (tmp_path / "lib.rs").write_text("pub mod a; pub mod b; pub mod control; pub mod qos;\n")
    (tmp_path / "a.rs").write_text("use crate::b::Thing;\n")
    (tmp_path / "b.rs").write_text("use crate::{a, qos::Q};\n#[cfg(test)]\nmod tests { use crate::control::X; }\n")
    (tmp_path / "control" / "mod.rs").write_text("use super::qos::Q;\n")
    (tmp_path / "qos" / "mod.rs").write_text("pub struct Q;\n")
    graph = module_graph(tmp_path)
    assert circles(graph) == [["a", "b"]]
    assert graph["control"] == {"qos"} and "control" not in graph["b"]
