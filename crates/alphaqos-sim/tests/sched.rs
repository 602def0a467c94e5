//! Egress schedulers (`qos::sched`) driven on a simulated link.
//!
//! The driver plays the interface of `sim.rs`: whenever the transmitter is
//! free it asks the discipline for a packet, holds the link for the
//! packet's transmission time at the link rate, comes back at `t` on a
//! `NotBefore(t)`, and in between enqueues the arrivals of its sources in
//! time order. Sources are saturating (the class always holds a few
//! packets), constant-rate, or Poisson, with fixed or uniform random sizes
//! drawn from the crate's seeded `Rng`.
//!
//! What is measured: long-run shares against weights, quanta and transmit
//! rates (within 2%); work conservation under random arrivals; strict
//! priority and MDRR's low-latency queue; the Junos in/out-of-profile rules
//! and `exact`; MX Trio's proportional excess and `excess-priority`
//! against Juniper's example tables; per-class conservation, the
//! partitioned buffer and temporal buffers; the reordering story of the
//! Juniper document's Table I, and how a meter window changes it.

use alphaqos_sim::packet::Packet;
use alphaqos_sim::qos::fifo::Limit;
use alphaqos_sim::qos::sched::drr::Drr;
use alphaqos_sim::qos::sched::junos::{self, ExcessPriority, ExcessSharing, Junos, JunosClass, Priority, QueueParams, TransmitRate};
use alphaqos_sim::qos::sched::mdrr::{quantum_from_weight, Llq, LlqMode, Mdrr};
use alphaqos_sim::qos::sched::prio::StrictPriority;
use alphaqos_sim::qos::sched::wrr::Wrr;
use alphaqos_sim::qos::sched::{BufferSize, ClassSpec, Scheduled, Scheduler};
use alphaqos_sim::qos::{Child, Dequeued, DropReason, Qdisc, QueueCtx};
use alphaqos_sim::rng::Rng;
use alphaqos_sim::{DataRate, Duration, SimTime};

const LINK: DataRate = DataRate::gbps(10);
/// 1500 B at 10 Gbps.
const MTU_TX_NS: u64 = 1200;

#[derive(Clone, Copy, Debug)]
enum Arrivals {
    /// The class always holds at least 4 packets.
    Saturate,
    /// One packet every `gap` ns.
    Cbr(u64),
    /// Exponential gaps of mean `gap` ns.
    Poisson(f64),
}

struct Source {
    class: u8,
    arrivals: Arrivals,
    sizes: (u32, u32),
    next: u64,
    rng: Rng,
}

impl Source {
    fn new(class: u8, arrivals: Arrivals, sizes: (u32, u32), seed: u64) -> Source {
        let mut s = Source { class, arrivals, sizes, next: 0, rng: Rng::stream(seed, &format!("source:{class}")) };
        s.next = match arrivals {
            Arrivals::Poisson(_) => s.gap(),
            _ => 0,
        };
        s
    }
    fn fixed(class: u8, arrivals: Arrivals, size: u32) -> Source {
        Source::new(class, arrivals, (size, size), 1)
    }
    fn size(&mut self) -> u32 {
        let (lo, hi) = self.sizes;
        lo + (self.rng.next_u64() % (hi - lo + 1) as u64) as u32
    }
    fn gap(&mut self) -> u64 {
        match self.arrivals {
            Arrivals::Cbr(g) => g,
            Arrivals::Poisson(m) => (self.rng.exponential(m) as u64).max(1),
            Arrivals::Saturate => 0,
        }
    }
    fn timed(&self) -> bool {
        !matches!(self.arrivals, Arrivals::Saturate)
    }
}

#[derive(Debug, Default)]
struct Stats {
    offered_pkts: Vec<u64>,
    offered_bytes: Vec<u64>,
    sent_pkts: Vec<u64>,
    sent_bytes: Vec<u64>,
    /// Queueing delay (dequeue time - arrival time), worst per class, ns.
    max_delay: Vec<u64>,
    /// Dequeue calls answered NotBefore.
    waits: u64,
    /// Dequeue calls that sent nothing although the backlog was not empty.
    idle_with_backlog: u64,
    /// Time the run ended, ns.
    end: u64,
}

fn backlogs<Q: Qdisc>(q: &Q) -> Vec<u64> {
    let mut v = vec![];
    q.for_each_queue(&mut |_, _, b| v.push(b.pkts));
    v
}

fn inject<Q: Qdisc>(q: &mut Q, s: &mut Source, t: u64, st: &mut Stats, rng: &mut Rng) {
    let size = s.size();
    let mut p = Packet::test(0, size);
    p.fclass = s.class;
    p.created = SimTime(t);
    st.offered_pkts[s.class as usize] += 1;
    st.offered_bytes[s.class as usize] += size as u64;
    let mut ctx = QueueCtx::new(SimTime(t), LINK, rng);
    let _ = q.enqueue(p, &mut ctx);
}

/// Run the link until `until` ns; `hook(now, backlog before, packet)` sees
/// every packet sent.
fn drive<Q: Qdisc>(q: &mut Q, sources: &mut [Source], until: u64, hook: &mut dyn FnMut(u64, &[u64], &Packet)) -> Stats {
    let n = backlogs(q).len();
    let mut st = Stats {
        offered_pkts: vec![0; n],
        offered_bytes: vec![0; n],
        sent_pkts: vec![0; n],
        sent_bytes: vec![0; n],
        max_delay: vec![0; n],
        ..Stats::default()
    };
    let mut rng = Rng::stream(9, "qdisc");
    let mut now = 0u64;
    while now < until {
        // Timed arrivals up to now, in time order.
        loop {
            let k = (0..sources.len()).filter(|&k| sources[k].timed()).min_by_key(|&k| sources[k].next);
            match k {
                Some(k) if sources[k].next <= now => {
                    let t = sources[k].next;
                    inject(q, &mut sources[k], t, &mut st, &mut rng);
                    let g = sources[k].gap();
                    sources[k].next += g;
                }
                _ => break,
            }
        }
        // Saturating sources keep at least 4 packets queued.
        let mut b = backlogs(q);
        for s in sources.iter_mut().filter(|s| !s.timed()) {
            for _ in 0..4 {
                if b[s.class as usize] >= 4 {
                    break;
                }
                inject(q, s, now, &mut st, &mut rng);
                b[s.class as usize] += 1;
            }
        }
        let pre = backlogs(q);
        let held: u64 = pre.iter().sum();
        assert_eq!(held, q.backlog().pkts);
        let mut ctx = QueueCtx::new(SimTime(now), LINK, &mut rng);
        match q.dequeue(&mut ctx) {
            Dequeued::Packet(p) => {
                let c = p.fclass as usize;
                hook(now, &pre, &p);
                st.sent_pkts[c] += 1;
                st.sent_bytes[c] += p.size as u64;
                st.max_delay[c] = st.max_delay[c].max(now - p.created.as_nanos());
                now += LINK.tx_time(p.size as u64).as_nanos();
            }
            Dequeued::Empty => {
                if held > 0 {
                    st.idle_with_backlog += 1;
                }
                now = sources.iter().filter(|s| s.timed()).map(|s| s.next).min().unwrap_or(until).max(now + 1);
            }
            Dequeued::NotBefore(t) => {
                assert!(t.as_nanos() > now, "NotBefore({t}) at {now}ns");
                st.waits += 1;
                if held > 0 {
                    st.idle_with_backlog += 1;
                }
                now = t.as_nanos();
            }
        }
    }
    st.end = now;
    st
}

fn no_hook() -> impl FnMut(u64, &[u64], &Packet) {
    |_, _, _| {}
}

/// Per class: accepted = sent + held, offered = accepted + dropped, and the
/// drops by reason add up.
fn check_conservation<Q: Qdisc>(q: &Q, st: &Stats) {
    let mut i = 0;
    q.for_each_queue(&mut |name, c, b| {
        assert_eq!(c.enq_pkts, c.deq_pkts + b.pkts, "class {name}: enq = deq + backlog (packets)");
        assert_eq!(c.enq_bytes, c.deq_bytes + b.bytes, "class {name}: enq = deq + backlog (bytes)");
        assert_eq!(st.offered_pkts[i], c.enq_pkts + c.drop_pkts, "class {name}: offered = enq + drops");
        assert_eq!(st.offered_bytes[i], c.enq_bytes + c.drop_bytes, "class {name}: offered bytes");
        assert_eq!(st.sent_pkts[i], c.deq_pkts, "class {name}: sent");
        assert_eq!(c.drop_pkts, c.drop_reason_pkts.iter().sum::<u64>(), "class {name}: drops by reason");
        i += 1;
    });
}

fn shares(v: &[u64]) -> Vec<f64> {
    let total: u64 = v.iter().sum();
    v.iter().map(|&x| x as f64 / total as f64).collect()
}

/// Each share within 2% (relative) of its target.
fn assert_shares(got: &[f64], want: &[f64], what: &str) {
    eprintln!("{what}: got {got:.4?}, want {want:.4?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 0.02 * w, "{what}: class {i} got {g:.4}, want {w:.4} (all: {got:.4?})");
    }
}

fn classes(n: usize, limit: Limit) -> Vec<ClassSpec> {
    (0..n).map(|i| ClassSpec::new(format!("c{i}"), limit)).collect()
}

fn saturating(n: usize, sizes: (u32, u32)) -> Vec<Source> {
    (0..n).map(|i| Source::new(i as u8, Arrivals::Saturate, sizes, 7)).collect()
}

const RUN_NS: u64 = 200_000_000; // 0.2 s: ~170k MTU packets at 10 Gbps

// ---------------------------------------------------------------- shares

#[test]
fn wrr_packet_shares_follow_the_weights() {
    let w = [1u32, 2, 3, 4];
    let mut q = Scheduled::new(classes(4, Limit::UNLIMITED), Wrr::new(w.to_vec()).unwrap()).unwrap();
    let st = drive(&mut q, &mut saturating(4, (1000, 1000)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_pkts), &[0.1, 0.2, 0.3, 0.4], "wrr packets");
    check_conservation(&q, &st);
}

#[test]
fn drr_byte_shares_follow_the_quanta_whatever_the_packet_sizes() {
    let quanta = [1500u64, 3000, 4500, 6000];
    let mut q = Scheduled::new(classes(4, Limit::UNLIMITED), Drr::new(quanta.to_vec()).unwrap()).unwrap();
    // Class 0 sends large packets, class 3 small ones: the byte shares must
    // not care.
    let mut src = vec![
        Source::new(0, Arrivals::Saturate, (1000, 1500), 1),
        Source::new(1, Arrivals::Saturate, (64, 1500), 2),
        Source::new(2, Arrivals::Saturate, (500, 900), 3),
        Source::new(3, Arrivals::Saturate, (64, 300), 4),
    ];
    let st = drive(&mut q, &mut src, RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &[0.1, 0.2, 0.3, 0.4], "drr bytes");
    check_conservation(&q, &st);
}

#[test]
fn mdrr_normal_queues_share_by_quanta_under_a_strict_llq() {
    // LLQ (class 0): 200-byte voice packets at 1 Gbps (10% of the link);
    // normal queues with Cisco weights 1, 2, 4 on a 1500-byte MTU.
    let quanta: Vec<u64> = [1, 1, 2, 4].iter().map(|&w| quantum_from_weight(w, 1500).unwrap()).collect();
    let llq = Llq { class: 0, mode: LlqMode::Strict };
    let mut q = Scheduled::new(classes(4, Limit::UNLIMITED), Mdrr::new(quanta.clone(), Some(llq)).unwrap()).unwrap();
    let mut src = vec![
        Source::fixed(0, Arrivals::Cbr(1600), 200),
        Source::new(1, Arrivals::Saturate, (64, 1500), 2),
        Source::new(2, Arrivals::Saturate, (1500, 1500), 3),
        Source::new(3, Arrivals::Saturate, (40, 600), 4),
    ];
    let mut llq_late = 0;
    let st = drive(&mut q, &mut src, RUN_NS, &mut |_, pre, p| {
        if pre[0] > 0 && p.fclass != 0 {
            llq_late += 1;
        }
    });
    assert_eq!(llq_late, 0, "strict mode serves the LLQ whenever it is non-empty");
    // The LLQ gets all it offers and waits at most for the packet in flight.
    assert!(st.offered_pkts[0] - st.sent_pkts[0] <= 1);
    assert!(st.max_delay[0] <= MTU_TX_NS, "LLQ delay {}ns", st.max_delay[0]);
    let q_sum: u64 = quanta[1..].iter().sum();
    let want: Vec<f64> = quanta[1..].iter().map(|&x| x as f64 / q_sum as f64).collect();
    assert_shares(&shares(&st.sent_bytes[1..]), &want, "mdrr normal bytes");
    check_conservation(&q, &st);
}

#[test]
fn mdrr_alternate_mode_interleaves_the_llq_with_the_normal_queues() {
    // Equal quanta of one 1500-byte packet: L, n, L, n, ...; the LLQ gets
    // half the link, the three normal queues a sixth each.
    let llq = Llq { class: 3, mode: LlqMode::Alternate };
    let mut q = Scheduled::new(classes(4, Limit::UNLIMITED), Mdrr::new(vec![1500; 4], Some(llq)).unwrap()).unwrap();
    let mut last = None;
    let mut repeats = 0;
    let st = drive(&mut q, &mut saturating(4, (1500, 1500)), RUN_NS / 4, &mut |_, _, p| {
        let is_llq = p.fclass == 3;
        if last == Some(is_llq) {
            repeats += 1;
        }
        last = Some(is_llq);
    });
    assert_eq!(repeats, 0, "LLQ and normal turns alternate");
    assert_shares(&shares(&st.sent_bytes), &[1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 0.5], "mdrr alternate");
    check_conservation(&q, &st);
    // In strict mode the same load starves the normal queues.
    let llq = Llq { class: 3, mode: LlqMode::Strict };
    let mut q = Scheduled::new(classes(4, Limit::UNLIMITED), Mdrr::new(vec![1500; 4], Some(llq)).unwrap()).unwrap();
    let st = drive(&mut q, &mut saturating(4, (1500, 1500)), RUN_NS / 4, &mut no_hook());
    assert_eq!(&st.sent_pkts[..3], &[0, 0, 0]);
}

fn junos_queue(params: Vec<QueueParams>) -> Scheduled<Junos> {
    Scheduled::new(classes(params.len(), Limit::UNLIMITED), Junos::new(params).unwrap()).unwrap()
}

fn pct(p: f64, prio: Priority) -> QueueParams {
    QueueParams::new(TransmitRate::Percent(p), prio)
}

#[test]
fn junos_shares_follow_the_transmit_rates() {
    // The OSCARS example of the document (network-control, best-effort,
    // science-data, scavenger at 5/20/70/5 %), every queue backlogged, with
    // fixed and with random packet sizes.
    let params = || {
        vec![
            pct(5.0, Priority::High),
            pct(20.0, Priority::MediumLow),
            pct(70.0, Priority::MediumHigh),
            pct(5.0, Priority::Low),
        ]
    };
    let want = [0.05, 0.20, 0.70, 0.05];
    let mut q = junos_queue(params());
    let st = drive(&mut q, &mut saturating(4, (1500, 1500)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &want, "junos, 1500 B");
    check_conservation(&q, &st);
    let mut q = junos_queue(params());
    let st = drive(&mut q, &mut saturating(4, (64, 1500)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &want, "junos, 64-1500 B");
    // The document's experiment 2 allocations (alpha, beta, scavenger).
    for alloc in [[49.0, 50.0, 1.0], [30.0, 50.0, 20.0], [10.0, 30.0, 60.0]] {
        let prios = [Priority::MediumHigh, Priority::MediumLow, Priority::Low];
        let mut q = junos_queue((0..3).map(|i| pct(alloc[i], prios[i])).collect());
        let st = drive(&mut q, &mut saturating(3, (1500, 1500)), RUN_NS / 2, &mut no_hook());
        let want: Vec<f64> = alloc.iter().map(|a| a / 100.0).collect();
        assert_shares(&shares(&st.sent_bytes), &want, &format!("junos {alloc:?}"));
    }
}

#[test]
fn junos_in_profile_higher_priority_goes_first() {
    // H (medium-high, 30%) carries 10% of the link; L (low, 70%) is
    // backlogged. H is always in profile when a packet arrives, so the
    // packet goes next: it waits at most for the packet on the wire.
    let mut q = junos_queue(vec![pct(30.0, Priority::MediumHigh), pct(70.0, Priority::Low)]);
    let mut src = vec![Source::fixed(0, Arrivals::Cbr(10 * MTU_TX_NS), 1500), Source::fixed(1, Arrivals::Saturate, 1500)];
    let st = drive(&mut q, &mut src, RUN_NS, &mut no_hook());
    assert!(st.max_delay[0] <= MTU_TX_NS, "in-profile H waited {}ns", st.max_delay[0]);
    assert!(st.offered_pkts[0] - st.sent_pkts[0] <= 1);
    assert_shares(&shares(&st.sent_bytes), &[0.1, 0.9], "H at its load, L the rest");
    check_conservation(&q, &st);
}

#[test]
fn junos_queue_above_its_rate_yields_to_in_profile_queues() {
    // H (high, 20%) is backlogged: above its rate. L (low, 50%) carries 40%
    // of the link, under its rate: it stays in profile and H's excess
    // yields to it. L gets all it offers with a delay of at most two
    // packets (the one on the wire and one in-profile H packet).
    let mut q = junos_queue(vec![pct(20.0, Priority::High), pct(50.0, Priority::Low)]);
    let mut src = vec![Source::fixed(0, Arrivals::Saturate, 1500), Source::fixed(1, Arrivals::Cbr(MTU_TX_NS * 5 / 2), 1500)];
    let st = drive(&mut q, &mut src, RUN_NS, &mut no_hook());
    assert!(st.offered_pkts[1] - st.sent_pkts[1] <= 1, "L kept all it offered");
    assert!(st.max_delay[1] <= 2 * MTU_TX_NS, "L waited {}ns", st.max_delay[1]);
    assert_shares(&shares(&st.sent_bytes), &[0.6, 0.4], "H takes the rest");
    check_conservation(&q, &st);
    // The same load under plain strict priority starves L.
    let mut q = Scheduled::new(classes(2, Limit::UNLIMITED), StrictPriority::new(vec![1, 0])).unwrap();
    let mut src = vec![Source::fixed(0, Arrivals::Saturate, 1500), Source::fixed(1, Arrivals::Cbr(MTU_TX_NS * 5 / 2), 1500)];
    let st = drive(&mut q, &mut src, RUN_NS / 10, &mut no_hook());
    assert_eq!(st.sent_pkts[1], 0);
}

#[test]
fn junos_all_out_of_profile_falls_back_to_priority_order() {
    // Three backlogged queues with 10% each: each gets its 10% in profile;
    // the 70% nobody is guaranteed goes to the highest priority.
    let mut q = junos_queue(vec![pct(10.0, Priority::MediumLow), pct(10.0, Priority::MediumHigh), pct(10.0, Priority::Low)]);
    let st = drive(&mut q, &mut saturating(3, (1500, 1500)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &[0.1, 0.8, 0.1], "excess by priority");
    // Equal priorities share the excess by round robin.
    let mut q = junos_queue(vec![pct(10.0, Priority::High), pct(10.0, Priority::High), pct(10.0, Priority::Low)]);
    let st = drive(&mut q, &mut saturating(3, (1500, 1500)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &[0.45, 0.45, 0.1], "excess by round robin");
}

fn trio_queue(params: Vec<QueueParams>) -> Scheduled<Junos> {
    Scheduled::new(classes(params.len(), Limit::UNLIMITED), Junos::new(params).unwrap().excess(ExcessSharing::Proportional).unwrap()).unwrap()
}

/// Throughput of each class over the run, bit/s.
fn rates_bps(st: &Stats) -> Vec<f64> {
    st.sent_bytes.iter().map(|&b| b as f64 * 8e9 / st.end as f64).collect()
}

fn assert_rates(got: &[f64], want_bps: &[f64], what: &str) {
    eprintln!("{what}: got {:.0?} Mbps", got.iter().map(|g| g / 1e6).collect::<Vec<_>>());
    for (i, (g, w)) in got.iter().zip(want_bps).enumerate() {
        assert!((g - w).abs() <= 0.02 * w, "{what}: class {i} got {:.1} Mbps, want {:.1}", g / 1e6, w / 1e6);
    }
}

#[test]
fn junos_proportional_excess_follows_the_transmit_rates() {
    // Two low queues of 10 % and 30 %, both backlogged: the 60 % nobody is
    // guaranteed goes 1:3 on MX Trio (10 + 15, 30 + 45), evenly by round
    // robin in the document's priority model (10 + 30, 30 + 30).
    let p = || vec![pct(10.0, Priority::Low), pct(30.0, Priority::Low)];
    let st = drive(&mut trio_queue(p()), &mut saturating(2, (1500, 1500)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &[0.25, 0.75], "proportional excess");
    let st = drive(&mut junos_queue(p()), &mut saturating(2, (1500, 1500)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &[0.4, 0.6], "excess by round robin");
    // excess-rate percent replaces the transmit rate as the weight: 3:1.
    let p = vec![pct(10.0, Priority::Low).excess_rate(60.0), pct(30.0, Priority::Low).excess_rate(20.0)];
    let mut q = trio_queue(p);
    let st = drive(&mut q, &mut saturating(2, (64, 1500)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &[0.55, 0.45], "excess-rate 60:20");
    check_conservation(&q, &st);
    // It is a weight of the proportional sharing only.
    assert!(Junos::new(vec![pct(10.0, Priority::Low).excess_rate(5.0)]).unwrap().excess(ExcessSharing::Priority).is_err());
}

/// Juniper, "Excess Rate and Excess Priority Configuration Examples"
/// (Junos OS Class of Service guide), Tables 1 and 2, on a 10 Gbps link
/// (the tables' 1 Gbps port, every rate x 10).
#[test]
fn junos_proportional_excess_reproduces_junipers_example_tables() {
    let cbr = |class: u8, gbps: f64| Source::fixed(class, Arrivals::Cbr((1500.0 * 8.0 / gbps).round() as u64), 1500);
    let run = RUN_NS / 4;
    // Table 1: Q0 20 % high, Q1 10 % high, Q2 10 % low, Q3 5 % low offered
    // 6, 5, 5, 5: "200 + 366.67", "100 + 183.33", "100 + 0", "50 + 0".
    let t1 = || vec![pct(20.0, Priority::High), pct(10.0, Priority::High), pct(10.0, Priority::Low), pct(5.0, Priority::Low)];
    let offered = |a| vec![cbr(0, a), cbr(1, 5.0), cbr(2, 5.0), cbr(3, 5.0)];
    let st = drive(&mut trio_queue(t1()), &mut offered(6.0), run, &mut no_hook());
    assert_rates(&rates_bps(&st), &[5.6667e9, 2.8333e9, 1e9, 0.5e9], "Juniper Table 1");
    // The document's model gives Q0 and Q1 the same excess.
    let st = drive(&mut junos_queue(t1()), &mut offered(6.0), run, &mut no_hook());
    assert_rates(&rates_bps(&st), &[4.75e9, 3.75e9, 1e9, 0.5e9], "Table 1 load, excess by round robin");
    // Table 2: the same rates, all high, each offered 5: "200 + 244.44",
    // "100 + 122.22", "100 + 122.22", "50 + 61.11".
    let t2 = vec![pct(20.0, Priority::High), pct(10.0, Priority::High), pct(10.0, Priority::High), pct(5.0, Priority::High)];
    let st = drive(&mut trio_queue(t2), &mut offered(5.0), run, &mut no_hook());
    assert_rates(&rates_bps(&st), &[4.4444e9, 2.2222e9, 2.2222e9, 1.1111e9], "Juniper Table 2");
}

#[test]
fn junos_excess_priority_levels_and_none() {
    // Trio: a low queue with excess-priority high (EH) takes the excess
    // before a high queue with excess-priority low (EL).
    let st = drive(
        &mut trio_queue(vec![pct(10.0, Priority::Low).excess_priority(ExcessPriority::High), pct(10.0, Priority::High).excess_priority(ExcessPriority::Low)]),
        &mut saturating(2, (1500, 1500)),
        RUN_NS,
        &mut no_hook(),
    );
    assert_shares(&shares(&st.sent_bytes), &[0.9, 0.1], "EH before EL");
    // Default levels: high is EH, medium-high EL.
    let st = drive(&mut trio_queue(vec![pct(10.0, Priority::MediumHigh), pct(10.0, Priority::High)]), &mut saturating(2, (1500, 1500)), RUN_NS, &mut no_hook());
    assert_shares(&shares(&st.sent_bytes), &[0.1, 0.9], "high EH, medium-high EL");
    // In the priority model, excess-priority replaces the priority.
    let st = drive(
        &mut junos_queue(vec![pct(10.0, Priority::High).excess_priority(ExcessPriority::Low), pct(10.0, Priority::MediumLow)]),
        &mut saturating(2, (1500, 1500)),
        RUN_NS,
        &mut no_hook(),
    );
    assert_shares(&shares(&st.sent_bytes), &[0.1, 0.9], "excess at excess-priority low");
    // excess-priority none: never demoted. A 10 % medium-high queue keeps
    // its priority above its rate; the high queue gets only its 50 %.
    for (sharing, q) in [("trio", trio_queue as fn(Vec<QueueParams>) -> Scheduled<Junos>), ("priority", junos_queue)] {
        let mut q = q(vec![pct(10.0, Priority::MediumHigh).excess_priority(ExcessPriority::None), pct(50.0, Priority::High)]);
        let st = drive(&mut q, &mut saturating(2, (1500, 1500)), RUN_NS, &mut no_hook());
        assert_shares(&shares(&st.sent_bytes), &[0.5, 0.5], &format!("{sharing}: excess-priority none"));
    }
}

#[test]
fn junos_strict_high_is_always_first() {
    // Strict-high with a 5% transmit rate carrying 30%: served whenever it
    // has a packet, in or out of profile.
    let mut q = junos_queue(vec![pct(5.0, Priority::StrictHigh), pct(95.0, Priority::High)]);
    let mut src = vec![Source::fixed(0, Arrivals::Poisson(4.0 * MTU_TX_NS as f64), 1500), Source::fixed(1, Arrivals::Saturate, 1500)];
    let mut late = 0;
    let st = drive(&mut q, &mut src, RUN_NS / 2, &mut |_, pre, p| late += (pre[0] > 0 && p.fclass != 0) as u32);
    assert_eq!(late, 0);
    assert!(st.offered_pkts[0] - st.sent_pkts[0] <= 1);
}

/// Bytes sent by `class` in every window of `w` ns never exceed
/// `rate * w + slack`.
fn assert_never_above(sent: &[(u64, u64)], rate: DataRate, w: u64, slack: u64) {
    let mut lo = 0;
    let mut in_window = 0u64;
    for hi in 0..sent.len() {
        in_window += sent[hi].1;
        while sent[hi].0 - sent[lo].0 > w {
            in_window -= sent[lo].1;
            lo += 1;
        }
        let allowed = rate.bytes_in(alphaqos_sim::Duration(w)) + slack;
        assert!(in_window <= allowed, "{in_window} B in {w}ns at t={}ns, allowed {allowed}", sent[hi].0);
    }
}

#[test]
fn junos_exact_queue_never_exceeds_its_rate() {
    // E (high, 30%, exact) and B (low, 10%) both backlogged: E gets its 30%
    // and no more; B takes the rest although its priority is lower.
    let mut q = junos_queue(vec![pct(30.0, Priority::High).exact(), pct(10.0, Priority::Low)]);
    let mut e_sent = vec![];
    let st = drive(&mut q, &mut saturating(2, (64, 1500)), RUN_NS, &mut |now, _, p| {
        if p.fclass == 0 {
            e_sent.push((now, p.size as u64));
        }
    });
    assert_shares(&shares(&st.sent_bytes), &[0.3, 0.7], "exact E, work-conserving B");
    // Burst 1500 B plus one packet of overdraw.
    for w in [10_000, 100_000, 1_000_000, 10_000_000] {
        assert_never_above(&e_sent, DataRate::gbps(3), w, 1500 + 1500);
    }
    check_conservation(&q, &st);

    // E alone: the link idles rather than exceed 30%; the scheduler answers
    // NotBefore.
    let mut q = junos_queue(vec![pct(30.0, Priority::High).exact(), pct(10.0, Priority::Low)]);
    let mut e_sent = vec![];
    let mut src = vec![Source::new(0, Arrivals::Saturate, (64, 1500), 3)];
    let st = drive(&mut q, &mut src, RUN_NS, &mut |now, _, p| e_sent.push((now, p.size as u64)));
    assert!(st.waits > 0);
    let rate = st.sent_bytes[0] as f64 * 8.0 / (st.end as f64 * 1e-9);
    assert!((rate / 3e9 - 1.0).abs() < 0.02, "exact rate {rate}");
    for w in [10_000, 100_000, 1_000_000, 10_000_000, RUN_NS] {
        assert_never_above(&e_sent, DataRate::gbps(3), w, 1500 + 1500);
    }
}

// ------------------------------------------------------ work conservation

/// Every work-conserving scheduler, under random Poisson arrivals to every
/// class at a load around 1, sends a packet whenever it holds one; small
/// buffers make it drop too, and the books still balance.
#[test]
fn work_conserving_schedulers_never_idle_with_a_backlog() {
    type Make = fn() -> Box<dyn Scheduler>;
    let makers: Vec<(&str, Make)> = vec![
        ("prio", || Box::new(StrictPriority::new(vec![0, 3, 1, 2]))),
        ("wrr", || Box::new(Wrr::new(vec![1, 4, 2, 3]).unwrap())),
        ("drr", || Box::new(Drr::new(vec![1500, 500, 9000, 64]).unwrap())),
        ("mdrr", || Box::new(Mdrr::new(vec![1500, 3000, 4500, 1500], None).unwrap())),
        ("mdrr-strict", || Box::new(Mdrr::new(vec![1500, 3000, 4500, 1500], Some(Llq { class: 1, mode: LlqMode::Strict })).unwrap())),
        ("mdrr-alternate", || Box::new(Mdrr::new(vec![1500, 3000, 4500, 200], Some(Llq { class: 3, mode: LlqMode::Alternate })).unwrap())),
        ("junos", || {
            Box::new(
                Junos::new(vec![
                    pct(10.0, Priority::Low),
                    pct(20.0, Priority::MediumHigh),
                    pct(30.0, Priority::StrictHigh),
                    QueueParams::new(TransmitRate::Remainder, Priority::High),
                ])
                .unwrap(),
            )
        }),
    ];
    for (name, make) in makers {
        for (seed, load) in [(1u64, 0.7), (2, 1.0), (3, 1.3)] {
            let mut q = Scheduled::new(classes(4, Limit::from_opts(Some(20), Some(20_000))), make()).unwrap();
            // Mean size 782 B: 4 classes at load/4 each.
            let mean_gap = 4.0 * LINK.tx_time(782).as_nanos() as f64 / load;
            let mut src: Vec<Source> = (0..4).map(|c| Source::new(c, Arrivals::Poisson(mean_gap), (64, 1500), seed * 10 + c as u64)).collect();
            let st = drive(&mut q, &mut src, RUN_NS / 4, &mut no_hook());
            assert_eq!(st.idle_with_backlog, 0, "{name} idled with a backlog (load {load})");
            assert_eq!(st.waits, 0, "{name} answered NotBefore");
            assert!(st.sent_pkts.iter().sum::<u64>() > 10_000);
            if load > 1.0 {
                assert!(st.offered_pkts.iter().sum::<u64>() > st.sent_pkts.iter().sum::<u64>() + 1000, "{name}: overload drops");
            }
            check_conservation(&q, &st);
        }
    }
}

#[test]
fn strict_priority_starves_lower_classes_exactly_while_higher_is_backlogged() {
    let mut q = Scheduled::new(classes(3, Limit::from_opts(Some(50), None)), StrictPriority::new(vec![2, 1, 0])).unwrap();
    // Classes 0 and 1 at 40% of the link each (mean size 782 B), class 2
    // backlogged.
    let gap = LINK.tx_time(782).as_nanos() as f64 / 0.4;
    let mut src = vec![
        Source::new(0, Arrivals::Poisson(gap), (64, 1500), 1),
        Source::new(1, Arrivals::Poisson(gap), (64, 1500), 2),
        Source::new(2, Arrivals::Saturate, (64, 1500), 3),
    ];
    let mut wrong = 0;
    let st = drive(&mut q, &mut src, RUN_NS / 4, &mut |_, pre, p| {
        let top = (0..3).find(|&c| pre[c] > 0).unwrap();
        wrong += (p.fclass as usize != top) as u32;
    });
    assert_eq!(wrong, 0, "always the highest backlogged class");
    assert!(st.sent_pkts.iter().all(|&n| n > 1000), "{:?}", st.sent_pkts);
    assert_eq!(st.idle_with_backlog, 0);
    check_conservation(&q, &st);
}

// ----------------------------------------------------------------- buffer

#[test]
fn buffer_shares_are_strictly_partitioned() {
    // Junos buffer-size percent 25 / 75 of a 40-packet interface buffer.
    let buf = Limit::from_opts(Some(40), None);
    let c = |name: &str, p: f64, prio| JunosClass {
        name: name.into(),
        scheduler: QueueParams::new(TransmitRate::Percent(p), prio),
        buffer_size: BufferSize::Percent(p),
        child: Child::Fifo(None),
    };
    let mut q = junos::scheduled(vec![c("be", 25.0, Priority::Low), c("alpha", 75.0, Priority::MediumHigh)], buf).unwrap();
    let mut rng = Rng::stream(1, "buf");
    let mut ctx = QueueCtx::new(SimTime::ZERO, LINK, &mut rng);
    let pkt = |class: u8| {
        let mut p = Packet::test(0, 1500);
        p.fclass = class;
        p
    };
    let mut drops = [0u64; 2];
    for _ in 0..15 {
        if let Err((_, r)) = q.enqueue(pkt(0), &mut ctx) {
            assert_eq!(r, DropReason::Tail);
            drops[0] += 1;
        }
    }
    // be holds its 10 and drops 5 while alpha, empty, has all its 30.
    assert_eq!(drops[0], 5);
    for _ in 0..30 {
        q.enqueue(pkt(1), &mut ctx).unwrap();
    }
    assert!(q.enqueue(pkt(1), &mut ctx).is_err());
    assert_eq!(backlogs(&q), vec![10, 30]);
    let mut names = vec![];
    q.for_each_queue(&mut |n, c, _| names.push((n.to_string(), c.drop_reason_pkts[DropReason::Tail as usize])));
    assert_eq!(names, vec![("be".to_string(), 5), ("alpha".to_string(), 1)]);
}

#[test]
fn temporal_buffer_holds_the_bytes_its_rate_sends_in_that_time() {
    // buffer-size temporal 1 ms on a 10 % queue of 10 Gbps: 125,000 B,
    // whatever the interface buffer; the 90 % queue keeps its percent.
    let buf = Limit::from_opts(Some(40), None);
    let c = |name: &str, p: f64, b| JunosClass {
        name: name.into(),
        scheduler: QueueParams::new(TransmitRate::Percent(p), Priority::Low),
        buffer_size: b,
        child: Child::Fifo(None),
    };
    let classes = || vec![c("t", 10.0, BufferSize::Temporal(Duration::from_millis(1))), c("p", 90.0, BufferSize::Percent(50.0))];
    assert!(junos::scheduled(classes(), buf).is_err(), "temporal needs the link rate");
    let mut q = junos::scheduled_on(classes(), buf, Some(LINK), ExcessSharing::Priority).unwrap();
    assert_eq!(q.classes()[0].limit(), Limit { pkts: u64::MAX, bytes: 125_000 });
    assert_eq!(q.classes()[1].limit().pkts, 20);
    let mut rng = Rng::stream(1, "temporal");
    let mut ctx = QueueCtx::new(SimTime::ZERO, LINK, &mut rng);
    let mut held = 0;
    while q.enqueue({ let mut p = Packet::test(0, 1000); p.fclass = 0; p }, &mut ctx).is_ok() {
        held += 1;
    }
    assert_eq!(held, 125);
}

// ------------------------------------------- the document's Table I story

/// Yan et al., CTRQ 2013, Section III-C, explanation of Table I: a burst of
/// in-profile TCP packets reaches the alpha queue (medium-high) while the
/// same flow's out-of-profile packets wait in the scavenger queue (low) and
/// UDP traffic uses the beta queue (medium-low). With (49,50,1) the alpha
/// queue stays in profile or wins the excess by priority, so the flow
/// leaves in order; with (10,30,60) the alpha queue turns out of profile
/// after its first packets and the in-profile scavenger queue overtakes it:
/// the flow's packets leave out of order.
#[test]
fn junos_reproduces_the_reordering_the_document_explains() {
    let order = |alloc: [f64; 3], window: Option<Duration>| -> Vec<u64> {
        let prios = [Priority::MediumHigh, Priority::MediumLow, Priority::Low];
        let with = |q: QueueParams| match window {
            Some(w) => q.meter_window(w),
            None => q,
        };
        let mut q = junos_queue((0..3).map(|i| with(pct(alloc[i], prios[i]))).collect());
        let mut rng = Rng::stream(1, "table1");
        let mut ctx = QueueCtx::new(SimTime::ZERO, LINK, &mut rng);
        let mut put = |class: u8, flow: u32, seq: u64, ctx: &mut QueueCtx| {
            let mut p = Packet::test(flow, 1500);
            p.fclass = class;
            p.payload = alphaqos_sim::packet::Payload::Udp { seq };
            q.enqueue(p, ctx).unwrap();
        };
        for seq in 0..5 {
            put(0, 1, seq, &mut ctx); // in profile at the policer: alpha
        }
        for seq in 5..10 {
            put(2, 1, seq, &mut ctx); // out of profile: scavenger
        }
        for seq in 0..10 {
            put(1, 2, seq, &mut ctx); // UDP: beta
        }
        let mut tcp = vec![];
        let mut now = 0;
        loop {
            ctx.now = SimTime(now);
            match q.dequeue(&mut ctx) {
                Dequeued::Packet(p) => {
                    if let (1, alphaqos_sim::packet::Payload::Udp { seq }) = (p.flow, p.payload) {
                        tcp.push(seq);
                    }
                    now += MTU_TX_NS;
                }
                _ => break,
            }
        }
        tcp
    };
    assert_eq!(order([49.0, 50.0, 1.0], None), (0..10).collect::<Vec<u64>>());
    let reordered = order([10.0, 30.0, 60.0], None);
    assert_ne!(reordered, (0..10).collect::<Vec<u64>>(), "{reordered:?}");
    eprintln!("(10,30,60) departure order of the TCP flow: {reordered:?}");
    // A 12 us meter window gives the 10 % alpha queue 1 Gbps x 12 us =
    // 1500 B, one packet as by default (the other queues get deeper
    // buckets, 4,500 and 9,000 B): still out of order; with 100 us
    // (12,500 B) the whole burst of 5 leaves in profile, in order.
    let short = order([10.0, 30.0, 60.0], Some(Duration::from_micros(12)));
    assert_ne!(short, (0..10).collect::<Vec<u64>>(), "{short:?}");
    assert_eq!(order([10.0, 30.0, 60.0], Some(Duration::from_micros(100))), (0..10).collect::<Vec<u64>>());
}
