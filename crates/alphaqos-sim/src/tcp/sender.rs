//! The sending side of a bulk TCP connection.
//!
//! - Window: `min(cwnd, rwnd)` bytes outstanding; full-sized segments only,
//!   except the last of a finite transfer. cwnd grows only while it is the
//!   limit (RFC 7661).
//! - Fast retransmit and NewReno fast recovery, RFC 6582 Section 3.2: on the
//!   `dupthresh`-th duplicate ACK (unless it does not cover `recover`),
//!   `ssthresh` from the controller, `recover = highest sent`, retransmit the
//!   first unacknowledged segment, `cwnd = ssthresh + dupthresh SMSS`; each
//!   further duplicate inflates cwnd by one SMSS; a partial ACK retransmits
//!   the next hole and deflates cwnd by the bytes it acknowledged (plus one
//!   SMSS back if at least one SMSS), re-arming the timer on the first
//!   partial ACK only (the "impatient" variant the RFC specifies, so that a
//!   window with many losses ends in a timeout rather than one
//!   retransmission per RTT); the full ACK sets `cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS)`.
//! - Retransmission timeout (RFC 6298 timers, RFC 5681 loss window): go back
//!   to the first unacknowledged byte with cwnd = 1 SMSS, back the timer off;
//!   ssthresh falls only if the loss episode is new.
//! - RTT samples from the echoed timestamp of every ACK that acknowledges
//!   new data (RFC 7323, Section 4).

use super::cc::{Ack, CcState, Controller};
use super::rtt::RttEstimator;
use super::{LazyTimer, Wire};
use crate::config::TcpConfig;
use crate::event::FlowTimer;
use crate::packet::{Payload, TCP_HEADER_BYTES};
use crate::time::{Duration, SimTime};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    /// Segments sent again (fast retransmits, partial-ACK and timeout resends).
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// Entries into fast recovery.
    pub fast_retransmits: u64,
    pub timeouts: u64,
}

pub struct TcpSender {
    mss: u64,
    /// Bytes the application has to send (u64::MAX: unlimited).
    limit: u64,
    snd_una: u64,
    snd_nxt: u64,
    /// Highest sequence sent plus one.
    snd_max: u64,
    rwnd: u64,
    cc: Box<dyn Controller>,
    st: CcState,
    dupthresh: u32,
    dupacks: u32,
    in_recovery: bool,
    /// A partial ACK already re-armed the timer in this recovery.
    partial_acked: bool,
    recover: Option<u64>,
    rtt: RttEstimator,
    rto: LazyTimer,
    active: bool,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(cfg: &TcpConfig, cc: Box<dyn Controller>) -> Self {
        let mss = cfg.mss_bytes as u64;
        TcpSender {
            mss,
            limit: cfg.size_bytes.unwrap_or(u64::MAX),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            rwnd: cfg.rwnd_bytes,
            cc,
            st: CcState { cwnd: cfg.init_cwnd_pkts as u64 * mss, ssthresh: u64::MAX, mss },
            dupthresh: cfg.dupthresh,
            dupacks: 0,
            in_recovery: false,
            partial_acked: false,
            recover: None,
            rtt: RttEstimator::new(
                Duration(cfg.initial_rto_ns),
                Duration(cfg.min_rto_ns),
                Duration(cfg.max_rto_ns),
            ),
            rto: LazyTimer::default(),
            active: false,
            stats: SenderStats::default(),
        }
    }

    pub fn cwnd(&self) -> u64 {
        self.st.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.st.ssthresh
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }
    pub fn bytes_acked(&self) -> u64 {
        self.snd_una
    }
    pub fn in_flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }
    pub fn is_active(&self) -> bool {
        self.active
    }
    pub fn controller(&self) -> &str {
        self.cc.name()
    }

    pub fn start(&mut self, w: &mut impl Wire) {
        self.active = true;
        self.send_data(w);
    }

    /// The application stops: no new data, no retransmissions, timers dropped.
    pub fn stop(&mut self) {
        self.active = false;
        self.rto.clear();
    }

    /// Room in the host queue again.
    pub fn on_wake(&mut self, w: &mut impl Wire) {
        self.send_data(w);
    }

    pub fn on_timer(&mut self, timer: FlowTimer, w: &mut impl Wire) {
        if timer == FlowTimer::Rto && self.rto.fire(FlowTimer::Rto, w) && self.active {
            self.on_timeout(w);
        }
    }

    fn transmit(&mut self, seq: u64, w: &mut impl Wire) {
        let len = self.mss.min(self.limit - seq);
        if seq < self.snd_max {
            self.stats.retransmits += 1;
            self.stats.retransmitted_bytes += len;
        }
        self.stats.segments_sent += 1;
        let now = w.now();
        w.send(Payload::TcpData { seq, len: len as u32, ts_val: now }, len as u32 + TCP_HEADER_BYTES);
        if self.rto.deadline().is_none() {
            self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
        }
    }

    /// Send new (or, after a timeout, resent) segments while the window allows.
    fn send_data(&mut self, w: &mut impl Wire) {
        if !self.active {
            return;
        }
        let wnd = self.st.cwnd.min(self.rwnd);
        while self.snd_nxt < self.limit {
            let len = self.mss.min(self.limit - self.snd_nxt);
            if self.snd_nxt - self.snd_una + len > wnd || !w.tx_room() {
                break;
            }
            let seq = self.snd_nxt;
            self.transmit(seq, w);
            self.snd_nxt += len;
            self.snd_max = self.snd_max.max(self.snd_nxt);
        }
    }

    pub fn on_ack(&mut self, ack: u64, ts_ecr: SimTime, w: &mut impl Wire) {
        if !self.active || ack > self.snd_max {
            return;
        }
        let now = w.now();
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            let flight = self.snd_max - self.snd_una;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            let rtt = now.since(ts_ecr);
            self.rtt.sample(rtt);
            let sample = Ack {
                now,
                acked,
                rtt: Some(rtt),
                min_rtt: self.rtt.min_rtt(),
                in_flight: flight,
                snd_una: ack,
                snd_max: self.snd_max,
                cwnd_limited: self.cwnd_limited(flight),
            };
            self.cc.on_measure(&self.st, &sample);
            if self.in_recovery {
                if self.recover.is_some_and(|r| ack >= r) {
                    // Full acknowledgment: leave recovery, deflate.
                    let flight = self.snd_max - self.snd_una;
                    self.st.cwnd = self.st.ssthresh.min(flight.max(self.mss) + self.mss);
                    self.in_recovery = false;
                    self.dupacks = 0;
                    self.cc.on_recovery_exit(&mut self.st, now);
                } else {
                    // Partial acknowledgment: the next hole is lost too.
                    self.transmit(self.snd_una, w);
                    self.st.cwnd = self.st.cwnd.saturating_sub(acked).max(self.mss);
                    if acked >= self.mss {
                        self.st.cwnd += self.mss;
                    }
                    if !self.partial_acked {
                        self.partial_acked = true;
                        self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
                    }
                }
            } else {
                self.dupacks = 0;
                self.cc.on_ack(&mut self.st, &sample);
            }
            if self.snd_una == self.snd_max {
                self.rto.clear();
            } else if !self.in_recovery {
                self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
            }
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            self.dupacks += 1;
            if self.in_recovery {
                self.st.cwnd += self.mss;
            } else if self.dupacks == self.dupthresh && self.recover.is_none_or(|r| ack > r) {
                self.enter_recovery(w);
            }
        }
        self.send_data(w);
    }

    /// Grow the window only while it limits sending (RFC 7661, and Linux's
    /// `tcp_is_cwnd_limited`): in slow start while cwnd < 2 x FlightSize,
    /// in congestion avoidance while the flight fills the window. A flow
    /// held back by the receiver window or by the application does not
    /// inflate cwnd without bound.
    fn cwnd_limited(&self, flight: u64) -> bool {
        if self.st.cwnd < self.st.ssthresh {
            self.st.cwnd < 2 * flight
        } else {
            flight + self.mss >= self.st.cwnd
        }
    }

    fn enter_recovery(&mut self, w: &mut impl Wire) {
        let now = w.now();
        let flight = self.snd_max - self.snd_una;
        self.st.ssthresh = self.cc.ssthresh_after_loss(&self.st, now, flight);
        self.recover = Some(self.snd_max);
        self.in_recovery = true;
        self.partial_acked = false;
        self.stats.fast_retransmits += 1;
        self.transmit(self.snd_una, w);
        self.st.cwnd = self.st.ssthresh + self.dupthresh as u64 * self.mss;
    }

    fn on_timeout(&mut self, w: &mut impl Wire) {
        if self.snd_una == self.snd_max {
            return;
        }
        let now = w.now();
        self.stats.timeouts += 1;
        let flight = self.snd_max - self.snd_una;
        // One reduction per loss episode: a timeout while the data of an
        // earlier reduction is still unacknowledged (fast recovery, or a
        // previous timeout) keeps ssthresh, as Linux's tcp_enter_loss does
        // and RFC 5681 (Section 3.1) asks for repeated timeouts.
        if self.recover.is_some_and(|r| self.snd_una < r) {
            self.st.cwnd = self.mss;
        } else {
            self.cc.on_timeout(&mut self.st, now, flight);
        }
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = Some(self.snd_max);
        self.snd_nxt = self.snd_una;
        self.rtt.backoff();
        self.rto.clear();
        self.send_data(w);
    }
}
