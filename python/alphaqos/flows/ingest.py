"""What ``alphaqos flows ingest`` and ``alphaqos flows synth`` do (their
parser is :mod:`alphaqos.cli.flows`): :func:`ingest`, :func:`write_synthetic`.

``alphaqos flows ingest FILE... --format nfdump|pmacct|goflow2|csv|parquet|pcap
--out DIR [--map NAME=COLUMN,...] [--exporter NAME] [--sampling N|EXPORTER=N,...]
[--require-sampling] [--time-unit iso|s|ms|us|ns] [--time-zone ZONE]
[--time-window D|off] [--max-packet BYTES|EXPORTER=BYTES,...]``
    Read the files (:mod:`.readers`; the formats are the keys of
    :data:`.readers.READERS`), write their records as the canonical Parquet
    store (:func:`.schema.write_partitioned`) under DIR and print a summary:
    records per exporter and day, and the rejected rows by reason (and
    exporter) with their ``file:line``. nfdump and GoFlow2 files are read
    and written block by block (:func:`.readers.iter_records`), so memory
    does not grow with the file; the blocks are written into a hidden
    directory and only moved into DIR once every file was read, so bad
    input leaves DIR as it was (a new DIR is the hidden directory renamed,
    an existing one receives new part files).

    *Unknown sampling is not 1:1.* Where neither the file nor
    ``--sampling`` gives an exporter's rate (nfdump CSV has no sampling
    column; GoFlow2 and pmacct write 0; an exporter may send no sampler
    options), its records are stored with ``sampling_rate`` 0 and their
    counts as exported; ingest warns once per such exporter on stderr, and
    its summary lines say "sampling unknown" instead of
    "sampling-corrected". ``--require-sampling`` makes it an error (exit
    2, nothing written). ``--sampling 1`` says the exporters did not sample
    (or the collector already scaled their counts). For pcap,
    ``--sampling`` overrides what the exporters announce.

    ``--time-zone`` is the zone of times written without an offset (nfdump
    prints local time: see :mod:`.readers`); ``--time-window`` how far a
    record's times may lie from its receive time, where the format gives
    one (default 1 day; ``off``: not checked).

``alphaqos flows synth --days N --out DIR [--seed S] [--exporters K]
[--format parquet|nfdump|goflow2] [--beta-flows N] [--alpha-transfers N] [--new-alpha-hosts N]
[--active-timeout S] [--start YYYY-MM-DD]``
    Write a synthetic data set (:mod:`.synth`) to a new DIR: the canonical
    store, or one ``flows.csv`` (nfdump CSV) or ``flows.jsonl`` (GoFlow2);
    for nfdump, whose CSV has no sampling column, the ``--sampling`` to
    give ``ingest`` is printed (without it the rates are unknown).
"""

from __future__ import annotations

import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import polars as pl

from .. import units
from ..errors import UsageError
from ..output import new_output_directory
from . import readers, schema, synth

__all__ = ["SYNTH_FORMATS", "IngestOptions", "SynthOptions", "ingest", "time_window", "write_synthetic"]

SYNTH_FORMATS = ("parquet", "nfdump", "goflow2", "pcap")


@dataclass(frozen=True)
class IngestOptions:
    """``alphaqos flows ingest``'s options (the command line's, by the same
    names; its parser, :mod:`alphaqos.cli.flows`, holds their defaults)."""

    files: list[Path]
    format: str  # a key of readers.READERS
    out: Path  # the store (made if missing)
    map: str  # csv/parquet: NAME=COLUMN,... (readers.parse_mapping)
    exporter: str | None  # exporter of records that name none
    sampling: str | None  # N or EXPORTER=N,...; None: as the files say, else unknown
    require_sampling: bool  # an unknown sampling rate is an error
    time_unit: str  # csv/parquet: a key of readers.TIME_UNITS
    time_zone: str  # of times written without an offset
    time_window: str  # D (a time) or "off"
    max_packet: str | None  # BYTES or EXPORTER=BYTES,...


@dataclass(frozen=True)
class SynthOptions:
    """``alphaqos flows synth``'s options (see :class:`IngestOptions`)."""

    days: int
    out: Path  # a new directory
    seed: int
    exporters: int
    format: str  # one of SYNTH_FORMATS
    beta_flows: int  # per day
    alpha_transfers: int  # per day
    new_alpha_hosts: int  # per day after the first
    active_timeout: float  # seconds
    start: date  # the first day (UTC)


def ingest(args: IngestOptions) -> int:
    """Read the files into the store and print the summary; returns the exit status."""
    try:
        mapping = readers.parse_mapping(args.map)
    except ValueError as exc:
        raise UsageError(f"--map: {exc}") from None
    if mapping and args.format not in ("csv", "parquet"):
        raise UsageError(f"--map applies to --format csv or parquet, not {args.format}")
    try:
        zone = readers.check_time_zone(args.time_zone)
    except ValueError as exc:
        raise UsageError(f"--time-zone: {exc}") from None
    window = None if args.time_window == "off" else time_window("--time-window", args.time_window)
    sampling = None if args.sampling is None else _sampling(args.sampling)
    max_packet = None if args.max_packet is None else _sampling(args.max_packet, "--max-packet", "BYTES")
    options = readers.ReadOptions(exporter=args.exporter, sampling=sampling, mapping=mapping, time_unit=args.time_unit,
                                  time_zone=zone, window_us=window, max_packet_bytes=max_packet)  # fmt: skip
    report = readers.RejectReport()
    with _store_writer(args.out) as staging:
        # block by block (readers.iter_records): memory holds one block and the per-day counts, not the files
        days = []
        for path in args.files:
            try:
                for table in readers.iter_records(args.format, path, options, report):
                    if table.height:
                        schema.write_partitioned(table, staging)
                        days.append(_per_day(table))
            except readers.FlowFileError as exc:
                raise UsageError(str(exc)) from None
        per_day = (pl.concat(days).group_by("exporter", "day").agg(pl.all().sum()).sort("exporter", "day") if days
                   else _per_day(schema.empty()))  # fmt: skip
        if per_day.is_empty() and report.rejected:
            raise UsageError("no usable records: " + "; ".join(report.lines()[1:4]))
        unknown = dict(per_day.filter(pl.col("unknown") > 0).group_by("exporter", maintain_order=True)
                       .agg(pl.col("unknown").sum()).iter_rows())  # fmt: skip
        if unknown and args.require_sampling:
            names = ", ".join(unknown)
            raise UsageError(f"sampling rate unknown for exporter(s) {names}: give --sampling EXPORTER=N (1 if unsampled "
                             f"or already scaled)")  # fmt: skip
    for exporter, records in unknown.items():
        print(f"alphaqos: warning: exporter {exporter}: sampling rate unknown for {records:,} records; counts stored "
              f"as exported (give --sampling {exporter}=N, 1 if unsampled or already scaled)", file=sys.stderr)  # fmt: skip
    _print_ingest(per_day, report, args.out)
    return 0


def time_window(option: str, text: str) -> int:
    """A window half-width (``1d``, ``6h``, any :func:`alphaqos.units.parse_time` time) in microseconds."""
    try:
        ns = units.parse_time(text)
    except ValueError as exc:
        raise UsageError(f"{option} {text!r}: {exc}") from None
    if ns <= 0:
        raise UsageError(f"{option} {text!r}: must be positive (or 'off')")
    return ns // 1000


@contextmanager
def _store_writer(out: Path):
    """A hidden directory to write the store's new files into: renamed to
    ``out`` if that is new, else its files moved into ``out`` (each
    partition's next free names), when the body succeeds; removed if it
    fails, so bad input leaves ``out`` as it was."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} exists and is not a directory")
    if not out.is_dir():
        with new_output_directory(out) as staging:
            yield staging
        return
    with tempfile.TemporaryDirectory(prefix=".ingest-", dir=out) as staging:
        yield Path(staging)
        for part in sorted(Path(staging).glob("exporter=*/day=*/*.parquet")):
            directory = out / part.parent.parent.name / part.parent.name
            directory.mkdir(parents=True, exist_ok=True)
            n = 0
            while (directory / f"part-{n:05d}.parquet").exists():
                n += 1
            part.rename(directory / f"part-{n:05d}.parquet")


def _per_day(table: pl.DataFrame) -> pl.DataFrame:
    """Records, bytes and records of unknown sampling per exporter and day."""
    return table.group_by("exporter", pl.col("first").dt.date().alias("day")).agg(
        pl.len().cast(pl.Int64).alias("records"), pl.col("bytes_scaled").cast(pl.Float64).sum().alias("bytes"),
        (pl.col("sampling_rate") == 0).sum().cast(pl.Int64).alias("unknown"),
    )  # fmt: skip


def _print_ingest(per_day: pl.DataFrame, report: readers.RejectReport, out: Path) -> None:
    print(f"{per_day['records'].sum():,} records into {out}/")
    for exporter, day, records, octets, unknown in per_day.select("exporter", "day", "records", "bytes", "unknown").iter_rows():
        if not unknown:
            how = "sampling-corrected"
        elif unknown == records:
            how = "sampling unknown"
        else:
            how = f"sampling unknown for {unknown:,} records"
        print(f"  {exporter}  {day}  {records:>10,} records  {units.fmt_size(octets):>10} ({how})")
    for line in report.lines():
        print(line)


def _sampling(text: str, option: str = "--sampling", unit: str = "N") -> int | dict[str, int]:
    try:
        if "=" not in text:
            rate = int(text)
            if rate < 1:
                raise ValueError
            return rate
        rates = {}
        for pair in filter(None, (p.strip() for p in text.split(","))):
            exporter, _, rate = pair.rpartition("=")
            rates[exporter.strip()] = int(rate)
            if not exporter.strip() or rates[exporter.strip()] < 1:
                raise ValueError
        return rates
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected {unit} or EXPORTER={unit},... with {unit} >= 1") from None


def _write_exports_pcap(table, path: Path) -> None:
    """The records as their routers would export them, captured: IPFIX from
    the first, third, ... exporter and NetFlow v9 from the others (sampling
    in options records), UDP to port 4739 of a collector at 192.0.2.200."""
    from . import netflow, pcap

    datagrams = []
    for i, exporter in enumerate(sorted(table["exporter"].unique())):
        rows = table.filter(table["exporter"] == exporter)
        encoded = netflow.encode_ipfix(rows) if i % 2 == 0 else netflow.encode_v9(rows)
        datagrams += [(exporter, "192.0.2.200", d) for d in encoded]
    pcap.write_pcap(path, datagrams)


def write_synthetic(args: SynthOptions) -> int:
    """Write the synthetic data set and say what it holds; returns the exit status."""
    if args.active_timeout <= 0:
        raise UsageError("--active-timeout: expected a positive number of seconds")
    if args.exporters > 254:
        raise UsageError("--exporters: at most 254")
    try:
        table = synth.synthesize(days=args.days, exporters=args.exporters, seed=args.seed, start=args.start,
                                 beta_flows_per_day=args.beta_flows, alpha_transfers_per_day=max(args.alpha_transfers, 0),
                                 new_alpha_hosts_per_day=args.new_alpha_hosts, active_timeout=args.active_timeout)  # fmt: skip
    except ValueError as exc:
        raise UsageError(f"--new-alpha-hosts: {exc}") from None
    with new_output_directory(args.out) as staging:
        if args.format == "parquet":
            schema.write_partitioned(table, staging)
            where = f"{args.out}/"
        elif args.format == "nfdump":
            synth.write_nfdump_csv(table, staging / "flows.csv")
            where = f"{args.out / 'flows.csv'}"
        elif args.format == "goflow2":
            synth.write_goflow2(table, staging / "flows.jsonl")
            where = f"{args.out / 'flows.jsonl'}"
        else:
            _write_exports_pcap(table, staging / "exports.pcap")
            where = f"{args.out / 'exports.pcap'}"
    alpha = int(synth.is_alpha(table).sum())
    rates = dict(table.select("exporter", "sampling_rate").unique().sort("exporter").iter_rows())
    print(f"{table.height:,} records ({alpha:,} of alpha transfers) from {args.exporters} exporters over {args.days} "
          f"day(s), seed {args.seed}: {where}")  # fmt: skip
    print("sampling 1:N per exporter: " + ", ".join(f"{e} 1:{n}" for e, n in rates.items()))
    if args.format == "nfdump":
        hint = ",".join(f"{e}={n}" for e, n in rates.items())
        print(f"nfdump CSV carries no sampling rate: ingest with --sampling {hint}")
    return 0

