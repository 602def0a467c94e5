//! One RED curve per colour on one shared average of the whole queue: GRED
//! in its WRED mode and Cisco's WRED.
//!
//! What it models: [`ColorRed::gred`] is Linux `sch_gred` in its WRED mode
//! (`grio` with equal priorities: the virtual queues share the qdisc's
//! backlog and average, `gred_backlog` and `gred_load_wred_set` in
//! `net/sched/sch_gred.c`; each keeps its own RED parameters and drop
//! count); the colour is the drop precedence (virtual queue) green 0,
//! yellow 1, red 2. [`ColorRed::cisco`] is Cisco's WRED (Cisco IOS
//! "Weighted Random Early Detection", the first document's reference 13):
//! `min_th`, `max_th` in packets and `max_p` (1 / mark probability
//! denominator) per colour, average `avg <- avg (1 - 2^-n) + q 2^-n` with
//! exponential weighting constant `n` (default 9), every packet dropped at
//! or above `max_th`. The fifth source document's settings come from
//! [`CiscoThresholds::from_rtt`]: `max_th = r RTT / (MTU 8)` packets (its
//! equation 2), `min_th = 0.15 max_th`, `max_p = 0.2` (Section 5.1); its
//! case B1 is green (22, 149, 0.2) and yellow (22, 149, 0.4).
//!
//! Each curve computes Floyd & Jacobson's `p_b` and spreads drops exactly
//! as RED does ([`super::red`], one `count` per colour), on the average of
//! [`super::ewma`] (updated on every arrival, of any colour).
//!
//! Parameters: [`ColorRed::gred`]: three optional [`RedParams`], sharing
//! `thresholds_in_bytes`, `w_q` and `mean_pkt_bytes` (one average; their
//! `limit` is unused); [`CiscoWredParams`]: per colour an optional
//! [`CiscoThresholds`] (`min_th`, `max_th` packets, `max_p`), `exp_weight`
//! (n, default 9), `mean_pkt_bytes` (default 1000, as RED's). A colour
//! without a curve is never early-dropped.
//!
//! Tests (below): the measured drop fraction per colour against the gap
//! distribution of RED's count spreading, with the fifth document's
//! settings; GRED's shared average; colour-blind RED against RIO in
//! `rio.rs`.

use crate::knob::{Knob, KnobError, KnobName, KnobResult};
use super::ewma::{Ewma, FillUnit};
use super::red::{curves_value, red_drop, set_curves, unit_of, CurveKnob, RedParams};
use crate::error::{ConfigError, Outer};
use crate::packet::Packet;
use crate::qos::fifo::Limit;
use crate::qos::{Backlog, DropProfile, QueueCtx};
use crate::time::{Duration, SimTime};
use crate::units::DataRate;

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

/// The colours' keys of a per-colour configuration, in colour order
/// (green 0, yellow 1, red 2).
pub const COLOR_KEYS: [&str; 3] = ["green", "yellow", "red"];

impl ColorRed {
    /// Linux `sch_gred` in WRED mode: RED parameters per colour (drop
    /// precedence), one average of the whole queue. The colours given must
    /// agree on `thresholds_in_bytes`, `w_q` and `mean_pkt_bytes`; their
    /// `limit` is unused.
    ///
    /// A problem is located at the colour's parameter (`yellow.max_th`).
    pub fn gred(curves: [Option<RedParams>; 3]) -> Result<ColorRed, ConfigError> {
        let mut first: Option<&RedParams> = None;
        for (i, p) in curves.iter().enumerate() {
            let Some(p) = p else { continue };
            p.check().outer(COLOR_KEYS[i])?;
            if let Some(f) = first {
                if f.thresholds_in_bytes != p.thresholds_in_bytes || f.w_q != p.w_q || f.mean_pkt_bytes != p.mean_pkt_bytes {
                    return Err(ConfigError::at(COLOR_KEYS[i], format!(
                        "the colours share one average, so thresholds_in_bytes, w_q and mean_pkt_bytes must agree; this colour has ({}, {}, {}), an earlier one ({}, {}, {})",
                        p.thresholds_in_bytes, p.w_q, p.mean_pkt_bytes, f.thresholds_in_bytes, f.w_q, f.mean_pkt_bytes
                    )));
                }
            } else {
                first = Some(p);
            }
        }
        let f = first.ok_or_else(|| ConfigError::new("at least one colour needs RED parameters"))?;
        Ok(ColorRed { unit: unit_of(f), avg: Ewma::new(f.w_q, f.mean_pkt_bytes), curves, count: [-1; 3] })
    }

    /// Cisco WRED: thresholds in packets, `w_q = 2^-n`, no gentle region.
    /// A problem is located at its parameter (`per_color.red.max_p`).
    pub fn cisco(p: &CiscoWredParams) -> Result<ColorRed, ConfigError> {
        if p.exp_weight > 30 {
            return Err(ConfigError::at("exp_weight", format!("must be at most 30, got {}", p.exp_weight)));
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
                    wait: false,
                });
            }
        }
        ColorRed::gred(curves).outer("per_color")
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
    fn on_enqueue(&mut self, _pkt: &Packet, _held: Backlog, _now: SimTime) {
        self.avg.busy();
    }
    fn on_dequeue(&mut self, _pkt: &Packet, held: Backlog, now: SimTime) {
        self.avg.on_departure(held, now);
    }
    fn knob_value(&self, n: KnobName) -> Option<f64> {
        let [g, y, r] = &self.curves;
        curves_value([g.as_ref(), y.as_ref(), r.as_ref()], CurveKnob::of(n)?)
    }
    fn set_knob(&mut self, k: Knob) -> KnobResult {
        let (k, v) = CurveKnob::of_knob(k).ok_or(KnobError::Unknown)?;
        let [g, y, r] = &mut self.curves;
        set_curves(&mut [g.as_mut(), y.as_mut(), r.as_mut()], k, v)
    }
    fn avg(&self) -> Option<f64> {
        Some(self.avg.avg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Color;
    use crate::qos::aqm::testutil::*;
    use crate::rng::Rng;
    use Color::Green as G;

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
        assert_eq!(ColorRed::cisco(&bad).unwrap_err().path(), "per_color.green.max_th");
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
            let mut ctx = QueueCtx::new(SimTime(i), DataRate::gbps(1), &mut rng);
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
        assert!(e.msg.contains("share one average") && e.path() == "yellow", "{e}");
        assert!(ColorRed::gred([None, None, None]).is_err());
    }

}
