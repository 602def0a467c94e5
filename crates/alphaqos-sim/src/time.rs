//! Simulated time: integer nanoseconds, never floats inside the engine.
//!
//! `SimTime` is an instant since the start of the run, `Duration` a span.
//! Both print readably (`1.5ms`, `53s`), in the manner of smoltcp's `Instant`.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant of simulated time, in nanoseconds since the run began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time elapsed since `earlier`, saturating at zero.
    pub fn since(self, earlier: SimTime) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}

impl Add<Duration> for SimTime {
    type Output = SimTime;
    fn add(self, d: Duration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for SimTime {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<SimTime> for SimTime {
    type Output = Duration;
    /// Panics in debug builds if `rhs` is later: use `since` when unsure.
    fn sub(self, rhs: SimTime) -> Duration {
        Duration(self.0 - rhs.0)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

fn fmt_ns(ns: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // Pick the largest unit that keeps the value >= 1, print without trailing zeros.
    let (div, unit) = match ns {
        0 => return write!(f, "0s"),
        n if n >= 1_000_000_000 => (1_000_000_000u64, "s"),
        n if n >= 1_000_000 => (1_000_000, "ms"),
        n if n >= 1_000 => (1_000, "us"),
        _ => (1, "ns"),
    };
    let whole = ns / div;
    let frac = ns % div;
    if frac == 0 {
        return write!(f, "{whole}{unit}");
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    write!(f, "{whole}.{}{unit}", digits.trim_end_matches('0'))
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(self.0, f)
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_readable() {
        assert_eq!(SimTime(5_674_000_000).to_string(), "5.674s");
        assert_eq!(Duration::from_micros(50).to_string(), "50us");
        assert_eq!(Duration(1_500_000).to_string(), "1.5ms");
        assert_eq!(Duration(0).to_string(), "0s");
        assert_eq!(Duration(7).to_string(), "7ns");
    }

    #[test]
    fn arithmetic_saturates_at_the_edges() {
        assert_eq!(SimTime(u64::MAX) + Duration(1), SimTime(u64::MAX));
        assert_eq!(SimTime(3).since(SimTime(5)), Duration(0));
    }
}
