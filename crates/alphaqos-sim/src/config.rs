//! The resolved configuration the engine runs: plain data, base units only
//! (ns, bit/s, bytes). The Python front produces it from a scenario file; see
//! docs/engine-config.md. Semantic checks that need the whole topology
//! (unknown node, unreachable destination) happen in `Simulation::new`.

use serde::{Deserialize, Serialize};

/// A choice among fixed spellings, as a serde enum: the spelling is the
/// wire form both ways, and an unknown one is refused by serde with the
/// allowed ones listed ("unknown variant `x`, expected one of ..."). It
/// compares equal to its spelling (`cfg.cc == "reno"`) and displays as it.
macro_rules! choice {
    ($(#[$meta:meta])* $name:ident default $default:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }
        impl $name {
            /// Every spelling, in declaration order.
            pub const ALL: &'static [&'static str] = &[$($text),+];
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }
        impl Default for $name {
            fn default() -> Self {
                $name::$default
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

choice! {
    /// A TCP congestion control (`tcp/cc/`).
    Cc default NewReno { NewReno = "newreno", Reno = "reno", Cubic = "cubic", Htcp = "htcp", Bic = "bic", HighSpeed = "highspeed", BaseFlow = "base_flow" }
}

choice! {
    /// How the RTO follows from the RTT estimates: "linux" (RTO = SRTT +
    /// max(4 RTTVAR, min_rto)) or "rfc6298" (RTO = max(min_rto, SRTT +
    /// 4 RTTVAR)).
    RtoStyle default Linux { Linux = "linux", Rfc6298 = "rfc6298" }
}

choice! {
    /// A bundle of host behaviours (`tcp/linux.rs`, `tcp/ns2.rs`).
    HostProfile default Default { Default = "default", Linux2633 = "linux-2.6.33", Linux6 = "linux-6", Ns2 = "ns2" }
}

choice! {
    /// How a transfer's bytes go to its streams.
    Striping default Static { Static = "static", Dynamic = "dynamic" }
}

choice! {
    /// What YAQS's fast-queue estimate counts (`qos/yaqs.rs`).
    YaqsCounter default Two { Two = "two", Combined = "combined" }
}

choice! {
    /// How YAQS knows the slow queue's per-flow bytes.
    SlowCounts default Exact { Exact = "exact", Approximate = "approximate" }
}

choice! {
    /// A firewall term's loss priority: "low" (green) or "high" (red).
    LossPriority default Low { Low = "low", High = "high" }
}

choice! {
    /// A Junos queue's `priority`.
    JunosPriority default Low { StrictHigh = "strict-high", High = "high", MediumHigh = "medium-high", MediumLow = "medium-low", Low = "low" }
}

choice! {
    /// A Junos queue's `excess-priority`.
    JunosExcessPriority default None { High = "high", MediumHigh = "medium-high", MediumLow = "medium-low", Low = "low", None = "none" }
}

choice! {
    /// How Junos queues above their transmit rates share the excess.
    ExcessSharing default Priority { Priority = "priority", Proportional = "proportional" }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub name: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub duration_ns: u64,
    #[serde(default = "default_interval")]
    pub metric_interval_ns: u64,
    pub nodes: Vec<NodeConfig>,
    #[serde(default)]
    pub links: Vec<LinkConfig>,
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    /// Traffic that opens connections at run time (see `workload/`).
    #[serde(default)]
    pub workloads: Vec<WorkloadConfig>,
    /// Control agents (see `control/`).
    #[serde(default)]
    pub control: Vec<AgentConfig>,
    /// Where the links' pcap taps are written (default: as given).
    #[serde(default)]
    pub tap_dir: Option<String>,
}

fn default_seed() -> u64 {
    1
}
fn default_interval() -> u64 {
    100_000_000
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    #[serde(default)]
    pub router: bool,
    #[serde(default)]
    pub address: Option<String>,
    /// A router's firewall filter, applied to every packet it forwards
    /// (first matching term wins).
    #[serde(default)]
    pub filter: Vec<FilterTermConfig>,
}

/// One term of a firewall filter (Junos `term`: `from` conditions, `then` actions).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FilterTermConfig {
    pub name: String,
    /// Source and destination prefixes, "a.b.c.d/len".
    #[serde(default)]
    pub src: Option<String>,
    #[serde(default)]
    pub dst: Option<String>,
    #[serde(default)]
    pub proto: Option<u8>,
    /// Port ranges, inclusive: [low, high].
    #[serde(default)]
    pub src_port: Option<(u16, u16)>,
    #[serde(default)]
    pub dst_port: Option<(u16, u16)>,
    /// DiffServ code points, any of.
    #[serde(default)]
    pub dscp: Option<Vec<u8>>,
    /// Set the loss priority (colour) before any policer: "low" (green) or
    /// "high" (red), Junos `then loss-priority`.
    #[serde(default)]
    pub loss_priority: Option<LossPriority>,
    /// Set the forwarding class (the egress queue index).
    #[serde(default)]
    pub fclass: Option<u8>,
    #[serde(default)]
    pub policer: Option<PolicerConfig>,
    #[serde(default)]
    pub discard: bool,
}

/// A policer: exactly one meter, and what it does per colour.
///
/// - single-rate two-colour (the first source document's): `rate_bps`,
///   `burst_bytes` and `out_of_profile`, the action for red packets;
/// - RFC 2697 srTCM: `srtcm`, or RFC 2698 trTCM: `trtcm`, each with
///   `color_aware` and the actions `yellow` (default transmit) and `red`
///   (default discard).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicerConfig {
    pub rate_bps: Option<u64>,
    pub burst_bytes: Option<u64>,
    /// "discard", "loss_priority_high" (keep, coloured red) or
    /// {"fclass": n} (reclassify, e.g. to a scavenger queue).
    pub out_of_profile: Option<ColorAction>,
    pub srtcm: Option<SrtcmConfig>,
    pub trtcm: Option<TrtcmConfig>,
    /// Three-colour meters only: take the packet's colour as its pre-colour.
    pub color_aware: bool,
    pub yellow: Option<ColorAction>,
    pub red: Option<ColorAction>,
}

/// RFC 2697 parameters: committed rate, committed and excess burst sizes.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SrtcmConfig {
    pub cir_bps: u64,
    pub cbs_bytes: u64,
    pub ebs_bytes: u64,
}

/// RFC 2698 parameters: committed and peak rates and burst sizes.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TrtcmConfig {
    pub cir_bps: u64,
    pub cbs_bytes: u64,
    pub pir_bps: u64,
    pub pbs_bytes: u64,
}

/// What a policer does with the packets of one colour.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ColorAction {
    /// Forward with the colour the meter gave.
    Transmit,
    Discard,
    /// Forward coloured red (Junos `loss-priority high`).
    LossPriorityHigh,
    /// Forward in another forwarding class.
    Fclass(u8),
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub a: String,
    pub b: String,
    pub rate_bps: u64,
    pub delay_ns: u64,
    #[serde(default = "default_mtu")]
    pub mtu_bytes: u32,
    /// Bytes each frame adds on the wire beyond the IP packet.
    #[serde(default = "default_overhead")]
    pub overhead_bytes: u32,
    #[serde(default)]
    pub queue_ab: QueueConfig,
    #[serde(default)]
    pub queue_ba: QueueConfig,
    /// Random loss and reordering on the wire, per direction.
    #[serde(default)]
    pub impair_ab: Impairment,
    #[serde(default)]
    pub impair_ba: Impairment,
    /// Count reorderings and the queue length at arrivals (`monitor.rs`).
    #[serde(default)]
    pub monitor_ab: bool,
    #[serde(default)]
    pub monitor_ba: bool,
    /// Write what the direction sends to this pcap file (`tap.rs`),
    /// relative to `tap_dir`.
    #[serde(default)]
    pub tap_ab: Option<String>,
    #[serde(default)]
    pub tap_ba: Option<String>,
}

/// What the wire does to packets after they leave the queue: each is lost
/// with probability `loss`; a fraction `reorder_fraction` arrives late by
/// `reorder_by` positions (its own serialization time, `reorder_by` times
/// over: the place it would take behind that many back-to-back frames).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Impairment {
    pub loss: f64,
    pub reorder_fraction: f64,
    pub reorder_by: u32,
}

impl Impairment {
    /// Whether the wire loses packets at all.
    #[inline(always)]
    pub fn loses(&self) -> bool {
        self.loss > 0.0
    }

    /// Whether the wire reorders packets at all.
    #[inline(always)]
    pub fn reorders(&self) -> bool {
        self.reorder_by > 0 && self.reorder_fraction > 0.0
    }

    /// A problem is located at its field (`loss`).
    pub fn validate(&self) -> Result<(), crate::error::ConfigError> {
        use crate::error::ConfigError;
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(ConfigError::at("loss", format!("must be in [0, 1], got {}", self.loss)));
        }
        if !(0.0..=1.0).contains(&self.reorder_fraction) {
            return Err(ConfigError::at("reorder_fraction", format!("must be in [0, 1], got {}", self.reorder_fraction)));
        }
        Ok(())
    }
    pub fn is_none(&self) -> bool {
        self.loss == 0.0 && (self.reorder_fraction == 0.0 || self.reorder_by == 0)
    }
}

fn default_mtu() -> u32 {
    1500
}

/// Ethernet on the wire, per frame: preamble 7 + SFD 1 + header 14 + FCS 4
/// + inter-frame gap 12 bytes (IEEE 802.3, clauses 3 and 4): what a 10
/// Gbit/s port spends beyond the IP packet.
pub const ETHERNET_OVERHEAD_BYTES: u32 = 38;

fn default_overhead() -> u32 {
    ETHERNET_OVERHEAD_BYTES
}

/// One queue discipline; exactly one key in the JSON object.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    Fifo(FifoConfig),
    Red(RedConfig),
    Junos(JunosConfig),
    Htb(HtbConfig),
    /// Class queues behind one of the schedulers of `qos/sched/`; the
    /// class fields each one needs are listed on [`ClassfulClassConfig`].
    StrictPriority(ClassfulConfig),
    Wrr(ClassfulConfig),
    Drr(ClassfulConfig),
    Mdrr(ClassfulConfig),
    /// YAQS local flow separation (`qos/yaqs.rs`).
    Yaqs(YaqsConfig),
    /// FQ-CoDel (`qos/fq/fq_codel.rs`).
    FqCodel(FqCodelConfig),
    /// Hashed DRR, SFQ-like (`qos/fq/sfq.rs`).
    Sfq(SfqConfig),
}

/// FQ-CoDel's parameters; each absent one takes Linux's default: limit
/// 10240 packets (as a link's queue; a class's buffer as a class's child),
/// 1024 buckets, quantum and CoDel MTU the link MTU + 14 B (1514 B on a
/// 1500 B link), target 5 ms, interval 100 ms, drop batch 64 packets.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FqCodelConfig {
    pub limit_pkts: Option<u64>,
    pub limit_bytes: Option<u64>,
    pub buckets: Option<u32>,
    pub quantum_bytes: Option<u32>,
    pub target_ns: Option<u64>,
    pub interval_ns: Option<u64>,
    pub mtu_bytes: Option<u32>,
    pub drop_batch: Option<u32>,
}

/// Hashed DRR's parameters; absent ones take Linux sfq's defaults: limit
/// 127 packets (a class's buffer as a class's child), 1024 buckets,
/// quantum the link MTU + 14 B.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SfqConfig {
    pub limit_pkts: Option<u64>,
    pub limit_bytes: Option<u64>,
    pub buckets: Option<u32>,
    pub quantum_bytes: Option<u32>,
}

/// The discipline inside a class (exactly one key), made for the class's
/// buffer: `fifo` (the default), `red` (its `limit_*` not allowed: the
/// class buffer is the limit), `fq_codel`, `sfq`. A class's
/// `drop_profile` is a FIFO with that profile, so it excludes `child`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ChildConfig {
    Fifo(FifoConfig),
    Red(RedConfig),
    FqCodel(FqCodelConfig),
    Sfq(SfqConfig),
    /// YAQS on the class's buffer (its `limit_*` is the class's).
    Yaqs(YaqsConfig),
}

/// YAQS's parameters (Liberatore, "Local Flow Separation", Algorithms 1-2):
/// thresholds in bytes (signed so that a negative one is refused by name),
/// the slow queue's weight `r`, the Count-Sketch's size, and each queue's
/// limit (unlimited by default).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct YaqsConfig {
    #[serde(default)]
    pub limit_pkts: Option<u64>,
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    #[serde(default = "default_c_f")]
    pub c_f_bytes: i64,
    #[serde(default)]
    pub c_s_bytes: i64,
    #[serde(default = "default_yaqs_r")]
    pub r: f64,
    #[serde(default = "default_sketch_rows")]
    pub sketch_rows: u32,
    #[serde(default = "default_sketch_buckets")]
    pub sketch_buckets: u32,
    #[serde(default = "yes")]
    pub inflate: bool,
    /// "two" (the document's) or "combined".
    #[serde(default)]
    pub counter: YaqsCounter,
    /// "exact" (the document's) or "approximate".
    #[serde(default)]
    pub slow_counts: SlowCounts,
    /// Measure false positives (Definitions 3 and 4) with this epsilon.
    #[serde(default)]
    pub epsilon: Option<f64>,
}

fn default_c_f() -> i64 {
    16_500
}
fn default_yaqs_r() -> f64 {
    0.5
}
fn default_sketch_rows() -> u32 {
    3
}
fn default_sketch_buckets() -> u32 {
    32
}

/// The interface buffer and one queue per forwarding class, in class-index
/// order, behind a scheduler: the Junos one (`C` = [`JunosClassConfig`]) or
/// strict priority, WRR, DRR, MDRR ([`ClassfulClassConfig`]).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClassfulConfig<C = ClassfulClassConfig> {
    #[serde(default)]
    pub buffer_pkts: Option<u64>,
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    /// Junos only: how queues above their transmit rates share the excess,
    /// `priority` (default) or `proportional` (MX Trio).
    #[serde(default)]
    pub excess: Option<ExcessSharing>,
    pub classes: Vec<C>,
}

/// One class. Which scheduler uses which field (a field the scheduler does
/// not use is an error): `priority` (strict_priority: level, larger first),
/// `weight` (wrr: packets per round; mdrr: Cisco weight 1..=2048, the
/// quantum is `MTU + (weight - 1) 512` bytes on the link's MTU),
/// `quantum_bytes` (drr), `low_latency` (mdrr, at most one class).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClassfulClassConfig {
    pub name: String,
    /// Percent of the interface buffer (strictly partitioned).
    pub buffer_percent: f64,
    #[serde(default)]
    pub priority: Option<u32>,
    #[serde(default)]
    pub weight: Option<u32>,
    #[serde(default)]
    pub quantum_bytes: Option<u64>,
    #[serde(default)]
    pub low_latency: Option<LowLatency>,
    #[serde(default)]
    pub drop_profile: Option<DropProfileConfig>,
    #[serde(default)]
    pub child: Option<ChildConfig>,
}

/// MDRR's low-latency queue mode (Cisco 12000 `queue low-latency
/// strict-priority` / `alternate-priority`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LowLatency {
    Strict,
    Alternate,
}

/// A class's early-drop profile (exactly one key), see `qos/aqm/wred.rs`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DropProfileConfig {
    /// Junos interpolated drop curves per colour: (fill %, drop %) points
    /// on the queue's instantaneous fill in bytes.
    Curves(PerColor<Vec<(f64, f64)>>),
    /// Cisco WRED: thresholds per colour on one average queue in packets.
    CiscoWred(CiscoWredConfig),
    /// RED with In and Out (Clark & Fang): green is In, yellow and red Out.
    Rio(RioConfig),
    /// Linux GRED (WRED mode): RED parameters per drop precedence (colour)
    /// on one shared average.
    Gred(PerColor<RedConfig>),
}

/// One optional value per colour.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PerColor<T> {
    #[serde(default = "none")]
    pub green: Option<T>,
    #[serde(default = "none")]
    pub yellow: Option<T>,
    #[serde(default = "none")]
    pub red: Option<T>,
}

fn none<T>() -> Option<T> {
    None
}

impl<T> PerColor<T> {
    /// Indexed by `Color as usize`.
    pub fn as_array(&self) -> [Option<&T>; 3] {
        [self.green.as_ref(), self.yellow.as_ref(), self.red.as_ref()]
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CiscoWredConfig {
    /// Exponential weighting constant n: the average weight is 2^-n.
    #[serde(default = "default_exp_weight")]
    pub exp_weight: u32,
    #[serde(default = "default_mean_pkt")]
    pub mean_pkt_bytes: u32,
    /// Thresholds per colour, as `{"green": .., "yellow": .., "red": ..}`.
    pub per_color: PerColor<CiscoThresholdConfig>,
}

fn default_exp_weight() -> u32 {
    9
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CiscoThresholdConfig {
    /// Thresholds in packets; `max_p` is 1 / mark probability denominator.
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
}

/// RIO's two RED curves; their `limit_*` must be unset (the class buffer applies).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RioConfig {
    pub in_profile: RedConfig,
    pub out_profile: RedConfig,
}

/// Linux HTB on a host's egress (see `qos/htb.rs`): classes in tc order
/// (parents first), u32-style filters, an optional default class.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HtbConfig {
    pub classes: Vec<HtbClassConfig>,
    #[serde(default)]
    pub filters: Vec<HtbFilterConfig>,
    #[serde(default)]
    pub default_class: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HtbClassConfig {
    pub name: String,
    #[serde(default)]
    pub parent: Option<String>,
    pub rate_bps: u64,
    #[serde(default)]
    pub ceil_bps: Option<u64>,
    #[serde(default)]
    pub burst_bytes: Option<u64>,
    #[serde(default)]
    pub cburst_bytes: Option<u64>,
    #[serde(default)]
    pub quantum_bytes: Option<u64>,
    #[serde(default)]
    pub prio: u8,
    #[serde(default)]
    pub limit_pkts: Option<u64>,
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    /// A leaf's discipline (default a FIFO of the leaf's limit).
    #[serde(default)]
    pub child: Option<ChildConfig>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HtbFilterConfig {
    #[serde(default)]
    pub src: Option<String>,
    #[serde(default)]
    pub dst: Option<String>,
    #[serde(default)]
    pub proto: Option<u8>,
    pub class: String,
}

/// A Junos-style egress: the interface buffer, and one queue per forwarding
/// class in class-index order (see `qos/sched/junos.rs`).
pub type JunosConfig = ClassfulConfig<JunosClassConfig>;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JunosClassConfig {
    pub name: String,
    /// Exactly one of a percent of the link, an absolute rate, or the remainder.
    #[serde(default)]
    pub transmit_rate_percent: Option<f64>,
    #[serde(default)]
    pub transmit_rate_bps: Option<u64>,
    #[serde(default)]
    pub transmit_rate_remainder: bool,
    pub priority: JunosPriority,
    #[serde(default)]
    pub exact: bool,
    /// Percent of the interface buffer (strictly partitioned), or
    /// `buffer_temporal_ns`: the bytes the transmit rate sends in that time.
    #[serde(default)]
    pub buffer_percent: Option<f64>,
    #[serde(default)]
    pub buffer_temporal_ns: Option<u64>,
    /// Meter depth: bytes, or the transmit rate times a window.
    #[serde(default)]
    pub burst_bytes: Option<u64>,
    #[serde(default)]
    pub meter_window_ns: Option<u64>,
    /// `excess-rate percent` (needs `excess: proportional`) and
    /// `excess-priority` (high, medium-high, medium-low, low, none).
    #[serde(default)]
    pub excess_rate_percent: Option<f64>,
    #[serde(default)]
    pub excess_priority: Option<JunosExcessPriority>,
    /// Drop curves per loss priority: (fill %, drop %) points, interpolated,
    /// on the queue's instantaneous fill in bytes (Junos drop profiles).
    #[serde(default)]
    pub drop_green: Option<Vec<(f64, f64)>>,
    #[serde(default)]
    pub drop_red: Option<Vec<(f64, f64)>>,
    /// Any drop profile (instead of `drop_green`/`drop_red`).
    #[serde(default)]
    pub drop_profile: Option<DropProfileConfig>,
    /// The queue's discipline (instead of a drop profile).
    #[serde(default)]
    pub child: Option<ChildConfig>,
}

impl Default for QueueConfig {
    /// Linux's default txqueuelen: 1000 packets.
    fn default() -> Self {
        QueueConfig::Fifo(FifoConfig { limit_pkts: Some(1000), limit_bytes: None })
    }
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FifoConfig {
    pub limit_pkts: Option<u64>,
    pub limit_bytes: Option<u64>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    #[serde(default)]
    pub limit_pkts: Option<u64>,
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    pub min_th: f64,
    pub max_th: f64,
    #[serde(default)]
    pub thresholds_in_bytes: bool,
    #[serde(default = "default_max_p")]
    pub max_p: f64,
    #[serde(default = "default_w_q")]
    pub w_q: f64,
    #[serde(default = "yes")]
    pub gentle: bool,
    #[serde(default)]
    pub byte_mode: bool,
    #[serde(default = "default_mean_pkt")]
    pub mean_pkt_bytes: u32,
    /// ns-2's `wait_` (`queue/red.cc`, `modify_p`): no early drop until
    /// `count p_b` reaches 1 after the last one (`qos/aqm/red.rs`).
    #[serde(default)]
    pub wait: bool,
}

fn default_max_p() -> f64 {
    0.1
}
fn default_w_q() -> f64 {
    0.002
}
fn default_mean_pkt() -> u32 {
    1000
}
fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub name: String,
    pub src: String,
    pub dst: String,
    #[serde(default)]
    pub start_ns: u64,
    #[serde(default)]
    pub stop_ns: Option<u64>,
    #[serde(default)]
    pub tcp: Option<TcpConfig>,
    #[serde(default)]
    pub udp: Option<UdpConfig>,
    #[serde(default)]
    pub poisson: Option<PoissonConfig>,
    #[serde(default)]
    pub ping: Option<PingConfig>,
    /// UDP ON/OFF (VoIP talk spurts, VBR), see `apps/onoff.rs`.
    #[serde(default)]
    pub onoff: Option<OnOffUdpConfig>,
    /// MPEG-like video over UDP, see `apps/video.rs`.
    #[serde(default)]
    pub video: Option<VideoConfig>,
    /// DiffServ code point the source marks its packets with (0..63).
    #[serde(default)]
    pub dscp: u8,
    /// Transport ports (ignored for ping); defaults in `sim::build_flow`.
    #[serde(default)]
    pub src_port: Option<u16>,
    #[serde(default)]
    pub dst_port: Option<u16>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    pub cc: Cc,
    /// The controller's own parameters (see each file of `tcp/cc/`), in
    /// base units; unknown keys are an error naming the controller.
    pub cc_params: serde_json::Value,
    pub mss_bytes: u32,
    pub init_cwnd_pkts: u32,
    pub rwnd_bytes: u64,
    pub delayed_ack: bool,
    pub ack_every: u32,
    pub delack_timeout_ns: u64,
    pub min_rto_ns: u64,
    pub initial_rto_ns: u64,
    pub max_rto_ns: u64,
    /// "linux" (RTO = SRTT + max(4 RTTVAR, min_rto)) or "rfc6298"
    /// (RTO = max(min_rto, SRTT + 4 RTTVAR)).
    pub rto_style: RtoStyle,
    pub dupthresh: u32,
    pub size_bytes: Option<u64>,
    /// Selective acknowledgments (RFC 2018) with RFC 6675 loss recovery.
    pub sack: bool,
    /// Window scaling (RFC 7323); without it the window is at most 64 KiB.
    pub window_scaling: bool,
    /// Limited transmit (RFC 3042).
    pub limited_transmit: bool,
    /// Send buffer: the most unacknowledged data the sender holds (None: unlimited).
    pub sndbuf_bytes: Option<u64>,
    /// Per-connection maximum pacing rate (Linux SO_MAX_PACING_RATE).
    pub max_pacing_rate_bps: Option<u64>,
    /// Linux-style internal pacing at 2x (slow start) or 1.2x (congestion
    /// avoidance) cwnd / srtt.
    pub pacing: bool,
    /// RACK-style time-based loss detection (RFC 8985) instead of the
    /// duplicate-ACK threshold: tolerates reordering within min_rtt / 4.
    /// Needs SACK.
    pub rack: bool,
    /// In-order segments the receiver acknowledges at once at the start of
    /// a connection (Linux quick-ACK mode). None: 0 for `flows`, 16 (Linux's
    /// TCP_MAX_QUICKACKS) for the connections of workloads.
    pub quickack_segments: Option<u32>,
    /// A bundle of host behaviours (`tcp/linux.rs`, `tcp/ns2.rs`):
    /// "default" (this engine's RFC behaviour), "linux-2.6.33", "linux-6"
    /// (`tcp/linux6.rs`: TLP, PRR, TSO autosizing and TSQ as Linux 6 size
    /// them, on top of RACK) or "ns2" (ns-2.35's `Agent/TCP/Sack1` and
    /// `Agent/TCPSink/Sack1/DelAck`).
    /// Each behaviour below is None to take the profile's value, or set
    /// alone.
    pub host_profile: HostProfile,
    /// FACK loss marking (`tcp_fack` = 1).
    pub fack: Option<bool>,
    /// The reordering metric raised on detected reordering, FACK then off.
    pub adaptive_reordering: Option<bool>,
    /// Its bound, segments (Linux 2.6.33 TCP_MAX_REORDERING = 127).
    pub max_reordering: Option<u32>,
    /// Undo of spurious recoveries by timestamps and D-SACK.
    pub undo: Option<bool>,
    /// The receiver reports duplicate segments in a D-SACK block (RFC 2883).
    pub dsack: Option<bool>,
    /// `tcp_moderate_cwnd` in Disorder and after an undo.
    pub moderate_cwnd: Option<bool>,
    /// Rate-halving in recovery (`tcp_cwnd_down`), `tcp_complete_cwr` at its end.
    pub rate_halving: Option<bool>,
    /// TSO/GSO: frames of up to `tso_max_bytes` leave back to back, small
    /// sends are deferred (`tcp_tso_should_defer`). None or 0: off.
    pub tso_max_bytes: Option<u64>,
    /// The receiver acknowledges the next segments at once after a
    /// duplicate segment (`tcp_enter_quickack_mode`).
    pub quickack_after_dup: Option<bool>,
    /// The TCP timestamp clock's tick, ns (Linux: one jiffy, 1/HZ).
    pub ts_tick_ns: Option<u64>,
    /// The receiving host coalesces in-order segments (GRO) in NAPI polls
    /// (`tcp/gro.rs`).
    pub gro: Option<bool>,
    /// The receiving NIC's interrupt moderation: at most one interrupt
    /// (NAPI poll) per this many ns.
    pub napi_interval_ns: Option<u64>,
    /// ns-2's window growth: one `opencwnd` per ACK, whatever it
    /// acknowledges (no RFC 3465 byte counting; `tcp/ns2.rs`).
    pub per_ack_growth: Option<bool>,
    /// ns-2's `Agent/TCP/Sack1` loss recovery instead of RFC 6675 (needs
    /// `sack`; `tcp/ns2.rs`).
    pub sack1: Option<bool>,
    /// ns-2's `DelAck` sink: no segment is acknowledged early for its PSH
    /// flag (ns-2 has none), so the last segment of a burst waits for the
    /// delayed-ACK timer.
    pub ns2_delack: Option<bool>,
    /// ns-2's RTT clock (`tcpTick_`): samples rounded to whole ticks and
    /// the RTO computed in ticks as `rtt_update` does (None or 0: off).
    pub tcp_tick_ns: Option<u64>,
    /// Tail loss probes (RFC 8985 section 7, `tcp_schedule_loss_probe`).
    pub tlp: Option<bool>,
    /// Proportional rate reduction in recovery (RFC 6937,
    /// `tcp_cwnd_reduction`).
    pub prr: Option<bool>,
    /// TSO frames and the TSQ limit sized from the pacing rate
    /// (`tcp_tso_autosize`, `tcp_small_queue_check`).
    pub tso_autosize: Option<bool>,
}

/// The Linux behaviours of a connection, resolved from
/// [`TcpConfig::host_profile`] and the options set alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostBehaviour {
    pub fack: bool,
    pub adaptive_reordering: bool,
    pub max_reordering: u32,
    pub undo: bool,
    pub dsack: bool,
    pub moderate_cwnd: bool,
    pub rate_halving: bool,
    pub tso_max_bytes: u64,
    pub quickack_after_dup: bool,
    pub ts_tick_ns: u64,
    pub gro: bool,
    pub napi_interval_ns: u64,
    pub per_ack_growth: bool,
    pub sack1: bool,
    pub ns2_delack: bool,
    /// ns, 0: off.
    pub tcp_tick_ns: u64,
    pub tlp: bool,
    pub prr: bool,
    pub tso_autosize: bool,
    /// Slow start counts every segment a stretch ACK covers (Linux 6's
    /// `tcp_slow_start(tp, acked)`; `tcp/linux6.rs`), not RFC 3465's L = 2.
    /// Not a key of its own: the `linux-6` profile's.
    pub stretch_ack_ss: bool,
    /// With SACK, a loss found outside recovery starts a new one even
    /// before snd_una has passed the previous recovery point (Linux's
    /// `tcp_fastretrans_alert` in Open/Disorder: `tcp_time_to_recover`,
    /// then `tcp_enter_recovery`, with no `high_seq` test but for Reno;
    /// only the Loss state after a timeout holds it back). RFC 6675's
    /// `RecoveryPoint` test otherwise. Not a key of its own: the `linux-6`
    /// profile's (`tcp/linux6.rs`).
    pub sack_reentry: bool,
    /// Congestion avoidance grows cwnd for a whole flight once sending was
    /// held back by cwnd in it (Linux's `tcp_cwnd_validate`;
    /// `tcp/linux6.rs`). Not a key of its own: the `linux-6` profile's.
    pub cwnd_usage: bool,
    /// CUBIC's HyStart reads the socket's pacing as Linux 5.7 and later do
    /// (`tcp_cubic.c`'s `hystart_update`): the ACK train must span
    /// `delay_min + hystart_ack_delay` (halved only when the socket does not
    /// pace), `hystart_ack_delay = min(1 ms, 4 gso_max_size / pacing rate)`.
    /// Not a key of its own: the `linux-6` profile's (`tcp/cc/cubic.rs`).
    pub hystart_pacing: bool,
}

/// ns-2.35's `tcpTick_` (`tcl/lib/ns-default.tcl`: `Agent/TCP set
/// tcpTick_ 0.01 ;# default changed on 2002/03/07`): 10 ms.
pub const NS2_TCP_TICK_NS: u64 = 10_000_000;

/// Host profiles known by name.
pub const HOST_PROFILES: &[&str] = HostProfile::ALL;

impl TcpConfig {
    /// The behaviours this connection runs: the profile's, each overridden
    /// by the option set alone.
    pub fn host(&self) -> HostBehaviour {
        let linux = self.host_profile == HostProfile::Linux2633;
        let linux6 = self.host_profile == HostProfile::Linux6;
        let ns2 = self.host_profile == HostProfile::Ns2;
        HostBehaviour {
            // FACK left Linux in 4.15 (RACK replaced it); Linux 6 moderates
            // nothing and halves by PRR (`tcp/linux6.rs`).
            fack: self.fack.unwrap_or(linux),
            adaptive_reordering: self.adaptive_reordering.unwrap_or(linux || linux6),
            // `tcp_max_reordering` is 300 in Linux 6 (a sysctl since 4.7),
            // TCP_MAX_REORDERING 127 in 2.6.33.
            max_reordering: self.max_reordering.unwrap_or(if linux6 { 300 } else { 127 }),
            undo: self.undo.unwrap_or(linux || linux6),
            dsack: self.dsack.unwrap_or(linux || linux6),
            moderate_cwnd: self.moderate_cwnd.unwrap_or(linux),
            rate_halving: self.rate_halving.unwrap_or(linux),
            tso_max_bytes: self.tso_max_bytes.unwrap_or(if linux || linux6 { 65_536 } else { 0 }),
            quickack_after_dup: self.quickack_after_dup.unwrap_or(linux || linux6),
            // One jiffy at the kernel's default HZ = 250 (kernel/Kconfig.hz
            // of 2.6.33: `default HZ_250`): 4 ms. Linux 6 stamps in
            // milliseconds whatever HZ is (TCP_TS_HZ 1000, since 4.13).
            ts_tick_ns: self.ts_tick_ns.unwrap_or(if linux6 { 1_000_000 } else { 4_000_000 }),
            gro: self.gro.unwrap_or(linux || linux6),
            // ixgbe's dynamic interrupt throttling settles at 8,000
            // interrupts a second for bulk traffic (`ixgbe_set_itr`,
            // bulk_latency): 125 µs.
            napi_interval_ns: self.napi_interval_ns.unwrap_or(125_000),
            per_ack_growth: self.per_ack_growth.unwrap_or(ns2),
            sack1: self.sack1.unwrap_or(ns2),
            ns2_delack: self.ns2_delack.unwrap_or(ns2),
            tcp_tick_ns: self.tcp_tick_ns.unwrap_or(if ns2 { NS2_TCP_TICK_NS } else { 0 }),
            tlp: self.tlp.unwrap_or(linux6),
            prr: self.prr.unwrap_or(linux6),
            tso_autosize: self.tso_autosize.unwrap_or(linux6),
            stretch_ack_ss: linux6,
            sack_reentry: linux6,
            cwnd_usage: linux6,
            hystart_pacing: linux6,
        }
    }
}

/// The defaults of every TCP option, the one place they are set (the
/// configuration takes each absent key from here; the Python front reads
/// them through `check::applied`).
impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: Cc::NewReno,
            cc_params: serde_json::Value::Object(Default::default()),
            // Linux's MSS on a 1500 B Ethernet MTU with timestamps.
            mss_bytes: 1448,
            // RFC 6928.
            init_cwnd_pkts: 10,
            rwnd_bytes: 64 << 20,
            delayed_ack: true,
            // RFC 1122 4.2.3.2: an ACK for at least every second segment.
            ack_every: 2,
            // Linux's TCP_DELACK_MIN.
            delack_timeout_ns: 40_000_000,
            // Linux's TCP_RTO_MIN, RFC 6298's initial RTO of 1 s, and a 60 s cap.
            min_rto_ns: 200_000_000,
            initial_rto_ns: 1_000_000_000,
            max_rto_ns: 60_000_000_000,
            rto_style: RtoStyle::Linux,
            // RFC 5681's duplicate-ACK threshold.
            dupthresh: 3,
            size_bytes: None,
            sack: true,
            window_scaling: true,
            limited_transmit: true,
            sndbuf_bytes: None,
            max_pacing_rate_bps: None,
            pacing: false,
            rack: false,
            quickack_segments: None,
            host_profile: HostProfile::Default,
            fack: None,
            adaptive_reordering: None,
            max_reordering: None,
            undo: None,
            dsack: None,
            moderate_cwnd: None,
            rate_halving: None,
            tso_max_bytes: None,
            quickack_after_dup: None,
            ts_tick_ns: None,
            gro: None,
            napi_interval_ns: None,
            per_ack_growth: None,
            sack1: None,
            ns2_delack: None,
            tcp_tick_ns: None,
            tlp: None,
            prr: None,
            tso_autosize: None,
        }
    }
}


#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UdpConfig {
    pub size_bytes: u32,
    /// `[time_ns, rate_bps]` steps, absolute times, ascending.
    pub schedule: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PoissonConfig {
    pub rate_bps: u64,
    pub size_bytes: u32,
    /// Exponentially distributed sizes with mean `size_bytes` (else fixed).
    #[serde(default)]
    pub exp_size: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PingConfig {
    pub interval_ns: u64,
    #[serde(default = "default_ping_size")]
    pub size_bytes: u32,
}

fn default_ping_size() -> u32 {
    84
}

/// UDP ON/OFF: `rate_bps` while ON in `size_bytes` packets; periods of mean
/// `on_mean_ns` and `off_mean_ns` (defaults: ITU-T P.59's talk spurt and
/// pause), exponential, or Pareto of shape `pareto_shape`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffUdpConfig {
    pub rate_bps: u64,
    pub size_bytes: u32,
    #[serde(default = "default_on_mean")]
    pub on_mean_ns: u64,
    #[serde(default = "default_off_mean")]
    pub off_mean_ns: u64,
    #[serde(default)]
    pub pareto_shape: Option<f64>,
}

fn default_on_mean() -> u64 {
    crate::apps::onoff::P59_ON_NS
}
fn default_off_mean() -> u64 {
    crate::apps::onoff::P59_OFF_NS
}

/// MPEG-like video: `mean_rate_bps` in `size_bytes` packets, `fps` frames
/// per second, frame sizes varying by a lognormal factor of log-deviation
/// `sigma`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VideoConfig {
    pub mean_rate_bps: u64,
    pub size_bytes: u32,
    #[serde(default = "default_fps")]
    pub fps: f64,
    #[serde(default = "default_sigma")]
    pub sigma: f64,
}

fn default_fps() -> f64 {
    25.0
}
fn default_sigma() -> f64 {
    0.3
}

/// Traffic that creates connections at run time: exactly one of
/// `transfer`, `poisson` (transfer arrivals), `onoff` (web-like sources),
/// `http` (clients fetching from a server).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    pub name: String,
    /// TCP options of every connection (`size_bytes` is not used: sizes
    /// come from the workload).
    #[serde(default)]
    pub tcp: TcpConfig,
    /// Open every connection with a three-way handshake.
    #[serde(default = "yes")]
    pub handshake: bool,
    /// Parallel TCP connections per transfer (GridFTP-style striping).
    #[serde(default = "one")]
    pub streams: u32,
    /// No transfer starts before `start_ns` or at or after `stop_ns`.
    #[serde(default)]
    pub start_ns: u64,
    #[serde(default)]
    pub stop_ns: Option<u64>,
    #[serde(default)]
    pub dscp: u8,
    /// Destination port of the connections (default 5001).
    #[serde(default)]
    pub dst_port: Option<u16>,
    /// An application-limited sender: data written at this rate...
    #[serde(default)]
    pub app_rate_bps: Option<u64>,
    /// ... in writes of this many bytes (default one MSS).
    #[serde(default)]
    pub write_bytes: Option<u64>,
    /// How a transfer's bytes go to its streams: "static" (k equal
    /// stripes) or "dynamic" (blocks of `block_bytes` handed to whichever
    /// stream has room, as GridFTP's extended block mode does).
    #[serde(default)]
    pub striping: Striping,
    #[serde(default = "default_block")]
    pub block_bytes: u64,
    /// Per-stream differences from `tcp` and `dscp` (stream i takes entry
    /// i; streams beyond the list take the workload's own).
    #[serde(default)]
    pub stream_options: Vec<StreamOptions>,
    #[serde(default)]
    pub transfer: Option<TransferConfig>,
    #[serde(default)]
    pub poisson: Option<PoissonArrivalsConfig>,
    #[serde(default)]
    pub onoff: Option<OnOffConfig>,
    #[serde(default)]
    pub http: Option<HttpConfig>,
}

fn one() -> u32 {
    1
}
fn default_block() -> u64 {
    256 * 1024
}

/// What one stream of a transfer does differently.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamOptions {
    pub cc: Option<Cc>,
    pub cc_params: Option<serde_json::Value>,
    pub dscp: Option<u8>,
    pub max_pacing_rate_bps: Option<u64>,
}

/// One transfer of `size_bytes` from `src` to `dst`, at the workload's start.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TransferConfig {
    pub src: String,
    pub dst: String,
    pub size_bytes: u64,
}

/// Transfers arriving as a Poisson process: `rate_per_s` arrivals per
/// second, or `load_bps` of offered traffic (rate = load / (8 mean size)).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PoissonArrivalsConfig {
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    #[serde(default)]
    pub load_bps: Option<u64>,
    pub pairs: PairsConfig,
    pub size: SizeDistConfig,
}

/// Which hosts a transfer joins.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PairsConfig {
    /// Any ordered pair of distinct hosts of the list, uniformly.
    All(Vec<String>),
    /// One of the listed (src, dst) pairs, uniformly.
    List(Vec<(String, String)>),
    /// A source drawn from `from` and a destination from `to`, uniformly.
    Groups { from: Vec<String>, to: Vec<String> },
}

/// Web-like sources: each host of `hosts` alternates between a transfer to
/// a random host of `peers` and an exponential idle time of mean
/// `idle_mean_ns`, or, with `mean_rate_bps`, a think time between starts
/// of mean (mean size * 8 / mean_rate) (see `workload/mod.rs`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffConfig {
    pub hosts: Vec<String>,
    pub peers: Vec<String>,
    pub size: SizeDistConfig,
    #[serde(default)]
    pub idle_mean_ns: Option<u64>,
    #[serde(default)]
    pub mean_rate_bps: Option<u64>,
}

/// HTTP: `sessions` browsing sessions on each host of `clients`, each
/// alternating a page fetch from `server` (a request of `request_bytes`,
/// then a response of a size drawn from `response`) and a think time:
/// exponential of mean `think_mean_ns` after the response, or, with
/// `mean_rate_bps` (the whole workload's offered response rate), between
/// page starts (see `workload/mod.rs`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    pub server: String,
    pub clients: Vec<String>,
    #[serde(default = "one")]
    pub sessions: u32,
    #[serde(default = "default_request")]
    pub request_bytes: u64,
    pub response: SizeDistConfig,
    #[serde(default)]
    pub think_mean_ns: Option<u64>,
    #[serde(default)]
    pub mean_rate_bps: Option<u64>,
}

fn default_request() -> u64 {
    350
}

/// A size distribution (exactly one key), see `workload/dist.rs`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SizeDistConfig {
    Fixed {
        bytes: u64,
        #[serde(default)]
        max_bytes: Option<u64>,
    },
    Exponential {
        mean_bytes: f64,
        #[serde(default)]
        max_bytes: Option<u64>,
    },
    Pareto {
        shape: f64,
        mean_bytes: f64,
        #[serde(default)]
        max_bytes: Option<u64>,
    },
    Lognormal {
        mean_bytes: f64,
        sigma: f64,
        #[serde(default)]
        max_bytes: Option<u64>,
    },
    Empirical {
        /// (size in bytes, cumulative probability) points.
        cdf: Vec<(f64, f64)>,
        #[serde(default)]
        max_bytes: Option<u64>,
    },
}

impl SizeDistConfig {
    pub fn max_bytes(&self) -> Option<u64> {
        match self {
            SizeDistConfig::Fixed { max_bytes, .. }
            | SizeDistConfig::Exponential { max_bytes, .. }
            | SizeDistConfig::Pareto { max_bytes, .. }
            | SizeDistConfig::Lognormal { max_bytes, .. }
            | SizeDistConfig::Empirical { max_bytes, .. } => *max_bytes,
        }
    }
}

/// A control agent (exactly one key), see `control/`. Handles are the
/// names of `control/mod.rs`: "A->B" (interface), "A->B/class", "node/term",
/// a flow, a workload, "workload#k" (its k-th transfer, from 0).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AgentConfig {
    WredRttTuning(WredRttConfig),
    DeadlineReservation(DeadlineConfig),
    CallAdmission(AdmissionConfig),
}

impl AgentConfig {
    /// The key of this kind of agent in the configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentConfig::WredRttTuning(_) => "wred_rtt_tuning",
            AgentConfig::DeadlineReservation(_) => "deadline_reservation",
            AgentConfig::CallAdmission(_) => "call_admission",
        }
    }
}

/// Bouras & Sevasti's RTT-tuned WRED (see `control/wred_rtt.rs`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WredRttConfig {
    #[serde(default)]
    pub name: Option<String>,
    /// The class (or RED interface) whose drop profile is tuned.
    pub class: String,
    /// Flows and workloads whose TCP round-trip times are the class's.
    pub traffic: Vec<String>,
    #[serde(default = "default_agent_interval")]
    pub interval_ns: u64,
    /// max_p set on every colour's curve; absent, the first curve (green)
    /// takes the document's 0.2 ([`DEFAULT_WRED_MAX_P`]) and the others
    /// keep their own.
    #[serde(default)]
    pub max_p: Option<f64>,
    /// min_th = min_fraction x max_th (the document's 0.15).
    #[serde(default = "default_min_fraction")]
    pub min_fraction: f64,
    /// The class's service rate r; default its transmit rate, else the link's.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// Default: the link's MTU.
    #[serde(default)]
    pub mtu_bytes: Option<u32>,
}

/// A deadline transfer's reservation (see `control/deadline.rs`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeadlineConfig {
    #[serde(default)]
    pub name: Option<String>,
    /// The transfer: "workload#k", or a workload's name for its first one.
    pub transfer: String,
    /// Time from the transfer's start to its deadline.
    pub deadline_ns: u64,
    #[serde(default = "default_margin")]
    pub margin: f64,
    #[serde(default = "default_agent_interval")]
    pub interval_ns: u64,
    /// The edge policer ("node/term") set to the reservation.
    #[serde(default)]
    pub policer: Option<String>,
}

/// Call admission over time-sliced link bookings (see `control/admission.rs`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdmissionConfig {
    #[serde(default)]
    pub name: Option<String>,
    /// The workload whose transfers ask for admission.
    pub workload: String,
    /// Requested rate; with `duration_ns` the interval, else size / rate.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    #[serde(default)]
    pub duration_ns: Option<u64>,
    /// Requested completion time after arrival: rate = size x 8 / deadline x margin.
    #[serde(default)]
    pub deadline_ns: Option<u64>,
    #[serde(default = "default_margin")]
    pub margin: f64,
    /// Share of each link's rate that may be booked.
    #[serde(default = "default_capacity_fraction")]
    pub capacity_fraction: f64,
    /// Router that polices each admitted transfer at its rate (a term per
    /// transfer ahead of its filter); none: no policer.
    #[serde(default)]
    pub edge: Option<String>,
    #[serde(default)]
    pub burst_bytes: Option<u64>,
    /// Give each admitted transfer with a deadline its reservation agent.
    #[serde(default)]
    pub reservation: bool,
    #[serde(default = "default_agent_interval")]
    pub interval_ns: u64,
}

fn default_agent_interval() -> u64 {
    50_000_000
}
/// Bouras & Sevasti, Section 5.1: max_p = 0.2.
pub const DEFAULT_WRED_MAX_P: f64 = 0.2;
fn default_min_fraction() -> f64 {
    0.15
}
fn default_margin() -> f64 {
    1.05
}
fn default_capacity_fraction() -> f64 {
    1.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn applied_queue(queue: serde_json::Value, rate_bps: u64) -> serde_json::Value {
        let link = json!({"a": "a", "b": "b", "rate_bps": rate_bps, "delay_ns": 0, "queue_ab": queue});
        let cfg = json!({"duration_ns": 1, "nodes": [], "links": [link]});
        crate::check::applied(&cfg.to_string()).expect("applied")["links"][0]["queue_ab"].clone()
    }

    #[test]
    fn a_links_per_flow_queue_gets_linuxs_limit() {
        let q = applied_queue(json!({"fq_codel": {}}), 1_000_000);
        assert_eq!((q["fq_codel"]["limit_pkts"].clone(), q["fq_codel"]["quantum_bytes"].clone()), (json!(10240), json!(1514)));
        assert_eq!(applied_queue(json!({"sfq": {}}), 1_000_000)["sfq"]["limit_pkts"], json!(127));
    }

    #[test]
    fn a_class_childs_per_flow_queue_gets_the_classs_buffer() {
        // HTB: the leaf's limit (1000 packets unless given).
        let htb = json!({"htb": {"classes": [
            {"name": "1:1", "rate_bps": 1_000_000, "child": {"fq_codel": {}}},
            {"name": "1:2", "rate_bps": 1_000_000, "limit_pkts": 50, "child": {"sfq": {}}},
            {"name": "1:3", "rate_bps": 1_000_000, "limit_pkts": 50, "child": {"sfq": {"limit_pkts": 20}}},
        ]}});
        let q = applied_queue(htb, 10_000_000);
        let child = |i: usize, kind: &str| q["htb"]["classes"][i]["child"][kind]["limit_pkts"].clone();
        assert_eq!((child(0, "fq_codel"), child(1, "sfq"), child(2, "sfq")), (json!(1000), json!(50), json!(20)));
        // A classful scheduler: the class's share of the interface buffer, rounded down.
        let drr = json!({"drr": {"buffer_pkts": 200, "classes": [
            {"name": "a", "buffer_percent": 30.0, "quantum_bytes": 1514, "child": {"fq_codel": {}}},
            {"name": "b", "buffer_percent": 70.0, "quantum_bytes": 1514, "child": {"sfq": {}}},
        ]}});
        let q = applied_queue(drr, 10_000_000);
        assert_eq!(q["drr"]["classes"][0]["child"]["fq_codel"]["limit_pkts"], json!(60));
        assert_eq!(q["drr"]["classes"][1]["child"]["sfq"]["limit_pkts"], json!(140));
        // A queue that does not build keeps its children as given.
        let bad = json!({"drr": {"buffer_pkts": 200, "classes": [
            {"name": "a", "buffer_percent": 130.0, "quantum_bytes": 1514, "child": {"fq_codel": {}}},
        ]}});
        assert_eq!(applied_queue(bad, 10_000_000)["drr"]["classes"][0]["child"]["fq_codel"]["limit_pkts"], json!(null));
    }
}
