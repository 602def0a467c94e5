//! A bulk TCP transfer (nuttcp/iperf-like): the sender always has data
//! (or `size_bytes` of it) from its start until its stop time.

use crate::config::TcpConfig;
use crate::event::FlowTimer;
use crate::packet::{Packet, Payload};
use crate::tcp::cc;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use crate::sim::FlowIo;

pub struct BulkTcp {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
}

impl BulkTcp {
    pub fn new(cfg: &TcpConfig) -> Result<Self, String> {
        if cfg.mss_bytes == 0 {
            return Err("mss_bytes must be positive".into());
        }
        if cfg.rto_style != "linux" && cfg.rto_style != "rfc6298" {
            return Err(format!("rto_style: '{}' is neither linux nor rfc6298", cfg.rto_style));
        }
        if cfg.rack && !cfg.sack {
            return Err("rack needs sack".into());
        }
        if cfg.dupthresh == 0 {
            return Err("dupthresh must be at least 1".into());
        }
        Ok(BulkTcp { sender: TcpSender::new(cfg, cc::build(&cfg.cc, &cfg.cc_params, cfg.mss_bytes as u64)?), receiver: TcpReceiver::new(cfg) })
    }

    pub fn on_timer(&mut self, t: FlowTimer, io: &mut FlowIo) {
        match t {
            FlowTimer::Start => self.sender.start(&mut io.fwd()),
            FlowTimer::Stop => self.sender.stop(),
            FlowTimer::Wake => self.sender.on_wake(&mut io.fwd()),
            FlowTimer::Rto | FlowTimer::Pace | FlowTimer::Rack => self.sender.on_timer(t, &mut io.fwd()),
            FlowTimer::DelAck => self.receiver.on_timer(t, &mut io.rev()),
            FlowTimer::Send | FlowTimer::Step => {}
        }
    }

    pub fn on_packet(&mut self, pkt: &Packet, io: &mut FlowIo) {
        match pkt.payload {
            Payload::TcpData { seq, len, ts_val, retx } => self.receiver.on_segment(seq, len, ts_val, retx, &mut io.rev()),
            Payload::TcpAck { ack, ts_ecr, wnd, ref sack } => self.sender.on_ack(ack, ts_ecr, wnd, sack, &mut io.fwd()),
            _ => {}
        }
    }
}
