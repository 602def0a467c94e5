"""The canonical flow table: one row per flow record, whatever its source.

=================  =====================  =========================================
column             polars type            meaning
=================  =====================  =========================================
``exporter``       String                 the exporting router (its address or a name)
``first``          Datetime(us, UTC)      first packet of the record
``last``           Datetime(us, UTC)      last packet of the record (>= first)
``src_addr``       String                 source address, IPv4 dotted or IPv6 text
``dst_addr``       String                 destination address
``src_port``       Int32                  0 for protocols without ports
``dst_port``       Int32                  ICMP and ICMPv6: type x 256 + code
``protocol``       Int16                  IANA protocol number (6 TCP, 17 UDP, ...)
``bytes``          UInt64                 octets as exported (sampled)
``packets``        UInt64                 packets as exported (sampled)
``sampling_rate``  Int64                  1 in N packets sampled (1: unsampled, 0: unknown)
``bytes_scaled``   UInt64                 bytes x sampling_rate (x 1 when unknown)
``packets_scaled`` UInt64                 packets x sampling_rate (x 1 when unknown)
``input_if``       Int32                  ingress interface index (0: unknown)
``output_if``      Int32                  egress interface index (0: unknown)
=================  =====================  =========================================

ICMP type and code
    A flow record of ICMP (protocol 1) or ICMPv6 (58) has no ports; its
    ``dst_port`` holds type x 256 + code and its ``src_port`` is 0, as
    NetFlow v5 carries them and nfdump shows them (echo request: type 8,
    code 0, ``dst_port`` 2048). The decoder fills it from NetFlow v9
    ICMP_TYPE (32; RFC 3954 Section 8) and IPFIX icmpTypeCodeIPv4 (32) and
    icmpTypeCodeIPv6 (139), or icmpTypeIPv4/icmpCodeIPv4 (176/177) and
    icmpTypeIPv6/icmpCodeIPv6 (178/179) (RFC 7012 and the IANA IPFIX
    registry).

Counters
    Counts are unsigned 64-bit integers from the wire to the store (NetFlow
    and IPFIX counters are unsigned; an octet count above 2**63 is a large
    count, not a negative one). ``sampling_rate`` 0 means the rate is not
    known (nfdump CSV without ``--sampling``, GoFlow2's 0, an exporter that
    sends no sampler options): the counts are stored as exported and the
    scaled columns equal them, which is right only if the exporter did not
    sample. ``alphaqos flows ingest`` warns per exporter when that happens.

What no record may be (:func:`impossible`, checked by every reader and by
the decoder alike, with the same :class:`Reason`): a negative count; an
empty record (0 bytes and 0 packets); bytes with zero packets; more bytes
than :data:`MAX_PACKET_BYTES` (65,535: the largest IPv4 packet, RFC 791's
16-bit total length, and an IPv6 packet without a jumbogram, RFC 8200)
times the packets, or than the exporter's MTU times the packets where one
is given for jumbograms (RFC 2675); a count that times its sampling rate
does not fit in 64 bits; ``last`` before ``first``; a time outside the
plausible window of the record's source (the receive time ± a day by
default, see :func:`impossible`). The decoder also rejects an address
field of the wrong length (RFC 7012 Section 3.2: ipv4Address is 4 bytes,
ipv6Address 16) and a time field whose value overflows 64-bit epoch
microseconds (never wrapped).

On disk: Parquet, partitioned by exporter and day
(``<root>/exporter=<exporter>/day=<YYYY-MM-DD>/part-*.parquet``), the day
being that of ``first`` in UTC, written by pyarrow's Parquet writer
(:func:`write_partitioned`): zstd, row groups of :data:`ROW_GROUP_ROWS`,
statistics (min/max a row group) only on the columns readers prune on
(:data:`PRUNED`), dictionary encoding only on the columns of few values
(:data:`DICTIONARY`), delta encoding on times, counts and source ports
(:data:`DELTA`), the addresses plain.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import polars as pl

__all__ = ["COLUMNS", "DELTA", "DICTIONARY", "MAX_COUNT", "MAX_PACKET_BYTES", "PRUNED", "ROW_GROUP_ROWS", "SCHEMA", "WINDOW_US", "Reason", "conform", "empty", "first_reason", "impossible", "packet_limit",
           "scaled", "write_grouped", "write_parquet", "write_partitioned"]  # fmt: skip

SCHEMA: dict[str, pl.DataType] = {
    "exporter": pl.String(),
    "first": pl.Datetime("us", "UTC"),
    "last": pl.Datetime("us", "UTC"),
    "src_addr": pl.String(),
    "dst_addr": pl.String(),
    "src_port": pl.Int32(),
    "dst_port": pl.Int32(),
    "protocol": pl.Int16(),
    "bytes": pl.UInt64(),
    "packets": pl.UInt64(),
    "sampling_rate": pl.Int64(),
    "bytes_scaled": pl.UInt64(),
    "packets_scaled": pl.UInt64(),
    "input_if": pl.Int32(),
    "output_if": pl.Int32(),
}
COLUMNS = tuple(SCHEMA)
MAX_COUNT = 2**64 - 1
#: Bytes one packet can carry without jumbograms: IPv4's 16-bit total length
#: (RFC 791 Section 3.1) and IPv6's payload length (RFC 8200 Section 3) both
#: stop at 65,535; a larger packet needs an IPv6 jumbogram (RFC 2675), for
#: which the exporter's MTU is given instead (``max_packet_bytes``).
MAX_PACKET_BYTES = 65_535
#: Default half-width of the plausible time window around a record's receive time.
WINDOW_US = 86_400 * 1_000_000
#: Columns of the store with Parquet statistics: the ones the readers filter
#: on (``flows identify``/``backtest`` and DuckDB on times and addresses, a
#: query across partitions on the exporter), so that a row group outside the
#: filter is skipped. Statistics on the other columns cost about a fifth of
#: the collector's write and serve no reader.
PRUNED = ("exporter", "first", "last", "src_addr", "dst_addr")
#: Columns dictionary-encoded in the store: few distinct values a file (one
#: exporter a partition, a handful of protocols, rates, interfaces, service
#: ports). pyarrow falls back to plain pages by itself where a column's
#: dictionary outgrows its page limit. The others (addresses, times,
#: counts, source ports) are mostly distinct and are written plain.
DICTIONARY = ("exporter", "protocol", "sampling_rate", "dst_port", "input_if", "output_if")
#: Integer columns written DELTA_BINARY_PACKED (Parquet's delta encoding,
#: read by DuckDB, polars and Spark): times close to each other within a
#: flush, counts and source ports of a few significant bits. zstd then has
#: a third of the bytes to compress: on a realistic table (``flows synth``)
#: the write costs 0.1-0.3 us a record less than plain pages, for a few per
#: cent more bytes (``benches/flows_decode.py --writes``).
DELTA = ("first", "last", "bytes", "packets", "bytes_scaled", "packets_scaled", "src_port")
#: Rows of a Parquet row group (the unit the statistics describe); a
#: collector flush (``--flush-records``, default 200,000) is one.
ROW_GROUP_ROWS = 262_144
#: zstd level of the store unless a writer asks for another (the collector: 1).
ZSTD_LEVEL = 3


class Reason(StrEnum):
    """Why a record was rejected (checked in this order; a record gets the
    first). The readers check them all; the decoder, whose records always
    parse, checks ADDRESS_LENGTH and those from NEGATIVE on."""

    NOT_JSON = "not a JSON object"
    MISSING = "missing value"
    BAD_TIME = "unparsable timestamp"
    BAD_NUMBER = "unparsable number"
    BAD_ADDRESS = "not an IP address"
    UNKNOWN_PROTOCOL = "unknown protocol"
    NO_EXPORTER = "no exporter"
    ADDRESS_LENGTH = "address field of the wrong length"
    NEGATIVE = "negative count"
    EMPTY = "empty record (0 bytes, 0 packets)"
    BYTES_WITHOUT_PACKETS = "bytes with zero packets"
    BYTES_PER_PACKET = "more bytes than packets x maximum packet size"
    OVERFLOW = "count x sampling rate above 2^64"
    TIME_OVERFLOW = "time beyond 64-bit epoch microseconds"
    LAST_BEFORE_FIRST = "last before first"
    OUT_OF_WINDOW = "time outside the plausible window"
    UNDECODABLE = "undecodable export data"


def impossible(first: pl.Expr, last: pl.Expr, counts: dict[str, pl.Expr], rate: pl.Expr, *,
               negative: dict[str, pl.Expr] | None = None, earliest: pl.Expr | None = None,
               latest: pl.Expr | None = None, max_packet_bytes: pl.Expr | int = MAX_PACKET_BYTES,
               address_length: pl.Expr | None = None, time_overflow: pl.Expr | None = None,
               packets_known: pl.Expr | None = None) -> list[tuple[Reason, str, pl.Expr]]:  # fmt: skip
    """The checks that keep impossible records out of the store, as
    ``(reason, column, mask)`` in the order of :class:`Reason`: an address
    field of the wrong length (``address_length``, a mask the decoder
    gives), a count that is negative (``negative``: masks of counts read as
    signed text), an empty record, bytes without packets, bytes above
    ``max_packet_bytes`` x packets (``counts`` must then hold ``bytes``
    and ``packets``; ``packets_known`` false where a record has no packet
    count at all, as a template without one, which is then not checked
    against the bytes), a count (UInt64 expressions by name) whose product
    with ``rate`` exceeds 2**64 - 1, a time that overflowed
    (``time_overflow``, a mask), ``last`` before ``first``, and ``first``
    before ``earliest`` or ``last`` after ``latest`` (epoch microseconds; a
    null bound is not checked). ``first``/``last`` are UTC datetimes. All
    arithmetic stays within UInt64: nothing here can wrap."""
    checks = [] if address_length is None else [(Reason.ADDRESS_LENGTH, "src_addr", address_length)]
    checks += [(Reason.NEGATIVE, name, mask) for name, mask in (negative or {}).items()]
    if "bytes" in counts and "packets" in counts:
        octets, packets = counts["bytes"], counts["packets"]
        size = max_packet_bytes if isinstance(max_packet_bytes, pl.Expr) else pl.lit(int(max_packet_bytes), pl.UInt64)
        size = size.cast(pl.UInt64)
        known = pl.lit(True) if packets_known is None else packets_known
        checks += [
            (Reason.EMPTY, "bytes", (octets == 0) & (packets == 0)),
            (Reason.BYTES_WITHOUT_PACKETS, "packets", known & (octets > 0) & (packets == 0)),
            # bytes > size x packets, as (bytes - 1) // size >= packets: no product to overflow
            (Reason.BYTES_PER_PACKET, "bytes", known & (octets > 0) & ((octets - 1) // size >= packets)),
        ]
    wide = rate.cast(pl.UInt64, strict=False)
    checks += [(Reason.OVERFLOW, name, (rate > 1) & (count > pl.lit(MAX_COUNT, pl.UInt64) // wide))
               for name, count in counts.items()]  # fmt: skip
    if time_overflow is not None:
        checks.append((Reason.TIME_OVERFLOW, "first", time_overflow))
    checks.append((Reason.LAST_BEFORE_FIRST, "last", last < first))
    if earliest is not None:
        checks.append((Reason.OUT_OF_WINDOW, "first", first.dt.epoch("us") < earliest))
    if latest is not None:
        checks.append((Reason.OUT_OF_WINDOW, "last", last.dt.epoch("us") > latest))
    return checks


def packet_limit(exporter: pl.Expr, setting) -> pl.Expr:
    """The largest packet (bytes) of each record's exporter as a UInt64
    expression: ``setting`` is None (:data:`MAX_PACKET_BYTES` for all), a
    number for all, or ``{exporter: bytes}`` (``"*"``: the others) for
    exporters that see jumbograms (their MTU)."""
    if setting is None:
        return pl.lit(MAX_PACKET_BYTES, pl.UInt64)
    if isinstance(setting, int):
        return pl.lit(int(setting), pl.UInt64)
    other = int(setting.get("*", MAX_PACKET_BYTES))
    named = {k: int(v) for k, v in setting.items() if k != "*"}
    if not named:
        return pl.lit(other, pl.UInt64)
    return exporter.replace_strict(named, default=other, return_dtype=pl.UInt64)


def first_reason(checks: list[tuple[Reason, str, pl.Expr]]) -> tuple[pl.Expr, pl.Expr]:
    """``(reason, column)`` expressions: the first check whose mask is true
    (null where none is)."""
    reason = column = pl.when(pl.lit(False)).then(pl.lit(None, pl.String))
    for why, name, mask in checks:
        reason = reason.when(mask.fill_null(False)).then(pl.lit(why.value))
        column = column.when(mask.fill_null(False)).then(pl.lit(name))
    return reason, column


def empty() -> pl.DataFrame:
    """A canonical table with no rows."""
    return pl.DataFrame(schema=SCHEMA)


def scaled(count: pl.Expr, rate: pl.Expr) -> pl.Expr:
    """``count`` x ``rate`` as UInt64, ``count`` itself when the rate is
    unknown (0). The caller has rejected products above 2**64 - 1."""
    return pl.when(rate > 1).then(count.cast(pl.UInt64) * rate.cast(pl.UInt64, strict=False)).otherwise(count.cast(pl.UInt64))


def conform(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with exactly the canonical columns, in order and cast to
    their types; ``bytes_scaled``/``packets_scaled`` computed if missing.
    Raises ``ValueError`` naming any other missing column."""
    if "sampling_rate" not in frame.columns:
        frame = frame.with_columns(pl.lit(1, pl.Int64).alias("sampling_rate"))
    for base in ("bytes", "packets"):
        if f"{base}_scaled" not in frame.columns and base in frame.columns:
            frame = frame.with_columns(scaled(pl.col(base), pl.col("sampling_rate")).alias(f"{base}_scaled"))
    for column in ("input_if", "output_if", "src_port", "dst_port"):
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(0, pl.Int32).alias(column))
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"flow table lacks the columns {', '.join(missing)}")
    return frame.select([pl.col(c).cast(t) for c, t in SCHEMA.items()])


def write_partitioned(frame: pl.DataFrame, root: str | Path, *, tag: str = "part", level: int = ZSTD_LEVEL,
                      replace: bool = False) -> list[Path]:
    """Write a canonical table under ``root`` partitioned by exporter and
    day (of ``first``, UTC): ``exporter=<e>/day=<YYYY-MM-DD>/<tag>-<n>.parquet``.
    Each file is written beside its target and renamed, so a reader never
    sees half a file; existing files are never overwritten (the next free
    ``<n>`` is taken). ``level``: the zstd level (the collector writes with
    1, a quarter less CPU for a fifth more bytes). ``replace``: each file
    is ``<tag>-00000.parquet``, replacing one of that name atomically, so
    writing the same table again gives the same files (the spool's
    compaction, :mod:`.spool`). Returns the files written. The files'
    layout: see the module doc."""
    frame = conform(frame).with_columns(pl.col("first").dt.date().alias("_day"))
    groups = [(exporter, day, part.drop("_day")) for (exporter, day), part in frame.group_by("exporter", "_day", maintain_order=True)]
    return _write_groups(groups, Path(root), tag, level, replace)


def write_grouped(frame: pl.DataFrame, groups, root: str | Path, *, tag: str = "part", level: int = ZSTD_LEVEL,
                  replace: bool = False) -> list[Path]:
    """:func:`write_partitioned` of a canonical table already grouped by
    exporter and day: ``groups`` lists ``(exporter, day, first row, rows)``
    (the native decoder's ``build_parts``), so nothing is regrouped or cast."""
    return _write_groups([(e, day, frame.slice(start, n)) for e, day, start, n in groups], Path(root), tag, level, replace)


def write_parquet(frame: pl.DataFrame, path: str | Path, *, level: int = ZSTD_LEVEL) -> None:
    """One file of the store: ``frame`` (canonical) written by pyarrow with
    the store's layout (module doc). polars hands its buffers over as they
    are (strings as Arrow string views: no copy); polars' own writer has no
    per-column statistics or dictionary switch."""
    import pyarrow.parquet as pq  # here, not at import: 70 ms that only writers pay

    table = frame.to_arrow(compat_level=pl.CompatLevel.newest())
    pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS, compression="zstd", compression_level=level,
                   write_statistics=list(PRUNED), use_dictionary=list(DICTIONARY),
                   column_encoding=dict.fromkeys(DELTA, "DELTA_BINARY_PACKED"))  # fmt: skip


def _write_groups(groups, root: Path, tag: str, level: int, replace: bool = False) -> list[Path]:
    written = []
    for exporter, day, part in groups:
        directory = root / f"exporter={_safe(str(exporter))}" / f"day={day.isoformat()}"
        directory.mkdir(parents=True, exist_ok=True)
        n = 0
        while not replace and (directory / f"{tag}-{n:05d}.parquet").exists():
            n += 1
        target = directory / f"{tag}-{n:05d}.parquet"
        staging = directory / f".{target.name}.partial"
        write_parquet(part, staging, level=level)
        staging.replace(target)
        written.append(target)
    return written


def _safe(name: str) -> str:
    """An exporter name as a directory name (":" of IPv6 and "/" replaced)."""
    return "".join(c if c.isalnum() or c in ".-_" else "_" for c in name)
