//! Drop-tail FIFO, limited in packets, in bytes, or both (a packet is
//! dropped when accepting it would exceed either limit).
//!
//! Validated by: `tests/theory.rs` (M/M/1 and M/D/1 waiting times) and the
//! conservation checks of `tests/engine.rs`.

use super::{Backlog, DropReason, Dequeued, Qdisc, QueueCounters, QueueCtx};
use crate::packet::Packet;
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
}

/// The packet store shared by FIFO-ordered disciplines (drop-tail, RED).
#[derive(Debug, Default)]
pub struct PacketQueue {
    pkts: VecDeque<Packet>,
    bytes: u64,
    pub counters: QueueCounters,
}

impl PacketQueue {
    pub fn push(&mut self, pkt: Packet) {
        self.counters.on_enqueue(pkt.size);
        self.bytes += pkt.size as u64;
        self.pkts.push_back(pkt);
    }
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.pkts.pop_front()?;
        self.bytes -= p.size as u64;
        self.counters.on_dequeue(p.size);
        Some(p)
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
    q: PacketQueue,
}

impl Fifo {
    pub fn new(limit: Limit) -> Self {
        Fifo { limit, q: PacketQueue::default() }
    }
}

impl Qdisc for Fifo {
    fn enqueue(&mut self, pkt: Packet, _ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)> {
        if !self.limit.admits(self.q.backlog(), pkt.size) {
            self.q.counters.on_drop(pkt.size, DropReason::Tail);
            return Err((pkt, DropReason::Tail));
        }
        self.q.push(pkt);
        Ok(())
    }
    fn dequeue(&mut self, _ctx: &mut QueueCtx) -> Dequeued {
        match self.q.pop() {
            Some(p) => Dequeued::Packet(p),
            None => Dequeued::Empty,
        }
    }
    fn backlog(&self) -> Backlog {
        self.q.backlog()
    }
    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog)) {
        f("", &self.q.counters, self.q.backlog())
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
        let mut ctx = QueueCtx { now: SimTime::ZERO, link_rate: DataRate::gbps(1), rng: &mut rng };
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
}
