//! Per-flow disciplines in whole simulations: FQ-CoDel and hashed DRR
//! (SFQ) at a bottleneck, and disciplines nested in classes.
//!
//! FQ-CoDel (RFC 8290, `qos/fq/fq_codel.rs`): two long-lived CUBIC flows
//! of 20 and 80 ms RTT share a 100 Mbps bottleneck with Jain's index at
//! least 0.99 (53/47, as ns-3 gives them; within 5 % without CUBIC's fast
//! convergence), where a FIFO gives the short-RTT flow more than twice the
//! other's; a sparse ping beside them sees under 1 ms of queueing; CoDel
//! holds the standing queue near its 5 ms target. Hashed DRR (SFQ) gives
//! UDP flows of unequal rates and packet sizes their max-min fair shares
//! in bytes. RED inside a Junos class makes exactly the drop decisions of
//! RED as the link's queue.

mod common;
use common::*;
use serde_json::{json, Value};

/// A 100 Mbps bottleneck R1 -> R2 with `queue`; TCP flows from A (20 ms
/// RTT) and B (80 ms RTT) to D, a ping from P to D every 50 ms (base RTT
/// 20 ms), all through it; `tcp` holds both TCP flows' settings.
fn dumbbell(seed: u64, duration: u64, queue: Value, tcp_cfg: Value) -> Res {
    Cfg::new(duration, 100 * MS)
        .seed(seed)
        .host("A")
        .host("B")
        .host("P")
        .host("D")
        .router("R1")
        .router("R2")
        .link("A", "R1", GBPS, 4 * MS, ETH)
        .link("B", "R1", GBPS, 34 * MS, ETH)
        .link("P", "R1", GBPS, 4 * MS, ETH)
        .link_q("R1", "R2", 100 * MBPS, 5 * MS, ETH, queue, fifo(Some(1000), None))
        .link("R2", "D", GBPS, MS, ETH)
        .flow(tcp("short", "A", "D", 0, None, tcp_cfg.clone()))
        .flow(tcp("long", "B", "D", 0, None, tcp_cfg))
        .flow(ping("ping", "P", "D", 0, None, 50 * MS, 84))
        .run()
}

/// Goodput (bit/s) of `flow` between `from` and `to`.
fn goodput(res: &Res, flow: &str, from: u64, to: u64) -> f64 {
    let t = res.series("tcp", flow, "time_ns");
    let b = res.series("tcp", flow, "bytes_acked");
    let at = |x: u64| t.iter().position(|&s| s >= x).map(|i| b[i]).expect("sample");
    (at(to) - at(from)) as f64 * 8.0 / ((to - from) as f64 / 1e9)
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    s * s / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

/// Linux's defaults on a 1500 B Ethernet link (the test links have a
/// 9000 B MTU, from which the engine would derive a 9014 B quantum).
fn fq_codel() -> Value {
    json!({"fq_codel": {"quantum_bytes": 1514, "mtu_bytes": 1514}})
}

fn sojourn(res: &Res, queue: &str) -> (u64, u64) {
    let t = res.table("queue_summary");
    let r = t.strs("queue").iter().position(|x| x == queue).expect("queue");
    (opt_u64s(t, "sojourn_mean_ns")[r].expect("packets left"), opt_u64s(t, "sojourn_p99_ns")[r].expect("packets left"))
}

/// One 60 s run answers three questions (measured: 49.5 / 43.2 Mbps,
/// ping queueing 0.33 ms, sojourn mean 3.0 ms and p99 13.8 ms).
///
/// - Sharing: Jain >= 0.99, but not the 5 % split issue 9 asks for: the
///   long flow gets 0.873 of the short one's goodput (each 6.8 % off the
///   even half), the same whatever the long flow's start (0.873 to 0.877
///   for ten starts 0 to 873 ms apart; the seed only moves the hash
///   buckets) and over 300 s (0.868). It is not the model: ns-3 3.44's
///   `FqCoDelQueueDisc` with `TcpCubic` on the same dumbbell
///   (`benches/ns3_crosscheck.py fqcodel-2rtt-cubic --sack --duration 60`,
///   PPP framing, no ping) gives 50.85 / 44.39 Mbps (0.873), alphaqos 50.48
///   / 44.56 (0.883), and with NewReno 54.68 / 37.83 against 54.42 / 38.71.
///   The cause is the long flow's window after a CoDel drop: CUBIC cuts it
///   to 0.7 W (348 -> 244 segments) while its share needs about 313 (48
///   Mbps x 80 ms, plus 5 ms of queue), so for 2 to 3 s it sends below its
///   share and FQ-CoDel, being work-conserving, gives the rest to the
///   short flow, whose window (about 100 segments) is back within a second.
///   Fast convergence (on in Linux and ns-3) makes it worse: a drop below
///   the last maximum sets W_max to 0.85 W (296 segments, under the share),
///   where the cubic curve flattens for seconds. Without it the split is
///   0.929 (each flow within 3.8 % of the half), which the third run
///   checks; with it the bound below (0.85) sits under the measured 0.873.
/// - The ping is a sparse flow: it goes to the new list and is sent ahead
///   of the bulk flows, so it waits for at most the frame on the wire
///   (0.12 ms at 100 Mbps) and a packet or two: under 1 ms, where the FIFO
///   makes it wait up to the whole buffer (120 ms).
/// - Standing queue: CoDel drops once the sojourn has stayed above 5 ms
///   for 100 ms, so the queue the bulk flows keep sits at or below about
///   5 ms; the band [1 ms, 8 ms] for the mean over the whole run (slow start
///   included) allows for the flows' back-off below target after each drop
///   and for the overshoot of slow start; its 99th percentile stays below
///   30 ms, where the FIFO's is above 100 ms.
#[test]
fn fq_codel_shares_between_rtts_isolates_a_ping_and_holds_the_queue_near_target() {
    let d = 60 * S;
    let res = dumbbell(1, d, fq_codel(), json!({"cc": "cubic"}));
    let (short, long) = (goodput(&res, "short", 20 * S, d), goodput(&res, "long", 20 * S, d));
    assert!(jain(&[short, long]) >= 0.99, "{short:.3e} / {long:.3e}: Jain {}", jain(&[short, long]));
    assert!(long >= 0.85 * short && short + long > 85e6, "{short:.3e} / {long:.3e}");
    let rtts: Vec<u64> = res.series_opt("ping", "ping", "rtt_ns").into_iter().map(|r| r.expect("no ping lost")).collect();
    let base = *rtts.iter().min().unwrap();
    let worst = rtts.iter().max().unwrap() - base;
    assert!(worst < MS, "the ping queued up to {worst} ns");
    let (mean, p99) = sojourn(&res, "R1->R2");
    assert!((MS..=8 * MS).contains(&mean) && p99 < 30 * MS, "sojourn mean {mean} ns, p99 {p99} ns");
    assert!(res.queue("R1->R2", "drop_queued_pkts") > 0, "CoDel dropped at dequeue");

    // Without fast convergence the long flow's window comes back to its
    // share sooner: each flow within 5 % of the even half.
    let nofc = dumbbell(1, d, fq_codel(), json!({"cc": "cubic", "cc_params": {"fast_convergence": false}}));
    let (s2, l2) = (goodput(&nofc, "short", 20 * S, d), goodput(&nofc, "long", 20 * S, d));
    let half = (s2 + l2) / 2.0;
    assert!(rel(s2, half) < 0.05 && rel(l2, half) < 0.05, "no fast convergence: {s2:.3e} / {l2:.3e}");

    let fifo = dumbbell(1, d, fifo(Some(1000), None), json!({"cc": "cubic"}));
    let (fs, fl) = (goodput(&fifo, "short", 20 * S, d), goodput(&fifo, "long", 20 * S, d));
    assert!(jain(&[fs, fl]) < 0.9 && fs > 2.0 * fl, "FIFO: {fs:.3e} / {fl:.3e}");
    let rtts: Vec<u64> = fifo.series_opt("ping", "ping", "rtt_ns").into_iter().flatten().collect();
    assert!(rtts.iter().max().unwrap() - base > 50 * MS);
    assert!(sojourn(&fifo, "R1->R2").1 > 100 * MS);
}

/// Hashed DRR: three UDP sources at 80, 50 and 20 Mbps (1500, 500 and
/// 1000 B packets) into 100 Mbps. Max-min fairness in bytes gives 40, 40
/// and 20 Mbps (a FIFO would give shares in proportion to the offered
/// rates: 53, 33, 13).
#[test]
fn sfq_gives_max_min_fair_shares_in_bytes() {
    for buckets in [1024u64, 64] {
        let q = json!({"sfq": {"quantum_bytes": 1514, "buckets": buckets}});
        let d = 2 * S;
        let mut cfg = Cfg::new(d, 100 * MS).host("U0").host("U1").host("U2").router("R").host("D");
        for u in ["U0", "U1", "U2"] {
            cfg = cfg.link(u, "R", GBPS, 10 * US, ETH);
        }
        let res = cfg
            .link_q("R", "D", 100 * MBPS, 10 * US, 0, q, fifo(Some(1000), None))
            .flow(udp("a", "U0", "D", 0, None, 1500, 80 * MBPS))
            .flow(udp("b", "U1", "D", 0, None, 500, 50 * MBPS))
            .flow(udp("c", "U2", "D", 0, None, 1000, 20 * MBPS))
            .run();
        let rate = |f: &str| {
            let t = res.series("udp", f, "time_ns");
            let b = res.series("udp", f, "rx_bytes");
            let at = |x: u64| b[t.iter().position(|&s| s >= x).unwrap()];
            (at(d) - at(S / 2)) as f64 * 8.0 / 1.5
        };
        for (f, want) in [("a", 40e6), ("b", 40e6), ("c", 20e6)] {
            assert!(rel(rate(f), want) < 0.02, "{buckets} buckets, {f}: {:.4e} bit/s, want {want:.1e}", rate(f));
        }
    }
}

/// RED as a Junos class's child makes the decisions RED makes as the
/// link's queue: the same arrivals, the same random stream, the same drops.
#[test]
fn red_inside_a_junos_class_reproduces_red() {
    let red = json!({"min_th": 20.0, "max_th": 60.0, "max_p": 0.1, "w_q": 0.002, "gentle": true});
    let mut plain = red.clone();
    plain["limit_pkts"] = json!(200);
    let junos = json!({"junos": {"buffer_pkts": 200, "classes": [
        {"name": "be", "transmit_rate_remainder": true, "priority": "low", "buffer_percent": 100.0, "child": {"red": red}}]}});
    let a = dumbbell(3, 10 * S, json!({ "red": plain }), json!({"cc": "newreno"}));
    let b = dumbbell(3, 10 * S, junos, json!({"cc": "newreno"}));
    assert!(a.queue("R1->R2", "drop_aqm_pkts") > 50, "RED dropped early");
    for col in ["enq_pkts", "deq_pkts", "drop_aqm_pkts", "drop_tail_pkts"] {
        assert_eq!(a.queue("R1->R2", col), b.queue("R1->R2/be", col), "{col}");
    }
    for f in ["short", "long"] {
        assert_eq!(a.flow(f, "rx_bytes"), b.flow(f, "rx_bytes"), "{f}");
    }
}
