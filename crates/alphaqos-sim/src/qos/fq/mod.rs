//! Per-flow disciplines: queues created on demand, one per hashed flow.
//!
//! | file | discipline | reference |
//! |---|---|---|
//! | [`fq_codel`] | FQ-CoDel: DRR over new and old flow lists, CoDel per flow | RFC 8290; Linux `sch_fq_codel.c` |
//! | [`sfq`] | hashed DRR (SFQ-like) | McKenney, "Stochastic Fairness Queueing", INFOCOM 1990; Linux `sch_sfq.c` |
//!
//! Both hash a packet's 5-tuple (source and destination address, protocol,
//! source and destination port) with a perturbation drawn once, at the
//! first packet, from the interface's random stream (Linux draws
//! `perturbation` at init), and map the 32-bit hash to a bucket as Linux's
//! `reciprocal_scale` does (`(hash * buckets) >> 32`). A bucket's queue is a
//! ring of packets that is allocated when the bucket is first used and
//! kept (see `qos/mod.rs`, "Packet storage"). Flows that share a bucket
//! share a queue, as in Linux.
//!
//! Both report one queue (their aggregate counters and backlog); drops of
//! queued packets (overflow, CoDel) count as `drop_queued`.

pub mod fq_codel;
pub mod sfq;

use super::fifo::Limit;
use super::{Backlog, QueueCounters, QueueCtx};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::SimTime;
use std::collections::VecDeque;

/// Linux's default quantum for both: the device MTU plus the Ethernet
/// header, 1500 + 14 B (`psched_mtu`).
pub const DEFAULT_QUANTUM: u32 = 1514;
/// Default number of buckets (Linux fq_codel `flows`, sfq `divisor`).
pub const DEFAULT_BUCKETS: u32 = 1024;

/// The 32-bit hash of a packet's 5-tuple under perturbation `seed`
/// (splitmix64's finaliser over the packed fields).
pub fn flow_hash(p: &Packet, seed: u64) -> u32 {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let addrs = ((p.src_ip as u64) << 32) | p.dst_ip as u64;
    let rest = ((p.proto as u64) << 32) | ((p.src_port as u64) << 16) | p.dst_port as u64;
    (mix(mix(seed ^ addrs).wrapping_add(rest)) >> 32) as u32
}

/// One bucket's queue and scheduling state.
#[derive(Debug, Default)]
pub(crate) struct Flow {
    pub(crate) q: VecDeque<Packet>,
    pub(crate) bytes: u64,
    /// DRR deficit, bytes.
    pub(crate) deficit: i64,
    /// On an active (new or old) list.
    pub(crate) listed: bool,
    /// CoDel's state (FQ-CoDel only).
    pub(crate) codel: crate::qos::aqm::codel::Codel,
}

/// The buckets, their total and the discipline's counters.
#[derive(Debug)]
pub(crate) struct FlowTable {
    pub(crate) flows: Vec<Flow>,
    perturb: Option<u64>,
    pub(crate) total: Backlog,
    pub(crate) counters: QueueCounters,
}

impl FlowTable {
    pub(crate) fn new(buckets: u32) -> Self {
        FlowTable { flows: (0..buckets).map(|_| Flow::default()).collect(), perturb: None, total: Backlog::default(), counters: QueueCounters::default() }
    }
    /// The bucket of `p`: `reciprocal_scale(hash, buckets)`.
    pub(crate) fn bucket(&mut self, p: &Packet, rng: &mut Rng) -> usize {
        let seed = *self.perturb.get_or_insert_with(|| rng.next_u64());
        ((flow_hash(p, seed) as u64 * self.flows.len() as u64) >> 32) as usize
    }
    /// Admit `pkt` to bucket `i` at `now`.
    pub(crate) fn push(&mut self, i: usize, mut pkt: Packet, now: SimTime) {
        pkt.enqueued = now;
        self.counters.on_enqueue(pkt.size);
        self.total.pkts += 1;
        self.total.bytes += pkt.size as u64;
        let f = &mut self.flows[i];
        f.bytes += pkt.size as u64;
        f.q.push_back(pkt);
    }
    /// Admit `pkt` to its bucket; if the bucket was on no list, it now is,
    /// with a deficit of `quantum`, and its index is returned for the
    /// caller's list.
    pub(crate) fn admit(&mut self, pkt: Packet, ctx: &mut QueueCtx, quantum: u32) -> Option<u32> {
        let i = self.bucket(&pkt, ctx.rng);
        self.push(i, pkt, ctx.now);
        let f = &mut self.flows[i];
        if f.listed {
            return None;
        }
        f.listed = true;
        f.deficit = quantum as i64;
        Some(i as u32)
    }
    /// Over the limit?
    pub(crate) fn over(&self, limit: Limit) -> bool {
        self.total.pkts > limit.pkts || self.total.bytes > limit.bytes
    }
    /// The bucket holding the most bytes (`by_bytes`) or packets; the first
    /// of equals.
    pub(crate) fn fattest(&self, by_bytes: bool) -> usize {
        let key = |f: &Flow| if by_bytes { f.bytes } else { f.q.len() as u64 };
        let mut best = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if key(f) > key(&self.flows[best]) {
                best = i;
            }
        }
        best
    }
    /// Take a packet out of bucket `i` (head or tail), uncounted.
    pub(crate) fn take(&mut self, i: usize, head: bool) -> Option<Packet> {
        let f = &mut self.flows[i];
        let p = if head { f.q.pop_front() } else { f.q.pop_back() }?;
        f.bytes -= p.size as u64;
        self.total.pkts -= 1;
        self.total.bytes -= p.size as u64;
        Some(p)
    }
}

/// The limit of a per-flow discipline: its own `limit` when given, else
/// the buffer of the class holding it when that is finite, else `default`
/// packets; never more than the class's buffer (`class` None: the
/// discipline is a link's queue).
pub fn child_limit(own: Option<Limit>, class: Option<Limit>, default_pkts: u64) -> Limit {
    let default = Limit { pkts: default_pkts, bytes: u64::MAX };
    match (own, class) {
        (Some(l), Some(c)) => l.min(c),
        (Some(l), None) => l,
        (None, Some(c)) if c != Limit::UNLIMITED => c,
        (None, _) => default,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A packet of flow `port` (its source port; the flow index too).
    pub(crate) fn flow_pkt(port: u16, size: u32) -> Packet {
        Packet { src_port: port, dst_port: 80, proto: 6, ..Packet::test(port as u32, size) }
    }

    #[test]
    fn the_hash_spreads_flows_and_depends_on_the_perturbation() {
        let mut buckets = vec![0u32; 1024];
        for port in 0..65_536u32 {
            let p = Packet { src_ip: 0x0a00_0001, dst_ip: 0x0a00_0002, proto: 6, src_port: port as u16, dst_port: 5001, ..Packet::test(0, 100) };
            buckets[((flow_hash(&p, 42) as u64 * 1024) >> 32) as usize] += 1;
        }
        // 64 per bucket on average; a uniform hash keeps every bucket near it.
        assert!(buckets.iter().all(|&n| (30..=100).contains(&n)), "{:?}", buckets.iter().minmax());
        let p = Packet::test(0, 100);
        assert_ne!(flow_hash(&p, 1), flow_hash(&p, 2));
        assert_eq!(flow_hash(&p, 1), flow_hash(&p, 1));
    }

    trait MinMax {
        fn minmax(self) -> (u32, u32);
    }
    impl<'a, I: Iterator<Item = &'a u32>> MinMax for I {
        fn minmax(self) -> (u32, u32) {
            self.fold((u32::MAX, 0), |(lo, hi), &x| (lo.min(x), hi.max(x)))
        }
    }

    #[test]
    fn child_limits() {
        let class = Some(Limit { pkts: 500, bytes: u64::MAX });
        assert_eq!(child_limit(None, class, 10_240), class.unwrap());
        assert_eq!(child_limit(None, Some(Limit::UNLIMITED), 10_240).pkts, 10_240);
        assert_eq!(child_limit(None, None, 127).pkts, 127);
        assert_eq!(child_limit(Some(Limit { pkts: 100, bytes: u64::MAX }), class, 10_240).pkts, 100);
        assert_eq!(child_limit(Some(Limit { pkts: 900, bytes: u64::MAX }), class, 10_240).pkts, 500);
        assert_eq!(child_limit(Some(Limit { pkts: 900, bytes: u64::MAX }), None, 10_240).pkts, 900);
    }
}
