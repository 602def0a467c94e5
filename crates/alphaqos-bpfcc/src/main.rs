//! `alphaqos-bpfcc`: a small sender and sink to exercise `alphaqos_base` on
//! real sockets (tests/test_transfer_bpf.py; docs/transfer-bpf.md).
//!
//! ```text
//! alphaqos-bpfcc sink ADDR:PORT
//! alphaqos-bpfcc send ADDR:PORT --seconds S [--cc NAME] [--target BPS] [--pace]
//!                [--change SECONDS:BPS]... [--interval-ms MS]
//! alphaqos-bpfcc state
//! ```
//!
//! `send` connects, then with `--cc alphaqos_base` attaches the controller
//! with `--target` (bit/s), with `--pace` also caps the socket's pacing rate
//! at the target (`SO_MAX_PACING_RATE`, bytes/s), sends zeros for S seconds
//! and prints one JSON line per interval from `TCP_INFO` (cumulative
//! counters) and, when attached, the controller's entry. `--change T:BPS`
//! sets a new target (and pacing cap) T seconds after the start.
//! `state` prints whether the controller is available (exit 0) or why not (exit 3).

use alphaqos_bpfcc::{congestion, set_congestion, BaseCc, BaseState, CC_NAME};
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
    total_retrans: u32,
    pacing_rate: u64,
    bytes_acked: u64,
    data_segs_out: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
}

fn tcp_info(fd: i32) -> std::io::Result<TcpInfo> {
    let mut b = [0u8; 232];
    let mut len = b.len() as libc::socklen_t;
    // SAFETY: b and len are valid for writing.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, b.as_mut_ptr() as *mut libc::c_void, &mut len) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if (len as usize) < 216 {
        return Err(std::io::Error::other(format!("TCP_INFO of {len} bytes: the kernel is older than 4.19")));
    }
    let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
    Ok(TcpInfo {
        rtt_us: u32_at(68),
        snd_ssthresh: u32_at(76),
        snd_cwnd: u32_at(80),
        total_retrans: u32_at(100),
        pacing_rate: u64_at(104),
        bytes_acked: u64_at(120),
        data_segs_out: u32_at(156),
        bytes_sent: u64_at(200),
        bytes_retrans: u64_at(208),
    })
}

fn set_max_pacing(fd: i32, bps: u64) {
    let v: u64 = bps / 8;
    // SAFETY: v is a valid u64 (the kernel takes 64 bits since 5.x).
    let r = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &v as *const u64 as *const libc::c_void, 8) };
    if r != 0 {
        fail(format!("setsockopt(SO_MAX_PACING_RATE, {v} B/s): {}", std::io::Error::last_os_error()));
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
    let l = TcpListener::bind(addr).unwrap_or_else(|e| fail(format!("sink: cannot listen on {addr}: {e}")));
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
    v.parse().unwrap_or_else(|_| fail(format!("{what}: {v:?} is not a whole number")))
}

fn send(addr: &str, args: &[String]) {
    let mut seconds = 0.0f64;
    let mut cc = CC_NAME.to_string();
    let mut target = 0u64;
    let mut pace = false;
    let mut changes: Vec<(f64, u64)> = Vec::new();
    let mut interval_ms = 100u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().unwrap_or_else(|| fail(format!("{name} needs a value")));
        match a.as_str() {
            "--seconds" => {
                let v = val("--seconds");
                seconds = v.parse().ok().filter(|s: &f64| *s > 0.0).unwrap_or_else(|| fail(format!("--seconds: {v:?} is not a positive number")));
            }
            "--cc" => cc = val("--cc"),
            "--target" => target = parse_u64("--target", &val("--target")),
            "--pace" => pace = true,
            "--interval-ms" => interval_ms = parse_u64("--interval-ms", &val("--interval-ms")).max(1),
            "--change" => {
                let v = val("--change");
                let (t, r) = v.split_once(':').unwrap_or_else(|| fail(format!("--change: {v:?} is not SECONDS:BPS")));
                let t: f64 = t.parse().unwrap_or_else(|_| fail(format!("--change: {t:?} is not a number of seconds")));
                changes.push((t, parse_u64("--change", r)));
            }
            other => fail(format!("send: unknown argument {other:?}")),
        }
    }
    if seconds <= 0.0 {
        fail("send: --seconds is required".into());
    }
    if (cc == CC_NAME || pace) && target == 0 {
        fail(format!("send: --target (bit/s) is required with --cc {CC_NAME} or --pace"));
    }
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| fail(format!("send: cannot connect to {addr}: {e}")));
    let fd = s.as_raw_fd();
    let base = if cc == CC_NAME {
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
    let in_use = congestion(fd).unwrap_or_else(|e| fail(format!("getsockopt(TCP_CONGESTION): {e}")));
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
                        b.set_target(fd, target).unwrap_or_else(|e| fail(e.to_string()));
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
                    "{{\"t\":{t:.4},\"cc\":\"{in_use}\",\"target_bps\":{target},\"bytes_acked\":{},\"bytes_sent\":{},\"bytes_retrans\":{},\"data_segs_out\":{},\"total_retrans\":{},\"snd_cwnd\":{},\"snd_ssthresh\":{},\"rtt_us\":{},\"pacing_rate\":{},\"base\":{st}}}",
                    i.bytes_acked, i.bytes_sent, i.bytes_retrans, i.data_segs_out, i.total_retrans, i.snd_cwnd, i.snd_ssthresh, i.rtt_us, i.pacing_rate
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
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
            Err(e) => fail(format!("send: writing to {addr}: {e}")),
        }
    }
    done.store(true, Ordering::Relaxed);
    sampler.join().ok();
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
