//! The router QoS pipeline end to end: a firewall filter classifies at the
//! router, a Junos-style egress schedules per class. The first source
//! document's findings in miniature: a queue of its own for the α flow
//! keeps ping delay flat; policing the α flow into a scavenger queue
//! reorders its packets.

mod common;
use common::*;
use serde_json::{json, Value};

/// S (TCP) and P (ping), U (UDP) -> R -> D, 1 Gbps bottleneck R -> D with
/// a 12.5 MB buffer, 2 ms base RTT. `egress` is R -> D's queue, `filter`
/// R's firewall filter.
fn run(egress: Value, filter: Value) -> Res {
    let mut cfg = Cfg::new(6 * S, 100 * MS)
        .host("S")
        .host("P")
        .host("U")
        .router("R")
        .host("D")
        .link("S", "R", 10 * GBPS, 500 * US, ETH)
        .link("P", "R", 10 * GBPS, 500 * US, ETH)
        .link("U", "R", 10 * GBPS, 500 * US, ETH)
        .link_q("R", "D", GBPS, 500 * US, ETH, egress, fifo(Some(10_000), None))
        .flow(udp("bg", "U", "D", 0, None, 1500, 300 * MBPS))
        .flow(tcp("alpha", "S", "D", S, None, json!({"cc": "htcp", "rwnd_bytes": 8u64 << 20})))
        .flow(ping("probe", "P", "D", 0, None, 100 * MS, 84));
    set_filter(&mut cfg, "R", filter);
    cfg.run()
}

fn set_filter(cfg: &mut Cfg, router: &str, filter: Value) {
    let nodes = cfg.v["nodes"].as_array_mut().unwrap();
    nodes.iter_mut().find(|n| n["name"] == router).unwrap()["filter"] = filter;
}

fn junos(classes: Value) -> Value {
    json!({"junos": {"buffer_bytes": 12_500_000, "classes": classes}})
}

fn class(name: &str, rate_pct: f64, buffer_pct: f64, priority: &str) -> Value {
    json!({"name": name, "transmit_rate_percent": rate_pct, "buffer_percent": buffer_pct, "priority": priority})
}

/// Mean ping RTT (ms) of probes sent after 2 s (the TCP flow runs from 1 s).
fn ping_ms(res: &Res) -> f64 {
    let t = res.table("ping");
    let times = t.u64s("time_ns");
    let rtts = opt_u64s(t, "rtt_ns");
    let v: Vec<f64> = times.iter().zip(rtts).filter(|(&t, _)| t > 2 * S).filter_map(|(_, r)| r.map(|r| r as f64 / 1e6)).collect();
    v.iter().sum::<f64>() / v.len() as f64
}

fn alpha_term(then: Value) -> Value {
    // S is the first host: 10.0.0.2 in the test topology builder.
    let mut t = json!({"name": "alpha", "src": "10.0.0.2/32", "proto": 6});
    t.as_object_mut().unwrap().extend(then.as_object().unwrap().clone());
    json!([t])
}

#[test]
fn a_queue_of_its_own_keeps_ping_delay_flat() {
    let one_queue = run(fifo(None, Some(12_500_000)), json!([]));
    let two_queues = run(
        junos(json!([class("beta", 40.0, 40.0, "medium-low"), class("alpha", 60.0, 60.0, "medium-high")])),
        alpha_term(json!({"fclass": 1})),
    );
    let (one, two) = (ping_ms(&one_queue), ping_ms(&two_queues));
    println!("ping RTT with the TCP flow active: 1 queue {one:.2} ms, 2 queues {two:.2} ms");
    assert!(one > 20.0, "one FIFO: the α flow's window waits in front of the ping");
    assert!(two < 2.5, "two queues: the ping is served at once ({two} ms)");
    // The α flow still takes what the background leaves.
    let g = two_queues.flow_opt("alpha", "goodput_bps").unwrap() as f64;
    assert!(g > 0.55e9, "alpha goodput {g}");
    let counters = two_queues.table("filter");
    assert_eq!(counters.strs("term"), ["alpha"]);
    // Every α segment crossed R's filter; those still queued at the end did not arrive.
    let matched = counters.u64s("matched_pkts")[0];
    assert!(matched >= two_queues.flow("alpha", "rx_pkts") && matched <= two_queues.flow("alpha", "tx_pkts"));
}

#[test]
fn policing_into_a_scavenger_queue_reorders_the_alpha_flow() {
    let classes = json!([class("beta", 50.0, 50.0, "medium-low"), class("alpha", 30.0, 30.0, "medium-high"), class("ss", 20.0, 20.0, "low")]);
    let policer = |oop: Value| json!({"fclass": 1, "policer": {"rate_bps": 100_000_000u64, "burst_bytes": 31_000, "out_of_profile": oop}});
    let scavenger = run(junos(classes.clone()), alpha_term(policer(json!({"fclass": 2}))));
    let unpoliced = run(junos(classes), alpha_term(json!({"fclass": 1})));
    let ooo = |r: &Res| *r.series("tcp", "alpha", "ooo_arrivals").last().unwrap();
    let g = |r: &Res| r.flow_opt("alpha", "goodput_bps").unwrap() as f64;
    println!("scavenger: ooo {} goodput {:.0} Mbps; unpoliced: ooo {} goodput {:.0} Mbps", ooo(&scavenger), g(&scavenger) / 1e6, ooo(&unpoliced), g(&unpoliced) / 1e6);
    assert!(ooo(&scavenger) > 100, "in- and out-of-profile packets take different queues");
    assert!(g(&scavenger) < g(&unpoliced));
    let t = scavenger.table("filter");
    assert!(t.u64s("out_of_profile_pkts")[0] > 0);
    // Discarding out-of-profile packets instead: the policer drops, no queue does.
    let discard = run(junos(json!([class("beta", 50.0, 50.0, "medium-low"), class("alpha", 50.0, 50.0, "medium-high")])), alpha_term(policer(json!("discard"))));
    let d = discard.table("filter").u64s("discarded_pkts")[0];
    assert!(d > 0 && d <= discard.flow("alpha", "drop_pkts"));
}

// --- the other schedulers, three-colour policers, drop profiles -------------

/// A (class 0) and B (class 1), UDP at `rate` each, -> R -> D at 1 Gbps
/// with `egress` on R -> D (MTU `mtu`), `filter` at R. Hosts are 10.0.0.2
/// (A), 10.0.0.3 (B), 10.0.0.4 (D).
fn two_classes(egress: Value, filter: Value, mtu: u64, rate: u64) -> Cfg {
    let mut cfg = Cfg::new(S, 100 * MS)
        .host("A")
        .host("B")
        .host("D")
        .router("R")
        .link("A", "R", 10 * GBPS, 100 * US, ETH)
        .link("B", "R", 10 * GBPS, 100 * US, ETH)
        .link_q("R", "D", GBPS, 100 * US, ETH, egress, fifo(Some(1000), None))
        .flow(udp("a", "A", "D", 0, None, 1500, rate))
        .flow(udp("b", "B", "D", 0, None, 1500, rate));
    cfg.v["links"][2]["mtu_bytes"] = json!(mtu);
    set_filter(&mut cfg, "R", filter);
    cfg
}

fn b_to_class_1(policer: Value) -> Value {
    json!([{"name": "b", "src": "10.0.0.3/32", "fclass": 1, "policer": policer}])
}

fn classful(kind: &str, a: Value, b: Value) -> Value {
    let class = |name: &str, extra: Value| {
        let mut c = json!({"name": name, "buffer_percent": 50.0});
        c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        c
    };
    json!({kind: {"buffer_pkts": 1000, "classes": [class("a", a), class("b", b)]}})
}

#[test]
fn mdrr_quanta_come_from_the_link_mtu() {
    // Weights 1 and 2: quanta MTU and MTU + 512 bytes, so the split depends on the MTU.
    let egress = classful("mdrr", json!({"weight": 1}), json!({"weight": 2}));
    for (mtu, want) in [(1500u64, 2012.0 / 1500.0), (9000, 9512.0 / 9000.0)] {
        let res = two_classes(egress.clone(), b_to_class_1(Value::Null), mtu, GBPS).run();
        let ratio = res.flow("b", "rx_bytes") as f64 / res.flow("a", "rx_bytes") as f64;
        println!("mtu {mtu}: b/a {ratio:.4}, want {want:.4}");
        assert!(rel(ratio, want) < 0.02, "mtu {mtu}: b/a {ratio}, want {want}");
    }
}

#[test]
fn bad_classful_queues_and_policers_are_rejected_with_their_path() {
    let err = |cfg: Cfg| cfg.build().err().expect("rejected");
    let e = err(two_classes(classful("drr", json!({"quantum_bytes": 1500}), json!({"weight": 2})), json!([]), 1500, GBPS));
    assert!(e.starts_with("links[2].queue_ab.drr.classes[1].weight: not used by the drr scheduler"), "{e}");
    let trtcm = json!({"trtcm": {"cir_bps": 2 * MBPS, "cbs_bytes": 3000, "pir_bps": MBPS, "pbs_bytes": 3000}});
    let e = err(two_classes(classful("wrr", json!({"weight": 1}), json!({"weight": 1})), b_to_class_1(trtcm), 1500, GBPS));
    assert!(e.contains("filter[0].policer.trtcm.pir_bps: must be at least cir"), "{e}");
    let gred = classful("wrr", json!({"weight": 1, "drop_profile": {"gred": {"red": {"min_th": 5.0, "max_th": 2.0}}}}), json!({"weight": 1}));
    let e = err(two_classes(gred, json!([]), 1500, GBPS));
    assert!(e.starts_with("links[2].queue_ab.wrr.classes[0].drop_profile.gred.red.max_th: must be greater than min_th (5), got 2"), "{e}");
}

#[test]
fn a_trtcm_colours_a_flow_and_wred_drops_its_red_before_the_green_flow() {
    // Both flows in class 0 (600 Mbps each on 1 Gbps); B is metered by a
    // trTCM of CIR 100, PIR 300 Mbps: a sixth green, a third yellow, half red.
    let trtcm = json!({"trtcm": {"cir_bps": 100 * MBPS, "cbs_bytes": 15_000, "pir_bps": 300 * MBPS, "pbs_bytes": 15_000},
        "yellow": "transmit", "red": "transmit"});
    let wred = json!({"cisco_wred": {"per_color": {"green": {"min_th": 40.0, "max_th": 80.0, "max_p": 0.1},
        "yellow": {"min_th": 30.0, "max_th": 60.0, "max_p": 0.2}, "red": {"min_th": 10.0, "max_th": 30.0, "max_p": 0.5}}}});
    let egress = json!({"wrr": {"buffer_pkts": 1000, "classes": [
        {"name": "c0", "buffer_percent": 100.0, "weight": 1, "drop_profile": wred},
        {"name": "c1", "buffer_percent": 0.0, "weight": 1}]}});
    let filter = json!([{"name": "b", "src": "10.0.0.3/32", "policer": trtcm}]);
    let res = two_classes(egress, filter, 1500, 600 * MBPS).run();
    let t = res.table("filter");
    let (g, y, r) = (t.u64s("green_pkts")[0] as f64, t.u64s("yellow_pkts")[0] as f64, t.u64s("red_pkts")[0] as f64);
    let n = g + y + r;
    println!("trtcm colours: green {:.3} yellow {:.3} red {:.3}", g / n, y / n, r / n);
    assert!((g / n - 1.0 / 6.0).abs() < 0.01 && (y / n - 1.0 / 3.0).abs() < 0.01 && (r / n - 0.5).abs() < 0.01);
    assert_eq!(t.u64s("discarded_pkts")[0], 0);
    // The queue sheds the 200 Mbps excess from B's red packets alone.
    let (drop_a, drop_b) = (res.flow("a", "drop_pkts"), res.flow("b", "drop_pkts"));
    println!("drops: a {drop_a}, b {drop_b}");
    assert_eq!(drop_a, 0);
    assert!(drop_b as f64 > 0.25 * res.flow("b", "tx_pkts") as f64);
}

/// RFC 2697 token arithmetic for a CBR train: `n` packets of `size` bytes,
/// `per_gap` byte tokens earned between two arrivals (exact here: the gap
/// is a whole number of token periods), both buckets full at the first
/// packet (RFC 2697 Section 3.1: Tc(0) = CBS, Te(0) = EBS). The packets
/// a policer that discards red passes: green and yellow. A
/// single-rate two-colour bucket is the EBS = 0 case (Section 2, "the EBS
/// ... set to zero").
fn srtcm_admitted(n: u64, size: u64, per_gap: u64, cbs: u64, ebs: u64) -> u64 {
    let (mut tc, mut te, mut passed) = (cbs, ebs, 0);
    for k in 0..n {
        if k > 0 {
            let into_c = per_gap.min(cbs - tc);
            tc += into_c;
            te = (te + per_gap - into_c).min(ebs);
        }
        if tc >= size {
            tc -= size;
            passed += 1;
        } else if te >= size {
            te -= size;
            passed += 1;
        }
    }
    passed
}

#[test]
fn policer_discards_are_counted_at_the_queue_they_were_bound_for() {
    // B sends 1500 B at 50 Mbit/s (a packet every 240 us) through a 20
    // Mbit/s policer (a byte token every 400 ns: 600 B per gap) and stops
    // at 0.5 s, so that every packet reaches R before the end of the run.
    let (size, per_gap, stop) = (1500u64, 600u64, 500 * MS);
    let single = json!({"rate_bps": 20 * MBPS, "burst_bytes": 30_000, "out_of_profile": "discard"});
    let srtcm = json!({"srtcm": {"cir_bps": 20 * MBPS, "cbs_bytes": 30_000, "ebs_bytes": 45_000}, "yellow": "transmit", "red": "discard"});
    let wrr = classful("wrr", json!({"weight": 1}), json!({"weight": 1}));
    for (policer, cbs, ebs) in [(single, 30_000, 0), (srtcm, 30_000, 45_000)] {
        for (egress, queue) in [(fifo(Some(1000), None), "R->D"), (wrr.clone(), "R->D/b")] {
            let mut cfg = two_classes(egress, b_to_class_1(policer.clone()), 1500, 50 * MBPS);
            for f in cfg.v["flows"].as_array_mut().unwrap() {
                f["stop_ns"] = json!(stop);
            }
            let res = cfg.run();
            let offered = res.flow("b", "tx_pkts");
            let passed = srtcm_admitted(offered, size, per_gap, cbs, ebs);
            println!("{queue}, ebs {ebs}: offered {offered}, the token buckets pass {passed}");
            assert!(passed > 0 && passed < offered / 2, "the test's own arithmetic: {passed} of {offered}");
            assert_eq!(res.flow("b", "rx_pkts"), passed, "{queue}: what the policer passed arrived");
            assert_eq!(res.table("filter").u64s("discarded_pkts")[0], offered - passed);
            assert_eq!(res.queue(queue, "drop_policer_pkts"), offered - passed, "{queue}");
            assert_eq!(res.queue(queue, "drop_pkts"), offered - passed, "{queue}: no other drop");
            let total: u64 = res.col("queue_summary", "drop_policer_pkts").iter().sum();
            assert_eq!(total, offered - passed, "counted once, at {queue} alone");
        }
    }
}
