//! `alphaqos-xfer serve --listen ADDR --dir DIR` and
//! `alphaqos-xfer send FILE HOST:PORT [options]`; see `docs/transfer.md`.
use alphaqos_xfer::recv::{serve, ServeOptions};
use alphaqos_xfer::send::{send, SendOptions};
use alphaqos_xfer::{emit, net, Fail};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

const USAGE: &str = "usage: alphaqos-xfer serve --listen ADDR --dir DIR [--once N] [--threads N]\n       alphaqos-xfer send FILE HOST:PORT [--streams K] [--block BYTES] [--rate-bps N] [--dscp-base NAME] [--dscp-excess NAME] [--cc NAME] [--force] [--hold] [--interval-ms MS] [--name NAME]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = run(&args);
    if let Err(f) = result {
        emit(&json!({"event": "error", "message": f.message, "bad_input": f.bad}));
        eprintln!("alphaqos-xfer: error: {}", f.message);
        std::process::exit(if f.bad { 2 } else { 1 });
    }
}

fn value<'a>(args: &'a [String], i: &mut usize, flag: &str) -> Result<&'a str, Fail> {
    *i += 1;
    args.get(*i).map(String::as_str).ok_or_else(|| Fail::bad(format!("{flag}: missing value")))
}

fn number(s: &str, flag: &str) -> Result<u64, Fail> {
    s.parse::<u64>().map_err(|_| Fail::bad(format!("{flag}: expected a whole number, got {s:?}")))
}

fn dscp(s: &str, flag: &str) -> Result<u8, Fail> {
    net::dscp_by_name(s).ok_or_else(|| Fail::bad(format!("{flag}: unknown DSCP {s:?} (af11..af43, ef, cs0..cs7, be, le or 0..63)")))
}

fn run(args: &[String]) -> Result<(), Fail> {
    match args.first().map(String::as_str) {
        Some("serve") => {
            let (mut listen, mut dir, mut once, mut threads) = (None, None, 0, None);
            let mut i = 1;
            while i < args.len() {
                match args[i].as_str() {
                    "--listen" => listen = Some(value(args, &mut i, "--listen")?.to_string()),
                    "--dir" => dir = Some(PathBuf::from(value(args, &mut i, "--dir")?)),
                    "--once" => once = number(value(args, &mut i, "--once")?, "--once")?,
                    "--threads" => match number(value(args, &mut i, "--threads")?, "--threads")? {
                        0 => return Err(Fail::bad("serve: --threads: at least 1".into())),
                        n => threads = Some(n as usize),
                    },
                    a => return Err(Fail::bad(format!("serve: unknown argument {a:?}\n{USAGE}"))),
                }
                i += 1;
            }
            let corrupt_block = std::env::var("ALPHAQOS_XFER_CORRUPT_BLOCK").ok().and_then(|v| v.parse().ok());
            serve(ServeOptions {
                listen: listen.ok_or_else(|| Fail::bad("serve: --listen is required".into()))?,
                dir: dir.ok_or_else(|| Fail::bad("serve: --dir is required".into()))?,
                corrupt_block,
                once,
                threads,
            })
        }
        Some("send") => {
            let mut pos = Vec::new();
            let mut o = SendOptions {
                file: PathBuf::new(),
                addr: String::new(),
                name: None,
                streams: 2,
                block: 64 << 20,
                rate_bps: 0,
                dscp_base: 10,
                dscp_excess: 0,
                cc: "alphaqos_base".into(),
                force: false,
                interval: Duration::from_secs(1),
                version: alphaqos_xfer::proto::VERSION,
                connect_timeout: Duration::from_secs(5),
                hold: false,
            };
            let mut i = 1;
            while i < args.len() {
                let a = args[i].as_str();
                match a {
                    "--streams" => o.streams = number(value(args, &mut i, a)?, a)? as usize,
                    "--block" => o.block = number(value(args, &mut i, a)?, a)?,
                    "--rate-bps" => o.rate_bps = number(value(args, &mut i, a)?, a)?,
                    "--dscp-base" => o.dscp_base = dscp(value(args, &mut i, a)?, a)?,
                    "--dscp-excess" => o.dscp_excess = dscp(value(args, &mut i, a)?, a)?,
                    "--cc" => o.cc = value(args, &mut i, a)?.to_string(),
                    "--force" => o.force = true,
                    "--hold" => o.hold = true,
                    "--interval-ms" => o.interval = Duration::from_millis(number(value(args, &mut i, a)?, a)?.max(10)),
                    "--name" => o.name = Some(value(args, &mut i, a)?.to_string()),
                    "--protocol-version" => o.version = number(value(args, &mut i, a)?, a)?,
                    "--connect-timeout-ms" => o.connect_timeout = Duration::from_millis(number(value(args, &mut i, a)?, a)?.max(1)),
                    _ if a.starts_with("--") => return Err(Fail::bad(format!("send: unknown option {a:?}\n{USAGE}"))),
                    _ => pos.push(a.to_string()),
                }
                i += 1;
            }
            if pos.len() != 2 {
                return Err(Fail::bad(format!("send: expected FILE HOST:PORT\n{USAGE}")));
            }
            o.file = PathBuf::from(&pos[0]);
            o.addr = pos[1].clone();
            send(o)
        }
        _ => Err(Fail::bad(USAGE.into())),
    }
}
