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
    let nodes = cfg.v["nodes"].as_array_mut().unwrap();
    let r = nodes.iter_mut().find(|n| n["name"] == "R").unwrap();
    r["filter"] = filter;
    cfg.run()
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
