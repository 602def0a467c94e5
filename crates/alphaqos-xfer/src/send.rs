//! The sender (`alphaqos-xfer send`): the `hello`, then K data connections
//! taking the receiver's missing blocks from one queue (connection 0, the
//! *base*, paced at the reserved rate and marked with the reservation's
//! DSCP; the others unpaced with the excess DSCP), each block's payload by
//! `sendfile(2)`, hashed piece by piece as it goes (protocol version 3),
//! its BLAKE3 check after it; the whole file's BLAKE3, merged from the
//! blocks' checks, in `done`. Block sizes that are not BLAKE3 subtrees
//! hash the file in one pass before sending, as version 2 did.
//! Per interval it writes a JSON line on stdout; `{"rate_bps": N}` on stdin
//! re-paces the base connection.
use crate::net::{self, TcpInfo};
use crate::proto::{self, block_count, block_span, Check};
use crate::{basecc, emit, tree, Fail};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub struct SendOptions {
    pub file: PathBuf,
    pub addr: String,
    pub name: Option<String>,
    pub streams: usize,
    pub block: u64,
    pub rate_bps: u64,
    pub dscp_base: u8,
    pub dscp_excess: u8,
    /// "alphaqos_base", "pacing-only" or a kernel congestion control name.
    pub cc: String,
    pub force: bool,
    pub interval: Duration,
    pub version: u64,
    pub connect_timeout: Duration,
    /// After hashing, say `hashed` and wait for `{"go_rate_bps": N}` on
    /// stdin (the front reserves only then: no circuit held while a large
    /// file is hashed); end of input before it: stop, nothing sent.
    pub hold: bool,
}

/// A block whose copy at the receiver fails its check this often ends the transfer.
const MAX_BLOCK_FAILURES: u8 = 4;

struct Queue {
    pending: VecDeque<u64>,
    /// Blocks on the wire: (block, connection), for the endgame.
    inflight: Vec<(u64, usize)>,
    /// Blocks the receiver verified (a duplicate's second ack is ignored).
    verified: Vec<bool>,
    /// Failed checks per block.
    failures: Vec<u8>,
    /// Each block's check as last sent or, held at the receiver, as the
    /// sender computed it: the whole-file hash is merged from them.
    cvs: Vec<Option<Check>>,
    acked: u64,
    /// `done` was sent for the current set of acknowledgements (a `resend`
    /// clears it: the blocks come again, then `done` again).
    done_sent: bool,
    finished: bool,
    error: Option<Fail>,
}

struct State {
    q: Mutex<Queue>,
    cv: Condvar,
    total: u64,
    stop: AtomicBool,
    sent_blocks: AtomicU64,
    resent: AtomicU64,
    /// Endgame copies of blocks already on the wire.
    copies: AtomicU64,
    acked_bytes: AtomicU64,
    held_bytes: u64,
}

struct Conn {
    stream: TcpStream,
    bytes: AtomicU64,
}

pub fn send(mut o: SendOptions) -> Result<(), Fail> {
    let file = File::open(&o.file).map_err(|e| Fail::bad(format!("cannot read {}: {e}", o.file.display())))?;
    let meta = file.metadata().map_err(|e| Fail::bad(format!("cannot read {}: {e}", o.file.display())))?;
    if !meta.is_file() {
        return Err(Fail::bad(format!("{}: not a regular file", o.file.display())));
    }
    let name = match &o.name {
        Some(n) => n.clone(),
        None => o.file.file_name().map(|n| n.to_string_lossy().into_owned()).ok_or_else(|| Fail::bad(format!("{}: no file name", o.file.display())))?,
    };
    let size = meta.len();
    if o.block == 0 || o.block > u32::MAX as u64 {
        return Err(Fail::bad(format!("--block {}: must be from 1 byte to 4 GiB", o.block)));
    }
    if o.streams == 0 || o.streams > 64 {
        return Err(Fail::bad(format!("--streams {}: must be from 1 to 64", o.streams)));
    }
    let addr = o
        .addr
        .to_socket_addrs()
        .map_err(|e| Fail::bad(format!("{}: cannot resolve: {e}", o.addr)))?
        .next()
        .ok_or_else(|| Fail::bad(format!("{}: no address", o.addr)))?;
    let connect = || -> Result<TcpStream, Fail> {
        let s = TcpStream::connect_timeout(&addr, o.connect_timeout).map_err(|e| Fail::bad(format!("cannot connect to {}: {e}", o.addr)))?;
        s.set_nodelay(true).map_err(Fail::io)?;
        Ok(s)
    };
    // Reach the receiver before hashing anything.
    let mut ctl = connect()?;
    let n = block_count(size, o.block);
    let per = tree::per_block(size, o.block);
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let shrank = |what: &str| {
        let now = file.metadata().map(|m| m.len()).unwrap_or(0);
        Fail::bad(format!("cannot read {}: truncated while being {what} ({size} bytes when opened, {now} now)", o.file.display()))
    };
    // A file that shrank while hashed (through the map: zeros past its new
    // end; through read: a short read): one line naming it.
    let checked = |r: io::Result<Vec<Check>>| -> Result<Vec<Check>, Fail> {
        let now = file.metadata().map(|m| m.len()).unwrap_or(0);
        if now < size || r.as_ref().is_err_and(|e| e.kind() == io::ErrorKind::UnexpectedEof) {
            return Err(shrank("hashed"));
        }
        r.map_err(|e| Fail::bad(format!("cannot read {}: {e}", o.file.display())))
    };
    // Blocks that are BLAKE3 subtrees are hashed as they are sent; other
    // block sizes (and a file of one block) take one pass first.
    let t_hash = Instant::now();
    let pre: Option<(String, Vec<Check>)> = if per {
        None
    } else {
        emit(&json!({"event": "hashing", "file": o.file.display().to_string(), "size": size}));
        let mut whole = String::new();
        let checks = checked(tree::hash_file(&file, size, o.block, threads).map(|(h, c)| {
            whole = h;
            c
        }))
        .map_err(|e| Fail { message: format!("{}; nothing was sent", e.message), ..e })?;
        Some((whole, checks))
    };
    let mut hash_s = t_hash.elapsed().as_secs_f64();
    if o.hold {
        emit(&json!({"event": "hashed", "hash_s": hash_s}));
        let mut line = String::new();
        io::stdin().read_line(&mut line).map_err(Fail::io)?;
        let go: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        o.rate_bps = go["go_rate_bps"].as_u64().ok_or_else(|| Fail::other("stopped before sending: no go on stdin".into()))?;
    }
    ctl.write_all(proto::MAGIC_CONTROL).map_err(Fail::io)?;
    proto::write_msg(&mut ctl, &json!({"type": "hello", "version": o.version, "name": name, "size": size, "block": o.block, "force": o.force}))
        .map_err(Fail::io)?;
    let welcome = proto::read_msg(&mut ctl).map_err(|e| Fail::other(format!("receiver {}: {e}", o.addr)))?;
    if welcome["type"] == "error" {
        return Err(Fail::bad(format!("receiver refused: {}", welcome["message"].as_str().unwrap_or("?"))));
    }
    if welcome["type"] != "welcome" || welcome["version"].as_u64() != Some(o.version) {
        return Err(Fail::bad(format!("receiver {}: protocol version mismatch or not an alphaqos-xfer receiver ({})", o.addr, welcome)));
    }
    let session = welcome["session"].as_u64().ok_or_else(|| Fail::other("welcome without a session".into()))?;
    let mut have = proto::from_ranges(&welcome["have"], n).map_err(Fail::other)?;
    // A resume: the blocks the receiver holds are this file's only if their
    // checks are this file's. Hash them here (only them) and compare; a
    // block that differs is sent again.
    let held_idx: Vec<u64> = (0..n).filter(|i| have[*i as usize]).collect();
    let theirs: Vec<Option<Check>> = welcome["checks"].as_array().map(|a| a.iter().map(|h| h.as_str().and_then(proto::check_from_hex)).collect()).unwrap_or_default();
    if theirs.len() != held_idx.len() {
        return Err(Fail::other(format!("welcome: {} checks for {} held blocks", theirs.len(), held_idx.len())));
    }
    let mut cvs: Vec<Option<Check>> = match &pre {
        Some((_, c)) => c.iter().copied().map(Some).collect(),
        None => vec![None; n as usize],
    };
    let mut held_differ = 0u64;
    if !held_idx.is_empty() {
        let t_held = Instant::now();
        let mine = match &pre {
            Some((_, c)) => held_idx.iter().map(|i| c[*i as usize]).collect(),
            None => {
                emit(&json!({"event": "hashing", "file": o.file.display().to_string(), "size": size, "held_blocks": held_idx.len()}));
                checked(tree::hash_blocks(&file, size, o.block, &held_idx, threads))?
            }
        };
        for ((i, m), t) in held_idx.iter().zip(mine).zip(&theirs) {
            cvs[*i as usize] = Some(m);
            if *t != Some(m) {
                have[*i as usize] = false;
                held_differ += 1;
            }
        }
        hash_s += t_held.elapsed().as_secs_f64();
    }
    let held = have.iter().filter(|h| **h).count() as u64;
    let pending: VecDeque<u64> = (0..n).filter(|i| !have[*i as usize]).collect();
    let held_bytes: u64 = (0..n).filter(|i| have[*i as usize]).map(|i| block_span(i, size, o.block).1).sum();
    let state = Arc::new(State {
        q: Mutex::new(Queue { pending, inflight: Vec::new(), verified: have.clone(), failures: vec![0; n as usize], cvs, acked: held, done_sent: false, finished: false, error: None }),
        cv: Condvar::new(),
        total: n,
        stop: AtomicBool::new(false),
        sent_blocks: AtomicU64::new(0),
        resent: AtomicU64::new(0),
        copies: AtomicU64::new(0),
        acked_bytes: AtomicU64::new(held_bytes),
        held_bytes,
    });
    emit(&json!({"event": "start", "name": name, "size": size, "hash_s": hash_s,
                 "blocks": n, "held": held, "held_differ": held_differ, "block": o.block, "streams": o.streams, "session": session}));

    // The data connections.
    let mut conns = Vec::new();
    let mut cc_note = String::new();
    let mut bpf: Option<basecc::Base> = None;
    for i in 0..o.streams {
        let mut s = connect()?;
        let fd = s.as_raw_fd();
        if i == 0 {
            net::set_dscp(fd, o.dscp_base).map_err(|e| Fail::other(format!("IP_TOS: {e}")))?;
            match o.cc.as_str() {
                "pacing-only" => cc_note = "pacing only".into(),
                "alphaqos_base" => match basecc::Base::open() {
                    Ok(b) => match b.attach(fd, o.rate_bps) {
                        Ok(()) => {
                            cc_note = "alphaqos_base (BPF) and pacing".into();
                            bpf = Some(b);
                        }
                        Err(e) => cc_note = format!("pacing only: alphaqos_base could not be attached: {e}"),
                    },
                    Err(why) => cc_note = format!("pacing only: alphaqos_base unavailable: {why}"),
                },
                other => {
                    net::set_congestion(fd, other).map_err(|e| Fail::bad(format!("--cc {other}: {e} (see /proc/sys/net/ipv4/tcp_available_congestion_control)")))?;
                    cc_note = format!("{other} and pacing");
                }
            }
            if o.rate_bps > 0 {
                net::set_pacing(fd, o.rate_bps).map_err(|e| Fail::other(format!("SO_MAX_PACING_RATE: {e}")))?;
            }
        } else {
            net::set_dscp(fd, o.dscp_excess).map_err(|e| Fail::other(format!("IP_TOS: {e}")))?;
        }
        let mut head = Vec::with_capacity(13);
        head.extend_from_slice(proto::MAGIC_DATA);
        head.extend_from_slice(&session.to_be_bytes());
        head.push(i as u8);
        s.write_all(&head).map_err(Fail::io)?;
        conns.push(Arc::new(Conn { stream: s, bytes: AtomicU64::new(0) }));
    }
    emit(&json!({"event": "cc", "base": cc_note}));
    // The blocks are hashed through a read-only map (no copy out of the
    // page cache; a file truncated under it reads zeros and says so).
    let map = if per { tree::Mapping::new(&file, size).ok() } else { None };
    let src = Arc::new(Source { file, path: o.file.display().to_string(), map, size, block: o.block, pre: pre.is_some() });
    let rate = Arc::new(AtomicU64::new(o.rate_bps));
    let mut workers = Vec::new();
    for (i, c) in conns.iter().enumerate() {
        let (c, st, src) = (c.clone(), state.clone(), src.clone());
        let rate = rate.clone();
        workers.push(std::thread::spawn(move || sender_loop(i, &c, &st, &src, &rate)));
    }
    // The receiver's acknowledgements.
    let reader = {
        let st = state.clone();
        let mut r = ctl.try_clone().map_err(Fail::io)?;
        let block = o.block;
        std::thread::spawn(move || control_reader(&mut r, &st, size, block))
    };
    // Rate changes from the front.
    {
        let (rate, base, st) = (rate.clone(), conns[0].stream.as_raw_fd(), state.clone());
        let ctl_w = Arc::new(Mutex::new(ctl.try_clone().map_err(Fail::io)?));
        let bpf_on = bpf.is_some();
        std::thread::spawn(move || stdin_reader(&rate, base, bpf_on, &ctl_w, &st));
    }

    let t0 = Instant::now();
    let mut last = (t0, vec![0u64; conns.len()]);
    let mut hash = String::new();
    let outcome = loop {
        let (finished, error, send_done) = {
            let q = state.q.lock().unwrap();
            let timeout = o.interval.saturating_sub(last.0.elapsed());
            let mut q = state.cv.wait_timeout_while(q, timeout, |q| !q.finished && q.error.is_none() && (q.acked < state.total || q.done_sent)).unwrap().0;
            let send_done = !q.finished && q.error.is_none() && q.acked >= state.total && !q.done_sent;
            let mut root = None;
            if send_done {
                q.done_sent = true;
                root = Some(match &pre {
                    Some((whole, _)) => whole.clone(),
                    None => {
                        let cvs: Option<Vec<Check>> = q.cvs.iter().copied().collect();
                        let cvs = cvs.ok_or_else(|| Fail::other("a verified block without its check".into()))?;
                        tree::root(&cvs).to_hex().to_string()
                    }
                });
            }
            (q.finished, q.error.clone(), root)
        };
        if let Some(e) = error {
            break Err(e);
        }
        if finished {
            break Ok(());
        }
        if let Some(root) = send_done {
            hash = root;
            proto::write_msg(&mut ctl, &json!({"type": "done", "hash": hash})).map_err(Fail::io)?;
        }
        if last.0.elapsed() >= o.interval {
            let now = Instant::now();
            report(&conns, &state, size, t0, &mut last, now, rate.load(Ordering::SeqCst), bpf.as_ref());
        }
    };
    state.stop.store(true, Ordering::SeqCst);
    state.cv.notify_all();
    let now = Instant::now();
    let infos: Vec<TcpInfo> = conns.iter().map(|c| net::tcp_info(c.stream.as_raw_fd()).unwrap_or_default()).collect();
    for c in &conns {
        let _ = c.stream.shutdown(Shutdown::Both);
    }
    let _ = ctl.shutdown(Shutdown::Both);
    for w in workers {
        let _ = w.join();
    }
    let _ = reader.join();
    outcome?;
    let secs = now.duration_since(t0).as_secs_f64();
    let per: Vec<Value> = conns
        .iter()
        .zip(&infos)
        .enumerate()
        .map(|(i, (c, t))| {
            json!({"role": if i == 0 {"base"} else {"additional"}, "bytes": c.bytes.load(Ordering::SeqCst),
                   "segs_out": t.segs_out, "data_segs_out": t.data_segs_out, "total_retrans": t.total_retrans,
                   "bytes_retrans": t.bytes_retrans, "min_rtt_us": t.min_rtt, "rtt_us": t.rtt})
        })
        .collect();
    emit(&json!({"event": "done", "name": name, "size": size, "hash": hash, "seconds": secs, "blocks": n, "held": held,
                 "blocks_sent": state.sent_blocks.load(Ordering::SeqCst), "blocks_resent": state.resent.load(Ordering::SeqCst),
                 "blocks_copied": state.copies.load(Ordering::SeqCst),
                 "conns": per, "cc": cc_note}));
    Ok(())
}

fn fail(st: &State, e: Fail) {
    let mut q = st.q.lock().unwrap();
    if q.error.is_none() && !q.finished {
        q.error = Some(e);
    }
    drop(q);
    st.cv.notify_all();
}

/// Takes blocks from the queue; when it is empty, an idle additional
/// connection sends a copy of a block still on the base connection (the endgame:
/// the tail of the file does not wait for the slowest connection, the paced
/// base one at a small reservation). The first verified copy counts.
/// The file as the sending threads see it.
struct Source {
    file: File,
    path: String,
    /// The file mapped read-only, for hashing blocks as they are sent (None:
    /// read into a buffer).
    map: Option<tree::Mapping>,
    size: u64,
    block: u64,
    /// The checks were computed before sending (a block size that is not a
    /// BLAKE3 subtree): `Queue::cvs` holds them all.
    pre: bool,
}

/// The hash and the sendfile(2) of a block alternate in pieces of this
/// size: the socket's buffer drains while the next piece is hashed.
const PIECE: u64 = 2 << 20;

fn sender_loop(me: usize, c: &Conn, st: &State, src: &Source, rate: &AtomicU64) {
    let sock = c.stream.as_raw_fd();
    let mut buf = Vec::new();
    loop {
        let index = {
            let mut q = st.q.lock().unwrap();
            loop {
                if st.stop.load(Ordering::SeqCst) || q.error.is_some() || q.finished {
                    return;
                }
                if let Some(i) = q.pending.pop_front() {
                    q.inflight.push((i, me));
                    st.sent_blocks.fetch_add(1, Ordering::SeqCst);
                    break i;
                }
                let copies = |b: u64, q: &Queue| q.inflight.iter().filter(|(x, _)| *x == b).count();
                // Only blocks of the paced base connection (0) are copied: the
                // unpaced ones finish theirs about as fast as a copy would,
                // and so does the base connection unpaced (rate 0), whose
                // copies only added a block for the receiver to take in and
                // read back (docs/transfer.md).
                let paced = rate.load(Ordering::SeqCst) > 0;
                let spare = q.inflight.iter().filter(|_| paced).find(|(b, c)| *c == 0 && me != 0 && !q.verified[*b as usize] && copies(*b, &q) == 1).map(|e| e.0);
                if let Some(i) = spare {
                    q.inflight.push((i, me));
                    st.copies.fetch_add(1, Ordering::SeqCst);
                    break i;
                }
                q = st.cv.wait(q).unwrap();
            }
        };
        let (off, len) = block_span(index, src.size, src.block);
        let pre = if src.pre { st.q.lock().unwrap().cvs[index as usize] } else { None };
        let r = (|| -> io::Result<()> {
            (&c.stream).write_all(&proto::block_header(index, len as u32))?;
            let check = match pre {
                Some(check) => {
                    sendfile_all(sock, src.file.as_raw_fd(), off, len)?;
                    check
                }
                None => {
                    // Each piece hashed right after it is handed to TCP.
                    let mut h = tree::BlockHasher::new(Some(off));
                    let mut done = 0u64;
                    while done < len {
                        let take = (len - done).min(PIECE);
                        sendfile_all(sock, src.file.as_raw_fd(), off + done, take)?;
                        match &src.map {
                            Some(m) => {
                                // SAFETY: inside the file's size as stat(2)
                                // gave it (truncated since: zeros, and an error).
                                h.update(unsafe { m.bytes(off + done, take as usize) });
                                if m.truncated() {
                                    return Err(tree::truncated());
                                }
                            }
                            None => {
                                buf.resize(take as usize, 0);
                                src.file.read_exact_at(&mut buf, off + done)?;
                                h.update(&buf);
                            }
                        }
                        done += take;
                    }
                    h.finish()
                }
            };
            // Recorded before the receiver can acknowledge it.
            st.q.lock().unwrap().cvs[index as usize] = Some(check);
            (&c.stream).write_all(&check)?;
            Ok(())
        })();
        match r {
            Ok(()) => {
                c.bytes.fetch_add(len, Ordering::SeqCst);
            }
            Err(e) => {
                let now = src.file.metadata().map(|m| m.len()).unwrap_or(0);
                if now < src.size && !st.stop.load(Ordering::SeqCst) {
                    fail(st, Fail::bad(format!("cannot read {}: truncated while being sent ({} bytes when opened, {now} now); the receiver keeps the blocks it verified", src.path, src.size)));
                    return;
                }
                if !st.stop.load(Ordering::SeqCst) {
                    // A receiver that drops a data connection says why on the
                    // control one first (a full disk, a block that does not
                    // fit): its reason, when it comes, is the error.
                    let q = st.q.lock().unwrap();
                    let reason = |q: &mut Queue| q.error.is_none() && !q.finished && !st.stop.load(Ordering::SeqCst);
                    drop(st.cv.wait_timeout_while(q, Duration::from_secs(2), reason).unwrap());
                    fail(st, Fail::other(format!("data connection: {e}")));
                }
                return;
            }
        }
    }
}

fn sendfile_all(sock: RawFd, fd: RawFd, off: u64, len: u64) -> io::Result<()> {
    let mut offset = off as libc::off_t;
    net::all_of(len as usize, "the file shrank while being sent", |done| unsafe {
        libc::sendfile(sock, fd, &mut offset, (len as usize - done).min(1 << 30))
    })
}

fn control_reader(r: &mut TcpStream, st: &State, size: u64, block: u64) {
    loop {
        let msg = match proto::read_msg(r) {
            Ok(m) => m,
            Err(e) => {
                if !st.stop.load(Ordering::SeqCst) {
                    fail(st, Fail::other(format!("control connection lost: {e}")));
                }
                return;
            }
        };
        match msg["type"].as_str() {
            Some("ack") => {
                let i = msg["block"].as_u64().unwrap_or(u64::MAX);
                let mut q = st.q.lock().unwrap();
                if i >= st.total || q.verified[i as usize] {
                    // A late copy of a block already verified (endgame).
                } else if msg["ok"].as_bool() == Some(true) {
                    q.verified[i as usize] = true;
                    q.inflight.retain(|e| e.0 != i);
                    q.acked += 1;
                    st.acked_bytes.fetch_add(block_span(i.min(block_count(size, block) - 1), size, block).1, Ordering::SeqCst);
                } else {
                    st.resent.fetch_add(1, Ordering::SeqCst);
                    q.inflight.retain(|e| e.0 != i);
                    q.failures[i as usize] += 1;
                    if q.failures[i as usize] >= MAX_BLOCK_FAILURES {
                        drop(q);
                        fail(st, Fail::other(format!("block {i} failed its check {MAX_BLOCK_FAILURES} times (the file changed while sent, or a path that corrupts data)")));
                        return;
                    }
                    q.pending.push_back(i);
                }
                drop(q);
                st.cv.notify_all();
            }
            Some("resend") => {
                let blocks: Vec<u64> = msg["blocks"].as_array().map(|a| a.iter().filter_map(Value::as_u64).collect()).unwrap_or_default();
                let mut q = st.q.lock().unwrap();
                q.done_sent = false;
                for i in blocks {
                    if i >= st.total || !q.verified[i as usize] {
                        continue;
                    }
                    q.verified[i as usize] = false;
                    q.acked -= 1;
                    st.acked_bytes.fetch_sub(block_span(i, size, block).1, Ordering::SeqCst);
                    st.resent.fetch_add(1, Ordering::SeqCst);
                    q.inflight.retain(|e| e.0 != i);
                    q.pending.push_back(i);
                }
                drop(q);
                st.cv.notify_all();
            }
            Some("finished") => {
                st.q.lock().unwrap().finished = true;
                st.cv.notify_all();
                return;
            }
            Some("error") => {
                let m = msg["message"].as_str().unwrap_or("?").to_string();
                let bad = m.contains("no space left");
                fail(st, if bad { Fail::bad(format!("receiver: {m}")) } else { Fail::other(format!("receiver: {m}")) });
                return;
            }
            _ => {}
        }
    }
}

fn stdin_reader(rate: &AtomicU64, base: RawFd, bpf_on: bool, ctl: &Mutex<TcpStream>, st: &State) {
    let stdin = io::stdin();
    let bpf = if bpf_on { basecc::Base::open().ok() } else { None };
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            emit(&json!({"event": "warning", "message": format!("stdin: not a JSON object: {line}")}));
            continue;
        };
        if let Some(bps) = v["rate_bps"].as_u64() {
            if st.stop.load(Ordering::SeqCst) {
                return;
            }
            let r = net::set_pacing(base, bps);
            if let (Some(b), true) = (&bpf, bps > 0) {
                let _ = b.set_target(base, bps);
            }
            rate.store(bps, Ordering::SeqCst);
            let _ = proto::write_msg(&mut *ctl.lock().unwrap(), &json!({"type": "rate", "bps": bps}));
            emit(&json!({"event": "rate", "bps": bps, "ok": r.is_ok()}));
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn report(conns: &[Arc<Conn>], st: &State, size: u64, t0: Instant, last: &mut (Instant, Vec<u64>), now: Instant, rate: u64, bpf: Option<&basecc::Base>) {
    let dt = now.duration_since(last.0).as_secs_f64().max(1e-9);
    let t_report = Instant::now();
    let mut per = Vec::new();
    for (i, c) in conns.iter().enumerate() {
        let t = net::tcp_info(c.stream.as_raw_fd()).unwrap_or_default();
        // Bytes the peer acknowledged (TCP_INFO), the throughput on the wire.
        let acked = t.bytes_acked;
        let bps = (acked.saturating_sub(last.1[i])) as f64 * 8.0 / dt;
        last.1[i] = acked;
        let mut v = json!({"role": if i == 0 {"base"} else {"additional"}, "bytes": c.bytes.load(Ordering::SeqCst), "bytes_acked": acked,
                           "bps": bps, "rtt_us": t.rtt, "min_rtt_us": t.min_rtt, "total_retrans": t.total_retrans, "segs_out": t.segs_out,
                           "data_segs_out": t.data_segs_out, "cwnd": t.snd_cwnd});
        if i == 0 {
            if let Some(b) = bpf {
                if let Ok(s) = b.read(c.stream.as_raw_fd()) {
                    v["cc_state"] = s;
                }
            }
        }
        per.push(v);
    }
    last.0 = now;
    let acked = st.q.lock().unwrap().acked;
    // Bytes at the receiver by TCP's count (held blocks plus what the peer
    // acknowledged on each connection, less the framing): finer than whole
    // blocks, for the deadline loop.
    let wire: u64 = per.iter().map(|c| c["bytes_acked"].as_u64().unwrap_or(0)).sum();
    let per_block = (proto::BLOCK_HEADER + proto::BLOCK_TRAILER) as u64;
    let framing = 13 * conns.len() as u64 + per_block * (st.sent_blocks.load(Ordering::SeqCst) + st.copies.load(Ordering::SeqCst));
    let delivered = (st.held_bytes + wire.saturating_sub(framing)).min(size).max(st.acked_bytes.load(Ordering::SeqCst));
    emit(&json!({"event": "progress", "t": now.duration_since(t0).as_secs_f64(), "bytes_delivered": delivered, "bytes_done": st.acked_bytes.load(Ordering::SeqCst),
                 "bytes_total": size, "blocks_done": acked, "blocks_total": st.total, "rate_bps": rate, "conns": per,
                 "report_us": t_report.elapsed().as_secs_f64() * 1e6}));
}
