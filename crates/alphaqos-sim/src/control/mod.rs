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
//! [`Simulation::get`] reads a measurement or a knob through a handle,
//! [`Simulation::set`] changes a knob (`knob.rs` lists them with their
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
//! and sets knobs through a [`Control`], which offers nothing else, and
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
pub mod knob;
pub mod wred_rtt;

use crate::qos::Qdisc;
use crate::config::{AgentConfig, Config};
use crate::conn::ConnId;
use crate::event::{Event, FlowTimer};
use crate::metrics::{Column, Table};
use crate::network::FlowIo;
use crate::sim::{Owner, Simulation};
use crate::time::SimTime;
use crate::units::DataRate;
use knob::{KnobCtx, KnobError, KnobOp, KnobResult, COLORS, KNOBS};
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
    fn add(&mut self, name: String, t: Target) {
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

/// An agent's view of the world: measurements and knobs through handles.
pub struct Control<'a> {
    sim: &'a mut Simulation,
    agent: &'a str,
}

impl Control<'_> {
    pub fn now(&self) -> SimTime {
        self.sim.net.now
    }
    pub fn handle(&mut self, name: &str) -> Result<Handle, String> {
        self.sim.handles.resolve(name)
    }
    pub fn handle_name(&self, h: Handle) -> &str {
        self.sim.handles.name(h)
    }
    pub fn get(&mut self, h: Handle, what: &str) -> Result<f64, String> {
        self.sim.get(h, what)
    }
    /// Change a knob (logged under this agent's name); the old value.
    pub fn set(&mut self, h: Handle, knob: &str, value: f64) -> Result<f64, String> {
        self.sim.set_as(self.agent, h, knob, value)
    }
    /// The interfaces from host `src` to host `dst` and their rates, bit/s.
    pub fn path_rates(&self, src: u32, dst: u32) -> Vec<(u32, u64)> {
        self.sim.net.path(src, dst).into_iter().map(|i| (i, self.sim.net.ifaces[i as usize].rate.as_bps())).collect()
    }
    /// A node's name.
    pub fn node_name(&self, n: u32) -> &str {
        &self.sim.net.nodes[n as usize].name
    }
    /// The IPv4 address of node `n`.
    pub fn node_addr(&self, n: u32) -> u32 {
        self.sim.net.nodes[n as usize].addr
    }
    /// The source and destination hosts of a started transfer.
    pub fn transfer_ends(&self, h: Handle) -> Option<(u32, u32)> {
        let t = &self.sim.transfers[self.sim.transfer_of(h)? as usize];
        Some((t.src, t.dst))
    }
    /// The source ports of a transfer's connections.
    pub fn transfer_ports(&self, h: Handle) -> Vec<u16> {
        match self.sim.transfer_of(h) {
            Some(t) => self.sim.streams[self.sim.transfers[t as usize].stream_rows()].iter().map(|s| s.src_port).collect(),
            None => Vec::new(),
        }
    }
    /// Add a policing term ahead of router `node`'s filter (run time).
    pub fn add_policer_term(&mut self, node: u32, cfg: &crate::config::FilterTermConfig) -> Result<(), String> {
        let f = self.sim.net.filters[node as usize].get_or_insert_with(|| crate::qos::classify::Filter { terms: Vec::new() });
        f.insert_term(0, cfg)?;
        self.sim.handles.add(format!("{}/{}", self.sim.net.nodes[node as usize].name, cfg.name), Target::Term(node, cfg.name.clone()));
        Ok(())
    }
    pub fn remove_term(&mut self, node: u32, name: &str) {
        if let Some(f) = &mut self.sim.net.filters[node as usize] {
            f.remove_term(name);
        }
    }
    /// Start another agent, first woken at `at`.
    pub fn spawn(&mut self, agent: Box<dyn Agent>, at: SimTime) {
        self.sim.spawn_agent(agent, at);
    }
}

/// Knobs and measurements of every kind of component.
impl Simulation {
    /// The handles of the world.
    pub fn handles(&mut self) -> &mut Handles {
        &mut self.handles
    }

    pub(crate) fn build_handles(&mut self) {
        let mut h = Handles::default();
        for (i, ifc) in self.net.ifaces.iter().enumerate() {
            h.add(ifc.name.clone(), Target::Iface(i as u32));
            let mut classes = Vec::new();
            ifc.qdisc.for_each_queue(&mut |class, _, _| {
                if !class.is_empty() {
                    classes.push(class.to_string());
                }
            });
            for c in classes {
                h.add(format!("{}/{c}", ifc.name), Target::Class(i as u32, c));
            }
        }
        for (n, f) in self.net.filters.iter().enumerate() {
            for t in f.iter().flat_map(|f| &f.terms) {
                h.add(format!("{}/{}", self.net.nodes[n].name, t.name), Target::Term(n as u32, t.name.clone()));
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            h.add(f.name.clone(), Target::Flow(i as u32));
        }
        for (i, w) in self.workloads.iter().enumerate() {
            h.add(w.name.clone(), Target::Workload(i as u32));
        }
        self.handles = h;
    }

    /// The index of the transfer a handle names, once it has started.
    pub(crate) fn transfer_of(&self, h: Handle) -> Option<u32> {
        let Target::Transfer(w, k) = *self.handles.target(h) else { return None };
        self.transfers.iter().enumerate().filter(|(_, t)| t.workload == w).nth(k as usize).map(|(i, _)| i as u32)
    }

    /// Read measurement or knob `what` of the component `h` names.
    pub fn get(&mut self, h: Handle, what: &str) -> Result<f64, String> {
        self.knob(h, what, KnobOp::Get).map_err(|e| self.knob_error(h, what, e))
    }

    /// Read by name (the Python API).
    pub fn get_by_name(&mut self, handle: &str, what: &str) -> Result<f64, String> {
        let h = self.handles.resolve(handle)?;
        self.get(h, what)
    }

    /// Change a knob as `agent` does; logged. Returns the old value.
    pub fn set_as(&mut self, agent: &str, h: Handle, knob: &str, value: f64) -> Result<f64, String> {
        match what_kind(knob) {
            Some(true) => {}
            Some(false) => return Err(format!("{}: {knob} is a measurement, not a knob", self.handles.name(h))),
            None => return Err(self.knob_error(h, knob, KnobError::Unknown)),
        }
        if !value.is_finite() {
            return Err(format!("{}: {knob} = {value}: not a number", self.handles.name(h)));
        }
        let old = self.knob(h, knob, KnobOp::Set(value)).map_err(|e| self.knob_error(h, knob, e))?;
        self.log.push(Change { time: self.net.now, agent: agent.to_string(), handle: self.handles.name(h).to_string(), knob: knob.to_string(), old, new: value });
        Ok(old)
    }

    /// Change by name (the Python API, agent "python").
    pub fn set_by_name(&mut self, agent: &str, handle: &str, knob: &str, value: f64) -> Result<f64, String> {
        let h = self.handles.resolve(handle)?;
        self.set_as(agent, h, knob, value)
    }

    /// Does the component have this knob (or measurement)? For checks
    /// before the run; transfers not yet started answer by their kind.
    pub fn check_knob(&mut self, h: Handle, knob: &str) -> Result<(), String> {
        if let Target::Transfer(w, _) = *self.handles.target(h) {
            let ok = TRANSFER_KNOBS.contains(&knob) || TRANSFER_MEASURES.contains(&knob);
            if !ok {
                return Err(self.knob_error(h, knob, KnobError::Unknown));
            }
            let wl = &self.workloads[w as usize];
            // A transfer's target rate goes to its base_flow streams (a
            // deadline transfer's base connection, not its additional one).
            if knob == "ctr_bps" && !(0..wl.streams).any(|s| wl.stream(s).0.cc == "base_flow") {
                return Err(format!("{}: ctr_bps needs the base_flow congestion control on one of its streams (the workload uses {})", self.handles.name(h), wl.tcp.cc));
            }
            return Ok(());
        }
        self.get(h, knob).map(|_| ())
    }

    fn knob_error(&mut self, h: Handle, what: &str, e: KnobError) -> String {
        let name = self.handles.name(h).to_string();
        match e {
            KnobError::Invalid(why) => format!("{name}: {why}"),
            KnobError::Unknown => {
                let mut have: Vec<String> = Vec::new();
                let candidates = KNOBS.iter().map(|k| k.name.to_string()).chain(MEASURES.iter().map(|m| m.to_string()));
                for c in candidates {
                    if !have.contains(&c) && self.knob(h, &c, KnobOp::Get).is_ok() {
                        have.push(c);
                    }
                }
                if matches!(self.handles.target(h), Target::Transfer(..)) {
                    have = TRANSFER_KNOBS.iter().chain(TRANSFER_MEASURES).map(|s| s.to_string()).collect();
                }
                let list = if have.is_empty() { "none".to_string() } else { have.join(", ") };
                format!("{name} has no knob or measurement '{what}' (it has: {list})")
            }
        }
    }

    fn knob(&mut self, h: Handle, what: &str, op: KnobOp) -> KnobResult {
        let now = self.net.now;
        match self.handles.target(h).clone() {
            Target::Iface(i) => {
                let ifc = &mut self.net.ifaces[i as usize];
                let b = ifc.qdisc.backlog();
                let measured = match what {
                    "len_pkts" => Some(b.pkts as f64),
                    "len_bytes" => Some(b.bytes as f64),
                    "tx_pkts" => Some(ifc.tx_pkts as f64),
                    "tx_bytes" => Some(ifc.tx_bytes as f64),
                    "rate_bps" => Some(ifc.rate.as_bps() as f64),
                    "drop_pkts" => {
                        let mut d = 0;
                        ifc.qdisc.for_each_queue(&mut |_, c, _| d += c.drop_pkts);
                        Some(d as f64)
                    }
                    _ => None,
                };
                match measured {
                    Some(v) => read_only(what, v, op),
                    None => ifc.qdisc.knob("", what, op, KnobCtx { now, link_rate: ifc.rate }),
                }
            }
            Target::Class(i, class) => {
                let ifc = &mut self.net.ifaces[i as usize];
                let mut found = None;
                ifc.qdisc.for_each_queue(&mut |c, q, b| {
                    if c == class {
                        found = match what {
                            "len_pkts" => Some(b.pkts),
                            "len_bytes" => Some(b.bytes),
                            "enq_pkts" => Some(q.enq_pkts),
                            "enq_bytes" => Some(q.enq_bytes),
                            "deq_pkts" => Some(q.deq_pkts),
                            "deq_bytes" => Some(q.deq_bytes),
                            "drop_pkts" => Some(q.drop_pkts),
                            "drop_bytes" => Some(q.drop_bytes),
                            _ => None,
                        };
                    }
                });
                match found {
                    Some(v) => read_only(what, v as f64, op),
                    None => ifc.qdisc.knob(&class, what, op, KnobCtx { now, link_rate: ifc.rate }),
                }
            }
            Target::Term(n, name) => {
                let f = self.net.filters[n as usize].as_mut().ok_or(KnobError::Unknown)?;
                let t = f.terms.iter_mut().find(|t| t.name == name).ok_or_else(|| KnobError::Invalid(format!("term '{name}' no longer exists")))?;
                let c = &t.counters;
                let measured = match what {
                    "matched_pkts" => Some(c.matched_pkts),
                    "matched_bytes" => Some(c.matched_bytes),
                    "out_of_profile_pkts" => Some(c.out_of_profile_pkts),
                    "discarded_pkts" => Some(c.discarded_pkts),
                    _ => None,
                };
                match measured {
                    Some(v) => read_only(what, v as f64, op),
                    None => t.policer_mut().ok_or(KnobError::Unknown)?.knob(what, op, now),
                }
            }
            Target::Flow(i) => self.flow_knob(i, what, op),
            Target::Workload(w) => self.workload_knob(w, what, op),
            Target::Transfer(..) => {
                let Some(t) = self.transfer_of(h) else {
                    return Err(KnobError::Invalid(format!("{} has not started yet", self.handles.name(h))));
                };
                self.transfer_knob(t, what, op)
            }
        }
    }

    fn flow_knob(&mut self, i: u32, what: &str, op: KnobOp) -> KnobResult {
        let id = ConnId::new(i, 0);
        let st = &self.net.conns[i as usize].stats;
        match what {
            "tx_bytes" => return read_only(what, st.tx_bytes as f64, op),
            "rx_bytes" => return read_only(what, st.rx_bytes as f64, op),
            "active" => {
                let f = &self.flow_active[i as usize];
                let old = *f as u8 as f64;
                let KnobOp::Set(v) = op else { return Ok(old) };
                let on = switch(what, v)?;
                if on != *f {
                    self.flow_active[i as usize] = on;
                    let timer = if on { FlowTimer::Start } else { FlowTimer::Stop };
                    let c = self.conns.get_mut(id).expect("a scenario flow lives the whole run");
                    let mut io = FlowIo::new(&mut self.net, id, c.ends);
                    c.app.on_timer(timer, &mut io);
                }
                return Ok(old);
            }
            _ => {}
        }
        let c = self.conns.get_mut(id).expect("a scenario flow lives the whole run");
        let tcp = c.app.tcp_mut().ok_or(KnobError::Unknown)?;
        tcp_knob(tcp, what, op)
    }

    fn workload_knob(&mut self, w: u32, what: &str, op: KnobOp) -> KnobResult {
        let now = self.net.now;
        let wl = &mut self.workloads[w as usize];
        let v = match what {
            "started" => wl.started,
            "completed" => wl.completed,
            "active_conns" => wl.active_conns,
            "rtt_samples" | "rtt_sum_ns" => {
                let (mut n, mut sum) = self.rtt_done[w as usize];
                for (_, c) in self.conns.iter() {
                    if let (Owner::Stream(r), Some(tcp)) = (c.owner, c.app.tcp()) {
                        if self.transfers[self.streams[r as usize].transfer as usize].workload == w {
                            let (a, b) = tcp.sender.rtt_totals();
                            n += a;
                            sum += b;
                        }
                    }
                }
                if what == "rtt_samples" {
                    n
                } else {
                    sum
                }
            }
            "active" => {
                let old = (now < wl.stop) as u8 as f64;
                let KnobOp::Set(v) = op else { return Ok(old) };
                let on = switch(what, v)?;
                if !on && now < wl.stop {
                    wl.stop = now;
                } else if on && now >= wl.stop {
                    // Arrivals resume from now, drawn afresh.
                    wl.start = now;
                    wl.stop = self.duration;
                    self.schedule_first(w as usize);
                }
                return Ok(old);
            }
            _ => return Err(KnobError::Unknown),
        };
        read_only(what, v as f64, op)
    }

    fn transfer_knob(&mut self, t: u32, what: &str, op: KnobOp) -> KnobResult {
        let rec = &self.transfers[t as usize];
        let (size, start, end, done) = (rec.size, rec.start, rec.end, rec.end.is_some());
        // A live stream's share of a dynamically striped file is what it
        // has been fed so far: its acknowledged bytes up to what was written.
        let acked: u64 = self.streams[rec.stream_rows()].iter().map(|r| self.stream_now(r).0).sum();
        let v = match what {
            "size_bytes" => size,
            "bytes_acked" => acked,
            "bytes_left" => size - acked,
            "done" => done as u64,
            "start_ns" => start.as_nanos(),
            "end_ns" => end.map_or(0, |e| e.as_nanos()),
            _ => {
                if !TRANSFER_KNOBS.contains(&what) {
                    return Err(KnobError::Unknown);
                }
                // Summed over the open streams; a change is split evenly. The
                // target rate: over the streams that have one (base_flow).
                let rows = self.transfers[t as usize].stream_rows();
                let mut live: Vec<ConnId> = self.streams[rows].iter().map(|r| r.id).filter(|&id| self.conns.get(id).is_some()).collect();
                if what == "ctr_bps" {
                    live.retain(|&id| self.conns.get_mut(id).and_then(|c| c.app.tcp_mut()).is_some_and(|tcp| tcp_knob(tcp, what, KnobOp::Get).is_ok()));
                }
                let k = live.len().max(1) as f64;
                let op = match op {
                    KnobOp::Set(v) if what == "cwnd_clamp_bytes" || what == "pacing_rate_bps" || what == "ctr_bps" => KnobOp::Set((v / k).floor().max(if v > 0.0 { 1.0 } else { 0.0 })),
                    o => o,
                };
                let mut sum = 0.0;
                for id in live {
                    let tcp = self.conns.get_mut(id).and_then(|c| c.app.tcp_mut()).ok_or(KnobError::Unknown)?;
                    sum += tcp_knob(tcp, what, op)?;
                }
                return Ok(sum);
            }
        };
        read_only(what, v as f64, op)
    }

    /// The `control` table: every change of a knob.
    pub(crate) fn control_table(&self) -> Table {
        let l = &self.log;
        Table::default()
            .with("time_ns", Column::U64(l.iter().map(|c| c.time.as_nanos()).collect()))
            .with("agent", Column::Str(l.iter().map(|c| c.agent.clone()).collect()))
            .with("handle", Column::Str(l.iter().map(|c| c.handle.clone()).collect()))
            .with("knob", Column::Str(l.iter().map(|c| c.knob.clone()).collect()))
            .with("old_value", Column::F64(l.iter().map(|c| c.old).collect()))
            .with("new_value", Column::F64(l.iter().map(|c| c.new).collect()))
    }

    /// The agents' own tables.
    pub(crate) fn agent_tables(&self, out: &mut BTreeMap<String, Table>) {
        let mut r = Reports::default();
        for a in self.agents.iter().flatten() {
            a.report(&mut r);
        }
        let res = &r.reservation;
        out.insert(
            "reservation".into(),
            Table::default()
                .with("agent", Column::Str(res.iter().map(|x| x.0.clone()).collect()))
                .with("time_ns", Column::U64(res.iter().map(|x| x.1.as_nanos()).collect()))
                .with("transfer_handle", Column::Str(res.iter().map(|x| x.2.clone()).collect()))
                .with("reservation_bps", Column::F64(res.iter().map(|x| x.3).collect())),
        );
        out.insert("reservation_summary".into(), deadline::summary_table(&r.reservation_summary));
        out.insert("admission".into(), admission::request_table(&r.admission));
    }

    /// Build the agents of `cfg.control`; errors name `control[i].field`.
    /// Build every agent of `cfg`; each one's problem goes into `problems`
    /// and the others are still built.
    pub(crate) fn build_agents(&mut self, cfg: &Config, problems: &mut Vec<String>) {
        for (i, a) in cfg.control.iter().enumerate() {
            if let Err(e) = self.build_agent(a, i) {
                problems.push(format!("control[{i}].{e}"));
            }
        }
    }

    fn build_agent(&mut self, a: &AgentConfig, i: usize) -> Result<(), String> {
        let agent: Box<dyn Agent> = match a {
            AgentConfig::WredRttTuning(c) => Box::new(wred_rtt::WredRtt::build(c, i, self)?),
            AgentConfig::DeadlineReservation(c) => Box::new(deadline::Deadline::build(c, i, self)?),
            AgentConfig::CallAdmission(c) => {
                let (agent, w) = admission::Admission::build(c, i, self)?;
                if self.admission[w as usize].is_some() {
                    return Err("workload: another call_admission agent already admits this workload's transfers".into());
                }
                self.admission[w as usize] = Some(self.agents.len() as u32);
                Box::new(agent)
            }
        };
        let name = agent.name().to_string();
        if self.agents.iter().flatten().any(|a| a.name() == name) {
            return Err(format!("name: duplicate agent name '{name}'"));
        }
        let first = agent.first_wake();
        self.agents.push(Some(agent));
        if let Some(t) = first {
            self.net.events.schedule_first(t, Event::Agent(self.agents.len() as u32 - 1), self.agents.len() as u32 - 1);
        }
        Ok(())
    }

    pub(crate) fn spawn_agent(&mut self, agent: Box<dyn Agent>, at: SimTime) {
        let first = agent.first_wake().unwrap_or(at).max(at);
        self.agents.push(Some(agent));
        let a = self.agents.len() as u32 - 1;
        self.net.events.schedule_first(first, Event::Agent(a), a);
    }

    /// Agent `a`'s timer fired.
    pub(crate) fn on_agent(&mut self, a: u32) {
        let Some(mut agent) = self.agents[a as usize].take() else { return };
        let now = self.net.now;
        let name = agent.name().to_string();
        let next = agent.on_timer(now, &mut Control { sim: self, agent: &name });
        self.agents[a as usize] = Some(agent);
        if let Some(t) = next {
            self.net.events.schedule_first(t.max(SimTime(now.as_nanos() + 1)), Event::Agent(a), a);
        }
    }

    /// A transfer of workload `w` arrives: ask its admission agent, if any.
    pub(crate) fn admit(&mut self, w: u32, src: u32, dst: u32, size: u64) -> Option<admission::Request> {
        let a = self.admission[w as usize]?;
        let mut agent = self.agents[a as usize].take().expect("an admission agent is never running when a transfer arrives");
        let name = agent.name().to_string();
        let mut req = admission::Request::new(w, src, dst, size, self.net.now);
        let ok = agent.on_request(&mut req, &mut Control { sim: self, agent: &name });
        self.agents[a as usize] = Some(agent);
        req.admitted = ok;
        Some(req)
    }

    /// The admitted request opened its connections as transfer `t`.
    pub(crate) fn admitted(&mut self, w: u32, req: &admission::Request, t: u32) {
        let Some(a) = self.admission[w as usize] else { return };
        let k = self.transfers[..t as usize].iter().filter(|x| x.workload == w).count();
        let name = format!("{}#{k}", self.workloads[w as usize].name);
        let h = self.handles.resolve(&name).expect("a workload's transfer");
        let mut agent = self.agents[a as usize].take().expect("an admission agent");
        let aname = agent.name().to_string();
        agent.on_admitted(req, h, &mut Control { sim: self, agent: &aname });
        self.agents[a as usize] = Some(agent);
    }
}

/// Measurements every transfer has, and the knobs it passes to its streams.
pub const TRANSFER_MEASURES: &[&str] = &["size_bytes", "bytes_acked", "bytes_left", "done", "start_ns", "end_ns"];
pub const TRANSFER_KNOBS: &[&str] = &["ctr_bps", "pacing_rate_bps", "cwnd_clamp_bytes"];
/// Measurement names (for the error that lists what a component has).
const MEASURES: &[&str] = &[
    "len_pkts", "len_bytes", "tx_pkts", "tx_bytes", "rx_bytes", "drop_pkts", "drop_bytes", "enq_pkts", "enq_bytes", "deq_pkts",
    "deq_bytes", "avg", "matched_pkts", "matched_bytes", "out_of_profile_pkts", "discarded_pkts", "tokens", "srtt_ns", "cwnd_bytes",
    "bytes_acked", "retransmits", "rtt_samples", "rtt_sum_ns", "started", "completed", "active_conns",
];

/// Some(true) for a knob name, Some(false) for a measurement, None unknown.
fn what_kind(name: &str) -> Option<bool> {
    if knob::spec(name).is_some() {
        let colour_ok = name.split_once('.').is_none_or(|(_, c)| COLORS.contains(&c));
        return Some(colour_ok);
    }
    MEASURES.contains(&name).then_some(false)
}

fn read_only(what: &str, v: f64, op: KnobOp) -> KnobResult {
    match op {
        KnobOp::Get => Ok(v),
        KnobOp::Set(_) => Err(KnobError::Invalid(format!("{what} is a measurement, not a knob"))),
    }
}

fn switch(what: &str, v: f64) -> Result<bool, KnobError> {
    match v {
        0.0 => Ok(false),
        1.0 => Ok(true),
        _ => Err(KnobError::Invalid(format!("{what} = {v}: must be 1 (on) or 0 (off)"))),
    }
}

/// The knobs and measurements of a TCP connection.
fn tcp_knob(tcp: &mut crate::apps::bulk::BulkTcp, what: &str, op: KnobOp) -> KnobResult {
    let s = &mut tcp.sender;
    let ro = |v: u64| read_only(what, v as f64, op);
    match what {
        "srtt_ns" => ro(s.srtt().map_or(0, |d| d.as_nanos())),
        "cwnd_bytes" => ro(s.cwnd()),
        "bytes_acked" => ro(s.bytes_acked()),
        "retransmits" => ro(s.stats.retransmits),
        "rtt_samples" => ro(s.rtt_totals().0),
        "rtt_sum_ns" => ro(s.rtt_totals().1),
        "ctr_bps" => s.controller_mut().target_rate(op),
        "pacing_rate_bps" => {
            let old = s.max_pacing_rate().map_or(0.0, |r| r.as_bps() as f64);
            if let KnobOp::Set(v) = op {
                let v = crate::qos::meter::whole(what, v)?;
                s.set_max_pacing_rate((v > 0).then_some(DataRate(v)));
            }
            Ok(old)
        }
        "cwnd_clamp_bytes" => {
            let old = match s.cwnd_clamp() {
                u64::MAX => 0.0,
                c => c as f64,
            };
            if let KnobOp::Set(v) = op {
                let v = crate::qos::meter::whole(what, v)?;
                s.set_cwnd_clamp(if v == 0 { u64::MAX } else { v });
            }
            Ok(old)
        }
        _ => Err(KnobError::Unknown),
    }
}
