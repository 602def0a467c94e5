//! The receiving side: cumulative ACKs, an out-of-order buffer, delayed
//! ACKs (RFC 1122 4.2.3.2 / RFC 5681 4.2: at least every `ack_every`-th
//! full segment, else after `delack_timeout`; at once for out-of-order
//! segments and for segments that fill a hole), and the RFC 7323 rule for
//! the timestamp to echo (`TS.Recent`, updated by a segment that covers the
//! last ACK sent).
//!
//! Counters: `ooo_arrivals` counts segments that arrive above the next
//! expected byte (after a gap), `dup_acks_sent` the ACKs that repeat the
//! previous cumulative ACK.

use super::{LazyTimer, Wire};
use crate::config::TcpConfig;
use crate::event::FlowTimer;
use crate::packet::{Payload, TCP_HEADER_BYTES};
use crate::time::{Duration, SimTime};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub segments: u64,
    pub ooo_arrivals: u64,
    pub dup_acks_sent: u64,
    pub acks_sent: u64,
}

pub struct TcpReceiver {
    rcv_nxt: u64,
    /// Out-of-order ranges [start, end), disjoint and not touching.
    ooo: BTreeMap<u64, u64>,
    delayed_ack: bool,
    ack_every: u32,
    delack_timeout: Duration,
    unacked_segments: u32,
    delack: LazyTimer,
    ts_recent: SimTime,
    last_ack_sent: u64,
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig) -> Self {
        TcpReceiver {
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            delayed_ack: cfg.delayed_ack,
            ack_every: cfg.ack_every.max(1),
            delack_timeout: Duration(cfg.delack_timeout_ns),
            unacked_segments: 0,
            delack: LazyTimer::default(),
            ts_recent: SimTime::ZERO,
            last_ack_sent: 0,
            stats: ReceiverStats::default(),
        }
    }

    /// In-order bytes delivered to the application.
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn on_segment(&mut self, seq: u64, len: u32, ts_val: SimTime, w: &mut impl Wire) {
        self.stats.segments += 1;
        let end = seq + len as u64;
        if seq <= self.last_ack_sent && end > self.last_ack_sent {
            self.ts_recent = ts_val;
        }
        if end <= self.rcv_nxt {
            // Entirely old: a spurious retransmission. Tell the sender where we are.
            self.send_ack(w);
        } else if seq > self.rcv_nxt {
            self.stats.ooo_arrivals += 1;
            self.insert_ooo(seq, end);
            self.send_ack(w);
        } else {
            let filled_hole = !self.ooo.is_empty();
            self.rcv_nxt = end;
            while let Some((&s, &e)) = self.ooo.first_key_value() {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.pop_first();
            }
            self.unacked_segments += 1;
            if filled_hole || !self.delayed_ack || self.unacked_segments >= self.ack_every {
                self.send_ack(w);
            } else if self.delack.deadline().is_none() {
                let at = w.now() + self.delack_timeout;
                self.delack.set(at, FlowTimer::DelAck, w);
            }
        }
    }

    pub fn on_timer(&mut self, timer: FlowTimer, w: &mut impl Wire) {
        if timer == FlowTimer::DelAck && self.delack.fire(FlowTimer::DelAck, w) && self.unacked_segments > 0 {
            self.send_ack(w);
        }
    }

    fn insert_ooo(&mut self, mut start: u64, mut end: u64) {
        // Merge with every range that overlaps or touches [start, end).
        if let Some((&s, &e)) = self.ooo.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.ooo.remove(&s);
            }
        }
        while let Some((&s, &e)) = self.ooo.range(start..).next() {
            if s > end {
                break;
            }
            end = end.max(e);
            self.ooo.remove(&s);
        }
        self.ooo.insert(start, end);
    }

    fn send_ack(&mut self, w: &mut impl Wire) {
        if self.rcv_nxt == self.last_ack_sent && self.stats.acks_sent > 0 {
            self.stats.dup_acks_sent += 1;
        }
        self.stats.acks_sent += 1;
        self.last_ack_sent = self.rcv_nxt;
        self.unacked_segments = 0;
        self.delack.clear();
        w.send(Payload::TcpAck { ack: self.rcv_nxt, ts_ecr: self.ts_recent }, TCP_HEADER_BYTES);
    }
}
