//! Packets carry the header fields the models need and no payload.

use crate::time::SimTime;

/// IPv4 header 20 B + TCP header 20 B + timestamps option 12 B (RFC 7323).
pub const TCP_HEADER_BYTES: u32 = 52;
/// A SYN or SYN-ACK: IPv4 20 B + TCP 20 B + options 20 B (MSS 4,
/// SACK-permitted 2, timestamps 10, window scale 3, one NOP), as Linux sends.
pub const TCP_SYN_BYTES: u32 = 60;
/// IPv4 20 B + UDP 8 B.
pub const UDP_HEADER_BYTES: u32 = 28;
pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// Ask the processor to load the cache lines of the `T` at `at` ahead of
/// its use: a hint, with no effect on any result, and harmless at an
/// address past the end of a buffer (a prefetch never faults). The deep
/// rings of packets (a bandwidth-delay product of queue, a long link's
/// pipe: megabytes, far beyond the caches) are read and written one entry
/// per event, the entry long evicted since its slot was last used; asked
/// for one event ahead, the load overlaps the work in between instead of
/// stalling it (Intel 64 and IA-32 Architectures Optimization Reference
/// Manual, "Software prefetching").
#[inline(always)]
pub fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = at as *const i8;
        let size = std::mem::size_of::<T>();
        let mut off = 0;
        while off < size {
            // SAFETY: a prefetch reads nothing into the program and never faults.
            unsafe { _mm_prefetch(p.wrapping_add(off), _MM_HINT_T0) };
            off += 64;
        }
        // The last line, when `T` straddles one more than its size needs.
        unsafe { _mm_prefetch(p.wrapping_add(size - 1), _MM_HINT_T0) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// The colour a meter gives a packet (RFC 2697/2698): its loss priority.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Color {
    #[default]
    Green = 0,
    Yellow = 1,
    Red = 2,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// A TCP segment carrying bytes [seq, seq+len) and its timestamp value;
    /// `retx` marks a retransmission (for the receiver's counters only);
    /// `push` (PSH) the segment that ends what the application had written.
    TcpData { seq: u64, len: u32, ts_val: SimTime, retx: bool, push: bool },
    /// A pure TCP ACK: cumulative `ack`, echoing timestamp `ts_ecr`, the
    /// advertised window `wnd` in bytes (already scaled: at most 65,535
    /// << 14, so 32 bits hold it) and SACK blocks.
    TcpAck { ack: u64, ts_ecr: SimTime, wnd: u32, sack: SackBlocks },
    /// A UDP datagram of a generator, numbered from 0.
    Udp { seq: u64 },
    /// A connection's opening SYN (`ack == false`) or the SYN-ACK that
    /// answers it, echoing the SYN's timestamp (RFC 7323) in `ts`.
    TcpSyn { ack: bool, ts: SimTime },
    /// ICMP echo request (`reply == false`) or reply.
    Echo { seq: u32, reply: bool, sent: SimTime },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The slot of the connection the packet belongs to
    /// ([`crate::conn::ConnId::idx`]) ...
    pub flow: u32,
    /// ... and the generation of that slot's occupant.
    pub gen: u32,
    /// Source and destination node indices (the routing key).
    pub src: u32,
    pub dst: u32,
    /// IPv4 addresses, for classifiers.
    pub src_ip: u32,
    pub dst_ip: u32,
    /// IP packet size in bytes (link-layer overhead is the link's business).
    pub size: u32,
    pub proto: u8,
    /// DiffServ code point (RFC 2474), 0..63, as the sending host marked it.
    pub dscp: u8,
    /// Transport ports (0 for ICMP).
    pub src_port: u16,
    pub dst_port: u16,
    /// Forwarding class set by a router's classifier (index into the egress
    /// scheduler's queues; 0 is the default class).
    pub fclass: u8,
    /// Colour (loss priority) set by a meter: see [`Color`].
    pub color: Color,
    /// When the sending application handed the packet to its host.
    pub created: SimTime,
    /// When the queue now holding the packet admitted it (set by the queue;
    /// sojourn times and CoDel read it).
    pub enqueued: SimTime,
    /// It travels in its connection's data direction, source to destination
    /// (TCP data, SYN, UDP, echo requests: the packets whose one-way delay
    /// is measured); false for replies (ACKs, SYN-ACKs, echo replies).
    /// Stamped by the side that sends it (`FlowIo::fwd` / `rev`), not read
    /// from the payload.
    pub fwd: bool,
    pub payload: Payload,
}

/// Up to three SACK blocks (RFC 2018): with the timestamps option, three
/// fit in the 40 bytes of TCP options. Stored as 32-bit offsets from a base
/// (the ACK's cumulative acknowledgment), as the wire carries 32-bit
/// sequence numbers; it keeps packets small to copy. A D-SACK block (RFC
/// 2883) may lie below the base: offsets are signed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    n: Count,
    blocks: [(i32, i32); 3],
}

/// How many SACK blocks there are: an enum of four values, not a `u8`, so
/// that [`Payload`]'s tag fits in the values it leaves unused, a payload of
/// 48 bytes instead of 56 (a packet of 104 instead of 112, in every queue's
/// ring and every link's pipe).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
enum Count {
    #[default]
    Zero,
    One,
    Two,
    Three,
}

impl Count {
    const ALL: [Count; 4] = [Count::Zero, Count::One, Count::Two, Count::Three];
}

impl SackBlocks {
    pub const MAX: usize = 3;
    /// Add [start, end), both within 2 GiB of `base`.
    pub fn push(&mut self, base: u64, start: u64, end: u64) {
        let n = self.n as usize;
        if n < Self::MAX {
            let off = |x: u64| i32::try_from(x as i64 - base as i64).expect("SACK block within 2 GiB of the ACK");
            self.blocks[n] = (off(start), off(end));
            self.n = Count::ALL[n + 1];
        }
    }
    /// The blocks as absolute [start, end) ranges.
    pub fn iter(&self, base: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.blocks[..self.n as usize].iter().map(move |&(s, e)| ((base as i64 + s as i64) as u64, (base as i64 + e as i64) as u64))
    }
    /// The D-SACK block, if the first block reports a duplicate (RFC 2883,
    /// Section 4, as Linux's `tcp_check_dsack` tells): it lies below the
    /// cumulative ACK, or inside the second block.
    pub fn dsack(&self, base: u64) -> Option<(u64, u64)> {
        let mut it = self.iter(base);
        let (s0, e0) = it.next()?;
        let dup = s0 < base || it.next().is_some_and(|(s1, e1)| s0 >= s1 && e0 <= e1);
        dup.then_some((s0, e0))
    }
    pub fn is_empty(&self) -> bool {
        self.n == Count::Zero
    }
    /// Option bytes on the wire: kind and length (2) + 8 per block, padded
    /// with two NOPs to a multiple of 4.
    pub fn option_bytes(&self) -> u32 {
        if self.is_empty() {
            0
        } else {
            4 + 8 * self.n as u32
        }
    }
}

impl Packet {
    /// A packet with every QoS field at its default: for tests and tools.
    pub fn test(flow: u32, size: u32) -> Packet {
        Packet {
            flow,
            gen: 0,
            src: 0,
            dst: 1,
            src_ip: 0,
            dst_ip: 0,
            size,
            proto: PROTO_UDP,
            dscp: 0,
            src_port: 0,
            dst_port: 0,
            fclass: 0,
            color: Color::Green,
            created: SimTime::ZERO,
            enqueued: SimTime::ZERO,
            fwd: true,
            payload: Payload::Udp { seq: 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_is_104_bytes_its_payload_48() {
        // Every queue's ring and every link's pipe holds packets by value:
        // their size is the engine's memory traffic. The payload's tag lives
        // in the SACK count's unused values (`Count`).
        assert_eq!((std::mem::size_of::<Payload>(), std::mem::size_of::<Packet>()), (48, 104));
    }

    #[test]
    fn sack_blocks_count_up_to_three() {
        let mut s = SackBlocks::default();
        assert!(s.is_empty() && s.option_bytes() == 0);
        for i in 0..5u64 {
            s.push(1000, 2000 + 100 * i, 2050 + 100 * i);
        }
        assert_eq!(s.iter(1000).collect::<Vec<_>>(), [(2000, 2050), (2100, 2150), (2200, 2250)]);
        assert_eq!(s.option_bytes(), 28);
    }
}
