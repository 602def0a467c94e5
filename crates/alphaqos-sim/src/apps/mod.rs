//! Applications: the traffic sources and sinks of a connection. Each
//! connection runs one application between a source and a destination
//! host; packets of its data direction go source -> destination, replies
//! and ACKs back.
//!
//! Every application implements [`App`]: it reacts to its timers and to its
//! packets, and reports its own metrics (a row of its series per sample, a
//! goodput for the flow summary, tables of its own), so that a new source
//! touches one file.
//!
//! The event loop learns what happened to a connection from the [`Report`]
//! its application returns from each event (delivered, wants data,
//! finished), never by looking inside it; a workload that owns the
//! connection acts on the report (feeds it blocks, seals it, closes it) and
//! reads its final [`TcpCounters`] when it closes.

pub mod bulk;
pub mod cbr;
pub mod onoff;
pub mod ping;
pub mod poisson;
pub mod video;

use crate::event::FlowTimer;
use crate::knob::{Knob, KnobName};
use crate::time::{Duration, SimTime};
use crate::network::{ConnStats, FlowIo};
use crate::packet::Packet;
use crate::recorder::{Recorder, Sampling};

/// How a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Every byte of a finite transfer is acknowledged.
    Finished,
    /// It gave up (the SYN went unanswered).
    Failed,
}

/// What an application tells the event loop after each of its events: all
/// the loop (and the workload owning the connection) learns of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Bytes its receiver has delivered in order so far.
    pub delivered: u64,
    /// Bytes its sending application has written so far.
    pub written: u64,
    /// A stream fed block by block has room for another block
    /// ([`App::offer`]).
    pub wants_data: bool,
    /// It has finished or given up.
    pub end: Option<End>,
}

/// A TCP connection's counters, as its owner records them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCounters {
    pub written: u64,
    pub bytes_acked: u64,
    pub delivered: u64,
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// Segments its receiver already had.
    pub spurious_retransmits: u64,
    pub timeouts: u64,
    /// RTT samples so far and their sum, ns.
    pub rtt_samples: u64,
    pub rtt_sum_ns: u64,
    pub failed: bool,
}

pub trait App: Send {
    /// The `kind` column of the flow summary.
    fn kind(&self) -> &'static str;
    /// A timer of this connection fired. `io.fwd()` sends from its source,
    /// `io.rev()` from its destination.
    fn on_timer(&mut self, t: FlowTimer, io: &mut FlowIo) -> Report;
    /// A packet of this connection reached its destination node (`pkt.dst`).
    fn on_packet(&mut self, _pkt: &Packet, _io: &mut FlowIo) -> Report {
        Report::default()
    }
    /// A stream fed block by block: take blocks of `block` bytes, at most
    /// `left` bytes in all, while it has room; the bytes taken.
    fn offer(&mut self, _block: u64, _left: u64, _io: &mut FlowIo) -> u64 {
        0
    }
    /// No more blocks will come: it is done once what it was fed is
    /// acknowledged. True if that is already so.
    fn seal(&mut self, _now: SimTime) -> bool {
        false
    }
    /// A TCP connection's counters (None for other applications).
    fn counters(&self) -> Option<TcpCounters> {
        None
    }
    /// A TCP connection's row of the TCP series (`recorder::TCP_COLS`);
    /// `prev` is the in-order bytes delivered at its previous row, updated.
    fn tcp_row(&self, _prev: &mut u64, _s: Sampling) -> Option<[u64; 16]> {
        None
    }
    /// The value of knob `n` (`knob.rs`, in its unit), if it has it: TCP
    /// connections have some; others none.
    fn knob_value(&self, _n: KnobName) -> Option<f64> {
        None
    }
    /// Change knob `k` (typed and checked by the registry in `control/`);
    /// false if it has no such knob.
    fn set_knob(&mut self, _k: Knob) -> bool {
        false
    }
    /// One of its measurements (`srtt_ns`, `cwnd_bytes`, ...), if it has it.
    fn measure(&self, _what: &str) -> Option<u64> {
        None
    }
    /// Payload bytes delivered to the receiving application.
    fn delivered(&self, st: &ConnStats) -> u64 {
        st.rx_bytes
    }
    /// Append this flow's row (key `key`) to its series at a sample;
    /// `prev` is the delivered count of the previous sample, to update.
    fn sample(&self, _key: u32, _st: &ConnStats, _prev: &mut u64, _s: Sampling, _rec: &mut Recorder) {}
    /// A prober's (send time, round-trip time) per probe, for the ping table.
    fn probes(&self) -> Option<&[(SimTime, Option<Duration>)]> {
        None
    }
}

/// The UDP series row of a generator whose packets the network counted.
pub(crate) fn udp_sample(key: u32, st: &ConnStats, prev: &mut u64, s: Sampling, rec: &mut Recorder) {
    rec.udp.row(key, &[s.now.as_nanos(), st.tx_pkts, st.rx_pkts, st.rx_bytes, s.rate(st.rx_bytes - *prev), st.drop_pkts]);
    *prev = st.rx_bytes;
}

/// The [`App`] of a UDP generator with an inherent `on_timer(t, &mut impl
/// Wire)` on its source side, reported in the UDP series as `kind`.
macro_rules! udp_app {
    ($t:ty, $kind:literal) => {
        impl $crate::apps::App for $t {
            fn kind(&self) -> &'static str {
                $kind
            }
            fn on_timer(&mut self, t: $crate::event::FlowTimer, io: &mut $crate::network::FlowIo) -> $crate::apps::Report {
                <$t>::on_timer(self, t, &mut io.fwd());
                $crate::apps::Report::default()
            }
            fn sample(&self, key: u32, st: &$crate::network::ConnStats, prev: &mut u64, s: $crate::recorder::Sampling, rec: &mut $crate::recorder::Recorder) {
                $crate::apps::udp_sample(key, st, prev, s, rec)
            }
        }
    };
}
pub(crate) use udp_app;
