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
//! - `transmit-rate percent` is a share of the link rate the interface
//!   reports (no shaping-rate, no per-unit scheduling); `rate-limit` and
//!   `remainder` for buffers are not modelled.
//!
//! # Excess bandwidth ([`ExcessSharing`])
//!
//! What a queue above its transmit rate gets of the bandwidth nobody is
//! guaranteed:
//!
//! - [`ExcessSharing::Priority`] (the default, the document's description
//!   of Fig. 2): the out-of-profile queues are served by priority, round
//!   robin within one; a queue's `excess-priority`, if given, replaces its
//!   priority here.
//! - [`ExcessSharing::Proportional`], MX Series MIC/MPC (Trio) interfaces as
//!   Juniper documents them: a queue above its guaranteed rate drops to
//!   its *excess priority*, of which Trio has two levels, excess high (EH)
//!   and excess low (EL), both below every guaranteed level ("Hierarchical
//!   Scheduling on MIC and MPC Interfaces", Junos OS Class of Service
//!   guide); the excess goes to EH queues first, and queues of one excess
//!   priority share it "in proportion to the configured transmit rate of
//!   each queue" unless `excess-rate percent` says otherwise (`excess-rate`
//!   statement, Default; "Excess Rate and Excess Priority Configuration
//!   Examples", Tables 1 and 2: on a 1 Gbps port, queues of 20/10 % high
//!   and 10/5 % low, each offered 500-600 Mbps, get 566.67, 283.33, 100
//!   and 50 Mbps; four high queues of 20/10/10/5 % get 444.44, 222.22,
//!   222.22, 111.11). `excess-priority high` or `medium-high` is EH,
//!   `medium-low` or `low` EL (the MPC table of "Priority Propagation in
//!   Hierarchical Scheduling": excess high and medium-high map to one
//!   hardware level, medium-low and low to the next); without it a
//!   `strict-high` or `high` queue is EH and a `medium-high`, `medium-low`
//!   or `low` queue EL (the default-excess-priority column of the MPC
//!   priority table, "Per-Priority Shaping on MIC and MPC Interfaces").
//!   The proportion is kept by start-time fair queueing over the excess
//!   bytes (Goyal, Vin and Cheng, "Start-time Fair Queueing", SIGCOMM
//!   1996): each queue's tag advances by `bytes / weight` when it is served
//!   as excess, the smallest tag goes first. The granularity of the
//!   hardware's weighted round robin is not documented; this one
//!   interleaves as finely as the weights allow.
//! - In both, `excess-priority none` ("does not demote the priority of
//!   guaranteed traffic when the bandwidth exceeds ... the guaranteed
//!   rate") keeps the queue at its priority above its rate.
//!
//! # Meter depth: bytes or a time window
//!
//! Juniper documents no interval for the in/out-of-profile decision on
//! Trio; the meter is a parameter: `burst_bytes` (default one MTU), or
//! `meter_window` w, a depth of `r_i * w` (the bytes the queue's rate
//! allows in w; the depth follows the rate when a knob changes it).
//!
//! # Temporal buffers
//!
//! `buffer-size temporal t` ([`super::BufferSize::Temporal`]): "the queuing
//! algorithm starts dropping packets when it queues more than a computed
//! number of bytes ... the transmission rate of the queue multiplied by the
//! configured temporal value" (Junos "Configuring the Scheduler Buffer
//! Size"; the `buffer-size` statement reference of Junos 13 says "the
//! logical interface speed" instead: the queue's rate is used here). The
//! limit is `floor(r_i * t / 8)` bytes, no packet limit; Trio's default
//! delay buffer, 100 ms of the port rate at 1 Gbps and above ("Scheduler
//! Delay Buffering on MIC and MPC Interfaces"), is 125 MB at 10 Gbps,
//! the buffer the document measured on its MX80 (Section III-D).
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
//! - `burst_bytes`: meter depth, 1500 B by default; or `meter_window`, a
//!   depth of the rate times a time window;
//! - `excess_rate`: `excess-rate percent` (0..=100), the queue's weight in
//!   the excess with [`ExcessSharing::Proportional`] (default: its
//!   transmit rate as a percent of the link);
//! - `excess_priority`: [`ExcessPriority`], default as described above.
//!
//! Per scheduler: [`ExcessSharing`], `Priority` by default.
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
//! Table I explanation with (49,50,1) versus (10,30,60); proportional
//! excess against Juniper's two example tables and two queues above their
//! rates splitting the excess 1:3 (round robin splits it evenly);
//! `excess-priority` levels and `none`; a meter window's depth; a temporal
//! buffer's limit.

use crate::knob::{KnobCtx, KnobError, KnobOp, KnobResult};
use super::{next_cyclic, BufferSize, ClassQueue, ClassSpec, Pick, Scheduled, Scheduler};
use crate::qos::fifo::Limit;
use crate::qos::Child;
use crate::time::{Duration, SimTime};
use crate::units::DataRate;
use crate::error::{ConfigError, Outer};

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

/// Junos `excess-priority`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExcessPriority {
    Low,
    MediumLow,
    MediumHigh,
    High,
    /// Never demoted: served at its priority above its rate too.
    None,
}

impl ExcessPriority {
    pub const ALL: [ExcessPriority; 5] = [ExcessPriority::Low, ExcessPriority::MediumLow, ExcessPriority::MediumHigh, ExcessPriority::High, ExcessPriority::None];
    pub fn as_str(self) -> &'static str {
        match self {
            ExcessPriority::Low => "low",
            ExcessPriority::MediumLow => "medium-low",
            ExcessPriority::MediumHigh => "medium-high",
            ExcessPriority::High => "high",
            ExcessPriority::None => "none",
        }
    }
    /// The same level among the guaranteed priorities (`None` has none).
    fn as_priority(self) -> Option<Priority> {
        match self {
            ExcessPriority::Low => Some(Priority::Low),
            ExcessPriority::MediumLow => Some(Priority::MediumLow),
            ExcessPriority::MediumHigh => Some(Priority::MediumHigh),
            ExcessPriority::High => Some(Priority::High),
            ExcessPriority::None => None,
        }
    }
}

/// How the queues above their transmit rates share the excess bandwidth
/// (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExcessSharing {
    /// By priority (or `excess-priority`), round robin within one.
    #[default]
    Priority,
    /// MX Trio: two excess levels, EH before EL; within one, in proportion
    /// to `excess-rate` (default the transmit rate).
    Proportional,
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
    /// Depth of the in/out-of-profile meter, bytes (unless `meter_window`).
    pub burst_bytes: u64,
    /// Meter depth as the bytes the transmit rate allows in this window.
    pub meter_window: Option<Duration>,
    /// `excess-rate percent`: weight in the proportional excess (0..=100).
    pub excess_rate: Option<f64>,
    /// `excess-priority`.
    pub excess_priority: Option<ExcessPriority>,
}

impl QueueParams {
    /// Work-conserving, meter depth [`DEFAULT_BURST_BYTES`].
    pub fn new(transmit_rate: TransmitRate, priority: Priority) -> Self {
        QueueParams { transmit_rate, priority, exact: false, burst_bytes: DEFAULT_BURST_BYTES, meter_window: None, excess_rate: None, excess_priority: None }
    }
    pub fn meter_window(mut self, w: Duration) -> Self {
        self.meter_window = Some(w);
        self
    }
    pub fn excess_rate(mut self, percent: f64) -> Self {
        self.excess_rate = Some(percent);
        self
    }
    pub fn excess_priority(mut self, p: ExcessPriority) -> Self {
        self.excess_priority = Some(p);
        self
    }
    /// Served at its priority whatever its meter says.
    fn never_demoted(&self) -> bool {
        !self.exact && (self.priority == Priority::StrictHigh || self.excess_priority == Some(ExcessPriority::None))
    }
    /// The level it competes at for the excess: with [`ExcessSharing::Priority`]
    /// its `excess-priority` or else its priority; with `Proportional` Trio's
    /// excess high (`High`) or excess low (`Low`).
    fn excess_level(&self, sharing: ExcessSharing) -> Priority {
        match sharing {
            ExcessSharing::Priority => self.excess_priority.and_then(ExcessPriority::as_priority).unwrap_or(self.priority),
            ExcessSharing::Proportional => {
                let high = match self.excess_priority.and_then(ExcessPriority::as_priority) {
                    Some(p) => p >= Priority::MediumHigh,
                    None => self.priority >= Priority::High,
                };
                if high {
                    Priority::High
                } else {
                    Priority::Low
                }
            }
        }
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
    sharing: ExcessSharing,
    /// Profile: the link rate the rates were resolved for, the rates in
    /// bit/s, the bucket depths in token units, the excess weights
    /// (percent of the link).
    resolved_for: Option<DataRate>,
    rates: Vec<i128>,
    depth: Vec<i128>,
    weights: Vec<f64>,
    /// State: tokens (bit-ns) as of `last` (`None` before the first
    /// decision: full buckets).
    tokens: Option<Vec<i128>>,
    last: SimTime,
    /// Round-robin position per stage (in profile, excess) and priority.
    rr: [[usize; 5]; 2],
    /// Proportional excess: each queue's start tag (excess bytes / weight)
    /// and the tag of the last queue served as excess.
    tags: Vec<f64>,
    vtime: f64,
}

/// Weight of a queue whose excess rate is 0: it gets excess only when no
/// other queue of its level wants it.
const MIN_WEIGHT: f64 = 1e-9;

impl Junos {
    /// `params[i]`: queue `i`'s; a problem is located at the queue's
    /// configuration key (`classes[2].excess_rate_percent`).
    pub fn new(params: Vec<QueueParams>) -> Result<Self, ConfigError> {
        let mut pct = 0.0;
        for (i, q) in params.iter().enumerate() {
            let at = |key: &str, msg: &str| ConfigError::at(key, msg).with_outer(i).with_outer("classes");
            match q.transmit_rate {
                TransmitRate::Percent(p) if !(0.0..=100.0).contains(&p) => return Err(at("transmit_rate_percent", &format!("must be in [0, 100], got {p}"))),
                TransmitRate::Percent(p) => pct += p,
                _ => {}
            }
            if q.exact {
                match q.transmit_rate {
                    TransmitRate::Remainder => return Err(at("exact", "exact needs an explicit transmit rate, not the remainder")),
                    TransmitRate::Percent(p) if p <= 0.0 => return Err(at("exact", "exact with a zero transmit rate never sends")),
                    TransmitRate::Rate(r) if r.as_bps() == 0 => return Err(at("exact", "exact with a zero transmit rate never sends")),
                    _ => {}
                }
            }
            if q.burst_bytes == 0 {
                return Err(at("burst_bytes", "must be at least 1"));
            }
            if q.meter_window == Some(Duration::ZERO) {
                return Err(at("meter_window_ns", "must be greater than 0"));
            }
            if let Some(x) = q.excess_rate {
                if !(0.0..=100.0).contains(&x) {
                    return Err(at("excess_rate_percent", &format!("must be in [0, 100], got {x}")));
                }
            }
        }
        if pct > 100.0 + 1e-9 {
            return Err(ConfigError::at("classes", format!("transmit_rate_percent adds up to {pct} %, more than 100 %")));
        }
        let n = params.len();
        Ok(Junos {
            params,
            sharing: ExcessSharing::Priority,
            resolved_for: None,
            rates: vec![0; n],
            depth: vec![0; n],
            weights: vec![0.0; n],
            tokens: None,
            last: SimTime::ZERO,
            rr: [[0; 5]; 2],
            tags: vec![0.0; n],
            vtime: 0.0,
        })
    }

    /// How the excess bandwidth is shared ([`ExcessSharing::Priority`] by
    /// default). `excess_rate` needs [`ExcessSharing::Proportional`].
    pub fn excess(mut self, sharing: ExcessSharing) -> Result<Self, ConfigError> {
        if sharing == ExcessSharing::Priority {
            if let Some(i) = self.params.iter().position(|q| q.excess_rate.is_some()) {
                let msg = "a weight of the proportional excess sharing (give the scheduler excess: proportional)";
                return Err(ConfigError::at("excess_rate_percent", msg).with_outer(i).with_outer("classes"));
            }
        }
        self.sharing = sharing;
        Ok(self)
    }

    pub fn params(&self) -> &[QueueParams] {
        &self.params
    }

    pub fn sharing(&self) -> ExcessSharing {
        self.sharing
    }

    /// Is queue `i` in profile (as of the last decision)?
    pub fn in_profile(&self, i: usize) -> bool {
        self.tokens_bytes(i) > 0.0
    }

    /// The meter of queue `i` in bytes (as of the last decision; negative:
    /// served above its rate; before any decision, its depth).
    pub fn tokens_bytes(&self, i: usize) -> f64 {
        match &self.tokens {
            Some(t) => t[i] as f64 / UNITS_PER_BYTE as f64,
            None => self.depth[i] as f64 / UNITS_PER_BYTE as f64,
        }
    }

    /// Meter depth of queue `i` in bytes, on the link the rates were last
    /// resolved for.
    pub fn depth_bytes(&self, i: usize) -> f64 {
        self.depth[i] as f64 / UNITS_PER_BYTE as f64
    }

    fn resolve(&mut self, link_rate: DataRate) {
        let rates = resolve_rates(&self.params, link_rate);
        // An exact queue whose percent rounds to 0 bit/s still creeps
        // forward (1 bit/s), so that a wait always ends.
        self.rates = rates.iter().zip(&self.params).map(|(r, q)| r.as_bps().max(q.exact as u64) as i128).collect();
        // Depth: burst_bytes, or rate x window (bit/s x ns = token units).
        self.depth = self.params.iter().zip(&self.rates).map(|(q, &r)| match q.meter_window {
            Some(w) => r * w.as_nanos() as i128,
            None => q.burst_bytes as i128 * UNITS_PER_BYTE,
        }).collect();
        // Excess weights: excess-rate percent, else the transmit rate as a
        // percent of the link.
        let link = link_rate.as_bps().max(1) as f64;
        self.weights = self.params.iter().zip(&rates).map(|(q, r)| q.excess_rate.unwrap_or(100.0 * r.as_bps() as f64 / link).max(MIN_WEIGHT)).collect();
        self.resolved_for = Some(link_rate);
    }

    fn update(&mut self, now: SimTime, link_rate: DataRate) {
        if self.resolved_for != Some(link_rate) {
            self.resolve(link_rate);
            // Full at the start; a new depth caps what is there.
            let depth = &self.depth;
            let tokens = self.tokens.get_or_insert_with(|| depth.clone());
            for (t, &d) in tokens.iter_mut().zip(depth) {
                *t = (*t).min(d);
            }
        }
        let tokens = self.tokens.as_mut().expect("resolved above");
        let dt = now.since(self.last).as_nanos() as i128;
        if dt > 0 {
            for i in 0..tokens.len() {
                tokens[i] = (tokens[i] + self.rates[i] * dt).min(self.depth[i]);
            }
            self.last = now;
        }
    }

    /// Proportional excess: the backlogged, non-exact queue of the highest
    /// excess level with the smallest start tag (ties: round robin).
    fn proportional_pick(&mut self, classes: &[ClassQueue]) -> Option<usize> {
        let n = classes.len();
        let ok = |i: usize| !classes[i].is_empty() && !self.params[i].exact;
        let level = (0..n).filter(|&i| ok(i)).map(|i| self.params[i].excess_level(self.sharing)).max()?;
        let rr = self.rr[1][level as usize];
        let mut best: Option<(f64, usize)> = None;
        for k in 0..n {
            let i = (rr + k) % n;
            if ok(i) && self.params[i].excess_level(self.sharing) == level {
                let tag = self.tags[i].max(self.vtime);
                if best.is_none_or(|(b, _)| tag < b) {
                    best = Some((tag, i));
                }
            }
        }
        let (_, i) = best?;
        self.rr[1][level as usize] = (i + 1) % n;
        Some(i)
    }
}

/// The backlogged queue of the highest level among those `ok` accepts,
/// round robin within a level (`rr`: where each level resumes).
fn by_level(rr: &mut [usize; 5], classes: &[ClassQueue], level: impl Fn(usize) -> Priority, ok: impl Fn(usize) -> bool) -> Option<usize> {
    let n = classes.len();
    for prio in Priority::ALL.into_iter().rev() {
        let found = next_cyclic(n, rr[prio as usize], |i| level(i) == prio && !classes[i].is_empty() && ok(i));
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
        // Steps 1-2: strict-high and excess-priority none (unless exact and
        // out of profile), then the in-profile queues by priority.
        let (tokens, params) = (self.tokens.as_deref().expect("updated"), &self.params);
        let guaranteed = |i: usize| tokens[i] > 0 || params[i].never_demoted();
        if let Some(i) = by_level(&mut self.rr[0], classes, |i| params[i].priority, guaranteed) {
            return Pick::Serve(i);
        }
        // Step 3: every backlogged queue is out of profile; the excess goes
        // to those that are not rate-limited, by excess level.
        let pick = match self.sharing {
            ExcessSharing::Priority => {
                let sharing = self.sharing;
                by_level(&mut self.rr[1], classes, |i| params[i].excess_level(sharing), |i| !params[i].exact)
            }
            ExcessSharing::Proportional => self.proportional_pick(classes),
        };
        if let Some(i) = pick {
            return Pick::Serve(i);
        }
        // Only exact queues, all out of profile: wait for the first to be
        // back in profile, tokens + r dt > 0, i.e. dt = floor(-tokens / r) + 1.
        let tokens = self.tokens.as_deref().expect("updated");
        let dt = (0..classes.len())
            .filter(|&i| !classes[i].is_empty())
            .map(|i| (-tokens[i]) / self.rates[i] + 1)
            .min()
            .expect("select with no backlog");
        Pick::Wait(now + Duration(dt.min(u64::MAX as i128) as u64))
    }

    fn on_sent(&mut self, class: usize, bytes: u32, now: SimTime, link_rate: DataRate) {
        self.update(now, link_rate);
        let tokens = self.tokens.as_mut().expect("updated");
        // Only service in profile is charged (see the module doc).
        if tokens[class] > 0 {
            tokens[class] -= bytes as i128 * UNITS_PER_BYTE;
        } else if self.sharing == ExcessSharing::Proportional && !self.params[class].never_demoted() {
            // Served as excess: start tag max(tag, V), V = that start tag,
            // finish tag start + bytes / weight (SFQ).
            let start = self.tags[class].max(self.vtime);
            self.vtime = start;
            self.tags[class] = start + bytes as f64 / self.weights[class];
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
pub fn scheduled(classes: Vec<JunosClass>, interface_buffer: Limit) -> Result<Scheduled<Junos>, ConfigError> {
    scheduled_on(classes, interface_buffer, None, ExcessSharing::Priority)
}

/// As [`scheduled`], on a link of `link_rate` (temporal buffers need it),
/// with the excess shared as `sharing` says. A problem is located at the
/// class's configuration key (`classes[1].buffer_temporal_ns`).
pub fn scheduled_on(classes: Vec<JunosClass>, interface_buffer: Limit, link_rate: Option<DataRate>, sharing: ExcessSharing) -> Result<Scheduled<Junos>, ConfigError> {
    let params: Vec<QueueParams> = classes.iter().map(|c| c.scheduler).collect();
    let rates = link_rate.map(|l| resolve_rates(&params, l));
    let mut specs = Vec::with_capacity(classes.len());
    for (i, c) in classes.into_iter().enumerate() {
        let key = match c.buffer_size {
            BufferSize::Temporal(_) => "buffer_temporal_ns",
            _ => "buffer_percent",
        };
        let limit = c.buffer_size.resolve_at(interface_buffer, rates.as_ref().map(|r| r[i])).outer(key).outer(i).outer("classes")?;
        specs.push(ClassSpec { name: c.name, limit, child: c.child });
    }
    Scheduled::new(specs, Junos::new(params)?.excess(sharing)?)
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
    fn meter_window_depth_is_rate_times_window_and_follows_the_rate() {
        // 10 % of 1 Gbps = 100 Mbps, window 1 ms: 12,500 B, full at start.
        let mut rng = Rng::stream(1, "junos");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
        let params = vec![QueueParams::new(TransmitRate::Percent(10.0), Priority::High).meter_window(Duration::from_millis(1))];
        let mut q = Scheduled::new(vec![ClassSpec::new("a", Limit::UNLIMITED)], Junos::new(params).unwrap()).unwrap();
        for _ in 0..10 {
            q.enqueue(pkt(0, 1500), &mut ctx).unwrap();
        }
        assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(_)));
        assert_eq!(q.scheduler().depth_bytes(0), 12_500.0);
        assert_eq!(q.scheduler().tokens_bytes(0), 11_000.0);
        // Nine packets in profile (12,500 B > 8 x 1500), the tenth is excess.
        for _ in 0..8 {
            assert!(matches!(q.dequeue(&mut ctx), Dequeued::Packet(_)));
        }
        assert_eq!(q.scheduler().tokens_bytes(0), -1_000.0);
        // The rate knob doubles the rate and so the depth.
        let mut j = Junos::new(vec![QueueParams::new(TransmitRate::Percent(10.0), Priority::High).meter_window(Duration::from_millis(1))]).unwrap();
        let kctx = KnobCtx { now: SimTime(1_000_000), link_rate: DataRate::gbps(1) };
        assert_eq!(j.knob(0, "transmit_rate_bps", KnobOp::Set(200e6), kctx).unwrap(), 100e6);
        assert_eq!(j.depth_bytes(0), 25_000.0);
        assert!(Junos::new(vec![QueueParams::new(TransmitRate::Percent(10.0), Priority::High).meter_window(Duration::ZERO)]).is_err());
    }

    #[test]
    fn excess_keywords_parse() {
        assert!(Junos::new(vec![QueueParams::new(TransmitRate::Percent(10.0), Priority::High).excess_rate(101.0)]).is_err());
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
