//! Receive coalescing (GRO) and NAPI polling at the receiving host, as
//! Linux 2.6.33 runs them for a 10 GbE NIC (the hosts of Yan et al., CTRQ
//! 2013, Section III-A: Linux 2.6.33, Intel 10 GbE).
//!
//! The NIC does not hand every segment to TCP as it arrives. Its interrupt
//! is moderated: it fires at most once per `napi_interval` (ixgbe's
//! `InterruptThrottleRate`, dynamic by default, which settles at 8,000
//! interrupts a second, 125 µs, for bulk traffic: `ixgbe_set_itr`,
//! `bulk_latency`). The interrupt schedules a NAPI poll (`net_rx_action`,
//! net/core/dev.c) that takes up to `budget` = 64 packets from the ring
//! (the driver's NAPI weight) and passes each to `napi_gro_receive`:
//!
//! - `dev_gro_receive` / `tcp_gro_receive` (net/ipv4/tcp.c) merge a
//!   segment into the held packet of its flow if it begins where that
//!   packet ends and carries the same TCP options (the timestamp: one tick
//!   of the clock, `ts_tick_ns`); otherwise the held packet is flushed up
//!   the stack and the new segment is held in its place. An out-of-order
//!   segment thus ends a run.
//! - `skb_gro_receive` refuses a segment that would take the packet to 64
//!   KB (`p->len + len >= 65536`, headers counted): flush, hold the new one.
//! - a segment shorter than the held packet's segment size, or with PSH,
//!   is merged and the packet flushed at once (`flush = len < mss`,
//!   `flags & TCP_FLAG_PSH`).
//! - the held packets are flushed when a poll empties the ring
//!   (`napi_complete` -> `napi_gro_flush`); a poll that used its whole
//!   budget keeps them and the softirq polls again at once.
//!
//! TCP (`receiver.rs`) then sees one packet per coalesced run: it
//! acknowledges at once a packet of more than one segment
//! (`__tcp_ack_snd_check`: more than `rcv_mss` = the segment size received
//! since the last ACK), and a tcpdump on the receiver, as tcptrace read it,
//! counts what GRO handed up. Processing takes no time here.
//!
//! Tests: `tests/gro.rs`.

use std::collections::VecDeque;

use super::Wire;
use crate::event::FlowTimer;
use crate::packet::TCP_HEADER_BYTES;
use crate::time::{Duration, SimTime};

/// The NAPI weight of the ixgbe driver (and of most 10 GbE drivers).
pub const NAPI_BUDGET: usize = 64;
/// `skb_gro_receive`: a GRO packet stays below 64 KB, headers included.
pub const GRO_MAX_BYTES: u64 = 65_536;

/// A data segment as the wire delivered it, or a coalesced run of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seg {
    pub seq: u64,
    pub len: u64,
    /// Wire segments in it.
    pub segs: u32,
    /// The first segment's timestamp (GRO keeps the first header).
    pub ts_val: SimTime,
    pub retx: bool,
    pub push: bool,
}

impl Seg {
    pub fn end(&self) -> u64 {
        self.seq + self.len
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroStats {
    /// Wire segments received.
    pub segments: u64,
    /// Coalesced packets handed to TCP.
    pub packets: u64,
    /// Runs ended by a segment that did not follow on (out of order).
    pub flushed_out_of_order: u64,
    /// Wire segments arriving below the highest sequence seen (what the
    /// receiver's TCP would count without GRO).
    pub ooo_segments: u64,
    /// NAPI polls.
    pub polls: u64,
}

#[derive(Debug)]
pub struct Gro {
    interval: Duration,
    ts_tick_ns: u64,
    ring: VecDeque<Seg>,
    held: Option<Seg>,
    /// The held packet's segment size (`gso_size`: its first segment's).
    held_mss: u64,
    /// A poll is scheduled (the interrupt is off until it completes).
    polling: bool,
    /// When the last interrupt fired.
    last_irq: Option<SimTime>,
    highest: u64,
    pub stats: GroStats,
}

impl Gro {
    pub fn new(interval: Duration, ts_tick_ns: u64) -> Gro {
        Gro {
            interval,
            ts_tick_ns: ts_tick_ns.max(1),
            ring: VecDeque::new(),
            held: None,
            held_mss: 0,
            polling: false,
            last_irq: None,
            highest: 0,
            stats: GroStats::default(),
        }
    }

    /// A segment lands in the receive ring; the interrupt fires now, or
    /// once `napi_interval` has passed since the last one.
    pub fn arrive(&mut self, seg: Seg, w: &mut impl Wire) {
        self.stats.segments += 1;
        self.stats.ooo_segments += (seg.seq < self.highest) as u64;
        self.highest = self.highest.max(seg.end());
        self.ring.push_back(seg);
        if !self.polling {
            self.polling = true;
            let now = w.now();
            let at = self.last_irq.map_or(now, |t| (t + self.interval).max(now));
            self.last_irq = Some(at);
            w.schedule(at, FlowTimer::Napi);
        }
    }

    /// One NAPI poll: up to [`NAPI_BUDGET`] segments through GRO; the
    /// packets flushed are pushed to `out` in order.
    pub fn poll(&mut self, out: &mut Vec<Seg>, w: &mut impl Wire) {
        self.stats.polls += 1;
        let n = self.ring.len().min(NAPI_BUDGET);
        for _ in 0..n {
            let seg = self.ring.pop_front().expect("n segments in the ring");
            self.receive(seg, out);
        }
        if n < NAPI_BUDGET {
            // The ring is empty: napi_complete flushes what GRO holds and
            // the interrupt is on again.
            self.flush(out);
            self.polling = false;
        } else {
            w.schedule(w.now(), FlowTimer::Napi);
        }
    }

    /// `napi_gro_receive` for one segment (see the module doc).
    fn receive(&mut self, seg: Seg, out: &mut Vec<Seg>) {
        let follows = self.held.is_some_and(|h| self.follows(&h, &seg));
        let merged = match &mut self.held {
            Some(h) if follows => {
                h.len += seg.len;
                h.segs += seg.segs;
                h.retx |= seg.retx;
                h.push |= seg.push;
                true
            }
            _ => false,
        };
        if !merged {
            if self.held.is_some_and(|h| seg.seq != h.end()) {
                self.stats.flushed_out_of_order += 1;
            }
            self.flush(out);
            self.held = Some(seg);
            self.held_mss = seg.len;
        }
        if seg.push || seg.len < self.held_mss {
            self.flush(out);
        }
    }

    fn follows(&self, h: &Seg, seg: &Seg) -> bool {
        seg.seq == h.end()
            && seg.ts_val.as_nanos() / self.ts_tick_ns == h.ts_val.as_nanos() / self.ts_tick_ns
            && h.len + seg.len + (TCP_HEADER_BYTES as u64) < GRO_MAX_BYTES // IP + TCP + timestamps
    }

    fn flush(&mut self, out: &mut Vec<Seg>) {
        if let Some(h) = self.held.take() {
            self.stats.packets += 1;
            out.push(h);
        }
    }
}
