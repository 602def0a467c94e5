//! The base connection's BPF congestion control (`alphaqos_base`, crate
//! `alphaqos-bpfcc`): a thin adapter so the sender sees one type.
use serde_json::{json, Value};
use std::os::fd::RawFd;

pub struct Base(alphaqos_bpfcc::BaseCc);

impl Base {
    pub fn open() -> Result<Base, String> {
        alphaqos_bpfcc::BaseCc::open().map(Base).map_err(|u| u.0)
    }
    pub fn attach(&self, fd: RawFd, target_bps: u64) -> std::io::Result<()> {
        self.0.attach(fd, target_bps)
    }
    pub fn set_target(&self, fd: RawFd, target_bps: u64) -> std::io::Result<()> {
        self.0.set_target(fd, target_bps)
    }
    pub fn read(&self, fd: RawFd) -> std::io::Result<Value> {
        let s = self.0.read(fd)?;
        Ok(json!({"target_bps": s.target_bps, "target_cwnd": s.target_cwnd, "cwnd": s.cwnd, "min_rtt_us": s.min_rtt_us, "state": s.state}))
    }
}
