//! RED's average queue, shared by every averaged profile.
//!
//! Floyd & Jacobson, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM ToN 1(4), 1993, Section 4: on each arrival
//! `avg <- (1 - w_q) avg + w_q q`; an arrival at a queue empty since `t0`
//! instead decays it as `m = (now - t0) / s` arrivals of an empty queue,
//! `avg <- (1 - w_q)^m avg`, `s` the transmission time of `mean_pkt_bytes`
//! on the link. The idle period lasts until a packet is admitted: an
//! arrival that is dropped at the still-empty queue restarts it at its own
//! time, so that arrivals at a queue that stays empty go on decaying the
//! average (ns-2 `queue/red.cc` and ns-3 `red-queue-disc.cc` restart their
//! idle clock whenever a dequeue finds nothing; issue 9, defect 0).
//!
//! Parameters: `w_q` in (0, 1], `mean_pkt_bytes` > 0 (bytes). Users: RED
//! ([`super::red`]), the averaged curves of [`super::piecewise`],
//! [`super::color_red`] (GRED, Cisco WRED) and [`super::rio`]. Tests: the
//! decay in `red.rs`, `piecewise.rs` and `tests/aqm.rs`.

use crate::qos::fifo::Limit;
use crate::qos::Backlog;
use crate::time::SimTime;
use crate::units::DataRate;

/// What a fill level or a threshold counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FillUnit {
    #[default]
    Bytes,
    Packets,
}

impl FillUnit {
    pub(crate) fn of(self, b: Backlog) -> u64 {
        match self {
            FillUnit::Bytes => b.bytes,
            FillUnit::Packets => b.pkts,
        }
    }
    pub(crate) fn limit(self, l: Limit) -> u64 {
        match self {
            FillUnit::Bytes => l.bytes,
            FillUnit::Packets => l.pkts,
        }
    }
}

/// The average and its idle clock.
#[derive(Clone, Debug)]
pub(crate) struct Ewma {
    w_q: f64,
    mean_pkt_bytes: u32,
    pub(crate) avg: f64,
    /// When the queue last went empty, while it stays empty.
    idle_since: Option<SimTime>,
}

impl Ewma {
    pub(crate) fn new(w_q: f64, mean_pkt_bytes: u32) -> Ewma {
        Ewma { w_q, mean_pkt_bytes, avg: 0.0, idle_since: Some(SimTime::ZERO) }
    }
    /// An arrival finds the queue at `q` (`queue_empty`: it holds nothing).
    pub(crate) fn update(&mut self, q: f64, queue_empty: bool, now: SimTime, link_rate: DataRate) -> f64 {
        match self.idle_since {
            Some(since) if queue_empty => {
                let s = idle_slot(link_rate, self.mean_pkt_bytes);
                let m = now.since(since).as_nanos() as f64 / s;
                self.avg *= (1.0 - self.w_q).powf(m);
                // Still idle unless this packet is admitted: the next
                // arrival at an empty queue decays from here.
                self.idle_since = Some(now);
            }
            _ => {
                self.idle_since = None;
                self.avg = (1.0 - self.w_q) * self.avg + self.w_q * q;
            }
        }
        self.avg
    }
    /// A packet was admitted: the queue is busy.
    pub(crate) fn busy(&mut self) {
        self.idle_since = None;
    }
    /// The queue went empty at `now`.
    pub(crate) fn idle(&mut self, now: SimTime) {
        self.idle_since = Some(now);
    }
    /// A packet left a queue that now holds `held`: idle from `now` if empty.
    pub(crate) fn on_departure(&mut self, held: Backlog, now: SimTime) {
        if held.pkts == 0 {
            self.idle(now);
        }
    }
    pub(crate) fn is_idle(&self) -> bool {
        self.idle_since.is_some()
    }
}

/// Transmission time of a small packet on the link, ns (at least 1).
fn idle_slot(link_rate: DataRate, mean_pkt_bytes: u32) -> f64 {
    if link_rate.as_bps() == 0 {
        return f64::INFINITY;
    }
    link_rate.tx_time(mean_pkt_bytes as u64).as_nanos().max(1) as f64
}
