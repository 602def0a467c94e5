//! The wire protocol of `alphaqos-xfer` (version [`VERSION`]).
//!
//! One *control* connection and K *data* connections per transfer, all to the
//! receiver's one listening port. Each connection opens with a 4-byte magic:
//! `AQXC` (control) or `AQXD` (data).
//!
//! Control: frames of a 4-byte big-endian length and a JSON object with a
//! `"type"`. Sender to receiver: `hello {version, name, size, block (bytes),
//! force}`, `rate {bps}`, `done {hash}` (the whole file's BLAKE3, hex).
//! Receiver to sender: `welcome {version, session, have: [[from, to), ...],
//! checks: [hex, ...]}` (the blocks it already holds, resume, and their
//! recorded checks in block order, for the sender to compare with its
//! own), `ack {block, ok}` (the block's check verdict), `resend {blocks}`
//! (blocks whose stored copy failed the whole-file check), `finished
//! {path}` and `error {message}`.
//!
//! Data: after the magic, the session (u64 BE) and the connection's index
//! (u8); then blocks, each a 12-byte header (index u64 and length u32, BE),
//! the payload and a 32-byte trailer, the block's check: its BLAKE3
//! chaining value as the subtree at its offset when the whole-file hash is
//! made per block, see [`crate::tree`], else the BLAKE3 hash of the block
//! alone.
//!
//! Version 2 replaced version 1's per-block xxh3-64 by the BLAKE3 value the
//! receiver computes anyway for the whole-file hash. Version 3 moved the
//! check from the block's header to a trailer and the whole-file hash from
//! `hello` to `done`: the sender hashes each block as it sends it instead
//! of the whole file before sending anything. A resume is proved block by
//! block (the sender hashes the blocks the receiver holds and compares them
//! with `welcome`'s checks; a block that differs is sent again). A block
//! map written under another version is not resumed.
use serde_json::{json, Value};
use std::io::{self, Read, Write};

pub const VERSION: u64 = 3;
pub const MAGIC_CONTROL: &[u8; 4] = b"AQXC";
pub const MAGIC_DATA: &[u8; 4] = b"AQXD";
/// A block's check (BLAKE3: chaining value or hash, 32 bytes).
pub type Check = [u8; 32];
/// A block's header (index, length); its check follows the payload.
pub const BLOCK_HEADER: usize = 12;
pub const BLOCK_TRAILER: usize = 32;
/// The largest control frame accepted (a block map of a huge file stays far below).
pub const MAX_FRAME: usize = 64 << 20;

pub fn write_msg(w: &mut impl Write, v: &Value) -> io::Result<()> {
    let body = serde_json::to_vec(v)?;
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
    buf.extend_from_slice(&body);
    w.write_all(&buf)
}

pub fn read_msg(r: &mut impl Read) -> io::Result<Value> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("control frame of {len} bytes (at most {MAX_FRAME})")));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad control frame: {e}")))
}

pub fn error_msg(message: &str) -> Value {
    json!({"type": "error", "message": message})
}

/// Done blocks as half-open ranges `[[from, to), ...]`, ascending.
pub fn to_ranges(done: &[bool]) -> Vec<[u64; 2]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < done.len() {
        if done[i] {
            let from = i;
            while i < done.len() && done[i] {
                i += 1;
            }
            out.push([from as u64, i as u64]);
        } else {
            i += 1;
        }
    }
    out
}

pub fn from_ranges(v: &Value, n: u64) -> Result<Vec<bool>, String> {
    let mut done = vec![false; n as usize];
    for r in v.as_array().ok_or("block ranges: expected a list")? {
        let a = r.get(0).and_then(Value::as_u64).ok_or("block range: expected [from, to)")?;
        let b = r.get(1).and_then(Value::as_u64).ok_or("block range: expected [from, to)")?;
        if a > b || b > n {
            return Err(format!("block range [{a}, {b}) outside 0..{n}"));
        }
        for d in &mut done[a as usize..b as usize] {
            *d = true;
        }
    }
    Ok(done)
}

pub fn block_header(index: u64, len: u32) -> [u8; BLOCK_HEADER] {
    let mut h = [0u8; BLOCK_HEADER];
    h[..8].copy_from_slice(&index.to_be_bytes());
    h[8..12].copy_from_slice(&len.to_be_bytes());
    h
}

pub fn parse_block_header(h: &[u8; BLOCK_HEADER]) -> (u64, u32) {
    (u64::from_be_bytes(h[..8].try_into().unwrap()), u32::from_be_bytes(h[8..12].try_into().unwrap()))
}

/// A check as lower-case hex (the block map's form).
pub fn check_hex(c: &Check) -> String {
    c.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn check_from_hex(s: &str) -> Option<Check> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut c = [0u8; 32];
    for (i, b) in c.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(c)
}

/// Number of blocks of a file (a zero-length file has none).
pub fn block_count(size: u64, block: u64) -> u64 {
    size.div_ceil(block)
}

/// Offset and length of a block.
pub fn block_span(index: u64, size: u64, block: u64) -> (u64, u64) {
    let off = index * block;
    (off, block.min(size - off))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ranges_round_trip() {
        let done = vec![true, true, false, true, false, false, true];
        let r = to_ranges(&done);
        assert_eq!(r, vec![[0, 2], [3, 4], [6, 7]]);
        assert_eq!(from_ranges(&serde_json::to_value(&r).unwrap(), 7).unwrap(), done);
        assert!(from_ranges(&json!([[3, 9]]), 7).is_err());
    }
    #[test]
    fn header_round_trip() {
        let c: Check = std::array::from_fn(|i| (i * 37 + 5) as u8);
        let h = block_header(7, 1 << 20);
        assert_eq!(parse_block_header(&h), (7, 1 << 20));
        assert_eq!(check_from_hex(&check_hex(&c)), Some(c));
        assert_eq!(check_from_hex("zz"), None);
    }
}
