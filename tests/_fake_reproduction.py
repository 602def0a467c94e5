"""A small reproduction for tests/test_reproduce_progress.py: two runs
planned, two follow-ups, each run split into steps in its report (as
yan2013's on-off runs are). The runner's workers import it by name."""

from __future__ import annotations

from typing import Any

from alphaqos.reproduce import Reproduction, RunSpec


def _scenario(name: str) -> dict[str, Any]:
    return {
        "name": name, "duration": "200ms",
        "nodes": {"A": {"address": "10.0.1.1"}, "B": {"address": "10.0.2.1"}},
        "links": [{"between": ["A", "B"], "rate": "1Gbps", "delay": "1ms"}],
        "flows": [{"name": "ping", "ping": {"from": "A", "to": "B", "interval": "10ms"}}],
    }  # fmt: skip


def plan(*, quick: bool) -> list[RunSpec]:
    return [RunSpec(f"base/{i}", _scenario(f"base-{i}")) for i in range(2)]


def follow_up(measured: dict[str, dict[str, Any]], *, quick: bool) -> list[RunSpec]:
    n = sum(k.startswith("iter/") for k in measured)
    return [RunSpec(f"iter/{n}", _scenario(f"iter-{n}"))] if n < 2 else []


def measure(results, params: dict[str, Any]) -> dict[str, Any]:
    return {"steps": {"a": {}, "b": {}}}


def report(measured, scenarios, *, quick: bool, wall_time_s: float) -> Reproduction:
    # As yan2013 does: each run is split into entries of its steps.
    split = dict(measured) | {f"{k}/{s}": {"wall_time_s": 0.0} for k, m in measured.items() for s in m["steps"]}
    return Reproduction.assemble(
        "fake", title="fake", mode="quick", quick=quick, measured=split, scenarios=scenarios, findings=[], tables={},
        grading="", wall_time_s=wall_time_s, plots=[], tail=[], write_plots=lambda d: [], paper={}, runs=measured,
    )  # fmt: skip
