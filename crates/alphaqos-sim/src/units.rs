//! Data rates and sizes. Rates are bits per second, sizes bytes; users write
//! strings ("10Gbps", "1500B") that the Python front parses once at the edge.

use crate::time::Duration;
use std::fmt;

/// A data rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct DataRate(pub u64);

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl DataRate {
    pub const fn bps(b: u64) -> Self {
        DataRate(b)
    }
    pub const fn gbps(g: u64) -> Self {
        DataRate(g * 1_000_000_000)
    }
    pub const fn mbps(m: u64) -> Self {
        DataRate(m * 1_000_000)
    }
    pub fn as_bps(self) -> u64 {
        self.0
    }
    /// Time to serialize `bytes` at this rate, rounded up to the next
    /// nanosecond (a transmitter cannot finish early). Exact: 128-bit integers.
    pub fn tx_time(self, bytes: u64) -> Duration {
        debug_assert!(self.0 > 0, "tx_time at a zero rate");
        let bits = bytes as u128 * 8 * 1_000_000_000;
        // Every packet's bits-times-10^9 fits 64 bits (up to 2.3 GB): the
        // same quotient by a 64-bit division, not the 128-bit library call
        // (0.8 % of the reference case's instructions).
        if let Ok(bits) = u64::try_from(bits) {
            return Duration(bits.div_ceil(self.0));
        }
        Duration(bits.div_ceil(self.0 as u128) as u64)
    }
    /// Bytes this rate carries in `d`, rounded down.
    pub fn bytes_in(self, d: Duration) -> u64 {
        (self.0 as u128 * d.0 as u128 / 8_000_000_000) as u64
    }
}

impl fmt::Display for DataRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        let (v, u) = if b >= 1e12 {
            (b / 1e12, "Tbps")
        } else if b >= 1e9 {
            (b / 1e9, "Gbps")
        } else if b >= 1e6 {
            (b / 1e6, "Mbps")
        } else if b >= 1e3 {
            (b / 1e3, "Kbps")
        } else {
            (b, "bps")
        };
        write!(f, "{}{u}", trim(v))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        let (v, u) = if b >= 1e9 {
            (b / 1e9, "GB")
        } else if b >= 1e6 {
            (b / 1e6, "MB")
        } else if b >= 1e3 {
            (b / 1e3, "KB")
        } else {
            (b, "B")
        };
        write!(f, "{}{u}", trim(v))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact_and_rounds_up() {
        // 1500 B at 10 Gbps = 12000 bits / 1e10 bit/s = 1.2 us exactly.
        assert_eq!(DataRate::gbps(10).tx_time(1500), Duration(1200));
        // 1 B at 3 bit/s = 8/3 s: rounds up to the next nanosecond.
        assert_eq!(DataRate(3).tx_time(1), Duration(2_666_666_667));
        // No overflow for the largest sizes at the slowest rates.
        assert_eq!(DataRate(1_000).tx_time(u32::MAX as u64).0, u32::MAX as u64 * 8_000_000);
        // Both divisions, on either side of the 64-bit boundary of bytes x 8e9.
        let edge = u64::MAX / 8_000_000_000;
        for bytes in [edge - 1, edge, edge + 1, edge + 2] {
            let exact = (bytes as u128 * 8_000_000_000).div_ceil(7_000_000_007) as u64;
            assert_eq!(DataRate(7_000_000_007).tx_time(bytes).0, exact, "{bytes} B");
        }
    }

    #[test]
    fn display() {
        assert_eq!(DataRate::gbps(10).to_string(), "10Gbps");
        assert_eq!(DataRate(1_500_000).to_string(), "1.5Mbps");
        assert_eq!(Bytes(125_000_000).to_string(), "125MB");
    }
}
