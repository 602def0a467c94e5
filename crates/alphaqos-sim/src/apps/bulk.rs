//! A TCP connection carrying a bulk transfer (nuttcp/iperf-like, or one
//! stream of a GridFTP transfer): the sender has data from its start until
//! its stop time, or `size_bytes` of it.
//!
//! Options, as a host would run them:
//!
//! - three-way handshake (`handshake`): the sender opens with a SYN and
//!   sends data once the SYN-ACK returns; the SYN is sent again after the
//!   initial RTO (1 s, doubling, Linux's `tcp_syn_retries` = 6 tries), and
//!   a retransmitted SYN leaves the initial window at one segment (RFC
//!   5681, Section 3.1). The SYN-ACK's round trip is the first RTT sample.
//!   Off for the scenario's `flows:` (their connection is taken as open at
//!   the start time), on by default for workloads.
//! - an application-limited sender (`write`): the application writes
//!   `write_bytes` into the socket every `write_bytes * 8 / app_rate`
//!   seconds instead of all at once; the sender never sends what was not
//!   written, and sends a short segment when less than an MSS waits (as
//!   with TCP_NODELAY).
//! - quick ACKs (`quickack_segments`): the receiver acknowledges the first
//!   segments of a connection at once, without delaying (Linux
//!   `tcp_incr_quickack` with TCP_MAX_QUICKACKS = 16 on the first data
//!   segment, `net/ipv4/tcp_input.c`), so that a short transfer does not
//!   wait for the delayed-ACK timer.

use super::{App, End, Report, TcpCounters};
use crate::error::{ConfigError, Outer};
use crate::knob::{Knob, KnobName};
use crate::config::TcpConfig;
use crate::event::FlowTimer;
use crate::metrics::col;
use crate::network::{ConnStats, FlowIo};
use crate::packet::{Packet, Payload, TCP_SYN_BYTES};
use crate::recorder::{Recorder, Sampling};
use crate::tcp::cc;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use crate::tcp::{LazyTimer, Wire};
use crate::time::{Duration, SimTime};

/// Linux's `tcp_syn_retries` default: SYNs sent again before giving up.
pub const SYN_RETRIES: u32 = 6;

/// The opening handshake, sender side.
#[derive(Clone, Debug)]
struct Handshake {
    established: bool,
    /// Times the SYN was sent again.
    retries: u32,
    rto: Duration,
    timer: LazyTimer,
}

/// An application writing at a rate into the socket.
#[derive(Clone, Debug)]
pub struct AppWriter {
    /// Bytes to write in all.
    pub total: u64,
    pub chunk: u64,
    pub gap: Duration,
    written: u64,
    timer: LazyTimer,
}

impl AppWriter {
    pub fn new(total: u64, chunk: u64, gap: Duration) -> AppWriter {
        AppWriter { total, chunk, gap, written: 0, timer: LazyTimer::default() }
    }
}

pub struct BulkTcp {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    handshake: Option<Handshake>,
    writer: Option<AppWriter>,
    /// Bytes of a finite transfer (None: endless).
    size: Option<u64>,
    /// Fed block by block: the block size.
    block: Option<u64>,
    /// The SYN was sent again this many times and the connection gave up.
    pub failed: bool,
    /// When the last byte was acknowledged.
    pub finished_at: Option<SimTime>,
}

impl BulkTcp {
    /// A connection of the TCP options `cfg`; a problem is located below them.
    pub fn new(cfg: &TcpConfig) -> Result<Self, ConfigError> {
        if cfg.mss_bytes == 0 {
            return Err(ConfigError::at("mss_bytes", "must be positive"));
        }
        if cfg.rack && !cfg.sack {
            return Err(ConfigError::at("rack", "RACK loss detection needs sack: true"));
        }
        if cfg.dupthresh == 0 {
            return Err(ConfigError::at("dupthresh", "must be at least 1"));
        }
        let host = cfg.host();
        let mut receiver = TcpReceiver::new(cfg);
        receiver.set_quickack(cfg.quickack_segments.unwrap_or(0));
        receiver.set_linux(host.dsack, host.quickack_after_dup);
        if host.gro {
            receiver.set_gro(Duration(host.napi_interval_ns), host.ts_tick_ns);
        }
        Ok(BulkTcp {
            sender: TcpSender::new(cfg, cc::build(cfg.cc.as_str(), &cfg.cc_params, cfg.mss_bytes as u64).outer("cc_params")?),
            receiver,
            handshake: None,
            writer: None,
            size: cfg.size_bytes,
            block: None,
            failed: false,
            finished_at: None,
        })
    }

    /// Open with a three-way handshake; the first SYN waits `initial_rto`.
    pub fn with_handshake(mut self, initial_rto: Duration) -> Self {
        self.handshake = Some(Handshake { established: false, retries: 0, rto: initial_rto, timer: LazyTimer::default() });
        self
    }

    /// Data comes from an application writing over time.
    pub fn with_writer(mut self, w: AppWriter) -> Self {
        self.size = Some(w.total);
        self.sender.set_written(0);
        self.writer = Some(w);
        self
    }

    /// All of a finite transfer's bytes are acknowledged.
    /// Its row of the TCP series (`recorder::TCP_COLS`) at a sample;
    /// `prev` is the in-order bytes delivered at its previous row, updated.
    pub fn series_row(&self, prev: &mut u64, s: Sampling) -> [u64; 16] {
        let (snd, rcv) = (&self.sender, &self.receiver);
        let delivered = rcv.delivered();
        let goodput = s.rate(delivered - *prev);
        *prev = delivered;
        // u64::MAX stands for "none" (no RTT sample yet, ssthresh still
        // infinite) and leaves the engine as null.
        [
            s.now.as_nanos(),
            snd.bytes_acked(),
            goodput,
            snd.cwnd(),
            snd.ssthresh(),
            snd.srtt().map_or(u64::MAX, |d| d.as_nanos()),
            snd.rto().as_nanos(),
            snd.stats.retransmits,
            snd.stats.retransmitted_bytes,
            rcv.stats.spurious_retransmits,
            snd.stats.fast_retransmits,
            snd.stats.timeouts,
            rcv.stats.ooo_arrivals,
            rcv.stats.ooo_extent_max,
            rcv.stats.ooo_extent_3plus,
            rcv.stats.dup_acks_sent,
        ]
    }

    pub fn is_finished(&self) -> bool {
        self.finished_at.is_some()
    }

    /// Bytes of a finite transfer (None: endless).
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// A stream fed blocks of `block` bytes ([`App::offer`]), `first`
    /// bytes written to begin with; its size known only when the file has
    /// no more blocks ([`App::seal`]).
    pub fn fed_by_blocks(mut self, block: u64, first: u64) -> Self {
        self.sender.set_written(first);
        self.size = Some(u64::MAX);
        self.block = Some(block);
        self
    }

    /// Room for another block: its unacknowledged data is under two
    /// windows, or one block.
    fn has_room(&self, block: u64) -> bool {
        let backlog = self.sender.written() - self.sender.bytes_acked();
        backlog < (2 * self.sender.cwnd()).max(block)
    }

    /// What the event loop learns after an event.
    #[inline]
    fn report(&self) -> Report {
        let end = if self.finished_at.is_some() {
            Some(End::Finished)
        } else if self.failed {
            Some(End::Failed)
        } else {
            None
        };
        Report { delivered: self.receiver.delivered(), written: self.sender.written(), wants_data: self.block.is_some_and(|b| self.has_room(b)), end }
    }

    fn established(&self) -> bool {
        self.handshake.as_ref().is_none_or(|h| h.established)
    }

    fn send_syn(&mut self, w: &mut impl Wire) {
        let h = self.handshake.as_mut().expect("a handshake");
        let now = w.now();
        w.send(Payload::TcpSyn { ack: false, ts: now }, TCP_SYN_BYTES);
        h.timer.set(now + h.rto, FlowTimer::Rto, w);
    }

    /// The connection is open: data may flow.
    fn begin(&mut self, w: &mut impl Wire) {
        self.sender.start(w);
        if let Some(wr) = &mut self.writer {
            wr.timer.set(w.now(), FlowTimer::Send, w);
        }
    }

    fn on_write_timer(&mut self, w: &mut impl Wire) {
        let Some(wr) = &mut self.writer else { return };
        if !wr.timer.fire(FlowTimer::Send, w) || !self.sender.is_active() {
            return;
        }
        let n = wr.chunk.min(wr.total - wr.written);
        wr.written += n;
        if wr.written < wr.total {
            let at = w.now() + wr.gap;
            wr.timer.set(at, FlowTimer::Send, w);
        }
        self.sender.write(n, w);
    }

    fn check_finished(&mut self, now: SimTime) {
        if self.finished_at.is_none() && self.size.is_some_and(|s| self.sender.bytes_acked() >= s) {
            self.finished_at = Some(now);
        }
    }
}

impl BulkTcp {
    fn timer(&mut self, t: FlowTimer, io: &mut FlowIo) {
        match t {
            FlowTimer::Start => {
                if self.handshake.is_some() {
                    self.send_syn(&mut io.fwd());
                } else {
                    self.begin(&mut io.fwd());
                }
            }
            FlowTimer::Stop => {
                self.sender.stop();
                if let Some(wr) = &mut self.writer {
                    wr.timer.clear();
                }
                if let Some(h) = &mut self.handshake {
                    h.timer.clear();
                }
            }
            FlowTimer::Rto if !self.established() => {
                let w = &mut io.fwd();
                let h = self.handshake.as_mut().expect("a handshake");
                if !h.timer.fire(FlowTimer::Rto, w) {
                    return;
                }
                if h.retries >= SYN_RETRIES {
                    self.failed = true;
                    return;
                }
                h.retries += 1;
                h.rto = h.rto.saturating_mul(2);
                self.send_syn(w);
            }
            FlowTimer::Send => self.on_write_timer(&mut io.fwd()),
            FlowTimer::Wake => self.sender.on_wake(&mut io.fwd()),
            FlowTimer::Rto | FlowTimer::Pace | FlowTimer::Rack => self.sender.on_timer(t, &mut io.fwd()),
            FlowTimer::DelAck | FlowTimer::Napi => self.receiver.on_timer(t, &mut io.rev()),
            FlowTimer::Step => {}
        }
    }

    fn packet(&mut self, pkt: &Packet, io: &mut FlowIo) {
        match pkt.payload {
            Payload::TcpData { seq, len, ts_val, retx, push } => self.receiver.on_segment(seq, len, ts_val, retx, push, &mut io.rev()),
            Payload::TcpAck { ack, ts_ecr, wnd, ref sack } => {
                self.sender.on_ack(ack, ts_ecr, wnd as u64, sack, &mut io.fwd());
                self.check_finished(io.now());
            }
            // At the destination: answer every SYN (a lost SYN-ACK is
            // recovered by the SYN sent again).
            Payload::TcpSyn { ack: false, ts } => io.rev().send(Payload::TcpSyn { ack: true, ts }, TCP_SYN_BYTES),
            Payload::TcpSyn { ack: true, ts } => {
                let Some(h) = &mut self.handshake else { return };
                if h.established || self.failed {
                    return;
                }
                h.established = true;
                h.timer.clear();
                let retried = h.retries > 0;
                let w = &mut io.fwd();
                self.sender.on_handshake(w.now().since(ts), retried);
                self.begin(w);
            }
            _ => {}
        }
    }

}

impl App for BulkTcp {
    fn kind(&self) -> &'static str {
        "tcp"
    }

    fn on_timer(&mut self, t: FlowTimer, io: &mut FlowIo) -> Report {
        self.timer(t, io);
        self.report()
    }

    fn on_packet(&mut self, pkt: &Packet, io: &mut FlowIo) -> Report {
        self.packet(pkt, io);
        self.report()
    }

    fn offer(&mut self, block: u64, left: u64, io: &mut FlowIo) -> u64 {
        let mut taken = 0;
        while taken < left && self.has_room(block) {
            let n = block.min(left - taken);
            taken += n;
            self.sender.write(n, &mut io.fwd());
        }
        taken
    }

    fn seal(&mut self, now: SimTime) -> bool {
        self.size = Some(self.sender.written());
        self.check_finished(now);
        self.is_finished()
    }

    fn counters(&self) -> Option<TcpCounters> {
        let (snd, rcv) = (&self.sender, &self.receiver);
        let (rtt_samples, rtt_sum_ns) = snd.rtt_totals();
        Some(TcpCounters {
            written: snd.written(),
            bytes_acked: snd.bytes_acked(),
            delivered: rcv.delivered(),
            retransmits: snd.stats.retransmits,
            retransmitted_bytes: snd.stats.retransmitted_bytes,
            spurious_retransmits: rcv.stats.spurious_retransmits,
            timeouts: snd.stats.timeouts,
            rtt_samples,
            rtt_sum_ns,
            failed: self.failed,
        })
    }

    fn tcp_row(&self, prev: &mut u64, s: Sampling) -> Option<[u64; 16]> {
        Some(self.series_row(prev, s))
    }

    /// A TCP connection's knobs: its controller's target rate (base_flow),
    /// its maximum pacing rate and its window clamp (0: none).
    fn knob_value(&self, n: KnobName) -> Option<f64> {
        let s = &self.sender;
        Some(match n {
            KnobName::CtrBps => s.target_rate()?.as_bps() as f64,
            KnobName::PacingRateBps => s.max_pacing_rate().map_or(0.0, |r| r.as_bps() as f64),
            KnobName::CwndClampBytes => match s.cwnd_clamp() {
                u64::MAX => 0.0,
                c => c as f64,
            },
            _ => return None,
        })
    }

    fn set_knob(&mut self, k: Knob) -> bool {
        let s = &mut self.sender;
        match k {
            Knob::CtrBps(r) if s.target_rate().is_some() => s.controller_mut().set_target_rate(r),
            Knob::PacingRateBps(r) => {
                s.set_max_pacing_rate((r.as_bps() > 0).then_some(r));
            }
            Knob::CwndClampBytes(b) => {
                s.set_cwnd_clamp(if b == 0 { u64::MAX } else { b });
            }
            _ => return false,
        }
        true
    }

    fn measure(&self, what: &str) -> Option<u64> {
        let s = &self.sender;
        Some(match what {
            "srtt_ns" => s.srtt().map_or(0, |d| d.as_nanos()),
            "cwnd_bytes" => s.cwnd(),
            "bytes_acked" => s.bytes_acked(),
            "retransmits" => s.stats.retransmits,
            "rtt_samples" => s.rtt_totals().0,
            "rtt_sum_ns" => s.rtt_totals().1,
            _ => return None,
        })
    }

    fn delivered(&self, _st: &ConnStats) -> u64 {
        self.receiver.delivered()
    }

    fn sample(&self, key: u32, _st: &ConnStats, prev: &mut u64, s: Sampling, rec: &mut Recorder) {
        debug_assert_eq!(crate::recorder::TCP_COLS[2], col::GOODPUT_BPS);
        rec.tcp.row(key, &self.series_row(prev, s));
    }

}
