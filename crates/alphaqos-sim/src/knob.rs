//! Knobs: the vocabulary every component speaks to the control plane (a
//! leaf module: components depend on it, it depends on nothing above them).
//!
//! A component answers [`KnobOp::Get`] with the knob's value and
//! [`KnobOp::Set`] with the value it replaced, in the knob's unit (the
//! catalogue [`KNOBS`]: bit/s, bytes, packets, nanoseconds, a probability
//! or a switch). A knob it does not have is [`KnobError::Unknown`]; a value
//! out of range is [`KnobError::Invalid`] with the reason, and the
//! component is left as it was. Changes apply at `now`: a token bucket is
//! credited at its old rate up to `now` first, as a router that updates a
//! profile does.

use crate::packet::Color;
use crate::time::SimTime;
use crate::units::DataRate;

/// Read a knob, or write it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KnobOp {
    Get,
    Set(f64),
}

#[derive(Clone, Debug, PartialEq)]
pub enum KnobError {
    /// The component has no such knob (or measurement).
    Unknown,
    /// The value is out of range: why.
    Invalid(String),
}

/// `Get`: the value; `Set`: the value replaced.
pub type KnobResult = Result<f64, KnobError>;

/// What a component may look at when a knob changes.
#[derive(Clone, Copy, Debug)]
pub struct KnobCtx {
    pub now: SimTime,
    /// The rate of the link the component feeds (queues only).
    pub link_rate: DataRate,
}

/// The unit of a knob's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// bit/s (scenario: "500Mbps").
    Rate,
    /// bytes (scenario: "31KB").
    Bytes,
    /// packets, fractional for average-queue thresholds.
    Packets,
    /// nanoseconds (scenario: "20ms").
    Time,
    /// a probability in [0, 1].
    Probability,
    /// a count or weight without unit.
    Count,
    /// 1 on, 0 off.
    Switch,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Rate => "rate",
            Unit::Bytes => "bytes",
            Unit::Packets => "packets",
            Unit::Time => "time",
            Unit::Probability => "probability",
            Unit::Count => "count",
            Unit::Switch => "switch",
        }
    }
}

/// One knob of the catalogue.
#[derive(Clone, Copy, Debug)]
pub struct KnobSpec {
    pub name: &'static str,
    pub unit: Unit,
    /// Which components have it, and what it does.
    pub doc: &'static str,
}

const fn k(name: &'static str, unit: Unit, doc: &'static str) -> KnobSpec {
    KnobSpec { name, unit, doc }
}

/// Every knob, by name. A colour suffix (`min_th.green`, `.yellow`, `.red`)
/// addresses one colour's curve of a drop profile; without it the change
/// applies to every colour the profile has.
pub const KNOBS: &[KnobSpec] = &[
    k("rate_bps", Unit::Rate, "policer (single-rate): token rate; HTB class: guaranteed rate"),
    k("burst_bytes", Unit::Bytes, "policer (single-rate): bucket size"),
    k("cir_bps", Unit::Rate, "policer (srTCM, trTCM): committed information rate"),
    k("cbs_bytes", Unit::Bytes, "policer (srTCM, trTCM): committed burst size"),
    k("ebs_bytes", Unit::Bytes, "policer (srTCM): excess burst size"),
    k("pir_bps", Unit::Rate, "policer (trTCM): peak information rate"),
    k("pbs_bytes", Unit::Bytes, "policer (trTCM): peak burst size"),
    k("min_th", Unit::Packets, "drop profile (RED, GRED, Cisco WRED, RIO): minimum threshold, in the profile's unit (packets, or bytes with thresholds_in_bytes)"),
    k("max_th", Unit::Packets, "drop profile: maximum threshold, same unit as min_th"),
    k("max_p", Unit::Probability, "drop profile: drop probability at max_th, in (0, 1]"),
    k("transmit_rate_bps", Unit::Rate, "Junos class: transmit rate (the queue's guaranteed rate)"),
    k("weight", Unit::Count, "WRR class: packets per round"),
    k("quantum_bytes", Unit::Bytes, "DRR or MDRR class: bytes per round (MDRR: Cisco weight w is MTU + (w - 1) 512 B)"),
    k("ceil_bps", Unit::Rate, "HTB class: the rate it may reach by borrowing"),
    k("ctr_bps", Unit::Rate, "TCP connection with base_flow: committed target rate (flow, transfer: every stream gets ctr / streams)"),
    k("pacing_rate_bps", Unit::Rate, "TCP connection: maximum pacing rate (SO_MAX_PACING_RATE), 0 for none (transfer: split over its streams)"),
    k("cwnd_clamp_bytes", Unit::Bytes, "TCP connection: upper bound of the congestion window (Linux snd_cwnd_clamp), 0 for none"),
    k("active", Unit::Switch, "flow: 1 starts it, 0 stops it; workload: 0 stops its arrivals, 1 resumes them"),
];

/// The spec of knob `name` (a colour suffix is ignored).
pub fn spec(name: &str) -> Option<&'static KnobSpec> {
    let base = name.split_once('.').map_or(name, |(b, _)| b);
    KNOBS.iter().find(|s| s.name == base)
}

/// Names of the three colours, indexed by `Color as usize`.
pub const COLORS: [&str; 3] = ["green", "yellow", "red"];

/// A settable parameter, without its value: what a `Get` reads. The
/// colour of a drop-profile knob is `None` for every colour the profile has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobName {
    RateBps,
    BurstBytes,
    CirBps,
    CbsBytes,
    EbsBytes,
    PirBps,
    PbsBytes,
    MinTh(Option<Color>),
    MaxTh(Option<Color>),
    MaxP(Option<Color>),
    TransmitRateBps,
    Weight,
    QuantumBytes,
    CeilBps,
    CtrBps,
    PacingRateBps,
    CwndClampBytes,
    Active,
}

/// A settable parameter with its typed value, checked against its unit
/// (whole bit/s and bytes, a probability in [0, 1], a switch) by the
/// registry in `control/knobs.rs` before any component sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Knob {
    RateBps(DataRate),
    BurstBytes(u64),
    CirBps(DataRate),
    CbsBytes(u64),
    EbsBytes(u64),
    PirBps(DataRate),
    PbsBytes(u64),
    /// Average-queue thresholds, in the profile's unit (packets or bytes).
    MinTh(Option<Color>, f64),
    MaxTh(Option<Color>, f64),
    MaxP(Option<Color>, f64),
    TransmitRateBps(DataRate),
    Weight(u64),
    QuantumBytes(u64),
    CeilBps(DataRate),
    CtrBps(DataRate),
    PacingRateBps(DataRate),
    CwndClampBytes(u64),
    Active(bool),
}

impl Knob {
    /// The parameter this value is for.
    pub fn name(&self) -> KnobName {
        use Knob as K;
        use KnobName as N;
        match *self {
            K::RateBps(_) => N::RateBps,
            K::BurstBytes(_) => N::BurstBytes,
            K::CirBps(_) => N::CirBps,
            K::CbsBytes(_) => N::CbsBytes,
            K::EbsBytes(_) => N::EbsBytes,
            K::PirBps(_) => N::PirBps,
            K::PbsBytes(_) => N::PbsBytes,
            K::MinTh(c, _) => N::MinTh(c),
            K::MaxTh(c, _) => N::MaxTh(c),
            K::MaxP(c, _) => N::MaxP(c),
            K::TransmitRateBps(_) => N::TransmitRateBps,
            K::Weight(_) => N::Weight,
            K::QuantumBytes(_) => N::QuantumBytes,
            K::CeilBps(_) => N::CeilBps,
            K::CtrBps(_) => N::CtrBps,
            K::PacingRateBps(_) => N::PacingRateBps,
            K::CwndClampBytes(_) => N::CwndClampBytes,
            K::Active(_) => N::Active,
        }
    }
}
