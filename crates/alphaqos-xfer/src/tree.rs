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
/// page cache).
pub struct Mapping {
    ptr: *const u8,
    len: usize,
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
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { ptr: p as *const u8, len })
    }

    /// The bytes `off..off + len`.
    ///
    /// # Safety
    /// Within the file as it was mapped (a shorter file now: SIGBUS); another
    /// writer may change the bytes under the slice (a hash of them then fails
    /// its check).
    pub unsafe fn bytes(&self, off: u64, len: usize) -> &[u8] {
        assert!(off as usize + len <= self.len, "inside the map");
        std::slice::from_raw_parts(self.ptr.add(off as usize), len)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// The whole file's BLAKE3 (hex) and every block's check, reading the file
/// once; per block on `threads` threads when the block size allows.
pub fn hash_file(file: &File, size: u64, block: u64, threads: usize) -> io::Result<(String, Vec<Check>)> {
    let n = block_count(size, block);
    if !per_block(size, block) {
        return hash_whole(file, size, block, true);
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
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            return Ok(mine);
                        }
                        let cv = match &map {
                            Some(m) => {
                                let (off, len) = block_span(i, size, block);
                                let mut h = BlockHasher::new(Some(off));
                                // SAFETY: inside the file's size as stat(2) gave it.
                                h.update(unsafe { m.bytes(off, len as usize) });
                                h.finish()
                            }
                            None => hash_block(file, i, size, block, &mut buf)?,
                        };
                        mine.push((i, cv));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("hashing thread")).collect()
    });
    for r in results {
        for (i, cv) in r? {
            cvs[i as usize] = cv;
        }
    }
    Ok((root(&cvs).to_hex().to_string(), cvs))
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
}
