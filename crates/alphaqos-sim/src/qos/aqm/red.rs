//! Random Early Detection: a FIFO ([`crate::qos::fifo::Fifo`]) with the
//! [`RedProfile`] early-drop profile ([`queue`] builds it).
//!
//! Floyd & Jacobson, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM ToN 1(4), 1993, Section 4 and Fig. 2:
//!
//! - average queue on every arrival with the idle-time correction, as
//!   [`super::ewma`] computes it;
//! - no early drop (forced or random) into a queue holding at most one
//!   packet, as ns-2 and ns-3 do (`qlen > 1` beside `avg >= min_th`);
//! - `p_b = max_p (avg - min_th) / (max_th - min_th)` for `min_th <= avg < max_th`;
//!   in byte mode scaled by `size / mean_pkt_bytes` (Section 4, "byte mode");
//! - gentle RED (Floyd, "Recommendation on using the gentle variant of
//!   RED", 2000): `p_b = max_p + (1 - max_p) (avg - max_th) / max_th` for
//!   `max_th <= avg < 2 max_th`, every packet dropped above `2 max_th`;
//! - the drop probability `p_a = p_b / (1 - count p_b)` with `count` the
//!   packets since the last drop, which spreads drops evenly (the gap between
//!   drops is uniform on 1..1/p_b);
//! - option `wait` (ns-2's `wait_`, on by default there: `queue/red.cc`,
//!   `REDQueue::modify_p`, and `tcl/lib/ns-default.tcl`, `Queue/RED set
//!   wait_ true`): no early drop while `count p_b < 1`, then `p_a = p_b /
//!   (2 - count p_b)`, and 1 once `count p_b >= 2`, so that the gap between
//!   drops is uniform on 1/p_b..2/p_b: drops twice as far apart on average,
//!   never closer than 1/p_b. Off by default (the paper's rule).
//!
//! Parameters: `min_th`, `max_th` in packets (or bytes with
//! `thresholds_in_bytes`), `max_p` (0.1), `w_q` (0.002), `gentle` (true),
//! `byte_mode` (false), `mean_pkt_bytes` (1000), and the hard limit of the
//! buffer. Validated by the unit tests below: the probability function, a
//! long run's drop fraction against the gap distribution it implies, the
//! idle decay and the no-drop rule at a near-empty queue; `tests/aqm.rs`:
//! two TCP flows never stall over 20 seeds (issue 9, defect 0).

use crate::knob::{Knob, KnobError, KnobName, KnobResult};
use super::ewma::{Ewma, FillUnit};
use crate::error::ConfigError;
use crate::config::RedConfig;
use crate::packet::{Color, Packet};
use crate::qos::fifo::{Fifo, Limit};
use crate::qos::{Backlog, DropProfile, QueueCtx};
use crate::rng::Rng;
use crate::time::SimTime;

/// User parameters, validated once.
#[derive(Clone, Debug, PartialEq)]
pub struct RedParams {
    pub limit: Limit,
    pub min_th: f64,
    pub max_th: f64,
    pub thresholds_in_bytes: bool,
    pub max_p: f64,
    pub w_q: f64,
    pub gentle: bool,
    pub byte_mode: bool,
    pub mean_pkt_bytes: u32,
    /// ns-2's `wait_` spacing (see the module doc).
    pub wait: bool,
}

impl RedParams {
    /// The parameters of a RED configuration, checked; an error is
    /// located at its field (`max_th`).
    pub fn from_config(c: &RedConfig) -> Result<Self, ConfigError> {
        let p = RedParams {
            limit: Limit::from_opts(c.limit_pkts, c.limit_bytes),
            min_th: c.min_th,
            max_th: c.max_th,
            thresholds_in_bytes: c.thresholds_in_bytes,
            max_p: c.max_p,
            w_q: c.w_q,
            gentle: c.gentle,
            byte_mode: c.byte_mode,
            mean_pkt_bytes: c.mean_pkt_bytes,
            wait: c.wait,
        };
        p.check()?;
        Ok(p)
    }

    /// Each parameter in its range, a problem located at its field.
    pub fn check(&self) -> Result<(), ConfigError> {
        let th = |x: f64| if self.thresholds_in_bytes && x >= 0.0 { crate::units::Bytes(x as u64).to_string() } else { x.to_string() };
        if !(self.min_th >= 0.0) {
            return Err(ConfigError::at("min_th", format!("must not be negative, got {}", self.min_th)));
        }
        if !(self.min_th < self.max_th) {
            return Err(ConfigError::at("max_th", format!("must be greater than min_th ({}), got {}", th(self.min_th), th(self.max_th))));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(ConfigError::at("max_p", format!("must be in (0, 1], got {}", self.max_p)));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(ConfigError::at("w_q", format!("must be in (0, 1], got {}", self.w_q)));
        }
        if self.mean_pkt_bytes == 0 {
            return Err(ConfigError::at("mean_pkt_bytes", "must be positive"));
        }
        Ok(())
    }

    /// `p_b` for an average queue `avg` (before byte-mode scaling), in [0, 1].
    pub fn base_probability(&self, avg: f64) -> f64 {
        if avg < self.min_th {
            0.0
        } else if avg < self.max_th {
            self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        } else if self.gentle && avg < 2.0 * self.max_th {
            self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th
        } else {
            1.0
        }
    }
}

/// `p_a = p_b / (1 - count p_b)`, 1 once `count p_b >= 1`.
pub fn spread_probability(pb: f64, count: i64) -> f64 {
    let denom = 1.0 - count as f64 * pb;
    if denom <= pb {
        1.0
    } else {
        (pb / denom).min(1.0)
    }
}

/// ns-2's `modify_p` with `wait_` set (`queue/red.cc`): 0 while `count
/// p_b < 1`, `p_b / (2 - count p_b)` while it is below 2, then 1.
pub fn wait_probability(pb: f64, count: i64) -> f64 {
    let cp = count as f64 * pb;
    if cp < 1.0 {
        0.0
    } else if cp < 2.0 {
        (pb / (2.0 - cp)).min(1.0)
    } else {
        1.0
    }
}

/// Floyd & Jacobson's Fig. 2 decision for one curve: `p_b` from the
/// average (byte mode scales it by `size / mean_pkt_bytes`),
/// `p_a = p_b / (1 - count p_b)`, `count` packets since the last drop of
/// this curve (-1 while below `min_th`). Never a drop into a queue holding
/// at most one packet (`held`), as ns-2 and ns-3 (`qlen > 1`).
pub(crate) fn red_drop(p: &RedParams, avg: f64, count: &mut i64, size: u32, held: Backlog, rng: &mut Rng) -> bool {
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
    let pa = if p.wait { wait_probability(pb, *count) } else { spread_probability(pb, *count) };
    if rng.uniform() < pa {
        *count = 0;
        true
    } else {
        false
    }
}

/// The unit of a curve's thresholds.
pub(crate) fn unit_of(p: &RedParams) -> FillUnit {
    if p.thresholds_in_bytes {
        FillUnit::Bytes
    } else {
        FillUnit::Packets
    }
}

/// RED as an early-drop profile: one curve on the average of the queue.
#[derive(Clone, Debug)]
pub struct RedProfile {
    params: RedParams,
    unit: FillUnit,
    avg: Ewma,
    /// Packets since the last drop; -1 while the average is below min_th.
    count: i64,
}

impl RedProfile {
    pub fn new(params: RedParams) -> Self {
        RedProfile { unit: unit_of(&params), avg: Ewma::new(params.w_q, params.mean_pkt_bytes), count: -1, params }
    }
    /// The average queue, in the thresholds' unit.
    pub fn avg(&self) -> f64 {
        self.avg.avg
    }
}

impl DropProfile for RedProfile {
    fn early_drop(&mut self, pkt: &Packet, held: Backlog, _limit: Limit, ctx: &mut QueueCtx) -> bool {
        let avg = self.avg.update(self.unit.of(held) as f64, held.pkts == 0, ctx.now, ctx.link_rate);
        red_drop(&self.params, avg, &mut self.count, pkt.size, held, ctx.rng)
    }
    fn on_enqueue(&mut self, _pkt: &Packet, _held: Backlog, _now: SimTime) {
        self.avg.busy();
    }
    fn on_dequeue(&mut self, _pkt: &Packet, held: Backlog, now: SimTime) {
        self.avg.on_departure(held, now);
    }
    fn knob_value(&self, n: KnobName) -> Option<f64> {
        curves_value([Some(&self.params), None, None], CurveKnob::of(n)?)
    }
    fn set_knob(&mut self, k: Knob) -> KnobResult {
        let (k, v) = CurveKnob::of_knob(k).ok_or(KnobError::Unknown)?;
        set_curves(&mut [Some(&mut self.params), None, None], k, v)
    }
    fn avg(&self) -> Option<f64> {
        Some(self.avg.avg)
    }
}

/// The RED queue: a FIFO of `params.limit` with a [`RedProfile`].
pub fn queue(params: RedParams) -> Fifo {
    Fifo::with_profile(params.limit, Box::new(RedProfile::new(params)))
}

/// A parameter of a RED curve that is a knob (`min_th`, `max_th`, `max_p`)
/// and the colour whose curve it addresses (None: every curve the profile
/// has; a profile with one curve has it as green's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CurveKnob {
    field: CurveField,
    pub colour: Option<Color>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CurveField {
    MinTh,
    MaxTh,
    MaxP,
}

impl CurveKnob {
    /// The curve parameter `n` names, if it is one.
    pub fn of(n: KnobName) -> Option<CurveKnob> {
        let (field, colour) = match n {
            KnobName::MinTh(c) => (CurveField::MinTh, c),
            KnobName::MaxTh(c) => (CurveField::MaxTh, c),
            KnobName::MaxP(c) => (CurveField::MaxP, c),
            _ => return None,
        };
        Some(CurveKnob { field, colour })
    }
    /// The curve parameter `k` sets, and its value.
    pub fn of_knob(k: Knob) -> Option<(CurveKnob, f64)> {
        let v = match k {
            Knob::MinTh(_, v) | Knob::MaxTh(_, v) | Knob::MaxP(_, v) => v,
            _ => return None,
        };
        Some((CurveKnob::of(k.name())?, v))
    }
    fn read(self, p: &RedParams) -> f64 {
        match self.field {
            CurveField::MinTh => p.min_th,
            CurveField::MaxTh => p.max_th,
            CurveField::MaxP => p.max_p,
        }
    }
    fn write(self, p: &mut RedParams, v: f64) {
        match self.field {
            CurveField::MinTh => p.min_th = v,
            CurveField::MaxTh => p.max_th = v,
            CurveField::MaxP => p.max_p = v,
        }
    }
    /// The curves, of those present, that `self` addresses.
    fn chosen<T>(self, curves: &[Option<T>; 3]) -> impl Iterator<Item = usize> + '_ {
        (0..3).filter(move |&i| curves[i].is_some() && self.colour.is_none_or(|c| c as usize == i))
    }
}

/// Parameter `k` of a profile's RED curves (indexed by colour): of the
/// colour's curve, or without a colour of the first curve the profile
/// has; None if there is no such curve.
pub fn curves_value(curves: [Option<&RedParams>; 3], k: CurveKnob) -> Option<f64> {
    let first = k.chosen(&curves).next()?;
    Some(k.read(curves[first].expect("chosen")))
}

/// Set parameter `k` to `v` on a profile's RED curves (indexed by colour):
/// the colour's curve, or without a colour every curve the profile has.
/// A value that leaves any of them invalid (min_th above max_th, max_p out
/// of (0, 1]: [`RedParams::check`]) changes none. The value replaced (of
/// the first curve).
pub fn set_curves(curves: &mut [Option<&mut RedParams>; 3], k: CurveKnob, v: f64) -> KnobResult {
    let chosen: Vec<usize> = k.chosen(curves).collect();
    let first = *chosen.first().ok_or(KnobError::Unknown)?;
    let old = k.read(curves[first].as_deref().expect("chosen"));
    let mut changed = Vec::with_capacity(chosen.len());
    for &i in &chosen {
        let mut p = curves[i].as_deref().expect("chosen").clone();
        k.write(&mut p, v);
        p.check().map_err(|e| KnobError::Invalid(e.to_string()))?;
        changed.push(p);
    }
    for (i, p) in chosen.into_iter().zip(changed) {
        *curves[i].as_deref_mut().expect("chosen") = p;
    }
    Ok(old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::aqm::testutil::spread_fraction;
    use crate::qos::{DropReason, Qdisc};
    use crate::units::DataRate;

    fn params() -> RedParams {
        RedParams {
            limit: Limit::UNLIMITED,
            min_th: 5.0,
            max_th: 15.0,
            thresholds_in_bytes: false,
            max_p: 0.1,
            w_q: 0.002,
            gentle: true,
            byte_mode: false,
            mean_pkt_bytes: 1000,
            wait: false,
        }
    }

    fn pkt() -> Packet {
        Packet::test(0, 1000)
    }

    fn held(n: u64) -> Backlog {
        Backlog { pkts: n, bytes: n * 1000 }
    }


    #[test]
    fn the_curve_knobs_are_typed_and_change_all_curves_or_none() {
        let mut p = RedProfile::new(params());
        assert_eq!(p.knob_value(KnobName::MaxTh(None)), Some(15.0));
        assert_eq!(p.knob_value(KnobName::MaxTh(Some(Color::Green))), Some(15.0), "a single curve is green's");
        assert_eq!(p.knob_value(KnobName::MaxTh(Some(Color::Yellow))), None);
        assert_eq!(p.knob_value(KnobName::Weight), None);
        assert_eq!(p.set_knob(Knob::MinTh(None, 8.0)), Ok(5.0), "the value replaced");
        let e = p.set_knob(Knob::MinTh(Some(Color::Green), 20.0)).unwrap_err();
        assert_eq!(e, KnobError::Invalid("max_th: must be greater than min_th (20), got 15".into()));
        assert_eq!(p.knob_value(KnobName::MinTh(None)), Some(8.0), "a refused value changes nothing");
        assert_eq!(p.set_knob(Knob::MaxP(Some(Color::Red), 0.5)), Err(KnobError::Unknown));
        assert_eq!(p.set_knob(Knob::Weight(2)), Err(KnobError::Unknown));
        // Two curves: without a colour both change, or neither if one refuses.
        let (mut g, mut y) = (params(), RedParams { max_th: 10.0, ..params() });
        let all = CurveKnob::of(KnobName::MinTh(None)).unwrap();
        assert!(set_curves(&mut [Some(&mut g), Some(&mut y), None], all, 12.0).is_err());
        assert_eq!((g.min_th, y.min_th), (5.0, 5.0));
        assert_eq!(set_curves(&mut [Some(&mut g), Some(&mut y), None], all, 7.0), Ok(5.0));
        assert_eq!((g.min_th, y.min_th), (7.0, 7.0));
        let yellow = CurveKnob::of(KnobName::MinTh(Some(Color::Yellow))).unwrap();
        assert_eq!(set_curves(&mut [Some(&mut g), Some(&mut y), None], yellow, 9.0), Ok(7.0));
        assert_eq!((g.min_th, y.min_th), (7.0, 9.0));
        assert_eq!(curves_value([Some(&g), Some(&y), None], yellow), Some(9.0));
    }
    #[test]
    fn probability_function_matches_the_formula() {
        let p = params();
        assert_eq!(p.base_probability(4.99), 0.0);
        assert!((p.base_probability(10.0) - 0.05).abs() < 1e-12);
        assert!((p.base_probability(15.0) - 0.1).abs() < 1e-12);
        // Gentle: halfway between max_th and 2 max_th -> max_p + (1 - max_p)/2.
        assert!((p.base_probability(22.5) - 0.55).abs() < 1e-12);
        assert_eq!(p.base_probability(30.0), 1.0);
        let harsh = RedParams { gentle: false, ..p };
        assert_eq!(harsh.base_probability(15.0), 1.0);
        assert_eq!(spread_probability(0.1, 0), 0.1);
        assert!((spread_probability(0.1, 5) - 0.2).abs() < 1e-12);
        assert_eq!(spread_probability(0.1, 10), 1.0);
    }

    /// ns-2's `wait_` (`modify_p`): at p_b 0.05 no drop before the 20th
    /// packet after the previous one, a certain one by the 39th: gaps
    /// uniform on 20..=39 (mean 29.5), where the paper's rule spreads them
    /// on 1..=19 (mean 10; `count` counts the packet being decided).
    #[test]
    fn wait_spaces_drops_between_one_and_two_over_p_b() {
        for wait in [true, false] {
            let p = RedParams { wait, ..params() };
            assert!((p.base_probability(10.0) - 0.05).abs() < 1e-12);
            let mut rng = Rng::stream(5, "red-wait");
            let (mut count, mut since, mut gaps) = (-1i64, 0u64, Vec::new());
            for _ in 0..200_000 {
                since += 1;
                if red_drop(&p, 10.0, &mut count, 1000, held(10), &mut rng) {
                    gaps.push(since);
                    since = 0;
                }
            }
            let gaps = &gaps[1..];
            let (min, max) = (*gaps.iter().min().unwrap(), *gaps.iter().max().unwrap());
            let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
            let (want_min, want_max, want_mean) = if wait { (20, 39, 29.5) } else { (1, 19, 10.0) };
            assert_eq!((min, max), (want_min, want_max), "wait {wait}");
            assert!((mean - want_mean).abs() < 0.3, "wait {wait}: mean gap {mean}");
        }
        assert_eq!(wait_probability(0.05, 19), 0.0);
        assert!((wait_probability(0.05, 30) - 0.1).abs() < 1e-12, "0.05 / (2 - 1.5)");
        assert_eq!(wait_probability(0.05, 40), 1.0);
    }

    #[test]
    fn parameters_are_validated() {
        assert!(RedParams { min_th: 20.0, ..params() }.check().is_err());
        assert!(RedParams { max_p: 0.0, ..params() }.check().is_err());
        assert!(RedParams { w_q: 1.5, ..params() }.check().is_err());
    }

    #[test]
    fn long_run_drop_fraction_follows_the_function() {
        for &level in &[7usize, 10, 13, 18] {
            let p = params();
            let mut red = queue(p.clone());
            let mut rng = Rng::stream(3, "red-test");
            let (mut drops, mut offered) = (0u64, 0u64);
            // Hold the instantaneous queue at `level` so that avg converges to it:
            // every arrival is followed by one departure.
            let mut ctx = QueueCtx::new(SimTime::ZERO, DataRate::gbps(1), &mut rng);
            for i in 0..400_000u64 {
                ctx.now = SimTime(i * 1000);
                let measuring = i >= 20_000;
                while red.backlog().pkts < level as u64 {
                    // Fill without a decision (the average stays put).
                    red.push_unchecked(pkt(), ctx.now);
                }
                match red.enqueue(pkt(), &mut ctx) {
                    Ok(()) => {
                        red.dequeue(&mut ctx);
                    }
                    Err(_) => drops += measuring as u64,
                }
                offered += measuring as u64;
            }
            let measured = drops as f64 / offered as f64;
            let expected = spread_fraction(&p, level as f64);
            assert!((measured - expected).abs() / expected < 0.05, "level {level}: measured {measured}, expected {expected}");
        }
    }

    #[test]
    fn idle_time_decays_the_average() {
        let mut red = RedProfile::new(params());
        red.avg.avg = 10.0;
        let mut rng = Rng::stream(1, "x");
        // 1000 B at 1 Gbps = 8 us; 8 ms idle = 1000 small-packet times.
        let mut ctx = QueueCtx::new(SimTime(8_000_000), DataRate::gbps(1), &mut rng);
        red.early_drop(&pkt(), held(0), Limit::UNLIMITED, &mut ctx);
        let expected = 10.0 * (1.0f64 - 0.002).powf(1000.0);
        assert!((red.avg() - expected).abs() < 1e-9, "{} vs {}", red.avg(), expected);
    }

    /// Issue 9, defect 0: with the average far above `max_th`, an arrival
    /// at an empty queue is still admitted, and arrivals at a queue that
    /// stays empty keep decaying the average from the previous one.
    #[test]
    fn an_empty_queue_admits_and_keeps_decaying() {
        let mut red = RedProfile::new(RedParams { gentle: false, ..params() });
        let mut rng = Rng::stream(1, "x");
        red.avg.avg = 100.0;
        for k in 1..=3u64 {
            // 1000 B at 1 Gbps = 8 us; each 8 ms of idleness is 1000 slots.
            let mut ctx = QueueCtx::new(SimTime(k * 8_000_000), DataRate::gbps(1), &mut rng);
            assert!(!red.early_drop(&pkt(), held(0), Limit::UNLIMITED, &mut ctx));
            let want = 100.0 * (1.0f64 - 0.002).powf(1000.0 * k as f64);
            assert!((red.avg() - want).abs() < 1e-9 * want, "arrival {k}: {} vs {want}", red.avg());
        }
        red.avg.avg = 100.0;
        let mut q = Fifo::with_profile(Limit::UNLIMITED, Box::new(red));
        let mut ctx = QueueCtx::new(SimTime(30_000_000), DataRate::gbps(1), &mut rng);
        assert!(q.enqueue(pkt(), &mut ctx).is_ok(), "empty queue: admitted");
        assert!(q.enqueue(pkt(), &mut ctx).is_ok(), "one packet held: admitted");
        assert_eq!(q.enqueue(pkt(), &mut ctx).unwrap_err().1, DropReason::Aqm, "two held: forced drop");
    }
}
