//! Strict priority.
//!
//! What it models: the priority queueing (PQ) of routers and of Linux's
//! `prio` qdisc: the transmitter always serves the backlogged class of the
//! highest level; a lower class is served only when every higher one is
//! empty, so a backlogged high class starves the lower ones completely.
//! Classes of the same level share by packet-by-packet round robin.
//! Work-conserving: it never answers `Wait`.
//!
//! Reference: the PQ stage of router egress schedulers as described by Yan,
//! Veeraraghavan, Tracy and Guok, "On How to Provision QoS for Large Dataset
//! Transfers", CTRQ 2013, Section II (WFQ and PQ); Cisco's MDRR strict
//! priority mode ([`super::mdrr`]) and Junos `strict-high`
//! ([`super::junos`]) are special cases.
//!
//! Parameters: `levels[i]`, the priority level of class `i` (a larger
//! number is served first; no default).
//!
//! Tests: unit tests below (starvation exactly while the higher class is
//! backlogged, round robin among equals) and `tests/sched.rs` (work
//! conservation under random arrivals).

use super::{next_cyclic, ClassQueue, Pick, Scheduler};
use crate::time::SimTime;
use crate::units::DataRate;

#[derive(Clone, Debug)]
pub struct StrictPriority {
    levels: Vec<u32>,
    /// Per class: where round robin resumes among the classes of its level.
    rr: Vec<usize>,
}

impl StrictPriority {
    /// `levels[i]` is the level of class `i`; larger is served first.
    pub fn new(levels: Vec<u32>) -> Self {
        let n = levels.len();
        StrictPriority { levels, rr: vec![0; n] }
    }
}

impl Scheduler for StrictPriority {
    fn num_classes(&self) -> usize {
        self.levels.len()
    }
    fn select(&mut self, classes: &[ClassQueue], _now: SimTime, _link_rate: DataRate) -> Pick {
        let n = classes.len();
        let top = (0..n).filter(|&i| !classes[i].is_empty()).map(|i| self.levels[i]).max().expect("select with no backlog");
        // The round-robin position is kept per level, in the slot of the
        // level's first class.
        let slot = (0..n).find(|&i| self.levels[i] == top).unwrap();
        let i = next_cyclic(n, self.rr[slot], |i| self.levels[i] == top && !classes[i].is_empty()).unwrap();
        self.rr[slot] = (i + 1) % n;
        Pick::Serve(i)
    }
    fn on_sent(&mut self, _class: usize, _bytes: u32, _now: SimTime, _link_rate: DataRate) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use crate::qos::fifo::Limit;
    use crate::qos::sched::{ClassSpec, Scheduled};
    use crate::qos::{Dequeued, Qdisc, QueueCtx};
    use crate::rng::Rng;

    fn pkt(class: u8) -> Packet {
        let mut p = Packet::test(0, 1000);
        p.fclass = class;
        p
    }

    #[test]
    fn higher_class_starves_lower_exactly_while_backlogged() {
        let mut rng = Rng::stream(3, "prio");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let names = ["lo", "hi"];
        let specs = names.iter().map(|n| ClassSpec::new(*n, Limit::UNLIMITED)).collect();
        let mut q = Scheduled::new(specs, StrictPriority::new(vec![0, 7])).unwrap();
        for _ in 0..5 {
            q.enqueue(pkt(0), &mut ctx).unwrap();
        }
        let mut rng2 = Rng::stream(4, "arrivals");
        let mut lo_served_while_hi_backlogged = 0;
        let mut hi_served = 0;
        for _ in 0..10_000 {
            if rng2.uniform() < 0.6 {
                q.enqueue(pkt(1), &mut ctx).unwrap();
            }
            if rng2.uniform() < 0.5 {
                q.enqueue(pkt(0), &mut ctx).unwrap();
            }
            let hi_backlogged = !q.classes()[1].is_empty();
            match q.dequeue(&mut ctx) {
                Dequeued::Packet(p) => {
                    assert_eq!(p.fclass == 1, hi_backlogged, "served {} while hi backlogged = {hi_backlogged}", p.fclass);
                    if p.fclass == 0 && hi_backlogged {
                        lo_served_while_hi_backlogged += 1;
                    }
                    hi_served += (p.fclass == 1) as u32;
                }
                _ => panic!("work-conserving scheduler idle with a backlog"),
            }
        }
        assert_eq!(lo_served_while_hi_backlogged, 0);
        assert!(hi_served > 5000);
    }

    #[test]
    fn equal_levels_alternate() {
        let mut rng = Rng::stream(3, "prio");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let specs = ["a", "b", "c"].iter().map(|n| ClassSpec::new(*n, Limit::UNLIMITED)).collect();
        let mut q = Scheduled::new(specs, StrictPriority::new(vec![1, 1, 0])).unwrap();
        for _ in 0..3 {
            for c in 0..3 {
                q.enqueue(pkt(c), &mut ctx).unwrap();
            }
        }
        let order: Vec<u8> = std::iter::from_fn(|| match q.dequeue(&mut ctx) {
            Dequeued::Packet(p) => Some(p.fclass),
            _ => None,
        })
        .collect();
        assert_eq!(order, vec![0, 1, 0, 1, 0, 1, 2, 2, 2]);
    }
}
