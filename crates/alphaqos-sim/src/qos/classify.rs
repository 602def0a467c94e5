//! Classification at a router: a firewall filter (Junos `firewall family
//! inet filter`, Cisco class-map/ACL) of ordered terms, the first match
//! wins. A term matches on source and destination prefixes and protocol,
//! and may set the forwarding class (the egress queue), police the packet
//! (a single-rate two-colour token bucket whose out-of-profile packets are
//! discarded, kept with high loss priority, or moved to another class: the
//! three options of the first source document, Section II), or discard it.
//! Packets matching no term keep their class (0, the default).
//!
//! Tests: the prefix arithmetic and first-match order below; the policed
//! classes are exercised end to end by the scenario tests.

use crate::config::{FilterTermConfig, OutOfProfile};
use crate::packet::{Color, Packet};
use crate::qos::meter::single_rate::{SingleRate, SingleRateParams};
use crate::qos::meter::{ColorMode, Policer, PolicerAction};
use crate::time::SimTime;
use crate::topology::parse_ipv4;
use crate::units::DataRate;

/// An IPv4 prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    addr: u32,
    mask: u32,
}

impl Prefix {
    /// "a.b.c.d/len" (or a bare address, /32).
    pub fn parse(s: &str) -> Result<Prefix, String> {
        let (a, len) = s.split_once('/').unwrap_or((s, "32"));
        let addr = parse_ipv4(a).ok_or_else(|| format!("'{s}' is not an IPv4 prefix"))?;
        let len: u32 = len.parse().ok().filter(|&l| l <= 32).ok_or_else(|| format!("'{s}': prefix length must be 0..32"))?;
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        Ok(Prefix { addr: addr & mask, mask })
    }
    pub fn contains(&self, ip: u32) -> bool {
        ip & self.mask == self.addr
    }
}

/// Counters of one term.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TermCounters {
    pub matched_pkts: u64,
    pub matched_bytes: u64,
    /// Out of profile at the term's policer.
    pub out_of_profile_pkts: u64,
    pub discarded_pkts: u64,
}

pub struct Term {
    pub name: String,
    src: Option<Prefix>,
    dst: Option<Prefix>,
    proto: Option<u8>,
    fclass: Option<u8>,
    policer: Option<Policer>,
    discard: bool,
    pub counters: TermCounters,
}

pub struct Filter {
    pub terms: Vec<Term>,
}

impl Filter {
    pub fn new(cfg: &[FilterTermConfig]) -> Result<Filter, String> {
        let terms = cfg
            .iter()
            .enumerate()
            .map(|(i, t)| Term::new(t).map_err(|e| format!("filter[{i}] ({}): {e}", t.name)))
            .collect::<Result<_, _>>()?;
        Ok(Filter { terms })
    }

    /// Classify (and police) `pkt`; `Err` gives back a discarded packet.
    pub fn apply(&mut self, now: SimTime, mut pkt: Packet) -> Result<Packet, Packet> {
        let Some(term) = self.terms.iter_mut().find(|t| t.matches(&pkt)) else {
            return Ok(pkt);
        };
        term.counters.matched_pkts += 1;
        term.counters.matched_bytes += pkt.size as u64;
        if term.discard {
            term.counters.discarded_pkts += 1;
            return Err(pkt);
        }
        if let Some(fc) = term.fclass {
            pkt.fclass = fc;
        }
        let Some(p) = &mut term.policer else { return Ok(pkt) };
        let policed = p.police(now, pkt);
        match &policed {
            Ok(out) if out.color == Color::Green => {}
            Ok(_) => term.counters.out_of_profile_pkts += 1,
            Err(_) => {
                term.counters.out_of_profile_pkts += 1;
                term.counters.discarded_pkts += 1;
            }
        }
        policed
    }
}

impl Term {
    fn new(c: &FilterTermConfig) -> Result<Term, String> {
        let prefix = |p: &Option<String>| p.as_deref().map(Prefix::parse).transpose();
        let policer = match &c.policer {
            None => None,
            Some(p) => {
                let profile = SingleRateParams { rate: DataRate(p.rate_bps), burst_size: p.burst_bytes }.profile()?;
                let red = match p.out_of_profile {
                    OutOfProfile::Discard => PolicerAction::Discard,
                    OutOfProfile::LossPriorityHigh => PolicerAction::Transmit,
                    OutOfProfile::Fclass(fc) => PolicerAction::Reclassify(fc),
                };
                let meter = Box::new(SingleRate::new(profile, ColorMode::Blind));
                Some(Policer::new(meter, [PolicerAction::Transmit, PolicerAction::Transmit, red]))
            }
        };
        Ok(Term {
            name: c.name.clone(),
            src: prefix(&c.src)?,
            dst: prefix(&c.dst)?,
            proto: c.proto,
            fclass: c.fclass,
            policer,
            discard: c.discard,
            counters: TermCounters::default(),
        })
    }

    fn matches(&self, p: &Packet) -> bool {
        self.src.is_none_or(|x| x.contains(p.src_ip))
            && self.dst.is_none_or(|x| x.contains(p.dst_ip))
            && self.proto.is_none_or(|x| x == p.proto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(name: &str, src: Option<&str>, fclass: u8) -> FilterTermConfig {
        FilterTermConfig {
            name: name.into(),
            src: src.map(String::from),
            dst: None,
            proto: None,
            fclass: Some(fclass),
            policer: None,
            discard: false,
        }
    }

    #[test]
    fn prefixes() {
        let p = Prefix::parse("10.0.2.0/24").unwrap();
        assert!(p.contains(parse_ipv4("10.0.2.77").unwrap()));
        assert!(!p.contains(parse_ipv4("10.0.3.1").unwrap()));
        assert!(Prefix::parse("0.0.0.0/0").unwrap().contains(12345));
        assert_eq!(Prefix::parse("10.0.2.9").unwrap(), Prefix::parse("10.0.2.9/32").unwrap());
        assert!(Prefix::parse("10.0.2.0/33").is_err() && Prefix::parse("10.0.2/24").is_err());
    }

    #[test]
    fn first_matching_term_wins_and_counts() {
        let mut f = Filter::new(&[term("narrow", Some("10.0.2.1/32"), 2), term("wide", Some("10.0.2.0/24"), 1)]).unwrap();
        let mut pkt = Packet::test(0, 1000);
        pkt.src_ip = parse_ipv4("10.0.2.1").unwrap();
        assert_eq!(f.apply(SimTime::ZERO, pkt).unwrap().fclass, 2);
        pkt.src_ip = parse_ipv4("10.0.2.5").unwrap();
        assert_eq!(f.apply(SimTime::ZERO, pkt).unwrap().fclass, 1);
        pkt.src_ip = parse_ipv4("10.9.9.9").unwrap();
        assert_eq!(f.apply(SimTime::ZERO, pkt).unwrap().fclass, 0, "no match: default class");
        assert_eq!((f.terms[0].counters.matched_pkts, f.terms[1].counters.matched_pkts), (1, 1));
    }
}
