//! Two Rate Three Color Marker (trTCM).
//!
//! What it models: J. Heinanen, R. Guerin, "A Two Rate Three Color
//! Marker", RFC 2698, 1999. Two independent buckets: P (peak, rate PIR,
//! size PBS) and C (committed, rate CIR, size CBS). A packet that exceeds
//! the peak profile is red; otherwise it is yellow or green as it exceeds
//! or meets the committed profile. Unlike the srTCM, the excess is bounded
//! by a rate (PIR), not only by a burst.
//!
//! Section 3 of the RFC, implemented line for line in [`Trtcm::meter`]:
//!
//! - both buckets full at time 0: `Tp(0) = PBS`, `Tc(0) = CBS`;
//! - `Tp` gains one token PIR times per second up to PBS, `Tc` one token
//!   CIR times per second up to CBS (each on its exact grid, see
//!   [`super::TokenClock`]);
//! - colour-blind, packet of `B` bytes at `t`: if `Tp(t) - B < 0`, red;
//!   else if `Tc(t) - B < 0`, yellow and `Tp -= B`; else green, `Tp -= B`
//!   and `Tc -= B`;
//! - colour-aware: if pre-coloured red or `Tp(t) - B < 0`, red; else if
//!   pre-coloured yellow or `Tc(t) - B < 0`, yellow and `Tp -= B`; else
//!   green, `Tp -= B` and `Tc -= B`.
//!
//! Parameters ([`TrtcmParams`]): `pir`, `cir` ([`DataRate`], bit/s of IP
//! packets, both > 0, `pir >= cir` as Section 2 of the RFC requires), `pbs`,
//! `cbs` (bytes, both > 0 as Section 2 requires; the RFC recommends at least
//! the largest IP packet). No defaults. Mode: colour-blind (default) or aware.
//!
//! Tests (below): hand-worked trains at PIR 2 Mbit/s (a token every 4 us),
//! PBS 3000 B, CIR 1 Mbit/s (a token every 8 us), CBS 2000 B, with the colour
//! and both token counts after every packet; colour-aware against blind; a
//! reference that applies Section 3 literally, one token at a time,
//! agreeing packet by packet over random trains;
//! validation; a `u64::MAX` gap; random trains: `Tp <= PBS`, `Tc <= CBS`,
//! green bytes `<= CBS + CIR t / 8`, green and yellow bytes
//! `<= PBS + PIR t / 8`, and a colour-aware meter never promotes.

use super::{ColorMode, MeterParams, Meter, MeterCounters, TokenBucket, TokenRate};
use crate::packet::Color;
use crate::time::SimTime;
use crate::units::DataRate;

/// User parameters (RFC 2698 Section 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrtcmParams {
    /// Peak Information Rate, bit/s of IP packets.
    pub pir: DataRate,
    /// Peak Burst Size, bytes.
    pub pbs: u64,
    /// Committed Information Rate, bit/s of IP packets.
    pub cir: DataRate,
    /// Committed Burst Size, bytes.
    pub cbs: u64,
}

impl TrtcmParams {
    /// Validate and precompute.
    pub fn profile(&self) -> Result<TrtcmProfile, String> {
        let pir = TokenRate::new(self.pir).ok_or("trtcm: pir must be positive, got 0 bit/s")?;
        let cir = TokenRate::new(self.cir).ok_or("trtcm: cir must be positive, got 0 bit/s")?;
        if self.pir < self.cir {
            return Err(format!(
                "trtcm: pir must be at least cir (RFC 2698 Section 2), got pir {} < cir {}",
                self.pir, self.cir
            ));
        }
        if self.pbs == 0 || self.cbs == 0 {
            return Err(format!(
                "trtcm: pbs and cbs must be positive (RFC 2698 Section 2), got pbs {} and cbs {} bytes",
                self.pbs, self.cbs
            ));
        }
        Ok(TrtcmProfile { pir, pbs: self.pbs, cir, cbs: self.cbs })
    }
}

/// Precomputed from [`TrtcmParams`]; may be shared by many meters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrtcmProfile {
    pir: TokenRate,
    pbs: u64,
    cir: TokenRate,
    cbs: u64,
}

impl TrtcmProfile {
    pub fn pir(&self) -> &TokenRate {
        &self.pir
    }
    pub fn pbs(&self) -> u64 {
        self.pbs
    }
    pub fn cir(&self) -> &TokenRate {
        &self.cir
    }
    pub fn cbs(&self) -> u64 {
        self.cbs
    }
}

/// A trTCM: profile and run-time state.
#[derive(Clone, Debug)]
pub struct Trtcm {
    profile: TrtcmProfile,
    mode: ColorMode,
    /// The peak bucket (Tp, `<= pbs`), credited at PIR.
    p: TokenBucket,
    /// The committed bucket (Tc, `<= cbs`), credited at CIR.
    c: TokenBucket,
    counters: MeterCounters,
}

impl Trtcm {
    /// A meter with both buckets full at time 0.
    pub fn new(profile: TrtcmProfile, mode: ColorMode) -> Trtcm {
        Trtcm {
            profile,
            mode,
            p: TokenBucket::full(profile.pbs),
            c: TokenBucket::full(profile.cbs),
            counters: MeterCounters::default(),
        }
    }
    /// `Tp` after the last packet, bytes.
    pub fn tp(&self) -> u64 {
        self.p.tokens()
    }
    /// `Tc` after the last packet, bytes.
    pub fn tc(&self) -> u64 {
        self.c.tokens()
    }
}

impl Meter for Trtcm {
    fn meter(&mut self, now: SimTime, bytes: u32, pre: Color) -> Color {
        self.p.credit(&self.profile.pir, self.profile.pbs, now);
        self.c.credit(&self.profile.cir, self.profile.cbs, now);
        let b = bytes as u64;
        let aware = self.mode == ColorMode::Aware;
        let color = if (aware && pre == Color::Red) || self.p.tokens() < b {
            // Tp(t) - B < 0
            Color::Red
        } else if (aware && pre == Color::Yellow) || !self.c.take(b) {
            // Tc(t) - B < 0
            self.p.take(b);
            Color::Yellow
        } else {
            self.p.take(b);
            Color::Green
        };
        self.counters.record(color, bytes);
        color
    }
    fn counters(&self) -> &MeterCounters {
        &self.counters
    }
    fn params(&self) -> Option<MeterParams> {
        let pr = &self.profile;
        Some(MeterParams::Trtcm(TrtcmParams { pir: pr.pir.rate(), pbs: pr.pbs, cir: pr.cir.rate(), cbs: pr.cbs }))
    }
    fn set_profile(&mut self, p: MeterParams, now: SimTime) -> Result<(), String> {
        let MeterParams::Trtcm(p) = p else { return Err("a trTCM meter takes a trTCM profile".into()) };
        let new = p.profile()?;
        self.p.change((&self.profile.pir, self.profile.pbs), (&new.pir, new.pbs), now);
        self.c.change((&self.profile.cir, self.profile.cbs), (&new.cir, new.cbs), now);
        self.profile = new;
        Ok(())
    }
    /// Tc.
    fn bucket_tokens(&self) -> Option<u64> {
        Some(self.c.tokens())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use Color::{Green as G, Red as R, Yellow as Y};

    /// PIR 2 Mbit/s (250000 B/s, a token every 4 us), PBS 3000 B;
    /// CIR 1 Mbit/s (125000 B/s, a token every 8 us), CBS 2000 B.
    fn meter(mode: ColorMode) -> Trtcm {
        let p = TrtcmParams { pir: DataRate::mbps(2), pbs: 3000, cir: DataRate::mbps(1), cbs: 2000 };
        Trtcm::new(p.profile().unwrap(), mode)
    }

    /// (time ns, size B, pre-colour, expected colour, Tp after, Tc after)
    type Step = (u64, u32, Color, Color, u64, u64);

    fn run(m: &mut Trtcm, train: &[Step]) {
        for (i, &(t, size, pre, color, tp, tc)) in train.iter().enumerate() {
            assert_eq!(m.meter(SimTime(t), size, pre), color, "packet {i}");
            assert_eq!((m.tp(), m.tc()), (tp, tc), "tokens after packet {i}");
        }
    }

    #[test]
    fn colour_blind_train() {
        run(
            &mut meter(ColorMode::Blind),
            &[
                (0, 1500, G, G, 1500, 500),  // both buckets hold it: both pay
                (0, 1000, G, Y, 500, 500),   // C short: yellow, P pays
                (0, 1000, G, R, 500, 500),   // P short: red, nobody pays
                // 4 ms: P gains 4 ms / 4 us = 1000, C 4 ms / 8 us = 500.
                (4_000_000, 1000, G, G, 500, 0),
                // 2 ms more: P +500, C +250.
                (6_000_000, 1000, G, Y, 0, 250),
                (6_000_000, 200, G, R, 0, 250), // red on P although C holds 200
                // 12 us more: P +3 (12 us / 4 us), C +1 (12 us / 8 us, half a
                // token carried): both hold 3 bytes.
                (6_012_000, 3, G, G, 0, 248),
                // 4 us more: P +1; C's carried half and 4 us make a token.
                (6_016_000, 1, G, G, 0, 248),
                // An idle second fills both.
                (1_006_012_000, 2500, G, Y, 500, 2000),
            ],
        );
    }

    #[test]
    fn colour_aware_train_and_its_blind_twin() {
        run(
            &mut meter(ColorMode::Aware),
            &[
                (0, 1000, Y, Y, 2000, 2000), // yellow stays yellow although C is full
                (0, 100, R, R, 2000, 2000),  // red stays red, takes nothing
                (0, 1500, G, G, 500, 500),
                (0, 600, G, R, 500, 500),    // P short
                (0, 500, G, G, 0, 0),
            ],
        );
        run(
            &mut meter(ColorMode::Blind),
            &[
                (0, 1000, Y, G, 2000, 1000),
                (0, 100, R, G, 1900, 900),
                (0, 1500, G, Y, 400, 900),
                (0, 600, G, R, 400, 900),
                (0, 500, G, R, 400, 900),
            ],
        );
    }

    #[test]
    fn parameters_are_validated() {
        let ok = TrtcmParams { pir: DataRate::mbps(2), pbs: 3000, cir: DataRate::mbps(1), cbs: 2000 };
        assert!(ok.profile().is_ok());
        assert!(TrtcmParams { cir: DataRate(0), ..ok }.profile().unwrap_err().contains("cir"));
        assert!(TrtcmParams { pir: DataRate(0), ..ok }.profile().unwrap_err().contains("pir"));
        let e = TrtcmParams { pir: DataRate::mbps(1), cir: DataRate::mbps(2), ..ok }.profile().unwrap_err();
        assert!(e.contains("pir must be at least cir"), "{e}");
        assert!(TrtcmParams { pbs: 0, ..ok }.profile().unwrap_err().contains("pbs"));
        assert!(TrtcmParams { cbs: 0, ..ok }.profile().unwrap_err().contains("cbs"));
    }

    #[test]
    fn longest_gap() {
        let p = TrtcmParams { pir: DataRate(u64::MAX), pbs: u64::MAX, cir: DataRate(1), cbs: u64::MAX };
        let mut m = Trtcm::new(p.profile().unwrap(), ColorMode::Blind);
        assert_eq!(m.meter(SimTime(0), u32::MAX, G), G);
        assert_eq!(m.meter(SimTime(u64::MAX), 1, G), G);
        // P refills completely; C earns u64::MAX / 8e9 bytes at 1 bit/s.
        let earned = u64::MAX / 8_000_000_000;
        assert_eq!((m.tp(), m.tc()), (u64::MAX - 1, u64::MAX - u32::MAX as u64 + earned - 1));
    }

    /// RFC 2698 Section 3 taken literally, as a reference: P gains token
    /// number k at k / PIR seconds, C at k / CIR seconds, one at a time up
    /// to their sizes; then the colour rules. The meter must agree packet
    /// by packet.
    #[test]
    fn matches_the_rfc_one_token_at_a_time() {
        let mut rng = Rng::stream(25, "trtcm-rfc");
        for case in 0..12 {
            let cir = 1_000_000 + rng.next_u64() % 20_000_000;
            let pir = cir + rng.next_u64() % 20_000_000;
            let (pbs, cbs) = (1 + rng.next_u64() % 6_000, 1 + rng.next_u64() % 6_000);
            let mode = if case % 2 == 0 { ColorMode::Blind } else { ColorMode::Aware };
            let mut m = Trtcm::new(TrtcmParams { pir: DataRate(pir), pbs, cir: DataRate(cir), cbs }.profile().unwrap(), mode);
            let (mut tp, mut tc, mut kp, mut kc, mut t) = (pbs, cbs, 1u64, 1u64, 0u64);
            for i in 0..3_000 {
                t += rng.next_u64() % 300_000;
                while kp as u128 * 8_000_000_000 <= pir as u128 * t as u128 {
                    tp = (tp + 1).min(pbs);
                    kp += 1;
                }
                while kc as u128 * 8_000_000_000 <= cir as u128 * t as u128 {
                    tc = (tc + 1).min(cbs);
                    kc += 1;
                }
                let b = 40 + rng.next_u64() % 3_000;
                let pre = [G, Y, R][(rng.next_u64() % 3) as usize];
                let aware = mode == ColorMode::Aware;
                let want = if (aware && pre == R) || tp < b {
                    R
                } else if (aware && pre == Y) || tc < b {
                    tp -= b;
                    Y
                } else {
                    tp -= b;
                    tc -= b;
                    G
                };
                assert_eq!(m.meter(SimTime(t), b as u32, pre), want, "case {case}, packet {i}");
                assert_eq!((m.tp(), m.tc()), (tp, tc), "case {case}, packet {i}");
            }
        }
    }

    #[test]
    fn random_trains_respect_the_buckets_and_the_rates() {
        let mut rng = Rng::stream(23, "trtcm-prop");
        for case in 0..200 {
            let cir = DataRate(1 + rng.next_u64() % 10_000_000_000);
            let pir = DataRate(cir.0 + rng.next_u64() % 10_000_000_000);
            let cbs = 1 + rng.next_u64() % 50_000;
            let pbs = 1 + rng.next_u64() % 50_000;
            let mode = if case % 2 == 0 { ColorMode::Blind } else { ColorMode::Aware };
            let mut m = Trtcm::new(TrtcmParams { pir, pbs, cir, cbs }.profile().unwrap(), mode);
            let mean_gap = 1 + rng.next_u64() % 20_000;
            let mut t = 0u64;
            for _ in 0..2_000 {
                t += rng.next_u64() % (2 * mean_gap);
                let size = 40 + (rng.next_u64() % 9_000) as u32;
                let pre = [G, Y, R][(rng.next_u64() % 3) as usize];
                let c = m.meter(SimTime(t), size, pre);
                if mode == ColorMode::Aware {
                    assert!(c >= pre, "case {case}: {pre:?} promoted to {c:?}");
                }
                assert!(m.tp() <= pbs && m.tc() <= cbs, "case {case}");
                let b = &m.counters().bytes;
                let c_earned = cir.0 as u128 * t as u128 / 8_000_000_000;
                let p_earned = pir.0 as u128 * t as u128 / 8_000_000_000;
                assert!((b[0] + m.tc()) as u128 <= cbs as u128 + c_earned, "case {case}: green bound");
                assert!((b[0] + b[1] + m.tp()) as u128 <= pbs as u128 + p_earned, "case {case}: peak bound");
            }
        }
    }
}
