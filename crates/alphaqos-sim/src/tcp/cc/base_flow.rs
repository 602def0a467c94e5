//! The base-flow window control of the deadline-driven transfer over
//! DiffServ AF networks (source document 003, slides "deadline-driven file
//! transfer over DiffServ AF networks": "Method for window size control for
//! base flow" and "Increment algorithm for the base flow").
//!
//! The base flow is the TCP connection that carries a reserved rate, the
//! committed target rate CTR; its window is held where it sends at CTR for
//! the current round-trip time, so that its throughput neither falls short
//! of the reservation nor exceeds it (which would mark packets out of
//! profile and overflow router queues).
//!
//! What it models:
//!
//! - The window that sends at CTR: `cwnd_max = CTR x RTT` (bytes =
//!   bit/s x s / 8), at least 2 SMSS. RTT is, by `rtt_filter`, the latest
//!   sample (`"latest"`, the default: the slides react to every change) or
//!   the smallest of the last `rtt_samples` samples (`"min"`: steadier
//!   against ACK-timing noise, slower to see a rise), or the smallest sample
//!   since the connection began (`"base"`: the path's propagation round
//!   trip, so a window fixed at CTR x base RTT whatever the queues do: the
//!   slides' "fixed max cwnd" method, which the binary increase is compared
//!   with). Samples come from every ACK of new data, also during loss
//!   recovery.
//! - cwnd above cwnd_max (the RTT fell, so cwnd_max fell): cwnd drops to
//!   cwnd_max at once (slides: "decreases the cwnd immediately").
//! - cwnd below cwnd_max (the RTT rose, so cwnd_max rose): binary search
//!   increase, as in TCP BIC (slides: "increment algorithm for the base
//!   flow"): each round trip, `cwnd += clamp((cwnd_max - cwnd) / 2,
//!   min_increment, max_increment)`, spread over the round's ACKs (a round
//!   ends when snd_una passes the snd_max noted at its start; the step is
//!   fixed at the round's start), and cwnd jumps to cwnd_max once
//!   `cwnd_max - cwnd < alpha` ("if diff(cwnd_{n-1}, cwnd_max) < alpha then
//!   cwnd_n = cwnd_max"). The slides chose binary increase because linear
//!   increase followed RTT changes too slowly and a fast one lost many
//!   packets.
//!
//!   The brief this was written from says "if the RTT rises cwnd drops, if it
//!   falls cwnd grows"; with `cwnd_max = CTR x RTT` a rising RTT raises
//!   cwnd_max, so the directions are the other way round. The rule in terms
//!   of cwnd_max (drop at once when above, binary increase when below) is the
//!   one implemented.
//! - Slow start (byte counted, L = 2 SMSS) until cwnd first reaches
//!   cwnd_max, which then becomes ssthresh; the binary increase applies from
//!   then on. Before the first RTT sample: slow start, as NewReno.
//! - Loss (not specified by the slides; decided here): the flow holds a
//!   reservation, so a loss does not take it below the rate it is entitled
//!   to: `ssthresh = max(min(cwnd, cwnd_max), 2 SMSS)` (no halving; a window
//!   above cwnd_max comes down to it). The sender's recovery then deflates
//!   cwnd to at most ssthresh. A timeout restarts from 1 SMSS and slow
//!   starts back to that ssthresh. Without an RTT sample yet, NewReno's
//!   `max(FlightSize / 2, 2 SMSS)`.
//!
//! Parameters (`cc_params`):
//! - `ctr_bps` (required): the committed target rate, bit/s, > 0.
//! - `rtt_filter` (`"latest"`): `"latest"`, `"min"` or `"base"`.
//! - `rtt_samples` (8): N for `"min"`, 1..=65536 samples.
//! - `min_increment_segments` (1), `max_increment_segments` (64): the bounds
//!   of the per-RTT step, segments, 1 <= min <= max.
//! - `alpha_segments` (2): the snap distance, segments (0: never snap).
//!
//! Tests (below): slow start stops at CTR x RTT; the base filter holds the
//! window when the RTT rises; a rise of the RTT is
//! followed by halving steps (capped by max_increment) up to the new
//! CTR x RTT; a fall drops cwnd at once; the min filter ignores a single
//! high sample; losses keep the reserved window; pathological inputs.

use crate::units::DataRate;
use std::collections::VecDeque;

use serde::Deserialize;

use super::common::{check_at_least, slow_start};
use super::{Ack, CcState, Controller};
use crate::error::ConfigError;
use crate::time::{Duration, SimTime};

const MAX_RTT_SAMPLES: u64 = 65536;
const BITS_PER_BYTE_NS: u128 = 8 * 1_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RttFilter {
    /// The latest RTT sample.
    Latest,
    /// The smallest of the last `rtt_samples` samples.
    Min,
    /// The smallest sample since the connection began: a constant window
    /// (the slides' "fixed max cwnd").
    Base,
}

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub ctr_bps: u64,
    #[serde(default = "default_filter")]
    pub rtt_filter: RttFilter,
    #[serde(default = "default_rtt_samples")]
    pub rtt_samples: u64,
    #[serde(default = "default_min_increment")]
    pub min_increment_segments: u64,
    #[serde(default = "default_max_increment")]
    pub max_increment_segments: u64,
    #[serde(default = "default_alpha")]
    pub alpha_segments: u64,
}

fn default_filter() -> RttFilter {
    RttFilter::Latest
}
fn default_rtt_samples() -> u64 {
    8
}
fn default_min_increment() -> u64 {
    1
}
fn default_max_increment() -> u64 {
    64
}
fn default_alpha() -> u64 {
    2
}

impl Params {
    pub fn with_ctr(ctr_bps: u64) -> Self {
        Params {
            ctr_bps,
            rtt_filter: default_filter(),
            rtt_samples: default_rtt_samples(),
            min_increment_segments: default_min_increment(),
            max_increment_segments: default_max_increment(),
            alpha_segments: default_alpha(),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        check_at_least("base_flow", "ctr_bps", self.ctr_bps, 1)?;
        check_at_least("base_flow", "rtt_samples", self.rtt_samples, 1)?;
        if self.rtt_samples > MAX_RTT_SAMPLES {
            return Err(ConfigError::at("rtt_samples", format!("must be at most {MAX_RTT_SAMPLES} for base_flow, got {}", self.rtt_samples)));
        }
        check_at_least("base_flow", "min_increment_segments", self.min_increment_segments, 1)?;
        if self.max_increment_segments < self.min_increment_segments {
            return Err(ConfigError::at(
                "max_increment_segments",
                format!("must be at least min_increment_segments ({}) for base_flow, got {}", self.min_increment_segments, self.max_increment_segments),
            ));
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct BaseFlow {
    ctr_bps: u64,
    filter: RttFilter,
    /// Recent RTT samples, newest last (one for `Latest`).
    samples: VecDeque<Duration>,
    keep: usize,
    /// Step bounds and snap distance, bytes.
    min_inc: u64,
    max_inc: u64,
    alpha: u64,
    /// The current round: ends when snd_una passes `round_end`; its step
    /// (bytes), the window at its start and the remainder of the spread.
    round_end: Option<u64>,
    step: u64,
    round_cwnd: u64,
    rem: u128,
}

impl BaseFlow {
    pub fn new(p: &Params, mss: u64) -> Self {
        let keep = match p.rtt_filter {
            RttFilter::Latest | RttFilter::Base => 1,
            RttFilter::Min => p.rtt_samples as usize,
        };
        BaseFlow {
            ctr_bps: p.ctr_bps,
            filter: p.rtt_filter,
            samples: VecDeque::with_capacity(keep),
            keep,
            min_inc: p.min_increment_segments.saturating_mul(mss),
            max_inc: p.max_increment_segments.saturating_mul(mss),
            alpha: p.alpha_segments.saturating_mul(mss),
            round_end: None,
            step: 0,
            round_cwnd: 0,
            rem: 0,
        }
    }

    /// The filtered RTT.
    fn rtt(&self) -> Option<Duration> {
        match self.filter {
            RttFilter::Latest | RttFilter::Base => self.samples.back().copied(),
            RttFilter::Min => self.samples.iter().min().copied(),
        }
    }

    /// cwnd_max = CTR x RTT (slides, "method for window size control for
    /// base flow"), bytes, at least 2 SMSS; None before any RTT sample.
    pub fn cwnd_max(&self, mss: u64) -> Option<u64> {
        let rtt = self.rtt()?;
        let bytes = self.ctr_bps as u128 * rtt.as_nanos() as u128 / BITS_PER_BYTE_NS;
        Some((bytes.min(u64::MAX as u128) as u64).max(2 * mss))
    }

    /// Binary search increase (slides, "increment algorithm for the base
    /// flow"), one step per round trip spread over its ACKs.
    fn binary_increase(&mut self, s: &mut CcState, ack: &Ack, max: u64) {
        if self.round_end.is_none_or(|end| ack.snd_una > end) {
            // cwnd_{n} = cwnd_{n-1} + clamp((cwnd_max - cwnd_{n-1}) / 2, min, max).
            self.round_end = Some(ack.snd_max);
            self.step = ((max - s.cwnd) / 2).clamp(self.min_inc, self.max_inc.max(self.min_inc));
            self.round_cwnd = s.cwnd.max(1);
            self.rem = 0;
        }
        let num = (ack.acked as u128).saturating_mul(self.step as u128).saturating_add(self.rem);
        let grow = num / self.round_cwnd as u128;
        self.rem = num % self.round_cwnd as u128;
        s.cwnd = s.cwnd.saturating_add(grow.min(u64::MAX as u128) as u64).min(max);
    }
}

impl Controller for BaseFlow {
    fn name(&self) -> &'static str {
        "base_flow"
    }

    /// `ctr_bps`: the new CTR applies from the next ACK (cwnd_max = CTR x
    /// RTT; a window above it falls back at once, one below grows towards it).
    fn target_rate(&self) -> Option<DataRate> {
        Some(DataRate(self.ctr_bps))
    }

    fn set_target_rate(&mut self, rate: DataRate) {
        debug_assert!(rate.as_bps() >= 1, "the registry refuses a target rate below 1 bit/s");
        self.ctr_bps = rate.as_bps();
        self.round_end = None;
    }

    fn on_measure(&mut self, _s: &CcState, ack: &Ack) {
        if let Some(rtt) = ack.rtt {
            if self.filter == RttFilter::Base {
                // Keep only the smallest sample ever seen.
                if self.samples.back().is_some_and(|&b| b <= rtt) {
                    return;
                }
            }
            if self.samples.len() == self.keep {
                self.samples.pop_front();
            }
            self.samples.push_back(rtt);
        }
    }

    fn on_ack(&mut self, s: &mut CcState, ack: &Ack) {
        let Some(max) = self.cwnd_max(s.mss) else {
            if ack.cwnd_limited && s.cwnd < s.ssthresh {
                slow_start(s, ack.acked);
            }
            return;
        };
        if s.cwnd > max {
            // The RTT fell: back to the CTR window at once.
            s.cwnd = max;
            s.ssthresh = s.ssthresh.min(max);
            self.round_end = None;
            return;
        }
        if !ack.cwnd_limited {
            return;
        }
        if s.cwnd < s.ssthresh {
            slow_start(s, ack.acked);
            if s.cwnd >= max {
                // cwnd_max reached: slow start is over.
                s.cwnd = max;
                s.ssthresh = max;
                self.round_end = None;
            }
            return;
        }
        if s.cwnd < max {
            self.binary_increase(s, ack, max);
        }
        // Close enough: snap to cwnd_max.
        if max - s.cwnd < self.alpha {
            s.cwnd = max;
        }
    }

    fn ssthresh_after_loss(&mut self, s: &CcState, _now: SimTime, flight: u64) -> u64 {
        self.round_end = None;
        match self.cwnd_max(s.mss) {
            // A reserved flow keeps its committed window.
            Some(max) => s.cwnd.min(max).max(2 * s.mss),
            None => (flight / 2).max(2 * s.mss),
        }
    }

    fn on_recovery_exit(&mut self, s: &mut CcState, _now: SimTime) {
        self.round_end = None;
        if let Some(max) = self.cwnd_max(s.mss) {
            s.cwnd = s.cwnd.min(max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{torture, Clock};
    use super::*;

    const MSS: u64 = 1000;
    /// 500 Mbit/s, the base flow of the slides' first experiment.
    const CTR: u64 = 500_000_000;

    fn base_flow(p: Params) -> BaseFlow {
        p.validate().unwrap();
        BaseFlow::new(&p, MSS)
    }

    /// CTR x RTT in bytes.
    fn window(rtt_ms: u64) -> u64 {
        CTR / 8 * rtt_ms / 1000
    }

    #[test]
    fn slow_start_stops_at_ctr_times_rtt() {
        let mut cc = base_flow(Params::with_ctr(CTR));
        let mut s = CcState { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        let mut clock = Clock::new(Duration::from_millis(20));
        for _ in 0..12 {
            clock.round(&mut cc, &mut s);
        }
        // 500 Mbit/s x 20 ms = 1.25 MB.
        assert_eq!(window(20), 1_250_000);
        assert_eq!((s.cwnd, s.ssthresh), (window(20), window(20)));
        for _ in 0..5 {
            clock.round(&mut cc, &mut s);
        }
        assert_eq!(s.cwnd, window(20), "held");
    }

    fn converged(cc: &mut BaseFlow, rtt_ms: u64) -> (CcState, Clock) {
        let mut s = CcState { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        let mut clock = Clock::new(Duration::from_millis(rtt_ms));
        for _ in 0..12 {
            clock.round(cc, &mut s);
        }
        assert_eq!(s.cwnd, window(rtt_ms));
        (s, clock)
    }

    #[test]
    fn binary_increase_when_cwnd_max_rises() {
        // max_increment large: pure halving. 20 -> 40 ms: gap 1250 segments.
        let mut cc = base_flow(Params { max_increment_segments: 100_000, ..Params::with_ctr(CTR) });
        let (mut s, mut clock) = converged(&mut cc, 20);
        clock.rtt = Duration::from_millis(40);
        let target = window(40);
        let mut rounds = 0;
        while s.cwnd < target {
            let gap = (target - s.cwnd) / MSS;
            clock.round(&mut cc, &mut s);
            let left = (target - s.cwnd) / MSS;
            // The gap halves each RTT (within a segment), or closes.
            assert!(left == 0 || left.abs_diff(gap / 2) <= 1, "gap {gap} -> {left}");
            rounds += 1;
        }
        // 1250 -> 625 -> ... -> < 2 segments: about log2(1250) = 10 rounds.
        assert!((9..=12).contains(&rounds), "{rounds} rounds");
        assert_eq!(s.cwnd, target);

        // Default max_increment = 64 segments: linear first.
        let mut cc = base_flow(Params::with_ctr(CTR));
        let (mut s, mut clock) = converged(&mut cc, 20);
        clock.rtt = Duration::from_millis(40);
        let before = s.cwnd;
        clock.round(&mut cc, &mut s);
        assert!(((s.cwnd - before) / MSS).abs_diff(64) <= 1, "+{}", (s.cwnd - before) / MSS);
        for _ in 0..40 {
            clock.round(&mut cc, &mut s);
        }
        assert_eq!(s.cwnd, target, "converges to CTR x RTT");
    }

    #[test]
    fn drops_at_once_when_cwnd_max_falls() {
        let mut cc = base_flow(Params::with_ctr(CTR));
        let (mut s, mut clock) = converged(&mut cc, 40);
        clock.rtt = Duration::from_millis(10);
        let a = clock.ack(&s, MSS);
        cc.on_measure(&s, &a);
        cc.on_ack(&mut s, &a);
        assert_eq!(s.cwnd, window(10), "one ACK");
        assert!(s.ssthresh <= s.cwnd);
    }

    #[test]
    fn min_filter_ignores_a_single_high_sample() {
        let mut cc = base_flow(Params { rtt_filter: RttFilter::Min, rtt_samples: 4, ..Params::with_ctr(CTR) });
        let (mut s, mut clock) = converged(&mut cc, 20);
        let mut one = |cc: &mut BaseFlow, s: &mut CcState, rtt_ms: u64| {
            clock.rtt = Duration::from_millis(rtt_ms);
            let a = clock.ack(s, MSS);
            cc.on_measure(s, &a);
            cc.on_ack(s, &a);
        };
        one(&mut cc, &mut s, 40);
        assert_eq!(cc.cwnd_max(MSS), Some(window(20)));
        for _ in 0..3 {
            one(&mut cc, &mut s, 40);
        }
        assert_eq!(cc.cwnd_max(MSS), Some(window(40)), "four samples of 40 ms");
        one(&mut cc, &mut s, 10);
        assert_eq!(s.cwnd, window(10), "a lower sample is the minimum at once");
    }

    #[test]
    fn base_filter_holds_the_window_when_the_rtt_rises() {
        // Fixed max cwnd: CTR x the smallest RTT seen, whatever follows.
        let mut cc = base_flow(Params { rtt_filter: RttFilter::Base, ..Params::with_ctr(CTR) });
        let (mut s, mut clock) = converged(&mut cc, 20);
        clock.rtt = Duration::from_millis(25);
        for _ in 0..20 {
            clock.round(&mut cc, &mut s);
        }
        assert_eq!((cc.cwnd_max(MSS), s.cwnd), (Some(window(20)), window(20)), "no increase on a longer RTT");
        clock.rtt = Duration::from_millis(10);
        clock.round(&mut cc, &mut s);
        assert_eq!(s.cwnd, window(10), "a smaller RTT is the new base at once");
    }

    #[test]
    fn loss_keeps_the_reserved_window() {
        let mut cc = base_flow(Params::with_ctr(CTR));
        let fresh = CcState { cwnd: 100 * MSS, ssthresh: u64::MAX, mss: MSS };
        assert_eq!(cc.ssthresh_after_loss(&fresh, SimTime::ZERO, 100 * MSS), 50 * MSS, "no RTT yet: NewReno");
        let (mut s, _) = converged(&mut cc, 20);
        assert_eq!(cc.ssthresh_after_loss(&s, SimTime::ZERO, s.cwnd), window(20));
        s.cwnd = window(20) / 2;
        assert_eq!(cc.ssthresh_after_loss(&s, SimTime::ZERO, s.cwnd), window(20) / 2, "no halving below cwnd_max");
        s.cwnd = 2 * window(20);
        cc.on_recovery_exit(&mut s, SimTime::ZERO);
        assert_eq!(s.cwnd, window(20));
        let flight = s.cwnd;
        cc.on_timeout(&mut s, SimTime::ZERO, flight);
        assert_eq!((s.cwnd, s.ssthresh), (MSS, window(20)));
    }

    #[test]
    fn parameters_are_checked() {
        // The error as text: its path and message.
        let parse = |v: serde_json::Value| -> Result<Params, String> {
            let p: Params = super::super::parse_params("base_flow", &v).map_err(|e| e.to_string())?;
            p.validate().map(|_| p).map_err(|e| e.to_string())
        };
        let p = parse(serde_json::json!({"ctr_bps": 250_000_000u64, "rtt_filter": "min"})).unwrap();
        assert_eq!((p.rtt_filter, p.rtt_samples, p.max_increment_segments), (RttFilter::Min, 8, 64));
        assert!(parse(serde_json::json!({})).unwrap_err().contains("ctr_bps"));
        assert!(parse(serde_json::json!({"ctr_bps": 0})).unwrap_err().contains("ctr_bps"));
        assert!(parse(serde_json::json!({"ctr_bps": 1, "rtt_filter": "mean"})).unwrap_err().contains("latest"));
        assert!(parse(serde_json::json!({"ctr_bps": 1, "min_increment_segments": 8, "max_increment_segments": 4}))
            .unwrap_err()
            .contains("max_increment_segments"));
        assert!(parse(serde_json::json!({"ctr_bps": 1, "ctr": 2})).unwrap_err().contains("unknown field `ctr`"));
    }

    #[test]
    fn pathological_inputs() {
        torture(&mut base_flow(Params::with_ctr(CTR)));
        torture(&mut base_flow(Params::with_ctr(u64::MAX)));
        torture(&mut base_flow(Params {
            rtt_filter: RttFilter::Min,
            rtt_samples: 1,
            min_increment_segments: u64::MAX,
            max_increment_segments: u64::MAX,
            alpha_segments: u64::MAX,
            ..Params::with_ctr(1)
        }));
        // Zero RTT: the window floor is 2 SMSS.
        let mut cc = base_flow(Params::with_ctr(CTR));
        let mut s = CcState { cwnd: 100 * MSS, ssthresh: 0, mss: MSS };
        let a = Ack { rtt: Some(Duration::ZERO), ..Clock::new(Duration::ZERO).ack(&s, MSS) };
        cc.on_measure(&s, &a);
        cc.on_ack(&mut s, &a);
        assert_eq!(s.cwnd, 2 * MSS);
    }
}
