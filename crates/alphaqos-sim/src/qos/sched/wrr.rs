//! Weighted round robin, weights in packets.
//!
//! What it models: the classic WRR of switches and routers (Fortinet,
//! Broadcom-based switches, the "WRR" of Junos within a priority set): the
//! scheduler visits the classes in a fixed cyclic order and, at each visit,
//! sends up to `weight[i]` packets of class `i` back to back before moving
//! on; an empty class is skipped, and a class that empties during its turn
//! ends its turn. With every class backlogged, class `i` gets
//! `w_i / sum(w)` of the *packets*, so its share of the bytes also depends
//! on its packet sizes (the shortcoming deficit round robin, [`super::drr`],
//! removes). Work-conserving.
//!
//! Reference: Katevenis, Sidiropoulos, Courcoubetis, "Weighted round-robin
//! cell multiplexing in a general-purpose ATM switch chip", IEEE JSAC 9(8),
//! 1991 (WRR over cells, i.e. fixed-size packets).
//!
//! Parameters: `weights[i]` in packets per round, at least 1 (no default).
//!
//! Tests: the turn order below; `tests/sched.rs`: long-run packet shares
//! equal `w_i / sum(w)` within 2% with every class backlogged, and work
//! conservation under random arrivals.

use crate::knob::{KnobCtx, KnobError, KnobOp, KnobResult};
use super::{next_cyclic, ClassQueue, Pick, Scheduler};
use crate::time::SimTime;
use crate::units::DataRate;
use crate::error::ConfigError;

#[derive(Clone, Debug)]
pub struct Wrr {
    weights: Vec<u32>,
    /// The class whose turn it is, and the packets it may still send.
    cur: usize,
    left: u32,
}

impl Wrr {
    /// `weights[i]`: packets class `i` may send per round (>= 1).
    /// A problem is located at the class's key (`classes[1].weight`).
    pub fn new(weights: Vec<u32>) -> Result<Self, ConfigError> {
        if let Some(i) = weights.iter().position(|&w| w == 0) {
            return Err(ConfigError::at("weight", "must be at least 1 packet").with_outer(i).with_outer("classes"));
        }
        // Start "after" the last class so that the first turn is class 0's.
        let cur = weights.len().saturating_sub(1);
        Ok(Wrr { weights, cur, left: 0 })
    }
}

impl Scheduler for Wrr {
    fn num_classes(&self) -> usize {
        self.weights.len()
    }
    fn select(&mut self, classes: &[ClassQueue], _now: SimTime, _link_rate: DataRate) -> Pick {
        if self.left > 0 && !classes[self.cur].is_empty() {
            return Pick::Serve(self.cur);
        }
        // The turn is over: the next backlogged class in cyclic order.
        let n = classes.len();
        let i = next_cyclic(n, (self.cur + 1) % n, |i| !classes[i].is_empty()).expect("select with no backlog");
        self.cur = i;
        self.left = self.weights[i];
        Pick::Serve(i)
    }
    fn on_sent(&mut self, class: usize, _bytes: u32, _now: SimTime, _link_rate: DataRate) {
        debug_assert_eq!(class, self.cur);
        self.left -= 1;
    }
    fn on_empty(&mut self, class: usize, _now: SimTime) {
        if class == self.cur {
            self.left = 0;
        }
    }
    /// `weight`: packets per round, from the class's next turn on.
    fn knob(&mut self, class: usize, name: &str, op: KnobOp, _ctx: KnobCtx) -> KnobResult {
        if name != "weight" {
            return Err(KnobError::Unknown);
        }
        let old = self.weights[class] as f64;
        if let KnobOp::Set(v) = op {
            if !(1.0..=u32::MAX as f64).contains(&v) || v.fract() != 0.0 {
                return Err(KnobError::Invalid(format!("weight = {v}: must be a whole number of packets, at least 1")));
            }
            self.weights[class] = v as u32;
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

    #[test]
    fn zero_weight_is_rejected() {
        assert!(Wrr::new(vec![1, 0]).is_err());
    }

    #[test]
    fn turns_follow_the_weights_and_skip_empty_classes() {
        let mut rng = Rng::stream(3, "wrr");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let specs = ["a", "b", "c"].iter().map(|n| ClassSpec::new(*n, Limit::UNLIMITED)).collect();
        let mut q = Scheduled::new(specs, Wrr::new(vec![3, 1, 2]).unwrap()).unwrap();
        // a: 5 packets, b: 3, c: 1 (c empties during its turn).
        for (c, k) in [(0u8, 5), (1, 3), (2, 1)] {
            for _ in 0..k {
                let mut p = Packet::test(0, 100);
                p.fclass = c;
                q.enqueue(p, &mut ctx).unwrap();
            }
        }
        let order: Vec<u8> = std::iter::from_fn(|| match q.dequeue(&mut ctx) {
            Dequeued::Packet(p) => Some(p.fclass),
            _ => None,
        })
        .collect();
        assert_eq!(order, vec![0, 0, 0, 1, 2, 0, 0, 1, 1]);
    }
}
