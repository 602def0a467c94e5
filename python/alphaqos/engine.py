"""Running a validated scenario on the engine, ``alphaqos._core``.

The engine runs the whole event loop in Rust; Python advances it in chunks
of about 1/200 of the simulated duration, so that a progress display can be
updated and Ctrl-C is noticed between chunks.
"""

from __future__ import annotations

import importlib
import json
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
from .errors import ScenarioError
from .results import Results
from .scenario import Scenario, engine_issue, resolve, user_loc

__all__ = ["EngineMissingError", "check", "engine_issue", "engine_version", "simulate"]

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


def check(scenario: Scenario, pairs: Sequence[tuple[str, str]] = ()) -> tuple[list[tuple[tuple, str]], dict[str, Any]]:
    """The engine's check of ``scenario`` (``_core.check``): every problem
    as (the user's field path, message; :func:`~alphaqos.scenario.user_loc`),
    and what the engine applies on its own (``addresses`` of every node,
    ``paths`` as link indices for each of ``pairs``). Raises
    :class:`EngineMissingError` without an engine."""
    problems, applied = _core().check(json.dumps(resolve(scenario)), list(pairs))
    return [user_loc(loc, message, scenario) for loc, message in problems], applied


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
    except core.ConfigError as exc:
        raise ScenarioError([engine_issue(exc, scenario)]) from None
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
