//! User-space side of `alphaqos_base`, the base connection's window control
//! (see `bpf/alphaqos_base.bpf.c` and `docs/transfer-bpf.md`).
//!
//! API stub: every call returns `Unavailable("not implemented yet")` until the
//! implementation lands.

use std::fmt;
use std::os::fd::RawFd;

/// The name the struct_ops registers under (`tcp_available_congestion_control`).
pub const CC_NAME: &str = "alphaqos_base";

/// Why the BPF controller cannot be used (not root, CC not registered, map not pinned, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "alphaqos_base unavailable: {}", self.0)
    }
}

impl std::error::Error for Unavailable {}

/// What the controller holds for one socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BaseState {
    /// Committed target rate, bit/s.
    pub target_bps: u64,
    /// The window the target asks for (target x min RTT), segments.
    pub target_cwnd: u32,
    /// Current congestion window, segments.
    pub cwnd: u32,
    /// Minimum RTT seen, microseconds (0 before the first sample).
    pub min_rtt_us: u32,
    /// Controller state (see `BaseState::state_name`).
    pub state: u32,
}

/// Handle on the pinned socket-storage map of a registered `alphaqos_base`.
#[derive(Debug)]
pub struct BaseCc {
    #[allow(dead_code)]
    map_fd: RawFd,
}

impl BaseCc {
    /// Opens the pinned socket-storage map of a registered `alphaqos_base`.
    pub fn open() -> Result<BaseCc, Unavailable> {
        Err(Unavailable("not implemented yet".into()))
    }

    /// Writes the socket's committed target (bit/s) into the map, then
    /// `setsockopt(TCP_CONGESTION, "alphaqos_base")`. Call after connect, before sending.
    pub fn attach(&self, _fd: RawFd, _target_bps: u64) -> std::io::Result<()> {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "not implemented yet"))
    }

    /// Updates the target (bit/s) of an attached socket.
    pub fn set_target(&self, _fd: RawFd, _target_bps: u64) -> std::io::Result<()> {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "not implemented yet"))
    }

    /// What the controller holds for the socket now.
    pub fn read(&self, _fd: RawFd) -> std::io::Result<BaseState> {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "not implemented yet"))
    }
}
