//! Socket options of the data path: pacing (`SO_MAX_PACING_RATE`, a 64-bit
//! value in bytes/s since Linux 4.20; TCP paces by itself without the fq
//! qdisc since 4.13), DSCP (`IP_TOS`, RFC 2474: DSCP in the upper six bits),
//! the congestion control (`TCP_CONGESTION`) and `TCP_INFO` counters.
use std::io;
use std::os::fd::RawFd;

/// DSCP code points by name (RFC 2474, 2597 AF, 3246 EF, 8622 LE, CS1 as
/// scavenger per RFC 3662).
pub fn dscp_by_name(name: &str) -> Option<u8> {
    let n = name.to_ascii_lowercase();
    let v = match n.as_str() {
        "be" | "cs0" | "default" => 0,
        "cs1" | "scavenger" => 8,
        "le" => 1,
        "ef" => 46,
        _ => {
            if let Some(rest) = n.strip_prefix("af") {
                let d: Vec<u8> = rest.bytes().map(|b| b.wrapping_sub(b'0')).collect();
                if d.len() == 2 && (1..=4).contains(&d[0]) && (1..=3).contains(&d[1]) {
                    return Some(8 * d[0] + 2 * d[1]);
                }
                return None;
            }
            if let Some(rest) = n.strip_prefix("cs") {
                return rest.parse::<u8>().ok().filter(|c| *c <= 7).map(|c| c * 8);
            }
            return n.parse::<u8>().ok().filter(|v| *v < 64);
        }
    };
    Some(v)
}

fn setsockopt<T>(fd: RawFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    let rc = unsafe {
        libc::setsockopt(fd, level, name, value as *const T as *const libc::c_void, std::mem::size_of::<T>() as libc::socklen_t)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Paces the socket at `bps` bit/s (0: unpaced).
pub fn set_pacing(fd: RawFd, bps: u64) -> io::Result<()> {
    let bytes_per_s: u64 = if bps == 0 { u64::MAX } else { bps.div_ceil(8) };
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &bytes_per_s)
}

pub fn set_dscp(fd: RawFd, dscp: u8) -> io::Result<()> {
    let tos: libc::c_int = (dscp as libc::c_int) << 2;
    setsockopt(fd, libc::IPPROTO_IP, libc::IP_TOS, &tos).or_else(|e| {
        // An IPv6 socket: the traffic class carries the same DSCP.
        setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, &tos).map_err(|_| e)
    })
}

pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    let rc = unsafe {
        libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_ptr() as *const libc::c_void, name.len() as libc::socklen_t)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `struct tcp_info` of linux/tcp.h up to `tcpi_bytes_retrans` (Linux 4.19);
/// older kernels fill a prefix, the rest stays zero.
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    /// Smoothed RTT, microseconds.
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
}

pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    let rc = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut info as *mut TcpInfo as *mut libc::c_void, &mut len) };
    if rc == 0 {
        Ok(info)
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn dscp_names() {
        assert_eq!(dscp_by_name("AF11"), Some(10));
        assert_eq!(dscp_by_name("af43"), Some(38));
        assert_eq!(dscp_by_name("ef"), Some(46));
        assert_eq!(dscp_by_name("cs1"), Some(8));
        assert_eq!(dscp_by_name("be"), Some(0));
        assert_eq!(dscp_by_name("af51"), None);
        assert_eq!(dscp_by_name("64"), None);
    }
    #[test]
    fn tcp_info_layout() {
        // linux/tcp.h: tcpi_pacing_rate at 104, tcpi_bytes_retrans ends at 216.
        assert_eq!(std::mem::offset_of!(TcpInfo, pacing_rate), 104);
        assert_eq!(std::mem::size_of::<TcpInfo>(), 216);
    }
}
