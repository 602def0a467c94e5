//! Deficit round robin.
//!
//! What it models: DRR as defined by Shreedhar and Varghese, "Efficient Fair
//! Queuing Using Deficit Round Robin", ACM SIGCOMM 1995, Section 3 and the
//! pseudo-code of its Fig. 3, with one queue per class instead of per flow:
//!
//! - backlogged classes sit in an *active list*, in the order they became
//!   backlogged; a class that becomes backlogged joins the tail with
//!   `DeficitCounter_i = 0`;
//! - the head class `i` of the list starts its turn with
//!   `DeficitCounter_i += Quantum_i`, then sends head packets while
//!   `size(head) <= DeficitCounter_i`, each one doing
//!   `DeficitCounter_i -= size`;
//! - when the next packet does not fit, the class goes to the tail keeping
//!   its deficit; when it empties, `DeficitCounter_i = 0` and it leaves
//!   the list.
//!
//! With every class backlogged, class `i` gets `Quantum_i / sum(Quantum)` of
//! the *bytes* whatever its packet sizes (the paper's fairness result,
//! Section 3: the service a backlogged class receives over `k` rounds is
//! within one maximum packet of `k * Quantum_i`). Work-conserving.
//!
//! The paper advises `Quantum_i >= Max` (the largest packet) so that every
//! turn sends at least one packet; smaller quanta are accepted, and a round
//! in which no class can send is skipped in one step (every deficit grows by
//! the quanta of the rounds that would have sent nothing), so the work per
//! packet stays bounded.
//!
//! Parameters: `quanta[i]`, bytes added to class `i`'s deficit per round,
//! at least 1 (no default; 1500 B, one Ethernet MTU, is the usual choice).
//!
//! Tests: the turn order and the deficit arithmetic below;
//! `tests/sched.rs`: long-run byte shares equal `Q_i / sum(Q)` within 2%
//! with random packet sizes, and work conservation.

use crate::knob::{KnobCtx, KnobError, KnobOp, KnobResult};
use super::{ClassQueue, Pick, Scheduler};
use crate::time::SimTime;
use crate::units::DataRate;
use std::collections::VecDeque;
use crate::error::ConfigError;

/// The active list and deficit counters of a deficit round robin, shared by
/// [`Drr`] and Cisco's MDRR ([`super::mdrr`]). Two rules for when the head
/// class may send:
///
/// - DRR (Shreedhar & Varghese, Fig. 3): while `size(head) <= DC_i`; the
///   deficit never goes negative;
/// - MDRR (`overdraw`, Cisco 12000): while `DC_i > 0`; the last packet of
///   a turn may take the deficit below zero, and the next turn pays it back.
#[derive(Clone, Debug)]
pub(crate) struct DeficitRing {
    /// `Quantum_i` in bytes (0 for a class that never joins the ring).
    pub(crate) quanta: Vec<i64>,
    /// `DeficitCounter_i` in bytes.
    deficit: Vec<i64>,
    /// Backlogged classes; the head is the one whose turn it is.
    active: VecDeque<usize>,
    /// The head class has received its quantum for this turn...
    in_turn: bool,
    /// ... and has sent at least one packet in it.
    turn_sent: bool,
    /// Turns ended in a row without sending.
    fruitless: usize,
    overdraw: bool,
}

/// What one step of the ring did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The head class sends its head packet.
    Serve(usize),
    /// The head class's turn ended and it went to the tail; `sent`: it sent
    /// at least one packet in that turn.
    TurnOver { sent: bool },
}

impl DeficitRing {
    pub(crate) fn new(quanta: Vec<u64>, overdraw: bool) -> Self {
        let n = quanta.len();
        DeficitRing {
            quanta: quanta.into_iter().map(|q| q as i64).collect(),
            deficit: vec![0; n],
            active: VecDeque::new(),
            in_turn: false,
            turn_sent: false,
            fruitless: 0,
            overdraw,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    pub(crate) fn deficit(&self, class: usize) -> i64 {
        self.deficit[class]
    }

    fn may_send(&self, i: usize, classes: &[ClassQueue]) -> bool {
        if self.overdraw {
            self.deficit[i] > 0
        } else {
            classes[i].head_size().expect("an active class is backlogged") as i64 <= self.deficit[i]
        }
    }

    /// Turns class `j` still needs before it may send (>= 1).
    fn turns_needed(&self, j: usize, classes: &[ClassQueue]) -> i64 {
        let (dc, q) = (self.deficit[j], self.quanta[j]);
        if self.overdraw {
            // DC + n Q > 0 with DC <= 0.
            -dc / q + 1
        } else {
            let head = classes[j].head_size().unwrap() as i64;
            (head - dc + q - 1) / q
        }
    }

    /// One step: the head class sends, or its turn ends.
    pub(crate) fn step(&mut self, classes: &[ClassQueue]) -> Step {
        let i = *self.active.front().expect("step with an empty active list");
        if !self.in_turn {
            // Fig. 3: DeficitCounter_i = Quantum_i + DeficitCounter_i.
            self.deficit[i] += self.quanta[i];
            self.in_turn = true;
            self.turn_sent = false;
        }
        if self.may_send(i, classes) {
            self.fruitless = 0;
            return Step::Serve(i);
        }
        // Fig. 3: InsertActiveList(i), the deficit is kept.
        let sent = self.turn_sent;
        self.active.rotate_left(1);
        self.in_turn = false;
        self.fruitless = if sent { 0 } else { self.fruitless + 1 };
        if self.fruitless == self.active.len() {
            // A whole round sent nothing: skip the k-1 further rounds that
            // would send nothing either, k = min over the list of the turns
            // each class still needs; the list order is unchanged, so the
            // next round serves exactly who it would have served.
            let k = self.active.iter().map(|&j| self.turns_needed(j, classes)).min().unwrap();
            for &j in &self.active {
                self.deficit[j] += (k - 1) * self.quanta[j];
            }
            self.fruitless = 0;
        }
        Step::TurnOver { sent }
    }

    /// Steps until a class sends.
    pub(crate) fn select(&mut self, classes: &[ClassQueue]) -> usize {
        loop {
            if let Step::Serve(i) = self.step(classes) {
                return i;
            }
        }
    }

    pub(crate) fn on_sent(&mut self, class: usize, bytes: u32) {
        debug_assert_eq!(self.active.front(), Some(&class));
        self.deficit[class] -= bytes as i64;
        self.turn_sent = true;
    }

    /// Fig. 3, enqueuing module: a class that becomes backlogged joins the
    /// tail with a zero deficit.
    pub(crate) fn on_arrival(&mut self, class: usize) {
        self.active.push_back(class);
        self.deficit[class] = 0;
    }

    /// Fig. 3: an emptied class leaves the list and its deficit is reset.
    /// Returns true if it was the class whose turn it was.
    pub(crate) fn on_empty(&mut self, class: usize) -> bool {
        self.deficit[class] = 0;
        let was_head = self.active.front() == Some(&class);
        if was_head {
            self.in_turn = false;
            self.fruitless = 0;
        }
        self.active.retain(|&j| j != class);
        was_head
    }
}

#[derive(Clone, Debug)]
pub struct Drr {
    ring: DeficitRing,
}

impl Drr {
    /// `quanta[i]`: bytes class `i` may send per round (>= 1).
    /// A problem is located at the class's key (`classes[1].quantum_bytes`).
    pub fn new(quanta: Vec<u64>) -> Result<Self, ConfigError> {
        if let Some(i) = quanta.iter().position(|&q| q == 0 || q > u32::MAX as u64) {
            return Err(ConfigError::at("quantum_bytes", format!("must be in 1..=4294967295 bytes, got {}", quanta[i])).with_outer(i).with_outer("classes"));
        }
        Ok(Drr { ring: DeficitRing::new(quanta, false) })
    }

    /// `DeficitCounter_i` in bytes.
    pub fn deficit(&self, class: usize) -> u64 {
        self.ring.deficit(class) as u64
    }
}

impl Scheduler for Drr {
    fn num_classes(&self) -> usize {
        self.ring.quanta.len()
    }
    fn select(&mut self, classes: &[ClassQueue], _now: SimTime, _link_rate: DataRate) -> Pick {
        Pick::Serve(self.ring.select(classes))
    }
    fn on_sent(&mut self, class: usize, bytes: u32, _now: SimTime, _link_rate: DataRate) {
        self.ring.on_sent(class, bytes)
    }
    fn on_arrival(&mut self, class: usize, _now: SimTime) {
        self.ring.on_arrival(class)
    }
    fn on_empty(&mut self, class: usize, _now: SimTime) {
        self.ring.on_empty(class);
    }
    /// `quantum_bytes`: the class's quantum from its next turn on.
    fn knob(&mut self, class: usize, name: &str, op: KnobOp, _ctx: KnobCtx) -> KnobResult {
        if name != "quantum_bytes" {
            return Err(KnobError::Unknown);
        }
        let old = self.ring.quanta[class] as f64;
        if let KnobOp::Set(v) = op {
            if !(1.0..=u32::MAX as f64).contains(&v) || v.fract() != 0.0 {
                return Err(KnobError::Invalid(format!("quantum_bytes = {v}: must be a whole number of bytes in 1..=4294967295")));
            }
            self.ring.quanta[class] = v as _;
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

    fn drain(q: &mut Scheduled<Drr>, ctx: &mut QueueCtx) -> Vec<(u8, u32)> {
        std::iter::from_fn(|| match q.dequeue(ctx) {
            Dequeued::Packet(p) => Some((p.fclass, p.size)),
            _ => None,
        })
        .collect()
    }

    fn load(q: &mut Scheduled<Drr>, ctx: &mut QueueCtx, class: u8, sizes: &[u32]) {
        for &s in sizes {
            let mut p = Packet::test(0, s);
            p.fclass = class;
            q.enqueue(p, ctx).unwrap();
        }
    }

    #[test]
    fn zero_quantum_is_rejected() {
        assert!(Drr::new(vec![1500, 0]).is_err());
    }

    #[test]
    fn turns_follow_the_deficit_counters() {
        // The example of the paper's Fig. 1-2 in spirit: quantum 500, queue a
        // holds 200, 750, 20 bytes, b holds 500, c holds 1000.
        let mut rng = Rng::stream(3, "drr");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let specs = ["a", "b", "c"].iter().map(|n| ClassSpec::new(*n, Limit::UNLIMITED)).collect();
        let mut q = Scheduled::new(specs, Drr::new(vec![500, 500, 500]).unwrap()).unwrap();
        load(&mut q, &mut ctx, 0, &[200, 750, 20]);
        load(&mut q, &mut ctx, 1, &[500]);
        load(&mut q, &mut ctx, 2, &[1000]);
        // Round 1: a sends 200 (DC 300, 750 does not fit), b sends 500 and
        // empties, c cannot send (DC 500). Round 2: a: DC 800, sends 750 and
        // 20 and empties; c: DC 1000, sends 1000.
        assert_eq!(drain(&mut q, &mut ctx), vec![(0, 200), (1, 500), (0, 750), (0, 20), (2, 1000)]);
        for i in 0..3 {
            assert_eq!(q.scheduler().deficit(i), 0);
        }
    }

    #[test]
    fn tiny_quanta_skip_empty_rounds_exactly() {
        // Quanta 1 and 3 bytes, packets of 1500: the rounds in which nobody
        // can send are skipped, with the same outcome as running them.
        let mut rng = Rng::stream(3, "drr");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let specs = ["a", "b"].iter().map(|n| ClassSpec::new(*n, Limit::UNLIMITED)).collect();
        let mut q = Scheduled::new(specs, Drr::new(vec![1, 3]).unwrap()).unwrap();
        load(&mut q, &mut ctx, 0, &[1500; 4]);
        load(&mut q, &mut ctx, 1, &[1500; 4]);
        let order: Vec<u8> = drain(&mut q, &mut ctx).into_iter().map(|(c, _)| c).collect();
        // b reaches 1500 at round 500, a at round 1500; a's deficit then
        // is 1500 while b has sent 3 packets (rounds 500, 1000, 1500: b is
        // after a in the list, so a goes first in round 1500).
        assert_eq!(order, vec![1, 1, 0, 1, 1, 0, 0, 0]);
    }
}
