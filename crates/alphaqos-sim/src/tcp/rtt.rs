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
}

/// Clock granularity G of RFC 6298: a nanosecond clock.
const G_NS: u64 = 1;

impl RttEstimator {
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration, style: RtoStyle) -> Self {
        RttEstimator { srtt: None, rttvar: 0, min_rtt: None, rto: initial_rto.0, min_rto: min_rto.0, max_rto: max_rto.0, style, backoff: 0, samples: 0, sum_ns: 0 }
    }
    pub fn sample(&mut self, r: Duration) {
        let r = r.0;
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
    pub fn backoff(&mut self) {
        self.backoff = (self.backoff + 1).min(30);
    }
    pub fn rto(&self) -> Duration {
        Duration(self.rto.saturating_mul(1u64 << self.backoff).min(self.max_rto))
    }
    /// The smallest sample so far.
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
