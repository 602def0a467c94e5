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
pub mod classful;
pub mod classify;
pub mod fifo;
pub mod fq;

pub mod htb;
pub mod meter;
pub mod sched;
pub mod yaqs;

use crate::config::QueueConfig;
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

/// Makes a class's child discipline for the class's buffer (its limit).
#[derive(Clone)]
pub struct ChildBuilder(pub Arc<dyn Fn(fifo::Limit) -> Result<Box<dyn Qdisc>, String> + Send + Sync>);

impl ChildBuilder {
    pub fn new(f: impl Fn(fifo::Limit) -> Result<Box<dyn Qdisc>, String> + Send + Sync + 'static) -> Self {
        ChildBuilder(Arc::new(f))
    }
    pub fn build(&self, limit: fifo::Limit) -> Result<Box<dyn Qdisc>, String> {
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
    pub fn build(self, limit: fifo::Limit) -> Result<Box<dyn Qdisc>, String> {
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

/// Build a discipline from its configuration, for an interface whose MTU
/// is `mtu` bytes (MDRR derives its quanta from it).
pub fn build(cfg: &QueueConfig, mtu: u32) -> Result<LinkQdisc, String> {
    build_on(cfg, mtu, None)
}

/// As [`build`], on a link of `rate` if known (a Junos temporal buffer
/// needs it).
pub fn build_on(cfg: &QueueConfig, mtu: u32, rate: Option<DataRate>) -> Result<LinkQdisc, String> {
    use crate::config::QueueConfig::*;
    Ok(LinkQdisc::Dyn(match cfg {
        Fifo(c) => return Ok(LinkQdisc::Fifo(fifo::Fifo::new(fifo::Limit::from_opts(c.limit_pkts, c.limit_bytes)))),
        Red(c) => return Ok(LinkQdisc::Fifo(aqm::red::queue(aqm::red::RedParams::from_config(c)?))),
        Junos(c) => Box::new(build_junos(c, mtu, rate)?),
        Htb(c) => Box::new(build_htb(c, mtu)?),
        StrictPriority(c) => Box::new(classful::build(c, classful::Kind::StrictPriority, mtu)?),
        Wrr(c) => Box::new(classful::build(c, classful::Kind::Wrr, mtu)?),
        Drr(c) => Box::new(classful::build(c, classful::Kind::Drr, mtu)?),
        Mdrr(c) => Box::new(classful::build(c, classful::Kind::Mdrr, mtu)?),
        FqCodel(c) => Box::new(fq::fq_codel::FqCodel::new(fq_codel_params(c, None, mtu))?),
        Sfq(c) => Box::new(fq::sfq::Sfq::new(sfq_params(c, None, mtu))?),
        Yaqs(c) => Box::new(yaqs::params_from_config(c, fifo::Limit::from_opts(c.limit_pkts, c.limit_bytes)).and_then(yaqs::Yaqs::new).map_err(|e| format!("yaqs: {e}"))?),
    }))
}

/// Linux's default quantum and CoDel MTU on a link of IP MTU `mtu`: the
/// MTU plus the 14 B Ethernet header (`psched_mtu`), 1514 B on a 1500 B link.
fn psched_mtu(mtu: u32) -> u32 {
    mtu + 14
}

/// A queue's configuration with the parameters the engine fills in when
/// it builds it, written out: FQ-CoDel's and SFQ's absent keys, as a
/// link's queue and as the child of any class (HTB, Junos, strict priority,
/// WRR, DRR, MDRR) on the class's buffer, from the same functions as the
/// build, on a link of MTU `mtu` and rate `rate`: what
/// [`crate::config::applied`] reports. A classful queue that does not
/// build (a bad configuration) leaves its children as given.
pub fn applied_queue(q: &mut QueueConfig, mtu: u32, rate: Option<DataRate>) {
    // Each class's buffer, as the builder makes it.
    let buffers: Option<Vec<fifo::Limit>> = match &*q {
        QueueConfig::Htb(c) => Some(c.classes.iter().map(htb_class_limit).collect()),
        QueueConfig::Junos(c) => build_junos(c, mtu, rate).ok().map(|s| s.class_limits()),
        QueueConfig::StrictPriority(c) => classful::build(c, classful::Kind::StrictPriority, mtu).ok().map(|s| s.class_limits()),
        QueueConfig::Wrr(c) => classful::build(c, classful::Kind::Wrr, mtu).ok().map(|s| s.class_limits()),
        QueueConfig::Drr(c) => classful::build(c, classful::Kind::Drr, mtu).ok().map(|s| s.class_limits()),
        QueueConfig::Mdrr(c) => classful::build(c, classful::Kind::Mdrr, mtu).ok().map(|s| s.class_limits()),
        _ => None,
    };
    let children: Vec<&mut Option<crate::config::ChildConfig>> = match q {
        QueueConfig::FqCodel(c) => return applied_fq_codel(c, None, mtu),
        QueueConfig::Sfq(c) => return applied_sfq(c, None, mtu),
        QueueConfig::Htb(c) => c.classes.iter_mut().map(|k| &mut k.child).collect(),
        QueueConfig::Junos(c) => c.classes.iter_mut().map(|k| &mut k.child).collect(),
        QueueConfig::StrictPriority(c) | QueueConfig::Wrr(c) | QueueConfig::Drr(c) | QueueConfig::Mdrr(c) => {
            c.classes.iter_mut().map(|k| &mut k.child).collect()
        }
        _ => return,
    };
    for (child, buffer) in children.into_iter().zip(buffers.unwrap_or_default()) {
        match child {
            Some(crate::config::ChildConfig::FqCodel(c)) => applied_fq_codel(c, Some(buffer), mtu),
            Some(crate::config::ChildConfig::Sfq(c)) => applied_sfq(c, Some(buffer), mtu),
            _ => {}
        }
    }
}

/// A limit as the configuration's optional keys (`None`: no bound).
fn limit_opts(l: fifo::Limit) -> (Option<u64>, Option<u64>) {
    ((l.pkts != u64::MAX).then_some(l.pkts), (l.bytes != u64::MAX).then_some(l.bytes))
}

/// FQ-CoDel's absent keys filled in, as a link's queue (`class` None) or
/// inside a class whose buffer is `class`.
fn applied_fq_codel(c: &mut crate::config::FqCodelConfig, class: Option<fifo::Limit>, mtu: u32) {
    let p = fq_codel_params(c, class, mtu);
    (c.limit_pkts, c.limit_bytes) = limit_opts(p.limit);
    c.buckets = Some(p.buckets);
    c.quantum_bytes = Some(p.quantum);
    c.target_ns = Some(p.codel.target.as_nanos());
    c.interval_ns = Some(p.codel.interval.as_nanos());
    c.mtu_bytes = Some(p.codel.mtu);
    c.drop_batch = Some(p.drop_batch);
}

/// SFQ's absent keys filled in, as [`applied_fq_codel`].
fn applied_sfq(c: &mut crate::config::SfqConfig, class: Option<fifo::Limit>, mtu: u32) {
    let p = sfq_params(c, class, mtu);
    (c.limit_pkts, c.limit_bytes) = limit_opts(p.limit);
    c.buckets = Some(p.buckets);
    c.quantum_bytes = Some(p.quantum);
}

/// An HTB class's buffer: its limit, 1000 packets unless given (tc's
/// default for the leaf's pfifo is the device's txqueuelen, 1000).
fn htb_class_limit(k: &crate::config::HtbClassConfig) -> fifo::Limit {
    fifo::Limit::from_opts(k.limit_pkts.or(Some(1000)), k.limit_bytes)
}

fn own_limit(pkts: Option<u64>, bytes: Option<u64>) -> Option<fifo::Limit> {
    (pkts.is_some() || bytes.is_some()).then(|| fifo::Limit::from_opts(pkts, bytes))
}

/// FQ-CoDel's parameters from the configuration, as a link's queue
/// (`class` None) or inside a class whose buffer is `class`.
fn fq_codel_params(c: &crate::config::FqCodelConfig, class: Option<fifo::Limit>, mtu: u32) -> fq::fq_codel::FqCodelParams {
    use fq::fq_codel::{FqCodelParams, DEFAULT_LIMIT_PKTS};
    let d = FqCodelParams::default();
    let limit = fq::child_limit(own_limit(c.limit_pkts, c.limit_bytes), class, DEFAULT_LIMIT_PKTS);
    FqCodelParams {
        buckets: c.buckets.unwrap_or(d.buckets),
        quantum: c.quantum_bytes.unwrap_or(psched_mtu(mtu)),
        limit,
        codel: aqm::codel::CodelParams {
            target: c.target_ns.map_or(d.codel.target, crate::time::Duration),
            interval: c.interval_ns.map_or(d.codel.interval, crate::time::Duration),
            mtu: c.mtu_bytes.unwrap_or(psched_mtu(mtu)),
        },
        drop_batch: c.drop_batch.unwrap_or(d.drop_batch),
    }
}

/// Hashed DRR's parameters, as [`fq_codel_params`].
fn sfq_params(c: &crate::config::SfqConfig, class: Option<fifo::Limit>, mtu: u32) -> fq::sfq::SfqParams {
    use fq::sfq::{SfqParams, DEFAULT_LIMIT_PKTS};
    let d = SfqParams::default();
    let limit = fq::child_limit(own_limit(c.limit_pkts, c.limit_bytes), class, DEFAULT_LIMIT_PKTS);
    SfqParams { buckets: c.buckets.unwrap_or(d.buckets), quantum: c.quantum_bytes.unwrap_or(psched_mtu(mtu)), limit }
}

/// A class's child discipline from its configuration, on a link of MTU
/// `mtu`. Its parameters are checked here (errors start with `child: `);
/// the discipline is made later, for the class's buffer.
pub fn build_child(c: &crate::config::ChildConfig, mtu: u32) -> Result<ChildBuilder, String> {
    use crate::config::ChildConfig;
    let at = |e: String| format!("child: {e}");
    let c = c.clone();
    // Check once with an unlimited buffer; the builder cannot fail after.
    let make = move |limit: fifo::Limit| -> Result<Box<dyn Qdisc>, String> {
        Ok(match &c {
            ChildConfig::Fifo(f) => {
                if f.limit_pkts.is_some() || f.limit_bytes.is_some() {
                    return Err("fifo: limit_pkts/limit_bytes are not used here: the class buffer is the limit".into());
                }
                Box::new(fifo::Fifo::new(limit))
            }
            ChildConfig::Red(r) => {
                if r.limit_pkts.is_some() || r.limit_bytes.is_some() {
                    return Err("red: limit_pkts/limit_bytes are not used here: the class buffer is the limit".into());
                }
                let p = aqm::red::RedParams { limit, ..aqm::red::RedParams::from_config(r)? };
                Box::new(aqm::red::queue(p))
            }
            ChildConfig::FqCodel(f) => Box::new(fq::fq_codel::FqCodel::new(fq_codel_params(f, Some(limit), mtu))?),
            ChildConfig::Sfq(f) => Box::new(fq::sfq::Sfq::new(sfq_params(f, Some(limit), mtu))?),
            ChildConfig::Yaqs(y) => {
                if y.limit_pkts.is_some() || y.limit_bytes.is_some() {
                    return Err("yaqs: limit_pkts/limit_bytes are not used here: the class buffer is the limit".into());
                }
                Box::new(yaqs::params_from_config(y, limit).and_then(yaqs::Yaqs::new).map_err(|e| format!("yaqs: {e}"))?)
            }
        })
    };
    make(fifo::Limit::UNLIMITED).map_err(at)?;
    Ok(ChildBuilder::new(make))
}

/// A class's discipline from its `drop_profile` and `child` fields (at most
/// one of them).
pub(crate) fn class_child(drop_profile: Option<Box<dyn DropProfile>>, child: Option<&crate::config::ChildConfig>, mtu: u32) -> Result<Child, String> {
    match (drop_profile, child) {
        (Some(_), Some(_)) => Err("give a drop profile (a FIFO with that profile) or a child, not both".into()),
        (p, None) => Ok(Child::Fifo(p)),
        (None, Some(c)) => Ok(Child::Build(build_child(c, mtu)?)),
    }
}

fn build_htb(c: &crate::config::HtbConfig, mtu: u32) -> Result<htb::Htb, String> {
    use htb::{HtbClassSpec, HtbFilter, HtbParams};
    // Classes in tc order (parents first); filters u32-style, first match wins.
    let mut classes = Vec::with_capacity(c.classes.len());
    for (i, k) in c.classes.iter().enumerate() {
        let mut spec = HtbClassSpec::new(k.name.clone(), k.parent.as_deref(), DataRate(k.rate_bps))
            .prio(k.prio)
            .limit(htb_class_limit(k));
        if let Some(x) = k.ceil_bps {
            spec = spec.ceil(DataRate(x));
        }
        if let Some(x) = k.burst_bytes {
            spec = spec.burst(x);
        }
        if let Some(x) = k.cburst_bytes {
            spec = spec.cburst(x);
        }
        if let Some(x) = k.quantum_bytes {
            spec = spec.quantum(x);
        }
        if let Some(c) = &k.child {
            spec = spec.child(build_child(c, mtu).map_err(|e| format!("classes[{i}] ({}): {e}", k.name))?);
        }
        classes.push(spec);
    }
    let mut params = HtbParams::new(classes);
    for (i, f) in c.filters.iter().enumerate() {
        let prefix = |p: &Option<String>| p.as_deref().map(classify::Prefix::parse).transpose();
        let at = |e: String| format!("filters[{i}]: {e}");
        params = params.filter(HtbFilter { src: prefix(&f.src).map_err(at)?, dst: prefix(&f.dst).map_err(at)?, proto: f.proto, class: f.class.clone() });
    }
    if let Some(d) = &c.default_class {
        params = params.default_class(d);
    }
    htb::Htb::new(params)
}

fn build_junos(c: &crate::config::JunosConfig, mtu: u32, link_rate: Option<DataRate>) -> Result<sched::Scheduled<sched::junos::Junos>, String> {
    use aqm::piecewise::{DropCurve, FillMeasure, PiecewiseWred, PiecewiseWredParams};
    use sched::junos::{ExcessPriority, ExcessSharing, JunosClass, Priority, QueueParams, TransmitRate};
    let mut classes = Vec::with_capacity(c.classes.len());
    for (i, k) in c.classes.iter().enumerate() {
        let at = |e: String| format!("classes[{i}] ({}): {e}", k.name);
        let rate = match (k.transmit_rate_percent, k.transmit_rate_bps, k.transmit_rate_remainder) {
            (Some(p), None, false) => TransmitRate::Percent(p),
            (None, Some(r), false) => TransmitRate::Rate(DataRate(r)),
            (None, None, true) => TransmitRate::Remainder,
            _ => return Err(at("give exactly one transmit rate: percent, bps or remainder".into())),
        };
        let mut params = QueueParams::new(rate, Priority::parse(&k.priority).map_err(at)?);
        if k.exact {
            params = params.exact();
        }
        match (k.burst_bytes, k.meter_window_ns) {
            (Some(_), Some(_)) => return Err(at("give burst_bytes or meter_window_ns, not both".into())),
            (Some(b), None) => params = params.burst_bytes(b),
            (None, Some(w)) => params = params.meter_window(crate::time::Duration(w)),
            (None, None) => {}
        }
        if let Some(x) = k.excess_rate_percent {
            params = params.excess_rate(x);
        }
        if let Some(p) = &k.excess_priority {
            params = params.excess_priority(ExcessPriority::parse(p).map_err(at)?);
        }
        let buffer_size = match (k.buffer_percent, k.buffer_temporal_ns) {
            (Some(p), None) => sched::BufferSize::Percent(p),
            (None, Some(t)) => sched::BufferSize::Temporal(crate::time::Duration(t)),
            _ => return Err(at("give exactly one buffer size: buffer_percent or buffer_temporal_ns".into())),
        };
        let curve = |pts: &Option<Vec<(f64, f64)>>| pts.as_deref().map(DropCurve::junos).transpose();
        let curves = [curve(&k.drop_green).map_err(at)?, None, curve(&k.drop_red).map_err(at)?];
        let drop_profile: Option<Box<dyn DropProfile>> = match (&k.drop_profile, curves.iter().any(Option::is_some)) {
            (Some(_), true) => return Err(at("give drop_green/drop_red or drop_profile, not both".into())),
            (Some(d), false) => Some(classful::build_drop_profile(d).map_err(at)?),
            (None, true) => {
                let p = PiecewiseWredParams { measure: FillMeasure::JUNOS, curves };
                Some(Box::new(PiecewiseWred::new(p).map_err(at)?))
            }
            (None, false) => None,
        };
        classes.push(JunosClass {
            name: k.name.clone(),
            scheduler: params,
            buffer_size,
            child: class_child(drop_profile, k.child.as_ref(), mtu).map_err(at)?,
        });
    }
    let sharing = c.excess.as_deref().map(ExcessSharing::parse).transpose()?.unwrap_or_default();
    sched::junos::scheduled_on(classes, fifo::Limit::from_opts(c.buffer_pkts, c.buffer_bytes), link_rate, sharing)
}
