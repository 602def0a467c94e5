//! Packets carry the header fields the models need and no payload.

use crate::time::SimTime;

/// IPv4 header 20 B + TCP header 20 B + timestamps option 12 B (RFC 7323).
pub const TCP_HEADER_BYTES: u32 = 52;
/// IPv4 20 B + UDP 8 B.
pub const UDP_HEADER_BYTES: u32 = 28;
pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// A TCP segment carrying bytes [seq, seq+len) and its timestamp value.
    TcpData { seq: u64, len: u32, ts_val: SimTime },
    /// A pure TCP ACK: cumulative `ack`, echoing timestamp `ts_ecr`.
    TcpAck { ack: u64, ts_ecr: SimTime },
    /// A UDP datagram of a generator, numbered from 0.
    Udp { seq: u64 },
    /// ICMP echo request (`reply == false`) or reply.
    Echo { seq: u32, reply: bool, sent: SimTime },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Index of the flow the packet belongs to.
    pub flow: u32,
    /// Source and destination node indices (the routing key).
    pub src: u32,
    pub dst: u32,
    /// IPv4 addresses, for classifiers.
    pub src_ip: u32,
    pub dst_ip: u32,
    /// IP packet size in bytes (link-layer overhead is the link's business).
    pub size: u32,
    pub proto: u8,
    pub dscp: u8,
    /// When the sending application handed the packet to its host.
    pub created: SimTime,
    pub payload: Payload,
}

impl Packet {
    /// True for packets travelling in a flow's data direction (the ones
    /// whose one-way delay is measured): TCP data, UDP, echo requests.
    pub fn is_forward(&self) -> bool {
        !matches!(self.payload, Payload::TcpAck { .. } | Payload::Echo { reply: true, .. })
    }
}
