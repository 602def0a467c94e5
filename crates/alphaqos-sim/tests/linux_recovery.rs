//! The Linux 2.6.33 host behaviours (`tcp/linux.rs`), each on a hand-built
//! ACK sequence that shows what the cited `net/ipv4/tcp_input.c` /
//! `tcp_output.c` function does. Segments of 1000 bytes; segment k is
//! [1000 k, 1000 (k + 1)).

mod common;

use alphaqos_sim::config::TcpConfig;
use alphaqos_sim::event::FlowTimer;
use alphaqos_sim::packet::{Payload, SackBlocks};
use alphaqos_sim::tcp::receiver::TcpReceiver;
use alphaqos_sim::tcp::sender::TcpSender;
use alphaqos_sim::tcp::Wire;
use alphaqos_sim::time::SimTime;

const MSS: u64 = 1000;

#[derive(Default)]
struct W {
    now: SimTime,
    /// Data segments sent: (seq, retransmission).
    data: Vec<(u64, bool)>,
    /// ACKs sent: (ack, SACK blocks).
    acks: Vec<(u64, Vec<(u64, u64)>)>,
}

impl Wire for W {
    fn now(&self) -> SimTime {
        self.now
    }
    fn send(&mut self, p: Payload, _size: u32) {
        match p {
            Payload::TcpData { seq, retx, .. } => self.data.push((seq, retx)),
            Payload::TcpAck { ack, sack, .. } => self.acks.push((ack, sack.iter(ack).collect())),
            _ => {}
        }
    }
    fn schedule(&mut self, _at: SimTime, _t: FlowTimer) {}
    fn tx_room(&mut self) -> bool {
        true
    }
}

fn config(extra: &str) -> TcpConfig {
    let json = format!(r#"{{"cc": "newreno", "mss_bytes": 1000, "init_cwnd_pkts": 20, "rwnd_bytes": 1000000, "delayed_ack": false {extra}}}"#);
    serde_json::from_str(&json).expect("config")
}

/// A sender with segments 0..19 in flight (20 of them, all the data when `size`).
fn sender(extra: &str) -> (TcpSender, W) {
    common::started_sender(&config(extra), MSS)
}

fn sack(ack: u64, blocks: &[(u64, u64)]) -> SackBlocks {
    let mut b = SackBlocks::default();
    for &(s, e) in blocks {
        b.push(ack, s * MSS, e * MSS);
    }
    b
}

/// An ACK of `ack` segments with SACK blocks (in segments), at `t_ms`,
/// echoing a timestamp sent at `ecr_ms`.
fn ack(s: &mut TcpSender, w: &mut W, t_ms: u64, ecr_ms: u64, ack: u64, blocks: &[(u64, u64)]) {
    w.now = SimTime(t_ms * 1_000_000);
    s.on_ack(ack * MSS, SimTime(ecr_ms * 1_000_000), 1_000_000, &sack(ack * MSS, blocks), w);
}

fn retransmitted(w: &W) -> Vec<u64> {
    w.data.iter().filter(|d| d.1).map(|d| d.0 / MSS).collect()
}

#[test]
fn fack_marks_holes_lost_below_the_forward_most_sack_less_reordering() {
    // Ten segments, all the data. tcp_time_to_recover: fackets_out
    // (segments up to the forward-most SACKed one) > reordering (3).
    // Segment 8 SACKed: fackets_out = 9.
    let (mut s, mut w) = sender(r#", "fack": true, "size_bytes": 10000"#);
    ack(&mut s, &mut w, 3, 0, 0, &[(8, 9)]);
    assert_eq!(s.stats.fast_retransmits, 1, "FACK: 9 > 3, recovery");
    // tcp_update_scoreboard: lost = fackets_out - reordering = 6: segments
    // 0..5. Pipe = 10 - 1 SACKed - 6 lost + 1 resent = 4 < cwnd 5: one
    // more hole goes at once (had only the head been lost, pipe 8 > 5).
    assert_eq!(s.cwnd(), 5 * MSS);
    assert_eq!(retransmitted(&w), vec![0, 1]);
    // Without FACK (RFC 6675 rule, DupThresh 3) one SACKed segment is no loss.
    let (mut s, mut w) = sender(r#", "size_bytes": 10000"#);
    ack(&mut s, &mut w, 3, 0, 0, &[(8, 9)]);
    assert_eq!(s.stats.fast_retransmits, 0);
    assert!(retransmitted(&w).is_empty());
}

#[test]
fn detected_reordering_raises_the_metric_and_disables_fack() {
    for adaptive in [true, false] {
        let (mut s, mut w) = sender(&format!(r#", "fack": true, "adaptive_reordering": {adaptive}"#));
        // Segment 5 arrives first: FACK recovery, segment 0 resent.
        ack(&mut s, &mut w, 3, 0, 0, &[(5, 6)]);
        assert_eq!(retransmitted(&w), vec![0]);
        // Then the originals 0..4: the cumulative ACK covers segments 1..4,
        // never retransmitted nor SACKed, below the forward-most SACK (6):
        // tcp_clean_rtx_queue -> tcp_update_reordering(fackets_out - reord)
        // with reord = 1: 6 - 1 = 5.
        ack(&mut s, &mut w, 3, 0, 6, &[]);
        if adaptive {
            assert_eq!(s.reordering(), 5);
            assert!(!s.fack(), "tcp_disable_fack");
        } else {
            assert_eq!(s.reordering(), 3);
            assert!(s.fack());
        }
    }
}

#[test]
fn raised_metric_tolerates_reordering_that_fack_would_call_loss() {
    let (mut s, mut w) = sender(r#", "fack": true, "adaptive_reordering": true"#);
    ack(&mut s, &mut w, 3, 0, 0, &[(5, 6)]);
    ack(&mut s, &mut w, 3, 0, 6, &[]); // reordering 5, FACK off
    ack(&mut s, &mut w, 5, 0, 20, &[]); // recovery over
    let before = s.stats.fast_retransmits;
    // 4 segments SACKed above a hole: below the metric (5), Disorder only.
    let next = s.bytes_acked() / MSS;
    ack(&mut s, &mut w, 6, 0, next, &[(next + 1, next + 5)]);
    assert_eq!(s.stats.fast_retransmits, before, "sacked_out 4 < reordering 5: no recovery");
    ack(&mut s, &mut w, 6, 0, next, &[(next + 1, next + 6)]);
    assert_eq!(s.stats.fast_retransmits, before + 1, "sacked_out 5 >= 5: recovery");
}

#[test]
fn dsack_for_the_retransmission_undoes_the_window_reduction() {
    for undo in [true, false] {
        let (mut s, mut w) = sender(&format!(r#", "fack": true, "undo": {undo}"#));
        ack(&mut s, &mut w, 3, 0, 0, &[(5, 6)]); // recovery: cwnd 20 -> 10
        assert_eq!(s.cwnd(), 10 * MSS);
        // The originals fill the hole, but the echoed timestamp (3 ms) is of
        // the same 4 ms tick as the retransmission: tcp_packet_delayed says
        // no, and the retransmission is not yet known duplicate.
        ack(&mut s, &mut w, 3, 3, 6, &[]);
        assert_eq!(s.cwnd(), 10 * MSS);
        // The duplicate of segment 0 is reported by a D-SACK below the ACK
        // (RFC 2883; tcp_check_dsack): undo_retrans 1 -> 0, and this
        // partial ACK undoes the reduction (tcp_try_undo_partial).
        ack(&mut s, &mut w, 4, 3, 7, &[(0, 1)]);
        if undo {
            assert_eq!(s.cwnd(), 20 * MSS, "tcp_undo_cwr: the window before the cut");
        } else {
            assert_eq!(s.cwnd(), 10 * MSS);
        }
        // Recovery ends: tcp_try_undo_recovery restores ssthresh too, and
        // tcp_complete_cwr keeps cwnd = min(cwnd, ssthresh).
        ack(&mut s, &mut w, 5, 4, 20, &[]);
        assert_eq!(s.cwnd(), if undo { 20 } else { 10 } * MSS);
    }
}

#[test]
fn timestamps_older_than_the_retransmission_undo_at_once_unless_same_tick() {
    // The original filled the hole: the ACK echoes its timestamp (0 ms),
    // the retransmission left at 3 ms.
    for (tick, undone) in [(r#""ts_tick_ns": 1000000"#, true), (r#""ts_tick_ns": 4000000"#, false)] {
        let (mut s, mut w) = sender(&format!(r#", "fack": true, "undo": true, {tick}"#));
        ack(&mut s, &mut w, 3, 0, 0, &[(5, 6)]);
        ack(&mut s, &mut w, 3, 0, 6, &[]);
        // 1 ms ticks: 0 is before 3 (tcp_packet_delayed); 4 ms ticks: both tick 0.
        assert_eq!(s.cwnd() == 20 * MSS, undone, "{tick}");
    }
}

#[test]
fn moderation_in_disorder_clamps_cwnd_to_flight_plus_reordering() {
    for moderate in [true, false] {
        // 20 segments, all the data: nothing new to send.
        let (mut s, mut w) = sender(&format!(r#", "moderate_cwnd": {moderate}, "size_bytes": 20000"#));
        // 2 acknowledged (slow start: cwnd 22), segment 5 SACKed: Disorder,
        // not recovery (one SACKed segment, DupThresh 3).
        ack(&mut s, &mut w, 3, 0, 2, &[(5, 6)]);
        assert_eq!(s.stats.fast_retransmits, 0);
        // tcp_moderate_cwnd: in flight = 18 - 1 SACKed = 17, + reordering 3.
        assert_eq!(s.cwnd(), if moderate { 20 } else { 22 } * MSS);
    }
}

#[test]
fn rate_halving_lowers_cwnd_one_segment_every_second_ack() {
    let (mut s, mut w) = sender(r#", "fack": true, "rate_halving": true"#);
    ack(&mut s, &mut w, 3, 0, 0, &[(5, 6)]);
    // tcp_cwnd_down on the ACK that starts recovery: cwnd stays 20 (not
    // ssthresh 10 at once), clamped to packets in flight + 1: 20 - 1 SACKed
    // - 3 lost (fackets 6 - reordering 3) + 1 resent = 17, + 1.
    assert_eq!(s.ssthresh(), 10 * MSS);
    assert_eq!(s.cwnd(), 18 * MSS);
    let mut last = s.cwnd();
    for k in 6..14 {
        ack(&mut s, &mut w, 3, 0, 0, &[(5, k + 1)]);
        assert!(s.cwnd() <= last && s.cwnd() >= 10 * MSS, "{k}: {}", s.cwnd());
        last = s.cwnd();
    }
    assert!(last < 18 * MSS);
    let top = w.data.iter().map(|d| d.0 / MSS).max().unwrap() + 1;
    ack(&mut s, &mut w, 5, 0, top, &[]);
    assert_eq!(s.cwnd(), 10 * MSS, "tcp_complete_cwr: min(cwnd, ssthresh)");
}

#[test]
fn tso_defers_small_frames_in_the_open_state() {
    for (tso, sent_after_first) in [(r#", "tso_max_bytes": 65536"#, 20), ("", 24)] {
        let (mut s, mut w) = sender(tso);
        assert_eq!(w.data.len(), 20, "an empty pipe sends at once");
        // 2 acknowledged: cwnd 22, room 4 segments < min(64 KB, cwnd / 3):
        // tcp_tso_should_defer waits.
        ack(&mut s, &mut w, 3, 0, 2, &[]);
        assert_eq!(w.data.len(), sent_after_first);
        // 2 more: cwnd 24, room 8 >= 24 / 3: one 8-segment frame.
        ack(&mut s, &mut w, 3, 0, 4, &[]);
        assert_eq!(w.data.len(), 28);
    }
}

#[test]
fn receiver_reports_duplicates_in_a_dsack_and_quick_acks_after() {
    let cfg = config("");
    let mut r = TcpReceiver::new(&cfg);
    r.set_linux(true, true);
    let mut w = W::default();
    for k in 0..3 {
        r.on_segment(k * MSS, MSS as u32, SimTime::ZERO, false, false, &mut w);
    }
    // Segment 1 again: the ACK's first block is below it (RFC 2883).
    r.on_segment(MSS, MSS as u32, SimTime::ZERO, true, false, &mut w);
    assert_eq!(w.acks.last().unwrap(), &(3 * MSS, vec![(MSS, 2 * MSS)]));
    let mut plain = TcpReceiver::new(&cfg);
    let mut w2 = W::default();
    plain.on_segment(0, MSS as u32, SimTime::ZERO, false, false, &mut w2);
    plain.on_segment(0, MSS as u32, SimTime::ZERO, true, false, &mut w2);
    assert!(w2.acks.last().unwrap().1.is_empty(), "no D-SACK unless asked");
}

#[test]
fn host_profile_sets_every_behaviour_and_each_overrides_alone() {
    let h = config(r#", "host_profile": "linux-2.6.33", "undo": false"#).host();
    assert!(h.fack && h.adaptive_reordering && h.dsack && h.moderate_cwnd && h.rate_halving && h.quickack_after_dup && h.gro);
    assert!(!h.undo);
    assert_eq!((h.max_reordering, h.tso_max_bytes, h.ts_tick_ns, h.napi_interval_ns), (127, 65536, 4_000_000, 125_000));
    let d = config("").host();
    assert!(!d.fack && !d.undo && d.tso_max_bytes == 0 && !d.gro);
    let g = config(r#", "gro": true, "napi_interval_ns": 50000"#).host();
    assert!(g.gro && !g.fack && g.napi_interval_ns == 50_000);
    // An unknown profile is refused when the configuration is read, with the known ones.
    let e = serde_json::from_str::<TcpConfig>(r#"{"host_profile": "linux-9"}"#).unwrap_err().to_string();
    assert!(e.contains("unknown variant `linux-9`, expected one of `default`, `linux-2.6.33`, `linux-6`, `ns2`"), "{e}");
    // linux-6 (`tcp/linux6.rs`): what Linux 6 kept, without FACK, rate-halving, moderation.
    let l6 = config(r#", "host_profile": "linux-6""#).host();
    assert!(l6.tlp && l6.prr && l6.tso_autosize && l6.dsack && l6.undo && l6.adaptive_reordering && l6.quickack_after_dup && l6.gro);
    assert!(!l6.fack && !l6.rate_halving && !l6.moderate_cwnd && !l6.sack1);
    assert_eq!((l6.max_reordering, l6.tso_max_bytes, l6.ts_tick_ns), (300, 65536, 1_000_000));
    assert!(!d.tlp && !d.prr && !d.tso_autosize && !h.tlp && !h.prr);
    // The ns2 profile (`tcp/ns2.rs`) sets its own behaviours and none of Linux's.
    let n = config(r#", "host_profile": "ns2""#).host();
    assert!(n.per_ack_growth && n.sack1 && n.ns2_delack && n.tcp_tick_ns == 10_000_000);
    assert!(!n.fack && !n.undo && !n.gro && n.tso_max_bytes == 0);
    assert!(!d.per_ack_growth && !d.sack1 && !d.ns2_delack && d.tcp_tick_ns == 0);
}
