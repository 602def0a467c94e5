//! Cisco MDRR: modified deficit round robin with a low-latency queue.
//!
//! What it models: the egress scheduler of the Cisco 12000 series (GSR), as
//! described in Cisco's "Understanding and Configuring MDRR and WRED on the
//! Cisco 12000 Series Internet Router" (Document ID 18841, section "MDRR
//! Overview" and "MDRR Priority Queue") and the "Cisco 12000 Series Internet
//! Router: Frequently Asked Questions" that Bouras and Sevasti cite as \[4\]
//! ("Performance analysis for a DiffServ-enabled network: The case of
//! Relative Service": Section 4, where MDRR weights (and so quanta) set the
//! service rate `r` of the Relative queue, eq. (1) `r > sum r_i`; Section 5,
//! whose experiments serve the high-priority queue in MDRR strict-priority
//! mode and vary `weight_REL` over 10, 20, 30). The worked example of
//! Vegesna, "IP Quality of Service" (Cisco Press, 2001), Chapter 5, "MDRR",
//! fixes the deficit details.
//!
//! Normal queues: deficit round robin over the backlogged queues, with the
//! MDRR rule for a turn (Cisco 18841 and Vegesna):
//!
//! - each turn adds the queue's quantum to its deficit counter;
//! - the queue sends while its deficit is *greater than zero*, so the last
//!   packet of a turn may take the deficit below zero; the next turn starts
//!   from that negative value, which is how MDRR pays back what it overdrew
//!   (Shreedhar and Varghese's DRR, [`super::drr`], instead sends a packet
//!   only if it fits in the deficit);
//! - a queue that empties has its deficit reset to zero.
//!
//! With every normal queue backlogged, queue `i` gets `Q_i / sum(Q)` of the
//! bytes the normal queues send. Cisco derives the quantum from a weight:
//! `quantum = MTU + (weight - 1) * 512` bytes ([`quantum_from_weight`]),
//! so a turn always sends at least one packet.
//!
//! The low-latency queue (LLQ), optional, runs in one of two modes
//! (Cisco 18841, "MDRR Priority Queue"):
//!
//! - [`LlqMode::Strict`]: served whenever it is non-empty, before any normal
//!   queue; it can starve them. Its quantum is not used.
//! - [`LlqMode::Alternate`]: service alternates between the LLQ and the
//!   normal queues: one LLQ turn (its quantum, with the same deficit rule),
//!   then one normal queue's turn, then the LLQ again, and so on; with the
//!   LLQ empty the normal queues go round as usual, with the normal queues
//!   empty the LLQ keeps the link. Only a normal turn that sent something
//!   counts as one for the alternation.
//!
//! Work-conserving in both modes.
//!
//! Simplifications: one MDRR per interface (the GSR also runs one per
//! destination slot towards the fabric, not modelled); the GSR maps IP
//! precedence to queues, here the classifier's `fclass` does.
//!
//! Parameters: `quanta[i]` in bytes per turn (>= 1, e.g. from
//! [`quantum_from_weight`] with weight 1..=2048 and the interface MTU);
//! `llq`: `None` (default) or the LLQ's class index and mode.
//!
//! Tests: the alternate-mode sequence and the deficit arithmetic below;
//! `tests/sched.rs`: normal-queue byte shares within 2% of the quanta with
//! a strict LLQ carrying constant-rate traffic, the strict LLQ served
//! whenever non-empty (and its delay at most one packet on the wire),
//! alternate mode interleaving turn by turn
//! with a 50/50 split at equal quanta, and work conservation.

use crate::knob::{KnobCtx, KnobError, KnobOp, KnobResult};
use super::drr::{DeficitRing, Step};
use super::{ClassQueue, Pick, Scheduler};
use crate::time::SimTime;
use crate::units::DataRate;
use crate::error::ConfigError;

/// How the low-latency queue shares the link with the normal queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlqMode {
    /// Always first while non-empty.
    Strict,
    /// One LLQ turn, one normal queue's turn, alternately.
    Alternate,
}

/// The low-latency queue: its class index and mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Llq {
    pub class: usize,
    pub mode: LlqMode,
}

/// Cisco 12000's quantum of a queue of weight `weight` (1..=2048) on an
/// interface of MTU `mtu` bytes: `MTU + (weight - 1) * 512` bytes
/// (Cisco 18841, "MDRR Overview").
pub fn quantum_from_weight(weight: u32, mtu: u32) -> Result<u64, ConfigError> {
    if !(1..=2048).contains(&weight) {
        return Err(ConfigError::new(format!("an MDRR weight must be in 1..=2048, got {weight}")));
    }
    Ok(mtu as u64 + (weight as u64 - 1) * 512)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Llq,
    Normal,
}

#[derive(Clone, Debug)]
pub struct Mdrr {
    n: usize,
    ring: DeficitRing,
    llq: Option<Llq>,
    llq_quantum: i64,
    /// The LLQ's deficit counter (alternate mode), bytes.
    llq_deficit: i64,
    llq_in_turn: bool,
    phase: Phase,
}

impl Mdrr {
    /// `quanta[i]`: bytes per turn of class `i` (>= 1; for the LLQ used in
    /// alternate mode only). `llq`: the low-latency queue, if any.
    /// A problem is located at the class (`classes[1]`).
    pub fn new(quanta: Vec<u64>, llq: Option<Llq>) -> Result<Self, ConfigError> {
        let n = quanta.len();
        if let Some(i) = quanta.iter().position(|&q| q == 0 || q > u32::MAX as u64) {
            return Err(ConfigError::at(i, format!("the quantum must be in 1..=4294967295 bytes, got {}", quanta[i])).with_outer("classes"));
        }
        if let Some(l) = llq {
            if l.class >= n {
                return Err(ConfigError::at("classes", format!("low-latency queue {} out of range (0..{n})", l.class)));
            }
        }
        let llq_quantum = llq.map_or(0, |l| quanta[l.class] as i64);
        let mut ring_quanta = quanta;
        if let Some(l) = llq {
            ring_quanta[l.class] = 0; // never joins the ring
        }
        Ok(Mdrr {
            n,
            ring: DeficitRing::new(ring_quanta, true),
            llq,
            llq_quantum,
            llq_deficit: 0,
            llq_in_turn: false,
            phase: Phase::Llq,
        })
    }

    /// The deficit counter of `class` in bytes (may be negative).
    pub fn deficit(&self, class: usize) -> i64 {
        match self.llq {
            Some(l) if l.class == class => self.llq_deficit,
            _ => self.ring.deficit(class),
        }
    }

    fn is_llq(&self, class: usize) -> bool {
        self.llq.is_some_and(|l| l.class == class)
    }

    fn select_alternate(&mut self, l: usize, classes: &[ClassQueue]) -> usize {
        loop {
            if self.phase == Phase::Llq {
                if !classes[l].is_empty() {
                    if !self.llq_in_turn {
                        self.llq_deficit += self.llq_quantum;
                        self.llq_in_turn = true;
                    }
                    if self.llq_deficit <= 0 && self.ring.is_empty() {
                        // Alone: the turns that would send nothing follow one
                        // another with nobody in between; run them at once.
                        let k = -self.llq_deficit / self.llq_quantum + 1;
                        self.llq_deficit += k * self.llq_quantum;
                    }
                    if self.llq_deficit > 0 {
                        return l;
                    }
                    self.llq_in_turn = false; // a turn that sends nothing
                }
                self.phase = Phase::Normal;
            }
            if self.ring.is_empty() {
                self.phase = Phase::Llq;
                continue;
            }
            match self.ring.step(classes) {
                Step::Serve(i) => return i,
                Step::TurnOver { sent } => {
                    if sent && !classes[l].is_empty() {
                        self.phase = Phase::Llq;
                    }
                }
            }
        }
    }
}

impl Scheduler for Mdrr {
    fn num_classes(&self) -> usize {
        self.n
    }

    fn select(&mut self, classes: &[ClassQueue], _now: SimTime, _link_rate: DataRate) -> Pick {
        Pick::Serve(match self.llq {
            None => self.ring.select(classes),
            Some(Llq { class: l, mode: LlqMode::Strict }) => {
                if !classes[l].is_empty() {
                    l
                } else {
                    self.ring.select(classes)
                }
            }
            Some(Llq { class: l, mode: LlqMode::Alternate }) => self.select_alternate(l, classes),
        })
    }

    fn on_sent(&mut self, class: usize, bytes: u32, _now: SimTime, _link_rate: DataRate) {
        if self.is_llq(class) {
            self.llq_deficit -= bytes as i64;
            if self.llq_deficit <= 0 {
                // The LLQ's turn is over (alternate mode; unused in strict).
                self.llq_in_turn = false;
                self.phase = Phase::Normal;
            }
        } else {
            self.ring.on_sent(class, bytes);
        }
    }

    fn on_arrival(&mut self, class: usize, _now: SimTime) {
        if !self.is_llq(class) {
            self.ring.on_arrival(class);
        }
    }

    fn on_empty(&mut self, class: usize, _now: SimTime) {
        if self.is_llq(class) {
            self.llq_deficit = 0;
            if self.llq_in_turn {
                self.llq_in_turn = false;
                self.phase = Phase::Normal;
            }
        } else if self.ring.on_empty(class) {
            // The normal queue whose turn it was sent its last packet: its
            // turn is over, the LLQ's comes next.
            self.phase = Phase::Llq;
        }
    }
    /// `quantum_bytes`: a normal class's quantum from its next turn on
    /// (Cisco's weight w is the quantum MTU + (w - 1) 512 bytes); the
    /// low-latency queue's in alternate mode.
    fn knob(&mut self, class: usize, name: &str, op: KnobOp, _ctx: KnobCtx) -> KnobResult {
        if name != "quantum_bytes" {
            return Err(KnobError::Unknown);
        }
        let is_llq = self.llq.is_some_and(|l| l.class == class);
        let old = if is_llq { self.llq_quantum as f64 } else { self.ring.quanta[class] as f64 };
        if let KnobOp::Set(v) = op {
            if !(1.0..=u32::MAX as f64).contains(&v) || v.fract() != 0.0 {
                return Err(KnobError::Invalid(format!("quantum_bytes = {v}: must be a whole number of bytes in 1..=4294967295")));
            }
            if is_llq {
                self.llq_quantum = v as i64;
            } else {
                self.ring.quanta[class] = v as _;
            }
        }
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use crate::qos::fifo::Limit;
    use crate::qos::sched::{ClassSpec, Scheduled};
    use crate::qos::{Dequeued, Qdisc, QueueCtx};
    use crate::rng::Rng;

    fn queue(n: usize, s: Mdrr) -> Scheduled<Mdrr> {
        let specs = (0..n).map(|i| ClassSpec::new(format!("q{i}"), Limit::UNLIMITED)).collect();
        Scheduled::new(specs, s).unwrap()
    }

    fn load(q: &mut Scheduled<Mdrr>, ctx: &mut QueueCtx, class: u8, sizes: &[u32]) {
        for &s in sizes {
            let mut p = Packet::test(0, s);
            p.fclass = class;
            q.enqueue(p, ctx).unwrap();
        }
    }

    fn drain(q: &mut Scheduled<Mdrr>, ctx: &mut QueueCtx) -> Vec<u8> {
        std::iter::from_fn(|| match q.dequeue(ctx) {
            Dequeued::Packet(p) => Some(p.fclass),
            _ => None,
        })
        .collect()
    }

    #[test]
    fn the_quantum_knob_changes_the_shares() {
        // Equal quanta, then class 0's tripled: 3 packets of class 0 per 1 of class 1.
        let mut q = queue(2, Mdrr::new(vec![1500, 1500], None).unwrap());
        let mut rng = Rng::stream(1, "mdrr-knob");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let kctx = KnobCtx { now: SimTime::ZERO, link_rate: DataRate::gbps(1) };
        assert_eq!(q.knob("q0", "quantum_bytes", KnobOp::Set(4500.0), kctx), Ok(1500.0));
        assert!(matches!(q.knob("q0", "quantum_bytes", KnobOp::Set(0.0), kctx), Err(KnobError::Invalid(_))));
        load(&mut q, &mut ctx, 0, &[1500; 9]);
        load(&mut q, &mut ctx, 1, &[1500; 3]);
        let order = drain(&mut q, &mut ctx);
        assert_eq!(&order[..8], &[0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn quantum_follows_the_cisco_formula() {
        assert_eq!(quantum_from_weight(1, 4470).unwrap(), 4470);
        assert_eq!(quantum_from_weight(10, 1500).unwrap(), 1500 + 9 * 512);
        assert!(quantum_from_weight(0, 1500).is_err());
        assert!(Mdrr::new(vec![1500, 1500], Some(Llq { class: 2, mode: LlqMode::Strict })).is_err());
        assert!(Mdrr::new(vec![1500, 0], None).is_err());
    }

    #[test]
    fn deficits_overdraw_and_pay_back() {
        // Vegesna's example in spirit: quantum 1500; queue 0 holds 1000,
        // 1500, queue 1 holds 1500, 500, 1500.
        let mut rng = Rng::stream(3, "mdrr");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let mut q = queue(2, Mdrr::new(vec![1500, 1500], None).unwrap());
        load(&mut q, &mut ctx, 0, &[1000, 1500]);
        load(&mut q, &mut ctx, 1, &[1500, 500, 1500]);
        // Turn 0: DC 1500 -> sends 1000 (500 > 0) -> sends 1500 (-1000), empties: reset to 0.
        // Turn 1: DC 1500 -> sends 1500 (0): turn over. Turn 1 again: DC 1500 -> 500, 1500 (-500).
        assert_eq!(drain(&mut q, &mut ctx), vec![0, 0, 1, 1, 1]);
        assert_eq!(q.scheduler().deficit(0), 0);
        assert_eq!(q.scheduler().deficit(1), 0);
        // Overdraw paid back: queue 0 sends 1000-byte packets, queue 1
        // 1500-byte ones, quanta 1500. Queue 0's turns alternate between two
        // packets (1500 -> 500 -> -500) and one (-500 + 1500 = 1000 -> 0).
        load(&mut q, &mut ctx, 0, &[1000; 6]);
        load(&mut q, &mut ctx, 1, &[1500; 6]);
        assert_eq!(drain(&mut q, &mut ctx), vec![0, 0, 1, 0, 1, 0, 0, 1, 0, 1, 1, 1]);
    }

    #[test]
    fn alternate_mode_interleaves_turns() {
        let mut rng = Rng::stream(3, "mdrr");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let llq = Llq { class: 2, mode: LlqMode::Alternate };
        let mut q = queue(3, Mdrr::new(vec![1500, 3000, 1500], Some(llq)).unwrap());
        load(&mut q, &mut ctx, 0, &[1500; 4]);
        load(&mut q, &mut ctx, 1, &[1500; 4]);
        load(&mut q, &mut ctx, 2, &[1500; 6]);
        // L, q0 (one packet), L, q1 (two packets), L, q0, L, q1 x2, L, q0, L (last),
        // then the normal queues alone.
        assert_eq!(drain(&mut q, &mut ctx), vec![2, 0, 2, 1, 1, 2, 0, 2, 1, 1, 2, 0, 2, 0]);
    }

    #[test]
    fn strict_mode_serves_the_llq_first() {
        let mut rng = Rng::stream(3, "mdrr");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let llq = Llq { class: 0, mode: LlqMode::Strict };
        let mut q = queue(3, Mdrr::new(vec![1500, 1500, 1500], Some(llq)).unwrap());
        load(&mut q, &mut ctx, 1, &[1500; 2]);
        load(&mut q, &mut ctx, 2, &[1500; 2]);
        load(&mut q, &mut ctx, 0, &[200; 3]);
        assert_eq!(drain(&mut q, &mut ctx), vec![0, 0, 0, 1, 2, 1, 2]);
    }
}
