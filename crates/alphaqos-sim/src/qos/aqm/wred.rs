//! Weighted RED and its relatives: early-drop profiles that treat packets
//! by colour (loss priority), and a FIFO that drops by such a profile.
//!
//! What it models: the drop profiles routers apply to a queue holding
//! packets of several colours (set by a meter, see `qos::meter`), each a
//! [`DropProfile`]:
//!
//! - [`PiecewiseWred`]: Junos-style drop profiles. One curve per colour of
//!   drop probability against the queue's fill level (a fraction of its
//!   limit, in bytes or packets), given as `fill-level`/`drop-probability`
//!   pairs in percent, either *interpolated* (straight lines through the
//!   points, from (0, 0) to (100, 100) unless the points say otherwise) or
//!   *segmented* (a staircase: each point's probability from its fill level
//!   up to the next point's). Junos ("Configuring RED Drop Profiles",
//!   `[edit class-of-service drop-profiles]`) uses the instantaneous fill;
//!   Cisco's WRED an exponentially weighted average, both offered. The first
//!   source document's experiment 3 (Section III-D, Table II: "Drop prob. =
//!   queue occ.") is [`PiecewiseWred::experiment3`]: out-of-profile (red)
//!   packets dropped with probability equal to the queue's instantaneous
//!   fill, the single curve [(0 %, 0 %), (100 %, 100 %)], in-profile packets
//!   never early-dropped.
//! - [`Rio`]: D. D. Clark, W. Fang, "Explicit allocation of best-effort
//!   packet delivery service", IEEE/ACM ToN 6(4), 1998, the RIO algorithm (RED
//!   with In and Out): two RED curves; an In (green) packet is judged on
//!   `avg_in`, the average number of In packets in the queue (updated on In
//!   arrivals), an Out (yellow or red) packet on `avg_total`, the average of
//!   the whole queue (updated on every arrival). With the Out curve below
//!   the In curve, Out packets are dropped first.
//! - [`ColorRed`]: one RED parameter set per colour on one shared average of
//!   the whole queue. Two constructors: [`ColorRed::gred`] is Linux
//!   `sch_gred` in its WRED mode (`grio` with equal priorities: the virtual
//!   queues share the qdisc's backlog and average, `gred_backlog` and
//!   `gred_load_wred_set` in `net/sched/sch_gred.c`; each keeps its own
//!   RED parameters and drop count); the colour is the drop precedence
//!   (virtual queue) green 0, yellow 1, red 2. [`ColorRed::cisco`] is Cisco's
//!   WRED (Cisco IOS "Weighted Random Early Detection", the first document's
//!   reference 13): `min_th`, `max_th` in packets and `max_p` (1 / mark
//!   probability denominator) per colour, average
//!   `avg <- avg (1 - 2^-n) + q 2^-n` with exponential weighting constant
//!   `n` (default 9), every packet dropped at or above `max_th`. The fifth
//!   source document's settings come from [`CiscoThresholds::from_rtt`]:
//!   `max_th = r RTT / (MTU 8)` packets (its equation 2), `min_th = 0.15
//!   max_th`, `max_p = 0.2` (Section 5.1); its case B1 is green (22, 149,
//!   0.2) and yellow (22, 149, 0.4).
//!
//! Both RED-based profiles compute Floyd & Jacobson's `p_b` with
//! [`RedParams::base_probability`] and spread drops with
//! [`spread_probability`] (`p_a = p_b / (1 - count p_b)`), exactly as
//! [`super::red::Red`] does, with one `count` per curve; the average follows
//! RED's EWMA with the idle-time correction `avg <- (1 - w_q)^m avg`, `m` the
//! idle time over the transmission time of `mean_pkt_bytes` on the link
//! (Floyd & Jacobson, Section 4), an idle period lasting until a packet is
//! admitted; and, as RED, no averaged profile drops early into a queue
//! holding at most one packet (ns-2, ns-3; see [`super::red`]).
//!
//! [`Wred`] is the classless discipline: a FIFO with a limit whose early
//! drops come from any [`DropProfile`] (counted as [`DropReason::Aqm`]),
//! then tail drop at the limit ([`DropReason::Tail`]); it tells the profile
//! when the queue goes empty, and counts offered and dropped packets per
//! colour.
//!
//! Parameters, with units and defaults:
//!
//! - [`FillMeasure`]: `unit` (bytes or packets; [`FillUnit::Bytes`] for
//!   Junos, whose buffers are sized in bytes) and `averaging`
//!   ([`Averaging::Instantaneous`], Junos; or [`Averaging::Ewma`] with
//!   `w_q` in (0, 1] and `mean_pkt_bytes` > 0 for the idle correction,
//!   Cisco's `w_q = 2^-9`). The fill is the queue *before* the arriving
//!   packet, over the queue's limit in the same unit (a queue with no limit
//!   in that unit reads as empty: give it one);
//! - [`DropCurve`]: points `(fill %, probability %)`, fills strictly
//!   increasing in [0, 100], probabilities non-decreasing in [0, 100];
//! - [`RioParams`]: two [`RedParams`], `in_profile` and `out_profile`
//!   (their `limit` is unused: the queue's own applies);
//! - [`ColorRed::gred`]: three optional [`RedParams`], sharing
//!   `thresholds_in_bytes`, `w_q` and `mean_pkt_bytes` (one average);
//! - [`CiscoWredParams`]: per colour an optional [`CiscoThresholds`]
//!   (`min_th`, `max_th` packets, `max_p`), `exp_weight` (n, default 9),
//!   `mean_pkt_bytes` (default 1000, as RED's).
//!
//! A colour without a curve is never early-dropped (only tail-dropped).
//!
//! Limitation: the [`DropProfile`] trait shows a profile the queue's total
//! backlog only, so [`Rio`] keeps a shadow of the queue's colours: it
//! assumes a FIFO that consults it for every arrival and admits a packet it
//! did not early-drop exactly when `limit.admits(held, size)`, as [`Wred`]
//! does; the packets that left are the oldest ones, seen from the backlog at
//! the next arrival.
//!
//! Tests (below): the curves against Junos's documented examples; the
//! measured drop fraction per colour at fixed fills against each profile
//! (independent drops for the curves; the gap distribution of the count
//! spreading for RED-based ones) within a few per cent; experiment 3 drops
//! red with probability equal to the fill and never green, in the profile
//! and through the [`Wred`] queue (early drops as `aqm`, full-queue drops as
//! `tail`); the shared average of GRED; RIO's shadow count of In packets
//! against a real FIFO, and RIO against plain WRED on an overloaded queue:
//! Out packets are dropped and In packets are not.

use super::red::{spread_probability, RedParams};
use crate::packet::{Color, Packet};
use crate::qos::fifo::{Limit, PacketQueue};
use crate::qos::{Backlog, Dequeued, DropProfile, DropReason, Qdisc, QueueCounters, QueueCtx};
use crate::rng::Rng;
use crate::time::{Duration, SimTime};
use crate::units::DataRate;
use std::collections::VecDeque;

// ---------------------------------------------------------------------------
// Measuring the queue

/// What a fill level or a threshold counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FillUnit {
    #[default]
    Bytes,
    Packets,
}

impl FillUnit {
    fn of(self, b: Backlog) -> u64 {
        match self {
            FillUnit::Bytes => b.bytes,
            FillUnit::Packets => b.pkts,
        }
    }
    fn limit(self, l: Limit) -> u64 {
        match self {
            FillUnit::Bytes => l.bytes,
            FillUnit::Packets => l.pkts,
        }
    }
}

/// Instantaneous or averaged queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Averaging {
    /// The queue as the packet finds it (Junos).
    Instantaneous,
    /// RED's exponentially weighted moving average, updated on each arrival
    /// (Cisco: `w_q = 2^-n`, n = 9 by default), with the idle correction.
    Ewma { w_q: f64, mean_pkt_bytes: u32 },
}

impl Averaging {
    /// Cisco's average with exponential weighting constant `n`: `w_q = 2^-n`.
    pub fn cisco(n: u32) -> Averaging {
        Averaging::Ewma { w_q: 0.5f64.powi(n as i32), mean_pkt_bytes: 1000 }
    }
    fn validate(&self, who: &str) -> Result<(), String> {
        if let Averaging::Ewma { w_q, mean_pkt_bytes } = *self {
            if !(w_q > 0.0 && w_q <= 1.0) {
                return Err(format!("{who}: w_q must be in (0, 1], got {w_q}"));
            }
            if mean_pkt_bytes == 0 {
                return Err(format!("{who}: mean_pkt_bytes must be positive"));
            }
        }
        Ok(())
    }
}

/// RED's average queue (Floyd & Jacobson, Section 4): on each arrival
/// `avg <- (1 - w_q) avg + w_q q`; an arrival at a queue empty since `t0`
/// instead decays it as `m = (now - t0) / s` arrivals of an empty queue,
/// `avg <- (1 - w_q)^m avg`, `s` the transmission time of `mean_pkt_bytes`.
#[derive(Clone, Debug)]
struct Ewma {
    w_q: f64,
    mean_pkt_bytes: u32,
    avg: f64,
    /// When the queue last went empty, while it stays empty.
    idle_since: Option<SimTime>,
}

impl Ewma {
    fn new(w_q: f64, mean_pkt_bytes: u32) -> Ewma {
        Ewma { w_q, mean_pkt_bytes, avg: 0.0, idle_since: Some(SimTime::ZERO) }
    }
    fn update(&mut self, q: f64, queue_empty: bool, now: SimTime, link_rate: DataRate) -> f64 {
        match self.idle_since {
            Some(since) if queue_empty => {
                let s = idle_slot(link_rate, self.mean_pkt_bytes);
                let m = now.since(since).as_nanos() as f64 / s;
                self.avg *= (1.0 - self.w_q).powf(m);
                // Still idle unless this packet is admitted: the next
                // arrival at an empty queue decays from here (as ns-2 and
                // ns-3 restart their idle clock).
                self.idle_since = Some(now);
            }
            _ => {
                self.idle_since = None;
                self.avg = (1.0 - self.w_q) * self.avg + self.w_q * q;
            }
        }
        self.avg
    }
}

/// Transmission time of a small packet on the link, ns (at least 1).
fn idle_slot(link_rate: DataRate, mean_pkt_bytes: u32) -> f64 {
    if link_rate.as_bps() == 0 {
        return f64::INFINITY;
    }
    link_rate.tx_time(mean_pkt_bytes as u64).as_nanos().max(1) as f64
}

/// How a [`PiecewiseWred`] reads the queue's fill level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FillMeasure {
    pub unit: FillUnit,
    pub averaging: Averaging,
}

impl FillMeasure {
    /// Junos: the instantaneous fill of the buffer, in bytes.
    pub const JUNOS: FillMeasure = FillMeasure { unit: FillUnit::Bytes, averaging: Averaging::Instantaneous };
}

// ---------------------------------------------------------------------------
// Drop curves

/// Fill-level/drop-probability pairs in a Junos interpolated drop profile.
pub const JUNOS_PROFILE_POINTS: usize = 64;

/// How a [`DropCurve`] joins its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CurveStyle {
    /// Straight lines between the points (Junos `interpolate`).
    Interpolated,
    /// A staircase (Junos's default, "segmented").
    Segmented,
}

/// Drop probability against fill level, both fractions in [0, 1].
#[derive(Clone, Debug, PartialEq)]
pub struct DropCurve {
    style: CurveStyle,
    /// (fill, probability), fills strictly increasing.
    points: Vec<(f64, f64)>,
}

impl DropCurve {
    /// Junos `interpolate { fill-level [..]; drop-probability [..]; }`:
    /// `points` are `(fill %, probability %)`; the line starts at (0, 0)
    /// and ends at (100, 100) unless points at fill 0 or 100 are given.
    pub fn interpolated(points: &[(f64, f64)]) -> Result<DropCurve, String> {
        let mut pts = Self::checked(points)?;
        if pts.first().is_none_or(|p| p.0 > 0.0) {
            pts.insert(0, (0.0, 0.0));
        }
        if pts.last().is_none_or(|p| p.0 < 1.0) {
            pts.push((1.0, 1.0));
        }
        Ok(DropCurve { style: CurveStyle::Interpolated, points: pts })
    }
    /// A Junos interpolated profile as the router applies it: the line of
    /// [`DropCurve::interpolated`] held as a table of
    /// [`JUNOS_PROFILE_POINTS`] pairs ([`DropCurve::tabulated`]).
    pub fn junos(points: &[(f64, f64)]) -> Result<DropCurve, String> {
        Ok(Self::interpolated(points)?.tabulated(JUNOS_PROFILE_POINTS))
    }
    /// Junos segmented `fill-level F drop-probability P` pairs (percent):
    /// probability 0 below the first fill level, then each point's
    /// probability from its fill level up to the next one's.
    pub fn segmented(points: &[(f64, f64)]) -> Result<DropCurve, String> {
        let pts = Self::checked(points)?;
        if pts.is_empty() {
            return Err("drop curve: a segmented curve needs at least one point".into());
        }
        Ok(DropCurve { style: CurveStyle::Segmented, points: pts })
    }
    /// The curve as a router holds it: a table of `n` fill levels evenly
    /// spaced from 0 to 100 %, each with the curve's probability there, and
    /// a fill between two levels takes the lower level's probability (a
    /// staircase under the line). Junos keeps an interpolated profile as 64
    /// such fill-level/drop-probability pairs ([`JUNOS_PROFILE_POINTS`]); so
    /// the first document's experiment-3 profile ("drop probability = queue
    /// occupancy") drops nothing below a fill of 1/63.
    pub fn tabulated(&self, n: usize) -> DropCurve {
        let n = n.max(2);
        let points = (0..n)
            .map(|k| {
                let f = k as f64 / (n - 1) as f64;
                (f, self.probability(f))
            })
            .collect();
        DropCurve { style: CurveStyle::Segmented, points }
    }
    /// The first document's experiment-3 curve: probability = fill.
    pub fn linear() -> DropCurve {
        DropCurve { style: CurveStyle::Interpolated, points: vec![(0.0, 0.0), (1.0, 1.0)] }
    }

    fn checked(points: &[(f64, f64)]) -> Result<Vec<(f64, f64)>, String> {
        for (i, &(f, p)) in points.iter().enumerate() {
            if !(0.0..=100.0).contains(&f) || !(0.0..=100.0).contains(&p) {
                return Err(format!("drop curve: point {i} ({f} %, {p} %) is outside [0, 100]"));
            }
            if i > 0 {
                let (f0, p0) = points[i - 1];
                if f <= f0 {
                    return Err(format!("drop curve: fill levels must increase, got {f0} % then {f} % (point {i})"));
                }
                if p < p0 {
                    return Err(format!("drop curve: drop probabilities must not decrease, got {p0} % then {p} % (point {i})"));
                }
            }
        }
        Ok(points.iter().map(|&(f, p)| (f / 100.0, p / 100.0)).collect())
    }

    /// The drop probability at `fill` (a fraction; clamped to [0, 1]).
    pub fn probability(&self, fill: f64) -> f64 {
        let f = fill.clamp(0.0, 1.0);
        let pts = &self.points;
        // Index of the first point above f.
        let i = pts.partition_point(|p| p.0 <= f);
        match self.style {
            CurveStyle::Segmented => {
                if i == 0 {
                    0.0
                } else {
                    pts[i - 1].1
                }
            }
            CurveStyle::Interpolated => {
                if i == 0 {
                    pts[0].1
                } else if i == pts.len() {
                    pts[i - 1].1
                } else {
                    // p = p0 + (p1 - p0) (f - f0) / (f1 - f0)
                    let ((f0, p0), (f1, p1)) = (pts[i - 1], pts[i]);
                    p0 + (p1 - p0) * (f - f0) / (f1 - f0)
                }
            }
        }
    }
}

fn draw(p: f64, rng: &mut Rng) -> bool {
    if p <= 0.0 {
        false
    } else if p >= 1.0 {
        true
    } else {
        rng.uniform() < p
    }
}

// ---------------------------------------------------------------------------
// Piecewise (Junos-style) WRED

/// User parameters of a [`PiecewiseWred`].
#[derive(Clone, Debug, PartialEq)]
pub struct PiecewiseWredParams {
    pub measure: FillMeasure,
    /// Curve per colour, indexed by `Color as usize`; `None`: never early-dropped.
    pub curves: [Option<DropCurve>; 3],
}

/// Drop probability from a curve per colour against the queue's fill
/// level; each packet dropped independently with that probability.
#[derive(Clone, Debug)]
pub struct PiecewiseWred {
    unit: FillUnit,
    curves: [Option<DropCurve>; 3],
    /// Average fill (a fraction), if averaging.
    avg: Option<Ewma>,
    last_fill: f64,
}

impl PiecewiseWred {
    pub fn new(p: PiecewiseWredParams) -> Result<PiecewiseWred, String> {
        p.measure.averaging.validate("wred")?;
        let avg = match p.measure.averaging {
            Averaging::Instantaneous => None,
            Averaging::Ewma { w_q, mean_pkt_bytes } => Some(Ewma::new(w_q, mean_pkt_bytes)),
        };
        Ok(PiecewiseWred { unit: p.measure.unit, curves: p.curves, avg, last_fill: 0.0 })
    }
    /// The first document's experiment 3 (Section III-D): out-of-profile
    /// (red) packets dropped with probability equal to the instantaneous
    /// fill of the queue in bytes; green and yellow never early-dropped.
    pub fn experiment3() -> PiecewiseWred {
        let p = PiecewiseWredParams { measure: FillMeasure::JUNOS, curves: [None, None, Some(DropCurve::linear())] };
        PiecewiseWred::new(p).expect("valid")
    }
    /// The fill level (fraction) used for the last decision.
    pub fn fill(&self) -> f64 {
        self.last_fill
    }
}

impl DropProfile for PiecewiseWred {
    fn early_drop(&mut self, pkt: &Packet, held: Backlog, limit: Limit, ctx: &mut QueueCtx) -> bool {
        let lim = self.unit.limit(limit);
        let now_fill = if lim == 0 { 1.0 } else { self.unit.of(held) as f64 / lim as f64 };
        self.last_fill = match &mut self.avg {
            None => now_fill,
            Some(e) => e.update(now_fill, held.pkts == 0, ctx.now, ctx.link_rate),
        };
        match &self.curves[pkt.color as usize] {
            None => false,
            // An averaged fill may lag an emptied queue: as RED, never drop
            // into a queue holding at most one packet.
            Some(_) if self.avg.is_some() && held.pkts <= 1 => false,
            Some(c) => draw(c.probability(self.last_fill), ctx.rng),
        }
    }
    fn on_empty(&mut self, now: SimTime) {
        if let Some(e) = &mut self.avg {
            e.idle_since = Some(now);
        }
    }
}

// ---------------------------------------------------------------------------
// RED decisions shared by RIO and per-colour RED

/// Floyd & Jacobson's Fig. 2 decision for one curve, as `Red` makes it:
/// `p_b` from the average (byte mode scales it by `size / mean_pkt_bytes`),
/// `p_a = p_b / (1 - count p_b)`, `count` packets since the last drop of
/// this curve (-1 while below `min_th`).
fn red_drop(p: &RedParams, avg: f64, count: &mut i64, size: u32, held: Backlog, rng: &mut Rng) -> bool {
    // Never into a queue holding at most one packet (ns-2, ns-3).
    let mut pb = if held.pkts <= 1 { 0.0 } else { p.base_probability(avg) };
    if pb <= 0.0 {
        *count = -1;
        return false;
    }
    if pb >= 1.0 {
        *count = 0;
        return true;
    }
    if p.byte_mode {
        pb = (pb * size as f64 / p.mean_pkt_bytes as f64).min(1.0);
    }
    *count += 1;
    if rng.uniform() < spread_probability(pb, *count) {
        *count = 0;
        true
    } else {
        false
    }
}

fn unit_of(p: &RedParams) -> FillUnit {
    if p.thresholds_in_bytes {
        FillUnit::Bytes
    } else {
        FillUnit::Packets
    }
}

// ---------------------------------------------------------------------------
// Per-colour RED on a shared average (GRED WRED mode, Cisco WRED)

/// Cisco WRED thresholds of one colour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CiscoThresholds {
    /// Minimum threshold, packets.
    pub min_th: f64,
    /// Maximum threshold, packets: every packet dropped at or above it.
    pub max_th: f64,
    /// Drop probability at `max_th` (1 / mark probability denominator).
    pub max_p: f64,
}

impl CiscoThresholds {
    /// The fifth source document's rule (Section 4, equation 2; Section
    /// 5.1): `max_th = r RTT / (MTU 8)` packets (the bandwidth-delay product
    /// of the queue's service rate `r`), `min_th = 0.15 max_th`, `max_p = 0.2`.
    pub fn from_rtt(rate: DataRate, rtt: Duration, mtu_bytes: u32) -> CiscoThresholds {
        // max_th = r x RTT / (MTU x 8), with r in bit/s and RTT in s.
        let max_th = rate.as_bps() as f64 * rtt.as_secs_f64() / (mtu_bytes as f64 * 8.0);
        CiscoThresholds { min_th: 0.15 * max_th, max_th, max_p: 0.2 }
    }
}

/// User parameters of a Cisco-style WRED.
#[derive(Clone, Debug, PartialEq)]
pub struct CiscoWredParams {
    /// Thresholds per colour, indexed by `Color as usize`.
    pub per_color: [Option<CiscoThresholds>; 3],
    /// Exponential weighting constant n: `w_q = 2^-n`. Cisco's default is 9.
    pub exp_weight: u32,
    /// Packet size for the idle-time correction, bytes.
    pub mean_pkt_bytes: u32,
}

impl CiscoWredParams {
    pub const DEFAULT_EXP_WEIGHT: u32 = 9;
    /// Thresholds per colour with the defaults n = 9, 1000 B.
    pub fn new(per_color: [Option<CiscoThresholds>; 3]) -> CiscoWredParams {
        CiscoWredParams { per_color, exp_weight: Self::DEFAULT_EXP_WEIGHT, mean_pkt_bytes: 1000 }
    }
}

/// One RED curve per colour on one shared average of the whole queue.
#[derive(Clone, Debug)]
pub struct ColorRed {
    unit: FillUnit,
    curves: [Option<RedParams>; 3],
    /// Packets since the last drop, per colour (`sch_gred` keeps `qcount`
    /// per virtual queue).
    count: [i64; 3],
    avg: Ewma,
}

impl ColorRed {
    /// Linux `sch_gred` in WRED mode: RED parameters per colour (drop
    /// precedence), one average of the whole queue. The colours given must
    /// agree on `thresholds_in_bytes`, `w_q` and `mean_pkt_bytes`; their
    /// `limit` is unused.
    pub fn gred(curves: [Option<RedParams>; 3]) -> Result<ColorRed, String> {
        let mut first: Option<&RedParams> = None;
        for (i, p) in curves.iter().enumerate() {
            let Some(p) = p else { continue };
            p.validate().map_err(|e| format!("gred: colour {i}: {e}"))?;
            if let Some(f) = first {
                if f.thresholds_in_bytes != p.thresholds_in_bytes || f.w_q != p.w_q || f.mean_pkt_bytes != p.mean_pkt_bytes {
                    return Err(format!(
                        "gred: the colours share one average, so thresholds_in_bytes, w_q and mean_pkt_bytes must agree; colour {i} has ({}, {}, {}), an earlier one ({}, {}, {})",
                        p.thresholds_in_bytes, p.w_q, p.mean_pkt_bytes, f.thresholds_in_bytes, f.w_q, f.mean_pkt_bytes
                    ));
                }
            } else {
                first = Some(p);
            }
        }
        let f = first.ok_or("gred: at least one colour needs RED parameters")?;
        Ok(ColorRed { unit: unit_of(f), avg: Ewma::new(f.w_q, f.mean_pkt_bytes), curves, count: [-1; 3] })
    }

    /// Cisco WRED: thresholds in packets, `w_q = 2^-n`, no gentle region.
    pub fn cisco(p: &CiscoWredParams) -> Result<ColorRed, String> {
        if p.exp_weight > 30 {
            return Err(format!("cisco wred: exp_weight must be at most 30, got {}", p.exp_weight));
        }
        let w_q = 0.5f64.powi(p.exp_weight as i32);
        let mut curves: [Option<RedParams>; 3] = [None, None, None];
        for (i, t) in p.per_color.iter().enumerate() {
            if let Some(t) = t {
                curves[i] = Some(RedParams {
                    limit: Limit::UNLIMITED,
                    min_th: t.min_th,
                    max_th: t.max_th,
                    thresholds_in_bytes: false,
                    max_p: t.max_p,
                    w_q,
                    gentle: false,
                    byte_mode: false,
                    mean_pkt_bytes: p.mean_pkt_bytes,
                });
            }
        }
        ColorRed::gred(curves).map_err(|e| e.replacen("gred", "cisco wred", 1))
    }

    /// The shared average, in the thresholds' unit.
    pub fn avg(&self) -> f64 {
        self.avg.avg
    }
}

impl DropProfile for ColorRed {
    fn early_drop(&mut self, pkt: &Packet, held: Backlog, _limit: Limit, ctx: &mut QueueCtx) -> bool {
        // sch_gred (WRED mode): the average is updated on every arrival, of any colour.
        let avg = self.avg.update(self.unit.of(held) as f64, held.pkts == 0, ctx.now, ctx.link_rate);
        let c = pkt.color as usize;
        match &self.curves[c] {
            None => false,
            Some(p) => red_drop(p, avg, &mut self.count[c], pkt.size, held, ctx.rng),
        }
    }
    fn on_empty(&mut self, now: SimTime) {
        self.avg.idle_since = Some(now);
    }
}

// ---------------------------------------------------------------------------
// RIO

/// User parameters of [`Rio`] (Clark & Fang's `(min_in, max_in, P_max_in)`
/// and `(min_out, max_out, P_max_out)`, with RED's other settings).
#[derive(Clone, Debug, PartialEq)]
pub struct RioParams {
    /// The curve for In (green) packets, on the average of In packets.
    pub in_profile: RedParams,
    /// The curve for Out (yellow, red) packets, on the average of the queue.
    pub out_profile: RedParams,
}

/// RED with In and Out (Clark & Fang 1998, the RIO algorithm). Per arrival:
/// if In, update `avg_in`; update `avg_total`; an In packet is dropped by
/// the In curve on `avg_in`, an Out packet by the Out curve on `avg_total`.
#[derive(Clone, Debug)]
pub struct Rio {
    p: RioParams,
    in_unit: FillUnit,
    total_unit: FillUnit,
    avg_in: Ewma,
    avg_total: Ewma,
    count_in: i64,
    count_out: i64,
    /// The queue as this profile believes it: (is In, size), oldest first.
    shadow: VecDeque<(bool, u32)>,
    in_backlog: Backlog,
}

impl Rio {
    pub fn new(p: RioParams) -> Result<Rio, String> {
        p.in_profile.validate().map_err(|e| format!("rio: in_profile: {e}"))?;
        p.out_profile.validate().map_err(|e| format!("rio: out_profile: {e}"))?;
        Ok(Rio {
            in_unit: unit_of(&p.in_profile),
            total_unit: unit_of(&p.out_profile),
            avg_in: Ewma::new(p.in_profile.w_q, p.in_profile.mean_pkt_bytes),
            avg_total: Ewma::new(p.out_profile.w_q, p.out_profile.mean_pkt_bytes),
            count_in: -1,
            count_out: -1,
            shadow: VecDeque::new(),
            in_backlog: Backlog::default(),
            p,
        })
    }
    /// In packets (and bytes) in the queue, as the profile tracks them.
    pub fn in_backlog(&self) -> Backlog {
        self.in_backlog
    }
    /// `(avg_in, avg_total)`, each in its curve's unit.
    pub fn averages(&self) -> (f64, f64) {
        (self.avg_in.avg, self.avg_total.avg)
    }

    /// Forget the packets that have left: the queue is FIFO, so they are
    /// the oldest of the shadow, until it holds as many as the queue.
    fn sync(&mut self, held: Backlog) {
        while self.shadow.len() as u64 > held.pkts {
            let (is_in, size) = self.shadow.pop_front().expect("non-empty");
            if is_in {
                self.in_backlog.pkts -= 1;
                self.in_backlog.bytes -= size as u64;
            }
        }
    }
}

impl DropProfile for Rio {
    fn early_drop(&mut self, pkt: &Packet, held: Backlog, limit: Limit, ctx: &mut QueueCtx) -> bool {
        self.sync(held);
        let is_in = pkt.color == Color::Green;
        let empty = held.pkts == 0;
        // Clark & Fang's RIO algorithm: avg_in on In arrivals only,
        // avg_total on every arrival. The In queue's idle time is taken as
        // the whole queue's (the only idle instant the profile is told of).
        if is_in {
            let q_in = self.in_unit.of(self.in_backlog) as f64;
            self.avg_in.update(q_in, empty, ctx.now, ctx.link_rate);
        } else if empty && self.avg_in.idle_since.is_some() {
            // An Out packet ends the idle period: avg_in takes its decay now.
            self.avg_in.update(0.0, true, ctx.now, ctx.link_rate);
        }
        let avg_total = self.avg_total.update(self.total_unit.of(held) as f64, empty, ctx.now, ctx.link_rate);
        let drop = if is_in {
            red_drop(&self.p.in_profile, self.avg_in.avg, &mut self.count_in, pkt.size, held, ctx.rng)
        } else {
            red_drop(&self.p.out_profile, avg_total, &mut self.count_out, pkt.size, held, ctx.rng)
        };
        if !drop && limit.admits(held, pkt.size) {
            self.shadow.push_back((is_in, pkt.size));
            if is_in {
                self.in_backlog.pkts += 1;
                self.in_backlog.bytes += pkt.size as u64;
            }
        }
        drop
    }
    fn on_empty(&mut self, now: SimTime) {
        self.shadow.clear();
        self.in_backlog = Backlog::default();
        self.avg_in.idle_since = Some(now);
        self.avg_total.idle_since = Some(now);
    }
}

// ---------------------------------------------------------------------------
// The classless discipline

/// Offered and dropped packets per colour, indexed by `Color as usize`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColorCounters {
    pub offered_pkts: [u64; 3],
    pub aqm_pkts: [u64; 3],
    pub tail_pkts: [u64; 3],
}

/// A FIFO whose early drops come from a [`DropProfile`], then tail drop at
/// `limit`.
pub struct Wred {
    limit: Limit,
    profile: Box<dyn DropProfile>,
    q: PacketQueue,
    by_color: ColorCounters,
}

impl Wred {
    pub fn new(limit: Limit, profile: Box<dyn DropProfile>) -> Wred {
        Wred { limit, profile, q: PacketQueue::default(), by_color: ColorCounters::default() }
    }
    pub fn color_counters(&self) -> &ColorCounters {
        &self.by_color
    }
}

impl Qdisc for Wred {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)> {
        let c = pkt.color as usize;
        self.by_color.offered_pkts[c] += 1;
        let held = self.q.backlog();
        let reason = if self.profile.early_drop(&pkt, held, self.limit, ctx) {
            self.by_color.aqm_pkts[c] += 1;
            DropReason::Aqm
        } else if !self.limit.admits(held, pkt.size) {
            self.by_color.tail_pkts[c] += 1;
            DropReason::Tail
        } else {
            self.q.push(pkt);
            return Ok(());
        };
        self.q.counters.on_drop(pkt.size, reason);
        Err((pkt, reason))
    }
    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued {
        match self.q.pop() {
            Some(p) => {
                if self.q.is_empty() {
                    self.profile.on_empty(ctx.now);
                }
                Dequeued::Packet(p)
            }
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
    use Color::{Green as G, Red as R, Yellow as Y};

    fn pkt(color: Color, size: u32) -> Packet {
        Packet { color, ..Packet::test(0, size) }
    }

    fn red(min_th: f64, max_th: f64, max_p: f64) -> RedParams {
        RedParams {
            limit: Limit::UNLIMITED,
            min_th,
            max_th,
            thresholds_in_bytes: false,
            max_p,
            w_q: 0.002,
            gentle: false,
            byte_mode: false,
            mean_pkt_bytes: 1000,
        }
    }

    /// Drop fraction of a RED curve held at `avg`: 1 / E[G], the gap G
    /// between drops having P(G > k) = prod_{c=1..k} (1 - p_a(c)).
    fn spread_fraction(p: &RedParams, avg: f64) -> f64 {
        let pb = p.base_probability(avg);
        if pb <= 0.0 {
            return 0.0;
        }
        if pb >= 1.0 {
            return 1.0;
        }
        let (mut survive, mut mean_gap) = (1.0, 0.0);
        for c in 1..100_000 {
            mean_gap += survive; // P(G >= c)
            survive *= 1.0 - spread_probability(pb, c);
            if survive < 1e-15 {
                break;
            }
        }
        1.0 / mean_gap
    }

    /// Offer `n` packets of each colour, round robin, to `prof` at a queue
    /// held at `held` out of `limit`, one every microsecond; return the drop
    /// fraction per colour after `warm` rounds.
    fn measure(prof: &mut dyn DropProfile, held: Backlog, limit: Limit, warm: usize, n: usize, seed: u64) -> [f64; 3] {
        let mut rng = Rng::stream(seed, "wred-test");
        let mut drops = [0u64; 3];
        for i in 0..warm + n {
            for c in [G, Y, R] {
                let mut ctx = QueueCtx { now: SimTime(i as u64 * 1000), link_rate: DataRate::gbps(1), rng: &mut rng };
                if prof.early_drop(&pkt(c, 1500), held, limit, &mut ctx) && i >= warm {
                    drops[c as usize] += 1;
                }
            }
        }
        drops.map(|d| d as f64 / n as f64)
    }

    fn bytes(b: u64) -> Backlog {
        Backlog { pkts: b.div_ceil(1500), bytes: b }
    }

    #[test]
    fn curves_follow_junos_examples() {
        // "Configuring RED Drop Profiles": interpolate fill-level [50 75]
        // drop-probability [25 50], drawn from (0, 0) to (100, 100).
        let c = DropCurve::interpolated(&[(50.0, 25.0), (75.0, 50.0)]).unwrap();
        for (f, p) in [(0.0, 0.0), (0.25, 0.125), (0.5, 0.25), (0.625, 0.375), (0.75, 0.5), (0.875, 0.75), (1.0, 1.0), (1.5, 1.0)] {
            assert!((c.probability(f) - p).abs() < 1e-12, "interpolated at {f}: {}", c.probability(f));
        }
        // Segmented: 25/25, 50/50, 75/75, 95/100 (a staircase from (0, 0)).
        // As a 64-entry table: a staircase under the line, exact on the grid.
        let t = DropCurve::linear().tabulated(JUNOS_PROFILE_POINTS);
        assert_eq!(t.probability(0.0), 0.0);
        assert_eq!(t.probability(0.99 / 63.0), 0.0, "no drop below the first step");
        assert!((t.probability(1.0 / 63.0) - 1.0 / 63.0).abs() < 1e-12);
        assert!((t.probability(0.5) - 31.0 / 63.0).abs() < 1e-12, "0.5 rounds down to step 31");
        assert_eq!(t.probability(1.0), 1.0);
        for k in 0..=1000 {
            let f = k as f64 / 1000.0;
            assert!(t.probability(f) <= DropCurve::linear().probability(f) + 1e-12);
            assert!(t.probability(f) > f - 1.0 / 63.0 - 1e-12);
        }
        let s = DropCurve::segmented(&[(25.0, 25.0), (50.0, 50.0), (75.0, 75.0), (95.0, 100.0)]).unwrap();
        for (f, p) in [(0.0, 0.0), (0.2499, 0.0), (0.25, 0.25), (0.49, 0.25), (0.6, 0.5), (0.8, 0.75), (0.95, 1.0), (1.0, 1.0)] {
            assert_eq!(s.probability(f), p, "segmented at {f}");
        }
        // Explicit end points are kept: a curve that stays at 20 % to full.
        let flat = DropCurve::interpolated(&[(0.0, 0.0), (50.0, 20.0), (100.0, 20.0)]).unwrap();
        assert!((flat.probability(0.9) - 0.2).abs() < 1e-12);
        assert!((DropCurve::linear().probability(0.37) - 0.37).abs() < 1e-12);
        // Validation.
        assert!(DropCurve::interpolated(&[(50.0, 10.0), (50.0, 20.0)]).unwrap_err().contains("increase"));
        assert!(DropCurve::interpolated(&[(10.0, 30.0), (50.0, 20.0)]).unwrap_err().contains("decrease"));
        assert!(DropCurve::interpolated(&[(101.0, 30.0)]).unwrap_err().contains("outside"));
        assert!(DropCurve::segmented(&[]).is_err());
    }

    #[test]
    fn experiment3_drops_red_with_probability_equal_to_the_fill() {
        let limit = Limit::from_opts(None, Some(150_000));
        for fill in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9] {
            let mut prof = PiecewiseWred::experiment3();
            let held = bytes((150_000.0 * fill) as u64);
            let f = measure(&mut prof, held, limit, 0, 100_000, 7);
            assert_eq!(f[G as usize], 0.0, "green never early-dropped");
            assert_eq!(f[Y as usize], 0.0, "yellow has no curve");
            // Binomial sd at most 0.0016 for 1e5 draws: 0.01 is > 6 sd.
            assert!((f[R as usize] - fill).abs() < 0.01, "fill {fill}: red drop fraction {}", f[R as usize]);
        }
    }

    #[test]
    fn measured_drop_fraction_follows_each_colours_curve() {
        let curves = [
            DropCurve::interpolated(&[(50.0, 0.0), (90.0, 20.0), (100.0, 100.0)]).unwrap(),
            DropCurve::interpolated(&[(30.0, 0.0), (70.0, 50.0)]).unwrap(),
            DropCurve::segmented(&[(10.0, 30.0), (40.0, 60.0), (80.0, 100.0)]).unwrap(),
        ];
        for unit in [FillUnit::Bytes, FillUnit::Packets] {
            let mut prof = PiecewiseWred::new(PiecewiseWredParams {
                measure: FillMeasure { unit, averaging: Averaging::Instantaneous },
                curves: [Some(curves[0].clone()), Some(curves[1].clone()), Some(curves[2].clone())],
            })
            .unwrap();
            let limit = Limit { pkts: 100, bytes: 150_000 };
            for k in [5u64, 20, 45, 60, 75, 95] {
                let held = Backlog { pkts: k, bytes: k * 1500 };
                let f = measure(&mut prof, held, limit, 0, 60_000, k);
                for c in 0..3 {
                    let want = curves[c].probability(k as f64 / 100.0);
                    assert!((f[c] - want).abs() < 0.01, "{unit:?} fill {k}%, colour {c}: {} vs {want}", f[c]);
                }
            }
        }
    }

    #[test]
    fn averaged_fill_converges_and_decays_when_idle() {
        let mut prof = PiecewiseWred::new(PiecewiseWredParams {
            measure: FillMeasure { unit: FillUnit::Packets, averaging: Averaging::cisco(9) },
            curves: [None, None, Some(DropCurve::linear())],
        })
        .unwrap();
        let limit = Limit::from_opts(Some(100), None);
        let held = Backlog { pkts: 40, bytes: 60_000 };
        // 3 x 20000 arrivals at w = 2^-9: (1 - w)^60000 ~ e^-117, converged.
        let f = measure(&mut prof, held, limit, 20_000, 60_000, 3);
        assert!((prof.fill() - 0.4).abs() < 1e-9, "{}", prof.fill());
        assert!((f[R as usize] - 0.4).abs() < 0.01, "{}", f[R as usize]);
        // The queue empties at 1 s; a packet at 1.008 s finds it idle for
        // 8 ms = 1000 transmission times of 1000 B at 1 Gbps.
        prof.on_empty(SimTime(1_000_000_000));
        let mut rng = Rng::stream(1, "x");
        let mut ctx = QueueCtx { now: SimTime(1_008_000_000), link_rate: DataRate::gbps(1), rng: &mut rng };
        prof.early_drop(&pkt(G, 1500), Backlog::default(), limit, &mut ctx);
        let want = 0.4 * (1.0 - 0.5f64.powi(9)).powf(1000.0);
        assert!((prof.fill() - want).abs() < 1e-9, "{} vs {want}", prof.fill());
    }

    #[test]
    fn cisco_wred_per_colour_follows_red_with_the_fifth_documents_settings() {
        // max_th from the bandwidth-delay product: 10 Mbit/s x 180 ms /
        // (1500 B x 8) = 150 packets; min_th = 22.5; max_p = 0.2.
        let t = CiscoThresholds::from_rtt(DataRate::mbps(10), Duration::from_millis(180), 1500);
        assert!((t.max_th - 150.0).abs() < 1e-9 && (t.min_th - 22.5).abs() < 1e-9 && t.max_p == 0.2, "{t:?}");
        // Case B1: green (22, 149, 0.2), yellow (22, 149, 0.4), red none.
        let b1 = CiscoWredParams::new([
            Some(CiscoThresholds { min_th: 22.0, max_th: 149.0, max_p: 0.2 }),
            Some(CiscoThresholds { min_th: 22.0, max_th: 149.0, max_p: 0.4 }),
            None,
        ]);
        for level in [10u64, 50, 100, 140, 160] {
            let mut prof = ColorRed::cisco(&b1).unwrap();
            let held = Backlog { pkts: level, bytes: level * 1500 };
            let f = measure(&mut prof, held, Limit::UNLIMITED, 20_000, 200_000, level);
            assert!((prof.avg() - level as f64).abs() < 1e-6);
            for (c, th) in b1.per_color.iter().take(2).enumerate() {
                let th = th.unwrap();
                let p = red(th.min_th, th.max_th, th.max_p);
                let want = spread_fraction(&p, level as f64);
                let tol = 0.05 * want + 1e-9;
                assert!((f[c] - want).abs() <= tol, "level {level}, colour {c}: {} vs {want}", f[c]);
            }
            assert_eq!(f[2], 0.0, "no curve for red");
        }
        assert!(ColorRed::cisco(&CiscoWredParams { exp_weight: 40, ..b1.clone() }).is_err());
        let bad = CiscoWredParams::new([Some(CiscoThresholds { min_th: 50.0, max_th: 40.0, max_p: 0.1 }), None, None]);
        assert!(ColorRed::cisco(&bad).unwrap_err().starts_with("cisco wred: colour 0"));
    }

    #[test]
    fn gred_shares_one_average_between_colours() {
        let green = RedParams { gentle: true, ..red(30.0, 60.0, 0.05) };
        let yellow = RedParams { gentle: true, ..red(10.0, 30.0, 0.2) };
        let mut prof = ColorRed::gred([Some(green.clone()), Some(yellow.clone()), None]).unwrap();
        let mut rng = Rng::stream(5, "gred");
        // Green packets alone hold the queue at 45: the shared average
        // climbs to 45, and the first yellow packet is judged on it (gentle
        // region of its curve: 0.2 + 0.8 x 15/30 = 0.6).
        for i in 0..20_000u64 {
            let mut ctx = QueueCtx { now: SimTime(i), link_rate: DataRate::gbps(1), rng: &mut rng };
            prof.early_drop(&pkt(G, 1000), Backlog { pkts: 45, bytes: 45_000 }, Limit::UNLIMITED, &mut ctx);
        }
        assert!((prof.avg() - 45.0).abs() < 1e-6);
        assert!((yellow.base_probability(prof.avg()) - 0.6).abs() < 1e-6);
        let f = measure(&mut prof, Backlog { pkts: 45, bytes: 45_000 }, Limit::UNLIMITED, 0, 200_000, 9);
        for (c, p) in [(0, &green), (1, &yellow)] {
            let want = spread_fraction(p, 45.0);
            assert!((f[c] - want).abs() <= 0.05 * want, "colour {c}: {} vs {want}", f[c]);
        }
        // One average needs one weight.
        let e = ColorRed::gred([Some(green), Some(RedParams { w_q: 0.01, ..yellow }), None]).unwrap_err();
        assert!(e.contains("share one average"), "{e}");
        assert!(ColorRed::gred([None, None, None]).is_err());
    }

    #[test]
    fn rio_tracks_in_packets_of_a_fifo() {
        // A FIFO of our own: arrivals through the profile, random departures.
        let limit = Limit::from_opts(Some(50), None);
        let params = RioParams { in_profile: red(20.0, 40.0, 0.1), out_profile: red(5.0, 15.0, 0.5) };
        let mut rio = Rio::new(params).unwrap();
        let mut rng = Rng::stream(4, "rio-shadow");
        let mut fifo: VecDeque<Packet> = VecDeque::new();
        for i in 0..100_000u64 {
            let now = SimTime(i * 1000);
            let u = rng.uniform();
            let color = if u < 0.4 { G } else if u < 0.7 { Y } else { R };
            let p = pkt(color, 500 + (i % 1000) as u32);
            let held = Backlog { pkts: fifo.len() as u64, bytes: fifo.iter().map(|p| p.size as u64).sum() };
            let mut ctx = QueueCtx { now, link_rate: DataRate::gbps(1), rng: &mut rng };
            if !rio.early_drop(&p, held, limit, &mut ctx) && limit.admits(held, p.size) {
                fifo.push_back(p);
            }
            let real_in = fifo.iter().filter(|p| p.color == G);
            let want = Backlog { pkts: real_in.clone().count() as u64, bytes: real_in.map(|p| p.size as u64).sum() };
            assert_eq!(rio.in_backlog(), want, "arrival {i}");
            // Departures: 0, 1 or 2 per arrival, on average slightly fewer than arrivals.
            for _ in 0..(rng.next_u64() % 3) {
                if fifo.pop_front().is_some() && fifo.is_empty() {
                    rio.on_empty(now);
                }
            }
        }
    }

    /// A slotted queue: per slot, an In arrival with probability `a_in`, an
    /// Out arrival with probability `a_out`, then one departure. Returns
    /// the drop fraction of In and of Out packets.
    fn overload(profile: Box<dyn DropProfile>, a_in: f64, a_out: f64) -> (f64, f64) {
        let mut q = Wred::new(Limit::from_opts(Some(200), None), profile);
        let mut rng = Rng::stream(8, "rio-overload");
        let mut arrivals = Rng::stream(9, "rio-arrivals");
        for i in 0..400_000u64 {
            let mut ctx = QueueCtx { now: SimTime(i * 12_000), link_rate: DataRate::gbps(1), rng: &mut rng };
            let (u, v) = (arrivals.uniform(), arrivals.uniform());
            if u < a_in {
                let _ = q.enqueue(pkt(G, 1500), &mut ctx);
            }
            if v < a_out {
                let _ = q.enqueue(pkt(R, 1500), &mut ctx);
            }
            let _ = q.dequeue(&mut ctx);
        }
        let c = q.color_counters().clone();
        let frac = |k: usize| (c.aqm_pkts[k] + c.tail_pkts[k]) as f64 / c.offered_pkts[k] as f64;
        (frac(0), frac(2))
    }

    #[test]
    fn rio_drops_out_of_profile_packets_first() {
        // 120 % load: In 50 % of the service rate, Out 70 %. With Clark &
        // Fang's kind of settings (Out curve far below the In curve), RIO
        // holds the queue near the Out thresholds by dropping Out packets
        // (about 0.2 / 0.7 of them) and never reaches the In thresholds.
        let rio = RioParams { in_profile: red(40.0, 70.0, 0.02), out_profile: red(10.0, 30.0, 0.5) };
        let (d_in, d_out) = overload(Box::new(Rio::new(rio).unwrap()), 0.5, 0.7);
        assert_eq!(d_in, 0.0, "no In packet dropped");
        assert!((d_out - 0.2 / 0.7).abs() < 0.03, "Out drop fraction {d_out}");
        // The same load on colour-blind RED (one curve for every colour)
        // drops In and Out alike.
        let same = red(10.0, 30.0, 0.5);
        let blind = ColorRed::gred([Some(same.clone()), Some(same.clone()), Some(same)]).unwrap();
        let (d_in, d_out) = overload(Box::new(blind), 0.5, 0.7);
        assert!(d_in > 0.1 && (d_in - d_out).abs() < 0.03, "RED: In {d_in}, Out {d_out}");
    }

    #[test]
    fn wred_queue_counts_early_and_tail_drops() {
        // Experiment 3 on a queue of 100 x 1500 B: at fill 100 % green is
        // tail-dropped and red early-dropped (probability 1).
        let mut q = Wred::new(Limit::from_opts(None, Some(150_000)), Box::new(PiecewiseWred::experiment3()));
        let mut rng = Rng::stream(2, "wred-q");
        let mut ctx = QueueCtx { now: SimTime::ZERO, link_rate: DataRate::gbps(10), rng: &mut rng };
        for _ in 0..100 {
            assert!(q.enqueue(pkt(G, 1500), &mut ctx).is_ok());
        }
        assert_eq!(q.enqueue(pkt(G, 1500), &mut ctx).unwrap_err().1, DropReason::Tail);
        assert_eq!(q.enqueue(pkt(R, 1500), &mut ctx).unwrap_err().1, DropReason::Aqm);
        // Hold the queue at 60 %: accept, then send one.
        while q.backlog().pkts > 60 {
            q.dequeue(&mut ctx);
        }
        let (mut red_offered, mut red_dropped) = (0u64, 0u64);
        for i in 0..100_000 {
            let c = if i % 2 == 0 { G } else { R };
            let before = q.backlog().pkts;
            match q.enqueue(pkt(c, 1500), &mut ctx) {
                Ok(()) => {
                    q.dequeue(&mut ctx);
                }
                Err((_, why)) => {
                    assert_eq!((c, why), (R, DropReason::Aqm));
                    red_dropped += 1;
                }
            }
            red_offered += (c == R) as u64;
            assert_eq!(q.backlog().pkts, before);
        }
        let f = red_dropped as f64 / red_offered as f64;
        assert!((f - 0.6).abs() < 0.01, "red drop fraction at 60 % fill: {f}");
        let cc = q.color_counters();
        assert_eq!((cc.aqm_pkts[0], cc.tail_pkts[0], cc.tail_pkts[2]), (0, 1, 0));
        let mut seen = 0;
        q.for_each_queue(&mut |name, c, b| {
            seen += 1;
            assert_eq!(name, "");
            assert_eq!(c.enq_pkts, c.deq_pkts + b.pkts, "conservation");
            assert_eq!(c.drop_reason_pkts[DropReason::Aqm as usize], red_dropped + 1);
            assert_eq!(c.drop_reason_pkts[DropReason::Tail as usize], 1);
            assert_eq!(c.enq_pkts + c.drop_pkts, 100 + 2 + 100_000);
        });
        assert_eq!(seen, 1);
    }
}
