//! The network's moving parts: forwarding, transmission, propagation, and
//! the per-connection counters the network keeps.
//!
//! An interface serializes one frame at a time: `start_tx` takes the next
//! packet from the queue discipline, the frame occupies the transmitter for
//! (size + overhead) * 8 / rate, then propagates for the link's delay in the
//! interface's pipe. Only the pipe's head has an event in the heap, and a
//! `TxDone` event exists only while packets wait, so the heap stays small.
//!
//! Every packet names its connection by slot and generation
//! ([`crate::conn::ConnId`]); counters are charged only while the
//! generation is the slot's current one, so a packet still in flight after
//! its connection ended (a late retransmission) never touches the counters
//! of the connection that took the slot over: it is counted as stale.
//!
//! TCP Small Queues is a host shim ([`Tsq`], kept by [`Net::tsq`] alone),
//! not a field of the generic counters: the bytes of a connection's data
//! waiting in its sending host's interface queue. A packet's direction is
//! the one its sender stamped ([`Packet::fwd`], by [`FlowIo::fwd`] or
//! [`FlowIo::rev`]).

use crate::qos::Qdisc;
use crate::conn::ConnId;
use crate::event::{Event, EventQueue, FlowTimer};
use crate::metrics::DelayStats;
use crate::packet::{Color, Packet, Payload};
use crate::qos::classify::{Discarded, Filter};
use crate::qos::Dequeued;
use crate::tcp::Wire;
use crate::time::{Duration, SimTime};
use crate::topology::{Iface, Node, NO_ROUTE};

/// Bytes of one connection in its host's interface queue above which a TCP
/// sender holds back (Linux's TCP Small Queues; tcp_limit_output_bytes is
/// 256 KiB since 4.x): a connection's window waits in the socket, not in
/// the qdisc. The sender is woken when its share has drained to half the
/// limit.
pub const TSQ_BYTES: u64 = 256 * 1024;

/// Per-connection counters kept by the network.
#[derive(Clone, Debug, Default)]
pub struct ConnStats {
    /// Data-direction packets and bytes sent and received.
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub rx_pkts: u64,
    pub rx_bytes: u64,
    /// Data-direction packets dropped anywhere on the path.
    pub drop_pkts: u64,
    /// Reverse-direction packets (ACKs, echo replies) dropped.
    pub drop_rev_pkts: u64,
}

impl ConnStats {
    fn count_drop(&mut self, pkt: &Packet) {
        if pkt.fwd {
            self.drop_pkts += 1;
        } else {
            self.drop_rev_pkts += 1;
        }
    }
}

/// The TCP Small Queues shim of one connection's sending host.
#[derive(Clone, Copy, Debug)]
pub struct Tsq {
    /// Bytes of this connection's data waiting in its source host's interface queue.
    pub queued: u64,
    /// The sender waits for `queued` to drain.
    pub blocked: bool,
    /// The limit, and the bytes `queued` must fall below to wake the
    /// sender: [`TSQ_BYTES`] and half of it (hysteresis) unless the sender
    /// sets its own (`Wire::set_tx_limit`: woken as soon as below it, as
    /// Linux's `tcp_tsq_handler` runs on each TX completion).
    pub limit: u64,
    pub wake_below: u64,
}

impl Default for Tsq {
    fn default() -> Self {
        Tsq { queued: 0, blocked: false, limit: TSQ_BYTES, wake_below: TSQ_BYTES / 2 + 1 }
    }
}

impl Tsq {
    /// May the sender queue another segment? If not, it is blocked until
    /// its share has drained ([`Tsq::left`] says when to wake it).
    #[inline]
    pub fn room(&mut self) -> bool {
        if self.queued < self.limit {
            return true;
        }
        self.blocked = true;
        false
    }

    /// `bytes` of its data left the host's queue (sent or dropped there):
    /// true if the blocked sender is to be woken, once its share has
    /// drained to half the limit (hysteresis: not once per packet).
    #[inline]
    fn left(&mut self, bytes: u64) -> bool {
        self.queued -= bytes;
        if self.blocked && self.queued < self.wake_below {
            self.blocked = false;
            return true;
        }
        false
    }
}

/// A packet's share of its connection's TSQ account: its connection and
/// size, if it is that connection's data in its sending host's queue at
/// `node`. Replies leaving the destination host carry the same `src` node
/// field but are not the sender's (defect 1 of issue 9).
#[derive(Clone, Copy, Debug)]
pub struct TsqShare {
    id: ConnId,
    bytes: u64,
}

impl TsqShare {
    #[inline]
    fn of(node: u32, p: &Packet) -> Option<TsqShare> {
        (node == p.src && p.fwd).then(|| TsqShare { id: ConnId::new(p.flow, p.gen), bytes: p.size as u64 })
    }
}

/// Per-slot state of the network side of connections.
#[derive(Clone, Debug, Default)]
pub struct ConnSlot {
    pub gen: u32,
    pub stats: ConnStats,
    pub tsq: Tsq,
}

pub struct Net {
    pub now: SimTime,
    pub events: EventQueue,
    pub nodes: Vec<Node>,
    pub ifaces: Vec<Iface>,
    pub(crate) next_hop: Vec<u32>,
    /// Indexed by connection slot.
    pub conns: Vec<ConnSlot>,
    /// One-way delay of the scenario's flows (slots below `delay.len()`).
    pub delay: Vec<DelayStats>,
    /// Each router's firewall filter (None: forward unchanged).
    pub filters: Vec<Option<Filter>>,
    /// Packets of connections that had ended when they arrived or were dropped.
    pub stale_pkts: u64,
    /// Packets a queue dropped from inside during the current call
    /// (`QueueCtx::dropped`), handled right after it.
    pub dropped: Vec<(Packet, crate::qos::DropReason)>,
}

impl Net {
    pub fn route(&self, from: u32, to: u32) -> u32 {
        self.next_hop[from as usize * self.nodes.len() + to as usize]
    }

    /// The interfaces from `a` to `b`, in path order (empty if no route).
    pub fn path(&self, a: u32, b: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut node = a;
        while node != b {
            let i = self.route(node, b);
            if i == NO_ROUTE {
                return Vec::new();
            }
            out.push(i);
            node = self.ifaces[i as usize].peer;
        }
        out
    }

    /// Make slot `id.idx` the fresh state of connection `id`.
    pub fn open_slot(&mut self, id: ConnId) {
        let i = id.idx as usize;
        if i >= self.conns.len() {
            self.conns.resize_with(i + 1, ConnSlot::default);
        }
        self.conns[i] = ConnSlot { gen: id.gen, ..Default::default() };
    }

    /// The counters of `pkt`'s connection, if it is still the slot's occupant.
    fn slot(&mut self, pkt: &Packet) -> Option<&mut ConnSlot> {
        match self.conns.get_mut(pkt.flow as usize) {
            Some(s) if s.gen == pkt.gen => Some(s),
            _ => None,
        }
    }

    fn count_drop(&mut self, pkt: &Packet) {
        match self.slot(pkt) {
            Some(s) => s.stats.count_drop(pkt),
            None => self.stale_pkts += 1,
        }
    }

    /// Write out what the links' taps hold (at the end of the run).
    pub fn flush_taps(&mut self) {
        for ifc in &mut self.ifaces {
            if let Some(t) = &mut ifc.tap {
                let _ = t.flush();
            }
        }
    }

    /// Hand `pkt` to the network at `node`.
    pub fn send_from(&mut self, node: u32, pkt: Packet) {
        match self.route(node, pkt.dst) {
            NO_ROUTE => self.count_drop(&pkt),
            i => self.enqueue(i, pkt),
        }
    }

    fn enqueue(&mut self, i: u32, mut pkt: Packet) {
        let now = self.now;
        let ifc = &mut self.ifaces[i as usize];
        let share = TsqShare::of(ifc.node, &pkt);
        if let Some(m) = &mut ifc.monitor {
            m.on_arrival(ifc.egress.qdisc.backlog().bytes);
        }
        // An idle plain FIFO: the packet is on the wire at once, as the
        // ordinary way below (enqueue, then start_tx) would put it, without
        // its copy into the queue's ring and back; same counters, same events.
        if ifc.tx_event == SimTime::MAX {
            match ifc.egress.pass(now, &mut pkt) {
                Some(true) => {
                    self.tsq(share, true);
                    self.on_wire(i, &pkt);
                    return;
                }
                Some(false) => return self.count_drop(&pkt),
                None => return self.enqueue_queued(i, pkt, share),
            }
        }
        self.enqueue_queued(i, pkt, share)
    }

    /// [`Net::enqueue`] the ordinary way: into the discipline, then on the
    /// wire if the transmitter is free.
    #[inline(always)]
    fn enqueue_queued(&mut self, i: u32, pkt: Packet, share: Option<TsqShare>) {
        let now = self.now;
        let ifc = &mut self.ifaces[i as usize];
        let refused = ifc.egress.enqueue(now, pkt, &mut self.dropped).err();
        if !self.dropped.is_empty() {
            let node = ifc.node;
            self.release_dropped(node);
        }
        if let Some((p, _)) = refused {
            self.count_drop(&p);
            return;
        }
        self.tsq(share, true);
        let ifc = &mut self.ifaces[i as usize];
        let busy_until = ifc.egress.busy_until();
        if ifc.tx_event == SimTime::MAX {
            if now >= busy_until {
                self.start_tx(i);
            } else {
                ifc.tx_event = busy_until;
                self.events.schedule(busy_until, Event::TxDone(i));
            }
        } else if now >= busy_until {
            // The link is idle and the discipline asked to be woken later
            // (a shaped class): the new packet may be sendable now.
            ifc.tx_event = SimTime::MAX;
            self.start_tx(i);
        }
    }

    /// The TCP Small Queues shim, its one entry: a packet's share (if it
    /// has one, [`TsqShare::of`]) entered its sending host's queue
    /// (`entered`) or left it, sent or dropped there; a sender held back is
    /// woken when [`Tsq::left`] says so. A connection that has ended keeps
    /// no account.
    #[inline(always)]
    fn tsq(&mut self, share: Option<TsqShare>, entered: bool) {
        let Some(TsqShare { id, bytes }) = share else { return };
        let Some(s) = self.conns.get_mut(id.idx as usize).filter(|s| s.gen == id.gen) else { return };
        if entered {
            s.tsq.queued += bytes;
        } else if s.tsq.left(bytes) {
            self.events.schedule(self.now, Event::Conn(id, FlowTimer::Wake));
        }
    }

    /// Packets a discipline at `node` dropped after admitting them (CoDel at
    /// dequeue, FQ-CoDel's overflow): lost, and no longer queued at their
    /// source, whose sender may wait for them (TSQ).
    #[cold]
    fn release_dropped(&mut self, node: u32) {
        let mut dropped = std::mem::take(&mut self.dropped);
        for (p, _) in dropped.drain(..) {
            self.count_drop(&p);
            self.tsq(TsqShare::of(node, &p), false);
        }
        self.dropped = dropped;
    }

    /// The transmitter of interface `i` is free: put the next frame on the wire.
    pub fn start_tx(&mut self, i: u32) {
        let now = self.now;
        // A plain FIFO's head goes from its ring to the wire as it is, not
        // through the discipline's answer (`Dequeued`): the enum's copy of
        // the packet, written field by field and read back whole, stalled
        // the processor's store forwarding at every departure.
        if let Some(p) = self.ifaces[i as usize].egress.dequeue_plain(now) {
            return self.on_wire(i, &p);
        }
        let next = self.ifaces[i as usize].egress.dequeue(now, &mut self.dropped);
        // Packets dropped at dequeue (CoDel).
        if !self.dropped.is_empty() {
            let node = self.ifaces[i as usize].node;
            self.release_dropped(node);
        }
        let ifc = &mut self.ifaces[i as usize];
        match next {
            Dequeued::Packet(p) => self.on_wire(i, &p),
            Dequeued::Empty => ifc.egress.held(now, None),
            Dequeued::NotBefore(t) => {
                ifc.egress.held(now, Some(t));
                ifc.tx_event = t;
                self.events.schedule(t, Event::TxDone(i));
            }
        }
    }

    /// `p`, just taken from interface `i`'s discipline, goes on the wire
    /// now: into the pipe (unless the wire loses it), the next departure
    /// scheduled if more wait, its TSQ share released.
    #[inline(always)]
    fn on_wire(&mut self, i: u32, p: &Packet) {
        let now = self.now;
        let ifc = &mut self.ifaces[i as usize];
        let end = ifc.sent(now, p);
        let wire = end.since(now);
        let mut arrive = end + ifc.delay;
        let mut lost = false;
        if let Some(imp) = ifc.impair {
            // Impairments draw from their own stream, so that enabling
            // loss leaves the discipline's draws as they were (defect 2).
            lost = imp.loses() && ifc.impair_rng.uniform() < imp.loss;
            if !lost && imp.reorders() && ifc.impair_rng.uniform() < imp.reorder_fraction {
                // `reorder_by` back-to-back frames of this size pass it (+1 ns breaks the tie).
                arrive += wire.saturating_mul(imp.reorder_by as u64) + Duration(1);
            }
        }
        let share = TsqShare::of(ifc.node, p);
        if lost {
            ifc.lost_pkts += 1;
        } else if ifc.push_pipe(arrive, *p) {
            self.events.schedule(arrive, Event::Deliver(i));
        }
        let ifc = &mut self.ifaces[i as usize];
        if ifc.egress.qdisc.backlog().pkts > 0 {
            ifc.tx_event = end;
            self.events.schedule(end, Event::TxDone(i));
        }
        if lost {
            self.count_drop(p);
        }
        self.tsq(share, false);
    }

    /// The head of interface `i`'s pipe arrives at the peer. Returns the
    /// packet if it reached its destination; forwards it otherwise.
    pub fn deliver(&mut self, i: u32) -> Option<Packet> {
        let ifc = &mut self.ifaces[i as usize];
        if ifc.next_deliver != self.now {
            return None; // superseded by an earlier arrival
        }
        let (_, pkt) = ifc.pipe.pop_front().expect("Deliver event with an empty pipe");
        // The frame after the new head, read at the next arrival but one
        // (the head's time is read just below).
        if let Some(next) = ifc.pipe.get(1) {
            crate::packet::prefetch(next);
        }
        ifc.next_deliver = match ifc.pipe.front() {
            Some(&(t, _)) => {
                self.events.schedule(t, Event::Deliver(i));
                t
            }
            None => SimTime::MAX,
        };
        let node = ifc.peer;
        if node == pkt.dst {
            return self.arrive(pkt);
        }
        if self.nodes[node as usize].router {
            let pkt = match &mut self.filters[node as usize] {
                Some(f) => match f.apply(self.now, pkt) {
                    Ok(p) => p,
                    Err((p, why)) => {
                        // At the egress queue it was bound for, as a router
                        // counts policed packets per class.
                        let i = self.route(node, p.dst);
                        if why == Discarded::Policer && i != NO_ROUTE {
                            self.ifaces[i as usize].qdisc.count_policed(&p);
                        }
                        self.count_drop(&p);
                        return None;
                    }
                },
                None => pkt,
            };
            self.send_from(node, pkt);
        } else {
            self.count_drop(&pkt);
        }
        None
    }

    /// Count a packet that reached its destination; None if its connection
    /// has ended (the packet is stale and goes nowhere).
    fn arrive(&mut self, pkt: Packet) -> Option<Packet> {
        let now = self.now;
        let fwd = pkt.fwd;
        let idx = pkt.flow as usize;
        let Some(s) = self.slot(&pkt) else {
            self.stale_pkts += 1;
            return None;
        };
        if fwd {
            s.stats.rx_pkts += 1;
            s.stats.rx_bytes += pkt.size as u64;
            if let Some(d) = self.delay.get_mut(idx) {
                d.record(now.since(pkt.created).as_nanos());
            }
        }
        Some(pkt)
    }
}

/// The two ends of a connection.
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

/// What an application sees of the network: its connection's two directions.
pub struct FlowIo<'a> {
    pub(crate) net: &'a mut Net,
    pub(crate) id: ConnId,
    pub(crate) ends: Ends,
}

impl<'a> FlowIo<'a> {
    pub fn new(net: &'a mut Net, id: ConnId, ends: Ends) -> Self {
        FlowIo { net, id, ends }
    }
    /// Sending from the connection's source towards its destination.
    pub fn fwd(&mut self) -> DirWire<'_> {
        let e = self.ends;
        DirWire { net: self.net, id: self.id, from: e.src, to: e.dst, from_ip: e.src_ip, to_ip: e.dst_ip, ports: (e.src_port, e.dst_port), proto: e.proto, dscp: e.dscp, fwd: true }
    }
    /// Sending from the destination back to the source.
    pub fn rev(&mut self) -> DirWire<'_> {
        // Replies (ACKs, echo replies) carry the connection's marking back.
        let e = self.ends;
        DirWire { net: self.net, id: self.id, from: e.dst, to: e.src, from_ip: e.dst_ip, to_ip: e.src_ip, ports: (e.dst_port, e.src_port), proto: e.proto, dscp: e.dscp, fwd: false }
    }
    pub fn now(&self) -> SimTime {
        self.net.now
    }
}

pub struct DirWire<'a> {
    net: &'a mut Net,
    id: ConnId,
    from: u32,
    to: u32,
    from_ip: u32,
    to_ip: u32,
    ports: (u16, u16),
    proto: u8,
    dscp: u8,
    /// The data direction (source to destination), stamped on every packet.
    fwd: bool,
}

impl Wire for DirWire<'_> {
    fn now(&self) -> SimTime {
        self.net.now
    }
    fn send(&mut self, payload: Payload, size: u32) {
        let pkt = Packet {
            flow: self.id.idx,
            gen: self.id.gen,
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
            fwd: self.fwd,
            payload,
        };
        if self.fwd {
            let st = &mut self.net.conns[self.id.idx as usize].stats;
            st.tx_pkts += 1;
            st.tx_bytes += size as u64;
        }
        self.net.send_from(self.from, pkt);
    }
    fn schedule(&mut self, at: SimTime, timer: FlowTimer) {
        self.net.events.schedule(at, Event::Conn(self.id, timer));
    }
    fn tx_room(&mut self) -> bool {
        self.net.conns[self.id.idx as usize].tsq.room()
    }
    fn set_tx_limit(&mut self, bytes: u64) {
        let t = &mut self.net.conns[self.id.idx as usize].tsq;
        (t.limit, t.wake_below) = (bytes, bytes);
    }
}
