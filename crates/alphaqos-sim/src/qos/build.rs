//! Construction: a queue's configuration (`docs/engine-config.md`) turned
//! into the disciplines of this module, in one place: a link's queue
//! ([`build_on`]), a class's child ([`build_child`]), the classful
//! schedulers (strict priority, WRR, DRR, MDRR), Junos and HTB, and every
//! class's drop profile; and the configuration with the parameters the
//! build fills in written out ([`applied_queue`]).
//!
//! Every error is a [`ConfigError`] located below the queue's
//! configuration (`junos.classes[2].drop_green`), so the caller only adds
//! where the queue is (`links[0].queue_ab`). The mechanisms
//! (`aqm/`, `sched/`, `fq/`, `htb.rs`, `yaqs.rs`) check their own
//! parameters and word their own messages; those are located here at the
//! item that gave the parameters.
//!
//! A class's child is checked from its parameters when the configuration
//! is read and made once, for the class's buffer, when its class is made
//! (no throw-away discipline is built to check it).
//!
//! Tests: `classful.rs` (schedulers, drop profiles, children, by path),
//! `config.rs` (the applied parameters), `tests/qos_pipeline.rs`.

use super::aqm::color_red::{CiscoThresholds, CiscoWredParams, ColorRed, COLOR_KEYS};
use super::aqm::piecewise::{DropCurve, FillMeasure, PiecewiseWred, PiecewiseWredParams};
use super::aqm::red::RedParams;
use super::aqm::rio::{Rio, RioParams};
use super::classful::Kind;
use super::fifo::Limit;
use super::sched::mdrr::{quantum_from_weight, Llq, LlqMode, Mdrr};
use super::sched::{drr::Drr, prio::StrictPriority, wrr::Wrr, BufferSize, ClassSpec, Scheduled, Scheduler};
use super::{aqm, classify, fifo, fq, htb, sched, yaqs, Child, ChildBuilder, DropProfile, LinkQdisc, Qdisc};
use crate::config::{ChildConfig, ClassfulConfig, DropProfileConfig, LowLatency, QueueConfig, RedConfig};
use crate::error::{ConfigError, Outer, Whole};
use crate::units::DataRate;

/// Build a discipline from its configuration, for an interface whose MTU
/// is `mtu` bytes (MDRR derives its quanta from it).
pub fn build(cfg: &QueueConfig, mtu: u32) -> Result<LinkQdisc, ConfigError> {
    build_on(cfg, mtu, None)
}

/// As [`build`], on a link of `rate` if known (a Junos temporal buffer
/// needs it). An error is located below the queue (`red.max_th`).
pub fn build_on(cfg: &QueueConfig, mtu: u32, rate: Option<DataRate>) -> Result<LinkQdisc, ConfigError> {
    use crate::config::QueueConfig::*;
    Ok(LinkQdisc::Dyn(match cfg {
        Fifo(c) => return Ok(LinkQdisc::Fifo(fifo::Fifo::new(fifo::Limit::from_opts(c.limit_pkts, c.limit_bytes)))),
        Red(c) => return Ok(LinkQdisc::Fifo(aqm::red::queue(RedParams::from_config(c).outer("red")?))),
        Junos(c) => Box::new(build_junos(c, mtu, rate).outer("junos")?),
        Htb(c) => Box::new(build_htb(c, mtu).outer("htb")?),
        StrictPriority(c) => Box::new(build_classful(c, Kind::StrictPriority, mtu).outer("strict_priority")?),
        Wrr(c) => Box::new(build_classful(c, Kind::Wrr, mtu).outer("wrr")?),
        Drr(c) => Box::new(build_classful(c, Kind::Drr, mtu).outer("drr")?),
        Mdrr(c) => Box::new(build_classful(c, Kind::Mdrr, mtu).outer("mdrr")?),
        FqCodel(c) => Box::new(fq::fq_codel::FqCodel::new(fq_codel_params(c, None, mtu)).outer("fq_codel")?),
        Sfq(c) => Box::new(fq::sfq::Sfq::new(sfq_params(c, None, mtu)).outer("sfq")?),
        Yaqs(c) => Box::new(yaqs::Yaqs::new(yaqs::params_from_config(c, fifo::Limit::from_opts(c.limit_pkts, c.limit_bytes)).outer("yaqs")?).outer("yaqs")?),
    }))
}

/// Linux's default quantum and CoDel MTU on a link of IP MTU `mtu`: the
/// MTU plus the 14 B Ethernet header (`psched_mtu`), 1514 B on a 1500 B link.
fn psched_mtu(mtu: u32) -> u32 {
    mtu + 14
}

/// A queue's configuration with the parameters the engine fills in when
/// it builds it, written out: FQ-CoDel's and SFQ's absent keys, as a
/// link's queue and as the child of any class (HTB, Junos, strict priority,
/// WRR, DRR, MDRR) on the class's buffer, from the same functions as the
/// build, on a link of MTU `mtu` and rate `rate`: what
/// [`crate::config::applied`] reports. A classful queue that does not
/// build (a bad configuration) leaves its children as given.
pub fn applied_queue(q: &mut QueueConfig, mtu: u32, rate: Option<DataRate>) {
    // Each class's buffer, as the builder makes it.
    let buffers: Option<Vec<fifo::Limit>> = match &*q {
        QueueConfig::Htb(c) => Some(c.classes.iter().map(htb_class_limit).collect()),
        QueueConfig::Junos(c) => build_junos(c, mtu, rate).ok().map(|s| s.class_limits()),
        QueueConfig::StrictPriority(c) => build_classful(c, Kind::StrictPriority, mtu).ok().map(|s| s.class_limits()),
        QueueConfig::Wrr(c) => build_classful(c, Kind::Wrr, mtu).ok().map(|s| s.class_limits()),
        QueueConfig::Drr(c) => build_classful(c, Kind::Drr, mtu).ok().map(|s| s.class_limits()),
        QueueConfig::Mdrr(c) => build_classful(c, Kind::Mdrr, mtu).ok().map(|s| s.class_limits()),
        _ => None,
    };
    let children: Vec<&mut Option<crate::config::ChildConfig>> = match q {
        QueueConfig::FqCodel(c) => return applied_fq_codel(c, None, mtu),
        QueueConfig::Sfq(c) => return applied_sfq(c, None, mtu),
        QueueConfig::Htb(c) => c.classes.iter_mut().map(|k| &mut k.child).collect(),
        QueueConfig::Junos(c) => c.classes.iter_mut().map(|k| &mut k.child).collect(),
        QueueConfig::StrictPriority(c) | QueueConfig::Wrr(c) | QueueConfig::Drr(c) | QueueConfig::Mdrr(c) => {
            c.classes.iter_mut().map(|k| &mut k.child).collect()
        }
        _ => return,
    };
    for (child, buffer) in children.into_iter().zip(buffers.unwrap_or_default()) {
        match child {
            Some(crate::config::ChildConfig::FqCodel(c)) => applied_fq_codel(c, Some(buffer), mtu),
            Some(crate::config::ChildConfig::Sfq(c)) => applied_sfq(c, Some(buffer), mtu),
            _ => {}
        }
    }
}

/// A limit as the configuration's optional keys (`None`: no bound).
fn limit_opts(l: fifo::Limit) -> (Option<u64>, Option<u64>) {
    ((l.pkts != u64::MAX).then_some(l.pkts), (l.bytes != u64::MAX).then_some(l.bytes))
}

/// FQ-CoDel's absent keys filled in, as a link's queue (`class` None) or
/// inside a class whose buffer is `class`.
fn applied_fq_codel(c: &mut crate::config::FqCodelConfig, class: Option<fifo::Limit>, mtu: u32) {
    let p = fq_codel_params(c, class, mtu);
    (c.limit_pkts, c.limit_bytes) = limit_opts(p.limit);
    c.buckets = Some(p.buckets);
    c.quantum_bytes = Some(p.quantum);
    c.target_ns = Some(p.codel.target.as_nanos());
    c.interval_ns = Some(p.codel.interval.as_nanos());
    c.mtu_bytes = Some(p.codel.mtu);
    c.drop_batch = Some(p.drop_batch);
}

/// SFQ's absent keys filled in, as [`applied_fq_codel`].
fn applied_sfq(c: &mut crate::config::SfqConfig, class: Option<fifo::Limit>, mtu: u32) {
    let p = sfq_params(c, class, mtu);
    (c.limit_pkts, c.limit_bytes) = limit_opts(p.limit);
    c.buckets = Some(p.buckets);
    c.quantum_bytes = Some(p.quantum);
}

/// An HTB class's buffer: its limit, 1000 packets unless given (tc's
/// default for the leaf's pfifo is the device's txqueuelen, 1000).
fn htb_class_limit(k: &crate::config::HtbClassConfig) -> fifo::Limit {
    fifo::Limit::from_opts(k.limit_pkts.or(Some(1000)), k.limit_bytes)
}

fn own_limit(pkts: Option<u64>, bytes: Option<u64>) -> Option<fifo::Limit> {
    (pkts.is_some() || bytes.is_some()).then(|| fifo::Limit::from_opts(pkts, bytes))
}

/// FQ-CoDel's parameters from the configuration, as a link's queue
/// (`class` None) or inside a class whose buffer is `class`.
fn fq_codel_params(c: &crate::config::FqCodelConfig, class: Option<fifo::Limit>, mtu: u32) -> fq::fq_codel::FqCodelParams {
    use fq::fq_codel::{FqCodelParams, DEFAULT_LIMIT_PKTS};
    let d = FqCodelParams::default();
    let limit = fq::child_limit(own_limit(c.limit_pkts, c.limit_bytes), class, DEFAULT_LIMIT_PKTS);
    FqCodelParams {
        buckets: c.buckets.unwrap_or(d.buckets),
        quantum: c.quantum_bytes.unwrap_or(psched_mtu(mtu)),
        limit,
        codel: aqm::codel::CodelParams {
            target: c.target_ns.map_or(d.codel.target, crate::time::Duration),
            interval: c.interval_ns.map_or(d.codel.interval, crate::time::Duration),
            mtu: c.mtu_bytes.unwrap_or(psched_mtu(mtu)),
        },
        drop_batch: c.drop_batch.unwrap_or(d.drop_batch),
    }
}

/// Hashed DRR's parameters, as [`fq_codel_params`].
fn sfq_params(c: &crate::config::SfqConfig, class: Option<fifo::Limit>, mtu: u32) -> fq::sfq::SfqParams {
    use fq::sfq::{SfqParams, DEFAULT_LIMIT_PKTS};
    let d = SfqParams::default();
    let limit = fq::child_limit(own_limit(c.limit_pkts, c.limit_bytes), class, DEFAULT_LIMIT_PKTS);
    SfqParams { buckets: c.buckets.unwrap_or(d.buckets), quantum: c.quantum_bytes.unwrap_or(psched_mtu(mtu)), limit }
}

/// A class's child discipline from its configuration, on a link of MTU
/// `mtu`. Its parameters are checked here (errors are located below
/// `child`); the discipline is made once, later, for the class's buffer.
pub fn build_child(c: &ChildConfig, mtu: u32) -> Result<ChildBuilder, ConfigError> {
    child_maker(c, mtu).outer("child")
}

/// The class's buffer is a child's limit: a limit of its own is refused.
fn no_own_limit(pkts: Option<u64>, bytes: Option<u64>) -> Result<(), ConfigError> {
    match (pkts, bytes) {
        (None, None) => Ok(()),
        (Some(_), _) => Err(ConfigError::at("limit_pkts", "not used here: the class buffer is the limit")),
        (None, Some(_)) => Err(ConfigError::at("limit_bytes", "not used here: the class buffer is the limit")),
    }
}

fn child_maker(c: &ChildConfig, mtu: u32) -> Result<ChildBuilder, ConfigError> {
    Ok(match c {
        ChildConfig::Fifo(f) => {
            no_own_limit(f.limit_pkts, f.limit_bytes).outer("fifo")?;
            ChildBuilder::new(|limit| Ok(Box::new(fifo::Fifo::new(limit)) as Box<dyn Qdisc>))
        }
        ChildConfig::Red(r) => {
            no_own_limit(r.limit_pkts, r.limit_bytes).outer("red")?;
            let p = RedParams::from_config(r).outer("red")?;
            ChildBuilder::new(move |limit| Ok(Box::new(aqm::red::queue(RedParams { limit, ..p.clone() })) as Box<dyn Qdisc>))
        }
        ChildConfig::FqCodel(f) => {
            // Any buffer given, the parameters of the class's are these.
            fq_codel_params(f, Some(fifo::Limit::UNLIMITED), mtu).validate().outer("fq_codel")?;
            let f = f.clone();
            ChildBuilder::new(move |limit| Ok(Box::new(fq::fq_codel::FqCodel::new(fq_codel_params(&f, Some(limit), mtu)).outer("fq_codel")?) as Box<dyn Qdisc>))
        }
        ChildConfig::Sfq(f) => {
            sfq_params(f, Some(fifo::Limit::UNLIMITED), mtu).validate().outer("sfq")?;
            let f = f.clone();
            ChildBuilder::new(move |limit| Ok(Box::new(fq::sfq::Sfq::new(sfq_params(&f, Some(limit), mtu)).outer("sfq")?) as Box<dyn Qdisc>))
        }
        ChildConfig::Yaqs(y) => {
            no_own_limit(y.limit_pkts, y.limit_bytes).outer("yaqs")?;
            yaqs::child(y).outer("yaqs")?
        }
    })
}

/// A class's discipline from its `drop_profile` and `child` fields (at most
/// one of them).
fn class_child(drop_profile: Option<Box<dyn DropProfile>>, child: Option<&ChildConfig>, mtu: u32) -> Result<Child, ConfigError> {
    match (drop_profile, child) {
        (Some(_), Some(_)) => Err(ConfigError::at("child", "give a drop profile (a FIFO with that profile) or a child, not both")),
        (p, None) => Ok(Child::Fifo(p)),
        (None, Some(c)) => Ok(Child::Build(build_child(c, mtu)?)),
    }
}

fn build_htb(c: &crate::config::HtbConfig, mtu: u32) -> Result<htb::Htb, ConfigError> {
    use htb::{HtbClassSpec, HtbFilter, HtbParams};
    // Classes in tc order (parents first); filters u32-style, first match wins.
    let mut classes = Vec::with_capacity(c.classes.len());
    for (i, k) in c.classes.iter().enumerate() {
        let mut spec = HtbClassSpec::new(k.name.clone(), k.parent.as_deref(), DataRate(k.rate_bps))
            .prio(k.prio)
            .limit(htb_class_limit(k));
        if let Some(x) = k.ceil_bps {
            spec = spec.ceil(DataRate(x));
        }
        if let Some(x) = k.burst_bytes {
            spec = spec.burst(x);
        }
        if let Some(x) = k.cburst_bytes {
            spec = spec.cburst(x);
        }
        if let Some(x) = k.quantum_bytes {
            spec = spec.quantum(x);
        }
        if let Some(c) = &k.child {
            spec = spec.child(build_child(c, mtu).outer(i).outer("classes")?);
        }
        classes.push(spec);
    }
    let mut params = HtbParams::new(classes);
    for (i, f) in c.filters.iter().enumerate() {
        let prefix = |p: &Option<String>, key: &str| p.as_deref().map(classify::Prefix::parse).transpose().at(key).outer(i).outer("filters");
        params = params.filter(HtbFilter { src: prefix(&f.src, "src")?, dst: prefix(&f.dst, "dst")?, proto: f.proto, class: f.class.clone() });
    }
    if let Some(d) = &c.default_class {
        params = params.default_class(d);
    }
    htb::Htb::new(params)
}

/// A Junos `priority` keyword of the configuration as the scheduler's level.
fn junos_priority(p: crate::config::JunosPriority) -> sched::junos::Priority {
    use crate::config::JunosPriority as P;
    use sched::junos::Priority;
    match p {
        P::StrictHigh => Priority::StrictHigh,
        P::High => Priority::High,
        P::MediumHigh => Priority::MediumHigh,
        P::MediumLow => Priority::MediumLow,
        P::Low => Priority::Low,
    }
}

/// A Junos `excess-priority` keyword as the scheduler's.
fn junos_excess_priority(p: crate::config::JunosExcessPriority) -> sched::junos::ExcessPriority {
    use crate::config::JunosExcessPriority as P;
    use sched::junos::ExcessPriority;
    match p {
        P::High => ExcessPriority::High,
        P::MediumHigh => ExcessPriority::MediumHigh,
        P::MediumLow => ExcessPriority::MediumLow,
        P::Low => ExcessPriority::Low,
        P::None => ExcessPriority::None,
    }
}

fn build_junos(c: &crate::config::JunosConfig, mtu: u32, link_rate: Option<DataRate>) -> Result<sched::Scheduled<sched::junos::Junos>, ConfigError> {
    use aqm::piecewise::{DropCurve, FillMeasure, PiecewiseWred, PiecewiseWredParams};
    use sched::junos::{ExcessSharing, JunosClass, QueueParams, TransmitRate};
    let mut classes = Vec::with_capacity(c.classes.len());
    for (i, k) in c.classes.iter().enumerate() {
        let class = |e: ConfigError| e.with_outer(i).with_outer("classes");
        let at = |key: &str, e: String| class(ConfigError::at(key, e));
        let rate = match (k.transmit_rate_percent, k.transmit_rate_bps, k.transmit_rate_remainder) {
            (Some(p), None, false) => TransmitRate::Percent(p),
            (None, Some(r), false) => TransmitRate::Rate(DataRate(r)),
            (None, None, true) => TransmitRate::Remainder,
            _ => return Err(class(ConfigError::new("give exactly one transmit rate: transmit_rate_percent, transmit_rate_bps or transmit_rate_remainder"))),
        };
        let mut params = QueueParams::new(rate, junos_priority(k.priority));
        if k.exact {
            params = params.exact();
        }
        match (k.burst_bytes, k.meter_window_ns) {
            (Some(_), Some(_)) => return Err(at("meter_window_ns", "give burst_bytes or meter_window_ns, not both".into())),
            (Some(b), None) => params = params.burst_bytes(b),
            (None, Some(w)) => params = params.meter_window(crate::time::Duration(w)),
            (None, None) => {}
        }
        if let Some(x) = k.excess_rate_percent {
            params = params.excess_rate(x);
        }
        if let Some(p) = k.excess_priority {
            params = params.excess_priority(junos_excess_priority(p));
        }
        let buffer_size = match (k.buffer_percent, k.buffer_temporal_ns) {
            (Some(p), None) => sched::BufferSize::Percent(p),
            (None, Some(t)) => sched::BufferSize::Temporal(crate::time::Duration(t)),
            _ => return Err(class(ConfigError::new("give exactly one buffer size: buffer_percent or buffer_temporal_ns"))),
        };
        let curve = |pts: &Option<Vec<(f64, f64)>>, key: &str| pts.as_deref().map(DropCurve::junos).transpose().outer(key).map_err(class);
        let curves = [curve(&k.drop_green, "drop_green")?, None, curve(&k.drop_red, "drop_red")?];
        let drop_profile: Option<Box<dyn DropProfile>> = match (&k.drop_profile, curves.iter().any(Option::is_some)) {
            (Some(_), true) => return Err(at("drop_profile", "give drop_green/drop_red or drop_profile, not both".into())),
            (Some(d), false) => Some(build_drop_profile(d).outer("drop_profile").map_err(class)?),
            (None, true) => {
                let p = PiecewiseWredParams { measure: FillMeasure::JUNOS, curves };
                Some(Box::new(PiecewiseWred::new(p).map_err(class)?))
            }
            (None, false) => None,
        };
        classes.push(JunosClass {
            name: k.name.clone(),
            scheduler: params,
            buffer_size,
            child: class_child(drop_profile, k.child.as_ref(), mtu).map_err(class)?,
        });
    }
    let sharing = match c.excess.unwrap_or_default() {
        crate::config::ExcessSharing::Priority => ExcessSharing::Priority,
        crate::config::ExcessSharing::Proportional => ExcessSharing::Proportional,
    };
    sched::junos::scheduled_on(classes, fifo::Limit::from_opts(c.buffer_pkts, c.buffer_bytes), link_rate, sharing)
}

/// The queue of `c` behind a `kind` scheduler on an interface of MTU `mtu`.
pub fn build_classful(c: &ClassfulConfig, kind: Kind, mtu: u32) -> Result<Scheduled, ConfigError> {
    if c.excess.is_some() {
        return Err(ConfigError::at("excess", format!("only the junos scheduler shares an excess (not {})", kind.as_str())));
    }
    let buffer = Limit::from_opts(c.buffer_pkts, c.buffer_bytes);
    let mut specs = Vec::with_capacity(c.classes.len());
    let mut llq: Option<Llq> = None;
    for (i, k) in c.classes.iter().enumerate() {
        let class = |e: ConfigError| e.with_outer(i).with_outer("classes");
        let set = super::classful::fields_set(k);
        if let Some(f) = set.iter().find(|f| !kind.fields().contains(f)) {
            return Err(class(ConfigError::at(*f, format!("not used by the {} scheduler (it takes: {})", kind.as_str(), kind.fields().join(", ")))));
        }
        if let Some(f) = kind.fields().iter().find(|f| **f != "low_latency" && !set.contains(f)) {
            return Err(class(ConfigError::new(format!("the {} scheduler needs {f}", kind.as_str()))));
        }
        if let Some(mode) = k.low_latency {
            if let Some(other) = llq {
                return Err(class(ConfigError::at("low_latency", format!("only one low-latency queue per interface, classes[{}] is one already", other.class))));
            }
            let mode = match mode {
                LowLatency::Strict => LlqMode::Strict,
                LowLatency::Alternate => LlqMode::Alternate,
            };
            llq = Some(Llq { class: i, mode });
        }
        let limit = BufferSize::Percent(k.buffer_percent).resolve(buffer).outer("buffer_percent").map_err(class)?;
        let profile = k.drop_profile.as_ref().map(build_drop_profile).transpose().outer("drop_profile").map_err(class)?;
        let child = class_child(profile, k.child.as_ref(), mtu).map_err(class)?;
        specs.push(ClassSpec::new(k.name.clone(), limit).with_child(child));
    }
    let total: f64 = c.classes.iter().map(|k| k.buffer_percent).sum();
    if total > 100.0 + 1e-9 {
        return Err(ConfigError::at("classes", format!("buffer_percent adds up to {total} %, more than 100 %")));
    }
    let classes = &c.classes;
    let sched: Box<dyn Scheduler> = match kind {
        Kind::StrictPriority => Box::new(StrictPriority::new(classes.iter().map(|k| k.priority.unwrap()).collect())),
        Kind::Wrr => Box::new(Wrr::new(classes.iter().map(|k| k.weight.unwrap()).collect())?),
        Kind::Drr => Box::new(Drr::new(classes.iter().map(|k| k.quantum_bytes.unwrap()).collect())?),
        Kind::Mdrr => {
            let quanta = classes
                .iter()
                .enumerate()
                .map(|(i, k)| quantum_from_weight(k.weight.unwrap(), mtu).outer("weight").outer(i).outer("classes"))
                .collect::<Result<_, _>>()?;
            Box::new(Mdrr::new(quanta, llq)?)
        }
    };
    Scheduled::new(specs, sched)
}

/// A class's early-drop profile; an error is located below the profile
/// (`rio.in_profile.max_th`).
pub fn build_drop_profile(d: &DropProfileConfig) -> Result<Box<dyn DropProfile>, ConfigError> {
    Ok(match d {
        DropProfileConfig::Curves(per) => {
            let mut curves = [None, None, None];
            for (i, c) in per.as_array().into_iter().enumerate() {
                curves[i] = c.map(|p| DropCurve::junos(p)).transpose().outer(COLOR_KEYS[i]).outer("curves")?;
            }
            if curves.iter().all(Option::is_none) {
                return Err(ConfigError::at("curves", "give a curve for at least one colour"));
            }
            Box::new(PiecewiseWred::new(PiecewiseWredParams { measure: FillMeasure::JUNOS, curves }).outer("curves")?)
        }
        DropProfileConfig::CiscoWred(c) => {
            let t = |x: Option<&crate::config::CiscoThresholdConfig>| x.map(|t| CiscoThresholds { min_th: t.min_th, max_th: t.max_th, max_p: t.max_p });
            let [g, y, r] = c.per_color.as_array();
            let p = CiscoWredParams { per_color: [t(g), t(y), t(r)], exp_weight: c.exp_weight, mean_pkt_bytes: c.mean_pkt_bytes };
            Box::new(ColorRed::cisco(&p).outer("cisco_wred")?)
        }
        DropProfileConfig::Rio(c) => {
            let in_profile = red_curve(&c.in_profile).outer("in_profile").outer("rio")?;
            let out_profile = red_curve(&c.out_profile).outer("out_profile").outer("rio")?;
            Box::new(Rio::new(RioParams { in_profile, out_profile }).outer("rio")?)
        }
        DropProfileConfig::Gred(per) => {
            let mut curves: [Option<RedParams>; 3] = [None, None, None];
            for (i, c) in per.as_array().into_iter().enumerate() {
                curves[i] = c.map(red_curve).transpose().outer(COLOR_KEYS[i]).outer("gred")?;
            }
            Box::new(ColorRed::gred(curves).outer("gred")?)
        }
    })
}

/// RED parameters of one curve of a profile: the class's own buffer is the
/// limit, so the curve may not set one.
fn red_curve(c: &RedConfig) -> Result<RedParams, ConfigError> {
    no_own_limit(c.limit_pkts, c.limit_bytes)?;
    RedParams::from_config(c)
}
