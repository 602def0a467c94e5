"""The standard plots of a run, one PNG each, against simulated time.

=====================  =========================================================
file                   what it shows
=====================  =========================================================
``throughput.png``     TCP goodput and UDP received rate per flow, and the
                       delivered rate of each workload (all its streams)
``ping_rtt.png``       ping round-trip times (ms), lost pings as crosses on the top edge
``queue_length.png``   length of every queue that ever held a packet, in
                       packets if all of them are limited in packets, else bytes
``cwnd.png``           TCP congestion window per flow while it runs (receive
                       window dashed) and per workload stream while it is open
                       ("gridftp stream 3"; ``workload_tcp.parquet``)
``workload_rate.png``  per workload: delivered rate, and on an axis of its own
                       the rate offered (the sizes of the transfers started)
``fct_cdf.png``        per workload: CDF of transfer completion times (log scale)
``slowdown.png``       per workload: completion time over the time alone on an
                       idle path, median and 99th percentile by size bucket
=====================  =========================================================

Units follow the data: a 10 Mbit/s link is drawn in Mbit/s, a queue that
never held more than 4 KB in KB. Beyond :data:`TOP_SERIES` series (flows,
workloads, queues), the largest are drawn one by one and the rest as one
"others" series (their sum, or their pooled transfers), so that a scenario
with thousands of workloads draws a handful of lines in seconds.

Every plot against time marks the instants a knob changed (the ``control``
table: an agent's or a Python caller's change), so that a step in a series
can be read against its cause: a short tick at the top edge each while
there are at most :data:`MAX_TICKS` of them, else a step line of the number
of changes so far (ticks by the thousand would be a black band).

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

__all__ = ["PLOT_FILES", "mark_changes", "plot_pings", "rate_unit", "size_unit", "stream_labels", "write_plots"]

GIGA = 1e9
MEGA = 1e6
MILLI = 1e-3
FIGSIZE = (9, 4.5)
DPI = 120
#: Series drawn one by one; the others are drawn as one.
TOP_SERIES = 8
#: Knob changes drawn as ticks; more are drawn as a step line.
MAX_TICKS = 40

_RATE_UNITS = ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s"))
_SIZE_UNITS = ((1e9, "GB"), (1e6, "MB"), (1e3, "KB"), (1.0, "B"))


def rate_unit(peak_bps: float | None) -> tuple[float, str]:
    """(divisor, unit) in which ``peak_bps`` reads between 1 and 1000."""
    return _unit(peak_bps, _RATE_UNITS)


def size_unit(peak_bytes: float | None) -> tuple[float, str]:
    """(divisor, unit) in which ``peak_bytes`` reads between 1 and 1000."""
    return _unit(peak_bytes, _SIZE_UNITS)


def _unit(peak: float | None, table: tuple[tuple[float, str], ...]) -> tuple[float, str]:
    for scale, unit in table:
        if (peak or 0) >= scale:
            return scale, unit
    return table[-1]


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
        _legend(axes)
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
        _legend(axes)
        axes.set_title(f"{axes.get_title()} ({results.scenario.name})")
        path = directory / filename
        figure.savefig(path, dpi=DPI)
        written.append(path)
    return written


def _legend(axes: Axes) -> None:
    """One legend for the axes and any twin axes sharing its x axis."""
    handles, labels = [], []
    for ax in (axes, *axes.get_shared_x_axes().get_siblings(axes)):
        if ax is not axes or not handles:
            more = ax.get_legend_handles_labels()
            handles += [h for h, lab in zip(*more) if lab not in labels]
            labels += [lab for lab in more[1] if lab not in labels]
    if handles:
        axes.legend(handles, labels, loc="best", fontsize="small")


def mark_changes(axes: Axes, control: pl.DataFrame) -> int:
    """Mark the times knobs changed; return how many distinct times. Ticks
    along the top edge up to MAX_TICKS times, else the number of changes so
    far as a step line on an axis of its own (right)."""
    times = control[col.TIME].unique().sort().to_list() if control.height else []
    if not times:
        return 0
    if len(times) <= MAX_TICKS:
        axes.vlines(times, 0.94, 1.0, transform=axes.get_xaxis_transform(), colors="0.25", linewidth=0.7, label="knob changed")
    else:
        counts = control.group_by(col.TIME).len().sort(col.TIME)
        right = axes.twinx()
        right.step([0.0, *counts[col.TIME]], [0, *counts["len"].cum_sum()], where="post", color="0.35",
                   linewidth=0.8, label=f"knob changes so far ({control.height:,})")  # fmt: skip
        right.set_ylabel("knob changes so far")
        right.set_ylim(bottom=0)
    return len(times)


def _ranked(frame: pl.DataFrame, key: str, value: str, *, by: str = "sum", top: int = TOP_SERIES) -> tuple[list[str], list[str]]:
    """The keys of ``frame`` ranked by the sum (or max) of ``value``: the
    ``top`` first (all of them if only one more), and the rest."""
    agg = pl.col(value).sum() if by == "sum" else pl.col(value).max()
    order = frame.group_by(key).agg(agg.alias("_rank")).sort(["_rank", key], descending=[True, False])[key].to_list()
    if len(order) <= top + 1:
        return order, []
    return order[:top], order[top:]


def _series(frame: pl.DataFrame, key: str, value: str, *, others: str = "sum") -> list[tuple[str, pl.DataFrame]]:
    """(label, frame of time and value) for the TOP_SERIES keys of ``frame``
    largest by ``value``, then "N others": their sum at each time (``others
    = "sum"``), or nothing (``"drop"``)."""
    shown, rest = _ranked(frame, key, value, by="sum" if others == "sum" else "max")
    parts = frame.filter(pl.col(key).is_in(shown)).partition_by(key, as_dict=True, maintain_order=True)
    out = [(name, parts[(name,)].select(col.TIME, value)) for name in shown]
    if rest and others == "sum":
        # Not the shown: a handful of keys to look up, not thousands.
        summed = frame.filter(~pl.col(key).is_in(shown)).group_by(col.TIME).agg(pl.col(value).sum()).sort(col.TIME)
        out.append((f"{len(rest):,} others (sum)", summed))
    return out


def _peak(series: list[tuple[str, pl.DataFrame]], value: str) -> float:
    return max((frame[value].max() or 0 for _, frame in series), default=0)


def _workload_rate(results: Results, axes: Axes) -> bool:
    if results.workload.is_empty():
        return False
    delivered = _series(results.workload, col.WORKLOAD, col.DELIVERED_BPS)
    offered = _series(results.workload, col.WORKLOAD, col.OFFERED_BPS)
    # The workloads drawn on the left are drawn on the right too, in the same colour.
    offered_by_name = dict(offered)
    scale, unit = rate_unit(_peak(delivered, col.DELIVERED_BPS))
    right = axes.twinx()
    oscale, ounit = rate_unit(_peak(offered, col.OFFERED_BPS))
    for name, frame in delivered:
        line = axes.plot(frame[col.TIME], frame[col.DELIVERED_BPS] / scale, label=f"{name} delivered")[0]
        if name in offered_by_name:
            o = offered_by_name[name]
            right.plot(o[col.TIME], o[col.OFFERED_BPS] / oscale, ls="--", lw=0.8, color=line.get_color(),
                       label=f"{name} offered (right)")  # fmt: skip
    axes.set_ylabel(f"delivered ({unit})")
    right.set_ylabel(f"offered: transfers started ({ounit})")
    axes.set_ylim(bottom=0)
    right.set_ylim(bottom=0)
    axes.set_title("Workloads: delivered rate, and offered (own axis)")
    return True


def _done(results: Results) -> pl.DataFrame:
    return results.transfers.filter(pl.col(col.FCT).is_not_null() & (pl.col(col.FCT) > 0))


def _by_workload(done: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """The transfers of the TOP_SERIES workloads with most of them, one by
    one, then those of all the others pooled."""
    counted = done.with_columns(pl.lit(1).alias("_n"))
    shown, rest = _ranked(counted, col.WORKLOAD, "_n")
    parts = done.partition_by(col.WORKLOAD, as_dict=True)
    out = [(name, parts[(name,)]) for name in shown]
    if rest:
        out.append((f"{len(rest):,} other workloads", done.filter(pl.col(col.WORKLOAD).is_in(rest))))
    return out


def _fct_cdf(results: Results, axes: Axes) -> bool:
    done = _done(results)
    if done.is_empty():
        return False
    for name, rows in _by_workload(done):
        fct = rows[col.FCT].sort()
        n = fct.len()
        axes.step(fct, [(i + 1) / n for i in range(n)], where="post", label=f"{name} ({n:,} transfers)")
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
    for name, rows in _by_workload(done):
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


RATE = "rate_bps"


def _throughput(results: Results, axes: Axes) -> bool:
    kinds = _kinds(results)
    parts = [
        results.tcp.select(pl.format("{} (TCP goodput)", col.FLOW).alias(col.FLOW), col.TIME, pl.col(col.GOODPUT_BPS).alias(RATE)),
        results.udp.select(
            pl.format("{} ({} received)", col.FLOW, pl.col(col.FLOW).replace_strict(kinds, default="?").str.to_uppercase()).alias(col.FLOW),
            col.TIME, pl.col(col.RX_RATE_BPS).cast(pl.Float64).alias(RATE),
        ),
        results.workload.select(pl.format("{} (workload delivered)", col.WORKLOAD).alias(col.FLOW), col.TIME,
                                pl.col(col.DELIVERED_BPS).cast(pl.Float64).alias(RATE)),
    ]  # fmt: skip
    rates = pl.concat([p.with_columns(pl.col(RATE).cast(pl.Float64), pl.col(col.TIME).cast(pl.Float64)) for p in parts])
    if rates.is_empty():
        return False
    series = _series(rates, col.FLOW, RATE)
    scale, unit = rate_unit(_peak(series, RATE))
    for label, frame in series:
        axes.plot(frame[col.TIME], frame[RATE] / scale, label=label, linewidth=1)
    axes.set_title("Throughput per flow and workload")
    axes.set_ylabel(f"rate ({unit})")
    axes.set_ylim(bottom=0)
    return True


def _ping_rtt(results: Results, axes: Axes) -> bool:
    if results.ping.is_empty():
        return False
    shown, rest = _ranked(results.ping.with_columns(pl.lit(1).alias("_n")), col.FLOW, "_n")
    parts = results.ping.partition_by(col.FLOW, as_dict=True)
    for flow in shown:
        pings = parts[(flow,)]
        plot_pings(axes, pings[col.TIME].to_list(), pings[col.RTT].to_list(), flow)
    axes.set_title("Ping round-trip time" + (f" ({len(rest)} more pings not drawn)" if rest else ""))
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
    column = col.LEN_PKTS if in_packets else col.LEN_BYTES
    series = _series(results.queue.filter(pl.col(col.QUEUE).is_in(shown)), col.QUEUE, column)
    scale, unit = (1.0, "packets") if in_packets else size_unit(_peak(series, column))
    for label, frame in series:
        axes.plot(frame[col.TIME], frame[column] / scale, label=label, linewidth=1)
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
            limit = getattr(getattr(spec, spec.kind), "limit", None)
            return limit is not None and limit.pkts is not None
    return False


def stream_labels(streams: pl.DataFrame) -> pl.Expr:
    """The label of each row of a ``workload_tcp`` frame: "<workload>
    stream <s>" for the streams of a workload's only transfer, "<workload>
    transfer <t> stream <s>" otherwise (``transfer`` and ``stream`` as in
    ``transfer_streams.parquet``)."""
    many = streams.group_by(col.WORKLOAD).agg(pl.col(col.TRANSFER).n_unique() > 1).filter(pl.col(col.TRANSFER))
    return (
        pl.when(pl.col(col.WORKLOAD).is_in(many[col.WORKLOAD].implode()))
        .then(pl.format("{} transfer {} stream {}", col.WORKLOAD, col.TRANSFER, col.STREAM))
        .otherwise(pl.format("{} stream {}", col.WORKLOAD, col.STREAM))
    )


def _cwnd(results: Results, axes: Axes) -> bool:
    streams = results.workload_tcp
    if results.tcp.is_empty() and streams.is_empty():
        return False
    flows = {flow.name: flow for flow in results.scenario.flows if flow.tcp is not None}
    # A flow's window is drawn while it runs: after its stop the engine
    # still reports the last window, which no packet uses. A workload's
    # stream has rows only while it is open.
    running = results.tcp.filter(
        pl.col(col.TIME) <= pl.col(col.FLOW).replace_strict(
            {name: results.scenario.stop_of(flow) / GIGA for name, flow in flows.items()}, default=float("inf"),
            return_dtype=pl.Float64,
        )
    ).select(col.FLOW, col.TIME, col.CWND_BYTES)  # fmt: skip
    if not streams.is_empty():
        labelled = streams.select(stream_labels(streams).alias(col.FLOW), col.TIME, col.CWND_BYTES)
        running = pl.concat([running, labelled])
    series = _series(running, col.FLOW, col.CWND_BYTES, others="drop")
    scale, unit = size_unit(_peak(series, col.CWND_BYTES))
    for flow, frame in series:
        (line,) = axes.plot(frame[col.TIME], frame[col.CWND_BYTES] / scale, label=flow, linewidth=1)
        if flow in flows:
            start, stop = flows[flow].start / GIGA, results.scenario.stop_of(flows[flow]) / GIGA
            axes.hlines(flows[flow].tcp.rwnd / scale, start, stop, color=line.get_color(), linestyle="--",
                        linewidth=0.8, label=f"{flow} receive window")  # fmt: skip
    hidden = running[col.FLOW].n_unique() - len(series)
    what = "flows and streams" if not streams.is_empty() else "flows"
    axes.set_title("TCP congestion window" + (f" ({hidden:,} more {what} not drawn)" if hidden else ""))
    axes.set_ylabel(f"cwnd ({unit})")
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
