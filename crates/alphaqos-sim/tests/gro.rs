//! Receive coalescing in NAPI polls (`tcp/gro.rs`), driven by a small
//! event loop: segments of 1448 bytes land on the receiver at given times,
//! the NAPI timer fires when the receiver asked for it.

use alphaqos_sim::config::TcpConfig;
use alphaqos_sim::tcp::receiver::TcpReceiver;
use alphaqos_sim::time::{Duration, SimTime};

const MSS: u64 = 1448;
/// One 1500-byte frame (with 38 bytes of Ethernet overhead) at 10 Gbps.
const FRAME_NS: u64 = 1230;
const TICK_NS: u64 = 4_000_000;

/// What the end under test sends and asks for.
type W = common::RecWire;

fn receiver(gro: bool) -> TcpReceiver {
    let cfg: TcpConfig = serde_json::from_str(r#"{"mss_bytes": 1448, "rwnd_bytes": 100000000}"#).unwrap();
    let mut r = TcpReceiver::new(&cfg);
    if gro {
        r.set_gro(Duration(125_000), TICK_NS);
    }
    r
}

/// Deliver segment k of `order` at `times[k]`, running every timer due
/// before each arrival (a timer due at an arrival's instant runs after it:
/// the ring takes the segment first), then every timer left.
fn run(r: &mut TcpReceiver, order: &[u64], times: &[u64]) -> W {
    let mut w = W::default();
    let fire_until = |r: &mut TcpReceiver, w: &mut W, until: Option<SimTime>| loop {
        let due = w.timers.iter().enumerate().filter(|(_, (t, _))| until.is_none_or(|u| *t < u)).min_by_key(|(_, (t, _))| *t);
        let Some((i, _)) = due else { break };
        let (t, kind) = w.timers.remove(i);
        w.now = t;
        r.on_timer(kind, w);
    };
    for (&k, &t) in order.iter().zip(times) {
        fire_until(r, &mut w, Some(SimTime(t)));
        w.now = SimTime(t);
        r.on_segment(k * MSS, MSS as u32, SimTime(t), false, false, &mut w);
    }
    fire_until(r, &mut w, None);
    w
}

fn back_to_back(n: u64) -> Vec<u64> {
    (0..n).map(|k| k * FRAME_NS).collect()
}

#[test]
fn coalescing_cuts_the_acks_of_a_line_rate_stream_to_one_per_64_kb() {
    let n = 4500;
    let order: Vec<u64> = (0..n).collect();
    let mut plain = receiver(false);
    let w0 = run(&mut plain, &order, &back_to_back(n));
    // Delayed ACKs: one ACK every second segment.
    assert_eq!(w0.acks.len() as u64, n / 2);

    let mut r = receiver(true);
    let w = run(&mut r, &order, &back_to_back(n));
    let gro = r.gro.as_ref().unwrap().stats.clone();
    // 45 segments of 1448 bytes + 52 bytes of headers stay below 64 KB; 46
    // would not (skb_gro_receive). A poll that empties the ring also
    // flushes a shorter run: at most one per interrupt (every 125 µs).
    let interrupts = n * FRAME_NS / 125_000 + 2;
    assert!(gro.packets >= n / 45 && gro.packets <= n / 45 + interrupts, "{gro:?}");
    assert_eq!(gro.segments, n);
    assert_eq!(gro.flushed_out_of_order, 0);
    // One ACK per coalesced packet of two or more segments: about 22 times
    // fewer than with delayed ACKs, and none lost to the delayed-ACK timer.
    let acks = w.acks.len() as u64;
    assert!(acks <= gro.packets && acks + 2 >= gro.packets, "{acks} ACKs for {} packets", gro.packets);
    assert!(w0.acks.len() as u64 >= 15 * acks, "{} vs {acks}", w0.acks.len());
    // Every byte reaches TCP once, in order.
    assert_eq!(r.delivered(), n * MSS);
    assert_eq!(r.stats.segments, gro.packets);
    assert_eq!(r.stats.ooo_arrivals, 0);
    assert_eq!(w.acks.last().unwrap().1, n * MSS);
}

#[test]
fn interrupts_are_moderated_and_a_poll_takes_at_most_64_segments() {
    let n = 300;
    let order: Vec<u64> = (0..n).collect();
    let mut r = receiver(true);
    let w = run(&mut r, &order, &back_to_back(n));
    // The first segment finds the interrupt on: a poll at once, one
    // segment, flushed alone. The rest wait for the next interrupt 125 µs
    // later: ACKs come no sooner.
    let after_first: Vec<_> = w.acks.iter().filter(|a| a.1 > MSS).collect();
    assert!(after_first[0].0 >= SimTime(125_000), "{:?}", after_first[0]);
    let gro = r.gro.as_ref().unwrap().stats.clone();
    // 300 segments over 369 µs: interrupts at 0 (one segment, one poll),
    // then at 125, 250 and 375 µs, each finding ~100 segments: two polls of
    // at most 64 each (a budget of 32 would take four).
    assert_eq!(gro.polls, 1 + 3 * 2, "{gro:?}");
    assert_eq!(r.delivered(), n * MSS);
}

#[test]
fn an_out_of_order_segment_ends_the_run_and_tcp_counts_packets() {
    // Segments 0 1 | 5 6 7 | 2 3 4 | 8, all in one poll (back to back,
    // after the first interrupt's single segment).
    let order = [0, 1, 5, 6, 7, 2, 3, 4, 8];
    let times: Vec<u64> = (0..order.len() as u64).map(|k| 10_000 + k * FRAME_NS).collect();
    let mut r = receiver(true);
    let w = run(&mut r, &order, &times);
    let gro = r.gro.as_ref().unwrap().stats.clone();
    // The interrupt was on: segment 0 alone in the first poll. Then runs
    // [1, 2) [5, 8) [2, 5) [8, 9) in the next: 5 does not follow 1, 2 does
    // not follow 7, 8 does not follow 4.
    assert_eq!(gro.packets, 5, "{gro:?}");
    assert_eq!(gro.polls, 2);
    assert_eq!(gro.flushed_out_of_order, 3);
    // On the wire 3 segments arrived below the highest seen; TCP (and a
    // tcpdump on the host) sees one late packet, overtaken by 3 segments.
    assert_eq!(gro.ooo_segments, 3);
    assert_eq!(r.stats.ooo_arrivals, 1);
    assert_eq!(r.stats.ooo_extent_max, 3);
    assert_eq!(r.delivered(), 9 * MSS);
    // ACKs: after [1, 2) (two segments unacknowledged), [5,8) out of order: a dup ACK for
    // 2; [2,5) fills the hole: ACK 8; [8,9) alone waits for the timer.
    let acked: Vec<u64> = w.acks.iter().map(|a| a.1 / MSS).collect();
    assert_eq!(acked, vec![2, 2, 8, 9]);
}

#[test]
fn a_new_timestamp_tick_or_a_short_segment_ends_the_run() {
    let mut r = receiver(true);
    let mut w = W::default();
    // Segments 0 and 1 stamped in one tick, 2 in the next, then a short
    // one (100 bytes) and a full one: all in the ring when the poll runs.
    let stamps = [TICK_NS - 2 * FRAME_NS, TICK_NS - FRAME_NS, TICK_NS, TICK_NS + FRAME_NS, TICK_NS + 2 * FRAME_NS];
    let lens = [MSS, MSS, MSS, 100, MSS];
    let mut seq = 0;
    for (t, len) in stamps.into_iter().zip(lens) {
        r.on_segment(seq, len as u32, SimTime(t), false, false, &mut w);
        seq += len;
    }
    assert_eq!(w.timers.len(), 1, "one interrupt");
    let (t, kind) = w.timers.remove(0);
    w.now = t;
    r.on_timer(kind, &mut w);
    let gro = r.gro.as_ref().unwrap().stats.clone();
    // [0, 2): the timestamp option of 2 differs; [2, 3 + 100 B): the short
    // segment merges and flushes; [the last one].
    assert_eq!(gro.packets, 3, "{gro:?}");
    assert_eq!(gro.flushed_out_of_order, 0);
    assert_eq!(r.delivered(), 4 * MSS + 100);
}

mod common;

/// One NewReno flow through a `rate_gbps` bottleneck, 20 ms round trip,
/// buffer and receive window far above the window reached in `secs`: the
/// bytes delivered with the receiver's GRO on and off, and the cwnd at the end.
fn ramp(profile: &str, rate_gbps: u64, secs_ms: u64) -> [(u64, u64); 2] {
    use common::*;
    use serde_json::json;
    [false, true].map(|gro| {
        let opts = json!({"cc": "newreno", "host_profile": profile, "gro": gro, "rwnd_bytes": 200_000_000u64});
        let r = Cfg::new(secs_ms * MS, 10 * MS)
            .host("s")
            .host("d")
            .router("r1")
            .router("r2")
            .link("s", "r1", 4 * rate_gbps * GBPS, US, ETH)
            .link_q("r1", "r2", rate_gbps * GBPS, 10 * MS - 2 * US, ETH, fifo(None, Some(100_000_000)), unlimited())
            .link("r2", "d", 4 * rate_gbps * GBPS, US, ETH)
            .flow(tcp("f", "s", "d", 0, None, opts))
            .run();
        let cwnd = *r.series("tcp", "f", "cwnd_bytes").last().expect("samples");
        (r.flow("f", "rx_bytes"), cwnd)
    })
}

/// Linux 6 grows cwnd in slow start by every segment a GRO stretch ACK
/// covers (`tcp_slow_start(tp, acked)`, net/ipv4/tcp_cong.c): one ACK per
/// NAPI poll (up to 64 KB) must not slow the start. Before the fix (RFC
/// 3465's L = 2 SMSS per ACK) the flow with GRO delivered 2.96 MB here
/// against 31.5 MB without (about 1 % at 10 Gbit/s in the first second).
#[test]
fn linux6_slow_start_with_gro_keeps_pace_with_gro_off() {
    let [(off, coff), (on, con)] = ramp("linux-6", 1, 400);
    assert!(on as f64 >= 0.9 * off as f64, "delivered with GRO {on} B, without {off} B (cwnd {con} against {coff})");
}

