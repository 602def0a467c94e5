//! What Linux 6 adds to the sender (`net/ipv4/tcp_output.c`,
//! `tcp_input.c`, `tcp_recovery.c` of the 6.x kernels; this machine runs
//! 6.18): the `linux-6` host profile (issue 21). Each part is an option of
//! [`HostBehaviour`]; the profile turns them all on, together with the
//! behaviours of `linux.rs` that Linux 6 still has (D-SACK, undo, the
//! adaptive reordering metric, quick ACKs after a duplicate, GRO), and
//! leaves off those it dropped (FACK: removed in 4.15; rate-halving:
//! replaced by PRR in 3.2; `tcp_moderate_cwnd`).
//!
//! - `tlp` (RFC 8985 section 7; `tcp_schedule_loss_probe`,
//!   `tcp_send_loss_probe`, `tcp_process_tlp_ack`): with SACK, in the Open
//!   state (no SACKed data, no recovery) and with data outstanding, a probe
//!   timer of PTO = 2 SRTT + `TCP_TIMEOUT_MIN_US` (2 ms), or 2 SRTT +
//!   `tcp_rto_min` (the delayed-ACK allowance) when a single segment is
//!   out, never later than the RTO, is re-armed after every ACK and every
//!   new segment sent. When it fires, one probe leaves: the next new
//!   segment if the peer's window allows it (cwnd is ignored:
//!   `tcp_write_xmit(..., push_one = 2)`), else the last segment sent again;
//!   then the RTO runs from now. One probe per episode (`tlp_high_seq`
//!   = snd_nxt until an ACK reaches it). A probe that was a retransmission
//!   and whose ACK goes beyond `tlp_high_seq` without a D-SACK repaired a
//!   loss: the window is cut once (`tcp_init_cwnd_reduction`,
//!   `tcp_end_cwnd_reduction`: cwnd = ssthresh). The probe's SACK lets
//!   RACK find the tail's losses without waiting for the RTO.
//! - `prr` (RFC 6937, PRR-SSRB, as `tcp_cwnd_reduction` does it in
//!   segments): entering recovery remembers `prior_cwnd` and sets
//!   `prr_delivered = prr_out = 0`; on each ACK in recovery that delivers
//!   `d` segments (newly acknowledged or SACKed), `prr_delivered += d`
//!   and, with `pipe` the segments in flight (`tcp_packets_in_flight`):
//!   if `pipe > ssthresh`, `sndcnt = ceil(ssthresh x prr_delivered /
//!   prior_cwnd) - prr_out`; else `sndcnt = min(ssthresh - pipe,
//!   max(prr_delivered - prr_out, d) + 1 if snd_una advanced and nothing
//!   was newly marked lost)`; at least 1 while `prr_out` is 0; `cwnd =
//!   pipe + sndcnt`. Every segment sent in recovery adds to `prr_out`.
//!   Recovery ends with `cwnd = ssthresh` unless undone.
//! - `tso_autosize` (`tcp_update_pacing_rate`, `tcp_tso_autosize`,
//!   `tcp_small_queue_check`): the socket's pacing rate is computed on
//!   every ACK whether or not anything paces (Linux paces only under
//!   `fq` or for a controller that asks, BBR: this profile does not pace),
//!   `rate = max(cwnd, packets_out) x mss / srtt x ratio`, the ratio 200 %
//!   while `cwnd < ssthresh / 2` (`tcp_pacing_ss_ratio`), 120 % after
//!   (`tcp_pacing_ca_ratio`). The TSO size goal is `rate >>
//!   sk_pacing_shift` (10: about 1 ms of data) plus `gso_max_size >>
//!   (min_rtt_us >> tcp_tso_rtt_log)` (9; only for min RTTs under 16 ms),
//!   at most `gso_max_size` (64 KB, the profile's `tso_max_bytes`), at
//!   least `tcp_min_tso_segs` (2) segments. The TSQ limit (bytes of the
//!   connection in its host's queue before the sender holds back) is
//!   `max(2 x truesize, rate >> 10)`, at most `tcp_limit_output_bytes`
//!   (4 MiB on 6.18); the sender is woken as soon as its bytes fall below
//!   it (Linux's TX completion handler, `tcp_tsq_handler`). The truesize of
//!   a frame is its bytes plus [`SKB_OVERHEAD`]. Before the first RTT
//!   sample the rate is unlimited (`sk_pacing_rate` starts at ~0UL): the
//!   limit is the cap, the goal 64 KB.
//!
//! - `stretch_ack_ss` (`tcp_slow_start(tp, acked)`, net/ipv4/tcp_cong.c,
//!   commit "tcp: properly handle stretch acks in slow start"): in slow
//!   start cwnd grows by every segment an ACK covers, up to ssthresh, the
//!   rest going to congestion avoidance; RFC 3465's L = 2 SMSS (this
//!   engine's default, and 2.6.33's one segment per ACK with `tcp_abc` = 0)
//!   would let a receiver's GRO, one ACK per NAPI poll of up to 64 KB
//!   (`gro.rs`), hold the window to a few per cent growth a round trip.
//!   The sender passes such an ACK to the controller in 2-SMSS pieces
//!   (`TcpSender::grow`); not a key of its own, only the profile's.
//!
//! - `cwnd_usage` (`tcp_cwnd_validate`, `tcp_is_cwnd_limited`; commits
//!   ca8a22634381 "tcp: make cwnd-limited checks measurement-based, and
//!   gentler", 2014, and f4ce91ce12a7 "tcp: fix tcp_cwnd_validate() to not
//!   forget is_cwnd_limited", 2022): after each round of sending that sent
//!   something or was held back by cwnd, the sender notes whether cwnd held
//!   it back (the flight reached cwnd, or TSO deferred a frame because
//!   cwnd's room, below the peer's window, was no larger than the frame)
//!   and keeps that for the flight (until snd_una passes the snd_nxt of
//!   that moment); congestion avoidance grows cwnd on every ACK of such a
//!   flight. Without it only ACKs that find the flight within a segment of
//!   cwnd grow it, and TSO deferral, which keeps the flight up to a frame
//!   below cwnd, held CUBIC to a fraction of its growth (a 100 Mbit/s FIFO
//!   took three times as long to fill as with `tso: 0B`). Not a key of its
//!   own, only the profile's.
//!
//! - Pacing, when on (`pacing: true`; Linux paces a socket whose
//!   congestion control asks for it, or under `fq`): whole TSO frames, not
//!   segments (`tcp_write_xmit` -> `tcp_pacing_check` before each skb;
//!   `tcp_update_skb_after_send`: the next departure moves on by the
//!   frame's length over [`pacing_rate`], less up to half of that when the
//!   frame left late), so the sender sends ~1 ms trains, as a trace of
//!   this machine's kernel shows (docs/kernel-crosscheck.md, session 12).
//! - RACK on retransmissions (`tcp_rack_detect_loss` treats them as any
//!   segment): one is lost only once an RTT and the reordering window have
//!   passed since it left and later data was delivered, not as soon as
//!   later data is SACKed (`tcp_mark_lost_retrans`, 2.6 kernels; the other
//!   profiles keep it). `sender.rs`, `rack_retx`.
//! - RACK's widened reordering window (`tcp_rack_update_reo_wnd`) falls back
//!   to min RTT / 4 after 16 recoveries that end *not undone*
//!   (`tcp_try_undo_recovery` decrements `rack.reo_wnd_persist` only when
//!   `tcp_may_undo` fails; `tcp_try_undo_partial` does not touch it), not
//!   after any 16 (RFC 8985's step 4, the other profiles). `sender.rs`,
//!   `leave_recovery`.
//! - Entering recovery (`tcp_enter_recovery`): ssthresh from cwnd, whatever
//!   is in flight (`tcp_reno_ssthresh`: max(cwnd >> 1, 2); `reduction_flight`),
//!   and the undo state of `tcp_init_undo` / `tcp_retrans_stamp_cleanup`
//!   (6.12+): `undo_retrans` counts the retransmissions still in flight and
//!   `retrans_stamp` is kept while any is, so a recovery begun behind them
//!   is not undone by their ACKs (`enter_recovery`).
//!
//! Not modelled: TSQ's exemption of a connection with at most one frame
//! unacknowledged and its doubled limit for retransmissions (`factor` 1);
//! `tcp_tso_should_defer`'s one-jiffy and half-SRTT conditions (the
//! deferral of `linux.rs` applies, with the size goal above for its 64 KB).
//!
//! Tests: `tests/linux6_profile.rs` and the unit tests below.

use crate::config::HostBehaviour;
use crate::time::{Duration, SimTime};

/// `TCP_TIMEOUT_MIN_US`: 2 ms.
pub const TCP_TIMEOUT_MIN: Duration = Duration(2_000_000);
/// `tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio` (percent).
pub const PACING_SS_RATIO: u64 = 200;
pub const PACING_CA_RATIO: u64 = 120;
/// `sk_pacing_shift`: the TSO goal and TSQ limit are about 1 ms (2^-10 s) of the pacing rate.
pub const PACING_SHIFT: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE`: a device's default `gso_max_size`, 64 KB.
pub const GSO_MAX_SIZE: u64 = 65_536;
/// `tcp_min_tso_segs`.
pub const MIN_TSO_SEGS: u64 = 2;
/// `tcp_tso_rtt_log`.
pub const TSO_RTT_LOG: u32 = 9;
/// `tcp_limit_output_bytes` on this machine's 6.18 (4 MiB).
pub const LIMIT_OUTPUT_BYTES: u64 = 4 << 20;
/// A frame's `skb->truesize` less its data: `SKB_TRUESIZE`'s aligned
/// `struct sk_buff` (256 B) and `struct skb_shared_info` (320 B) and
/// `MAX_TCP_HEADER`'s head room (320 B), x86-64.
pub const SKB_OVERHEAD: u64 = 896;

/// `tcp_update_pacing_rate`, bytes per second: `max(cwnd, packets_out)`
/// bytes per SRTT, times 2 while cwnd < ssthresh / 2, 1.2 after. None
/// before an RTT sample (unlimited).
pub fn pacing_rate(cwnd: u64, packets_out: u64, ssthresh: u64, srtt: Option<Duration>) -> Option<u64> {
    let srtt = srtt?.as_nanos().max(1) as u128;
    let ratio = if cwnd < ssthresh / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO } as u128;
    let bytes = cwnd.max(packets_out) as u128;
    Some((bytes * ratio * 1_000_000_000 / 100 / srtt).min(u64::MAX as u128) as u64)
}

/// `tcp_tso_autosize`: the TSO size goal in bytes (whole segments) for a
/// pacing rate in bytes/s (None: unlimited), `gso_max` the largest frame.
pub fn tso_goal(rate: Option<u64>, min_rtt: Option<Duration>, mss: u64, gso_max: u64) -> u64 {
    let Some(rate) = rate else { return gso_max / mss * mss };
    let mut bytes = rate >> PACING_SHIFT;
    let r = min_rtt.map_or(u64::MAX, |m| (m.as_nanos() / 1000) >> TSO_RTT_LOG);
    if r < 32 {
        bytes += gso_max >> r;
    }
    (bytes.min(gso_max) / mss).max(MIN_TSO_SEGS) * mss
}

/// `tcp_small_queue_check` (factor 0): the bytes a connection may have in
/// its host's queue, frames of `frame` bytes, `rate` as for [`tso_goal`].
pub fn tsq_limit(rate: Option<u64>, frame: u64) -> u64 {
    let floor = 2 * (frame + SKB_OVERHEAD);
    rate.map_or(LIMIT_OUTPUT_BYTES, |r| (r >> PACING_SHIFT).max(floor).min(LIMIT_OUTPUT_BYTES))
}

/// PRR's state (`tp->prior_cwnd`, `prr_delivered`, `prr_out`), segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    pub prior_cwnd: u64,
    pub delivered: u64,
    pub out: u64,
}

impl Prr {
    /// `tcp_init_cwnd_reduction`.
    pub fn start(cwnd_segs: u64) -> Prr {
        Prr { prior_cwnd: cwnd_segs.max(1), delivered: 0, out: 0 }
    }

    /// `tcp_cwnd_reduction`: the new cwnd, segments, after an ACK that
    /// delivered `newly` segments with `pipe` in flight; None if the ACK
    /// delivered nothing (cwnd unchanged).
    pub fn on_ack(&mut self, newly: u64, pipe: u64, ssthresh: u64, una_advanced: bool, newly_lost: bool) -> Option<u64> {
        if newly == 0 {
            return None;
        }
        self.delivered += newly;
        let sndcnt = if pipe > ssthresh {
            ((ssthresh * self.delivered).div_ceil(self.prior_cwnd)).saturating_sub(self.out)
        } else {
            let mut s = self.delivered.saturating_sub(self.out).max(newly);
            if una_advanced && !newly_lost {
                s += 1;
            }
            s.min(ssthresh - pipe)
        };
        let sndcnt = sndcnt.max(if self.out == 0 { 1 } else { 0 });
        Some(pipe + sndcnt)
    }
}

/// TLP's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tlp {
    /// `tp->tlp_high_seq`: snd_nxt when the outstanding probe left.
    pub high_seq: Option<u64>,
    /// `tp->tlp_retrans`: the probe was a retransmission.
    pub retrans: bool,
    /// The probe timer's deadline when it holds the RTO timer's place, and
    /// the RTO deadline it stands in for.
    pub armed: Option<(SimTime, Option<SimTime>)>,
}

/// `tcp_schedule_loss_probe`'s timeout: 2 SRTT plus 2 ms, or plus the
/// minimum RTO if one segment is out; at most `rto_left`.
pub fn pto(srtt: Duration, one_segment: bool, min_rto: Duration, rto_left: Option<Duration>) -> Duration {
    let extra = if one_segment { min_rto } else { TCP_TIMEOUT_MIN };
    let t = Duration(2 * srtt.as_nanos() + extra.as_nanos());
    match rto_left {
        Some(r) if r.as_nanos() > 0 => Duration(t.as_nanos().min(r.as_nanos())),
        _ => t,
    }
}

/// `tcp_cwnd_validate`'s record of the window's use, bytes:
/// `tp->is_cwnd_limited`, `max_packets_out` and `cwnd_usage_seq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CwndUsage {
    pub limited: bool,
    pub max_out: u64,
    pub seq: u64,
}

impl CwndUsage {
    /// After a round of sending (`tcp_write_xmit`) that sent something or
    /// was held back by cwnd (`limited`): a new flight (snd_una reached the
    /// recorded snd_nxt) or a cwnd-limited round starts a new record; else
    /// a larger flight raises it while it is not cwnd-limited.
    pub fn validate(&mut self, limited: bool, snd_una: u64, packets_out: u64, snd_nxt: u64) {
        if snd_una >= self.seq || limited || (!self.limited && packets_out > self.max_out) {
            *self = CwndUsage { limited, max_out: packets_out, seq: snd_nxt };
        }
    }
}

/// Whether any Linux 6 sender part is on.
pub fn any(h: &HostBehaviour) -> bool {
    h.tlp || h.prr || h.tso_autosize || h.cwnd_usage
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// `tcp_update_pacing_rate` at cwnd 100 x 1448 B, SRTT 20 ms: 7.24 MB/s
    /// of window, 14.48 MB/s in slow start (cwnd < ssthresh / 2), 8.688 after.
    #[test]
    fn pacing_rate_is_200_then_120_percent_of_cwnd_over_srtt() {
        let (cwnd, srtt) = (100 * 1448, Some(Duration(20 * MS)));
        assert_eq!(pacing_rate(cwnd, 0, u64::MAX, srtt), Some(14_480_000));
        assert_eq!(pacing_rate(cwnd, 0, 2 * cwnd, srtt), Some(8_688_000), "cwnd = ssthresh/2: 120 %");
        assert_eq!(pacing_rate(cwnd, 0, cwnd, srtt), Some(8_688_000));
        assert_eq!(pacing_rate(cwnd, 150 * 1448, cwnd, srtt), Some(13_032_000), "packets_out above cwnd counts");
        assert_eq!(pacing_rate(cwnd, 0, cwnd, None), None);
    }

    /// `tcp_tso_autosize` and `tcp_small_queue_check` at the pacing rates above.
    #[test]
    fn tso_goal_and_tsq_limit_follow_the_pacing_rate() {
        let mss = 1448;
        let rtt20 = Some(Duration(20 * MS));
        // 8,688,000 >> 10 = 8,484 B: 5 segments (7,240 B); min RTT 20 ms: r = 39, no addition.
        assert_eq!(tso_goal(Some(8_688_000), rtt20, mss, 65_536), 5 * mss);
        // TSQ: max(2 x (1,514 + 896), 8,484) = 8,484.
        assert_eq!(tsq_limit(Some(8_688_000), 1514), 8_484);
        // A slow flow: 1 MB/s >> 10 = 976 B: at least 2 segments, TSQ floor 2 x truesize.
        assert_eq!(tso_goal(Some(1_000_000), rtt20, mss, 65_536), 2 * mss);
        assert_eq!(tsq_limit(Some(1_000_000), 1514), 2 * (1514 + 896));
        // A fast one: 10 GB/s >> 10 = 9.77 MB: the goal at 64 KB (45 segments), TSQ at 4 MiB.
        assert_eq!(tso_goal(Some(10_000_000_000), rtt20, mss, 65_536), 45 * mss);
        assert_eq!(tsq_limit(Some(10_000_000_000), 65_536), 4 << 20);
        // min RTT 1 ms: r = 1000 >> 9 = 1, 64 KB >> 1 = 32 KB added: 8,484 + 32,768 = 41,252 B: 28 segments.
        assert_eq!(tso_goal(Some(8_688_000), Some(Duration(MS)), mss, 65_536), 28 * mss);
        // No RTT sample yet: unlimited.
        assert_eq!(tso_goal(None, None, mss, 65_536), 45 * mss);
        assert_eq!(tsq_limit(None, 1514), 4 << 20);
    }

    /// Worked by hand in Linux's segments: cwnd 20 when one segment is
    /// found lost, ssthresh 10 (a halving); every later ACK SACKs one.
    #[test]
    fn prr_sndcnt_sequence_of_rfc6937_example() {
        let ssthresh = 10;
        let mut p = Prr::start(20);
        // The fast retransmit left on entry (prr_out 1): pipe = 20 - 1
        // (lost) - 3 (SACKed) + 1 (retransmitted) = 17.
        p.out = 1;
        let mut pipe = 17;
        let mut sent = Vec::new();
        for _ in 0..10 {
            let cwnd = p.on_ack(1, pipe, ssthresh, false, false).unwrap();
            // Each ACK takes one segment out of the pipe; send what cwnd allows.
            let n = cwnd.saturating_sub(pipe);
            sent.push(n);
            p.out += n;
            pipe = pipe + n;
            pipe -= 1;
        }
        // prr_delivered d = 1..10: ceil(10 d / 20) - prr_out, prr_out
        // starting at 1: one new segment every second ACK from d = 3.
        assert_eq!(sent, vec![0, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
        assert_eq!((p.out, pipe), (5, 11), "prr_out = ceil(10 x 10 / 20) = 5 after 10 delivered");
        // Once pipe has fallen to ssthresh, slow-start reduction bound: min(ssthresh - pipe, ...).
        let mut q = Prr { prior_cwnd: 20, delivered: 10, out: 6 };
        // pipe 8 below ssthresh 10: max(delivered - out, newly) = max(11 - 6, 1) = 5, +1 (una advanced) = 6, min(10 - 8) = 2.
        assert_eq!(q.on_ack(1, 8, 10, true, false), Some(10));
        // With a new loss on the ACK: no +1, still capped at 2.
        let mut q = Prr { prior_cwnd: 20, delivered: 10, out: 10 };
        assert_eq!(q.on_ack(1, 9, 10, true, true), Some(10), "min(10 - 9, max(1, 1)) = 1");
        // Nothing delivered: cwnd untouched.
        assert_eq!(q.on_ack(0, 9, 10, true, false), None);
        // Entering with nothing sent yet forces one segment out.
        let mut r = Prr::start(20);
        assert_eq!(r.on_ack(1, 19, 10, false, false), Some(20), "ceil(10/20) - 0 = 1");
        let mut r = Prr::start(40);
        assert_eq!(r.on_ack(1, 39, 10, false, false), Some(40), "ceil(10/40) = 1");
    }

    /// `tcp_cwnd_validate` (f4ce91ce12a7's example): a cwnd-limited round
    /// is remembered for its flight even when a later round of the same
    /// flight has more out without being cwnd-limited; a new flight forgets it.
    #[test]
    fn cwnd_limited_is_kept_for_the_flight() {
        let mut u = CwndUsage::default();
        // TSO deferral held the sender back by cwnd with 10 out, snd_nxt 10.
        u.validate(true, 0, 10, 10);
        assert_eq!(u, CwndUsage { limited: true, max_out: 10, seq: 10 });
        // Later in the same flight more is out, not cwnd-limited: kept.
        u.validate(false, 5, 12, 17);
        assert_eq!(u, CwndUsage { limited: true, max_out: 10, seq: 10 });
        // snd_una reaches 10: a new flight, not cwnd-limited.
        u.validate(false, 10, 12, 22);
        assert_eq!(u, CwndUsage { limited: false, max_out: 12, seq: 22 });
        // Not limited: the larger flight is recorded (its edge moves on).
        u.validate(false, 11, 15, 26);
        assert_eq!(u, CwndUsage { limited: false, max_out: 15, seq: 26 });
        u.validate(false, 12, 14, 26);
        assert_eq!(u.max_out, 15);
    }

    #[test]
    fn pto_is_two_srtt_plus_2ms_or_min_rto_for_one_segment_bounded_by_rto() {
        let srtt = Duration(20 * MS);
        assert_eq!(pto(srtt, false, Duration(200 * MS), None), Duration(42 * MS));
        assert_eq!(pto(srtt, true, Duration(200 * MS), None), Duration(240 * MS));
        assert_eq!(pto(srtt, true, Duration(200 * MS), Some(Duration(230 * MS))), Duration(230 * MS));
        assert_eq!(pto(srtt, false, Duration(200 * MS), Some(Duration(300 * MS))), Duration(42 * MS));
    }
}
