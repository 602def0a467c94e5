"""Decoding (and encoding) of flow export datagrams: NetFlow v5, NetFlow v9
(RFC 3954) and IPFIX (RFC 7011), into the canonical flow table
(:mod:`.schema`).

Decoding
    :class:`Decoder` keeps the state an export stream needs: templates per
    (exporter, version, observation domain / source id, template id),
    sampler rates learnt from options records, and the IPFIX system init
    time (field 160). ``Decoder.feed(datagram, exporter)`` decodes one UDP
    payload; ``Decoder.take()`` returns the records decoded so far as a
    canonical DataFrame and forgets them (``detach()`` then ``build()`` do
    the same in two steps, the second possibly in another thread).
    :func:`decode` feeds a list of datagrams and returns ``(frame,
    problems)``; :func:`read_pcap` does it for a capture file.

    Each template is compiled once into a numpy structured dtype when all
    its fields have a fixed length (any length: 1, 2, 4 and 8 bytes are
    integers, others byte arrays, so reduced-size encoding, RFC 7011
    Section 6.2, is handled). ``feed`` only parses headers and templates and
    keeps each data set's bytes, with what its header and the sampling
    state said at that moment; ``take()`` joins the sets of each template
    and decodes them in one ``np.frombuffer`` call, building columns, never
    per-record objects, and one polars DataFrame. Templates with
    variable-length fields (RFC 7011 Section 7) are decoded record by
    record.

Problems
    Malformed input never raises out of ``feed``: each problem is a
    :class:`Problem` (exporter, reason, short description), counted by
    reason in ``Decoder.counts`` and per exporter in
    ``Decoder.exporter_counts``. Reasons: ``truncated`` (header, set or
    template shorter than it says; a data set whose last bytes are a
    record cut short rather than zero padding, as when a template is longer
    than its set; a variable-length field running past its set, the rest
    of the set dropped), ``bad_length`` (a set length beyond the datagram
    or below its header; a v5 header whose count disagrees with the
    datagram's length: v5 is never padded, so the datagram is dropped),
    ``unknown_version``, ``empty_template`` (a v9 template, or an IPFIX
    options template, with no fields), ``bad_template`` (a field of length
    0, a scope count above the field count), ``unknown_template`` (data for
    a template not seen yet), ``zero_sampling_interval`` (an options
    record giving sampling interval 0: ignored, the rate stays unknown),
    ``malformed`` (anything else).

Impossible records
    ``take()``/``build()`` reject the records that the readers of
    :mod:`.readers` would reject, with the same checks
    (:func:`.schema.impossible`) and reasons (:class:`.schema.Reason`),
    counted per (exporter, reason) in ``Decoder.rejected``: an address
    field of the wrong length (ipv4Address 4 bytes, ipv6Address 16); an
    empty record, bytes with zero packets (where the template has a packet
    count), more bytes than ``max_packet_bytes`` (default 65,535; an
    exporter's MTU for jumbograms, :func:`.schema.packet_limit`) times the
    packets; a count times its sampling rate above 2**64 - 1 (counts are
    unsigned 64-bit from the wire on, never read as signed); a time field
    whose microseconds overflow int64 (computed unsigned, never wrapped);
    ``last`` before ``first``; and a time outside the plausible window:
    more than ``window_us`` (default 1 day) from the datagram's receive
    time (``feed``'s ``received_us``: the collector's clock, a capture's
    time stamp) and from the header's export time alike; always within
    1970-2199; and for v5/v9
    times relative to the uptime, not after the datagram's export (with
    :data:`EXPORT_SLACK_US` for the header's whole seconds). Garbage times
    thus never make a partition of their own.

Unknown templates
    Data sets for a template not yet seen are counted as ``unknown_template``
    when they arrive and held (within the caps below); when the template
    arrives, the held sets are decoded with the header times of their own
    datagram and counted in ``Decoder.stats["recovered_sets"]``. Sets still
    held are lost with the decoder. An IPFIX template record with no fields withdraws the template
    (RFC 7011 Section 8.1); a newer template with the same id replaces it.

Memory
    What an exporter can make the decoder hold is capped, per exporter and
    over all exporters, whatever it sends and however many source
    addresses it uses: held data sets (:data:`HELD_SETS` sets and
    :data:`HELD_BYTES_PER_EXPORTER` bytes per exporter, :data:`HELD_BYTES`
    in all; the oldest set is evicted first) and templates
    (:data:`TEMPLATES_PER_EXPORTER` templates and
    :data:`TEMPLATE_FIELDS_PER_EXPORTER` fields per exporter,
    :data:`TEMPLATES` and :data:`TEMPLATE_FIELDS` in all; the template
    announced least recently is evicted first, and its data becomes
    ``unknown_template`` until it is announced again, as exporters do
    periodically, RFC 7011 Section 8.1 and RFC 3954 Section 5.2), the
    sequence numbers expected and the sampler state (:data:`EXPORTERS`
    keys each: (exporter, version, domain) and (exporter, domain); the key
    set least recently is forgotten first). Each eviction is a problem
    (``held_evicted``, ``template_evicted``, ``state_evicted``), counted
    like the others. ``Decoder.held_bytes`` and ``Decoder.template_fields``
    are the decoder's own accounting. Decoded records wait in the decoder
    until ``take()``/``detach()``: the collector flushes them by count as
    well as by time, so they are bounded too (``Decoder.pending``).

Loss at the exporter
    Gaps in sequence numbers are counted in ``Decoder.stats`` (and per
    exporter in ``Decoder.exporter_stats``): ``lost_records`` for v5 and
    IPFIX (whose sequence numbers count records), ``lost_datagrams`` for v9
    (which counts datagrams). A number a little behind the expected one
    (reordering, a duplicate) is not counted. A jump of more than
    :data:`MAX_GAP_RECORDS` records or :data:`MAX_GAP_DATAGRAMS` datagrams,
    forward or back, is no loss but a restart of the exporter or garbage:
    it is counted in ``sequence_jumps`` and the count starts afresh.

Time
    v5 and v9 ``FIRST``/``LAST_SWITCHED`` are milliseconds of system uptime:
    a record's time is the header's export time minus (sys_uptime -
    switched), the difference taken modulo 2**32 as a signed number so that
    an uptime wrap between the flow and the export is harmless. IPFIX:
    flowStart/EndMilliseconds (152/153), else flowStart/EndSeconds
    (150/151), else flowStart/EndSysUpTime (22/21) plus
    systemInitTimeMilliseconds (160, from the same record or an options
    record). A record with none of these gets the export time.

Sampling
    The rate (1 in N packets) of a record is, first, the one configured for
    its exporter (``sampling={exporter: N}``); else a samplingInterval (34)
    in the record itself; else the rate of the sampler named by the record's
    samplerId (48) or selectorId (302), learnt from options records with 34,
    FLOW_SAMPLER_RANDOM_INTERVAL (50), or samplingPacketInterval (305) and
    samplingPacketSpace (306) as (interval + space) / interval; else the
    last rate an options record without a sampler id gave for the
    observation domain; else, for v5, the header's sampling_interval (low
    14 bits; the top 2 bits are the mode); else unknown: 0, not 1 (an
    interval of 0 anywhere says nothing). ``sampling={"*": N}`` configures
    all exporters. Records of unknown rate are counted per exporter in
    ``Decoder.exporter_stats[e]["sampling_unknown"]``.

ICMP
    ICMP_TYPE (v9 32, IPFIX icmpTypeCodeIPv4 32 / icmpTypeCodeIPv6 139, or
    the type and code apart, 176-179) of ICMP and ICMPv6 records goes into
    ``dst_port`` as type x 256 + code (see :mod:`.schema`).

Encoding
    :func:`encode_ipfix` and :func:`encode_v9` turn a canonical table into
    export datagrams (templates, a sampler options template and its data,
    then data sets), for tests and synthetic data; :func:`encode_v5` the
    IPv4 rows into v5 datagrams. Times are exported in milliseconds, so
    sub-millisecond parts are lost; each datagram's export time is the
    second after the latest ``last`` of its records.

Tests: ``tests/test_flows_netflow.py``. Benchmark: ``benches/flows_decode.py``.
"""

from __future__ import annotations

import functools
import math
import socket
import struct
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import polars as pl

from . import schema

__all__ = ["Decoder", "Problem", "decode", "encode_ipfix", "encode_v5", "encode_v9", "read_pcap", "HELD_BYTES",
           "HELD_BYTES_PER_EXPORTER", "HELD_SETS", "TEMPLATES", "TEMPLATES_PER_EXPORTER", "TEMPLATE_FIELDS",
           "TEMPLATE_FIELDS_PER_EXPORTER"]  # fmt: skip

#: Data sets held per exporter while their template is unknown.
HELD_SETS = 256
#: Bytes of data sets held while their template is unknown, per exporter
#: and over all exporters (oldest evicted first; see "Memory" in the module doc).
HELD_BYTES_PER_EXPORTER = 4 << 20
HELD_BYTES = 64 << 20
#: Templates kept, and their fields summed, per exporter and over all
#: exporters (the least recently announced evicted first).
TEMPLATES_PER_EXPORTER = 4096
TEMPLATES = 16_384
TEMPLATE_FIELDS_PER_EXPORTER = 65_536
TEMPLATE_FIELDS = 262_144
#: Problems kept in ``Decoder.problems`` (all are counted).
KEPT_PROBLEMS = 10_000
#: Exporters whose counters are kept apart; the counters of any further
#: source address are summed under :data:`OTHER_EXPORTERS` (their records
#: keep their own exporter), so spoofed sources cannot grow them.
EXPORTERS = 10_000
OTHER_EXPORTERS = "(other exporters)"

# Information element ids (IPFIX, RFC 7012 / IANA registry; v9 ids 1-127
# are the same, RFC 3954 Section 8).
OCTETS, PACKETS, PROTOCOL, SRC_PORT, SRC_V4, INPUT_IF = 1, 2, 4, 7, 8, 10
DST_PORT, DST_V4, OUTPUT_IF = 11, 12, 14
LAST_SWITCHED, FIRST_SWITCHED = 21, 22
SRC_V6, DST_V6 = 27, 28
SAMPLING_INTERVAL, SAMPLING_ALGORITHM, SAMPLER_ID, SAMPLER_RANDOM_INTERVAL = 34, 35, 48, 50
OCTETS_TOTAL, PACKETS_TOTAL = 85, 86
START_S, END_S, START_MS, END_MS = 150, 151, 152, 153
SYSTEM_INIT_MS = 160
SELECTOR_ID, PACKET_INTERVAL, PACKET_SPACE = 302, 305, 306
# ICMP type x 256 + code: v9 ICMP_TYPE / IPFIX icmpTypeCodeIPv4 (32) and
# icmpTypeCodeIPv6 (139); or type and code apart (176/177 IPv4, 178/179 IPv6).
ICMP_TYPE_CODE, ICMP6_TYPE_CODE = 32, 139
ICMP_TYPE, ICMP_CODE, ICMP6_TYPE, ICMP6_CODE = 176, 177, 178, 179

VARIABLE = 0xFFFF  # a field length meaning "variable" (RFC 7011 Section 7)
MASK32 = 0xFFFFFFFF
INT64_MAX = 2**63 - 1
LATEST_US = 7_258_118_400_000_000  # 2200-01-01T00:00:00Z: later times are taken as garbage
#: A flow may end this long after the export time of its v5/v9 datagram
#: (whose header time has whole seconds) before it is impossible.
EXPORT_SLACK_US = 1_000_000
#: Sequence-number gaps above these are not losses but a jump (an exporter
#: restarted, or garbage): v5 and IPFIX count records, v9 datagrams.
MAX_GAP_RECORDS = 1 << 20
MAX_GAP_DATAGRAMS = 1 << 16

_V5_HEADER = struct.Struct(">HHIIIIBBH")  # 24 bytes, Cisco NetFlow v5 export format
_V9_HEADER = struct.Struct(">HHIIII")  # RFC 3954 Section 5.1: 20 bytes
_IPFIX_HEADER = struct.Struct(">HHIII")  # RFC 7011 Section 3.1: 16 bytes
_SET = struct.Struct(">HH")


@dataclass(frozen=True)
class Problem:
    """One malformed or undecodable piece of an export stream."""

    exporter: str
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.exporter}: {self.reason}: {self.detail}"


class _Malformed(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class _Time(NamedTuple):
    """The times a datagram's header gives its records."""

    export_us: int  # export time, microseconds since the epoch
    uptime_ms: int | None  # v9 sys_uptime (None for IPFIX)
    received_us: int | None = None  # when the datagram was received (None: not known)


@dataclass
class _Template:
    key: tuple  # (exporter, version, domain, template id)
    fields: list[tuple[int, int, int]]  # (enterprise, id, length)
    scope_count: int = 0
    options: bool = False
    fixed: bool = True
    record_len: int = 0  # the minimum for variable-length templates
    dtype: np.dtype | None = None
    index: dict[int, int] = field(default_factory=dict)  # IANA id -> position of its first field

    def compile(self) -> None:
        self.fixed = all(length != VARIABLE for _, _, length in self.fields)
        self.record_len = sum(1 if length == VARIABLE else length for _, _, length in self.fields)
        for position, (enterprise, ident, _) in enumerate(self.fields):
            if enterprise == 0:
                self.index.setdefault(ident, position)
        if self.fixed:
            # only the fields the decoder reads (the first of each IANA id), at their offsets: a template
            # of thousands of fields costs no more than the few it is read for
            offsets = np.concatenate([[0], np.cumsum([length for _, _, length in self.fields])[:-1]]).tolist()
            used = sorted(self.index.values())
            self.dtype = np.dtype({"names": [f"f{i}" for i in used], "formats": [_field_dtype(self.fields[i][2]) for i in used],
                                   "offsets": [offsets[i] for i in used], "itemsize": self.record_len})  # fmt: skip

    @property
    def is_flow(self) -> bool:
        ix = self.index
        return not self.options and (OCTETS in ix or PACKETS in ix or SRC_V4 in ix or SRC_V6 in ix
                                     or OCTETS_TOTAL in ix or PACKETS_TOTAL in ix)  # fmt: skip


@functools.lru_cache(maxsize=256)
def _field_dtype(length: int):
    if length in (1, 2, 4, 8):
        return np.dtype(f">u{length}")
    return np.dtype(("u1", (length,)))


class _Chunk(NamedTuple):
    """The records of one data set, kept raw until ``take()``, with what
    their datagram's header and the decoder state said when they came."""

    template: _Template
    records: object  # bytes of fixed-length records, or a dict of object arrays
    n: int
    exporter: str
    export_us: int
    uptime_ms: int  # the v5/v9 header's sys_uptime; -1 for IPFIX
    init_ms: int  # IPFIX systemInitTimeMilliseconds known then; -1: none
    configured: int  # configured sampling rate; 0: none
    default_rate: int  # 0: unknown
    samplers: dict  # sampler id -> rate, a snapshot (never changed in place)
    window_us: int | None  # half-width of the plausible window (None: 1970-2199 only)
    reference_us: int  # the time the plausible window is centred on: reception, else export


_NO_SAMPLERS: dict = {}

# NetFlow v5 records as a template of IPFIX ids (enterprise -1: unused bytes).
_V5_TEMPLATE = _Template(("", 5, 0, 0), [
    (0, SRC_V4, 4), (0, DST_V4, 4), (-1, 15, 4), (0, INPUT_IF, 2), (0, OUTPUT_IF, 2), (0, PACKETS, 4),
    (0, OCTETS, 4), (0, FIRST_SWITCHED, 4), (0, LAST_SWITCHED, 4), (0, SRC_PORT, 2), (0, DST_PORT, 2),
    (-1, 0, 1), (-1, 6, 1), (0, PROTOCOL, 1), (-1, 5, 1), (-1, 16, 2), (-1, 17, 2), (-1, 9, 1), (-1, 13, 1),
    (-1, 0, 2),
])  # fmt: skip
_V5_TEMPLATE.compile()
assert _V5_TEMPLATE.record_len == 48


class Decoder:
    """Decoding state for any number of exporters; see the module doc."""

    def __init__(self, sampling: dict[str, int] | None = None, *, window_us: int | None = schema.WINDOW_US,
                 max_packet_bytes: int | dict[str, int] | None = None):  # fmt: skip
        self.sampling = dict(sampling or {})
        self.window_us = window_us
        self.max_packet_bytes = max_packet_bytes  # see schema.packet_limit
        # (exporter, version, domain, template id) -> template, least recently announced first
        self.templates: OrderedDict[tuple, _Template] = OrderedDict()
        self._exporter_templates: dict[str, OrderedDict] = {}  # exporter -> its template keys, oldest first
        self._exporter_fields: Counter[str] = Counter()  # exporter -> fields of its templates
        self.template_fields = 0  # fields of all templates kept
        self.sampler_rates: dict[tuple, dict] = {}  # (exporter, domain) -> {sampler id: N}
        self.domain_rates: dict[tuple, int] = {}  # (exporter, domain) -> N from options without a sampler id
        self.default_rates: dict[tuple, int] = {}  # (exporter, domain) -> N for records naming no sampler
        self.init_ms: dict[tuple, int] = {}  # (exporter, domain) -> systemInitTimeMilliseconds
        # (exporter, version, domain...) -> sequence number expected, least recently set first (EXPORTERS kept)
        self._next_sequence: OrderedDict[tuple, int] = OrderedDict()
        self._domains: OrderedDict[tuple, None] = OrderedDict()  # (exporter, domain) of sampler state, least recent first
        # data sets of unknown templates: [exporter, key, body, when] per set (body None once gone),
        # oldest first, per exporter and over all
        self.held: dict[str, deque] = {}
        self._held_all: deque = deque()
        self._held_bytes: Counter[str] = Counter()
        self.held_bytes = 0
        self.held_sets = 0
        self.counts: Counter[str] = Counter()
        self.problems: list[Problem] = []
        self.stats: Counter[str] = Counter()
        # per exporter: problems by reason, stats, and records rejected by schema.Reason
        self.exporter_counts: dict[str, Counter] = {}
        self.exporter_stats: dict[str, Counter] = {}
        self.rejected: Counter = Counter()  # (exporter, schema.Reason) -> records
        self._named: set[str] = set()  # exporters with counters of their own (EXPORTERS)
        self._chunks: list[_Chunk] = []
        self._rows = 0

    # --- input ----------------------------------------------------------

    def feed(self, datagram: bytes, exporter: str, received_us: int | None = None) -> int:
        """Decode one export datagram from ``exporter``, received at
        ``received_us`` (epoch microseconds; None: not known, the export time
        stands for it); returns the number of flow records decoded (problems
        are recorded, never raised)."""
        self._stat(exporter, "datagrams")
        self._received = received_us
        before = self._rows
        try:
            if len(datagram) < 2:
                raise _Malformed("truncated", f"datagram of {len(datagram)} bytes")
            version = (datagram[0] << 8) | datagram[1]
            if version == 10:
                self._ipfix(datagram, exporter)
            elif version == 9:
                self._v9(datagram, exporter)
            elif version == 5:
                self._v5(datagram, exporter)
            else:
                raise _Malformed("unknown_version", f"version {version}")
        except _Malformed as exc:
            self._problem(exporter, exc.reason, exc.detail)
        except (struct.error, ValueError, IndexError, TypeError, OverflowError) as exc:  # a guard for what we did not foresee
            self._problem(exporter, "malformed", f"{type(exc).__name__}: {exc}")
        decoded = self._rows - before
        self._stat(exporter, "records", decoded)
        return decoded

    def _counted(self, exporter: str) -> str:
        """The name ``exporter``'s counters go under (see :data:`EXPORTERS`)."""
        if exporter in self._named:
            return exporter
        if len(self._named) < EXPORTERS:
            self._named.add(exporter)
            return exporter
        return OTHER_EXPORTERS

    def _stat(self, exporter: str, key: str, n: int = 1) -> None:
        exporter = self._counted(exporter)
        self.stats[key] += n
        stats = self.exporter_stats.get(exporter)
        if stats is None:  # setdefault: atomic, so build() in another thread cannot replace a new Counter
            stats = self.exporter_stats.setdefault(exporter, Counter())
        stats[key] += n

    def _problem(self, exporter: str, reason: str, detail: str, n: int = 1) -> None:
        self.counts[reason] += n
        self.exporter_counts.setdefault(self._counted(exporter), Counter())[reason] += n
        self._problem_only(exporter, reason, detail)

    def _problem_only(self, exporter: str, reason: str, detail: str) -> None:
        if len(self.problems) < KEPT_PROBLEMS:
            self.problems.append(Problem(exporter, reason, detail))

    # NetFlow v5 (Cisco's fixed export format: a 24-byte header, 48-byte records)
    def _v5(self, data: bytes, exporter: str) -> None:
        if len(data) < _V5_HEADER.size:
            raise _Malformed("truncated", f"v5 header needs 24 bytes, got {len(data)}")
        _, count, uptime, secs, nsecs, sequence, engine_type, engine_id, sampling = _V5_HEADER.unpack_from(data)
        if len(data) < 24 + 48 * count:
            raise _Malformed("truncated", f"v5 count {count} needs {24 + 48 * count} bytes, got {len(data)}")
        if len(data) != 24 + 48 * count:  # v5 datagrams are never padded: header or length is wrong
            raise _Malformed("bad_length", f"v5 count {count} means {24 + 48 * count} bytes, the datagram has {len(data)}")
        self._sequence((exporter, 5, engine_type, engine_id), sequence, count, "lost_records")  # counts flows
        if count == 0:
            return
        records = data[24 : 24 + 48 * count]
        interval = sampling & 0x3FFF  # top 2 bits: the sampling mode; low 14: the interval (0: not said)
        export_us = secs * 1_000_000 + nsecs // 1000
        self._chunks.append(_Chunk(_V5_TEMPLATE, records, count, exporter, export_us, uptime, -1, self._configured(exporter),
                                   interval, _NO_SAMPLERS, self.window_us, self._reference(export_us)))  # fmt: skip
        self._rows += count

    # NetFlow v9, RFC 3954
    def _v9(self, data: bytes, exporter: str) -> None:
        if len(data) < _V9_HEADER.size:
            raise _Malformed("truncated", f"v9 header needs 20 bytes, got {len(data)}")
        _, _, uptime, secs, sequence, source_id = _V9_HEADER.unpack_from(data)
        self._sequence((exporter, 9, source_id), sequence, 1, "lost_datagrams")  # counts datagrams (RFC 3954 5.1)
        when = _Time(secs * 1_000_000, uptime, self._received)
        for set_id, start, end in _sets(data, 20, "flowset"):
            if set_id == 0:
                self._templates(data, start, end, exporter, 9, source_id, options=False)
            elif set_id == 1:
                self._v9_options_templates(data, start, end, exporter, source_id)
            elif set_id >= 256:
                self._data(exporter, 9, source_id, set_id, data[start:end], when)
            # 2-255: reserved (RFC 3954 Section 5.2); skipped

    # IPFIX, RFC 7011
    def _ipfix(self, data: bytes, exporter: str) -> None:
        if len(data) < _IPFIX_HEADER.size:
            raise _Malformed("truncated", f"IPFIX header needs 16 bytes, got {len(data)}")
        _, length, export_s, sequence, domain = _IPFIX_HEADER.unpack_from(data)
        if length > len(data) or length < 16:
            raise _Malformed("bad_length", f"IPFIX message length {length}, datagram {len(data)} bytes")
        data = data[:length]
        when = _Time(export_s * 1_000_000, None, self._received)
        key = (exporter, 10, domain)
        in_order = self._sequence(key, sequence, None, "lost_records")
        records = 0  # data records in this message, which the next one's sequence number counts (RFC 7011 3.1)
        for set_id, start, end in _sets(data, 16, "set"):
            if set_id == 2:
                self._templates(data, start, end, exporter, 10, domain, options=False)
            elif set_id == 3:
                self._templates(data, start, end, exporter, 10, domain, options=True)
            elif set_id >= 256:
                decoded = self._data(exporter, 10, domain, set_id, data[start:end], when)
                records = None if decoded is None or records is None else records + decoded
        if records is not None and in_order:
            self._expect(key, (sequence + records) & MASK32)

    def _sequence(self, key: tuple, sequence: int, advance: int | None, stat: str) -> bool:
        """Count the records or datagrams a gap in an exporter's sequence
        numbers says were lost on the way. A number up to the largest gap
        (:data:`MAX_GAP_RECORDS`, :data:`MAX_GAP_DATAGRAMS`) behind the one
        expected is a reordering or a duplicate: not counted, and the
        expectation stays. Any other number (far ahead or far behind) is a
        jump: the exporter restarted or the datagram is garbage; it is
        counted in ``sequence_jumps``, not as a loss, and the count starts
        afresh from it. ``advance``: what this datagram adds to the
        sequence, None if not known yet. Returns False for a late datagram
        (whose sequence must not move the expectation)."""
        exporter = key[0]
        limit = MAX_GAP_DATAGRAMS if stat == "lost_datagrams" else MAX_GAP_RECORDS
        expected = self._next_sequence.get(key)
        if expected is not None:
            gap = (sequence - expected) & MASK32
            if gap >= (1 << 32) - limit:  # a little behind: late or repeated
                return False
            if gap > limit:
                self._stat(exporter, "sequence_jumps")
                self._problem_only(exporter, "sequence_jump", f"sequence number {sequence}, {expected} expected")
            elif gap:
                self._stat(exporter, stat, gap)
        if advance is None:
            self._next_sequence.pop(key, None)
        else:
            self._expect(key, (sequence + advance) & MASK32)
        return True

    def _expect(self, key: tuple, sequence: int) -> None:
        """Expect ``sequence`` next from ``key``; beyond :data:`EXPORTERS`
        keys the one set least recently is forgotten (``state_evicted``)."""
        expected = self._next_sequence
        expected[key] = sequence
        expected.move_to_end(key)
        if len(expected) > EXPORTERS:
            old, _ = expected.popitem(last=False)
            self._problem(old[0], "state_evicted", f"sequence numbers of {old[1:]} forgotten: more than {EXPORTERS:,} kept")

    def _domain(self, key: tuple) -> None:
        """Sampler state of ``key`` (exporter, domain) was set; beyond
        :data:`EXPORTERS` keys the one set least recently is forgotten
        (``state_evicted``): its records' rate is then unknown until its
        options are sent again."""
        self._domains[key] = None
        self._domains.move_to_end(key)
        if len(self._domains) > EXPORTERS:
            old, _ = self._domains.popitem(last=False)
            for state in (self.sampler_rates, self.domain_rates, self.default_rates, self.init_ms):
                state.pop(old, None)
            self._problem(old[0], "state_evicted", f"sampler state of domain {old[1]} forgotten: more than {EXPORTERS:,} kept")

    def _templates(self, data, pos, end, exporter, version, domain, *, options: bool) -> None:
        """Template records (RFC 3954 5.2, RFC 7011 3.4.1) or IPFIX options
        template records (RFC 7011 3.4.2.2) from ``data[pos:end]``."""
        ipfix = version == 10
        head = 6 if options else 4
        while end - pos >= head:
            if options:
                tid, count, scopes = struct.unpack_from(">HHH", data, pos)
            else:
                (tid, count), scopes = _SET.unpack_from(data, pos), 0
            pos += head
            if tid == 0 and count == 0:
                break  # padding to the end of the set
            if tid < 256:
                raise _Malformed("bad_template", f"template id {tid} below 256")
            if count == 0:
                if ipfix and not options:
                    self._forget((exporter, version, domain, tid))  # a withdrawal (RFC 7011 8.1)
                    continue
                raise _Malformed("empty_template", f"template {tid} with no fields")
            if scopes > count or (options and scopes == 0):
                raise _Malformed("bad_template", f"options template {tid}: scope count {scopes} of {count} fields")
            fields = []
            for _ in range(count):
                if end - pos < 4:
                    raise _Malformed("truncated", f"template {tid} ends within its fields")
                ident, length = _SET.unpack_from(data, pos)
                pos += 4
                enterprise = 0
                if ident & 0x8000 and ipfix:  # enterprise bit: a 4-byte enterprise number follows
                    if end - pos < 4:
                        raise _Malformed("truncated", f"template {tid} ends within an enterprise number")
                    (enterprise,) = struct.unpack_from(">I", data, pos)
                    ident &= 0x7FFF
                    pos += 4
                if length == 0 or (length == VARIABLE and not ipfix):
                    raise _Malformed("bad_template", f"template {tid}: field {ident} of length {length}")
                fields.append((enterprise, ident, length))
            self._install(_Template((exporter, version, domain, tid), fields, scopes, options))

    def _v9_options_templates(self, data, pos, end, exporter, source_id) -> None:
        """RFC 3954 Section 6.1: template id, scope length and option length in
        bytes, then scope fields (type, length), then option fields."""
        while end - pos >= 6:
            tid, scope_len, option_len = struct.unpack_from(">HHH", data, pos)
            pos += 6
            if tid == 0 and scope_len == 0 and option_len == 0:
                break  # padding
            if scope_len % 4 or option_len % 4 or pos + scope_len + option_len > end:
                raise _Malformed("bad_template", f"v9 options template {tid}: lengths {scope_len}+{option_len}")
            if scope_len + option_len == 0:
                raise _Malformed("empty_template", f"v9 options template {tid} with no fields")
            fields = []
            for i in range((scope_len + option_len) // 4):
                ident, length = _SET.unpack_from(data, pos)
                pos += 4
                if length == 0:
                    raise _Malformed("bad_template", f"options template {tid}: field {ident} of length 0")
                # scope types (1 system, 2 interface, ...) share numbers with
                # fields; enterprise -1 keeps them from being read as fields
                fields.append((-1 if i < scope_len // 4 else 0, ident, length))
            self._install(_Template((exporter, 9, source_id, tid), fields, scope_len // 4, True))

    def _install(self, template: _Template) -> None:
        template.compile()
        key, exporter, size = template.key, template.key[0], len(template.fields)
        self._forget(key)
        self.templates[key] = template
        self._exporter_templates.setdefault(exporter, OrderedDict())[key] = None
        self._exporter_fields[exporter] += size
        self.template_fields += size
        # the caps: this exporter's oldest templates first, then the oldest of all (never the new one)
        mine = self._exporter_templates[exporter]
        while len(mine) > 1 and (len(mine) > TEMPLATES_PER_EXPORTER or self._exporter_fields[exporter] > TEMPLATE_FIELDS_PER_EXPORTER):
            self._evict_template(next(iter(mine)))
        while len(self.templates) > 1 and (len(self.templates) > TEMPLATES or self.template_fields > TEMPLATE_FIELDS):
            self._evict_template(next(iter(self.templates)))
        held = self.held.get(exporter)
        if held:
            waiting = [h for h in held if h[1] == key and h[2] is not None]
            for entry in waiting:
                body, when = entry[2], entry[3]
                self._drop_held(entry)
                self.stats["recovered_sets"] += 1
                self._decode_set(template, body, when)
            if waiting:
                self.held[exporter] = deque(h for h in held if h[2] is not None)
                if not self.held[exporter]:
                    del self.held[exporter]

    def _forget(self, key: tuple) -> _Template | None:
        """Remove a template from the table and its accounting."""
        template = self.templates.pop(key, None)
        if template is not None:
            exporter = key[0]
            mine = self._exporter_templates[exporter]
            del mine[key]
            if not mine:
                del self._exporter_templates[exporter]
            self._exporter_fields[exporter] -= len(template.fields)
            if self._exporter_fields[exporter] <= 0:
                del self._exporter_fields[exporter]
            self.template_fields -= len(template.fields)
        return template

    def _evict_template(self, key: tuple) -> None:
        template = self._forget(key)
        self._problem(key[0], "template_evicted", f"template {key[3]} of domain {key[2]} ({len(template.fields)} fields): "
                      "over the template table's cap")  # fmt: skip

    def _data(self, exporter, version, domain, tid, body: bytes, when: _Time) -> int | None:
        """Decode a data set; returns its number of records (None: unknown template)."""
        key = (exporter, version, domain, tid)
        template = self.templates.get(key)
        if template is None:
            self._problem(exporter, "unknown_template", f"data set for template {tid} of domain {domain}")
            self._hold(exporter, key, bytes(body), when)
            return None
        return self._decode_set(template, body, when)

    def _hold(self, exporter: str, key: tuple, body: bytes, when: _Time) -> None:
        """Hold a data set until its template comes, within the caps
        (evicting this exporter's oldest sets first, then the oldest of all)."""
        if len(body) > HELD_BYTES_PER_EXPORTER:
            self._problem(exporter, "held_evicted", f"a data set of {len(body)} bytes is over the cap of held data")
            return
        entry = [exporter, key, body, when]
        mine = self.held.setdefault(exporter, deque())
        mine.append(entry)
        self._held_all.append(entry)
        self._held_bytes[exporter] += len(body)
        self.held_bytes += len(body)
        self.held_sets += 1
        while len(mine) > HELD_SETS or self._held_bytes[exporter] > HELD_BYTES_PER_EXPORTER:
            self._evict_held(mine.popleft())
        while self.held_bytes > HELD_BYTES:
            self._evict_held(self._held_all.popleft())
        if len(self._held_all) > 2 * self.held_sets + 1024:  # sets gone elsewhere: compact
            self._held_all = deque(h for h in self._held_all if h[2] is not None)

    def _drop_held(self, entry: list) -> None:
        exporter, body = entry[0], entry[2]
        if body is None:
            return
        entry[2] = None
        self._held_bytes[exporter] -= len(body)
        self.held_bytes -= len(body)
        self.held_sets -= 1
        if self._held_bytes[exporter] <= 0:
            del self._held_bytes[exporter]

    def _evict_held(self, entry: list) -> None:
        if entry[2] is None:
            return
        exporter, key = entry[0], entry[1]
        size = len(entry[2])
        self._drop_held(entry)
        mine = self.held.get(exporter)
        if mine is not None:
            while mine and mine[0][2] is None:
                mine.popleft()
            if not mine:
                del self.held[exporter]
        self._problem(exporter, "held_evicted", f"a held data set of template {key[3]} ({size} bytes): over the cap of held data")

    def _decode_set(self, template: _Template, body: bytes, when: _Time) -> int:
        exporter, _, domain, tid = template.key
        if template.fixed:
            n = len(body) // template.record_len
            rest = body[n * template.record_len :]
            if any(rest):  # padding is zeros (RFC 7011 3.3.1, RFC 3954 5.3): this is a record cut short
                self._problem(exporter, "truncated", f"data set of template {tid} ends {len(rest)} bytes into a "
                              f"record of {template.record_len} bytes")  # fmt: skip
            if n == 0:
                return 0
            # flow records stay bytes until take() decodes them all at once
            records = body[: n * template.record_len]
            if template.options:
                records = np.frombuffer(records, template.dtype, n)
        else:
            records, n, overrun = _variable_records(template, body)
            if overrun:
                self._problem(exporter, "truncated", f"a variable-length field of template {tid} runs past its set "
                              f"(record {n + 1}; {overrun} bytes dropped)")  # fmt: skip
            if n == 0:
                return 0
        if template.options:
            self._options(template, records, n)
        elif template.is_flow:
            uptime = -1 if when.uptime_ms is None else when.uptime_ms
            self._chunks.append(_Chunk(
                template, records, n, exporter, when.export_us, uptime, self.init_ms.get((exporter, domain), -1),
                self._configured(exporter), self.default_rates.get((exporter, domain), 0),
                self.sampler_rates.get((exporter, domain), _NO_SAMPLERS), self.window_us,
                when.export_us if when.received_us is None else when.received_us,
            ))  # fmt: skip
            self._rows += n
        return n

    def _configured(self, exporter: str) -> int:
        """The configured sampling rate of ``exporter`` (``"*"``: of all); 0: none."""
        return self.sampling.get(exporter, self.sampling.get("*", 0))

    def _reference(self, export_us: int) -> int:
        return export_us if self._received is None else self._received

    def _options(self, template: _Template, records, n: int) -> None:
        """Learn sampler rates and the system init time from options data."""
        exporter, _, domain, _ = template.key
        index = template.index

        def ints(ident):
            return _as_int(records[f"f{index[ident]}"]) if ident in index else None

        interval = ints(SAMPLING_INTERVAL)
        if interval is None:
            interval = ints(SAMPLER_RANDOM_INTERVAL)
        if interval is None and PACKET_INTERVAL in index and PACKET_SPACE in index:
            # 1 in (selected + skipped) / selected packets (RFC 5477 Section 8.2.2)
            selected, skipped = ints(PACKET_INTERVAL), ints(PACKET_SPACE)
            interval = np.where(selected > 0, (selected + skipped) // np.maximum(selected, 1), 0)
        sampler = ints(SAMPLER_ID)
        if sampler is None:
            sampler = ints(SELECTOR_ID)
        init = _as_uint(records[f"f{index[SYSTEM_INIT_MS]}"]) if SYSTEM_INIT_MS in index else None
        key = (exporter, domain)
        if init is not None:  # kept unsigned; a value beyond int64 stays beyond the limit (time_overflow), never wraps
            self.init_ms[key] = min(int(init[-1]), INT64_MAX)
            self._domain(key)
        if interval is None:
            return
        samplers = dict(self.sampler_rates.get(key, _NO_SAMPLERS))
        for i in range(n):
            rate = int(interval[i])
            if rate <= 0:  # "0" says nothing: the rate stays unknown, not 1:1
                self._problem(exporter, "zero_sampling_interval", "an options record gives sampling interval 0"
                              + ("" if sampler is None else f" for sampler {int(sampler[i])}"))  # fmt: skip
                continue
            if sampler is not None:
                samplers[int(sampler[i])] = rate
            else:
                self.domain_rates[key] = rate
        self.sampler_rates[key] = samplers
        rates = set(samplers.values())
        default = self.domain_rates.get(key)
        if default is None and len(rates) == 1:  # one rate on this domain: it applies to records naming no sampler
            default = rates.pop()
        self.default_rates[key] = default or 0
        self._domain(key)

    # --- output --------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Records decoded and not yet taken."""
        return self._rows

    def take(self) -> pl.DataFrame:
        """The records decoded since the last ``take()``, as a canonical
        table; rows are grouped by template, in arrival order within one."""
        return self.build(self.detach())

    def detach(self) -> list:
        """The records decoded since the last ``take()`` or ``detach()``, still
        raw: cheap, so a receive loop can hand them to ``build`` in another
        thread (which may run beside ``feed``)."""
        chunks, self._chunks, self._rows = self._chunks, [], 0
        return chunks

    def build(self, chunks: list) -> pl.DataFrame:
        """The canonical table of records from ``detach()``."""
        if not chunks:
            return schema.empty()
        groups: dict[int, list[_Chunk]] = {}
        for chunk in chunks:
            groups.setdefault(id(chunk.template), []).append(chunk)
        parts = [_columns(group) for group in groups.values()]
        names = sorted({c.exporter for c in chunks})
        number = {name: i for i, name in enumerate(names)}
        exporter_index = np.repeat(
            np.array([number[c.exporter] for group in groups.values() for c in group], np.int64),
            np.array([c.n for group in groups.values() for c in group], np.int64),
        )
        columns = {name: np.concatenate([p[name] for p in parts]) for name in COLUMNS}
        addresses = [_addresses(parts, side) for side in ("src", "dst")]
        frame, rejected, unknown = finish(columns, names, exporter_index, addresses, self.max_packet_bytes)
        for (exporter, why), n in rejected.items():
            self.rejected[(self._counted(exporter), why)] += n
            self._problem_only(exporter, "rejected", f"{n} records: {why}")
        for exporter, n in unknown.items():
            self._stat(exporter, "sampling_unknown", n)
        return frame

    def exporters(self) -> list[str]:
        """Every exporter heard from, sorted."""
        return sorted(set(self.exporter_stats) | set(self.exporter_counts) | {e for e, _ in self.rejected})

    def snapshot(self) -> Snapshot:
        """The counters as they are now, copied (for a report)."""
        return Snapshot(Counter(self.counts), Counter(self.stats), {e: Counter(c) for e, c in list(self.exporter_counts.items())},
                        {e: Counter(c) for e, c in list(self.exporter_stats.items())}, Counter(self.rejected))  # fmt: skip


@dataclass(frozen=True)
class Snapshot:
    """A decoder's counters at one moment (:meth:`Decoder.snapshot`, and the
    native decoder's): what the collector's report reads."""

    counts: Counter
    stats: Counter
    exporter_counts: dict[str, Counter]
    exporter_stats: dict[str, Counter]
    rejected: Counter

    def exporters(self) -> list[str]:
        """Every exporter heard from, sorted."""
        return sorted(set(self.exporter_stats) | set(self.exporter_counts) | {e for e, _ in self.rejected})


#: The columns a decoder computes for each record before :func:`finish`.
COLUMNS = ("first", "last", "src_port", "dst_port", "protocol", "bytes", "packets", "sampling_rate", "input_if",
           "output_if", "earliest", "latest", "packets_known", "address_length", "time_overflow")  # fmt: skip


def table(columns: dict, names: list[str], exporter_index, addresses: list[pl.Series]) -> pl.DataFrame:
    """The decoded records as a table (not yet canonical) from their
    :data:`COLUMNS` (arrays), their exporters (``names`` and an index into
    it per record) and their address columns, for :func:`finish` (the
    native decoder, :mod:`.native`, builds its columns in Rust)."""
    # values a template gave more bytes than the canonical type holds
    # (malformed, or odd exporters) must not stop the table being built
    for name, bits in (("src_port", 16), ("dst_port", 16), ("protocol", 8)):
        columns[name] = columns[name] & ((1 << bits) - 1)
    for name in ("input_if", "output_if"):
        columns[name] = np.where((columns[name] >= 0) & (columns[name] < 1 << 31), columns[name], 0)
    frame = pl.DataFrame(columns).with_columns(pl.Series("exporter", names, pl.String).gather(exporter_index), *addresses)
    return frame.with_columns(
        pl.from_epoch("first", "us").dt.replace_time_zone("UTC"),
        pl.from_epoch("last", "us").dt.replace_time_zone("UTC"),
    )


def finish(columns: dict, names: list[str], exporter_index, addresses: list[pl.Series], max_packet_bytes=None):
    """The canonical table of decoded records (see :func:`table`); the
    impossible records are rejected exactly as the readers reject them
    (:func:`.schema.impossible`). The Python decoder's last step, the
    reference the native decoder's own checks are tested against; returns
    ``(frame, {(exporter, schema.Reason): records rejected}, {exporter:
    records of unknown sampling rate})``, for the caller to count."""
    frame = table(columns, names, exporter_index, addresses)
    checks = schema.impossible(
        pl.col("first"), pl.col("last"), {"bytes": pl.col("bytes"), "packets": pl.col("packets")}, pl.col("sampling_rate"),
        earliest=pl.col("earliest"), latest=pl.col("latest"), address_length=pl.col("address_length"),
        time_overflow=pl.col("time_overflow"), packets_known=pl.col("packets_known"),
        max_packet_bytes=schema.packet_limit(pl.col("exporter"), max_packet_bytes),
    )  # fmt: skip
    reason, _ = schema.first_reason(checks)
    frame = frame.with_columns(reason.alias("_reason"))
    rejected: dict = {}
    bad = frame.filter(pl.col("_reason").is_not_null())
    if bad.height:
        rejected = {(exporter, schema.Reason(why)): n for exporter, why, n in bad.group_by("exporter", "_reason").len().rows()}
        frame = frame.filter(pl.col("_reason").is_null())
    unknown = dict(frame.filter(pl.col("sampling_rate") == 0).group_by("exporter").len().rows())
    return schema.conform(frame), rejected, unknown


def _columns(group: list[_Chunk]) -> dict:
    """The canonical columns (as arrays) of the chunks of one template."""
    template = group[0].template
    index = template.index
    if template.fixed:
        records = np.frombuffer(b"".join(c.records for c in group), template.dtype)
    elif len(group) == 1:
        records = group[0].records
    else:
        records = {k: np.concatenate([c.records[k] for c in group]) for k in group[0].records}
    counts = np.array([c.n for c in group], np.int64)
    n = int(counts.sum())

    def per_chunk(attribute):
        return np.repeat(np.array([getattr(c, attribute) for c in group], np.int64), counts)

    def col(*idents):
        for ident in idents:
            if ident in index:
                return _as_int(records[f"f{index[ident]}"])
        return None

    def ints(*idents):
        values = col(*idents)
        return np.zeros(n, np.int64) if values is None else values

    def counter(*idents):
        for ident in idents:
            if ident in index:
                return _as_uint(records[f"f{index[ident]}"])
        return np.zeros(n, np.uint64)

    def ucol(*idents):
        for ident in idents:
            if ident in index:
                return _as_uint(records[f"f{index[ident]}"])
        return None

    out = {
        "n": n, "src_port": ints(SRC_PORT), "dst_port": ints(DST_PORT), "protocol": ints(PROTOCOL),
        "bytes": counter(OCTETS, OCTETS_TOTAL), "packets": counter(PACKETS, PACKETS_TOTAL),
        "input_if": ints(INPUT_IF), "output_if": ints(OUTPUT_IF),
        "packets_known": np.full(n, PACKETS in index or PACKETS_TOTAL in index),
    }  # fmt: skip
    # ICMP type and code go where NetFlow v5 and nfdump put them: dst_port = type x 256 + code
    icmp = col(ICMP_TYPE_CODE, ICMP6_TYPE_CODE)
    if icmp is None and (ICMP_TYPE in index or ICMP6_TYPE in index):
        code = col(ICMP_CODE, ICMP6_CODE)
        icmp = (col(ICMP_TYPE, ICMP6_TYPE) << 8) | (0 if code is None else code)
    if icmp is not None:
        is_icmp = (out["protocol"] == 1) | (out["protocol"] == 58)
        out["dst_port"] = np.where(is_icmp & (icmp != 0), icmp, out["dst_port"])
    # an address field of the wrong length (ipv4Address is 4 bytes, ipv6Address 16: RFC 7012
    # Section 3.2; no reduced-size or variable-length encoding) is no address
    wrong_length = False
    for side, v4, v6 in (("src", SRC_V4, SRC_V6), ("dst", DST_V4, DST_V6)):
        if v4 in index:
            wrong_length |= template.fields[index[v4]][2] != 4
            out[side + "4"] = col(v4).astype(np.uint32)
        elif v6 in index:
            wrong_length |= template.fields[index[v6]][2] != 16
            out[side + "6"] = _v6_text(records[f"f{index[v6]}"])
        else:
            out[side + "4"] = np.zeros(n, np.uint32)
    out["address_length"] = np.full(n, wrong_length)

    # times (see the module doc for the order of preference)
    # Times are computed in unsigned 64 bits and any value whose microseconds
    # would not fit in int64 is marked (time_overflow: rejected), never wrapped.
    export = per_chunk("export_us")
    uptime_relative = False
    overflow = np.zeros(n, bool)

    def micros(values, scale):
        nonlocal overflow
        values = np.asarray(values, np.uint64)
        big = values > np.uint64(INT64_MAX // scale)
        overflow = overflow | big
        return np.where(big, np.uint64(0), values).astype(np.int64) * scale

    first, last = ucol(START_MS), ucol(END_MS)
    scale = 1000
    if first is None:
        first, last, scale = ucol(START_S), ucol(END_S), 1_000_000
    if first is not None:
        first = micros(first, scale)
        last = first if last is None else micros(last, scale)
    else:
        start, end = ucol(FIRST_SWITCHED), ucol(LAST_SWITCHED)
        end = start if end is None else end
        if start is None:
            first = last = export
        elif template.key[1] in (5, 9):  # relative to the header's sys_uptime
            uptime_relative = True
            uptime = per_chunk("uptime_ms")
            start, end = start & np.uint64(MASK32), end & np.uint64(MASK32)  # 4 bytes in v5/v9; more is garbage
            first, last = _uptime_to_us(start, uptime, export), _uptime_to_us(end, uptime, export)
        else:
            init = ucol(SYSTEM_INIT_MS)
            known = per_chunk("init_ms") >= 0 if init is None else np.ones(n, bool)
            init = per_chunk("init_ms").astype(np.uint64) if init is None else init
            # each term is checked alone first, so that the sum cannot wrap in 64 bits
            limit = np.uint64(INT64_MAX // 1000)
            for part in (init, start, end):
                overflow = overflow | (known & (part > limit))
            init, start, end = (np.where(part > limit, np.uint64(0), part) for part in (init, start, end))
            first = np.where(known, micros(init + start, 1000), export)
            last = np.where(known, micros(init + end, 1000), export)
    out["first"], out["last"], out["time_overflow"] = first, last, overflow
    # the plausible window: the reference time (reception, else export) +- the window, within 1970-2199;
    # a time relative to the uptime cannot lie after the export of its datagram
    # the window is centred on the receive time and on the export time alike: a record must lie within
    # both (a capture without time stamps, or a clock far off, cannot make an old record plausible)
    reference = per_chunk("reference_us")
    window = group[0].window_us
    earliest = np.zeros(n, np.int64) if window is None else np.maximum(np.maximum(reference, export) - window, 0)
    latest = (np.full(n, LATEST_US - 1, np.int64) if window is None
              else np.minimum(np.minimum(reference, export) + window, LATEST_US - 1))  # fmt: skip
    if uptime_relative:
        latest = np.minimum(latest, export + EXPORT_SLACK_US)
    out["earliest"], out["latest"] = earliest, latest

    # sampling: configured, else in the record, else its sampler's, else the domain's
    rates = per_chunk("default_rate")
    ids = col(SAMPLER_ID, SELECTOR_ID)
    if ids is not None:
        offset = 0
        maps = {id(c.samplers) for c in group}
        for c in group if len(maps) > 1 else [None]:
            samplers = group[0].samplers if c is None else c.samplers
            part = slice(0, n) if c is None else slice(offset, offset + c.n)
            offset += 0 if c is None else c.n
            if not samplers:
                continue
            chunk_ids, chunk_rates = ids[part], rates[part]
            for ident in np.unique(chunk_ids):
                rate = samplers.get(int(ident))
                if rate is not None:
                    chunk_rates[chunk_ids == ident] = rate
    interval = col(SAMPLING_INTERVAL)
    if interval is not None:  # the record's own interval, where it gives one (0: not said)
        rates = np.where(interval > 0, interval, rates)
    configured = per_chunk("configured")
    out["sampling_rate"] = np.where(configured > 0, configured, rates)
    return out


def _addresses(parts: list[dict], side: str) -> pl.Series:
    """The ``side`` address column of the parts of a table."""
    v4 = np.concatenate([p[side + "4"] if side + "4" in p else np.zeros(p["n"], np.uint32) for p in parts])
    offset, indices, values = 0, [], []
    for p in parts:
        if side + "6" in p:
            indices.extend(range(offset, offset + p["n"]))
            values.extend(p[side + "6"])
        offset += p["n"]
    return address_column(side, v4, indices, values)


def address_column(side: str, v4: np.ndarray, v6_rows, v6_text) -> pl.Series:
    """The ``side`` address column: IPv4 (``v4``, uint32) converted to text
    in one vectorised expression, the IPv6 text (``v6_text``) scattered in
    at ``v6_rows``."""
    octets = [_OCTETS.gather((v4 >> shift) & 255) for shift in (24, 16, 8, 0)]  # no int -> text formatting
    text = pl.select(pl.concat_str([pl.lit(o) for o in octets], separator=".")).to_series()
    if len(v6_rows):
        text = text.scatter(v6_rows, v6_text)
    return text.alias(f"{side}_addr")


_OCTETS = pl.Series([str(i) for i in range(256)])


def _uptime_to_us(switched, uptime_ms, export_us) -> np.ndarray:
    """Microseconds since the epoch of a sys_uptime-relative time: the
    uptime difference is taken modulo 2**32 and read as signed."""
    delta = (np.asarray(uptime_ms, np.int64) - np.asarray(switched, np.int64)) & MASK32
    delta = np.where(delta >= 1 << 31, delta - (1 << 32), delta)
    return export_us - delta * 1000


def _as_int(values) -> np.ndarray:
    """A field's values as int64, whatever its (reduced-size) length (see
    :func:`_as_uint`; values above 2**63 wrap: only for fields that never
    hold them, or are masked afterwards)."""
    return _as_uint(values).astype(np.int64)


def _as_uint(values) -> np.ndarray:
    """A field's values as uint64, whatever its (reduced-size) length."""
    values = np.asarray(values)
    if values.dtype.kind == "u" and values.ndim == 1:
        return values.astype(np.uint64)
    if values.dtype == object:  # variable-length decoding produced ints
        wide = [int(v) if isinstance(v, int) else int.from_bytes(v[-8:], "big") for v in values]
        return np.array(wide, np.uint64)
    if values.ndim == 2:  # unusual lengths: big-endian bytes
        width = values.shape[1]
        if width > 8:
            values = values[:, -8:]
            width = 8
        out = np.zeros(len(values), np.uint64)
        for i in range(width):
            out = (out << np.uint64(8)) | values[:, i].astype(np.uint64)
        return out
    return values.astype(np.uint64)


def _v6_text(values) -> list[str]:
    values = np.asarray(values)
    if values.dtype == object:
        raw = [bytes(v) if not isinstance(v, int) else v.to_bytes(16, "big") for v in values]
    else:
        raw = [row.tobytes() for row in values.reshape(len(values), -1)]
    ntop = socket.inet_ntop
    return [ntop(socket.AF_INET6, b) if len(b) == 16 else "::" for b in raw]


def _sets(data: bytes, pos: int, what: str):
    """(set id, body start, body end) of the sets after a header; a set
    whose length runs past the datagram or is under 4 bytes is malformed."""
    size = len(data)
    while size - pos >= 4:
        set_id, length = _SET.unpack_from(data, pos)
        if length < 4 or pos + length > size:
            raise _Malformed("bad_length", f"{what} {set_id} of length {length} at offset {pos}, datagram {size} bytes")
        yield set_id, pos + 4, pos + length
        pos += length
    if pos != size and any(data[pos:]):
        raise _Malformed("truncated", f"{size - pos} bytes after the last {what}")


def _variable_records(template: _Template, body: bytes):
    """Records of a template with variable-length fields (RFC 7011 Section
    7: a 1-byte length, or 255 and a 2-byte length). Integers up to 8 bytes
    become ints; longer values stay bytes. Returns (columns, records,
    bytes dropped): a record whose field runs past the set, and what
    follows it, is dropped; zero bytes after the last record are padding."""
    columns = [[] for _ in template.fields]
    pos, end, n = 0, len(body), 0
    lengths = [length for _, _, length in template.fields]
    while end - pos >= template.record_len:
        start = pos
        values = []
        for length in lengths:
            if length == VARIABLE:
                if pos >= end:
                    break
                length = body[pos]
                pos += 1
                if length == 255:
                    if pos + 2 > end:
                        break
                    length = (body[pos] << 8) | body[pos + 1]
                    pos += 2
            if pos + length > end:
                break
            raw = body[pos:pos + length]
            values.append(int.from_bytes(raw, "big") if length <= 8 else raw)
            pos += length
        else:
            for column, value in zip(columns, values):
                column.append(value)
            n += 1
            continue
        pos = start
        break
    overrun = end - pos if any(body[pos:end]) else 0
    out = {}
    for i, column in enumerate(columns):
        array = np.empty(len(column), object)
        array[:] = column
        out[f"f{i}"] = array
    return out, n, overrun


def decode(datagrams, exporter: str = "0.0.0.0", *, sampling: dict[str, int] | None = None):
    """Decode ``datagrams`` (bytes, or ``(exporter, bytes)`` pairs) in order;
    returns ``(canonical DataFrame, list of Problem)``."""
    decoder = Decoder(sampling)
    for item in datagrams:
        if isinstance(item, tuple):
            decoder.feed(item[1], item[0])
        else:
            decoder.feed(item, exporter)
    return decoder.take(), decoder.problems


def read_pcap(path, **options):
    """Decode the flow exports in a pcap or pcapng file: ``(frame, problems)``
    (see :func:`.pcap.read_pcap`)."""
    from .pcap import read_pcap as read

    return read(path, **options)


# --- encoding -----------------------------------------------------------------

_V4_FIELDS = [(SRC_V4, 4), (DST_V4, 4), (SRC_PORT, 2), (DST_PORT, 2), (PROTOCOL, 1), (OCTETS, 8), (PACKETS, 8),
              (INPUT_IF, 4), (OUTPUT_IF, 4)]  # fmt: skip
_V6_FIELDS = [(SRC_V6, 16), (DST_V6, 16)] + _V4_FIELDS[2:]


def _prepare(frame: pl.DataFrame):
    frame = schema.conform(frame)
    is_v6 = frame["src_addr"].str.contains(":").to_numpy()
    first_ms = frame["first"].dt.epoch("ms").to_numpy().astype(np.int64)
    last_ms = frame["last"].dt.epoch("ms").to_numpy().astype(np.int64)
    rates = frame["sampling_rate"].to_numpy().astype(np.int64)
    distinct = sorted({int(r) for r in rates})
    if len(distinct) > 255:
        raise ValueError("more than 255 distinct sampling rates")
    sampler = {rate: i + 1 for i, rate in enumerate(distinct)}
    return frame, is_v6, first_ms, last_ms, rates, sampler


def _record_batches(frame, rows, v6: bool, starts, ends, time_length: int, ids, first_room: int, room: int):
    """``(rows, bytes)`` of consecutive batches of the records of ``rows``
    encoded with template 256 (IPv4) or 257 (IPv6), all at once through a
    numpy structured array; the first batch fits ``first_room`` bytes, the
    others ``room``."""
    layout = [length for _, length in (_V6_FIELDS if v6 else _V4_FIELDS)] + [time_length, time_length, 1]
    dtype = np.dtype([(f"f{i}", _field_dtype(length)) for i, length in enumerate(layout)])
    records = np.zeros(len(rows), dtype)
    family = socket.AF_INET6 if v6 else socket.AF_INET
    for i, column in enumerate(("src_addr", "dst_addr")):
        packed = b"".join(socket.inet_pton(family, a) for a in frame[column].gather(rows).to_list())
        records[f"f{i}"] = np.frombuffer(packed, np.uint8).reshape(len(rows), 16) if v6 else np.frombuffer(packed, ">u4")
    for i, column in enumerate(("src_port", "dst_port", "protocol", "bytes", "packets", "input_if", "output_if"), 2):
        records[f"f{i}"] = frame[column].to_numpy()[rows]
    last = len(layout) - 1
    records[f"f{last - 2}"], records[f"f{last - 1}"], records[f"f{last}"] = starts[rows], ends[rows], ids[rows]
    raw, size = records.tobytes(), dtype.itemsize
    start, limit = 0, max(1, first_room // size)
    while start < len(rows):
        stop = min(len(rows), start + limit)
        yield rows[start:stop], raw[start * size : stop * size]
        start, limit = stop, max(1, room // size)


def encode_ipfix(frame: pl.DataFrame, *, domain: int = 1, export_time: int | None = None, mtu: int = 1400,
                 sequence: int = 0) -> list[bytes]:
    """IPFIX messages (RFC 7011) of at most ``mtu`` bytes carrying ``frame``
    (canonical columns; the exporter column is ignored: encode each
    exporter's rows apart). The first message holds the templates (256 for
    IPv4, 257 for IPv6: addresses, ports, protocol, 8-byte octet and packet
    counts, interfaces, flowStart/EndMilliseconds, samplerId), a sampler
    options template (258: scope samplerId 48, then samplingInterval 34)
    and its records, one per distinct ``sampling_rate``; data sets follow.
    Sequence numbers count data records from ``sequence``. ``export_time``
    (seconds) defaults, per message, to the second after the latest
    ``last`` of its records (of all records, for a message of templates)."""
    frame, is_v6, first_ms, last_ms, rates, sampler = _prepare(frame)
    overall = int(math.ceil(last_ms.max() / 1000)) if len(frame) else 0
    times = [(START_MS, 8), (END_MS, 8)]
    templates = b""
    for tid, fields in ((256, _V4_FIELDS), (257, _V6_FIELDS)):
        all_fields = fields + times + [(SAMPLER_ID, 1)]
        templates += struct.pack(">HH", tid, len(all_fields)) + b"".join(struct.pack(">HH", i, n) for i, n in all_fields)
    options = struct.pack(">HHHHHHH", 258, 2, 1, SAMPLER_ID, 1, SAMPLING_INTERVAL, 4)
    option_data = b"".join(struct.pack(">BI", ident, rate) for rate, ident in sampler.items())
    sets = [(_set(2, templates), 0, 0), (_set(3, options), 0, 0), (_set(258, option_data), len(sampler), 0)]
    ids = np.array([sampler[int(r)] for r in rates], np.int64)
    for tid, v6 in ((256, False), (257, True)):
        rows = np.flatnonzero(is_v6 == v6)
        room = mtu - 16 - 4
        for batch, body in _record_batches(frame, rows, v6, first_ms, last_ms, 8, ids, room, room):
            sets.append((_set(tid, body), len(batch), int(math.ceil(last_ms[batch].max() / 1000))))
    messages, body, count, latest = [], b"", 0, 0

    def message():
        export_s = export_time if export_time is not None else (latest or overall)
        return _ipfix_message(body, export_s, sequence, domain)

    for data_set, records, ends in sets:
        if body and 16 + len(body) + len(data_set) > mtu:
            messages.append(message())
            sequence += count  # IPFIX sequence numbers count data records (RFC 7011 3.1)
            body, count, latest = b"", 0, 0
        body += data_set
        count += records
        latest = max(latest, ends)
    if body:
        messages.append(message())
    return messages


def _set(set_id: int, body: bytes) -> bytes:
    return struct.pack(">HH", set_id, 4 + len(body)) + body


def _ipfix_message(body: bytes, export_s: int, sequence: int, domain: int) -> bytes:
    return _IPFIX_HEADER.pack(10, 16 + len(body), export_s & MASK32, sequence & MASK32, domain) + body


def encode_v9(frame: pl.DataFrame, *, source_id: int = 1, mtu: int = 1400, sequence: int = 0,
              boot_ms: int | None = None) -> list[bytes]:
    """NetFlow v9 datagrams (RFC 3954) carrying ``frame``: templates 256
    (IPv4) and 257 (IPv6) with FIRST/LAST_SWITCHED relative to sys_uptime
    and FLOW_SAMPLER_ID, an options template 258 (scope System; fields
    FLOW_SAMPLER_ID 48, FLOW_SAMPLER_MODE 49, FLOW_SAMPLER_RANDOM_INTERVAL 50)
    and its records, then data flowsets. The router is taken to have booted
    at ``boot_ms`` (default: a second before the first flow); each datagram's
    export time is the whole second after its latest ``last``."""
    frame, is_v6, first_ms, last_ms, rates, sampler = _prepare(frame)
    if boot_ms is None:
        boot_ms = int(first_ms.min()) - 1000 if len(frame) else 0
    times = [(FIRST_SWITCHED, 4), (LAST_SWITCHED, 4)]
    templates = b""
    for tid, fields in ((256, _V4_FIELDS), (257, _V6_FIELDS)):
        all_fields = fields + times + [(SAMPLER_ID, 1)]
        templates += struct.pack(">HH", tid, len(all_fields)) + b"".join(struct.pack(">HH", i, n) for i, n in all_fields)
    options = struct.pack(">HHH", 258, 4, 12) + struct.pack(">HHHHHHHH", 1, 4, SAMPLER_ID, 1, 49, 1, SAMPLER_RANDOM_INTERVAL, 4)
    option_data = b"".join(struct.pack(">IBBI", 0, ident, 2, rate) for rate, ident in sampler.items())
    option_data += b"\x00" * (-len(option_data) % 4)
    head = [(0, templates, 2), (1, options, 1), (258, option_data, len(sampler))]
    first_up, last_up = (first_ms - boot_ms) & MASK32, (last_ms - boot_ms) & MASK32
    ids = np.array([sampler[int(r)] for r in rates], np.int64)
    datagrams = []
    pending: list[tuple[int, bytes, int]] = list(head)
    latest = int(boot_ms)

    def emit():
        nonlocal sequence, pending
        body = b"".join(_set(sid, b) for sid, b, _ in pending)
        count = sum(c for _, _, c in pending)
        export_s = -(-latest // 1000)
        uptime = (export_s * 1000 - boot_ms) & MASK32
        datagrams.append(_V9_HEADER.pack(9, count, uptime, export_s & MASK32, sequence & MASK32, source_id) + body)
        sequence += 1
        pending = []

    for tid, v6 in ((256, False), (257, True)):
        rows = np.flatnonzero(is_v6 == v6)
        room = mtu - 20 - 4 - 3  # header, flowset header, padding
        used = sum(4 + len(b) for _, b, _ in pending)
        for batch, body in _record_batches(frame, rows, v6, first_up, last_up, 4, ids, room - used, room):
            latest = max(latest, int(last_ms[batch].max()))
            body += b"\x00" * (-len(body) % 4)  # flowsets are padded to 32 bits (RFC 3954 5.3)
            pending.append((tid, body, len(batch)))
            emit()
    if pending:
        emit()
    return datagrams


def encode_v5(frame: pl.DataFrame, *, sampling_interval: int = 0, boot_ms: int | None = None) -> list[bytes]:
    """NetFlow v5 datagrams (30 records each) of the IPv4 rows of ``frame``
    (counters are 32 bits and interfaces 16 in v5: higher bits are lost)."""
    frame = schema.conform(frame).filter(~pl.col("src_addr").str.contains(":"))
    first_ms = frame["first"].dt.epoch("ms").to_numpy().astype(np.int64)
    last_ms = frame["last"].dt.epoch("ms").to_numpy().astype(np.int64)
    if boot_ms is None:
        boot_ms = int(first_ms.min()) - 1000 if len(frame) else 0
    rows = frame.to_dicts()
    out = []
    for start in range(0, len(rows), 30):
        part = rows[start:start + 30]
        export_ms = -(-int(last_ms[start:start + 30].max()) // 1000) * 1000
        body = b""
        for i, row in enumerate(part, start):
            body += struct.pack(">4s4sIHHIIIIHHBBBBHHBBH", socket.inet_aton(row["src_addr"]), socket.inet_aton(row["dst_addr"]), 0,
                                row["input_if"] & 0xFFFF, row["output_if"] & 0xFFFF, row["packets"] & MASK32, row["bytes"] & MASK32,
                                (first_ms[i] - boot_ms) & MASK32, (last_ms[i] - boot_ms) & MASK32,
                                row["src_port"], row["dst_port"], 0, 0, row["protocol"], 0, 0, 0, 0, 0, 0)  # fmt: skip
        out.append(_V5_HEADER.pack(5, len(part), (export_ms - boot_ms) & MASK32, export_ms // 1000, 0, start, 0, 0,
                                   sampling_interval) + body)  # fmt: skip
    return out
