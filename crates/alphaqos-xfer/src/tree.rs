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
use std::os::unix::fs::FileExt;

use crate::proto::{block_count, block_span};

/// Whether per-block chaining values make up the file's hash.
pub fn per_block(size: u64, block: u64) -> bool {
    block >= blake3::CHUNK_LEN as u64 && block.is_power_of_two() && block_count(size, block) >= 2
}

/// One block's xxh3-64 (the per-block check of the protocol) and, when
/// `offset` is given, its BLAKE3 chaining value as the subtree at that offset:
/// one pass over the bytes for both.
pub struct BlockHasher {
    xxh: xxhash_rust::xxh3::Xxh3,
    tree: Option<blake3::Hasher>,
}

impl BlockHasher {
    pub fn new(offset: Option<u64>) -> BlockHasher {
        let tree = offset.map(|off| {
            let mut h = blake3::Hasher::new();
            h.set_input_offset(off);
            h
        });
        BlockHasher { xxh: xxhash_rust::xxh3::Xxh3::new(), tree }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.xxh.update(bytes);
        if let Some(t) = &mut self.tree {
            t.update(bytes);
        }
    }

    pub fn finish(&self) -> (u64, Option<ChainingValue>) {
        (self.xxh.digest(), self.tree.as_ref().map(|t| t.finalize_non_root()))
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

/// Reads block `index` of `file` (through `buf`), giving its xxh3 and
/// chaining value (when the file's hash is made per block).
pub fn hash_block(file: &File, index: u64, size: u64, block: u64, buf: &mut [u8]) -> io::Result<(u64, Option<ChainingValue>)> {
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

/// The whole file's BLAKE3 (hex) and every block's xxh3-64, reading the
/// file once; per block on `threads` threads when the block size allows.
pub fn hash_file(file: &File, size: u64, block: u64, threads: usize) -> io::Result<(String, Vec<u64>)> {
    let n = block_count(size, block);
    if !per_block(size, block) {
        let mut whole = blake3::Hasher::new();
        let mut xs = Vec::with_capacity(n as usize);
        let mut buf = vec![0u8; 1 << 20];
        for i in 0..n {
            let (off, len) = block_span(i, size, block);
            let mut x = xxhash_rust::xxh3::Xxh3::new();
            let mut done = 0u64;
            while done < len {
                let take = ((len - done) as usize).min(buf.len());
                file.read_exact_at(&mut buf[..take], off + done)?;
                whole.update(&buf[..take]);
                x.update(&buf[..take]);
                done += take as u64;
            }
            xs.push(x.digest());
        }
        return Ok((whole.finalize().to_hex().to_string(), xs));
    }
    let threads = threads.clamp(1, n as usize);
    let next = std::sync::atomic::AtomicU64::new(0);
    let mut out: Vec<(u64, ChainingValue)> = vec![(0, [0; 32]); n as usize];
    let results: Vec<io::Result<Vec<(u64, u64, ChainingValue)>>> = std::thread::scope(|s| {
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
                        let (x, cv) = hash_block(file, i, size, block, &mut buf)?;
                        mine.push((i, x, cv.expect("per-block hashing")));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("hashing thread")).collect()
    });
    for r in results {
        for (i, x, cv) in r? {
            out[i as usize] = (x, cv);
        }
    }
    let cvs: Vec<ChainingValue> = out.iter().map(|e| e.1).collect();
    Ok((root(&cvs).to_hex().to_string(), out.into_iter().map(|e| e.0).collect()))
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
                    h.finish().1.unwrap()
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
        let xs: Vec<u64> = data.chunks(8192).map(xxhash_rust::xxh3::xxh3_64).collect();
        for (block, threads) in [(8192, 1), (8192, 3), (8192 + 1, 2), (1 << 20, 2)] {
            let (h, x) = hash_file(&f, data.len() as u64, block, threads).unwrap();
            assert_eq!(h, want, "block {block}");
            if block == 8192 {
                assert_eq!(x, xs);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
