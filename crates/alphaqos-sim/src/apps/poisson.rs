//! Poisson packet arrivals (exponential gaps) with fixed or exponentially
//! distributed sizes: the M/M/1 and M/D/1 sources of queueing theory.

use crate::event::FlowTimer;
use crate::packet::Payload;
use crate::rng::Rng;
use crate::tcp::{LazyTimer, Wire};
use crate::time::Duration;

pub struct PoissonSource {
    mean_size: u32,
    /// Exponential sizes are cut here (the path MTU): no packet is larger.
    max_size: u32,
    exp_size: bool,
    /// Mean gap between packets, ns: mean size * 8 / rate.
    mean_gap_ns: f64,
    rng: Rng,
    seq: u64,
    active: bool,
    send: LazyTimer,
}

impl PoissonSource {
    pub fn new(rate_bps: u64, mean_size: u32, exp_size: bool, rng: Rng) -> Self {
        let mean_gap_ns = mean_size as f64 * 8.0 * 1e9 / rate_bps as f64;
        PoissonSource { mean_size, max_size: u32::MAX, exp_size, mean_gap_ns, rng, seq: 0, active: false, send: LazyTimer::default() }
    }

    /// Cut exponential sizes at `max` bytes (a truncated exponential: the
    /// mean falls by `mean e^(-max/mean)`, negligible when the mean is
    /// well below the MTU).
    pub fn max_size(mut self, max: u32) -> Self {
        self.max_size = max;
        self
    }

    fn next_gap(&mut self) -> Duration {
        Duration(self.rng.exponential(self.mean_gap_ns).round() as u64)
    }

    pub fn on_timer(&mut self, t: FlowTimer, w: &mut impl Wire) {
        match t {
            FlowTimer::Start => {
                self.active = true;
                let at = w.now() + self.next_gap();
                self.send.set(at, FlowTimer::Send, w);
            }
            FlowTimer::Send if self.active => {
                if !self.send.fire(FlowTimer::Send, w) {
                    return;
                }
                let size = if self.exp_size {
                    (self.rng.exponential(self.mean_size as f64).round() as u32).clamp(1, self.max_size)
                } else {
                    self.mean_size
                };
                w.send(Payload::Udp { seq: self.seq }, size);
                self.seq += 1;
                let at = w.now() + self.next_gap();
                self.send.set(at, FlowTimer::Send, w);
            }
            FlowTimer::Stop => {
                self.active = false;
                self.send.clear();
            }
            _ => {}
        }
    }
}

super::udp_app!(PoissonSource, "poisson");
