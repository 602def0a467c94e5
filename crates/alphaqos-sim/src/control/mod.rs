//! The control plane: handles, knobs, agents, and the log of every change.
//!
//! # Handles
//!
//! Every component a scenario names gets a handle when the world is built
//! ([`Handles`]), by the name a user reads in the results:
//!
//! | handle | component |
//! |---|---|
//! | `A->B` | the egress interface of A towards B (its whole discipline) |
//! | `A->B/class` | a class of that interface |
//! | `node/term` | a firewall filter term of a router, and its policer |
//! | `flow` | a scenario flow |
//! | `workload` | a workload |
//! | `workload#k` | the k-th transfer (from 0) a workload started |
//!
//! An unknown name is an error that lists the nearest known ones.
//!
//! # Knobs and measurements
//!
//! [`World::get`] reads a measurement or a knob through a handle,
//! [`World::set_as`] changes a knob (`knob.rs` lists them with their
//! units) and logs the change: time, agent, handle, knob, old value, new
//! value (the `control` table, `control.parquet`). Measurements:
//!
//! - interface: `len_pkts`, `len_bytes`, `tx_pkts`, `tx_bytes`,
//!   `drop_pkts`, `rate_bps`; class: `len_pkts`, `len_bytes`, `enq_pkts`,
//!   `enq_bytes`, `deq_pkts`, `deq_bytes`, `drop_pkts`, `drop_bytes`, and
//!   `avg` (the drop profile's average queue);
//! - term: `matched_pkts`, `matched_bytes`, `out_of_profile_pkts`,
//!   `discarded_pkts`, `tokens` (its policer's first bucket);
//! - flow: `tx_bytes`, `rx_bytes`; TCP also `srtt_ns`, `cwnd_bytes`,
//!   `bytes_acked`, `retransmits`, `rtt_samples`, `rtt_sum_ns` (every RTT
//!   sample so far and their sum: the mean RTT over an interval is the
//!   difference of the sums over the difference of the counts);
//! - workload: `started`, `completed`, `active_conns`, `rtt_samples`,
//!   `rtt_sum_ns` (its connections, open and closed);
//! - transfer: `size_bytes`, `bytes_acked`, `bytes_left`, `done`,
//!   `start_ns`, `end_ns` (0 until done).
//!
//! # Agents
//!
//! An [`Agent`] is woken by its timer (`Event::Agent`), reads measurements
//! and sets knobs through a [`Control`], which offers nothing else (a
//! [`World`]: the control plane sits on top of the engine and sees nothing
//! of it but this trait, which `Simulation` implements in `world.rs`), and
//! says when it wants to wake next. An agent's wake-up at `t` runs before
//! every other event at `t` (`EventQueue::schedule_first`), so that an
//! agent is exactly what a caller stepping the run from outside to `t`
//! (the Python `Simulation.advance/get/set`) would be. The agents of the
//! source documents: [`wred_rtt`], [`deadline`], [`admission`].
//!
//! Tests: `tests/control.rs` (handles, knobs, the log, the agents against
//! their documents), the unit tests of each agent and of the meters' knobs.

pub mod admission;
pub mod deadline;
pub mod knobs;

pub mod wred_rtt;

use crate::time::SimTime;
use std::collections::BTreeMap;

/// What a handle names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Iface(u32),
    /// Interface and class name.
    Class(u32, String),
    /// Router and term name.
    Term(u32, String),
    Flow(u32),
    Workload(u32),
    /// Workload and the transfer's rank in it.
    Transfer(u32, u32),
}

/// A handle: an index into [`Handles`].
pub type Handle = u32;

/// Every name a scenario gives a component, resolved once.
#[derive(Default)]
pub struct Handles {
    by_name: BTreeMap<String, Handle>,
    list: Vec<(String, Target)>,
}

impl Handles {
    pub(crate) fn add(&mut self, name: String, t: Target) {
        if !self.by_name.contains_key(&name) {
            self.by_name.insert(name.clone(), self.list.len() as Handle);
            self.list.push((name, t));
        }
    }

    pub fn name(&self, h: Handle) -> &str {
        &self.list[h as usize].0
    }
    pub fn target(&self, h: Handle) -> &Target {
        &self.list[h as usize].1
    }

    /// The handle of `name`: a known name, or `workload#k`.
    pub fn resolve(&mut self, name: &str) -> Result<Handle, String> {
        if let Some(&h) = self.by_name.get(name) {
            return Ok(h);
        }
        if let Some((w, k)) = name.rsplit_once('#') {
            if let (Some(&h), Ok(k)) = (self.by_name.get(w), k.parse::<u32>()) {
                if let Target::Workload(w) = self.list[h as usize].1 {
                    self.add(name.to_string(), Target::Transfer(w, k));
                    return Ok(self.by_name[name]);
                }
            }
        }
        Err(format!("unknown handle '{name}'{}", near(name, self.by_name.keys().map(String::as_str))))
    }
}

/// ", nearest: a, b, c" (by edit distance), or "" if nothing is close.
pub fn near<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> String {
    let mut scored: Vec<(usize, &str)> = known.map(|k| (edit_distance(name, k), k)).collect();
    scored.sort();
    let limit = (name.len() / 2).max(3);
    let close: Vec<&str> = scored.iter().take_while(|(d, _)| *d <= limit).take(3).map(|(_, k)| *k).collect();
    if close.is_empty() {
        String::new()
    } else {
        format!("; nearest: {}", close.join(", "))
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let cur = row[j + 1];
            row[j + 1] = (prev + (ca != b[j]) as usize).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// One change of a knob.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub time: SimTime,
    pub agent: String,
    pub handle: String,
    pub knob: String,
    pub old: f64,
    pub new: f64,
}

/// What agents report beyond their changes, as result tables.
#[derive(Default)]
pub struct Reports {
    /// `reservation`: (agent, time, transfer handle, reservation bit/s).
    pub reservation: Vec<(String, SimTime, String, f64)>,
    /// `reservation_summary`: one row per deadline agent.
    pub reservation_summary: Vec<deadline::Summary>,
    /// `admission`: one row per request.
    pub admission: Vec<admission::Request>,
}

/// A timer-driven controller.
pub trait Agent: Send {
    fn name(&self) -> &str;
    /// When it first wakes (None: only on requests).
    fn first_wake(&self) -> Option<SimTime>;
    /// Its timer fired at `now`: act, and say when to wake next.
    fn on_timer(&mut self, now: SimTime, ctl: &mut Control) -> Option<SimTime>;
    /// A transfer of `req.workload` arrives: admit it? (admission agents).
    fn on_request(&mut self, _req: &mut admission::Request, _ctl: &mut Control) -> bool {
        true
    }
    /// The transfer it admitted has opened its connections as `transfer`.
    fn on_admitted(&mut self, _req: &admission::Request, _transfer: Handle, _ctl: &mut Control) {}
    /// Add its rows to the reports (at the end of the run).
    fn report(&self, _out: &mut Reports) {}
}

/// What the control plane may touch of a running world: measurements and
/// knobs through handles, the topology it needs to plan, policer terms it
/// adds and removes, agents it spawns. `Simulation` implements it
/// (`world.rs`); agents and their builders see only this.
pub trait World {
    fn now(&self) -> SimTime;
    /// The handles of the world (resolve a name, a handle's name or target).
    fn handles(&mut self) -> &mut Handles;
    /// Read measurement or knob `what` of the component `h` names.
    fn get(&mut self, h: Handle, what: &str) -> Result<f64, String>;
    /// Change a knob as `agent` does; logged. Returns the old value.
    fn set_as(&mut self, agent: &str, h: Handle, knob: &str, value: f64) -> Result<f64, String>;
    /// Does the component have this knob (or measurement)? Before the run,
    /// transfers not yet started answer by their kind.
    fn check_knob(&mut self, h: Handle, knob: &str) -> Result<(), String>;
    /// The interfaces from host `src` to host `dst` and their rates, bit/s.
    fn path_rates(&self, src: u32, dst: u32) -> Vec<(u32, u64)>;
    /// A node by name: its index and whether it is a router.
    fn node(&self, name: &str) -> Option<(u32, bool)>;
    fn node_name(&self, n: u32) -> &str;
    /// The IPv4 address of node `n`.
    fn node_addr(&self, n: u32) -> u32;
    /// An interface's rate (bit/s) and MTU (bytes).
    fn iface_rate_mtu(&self, i: u32) -> (u64, u32);
    /// What a builder needs of workload `w`.
    fn workload_info(&self, w: u32) -> WorkloadInfo;
    /// The source and destination hosts of a started transfer.
    fn transfer_ends(&self, h: Handle) -> Option<(u32, u32)>;
    /// The source ports of a transfer's connections.
    fn transfer_ports(&self, h: Handle) -> Vec<u16>;
    /// Add a policing term ahead of router `node`'s filter (run time).
    fn add_policer_term(&mut self, node: u32, cfg: &crate::config::FilterTermConfig) -> Result<(), String>;
    fn remove_term(&mut self, node: u32, name: &str);
    /// Start another agent, first woken at `at`.
    fn spawn(&mut self, agent: Box<dyn Agent>, at: SimTime);
}

/// What an agent's builder needs to know of a workload.
#[derive(Clone, Debug)]
pub struct WorkloadInfo {
    pub start: SimTime,
    /// The congestion control of its first (base) stream.
    pub base_cc: String,
    pub mss_bytes: u32,
}

/// An agent's view of the world: measurements and knobs through handles.
pub struct Control<'a> {
    pub(crate) world: &'a mut dyn World,
    pub(crate) agent: &'a str,
}

impl Control<'_> {
    pub fn now(&self) -> SimTime {
        self.world.now()
    }
    pub fn handle(&mut self, name: &str) -> Result<Handle, String> {
        self.world.handles().resolve(name)
    }
    pub fn handle_name(&mut self, h: Handle) -> &str {
        self.world.handles().name(h)
    }
    pub fn get(&mut self, h: Handle, what: &str) -> Result<f64, String> {
        self.world.get(h, what)
    }
    /// Change a knob (logged under this agent's name); the old value.
    pub fn set(&mut self, h: Handle, knob: &str, value: f64) -> Result<f64, String> {
        self.world.set_as(self.agent, h, knob, value)
    }
    /// The interfaces from host `src` to host `dst` and their rates, bit/s.
    pub fn path_rates(&self, src: u32, dst: u32) -> Vec<(u32, u64)> {
        self.world.path_rates(src, dst)
    }
    /// A node's name.
    pub fn node_name(&self, n: u32) -> &str {
        self.world.node_name(n)
    }
    /// The IPv4 address of node `n`.
    pub fn node_addr(&self, n: u32) -> u32 {
        self.world.node_addr(n)
    }
    /// The source and destination hosts of a started transfer.
    pub fn transfer_ends(&self, h: Handle) -> Option<(u32, u32)> {
        self.world.transfer_ends(h)
    }
    /// The source ports of a transfer's connections.
    pub fn transfer_ports(&self, h: Handle) -> Vec<u16> {
        self.world.transfer_ports(h)
    }
    /// Add a policing term ahead of router `node`'s filter (run time).
    pub fn add_policer_term(&mut self, node: u32, cfg: &crate::config::FilterTermConfig) -> Result<(), String> {
        self.world.add_policer_term(node, cfg)
    }
    pub fn remove_term(&mut self, node: u32, name: &str) {
        self.world.remove_term(node, name)
    }
    /// Start another agent, first woken at `at`.
    pub fn spawn(&mut self, agent: Box<dyn Agent>, at: SimTime) {
        self.world.spawn(agent, at)
    }
}

/// Measurements every transfer has, and the knobs it passes to its streams.
pub const TRANSFER_MEASURES: &[&str] = &["size_bytes", "bytes_acked", "bytes_left", "done", "start_ns", "end_ns"];
pub const TRANSFER_KNOBS: &[&str] = &["ctr_bps", "pacing_rate_bps", "cwnd_clamp_bytes"];
