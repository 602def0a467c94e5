//! The classful egress and its drop profiles as the engine
//! configuration gives them (built in [`super::build`]) (`docs/engine-config.md`, queue kinds `strict_priority`,
//! `wrr`, `drr`, `mdrr`, and every class's `drop_profile`).
//!
//! What it does: checks each class's fields against the scheduler chosen
//! (a field the scheduler does not use is an error naming the class and the
//! field, as is a missing one), carves the class buffers out of the
//! interface buffer as the Junos egress does ([`super::sched::BufferSize`]),
//! and hands the parameters to the mechanisms of `qos/sched/` and
//! `qos/aqm/`, which validate their own values.
//!
//! Per scheduler (the reference of each is in its module):
//!
//! - `strict_priority` ([`super::sched::prio`]): `priority`, a level, larger
//!   first (the Python front maps Junos's names strict-high..low to 4..0);
//! - `wrr` ([`super::sched::wrr`]): `weight`, packets per round;
//! - `drr` ([`super::sched::drr`]): `quantum_bytes`;
//! - `mdrr` ([`super::sched::mdrr`]): `weight` 1..=2048, turned into a
//!   quantum with Cisco's `MTU + (weight - 1) * 512` on the interface MTU;
//!   `low_latency` (`strict` or `alternate`) on at most one class.
//!
//! Drop profiles: `curves` (Junos interpolated, as a 64-level table, on the instantaneous fill in
//! bytes) to [`PiecewiseWred`], `cisco_wred` to [`ColorRed::cisco`], `rio`
//! to [`Rio`], `gred` to [`ColorRed::gred`].
//!
//! Tests: below (each scheduler built and run a few packets; unused and
//! missing fields rejected by name; every drop-profile form built, bad
//! values rejected); `tests/qos_pipeline.rs` runs them in a simulation.

use crate::config::ClassfulClassConfig;

/// Which scheduler serves the classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    StrictPriority,
    Wrr,
    Drr,
    Mdrr,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::StrictPriority => "strict_priority",
            Kind::Wrr => "wrr",
            Kind::Drr => "drr",
            Kind::Mdrr => "mdrr",
        }
    }
    /// The class fields this scheduler uses; all are required but
    /// `low_latency`.
    pub(crate) fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::StrictPriority => &["priority"],
            Kind::Wrr => &["weight"],
            Kind::Drr => &["quantum_bytes"],
            Kind::Mdrr => &["weight", "low_latency"],
        }
    }
}

/// The scheduler fields a class sets.
pub(crate) fn fields_set(k: &ClassfulClassConfig) -> Vec<&'static str> {
    let set = [
        ("priority", k.priority.is_some()),
        ("weight", k.weight.is_some()),
        ("quantum_bytes", k.quantum_bytes.is_some()),
        ("low_latency", k.low_latency.is_some()),
    ];
    set.iter().filter(|(_, s)| *s).map(|(f, _)| *f).collect()
}

#[cfg(test)]
mod tests {
    use super::super::build::build_drop_profile;
    use super::super::fifo::Limit;
    use super::super::DropProfile;
    use crate::config::{DropProfileConfig, QueueConfig};
    use crate::packet::{Color, Packet};
    use crate::qos::{Dequeued, Qdisc, QueueCtx};
    use crate::rng::Rng;
    use crate::time::SimTime;
    use crate::units::DataRate;
    use serde_json::json;

    fn queue(v: serde_json::Value) -> Result<Box<dyn Qdisc>, String> {
        let cfg: QueueConfig = serde_json::from_value(v).map_err(|e| e.to_string())?;
        crate::qos::build(&cfg, 1500).map(|q| Box::new(q) as Box<dyn Qdisc>).map_err(|e| e.to_string())
    }

    fn drain(q: &mut dyn Qdisc, load: &[(u8, u32)]) -> Vec<u8> {
        let mut rng = Rng::stream(1, "t");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        for &(c, n) in load {
            for _ in 0..n {
                let mut p = Packet::test(0, 1500);
                p.fclass = c;
                q.enqueue(p, &mut ctx).unwrap();
            }
        }
        std::iter::from_fn(|| match q.dequeue(&mut ctx) {
            Dequeued::Packet(p) => Some(p.fclass),
            _ => None,
        })
        .collect()
    }

    fn two(kind: &str, a: serde_json::Value, b: serde_json::Value) -> serde_json::Value {
        let class = |name: &str, extra: serde_json::Value| {
            let mut c = json!({"name": name, "buffer_percent": 50.0});
            c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            c
        };
        json!({kind: {"buffer_pkts": 100, "classes": [class("a", a), class("b", b)]}})
    }

    #[test]
    fn each_scheduler_builds_and_serves_as_configured() {
        let mut sp = queue(two("strict_priority", json!({"priority": 0}), json!({"priority": 4}))).unwrap();
        assert_eq!(drain(sp.as_mut(), &[(0, 2), (1, 2)]), [1, 1, 0, 0]);
        let mut wrr = queue(two("wrr", json!({"weight": 2}), json!({"weight": 1}))).unwrap();
        assert_eq!(drain(wrr.as_mut(), &[(0, 4), (1, 2)]), [0, 0, 1, 0, 0, 1]);
        let mut drr = queue(two("drr", json!({"quantum_bytes": 3000}), json!({"quantum_bytes": 1500}))).unwrap();
        assert_eq!(drain(drr.as_mut(), &[(0, 4), (1, 2)]), [0, 0, 1, 0, 0, 1]);
        // MDRR: weight 1 is one MTU; the strict low-latency queue goes first.
        let mut mdrr = queue(two("mdrr", json!({"weight": 1}), json!({"weight": 1, "low_latency": "strict"}))).unwrap();
        assert_eq!(drain(mdrr.as_mut(), &[(0, 2), (1, 2)]), [1, 1, 0, 0]);
        // The buffer is split: 50 packets each.
        let mut full = queue(two("wrr", json!({"weight": 1}), json!({"weight": 1}))).unwrap();
        let mut rng = Rng::stream(1, "t");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let admitted = (0..60).filter(|_| full.enqueue(Packet::test(0, 100), &mut ctx).is_ok()).count();
        assert_eq!(admitted, 50);
    }

    #[test]
    fn fields_are_checked_against_the_scheduler() {
        let err = |v| queue(v).err().expect("rejected");
        let e = err(two("wrr", json!({"weight": 1}), json!({"weight": 1, "priority": 3})));
        assert!(e.contains("wrr.classes[1].priority: not used by the wrr scheduler"), "{e}");
        let e = err(two("drr", json!({"quantum_bytes": 1500}), json!({})));
        assert!(e.contains("drr.classes[1]: the drr scheduler needs quantum_bytes"), "{e}");
        let e = err(two("wrr", json!({"weight": 1, "low_latency": "strict"}), json!({"weight": 1})));
        assert!(e.contains("low_latency: not used by the wrr"), "{e}");
        let e = err(two("mdrr", json!({"weight": 1, "low_latency": "strict"}), json!({"weight": 2, "low_latency": "alternate"})));
        assert!(e.contains("only one low-latency queue"), "{e}");
        let e = err(two("mdrr", json!({"weight": 0}), json!({"weight": 2})));
        assert!(e.contains("mdrr.classes[0].weight: an MDRR weight must be in 1..=2048"), "{e}");
        assert!(err(two("wrr", json!({"weight": 0}), json!({"weight": 1}))).contains("wrr.classes[0].weight: must be at least 1 packet"));
        assert!(err(two("drr", json!({"quantum_bytes": 0}), json!({"quantum_bytes": 1}))).contains("drr.classes[0].quantum_bytes: must be in 1..="));
        assert!(err(two("wrr", json!({"weight": 1, "bogus": 1}), json!({"weight": 1}))).contains("bogus"));
        let mut big = two("wrr", json!({"weight": 1}), json!({"weight": 1}));
        big["wrr"]["classes"][0]["buffer_percent"] = json!(70.0);
        assert!(err(big).contains("more than 100 %"));
    }

    fn profile(v: serde_json::Value) -> Result<Box<dyn DropProfile>, String> {
        let cfg: DropProfileConfig = serde_json::from_value(v).map_err(|e| e.to_string())?;
        build_drop_profile(&cfg).map_err(|e| e.to_string())
    }

    /// Early drops out of `n` arrivals of `color` at a queue held at `held` packets of 100 B.
    fn drops(p: &mut dyn DropProfile, color: Color, held: u64, n: usize) -> usize {
        let mut rng = Rng::stream(2, "p");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let limit = Limit { pkts: 100, bytes: 10_000 };
        let mut pkt = Packet::test(0, 100);
        pkt.color = color;
        let held = crate::qos::Backlog { pkts: held, bytes: held * 100 };
        (0..n).filter(|_| p.early_drop(&pkt, held, limit, &mut ctx)).count()
    }

    #[test]
    fn every_drop_profile_form_builds_and_treats_red_worse() {
        let red = |min: f64, max: f64, p: f64| json!({"min_th": min, "max_th": max, "max_p": p, "w_q": 1.0});
        let forms = [
            json!({"curves": {"red": [[0, 0], [100, 100]]}}),
            json!({"cisco_wred": {"exp_weight": 0, "per_color": {"green": {"min_th": 40, "max_th": 80, "max_p": 0.1}, "red": {"min_th": 10, "max_th": 30, "max_p": 0.5}}}}),
            json!({"rio": {"in_profile": red(40.0, 80.0, 0.1), "out_profile": red(10.0, 30.0, 0.5)}}),
            json!({"gred": {"green": red(40.0, 80.0, 0.1), "red": red(10.0, 30.0, 0.5)}}),
        ];
        for f in forms {
            // A queue at 35 of 100 packets: red is dropped (often), green never.
            let mut p = profile(f.clone()).unwrap();
            let (g, r) = (drops(p.as_mut(), Color::Green, 35, 2000), drops(p.as_mut(), Color::Red, 35, 2000));
            assert!(g == 0 && r > 300, "{f}: green {g}, red {r}");
        }
    }

    #[test]
    fn bad_drop_profiles_are_rejected_with_a_reason() {
        let err = |v| profile(v).err().expect("rejected");
        assert!(err(json!({"curves": {}})).contains("at least one colour"));
        assert!(err(json!({"curves": {"red": [[50, 10], [40, 20]]}})).contains("fill levels must increase"));
        let e = err(json!({"cisco_wred": {"per_color": {"green": {"min_th": 40, "max_th": 20, "max_p": 0.1}}}}));
        assert!(e.contains("max_th: must be greater than min_th (40), got 20"), "{e}");
        assert!(err(json!({"cisco_wred": {"exp_weight": 31, "per_color": {}}})).contains("exp_weight"));
        let e = err(json!({"rio": {"in_profile": {"min_th": 1, "max_th": 2, "max_p": 2.0}, "out_profile": {"min_th": 1, "max_th": 2}}}));
        assert!(e.contains("rio.in_profile.max_p: must be in (0, 1]"), "{e}");
        let e = err(json!({"gred": {"red": {"min_th": 1, "max_th": 2, "limit_pkts": 5}}}));
        assert!(e.contains("gred.red.limit_pkts: not used here"), "{e}");
        assert!(err(json!({"gred": {}})).contains("at least one colour"));
        assert!(err(json!({"curves": {"red": [[0, 0]]}, "gred": {}})).len() > 0);
    }

    #[test]
    fn every_child_kind_builds_and_bad_children_are_rejected_by_path() {
        for child in [json!({"fifo": {}}), json!({"red": {"min_th": 5, "max_th": 15}}), json!({"fq_codel": {}}), json!({"sfq": {"buckets": 16}})] {
            let mut q = queue(two("drr", json!({"quantum_bytes": 1500, "child": child.clone()}), json!({"quantum_bytes": 1500}))).unwrap();
            // Class a's child holds class a's packets and reports as class a.
            assert_eq!(drain(q.as_mut(), &[(0, 3), (1, 1)]).len(), 4, "{child}");
            let mut names = vec![];
            q.for_each_queue(&mut |n, c, _| names.push((n.to_string(), c.deq_pkts)));
            assert_eq!(names, vec![("a".into(), 3), ("b".into(), 1)], "{child}");
        }
        // A per-flow child takes the class's buffer (50 packets) as its limit.
        let mut q = queue(two("wrr", json!({"weight": 1, "child": {"fq_codel": {}}}), json!({"weight": 1}))).unwrap();
        let mut rng = Rng::stream(1, "t");
        let mut sink = vec![];
        let mut ctx = QueueCtx::with_drops(SimTime::ZERO, DataRate::gbps(1), &mut rng, &mut sink);
        for _ in 0..60 {
            q.enqueue(Packet::test(0, 100), &mut ctx).unwrap();
        }
        // The 51st packet overflows it: the one flow loses half its bytes
        // (26 packets) from its head; 9 more arrive.
        assert_eq!((q.backlog().pkts, ctx.dropped.map_or(0, |d| d.len())), (34, 26));
        let err = |v| queue(v).err().expect("rejected");
        let e = err(two("wrr", json!({"weight": 1, "child": {"fq_codel": {"target_ns": 200_000_000}}}), json!({"weight": 1})));
        assert!(e.contains("wrr.classes[0].child.fq_codel.target_ns: CoDel's target (200ms) must be below its interval"), "{e}");
        let e = err(two("wrr", json!({"weight": 1, "child": {"fifo": {}}, "drop_profile": {"curves": {"red": [[0, 0], [100, 100]]}}}), json!({"weight": 1})));
        assert!(e.contains("wrr.classes[0].child: give a drop profile"), "{e}");
        let e = err(two("wrr", json!({"weight": 1}), json!({"weight": 1, "child": {"red": {"min_th": 5, "max_th": 15, "limit_pkts": 9}}})));
        assert!(e.contains("wrr.classes[1].child.red.limit_pkts: not used here"), "{e}");
        let e = err(two("wrr", json!({"weight": 1, "child": {"fq_codel": {"quantum_bytes": 0}}}), json!({"weight": 1})));
        assert!(e.contains("wrr.classes[0].child.fq_codel.quantum_bytes: must be at least 1 byte"), "{e}");
        assert!(err(two("wrr", json!({"weight": 1, "child": {"codel": {}}}), json!({"weight": 1}))).contains("codel"));
        // HTB: a leaf holds a child, an inner class cannot.
        let htb = |child_of: &str| {
            let mut v = json!({"htb": {"classes": [
                {"name": "1:1", "rate_bps": 1_000_000_000u64},
                {"name": "1:10", "parent": "1:1", "rate_bps": 500_000_000u64}], "default_class": "1:10"}});
            let k = if child_of == "1:1" { 0 } else { 1 };
            v["htb"]["classes"][k]["child"] = json!({"fq_codel": {}});
            queue(v)
        };
        assert!(htb("1:10").is_ok());
        let e = htb("1:1").err().unwrap();
        assert!(e.contains("htb.classes[0].child: '1:1' is an inner class: it holds no packets"), "{e}");
        // Junos: a class's child; curves and a child exclude each other.
        let junos = |extra: serde_json::Value| {
            let mut c = json!({"name": "be", "transmit_rate_remainder": true, "priority": "low", "buffer_percent": 100.0});
            c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            queue(json!({"junos": {"buffer_pkts": 100, "classes": [c]}}))
        };
        assert!(junos(json!({"child": {"sfq": {}}})).is_ok());
        let e = junos(json!({"child": {"sfq": {}}, "drop_red": [[0, 0], [100, 100]]})).err().unwrap();
        assert!(e.contains("junos.classes[0].child: give a drop profile"), "{e}");
        // Link-level queues.
        assert!(queue(json!({"fq_codel": {"limit_pkts": 100, "target_ns": 1_000_000, "interval_ns": 20_000_000}})).is_ok());
        assert!(queue(json!({"sfq": {"quantum_bytes": 3000}})).is_ok());
        assert!(queue(json!({"fq_codel": {"buckets": 0}})).err().unwrap().contains("fq_codel.buckets: must be in 1..=65536"));
    }
}
