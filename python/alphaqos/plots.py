"""The standard plots of a run, one PNG each, against simulated time.

=====================  =========================================================
file                   what it shows
=====================  =========================================================
``throughput.png``     TCP goodput and UDP received rate per flow (Gbit/s)
``ping_rtt.png``       ping round-trip times (ms), lost pings as crosses on the top edge
``queue_length.png``   length of every queue that ever held a packet, in
                       packets if all of them are limited in packets, else MB
``cwnd.png``           TCP congestion window per flow (MB), receive window dashed
``workload_rate.png``  per workload: offered and delivered rate (Mbit/s)
``fct_cdf.png``        per workload: CDF of transfer completion times (log scale)
``slowdown.png``       per workload: completion time over the time alone on an
                       idle path, median and 99th percentile by size bucket
=====================  =========================================================

Every plot against time carries a short vertical tick at the top edge at
each instant a knob changed (the ``control`` table: an agent's or a Python
caller's change), so that a step in a series can be read against its cause.

A plot with nothing to show (no TCP flow, say) is not written. Figures are
drawn with matplotlib's object API on the Agg canvas: no pyplot state, no
display needed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import columns as col

if TYPE_CHECKING:
    from .results import Results

__all__ = ["PLOT_FILES", "mark_changes", "plot_pings", "write_plots"]

GIGA = 1e9
MEGA = 1e6
MILLI = 1e-3
FIGSIZE = (9, 4.5)
DPI = 120


def write_plots(results: Results, directory: str | Path) -> list[Path]:
    """Draw every plot that has data into ``directory``; return the files."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, draw in PLOT_FILES.items():
        figure = Figure(figsize=FIGSIZE, layout="constrained")
        axes = figure.add_subplot()
        if not draw(results, axes):
            continue
        axes.set_xlabel("simulated time (s)")
        mark_changes(axes, results.control)
        axes.set_xlim(0, results.scenario.duration / GIGA)
        axes.grid(True, alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend(loc="best", fontsize="small")
        axes.set_title(f"{axes.get_title()} ({results.scenario.name})")
        path = directory / filename
        figure.savefig(path, dpi=DPI)
        written.append(path)
    for filename, draw in DISTRIBUTION_PLOTS.items():
        figure = Figure(figsize=FIGSIZE, layout="constrained")
        axes = figure.add_subplot()
        if not draw(results, axes):
            continue
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(loc="best", fontsize="small")
        axes.set_title(f"{axes.get_title()} ({results.scenario.name})")
        path = directory / filename
        figure.savefig(path, dpi=DPI)
        written.append(path)
    return written


def mark_changes(axes: Axes, control: pl.DataFrame) -> int:
    """Ticks along the top edge at the times knobs changed; their number."""
    times = control[col.TIME].unique().sort().to_list() if control.height else []
    if times:
        axes.vlines(times, 0.94, 1.0, transform=axes.get_xaxis_transform(), colors="0.25", linewidth=0.7, label="knob changed")
    return len(times)


def _workload_rate(results: Results, axes: Axes) -> bool:
    if results.workload.is_empty():
        return False
    for (name,), rows in results.workload.group_by(col.WORKLOAD, maintain_order=True):
        line = axes.plot(rows[col.TIME], rows[col.DELIVERED_BPS] / MEGA, label=f"{name} delivered")[0]
        axes.plot(rows[col.TIME], rows[col.OFFERED_BPS] / MEGA, ls="--", color=line.get_color(), label=f"{name} offered")
    axes.set_ylabel("Mbit/s")
    axes.set_title("Workloads: offered (transfers started) and delivered rate")
    return True


def _done(results: Results) -> pl.DataFrame:
    return results.transfers.filter(pl.col(col.FCT).is_not_null() & (pl.col(col.FCT) > 0))


def _fct_cdf(results: Results, axes: Axes) -> bool:
    done = _done(results)
    if done.is_empty():
        return False
    for (name,), rows in done.group_by(col.WORKLOAD, maintain_order=True):
        fct = rows[col.FCT].sort()
        n = fct.len()
        axes.step(fct, [(i + 1) / n for i in range(n)], where="post", label=f"{name} ({n} transfers)")
    axes.set_xscale("log")
    axes.set_xlabel("completion time (s)")
    axes.set_ylabel("fraction of transfers")
    axes.set_ylim(0, 1.01)
    axes.set_title("Transfer completion times")
    return True


#: Size buckets of the slowdown plot: powers of 10 from 1 KB.
SIZE_DECADES = 10


def _slowdown(results: Results, axes: Axes) -> bool:
    done = _done(results)
    if done.is_empty():
        return False
    done = done.with_columns(
        (pl.col(col.FCT) / pl.col(col.IDEAL_FCT)).alias("slowdown"),
        pl.col(col.SIZE_BYTES).log10().floor().clip(0, 3 + SIZE_DECADES).alias("decade"),
    )
    for (name,), rows in done.group_by(col.WORKLOAD, maintain_order=True):
        buckets = (
            rows.group_by("decade")
            .agg(pl.col("slowdown").median().alias("p50"), pl.col("slowdown").quantile(0.99).alias("p99"), pl.len().alias("n"))
            .sort("decade")
        )
        x = [10 ** (d + 0.5) for d in buckets["decade"]]
        line = axes.plot(x, buckets["p50"], marker="o", label=f"{name} median")[0]
        axes.plot(x, buckets["p99"], marker="^", ls=":", color=line.get_color(), label=f"{name} 99th percentile")
    axes.axhline(1.0, color="grey", lw=0.8)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("transfer size (bytes, by decade)")
    axes.set_ylabel("slowdown (completion time / alone on an idle path)")
    axes.set_title("Slowdown by transfer size")
    return True


def _kinds(results: Results) -> dict[str, str]:
    return dict(results.flow_summary.select(col.FLOW, col.KIND).iter_rows())


def _throughput(results: Results, axes: Axes) -> bool:
    kinds = _kinds(results)
    drawn = False
    for table, rate, what in ((results.tcp, col.GOODPUT_BPS, "goodput"), (results.udp, col.RX_RATE_BPS, "received")):
        for (flow,), series in table.group_by(col.FLOW, maintain_order=True):
            label = f"{flow} ({kinds.get(flow, '?').upper()} {what})"
            axes.plot(series[col.TIME], series[rate] / GIGA, label=label, linewidth=1)
            drawn = True
    axes.set_title("Throughput per flow")
    axes.set_ylabel("rate (Gbit/s)")
    axes.set_ylim(bottom=0)
    return drawn


def _ping_rtt(results: Results, axes: Axes) -> bool:
    if results.ping.is_empty():
        return False
    for (flow,), pings in results.ping.group_by(col.FLOW, maintain_order=True):
        plot_pings(axes, pings[col.TIME].to_list(), pings[col.RTT].to_list(), flow)
    axes.set_title("Ping round-trip time")
    axes.set_ylabel("RTT (ms)")
    axes.set_ylim(bottom=0)
    return True


def plot_pings(axes: Axes, times: list[float], rtts: list[float | None], label: str) -> None:
    """Ping RTTs (seconds, None for a lost ping) in ms against time: the
    answered pings as points joined only between consecutive answers, the
    lost ones as crosses along the top edge of the plot, labelled as lost,
    so that a loss never reads as a short (0 ms) round trip."""
    lost = [t for t, r in zip(times, rtts, strict=True) if r is None]
    # NaN breaks the line: no segment is drawn across a lost ping.
    ys = [r / MILLI if r is not None else float("nan") for r in rtts]
    (line,) = axes.plot(times, ys, ".-", label=label, linewidth=0.8, markersize=3)
    if lost:
        # At the top edge (axes coordinates), whatever the RTT scale.
        axes.plot(lost, [1.0] * len(lost), "x", color=line.get_color(), transform=axes.get_xaxis_transform(),
                  clip_on=False, label=f"{label}: lost ({len(lost)})")  # fmt: skip


def _queue_length(results: Results, axes: Axes) -> bool:
    busy = results.queue.group_by(col.QUEUE).agg(pl.col(col.LEN_PKTS).max()).filter(pl.col(col.LEN_PKTS) > 0)
    shown = set(busy[col.QUEUE])
    if not shown:
        return False
    in_packets = all(_limited_in_packets(results, queue) for queue in shown)
    column, scale, unit = (col.LEN_PKTS, 1, "packets") if in_packets else (col.LEN_BYTES, MEGA, "MB")
    for (queue,), series in results.queue.group_by(col.QUEUE, maintain_order=True):
        if queue in shown:
            axes.plot(series[col.TIME], series[column] / scale, label=queue, linewidth=1)
    axes.set_title("Queue length")
    axes.set_ylabel(f"queue length ({unit})")
    axes.set_ylim(bottom=0)
    return True


def _limited_in_packets(results: Results, queue: str) -> bool:
    """Whether the scenario limits ``queue`` ("<from>-><to>") in packets."""
    sender, _, receiver = queue.partition("->")
    for link in results.scenario.links:
        if set(link.between) == {sender, receiver}:
            spec = link.queue_from(sender)
            return getattr(spec, spec.kind).limit.pkts is not None
    return False


def _cwnd(results: Results, axes: Axes) -> bool:
    if results.tcp.is_empty():
        return False
    rwnd = {flow.name: flow.tcp.rwnd for flow in results.scenario.flows if flow.tcp is not None}
    for (flow,), series in results.tcp.group_by(col.FLOW, maintain_order=True):
        (line,) = axes.plot(series[col.TIME], series[col.CWND_BYTES] / MEGA, label=flow, linewidth=1)
        if flow in rwnd:
            axes.axhline(rwnd[flow] / MEGA, color=line.get_color(), linestyle="--", linewidth=0.8,
                         label=f"{flow} receive window")  # fmt: skip
    axes.set_title("TCP congestion window")
    axes.set_ylabel("cwnd (MB)")
    axes.set_ylim(bottom=0)
    return True


#: Plot files and the functions that draw them; each returns False when it
#: has nothing to draw.
PLOT_FILES: dict[str, Callable[[Results, Axes], bool]] = {
    "throughput.png": _throughput,
    "ping_rtt.png": _ping_rtt,
    "queue_length.png": _queue_length,
    "cwnd.png": _cwnd,
    "workload_rate.png": _workload_rate,
}

#: Plots of distributions (not against time).
DISTRIBUTION_PLOTS: dict[str, Callable[[Results, Axes], bool]] = {
    "fct_cdf.png": _fct_cdf,
    "slowdown.png": _slowdown,
}
