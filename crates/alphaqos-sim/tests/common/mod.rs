//! Shared helpers of the integration tests: a small builder for the engine's
//! JSON configuration (docs/engine-config.md) and accessors for the results
//! tables. Every quantity is in base units: ns, bit/s, bytes.
#![allow(dead_code)]

use alphaqos_sim::{Column, Simulation, Table};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub const US: u64 = 1_000;
pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;
pub const GBPS: u64 = 1_000_000_000;
pub const MBPS: u64 = 1_000_000;
/// Ethernet framing on the wire: preamble 7 + SFD 1 + header 14 + FCS 4 + IFG 12.
pub const ETH: u64 = 38;

/// Serialization time of `bytes` at `rate_bps`, rounded up to the nanosecond
/// (the engine's rule: a transmitter cannot finish early).
pub fn tx_ns(bytes: u64, rate_bps: u64) -> u64 {
    (bytes as u128 * 8 * 1_000_000_000).div_ceil(rate_bps as u128) as u64
}

pub fn fifo(limit_pkts: Option<u64>, limit_bytes: Option<u64>) -> Value {
    json!({"fifo": {"limit_pkts": limit_pkts, "limit_bytes": limit_bytes}})
}

pub fn unlimited() -> Value {
    fifo(None, None)
}

/// RED in packets with the given hard limit (packets), gentle, w_q 0.002.
pub fn red(limit_pkts: u64, min_th: f64, max_th: f64, max_p: f64) -> Value {
    json!({"red": {"limit_pkts": limit_pkts, "min_th": min_th, "max_th": max_th, "max_p": max_p,
                   "w_q": 0.002, "gentle": true}})
}

/// A configuration under construction.
#[derive(Clone, Debug)]
pub struct Cfg {
    pub v: Value,
    hosts: u32,
}

impl Cfg {
    pub fn new(duration_ns: u64, metric_interval_ns: u64) -> Cfg {
        Cfg {
            v: json!({"name": "test", "seed": 1, "duration_ns": duration_ns,
                      "metric_interval_ns": metric_interval_ns, "nodes": [], "links": [], "flows": [], "workloads": []}),
            hosts: 0,
        }
    }
    pub fn seed(mut self, seed: u64) -> Cfg {
        self.v["seed"] = json!(seed);
        self
    }
    pub fn host(mut self, name: &str) -> Cfg {
        self.hosts += 1;
        let addr = format!("10.0.{}.{}", self.hosts / 250, self.hosts % 250 + 1);
        self.arr("nodes").push(json!({"name": name, "router": false, "address": addr}));
        self
    }
    pub fn router(mut self, name: &str) -> Cfg {
        self.arr("nodes").push(json!({"name": name, "router": true, "address": null}));
        self
    }
    /// A full-duplex link with default queues (FIFO of 1000 packets) both ways.
    pub fn link(self, a: &str, b: &str, rate_bps: u64, delay_ns: u64, overhead: u64) -> Cfg {
        self.link_q(a, b, rate_bps, delay_ns, overhead, fifo(Some(1000), None), fifo(Some(1000), None))
    }
    pub fn link_q(mut self, a: &str, b: &str, rate_bps: u64, delay_ns: u64, overhead: u64, queue_ab: Value, queue_ba: Value) -> Cfg {
        self.arr("links").push(json!({"a": a, "b": b, "rate_bps": rate_bps, "delay_ns": delay_ns,
            "mtu_bytes": 9000, "overhead_bytes": overhead, "queue_ab": queue_ab, "queue_ba": queue_ba}));
        self
    }
    /// Impair the last link added, in its a -> b direction.
    pub fn impair_last(mut self, loss: f64, reorder_fraction: f64, reorder_by: u32) -> Cfg {
        let link = self.arr("links").last_mut().expect("a link to impair");
        link["impair_ab"] = json!({"loss": loss, "reorder_fraction": reorder_fraction, "reorder_by": reorder_by});
        self
    }
    pub fn flow(mut self, f: Value) -> Cfg {
        self.arr("flows").push(f);
        self
    }
    pub fn workload(mut self, w: Value) -> Cfg {
        self.arr("workloads").push(w);
        self
    }
    fn arr(&mut self, key: &str) -> &mut Vec<Value> {
        self.v[key].as_array_mut().expect("array")
    }
    pub fn json(&self) -> String {
        self.v.to_string()
    }
    pub fn build(&self) -> Result<Simulation, String> {
        Simulation::from_json(&self.json()).map_err(|e| e.to_string())
    }
    pub fn run(&self) -> Res {
        let mut sim = self.build().expect("valid configuration");
        sim.run();
        Res(sim.results())
    }
}

/// A UDP CBR flow with one rate step from its start.
pub fn udp(name: &str, src: &str, dst: &str, start: u64, stop: Option<u64>, size: u64, rate_bps: u64) -> Value {
    json!({"name": name, "src": src, "dst": dst, "start_ns": start, "stop_ns": stop,
           "udp": {"size_bytes": size, "schedule": [[start, rate_bps]]}})
}

pub fn poisson(name: &str, src: &str, dst: &str, start: u64, stop: Option<u64>, size: u64, rate_bps: u64, exp_size: bool) -> Value {
    json!({"name": name, "src": src, "dst": dst, "start_ns": start, "stop_ns": stop,
           "poisson": {"rate_bps": rate_bps, "size_bytes": size, "exp_size": exp_size}})
}

pub fn ping(name: &str, src: &str, dst: &str, start: u64, stop: Option<u64>, interval: u64, size: u64) -> Value {
    json!({"name": name, "src": src, "dst": dst, "start_ns": start, "stop_ns": stop,
           "ping": {"interval_ns": interval, "size_bytes": size}})
}

/// A TCP flow; `tcp` holds the fields that differ from the engine defaults.
pub fn tcp(name: &str, src: &str, dst: &str, start: u64, stop: Option<u64>, tcp: Value) -> Value {
    json!({"name": name, "src": src, "dst": dst, "start_ns": start, "stop_ns": stop, "tcp": tcp})
}

/// The results of a run.
pub struct Res(pub BTreeMap<String, Table>);

pub fn opt_u64s<'a>(t: &'a Table, col: &str) -> &'a [Option<u64>] {
    match t.get(col) {
        Some(Column::OptU64(v)) => v,
        other => panic!("no optional u64 column {col}: {other:?}"),
    }
}

impl Res {
    pub fn table(&self, name: &str) -> &Table {
        self.0.get(name).unwrap_or_else(|| panic!("no table {name}"))
    }
    fn row(&self, table: &str, key_col: &str, key: &str) -> usize {
        let t = self.table(table);
        let rows: Vec<usize> = t.strs(key_col).iter().enumerate().filter(|(_, k)| *k == key).map(|(i, _)| i).collect();
        assert_eq!(rows.len(), 1, "{table}: expected one row with {key_col} == {key}");
        rows[0]
    }
    /// A u64 column of flow_summary for one flow.
    pub fn flow(&self, flow: &str, col: &str) -> u64 {
        let r = self.row("flow_summary", "flow", flow);
        self.table("flow_summary").u64s(col)[r]
    }
    /// An optional column of flow_summary (delays, goodput) for one flow.
    pub fn flow_opt(&self, flow: &str, col: &str) -> Option<u64> {
        let r = self.row("flow_summary", "flow", flow);
        opt_u64s(self.table("flow_summary"), col)[r]
    }
    /// A column of queue_summary for one queue ("<from>-><to>").
    pub fn queue(&self, queue: &str, col: &str) -> u64 {
        let r = self.row("queue_summary", "queue", queue);
        self.table("queue_summary").u64s(col)[r]
    }
    /// One column of a series table (tcp, udp, queue) restricted to the rows
    /// whose key column (flow or queue) equals `key`, in time order. A null
    /// in a nullable column (an unset ssthresh, no RTT sample yet) reads as
    /// u64::MAX; use `series_opt` to see it.
    pub fn series(&self, table: &str, key: &str, col: &str) -> Vec<u64> {
        self.series_opt(table, key, col).into_iter().map(|v| v.unwrap_or(u64::MAX)).collect()
    }
    pub fn series_opt(&self, table: &str, key: &str, col: &str) -> Vec<Option<u64>> {
        let t = self.table(table);
        let key_col = if table == "queue" || table == "yaqs_series" { "queue" } else { "flow" };
        let keys = t.strs(key_col);
        let vals: Vec<Option<u64>> = match t.get(col) {
            Some(Column::U64(v)) => v.iter().map(|&x| Some(x)).collect(),
            Some(Column::OptU64(v)) => v.clone(),
            other => panic!("{table}: no u64 column {col}: {other:?}"),
        };
        assert_eq!(keys.len(), vals.len());
        keys.iter().zip(vals).filter(|(k, _)| *k == key).map(|(_, v)| v).collect()
    }
    /// A u64 column of any table, whole.
    pub fn col(&self, table: &str, col: &str) -> Vec<u64> {
        self.table(table).u64s(col).to_vec()
    }
    /// An optional u64 column of any table, whole.
    pub fn col_opt(&self, table: &str, col: &str) -> Vec<Option<u64>> {
        opt_u64s(self.table(table), col).to_vec()
    }
    pub fn queue_names(&self) -> Vec<String> {
        self.table("queue_summary").strs("queue").to_vec()
    }
    pub fn flow_names(&self) -> Vec<String> {
        self.table("flow_summary").strs("flow").to_vec()
    }
}

/// Relative difference |a - b| / |b|.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// A TCP sender of `cfg` (segments of `mss` bytes) started on the test
/// wire `W`: the hand-built ACK sequences of the host-profile tests.
pub fn started_sender<W: alphaqos_sim::tcp::Wire + Default>(cfg: &alphaqos_sim::config::TcpConfig, mss: u64) -> (alphaqos_sim::tcp::sender::TcpSender, W) {
    let cc = alphaqos_sim::tcp::cc::build(cfg.cc.as_str(), &cfg.cc_params, mss).expect("controller");
    let mut s = alphaqos_sim::tcp::sender::TcpSender::new(cfg, cc);
    let mut w = W::default();
    s.start(&mut w);
    (s, w)
}

/// A test wire for driving one TCP end by hand: it records what the end
/// sends and the timers it asks for; it holds sends back only while `held`.
#[derive(Default)]
pub struct RecWire {
    pub now: alphaqos_sim::time::SimTime,
    /// Data segments sent: (seq, retransmission).
    pub data: Vec<(u64, bool)>,
    /// ACKs sent: (when, cumulative ACK).
    pub acks: Vec<(alphaqos_sim::time::SimTime, u64)>,
    /// Timer events asked for: (when, which).
    pub timers: Vec<(alphaqos_sim::time::SimTime, alphaqos_sim::event::FlowTimer)>,
    /// TSQ limits the sender set.
    pub limits: Vec<u64>,
    /// The host's queue is full: a send is held back (no room) until the
    /// test clears this and wakes the end (`on_wake`).
    pub held: bool,
}

impl alphaqos_sim::tcp::Wire for RecWire {
    fn now(&self) -> alphaqos_sim::time::SimTime {
        self.now
    }
    fn send(&mut self, p: alphaqos_sim::packet::Payload, _size: u32) {
        use alphaqos_sim::packet::Payload;
        match p {
            Payload::TcpData { seq, retx, .. } => self.data.push((seq, retx)),
            Payload::TcpAck { ack, .. } => self.acks.push((self.now, ack)),
            _ => {}
        }
    }
    fn schedule(&mut self, at: alphaqos_sim::time::SimTime, t: alphaqos_sim::event::FlowTimer) {
        self.timers.push((at, t));
    }
    fn tx_room(&mut self) -> bool {
        !self.held
    }
    fn set_tx_limit(&mut self, bytes: u64) {
        self.limits.push(bytes);
    }
}
