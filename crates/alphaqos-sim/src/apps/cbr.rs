//! Constant-bit-rate UDP with a rate schedule: a list of (time, rate) steps,
//! like the stepped UDP background of Yan et al. 2013 (Fig. 4). Within a
//! step, packet k leaves at `step_start + ceil(k * size * 8 / rate)`, so the
//! long-run rate is exact, with no drift from rounding.

use crate::event::FlowTimer;
use crate::packet::Payload;
use crate::tcp::{LazyTimer, Wire};
use crate::time::SimTime;
use crate::units::DataRate;

pub struct Cbr {
    size: u32,
    /// (start time, rate) steps, ascending.
    schedule: Vec<(SimTime, DataRate)>,
    step: usize,
    step_start: SimTime,
    sent_in_step: u64,
    seq: u64,
    active: bool,
    send: LazyTimer,
}

impl Cbr {
    pub fn new(size: u32, schedule: Vec<(SimTime, DataRate)>) -> Self {
        Cbr { size, schedule, step: 0, step_start: SimTime::ZERO, sent_in_step: 0, seq: 0, active: false, send: LazyTimer::default() }
    }

    fn rate(&self) -> DataRate {
        self.schedule.get(self.step).map_or(DataRate(0), |s| s.1)
    }

    /// Begin step `step` now: reset the phase, send at once if the rate is positive.
    fn enter_step(&mut self, w: &mut impl Wire) {
        self.step_start = w.now();
        self.sent_in_step = 0;
        self.send.clear();
        if self.rate().0 > 0 {
            self.send.set(w.now(), FlowTimer::Send, w);
        }
        if let Some(&(t, _)) = self.schedule.get(self.step + 1) {
            w.schedule(t, FlowTimer::Step);
        }
    }

    pub fn on_timer(&mut self, t: FlowTimer, w: &mut impl Wire) {
        match t {
            FlowTimer::Start => {
                self.active = true;
                // The step in force at the start time.
                self.step = self.schedule.iter().rposition(|s| s.0 <= w.now()).unwrap_or(0);
                if self.schedule.first().is_some_and(|s| s.0 > w.now()) {
                    // Nothing until the first step.
                    self.step = usize::MAX;
                    w.schedule(self.schedule[0].0, FlowTimer::Step);
                    return;
                }
                self.enter_step(w);
            }
            FlowTimer::Step if self.active => {
                self.step = if self.step == usize::MAX { 0 } else { self.step + 1 };
                self.enter_step(w);
            }
            FlowTimer::Send if self.active => {
                if !self.send.fire(FlowTimer::Send, w) {
                    return;
                }
                w.send(Payload::Udp { seq: self.seq }, self.size);
                self.seq += 1;
                self.sent_in_step += 1;
                let gap_bits = self.sent_in_step as u128 * self.size as u128 * 8 * 1_000_000_000;
                let offset = gap_bits.div_ceil(self.rate().0 as u128) as u64;
                self.send.set(SimTime(self.step_start.0 + offset), FlowTimer::Send, w);
            }
            FlowTimer::Stop => {
                self.active = false;
                self.send.clear();
            }
            _ => {}
        }
    }
}

super::udp_app!(Cbr, "udp");
