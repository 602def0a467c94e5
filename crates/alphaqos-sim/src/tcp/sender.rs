//! The sending side of a bulk TCP connection.
//!
//! - Window: at most `min(cwnd, advertised window, send buffer)` bytes
//!   outstanding; full-sized segments only, except the last of a finite
//!   transfer. cwnd grows only while it is the limit (RFC 7661).
//! - Loss recovery, one of three, as the host would run it:
//!   - SACK (RFC 6675): a scoreboard of SACKed ranges; a hole is lost once
//!     more than (DupThresh - 1) SMSS are SACKed above it; recovery starts
//!     on the DupThresh-th duplicate ACK or when the first unacknowledged
//!     segment is lost, with `cwnd = ssthresh`; while `pipe` (the bytes
//!     estimated in the network) is below cwnd, NextSeg sends the first lost
//!     hole not yet retransmitted, else new data; recovery ends when the
//!     cumulative ACK reaches the recovery point.
//!   - NewReno (RFC 6582, Section 3.2): on the DupThresh-th duplicate ACK
//!     (unless it does not cover `recover`), retransmit the first
//!     unacknowledged segment, `cwnd = ssthresh + DupThresh SMSS`; inflate by
//!     one SMSS per further duplicate; a partial ACK retransmits the next
//!     hole and deflates cwnd by the bytes it acknowledged (plus one SMSS
//!     back if at least one SMSS), re-arming the timer on the first partial
//!     ACK only (the "impatient" variant the RFC specifies); the full ACK sets
//!     `cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS)`.
//!   - Reno (RFC 5681, Section 3.2): like NewReno, but the first new ACK
//!     ends recovery (`cwnd = ssthresh`), and every DupThresh duplicate ACKs
//!     start a new one.
//! - Lost retransmissions (as Linux's `tcp_mark_lost_retrans`): in SACK
//!   recovery, a retransmission is lost once data sent after it, new data
//!   or a later retransmission, has been SACKed; it is sent again instead of
//!   waiting for the timer (RFC 6675 alone would count it in flight until an
//!   RTO).
//! - Limited transmit (RFC 3042): the first two duplicate ACKs each let one
//!   new segment out beyond cwnd.
//! - Retransmission timeout (RFC 6298 timers computed as Linux does by
//!   default, see `rtt.rs`; RFC 5681 loss window): go back
//!   to the first unacknowledged byte with cwnd = 1 SMSS (skipping SACKed
//!   data), back the timer off; ssthresh falls only if the loss episode is
//!   new.
//! - RACK option (RFC 8985, simplified): with SACK, a hole counts as lost
//!   once a reordering window has passed since data above it was first
//!   SACKed, instead of after DupThresh segments: reordering shorter than
//!   the window causes no retransmission. The hole's age stands in for
//!   RACK's per-segment transmit times, which it matches when the segments
//!   around a hole left back to back. The window is min RTT / 4 times a
//!   multiplier, at most SRTT (RFC 8985 Section 6.2, step 4; Linux
//!   `tcp_rack_reo_wnd`, `tcp_rack_update_reo_wnd`): a D-SACK (the receiver
//!   got a segment twice: a retransmission was spurious) raises the
//!   multiplier by one, at most once per round trip (until snd_una passes
//!   the snd_max of the D-SACK that raised it), and 16 recoveries without
//!   one bring it back to 1. D-SACKs need the receiver's `dsack`.
//! - RTT samples from the echoed timestamp of every ACK that acknowledges
//!   new data (RFC 7323, Section 4).
//! - Pacing: a maximum rate (Linux SO_MAX_PACING_RATE), and optionally
//!   Linux's internal pacing at 2 cwnd/srtt in slow start, 1.2 cwnd/srtt in
//!   congestion avoidance (`tcp_update_pacing_rate`).
//! - Linux 2.6.33 options (FACK, the adaptive reordering metric, undo of
//!   spurious recoveries, cwnd moderation, rate-halving, TSO frames): see
//!   `linux.rs`; Linux 6's (tail loss probes, PRR, TSO and TSQ sized from
//!   the pacing rate): `linux6.rs`; with none of them set the sender is the
//!   RFC one above.

use super::cc::{Ack, CcState, Controller, SockPacing};
use super::linux::{Linux, LinuxStats};
use super::linux6::{self, Prr};
use super::ns2::Ns2;
use super::ranges::{Cursor, RangeSet};
use super::rtt::{RttEstimator, RtoStyle};
use super::{LazyTimer, Wire};
use crate::config::TcpConfig;
use crate::event::FlowTimer;
use crate::packet::{Payload, SackBlocks, TCP_HEADER_BYTES};
use crate::time::{Duration, SimTime};
use crate::units::DataRate;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    /// Segments sent again (fast retransmits, recovery and timeout resends).
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// Entries into fast recovery.
    pub fast_retransmits: u64,
    pub timeouts: u64,
    /// Retransmissions found lost (and sent again) in SACK recovery.
    pub lost_retransmits: u64,
}

/// A retransmission not yet known delivered or lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RetxEntry {
    end: u64,
    /// Its transmission number (the order in which segments left).
    order: u64,
    /// The transmission number its delivery proves delivered: its own, or,
    /// for the re-send of a copy found lost, the older copy's (a SACK of
    /// the segment cannot tell which copy arrived, so it proves the least).
    credit: u64,
    /// When it left.
    sent: SimTime,
}

/// RFC 8985's RACK.reo_wnd_persist: recoveries without a D-SACK before
/// the reordering window's multiplier falls back to 1 (Section 6.2, step 4;
/// Linux `TCP_RACK_RECOVERY_THRESH`).
const RACK_REO_WND_PERSIST: u32 = 16;

/// RACK's state (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rack {
    /// (lowest SACKed byte above a hole, when it was first SACKed), ascending.
    marks: Vec<(u64, SimTime)>,
    /// RACK.reo_wnd_mult: the window in units of min RTT / 4.
    reo_wnd_mult: u32,
    /// RACK.reo_wnd_persist: recoveries left before the multiplier is reset.
    reo_wnd_persist: u32,
    /// RACK.dsack_round: the snd_max when a D-SACK last raised the
    /// multiplier; further D-SACKs count once snd_una has passed it.
    dsack_round: Option<u64>,
    /// The end of a timeout's recovery: the snd_max at the timeout.
    rto_recover: Option<u64>,
}

impl Rack {
    fn new() -> Self {
        Rack { marks: Vec::new(), reo_wnd_mult: 1, reo_wnd_persist: RACK_REO_WND_PERSIST, dsack_round: None, rto_recover: None }
    }

    /// RACK.reo_wnd = min(reo_wnd_mult x min RTT / 4, SRTT); 0 before an RTT sample.
    fn reo_wnd(&self, rtt: &RttEstimator) -> Duration {
        self.reo_wnd_of(rtt.min_rtt(), rtt.srtt())
    }

    fn reo_wnd_of(&self, min_rtt: Option<Duration>, srtt: Option<Duration>) -> Duration {
        let wnd = min_rtt.map_or(0, |r| r.as_nanos() / 4 * self.reo_wnd_mult as u64);
        Duration(srtt.map_or(wnd, |s| wnd.min(s.as_nanos())))
    }

    /// Every ACK (RFC 8985 Section 6.2, step 4, its D-SACK part): a D-SACK
    /// in a round without one widens the window.
    fn on_ack(&mut self, snd_una: u64, snd_max: u64, dsack: bool) {
        if self.rto_recover.is_some_and(|r| snd_una >= r) {
            self.rto_recover = None;
            self.on_recovery_exit();
        }
        if self.dsack_round.is_some_and(|r| snd_una >= r) {
            self.dsack_round = None;
        }
        if dsack && self.dsack_round.is_none() {
            self.dsack_round = Some(snd_max);
            self.reo_wnd_mult = self.reo_wnd_mult.saturating_add(1);
            self.reo_wnd_persist = RACK_REO_WND_PERSIST;
        }
    }

    /// The end of a fast or timeout recovery (step 4's else branch).
    fn on_recovery_exit(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
        if self.reo_wnd_persist == 0 {
            self.reo_wnd_mult = 1;
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    Sack,
    NewReno,
    Reno,
}

pub struct TcpSender {
    mss: u64,
    /// Bytes the application has to send (u64::MAX: unlimited).
    limit: u64,
    snd_una: u64,
    snd_nxt: u64,
    /// Highest sequence sent plus one.
    snd_max: u64,
    /// The peer's advertised window, bytes.
    peer_wnd: u64,
    sndbuf: u64,
    cc: Box<dyn Controller>,
    st: CcState,
    recovery: Recovery,
    dupthresh: u32,
    dupacks: u32,
    limited_transmit: bool,
    in_recovery: bool,
    /// A partial ACK already re-armed the timer in this recovery (NewReno).
    partial_acked: bool,
    /// The recovery point (RFC 6582 `recover`, RFC 6675 `RecoveryPoint`).
    recover: Option<u64>,
    /// SACK scoreboard: SACKed ranges above snd_una.
    sacked: RangeSet,
    /// RFC 6675 HighRxt: every hole below it was retransmitted. Unlike the
    /// RFC's (step 4.3 sets it anew in each recovery), it survives the end
    /// of a recovery and the start of the next, as Linux keeps the
    /// per-segment TCPCB_SACKED_RETRANS mark: a hole retransmitted in one
    /// episode is not sent again in the next while its copy is in flight.
    /// Only a timeout (which presumes everything outstanding lost) resets it.
    high_rxt: u64,
    /// SACK retransmissions not yet delivered (across recovery episodes,
    /// until a timeout): start -> entry, and the same in the order sent
    /// with the snd_max at the time: (transmission number, start,
    /// snd_max). Entries of the second that the first no longer holds are
    /// stale.
    retx: std::collections::BTreeMap<u64, RetxEntry>,
    retx_order: std::collections::VecDeque<(u64, u64, u64)>,
    /// The newest retransmission known delivered (transmission number).
    newest_delivered: u64,
    /// Retransmissions found lost, to send again: (start, end, transmission
    /// number of the copy found lost), and their bytes.
    retx_lost: std::collections::VecDeque<(u64, u64, u64)>,
    retx_lost_bytes: u64,
    /// The transmission number of the lost copy the next transmission re-sends.
    resend_of: Option<u64>,
    tx_count: u64,
    /// SACKed bytes below max(high_rxt, snd_una) and below snd_nxt.
    rxt_cur: Cursor,
    nxt_cur: Cursor,
    /// RACK: the holes' ages and the reordering window.
    rack: Option<Rack>,
    rack_timer: LazyTimer,
    rtt: RttEstimator,
    rto: LazyTimer,
    max_pacing_rate: Option<DataRate>,
    /// Upper bound of cwnd (u64::MAX: none), a control-plane knob.
    cwnd_clamp: u64,
    internal_pacing: bool,
    pace_next: SimTime,
    pace: LazyTimer,
    active: bool,
    /// Linux 2.6.33 behaviours (None: none set).
    linux: Option<Linux>,
    /// ns-2.35 behaviours (`ns2.rs`; None: none set).
    ns2: Option<Ns2>,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(cfg: &TcpConfig, cc: Box<dyn Controller>) -> Self {
        let mss = cfg.mss_bytes as u64;
        let host = cfg.host();
        let mut rtt = RttEstimator::new(
            Duration(cfg.initial_rto_ns),
            Duration(cfg.min_rto_ns),
            Duration(cfg.max_rto_ns),
            if cfg.rto_style == "rfc6298" { RtoStyle::Rfc6298 } else { RtoStyle::Linux },
        );
        rtt.set_tick(Duration(host.tcp_tick_ns));
        let recovery = if cfg.sack {
            Recovery::Sack
        } else if cfg.cc == "reno" {
            Recovery::Reno
        } else {
            Recovery::NewReno
        };
        TcpSender {
            mss,
            limit: cfg.size_bytes.unwrap_or(u64::MAX),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            // Until the first ACK: the peer's buffer as the handshake announced it.
            peer_wnd: if cfg.window_scaling { cfg.rwnd_bytes } else { cfg.rwnd_bytes.min(65_535) },
            sndbuf: cfg.sndbuf_bytes.unwrap_or(u64::MAX),
            cc,
            st: CcState { cwnd: cfg.init_cwnd_pkts as u64 * mss, ssthresh: u64::MAX, mss },
            recovery,
            dupthresh: cfg.dupthresh,
            dupacks: 0,
            limited_transmit: cfg.limited_transmit,
            in_recovery: false,
            partial_acked: false,
            recover: None,
            sacked: RangeSet::default(),
            high_rxt: 0,
            retx: Default::default(),
            retx_order: Default::default(),
            newest_delivered: 0,
            retx_lost: Default::default(),
            retx_lost_bytes: 0,
            resend_of: None,
            tx_count: 0,
            rxt_cur: Cursor::default(),
            nxt_cur: Cursor::default(),
            rack: cfg.rack.then(Rack::new),
            rack_timer: LazyTimer::default(),
            rtt,
            rto: LazyTimer::default(),
            max_pacing_rate: cfg.max_pacing_rate_bps.map(DataRate),
            cwnd_clamp: u64::MAX,
            internal_pacing: cfg.pacing,
            pace_next: SimTime::ZERO,
            pace: LazyTimer::default(),
            active: false,
            linux: Linux::new(host, cfg.dupthresh),
            ns2: Ns2::new(&host, cfg.sack, cfg.cc == "newreno" || cfg.cc == "reno"),
            stats: SenderStats::default(),
        }
    }

    /// Is ns-2's Sack1 recovery in force (`ns2.rs`)?
    fn sack1(&self) -> bool {
        self.ns2.as_ref().is_some_and(|n| n.sack1)
    }

    /// ns-2's `pipe_` (packets) and `fastrecov_`, with Sack1 recovery.
    pub fn sack1_state(&self) -> Option<(i64, bool)> {
        self.ns2.as_ref().filter(|n| n.sack1).map(|n| (n.pipe, n.fastrecov))
    }

    /// The highest retransmitted byte plus one (RFC 6675 HighRxt; ns-2's
    /// `h_seqno_`) and the SACKed bytes on the scoreboard.
    pub fn scoreboard(&self) -> (u64, u64) {
        (self.high_rxt, self.sacked.bytes())
    }

    /// The Linux behaviours' counters (None: none is on).
    pub fn linux_stats(&self) -> Option<&LinuxStats> {
        self.linux.as_ref().map(|l| &l.stats)
    }

    /// The reordering metric, segments: Linux's `tp->reordering`, or DupThresh.
    pub fn reordering(&self) -> u64 {
        self.linux.as_ref().map_or(self.dupthresh as u64, |l| l.reordering)
    }

    /// Is FACK loss marking in force?
    pub fn fack(&self) -> bool {
        self.linux.as_ref().is_some_and(|l| l.fack)
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
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// The controller's committed target rate, if it has one (base_flow).
    pub fn target_rate(&self) -> Option<DataRate> {
        self.cc.target_rate()
    }
    /// The congestion controller, for its knobs (`ctr_bps`).
    pub fn controller_mut(&mut self) -> &mut dyn Controller {
        self.cc.as_mut()
    }
    /// RTT samples so far and their sum, ns (for means over an interval).
    pub fn rtt_totals(&self) -> (u64, u64) {
        self.rtt.totals()
    }
    /// The maximum pacing rate (SO_MAX_PACING_RATE); None: unpaced unless
    /// internal pacing is on. Returns the previous one.
    pub fn set_max_pacing_rate(&mut self, rate: Option<DataRate>) -> Option<DataRate> {
        std::mem::replace(&mut self.max_pacing_rate, rate)
    }
    pub fn max_pacing_rate(&self) -> Option<DataRate> {
        self.max_pacing_rate
    }
    /// Bound the window the sender uses by `bytes` (u64::MAX: no bound), as
    /// Linux's `snd_cwnd_clamp` bounds cwnd. Returns the previous bound.
    pub fn set_cwnd_clamp(&mut self, bytes: u64) -> u64 {
        std::mem::replace(&mut self.cwnd_clamp, bytes.max(self.mss))
    }
    pub fn cwnd_clamp(&self) -> u64 {
        self.cwnd_clamp
    }

    pub fn start(&mut self, w: &mut impl Wire) {
        self.active = true;
        self.send_data(w);
    }

    /// Bytes the application has handed to the socket so far (u64::MAX:
    /// an endless bulk source).
    pub fn written(&self) -> u64 {
        self.limit
    }

    /// Set what the application has written so far: before `start`, for a
    /// sender whose data comes over time (see [`TcpSender::write`]).
    pub fn set_written(&mut self, limit: u64) {
        self.limit = limit;
    }

    /// The application writes `n` more bytes into the socket (an
    /// application-limited sender): send what the windows allow.
    pub fn write(&mut self, n: u64, w: &mut impl Wire) {
        self.limit = self.limit.saturating_add(n);
        self.send_data(w);
    }

    /// The three-way handshake completed after `rtt` (the first RTT
    /// sample, as Linux's `tcp_synack_rtt_meas`); if the SYN had to be
    /// sent again, the initial window is one segment (RFC 5681, Section
    /// 3.1; Linux `tcp_init_transfer`).
    pub fn on_handshake(&mut self, rtt: Duration, syn_retransmitted: bool) {
        self.rtt.sample(rtt);
        if syn_retransmitted {
            self.st.cwnd = self.mss;
        }
    }

    /// The application stops: no new data, no retransmissions, timers dropped.
    pub fn stop(&mut self) {
        self.active = false;
        self.rto.clear();
        self.pace.clear();
    }

    /// Room in the host queue again.
    pub fn on_wake(&mut self, w: &mut impl Wire) {
        self.send_data(w);
    }

    pub fn on_timer(&mut self, timer: FlowTimer, w: &mut impl Wire) {
        match timer {
            FlowTimer::Rto if self.rto.fire(FlowTimer::Rto, w) && self.active => {
                if self.tlp_fired(w) {
                    return;
                }
                if self.sack1() {
                    self.on_timeout_sack1(w)
                } else {
                    self.on_timeout(w)
                }
            }
            FlowTimer::Pace if self.pace.fire(FlowTimer::Pace, w) => self.send_data(w),
            FlowTimer::Rack if self.rack_timer.fire(FlowTimer::Rack, w) && self.active => {
                if self.rack_retx() && self.in_recovery && !self.retx_order.is_empty() {
                    let una = self.snd_una;
                    self.find_lost_retransmissions(&SackBlocks::default(), una, w);
                }
                if !self.in_recovery && self.snd_una < self.snd_max && self.loss_detected(w.now()) {
                    self.enter_recovery(w);
                    // `tcp_rack_reo_timeout`: `tcp_cwnd_reduction(sk, 1, ...)`.
                    self.prr_reduction(1, false, true, w.now());
                }
                self.send_data(w);
            }
            _ => {}
        }
    }

    /// The pacing rate now, if the connection paces.
    fn pacing_rate(&self) -> Option<DataRate> {
        let internal = if self.internal_pacing && self.edt_frames() {
            // Linux 6 (`linux6.rs`): `tcp_update_pacing_rate`, max(cwnd, packets_out).
            self.linux_pacing_rate().map(|bytes_per_s| DataRate(bytes_per_s.saturating_mul(8)))
        } else if self.internal_pacing {
            self.rtt.srtt().map(|srtt| {
                // Linux tcp_update_pacing_rate: 200% of cwnd/srtt in slow start, 120% after.
                let pct: u128 = if self.st.cwnd < self.st.ssthresh / 2 { 200 } else { 120 };
                let bps = self.st.cwnd as u128 * 8 * 1_000_000_000 * pct / 100 / srtt.as_nanos().max(1) as u128;
                DataRate(bps.min(u64::MAX as u128) as u64)
            })
        } else {
            None
        };
        match (internal, self.max_pacing_rate) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Send a segment and move the next pacing departure on by it.
    #[inline]
    fn transmit(&mut self, seq: u64, len: u64, w: &mut impl Wire) {
        self.send_segment(seq, len, true, w);
    }

    /// Send a segment; with `pace`, move the next pacing departure on by it
    /// (else the caller charges a whole frame, Linux 6).
    fn send_segment(&mut self, seq: u64, len: u64, pace: bool, w: &mut impl Wire) {
        let retx = seq < self.snd_max;
        if retx {
            self.stats.retransmits += 1;
            self.stats.retransmitted_bytes += len;
        }
        self.stats.segments_sent += 1;
        self.tx_count += 1;
        if retx && self.in_recovery && self.recovery == Recovery::Sack && !self.sack1() {
            let credit = self.resend_of.take().unwrap_or(self.tx_count);
            self.retx.insert(seq, RetxEntry { end: seq + len, order: self.tx_count, credit, sent: w.now() });
            self.retx_order.push_back((self.tx_count, seq, self.snd_max));
        }
        let now = w.now();
        if let Some(lx) = &mut self.linux {
            if retx {
                lx.on_retransmit(seq, len, now);
            }
            // `tcp_write_xmit`, `tcp_xmit_retransmit_queue`: `prr_out` counts what leaves in a reduction.
            if self.in_recovery && lx.opts.prr {
                lx.prr.out += 1;
            }
        }
        let size = len as u32 + TCP_HEADER_BYTES;
        // PSH on the segment that empties what the application wrote (as
        // Linux marks the last segment of a write, `tcp_push`).
        let push = seq + len >= self.limit;
        w.send(Payload::TcpData { seq, len: len as u32, ts_val: now, retx, push }, size);
        self.snd_max = self.snd_max.max(seq + len);
        if self.rto.deadline().is_none() {
            self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
        }
        if pace {
            self.pace_after(size as u64, now);
        }
    }

    /// The next departure after an skb of `bytes` (wire) left at `now`.
    /// Linux 6 (`tcp_update_skb_after_send`, `linux6.rs`): an skb that
    /// left late (its departure time behind the clock) takes its own
    /// lateness, up to half its gap, off the gap; nothing of it is kept for
    /// the next skb.
    fn pace_after(&mut self, bytes: u64, now: SimTime) {
        let Some(rate) = self.pacing_rate() else { return };
        let len_ns = rate.tx_time(bytes).as_nanos();
        let credit = if self.edt_frames() { now.as_nanos().saturating_sub(self.pace_next.as_nanos()) } else { 0 };
        self.pace_next = self.pace_next.max(now) + Duration(len_ns - credit.min(len_ns / 2));
    }

    /// Linux 6's RACK judges retransmissions by their send time too (`linux6.rs`).
    fn rack_retx(&self) -> bool {
        self.rack.is_some() && self.linux.as_ref().is_some_and(|l| l.opts.sack_reentry)
    }

    /// Linux 6 paces TSO frames, not segments (`linux6.rs`): is the sender
    /// in the middle of one? Then its next segment leaves at once.
    fn edt_frames(&self) -> bool {
        self.linux.as_ref().is_some_and(|l| l.opts.tso_autosize && l.opts.tso_max_bytes > 0)
    }
    fn mid_frame(&self) -> bool {
        self.linux.as_ref().is_some_and(|l| l.opts.tso_autosize && l.tso_left > 0)
    }

    /// Every hole below the returned sequence is lost: by RACK's reordering
    /// window if enabled, else RFC 6675's rule (more than (DupThresh - 1)
    /// SMSS SACKed above it).
    /// Also returns the SACKed bytes at and above that sequence.
    fn lost_edge(&self, now: SimTime) -> (u64, u64) {
        if let Some(rack) = &self.rack {
            let reo_wnd = rack.reo_wnd(&self.rtt);
            return match rack.marks.iter().rev().find(|&&(_, seen)| seen + reo_wnd <= now) {
                // `b` began a SACKed block when it was marked; the hole below
                // it may have been SACKed since, so it can lie inside a block.
                Some(&(b, _)) => (b, self.sacked.covered_in(b, u64::MAX)),
                None => (self.snd_una, self.sacked.bytes()),
            };
        }
        if self.fack() {
            // FACK (`tcp_update_scoreboard`): every hole more than
            // `reordering` segments below the forward-most SACKed byte.
            let top = self.sacked.last().map_or(self.snd_una, |(_, e)| e);
            let edge = top.saturating_sub(self.reordering() * self.mss);
            if edge > self.snd_una {
                return (edge, self.sacked.covered_in(edge, u64::MAX));
            }
            return (self.snd_una, self.sacked.bytes());
        }
        let threshold = (self.reordering() - 1) * self.mss;
        let mut above = 0;
        for (s, e) in self.sacked.iter_rev() {
            above += e - s;
            if above > threshold {
                return (s, above);
            }
        }
        (self.snd_una, self.sacked.bytes())
    }

    /// RFC 6675 SetPipe: outstanding bytes not SACKed, less those deemed
    /// lost, plus those retransmitted (a retransmission is assumed in flight
    /// until acknowledged).
    fn pipe(&self, now: SimTime) -> u64 {
        let unsacked = (self.snd_max - self.snd_una) - self.sacked.bytes();
        let lost_from = self.rxt_cur.pos();
        let (edge, above) = self.lost_edge(now);
        let lost_not_resent = if lost_from < edge {
            // SACKed bytes in [lost_from, edge): all, less those below and above.
            (edge - lost_from) - (self.sacked.bytes() - self.rxt_cur.below() - above)
        } else {
            0
        };
        unsacked.saturating_sub(lost_not_resent + self.retx_lost_bytes)
    }

    /// RFC 6675 NextSeg, rule 1: the first lost hole not yet retransmitted.
    fn next_lost_hole(&self, now: SimTime) -> Option<(u64, u64)> {
        let (start, next_sacked) = self.sacked.next_gap(self.high_rxt.max(self.snd_una));
        (start < self.lost_edge(now).0).then(|| (start, self.mss.min(next_sacked - start)))
    }

    /// The next new (or, after a timeout, resent) segment the windows allow.
    fn next_new_segment(&mut self) -> Option<(u64, u64)> {
        // After a timeout snd_nxt walks again from snd_una: skip SACKed data.
        if let Some((_, e)) = self.sacked.containing(self.snd_nxt) {
            self.set_snd_nxt(e);
        }
        if self.snd_nxt >= self.limit {
            return None;
        }
        let len = self.mss.min(self.limit - self.snd_nxt);
        let end = self.snd_nxt + len;
        if end > self.snd_una + self.peer_wnd.max(self.mss) || end - self.snd_una > self.sndbuf {
            return None;
        }
        if !(self.in_recovery && self.recovery == Recovery::Sack) {
            // Limited transmit: one segment beyond cwnd per duplicate ACK, at most two.
            let allowance = if self.limited_transmit && !self.in_recovery { self.dupacks.min(2) as u64 * self.mss } else { 0 };
            let flight = (self.snd_nxt - self.snd_una) - self.nxt_cur.below();
            if flight + len > self.st.cwnd.min(self.cwnd_clamp) + allowance {
                return None;
            }
        }
        Some((self.snd_nxt, len))
    }

    /// Send while the window (or, in SACK recovery, pipe) allows; then
    /// (Linux 6) the TSQ limit follows the pacing rate and the loss probe
    /// is re-armed.
    fn send_data(&mut self, w: &mut impl Wire) {
        if !self.active {
            return;
        }
        if self.sack1() {
            return self.sack1_send_much(w);
        }
        let Some(opts) = self.linux.as_mut().map(|lx| {
            lx.tso_left = 0;
            lx.tso_deferred_by_cwnd = false;
            lx.opts
        }) else {
            return self.send_window(w);
        };
        if opts.tso_autosize {
            let frame = self.tso_goal().max(self.mss) + TCP_HEADER_BYTES as u64;
            w.set_tx_limit(linux6::tsq_limit(self.linux_pacing_rate(), frame));
        }
        let sent_before = self.tx_count;
        self.send_window(w);
        if opts.cwnd_usage {
            // `tcp_write_xmit`'s end: `is_cwnd_limited |= in_flight >= cwnd`, then `tcp_cwnd_validate`.
            let flight = (self.snd_nxt - self.snd_una) - self.nxt_cur.below();
            let lx = self.linux.as_mut().expect("linux");
            let limited = lx.tso_deferred_by_cwnd || flight + self.mss > self.st.cwnd.min(self.cwnd_clamp);
            if limited || self.tx_count > sent_before {
                lx.usage.validate(limited, self.snd_una, self.snd_max - self.snd_una, self.snd_nxt);
            }
        }
        if opts.tlp {
            self.schedule_loss_probe(w);
        }
    }

    /// `tcp_update_pacing_rate` (`linux6.rs`), bytes/s; None before an RTT sample.
    fn linux_pacing_rate(&self) -> Option<u64> {
        let packets_out = (self.snd_max - self.snd_una).div_ceil(self.mss) * self.mss;
        linux6::pacing_rate(self.st.cwnd, packets_out, self.st.ssthresh, self.rtt.srtt())
    }

    /// The socket's pacing as CUBIC's HyStart reads it (Linux 6 hosts only):
    /// paced with internal pacing or a maximum pacing rate; the rate
    /// `tcp_update_pacing_rate` keeps whether it paces or not, capped by
    /// the maximum; `sk_gso_max_size` the profile's largest TSO frame
    /// (GSO is always on for Linux TCP, 64 KB when TSO is off).
    fn sock_pacing(&self) -> Option<SockPacing> {
        let lx = self.linux.as_ref().filter(|l| l.opts.hystart_pacing)?;
        let mut rate = self.linux_pacing_rate().unwrap_or(0);
        if let Some(max) = self.max_pacing_rate {
            rate = rate.min(max.0 / 8);
        }
        let gso_max = if lx.opts.tso_max_bytes > 0 { lx.opts.tso_max_bytes } else { linux6::GSO_MAX_SIZE };
        Some(SockPacing { paced: self.internal_pacing || self.max_pacing_rate.is_some(), rate, gso_max })
    }

    /// The largest TSO frame: `tso_max_bytes`, or `tcp_tso_autosize`'s goal.
    fn tso_goal(&self) -> u64 {
        let Some(lx) = &self.linux else { return 0 };
        let max = lx.opts.tso_max_bytes;
        if !lx.opts.tso_autosize || max == 0 {
            return max;
        }
        linux6::tso_goal(self.linux_pacing_rate(), self.rtt.min_rtt(), self.mss, max)
    }

    fn send_window(&mut self, w: &mut impl Wire) {
        loop {
            if w.now() < self.pace_next && !self.mid_frame() && self.pacing_rate().is_some() {
                self.pace.set(self.pace_next, FlowTimer::Pace, w);
                return;
            }
            let sack_recovery = self.in_recovery && self.recovery == Recovery::Sack;
            let seg = if sack_recovery {
                let now = w.now();
                if self.pipe(now) + self.mss > self.st.cwnd.min(self.cwnd_clamp) {
                    return;
                }
                match self.pop_lost_retransmission() {
                    Some((s, e, order)) => {
                        self.resend_of = Some(order);
                        Some((s, e - s))
                    }
                    None => match self.next_lost_hole(now) {
                        Some(hole) => Some(hole),
                        None => self.next_new_segment(),
                    },
                }
            } else {
                self.next_new_segment()
            };
            let Some((seq, len)) = seg else { return };
            let new_data = seq >= self.snd_max;
            // Linux 6 paces whole TSO frames: a frame's gap is charged once, at its start.
            let framed = new_data && self.edt_frames();
            let starts_frame = framed && !self.mid_frame();
            if new_data && !self.tso_allows(len) {
                return;
            }
            if !w.tx_room() {
                self.resend_of = None;
                return;
            }
            self.send_segment(seq, len, !framed, w);
            if starts_frame {
                let frame = len + self.linux.as_ref().map_or(0, |l| l.tso_left);
                self.pace_after(frame + frame.div_ceil(self.mss) * TCP_HEADER_BYTES as u64, w.now());
            }
            if sack_recovery && seq < self.snd_nxt {
                self.set_high_rxt(self.high_rxt.max(seq + len));
            } else {
                self.set_snd_nxt(seq + len);
            }
        }
    }

    /// TSO (`tcp_tso_should_defer`, `tcp_mss_split_point`): new data
    /// leaves in frames of up to `tso_max_bytes`; in the Open state a frame
    /// smaller than that and than a third of min(cwnd, peer window) waits
    /// for more ACKs while data is in flight. Takes `len` bytes from the
    /// frame being sent, or starts one.
    fn tso_allows(&mut self, len: u64) -> bool {
        let open = !self.in_recovery && self.sacked.is_empty();
        let in_flight = (self.snd_nxt - self.snd_una) - self.nxt_cur.below();
        let send_win = (self.snd_una + self.peer_wnd).saturating_sub(self.snd_nxt);
        let cong_win = self.st.cwnd.saturating_sub(in_flight);
        let (avail, chunk) = (self.limit.saturating_sub(self.snd_nxt), self.peer_wnd.min(self.st.cwnd) / 3);
        let Some(lx) = self.linux.as_mut().filter(|l| l.opts.tso_max_bytes > 0) else { return true };
        if lx.tso_left >= len {
            lx.tso_left -= len;
            return true;
        }
        let (autosize, fixed) = (lx.opts.tso_autosize, lx.opts.tso_max_bytes);
        let max = if autosize { self.tso_goal().max(len) } else { fixed };
        let lx = self.linux.as_mut().expect("linux");
        let limit = send_win.min(cong_win);
        let send = !open || in_flight == 0 || limit >= max || limit >= avail || limit >= chunk;
        if send {
            lx.tso_left = limit.min(max).max(len) - len;
        } else if cong_win < send_win && cong_win <= max.min(avail) {
            lx.tso_deferred_by_cwnd = true;
        }
        send
    }

    fn set_snd_nxt(&mut self, v: u64) {
        self.snd_nxt = v;
        self.nxt_cur.move_to(&self.sacked, v);
    }

    fn set_high_rxt(&mut self, v: u64) {
        self.high_rxt = v;
        self.rxt_cur.move_to(&self.sacked, v.max(self.snd_una));
    }

    /// An ACK of new data outside recovery reaches the controller. Linux 6
    /// (`stretch_ack_ss`, `linux6.rs`) grows cwnd in slow start by every
    /// segment a stretch ACK covers (`tcp_slow_start`: `cwnd = min(cwnd +
    /// acked, ssthresh)`, the rest to congestion avoidance): the ACK is
    /// passed on in pieces of at most RFC 3465's L = 2 SMSS that each
    /// controller takes whole, while cwnd is below ssthresh, and what is
    /// left in one piece, the RTT sample on the first only. Else the
    /// controller sees the ACK as it came.
    fn grow(&mut self, sample: Ack) {
        let stretch = self.linux.as_ref().is_some_and(|l| l.opts.stretch_ack_ss);
        let (mut left, mut piece) = (sample.acked, sample);
        while stretch && left > 2 * self.mss && self.st.cwnd < self.st.ssthresh {
            self.cc.on_ack(&mut self.st, &Ack { acked: 2 * self.mss, ..piece });
            left -= 2 * self.mss;
            // One RTT sample per ACK (HyStart counts samples, not pieces).
            piece.rtt = None;
        }
        self.cc.on_ack(&mut self.st, &Ack { acked: left, ..piece });
    }

    /// Grow the window only while it limits sending (RFC 7661, and Linux's
    /// `tcp_is_cwnd_limited`): in slow start while cwnd < 2 x FlightSize,
    /// in congestion avoidance while the flight fills the window. A flow
    /// held back by the receiver window or by the application does not
    /// inflate cwnd without bound.
    /// Linux 6 (`cwnd_usage`, `linux6.rs`) also grows it on every ACK of a
    /// flight in which cwnd held sending back.
    fn cwnd_limited(&self, flight: u64) -> bool {
        if self.linux.as_ref().is_some_and(|l| l.opts.cwnd_usage && l.usage.limited) {
            return true;
        }
        if self.st.cwnd < self.st.ssthresh {
            self.st.cwnd < 2 * flight
        } else {
            flight + self.mss >= self.st.cwnd
        }
    }

    pub fn on_ack(&mut self, ack: u64, ts_ecr: SimTime, wnd: u64, sack: &SackBlocks, w: &mut impl Wire) {
        if self.sack1() {
            return self.on_ack_sack1(ack, ts_ecr, wnd, sack, w);
        }
        if !self.active || ack > self.snd_max {
            return;
        }
        let prior_una = self.snd_una;
        let now = w.now();
        self.peer_wnd = wnd;
        let mut newly_sacked = 0;
        // PRR (`linux6.rs`): was anything newly marked lost by this ACK?
        let prr = self.linux.as_ref().is_some_and(|l| l.opts.prr);
        let lost_before = (prr && self.in_recovery).then(|| (self.lost_edge(now).0, self.stats.lost_retransmits));
        // Linux: the forward-most SACKed byte before this ACK (fackets_out),
        // the lowest segment found reordered, a D-SACK.
        let prior_top = self.sacked.last().map_or(self.snd_una, |(_, e)| e);
        let mut reordered: Option<u64> = None;
        let mut dsack = false;
        if let Some((s, e)) = sack.dsack(ack).filter(|_| self.linux.is_some() || self.rack.is_some()) {
            dsack = true;
            if let Some(lx) = &mut self.linux {
                lx.on_dsack(s, e, self.mss);
            }
        }
        if let Some(rack) = &mut self.rack {
            rack.on_ack(ack.max(self.snd_una), self.snd_max, dsack);
        }
        if self.recovery == Recovery::Sack {
            for (s, e) in sack.iter(ack) {
                if e > ack.max(self.snd_una) && e <= self.snd_max {
                    if let Some(lx) = &self.linux {
                        // `tcp_sacktag_write_queue`: a segment never
                        // retransmitted, SACKed below the forward-most one.
                        let (gap, _) = self.sacked.next_gap(s.max(ack).max(self.snd_una));
                        if gap < e.min(prior_top) && !lx.ever_retx.covers(gap, gap + 1) {
                            reordered = Some(reordered.map_or(gap, |r| r.min(gap)));
                        }
                    }
                    let top = self.sacked.last().map_or(ack.max(self.snd_una), |(_, e)| e);
                    newly_sacked += Cursor::insert(&mut self.sacked, s.max(ack), e, &mut [&mut self.rxt_cur, &mut self.nxt_cur]);
                    if let Some(rack) = &mut self.rack {
                        if s > top {
                            // A new hole [top, s): its reordering window starts now.
                            rack.marks.push((s, now));
                            let reo_wnd = rack.reo_wnd(&self.rtt);
                            self.rack_timer.set(now + reo_wnd, FlowTimer::Rack, w);
                        }
                    }
                }
            }
        }
        if let Some(low) = reordered {
            let top = self.sacked.last().map_or(self.snd_una, |(_, e)| e);
            let metric = top.saturating_sub(low).div_ceil(self.mss);
            self.linux.as_mut().expect("linux").update_reordering(metric);
        }
        if ack > self.snd_una {
            if let Some(lx) = &mut self.linux {
                // `tcp_clean_rtx_queue`: a hole neither SACKed nor ever
                // retransmitted filled below the forward-most SACKed byte.
                let mut x = self.snd_una;
                while let Some((_, e)) = self.sacked.containing(x).or_else(|| lx.ever_retx.containing(x)) {
                    x = e;
                }
                if x < ack && x < prior_top {
                    lx.update_reordering((prior_top - x).div_ceil(self.mss));
                }
                lx.ever_retx.remove_below(ack);
            }
            let acked = ack - self.snd_una;
            if prr {
                // Delivered by this ACK: what it acknowledges and was not SACKed before.
                newly_sacked += acked - self.sacked.covered_in(self.snd_una, ack);
            }
            let flight = self.snd_max - self.snd_una;
            self.snd_una = ack;
            Cursor::remove_below(&mut self.sacked, ack, &mut [&mut self.rxt_cur, &mut self.nxt_cur]);
            self.snd_nxt = self.snd_nxt.max(ack);
            if let Some(rack) = &mut self.rack {
                rack.marks.retain(|&(b, _)| b > ack);
            }
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
                // Read by HyStart only, which runs in slow start only.
                pacing: if self.st.cwnd < self.st.ssthresh { self.sock_pacing() } else { None },
            };
            self.cc.on_measure(&self.st, &sample);
            if self.in_recovery {
                self.on_recovery_ack(acked, ts_ecr, w);
            } else {
                self.dupacks = 0;
                match &mut self.ns2 {
                    Some(n) if n.per_ack_growth => n.opencwnd(&mut self.st),
                    _ => self.grow(sample),
                }
            }
            if self.snd_una == self.snd_max {
                self.rto.clear();
            } else if !self.in_recovery || self.recovery == Recovery::Sack {
                self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
            }
        } else if ack == self.snd_una && self.snd_max > self.snd_una && (self.recovery != Recovery::Sack || newly_sacked > 0 || sack.is_empty()) {
            self.dupacks += 1;
            if self.in_recovery && self.recovery != Recovery::Sack {
                self.st.cwnd += self.mss;
            }
        }
        if let Some(h) = self.linux.as_ref().and_then(|l| l.tlp.high_seq) {
            if ack >= h {
                self.process_tlp_ack(ack, h, dsack, ack > prior_una || newly_sacked > 0, now);
            }
        }
        if self.recovery == Recovery::Sack && !(self.retx.is_empty() && self.retx_lost.is_empty()) {
            self.find_lost_retransmissions(sack, ack, w);
        }
        if !self.in_recovery && self.snd_una < self.snd_max && self.loss_detected(now) {
            self.enter_recovery(w);
        }
        if self.linux.is_some() {
            let progress = ack > prior_una || newly_sacked > 0 || dsack;
            self.linux_after_ack(progress, now);
            if prr {
                let newly_lost = lost_before.is_none_or(|(edge, lost_retx)| self.lost_edge(now).0 > edge || self.stats.lost_retransmits > lost_retx);
                let delivered = newly_sacked.div_ceil(self.mss);
                self.prr_reduction(delivered, ack > prior_una, newly_lost, now);
            }
        }
        self.send_data(w);
    }

    /// PRR (RFC 6937; `tcp_cwnd_reduction`, `linux6.rs`): in recovery,
    /// cwnd = pipe + sndcnt after an ACK that delivered `delivered` segments.
    fn prr_reduction(&mut self, delivered: u64, una_advanced: bool, newly_lost: bool, now: SimTime) {
        if !self.in_recovery || !self.linux.as_ref().is_some_and(|l| l.opts.prr) {
            return;
        }
        let mss = self.mss;
        let pipe = self.pipe(now).div_ceil(mss);
        let ssthresh = (self.st.ssthresh / mss).max(1);
        let lx = self.linux.as_mut().expect("linux");
        if let Some(cwnd) = lx.prr.on_ack(delivered, pipe, ssthresh, una_advanced, newly_lost) {
            self.st.cwnd = cwnd.max(1) * mss;
        }
    }

    /// `tcp_process_tlp_ack`: the ACK reached the probe's `tlp_high_seq`.
    fn process_tlp_ack(&mut self, ack: u64, high: u64, dsack: bool, progress: bool, now: SimTime) {
        let lx = self.linux.as_mut().expect("linux");
        if !lx.tlp.retrans || dsack {
            // New data probed, or the original and the probe both arrived.
            lx.tlp.high_seq = None;
        } else if ack > high {
            // The probe repaired a loss: one reduction (`tcp_init_cwnd_reduction`,
            // then `tcp_end_cwnd_reduction`: cwnd = ssthresh).
            lx.tlp.high_seq = None;
            lx.stats.tlp_recoveries += 1;
            let flight = self.reduction_flight();
            self.st.ssthresh = self.cc.ssthresh_after_loss(&self.st, now, flight);
            self.st.cwnd = self.st.ssthresh.max(self.mss);
            self.cc.on_recovery_exit(&mut self.st, now);
        } else if !progress {
            // A pure duplicate ACK: both copies arrived.
            lx.tlp.high_seq = None;
        }
    }

    /// The Open state of Linux (`TCP_CA_Open`): data outstanding, nothing
    /// SACKed, neither fast recovery nor a timeout's recovery under way.
    fn ca_open(&self) -> bool {
        self.recovery == Recovery::Sack && !self.in_recovery && self.sacked.is_empty() && self.snd_una < self.snd_max && self.recover.is_none_or(|r| self.snd_una >= r)
    }

    /// The RTO's deadline, also while a probe timer holds its place.
    fn rto_deadline(&self) -> Option<SimTime> {
        let d = self.rto.deadline();
        match self.linux.as_ref().and_then(|l| l.tlp.armed) {
            Some((pto, real)) if d == Some(pto) => real,
            _ => d,
        }
    }

    /// `tcp_schedule_loss_probe`: in the Open state with no probe
    /// outstanding, the retransmission timer fires at min(now + PTO, the
    /// RTO) and then sends a probe (`linux6.rs`).
    fn schedule_loss_probe(&mut self, w: &mut impl Wire) {
        let Some(srtt) = self.rtt.srtt() else { return };
        if !self.ca_open() || self.linux.as_ref().is_some_and(|l| l.tlp.high_seq.is_some()) {
            return;
        }
        let now = w.now();
        let real = self.rto_deadline();
        let one = self.snd_max - self.snd_una <= self.mss;
        let at = now + linux6::pto(srtt, one, self.rtt.min_rto(), real.map(|r| r.since(now)));
        self.rto.set(at, FlowTimer::Rto, w);
        self.linux.as_mut().expect("linux").tlp.armed = Some((at, real));
    }

    /// The retransmission timer fired: if it was a probe timer, send the
    /// probe (`tcp_send_loss_probe`) or, out of the Open state, put the RTO
    /// back; true if the timeout is not to run.
    fn tlp_fired(&mut self, w: &mut impl Wire) -> bool {
        let now = w.now();
        let Some(lx) = self.linux.as_mut() else { return false };
        let Some((at, real)) = lx.tlp.armed.take() else { return false };
        if at != now {
            return false;
        }
        let outstanding = lx.tlp.high_seq.is_some();
        if !self.ca_open() || outstanding {
            return match real {
                Some(r) if r > now => {
                    self.rto.set(r, FlowTimer::Rto, w);
                    true
                }
                _ => false,
            };
        }
        // New data if the peer's window has room (cwnd ignored), else the last segment again.
        let mss = self.mss;
        let len = mss.min(self.limit.saturating_sub(self.snd_nxt));
        let end = self.snd_nxt + len;
        let new = len > 0 && self.snd_nxt == self.snd_max && end <= self.snd_una + self.peer_wnd.max(mss) && end - self.snd_una <= self.sndbuf;
        let (seq, len) = if new {
            (self.snd_nxt, len)
        } else {
            let start = ((self.snd_max - 1) / mss * mss).max(self.snd_una);
            (start, self.snd_max - start)
        };
        if w.tx_room() {
            self.transmit(seq, len, w);
            if new {
                self.set_snd_nxt(end);
            }
            let lx = self.linux.as_mut().expect("linux");
            lx.tlp.high_seq = Some(self.snd_max);
            lx.tlp.retrans = !new;
            lx.stats.tlp_probes += 1;
        }
        // `tcp_rearm_rto`: the RTO from now.
        self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
        true
    }

    /// Linux, every ACK after loss detection: in recovery `tcp_cwnd_down`;
    /// outside it `tcp_try_undo_dsack` and, in Disorder, `tcp_try_to_open`
    /// -> `tcp_moderate_cwnd` (see `linux.rs`).
    fn linux_after_ack(&mut self, progress: bool, now: SimTime) {
        let lx = self.linux.as_mut().expect("linux");
        if self.in_recovery {
            if lx.opts.rate_halving && progress {
                // `tcp_cwnd_down`: one segment less every second ACK, down to ssthresh.
                let decr = lx.cwnd_cnt + 1;
                lx.cwnd_cnt = decr & 1;
                if decr >> 1 > 0 && self.st.cwnd > self.st.ssthresh {
                    self.st.cwnd -= (decr >> 1) * self.mss;
                }
                self.st.cwnd = self.st.cwnd.min(self.pipe(now) + self.mss);
            }
            return;
        }
        if lx.undo_until.is_some_and(|u| self.snd_una >= u) {
            lx.undo_marker = None;
            lx.undo_until = None;
        }
        if lx.opts.undo && lx.undo_until.is_some() && lx.undo_marker.is_some() && lx.undo_retrans == 0 {
            // `tcp_try_undo_dsack`: every retransmission was a duplicate.
            lx.undo_marker = None;
            lx.undo_until = None;
            lx.stats.undos += 1;
            self.undo_cwr(true, now);
        }
        let lx = self.linux.as_mut().expect("linux");
        if !self.sacked.is_empty() || lx.undo_marker.is_some() {
            lx.disorder_high.get_or_insert(self.snd_max);
        } else if lx.disorder_high.is_some_and(|h| self.snd_una >= h) {
            lx.disorder_high = None;
        }
        if lx.disorder_high.is_some() && lx.opts.moderate_cwnd {
            self.moderate_cwnd(now);
        }
    }

    /// `tcp_moderate_cwnd`: cwnd = min(cwnd, packets in flight + reordering).
    fn moderate_cwnd(&mut self, now: SimTime) {
        let in_flight = if self.in_recovery && self.recovery == Recovery::Sack {
            self.pipe(now)
        } else {
            (self.snd_max - self.snd_una) - self.sacked.bytes()
        };
        self.st.cwnd = self.st.cwnd.min(in_flight + self.reordering() * self.mss);
    }

    /// `tcp_undo_cwr`: the window before the reduction comes back (the
    /// controller's `undo_cwnd`), ssthresh too with `undo_ssthresh`; then
    /// `tcp_moderate_cwnd` if on.
    fn undo_cwr(&mut self, undo_ssthresh: bool, now: SimTime) {
        let lx = self.linux.as_ref().expect("linux");
        match lx.prior_ssthresh {
            Some(prior) => {
                self.st.cwnd = self.st.cwnd.max(lx.prior_cwnd);
                if undo_ssthresh && prior > self.st.ssthresh {
                    self.st.ssthresh = prior;
                }
            }
            None => self.st.cwnd = self.st.cwnd.max(self.st.ssthresh),
        }
        let moderate = lx.opts.moderate_cwnd;
        self.cc.on_undo(now);
        if moderate {
            self.moderate_cwnd(now);
        }
    }

    /// Drop delivered retransmissions from the watch list (those below the
    /// cumulative ACK, those inside this ACK's SACK blocks); those sent
    /// before a delivered one, or before data that has been SACKed since,
    /// are lost. Costs the entries it removes, not the list's length.
    fn find_lost_retransmissions(&mut self, blocks: &SackBlocks, ack: u64, w: &mut impl Wire) {
        let now = w.now();
        // Taken from the low end one by one (no new tree per ACK), and by
        // a walk that resumes after each removal (no list per SACK block).
        while let Some(entry) = self.retx.first_entry().filter(|en| *en.key() < self.snd_una) {
            self.newest_delivered = self.newest_delivered.max(entry.remove().credit);
        }
        for (s, e) in blocks.iter(ack) {
            let mut from = s;
            while let Some((&k, _)) = self.retx.range(from..e).find(|(_, r)| r.end <= e) {
                let r = self.retx.remove(&k).expect("found");
                self.newest_delivered = self.newest_delivered.max(r.credit);
                from = k + 1;
            }
        }
        while let Some(&(s, e, _)) = self.retx_lost.front().filter(|&&(_, e, _)| e <= self.snd_una) {
            self.retx_lost_bytes -= e - s;
            self.retx_lost.pop_front();
        }
        let top_sacked = self.sacked.last().map_or(0, |(_, e)| e);
        // Linux 6 (RACK, `tcp_rack_detect_loss`, which covers retransmitted
        // segments too): a retransmission is lost only once an RTT and the
        // reordering window have passed since it left; until then a later
        // segment's delivery may be reordering. Checked again on RACK's timer.
        let settle = self.rack_retx().then(|| {
            let rtt = self.rtt.srtt().or(self.rtt.min_rtt()).map_or(0, |r| r.as_nanos());
            rtt + self.rack.as_ref().expect("rack").reo_wnd(&self.rtt).as_nanos()
        });
        while let Some(&(order, seq, marker)) = self.retx_order.front() {
            match self.retx.get(&seq) {
                Some(&RetxEntry { end, order: o, sent, .. }) if o == order => {
                    if order > self.newest_delivered && top_sacked <= marker {
                        break;
                    }
                    if let Some(wait) = settle {
                        let due = sent + Duration(wait);
                        if due > now {
                            if self.rack_timer.deadline().is_none_or(|d| d <= now || d > due) {
                                self.rack_timer.set(due, FlowTimer::Rack, w);
                            }
                            break;
                        }
                    }
                    self.retx.remove(&seq);
                    self.retx_lost.push_back((seq, end, order));
                    self.retx_lost_bytes += end - seq;
                    self.stats.lost_retransmits += 1;
                }
                _ => {} // delivered already
            }
            self.retx_order.pop_front();
        }
    }

    /// The next lost retransmission still worth sending again.
    fn pop_lost_retransmission(&mut self) -> Option<(u64, u64, u64)> {
        while let Some((s, e, order)) = self.retx_lost.pop_front() {
            self.retx_lost_bytes -= e - s;
            if e > self.snd_una && !self.sacked.covers(s.max(self.snd_una), e) {
                return Some((s.max(self.snd_una), e, order));
            }
        }
        None
    }

    fn clear_retransmissions(&mut self) {
        self.retx.clear();
        self.retx_order.clear();
        self.retx_lost.clear();
        self.retx_lost_bytes = 0;
        self.newest_delivered = 0;
    }

    /// Has a new loss episode begun?
    fn loss_detected(&self, now: SimTime) -> bool {
        let new_episode = self.recovery == Recovery::Reno
            || self.recover.is_none_or(|r| self.snd_una >= r)
            // Linux 6 (`sack_reentry`): out of recovery, only a timeout's recovery holds a new one back.
            || (self.recovery == Recovery::Sack && self.linux.as_ref().is_some_and(|l| l.opts.sack_reentry) && self.rack.as_ref().is_some_and(|r| r.rto_recover.is_none()));
        // A retransmission found lost is a loss too (Linux: `lost_out`).
        let by_sack = self.recovery == Recovery::Sack && (self.lost_edge(now).0 > self.snd_una || !self.retx_lost.is_empty());
        // Linux with SACK counts SACKed segments, not duplicate ACKs (`tcp_dupack_heurestics`).
        let linux_sack = self.linux.is_some() && self.recovery == Recovery::Sack;
        let by_dupacks = self.rack.is_none() && !linux_sack && self.dupacks >= self.dupthresh;
        new_episode && (by_dupacks || by_sack)
    }

    fn on_recovery_ack(&mut self, acked: u64, ts_ecr: SimTime, w: &mut impl Wire) {
        let now = w.now();
        let full = self.recover.is_some_and(|r| self.snd_una >= r);
        match self.recovery {
            Recovery::Sack if full && self.linux.is_some() => {
                // `tcp_try_undo_recovery`, then `tcp_complete_cwr`.
                let lx = self.linux.as_mut().expect("linux");
                let prr = lx.opts.prr;
                let undone = lx.may_undo(ts_ecr);
                if undone {
                    lx.undo_marker = None;
                    lx.stats.undos += 1;
                    self.undo_cwr(true, now);
                } else {
                    lx.undo_until = Some(self.snd_max);
                }
                self.st.cwnd = match (prr, undone) {
                    // `tcp_end_cwnd_reduction`: cwnd = ssthresh, unless undone.
                    (true, true) => self.st.cwnd,
                    (true, false) => self.st.ssthresh,
                    (false, _) => self.st.cwnd.min(self.st.ssthresh),
                };
                self.leave_recovery(now, undone);
            }
            Recovery::Sack if full => {
                self.st.cwnd = self.st.ssthresh;
                self.leave_recovery(now, false);
            }
            Recovery::Sack => {
                if self.linux.as_ref().is_some_and(|l| l.may_undo(ts_ecr)) {
                    // `tcp_try_undo_partial`: the hole was filled by the
                    // original; reordering fackets_out + acked deep.
                    let top = self.sacked.last().map_or(self.snd_una, |(_, e)| e);
                    let metric = (top - self.snd_una).div_ceil(self.mss) + acked.div_ceil(self.mss);
                    let mut no_retx_out = self.retx.is_empty() && self.retx_lost.is_empty();
                    if self.linux.as_ref().is_some_and(|l| l.opts.prr) && !no_retx_out {
                        // Linux 6 asks after `tcp_clean_rtx_queue` has taken the
                        // cumulatively acknowledged retransmissions out of
                        // `retrans_out`: those below snd_una are not out.
                        let una = self.snd_una;
                        no_retx_out = self.retx.range(una..).next().is_none()
                            && self.retx.range(..una).next_back().is_none_or(|(_, r)| r.end <= una)
                            && self.retx_lost.iter().all(|&(_, e, _)| e <= una);
                    }
                    let lx = self.linux.as_mut().expect("linux");
                    lx.update_reordering(metric);
                    if lx.opts.prr {
                        // Linux 6's `tcp_try_undo_partial`: no undo while
                        // retransmissions are out; else the whole reduction
                        // is undone (ssthresh too) and the connection leaves
                        // Recovery (`tcp_try_keep_open`).
                        if no_retx_out {
                            lx.retrans_stamp = None;
                            lx.undo_marker = None;
                            lx.stats.undos += 1;
                            self.undo_cwr(true, now);
                            self.leave_recovery(now, true);
                        }
                        return;
                    }
                    if no_retx_out {
                        lx.retrans_stamp = None;
                    }
                    lx.stats.undos += 1;
                    self.undo_cwr(false, now);
                }
            }
            Recovery::Reno => {
                self.st.cwnd = self.st.ssthresh;
                self.leave_recovery(now, false);
            }
            Recovery::NewReno if full => {
                let flight = self.snd_max - self.snd_una;
                self.st.cwnd = self.st.ssthresh.min(flight.max(self.mss) + self.mss);
                self.leave_recovery(now, false);
            }
            Recovery::NewReno => {
                // Partial acknowledgment: the next hole is lost too.
                let len = self.mss.min(self.snd_max - self.snd_una);
                self.transmit(self.snd_una, len, w);
                self.st.cwnd = self.st.cwnd.saturating_sub(acked).max(self.mss);
                if acked >= self.mss {
                    self.st.cwnd += self.mss;
                }
                if !self.partial_acked {
                    self.partial_acked = true;
                    self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
                }
            }
        }
    }

    /// The end of a recovery. The retransmissions still outstanding (those
    /// above the recovery point, sent for holes in data sent during the
    /// recovery) stay on the watch list and below HighRxt: the next
    /// recovery neither sends them again nor loses sight of them.
    /// `undone`: the reduction was undone (the recovery was spurious). Linux
    /// counts towards resetting RACK's reordering window only recoveries
    /// that end not undone (`tcp_try_undo_recovery`: `reo_wnd_persist--`
    /// when `tcp_may_undo` fails; `tcp_try_undo_partial` leaves it alone);
    /// RFC 8985 (step 4) counts every one.
    fn leave_recovery(&mut self, now: SimTime, undone: bool) {
        self.in_recovery = false;
        self.dupacks = 0;
        let linux = self.linux.is_some();
        if let Some(rack) = &mut self.rack {
            if !(linux && undone) {
                rack.on_recovery_exit();
            }
        }
        self.cc.on_recovery_exit(&mut self.st, now);
    }

    /// The FlightSize a loss reduction halves (RFC 5681, eq. 4): the bytes
    /// outstanding, but with SACK at most cwnd. A SACK sender's outstanding
    /// bytes include SACKed data above holes not yet repaired, and when one
    /// recovery ends with such holes and the next begins at once they can
    /// reach several windows: halving them would raise the window at a
    /// loss, and back-to-back recoveries would ratchet it up while the
    /// queue drops most of what is sent. Linux halves cwnd
    /// (`tcp_reno_ssthresh`), as ns-2 halves `window()` (`slowdown` in
    /// tcp.cc); without SACK the outstanding bytes exceed cwnd by at most
    /// the limited-transmit segments, and the RFC's value stays.
    /// Linux 6 (PRR on: the `linux-6` profile) gives the controller cwnd
    /// itself whatever is out (`tcp_reno_ssthresh`: max(cwnd >> 1, 2)), also
    /// when less is out than cwnd, as after an undo that restored cwnd
    /// (2.6.33's `tcp_reno_ssthresh` is the same; that profile is left as it
    /// is, for its goldens and the reproductions that pin it).
    fn reduction_flight(&self) -> u64 {
        let flight = self.snd_max - self.snd_una;
        match self.recovery {
            Recovery::Sack if self.linux.as_ref().is_some_and(|l| l.opts.prr) => self.st.cwnd,
            Recovery::Sack => flight.min(self.st.cwnd),
            Recovery::NewReno | Recovery::Reno => flight,
        }
    }

    /// Linux's `retrans_out` in segments: retransmissions above snd_una
    /// neither delivered nor found lost (found lost, a copy leaves
    /// `retx` for `retx_lost`, as `tcp_mark_skb_lost` takes it out of
    /// `retrans_out`).
    fn retrans_out(&self) -> u64 {
        let una = self.snd_una;
        let straddling = self.retx.range(..una).next_back().filter(|(_, r)| r.end > una).map(|(_, r)| r.end - una);
        straddling.into_iter().chain(self.retx.range(una..).map(|(&s, r)| r.end - s)).map(|b| b.div_ceil(self.mss)).sum()
    }

    fn enter_recovery(&mut self, w: &mut impl Wire) {
        let now = w.now();
        let flight = self.reduction_flight();
        // Only Linux 6's undo state below asks it (a walk of the watch list).
        let retrans_out = if self.linux.as_ref().is_some_and(|l| l.opts.sack_reentry) { self.retrans_out() } else { 0 };
        let una = self.snd_una;
        if let Some(lx) = &mut self.linux {
            // `tcp_fastretrans_alert`, entering Recovery: remember what to undo.
            let (cwnd, ssthresh) = (self.st.cwnd, self.st.ssthresh);
            lx.prior_ssthresh = Some(ssthresh.max(cwnd / 2 + cwnd / 4)); // tcp_current_ssthresh
            lx.prior_cwnd = cwnd;
            lx.undo_marker = Some(una);
            if lx.opts.sack_reentry {
                // Linux 6's `tcp_enter_recovery`: `tcp_retrans_stamp_cleanup`
                // keeps the first retransmission's time while any is out or
                // the head was ever retransmitted (`tcp_any_retrans_done`),
                // and `tcp_init_undo` counts the retransmissions still out
                // (D-SACKs may report them later), -1 for none. A recovery
                // that starts while the last one's retransmissions are out
                // is undone only when those too prove needless, not at once
                // because it has sent none of its own.
                if retrans_out == 0 && !lx.ever_retx.covers(una, una + 1) {
                    lx.retrans_stamp = None;
                }
                let tlp = i64::from(lx.tlp.high_seq.is_some() && lx.tlp.retrans);
                lx.undo_retrans = match retrans_out as i64 + tlp {
                    0 => -1,
                    n => n,
                };
            } else {
                lx.undo_retrans = 0;
                lx.retrans_stamp = None;
            }
            lx.cwnd_cnt = 0;
            lx.undo_until = None;
            lx.disorder_high = None;
            // `tcp_init_cwnd_reduction`.
            lx.prr = Prr::start(cwnd / self.mss);
            lx.tlp.high_seq = None;
        }
        self.st.ssthresh = self.cc.ssthresh_after_loss(&self.st, now, flight);
        self.recover = Some(self.snd_max);
        self.in_recovery = true;
        self.partial_acked = false;
        self.stats.fast_retransmits += 1;
        // The first unacknowledged segment is resent at once (RFC 6675 step
        // 4.3, RFC 6582 step 2), unless a previous SACK recovery resent it
        // and that copy is still presumed in flight (Linux's
        // `tcp_xmit_retransmit_queue` skips a segment marked
        // TCPCB_SACKED_RETRANS); a copy found lost is re-sent by NextSeg.
        // A copy sent more than a smoothed RTT ago whose ACK has not come
        // is taken as lost (as RACK would), and sent again.
        let una = self.snd_una;
        let srtt = self.rtt.srtt().unwrap_or(self.rtt.rto());
        let head_copy = self.retx.range(..=una).next_back().filter(|(_, r)| r.end > una).map(|(_, r)| *r);
        let head_in_flight = self.recovery == Recovery::Sack && una < self.high_rxt && head_copy.is_none_or(|r| now < r.sent + srtt);
        if !head_in_flight {
            let len = self.mss.min(self.snd_max - una).min(self.sacked.next_gap(una).1 - una);
            self.resend_of = head_copy.map(|r| r.order);
            self.transmit(una, len, w);
            self.resend_of = None;
            self.set_high_rxt(self.high_rxt.max(una + len));
        }
        self.st.cwnd = match self.recovery {
            // Rate-halving (`tcp_cwnd_down`) and PRR bring cwnd down from where it is.
            Recovery::Sack if self.linux.as_ref().is_some_and(|l| l.opts.rate_halving || l.opts.prr) => self.st.cwnd,
            Recovery::Sack => self.st.ssthresh,
            Recovery::NewReno | Recovery::Reno => self.st.ssthresh + self.dupthresh as u64 * self.mss,
        };
    }

    // --- ns-2.35's Sack1 sender (`ns2.rs`; `tcp/tcp-sack1.cc`) ---------------

    /// `Sack1TcpAgent::recv`.
    fn on_ack_sack1(&mut self, ack: u64, ts_ecr: SimTime, wnd: u64, sack: &SackBlocks, w: &mut impl Wire) {
        if !self.active || ack > self.snd_max {
            return;
        }
        let now = w.now();
        self.peer_wnd = wnd;
        let (fastrecov, timed_out) = self.ns2.as_ref().map(|n| (n.fastrecov, n.timeout)).expect("ns2");
        if !fastrecov {
            if ack > self.snd_una {
                // `recv_newack_helper`: `newack`, `opencwnd`; `ClearScoreBoard`.
                let sample = self.sack1_newack(ack, ts_ecr, now, w);
                let n = self.ns2.as_mut().expect("ns2");
                n.timeout = false;
                if n.per_ack_growth {
                    n.opencwnd(&mut self.st);
                } else {
                    self.cc.on_ack(&mut self.st, &sample);
                }
                self.clear_scoreboard();
            } else if ack == self.snd_una && timed_out {
                self.ns2.as_mut().expect("ns2").stats.ignored_dupacks += 1;
            } else if ack == self.snd_una && self.snd_max > self.snd_una && self.sack1_update(ack, sack) {
                // A duplicate ACK whose SACK blocks changed the scoreboard (`CheckUpdate`).
                self.dupacks += 1;
                if self.dupacks == self.dupthresh {
                    self.sack1_dupack_action(w);
                } else if self.dupacks < self.dupthresh && self.limited_transmit {
                    self.sack1_send_one(w);
                }
            }
            // `aggressive_maxburst_ 1`: every ACK may send, unless duplicates are counting.
            if self.dupacks == 0 {
                self.sack1_send_much(w);
            }
            return;
        }
        let n = self.ns2.as_mut().expect("ns2");
        n.pipe -= 1;
        if self.recover.is_some_and(|r| ack >= r) {
            // The end of fast recovery: `newack` only (cwnd stays halved), `recover_ = 0`.
            n.fastrecov = false;
            n.timeout = false;
            self.in_recovery = false;
            self.recover = None;
            self.sack1_newack(ack, ts_ecr, now, w);
            self.clear_scoreboard();
            self.cc.on_recovery_exit(&mut self.st, now);
        } else if ack > self.snd_una {
            // A partial ACK (`partial_ack_ false`): pipe down once more, the
            // timer re-armed with its back-off cleared (`newtimer`, `t_backoff_ = 1`).
            n.pipe -= 1;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            Cursor::remove_below(&mut self.sacked, ack, &mut [&mut self.rxt_cur, &mut self.nxt_cur]);
            self.sack1_update(ack, sack);
            self.rtt.clear_backoff();
            self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
        } else if !n.timeout {
            self.sack1_update(ack, sack);
        }
        self.sack1_send_much(w);
    }

    /// `newack` (with RFC 7323 timestamps: an RTT sample from every new
    /// ACK) and `newtimer`; returns the ACK for the controller.
    fn sack1_newack(&mut self, ack: u64, ts_ecr: SimTime, now: SimTime, w: &mut impl Wire) -> Ack {
        let acked = ack - self.snd_una;
        let flight = self.snd_max - self.snd_una;
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        Cursor::remove_below(&mut self.sacked, ack, &mut [&mut self.rxt_cur, &mut self.nxt_cur]);
        self.dupacks = 0;
        let rtt = now.since(ts_ecr);
        self.rtt.sample(rtt);
        let sample = Ack { now, acked, rtt: Some(rtt), min_rtt: self.rtt.min_rtt(), in_flight: flight, snd_una: ack, snd_max: self.snd_max, cwnd_limited: true, pacing: None };
        self.cc.on_measure(&self.st, &sample);
        if self.snd_una < self.snd_max {
            self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
        } else {
            self.rto.clear();
        }
        sample
    }

    /// `ScoreBoardRQ::UpdateScoreBoard`: true if the blocks SACKed new data.
    fn sack1_update(&mut self, ack: u64, sack: &SackBlocks) -> bool {
        let mut newly = 0;
        for (s, e) in sack.iter(ack) {
            if e > ack.max(self.snd_una) && e <= self.snd_max {
                newly += Cursor::insert(&mut self.sacked, s.max(ack), e, &mut [&mut self.rxt_cur, &mut self.nxt_cur]);
            }
        }
        newly > 0
    }

    /// `ClearScoreBoard`: no SACKed data, no retransmission remembered.
    fn clear_scoreboard(&mut self) {
        self.sacked = RangeSet::default();
        self.rxt_cur = Cursor::default();
        self.nxt_cur = Cursor::default();
        self.set_high_rxt(self.snd_una);
        self.set_snd_nxt(self.snd_nxt);
    }

    /// `slowdown(CLOSE_SSTHRESH_HALF | ...)` on a window of min(cwnd, peer
    /// window): ns-2's halving for NewReno and Reno, the controller's
    /// reduction otherwise. Returns the halved window (bytes).
    fn sack1_slowdown(&mut self, now: SimTime) -> u64 {
        let win = self.st.cwnd.min(self.peer_wnd);
        self.ns2.as_mut().expect("ns2").on_cut();
        if self.cc.name() == "newreno" {
            self.st.ssthresh = Ns2::half_ssthresh(win, self.mss);
            (win / 2).max(1)
        } else {
            self.st.ssthresh = self.cc.ssthresh_after_loss(&self.st, now, win);
            self.st.ssthresh
        }
    }

    /// `Sack1TcpAgent::dupack_action` (`bug_fix_` true, no ECN).
    fn sack1_dupack_action(&mut self, w: &mut impl Wire) {
        // `highest_ack_ > recover_` (recover_ 0: at least one packet acknowledged).
        let allowed = match self.recover {
            Some(r) => self.snd_una > r,
            None => self.snd_una >= self.mss,
        };
        if !allowed {
            return;
        }
        let now = w.now();
        self.recover = Some(self.snd_max);
        let outstanding = (self.snd_max - self.snd_una).div_ceil(self.mss) as i64;
        self.rto.set(now + self.rtt.rto(), FlowTimer::Rto, w);
        self.st.cwnd = self.sack1_slowdown(now);
        let n = self.ns2.as_mut().expect("ns2");
        n.pipe = outstanding - self.dupthresh as i64;
        n.fastrecov = true;
        self.in_recovery = true;
        self.stats.fast_retransmits += 1;
        let una = self.snd_una;
        let len = self.mss.min(self.snd_max - una);
        if w.tx_room() {
            self.transmit(una, len, w);
            self.set_high_rxt(una + len);
        }
    }

    /// `TcpAgent::send_one` (limited transmit, `singledup_ 1`).
    fn sack1_send_one(&mut self, w: &mut impl Wire) {
        if self.snd_nxt >= self.limit {
            return;
        }
        let len = self.mss.min(self.limit - self.snd_nxt);
        let after = self.snd_nxt + len - self.snd_una;
        if after <= self.peer_wnd.max(self.mss) && after <= self.st.cwnd + self.dupacks as u64 * self.mss && w.tx_room() {
            self.transmit(self.snd_nxt, len, w);
            self.set_snd_nxt(self.snd_nxt + len);
        }
    }

    /// `Sack1TcpAgent::send_much`: outside recovery while the window has
    /// room, in recovery while `pipe_ < cwnd`; the next hole first
    /// (`GetNextRetran`), else new data.
    fn sack1_send_much(&mut self, w: &mut impl Wire) {
        if !self.active {
            return;
        }
        loop {
            let (pipe, fastrecov) = self.ns2.as_ref().map(|n| (n.pipe, n.fastrecov)).expect("ns2");
            let mss = self.mss;
            let win = self.st.cwnd.min(self.peer_wnd) / mss * mss;
            let open = if fastrecov { pipe < (self.st.cwnd / mss) as i64 } else { self.snd_nxt - self.snd_una < win };
            if !open || self.snd_una >= self.limit {
                return;
            }
            // `GetNextRetran`: the first hole at or above h_seqno_ with SACKed data above it.
            let (hole, next_sacked) = self.sacked.next_gap(self.high_rxt.max(self.snd_una));
            let is_hole = next_sacked != u64::MAX && hole < self.snd_max;
            let (seq, len) = if is_hole {
                // Only while a recovery point is set (`recover_ > 0`), within the peer's window.
                if self.recover.is_none() || hole >= self.snd_una + self.peer_wnd.max(mss) {
                    return;
                }
                (hole, mss.min(next_sacked - hole))
            } else {
                let bound = if fastrecov { self.peer_wnd.max(mss) } else { win };
                if self.snd_nxt >= self.limit || self.snd_nxt - self.snd_una >= bound {
                    return;
                }
                (self.snd_nxt, mss.min(self.limit - self.snd_nxt))
            };
            if !w.tx_room() {
                return;
            }
            self.transmit(seq, len, w);
            if is_hole {
                // `MarkRetran`.
                self.set_high_rxt(self.high_rxt.max(seq + len));
            }
            if self.snd_nxt <= seq {
                self.set_snd_nxt(seq + len);
            }
            self.ns2.as_mut().expect("ns2").pipe += 1;
        }
    }

    /// `Sack1TcpAgent::timeout` and `TcpAgent::timeout`: ssthresh halved,
    /// cwnd 1 (`CLOSE_CWND_RESTART`), the scoreboard cleared, back to the
    /// first unacknowledged packet; duplicate ACKs ignored until a new ACK.
    fn on_timeout_sack1(&mut self, w: &mut impl Wire) {
        if self.snd_una == self.snd_max {
            return;
        }
        let now = w.now();
        self.stats.timeouts += 1;
        let n = self.ns2.as_mut().expect("ns2");
        n.fastrecov = false;
        n.timeout = true;
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = Some(self.snd_max);
        self.sack1_slowdown(now);
        self.st.cwnd = self.mss;
        self.set_snd_nxt(self.snd_una);
        self.clear_scoreboard();
        self.rtt.backoff();
        self.rto.clear();
        self.sack1_send_much(w);
    }

    fn on_timeout(&mut self, w: &mut impl Wire) {
        if self.snd_una == self.snd_max {
            return;
        }
        let now = w.now();
        self.stats.timeouts += 1;
        let flight = self.reduction_flight();
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
        self.clear_retransmissions();
        self.dupacks = 0;
        if let Some(lx) = &mut self.linux {
            // `tcp_enter_loss`: reordering back to at most its initial value.
            lx.reordering = lx.reordering.min(lx.initial_reordering);
            lx.undo_marker = None;
            lx.undo_until = None;
            lx.disorder_high = None;
            // `tcp_retransmit_timer`: `tlp_high_seq = 0`.
            lx.tlp = Default::default();
        }
        self.recover = Some(self.snd_max);
        if let Some(rack) = &mut self.rack {
            rack.rto_recover = Some(self.snd_max);
        }
        self.set_snd_nxt(self.snd_una);
        self.set_high_rxt(self.snd_una);
        self.pace_next = now;
        self.rtt.backoff();
        self.rto.clear();
        self.send_data(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// RFC 8985 Section 6.2, step 4: one widening per round with a D-SACK,
    /// bounded by SRTT; back to min RTT / 4 after 16 recoveries without one.
    #[test]
    fn rack_reordering_window_widens_on_dsack_and_decays_after_16_recoveries() {
        let (min_rtt, srtt) = (Some(Duration(20 * MS)), Some(Duration(30 * MS)));
        let mut r = Rack::new();
        assert_eq!(r.reo_wnd_of(min_rtt, srtt), Duration(5 * MS));
        assert_eq!(r.reo_wnd_of(None, None), Duration::ZERO);
        // A D-SACK at snd_una 1000, snd_max 9000: the window doubles.
        r.on_ack(1000, 9000, true);
        assert_eq!(r.reo_wnd_of(min_rtt, srtt), Duration(10 * MS));
        // More D-SACKs in the same round (snd_una below 9000) count once.
        r.on_ack(5000, 12_000, true);
        r.on_ack(8999, 12_000, true);
        assert_eq!(r.reo_wnd_mult, 2);
        // The next round's D-SACK widens it again; SRTT bounds it.
        r.on_ack(9000, 20_000, true);
        assert_eq!(r.reo_wnd_mult, 3);
        assert_eq!(r.reo_wnd_of(min_rtt, srtt), Duration(15 * MS));
        let mut una = 20_000;
        for _ in 0..4 {
            una += 10_000;
            r.on_ack(una, una + 5_000, true);
        }
        assert_eq!(r.reo_wnd_mult, 7);
        assert_eq!(r.reo_wnd_of(min_rtt, srtt), Duration(30 * MS), "min(7 x 5 ms, SRTT)");
        // 15 recoveries without a D-SACK keep it; the 16th resets it.
        for _ in 0..15 {
            r.on_recovery_exit();
        }
        assert_eq!(r.reo_wnd_mult, 7);
        r.on_recovery_exit();
        assert_eq!(r.reo_wnd_mult, 1);
        assert_eq!(r.reo_wnd_of(min_rtt, srtt), Duration(5 * MS));
        // A D-SACK restarts the count of 16: 15 exits after it keep the window.
        r.on_ack(100_000, 110_000, true);
        for _ in 0..15 {
            r.on_recovery_exit();
        }
        assert_eq!(r.reo_wnd_mult, 2);
        // The end of a timeout's recovery counts as an exit too.
        r.rto_recover = Some(120_000);
        r.on_ack(119_999, 130_000, false);
        assert_eq!(r.reo_wnd_mult, 2);
        r.on_ack(120_000, 130_000, false);
        assert_eq!((r.reo_wnd_mult, r.rto_recover), (1, None));
    }
}
