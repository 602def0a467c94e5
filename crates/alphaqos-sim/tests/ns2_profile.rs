//! The `ns2` host profile (`tcp/ns2.rs`), each part on a hand-built ACK
//! sequence worked out from the ns-2.35 function it follows, and the same
//! sequence without the profile for contrast. Segments of 1000 bytes;
//! segment k is [1000 k, 1000 (k + 1)).

mod common;

use alphaqos_sim::config::TcpConfig;
use alphaqos_sim::event::FlowTimer;
use alphaqos_sim::packet::{Payload, SackBlocks};
use alphaqos_sim::tcp::receiver::TcpReceiver;
use alphaqos_sim::tcp::sender::TcpSender;
use alphaqos_sim::tcp::Wire;
use alphaqos_sim::time::SimTime;

const MSS: u64 = 1000;
const MS: u64 = 1_000_000;

#[derive(Default)]
struct W {
    now: SimTime,
    /// Data segments sent: (segment, retransmission).
    data: Vec<(u64, bool)>,
    /// ACKs sent: cumulative ACK, bytes.
    acks: Vec<u64>,
    /// Timers asked for.
    timers: Vec<(SimTime, FlowTimer)>,
}

impl Wire for W {
    fn now(&self) -> SimTime {
        self.now
    }
    fn send(&mut self, p: Payload, _size: u32) {
        match p {
            Payload::TcpData { seq, retx, .. } => self.data.push((seq / MSS, retx)),
            Payload::TcpAck { ack, .. } => self.acks.push(ack),
            _ => {}
        }
    }
    fn schedule(&mut self, at: SimTime, t: FlowTimer) {
        self.timers.push((at, t));
    }
    fn tx_room(&mut self) -> bool {
        true
    }
}

fn config(extra: &str) -> TcpConfig {
    let json = format!(r#"{{"cc": "newreno", "mss_bytes": 1000, "rwnd_bytes": 10000000 {extra}}}"#);
    serde_json::from_str(&json).expect("config")
}

fn sender(extra: &str) -> (TcpSender, W) {
    common::started_sender(&config(extra), MSS)
}

/// An ACK of `ack` segments with SACK blocks (in segments) at `t_ms`.
fn ack(s: &mut TcpSender, w: &mut W, t_ms: u64, ack: u64, blocks: &[(u64, u64)]) {
    let mut b = SackBlocks::default();
    for &(l, r) in blocks {
        b.push(ack * MSS, l * MSS, r * MSS);
    }
    w.now = SimTime(t_ms * MS);
    s.on_ack(ack * MSS, SimTime(t_ms.saturating_sub(100) * MS), 10_000_000, &b, w);
}

/// One round trip: everything outstanding acknowledged, `per_ack`
/// segments an ACK (the odd one alone, as the delayed-ACK timer would).
fn round(s: &mut TcpSender, w: &mut W, t_ms: &mut u64, per_ack: u64) {
    *t_ms += 100;
    let una = s.bytes_acked() / MSS;
    let max = una + s.in_flight() / MSS;
    let mut k = una;
    while k < max {
        k = (k + per_ack).min(max);
        ack(s, w, *t_ms, k, &[]);
    }
}

#[test]
fn slow_start_grows_one_and_a_half_per_round_with_delayed_acks() {
    // ns-2's opencwnd: +1 packet per ACK, so W/2 ACKs grow W to 1.5 W.
    let (mut s, mut w) = sender(r#", "host_profile": "ns2", "init_cwnd_pkts": 4"#);
    let mut t = 0;
    let mut seen = vec![s.cwnd() / MSS];
    for _ in 0..3 {
        round(&mut s, &mut w, &mut t, 2);
        seen.push(s.cwnd() / MSS);
    }
    assert_eq!(seen, vec![4, 6, 9, 14], "9 segments: four ACKs of two and the odd one on the timer");
    // One ACK per segment: doubling, as everywhere.
    let (mut s, mut w) = sender(r#", "host_profile": "ns2", "init_cwnd_pkts": 4"#);
    round(&mut s, &mut w, &mut t, 1);
    assert_eq!(s.cwnd() / MSS, 8);
    // Without the profile RFC 3465 counts bytes (L = 2 SMSS): doubling with delayed ACKs too.
    let (mut s, mut w) = sender(r#", "init_cwnd_pkts": 4"#);
    round(&mut s, &mut w, &mut t, 2);
    round(&mut s, &mut w, &mut t, 2);
    assert_eq!(s.cwnd() / MSS, 16);
}

/// Segments 2 and 5 of 0..9 lost; the trace below is `Sack1TcpAgent::recv`,
/// `dupack_action`, `send_much` and `send_one` worked by hand (pipe_ in
/// packets, cwnd 12 when the losses are found).
fn sack1_trace(extra: &str) -> (TcpSender, W, Vec<Option<(i64, bool)>>) {
    let (mut s, mut w) = sender(&format!(r#", "init_cwnd_pkts": 10 {extra}"#));
    let mut pipes = Vec::new();
    ack(&mut s, &mut w, 100, 1, &[]); // cwnd 11: 10, 11 leave
    ack(&mut s, &mut w, 101, 2, &[]); // cwnd 12: 12, 13 leave
    ack(&mut s, &mut w, 102, 2, &[(3, 4)]); // dupack 1: send_one, 14
    ack(&mut s, &mut w, 103, 2, &[(3, 5)]); // dupack 2: send_one, 15
    ack(&mut s, &mut w, 104, 2, &[(6, 7), (3, 5)]); // dupack 3: recovery
    pipes.push(s.sack1_state());
    // Segments 7..15 arrive.
    for (t, top) in (105..).zip(8..=16) {
        ack(&mut s, &mut w, t, 2, &[(6, top), (3, 5)]);
        pipes.push(s.sack1_state());
    }
    ack(&mut s, &mut w, 114, 5, &[(6, 16)]); // partial ACK: segment 2's copy
    pipes.push(s.sack1_state());
    ack(&mut s, &mut w, 115, 16, &[]); // segment 5's copy: recovery ends
    pipes.push(s.sack1_state());
    (s, w, pipes)
}

#[test]
fn sack1_recovery_follows_the_hand_worked_trace() {
    let (s, w, pipes) = sack1_trace(r#", "host_profile": "ns2""#);
    let sent: Vec<(u64, bool)> = w.data[10..].to_vec();
    #[rustfmt::skip]
    let want = vec![
        (10, false), (11, false), (12, false), (13, false), // two new ACKs, slow start
        (14, false), (15, false),                          // send_one on dupacks 1 and 2
        (2, true),                                         // dupack_action: pipe_ = 16 - 2 - 3 = 11, cwnd 6
        (5, true),                                         // pipe_ 5 < 6: GetNextRetran, the hole below SACKed 6
        (16, false), (17, false), (18, false),             // no hole left: new data, the peer's window only
        (19, false), (20, false),                          // partial ACK: pipe_ down twice, two sends
        (21, false),                                       // recovery over: cwnd 6 stays, window 16..21
    ];
    assert_eq!(sent, want);
    // pipe_ after each ACK: 11 at entry, -1 per ACK until it is below
    // cwnd (6), then one send per ACK; the partial ACK takes two and sends
    // two; the last ACK ends recovery and sends one (pipe_ counts on).
    let p: Vec<(i64, bool)> = pipes.iter().map(|x| x.unwrap()).collect();
    let fr = |v: &[i64]| v.iter().map(|&x| (x, true)).collect::<Vec<_>>();
    assert_eq!(p[..11], fr(&[11, 10, 9, 8, 7, 6, 6, 6, 6, 6, 6])[..]);
    assert_eq!(p[11], (6, false), "fast recovery over");
    // slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_HALF) of a 12-packet window,
    // and no increase on the ACK that ends recovery.
    assert_eq!((s.cwnd(), s.ssthresh()), (6 * MSS, 6 * MSS));
    assert_eq!((s.stats.retransmits, s.stats.fast_retransmits), (2, 1));
    assert_eq!(s.scoreboard(), (16 * MSS, 0), "ClearScoreBoard at the end of recovery");
    // Without the profile (RFC 6675) the same ACKs send something else.
    let (_, w, pipes) = sack1_trace("");
    assert!(pipes.iter().all(Option::is_none));
    assert_ne!(w.data[10..].to_vec(), want);
}

#[test]
fn sack1_congestion_avoidance_grows_half_a_packet_per_round_with_delayed_acks() {
    for ns2 in [true, false] {
        let (mut s, mut w, _) = sack1_trace(if ns2 { r#", "host_profile": "ns2""# } else { "" });
        let mut t = 200;
        assert!(s.cwnd() >= s.ssthresh(), "in congestion avoidance after the recovery");
        for _ in 0..4 {
            let (before, outstanding) = (s.cwnd(), s.in_flight() / MSS);
            round(&mut s, &mut w, &mut t, 2);
            let grew = s.cwnd() - before;
            if ns2 {
                // opencwnd: cwnd += 1/cwnd (packets) per ACK, ceil(W / 2) ACKs.
                let mut c = before as f64 / MSS as f64;
                for _ in 0..outstanding.div_ceil(2) {
                    c += 1.0 / c;
                }
                assert!((s.cwnd() as f64 - c * MSS as f64).abs() < 2.0, "{} vs ns-2's {c}", s.cwnd());
                // About half a packet a round: ceil(W / 2) / W of one, less as cwnd grows within the round.
                let most = MSS * outstanding.div_ceil(2) / outstanding;
                assert!((400..=most).contains(&grew), "ns2: about half a packet a round, grew {grew} at {before}");
            } else {
                assert!(grew == 0 || grew == MSS, "default: a packet per window of bytes acknowledged");
            }
        }
        if !ns2 {
            assert!(s.cwnd() >= 8 * MSS, "default: a packet a round, {}", s.cwnd());
        }
    }
}

#[test]
fn sack1_timeout_goes_back_and_resends_sacked_data() {
    let (mut s, mut w) = sender(r#", "host_profile": "ns2", "init_cwnd_pkts": 6, "tcp_tick_ns": 1000000"#);
    ack(&mut s, &mut w, 100, 1, &[]); // cwnd 7: 6, 7 leave
    ack(&mut s, &mut w, 101, 1, &[(2, 3)]);
    ack(&mut s, &mut w, 102, 1, &[(2, 4)]);
    ack(&mut s, &mut w, 103, 1, &[(2, 5)]); // recovery, segment 1 resent
    assert_eq!(s.sack1_state().map(|p| p.1), Some(true));
    // Limited transmit sent 8 and 9; cwnd 3.5 packets, ssthresh 3.
    assert_eq!((s.cwnd(), s.ssthresh()), (3500, 3 * MSS));
    let n = w.data.len();
    // The retransmission timer fires (the copy of 1 was lost too).
    while s.stats.timeouts == 0 {
        let &(at, _) = w.timers.iter().rev().find(|t| t.1 == FlowTimer::Rto).unwrap();
        w.now = at;
        s.on_timer(FlowTimer::Rto, &mut w);
    }
    let at = w.now;
    assert_eq!(s.cwnd(), MSS, "CLOSE_CWND_RESTART: one packet");
    assert_eq!(s.ssthresh(), 2 * MSS, "half of the 3.5-packet window, floored, at least 2");
    assert_eq!(&w.data[n..], &[(1, true)]);
    // Duplicate ACKs after the timeout are ignored (timeout_), and the
    // go-back-N resends SACKed segments 2..4 too (the scoreboard was cleared).
    ack(&mut s, &mut w, at.as_nanos() / MS + 1, 1, &[(2, 6)]);
    assert_eq!(w.data.len(), n + 1);
    ack(&mut s, &mut w, at.as_nanos() / MS + 2, 2, &[(2, 6)]);
    assert_eq!(&w.data[n + 1..], &[(2, true), (3, true)], "cwnd 2 after one new ACK");
}

#[test]
fn delack_sink_waits_on_the_last_segment_of_a_burst() {
    for (profile, immediate) in [("ns2", false), ("default", true)] {
        let cfg = config(&format!(r#", "host_profile": "{profile}", "delack_timeout_ns": 100000000"#));
        let mut r = TcpReceiver::new(&cfg);
        let mut w = W::default();
        // A burst of three: the second is acknowledged at once, the third
        // (the last the application wrote: PSH) starts the timer.
        for k in 0..3u64 {
            w.now = SimTime(k * MS);
            r.on_segment(k * MSS, MSS as u32, w.now, false, k == 2, &mut w);
        }
        if immediate {
            assert_eq!(w.acks, vec![2 * MSS, 3 * MSS], "default: PSH acknowledged at once");
            continue;
        }
        assert_eq!(w.acks, vec![2 * MSS], "ns2: ns-2 has no PSH");
        // The first segment's timer (100 ms) comes first and re-arms for the third's.
        w.now = SimTime(100 * MS);
        r.on_timer(FlowTimer::DelAck, &mut w);
        assert_eq!(w.acks, vec![2 * MSS]);
        assert_eq!(*w.timers.last().unwrap(), (SimTime(102 * MS), FlowTimer::DelAck), "interval_ 100 ms from the third");
        w.now = SimTime(102 * MS);
        r.on_timer(FlowTimer::DelAck, &mut w);
        assert_eq!(w.acks, vec![2 * MSS, 3 * MSS]);
        // Out of order: at once (RFC2581_immediate_ack_), and the gap-filler too.
        r.on_segment(4 * MSS, MSS as u32, w.now, false, false, &mut w);
        r.on_segment(3 * MSS, MSS as u32, w.now, false, false, &mut w);
        assert_eq!(w.acks, vec![2 * MSS, 3 * MSS, 3 * MSS, 5 * MSS]);
    }
}
