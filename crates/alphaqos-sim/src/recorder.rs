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
//! A workload's connections appear in its own series (active connections,
//! offered and delivered rate), in one summary row per transfer and per
//! connection, and in the TCP series of workload streams
//! ([`StreamSeries`]): the TCP series' columns for each stream at each
//! sample while it is open (nothing before it opens or after it closes),
//! within a budget of rows: past [`STREAM_ROWS_MAX`] rows every other
//! sample is dropped and the streams are sampled every other interval from
//! then on (again as often as needed), so that thousands of long-lived
//! streams keep their whole lifetimes at a coarser step in bounded memory.

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
    /// Keep only the rows for which `keep(row index)` holds, in order.
    pub fn retain(&mut self, keep: impl Fn(usize) -> bool) {
        let kept: Vec<usize> = (0..self.keys.len()).filter(|&i| keep(i)).collect();
        for (to, &from) in kept.iter().enumerate() {
            self.keys[to] = self.keys[from];
            for c in &mut self.data {
                c[to] = c[from];
            }
        }
        self.keys.truncate(kept.len());
        for c in &mut self.data {
            c.truncate(kept.len());
        }
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
/// Columns of the TCP series of workload streams: which stream (the
/// `transfer` and `stream` of `transfer_streams`; the key is its workload),
/// then [`TCP_COLS`].
pub const STREAM_TCP_COLS: &[&str] = &[
    col::TRANSFER, col::STREAM, col::TIME_NS, col::BYTES_ACKED, col::GOODPUT_BPS, col::CWND_BYTES, col::SSTHRESH_BYTES,
    col::SRTT_NS, col::RTO_NS, col::RETRANSMITS, col::RETRANSMITTED_BYTES, col::SPURIOUS_RETRANSMITS,
    col::FAST_RETRANSMITS, col::TIMEOUTS, col::OOO_ARRIVALS, col::OOO_EXTENT_MAX, col::OOO_EXTENT_3PLUS, col::DUP_ACKS_SENT,
];
/// The most rows the TCP series of workload streams holds: 2^18 rows of
/// 18 values, about 40 MB in the engine (and a few times that while
/// Python converts them). The many-flow benchmark (about 10,000 transfers
/// in 10 s) writes some 25,000.
pub const STREAM_ROWS_MAX: usize = 1 << 18;

/// The TCP series of workload streams, thinned to stay within
/// [`STREAM_ROWS_MAX`] rows (see the module doc).
pub struct StreamSeries {
    pub series: Series,
    /// The sample (0, 1, ...) each row was taken at.
    sample_of_row: Vec<u32>,
    /// Streams are sampled at every `every`-th sample (1 until thinned).
    pub every: u32,
    /// Samples so far, and when the streams were last sampled.
    samples: u32,
    pub last: SimTime,
}

impl Default for StreamSeries {
    fn default() -> Self {
        StreamSeries {
            series: Series::new(col::WORKLOAD, STREAM_TCP_COLS, &[col::SRTT_NS, col::SSTHRESH_BYTES]),
            sample_of_row: Vec::new(),
            every: 1,
            samples: 0,
            last: SimTime::ZERO,
        }
    }
}

impl StreamSeries {
    /// Whether the streams are sampled at this sample (every `every`-th,
    /// and the last one of the run, `last`).
    pub fn due(&self, last: bool) -> bool {
        last || self.samples.is_multiple_of(self.every)
    }
    /// Append a stream's row at the current sample: `head` its transfer
    /// and stream, `tcp` its TCP series row.
    pub fn row(&mut self, key: u32, head: [u64; 2], tcp: &[u64]) {
        let mut row = [0u64; 18];
        row[..2].copy_from_slice(&head);
        row[2..].copy_from_slice(tcp);
        self.series.row(key, &row[..STREAM_TCP_COLS.len()]);
        self.sample_of_row.push(self.samples);
    }
    /// The sample is over (`sampled`: the streams were; `last`: the run's
    /// last): thin the series if it grew past `max` rows
    /// ([`STREAM_ROWS_MAX`] but for tests); the last sample's rows stay.
    pub fn end_sample(&mut self, now: SimTime, sampled: bool, last: bool, max: usize) {
        if sampled {
            self.last = now;
        }
        let current = self.samples;
        self.samples += 1;
        while self.series.rows() > max && self.every < 1 << 30 {
            self.every *= 2;
            let every = self.every;
            let keep = |s: u32| s.is_multiple_of(every) || (last && s == current);
            let of = &self.sample_of_row;
            self.series.retain(|i| keep(of[i]));
            self.sample_of_row.retain(|&s| keep(s));
        }
    }
}

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
    pub streams: StreamSeries,
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
            streams: StreamSeries::default(),
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

    #[test]
    fn the_stream_series_is_the_tcp_series_after_its_stream() {
        assert_eq!(&STREAM_TCP_COLS[..2], [col::TRANSFER, col::STREAM]);
        assert_eq!(&STREAM_TCP_COLS[2..], TCP_COLS);
    }

    #[test]
    fn the_stream_series_thins_to_every_other_sample_past_its_budget() {
        let mut names = Names::default();
        let w = names.intern("w");
        let mut s = StreamSeries::default();
        let tcp = [0u64; 16];
        // Two streams; a budget of 10 rows; 12 samples, the last the run's end.
        let mut taken = vec![];
        for k in 0..12u64 {
            let last = k == 11;
            let due = s.due(last);
            if due {
                taken.push(k);
                for stream in 0..2 {
                    let mut row = tcp;
                    row[0] = k; // time_ns: the sample
                    s.row(w, [0, stream], &row);
                }
            }
            s.end_sample(SimTime(k), due, last, 10);
            assert!(s.series.rows() <= 10, "{} rows after sample {k}", s.series.rows());
        }
        // 10 rows after sample 4 -> 12 after sample 5: every 2nd kept
        // (0, 2, 4), then 6, 8 -> 10 rows, 10 -> 12: every 4th (0, 4, 8),
        // then the last sample (11) whatever the step.
        assert_eq!(s.every, 4);
        let t = s.series.table(&names);
        assert_eq!(t.u64s(col::TIME_NS), [0, 0, 4, 4, 8, 8, 11, 11]);
        assert_eq!(t.u64s(col::STREAM), [0, 1, 0, 1, 0, 1, 0, 1]);
        assert_eq!(t.strs(col::WORKLOAD), ["w"; 8]);
        assert_eq!(taken, [0, 1, 2, 3, 4, 5, 6, 8, 10, 11]);
    }
}
