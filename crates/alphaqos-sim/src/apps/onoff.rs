//! UDP ON/OFF sources: constant bit rate while ON, silent while OFF, the
//! periods drawn independently (ns-2's `Application/Traffic/Exponential`
//! and `Application/Traffic/Pareto`).
//!
//! What it models:
//!
//! - **VoIP with silence suppression** (exponential periods): a talker
//!   alternates talk spurts and pauses. ITU-T Recommendation P.59,
//!   "Artificial conversational speech" (1993), Table 1, gives the mean talk
//!   spurt as 1.004 s and the mean pause as 1.587 s (an activity of 38.7 %);
//!   these are the defaults ([`P59_ON_NS`], [`P59_OFF_NS`]). The fifth source
//!   document's VoIP flows (Bouras & Sevasti, Table 1) send 188-byte packets
//!   at 80 kb/s while ON, so a flow averages 80 x 1.004 / 2.591 = 31.0 kb/s.
//! - **VBR** (Pareto periods, shape `a` > 1): ON/OFF periods of infinite
//!   variance for a = 1.5, whose superposition is self-similar (Willinger,
//!   Taqqu, Sherman & Wilson, "Self-similarity through high-variability",
//!   1997).
//!
//! Within an ON period packets leave every `size 8 / rate` on a grid whose
//! phase is drawn uniformly at the start of the period, so the expected
//! number of packets in a period of length T is exactly `T rate / (size 8)`
//! and the long-run rate is `rate E[on] / (E[on] + E[off])` with no
//! rounding bias. The source starts in ON with the stationary probability
//! `E[on] / (E[on] + E[off])`.
//!
//! Parameters: `rate_bps` (while ON), `size_bytes` (IP packet), `on_mean_ns`,
//! `off_mean_ns`, `pareto_shape` (absent: exponential periods).
//!
//! Tests: `tests/traffic_models.rs` (mean rate and packet sizes of P.59
//! VoIP within 3 % over a long run; the ON-period length distribution).

use crate::event::FlowTimer;
use crate::packet::Payload;
use crate::rng::Rng;
use crate::tcp::{LazyTimer, Wire};
use crate::time::SimTime;

/// ITU-T P.59 mean talk spurt, ns.
pub const P59_ON_NS: u64 = 1_004_000_000;
/// ITU-T P.59 mean pause, ns.
pub const P59_OFF_NS: u64 = 1_587_000_000;

/// How period lengths are drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Periods {
    Exponential,
    /// Pareto of this shape (> 1), the scale set by the mean.
    Pareto(f64),
}

impl Periods {
    /// A period of mean `mean` ns.
    pub fn draw(self, mean: f64, rng: &mut Rng) -> f64 {
        match self {
            Periods::Exponential => rng.exponential(mean),
            Periods::Pareto(a) => mean * (a - 1.0) / a * (1.0 - rng.uniform()).powf(-1.0 / a),
        }
    }
}

pub struct OnOffUdp {
    size: u32,
    /// Gap between packets while ON, ns.
    gap_ns: f64,
    on_mean: f64,
    off_mean: f64,
    periods: Periods,
    rng: Rng,
    seq: u64,
    active: bool,
    on: bool,
    /// The grid of the current ON period: packet k at `origin + k gap`.
    origin: f64,
    k: u64,
    period_end: SimTime,
    send: LazyTimer,
    switch: LazyTimer,
}

impl OnOffUdp {
    pub fn new(rate_bps: u64, size: u32, on_mean_ns: u64, off_mean_ns: u64, periods: Periods, rng: Rng) -> Self {
        OnOffUdp {
            size,
            gap_ns: size as f64 * 8.0 * 1e9 / rate_bps as f64,
            on_mean: on_mean_ns as f64,
            off_mean: off_mean_ns as f64,
            periods,
            rng,
            seq: 0,
            active: false,
            on: false,
            origin: 0.0,
            k: 0,
            period_end: SimTime::ZERO,
            send: LazyTimer::default(),
            switch: LazyTimer::default(),
        }
    }

    /// The long-run mean rate, bit/s.
    pub fn mean_rate_bps(rate_bps: u64, on_mean_ns: u64, off_mean_ns: u64) -> f64 {
        rate_bps as f64 * on_mean_ns as f64 / (on_mean_ns + off_mean_ns) as f64
    }

    fn begin(&mut self, on: bool, w: &mut impl Wire) {
        let now = w.now();
        self.on = on;
        let len = self.periods.draw(if on { self.on_mean } else { self.off_mean }, &mut self.rng);
        self.period_end = SimTime(now.as_nanos() + len.round() as u64);
        self.switch.set(self.period_end, FlowTimer::Step, w);
        self.send.clear();
        if on {
            self.origin = now.as_nanos() as f64 + self.rng.uniform() * self.gap_ns;
            self.k = 0;
            self.arm(w);
        }
    }

    /// Schedule packet `k` of the grid if it falls inside the ON period.
    fn arm(&mut self, w: &mut impl Wire) {
        let at = SimTime((self.origin + self.k as f64 * self.gap_ns).round() as u64);
        if at < self.period_end {
            self.send.set(at.max(w.now()), FlowTimer::Send, w);
        }
    }

    pub fn on_timer(&mut self, t: FlowTimer, w: &mut impl Wire) {
        match t {
            FlowTimer::Start => {
                self.active = true;
                let p_on = self.on_mean / (self.on_mean + self.off_mean);
                let on = self.rng.uniform() < p_on;
                self.begin(on, w);
            }
            FlowTimer::Step if self.active => {
                if self.switch.fire(FlowTimer::Step, w) {
                    let next = !self.on;
                    self.begin(next, w);
                }
            }
            FlowTimer::Send if self.active => {
                // Always through `fire`, so a stale event is consumed.
                if !self.send.fire(FlowTimer::Send, w) || !self.on {
                    return;
                }
                w.send(Payload::Udp { seq: self.seq }, self.size);
                self.seq += 1;
                self.k += 1;
                self.arm(w);
            }
            FlowTimer::Stop => {
                self.active = false;
                self.send.clear();
                self.switch.clear();
            }
            _ => {}
        }
    }
}

super::udp_app!(OnOffUdp, "onoff");
