//! The simulation: the event loop over the network (`network.rs`), the
//! connections (`conn.rs`, one slab for the scenario's flows and the
//! connections workloads open), the workloads (`workload/`), and the
//! results (`recorder.rs` for series, the summary tables here).
//!
//! The world is built by `builder.rs`; this file runs it: every event is a
//! transmission ending, a packet arriving, a connection's timer, a
//! workload's timer, or a sample of the series.

use crate::qos::Qdisc;
use crate::apps::bulk::{AppWriter, BulkTcp};
use crate::apps::App;
use crate::builder::{build_flow, build_net, check_path, host_id, MSS_NOTE};
use crate::error::{ConfigError, Outer};
use crate::config::Config;
use crate::control::{Agent, Change, Handles};
use crate::conn::{ConnId, Slab};
use crate::event::{Event, FlowTimer};
use crate::metrics::{col, Column, DelayStats, Table};
use crate::network::{Ends, FlowIo, Net};
use crate::packet::{PROTO_TCP, TCP_HEADER_BYTES};
use crate::recorder::{Recorder, Sampling, STREAM_ROWS_MAX};
use crate::time::{Duration, SimTime};
use crate::workload::{ideal_fct, Kind, PathInfo, Workload};
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
    key: u32,
    start: u64,
    stop: u64,
    /// Delivered bytes at the previous sample.
    prev: u64,
}

/// One transfer of a workload.
#[derive(Clone, Debug)]
pub struct TransferRec {
    pub workload: u32,
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub start: SimTime,
    pub end: Option<SimTime>,
    /// When the receiver held the whole file in order, whichever streams
    /// carried its blocks (the sender learns it a one-way trip later).
    pub receiver_end: Option<SimTime>,
    pub streams: u32,
    /// Streams still open.
    pub open: u32,
    pub ideal: Duration,
    /// The ON/OFF host index that started it (0 otherwise).
    pub host: u32,
    pub failed: bool,
    /// An HTTP request whose response has not started yet.
    pub awaiting_response: bool,
    /// Dynamic striping: the block size, and the bytes handed out so far.
    pub block: Option<u64>,
    pub assigned: u64,
    /// Its first stream's row in the stream records (the others follow).
    pub first_stream: u32,
}

impl TransferRec {
    /// The rows of its streams in the stream records.
    pub fn stream_rows(&self) -> std::ops::Range<usize> {
        self.first_stream as usize..(self.first_stream + self.streams) as usize
    }
}

/// One connection (stream) of a transfer.
#[derive(Clone, Debug)]
pub struct StreamRec {
    pub transfer: u32,
    pub stream: u32,
    pub id: ConnId,
    pub src_port: u16,
    pub size: u64,
    pub start: SimTime,
    pub end: Option<SimTime>,
    pub acked: u64,
    /// Bytes its receiver delivered in order (final once it ended).
    pub delivered: u64,
    pub retransmits: u64,
    /// Payload bytes sent again, and segments its receiver already had.
    pub resent: u64,
    pub spurious: u64,
    pub timeouts: u64,
    pub failed: bool,
    /// Bytes its receiver had delivered in order at its previous row of
    /// the streams' TCP series.
    pub prev_delivered: u64,
}

pub struct Simulation {
    pub net: Net,
    pub(crate) conns: Slab<Conn>,
    pub(crate) flows: Vec<FlowMeta>,
    pub(crate) workloads: Vec<Workload>,
    pub transfers: Vec<TransferRec>,
    pub streams: Vec<StreamRec>,
    /// Next ephemeral port per host (Linux's range 32768..60999).
    ports: Vec<u16>,
    paths: HashMap<(u32, u32), PathInfo>,
    pub(crate) duration: SimTime,
    interval: Duration,
    events_done: u64,
    conns_opened: u64,
    rec: Recorder,
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


const EPHEMERAL_LOW: u16 = 32768;
const EPHEMERAL_HIGH: u16 = 60999;

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

    /// The first event of workload `w`.
    pub(crate) fn schedule_first(&mut self, w: usize) {
        let wl = &mut self.workloads[w];
        let start = wl.start;
        match &mut wl.kind {
            Kind::Transfer { .. } => self.net.events.schedule(start, Event::Workload(w as u32, 0)),
            Kind::Poisson { mean_gap_ns, .. } => {
                let at = start + Duration(wl.arrivals.exponential(*mean_gap_ns).round() as u64);
                self.net.events.schedule(at, Event::Workload(w as u32, 0));
            }
            Kind::OnOff { hosts, mean_gap_ns, .. } | Kind::Http { sessions: hosts, mean_gap_ns, .. } => {
                for (h, host) in hosts.iter_mut().enumerate() {
                    let at = start + Duration(host.rng.exponential(*mean_gap_ns).round() as u64);
                    host.next_due = at;
                    self.net.events.schedule(at, Event::Workload(w as u32, h as u32));
                }
            }
        }
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
        while let Some(t) = self.net.events.peek_time() {
            if t > until || (t == until && !inclusive) {
                break;
            }
            if self.events_done == last {
                return false;
            }
            let (t, code) = self.net.events.pop_code().expect("peeked");
            self.net.now = t;
            self.events_done += 1;
            self.dispatch(code);
        }
        self.net.now = self.net.now.max(until);
        if self.net.now >= self.duration {
            self.flush_taps();
        }
        true
    }

    /// Write out what the links' taps hold (done at the end of the run).
    pub fn flush_taps(&mut self) {
        for ifc in &mut self.net.ifaces {
            if let Some(t) = &mut ifc.tap {
                let _ = t.flush();
            }
        }
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
                        c.app.on_packet(&pkt, &mut io);
                        self.after(id);
                    }
                }
            }
            Event::Conn(id, t) => {
                if let Some(c) = self.conns.get_mut(id) {
                    if let (FlowTimer::Start | FlowTimer::Stop, Owner::Flow(i)) = (t, c.owner) {
                        self.flow_active[i as usize] = t == FlowTimer::Start;
                    }
                    let mut io = FlowIo::new(&mut self.net, id, c.ends);
                    c.app.on_timer(t, &mut io);
                    self.after(id);
                }
            }
            Event::Workload(w, arg) => self.on_workload(w as usize, arg),
            Event::Sample => self.sample(),
            Event::Agent(a) => self.on_agent(a),
        }
    }

    /// After an event of connection `id`: close a transfer's stream that has
    /// finished or given up.
    fn after(&mut self, id: ConnId) {
        let Some(c) = self.conns.get(id) else { return };
        let Owner::Stream(s) = c.owner else { return };
        let t = self.streams[s as usize].transfer as usize;
        if self.transfers[t].block.is_some() && self.transfers[t].assigned < self.transfers[t].size {
            self.feed(id, t);
        }
        let Some(tcp) = self.conns.get(id).and_then(|c| c.app.tcp()) else { return };
        // The file is whole at the receiver only once this stream, whose
        // event may have completed it, holds all it was fed: only then is
        // it worth summing the transfer's streams (not on every packet).
        if self.transfers[t].receiver_end.is_none() && tcp.receiver.delivered() >= tcp.sender.written() {
            self.note_receiver(t);
        }
        let Some(tcp) = self.conns.get(id).and_then(|c| c.app.tcp()) else { return };
        // An HTTP server answers once it holds the whole request.
        let answer = self.transfers[t].awaiting_response && tcp.receiver.delivered() >= self.transfers[t].size;
        let done = tcp.is_finished() || tcp.failed;
        if answer {
            self.transfers[t].awaiting_response = false;
            self.start_response(t);
        }
        if done {
            self.close_stream(id, s as usize);
        }
    }

    /// The server of HTTP request `t` sends its response.
    fn start_response(&mut self, t: usize) {
        let r = &self.transfers[t];
        let (w, client, host) = (r.workload as usize, r.src, r.host);
        let Kind::Http { server, sessions, sizes, .. } = &mut self.workloads[w].kind else { unreachable!("only HTTP requests await a response") };
        let size = sizes.sample(&mut sessions[host as usize].rng);
        let server = *server;
        self.start_transfer(w, server, client, size, host, false);
    }

    /// The bytes the receiver of transfer `t` holds in order, summed over
    /// its streams (each stream's in-order bytes: its blocks are whole).
    pub fn transfer_delivered(&self, t: usize) -> u64 {
        self.streams[self.transfers[t].stream_rows()]
            .iter()
            .map(|r| match self.conns.get(r.id).and_then(|c| c.app.tcp()) {
                Some(tcp) if r.end.is_none() => tcp.receiver.delivered(),
                _ => r.delivered,
            })
            .sum()
    }

    /// The receiver of transfer `t` merges its streams' blocks: the file is
    /// complete the moment their in-order bytes add up to its size.
    fn note_receiver(&mut self, t: usize) {
        if self.transfer_delivered(t) >= self.transfers[t].size {
            self.transfers[t].receiver_end = Some(self.net.now);
        }
    }

    /// Dynamic striping: hand stream `id` of transfer `t` blocks while its
    /// unacknowledged data is under two windows (or one block); when the
    /// file has no more blocks, every stream's size becomes what it was fed.
    fn feed(&mut self, id: ConnId, t: usize) {
        let tr = &mut self.transfers[t];
        let block = tr.block.expect("dynamic");
        let c = self.conns.get_mut(id).expect("live");
        let ends = c.ends;
        let tcp = c.app.tcp_mut().expect("a transfer's stream is TCP");
        let mut io = FlowIo::new(&mut self.net, id, ends);
        while tr.assigned < tr.size {
            let backlog = tcp.sender.written() - tcp.sender.bytes_acked();
            if backlog >= (2 * tcp.sender.cwnd()).max(block) {
                return;
            }
            let n = block.min(tr.size - tr.assigned);
            tr.assigned += n;
            tcp.feed(n, &mut io.fwd());
        }
        // The last block is out: seal every stream of the transfer.
        let rows = tr.stream_rows();
        self.seal_streams(rows.clone());
        for r in rows {
            let sid = self.streams[r].id;
            if sid != id && self.conns.get(sid).and_then(|c| c.app.tcp()).is_some_and(|tcp| tcp.is_finished()) {
                self.close_stream(sid, r);
            }
        }
    }

    fn on_workload(&mut self, w: usize, arg: u32) {
        let now = self.net.now;
        let wl = &mut self.workloads[w];
        if now >= wl.stop {
            return;
        }
        let (src, dst, size) = match &mut wl.kind {
            Kind::Transfer { src, dst, size } => (*src, *dst, *size),
            Kind::Poisson { mean_gap_ns, pairs, sizes } => {
                let (a, b) = pairs.draw(&mut wl.pairs_rng);
                let size = sizes.sample(&mut wl.sizes_rng);
                let next = now + Duration(wl.arrivals.exponential(*mean_gap_ns).round() as u64);
                self.net.events.schedule(next, Event::Workload(w as u32, 0));
                (a, b, size)
            }
            Kind::OnOff { hosts, peers, sizes, mean_gap_ns, think } => {
                let h = &mut hosts[arg as usize];
                let others = peers.iter().filter(|&&p| p != h.node).count();
                let k = ((h.rng.uniform() * others as f64) as usize).min(others - 1);
                let peer = *peers.iter().filter(|&&p| p != h.node).nth(k).expect("a peer");
                let size = sizes.sample(&mut h.rng);
                if *think {
                    h.next_due = now + Duration(h.rng.exponential(*mean_gap_ns).round() as u64);
                }
                (h.node, peer, size)
            }
            Kind::Http { server, sessions, request, mean_gap_ns, think, .. } => {
                let h = &mut sessions[arg as usize];
                if *think {
                    h.next_due = now + Duration(h.rng.exponential(*mean_gap_ns).round() as u64);
                }
                let (client, server, request) = (h.node, *server, *request);
                let handshake = wl.handshake;
                // Pages are not subject to call admission (no agent books them).
                let t = self.start_transfer(w, client, server, request, arg, handshake);
                self.transfers[t as usize].awaiting_response = true;
                return;
            }
        };
        let req = self.admit(w as u32, src, dst, size);
        if req.as_ref().is_some_and(|r| !r.admitted) {
            // Refused: an ON/OFF host goes on as if it had completed.
            self.host_next(w, arg);
            return;
        }
        let handshake = self.workloads[w].handshake;
        let t = self.start_transfer(w, src, dst, size, arg, handshake);
        if let Some(r) = req {
            self.admitted(w as u32, &r, t);
        }
    }

    /// What the path from `src` to `dst` offers one transfer alone.
    fn path_info(&mut self, src: u32, dst: u32, mss: u32) -> PathInfo {
        if let Some(p) = self.paths.get(&(src, dst)) {
            return *p;
        }
        let net = &self.net;
        let seg = (mss + TCP_HEADER_BYTES) as u64;
        let mut rtt = Duration::ZERO;
        let mut rate = f64::INFINITY;
        for i in net.path(src, dst) {
            let ifc = &net.ifaces[i as usize];
            rtt = rtt + ifc.delay + ifc.rate.tx_time(seg + ifc.overhead as u64);
            rate = rate.min(ifc.rate.as_bps() as f64 * mss as f64 / (seg + ifc.overhead as u64) as f64);
        }
        for i in net.path(dst, src) {
            let ifc = &net.ifaces[i as usize];
            rtt = rtt + ifc.delay + ifc.rate.tx_time(TCP_HEADER_BYTES as u64 + ifc.overhead as u64);
        }
        let p = PathInfo { rtt, rate_bps: rate };
        self.paths.insert((src, dst), p);
        p
    }

    fn next_port(&mut self, host: u32) -> u16 {
        let p = &mut self.ports[host as usize];
        let port = *p;
        *p = if *p >= EPHEMERAL_HIGH { EPHEMERAL_LOW } else { *p + 1 };
        port
    }

    /// Open the `streams` connections of a new transfer of workload `w`
    /// (each with a three-way handshake if `handshake`); its index.
    fn start_transfer(&mut self, w: usize, src: u32, dst: u32, size: u64, host: u32, handshake: bool) -> u32 {
        let now = self.net.now;
        let (mss, iw, block) = {
            let wl = &self.workloads[w];
            (wl.tcp.mss_bytes, wl.tcp.init_cwnd_pkts, wl.block_bytes)
        };
        // No stream without bytes: at most one per byte, or per block.
        let k = (self.workloads[w].streams as u64).min(block.map_or(size, |b| size.div_ceil(b))).max(1) as u32;
        let path = self.path_info(src, dst, mss);
        let t = self.transfers.len() as u32;
        self.transfers.push(TransferRec {
            workload: w as u32,
            src,
            dst,
            size,
            start: now,
            end: None,
            receiver_end: None,
            streams: k,
            open: k,
            ideal: ideal_fct(size, k, iw, mss, path, handshake),
            host,
            failed: false,
            awaiting_response: false,
            block,
            assigned: 0,
            first_stream: self.streams.len() as u32,
        });
        let wl = &mut self.workloads[w];
        wl.started += 1;
        wl.offered_bytes += size;
        wl.active_conns += k as u64;
        for s in 0..k {
            let wl = &self.workloads[w];
            let (tcp, dscp) = wl.stream(s);
            let mut cfg = tcp.clone();
            // Static stripes: the first `size mod k` one byte longer.
            // Dynamic: a first block each; the rest as they make room.
            let part = match block {
                None => size / k as u64 + ((s as u64) < size % k as u64) as u64,
                Some(b) => b.min(size - self.transfers[t as usize].assigned),
            };
            cfg.size_bytes = Some(part);
            let mut app = BulkTcp::new(&cfg).expect("checked when the workload was built");
            if handshake {
                app = app.with_handshake(Duration(cfg.initial_rto_ns));
            }
            if let Some(rate) = wl.app_rate_bps {
                let chunk = wl.write_bytes;
                let gap = Duration((chunk as u128 * 8 * 1_000_000_000 / rate as u128) as u64);
                app = app.with_writer(AppWriter::new(part, chunk, gap));
            }
            if block.is_some() {
                app = app.fed_by_blocks();
                app.sender.set_written(part);
                self.transfers[t as usize].assigned += part;
            }
            let dst_port = wl.dst_port;
            let src_port = self.next_port(src);
            let n = &self.net.nodes;
            let ends = Ends { src, dst, src_ip: n[src as usize].addr, dst_ip: n[dst as usize].addr, proto: PROTO_TCP, dscp, src_port, dst_port };
            let rec = self.streams.len() as u32;
            let id = self.conns.insert(Conn { ends, app: Box::new(app), owner: Owner::Stream(rec) });
            self.net.open_slot(id);
            self.conns_opened += 1;
            self.streams.push(StreamRec {
                transfer: t,
                stream: s,
                id,
                src_port,
                size: part,
                start: now,
                end: None,
                acked: 0,
                delivered: 0,
                retransmits: 0,
                resent: 0,
                spurious: 0,
                timeouts: 0,
                failed: false,
                prev_delivered: 0,
            });
            self.net.events.schedule(now, Event::Conn(id, FlowTimer::Start));
        }
        // A file that fits the first blocks: every stream is sealed now.
        let tr = &self.transfers[t as usize];
        if tr.block.is_some() && tr.assigned >= tr.size {
            self.seal_streams(tr.stream_rows());
        }
        t
    }

    /// No more blocks: the streams of these rows are done once what they
    /// were fed is acknowledged.
    fn seal_streams(&mut self, rows: std::ops::Range<usize>) {
        let now = self.net.now;
        for r in rows {
            if let Some(tcp) = self.conns.get_mut(self.streams[r].id).and_then(|c| c.app.tcp_mut()) {
                tcp.seal(now);
            }
        }
    }

    /// Stream `s` (connection `id`) finished or gave up: record it, free its
    /// slot, and complete its transfer with its last stream.
    fn close_stream(&mut self, id: ConnId, s: usize) {
        let now = self.net.now;
        let c = self.conns.remove(id).expect("a live connection");
        let tcp = c.app.tcp().expect("a transfer's stream is TCP");
        let r = &mut self.streams[s];
        r.end = Some(now);
        if self.transfers[r.transfer as usize].block.is_some() {
            r.size = tcp.sender.written();
        }
        r.acked = tcp.sender.bytes_acked().min(r.size);
        r.retransmits = tcp.sender.stats.retransmits;
        r.resent = tcp.sender.stats.retransmitted_bytes;
        r.spurious = tcp.receiver.stats.spurious_retransmits;
        r.timeouts = tcp.sender.stats.timeouts;
        r.failed = tcp.failed;
        let (n, sum) = tcp.sender.rtt_totals();
        let delivered = tcp.receiver.delivered();
        r.delivered = delivered;
        let t = &mut self.transfers[r.transfer as usize];
        t.failed |= r.failed;
        t.open -= 1;
        let w = t.workload as usize;
        self.rtt_done[w].0 += n;
        self.rtt_done[w].1 += sum;
        let wl = &mut self.workloads[w];
        wl.active_conns -= 1;
        wl.delivered_done += delivered;
        if t.open > 0 {
            return;
        }
        t.end = Some(now);
        wl.completed += 1;
        let host = t.host;
        // An HTTP session goes idle after its response, or after a request
        // that failed before the server held it; not after a request.
        let page_over = match &wl.kind {
            Kind::Http { server, .. } => t.src == *server || t.awaiting_response,
            _ => true,
        };
        t.awaiting_response = false;
        if page_over {
            self.host_next(w, host);
        }
    }

    /// An ON/OFF host's transfer (an HTTP session's page) completed, or was
    /// refused: it goes idle, then starts its next one.
    fn host_next(&mut self, w: usize, host: u32) {
        let now = self.net.now;
        let wl = &mut self.workloads[w];
        if now >= wl.stop {
            return;
        }
        if let Kind::OnOff { hosts, mean_gap_ns, think, .. } | Kind::Http { sessions: hosts, mean_gap_ns, think, .. } = &mut wl.kind {
            let h = &mut hosts[host as usize];
            let at = if *think { h.next_due.max(now) } else { now + Duration(h.rng.exponential(*mean_gap_ns).round() as u64) };
            self.net.events.schedule(at, Event::Workload(w as u32, host));
        }
    }

    fn sample(&mut self) {
        let now = self.net.now;
        let s = Sampling { now, span_ns: now.since(self.rec.last_sample).as_nanos().max(1) };
        for (i, f) in self.flows.iter_mut().enumerate() {
            let id = ConnId::new(i as u32, 0);
            let c = self.conns.get(id).expect("a scenario flow lives the whole run");
            c.app.sample(f.key, &self.net.conns[i].stats, &mut f.prev, s, &mut self.rec);
        }
        if !self.workloads.is_empty() {
            let mut delivered: Vec<u64> = self.workloads.iter().map(|w| w.delivered_done).collect();
            // The streams open now get a row of their TCP series (those that
            // closed have none after they closed), thinned past a budget.
            let last = now >= self.duration;
            let due = self.rec.streams.due(last);
            let span = Sampling { now, span_ns: now.since(self.rec.streams.last).as_nanos().max(1) };
            for (_, c) in self.conns.iter() {
                if let (Owner::Stream(r), Some(tcp)) = (c.owner, c.app.tcp()) {
                    let sr = &mut self.streams[r as usize];
                    let w = self.transfers[sr.transfer as usize].workload as usize;
                    delivered[w] += tcp.receiver.delivered();
                    if due {
                        let row = tcp.series_row(&mut sr.prev_delivered, span);
                        self.rec.streams.row(self.workloads[w].key, [sr.transfer as u64, sr.stream as u64], &row);
                    }
                }
            }
            self.rec.streams.end_sample(now, due, last, STREAM_ROWS_MAX);
            for (w, d) in self.workloads.iter_mut().zip(delivered) {
                let row = [now.as_nanos(), w.active_conns, s.rate(w.offered_bytes - w.prev_offered), s.rate(d.saturating_sub(w.prev_delivered)), w.started, w.completed];
                self.rec.workload.row(w.key, &row);
                w.prev_offered = w.offered_bytes;
                w.prev_delivered = d;
            }
        }
        let rec = &mut self.rec;
        rec.queue_keys.resize_with(self.net.ifaces.len(), Vec::new);
        for (ifc, keys) in self.net.ifaces.iter().zip(&mut rec.queue_keys) {
            let (names, queue) = (&mut rec.names, &mut rec.queue);
            let mut k = 0;
            ifc.qdisc.for_each_queue(&mut |class, c, b| {
                // A queue's key is interned the first time it is seen.
                if k == keys.len() {
                    keys.push(names.intern(&queue_name(&ifc.name, class)));
                }
                let [g, y, r] = c.held_by_color;
                queue.row(keys[k], &[now.as_nanos(), b.pkts, b.bytes, c.deq_bytes, g, y, r]);
                k += 1;
            });
        }
        crate::monitor::sample_yaqs(&self.net, &mut self.rec, now);
        self.rec.last_sample = now;
        if now < self.duration {
            let next = (now + self.interval).min(self.duration);
            self.net.events.schedule(next, Event::Sample);
        }
    }

    /// The results tables. Meaningful once the run reached its duration.
    pub fn results(&self) -> BTreeMap<String, Table> {
        let mut out = BTreeMap::new();
        let names = &self.rec.names;
        out.insert("tcp".into(), self.rec.tcp.table(names));
        out.insert("udp".into(), self.rec.udp.table(names));
        out.insert("queue".into(), self.rec.queue.table(names));
        out.insert("workload".into(), self.rec.workload.table(names));
        out.insert("workload_tcp".into(), self.rec.streams.series.table(names));
        out.insert("yaqs_series".into(), self.rec.yaqs.table(names));
        out.extend(crate::monitor::tables(&self.net).into_iter().map(|(k, t)| (k.to_string(), t)));
        out.insert("ping".into(), self.ping_table());
        out.insert("filter".into(), self.filter_table());
        out.insert("queue_summary".into(), self.queue_summary());
        out.insert("flow_summary".into(), self.flow_summary());
        out.insert("transfers".into(), self.transfer_table());
        out.insert("transfer_streams".into(), self.stream_table());
        out.insert("control".into(), self.control_table());
        self.agent_tables(&mut out);
        out.insert(
            "run".into(),
            Table::default()
                .with(col::EVENTS, Column::U64(vec![self.events_done]))
                .with(col::SIM_TIME_NS, Column::U64(vec![self.net.now.as_nanos()]))
                .with(col::CONNS_OPENED, Column::U64(vec![self.conns_opened]))
                .with(col::MAX_CONNS, Column::U64(vec![self.conns.capacity() as u64]))
                .with(col::STALE_PKTS, Column::U64(vec![self.net.stale_pkts]))
                .with(col::STREAM_SAMPLE_EVERY, Column::U64(vec![self.rec.streams.every as u64])),
        );
        out
    }

    fn filter_table(&self) -> Table {
        crate::summary::filter_table(self.net.filters.iter().enumerate().filter_map(|(n, f)| f.as_ref().map(|f| (self.net.nodes[n].name.as_str(), f))))
    }

    fn ping_table(&self) -> Table {
        let (mut flow, mut seq, mut time, mut rtt) = (vec![], vec![], vec![], vec![]);
        for (i, f) in self.flows.iter().enumerate() {
            let c = self.conns.get(ConnId::new(i as u32, 0)).expect("a scenario flow");
            if let Some(probes) = c.app.probes() {
                for (k, (sent, r)) in probes.iter().enumerate() {
                    flow.push(f.name.clone());
                    seq.push(k as u64);
                    time.push(sent.as_nanos());
                    rtt.push(r.map(|d| d.as_nanos()));
                }
            }
        }
        Table::default()
            .with(col::FLOW, Column::Str(flow))
            .with(col::SEQ, Column::U64(seq))
            .with(col::TIME_NS, Column::U64(time))
            .with(col::RTT_NS, Column::OptU64(rtt))
    }

    fn queue_summary(&self) -> Table {
        crate::summary::queue_summary(self.net.ifaces.iter().map(|ifc| crate::summary::QueueSource { link: &ifc.name, rate: ifc.rate, link_loss_pkts: ifc.lost_pkts, qdisc: ifc.qdisc.as_dyn() }))
    }

    fn flow_summary(&self) -> Table {
        let n = self.flows.len();
        let (mut name, mut kind, mut src, mut dst) = (vec![], vec![], vec![], vec![]);
        let mut u: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        let mut o: BTreeMap<&str, Vec<Option<u64>>> = BTreeMap::new();
        for (i, f) in self.flows.iter().enumerate() {
            let c = self.conns.get(ConnId::new(i as u32, 0)).expect("a scenario flow");
            let st = &self.net.conns[i].stats;
            name.push(f.name.clone());
            kind.push(c.app.kind().to_string());
            src.push(self.net.nodes[c.ends.src as usize].name.clone());
            dst.push(self.net.nodes[c.ends.dst as usize].name.clone());
            for (k, v) in [
                (col::TX_PKTS, st.tx_pkts),
                (col::TX_BYTES, st.tx_bytes),
                (col::RX_PKTS, st.rx_pkts),
                (col::RX_BYTES, st.rx_bytes),
                (col::DROP_PKTS, st.drop_pkts),
                (col::DROP_REV_PKTS, st.drop_rev_pkts),
            ] {
                u.entry(k).or_default().push(v);
            }
            let d = &self.net.delay[i];
            for (k, v) in [
                (col::DELAY_MEAN_NS, d.mean().map(|x| x.round() as u64)),
                (col::DELAY_STD_NS, d.std().map(|x| x.round() as u64)),
                (col::DELAY_MIN_NS, d.min()),
                (col::DELAY_P50_NS, d.quantile(0.5)),
                (col::DELAY_P99_NS, d.quantile(0.99)),
                (col::DELAY_MAX_NS, d.max()),
            ] {
                o.entry(k).or_default().push(v);
            }
            // Goodput over the flow's active period: in-order bytes for TCP,
            // received bytes otherwise.
            let active = f.stop.min(self.net.now.as_nanos()).saturating_sub(f.start).max(1) as u128;
            let bytes = c.app.delivered(st);
            o.entry(col::GOODPUT_BPS).or_default().push(Some((bytes as u128 * 8_000_000_000 / active) as u64));
        }
        let mut t = Table::default()
            .with(col::FLOW, Column::Str(name))
            .with(col::KIND, Column::Str(kind))
            .with(col::SRC, Column::Str(src))
            .with(col::DST, Column::Str(dst));
        for k in [col::TX_PKTS, col::TX_BYTES, col::RX_PKTS, col::RX_BYTES, col::DROP_PKTS, col::DROP_REV_PKTS] {
            t = t.with(k, Column::U64(u.remove(k).unwrap_or_else(|| vec![0; n])));
        }
        for k in [col::DELAY_MEAN_NS, col::DELAY_STD_NS, col::DELAY_MIN_NS, col::DELAY_P50_NS, col::DELAY_P99_NS, col::DELAY_MAX_NS, col::GOODPUT_BPS] {
            t = t.with(k, Column::OptU64(o.remove(k).unwrap_or_else(|| vec![None; n])));
        }
        t
    }

    /// A stream's counters now: final if it ended, else read from its live connection.
    pub(crate) fn stream_now(&self, r: &StreamRec) -> (u64, u64, u64) {
        match self.conns.get(r.id).and_then(|c| c.app.tcp()) {
            Some(tcp) if r.end.is_none() => (tcp.sender.bytes_acked().min(tcp.sender.written()), tcp.sender.stats.retransmits, tcp.sender.stats.timeouts),
            _ => (r.acked, r.retransmits, r.timeouts),
        }
    }

    /// A stream's payload bytes sent again, and the segments its receiver
    /// got twice, so far.
    fn stream_resent(&self, r: &StreamRec) -> (u64, u64) {
        match self.conns.get(r.id).and_then(|c| c.app.tcp()) {
            Some(tcp) if r.end.is_none() => (tcp.sender.stats.retransmitted_bytes, tcp.receiver.stats.spurious_retransmits),
            _ => (r.resent, r.spurious),
        }
    }

    fn transfer_table(&self) -> Table {
        let n = self.transfers.len();
        let node = |i: u32| self.net.nodes[i as usize].name.clone();
        let mut per: Vec<(u64, u64, u64)> = vec![(0, 0, 0); n];
        for r in &self.streams {
            let (a, rx, to) = self.stream_now(r);
            let p = &mut per[r.transfer as usize];
            p.0 += a;
            p.1 += rx;
            p.2 += to;
        }
        let t = &self.transfers;
        let fct = |x: &TransferRec| x.end.map(|e| e.since(x.start).as_nanos());
        Table::default()
            .with(col::WORKLOAD, Column::Str(t.iter().map(|x| self.workloads[x.workload as usize].name.clone()).collect()))
            .with(col::TRANSFER, Column::U64((0..n as u64).collect()))
            .with(col::SRC, Column::Str(t.iter().map(|x| node(x.src)).collect()))
            .with(col::DST, Column::Str(t.iter().map(|x| node(x.dst)).collect()))
            .with(col::SIZE_BYTES, Column::U64(t.iter().map(|x| x.size).collect()))
            .with(col::STREAMS, Column::U64(t.iter().map(|x| x.streams as u64).collect()))
            .with(col::START_NS, Column::U64(t.iter().map(|x| x.start.as_nanos()).collect()))
            .with(col::END_NS, Column::OptU64(t.iter().map(|x| x.end.map(|e| e.as_nanos())).collect()))
            .with(col::RECEIVER_END_NS, Column::OptU64(t.iter().map(|x| x.receiver_end.map(|e| e.as_nanos())).collect()))
            .with(col::FCT_NS, Column::OptU64(t.iter().map(fct).collect()))
            .with(col::IDEAL_FCT_NS, Column::U64(t.iter().map(|x| x.ideal.as_nanos()).collect()))
            .with(col::MEAN_RATE_BPS, Column::OptU64(t.iter().map(|x| fct(x).map(|f| rate(x.size, f))).collect()))
            .with(col::BYTES_ACKED, Column::U64(per.iter().map(|p| p.0).collect()))
            .with(col::RETRANSMITS, Column::U64(per.iter().map(|p| p.1).collect()))
            .with(col::TIMEOUTS, Column::U64(per.iter().map(|p| p.2).collect()))
            .with(col::FAILED, Column::U64(t.iter().map(|x| x.failed as u64).collect()))
    }

    fn stream_table(&self) -> Table {
        let s = &self.streams;
        let now: Vec<(u64, u64, u64)> = s.iter().map(|r| self.stream_now(r)).collect();
        let fct = |r: &StreamRec| r.end.map(|e| e.since(r.start).as_nanos());
        let wl = |r: &StreamRec| self.workloads[self.transfers[r.transfer as usize].workload as usize].name.clone();
        Table::default()
            .with(col::WORKLOAD, Column::Str(s.iter().map(wl).collect()))
            .with(col::TRANSFER, Column::U64(s.iter().map(|r| r.transfer as u64).collect()))
            .with(col::STREAM, Column::U64(s.iter().map(|r| r.stream as u64).collect()))
            .with(col::SRC_PORT, Column::U64(s.iter().map(|r| r.src_port as u64).collect()))
            .with(col::SIZE_BYTES, Column::U64(s.iter().map(|r| r.size).collect()))
            .with(col::START_NS, Column::U64(s.iter().map(|r| r.start.as_nanos()).collect()))
            .with(col::END_NS, Column::OptU64(s.iter().map(|r| r.end.map(|e| e.as_nanos())).collect()))
            .with(col::FCT_NS, Column::OptU64(s.iter().map(fct).collect()))
            .with(col::MEAN_RATE_BPS, Column::OptU64(s.iter().map(|r| fct(r).map(|f| rate(r.size, f))).collect()))
            .with(col::BYTES_ACKED, Column::U64(now.iter().map(|p| p.0).collect()))
            .with(col::RETRANSMITS, Column::U64(now.iter().map(|p| p.1).collect()))
            .with(col::RETRANSMITTED_BYTES, Column::U64(s.iter().map(|r| self.stream_resent(r).0).collect()))
            .with(col::SPURIOUS_RETRANSMITS, Column::U64(s.iter().map(|r| self.stream_resent(r).1).collect()))
            .with(col::TIMEOUTS, Column::U64(now.iter().map(|p| p.2).collect()))
            .with(col::FAILED, Column::U64(s.iter().map(|r| r.failed as u64).collect()))
    }
}

fn rate(bytes: u64, ns: u64) -> u64 {
    (bytes as u128 * 8_000_000_000 / ns.max(1) as u128) as u64
}

pub(crate) use crate::summary::queue_name;
