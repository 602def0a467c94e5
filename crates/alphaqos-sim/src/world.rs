//! The engine's side of the control plane: `Simulation` as the [`World`]
//! agents see, the knob and measurement dispatch to each kind of component,
//! the agents' timers, and the `control` table. The control plane itself
//! (`control/`) knows only the `World` trait.

use crate::error::ConfigError;
use crate::config::{AgentConfig, Config};
use crate::conn::ConnId;
use crate::control::{admission, deadline, knobs, wred_rtt, Agent, Change, Control, ControlError, Handle, Handles, Reports, Target, World, WorkloadInfo, TRANSFER_KNOBS, TRANSFER_MEASURES};
use crate::event::{Event, FlowTimer};
use crate::apps::App;
use crate::knob::{Knob, KnobCtx, KnobError, KnobName, KnobOp, KnobResult, COLORS, KNOBS};
use crate::metrics::{Column, Table};
use crate::network::FlowIo;
use crate::qos::meter::Policer;
use crate::qos::{LinkQdisc, Qdisc};
use crate::sim::{Owner, Simulation};
use crate::time::SimTime;
use std::collections::BTreeMap;

impl World for Simulation {
    fn now(&self) -> SimTime {
        self.net.now
    }
    fn handles(&mut self) -> &mut Handles {
        Simulation::handles(self)
    }
    fn get(&mut self, h: Handle, what: &str) -> Result<f64, ControlError> {
        Simulation::get(self, h, what)
    }
    fn set_as(&mut self, agent: &str, h: Handle, knob: &str, value: f64) -> Result<f64, ControlError> {
        Simulation::set_as(self, agent, h, knob, value)
    }
    fn check_knob(&mut self, h: Handle, knob: &str) -> Result<(), ControlError> {
        Simulation::check_knob(self, h, knob)
    }
    fn path_rates(&self, src: u32, dst: u32) -> Vec<(u32, u64)> {
        self.net.path(src, dst).into_iter().map(|i| (i, self.net.ifaces[i as usize].rate.as_bps())).collect()
    }
    fn node(&self, name: &str) -> Option<(u32, bool)> {
        self.net.nodes.iter().position(|x| x.name == name).map(|i| (i as u32, self.net.nodes[i].router))
    }
    fn node_name(&self, n: u32) -> &str {
        &self.net.nodes[n as usize].name
    }
    fn node_addr(&self, n: u32) -> u32 {
        self.net.nodes[n as usize].addr
    }
    fn iface_rate_mtu(&self, i: u32) -> (u64, u32) {
        let ifc = &self.net.ifaces[i as usize];
        (ifc.rate.as_bps(), ifc.mtu)
    }
    fn workload_info(&self, w: u32) -> WorkloadInfo {
        let wl = &self.workloads[w as usize];
        WorkloadInfo { start: wl.start, base_cc: wl.stream(0).0.cc.to_string(), mss_bytes: wl.tcp.mss_bytes }
    }
    fn transfer_ends(&self, h: Handle) -> Option<(u32, u32)> {
        let t = &self.transfers[self.transfer_of(h)? as usize];
        Some((t.src, t.dst))
    }
    fn transfer_ports(&self, h: Handle) -> Vec<u16> {
        match self.transfer_of(h) {
            Some(t) => self.streams[self.transfers[t as usize].stream_rows()].iter().map(|s| s.src_port).collect(),
            None => Vec::new(),
        }
    }
    fn add_policer_term(&mut self, node: u32, cfg: &crate::config::FilterTermConfig) -> Result<(), ConfigError> {
        let f = self.net.filters[node as usize].get_or_insert_with(|| crate::qos::classify::Filter { terms: Vec::new() });
        f.insert_term(0, cfg)?;
        self.handles.add(format!("{}/{}", self.net.nodes[node as usize].name, cfg.name), Target::Term(node, cfg.name.clone()));
        Ok(())
    }
    fn remove_term(&mut self, node: u32, name: &str) {
        if let Some(f) = &mut self.net.filters[node as usize] {
            f.remove_term(name);
        }
    }
    fn spawn(&mut self, agent: Box<dyn Agent>, at: SimTime) {
        self.spawn_agent(agent, at);
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
    pub fn get(&mut self, h: Handle, what: &str) -> Result<f64, ControlError> {
        self.knob(h, what, KnobOp::Get).map_err(|e| self.knob_error(h, what, e))
    }

    /// Read by name (the Python API).
    pub fn get_by_name(&mut self, handle: &str, what: &str) -> Result<f64, ControlError> {
        let h = self.handles.resolve(handle)?;
        self.get(h, what)
    }

    /// Change a knob as `agent` does; logged. Returns the old value.
    pub fn set_as(&mut self, agent: &str, h: Handle, knob: &str, value: f64) -> Result<f64, ControlError> {
        match what_kind(knob) {
            Some(true) => {}
            Some(false) => return Err(self.refused(h, format!("{knob} is a measurement, not a knob"))),
            None => return Err(self.knob_error(h, knob, KnobError::Unknown)),
        }
        if !value.is_finite() {
            return Err(self.refused(h, format!("{knob} = {value}: not a number")));
        }
        let old = self.knob(h, knob, KnobOp::Set(value)).map_err(|e| self.knob_error(h, knob, e))?;
        self.log.push(Change { time: self.net.now, agent: agent.to_string(), handle: self.handles.name(h).to_string(), knob: knob.to_string(), old, new: value });
        Ok(old)
    }

    /// Change by name (the Python API, agent "python").
    pub fn set_by_name(&mut self, agent: &str, handle: &str, knob: &str, value: f64) -> Result<f64, ControlError> {
        let h = self.handles.resolve(handle)?;
        self.set_as(agent, h, knob, value)
    }

    /// Does the component have this knob (or measurement)? For checks
    /// before the run; transfers not yet started answer by their kind.
    pub fn check_knob(&mut self, h: Handle, knob: &str) -> Result<(), ControlError> {
        if let Target::Transfer(w, _) = *self.handles.target(h) {
            let ok = TRANSFER_KNOBS.contains(&knob) || TRANSFER_MEASURES.contains(&knob);
            if !ok {
                return Err(self.knob_error(h, knob, KnobError::Unknown));
            }
            let wl = &self.workloads[w as usize];
            // A transfer's target rate goes to its base_flow streams (a
            // deadline transfer's base connection, not its additional one).
            if knobs::parse(knob) == Some(KnobName::CtrBps) && !(0..wl.streams).any(|s| wl.stream(s).0.cc == "base_flow") {
                let why = format!("ctr_bps needs the base_flow congestion control on one of its streams (the workload uses {})", wl.tcp.cc);
                return Err(self.refused(h, why));
            }
            return Ok(());
        }
        self.get(h, knob).map(|_| ())
    }

    fn refused(&self, h: Handle, why: String) -> ControlError {
        ControlError::Refused { handle: self.handles.name(h).to_string(), why }
    }

    fn knob_error(&mut self, h: Handle, what: &str, e: KnobError) -> ControlError {
        match e {
            KnobError::Invalid(why) => self.refused(h, why),
            KnobError::Unknown => {
                let mut has: Vec<String> = Vec::new();
                let candidates = KNOBS.iter().map(|k| k.name.to_string()).chain(MEASURES.iter().map(|m| m.to_string()));
                for c in candidates {
                    if !has.contains(&c) && self.knob(h, &c, KnobOp::Get).is_ok() {
                        has.push(c);
                    }
                }
                if matches!(self.handles.target(h), Target::Transfer(..)) {
                    has = TRANSFER_KNOBS.iter().chain(TRANSFER_MEASURES).map(|s| s.to_string()).collect();
                }
                ControlError::UnknownKnob { handle: self.handles.name(h).to_string(), what: what.to_string(), has }
            }
        }
    }

    fn knob(&mut self, h: Handle, what: &str, op: KnobOp) -> KnobResult {
        let now = self.net.now;
        match self.handles.target(h).clone() {
            Target::Iface(i) => {
                let ifc = &mut self.net.ifaces[i as usize].egress;
                let b = ifc.qdisc.backlog();
                let measured = match what {
                    "len_pkts" => Some(b.pkts as f64),
                    "len_bytes" => Some(b.bytes as f64),
                    "tx_pkts" => Some(ifc.tx_pkts as f64),
                    "tx_bytes" => Some(ifc.tx_bytes as f64),
                    // The link's rate, read only (a class's rate_bps is a knob).
                    _ if knobs::parse(what) == Some(KnobName::RateBps) => Some(ifc.rate.as_bps() as f64),
                    "drop_pkts" => {
                        let mut d = 0;
                        ifc.qdisc.for_each_queue(&mut |_, c, _| d += c.drop_pkts);
                        Some(d as f64)
                    }
                    _ => None,
                };
                match measured {
                    Some(v) => read_only(what, v, op),
                    None => queue_knob(&mut ifc.qdisc, "", what, op, KnobCtx { now, link_rate: ifc.rate }),
                }
            }
            Target::Class(i, class) => {
                let ifc = &mut self.net.ifaces[i as usize].egress;
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
                    None => queue_knob(&mut ifc.qdisc, &class, what, op, KnobCtx { now, link_rate: ifc.rate }),
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
                    None => policer_knob(t.policer_mut().ok_or(KnobError::Unknown)?, what, op, now),
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
            _ if knobs::parse(what) == Some(KnobName::Active) => {
                let f = &self.flow_active[i as usize];
                let old = *f as u8 as f64;
                let KnobOp::Set(v) = op else { return Ok(old) };
                let on = switch(v)?;
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
        app_knob(c.app.as_mut(), what, op)
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
                    if let (Owner::Stream(r), Some(k)) = (c.owner, c.app.counters()) {
                        if self.transfers[self.streams[r as usize].transfer as usize].workload == w {
                            n += k.rtt_samples;
                            sum += k.rtt_sum_ns;
                        }
                    }
                }
                if what == "rtt_samples" {
                    n
                } else {
                    sum
                }
            }
            _ if knobs::parse(what) == Some(KnobName::Active) => {
                let old = (now < wl.stop) as u8 as f64;
                let KnobOp::Set(v) = op else { return Ok(old) };
                let on = switch(v)?;
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
                if knobs::parse(what) == Some(KnobName::CtrBps) {
                    live.retain(|&id| self.conns.get(id).is_some_and(|c| c.app.knob_value(KnobName::CtrBps).is_some()));
                }
                let k = live.len().max(1) as f64;
                let op = match op {
                    KnobOp::Set(v) => KnobOp::Set((v / k).floor().max(if v > 0.0 { 1.0 } else { 0.0 })),
                    o => o,
                };
                let mut sum = 0.0;
                for id in live {
                    let c = self.conns.get_mut(id).ok_or(KnobError::Unknown)?;
                    sum += app_knob(c.app.as_mut(), what, op)?;
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
    pub(crate) fn build_agents(&mut self, cfg: &Config, problems: &mut Vec<ConfigError>) {
        for (i, a) in cfg.control.iter().enumerate() {
            if let Err(e) = self.build_agent(a, i) {
                problems.push(e.with_outer(a.kind()).with_outer(i).with_outer("control"));
            }
        }
    }

    /// Agent `a` (`control[i]`); a problem is located below its kind.
    fn build_agent(&mut self, a: &AgentConfig, i: usize) -> Result<(), ConfigError> {
        let agent: Box<dyn Agent> = match a {
            AgentConfig::WredRttTuning(c) => Box::new(wred_rtt::WredRtt::build(c, i, self)?),
            AgentConfig::DeadlineReservation(c) => Box::new(deadline::Deadline::build(c, i, self)?),
            AgentConfig::CallAdmission(c) => {
                let (agent, w) = admission::Admission::build(c, i, self)?;
                if self.admission[w as usize].is_some() {
                    return Err(ConfigError::at("workload", "another call_admission agent already admits this workload's transfers"));
                }
                self.admission[w as usize] = Some(self.agents.len() as u32);
                Box::new(agent)
            }
        };
        let name = agent.name().to_string();
        if self.agents.iter().flatten().any(|a| a.name() == name) {
            return Err(ConfigError::at("name", format!("duplicate agent name '{name}'")));
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
        let next = agent.on_timer(now, &mut Control { world: self, agent: &name });
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
        let ok = agent.on_request(&mut req, &mut Control { world: self, agent: &name });
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
        agent.on_admitted(req, h, &mut Control { world: self, agent: &aname });
        self.agents[a as usize] = Some(agent);
    }
}

/// Measurement names (for the error that lists what a component has).
const MEASURES: &[&str] = &[
    "len_pkts", "len_bytes", "tx_pkts", "tx_bytes", "rx_bytes", "drop_pkts", "drop_bytes", "enq_pkts", "enq_bytes", "deq_pkts",
    "deq_bytes", "avg", "matched_pkts", "matched_bytes", "out_of_profile_pkts", "discarded_pkts", "tokens", "srtt_ns", "cwnd_bytes",
    "bytes_acked", "retransmits", "rtt_samples", "rtt_sum_ns", "started", "completed", "active_conns",
];

/// Some(true) for a knob name, Some(false) for a measurement, None unknown.
fn what_kind(name: &str) -> Option<bool> {
    if crate::knob::spec(name).is_some() {
        let colour_ok = name.split_once('.').is_none_or(|(_, c)| COLORS.contains(&c));
        return Some(colour_ok);
    }
    MEASURES.contains(&name).then_some(false)
}

/// A queue's knobs, through the registry and the typed `Qdisc::set_knob`
/// (class "" for the discipline itself); `avg`, its drop profile's average.
fn queue_knob(q: &mut LinkQdisc, class: &str, what: &str, op: KnobOp, ctx: KnobCtx) -> KnobResult {
    if what == "avg" {
        return read_only(what, q.drop_avg(class).ok_or(KnobError::Unknown)?, op);
    }
    knobs::apply(q, what, op, |q, n| q.knob_value(class, n, ctx), |q, k| q.set_knob(class, k, ctx))
}

/// A policer's meter: `tokens` (its first bucket) and its profile's knobs,
/// through the registry and the typed `Policer::set_profile`.
fn policer_knob(pol: &mut Policer, what: &str, op: KnobOp, now: SimTime) -> KnobResult {
    if what == "tokens" {
        return read_only(what, pol.bucket_tokens().ok_or(KnobError::Unknown)? as f64, op);
    }
    knobs::apply(
        pol,
        what,
        op,
        |p, n| Some(p.params()?.get(n)? as f64),
        |p, k| {
            let new = p.params().and_then(|x| x.with(k)).ok_or(KnobError::Unknown)?;
            // The field the meter names, when it is not the knob set.
            p.set_profile(new, now).map_err(|e| KnobError::Invalid(if e.path() == what { e.msg } else { e.to_string() }))
        },
    )
}

fn read_only(what: &str, v: f64, op: KnobOp) -> KnobResult {
    match op {
        KnobOp::Get => Ok(v),
        KnobOp::Set(_) => Err(KnobError::Invalid(format!("{what} is a measurement, not a knob"))),
    }
}

/// `active = v` as on or off, checked by the registry.
fn switch(v: f64) -> Result<bool, KnobError> {
    match knobs::typed(KnobName::Active, v)? {
        Knob::Active(on) => Ok(on),
        k => unreachable!("the registry types active as a switch, not {k:?}"),
    }
}

/// An application's measurements and knobs (TCP connections have them),
/// through the registry and the typed `App::set_knob`.
fn app_knob(app: &mut dyn App, what: &str, op: KnobOp) -> KnobResult {
    if let Some(v) = app.measure(what) {
        return read_only(what, v as f64, op);
    }
    knobs::apply(app, what, op, |a, n| a.knob_value(n), |a, k| if a.set_knob(k) { Ok(()) } else { Err(KnobError::Unknown) })
}
