//! The link tap: the packets an interface sends, written to a pcap file as
//! real headers (Ethernet, IPv4, TCP/UDP/ICMP) with the capture truncated
//! after them, so that tcpdump, tshark and tcptrace read a simulated link
//! as they read a real one.
//!
//! Format: pcap with nanosecond timestamps (magic `0xa1b23c4d`, as
//! `tcpdump --time-stamp-precision=nano` writes; libpcap's
//! `pcap-savefile(5)`), link type 1 (Ethernet). Each record holds:
//!
//! - Ethernet II (14 B): locally administered MACs `02:00:00:00:hi:lo`
//!   from the sending and receiving node indices, type 0x0800;
//! - IPv4 (RFC 791, 20 B): DSCP, total length = the packet's IP size,
//!   an identification counter per tap, DF, TTL 64, the protocol, the
//!   flow's addresses and a correct header checksum;
//! - TCP (RFC 9293) with the options the engine's sizes account for: data
//!   and ACK segments carry NOP NOP TS (RFC 7323, 12 B; TSval in
//!   milliseconds of simulated time) and ACKs their SACK blocks (RFC 2018,
//!   NOP NOP + 2 + 8 n B); SYNs carry MSS, SACK-permitted, TS, NOP, WS.
//!   Sequence and acknowledgment numbers are the engine's byte offsets
//!   plus one (the SYN takes sequence number 0), wrapped to 32 bits; the
//!   window is the advertised one scaled by 2^7 (the SYN's WS option). The
//!   TCP checksum is left 0 (the payload is not captured);
//! - UDP (RFC 768, 8 B), length from the IP size; ICMP echo (RFC 792, 8 B,
//!   checksum over the header only).
//!
//! `orig_len` is the frame's full length (14 + IP size); `incl_len` stops
//! after the transport header. Tested with Debian's tcpdump
//! (`tests/test_tap.py`); `trace.rs` reads these files back.

use crate::error::ConfigError;
use crate::packet::{Packet, Payload, PROTO_ICMP, PROTO_TCP, PROTO_UDP};
use crate::time::SimTime;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
pub const PCAP_MAGIC_US: u32 = 0xa1b2_c3d4;
pub const LINKTYPE_ETHERNET: u32 = 1;
/// The snapshot length written in the header: the longest headers fit.
pub const SNAPLEN: u32 = 256;
/// Window scale the SYN announces; windows are written divided by 2^7.
pub const WSCALE: u32 = 7;
const ETH_LEN: usize = 14;

/// A pcap file being written.
pub struct Tap {
    out: BufWriter<File>,
    ip_id: u16,
    pub pkts: u64,
    buf: Vec<u8>,
}

impl Tap {
    /// The pcap file at `path` (and its directory); a failure is a problem
    /// of the field that names the file (the caller locates it: `tap_ab`).
    pub fn create(path: &Path) -> Result<Tap, ConfigError> {
        let cannot = |p: &Path, e: std::io::Error| ConfigError::new(format!("cannot create {}: {e}", p.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| cannot(dir, e))?;
        }
        let f = File::create(path).map_err(|e| cannot(path, e))?;
        let mut out = BufWriter::with_capacity(1 << 16, f);
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&PCAP_MAGIC_NS.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&SNAPLEN.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h).map_err(|e| ConfigError::new(format!("cannot write {}: {e}", path.display())))?;
        Ok(Tap { out, ip_id: 0, pkts: 0, buf: Vec::with_capacity(128) })
    }

    /// Record `pkt` leaving node `from` towards node `to` at `now`.
    pub fn write(&mut self, now: SimTime, from: u32, to: u32, pkt: &Packet) {
        self.ip_id = self.ip_id.wrapping_add(1);
        encode_frame(&mut self.buf, from, to, self.ip_id, pkt);
        let ns = now.as_nanos();
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&(self.buf.len() as u32).to_le_bytes());
        rec[12..16].copy_from_slice(&(ETH_LEN as u32 + pkt.size).to_le_bytes());
        // A failed write shows as a short file; `flush` reports it.
        let _ = self.out.write_all(&rec).and_then(|_| self.out.write_all(&self.buf));
        self.pkts += 1;
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// RFC 1071's ones' complement sum.
pub fn ip_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in bytes.chunks(2) {
        sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn mac(node: u32) -> [u8; 6] {
    let b = node.to_be_bytes();
    [0x02, 0, b[0], b[1], b[2], b[3]]
}

/// Sequence numbers on the wire: the engine's offset + 1, mod 2^32.
#[inline]
pub fn wire_seq(x: u64) -> u32 {
    x.wrapping_add(1) as u32
}

fn ms(t: SimTime) -> u32 {
    (t.as_nanos() / 1_000_000) as u32
}

/// The frame's headers (Ethernet, IPv4, transport) into `buf`.
pub fn encode_frame(buf: &mut Vec<u8>, from: u32, to: u32, ip_id: u16, pkt: &Packet) {
    buf.clear();
    buf.extend_from_slice(&mac(to));
    buf.extend_from_slice(&mac(from));
    buf.extend_from_slice(&0x0800u16.to_be_bytes());
    let ip_at = buf.len();
    buf.extend_from_slice(&[0x45, pkt.dscp << 2]);
    buf.extend_from_slice(&(pkt.size.min(65535) as u16).to_be_bytes());
    buf.extend_from_slice(&ip_id.to_be_bytes());
    buf.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
    buf.extend_from_slice(&[64, pkt.proto, 0, 0]);
    buf.extend_from_slice(&pkt.src_ip.to_be_bytes());
    buf.extend_from_slice(&pkt.dst_ip.to_be_bytes());
    let c = ip_checksum(&buf[ip_at..ip_at + 20]);
    buf[ip_at + 10..ip_at + 12].copy_from_slice(&c.to_be_bytes());
    match pkt.proto {
        PROTO_TCP => encode_tcp(buf, pkt),
        PROTO_UDP => {
            buf.extend_from_slice(&pkt.src_port.to_be_bytes());
            buf.extend_from_slice(&pkt.dst_port.to_be_bytes());
            buf.extend_from_slice(&(pkt.size.saturating_sub(20).min(65535) as u16).to_be_bytes());
            buf.extend_from_slice(&[0, 0]);
        }
        PROTO_ICMP => {
            let (kind, seq) = match pkt.payload {
                Payload::Echo { seq, reply, .. } => (if reply { 0u8 } else { 8 }, seq as u16),
                _ => (8, 0),
            };
            let at = buf.len();
            buf.extend_from_slice(&[kind, 0, 0, 0]);
            buf.extend_from_slice(&(pkt.flow as u16).to_be_bytes());
            buf.extend_from_slice(&seq.to_be_bytes());
            let c = ip_checksum(&buf[at..at + 8]);
            buf[at + 2..at + 4].copy_from_slice(&c.to_be_bytes());
        }
        _ => {}
    }
}

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

fn encode_tcp(buf: &mut Vec<u8>, pkt: &Packet) {
    let at = buf.len();
    buf.extend_from_slice(&pkt.src_port.to_be_bytes());
    buf.extend_from_slice(&pkt.dst_port.to_be_bytes());
    // seq, ack, offset+flags, window: filled below.
    buf.extend_from_slice(&[0; 16]);
    let (seq, ack, flags, wnd): (u32, u32, u8, u32);
    match pkt.payload {
        Payload::TcpData { seq: s, ts_val, push, .. } => {
            // The receiver sends no data: its sequence stays at 1.
            (seq, ack, flags, wnd) = (wire_seq(s), 1, ACK | if push { PSH } else { 0 }, 65535);
            buf.extend_from_slice(&[1, 1, 8, 10]);
            buf.extend_from_slice(&ms(ts_val).to_be_bytes());
            buf.extend_from_slice(&0u32.to_be_bytes());
        }
        Payload::TcpAck { ack: a, ts_ecr, wnd: w, sack } => {
            (seq, ack, flags, wnd) = (1, wire_seq(a), ACK, (w >> WSCALE).min(65535) as u32);
            buf.extend_from_slice(&[1, 1, 8, 10]);
            buf.extend_from_slice(&0u32.to_be_bytes());
            buf.extend_from_slice(&ms(ts_ecr).to_be_bytes());
            if !sack.is_empty() {
                let blocks: Vec<(u64, u64)> = sack.iter(a).collect();
                buf.extend_from_slice(&[1, 1, 5, 2 + 8 * blocks.len() as u8]);
                for (s, e) in blocks {
                    buf.extend_from_slice(&wire_seq(s).to_be_bytes());
                    buf.extend_from_slice(&wire_seq(e).to_be_bytes());
                }
            }
        }
        Payload::TcpSyn { ack: is_synack, ts } => {
            (seq, ack, flags, wnd) = (0, if is_synack { 1 } else { 0 }, if is_synack { SYN | ACK } else { SYN }, 65535);
            let mss = pkt.size.saturating_sub(60).max(1460).min(65535) as u16; // not carried: a plausible MSS
            buf.extend_from_slice(&[2, 4]);
            buf.extend_from_slice(&mss.to_be_bytes());
            buf.extend_from_slice(&[4, 2, 8, 10]);
            let (val, ecr) = if is_synack { (ms(ts), ms(ts)) } else { (ms(ts), 0) };
            buf.extend_from_slice(&val.to_be_bytes());
            buf.extend_from_slice(&ecr.to_be_bytes());
            buf.extend_from_slice(&[1, 3, 3, WSCALE as u8]);
        }
        _ => (seq, ack, flags, wnd) = (0, 0, FIN, 0),
    }
    let hdr = buf.len() - at;
    buf[at + 4..at + 8].copy_from_slice(&seq.to_be_bytes());
    buf[at + 8..at + 12].copy_from_slice(&ack.to_be_bytes());
    buf[at + 12] = ((hdr / 4) as u8) << 4;
    buf[at + 13] = flags;
    buf[at + 14..at + 16].copy_from_slice(&(wnd as u16).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{SackBlocks, TCP_HEADER_BYTES, TCP_SYN_BYTES};

    fn tcp(payload: Payload, size: u32) -> Packet {
        let mut p = Packet::test(0, size);
        p.proto = PROTO_TCP;
        p.src_ip = 0x0A00_0001;
        p.dst_ip = 0x0A00_0102;
        p.src_port = 40000;
        p.dst_port = 5001;
        p.payload = payload;
        p
    }

    #[test]
    fn headers_have_the_sizes_the_engine_charges() {
        let mut buf = vec![];
        let data = tcp(Payload::TcpData { seq: (1u64 << 32) + 10, len: 1448, ts_val: SimTime(5_000_000), retx: false, push: true }, 1448 + TCP_HEADER_BYTES);
        encode_frame(&mut buf, 1, 2, 7, &data);
        assert_eq!(buf.len(), 14 + TCP_HEADER_BYTES as usize);
        assert_eq!(ip_checksum(&buf[14..34]), 0, "a valid IPv4 header sums to 0");
        assert_eq!(u16::from_be_bytes([buf[16], buf[17]]) as u32, 1448 + TCP_HEADER_BYTES);
        // 2^32 + 10 wraps to 11.
        assert_eq!(u32::from_be_bytes(buf[38..42].try_into().unwrap()), 11);
        let mut sack = SackBlocks::default();
        sack.push(1000, 3000, 4000);
        sack.push(1000, 5000, 6000);
        let ack = tcp(Payload::TcpAck { ack: 1000, ts_ecr: SimTime::ZERO, wnd: 1 << 20, sack }, TCP_HEADER_BYTES + sack.option_bytes());
        encode_frame(&mut buf, 2, 1, 8, &ack);
        assert_eq!(buf.len(), 14 + ack.size as usize);
        let syn = tcp(Payload::TcpSyn { ack: false, ts: SimTime::ZERO }, TCP_SYN_BYTES);
        encode_frame(&mut buf, 1, 2, 9, &syn);
        assert_eq!(buf.len(), 14 + TCP_SYN_BYTES as usize);
        assert_eq!(buf[14 + 20 + 12] >> 4, 10, "data offset 40 B");
    }
}
