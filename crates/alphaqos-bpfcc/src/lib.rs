//! User-space side of `alphaqos_base`, the base connection's window control
//! of the deadline-driven transfer over DiffServ AF networks (source
//! document 003, the slides "deadline-driven file transfer over DiffServ AF
//! networks"; the simulator's `base_flow`, `crates/alphaqos-sim/src/tcp/cc/
//! base_flow.rs`) as a Linux TCP congestion control in BPF
//! (`bpf/alphaqos_base.bpf.c`, registered by `python/alphaqos/transfer/bpf.py`;
//! see `docs/transfer-bpf.md`).
//!
//! The controller reads each socket's committed target rate from the
//! socket-storage map `alphaqos_cc_sk`, pinned at [`PIN_PATH`]; this crate
//! opens that map (`BPF_OBJ_GET`), writes and reads a socket's entry with the
//! socket's fd as the key (`BPF_MAP_UPDATE_ELEM` / `BPF_MAP_LOOKUP_ELEM`, the
//! `bpf` system call through `libc`) and switches the socket to the
//! controller (`setsockopt(TCP_CONGESTION)`). No libbpf.

use std::ffi::CString;
use std::fmt;
use std::io;
use std::os::fd::RawFd;

/// The name the struct_ops registers under (`tcp_available_congestion_control`).
pub const CC_NAME: &str = "alphaqos_base";
/// Where the registration pins the controller's socket-storage map.
pub const PIN_PATH: &str = "/sys/fs/bpf/alphaqos_cc_sk";
/// The map's name in the kernel (the pin's file name).
pub const MAP_NAME: &str = "alphaqos_cc_sk";
/// The kernel's list of registered congestion controls.
pub const AVAILABLE_CC: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Why the BPF controller cannot be used (not root, CC not registered, map not pinned, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "alphaqos_base unavailable: {}", self.0)
    }
}

impl std::error::Error for Unavailable {}

/// The map's value, as `struct aq_base` in `bpf/alphaqos_base.h` (same
/// layout). User space writes `target_bps`; the controller the rest.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawEntry {
    pub target_bps: u64,
    pub applied_bps: u64,
    pub rtt_sum_us: u64,
    pub rtt_n: u32,
    pub rtt_round_end: u32,
    pub rtt_us: u32,
    pub min_rtt_us: u32,
    pub cwnd_max: u32,
    pub cwnd: u32,
    pub round_end: u32,
    pub step: u32,
    pub round_cwnd: u32,
    pub rem: u32,
    pub state: u32,
    pub round_valid: u32,
    pub rounds: u32,
    pub drops: u32,
    pub losses: u32,
    pub target_changes: u32,
}

/// What the controller holds for one socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BaseState {
    /// Committed target rate, bit/s.
    pub target_bps: u64,
    /// The window the target asks for, CTR x RTT (`cwnd_max`), segments; 0 before an RTT sample.
    pub target_cwnd: u32,
    /// The congestion window after the controller's last decision, segments.
    pub cwnd: u32,
    /// Smallest RTT sample, microseconds (0 before the first sample).
    pub min_rtt_us: u32,
    /// Controller state (see [`BaseState::state_name`]).
    pub state: u32,
    /// The RTT of CTR x RTT: the mean RTT sample of the last round trip, microseconds.
    pub rtt_us: u32,
    /// Loss signals the controller answered (its ssthresh calls).
    pub losses: u32,
    /// Binary-increase rounds started.
    pub rounds: u32,
    /// Immediate drops to cwnd_max on a falling RTT.
    pub drops: u32,
    /// Targets the controller applied (1 after attach, +1 per set_target it saw).
    pub target_changes: u32,
}

impl BaseState {
    /// `reno` (no target applied yet), `slow_start`, `increase` (binary
    /// increase towards cwnd_max), `hold` (at cwnd_max), `recovery`.
    pub fn state_name(&self) -> &'static str {
        match self.state {
            0 => "reno",
            1 => "slow_start",
            2 => "increase",
            3 => "hold",
            4 => "recovery",
            _ => "unknown",
        }
    }

    fn from_raw(r: &RawEntry) -> BaseState {
        BaseState {
            target_bps: r.target_bps,
            target_cwnd: r.cwnd_max,
            cwnd: r.cwnd,
            min_rtt_us: r.min_rtt_us,
            state: r.state,
            rtt_us: r.rtt_us,
            losses: r.losses,
            rounds: r.rounds,
            drops: r.drops,
            target_changes: r.target_changes,
        }
    }
}

// The bpf(2) commands and the one map type this crate uses (include/uapi/linux/bpf.h).
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_OBJ_GET: libc::c_long = 7;
const BPF_MAP_GET_NEXT_ID: libc::c_long = 12;
const BPF_MAP_GET_FD_BY_ID: libc::c_long = 14;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_MAP_TYPE_SK_STORAGE: u32 = 24;
const BPF_ANY: u64 = 0;
const BPF_EXIST: u64 = 2;

/// `union bpf_attr`, large enough for every command used here (zeroed beyond
/// the fields a command reads, as the kernel requires).
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn put_u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn put_u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn call(&mut self, cmd: libc::c_long) -> io::Result<libc::c_long> {
        // SAFETY: the attribute buffer outlives the call; every pointer put
        // into it points at live memory of the size the command expects.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd,
                self.0.as_mut_ptr(),
                self.0.len() as libc::c_uint,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }
}

/// The head of `struct bpf_map_info` (the fields checked here).
#[repr(C)]
#[derive(Default)]
struct MapInfo {
    map_type: u32,
    id: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    name: [u8; 16],
}

/// Handle on the pinned socket-storage map of a registered `alphaqos_base`.
#[derive(Debug)]
pub struct BaseCc {
    map_fd: RawFd,
}

impl Drop for BaseCc {
    fn drop(&mut self) {
        // SAFETY: the fd is ours (BPF_OBJ_GET) and closed once.
        unsafe { libc::close(self.map_fd) };
    }
}

/// Whether `alphaqos_base` is in the kernel's list of registered congestion controls.
pub fn registered() -> Result<bool, Unavailable> {
    let list = std::fs::read_to_string(AVAILABLE_CC)
        .map_err(|e| Unavailable(format!("cannot read {AVAILABLE_CC}: {e}")))?;
    Ok(list.split_whitespace().any(|n| n == CC_NAME))
}

impl BaseCc {
    /// Opens the pinned socket-storage map of a registered `alphaqos_base`;
    /// Err with the reason when the CC is not in
    /// tcp_available_congestion_control or the map is missing.
    pub fn open() -> Result<BaseCc, Unavailable> {
        if !registered()? {
            return Err(Unavailable(format!(
                "the congestion control {CC_NAME} is not registered (not in {AVAILABLE_CC}); \
                 register it as root with alphaqos.transfer.bpf.ensure_loaded()"
            )));
        }
        match Self::open_pinned(PIN_PATH) {
            Ok(cc) => Ok(cc),
            // Where /sys/fs/bpf is not the BPF file system the map was
            // pinned in (`ip netns exec` mounts a sysfs of its own over
            // /sys), the registered map is found by its name.
            Err(pinned) => Self::open_by_name()
                .map_err(|by_name| Unavailable(format!("{}; {}", pinned.0, by_name.0))),
        }
    }

    /// The newest map named `alphaqos_cc_sk` of the right type among all
    /// the kernel's maps (`BPF_MAP_GET_NEXT_ID`, root only).
    pub fn open_by_name() -> Result<BaseCc, Unavailable> {
        let mut id = 0u32;
        let mut found: Option<BaseCc> = None;
        loop {
            let mut attr = Attr::new();
            attr.put_u32(0, id);
            match attr.call(BPF_MAP_GET_NEXT_ID) {
                Ok(_) => id = u32::from_ne_bytes(attr.0[4..8].try_into().unwrap()),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
                Err(e) => {
                    return Err(Unavailable(format!(
                        "cannot list the kernel's BPF maps to find {MAP_NAME} ({e}; root needed)"
                    )))
                }
            }
            let mut attr = Attr::new();
            attr.put_u32(0, id);
            let Ok(fd) = attr.call(BPF_MAP_GET_FD_BY_ID) else {
                continue;
            };
            let cc = BaseCc {
                map_fd: fd as RawFd,
            };
            if let Ok(info) = cc.info() {
                let name = info.name.split(|&b| b == 0).next().unwrap_or_default();
                if name == MAP_NAME.as_bytes() && cc.check(&info, &format!("map id {id}")).is_ok() {
                    found = Some(cc); // ids grow: the last match is the newest
                }
            }
        }
        found.ok_or_else(|| Unavailable(format!("no BPF map named {MAP_NAME} is loaded")))
    }

    fn info(&self) -> io::Result<MapInfo> {
        let mut info = MapInfo::default();
        let mut attr = Attr::new();
        attr.put_u32(0, self.map_fd as u32)
            .put_u32(4, std::mem::size_of::<MapInfo>() as u32)
            .put_u64(8, &mut info as *mut MapInfo as u64);
        attr.call(BPF_OBJ_GET_INFO_BY_FD)?;
        Ok(info)
    }

    fn check(&self, info: &MapInfo, what: &str) -> Result<(), Unavailable> {
        let want = std::mem::size_of::<RawEntry>() as u32;
        if info.map_type != BPF_MAP_TYPE_SK_STORAGE || info.key_size != 4 || info.value_size != want
        {
            return Err(Unavailable(format!(
                "{what} is not alphaqos_base's socket-storage map (type {}, key {} B, value {} B; want type {BPF_MAP_TYPE_SK_STORAGE}, key 4 B, value {want} B)",
                info.map_type, info.key_size, info.value_size
            )));
        }
        Ok(())
    }

    /// Opens a pinned map at `path` and checks that it is the controller's
    /// (a socket-storage map with an int key and the `RawEntry` value).
    pub fn open_pinned(path: &str) -> Result<BaseCc, Unavailable> {
        let cpath = CString::new(path)
            .map_err(|_| Unavailable(format!("map path {path:?} contains a NUL byte")))?;
        let mut attr = Attr::new();
        attr.put_u64(0, cpath.as_ptr() as u64);
        let fd = match attr.call(BPF_OBJ_GET) {
            Ok(fd) => fd as RawFd,
            Err(e) => {
                let why = match e.raw_os_error() {
                    Some(libc::ENOENT) => format!(
                        "the map is not pinned at {path} (is {CC_NAME} registered by alphaqos?)"
                    ),
                    Some(libc::EPERM) | Some(libc::EACCES) => {
                        format!("no permission to open the map at {path} ({e}); the bpf system call needs root or CAP_BPF")
                    }
                    Some(libc::EINVAL) => format!("{path} is not on a BPF file system ({e})"),
                    Some(libc::ENOSYS) => "the kernel has no bpf system call".to_string(),
                    _ => format!("cannot open the map at {path}: {e}"),
                };
                return Err(Unavailable(why));
            }
        };
        let cc = BaseCc { map_fd: fd };
        let info = cc
            .info()
            .map_err(|e| Unavailable(format!("{path} is not a BPF map ({e})")))?;
        cc.check(&info, path)?;
        Ok(cc)
    }

    fn update(&self, fd: RawFd, e: &RawEntry, flags: u64) -> io::Result<()> {
        let key: i32 = fd;
        let mut attr = Attr::new();
        attr.put_u32(0, self.map_fd as u32)
            .put_u64(8, &key as *const i32 as u64)
            .put_u64(16, e as *const RawEntry as u64)
            .put_u64(24, flags);
        attr.call(BPF_MAP_UPDATE_ELEM).map(|_| ())
    }

    /// The socket's raw map entry.
    pub fn lookup(&self, fd: RawFd) -> io::Result<RawEntry> {
        let key: i32 = fd;
        let mut e = RawEntry::default();
        let mut attr = Attr::new();
        attr.put_u32(0, self.map_fd as u32)
            .put_u64(8, &key as *const i32 as u64)
            .put_u64(16, &mut e as *mut RawEntry as u64);
        match attr.call(BPF_MAP_LOOKUP_ELEM) {
            Ok(_) => Ok(e),
            Err(err) if err.raw_os_error() == Some(libc::ENOENT) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("socket fd {fd} has no {CC_NAME} entry (not attached)"),
            )),
            Err(err) => Err(io::Error::new(
                err.kind(),
                format!("{CC_NAME} map lookup for socket fd {fd}: {err}"),
            )),
        }
    }

    /// Writes the socket's committed target rate (bit/s) into the map, then
    /// `setsockopt(TCP_CONGESTION, "alphaqos_base")`. Call after connect,
    /// before sending data.
    pub fn attach(&self, fd: RawFd, target_bps: u64) -> io::Result<()> {
        check_target(target_bps)?;
        let e = RawEntry {
            target_bps,
            ..RawEntry::default()
        };
        self.update(fd, &e, BPF_ANY).map_err(|err| {
            io::Error::new(
                err.kind(),
                format!("{CC_NAME}: writing the target of socket fd {fd}: {err}"),
            )
        })?;
        set_congestion(fd, CC_NAME)
    }

    /// Updates the target (bit/s) of an attached socket (on every
    /// reservation change); the controller applies it from the next ACK.
    pub fn set_target(&self, fd: RawFd, target_bps: u64) -> io::Result<()> {
        check_target(target_bps)?;
        // The entry's other fields are the controller's: write them back as
        // read (the controller notices the new target by applied_bps).
        let mut e = self.lookup(fd)?;
        e.target_bps = target_bps;
        self.update(fd, &e, BPF_EXIST).map_err(|err| {
            io::Error::new(
                err.kind(),
                format!("{CC_NAME}: updating the target of socket fd {fd}: {err}"),
            )
        })
    }

    /// What the controller holds for the socket now.
    pub fn read(&self, fd: RawFd) -> io::Result<BaseState> {
        self.lookup(fd).map(|e| BaseState::from_raw(&e))
    }
}

fn check_target(target_bps: u64) -> io::Result<()> {
    if target_bps == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{CC_NAME}: target rate must be at least 1 bit/s, got 0"),
        ));
    }
    Ok(())
}

/// `setsockopt(TCP_CONGESTION, name)`.
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: name's bytes are valid for its length.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr() as *const libc::c_void,
            name.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("setsockopt(TCP_CONGESTION, {name}) on socket fd {fd}: {e}"),
        ));
    }
    Ok(())
}

/// `getsockopt(IPPROTO_TCP, opt)` into `buf`; the length the kernel wrote.
pub fn tcp_getsockopt(fd: RawFd, opt: libc::c_int, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len are valid for writing buf.len() bytes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            opt,
            buf.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len as usize)
}

/// The socket's congestion control (`getsockopt(TCP_CONGESTION)`).
pub fn congestion(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let len = tcp_getsockopt(fd, libc::TCP_CONGESTION, &mut buf)?;
    let n = buf[..len].iter().position(|&b| b == 0).unwrap_or(len);
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_has_the_c_layout() {
        // struct aq_base: three u64 then sixteen u32.
        assert_eq!(std::mem::size_of::<RawEntry>(), 3 * 8 + 16 * 4);
        assert_eq!(std::mem::align_of::<RawEntry>(), 8);
        let h = include_str!("../../../bpf/alphaqos_base.h");
        let body = &h[h.find("struct aq_base {").unwrap()..];
        let body = &body[..body.find("};").unwrap()];
        let fields: Vec<(&str, &str)> = body
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let (ty, rest) = l.split_once(' ')?;
                let name = rest.split(';').next()?.trim();
                ty.starts_with("__u").then_some((ty, name))
            })
            .collect();
        let rust = [
            ("__u64", "target_bps"),
            ("__u64", "applied_bps"),
            ("__u64", "rtt_sum_us"),
            ("__u32", "rtt_n"),
            ("__u32", "rtt_round_end"),
            ("__u32", "rtt_us"),
            ("__u32", "min_rtt_us"),
            ("__u32", "cwnd_max"),
            ("__u32", "cwnd"),
            ("__u32", "round_end"),
            ("__u32", "step"),
            ("__u32", "round_cwnd"),
            ("__u32", "rem"),
            ("__u32", "state"),
            ("__u32", "round_valid"),
            ("__u32", "rounds"),
            ("__u32", "drops"),
            ("__u32", "losses"),
            ("__u32", "target_changes"),
        ];
        assert_eq!(fields, rust, "RawEntry and bpf/alphaqos_base.h differ");
    }

    #[test]
    fn a_missing_pin_names_the_path() {
        let e = BaseCc::open_pinned("/sys/fs/bpf/alphaqos-no-such-map").unwrap_err();
        // Without root the call is refused before the path is looked at.
        assert!(
            e.0.contains("not pinned at /sys/fs/bpf/alphaqos-no-such-map")
                || e.0.contains("no permission")
                || e.0.contains("not on a BPF file system"),
            "{e}"
        );
    }

    #[test]
    fn a_path_off_bpffs_or_with_nul_is_refused_with_the_reason() {
        let e = BaseCc::open_pinned("/tmp/alphaqos-no-such-map").unwrap_err();
        assert!(e.0.contains("/tmp/alphaqos-no-such-map"), "{e}");
        let e = BaseCc::open_pinned("/sys/fs/bpf/a\0b").unwrap_err();
        assert!(e.0.contains("NUL"), "{e}");
    }

    #[test]
    fn open_says_when_the_cc_is_not_registered() {
        match registered() {
            Ok(false) => {
                let e = BaseCc::open().unwrap_err();
                assert!(
                    e.0.contains("not registered") && e.0.contains(AVAILABLE_CC),
                    "{e}"
                );
            }
            // Registered on this host: open succeeds or names the map's problem.
            Ok(true) => {
                if let Err(e) = BaseCc::open() {
                    assert!(e.0.contains(PIN_PATH) || e.0.contains("permission"), "{e}");
                }
            }
            Err(e) => assert!(e.0.contains(AVAILABLE_CC), "{e}"),
        }
    }

    #[test]
    fn a_zero_target_is_refused() {
        let e = check_target(0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("at least 1 bit/s"));
    }

    #[test]
    fn state_names() {
        let names: Vec<_> = (0..6)
            .map(|s| {
                BaseState {
                    state: s,
                    ..Default::default()
                }
                .state_name()
            })
            .collect();
        assert_eq!(
            names,
            [
                "reno",
                "slow_start",
                "increase",
                "hold",
                "recovery",
                "unknown"
            ]
        );
    }
}
