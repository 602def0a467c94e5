"""Trace replay: ``alphaqos trace-replay TRACE --queue SPEC [--queue ...]
[--beta 1.15] [--out DIR]``.

What it does
    V. Liberatore, "Local Flow Separation", Section IV: a packet trace is
    logged on a link as packets leave it, so it shows no queue; assume the
    link feeds a downstream link whose rate is ``β`` (the over-provisioning
    factor, its Definition 2) times the trace's mean rate, with an
    unbounded buffer, and measure the queue that forms there under a
    discipline. The engine replays the trace (``crates/alphaqos-sim/src/
    trace.rs``: each packet arrives at its logged time with its IP size and
    5-tuple; the link sends back to back, no framing overhead); this module
    runs it once per ``--queue`` and writes a run directory.

The trace
    pcap (Ethernet, raw IPv4 or Linux cooked; the IP total length is the
    packet's size, so a capture cut after the headers keeps real sizes), or
    CSV (by its ``.csv`` extension) with the header
    ``time,size,src,dst,sport,dport,proto``: time in seconds, size in IP
    bytes, dotted IPv4 addresses, the protocol number. Non-IPv4 frames are
    skipped and counted.

``--queue SPEC`` (repeat it to compare)
    - a discipline's name with its defaults: ``fifo``, ``yaqs``,
      ``fq_codel``, ``sfq`` (RED needs its thresholds);
    - a discipline in YAML, as a scenario's link ``queue`` takes it:
      ``'yaqs: {r: 0.1, c_s: 16500B}'``, ``'red: {min_th: 5, max_th: 15}'``;
    - a file: a queue in YAML as above, a policy document (the classes of
      :mod:`alphaqos.policy`), ``SCENARIO#POLICY`` (a scenario's policy), or
      a scenario whose links declare one queue;
    - any of these as ``LABEL=SPEC`` to name it in the tables (default: the
      discipline's kind, numbered if repeated).

    The buffer is unbounded, as the document assumes: a limit the spec does
    not set is lifted (FQ-CoDel's 10240 and SFQ's 127 packets too); a limit
    it sets is kept and the packets it drops are counted. FQ-CoDel's and
    SFQ's quantum (and CoDel's MTU) default to 1514 B, Linux's on a 1500 B
    link. YAQS measures false positives (Definitions 3 and 4) with
    ``epsilon`` 1/2, the document's, unless the spec sets another.

Measured (per queue, ``replay.parquet``)
    The queue seen by each arriving packet, in bytes: maximum, mean and
    90th percentile (for YAQS its fast queue, the one other flows wait in;
    the document's Fig. 6); packets dropped; for YAQS the flows in the slow
    queue (maximum, time average; Fig. 7), the slow queue's share of the
    bytes, the nop bytes of packet-length inflation as a share of the slow
    traffic (and the share added as a flow entered an empty slow queue),
    false positives and strict false positives as percentages of the
    packets. Also ``replay_series.parquet`` (every 10 ms: whole and fast
    queue in bytes, slow flows), ``qlen_hist.parquet`` (the histogram the
    statistics come from), ``summary.json``, ``manifest.json`` and
    ``plots/queue_ccdf.png`` (P[queue > x] per discipline, log-log, as the
    document's Fig. 4).

Errors (one line, exit status 2, nothing written): a trace that is missing
or cannot be read (the engine names the byte offset, and for CSV the line),
β not above 0, a queue spec that is not valid. A β below 1 is allowed with
a note: the downstream link is then slower than the trace's mean and the
queue grows for good.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from . import columns as col

__all__ = [
    "DEFAULT_BETA", "QueueSpec", "TraceError", "TraceInfo", "ccdf", "parse_queue",
    "replay", "replay_summary", "trace_info", "write_run",
]  # fmt: skip

#: The document's over-provisioning factor (Section IV).
DEFAULT_BETA = 1.15
#: The series' sampling interval, ns.
SERIES_INTERVAL_NS = 10_000_000
#: Linux's default quantum and CoDel MTU on a 1500 B link: MTU + 14 B
#: Ethernet header (``psched_mtu``, net/sched/sch_fq_codel.c).
LINUX_QUANTUM = 1514
#: An unbounded buffer for the per-flow disciplines, whose engine default
#: is Linux's packet limit.
UNBOUNDED_PKTS = 2**62
#: The document's accuracy parameter for false positives (Section V-A).
EPSILON = 0.5

#: The disciplines a spec names directly.
REPLAY_KINDS = ("fifo", "red", "fq_codel", "sfq", "yaqs")
TABLES = ("replay", "replay_series", "qlen_hist")
PLOT = "queue_ccdf.png"


class TraceError(ValueError):
    """Bad input to a replay: one line naming what is wrong."""


@dataclass(frozen=True)
class TraceInfo:
    path: Path
    packets: int
    mean_rate_bps: float
    span_s: float
    skipped: int
    #: Pcap records stamped before the one written before them (tcpdump on
    #: a multi-core host), replayed in time order.
    out_of_order: int = 0


def trace_info(path: str | Path) -> TraceInfo:
    """Read a trace's packet count, mean rate and span; TraceError if it is
    missing or malformed (the engine names the byte offset and CSV line)."""
    from . import _core

    path = Path(path)
    if not path.is_file():
        raise TraceError(f"trace {str(path)!r}: {'not a file' if path.exists() else 'no such file'}")
    try:
        packets, mean_bps, span_ns, skipped, out_of_order = _core.trace_info(str(path))
    except ValueError as exc:
        raise TraceError(f"trace {exc}") from None
    return TraceInfo(path, packets, mean_bps, span_ns / 1e9, skipped, out_of_order)


# --- queue specs --------------------------------------------------------------


@dataclass(frozen=True)
class QueueSpec:
    """A discipline to replay under: its label, kind, the engine's queue
    configuration and the text it came from."""

    label: str
    kind: str
    config: dict[str, Any]
    text: str


_LABEL = re.compile(r"^([A-Za-z][\w.+-]*)=(.+)$", re.S)


def parse_queue(text: str) -> QueueSpec:
    """A ``--queue`` value as a :class:`QueueSpec` (label not yet numbered)."""
    label = None
    if (m := _LABEL.match(text.strip())) and not Path(text).exists():
        label, body = m.group(1), m.group(2).strip()
    else:
        body = text.strip()
    kind, config = _queue_from(body, text)
    return QueueSpec(label or kind, kind, config, text)


def _queue_from(body: str, text: str) -> tuple[str, dict[str, Any]]:
    from .errors import ScenarioError

    file, _, _ = body.rpartition("#") if "#" in body and not Path(body).exists() else (body, "", "")
    try:
        if Path(file).is_file():
            return _queue_from_file(body)
    except ScenarioError as exc:
        raise TraceError(f"--queue {text!r}: {exc}") from None
    import yaml

    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise TraceError(f"--queue {text!r}: not a discipline, a file or YAML: {' '.join(str(exc).split())}") from None
    if isinstance(data, str) and (data.endswith((".yaml", ".yml")) or "/" in data):
        raise TraceError(f"--queue {text!r}: no such file")
    if isinstance(data, str):
        data = {data: {}}
    if not isinstance(data, dict):
        raise TraceError(f"--queue {text!r}: expected a discipline (fifo, red, fq_codel, sfq, yaqs), its YAML or a file")
    try:
        return _queue_from_data(data)
    except ScenarioError as exc:
        raise TraceError(f"--queue {text!r}: {exc}") from None


def _queue_from_data(data: dict[str, Any], source=None) -> tuple[str, dict[str, Any]]:
    """Validate a queue mapping as a scenario link's ``queue``."""
    from pydantic import ValidationError

    from .errors import ScenarioError
    from .scenario import QUEUE_KINDS, Queue
    from .source import Source

    source = source or Source(data=data)
    unknown = [k for k in data if k not in QUEUE_KINDS]
    if unknown:
        raise ScenarioError([source.issue((), f"unknown discipline {unknown[0]!r} (expected one of: "
                                              f"{', '.join(REPLAY_KINDS)}, or a file)")])  # fmt: skip
    if data.get("policy") is not None or data.get("htb") is not None:
        raise ScenarioError([source.issue((), "a policy or HTB queue comes from its file (--queue FILE or SCENARIO#POLICY)")])
    try:
        queue = Queue.model_validate(data)
    except ValidationError as exc:
        issues = [source.issue(tuple(e["loc"]), e["msg"].removeprefix("Value error, ")) for e in exc.errors()]
        raise ScenarioError(issues) from None
    return queue.kind, unbounded(queue)


def _queue_from_file(body: str) -> tuple[str, dict[str, Any]]:
    from .errors import ScenarioError
    from .policy import Policy
    from .scenario import load_policy_file, load_scenario
    from .scenario.loading import _split_policy_reference
    from .source import read_source

    path, name = _split_policy_reference(body)
    if name is not None:
        data, _ = load_policy_file(body)
        return "policy", _unbounded_policy(Policy.model_validate(data))
    source = read_source(path, what="queue file")
    data = source.data
    if not isinstance(data, dict):
        raise ScenarioError([source.issue((), "expected a queue, a policy document or a scenario")])
    if "classes" in data:
        data, _ = load_policy_file(path)
        return "policy", _unbounded_policy(Policy.model_validate(data))
    if "links" in data:
        scenario = load_scenario(path)
        declared: dict[str, tuple[str, dict[str, Any]]] = {}
        for link in scenario.links:
            a, b = link.between
            for sender in (a, b):
                if "queue" in link.model_fields_set or sender in link.queues:
                    queue = link.queue_from(sender)
                    config = _unbounded_policy(scenario.policies[queue.policy]) if queue.policy else unbounded(queue)
                    declared.setdefault(json.dumps(config, sort_keys=True), (queue.kind, config))
        if len(declared) != 1:
            what = "declares no queue" if not declared else f"declares {len(declared)} different queues"
            raise ScenarioError([source.issue(("links",), f"{what}; name a policy (SCENARIO#POLICY) or write the queue in a file of its own")])
        return next(iter(declared.values()))
    return _queue_from_data(data, source)


def unbounded(queue) -> dict[str, Any]:
    """A scenario :class:`~alphaqos.scenario.Queue` as the engine's queue
    for a replay: the limits the user did not set lifted, Linux's quantum
    for a 1500 B link, YAQS's false positives measured."""
    from .scenario.resolution import _resolve_queue

    kind = queue.kind
    model = getattr(queue, kind)
    config = _resolve_queue(queue, {})
    inner = config[kind]
    if kind in ("fq_codel", "sfq") and "limit" not in model.model_fields_set:
        inner["limit_pkts"], inner["limit_bytes"] = UNBOUNDED_PKTS, None
    elif kind in ("fifo", "red", "yaqs") and "limit" not in model.model_fields_set:
        inner["limit_pkts"] = inner["limit_bytes"] = None
    if kind in ("fq_codel", "sfq") and inner.get("quantum_bytes") is None:
        inner["quantum_bytes"] = LINUX_QUANTUM
    if kind == "fq_codel":
        inner["mtu_bytes"] = LINUX_QUANTUM
    if kind == "yaqs" and inner.get("epsilon") is None:
        inner["epsilon"] = EPSILON
    return config


def _unbounded_policy(policy) -> dict[str, Any]:
    from .policy import resolve_egress

    config = resolve_egress(policy)
    if "buffer" not in policy.model_fields_set:
        inner = next(iter(config.values()))
        inner["buffer_pkts"] = inner["buffer_bytes"] = None
    return config


def number_labels(specs: list[QueueSpec]) -> list[QueueSpec]:
    """Labels made unique: a repeated one gets ``-2``, ``-3``..."""
    seen: dict[str, int] = {}
    out = []
    for s in specs:
        seen[s.label] = seen.get(s.label, 0) + 1
        label = s.label if seen[s.label] == 1 else f"{s.label}-{seen[s.label]}"
        out.append(QueueSpec(label, s.kind, s.config, s.text))
    return out


# --- replaying ----------------------------------------------------------------


def replay(trace: str | Path, queue: dict[str, Any], *, beta: float = DEFAULT_BETA,
           interval_ns: int = SERIES_INTERVAL_NS, seed: int = 1) -> dict[str, pl.DataFrame]:  # fmt: skip
    """Replay ``trace`` into a link of ``beta`` x its mean rate under the
    engine queue configuration ``queue``: the engine's tables (``replay``,
    ``replay_series``, ``qlen_hist``, and ``yaqs`` for YAQS) as DataFrames."""
    from . import _core

    try:
        tables = _core.trace_replay(str(trace), beta, json.dumps(queue), interval_ns, seed)
    except ValueError as exc:
        raise TraceError(str(exc)) from None
    return {name: pl.DataFrame(t) for name, t in tables.items()}


def replay_summary(tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    """One replay's figures: queue seen by arrivals (max, mean, p90, bytes),
    drops and, for YAQS, slow flows, shares and false positives."""
    r = tables["replay"].row(0, named=True)
    out: dict[str, Any] = {
        "qmax_bytes": r[col.QLEN_MAX_BYTES], "qmean_bytes": r[col.QLEN_MEAN_BYTES], "q90_bytes": r[col.QLEN_P90_BYTES],
        "packets": r[col.ARRIVALS], "drops": r[col.ARRIVALS] - r[col.TX_PKTS], "rate_bps": r[col.RATE_BPS],
    }  # fmt: skip
    if "yaqs" in tables:
        y = tables["yaqs"].row(0, named=True)
        fp, sfp = y[col.FALSE_POSITIVES], y[col.STRICT_FALSE_POSITIVES]
        out |= {
            "slow_flows_max": y[col.SLOW_FLOWS_MAX], "slow_flows_mean": y[col.SLOW_FLOWS_MEAN],
            "slow_share": y[col.SLOW_BYTES] / max(y[col.ENQ_BYTES], 1),
            "nop_share": y[col.NOP_BYTES] / max(y[col.SLOW_BYTES], 1),
            "nop_into_empty_share": y[col.NOP_BYTES_INTO_EMPTY] / max(y[col.NOP_BYTES], 1),
            "false_positive_pct": None if fp is None else 100 * fp / max(y[col.ARRIVALS], 1),
            "strict_false_positive_pct": None if sfp is None else 100 * sfp / max(y[col.ARRIVALS], 1),
        }  # fmt: skip
    return out


def ccdf(hist: pl.DataFrame) -> list[tuple[float, float]]:
    """(length in KB, P[length > x]) from a histogram's (low_bytes, count)."""
    hist = hist.sort(col.LOW_BYTES)
    total = float(hist[col.COUNT].sum())
    out, above = [], total
    for low, count in zip(hist[col.LOW_BYTES], hist[col.COUNT]):
        above -= count
        out.append((low / 1000, above / total if total else 0.0))
    return out


#: Columns of replay.parquet, in order; the YAQS ones are null for others.
SUMMARY_COLUMNS = (
    "qmax_bytes", "qmean_bytes", "q90_bytes", "packets", "drops", "rate_bps", "slow_flows_max", "slow_flows_mean",
    "slow_share", "nop_share", "nop_into_empty_share", "false_positive_pct", "strict_false_positive_pct",
)  # fmt: skip


FLOAT_COLUMNS = frozenset({"slow_flows_mean", "slow_share", "nop_share", "nop_into_empty_share", "false_positive_pct",
                           "strict_false_positive_pct"})  # fmt: skip


def run_all(info: TraceInfo, specs: list[QueueSpec], beta: float) -> dict[str, Any]:
    """Replay the trace under every spec: per label, its summary, tables and CCDF."""
    out = {}
    for spec in specs:
        tables = replay(info.path, spec.config, beta=beta)
        out[spec.label] = {"spec": spec, "summary": replay_summary(tables), "tables": tables, "ccdf": ccdf(tables["qlen_hist"])}
    return out


def write_run(directory: Path, info: TraceInfo, beta: float, runs: dict[str, Any], manifest: dict[str, Any]) -> None:
    """The run directory: Parquet tables, summary.json, manifest.json, the plot."""
    from . import results

    label = lambda name, frame: frame.select(pl.lit(name).alias(col.QUEUE), pl.all())  # noqa: E731
    summary = pl.DataFrame(
        [{col.QUEUE: name, col.KIND: r["spec"].kind, **{c: r["summary"].get(c) for c in SUMMARY_COLUMNS}} for name, r in runs.items()],
        schema_overrides={c: pl.Float64 if c in FLOAT_COLUMNS else pl.Int64 for c in SUMMARY_COLUMNS},
    )  # fmt: skip
    summary.write_parquet(directory / "replay.parquet")
    series = [
        label(name, r["tables"]["replay_series"]).with_columns((pl.col(col.TIME + col.NS_SUFFIX) / 1e9).alias(col.TIME)).drop(col.TIME + col.NS_SUFFIX)
        for name, r in runs.items()
    ]  # fmt: skip
    pl.concat(series).select(col.QUEUE, col.TIME, pl.exclude(col.QUEUE, col.TIME)).write_parquet(directory / "replay_series.parquet")
    pl.concat([label(name, r["tables"]["qlen_hist"]) for name, r in runs.items()]).write_parquet(directory / "qlen_hist.parquet")
    document = {
        "trace": str(info.path), "packets": info.packets, "skipped_frames": info.skipped,
        "out_of_order_stamps": info.out_of_order,
        "mean_rate_bps": info.mean_rate_bps, "span_s": info.span_s, "beta": beta,
        "downstream_rate_bps": next(iter(runs.values()))["summary"]["rate_bps"] if runs else None,
        "queues": {name: {"spec": r["spec"].text, "kind": r["spec"].kind, "config": r["spec"].config, **r["summary"]}
                   for name, r in runs.items()},
    }  # fmt: skip
    (directory / "summary.json").write_text(json.dumps(document, indent=2) + "\n")
    (directory / results.MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    plots = directory / results.PLOTS_DIR
    plots.mkdir()
    plot_ccdf({name: r["ccdf"] for name, r in runs.items()}, plots / PLOT, title=f"{info.path.name}, beta = {beta:g}")


def plot_ccdf(curves: dict[str, list[tuple[float, float]]], path: Path, *, title: str) -> None:
    """P[queue > x] per discipline, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in curves.items():
        pts = [(x, p) for x, p in points if x > 0 and p > 0]
        if pts:
            ax.loglog(*zip(*pts), label=name)
        else:
            ax.plot([], [], label=f"{name} (no queue)")
    ax.set_xlabel("queue seen by an arrival (KB)")
    ax.set_ylabel("P[queue > x]")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
