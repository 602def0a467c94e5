//! An interface's monitor (opt-in per link direction): what leaves the
//! interface checked by the engine itself, not by the discipline.
//!
//! - Reordering: for every TCP data segment sent for the first time (not
//!   a retransmission), the highest sequence number the interface has sent
//!   for its connection is kept in a small map; a first transmission that
//!   leaves below it left behind a later segment of its flow: reordered by
//!   this interface's queue (senders emit first transmissions in sequence
//!   order, and nothing upstream reorders unless an impairment says so).
//!   Each is split by the queue it left from ([`crate::qos::Qdisc::last_band`]):
//!   with YAQS a late packet from the fast queue was overtaken by slow
//!   packets sent after it (*fast-after-slow*, Liberatore, Section III-C)
//!   and one from the slow queue by fast ones (*slow-after-fast*).
//! - The queue's length in bytes as each packet arrives (a histogram:
//!   maximum, mean, percentiles, CCDF), the same measure for every
//!   discipline (YAQS keeps its fast queue's in its own counters).

use crate::qos::Qdisc;
use crate::metrics::Histogram;
use crate::packet::{Packet, Payload};
use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct Monitor {
    /// (slot, generation) -> end of the highest first transmission sent.
    highest: HashMap<u64, u64>,
    pub data_pkts: u64,
    pub reordered: u64,
    /// Reordered packets by the band they left from (0, and 1 or more).
    pub reordered_band: [u64; 2],
    pub qlen_at_arrival: Histogram<6>,
}

impl Monitor {
    #[inline]
    pub fn on_arrival(&mut self, backlog_bytes: u64) {
        self.qlen_at_arrival.record(backlog_bytes);
    }

    /// `pkt` leaves, dequeued from band `band` of the discipline.
    pub fn on_send(&mut self, pkt: &Packet, band: u8) {
        let Payload::TcpData { seq, len, retx: false, .. } = pkt.payload else { return };
        self.data_pkts += 1;
        let high = self.highest.entry(((pkt.flow as u64) << 32) | pkt.gen as u64).or_insert(0);
        if seq < *high {
            self.reordered += 1;
            self.reordered_band[band.min(1) as usize] += 1;
        } else {
            *high = seq + len as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;

    fn seg(flow: u32, seq: u64, retx: bool) -> Packet {
        let mut p = Packet::test(flow, 1500);
        p.payload = Payload::TcpData { seq, len: 1000, ts_val: SimTime::ZERO, retx, push: false };
        p
    }

    #[test]
    fn counts_first_transmissions_that_leave_behind_a_later_one() {
        let mut m = Monitor::default();
        m.on_send(&seg(1, 0, false), 0);
        m.on_send(&seg(1, 2000, false), 1);
        m.on_send(&seg(2, 0, false), 0); // another flow: independent
        m.on_send(&seg(1, 1000, false), 0); // overtaken: fast-after-slow
        m.on_send(&seg(1, 0, true), 0); // a retransmission: not counted
        m.on_send(&seg(1, 3000, false), 1);
        assert_eq!((m.data_pkts, m.reordered, m.reordered_band), (5, 1, [1, 0]));
    }
}

/// What the results read of an interface: its name, its discipline and its
/// monitor (the interface itself belongs to the network, above this module).
pub struct Watched<'a> {
    pub name: &'a str,
    pub qdisc: &'a dyn Qdisc,
    pub monitor: Option<&'a Monitor>,
}

/// The YAQS series: one row per YAQS discipline at a sample.
pub fn sample_yaqs(ifaces: &[Watched], rec: &mut crate::recorder::Recorder, now: crate::time::SimTime) {
    rec.yaqs_keys.resize_with(ifaces.len(), Vec::new);
    for (ifc, keys) in ifaces.iter().zip(&mut rec.yaqs_keys) {
        let (names, series) = (&mut rec.names, &mut rec.yaqs);
        let mut k = 0;
        ifc.qdisc.for_each_yaqs(&mut |class, y| {
            if k == keys.len() {
                keys.push(names.intern(&crate::metrics::queue_name(ifc.name, class)));
            }
            let s = y.stats();
            series.row(keys[k], &[now.as_nanos(), y.fast_backlog().bytes, y.slow_backlog().bytes, s.slow_flows, s.nop_bytes]);
            k += 1;
        });
    }
}

/// The tables of YAQS and of the monitors: `yaqs` (one row per YAQS),
/// `monitor` (one row per monitored interface), `qlen_hist` (the
/// histograms of queue length at arrival: YAQS's fast queue, source
/// "yaqs_fast", and each monitor's whole queue, source "monitor").
pub fn tables(ifaces: &[Watched]) -> Vec<(&'static str, crate::metrics::Table)> {
    use crate::metrics::{col, Column, Table};
    let mut y: (Vec<String>, Vec<String>) = Default::default();
    let mut u: [Vec<u64>; 9] = Default::default();
    let (mut mean_flows, mut fp, mut sfp) = (vec![], vec![], vec![]);
    let mut hist: (Vec<String>, Vec<String>, Vec<u64>, Vec<u64>) = Default::default();
    let mut put_hist = |queue: &str, source: &str, h: &Histogram<6>| {
        for (low, c) in h.buckets() {
            hist.0.push(queue.to_string());
            hist.1.push(source.to_string());
            hist.2.push(low);
            hist.3.push(c);
        }
    };
    for ifc in ifaces {
        ifc.qdisc.for_each_yaqs(&mut |class, q| {
            let s = q.stats();
            let name = crate::metrics::queue_name(ifc.name, class);
            put_hist(&name, "yaqs_fast", &s.fast_len_at_arrival);
            y.0.push(name);
            y.1.push(ifc.name.to_string());
            let h = &s.fast_len_at_arrival;
            let vals = [
                s.arrivals,
                s.classified_slow,
                s.nop_bytes,
                s.nop_bytes_into_empty,
                s.inflated_pkts,
                s.max_slow_flows,
                h.max().unwrap_or(0),
                h.mean().map_or(0, |m| m.round() as u64),
                h.quantile(0.9).unwrap_or(0),
            ];
            for (c, v) in u.iter_mut().zip(vals) {
                c.push(v);
            }
            mean_flows.push(s.mean_slow_flows().unwrap_or(0.0));
            fp.push(s.epsilon.map(|_| s.false_positives));
            sfp.push(s.epsilon.map(|_| s.strict_false_positives));
        });
    }
    let names = [
        col::ARRIVALS, col::CLASSIFIED_SLOW, col::NOP_BYTES, col::NOP_BYTES_INTO_EMPTY, col::INFLATED_PKTS, col::SLOW_FLOWS_MAX,
        col::FAST_LEN_MAX_BYTES, col::FAST_LEN_MEAN_BYTES, col::FAST_LEN_P90_BYTES,
    ];
    let mut yaqs = Table::default().with(col::QUEUE, Column::Str(y.0)).with(col::LINK, Column::Str(y.1));
    for (n, c) in names.iter().zip(u) {
        yaqs = yaqs.with(n, Column::U64(c));
    }
    let yaqs = yaqs
        .with(col::SLOW_FLOWS_MEAN, Column::F64(mean_flows))
        .with(col::FALSE_POSITIVES, Column::OptU64(fp))
        .with(col::STRICT_FALSE_POSITIVES, Column::OptU64(sfp));
    let mut links = vec![];
    let mut m: [Vec<u64>; 8] = Default::default();
    for ifc in ifaces {
        let Some(mon) = ifc.monitor else { continue };
        links.push(ifc.name.to_string());
        put_hist(ifc.name, "monitor", &mon.qlen_at_arrival);
        let h = &mon.qlen_at_arrival;
        let vals = [
            h.count(),
            h.mean().map_or(0, |m| m.round() as u64),
            h.quantile(0.9).unwrap_or(0),
            h.max().unwrap_or(0),
            mon.data_pkts,
            mon.reordered,
            mon.reordered_band[0],
            mon.reordered_band[1],
        ];
        for (c, v) in m.iter_mut().zip(vals) {
            c.push(v);
        }
    }
    let mut monitor = Table::default().with(col::LINK, Column::Str(links));
    let names = [
        col::ARRIVALS, col::QLEN_MEAN_BYTES, col::QLEN_P90_BYTES, col::QLEN_MAX_BYTES, col::DATA_PKTS, col::REORDERED_PKTS,
        col::FAST_AFTER_SLOW, col::SLOW_AFTER_FAST,
    ];
    for (n, c) in names.iter().zip(m) {
        monitor = monitor.with(n, Column::U64(c));
    }
    let qlen_hist = Table::default()
        .with(col::QUEUE, Column::Str(hist.0))
        .with(col::SOURCE, Column::Str(hist.1))
        .with(col::LOW_BYTES, Column::U64(hist.2))
        .with(col::COUNT, Column::U64(hist.3));
    vec![("yaqs", yaqs), ("monitor", monitor), ("qlen_hist", qlen_hist)]
}
