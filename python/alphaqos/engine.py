"""Running a validated scenario on the engine, ``alphaqos._core``.

The engine runs the whole event loop in Rust; Python advances it in chunks
of about 1/200 of the simulated duration, so that a progress display can be
updated and Ctrl-C is noticed between chunks.
"""

from __future__ import annotations

import importlib
import json
import re
import platform
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from . import units
from ._version import __version__
from .errors import Issue, ScenarioError
from .results import Results
from .scenario import Scenario, resolve

__all__ = ["EngineMissingError", "check", "engine_version", "simulate"]

CHUNKS = 200


class EngineMissingError(ImportError):
    """The compiled engine module is not built or not importable."""


def _core() -> ModuleType:
    try:
        return importlib.import_module(f"{__package__}._core")
    except ImportError as exc:
        raise EngineMissingError(
            f"the simulation engine alphaqos._core is not available ({exc}); build it with `make build`"
        ) from exc


#: A leading "<path>: " of an engine error (names, [index], dots).
_ENGINE_PATH = re.compile(r"^([A-Za-z_][\w.\[\]]*): (.*)$", re.S)
_PART = re.compile(r"([A-Za-z_]\w*)|\[(\d+)\]")
#: The engine's field names carry their base unit; the user's do not.
_UNIT_SUFFIXES = ("_bytes", "_bps", "_ns", "_pkts")
_RENAMED = {"src": "from", "dst": "to"}


def engine_issue(message: str, scenario: Scenario | None = None) -> Issue:
    """An engine error (``"flows[3]: tcp: mss_bytes: ..."``) as an issue at
    the user's field (:func:`engine_loc`)."""
    path, text = "", message
    while (m := _ENGINE_PATH.match(text)) is not None:
        path, text = f"{path}.{m[1]}" if path else m[1], m[2]
    loc, text = engine_loc(path, text, scenario)
    return Issue(loc=loc, message=text)


def check(scenario: Scenario, pairs: Sequence[tuple[str, str]] = ()) -> tuple[list[tuple[tuple, str]], dict[str, Any]]:
    """The engine's check of ``scenario`` (``_core.check``): every problem
    as (the user's field path, message), and what the engine applies on
    its own (``addresses`` of every node, ``paths`` as link indices for
    each of ``pairs``). Raises :class:`EngineMissingError` without an engine."""
    problems, applied = _core().check(json.dumps(resolve(scenario)), list(pairs))
    return [engine_loc(path, message, scenario) for path, message in problems], applied


def engine_loc(path: str, message: str, scenario: Scenario | None = None) -> tuple[tuple, str]:
    """An engine configuration path (``flows[3].tcp.mss_bytes``) as the
    field path of the user's file (``flows[3].tcp.mss``) and the message:
    a node's index becomes its name, a flow's ``src``/``dst`` its kind's
    ``from``/``to``, unit suffixes go; what names no field of the user's
    (or an item that deadline transfers added) is kept in the message."""
    parts: list[str | int] = [m[1] if m[1] else int(m[2]) for m in _PART.finditer(path)]
    if len(parts) < 2 or parts[0] not in ("flows", "workloads", "links", "nodes", "control") or not isinstance(parts[1], int):
        return (), f"the engine rejected the scenario: {path + ': ' if path else ''}{message}"
    top, index, rest = parts[0], parts[1], parts[2:]
    loc: tuple = (top, index)
    if scenario is not None:
        loc, rest = _user_item(scenario, top, index, rest)
        if not loc:
            return (), f"the engine rejected the scenario: {path}: {message}"
    if loc and loc[0] == "flows" and rest and rest[0] in ("src", "dst") and scenario is not None and index < len(scenario.flows):
        loc, rest = (*loc, scenario.flows[index].kind), [_RENAMED[rest[0]], *rest[1:]]
    from .scenario import _allowed_keys

    while rest and scenario is not None:
        part = rest[0]
        if isinstance(part, str):
            name = _RENAMED.get(part, next((part.removesuffix(s) for s in _UNIT_SUFFIXES if part.endswith(s)), part))
            if name not in _allowed_keys(loc):
                break
            part = name
        elif _allowed_keys(loc):
            break  # an index into a model: not the user's shape
        loc, rest = (*loc, part), rest[1:]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest).lstrip(".")
    return loc, f"{where}: {message}" if where else message


def _user_item(scenario: Scenario, top: str, index: int, rest: list) -> tuple[tuple, list]:
    """The user's item an engine item comes from: a node by name; the
    workloads and agents that deadline transfers add, their transfer."""
    if top == "nodes":
        names = list(scenario.nodes)
        return (("nodes", names[index]), rest) if index < len(names) else ((), rest)
    own = {"workloads": len(scenario.workloads), "control": len(scenario.control)}.get(top)
    if own is None or index < own:
        return (top, index), rest
    # deadline.expand appends a workload per transfer, an agent per dynamic one.
    made = [i for i, t in enumerate(scenario.deadline_transfers) if top == "workloads" or t.dynamic]
    k = index - own
    return (("deadline_transfers", made[k]), rest) if k < len(made) else ((), rest)


def engine_version() -> str:
    return _core().version()


def simulate(
    scenario: Scenario,
    *,
    progress: bool = False,
    command: str | None = None,
    tap_dir: str | Path | None = None,
    stops: Sequence[int] = (),
    at_stop: Callable[[int, Any], None] | None = None,
) -> Results:
    """Run ``scenario`` to its end and return its results.

    ``progress`` shows a progress bar on stderr; ``command`` is recorded in
    the manifest (default: this process's command line); the links' taps
    are written into ``tap_dir`` (none without it); ``at_stop(t, engine)``
    is called once every event before each time ``t`` of ``stops`` (ns) has
    run, to read the results so far (a mid-run snapshot; the run is the same
    with or without it).
    Raises :class:`ScenarioError` if the engine rejects the configuration.
    """
    core = _core()
    try:
        sim = core.Simulation(json.dumps(resolve(scenario, tap_dir=tap_dir)))
    except ValueError as exc:
        raise ScenarioError([engine_issue(str(exc), scenario)]) from None
    started = datetime.now(UTC)
    wall_start = time.perf_counter()
    with _progress_display(scenario, enabled=progress) as report:
        step = max(1, sim.duration_ns // CHUNKS)
        pending = sorted(t for t in stops if 0 < t < sim.duration_ns)
        target = 0
        while target < sim.duration_ns:
            target = min(target + step, sim.duration_ns)
            while pending and pending[0] <= target:
                stop = pending.pop(0)
                sim.advance_before(stop)
                if at_stop is not None:
                    at_stop(stop, sim)
            sim.advance(target)
            report(sim.now_ns, sim.events)
    wall_time = time.perf_counter() - wall_start
    manifest = {
        "alphaqos_version": __version__,
        "engine_version": core.version(),
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "seed": scenario.seed,
        "command": command if command is not None else shlex.join(sys.argv),
        "started_utc": started.isoformat(timespec="seconds"),
        "wall_time_s": round(wall_time, 3),
        "events": sim.events,
    }
    return Results.from_engine(scenario, sim.results(), manifest)


@contextmanager
def _progress_display(scenario: Scenario, *, enabled: bool) -> Iterator[Callable[[int, int], None]]:
    """Yield ``report(now_ns, events)``; draws a rich progress bar if enabled."""
    if not enabled:
        yield lambda now_ns, events: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    total = units.fmt_time_ns(scenario.duration)
    display = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[simulated]} / " + total + " simulated"),
        TextColumn("{task.fields[speed]} events/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    task = display.add_task(scenario.name, total=scenario.duration, simulated=units.fmt_time_ns(0), speed="-")
    started = time.perf_counter()

    def report(now_ns: int, events: int) -> None:
        elapsed = time.perf_counter() - started
        speed = _si(events / elapsed) if elapsed > 0 else "-"
        display.update(task, completed=now_ns, simulated=units.fmt_time_ns(now_ns), speed=speed)

    with display:
        yield report


def _si(value: float) -> str:
    """``1234567`` -> ``"1.23M"``."""
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{prefix}"
    return f"{value:.3g}"
