//! The native decode path of the flow collector: `alphaqos._core.FlowDecoder`.
//!
//! It decodes NetFlow v5, NetFlow v9 (RFC 3954) and IPFIX (RFC 7011)
//! datagrams into columns, exactly as the reference decoder in Python
//! (`python/alphaqos/flows/netflow.py`, its module doc states the rules)
//! computes them in `_columns`: the same templates per (exporter, version,
//! domain, id) with the same caps and eviction, the same held data sets of
//! unknown templates, sampler state, sequence-number accounting and problem
//! reasons. The impossible-record checks of `schema.impossible` are applied
//! here too, in its order and with its reasons (`Columns::reason`); the
//! tests hold them to the Python path's.
//!
//! Datagrams come either one by one (`feed`, for tests and captures) or
//! straight from a UDP socket's descriptor in batches of `recvmmsg(2)`
//! (`recv`), with the GIL released while it waits and decodes. The records
//! wait in column vectors until `detach()` builds the canonical table's
//! columns from them (grouped by exporter and day) and hands them to polars
//! through the Arrow C data interface (`flows_arrow.rs`): no copy, no
//! Python object per record.
//!
//! Memory: besides the caps on templates and held sets, the sequence and
//! sampler state keep at most `caps.exporters` keys each (least recently
//! set evicted, `state_evicted`), and the names of exporters that hold
//! nothing are forgotten and their ids reused (`State::sweep`), so spoofed
//! source addresses grow nothing without bound.
//!
//! Tests: `tests/test_flows_native.py` (differential against the Python
//! decoder, with late templates and hostile input).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

#[path = "flows_arrow.rs"]
mod arrow;
use arrow::{Buffer, Column, Views};

/// What an exporter can make the decoder hold: netflow.py's HELD_SETS ...
/// TEMPLATE_FIELDS, which the Python side passes in (defaults: the same).
#[derive(Clone, Copy)]
struct Caps {
    held_sets: usize,
    held_bytes_per_exporter: usize,
    held_bytes: usize,
    templates_per_exporter: usize,
    templates: usize,
    template_fields_per_exporter: usize,
    template_fields: usize,
    /// exporters with counters of their own; the others' are summed under OTHER_EXPORTERS
    exporters: usize,
}

const OTHER_EXPORTERS: &str = "(other exporters)";

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            held_sets: 256,
            held_bytes_per_exporter: 4 << 20,
            held_bytes: 64 << 20,
            templates_per_exporter: 4096,
            templates: 16_384,
            template_fields_per_exporter: 65_536,
            template_fields: 262_144,
            exporters: 10_000,
        }
    }
}

const KEPT_PROBLEMS: usize = 10_000;
/// The largest packet an exporter counts unless told its MTU (schema.MAX_PACKET_BYTES).
const MAX_PACKET_BYTES: u64 = 65_535;

// Information element ids (IANA IPFIX registry; v9 ids 1-127 are the same, RFC 3954 Section 8).
const OCTETS: u16 = 1;
const PACKETS: u16 = 2;
const PROTOCOL: u16 = 4;
const SRC_PORT: u16 = 7;
const SRC_V4: u16 = 8;
const INPUT_IF: u16 = 10;
const DST_PORT: u16 = 11;
const DST_V4: u16 = 12;
const OUTPUT_IF: u16 = 14;
const LAST_SWITCHED: u16 = 21;
const FIRST_SWITCHED: u16 = 22;
const SRC_V6: u16 = 27;
const DST_V6: u16 = 28;
const ICMP_TYPE_CODE: u16 = 32;
const SAMPLING_INTERVAL: u16 = 34;
const SAMPLER_ID: u16 = 48;
const SAMPLER_RANDOM_INTERVAL: u16 = 50;
const OCTETS_TOTAL: u16 = 85;
const PACKETS_TOTAL: u16 = 86;
const ICMP6_TYPE_CODE: u16 = 139;
const START_S: u16 = 150;
const END_S: u16 = 151;
const START_MS: u16 = 152;
const END_MS: u16 = 153;
const SYSTEM_INIT_MS: u16 = 160;
const ICMP_TYPE: u16 = 176;
const ICMP_CODE: u16 = 177;
const ICMP6_TYPE: u16 = 178;
const ICMP6_CODE: u16 = 179;
const SELECTOR_ID: u16 = 302;
const PACKET_INTERVAL: u16 = 305;
const PACKET_SPACE: u16 = 306;

/// A field length meaning "variable" (RFC 7011 Section 7).
const VARIABLE: u16 = 0xFFFF;
const MASK32: u64 = 0xFFFF_FFFF;
/// 2200-01-01T00:00:00Z in epoch microseconds: later times are garbage.
const LATEST_US: i64 = 7_258_118_400_000_000;
/// A v5/v9 flow may end this long after its datagram's export (whole seconds in the header).
const EXPORT_SLACK_US: i64 = 1_000_000;
/// Sequence gaps above these are jumps, not losses (v5/IPFIX count records, v9 datagrams).
const MAX_GAP_RECORDS: u64 = 1 << 20;
const MAX_GAP_DATAGRAMS: u64 = 1 << 16;

/// Problem reasons, in the order of `REASONS`.
#[derive(Clone, Copy)]
enum Why {
    Truncated,
    BadLength,
    UnknownVersion,
    EmptyTemplate,
    BadTemplate,
    UnknownTemplate,
    ZeroSamplingInterval,
    Malformed,
    HeldEvicted,
    TemplateEvicted,
    StateEvicted,
}
const REASONS: [&str; 11] = [
    "truncated",
    "bad_length",
    "unknown_version",
    "empty_template",
    "bad_template",
    "unknown_template",
    "zero_sampling_interval",
    "malformed",
    "held_evicted",
    "template_evicted",
    "state_evicted",
];

/// Per-exporter statistics, in the order of `STATS`.
const STATS: [&str; 5] = ["datagrams", "records", "lost_records", "lost_datagrams", "sequence_jumps"];
const S_DATAGRAMS: usize = 0;
const S_RECORDS: usize = 1;
const S_LOST_RECORDS: usize = 2;
const S_LOST_DATAGRAMS: usize = 3;
const S_JUMPS: usize = 4;

struct Malformed(Why, String);
type Step<T> = Result<T, Malformed>;

fn bad<T>(why: Why, detail: String) -> Step<T> {
    Err(Malformed(why, detail))
}

/// (exporter, version, domain or source id, template id)
type Key = (u32, u8, u32, u16);

/// Where a template's fields lie and which of them the columns read.
struct Template {
    key: Key,
    /// (enterprise, id, length); enterprise -1: a v9 scope field or unused v5 bytes
    fields: Vec<(i64, u16, u16)>,
    options: bool,
    fixed: bool,
    record_len: usize,
    /// (offset, length) of each field, for fixed-length templates
    spans: Vec<(usize, usize)>,
    /// IANA id -> position of its first field of enterprise 0
    index: HashMap<u16, usize>,
    is_flow: bool,
    plan: Plan,
}

#[derive(Default)]
struct Plan {
    src_port: Option<usize>,
    dst_port: Option<usize>,
    protocol: Option<usize>,
    octets: Option<usize>,
    packets: Option<usize>,
    input_if: Option<usize>,
    output_if: Option<usize>,
    icmp: Option<usize>,
    icmp_type: Option<usize>,
    icmp_code: Option<usize>,
    src: Addr,
    dst: Addr,
    wrong_length: bool,
    packets_known: bool,
    time: Times,
    sampler: Option<usize>,
    interval: Option<usize>,
}

#[derive(Default, Clone, Copy)]
enum Addr {
    #[default]
    None,
    V4(usize),
    V6(usize),
}

#[derive(Default, Clone, Copy)]
enum Times {
    /// flowStart/End in units of `scale` microseconds (152/153 ms, 150/151 s)
    Absolute { start: usize, end: Option<usize>, scale: u64 },
    /// FIRST/LAST_SWITCHED relative to the v5/v9 header's sys_uptime
    Uptime { start: usize, end: Option<usize> },
    /// IPFIX flowStart/EndSysUpTime plus systemInitTimeMilliseconds
    SinceInit { start: usize, end: Option<usize>, init: Option<usize> },
    /// none: the export time
    #[default]
    Export,
}

impl Template {
    fn new(key: Key, fields: Vec<(i64, u16, u16)>, options: bool) -> Template {
        let fixed = fields.iter().all(|f| f.2 != VARIABLE);
        let record_len = fields.iter().map(|f| if f.2 == VARIABLE { 1 } else { f.2 as usize }).sum();
        let mut index = HashMap::new();
        let mut spans = Vec::with_capacity(fields.len());
        let mut offset = 0;
        for (position, &(enterprise, ident, length)) in fields.iter().enumerate() {
            if enterprise == 0 {
                index.entry(ident).or_insert(position);
            }
            spans.push((offset, length as usize));
            offset += length as usize;
        }
        let col = |ids: &[u16]| ids.iter().find_map(|i| index.get(i).copied());
        let is_flow = !options && col(&[OCTETS]).or(col(&[PACKETS])).or(col(&[SRC_V4])).or(col(&[SRC_V6])).or(col(&[OCTETS_TOTAL])).or(col(&[PACKETS_TOTAL])).is_some();
        let mut plan = Plan {
            src_port: col(&[SRC_PORT]),
            dst_port: col(&[DST_PORT]),
            protocol: col(&[PROTOCOL]),
            octets: col(&[OCTETS, OCTETS_TOTAL]),
            packets: col(&[PACKETS, PACKETS_TOTAL]),
            input_if: col(&[INPUT_IF]),
            output_if: col(&[OUTPUT_IF]),
            icmp: col(&[ICMP_TYPE_CODE, ICMP6_TYPE_CODE]),
            packets_known: col(&[PACKETS, PACKETS_TOTAL]).is_some(),
            sampler: col(&[SAMPLER_ID, SELECTOR_ID]),
            interval: col(&[SAMPLING_INTERVAL]),
            ..Plan::default()
        };
        if plan.icmp.is_none() {
            plan.icmp_type = col(&[ICMP_TYPE, ICMP6_TYPE]);
            plan.icmp_code = col(&[ICMP_CODE, ICMP6_CODE]);
        }
        // an address field of the wrong length (ipv4Address 4 bytes, ipv6Address 16, RFC 7012 3.2)
        for (is_src, v4, v6) in [(true, SRC_V4, SRC_V6), (false, DST_V4, DST_V6)] {
            let addr = if let Some(p) = col(&[v4]) {
                plan.wrong_length |= fields[p].2 != 4;
                Addr::V4(p)
            } else if let Some(p) = col(&[v6]) {
                plan.wrong_length |= fields[p].2 != 16;
                Addr::V6(p)
            } else {
                Addr::None
            };
            if is_src {
                plan.src = addr;
            } else {
                plan.dst = addr;
            }
        }
        plan.time = if let Some(start) = col(&[START_MS]) {
            Times::Absolute { start, end: col(&[END_MS]), scale: 1000 }
        } else if let Some(start) = col(&[START_S]) {
            Times::Absolute { start, end: col(&[END_S]), scale: 1_000_000 }
        } else if let Some(start) = col(&[FIRST_SWITCHED]) {
            let end = col(&[LAST_SWITCHED]);
            if key.1 == 5 || key.1 == 9 {
                Times::Uptime { start, end }
            } else {
                Times::SinceInit { start, end, init: col(&[SYSTEM_INIT_MS]) }
            }
        } else {
            Times::Export
        };
        Template { key, fields, options, fixed, record_len, spans, index, is_flow, plan }
    }
}

/// A big-endian unsigned value of its last 8 bytes at most (reduced-size
/// encoding, RFC 7011 Section 6.2; longer fields keep their low 64 bits).
#[inline]
fn uint(bytes: &[u8]) -> u64 {
    let tail = if bytes.len() > 8 { &bytes[bytes.len() - 8..] } else { bytes };
    tail.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64)
}

/// IPv4 dotted-quad text.
fn ipv4_text(address: u32, out: &mut String) {
    for (i, octet) in address.to_be_bytes().iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        let o = *octet;
        if o >= 100 {
            out.push((b'0' + o / 100) as char);
        }
        if o >= 10 {
            out.push((b'0' + o / 10 % 10) as char);
        }
        out.push((b'0' + o % 10) as char);
    }
}

/// IPv6 text as glibc's `inet_ntop` writes it (RFC 5952 compression; an
/// IPv4-mapped or -compatible address with its last 32 bits dotted).
fn ipv6_text(b: &[u8], out: &mut String) {
    // hand-written into the caller's reused buffer: no Vec and no `fmt` machinery per address
    let mut words = [0u16; 8];
    for (i, w) in words.iter_mut().enumerate() {
        *w = (b[2 * i] as u16) << 8 | b[2 * i + 1] as u16;
    }
    // the longest run of two or more zero words, the first of equals (RFC 5952 Section 4.2)
    let (mut best, mut best_len, mut cur, mut cur_len) = (usize::MAX, 0, usize::MAX, 0);
    for (i, &w) in words.iter().enumerate() {
        if w == 0 {
            if cur == usize::MAX {
                cur = i;
                cur_len = 1;
            } else {
                cur_len += 1;
            }
        } else if cur != usize::MAX {
            if best == usize::MAX || cur_len > best_len {
                best = cur;
                best_len = cur_len;
            }
            cur = usize::MAX;
        }
    }
    if cur != usize::MAX && (best == usize::MAX || cur_len > best_len) {
        best = cur;
        best_len = cur_len;
    }
    if best != usize::MAX && best_len < 2 {
        best = usize::MAX;
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut i = 0;
    while i < 8 {
        if best != usize::MAX && i >= best && i < best + best_len {
            if i == best {
                out.push(':');
            }
            i += 1;
            continue;
        }
        if i != 0 {
            out.push(':');
        }
        if i == 6 && best == 0 && (best_len == 6 || (best_len == 5 && words[5] == 0xffff)) {
            ipv4_text(u32::from_be_bytes([b[12], b[13], b[14], b[15]]), out);
            return;
        }
        let w = words[i];
        let mut shift = 12;
        while shift > 0 && (w >> shift) & 0xf == 0 {
            shift -= 4; // no leading zeros (RFC 5952 Section 4.1)
        }
        loop {
            out.push(HEX[((w >> shift) & 0xf) as usize] as char);
            if shift == 0 {
                break;
            }
            shift -= 4;
        }
        i += 1;
    }
    if best != usize::MAX && best + best_len == 8 {
        out.push(':');
    }
}

/// The times a datagram's header gives its records.
#[derive(Clone, Copy)]
struct When {
    export_us: i64,
    uptime_ms: i64, // -1 for IPFIX
    received_us: Option<i64>,
}

/// What the state said of a data set's records when it was decoded.
struct Context<'a> {
    exporter: u32,
    export_us: i64,
    uptime_ms: i64,
    init_ms: i64,
    configured: i64,
    default_rate: i64,
    samplers: Option<&'a HashMap<i64, i64>>,
    reference_us: i64,
}

/// The decoded records, column by column (see `build` in netflow.py).
#[derive(Default)]
struct Columns {
    first: Vec<i64>,
    last: Vec<i64>,
    src_port: Vec<i64>,
    dst_port: Vec<i64>,
    protocol: Vec<i64>,
    bytes: Vec<u64>,
    packets: Vec<u64>,
    sampling_rate: Vec<i64>,
    input_if: Vec<i64>,
    output_if: Vec<i64>,
    earliest: Vec<i64>,
    latest: Vec<i64>,
    packets_known: Vec<u8>,
    address_length: Vec<u8>,
    time_overflow: Vec<u8>,
    exporter: Vec<u32>,
    /// the addresses as text, Arrow string views
    src: Views,
    dst: Views,
    /// one address's text, reused
    text: String,
}

impl Columns {
    fn len(&self) -> usize {
        self.first.len()
    }

    /// Why record `i` is impossible (0: it is not), as the first check of
    /// `schema.impossible` that holds, in its order (codes: `REASONS` of
    /// native.py): an address field of the wrong length (RFC 7012 Section
    /// 3.2), an empty record, bytes without packets, bytes above `size` x
    /// packets (as (bytes - 1) / size >= packets: no product to overflow;
    /// only where the template counts packets), a count x sampling rate
    /// above 2^64 - 1, a time beyond int64 microseconds, last before first,
    /// a time outside the plausible window.
    fn reason(&self, i: usize, size: u64) -> u8 {
        let (octets, packets, known) = (self.bytes[i], self.packets[i], self.packets_known[i] != 0);
        let rate = self.sampling_rate[i];
        if self.address_length[i] != 0 {
            1
        } else if octets == 0 && packets == 0 {
            2
        } else if known && octets > 0 && packets == 0 {
            3
        } else if known && octets > 0 && size > 0 && (octets - 1) / size >= packets {
            4
        } else if rate > 1 && (octets > u64::MAX / rate as u64 || packets > u64::MAX / rate as u64) {
            5
        } else if self.time_overflow[i] != 0 {
            6
        } else if self.last[i] < self.first[i] {
            7
        } else if self.first[i] < self.earliest[i] || self.last[i] > self.latest[i] {
            8
        } else {
            0
        }
    }

    /// Leave out the impossible records (see `reason`; `size`: the largest
    /// packet of each exporter); the records rejected as [(exporter,
    /// reason, n)] and the records kept of unknown sampling rate (0) as
    /// [(exporter, n)].
    fn reject(&mut self, size: &[u64], exporters: usize) -> (Vec<(u32, u8, u64)>, Vec<(u32, u64)>) {
        let n = self.len();
        let mut counts: HashMap<(u32, u8), u64> = HashMap::new();
        let mut unknown = vec![0u64; exporters];
        let mut keep = Vec::with_capacity(n);
        for i in 0..n {
            let e = self.exporter[i];
            let why = self.reason(i, size[e as usize]);
            if why != 0 {
                *counts.entry((e, why)).or_default() += 1;
            } else if self.sampling_rate[i] == 0 {
                unknown[e as usize] += 1;
            }
            keep.push(why == 0);
        }
        if !counts.is_empty() {
            fn only<T>(values: &mut Vec<T>, keep: &[bool]) {
                let mut i = 0;
                values.retain(|_| {
                    i += 1;
                    keep[i - 1]
                });
            }
            let Columns { first, last, src_port, dst_port, protocol, bytes, packets, sampling_rate, input_if, output_if, earliest, latest,
                          packets_known, address_length, time_overflow, exporter, src, dst, .. } = self;
            for v in [first, last, src_port, dst_port, protocol, sampling_rate, input_if, output_if, earliest, latest] {
                only(v, &keep);
            }
            only(bytes, &keep);
            only(packets, &keep);
            for v in [packets_known, address_length, time_overflow] {
                only(v, &keep);
            }
            only(exporter, &keep);
            for text in [src, dst] {
                only(&mut text.views, &keep); // the data buffers stay: the views kept point into them
            }
        }
        let mut rejected: Vec<(u32, u8, u64)> = counts.into_iter().map(|((e, why), n)| (e, why, n)).collect();
        rejected.sort_unstable();
        let unknown = unknown.into_iter().enumerate().filter(|(_, n)| *n > 0).map(|(e, n)| (e as u32, n)).collect();
        (rejected, unknown)
    }

    /// The canonical columns of the records (schema.py's order and types),
    /// grouped by (exporter, day of `first`): the groups as [(exporter,
    /// day, first row, rows)] in the order of their first record, and the
    /// columns. Ports and protocol keep their low 16 and 8 bits, interfaces
    /// outside 0..2^31 become 0 (as `netflow.table`), the scaled counts are
    /// the counts x the sampling rate where it is above 1 (`schema.scaled`;
    /// `reject` has left out the products that overflow).
    fn canonical(&mut self, names: &[String]) -> (Vec<(u32, i64, usize, usize)>, Vec<Column>) {
        const DAY_US: i64 = 86_400_000_000;
        let n = self.len();
        let mut group_of: HashMap<(u32, i64), usize> = HashMap::new();
        let mut parts: Vec<(u32, i64, usize, usize)> = Vec::new();
        let mut group = Vec::with_capacity(n);
        let mut last_key = None;
        for i in 0..n {
            let key = (self.exporter[i], self.first[i].div_euclid(DAY_US));
            let g = match last_key {
                Some((k, g)) if k == key => g,
                _ => *group_of.entry(key).or_insert_with(|| {
                    parts.push((key.0, key.1, 0, 0));
                    parts.len() - 1
                }),
            };
            last_key = Some((key, g));
            parts[g].3 += 1;
            group.push(g as u32);
        }
        let mut start = 0;
        for part in parts.iter_mut() {
            part.2 = start;
            start += part.3;
        }
        // the row each output row takes (a stable counting sort; the identity for one group)
        let order: Vec<u32> = if parts.len() <= 1 {
            (0..n as u32).collect()
        } else {
            let mut next: Vec<usize> = parts.iter().map(|p| p.2).collect();
            let mut order = vec![0u32; n];
            for (i, &g) in group.iter().enumerate() {
                order[next[g as usize]] = i as u32;
                next[g as usize] += 1;
            }
            order
        };
        fn gather<T: Copy, U>(values: &[T], order: &[u32], f: impl Fn(T) -> U) -> Vec<U> {
            order.iter().map(|&i| f(values[i as usize])).collect()
        }
        let interface = |v: i64| if (0..1 << 31).contains(&v) { v as i32 } else { 0 };
        let scaled = |values: &[u64]| -> Vec<u64> {
            order.iter().map(|&i| {
                let (count, rate) = (values[i as usize], self.sampling_rate[i as usize]);
                if rate > 1 { count.wrapping_mul(rate as u64) } else { count }
            }).collect()
        };
        let mut exporters = Views::default();
        for &(e, _, _, len) in &parts {
            for _ in 0..len {
                exporters.push(names[e as usize].as_bytes());
            }
        }
        let addresses = |text: &mut Views| -> Vec<Buffer> {
            let views = Views { views: gather(&text.views, &order, |v| v), data: std::mem::take(&mut text.data) };
            views.into_buffers()
        };
        let (src, dst) = (addresses(&mut self.src), addresses(&mut self.dst));
        let column = |name, format, buffers| Column { name, format, buffers };
        let columns = vec![
            column("exporter", "vu", exporters.into_buffers()),
            column("first", "tsu:UTC", vec![Buffer::I64(gather(&self.first, &order, |v| v))]),
            column("last", "tsu:UTC", vec![Buffer::I64(gather(&self.last, &order, |v| v))]),
            column("src_addr", "vu", src),
            column("dst_addr", "vu", dst),
            column("src_port", "i", vec![Buffer::I32(gather(&self.src_port, &order, |v| (v & 0xFFFF) as i32))]),
            column("dst_port", "i", vec![Buffer::I32(gather(&self.dst_port, &order, |v| (v & 0xFFFF) as i32))]),
            column("protocol", "s", vec![Buffer::I16(gather(&self.protocol, &order, |v| (v & 0xFF) as i16))]),
            column("bytes", "L", vec![Buffer::U64(gather(&self.bytes, &order, |v| v))]),
            column("packets", "L", vec![Buffer::U64(gather(&self.packets, &order, |v| v))]),
            column("sampling_rate", "l", vec![Buffer::I64(gather(&self.sampling_rate, &order, |v| v))]),
            column("bytes_scaled", "L", vec![Buffer::U64(scaled(&self.bytes))]),
            column("packets_scaled", "L", vec![Buffer::U64(scaled(&self.packets))]),
            column("input_if", "i", vec![Buffer::I32(gather(&self.input_if, &order, interface))]),
            column("output_if", "i", vec![Buffer::I32(gather(&self.output_if, &order, interface))]),
        ];
        (parts, columns)
    }

    fn clear(&mut self) {
        let Columns { first, last, src_port, dst_port, protocol, bytes, packets, sampling_rate, input_if, output_if, earliest, latest,
                      packets_known, address_length, time_overflow, exporter, src, dst, .. } = self;
        for v in [first, last, src_port, dst_port, protocol, sampling_rate, input_if, output_if, earliest, latest] {
            v.clear();
        }
        bytes.clear();
        packets.clear();
        for v in [packets_known, address_length, time_overflow] {
            v.clear();
        }
        exporter.clear();
        src.clear();
        dst.clear();
    }
}

/// Keys in the order they were last set, for a least-recently-set cap.
struct Recency<K> {
    stamp_of: HashMap<K, u64>,
    order: BTreeMap<u64, K>,
    next: u64,
}

impl<K> Default for Recency<K> {
    fn default() -> Self {
        Recency { stamp_of: HashMap::new(), order: BTreeMap::new(), next: 0 }
    }
}

impl<K: std::hash::Hash + Eq + Copy> Recency<K> {
    /// `key` was set now; the key set least recently if more than `cap` are kept (to be forgotten).
    fn touch(&mut self, key: K, cap: usize) -> Option<K> {
        if let Some(old) = self.stamp_of.insert(key, self.next) {
            self.order.remove(&old);
        }
        self.order.insert(self.next, key);
        self.next += 1;
        if self.stamp_of.len() > cap {
            let (_, old) = self.order.pop_first()?;
            self.stamp_of.remove(&old);
            return Some(old);
        }
        None
    }

    fn forget(&mut self, key: &K) {
        if let Some(stamp) = self.stamp_of.remove(key) {
            self.order.remove(&stamp);
        }
    }
}

/// `n` with thousands separated by commas, as Python's `{n:,}`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

struct HeldSet {
    exporter: u32,
    key: Key,
    body: Vec<u8>,
    when: When,
}

#[derive(Default)]
struct ExporterState {
    stats: [u64; 5],
    counts: [u64; 11],
}

#[derive(Default)]
struct State {
    caps: Caps,
    window_us: Option<i64>,
    sampling: HashMap<String, i64>,
    names: Vec<String>,
    ids: HashMap<String, u32>,
    /// counters per slot (an exporter's own, or OTHER_EXPORTERS's), their names, and each exporter's slot
    exporters: Vec<ExporterState>,
    slot_names: Vec<String>,
    slot_of: Vec<u32>,
    other_slot: Option<u32>,
    configured: Vec<i64>,
    by_address: HashMap<[u8; 16], u32>,
    // templates, least recently announced first
    templates: HashMap<Key, (Arc<Template>, u64)>,
    order: BTreeMap<u64, Key>,
    exporter_order: HashMap<u32, BTreeMap<u64, Key>>,
    exporter_fields: HashMap<u32, usize>,
    template_fields: usize,
    stamp: u64,
    sampler_rates: HashMap<(u32, u32), HashMap<i64, i64>>,
    domain_rates: HashMap<(u32, u32), i64>,
    default_rates: HashMap<(u32, u32), i64>,
    init_ms: HashMap<(u32, u32), i64>,
    next_sequence: HashMap<(u32, u8, u32, u32), u64>,
    /// the keys of next_sequence and of the sampler state, least recently set first (caps.exporters each)
    sequence_order: Recency<(u32, u8, u32, u32)>,
    domain_order: Recency<(u32, u32)>,
    // held data sets of unknown templates
    held: HashMap<u64, HeldSet>,
    held_mine: HashMap<u32, VecDeque<u64>>,
    held_all: VecDeque<u64>,
    held_bytes_of: HashMap<u32, usize>,
    held_bytes: usize,
    held_next: u64,
    counts: [u64; 11],
    stats: [u64; 5],
    recovered_sets: u64,
    /// (exporter's name, reason, detail): by name, as the exporter's id may be reused
    problems: Vec<(String, &'static str, String)>,
    /// each id's source address (for `by_address`), whether it is in use, the ids free to reuse
    address_of: Vec<Option<[u8; 16]>>,
    live: Vec<bool>,
    free: Vec<u32>,
    /// exporters named when the ids without state are next looked for (`sweep`); 0: not yet set
    sweep_at: usize,
    /// the counters' slot of each exporter that has one of its own
    slot_by_name: HashMap<String, u32>,
    received_us: Option<i64>,
    rows: Columns,
    scratch: Vec<(usize, usize)>,
}

impl State {
    fn exporter(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        if self.sweep_at == 0 {
            self.sweep_at = 2 * self.caps.exporters.max(1);
        }
        if self.ids.len() >= self.sweep_at {
            self.sweep();
        }
        let slot = if let Some(&slot) = self.slot_by_name.get(name) {
            slot
        } else if self.slot_names.len() - self.other_slot.is_some() as usize >= self.caps.exporters {
            *self.other_slot.get_or_insert_with(|| {
                self.slot_names.push(OTHER_EXPORTERS.to_string());
                self.exporters.push(ExporterState::default());
                (self.exporters.len() - 1) as u32
            })
        } else {
            self.slot_names.push(name.to_string());
            self.exporters.push(ExporterState::default());
            let slot = (self.exporters.len() - 1) as u32;
            self.slot_by_name.insert(name.to_string(), slot);
            slot
        };
        let configured = self.sampling.get(name).or_else(|| self.sampling.get("*")).copied().unwrap_or(0);
        let id = match self.free.pop() {
            Some(id) => {
                let i = id as usize;
                self.names[i] = name.to_string();
                (self.slot_of[i], self.configured[i], self.address_of[i], self.live[i]) = (slot, configured, None, true);
                id
            }
            None => {
                self.names.push(name.to_string());
                self.slot_of.push(slot);
                self.configured.push(configured);
                self.address_of.push(None);
                self.live.push(true);
                (self.names.len() - 1) as u32
            }
        };
        self.ids.insert(name.to_string(), id);
        id
    }

    /// Forget the exporters that hold nothing (no template, held set,
    /// sequence or sampler state, or record waiting): their ids are reused,
    /// so that spoofed source addresses cannot grow the list of names.
    /// Their counters stay (by name, `slot_by_name`); one that sends again
    /// is named again. Looked for when twice as many exporters are named as
    /// after the last time (at least 2 x `caps.exporters`): amortised O(1).
    fn sweep(&mut self) {
        let mut used = vec![false; self.names.len()];
        let mut mark = |e: u32| used[e as usize] = true;
        self.templates.keys().for_each(|k| mark(k.0));
        self.held.values().for_each(|h| mark(h.exporter));
        self.next_sequence.keys().for_each(|k| mark(k.0));
        self.sampler_rates.keys().for_each(|k| mark(k.0));
        self.domain_rates.keys().for_each(|k| mark(k.0));
        self.default_rates.keys().for_each(|k| mark(k.0));
        self.init_ms.keys().for_each(|k| mark(k.0));
        self.rows.exporter.iter().for_each(|&e| mark(e));
        for (id, in_use) in used.into_iter().enumerate() {
            if !in_use && self.live[id] {
                self.live[id] = false;
                self.ids.remove(&self.names[id]);
                if let Some(address) = self.address_of[id].take() {
                    self.by_address.remove(&address);
                }
                self.names[id] = String::new();
                self.free.push(id as u32);
            }
        }
        self.sweep_at = (2 * self.ids.len()).max(2 * self.caps.exporters.max(1));
    }

    fn stat(&mut self, exporter: u32, which: usize, n: u64) {
        self.stats[which] += n;
        let slot = self.slot_of[exporter as usize] as usize;
        self.exporters[slot].stats[which] += n;
    }

    fn problem(&mut self, exporter: u32, why: Why, detail: String) {
        self.counts[why as usize] += 1;
        let slot = self.slot_of[exporter as usize] as usize;
        self.exporters[slot].counts[why as usize] += 1;
        self.problem_only(exporter, REASONS[why as usize], detail);
    }

    fn problem_only(&mut self, exporter: u32, reason: &'static str, detail: String) {
        if self.problems.len() < KEPT_PROBLEMS {
            self.problems.push((self.names[exporter as usize].clone(), reason, detail));
        }
    }

    /// Decode one datagram; returns the flow records it added.
    fn feed(&mut self, data: &[u8], exporter: u32, received_us: Option<i64>) -> u64 {
        self.stat(exporter, S_DATAGRAMS, 1);
        self.received_us = received_us;
        let before = self.rows.len();
        let result = if data.len() < 2 {
            bad(Why::Truncated, format!("datagram of {} bytes", data.len()))
        } else {
            // a guard for what was not foreseen, as the Python decoder's: counted as malformed
            let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match u16::from_be_bytes([data[0], data[1]]) {
                10 => self.ipfix(data, exporter),
                9 => self.v9(data, exporter),
                5 => self.v5(data, exporter),
                version => bad(Why::UnknownVersion, format!("version {version}")),
            }));
            decoded.unwrap_or_else(|_| bad(Why::Malformed, "a datagram the decoder did not foresee".to_string()))
        };
        if let Err(Malformed(why, detail)) = result {
            self.problem(exporter, why, detail);
        }
        let decoded = (self.rows.len() - before) as u64;
        self.stat(exporter, S_RECORDS, decoded);
        decoded
    }

    /// Cisco NetFlow v5: a 24-byte header and 48-byte records, never padded.
    fn v5(&mut self, data: &[u8], exporter: u32) -> Step<()> {
        if data.len() < 24 {
            return bad(Why::Truncated, format!("v5 header needs 24 bytes, got {}", data.len()));
        }
        let be32 = |p: usize| u32::from_be_bytes([data[p], data[p + 1], data[p + 2], data[p + 3]]) as u64;
        let count = u16::from_be_bytes([data[2], data[3]]) as usize;
        let (uptime, secs, nsecs, sequence) = (be32(4), be32(8), be32(12), be32(16));
        let (engine_type, engine_id) = (data[20] as u32, data[21] as u32);
        let sampling = u16::from_be_bytes([data[22], data[23]]);
        if data.len() < 24 + 48 * count {
            return bad(Why::Truncated, format!("v5 count {count} needs {} bytes, got {}", 24 + 48 * count, data.len()));
        }
        if data.len() != 24 + 48 * count {
            return bad(Why::BadLength, format!("v5 count {count} means {} bytes, the datagram has {}", 24 + 48 * count, data.len()));
        }
        self.sequence((exporter, 5, engine_type, engine_id), sequence, Some(count as u64), S_LOST_RECORDS);
        if count == 0 {
            return Ok(());
        }
        let export_us = (secs * 1_000_000 + nsecs / 1000) as i64;
        let template = V5.with(|t| t.clone());
        let context = Context {
            exporter,
            export_us,
            uptime_ms: uptime as i64,
            init_ms: -1,
            configured: self.configured[exporter as usize],
            default_rate: (sampling & 0x3FFF) as i64, // top 2 bits: the sampling mode
            samplers: None,
            reference_us: self.received_us.unwrap_or(export_us),
        };
        for record in data[24..].chunks_exact(48) {
            self.row(&template, &context, record, &template.spans);
        }
        Ok(())
    }

    /// NetFlow v9, RFC 3954.
    fn v9(&mut self, data: &[u8], exporter: u32) -> Step<()> {
        if data.len() < 20 {
            return bad(Why::Truncated, format!("v9 header needs 20 bytes, got {}", data.len()));
        }
        let be32 = |p: usize| u32::from_be_bytes([data[p], data[p + 1], data[p + 2], data[p + 3]]);
        let (uptime, secs, sequence, source_id) = (be32(4), be32(8), be32(12), be32(16));
        self.sequence((exporter, 9, source_id, 0), sequence as u64, Some(1), S_LOST_DATAGRAMS); // counts datagrams (5.1)
        let when = When { export_us: secs as i64 * 1_000_000, uptime_ms: uptime as i64, received_us: self.received_us };
        self.sets(data, 20, "flowset", |me, set_id, start, end| {
            match set_id {
                0 => me.templates(data, start, end, exporter, 9, source_id, false)?,
                1 => me.v9_options_templates(data, start, end, exporter, source_id)?,
                256.. => {
                    me.data(exporter, 9, source_id, set_id, &data[start..end], when);
                }
                _ => {} // 2-255 reserved (RFC 3954 5.2)
            }
            Ok(())
        })
    }

    /// IPFIX, RFC 7011.
    fn ipfix(&mut self, data: &[u8], exporter: u32) -> Step<()> {
        if data.len() < 16 {
            return bad(Why::Truncated, format!("IPFIX header needs 16 bytes, got {}", data.len()));
        }
        let be32 = |p: usize| u32::from_be_bytes([data[p], data[p + 1], data[p + 2], data[p + 3]]);
        let length = u16::from_be_bytes([data[2], data[3]]) as usize;
        if length > data.len() || length < 16 {
            return bad(Why::BadLength, format!("IPFIX message length {length}, datagram {} bytes", data.len()));
        }
        let data = &data[..length];
        let (export_s, sequence, domain) = (be32(4), be32(8), be32(12));
        let when = When { export_us: export_s as i64 * 1_000_000, uptime_ms: -1, received_us: self.received_us };
        let key = (exporter, 10, domain, 0);
        let in_order = self.sequence(key, sequence as u64, None, S_LOST_RECORDS);
        // data records of this message, which the next one's sequence number counts (RFC 7011 3.1)
        let mut records: Option<u64> = Some(0);
        self.sets(data, 16, "set", |me, set_id, start, end| {
            match set_id {
                2 => me.templates(data, start, end, exporter, 10, domain, false)?,
                3 => me.templates(data, start, end, exporter, 10, domain, true)?,
                256.. => {
                    let decoded = me.data(exporter, 10, domain, set_id, &data[start..end], when);
                    records = match (records, decoded) {
                        (Some(r), Some(d)) => Some(r + d as u64),
                        _ => None,
                    };
                }
                _ => {}
            }
            Ok(())
        })?;
        if let (Some(r), true) = (records, in_order) {
            self.expect(key, (sequence as u64 + r) & MASK32);
        }
        Ok(())
    }

    /// Each set after a header, in order: a set running past the datagram or
    /// under 4 bytes is malformed; non-zero bytes after the last, truncation.
    fn sets(&mut self, data: &[u8], mut pos: usize, what: &str, mut each: impl FnMut(&mut Self, u16, usize, usize) -> Step<()>) -> Step<()> {
        let size = data.len();
        while size - pos >= 4 {
            let set_id = u16::from_be_bytes([data[pos], data[pos + 1]]);
            let length = u16::from_be_bytes([data[pos + 2], data[pos + 3]]) as usize;
            if length < 4 || pos + length > size {
                return bad(Why::BadLength, format!("{what} {set_id} of length {length} at offset {pos}, datagram {size} bytes"));
            }
            each(self, set_id, pos + 4, pos + length)?;
            pos += length;
        }
        if pos != size && data[pos..].iter().any(|&b| b != 0) {
            return bad(Why::Truncated, format!("{} bytes after the last {what}", size - pos));
        }
        Ok(())
    }

    fn sequence(&mut self, key: (u32, u8, u32, u32), sequence: u64, advance: Option<u64>, stat: usize) -> bool {
        let exporter = key.0;
        let limit = if stat == S_LOST_DATAGRAMS { MAX_GAP_DATAGRAMS } else { MAX_GAP_RECORDS };
        if let Some(&expected) = self.next_sequence.get(&key) {
            let gap = sequence.wrapping_sub(expected) & MASK32;
            if gap >= (1 << 32) - limit {
                return false; // a little behind: late or repeated
            }
            if gap > limit {
                self.stat(exporter, S_JUMPS, 1);
                self.problem_only(exporter, "sequence_jump", format!("sequence number {sequence}, {expected} expected"));
            } else if gap > 0 {
                self.stat(exporter, stat, gap);
            }
        }
        match advance {
            None => {
                self.next_sequence.remove(&key);
                self.sequence_order.forget(&key);
            }
            Some(a) => {
                self.expect(key, (sequence + a) & MASK32);
            }
        }
        true
    }

    /// Expect `sequence` next from `key`; beyond `caps.exporters` keys the
    /// one set least recently is forgotten (`state_evicted`), as netflow.py's `_expect`.
    fn expect(&mut self, key: (u32, u8, u32, u32), sequence: u64) {
        self.next_sequence.insert(key, sequence);
        if let Some(old) = self.sequence_order.touch(key, self.caps.exporters) {
            self.next_sequence.remove(&old);
            let what = format!("({}, {}{})", old.1, old.2, if old.1 == 5 { format!(", {}", old.3) } else { String::new() });
            self.problem(old.0, Why::StateEvicted, format!("sequence numbers of {what} forgotten: more than {} kept", thousands(self.caps.exporters)));
        }
    }

    /// Sampler state of `key` (exporter, domain) was set; as netflow.py's `_domain`.
    fn domain(&mut self, key: (u32, u32)) {
        if let Some(old) = self.domain_order.touch(key, self.caps.exporters) {
            self.sampler_rates.remove(&old);
            self.domain_rates.remove(&old);
            self.default_rates.remove(&old);
            self.init_ms.remove(&old);
            self.problem(old.0, Why::StateEvicted, format!("sampler state of domain {} forgotten: more than {} kept", old.1, thousands(self.caps.exporters)));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn templates(&mut self, data: &[u8], mut pos: usize, end: usize, exporter: u32, version: u8, domain: u32, options: bool) -> Step<()> {
        let ipfix = version == 10;
        let head = if options { 6 } else { 4 };
        let be16 = |p: usize| u16::from_be_bytes([data[p], data[p + 1]]);
        while end - pos >= head {
            let (tid, count) = (be16(pos), be16(pos + 2) as usize);
            let scopes = if options { be16(pos + 4) as usize } else { 0 };
            pos += head;
            if tid == 0 && count == 0 {
                break; // padding
            }
            if tid < 256 {
                return bad(Why::BadTemplate, format!("template id {tid} below 256"));
            }
            if count == 0 {
                if ipfix && !options {
                    self.forget((exporter, version, domain, tid)); // a withdrawal (RFC 7011 8.1)
                    continue;
                }
                return bad(Why::EmptyTemplate, format!("template {tid} with no fields"));
            }
            if scopes > count || (options && scopes == 0) {
                return bad(Why::BadTemplate, format!("options template {tid}: scope count {scopes} of {count} fields"));
            }
            let mut fields = Vec::with_capacity(count.min(16384));
            for _ in 0..count {
                if end - pos < 4 {
                    return bad(Why::Truncated, format!("template {tid} ends within its fields"));
                }
                let (mut ident, length) = (be16(pos), be16(pos + 2));
                pos += 4;
                let mut enterprise = 0i64;
                if ident & 0x8000 != 0 && ipfix {
                    if end - pos < 4 {
                        return bad(Why::Truncated, format!("template {tid} ends within an enterprise number"));
                    }
                    enterprise = u32::from_be_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]) as i64;
                    ident &= 0x7FFF;
                    pos += 4;
                }
                if length == 0 || (length == VARIABLE && !ipfix) {
                    return bad(Why::BadTemplate, format!("template {tid}: field {ident} of length {length}"));
                }
                fields.push((enterprise, ident, length));
            }
            self.install(Template::new((exporter, version, domain, tid), fields, options));
        }
        Ok(())
    }

    /// RFC 3954 Section 6.1: id, scope and option lengths in bytes, then fields.
    fn v9_options_templates(&mut self, data: &[u8], mut pos: usize, end: usize, exporter: u32, source_id: u32) -> Step<()> {
        let be16 = |p: usize| u16::from_be_bytes([data[p], data[p + 1]]);
        while end - pos >= 6 {
            let (tid, scope_len, option_len) = (be16(pos), be16(pos + 2) as usize, be16(pos + 4) as usize);
            pos += 6;
            if tid == 0 && scope_len == 0 && option_len == 0 {
                break;
            }
            if scope_len % 4 != 0 || option_len % 4 != 0 || pos + scope_len + option_len > end {
                return bad(Why::BadTemplate, format!("v9 options template {tid}: lengths {scope_len}+{option_len}"));
            }
            if scope_len + option_len == 0 {
                return bad(Why::EmptyTemplate, format!("v9 options template {tid} with no fields"));
            }
            let mut fields = Vec::new();
            for i in 0..(scope_len + option_len) / 4 {
                let (ident, length) = (be16(pos), be16(pos + 2));
                pos += 4;
                if length == 0 {
                    return bad(Why::BadTemplate, format!("options template {tid}: field {ident} of length 0"));
                }
                // scope types share numbers with fields: enterprise -1 keeps them from being read as fields
                fields.push((if i < scope_len / 4 { -1 } else { 0 }, ident, length));
            }
            self.install(Template::new((exporter, 9, source_id, tid), fields, true));
        }
        Ok(())
    }

    fn install(&mut self, template: Template) {
        let key = template.key;
        let exporter = key.0;
        let size = template.fields.len();
        self.forget(key);
        self.stamp += 1;
        let template = Arc::new(template);
        self.templates.insert(key, (template.clone(), self.stamp));
        self.order.insert(self.stamp, key);
        self.exporter_order.entry(exporter).or_default().insert(self.stamp, key);
        *self.exporter_fields.entry(exporter).or_default() += size;
        self.template_fields += size;
        // the caps: this exporter's oldest templates first, then the oldest of all (never the new one)
        loop {
            let mine = &self.exporter_order[&exporter];
            if mine.len() > 1 && (mine.len() > self.caps.templates_per_exporter || self.exporter_fields[&exporter] > self.caps.template_fields_per_exporter) {
                let oldest = *mine.values().next().unwrap();
                self.evict_template(oldest);
            } else {
                break;
            }
        }
        while self.templates.len() > 1 && (self.templates.len() > self.caps.templates || self.template_fields > self.caps.template_fields) {
            let oldest = *self.order.values().next().unwrap();
            self.evict_template(oldest);
        }
        // data sets that waited for this template
        let waiting: Vec<u64> = match self.held_mine.get(&exporter) {
            Some(mine) => mine.iter().copied().filter(|id| self.held[id].key == key).collect(),
            None => return,
        };
        if waiting.is_empty() {
            return;
        }
        let mine = self.held_mine.get_mut(&exporter).unwrap();
        mine.retain(|id| !waiting.contains(id));
        if mine.is_empty() {
            self.held_mine.remove(&exporter);
        }
        for id in waiting {
            let held = self.take_held(id).unwrap();
            self.recovered_sets += 1;
            self.decode_set(&template, &held.body, held.when);
        }
    }

    fn forget(&mut self, key: Key) -> Option<Arc<Template>> {
        let (template, stamp) = self.templates.remove(&key)?;
        let exporter = key.0;
        self.order.remove(&stamp);
        let mine = self.exporter_order.get_mut(&exporter).unwrap();
        mine.remove(&stamp);
        if mine.is_empty() {
            self.exporter_order.remove(&exporter);
        }
        let fields = self.exporter_fields.get_mut(&exporter).unwrap();
        *fields -= template.fields.len();
        if *fields == 0 {
            self.exporter_fields.remove(&exporter);
        }
        self.template_fields -= template.fields.len();
        Some(template)
    }

    fn evict_template(&mut self, key: Key) {
        let template = self.forget(key).unwrap();
        let detail = format!("template {} of domain {} ({} fields): over the template table's cap", key.3, key.2, template.fields.len());
        self.problem(key.0, Why::TemplateEvicted, detail);
    }

    /// Decode a data set; its number of records (None: unknown template, held).
    fn data(&mut self, exporter: u32, version: u8, domain: u32, tid: u16, body: &[u8], when: When) -> Option<usize> {
        let key = (exporter, version, domain, tid);
        match self.templates.get(&key) {
            Some((template, _)) => {
                let template = template.clone();
                Some(self.decode_set(&template, body, when))
            }
            None => {
                self.problem(exporter, Why::UnknownTemplate, format!("data set for template {tid} of domain {domain}"));
                self.hold(exporter, key, body, when);
                None
            }
        }
    }

    fn hold(&mut self, exporter: u32, key: Key, body: &[u8], when: When) {
        if body.len() > self.caps.held_bytes_per_exporter {
            self.problem(exporter, Why::HeldEvicted, format!("a data set of {} bytes is over the cap of held data", body.len()));
            return;
        }
        let id = self.held_next;
        self.held_next += 1;
        self.held.insert(id, HeldSet { exporter, key, body: body.to_vec(), when });
        self.held_mine.entry(exporter).or_default().push_back(id);
        self.held_all.push_back(id);
        *self.held_bytes_of.entry(exporter).or_default() += body.len();
        self.held_bytes += body.len();
        loop {
            let Some(mine) = self.held_mine.get_mut(&exporter) else { break };
            if mine.len() > self.caps.held_sets || self.held_bytes_of.get(&exporter).copied().unwrap_or(0) > self.caps.held_bytes_per_exporter {
                let oldest = mine.pop_front().unwrap();
                if mine.is_empty() {
                    self.held_mine.remove(&exporter);
                }
                self.evict_held(oldest);
            } else {
                break;
            }
        }
        while self.held_bytes > self.caps.held_bytes {
            let Some(oldest) = self.held_all.pop_front() else { break };
            if let Some(set) = self.held.get(&oldest) {
                let owner = set.exporter;
                if let Some(mine) = self.held_mine.get_mut(&owner) {
                    mine.retain(|&i| i != oldest);
                    if mine.is_empty() {
                        self.held_mine.remove(&owner);
                    }
                }
                self.evict_held(oldest);
            }
        }
        if self.held_all.len() > 2 * self.held.len() + 1024 {
            let held = &self.held;
            self.held_all.retain(|id| held.contains_key(id));
        }
    }

    fn take_held(&mut self, id: u64) -> Option<HeldSet> {
        let set = self.held.remove(&id)?;
        let bytes = self.held_bytes_of.get_mut(&set.exporter).unwrap();
        *bytes -= set.body.len();
        if *bytes == 0 {
            self.held_bytes_of.remove(&set.exporter);
        }
        self.held_bytes -= set.body.len();
        Some(set)
    }

    fn evict_held(&mut self, id: u64) {
        if let Some(set) = self.take_held(id) {
            let detail = format!("a held data set of template {} ({} bytes): over the cap of held data", set.key.3, set.body.len());
            self.problem(set.exporter, Why::HeldEvicted, detail);
        }
    }

    fn decode_set(&mut self, template: &Arc<Template>, body: &[u8], when: When) -> usize {
        let (exporter, _, domain, tid) = template.key;
        let mut scratch = std::mem::take(&mut self.scratch);
        // (offset, record length) of each whole record
        let mut records: Vec<(usize, usize)> = Vec::new();
        let mut spans: Vec<(usize, usize)> = Vec::new(); // variable-length: every record's field spans, flattened
        if template.fixed {
            let n = body.len() / template.record_len;
            let rest = &body[n * template.record_len..];
            if rest.iter().any(|&b| b != 0) {
                let detail = format!("data set of template {tid} ends {} bytes into a record of {} bytes", rest.len(), template.record_len);
                self.problem(exporter, Why::Truncated, detail);
            }
            records.extend((0..n).map(|i| (i * template.record_len, template.record_len)));
        } else {
            // RFC 7011 Section 7: a 1-byte length, or 255 and a 2-byte length
            let (mut pos, end) = (0usize, body.len());
            'records: while end - pos >= template.record_len {
                let start = pos;
                scratch.clear();
                for &(_, _, length) in &template.fields {
                    let mut length = length as usize;
                    if length == VARIABLE as usize {
                        if pos >= end {
                            pos = start;
                            break 'records;
                        }
                        length = body[pos] as usize;
                        pos += 1;
                        if length == 255 {
                            if pos + 2 > end {
                                pos = start;
                                break 'records;
                            }
                            length = (body[pos] as usize) << 8 | body[pos + 1] as usize;
                            pos += 2;
                        }
                    }
                    if pos + length > end {
                        pos = start;
                        break 'records;
                    }
                    scratch.push((pos, length));
                    pos += length;
                }
                records.push((start, pos - start));
                spans.extend_from_slice(&scratch);
            }
            let overrun = if body[pos..].iter().any(|&b| b != 0) { end - pos } else { 0 };
            if overrun > 0 {
                let detail = format!("a variable-length field of template {tid} runs past its set (record {}; {overrun} bytes dropped)", records.len() + 1);
                self.problem(exporter, Why::Truncated, detail);
            }
        }
        self.scratch = scratch;
        let n = records.len();
        if n == 0 {
            return 0;
        }
        let nf = template.fields.len();
        // spans relative to the set body
        let span_of = |i: usize| -> Vec<(usize, usize)> {
            if template.fixed {
                template.spans.iter().map(|&(o, l)| (records[i].0 + o, l)).collect()
            } else {
                spans[i * nf..(i + 1) * nf].to_vec()
            }
        };
        if template.options {
            let all: Vec<Vec<(usize, usize)>> = (0..n).map(span_of).collect();
            self.options(template, body, &all);
        } else if template.is_flow {
            let key = (exporter, domain);
            let samplers = self.sampler_rates.remove(&key);
            let context = Context {
                exporter,
                export_us: when.export_us,
                uptime_ms: when.uptime_ms,
                init_ms: self.init_ms.get(&key).copied().unwrap_or(-1),
                configured: self.configured[exporter as usize],
                default_rate: self.default_rates.get(&key).copied().unwrap_or(0),
                samplers: samplers.as_ref(),
                reference_us: when.received_us.unwrap_or(when.export_us),
            };
            if template.fixed {
                for &(offset, length) in &records {
                    self.row(template, &context, &body[offset..offset + length], &template.spans);
                }
            } else {
                for (i, &(offset, _)) in records.iter().enumerate() {
                    let relative: Vec<(usize, usize)> = spans[i * nf..(i + 1) * nf].iter().map(|&(o, l)| (o - offset, l)).collect();
                    self.row(template, &context, &body[offset..], &relative);
                }
            }
            if let Some(s) = samplers {
                self.sampler_rates.insert(key, s);
            }
        }
        n
    }

    /// Learn sampler rates and the system init time from options records.
    fn options(&mut self, template: &Template, body: &[u8], records: &[Vec<(usize, usize)>]) {
        let (exporter, _, domain, _) = template.key;
        let index = &template.index;
        let ints = |ident: u16| -> Option<Vec<i64>> {
            let p = *index.get(&ident)?;
            Some(records.iter().map(|s| uint(&body[s[p].0..s[p].0 + s[p].1]) as i64).collect())
        };
        let mut interval = ints(SAMPLING_INTERVAL).or_else(|| ints(SAMPLER_RANDOM_INTERVAL));
        if interval.is_none() && index.contains_key(&PACKET_INTERVAL) && index.contains_key(&PACKET_SPACE) {
            // 1 in (selected + skipped) / selected packets (RFC 5477 Section 8.2.2)
            let (selected, skipped) = (ints(PACKET_INTERVAL).unwrap(), ints(PACKET_SPACE).unwrap());
            interval = Some(selected.iter().zip(&skipped).map(|(&a, &b)| if a > 0 { a.wrapping_add(b).div_euclid(a) } else { 0 }).collect());
        }
        let sampler = ints(SAMPLER_ID).or_else(|| ints(SELECTOR_ID));
        let key = (exporter, domain);
        if let Some(&p) = index.get(&SYSTEM_INIT_MS) {
            let s = records.last().unwrap()[p];
            // kept unsigned up to int64: a value beyond stays beyond the limit (time_overflow), never wraps
            self.init_ms.insert(key, uint(&body[s.0..s.0 + s.1]).min(i64::MAX as u64) as i64);
            self.domain(key);
        }
        let Some(interval) = interval else { return };
        let mut samplers = self.sampler_rates.get(&key).cloned().unwrap_or_default();
        for (i, &rate) in interval.iter().enumerate() {
            if rate <= 0 {
                let detail = match &sampler {
                    Some(s) => format!("an options record gives sampling interval 0 for sampler {}", s[i]),
                    None => "an options record gives sampling interval 0".to_string(),
                };
                self.problem(exporter, Why::ZeroSamplingInterval, detail);
                continue;
            }
            match &sampler {
                Some(s) => {
                    samplers.insert(s[i], rate);
                }
                None => {
                    self.domain_rates.insert(key, rate);
                }
            }
        }
        let mut default = self.domain_rates.get(&key).copied();
        if default.is_none() {
            let mut rates: Vec<i64> = samplers.values().copied().collect();
            rates.sort_unstable();
            rates.dedup();
            if rates.len() == 1 {
                default = Some(rates[0]);
            }
        }
        self.sampler_rates.insert(key, samplers);
        self.default_rates.insert(key, default.unwrap_or(0));
        self.domain(key);
    }

    /// One flow record's columns (netflow.py `_columns`, record by record).
    fn row(&mut self, t: &Template, c: &Context, record: &[u8], spans: &[(usize, usize)]) {
        let v = |p: usize| uint(&record[spans[p].0..spans[p].0 + spans[p].1]);
        let plan = &t.plan;
        let int = |p: Option<usize>| p.map(|p| v(p) as i64).unwrap_or(0);
        let protocol = int(plan.protocol);
        let mut dst_port = int(plan.dst_port);
        // ICMP type and code go where NetFlow v5 and nfdump put them: dst_port = type x 256 + code
        let icmp = match (plan.icmp, plan.icmp_type) {
            (Some(p), _) => Some(v(p) as i64),
            (None, Some(p)) => Some((v(p) as i64) << 8 | int(plan.icmp_code)),
            _ => None,
        };
        if let Some(icmp) = icmp {
            if (protocol == 1 || protocol == 58) && icmp != 0 {
                dst_port = icmp;
            }
        }
        let rows = &mut self.rows;
        // the addresses as text, Arrow string views: polars takes them as they are
        for (addr, views) in [(plan.src, &mut rows.src), (plan.dst, &mut rows.dst)] {
            let text = &mut rows.text;
            text.clear();
            match addr {
                Addr::V4(p) => ipv4_text(v(p) as u32, text),
                Addr::None => text.push_str("0.0.0.0"),
                Addr::V6(p) => {
                    let (o, l) = spans[p];
                    if l == 16 {
                        ipv6_text(&record[o..o + 16], text);
                    } else {
                        text.push_str("::"); // the wrong length: rejected (address_length)
                    }
                }
            }
            views.push(text.as_bytes());
        }
        // times, in unsigned 64 bits: microseconds that would not fit in int64 are marked, never wrapped
        let mut overflow = false;
        let micros = |value: u64, scale: u64, overflow: &mut bool| -> i64 {
            if value > i64::MAX as u64 / scale {
                *overflow = true;
                0
            } else {
                (value * scale) as i64
            }
        };
        let export = c.export_us;
        let mut uptime_relative = false;
        let (first, last) = match plan.time {
            Times::Absolute { start, end, scale } => {
                let first = micros(v(start), scale, &mut overflow);
                let last = match end {
                    Some(e) => micros(v(e), scale, &mut overflow),
                    None => first,
                };
                (first, last)
            }
            Times::Uptime { start, end } => {
                uptime_relative = true;
                let s = v(start) & MASK32; // 4 bytes in v5/v9; more is garbage
                let e = end.map(|e| v(e)).unwrap_or(v(start)) & MASK32;
                // the uptime difference modulo 2**32, read as signed: an uptime wrap is harmless
                let to_us = |switched: u64| {
                    let mut delta = (c.uptime_ms - switched as i64) & MASK32 as i64;
                    if delta >= 1 << 31 {
                        delta -= 1 << 32;
                    }
                    export - delta * 1000
                };
                (to_us(s), to_us(e))
            }
            Times::SinceInit { start, end, init } => {
                let known = init.is_some() || c.init_ms >= 0;
                let init = init.map(|p| v(p)).unwrap_or(c.init_ms as u64);
                let s = v(start);
                let e = end.map(|e| v(e)).unwrap_or(s);
                // each term is checked alone first, so that the sum cannot wrap in 64 bits
                let limit = i64::MAX as u64 / 1000;
                let clip = |part: u64, overflow: &mut bool| {
                    if part > limit {
                        *overflow |= known;
                        0
                    } else {
                        part
                    }
                };
                let (init, s, e) = (clip(init, &mut overflow), clip(s, &mut overflow), clip(e, &mut overflow));
                let (f, l) = (micros(init + s, 1000, &mut overflow), micros(init + e, 1000, &mut overflow));
                if known {
                    (f, l)
                } else {
                    (export, export)
                }
            }
            Times::Export => (export, export),
        };
        // the plausible window around the receive and the export time alike, within 1970-2199
        let (earliest, mut latest) = match self.window_us {
            None => (0, LATEST_US - 1),
            Some(w) => (
                c.reference_us.max(export).saturating_sub(w).max(0),
                c.reference_us.min(export).saturating_add(w).min(LATEST_US - 1),
            ),
        };
        if uptime_relative {
            latest = latest.min(export + EXPORT_SLACK_US);
        }
        // sampling: configured, else in the record, else its sampler's, else the domain's
        let mut rate = c.default_rate;
        if let (Some(p), Some(samplers)) = (plan.sampler, c.samplers) {
            if let Some(&r) = samplers.get(&(v(p) as i64)) {
                rate = r;
            }
        }
        if let Some(p) = plan.interval {
            let interval = v(p) as i64;
            if interval > 0 {
                rate = interval;
            }
        }
        if c.configured > 0 {
            rate = c.configured;
        }
        rows.first.push(first);
        rows.last.push(last);
        rows.src_port.push(int(plan.src_port));
        rows.dst_port.push(dst_port);
        rows.protocol.push(protocol);
        rows.bytes.push(plan.octets.map(v).unwrap_or(0));
        rows.packets.push(plan.packets.map(v).unwrap_or(0));
        rows.sampling_rate.push(rate);
        rows.input_if.push(int(plan.input_if));
        rows.output_if.push(int(plan.output_if));
        rows.earliest.push(earliest);
        rows.latest.push(latest);
        rows.packets_known.push(plan.packets_known as u8);
        rows.address_length.push(plan.wrong_length as u8);
        rows.time_overflow.push(overflow as u8);
        rows.exporter.push(c.exporter);
    }

    /// The exporter of a datagram from `address` (an IPv4-mapped IPv6 source as IPv4).
    fn exporter_of(&mut self, address: [u8; 16]) -> u32 {
        if let Some(&id) = self.by_address.get(&address) {
            return id;
        }
        let mut name = String::new();
        if address[..10].iter().all(|&b| b == 0) && address[10] == 0xff && address[11] == 0xff {
            name = Ipv4Addr::new(address[12], address[13], address[14], address[15]).to_string();
        } else {
            ipv6_text(&address, &mut name);
        }
        let id = self.exporter(&name);
        if let Some(old) = self.address_of[id as usize].replace(address) {
            self.by_address.remove(&old); // one id, named from two addresses (IPv4 and IPv4-mapped)
        }
        self.by_address.insert(address, id);
        id
    }
}

thread_local! {
    /// NetFlow v5 records as a template of IPFIX ids (enterprise -1: unused bytes).
    static V5: Arc<Template> = Arc::new(Template::new((0, 5, 0, 0), vec![
        (0, SRC_V4, 4), (0, DST_V4, 4), (-1, 15, 4), (0, INPUT_IF, 2), (0, OUTPUT_IF, 2), (0, PACKETS, 4),
        (0, OCTETS, 4), (0, FIRST_SWITCHED, 4), (0, LAST_SWITCHED, 4), (0, SRC_PORT, 2), (0, DST_PORT, 2),
        (-1, 0, 1), (-1, 6, 1), (0, PROTOCOL, 1), (-1, 5, 1), (-1, 16, 2), (-1, 17, 2), (-1, 9, 1), (-1, 13, 1),
        (-1, 0, 2),
    ], false));
}

fn now_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// Datagrams read per `recvmmsg` call, and the largest datagram.
const BATCH: usize = 32;
const DATAGRAM: usize = 65536;

/// The native flow decoder; see the module doc. Thread-safe: the state is
/// behind a mutex, taken with the GIL released.
#[pyclass(module = "alphaqos._core", frozen)]
pub struct FlowDecoder {
    state: Mutex<State>,
    buffers: Mutex<Vec<u8>>,
}

impl FlowDecoder {
    fn lock(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, State> {
        // a guard cannot leave the GIL-free closure: wait there, then take it holding the GIL
        loop {
            match self.state.try_lock() {
                Ok(guard) => return guard,
                Err(std::sync::TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => py.detach(|| drop(self.state.lock())),
            }
        }
    }
}

#[pymethods]
impl FlowDecoder {
    /// `sampling`: {exporter: N} ("*": all); `window_us`: half-width of the
    /// plausible window (None: 1970-2199 only).
    /// `caps`: {name: n} of held_sets, held_bytes_per_exporter, held_bytes,
    /// templates_per_exporter, templates, template_fields_per_exporter,
    /// template_fields (the others keep their defaults).
    #[new]
    #[pyo3(signature = (sampling=None, window_us=None, caps=None))]
    fn new(sampling: Option<HashMap<String, i64>>, window_us: Option<i64>, caps: Option<HashMap<String, usize>>) -> PyResult<Self> {
        if window_us.is_some_and(|w| w < 0) {
            return Err(PyValueError::new_err("window_us must not be negative"));
        }
        let mut limits = Caps::default();
        for (name, value) in caps.unwrap_or_default() {
            let slot = match name.as_str() {
                "held_sets" => &mut limits.held_sets,
                "held_bytes_per_exporter" => &mut limits.held_bytes_per_exporter,
                "held_bytes" => &mut limits.held_bytes,
                "templates_per_exporter" => &mut limits.templates_per_exporter,
                "templates" => &mut limits.templates,
                "template_fields_per_exporter" => &mut limits.template_fields_per_exporter,
                "template_fields" => &mut limits.template_fields,
                "exporters" => &mut limits.exporters,
                _ => return Err(PyValueError::new_err(format!("caps: unknown cap {name:?}"))),
            };
            *slot = value;
        }
        let state = State { caps: limits, sampling: sampling.unwrap_or_default(), window_us, ..State::default() };
        Ok(FlowDecoder { state: Mutex::new(state), buffers: Mutex::new(Vec::new()) })
    }

    /// Decode one datagram from `exporter` received at `received_us`
    /// (None: the export time stands for it); the flow records it added.
    #[pyo3(signature = (datagram, exporter, received_us=None))]
    fn feed(&self, py: Python<'_>, datagram: &[u8], exporter: &str, received_us: Option<i64>) -> u64 {
        let mut state = self.lock(py);
        let id = state.exporter(exporter);
        state.feed(datagram, id, received_us)
    }

    /// Read and decode datagrams from the non-blocking UDP socket `fd`:
    /// waits up to `timeout_ms` for the first, then reads what is queued
    /// (`recvmmsg`, `BATCH` at a time) until `limit` datagrams are read,
    /// the socket is empty, or `pending` records wait. The GIL is released
    /// throughout. Returns the datagrams read.
    fn recv(&self, py: Python<'_>, fd: i32, limit: usize, timeout_ms: i32, pending: usize) -> PyResult<usize> {
        let result = py.detach(|| -> std::io::Result<usize> {
            let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd
            let ready = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
            if ready < 0 {
                let error = std::io::Error::last_os_error();
                return if error.kind() == std::io::ErrorKind::Interrupted { Ok(0) } else { Err(error) };
            }
            if ready == 0 {
                return Ok(0);
            }
            let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
            if buffers.is_empty() {
                buffers.resize(BATCH * DATAGRAM, 0);
            }
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut count = 0;
            // SAFETY: zeroed C structs are valid (null pointers are filled in below)
            let mut addresses: Vec<libc::sockaddr_storage> = vec![unsafe { std::mem::zeroed() }; BATCH];
            let mut iovecs: Vec<libc::iovec> = vec![libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
            let mut headers: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; BATCH];
            while count < limit && state.rows.len() < pending {
                let want = BATCH.min(limit - count);
                for i in 0..want {
                    iovecs[i] = libc::iovec { iov_base: buffers[i * DATAGRAM..].as_mut_ptr() as *mut libc::c_void, iov_len: DATAGRAM };
                    headers[i].msg_hdr.msg_name = &mut addresses[i] as *mut _ as *mut libc::c_void;
                    headers[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
                    headers[i].msg_hdr.msg_iov = &mut iovecs[i];
                    headers[i].msg_hdr.msg_iovlen = 1;
                    headers[i].msg_hdr.msg_control = std::ptr::null_mut();
                    headers[i].msg_hdr.msg_controllen = 0;
                    headers[i].msg_hdr.msg_flags = 0;
                    headers[i].msg_len = 0;
                }
                // SAFETY: `want` headers, each pointing at its own buffer, address and iovec
                let got = unsafe { libc::recvmmsg(fd, headers.as_mut_ptr(), want as u32, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
                if got < 0 {
                    let error = std::io::Error::last_os_error();
                    match error.kind() {
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => break,
                        _ => return Err(error),
                    }
                }
                let received = now_us();
                for i in 0..got as usize {
                    let size = (headers[i].msg_len as usize).min(DATAGRAM);
                    let address = sockaddr_bytes(&addresses[i]);
                    let exporter = state.exporter_of(address);
                    state.feed(&buffers[i * DATAGRAM..i * DATAGRAM + size], exporter, Some(received));
                }
                count += got as usize;
                if (got as usize) < want {
                    break;
                }
            }
            Ok(count)
        });
        result.map_err(|e| PyOSError::new_err(e.to_string()))
    }

    /// Records decoded and not yet detached.
    #[getter]
    fn pending(&self, py: Python<'_>) -> usize {
        self.lock(py).rows.len()
    }

    /// The records decoded since the last `detach()`, the impossible ones
    /// left out (the checks of `schema.impossible`, in its order, applied
    /// here: see `reason`), as a dict: `table`, the canonical table's
    /// columns (an object of the Arrow PyCapsule interface, for
    /// `polars.DataFrame`: no copy) with the records grouped by exporter and
    /// day of `first` (UTC); `parts` ([(exporter, day since the epoch,
    /// first row, rows)], in the order of their first record); `n`;
    /// `exporters` (the names of these records' exporters); `counted` (the
    /// name each one's counters go under); `rejected` ([(exporter index,
    /// reason code, records)], codes as `REASONS`) and `unknown`
    /// ([(exporter index, kept records of sampling rate 0)]).
    /// `max_packet_bytes`: {exporter: bytes} ("*": the others; default
    /// 65,535), as `schema.packet_limit`.
    #[pyo3(signature = (max_packet_bytes=None))]
    fn detach<'py>(&self, py: Python<'py>, max_packet_bytes: Option<HashMap<String, u64>>) -> PyResult<Bound<'py, PyDict>> {
        let mut state = self.lock(py);
        // only the exporters these rows name, renumbered
        let mut map: HashMap<u32, u32> = HashMap::new();
        let (mut names, mut counted) = (Vec::new(), Vec::new());
        let mut exporter = std::mem::take(&mut state.rows.exporter);
        for e in exporter.iter_mut() {
            let next = map.len() as u32;
            *e = *map.entry(*e).or_insert_with(|| {
                names.push(state.names[*e as usize].clone());
                counted.push(state.slot_names[state.slot_of[*e as usize] as usize].clone());
                next
            });
        }
        state.rows.exporter = exporter;
        let limits = max_packet_bytes.unwrap_or_default();
        let other = limits.get("*").copied().unwrap_or(MAX_PACKET_BYTES);
        let size: Vec<u64> = names.iter().map(|n: &String| limits.get(n).copied().unwrap_or(other)).collect();
        let rows = &mut state.rows;
        let (rejected, unknown, parts, columns) = py.detach(|| {
            let (rejected, unknown) = rows.reject(&size, names.len());
            let (parts, columns) = rows.canonical(&names);
            rows.clear(); // the vectors keep their memory for the next records (no page faults to grow them again)
            (rejected, unknown, parts, columns)
        });
        let n = parts.iter().map(|p| p.3).sum::<usize>();
        let parts: Vec<(String, i64, usize, usize)> = parts.into_iter().map(|(e, day, start, len)| (names[e as usize].clone(), day, start, len)).collect();
        let out = PyDict::new(py);
        out.set_item("n", n)?;
        out.set_item("table", Bound::new(py, FlowColumns { columns: Mutex::new(Some((n, columns))) })?)?;
        out.set_item("parts", parts)?;
        out.set_item("exporters", names)?;
        out.set_item("counted", counted)?; // the name each exporter's counters go under
        out.set_item("rejected", rejected)?;
        out.set_item("unknown", unknown)?;
        Ok(out)
    }

    /// The counters: {"counts": {reason: n}, "stats": {name: n},
    /// "exporter_counts": {exporter: {reason: n}}, "exporter_stats":
    /// {exporter: {name: n}}} (zero counts left out).
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.lock(py);
        let out = PyDict::new(py);
        let named = |names: &[&str], values: &[u64]| -> PyResult<Bound<'py, PyDict>> {
            let d = PyDict::new(py);
            for (n, &v) in names.iter().zip(values) {
                if v > 0 {
                    d.set_item(*n, v)?;
                }
            }
            Ok(d)
        };
        out.set_item("counts", named(&REASONS, &state.counts)?)?;
        let stats = named(&STATS, &state.stats)?;
        if state.recovered_sets > 0 {
            stats.set_item("recovered_sets", state.recovered_sets)?;
        }
        out.set_item("stats", stats)?;
        let (ec, es) = (PyDict::new(py), PyDict::new(py));
        for (name, e) in state.slot_names.iter().zip(&state.exporters) {
            if e.counts.iter().any(|&n| n > 0) {
                ec.set_item(name, named(&REASONS, &e.counts)?)?;
            }
            es.set_item(name, named(&STATS, &e.stats)?)?;
        }
        out.set_item("exporter_counts", ec)?;
        out.set_item("exporter_stats", es)?;
        out.set_item("held_bytes", state.held_bytes)?;
        out.set_item("held_sets", state.held.len())?;
        out.set_item("templates", state.templates.len())?;
        out.set_item("template_fields", state.template_fields)?;
        out.set_item("sequences", state.next_sequence.len())?;
        out.set_item("names", state.names.len())?;
        out.set_item("sampler_states", state.sampler_rates.len().max(state.default_rates.len()).max(state.init_ms.len()))?;
        Ok(out)
    }

    /// Problems kept (the first 10,000): [(exporter, reason, detail)].
    fn problems(&self, py: Python<'_>) -> Vec<(String, &'static str, String)> {
        let state = self.lock(py);
        state.problems.clone()
    }
}

/// The canonical columns of a `detach()`, for `polars.DataFrame` (the
/// Arrow PyCapsule interface); they can be taken once.
#[pyclass(module = "alphaqos._core", frozen)]
pub struct FlowColumns {
    columns: Mutex<Option<(usize, Vec<Column>)>>,
}

#[pymethods]
impl FlowColumns {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema; // the columns have one schema
        let taken = self.columns.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (n, columns) = taken.ok_or_else(|| PyValueError::new_err("the columns of a detach() can be taken once"))?;
        arrow::capsules(py, n, columns)
    }
}

fn sockaddr_bytes(address: &libc::sockaddr_storage) -> [u8; 16] {
    let mut out = [0u8; 16];
    match address.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in
            let v4 = unsafe { &*(address as *const _ as *const libc::sockaddr_in) };
            out[10] = 0xff;
            out[11] = 0xff;
            out[12..].copy_from_slice(&v4.sin_addr.s_addr.to_ne_bytes());
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6
            let v6 = unsafe { &*(address as *const _ as *const libc::sockaddr_in6) };
            out = v6.sin6_addr.s6_addr;
        }
        _ => {}
    }
    out
}
