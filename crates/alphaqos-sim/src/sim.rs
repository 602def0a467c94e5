//! The simulation: the network's moving parts (`Net`), the flows, the event
//! loop, metric sampling, and the results tables.
//!
//! An interface serializes one frame at a time: `start_tx` takes the next
//! packet from the queue discipline, the frame occupies the transmitter for
//! (size + overhead) * 8 / rate, then propagates for the link's delay in the
//! interface's pipe. Only the pipe's head has an event in the heap, and a
//! `TxDone` event exists only while packets wait, so the heap stays small.

use crate::apps::{bulk::BulkTcp, cbr::Cbr, ping::Ping, poisson::PoissonSource, App};
use crate::config::{Config, FlowConfig};
use crate::event::{Event, EventQueue, FlowTimer};
use crate::metrics::{col, Column, DelayStats, Table};
use crate::packet::{Color, Packet, Payload, PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP_HEADER_BYTES, UDP_HEADER_BYTES};
use crate::qos::classify::Filter;
use crate::qos::{self, Dequeued, DropReason, QueueCtx};
use crate::rng::Rng;
use crate::tcp::Wire;
use crate::time::{Duration, SimTime};
use crate::topology::{compute_routes, parse_ipv4, Iface, Node, NO_ROUTE};
use crate::units::DataRate;
use std::collections::{BTreeMap, VecDeque};

/// Bytes of one flow in its host's interface queue above which a TCP sender
/// holds back (Linux's TCP Small Queues; tcp_limit_output_bytes is 256 KiB
/// since 4.x): a connection's window waits in the socket, not in the qdisc.
/// The sender is woken when its share has drained to half the limit.
pub const TSQ_BYTES: u64 = 256 * 1024;

/// Per-flow counters kept by the network (data direction only).
#[derive(Clone, Debug, Default)]
pub struct FlowStats {
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub rx_pkts: u64,
    pub rx_bytes: u64,
    /// Data-direction packets dropped anywhere on the path.
    pub drop_pkts: u64,
    /// Reverse-direction packets (ACKs, echo replies) dropped.
    pub drop_rev_pkts: u64,
    /// Bytes of this flow waiting in its source host's interface queue.
    pub host_queued: u64,
    /// The flow's sender waits for `host_queued` to drain (TSQ).
    pub tsq_blocked: bool,
    pub delay: DelayStats,
}

impl FlowStats {
    fn count_drop(&mut self, pkt: &Packet) {
        if pkt.is_forward() {
            self.drop_pkts += 1;
        } else {
            self.drop_rev_pkts += 1;
        }
    }
}

pub struct Net {
    pub now: SimTime,
    pub events: EventQueue,
    pub nodes: Vec<Node>,
    pub ifaces: Vec<Iface>,
    next_hop: Vec<u32>,
    pub flow_stats: Vec<FlowStats>,
    /// Packets a queue dropped from inside during the current call
    /// (`QueueCtx::dropped`), handled right after it.
    pub dropped: Vec<Packet>,
    /// Each router's firewall filter (None: forward unchanged).
    pub filters: Vec<Option<Filter>>,
}

impl Net {
    pub fn route(&self, from: u32, to: u32) -> u32 {
        self.next_hop[from as usize * self.nodes.len() + to as usize]
    }

    /// Hand `pkt` to the network at `node`.
    pub fn send_from(&mut self, node: u32, pkt: Packet) {
        match self.route(node, pkt.dst) {
            NO_ROUTE => self.flow_stats[pkt.flow as usize].count_drop(&pkt),
            i => self.enqueue(i, pkt),
        }
    }

    fn enqueue(&mut self, i: u32, pkt: Packet) {
        let now = self.now;
        let ifc = &mut self.ifaces[i as usize];
        let mut ctx = QueueCtx::with_drops(now, ifc.rate, &mut ifc.rng, &mut self.dropped);
        let (flow, size, at_source) = (pkt.flow as usize, pkt.size as u64, ifc.node == pkt.src);
        let refused = match ifc.qdisc.enqueue(pkt, &mut ctx) {
            Err((p, _)) => {
                self.flow_stats[flow].count_drop(&p);
                true
            }
            Ok(()) => {
                if at_source {
                    self.flow_stats[flow].host_queued += size;
                }
                false
            }
        };
        if !self.dropped.is_empty() {
            let node = ifc.node;
            self.release_dropped(node);
        }
        if refused {
            return;
        }
        let ifc = &mut self.ifaces[i as usize];
        if ifc.tx_event == SimTime::MAX {
            if now >= ifc.busy_until {
                self.start_tx(i);
            } else {
                ifc.tx_event = ifc.busy_until;
                self.events.schedule(ifc.busy_until, Event::TxDone(i));
            }
        } else if now >= ifc.busy_until {
            // The link is idle and the discipline asked to be woken later
            // (a shaped class): the new packet may be sendable now.
            ifc.tx_event = SimTime::MAX;
            self.start_tx(i);
        }
    }

    /// Packets a discipline at `node` dropped after admitting them (CoDel at
    /// dequeue, FQ-CoDel's overflow): lost, and no longer queued at their
    /// source, whose sender may wait for them (TSQ).
    #[cold]
    fn release_dropped(&mut self, node: u32) {
        let mut dropped = std::mem::take(&mut self.dropped);
        for p in dropped.drain(..) {
            let st = &mut self.flow_stats[p.flow as usize];
            st.count_drop(&p);
            if node == p.src {
                st.host_queued -= p.size as u64;
                if st.tsq_blocked && st.host_queued <= TSQ_BYTES / 2 {
                    st.tsq_blocked = false;
                    self.events.schedule(self.now, Event::Flow(p.flow, FlowTimer::Wake));
                }
            }
        }
        self.dropped = dropped;
    }

    /// The transmitter of interface `i` is free: put the next frame on the wire.
    fn start_tx(&mut self, i: u32) {
        let now = self.now;
        let ifc = &mut self.ifaces[i as usize];
        let mut ctx = QueueCtx::with_drops(now, ifc.rate, &mut ifc.rng, &mut self.dropped);
        match ifc.qdisc.dequeue(&mut ctx) {
            Dequeued::Packet(p) => {
                let wire = ifc.wire_time(&p);
                let end = now + wire;
                ifc.busy_until = end;
                ifc.tx_pkts += 1;
                ifc.tx_bytes += p.size as u64;
                let mut arrive = end + ifc.delay;
                let imp = ifc.impair;
                if imp.loss > 0.0 && ifc.rng.uniform() < imp.loss {
                    ifc.lost_pkts += 1;
                    self.flow_stats[p.flow as usize].count_drop(&p);
                } else {
                    if imp.reorder_by > 0 && imp.reorder_fraction > 0.0 && ifc.rng.uniform() < imp.reorder_fraction {
                        // `reorder_by` back-to-back frames of this size pass it (+1 ns breaks the tie).
                        arrive += wire.saturating_mul(imp.reorder_by as u64) + Duration(1);
                    }
                    if ifc.push_pipe(arrive, p) {
                        self.events.schedule(arrive, Event::Deliver(i));
                    }
                }
                let backlog = ifc.qdisc.backlog();
                if backlog.pkts > 0 {
                    ifc.tx_event = end;
                    self.events.schedule(end, Event::TxDone(i));
                }
                if ifc.node == p.src {
                    let st = &mut self.flow_stats[p.flow as usize];
                    st.host_queued -= p.size as u64;
                    // Hysteresis: wake at half the limit, not once per packet.
                    if st.tsq_blocked && st.host_queued <= TSQ_BYTES / 2 {
                        st.tsq_blocked = false;
                        self.events.schedule(now, Event::Flow(p.flow, FlowTimer::Wake));
                    }
                }
            }
            Dequeued::Empty => {}
            Dequeued::NotBefore(t) => {
                ifc.tx_event = t;
                self.events.schedule(t, Event::TxDone(i));
            }
        }
        // Packets dropped at dequeue (CoDel).
        if !self.dropped.is_empty() {
            let node = self.ifaces[i as usize].node;
            self.release_dropped(node);
        }
    }

    /// The head of interface `i`'s pipe arrives at the peer. Returns the
    /// packet if it reached its destination; forwards it otherwise.
    fn deliver(&mut self, i: u32) -> Option<Packet> {
        let ifc = &mut self.ifaces[i as usize];
        if ifc.next_deliver != self.now {
            return None; // superseded by an earlier arrival
        }
        let (_, pkt) = ifc.pipe.pop_front().expect("Deliver event with an empty pipe");
        ifc.next_deliver = match ifc.pipe.front() {
            Some(&(t, _)) => {
                self.events.schedule(t, Event::Deliver(i));
                t
            }
            None => SimTime::MAX,
        };
        let node = ifc.peer;
        if node == pkt.dst {
            return Some(pkt);
        }
        if self.nodes[node as usize].router {
            let pkt = match &mut self.filters[node as usize] {
                Some(f) => match f.apply(self.now, pkt) {
                    Ok(p) => p,
                    Err(p) => {
                        self.flow_stats[p.flow as usize].count_drop(&p);
                        return None;
                    }
                },
                None => pkt,
            };
            self.send_from(node, pkt);
        } else {
            self.flow_stats[pkt.flow as usize].count_drop(&pkt);
        }
        None
    }
}

/// The two ends of a flow.
#[derive(Clone, Copy, Debug)]
pub struct Ends {
    pub src: u32,
    pub dst: u32,
    pub src_ip: u32,
    pub dst_ip: u32,
    pub proto: u8,
    pub dscp: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

/// What an application sees of the network: its flow's two directions.
pub struct FlowIo<'a> {
    net: &'a mut Net,
    flow: u32,
    ends: Ends,
}

impl<'a> FlowIo<'a> {
    /// Sending from the flow's source towards its destination.
    pub fn fwd(&mut self) -> DirWire<'_> {
        let e = self.ends;
        DirWire { net: self.net, flow: self.flow, from: e.src, to: e.dst, from_ip: e.src_ip, to_ip: e.dst_ip, ports: (e.src_port, e.dst_port), proto: e.proto, dscp: e.dscp }
    }
    /// Sending from the destination back to the source.
    pub fn rev(&mut self) -> DirWire<'_> {
        // Replies (ACKs, echo replies) carry the flow's marking back.
        let e = self.ends;
        DirWire { net: self.net, flow: self.flow, from: e.dst, to: e.src, from_ip: e.dst_ip, to_ip: e.src_ip, ports: (e.dst_port, e.src_port), proto: e.proto, dscp: e.dscp }
    }
}

pub struct DirWire<'a> {
    net: &'a mut Net,
    flow: u32,
    from: u32,
    to: u32,
    from_ip: u32,
    to_ip: u32,
    ports: (u16, u16),
    proto: u8,
    dscp: u8,
}

impl Wire for DirWire<'_> {
    fn now(&self) -> SimTime {
        self.net.now
    }
    fn send(&mut self, payload: Payload, size: u32) {
        let pkt = Packet {
            flow: self.flow,
            src: self.from,
            dst: self.to,
            src_ip: self.from_ip,
            dst_ip: self.to_ip,
            size,
            proto: self.proto,
            dscp: self.dscp,
            src_port: self.ports.0,
            dst_port: self.ports.1,
            fclass: 0,
            color: Color::Green,
            created: self.net.now,
            enqueued: self.net.now,
            payload,
        };
        if pkt.is_forward() {
            let st = &mut self.net.flow_stats[self.flow as usize];
            st.tx_pkts += 1;
            st.tx_bytes += size as u64;
        }
        self.net.send_from(self.from, pkt);
    }
    fn schedule(&mut self, at: SimTime, timer: FlowTimer) {
        self.net.events.schedule(at, Event::Flow(self.flow, timer));
    }
    fn tx_room(&mut self) -> bool {
        let st = &mut self.net.flow_stats[self.flow as usize];
        if st.host_queued < TSQ_BYTES {
            return true;
        }
        st.tsq_blocked = true;
        false
    }
}

struct Flow {
    name: String,
    ends: Ends,
    app: App,
}

/// Series rows, column by column.
#[derive(Default)]
struct Recorder {
    tcp: BTreeMap<&'static str, Vec<u64>>,
    tcp_flow: Vec<String>,
    udp: BTreeMap<&'static str, Vec<u64>>,
    udp_flow: Vec<String>,
    queue: BTreeMap<&'static str, Vec<u64>>,
    queue_name: Vec<String>,
    last_sample: SimTime,
    /// Per flow: the cumulative count the last rate was computed from.
    prev_bytes: Vec<u64>,
}

impl Recorder {
    fn push(map: &mut BTreeMap<&'static str, Vec<u64>>, name: &'static str, v: u64) {
        map.entry(name).or_default().push(v);
    }
}

pub struct Simulation {
    pub net: Net,
    flows: Vec<Flow>,
    duration: SimTime,
    interval: Duration,
    /// (start, stop) of every flow, ns.
    windows: Vec<(u64, u64)>,
    events_done: u64,
    rec: Recorder,
}

fn at(i: usize, field: &str) -> impl Fn(String) -> String + '_ {
    move |e| format!("{field}[{i}]: {e}")
}

impl Simulation {
    pub fn from_json(text: &str) -> Result<Simulation, String> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| format!("config: {e}"))?;
        Simulation::new(&cfg)
    }

    pub fn new(cfg: &Config) -> Result<Simulation, String> {
        if cfg.duration_ns == 0 {
            return Err("duration_ns: must be positive".into());
        }
        if cfg.metric_interval_ns == 0 {
            return Err("metric_interval_ns: must be positive".into());
        }
        let mut nodes: Vec<Node> = Vec::new();
        let mut filters = Vec::new();
        let mut index = BTreeMap::new();
        for (i, n) in cfg.nodes.iter().enumerate() {
            if index.insert(n.name.clone(), i as u32).is_some() {
                return Err(format!("nodes[{i}].name: duplicate node '{}'", n.name));
            }
            let addr = match &n.address {
                Some(a) => parse_ipv4(a).ok_or_else(|| format!("nodes[{i}].address: '{a}' is not an IPv4 address"))?,
                None if n.router => 0x0AFF_0000 | (i as u32 + 1), // 10.255.0.0/16
                None => return Err(format!("nodes[{i}].address: host '{}' needs an IPv4 address", n.name)),
            };
            if !n.filter.is_empty() && !n.router {
                return Err(format!("nodes[{i}].filter: only routers filter packets ('{}' is a host)", n.name));
            }
            filters.push(if n.filter.is_empty() {
                None
            } else {
                Some(Filter::new(&n.filter).map_err(|e| format!("nodes[{i}].{e}"))?)
            });
            nodes.push(Node { name: n.name.clone(), router: n.router, addr, ifaces: Vec::new() });
        }
        let node_id = |name: &str, path: String| -> Result<u32, String> {
            index.get(name).copied().ok_or_else(|| format!("{path}: unknown node '{name}'"))
        };
        let mut ifaces: Vec<Iface> = Vec::new();
        for (i, l) in cfg.links.iter().enumerate() {
            let a = node_id(&l.a, format!("links[{i}].a"))?;
            let b = node_id(&l.b, format!("links[{i}].b"))?;
            if a == b {
                return Err(format!("links[{i}]: a link needs two different nodes"));
            }
            if l.rate_bps == 0 {
                return Err(format!("links[{i}].rate_bps: must be positive"));
            }
            if l.mtu_bytes < 68 {
                return Err(format!("links[{i}].mtu_bytes: {} is below the IPv4 minimum of 68", l.mtu_bytes));
            }
            for (from, to, q, key, imp) in [(a, b, &l.queue_ab, "queue_ab", l.impair_ab), (b, a, &l.queue_ba, "queue_ba", l.impair_ba)] {
                imp.validate().map_err(|e| format!("links[{i}].impair_{}: {e}", &key[6..]))?;
                let name = format!("{}->{}", nodes[from as usize].name, nodes[to as usize].name);
                let qdisc = qos::build(q, l.mtu_bytes).map_err(|e| format!("links[{i}].{key}: {e}"))?;
                let id = ifaces.len() as u32;
                nodes[from as usize].ifaces.push(id);
                ifaces.push(Iface {
                    rng: Rng::stream(cfg.seed, &format!("queue:{name}")),
                    name,
                    node: from,
                    peer: to,
                    rate: DataRate(l.rate_bps),
                    delay: Duration(l.delay_ns),
                    mtu: l.mtu_bytes,
                    overhead: l.overhead_bytes,
                    qdisc,
                    busy_until: SimTime::ZERO,
                    tx_event: SimTime::MAX,
                    pipe: VecDeque::new(),
                    next_deliver: SimTime::MAX,
                    impair: imp,
                    lost_pkts: 0,
                    tx_pkts: 0,
                    tx_bytes: 0,
                });
            }
        }
        let next_hop = compute_routes(&nodes, &ifaces);
        let mut net = Net { now: SimTime::ZERO, events: EventQueue::new(), nodes, ifaces, next_hop, flow_stats: Vec::new(), dropped: Vec::new(), filters };
        let duration = SimTime(cfg.duration_ns);
        let mut flows = Vec::new();
        let mut windows = Vec::new();
        let mut names = BTreeMap::new();
        for (i, f) in cfg.flows.iter().enumerate() {
            if names.insert(f.name.clone(), i).is_some() {
                return Err(format!("flows[{i}].name: duplicate flow '{}'", f.name));
            }
            let flow = build_flow(cfg, i, f, &net).map_err(at(i, "flows"))?;
            let stop = f.stop_ns.unwrap_or(cfg.duration_ns);
            if f.start_ns >= stop || stop > cfg.duration_ns {
                return Err(format!("flows[{i}]: need start < stop <= duration (start {}, stop {}, duration {})", SimTime(f.start_ns), SimTime(stop), duration));
            }
            net.events.schedule(SimTime(f.start_ns), Event::Flow(i as u32, FlowTimer::Start));
            // Scheduled now, the stop precedes any send at the same instant:
            // a flow is active on [start, stop).
            net.events.schedule(SimTime(stop), Event::Flow(i as u32, FlowTimer::Stop));
            net.flow_stats.push(FlowStats::default());
            flows.push(flow);
            windows.push((f.start_ns, stop));
        }
        let interval = Duration(cfg.metric_interval_ns);
        net.events.schedule(SimTime::ZERO + interval.min(Duration(cfg.duration_ns)), Event::Sample);
        let rec = Recorder { prev_bytes: vec![0; flows.len()], ..Default::default() };
        Ok(Simulation { net, flows, duration, interval, windows, events_done: 0, rec })
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
        let until = until.min(self.duration);
        while let Some(t) = self.net.events.peek_time() {
            if t > until {
                break;
            }
            let (t, ev) = self.net.events.pop().expect("peeked");
            self.net.now = t;
            self.events_done += 1;
            self.dispatch(ev);
        }
        self.net.now = self.net.now.max(until);
    }

    pub fn run(&mut self) {
        self.advance(self.duration);
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TxDone(i) => {
                let ifc = &mut self.net.ifaces[i as usize];
                if ifc.tx_event == self.net.now {
                    ifc.tx_event = SimTime::MAX;
                    self.net.start_tx(i);
                } // else superseded
            }
            Event::Deliver(i) => {
                if let Some(pkt) = self.net.deliver(i) {
                    self.arrive(pkt);
                }
            }
            Event::Flow(f, t) => {
                let flow = &mut self.flows[f as usize];
                let mut io = FlowIo { net: &mut self.net, flow: f, ends: flow.ends };
                flow.app.on_timer(t, &mut io);
            }
            Event::Sample => self.sample(),
        }
    }

    fn arrive(&mut self, pkt: Packet) {
        let now = self.net.now;
        let f = pkt.flow as usize;
        if pkt.is_forward() {
            let st = &mut self.net.flow_stats[f];
            st.rx_pkts += 1;
            st.rx_bytes += pkt.size as u64;
            st.delay.record(now.since(pkt.created).as_nanos());
        }
        let flow = &mut self.flows[f];
        let mut io = FlowIo { net: &mut self.net, flow: pkt.flow, ends: flow.ends };
        flow.app.on_packet(&pkt, &mut io);
    }

    fn sample(&mut self) {
        let now = self.net.now;
        let span = now.since(self.rec.last_sample).as_nanos().max(1) as u128;
        let rate = |bytes: u64| (bytes as u128 * 8 * 1_000_000_000 / span) as u64;
        for (i, flow) in self.flows.iter().enumerate() {
            let st = &self.net.flow_stats[i];
            match &flow.app {
                App::Tcp(t) => {
                    let (s, r) = (&t.sender, &t.receiver);
                    let delivered = r.delivered();
                    let m = &mut self.rec.tcp;
                    Recorder::push(m, col::TIME_NS, now.as_nanos());
                    Recorder::push(m, col::BYTES_ACKED, s.bytes_acked());
                    Recorder::push(m, col::GOODPUT_BPS, rate(delivered - self.rec.prev_bytes[i]));
                    Recorder::push(m, col::CWND_BYTES, s.cwnd());
                    // u64::MAX stands for "none" (no RTT sample yet, ssthresh
                    // still infinite) and leaves the engine as null.
                    Recorder::push(m, col::SSTHRESH_BYTES, s.ssthresh());
                    Recorder::push(m, col::SRTT_NS, s.srtt().map_or(u64::MAX, |d| d.as_nanos()));
                    Recorder::push(m, col::RTO_NS, s.rto().as_nanos());
                    Recorder::push(m, col::RETRANSMITS, s.stats.retransmits);
                    Recorder::push(m, col::RETRANSMITTED_BYTES, s.stats.retransmitted_bytes);
                    Recorder::push(m, col::SPURIOUS_RETRANSMITS, r.stats.spurious_retransmits);
                    Recorder::push(m, col::FAST_RETRANSMITS, s.stats.fast_retransmits);
                    Recorder::push(m, col::TIMEOUTS, s.stats.timeouts);
                    Recorder::push(m, col::OOO_ARRIVALS, r.stats.ooo_arrivals);
                    Recorder::push(m, col::OOO_EXTENT_MAX, r.stats.ooo_extent_max);
                    Recorder::push(m, col::OOO_EXTENT_3PLUS, r.stats.ooo_extent_3plus);
                    Recorder::push(m, col::DUP_ACKS_SENT, r.stats.dup_acks_sent);
                    self.rec.tcp_flow.push(flow.name.clone());
                    self.rec.prev_bytes[i] = delivered;
                }
                App::Udp(_) | App::Poisson(_) => {
                    let m = &mut self.rec.udp;
                    Recorder::push(m, col::TIME_NS, now.as_nanos());
                    Recorder::push(m, col::TX_PKTS, st.tx_pkts);
                    Recorder::push(m, col::RX_PKTS, st.rx_pkts);
                    Recorder::push(m, col::RX_BYTES, st.rx_bytes);
                    Recorder::push(m, col::RX_RATE_BPS, rate(st.rx_bytes - self.rec.prev_bytes[i]));
                    Recorder::push(m, col::DROP_PKTS, st.drop_pkts);
                    self.rec.udp_flow.push(flow.name.clone());
                    self.rec.prev_bytes[i] = st.rx_bytes;
                }
                App::Ping(_) => {}
            }
        }
        for ifc in &self.net.ifaces {
            let m = &mut self.rec.queue;
            let names = &mut self.rec.queue_name;
            ifc.qdisc.for_each_queue(&mut |class, c, b| {
                names.push(queue_name(&ifc.name, class));
                Recorder::push(m, col::TIME_NS, now.as_nanos());
                Recorder::push(m, col::LEN_PKTS, b.pkts);
                Recorder::push(m, col::LEN_BYTES, b.bytes);
                Recorder::push(m, col::TX_BYTES, c.deq_bytes);
            });
        }
        self.rec.last_sample = now;
        if now < self.duration {
            let next = (now + self.interval).min(self.duration);
            self.net.events.schedule(next, Event::Sample);
        }
    }

    /// The results tables. Meaningful once the run reached its duration.
    pub fn results(&self) -> BTreeMap<String, Table> {
        let mut out = BTreeMap::new();
        let series = |flow_col: &str, names: &[String], cols: &BTreeMap<&'static str, Vec<u64>>, order: &[&str]| {
            let mut t = Table::default().with(flow_col, Column::Str(names.to_vec()));
            for c in order {
                let v = cols.get(c).cloned().unwrap_or_default();
                let column = if NULLABLE.contains(c) {
                    Column::OptU64(v.into_iter().map(|x| (x != u64::MAX).then_some(x)).collect())
                } else {
                    Column::U64(v)
                };
                t = t.with(c, column);
            }
            t
        };
        out.insert(
            "tcp".into(),
            series(col::FLOW, &self.rec.tcp_flow, &self.rec.tcp, &[
                col::TIME_NS, col::BYTES_ACKED, col::GOODPUT_BPS, col::CWND_BYTES, col::SSTHRESH_BYTES, col::SRTT_NS,
                col::RTO_NS, col::RETRANSMITS, col::RETRANSMITTED_BYTES, col::SPURIOUS_RETRANSMITS, col::FAST_RETRANSMITS, col::TIMEOUTS, col::OOO_ARRIVALS, col::OOO_EXTENT_MAX, col::OOO_EXTENT_3PLUS, col::DUP_ACKS_SENT,
            ]),
        );
        out.insert(
            "udp".into(),
            series(col::FLOW, &self.rec.udp_flow, &self.rec.udp, &[
                col::TIME_NS, col::TX_PKTS, col::RX_PKTS, col::RX_BYTES, col::RX_RATE_BPS, col::DROP_PKTS,
            ]),
        );
        out.insert(
            "queue".into(),
            series(col::QUEUE, &self.rec.queue_name, &self.rec.queue, &[col::TIME_NS, col::LEN_PKTS, col::LEN_BYTES, col::TX_BYTES]),
        );
        out.insert("ping".into(), self.ping_table());
        out.insert("filter".into(), self.filter_table());
        out.insert("queue_summary".into(), self.queue_summary());
        out.insert("flow_summary".into(), self.flow_summary());
        out.insert(
            "run".into(),
            Table::default()
                .with(col::EVENTS, Column::U64(vec![self.events_done]))
                .with(col::SIM_TIME_NS, Column::U64(vec![self.net.now.as_nanos()])),
        );
        out
    }

    fn filter_table(&self) -> Table {
        let (mut node, mut term) = (vec![], vec![]);
        let mut u: [Vec<u64>; 7] = Default::default();
        for (n, f) in self.net.filters.iter().enumerate() {
            for t in f.iter().flat_map(|f| &f.terms) {
                node.push(self.net.nodes[n].name.clone());
                term.push(t.name.clone());
                let c = &t.counters;
                let [green, yellow, red] = t.color_pkts();
                for (col, v) in u.iter_mut().zip([c.matched_pkts, c.matched_bytes, c.out_of_profile_pkts, c.discarded_pkts, green, yellow, red]) {
                    col.push(v);
                }
            }
        }
        let [matched_pkts, matched_bytes, oop, discarded, green, yellow, red] = u;
        Table::default()
            .with(col::NODE, Column::Str(node))
            .with(col::TERM, Column::Str(term))
            .with(col::MATCHED_PKTS, Column::U64(matched_pkts))
            .with(col::MATCHED_BYTES, Column::U64(matched_bytes))
            .with(col::OUT_OF_PROFILE_PKTS, Column::U64(oop))
            .with(col::DISCARDED_PKTS, Column::U64(discarded))
            .with(col::GREEN_PKTS, Column::U64(green))
            .with(col::YELLOW_PKTS, Column::U64(yellow))
            .with(col::RED_PKTS, Column::U64(red))
    }

    fn ping_table(&self) -> Table {
        let (mut flow, mut seq, mut time, mut rtt) = (vec![], vec![], vec![], vec![]);
        for f in &self.flows {
            if let App::Ping(p) = &f.app {
                for (k, (sent, r)) in p.probes.iter().enumerate() {
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
        let mut names = vec![];
        let mut links = vec![];
        let mut u: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        let reason_cols: Vec<String> = DropReason::ALL.iter().map(|r| col::drop_reason(r.as_str())).collect();
        let (mut sojourn_mean, mut sojourn_p99) = (vec![], vec![]);
        for ifc in &self.net.ifaces {
            ifc.qdisc.for_each_queue(&mut |class, c, b| {
                names.push(queue_name(&ifc.name, class));
                links.push(ifc.name.clone());
                let mut put = |k: &str, v: u64| u.entry(k.to_string()).or_default().push(v);
                put(col::ENQ_PKTS, c.enq_pkts);
                put(col::ENQ_BYTES, c.enq_bytes);
                put(col::DEQ_PKTS, c.deq_pkts);
                put(col::DEQ_BYTES, c.deq_bytes);
                put(col::DROP_PKTS, c.drop_pkts);
                put(col::DROP_BYTES, c.drop_bytes);
                for (k, r) in reason_cols.iter().zip(DropReason::ALL) {
                    put(k, c.drop_reason_pkts[r as usize]);
                }
                put(col::BACKLOG_PKTS, b.pkts);
                put(col::BACKLOG_BYTES, b.bytes);
                put(col::RATE_BPS, ifc.rate.as_bps());
                put(col::LINK_LOSS_PKTS, ifc.lost_pkts);
                put(col::DROP_QUEUED_PKTS, c.drop_queued_pkts);
                put(col::DROP_QUEUED_BYTES, c.drop_queued_bytes);
                sojourn_mean.push(c.sojourn.mean().map(|m| m.round() as u64));
                sojourn_p99.push(c.sojourn.quantile(0.99));
            });
        }
        let mut t = Table::default().with(col::QUEUE, Column::Str(names)).with(col::LINK, Column::Str(links));
        let order = [col::ENQ_PKTS, col::ENQ_BYTES, col::DEQ_PKTS, col::DEQ_BYTES, col::DROP_PKTS, col::DROP_BYTES]
            .into_iter()
            .map(String::from)
            .chain(reason_cols.iter().cloned())
            .chain([col::BACKLOG_PKTS, col::BACKLOG_BYTES, col::RATE_BPS, col::LINK_LOSS_PKTS, col::DROP_QUEUED_PKTS, col::DROP_QUEUED_BYTES].map(String::from));
        for k in order {
            t = t.with(&k, Column::U64(u.remove(&k).unwrap_or_default()));
        }
        t.with(col::SOJOURN_MEAN_NS, Column::OptU64(sojourn_mean)).with(col::SOJOURN_P99_NS, Column::OptU64(sojourn_p99))
    }

    fn flow_summary(&self) -> Table {
        let n = self.flows.len();
        let (mut name, mut kind, mut src, mut dst) = (vec![], vec![], vec![], vec![]);
        let mut u: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        let mut o: BTreeMap<&str, Vec<Option<u64>>> = BTreeMap::new();
        for (i, f) in self.flows.iter().enumerate() {
            let st = &self.net.flow_stats[i];
            name.push(f.name.clone());
            kind.push(f.app.kind().to_string());
            src.push(self.net.nodes[f.ends.src as usize].name.clone());
            dst.push(self.net.nodes[f.ends.dst as usize].name.clone());
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
            let d = &st.delay;
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
            let active = self.flow_window(i).max(1) as u128;
            let bytes = match &f.app {
                App::Tcp(t) => t.receiver.delivered(),
                _ => st.rx_bytes,
            };
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

    fn flow_window(&self, i: usize) -> u64 {
        let (start, stop) = self.windows[i];
        stop.min(self.net.now.as_nanos()).saturating_sub(start)
    }
}

/// Series columns where u64::MAX means null.
const NULLABLE: [&str; 2] = [col::SRTT_NS, col::SSTHRESH_BYTES];

fn queue_name(iface: &str, class: &str) -> String {
    if class.is_empty() {
        iface.to_string()
    } else {
        format!("{iface}/{class}")
    }
}

fn build_flow(cfg: &Config, index: usize, f: &FlowConfig, net: &Net) -> Result<Flow, String> {
    let find = |name: &str, key: &str| -> Result<u32, String> {
        let id = net.nodes.iter().position(|n| n.name == name).ok_or_else(|| format!("{key}: unknown node '{name}'"))?;
        if net.nodes[id].router {
            return Err(format!("{key}: '{name}' is a router; flows run between hosts"));
        }
        Ok(id as u32)
    };
    let src = find(&f.src, "src")?;
    let dst = find(&f.dst, "dst")?;
    if src == dst {
        return Err("a flow needs two different hosts".into());
    }
    for (a, b) in [(src, dst), (dst, src)] {
        if net.route(a, b) == NO_ROUTE {
            return Err(format!("no path from {} to {}", net.nodes[a as usize].name, net.nodes[b as usize].name));
        }
    }
    let kinds = [f.tcp.is_some(), f.udp.is_some(), f.poisson.is_some(), f.ping.is_some()];
    if kinds.iter().filter(|&&k| k).count() != 1 {
        return Err("exactly one of tcp, udp, poisson, ping is needed".into());
    }
    let rng = Rng::stream(cfg.seed, &format!("flow:{}", f.name));
    let (app, proto, max_size) = if let Some(t) = &f.tcp {
        (App::Tcp(Box::new(BulkTcp::new(t).map_err(|e| format!("tcp: {e}"))?)), PROTO_TCP, t.mss_bytes + TCP_HEADER_BYTES)
    } else if let Some(u) = &f.udp {
        if u.size_bytes < UDP_HEADER_BYTES {
            return Err(format!("udp.size_bytes: {} is smaller than the IP+UDP headers ({UDP_HEADER_BYTES} B)", u.size_bytes));
        }
        if u.schedule.is_empty() {
            return Err("udp.schedule: needs at least one (time, rate) step".into());
        }
        if u.schedule.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err("udp.schedule: step times must be strictly ascending".into());
        }
        let sched = u.schedule.iter().map(|&(t, r)| (SimTime(t), DataRate(r))).collect();
        (App::Udp(Cbr::new(u.size_bytes, sched)), PROTO_UDP, u.size_bytes)
    } else if let Some(p) = &f.poisson {
        if p.rate_bps == 0 || p.size_bytes == 0 {
            return Err("poisson: rate_bps and size_bytes must be positive".into());
        }
        // Exponential sizes have no maximum: the MTU check uses the mean.
        (App::Poisson(PoissonSource::new(p.rate_bps, p.size_bytes, p.exp_size, rng)), PROTO_UDP, p.size_bytes)
    } else if let Some(p) = &f.ping {
        if p.interval_ns == 0 {
            return Err("ping.interval_ns: must be positive".into());
        }
        (App::Ping(Ping::new(Duration(p.interval_ns), p.size_bytes)), PROTO_ICMP, p.size_bytes)
    } else {
        unreachable!("checked above")
    };
    // Packets must fit every link on both paths.
    for (a, b) in [(src, dst), (dst, src)] {
        let mut node = a;
        while node != b {
            let i = net.route(node, b) as usize;
            let ifc = &net.ifaces[i];
            if max_size > ifc.mtu {
                return Err(format!("{max_size}-byte packets exceed the {}-byte MTU of {}", ifc.mtu, ifc.name));
            }
            node = ifc.peer;
        }
    }
    if f.dscp > 63 {
        return Err(format!("dscp: {} is not a DiffServ code point (0..63)", f.dscp));
    }
    // ICMP has no ports; a flow without ports gets an ephemeral source port
    // from Linux's default range (32768..60999) by its index, and the
    // destination port 5001 (nuttcp's and iperf 2's).
    let (src_port, dst_port) = if proto == PROTO_ICMP {
        (0, 0)
    } else {
        (f.src_port.unwrap_or(32768 + (index % 28232) as u16), f.dst_port.unwrap_or(5001))
    };
    let ends = Ends { src, dst, src_ip: net.nodes[src as usize].addr, dst_ip: net.nodes[dst as usize].addr, proto, dscp: f.dscp, src_port, dst_port };
    Ok(Flow { name: f.name.clone(), ends, app })
}
