//! Nodes, full-duplex point-to-point links, and static shortest-path routes.
//!
//! A link is two interfaces, one per direction; each has its rate,
//! propagation delay, MTU, per-frame overhead and egress queue discipline.
//! Routes are computed once by breadth-first search (fewest hops, ties
//! broken by link order in the scenario); only routers forward, so a path
//! never crosses a host.

use crate::config::Impairment;
use crate::packet::{prefetch, Packet};
use crate::egress::{Egress, TxWatch};
use crate::rng::Rng;
use crate::time::{Duration, SimTime};
use std::collections::VecDeque;

pub const NO_ROUTE: u32 = u32::MAX;

pub struct Node {
    pub name: String,
    pub router: bool,
    pub addr: u32,
    /// Outgoing interfaces, in link order.
    pub ifaces: Vec<u32>,
}

pub struct Iface {
    /// "<node>-><peer>"
    pub name: String,
    pub node: u32,
    pub peer: u32,
    pub delay: Duration,
    pub mtu: u32,
    /// The queue-plus-transmitter (discipline, its random stream
    /// "queue:<name>", rate, overhead, busy time, counters), the one trace
    /// replay and the emulator run too; what only the simulator has (pipe,
    /// impairments, monitor, tap, TSQ in `Net`) stays around it as hooks.
    pub egress: Egress,
    /// The wire impairments' own stream ("impair:<name>").
    pub impair_rng: Rng,
    /// When the live `TxDone` event fires (SimTime::MAX: none): the end of
    /// the frame on the wire, or when a shaping discipline can send again.
    pub tx_event: SimTime,
    /// Frames propagating towards the peer, in order of arrival time.
    pub pipe: VecDeque<(SimTime, Packet)>,
    /// When the pipe's live `Deliver` event fires (SimTime::MAX: none).
    pub next_deliver: SimTime,
    /// The wire's loss and reordering (None: it has neither, the usual case).
    pub impair: Option<Impairment>,
    /// Frames lost on the wire (impairment).
    pub lost_pkts: u64,
    /// Reorder and arrival-length counters (opt-in: `monitor_*`).
    pub monitor: Option<Box<crate::monitor::Monitor>>,
    /// A pcap of what the interface sends (opt-in: `tap_*`).
    pub tap: Option<Box<crate::tap::Tap>>,
}

/// An interface reads as its egress port (`ifc.qdisc`, `ifc.rate`,
/// `ifc.tx_pkts`, ...): the readers of results and knobs need not know the
/// port is a part of it.
impl std::ops::Deref for Iface {
    type Target = Egress;
    #[inline]
    fn deref(&self) -> &Egress {
        &self.egress
    }
}

impl std::ops::DerefMut for Iface {
    #[inline]
    fn deref_mut(&mut self) -> &mut Egress {
        &mut self.egress
    }
}

/// The simulator's observers of an interface's departures, called by the
/// generic transmit path at one point ([`Egress::transmit_watched`]).
pub struct IfaceWatch<'a> {
    pub node: u32,
    pub peer: u32,
    pub monitor: &'a mut Option<Box<crate::monitor::Monitor>>,
    pub tap: &'a mut Option<Box<crate::tap::Tap>>,
}

impl TxWatch for IfaceWatch<'_> {
    #[inline(always)]
    fn active(&self) -> bool {
        self.monitor.is_some() || self.tap.is_some()
    }
    fn on_tx(&mut self, now: SimTime, pkt: &Packet, band: u8) {
        if let Some(m) = self.monitor {
            m.on_send(pkt, band);
        }
        if let Some(t) = self.tap {
            t.write(now, self.node, self.peer, pkt);
        }
    }
}

impl Iface {
    /// `pkt`, just dequeued, goes on the wire at `now` ([`Egress::sent`],
    /// its monitor and tap told): the time its last bit leaves.
    #[inline(always)]
    pub fn sent(&mut self, now: SimTime, pkt: &Packet) -> SimTime {
        let mut watch = IfaceWatch { node: self.node, peer: self.peer, monitor: &mut self.monitor, tap: &mut self.tap };
        self.egress.sent(now, pkt, &mut watch)
    }
}

/// `next_hop[src * n + dst]`: the interface of `src` on the path to `dst`.
pub fn compute_routes(nodes: &[Node], ifaces: &[Iface]) -> Vec<u32> {
    let n = nodes.len();
    let mut table = vec![NO_ROUTE; n * n];
    let mut first = vec![NO_ROUTE; n];
    let mut queue = VecDeque::new();
    for src in 0..n {
        first.iter_mut().for_each(|f| *f = NO_ROUTE);
        queue.clear();
        for &i in &nodes[src].ifaces {
            let peer = ifaces[i as usize].peer as usize;
            if peer != src && first[peer] == NO_ROUTE {
                first[peer] = i;
                queue.push_back(peer);
            }
        }
        while let Some(u) = queue.pop_front() {
            if !nodes[u].router {
                continue; // hosts do not forward
            }
            for &i in &nodes[u].ifaces {
                let v = ifaces[i as usize].peer as usize;
                if v != src && first[v] == NO_ROUTE {
                    first[v] = first[u];
                    queue.push_back(v);
                }
            }
        }
        table[src * n..(src + 1) * n].copy_from_slice(&first);
    }
    table
}

/// Parse dotted IPv4.
pub fn parse_ipv4(s: &str) -> Option<u32> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut a = 0u32;
    for p in parts {
        a = (a << 8) | p.parse::<u8>().ok()? as u32;
    }
    Some(a)
}

impl Iface {
    /// Put a frame arriving at `at` into the pipe, keeping arrival order
    /// (a reordered frame lands behind later ones). Returns true if the
    /// pipe needs a `Deliver` event at `at` (it became the earliest).
    pub fn push_pipe(&mut self, at: SimTime, pkt: Packet) -> bool {
        // Nearly always the latest: appended without searching.
        if self.pipe.back().is_some_and(|&(t, _)| t > at) {
            self.insert_in_pipe(at, pkt);
        } else {
            self.pipe.push_back((at, pkt));
            // The slot the next frame takes (or past the buffer's end).
            if let Some(last) = self.pipe.back() {
                prefetch((last as *const (SimTime, Packet)).wrapping_add(1));
            }
        }
        if at < self.next_deliver {
            self.next_deliver = at;
            return true;
        }
        false
    }

    /// A reordered frame: behind the frames that arrive at or before `at`.
    /// Apart, so that the common append needs no registers saved for it.
    #[cold]
    #[inline(never)]
    fn insert_in_pipe(&mut self, at: SimTime, pkt: Packet) {
        let pos = self.pipe.iter().rposition(|&(t, _)| t <= at).map_or(0, |p| p + 1);
        self.pipe.insert(pos, (at, pkt));
    }
}
