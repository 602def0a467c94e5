//! `alphaqos-bpfcc`: a small sender and sink to exercise `alphaqos_base` on
//! real sockets (tests/test_transfer_bpf.py; docs/transfer-bpf.md).
//!
//! ```text
//! alphaqos-bpfcc sink ADDR:PORT
//! alphaqos-bpfcc send ADDR:PORT --seconds S [--cc NAME] [--target BPS] [--pace]
//!                [--change SECONDS:BPS]... [--interval-ms MS] [--bind LOCAL_IP]
//! alphaqos-bpfcc state
//! ```
//!
//! `send` connects, then with `--cc alphaqos_base` attaches the controller
//! with `--target` (bit/s; without a target the socket uses alphaqos_base
//! with no map entry, i.e. as Reno), with `--pace` also caps the socket's pacing rate
//! at the target (`SO_MAX_PACING_RATE`, bytes/s), sends zeros for S seconds
//! and prints one JSON line per interval from `TCP_INFO` (cumulative
//! counters) and, when attached, the controller's entry. `--change T:BPS`
//! sets a new target (and pacing cap) T seconds after the start.
//! `state` prints whether the controller is available (exit 0) or why not (exit 3).

use alphaqos_bpfcc::{congestion, set_congestion, tcp_getsockopt, BaseCc, BaseState, CC_NAME};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn fail(msg: String) -> ! {
    eprintln!("alphaqos-bpfcc: {msg}");
    std::process::exit(2)
}

/// The `struct tcp_info` counters used here (include/uapi/linux/tcp.h offsets).
#[derive(Default, Clone, Copy)]
struct TcpInfo {
    rtt_us: u32,
    snd_cwnd: u32,
    snd_ssthresh: u32,
    snd_mss: u32,
    unacked: u32,
    total_retrans: u32,
    pacing_rate: u64,
    bytes_acked: u64,
    data_segs_out: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    busy_us: u64,
    notsent_bytes: u32,
    rwnd_limited_us: u64,
    sndbuf_limited_us: u64,
}

fn tcp_info(fd: i32) -> std::io::Result<TcpInfo> {
    let mut b = [0u8; 232];
    let len = tcp_getsockopt(fd, libc::TCP_INFO, &mut b)?;
    if len < 216 {
        return Err(std::io::Error::other(format!(
            "TCP_INFO of {len} bytes: the kernel is older than 4.19"
        )));
    }
    let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
    Ok(TcpInfo {
        rtt_us: u32_at(68),
        snd_ssthresh: u32_at(76),
        snd_mss: u32_at(16),
        unacked: u32_at(24),
        snd_cwnd: u32_at(80),
        total_retrans: u32_at(100),
        pacing_rate: u64_at(104),
        bytes_acked: u64_at(120),
        data_segs_out: u32_at(156),
        bytes_sent: u64_at(200),
        bytes_retrans: u64_at(208),
        busy_us: u64_at(168),
        notsent_bytes: u32_at(144),
        rwnd_limited_us: u64_at(176),
        sndbuf_limited_us: u64_at(184),
    })
}

fn set_max_pacing(fd: i32, bps: u64) {
    let v: u64 = bps / 8;
    // SAFETY: v is a valid u64 (the kernel takes 64 bits since 5.x).
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            &v as *const u64 as *const libc::c_void,
            8,
        )
    };
    if r != 0 {
        fail(format!(
            "setsockopt(SO_MAX_PACING_RATE, {v} B/s): {}",
            std::io::Error::last_os_error()
        ));
    }
}

fn state_json(s: &BaseState) -> String {
    format!(
        "{{\"target_bps\":{},\"target_cwnd\":{},\"cwnd\":{},\"rtt_us\":{},\"min_rtt_us\":{},\"state\":\"{}\",\"losses\":{},\"rounds\":{},\"drops\":{},\"target_changes\":{}}}",
        s.target_bps,
        s.target_cwnd,
        s.cwnd,
        s.rtt_us,
        s.min_rtt_us,
        s.state_name(),
        s.losses,
        s.rounds,
        s.drops,
        s.target_changes
    )
}

fn sink(addr: &str) {
    let l = TcpListener::bind(addr)
        .unwrap_or_else(|e| fail(format!("sink: cannot listen on {addr}: {e}")));
    println!("listening {}", l.local_addr().unwrap());
    std::io::stdout().flush().ok();
    for c in l.incoming() {
        let Ok(mut c) = c else { continue };
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 18];
            while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
        });
    }
}

fn parse_u64(what: &str, v: &str) -> u64 {
    v.parse()
        .unwrap_or_else(|_| fail(format!("{what}: {v:?} is not a whole number")))
}

fn send(addr: &str, args: &[String]) {
    let mut seconds = 0.0f64;
    let mut cc = CC_NAME.to_string();
    let mut target = 0u64;
    let mut pace = false;
    let mut changes: Vec<(f64, u64)> = Vec::new();
    let mut interval_ms = 100u64;
    let mut bind: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| {
            it.next()
                .cloned()
                .unwrap_or_else(|| fail(format!("{name} needs a value")))
        };
        match a.as_str() {
            "--seconds" => {
                let v = val("--seconds");
                seconds = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0)
                    .unwrap_or_else(|| fail(format!("--seconds: {v:?} is not a positive number")));
            }
            "--cc" => cc = val("--cc"),
            "--target" => target = parse_u64("--target", &val("--target")),
            "--pace" => pace = true,
            "--bind" => bind = Some(val("--bind")),
            "--interval-ms" => {
                interval_ms = parse_u64("--interval-ms", &val("--interval-ms")).max(1)
            }
            "--change" => {
                let v = val("--change");
                let (t, r) = v
                    .split_once(':')
                    .unwrap_or_else(|| fail(format!("--change: {v:?} is not SECONDS:BPS")));
                let t: f64 = t.parse().unwrap_or_else(|_| {
                    fail(format!("--change: {t:?} is not a number of seconds"))
                });
                changes.push((t, parse_u64("--change", r)));
            }
            other => fail(format!("send: unknown argument {other:?}")),
        }
    }
    if seconds <= 0.0 {
        fail("send: --seconds is required".into());
    }
    if pace && target == 0 {
        fail("send: --target (bit/s) is required with --pace".into());
    }
    let mut s = connect(addr, bind.as_deref());
    let fd = s.as_raw_fd();
    // alphaqos_base without a target: the socket has no map entry (Reno).
    let base = if cc == CC_NAME && target > 0 {
        let b = BaseCc::open().unwrap_or_else(|e| fail(e.to_string()));
        b.attach(fd, target).unwrap_or_else(|e| fail(e.to_string()));
        Some(b)
    } else {
        set_congestion(fd, &cc).unwrap_or_else(|e| fail(e.to_string()));
        None
    };
    if pace {
        set_max_pacing(fd, target);
    }
    let in_use =
        congestion(fd).unwrap_or_else(|e| fail(format!("getsockopt(TCP_CONGESTION): {e}")));
    let done = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut next = 0usize;
            let mut target = target;
            let mut k = 1u64;
            loop {
                let due = start + Duration::from_millis(interval_ms * k);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                k += 1;
                let t = start.elapsed().as_secs_f64();
                while next < changes.len() && changes[next].0 <= t {
                    target = changes[next].1;
                    if let Some(b) = &base {
                        b.set_target(fd, target)
                            .unwrap_or_else(|e| fail(e.to_string()));
                    }
                    if pace {
                        set_max_pacing(fd, target);
                    }
                    next += 1;
                }
                let i = tcp_info(fd).unwrap_or_else(|e| fail(format!("TCP_INFO: {e}")));
                let st = match &base {
                    Some(b) => state_json(&b.read(fd).unwrap_or_else(|e| fail(e.to_string()))),
                    None => "null".into(),
                };
                println!(
                    "{{\"t\":{t:.4},\"cc\":\"{in_use}\",\"target_bps\":{target},\"bytes_acked\":{},\"bytes_sent\":{},\"bytes_retrans\":{},\"data_segs_out\":{},\"total_retrans\":{},\"snd_cwnd\":{},\"snd_ssthresh\":{},\"snd_mss\":{},\"unacked\":{},\"rtt_us\":{},\"pacing_rate\":{},\"busy_us\":{},\"notsent_bytes\":{},\"rwnd_limited_us\":{},\"sndbuf_limited_us\":{},\"base\":{st}}}",
                    i.bytes_acked, i.bytes_sent, i.bytes_retrans, i.data_segs_out, i.total_retrans, i.snd_cwnd, i.snd_ssthresh, i.snd_mss, i.unacked, i.rtt_us, i.pacing_rate, i.busy_us, i.notsent_bytes, i.rwnd_limited_us, i.sndbuf_limited_us
                );
                std::io::stdout().flush().ok();
                if done.load(Ordering::Relaxed) {
                    break;
                }
            }
        })
    };
    let buf = vec![0u8; 1 << 17];
    s.set_write_timeout(Some(Duration::from_millis(200))).ok();
    while start.elapsed().as_secs_f64() < seconds {
        match s.write(&buf) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => fail(format!("send: writing to {addr}: {e}")),
        }
    }
    done.store(true, Ordering::Relaxed);
    sampler.join().ok();
}

/// Connects to `addr`, from the local address `bind` when given.
fn connect(addr: &str, bind: Option<&str>) -> TcpStream {
    let to: std::net::SocketAddr = addr
        .parse()
        .unwrap_or_else(|_| fail(format!("send: {addr:?} is not ADDR:PORT")));
    let Some(local) = bind else {
        return TcpStream::connect(to)
            .unwrap_or_else(|e| fail(format!("send: cannot connect to {addr}: {e}")));
    };
    let local: std::net::Ipv4Addr = local
        .parse()
        .unwrap_or_else(|_| fail(format!("--bind: {local:?} is not an IPv4 address")));
    let std::net::SocketAddr::V4(to4) = to else {
        fail(format!(
            "send: --bind needs an IPv4 destination, got {addr}"
        ))
    };
    // SAFETY: plain socket calls on a socket this function owns until into TcpStream.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            fail(format!("socket: {}", std::io::Error::last_os_error()));
        }
        let sa = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(ip).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let l = sa(local, 0);
        if libc::bind(fd, &l as *const _ as *const libc::sockaddr, len) != 0 {
            fail(format!(
                "--bind {local}: {}",
                std::io::Error::last_os_error()
            ));
        }
        let r = sa(*to4.ip(), to4.port());
        if libc::connect(fd, &r as *const _ as *const libc::sockaddr, len) != 0 {
            fail(format!(
                "send: cannot connect to {addr} from {local}: {}",
                std::io::Error::last_os_error()
            ));
        }
        <TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("sink") if args.len() == 2 => sink(&args[1]),
        Some("send") if args.len() >= 2 => send(&args[1], &args[2..]),
        Some("state") => match BaseCc::open() {
            Ok(_) => println!("{CC_NAME} available"),
            Err(e) => {
                println!("{e}");
                std::process::exit(3)
            }
        },
        _ => fail("usage: alphaqos-bpfcc sink ADDR:PORT | send ADDR:PORT --seconds S [--cc NAME] [--target BPS] [--pace] [--change T:BPS]... | state".into()),
    }
}
