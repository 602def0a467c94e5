"""alphaqos: provision and evaluate QoS for large dataset transfers.

The Python side of the simulator: scenario files in, results out.

>>> import alphaqos
>>> results = alphaqos.run("scenarios/yan2013/exp1-1queue.yaml", duration="10s")  # doctest: +SKIP
>>> results.summary["flows"]["probe"]["rtt_mean"]  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from ._version import __version__
from .engine import simulate
from .errors import ScenarioError
from .results import Results
from .scenario import Scenario, load_scenario, resolve
from .simulation import Simulation

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
    return simulate(load_scenario(path_or_dict, seed=seed, duration=duration), progress=progress)
