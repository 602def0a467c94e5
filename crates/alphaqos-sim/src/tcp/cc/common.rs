//! Pieces the Linux-style controllers share: slow start, the "one segment
//! every `cnt` segments acknowledged" additive increase, parameter checks
//! and a few integer helpers.
//!
//! Windows stay in bytes in [`CcState`]; the algorithms of the Linux modules
//! are written in segments (`snd_cwnd`), so each controller converts with
//! [`segments`] at the point of use and grows the window by whole SMSS.

use super::CcState;
use crate::error::ConfigError;

/// The window in whole segments (at least 1, so that divisions are safe).
pub fn segments(bytes: u64, mss: u64) -> u64 {
    (bytes / mss.max(1)).max(1)
}

/// Slow start as Linux's `tcp_slow_start`, with RFC 3465's limit L = 2 SMSS
/// per ACK that this engine's NewReno also applies: `cwnd += min(acked, 2
/// SMSS)`, never past ssthresh. Returns the bytes of this ACK left over once
/// cwnd reached ssthresh, for congestion avoidance to use (Linux passes the
/// remainder of `acked` on in the same way).
pub fn slow_start(s: &mut CcState, acked: u64) -> u64 {
    let inc = acked.min(2 * s.mss);
    let new = s.cwnd.saturating_add(inc).min(s.ssthresh.max(s.cwnd));
    let used = new - s.cwnd;
    s.cwnd = new;
    inc - used
}

/// Linux's `tcp_cong_avoid_ai(tp, w, acked)` in bytes: cwnd grows by one
/// SMSS for every `w` segments acknowledged (`snd_cwnd_cnt` is `acked`
/// here, counted in bytes).
#[derive(Debug, Default, Clone)]
pub struct AiCounter {
    acked: u64,
}

impl AiCounter {
    pub fn reset(&mut self) {
        self.acked = 0;
    }

    pub fn grow(&mut self, s: &mut CcState, w_segments: u64, acked: u64) {
        let per_step = w_segments.max(1).saturating_mul(s.mss.max(1));
        // Credit gathered while w was larger: apply it gently, one segment
        // (as Linux does when snd_cwnd_cnt >= w on entry).
        if self.acked >= per_step {
            self.acked = 0;
            s.cwnd = s.cwnd.saturating_add(s.mss);
        }
        self.acked = self.acked.saturating_add(acked);
        if self.acked >= per_step {
            let steps = self.acked / per_step;
            self.acked -= steps * per_step;
            s.cwnd = s.cwnd.saturating_add(steps.saturating_mul(s.mss));
        }
    }
}

/// The integer cube root, `floor(cbrt(x))`, by bisection: exact and the same
/// on every platform (`f64::cbrt` comes from the system's libm).
pub fn icbrt(x: u128) -> u64 {
    // cbrt(2^128) < 2^43.
    let (mut lo, mut hi) = (0u128, 1u128 << 43);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if mid.checked_pow(3).is_some_and(|c| c <= x) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo as u64
}

/// A fraction given as a float, stored as parts of `scale` (Linux keeps its
/// betas as parts of 1024): `round(x * scale)`.
pub fn fixed(x: f64, scale: u64) -> u64 {
    (x * scale as f64).round() as u64
}

/// Checks shared by the `validate` functions of the controllers' `Params`:
/// a problem of controller `name`'s parameter `param`, located at it.
pub fn check_fraction(name: &str, param: &str, x: f64) -> Result<(), ConfigError> {
    if x.is_finite() && x > 0.0 && x < 1.0 {
        Ok(())
    } else {
        Err(ConfigError::at(param, format!("must be between 0 and 1 (exclusive) for {name}, got {x}")))
    }
}

pub fn check_positive(name: &str, param: &str, x: f64) -> Result<(), ConfigError> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(ConfigError::at(param, format!("must be a positive number for {name}, got {x}")))
    }
}

pub fn check_at_least(name: &str, param: &str, x: u64, min: u64) -> Result<(), ConfigError> {
    if x >= min {
        Ok(())
    } else {
        Err(ConfigError::at(param, format!("must be at least {min} for {name}, got {x}")))
    }
}

#[cfg(test)]
pub mod testing {
    //! An ACK clock for the controllers' tests: a sender that always has
    //! data, a fixed RTT, and one ACK per `per_ack` segments spread evenly
    //! over the round trip.
    use super::super::{Ack, CcState, Controller, SockPacing};
    use crate::time::{Duration, SimTime};

    pub struct Clock {
        pub now: SimTime,
        pub rtt: Duration,
        pub per_ack: u64,
        pub snd_una: u64,
        /// The socket's pacing every ACK reports (None: not a Linux 6 host).
        pub pacing: Option<SockPacing>,
    }

    impl Clock {
        pub fn new(rtt: Duration) -> Self {
            Clock { now: SimTime(1_000_000_000), rtt, per_ack: 1, snd_una: 0, pacing: None }
        }

        pub fn ack(&self, s: &CcState, acked: u64) -> Ack {
            Ack {
                now: self.now,
                acked,
                rtt: Some(self.rtt),
                min_rtt: Some(self.rtt),
                in_flight: s.cwnd,
                snd_una: self.snd_una,
                snd_max: self.snd_una + s.cwnd,
                cwnd_limited: true,
                pacing: self.pacing,
            }
        }

        /// One round trip: the window's segments acknowledged, `per_ack` at
        /// a time, the ACKs spaced evenly over `rtt`.
        pub fn round(&mut self, cc: &mut dyn Controller, s: &mut CcState) {
            let acks = (s.cwnd / s.mss / self.per_ack).max(1);
            let gap = self.rtt.as_nanos() / acks;
            for _ in 0..acks {
                self.now += Duration(gap);
                let acked = self.per_ack * s.mss;
                self.snd_una += acked;
                let a = self.ack(s, acked);
                cc.on_measure(s, &a);
                cc.on_ack(s, &a);
            }
            self.now += Duration(self.rtt.as_nanos() - gap * acks);
        }

        /// Rounds until `until` (at least one).
        pub fn run_until(&mut self, cc: &mut dyn Controller, s: &mut CcState, until: SimTime) {
            loop {
                self.round(cc, s);
                if self.now >= until {
                    break;
                }
            }
        }
    }

    /// Pathological inputs must neither panic (the tests also run in debug
    /// builds, with overflow checks) nor leave an empty window: zero and
    /// huge RTTs, time running backwards or at its end, huge windows and
    /// ACKs, losses with nothing in flight.
    pub fn torture(cc: &mut dyn Controller) {
        let mss = 1448;
        let acks: [(u64, Option<u64>, u64); 7] = [
            (0, Some(0), mss),
            (1, None, 0),
            (u64::MAX, Some(u64::MAX), u64::MAX),
            (u64::MAX / 2, Some(1), 1),
            (5, Some(0), mss),
            (u64::MAX, Some(0), 2 * mss),
            (u64::MAX, Some(u64::MAX / 3), mss),
        ];
        for cwnd in [1, mss, 2 * mss, 1_000_000 * mss, u64::MAX / 2, u64::MAX] {
            for ssthresh in [0, mss, 40 * mss, u64::MAX] {
                let mut s = CcState { cwnd, ssthresh, mss };
                for round in 0..3u64 {
                    for &(now, rtt, acked) in &acks {
                        let a = Ack {
                            now: SimTime(now),
                            acked,
                            rtt: rtt.map(Duration),
                            min_rtt: rtt.map(Duration),
                            in_flight: s.cwnd,
                            snd_una: round.wrapping_mul(u64::MAX / 4),
                            snd_max: u64::MAX,
                            cwnd_limited: true,
                            // Each round a different view of the socket's pacing.
                            pacing: match round {
                                0 => None,
                                1 => Some(SockPacing { paced: true, rate: 1, gso_max: u64::MAX }),
                                _ => Some(SockPacing { paced: false, rate: u64::MAX, gso_max: 0 }),
                            },
                        };
                        cc.on_measure(&s, &a);
                        cc.on_ack(&mut s, &a);
                        assert!(s.cwnd > 0, "{}: empty window", cc.name());
                    }
                    let t = cc.ssthresh_after_loss(&s, SimTime(u64::MAX), u64::MAX);
                    assert!(t > 0, "{}: ssthresh 0", cc.name());
                    cc.ssthresh_after_loss(&s, SimTime::ZERO, 0);
                    cc.on_recovery_exit(&mut s, SimTime(u64::MAX));
                    cc.on_timeout(&mut s, SimTime(3), 0);
                    assert!(s.cwnd > 0, "{}: empty window", cc.name());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cube_root_is_exact() {
        assert_eq!(icbrt(0), 0);
        assert_eq!(icbrt(7), 1);
        assert_eq!(icbrt(8), 2);
        assert_eq!(icbrt(26), 2);
        assert_eq!(icbrt(27), 3);
        assert_eq!(icbrt(1_000_000_000_000), 10_000);
        assert_eq!(icbrt(999_999_999_999), 9_999);
        let top = icbrt(u128::MAX);
        assert!((top as u128).checked_pow(3).is_some());
        assert!((top as u128 + 1).checked_pow(3).is_none());
    }

    #[test]
    fn additive_increase_counts_segments() {
        let mut s = CcState { cwnd: 10_000, ssthresh: 0, mss: 1000 };
        let mut ai = AiCounter::default();
        for _ in 0..9 {
            ai.grow(&mut s, 10, 1000);
        }
        assert_eq!(s.cwnd, 10_000);
        ai.grow(&mut s, 10, 1000);
        assert_eq!(s.cwnd, 11_000);
        // A stretch ACK of 25 segments at w = 10: two steps, 5 left over.
        ai.grow(&mut s, 10, 25_000);
        assert_eq!(s.cwnd, 13_000);
    }

    #[test]
    fn every_name_builds_and_bad_params_name_the_controller() {
        use super::super::{build, NAMES};
        use serde_json::json;
        for &name in NAMES {
            let params = if name == "base_flow" { json!({"ctr_bps": 500_000_000u64}) } else { json!({}) };
            let cc = build(name, &params, 1448).unwrap_or_else(|e| panic!("{name}: {e}"));
            let want = if name == "reno" { "newreno" } else { name };
            assert_eq!(cc.name(), want);
            if name != "newreno" && name != "reno" {
                let err = build(name, &json!({"c_f": 1}), 1448).err().unwrap();
                assert!(err.loc.is_empty() && err.msg.contains(name) && err.msg.contains("c_f"), "{err}");
            }
        }
        let err = build("cubic", &json!({"beta": 1.5}), 1448).err().unwrap();
        assert!(err.path() == "beta" && err.msg.contains("cubic"), "{err}");
        let err = build("base_flow", &json!({}), 1448).err().unwrap();
        assert!(err.msg.contains("base_flow") && err.msg.contains("ctr_bps"), "{err}");
        let err = build("htcp", &json!({"use_rtt_scaling": 1}), 1448).err().unwrap();
        assert!(err.msg.contains("htcp") && err.msg.contains("boolean"), "{err}");
        assert!(build("vegas", &json!({}), 1448).err().unwrap().msg.contains("base_flow"));
    }

    #[test]
    fn slow_start_stops_at_ssthresh() {
        let mut s = CcState { cwnd: 10_000, ssthresh: 11_500, mss: 1000 };
        assert_eq!(slow_start(&mut s, 5000), 500, "2 SMSS at most, 1500 of them used");
        assert_eq!(s.cwnd, 11_500);
    }
}
