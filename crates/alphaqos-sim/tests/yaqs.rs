//! YAQS in a simulated network (Liberatore, "Local Flow Separation"):
//! an aggressive TCP flow beside web-like ON/OFF traffic over a 20 Mbps
//! bottleneck; the interface monitor counts reorderings from the TCP
//! sequence numbers it sends, independently of the discipline.
//!
//! - with c_s = 0 no segment of any flow leaves out of order (Proposition
//!   2 and the remark after it), while flows do use the slow queue;
//! - the fast queue stays far shorter than a FIFO's queue in the same run;
//! - without inflation and with c_s > 0 the monitor sees reordering (the
//!   counter can fail);
//! - YAQS as a class's child discipline (strict priority over a YAQS);
//! - bad parameters are refused with their path.

mod common;
use alphaqos_sim::Column;
use common::*;
use serde_json::{json, Value};

fn dumbbell(queue: Value, seed: u64) -> Cfg {
    let mut c = Cfg::new(3 * S, 10 * MS).seed(seed).host("A").host("D").router("R1").router("R2");
    let webs: Vec<String> = (0..6).map(|i| format!("W{i}")).collect();
    let sinks: Vec<String> = (0..6).map(|i| format!("V{i}")).collect();
    for (w, v) in webs.iter().zip(&sinks) {
        c = c.host(w).host(v).link(w, "R1", 100 * MBPS, 2 * MS, 0).link("R2", v, 100 * MBPS, 2 * MS, 0);
    }
    c = c
        .link("A", "R1", 100 * MBPS, 400 * US, 0)
        .link_q("R1", "R2", 20 * MBPS, MS, 0, queue, fifo(Some(512), None))
        .link("R2", "D", 100 * MBPS, 400 * US, 0);
    let links = c.v["links"].as_array_mut().unwrap();
    let n = links.len();
    links[n - 2]["monitor_ab"] = json!(true);
    c.workload(json!({"name": "bulk", "start_ns": 200 * MS, "tcp": {"mss_bytes": 1460, "init_cwnd_pkts": 2, "rwnd_bytes": 1024 * 1460},
                      "transfer": {"src": "A", "dst": "D", "size_bytes": 4_000_000}}))
        .workload(json!({"name": "web", "tcp": {"mss_bytes": 1460, "init_cwnd_pkts": 2},
                         "onoff": {"hosts": webs, "peers": sinks, "mean_rate_bps": MBPS,
                                   "size": {"pareto": {"shape": 1.2, "mean_bytes": 8000.0}}}}))
}

fn yaqs(c_s: i64, inflate: bool) -> Value {
    json!({"yaqs": {"limit_pkts": 512, "c_f_bytes": 16_500, "c_s_bytes": c_s, "r": 0.5, "inflate": inflate, "epsilon": 0.5}})
}

fn one(r: &Res, table: &str, col: &str) -> u64 {
    r.col(table, col)[0]
}

#[test]
fn no_reordering_with_c_s_zero_and_a_short_fast_queue() {
    for seed in 1..=3 {
        let r = dumbbell(yaqs(0, true), seed).run();
        assert_eq!(r.table("monitor").strs("link"), ["R1->R2"]);
        assert!(one(&r, "monitor", "data_pkts") > 2000);
        assert_eq!(one(&r, "monitor", "reordered_pkts"), 0, "seed {seed}");
        assert!(one(&r, "yaqs", "classified_slow") > 100, "seed {seed}: the slow queue was used");
        assert!(one(&r, "yaqs", "slow_flows_max") >= 1);
        // The queue series reports the two queues; the YAQS series too.
        assert!(r.queue_names().contains(&"R1->R2/fast".to_string()));
        let fast = r.series("yaqs_series", "R1->R2", "fast_bytes");
        assert_eq!(fast.len(), 300);
        assert!(r.col_opt("yaqs", "false_positives")[0].is_some());
        let fifo_run = dumbbell(fifo(Some(512), None), seed).run();
        let (y90, f90) = (one(&r, "yaqs", "fast_len_p90_bytes"), one(&fifo_run, "monitor", "qlen_p90_bytes"));
        let (ymax, fmax) = (one(&r, "yaqs", "fast_len_max_bytes"), one(&fifo_run, "monitor", "qlen_max_bytes"));
        assert!(y90 * 3 < f90 && ymax * 2 < fmax, "seed {seed}: fast p90 {y90} max {ymax}, FIFO p90 {f90} max {fmax}");
        // Everything the YAQS histogram saw is in the table's histogram rows.
        let counts: u64 = r.col("qlen_hist", "count").iter().zip(r.table("qlen_hist").strs("source")).filter(|(_, s)| *s == "yaqs_fast").map(|(c, _)| c).sum();
        assert_eq!(counts, one(&r, "yaqs", "arrivals"));
        let Some(Column::F64(mean)) = r.table("yaqs").get("slow_flows_mean") else { panic!() };
        assert!(mean[0] > 0.0);
    }
}

#[test]
fn the_monitor_sees_reordering_when_yaqs_may_reorder() {
    let mut total = 0;
    for seed in 1..=3 {
        let r = dumbbell(yaqs(16_500, false), seed).run();
        total += one(&r, "monitor", "reordered_pkts");
        assert_eq!(one(&r, "monitor", "reordered_pkts"), one(&r, "monitor", "fast_after_slow") + one(&r, "monitor", "slow_after_fast"));
    }
    assert!(total > 0, "no reordering seen with c_s > 0 and no inflation");
}

#[test]
fn yaqs_as_a_class_child_and_bad_parameters() {
    use alphaqos_sim::qos::sched::{prio::StrictPriority, ClassSpec, Scheduled};
    use alphaqos_sim::qos::{fifo::Limit, yaqs, Child, Dequeued, Qdisc, QueueCtx};
    use alphaqos_sim::{packet::Packet, rng::Rng, DataRate, SimTime};
    let cfg: alphaqos_sim::config::YaqsConfig = serde_json::from_value(json!({"c_f_bytes": 3000})).unwrap();
    let classes = vec![ClassSpec::new("be", Limit::from_opts(Some(100), None)).with_child(Child::Build(yaqs::child(&cfg).unwrap()))];
    let mut q = Scheduled::new(classes, StrictPriority::new(vec![0])).unwrap();
    let mut rng = Rng::stream(1, "t");
    let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
    for _ in 0..6 {
        q.enqueue(Packet::test(1, 1500), &mut ctx).unwrap();
    }
    let mut names = vec![];
    q.for_each_queue(&mut |n, _, b| names.push((n.to_string(), b.pkts)));
    assert_eq!(names, [("be/fast".to_string(), 3), ("be/slow".to_string(), 3)]);
    let mut seen = vec![];
    q.for_each_yaqs(&mut |n, y| seen.push((n.to_string(), y.stats().slow_flows)));
    assert_eq!(seen, [("be".to_string(), 1)]);
    while let Dequeued::Packet(_) = q.dequeue(&mut ctx) {}
    // Each bad value is named.
    for (bad, says) in [
        (json!({"r": 1.5}), "yaqs.r: must be in [0, 1]"),
        (json!({"c_f_bytes": -1}), "yaqs.c_f_bytes: must not be negative"),
        (json!({"c_s_bytes": -5}), "yaqs.c_s_bytes: must not be negative"),
        (json!({"sketch_rows": 0}), "yaqs.sketch_rows: must be in 1..="),
        (json!({"sketch_buckets": 0}), "yaqs.sketch_buckets: must be positive"),
    ] {
        let c = Cfg::new(S, 100 * MS).host("A").host("B").link_q("A", "B", GBPS, MS, 0, json!({ "yaqs": bad }), unlimited());
        let err = c.build().err().expect("refused");
        assert!(err.starts_with("links[0].queue_ab.yaqs") && err.contains(says), "{err}");
    }
}
