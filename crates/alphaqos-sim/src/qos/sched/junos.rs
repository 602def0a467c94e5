//! Juniper (Junos) egress scheduler: transmit-rate, priority, exact.
//!
//! What it models: the egress of the Juniper MX80 measured by Yan,
//! Veeraraghavan, Tracy and Guok, "On How to Provision QoS for Large
//! Dataset Transfers", CTRQ 2013, Section III-A and Fig. 2: every queue has
//! a `transmit-rate` (a fraction of the link), a `buffer-size` (strictly
//! partitioned: see [`super::BufferSize`]) and a `priority`; a WFQ stage
//! marks each *queue* in or out of profile by comparing the rate it has
//! been served at with its transmit rate; a PQ stage serves the in-profile
//! queues by priority, moves to the next queue as soon as the one it serves
//! turns out of profile, and, when every queue is out of profile, serves
//! them by priority again; the transmitter is work-conserving. The order of
//! service follows Juniper's "Priority Scheduling Overview" (Junos OS Class
//! of Service configuration guide):
//!
//! 1. `strict-high` queues, whenever backlogged (unlimited bandwidth);
//! 2. in-profile queues: `high`, then `medium-high`, `medium-low`, `low`;
//! 3. out-of-profile queues that are not rate-limited (`exact`), in the
//!    same priority order;
//!
//! with round robin among the backlogged queues of one priority. An `exact`
//! queue is never served out of profile: when only out-of-profile exact
//! queues are backlogged the scheduler answers [`Pick::Wait`] until the
//! first of them is back in profile (`transmit-rate ... exact`: "enforce
//! the exact transmission rate", Junos `transmit-rate` statement). The
//! interface must then ask again when a packet arrives for another queue
//! before that time, or the wait would hold back work-conserving queues.
//!
//! # The rate meter (the WFQ stage)
//!
//! Junos compares "at regular intervals" the bytes a queue sent with the
//! bytes its transmit rate allows; the interval is not documented. Here
//! each queue has a token bucket at its transmit rate `r_i`, depth
//! `burst_bytes` (default [`DEFAULT_BURST_BYTES`] = 1500 B, one Ethernet
//! MTU), full at the start:
//!
//! - tokens grow at `r_i` up to the depth: `tokens <- min(depth, tokens +
//!   r_i * elapsed)`;
//! - the queue is *in profile* while `tokens > 0`;
//! - a packet sent while in profile takes its size from the bucket, which
//!   may go below zero by less than one packet; a packet sent out of
//!   profile (excess bandwidth, step 3) is not charged, so using the idle
//!   link never delays a queue's return to its guaranteed rate (Junos on
//!   MX accounts guaranteed and excess bandwidth apart in the same way).
//!
//! Why one MTU: the document observes (Section III-C, explanation of the
//! (10,30,60) column of Table I) that the α queue with a 10% share was
//! declared out of profile after the first packets of a burst; a bucket of
//! one packet reproduces that (`tests/sched.rs` replays the story: the
//! scavenger queue overtakes the α queue after its second packet), a deeper
//! one would let whole bursts through in profile. A much smaller depth
//! fails the other way: a queue in profile that waits while higher ones are
//! served loses the credit it cannot bank, and the guarantees are no longer
//! met (with a 1-byte depth the 5/20/70/5 % example of the document was
//! served 30/15/50/5). Tokens are kept in bit-nanoseconds (bytes x 8 x
//! 10^9) so that `r_i * elapsed` with `r_i` in bit/s and `elapsed` in ns is
//! exact.
//!
//! # Simplifications
//!
//! - Five priorities, strictly ordered: on M/T series `strict-high` and
//!   `high` take turns (Junos "Priority Scheduling Overview"); here
//!   strict-high is always first, as on the document's MX80 model. Several
//!   strict-high queues are accepted (Junos allows one per interface).
//! - Round robin among equal priorities is per packet; Junos runs a WRR
//!   weighted by transmit rate inside a priority set.
//! - Excess bandwidth goes by priority (the document's description), not
//!   by `excess-rate`/`excess-priority` (later MX Trio features).
//! - `transmit-rate percent` is a share of the link rate the interface
//!   reports (no shaping-rate, no per-unit scheduling); `rate-limit`,
//!   `buffer-size temporal` and `remainder` for buffers are not modelled.
//!
//! # Parameters (per queue, [`QueueParams`])
//!
//! - `transmit_rate`: [`TransmitRate::Percent`] (0..=100, of the link),
//!   [`TransmitRate::Rate`] (bit/s) or [`TransmitRate::Remainder`] (the
//!   link minus the other queues' rates, split evenly); percents may not
//!   add up to more than 100;
//! - `priority`: [`Priority`], no default;
//! - `exact`: false (work-conserving) by default; needs a non-zero,
//!   non-remainder rate;
//! - `burst_bytes`: meter depth, 1500 B by default.
//!
//! # Tests
//!
//! Unit tests below (meter arithmetic, the Wait time of exact queues,
//! validation); `tests/sched.rs`: long-run shares equal the transmit rates
//! within 2% with every queue backlogged; a queue under its rate at higher
//! priority is served at once; one above its rate yields to in-profile
//! queues; with every queue out of profile the excess goes by priority; an
//! exact queue never exceeds its rate (and the link idles); work
//! conservation without exact queues; the reordering of the document's
//! Table I explanation with (49,50,1) versus (10,30,60).

use crate::control::knob::{KnobCtx, KnobError, KnobOp, KnobResult};
use super::{next_cyclic, BufferSize, ClassQueue, ClassSpec, Pick, Scheduled, Scheduler};
use crate::qos::fifo::Limit;
use crate::qos::Child;
use crate::time::{Duration, SimTime};
use crate::units::DataRate;

/// Meter depth by default: one Ethernet MTU (see the module doc).
pub const DEFAULT_BURST_BYTES: u64 = 1500;

/// Token units per byte: 8 bits x 10^9 ns/s (bit-nanoseconds).
const UNITS_PER_BYTE: i128 = 8 * 1_000_000_000;

/// Junos scheduler `priority`, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    Low = 0,
    MediumLow = 1,
    MediumHigh = 2,
    High = 3,
    StrictHigh = 4,
}

impl Priority {
    pub const ALL: [Priority; 5] = [Priority::Low, Priority::MediumLow, Priority::MediumHigh, Priority::High, Priority::StrictHigh];
    /// The Junos keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::MediumLow => "medium-low",
            Priority::MediumHigh => "medium-high",
            Priority::High => "high",
            Priority::StrictHigh => "strict-high",
        }
    }
    /// From the Junos keyword (`strict-high`, `high`, `medium-high`,
    /// `medium-low`, `low`).
    pub fn parse(s: &str) -> Result<Priority, String> {
        Priority::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("junos: unknown priority {s:?} (strict-high, high, medium-high, medium-low, low)"))
    }
}

/// Junos `transmit-rate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TransmitRate {
    /// `transmit-rate percent p`: p percent (0..=100) of the link rate.
    Percent(f64),
    /// `transmit-rate <rate>`: an absolute rate.
    Rate(DataRate),
    /// `transmit-rate remainder`: what the other queues leave of the link,
    /// split evenly among the remainder queues.
    Remainder,
}

/// A queue's scheduler parameters (Junos `[edit class-of-service
/// schedulers <name>]`, without `buffer-size`, which is the class's
/// [`Limit`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueParams {
    pub transmit_rate: TransmitRate,
    pub priority: Priority,
    /// `transmit-rate ... exact`: never served above the rate.
    pub exact: bool,
    /// Depth of the in/out-of-profile meter, bytes.
    pub burst_bytes: u64,
}

impl QueueParams {
    /// Work-conserving, meter depth [`DEFAULT_BURST_BYTES`].
    pub fn new(transmit_rate: TransmitRate, priority: Priority) -> Self {
        QueueParams { transmit_rate, priority, exact: false, burst_bytes: DEFAULT_BURST_BYTES }
    }
    pub fn exact(mut self) -> Self {
        self.exact = true;
        self
    }
    pub fn burst_bytes(mut self, b: u64) -> Self {
        self.burst_bytes = b;
        self
    }
}

/// The transmit rates of `queues` on a link of `link_rate`, in bit/s.
pub fn resolve_rates(queues: &[QueueParams], link_rate: DataRate) -> Vec<DataRate> {
    let link = link_rate.as_bps();
    let explicit = |q: &QueueParams| match q.transmit_rate {
        TransmitRate::Percent(p) => Some((link as f64 * p / 100.0).round() as u64),
        TransmitRate::Rate(r) => Some(r.as_bps()),
        TransmitRate::Remainder => None,
    };
    let taken: u64 = queues.iter().filter_map(explicit).fold(0u64, |a, r| a.saturating_add(r));
    let n_rem = queues.iter().filter(|q| q.transmit_rate == TransmitRate::Remainder).count() as u64;
    let rem = link.saturating_sub(taken).checked_div(n_rem).unwrap_or(0);
    queues.iter().map(|q| DataRate(explicit(q).unwrap_or(rem))).collect()
}

#[derive(Clone, Debug)]
pub struct Junos {
    params: Vec<QueueParams>,
    /// Profile: the link rate the rates were resolved for, the rates in
    /// bit/s, the bucket depths in token units.
    resolved_for: Option<DataRate>,
    rates: Vec<i128>,
    depth: Vec<i128>,
    /// State: tokens (bit-ns) as of `last`.
    tokens: Vec<i128>,
    last: SimTime,
    /// Round-robin position per stage (in profile, excess) and priority.
    rr: [[usize; 5]; 2],
}

impl Junos {
    pub fn new(params: Vec<QueueParams>) -> Result<Self, String> {
        let mut pct = 0.0;
        for (i, q) in params.iter().enumerate() {
            match q.transmit_rate {
                TransmitRate::Percent(p) if !(0.0..=100.0).contains(&p) => {
                    return Err(format!("junos: queue {i}: transmit-rate percent must be in [0, 100], got {p}"))
                }
                TransmitRate::Percent(p) => pct += p,
                _ => {}
            }
            if q.exact {
                match q.transmit_rate {
                    TransmitRate::Remainder => return Err(format!("junos: queue {i}: exact needs an explicit transmit-rate, not remainder")),
                    TransmitRate::Percent(p) if p <= 0.0 => return Err(format!("junos: queue {i}: exact with a zero transmit-rate never sends")),
                    TransmitRate::Rate(r) if r.as_bps() == 0 => return Err(format!("junos: queue {i}: exact with a zero transmit-rate never sends")),
                    _ => {}
                }
            }
            if q.burst_bytes == 0 {
                return Err(format!("junos: queue {i}: burst_bytes must be at least 1"));
            }
        }
        if pct > 100.0 + 1e-9 {
            return Err(format!("junos: transmit-rate percents add up to {pct} > 100"));
        }
        let depth: Vec<i128> = params.iter().map(|q| q.burst_bytes as i128 * UNITS_PER_BYTE).collect();
        let n = params.len();
        Ok(Junos { params, resolved_for: None, rates: vec![0; n], tokens: depth.clone(), depth, last: SimTime::ZERO, rr: [[0; 5]; 2] })
    }

    pub fn params(&self) -> &[QueueParams] {
        &self.params
    }

    /// Is queue `i` in profile (as of the last decision)?
    pub fn in_profile(&self, i: usize) -> bool {
        self.tokens[i] > 0
    }

    /// The meter of queue `i` in bytes (as of the last decision; negative:
    /// served above its rate).
    pub fn tokens_bytes(&self, i: usize) -> f64 {
        self.tokens[i] as f64 / UNITS_PER_BYTE as f64
    }

    fn update(&mut self, now: SimTime, link_rate: DataRate) {
        if self.resolved_for != Some(link_rate) {
            let rates = resolve_rates(&self.params, link_rate);
            // An exact queue whose percent rounds to 0 bit/s still creeps
            // forward (1 bit/s), so that a wait always ends.
            self.rates = rates.iter().zip(&self.params).map(|(r, q)| r.as_bps().max(q.exact as u64) as i128).collect();
            self.resolved_for = Some(link_rate);
        }
        let dt = now.since(self.last).as_nanos() as i128;
        if dt > 0 {
            for i in 0..self.tokens.len() {
                self.tokens[i] = (self.tokens[i] + self.rates[i] * dt).min(self.depth[i]);
            }
            self.last = now;
        }
    }

}

/// The backlogged queue of the highest priority among those `ok` accepts,
/// round robin within a priority (`rr`: where each priority resumes).
fn by_priority(rr: &mut [usize; 5], params: &[QueueParams], classes: &[ClassQueue], ok: impl Fn(usize) -> bool) -> Option<usize> {
    let n = classes.len();
    for prio in Priority::ALL.into_iter().rev() {
        let found = next_cyclic(n, rr[prio as usize], |i| params[i].priority == prio && !classes[i].is_empty() && ok(i));
        if let Some(i) = found {
            rr[prio as usize] = (i + 1) % n;
            return Some(i);
        }
    }
    None
}

impl Scheduler for Junos {
    fn num_classes(&self) -> usize {
        self.params.len()
    }

    fn select(&mut self, classes: &[ClassQueue], now: SimTime, link_rate: DataRate) -> Pick {
        self.update(now, link_rate);
        // Steps 1-2: strict-high (unless exact and out of profile), then the
        // in-profile queues by priority.
        let (tokens, params) = (&self.tokens, &self.params);
        let guaranteed = |i: usize| tokens[i] > 0 || (params[i].priority == Priority::StrictHigh && !params[i].exact);
        if let Some(i) = by_priority(&mut self.rr[0], params, classes, guaranteed) {
            return Pick::Serve(i);
        }
        // Step 3: every backlogged queue is out of profile; the excess goes
        // by priority to those that are not rate-limited.
        if let Some(i) = by_priority(&mut self.rr[1], params, classes, |i| !params[i].exact) {
            return Pick::Serve(i);
        }
        // Only exact queues, all out of profile: wait for the first to be
        // back in profile, tokens + r dt > 0, i.e. dt = floor(-tokens / r) + 1.
        let dt = (0..classes.len())
            .filter(|&i| !classes[i].is_empty())
            .map(|i| (-self.tokens[i]) / self.rates[i] + 1)
            .min()
            .expect("select with no backlog");
        Pick::Wait(now + Duration(dt.min(u64::MAX as i128) as u64))
    }

    fn on_sent(&mut self, class: usize, bytes: u32, now: SimTime, link_rate: DataRate) {
        self.update(now, link_rate);
        // Only service in profile is charged (see the module doc).
        if self.tokens[class] > 0 {
            self.tokens[class] -= bytes as i128 * UNITS_PER_BYTE;
        }
    }
    /// `transmit_rate_bps`: the queue's transmit rate, as an absolute rate
    /// from now on (its meter is credited at the old rate up to now).
    fn knob(&mut self, class: usize, name: &str, op: KnobOp, ctx: KnobCtx) -> KnobResult {
        if name != "transmit_rate_bps" {
            return Err(KnobError::Unknown);
        }
        self.update(ctx.now, ctx.link_rate);
        let old = self.rates[class] as f64;
        let KnobOp::Set(v) = op else { return Ok(old) };
        if !(v >= 0.0 && v <= ctx.link_rate.as_bps() as f64) {
            return Err(KnobError::Invalid(format!("transmit_rate_bps = {v}: must be in [0, the link rate {}]", ctx.link_rate)));
        }
        if self.params[class].exact && v < 1.0 {
            return Err(KnobError::Invalid("transmit_rate_bps = 0: an exact queue with a zero rate never sends".into()));
        }
        self.params[class].transmit_rate = TransmitRate::Rate(DataRate(v as u64));
        self.resolved_for = None;
        self.update(ctx.now, ctx.link_rate);
        Ok(old)
    }
}

/// One Junos queue as a configuration states it.
pub struct JunosClass {
    /// The forwarding class name (the queue's `class` column).
    pub name: String,
    pub scheduler: QueueParams,
    /// `buffer-size`, a share of the interface buffer.
    pub buffer_size: BufferSize,
    /// The queue's discipline: a FIFO with the `drop-profile-map` (WRED)
    /// if any, or another child.
    pub child: Child,
}

/// A Junos egress: classes in queue-number order (`fclass` = queue
/// number), buffers carved out of `interface_buffer`.
pub fn scheduled(classes: Vec<JunosClass>, interface_buffer: Limit) -> Result<Scheduled<Junos>, String> {
    let mut specs = Vec::with_capacity(classes.len());
    let mut params = Vec::with_capacity(classes.len());
    for c in classes {
        let limit = c.buffer_size.resolve(interface_buffer).map_err(|e| format!("{}: {e}", c.name))?;
        specs.push(ClassSpec { name: c.name, limit, child: c.child });
        params.push(c.scheduler);
    }
    Scheduled::new(specs, Junos::new(params)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use crate::qos::{Dequeued, Qdisc, QueueCtx};
    use crate::rng::Rng;

    fn pkt(class: u8, size: u32) -> Packet {
        let mut p = Packet::test(0, size);
        p.fclass = class;
        p
    }

    #[test]
    fn priorities_parse_and_order() {
        assert_eq!(Priority::parse("medium-high").unwrap(), Priority::MediumHigh);
        assert!(Priority::parse("urgent").is_err());
        assert!(Priority::StrictHigh > Priority::High && Priority::MediumLow > Priority::Low);
    }

    #[test]
    fn rates_resolve_against_the_link() {
        let q = |t| QueueParams::new(t, Priority::Low);
        let qs = [q(TransmitRate::Percent(5.0)), q(TransmitRate::Rate(DataRate::gbps(2))), q(TransmitRate::Remainder), q(TransmitRate::Remainder)];
        let r = resolve_rates(&qs, DataRate::gbps(10));
        assert_eq!(r, vec![DataRate::mbps(500), DataRate::gbps(2), DataRate::mbps(3750), DataRate::mbps(3750)]);
    }

    #[test]
    fn parameters_are_validated() {
        let q = |t| QueueParams::new(t, Priority::Low);
        assert!(Junos::new(vec![q(TransmitRate::Percent(60.0)), q(TransmitRate::Percent(50.0))]).is_err());
        assert!(Junos::new(vec![q(TransmitRate::Percent(-1.0))]).is_err());
        assert!(Junos::new(vec![q(TransmitRate::Remainder).exact()]).is_err());
        assert!(Junos::new(vec![q(TransmitRate::Percent(0.0)).exact()]).is_err());
        assert!(Junos::new(vec![q(TransmitRate::Percent(10.0)).burst_bytes(0)]).is_err());
        assert!(Junos::new(vec![q(TransmitRate::Percent(0.0)), q(TransmitRate::Percent(100.0))]).is_ok());
    }

    #[test]
    fn meter_charges_in_profile_service_only() {
        // Queue 0: 10% of 1 Gbps = 100 Mbps, depth 1500 B; queue 1 low, 90%.
        let mut rng = Rng::stream(1, "junos");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let params = vec![
            QueueParams::new(TransmitRate::Percent(10.0), Priority::High),
            QueueParams::new(TransmitRate::Percent(90.0), Priority::Low),
        ];
        let specs = vec![ClassSpec::new("a", Limit::UNLIMITED), ClassSpec::new("b", Limit::UNLIMITED)];
        let mut q = Scheduled::new(specs, Junos::new(params).unwrap()).unwrap();
        for _ in 0..3 {
            q.enqueue(pkt(0, 1000), &mut ctx).unwrap();
        }
        // In profile (1500 B of tokens): sent and charged, 500 B left.
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(p) if p.fclass == 0));
        assert_eq!(q.scheduler().tokens_bytes(0), 500.0);
        // Still in profile: sent, charged to -500 B.
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(p) if p.fclass == 0));
        assert_eq!(q.scheduler().tokens_bytes(0), -500.0);
        assert!(!q.scheduler().in_profile(0));
        // Out of profile, alone: served as excess, not charged.
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(p) if p.fclass == 0));
        assert_eq!(q.scheduler().tokens_bytes(0), -500.0);
        // 40 us at 100 Mbps = 500 B: tokens 0, still out; 1 ns more: in.
        ctx.now = SimTime(40_000);
        q.enqueue(pkt(1, 1000), &mut ctx).unwrap();
        q.enqueue(pkt(0, 1000), &mut ctx).unwrap();
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(p) if p.fclass == 1));
        ctx.now = SimTime(40_001);
        q.enqueue(pkt(1, 1000), &mut ctx).unwrap();
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(p) if p.fclass == 0));
    }

    #[test]
    fn exact_queue_waits_for_its_tokens() {
        // 1% of 1 Gbps = 10 Mbps exact, depth 1500: one 1500 B packet at 0,
        // then the bucket is at 0 and the next needs tokens > 0: 1 ns.
        let mut rng = Rng::stream(1, "junos");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let params = vec![QueueParams::new(TransmitRate::Percent(1.0), Priority::High).exact()];
        let mut q = Scheduled::new(vec![ClassSpec::new("ef", Limit::UNLIMITED)], Junos::new(params).unwrap()).unwrap();
        for _ in 0..3 {
            q.enqueue(pkt(0, 1500), &mut ctx).unwrap();
        }
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(_)));
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::NotBefore(SimTime(1))));
        ctx.now = SimTime(1);
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(_)));
        // Now at -1500 B + 1.25e-3 B: back above zero after 1.2 ms (1500 B at
        // 10 Mbps), to the nanosecond.
        let Dequeued::NotBefore(t) = q.dequeue(&mut ctx) else { panic!("expected a wait") };
        assert_eq!(t, SimTime(1 + 1_200_000));
    }

    #[test]
    fn junos_builder_carves_the_buffer() {
        let c = |name: &str, pct: f64, prio| JunosClass {
            name: name.into(),
            scheduler: QueueParams::new(TransmitRate::Percent(pct), prio),
            buffer_size: BufferSize::Percent(pct),
            child: Child::Fifo(None),
        };
        let q = scheduled(
            vec![c("best-effort", 20.0, Priority::Low), c("science-data", 70.0, Priority::MediumHigh), c("network-control", 5.0, Priority::High), c("scavenger", 5.0, Priority::Low)],
            Limit { pkts: 1000, bytes: u64::MAX },
        )
        .unwrap();
        let limits: Vec<u64> = q.classes().iter().map(|c| c.limit().pkts).collect();
        assert_eq!(limits, vec![200, 700, 50, 50]);
    }
}
