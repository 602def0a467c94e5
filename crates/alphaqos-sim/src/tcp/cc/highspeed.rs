//! HighSpeed TCP (Floyd, RFC 3649, "HighSpeed TCP for Large Congestion
//! Windows"): an AIMD whose increase a(w) and decrease b(w) depend on the
//! window w (segments), computed from the RFC's equations (not from Linux
//! `tcp_highspeed.c`'s table), so that the three parameters can change.
//!
//! What it models:
//!
//! - At or below Low_Window: Standard TCP, `a = 1`, `b = 0.5`.
//! - Above it, with `x = (ln w - ln Low_Window) / (ln High_Window -
//!   ln Low_Window)` (w's position between the two windows on a log scale):
//!   - `b(w) = (High_Decrease - 0.5) x + 0.5` (RFC 3649, Section 5);
//!   - `p(w)`, the loss rate at which the HighSpeed response function
//!     `w = Low_Window (p / Low_P)^S` (Section 5, eq. 1; with the defaults
//!     `w = 0.12 / p^0.835`) gives w: `ln p(w) = ln Low_P + x (ln High_P -
//!     ln Low_P)`, with High_P = 10^-7 and `Low_P = 1.5 / Low_Window^2`,
//!     Standard TCP's loss rate at Low_Window (`w = sqrt(1.5 / p)`, the
//!     RFC's `1.2 / sqrt(p)`), which makes a(Low_Window) exactly 1;
//!   - `a(w) = w^2 p(w) 2 b(w) / (2 - b(w))` (Appendix B), at least 1.
//!
//!   The RFC's table (Appendix B, and Linux's copy of it) was computed with
//!   the rounded `p = 0.078 / w^1.2`; the exact equations give a(w) 3-5 %
//!   larger (a(83000) = 72.5 against the table's 71 at w = 84035); b(w)
//!   agrees to 0.01.
//! - Above High_Window, a and b stay at their High_Window values, as
//!   Linux's table ends there (b would otherwise fall below High_Decrease).
//! - Congestion avoidance: `cwnd += a(w) / w` segments per segment
//!   acknowledged (byte counted); on loss `ssthresh = max((1 - b(w)) w, 2)`.
//!   a and b are recomputed when w (whole segments) changes; they are held
//!   in fixed point (1/65536) so the floating-point logs run once per change.
//! - Slow start: [`common::slow_start`] (RFC 3465, L = 2); the RFC leaves
//!   slow start alone (Limited Slow-Start, RFC 3742, is not modelled).
//!
//! Parameters (`cc_params`), defaults those of RFC 3649:
//! - `low_window` (38): segments, 1 <= low_window <= 3872 (above that
//!   Standard TCP's loss rate at Low_Window would be below High_P).
//! - `high_window` (83000): segments, > low_window.
//! - `high_decrease` (0.1): b(High_Window), 0 < high_decrease <= 0.5.
//!
//! Tests (below): a(w) and b(w) at 38, 1000 and 83000 and against the RFC's
//! table; the increase per RTT and the decrease; pathological inputs.

use serde::Deserialize;

use super::common::{check_at_least, segments, slow_start};
use super::{Ack, CcState, Controller};
use crate::error::ConfigError;
use crate::time::SimTime;

/// High_P: the loss rate at High_Window (RFC 3649, Section 5).
const HIGH_P: f64 = 1e-7;
/// Fixed point for a(w) and b(w): 1.0 = 2^16.
const ONE: u64 = 1 << 16;
/// Largest Low_Window with 1.5 / Low_Window^2 > High_P.
const MAX_LOW_WINDOW: u64 = 3872;

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "default_low_window")]
    pub low_window: u64,
    #[serde(default = "default_high_window")]
    pub high_window: u64,
    #[serde(default = "default_high_decrease")]
    pub high_decrease: f64,
}

fn default_low_window() -> u64 {
    38
}
fn default_high_window() -> u64 {
    83000
}
fn default_high_decrease() -> f64 {
    0.1
}

impl Default for Params {
    fn default() -> Self {
        Params { low_window: 38, high_window: 83000, high_decrease: 0.1 }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_at_least("highspeed", "low_window", self.low_window, 1)?;
        if self.low_window > MAX_LOW_WINDOW {
            return Err(ConfigError::at(
                "low_window",
                format!(
                    "must be at most {MAX_LOW_WINDOW} segments for highspeed \
                     (Standard TCP's loss rate there is High_P = 1e-7), got {}",
                    self.low_window
                ),
            ));
        }
        if self.high_window <= self.low_window {
            return Err(ConfigError::at(
                "high_window",
                format!("must be larger than low_window ({}) for highspeed, got {}", self.low_window, self.high_window),
            ));
        }
        let d = self.high_decrease;
        if !(d.is_finite() && d > 0.0 && d <= 0.5) {
            return Err(ConfigError::at("high_decrease", format!("must be in (0, 0.5] for highspeed, got {d}")));
        }
        Ok(())
    }

    /// (a(w), b(w)) per RFC 3649 for a window of `w` segments.
    pub fn aimd(&self, w: u64) -> (f64, f64) {
        if w <= self.low_window {
            return (1.0, 0.5);
        }
        let lw = (self.low_window as f64).ln();
        let w = w.min(self.high_window) as f64;
        // Position of w between Low_Window and High_Window, log scale.
        let x = (w.ln() - lw) / ((self.high_window as f64).ln() - lw);
        // b(w) = (High_Decrease - 0.5) x + 0.5 (Section 5).
        let b = (self.high_decrease - 0.5) * x + 0.5;
        // Standard TCP at Low_Window: w = sqrt(1.5 / p).
        let low_p = 1.5 / (self.low_window as f64).powi(2);
        // p(w) on the response function w = Low_Window (p / Low_P)^S (eq. 1).
        let p = (low_p.ln() + x * (HIGH_P.ln() - low_p.ln())).exp();
        // a(w) = w^2 p(w) 2 b(w) / (2 - b(w)) (Appendix B).
        let a = w * w * p * 2.0 * b / (2.0 - b);
        (a.max(1.0), b)
    }
}

#[derive(Debug)]
pub struct HighSpeed {
    p: Params,
    /// The window (segments) a and b were computed for, and their values.
    w: u64,
    a: u64,
    b: u64,
    /// Congestion avoidance credit: acknowledged bytes x a(w).
    credit: u128,
}

impl HighSpeed {
    pub fn new(p: &Params) -> Self {
        HighSpeed { p: p.clone(), w: 0, a: ONE, b: ONE / 2, credit: 0 }
    }

    fn update(&mut self, w: u64) {
        if w != self.w {
            let (a, b) = self.p.aimd(w);
            self.w = w;
            self.a = (a * ONE as f64).round() as u64;
            self.b = (b * ONE as f64).round() as u64;
        }
    }
}

impl Controller for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    fn on_ack(&mut self, s: &mut CcState, ack: &Ack) {
        if !ack.cwnd_limited {
            return;
        }
        if s.cwnd < s.ssthresh {
            slow_start(s, ack.acked);
            return;
        }
        // cwnd += a(w) / w per segment acknowledged: one SMSS per cwnd bytes
        // of credit (credit = bytes acknowledged x a(w)).
        self.update(segments(s.cwnd, s.mss));
        self.credit = self.credit.saturating_add((ack.acked as u128).saturating_mul(self.a as u128));
        let per_segment = s.cwnd.max(1) as u128 * ONE as u128;
        if self.credit >= per_segment {
            let n = self.credit / per_segment;
            self.credit -= n * per_segment;
            s.cwnd = s.cwnd.saturating_add((n.min(u64::MAX as u128) as u64).saturating_mul(s.mss));
        }
    }

    fn ssthresh_after_loss(&mut self, s: &CcState, _now: SimTime, _flight: u64) -> u64 {
        self.credit = 0;
        let w = segments(s.cwnd, s.mss);
        self.update(w);
        // cwnd = (1 - b(w)) w.
        let cut = (w as u128 * self.b as u128 / ONE as u128) as u64;
        (w - cut).max(2).saturating_mul(s.mss)
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{torture, Clock};
    use super::*;
    use crate::time::Duration;

    const MSS: u64 = 1000;

    #[test]
    fn a_and_b_per_rfc_3649() {
        let p = Params::default();
        assert_eq!(p.aimd(38), (1.0, 0.5));
        assert_eq!(p.aimd(10), (1.0, 0.5));
        let (a, b) = p.aimd(39);
        assert!((a - 1.0).abs() < 0.05 && (b - 0.5).abs() < 0.01, "continuous at Low_Window: {a} {b}");
        let (a, b) = p.aimd(1000);
        assert!((a - 8.03).abs() < 0.01 && (b - 0.330).abs() < 0.001, "a(1000) = {a}, b(1000) = {b}");
        let (a, b) = p.aimd(83000);
        assert!((a - 72.5).abs() < 0.1 && (b - 0.1).abs() < 1e-9, "a(83000) = {a}, b(83000) = {b}");
        assert_eq!(p.aimd(1_000_000), p.aimd(83000), "held above High_Window");
        // RFC 3649, Appendix B (w, a(w), b(w)): a within 5 %, b within 0.01.
        for (w, a_rfc, b_rfc) in [
            (118, 2.0, 0.44),
            (221, 3.0, 0.41),
            (1058, 8.0, 0.33),
            (10661, 30.0, 0.21),
            (84035, 71.0, 0.10),
        ] {
            let (a, b) = p.aimd(w);
            assert!((a - a_rfc).abs() / a_rfc < 0.05, "a({w}) = {a}, RFC {a_rfc}");
            assert!((b - b_rfc).abs() <= 0.01, "b({w}) = {b}, RFC {b_rfc}");
        }
    }

    #[test]
    fn increase_per_rtt_and_decrease() {
        let mut cc = HighSpeed::new(&Params::default());
        let mut s = CcState { cwnd: 10_000 * MSS, ssthresh: 0, mss: MSS };
        let (a, b) = Params::default().aimd(10_000);
        let mut clock = Clock::new(Duration::from_millis(100));
        clock.round(&mut cc, &mut s);
        let grew = (s.cwnd / MSS - 10_000) as f64;
        assert!((grew - a).abs() <= 1.0, "grew {grew} in one RTT, a(10000) = {a}");
        let mut s = CcState { cwnd: 10_000 * MSS, ssthresh: 0, mss: MSS };
        let ss = cc.ssthresh_after_loss(&s, SimTime::ZERO, 0) / MSS;
        assert!(ss.abs_diff((10_000.0 * (1.0 - b)) as u64) <= 1, "ssthresh {ss}, b(10000) = {b}");
        // Standard TCP below Low_Window.
        s.cwnd = 30 * MSS;
        assert_eq!(cc.ssthresh_after_loss(&s, SimTime::ZERO, 0), 15 * MSS);
        clock.round(&mut cc, &mut s);
        assert_eq!(s.cwnd, 31 * MSS);
    }

    #[test]
    fn parameters_are_checked() {
        assert!(Params { high_window: 38, ..Params::default() }.validate().is_err());
        assert!(Params { low_window: 0, ..Params::default() }.validate().is_err());
        assert!(Params { low_window: 5000, high_window: 10_000, ..Params::default() }.validate().is_err());
        assert!(Params { high_decrease: 0.6, ..Params::default() }.validate().is_err());
        assert!(Params { high_decrease: f64::NAN, ..Params::default() }.validate().is_err());
        let p = Params { low_window: 100, high_window: 10_000, high_decrease: 0.2 };
        p.validate().unwrap();
        let (a, b) = p.aimd(10_000);
        // a(High_Window) = High_Window^2 High_P 2 b / (2 - b) = 10 x 0.4 / 1.8.
        assert!((b - 0.2).abs() < 1e-9 && (a - 4.0 / 1.8).abs() < 1e-6, "{a} {b}");
    }

    #[test]
    fn pathological_inputs() {
        torture(&mut HighSpeed::new(&Params::default()));
        torture(&mut HighSpeed::new(&Params { low_window: 1, high_window: 2, high_decrease: 0.5 }));
        torture(&mut HighSpeed::new(&Params { low_window: 3872, high_window: u64::MAX, high_decrease: 1e-300 }));
    }
}
