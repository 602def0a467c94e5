//! Applications: the traffic sources and sinks of a flow. Each flow is one
//! application between a source and a destination host; packets of the
//! flow's data direction go source -> destination, replies and ACKs back.

pub mod bulk;
pub mod cbr;
pub mod ping;
pub mod poisson;

use crate::event::FlowTimer;
use crate::packet::Packet;
use crate::sim::FlowIo;

pub enum App {
    Tcp(Box<bulk::BulkTcp>),
    Udp(cbr::Cbr),
    Poisson(poisson::PoissonSource),
    Ping(ping::Ping),
}

impl App {
    pub fn kind(&self) -> &'static str {
        match self {
            App::Tcp(_) => "tcp",
            App::Udp(_) => "udp",
            App::Poisson(_) => "poisson",
            App::Ping(_) => "ping",
        }
    }

    /// A timer of this flow fired. `io.fwd()` sends from the flow's source,
    /// `io.rev()` from its destination.
    pub fn on_timer(&mut self, t: FlowTimer, io: &mut FlowIo) {
        match self {
            App::Tcp(a) => a.on_timer(t, io),
            App::Udp(a) => a.on_timer(t, &mut io.fwd()),
            App::Poisson(a) => a.on_timer(t, &mut io.fwd()),
            App::Ping(a) => a.on_timer(t, &mut io.fwd()),
        }
    }

    /// A packet of this flow reached its destination node (`pkt.dst`).
    pub fn on_packet(&mut self, pkt: &Packet, io: &mut FlowIo) {
        match self {
            App::Tcp(a) => a.on_packet(pkt, io),
            App::Ping(a) => a.on_packet(pkt, io),
            App::Udp(_) | App::Poisson(_) => {} // sinks only count (done by the network)
        }
    }
}
