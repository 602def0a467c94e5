//! Counters, series and delay statistics, with column names defined once.
//!
//! Results leave the engine as tables of equal-length columns (see
//! docs/engine-config.md); the Python side turns them into polars
//! DataFrames and Parquet without glue.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// Column names, shared by every table that has the column.
pub mod col {
    pub const FLOW: &str = "flow";
    pub const KIND: &str = "kind";
    pub const SRC: &str = "src";
    pub const DST: &str = "dst";
    pub const TIME_NS: &str = "time_ns";
    pub const SEQ: &str = "seq";
    pub const RTT_NS: &str = "rtt_ns";
    pub const BYTES_ACKED: &str = "bytes_acked";
    pub const GOODPUT_BPS: &str = "goodput_bps";
    pub const CWND_BYTES: &str = "cwnd_bytes";
    pub const SSTHRESH_BYTES: &str = "ssthresh_bytes";
    pub const SRTT_NS: &str = "srtt_ns";
    pub const RTO_NS: &str = "rto_ns";
    pub const RETRANSMITS: &str = "retransmits";
    pub const RETRANSMITTED_BYTES: &str = "retransmitted_bytes";
    pub const SPURIOUS_RETRANSMITS: &str = "spurious_retransmits";
    pub const LINK_LOSS_PKTS: &str = "link_loss_pkts";
    pub const FAST_RETRANSMITS: &str = "fast_retransmits";
    pub const TIMEOUTS: &str = "timeouts";
    pub const OOO_ARRIVALS: &str = "ooo_arrivals";
    pub const OOO_EXTENT_MAX: &str = "ooo_extent_max";
    pub const OOO_EXTENT_3PLUS: &str = "ooo_extent_3plus";
    pub const DUP_ACKS_SENT: &str = "dup_acks_sent";
    pub const TX_PKTS: &str = "tx_pkts";
    pub const TX_BYTES: &str = "tx_bytes";
    pub const RX_PKTS: &str = "rx_pkts";
    pub const RX_BYTES: &str = "rx_bytes";
    pub const RX_RATE_BPS: &str = "rx_rate_bps";
    pub const DROP_PKTS: &str = "drop_pkts";
    pub const DROP_BYTES: &str = "drop_bytes";
    pub const DROP_REV_PKTS: &str = "drop_rev_pkts";
    pub const QUEUE: &str = "queue";
    pub const LINK: &str = "link";
    pub const LEN_PKTS: &str = "len_pkts";
    pub const LEN_BYTES: &str = "len_bytes";
    /// Packets held by colour (green, yellow, red): the virtual queues of a
    /// colour-aware queue, as ns-2's DiffServ module reports them.
    pub const LEN_GREEN_PKTS: &str = "len_green_pkts";
    pub const LEN_YELLOW_PKTS: &str = "len_yellow_pkts";
    pub const LEN_RED_PKTS: &str = "len_red_pkts";
    pub const ENQ_PKTS: &str = "enq_pkts";
    pub const ENQ_BYTES: &str = "enq_bytes";
    pub const DEQ_PKTS: &str = "deq_pkts";
    pub const DEQ_BYTES: &str = "deq_bytes";
    pub const BACKLOG_PKTS: &str = "backlog_pkts";
    pub const BACKLOG_BYTES: &str = "backlog_bytes";
    pub const RATE_BPS: &str = "rate_bps";
    pub const DELAY_MEAN_NS: &str = "delay_mean_ns";
    pub const DELAY_STD_NS: &str = "delay_std_ns";
    pub const DELAY_MIN_NS: &str = "delay_min_ns";
    pub const DELAY_P50_NS: &str = "delay_p50_ns";
    pub const DELAY_P99_NS: &str = "delay_p99_ns";
    pub const DELAY_MAX_NS: &str = "delay_max_ns";
    pub const WORKLOAD: &str = "workload";
    pub const TRANSFER: &str = "transfer";
    pub const STREAM: &str = "stream";
    pub const STREAMS: &str = "streams";
    pub const ACTIVE_CONNS: &str = "active_conns";
    pub const OFFERED_BPS: &str = "offered_bps";
    pub const DELIVERED_BPS: &str = "delivered_bps";
    pub const STARTED: &str = "started";
    pub const COMPLETED: &str = "completed";
    pub const START_NS: &str = "start_ns";
    pub const END_NS: &str = "end_ns";
    pub const RECEIVER_END_NS: &str = "receiver_end_ns";
    pub const SIZE_BYTES: &str = "size_bytes";
    pub const FCT_NS: &str = "fct_ns";
    pub const IDEAL_FCT_NS: &str = "ideal_fct_ns";
    pub const MEAN_RATE_BPS: &str = "mean_rate_bps";
    pub const SRC_PORT: &str = "src_port";
    pub const SYN_RETRIES: &str = "syn_retries";
    pub const FAILED: &str = "failed";
    pub const STALE_PKTS: &str = "stale_pkts";
    pub const CONNS_OPENED: &str = "conns_opened";
    pub const MAX_CONNS: &str = "max_conns";
    /// The TCP series of workload streams has a row every this many
    /// metric intervals (1 unless thinned to its budget of rows).
    pub const STREAM_SAMPLE_EVERY: &str = "stream_sample_every";
    /// Drops of packets a queue had admitted (CoDel, FQ-CoDel's overflow).
    pub const DROP_QUEUED_PKTS: &str = "drop_queued_pkts";
    pub const DROP_QUEUED_BYTES: &str = "drop_queued_bytes";
    /// Per queue: time from enqueue to dequeue of the packets sent.
    pub const SOJOURN_MEAN_NS: &str = "sojourn_mean_ns";
    pub const SOJOURN_P99_NS: &str = "sojourn_p99_ns";
    pub const NODE: &str = "node";
    pub const TERM: &str = "term";
    pub const MATCHED_PKTS: &str = "matched_pkts";
    pub const MATCHED_BYTES: &str = "matched_bytes";
    pub const OUT_OF_PROFILE_PKTS: &str = "out_of_profile_pkts";
    pub const DISCARDED_PKTS: &str = "discarded_pkts";
    /// Packets a term's policer coloured green, yellow, red.
    pub const GREEN_PKTS: &str = "green_pkts";
    pub const YELLOW_PKTS: &str = "yellow_pkts";
    pub const RED_PKTS: &str = "red_pkts";
    pub const EVENTS: &str = "events";
    // YAQS (qos/yaqs.rs) and the interface monitor (monitor.rs).
    pub const ARRIVALS: &str = "arrivals";
    pub const CLASSIFIED_SLOW: &str = "classified_slow";
    pub const NOP_BYTES: &str = "nop_bytes";
    pub const NOP_BYTES_INTO_EMPTY: &str = "nop_bytes_into_empty";
    pub const INFLATED_PKTS: &str = "inflated_pkts";
    pub const SLOW_FLOWS: &str = "slow_flows";
    pub const SLOW_FLOWS_MAX: &str = "slow_flows_max";
    pub const SLOW_FLOWS_MEAN: &str = "slow_flows_mean";
    pub const FAST_BYTES: &str = "fast_bytes";
    pub const SLOW_BYTES: &str = "slow_bytes";
    pub const FAST_LEN_MAX_BYTES: &str = "fast_len_max_bytes";
    pub const FAST_LEN_MEAN_BYTES: &str = "fast_len_mean_bytes";
    pub const FAST_LEN_P90_BYTES: &str = "fast_len_p90_bytes";
    pub const FALSE_POSITIVES: &str = "false_positives";
    pub const STRICT_FALSE_POSITIVES: &str = "strict_false_positives";
    pub const QLEN_MAX_BYTES: &str = "qlen_max_bytes";
    pub const QLEN_MEAN_BYTES: &str = "qlen_mean_bytes";
    pub const QLEN_P90_BYTES: &str = "qlen_p90_bytes";
    pub const DATA_PKTS: &str = "data_pkts";
    pub const REORDERED_PKTS: &str = "reordered_pkts";
    pub const FAST_AFTER_SLOW: &str = "fast_after_slow";
    pub const SLOW_AFTER_FAST: &str = "slow_after_fast";
    pub const SOURCE: &str = "source";
    pub const LOW_BYTES: &str = "low_bytes";
    pub const COUNT: &str = "count";
    pub const SIM_TIME_NS: &str = "sim_time_ns";
    /// `drop_<reason>_pkts` for every `DropReason`.
    pub fn drop_reason(reason: &str) -> String {
        format!("drop_{reason}_pkts")
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    F64(Vec<f64>),
    Str(Vec<String>),
    OptU64(Vec<Option<u64>>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::OptU64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Serialize for Column {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Column::U64(v) => v.serialize(s),
            Column::F64(v) => v.serialize(s),
            Column::Str(v) => v.serialize(s),
            Column::OptU64(v) => v.serialize(s),
        }
    }
}

/// Named columns in a fixed order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
}

impl Table {
    pub fn with(mut self, name: &str, c: Column) -> Self {
        self.columns.push((name.to_string(), c));
        self
    }
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
    pub fn u64s(&self, name: &str) -> &[u64] {
        match self.get(name) {
            Some(Column::U64(v)) => v,
            _ => panic!("no u64 column {name}"),
        }
    }
    pub fn strs(&self, name: &str) -> &[String] {
        match self.get(name) {
            Some(Column::Str(v)) => v,
            _ => panic!("no string column {name}"),
        }
    }
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }
}

impl Serialize for Table {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.columns.len()))?;
        for (k, v) in &self.columns {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A log-linear histogram with a relative precision of `2^-BITS` (as
/// HdrHistogram does; `BITS` = 10 for delays, [`SojournHistogram`]'s 6 for
/// the per-queue sojourn times, recorded for every packet of every queue
/// and kept small: 64 buckets per power of two, ~1.6 %), with the exact
/// count, sum, minimum and maximum: mean and percentiles.
///
/// Only the buckets from the lowest to the highest value recorded are
/// held (`buckets[i]` is bucket `first + i`): a one-way delay of 10-30 ms
/// spans about 1,600 of the 16,000 buckets below 30 ms, so each flow's
/// histogram takes some 13 KB instead of 130 KB (10,000 flows: 130 MB
/// instead of 1.3 GB; issue 25's memory target).
#[derive(Clone, Debug, Default)]
pub struct Histogram<const BITS: u32 = 10> {
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
    /// The bucket index of `buckets[0]`.
    first: usize,
    buckets: Vec<u64>,
}

/// The per-queue sojourn histogram.
pub type SojournHistogram = Histogram<6>;

/// The name of a class's queue: the link, or "<link>/<class>".
pub fn queue_name(iface: &str, class: &str) -> String {
    if class.is_empty() {
        iface.to_string()
    } else {
        format!("{iface}/{class}")
    }
}

#[cfg(test)]
const SUB_BITS: u32 = 10;
#[cfg(test)]
const SUB: u64 = 1 << SUB_BITS;

#[inline]
fn bucket_of_bits(v: u64, bits: u32) -> usize {
    let sub = 1u64 << bits;
    if v < 2 * sub {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= bits + 1
    let shift = exp - bits;
    let mantissa = (v >> shift) - sub; // in [0, sub)
    (2 * sub + (shift as u64 - 1) * sub + mantissa) as usize
}

fn bucket_low_bits(b: usize, bits: u32) -> u64 {
    let (b, sub) = (b as u64, 1u64 << bits);
    if b < 2 * sub {
        return b;
    }
    let shift = (b - 2 * sub) / sub + 1;
    let mantissa = (b - 2 * sub) % sub;
    (sub + mantissa) << shift
}

#[cfg(test)]
fn bucket_of(v: u64) -> usize {
    bucket_of_bits(v, SUB_BITS)
}

#[cfg(test)]
fn bucket_low(b: usize) -> u64 {
    bucket_low_bits(b, SUB_BITS)
}

impl<const BITS: u32> Histogram<BITS> {
    #[inline]
    pub fn record(&mut self, v: u64) {
        // The first sample sets min and max (n == 0 leaves min at 0).
        self.min = if self.n == 0 { v } else { self.min.min(v) };
        self.max = self.max.max(v);
        self.n += 1;
        self.sum += v as u128;
        let b = bucket_of_bits(v, BITS);
        // Below `first` the index wraps round to beyond the end: grow.
        match self.buckets.get_mut(b.wrapping_sub(self.first)) {
            Some(c) => *c += 1,
            None => self.grow(b),
        }
    }
    /// Extend the held range to bucket `b` (down or up) and count in it.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, b: usize) {
        if self.buckets.is_empty() {
            self.first = b;
            self.buckets.push(0);
        } else if b < self.first {
            self.buckets.splice(0..0, std::iter::repeat(0).take(self.first - b));
            self.first = b;
        } else {
            self.buckets.resize(b - self.first + 1, 0);
        }
        self.buckets[b - self.first] += 1;
    }
    pub fn count(&self) -> u64 {
        self.n
    }
    /// The non-empty buckets: (lowest value of the bucket, count).
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let first = self.first;
        self.buckets.iter().enumerate().filter(|(_, &c)| c > 0).map(move |(i, &c)| (bucket_low_bits(first + i, BITS), c))
    }
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / self.n as f64)
    }
    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }
    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }
    /// The smallest recorded value v such that at least `q` of the samples
    /// are <= v (to the histogram's precision), clamped to the exact
    /// minimum and maximum.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bucket_low_bits(self.first + i, BITS).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// One-way delay statistics: a [`Histogram`] (count, mean, minimum,
/// maximum, percentiles) and the standard deviation (Welford).
#[derive(Clone, Debug, Default)]
pub struct DelayStats {
    hist: Histogram,
    mean: f64,
    m2: f64,
}

impl DelayStats {
    pub fn record(&mut self, v: u64) {
        self.hist.record(v);
        let d = v as f64 - self.mean;
        self.mean += d / self.hist.n as f64;
        self.m2 += d * (v as f64 - self.mean);
    }
    pub fn count(&self) -> u64 {
        self.hist.count()
    }
    pub fn mean(&self) -> Option<f64> {
        self.hist.mean()
    }
    /// Population standard deviation.
    pub fn std(&self) -> Option<f64> {
        (self.hist.n > 0).then(|| (self.m2 / self.hist.n as f64).sqrt())
    }
    pub fn min(&self) -> Option<u64> {
        self.hist.min()
    }
    pub fn max(&self) -> Option<u64> {
        self.hist.max()
    }
    /// See [`Histogram::quantile`].
    pub fn quantile(&self, q: f64) -> Option<u64> {
        self.hist.quantile(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_precise() {
        let mut last = 0;
        for v in (0..5_000_000u64).step_by(997).chain([u64::MAX / 2, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b >= last);
            last = b;
            let lo = bucket_low(b);
            assert!(lo <= v, "{v}: low {lo}");
            assert!((v - lo) as f64 <= v as f64 / SUB as f64, "{v}: low {lo}");
        }
    }

    #[test]
    fn exact_moments_and_close_quantiles() {
        let mut d = DelayStats::default();
        for v in 1..=100_000u64 {
            d.record(v * 1000);
        }
        assert_eq!(d.mean(), Some(50_000_500.0));
        assert_eq!(d.min(), Some(1000));
        assert_eq!(d.max(), Some(100_000_000));
        let p50 = d.quantile(0.5).unwrap() as f64;
        let p99 = d.quantile(0.99).unwrap() as f64;
        assert!((p50 - 50_000_000.0).abs() / 5e7 < 2e-3, "{p50}");
        assert!((p99 - 99_000_000.0).abs() / 9.9e7 < 2e-3, "{p99}");
        let sd = d.std().unwrap();
        let exact = 1000.0 * ((100_000f64 * 100_000.0 - 1.0) / 12.0).sqrt();
        assert!((sd - exact).abs() / exact < 1e-9);
        let mut one = DelayStats::default();
        one.record(51_234);
        one.record(51_234);
        assert_eq!(one.quantile(0.5), Some(51_234), "clamped to exact min and max");
        assert_eq!(one.std(), Some(0.0));
    }

    #[test]
    fn holds_only_the_recorded_span_in_any_order() {
        // One-way delays of 10-30 ms (a flow's whole run): the buckets held
        // are those between, not the 16,000 from zero up.
        let values: Vec<u64> = (0..20_000u64).map(|i| 10_000_000 + (i * 7_919 % 20_000) * 1_000).collect();
        let mut up = DelayStats::default();
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for &v in &sorted {
            up.record(v);
        }
        let span = bucket_of(sorted[sorted.len() - 1]) - bucket_of(sorted[0]) + 1;
        assert_eq!(up.hist.buckets.len(), span);
        assert!(span < 2_000 && bucket_of(30_000_000) > 16_000, "{span}");
        // Descending, and in a scattered order (the range grows down and
        // up): the same buckets, counts and quantiles.
        let mut down = DelayStats::default();
        for &v in sorted.iter().rev() {
            down.record(v);
        }
        let mut mixed = DelayStats::default();
        for &v in &values {
            mixed.record(v);
        }
        let counts = |d: &DelayStats| d.hist.buckets().collect::<Vec<_>>();
        let mut dense = std::collections::BTreeMap::new();
        for &v in &values {
            *dense.entry(bucket_low(bucket_of(v))).or_insert(0u64) += 1;
        }
        let dense: Vec<(u64, u64)> = dense.into_iter().collect();
        for d in [&up, &down, &mixed] {
            assert_eq!(counts(d), dense);
            assert_eq!(d.hist.buckets.len(), span);
            for q in [0.0, 0.1, 0.5, 0.99, 1.0] {
                assert_eq!(d.quantile(q), up.quantile(q));
            }
        }
        assert_eq!(up.quantile(0.5), Some(bucket_low(bucket_of(sorted[9_999]))));
    }
}
