//! One direction of the emulated path: a chain of hops, each what a
//! scenario link is in the simulator (`alphaqos_sim::topology::Iface`):
//! the forwarding router's firewall filter (classify, police), the egress
//! discipline, a transmitter at the link's rate and a propagation delay.
//!
//! Time. Every hop runs in *ideal* time: a packet enters the first hop at
//! the instant it was received, and from there every time is what the
//! simulator would compute (the engine's `egress::Egress`: the transmitter
//! starts when it is free and the packet is at the head of the discipline,
//! the frame takes `(size + overhead) * 8 / rate`, then the delay). The engine's own code
//! decides, called with these times as `now`. The wall clock only bounds
//! how far the hops may run: [`Direction::advance`] processes every event
//! up to `now` in time order. So the decisions do not depend on how late
//! the loop wakes up; only the moment a packet is handed back to the
//! kernel does, and that lateness is the delay error the run reports.
//!
//! Flow delays. A direction may delay the frames of some flows (a filter
//! term's match fields, the first that matches) by a constant before its
//! first hop: a sender further away, on an access link of its own whose
//! rate never binds, so that flows of different RTTs share the path's
//! bottleneck. A delayed frame enters the first hop at its arrival plus
//! the delay, in time order with the others ([`Direction::receive`]).

use alphaqos_sim::qos::classify::{Discarded, Filter, Term};
use alphaqos_sim::egress::Egress;
use alphaqos_sim::qos::{DropReason, Qdisc};
use alphaqos_sim::{Duration, SimTime};
use alphaqos_sim::packet::Packet;
use std::collections::VecDeque;

/// Why the emulator dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Refused or dropped by the discipline (tail, AQM).
    Queue(DropReason),
    /// Discarded by a filter term's `discard` action.
    Filter,
    /// Discarded by a filter term's policer (out of profile; counted also
    /// as a `Policer` drop of the queue it was bound for, where there is one).
    Policer,
    /// Larger than the hop's MTU.
    Mtu,
    /// The kernel would not take it back (send buffer full).
    Send,
}

impl From<Discarded> for Why {
    fn from(d: Discarded) -> Why {
        match d {
            Discarded::Term => Why::Filter,
            Discarded::Policer => Why::Policer,
        }
    }
}

impl Why {
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Queue(r) => r.as_str(),
            Why::Filter => "filter",
            Why::Policer => DropReason::Policer.as_str(),
            Why::Mtu => "mtu",
            Why::Send => "send",
        }
    }
}

pub struct Hop {
    /// "<node>-><peer>", as the simulator names the interface.
    pub name: String,
    /// The firewall filter of the router forwarding onto this hop.
    pub filter: Option<usize>,
    /// The discipline and the transmitter at the link's rate (the engine's
    /// `egress::Egress`, as trace replay runs it).
    pub egress: Egress,
    pub delay: Duration,
    pub mtu: u32,
    /// Frames on the wire or propagating: (arrival at the far end, packet).
    pub pipe: VecDeque<(SimTime, Packet)>,
    pub mtu_drops: u64,
    /// Packets dropped inside the discipline during one call (reused).
    inside: Vec<(Packet, DropReason)>,
}

impl Hop {
    pub fn new(name: String, filter: Option<usize>, egress: Egress, delay: Duration, mtu: u32) -> Hop {
        Hop { name, filter, egress, delay, mtu, pipe: VecDeque::new(), mtu_drops: 0, inside: Vec::new() }
    }

    /// The next time this hop has something to do (a transmission), if any.
    pub fn next_tx(&self) -> Option<SimTime> {
        self.egress.next_tx()
    }

    fn enter(&mut self, t: SimTime, pkt: Packet, filters: &mut [Filter], dropped: &mut Vec<(Packet, Why)>) {
        if pkt.size > self.mtu {
            self.mtu_drops += 1;
            dropped.push((pkt, Why::Mtu));
            return;
        }
        let pkt = match self.filter {
            Some(f) => match filters[f].apply(t, pkt) {
                Ok(p) => p,
                Err((p, why)) => {
                    if why == Discarded::Policer {
                        self.egress.qdisc.count_policed(&p);
                    }
                    dropped.push((p, Why::from(why)));
                    return;
                }
            },
            None => pkt,
        };
        if let Err((p, why)) = self.egress.enqueue(t, pkt, &mut self.inside) {
            dropped.push((p, Why::Queue(why)));
        }
        dropped.extend(self.inside.drain(..).map(|(p, why)| (p, Why::Queue(why))));
    }

    fn transmit(&mut self, t: SimTime, dropped: &mut Vec<(Packet, Why)>) {
        if let Some((p, end)) = self.egress.transmit(t, &mut self.inside) {
            self.pipe.push_back((end + self.delay, p));
        }
        dropped.extend(self.inside.drain(..).map(|(p, why)| (p, Why::Queue(why))));
    }

    /// Run every event up to `now`, taking arrivals from `input` (in time
    /// order) and putting what leaves into `self.pipe`.
    fn run(&mut self, now: SimTime, input: &mut VecDeque<(SimTime, Packet)>, filters: &mut [Filter], dropped: &mut Vec<(Packet, Why)>) {
        loop {
            let next_in = input.front().map(|x| x.0).filter(|&t| t <= now);
            let next_tx = self.next_tx().filter(|&t| t <= now);
            match (next_in, next_tx) {
                (Some(a), Some(t)) if t <= a => self.transmit(t, dropped),
                (Some(a), _) => {
                    let (_, p) = input.pop_front().expect("a front");
                    self.enter(a, p, filters, dropped);
                }
                (None, Some(t)) => self.transmit(t, dropped),
                (None, None) => break,
            }
        }
    }
}

/// A constant extra delay for the frames that match `term` (see the module doc).
pub struct FlowDelay {
    pub term: Term,
    pub delay: Duration,
    /// Its frames not yet due at the first hop: (entry time, packet), in time order.
    pub held: VecDeque<(SimTime, Packet)>,
}

/// One direction: packets received on one interface cross `hops` and are
/// sent on the other.
pub struct Direction {
    pub name: String,
    pub hops: Vec<Hop>,
    /// Received, not yet taken by the first hop: (entry time, packet), in time order.
    pub input: VecDeque<(SimTime, Packet)>,
    /// The filter of the router at the far end, which forwards what the
    /// last hop delivers onto the real interface.
    pub exit_filter: Option<usize>,
    pub flow_delays: Vec<FlowDelay>,
}

impl Direction {
    pub fn new(name: String, hops: Vec<Hop>, exit_filter: Option<usize>, flow_delays: Vec<FlowDelay>) -> Direction {
        Direction { name, hops, input: VecDeque::new(), exit_filter, flow_delays }
    }

    /// A frame received at `t` (times not decreasing): into the input, or
    /// held by the first flow delay it matches until `t` + its delay.
    pub fn receive(&mut self, t: SimTime, pkt: Packet) {
        match self.flow_delays.iter_mut().find(|fd| fd.term.matches(&pkt)) {
            Some(fd) => fd.held.push_back((t + fd.delay, pkt)),
            None => self.input.push_back((t, pkt)),
        }
    }

    /// Frames whose flow delay is over by `now` join the input, in time order.
    fn release(&mut self, now: SimTime) {
        loop {
            let next = self.flow_delays.iter().enumerate().filter_map(|(i, fd)| fd.held.front().map(|x| (x.0, i))).filter(|x| x.0 <= now).min();
            let Some((t, i)) = next else { break };
            let item = self.flow_delays[i].held.pop_front().expect("a front");
            let at = self.input.partition_point(|x| x.0 <= t);
            self.input.insert(at, item);
        }
    }

    /// Frames held by a flow delay.
    pub fn held_pkts(&self) -> u64 {
        self.flow_delays.iter().map(|fd| fd.held.len() as u64).sum()
    }

    /// Run every hop up to `now`; the packets due at the far end are then
    /// at the front of the last hop's pipe (see [`Direction::due`]).
    pub fn advance(&mut self, now: SimTime, filters: &mut [Filter], dropped: &mut Vec<(Packet, Why)>) {
        self.release(now);
        let mut input = std::mem::take(&mut self.input);
        for i in 0..self.hops.len() {
            if i == 0 {
                self.hops[0].run(now, &mut input, filters, dropped);
            } else {
                let (before, rest) = self.hops.split_at_mut(i);
                rest[0].run(now, &mut before[i - 1].pipe, filters, dropped);
            }
        }
        self.input = input;
    }

    /// The next packet due at the far end by `now`: (its ideal time,
    /// packet), after the exit filter (a packet it discards goes to
    /// `dropped` and the next one is tried).
    pub fn due(&mut self, now: SimTime, filters: &mut [Filter], dropped: &mut Vec<(Packet, Why)>) -> Option<(SimTime, Packet)> {
        loop {
            let pipe = &mut self.hops.last_mut()?.pipe;
            if !pipe.front().is_some_and(|x| x.0 <= now) {
                return None;
            }
            let (t, p) = pipe.pop_front()?;
            match self.exit_filter {
                None => return Some((t, p)),
                Some(f) => match filters[f].apply(t, p) {
                    Ok(p) => return Some((t, p)),
                    Err((p, why)) => dropped.push((p, Why::from(why))),
                },
            }
        }
    }

    /// The earliest time something happens in this direction (None: idle).
    pub fn next_event(&self) -> Option<SimTime> {
        let held = self.flow_delays.iter().filter_map(|fd| fd.held.front().map(|x| x.0));
        let mut next = self.input.front().map(|x| x.0).into_iter().chain(held).min();
        for h in &self.hops {
            for t in [h.next_tx(), h.pipe.front().map(|x| x.0)].into_iter().flatten() {
                next = Some(next.map_or(t, |n: SimTime| n.min(t)));
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alphaqos_sim::qos::fifo::{Fifo, Limit};

    fn hop(rate_mbps: u64, delay_us: u64, limit_pkts: u64) -> Hop {
        let q = alphaqos_sim::qos::LinkQdisc::Fifo(Fifo::new(Limit::from_opts(Some(limit_pkts), None)));
        let egress = Egress::new(q, alphaqos_sim::rng::Rng::stream(1, "t"), alphaqos_sim::DataRate::mbps(rate_mbps), 0);
        Hop::new("a->b".into(), None, egress, Duration(delay_us * 1000), 1500)
    }

    fn pkt(slot: u64, size: u32) -> Packet {
        let mut p = Packet::test(0, size);
        p.payload = alphaqos_sim::packet::Payload::Udp { seq: slot };
        p
    }

    #[test]
    fn departures_are_ideal_whatever_the_wake_up_times() {
        // 1000 B at 8 Mbit/s: 1 ms each. Three packets at t = 0, a 10 ms delay.
        let mut d = Direction::new("x".into(), vec![hop(8, 10_000, 10)], None, vec![]);
        for s in 0..3 {
            d.input.push_back((SimTime(0), pkt(s, 1000)));
        }
        let mut dropped = vec![];
        // The loop wakes up late, once, at 50 ms: the times are still exact.
        d.advance(SimTime(50_000_000), &mut [], &mut dropped);
        let due: Vec<u64> = std::iter::from_fn(|| d.due(SimTime(50_000_000), &mut [], &mut vec![])).map(|x| x.0 .0).collect();
        assert_eq!(due, [11_000_000, 12_000_000, 13_000_000]);
        assert!(dropped.is_empty());
    }

    #[test]
    fn a_chain_queues_behind_the_slower_hop_and_tail_drops_are_counted() {
        let fast = hop(80, 0, 100);
        let slow = hop(8, 5_000, 2); // holds 2 packets
        let mut d = Direction::new("x".into(), vec![fast, slow], None, vec![]);
        for s in 0..5 {
            d.input.push_back((SimTime(0), pkt(s, 1000)));
        }
        let mut dropped = vec![];
        let mut out = vec![];
        // Wake up every 0.3 ms as a real loop would.
        let mut now = 0;
        while now < 40_000_000 {
            d.advance(SimTime(now), &mut [], &mut dropped);
            while let Some((t, p)) = d.due(SimTime(now), &mut [], &mut dropped) {
                out.push((t.0, crate::wire::slot_of(&p)));
            }
            now += 300_000;
        }
        // Packets leave the fast hop every 0.1 ms; the slow one sends one, holds two,
        // and drops what comes while it is full.
        assert_eq!(dropped.len(), 2, "{dropped:?}");
        assert!(dropped.iter().all(|(_, w)| *w == Why::Queue(DropReason::Tail)));
        assert_eq!(out, [(100_000 + 1_000_000 + 5_000_000, 0), (7_100_000, 1), (8_100_000, 2)]);
        assert_eq!(d.hops[1].egress.tx_pkts, 3);
        assert_eq!(d.next_event(), None);
    }

    #[test]
    fn packets_over_the_mtu_are_dropped_and_counted() {
        let mut d = Direction::new("x".into(), vec![hop(8, 0, 10)], None, vec![]);
        d.input.push_back((SimTime(0), pkt(0, 1501)));
        let mut dropped = vec![];
        d.advance(SimTime(1), &mut [], &mut dropped);
        assert_eq!((dropped.len(), dropped[0].1, d.hops[0].mtu_drops), (1, Why::Mtu, 1));
    }

    #[test]
    fn a_delayed_flow_enters_later_and_in_time_order_with_the_others() {
        // One hop, 1000 B at 8 Mbit/s (1 ms each), 2 ms delay; frames from
        // 10.0.0.9 are 15 ms further away. Near frames at 0, 10 and 20 ms, far ones at 0 and 3 ms.
        let term = |src: &str| {
            let cfg: alphaqos_sim::config::FilterTermConfig = serde_json::from_str(&format!(r#"{{"name": "far", "src": "{src}"}}"#)).unwrap();
            alphaqos_sim::qos::classify::Filter::new(&[cfg]).unwrap().terms.remove(0)
        };
        let far = FlowDelay { term: term("10.0.0.9/32"), delay: Duration(15_000_000), held: VecDeque::new() };
        let mut d = Direction::new("x".into(), vec![hop(8, 2_000, 10)], None, vec![far]);
        let at = |slot: u64, src_ip: u32| {
            let mut p = pkt(slot, 1000);
            p.src_ip = src_ip;
            p
        };
        let (near_ip, far_ip) = (0x0a00_0001, 0x0a00_0009);
        let arrivals = [(0, 0, near_ip), (0, 1, far_ip), (3, 2, far_ip), (10, 3, near_ip), (20, 4, near_ip)];
        let mut out = vec![];
        let mut dropped = vec![];
        let mut i = 0;
        // A loop waking every 0.5 ms, receiving what has arrived by then.
        for now_us in (0..40_000).step_by(500) {
            let now = SimTime(now_us * 1000);
            while i < arrivals.len() && arrivals[i].0 * 1_000_000 <= now.0 {
                let (ms, slot, ip) = arrivals[i];
                d.receive(SimTime(ms * 1_000_000), at(slot, ip));
                i += 1;
            }
            d.advance(now, &mut [], &mut dropped);
            while let Some((t, p)) = d.due(now, &mut [], &mut dropped) {
                out.push((t.0 / 1000, crate::wire::slot_of(&p)));
            }
            assert!(d.next_event().is_none_or(|t| t > now), "an event before now is left at {now:?}");
        }
        // Near: 0 + 1 + 2 ms = 3 ms, 13, 23; far: 15 + 3 = 18 ms, 18 + 3 = 21 ms.
        assert_eq!(out, [(3_000, 0), (13_000, 3), (18_000, 1), (21_000, 2), (23_000, 4)]);
        assert!(dropped.is_empty());
        assert_eq!((d.held_pkts(), d.next_event()), (0, None));
        // A far frame whose delay ends while a near one is queued waits behind it (one FIFO).
        let far = FlowDelay { term: term("10.0.0.9/32"), delay: Duration(500_000), held: VecDeque::new() };
        let mut d = Direction::new("x".into(), vec![hop(8, 0, 10)], None, vec![far]);
        d.receive(SimTime(0), at(0, far_ip));
        d.receive(SimTime(0), at(1, near_ip));
        d.receive(SimTime(100_000), at(2, near_ip));
        d.advance(SimTime(10_000_000), &mut [], &mut dropped);
        let order: Vec<(u64, usize)> = std::iter::from_fn(|| d.due(SimTime(10_000_000), &mut [], &mut vec![])).map(|(t, p)| (t.0 / 1000, crate::wire::slot_of(&p))).collect();
        assert_eq!(order, [(1_000, 1), (2_000, 2), (3_000, 0)]);
    }
}
