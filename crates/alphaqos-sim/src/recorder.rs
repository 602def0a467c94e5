//! The results recorder: metric series sampled every metric interval, kept
//! column by column.
//!
//! A series is a table with a fixed list of `u64` columns and a key column
//! naming the flow, queue or workload of each row. Keys are interned: a row
//! stores a `u32` index into one name list, and values go straight into
//! their column's vector in declaration order, with no map lookup and no
//! string copied per value. The names are expanded only when the tables
//! leave the engine ([`Series::table`]).
//!
//! Nothing is ever recorded per connection per interval: a workload's many
//! connections appear in its own series (active connections, offered and
//! delivered rate) and in one summary row per transfer and per connection.

use crate::metrics::{col, Column, Table};
use crate::time::SimTime;

/// Interned names of the keys of every series.
#[derive(Default)]
pub struct Names {
    names: Vec<String>,
}

impl Names {
    pub fn intern(&mut self, name: &str) -> u32 {
        self.names.push(name.to_string());
        (self.names.len() - 1) as u32
    }
    pub fn get(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// One series table: rows of `cols.len()` values with a key.
pub struct Series {
    key_col: &'static str,
    cols: &'static [&'static str],
    keys: Vec<u32>,
    data: Vec<Vec<u64>>,
    /// Columns where u64::MAX stands for null.
    nullable: &'static [&'static str],
}

impl Series {
    pub fn new(key_col: &'static str, cols: &'static [&'static str], nullable: &'static [&'static str]) -> Series {
        Series { key_col, cols, keys: Vec::new(), data: cols.iter().map(|_| Vec::new()).collect(), nullable }
    }
    /// Append one row; `values` in the order of the columns.
    pub fn row(&mut self, key: u32, values: &[u64]) {
        debug_assert_eq!(values.len(), self.cols.len(), "a row of {} values for {:?}", values.len(), self.cols);
        self.keys.push(key);
        for (c, &v) in self.data.iter_mut().zip(values) {
            c.push(v);
        }
    }
    pub fn rows(&self) -> usize {
        self.keys.len()
    }
    pub fn table(&self, names: &Names) -> Table {
        let mut t = Table::default().with(self.key_col, Column::Str(self.keys.iter().map(|&k| names.get(k).to_string()).collect()));
        for (c, v) in self.cols.iter().zip(&self.data) {
            let column = if self.nullable.contains(c) {
                Column::OptU64(v.iter().map(|&x| (x != u64::MAX).then_some(x)).collect())
            } else {
                Column::U64(v.clone())
            };
            t = t.with(c, column);
        }
        t
    }
}

/// Columns of the TCP series (one row per TCP flow per interval).
pub const TCP_COLS: &[&str] = &[
    col::TIME_NS, col::BYTES_ACKED, col::GOODPUT_BPS, col::CWND_BYTES, col::SSTHRESH_BYTES, col::SRTT_NS, col::RTO_NS,
    col::RETRANSMITS, col::RETRANSMITTED_BYTES, col::SPURIOUS_RETRANSMITS, col::FAST_RETRANSMITS, col::TIMEOUTS,
    col::OOO_ARRIVALS, col::OOO_EXTENT_MAX, col::OOO_EXTENT_3PLUS, col::DUP_ACKS_SENT,
];
/// Columns of the UDP series.
pub const UDP_COLS: &[&str] = &[col::TIME_NS, col::TX_PKTS, col::RX_PKTS, col::RX_BYTES, col::RX_RATE_BPS, col::DROP_PKTS];
/// Columns of the queue series.
pub const QUEUE_COLS: &[&str] = &[col::TIME_NS, col::LEN_PKTS, col::LEN_BYTES, col::TX_BYTES, col::LEN_GREEN_PKTS, col::LEN_YELLOW_PKTS, col::LEN_RED_PKTS];
/// Columns of the workload series: connections open at the sample, and
/// over the interval the rate of transfers started (their sizes) and of
/// bytes delivered in order to the receivers, plus cumulative counts.
pub const WORKLOAD_COLS: &[&str] = &[
    col::TIME_NS, col::ACTIVE_CONNS, col::OFFERED_BPS, col::DELIVERED_BPS, col::STARTED, col::COMPLETED,
];

/// Columns of the YAQS series (one row per YAQS per interval).
pub const YAQS_COLS: &[&str] = &[col::TIME_NS, col::FAST_BYTES, col::SLOW_BYTES, col::SLOW_FLOWS, col::NOP_BYTES];

/// Every series of a run, and the sampling clock.
pub struct Recorder {
    pub names: Names,
    pub tcp: Series,
    pub udp: Series,
    pub queue: Series,
    pub workload: Series,
    pub yaqs: Series,
    /// Per interface, the keys of its queues in `for_each_queue` order.
    pub queue_keys: Vec<Vec<u32>>,
    /// Per interface, the keys of its YAQS disciplines.
    pub yaqs_keys: Vec<Vec<u32>>,
    pub last_sample: SimTime,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            names: Names::default(),
            tcp: Series::new(col::FLOW, TCP_COLS, &[col::SRTT_NS, col::SSTHRESH_BYTES]),
            udp: Series::new(col::FLOW, UDP_COLS, &[]),
            queue: Series::new(col::QUEUE, QUEUE_COLS, &[]),
            workload: Series::new(col::WORKLOAD, WORKLOAD_COLS, &[]),
            yaqs: Series::new(col::QUEUE, YAQS_COLS, &[]),
            queue_keys: Vec::new(),
            yaqs_keys: Vec::new(),
            last_sample: SimTime::ZERO,
        }
    }
}

/// What an application sees at a sample: the time and the interval's span.
#[derive(Clone, Copy, Debug)]
pub struct Sampling {
    pub now: SimTime,
    pub span_ns: u64,
}

impl Sampling {
    /// The rate in bit/s of `bytes` over the interval.
    pub fn rate(&self, bytes: u64) -> u64 {
        (bytes as u128 * 8 * 1_000_000_000 / self.span_ns.max(1) as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_interned_keys_and_nulls() {
        let mut names = Names::default();
        let (a, b) = (names.intern("a"), names.intern("b"));
        let mut s = Series::new(col::FLOW, &[col::TIME_NS, col::SRTT_NS], &[col::SRTT_NS]);
        s.row(a, &[1, u64::MAX]);
        s.row(b, &[2, 7]);
        let t = s.table(&names);
        assert_eq!(t.strs(col::FLOW), ["a", "b"]);
        assert_eq!(t.u64s(col::TIME_NS), [1, 2]);
        assert_eq!(t.get(col::SRTT_NS), Some(&Column::OptU64(vec![None, Some(7)])));
        assert_eq!(Sampling { now: SimTime(0), span_ns: 1_000_000_000 }.rate(125), 1000);
    }
}
