"""``alphaqos flows collect|ingest|synth|identify|backtest``: α flows in
router flow records, the parsers and their handlers (the work is in
:mod:`alphaqos.flows`: :mod:`~alphaqos.flows.collect`,
:mod:`~alphaqos.flows.ingest`, :mod:`~alphaqos.flows.identify`,
:mod:`~alphaqos.flows.backtest`). A handler takes the parsed arguments and
returns the exit status, raising :class:`~alphaqos.errors.UsageError` for
bad input (exit 2)."""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path

from .. import units
from ..errors import UsageError
from ..flows import backtest, collect
from ..flows import identify as idm
from ..flows import ingest as ingest_
from ..flows import readers
from ..output import new_output_directory
from ._common import options_from
from .cmdline import positive_int, size_argument


def register(commands: argparse._SubParsersAction) -> None:
    flows = commands.add_parser("flows", help="identify alpha flows in router flow records")
    sub = flows.add_subparsers(dest="flows_command", required=True, metavar="COMMAND")
    for add in (_add_collect, _add_ingest_and_synth, _add_identify, _add_backtest):
        add(sub)


# --- collect ------------------------------------------------------------------


def _add_collect(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("collect", help="receive NetFlow/IPFIX exports over UDP and write Parquet")
    parser.add_argument("--listen", metavar="HOST:PORT", default="127.0.0.1:4739",
                        help="address to receive on (default 127.0.0.1:4739; [::1]:4739 for IPv6; port 0: any free)")  # fmt: skip
    parser.add_argument("--out", metavar="DIR", type=Path, required=True, help="root of the partitioned Parquet")
    parser.add_argument("--flush-every", metavar="D", default="10s", help="write what was received this often (default 10s)")
    parser.add_argument("--flush-records", metavar="N", type=int, default=collect.FLUSH_RECORDS,
                        help=f"write as soon as N records are waiting (default {collect.FLUSH_RECORDS:,}; bounds the memory)")  # fmt: skip
    parser.add_argument("--sampling", metavar="EXPORTER=N", action="append", default=[],
                        help="1-in-N packet sampling of an exporter, overriding what it exports (repeatable)")  # fmt: skip
    parser.add_argument("--max-packet", metavar="EXPORTER=BYTES", action="append", default=[],
                        help="largest packet an exporter counts, its MTU if it sees jumbograms (default 65535; "
                             "'*=BYTES' for all; repeatable)")  # fmt: skip
    parser.add_argument("--time-window", metavar="D|off", default="1d",
                        help="reject records more than D from their receive time (default 1d)")  # fmt: skip
    parser.add_argument("--duration", metavar="D", help="stop after D (default: until SIGTERM/SIGINT)")
    parser.add_argument("--decoder", choices=("native", "python"), default="native",
                        help="decode in Rust with recvmmsg (default) or in Python (the reference)")  # fmt: skip
    parser.add_argument("--spool-limit", metavar="SIZE", default="4GiB",
                        help="spool flushes as Arrow IPC under OUT/_spool for a compactor process to write as Parquet; "
                             "the writer waits while the spool holds more than SIZE (default 4GiB; 0: no spool, "
                             "Parquet written by the collector itself)")  # fmt: skip
    parser.set_defaults(handler=collect.collect_command)


# --- ingest and synth ---------------------------------------------------------


def _add_ingest_and_synth(subparsers: argparse._SubParsersAction) -> None:
    ingest = subparsers.add_parser("ingest", help="read flow-record files into the canonical Parquet store")
    ingest.add_argument("files", metavar="FILE", nargs="+", type=Path, help="flow-record file")
    ingest.add_argument("--format", required=True, choices=sorted(readers.READERS), help="format of the files")
    ingest.add_argument("--out", metavar="DIR", type=Path, required=True, help="store directory (made if missing)")
    ingest.add_argument("--map", metavar="NAME=COLUMN,...", default="",
                        help="csv/parquet: which column holds each canonical column (e.g. first=start_time)")  # fmt: skip
    ingest.add_argument("--exporter", metavar="NAME", help="exporter of records that name none")
    ingest.add_argument("--sampling", metavar="N|EXPORTER=N,...",
                        help="1:N sampling of counts not yet scaled, where the file gives none (default: unknown)")  # fmt: skip
    ingest.add_argument("--require-sampling", action="store_true",
                        help="an exporter whose sampling rate is unknown is an error, not a warning")  # fmt: skip
    ingest.add_argument("--time-unit", choices=readers.TIME_UNITS, default="iso",
                        help="csv/parquet: times as ISO text or epoch numbers in this unit (default iso)")  # fmt: skip
    ingest.add_argument("--time-zone", metavar="ZONE", default="UTC",
                        help="zone of times written without an offset, e.g. Europe/Zurich (default UTC)")  # fmt: skip
    ingest.add_argument("--time-window", metavar="D|off", default="1d",
                        help="reject records more than D from their receive time, where known (default 1d)")  # fmt: skip
    ingest.add_argument("--max-packet", metavar="BYTES|EXPORTER=BYTES,...",
                        help="largest packet an exporter counts, its MTU if it sees jumbograms (default 65535)")  # fmt: skip
    ingest.set_defaults(handler=_ingest)

    make = subparsers.add_parser("synth", help="write a synthetic set of flow records (alpha and beta traffic)")
    make.add_argument("--days", metavar="N", type=positive_int, required=True, help="days of records")
    make.add_argument("--out", metavar="DIR", type=Path, required=True, help="directory to create (must not exist)")
    make.add_argument("--seed", metavar="S", type=int, default=0, help="random seed (default 0)")
    make.add_argument("--exporters", metavar="K", type=positive_int, default=4, help="routers (default 4)")
    make.add_argument("--format", choices=ingest_.SYNTH_FORMATS, default="parquet", help="output format (default parquet)")
    make.add_argument("--beta-flows", metavar="N", type=positive_int, default=400_000, help="beta flows per day")
    make.add_argument("--alpha-transfers", metavar="N", type=int, default=24, help="alpha transfers per day")
    make.add_argument("--new-alpha-hosts", metavar="N", type=int, default=0,
                      help="alpha hosts that appear each day after the first, inside known /24s (default 0)")  # fmt: skip
    make.add_argument("--active-timeout", metavar="S", type=float, default=60.0, help="seconds (default 60)")
    make.add_argument("--start", metavar="YYYY-MM-DD", type=date.fromisoformat, default=date(2026, 11, 1),
                      help="first day (UTC)")  # fmt: skip
    make.set_defaults(handler=_synth)


def _ingest(args: argparse.Namespace) -> int:
    return ingest_.ingest(options_from(args, ingest_.IngestOptions))


def _synth(args: argparse.Namespace) -> int:
    return ingest_.write_synthetic(options_from(args, ingest_.SynthOptions))


# --- identify and backtest ----------------------------------------------------


def _days(text: str) -> float:
    """An aging period (``30d``, ``12h``, any :func:`alphaqos.units.parse_time`
    time); returns days."""
    try:
        ns = units.parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a period like '30d', '12h' or '90min', not {text!r}") from None
    if ns <= 0:
        raise argparse.ArgumentTypeError(f"the period must be positive, not {text!r}")
    return ns / 1e9 / 86_400


def _interval(text: str) -> float:
    """An interval (``60s``, ``1min``; a bare number is seconds) in seconds."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = units.parse_time(text) / 1e9
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"the interval must be positive, not {text!r}")
    return seconds


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a day YYYY-MM-DD, not {text!r}") from None


def _prefix_lengths(limit: int):
    def parse(text: str) -> list[int]:
        lengths = []
        for item in text.split(","):
            try:
                n = int(item.strip().removeprefix("/"))
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected prefix lengths like '24' or '24,32', not {text!r}") from None
            if not 0 <= n <= limit:
                raise argparse.ArgumentTypeError(f"a prefix length is from 0 to {limit}, not {n}")
            lengths.append(n)
        return lengths

    return parse


def _add_common_options(parser: argparse.ArgumentParser, *, many: bool) -> None:
    """The identification options shared by ``identify`` and ``backtest``."""
    parser.add_argument("root", metavar="ROOT", type=Path, help="canonical Parquet root (exporter=*/day=*/)")
    parser.add_argument("--threshold", metavar="SIZE", type=size_argument, default=idm.DEFAULT_THRESHOLD_BYTES,
                        help="H: an α flow moves more than this in one interval (default 1GB)")  # fmt: skip
    parser.add_argument("--interval", metavar="TIME", type=_interval, default=float(idm.DEFAULT_INTERVAL_S),
                        help="interval length (default 60s)")  # fmt: skip
    v4 = "IPv4 prefix length(s), comma-separated (default 24,32)" if many else "IPv4 prefix length (default 24)"
    v6 = ("IPv6 prefix length(s), one or one per IPv4 length (default 128 beside /32, else 48)" if many
          else "IPv6 prefix length (default 48)")  # fmt: skip
    parser.add_argument("--prefix-v4", metavar="N", type=_prefix_lengths(32),
                        default=[24, 32] if many else [idm.DEFAULT_PREFIX_V4], help=v4)  # fmt: skip
    parser.add_argument("--prefix-v6", metavar="N", type=_prefix_lengths(128), default=None if many else [idm.DEFAULT_PREFIX_V6],
                        help=v6)  # fmt: skip
    parser.add_argument("--aging", metavar="PERIOD", type=_days, default=float(idm.DEFAULT_AGING_DAYS),
                        help="drop a prefix after this long without a sighting (default 30d)")  # fmt: skip
    parser.add_argument("--day", metavar="YYYY-MM-DD", dest="days", type=_day, action="append",
                        help="only this day (repeatable; default: every day under ROOT)")  # fmt: skip


def _add_identify(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("identify", help="find α flows and learn their prefixes into a DuckDB file")
    _add_common_options(parser, many=False)
    parser.add_argument("--db", metavar="FILE", type=Path, required=True, help="DuckDB database (created if missing)")
    parser.add_argument("--top", metavar="N", type=int, default=20, help="prefixes to print, most α bytes first (default 20)")
    parser.set_defaults(handler=_identify_command)


def _identify_command(args: argparse.Namespace) -> int:
    if len(args.prefix_v4) != 1 or len(args.prefix_v6) != 1:
        raise UsageError("identify takes one IPv4 and one IPv6 prefix length")
    try:
        summary = idm.identify(
            args.root, args.db,
            threshold_bytes=args.threshold, interval_s=args.interval,
            prefix_v4=args.prefix_v4[0], prefix_v6=args.prefix_v6[0],
            aging_days=args.aging, days=args.days,
        )  # fmt: skip
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(
        f"{summary.partitions_processed} partitions processed ({summary.partitions_replaced} replaced), "
        f"{summary.partitions_skipped} unchanged; {summary.records} records; "
        f"{summary.alpha_intervals} α intervals in the database; {summary.prefixes} prefixes "
        f"(aged at {summary.reference:%Y-%m-%d %H:%M:%S} UTC) in {args.db}"
    )
    top = idm.top_prefixes(args.db, args.top)
    if top.height:
        shown = "" if top.height == summary.prefixes else f" (the {top.height} with the most α bytes)"
        print(f"prefixes learnt{shown}:")
        print(f"  {'prefix':<44} {'role':<4} {'α bytes':>10} {'sightings':>9}  last seen (UTC)")
        for prefix, role, alpha_bytes, sightings, last_seen in top.iter_rows():
            print(f"  {prefix:<44} {role:<4} {units.fmt_size(alpha_bytes):>10} {sightings:>9,}  {last_seen:%Y-%m-%d %H:%M}")
    return 0


def _add_backtest(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("backtest", help="replay identification day by day and report the catch ratio")
    _add_common_options(parser, many=True)
    parser.add_argument("--out", metavar="DIR", type=Path, required=True, help="report directory to create (must not exist)")
    parser.add_argument("--mode", choices=backtest.MODES, default="pair",
                        help="caught if src AND dst prefixes are rules (pair, default) or either")  # fmt: skip
    parser.set_defaults(handler=_backtest_command)


def _backtest_command(args: argparse.Namespace) -> int:
    try:
        table = backtest.backtest(
            args.root,
            threshold_bytes=args.threshold, interval_s=args.interval,
            prefix_v4=args.prefix_v4, prefix_v6=args.prefix_v6,
            aging_days=args.aging, days=args.days,
        )  # fmt: skip
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    with new_output_directory(args.out) as staging:
        summary = backtest.write_outputs(table, staging, mode=args.mode)
    for row in summary.iter_rows(named=True):
        ratio = "n/a" if row["catch_ratio"] is None else f"{100 * row['catch_ratio']:.1f}%"
        excluded = row["days_excluded"]
        warmup = f", leaving out {excluded} first day(s) with no earlier rules" if excluded else ""
        print(f"/{row['prefix_v4']} (IPv6 /{row['prefix_v6']}): {ratio} of {row['alpha_bytes']:.4g} α bytes caught "
              f"({args.mode}) over {row['days']} day(s){warmup}; {row['beta_redirected']:.4g} β bytes redirected")  # fmt: skip
    print(f"report in {args.out}")
    return 0
