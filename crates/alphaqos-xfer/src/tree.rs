//! The whole file's BLAKE3 from per-block pieces, so that no end hashes the
//! file in one single-threaded pass: BLAKE3 is a binary tree of 1 KiB
//! chunks whose left subtrees hold the largest power of two of chunks below
//! the whole (the BLAKE3 paper, section 2.1), so when a block is a power of
//! two times 1 KiB, each block is a subtree: its chaining value can be
//! computed anywhere (a connection's thread at the receiver while the bytes
//! are cache-hot, several threads at the sender) and the blocks' values
//! merged into the root hash (`blake3::hazmat`). Other block sizes, and a
//! file of one block, fall back to one pass over the file.
use blake3::hazmat::{merge_subtrees_non_root, merge_subtrees_root, ChainingValue, HasherExt, Mode};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use crate::proto::{block_count, block_span, Check};

/// Whether per-block chaining values make up the file's hash.
pub fn per_block(size: u64, block: u64) -> bool {
    block >= blake3::CHUNK_LEN as u64 && block.is_power_of_two() && block_count(size, block) >= 2
}

/// One block's check (protocol version 2): its BLAKE3 chaining value as
/// the subtree at `offset` when given (the file's hash is made per block),
/// else the BLAKE3 hash of the block's bytes alone.
pub struct BlockHasher {
    h: blake3::Hasher,
    subtree: bool,
}

impl BlockHasher {
    pub fn new(offset: Option<u64>) -> BlockHasher {
        let mut h = blake3::Hasher::new();
        if let Some(off) = offset {
            h.set_input_offset(off);
        }
        BlockHasher { h, subtree: offset.is_some() }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.h.update(bytes);
    }

    pub fn finish(&self) -> Check {
        if self.subtree {
            self.h.finalize_non_root()
        } else {
            *self.h.finalize().as_bytes()
        }
    }
}

/// The root hash of blocks `cvs` (at least two, in file order, each a
/// subtree of the same power-of-two size but the last).
pub fn root(cvs: &[ChainingValue]) -> blake3::Hash {
    assert!(cvs.len() >= 2);
    let split = left(cvs.len());
    merge_subtrees_root(&merge(&cvs[..split]), &merge(&cvs[split..]), Mode::Hash)
}

/// The left subtree's share of `n` > 1 equal blocks (the last possibly
/// shorter): the largest power of two below n (blake3's `left_subtree_len`
/// in blocks instead of bytes).
fn left(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

fn merge(cvs: &[ChainingValue]) -> ChainingValue {
    if cvs.len() == 1 {
        return cvs[0];
    }
    let split = left(cvs.len());
    merge_subtrees_non_root(&merge(&cvs[..split]), &merge(&cvs[split..]), Mode::Hash)
}

/// Reads block `index` of `file` (through `buf`), giving its check.
pub fn hash_block(file: &File, index: u64, size: u64, block: u64, buf: &mut [u8]) -> io::Result<Check> {
    let (off, len) = block_span(index, size, block);
    let mut h = BlockHasher::new(per_block(size, block).then_some(off));
    let mut done = 0u64;
    while done < len {
        let take = ((len - done) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..take], off + done)?;
        h.update(&buf[..take]);
        done += take as u64;
    }
    Ok(h.finish())
}

/// The whole file's BLAKE3 in one pass (hex) and, when `blocks`, every
/// block's check in the same pass (the fallback for block sizes that are
/// not subtrees).
pub fn hash_whole(file: &File, size: u64, block: u64, blocks: bool) -> io::Result<(String, Vec<Check>)> {
    let n = block_count(size, block);
    let mut whole = blake3::Hasher::new();
    let mut checks = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    for i in 0..n {
        let (off, len) = block_span(i, size, block);
        let mut b = blake3::Hasher::new();
        let mut done = 0u64;
        while done < len {
            let take = ((len - done) as usize).min(buf.len());
            file.read_exact_at(&mut buf[..take], off + done)?;
            whole.update(&buf[..take]);
            if blocks {
                b.update(&buf[..take]);
            }
            done += take as u64;
        }
        if blocks {
            checks.push(*b.finalize().as_bytes());
        }
    }
    Ok((whole.finalize().to_hex().to_string(), checks))
}

/// A file mapped shared, read-only: hashed in place (no copy out of the
/// page cache). A file truncated under the map (by another process, while
/// it is hashed) does not kill the process: the page past the new end is
/// replaced by zeros (`guard`) and [`Mapping::truncated`] says so, for the
/// caller to turn into a clear error.
pub struct Mapping {
    ptr: *const u8,
    len: usize,
    slot: usize,
}

// SAFETY: read-only; the bytes under it change only by the file's writers.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    pub fn new(f: &File, len: u64) -> io::Result<Mapping> {
        let len = usize::try_from(len).map_err(|_| io::Error::other("file too large to map"))?;
        if len == 0 {
            return Err(io::Error::other("an empty file is not mapped"));
        }
        guard::install();
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        match guard::register(p as usize, len) {
            Some(slot) => Ok(Mapping { ptr: p as *const u8, len, slot }),
            None => {
                unsafe { libc::munmap(p, len) };
                Err(io::Error::other("too many files mapped at once"))
            }
        }
    }

    /// The bytes `off..off + len`.
    ///
    /// # Safety
    /// Within the file as it was mapped (a shorter file now: zeros past its
    /// end, and [`Mapping::truncated`] true); another writer may change the
    /// bytes under the slice (a hash of them then fails its check).
    pub unsafe fn bytes(&self, off: u64, len: usize) -> &[u8] {
        assert!(off as usize + len <= self.len, "inside the map");
        std::slice::from_raw_parts(self.ptr.add(off as usize), len)
    }

    /// Whether a read through the map went past the file's end (the file was
    /// truncated after it was mapped): what was read there is not the file.
    pub fn truncated(&self) -> bool {
        guard::faulted(self.slot)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        guard::unregister(self.slot);
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// SIGBUS inside a [`Mapping`]: a read of a shared file map past the file's
/// current end (mmap(2), "SIGBUS"). The handler maps an anonymous zero page
/// over the faulting page (mmap is async-signal-safe) and marks the
/// mapping, so the read completes and the caller reports the truncation; a
/// SIGBUS anywhere else goes to the handler that was there before (Rust's
/// own, or the default action: the process ends as it would have).
mod guard {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Once;

    const SLOTS: usize = 64;
    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: AtomicUsize = AtomicUsize::new(0);
    #[allow(clippy::declare_interior_mutable_const)]
    const CLEAR: AtomicBool = AtomicBool::new(false);
    static START: [AtomicUsize; SLOTS] = [FREE; SLOTS];
    static LEN: [AtomicUsize; SLOTS] = [FREE; SLOTS];
    static FAULTED: [AtomicBool; SLOTS] = [CLEAR; SLOTS];
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    static mut PREVIOUS: Option<libc::sigaction> = None;
    static INSTALL: Once = Once::new();

    pub fn install() {
        INSTALL.call_once(|| unsafe {
            PAGE.store(libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize, Ordering::SeqCst);
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &sa, &mut old) == 0 {
                // Written once, before any mapping exists (the handler reads it
                // only for a fault, which needs a mapping or a stack overflow).
                PREVIOUS = Some(old);
            }
        });
    }

    pub fn register(start: usize, len: usize) -> Option<usize> {
        for i in 0..SLOTS {
            if LEN[i].compare_exchange(0, usize::MAX, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                FAULTED[i].store(false, Ordering::SeqCst);
                START[i].store(start, Ordering::SeqCst);
                LEN[i].store(len, Ordering::SeqCst);
                return Some(i);
            }
        }
        None
    }

    pub fn unregister(slot: usize) {
        START[slot].store(0, Ordering::SeqCst);
        LEN[slot].store(0, Ordering::SeqCst);
    }

    pub fn faulted(slot: usize) -> bool {
        FAULTED[slot].load(Ordering::SeqCst)
    }

    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        let addr = unsafe { (*info).si_addr() } as usize;
        for i in 0..SLOTS {
            let (start, len) = (START[i].load(Ordering::SeqCst), LEN[i].load(Ordering::SeqCst));
            if len != 0 && len != usize::MAX && addr >= start && addr < start + len {
                // Zeros from the faulting page to the map's end: one fault,
                // not one per page of the rest.
                let page = addr & !(PAGE.load(Ordering::SeqCst) - 1);
                let p = unsafe {
                    libc::mmap(page as *mut libc::c_void, start + len - page, libc::PROT_READ,
                               libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0)
                };
                if p != libc::MAP_FAILED {
                    FAULTED[i].store(true, Ordering::SeqCst);
                    return;
                }
            }
        }
        // Not ours: as if this handler had not been installed.
        unsafe {
            #[allow(static_mut_refs)]
            match PREVIOUS {
                Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
                    if old.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(old.sa_sigaction);
                        f(sig, info, ctx);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                        f(sig);
                    }
                }
                _ => {
                    // The default action: the fault repeats on return and ends the process.
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
                }
            }
        }
    }
}

/// The error of a file that became shorter while it was read.
pub fn truncated() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the file was truncated while being read")
}

/// The whole file's BLAKE3 (hex) and every block's check, reading the file
/// once; per block on `threads` threads when the block size allows.
pub fn hash_file(file: &File, size: u64, block: u64, threads: usize) -> io::Result<(String, Vec<Check>)> {
    let n = block_count(size, block);
    if !per_block(size, block) {
        return hash_whole(file, size, block, true);
    }
    let all: Vec<u64> = (0..n).collect();
    let cvs = hash_blocks(file, size, block, &all, threads)?;
    Ok((root(&cvs).to_hex().to_string(), cvs))
}

/// The checks (chaining values) of blocks `which` of a file whose hash is
/// made per block ([`per_block`]), in the order given, on `threads` threads.
pub fn hash_blocks(file: &File, size: u64, block: u64, which: &[u64], threads: usize) -> io::Result<Vec<Check>> {
    let n = which.len() as u64;
    if n == 0 {
        return Ok(Vec::new());
    }
    let threads = threads.clamp(1, n as usize);
    let next = std::sync::atomic::AtomicU64::new(0);
    // Through a map where the file allows (no copy out of the page cache),
    // else read into a buffer.
    let map = Mapping::new(file, size).ok();
    let mut cvs: Vec<ChainingValue> = vec![[0; 32]; n as usize];
    let results: Vec<io::Result<Vec<(u64, ChainingValue)>>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut buf = vec![0u8; 1 << 20];
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if k >= n {
                            return Ok(mine);
                        }
                        let i = which[k as usize];
                        let cv = match &map {
                            Some(m) => {
                                // A truncated file stops the hash at the next block
                                // (the rest of this one reads as zeros: one fault).
                                if m.truncated() {
                                    return Err(truncated());
                                }
                                let (off, len) = block_span(i, size, block);
                                let mut h = BlockHasher::new(Some(off));
                                // SAFETY: inside the file's size as stat(2) gave it
                                // (truncated since: zeros, and an error).
                                h.update(unsafe { m.bytes(off, len as usize) });
                                h.finish()
                            }
                            None => hash_block(file, i, size, block, &mut buf)?,
                        };
                        mine.push((k, cv));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("hashing thread")).collect()
    });
    if map.as_ref().is_some_and(Mapping::truncated) {
        return Err(truncated());
    }
    for r in results {
        for (k, cv) in r? {
            cvs[k as usize] = cv;
        }
    }
    Ok(cvs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn per_block_root_equals_blake3() {
        // Block counts around powers of two, last blocks full, partial, and
        // shorter than one chunk.
        let block = 4096u64;
        let data: Vec<u8> = (0..(block as usize * 9 + 100)).map(|i| (i * 31 % 251) as u8).collect();
        for size in [2 * block, 2 * block + 1, 3 * block, 4 * block + 1000, 5 * block + 1, 8 * block, 9 * block + 100] {
            let bytes = &data[..size as usize];
            let n = block_count(size, block);
            let cvs: Vec<ChainingValue> = (0..n)
                .map(|i| {
                    let (off, len) = block_span(i, size, block);
                    let mut h = BlockHasher::new(Some(off));
                    h.update(&bytes[off as usize..(off + len) as usize]);
                    h.finish()
                })
                .collect();
            assert_eq!(root(&cvs), blake3::hash(bytes), "size {size}");
        }
    }

    #[test]
    fn hash_file_threads_agree_with_one_pass() {
        let dir = std::env::temp_dir().join(format!("aqx-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let data: Vec<u8> = (0..(7 * 8192 + 77)).map(|i| (i * 7 % 253) as u8).collect();
        std::fs::File::create(&path).unwrap().write_all(&data).unwrap();
        let f = File::open(&path).unwrap();
        let want = blake3::hash(&data).to_hex().to_string();
        for (block, threads) in [(8192, 1), (8192, 3), (8192 + 1, 2), (1 << 20, 2)] {
            let (h, checks) = hash_file(&f, data.len() as u64, block, threads).unwrap();
            assert_eq!(h, want, "block {block}");
            assert_eq!(checks.len() as u64, block_count(data.len() as u64, block));
            if block == 8192 + 1 || block == 1 << 20 {
                // Not subtrees: each block's own hash (one block: the file's).
                let own: Vec<Check> = data.chunks(block as usize).map(|c| *blake3::hash(c).as_bytes()).collect();
                assert_eq!(checks, own, "block {block}");
            } else {
                // Subtrees: the chaining values, which make up the root.
                assert_eq!(root(&checks).to_hex().to_string(), want);
                assert_ne!(checks[0], *blake3::hash(&data[..8192]).as_bytes(), "a chaining value is not the block's own hash");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truncated_under_the_map_is_an_error_not_sigbus() {
        // The file shrinks after its size was taken (as another process
        // truncating it mid-hash): reads past the new end would raise SIGBUS
        // and end the process; they give an error instead, on every thread.
        let dir = std::env::temp_dir().join(format!("aqx-trunc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let size = 64u64 << 10;
        std::fs::write(&path, vec![7u8; size as usize]).unwrap();
        let f = File::open(&path).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(5000).unwrap();
        for threads in [1, 2] {
            let e = hash_file(&f, size, 4096, threads).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
        }
        // A later map of the whole (now short) file is clean again.
        assert_eq!(hash_file(&f, 5000, 1024, 2).unwrap().0, blake3::hash(&[7u8; 5000]).to_hex().to_string());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
