//! Property tests of the router QoS pipeline (proptest, with shrinking:
//! a failing case is cut down to a smallest one that still fails, printed
//! with its parameters). Random pipelines (a filter with random meters in
//! front of a random classful egress, random loads) must keep the
//! invariants whatever the parameters:
//!
//! - conservation on every interface and queue, nested disciplines
//!   included (FIFO, RED, FQ-CoDel and SFQ children in the classes,
//!   FQ-CoDel and SFQ as the egress): packets in = out + dropped after
//!   admission + still queued, in packets and in bytes, also in the middle
//!   of a run, and every drop has a reason;
//! - conservation per flow: sent = received + dropped once the network
//!   has drained;
//! - tokens never above the bucket depth: single-rate, srTCM (RFC 2697)
//!   and trTCM (RFC 2698) meters under random packet streams;
//! - work conservation: a scheduler that is not rate-limited never leaves
//!   its transmitter idle while it holds a packet (exactly, on one egress
//!   port), and keeps a simulated bottleneck busy while it has a backlog
//!   (at least 95% of the link's capacity in any interval that starts with
//!   that much work queued);
//! - shares: backlogged WRR, DRR and MDRR classes share the link by their
//!   weights.
//!
//! Case counts keep the file under ~20 s in `cargo test --profile ci-test`;
//! `PROPTEST_CASES` raises them all for a longer hunt.

mod common;
use alphaqos_sim::config::QueueConfig;
use alphaqos_sim::egress::Egress;
use alphaqos_sim::packet::{Color, Packet};
use alphaqos_sim::qos::meter::single_rate::{SingleRate, SingleRateParams};
use alphaqos_sim::qos::meter::srtcm::{Srtcm, SrtcmParams};
use alphaqos_sim::qos::meter::trtcm::{Trtcm, TrtcmParams};
use alphaqos_sim::qos::meter::{ColorMode, Meter};
use alphaqos_sim::qos::{build_on, Qdisc};
use alphaqos_sim::rng::Rng;
use alphaqos_sim::{DataRate, SimTime};
use common::*;
use proptest::prelude::*;
use serde_json::{json, Value};

/// Cases per property: `PROPTEST_CASES` if set, else `default`.
fn cases(default: u32) -> ProptestConfig {
    let n = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    ProptestConfig { cases: n, max_shrink_iters: 256, ..ProptestConfig::default() }
}

// --- random pipelines ----------------------------------------------------------

const KINDS: [&str; 5] = ["junos", "strict_priority", "wrr", "drr", "mdrr"];
const JUNOS_PRIORITIES: [&str; 4] = ["high", "medium-high", "medium-low", "low"];

/// A class's child discipline.
#[derive(Clone, Debug)]
enum Child {
    None,
    /// Junos drop curves for every colour: green late, red early.
    Curves,
    Fifo,
    Red,
    FqCodel { buckets: u64, interval_ms: u64 },
    Sfq { buckets: u64, quantum: u64 },
}

#[derive(Clone, Debug)]
struct Class {
    /// Junos priority (index into JUNOS_PRIORITIES) or strict priority level.
    priority: usize,
    /// WRR (1..8) and MDRR (1..20) weight.
    weight: u64,
    quantum: u64,
    child: Child,
}

#[derive(Clone, Debug)]
enum EgressSpec {
    Classful { kind: usize, classes: Vec<Class>, low_latency: Option<(usize, bool)>, buffer: u64 },
    FqCodel { limit: u64, buckets: u64 },
    Sfq { limit: u64, buckets: u64, quantum: u64 },
}

impl EgressSpec {
    fn classes(&self) -> usize {
        match self {
            EgressSpec::Classful { classes, .. } => classes.len(),
            _ => 1,
        }
    }
    fn kind(&self) -> &'static str {
        match self {
            EgressSpec::Classful { kind, .. } => KINDS[*kind],
            EgressSpec::FqCodel { .. } => "fq_codel",
            EgressSpec::Sfq { .. } => "sfq",
        }
    }
    fn json(&self) -> Value {
        match self {
            EgressSpec::FqCodel { limit, buckets } => json!({"fq_codel": {"limit_pkts": limit, "buckets": buckets}}),
            EgressSpec::Sfq { limit, buckets, quantum } => json!({"sfq": {"limit_pkts": limit, "buckets": buckets, "quantum_bytes": quantum}}),
            EgressSpec::Classful { kind, classes, low_latency, buffer } => {
                let kind = KINDS[*kind];
                let share = 100.0 / classes.len() as f64;
                let classes: Vec<Value> = classes
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let mut v = json!({"name": format!("c{i}"), "buffer_percent": share});
                        let o = v.as_object_mut().unwrap();
                        match kind {
                            "junos" => {
                                o.insert("transmit_rate_percent".into(), json!(share));
                                o.insert("priority".into(), json!(JUNOS_PRIORITIES[c.priority]));
                            }
                            "strict_priority" => {
                                o.insert("priority".into(), json!(c.priority));
                            }
                            "wrr" => {
                                o.insert("weight".into(), json!(c.weight.min(8)));
                            }
                            "drr" => {
                                o.insert("quantum_bytes".into(), json!(c.quantum));
                            }
                            _ => {
                                o.insert("weight".into(), json!(c.weight));
                                if let Some((l, strict)) = low_latency.filter(|l| l.0 == i) {
                                    let _ = l;
                                    o.insert("low_latency".into(), json!(if strict { "strict" } else { "alternate" }));
                                }
                            }
                        }
                        let child = match c.child {
                            Child::None => None,
                            Child::Curves => {
                                o.insert("drop_profile".into(), json!({"curves": {"green": [[80, 0], [100, 20]], "yellow": [[40, 0], [100, 60]], "red": [[0, 0], [100, 100]]}}));
                                None
                            }
                            Child::Fifo => Some(json!({"fifo": {}})),
                            Child::Red => Some(json!({"red": {"min_th": 2.0, "max_th": 8.0, "max_p": 0.2, "w_q": 0.02}})),
                            // Small targets so that CoDel drops within the run.
                            Child::FqCodel { buckets, interval_ms } => Some(json!({"fq_codel": {"buckets": buckets, "target_ns": 50 * US, "interval_ns": interval_ms * MS}})),
                            Child::Sfq { buckets, quantum } => Some(json!({"sfq": {"buckets": buckets, "quantum_bytes": quantum}})),
                        };
                        if let Some(child) = child {
                            o.insert("child".into(), child);
                        }
                        v
                    })
                    .collect();
                json!({ kind: {"buffer_pkts": buffer, "classes": classes} })
            }
        }
    }
}

fn child(nested: bool) -> BoxedStrategy<Child> {
    if !nested {
        return prop_oneof![Just(Child::None), Just(Child::Curves)].boxed();
    }
    prop_oneof![
        Just(Child::None),
        Just(Child::Curves),
        Just(Child::Fifo),
        Just(Child::Red),
        (1..=16u64, 1..=10u64).prop_map(|(buckets, interval_ms)| Child::FqCodel { buckets, interval_ms }),
        (1..=16u64, 64..=3000u64).prop_map(|(buckets, quantum)| Child::Sfq { buckets, quantum }),
    ]
    .boxed()
}

/// A classful egress of 2 to 4 classes (work-conserving by construction:
/// no `exact` Junos queue); with `nested`, classes may hold a child
/// discipline and the egress may be a per-flow discipline.
fn egress_spec(nested: bool) -> BoxedStrategy<EgressSpec> {
    let class = (0..4usize, 1..=20u64, 300..=9000u64, child(nested)).prop_map(|(priority, weight, quantum, child)| Class { priority, weight, quantum, child });
    let classful = (0..KINDS.len(), prop::collection::vec(class, 2..=4), any::<Option<(usize, bool)>>(), 20..=400u64).prop_map(|(kind, classes, ll, buffer)| {
        let low_latency = ll.map(|(i, s)| (i % classes.len(), s));
        EgressSpec::Classful { kind, classes, low_latency, buffer }
    });
    if !nested {
        return classful.boxed();
    }
    prop_oneof![
        4 => classful,
        1 => (20..=400u64, 1..=64u64).prop_map(|(limit, buckets)| EgressSpec::FqCodel { limit, buckets }),
        1 => (20..=400u64, 1..=64u64, 300..=9000u64).prop_map(|(limit, buckets, quantum)| EgressSpec::Sfq { limit, buckets, quantum }),
    ]
    .boxed()
}

#[derive(Clone, Debug)]
enum Action {
    Transmit,
    LossPriorityHigh,
    Discard,
    /// Forwarding class (taken modulo the classes).
    Fclass(usize),
}

impl Action {
    fn json(&self, n: usize) -> Value {
        match self {
            Action::Transmit => json!("transmit"),
            Action::LossPriorityHigh => json!("loss_priority_high"),
            Action::Discard => json!("discard"),
            Action::Fclass(c) => json!({"fclass": c % n}),
        }
    }
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![Just(Action::Transmit), Just(Action::LossPriorityHigh), Just(Action::Discard), (0..4usize).prop_map(Action::Fclass)]
}

#[derive(Clone, Debug)]
enum PolicerSpec {
    None,
    SingleRate { cir_mbps: u64, burst: u64, out: Action },
    Srtcm { cir_mbps: u64, cbs: u64, ebs: u64, aware: bool, yellow: Action, red: Action },
    Trtcm { cir_mbps: u64, cbs: u64, extra_mbps: u64, pbs: u64, aware: bool, yellow: Action, red: Action },
}

impl PolicerSpec {
    fn json(&self, n: usize) -> Option<Value> {
        Some(match self {
            PolicerSpec::None => return None,
            PolicerSpec::SingleRate { cir_mbps, burst, out } => json!({"rate_bps": cir_mbps * MBPS, "burst_bytes": burst, "out_of_profile": out.json(n)}),
            PolicerSpec::Srtcm { cir_mbps, cbs, ebs, aware, yellow, red } => json!({
                "srtcm": {"cir_bps": cir_mbps * MBPS, "cbs_bytes": cbs, "ebs_bytes": ebs},
                "color_aware": aware, "yellow": yellow.json(n), "red": red.json(n)}),
            PolicerSpec::Trtcm { cir_mbps, cbs, extra_mbps, pbs, aware, yellow, red } => json!({
                "trtcm": {"cir_bps": cir_mbps * MBPS, "cbs_bytes": cbs, "pir_bps": (cir_mbps + extra_mbps) * MBPS, "pbs_bytes": pbs},
                "color_aware": aware, "yellow": yellow.json(n), "red": red.json(n)}),
        })
    }
}

fn policer() -> impl Strategy<Value = PolicerSpec> {
    prop_oneof![
        Just(PolicerSpec::None),
        (50..=600u64, 1500..=64_000u64, action()).prop_map(|(cir_mbps, burst, out)| PolicerSpec::SingleRate { cir_mbps, burst, out }),
        (50..=600u64, 1500..=30_000u64, 0..=60_000u64, any::<bool>(), action(), action())
            .prop_map(|(cir_mbps, cbs, ebs, aware, yellow, red)| PolicerSpec::Srtcm { cir_mbps, cbs, ebs, aware, yellow, red }),
        (50..=600u64, 1500..=30_000u64, 0..=400u64, 1500..=60_000u64, any::<bool>(), action(), action())
            .prop_map(|(cir_mbps, cbs, extra_mbps, pbs, aware, yellow, red)| PolicerSpec::Trtcm { cir_mbps, cbs, extra_mbps, pbs, aware, yellow, red }),
    ]
}

#[derive(Clone, Debug)]
struct Source {
    rate_mbps: u64,
    size: u64,
    /// None: constant bit rate; Some(exponential sizes): Poisson.
    poisson: Option<bool>,
    fclass: usize,
    policer: PolicerSpec,
}

fn source() -> impl Strategy<Value = Source> {
    (200..=900u64, prop::sample::select(vec![64u64, 576, 1500]), any::<Option<bool>>(), 0..4usize, policer())
        .prop_map(|(rate_mbps, size, poisson, fclass, policer)| Source { rate_mbps, size, poisson, fclass, policer })
}

#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    egress: EgressSpec,
    sources: Vec<Source>,
}

fn case(nested: bool) -> impl Strategy<Value = Case> {
    (0..1000u64, egress_spec(nested), prop::collection::vec(source(), 3)).prop_map(|(seed, egress, sources)| Case { seed, egress, sources })
}

/// The sources stop sending at this time.
const STOP: u64 = 300 * MS;

impl Case {
    /// Three sources U0..U2 (10.0.0.2..4) -> R -> D over a 1 Gbps
    /// bottleneck, sending until `STOP` (or the end), run for `duration_ns`.
    fn cfg(&self, duration_ns: u64) -> Cfg {
        let stop = STOP.min(duration_ns);
        let n = self.egress.classes();
        let mut cfg = Cfg::new(duration_ns, MS).seed(self.seed).host("U0").host("U1").host("U2").router("R").host("D");
        for u in ["U0", "U1", "U2"] {
            cfg = cfg.link(u, "R", 10 * GBPS, 20 * US, ETH);
        }
        cfg = cfg.link_q("R", "D", GBPS, 100 * US, ETH, self.egress.json(), fifo(Some(1000), None));
        let mut terms = Vec::new();
        for (i, (u, s)) in ["U0", "U1", "U2"].iter().zip(&self.sources).enumerate() {
            let name = format!("f{i}");
            cfg = cfg.flow(match s.poisson {
                None => udp(&name, u, "D", 0, Some(stop), s.size, s.rate_mbps * MBPS),
                Some(exp) => poisson(&name, u, "D", 0, Some(stop), s.size, s.rate_mbps * MBPS, exp),
            });
            let mut term = json!({"name": format!("t{i}"), "src": format!("10.0.0.{}/32", i + 2), "fclass": s.fclass % n});
            if let Some(p) = s.policer.json(n) {
                term["policer"] = p;
            }
            terms.push(term);
        }
        let nodes = cfg.v["nodes"].as_array_mut().unwrap();
        nodes.iter_mut().find(|node| node["name"] == "R").unwrap()["filter"] = json!(terms);
        cfg
    }
    fn smallest(&self) -> u64 {
        self.sources.iter().map(|s| s.size).min().unwrap()
    }
}

/// Every queue of every interface: in = out + dropped after admission +
/// queued, in packets and bytes; every drop has a reason. Returns the
/// queued drops seen and whether everything drained.
fn check_queues(res: &Res, what: &str) -> Result<(u64, bool), TestCaseError> {
    let qs = res.table("queue_summary");
    let (mut queued_drops, mut drained) = (0, true);
    for (i, q) in qs.strs("queue").iter().enumerate() {
        let g = |c: &str| qs.u64s(c)[i];
        prop_assert_eq!(g("enq_pkts"), g("deq_pkts") + g("drop_queued_pkts") + g("backlog_pkts"), "{} {}: enq = deq + drop_queued + backlog", what, q);
        prop_assert_eq!(g("enq_bytes"), g("deq_bytes") + g("drop_queued_bytes") + g("backlog_bytes"), "{} {}: bytes", what, q);
        prop_assert!(g("drop_queued_pkts") <= g("drop_pkts"), "{} {}: queued drops are drops", what, q);
        prop_assert_eq!(g("drop_pkts"), g("drop_tail_pkts") + g("drop_aqm_pkts") + g("drop_policer_pkts"), "{} {}: reasons", what, q);
        queued_drops += g("drop_queued_pkts");
        drained &= g("backlog_pkts") == 0;
    }
    Ok((queued_drops, drained))
}

proptest! {
    #![proptest_config(cases(12))]

    /// Conservation on every queue, at the end of a drained run and in the
    /// middle of a loaded one; per flow once drained.
    #[test]
    fn random_pipelines_conserve_packets_on_every_queue_and_flow(c in case(true)) {
        conservation(&c)?;
    }

    /// Over a whole run, an overloaded work-conserving egress sends at the
    /// link's rate whenever it starts an interval with a backlog.
    #[test]
    fn work_conserving_schedulers_keep_an_overloaded_bottleneck_busy(c in case(false)) {
        // Fixed sizes: the wire's share of IP bytes below is known (with
        // exponential sizes the small packets' framing would lower it).
        let c = Case { sources: c.sources.iter().map(|s| Source { poisson: s.poisson.map(|_| false), ..s.clone() }).collect(), ..c };
        busy_intervals(&c)?;
    }
}

/// The conservation checks of one case; (packets dropped from inside the
/// queues, packets queued in the middle of the run).
fn conservation(c: &Case) -> Result<(u64, u64), TestCaseError> {
    let what = format!("{} (seed {})", c.egress.kind(), c.seed);
    // Mid-run: the sources still send, the bottleneck is overloaded or not.
    let res = c.cfg(150 * MS).run();
    check_queues(&res, &what)?;
    let queued = res.table("queue_summary").u64s("backlog_pkts").iter().sum();
    // Drained: 300 ms after the sources stopped.
    let res = c.cfg(STOP + 300 * MS).run();
    let (queued_drops, drained) = check_queues(&res, &what)?;
    prop_assert!(drained, "{}: drained 300 ms after the sources stopped", what);
    for f in res.flow_names() {
        let (tx, rx, drop) = (res.flow(&f, "tx_pkts"), res.flow(&f, "rx_pkts"), res.flow(&f, "drop_pkts"));
        prop_assert!(tx > 0, "{} {}", what, f);
        prop_assert_eq!(tx, rx + drop, "{} {}: tx = rx + drop", what, f);
    }
    Ok((queued_drops, queued))
}

/// The work-conservation check of one case over its series; the number of
/// 1 ms intervals that started with a backlog (and so were checked).
fn busy_intervals(c: &Case) -> Result<usize, TestCaseError> {
    let res = c.cfg(600 * MS).run();
    let what = format!("{} (seed {})", c.egress.kind(), c.seed);
    // tx_bytes counts IP bytes; the wire adds 38 B of Ethernet per packet.
    let smallest = c.smallest();
    let ip_share = smallest as f64 / (smallest + ETH) as f64;
    // The egress reports one row per class, "R->D/<class>"; add them up.
    let classes: Vec<String> = res.queue_names().into_iter().filter(|q| q.starts_with("R->D/")).collect();
    prop_assert!(!classes.is_empty(), "{}: no class queues on R->D", what);
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
            prop_assert!(bits <= capacity * 1.0001, "{}: more than the link rate at {}", what, times[k]);
            prop_assert!(bits > 0.95 * ip_share * capacity, "{}: idle with a backlog at {} ns ({} bits)", what, times[k], bits);
            busy += 1;
        }
    }
    Ok(busy)
}

/// A case the properties above must not pass vacuously: three 900 Mbit/s
/// sources into 1 Gbit/s, classes with FQ-CoDel children (which drop from
/// inside their queues).
fn overloaded() -> Case {
    let class = |priority| Class { priority, weight: 3, quantum: 1500, child: Child::FqCodel { buckets: 4, interval_ms: 2 } };
    let source = |fclass| Source { rate_mbps: 900, size: 1500, poisson: None, fclass, policer: PolicerSpec::None };
    Case { seed: 1, egress: EgressSpec::Classful { kind: 4, classes: vec![class(0), class(1)], low_latency: None, buffer: 400 }, sources: vec![source(0), source(1), source(0)] }
}

#[test]
fn the_properties_see_backlogs_and_drops_from_inside_queues() {
    let (queued_drops, queued) = conservation(&overloaded()).unwrap();
    assert!(queued_drops > 0 && queued > 0, "queued drops {queued_drops}, queued mid-run {queued}");
    let mut plain = overloaded();
    if let EgressSpec::Classful { classes, .. } = &mut plain.egress {
        classes.iter_mut().for_each(|c| c.child = Child::None);
    }
    assert!(busy_intervals(&plain).unwrap() > 100);
}

// --- one egress port, exactly ---------------------------------------------------

/// Arrivals: (gap before it in ns, IP size, forwarding class, colour).
fn arrivals() -> impl Strategy<Value = Vec<(u64, u32, usize, u8)>> {
    prop::collection::vec((0..30_000u64, prop::sample::select(vec![40u32, 64, 576, 1000, 1500]), 0..4usize, 0..3u8), 1..300)
}

proptest! {
    #![proptest_config(cases(64))]

    /// Whenever the transmitter of a work-conserving egress is free and the
    /// discipline holds a packet, the discipline gives one: the port never
    /// idles with a backlog, and every packet leaves at the later of its
    /// arrival and the previous departure (the Lindley recursion of a
    /// work-conserving server, ns-3's and the simulator's transmit rule).
    #[test]
    fn a_work_conserving_egress_never_idles_with_a_backlog(spec in egress_spec(true), load in arrivals()) {
        let cfg: QueueConfig = serde_json::from_value(spec.json()).unwrap();
        let rate = DataRate::mbps(100);
        let mut port = Egress::new(build_on(&cfg, 1500, Some(rate)).unwrap(), Rng::stream(1, "prop"), rate, 38);
        let n = spec.classes();
        let (mut t, mut dropped, mut busy_until) = (0u64, vec![], 0u64);
        let mut admitted = 0u64;
        let idle_with_backlog = |port: &mut Egress, until: u64, dropped: &mut Vec<_>, busy_until: &mut u64| -> Result<(), TestCaseError> {
            while let Some(at) = port.next_tx().filter(|x| x.0 <= until) {
                prop_assert_eq!(at.0, *busy_until, "{}: the transmitter waited with a backlog", spec.kind());
                let before = port.qdisc.backlog().pkts;
                match port.transmit(at, dropped) {
                    Some((p, end)) => {
                        prop_assert_eq!(end.0, at.0 + rate.tx_time(p.size as u64 + 38).0);
                        *busy_until = end.0;
                    }
                    // Only a discipline that dropped everything it held at dequeue (CoDel) has nothing.
                    None => prop_assert_eq!(port.qdisc.backlog().pkts, 0, "{}: nothing given from {} packets held", spec.kind(), before),
                }
            }
            Ok(())
        };
        for &(gap, size, class, colour) in &load {
            t += gap;
            idle_with_backlog(&mut port, t, &mut dropped, &mut busy_until)?;
            if port.qdisc.backlog().pkts == 0 {
                busy_until = busy_until.max(t);
            }
            let mut p = Packet::test((class % 3) as u32, size);
            p.fclass = (class % n) as u8;
            p.src_port = class as u16;
            p.color = [Color::Green, Color::Yellow, Color::Red][colour as usize];
            admitted += port.enqueue(SimTime(t), p, &mut dropped).is_ok() as u64;
        }
        idle_with_backlog(&mut port, u64::MAX, &mut dropped, &mut busy_until)?;
        prop_assert_eq!(port.qdisc.backlog().pkts, 0);
        // Conservation at the port: what it admitted left or was dropped from inside.
        prop_assert_eq!(admitted, port.tx_pkts + dropped.len() as u64);
    }
}

// --- meters ------------------------------------------------------------------------

/// Packets: (gap before it in ns, IP size, pre-colour).
fn stream() -> impl Strategy<Value = Vec<(u64, u32, u8)>> {
    prop::collection::vec((0..200_000u64, 40..=9000u32, 0..3u8), 1..400)
}

fn colour(c: u8) -> Color {
    [Color::Green, Color::Yellow, Color::Red][c as usize]
}

/// Meter `packets` with `m`, checking `within` after each (at its time).
fn feed<M: Meter>(m: &mut M, packets: &[(u64, u32, u8)], within: impl Fn(&M, u64) -> Result<(), TestCaseError>) -> Result<(), TestCaseError> {
    let mut t = 0;
    for &(gap, size, pre) in packets {
        t += gap;
        m.meter(SimTime(t), size, colour(pre));
        within(m, t)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(128))]

    /// Single-rate two-colour meter: tokens within [0, burst] after every packet.
    #[test]
    fn single_rate_tokens_never_exceed_the_bucket(rate_mbps in 1..10_000u64, burst in 1..200_000u64, packets in stream()) {
        let profile = SingleRateParams { rate: DataRate::mbps(rate_mbps), burst_size: burst }.profile().unwrap();
        feed(&mut SingleRate::new(profile, ColorMode::Blind), &packets, |m, t| {
            prop_assert!(m.tokens() <= burst, "tokens {} above the bucket {} at {} ns", m.tokens(), burst, t);
            Ok(())
        })?;
    }

    /// srTCM (RFC 2697): Tc <= CBS and Te <= EBS after every packet, both modes.
    #[test]
    fn srtcm_tokens_never_exceed_the_buckets(cir_mbps in 1..10_000u64, cbs in 1..100_000u64, ebs in 0..100_000u64,
                                             aware in any::<bool>(), packets in stream()) {
        let profile = SrtcmParams { cir: DataRate::mbps(cir_mbps), cbs, ebs }.profile().unwrap();
        feed(&mut Srtcm::new(profile, if aware { ColorMode::Aware } else { ColorMode::Blind }), &packets, |m, t| {
            prop_assert!(m.tc() <= cbs && m.te() <= ebs, "Tc {} (CBS {}), Te {} (EBS {}) at {} ns", m.tc(), cbs, m.te(), ebs, t);
            Ok(())
        })?;
    }

    /// trTCM (RFC 2698): Tp <= PBS and Tc <= CBS after every packet, both modes.
    #[test]
    fn trtcm_tokens_never_exceed_the_buckets(cir_mbps in 1..5_000u64, extra_mbps in 0..5_000u64, cbs in 1..100_000u64,
                                             pbs in 1..100_000u64, aware in any::<bool>(), packets in stream()) {
        let params = TrtcmParams { cir: DataRate::mbps(cir_mbps), pir: DataRate::mbps(cir_mbps + extra_mbps), cbs, pbs };
        let Ok(profile) = params.profile() else { return Ok(()) }; // (a profile the RFC does not allow)
        feed(&mut Trtcm::new(profile, if aware { ColorMode::Aware } else { ColorMode::Blind }), &packets, |m, t| {
            prop_assert!(m.tp() <= pbs && m.tc() <= cbs, "Tp {} (PBS {}), Tc {} (CBS {}) at {} ns", m.tp(), pbs, m.tc(), cbs, t);
            Ok(())
        })?;
    }
}

// --- shares ----------------------------------------------------------------------------

proptest! {
    #![proptest_config(cases(6))]

    /// With every class backlogged, the long-run shares follow the weights:
    /// WRR (packets per round, equal sizes), DRR (quanta) and MDRR (quantum
    /// MTU + (weight - 1) x 512 B), random weights, within 2%.
    #[test]
    fn backlogged_classes_share_the_link_by_their_weights(
        kind in prop::sample::select(vec!["wrr", "drr", "mdrr"]),
        params in prop::collection::vec((1..=10u64, 1500..=9000u64), 2..=4),
        seed in 0..1000u64,
    ) {
        let n = params.len();
        let mut classes = Vec::new();
        let mut expected = Vec::new();
        for (i, &(w, q)) in params.iter().enumerate() {
            let (key, value, share) = match kind {
                "wrr" => ("weight", w.min(8), w.min(8) as f64),
                "drr" => ("quantum_bytes", q, q as f64),
                // The test links have a 9000-byte MTU.
                _ => ("weight", w, (9000 + (w - 1) * 512) as f64),
            };
            classes.push(json!({"name": format!("c{i}"), "buffer_percent": 100.0 / n as f64, key: value}));
            expected.push(share);
        }
        let total: f64 = expected.iter().sum();
        // Measured while every class is backlogged: the run ends while the
        // sources still send (a drain after they stop would favour the
        // classes with the most left queued).
        let mut cfg = Cfg::new(S, 100 * MS).seed(seed).router("R").host("D");
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
            prop_assert!((got - want).abs() < 0.02 * want, "{} class {}: share {:.4}, weight share {:.4} (served {:?})", kind, i, got, want, served);
        }
    }
}
