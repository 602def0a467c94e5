//! The receiver (`alphaqos-xfer serve`): one listening port, a thread per
//! connection. Blocks land by `pwrite` in `DIR/.NAME.part`; the verified
//! ones (xxh3-64 of the payload equal to the sender's) are recorded in the
//! sidecar block map `DIR/.NAME.part.map` (JSON, replaced atomically), from
//! which a new `hello` for the same file resumes. When the sender says
//! `done`, the whole file's BLAKE3 is checked and the part file renamed to
//! `DIR/NAME` (rename(2): the name appears only complete).
use crate::proto::{self, block_count, block_span};
use crate::{emit, Fail};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CHUNK: usize = 1 << 20;

pub struct ServeOptions {
    pub listen: String,
    pub dir: PathBuf,
    /// Test hook: flip one byte of this block the first time it arrives
    /// (corruption on the way, caught by the block's xxh3).
    pub corrupt_block: Option<u64>,
    /// Exit after this many transfers (0: serve forever).
    pub once: u64,
}

struct Session {
    name: String,
    dir: PathBuf,
    size: u64,
    block: u64,
    hash: String,
    part: File,
    state: Mutex<MapState>,
    control: Mutex<TcpStream>,
    closed: AtomicBool,
    corrupt: Mutex<Option<u64>>,
    received: AtomicU64,
    bad: AtomicU64,
}

struct MapState {
    done: Vec<bool>,
    hashes: Vec<u64>,
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
    let hashes: Vec<Value> = st.done.iter().zip(&st.hashes).map(|(d, h)| if *d { json!(h) } else { Value::Null }).collect();
    let body = json!({"version": proto::VERSION, "name": s.name, "size": s.size, "block": s.block, "hash": s.hash,
                      "done": proto::to_ranges(&st.done), "hashes": hashes});
    std::fs::write(&tmp, serde_json::to_vec(&body)?)?;
    std::fs::rename(&tmp, &path)
}

/// The block map of an earlier attempt at the same file (same size, block
/// size and whole-file hash), or None.
fn load_map(dir: &Path, name: &str, size: u64, block: u64, hash: &str) -> Option<MapState> {
    let body: Value = serde_json::from_slice(&std::fs::read(map_path(dir, name)).ok()?).ok()?;
    if body["size"].as_u64()? != size || body["block"].as_u64()? != block || body["hash"].as_str()? != hash {
        return None;
    }
    let n = block_count(size, block);
    let done = proto::from_ranges(&body["done"], n).ok()?;
    let hashes: Vec<u64> = body["hashes"].as_array()?.iter().map(|h| h.as_u64().unwrap_or(0)).collect();
    if hashes.len() as u64 != n {
        return None;
    }
    Some(MapState { done, hashes })
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
    let (Some(name), Some(size), Some(block), Some(hash)) =
        (hello["name"].as_str(), hello["size"].as_u64(), hello["block"].as_u64(), hello["hash"].as_str())
    else {
        return refuse(&mut conn, "hello: missing name, size, block or hash".into());
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
    let result = run_session(shared, &mut conn, &dir, name, size, block, hash);
    shared.active.lock().unwrap().remove(name);
    result
}

fn run_session(shared: &Arc<Shared>, conn: &mut TcpStream, dir: &Path, name: &str, size: u64, block: u64, hash: &str) -> io::Result<()> {
    let n = block_count(size, block);
    let part_p = part_path(dir, name);
    let resumed = load_map(dir, name, size, block, hash).filter(|_| part_p.exists());
    let is_resume = resumed.is_some();
    let st = resumed.unwrap_or(MapState { done: vec![false; n as usize], hashes: vec![0; n as usize] });
    let part = match OpenOptions::new().read(true).write(true).create(true).truncate(!is_resume).open(&part_p) {
        Ok(f) => f,
        Err(e) => return refuse(conn, format!("cannot write {}: {e}", part_p.display())),
    };
    if !is_resume {
        let _ = std::fs::remove_file(map_path(dir, name));
        // Reserve the space up front: a full disk is refused before any data moves.
        let rc = unsafe { libc::fallocate(part.as_raw_fd(), 0, 0, size as libc::off_t) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOSPC) {
                drop(part);
                let _ = std::fs::remove_file(&part_p);
                return refuse(conn, format!("no space left on the receiver for {name} ({size} bytes) in {}", dir.display()));
            }
            part.set_len(size)?;
        }
    }
    let id: u64 = {
        let mut b = [0u8; 8];
        File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).ok();
        u64::from_ne_bytes(b) | 1
    };
    let have = proto::to_ranges(&st.done);
    let held = st.done.iter().filter(|d| **d).count();
    let session = Arc::new(Session {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        size,
        block,
        hash: hash.to_string(),
        part,
        state: Mutex::new(st),
        control: Mutex::new(conn.try_clone()?),
        closed: AtomicBool::new(false),
        corrupt: Mutex::new(shared.opts.corrupt_block),
        received: AtomicU64::new(0),
        bad: AtomicU64::new(0),
    });
    save_map(&session, &session.state.lock().unwrap())?;
    shared.sessions.lock().unwrap().insert(id, session.clone());
    emit(&json!({"event": "session", "name": name, "size": size, "block": block, "blocks": n, "held": held, "resume": is_resume}));
    proto::write_msg(&mut *session.control.lock().unwrap(), &json!({"type": "welcome", "version": proto::VERSION, "session": id, "have": have}))?;
    let outcome = session_loop(&session, conn);
    session.closed.store(true, Ordering::SeqCst);
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
                if let Some(done) = finish(s)? {
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

/// The sender says all blocks are acknowledged: check the whole file.
/// Some(true): renamed into place; None: blocks asked again.
fn finish(s: &Arc<Session>) -> io::Result<Option<bool>> {
    let mut ctl = s.control.lock().unwrap();
    let missing: Vec<u64> = s.state.lock().unwrap().done.iter().enumerate().filter(|(_, d)| !**d).map(|(i, _)| i as u64).collect();
    if !missing.is_empty() {
        proto::write_msg(&mut *ctl, &json!({"type": "resend", "blocks": missing}))?;
        return Ok(None);
    }
    s.part.sync_data()?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    let mut bad = Vec::new();
    let n = block_count(s.size, s.block);
    let hashes = s.state.lock().unwrap().hashes.clone();
    for i in 0..n {
        let (boff, blen) = block_span(i, s.size, s.block);
        let mut x = xxhash_rust::xxh3::Xxh3::new();
        let mut left = blen;
        while left > 0 {
            let take = (left as usize).min(CHUNK);
            s.part.read_exact_at(&mut buf[..take], off)?;
            hasher.update(&buf[..take]);
            x.update(&buf[..take]);
            off += take as u64;
            left -= take as u64;
        }
        debug_assert_eq!(off, boff + blen);
        if x.digest() != hashes[i as usize] {
            bad.push(i);
        }
    }
    let got = hasher.finalize().to_hex().to_string();
    if got == s.hash {
        let target = s.dir.join(&s.name);
        std::fs::rename(part_path(&s.dir, &s.name), &target)?;
        let _ = std::fs::remove_file(map_path(&s.dir, &s.name));
        if let Ok(d) = File::open(&s.dir) {
            let _ = d.sync_all();
        }
        emit(&json!({"event": "complete", "name": s.name, "path": target.display().to_string(), "size": s.size,
                     "blocks_received": s.received.load(Ordering::SeqCst), "blocks_bad": s.bad.load(Ordering::SeqCst), "hash": got}));
        proto::write_msg(&mut *ctl, &json!({"type": "finished", "path": target.display().to_string(), "hash": got}))?;
        return Ok(Some(true));
    }
    if bad.is_empty() {
        let m = format!("whole-file BLAKE3 {got} differs from the sender's {} although every block's xxh3 matched (the file changed while sent?)", s.hash);
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
    let mut buf = vec![0u8; CHUNK];
    let n = block_count(s.size, s.block);
    loop {
        let mut h = [0u8; proto::BLOCK_HEADER];
        if let Err(e) = conn.read_exact(&mut h) {
            return if e.kind() == io::ErrorKind::UnexpectedEof { Ok(()) } else { Err(e) };
        }
        let (index, len, want) = proto::parse_block_header(&h);
        if index >= n || block_span(index, s.size, s.block).1 != len as u64 {
            let m = format!("block {index} of length {len} does not fit the file ({n} blocks of {} bytes)", s.block);
            let _ = proto::write_msg(&mut *s.control.lock().unwrap(), &proto::error_msg(&m));
            return Err(io::Error::new(io::ErrorKind::InvalidData, m));
        }
        let (mut off, _) = block_span(index, s.size, s.block);
        let mut left = len as usize;
        let mut x = xxhash_rust::xxh3::Xxh3::new();
        let mut first = true;
        while left > 0 {
            let take = left.min(CHUNK);
            conn.read_exact(&mut buf[..take])?;
            if first {
                first = false;
                let mut c = s.corrupt.lock().unwrap();
                if *c == Some(index) {
                    buf[0] ^= 0xff;
                    *c = None;
                }
            }
            x.update(&buf[..take]);
            if let Err(e) = s.part.write_all_at(&buf[..take], off) {
                let m = if e.raw_os_error() == Some(libc::ENOSPC) {
                    format!("no space left on the receiver writing {} (the partial file is kept for resume)", part_path(&s.dir, &s.name).display())
                } else {
                    format!("receiver cannot write {}: {e}", part_path(&s.dir, &s.name).display())
                };
                let _ = proto::write_msg(&mut *s.control.lock().unwrap(), &proto::error_msg(&m));
                return Err(e);
            }
            off += take as u64;
            left -= take;
        }
        let got = x.digest();
        let ok = got == want;
        s.received.fetch_add(1, Ordering::SeqCst);
        if ok {
            let mut st = s.state.lock().unwrap();
            st.done[index as usize] = true;
            st.hashes[index as usize] = got;
            save_map(&s, &st)?;
        } else {
            s.bad.fetch_add(1, Ordering::SeqCst);
            emit(&json!({"event": "block-bad", "name": s.name, "block": index}));
        }
        if s.closed.load(Ordering::SeqCst) {
            return Ok(());
        }
        proto::write_msg(&mut *s.control.lock().unwrap(), &json!({"type": "ack", "block": index, "ok": ok}))?;
    }
}
