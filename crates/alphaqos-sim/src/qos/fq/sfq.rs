//! Hashed deficit round robin, SFQ-like.
//!
//! P. E. McKenney, "Stochastic Fairness Queueing", IEEE INFOCOM 1990 (flows
//! hashed into a fixed number of queues served round robin); the deficit
//! round robin of Shreedhar & Varghese (SIGCOMM 1995, as in
//! [`crate::qos::sched::drr`]) among the backlogged buckets, as Linux
//! `net/sched/sch_sfq.c` serves its slots with an `allot` of one quantum:
//!
//! - a packet goes to the queue of its hashed flow ([`super::flow_hash`]);
//!   a bucket that was empty joins the tail of the active list with a
//!   deficit of one quantum;
//! - dequeue: the head bucket of the active list sends its head packet
//!   while its deficit is positive, paying the packet's size; a bucket
//!   whose deficit is spent gets another quantum and goes to the tail; an
//!   emptied bucket leaves the list;
//! - over the limit, the bucket with the most packets loses its tail
//!   packet (`sfq_drop`, counted as `tail`), which may be the one that just
//!   arrived.
//!
//! With every bucket backlogged, each gets an equal share of the bytes
//! whatever its packet sizes, to within one quantum per round.
//!
//! Parameters ([`SfqParams`]): `buckets` (1024, Linux's `divisor`),
//! `quantum` (1514 B, the MTU-based default), `limit` (127 packets, Linux's
//! default, when the queue is a link's; the class's buffer when it is a
//! class's child). No periodic re-hashing (`perturb`, off by default in
//! Linux).
//!
//! Tests: below (round robin by quantum, the tail drop from the longest
//! bucket); `tests/fq.rs`: flows share a bottleneck evenly.

use super::{FlowTable, DEFAULT_BUCKETS, DEFAULT_QUANTUM};
use crate::packet::Packet;
use crate::qos::fifo::Limit;
use crate::qos::{Backlog, Dequeued, DropReason, Qdisc, QueueCounters, QueueCtx};
use std::collections::VecDeque;
use crate::error::ConfigError;

/// Linux sfq's default `limit`, packets.
pub const DEFAULT_LIMIT_PKTS: u64 = 127;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SfqParams {
    pub buckets: u32,
    pub quantum: u32,
    pub limit: Limit,
}

impl Default for SfqParams {
    fn default() -> Self {
        SfqParams { buckets: DEFAULT_BUCKETS, quantum: DEFAULT_QUANTUM, limit: Limit { pkts: DEFAULT_LIMIT_PKTS, bytes: u64::MAX } }
    }
}

impl SfqParams {
    /// Each parameter in its range, a problem located at its configuration key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.buckets == 0 || self.buckets > 65_536 {
            return Err(ConfigError::at("buckets", format!("must be in 1..=65536, got {}", self.buckets)));
        }
        if self.quantum == 0 {
            return Err(ConfigError::at("quantum_bytes", "must be at least 1 byte"));
        }
        if self.limit.pkts == 0 || self.limit.bytes == 0 {
            return Err(ConfigError::at(if self.limit.pkts == 0 { "limit_pkts" } else { "limit_bytes" }, "must be at least one packet"));
        }
        Ok(())
    }
}

pub struct Sfq {
    p: SfqParams,
    t: FlowTable,
    active: VecDeque<u32>,
}

impl Sfq {
    pub fn new(p: SfqParams) -> Result<Self, ConfigError> {
        p.validate()?;
        Ok(Sfq { t: FlowTable::new(p.buckets), active: VecDeque::new(), p })
    }
}

impl Qdisc for Sfq {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)> {
        if let Some(i) = self.t.admit(pkt, ctx, self.p.quantum) {
            self.active.push_back(i);
        }
        if self.t.over(self.p.limit) {
            let fat = self.t.fattest(false);
            let p = self.t.take(fat, false).expect("the longest bucket holds a packet");
            self.t.counters.on_drop_queued(p.size, DropReason::Tail);
            ctx.drop_queued(p, DropReason::Tail);
            if self.t.flows[fat].q.is_empty() {
                self.t.flows[fat].listed = false;
                self.active.retain(|&k| k as usize != fat);
            }
        }
        Ok(())
    }

    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued {
        loop {
            let Some(&i) = self.active.front() else { return Dequeued::Empty };
            let f = &mut self.t.flows[i as usize];
            if f.deficit <= 0 {
                f.deficit += self.p.quantum as i64;
                self.active.rotate_left(1);
                continue;
            }
            let p = self.t.take(i as usize, true).expect("an active bucket holds a packet");
            let f = &mut self.t.flows[i as usize];
            f.deficit -= p.size as i64;
            if f.q.is_empty() {
                f.listed = false;
                self.active.pop_front();
            }
            self.t.counters.on_dequeue(p.size, p.enqueued, ctx.now);
            return Dequeued::Packet(p);
        }
    }

    fn backlog(&self) -> Backlog {
        self.t.total
    }

    fn head_size(&self) -> Option<u32> {
        let i = *self.active.front()?;
        self.t.flows[i as usize].q.front().map(|p| p.size)
    }

    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog)) {
        f("", &self.t.counters, self.t.total)
    }
    fn count_policed(&mut self, pkt: &Packet) {
        self.t.counters.on_drop(pkt.size, DropReason::Policer);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::flow_pkt;
    use super::*;
    use crate::rng::Rng;
    use crate::time::SimTime;
    use crate::units::DataRate;


    #[test]
    fn buckets_share_bytes_by_quantum_and_the_longest_loses_its_tail() {
        let mut q = Sfq::new(SfqParams { quantum: 1500, limit: Limit { pkts: 12, bytes: u64::MAX }, ..Default::default() }).unwrap();
        let mut rng = Rng::stream(1, "sfq");
        let mut sink = vec![];
        let mut ctx = QueueCtx::with_drops(SimTime::ZERO, DataRate::gbps(1), &mut rng, &mut sink);
        for _ in 0..6 {
            q.enqueue(flow_pkt(1, 500), &mut ctx).unwrap();
            q.enqueue(flow_pkt(2, 1500), &mut ctx).unwrap();
        }
        assert!(ctx.dropped.as_ref().unwrap().is_empty());
        // The 13th packet (flow 1): both hold 6 packets, flow 1 then 7: it loses its tail.
        q.enqueue(flow_pkt(1, 500), &mut ctx).unwrap();
        let d = ctx.dropped.as_ref().unwrap();
        assert_eq!((d.len(), d[0].0.flow, d[0].1), (1, 1, DropReason::Tail));
        let order: Vec<u32> = std::iter::from_fn(|| match q.dequeue(&mut ctx) {
            Dequeued::Packet(p) => Some(p.flow),
            _ => None,
        })
        .collect();
        // 1500 B per turn: three 500 B packets, then one 1500 B packet.
        assert_eq!(order, vec![1, 1, 1, 2, 1, 1, 1, 2, 2, 2, 2, 2]);
        assert!(Sfq::new(SfqParams { buckets: 0, ..Default::default() }).is_err());
    }
}
