//! Single-rate two-colour token bucket: in profile (green) or out of
//! profile (red).
//!
//! What it models: the policer of the first source document (Section II,
//! "QoS support in state-of-the-art routers": "in a single-rate two-color
//! (token bucket) scheme, the average rate ... is set to equal the
//! generation rate of tokens, and a maximum burst-size is used to limit the
//! number of tokens in the bucket. The policer marks packets as in-profile
//! or out-of-profile"; Section III-A: "If an arriving packet finds a token
//! in the bucket, it is marked as being in-profile; otherwise it is marked
//! as being out-of-profile"), configured in its experiments 2 and 3 at
//! 1 Gbps and 31 KB (Section III-C). Junos calls the two parameters
//! `bandwidth-limit` and `burst-size-limit`.
//!
//! Rule, for a packet of `B` bytes at time `t` with `T(t)` byte tokens (the
//! bucket starts full, `T(0) = burst_size`, and gains one token `rate/8`
//! times per second up to `burst_size`, as RFC 2697 Section 3 fills its
//! C bucket):
//!
//! - if `T(t) - B >= 0`: green, `T <- T - B`;
//! - else: red, `T` unchanged.
//!
//! Colour-aware mode: a packet pre-coloured yellow or red is red and takes
//! no tokens (the meter only demotes). Colour-blind is the default and
//! what the document's routers did.
//!
//! Parameters: `rate` ([`DataRate`], bit/s of IP packets, > 0; no default,
//! the document uses 1 Gbps), `burst_size` (bytes, > 0; the document uses
//! 31 KB, taken as 31 000 B). A packet larger than `burst_size` is never
//! green: set the burst to at least the largest packet (RFC 2697 makes the
//! same recommendation).
//!
//! Tests (below): the document's policer under a 10 Gbps train of 1500 B
//! packets turns green exactly one packet in ten once the initial burst is
//! spent (the "every tenth packet" of Section III-C), with exact token counts;
//! colour-aware demotion; validation; same-instant packets and a `u64::MAX`
//! gap; random trains: tokens never exceed the bucket and green bytes never
//! exceed `burst_size + rate t / 8`.

use super::{ColorMode, MeterParams, Meter, MeterCounters, TokenBucket, TokenRate};
use crate::packet::Color;
use crate::time::SimTime;
use crate::units::DataRate;

/// User parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SingleRateParams {
    /// Token generation rate: the committed average rate, bit/s of IP packets.
    pub rate: DataRate,
    /// Bucket size: the largest burst sent at any speed, bytes.
    pub burst_size: u64,
}

impl SingleRateParams {
    /// The document's policer: 1 Gbps, 31 KB (Section III-C).
    pub const PAPER: SingleRateParams = SingleRateParams { rate: DataRate::gbps(1), burst_size: 31_000 };

    /// Validate and precompute.
    pub fn profile(&self) -> Result<SingleRateProfile, String> {
        let rate = TokenRate::new(self.rate).ok_or("single-rate policer: rate must be positive, got 0 bit/s")?;
        if self.burst_size == 0 {
            return Err("single-rate policer: burst_size must be positive, got 0 bytes".into());
        }
        Ok(SingleRateProfile { rate, burst_size: self.burst_size })
    }
}

/// Precomputed from [`SingleRateParams`]; may be shared by many meters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SingleRateProfile {
    rate: TokenRate,
    burst_size: u64,
}

impl SingleRateProfile {
    pub fn rate(&self) -> &TokenRate {
        &self.rate
    }
    pub fn burst_size(&self) -> u64 {
        self.burst_size
    }
}

/// A single-rate two-colour meter: profile and run-time state.
#[derive(Clone, Debug)]
pub struct SingleRate {
    profile: SingleRateProfile,
    mode: ColorMode,
    /// Byte tokens, at most `burst_size`.
    bucket: TokenBucket,
    counters: MeterCounters,
}

impl SingleRate {
    /// A meter whose bucket is full at time 0.
    pub fn new(profile: SingleRateProfile, mode: ColorMode) -> SingleRate {
        SingleRate { profile, mode, bucket: TokenBucket::full(profile.burst_size), counters: MeterCounters::default() }
    }
    /// Byte tokens in the bucket after the last packet.
    pub fn tokens(&self) -> u64 {
        self.bucket.tokens()
    }
}

impl Meter for SingleRate {
    fn meter(&mut self, now: SimTime, bytes: u32, pre: Color) -> Color {
        self.bucket.credit(&self.profile.rate, self.profile.burst_size, now);
        let color = if self.mode == ColorMode::Aware && pre != Color::Green {
            Color::Red
        } else if self.bucket.take(bytes as u64) {
            // T(t) - B >= 0: in profile.
            Color::Green
        } else {
            Color::Red
        };
        self.counters.record(color, bytes);
        color
    }
    fn counters(&self) -> &MeterCounters {
        &self.counters
    }
    fn params(&self) -> Option<MeterParams> {
        Some(MeterParams::SingleRate(SingleRateParams { rate: self.profile.rate.rate(), burst_size: self.profile.burst_size }))
    }
    fn set_profile(&mut self, p: MeterParams, now: SimTime) -> Result<(), String> {
        let MeterParams::SingleRate(p) = p else { return Err("a single-rate meter takes a single-rate profile".into()) };
        let new = p.profile()?;
        self.bucket.change((&self.profile.rate, self.profile.burst_size), (&new.rate, new.burst_size), now);
        self.profile = new;
        Ok(())
    }
    fn bucket_tokens(&self) -> Option<u64> {
        Some(self.bucket.tokens())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn meter(rate: DataRate, burst_size: u64, mode: ColorMode) -> SingleRate {
        SingleRate::new(SingleRateParams { rate, burst_size }.profile().unwrap(), mode)
    }

    #[test]
    fn the_papers_policer_passes_every_tenth_packet_of_a_line_rate_train() {
        // 1500 B packets back to back at 10 Gbps: one every 1.2 us, during
        // which 1 Gbps earns 1200 ns / 8 ns per byte = 150 B of tokens.
        // Before packet k (all earlier ones green) T = 31000 - 1350 k, so
        // packets 0..=21 are green (T = 1150 after packet 21); packet 22
        // finds 1300 and 23 finds 1450 (red); 24 finds 1600 (green, 100
        // left); from then on T climbs 100, 250, ..., 1450 (red) and 1600
        // (green) every tenth packet: 24, 34, 44, ...
        let mut m = SingleRate::new(SingleRateParams::PAPER.profile().unwrap(), ColorMode::Blind);
        for k in 0..1000u64 {
            let c = m.meter(SimTime(k * 1200), 1500, Color::Green);
            let green = k <= 21 || (k >= 24 && (k - 24) % 10 == 0);
            assert_eq!(c == Color::Green, green, "packet {k}");
            let expected_tokens = if k <= 21 {
                31_000 - 1350 * k - 1500 // T before packet k, less B
            } else if k < 24 {
                1150 + 150 * (k - 21)
            } else {
                100 + 150 * ((k - 24) % 10)
            };
            assert_eq!(m.tokens(), expected_tokens, "tokens after packet {k}");
        }
        // Long run: green rate = 1 Gbps = 1/10 of the offered 10 Gbps.
        assert_eq!(m.counters().pkts[Color::Green as usize], 22 + 98);
    }

    #[test]
    fn exact_tokens_after_each_packet() {
        // 1 Mbit/s = 125000 B/s: one byte token every 8 us. Bucket 3000 B.
        let mut m = meter(DataRate::mbps(1), 3000, ColorMode::Blind);
        let train: [(u64, u32, Color, u64); 7] = [
            // (time ns, size, colour, tokens after)
            (0, 1500, Color::Green, 1500),          // full bucket: 3000 - 1500
            (0, 1500, Color::Green, 0),             // same instant: no credit
            (0, 1, Color::Red, 0),                  // empty: red, nothing taken
            (7_999, 1, Color::Red, 0),              // first token due at 8 us
            (8_000, 1, Color::Green, 0),            // 1 token earned, taken
            (8_000_000, 1000, Color::Red, 999),     // (8 ms - 8 us) / 8 us = 999 tokens earned
            (100_000_000_000, 1500, Color::Green, 1500), // 100 s idle: full (3000), less 1500
        ];
        for (i, &(t, size, color, tokens)) in train.iter().enumerate() {
            assert_eq!(m.meter(SimTime(t), size, Color::Green), color, "packet {i}");
            assert_eq!(m.tokens(), tokens, "tokens after packet {i}");
        }
    }

    #[test]
    fn a_rate_change_credits_the_old_rate_up_to_the_moment_of_change() {
        use crate::knob::{Knob, KnobName};
        let set = |m: &mut SingleRate, k: Knob, now| m.set_profile(m.params().unwrap().with(k).unwrap(), now);
        let get = |m: &SingleRate, n| m.params().unwrap().get(n);
        // 1 Mbit/s: a byte every 8 us; bucket 3000 B, emptied at t = 0.
        let mut m = meter(DataRate::mbps(1), 3000, ColorMode::Blind);
        assert_eq!(m.meter(SimTime(0), 3000, Color::Green), Color::Green);
        assert_eq!(get(&m, KnobName::RateBps), Some(1_000_000));
        // Change to 2 Mbit/s at 4.003 ms: 4_003_000 / 8000 = 500 bytes earned
        // at the old rate, 3000/8000 of a byte carried, which on the new grid
        // (a byte every 4 us) is 1500/4000.
        assert_eq!(set(&mut m, Knob::RateBps(DataRate::mbps(2)), SimTime(4_003_000)), Ok(()));
        assert_eq!(m.tokens(), 500);
        // 2.5 us later the carried 1500 + 2500 ns make the next byte.
        assert_eq!(m.meter(SimTime(4_005_499), 501, Color::Green), Color::Red);
        assert_eq!(m.meter(SimTime(4_005_500), 501, Color::Green), Color::Green);
        assert_eq!(m.tokens(), 0);
        // 100 bytes every 400 us at the new rate.
        assert_eq!(m.meter(SimTime(4_405_500), 100, Color::Green), Color::Green);
        assert_eq!(m.tokens(), 0);
        // A smaller bucket drops what no longer fits, after crediting.
        assert_eq!(get(&m, KnobName::BurstBytes), Some(3000));
        assert_eq!(set(&mut m, Knob::BurstBytes(100), SimTime(5_405_500)), Ok(()));
        assert_eq!(m.tokens(), 100, "250 earned, 100 kept");
        // Out of range: refused, nothing changes (negative and fractional
        // values are refused by the registry, control/knobs.rs).
        for k in [Knob::RateBps(DataRate(0)), Knob::BurstBytes(0)] {
            assert!(set(&mut m, k, SimTime(6_000_000)).is_err(), "{k:?} accepted");
        }
        assert_eq!(m.tokens(), 100);
        assert_eq!(get(&m, KnobName::RateBps), Some(2_000_000));
        assert_eq!(get(&m, KnobName::CirBps), None);
        assert_eq!(m.params().unwrap().with(Knob::CirBps(DataRate::mbps(1))), None, "a single-rate meter has no CIR");
        let srtcm = MeterParams::Srtcm(crate::qos::meter::SrtcmParams { cir: DataRate::mbps(1), cbs: 1, ebs: 1 });
        assert!(m.set_profile(srtcm, SimTime(6_000_000)).is_err(), "a profile of another kind");
    }

    #[test]
    fn colour_aware_only_demotes() {
        let mut blind = meter(DataRate::mbps(1), 3000, ColorMode::Blind);
        let mut aware = meter(DataRate::mbps(1), 3000, ColorMode::Aware);
        assert_eq!(blind.meter(SimTime(0), 1000, Color::Yellow), Color::Green);
        assert_eq!(aware.meter(SimTime(0), 1000, Color::Yellow), Color::Red);
        assert_eq!(aware.meter(SimTime(0), 1000, Color::Red), Color::Red);
        assert_eq!(aware.tokens(), 3000, "demoted packets take no tokens");
        assert_eq!(aware.meter(SimTime(0), 1000, Color::Green), Color::Green);
        assert_eq!(aware.tokens(), 2000);
    }

    #[test]
    fn parameters_are_validated() {
        let e = SingleRateParams { rate: DataRate(0), burst_size: 1 }.profile().unwrap_err();
        assert!(e.contains("rate"), "{e}");
        let e = SingleRateParams { rate: DataRate(1), burst_size: 0 }.profile().unwrap_err();
        assert!(e.contains("burst_size"), "{e}");
    }

    #[test]
    fn pathological_times() {
        let mut m = meter(DataRate(u64::MAX), u64::MAX, ColorMode::Blind);
        for _ in 0..10 {
            m.meter(SimTime(5), u32::MAX, Color::Green);
        }
        assert_eq!(m.tokens(), u64::MAX - 10 * u32::MAX as u64);
        // Backwards: nothing earned, nothing breaks.
        assert_eq!(m.meter(SimTime(0), 0, Color::Green), Color::Green);
        m.meter(SimTime(u64::MAX), 1, Color::Green);
        assert_eq!(m.tokens(), u64::MAX - 1);
        let mut m = meter(DataRate(1), 1, ColorMode::Blind);
        assert_eq!(m.meter(SimTime(0), 1, Color::Green), Color::Green);
        assert_eq!(m.meter(SimTime(u64::MAX), 1, Color::Green), Color::Green);
    }

    #[test]
    fn random_trains_respect_the_bucket_and_the_rate() {
        let mut rng = Rng::stream(21, "single-rate-prop");
        for case in 0..200 {
            let rate = DataRate(1 + rng.next_u64() % 20_000_000_000);
            let burst = 1 + rng.next_u64() % 100_000;
            let mut m = meter(rate, burst, ColorMode::Blind);
            let mean_gap = 1 + rng.next_u64() % 20_000;
            let mut t = 0u64;
            for _ in 0..2_000 {
                t += rng.next_u64() % (2 * mean_gap);
                let size = 40 + (rng.next_u64() % 9_000) as u32;
                m.meter(SimTime(t), size, Color::Green);
                assert!(m.tokens() <= burst, "case {case}");
                // Token-bucket bound: green bytes <= burst + rate t / 8.
                let bound = burst as u128 + rate.0 as u128 * t as u128 / 8_000_000_000;
                assert!((m.counters().bytes[0] as u128) <= bound, "case {case}");
                // And conservation: green + tokens = burst + earned - wasted <= bound.
                assert!((m.counters().bytes[0] + m.tokens()) as u128 <= bound, "case {case}");
            }
        }
    }
}
