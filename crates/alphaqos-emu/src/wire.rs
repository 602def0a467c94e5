//! Reading the header fields the engine's classifiers need from a real
//! Ethernet frame: IPv4 addresses, protocol, DSCP, ports (RFC 791 Section
//! 3.1, RFC 793 Section 3.1, RFC 768). A frame that is not IPv4 (ARP,
//! IPv6) goes through the link too, as protocol 0 with no addresses, so
//! that neighbour discovery works across the emulated path.

use alphaqos_sim::packet::{Color, Packet, Payload};
use alphaqos_sim::SimTime;

pub const ETH_HLEN: usize = 14;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_8021Q: u16 = 0x8100;

/// What identifies a flow: (source, destination, protocol, ports).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src_ip: u32,
    pub dst_ip: u32,
    pub proto: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

impl FlowKey {
    /// `10.0.0.1:5201>10.0.0.2:40000/6`; non-IP frames are `l2/0xETHERTYPE`.
    pub fn name(&self, ethertype: u16) -> String {
        if self.proto == 0 && self.src_ip == 0 && self.dst_ip == 0 {
            return format!("l2/0x{ethertype:04x}");
        }
        let ip = |a: u32| format!("{}.{}.{}.{}", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
        format!("{}:{}>{}:{}/{}", ip(self.src_ip), self.src_port, ip(self.dst_ip), self.dst_port, self.proto)
    }
}

/// The engine's view of a frame: its IP size (the frame less the Ethernet
/// header, as the engine counts packets), the classifier fields, and the
/// slot holding its bytes carried in the payload's sequence number (the
/// disciplines never read the payload). Returns the flow key and the
/// ethertype too.
pub fn parse(frame: &[u8], slot: u64, now: SimTime) -> (Packet, FlowKey, u16) {
    let mut key = FlowKey { src_ip: 0, dst_ip: 0, proto: 0, src_port: 0, dst_port: 0 };
    let mut dscp = 0;
    let mut l3 = ETH_HLEN;
    let mut ethertype = if frame.len() >= ETH_HLEN { u16::from_be_bytes([frame[12], frame[13]]) } else { 0 };
    if ethertype == ETH_P_8021Q && frame.len() >= ETH_HLEN + 4 {
        ethertype = u16::from_be_bytes([frame[16], frame[17]]);
        l3 += 4;
    }
    if ethertype == ETH_P_IP && frame.len() >= l3 + 20 && frame[l3] >> 4 == 4 {
        let ip = &frame[l3..];
        let ihl = ((ip[0] & 0x0f) as usize) * 4;
        dscp = ip[1] >> 2;
        key.proto = ip[9];
        key.src_ip = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
        key.dst_ip = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
        let fragment_offset = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
        if matches!(key.proto, 6 | 17) && fragment_offset == 0 && ip.len() >= ihl + 4 {
            key.src_port = u16::from_be_bytes([ip[ihl], ip[ihl + 1]]);
            key.dst_port = u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]);
        }
    }
    let pkt = Packet {
        flow: 0,
        gen: 0,
        src: 0,
        dst: 1,
        src_ip: key.src_ip,
        dst_ip: key.dst_ip,
        size: frame.len().saturating_sub(ETH_HLEN).max(1) as u32,
        proto: key.proto,
        dscp,
        src_port: key.src_port,
        dst_port: key.dst_port,
        fclass: 0,
        color: Color::Green,
        created: now,
        enqueued: now,
        fwd: true,
        payload: Payload::Udp { seq: slot },
    };
    (pkt, key, ethertype)
}

/// The slot a packet's bytes are in (see [`parse`]).
pub fn slot_of(pkt: &Packet) -> usize {
    match pkt.payload {
        Payload::Udp { seq } => seq as usize,
        _ => unreachable!("the emulator's packets carry their slot"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + TCP header: 10.0.0.1:5201 -> 10.0.0.2:40000, DSCP 46.
    pub fn tcp_frame(len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
        f[14] = 0x45;
        f[15] = 46 << 2;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&5201u16.to_be_bytes());
        f[36..38].copy_from_slice(&40000u16.to_be_bytes());
        f
    }

    #[test]
    fn reads_ipv4_tcp_fields_and_sizes() {
        let (p, key, et) = parse(&tcp_frame(1514), 7, SimTime(5));
        assert_eq!((p.size, p.proto, p.dscp, p.src_port, p.dst_port), (1500, 6, 46, 5201, 40000));
        assert_eq!((p.src_ip, p.dst_ip), (0x0a00_0001, 0x0a00_0002));
        assert_eq!((slot_of(&p), et), (7, 0x0800));
        assert_eq!(key.name(et), "10.0.0.1:5201>10.0.0.2:40000/6");
    }

    #[test]
    fn other_frames_pass_as_protocol_zero() {
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let (p, key, et) = parse(&arp, 0, SimTime(0));
        assert_eq!((p.proto, p.src_ip, p.size), (0, 0, 28));
        assert_eq!(key.name(et), "l2/0x0806");
        // A truncated IPv4 header is not read.
        let (p, _, _) = parse(&tcp_frame(60)[..30], 0, SimTime(0));
        assert_eq!(p.proto, 0);
    }
}
