//! Queueing and scheduling at an interface's egress.
//!
//! Every egress queue of a link is a [`Qdisc`]: the interface hands it each
//! packet to send and asks it for the next packet whenever the transmitter is
//! free. A discipline may be classless (a FIFO, RED) or classful (several
//! queues behind a scheduler, shapers): the trait lets a discipline answer
//! "nothing now, but try again at t" for shapers, and report the counters of
//! each of its queues under a class name, so that classful disciplines slot
//! in without the interface knowing.

pub mod aqm;
pub mod classful;
pub mod classify;
pub mod fifo;
pub mod htb;
pub mod meter;
pub mod sched;

use crate::config::QueueConfig;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::SimTime;
use crate::units::DataRate;

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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    pub enq_pkts: u64,
    pub enq_bytes: u64,
    pub deq_pkts: u64,
    pub deq_bytes: u64,
    pub drop_pkts: u64,
    pub drop_bytes: u64,
    /// Drops by reason, indexed by `DropReason as usize`.
    pub drop_reason_pkts: [u64; 3],
}

impl QueueCounters {
    pub fn on_enqueue(&mut self, size: u32) {
        self.enq_pkts += 1;
        self.enq_bytes += size as u64;
    }
    pub fn on_dequeue(&mut self, size: u32) {
        self.deq_pkts += 1;
        self.deq_bytes += size as u64;
    }
    pub fn on_drop(&mut self, size: u32, reason: DropReason) {
        self.drop_pkts += 1;
        self.drop_bytes += size as u64;
        self.drop_reason_pkts[reason as usize] += 1;
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
/// feeds, and its own random stream.
pub struct QueueCtx<'a> {
    pub now: SimTime,
    pub link_rate: DataRate,
    pub rng: &'a mut Rng,
}

pub trait Qdisc: Send {
    /// Accept `pkt`, or give it back with the reason it was dropped. The
    /// discipline counts its own drops.
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)>;
    /// The next packet to put on the wire.
    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued;
    /// Everything held, over all classes.
    fn backlog(&self) -> Backlog;
    /// Visit the counters of every queue: `class` is "" for a classless
    /// discipline, else the class name.
    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog));
}

/// An early-drop decision made as a packet arrives at a queue (RED, WRED,
/// RIO, the colour-blind and colour-aware profiles of router vendors). A
/// queue asks its profile before the tail-drop check; the profile may keep
/// state (an average, a count since the last drop) and draw from the
/// queue's random stream.
pub trait DropProfile: Send {
    /// Drop `pkt` (whose colour is `pkt.color`) arriving at a queue that
    /// holds `held` out of at most `limit`?
    fn early_drop(&mut self, pkt: &Packet, held: Backlog, limit: fifo::Limit, ctx: &mut QueueCtx) -> bool;
    /// The queue went empty at `now` (for idle-time corrections).
    fn on_empty(&mut self, _now: SimTime) {}
}

/// Build a discipline from its configuration, for an interface whose MTU
/// is `mtu` bytes (MDRR derives its quanta from it).
pub fn build(cfg: &QueueConfig, mtu: u32) -> Result<Box<dyn Qdisc>, String> {
    use crate::config::QueueConfig::*;
    Ok(match cfg {
        Fifo(c) => Box::new(fifo::Fifo::new(fifo::Limit::from_opts(c.limit_pkts, c.limit_bytes))),
        Red(c) => Box::new(aqm::red::Red::new(aqm::red::RedParams::from_config(c)?)),
        Junos(c) => Box::new(build_junos(c)?),
        Htb(c) => Box::new(build_htb(c)?),
        StrictPriority(c) => Box::new(classful::build(c, classful::Kind::StrictPriority, mtu)?),
        Wrr(c) => Box::new(classful::build(c, classful::Kind::Wrr, mtu)?),
        Drr(c) => Box::new(classful::build(c, classful::Kind::Drr, mtu)?),
        Mdrr(c) => Box::new(classful::build(c, classful::Kind::Mdrr, mtu)?),
    })
}

fn build_htb(c: &crate::config::HtbConfig) -> Result<htb::Htb, String> {
    use htb::{HtbClassSpec, HtbFilter, HtbParams};
    // Classes in tc order (parents first); filters u32-style, first match wins.
    let mut classes = Vec::with_capacity(c.classes.len());
    for k in &c.classes {
        let mut spec = HtbClassSpec::new(k.name.clone(), k.parent.as_deref(), DataRate(k.rate_bps))
            .prio(k.prio)
            .limit(fifo::Limit::from_opts(k.limit_pkts.or(Some(1000)), k.limit_bytes));
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

fn build_junos(c: &crate::config::JunosConfig) -> Result<sched::Scheduled<sched::junos::Junos>, String> {
    use aqm::wred::{DropCurve, FillMeasure, PiecewiseWred, PiecewiseWredParams};
    use sched::junos::{JunosClass, Priority, QueueParams, TransmitRate};
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
        if let Some(b) = k.burst_bytes {
            params = params.burst_bytes(b);
        }
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
            buffer_size: sched::BufferSize::Percent(k.buffer_percent),
            drop_profile,
        });
    }
    sched::junos::scheduled(classes, fifo::Limit::from_opts(c.buffer_pkts, c.buffer_bytes))
}
