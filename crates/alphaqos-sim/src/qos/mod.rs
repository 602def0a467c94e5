//! Queueing and scheduling at an interface's egress.
//!
//! Every egress queue of a link is a [`Qdisc`]: the interface hands it each
//! packet to send and asks it for the next packet whenever the transmitter is
//! free. A discipline may be classless (a FIFO, RED) or classful (several
//! queues behind a scheduler, shapers): the trait lets a discipline answer
//! "nothing now, but try again at t" for shapers, and report the counters of
//! each of its queues under a class name, so that classful disciplines slot
//! in without the interface knowing.

//!
//! # Nesting
//!
//! Every class of a classful discipline (the schedulers of [`sched`], the
//! leaves of [`htb`]) holds a *child* discipline, built for the class's
//! share of the buffer ([`Child`]): a FIFO by default, a FIFO with an
//! early-drop [`DropProfile`] (RED, WRED, RIO, GRED), or a per-flow
//! discipline of [`fq`] (FQ-CoDel, hashed DRR). A parent sees its children
//! through the same [`Qdisc`] trait, plus [`Qdisc::head_size`] for the
//! schedulers that weigh the next packet (DRR, MDRR).
//!
//! # Packet storage
//!
//! Packets are stored by value (`Packet` is `Copy`, about 100 bytes) in one
//! ring buffer per leaf queue (`VecDeque`): a ring grows to its high-water
//! mark once and is reused, so no packet costs a heap allocation, and the
//! per-flow disciplines allocate a flow's ring only when that bucket is
//! first used. A single slab of packets with index-linked per-queue lists
//! would save the rings' spare capacity but adds a link per packet and an
//! indirection per access on the single-flow fast path, which already pays
//! for the per-packet sojourn record and the child plumbing; with at most
//! a few thousand rings per interface the spare capacity is small, so the
//! rings stay.
//!
//! # Drops
//!
//! The arriving packet that a discipline refuses comes back from
//! [`Qdisc::enqueue`]. Packets dropped after they were admitted (CoDel's
//! drops at dequeue, FQ-CoDel's batch drop from the fattest flow) go to
//! the sink [`QueueCtx::dropped`], which the interface empties after each
//! call (a sink the interface owns, so that the fast path carries no
//! vector of its own in every call); they
//! are counted as drops *and* in `drop_queued_*`, so that on every queue
//! `enq = deq + drop_queued + backlog` and `offered = enq + drop - drop_queued`.

pub mod aqm;
pub mod build;
pub mod classful;
pub mod classify;
pub mod fifo;
pub mod fq;

pub mod htb;
pub mod meter;
pub mod sched;
pub mod sketch;
pub mod yaqs;

pub use build::{applied_queue, build, build_child, build_on};

use crate::error::ConfigError;
use crate::knob::{KnobCtx, KnobError, KnobOp, KnobResult};
use crate::metrics::SojournHistogram;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::SimTime;
use crate::units::DataRate;
use std::sync::Arc;

/// Why a packet was dropped. Column names derive from `as_str`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The queue (or its share of the buffer) was full.
    Tail = 0,
    /// An active queue management decision (RED, WRED).
    Aqm = 1,
    /// Out of profile at a policer with a discard action.
    Policer = 2,
}

impl DropReason {
    pub const ALL: [DropReason; 3] = [DropReason::Tail, DropReason::Aqm, DropReason::Policer];
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Tail => "tail",
            DropReason::Aqm => "aqm",
            DropReason::Policer => "policer",
        }
    }
}

/// The same counters for every queue, in the manner of DPDK's statistics.
#[derive(Clone, Debug, Default)]
pub struct QueueCounters {
    pub enq_pkts: u64,
    pub enq_bytes: u64,
    pub deq_pkts: u64,
    pub deq_bytes: u64,
    /// Every drop, at arrival or of a packet already queued.
    pub drop_pkts: u64,
    pub drop_bytes: u64,
    /// Drops by reason, indexed by `DropReason as usize`.
    pub drop_reason_pkts: [u64; 3],
    /// The drops of packets that had been admitted (CoDel, FQ-CoDel's
    /// overflow): part of `drop_*`, and no longer part of the backlog.
    pub drop_queued_pkts: u64,
    pub drop_queued_bytes: u64,
    /// Time from enqueue to dequeue of every packet sent, ns.
    pub sojourn: SojournHistogram,
    /// Packets held now, by colour (`Color as usize`): a state rather than
    /// a counter, kept by the packet store of each leaf queue.
    pub held_by_color: [u64; 3],
}

impl QueueCounters {
    pub fn on_enqueue(&mut self, size: u32) {
        self.enq_pkts += 1;
        self.enq_bytes += size as u64;
    }
    /// A packet of `size` bytes admitted at `enqueued` leaves for the wire
    /// (or the parent) at `now`.
    #[inline]
    pub fn on_dequeue(&mut self, size: u32, enqueued: SimTime, now: SimTime) {
        self.deq_pkts += 1;
        self.deq_bytes += size as u64;
        self.sojourn.record(now.since(enqueued).as_nanos());
    }
    /// The arriving packet of `size` bytes is refused.
    pub fn on_drop(&mut self, size: u32, reason: DropReason) {
        self.drop_pkts += 1;
        self.drop_bytes += size as u64;
        self.drop_reason_pkts[reason as usize] += 1;
    }
    /// A packet of `size` bytes that was queued is dropped.
    pub fn on_drop_queued(&mut self, size: u32, reason: DropReason) {
        self.on_drop(size, reason);
        self.drop_queued_pkts += 1;
        self.drop_queued_bytes += size as u64;
    }
}

/// Packets and bytes held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    pub pkts: u64,
    pub bytes: u64,
}

/// The answer of a discipline asked for its next packet.
#[derive(Debug)]
pub enum Dequeued {
    Packet(Packet),
    /// Nothing queued.
    Empty,
    /// Packets are held (by a shaper) until the given time.
    NotBefore(SimTime),
}

/// What a discipline may look at when it decides: the time, the link it
/// feeds, and its own random stream; and where it puts the packets it
/// drops after having admitted them.
pub struct QueueCtx<'a> {
    pub now: SimTime,
    pub link_rate: DataRate,
    pub rng: &'a mut Rng,
    /// Where packets dropped from inside the queue during this call go
    /// (not the arriving packet a refused enqueue gives back): the
    /// interface's sink, or none (tests of a discipline alone); each with
    /// the reason the discipline counted it under.
    pub dropped: Option<&'a mut Vec<(Packet, DropReason)>>,
}

impl<'a> QueueCtx<'a> {
    pub fn new(now: SimTime, link_rate: DataRate, rng: &'a mut Rng) -> Self {
        QueueCtx { now, link_rate, rng, dropped: None }
    }
    /// With a sink for the packets dropped from inside the queue.
    pub fn with_drops(now: SimTime, link_rate: DataRate, rng: &'a mut Rng, dropped: &'a mut Vec<(Packet, DropReason)>) -> Self {
        QueueCtx { now, link_rate, rng, dropped: Some(dropped) }
    }
    /// A packet that was queued is dropped for `reason`: to the sink, if any.
    pub fn drop_queued(&mut self, pkt: Packet, reason: DropReason) {
        if let Some(d) = &mut self.dropped {
            d.push((pkt, reason));
        }
    }
}

pub trait Qdisc: Send {
    /// Accept `pkt`, or give it back with the reason it was dropped. The
    /// discipline counts its own drops and sets `pkt.enqueued` (now) on the
    /// packets it stores.
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)>;
    /// The next packet to put on the wire.
    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued;
    /// Everything held, over all classes.
    fn backlog(&self) -> Backlog;
    /// The size of the packet the next dequeue gives, as far as it is known
    /// without dequeuing (a discipline that drops at dequeue, CoDel, gives
    /// the head it would try first); `None` when empty.
    fn head_size(&self) -> Option<u32>;
    /// Visit the counters of every queue: `class` is "" for a classless
    /// discipline, else the class name.
    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog));
    /// A packet bound for this queue was discarded by a policer of the
    /// forwarding router's filter before it arrived: count it as a
    /// [`DropReason::Policer`] drop of the queue it was headed for (the
    /// class its forwarding class or filters select), as a router's
    /// interface statistics show policed packets of the egress class. It
    /// was never offered: nothing else changes.
    fn count_policed(&mut self, pkt: &Packet);
    /// Read or change knob `name` of class `class` ("" for the discipline
    /// itself), see `knob.rs`. Default: no knobs.
    fn knob(&mut self, _class: &str, _name: &str, _op: KnobOp, _ctx: KnobCtx) -> KnobResult {
        Err(KnobError::Unknown)
    }
    /// Visit every YAQS inside (itself, or a class's child), with the class
    /// name ("" for the discipline itself): its own counters.
    fn for_each_yaqs(&self, _f: &mut dyn FnMut(&str, &yaqs::Yaqs)) {}
    /// Which of its queues the last dequeued packet came from (YAQS: 0 fast,
    /// 1 slow; 0 for a single queue): the interface's reorder counters
    /// split by it.
    fn last_band(&self) -> u8 {
        0
    }
}

/// An early-drop decision made as a packet arrives at a queue (RED, WRED,
/// RIO, the colour-blind and colour-aware profiles of router vendors). A
/// queue asks its profile before the tail-drop check, and tells it every
/// packet it admits and sends; the profile may keep state (an average, a
/// count since the last drop, the colours held) and draw from the queue's
/// random stream.
pub trait DropProfile: Send {
    /// Drop `pkt` (whose colour is `pkt.color`) arriving at a queue that
    /// holds `held` out of at most `limit`?
    fn early_drop(&mut self, pkt: &Packet, held: Backlog, limit: fifo::Limit, ctx: &mut QueueCtx) -> bool;
    /// `pkt` was admitted at `now`; the queue now holds `held`.
    fn on_enqueue(&mut self, _pkt: &Packet, _held: Backlog, _now: SimTime) {}
    /// `pkt` left at `now`; the queue now holds `held` (empty: an idle
    /// period starts, for the idle-time correction of an average).
    fn on_dequeue(&mut self, _pkt: &Packet, _held: Backlog, _now: SimTime) {}
    /// Read or change a knob (thresholds, `max_p`) or read a measurement
    /// (`avg`), see `knob.rs`. Default: none.
    fn knob(&mut self, _name: &str, _op: KnobOp) -> KnobResult {
        Err(KnobError::Unknown)
    }
}

/// Makes a class's child discipline for the class's buffer (its limit);
/// an error is located below the child's configuration (`fq_codel.quantum_bytes`).
#[derive(Clone)]
pub struct ChildBuilder(pub Arc<dyn Fn(fifo::Limit) -> Result<Box<dyn Qdisc>, ConfigError> + Send + Sync>);

impl ChildBuilder {
    pub fn new(f: impl Fn(fifo::Limit) -> Result<Box<dyn Qdisc>, ConfigError> + Send + Sync + 'static) -> Self {
        ChildBuilder(Arc::new(f))
    }
    pub fn build(&self, limit: fifo::Limit) -> Result<Box<dyn Qdisc>, ConfigError> {
        (self.0)(limit)
    }
}

impl std::fmt::Debug for ChildBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChildBuilder")
    }
}

/// The discipline a class holds.
pub enum Child {
    /// A FIFO on the class's buffer, with an optional early-drop profile.
    Fifo(Option<Box<dyn DropProfile>>),
    /// Any other discipline, made for the class's buffer.
    Build(ChildBuilder),
}

impl Child {
    pub fn build(self, limit: fifo::Limit) -> Result<Box<dyn Qdisc>, ConfigError> {
        match self {
            Child::Fifo(None) => Ok(Box::new(fifo::Fifo::new(limit))),
            Child::Fifo(Some(p)) => Ok(Box::new(fifo::Fifo::with_profile(limit, p))),
            Child::Build(b) => b.build(limit),
        }
    }
}

/// An interface's discipline. The FIFO (plain, or with a drop profile:
/// RED) is held by value, so that the per-packet calls of the commonest
/// queue are direct and inlined; every other discipline behind the trait.
/// Measured on the single-flow reference case of `make bench`.
pub enum LinkQdisc {
    Fifo(fifo::Fifo),
    Dyn(Box<dyn Qdisc>),
}

impl Qdisc for LinkQdisc {
    #[inline(always)]
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)> {
        match self {
            LinkQdisc::Fifo(q) => q.enqueue(pkt, ctx),
            LinkQdisc::Dyn(q) => q.enqueue(pkt, ctx),
        }
    }
    #[inline(always)]
    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued {
        match self {
            LinkQdisc::Fifo(q) => q.dequeue(ctx),
            LinkQdisc::Dyn(q) => q.dequeue(ctx),
        }
    }
    #[inline(always)]
    fn backlog(&self) -> Backlog {
        match self {
            LinkQdisc::Fifo(q) => q.backlog(),
            LinkQdisc::Dyn(q) => q.backlog(),
        }
    }
    fn head_size(&self) -> Option<u32> {
        self.as_dyn().head_size()
    }
    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog)) {
        self.as_dyn().for_each_queue(f)
    }
    fn count_policed(&mut self, pkt: &Packet) {
        match self {
            LinkQdisc::Fifo(q) => q.count_policed(pkt),
            LinkQdisc::Dyn(q) => q.count_policed(pkt),
        }
    }
    fn knob(&mut self, class: &str, name: &str, op: KnobOp, ctx: KnobCtx) -> KnobResult {
        match self {
            LinkQdisc::Fifo(q) => q.knob(class, name, op, ctx),
            LinkQdisc::Dyn(q) => q.knob(class, name, op, ctx),
        }
    }
    fn for_each_yaqs(&self, f: &mut dyn FnMut(&str, &yaqs::Yaqs)) {
        self.as_dyn().for_each_yaqs(f)
    }
    #[inline(always)]
    fn last_band(&self) -> u8 {
        match self {
            LinkQdisc::Fifo(_) => 0,
            LinkQdisc::Dyn(q) => q.last_band(),
        }
    }
}

impl LinkQdisc {
    pub fn as_dyn(&self) -> &dyn Qdisc {
        match self {
            LinkQdisc::Fifo(q) => q,
            LinkQdisc::Dyn(q) => q.as_ref(),
        }
    }
}
