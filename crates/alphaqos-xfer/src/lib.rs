//! alphaqos-xfer: the data path of `alphaqos transfer` (issue 23): a file
//! moved by its deadline over K TCP connections, one of them (the *base*)
//! paced at the reserved rate, after the third source document (slides,
//! "deadline-driven file transfer over DiffServ AF networks": a base flow
//! holding the reservation and additional flows using what is left).
//!
//! The Python front (`python/alphaqos/transfer/`) runs the binary and talks
//! to it over stdin/stdout JSON lines; the protocol between sender and
//! receiver is in [`proto`].
pub mod basecc;
pub mod net;
pub mod proto;
pub mod recv;
pub mod send;

use std::io::Write;

/// A failure: `bad` ones (the user's input, a refusal) exit with status 2,
/// the others with 1.
#[derive(Debug, Clone)]
pub struct Fail {
    pub message: String,
    pub bad: bool,
}

impl Fail {
    pub fn bad(message: String) -> Fail {
        Fail { message, bad: true }
    }
    pub fn other(message: String) -> Fail {
        Fail { message, bad: false }
    }
    pub fn io(e: std::io::Error) -> Fail {
        Fail::other(e.to_string())
    }
}

/// One JSON line on stdout (the front reads them as they come).
pub fn emit(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, v);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}
