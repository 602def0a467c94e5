//! The simulation: the event loop over the network (`network.rs`), the
//! connections (`conn.rs`, one slab for the scenario's flows and the
//! connections workloads open), the workloads (`workload/`: their
//! transfers and streams in `workload/transfers.rs`), and the results
//! (`recorder.rs` for series, the samples and tables in `summary.rs`).
//!
//! The world is built by `builder.rs`; this file runs it: every event is a
//! transmission ending, a packet arriving, a connection's timer, a
//! workload's timer, or a sample of the series. A connection's application
//! says what happened in its [`crate::apps::Report`]; only a workload's
//! stream is acted on (`Simulation::after`), a scenario flow runs on its own.

use crate::apps::App;
use crate::builder::{build_flow, build_net, check_path, host_id, MSS_NOTE};
use crate::error::{ConfigError, Outer};
use crate::config::Config;
use crate::control::{Agent, Change, Handles};
use crate::conn::{ConnId, Slab};
use crate::event::{Event, FlowTimer};
use crate::metrics::DelayStats;
use crate::network::{Ends, FlowIo, Net};
use crate::packet::TCP_HEADER_BYTES;
use crate::recorder::Recorder;
use crate::time::{Duration, SimTime};
use crate::workload::{PathInfo, StreamRec, TransferRec, Workload, EPHEMERAL_LOW};
use std::collections::{BTreeMap, HashMap, HashSet};

pub use crate::network::{ConnStats, TSQ_BYTES};

/// Who a connection belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The scenario's flow of this index.
    Flow(u32),
    /// A stream of a transfer: the index of its row in the connection records.
    Stream(u32),
}

/// A live connection: its ends, its application, its owner.
pub struct Conn {
    pub ends: Ends,
    pub app: Box<dyn App>,
    pub owner: Owner,
}

/// A scenario flow's name, series key and active window.
pub(crate) struct FlowMeta {
    pub(crate) name: String,
    pub(crate) key: u32,
    pub(crate) start: u64,
    pub(crate) stop: u64,
    /// Delivered bytes at the previous sample.
    pub(crate) prev: u64,
}

pub struct Simulation {
    pub net: Net,
    pub(crate) conns: Slab<Conn>,
    pub(crate) flows: Vec<FlowMeta>,
    pub(crate) workloads: Vec<Workload>,
    pub transfers: Vec<TransferRec>,
    pub streams: Vec<StreamRec>,
    /// Next ephemeral port per host (Linux's range 32768..60999).
    pub(crate) ports: Vec<u16>,
    pub(crate) paths: HashMap<(u32, u32), PathInfo>,
    pub(crate) duration: SimTime,
    pub(crate) interval: Duration,
    pub(crate) events_done: u64,
    pub(crate) conns_opened: u64,
    pub(crate) rec: Recorder,
    /// The control plane (`control/`): handles, the log of changes, the
    /// agents, the admission agent of each workload (if any), whether each
    /// scenario flow is on, and the RTT totals of each workload's closed
    /// connections (samples, sum ns).
    pub(crate) handles: Handles,
    pub(crate) log: Vec<Change>,
    pub(crate) agents: Vec<Option<Box<dyn Agent>>>,
    pub(crate) admission: Vec<Option<u32>>,
    pub(crate) flow_active: Vec<bool>,
    pub(crate) rtt_done: Vec<(u64, u64)>,
}


impl Simulation {
    pub fn from_json(text: &str) -> Result<Simulation, ConfigError> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| ConfigError::new(e.to_string()).with_outer("config"))?;
        Simulation::new(&cfg)
    }

    pub fn new(cfg: &Config) -> Result<Simulation, ConfigError> {
        let mut problems = Vec::new();
        match Simulation::build(cfg, &mut problems) {
            Some(sim) if problems.is_empty() => Ok(sim),
            _ => Err(problems.into_iter().next().expect("a world not built names its problem")),
        }
    }

    /// The world of `cfg`, or None; every problem found goes into
    /// `problems` (each located in `cfg`). A problem of the
    /// network (durations, nodes, links) stops the build there; every flow
    /// and workload is checked on its own, each with its first problem;
    /// the agents, which name flows and workloads, are checked once those
    /// are sound, each on its own. The world is returned only without
    /// problems; [`crate::check`] reports them all.
    pub(crate) fn build(cfg: &Config, problems: &mut Vec<ConfigError>) -> Option<Simulation> {
        Simulation::build_seeing(cfg, problems, |_| {})
    }

    /// [`Simulation::build`], showing `see` the network once it is built
    /// (before any flow is added), as [`crate::check`] reports routes.
    pub(crate) fn build_seeing(cfg: &Config, problems: &mut Vec<ConfigError>, see: impl FnOnce(&Net)) -> Option<Simulation> {
        if cfg.duration_ns == 0 {
            problems.push(ConfigError::at("duration_ns", "must be positive"));
        }
        if cfg.metric_interval_ns == 0 {
            problems.push(ConfigError::at("metric_interval_ns", "must be positive"));
        }
        if !problems.is_empty() {
            return None;
        }
        let mut net = match build_net(cfg) {
            Ok(net) => {
                see(&net);
                net
            }
            Err(e) => {
                problems.push(e);
                return None;
            }
        };
        let duration = SimTime(cfg.duration_ns);
        let mut rec = Recorder::default();
        let mut conns = Slab::default();
        let mut flows = Vec::new();
        let mut names = BTreeMap::new();
        for (i, f) in cfg.flows.iter().enumerate() {
            if names.insert(f.name.clone(), i).is_some() {
                problems.push(ConfigError::at("name", format!("duplicate flow '{}'", f.name)).with_outer(i).with_outer("flows"));
                continue;
            }
            let (ends, app) = match build_flow(cfg, i, f, &net) {
                Ok(built) => built,
                Err(e) => {
                    problems.push(e.with_outer(i).with_outer("flows"));
                    continue;
                }
            };
            let stop = f.stop_ns.unwrap_or(cfg.duration_ns);
            if f.start_ns >= stop || stop > cfg.duration_ns {
                let msg = format!("need start < stop <= duration (start {}, stop {}, duration {})", SimTime(f.start_ns), SimTime(stop), duration);
                problems.push(ConfigError::new(msg).with_outer(i).with_outer("flows"));
                continue;
            }
            let id = conns.insert(Conn { ends, app, owner: Owner::Flow(i as u32) });
            net.open_slot(id);
            net.delay.push(DelayStats::default());
            net.events.schedule(SimTime(f.start_ns), Event::Conn(id, FlowTimer::Start));
            // Scheduled now, the stop precedes any send at the same instant:
            // a flow is active on [start, stop).
            net.events.schedule(SimTime(stop), Event::Conn(id, FlowTimer::Stop));
            flows.push(FlowMeta { name: f.name.clone(), key: rec.names.intern(&f.name), start: f.start_ns, stop, prev: 0 });
        }
        let mut workloads = Vec::new();
        // Names seen so far: a set, not a scan of the earlier workloads
        // (quadratic: 10^4 workloads took most of a second to check).
        let mut workload_names = HashSet::new();
        for (i, w) in cfg.workloads.iter().enumerate() {
            if !workload_names.insert(w.name.as_str()) {
                problems.push(ConfigError::at("name", format!("duplicate workload '{}'", w.name)).with_outer(i).with_outer("workloads"));
                continue;
            }
            let key = rec.names.intern(&w.name);
            let built = Workload::new(w, cfg.seed, duration, key, &mut |name, k| host_id(&net, name, k)).and_then(|wl| {
                let max = wl.tcp.mss_bytes + TCP_HEADER_BYTES;
                for (a, b) in wl.pairs() {
                    check_path(cfg, &net, a, b, max, &["tcp", "mss_bytes"], MSS_NOTE)?;
                }
                crate::apps::bulk::BulkTcp::new(&wl.tcp).outer("tcp")?;
                Ok(wl)
            });
            match built {
                Ok(wl) => workloads.push(wl),
                Err(e) => problems.push(e.with_outer(i).with_outer("workloads")),
            }
        }
        if !problems.is_empty() {
            return None;
        }
        let n_nodes = net.nodes.len();
        let interval = Duration(cfg.metric_interval_ns);
        net.events.schedule(SimTime::ZERO + interval.min(Duration(cfg.duration_ns)), Event::Sample);
        let mut sim = Simulation {
            net,
            conns,
            flows,
            workloads,
            transfers: Vec::new(),
            streams: Vec::new(),
            ports: vec![EPHEMERAL_LOW + 4096; n_nodes],
            paths: HashMap::new(),
            duration,
            interval,
            events_done: 0,
            conns_opened: 0,
            rec,
            handles: Handles::default(),
            log: Vec::new(),
            agents: Vec::new(),
            admission: vec![None; cfg.workloads.len()],
            flow_active: vec![false; cfg.flows.len()],
            rtt_done: vec![(0, 0); cfg.workloads.len()],
        };
        for w in 0..sim.workloads.len() {
            sim.schedule_first(w);
        }
        sim.build_handles();
        sim.build_agents(cfg, problems);
        problems.is_empty().then_some(sim)
    }

    pub fn now(&self) -> SimTime {
        self.net.now
    }
    pub fn duration(&self) -> SimTime {
        self.duration
    }
    pub fn events(&self) -> u64 {
        self.events_done
    }

    /// Process every event up to and including `until` (capped at the duration).
    pub fn advance(&mut self, until: SimTime) {
        self.run_events(until, true, u64::MAX);
    }

    /// Process every event before `until` (capped at the duration), so
    /// that a caller acting at `until` acts before the events at `until`,
    /// as an agent woken then does. Stepping a run in chunks of any size
    /// this way, then [`Simulation::run`], gives the run of one call.
    pub fn advance_before(&mut self, until: SimTime) {
        self.run_events(until, false, u64::MAX);
    }

    /// [`Simulation::advance`] (`inclusive`) or [`Simulation::advance_before`]
    /// in slices of at most `max_events` events, so that a caller can look
    /// at other things (the Python binding: Ctrl-C) between slices however
    /// long the run. True once every event up to `until` has run; the run
    /// is the same however it is sliced.
    pub fn advance_at_most(&mut self, until: SimTime, inclusive: bool, max_events: u64) -> bool {
        self.run_events(until, inclusive, max_events)
    }

    /// The event loop: every event before `until`, and those at `until`
    /// too if `inclusive`, but at most `max_events` of them (false if it
    /// stopped short); at the end of the run the taps are written out.
    fn run_events(&mut self, until: SimTime, inclusive: bool, max_events: u64) -> bool {
        let until = until.min(self.duration);
        let last = self.events_done.saturating_add(max_events);
        loop {
            if self.events_done == last {
                if self.net.events.any_before(until, inclusive) {
                    return false;
                }
                break;
            }
            let Some((t, code)) = self.net.events.pop_code_before(until, inclusive) else { break };
            self.net.now = t;
            self.events_done += 1;
            self.dispatch(code);
        }
        self.net.now = self.net.now.max(until);
        if self.net.now >= self.duration {
            self.net.flush_taps();
        }
        true
    }

    pub fn run(&mut self) {
        self.advance(self.duration);
    }

    #[inline(always)]
    fn dispatch(&mut self, code: u64) {
        match Event::decode(code) {
            Event::TxDone(i) => {
                let ifc = &mut self.net.ifaces[i as usize];
                if ifc.tx_event == self.net.now {
                    ifc.tx_event = SimTime::MAX;
                    self.net.start_tx(i);
                } // else superseded
            }
            Event::Deliver(i) => {
                if let Some(pkt) = self.net.deliver(i) {
                    let id = ConnId::new(pkt.flow, pkt.gen);
                    if let Some(c) = self.conns.get_mut(id) {
                        let mut io = FlowIo::new(&mut self.net, id, c.ends);
                        let report = c.app.on_packet(&pkt, &mut io);
                        if let Owner::Stream(s) = c.owner {
                            self.after(id, s as usize, report);
                        }
                    }
                }
            }
            Event::Conn(id, t) => {
                if let Some(c) = self.conns.get_mut(id) {
                    if let (FlowTimer::Start | FlowTimer::Stop, Owner::Flow(i)) = (t, c.owner) {
                        self.flow_active[i as usize] = t == FlowTimer::Start;
                    }
                    let mut io = FlowIo::new(&mut self.net, id, c.ends);
                    let report = c.app.on_timer(t, &mut io);
                    if let Owner::Stream(s) = c.owner {
                        self.after(id, s as usize, report);
                    }
                }
            }
            Event::Workload(w, arg) => self.on_workload(w as usize, arg),
            Event::Sample => self.sample(),
            Event::Agent(a) => self.on_agent(a),
        }
    }
}
