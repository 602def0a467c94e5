//! The results: the summary tables the engine and the emulator
//! (`alphaqos-emu`) both write, per queue (`queue_summary`) and per filter
//! term (`filter`), with the same columns (docs/engine-config.md), from the
//! same code; and the simulation's own, below: its samples of the series
//! (`Event::Sample`) and every result table (`Simulation::results`).

use crate::conn::ConnId;
use crate::event::Event;
use crate::metrics::{col, Column, Table};
use crate::monitor::Watched;
use crate::topology::Iface;
use crate::recorder::{Sampling, STREAM_ROWS_MAX};
use crate::sim::{Owner, Simulation};
use crate::workload::{StreamRec, TransferRec};
use crate::qos::classify::Filter;
use crate::qos::{DropReason, Qdisc};
use crate::units::DataRate;
use std::collections::BTreeMap;

/// One interface (or emulated hop) whose queues are summarised.
pub struct QueueSource<'a> {
    /// "<from>-><to>".
    pub link: &'a str,
    pub rate: DataRate,
    /// Frames lost on its wire (impairment), 0 where there is none.
    pub link_loss_pkts: u64,
    pub qdisc: &'a dyn Qdisc,
}

pub use crate::metrics::queue_name;

/// One row per queue (a classful discipline: one per class).
pub fn queue_summary<'a>(sources: impl Iterator<Item = QueueSource<'a>>) -> Table {
    let mut names = vec![];
    let mut links = vec![];
    let mut u: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let reason_cols: Vec<String> = DropReason::ALL.iter().map(|r| col::drop_reason(r.as_str())).collect();
    let (mut sojourn_mean, mut sojourn_p99) = (vec![], vec![]);
    for q in sources {
        q.qdisc.for_each_queue(&mut |class, c, b| {
            names.push(queue_name(q.link, class));
            links.push(q.link.to_string());
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
            put(col::RATE_BPS, q.rate.as_bps());
            put(col::LINK_LOSS_PKTS, q.link_loss_pkts);
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

/// One row per filter term of each (router name, filter).
pub fn filter_table<'a>(filters: impl Iterator<Item = (&'a str, &'a Filter)>) -> Table {
    let (mut node, mut term) = (vec![], vec![]);
    let mut u: [Vec<u64>; 7] = Default::default();
    for (name, f) in filters {
        for t in &f.terms {
            node.push(name.to_string());
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

/// The simulation's samples of the series and its result tables.
impl Simulation {
    /// A sample of the series (`Event::Sample`), and the next one scheduled.
    pub(crate) fn sample(&mut self) {
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
                if let Owner::Stream(r) = c.owner {
                    let sr = &mut self.streams[r as usize];
                    let w = self.transfers[sr.transfer as usize].workload as usize;
                    delivered[w] += sr.delivered;
                    if due {
                        if let Some(row) = c.app.tcp_row(&mut sr.prev_delivered, span) {
                            self.rec.streams.row(self.workloads[w].key, [sr.transfer as u64, sr.stream as u64], &row);
                        }
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
        let watched: Vec<Watched> = self.net.ifaces.iter().map(watched).collect();
        crate::monitor::sample_yaqs(&watched, &mut self.rec, now);
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
        let watched: Vec<Watched> = self.net.ifaces.iter().map(watched).collect();
        out.extend(crate::monitor::tables(&watched).into_iter().map(|(k, t)| (k.to_string(), t)));
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
        match self.conns.get(r.id).and_then(|c| c.app.counters()) {
            Some(k) if r.end.is_none() => (k.bytes_acked.min(k.written), k.retransmits, k.timeouts),
            _ => (r.acked, r.retransmits, r.timeouts),
        }
    }

    /// A stream's payload bytes sent again, and the segments its receiver
    /// got twice, so far.
    fn stream_resent(&self, r: &StreamRec) -> (u64, u64) {
        match self.conns.get(r.id).and_then(|c| c.app.counters()) {
            Some(k) if r.end.is_none() => (k.retransmitted_bytes, k.spurious_retransmits),
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

fn watched(ifc: &Iface) -> Watched<'_> {
    Watched { name: &ifc.name, qdisc: ifc.qdisc.as_dyn(), monitor: ifc.monitor.as_deref() }
}

fn rate(bytes: u64, ns: u64) -> u64 {
    (bytes as u128 * 8_000_000_000 / ns.max(1) as u128) as u64
}
