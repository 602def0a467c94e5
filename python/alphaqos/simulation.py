"""Driving a run step by step from Python: ``alphaqos.Simulation``.

>>> sim = alphaqos.Simulation("scenarios/x.yaml")          # doctest: +SKIP
>>> sim.advance("2s")                                      # doctest: +SKIP
>>> sim.get("R->H2/rel", "avg")                            # doctest: +SKIP
>>> sim.set("R/edge", "rate_bps", "500Mbps")               # doctest: +SKIP
>>> results = sim.results()                                # doctest: +SKIP

``advance(until)`` runs every event before ``until`` (capped at the
duration; :meth:`Simulation.run` and :meth:`Simulation.results` at the
duration also run the events at that last instant); a ``set`` made then
acts at ``until`` before anything else happens at that instant, exactly as
an engine agent woken at ``until`` would, and is logged in the ``control``
table (``control.parquet``) under the agent name ``"python"``. Stepping in
chunks of any size gives the run of :func:`alphaqos.run`, bit for bit.

Values are in the scenario's units: ``"500Mbps"``, ``"31KB"``, ``"20ms"``, or
plain numbers in the knob's base unit (bit/s, bytes, ns, packets). ``get``
answers in base units. The handles and knobs are listed in
``docs/engine-config.md`` ("Control").
"""

from __future__ import annotations

import json
import platform
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from . import units
from ._version import __version__
from .engine import _core, engine_issue
from .errors import ScenarioError
from .results import Results
from .scenario import Scenario, load_scenario, resolve

__all__ = ["Simulation"]

_PARSERS = {"rate": units.parse_rate, "bytes": units.parse_size, "time": units.parse_time}


class Simulation:
    """A scenario's run, advanced by the caller (see the module doc)."""

    def __init__(self, scenario: Scenario | str | Path | dict, *, agent: str = "python") -> None:
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        self.agent = agent
        core = _core()
        try:
            self._sim = core.Simulation(json.dumps(resolve(self.scenario)))
        except core.ConfigError as exc:
            raise ScenarioError([engine_issue(exc, self.scenario)]) from None
        self._units = {name: unit for name, unit, _ in core.knobs()}
        self._started = datetime.now(UTC)
        self._wall = time.perf_counter()

    @property
    def now(self) -> int:
        """Simulated time, ns."""
        return self._sim.now_ns

    @property
    def duration(self) -> int:
        return self._sim.duration_ns

    def advance(self, until: int | str) -> None:
        """Run every event before ``until`` (ns or a time string)."""
        self._sim.advance_before(units.parse_time(until) if isinstance(until, str) else int(until))

    def get(self, handle: str, measurement: str) -> float:
        """A measurement or knob value, in base units."""
        return self._sim.get(handle, measurement)

    def set(self, handle: str, knob: str, value: float | int | str) -> float:
        """Change a knob now; returns the value it replaced (base units)."""
        return self._sim.set(self.agent, handle, knob, self._value(handle, knob, value))

    def _value(self, handle: str, knob: str, value: float | int | str) -> float:
        if not isinstance(value, str):
            return float(value)
        unit = self._units.get(knob.split(".", 1)[0])
        if unit is None:
            self._sim.get(handle, knob)  # the engine's error: no such handle or knob
            raise ValueError(f"{handle}: {knob} is a measurement, not a knob")
        parse = _PARSERS.get(unit)
        return float(parse(value)) if parse is not None else float(value)

    def run(self) -> Results:
        """Run to the end and return the results."""
        self.advance(self.duration)
        return self.results()

    def results(self) -> Results:
        """The results so far (complete once the run reached its duration,
        whose own events then run)."""
        if self.now >= self.duration:
            self._sim.advance(self.duration)
        manifest = {
            "alphaqos_version": __version__,
            "engine_version": _core().version(),
            "python_version": platform.python_version(),
            "platform": platform.platform(),
            "seed": self.scenario.seed,
            "command": shlex.join(sys.argv),
            "started_utc": self._started.isoformat(timespec="seconds"),
            "wall_time_s": round(time.perf_counter() - self._wall, 3),
            "events": self._sim.events,
        }
        return Results.from_engine(self.scenario, self._sim.results(), manifest)
