"""Sweeps: ``alphaqos sweep``, a grid of scenario variants and a table of
their headline figures.

``alphaqos sweep SCENARIO --set PATH=V1,V2,... [--set ...] [--seeds N]``
runs every combination of the values (the cartesian product, the first
``--set`` outermost) times N seeds, each variant in a process of its own
through :mod:`alphaqos.runner` (local processes, or a Dask cluster).

Paths
    A path names a scenario field as the YAML file spells it: mapping keys
    after dots, list items in brackets, by index or, where the items have a
    ``name``, by name: ``links[2].rate``, ``flows[alpha].tcp.cc``,
    ``links[0].queues.R.fifo.limit``, ``policies.two-queues.classes.alpha.transmit_rate``.
    A key holding a dot is written in brackets too (``nodes[R.1].policy``).
    A field the file leaves at its default may be set; a list item, and an
    entry of a mapping the scenario must have (``nodes``), must exist; an
    entry of an optional mapping (``queues``, ``impairs``, ``cc_params``)
    is added. A path that is not a scenario field is an error.

Values
    Each value is a YAML scalar, exactly as it would stand in the scenario
    file and in the same units (``1Gbps``, ``40ms``, ``125MB``, ``100``,
    ``true``); a value holding a comma is quoted or bracketed. Each one is
    checked against the field's type before anything runs: a bad value is an
    error naming its path. What depends on other fields too (a RED
    ``min_th`` above ``max_th``, transmit rates adding up to more than 100%,
    a packet larger than an MTU), the engine
    rejecting a variant, a run crashing: that variant's row says ``failed``
    with the reason, and the other variants go on.

Seeds
    ``--seeds N`` runs each variant with the scenario's seed ``s`` and the
    next ones, ``s, s+1, ..., s+N-1`` (default N = 1: the scenario as
    written, so a row is what ``alphaqos run`` of that variant gives).

The output directory::

    sweep.json      the sweep: scenario, --set options, seeds, its runs in grid order
    runs/<id>.yaml  each variant's scenario (runnable with ``alphaqos run``)
    runs/<id>.json  each finished run: its values, status, error, figures
    sweep.parquet   one row per run, rebuilt from runs/*.json
    plots/*.png     each figure against each swept path

``<id>`` is a hash of the variant's whole scenario (after the ``--set``
values and the seed are applied, policy files read in), so a sweep started
again with the same directory runs only the variants that have no
``runs/<id>.json`` yet: after an interruption, or with values added to a
``--set``. A run's file is written when it finishes (write, then rename), a
failed run's too: remove its file to run it again.

The table (``sweep.parquet``), one row per run in grid order:

``run``
    the run's ``<id>``;
one column per ``--set`` path, named as written (``links[2].rate``)
    the value as written (text);
``seed``, ``status`` (``ok`` or ``failed``), ``error`` (null when ok)
    ``error`` is the exception's one line, or how the process died and the
    last lines of its stderr;
figures, one column each, named ``figure[kind=name]``
    ``goodput_bps[flow=alpha]``  bit/s, every flow but pings;
    ``loss[flow=alpha]``  the flow's dropped packets / sent packets;
    ``retransmits[flow=alpha]``  TCP segments retransmitted (the sender's count);
    ``drop_pkts[queue=R->B]``  packets the queue dropped, every queue a packet reached;
    ``sojourn_mean[queue=R->B]``, ``sojourn_p99[queue=R->B]``  seconds a packet
    waited in the queue, when the engine reports it;
    ``fct_p50[workload=w]``, ``fct_p99[workload=w]``  completion times of the
    workload's finished transfers, seconds (linear interpolation between
    order statistics, as numpy's default);
    ``unfinished[workload=w]``  its transfers still running at the end.

A wide table, so that a row is a run: polars and pandas read it as is, and
DuckDB with the names quoted, ``SELECT "links[2].rate", avg("goodput_bps[flow=alpha]")
FROM 'sweep.parquet' GROUP BY 1``; ``UNPIVOT ... ON COLUMNS('\\[')`` turns
it into one row per figure. Nothing in it depends on the wall clock or on
where the runs ran: a Dask sweep writes the same table as a local one.

Plots: ``plots/<figure>--<path>.png`` (``goodput_bps.alpha--links.2.rate.png``)
for each figure that is not zero in every run and each swept path,
the figure's mean over the seeds against the path's values with a band from
the smallest to the largest seed's value, one line per combination of the
other paths' values. A path whose values are all numbers once parsed (rates
in bit/s, times in ns, sizes in bytes) gets a numeric axis (logarithmic when
the values span a decade or more), labelled with the values as written; other
paths are placed in the order given.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import polars as pl
import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from . import columns as col
from .errors import Issue, ScenarioError, format_path
from .output import atomic_directory, atomic_file, write_atomic
from .runner import Outcome, Task, run_tasks
from .scenario import Scenario, load_scenario
from .scenario.loading import _issue_from_pydantic, _with_policy_files
from .source import Source, read_source

__all__ = ["FIGURES", "Dimension", "SweepPlan", "Variant", "build_table", "figures", "plan_sweep", "run_sweep", "write_plots"]

SWEEP_FILE = "sweep.json"
RUNS_DIR = "runs"
TABLE_FILE = "sweep.parquet"
PLOTS_DIR = "plots"
OK, FAILED = "ok", "failed"
RUN, SEED, STATUS, ERROR = "run", "seed", "status", "error"
ID_CHARS = 16  # hex digits of the variant hash kept in a run's id


@dataclass(frozen=True)
class Figure:
    """A headline figure: what it measures, per what, in what unit."""

    per: str  # "flow", "queue" or "workload"
    unit: str
    dtype: type[pl.DataType]


#: The figures of a run, in table order.
FIGURES: dict[str, Figure] = {
    col.GOODPUT_BPS: Figure("flow", "bit/s", pl.Float64),
    col.LOSS: Figure("flow", "dropped / sent", pl.Float64),
    col.RETRANSMITS: Figure("flow", "segments", pl.Int64),
    col.DROP_PKTS: Figure("queue", "packets", pl.Int64),
    "sojourn_mean": Figure("queue", "s", pl.Float64),
    "sojourn_p99": Figure("queue", "s", pl.Float64),
    "fct_p50": Figure("workload", "s", pl.Float64),
    "fct_p99": Figure("workload", "s", pl.Float64),
    "unfinished": Figure("workload", "transfers", pl.Int64),
}
_FIGURE_COLUMN = re.compile(r"^(?P<figure>[a-z_0-9]+)\[(?P<per>[a-z]+)=(?P<name>.*)\]$")


def figure_column(figure: str, name: str) -> str:
    """``goodput_bps``, ``alpha`` -> ``goodput_bps[flow=alpha]``."""
    return f"{figure}[{FIGURES[figure].per}={name}]"


# --- the plan -------------------------------------------------------------------


@dataclass(frozen=True)
class Dimension:
    """One ``--set``: a path and its values."""

    path: str  # as written: the table's column
    loc: tuple[str | int, ...]  # resolved: list items by index
    texts: tuple[str, ...]  # the values as written
    values: tuple[Any, ...]  # the values as YAML reads them
    numeric: tuple[float, ...] | None  # the values as the schema parses them, if all are numbers


@dataclass(frozen=True)
class Variant:
    """One run of the sweep."""

    id: str
    values: dict[str, str]  # path -> value as written
    seed: int
    data: dict[str, Any]  # the whole scenario

    @property
    def label(self) -> str:
        return " ".join([*(f"{path}={text}" for path, text in self.values.items()), f"seed={self.seed}"])


@dataclass(frozen=True)
class SweepPlan:
    scenario: str  # the file, as named
    name: str
    sets: tuple[str, ...]  # the --set options as given
    seeds: int
    dimensions: tuple[Dimension, ...]
    variants: tuple[Variant, ...]

    def describe(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "name": self.name,
            "sets": list(self.sets),
            "seeds": self.seeds,
            "runs": [variant.id for variant in self.variants],
        }


def plan_sweep(scenario: str | Path, sets: Iterable[str], seeds: int = 1) -> SweepPlan:
    """Read the scenario, check every ``--set`` (its path against the
    schema, each value against the field's type) and list the variants.
    Raises :class:`ScenarioError` naming the file and path of any problem."""
    base = load_scenario(scenario)  # the scenario itself must be valid
    source = read_source(scenario)
    data, _ = _with_policy_files(source)  # its problems were reported by load_scenario
    sets = tuple(sets)
    dimensions: list[Dimension] = []
    for text in sets:
        dimension = _dimension(text, data, source)
        for other in dimensions:
            if other.loc == dimension.loc:
                raise _set_error(source, dimension.loc, f"set twice (also by --set {other.path}=...)", text)
        dimensions.append(dimension)
    if seeds < 1:
        raise ValueError("seeds must be at least 1")
    variants = []
    for combination in itertools.product(*(range(len(d.texts)) for d in dimensions)):
        for k in range(seeds):
            variant = copy.deepcopy(data)
            for dimension, index in zip(dimensions, combination, strict=True):
                _assign(variant, dimension.loc, dimension.values[index])
            variant["seed"] = base.seed + k
            values = {d.path: d.texts[i] for d, i in zip(dimensions, combination, strict=True)}
            variants.append(Variant(_variant_id(variant), values, base.seed + k, variant))
    return SweepPlan(str(scenario), base.name, sets, seeds, tuple(dimensions), tuple(variants))


def _variant_id(data: dict[str, Any]) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:ID_CHARS]


def _set_error(source: Source, loc: tuple, message: str, text: str) -> ScenarioError:
    return ScenarioError([source.issue(loc, f"{message} (in --set {text})")])


def _dimension(text: str, data: dict[str, Any], source: Source) -> Dimension:
    path, equals, values_text = text.partition("=")
    path = path.strip()
    if not equals or not path:
        raise _malformed(text, "expected PATH=V1,V2,...")
    texts = _split_values(values_text)
    if texts is None:
        raise _malformed(text, "a quote or bracket is not closed")
    if any(not t for t in texts):
        raise _malformed(text, "expected one or more values after '=', separated by commas")
    if len(set(texts)) != len(texts):
        raise _malformed(text, "a value is repeated")
    parts = _parse_path(path)
    if parts is None:
        raise _malformed(text, f"{path!r} is not a path like links[2].rate or flows[alpha].tcp.cc")
    loc, annotation = _resolve(data, parts, source, text)
    if loc == ("seed",):
        raise _set_error(source, loc, "the seed is swept with --seeds N", text)
    field = TypeAdapter(annotation)
    values, numeric = [], []
    for item in texts:
        try:
            value = yaml.safe_load(item)
        except yaml.YAMLError:
            raise _malformed(text, f"{item!r} is not a YAML value") from None
        # The value alone against its field's type; what depends on other
        # fields (a sum of shares, one of two keys) is each variant's to fail.
        try:
            parsed = field.validate_python(value)
        except ValidationError as exc:
            error = exc.errors()[0]
            issue = _issue_from_pydantic({**error, "loc": (*loc, *error["loc"])}, source, None)
            raise ScenarioError([dataclasses.replace(issue, message=f"{issue.message} (in --set {path}={item})")]) from None
        values.append(value)
        numeric.append(float(parsed) if isinstance(parsed, (int, float)) and not isinstance(parsed, bool) else None)
    return Dimension(
        path=path,
        loc=loc,
        texts=tuple(texts),
        values=tuple(values),
        numeric=None if None in numeric else tuple(numeric),
    )


def _malformed(text: str, why: str) -> ScenarioError:
    return ScenarioError([Issue((), f"malformed --set {text!r}: {why}")])


def _split_values(text: str) -> list[str] | None:
    """Split at the commas outside quotes and brackets; None if unbalanced."""
    items, current, depth, quote = [], "", 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            items.append(current.strip())
            current = ""
            continue
        current += char
    if quote or depth:
        return None
    return [*items, current.strip()]


_KEY = r"[^.\[\]=]+"
_PART = re.compile(rf"\.({_KEY})|\[([^\[\]]+)\]")


def _parse_path(path: str) -> list[tuple[str, bool]] | None:
    """``links[2].rate`` -> ``[("links", False), ("2", True), ("rate", False)]``
    (each part and whether it was in brackets); None if malformed."""
    first = re.match(_KEY, path)
    if not first:
        return None
    parts, position = [(first.group().strip(), False)], first.end()
    while position < len(path):
        match = _PART.match(path, position)
        if not match:
            return None
        key, bracketed = match.group(1), match.group(2)
        parts.append(((key if key is not None else bracketed).strip(), bracketed is not None))
        position = match.end()
    return parts if all(name for name, _ in parts) else None


def _resolve(data: dict[str, Any], parts: list[tuple[str, bool]], source: Source, text: str) -> tuple[tuple, Any]:
    """Walk the scenario's schema beside its data along ``parts``; return
    the field's location (list items by index) and its type."""
    annotations: list[Any] = [Scenario]
    node: Any = data
    optional_map = False  # the current node is a mapping the scenario may leave out
    loc: tuple[str | int, ...] = ()

    def fail(at: tuple, message: str) -> ScenarioError:
        return _set_error(source, at, message, text)

    for name, bracketed in parts:
        options = [option for a in annotations for option in _options(a)]
        if any(option is Any for option in options):
            loc, node, annotations, optional_map = (*loc, name), None, [Any], False
            continue
        models = [o for o in options if isinstance(o, type) and issubclass(o, BaseModel)]
        mappings = [o for o in options if get_origin(o) is dict]
        sequences = [o for o in options if get_origin(o) in (list, tuple)]
        if isinstance(node, list) or (node is None and sequences and not (models or mappings)):
            if not sequences:
                raise fail(loc, "a value, not a group of fields: nothing lies under it")
            if not bracketed:
                raise fail(loc, f"a list: select an item as {format_path(loc)}[index] or, by its name, [name]")
            items = node if isinstance(node, list) else []
            index = _item_index(items, name)
            if index is None:
                names = [item["name"] for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)]
                if name.isdigit() or not names:
                    raise fail(loc, f"no item {name} (the list has {len(items)})")
                raise fail(loc, f"no item named {name!r} (names: {', '.join(names)})")
            loc, node = (*loc, index), items[index]
            annotations, optional_map = [_item_type(s, index) for s in sequences], False
        elif models and (node is None or isinstance(node, dict)) and not mappings:
            fields = {info.alias or field: info for m in models for field, info in m.model_fields.items()}
            if name not in fields:
                raise fail((*loc, name), f"not a scenario field (expected one of: {', '.join(fields)})")
            info = fields[name]
            loc, node = (*loc, name), (node or {}).get(name)
            # pydantic keeps a field's Annotated metadata (units, ranges) apart.
            annotation = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
            annotations, optional_map = [annotation], not info.is_required()
        elif mappings and (node is None or isinstance(node, dict)):
            entries = node or {}
            if name not in entries and not optional_map:
                raise fail(loc, f"no entry {name!r} (entries: {', '.join(map(str, entries)) or 'none'})")
            loc, node = (*loc, name), entries.get(name)
            annotations, optional_map = [get_args(m)[1] for m in mappings], False
        else:
            raise fail(loc, "a value, not a group of fields: nothing lies under it")
    return loc, annotations[0] if len(annotations) == 1 else Union[tuple(annotations)]  # noqa: UP007


def _options(annotation: Any) -> list[Any]:
    """The types a field accepts: ``A | B | None`` -> ``[A, B]``, each
    stripped of its ``Annotated`` metadata."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is Union or type(annotation).__name__ == "UnionType":
        return [o for arg in get_args(annotation) if arg is not type(None) for o in _options(arg)]
    return [annotation]


def _item_index(items: list, name: str) -> int | None:
    if name.isdigit():
        index = int(name)
        return index if index < len(items) else None
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == name:
            return index
    return None


def _item_type(sequence: Any, index: int) -> Any:
    args = get_args(sequence)
    if get_origin(sequence) is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return args[index] if index < len(args) else Any
    return args[0] if args else Any


def _assign(data: dict[str, Any], loc: tuple, value: Any) -> None:
    """Set ``value`` at ``loc`` (resolved by :func:`_resolve`), making the
    mappings on the way that the file left out."""
    node: Any = data
    for part in loc[:-1]:
        if isinstance(node, list):
            node = node[part]
            continue
        if not isinstance(node.get(part), (dict, list)):
            node[part] = {}
        node = node[part]
    node[loc[-1]] = value


# --- one run ---------------------------------------------------------------------


def run_variant(data: dict[str, Any]) -> dict[str, Any]:
    """Worker: validate and simulate one variant; its figures."""
    from .engine import simulate

    results = simulate(load_scenario(data), command="alphaqos sweep")
    return figures(results)


def figures(results: Any) -> dict[str, float | int | None]:
    """The headline figures of a run (see the module doc), by column name.

    Reads the summary's flows, the queue summary (its ``sojourn_mean`` and
    ``sojourn_p99`` columns when the engine writes them) and, when the
    results have one, the ``transfers`` table (``workload``, and ``fct`` in
    seconds or ``fct_ns``, null for a transfer that did not finish)."""
    row: dict[str, float | int | None] = {}
    for name, flow in results.summary[col.FLOWS].items():
        if flow[col.KIND] != "ping" and flow.get(col.GOODPUT_BPS) is not None:
            row[figure_column(col.GOODPUT_BPS, name)] = float(flow[col.GOODPUT_BPS])
        row[figure_column(col.LOSS, name)] = float(flow[col.LOSS])
        if flow[col.KIND] == "tcp":
            row[figure_column(col.RETRANSMITS, name)] = int(flow[col.RETRANSMITS])
    queues = results.queue_summary
    sojourn = [c for c in ("sojourn_mean", "sojourn_p99") if c in queues.columns]
    for queue in queues.iter_rows(named=True):
        if queue[col.ENQ_PKTS] + queue[col.DROP_PKTS] == 0:
            continue  # no packet reached it
        row[figure_column(col.DROP_PKTS, queue[col.QUEUE])] = int(queue[col.DROP_PKTS])
        for column in sojourn:
            value = queue[column]
            row[figure_column(column, queue[col.QUEUE])] = None if value is None else float(value)
    transfers = getattr(results, "transfers", None)
    if transfers is not None and transfers.height:
        fct = pl.col("fct") if "fct" in transfers.columns else pl.col("fct_ns").cast(pl.Float64) / 1e9
        per_workload = (
            transfers.group_by("workload", maintain_order=True)
            .agg(
                fct.quantile(0.5, interpolation="linear").alias("fct_p50"),
                fct.quantile(0.99, interpolation="linear").alias("fct_p99"),
                fct.null_count().alias("unfinished"),
            )
        )  # fmt: skip
        for workload in per_workload.iter_rows(named=True):
            for figure in ("fct_p50", "fct_p99", "unfinished"):
                row[figure_column(figure, workload["workload"])] = workload[figure]
    return row


# --- the sweep ---------------------------------------------------------------------


@dataclass
class SweepResult:
    table: pl.DataFrame
    ran: int  # runs made this time
    reused: int  # runs found done in the directory
    plots: list[Path]

    @property
    def failed(self) -> pl.DataFrame:
        return self.table.filter(pl.col(STATUS) == FAILED)


def prepare(plan: SweepPlan, directory: Path) -> None:
    """Write ``sweep.json`` and every variant's scenario into ``directory``
    (which exists)."""
    runs = directory / RUNS_DIR
    runs.mkdir(exist_ok=True)
    for variant in plan.variants:
        path = runs / f"{variant.id}.yaml"
        if not path.exists():
            write_atomic(path, yaml.safe_dump(variant.data, sort_keys=False, allow_unicode=True, width=100))
    write_atomic(directory / SWEEP_FILE, json.dumps(plan.describe(), indent=2) + "\n")


def run_sweep(
    plan: SweepPlan,
    directory: Path,
    *,
    jobs: int | None = None,
    dask: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_done: Callable[[Variant, Outcome], None] | None = None,
) -> SweepResult:
    """Run the variants that ``directory`` (made by :func:`prepare`) has no
    result for, record each as it finishes, then write the table and the
    plots. ``on_start(to_run, already_done)``, ``on_done(variant, outcome)``
    report progress. A run interrupted by SIGINT or SIGTERM is not recorded
    and interrupts the sweep (KeyboardInterrupt)."""
    prepare(plan, directory)
    runs = directory / RUNS_DIR
    todo = [v for v in plan.variants if not (runs / f"{v.id}.json").exists()]
    todo = list({v.id: v for v in todo}.values())  # the same scenario twice runs once
    reused = len(plan.variants) - len(todo)
    if on_start:
        on_start(len(todo), reused)
    by_id = {v.id: v for v in todo}
    tasks = [Task(v.id, f"{__name__}:run_variant", (v.data,)) for v in todo]
    outcomes = run_tasks(tasks, jobs=jobs, dask=dask)
    try:
        for outcome in outcomes:
            if outcome.interrupted:
                raise KeyboardInterrupt
            variant = by_id[outcome.key]
            record = {
                RUN: variant.id,
                "values": variant.values,
                SEED: variant.seed,
                STATUS: OK if outcome.ok else FAILED,
                ERROR: outcome.error,
                "figures": outcome.value if outcome.ok else {},
                "wall_time_s": round(outcome.wall_time_s, 3),
            }
            write_atomic(runs / f"{variant.id}.json", json.dumps(record, indent=1, allow_nan=False) + "\n")
            if on_done:
                on_done(variant, outcome)
    finally:
        outcomes.close()
    table = build_table(plan, directory)
    table_path = directory / TABLE_FILE
    with atomic_file(table_path) as staging:
        table.write_parquet(staging, compression="zstd", statistics=True)
    return SweepResult(table, ran=len(todo), reused=reused, plots=_replace_plots(plan, table, directory))


def build_table(plan: SweepPlan, directory: Path) -> pl.DataFrame:
    """The sweep's table, from ``runs/<id>.json`` (see the module doc)."""
    records = [json.loads((directory / RUNS_DIR / f"{v.id}.json").read_text()) for v in plan.variants]
    figure_columns: dict[str, None] = {}
    for record in records:
        figure_columns.update(dict.fromkeys(record["figures"]))
    ordered = sorted(figure_columns, key=lambda c: list(FIGURES).index(_FIGURE_COLUMN.match(c)["figure"]))
    schema: dict[str, Any] = {RUN: pl.String, **{d.path: pl.String for d in plan.dimensions},
                              SEED: pl.Int64, STATUS: pl.String, ERROR: pl.String}  # fmt: skip
    schema |= {c: FIGURES[_FIGURE_COLUMN.match(c)["figure"]].dtype for c in ordered}
    rows = []
    for variant, record in zip(plan.variants, records, strict=True):
        row = {RUN: variant.id, **variant.values, SEED: variant.seed, STATUS: record[STATUS], ERROR: record[ERROR]}
        for column in ordered:
            value = record["figures"].get(column)
            if value is None and record[STATUS] == OK and column.startswith(f"{col.DROP_PKTS}["):
                value = 0  # no packet reached the queue in this run
            row[column] = value
        rows.append(row)
    return pl.DataFrame(rows, schema=schema, orient="row")


def _replace_plots(plan: SweepPlan, table: pl.DataFrame, directory: Path) -> list[Path]:
    """Draw the plots into a hidden directory, then put it in place of ``plots/``."""
    target = directory / PLOTS_DIR
    with atomic_directory(target, replace=True) as staging:
        written = write_plots(plan, table, staging)
    return [target / path.name for path in written]


# --- plots ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Curve:
    """One line of a plot: the other paths' values, and per x its mean,
    smallest and largest value over the seeds."""

    label: str
    x: list[float]
    mean: list[float]
    low: list[float]
    high: list[float]


def curves(plan: SweepPlan, table: pl.DataFrame, figure: str, dimension: Dimension) -> list[Curve]:
    """The lines of ``figure`` against ``dimension``'s values (successful
    runs only); x is the parsed value for a numeric path, else the value's
    position in the ``--set``."""
    others = [d for d in plan.dimensions if d is not dimension]
    ok = table.filter((pl.col(STATUS) == OK) & pl.col(figure).is_not_null())
    positions = dimension.numeric or tuple(float(i) for i in range(len(dimension.texts)))
    lines = []
    for combination in itertools.product(*(d.texts for d in others)):
        selected = ok
        for other, text in zip(others, combination, strict=True):
            selected = selected.filter(pl.col(other.path) == text)
        stats = selected.group_by(dimension.path).agg(
            pl.col(figure).cast(pl.Float64).mean().alias("mean"),
            pl.col(figure).cast(pl.Float64).min().alias("low"),
            pl.col(figure).cast(pl.Float64).max().alias("high"),
        )
        by_text = {row[dimension.path]: row for row in stats.iter_rows(named=True)}
        points = [(x, by_text[text]) for x, text in zip(positions, dimension.texts, strict=True) if text in by_text]
        if points:
            label = ", ".join(f"{d.path}={t}" for d, t in zip(others, combination, strict=True))
            lines.append(Curve(label, [x for x, _ in points], *([row[k] for _, row in points] for k in ("mean", "low", "high"))))
    return lines


def write_plots(plan: SweepPlan, table: pl.DataFrame, directory: Path) -> list[Path]:
    """One PNG per figure column and swept path (see the module doc)."""
    from matplotlib.figure import Figure as MplFigure

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    figure_columns = [c for c in table.columns if _FIGURE_COLUMN.match(c)]
    for column in figure_columns:
        if not (table[column].fill_null(0) != 0).any():
            continue  # zero or missing in every run: nothing to see
        unit = FIGURES[_FIGURE_COLUMN.match(column)["figure"]].unit
        for dimension in plan.dimensions:
            lines = curves(plan, table, column, dimension)
            if not lines:
                continue
            canvas = MplFigure(figsize=(7, 4.2), layout="constrained")
            axes = canvas.add_subplot()
            for line in lines:
                drawn = axes.plot(line.x, line.mean, marker="o", label=line.label or None)[0]
                if plan.seeds > 1:
                    axes.fill_between(line.x, line.low, line.high, color=drawn.get_color(), alpha=0.2, linewidth=0)
            positions = dimension.numeric or tuple(range(len(dimension.texts)))
            if dimension.numeric and min(positions) > 0 and max(positions) / min(positions) >= 10:
                axes.set_xscale("log")
            axes.set_xticks(positions, dimension.texts)
            axes.minorticks_off()
            axes.set_xlabel(dimension.path)
            axes.set_ylabel(f"{column} ({unit})")
            seeds = f"mean of {plan.seeds} seeds, band: min to max" if plan.seeds > 1 else "one seed"
            axes.set_title(f"{plan.name}: {column} ({seeds})", fontsize="medium")
            axes.grid(True, alpha=0.3)
            if any(line.label for line in lines):
                axes.legend(fontsize="small", loc="best")
            path = directory / f"{_filename(column)}--{_filename(dimension.path)}.png"
            canvas.savefig(path, dpi=110)
            written.append(path)
    return written


def _filename(text: str) -> str:
    """``goodput_bps[flow=alpha]`` -> ``goodput_bps.alpha``, ``links[2].rate``
    -> ``links.2.rate``, ``drop_pkts[queue=R->B]`` -> ``drop_pkts.R-to-B``."""
    text = re.sub(r"\[[a-z]+=", ".", text.replace("->", "-to-"))
    text = re.sub(r"\.?\[", ".", text).replace("]", "")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)

