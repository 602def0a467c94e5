"""Reproductions of the source documents' experiments: ``alphaqos reproduce``.

A reproduction is a module (one per document, e.g. :mod:`.yan2013`) that

- plans its runs: a list of :class:`RunSpec`, each a complete scenario (the
  same dict a YAML scenario file holds) plus what to measure from it; a
  module whose runs depend on earlier ones (an iterative method) also
  defines ``follow_up(measured, quick=...)``, asked for more runs after each
  batch until it returns none;
- measures each finished run (:func:`measure`, called in the worker process,
  so only a small dict of numbers travels back);
- reports: tables beside the document's, plots, a markdown report and the
  list of the document's findings, each graded on the model's numbers by
  direction and by size (:mod:`.grading`).

A module that also measures on this machine, with real traffic rather
than a simulation (the circuit emulator between network namespaces,
:mod:`.zurawski`; a trace of real TCP, :mod:`.liberatore`), defines
``live_plan(quick=...)`` (more :class:`RunSpec`, with a scenario where one
describes the run) and ``live_run(spec)``: those runs go first, one at a
time in this process (they need the machine to themselves and the wall
clock), then the simulations.

The runs are independent, so :mod:`alphaqos.runner` fans them out over the
machine's cores or a Dask cluster (one engine per process); the results do
not depend on the number of workers or where they ran, only on the
scenarios and their seeds.
"""

from __future__ import annotations

import importlib
import json
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..engine import simulate
from ..runner import RunError, Task, run_tasks
from ..scenario import load_scenario
from .grading import Finding, exit_status, findings_markdown, markdown_table, report_head

__all__ = ["REPRODUCTIONS", "Finding", "Reproduction", "RunSpec", "reproduce"]

#: Reproductions by the name ``alphaqos reproduce`` takes, and their module.
REPRODUCTIONS = {
    "yan2013": f"{__name__}.yan2013",
    "liberatore-yaqs": f"{__name__}.liberatore",
    "bouras-relative": f"{__name__}.bouras",
    "deadline-af": f"{__name__}.deadline_af",
    "zurawski-tc": f"{__name__}.zurawski",
}


@dataclass(frozen=True)
class RunSpec:
    """One simulation of a reproduction: a scenario and what to measure."""

    key: str  # unique within the reproduction, e.g. "exp2/3q-30-50-20/udp-1.5"
    scenario: dict[str, Any] | None  # None only for a live run no scenario describes
    measure: dict[str, Any] = field(default_factory=dict)  # parameters for the module's measure()


@dataclass
class Reproduction:
    """Everything a finished reproduction produced, ready to be written."""

    name: str
    quick: bool
    measured: dict[str, dict[str, Any]]  # RunSpec.key -> measure() output
    scenarios: dict[str, dict[str, Any]]  # RunSpec.key -> scenario dict
    findings: list[Finding]
    report_md: str
    tables: dict[str, list[dict[str, Any]]]  # printable tables by title
    wall_time_s: float
    cpu_time_s: float  # the runs' wall times added up
    write_plots: Callable[[Path], list[Path]]
    paper: dict[str, Any]  # the document's own values, for results.json
    runs: int = 0  # runs made (simulations and live runs); measured may hold entries split from them

    @classmethod
    def assemble(
        cls,
        name: str,
        *,
        title: str,
        mode: str,
        quick: bool,
        measured: dict[str, dict[str, Any]],
        scenarios: dict[str, dict[str, Any]],
        findings: list[Finding],
        tables: dict[str, list[dict[str, Any]]],
        grading: str,
        wall_time_s: float,
        plots: list[tuple[str, str]],
        tail: list[str],
        write_plots: Callable[[Path], list[Path]],
        paper: dict[str, Any],
        runs: dict[str, dict[str, Any]] | None = None,
        preface: tuple[str, ...] = (),
    ) -> Reproduction:
        """The report every reproduction writes: its head (mode, runs,
        times), the graded findings, each non-empty table, the plots as
        (caption, file), then ``tail``'s sections (discussion, open
        parameters); ``preface``'s paragraphs go under the head. ``runs`` are the measurements of whole runs when
        ``measured`` also holds entries split from them (their times)."""
        runs = measured if runs is None else runs
        md = report_head(title, mode, runs, wall_time_s)
        for paragraph in preface:
            md += ["", paragraph]
        md += findings_markdown(findings, grading)
        for heading, rows in tables.items():
            if rows:
                md += ["", f"## {heading}", "", markdown_table(rows)]
        md += ["", "## Plots"]
        for caption, file in plots:
            md += ["", f"![{caption}]({file})"]
        for section in tail:
            md += ["", section]
        return cls(
            name=name, quick=quick, measured=measured, scenarios=scenarios, findings=findings,
            report_md="\n".join(md) + "\n", tables=tables, wall_time_s=wall_time_s,
            cpu_time_s=sum(m.get("wall_time_s", 0.0) for m in runs.values()), write_plots=write_plots, paper=paper,
            runs=len(runs),
        )  # fmt: skip

    @property
    def all_hold(self) -> bool:
        return exit_status(self.findings) == 0

    def save(self, directory: Path) -> None:
        """Write ``report.md``, ``results.json`` (every measured number, the
        findings, the document's values), the plots and every run's scenario
        (``scenarios/<key>.yaml``, runnable with ``alphaqos run``)."""
        directory = Path(directory)
        (directory / "report.md").write_text(self.report_md)
        measured = {key: {k: v for k, v in m.items() if k not in SERIES} for key, m in self.measured.items()}
        document = {
            "reproduction": self.name,
            "quick": self.quick,
            "commit": source_commit(),
            "wall_time_s": round(self.wall_time_s, 3),
            "findings": [f.to_json() for f in self.findings],
            "measured": measured,
            "paper": self.paper,
        }
        (directory / "results.json").write_text(json.dumps(document, indent=2) + "\n")
        runs = directory / "scenarios"
        runs.mkdir()
        for key, scenario in self.scenarios.items():
            (runs / f"{_filename(key)}.yaml").write_text(load_scenario(scenario).to_yaml())
        self.write_plots(directory)


def source_commit() -> str | None:
    """The git commit of the source tree this package runs from (with
    ``+dirty`` if it has uncommitted changes), or None outside a checkout:
    results.json records it, and the README's table of findings states it."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


#: Measurements kept for the plots but left out of results.json.
SERIES = ("throughput_series", "ping_series", "queue_series", "seq_series")


def _filename(key: str) -> str:
    """``exp2/3q (30,50,20)/1.5`` -> ``exp2_3q-30-50-20_1.5``."""
    return "_".join(re.sub(r"[^A-Za-z0-9.]+", "-", part).strip("-") for part in key.split("/"))


def module(name: str) -> ModuleType:
    """The module of reproduction ``name`` (a key of :data:`REPRODUCTIONS`)."""
    return importlib.import_module(REPRODUCTIONS[name])


def _execute(module_name: str, spec: RunSpec) -> dict[str, Any]:
    """Worker: simulate one run and measure it."""
    started = time.perf_counter()
    # A run that asks for its links' taps gets a scratch directory for them,
    # which its measure() reads (the trace study) and which goes afterwards.
    with tempfile.TemporaryDirectory(prefix="alphaqos-taps-") as taps:
        tap_dir = taps if spec.measure.get("tap") else None
        # A run that asks for mid-run snapshots of its transfers' streams
        # (``stream_snapshots``: times in ns) gets each stream's
        # acknowledged bytes at each, as ``stream_bytes`` {time: [bytes]}.
        snapshots: dict[int, list[int]] = {}

        def snapshot(t: int, engine: Any) -> None:
            snapshots[t] = list(engine.results()["transfer_streams"]["bytes_acked"])

        results = simulate(load_scenario(spec.scenario), command=f"alphaqos reproduce ({spec.key})", tap_dir=tap_dir,
                           stops=spec.measure.get("stream_snapshots", ()), at_stop=snapshot)  # fmt: skip
        params = {**spec.measure, "tap_dir": tap_dir} if tap_dir else dict(spec.measure)
        if snapshots:
            params["stream_bytes"] = snapshots
        measured = importlib.import_module(module_name).measure(results, params)
    measured["events"] = results.manifest["events"]
    measured["sim_time_s"] = results.scenario.duration / 1e9
    measured["wall_time_s"] = time.perf_counter() - started
    return measured


def run_specs(
    module_name: str,
    specs: list[RunSpec],
    *,
    jobs: int | None = None,
    dask: str | None = None,
    on_done: Callable[[str, int, int], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run every spec through :func:`alphaqos.runner.run_tasks` (``jobs``
    local processes, default one per core, or the Dask cluster at ``dask``)
    and return the measurements by key, in plan order. ``on_done(key, done,
    total)`` is called as runs finish; a failed run raises
    :class:`~alphaqos.runner.RunError`."""
    keys = [spec.key for spec in specs]
    if len(set(keys)) != len(keys):
        raise ValueError("run keys must be unique")
    # Validate every scenario before starting any run: a bad plan fails at once.
    for spec in specs:
        load_scenario(spec.scenario)
    tasks = [Task(spec.key, f"{__name__}:_execute", (module_name, spec), cost=_cost(spec)) for spec in specs]
    measured: dict[str, dict[str, Any]] = {}
    outcomes = run_tasks(tasks, jobs=jobs, dask=dask)
    try:
        for outcome in outcomes:
            if not outcome.ok:
                raise RunError(f"run {outcome.key!r} failed: {outcome.error}")
            measured[outcome.key] = outcome.value
            if on_done:
                on_done(outcome.key, len(measured), len(specs))
    finally:
        outcomes.close()
    return {key: measured[key] for key in keys}


def _cost(spec: RunSpec) -> float:
    """A rough cost estimate for scheduling: simulated seconds."""
    return float(spec.measure.get("cost", 1.0))


def reproduce(
    name: str,
    *,
    quick: bool = False,
    jobs: int | None = None,
    dask: str | None = None,
    on_plan: Callable[[int], None] | None = None,
    on_done: Callable[[str, int, int], None] | None = None,
) -> Reproduction:
    """Plan, run and report reproduction ``name``.

    ``on_plan(total)`` is called with the runs planned so far (again when
    an iterative method plans more), ``on_done(key, done, total)`` as each
    finishes, counting every run made: live runs, the plan, follow-ups;
    the report's and the returned :attr:`Reproduction.runs` count the same."""
    mod = module(name)
    specs: list[RunSpec] = mod.plan(quick=quick)
    live: list[RunSpec] = mod.live_plan(quick=quick) if hasattr(mod, "live_plan") else []
    planned = len(live) + len(specs)
    if on_plan:
        on_plan(planned)
    started = time.perf_counter()
    measured = {}
    for spec in live:
        measured[spec.key] = mod.live_run(spec)
        if on_done:
            on_done(spec.key, len(measured), planned)

    def batch(more: list[RunSpec]) -> dict[str, dict[str, Any]]:
        offset = len(measured)
        progress = on_done and (lambda key, done, _total: on_done(key, offset + done, planned))
        return run_specs(mod.__name__, more, jobs=jobs, dask=dask, on_done=progress)

    measured |= batch(specs)
    specs = live + specs
    follow_up = getattr(mod, "follow_up", None)
    while follow_up is not None and (more := follow_up(measured, quick=quick)):
        specs += more
        planned += len(more)
        if on_plan:
            on_plan(planned)
        measured |= batch(more)
    wall = time.perf_counter() - started
    scenarios = {spec.key: spec.scenario for spec in specs if spec.scenario is not None}
    reproduction = mod.report(measured, scenarios, quick=quick, wall_time_s=wall)
    if reproduction.runs != len(specs):
        raise AssertionError(f"{name}: the report counts {reproduction.runs} runs, {len(specs)} were made")
    return reproduction
