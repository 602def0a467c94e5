"""alphaqos: provision and evaluate QoS for large dataset transfers.

The Python side of the simulator: scenario files in, results out.

>>> import alphaqos
>>> results = alphaqos.run("scenarios/yan2013/exp1-1queue.yaml", duration="10s")  # doctest: +SKIP
>>> results.summary["flows"]["probe"]["rtt_mean"]  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from ._version import __version__
from .errors import ScenarioError

if TYPE_CHECKING:
    from .results import Results
    from .scenario import Scenario, load_scenario, resolve
    from .simulation import Simulation

#: Names this package offers and the module each comes from, imported on
#: first use (PEP 562): ``import alphaqos.cli`` and ``alphaqos --help`` do
#: not load the engine, polars and pydantic.
_LAZY = {
    "Results": "results",
    "Scenario": "scenario",
    "load_scenario": "scenario",
    "resolve": "scenario",
    "Simulation": "simulation",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Results", "Scenario", "ScenarioError", "Simulation", "__version__", "load_scenario", "resolve", "run"]


def run(
    path_or_dict: str | Path | dict,
    *,
    seed: int | None = None,
    duration: str | None = None,
    progress: bool = False,
) -> Results:
    """Validate a scenario (file or dict) and simulate it; nothing is written.

    ``seed`` overrides the scenario's seed; ``duration`` (a time such as
    ``"10s"``) runs its timeline for that long instead, cutting what lies
    beyond (see :func:`load_scenario`). Raises :class:`ScenarioError` for an
    invalid scenario.
    Save the results with :meth:`Results.save`.
    """
    from .engine import simulate
    from .scenario import load_scenario

    return simulate(load_scenario(path_or_dict, seed=seed, duration=duration), progress=progress)
