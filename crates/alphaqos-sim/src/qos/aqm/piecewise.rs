//! Junos-style drop profiles: one curve per colour of drop probability
//! against the queue's fill level.
//!
//! What it models: the drop profiles routers apply to a queue holding
//! packets of several colours (set by a meter, see `qos::meter`). A curve
//! is given as `fill-level`/`drop-probability` pairs in percent, either
//! *interpolated* (straight lines through the points, from (0, 0) to
//! (100, 100) unless the points say otherwise) or *segmented* (a staircase:
//! each point's probability from its fill level up to the next point's).
//! Junos ("Configuring RED Drop Profiles", `[edit class-of-service
//! drop-profiles]`) uses the instantaneous fill; Cisco's WRED an
//! exponentially weighted average ([`super::ewma`]), both offered. The
//! first source document's experiment 3 (Section III-D, Table II: "Drop
//! prob. = queue occ.") is [`PiecewiseWred::experiment3`]: out-of-profile
//! (red) packets dropped with probability equal to the queue's
//! instantaneous fill, the single curve [(0 %, 0 %), (100 %, 100 %)],
//! in-profile packets never early-dropped. Each packet is dropped
//! independently with its curve's probability. With an averaged fill, as
//! RED, no packet is dropped into a queue holding at most one packet.
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
//!   Junos holds an interpolated profile as a table of 64 levels
//!   ([`DropCurve::junos`]).
//!
//! A colour without a curve is never early-dropped (only tail-dropped).
//!
//! Tests (below): the curves against Junos's documented examples; the
//! measured drop fraction per colour at fixed fills against each curve
//! within a few per cent; experiment 3 drops red with probability equal to
//! the fill and never green, in the profile and through a FIFO (early drops
//! as `aqm`, full-queue drops as `tail`); the averaged fill and its decay.

use super::ewma::{Ewma, FillUnit};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::qos::fifo::Limit;
use crate::qos::{Backlog, DropProfile, QueueCtx};
use crate::rng::Rng;
use crate::time::SimTime;


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
    fn validate(&self) -> Result<(), ConfigError> {
        if let Averaging::Ewma { w_q, mean_pkt_bytes } = *self {
            if !(w_q > 0.0 && w_q <= 1.0) {
                return Err(ConfigError::at("w_q", format!("must be in (0, 1], got {w_q}")));
            }
            if mean_pkt_bytes == 0 {
                return Err(ConfigError::at("mean_pkt_bytes", "must be positive"));
            }
        }
        Ok(())
    }
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
    pub fn interpolated(points: &[(f64, f64)]) -> Result<DropCurve, ConfigError> {
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
    pub fn junos(points: &[(f64, f64)]) -> Result<DropCurve, ConfigError> {
        Ok(Self::interpolated(points)?.tabulated(JUNOS_PROFILE_POINTS))
    }
    /// Junos segmented `fill-level F drop-probability P` pairs (percent):
    /// probability 0 below the first fill level, then each point's
    /// probability from its fill level up to the next one's.
    pub fn segmented(points: &[(f64, f64)]) -> Result<DropCurve, ConfigError> {
        let pts = Self::checked(points)?;
        if pts.is_empty() {
            return Err(ConfigError::new("a segmented drop curve needs at least one point"));
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

    /// The points as fractions; a problem is located at the point (`[2]`).
    fn checked(points: &[(f64, f64)]) -> Result<Vec<(f64, f64)>, ConfigError> {
        for (i, &(f, p)) in points.iter().enumerate() {
            if !(0.0..=100.0).contains(&f) || !(0.0..=100.0).contains(&p) {
                return Err(ConfigError::at(i, format!("the point ({f} %, {p} %) is outside [0, 100]")));
            }
            if i > 0 {
                let (f0, p0) = points[i - 1];
                if f <= f0 {
                    return Err(ConfigError::at(i, format!("fill levels must increase, got {f0} % then {f} %")));
                }
                if p < p0 {
                    return Err(ConfigError::at(i, format!("drop probabilities must not decrease, got {p0} % then {p} %")));
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
    pub fn new(p: PiecewiseWredParams) -> Result<PiecewiseWred, ConfigError> {
        p.measure.averaging.validate()?;
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
    fn on_enqueue(&mut self, _pkt: &Packet, _held: Backlog, _now: SimTime) {
        if let Some(e) = &mut self.avg {
            e.busy();
        }
    }
    fn on_dequeue(&mut self, _pkt: &Packet, held: Backlog, now: SimTime) {
        if let (Some(e), 0) = (&mut self.avg, held.pkts) {
            e.idle(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Color;
    use crate::qos::aqm::testutil::*;
    use crate::qos::fifo::Fifo;
    use crate::qos::{DropReason, Qdisc};
    use crate::units::DataRate;
    use Color::{Green as G, Red as R, Yellow as Y};

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
        assert!(DropCurve::interpolated(&[(50.0, 10.0), (50.0, 20.0)]).unwrap_err().msg.contains("increase"));
        assert!(DropCurve::interpolated(&[(10.0, 30.0), (50.0, 20.0)]).unwrap_err().msg.contains("decrease"));
        assert!(DropCurve::interpolated(&[(101.0, 30.0)]).unwrap_err().msg.contains("outside"));
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
        prof.on_dequeue(&pkt(G, 1500), Backlog::default(), SimTime(1_000_000_000));
        let mut rng = Rng::stream(1, "x");
        let mut ctx = QueueCtx::new(SimTime(1_008_000_000), DataRate::gbps(1), &mut rng);
        prof.early_drop(&pkt(G, 1500), Backlog::default(), limit, &mut ctx);
        let want = 0.4 * (1.0 - 0.5f64.powi(9)).powf(1000.0);
        assert!((prof.fill() - want).abs() < 1e-9, "{} vs {want}", prof.fill());
    }


    #[test]
    fn fifo_with_a_profile_counts_early_and_tail_drops() {
        // Experiment 3 on a queue of 100 x 1500 B: at fill 100 % green is
        // tail-dropped and red early-dropped (probability 1).
        let mut q = Fifo::with_profile(Limit::from_opts(None, Some(150_000)), Box::new(PiecewiseWred::experiment3()));
        let mut rng = Rng::stream(2, "wred-q");
        let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(10), &mut rng);
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
