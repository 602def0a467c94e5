//! Retransmission timer, RFC 6298 ("Computing TCP's Retransmission Timer"):
//! `SRTT <- 7/8 SRTT + 1/8 R`, `RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R|`,
//! doubled on every expiry (Section 5.5) until a new sample arrives. Two
//! ways to turn them into a timeout:
//!
//! - [`RtoStyle::Rfc6298`]: `RTO = max(min_rto, SRTT + max(G, 4 RTTVAR))`;
//!   the RFC's minimum is 1 s.
//! - [`RtoStyle::Linux`] (the default): `RTO = SRTT + max(4 RTTVAR, min_rto)`
//!   with min_rto = 200 ms (`tcp_rto_min`; Linux floors the variance term,
//!   `__tcp_set_rto` and `tcp_rtt_estimator`), so that a flow whose RTT
//!   grows with a filling queue does not time out spuriously.
//!
//! Integer nanoseconds throughout.
//!
//! ns-2's clock ([`RttEstimator::set_tick`], the `ns2` host profile;
//! `TcpAgent::rtt_update` and `rtt_timeout` in ns-2.35's `tcp/tcp.cc`): a
//! sample is rounded to whole ticks of `tcpTick_` (`int(tao / tcp_tick_ +
//! 0.5)`, at least 1); SRTT is kept as 8 x SRTT and RTTVAR as 4 x RTTVAR in
//! ticks (`T_SRTT_BITS 3`, `T_RTTVAR_BITS 2`), updated by integer shifts
//! (`t_srtt_ += m - (t_srtt_ >> 3)`, `t_rttvar_ += |m - (t_srtt_ >> 3)| -
//! (t_rttvar_ >> 2)`, each at least 1); the first sample sets SRTT = m,
//! RTTVAR = m / 2; `t_rtxcur_ = ((t_rttvar_ << 3) + t_srtt_) >> 3` ticks
//! (SRTT + 4 RTTVAR, floored, `rttvar_exp_ 2`), and the timeout is
//! max(`minrto_`, that) (`rfc2988_ true`), at least two ticks.

use crate::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoStyle {
    Linux,
    Rfc6298,
}

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<u64>,
    rttvar: u64,
    min_rtt: Option<u64>,
    rto: u64,
    min_rto: u64,
    max_rto: u64,
    style: RtoStyle,
    backoff: u32,
    /// Samples so far and their sum, ns.
    samples: u64,
    sum_ns: u64,
    /// ns-2's clock: tick (ns; 0: off), 8 x SRTT and 4 x RTTVAR in ticks.
    tick: u64,
    t_srtt: i64,
    t_rttvar: i64,
}

/// Clock granularity G of RFC 6298: a nanosecond clock.
const G_NS: u64 = 1;

impl RttEstimator {
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration, style: RtoStyle) -> Self {
        RttEstimator { srtt: None, rttvar: 0, min_rtt: None, rto: initial_rto.0, min_rto: min_rto.0, max_rto: max_rto.0, style, backoff: 0, samples: 0, sum_ns: 0, tick: 0, t_srtt: 0, t_rttvar: 0 }
    }
    /// Use ns-2's clock of `tick` ns (see the module doc; 0: off).
    pub fn set_tick(&mut self, tick: Duration) {
        self.tick = tick.0;
    }
    #[inline]
    pub fn sample(&mut self, r: Duration) {
        let r = r.0;
        if self.tick > 0 {
            return self.sample_ticks(r);
        }
        self.samples += 1;
        self.sum_ns = self.sum_ns.saturating_add(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = (3 * self.rttvar + s.abs_diff(r)) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
        let s = self.srtt.unwrap_or(r);
        self.rto = match self.style {
            RtoStyle::Rfc6298 => (s + G_NS.max(4 * self.rttvar)).max(self.min_rto),
            RtoStyle::Linux => s + (4 * self.rttvar).max(self.min_rto),
        }
        .min(self.max_rto);
        self.backoff = 0;
    }
    /// `TcpAgent::rtt_update` and `rtt_timeout` (ns-2.35 `tcp/tcp.cc`);
    /// out of line, so that the default path stays as small as before.
    #[cold]
    #[inline(never)]
    fn sample_ticks(&mut self, r: u64) {
        let tick = self.tick;
        self.samples += 1;
        self.sum_ns = self.sum_ns.saturating_add(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let m = ((r + tick / 2) / tick).max(1) as i64;
        if self.t_srtt != 0 {
            let mut delta = m - (self.t_srtt >> 3);
            self.t_srtt += delta;
            if self.t_srtt <= 0 {
                self.t_srtt = 1;
            }
            delta = delta.abs() - (self.t_rttvar >> 2);
            self.t_rttvar += delta;
            if self.t_rttvar <= 0 {
                self.t_rttvar = 1;
            }
        } else {
            self.t_srtt = m << 3;
            self.t_rttvar = m << 1;
        }
        self.srtt = Some((self.t_srtt as u64 * tick) >> 3);
        self.rttvar = (self.t_rttvar as u64 * tick) >> 2;
        let rtxcur = (((self.t_rttvar << 3) + self.t_srtt) >> 3) as u64 * tick;
        self.rto = rtxcur.max(self.min_rto).max(2 * tick).min(self.max_rto);
        self.backoff = 0;
    }
    /// Back to the unbacked-off timeout (ns-2's `t_backoff_ = 1`).
    pub fn clear_backoff(&mut self) {
        self.backoff = 0;
    }
    pub fn backoff(&mut self) {
        self.backoff = (self.backoff + 1).min(30);
    }
    pub fn rto(&self) -> Duration {
        Duration(self.rto.saturating_mul(1u64 << self.backoff).min(self.max_rto))
    }
    /// The smallest sample so far.
    /// The RTO's lower bound (`tcp_rto_min`).
    pub fn min_rto(&self) -> Duration {
        Duration(self.min_rto)
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.map(Duration)
    }
    /// Samples so far and their sum, ns.
    pub fn totals(&self) -> (u64, u64) {
        (self.samples, self.sum_ns)
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc6298() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000), RtoStyle::Rfc6298);
        assert_eq!(e.rto(), ms(1000));
        e.sample(ms(100)); // SRTT 100, RTTVAR 50, RTO = 100 + 200 = 300
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rto(), ms(300));
        e.sample(ms(200)); // RTTVAR = 3/4 50 + 1/4 100 = 62.5; SRTT = 112.5; RTO = 362.5
        assert_eq!(e.srtt(), Some(Duration(112_500_000)));
        assert_eq!(e.rto(), Duration(362_500_000));
        e.backoff();
        e.backoff();
        assert_eq!(e.rto(), Duration(1_450_000_000));
        e.sample(ms(112)); // a new sample clears the back-off
        assert!(e.rto() < ms(400));
        let mut tiny = RttEstimator::new(ms(1000), ms(200), ms(60_000), RtoStyle::Rfc6298);
        tiny.sample(Duration::from_micros(100));
        assert_eq!(tiny.rto(), ms(200), "clamped to the minimum");
    }

    /// ns-2's `rtt_update` by hand: tick 10 ms, samples 94 ms and 152 ms.
    #[test]
    fn ns2_ticks() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::new(ms(3000), ms(200), ms(60_000), RtoStyle::Rfc6298);
        e.set_tick(ms(10));
        assert_eq!(e.rto(), ms(3000), "rtxcur_init_");
        // m = int(9.4 + 0.5) = 9 ticks: t_srtt 72, t_rttvar 18 (RTTVAR 4.5 ticks);
        // rtxcur = (144 + 72) >> 3 = 27 ticks = 270 ms.
        e.sample(ms(94));
        assert_eq!((e.t_srtt, e.t_rttvar), (72, 18));
        assert_eq!(e.srtt(), Some(ms(90)));
        assert_eq!(e.rto(), ms(270));
        // m = int(15.2 + 0.5) = 15: delta 6, t_srtt 78; |6| - (18 >> 2) = 2, t_rttvar 20;
        // rtxcur = (160 + 78) >> 3 = 29 ticks (floored from 29.75).
        e.sample(ms(152));
        assert_eq!((e.t_srtt, e.t_rttvar), (78, 20));
        assert_eq!(e.rto(), ms(290));
        // A 1 ms sample is one tick (at least 1); the variance decays, minrto_ holds.
        for _ in 0..40 {
            e.sample(ms(1));
        }
        assert_eq!(e.t_srtt >> 3, 1);
        assert_eq!(e.rto(), ms(200));
    }

    #[test]
    fn linux_floors_the_variance_term() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000), RtoStyle::Linux);
        e.sample(ms(300));
        // SRTT 300, 4 RTTVAR = 600 > 200: RTO 900, as in the RFC.
        assert_eq!(e.rto(), ms(900));
        for _ in 0..50 {
            e.sample(ms(300));
        }
        // The variance has decayed: RTT + 200 ms, where the RFC would give ~300 ms.
        assert_eq!(e.rto(), ms(500));
        let mut tiny = RttEstimator::new(ms(1000), ms(200), ms(60_000), RtoStyle::Linux);
        tiny.sample(Duration::from_micros(100));
        assert_eq!(tiny.rto(), Duration(200_100_000));
    }
}
