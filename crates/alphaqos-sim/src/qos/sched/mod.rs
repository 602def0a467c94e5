//! Classful egress scheduling: N class queues behind one scheduler.
//!
//! What it models: the egress of a router interface that holds several
//! "virtual queues" (Junos forwarding-class queues, Cisco MDRR queues), each
//! with its own share of the buffer, and a scheduler that decides which
//! queue the transmitter serves next. [`Scheduled`] is the [`Qdisc`] the
//! interface sees; the decision is delegated to a small [`Scheduler`], one
//! file per discipline:
//!
//! | file | discipline | reference |
//! |---|---|---|
//! | [`prio`] | strict priority | - |
//! | [`wrr`] | weighted round robin, weights in packets | - |
//! | [`drr`] | deficit round robin, quanta in bytes | Shreedhar & Varghese, SIGCOMM 1995 |
//! | [`mdrr`] | Cisco MDRR: DRR + a low-latency queue (strict or alternate) | Cisco 12000 documentation |
//! | [`junos`] | Juniper transmit-rate / priority / exact (WFQ + PQ) | Yan et al., CTRQ 2013, Section III-A |
//!
//! The engine configuration builds the Junos egress in `qos/mod.rs` and the
//! other four in `qos/classful.rs`.
//!
//! # Buffer
//!
//! Each class has its own [`Limit`]: the buffer is *strictly partitioned*, as
//! Yan, Veeraraghavan, Tracy and Guok measured on the Juniper MX80 ("On How
//! to Provision QoS for Large Dataset Transfers", CTRQ 2013, Section III-A):
//! a full queue drops arrivals while another queue still has room. A share
//! is given as [`BufferSize::Percent`] of the interface buffer (Junos
//! `buffer-size percent`) or as an absolute limit.
//!
//! # Child disciplines
//!
//! Each class holds a child [`Qdisc`] made for its limit ([`Child`]): a FIFO
//! by default, which on arrival first asks its optional [`DropProfile`]
//! (RED, WRED: the drop is counted as [`DropReason::Aqm`]), then checks its
//! limit (counted as [`DropReason::Tail`]); or a per-flow discipline
//! (FQ-CoDel, SFQ: `qos/fq`). The class's counters are its child's; a child
//! that reports sub-queues would be named `class/sub`. A child that drops
//! at dequeue (CoDel) may have nothing left when its class is picked: the
//! scheduler is then told the class is empty and asked again.
//!
//! # Classification
//!
//! A packet goes to the class indexed by `pkt.fclass` (set by the router's
//! classifier). An index out of range goes to the *default class*: class 0
//! unless [`Scheduled::with_default_class`] says otherwise (Junos puts
//! unclassified traffic in `best-effort`, queue 0).
//!
//! # The scheduler contract
//!
//! [`Scheduler::select`] is asked only when at least one class is
//! backlogged. A work-conserving scheduler answers [`Pick::Serve`] with a
//! backlogged class; a non-work-conserving one (Junos `exact`) may answer
//! [`Pick::Wait`]`(t)`, which the interface sees as
//! [`Dequeued::NotBefore`]`(t)`. After a packet leaves, the scheduler is told
//! (`on_sent`), and when a class turns empty or non-empty (`on_empty`,
//! `on_arrival`), so that round-robin disciplines can keep an active list.
//!
//! # Parameters
//!
//! - per class ([`ClassSpec`]): `name` (unique, the `class` column of the
//!   queue counters), `limit` (packets and/or bytes; see [`BufferSize`]),
//!   `child` (default a FIFO; [`ClassSpec::with_drop_profile`] for a FIFO
//!   with a profile);
//! - `default_class` (0).
//!
//! # Tests
//!
//! Unit tests below (classification, partitioned buffer, drop accounting);
//! `tests/sched.rs` drives every scheduler on a simulated link: long-run
//! shares, work conservation under random arrivals, per-class conservation.

pub mod drr;
pub mod junos;
pub mod mdrr;
pub mod prio;
pub mod wrr;

use super::fifo::Limit;
use crate::knob::{KnobCtx, KnobError, KnobOp, KnobResult};
use super::{Backlog, Child, Dequeued, DropProfile, DropReason, Qdisc, QueueCounters, QueueCtx};
use crate::packet::Packet;
use crate::time::{Duration, SimTime};
use crate::units::DataRate;
use crate::error::{ConfigError, Outer};

/// A class's share of the interface buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferSize {
    /// Junos `buffer-size percent p`: `p` percent (0..=100) of the interface
    /// buffer, applied to its packet and its byte limit alike (rounded down;
    /// an unlimited dimension stays unlimited).
    Percent(f64),
    /// An absolute limit, independent of the interface buffer.
    Absolute(Limit),
    /// Junos `buffer-size temporal t`: the bytes the class's transmit rate
    /// sends in `t` (see `junos.rs`), no packet limit.
    Temporal(Duration),
}

impl BufferSize {
    /// The class limit this share gives on an interface whose whole buffer
    /// is `interface` (a temporal size needs [`BufferSize::resolve_at`]).
    pub fn resolve(&self, interface: Limit) -> Result<Limit, ConfigError> {
        self.resolve_at(interface, None)
    }

    /// As [`BufferSize::resolve`], for a class served at `rate` (needed by
    /// a temporal size): `floor(rate * t / 8)` bytes.
    pub fn resolve_at(&self, interface: Limit, rate: Option<DataRate>) -> Result<Limit, ConfigError> {
        match *self {
            BufferSize::Absolute(l) => Ok(l),
            BufferSize::Temporal(t) => {
                let rate = rate.ok_or_else(|| ConfigError::new("a temporal buffer size needs the queue's transmit rate (the link rate is not known here)"))?;
                let bytes = rate.as_bps() as u128 * t.as_nanos() as u128 / 8_000_000_000;
                Ok(Limit { pkts: u64::MAX, bytes: bytes.min(u64::MAX as u128) as u64 })
            }
            BufferSize::Percent(p) => {
                if !(0.0..=100.0).contains(&p) {
                    return Err(ConfigError::new(format!("a buffer percent must be in [0, 100], got {p}")));
                }
                let part = |x: u64| if x == u64::MAX { u64::MAX } else { (x as f64 * p / 100.0).floor() as u64 };
                Ok(Limit { pkts: part(interface.pkts), bytes: part(interface.bytes) })
            }
        }
    }
}

/// User parameters of one class.
pub struct ClassSpec {
    /// Unique, non-empty: the class column of the per-queue counters.
    pub name: String,
    /// Its buffer (strictly its own): the limit of its child discipline.
    pub limit: Limit,
    /// The discipline that holds its packets (a FIFO by default).
    pub child: Child,
}

impl ClassSpec {
    pub fn new(name: impl Into<String>, limit: Limit) -> Self {
        ClassSpec { name: name.into(), limit, child: Child::Fifo(None) }
    }
    /// A FIFO with an early-drop profile (WRED per colour, RED).
    pub fn with_drop_profile(mut self, p: Box<dyn DropProfile>) -> Self {
        self.child = Child::Fifo(Some(p));
        self
    }
    pub fn with_child(mut self, child: Child) -> Self {
        self.child = child;
        self
    }
}

/// One class: its name, its buffer and its child discipline. Schedulers
/// read it through [`ClassQueue::backlog`], [`ClassQueue::is_empty`] and
/// [`ClassQueue::head_size`].
pub struct ClassQueue {
    name: String,
    limit: Limit,
    child: Box<dyn Qdisc>,
    /// The child's backlog, kept here so that schedulers read it without a
    /// call through the child.
    held: Backlog,
}

impl ClassQueue {
    /// A problem of the child is located below it (`child.fq_codel.buckets`).
    fn new(spec: ClassSpec) -> Result<Self, ConfigError> {
        let child = spec.child.build(spec.limit).outer("child")?;
        Ok(ClassQueue { name: spec.name, limit: spec.limit, held: child.backlog(), child })
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn limit(&self) -> Limit {
        self.limit
    }
    pub fn backlog(&self) -> Backlog {
        self.held
    }
    pub fn is_empty(&self) -> bool {
        self.held.pkts == 0
    }
    /// Size in bytes of the packet at the head, the next one this class sends.
    pub fn head_size(&self) -> Option<u32> {
        self.child.head_size()
    }
    pub fn child(&self) -> &dyn Qdisc {
        self.child.as_ref()
    }
}

/// A scheduler's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Send the head packet of this (backlogged) class.
    Serve(usize),
    /// Nothing may be sent before this time (non-work-conserving classes
    /// only, e.g. Junos `exact`): the interface asks again then.
    Wait(SimTime),
}

/// Picks which class the transmitter serves next. Every hook receives `now`.
pub trait Scheduler: Send {
    /// The number of classes it was configured for.
    fn num_classes(&self) -> usize;
    /// Which class to serve. Called only when at least one class is
    /// backlogged; must answer a backlogged class or `Wait(t)` with `t > now`.
    fn select(&mut self, classes: &[ClassQueue], now: SimTime, link_rate: DataRate) -> Pick;
    /// A packet of `bytes` from `class` went to the transmitter at `now`.
    fn on_sent(&mut self, class: usize, bytes: u32, now: SimTime, link_rate: DataRate);
    /// `class` was empty and has just received a packet.
    fn on_arrival(&mut self, _class: usize, _now: SimTime) {}
    /// `class` has just sent its last packet.
    fn on_empty(&mut self, _class: usize, _now: SimTime) {}
    /// Read or change a knob of `class` (its rate, weight, quantum), see
    /// `knob.rs`. Default: none.
    fn knob(&mut self, _class: usize, _name: &str, _op: KnobOp, _ctx: KnobCtx) -> KnobResult {
        Err(KnobError::Unknown)
    }
}

impl<S: Scheduler + ?Sized> Scheduler for Box<S> {
    fn num_classes(&self) -> usize {
        (**self).num_classes()
    }
    fn select(&mut self, classes: &[ClassQueue], now: SimTime, link_rate: DataRate) -> Pick {
        (**self).select(classes, now, link_rate)
    }
    fn on_sent(&mut self, class: usize, bytes: u32, now: SimTime, link_rate: DataRate) {
        (**self).on_sent(class, bytes, now, link_rate)
    }
    fn on_arrival(&mut self, class: usize, now: SimTime) {
        (**self).on_arrival(class, now)
    }
    fn on_empty(&mut self, class: usize, now: SimTime) {
        (**self).on_empty(class, now)
    }
    fn knob(&mut self, class: usize, name: &str, op: KnobOp, ctx: KnobCtx) -> KnobResult {
        (**self).knob(class, name, op, ctx)
    }
}

/// The classful discipline: class queues plus a scheduler.
pub struct Scheduled<S: Scheduler = Box<dyn Scheduler>> {
    classes: Vec<ClassQueue>,
    sched: S,
    default_class: usize,
    total: Backlog,
    /// The class of the last packet dequeued.
    last: usize,
}

impl<S: Scheduler> Scheduled<S> {
    /// Classes in index order (`pkt.fclass` indexes them); the default class
    /// is 0. Rejects an empty list, more than 256 classes (`fclass` is a
    /// byte), empty or repeated names, and a scheduler built for another
    /// number of classes.
    ///
    /// A problem is located at `classes` or below (`classes[2].name`).
    pub fn new(classes: Vec<ClassSpec>, sched: S) -> Result<Self, ConfigError> {
        if classes.is_empty() {
            return Err(ConfigError::at("classes", "need at least one class"));
        }
        if classes.len() > 256 {
            return Err(ConfigError::at("classes", format!("at most 256 classes (fclass is a byte), got {}", classes.len())));
        }
        for (i, c) in classes.iter().enumerate() {
            let at = |msg: String| ConfigError::at("name", msg).with_outer(i).with_outer("classes");
            if c.name.is_empty() {
                return Err(at("empty name".into()));
            }
            if classes[..i].iter().any(|d| d.name == c.name) {
                return Err(at(format!("name {:?} is used twice", c.name)));
            }
        }
        if sched.num_classes() != classes.len() {
            return Err(ConfigError::at(
                "classes",
                format!("the scheduler is configured for {} classes, the queue has {}", sched.num_classes(), classes.len()),
            ));
        }
        let classes = classes.into_iter().enumerate().map(|(i, c)| ClassQueue::new(c).outer(i).outer("classes")).collect::<Result<Vec<_>, _>>()?;
        Ok(Scheduled { classes, sched, default_class: 0, total: Backlog::default(), last: 0 })
    }

    /// Packets whose `fclass` is out of range go to class `i` instead of 0.
    pub fn with_default_class(mut self, i: usize) -> Result<Self, ConfigError> {
        if i >= self.classes.len() {
            return Err(ConfigError::at("default_class", format!("class {i} out of range (0..{})", self.classes.len())));
        }
        self.default_class = i;
        Ok(self)
    }

    pub fn default_class(&self) -> usize {
        self.default_class
    }

    /// The class a packet is queued in.
    pub fn class_of(&self, pkt: &Packet) -> usize {
        let i = pkt.fclass as usize;
        if i < self.classes.len() {
            i
        } else {
            self.default_class
        }
    }

    pub fn classes(&self) -> &[ClassQueue] {
        &self.classes
    }

    pub fn class_index(&self, name: &str) -> Option<usize> {
        self.classes.iter().position(|c| c.name == name)
    }

    pub fn scheduler(&self) -> &S {
        &self.sched
    }
}

impl<S: Scheduler> Scheduled<S> {
    /// Bring the class's backlog and the total up to date after a call
    /// into its child (which may have dropped queued packets).
    fn resync(&mut self, i: usize) -> Backlog {
        let c = &mut self.classes[i];
        let (before, after) = (c.held, c.child.backlog());
        c.held = after;
        self.total.pkts = self.total.pkts - before.pkts + after.pkts;
        self.total.bytes = self.total.bytes - before.bytes + after.bytes;
        before
    }
}

impl<S: Scheduler> Scheduled<S> {
    /// Each class's buffer, in class order (what its child discipline is made for).
    pub fn class_limits(&self) -> Vec<Limit> {
        self.classes.iter().map(ClassQueue::limit).collect()
    }
}

impl<S: Scheduler> Qdisc for Scheduled<S> {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)> {
        let i = self.class_of(&pkt);
        let res = self.classes[i].child.enqueue(pkt, ctx);
        let before = self.resync(i);
        let now_empty = self.classes[i].is_empty();
        if before.pkts == 0 && !now_empty {
            self.sched.on_arrival(i, ctx.now);
        } else if before.pkts > 0 && now_empty {
            self.sched.on_empty(i, ctx.now);
        }
        res
    }

    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued {
        // A child that drops at dequeue (CoDel) may turn out to have
        // nothing to send: the scheduler is told it is empty and asked again.
        while self.total.pkts > 0 {
            match self.sched.select(&self.classes, ctx.now, ctx.link_rate) {
                Pick::Serve(i) => {
                    let got = self.classes[i].child.dequeue(ctx);
                    self.resync(i);
                    let emptied = self.classes[i].is_empty();
                    match got {
                        Dequeued::Packet(p) => {
                            self.sched.on_sent(i, p.size, ctx.now, ctx.link_rate);
                            self.last = i;
                            if emptied {
                                self.sched.on_empty(i, ctx.now);
                            }
                            return Dequeued::Packet(p);
                        }
                        Dequeued::Empty if emptied => self.sched.on_empty(i, ctx.now),
                        other => panic!("class {i} ({:?}) was picked and answered {other:?}", self.classes[i].name),
                    }
                }
                // Never ask the interface to come back at or before `now`.
                Pick::Wait(t) => return Dequeued::NotBefore(t.max(ctx.now + Duration(1))),
            }
        }
        Dequeued::Empty
    }

    fn backlog(&self) -> Backlog {
        self.total
    }

    fn head_size(&self) -> Option<u32> {
        // Without asking the scheduler (which may change its state): the
        // head of the first backlogged class.
        self.classes.iter().find(|c| !c.is_empty()).and_then(|c| c.head_size())
    }

    fn knob(&mut self, class: &str, name: &str, op: KnobOp, ctx: KnobCtx) -> KnobResult {
        let i = self.class_index(class).ok_or(KnobError::Unknown)?;
        match self.sched.knob(i, name, op, ctx) {
            Err(KnobError::Unknown) => self.classes[i].child.knob("", name, op, ctx),
            r => r,
        }
    }

    fn for_each_yaqs(&self, f: &mut dyn FnMut(&str, &super::yaqs::Yaqs)) {
        for c in &self.classes {
            c.child.for_each_yaqs(&mut |sub, y| if sub.is_empty() { f(&c.name, y) } else { f(&format!("{}/{sub}", c.name), y) });
        }
    }

    fn last_band(&self) -> u8 {
        self.classes[self.last].child.last_band()
    }

    fn count_policed(&mut self, pkt: &Packet) {
        let i = self.class_of(pkt);
        self.classes[i].child.count_policed(pkt);
    }

    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog)) {
        for c in &self.classes {
            c.child.for_each_queue(&mut |sub, counters, b| {
                if sub.is_empty() {
                    f(&c.name, counters, b)
                } else {
                    f(&format!("{}/{sub}", c.name), counters, b)
                }
            });
        }
    }
}

/// Round-robin helper shared by the schedulers: the first index `i` in
/// cyclic order from `start` (inclusive) over `0..n` with `ok(i)`.
pub(crate) fn next_cyclic(n: usize, start: usize, mut ok: impl FnMut(usize) -> bool) -> Option<usize> {
    (0..n).map(|k| (start + k) % n).find(|&i| ok(i))
}

#[cfg(test)]
mod tests {
    use super::prio::StrictPriority;
    use super::*;
    use crate::rng::Rng;

    fn pkt(class: u8, size: u32) -> Packet {
        let mut p = Packet::test(0, size);
        p.fclass = class;
        p
    }

    fn two(limit: Limit) -> Scheduled<StrictPriority> {
        let classes = vec![ClassSpec::new("a", limit), ClassSpec::new("b", limit)];
        Scheduled::new(classes, StrictPriority::new(vec![1, 0])).unwrap()
    }

    #[test]
    fn percent_buffer_shares() {
        let buf = Limit { pkts: 1000, bytes: 1_250_000 };
        assert_eq!(BufferSize::Percent(5.0).resolve(buf).unwrap(), Limit { pkts: 50, bytes: 62_500 });
        assert_eq!(BufferSize::Percent(70.0).resolve(Limit::UNLIMITED).unwrap(), Limit::UNLIMITED);
        assert_eq!(BufferSize::Percent(0.5).resolve(Limit { pkts: 3, bytes: u64::MAX }).unwrap().pkts, 0);
        assert!(BufferSize::Percent(101.0).resolve(buf).is_err());
        let abs = Limit::from_opts(Some(7), None);
        assert_eq!(BufferSize::Absolute(abs).resolve(buf).unwrap(), abs);
        // Temporal: rate x time, bytes only; without a rate, an error.
        let t = BufferSize::Temporal(Duration::from_millis(100));
        assert_eq!(t.resolve_at(buf, Some(DataRate::gbps(10))).unwrap(), Limit { pkts: u64::MAX, bytes: 125_000_000 });
        assert_eq!(BufferSize::Temporal(Duration::from_micros(1)).resolve_at(buf, Some(DataRate::mbps(100))).unwrap().bytes, 12);
        assert!(t.resolve(buf).is_err());
    }

    #[test]
    fn construction_is_validated() {
        let l = Limit::UNLIMITED;
        let sp = || StrictPriority::new(vec![0, 0]);
        assert!(Scheduled::new(vec![], StrictPriority::new(vec![])).is_err());
        assert!(Scheduled::new(vec![ClassSpec::new("a", l), ClassSpec::new("a", l)], sp()).is_err());
        assert!(Scheduled::new(vec![ClassSpec::new("a", l), ClassSpec::new("", l)], sp()).is_err());
        assert!(Scheduled::new(vec![ClassSpec::new("a", l)], sp()).is_err());
        let q = Scheduled::new(vec![ClassSpec::new("a", l), ClassSpec::new("b", l)], sp()).unwrap();
        assert!(q.with_default_class(2).is_err());
    }

    #[test]
    fn out_of_range_classes_go_to_the_default_class() {
        let mut rng = Rng::stream(1, "t");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let mut q = two(Limit::UNLIMITED);
        q.enqueue(pkt(9, 100), &mut ctx).unwrap();
        assert_eq!(q.classes()[0].backlog().pkts, 1);
        let mut q = two(Limit::UNLIMITED).with_default_class(1).unwrap();
        q.enqueue(pkt(200, 100), &mut ctx).unwrap();
        q.enqueue(pkt(0, 100), &mut ctx).unwrap();
        assert_eq!((q.classes()[0].backlog().pkts, q.classes()[1].backlog().pkts), (1, 1));
        assert_eq!(q.class_index("b"), Some(1));
    }

    #[test]
    fn buffer_is_strictly_partitioned_and_drops_are_counted_by_reason() {
        struct EveryOther(bool);
        impl DropProfile for EveryOther {
            fn early_drop(&mut self, _: &Packet, _: Backlog, _: Limit, _: &mut QueueCtx) -> bool {
                self.0 = !self.0;
                self.0
            }
        }
        let mut rng = Rng::stream(1, "t");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let lim = Limit::from_opts(Some(3), None);
        let classes = vec![ClassSpec::new("a", lim), ClassSpec::new("b", lim).with_drop_profile(Box::new(EveryOther(false)))];
        let mut q = Scheduled::new(classes, StrictPriority::new(vec![1, 0])).unwrap();
        for _ in 0..5 {
            let _ = q.enqueue(pkt(0, 1000), &mut ctx);
        }
        // Class a is full (3) and drops, class b still has all its room.
        assert_eq!(q.enqueue(pkt(0, 1000), &mut ctx).unwrap_err().1, DropReason::Tail);
        assert_eq!(q.enqueue(pkt(1, 1000), &mut ctx).unwrap_err().1, DropReason::Aqm);
        assert!(q.enqueue(pkt(1, 1000), &mut ctx).is_ok());
        let mut seen = vec![];
        q.for_each_queue(&mut |name, c, b| seen.push((name.to_string(), c.clone(), b)));
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].0, "a");
        assert_eq!((seen[0].1.enq_pkts, seen[0].1.drop_pkts, seen[0].1.drop_reason_pkts), (3, 3, [3, 0, 0]));
        assert_eq!((seen[1].1.enq_pkts, seen[1].1.drop_pkts, seen[1].1.drop_reason_pkts), (1, 1, [0, 1, 0]));
        assert_eq!(q.backlog(), Backlog { pkts: 4, bytes: 4000 });
        // Strict priority: a (level 1) drains first.
        let order: Vec<u8> = std::iter::from_fn(|| match q.dequeue(&mut ctx) {
            Dequeued::Packet(p) => Some(p.fclass),
            _ => None,
        })
        .collect();
        assert_eq!(order, vec![0, 0, 0, 1]);
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Empty));
    }
}
