//! The summary tables the engine and the emulator (`alphaqos-emu`) both
//! write: per queue (`queue_summary`) and per filter term (`filter`), with
//! the same columns (docs/engine-config.md), from the same code.

use crate::metrics::{col, Column, Table};
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

/// The name of a class's queue: the link, or "<link>/<class>".
pub fn queue_name(iface: &str, class: &str) -> String {
    if class.is_empty() {
        iface.to_string()
    } else {
        format!("{iface}/{class}")
    }
}

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
