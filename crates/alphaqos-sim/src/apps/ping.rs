//! ICMP echo: a request every `interval` from the source; the destination
//! answers at once with a reply of the same size; the source records the
//! round-trip time of every probe (None if no reply came).

use crate::event::FlowTimer;
use crate::packet::{Packet, Payload};
use crate::network::FlowIo;
use super::{App, Report};
use crate::tcp::{LazyTimer, Wire};
use crate::time::{Duration, SimTime};

pub struct Ping {
    interval: Duration,
    size: u32,
    active: bool,
    send: LazyTimer,
    /// (send time, round-trip time) per probe, indexed by sequence number.
    pub probes: Vec<(SimTime, Option<Duration>)>,
}

impl Ping {
    pub fn new(interval: Duration, size: u32) -> Self {
        Ping { interval, size, active: false, send: LazyTimer::default(), probes: Vec::new() }
    }

    pub fn on_timer(&mut self, t: FlowTimer, w: &mut impl Wire) {
        match t {
            FlowTimer::Start => {
                self.active = true;
                self.send.set(w.now(), FlowTimer::Send, w);
            }
            FlowTimer::Send if self.active => {
                if !self.send.fire(FlowTimer::Send, w) {
                    return;
                }
                let now = w.now();
                let seq = self.probes.len() as u32;
                self.probes.push((now, None));
                w.send(Payload::Echo { seq, reply: false, sent: now }, self.size);
                self.send.set(now + self.interval, FlowTimer::Send, w);
            }
            FlowTimer::Stop => {
                self.active = false;
                self.send.clear();
            }
            _ => {}
        }
    }

    /// At the destination: answer requests. At the source: record replies.
    pub fn on_packet(&mut self, pkt: &Packet, io: &mut FlowIo) {
        if let Payload::Echo { seq, reply, sent } = pkt.payload {
            let mut rev = io.rev();
            if !reply {
                rev.send(Payload::Echo { seq, reply: true, sent }, pkt.size);
            } else if let Some(p) = self.probes.get_mut(seq as usize) {
                p.1 = Some(rev.now().since(sent));
            }
        }
    }
}

impl App for Ping {
    fn kind(&self) -> &'static str {
        "ping"
    }
    fn on_timer(&mut self, t: FlowTimer, io: &mut FlowIo) -> Report {
        Ping::on_timer(self, t, &mut io.fwd());
        Report::default()
    }
    fn on_packet(&mut self, pkt: &Packet, io: &mut FlowIo) -> Report {
        Ping::on_packet(self, pkt, io);
        Report::default()
    }
    fn probes(&self) -> Option<&[(SimTime, Option<Duration>)]> {
        Some(&self.probes)
    }
}
