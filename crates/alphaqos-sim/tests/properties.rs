//! Property tests of the router QoS pipeline: random pipelines (a filter
//! with random meters in front of a random classful egress, random loads)
//! must keep the invariants whatever the parameters:
//!
//! - conservation on every queue, nested disciplines included (FIFO, RED,
//!   FQ-CoDel and SFQ children in the classes, FQ-CoDel and SFQ as the
//!   egress): enqueued = dequeued + dropped after admission + backlog, in
//!   packets and in bytes, and every drop has a reason;
//! - conservation per flow: sent = received + dropped once the network
//!   has drained;
//! - shares: backlogged WRR, DRR and MDRR classes share the link by their
//!   weights;
//! - work conservation: a scheduler that is not rate-limited keeps the
//!   bottleneck busy while it has a backlog (at least 95% of the link's
//!   capacity in any interval that starts with that much work queued).
//!
//! The random cases come from the engine's own xoshiro256++ stream, so a
//! failing case is reproduced by its seed (printed in the message).

mod common;
use alphaqos_sim::rng::Rng;
use common::*;
use serde_json::{json, Value};

const CASES: u64 = 24;

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[(rng.next_u64() % items.len() as u64) as usize]
}

fn between(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    lo + rng.next_u64() % (hi - lo + 1)
}

/// A random classful egress with `n` classes (work-conserving by
/// construction: no `exact` Junos queue); with `nested`, classes may hold
/// a child discipline and the egress may be a per-flow discipline.
fn random_egress(rng: &mut Rng, n: usize, nested: bool) -> (Value, &'static str) {
    let kinds: &[&'static str] = if nested {
        &["junos", "strict_priority", "wrr", "drr", "mdrr", "fq_codel", "sfq"]
    } else {
        &["junos", "strict_priority", "wrr", "drr", "mdrr"]
    };
    let kind = *pick(rng, kinds);
    match kind {
        "fq_codel" => return (json!({"fq_codel": {"limit_pkts": between(rng, 20, 400), "buckets": between(rng, 1, 64)}}), kind),
        "sfq" => return (json!({"sfq": {"limit_pkts": between(rng, 20, 400), "buckets": between(rng, 1, 64), "quantum_bytes": between(rng, 300, 9000)}}), kind),
        _ => {}
    }
    let share = 100.0 / n as f64;
    let mut classes = Vec::new();
    let llq = between(rng, 0, n as u64) as usize; // == n: no low-latency queue
    for i in 0..n {
        let mut c = json!({"name": format!("c{i}"), "buffer_percent": share});
        let o = c.as_object_mut().unwrap();
        match kind {
            "junos" => {
                o.insert("transmit_rate_percent".into(), json!(share));
                o.insert("priority".into(), json!(pick(rng, &["high", "medium-high", "medium-low", "low"])));
            }
            "strict_priority" => {
                o.insert("priority".into(), json!(between(rng, 0, 4)));
            }
            "wrr" => {
                o.insert("weight".into(), json!(between(rng, 1, 8)));
            }
            "drr" => {
                o.insert("quantum_bytes".into(), json!(between(rng, 300, 9000)));
            }
            _ => {
                o.insert("weight".into(), json!(between(rng, 1, 20)));
                if i == llq {
                    o.insert("low_latency".into(), json!(pick(rng, &["strict", "alternate"])));
                }
            }
        }
        if rng.uniform() < 0.4 {
            // Junos curves for every colour: green late, red early.
            o.insert("drop_profile".into(), json!({"curves": {"green": [[80, 0], [100, 20]], "yellow": [[40, 0], [100, 60]], "red": [[0, 0], [100, 100]]}}));
        } else if nested && rng.uniform() < 0.7 {
            let child = match between(rng, 0, 3) {
                0 => json!({"fifo": {}}),
                1 => json!({"red": {"min_th": 2.0, "max_th": 8.0, "max_p": 0.2, "w_q": 0.02}}),
                // Small targets so that CoDel drops within the run.
                2 => json!({"fq_codel": {"buckets": between(rng, 1, 16), "target_ns": 50 * US, "interval_ns": between(rng, 1, 10) * MS}}),
                _ => json!({"sfq": {"buckets": between(rng, 1, 16), "quantum_bytes": between(rng, 64, 3000)}}),
            };
            o.insert("child".into(), child);
        }
        classes.push(c);
    }
    let buffer = between(rng, 20, 400);
    (json!({ kind: {"buffer_pkts": buffer, "classes": classes} }), kind)
}

fn random_action(rng: &mut Rng, n: usize) -> Value {
    match between(rng, 0, 3) {
        0 => json!("transmit"),
        1 => json!("loss_priority_high"),
        2 => json!("discard"),
        _ => json!({"fclass": between(rng, 0, n as u64 - 1)}),
    }
}

fn random_policer(rng: &mut Rng, n: usize) -> Value {
    let cir = between(rng, 50, 600) * MBPS;
    match between(rng, 0, 3) {
        0 => Value::Null,
        1 => json!({"rate_bps": cir, "burst_bytes": between(rng, 1500, 64_000),
                    "out_of_profile": random_action(rng, n)}),
        2 => json!({"srtcm": {"cir_bps": cir, "cbs_bytes": between(rng, 1500, 30_000), "ebs_bytes": between(rng, 0, 60_000)},
                    "color_aware": rng.uniform() < 0.5, "yellow": random_action(rng, n), "red": random_action(rng, n)}),
        _ => json!({"trtcm": {"cir_bps": cir, "cbs_bytes": between(rng, 1500, 30_000),
                              "pir_bps": cir + between(rng, 0, 400) * MBPS, "pbs_bytes": between(rng, 1500, 60_000)},
                    "color_aware": rng.uniform() < 0.5, "yellow": random_action(rng, n), "red": random_action(rng, n)}),
    }
}

/// Three sources U0..U2 (10.0.0.2..4) -> R -> D over a 1 Gbps bottleneck.
fn random_case(seed: u64, nested: bool) -> (Cfg, &'static str, u64) {
    // Returns the pipeline, its scheduler and its smallest packet size.
    let mut rng = Rng::stream(seed, "property-case");
    let n = between(&mut rng, 2, 4) as usize;
    let (egress, kind) = random_egress(&mut rng, n, nested);
    let stop = 300 * MS;
    let mut cfg = Cfg::new(600 * MS, MS).seed(seed).host("U0").host("U1").host("U2").router("R").host("D");
    for u in ["U0", "U1", "U2"] {
        cfg = cfg.link(u, "R", 10 * GBPS, 20 * US, ETH);
    }
    cfg = cfg.link_q("R", "D", GBPS, 100 * US, ETH, egress, fifo(Some(1000), None));
    let mut smallest = u64::MAX;
    let mut terms = Vec::new();
    for (i, u) in ["U0", "U1", "U2"].iter().enumerate() {
        let rate = between(&mut rng, 200, 900) * MBPS;
        let size = *pick(&mut rng, &[64u64, 576, 1500]);
        smallest = smallest.min(size);
        cfg = if rng.uniform() < 0.5 {
            cfg.flow(udp(&format!("f{i}"), u, "D", 0, Some(stop), size, rate))
        } else {
            cfg.flow(poisson(&format!("f{i}"), u, "D", 0, Some(stop), size, rate, rng.uniform() < 0.5))
        };
        let mut term = json!({"name": format!("t{i}"), "src": format!("10.0.0.{}/32", i + 2),
                              "fclass": between(&mut rng, 0, n as u64 - 1)});
        let policer = random_policer(&mut rng, n);
        if !policer.is_null() {
            term["policer"] = policer;
        }
        terms.push(term);
    }
    let nodes = cfg.v["nodes"].as_array_mut().unwrap();
    nodes.iter_mut().find(|node| node["name"] == "R").unwrap()["filter"] = json!(terms);
    (cfg, kind, smallest)
}

#[test]
fn random_pipelines_conserve_packets_on_every_queue_and_flow() {
    let mut queued_drops = 0;
    for seed in 0..CASES {
        let (cfg, kind, _) = random_case(seed, true);
        let res = cfg.run();
        let qs = res.table("queue_summary");
        for (i, q) in qs.strs("queue").iter().enumerate() {
            let g = |c: &str| qs.u64s(c)[i];
            let what = format!("seed {seed} ({kind}) {q}");
            assert_eq!(g("enq_pkts"), g("deq_pkts") + g("drop_queued_pkts") + g("backlog_pkts"), "{what}: enq = deq + drop_queued + backlog");
            assert_eq!(g("enq_bytes"), g("deq_bytes") + g("drop_queued_bytes") + g("backlog_bytes"), "{what}: bytes");
            assert!(g("drop_queued_pkts") <= g("drop_pkts"), "{what}: queued drops are drops");
            queued_drops += g("drop_queued_pkts");
            assert_eq!(g("backlog_pkts"), 0, "seed {seed} ({kind}) {q}: drained 300 ms after the sources stopped");
            assert_eq!(g("drop_pkts"), g("drop_tail_pkts") + g("drop_aqm_pkts") + g("drop_policer_pkts"), "seed {seed} {q}: reasons");
        }
        for f in res.flow_names() {
            let (tx, rx, drop) = (res.flow(&f, "tx_pkts"), res.flow(&f, "rx_pkts"), res.flow(&f, "drop_pkts"));
            assert!(tx > 0, "seed {seed} {f}");
            assert_eq!(tx, rx + drop, "seed {seed} ({kind}) {f}: tx = rx + drop");
        }
    }
    assert!(queued_drops > 0, "some case dropped queued packets (CoDel, overflow)");
}

#[test]
fn work_conserving_schedulers_keep_an_overloaded_bottleneck_busy() {
    let mut checked = 0;
    for seed in 0..CASES {
        let (cfg, kind, smallest) = random_case(seed, false);
        let res = cfg.run();
        // tx_bytes counts IP bytes; the wire adds 38 B of Ethernet per packet.
        let ip_share = smallest as f64 / (smallest + ETH) as f64;
        // The egress reports one row per class, "R->D/<class>"; add them up.
        let classes: Vec<String> = res.queue_names().into_iter().filter(|q| q.starts_with("R->D/")).collect();
        assert!(!classes.is_empty(), "seed {seed}: no class queues on R->D");
        let times = res.series("queue", &classes[0], "time_ns");
        let total = |col: &str| -> Vec<u64> {
            let mut sum = vec![0; times.len()];
            for q in &classes {
                for (acc, v) in sum.iter_mut().zip(res.series("queue", q, col)) {
                    *acc += v;
                }
            }
            sum
        };
        let (sent, backlog) = (total("tx_bytes"), total("len_bytes"));
        // Intervals [t, t + 1 ms) that start with at least 1 ms of the
        // link's work queued: a work-conserving scheduler cannot idle in them.
        let mut busy = 0;
        for k in 1..times.len() {
            let work = GBPS * (times[k] - times[k - 1]) / 8 / 1_000_000_000;
            if backlog[k - 1] >= work {
                let bits = (sent[k] - sent[k - 1]) as f64 * 8.0;
                let capacity = GBPS as f64 * (times[k] - times[k - 1]) as f64 / 1e9;
                // Counted on the IP size; the link also carries 38 B of Ethernet per packet.
                assert!(bits <= capacity * 1.0001, "seed {seed} ({kind}): more than the link rate at {}", times[k]);
                assert!(bits > 0.95 * ip_share * capacity, "seed {seed} ({kind}): idle with a backlog at {} ns ({bits} bits)", times[k]);
                busy += 1;
            }
        }
        if busy > 0 {
            checked += 1;
        }
    }
    // Deep enough backlogs need large buffers and heavy loads: a handful of cases.
    assert!(checked >= CASES / 6, "only {checked} of {CASES} random cases overloaded the link");
}

/// With every class backlogged, the long-run shares follow the weights:
/// WRR (packets per round, equal sizes), DRR (quanta) and MDRR (quantum
/// MTU + (weight - 1) x 512 B), random weights, within 2%.
#[test]
fn backlogged_classes_share_the_link_by_their_weights() {
    for seed in 0..12u64 {
        let mut rng = Rng::stream(seed, "property-shares");
        let n = between(&mut rng, 2, 4) as usize;
        let kind = *pick(&mut rng, &["wrr", "drr", "mdrr"]);
        let mut classes = Vec::new();
        let mut expected = Vec::new();
        for i in 0..n {
            let (key, value, share) = match kind {
                "wrr" => {
                    let w = between(&mut rng, 1, 8);
                    ("weight", w, w as f64)
                }
                "drr" => {
                    let q = between(&mut rng, 1500, 9000);
                    ("quantum_bytes", q, q as f64)
                }
                _ => {
                    let w = between(&mut rng, 1, 10);
                    // The test links have a 9000-byte MTU.
                    ("weight", w, (9000 + (w - 1) * 512) as f64)
                }
            };
            classes.push(json!({"name": format!("c{i}"), "buffer_percent": 100.0 / n as f64, key: value}));
            expected.push(share);
        }
        let total: f64 = expected.iter().sum();
        let mut cfg = Cfg::new(1_200 * MS, 100 * MS).seed(seed).router("R").host("D");
        let mut terms = Vec::new();
        for i in 0..n {
            let h = format!("U{i}");
            cfg = cfg.host(&h).link(&h, "R", 10 * GBPS, 20 * US, ETH).flow(udp(&format!("f{i}"), &h, "D", 0, Some(S), 1500, GBPS));
            // Hosts are numbered 10.0.0.2, ... in the order declared: D, then U0, U1, ...
            terms.push(json!({"name": format!("t{i}"), "src": format!("10.0.0.{}/32", i + 3), "fclass": i}));
        }
        cfg = cfg.link_q("R", "D", GBPS, 100 * US, ETH, json!({ kind: {"buffer_pkts": 400, "classes": classes} }), fifo(Some(1000), None));
        let nodes = cfg.v["nodes"].as_array_mut().unwrap();
        nodes.iter_mut().find(|node| node["name"] == "R").unwrap()["filter"] = json!(terms);
        let res = cfg.run();
        let served: Vec<f64> = (0..n).map(|i| res.queue(&format!("R->D/c{i}"), "deq_bytes") as f64).collect();
        let sum: f64 = served.iter().sum();
        for i in 0..n {
            let (got, want) = (served[i] / sum, expected[i] / total);
            assert!((got - want).abs() < 0.02 * want, "seed {seed} {kind} class {i}: share {got:.4}, weight share {want:.4} ({classes:?}; served {served:?})");
        }
    }
}
