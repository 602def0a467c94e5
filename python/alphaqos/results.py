"""A run's results: polars DataFrames, a headline summary, files on disk.

:meth:`Results.from_engine` takes the engine's columnar tables
(``docs/engine-config.md``), converts every ``*_ns`` column to float seconds
under the name without the suffix (see :mod:`alphaqos.columns`) and computes
:attr:`Results.summary`. :meth:`Results.save` writes a run directory::

    tcp.parquet udp.parquet ping.parquet queue.parquet
    workload_tcp.parquet  the tcp table's series of every workload stream while open
    queue_summary.parquet filter.parquet flow_summary.parquet
    control.parquet  every change of a knob: time, agent, handle, knob, old, new
    summary.json    headline figures per flow and per queue
    scenario.yaml   the scenario as run: defaults filled in, human units
    manifest.json   versions, seed, wall time, command
    plots/*.png

Everything but ``manifest.json`` and the plots depends only on the scenario
and its seed: two runs write byte-identical Parquet and summary files.
:meth:`Results.load` reads a run directory back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from . import columns as col
from .scenario import Scenario, load_scenario

__all__ = ["Results"]

NS_PER_S = 1e9
TABLE_FILES = {name: f"{name}.parquet" for name in col.TABLES}
SUMMARY_FILE = "summary.json"
SCENARIO_FILE = "scenario.yaml"
MANIFEST_FILE = "manifest.json"
PLOTS_DIR = "plots"


@dataclass
class Results:
    """The tables of one run (times in seconds), its summary and scenario."""

    scenario: Scenario
    tcp: pl.DataFrame
    udp: pl.DataFrame
    ping: pl.DataFrame
    queue: pl.DataFrame
    queue_summary: pl.DataFrame
    filter: pl.DataFrame  # firewall filter counters per router and term
    flow_summary: pl.DataFrame
    summary: dict[str, Any]
    #: Workloads: series per workload, one row per transfer and per stream.
    workload: pl.DataFrame = field(default_factory=lambda: _frame("workload", None))
    transfers: pl.DataFrame = field(default_factory=lambda: _frame("transfers", None))
    transfer_streams: pl.DataFrame = field(default_factory=lambda: _frame("transfer_streams", None))
    #: The TCP series of each workload stream (``transfer``, ``stream`` as
    #: in ``transfer_streams``) at each sample while it is open.
    workload_tcp: pl.DataFrame = field(default_factory=lambda: _frame("workload_tcp", None))
    #: The control plane: every change of a knob (``control.parquet``) and
    #: the agents' reports.
    control: pl.DataFrame = field(default_factory=lambda: _frame("control", None))
    reservation: pl.DataFrame = field(default_factory=lambda: _frame("reservation", None))
    reservation_summary: pl.DataFrame = field(default_factory=lambda: _frame("reservation_summary", None))
    admission: pl.DataFrame = field(default_factory=lambda: _frame("admission", None))
    #: YAQS disciplines, monitored interfaces, queue-length histograms.
    yaqs: pl.DataFrame = field(default_factory=lambda: _frame("yaqs", None))
    yaqs_series: pl.DataFrame = field(default_factory=lambda: _frame("yaqs_series", None))
    monitor: pl.DataFrame = field(default_factory=lambda: _frame("monitor", None))
    qlen_hist: pl.DataFrame = field(default_factory=lambda: _frame("qlen_hist", None))
    #: How the run was made (versions, wall time, command); not deterministic.
    manifest: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_engine(
        cls, scenario: Scenario, tables: dict[str, dict[str, list]], manifest: dict[str, Any] | None = None
    ) -> Results:
        """Build results from ``alphaqos._core.Simulation.results()``."""
        frames = {name: _frame(name, tables.get(name)) for name in col.TABLES}
        run = tables.get("run") or {}
        events = (run.get(col.EVENTS) or [0])[0]
        sim_time_ns = (run.get(col.SIM_TIME + col.NS_SUFFIX) or [0])[0]
        summary = _summarize(scenario, frames, events=events, sim_time=sim_time_ns / NS_PER_S)
        every = (run.get(col.STREAM_SAMPLE_EVERY) or [1])[0]
        if every > 1:  # said only when the engine thinned workload_tcp
            summary[col.STREAM_SAMPLE_EVERY] = every
        return cls(scenario=scenario, **frames, summary=summary, manifest=dict(manifest or {}))

    def tables(self) -> dict[str, pl.DataFrame]:
        """The tables by name."""
        return {name: getattr(self, name) for name in col.TABLES}

    def save(self, directory: str | Path, *, plots: bool = True) -> Path:
        """Write the run directory (created if missing; files overwritten)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name, frame in self.tables().items():
            frame.write_parquet(directory / TABLE_FILES[name], compression="zstd", statistics=True)
        _write_json(directory / SUMMARY_FILE, self.summary)
        resolved = self.scenario.resolved()
        header = "# The scenario as run: every default filled in, router addresses assigned.\n"
        (directory / SCENARIO_FILE).write_text(header + resolved.to_yaml(), encoding="utf-8")
        _write_json(directory / MANIFEST_FILE, self.manifest)
        if plots:
            from .plots import write_plots  # matplotlib is only needed here

            write_plots(self, directory / PLOTS_DIR)
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> Results:
        """Read a run directory written by :meth:`save`."""
        directory = Path(directory)
        # Runs written before a table existed read it as empty.
        frames = {
            name: pl.read_parquet(directory / file) if (directory / file).exists() else _frame(name, None)
            for name, file in TABLE_FILES.items()
        }
        summary = json.loads((directory / SUMMARY_FILE).read_text(encoding="utf-8"))
        manifest_path = directory / MANIFEST_FILE
        manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
        scenario = load_scenario(directory / SCENARIO_FILE)
        return cls(scenario=scenario, **frames, summary=summary, manifest=manifest)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")


def _frame(name: str, table: dict[str, list] | None) -> pl.DataFrame:
    """One engine table as a DataFrame with the results layer's names and
    types; columns the contract does not list are kept after the others."""
    expected = col.TABLES[name]
    if not table:
        return pl.DataFrame([_series(c, [], seconds=c in col.SECONDS) for c in expected])
    engine_names = {engine.removesuffix(col.NS_SUFFIX): engine for engine in table}
    missing = [c for c in expected if c not in engine_names]
    if missing:
        raise ValueError(f"engine result table {name!r} lacks the columns {missing}")
    names = [*expected, *(c for c in engine_names if c not in expected)]
    return pl.DataFrame(
        [_series(c, table[engine_names[c]], seconds=engine_names[c].endswith(col.NS_SUFFIX)) for c in names]
    )


def _series(name: str, values: list, *, seconds: bool) -> pl.Series:
    """Text, float seconds (from integer ns) or integer counts."""
    if name in col.TEXT:
        return pl.Series(name, values, dtype=pl.String)
    if name in col.FLOATS:
        return pl.Series(name, values, dtype=pl.Float64)
    if seconds:
        ns = pl.Series(name, values, dtype=pl.Int64).cast(pl.Float64)
        # Element-wise division is correctly rounded; polars turns division
        # by a scalar into multiplication by its reciprocal, which is not
        # (300 ms would read 0.30000000000000004 s).
        return ns / pl.repeat(NS_PER_S, ns.len(), dtype=pl.Float64, eager=True)
    return pl.Series(name, values, dtype=pl.Int64)


def _summarize(scenario: Scenario, frames: dict[str, pl.DataFrame], *, events: int, sim_time: float) -> dict[str, Any]:
    """Headline figures per flow and per queue, JSON-ready."""
    flows = {}
    for row in frames["flow_summary"].iter_rows(named=True):
        flows[row[col.FLOW]] = _flow_headline(row, frames, scenario)
    queue_lengths = frames["queue"].group_by(col.QUEUE).agg(
        pl.col(col.LEN_PKTS).max().alias(col.MAX_LEN_PKTS), pl.col(col.LEN_BYTES).max().alias(col.MAX_LEN_BYTES)
    )
    maxima = {row[col.QUEUE]: row for row in queue_lengths.iter_rows(named=True)}
    queues = {}
    for row in frames["queue_summary"].iter_rows(named=True):
        peaks = maxima.get(row[col.QUEUE], {})
        queues[row[col.QUEUE]] = {
            col.LINK: row[col.LINK],
            col.RATE_BPS: row[col.RATE_BPS],
            col.ENQ_PKTS: row[col.ENQ_PKTS],
            col.DEQ_PKTS: row[col.DEQ_PKTS],
            col.DROP_PKTS: row[col.DROP_PKTS],
            **{column: row[column] for column in col.DROP_REASONS.values()},
            col.MAX_LEN_PKTS: peaks.get(col.MAX_LEN_PKTS, 0),
            col.MAX_LEN_BYTES: peaks.get(col.MAX_LEN_BYTES, 0),
        }
    out = {
        col.NAME: scenario.name,
        col.SEED: scenario.seed,
        col.DURATION: scenario.duration / NS_PER_S,
        col.SIM_TIME: sim_time,
        col.EVENTS: events,
        col.FLOWS: flows,
        col.QUEUES: queues,
    }
    if scenario.workloads:
        # One partition per workload, not a filter of the whole table per
        # workload (thousands of workloads).
        by_workload = frames["transfers"].partition_by(col.WORKLOAD, as_dict=True)
        empty = frames["transfers"].clear()
        out[col.WORKLOADS] = {wl.name: _workload_headline(wl, by_workload.get((wl.name,), empty)) for wl in scenario.workloads}
    return out


def _workload_headline(workload, mine: pl.DataFrame) -> dict[str, Any]:
    """Transfers started, completed, failed and still unfinished when the
    run ended, bytes offered and delivered, completion-time percentiles and
    the slowdown (completion time over the time alone on an idle path),
    from the workload's rows of the transfers table."""
    done = mine.filter(pl.col(col.FCT).is_not_null())
    gave_up = mine[col.FAILED] > 0
    slowdown = done[col.FCT] / done[col.IDEAL_FCT]
    q = _quantile
    return {
        col.KIND: workload.kind,
        col.TRANSFERS_STARTED: mine.height,
        col.TRANSFERS_COMPLETED: done.height,
        col.TRANSFERS_FAILED: int(gave_up.sum()),
        col.TRANSFERS_UNFINISHED: int((mine[col.FCT].is_null() & ~gave_up).sum()),
        col.BYTES_OFFERED: int(mine[col.SIZE_BYTES].sum()),
        col.BYTES_DELIVERED: int(mine[col.BYTES_ACKED].sum()),
        col.FCT_P50: q(done[col.FCT], 0.5),
        col.FCT_P99: q(done[col.FCT], 0.99),
        col.SLOWDOWN_MEAN: slowdown.mean() if done.height else None,
        col.SLOWDOWN_P99: q(slowdown, 0.99),
        col.RETRANSMITS: int(mine[col.RETRANSMITS].sum()),
    }


def _flow_headline(row: dict[str, Any], frames: dict[str, pl.DataFrame], scenario: Scenario) -> dict[str, Any]:
    name, kind = row[col.FLOW], row[col.KIND]
    headline = {
        col.KIND: kind,
        col.SRC: row[col.SRC],
        col.DST: row[col.DST],
        col.TX_PKTS: row[col.TX_PKTS],
        col.RX_PKTS: row[col.RX_PKTS],
        col.DROP_PKTS: row[col.DROP_PKTS],
        col.LOSS: row[col.DROP_PKTS] / row[col.TX_PKTS] if row[col.TX_PKTS] else 0.0,
        col.GOODPUT_BPS: row[col.GOODPUT_BPS],
        col.DELAY_MEAN: row[col.DELAY_MEAN],
        col.DELAY_P99: row[col.DELAY_P99],
    }
    if kind == "tcp":
        series = frames["tcp"].filter(pl.col(col.FLOW) == name)
        last = series.row(-1, named=True) if series.height else {}
        for column in col.TCP_COUNTERS:
            headline[column] = last.get(column, 0)
    elif kind == "ping":
        pings = frames["ping"].filter(pl.col(col.FLOW) == name)
        rtt = pings[col.RTT].drop_nulls()
        headline |= {
            col.PINGS_SENT: pings.height,
            col.PINGS_LOST: pings.height - rtt.len(),
            col.RTT_MEAN: rtt.mean(),
            col.RTT_STD: rtt.std(ddof=0),
            col.RTT_MIN: rtt.min(),
            col.RTT_P50: _quantile(rtt, 0.5),
            col.RTT_P90: _quantile(rtt, 0.9),
            col.RTT_MAX: rtt.max(),
            # A mean over idle and loaded times is neither: the probes per
            # stretch of time in which the same other traffic runs.
            col.RTT_PHASES: _rtt_phases(pings, scenario, exclude=name),
        }
    return headline


def _quantile(values: pl.Series, p: float) -> float | None:
    return values.quantile(p, interpolation="linear") if values.len() else None


def _rtt_phases(pings: pl.DataFrame, scenario: Scenario, *, exclude: str) -> list[dict[str, Any]]:
    """Split the probes where another flow, workload or deadline transfer
    starts or stops; phases running the same traffic side by side merge,
    phases without a probe are left out."""
    spans = [(f.name, f.start, scenario.stop_of(f)) for f in scenario.flows if f.name != exclude and f.kind != "ping"]
    spans += [(w.name, w.start, scenario.duration if w.stop is None else w.stop) for w in scenario.workloads]
    cuts = sorted({0, scenario.duration, *(t for _, a, b in spans for t in (a, b) if 0 < t < scenario.duration)})
    phases: list[dict[str, Any]] = []
    for begin, end in zip(cuts, cuts[1:]):
        active = [name for name, a, b in spans if a <= begin and end <= b]
        if phases and phases[-1][col.ACTIVE] == active:
            phases[-1][col.END] = end / NS_PER_S
        else:
            phases.append({col.START: begin / NS_PER_S, col.END: end / NS_PER_S, col.ACTIVE: active})
    out = []
    for phase in phases:
        mine = pings.filter((pl.col(col.TIME) >= phase[col.START]) & (pl.col(col.TIME) < phase[col.END]))
        if mine.is_empty():
            continue
        rtt = mine[col.RTT].drop_nulls()
        out.append(phase | {
            col.PINGS_SENT: mine.height, col.PINGS_LOST: mine.height - rtt.len(),
            col.RTT_MEAN: rtt.mean(), col.RTT_P50: _quantile(rtt, 0.5), col.RTT_MAX: rtt.max(),
        })  # fmt: skip
    return out
