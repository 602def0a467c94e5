"""Flow-record files into the canonical table (:mod:`.schema`).

Every reader has the signature ``reader(path, options=None, report=None)``
and returns a conformed table; :data:`READERS` maps a format name to its
reader (the ``--format`` of ``alphaqos flows ingest``).

``nfdump`` (:func:`read_nfdump_csv`)
    The output of ``nfdump -o csv`` (nfdump 1.6 and 1.7; see nfdump(1),
    "-o csv"): a header line naming the columns (``ts,te,td,sa,da,sp,dp,pr,
    flg,...,ipkt,ibyt,...,in,out,...,ra,eng,exid,tr``), one line per record
    with times as ``YYYY-MM-DD hh:mm:ss`` or with ``.mmm`` milliseconds, the
    protocol as a name (``TCP``) or a number, and after the records a
    ``Summary`` block (``flows,bytes,packets,avg_bps,...``) that is not
    records and is skipped. nfdump prints times in its local time zone; run it
    with ``TZ=UTC`` (the times are read as UTC). The exporter is ``ra`` (the
    router address) when set, else ``options.exporter``. The CSV has no
    sampling column: ``options.sampling`` says at what rate 1:N the counts
    were sampled if the collector did not scale them (``nfcapd -s``).
``goflow2`` (:func:`read_goflow2`)
    GoFlow2's JSON lines (``goflow2 -format=json``; the fields of its
    ``FlowMessage``, see the GoFlow2 README and ``docs/protocols.md``):
    ``sampler_address`` is the exporter, ``time_flow_start_ns`` and
    ``time_flow_end_ns`` the times (``time_received_ns`` when they are 0),
    ``bytes``/``packets`` are as sampled at ``sampling_rate``; a rate of 0
    (unknown) is read as 1 and counted in the report's notes. ``proto`` may
    be a number or a name.
``csv`` / ``parquet`` (:func:`read_csv_mapped`, :func:`read_parquet_mapped`)
    Any table with a column mapping ``{canonical name: column}``
    (``options.mapping``; unmapped canonical names are looked up as they
    are) and times as ISO 8601 text or epoch numbers in
    ``options.time_unit`` (``iso``, ``s``, ``ms``, ``us``, ``ns``); Parquet
    datetime columns are taken as they are (naive ones as UTC).

Rows that cannot be used (a missing value, an unparsable time or number,
``last`` before ``first``, a negative count, an unknown protocol name, an
address that is not IP text, a line that is not JSON) are never dropped
silently: each is counted by :class:`Reason` in a :class:`RejectReport`
with its location
(``file:line``; ``file:row N`` for Parquet) and the first few examples. A
file that is unusable as a whole (unreadable, wrong format, no header,
a required column missing) raises :class:`FlowFileError` naming it.

The work is vectorised: polars reads and parses whole columns, and Python
only touches the few example rows of the report.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import polars as pl

from . import schema

__all__ = [
    "PROTOCOLS",
    "READERS",
    "FlowFileError",
    "ReadOptions",
    "Reason",
    "Reject",
    "RejectReport",
    "parse_mapping",
    "read_csv_mapped",
    "read_goflow2",
    "read_nfdump_csv",
    "read_parquet_mapped",
]

#: IANA protocol numbers by the names nfdump and GoFlow2 print (upper case).
PROTOCOLS: dict[str, int] = {
    "HOPOPT": 0, "ICMP": 1, "IGMP": 2, "GGP": 3, "IPIP": 4, "IPV4": 4, "ST": 5, "TCP": 6, "EGP": 8,
    "IGP": 9, "UDP": 17, "IPV6": 41, "IPV6-ROUTE": 43, "IPV6-FRAG": 44, "RSVP": 46, "GRE": 47,
    "ESP": 50, "AH": 51, "ICMP6": 58, "ICMPV6": 58, "IPV6-ICMP": 58, "IPV6-NONXT": 59,
    "IPV6-OPTS": 60, "EIGRP": 88, "OSPF": 89, "OSPFIGP": 89, "PIM": 103, "VRRP": 112, "L2TP": 115,
    "SCTP": 132, "UDPLITE": 136, "MPLS-IN-IP": 137,
}  # fmt: skip

#: Canonical columns every record needs; the others default (ports and
#: interfaces to 0, the sampling rate to ``options.sampling``).
REQUIRED = ("exporter", "first", "last", "src_addr", "dst_addr", "protocol", "bytes", "packets")
_OPTIONAL_INTS = ("src_port", "dst_port", "input_if", "output_if", "sampling_rate")
_COUNTS = ("bytes", "packets", "sampling_rate")
TIME_UNITS = ("iso", "s", "ms", "us", "ns")


class FlowFileError(ValueError):
    """A file that cannot be read as the format asked for; the message names it."""


class Reason(StrEnum):
    """Why a row was rejected (checked in this order; a row gets the first)."""

    NOT_JSON = "not a JSON object"
    MISSING = "missing value"
    BAD_TIME = "unparsable timestamp"
    BAD_NUMBER = "unparsable number"
    BAD_ADDRESS = "not an IP address"
    UNKNOWN_PROTOCOL = "unknown protocol"
    NEGATIVE = "negative count"
    LAST_BEFORE_FIRST = "last before first"
    NO_EXPORTER = "no exporter"
    UNDECODABLE = "undecodable export data"


@dataclass(frozen=True)
class Reject:
    location: str  # "file:line"
    reason: Reason
    detail: str  # the offending column and value


@dataclass
class RejectReport:
    """Rows read, accepted and rejected (by reason, with examples), over
    one or more files; ``notes`` counts rows accepted with a repair (such
    as a sampling rate 0 read as 1)."""

    max_examples: int = 3  # per reason
    rows: int = 0
    accepted: int = 0
    counts: Counter = field(default_factory=Counter)
    examples: dict[Reason, list[Reject]] = field(default_factory=dict)
    notes: Counter = field(default_factory=Counter)

    @property
    def rejected(self) -> int:
        return sum(self.counts.values())

    def add(self, reason: Reason, count: int, examples: list[Reject] = ()) -> None:
        """Count ``count`` rejects for ``reason``, keeping examples up to ``max_examples``."""
        self.counts[reason] += count
        kept = self.examples.setdefault(reason, [])
        kept.extend(examples[: max(0, self.max_examples - len(kept))])

    def lines(self) -> list[str]:
        """The report as text, one line per reason, example and note."""
        out = [f"{self.rows:,} rows read, {self.accepted:,} accepted, {self.rejected:,} rejected"]
        for reason, count in self.counts.most_common():
            out.append(f"  {count:,} rejected: {reason}")
            out.extend(f"    {r.location}: {r.detail}" for r in self.examples.get(reason, []))
        out.extend(f"  note: {count:,} rows: {note}" for note, count in self.notes.most_common())
        return out


@dataclass(frozen=True)
class ReadOptions:
    """What a file does not say itself.

    ``exporter``: the exporter of records that name none (nfdump without
    ``ra``, a generic table without an exporter column).
    ``sampling``: 1:N rate of counts not yet scaled, for formats without a
    sampling column: one rate, or a rate per exporter (others: 1).
    ``mapping``: canonical column -> the file's column (csv, parquet).
    ``time_unit``: how a generic table's times are written: ``iso`` text or
    epoch ``s``/``ms``/``us``/``ns`` numbers."""

    exporter: str | None = None
    sampling: int | Mapping[str, int] = 1
    mapping: Mapping[str, str] = field(default_factory=dict)
    time_unit: str = "iso"


Reader = Callable[..., pl.DataFrame]


def parse_mapping(text: str) -> dict[str, str]:
    """``first=start_time,src_addr=source`` -> ``{"first": "start_time", ...}``;
    ``ValueError`` for a malformed pair or a name that is not a canonical
    column."""
    mapping: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, sep, column = (s.strip() for s in pair.partition("="))
        if not sep or not name or not column:
            raise ValueError(f"bad mapping {pair!r}: expected CANONICAL=COLUMN")
        if name not in schema.COLUMNS or name in ("bytes_scaled", "packets_scaled"):
            readable = ", ".join(c for c in schema.COLUMNS if not c.endswith("_scaled"))
            raise ValueError(f"bad mapping {pair!r}: {name!r} is not a flow column ({readable})")
        mapping[name] = column
    return mapping


# --- nfdump -o csv --------------------------------------------------------------------

#: nfdump CSV column -> canonical column.
NFDUMP_COLUMNS = {
    "ts": "first", "te": "last", "sa": "src_addr", "da": "dst_addr", "sp": "src_port", "dp": "dst_port",
    "pr": "protocol", "ipkt": "packets", "ibyt": "bytes", "in": "input_if", "out": "output_if", "ra": "exporter",
}  # fmt: skip
_NFDUMP_NEEDED = ("ts", "te", "sa", "da", "pr", "ipkt", "ibyt")
# nfdump ends its CSV with a summary ("Summary" and two lines), or says
# "No matched flows" when nothing passed the filter.
_NFDUMP_TRAILERS = (b"Summary", b"No matched flows")


def _nfdump_trailer(data: bytes) -> int:
    """Where the records of an nfdump CSV end: the start of the first line
    that is a trailer word alone (bytes.find, not a regex: files are large)."""
    ends = []
    for word in _NFDUMP_TRAILERS:
        at = data.find(b"\n" + word)
        while at >= 0:
            stop = data.find(b"\n", at + 1)
            if data[at + 1 : stop if stop >= 0 else len(data)].strip() == word:
                ends.append(at + 1)
                break
            at = data.find(b"\n" + word, at + 1)
    return min(ends, default=len(data))


def read_nfdump_csv(path, options: ReadOptions | None = None, report: RejectReport | None = None) -> pl.DataFrame:
    """Records of an ``nfdump -o csv`` file (see the module doc)."""
    options, report, path = options or ReadOptions(), _report(report), Path(path)
    data = _read_bytes(path)
    header = data.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
    columns = [c.strip() for c in header.split(",")]
    missing = [c for c in _NFDUMP_NEEDED if c not in columns]
    if missing:
        raise FlowFileError(
            f"{path}: not nfdump CSV output: the first line should name the columns "
            f"(ts,te,...), it lacks {', '.join(missing)} (it reads {_clip(header)!r})"
        )
    body = data[: _nfdump_trailer(data)]
    wanted = [c for c in NFDUMP_COLUMNS if c in columns]
    try:
        raw = pl.read_csv(io.BytesIO(body), columns=wanted, infer_schema=False, truncate_ragged_lines=True,
                          row_index_name="_line", row_index_offset=2)  # fmt: skip
    except pl.exceptions.PolarsError as exc:
        raise FlowFileError(f"{path}: cannot be read as nfdump CSV: {_first_line(exc)}") from None
    raw = raw.rename({c: NFDUMP_COLUMNS[c] for c in wanted})
    if "exporter" not in raw.columns:
        if options.exporter is None:
            raise FlowFileError(f"{path}: has no 'ra' (router address) column; name the exporter with --exporter")
        raw = raw.with_columns(pl.lit(None, pl.String).alias("exporter"))
    # nfdump writes 0.0.0.0 for a router address it does not know.
    router = pl.col("exporter").str.strip_chars()
    raw = raw.with_columns(pl.when(router.is_in(["0.0.0.0", "::"])).then(None).otherwise(router).alias("exporter"))
    return _finish(raw, path, options, report, time=_nfdump_time, location="line", blank_lines=True)


def _nfdump_time(name: str, dtype: pl.DataType) -> pl.Expr:
    return _text(name).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", time_zone="UTC", strict=False)


# --- GoFlow2 JSON lines ---------------------------------------------------------------

#: GoFlow2 field -> canonical column (the times are handled apart).
GOFLOW2_FIELDS = {
    "sampler_address": "exporter", "src_addr": "src_addr", "dst_addr": "dst_addr", "src_port": "src_port",
    "dst_port": "dst_port", "proto": "protocol", "bytes": "bytes", "packets": "packets",
    "sampling_rate": "sampling_rate", "in_if": "input_if", "out_if": "output_if",
}  # fmt: skip
_GOFLOW2_TIMES = ("time_flow_start_ns", "time_flow_end_ns", "time_received_ns")


def read_goflow2(path, options: ReadOptions | None = None, report: RejectReport | None = None) -> pl.DataFrame:
    """Records of a GoFlow2 JSON-lines file (see the module doc). The file
    is read in blocks of whole lines (:data:`BLOCK_BYTES`), so memory
    holds one block beside the table; whether the file is GoFlow2 at all
    is judged on its first block."""
    options, report, path = options or ReadOptions(), _report(report), Path(path)
    _read_bytes(path, probe=True)
    tables, line = [], 1
    try:
        for index, block in enumerate(_line_blocks(path, BLOCK_BYTES)):
            raw = _goflow2_block(block, line, path, report, first=index == 0)
            tables.append(_finish(raw, path, options, report, time=_epoch_time("ns"), location="line"))
            line += block.count(b"\n")
    except OSError as exc:
        raise FlowFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return pl.concat(tables) if tables else schema.empty()


BLOCK_BYTES = 1 << 25
_GOFLOW2_STRINGS = {f: pl.String() for f in [*GOFLOW2_FIELDS, *_GOFLOW2_TIMES]}


def _line_blocks(path: Path, size: int):
    """The file in blocks of about ``size`` bytes, each ending at a newline
    (the last one where the file ends)."""
    rest = b""
    with path.open("rb") as handle:
        while block := handle.read(size):
            block = rest + block
            cut = block.rfind(b"\n") + 1
            if cut:
                yield block[:cut]
            rest = block[cut:]
    if rest:
        yield rest


def _goflow2_block(block: bytes, first_line: int, path: Path, report: RejectReport, first: bool) -> pl.DataFrame:
    """Raw text columns of a block of lines, ``_line`` numbered from
    ``first_line``; ``_json`` False for a line that is not a JSON object."""
    decoded = None
    lines = block.count(b"\n") + (not block.endswith(b"\n"))
    if b"\n\n" not in block and not block.startswith(b"\n"):
        # Fast path: every line a record; polars parses them in one go.
        try:
            decoded = pl.read_ndjson(io.BytesIO(block), schema=_GOFLOW2_STRINGS)
        except pl.exceptions.PolarsError:
            decoded = None
        if decoded is not None and decoded.height != lines:  # a line of blanks skipped
            decoded = None
    if decoded is not None:
        decoded = decoded.with_row_index("_line", offset=first_line).with_columns(pl.col("_line").cast(pl.Int64))
        bad = None
    else:
        # Some line is blank or not JSON: take the lines one by one (still vectorised).
        text = block.decode("utf-8", errors="replace")
        lines = pl.DataFrame({"_text": text.split("\n")}).with_row_index("_line", offset=first_line)
        lines = lines.with_columns(pl.col("_line").cast(pl.Int64)).filter(pl.col("_text").str.strip_chars() != "")
        is_object = pl.col("_text").str.strip_chars().str.starts_with("{") & pl.col("_text").str.json_path_match("$").is_not_null()
        lines = lines.with_columns(is_object.alias("_json"))
        if first and lines.height and not lines["_json"].any():
            raise FlowFileError(f"{path}: not GoFlow2 JSON lines: no line is a JSON object (first: {_clip(lines['_text'][0])!r})")
        decoded = lines.filter("_json").select(
            "_line", pl.col("_text").str.json_decode(pl.Struct(_GOFLOW2_STRINGS)).alias("_record")
        ).unnest("_record")
        bad = lines.filter(~pl.col("_json")).select("_line", "_text", "_json")
    if first and decoded.height and decoded.select(pl.col("src_addr").is_null().all() & pl.col("bytes").is_null().all()).item():
        raise FlowFileError(f"{path}: not GoFlow2 JSON lines: no record has src_addr or bytes")
    # Some exporters (sFlow) carry no flow times: GoFlow2 then leaves them 0.
    no_time = decoded.select((_int("time_flow_start_ns").fill_null(0) == 0).sum()).item()
    if no_time:
        report.notes["no flow start time: time_received_ns used"] += no_time
    received = _int("time_received_ns")
    decoded = decoded.rename(GOFLOW2_FIELDS).with_columns(
        pl.when(_int("time_flow_start_ns").fill_null(0) == 0).then(received)
        .otherwise(pl.col("time_flow_start_ns")).cast(pl.String).alias("first"),
        pl.when(_int("time_flow_end_ns").fill_null(0) == 0).then(received)
        .otherwise(pl.col("time_flow_end_ns")).cast(pl.String).alias("last"),
        pl.lit(True).alias("_json"),
    ).drop(*_GOFLOW2_TIMES)  # fmt: skip
    if bad is None or bad.is_empty():
        return decoded
    return pl.concat([decoded, bad], how="diagonal").sort("_line")


# --- generic CSV / Parquet --------------------------------------------------------------


def read_csv_mapped(path, options: ReadOptions | None = None, report: RejectReport | None = None) -> pl.DataFrame:
    """Records of a CSV file with a header, columns per ``options.mapping``."""
    options, report, path = options or ReadOptions(), _report(report), Path(path)
    data = _read_bytes(path)
    if not data.strip():
        raise FlowFileError(f"{path}: empty file (a CSV file needs a header line)")
    try:
        raw = pl.read_csv(io.BytesIO(data), infer_schema=False, truncate_ragged_lines=True,
                          row_index_name="_line", row_index_offset=2)  # fmt: skip
    except pl.exceptions.PolarsError as exc:
        raise FlowFileError(f"{path}: cannot be read as CSV: {_first_line(exc)}") from None
    return _mapped(raw, path, options, report, location="line")


def read_parquet_mapped(path, options: ReadOptions | None = None, report: RejectReport | None = None) -> pl.DataFrame:
    """Records of a Parquet file, columns per ``options.mapping``."""
    options, report, path = options or ReadOptions(), _report(report), Path(path)
    _read_bytes(path, probe=True)
    try:
        raw = pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise FlowFileError(f"{path}: cannot be read as Parquet: {_first_line(exc)}") from None
    raw = raw.with_row_index("_line", offset=1)
    return _mapped(raw, path, options, report, location="row")


def _mapped(raw: pl.DataFrame, path: Path, options: ReadOptions, report: RejectReport, location: str) -> pl.DataFrame:
    if options.time_unit not in TIME_UNITS:
        raise ValueError(f"time unit {options.time_unit!r}: expected one of {', '.join(TIME_UNITS)}")
    picked = {}
    for name in schema.COLUMNS:
        source = options.mapping.get(name, name)
        if source in raw.columns:
            picked[name] = pl.col(source)
        elif name in options.mapping:
            raise FlowFileError(f"{path}: has no column {source!r} (mapped to {name}); it has {', '.join(raw.columns)}")
    if "exporter" not in picked:
        if options.exporter is None:
            raise FlowFileError(f"{path}: no exporter column; map one (--map exporter=COLUMN) or give --exporter")
        picked["exporter"] = pl.lit(None, pl.String)
    missing = [n for n in REQUIRED if n not in picked]
    if missing:
        raise FlowFileError(
            f"{path}: no column for {', '.join(missing)}; map them with --map NAME=COLUMN "
            f"(the file has {', '.join(raw.columns)})"
        )
    picked.pop("bytes_scaled", None)
    picked.pop("packets_scaled", None)
    raw = raw.select(pl.col("_line").cast(pl.Int64), *(e.alias(n) for n, e in picked.items()))
    return _finish(raw, path, options, report, time=_table_time(options.time_unit), location=location,
                   blank_lines=location == "line")  # fmt: skip


def _table_time(unit: str):
    def parse(name: str, dtype: pl.DataType) -> pl.Expr:
        if isinstance(dtype, pl.Datetime):
            column = pl.col(name)
            column = column.dt.replace_time_zone("UTC") if dtype.time_zone is None else column.dt.convert_time_zone("UTC")
            return column.dt.cast_time_unit("us")
        if isinstance(dtype, pl.Date):
            return pl.col(name).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        if unit == "iso":
            return _iso_time(name)
        return _epoch_time(unit)(name, dtype)

    return parse


def _iso_time(name: str) -> pl.Expr:
    """ISO 8601 text with or without an offset (naive: UTC), "T" or a space."""
    text = _text(name).str.replace(" ", "T", literal=True).str.replace(r"[zZ]$", "+00:00")
    with_offset = text.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", time_unit="us", time_zone="UTC", strict=False)
    naive = text.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", time_unit="us", strict=False).dt.replace_time_zone("UTC")
    return pl.coalesce(with_offset, naive)


def _epoch_time(unit: str):
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]

    def parse(name: str, dtype: pl.DataType) -> pl.Expr:
        whole = _text(name).cast(pl.Int64, strict=False)
        fraction = _text(name).cast(pl.Float64, strict=False)
        if per_second >= 1_000_000:  # whole numbers only: floats would lose digits
            micros = whole // (per_second // 1_000_000)
        else:
            micros = pl.coalesce(whole * (1_000_000 // per_second), (fraction * (1_000_000 / per_second)).round(0).cast(pl.Int64))
        return pl.from_epoch(micros, time_unit="us").dt.replace_time_zone("UTC")

    return parse


# --- common: parse, check, report --------------------------------------------------------


def _finish(raw: pl.DataFrame, path: Path, options: ReadOptions, report: RejectReport, *, time, location: str,
            blank_lines: bool = False) -> pl.DataFrame:  # fmt: skip
    """Parse the raw columns of ``raw`` (text or typed; ``_line`` is the
    location number, ``_json`` False marks a line that is not JSON), reject
    what cannot be used into ``report`` and return the rest, conformed.
    ``blank_lines``: rows of nulls are blank CSV lines, skipped."""
    if "_json" not in raw.columns:
        raw = raw.with_columns(pl.lit(True).alias("_json"))
    for name in REQUIRED + _OPTIONAL_INTS:
        if name not in raw.columns:
            raw = raw.with_columns(pl.lit(None, pl.String).alias(name))
    if blank_lines:
        # A blank CSV line reads as a row of nulls: not a record.
        raw = raw.filter(~pl.all_horizontal(pl.col(n).is_null() for n in raw.columns if n not in ("_line", "_json")))
    # Text once stripped, and empty text as null (every parser below relies on it).
    text = [n for n in REQUIRED + _OPTIONAL_INTS if raw.schema[n] == pl.String]
    raw = raw.with_columns(pl.when(pl.col(n).str.strip_chars() != "").then(pl.col(n).str.strip_chars()).alias(n) for n in text)
    if options.exporter is not None:
        raw = raw.with_columns(pl.col("exporter").fill_null(options.exporter))
    types = raw.schema
    parsed = {
        "exporter": _text("exporter"),
        "src_addr": _text("src_addr"),
        "dst_addr": _text("dst_addr"),
        "first": time("first", types["first"]),
        "last": time("last", types["last"]),
        "protocol": _protocol("protocol"),
        **{n: _int(n) for n in ("bytes", "packets", *_OPTIONAL_INTS)},
    }
    frame = raw.with_columns(**{f"_p_{n}": e for n, e in parsed.items()})

    def present(n):
        return pl.col(n).is_not_null()

    def unparsed(n):
        return present(n) & pl.col(f"_p_{n}").is_null()

    checks: list[tuple[Reason, str, pl.Expr]] = [(Reason.NOT_JSON, "_text", ~pl.col("_json"))]
    checks += [(Reason.MISSING, n, ~present(n)) for n in REQUIRED if n != "exporter"]
    checks += [(Reason.BAD_TIME, n, unparsed(n)) for n in ("first", "last")]
    checks += [(Reason.BAD_NUMBER, n, unparsed(n)) for n in ("bytes", "packets", *_OPTIONAL_INTS)]
    checks += [(Reason.BAD_ADDRESS, n, ~pl.col(n).cast(pl.String).str.contains(_ADDRESS)) for n in ("src_addr", "dst_addr")]
    checks += [(Reason.UNKNOWN_PROTOCOL, "protocol", unparsed("protocol"))]
    checks += [(Reason.NEGATIVE, n, pl.col(f"_p_{n}") < 0) for n in _COUNTS]
    checks += [(Reason.LAST_BEFORE_FIRST, "last", pl.col("_p_last") < pl.col("_p_first"))]
    checks += [(Reason.NO_EXPORTER, "exporter", ~present("exporter"))]
    reason, column = pl.when(pl.lit(False)).then(pl.lit(None, pl.String)), pl.when(pl.lit(False)).then(pl.lit(None, pl.String))
    for why, name, mask in checks:
        reason = reason.when(mask.fill_null(False)).then(pl.lit(why.value))
        column = column.when(mask.fill_null(False)).then(pl.lit(name))
    frame = frame.with_columns(reason.alias("_reason"), column.alias("_column"))

    report.rows += frame.height
    rejected = frame.filter(pl.col("_reason").is_not_null())
    if rejected.height:
        _report_rejects(rejected, path, report, location)
    kept = frame.filter(pl.col("_reason").is_null())
    report.accepted += kept.height

    sampling = pl.col("_p_sampling_rate")
    zero = kept.select((sampling == 0).sum()).item()
    if zero:
        report.notes["sampling_rate 0 (unknown) read as 1"] += zero
    default_rate = _default_sampling(options)
    kept = kept.with_columns(
        pl.when(sampling.is_null()).then(default_rate).when(sampling == 0).then(1).otherwise(sampling).alias("_p_sampling_rate"),
        *(pl.col(f"_p_{n}").fill_null(0) for n in ("src_port", "dst_port", "input_if", "output_if")),
    )
    return schema.conform(kept.select(pl.col(f"_p_{n}").alias(n) for n in parsed))


def _report_rejects(rejected: pl.DataFrame, path: Path, report: RejectReport, location: str) -> None:
    counts = rejected.group_by("_reason").len()
    examples = rejected.group_by("_reason", maintain_order=True).head(report.max_examples)
    for why, count in counts.iter_rows():
        kept = []
        for row in examples.filter(pl.col("_reason") == why).iter_rows(named=True):
            where = f"{path}:{row['_line']}" if location == "line" else f"{path}:row {row['_line']}"
            column = row["_column"]
            if column == "_text":
                detail = _clip(row.get("_text") or "")
            elif why == Reason.LAST_BEFORE_FIRST:
                detail = f"first={row['first']} last={row['last']}"
            elif why == Reason.MISSING:
                detail = f"no {column}"
            else:
                detail = f"{column}={row[column]!r}"
            kept.append(Reject(where, Reason(why), detail))
        report.add(Reason(why), count, kept)


def _default_sampling(options: ReadOptions) -> pl.Expr:
    if isinstance(options.sampling, Mapping):
        return pl.col("_p_exporter").replace_strict(dict(options.sampling), default=1, return_dtype=pl.Int64)
    return pl.lit(int(options.sampling), pl.Int64)


# IPv4 dotted quad, or IPv6 text (loosely: hex digits and colons, perhaps a
# dotted quad at the end; what the prefixes of α sources and sinks need).
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_ADDRESS = rf"^(?:{_OCTET}(?:\.{_OCTET}){{3}}|[0-9A-Fa-f]{{0,4}}(?::[0-9A-Fa-f]{{0,4}}){{2,7}}(?::{_OCTET}(?:\.{_OCTET}){{3}})?)$"


def _text(name: str) -> pl.Expr:
    """A raw column as text (already stripped by :func:`_finish`)."""
    return pl.col(name).cast(pl.String)


def _int(name: str) -> pl.Expr:
    """Whole numbers, also written as ``8.0``; null if not one."""
    text = _text(name)
    real = text.cast(pl.Float64, strict=False)
    whole_real = pl.when(real.is_finite() & (real == real.floor())).then(real.cast(pl.Int64, strict=False))
    return pl.coalesce(text.cast(pl.Int64, strict=False), whole_real)


def _protocol(name: str) -> pl.Expr:
    text = _text(name).str.to_uppercase()
    number = pl.coalesce(_int(name), text.replace_strict(PROTOCOLS, default=None, return_dtype=pl.Int64))
    return pl.when((number >= 0) & (number <= 255)).then(number)


def _report(report: RejectReport | None) -> RejectReport:
    return RejectReport() if report is None else report


def _read_bytes(path: Path, probe: bool = False) -> bytes:
    try:
        if probe:
            with path.open("rb") as handle:
                return handle.read(4)
        return path.read_bytes()
    except IsADirectoryError:
        raise FlowFileError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise FlowFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


#: ``--format`` -> reader; a new format is one more entry.
def read_pcap_exports(path, options: ReadOptions | None = None, report: RejectReport | None = None) -> pl.DataFrame:
    """NetFlow v5/v9 and IPFIX datagrams captured in a pcap or pcapng file
    (:func:`.netflow.read_pcap`); the exporter is each datagram's source
    address. What cannot be decoded is counted in the report, by reason."""
    from . import netflow

    options, report, path = options or ReadOptions(), _report(report), Path(path)
    _read_bytes(path, probe=True)
    sampling = dict(options.sampling) if not isinstance(options.sampling, int) else None
    frame, problems = netflow.read_pcap(path, sampling=sampling)
    report.rows += frame.height + len(problems)
    report.accepted += frame.height
    if problems:
        report.add(Reason.UNDECODABLE, len(problems),
                   [Reject(f"{path}", Reason.UNDECODABLE, str(p)) for p in problems[: report.max_examples]])  # fmt: skip
    return frame


READERS: dict[str, Reader] = {
    "nfdump": read_nfdump_csv,
    "goflow2": read_goflow2,
    "csv": read_csv_mapped,
    "parquet": read_parquet_mapped,
    "pcap": read_pcap_exports,
}
