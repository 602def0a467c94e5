//! HTB, the Hierarchical Token Bucket of Linux (`tc qdisc ... htb`).
//!
//! What it models: the host-side shaper of the second source document
//! (Zurawski, "Using Linux Traffic Control on Virtual Circuits", Sections 4
//! and 5): `tc qdisc add dev eth0.3123 handle 1: root htb`, one class
//! `1:1 htb rate 112.5mbps` (tc's `mbps` is megaBYTES: 900 Mbit/s, 90% of
//! a 1 Gbps circuit) and a `u32 match ip src 10.10.200.20/32 flowid 1:1`
//! filter. More generally, a tree of classes sharing a link, each with a
//! guaranteed `rate` and a `ceil` it may reach by borrowing.
//!
//! References: Linux `net/sched/sch_htb.c` (M. Devera; functions named
//! below), and Devera & Cohen, "HTB Linux queuing discipline manual - user
//! guide" (2002), sections 2-6 (link sharing, hierarchy, ceil, burst,
//! priority). Defaults follow iproute2 `tc/q_htb.c`.
//!
//! # The model, as `sch_htb.c` behaves
//!
//! - Every class has two token buckets: `tokens` earned at `rate`, at most
//!   `burst` bytes, and `ctokens` earned at `ceil`, at most `cburst` bytes.
//!   Linux keeps tokens as time (`htb_accnt_tokens`); here they are whole
//!   bytes earned on the exact grid of [`TokenClock`] (no drift), which is
//!   the same bucket in other units. A bucket may go negative: a class that
//!   may send sends its whole packet and is charged for it (Linux clamps at
//!   `-mbuffer`, 60 s of tokens; so does this model).
//! - The mode of a class (`htb_class_mode`, with `htb_hysteresis` off, the
//!   kernel default): [`Mode::CantSend`] (red) if `ctokens < 0`, else
//!   [`Mode::CanSend`] (green) if `tokens >= 0`, else [`Mode::MayBorrow`]
//!   (yellow).
//! - A backlogged leaf may send if it is green, or if it is yellow and some
//!   ancestor is green with only yellow classes between them: that ancestor
//!   lends. A red class on the way blocks. A green leaf does not look at its
//!   ancestors (Linux serves it from the level-0 self feed): rates are
//!   guarantees, assumed to add up (`sum(children rate) <= parent rate`).
//! - Levels (`htb_change_class`): a leaf has level 0, a root class level 7
//!   (`TC_HTB_MAXDEPTH - 1`), an inner class one less than its parent.
//!   `htb_dequeue` serves the lowest lender level first (green leaves before
//!   borrowers, near lenders before far ones), then the lowest `prio` value
//!   (0..7), then deficit round robin among equals (`htb_dequeue_tree`): a
//!   leaf's deficit at that level loses the packet's size, and when it goes
//!   negative gains one `quantum` and the round moves on. Linux keeps a
//!   round-robin pointer per inner class and priority; this model keeps one
//!   per (level, prio) over the leaves in declaration order, which gives the
//!   same shares among the leaves that borrow from one lender.
//! - Charging (`htb_charge_class`): from the leaf up to the root, every
//!   class at or above the lender's level loses the packet's bytes of
//!   `tokens`; every class on the path loses them from `ctokens`.
//! - When nothing may send but packets wait, the answer is
//!   [`Dequeued::NotBefore`] the earliest time at which a class on the path
//!   of a backlogged leaf changes mode (Linux's wait queue, `htb_do_events`),
//!   computed exactly; the interface asks again then, or sooner if a packet
//!   arrives.
//! - Classification (`htb_classify`): filters in order, first match wins
//!   (u32-style: source prefix, destination prefix, protocol); no match goes
//!   to the `default` leaf (tc's `default` minor id); with no default, to
//!   the *direct queue*, sent before any class and never shaped (Linux's
//!   `direct_queue`, reported as the queue named [`DIRECT`]).
//!
//! # Parameters ([`HtbClassSpec`], [`HtbParams`])
//!
//! - `rate` (bit/s of IP bytes, required, > 0);
//! - `ceil` (bit/s, default `rate`, must be `>= rate`);
//! - `burst`, `cburst` (bytes): default as tc computes them, `rate/hz + mtu`
//!   with `mtu` 1600 B and `hz` = 1e9 (the psched clock of a kernel with
//!   high-resolution timers), i.e. 1600 B plus one nanosecond of the rate;
//! - `quantum` (bytes): default `rate_bytes_per_s / r2q`, `r2q` = 10,
//!   clamped to 1000..=200000 as `htb_change_class` does (the kernel warns
//!   "quantum of class ... is small/big" and clamps); an explicit quantum is
//!   taken as given (must be > 0);
//! - `prio` 0..=7 (default 0; lower is served first);
//! - `limit`: a leaf's buffer (default 1000 packets, a `txqueuelen`; Linux
//!   attaches a pfifo of that length);
//! - `child`: a leaf's discipline, made for its `limit` (default a FIFO;
//!   or RED, a WRED profile, FQ-CoDel, SFQ: `qos/mod.rs`, "Nesting"), as
//!   `tc qdisc add ... parent 1:10 fq_codel` attaches one in Linux; a leaf
//!   whose child drops at dequeue and ends up with nothing is passed over;
//! - `parent`: a class declared earlier, or none for a root class; depth at
//!   most 8 levels including leaves (`TC_HTB_MAXDEPTH`).
//!
//! Packet sizes are IP bytes (`Packet::size`), as everywhere in alphaqos;
//! Linux counts the L2 length (`skb->len`, 14 B more per Ethernet frame)
//! unless told an `overhead`.
//!
//! # Tests
//!
//! Unit tests below: defaults and clamps, validation, classification,
//! exact token counts after each packet, the exact `NotBefore` time.
//! `tests/htb.rs` drives the discipline on a simulated link: 900 Mbps out of
//! 10 Gbps within 1% over 10 s; 300/700 shares and borrowing up to ceil;
//! burst after idle; never above ceil over sliding windows; priority of
//! spare bandwidth; per-class conservation.

use super::classify::Prefix;
use super::fifo::{Fifo, Limit, PacketQueue};
use super::meter::{TokenClock, TokenRate};
use crate::error::ConfigError;
use super::{Backlog, ChildBuilder, Dequeued, DropReason, Qdisc, QueueCounters, QueueCtx};
use crate::knob::{KnobCtx, KnobError, KnobOp, KnobResult};
use crate::packet::Packet;
use crate::time::{Duration, SimTime};
use crate::units::DataRate;

/// Linux `TC_HTB_MAXDEPTH`: levels 0 (leaves) ..= 7 (root classes).
pub const MAX_DEPTH: usize = 8;
/// Linux `TC_HTB_NUMPRIO`: priorities 0..=7.
pub const NUM_PRIO: usize = 8;
/// Default `r2q` (tc `htb r2q`): quantum = rate in bytes/s / r2q.
pub const DEFAULT_R2Q: u64 = 10;
/// `htb_change_class` clamps a computed quantum to this range, in bytes.
pub const QUANTUM_MIN: u64 = 1000;
pub const QUANTUM_MAX: u64 = 200_000;
/// tc's default MTU for computing buffers (`q_htb.c`: `mtu = 1600`), bytes.
pub const TC_MTU: u64 = 1600;
/// tc `get_hz()` with high-resolution timers: the default burst is
/// `rate_bytes_per_s / TC_HZ + TC_MTU`.
pub const TC_HZ: u64 = 1_000_000_000;
/// Linux `mbuffer`: tokens never fall below 60 s worth of the rate.
pub const MBUFFER: Duration = Duration(60_000_000_000);
/// Default leaf FIFO: `txqueuelen` 1000 packets.
pub const DEFAULT_LIMIT: Limit = Limit { pkts: 1000, bytes: u64::MAX };
/// Name under which the direct queue is reported when there is no default.
pub const DIRECT: &str = "direct";

/// User parameters of one HTB class (`tc class add ... htb ...`).
#[derive(Clone, Debug)]
pub struct HtbClassSpec {
    /// Unique, non-empty (e.g. "1:10"): the class column of the counters.
    pub name: String,
    /// A class declared before this one; `None` for a root class.
    pub parent: Option<String>,
    pub rate: DataRate,
    /// Default: `rate`.
    pub ceil: Option<DataRate>,
    /// Bytes. Default: `rate / TC_HZ + TC_MTU`.
    pub burst: Option<u64>,
    /// Bytes. Default: `ceil / TC_HZ + TC_MTU`.
    pub cburst: Option<u64>,
    /// Bytes. Default: `rate / r2q`, clamped to 1000..=200000.
    pub quantum: Option<u64>,
    /// 0..=7, lower first.
    pub prio: u8,
    /// The leaf's buffer (ignored for inner classes): the limit of its
    /// child discipline.
    pub limit: Limit,
    /// The leaf's discipline; `None`: a FIFO (Linux's default pfifo).
    pub child: Option<ChildBuilder>,
}

impl HtbClassSpec {
    pub fn new(name: impl Into<String>, parent: Option<&str>, rate: DataRate) -> Self {
        HtbClassSpec {
            name: name.into(),
            parent: parent.map(str::to_string),
            rate,
            ceil: None,
            burst: None,
            cburst: None,
            quantum: None,
            prio: 0,
            limit: DEFAULT_LIMIT,
            child: None,
        }
    }
    pub fn ceil(mut self, c: DataRate) -> Self {
        self.ceil = Some(c);
        self
    }
    pub fn burst(mut self, b: u64) -> Self {
        self.burst = Some(b);
        self
    }
    pub fn cburst(mut self, b: u64) -> Self {
        self.cburst = Some(b);
        self
    }
    pub fn quantum(mut self, q: u64) -> Self {
        self.quantum = Some(q);
        self
    }
    pub fn prio(mut self, p: u8) -> Self {
        self.prio = p;
        self
    }
    pub fn limit(mut self, l: Limit) -> Self {
        self.limit = l;
        self
    }
    pub fn child(mut self, c: ChildBuilder) -> Self {
        self.child = Some(c);
        self
    }
}

/// A u32-style filter (`tc filter add ... u32 match ip src P flowid C`):
/// every given field must match; `class` must be a leaf.
#[derive(Clone, Debug)]
pub struct HtbFilter {
    pub src: Option<Prefix>,
    pub dst: Option<Prefix>,
    pub proto: Option<u8>,
    pub class: String,
}

impl HtbFilter {
    /// Match on the source prefix ("10.10.200.20/32").
    pub fn src(prefix: &str, class: &str) -> Result<Self, String> {
        Ok(HtbFilter { src: Some(Prefix::parse(prefix)?), dst: None, proto: None, class: class.into() })
    }
    /// Match on the destination prefix.
    pub fn dst(prefix: &str, class: &str) -> Result<Self, String> {
        Ok(HtbFilter { src: None, dst: Some(Prefix::parse(prefix)?), proto: None, class: class.into() })
    }
    fn matches(&self, p: &Packet) -> bool {
        self.src.is_none_or(|x| x.contains(p.src_ip))
            && self.dst.is_none_or(|x| x.contains(p.dst_ip))
            && self.proto.is_none_or(|x| x == p.proto)
    }
}

/// The whole qdisc: `tc qdisc add ... htb [default MINOR] [r2q N]`, its
/// classes (parents first) and filters (in match order).
#[derive(Clone, Debug)]
pub struct HtbParams {
    pub classes: Vec<HtbClassSpec>,
    pub filters: Vec<HtbFilter>,
    /// A leaf for unmatched packets; `None`: the unshaped direct queue.
    pub default_class: Option<String>,
    /// Default [`DEFAULT_R2Q`].
    pub r2q: u64,
    /// Limit of the direct queue (Linux: `txqueuelen`).
    pub direct_limit: Limit,
}

impl HtbParams {
    pub fn new(classes: Vec<HtbClassSpec>) -> Self {
        HtbParams { classes, filters: vec![], default_class: None, r2q: DEFAULT_R2Q, direct_limit: DEFAULT_LIMIT }
    }
    pub fn filter(mut self, f: HtbFilter) -> Self {
        self.filters.push(f);
        self
    }
    pub fn default_class(mut self, c: &str) -> Self {
        self.default_class = Some(c.into());
        self
    }
}

/// A class's mode (`enum htb_cmode`), the colour of the brief.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Green: below its rate.
    CanSend,
    /// Yellow: above its rate, below its ceil: may borrow.
    MayBorrow,
    /// Red: at its ceil.
    CantSend,
}

/// Per class: how many packets it sent as a green leaf, as a borrower, and
/// how many it lent (Linux `xstats.lends`, `xstats.borrows`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HtbClassStats {
    pub lends: u64,
    pub borrows: u64,
    /// Bytes sent through this class (itself or its descendants).
    pub bytes: u64,
}

struct Class {
    name: String,
    parent: Option<usize>,
    level: usize,
    prio: usize,
    quantum: i64,
    rate: TokenRate,
    ceil: TokenRate,
    burst: i64,
    cburst: i64,
    /// Lower clamps (`-mbuffer` in bytes at rate and at ceil).
    floor: i64,
    cfloor: i64,
    tokens: i64,
    ctokens: i64,
    clock: TokenClock,
    cclock: TokenClock,
    stats: HtbClassStats,
    /// Leaves only.
    leaf: Option<Leaf>,
}

struct Leaf {
    child: Box<dyn Qdisc>,
    /// The child's backlog as last seen.
    held: Backlog,
    /// `cl->leaf.deficit[level]`.
    deficit: [i64; MAX_DEPTH],
}

impl Class {
    fn mode(&self) -> Mode {
        if self.ctokens < 0 {
            Mode::CantSend
        } else if self.tokens >= 0 {
            Mode::CanSend
        } else {
            Mode::MayBorrow
        }
    }
}

pub struct Htb {
    classes: Vec<Class>,
    /// Indices of the leaf classes, in declaration order (the DRR order).
    leaves: Vec<usize>,
    filters: Vec<(HtbFilter, usize)>,
    default_class: Option<usize>,
    direct: PacketQueue,
    direct_limit: Limit,
    /// Round-robin pointer per (level, prio): a position in `leaves`.
    ptr: [[usize; NUM_PRIO]; MAX_DEPTH],
    /// Tokens have been credited up to this instant.
    synced: SimTime,
    total: Backlog,
}

fn default_burst(rate: DataRate) -> u64 {
    rate.as_bps() / 8 / TC_HZ + TC_MTU
}

/// `htb_change_class`: quantum = rate / r2q, clamped unless given.
pub fn default_quantum(rate: DataRate, r2q: u64) -> u64 {
    (rate.as_bps() / 8 / r2q.max(1)).clamp(QUANTUM_MIN, QUANTUM_MAX)
}

fn to_i64(b: u64) -> i64 {
    b.min(i64::MAX as u64 / 2) as i64
}

impl Htb {
    /// An error is located at the parameter at fault (`classes[2].rate`,
    /// `filters[0].class`, `default_class`); a class's own problem names
    /// the class in its message.
    pub fn new(p: HtbParams) -> Result<Htb, ConfigError> {
        if p.classes.is_empty() {
            return Err(ConfigError::at("classes", "need at least one class"));
        }
        if p.r2q == 0 {
            return Err(ConfigError::at("r2q", "must be > 0"));
        }
        let mut classes: Vec<Class> = Vec::with_capacity(p.classes.len());
        let mut depth = Vec::with_capacity(p.classes.len());
        for (i, s) in p.classes.iter().enumerate() {
            // A problem of class i's `key`, the class named in the message.
            let at = |key: &str, e: &str| ConfigError::at(key, format!("{e} (class {:?})", s.name)).with_outer(i).with_outer("classes");
            if s.name.is_empty() {
                return Err(ConfigError::at("name", "empty name").with_outer(i).with_outer("classes"));
            }
            if classes.iter().any(|c| c.name == s.name) {
                return Err(at("name", "name used twice"));
            }
            if p.default_class.is_none() && s.name == DIRECT {
                return Err(at("name", "the name \"direct\" is the direct queue's when there is no default class"));
            }
            let parent = match &s.parent {
                None => None,
                Some(n) => Some(classes.iter().position(|c| &c.name == n).ok_or_else(|| at("parent", &format!("parent {n:?} is not declared before it")))?),
            };
            let d = parent.map_or(0, |q| depth[q] + 1);
            if d >= MAX_DEPTH - 1 {
                return Err(at("parent", "too deep: at most 8 levels including leaves (TC_HTB_MAXDEPTH)"));
            }
            depth.push(d);
            let rate = TokenRate::new(s.rate).ok_or_else(|| at("rate", "must be > 0"))?;
            let ceil_r = s.ceil.unwrap_or(s.rate);
            if ceil_r < s.rate {
                return Err(at("ceil", &format!("must be >= rate ({})", s.rate)));
            }
            let ceil = TokenRate::new(ceil_r).expect("ceil >= rate > 0");
            if s.prio as usize >= NUM_PRIO {
                return Err(at("prio", "must be 0..=7"));
            }
            let quantum = match s.quantum {
                Some(0) => return Err(at("quantum", "must be > 0")),
                Some(q) => q,
                None => default_quantum(s.rate, p.r2q),
            };
            let child = match &s.child {
                None => Box::new(Fifo::new(s.limit)) as Box<dyn Qdisc>,
                Some(b) => b.build(s.limit).map_err(|e| e.with_outer("child").with_outer(i).with_outer("classes"))?,
            };
            let burst = to_i64(s.burst.unwrap_or_else(|| default_burst(s.rate)));
            let cburst = to_i64(s.cburst.unwrap_or_else(|| default_burst(ceil_r)));
            classes.push(Class {
                name: s.name.clone(),
                parent,
                level: 0,
                prio: s.prio as usize,
                quantum: to_i64(quantum),
                rate,
                ceil,
                burst,
                cburst,
                floor: -to_i64(s.rate.bytes_in(MBUFFER)),
                cfloor: -to_i64(ceil_r.bytes_in(MBUFFER)),
                // Linux starts every bucket full (`cl->tokens = buffer`).
                tokens: burst,
                ctokens: cburst,
                clock: TokenClock::default(),
                cclock: TokenClock::default(),
                stats: HtbClassStats::default(),
                leaf: Some(Leaf { child, held: Backlog::default(), deficit: [0; MAX_DEPTH] }),
            });
        }
        // Inner classes: level = parent's level - 1, root level 7.
        let has_child: Vec<bool> = (0..classes.len()).map(|i| classes.iter().any(|c| c.parent == Some(i))).collect();
        for i in 0..classes.len() {
            if has_child[i] && p.classes[i].child.is_some() {
                let msg = format!("'{}' is an inner class: it holds no packets, so it takes no child discipline (only leaves do)", p.classes[i].name);
                return Err(ConfigError::at("child", msg).with_outer(i).with_outer("classes"));
            }
            if has_child[i] {
                classes[i].leaf = None;
                classes[i].level = MAX_DEPTH - 1 - depth[i];
            }
        }
        // The leaf `name` that the item at `at` (`default_class`, `filters[k].class`) names.
        let leaf_index = |name: &str, at: ConfigError| -> Result<usize, ConfigError> {
            let i = classes.iter().position(|c| c.name == name).ok_or_else(|| ConfigError { msg: format!("no class {name:?}"), ..at.clone() })?;
            if classes[i].leaf.is_none() {
                return Err(ConfigError { msg: format!("class {name:?} is not a leaf"), ..at });
            }
            Ok(i)
        };
        let default_class = p.default_class.as_deref().map(|n| leaf_index(n, ConfigError::at("default_class", ""))).transpose()?;
        let filters = p
            .filters
            .iter()
            .enumerate()
            .map(|(k, f)| leaf_index(&f.class, ConfigError::at("class", "").with_outer(k).with_outer("filters")).map(|i| (f.clone(), i)))
            .collect::<Result<Vec<_>, _>>()?;
        let leaves = (0..classes.len()).filter(|&i| classes[i].leaf.is_some()).collect();
        Ok(Htb {
            classes,
            leaves,
            filters,
            default_class,
            direct: PacketQueue::default(),
            direct_limit: p.direct_limit,
            ptr: [[0; NUM_PRIO]; MAX_DEPTH],
            synced: SimTime::ZERO,
            total: Backlog::default(),
        })
    }

    pub fn class_index(&self, name: &str) -> Option<usize> {
        self.classes.iter().position(|c| c.name == name)
    }

    /// The leaf a packet goes to; `None`: the direct queue.
    pub fn classify(&self, pkt: &Packet) -> Option<usize> {
        self.filters.iter().find(|(f, _)| f.matches(pkt)).map(|&(_, i)| i).or(self.default_class)
    }

    /// Tokens and ctokens (bytes) of a class as last credited, and its mode.
    pub fn tokens(&self, name: &str) -> Option<(i64, i64, Mode)> {
        let c = &self.classes[self.class_index(name)?];
        Some((c.tokens, c.ctokens, c.mode()))
    }

    pub fn class_stats(&self, name: &str) -> Option<HtbClassStats> {
        Some(self.classes[self.class_index(name)?].stats)
    }

    /// The quantum (bytes) a class was given.
    pub fn quantum(&self, name: &str) -> Option<u64> {
        Some(self.classes[self.class_index(name)?].quantum as u64)
    }

    /// `rate_bps` / `ceil_bps` of class `name` (`tc class change ... rate
    /// R ceil C`): both buckets are credited at the old rates up to `now`
    /// first; the fraction of a byte earned carries over to the new rate's
    /// grid (as a policer's change does, `meter::TokenClock::rebase`); the
    /// class keeps its burst, cburst and quantum. The rate may not exceed
    /// the ceil, nor the ceil fall below the rate.
    pub fn set_rate_knob(&mut self, name: &str, knob: &str, op: KnobOp, now: SimTime) -> KnobResult {
        let i = self.class_index(name).ok_or(KnobError::Unknown)?;
        let old = match knob {
            "rate_bps" => self.classes[i].rate.rate().as_bps(),
            "ceil_bps" => self.classes[i].ceil.rate().as_bps(),
            _ => return Err(KnobError::Unknown),
        } as f64;
        let KnobOp::Set(v) = op else { return Ok(old) };
        if !(v >= 1.0 && v <= u64::MAX as f64 && v.fract() == 0.0) {
            return Err(KnobError::Invalid(format!("{knob} = {v}: must be a whole positive rate in bit/s")));
        }
        let new = DataRate(v as u64);
        let c = &self.classes[i];
        let (rate, ceil) = if knob == "rate_bps" { (new, c.ceil.rate()) } else { (c.rate.rate(), new) };
        if rate > ceil {
            return Err(KnobError::Invalid(format!("{knob} = {v}: the rate ({rate}) may not exceed the ceil ({ceil})")));
        }
        self.sync(now);
        let c = &mut self.classes[i];
        let (new_rate, new_ceil) = (TokenRate::new(rate).expect("positive"), TokenRate::new(ceil).expect("positive"));
        c.clock.rebase(&c.rate, &new_rate);
        c.cclock.rebase(&c.ceil, &new_ceil);
        c.rate = new_rate;
        c.ceil = new_ceil;
        Ok(old)
    }

    /// Credit every bucket up to `now`, exactly, capped at burst/cburst.
    fn sync(&mut self, now: SimTime) {
        if now <= self.synced {
            return;
        }
        self.synced = now;
        for c in &mut self.classes {
            let t = c.clock.advance(&c.rate, now);
            c.tokens = (c.tokens as i128 + t.min(i64::MAX as u128) as i128).min(c.burst as i128) as i64;
            let t = c.cclock.advance(&c.ceil, now);
            c.ctokens = (c.ctokens as i128 + t.min(i64::MAX as u128) as i128).min(c.cburst as i128) as i64;
        }
    }

    /// The level of the class that lets leaf `l` send now, if any.
    fn lender_level(&self, l: usize) -> Option<usize> {
        let mut c = l;
        loop {
            match self.classes[c].mode() {
                Mode::CantSend => return None,
                Mode::CanSend => return Some(self.classes[c].level),
                Mode::MayBorrow => c = self.classes[c].parent?,
            }
        }
    }

    /// First instant after `synced` at which `clock` at `rate` has earned
    /// `k >= 1` bytes: a binary search on a copy of the clock (the clock's
    /// carry is private, and the search is exact whatever it is).
    fn earn_time(&self, clock: &TokenClock, rate: &TokenRate, k: u64) -> SimTime {
        let base = self.synced.0 as u128;
        let bpp = rate.bytes_per_period() as u128;
        let per = rate.period_ns() as u128;
        // With a carry of zero the k-th byte arrives at ceil(k*per/bpp): an upper bound.
        let hi_dt = (k as u128 * per).div_ceil(bpp);
        let (mut lo, mut hi) = (base + 1, (base + hi_dt).min(u64::MAX as u128));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let mut c = *clock;
            if c.advance(rate, SimTime(mid as u64)) >= k as u128 {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        SimTime(lo as u64)
    }

    /// Earliest mode change of a class on the path of a backlogged leaf
    /// (`htb_class_mode`'s `diff`, Linux's event queue).
    fn next_event(&self) -> SimTime {
        let mut best = SimTime::MAX;
        let mut seen = vec![false; self.classes.len()];
        for &l in &self.leaves {
            if self.classes[l].leaf.as_ref().is_some_and(|f| f.held.pkts == 0) {
                continue;
            }
            let mut c = Some(l);
            while let Some(i) = c {
                if seen[i] {
                    break;
                }
                seen[i] = true;
                let k = &self.classes[i];
                let t = if k.ctokens < 0 {
                    self.earn_time(&k.cclock, &k.ceil, k.ctokens.unsigned_abs())
                } else if k.tokens < 0 {
                    self.earn_time(&k.clock, &k.rate, k.tokens.unsigned_abs())
                } else {
                    SimTime::MAX
                };
                best = best.min(t);
                c = k.parent;
            }
        }
        best
    }

    /// Bring leaf `l`'s backlog and the total up to date after a call into
    /// its child (which may have dropped queued packets).
    fn resync(&mut self, l: usize) {
        let leaf = self.classes[l].leaf.as_mut().expect("a leaf");
        let (before, after) = (leaf.held, leaf.child.backlog());
        leaf.held = after;
        self.total.pkts = self.total.pkts - before.pkts + after.pkts;
        self.total.bytes = self.total.bytes - before.bytes + after.bytes;
    }

    /// `htb_charge_class`.
    fn charge(&mut self, leaf: usize, level: usize, bytes: u32) {
        let b = bytes as i64;
        let mut c = Some(leaf);
        while let Some(i) = c {
            let k = &mut self.classes[i];
            if k.level >= level {
                if k.level == level {
                    k.stats.lends += 1;
                }
                k.tokens = (k.tokens - b).max(k.floor);
            } else {
                k.stats.borrows += 1;
            }
            k.ctokens = (k.ctokens - b).max(k.cfloor);
            k.stats.bytes += bytes as u64;
            c = k.parent;
        }
    }
}

impl Htb {
    fn knob_impl(&mut self, class: &str, name: &str, op: KnobOp, ctx: KnobCtx) -> KnobResult {
        match name {
            "rate_bps" | "ceil_bps" => self.set_rate_knob(class, name, op, ctx.now),
            _ => {
                let i = self.class_index(class).ok_or(KnobError::Unknown)?;
                match self.classes[i].leaf.as_mut() {
                    Some(l) => l.child.knob("", name, op, ctx),
                    None => Err(KnobError::Unknown),
                }
            }
        }
    }
}

impl Qdisc for Htb {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)> {
        self.sync(ctx.now);
        let size = pkt.size;
        match self.classify(&pkt) {
            None => {
                if !self.direct_limit.admits(self.direct.backlog(), size) {
                    self.direct.counters.on_drop(size, DropReason::Tail);
                    return Err((pkt, DropReason::Tail));
                }
                self.direct.push(pkt, ctx.now);
                self.total.pkts += 1;
                self.total.bytes += size as u64;
                Ok(())
            }
            Some(i) => {
                let res = self.classes[i].leaf.as_mut().expect("classify gives leaves").child.enqueue(pkt, ctx);
                self.resync(i);
                res
            }
        }
    }

    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued {
        if self.total.pkts == 0 {
            return Dequeued::Empty;
        }
        self.sync(ctx.now);
        // `htb_dequeue`: the direct queue first, unshaped.
        if let Some(p) = self.direct.pop(ctx.now) {
            self.total.pkts -= 1;
            self.total.bytes -= p.size as u64;
            return Dequeued::Packet(p);
        }
        // Lowest (lender level, prio) among the leaves that may send.
        let mut best: Option<(usize, usize)> = None;
        for &l in &self.leaves {
            let c = &self.classes[l];
            if c.leaf.as_ref().is_some_and(|f| f.held.pkts == 0) {
                continue;
            }
            if let Some(level) = self.lender_level(l) {
                let key = (level, c.prio);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
        }
        let Some((level, prio)) = best else {
            return Dequeued::NotBefore(self.next_event().max(ctx.now + Duration(1)));
        };
        // DRR among the leaves of that group, from the group's pointer.
        let n = self.leaves.len();
        let start = self.ptr[level][prio];
        let pos = (0..n)
            .map(|k| (start + k) % n)
            .find(|&k| {
                let l = self.leaves[k];
                let c = &self.classes[l];
                c.prio == prio && c.leaf.as_ref().unwrap().held.pkts > 0 && self.lender_level(l) == Some(level)
            })
            .expect("the group has a member");
        let l = self.leaves[pos];
        let c = &mut self.classes[l];
        let quantum = c.quantum;
        let got = c.leaf.as_mut().unwrap().child.dequeue(ctx);
        self.resync(l);
        let p = match got {
            Dequeued::Packet(p) => p,
            // The child dropped all it held (CoDel): look again.
            Dequeued::Empty if self.classes[l].leaf.as_ref().unwrap().held.pkts == 0 => return self.dequeue(ctx),
            other => panic!("htb: leaf {:?} was picked and answered {other:?}", self.classes[l].name),
        };
        let c = &mut self.classes[l];
        let leaf = c.leaf.as_mut().unwrap();
        // `htb_dequeue_tree`: deficit[level] -= len; if < 0, += quantum and move on.
        leaf.deficit[level] -= p.size as i64;
        self.ptr[level][prio] = if leaf.deficit[level] < 0 {
            leaf.deficit[level] += quantum;
            (pos + 1) % n
        } else {
            pos
        };
        self.charge(l, level, p.size);
        Dequeued::Packet(p)
    }

    fn backlog(&self) -> Backlog {
        self.total
    }

    fn head_size(&self) -> Option<u32> {
        match self.direct.head() {
            Some(p) => Some(p.size),
            None => self.leaves.iter().filter_map(|&l| self.classes[l].leaf.as_ref()).find(|f| f.held.pkts > 0)?.child.head_size(),
        }
    }

    /// The leaves in declaration order, then the direct queue (named
    /// [`DIRECT`]) when there is no default class. Inner classes hold no
    /// packets: see [`Htb::class_stats`].
    fn knob(&mut self, class: &str, name: &str, op: KnobOp, ctx: KnobCtx) -> KnobResult {
        self.knob_impl(class, name, op, ctx)
    }
    fn count_policed(&mut self, pkt: &Packet) {
        match self.classify(pkt) {
            None => self.direct.counters.on_drop(pkt.size, DropReason::Policer),
            Some(i) => self.classes[i].leaf.as_mut().expect("classify gives leaves").child.count_policed(pkt),
        }
    }

    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog)) {
        for &l in &self.leaves {
            let name = &self.classes[l].name;
            self.classes[l].leaf.as_ref().unwrap().child.for_each_queue(&mut |sub, c, b| {
                if sub.is_empty() {
                    f(name, c, b)
                } else {
                    f(&format!("{name}/{sub}"), c, b)
                }
            });
        }
        if self.default_class.is_none() {
            f(DIRECT, &self.direct.counters, self.direct.backlog());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn ctx_at(rng: &mut Rng, t: u64) -> QueueCtx<'_> {
        QueueCtx::new(SimTime(t), DataRate::gbps(10), rng)
    }

    #[test]
    fn a_rate_change_credits_at_the_old_rate_then_the_new() {
        // 8 Mbit/s = 1 byte/us, burst 100 kB; send 60 kB at t = 0 (tokens 40 kB),
        // at 10 ms switch to 16 Mbit/s: +10 kB at the old rate; 10 ms later
        // +20 kB at the new one.
        let spec = HtbClassSpec::new("1:1", None, DataRate::mbps(8)).ceil(DataRate::mbps(100)).burst(100_000).cburst(100_000);
        let mut q = Htb::new(HtbParams::new(vec![spec]).default_class("1:1")).unwrap();
        let mut rng = Rng::stream(1, "htb-knob");
        for _ in 0..40 {
            q.enqueue(Packet::test(0, 1500), &mut ctx_at(&mut rng, 0)).unwrap();
        }
        for _ in 0..40 {
            assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 0)), Dequeued::Packet(_)));
        }
        assert_eq!(q.tokens("1:1").unwrap().0, 100_000 - 60_000);
        let ctx = KnobCtx { now: SimTime(10_000_000), link_rate: DataRate::gbps(10) };
        assert_eq!(q.knob("1:1", "rate_bps", KnobOp::Set(16e6), ctx), Ok(8e6));
        assert_eq!(q.tokens("1:1").unwrap().0, 40_000 + 10_000);
        assert_eq!(q.knob("1:1", "rate_bps", KnobOp::Get, ctx), Ok(16e6));
        q.sync(SimTime(20_000_000));
        assert_eq!(q.tokens("1:1").unwrap().0, 50_000 + 20_000);
        // The rate may not pass the ceil, nor the ceil fall under the rate.
        assert!(matches!(q.knob("1:1", "rate_bps", KnobOp::Set(2e8), ctx), Err(KnobError::Invalid(_))));
        assert!(matches!(q.knob("1:1", "ceil_bps", KnobOp::Set(1e6), ctx), Err(KnobError::Invalid(_))));
        assert_eq!(q.knob("1:1", "ceil_bps", KnobOp::Set(5e7), ctx), Ok(1e8));
        assert_eq!(q.knob("1:9", "rate_bps", KnobOp::Get, ctx), Err(KnobError::Unknown));
    }

    #[test]
    fn defaults_follow_tc_and_the_kernel() {
        // 900 Mbit/s = 112.5 MB/s: quantum 11.25 MB -> clamped to 200000.
        assert_eq!(default_quantum(DataRate::mbps(900), 10), QUANTUM_MAX);
        // 400 kbit/s = 50 kB/s: 5000 B.
        assert_eq!(default_quantum(DataRate(400_000), 10), 5000);
        // 8 kbit/s: 100 B -> clamped up to 1000.
        assert_eq!(default_quantum(DataRate(8_000), 10), QUANTUM_MIN);
        assert_eq!(default_burst(DataRate::mbps(900)), 1600);
        assert_eq!(default_burst(DataRate::gbps(16)), 1602);
        let q = Htb::new(HtbParams::new(vec![HtbClassSpec::new("1:1", None, DataRate::mbps(900))])).unwrap();
        assert_eq!(q.tokens("1:1"), Some((1600, 1600, Mode::CanSend)));
        assert_eq!(q.quantum("1:1"), Some(200_000));
    }

    #[test]
    fn construction_is_validated() {
        let c = |n: &str, p: Option<&str>| HtbClassSpec::new(n, p, DataRate::mbps(100));
        let bad = |classes: Vec<HtbClassSpec>| Htb::new(HtbParams::new(classes)).is_err();
        assert!(bad(vec![]));
        assert!(bad(vec![c("a", None), c("a", None)]));
        assert!(bad(vec![c("", None)]));
        assert!(bad(vec![c("b", Some("a")), c("a", None)]));
        assert!(bad(vec![c("a", None).ceil(DataRate::mbps(50))]));
        assert!(bad(vec![c("a", None).prio(8)]));
        assert!(bad(vec![c("a", None).quantum(0)]));
        assert!(bad(vec![HtbClassSpec::new("a", None, DataRate(0))]));
        assert!(bad(vec![c(DIRECT, None)]));
        // Depth: root + 6 inner levels + leaf = 8 levels is the most.
        let chain = |n: usize| (0..n).map(|i| c(&i.to_string(), (i > 0).then(|| (i - 1).to_string()).as_deref())).collect::<Vec<_>>();
        assert!(Htb::new(HtbParams::new(chain(7))).is_ok());
        assert!(bad(chain(8)));
        // Filters and the default must name leaves.
        let tree = || vec![c("1:1", None), c("1:10", Some("1:1"))];
        assert!(Htb::new(HtbParams::new(tree()).default_class("1:1")).is_err());
        assert!(Htb::new(HtbParams::new(tree()).default_class("1:99")).is_err());
        assert!(Htb::new(HtbParams::new(tree()).filter(HtbFilter::src("10.0.0.0/8", "1:1").unwrap())).is_err());
        let q = Htb::new(HtbParams::new(tree()).default_class("1:10")).unwrap();
        assert_eq!(q.classes[0].level, 7);
        assert_eq!(q.classes[1].level, 0);
        assert_eq!(q.leaves, vec![1]);
    }

    #[test]
    fn classification_filters_default_and_direct() {
        // The document's filter: u32 match ip src 10.10.200.20/32 flowid 1:1.
        let classes = vec![HtbClassSpec::new("1:1", None, DataRate::mbps(900)), HtbClassSpec::new("1:2", None, DataRate::mbps(10))];
        let f = HtbFilter::src("10.10.200.20/32", "1:1").unwrap();
        let ip = |s: &str| crate::topology::parse_ipv4(s).unwrap();
        let mut p = Packet::test(0, 1500);
        p.src_ip = ip("10.10.200.20");
        let mut other = Packet::test(0, 1500);
        other.src_ip = ip("10.10.200.21");
        let q = Htb::new(HtbParams::new(classes.clone()).filter(f.clone())).unwrap();
        assert_eq!(q.classify(&p), Some(0));
        assert_eq!(q.classify(&other), None);
        let q = Htb::new(HtbParams::new(classes.clone()).filter(f).default_class("1:2")).unwrap();
        assert_eq!(q.classify(&other), Some(1));
        let d = HtbFilter::dst("192.168.0.0/16", "1:2").unwrap();
        let mut to = Packet::test(0, 100);
        to.dst_ip = ip("192.168.7.1");
        assert_eq!(Htb::new(HtbParams::new(classes).filter(d)).unwrap().classify(&to), Some(1));

        // The direct queue: unshaped, served first, reported as "direct".
        let mut rng = Rng::stream(1, "t");
        let classes = vec![HtbClassSpec::new("1:1", None, DataRate::mbps(1)).burst(0).cburst(0)];
        let mut q = Htb::new(HtbParams::new(classes).filter(HtbFilter::src("10.10.200.20/32", "1:1").unwrap())).unwrap();
        q.enqueue(p.clone(), &mut ctx_at(&mut rng, 0)).unwrap();
        q.enqueue(other.clone(), &mut ctx_at(&mut rng, 0)).unwrap();
        q.enqueue(other, &mut ctx_at(&mut rng, 0)).unwrap();
        let got = |d: Dequeued| match d {
            Dequeued::Packet(p) => p.src_ip,
            d => panic!("{d:?}"),
        };
        assert_eq!(got(q.dequeue(&mut ctx_at(&mut rng, 0))), ip("10.10.200.21"));
        assert_eq!(got(q.dequeue(&mut ctx_at(&mut rng, 0))), ip("10.10.200.21"));
        assert_eq!(got(q.dequeue(&mut ctx_at(&mut rng, 0))), ip("10.10.200.20"));
        let mut names = vec![];
        q.for_each_queue(&mut |n, c, _| names.push((n.to_string(), c.deq_pkts)));
        assert_eq!(names, vec![("1:1".to_string(), 1), (DIRECT.to_string(), 2)]);
    }

    #[test]
    fn exact_tokens_and_wake_up_time() {
        // 1 Gbit/s = a byte every 8 ns; burst 3000 B; ceil 2 Gbit/s, cburst 2000 B.
        let mut rng = Rng::stream(1, "t");
        let spec = HtbClassSpec::new("a", None, DataRate::gbps(1)).burst(3000).ceil(DataRate::gbps(2)).cburst(2000);
        let mut q = Htb::new(HtbParams::new(vec![spec]).default_class("a")).unwrap();
        for _ in 0..4 {
            q.enqueue(Packet::test(0, 1500), &mut ctx_at(&mut rng, 0)).unwrap();
        }
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 0)), Dequeued::Packet(_)));
        assert_eq!(q.tokens("a"), Some((1500, 500, Mode::CanSend)));
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 0)), Dequeued::Packet(_)));
        // ctokens -1000: red until 1000 B at 2 Gbit/s (4000 ns) are earned.
        assert_eq!(q.tokens("a"), Some((0, -1000, Mode::CantSend)));
        match q.dequeue(&mut ctx_at(&mut rng, 0)) {
            Dequeued::NotBefore(t) => assert_eq!(t, SimTime(4000)),
            d => panic!("{d:?}"),
        }
        // At 3999 ns the ceil bucket is still one byte short: wake at 4000.
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 3999)), Dequeued::NotBefore(SimTime(4000))));
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 4000)), Dequeued::Packet(_)));
        // tokens 0 + 500 (4000 ns at 1 Gbit/s) - 1500; ctokens 0 - 1500.
        assert_eq!(q.tokens("a"), Some((-1000, -1500, Mode::CantSend)));
        // ctokens need 1500 B at 2 Gbit/s (6000 ns), tokens 1000 B at 1 Gbit/s (8000 ns):
        // the first event is the ceil at 10000 ns (red -> yellow), then the rate at 12000.
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 4000)), Dequeued::NotBefore(SimTime(10000))));
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 10000)), Dequeued::NotBefore(SimTime(12000))));
        assert_eq!(q.tokens("a"), Some((-250, 0, Mode::MayBorrow)));
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 12000)), Dequeued::Packet(_)));
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 12000)), Dequeued::Empty));
        // An odd rate: 3 bit/s, one byte each 8/3 s; the wake-up is on the grid.
        let spec = HtbClassSpec::new("s", None, DataRate(3)).burst(0).cburst(0);
        let mut q = Htb::new(HtbParams::new(vec![spec]).default_class("s")).unwrap();
        q.enqueue(Packet::test(0, 2), &mut ctx_at(&mut rng, 0)).unwrap();
        q.enqueue(Packet::test(0, 2), &mut ctx_at(&mut rng, 0)).unwrap();
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 0)), Dequeued::Packet(_)));
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 1)), Dequeued::NotBefore(SimTime(5_333_333_334))));
    }

    #[test]
    fn a_yellow_leaf_borrows_from_a_green_parent_only() {
        let mut rng = Rng::stream(1, "t");
        let classes = vec![
            HtbClassSpec::new("p", None, DataRate::gbps(1)).burst(1500).cburst(1500),
            HtbClassSpec::new("a", Some("p"), DataRate::mbps(100)).ceil(DataRate::gbps(1)).burst(0).cburst(3000),
        ];
        let mut q = Htb::new(HtbParams::new(classes).default_class("a")).unwrap();
        for _ in 0..3 {
            q.enqueue(Packet::test(0, 1500), &mut ctx_at(&mut rng, 0)).unwrap();
        }
        // a is green (tokens 0): sends, charging p's tokens too.
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 0)), Dequeued::Packet(_)));
        assert_eq!(q.tokens("a").unwrap().2, Mode::MayBorrow);
        assert_eq!(q.tokens("p"), Some((0, 0, Mode::CanSend)));
        // a yellow, p green: borrows; p lends.
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 0)), Dequeued::Packet(_)));
        assert_eq!(q.class_stats("a").unwrap().borrows, 1);
        assert_eq!(q.class_stats("p").unwrap().lends, 1);
        assert_eq!(q.tokens("p"), Some((-1500, -1500, Mode::CantSend)));
        // p red, a yellow (its ctokens 0): wait for p's ceil, 1500 B at 1 Gbit/s.
        assert!(matches!(q.dequeue(&mut ctx_at(&mut rng, 0)), Dequeued::NotBefore(SimTime(12_000))));
    }
}
