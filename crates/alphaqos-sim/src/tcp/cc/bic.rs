//! BIC (Xu, Harfoush & Rhee, "Binary Increase Congestion Control (BIC) for
//! Fast Long-Distance Networks", INFOCOM 2004), as Linux's
//! `net/ipv4/tcp_bic.c` behaves.
//!
//! What it models, in segments (Linux's `bictcp_update`): cwnd grows by one
//! segment every `cnt` segments acknowledged, that is by `cwnd / cnt`
//! segments per RTT, with W_max the window of the last loss:
//!
//! - `cwnd <= low_window`: Reno, `cnt = cwnd` (one segment per RTT).
//! - Below W_max, binary search increase towards the midpoint, Linux's
//!   `(max + min) / B` with B = 4: `dist = (W_max - cwnd) / 4` segments per
//!   RTT, at most `max_increment` (S_max; additive increase when far away)
//!   and, once `dist <= 1` (S_min reached), `cwnd * smooth_part / 4` ACKs per
//!   segment, the slow approach to W_max.
//! - At or above W_max, max probing (the mirror image): `smooth_part / 4`
//!   slow growth within 4 segments of W_max, then `(cwnd - W_max) / 3`
//!   segments per RTT (`cnt = 3 cwnd / (cwnd - W_max)`), up to
//!   `max_increment` per RTT.
//! - Before the first loss (W_max = 0): at least 5 % per RTT (`cnt <= 20`).
//! - On loss: with fast convergence, a loss below the previous W_max sets
//!   `W_max = cwnd (1 + beta) / 2`, else `W_max = cwnd`;
//!   `ssthresh = max(beta cwnd, 2)`, or `max(cwnd / 2, 2)` while
//!   `cwnd <= low_window`. beta is kept as parts of 1024 (0.8 -> 819).
//! - Timeout: ssthresh as for a loss, cwnd = 1 SMSS, then W_max is
//!   forgotten (Linux's `bictcp_reset` on entering TCP_CA_Loss).
//! - Slow start: [`common::slow_start`] (RFC 3465, L = 2).
//!
//! Not as Linux: `tcp_bic.c` still divides cnt by its estimate of segments
//! per ACK (`delayed_ack`), a correction from when the increase counted ACKs;
//! since `tcp_cong_avoid_ai` counts acknowledged segments, Linux's BIC grows
//! about twice as fast under delayed ACKs (the distance halves per RTT, up
//! to 2 max_increment). Here growth counts acknowledged bytes and the
//! correction is left out (Linux removed the same correction from CUBIC in
//! 2015), so the increments per RTT are those listed above whatever the ACK
//! ratio. cnt is recomputed on every ACK (Linux at most every HZ/32).
//!
//! Parameters (`cc_params`), defaults those of Linux:
//! - `max_increment` (16): S_max, segments per RTT, >= 1.
//! - `low_window` (14): segments; at or below it BIC behaves as Reno.
//! - `beta` (0.8, stored as 819/1024): multiplicative decrease, 0 < beta < 1.
//! - `fast_convergence` (true).
//! - `smooth_part` (20): near W_max, one segment per `cwnd smooth_part / 4`
//!   acknowledged (about 5 RTTs per segment), >= 1.
//!
//! Tests (below): the binary search covers a quarter of the distance to
//! W_max per RTT, capped by max_increment; Reno below low_window; max
//! probing above W_max; the decrease and fast convergence; pathological
//! inputs.

use serde::Deserialize;

use super::common::{check_at_least, check_fraction, fixed, segments, slow_start, AiCounter};
use super::{Ack, CcState, Controller};
use crate::error::ConfigError;
use crate::time::SimTime;

/// beta as parts of 1024 (Linux BICTCP_BETA_SCALE).
const BETA_SCALE: u64 = 1024;
/// The binary search goes to (max + min) / B (Linux BICTCP_B).
const B: u64 = 4;
/// Before the first loss cwnd grows at least 5 % per RTT.
const MAX_CNT_NO_WMAX: u64 = 20;

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "default_max_increment")]
    pub max_increment: u64,
    #[serde(default = "default_low_window")]
    pub low_window: u64,
    #[serde(default = "default_beta")]
    pub beta: f64,
    #[serde(default = "yes")]
    pub fast_convergence: bool,
    #[serde(default = "default_smooth_part")]
    pub smooth_part: u64,
}

fn default_max_increment() -> u64 {
    16
}
fn default_low_window() -> u64 {
    14
}
fn default_beta() -> f64 {
    0.8
}
fn default_smooth_part() -> u64 {
    20
}
fn yes() -> bool {
    true
}

impl Default for Params {
    fn default() -> Self {
        Params {
            max_increment: default_max_increment(),
            low_window: default_low_window(),
            beta: default_beta(),
            fast_convergence: true,
            smooth_part: default_smooth_part(),
        }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_at_least("bic", "max_increment", self.max_increment, 1)?;
        check_at_least("bic", "smooth_part", self.smooth_part, 1)?;
        check_fraction("bic", "beta", self.beta)?;
        if fixed(self.beta, BETA_SCALE) == 0 || fixed(self.beta, BETA_SCALE) >= BETA_SCALE {
            return Err(ConfigError::at("beta", format!("must be between 1/1024 and 1023/1024 for bic, got {}", self.beta)));
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct Bic {
    max_increment: u64,
    low_window: u64,
    /// beta, parts of 1024.
    beta: u64,
    fast_convergence: bool,
    smooth_part: u64,
    ai: AiCounter,
    /// W_max, segments (Linux `last_max_cwnd`); 0 before the first loss.
    w_max: u64,
}

impl Bic {
    pub fn new(p: &Params) -> Self {
        Bic {
            max_increment: p.max_increment,
            low_window: p.low_window,
            beta: fixed(p.beta, BETA_SCALE),
            fast_convergence: p.fast_convergence,
            smooth_part: p.smooth_part,
            ai: AiCounter::default(),
            w_max: 0,
        }
    }

    /// Segments to acknowledge per one-segment increase (Linux `bictcp_update`).
    fn cnt(&self, cwnd: u64) -> u64 {
        if cwnd <= self.low_window {
            return cwnd.max(1);
        }
        let smooth = cwnd.saturating_mul(self.smooth_part) / B;
        let cnt = if cwnd < self.w_max {
            // Binary search increase: dist = (W_max - cwnd) / B per RTT.
            let dist = (self.w_max - cwnd) / B;
            if dist > self.max_increment {
                cwnd / self.max_increment // additive increase by S_max
            } else if dist <= 1 {
                smooth // S_min: creep up to W_max
            } else {
                cwnd / dist
            }
        } else if cwnd < self.w_max.saturating_add(B) {
            smooth // just above W_max: probe slowly
        } else if cwnd < self.w_max.saturating_add(self.max_increment.saturating_mul(B - 1)) {
            // Max probing: (cwnd - W_max) / (B - 1) segments per RTT.
            cwnd.saturating_mul(B - 1) / (cwnd - self.w_max)
        } else {
            cwnd / self.max_increment
        };
        let cnt = if self.w_max == 0 { cnt.min(MAX_CNT_NO_WMAX) } else { cnt };
        cnt.max(1)
    }
}

impl Controller for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    fn on_ack(&mut self, s: &mut CcState, ack: &Ack) {
        if !ack.cwnd_limited {
            return;
        }
        let mut acked = ack.acked;
        if s.cwnd < s.ssthresh {
            acked = slow_start(s, acked);
            if acked == 0 {
                return;
            }
        }
        let cnt = self.cnt(segments(s.cwnd, s.mss));
        self.ai.grow(s, cnt, acked);
    }

    fn ssthresh_after_loss(&mut self, s: &CcState, _now: SimTime, _flight: u64) -> u64 {
        self.ai.reset();
        let cwnd = segments(s.cwnd, s.mss);
        // Fast convergence: a loss below the last maximum lowers it further.
        self.w_max = if cwnd < self.w_max && self.fast_convergence {
            (cwnd as u128 * (BETA_SCALE + self.beta) as u128 / (2 * BETA_SCALE) as u128) as u64
        } else {
            cwnd
        };
        let w = if cwnd <= self.low_window {
            cwnd / 2
        } else {
            (cwnd as u128 * self.beta as u128 / BETA_SCALE as u128) as u64
        };
        w.max(2).saturating_mul(s.mss)
    }

    fn on_timeout(&mut self, s: &mut CcState, now: SimTime, flight: u64) {
        s.ssthresh = self.ssthresh_after_loss(s, now, flight);
        s.cwnd = s.mss;
        self.ai.reset();
        self.w_max = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{torture, Clock};
    use super::*;
    use crate::time::Duration;

    const MSS: u64 = 1000;

    fn bic(p: Params) -> Bic {
        p.validate().unwrap();
        Bic::new(&p)
    }

    fn after_loss(cc: &mut Bic, w_max: u64) -> CcState {
        let mut s = CcState { cwnd: w_max * MSS, ssthresh: 0, mss: MSS };
        s.ssthresh = cc.ssthresh_after_loss(&s, SimTime::ZERO, 0);
        s.cwnd = s.ssthresh;
        s
    }

    #[test]
    fn binary_search_towards_w_max() {
        let mut cc = bic(Params::default());
        let mut s = after_loss(&mut cc, 1000);
        assert_eq!(s.cwnd, 799 * MSS, "1000 x 819/1024");
        let mut clock = Clock::new(Duration::from_millis(50));
        let mut capped = 0;
        let mut searched = 0;
        loop {
            let gap = 1000 - s.cwnd / MSS;
            if gap <= 2 * B {
                break;
            }
            let before = s.cwnd / MSS;
            clock.round(&mut cc, &mut s);
            let grew = s.cwnd / MSS - before;
            // A quarter of the distance (B = 4), at most max_increment = 16.
            // dist is recomputed on every ACK, so the gap shrinks during the
            // round and the window covers 1 - e^(-1/4) = 22 % to 25 % of it.
            let want = (gap / B).min(16);
            let low = ((gap as f64 * 0.2) as u64).min(16);
            assert!(grew + 1 >= low && grew <= want + 1, "gap {gap}: grew {grew}, want {low}..={want}");
            if want == 16 {
                capped += 1;
            } else {
                searched += 1;
            }
        }
        assert!(capped >= 8 && searched >= 5, "{capped} capped rounds, {searched} binary-search rounds");
        // S_min: within 2B of W_max, about one segment per 5 RTTs.
        let before = s.cwnd;
        for _ in 0..10 {
            clock.round(&mut cc, &mut s);
        }
        assert!((s.cwnd - before) / MSS <= 3, "slow approach: +{}", (s.cwnd - before) / MSS);
    }

    #[test]
    fn max_increment_caps_the_search() {
        let mut cc = bic(Params { max_increment: 32, ..Params::default() });
        let mut s = after_loss(&mut cc, 1000);
        let before = s.cwnd;
        Clock::new(Duration::from_millis(50)).round(&mut cc, &mut s);
        assert!(((s.cwnd - before) / MSS).abs_diff(32) <= 1, "+{}", (s.cwnd - before) / MSS);
    }

    #[test]
    fn reno_below_low_window_and_probing_above_w_max() {
        let cc = bic(Params::default());
        assert_eq!(cc.cnt(10), 10, "Reno: one segment per RTT");
        let mut cc = bic(Params::default());
        cc.w_max = 100;
        assert_eq!(cc.cnt(102), 102 * 20 / 4, "just above W_max: slow");
        assert_eq!(cc.cnt(112), 112 * 3 / 12, "(cwnd - W_max) / 3 = 4 segments per RTT");
        assert_eq!(cc.cnt(200), 200 / 16, "then max_increment per RTT");
        cc.w_max = 0;
        assert_eq!(cc.cnt(1000), 20, "no W_max yet: 5 % per RTT");
    }

    #[test]
    fn decrease_and_fast_convergence() {
        let mut cc = bic(Params::default());
        let s = CcState { cwnd: 10 * MSS, ssthresh: 0, mss: MSS };
        assert_eq!(cc.ssthresh_after_loss(&s, SimTime::ZERO, 0), 5 * MSS, "halved at or below low_window");
        for (fc, want) in [(true, 809), (false, 900)] {
            let mut cc = bic(Params { fast_convergence: fc, ..Params::default() });
            let mut s = CcState { cwnd: 1000 * MSS, ssthresh: 0, mss: MSS };
            cc.ssthresh_after_loss(&s, SimTime::ZERO, 0);
            s.cwnd = 900 * MSS;
            assert_eq!(cc.ssthresh_after_loss(&s, SimTime::ZERO, 0), 719 * MSS, "900 x 819/1024");
            // 900 x (1024 + 819) / 2048 = 809.9.
            assert_eq!(cc.w_max, want, "fast_convergence = {fc}");
        }
        let mut s = CcState { cwnd: 1000 * MSS, ssthresh: 0, mss: MSS };
        cc.on_timeout(&mut s, SimTime::ZERO, 0);
        assert_eq!((s.cwnd, s.ssthresh, cc.w_max), (MSS, 799 * MSS, 0));
    }

    #[test]
    fn pathological_inputs() {
        torture(&mut bic(Params::default()));
        torture(&mut bic(Params { max_increment: u64::MAX, low_window: 0, smooth_part: u64::MAX, ..Params::default() }));
        torture(&mut bic(Params { max_increment: 1, low_window: u64::MAX, smooth_part: 1, ..Params::default() }));
        assert!(Params { max_increment: 0, ..Params::default() }.validate().is_err());
        assert!(Params { beta: 0.0, ..Params::default() }.validate().is_err());
    }
}
