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

use crate::knob::{Knob, KnobCtx, KnobError, KnobName, KnobResult};
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

    /// Class `class`'s weight, packets per round.
    pub fn weight(&self, class: usize) -> u32 {
        self.weights[class]
    }

    /// Class `class`'s weight `w` (packets per round, at least 1) from its
    /// next turn on; the weight replaced.
    pub fn set_weight(&mut self, class: usize, w: u64) -> Result<u32, KnobError> {
        let w = u32::try_from(w).ok().filter(|&w| w >= 1).ok_or_else(|| KnobError::Invalid("must be a whole number of packets, at least 1".into()))?;
        Ok(std::mem::replace(&mut self.weights[class], w))
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
    /// `weight`: [`Wrr::set_weight`].
    fn knob_value(&mut self, class: usize, n: KnobName, _ctx: KnobCtx) -> Option<f64> {
        (n == KnobName::Weight).then(|| self.weight(class) as f64)
    }
    fn set_knob(&mut self, class: usize, k: Knob, _ctx: KnobCtx) -> KnobResult {
        match k {
            Knob::Weight(w) => self.set_weight(class, w).map(f64::from),
            _ => Err(KnobError::Unknown),
        }
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
    fn the_weight_knob_is_typed_and_checked() {
        let ctx = KnobCtx { now: SimTime::ZERO, link_rate: DataRate::gbps(1) };
        let mut w = Wrr::new(vec![3, 1]).unwrap();
        assert_eq!(w.knob_value(1, KnobName::Weight, ctx), Some(1.0));
        assert_eq!(w.knob_value(1, KnobName::QuantumBytes, ctx), None);
        assert_eq!(w.set_knob(1, Knob::Weight(4), ctx), Ok(1.0), "the weight replaced");
        assert_eq!(w.weight(1), 4);
        for bad in [0, u32::MAX as u64 + 1] {
            assert!(matches!(w.set_knob(1, Knob::Weight(bad), ctx), Err(KnobError::Invalid(_))), "{bad}");
        }
        assert_eq!(w.weight(1), 4, "a refused value changes nothing");
        assert_eq!(w.set_knob(0, Knob::QuantumBytes(1500), ctx), Err(KnobError::Unknown));
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
