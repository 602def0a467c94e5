//! Raw Ethernet frames on a real interface: an AF_PACKET socket
//! (packet(7)) bound to one interface, opened inside the interface's
//! network namespace (setns(2) on `/run/netns/NAME`, as `ip netns` makes
//! them; the socket stays in that namespace when the thread goes back).

use std::ffi::CString;
use std::io;

const ETH_P_ALL: u16 = 0x0003;
/// packet(7): do not deliver the frames this socket (or anyone) sends on
/// the interface back to it (Linux 4.20).
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

pub struct RawSocket {
    pub fd: libc::c_int,
    /// `interface "e0" in namespace "x"`, for errors.
    pub where_: String,
}

fn err(what: String) -> String {
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => format!("{what}: permission denied (raw sockets need CAP_NET_RAW, namespaces CAP_SYS_ADMIN: run as root)"),
        _ => format!("{what}: {e}"),
    }
}

/// Run `f` inside the namespace `netns` (None: the current one).
fn in_netns<T>(netns: Option<&str>, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let Some(ns) = netns else { return f() };
    if ns.contains('/') || ns.is_empty() {
        return Err(format!("not a namespace name: {ns:?}"));
    }
    let path = CString::new(format!("/run/netns/{ns}")).unwrap();
    let target = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if target < 0 {
        return Err(if io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
            format!("no network namespace {ns:?} (ip netns list)")
        } else {
            err(format!("namespace {ns:?}"))
        });
    }
    let home_path = CString::new("/proc/thread-self/ns/net").unwrap();
    let home = unsafe { libc::open(home_path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if home < 0 {
        let e = err("open(/proc/thread-self/ns/net)".to_string());
        unsafe { libc::close(target) };
        return Err(e);
    }
    let entered = unsafe { libc::setns(target, libc::CLONE_NEWNET) };
    let mut out = if entered != 0 { Err(err(format!("setns(CLONE_NEWNET) into namespace {ns:?}"))) } else { f() };
    // Back home: a thread left in the interfaces' namespace would open the
    // next socket in the wrong place.
    if entered == 0 && unsafe { libc::setns(home, libc::CLONE_NEWNET) } != 0 {
        out = Err(err(format!("setns(CLONE_NEWNET) back from namespace {ns:?}")));
    }
    unsafe {
        libc::close(target);
        libc::close(home);
    }
    out
}

impl RawSocket {
    /// Open a socket on `name` in `netns`, non-blocking, with large buffers.
    pub fn open(netns: Option<&str>, name: &str) -> Result<RawSocket, String> {
        let where_ = match netns {
            Some(ns) => format!("interface {name:?} in namespace {ns:?}"),
            None => format!("interface {name:?}"),
        };
        in_netns(netns, || {
            let cname = CString::new(name).map_err(|_| format!("bad interface name {name:?}"))?;
            let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
            if ifindex == 0 {
                return Err(format!("{where_} does not exist"));
            }
            let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, (ETH_P_ALL.to_be()) as i32) };
            if fd < 0 {
                return Err(err(format!("raw socket on {where_}")));
            }
            let sock = RawSocket { fd, where_: where_.clone() };
            let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_protocol = ETH_P_ALL.to_be();
            addr.sll_ifindex = ifindex;
            let rc = unsafe { libc::bind(fd, &addr as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as u32) };
            if rc != 0 {
                return Err(err(format!("binding a raw socket to {where_}")));
            }
            sock.set(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, "PACKET_IGNORE_OUTGOING", 1)?;
            // The kernel's receive time of each frame: a frame that waited in
            // the socket while this process was not running arrived when the
            // kernel took it, not when it was read.
            sock.set(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, "SO_TIMESTAMPNS", 1)?;
            // Room for bursts at the link rate (SO_*BUFFORCE: root may exceed rmem_max).
            sock.set(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, "SO_RCVBUFFORCE", 32 << 20)?;
            sock.set(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, "SO_SNDBUFFORCE", 32 << 20)?;
            Ok(sock)
        })
    }

    /// setsockopt(2) of an int option; an error names the call, the option and the interface.
    fn set(&self, level: libc::c_int, opt: libc::c_int, opt_name: &str, value: libc::c_int) -> Result<(), String> {
        let rc = unsafe { libc::setsockopt(self.fd, level, opt, &value as *const _ as *const libc::c_void, std::mem::size_of::<libc::c_int>() as u32) };
        if rc != 0 {
            return Err(err(format!("setsockopt({opt_name}, {value}) on the raw socket of {}", self.where_)));
        }
        Ok(())
    }

    /// The next frame into `buf`: its length and the kernel's receive time
    /// stamp (CLOCK_REALTIME, ns; SO_TIMESTAMPNS, socket(7)) if it gave
    /// one, or None when there is no frame now.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, Option<i128>)>> {
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        let mut control = [0u64; 8]; // room for one cmsg holding a timespec, 8-byte aligned
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&control);
        let n = unsafe { libc::recvmsg(self.fd, &mut msg, libc::MSG_DONTWAIT | libc::MSG_TRUNC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(e),
            };
        }
        let mut stamp = None;
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    stamp = Some(t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok(Some((n as usize, stamp)))
    }

    /// Send a frame; false if the kernel would not take it now.
    pub fn send(&self, frame: &[u8]) -> bool {
        let n = unsafe { libc::send(self.fd, frame.as_ptr() as *const libc::c_void, frame.len(), libc::MSG_DONTWAIT) };
        n == frame.len() as isize
    }
}

impl RawSocket {
    /// Frames the kernel dropped for want of room in the receive buffer
    /// since the socket was opened (PACKET_STATISTICS, packet(7); reading
    /// resets the kernel's count, so call it once, at the end).
    pub fn drops(&self) -> Result<u64, String> {
        let mut stats = libc::tpacket_stats { tp_packets: 0, tp_drops: 0 };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        let rc = unsafe { libc::getsockopt(self.fd, libc::SOL_PACKET, libc::PACKET_STATISTICS, &mut stats as *mut _ as *mut libc::c_void, &mut len) };
        if rc != 0 {
            return Err(err(format!("getsockopt(PACKET_STATISTICS) on the raw socket of {}", self.where_)));
        }
        Ok(stats.tp_drops as u64)
    }
}

impl Drop for RawSocket {
    fn drop(&mut self) {
        unsafe {
            libc::close(self.fd);
        }
    }
}
