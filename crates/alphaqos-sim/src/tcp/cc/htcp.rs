//! H-TCP (Leith & Shorten, "H-TCP: TCP for high-speed and long-distance
//! networks", PFLDnet 2004), as Linux's `net/ipv4/tcp_htcp.c` behaves.
//!
//! What it models:
//!
//! - Congestion avoidance adds alpha segments per RTT (one SMSS per
//!   `cwnd / alpha` bytes acknowledged, at most one SMSS per ACK as in
//!   Linux), alpha a function of the time Δ since the last congestion event:
//!   `alpha(Δ) = 1` for `Δ <= Δ_L = 1 s`, else
//!   `alpha(Δ) = 1 + 10 (Δ - Δ_L) + ((Δ - Δ_L) / 2)^2` (Δ in seconds; the
//!   paper's eq. for the high-speed mode), then
//!   - with `use_rtt_scaling`, times `RTT_min / 100 ms`, the ratio clamped to
//!     [0.1, 2] and the scaled factor to at least 1 (Linux:
//!     `scale = 8 HZ / (10 minRTT)` clamped to [4, 80], factor >= 1);
//!   - times `2 (1 - beta)`, so that flows with different backoffs share
//!     fairly (the paper's Section 3.2; Linux `htcp_alpha_update`).
//!
//!   alpha is recomputed on every ACK (Linux on every increment); it is kept
//!   in fixed point (1/65536 segment) rather than Linux's whole-segment
//!   factor, so that alpha(2 s) = 11.25, not 11.
//! - Adaptive backoff at each congestion event (Linux `htcp_beta_update`):
//!   `beta = RTT_min / RTT_max` clamped to [0.5, 0.8], if the connection has
//!   already had one event in this mode and `RTT_min > 10 ms`; otherwise
//!   0.5. With `use_bandwidth_switch`, a change of the measured throughput
//!   by more than 20 % between events (`maxB` outside [0.8, 1.2] of the
//!   previous `maxB`) resets beta to 0.5 and restarts that count.
//!   `ssthresh = max(beta cwnd, 2 segments)`. After each event RTT_max fades
//!   towards RTT_min: `RTT_max = RTT_min + 0.95 (RTT_max - RTT_min)`.
//! - Measurements (Linux `measure_rtt`, `measure_achieved_throughput`):
//!   RTT_min over all samples; RTT_max only outside loss recovery and only
//!   by steps of at most 20 ms (larger jumps are ignored as outliers);
//!   throughput `B_i` = bytes acknowledged over at least one RTT_min once a
//!   window (less alpha) has been acknowledged, averaged
//!   `B = (3 B + B_i) / 4` except within 3 RTT_min of an event, `maxB` its
//!   largest value since.
//! - Slow start: [`common::slow_start`] (RFC 3465, L = 2), as Linux's
//!   `tcp_slow_start`.
//! - Δ counts from the start of the last congestion event (Linux sets
//!   `last_cong` when recovery begins); before any event, from the first
//!   ACK (Linux: from connection set-up).
//!
//! Simplified from Linux: no undo of spurious events; the increment's
//! remainder is kept (Linux zeroes `snd_cwnd_cnt`), so that growth over Δ
//! is the integral of alpha per RTT.
//!
//! Parameters (`cc_params`), defaults those of Linux:
//! - `use_rtt_scaling` (true): scale alpha with RTT_min / 100 ms.
//! - `use_bandwidth_switch` (true): fall back to beta = 0.5 when the
//!   throughput changed by more than 20 %.
//!
//! Tests (below): alpha(Δ) at 0.5, 1, 2 and 5 s with and without RTT scaling
//! and with beta's fairness factor; adaptive beta within [0.5, 0.8], the
//! 10 ms floor and the bandwidth switch; window growth over 5 s against the
//! integral of alpha per RTT at 100 ms and 50 ms RTTs; pathological inputs.

use serde::Deserialize;

use super::common::{segments, slow_start};
use super::{Ack, CcState, Controller};
use crate::error::ConfigError;
use crate::time::{Duration, SimTime};

/// Fixed point for alpha (segments per RTT) and beta: 1.0 = 2^16.
const ONE: u64 = 1 << 16;
/// beta's range (Linux BETA_MIN = 0.5, BETA_MAX = 102/128 ~ 0.8).
const BETA_MIN: u64 = ONE / 2;
const BETA_MAX: u64 = ONE * 4 / 5;
/// Δ_L: the low-speed mode lasts 1 s after a congestion event.
const DELTA_L: Duration = Duration::from_secs(1);
/// RTT scaling: alpha *= RTT_min / 100 ms, the ratio within [0.1, 2].
const RTT_REF: Duration = Duration::from_millis(100);
const RTT_SCALE_MIN: Duration = Duration::from_millis(10);
const RTT_SCALE_MAX: Duration = Duration::from_millis(200);
/// Adaptive backoff only for paths longer than 10 ms (Linux).
const ADAPTIVE_MIN_RTT: Duration = Duration::from_millis(10);
/// RTT_max grows by steps of at most 20 ms (Linux `measure_rtt`).
const MAX_RTT_STEP: Duration = Duration::from_millis(20);
/// Throughput samples within 3 RTT_min of an event restart the average.
const FRESH_ROUNDS: u64 = 3;
const NS_PER_S: u128 = 1_000_000_000;

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "yes")]
    pub use_rtt_scaling: bool,
    #[serde(default = "yes")]
    pub use_bandwidth_switch: bool,
}

fn yes() -> bool {
    true
}

impl Default for Params {
    fn default() -> Self {
        Params { use_rtt_scaling: true, use_bandwidth_switch: true }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }
}

/// alpha in segments per RTT (fixed point, [`ONE`] = 1) for a time `delta`
/// since the last congestion event, a backoff `beta` (fixed point) and the
/// path's minimum RTT (used with `rtt_scaling`).
pub fn alpha(delta: Duration, beta: u64, min_rtt: Option<Duration>, rtt_scaling: bool) -> u64 {
    let one = ONE as u128;
    let mut factor = one;
    if delta > DELTA_L {
        // 1 + 10 (Δ - Δ_L) + ((Δ - Δ_L) / 2)^2 (Leith & Shorten 2004), Δ in s.
        let d = (delta.as_nanos() - DELTA_L.as_nanos()) as u128;
        let linear = 10 * d * one / NS_PER_S;
        let half = d / 2;
        let quadratic = (half * half).saturating_mul(one) / (NS_PER_S * NS_PER_S);
        factor = factor.saturating_add(linear).saturating_add(quadratic);
    }
    if rtt_scaling {
        if let Some(rtt) = min_rtt.filter(|r| *r > Duration::ZERO) {
            // factor *= RTT_min / RTT_ref, ratio in [0.1, 2], result >= 1.
            let r = rtt.clamp(RTT_SCALE_MIN, RTT_SCALE_MAX).as_nanos() as u128;
            factor = (factor.saturating_mul(r) / RTT_REF.as_nanos() as u128).max(one);
        }
    }
    // alpha = 2 (1 - beta) factor (the paper's fairness scaling).
    let a = factor.saturating_mul(2 * (ONE - beta.min(ONE)) as u128) / one;
    match a.min(u64::MAX as u128) as u64 {
        0 => ONE,
        a => a,
    }
}

#[derive(Debug)]
pub struct Htcp {
    use_rtt_scaling: bool,
    use_bandwidth_switch: bool,
    /// Current alpha and beta, fixed point.
    alpha: u64,
    beta: u64,
    /// One event already seen in adaptive mode (Linux `modeswitch`).
    modeswitch: bool,
    min_rtt: Option<Duration>,
    max_rtt: Duration,
    /// Start of the last congestion event (or of the connection).
    last_cong: Option<SimTime>,
    /// Throughput: bytes acknowledged since `lasttime`, the average `bi`
    /// and its maximum since the last event, bytes/s.
    packetcount: u64,
    lasttime: Option<SimTime>,
    bi: u64,
    max_b: u64,
    old_max_b: u64,
    /// Congestion avoidance credit: acknowledged bytes x alpha.
    credit: u128,
    /// What the last event reset, for an undo (Linux `undo_last_cong`,
    /// `undo_maxRTT`, `undo_old_maxB`).
    undo: Option<(Option<SimTime>, Duration, u64)>,
}

impl Htcp {
    pub fn new(p: &Params) -> Self {
        Htcp {
            use_rtt_scaling: p.use_rtt_scaling,
            use_bandwidth_switch: p.use_bandwidth_switch,
            alpha: ONE,
            beta: BETA_MIN,
            modeswitch: false,
            min_rtt: None,
            max_rtt: Duration::ZERO,
            last_cong: None,
            packetcount: 0,
            lasttime: None,
            bi: 0,
            max_b: 0,
            old_max_b: 0,
            credit: 0,
            undo: None,
        }
    }

    fn cong_time(&self, now: SimTime) -> Duration {
        self.last_cong.map_or(Duration::ZERO, |t| now.since(t))
    }

    fn alpha_now(&self, now: SimTime) -> u64 {
        alpha(self.cong_time(now), self.beta, self.min_rtt, self.use_rtt_scaling)
    }

    /// Linux `measure_achieved_throughput` (outside loss recovery).
    fn measure_throughput(&mut self, s: &CcState, now: SimTime, acked: u64) {
        self.packetcount = self.packetcount.saturating_add(acked);
        let since = now.since(*self.lasttime.get_or_insert(now));
        let Some(min_rtt) = self.min_rtt.filter(|r| *r > Duration::ZERO) else { return };
        let alpha_segments = (self.alpha / ONE).max(1);
        let window = s.cwnd.saturating_sub(alpha_segments.saturating_mul(s.mss));
        if self.packetcount >= window && since >= min_rtt {
            let cur = (self.packetcount as u128 * NS_PER_S / since.as_nanos() as u128).min(u64::MAX as u128) as u64;
            if self.cong_time(now).as_nanos() / min_rtt.as_nanos() <= FRESH_ROUNDS {
                self.bi = cur;
                self.max_b = cur;
            } else {
                self.bi = ((3 * self.bi as u128 + cur as u128) / 4) as u64;
                self.max_b = self.max_b.max(self.bi);
            }
            self.packetcount = 0;
            self.lasttime = Some(now);
        }
    }

    /// Linux `htcp_beta_update`.
    fn beta_update(&mut self) {
        if self.use_bandwidth_switch {
            let (max_b, old) = (self.max_b as u128, self.old_max_b as u128);
            self.old_max_b = self.max_b;
            // Throughput changed by more than 20 %: back to beta = 0.5.
            if !(4 * old <= 5 * max_b && 5 * max_b <= 6 * old) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        match self.min_rtt {
            Some(min) if self.modeswitch && min > ADAPTIVE_MIN_RTT && self.max_rtt > Duration::ZERO => {
                // beta = RTT_min / RTT_max within [0.5, 0.8].
                let b = min.as_nanos() as u128 * ONE as u128 / self.max_rtt.as_nanos() as u128;
                self.beta = (b.min(ONE as u128) as u64).clamp(BETA_MIN, BETA_MAX);
            }
            _ => {
                self.beta = BETA_MIN;
                self.modeswitch = true;
            }
        }
    }
}

impl Controller for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    fn on_measure(&mut self, _s: &CcState, ack: &Ack) {
        self.last_cong.get_or_insert(ack.now);
        if let Some(rtt) = ack.rtt.filter(|r| *r > Duration::ZERO) {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
    }

    fn on_ack(&mut self, s: &mut CcState, ack: &Ack) {
        self.last_cong.get_or_insert(ack.now);
        // RTT_max outside recovery, in steps of at most 20 ms.
        if let (Some(rtt), Some(min)) = (ack.rtt, self.min_rtt) {
            self.max_rtt = self.max_rtt.max(min);
            if rtt > self.max_rtt && rtt <= self.max_rtt + MAX_RTT_STEP {
                self.max_rtt = rtt;
            }
        }
        if self.use_bandwidth_switch {
            self.measure_throughput(s, ack.now, ack.acked);
        }
        if !ack.cwnd_limited {
            return;
        }
        if s.cwnd < s.ssthresh {
            slow_start(s, ack.acked);
            return;
        }
        // cwnd += alpha / cwnd per segment: one SMSS per cwnd bytes of
        // credit (credit = bytes acknowledged x alpha), at most one per ACK.
        self.alpha = self.alpha_now(ack.now);
        let per_segment = s.cwnd.max(1) as u128 * ONE as u128;
        self.credit = self.credit.saturating_add((ack.acked as u128).saturating_mul(self.alpha as u128));
        if self.credit >= per_segment {
            self.credit -= per_segment;
            s.cwnd = s.cwnd.saturating_add(s.mss);
            self.credit = self.credit.min(s.cwnd as u128 * ONE as u128);
        }
    }

    fn ssthresh_after_loss(&mut self, s: &CcState, now: SimTime, _flight: u64) -> u64 {
        // Linux `htcp_param_update`, then `htcp_reset` (the event starts now).
        self.undo = Some((self.last_cong, self.max_rtt, self.old_max_b));
        self.beta_update();
        self.alpha = self.alpha_now(now);
        if let Some(min) = self.min_rtt {
            if self.max_rtt > min {
                let fade = (self.max_rtt.as_nanos() - min.as_nanos()) as u128 * 95 / 100;
                self.max_rtt = min + Duration(fade as u64);
            }
        }
        self.last_cong = Some(now);
        self.packetcount = 0;
        self.lasttime = Some(now);
        self.credit = 0;
        let w = (segments(s.cwnd, s.mss) as u128 * self.beta as u128 / ONE as u128) as u64;
        w.max(2).saturating_mul(s.mss)
    }

    /// Linux `htcp_cwnd_undo`: the event did not happen (the window itself
    /// comes back in the sender, `tcp_undo_cwr`).
    fn on_undo(&mut self, _now: SimTime) {
        if let Some((last_cong, max_rtt, old_max_b)) = self.undo.take() {
            self.last_cong = last_cong;
            self.max_rtt = max_rtt;
            self.old_max_b = old_max_b;
        }
    }

    fn on_recovery_exit(&mut self, _s: &mut CcState, now: SimTime) {
        // Linux restarts the throughput sample on every ACK in recovery.
        self.packetcount = 0;
        self.lasttime = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{torture, Clock};
    use super::*;

    const MSS: u64 = 1000;

    fn f(x: u64) -> f64 {
        x as f64 / ONE as f64
    }

    fn ms(x: u64) -> Option<Duration> {
        Some(Duration::from_millis(x))
    }

    #[test]
    fn alpha_follows_the_formula() {
        let formula = |d: f64| if d <= 1.0 { 1.0 } else { 1.0 + 10.0 * (d - 1.0) + ((d - 1.0) / 2.0).powi(2) };
        for (delta, want) in [(0.5, 1.0), (1.0, 1.0), (2.0, 11.25), (5.0, 45.0)] {
            assert_eq!(formula(delta), want);
            let d = Duration((delta * 1e9) as u64);
            // beta = 0.5: the fairness factor 2 (1 - beta) is 1.
            let got = f(alpha(d, BETA_MIN, ms(100), false));
            assert!((got - want).abs() < 1e-3, "alpha({delta}) = {got}, want {want}");
            // RTT_min = 100 ms: scaling by 1.
            assert!((f(alpha(d, BETA_MIN, ms(100), true)) - want).abs() < 1e-3);
            // 50 ms: halved, but never below 1.
            let half = f(alpha(d, BETA_MIN, ms(50), true));
            assert!((half - (want / 2.0).max(1.0)).abs() < 1e-3, "alpha({delta}) at 50 ms = {half}");
            // 1 ms and 1 s: the ratio is clamped to [0.1, 2].
            let short = f(alpha(d, BETA_MIN, ms(1), true));
            assert!((short - (want / 10.0).max(1.0)).abs() < 1e-3, "alpha({delta}) at 1 ms = {short}");
            let long = f(alpha(d, BETA_MIN, ms(1000), true));
            assert!((long - want * 2.0).abs() < 1e-3, "alpha({delta}) at 1 s = {long}");
            // beta = 0.8 (52428/65536): 2 (1 - 0.8) = 0.4.
            let b08 = f(alpha(d, BETA_MAX, ms(100), false));
            assert!((b08 - want * 0.4).abs() < 1e-4 * want, "alpha({delta}) with beta 0.8 = {b08}");
        }
    }

    /// Feed RTT samples (outside recovery), one ACK each.
    fn feed(cc: &mut Htcp, s: &mut CcState, clock: &mut Clock, rtts: &[u64]) {
        for &r in rtts {
            clock.rtt = Duration::from_millis(r);
            clock.now += Duration::from_millis(1);
            let a = Ack { cwnd_limited: false, ..clock.ack(s, MSS) };
            cc.on_measure(s, &a);
            cc.on_ack(s, &a);
        }
    }

    #[test]
    fn adaptive_beta_is_rtt_min_over_rtt_max() {
        for (min, max, want) in [(60, 100, 0.6), (40, 100, 0.5), (90, 100, 0.8), (70, 80, 0.8), (8, 16, 0.5)] {
            let mut cc = Htcp::new(&Params { use_bandwidth_switch: false, ..Params::default() });
            let mut s = CcState { cwnd: 1000 * MSS, ssthresh: 0, mss: MSS };
            let mut clock = Clock::new(Duration::from_millis(min));
            // RTT_max rises in steps of at most 20 ms.
            let mut rtts: Vec<u64> = (min..=max).step_by(10).collect();
            rtts.push(max);
            feed(&mut cc, &mut s, &mut clock, &rtts);
            assert_eq!(cc.max_rtt, Duration::from_millis(max));
            // The first event switches the mode on with beta = 0.5.
            assert_eq!(cc.ssthresh_after_loss(&s, clock.now, 0), 500 * MSS);
            feed(&mut cc, &mut s, &mut clock, &[max]);
            let got = (cc.ssthresh_after_loss(&s, clock.now, 0) / MSS) as f64;
            // Within a segment: beta is truncated to 1/65536 as Linux
            // truncates it to 1/128.
            assert!((got - 1000.0 * want).abs() <= 1.0, "RTT {min}..{max} ms: ssthresh {got}, beta {}", f(cc.beta));
        }
    }

    #[test]
    fn rtt_max_ignores_jumps() {
        let mut cc = Htcp::new(&Params::default());
        let mut s = CcState { cwnd: 100 * MSS, ssthresh: 0, mss: MSS };
        let mut clock = Clock::new(Duration::from_millis(50));
        feed(&mut cc, &mut s, &mut clock, &[50, 65, 200, 80]);
        assert_eq!(cc.max_rtt, Duration::from_millis(80), "200 ms is more than 20 ms above 65 ms");
        cc.ssthresh_after_loss(&s, clock.now, 0);
        // Fades: 50 + 0.95 x 30 = 78.5 ms.
        assert_eq!(cc.max_rtt, Duration::from_micros(78_500));
    }

    #[test]
    fn bandwidth_switch_resets_beta() {
        let mut cc = Htcp::new(&Params::default());
        cc.min_rtt = ms(50);
        cc.max_rtt = Duration::from_millis(100);
        cc.modeswitch = true;
        cc.old_max_b = 1_000_000;
        cc.max_b = 1_100_000; // +10 %: adaptive
        cc.beta_update();
        assert_eq!(cc.beta, BETA_MIN, "50/100 = 0.5");
        cc.min_rtt = ms(70);
        cc.max_b = 1_150_000; // +4.5 % on 1.1 MB/s
        cc.beta_update();
        assert!((f(cc.beta) - 0.7).abs() < 1e-4);
        cc.max_b = 1_500_000; // +30 %
        cc.beta_update();
        assert_eq!(cc.beta, BETA_MIN);
        assert!(!cc.modeswitch);
    }

    #[test]
    fn growth_is_the_integral_of_alpha() {
        // 5 s after an event: integral of alpha dt = 1 (low-speed second) +
        // [u + 5 u^2 + u^3 / 12] from 0 to 4 = 1 + 4 + 80 + 5.33 = 90.33
        // segment-seconds per RTT.
        let integral = 1.0 + 4.0 + 80.0 + 64.0 / 12.0;
        for (rtt_ms, scaling, want) in [
            (100, true, integral / 0.1),
            (100, false, integral / 0.1),
            // Scaled by 0.5 but twice the RTTs: about the same growth (the
            // low-speed second and the floor at 1 are not scaled).
            (50, true, 20.0 + (integral - 1.0) * 0.5 / 0.05),
            (50, false, integral / 0.05),
        ] {
            let mut cc = Htcp::new(&Params { use_rtt_scaling: scaling, ..Params::default() });
            let mut clock = Clock::new(Duration::from_millis(rtt_ms));
            let mut s = CcState { cwnd: 2000 * MSS, ssthresh: 0, mss: MSS };
            cc.ssthresh_after_loss(&s, clock.now, 0);
            s.cwnd = 1000 * MSS;
            s.ssthresh = s.cwnd;
            let start = clock.now;
            clock.run_until(&mut cc, &mut s, start + Duration::from_secs(5));
            let grown = (s.cwnd / MSS - 1000) as f64;
            assert!((grown - want).abs() / want < 0.03, "RTT {rtt_ms} ms, scaling {scaling}: grew {grown}, want {want:.0}");
        }
    }

    #[test]
    fn pathological_inputs() {
        torture(&mut Htcp::new(&Params::default()));
        torture(&mut Htcp::new(&Params { use_rtt_scaling: false, use_bandwidth_switch: false }));
        assert_eq!(alpha(Duration(u64::MAX), BETA_MIN, None, false), u64::MAX, "saturates");
        assert!(alpha(Duration(u64::MAX), BETA_MIN, Some(Duration(u64::MAX)), true) > ONE);
    }
}
