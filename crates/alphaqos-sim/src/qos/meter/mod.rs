//! Traffic meters: token buckets that give each packet a colour (its loss
//! priority), and the policer that acts on the colour.
//!
//! What it models: the ingress policers of routers. A meter measures a
//! packet stream against a traffic profile and colours each packet green
//! (conforming), yellow (exceeding) or red (violating); the policer then
//! transmits, discards or re-classifies the packet by colour. Three meters,
//! one file each, behind the [`Meter`] trait:
//!
//! - [`single_rate`]: single-rate two-colour token bucket (rate, burst
//!   size), the policer of the first source document (Section II: "the
//!   average rate ... is set to equal the generation rate of tokens, and a
//!   maximum burst-size is used to limit the number of tokens in the
//!   bucket"; Section III-C: 1 Gbps, 31 KB);
//! - [`srtcm`]: RFC 2697, A Single Rate Three Color Marker (CIR, CBS, EBS);
//! - [`trtcm`]: RFC 2698, A Two Rate Three Color Marker (PIR, PBS, CIR, CBS).
//!
//! References: J. Heinanen, R. Guerin, RFC 2697 and RFC 2698 (1999),
//! Section 3 of each for the metering rules; DPDK `lib/meter/rte_meter.h`
//! for the split of every meter into *parameters* (what the user writes,
//! validated once with a clear error), *profile* (precomputed from the
//! parameters, shareable by many meters) and run-time *state* (the token
//! counts, one per metered stream).
//!
//! Units. Rates are [`DataRate`] (bit/s of IP packets: the RFCs' "bytes of
//! IP packets per second" times 8, so header bytes count and link-layer
//! framing does not); bucket sizes are bytes; time is integer nanoseconds.
//!
//! Token arithmetic is exact integer arithmetic, no floating point. The
//! RFCs increment a token count "by one CIR times per second", i.e. one
//! byte token at each instant `k * 8e9 / rate` ns after time 0. A
//! [`TokenRate`] keeps the rate as the reduced fraction
//! `bytes_per_period / period_ns` (`rate / 8e9` bytes per ns, reduced by
//! their gcd: 1 Gbit/s is 1 byte every 8 ns, 10 Gbit/s 5 bytes every 4 ns,
//! 1 Mbit/s 1 byte every 8000 ns), and a [`TokenClock`] credits the elapsed
//! time in whole bytes and carries the remainder, so that tokens arrive on
//! exactly the RFC's grid whatever the packet times: no drift, however many
//! packets. Tokens are whole bytes, and a bucket never holds more than its
//! size (credit beyond it is discarded, as the RFCs say). Time that does not
//! advance (two packets at the same instant) credits nothing; time that
//! goes backwards is treated as not advancing; an idle gap of any length up
//! to `u64::MAX` ns is credited in 128-bit arithmetic without overflow.
//!
//! Colour modes (RFC 2697/2698 Section 2): *colour-blind* meters ignore the
//! colour a packet arrives with; *colour-aware* meters take it as the
//! packet's pre-colour and never promote it (a yellow packet never becomes
//! green, a red one stays red).
//!
//! Tests: each meter file checks hand-worked packet trains colour by colour
//! and the exact token counts after each packet (in the manner of ns-3's
//! TBF test), the blind/aware differences, parameter validation, pathological
//! times (no advance, backwards, `u64::MAX` gaps), and property loops over
//! random trains from the crate's seeded [`crate::rng::Rng`]: tokens never
//! exceed a bucket, and the bytes marked green by time `t` never exceed
//! `CBS + CIR t` (the token-bucket bound). This file tests the clock and the
//! policer.

pub mod single_rate;
pub mod srtcm;
pub mod trtcm;

use crate::knob::{Knob, KnobName};
use crate::packet::{Color, Packet};
use crate::time::SimTime;
use crate::units::DataRate;
pub use single_rate::SingleRateParams;
pub use srtcm::SrtcmParams;
pub use trtcm::TrtcmParams;

/// A meter: colours each packet of the stream it measures.
pub trait Meter: Send {
    /// Meter a packet of `bytes` bytes (IP size) arriving at `now`, with
    /// pre-colour `pre` (ignored by a colour-blind meter), and return its
    /// colour. Updates the meter's tokens and counters.
    fn meter(&mut self, now: SimTime, bytes: u32, pre: Color) -> Color;
    /// Packets and bytes marked with each colour so far.
    fn counters(&self) -> &MeterCounters;
    /// The parameters of its profile (None: a meter without any).
    fn params(&self) -> Option<MeterParams> {
        None
    }
    /// Change the profile at `now`: the tokens earned at the old rate up
    /// to `now` are credited first; the fraction of a byte earned since
    /// the last whole byte carries over to the new rate's grid, rounded
    /// down; a smaller bucket drops the tokens above its new size. An
    /// invalid profile is refused and the meter left as it was.
    fn set_profile(&mut self, _p: MeterParams, _now: SimTime) -> Result<(), String> {
        Err("this meter has no profile to change".into())
    }
    /// The tokens of its (first) bucket, bytes.
    fn bucket_tokens(&self) -> Option<u64> {
        None
    }
}

/// A meter's parameters, of any of the three kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeterParams {
    SingleRate(SingleRateParams),
    Srtcm(SrtcmParams),
    Trtcm(TrtcmParams),
}

impl MeterParams {
    /// The value of parameter `n` (bit/s or bytes), if this kind has it.
    pub fn get(&self, n: KnobName) -> Option<u64> {
        use KnobName as N;
        Some(match (self, n) {
            (MeterParams::SingleRate(p), N::RateBps) => p.rate.as_bps(),
            (MeterParams::SingleRate(p), N::BurstBytes) => p.burst_size,
            (MeterParams::Srtcm(p), N::CirBps) => p.cir.as_bps(),
            (MeterParams::Srtcm(p), N::CbsBytes) => p.cbs,
            (MeterParams::Srtcm(p), N::EbsBytes) => p.ebs,
            (MeterParams::Trtcm(p), N::PirBps) => p.pir.as_bps(),
            (MeterParams::Trtcm(p), N::PbsBytes) => p.pbs,
            (MeterParams::Trtcm(p), N::CirBps) => p.cir.as_bps(),
            (MeterParams::Trtcm(p), N::CbsBytes) => p.cbs,
            _ => return None,
        })
    }
    /// The parameters with `k` applied; None if this kind has no such one.
    pub fn with(mut self, k: Knob) -> Option<MeterParams> {
        match (&mut self, k) {
            (MeterParams::SingleRate(p), Knob::RateBps(r)) => p.rate = r,
            (MeterParams::SingleRate(p), Knob::BurstBytes(b)) => p.burst_size = b,
            (MeterParams::Srtcm(p), Knob::CirBps(r)) => p.cir = r,
            (MeterParams::Srtcm(p), Knob::CbsBytes(b)) => p.cbs = b,
            (MeterParams::Srtcm(p), Knob::EbsBytes(b)) => p.ebs = b,
            (MeterParams::Trtcm(p), Knob::PirBps(r)) => p.pir = r,
            (MeterParams::Trtcm(p), Knob::PbsBytes(b)) => p.pbs = b,
            (MeterParams::Trtcm(p), Knob::CirBps(r)) => p.cir = r,
            (MeterParams::Trtcm(p), Knob::CbsBytes(b)) => p.cbs = b,
            _ => return None,
        }
        Some(self)
    }
}

/// Colour-blind or colour-aware operation (RFC 2697/2698 Section 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorMode {
    /// The incoming colour is ignored: the stream is taken as uncoloured.
    #[default]
    Blind,
    /// The incoming colour is a pre-colour that the meter may only demote.
    Aware,
}

/// Packets and bytes marked with each colour, indexed by `Color as usize`
/// (DPDK's `rte_mtr_stats` keeps `n_pkts[color]`, `n_bytes[color]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeterCounters {
    pub pkts: [u64; 3],
    pub bytes: [u64; 3],
}

impl MeterCounters {
    pub fn record(&mut self, color: Color, bytes: u32) {
        self.pkts[color as usize] += 1;
        self.bytes[color as usize] += bytes as u64;
    }
}

/// Nanoseconds per second times bits per byte: a rate of `r` bit/s earns
/// `r / NS_BITS` bytes per nanosecond.
const NS_BITS: u64 = 8 * 1_000_000_000;

/// A token rate as an exact fraction: `bytes_per_period` bytes every
/// `period_ns` nanoseconds, the reduced form of `rate / 8e9` bytes per ns
/// (DPDK's `rte_meter_get_tb_params` computes the same pair, in CPU cycles,
/// approximately; here it is exact). Part of a meter's profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenRate {
    rate: DataRate,
    bytes_per_period: u64,
    period_ns: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl TokenRate {
    /// The token rate of `rate`; `None` for a zero rate.
    pub fn new(rate: DataRate) -> Option<TokenRate> {
        let r = rate.as_bps();
        if r == 0 {
            return None;
        }
        let g = gcd(r, NS_BITS);
        Some(TokenRate { rate, bytes_per_period: r / g, period_ns: NS_BITS / g })
    }
    pub fn rate(&self) -> DataRate {
        self.rate
    }
    /// Whole bytes earned every `period_ns()` nanoseconds.
    pub fn bytes_per_period(&self) -> u64 {
        self.bytes_per_period
    }
    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }
}

/// Run-time state of one token generator: when tokens were last credited
/// and the fraction of a byte earned since the last whole byte, in units of
/// `1 / period_ns` byte (always `< period_ns`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenClock {
    last: SimTime,
    carry: u64,
}

impl TokenClock {
    /// A clock whose token grid starts at `start` (the RFCs' time 0).
    pub fn starting_at(start: SimTime) -> TokenClock {
        TokenClock { last: start, carry: 0 }
    }
    /// Whole bytes earned between the last call and `now` at `rate`, with
    /// the remainder carried to the next call. Exact: the bytes earned over
    /// any sequence of calls sum to `floor(rate * (now - start) / 8e9)`.
    /// Nothing is earned if `now` is not after the last call.
    /// The rate changes from `old` to `new` (after an `advance` to the
    /// moment of change): the fraction of a byte carried, `carry / old
    /// period`, becomes `floor(carry new_period / old_period) / new period`.
    pub fn rebase(&mut self, old: &TokenRate, new: &TokenRate) {
        self.carry = (self.carry as u128 * new.period_ns as u128 / old.period_ns as u128) as u64;
    }

    pub fn advance(&mut self, rate: &TokenRate, now: SimTime) -> u128 {
        if now <= self.last {
            return 0;
        }
        let dt = (now.0 - self.last.0) as u128;
        self.last = now;
        // bytes_per_period, dt < 2^64 and carry < 2^33: the sum stays below
        // (2^64 - 1)^2 + 2^33 < 2^128, whatever the gap.
        let acc = self.carry as u128 + rate.bytes_per_period as u128 * dt;
        self.carry = (acc % rate.period_ns as u128) as u64;
        acc / rate.period_ns as u128
    }
}

/// One token bucket's run-time state: its byte tokens and its clock. The
/// rate and the size live in the meter's profile (DPDK's split of profile
/// and state); the three meters share this arithmetic: credit at the rate
/// up to `now`, and on a change of profile credit at the old rate first,
/// carry the fraction of a byte over to the new rate's grid, and drop the
/// tokens above the new size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenBucket {
    tokens: u64,
    clock: TokenClock,
}

impl TokenBucket {
    /// A bucket holding `size` tokens, its grid starting at time 0.
    pub fn full(size: u64) -> TokenBucket {
        TokenBucket { tokens: size, clock: TokenClock::default() }
    }
    /// Byte tokens held.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }
    /// Credit what `rate` earned up to `now`, up to `size`; the credit that
    /// did not fit (RFC 2697's overflow into the E bucket).
    pub fn credit(&mut self, rate: &TokenRate, size: u64, now: SimTime) -> u128 {
        let earned = self.clock.advance(rate, now);
        fill(&mut self.tokens, size, earned)
    }
    /// Take `bytes` tokens if the bucket holds as many (`T(t) - B >= 0`).
    pub fn take(&mut self, bytes: u64) -> bool {
        let ok = self.tokens >= bytes;
        if ok {
            self.tokens -= bytes;
        }
        ok
    }
    /// The profile changes at `now` from rate and size `old` to `new`:
    /// credit at the old rate first (the overflow is returned), rebase the
    /// clock, keep at most the new size.
    pub fn change(&mut self, old: (&TokenRate, u64), new: (&TokenRate, u64), now: SimTime) -> u128 {
        let overflow = self.credit(old.0, old.1, now);
        self.clock.rebase(old.0, new.0);
        self.tokens = self.tokens.min(new.1);
        overflow
    }
}

/// Add `credit` bytes to a bucket of `size` bytes holding `tokens`, up to
/// `size`; return the credit that did not fit (RFC 2697's overflow from
/// the C bucket into the E bucket).
pub(crate) fn fill(tokens: &mut u64, size: u64, credit: u128) -> u128 {
    let room = (size - *tokens) as u128;
    if credit >= room {
        *tokens = size;
        credit - room
    } else {
        *tokens += credit as u64;
        0
    }
}

/// What a policer does with a packet of a given colour (Junos policer
/// actions; the first source document's Section II lists the three options
/// for out-of-profile packets: discard, send to a scavenger-service queue,
/// or keep in the same queue subject to a WRED profile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicerAction {
    /// Forward, carrying its colour (`then loss-priority`): a drop profile
    /// downstream may treat it by colour.
    Transmit,
    /// Drop at the policer (`then discard`): counted as
    /// [`crate::qos::DropReason::Policer`] by whoever calls the policer.
    Discard,
    /// Forward in another forwarding class (`then forwarding-class`):
    /// sets `Packet::fclass`.
    Reclassify(u8),
    /// Forward with another colour (`then loss-priority high` on a yellow
    /// packet: it goes on as red).
    Recolor(Color),
}

/// A meter and one action per colour.
pub struct Policer {
    meter: Box<dyn Meter>,
    /// Indexed by `Color as usize`.
    actions: [PolicerAction; 3],
    discarded_pkts: u64,
    discarded_bytes: u64,
}

impl Policer {
    /// `actions[c]` is applied to packets the meter colours `c`.
    pub fn new(meter: Box<dyn Meter>, actions: [PolicerAction; 3]) -> Policer {
        Policer { meter, actions, discarded_pkts: 0, discarded_bytes: 0 }
    }
    /// Meter `pkt` (its current colour is the pre-colour for a
    /// colour-aware meter), write the colour into it and apply the action:
    /// `Err` gives a discarded packet back.
    pub fn police(&mut self, now: SimTime, mut pkt: Packet) -> Result<Packet, Packet> {
        let c = self.meter.meter(now, pkt.size, pkt.color);
        pkt.color = c;
        match self.actions[c as usize] {
            PolicerAction::Transmit => Ok(pkt),
            PolicerAction::Reclassify(fc) => {
                pkt.fclass = fc;
                Ok(pkt)
            }
            PolicerAction::Recolor(c) => {
                pkt.color = c;
                Ok(pkt)
            }
            PolicerAction::Discard => {
                self.discarded_pkts += 1;
                self.discarded_bytes += pkt.size as u64;
                Err(pkt)
            }
        }
    }
    pub fn counters(&self) -> &MeterCounters {
        self.meter.counters()
    }
    /// The meter's parameters (see [`Meter::params`]).
    pub fn params(&self) -> Option<MeterParams> {
        self.meter.params()
    }
    /// Change the meter's profile at `now` (see [`Meter::set_profile`]).
    pub fn set_profile(&mut self, p: MeterParams, now: SimTime) -> Result<(), String> {
        self.meter.set_profile(p, now)
    }
    /// The tokens of the meter's (first) bucket, bytes.
    pub fn bucket_tokens(&self) -> Option<u64> {
        self.meter.bucket_tokens()
    }
    /// Packets and bytes discarded by the policer.
    pub fn discarded(&self) -> (u64, u64) {
        (self.discarded_pkts, self.discarded_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn token_rates_reduce_exactly() {
        let r = |bps| {
            let t = TokenRate::new(DataRate(bps)).unwrap();
            (t.bytes_per_period(), t.period_ns())
        };
        assert_eq!(r(1_000_000_000), (1, 8)); // 1 Gbit/s: a byte every 8 ns
        assert_eq!(r(10_000_000_000), (5, 4)); // 10 Gbit/s: 5 bytes every 4 ns
        assert_eq!(r(1_000_000), (1, 8_000)); // 1 Mbit/s = 125000 B/s
        assert_eq!(r(3), (3, 8_000_000_000)); // 3 bit/s: no common factor
        // 2^64 - 1 = 3 * 5 * 17 * 257 * 641 * 65537 * 6700417 shares a 5 with 8e9.
        assert_eq!(r(u64::MAX), (u64::MAX / 5, 1_600_000_000));
        assert!(TokenRate::new(DataRate(0)).is_none());
    }

    #[test]
    fn clock_credits_on_the_grid_without_drift() {
        // 3 bit/s: one byte each 8/3 s, i.e. at 2.666.., 5.333.., 8 s.
        let rate = TokenRate::new(DataRate(3)).unwrap();
        let mut c = TokenClock::default();
        assert_eq!(c.advance(&rate, SimTime(2_666_666_666)), 0);
        assert_eq!(c.advance(&rate, SimTime(2_666_666_667)), 1);
        assert_eq!(c.advance(&rate, SimTime(5_333_333_333)), 0);
        assert_eq!(c.advance(&rate, SimTime(5_333_333_334)), 1);
        assert_eq!(c.advance(&rate, SimTime(8_000_000_000)), 1);
        // Same instant, then backwards: nothing.
        assert_eq!(c.advance(&rate, SimTime(8_000_000_000)), 0);
        assert_eq!(c.advance(&rate, SimTime(1)), 0);
        assert_eq!(c.advance(&rate, SimTime(8_000_000_001)), 0);
        // Random steps: the sum is always floor(rate * t / 8e9).
        let mut rng = Rng::stream(11, "meter-clock");
        for &bps in &[1u64, 3, 7_777_777, 1_000_000_000, 9_999_999_967, u64::MAX / 3] {
            let rate = TokenRate::new(DataRate(bps)).unwrap();
            let mut c = TokenClock::default();
            let (mut t, mut sum) = (0u64, 0u128);
            for _ in 0..10_000 {
                t += rng.next_u64() % 100_000;
                sum += c.advance(&rate, SimTime(t));
                assert_eq!(sum, bps as u128 * t as u128 / NS_BITS as u128);
            }
        }
    }

    #[test]
    fn clock_survives_the_longest_gap() {
        let rate = TokenRate::new(DataRate(u64::MAX)).unwrap();
        let mut c = TokenClock::default();
        let got = c.advance(&rate, SimTime(u64::MAX));
        assert_eq!(got, u64::MAX as u128 * u64::MAX as u128 / NS_BITS as u128);
        let mut tokens = 5;
        assert_eq!(fill(&mut tokens, 10, 3), 0);
        assert_eq!(tokens, 8);
        assert_eq!(fill(&mut tokens, 10, got), got - 2);
        assert_eq!(tokens, 10);
    }

    #[test]
    fn policer_applies_the_action_of_the_colour() {
        use super::single_rate::{SingleRate, SingleRateParams};
        // A 1500 B bucket: the first packet is green, the second (same
        // instant) red. Experiment 2 of the first document sends red to the
        // scavenger class; experiment 3 keeps it, marked; a hard policer drops it.
        let meter = || {
            let p = SingleRateParams { rate: DataRate::gbps(1), burst_size: 1500 }.profile().unwrap();
            Box::new(SingleRate::new(p, ColorMode::Blind))
        };
        let t = SimTime::ZERO;
        let mut pol = Policer::new(meter(), [PolicerAction::Transmit, PolicerAction::Transmit, PolicerAction::Reclassify(3)]);
        let a = pol.police(t, Packet::test(0, 1500)).unwrap();
        let b = pol.police(t, Packet::test(0, 1500)).unwrap();
        assert_eq!((a.color, a.fclass, b.color, b.fclass), (Color::Green, 0, Color::Red, 3));
        let mut pol = Policer::new(meter(), [PolicerAction::Transmit, PolicerAction::Transmit, PolicerAction::Discard]);
        assert!(pol.police(t, Packet::test(0, 1500)).is_ok());
        assert_eq!(pol.police(t, Packet::test(0, 1500)).unwrap_err().color, Color::Red);
        assert_eq!(pol.discarded(), (1, 1500));
        assert_eq!(pol.counters().pkts, [1, 0, 1]);
    }
}
