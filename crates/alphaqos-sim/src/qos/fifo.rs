//! Drop-tail FIFO, limited in packets, in bytes, or both (a packet is
//! dropped when accepting it would exceed either limit), optionally with an
//! early-drop [`DropProfile`] asked before the limit: RED is a FIFO with a
//! RED profile ([`super::aqm::red`]), WRED a FIFO with a per-colour profile.
//!
//! On arrival: the profile (if any) decides an early drop, counted as
//! [`DropReason::Aqm`]; then a packet that does not fit is dropped as
//! [`DropReason::Tail`]; the profile is told each packet admitted and each
//! packet sent (with the backlog after it).
//!
//! Validated by: `tests/theory.rs` (M/M/1 and M/D/1 waiting times) and the
//! conservation checks of `tests/engine.rs`.

use super::{Backlog, DropProfile, DropReason, Dequeued, Qdisc, QueueCounters, QueueCtx};
use crate::knob::{Knob, KnobCtx, KnobError, KnobName, KnobResult};
use crate::packet::{prefetch, Packet};
use crate::time::SimTime;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub pkts: u64,
    pub bytes: u64,
}

impl Limit {
    pub const UNLIMITED: Limit = Limit { pkts: u64::MAX, bytes: u64::MAX };
    pub fn from_opts(pkts: Option<u64>, bytes: Option<u64>) -> Limit {
        Limit { pkts: pkts.unwrap_or(u64::MAX), bytes: bytes.unwrap_or(u64::MAX) }
    }
    /// Would a queue holding `held` still fit a packet of `size` bytes?
    pub fn admits(&self, held: Backlog, size: u32) -> bool {
        held.pkts < self.pkts && held.bytes + size as u64 <= self.bytes
    }
    /// The smaller of two limits, dimension by dimension.
    pub fn min(self, o: Limit) -> Limit {
        Limit { pkts: self.pkts.min(o.pkts), bytes: self.bytes.min(o.bytes) }
    }
}

/// The packet store of one FIFO-ordered queue: a ring of packets, its byte
/// count and its counters. Stamps `enqueued` on entry and records the
/// sojourn on exit.
#[derive(Debug, Default)]
pub struct PacketQueue {
    pkts: VecDeque<Packet>,
    bytes: u64,
    pub counters: QueueCounters,
}

impl PacketQueue {
    #[inline(always)]
    pub fn push(&mut self, mut pkt: Packet, now: SimTime) {
        pkt.enqueued = now;
        self.counters.on_enqueue(pkt.size);
        self.counters.held_by_color[pkt.color as usize] += 1;
        self.bytes += pkt.size as u64;
        self.pkts.push_back(pkt);
        // The slot the next arrival takes (or past the buffer's end).
        if let Some(last) = self.pkts.back() {
            prefetch((last as *const Packet).wrapping_add(1));
        }
    }
    /// The head packet, leaving for the wire at `now`.
    #[inline(always)]
    pub fn pop(&mut self, now: SimTime) -> Option<Packet> {
        let p = self.pkts.pop_front()?;
        // The packet the next departure takes.
        if let Some(next) = self.pkts.front() {
            prefetch(next);
        }
        self.bytes -= p.size as u64;
        self.counters.held_by_color[p.color as usize] -= 1;
        self.counters.on_dequeue(p.size, p.enqueued, now);
        Some(p)
    }
    /// The head packet, removed without counting it (the caller counts it
    /// as sent or as dropped).
    pub fn take_head(&mut self) -> Option<Packet> {
        let p = self.pkts.pop_front()?;
        self.bytes -= p.size as u64;
        self.counters.held_by_color[p.color as usize] -= 1;
        Some(p)
    }
    pub fn head(&self) -> Option<&Packet> {
        self.pkts.front()
    }
    pub fn backlog(&self) -> Backlog {
        Backlog { pkts: self.pkts.len() as u64, bytes: self.bytes }
    }
    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }
}

pub struct Fifo {
    limit: Limit,
    profile: Option<Box<dyn DropProfile>>,
    q: PacketQueue,
}

impl Fifo {
    pub fn new(limit: Limit) -> Self {
        Fifo { limit, profile: None, q: PacketQueue::default() }
    }
    /// A FIFO whose early drops come from `profile`.
    pub fn with_profile(limit: Limit, profile: Box<dyn DropProfile>) -> Self {
        Fifo { limit, profile: Some(profile), q: PacketQueue::default() }
    }
    pub fn limit(&self) -> Limit {
        self.limit
    }
    pub fn counters(&self) -> &QueueCounters {
        &self.q.counters
    }
    /// A packet arriving at `now` at a plain drop-tail FIFO (no drop
    /// profile) that holds nothing, its transmitter free: admitted and
    /// taken for the wire at the same instant, counted as [`Qdisc::enqueue`]
    /// then [`Qdisc::dequeue`] would count it (a sojourn of 0), without the
    /// round trip through the ring. None if the queue is not such a one
    /// (the caller goes the ordinary way); `Some(false)` if the limit
    /// refuses the packet (a packet larger than a byte limit), counted as
    /// a tail drop.
    #[inline]
    pub fn pass(&mut self, pkt: &mut Packet, now: SimTime) -> Option<bool> {
        if self.profile.is_some() || !self.q.is_empty() {
            return None;
        }
        if !self.fits_or_tail_drop(pkt.size) {
            return Some(false);
        }
        pkt.enqueued = now;
        self.q.counters.on_enqueue(pkt.size);
        self.q.counters.on_dequeue(pkt.size, now, now);
        Some(true)
    }
    /// The plain FIFO's limit: does a packet of `size` fit? If not it is
    /// counted as a tail drop.
    #[inline(always)]
    fn fits_or_tail_drop(&mut self, size: u32) -> bool {
        let fits = self.limit.admits(self.q.backlog(), size);
        if !fits {
            self.q.counters.on_drop(size, DropReason::Tail);
        }
        fits
    }
    /// The head packet of a plain drop-tail FIFO (no drop profile), leaving
    /// for the wire at `now`, counted as [`Qdisc::dequeue`] counts it. None
    /// if the queue is empty or has a profile (the caller asks
    /// [`Qdisc::dequeue`]).
    #[inline(always)]
    pub fn pop_plain(&mut self, now: SimTime) -> Option<Packet> {
        if self.profile.is_some() {
            return None;
        }
        self.q.pop(now)
    }
    /// Admit `pkt` without asking the profile or the limit (tests that hold
    /// a queue at a level).
    #[cfg(test)]
    pub(crate) fn push_unchecked(&mut self, pkt: Packet, now: SimTime) {
        self.q.push(pkt, now);
        if let Some(p) = &mut self.profile {
            p.on_enqueue(&pkt, self.q.backlog(), now);
        }
    }
}

impl Qdisc for Fifo {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)> {
        let held = self.q.backlog();
        let Some(profile) = &mut self.profile else {
            // The plain drop-tail FIFO.
            if !self.fits_or_tail_drop(pkt.size) {
                return Err((pkt, DropReason::Tail));
            }
            self.q.push(pkt, ctx.now);
            return Ok(());
        };
        let reason = if profile.early_drop(&pkt, held, self.limit, ctx) {
            DropReason::Aqm
        } else if !self.limit.admits(held, pkt.size) {
            DropReason::Tail
        } else {
            self.q.push(pkt, ctx.now);
            if let Some(p) = &mut self.profile {
                p.on_enqueue(&pkt, self.q.backlog(), ctx.now);
            }
            return Ok(());
        };
        self.q.counters.on_drop(pkt.size, reason);
        Err((pkt, reason))
    }
    #[inline]
    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued {
        let Some(d) = &mut self.profile else {
            // The plain FIFO: the packet goes from the ring to the caller.
            return match self.q.pop(ctx.now) {
                Some(p) => Dequeued::Packet(p),
                None => Dequeued::Empty,
            };
        };
        match self.q.pop(ctx.now) {
            Some(p) => {
                d.on_dequeue(&p, self.q.backlog(), ctx.now);
                Dequeued::Packet(p)
            }
            None => Dequeued::Empty,
        }
    }
    #[inline]
    fn backlog(&self) -> Backlog {
        self.q.backlog()
    }
    fn head_size(&self) -> Option<u32> {
        self.q.head().map(|p| p.size)
    }
    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog)) {
        f("", &self.q.counters, self.q.backlog())
    }
    fn count_policed(&mut self, pkt: &Packet) {
        self.q.counters.on_drop(pkt.size, DropReason::Policer);
    }
    /// Its drop profile's knobs.
    fn knob_value(&mut self, class: &str, n: KnobName, _ctx: KnobCtx) -> Option<f64> {
        self.profile.as_ref().filter(|_| class.is_empty())?.knob_value(n)
    }
    fn set_knob(&mut self, class: &str, k: Knob, _ctx: KnobCtx) -> KnobResult {
        match &mut self.profile {
            Some(p) if class.is_empty() => p.set_knob(k),
            _ => Err(KnobError::Unknown),
        }
    }
    fn drop_avg(&self, class: &str) -> Option<f64> {
        self.profile.as_ref().filter(|_| class.is_empty())?.avg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::time::SimTime;
    use crate::units::DataRate;

    pub(crate) fn pkt(size: u32) -> Packet {
        Packet::test(0, size)
    }

    #[test]
    fn byte_and_packet_limits() {
        let mut rng = Rng::stream(1, "t");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let mut q = Fifo::new(Limit::from_opts(None, Some(3000)));
        assert!(q.enqueue(pkt(1500), &mut ctx).is_ok());
        assert!(q.enqueue(pkt(1500), &mut ctx).is_ok());
        assert_eq!(q.enqueue(pkt(1), &mut ctx).unwrap_err().1, DropReason::Tail);
        let mut q = Fifo::new(Limit::from_opts(Some(1), None));
        assert!(q.enqueue(pkt(100), &mut ctx).is_ok());
        assert!(q.enqueue(pkt(100), &mut ctx).is_err());
        let mut n = 0;
        q.for_each_queue(&mut |_, c, b| {
            assert_eq!((c.enq_pkts, c.drop_pkts, c.drop_reason_pkts[0], b.pkts), (1, 1, 1, 1));
            n += 1;
        });
        assert_eq!(n, 1);
    }

    #[test]
    fn sojourn_is_the_time_from_enqueue_to_dequeue() {
        let mut q = Fifo::new(Limit::UNLIMITED);
        let (t0, t1) = (SimTime(1_000), SimTime(3_000));
        let mut rng = Rng::stream(1, "t");
        let mut ctx = QueueCtx::new(t0, DataRate::gbps(1), &mut rng);
        q.enqueue(pkt(100), &mut ctx).unwrap();
        ctx.now = t1;
        q.enqueue(pkt(100), &mut ctx).unwrap();
        // Out at 10 us and 20 us: sojourns 9 us and 17 us.
        for t in [10_000, 20_000] {
            ctx.now = SimTime(t);
            let Dequeued::Packet(p) = q.dequeue(&mut ctx) else { panic!("a packet") };
            assert!(p.enqueued == t0 || p.enqueued == t1);
        }
        let s = &q.counters().sojourn;
        assert_eq!((s.count(), s.mean(), s.max()), (2, Some(13_000.0), Some(17_000)));
    }

    #[test]
    fn packets_held_are_counted_by_colour() {
        use crate::packet::Color;
        let mut rng = Rng::stream(1, "t");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let mut q = Fifo::new(Limit::from_opts(Some(3), None));
        for c in [Color::Green, Color::Yellow, Color::Green, Color::Red] {
            let _ = q.enqueue(Packet { color: c, ..pkt(100) }, &mut ctx);
        }
        // The red one found the queue full: held are green, yellow, green.
        assert_eq!(q.counters().held_by_color, [2, 1, 0]);
        q.dequeue(&mut ctx);
        assert_eq!(q.counters().held_by_color, [1, 1, 0]);
        q.dequeue(&mut ctx);
        q.dequeue(&mut ctx);
        assert_eq!(q.counters().held_by_color, [0, 0, 0]);
    }
}
