//! Single Rate Three Color Marker (srTCM).
//!
//! What it models: J. Heinanen, R. Guerin, "A Single Rate Three Color
//! Marker", RFC 2697, 1999. One token rate, CIR, fills two buckets: the
//! committed bucket C (size CBS) first, and what overflows it the excess
//! bucket E (size EBS). Packets within CBS are green, those within the
//! excess burst yellow, the rest red. Used, for example, for the three drop
//! precedences of an AF class (RFC 2597).
//!
//! Section 3 of the RFC, implemented line for line in [`Srtcm::meter`]:
//!
//! - both buckets are full at time 0: `Tc(0) = CBS`, `Te(0) = EBS`;
//! - CIR times per second: if `Tc < CBS`, `Tc += 1`; else if `Te < EBS`,
//!   `Te += 1`; else neither (tokens arrive on the exact grid `k 8e9/CIR` ns,
//!   see [`super::TokenClock`]; the credit accumulated since the last packet
//!   goes to C up to CBS and its overflow to E up to EBS, which is what the
//!   one-token steps add up to);
//! - colour-blind, packet of `B` bytes at `t`: if `Tc(t) - B >= 0`, green
//!   and `Tc -= B`; else if `Te(t) - B >= 0`, yellow and `Te -= B`; else
//!   red, neither bucket touched;
//! - colour-aware: if pre-coloured green and `Tc(t) - B >= 0`, green and
//!   `Tc -= B`; else if pre-coloured green or yellow and `Te(t) - B >= 0`,
//!   yellow and `Te -= B`; else red. A pre-coloured yellow packet is never
//!   green, a red one always red, and a green packet that finds C short may
//!   still be yellow.
//!
//! Parameters ([`SrtcmParams`]): `cir` ([`DataRate`], positive, bit/s of IP
//! packets: the RFC's bytes of IP packets per second times 8), `cbs` and `ebs`
//! (bytes; at least one > 0, as the RFC requires; it recommends each
//! non-zero one be at least the largest IP packet). No defaults: these are
//! the user's traffic contract. Mode: colour-blind (default) or aware.
//!
//! Tests (below): hand-worked trains at CIR 1 Mbit/s (125000 B/s, a token
//! every 8 us), CBS = EBS = 3000 B, with the expected colour and both token
//! counts after every packet, including the overflow of C into E; the
//! colour-aware rules against the colour-blind ones on the same train; a
//! reference that applies Section 3 literally, one token at a time, agreeing
//! packet by packet (colour and both counts) over random trains;
//! validation; a `u64::MAX` gap; random trains: `Tc <= CBS`, `Te <= EBS`,
//! green bytes `<= CBS + CIR t / 8`, green and yellow bytes
//! `<= CBS + EBS + CIR t / 8`, and a colour-aware meter never promotes.

use super::{fill, ColorMode, MeterParams, Meter, MeterCounters, TokenBucket, TokenRate};
use crate::packet::Color;
use crate::time::SimTime;
use crate::units::DataRate;

/// User parameters (RFC 2697 Section 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrtcmParams {
    /// Committed Information Rate, bit/s of IP packets.
    pub cir: DataRate,
    /// Committed Burst Size, bytes.
    pub cbs: u64,
    /// Excess Burst Size, bytes.
    pub ebs: u64,
}

impl SrtcmParams {
    /// Validate and precompute.
    pub fn profile(&self) -> Result<SrtcmProfile, String> {
        let cir = TokenRate::new(self.cir).ok_or("srtcm: cir must be positive, got 0 bit/s")?;
        if self.cbs == 0 && self.ebs == 0 {
            return Err("srtcm: at least one of cbs and ebs must be positive (RFC 2697 Section 2), got 0 and 0 bytes".into());
        }
        Ok(SrtcmProfile { cir, cbs: self.cbs, ebs: self.ebs })
    }
}

/// Precomputed from [`SrtcmParams`]; may be shared by many meters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrtcmProfile {
    cir: TokenRate,
    cbs: u64,
    ebs: u64,
}

impl SrtcmProfile {
    pub fn cir(&self) -> &TokenRate {
        &self.cir
    }
    pub fn cbs(&self) -> u64 {
        self.cbs
    }
    pub fn ebs(&self) -> u64 {
        self.ebs
    }
}

/// An srTCM: profile and run-time state.
#[derive(Clone, Debug)]
pub struct Srtcm {
    profile: SrtcmProfile,
    mode: ColorMode,
    /// The committed bucket (Tc, `<= cbs`), credited at CIR.
    c: TokenBucket,
    /// Token count of the excess bucket, bytes, `<= ebs`: fed only by C's overflow.
    te: u64,
    counters: MeterCounters,
}

impl Srtcm {
    /// A meter with both buckets full at time 0.
    pub fn new(profile: SrtcmProfile, mode: ColorMode) -> Srtcm {
        Srtcm { profile, mode, c: TokenBucket::full(profile.cbs), te: profile.ebs, counters: MeterCounters::default() }
    }
    /// `Tc` after the last packet, bytes.
    pub fn tc(&self) -> u64 {
        self.c.tokens()
    }
    /// `Te` after the last packet, bytes.
    pub fn te(&self) -> u64 {
        self.te
    }
}

impl Meter for Srtcm {
    fn meter(&mut self, now: SimTime, bytes: u32, pre: Color) -> Color {
        // RFC 2697 Section 3: C first, its overflow to E, the rest lost.
        let overflow = self.c.credit(&self.profile.cir, self.profile.cbs, now);
        fill(&mut self.te, self.profile.ebs, overflow);
        let b = bytes as u64;
        let (may_green, may_yellow) = match self.mode {
            ColorMode::Blind => (true, true),
            ColorMode::Aware => (pre == Color::Green, pre != Color::Red),
        };
        let color = if may_green && self.c.take(b) {
            // Tc(t) - B >= 0
            Color::Green
        } else if may_yellow && self.te >= b {
            // Te(t) - B >= 0
            self.te -= b;
            Color::Yellow
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
        let pr = &self.profile;
        Some(MeterParams::Srtcm(SrtcmParams { cir: pr.cir.rate(), cbs: pr.cbs, ebs: pr.ebs }))
    }
    fn set_profile(&mut self, p: MeterParams, now: SimTime) -> Result<(), String> {
        let MeterParams::Srtcm(p) = p else { return Err("an srTCM meter takes an srTCM profile".into()) };
        let new = p.profile()?;
        let overflow = self.c.change((&self.profile.cir, self.profile.cbs), (&new.cir, new.cbs), now);
        fill(&mut self.te, self.profile.ebs, overflow);
        self.profile = new;
        self.te = self.te.min(new.ebs);
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

    /// CIR 1 Mbit/s = 125000 B/s (a token every 8 us), CBS = EBS = 3000 B.
    fn meter(mode: ColorMode) -> Srtcm {
        Srtcm::new(SrtcmParams { cir: DataRate::mbps(1), cbs: 3000, ebs: 3000 }.profile().unwrap(), mode)
    }

    /// (time ns, size B, pre-colour, expected colour, Tc after, Te after)
    type Step = (u64, u32, Color, Color, u64, u64);

    fn run(m: &mut Srtcm, train: &[Step]) {
        for (i, &(t, size, pre, color, tc, te)) in train.iter().enumerate() {
            assert_eq!(m.meter(SimTime(t), size, pre), color, "packet {i}");
            assert_eq!((m.tc(), m.te()), (tc, te), "tokens after packet {i}");
        }
    }

    #[test]
    fn colour_blind_train() {
        run(
            &mut meter(ColorMode::Blind),
            &[
                // A burst at time 0 on full buckets (Tc = Te = 3000).
                (0, 1500, G, G, 1500, 3000),
                (0, 1500, G, G, 0, 3000),
                (0, 1500, G, Y, 0, 1500), // Tc short: E pays
                (0, 1500, G, Y, 0, 0),
                (0, 100, G, R, 0, 0), // both empty: red, nothing taken
                // 8 ms later: 8 ms / 8 us = 1000 tokens, all into C.
                (8_000_000, 1000, G, G, 0, 0),
                // 12 ms more: 1500 tokens.
                (20_000_000, 1500, G, G, 0, 0),
                // 24 ms more: 3000 tokens fill C exactly, E gets nothing.
                (44_000_000, 500, G, G, 2500, 0),
                // 16 ms more: 2000 tokens, 500 fill C, 1500 overflow to E.
                (60_000_000, 3000, G, G, 0, 1500),
                (60_000_000, 1500, G, Y, 0, 0),
                // 2 us later: no whole token yet (the next is due 8 us after 60 ms).
                (60_002_000, 1, G, R, 0, 0),
                (60_008_000, 1, G, G, 0, 0),
                // An idle second refills both; a packet larger than either bucket is red.
                (1_060_008_000, 4000, G, R, 3000, 3000),
                (1_060_008_000, 3000, G, G, 0, 3000),
            ],
        );
    }

    #[test]
    fn colour_aware_train_and_its_blind_twin() {
        // Colour-aware, all at t = 0 on full buckets:
        let aware: [Step; 6] = [
            (0, 1000, Y, Y, 3000, 2000), // yellow stays yellow although C is full
            (0, 1000, R, R, 3000, 2000), // red stays red, takes nothing
            (0, 1000, G, G, 2000, 2000),
            (0, 2500, G, R, 2000, 2000), // neither bucket holds 2500
            (0, 2000, G, G, 0, 2000),
            (0, 1500, G, Y, 0, 500), // green demoted: C empty, E pays
        ];
        run(&mut meter(ColorMode::Aware), &aware);
        // Colour-blind, same packets: the pre-colours are ignored.
        let blind: [Step; 6] = [
            (0, 1000, Y, G, 2000, 3000),
            (0, 1000, R, G, 1000, 3000),
            (0, 1000, G, G, 0, 3000),
            (0, 2500, G, Y, 0, 500),
            (0, 2000, G, R, 0, 500),
            (0, 1500, G, R, 0, 500),
        ];
        run(&mut meter(ColorMode::Blind), &blind);
    }

    #[test]
    fn parameters_are_validated() {
        let e = SrtcmParams { cir: DataRate(0), cbs: 1, ebs: 1 }.profile().unwrap_err();
        assert!(e.contains("cir"), "{e}");
        let e = SrtcmParams { cir: DataRate(1), cbs: 0, ebs: 0 }.profile().unwrap_err();
        assert!(e.contains("cbs") && e.contains("ebs"), "{e}");
        // One zero bucket is allowed: with CBS = 0 everything goes to E.
        let mut m = Srtcm::new(SrtcmParams { cir: DataRate::mbps(1), cbs: 0, ebs: 1500 }.profile().unwrap(), ColorMode::Blind);
        assert_eq!(m.meter(SimTime(0), 1500, G), Y);
        assert_eq!(m.meter(SimTime(8_000 * 1500), 1500, G), Y);
    }

    #[test]
    fn longest_gap_and_standing_time() {
        let mut m = Srtcm::new(SrtcmParams { cir: DataRate(u64::MAX), cbs: u64::MAX, ebs: u64::MAX }.profile().unwrap(), ColorMode::Blind);
        assert_eq!(m.meter(SimTime(0), u32::MAX, G), G);
        assert_eq!(m.meter(SimTime(u64::MAX), 1, G), G);
        assert_eq!((m.tc(), m.te()), (u64::MAX - 1, u64::MAX));
        let mut m = meter(ColorMode::Blind);
        for _ in 0..10 {
            m.meter(SimTime(7), 600, G); // no credit at a standing instant
        }
        assert_eq!((m.tc(), m.te()), (0, 0));
        assert_eq!(m.counters().pkts, [5, 5, 0]);
    }

    /// RFC 2697 Section 3 taken literally, as a reference: token number k
    /// arrives at k / CIR seconds (the first nanosecond t with
    /// `CIR t >= 8e9 k`) and is added to C, else to E, else lost, one at a
    /// time; then the colour rules. The meter must agree packet by packet.
    #[test]
    fn matches_the_rfc_one_token_at_a_time() {
        let mut rng = Rng::stream(24, "srtcm-rfc");
        for case in 0..12 {
            let cir = 1_000_000 + rng.next_u64() % 50_000_000;
            let (cbs, ebs) = (rng.next_u64() % 6_000, 1 + rng.next_u64() % 6_000);
            let mode = if case % 2 == 0 { ColorMode::Blind } else { ColorMode::Aware };
            let mut m = Srtcm::new(SrtcmParams { cir: DataRate(cir), cbs, ebs }.profile().unwrap(), mode);
            let (mut tc, mut te, mut k, mut t) = (cbs, ebs, 1u64, 0u64);
            for i in 0..3_000 {
                t += rng.next_u64() % 300_000;
                while k as u128 * 8_000_000_000 <= cir as u128 * t as u128 {
                    if tc < cbs {
                        tc += 1;
                    } else if te < ebs {
                        te += 1;
                    }
                    k += 1;
                }
                let b = 40 + rng.next_u64() % 3_000;
                let pre = [G, Y, R][(rng.next_u64() % 3) as usize];
                let blind = mode == ColorMode::Blind;
                let want = if (blind || pre == G) && tc >= b {
                    tc -= b;
                    G
                } else if (blind || pre != R) && te >= b {
                    te -= b;
                    Y
                } else {
                    R
                };
                assert_eq!(m.meter(SimTime(t), b as u32, pre), want, "case {case}, packet {i}");
                assert_eq!((m.tc(), m.te()), (tc, te), "case {case}, packet {i}");
            }
        }
    }

    #[test]
    fn random_trains_respect_the_buckets_and_the_rate() {
        let mut rng = Rng::stream(22, "srtcm-prop");
        for case in 0..200 {
            let cir = DataRate(1 + rng.next_u64() % 20_000_000_000);
            let cbs = rng.next_u64() % 50_000;
            let ebs = 1 + rng.next_u64() % 50_000;
            let mode = if case % 2 == 0 { ColorMode::Blind } else { ColorMode::Aware };
            let mut m = Srtcm::new(SrtcmParams { cir, cbs, ebs }.profile().unwrap(), mode);
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
                assert!(m.tc() <= cbs && m.te() <= ebs, "case {case}");
                let earned = cir.0 as u128 * t as u128 / 8_000_000_000;
                let b = &m.counters().bytes;
                assert!(b[0] as u128 + m.tc() as u128 <= cbs as u128 + earned, "case {case}: green bound");
                assert!((b[0] + b[1] + m.tc() + m.te()) as u128 <= (cbs + ebs) as u128 + earned, "case {case}: green+yellow bound");
            }
        }
    }
}
