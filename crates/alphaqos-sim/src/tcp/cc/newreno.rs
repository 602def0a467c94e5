//! NewReno's window arithmetic (RFC 5681, Sections 3.1-3.2; the recovery
//! itself, RFC 6582, lives in the sender).
//!
//! - Slow start while `cwnd < ssthresh`: `cwnd += min(acked, L)` with
//!   appropriate byte counting, L = 2 SMSS (RFC 3465), so that delayed ACKs
//!   do not slow the start.
//! - Congestion avoidance: one SMSS per window of acknowledged bytes
//!   (RFC 5681's byte-counting variant of `cwnd += SMSS*SMSS/cwnd`).
//! - On loss: `ssthresh = max(FlightSize / 2, 2 SMSS)` (RFC 5681, eq. 4).

use super::{Ack, CcState, Controller};
use crate::time::SimTime;

#[derive(Debug, Default)]
pub struct NewReno {
    /// Bytes acknowledged since the window last grew in congestion avoidance.
    acked_in_ca: u64,
}

impl Controller for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }
    fn on_ack(&mut self, s: &mut CcState, ack: &Ack) {
        if !ack.cwnd_limited {
            return;
        }
        let acked = ack.acked;
        if s.cwnd < s.ssthresh {
            s.cwnd += acked.min(2 * s.mss);
            return;
        }
        self.acked_in_ca += acked;
        if self.acked_in_ca >= s.cwnd {
            self.acked_in_ca -= s.cwnd;
            s.cwnd += s.mss;
        }
    }
    fn ssthresh_after_loss(&mut self, s: &CcState, _now: SimTime, flight: u64) -> u64 {
        self.acked_in_ca = 0;
        (flight / 2).max(2 * s.mss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u64) -> Ack {
        Ack { now: SimTime::ZERO, acked, rtt: None, min_rtt: None, in_flight: 0, snd_una: 0, snd_max: 0, cwnd_limited: true, pacing: None }
    }

    #[test]
    fn slow_start_then_linear_growth() {
        let mut cc = NewReno::default();
        let mut s = CcState { cwnd: 10 * 1000, ssthresh: 20 * 1000, mss: 1000 };
        cc.on_ack(&mut s, &Ack { cwnd_limited: false, ..ack(5000) });
        assert_eq!(s.cwnd, 10_000, "no growth unless the window limits sending");
        cc.on_ack(&mut s, &ack(5000));
        assert_eq!(s.cwnd, 12_000, "ABC caps growth at 2 SMSS per ACK");
        s.cwnd = 20_000;
        // One window's worth of ACKs grows cwnd by exactly one SMSS.
        for _ in 0..19 {
            cc.on_ack(&mut s, &ack(1000));
        }
        assert_eq!(s.cwnd, 20_000);
        cc.on_ack(&mut s, &ack(1000));
        assert_eq!(s.cwnd, 21_000);
        assert_eq!(cc.ssthresh_after_loss(&s, SimTime::ZERO, 30_000), 15_000);
        assert_eq!(cc.ssthresh_after_loss(&s, SimTime::ZERO, 1_000), 2_000);
    }
}
