//! One egress port: a discipline feeding a transmitter at the link's rate,
//! the queue-plus-transmitter of all three users. Trace replay (`trace.rs`)
//! and the circuit emulator (`crates/alphaqos-emu`) drive it from outside
//! the event loop; the simulator's interfaces (`topology.rs`'s `Iface`)
//! hold one and drive it from their events (`Net::enqueue`/`Net::start_tx`),
//! with what only the simulator has around it: the pipe, impairments and
//! TSQ after a departure, and the monitor and tap as a [`TxWatch`].
//!
//! The rules:
//! - an arriving packet goes through the discipline at its arrival time;
//!   an idle transmitter is free from then on, and a discipline that had
//!   asked to be woken later (a shaped class: `Dequeued::NotBefore`) is
//!   asked again, as the new packet may be in a class it lets go earlier;
//! - the transmitter takes the next packet when it is free and the
//!   discipline has one: it is busy for the packet's serialisation time,
//!   `(size + overhead) * 8 / rate` (IEEE 802.3 framing: preamble, header,
//!   FCS and gap are the `overhead`), and the packet has left at the end of it;
//! - `NotBefore(t)` holds the transmitter until `t`; `Empty` until the next
//!   arrival.
//!
//! The caller runs the port in time order: arrivals with [`Egress::enqueue`]
//! and, while [`Egress::next_tx`] is not after the next arrival,
//! [`Egress::transmit`] at that time.

use crate::packet::Packet;
use crate::qos::{Dequeued, DropReason, LinkQdisc, Qdisc, QueueCtx};
use crate::rng::Rng;
use crate::time::{Duration, SimTime};
use crate::units::DataRate;

/// Packets dropped from inside a discipline, with the reason it counted.
pub type Dropped = Vec<(Packet, DropReason)>;

/// What watches a port's departures from outside the generic path (the
/// simulator's monitors and link taps): called at one point, once per
/// packet put on the wire, with the band the discipline took it from
/// ([`Qdisc::last_band`]: YAQS's fast queue is 1, everything else 0).
pub trait TxWatch {
    /// Whether anything watches (if not, the band is not asked for).
    fn active(&self) -> bool;
    /// `pkt` went on the wire at `now`, from the discipline's `band`.
    fn on_tx(&mut self, now: SimTime, pkt: &Packet, band: u8);
}

/// Nobody watches (trace replay, the emulator).
pub struct NoWatch;

impl TxWatch for NoWatch {
    #[inline(always)]
    fn active(&self) -> bool {
        false
    }
    #[inline(always)]
    fn on_tx(&mut self, _: SimTime, _: &Packet, _: u8) {}
}

pub struct Egress {
    pub qdisc: LinkQdisc,
    /// The discipline's random stream (RED's and the like's draws).
    pub rng: Rng,
    pub rate: DataRate,
    /// Bytes each frame adds on the wire beyond the IP packet.
    pub overhead: u32,
    /// The transmitter is busy until this time.
    busy_until: SimTime,
    /// The discipline has nothing to send before this time (`SimTime::MAX`:
    /// not before the next arrival).
    hold: SimTime,
    /// Packets and IP bytes put on the wire.
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// The last frame's wire time, with the rate and frame length it was
    /// computed for (see [`Egress::sent`]).
    last_wire: (DataRate, u64, Duration),
}

impl Egress {
    pub fn new(qdisc: LinkQdisc, rng: Rng, rate: DataRate, overhead: u32) -> Egress {
        let last_wire = (rate, 0, Duration(0));
        Egress { qdisc, rng, rate, overhead, busy_until: SimTime::ZERO, hold: SimTime::ZERO, tx_pkts: 0, tx_bytes: 0, last_wire }
    }

    /// How long a packet of `size` IP bytes occupies the wire.
    #[inline]
    pub fn wire_time(&self, size: u32) -> Duration {
        self.rate.tx_time(size as u64 + self.overhead as u64)
    }

    /// The transmitter is busy until this time.
    #[inline]
    pub fn busy_until(&self) -> SimTime {
        self.busy_until
    }

    /// The time the transmitter next takes a packet, if the discipline
    /// holds one it may give (None: empty, or waiting for an arrival).
    #[inline]
    pub fn next_tx(&self) -> Option<SimTime> {
        (self.qdisc.backlog().pkts > 0 && self.hold != SimTime::MAX).then(|| self.busy_until.max(self.hold))
    }

    /// `pkt` arrives at `now`: through the discipline. A refused packet is
    /// given back with the reason; packets the discipline drops from inside
    /// its queues go to `dropped`.
    #[inline]
    pub fn enqueue(&mut self, now: SimTime, pkt: Packet, dropped: &mut Dropped) -> Result<(), (Packet, DropReason)> {
        self.busy_until = self.busy_until.max(now);
        self.hold = SimTime::ZERO;
        let mut ctx = QueueCtx::with_drops(now, self.rate, &mut self.rng, dropped);
        self.qdisc.enqueue(pkt, &mut ctx)
    }

    /// `pkt` arrives at `now` and, if the transmitter is free and the
    /// discipline a plain FIFO holding nothing ([`Fifo::pass`]), goes
    /// straight to the wire: the port's state and the queue's counters as
    /// after [`Egress::enqueue`] then [`Egress::dequeue`] at `now`. None if
    /// that is not the case (nothing changed: go the ordinary way);
    /// `Some(false)` if the FIFO's limit refused the packet.
    ///
    /// [`Fifo::pass`]: crate::qos::fifo::Fifo::pass
    #[inline(always)]
    pub fn pass(&mut self, now: SimTime, pkt: &mut Packet) -> Option<bool> {
        if now < self.busy_until {
            return None;
        }
        let LinkQdisc::Fifo(f) = &mut self.qdisc else { return None };
        let admitted = f.pass(pkt, now)?;
        self.busy_until = now;
        self.hold = SimTime::ZERO;
        Some(admitted)
    }

    /// The transmitter is free at `now` (a time [`Egress::next_tx`] gave):
    /// the packet it puts on the wire and the time its last bit leaves, if
    /// the discipline gives one. Packets dropped at dequeue go to `dropped`.
    pub fn transmit(&mut self, now: SimTime, dropped: &mut Dropped) -> Option<(Packet, SimTime)> {
        match self.transmit_watched(now, dropped, &mut NoWatch) {
            Dequeued::Packet(p) => Some((p, self.busy_until)),
            _ => None,
        }
    }

    /// [`Egress::transmit`] with `watch` told of the packet sent, and the
    /// discipline's answer as it gave it: a packet sent is on the wire until
    /// [`Egress::busy_until`]; `NotBefore` and `Empty` hold the port as
    /// [`Egress::next_tx`] says. The three steps, for a caller that
    /// matches the answer itself (the simulator's `Net::start_tx`):
    /// [`Egress::dequeue`], then [`Egress::sent`] or [`Egress::held`].
    #[inline]
    pub fn transmit_watched(&mut self, now: SimTime, dropped: &mut Dropped, watch: &mut impl TxWatch) -> Dequeued {
        let next = self.dequeue(now, dropped);
        match &next {
            Dequeued::Packet(p) => {
                self.sent(now, p, watch);
            }
            &Dequeued::NotBefore(t) => self.held(now, Some(t)),
            Dequeued::Empty => self.held(now, None),
        }
        next
    }

    /// The packet a plain drop-tail FIFO ([`Fifo::pop_plain`]) gives a
    /// transmitter free at `now`, as [`Egress::dequeue`] would give it; None
    /// if the discipline is another or holds nothing (ask
    /// [`Egress::dequeue`]). Follow it with [`Egress::sent`].
    ///
    /// [`Fifo::pop_plain`]: crate::qos::fifo::Fifo::pop_plain
    #[inline(always)]
    pub fn dequeue_plain(&mut self, now: SimTime) -> Option<Packet> {
        match &mut self.qdisc {
            LinkQdisc::Fifo(f) => f.pop_plain(now),
            LinkQdisc::Dyn(_) => None,
        }
    }

    /// The discipline's answer to a transmitter free at `now`; packets it
    /// drops at dequeue go to `dropped`. Follow it with [`Egress::sent`]
    /// or [`Egress::held`]. (The simulator matches the answer itself, by
    /// value: handing it back through [`Egress::transmit_watched`] copies
    /// the packet once more, 3.5 % of the reference case's instructions.)
    #[inline(always)]
    pub fn dequeue(&mut self, now: SimTime, dropped: &mut Dropped) -> Dequeued {
        let mut ctx = QueueCtx::with_drops(now, self.rate, &mut self.rng, dropped);
        self.qdisc.dequeue(&mut ctx)
    }

    /// `pkt`, just dequeued, goes on the wire at `now`: counted, `watch`
    /// told (with the band the discipline took it from), and the time its
    /// last bit leaves returned (the transmitter is busy until then).
    #[inline(always)]
    pub fn sent(&mut self, now: SimTime, pkt: &Packet, watch: &mut impl TxWatch) -> SimTime {
        // Most frames are as long as the last one on the same port (a
        // flow's full segments, its ACKs): their wire time is remembered,
        // not divided again (a 64-bit division's latency, on the path to
        // every departure's events: a tenth of `Net::send_from`'s samples).
        let bytes = pkt.size as u64 + self.overhead as u64;
        let wire = match self.last_wire {
            (rate, b, t) if rate == self.rate && b == bytes => t,
            _ => {
                let t = self.wire_time(pkt.size);
                self.last_wire = (self.rate, bytes, t);
                t
            }
        };
        self.busy_until = now + wire;
        self.tx_pkts += 1;
        self.tx_bytes += pkt.size as u64;
        if watch.active() {
            watch.on_tx(now, pkt, self.qdisc.last_band());
        }
        self.busy_until
    }

    /// The discipline gave no packet: the port waits until the time it
    /// named (`NotBefore(t)`: `Some(t)`), or for the next arrival (`Empty`:
    /// None).
    #[inline]
    pub fn held(&mut self, now: SimTime, until: Option<SimTime>) {
        self.hold = match until {
            Some(t) => t.max(now + Duration(1)),
            None => SimTime::MAX,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::fifo::{Fifo, Limit};

    fn fifo_port(mbps: u64, limit: u64, overhead: u32) -> Egress {
        Egress::new(LinkQdisc::Fifo(Fifo::new(Limit::from_opts(Some(limit), None))), Rng::stream(1, "t"), DataRate::mbps(mbps), overhead)
    }

    /// Run arrivals `(time, size)` to the end; the departure times.
    fn run(port: &mut Egress, arrivals: &[(u64, u32)]) -> (Vec<u64>, usize) {
        let (mut out, mut dropped, mut refused) = (vec![], vec![], 0);
        for &(t, size) in arrivals {
            while let Some(at) = port.next_tx().filter(|&x| x.0 <= t) {
                if let Some((_, end)) = port.transmit(at, &mut dropped) {
                    out.push(end.0);
                }
            }
            refused += port.enqueue(SimTime(t), Packet::test(0, size), &mut dropped).is_err() as usize;
        }
        while let Some(at) = port.next_tx() {
            if let Some((_, end)) = port.transmit(at, &mut dropped) {
                out.push(end.0);
            }
        }
        (out, refused + dropped.len())
    }

    #[test]
    fn back_to_back_at_the_rate_with_the_overhead_then_idle_until_an_arrival() {
        // 962 B + 38 B overhead at 8 Mbit/s: 1 ms each.
        let mut port = fifo_port(8, 10, 38);
        let (out, drops) = run(&mut port, &[(0, 962), (0, 962), (500_000, 962), (10_000_000, 962)]);
        assert_eq!(out, [1_000_000, 2_000_000, 3_000_000, 11_000_000]);
        assert_eq!((drops, port.tx_pkts, port.tx_bytes), (0, 4, 4 * 962));
        assert_eq!(port.next_tx(), None);
    }

    #[test]
    fn a_shaped_class_holds_the_transmitter_and_an_arrival_asks_again() {
        // HTB at 8 Mbit/s (1500-byte bursts) on a 100 Mbit/s link: after its
        // burst the discipline answers NotBefore; the port waits until then,
        // unless a packet arrives first, which the simulator's rule
        // (Net::enqueue) offers to the discipline at once.
        let cfg: crate::config::QueueConfig =
            serde_json::from_str(r#"{"htb": {"classes": [{"name": "a", "rate_bps": 8000000, "ceil_bps": 8000000, "burst_bytes": 1500, "cburst_bytes": 1500}], "default_class": "a"}}"#).unwrap();
        let rate = DataRate::mbps(100);
        let mut port = Egress::new(crate::qos::build_on(&cfg, 1500, Some(rate)).unwrap(), Rng::stream(1, "t"), rate, 0);
        let mut dropped = vec![];
        for _ in 0..4 {
            port.enqueue(SimTime(0), Packet::test(0, 1000), &mut dropped).unwrap();
        }
        // Back to back (1000 B at 100 Mbit/s: 80 µs each) while the burst lasts, then held.
        let (mut sent, mut at) = (vec![], port.next_tx().unwrap());
        while let Some((_, end)) = port.transmit(at, &mut dropped) {
            sent.push(end.0);
            at = port.next_tx().unwrap();
        }
        assert!(!sent.is_empty() && sent.len() < 4, "{sent:?}");
        assert_eq!(sent[0], 80_000);
        let held = port.next_tx().unwrap();
        assert!(held.0 > at.0 + 100_000, "held until {held:?} from {at:?}: the shaped rate, not the link's");
        // An arrival before the hold ends is offered to the discipline at once.
        let early = SimTime(at.0 + 50_000);
        port.enqueue(early, Packet::test(0, 1000), &mut dropped).unwrap();
        assert_eq!(port.next_tx(), Some(early));
        // Everything leaves in the end, none before its hold.
        while let Some(t) = port.next_tx() {
            port.transmit(t, &mut dropped);
        }
        assert_eq!((port.tx_pkts, dropped.len()), (5, 0));
    }

    /// The counters of a port's queue, as text (they have no `PartialEq`).
    fn counted(port: &Egress) -> String {
        let mut out = String::new();
        port.qdisc.for_each_queue(&mut |c, q, b| out += &format!("{c} {q:?} {b:?}"));
        out
    }

    #[test]
    fn an_idle_fifo_passes_a_packet_as_enqueue_then_transmit_would() {
        // Byte limit 1500: a 1600-byte packet is refused by either way.
        let (mut a, mut b) = (fifo_port(8, 10, 38), fifo_port(8, 10, 38));
        for port in [&mut a, &mut b] {
            port.qdisc = LinkQdisc::Fifo(Fifo::new(Limit::from_opts(None, Some(1500))));
        }
        let mut dropped = vec![];
        for (t, size) in [(0, 962), (2_000_000, 1600), (5_000_000, 500)] {
            let now = SimTime(t);
            let mut p = Packet::test(0, size);
            // Passed, it goes on the wire as a dequeued packet does (`Net::on_wire`).
            let passed = a.pass(now, &mut p);
            if passed == Some(true) {
                a.sent(now, &p, &mut NoWatch);
            }
            let ordinary = match b.enqueue(now, Packet::test(0, size), &mut dropped) {
                Ok(()) => b.transmit(now, &mut dropped).map(|(q, _)| q),
                Err(_) => None,
            };
            assert_eq!(passed, Some(ordinary.is_some()), "at {t}");
            if let Some(q) = ordinary {
                assert_eq!(p, q);
            }
            assert_eq!((a.busy_until(), a.next_tx(), a.tx_pkts), (b.busy_until(), b.next_tx(), b.tx_pkts));
            assert_eq!(counted(&a), counted(&b));
        }
        // Transmitter busy (the 500-byte packet is on the wire until 5.538 ms)
        // or a packet waiting: not passed, nothing changed.
        let before = counted(&a);
        assert_eq!(a.pass(SimTime(5_100_000), &mut Packet::test(0, 100)), None);
        assert_eq!(counted(&a), before);
        a.enqueue(SimTime(5_100_000), Packet::test(0, 100), &mut dropped).unwrap();
        assert_eq!(a.pass(SimTime(6_000_000), &mut Packet::test(0, 100)), None);
    }

    #[test]
    fn a_plain_fifo_gives_its_head_as_dequeue_would() {
        // Two ports fed alike; one sends by `dequeue_plain`, the other by
        // `dequeue`: same packets, same counters, then both empty.
        let (mut a, mut b) = (fifo_port(8, 10, 38), fifo_port(8, 10, 38));
        let mut dropped = vec![];
        for (t, size) in [(0, 962), (100, 500), (200, 1200)] {
            for port in [&mut a, &mut b] {
                port.enqueue(SimTime(t), Packet::test(t as u32, size), &mut dropped).unwrap();
            }
        }
        for t in [5_000_000, 6_000_000, 7_000_000] {
            let now = SimTime(t);
            let p = a.dequeue_plain(now).expect("a queued packet");
            a.sent(now, &p, &mut NoWatch);
            let Some((q, _)) = b.transmit(now, &mut dropped) else { panic!("a queued packet") };
            assert_eq!(p, q);
            assert_eq!((a.busy_until(), a.tx_pkts, a.tx_bytes), (b.busy_until(), b.tx_pkts, b.tx_bytes));
            assert_eq!(counted(&a), counted(&b));
        }
        assert_eq!(a.dequeue_plain(SimTime(8_000_000)), None);
        // Not a plain FIFO: a RED profile, or another discipline, is asked by `dequeue`.
        let red: crate::config::QueueConfig = serde_json::from_str(r#"{"red": {"min_th": 5, "max_th": 15, "limit_pkts": 30}}"#).unwrap();
        let htb: crate::config::QueueConfig =
            serde_json::from_str(r#"{"htb": {"classes": [{"name": "a", "rate_bps": 8000000}], "default_class": "a"}}"#).unwrap();
        for cfg in [red, htb] {
            let rate = DataRate::mbps(100);
            let mut port = Egress::new(crate::qos::build_on(&cfg, 1500, Some(rate)).unwrap(), Rng::stream(1, "t"), rate, 0);
            port.enqueue(SimTime(0), Packet::test(0, 100), &mut dropped).unwrap();
            assert_eq!(port.dequeue_plain(SimTime(0)), None);
            assert_eq!(port.qdisc.backlog().pkts, 1, "{cfg:?}: left in the queue");
        }
    }

    #[test]
    fn a_remembered_wire_time_follows_the_frame_length_and_the_rate() {
        // 962 B + 38 B at 8 Mbit/s: 1 ms; 462 B + 38 B: 0.5 ms; at 16 Mbit/s
        // (a rate knob's change) 1000 B take 0.5 ms, and 12 B of overhead more 0.506 ms.
        let mut port = fifo_port(8, 10, 38);
        let at = |port: &mut Egress, t: u64, size: u32| port.sent(SimTime(t), &Packet::test(0, size), &mut NoWatch).0 - t;
        assert_eq!([at(&mut port, 0, 962), at(&mut port, 2_000_000, 962), at(&mut port, 4_000_000, 462)], [1_000_000, 1_000_000, 500_000]);
        assert_eq!(at(&mut port, 5_000_000, 462), 500_000);
        port.rate = DataRate::mbps(16);
        assert_eq!(at(&mut port, 6_000_000, 462), 250_000);
        port.overhead = 50;
        assert_eq!(at(&mut port, 7_000_000, 462), 256_000);
        assert_eq!(port.tx_pkts, 6);
    }

    #[test]
    fn a_full_queue_refuses_and_the_transmitter_holds_one_apart() {
        // Limit 2 packets: the first goes on the wire at once, two wait, the rest are refused.
        let mut port = fifo_port(8, 2, 0);
        let (out, drops) = run(&mut port, &[(0, 1000), (0, 1000), (0, 1000), (0, 1000), (0, 1000)]);
        assert_eq!((out.len(), drops), (3, 2));
    }
}
