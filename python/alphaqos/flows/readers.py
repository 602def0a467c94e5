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
    records and is skipped; nfdump 1.6 prints ``No matched flows`` and 1.7
    ``No matching flows`` (then its ``Summary``) when nothing passed the
    filter: an empty table. The exporter is ``ra`` (the router address) when
    set, else ``options.exporter``.

    *Time zone.* nfdump prints ``ts``, ``te`` and ``tr`` in the local time
    of the machine it runs on (``localtime(3)`` in nfdump 1.7.1's
    ``output_csv.c``), without an offset, and 1.7.1 to the whole second.
    Run it as ``TZ=UTC nfdump -o csv ...``, or give the zone it ran in
    (``options.time_zone``, ``--time-zone Europe/Zurich``): a CSV written in
    another zone and read as UTC is silently hours off. In a zone with
    daylight saving, the repeated hour of autumn is ambiguous: its records
    are rejected as unparsable times.

    *Sampling.* The CSV has no sampling column, so the counts are as nfcapd
    stored them, scaled or not, and ``options.sampling`` must say, per
    exporter, at what rate 1:N the counts still need scaling: 1 for an
    unsampled exporter or one whose counts nfcapd already scaled, N for one
    whose counts it did not. Without it the rate is unknown (0 in the
    store) and ``ingest`` warns. What nfcapd scales depends on its version:
    nfcapd applies the rate an exporter announces (v5 header, v9 sampler
    options, IPFIX options) and ``-s N`` as a default for exporters that
    announce none (``-s -N`` overrides all; phaag/nfdump issue 313); 1.6.19
    to 1.6.21 did not apply announced IPFIX rates (issues 231 and 237;
    1.6.18 did); Debian's 1.7.1 was seen to scale IPFIX records by their
    announced rate but not NetFlow v9 records (alphaqos issue 11). Check
    with ``nfdump -E`` (the exporters and their samplers) and a known
    transfer before trusting the counts.
    ``tr`` (the time nfcapd received the record, if not 0) sets the
    plausible window of the record's times (see below).
``goflow2`` (:func:`read_goflow2`)
    GoFlow2's JSON lines (``goflow2 -format=json``; the fields of its
    ``FlowMessage``, see the GoFlow2 README and ``docs/protocols.md``):
    ``sampler_address`` is the exporter, ``time_flow_start_ns`` and
    ``time_flow_end_ns`` the times (``time_received_ns`` when they are 0),
    ``bytes``/``packets`` are as sampled at ``sampling_rate``; a rate of 0
    is unknown (``options.sampling`` for the exporter if given, else 0 in
    the store). ``proto`` may be a number or a name. ``time_received_ns``
    sets the plausible window.
``pmacct`` (:func:`read_pmacct_csv`)
    The CSV of pmacct's ``print`` plugin (``nfacctd``/``sfacctd`` with
    ``print_output: csv``), a preset of ``csv`` with the mapping
    :data:`PMACCT_COLUMNS`: the header names the aggregation primitives in
    upper case (``PEER_SRC_IP``, ``SRC_IP``, ``DST_IP``, ``SRC_PORT``,
    ``DST_PORT``, ``PROTOCOL``, ``IN_IFACE``, ``OUT_IFACE``,
    ``TIMESTAMP_START``, ``TIMESTAMP_END``, ``SAMPLING_RATE``, ``PACKETS``,
    ``BYTES``; ``print_plugin.c``, ``P_write_stats_header_csv``). Times are
    text (``YYYY-MM-DD hh:mm:ss.ffffff`` in local time unless
    ``timestamps_utc: true``) or epoch seconds (``timestamps_since_epoch:
    true``), told apart by their form. ``SAMPLING_RATE`` 0 is pmacct's
    "unknown"; with ``nfacctd_renormalize: true`` pmacct scales the counts
    and prints 1. The nfacctd settings are in ``docs/flows.md``.
``csv`` / ``parquet`` (:func:`read_csv_mapped`, :func:`read_parquet_mapped`)
    Any table with a column mapping ``{canonical name: column}``
    (``options.mapping``; unmapped canonical names are looked up as they
    are) and times as ISO 8601 text or epoch numbers in
    ``options.time_unit`` (``iso``, ``s``, ``ms``, ``us``, ``ns``); Parquet
    datetime columns are taken as they are (naive ones as UTC).

Times written without an offset are in ``options.time_zone`` (UTC by
default). Counts are read as unsigned 64-bit integers.

Rows that cannot be used (a missing value, an unparsable time or number,
an unknown protocol name, an address that is not IP text, a line that is
not JSON) and rows that are impossible (:func:`.schema.impossible`: a
negative count, an empty record, bytes without packets or above 65,535
(the exporter's MTU, ``options.max_packet_bytes``) per packet, a count
times its sampling rate above 2**64 - 1, ``last`` before ``first``, a
time more than ``options.window_us`` from the
record's receive time where the format gives one) are never dropped
silently: each is counted by :class:`Reason`, and by exporter, in a
:class:`RejectReport` with its location
(``file:line``; ``file:row N`` for Parquet) and the first few examples; the
decoder of export datagrams applies the same checks. A
file that is unusable as a whole (unreadable, wrong format, no header,
a required column missing) raises :class:`FlowFileError` naming it.

The work is vectorised: polars reads and parses whole columns, and Python
only touches the few example rows of the report.
"""

from __future__ import annotations

import io
import zoneinfo
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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
    "read_pmacct_csv",
]

#: IANA protocol numbers by the names nfdump and GoFlow2 print (upper case).
PROTOCOLS: dict[str, int] = {
    "HOPOPT": 0, "ICMP": 1, "IGMP": 2, "GGP": 3, "IPIP": 4, "IPV4": 4, "IPENCAP": 4, "ST": 5, "TCP": 6, "EGP": 8,
    "IGP": 9, "UDP": 17, "IPV6": 41, "IPV6-ROUTE": 43, "IPV6-FRAG": 44, "RSVP": 46, "GRE": 47,
    "ESP": 50, "AH": 51, "ICMP6": 58, "ICMPV6": 58, "IPV6-ICMP": 58, "IPV6-NONXT": 59,
    "IPV6-OPTS": 60, "EIGRP": 88, "OSPF": 89, "OSPFIGP": 89, "PIM": 103, "VRRP": 112, "L2TP": 115,
    "SCTP": 132, "UDPLITE": 136, "MPLS-IN-IP": 137,
}  # fmt: skip

#: Canonical columns every record needs; the others default (ports and
#: interfaces to 0, the sampling rate to ``options.sampling``).
REQUIRED = ("exporter", "first", "last", "src_addr", "dst_addr", "protocol", "bytes", "packets")
_OPTIONAL_INTS = ("src_port", "dst_port", "input_if", "output_if", "sampling_rate")
_COUNTS = ("bytes", "packets")
TIME_UNITS = ("iso", "s", "ms", "us", "ns")


class FlowFileError(ValueError):
    """A file that cannot be read as the format asked for; the message names it."""


#: Why a row was rejected (see :class:`.schema.Reason`).
Reason = schema.Reason


@dataclass(frozen=True)
class Reject:
    location: str  # "file:line"
    reason: Reason
    detail: str  # the offending column and value


@dataclass
class RejectReport:
    """Rows read, accepted and rejected (by reason, with examples; and by
    (exporter, reason) in ``by_exporter``, "?" for rows naming none), over
    one or more files; ``notes`` counts rows accepted with a repair (such
    as the receive time standing for a missing flow time)."""

    max_examples: int = 3  # per reason
    rows: int = 0
    accepted: int = 0
    counts: Counter = field(default_factory=Counter)
    examples: dict[Reason, list[Reject]] = field(default_factory=dict)
    notes: Counter = field(default_factory=Counter)
    by_exporter: Counter = field(default_factory=Counter)

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
        exporters = sorted({e for e, _ in self.by_exporter}, key=lambda e: e or "")
        if len(exporters) > 1 or exporters and exporters != [None]:
            for exporter in exporters:
                reasons = sorted(((n, r) for (e, r), n in self.by_exporter.items() if e == exporter), reverse=True)
                text = ", ".join(f"{Reason(r)} {n:,}" for n, r in reasons)
                out.append(f"  {exporter or '?'}: {sum(n for n, _ in reasons):,} rejected ({text})")
        out.extend(f"  note: {count:,} rows: {note}" for note, count in self.notes.most_common())
        return out


@dataclass(frozen=True)
class ReadOptions:
    """What a file does not say itself.

    ``exporter``: the exporter of records that name none (nfdump without
    ``ra``, a generic table without an exporter column).
    ``sampling``: 1:N rate of counts not yet scaled, for records whose file
    gives none (no sampling column, or 0): one rate for all, or a rate per
    exporter; None, or an exporter not named: unknown (0 in the store).
    ``mapping``: canonical column -> the file's column (csv, parquet).
    ``time_unit``: how a generic table's times are written: ``iso`` text or
    epoch ``s``/``ms``/``us``/``ns`` numbers.
    ``time_zone``: the IANA zone of times written without an offset.
    ``window_us``: how far (microseconds) a record's times may lie from its
    receive time, where the format gives one (None: not checked).
    ``max_packet_bytes``: the largest packet an exporter can count
    (:func:`.schema.packet_limit`: None for 65,535, a number for all, or
    ``{exporter: MTU}`` for exporters seeing jumbograms)."""

    exporter: str | None = None
    sampling: int | Mapping[str, int] | None = None
    mapping: Mapping[str, str] = field(default_factory=dict)
    time_unit: str = "iso"
    time_zone: str = "UTC"
    window_us: int | None = schema.WINDOW_US
    max_packet_bytes: int | Mapping[str, int] | None = None


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
    "tr": "_received",
}  # fmt: skip
_NFDUMP_NEEDED = ("ts", "te", "sa", "da", "pr", "ipkt", "ibyt")
# nfdump ends its CSV with a summary ("Summary" and two lines), and says
# "No matched flows" (1.6) or "No matching flows" (1.7, nfdump.c) before it
# when nothing passed the filter.
_NFDUMP_TRAILERS = (b"Summary", b"No matched flows", b"No matching flows")


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
    tables = list(iter_nfdump_csv(path, options, report))
    return pl.concat(tables) if tables else schema.empty()


def iter_nfdump_csv(path, options: ReadOptions | None = None, report: RejectReport | None = None):
    """The records of an ``nfdump -o csv`` file as canonical tables of one
    block of about :data:`BLOCK_BYTES` of lines each, read as they are
    needed: memory holds one block, whatever the file's size. Whether the
    file is nfdump CSV is judged on its first line, before anything is
    yielded."""
    options, report, path = options or ReadOptions(), _report(report), Path(path)
    _read_bytes(path, probe=True)
    try:
        with path.open("rb") as handle:
            header_bytes = handle.readline()
    except OSError as exc:
        raise FlowFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    header = header_bytes.decode("utf-8", errors="replace").strip()
    columns = [c.strip() for c in header.split(",")]
    missing = [c for c in _NFDUMP_NEEDED if c not in columns]
    if missing:
        raise FlowFileError(
            f"{path}: not nfdump CSV output: the first line should name the columns "
            f"(ts,te,...), it lacks {', '.join(missing)} (it reads {_clip(header)!r})"
        )
    line = 2  # the number of the block's first line
    try:
        for index, block in enumerate(_line_blocks(path, BLOCK_BYTES)):
            if index == 0:
                block = block[len(header_bytes):]
            end = _nfdump_trailer(b"\n" + block) - 1
            end = len(block) if end < 0 else min(end, len(block))
            body = block[:end]
            if body.strip():
                yield _nfdump_block(header_bytes.rstrip(b"\r\n") + b"\n" + body, columns, line, path, options, report)
            if end < len(block):
                return  # nfdump's trailer: no records after it
            line += block.count(b"\n")
    except OSError as exc:
        raise FlowFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _nfdump_block(data: bytes, columns: list[str], first_line: int, path: Path, options: ReadOptions,
                  report: RejectReport) -> pl.DataFrame:  # fmt: skip
    """The records of one block (the header line, then lines from ``first_line`` on)."""
    wanted = [c for c in NFDUMP_COLUMNS if c in columns]
    try:
        raw = pl.read_csv(io.BytesIO(data), columns=wanted, infer_schema=False, truncate_ragged_lines=True,
                          row_index_name="_line", row_index_offset=first_line)  # fmt: skip
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
    if "_received" in raw.columns:  # "1970-01-01 ..." (in any zone): not known
        raw = raw.with_columns(pl.when(~_text("_received").str.starts_with("1970-01-0")).then(pl.col("_received")).alias("_received"))
    time = _local_time("%Y-%m-%d %H:%M:%S%.f", options.time_zone)
    return _finish(raw, path, options, report, time=time, location="line", blank_lines=True)


def _local_time(format: str, zone: str):
    """A parser of text times in ``format`` written in the time zone ``zone``;
    a time that does not exist there, or exists twice, is null."""

    def parse(name: str, dtype: pl.DataType) -> pl.Expr:
        naive = _text(name).str.to_datetime(format, time_unit="us", strict=False)
        return _in_zone(naive, zone)

    return parse


def _in_zone(naive: pl.Expr, zone: str) -> pl.Expr:
    if zone == "UTC":
        return naive.dt.replace_time_zone("UTC")
    return naive.dt.replace_time_zone(zone, ambiguous="null", non_existent="null").dt.convert_time_zone("UTC")


def check_time_zone(zone: str) -> str:
    """``zone`` if it is an IANA time zone name; ``ValueError`` otherwise."""
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {zone!r} (expected an IANA name such as UTC or Europe/Zurich)") from None
    return zone


# --- GoFlow2 JSON lines ---------------------------------------------------------------

#: GoFlow2 field -> canonical column (the times are handled apart).
GOFLOW2_FIELDS = {
    "sampler_address": "exporter", "src_addr": "src_addr", "dst_addr": "dst_addr", "src_port": "src_port",
    "dst_port": "dst_port", "proto": "protocol", "bytes": "bytes", "packets": "packets",
    "sampling_rate": "sampling_rate", "in_if": "input_if", "out_if": "output_if",
}  # fmt: skip
_GOFLOW2_TIMES = ("time_flow_start_ns", "time_flow_end_ns", "time_received_ns")


def read_goflow2(path, options: ReadOptions | None = None, report: RejectReport | None = None) -> pl.DataFrame:
    """Records of a GoFlow2 JSON-lines file (see the module doc)."""
    tables = list(iter_goflow2(path, options, report))
    return pl.concat(tables) if tables else schema.empty()


def iter_goflow2(path, options: ReadOptions | None = None, report: RejectReport | None = None):
    """The records of a GoFlow2 JSON-lines file as canonical tables of one
    block of whole lines (:data:`BLOCK_BYTES`) each, read as needed, so
    memory holds one block; whether the file is GoFlow2 at all is judged on
    its first block."""
    options, report, path = options or ReadOptions(), _report(report), Path(path)
    _read_bytes(path, probe=True)
    line = 1
    try:
        for index, block in enumerate(_line_blocks(path, BLOCK_BYTES)):
            raw = _goflow2_block(block, line, path, report, first=index == 0)
            yield _finish(raw, path, options, report, time=_epoch_time("ns"), location="line")
            line += block.count(b"\n")
    except OSError as exc:
        raise FlowFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


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
        pl.when(received.fill_null(0) > 0).then(pl.col("time_received_ns")).alias("_received"),
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


def _mapped(raw: pl.DataFrame, path: Path, options: ReadOptions, report: RejectReport, location: str,
            time=None) -> pl.DataFrame:  # fmt: skip
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
    time = time or _table_time(options.time_unit, options.time_zone)
    return _finish(raw, path, options, report, time=time, location=location, blank_lines=location == "line")


def _table_time(unit: str, zone: str = "UTC"):
    def parse(name: str, dtype: pl.DataType) -> pl.Expr:
        if isinstance(dtype, pl.Datetime):
            column = pl.col(name)
            column = _in_zone(column, zone) if dtype.time_zone is None else column.dt.convert_time_zone("UTC")
            return column.dt.cast_time_unit("us")
        if isinstance(dtype, pl.Date):
            return _in_zone(pl.col(name).cast(pl.Datetime("us")), zone)
        if unit == "iso":
            return _iso_time(name, zone)
        return _epoch_time(unit)(name, dtype)

    return parse


def _iso_time(name: str, zone: str = "UTC") -> pl.Expr:
    """ISO 8601 text with or without an offset (naive: in ``zone``), "T" or a space."""
    text = _text(name).str.replace(" ", "T", literal=True).str.replace(r"[zZ]$", "+00:00")
    with_offset = text.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", time_unit="us", time_zone="UTC", strict=False)
    naive = _in_zone(text.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", time_unit="us", strict=False), zone)
    return pl.coalesce(with_offset, naive)


# --- pmacct print plugin CSV ---------------------------------------------------------------

#: pmacct print-plugin CSV column -> canonical column.
PMACCT_COLUMNS = {
    "PEER_SRC_IP": "exporter", "TIMESTAMP_START": "first", "TIMESTAMP_END": "last", "SRC_IP": "src_addr",
    "DST_IP": "dst_addr", "SRC_PORT": "src_port", "DST_PORT": "dst_port", "PROTOCOL": "protocol",
    "PACKETS": "packets", "BYTES": "bytes", "SAMPLING_RATE": "sampling_rate", "IN_IFACE": "input_if",
    "OUT_IFACE": "output_if",
}  # fmt: skip


def read_pmacct_csv(path, options: ReadOptions | None = None, report: RejectReport | None = None) -> pl.DataFrame:
    """Records of a CSV file of pmacct's print plugin (see the module doc)."""
    options, report, path = options or ReadOptions(), _report(report), Path(path)
    data = _read_bytes(path)
    header = data.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
    present = {c.strip() for c in header.split(",")}
    wanted = ("TIMESTAMP_START", "TIMESTAMP_END", "SRC_IP", "DST_IP", "PROTOCOL", "PACKETS", "BYTES")
    missing = [c for c in wanted if c not in present]
    if missing:
        raise FlowFileError(
            f"{path}: not pmacct print-plugin CSV with the primitives alphaqos needs: the header lacks "
            f"{', '.join(missing)} (it reads {_clip(header)!r}; see docs/flows.md for the nfacctd settings)"
        )
    try:
        raw = pl.read_csv(io.BytesIO(data), infer_schema=False, truncate_ragged_lines=True,
                          row_index_name="_line", row_index_offset=2)  # fmt: skip
    except pl.exceptions.PolarsError as exc:
        raise FlowFileError(f"{path}: cannot be read as CSV: {_first_line(exc)}") from None
    mapping = {canonical: column for column, canonical in PMACCT_COLUMNS.items() if column in raw.columns}
    preset = ReadOptions(exporter=options.exporter, sampling=options.sampling, mapping=mapping,
                         time_zone=options.time_zone, window_us=options.window_us)  # fmt: skip
    return _mapped(raw, path, preset, report, location="line", time=_pmacct_time(options.time_zone))


def _pmacct_time(zone: str):
    """pmacct's timestamps: text (``timestamps_rfc3339`` or not) or epoch
    seconds with a fraction (``timestamps_since_epoch``)."""
    epoch = _epoch_time("s")

    def parse(name: str, dtype: pl.DataType) -> pl.Expr:
        numeric = _text(name).str.contains(r"^[0-9]+(\.[0-9]+)?$")
        return pl.when(numeric).then(epoch(name, dtype)).otherwise(_iso_time(name, zone))

    return parse


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
    location number, ``_json`` False marks a line that is not JSON,
    ``_received`` the record's receive time if the format gives one), reject
    what cannot be used into ``report`` and return the rest, conformed.
    ``blank_lines``: rows of nulls are blank CSV lines, skipped."""
    if "_json" not in raw.columns:
        raw = raw.with_columns(pl.lit(True).alias("_json"))
    if "_received" not in raw.columns:
        raw = raw.with_columns(pl.lit(None, pl.String).alias("_received"))
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
        **{n: _count(n) for n in _COUNTS},
        **{n: _int(n) for n in _OPTIONAL_INTS},
    }
    frame = raw.with_columns(**{f"_p_{n}": e for n, e in parsed.items()}, _p_received=time("_received", types["_received"]))
    # The file's rate where it gives a known one (> 0), else the one given for the exporter.
    rate = pl.col("_p_sampling_rate")
    frame = frame.with_columns(
        pl.when(rate > 0).then(rate).otherwise(_default_sampling(options)).alias("_rate"),
        pl.col("_p_received").dt.epoch("us").alias("_received_us"),
    )

    def present(n):
        return pl.col(n).is_not_null()

    def unparsed(n):
        return present(n) & pl.col(f"_p_{n}").is_null()

    negative = {n: _text(n).cast(pl.Float64, strict=False) < 0 for n in (*_COUNTS, "sampling_rate")}
    checks: list[tuple[Reason, str, pl.Expr]] = [(Reason.NOT_JSON, "_text", ~pl.col("_json"))]
    checks += [(Reason.MISSING, n, ~present(n)) for n in REQUIRED if n != "exporter"]
    checks += [(Reason.BAD_TIME, n, unparsed(n)) for n in ("first", "last")]
    checks += [(Reason.BAD_NUMBER, n, unparsed(n) & ~negative.get(n, pl.lit(False)).fill_null(False))
               for n in (*_COUNTS, *_OPTIONAL_INTS)]  # fmt: skip
    checks += [(Reason.BAD_ADDRESS, n, ~pl.col(n).cast(pl.String).str.contains(_ADDRESS)) for n in ("src_addr", "dst_addr")]
    checks += [(Reason.UNKNOWN_PROTOCOL, "protocol", unparsed("protocol"))]
    checks += [(Reason.NO_EXPORTER, "exporter", ~present("exporter"))]
    window = options.window_us
    received = pl.col("_received_us")
    checks += schema.impossible(
        pl.col("_p_first"), pl.col("_p_last"), {n: pl.col(f"_p_{n}") for n in _COUNTS}, pl.col("_rate"),
        negative=negative,
        earliest=None if window is None else received - window,
        latest=None if window is None else received + window,
        max_packet_bytes=schema.packet_limit(pl.col("_p_exporter"), options.max_packet_bytes),
    )  # fmt: skip
    reason, column = schema.first_reason(checks)
    frame = frame.with_columns(reason.alias("_reason"), column.alias("_column"))

    report.rows += frame.height
    rejected = frame.filter(pl.col("_reason").is_not_null())
    if rejected.height:
        _report_rejects(rejected, path, report, location)
    kept = frame.filter(pl.col("_reason").is_null())
    report.accepted += kept.height
    kept = kept.with_columns(
        pl.col("_rate").alias("_p_sampling_rate"),
        *(pl.col(f"_p_{n}").fill_null(0) for n in ("src_port", "dst_port", "input_if", "output_if")),
    )
    return schema.conform(kept.select(pl.col(f"_p_{n}").alias(n) for n in parsed))


def _report_rejects(rejected: pl.DataFrame, path: Path, report: RejectReport, location: str) -> None:
    for exporter, why, count in rejected.group_by("_p_exporter", "_reason").len().iter_rows():
        report.by_exporter[(exporter, why)] += count
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
            elif why == Reason.OUT_OF_WINDOW:
                detail = f"{column}={row[column]!r}, received {row['_received']}"
            elif why in (Reason.BYTES_PER_PACKET, Reason.BYTES_WITHOUT_PACKETS, Reason.EMPTY):
                detail = f"bytes={row['bytes']!r} packets={row['packets']!r}"
            elif why == Reason.OVERFLOW:
                detail = f"{column}={row[column]!r} at 1:{row['_rate']}"
            else:
                detail = f"{column}={row[column]!r}"
            kept.append(Reject(where, Reason(why), detail))
        report.add(Reason(why), count, kept)


def _default_sampling(options: ReadOptions) -> pl.Expr:
    """The rate given for a record's exporter; 0 (unknown) if none."""
    if options.sampling is None:
        return pl.lit(0, pl.Int64)
    if isinstance(options.sampling, Mapping):
        return pl.col("_p_exporter").replace_strict(dict(options.sampling), default=0, return_dtype=pl.Int64)
    return pl.lit(int(options.sampling), pl.Int64)


# IPv4 dotted quad, or IPv6 text (loosely: hex digits and colons, perhaps a
# dotted quad at the end; what the prefixes of α sources and sinks need).
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_ADDRESS = rf"^(?:{_OCTET}(?:\.{_OCTET}){{3}}|[0-9A-Fa-f]{{0,4}}(?::[0-9A-Fa-f]{{0,4}}){{2,7}}(?::{_OCTET}(?:\.{_OCTET}){{3}})?)$"


def _text(name: str) -> pl.Expr:
    """A raw column as text (already stripped by :func:`_finish`)."""
    return pl.col(name).cast(pl.String)


def _int(name: str, dtype: pl.DataType = pl.Int64) -> pl.Expr:
    """Whole numbers, also written as ``8.0``; null if not one (of ``dtype``)."""
    text = _text(name)
    real = text.cast(pl.Float64, strict=False)
    whole_real = pl.when(real.is_finite() & (real == real.floor())).then(real.cast(dtype, strict=False))
    return pl.coalesce(text.cast(dtype, strict=False), whole_real)


def _count(name: str) -> pl.Expr:
    """A counter: a whole number from 0 to 2**64 - 1; null if not one."""
    return _int(name, pl.UInt64)


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
    sampling = {"*": options.sampling} if isinstance(options.sampling, int) else dict(options.sampling or {})
    decoder = netflow.Decoder(sampling, window_us=options.window_us, max_packet_bytes=options.max_packet_bytes)
    frame, problems = netflow.read_pcap(path, decoder=decoder)
    # Impossible records: the readers' reasons, by exporter; the rest (datagrams, sets) is undecodable.
    for (exporter, why), n in decoder.rejected.items():
        report.by_exporter[(exporter, why)] += n
        report.add(why, n, [Reject(f"{path}", why, f"{n:,} records from {exporter}")])
    problems = [p for p in problems if p.reason != "rejected"]
    rejected = sum(decoder.rejected.values())
    report.rows += frame.height + rejected + len(problems)
    report.accepted += frame.height
    if problems:
        report.add(Reason.UNDECODABLE, len(problems),
                   [Reject(f"{path}", Reason.UNDECODABLE, str(p)) for p in problems[: report.max_examples]])  # fmt: skip
    return frame


def iter_records(format: str, path, options: ReadOptions | None = None, report: RejectReport | None = None):
    """The records of ``path`` in ``format`` as a sequence of canonical
    tables: block by block for the formats read as streams (nfdump,
    GoFlow2), the whole file as one table for the others."""
    stream = STREAMS.get(format)
    if stream is not None:
        yield from stream(path, options, report)
    else:
        yield READERS[format](path, options, report)


READERS: dict[str, Reader] = {
    "nfdump": read_nfdump_csv,
    "pmacct": read_pmacct_csv,
    "goflow2": read_goflow2,
    "csv": read_csv_mapped,
    "parquet": read_parquet_mapped,
    "pcap": read_pcap_exports,
}

#: Formats read block by block (:func:`iter_records`).
STREAMS: dict[str, Callable] = {"nfdump": iter_nfdump_csv, "goflow2": iter_goflow2}
