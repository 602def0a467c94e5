//! The receiver (`alphaqos-xfer serve`): one listening port, a thread per
//! control connection, and per transfer up to one receiving thread per core
//! it may run on (`--threads`), each serving its share of the data
//! connections by poll(2) (`pump`). Blocks land in `DIR/.NAME.part`: copied from the socket into
//! a reused buffer, hashed there while cache-hot and written by `pwrite`
//! (or, with `ALPHAQOS_XFER_RECV=splice`, moved by `splice(2)` from the
//! socket through a pipe into the file, no copy through user space, and
//! hashed through a read-only map of the file: measured no cheaper here,
//! see docs/transfer.md); the verified
//! ones (the block's BLAKE3 check equal to the sender's, see `proto`) are
//! recorded in the sidecar block map `DIR/.NAME.part.map` (JSON, replaced
//! atomically), from which a new `hello` for the same file resumes. When
//! the sender says `done`, the whole file's BLAKE3 is checked and the part
//! file renamed to `DIR/NAME` (rename(2): the name appears only complete).
use crate::proto::{self, block_count, block_span, Check};
use crate::tree;
use crate::{emit, Fail};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The receive step (one recv(2) with MSG_WAITALL, then the hash and the
/// pwrite of the piece). 2 MiB: the receiving thread wakes once per 2 MiB
/// queued instead of once per 256 KiB, which paid more than hashing the
/// piece while it is in L2: receiver CPU per GB -8 to -10 %, throughput +17
/// % with 1 and 4 connections (docs/transfer.md; 4 MiB and more: no better).
const CHUNK: usize = 2 << 20;

pub struct ServeOptions {
    pub listen: String,
    pub dir: PathBuf,
    /// Test hook: flip one byte of this block the first time it arrives
    /// (corruption on the way, caught by the block's check).
    pub corrupt_block: Option<u64>,
    /// Exit after this many transfers (0: serve forever).
    pub once: u64,
    /// Receiving threads per transfer (None: one fewer than the cores this
    /// process may run on, at least one; see `lane_count`). A transfer's
    /// data connections are dealt to them in turn, so it uses at most as
    /// many as it has connections.
    pub threads: Option<usize>,
}

/// The receiving threads a transfer may use: one per core this process may
/// run on (`available_parallelism` reads its CPU affinity and cgroup quota)
/// but one, left to the kernel's receive processing (softirq, ACKs) that
/// every byte also costs; so one thread on a two-core host (where a second
/// was slower, docs/transfer.md) and on a receiver pinned to one core.
fn lane_count(opts: &ServeOptions) -> usize {
    opts.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1)).max(1)
}

struct Session {
    name: String,
    dir: PathBuf,
    size: u64,
    block: u64,
    part: File,
    /// The part file mapped read-only, for hashing what splice(2) wrote
    /// (None: blocks go through a buffer and pwrite).
    map: Option<tree::Mapping>,
    state: Mutex<MapState>,
    control: Mutex<TcpStream>,
    closed: AtomicBool,
    corrupt: Mutex<Option<u64>>,
    received: AtomicU64,
    bad: AtomicU64,
    /// The receiving threads ("lanes"), each with the data connections
    /// handed to it and whether it runs; new connections go to them in turn.
    lanes: Vec<Lane>,
    next_lane: AtomicU64,
}

struct MapState {
    done: Vec<bool>,
    /// The verified blocks' checks (the sender's, equal to the received bytes').
    hashes: Vec<Check>,
    /// Copies of each block written in this session. A block written once
    /// and verified needs no second look: its check is its BLAKE3 chaining
    /// value (`tree`), part of the whole-file hash. Held blocks of an earlier
    /// attempt, and blocks written twice (an endgame copy beside the first:
    /// the later writer's bytes are what is on disk), are read back for the
    /// whole-file check.
    writes: Vec<u8>,
}

impl MapState {
    fn new(n: u64) -> MapState {
        MapState { done: vec![false; n as usize], hashes: vec![[0; 32]; n as usize], writes: vec![0; n as usize] }
    }
}

struct Shared {
    opts: ServeOptions,
    sessions: Mutex<HashMap<u64, Arc<Session>>>,
    active: Mutex<HashSet<String>>,
    finished: AtomicU64,
}

pub fn serve(opts: ServeOptions) -> Result<(), Fail> {
    let meta = std::fs::metadata(&opts.dir).map_err(|e| Fail::bad(format!("--dir {}: {e}", opts.dir.display())))?;
    if !meta.is_dir() {
        return Err(Fail::bad(format!("--dir {}: not a directory", opts.dir.display())));
    }
    let probe = opts.dir.join(format!(".alphaqos-xfer-probe-{}", std::process::id()));
    File::create(&probe).map_err(|e| Fail::bad(format!("--dir {}: not writable: {e}", opts.dir.display())))?;
    let _ = std::fs::remove_file(&probe);
    let listener = TcpListener::bind(&opts.listen).map_err(|e| Fail::bad(format!("--listen {}: {e}", opts.listen)))?;
    let addr = listener.local_addr().map_err(Fail::io)?;
    emit(&json!({"event": "listening", "addr": addr.to_string(), "dir": opts.dir.display().to_string(), "version": proto::VERSION}));
    let shared = Arc::new(Shared { opts, sessions: Mutex::new(HashMap::new()), active: Mutex::new(HashSet::new()), finished: AtomicU64::new(0) });
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let shared = shared.clone();
        std::thread::spawn(move || {
            let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
            if let Err(e) = handle(&shared, conn) {
                if e.kind() != io::ErrorKind::UnexpectedEof {
                    emit(&json!({"event": "connection-error", "peer": peer, "message": e.to_string()}));
                }
            }
            let once = shared.opts.once;
            if once > 0 && shared.finished.load(Ordering::SeqCst) >= once {
                std::process::exit(0);
            }
        });
    }
    Ok(())
}

fn handle(shared: &Arc<Shared>, mut conn: TcpStream) -> io::Result<()> {
    let _ = conn.set_nodelay(true);
    let mut magic = [0u8; 4];
    conn.read_exact(&mut magic)?;
    match &magic {
        m if m == proto::MAGIC_CONTROL => control(shared, conn),
        m if m == proto::MAGIC_DATA => data(shared, conn),
        _ => Err(io::Error::new(io::ErrorKind::InvalidData, "not an alphaqos-xfer connection (bad magic)")),
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 200 && !name.starts_with('.') && !name.contains('/') && !name.contains('\0')
}

fn map_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.part.map"))
}

fn part_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.part"))
}

fn save_map(s: &Session, st: &MapState) -> io::Result<()> {
    let path = map_path(&s.dir, &s.name);
    let tmp = path.with_extension("map.tmp");
    let hashes: Vec<Value> = st.done.iter().zip(&st.hashes).map(|(d, h)| if *d { json!(proto::check_hex(h)) } else { Value::Null }).collect();
    let body = json!({"version": proto::VERSION, "name": s.name, "size": s.size, "block": s.block,
                      "done": proto::to_ranges(&st.done), "hashes": hashes});
    let r = std::fs::write(&tmp, serde_json::to_vec(&body)?).and_then(|_| std::fs::rename(&tmp, &path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// Free bytes for an unprivileged writer on the file system of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let mut v: libc::statvfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statvfs(c.as_ptr(), &mut v) } == 0).then(|| v.f_bavail as u64 * v.f_frsize as u64)
}

/// The one line a full disk gives the sender (which exits with status 2).
fn full_message(dir: &Path, name: &str, what: &str) -> String {
    let free = free_bytes(dir).map(|b| format!("{b} bytes free")).unwrap_or_else(|| "free space unknown".into());
    format!("no space left on the receiver's disk: {} ({free}) writing {what}; the partial file {} and its block map are kept: send again with the same arguments once there is room",
            dir.display(), part_path(dir, name).display())
}

/// Reserves the file's space (fallocate(2) allocates only the holes, so on a
/// resume it asks for the rest). Err(message) when the disk cannot hold it.
/// File systems without fallocate (ext2/ext3 files, some network file
/// systems) get a sparse file and a check of the free space instead; their
/// disk can still fill in mid-transfer when something else writes to it.
fn reserve(part: &File, dir: &Path, name: &str, size: u64) -> Result<(), String> {
    if size == 0 {
        return Ok(());
    }
    let rc = unsafe { libc::fallocate(part.as_raw_fd(), 0, 0, size as libc::off_t) };
    let e = io::Error::last_os_error();
    let short = || format!("no space left on the receiver for {name} ({size} bytes) in {}", dir.display());
    if rc == 0 {
        return Ok(());
    }
    if is_full(&e) {
        return Err(short());
    }
    let meta = part.metadata().map_err(|e| e.to_string())?;
    if meta.len() < size {
        part.set_len(size).map_err(|e| format!("cannot write {}: {e}", part_path(dir, name).display()))?;
    }
    use std::os::unix::fs::MetadataExt;
    let allocated = meta.blocks() * 512;
    match free_bytes(dir) {
        Some(free) if free < size.saturating_sub(allocated) => Err(short()),
        _ => Ok(()),
    }
}

/// The block map of an earlier attempt at a file of this name, size and
/// block size, or None (the sender compares the held blocks' checks with
/// its own file's: a block that differs is sent again, see `proto`).
/// Err(message): it is one, but written under another protocol version.
fn load_map(dir: &Path, name: &str, size: u64, block: u64) -> Result<Option<MapState>, String> {
    let Some(body) = std::fs::read(map_path(dir, name)).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok()) else {
        return Ok(None);
    };
    if body["size"].as_u64() != Some(size) || body["block"].as_u64() != Some(block) {
        return Ok(None);
    }
    let version = body["version"].as_u64().unwrap_or(0);
    if version != proto::VERSION {
        return Err(format!("protocol version mismatch: the partial file {} was received under protocol version {version}, this receiver speaks {}: \
                            send with --force to start it over", part_path(dir, name).display(), proto::VERSION));
    }
    let n = block_count(size, block);
    let Ok(done) = proto::from_ranges(&body["done"], n) else { return Ok(None) };
    let Some(list) = body["hashes"].as_array().filter(|l| l.len() as u64 == n) else { return Ok(None) };
    let mut st = MapState::new(n);
    for (i, h) in list.iter().enumerate() {
        if done[i] {
            let Some(c) = h.as_str().and_then(proto::check_from_hex) else { return Ok(None) };
            st.hashes[i] = c;
        }
    }
    st.done = done;
    Ok(Some(st))
}

fn refuse(conn: &mut TcpStream, message: String) -> io::Result<()> {
    emit(&json!({"event": "refused", "message": message}));
    proto::write_msg(conn, &proto::error_msg(&message))
}

fn control(shared: &Arc<Shared>, mut conn: TcpStream) -> io::Result<()> {
    let hello = proto::read_msg(&mut conn)?;
    if hello["type"] != "hello" {
        return refuse(&mut conn, format!("expected hello, got {}", hello["type"]));
    }
    let version = hello["version"].as_u64().unwrap_or(0);
    if version != proto::VERSION {
        return refuse(&mut conn, format!("protocol version mismatch: the receiver speaks version {}, the sender {version}", proto::VERSION));
    }
    let (Some(name), Some(size), Some(block)) = (hello["name"].as_str(), hello["size"].as_u64(), hello["block"].as_u64()) else {
        return refuse(&mut conn, "hello: missing name, size or block".into());
    };
    let force = hello["force"].as_bool().unwrap_or(false);
    if !valid_name(name) {
        return refuse(&mut conn, format!("file name {name:?}: must be a plain name (no '/', not starting with '.')"));
    }
    if block == 0 || block > u32::MAX as u64 {
        return refuse(&mut conn, format!("block size {block}: must be from 1 byte to 4 GiB"));
    }
    let dir = shared.opts.dir.clone();
    let target = dir.join(name);
    if target.exists() && !force {
        return refuse(&mut conn, format!("{} exists on the receiver (send with --force to overwrite)", target.display()));
    }
    // One transfer per name at a time; an earlier attempt whose sender died is
    // given a few seconds to notice.
    let t0 = Instant::now();
    loop {
        if shared.active.lock().unwrap().insert(name.to_string()) {
            break;
        }
        if t0.elapsed() > Duration::from_secs(5) {
            return refuse(&mut conn, format!("a transfer of {name} is already in progress on the receiver"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let result = run_session(shared, &mut conn, &dir, name, size, block, force);
    shared.active.lock().unwrap().remove(name);
    result
}

#[allow(clippy::too_many_arguments)]
fn run_session(shared: &Arc<Shared>, conn: &mut TcpStream, dir: &Path, name: &str, size: u64, block: u64, force: bool) -> io::Result<()> {
    let n = block_count(size, block);
    let part_p = part_path(dir, name);
    let resumed = match load_map(dir, name, size, block) {
        Ok(m) => m.filter(|_| part_p.exists()),
        Err(_) if force => None,
        Err(m) => return refuse(conn, m),
    };
    let is_resume = resumed.is_some();
    let st = resumed.unwrap_or_else(|| MapState::new(n));
    let part = match OpenOptions::new().read(true).write(true).create(true).truncate(!is_resume).open(&part_p) {
        Ok(f) => f,
        Err(e) => return refuse(conn, format!("cannot write {}: {e}", part_p.display())),
    };
    if !is_resume {
        let _ = std::fs::remove_file(map_path(dir, name));
    }
    // Reserve the space up front: a full disk is refused before any data
    // moves (a new part file is removed; a resumable one is kept).
    if let Err(m) = reserve(&part, dir, name, size) {
        drop(part);
        if !is_resume {
            let _ = std::fs::remove_file(&part_p);
        }
        return refuse(conn, m);
    }
    let map = if size > 0 && recv_mode_splice() { tree::Mapping::new(&part, size).ok() } else { None };
    let id: u64 = {
        let mut b = [0u8; 8];
        File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).ok();
        u64::from_ne_bytes(b) | 1
    };
    let have = proto::to_ranges(&st.done);
    let checks: Vec<String> = st.done.iter().zip(&st.hashes).filter(|(d, _)| **d).map(|(_, h)| proto::check_hex(h)).collect();
    let held = st.done.iter().filter(|d| **d).count();
    let session = Arc::new(Session {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        size,
        block,
        part,
        map,
        state: Mutex::new(st),
        control: Mutex::new(conn.try_clone()?),
        closed: AtomicBool::new(false),
        corrupt: Mutex::new(shared.opts.corrupt_block),
        received: AtomicU64::new(0),
        bad: AtomicU64::new(0),
        lanes: (0..lane_count(&shared.opts)).map(|_| Lane::new()).collect::<io::Result<_>>()?,
        next_lane: AtomicU64::new(0),
    });
    let saved = save_map(&session, &session.state.lock().unwrap());
    if let Err(e) = saved {
        let m = if is_full(&e) { full_message(dir, name, "the block map") } else { format!("cannot write the block map of {name} in {}: {e}", dir.display()) };
        if !is_resume {
            drop(session);
            let _ = std::fs::remove_file(&part_p);
        }
        return refuse(conn, m);
    }
    shared.sessions.lock().unwrap().insert(id, session.clone());
    emit(&json!({"event": "session", "name": name, "size": size, "block": block, "blocks": n, "held": held, "resume": is_resume}));
    proto::write_msg(&mut *session.control.lock().unwrap(), &json!({"type": "welcome", "version": proto::VERSION, "session": id, "have": have, "checks": checks}))?;
    let outcome = session_loop(&session, conn);
    session.closed.store(true, Ordering::SeqCst);
    session.lanes.iter().for_each(|l| l.wake.notify());
    shared.sessions.lock().unwrap().remove(&id);
    if !matches!(outcome, Ok(true)) {
        let _ = save_map(&session, &session.state.lock().unwrap());
    }
    match &outcome {
        Ok(true) => {
            shared.finished.fetch_add(1, Ordering::SeqCst);
        }
        Ok(false) => {}
        Err(e) => emit(&json!({"event": "interrupted", "name": name, "message": e.to_string(),
                                "held": session.state.lock().unwrap().done.iter().filter(|d| **d).count()})),
    }
    outcome.map(|_| ())
}

/// Control messages until the file is complete (Ok(true)) or the sender goes.
fn session_loop(s: &Arc<Session>, conn: &mut TcpStream) -> io::Result<bool> {
    loop {
        let msg = proto::read_msg(conn)?;
        match msg["type"].as_str() {
            Some("rate") => emit(&json!({"event": "rate", "name": s.name, "bps": msg["bps"]})),
            Some("done") => {
                let Some(hash) = msg["hash"].as_str() else {
                    let m = "done without the whole file's hash".to_string();
                    proto::write_msg(&mut *s.control.lock().unwrap(), &proto::error_msg(&m))?;
                    return Err(io::Error::new(io::ErrorKind::InvalidData, m));
                };
                if let Some(done) = finish(s, hash)? {
                    return Ok(done);
                }
            }
            other => {
                let m = format!("unexpected control message {other:?}");
                proto::write_msg(&mut *s.control.lock().unwrap(), &proto::error_msg(&m))?;
                return Err(io::Error::new(io::ErrorKind::InvalidData, m));
            }
        }
    }
}

/// The sender says all blocks are acknowledged and gives the whole file's
/// BLAKE3 (`hash`): check the whole file. Some(true): renamed into place;
/// None: blocks asked again.
fn finish(s: &Arc<Session>, hash: &str) -> io::Result<Option<bool>> {
    let mut ctl = s.control.lock().unwrap();
    let missing: Vec<u64> = s.state.lock().unwrap().done.iter().enumerate().filter(|(_, d)| !**d).map(|(i, _)| i as u64).collect();
    if !missing.is_empty() {
        proto::write_msg(&mut *ctl, &json!({"type": "resend", "blocks": missing}))?;
        return Ok(None);
    }
    s.part.sync_data()?;
    let n = block_count(s.size, s.block);
    let st = {
        let st = s.state.lock().unwrap();
        MapState { done: st.done.clone(), hashes: st.hashes.clone(), writes: st.writes.clone() }
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut bad = Vec::new();
    let got = if tree::per_block(s.size, s.block) {
        // A block's check is its chaining value: those written once in this
        // session and verified are known; the others (held from an earlier
        // attempt, or written twice) are read back and compared with their
        // recorded check (a copy changed on disk since is asked again).
        let mut cvs = st.hashes.clone();
        for i in 0..n {
            if st.writes[i as usize] != 1 {
                let cv = tree::hash_block(&s.part, i, s.size, s.block, &mut buf)?;
                if cv != st.hashes[i as usize] {
                    bad.push(i);
                }
                cvs[i as usize] = cv;
            }
        }
        tree::root(&cvs).to_hex().to_string()
    } else if n == 1 && st.writes[0] == 1 {
        // A file of one block: its check is the file's hash.
        proto::check_hex(&st.hashes[0])
    } else {
        // One pass over the file (a block size that is not a power of two
        // times 1 KiB, or a file of one block); when it fails, a second
        // finds the blocks that differ from their checks.
        let (whole, _) = tree::hash_whole(&s.part, s.size, s.block, false)?;
        if whole != hash {
            let (_, checks) = tree::hash_whole(&s.part, s.size, s.block, true)?;
            bad = (0..n).filter(|&i| checks[i as usize] != st.hashes[i as usize]).collect();
        }
        whole
    };
    if got == hash {
        let target = s.dir.join(&s.name);
        std::fs::rename(part_path(&s.dir, &s.name), &target)?;
        let _ = std::fs::remove_file(map_path(&s.dir, &s.name));
        if let Ok(d) = File::open(&s.dir) {
            let _ = d.sync_all();
        }
        emit(&json!({"event": "complete", "name": s.name, "path": target.display().to_string(), "size": s.size,
                     "blocks_received": s.received.load(Ordering::SeqCst), "blocks_bad": s.bad.load(Ordering::SeqCst), "hash": got,
                     "thread_bytes": s.lanes.iter().map(|l| l.bytes.load(Ordering::Relaxed)).collect::<Vec<_>>()}));
        proto::write_msg(&mut *ctl, &json!({"type": "finished", "path": target.display().to_string(), "hash": got}))?;
        return Ok(Some(true));
    }
    if bad.is_empty() {
        let m = format!("whole-file BLAKE3 {got} differs from the sender's {} although every block's check matched (the file changed while sent?)", hash);
        proto::write_msg(&mut *ctl, &proto::error_msg(&m))?;
        return Err(io::Error::new(io::ErrorKind::InvalidData, m));
    }
    {
        let mut st = s.state.lock().unwrap();
        for &i in &bad {
            st.done[i as usize] = false;
        }
        save_map(s, &st)?;
    }
    s.bad.fetch_add(bad.len() as u64, Ordering::SeqCst);
    emit(&json!({"event": "stored-blocks-bad", "name": s.name, "blocks": bad}));
    proto::write_msg(&mut *ctl, &json!({"type": "resend", "blocks": bad}))?;
    Ok(None)
}

fn data(shared: &Arc<Shared>, mut conn: TcpStream) -> io::Result<()> {
    let mut head = [0u8; 9];
    conn.read_exact(&mut head)?;
    let id = u64::from_be_bytes(head[..8].try_into().unwrap());
    let Some(s) = shared.sessions.lock().unwrap().get(&id).cloned() else {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "data connection for an unknown session"));
    };
    conn.set_nonblocking(true)?;
    let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let lane = (s.next_lane.fetch_add(1, Ordering::SeqCst) % s.lanes.len() as u64) as usize;
    let start = {
        let mut p = s.lanes[lane].pump.lock().unwrap();
        p.pending.push((conn, peer));
        !std::mem::replace(&mut p.running, true)
    };
    s.lanes[lane].wake.notify();
    if start {
        let s = s.clone();
        std::thread::spawn(move || pump(&s, lane));
    }
    Ok(())
}

/// The data connections of a session handed to one receiving thread.
#[derive(Default)]
struct Pump {
    pending: Vec<(TcpStream, String)>,
    running: bool,
}

/// One receiving thread of a session: its pending connections and the
/// eventfd that wakes its poll.
struct Lane {
    pump: Mutex<Pump>,
    wake: Wake,
    /// Payload bytes this thread has received (the `complete` event's
    /// `thread_bytes`: how the work was shared).
    bytes: AtomicU64,
}

impl Lane {
    fn new() -> io::Result<Lane> {
        Ok(Lane { pump: Mutex::new(Pump::default()), wake: Wake::new()?, bytes: AtomicU64::new(0) })
    }
}

/// An eventfd(2) that wakes a receiving thread's poll (a new data
/// connection, the session closed).
struct Wake(std::os::fd::OwnedFd);

impl Wake {
    fn new() -> io::Result<Wake> {
        use std::os::fd::FromRawFd;
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Wake(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }
    fn notify(&self) {
        let one: u64 = 1;
        unsafe { libc::write(self.0.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }
    fn clear(&self) {
        let mut v: u64 = 0;
        unsafe { libc::read(self.0.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    }
}

/// The block in progress on one data connection: its own incremental
/// BLAKE3 state and write offset, the piece gathered so far.
struct InBlock {
    index: u64,
    /// The sender's check, the trailer after the payload (`want_got` of its bytes read).
    want: Check,
    want_got: usize,
    off: u64,
    left: usize,
    hasher: tree::BlockHasher,
    first: bool,
}

/// One data connection as the receiving thread sees it: a block header
/// being read (`head_got` of its bytes), or a block's bytes.
struct Conn {
    sock: TcpStream,
    peer: String,
    head: [u8; proto::BLOCK_HEADER],
    head_got: usize,
    block: Option<InBlock>,
    /// Buffer mode: the piece being filled (up to CHUNK, then hashed and
    /// written at once); splice mode: a pipe.
    buf: Option<AlignedBuf>,
    filled: usize,
    pipe: Option<Pipe>,
}

/// What one turn on a readable connection came to.
enum Turn {
    /// Drained (EAGAIN) or its share of this round done.
    Again,
    /// End of stream between blocks.
    Eof,
}

/// A receiving thread of a session (`lane`): its data connections
/// (nonblocking) served through poll(2), as iperf3 serves its streams (on
/// one core, a thread per connection did not take turns: one connection
/// carried most of the bytes, docs/transfer.md; so there is one thread per
/// core, not per connection). Each readable connection gets a turn of at
/// most one piece (the CHUNK receive step) per round; blocks are written,
/// checked, recorded and acknowledged as each completes.
fn pump(s: &Arc<Session>, lane: usize) {
    let me = &s.lanes[lane];
    let mut conns: Vec<Conn> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    loop {
        if s.closed.load(Ordering::SeqCst) {
            break;
        }
        me.wake.clear();
        for (sock, peer) in me.pump.lock().unwrap().pending.drain(..) {
            let splice = s.map.is_some();
            let pipe = if splice {
                match Pipe::new(CHUNK) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        emit(&json!({"event": "connection-error", "peer": peer, "message": e.to_string()}));
                        continue;
                    }
                }
            } else {
                None
            };
            let buf = (!splice).then(|| AlignedBuf::new(CHUNK));
            conns.push(Conn { sock, peer, head: [0; proto::BLOCK_HEADER], head_got: 0, block: None, buf, filled: 0, pipe });
        }
        fds.clear();
        fds.push(libc::pollfd { fd: me.wake.0.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        fds.extend(conns.iter().map(|c| libc::pollfd { fd: c.sock.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            emit(&json!({"event": "connection-error", "peer": "", "message": format!("poll: {e}")}));
            break;
        }
        let mut gone = Vec::new();
        for (i, c) in conns.iter_mut().enumerate() {
            if fds[i + 1].revents == 0 {
                continue;
            }
            match turn(s, me, c) {
                Ok(Turn::Again) => {}
                Ok(Turn::Eof) => gone.push(i),
                Err(e) => {
                    if e.kind() != io::ErrorKind::UnexpectedEof {
                        emit(&json!({"event": "connection-error", "peer": c.peer, "message": e.to_string()}));
                    }
                    gone.push(i);
                }
            }
            if s.closed.load(Ordering::SeqCst) {
                break;
            }
        }
        for i in gone.into_iter().rev() {
            conns.swap_remove(i);
        }
    }
    me.pump.lock().unwrap().running = false;
}

/// recv(2) without waiting: Ok(None) when nothing is queued.
fn recv_some(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(e),
        }
    }
}

fn inside_block() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the sender closed the data connection inside a block")
}

/// One turn on a readable data connection: reads until the socket is
/// drained or one piece has been received, written and hashed.
fn turn(s: &Arc<Session>, lane: &Lane, c: &mut Conn) -> io::Result<Turn> {
    let n = block_count(s.size, s.block);
    let fd = c.sock.as_raw_fd();
    let write_error = |e: io::Error, index: u64| {
        let m = if is_full(&e) {
            full_message(&s.dir, &s.name, &format!("block {index}"))
        } else {
            format!("receiver cannot write {}: {e}", part_path(&s.dir, &s.name).display())
        };
        let _ = proto::write_msg(&mut *s.control.lock().unwrap(), &proto::error_msg(&m));
        e
    };
    loop {
        let Some(b) = c.block.as_mut() else {
            match recv_some(fd, &mut c.head[c.head_got..])? {
                None => return Ok(Turn::Again),
                Some(0) if c.head_got == 0 => return Ok(Turn::Eof),
                Some(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the sender closed the data connection inside a block header")),
                Some(k) => c.head_got += k,
            }
            if c.head_got < proto::BLOCK_HEADER {
                continue;
            }
            c.head_got = 0;
            let (index, len) = proto::parse_block_header(&c.head);
            if index >= n || block_span(index, s.size, s.block).1 != len as u64 {
                let m = format!("block {index} of length {len} does not fit the file ({n} blocks of {} bytes)", s.block);
                let _ = proto::write_msg(&mut *s.control.lock().unwrap(), &proto::error_msg(&m));
                return Err(io::Error::new(io::ErrorKind::InvalidData, m));
            }
            {
                let mut st = s.state.lock().unwrap();
                st.writes[index as usize] = st.writes[index as usize].saturating_add(1);
            }
            let (start, _) = block_span(index, s.size, s.block);
            let hasher = tree::BlockHasher::new(tree::per_block(s.size, s.block).then_some(start));
            c.block = Some(InBlock { index, want: [0; 32], want_got: 0, off: start, left: len as usize, hasher, first: true });
            c.filled = 0;
            continue;
        };
        if b.left == 0 {
            // The payload is in: its check follows.
            match recv_some(fd, &mut b.want[b.want_got..])? {
                None => return Ok(Turn::Again),
                Some(0) => return Err(inside_block()),
                Some(k) => b.want_got += k,
            }
            if b.want_got == proto::BLOCK_TRAILER {
                complete_block(s, c)?;
            }
            continue;
        }
        let take = b.left.min(CHUNK);
        let index = b.index;
        // A piece: the bytes of one receive step (or the block's rest).
        let piece = match (&s.map, &c.pipe, &mut c.buf) {
            (Some(m), Some(p), _) => {
                // splice(2) what is queued (up to a piece) into the file,
                // hash it through the map.
                let moved = match p.splice_some(fd, s.part.as_raw_fd(), b.off, take) {
                    Ok(None) => return Ok(Turn::Again),
                    Ok(Some(0)) => return Err(inside_block()),
                    Ok(Some(k)) => k,
                    Err((e, true)) => return Err(write_error(e, index)),
                    Err((e, false)) => return Err(e),
                };
                if std::mem::take(&mut b.first) && take_corrupt(s, index) {
                    let mut x = [0u8; 1];
                    s.part.read_exact_at(&mut x, b.off)?;
                    s.part.write_all_at(&[x[0] ^ 0xff], b.off)?;
                }
                // SAFETY: within the map (off + moved <= size, the file's
                // length); a concurrent copy of the same block (endgame)
                // writes the same bytes, and a torn read of a corrupted
                // one fails the check (`writes` has the block read back
                // at the end).
                b.hasher.update(unsafe { m.bytes(b.off, moved) });
                if m.truncated() {
                    let e = io::Error::other(format!("{} was truncated by another process while receiving", part_path(&s.dir, &s.name).display()));
                    return Err(write_error(e, index));
                }
                moved
            }
            (_, _, Some(buf)) => {
                // Gather a whole piece in this connection's buffer, then
                // hash it there while cache-hot and pwrite it.
                match recv_some(fd, &mut buf.as_mut()[c.filled..take])? {
                    None => return Ok(Turn::Again),
                    Some(0) => return Err(inside_block()),
                    Some(k) => c.filled += k,
                }
                if c.filled < take {
                    continue;
                }
                c.filled = 0;
                let bytes = &mut buf.as_mut()[..take];
                if std::mem::take(&mut b.first) && take_corrupt(s, index) {
                    bytes[0] ^= 0xff;
                }
                b.hasher.update(bytes);
                s.part.write_all_at(bytes, b.off).map_err(|e| write_error(e, index))?;
                take
            }
            _ => unreachable!("a map comes with a pipe, else a buffer"),
        };
        b.off += piece as u64;
        b.left -= piece;
        lane.bytes.fetch_add(piece as u64, Ordering::Relaxed);
        if b.left == 0 {
            // Its check is likely queued behind it.
            continue;
        }
        // One piece per turn: the other connections' turn.
        return Ok(Turn::Again);
    }
}

/// The test hook: whether this block's first arrival is to be corrupted.
fn take_corrupt(s: &Session, index: u64) -> bool {
    s.corrupt.lock().unwrap().take_if(|c| *c == index).is_some()
}

/// A block fully received: compare its check, record it in the block map,
/// acknowledge it on the control connection.
fn complete_block(s: &Arc<Session>, c: &mut Conn) -> io::Result<()> {
    let b = c.block.take().expect("a block in progress");
    let index = b.index;
    let got = b.hasher.finish();
    let ok = got == b.want;
    s.received.fetch_add(1, Ordering::SeqCst);
    if ok {
        let mut st = s.state.lock().unwrap();
        st.done[index as usize] = true;
        st.hashes[index as usize] = got;
        if let Err(e) = save_map(s, &st) {
            // The block stays unrecorded (a resume sends it again).
            st.done[index as usize] = false;
            drop(st);
            let m = if is_full(&e) {
                full_message(&s.dir, &s.name, "the block map")
            } else {
                format!("receiver cannot write the block map of {} in {}: {e}", s.name, s.dir.display())
            };
            let _ = proto::write_msg(&mut *s.control.lock().unwrap(), &proto::error_msg(&m));
            return Err(e);
        }
    } else {
        s.bad.fetch_add(1, Ordering::SeqCst);
        emit(&json!({"event": "block-bad", "name": s.name, "block": index}));
    }
    if s.closed.load(Ordering::SeqCst) {
        return Ok(());
    }
    proto::write_msg(&mut *s.control.lock().unwrap(), &json!({"type": "ack", "block": index, "ok": ok}))
}

/// A page-aligned buffer (whole pages for the copy into the page cache).
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

impl AlignedBuf {
    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len, 4096).expect("buffer layout")
    }
    fn new(len: usize) -> AlignedBuf {
        let ptr = unsafe { std::alloc::alloc_zeroed(Self::layout(len)) };
        assert!(!ptr.is_null(), "out of memory");
        AlignedBuf { ptr, len }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        unsafe { std::alloc::dealloc(self.ptr, Self::layout(self.len)) }
    }
}

/// How blocks land: through a buffer and pwrite (the default) or, with
/// `ALPHAQOS_XFER_RECV=splice`, by splice(2) (for comparison: one copy
/// fewer, but a pipe's and the map's page-table work more; no cheaper on
/// this machine's tmpfs, see docs/transfer.md).
fn recv_mode_splice() -> bool {
    std::env::var("ALPHAQOS_XFER_RECV").is_ok_and(|v| v == "splice")
}

/// A pipe between the socket and the file (splice(2) needs one end a pipe).
struct Pipe {
    r: std::os::fd::OwnedFd,
    w: std::os::fd::OwnedFd,
}

impl Pipe {
    fn new(size: usize) -> io::Result<Pipe> {
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let p = unsafe { Pipe { r: std::os::fd::OwnedFd::from_raw_fd(fds[0]), w: std::os::fd::OwnedFd::from_raw_fd(fds[1]) } };
        // One receive step per pipe load where /proc/sys/fs/pipe-max-size
        // allows, else the largest it allows (1 MiB by default), halving.
        let mut want = size;
        while want > 4096 && unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, want as libc::c_int) } < 0 {
            want /= 2;
        }
        Ok(p)
    }

    /// Moves what the socket `sock` has queued, up to `len` bytes, into
    /// `file` at `off`: Ok(None) when nothing is queued, Ok(Some(0)) at end
    /// of stream. Err((e, true)): writing the file failed (a full disk),
    /// else reading the socket.
    fn splice_some(&self, sock: RawFd, file: RawFd, off: u64, len: usize) -> Result<Option<usize>, (io::Error, bool)> {
        let (pr, pw) = (self.r.as_raw_fd(), self.w.as_raw_fd());
        let n = loop {
            let n = unsafe { libc::splice(sock, std::ptr::null_mut(), pw, std::ptr::null_mut(), len, libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK) };
            match io::Error::last_os_error() {
                e if n < 0 && e.kind() == io::ErrorKind::Interrupted => continue,
                e if n < 0 && e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                e if n < 0 => return Err((e, false)),
                _ => break n as usize,
            }
        };
        let mut at = off as libc::loff_t;
        crate::net::all_of(n, "splice into the file moved nothing", |done| unsafe {
            libc::splice(pr, std::ptr::null_mut(), file, &mut at, n - done, libc::SPLICE_F_MOVE)
        })
        .map_err(|e| (e, true))?;
        Ok(Some(n))
    }
}
