//! TCP as hosts run it: loss recovery against theory (Mathis et al.),
//! reordering against the duplicate-ACK threshold, SACK against NewReno,
//! and the window limits (window scaling, send buffer, pacing).

mod common;
use common::*;
use serde_json::{json, Value};

/// S -- R -- D: a fast access link, then `rate` with one-way delay `one_way`
/// on R -> D (impaired as given), FIFO of `buffer` packets there.
fn path(duration: u64, rate: u64, one_way: u64, buffer: u64, loss: f64, reorder: (f64, u32), tcp_opts: Value) -> Res {
    Cfg::new(duration, 100 * MS)
        .host("S")
        .router("R")
        .host("D")
        .link("S", "R", 10 * GBPS, 10 * US, ETH)
        .link_q("R", "D", rate, one_way, ETH, fifo(Some(buffer), None), fifo(Some(buffer), None))
        .impair_last(loss, reorder.0, reorder.1)
        .flow(tcp("tcp", "S", "D", 0, None, tcp_opts))
        .run()
}

/// Mean goodput of flow "tcp" over samples after `from` ns.
fn goodput_after(res: &Res, from: u64) -> f64 {
    let t = res.series("tcp", "tcp", "time_ns");
    let g = res.series("tcp", "tcp", "goodput_bps");
    let v: Vec<f64> = t.iter().zip(&g).filter(|(&t, _)| t > from).map(|(_, &g)| g as f64).collect();
    v.iter().sum::<f64>() / v.len() as f64
}

fn last(res: &Res, col: &str) -> u64 {
    *res.series("tcp", "tcp", col).last().unwrap()
}

#[test]
fn newreno_sack_follows_mathis_under_random_loss() {
    // Mathis, Semke, Mahdavi & Ott, "The Macroscopic Behavior of the TCP
    // Congestion Avoidance Algorithm", CCR 1997: BW = (MSS / RTT) sqrt(3 / (2p)).
    // A 1 Gbps path is ample for every p here, so loss alone sets the rate.
    let rtt = 20 * MS;
    for p in [1e-4f64, 1e-3, 1e-2] {
        let expected = 1448.0 * 8.0 / (rtt as f64 * 1e-9) * (3.0 / (2.0 * p)).sqrt();
        // Enough simulated time for ~400 loss events after the start.
        let pkts_per_s = expected / (1448.0 * 8.0);
        let duration = ((400.0 / p / pkts_per_s) as u64 * S).max(60 * S);
        let res = path(duration, GBPS, rtt / 2 - 10 * US, 10_000, p, (0.0, 0), json!({"cc": "newreno", "sack": true}));
        let measured = goodput_after(&res, 10 * S);
        println!("mathis p={p}: measured {:.2} Mbps, formula {:.2} Mbps, timeouts {}", measured / 1e6, expected / 1e6, last(&res, "timeouts"));
        assert!(rel(measured, expected) < 0.20, "p={p}: measured {measured}, Mathis {expected}");
    }
}

/// The R -> D link delays 1% of packets by `k` positions; the window stays
/// below the path's capacity, so reordering is the only disturbance.
fn reordered(k: u32, sack: bool) -> Res {
    let rtt_ms = 10;
    let bdp = GBPS / 8 * rtt_ms / 1000;
    path(5 * S, GBPS, (rtt_ms / 2) * MS, 10_000, 0.0, (0.01, k), json!({"sack": sack, "rwnd_bytes": bdp * 3 / 2}))
}

#[test]
fn the_receiver_measures_the_reordering_extent() {
    // A packet held back k positions is overtaken by k segments (RFC 4737
    // extent); sequences that collide can add up, but rarely at 1%.
    let calm = reordered(2, true);
    assert_eq!(last(&calm, "ooo_extent_max"), 2);
    assert_eq!(last(&calm, "ooo_extent_3plus"), 0, "no late arrival was overtaken by 3");
    let res = reordered(5, true);
    assert!((5..=7).contains(&last(&res, "ooo_extent_max")), "max extent {}", last(&res, "ooo_extent_max"));
    let (ooo, far) = (last(&res, "ooo_arrivals"), last(&res, "ooo_extent_3plus"));
    assert!(far > 0 && far <= ooo, "{far} of {ooo} arrivals overtaken by 3 or more");
}

#[test]
fn reordering_by_three_or_more_triggers_fast_retransmit() {
    for sack in [true, false] {
        let calm = reordered(2, sack);
        assert_eq!(last(&calm, "fast_retransmits"), 0, "sack={sack}: k=2 stays below dupthresh 3");
        assert_eq!(last(&calm, "retransmits"), 0, "sack={sack}");
        assert!(last(&calm, "ooo_arrivals") > 0, "the reordering happened");
        for k in [3, 5] {
            let res = reordered(k, sack);
            assert!(last(&res, "fast_retransmits") > 0, "sack={sack} k={k}: reordering looks like loss");
            assert!(last(&res, "spurious_retransmits") > 0, "sack={sack} k={k}: the 'lost' segments had arrived");
            let (g, g_calm) = (goodput_after(&res, S), goodput_after(&calm, S));
            assert!(g < 0.95 * g_calm, "sack={sack} k={k}: goodput {g} not below {g_calm}");
        }
    }
}

#[test]
fn rack_tolerates_reordering_and_still_repairs_losses() {
    // Reordering by 5 positions at 1 Gbps delays a segment by ~60 us, far
    // inside RACK's window (min RTT / 4 = 2.5 ms): no retransmission.
    let rtt_ms = 10;
    let bdp = GBPS / 8 * rtt_ms / 1000;
    let opts = json!({"sack": true, "rack": true, "rwnd_bytes": bdp * 3 / 2});
    let res = path(5 * S, GBPS, (rtt_ms / 2) * MS, 10_000, 0.0, (0.01, 5), opts.clone());
    assert!(last(&res, "ooo_arrivals") > 0);
    assert_eq!(last(&res, "fast_retransmits"), 0);
    assert_eq!(last(&res, "retransmits"), 0);
    let g_plain = goodput_after(&reordered(5, true), S);
    assert!(goodput_after(&res, S) > g_plain, "RACK keeps the goodput reordering costs dupthresh");
    // Real losses are still repaired by fast recovery, after the window.
    let lossy = path(5 * S, GBPS, (rtt_ms / 2) * MS, 10_000, 0.001, (0.0, 0), opts);
    assert!(last(&lossy, "fast_retransmits") > 0);
    assert!(last(&lossy, "timeouts") <= 1, "timeouts {}", last(&lossy, "timeouts"));
}

#[test]
fn rack_widens_its_reordering_window_on_dsack() {
    // RFC 8985 Section 6.2, step 4: a D-SACK (the receiver got a segment
    // twice) raises the reordering window's multiplier. At 10 Mbps a 1538 B
    // frame takes 1.23 ms; 1 % of them arrive 7 frames late (8.6 ms), so
    // a hole stays open about 7.4 ms after the data above it is SACKed:
    // longer than min RTT / 4 (RTT 21.3 ms: 5.3 ms), shorter than twice it.
    // The window holds 1.5 BDP with a deep buffer: nothing is dropped, and
    // every retransmission is spurious.
    let bdp = 10 * MBPS / 8 * 21 / 1000;
    let run = |dsack: bool| {
        let opts = json!({"sack": true, "rack": true, "dsack": dsack, "rwnd_bytes": bdp * 3 / 2});
        path(10 * S, 10 * MBPS, 10 * MS, 10_000, 0.0, (0.01, 7), opts)
    };
    // Without D-SACKs the window stays at min RTT / 4: about every late
    // segment (1 % of some 8,000) is sent again.
    let fixed = run(false);
    let late = last(&fixed, "ooo_arrivals");
    assert!(late > 40, "{late} late arrivals");
    assert!(last(&fixed, "retransmits") * 2 > late, "{} retransmissions for {late} late arrivals", last(&fixed, "retransmits"));
    // With them, the first spurious retransmission's D-SACK doubles the
    // window past the 7.4 ms, and the rest of the late segments are waited for.
    let adaptive = run(true);
    let (retx, spurious) = (last(&adaptive, "retransmits"), last(&adaptive, "spurious_retransmits"));
    assert!(spurious >= 1 && retx == spurious, "{retx} retransmissions, {spurious} spurious");
    assert!(retx <= 3, "{retx} retransmissions for {} late arrivals", last(&adaptive, "ooo_arrivals"));
    assert!(last(&adaptive, "ooo_arrivals") > 40);
}

#[test]
fn sack_repairs_a_window_of_losses_without_a_timeout() {
    // Slow start overshoots a 1 Gbps bottleneck with a quarter-BDP buffer:
    // hundreds of segments of one window are dropped. SACK repairs them in
    // about a round trip; NewReno repairs one per round trip until its
    // (impatient) timer expires.
    let size = 60_000_000u64;
    let run = |sack| path(10 * S, GBPS, 10 * MS, 420, 0.0, (0.0, 0), json!({"sack": sack, "size_bytes": size}));
    let done = |r: &Res| {
        let t = r.series("tcp", "tcp", "time_ns");
        let acked = r.series("tcp", "tcp", "bytes_acked");
        t.iter().zip(&acked).find(|(_, &a)| a == size).map(|(&t, _)| t).expect("transfer completes")
    };
    let (with, without) = (run(true), run(false));
    println!(
        "overshoot: SACK done at {} ms ({} timeouts, {} drops), NewReno at {} ms ({} timeouts)",
        done(&with) / MS, last(&with, "timeouts"), with.queue("R->D", "drop_pkts"), done(&without) / MS, last(&without, "timeouts")
    );
    assert!(with.queue("R->D", "drop_pkts") > 50, "the overshoot drops many segments of one window");
    assert_eq!(last(&with, "timeouts"), 0);
    assert!(last(&without, "timeouts") >= 1);
    assert!(done(&with) < done(&without));
}

#[test]
fn link_losses_are_counted_on_the_link_and_charged_to_the_flow() {
    let res = path(5 * S, GBPS, 10 * MS, 10_000, 0.01, (0.0, 0), json!({}));
    let lost = res.queue("R->D", "link_loss_pkts");
    assert!(lost > 0);
    assert_eq!(res.queue("R->D", "drop_pkts"), 0);
    assert_eq!(res.flow("tcp", "drop_pkts"), lost);
    let sent = res.queue("R->D", "deq_pkts");
    assert!(rel(lost as f64 / sent as f64, 0.01) < 0.25, "loss fraction {} of {sent}", lost as f64 / sent as f64);
}

#[test]
fn window_limits_set_the_rate() {
    let rtt = 20 * MS;
    let one_way = rtt / 2 - 10 * US;
    // No window scaling: at most 65535 bytes per round trip.
    let res = path(5 * S, GBPS, one_way, 10_000, 0.0, (0.0, 0), json!({"window_scaling": false}));
    let expected = 65535.0 / 1448.0 * 1448.0 * 8.0 / 0.02;
    let g = goodput_after(&res, S);
    assert!(g <= expected * 1.02 && g > expected * 0.85, "no window scaling: {g} vs {expected}");
    // A 1 MB send buffer: at most 1 MB in flight.
    let res = path(5 * S, GBPS, one_way, 10_000, 0.0, (0.0, 0), json!({"sndbuf_bytes": 1_000_000}));
    let expected = 1_000_000.0 / 1448.0 * 1448.0 * 8.0 / 0.02;
    let g = goodput_after(&res, S);
    assert!(g <= expected * 1.02 && g > expected * 0.9, "1 MB send buffer: {g} vs {expected}");
}

#[test]
fn pacing_caps_the_rate_and_smooths_the_start() {
    let one_way = 10 * MS;
    let res = path(5 * S, GBPS, one_way, 10_000, 0.0, (0.0, 0), json!({"max_pacing_rate_bps": 300 * MBPS}));
    let g = goodput_after(&res, S);
    // Paced at 300 Mbps of IP packets: goodput is the payload share of it.
    let expected = 300e6 * 1448.0 / 1500.0;
    assert!(rel(g, expected) < 0.02, "paced goodput {g} vs {expected}");
    // Internal pacing spreads slow start's bursts: the bottleneck queue peaks lower.
    let peak = |pacing: bool| {
        let r = path(2 * S, 100 * MBPS, one_way, 10_000, 0.0, (0.0, 0), json!({"pacing": pacing, "rwnd_bytes": 400_000}));
        let t = r.table("queue");
        let names = t.strs("queue");
        let lens = t.u64s("len_pkts");
        names.iter().zip(lens).filter(|(n, _)| *n == "R->D").map(|(_, &l)| l).max().unwrap_or(0)
    };
    let (paced, bursty) = (peak(true), peak(false));
    assert!(paced < bursty, "bottleneck queue peak paced {paced} vs unpaced {bursty}");
}
