//! Applications: the traffic sources and sinks of a connection. Each
//! connection runs one application between a source and a destination
//! host; packets of its data direction go source -> destination, replies
//! and ACKs back.
//!
//! Every application implements [`App`]: it reacts to its timers and to its
//! packets, and reports its own metrics (a row of its series per sample, a
//! goodput for the flow summary, tables of its own), so that a new source
//! touches one file.

pub mod bulk;
pub mod cbr;
pub mod ping;
pub mod poisson;

use crate::event::FlowTimer;
use crate::time::{Duration, SimTime};
use crate::network::{ConnStats, FlowIo};
use crate::packet::Packet;
use crate::recorder::{Recorder, Sampling};

pub trait App: Send {
    /// The `kind` column of the flow summary.
    fn kind(&self) -> &'static str;
    /// A timer of this connection fired. `io.fwd()` sends from its source,
    /// `io.rev()` from its destination.
    fn on_timer(&mut self, t: FlowTimer, io: &mut FlowIo);
    /// A packet of this connection reached its destination node (`pkt.dst`).
    fn on_packet(&mut self, _pkt: &Packet, _io: &mut FlowIo) {}
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
    /// The TCP connection, for measurements and knobs.
    fn tcp(&self) -> Option<&bulk::BulkTcp> {
        None
    }
    /// The TCP connection, for the control plane's knobs.
    fn tcp_mut(&mut self) -> Option<&mut bulk::BulkTcp> {
        None
    }
}

/// The UDP series row of a generator whose packets the network counted.
pub(crate) fn udp_sample(key: u32, st: &ConnStats, prev: &mut u64, s: Sampling, rec: &mut Recorder) {
    rec.udp.row(key, &[s.now.as_nanos(), st.tx_pkts, st.rx_pkts, st.rx_bytes, s.rate(st.rx_bytes - *prev), st.drop_pkts]);
    *prev = st.rx_bytes;
}
