//! The receiving side: cumulative ACKs, an out-of-order buffer, SACK blocks
//! (RFC 2018), the advertised window with window scaling (RFC 7323), delayed
//! ACKs (RFC 1122 4.2.3.2 / RFC 5681 4.2: at least every `ack_every`-th full
//! segment, else after `delack_timeout`; at once for out-of-order segments
//! and for segments that fill a hole), and the RFC 7323 rule for the
//! timestamp to echo (`TS.Recent`, updated by a segment that covers the last
//! ACK sent). The application reads in-order data at once, so the advertised
//! window is the receive buffer less the out-of-order bytes it holds.
//!
//! Counters, as a receiver-side tcpdump + tcptrace would count them:
//! `ooo_arrivals` are segments carrying new data that arrive below the
//! highest sequence already seen (out of sequence), `dup_acks_sent` the ACKs
//! that repeat the previous cumulative ACK, `spurious_retransmits` the
//! retransmitted segments whose data had all arrived before.
//!
//! Linux options (`config::HostBehaviour`), as `net/ipv4/tcp_input.c` of
//! Linux 2.6.33 receives:
//!
//! - `dsack`: a segment whose data had all arrived before is answered at
//!   once with its range as the first SACK block, a D-SACK (RFC 2883,
//!   Section 4; `tcp_data_queue` -> `tcp_dsack_set`), also the part of a
//!   segment below `rcv_nxt`;
//! - `quickack_after_dup`: after such a duplicate the receiver
//!   acknowledges the next in-order segments at once, min(16, rcvbuf / (2
//!   MSS)) of them (`tcp_enter_quickack_mode`, `tcp_incr_quickack`,
//!   TCP_MAX_QUICKACKS = 16).
//!
//! - ns-2's `DelAck` sink (`ns2_delack`, the `ns2` profile; `tcp/ns2.rs`):
//!   ns-2 has no PSH flag, so a pushed segment is not acknowledged early
//!   and the last segment of a burst waits for the timer.
//!
//! - `gro` (`tcp/gro.rs`): segments reach TCP through the NIC's NAPI
//!   polls, in-order runs coalesced into one packet of up to 64 KB; the
//!   receiver then sees (and counts, as a tcpdump on the host would) one
//!   packet per run, and acknowledges a packet of two or more segments at
//!   once (`__tcp_ack_snd_check`: more than `rcv_mss` received).
//!
//! Reordering extent (RFC 4737, Section 4.2.2, counted in segments of the
//! late one's size): a segment arriving out of sequence was overtaken by
//! the data between its end and the highest byte seen. `ooo_extent_max` is
//! the largest extent, `ooo_extent_3plus` counts the late arrivals that
//! three or more segments overtook: enough SACKed data above a hole for a
//! sender with the usual duplicate-ACK threshold to retransmit it.

use super::gro::{Gro, Seg};
use super::ranges::{RangeSet, Recent};
use super::{LazyTimer, Wire};
use crate::config::TcpConfig;
use crate::event::FlowTimer;
use crate::packet::{Payload, SackBlocks, TCP_HEADER_BYTES};
use crate::time::{Duration, SimTime};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub segments: u64,
    pub ooo_arrivals: u64,
    pub ooo_extent_max: u64,
    pub ooo_extent_3plus: u64,
    pub dup_acks_sent: u64,
    pub acks_sent: u64,
    pub spurious_retransmits: u64,
}

pub struct TcpReceiver {
    rcv_nxt: u64,
    /// Highest byte seen plus one.
    highest: u64,
    ooo: RangeSet,
    sack: bool,
    /// Out-of-order ranges in the order of their latest change, newest
    /// first: the SACK blocks to report (RFC 2018, Section 4).
    recent: Recent,
    rcvbuf: u64,
    /// Window scale shift (RFC 7323, 2.2); None without window scaling.
    wscale: Option<u32>,
    delayed_ack: bool,
    ack_every: u32,
    delack_timeout: Duration,
    unacked_segments: u32,
    delack: LazyTimer,
    ts_recent: SimTime,
    last_ack_sent: u64,
    /// In-order segments still to acknowledge without delay.
    quick: u32,
    dsack: bool,
    quickack_after_dup: bool,
    /// Quick ACKs after a duplicate: min(16, rcvbuf / (2 MSS)).
    quick_dup: u32,
    /// An in-order segment with PSH is acknowledged at once (not ns-2's sink).
    push_acks: bool,
    /// The duplicate range to report in the next ACK (RFC 2883).
    dup: Option<(u64, u64)>,
    /// Receive coalescing in NAPI polls (None: every segment at once).
    pub gro: Option<Gro>,
    /// The packets one poll flushed (kept to reuse its allocation).
    polled: Vec<Seg>,
    pub stats: ReceiverStats,
}

/// The smallest shift that lets a 16-bit window field express `buf` bytes
/// (at most 14, RFC 7323 2.3).
pub fn window_scale_for(buf: u64) -> u32 {
    (0..=14).find(|&s| buf >> s <= 65_535).unwrap_or(14)
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig) -> Self {
        TcpReceiver {
            rcv_nxt: 0,
            highest: 0,
            ooo: RangeSet::default(),
            sack: cfg.sack,
            recent: Recent::default(),
            rcvbuf: cfg.rwnd_bytes,
            wscale: cfg.window_scaling.then(|| window_scale_for(cfg.rwnd_bytes)),
            delayed_ack: cfg.delayed_ack,
            ack_every: cfg.ack_every.max(1),
            delack_timeout: Duration(cfg.delack_timeout_ns),
            unacked_segments: 0,
            delack: LazyTimer::default(),
            ts_recent: SimTime::ZERO,
            last_ack_sent: 0,
            quick: 0,
            dsack: false,
            quickack_after_dup: false,
            quick_dup: (cfg.rwnd_bytes / (2 * cfg.mss_bytes.max(1) as u64)).clamp(2, 16) as u32,
            push_acks: !cfg.host().ns2_delack,
            dup: None,
            gro: None,
            polled: Vec::new(),
            stats: ReceiverStats::default(),
        }
    }

    /// The Linux receive options (see the module doc).
    pub fn set_linux(&mut self, dsack: bool, quickack_after_dup: bool) {
        self.dsack = dsack;
        self.quickack_after_dup = quickack_after_dup;
    }

    /// Segments reach TCP through NAPI polls at most one per `interval`,
    /// coalesced by GRO (`tcp/gro.rs`).
    pub fn set_gro(&mut self, interval: Duration, ts_tick_ns: u64) {
        self.gro = Some(Gro::new(interval, ts_tick_ns));
    }

    /// Acknowledge the next `n` in-order segments at once (Linux's
    /// quick-ACK mode at the start of a connection, `tcp_incr_quickack`).
    pub fn set_quickack(&mut self, n: u32) {
        self.quick = n;
    }

    /// In-order bytes delivered to the application.
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    /// The window to advertise, as the scaled 16-bit field would carry it.
    pub fn window(&self) -> u64 {
        let free = self.rcvbuf.saturating_sub(self.ooo.bytes());
        match self.wscale {
            Some(s) => (free >> s).min(65_535) << s,
            None => free.min(65_535),
        }
    }

    /// A data segment arrives. An in-order segment with `push` set is
    /// acknowledged at once: the application reads it and drains the
    /// buffer, and Linux's `tcp_cleanup_rbuf` then sends the pending ACK
    /// (ICSK_ACK_PUSHED) instead of waiting for the delayed-ACK timer.
    pub fn on_segment(&mut self, seq: u64, len: u32, ts_val: SimTime, retx: bool, push: bool, w: &mut impl Wire) {
        let seg = Seg { seq, len: len as u64, segs: 1, ts_val, retx, push };
        match &mut self.gro {
            Some(gro) => gro.arrive(seg, w),
            None => self.on_packet(seg, w),
        }
    }

    /// A packet reaches TCP: one segment, or a run GRO coalesced.
    fn on_packet(&mut self, seg: Seg, w: &mut impl Wire) {
        let Seg { seq, len, segs, ts_val, retx, push } = seg;
        self.stats.segments += 1;
        let end = seq + len;
        if seq <= self.last_ack_sent && end > self.last_ack_sent {
            self.ts_recent = ts_val;
        }
        let old = end <= self.rcv_nxt || self.ooo.covers(seq.max(self.rcv_nxt), end);
        if old {
            self.stats.spurious_retransmits += retx as u64;
        } else if seq < self.highest {
            self.stats.ooo_arrivals += 1;
            // In wire segments of the late packet's segment size.
            let extent = self.highest.saturating_sub(end).div_ceil((len / segs.max(1) as u64).max(1));
            self.stats.ooo_extent_max = self.stats.ooo_extent_max.max(extent);
            self.stats.ooo_extent_3plus += (extent >= 3) as u64;
        }
        self.highest = self.highest.max(end);
        if old {
            // Nothing new: tell the sender where we are.
            if self.dsack {
                self.dup = Some((seq, end));
            }
            if self.quickack_after_dup {
                self.quick = self.quick.max(self.quick_dup);
            }
            self.send_ack(w);
        } else if seq > self.rcv_nxt {
            let count = self.ooo.len();
            let (range, _) = self.ooo.insert(seq, end);
            self.recent.touch(range, self.ooo.len() == count);
            self.send_ack(w);
        } else {
            if self.dsack && seq < self.rcv_nxt {
                // Partly old: report the part below rcv_nxt.
                self.dup = Some((seq, self.rcv_nxt));
            }
            let filled_hole = !self.ooo.is_empty() || self.dup.is_some();
            self.rcv_nxt = end;
            if let Some((s, e)) = self.ooo.first() {
                if s <= self.rcv_nxt {
                    self.rcv_nxt = self.rcv_nxt.max(e);
                }
            }
            self.ooo.remove_below(self.rcv_nxt);
            let rcv_nxt = self.rcv_nxt;
            self.recent.drop_below(rcv_nxt);
            self.unacked_segments += segs;
            let quick = self.quick > 0;
            self.quick = self.quick.saturating_sub(1);
            if filled_hole || quick || (push && self.push_acks) || !self.delayed_ack || self.unacked_segments >= self.ack_every {
                self.send_ack(w);
            } else if self.delack.deadline().is_none() {
                let at = w.now() + self.delack_timeout;
                self.delack.set(at, FlowTimer::DelAck, w);
            }
        }
    }

    pub fn on_timer(&mut self, timer: FlowTimer, w: &mut impl Wire) {
        if timer == FlowTimer::Napi {
            let Some(gro) = &mut self.gro else { return };
            let mut polled = std::mem::take(&mut self.polled);
            gro.poll(&mut polled, w);
            for seg in polled.drain(..) {
                self.on_packet(seg, w);
            }
            self.polled = polled;
            return;
        }
        if timer == FlowTimer::DelAck && self.delack.fire(FlowTimer::DelAck, w) && self.unacked_segments > 0 {
            self.send_ack(w);
        }
    }

    fn send_ack(&mut self, w: &mut impl Wire) {
        if self.rcv_nxt == self.last_ack_sent && self.stats.acks_sent > 0 {
            self.stats.dup_acks_sent += 1;
        }
        self.stats.acks_sent += 1;
        self.last_ack_sent = self.rcv_nxt;
        self.unacked_segments = 0;
        self.delack.clear();
        let mut sack = SackBlocks::default();
        if let Some((s, e)) = self.dup.take().filter(|_| self.sack) {
            sack.push(self.rcv_nxt, s, e);
        }
        if self.sack {
            for (s, e) in self.recent.newest().take(SackBlocks::MAX) {
                sack.push(self.rcv_nxt, s, e);
            }
        }
        let size = TCP_HEADER_BYTES + sack.option_bytes();
        let wnd = self.window() as u32; // at most 65,535 << 14
        w.send(Payload::TcpAck { ack: self.rcv_nxt, ts_ecr: self.ts_recent, wnd, sack }, size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_scale_is_the_smallest_sufficient_shift() {
        assert_eq!(window_scale_for(65_535), 0);
        assert_eq!(window_scale_for(65_536), 1);
        // 64 MiB >> 10 is 65536, one too many for the 16-bit field.
        assert_eq!(window_scale_for(64 << 20), 11);
        assert_eq!(window_scale_for((64 << 20) - 1024), 10);
        assert_eq!(window_scale_for(u64::MAX), 14);
    }
}
