//! Classification at a router: a firewall filter (Junos `firewall family
//! inet filter`, Cisco class-map/ACL) of ordered terms, the first match
//! wins. A term matches on source and destination prefixes, protocol,
//! source and destination port ranges and DSCP values, and may set the
//! forwarding class (the egress queue) and the loss priority, police the
//! packet, or discard it; every term counts what it matched (Junos `count`). Packets matching no term keep their class (0, the
//! default).
//!
//! Policers (`qos::meter`), one meter per term:
//!
//! - single-rate two-colour token bucket (`rate_bps`, `burst_bytes`) whose
//!   out-of-profile (red) packets are discarded, kept with high loss
//!   priority, or moved to another class: the three options of the first
//!   source document, Section II;
//! - RFC 2697 srTCM (`cir`, `cbs`, `ebs`) and RFC 2698 trTCM (`cir`, `cbs`,
//!   `pir`, `pbs`), colour-blind or colour-aware, with an action for yellow
//!   (default transmit) and for red (default discard): Junos's three-colour
//!   policers (`firewall three-color-policer`, `single-rate` / `two-rate`),
//!   whose yellow and red packets go on with loss priority medium-high and
//!   high, which here is the packet's colour for the class's drop profile.
//!   `loss_priority_high` forwards a packet coloured red whatever the meter
//!   said.
//!
//! Green packets are always forwarded. The term counts matches, packets out
//! of profile (yellow or red), discards, and the meter counts its colours.
//!
//! Tests: the prefix arithmetic and first-match order below; hand-worked
//! trains through srTCM and trTCM policers (colour, class, counters);
//! parameter errors with their reason; the policed classes end to end in
//! `tests/qos_pipeline.rs` and the Python scenario tests.

use crate::config::{ColorAction, FilterTermConfig, LossPriority, PolicerConfig};
use crate::error::{ConfigError, Outer};
use crate::packet::{Color, Packet};
use crate::qos::meter::single_rate::{SingleRate, SingleRateParams};
use crate::qos::meter::srtcm::{Srtcm, SrtcmParams};
use crate::qos::meter::trtcm::{Trtcm, TrtcmParams};
use crate::qos::meter::{ColorMode, Meter, Policer, PolicerAction};
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
    pub fn parse(s: &str) -> Result<Prefix, ConfigError> {
        let (a, len) = s.split_once('/').unwrap_or((s, "32"));
        let addr = parse_ipv4(a).ok_or_else(|| ConfigError::new(format!("'{s}' is not an IPv4 prefix")))?;
        let len: u32 = len.parse().ok().filter(|&l| l <= 32).ok_or_else(|| ConfigError::new(format!("'{s}': prefix length must be 0..32")))?;
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
    /// Out of profile (yellow or red) at the term's policer.
    pub out_of_profile_pkts: u64,
    pub discarded_pkts: u64,
}

pub struct Term {
    pub name: String,
    src: Option<Prefix>,
    dst: Option<Prefix>,
    proto: Option<u8>,
    src_port: Option<(u16, u16)>,
    dst_port: Option<(u16, u16)>,
    /// Bit i set: DSCP i matches.
    dscp: Option<u64>,
    loss_priority: Option<Color>,
    fclass: Option<u8>,
    policer: Option<Policer>,
    discard: bool,
    pub counters: TermCounters,
}

pub struct Filter {
    pub terms: Vec<Term>,
}

/// Why a filter kept a packet from going on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discarded {
    /// The term's action is `discard`.
    Term,
    /// Its policer's action for the packet's colour is discard (counted
    /// as [`crate::qos::DropReason::Policer`] at the queue it was bound for).
    Policer,
}

impl Filter {
    /// The filter of the terms `cfg`; an error is located at its term
    /// (`[2].policer.trtcm`).
    pub fn new(cfg: &[FilterTermConfig]) -> Result<Filter, ConfigError> {
        let terms = cfg.iter().enumerate().map(|(i, t)| Term::new(t).outer(i)).collect::<Result<_, _>>()?;
        Ok(Filter { terms })
    }

    /// Classify (and police) `pkt`; `Err` gives back a discarded packet
    /// and why.
    pub fn apply(&mut self, now: SimTime, mut pkt: Packet) -> Result<Packet, (Packet, Discarded)> {
        let Some(term) = self.terms.iter_mut().find(|t| t.matches(&pkt)) else {
            return Ok(pkt);
        };
        term.counters.matched_pkts += 1;
        term.counters.matched_bytes += pkt.size as u64;
        if term.discard {
            term.counters.discarded_pkts += 1;
            return Err((pkt, Discarded::Term));
        }
        if let Some(fc) = term.fclass {
            pkt.fclass = fc;
        }
        if let Some(color) = term.loss_priority {
            pkt.color = color;
        }
        let Some(p) = &mut term.policer else { return Ok(pkt) };
        match p.police(now, pkt) {
            Ok(out) => {
                if out.color != Color::Green {
                    term.counters.out_of_profile_pkts += 1;
                }
                Ok(out)
            }
            Err(out) => {
                term.counters.out_of_profile_pkts += 1;
                term.counters.discarded_pkts += 1;
                Err((out, Discarded::Policer))
            }
        }
    }
}

/// The control plane's access (`control/`): a term's policer, and terms
/// added and removed at run time (a call-admission agent's per-transfer
/// policers, placed before the configured terms).
impl Filter {
    /// Insert a term built from `cfg` at position `at`.
    pub fn insert_term(&mut self, at: usize, cfg: &FilterTermConfig) -> Result<(), ConfigError> {
        let t = Term::new(cfg)?;
        self.terms.insert(at.min(self.terms.len()), t);
        Ok(())
    }
    /// Remove the term named `name`, if any.
    pub fn remove_term(&mut self, name: &str) -> Option<Term> {
        let i = self.terms.iter().position(|t| t.name == name)?;
        Some(self.terms.remove(i))
    }
}

impl Term {
    /// The term's policer, for its knobs.
    pub fn policer_mut(&mut self) -> Option<&mut Policer> {
        self.policer.as_mut()
    }

    fn new(c: &FilterTermConfig) -> Result<Term, ConfigError> {
        let prefix = |p: &Option<String>, key: &str| p.as_deref().map(Prefix::parse).transpose().outer(key);
        let policer = c.policer.as_ref().map(build_policer).transpose().outer("policer")?;
        Ok(Term {
            name: c.name.clone(),
            src: prefix(&c.src, "src")?,
            dst: prefix(&c.dst, "dst")?,
            proto: c.proto,
            src_port: port_range(c.src_port).outer("src_port")?,
            dst_port: port_range(c.dst_port).outer("dst_port")?,
            dscp: c.dscp.as_deref().map(dscp_set).transpose().outer("dscp")?,
            loss_priority: c.loss_priority.map(|l| match l {
                LossPriority::Low => Color::Green,
                LossPriority::High => Color::Red,
            }),
            fclass: c.fclass,
            policer,
            discard: c.discard,
            counters: TermCounters::default(),
        })
    }

    /// Packets the term's meter coloured green, yellow and red (indexed by
    /// `Color as usize`; zeros without a policer).
    pub fn color_pkts(&self) -> [u64; 3] {
        self.policer.as_ref().map_or([0; 3], |p| p.counters().pkts)
    }

    /// Whether `p` matches the term's fields (prefixes, protocol, ports, DSCP).
    pub fn matches(&self, p: &Packet) -> bool {
        self.src.is_none_or(|x| x.contains(p.src_ip))
            && self.dst.is_none_or(|x| x.contains(p.dst_ip))
            && self.proto.is_none_or(|x| x == p.proto)
            && self.src_port.is_none_or(|(lo, hi)| (lo..=hi).contains(&p.src_port))
            && self.dst_port.is_none_or(|(lo, hi)| (lo..=hi).contains(&p.dst_port))
            && self.dscp.is_none_or(|set| set >> p.dscp & 1 == 1)
    }
}

fn port_range(r: Option<(u16, u16)>) -> Result<Option<(u16, u16)>, ConfigError> {
    match r {
        Some((lo, hi)) if lo > hi => Err(ConfigError::new(format!("range [{lo}, {hi}] is empty"))),
        r => Ok(r),
    }
}

/// The set of `codes`; a code out of range is located at its index.
fn dscp_set(codes: &[u8]) -> Result<u64, ConfigError> {
    if codes.is_empty() {
        return Err(ConfigError::new("give at least one code point"));
    }
    codes.iter().enumerate().try_fold(0u64, |set, (i, &d)| {
        if d > 63 {
            Err(ConfigError::at(i, format!("{d} is not a DiffServ code point (0..63)")))
        } else {
            Ok(set | 1 << d)
        }
    })
}

/// The policer of a term: exactly one meter (single-rate, srTCM, trTCM)
/// and an action per colour. A green packet is always transmitted.
fn build_policer(p: &PolicerConfig) -> Result<Policer, ConfigError> {
    let single = p.rate_bps.is_some() || p.burst_bytes.is_some() || p.out_of_profile.is_some();
    let forms = [("rate_bps/burst_bytes/out_of_profile", single), ("srtcm", p.srtcm.is_some()), ("trtcm", p.trtcm.is_some())];
    let given: Vec<&str> = forms.iter().filter(|f| f.1).map(|f| f.0).collect();
    if given.len() != 1 {
        return Err(ConfigError::new(format!("give exactly one meter: rate_bps/burst_bytes/out_of_profile (single rate), srtcm or trtcm; got {}", if given.is_empty() { "none".into() } else { given.join(" and ") })));
    }
    let mode = if p.color_aware { ColorMode::Aware } else { ColorMode::Blind };
    if single {
        if p.color_aware || p.yellow.is_some() || p.red.is_some() {
            return Err(ConfigError::new("color_aware, yellow and red belong to the three-colour meters (srtcm, trtcm); the single-rate policer takes out_of_profile"));
        }
        let (Some(rate), Some(burst), Some(oop)) = (p.rate_bps, p.burst_bytes, p.out_of_profile) else {
            return Err(ConfigError::new("the single-rate policer needs rate_bps, burst_bytes and out_of_profile"));
        };
        let profile = SingleRateParams { rate: DataRate(rate), burst_size: burst }.profile()?;
        let meter = Box::new(SingleRate::new(profile, ColorMode::Blind));
        return Ok(Policer::new(meter, [PolicerAction::Transmit, PolicerAction::Transmit, action(oop)]));
    }
    let meter: Box<dyn Meter> = match (p.srtcm, p.trtcm) {
        (Some(s), _) => {
            let params = SrtcmParams { cir: DataRate(s.cir_bps), cbs: s.cbs_bytes, ebs: s.ebs_bytes };
            Box::new(Srtcm::new(params.profile().outer("srtcm")?, mode))
        }
        (_, Some(t)) => {
            let params = TrtcmParams { pir: DataRate(t.pir_bps), pbs: t.pbs_bytes, cir: DataRate(t.cir_bps), cbs: t.cbs_bytes };
            Box::new(Trtcm::new(params.profile().outer("trtcm")?, mode))
        }
        _ => unreachable!("one form given"),
    };
    let yellow = action(p.yellow.unwrap_or(ColorAction::Transmit));
    let red = action(p.red.unwrap_or(ColorAction::Discard));
    Ok(Policer::new(meter, [PolicerAction::Transmit, yellow, red]))
}

fn action(a: ColorAction) -> PolicerAction {
    match a {
        ColorAction::Transmit => PolicerAction::Transmit,
        ColorAction::Discard => PolicerAction::Discard,
        // Junos `loss-priority high`: the packet goes on coloured red.
        ColorAction::LossPriorityHigh => PolicerAction::Recolor(Color::Red),
        ColorAction::Fclass(fc) => PolicerAction::Reclassify(fc),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(name: &str, src: Option<&str>, fclass: u8) -> FilterTermConfig {
        serde_json::from_value(serde_json::json!({"name": name, "src": src, "fclass": fclass})).unwrap()
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

    #[test]
    fn ports_dscp_and_loss_priority() {
        let t = |v: serde_json::Value| -> FilterTermConfig { serde_json::from_value(v).unwrap() };
        let mut f = Filter::new(&[
            t(serde_json::json!({"name": "voice", "dscp": [46, 34], "fclass": 3})),
            t(serde_json::json!({"name": "gridftp", "proto": 6, "dst_port": [50000, 51000], "fclass": 1, "loss_priority": "high"})),
            t(serde_json::json!({"name": "ssh", "src_port": [22, 22], "fclass": 2})),
        ])
        .unwrap();
        let mut pkt = Packet::test(0, 1000);
        pkt.dscp = 46;
        assert_eq!(f.apply(SimTime::ZERO, pkt).unwrap().fclass, 3);
        pkt.dscp = 0;
        pkt.proto = 6;
        pkt.dst_port = 50_000;
        let out = f.apply(SimTime::ZERO, pkt).unwrap();
        assert_eq!((out.fclass, out.color), (1, Color::Red), "in range, loss priority set high");
        pkt.dst_port = 51_001;
        assert_eq!(f.apply(SimTime::ZERO, pkt).unwrap().fclass, 0, "one past the range");
        pkt.src_port = 22;
        assert_eq!(f.apply(SimTime::ZERO, pkt).unwrap().fclass, 2);
        pkt.proto = 17;
        pkt.src_port = 0;
        pkt.dst_port = 50_500;
        assert_eq!(f.apply(SimTime::ZERO, pkt).unwrap().fclass, 0, "the gridftp term is TCP only");
        let counts: Vec<u64> = f.terms.iter().map(|t| t.counters.matched_pkts).collect();
        assert_eq!(counts, [1, 1, 1]);
        for (bad, why) in [
            (serde_json::json!({"name": "x", "dscp": [64]}), "not a DiffServ code point"),
            (serde_json::json!({"name": "x", "dscp": []}), "at least one"),
            (serde_json::json!({"name": "x", "dst_port": [10, 9]}), "is empty"),
        ] {
            let err = Filter::new(&[t(bad)]).err().unwrap();
            assert!(err.to_string().contains(why), "{err}");
        }
        // A bad code point is located at its index.
        let e = Filter::new(&[t(serde_json::json!({"name": "x", "dscp": [10, 64]}))]).err().unwrap();
        assert_eq!(e.path(), "[0].dscp[1]", "{e}");
        // An unknown loss priority is refused as the term is read, naming the allowed ones.
        let e = serde_json::from_value::<FilterTermConfig>(serde_json::json!({"name": "x", "loss_priority": "medium"})).unwrap_err();
        assert!(e.to_string().contains("unknown variant `medium`, expected `low` or `high`"), "{e}");
    }

    fn policed(policer: serde_json::Value) -> Result<Filter, ConfigError> {
        let t = serde_json::json!({"name": "p", "policer": policer});
        let cfg: FilterTermConfig = serde_json::from_value(t).map_err(|e| ConfigError::new(e.to_string()))?;
        Filter::new(&[cfg])
    }

    /// Colours (and classes) of `n` back-to-back 1000 B packets at time 0.
    fn train(f: &mut Filter, n: usize) -> Vec<Option<(Color, u8)>> {
        (0..n).map(|_| f.apply(SimTime::ZERO, Packet::test(0, 1000)).ok().map(|p| (p.color, p.fclass))).collect()
    }

    #[test]
    fn three_colour_policers_colour_and_act_per_colour() {
        use Color::*;
        // srTCM, CBS 2000 B, EBS 1000 B: two green, one yellow, then red.
        let mut f = policed(serde_json::json!({"srtcm": {"cir_bps": 1_000_000, "cbs_bytes": 2000, "ebs_bytes": 1000},
            "yellow": {"fclass": 3}, "red": "loss_priority_high"})).unwrap();
        assert_eq!(train(&mut f, 4), [Some((Green, 0)), Some((Green, 0)), Some((Yellow, 3)), Some((Red, 0))]);
        assert_eq!(f.terms[0].color_pkts(), [2, 1, 1]);
        assert_eq!((f.terms[0].counters.out_of_profile_pkts, f.terms[0].counters.discarded_pkts), (2, 0));
        // trTCM, PBS 3000, CBS 1000: green, two yellow (recoloured red by
        // loss_priority_high), then red, discarded by default.
        let mut f = policed(serde_json::json!({"trtcm": {"cir_bps": 1_000_000, "cbs_bytes": 1000, "pir_bps": 2_000_000, "pbs_bytes": 3000},
            "yellow": "loss_priority_high"})).unwrap();
        assert_eq!(train(&mut f, 4), [Some((Green, 0)), Some((Red, 0)), Some((Red, 0)), None]);
        assert_eq!(f.terms[0].color_pkts(), [1, 2, 1]);
        assert_eq!(f.terms[0].counters.discarded_pkts, 1);
        // Colour-aware: a packet pre-coloured yellow is never green.
        let mut f = policed(serde_json::json!({"srtcm": {"cir_bps": 1_000_000, "cbs_bytes": 2000, "ebs_bytes": 2000}, "color_aware": true})).unwrap();
        let mut p = Packet::test(0, 1000);
        p.color = Yellow;
        assert_eq!(f.apply(SimTime::ZERO, p).unwrap().color, Yellow);
        assert_eq!(f.apply(SimTime::ZERO, Packet::test(0, 1000)).unwrap().color, Green);
    }

    #[test]
    fn bad_policers_are_rejected_with_a_reason() {
        let err = |v| policed(v).err().expect("rejected").to_string();
        let e = err(serde_json::json!({"trtcm": {"cir_bps": 2_000_000, "cbs_bytes": 1000, "pir_bps": 1_000_000, "pbs_bytes": 3000}}));
        assert!(e.starts_with("[0].policer.trtcm.pir_bps: must be at least cir"), "{e}");
        assert!(err(serde_json::json!({"trtcm": {"cir_bps": 1, "cbs_bytes": 0, "pir_bps": 1, "pbs_bytes": 3000}})).contains("policer.trtcm.cbs_bytes: must be positive"));
        assert!(err(serde_json::json!({"srtcm": {"cir_bps": 1, "cbs_bytes": 0, "ebs_bytes": 0}})).contains("at least one of cbs and ebs"));
        assert!(err(serde_json::json!({"srtcm": {"cir_bps": 0, "cbs_bytes": 1, "ebs_bytes": 0}})).contains("policer.srtcm.cir_bps: must be positive"));
        let e = err(serde_json::json!({"rate_bps": 0, "burst_bytes": 1500, "out_of_profile": "discard"}));
        assert!(e.starts_with("[0].policer.rate_bps: must be positive"), "{e}");
        let both = serde_json::json!({"rate_bps": 1000, "burst_bytes": 1500, "out_of_profile": "discard",
            "srtcm": {"cir_bps": 1, "cbs_bytes": 1, "ebs_bytes": 0}});
        assert!(err(both).contains("exactly one meter"));
        assert!(err(serde_json::json!({})).contains("got none"));
        let e = err(serde_json::json!({"rate_bps": 1000, "burst_bytes": 1500, "out_of_profile": "discard", "yellow": "discard"}));
        assert!(e.contains("three-colour meters"), "{e}");
        assert!(err(serde_json::json!({"rate_bps": 1000, "burst_bytes": 1500})).contains("needs rate_bps, burst_bytes and out_of_profile"));
        assert!(err(serde_json::json!({"srtcm": {"cir_bps": 1, "cbs_bytes": 1, "ebs_bytes": 0}, "red": "drop"})).contains("unknown variant"));
    }
}
