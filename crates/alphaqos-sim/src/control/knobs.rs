//! The knob registry: the names users write (scenario `control` agents,
//! `Simulation.set` in Python; see docs/scenario-reference.md and the
//! catalogue `knob::KNOBS`) mapped to typed [`Knob`]s, with each unit's
//! checks. The only place that matches knob names as strings: components
//! see [`KnobName`] and [`Knob`] values through their typed setters.

use crate::knob::{Knob, KnobName, COLORS};
use crate::packet::Color;
use crate::units::DataRate;

/// Every parameter by the name users write; the drop-profile ones (the
/// only ones that take a colour suffix) listed for every colour.
const NAMES: &[(&str, KnobName)] = {
    use KnobName as N;
    &[
        ("rate_bps", N::RateBps),
        ("burst_bytes", N::BurstBytes),
        ("cir_bps", N::CirBps),
        ("cbs_bytes", N::CbsBytes),
        ("ebs_bytes", N::EbsBytes),
        ("pir_bps", N::PirBps),
        ("pbs_bytes", N::PbsBytes),
        ("min_th", N::MinTh(None)),
        ("max_th", N::MaxTh(None)),
        ("max_p", N::MaxP(None)),
        ("transmit_rate_bps", N::TransmitRateBps),
        ("weight", N::Weight),
        ("quantum_bytes", N::QuantumBytes),
        ("ceil_bps", N::CeilBps),
        ("ctr_bps", N::CtrBps),
        ("pacing_rate_bps", N::PacingRateBps),
        ("cwnd_clamp_bytes", N::CwndClampBytes),
        ("active", N::Active),
    ]
};

/// `n` for every colour, and the colour it addresses.
fn split_colour(n: KnobName) -> (KnobName, Option<Color>) {
    use KnobName as N;
    match n {
        N::MinTh(c) => (N::MinTh(None), c),
        N::MaxTh(c) => (N::MaxTh(None), c),
        N::MaxP(c) => (N::MaxP(None), c),
        n => (n, None),
    }
}

/// The parameter `name` names (`min_th.green`: one colour's curve), or
/// None if it is no knob.
pub fn parse(name: &str) -> Option<KnobName> {
    use KnobName as N;
    let (base, colour) = match name.split_once('.') {
        Some((b, c)) => (b, Some([Color::Green, Color::Yellow, Color::Red][COLORS.iter().position(|x| *x == c)?])),
        None => (name, None),
    };
    let &(_, n) = NAMES.iter().find(|(s, _)| *s == base)?;
    match (n, colour) {
        (n, None) => Some(n),
        (N::MinTh(_), c) => Some(N::MinTh(c)),
        (N::MaxTh(_), c) => Some(N::MaxTh(c)),
        (N::MaxP(_), c) => Some(N::MaxP(c)),
        _ => None,
    }
}

/// The name users write for `n`.
pub fn name(n: KnobName) -> String {
    let (base, colour) = split_colour(n);
    let s = NAMES.iter().find(|(_, m)| *m == base).expect("every parameter is in NAMES").0;
    match colour {
        Some(c) => format!("{s}.{}", COLORS[c as usize]),
        None => s.to_string(),
    }
}

/// Value `v` (the knob's unit, as users and agents write it) as a typed
/// [`Knob`], or why not.
pub fn typed(n: KnobName, v: f64) -> Result<Knob, String> {
    use Knob as K;
    use KnobName as N;
    let whole = || {
        if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64 {
            Ok(v as u64)
        } else {
            Err(format!("{} = {v}: must be a whole, non-negative number", name(n)))
        }
    };
    let rate = || whole().map(DataRate);
    Ok(match n {
        N::RateBps => K::RateBps(rate()?),
        N::BurstBytes => K::BurstBytes(whole()?),
        N::CirBps => K::CirBps(rate()?),
        N::CbsBytes => K::CbsBytes(whole()?),
        N::EbsBytes => K::EbsBytes(whole()?),
        N::PirBps => K::PirBps(rate()?),
        N::PbsBytes => K::PbsBytes(whole()?),
        N::MinTh(c) => K::MinTh(c, v),
        N::MaxTh(c) => K::MaxTh(c, v),
        N::MaxP(c) => K::MaxP(c, v),
        N::TransmitRateBps => K::TransmitRateBps(rate()?),
        N::Weight => K::Weight(whole()?),
        N::QuantumBytes => K::QuantumBytes(whole()?),
        N::CeilBps => K::CeilBps(rate()?),
        // A target rate is truncated to whole bit/s (an agent's share of
        // a reservation need not be whole) and must be at least 1 bit/s.
        N::CtrBps if v >= 1.0 && v <= u64::MAX as f64 => K::CtrBps(DataRate(v as u64)),
        N::CtrBps => return Err(format!("{} = {v}: must be at least 1 bit/s", name(n))),
        N::PacingRateBps => K::PacingRateBps(rate()?),
        N::CwndClampBytes => K::CwndClampBytes(whole()?),
        N::Active => match v {
            0.0 => K::Active(false),
            1.0 => K::Active(true),
            _ => return Err(format!("{} = {v}: must be 1 (on) or 0 (off)", name(n))),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knob::KNOBS;

    #[test]
    fn every_catalogued_name_parses_and_prints_back() {
        for k in KNOBS {
            let n = parse(k.name).unwrap_or_else(|| panic!("{} is in the catalogue but not the registry", k.name));
            assert_eq!(name(n), k.name);
        }
        assert_eq!(parse("max_th.yellow"), Some(KnobName::MaxTh(Some(Color::Yellow))));
        assert_eq!(name(KnobName::MaxP(Some(Color::Red))), "max_p.red");
        assert_eq!(parse("rate_bps.green"), None, "only drop-profile knobs take a colour");
        assert_eq!(parse("max_th.blue"), None);
        assert_eq!(parse("tokens"), None, "a measurement is no knob");
    }

    #[test]
    fn values_are_checked_against_their_unit() {
        assert_eq!(typed(KnobName::CirBps, 1e6), Ok(Knob::CirBps(DataRate(1_000_000))));
        assert!(typed(KnobName::BurstBytes, 1.5).unwrap_err().contains("burst_bytes = 1.5: must be a whole"));
        assert!(typed(KnobName::RateBps, -1.0).is_err());
        assert_eq!(typed(KnobName::CtrBps, 2.7), Ok(Knob::CtrBps(DataRate(2))));
        assert!(typed(KnobName::CtrBps, 0.5).unwrap_err().contains("ctr_bps = 0.5: must be at least 1 bit/s"));
        assert_eq!(typed(KnobName::Active, 0.0), Ok(Knob::Active(false)));
        assert!(typed(KnobName::Active, 0.5).unwrap_err().contains("must be 1 (on) or 0 (off)"));
    }
}
