//! Congestion controllers, one file per algorithm behind [`Controller`], in
//! the manner of smoltcp's `socket/tcp/congestion`. The sender owns loss
//! detection and recovery; a controller decides how the window grows on new
//! ACKs and how far it falls on a loss.

pub mod newreno;

use crate::time::{Duration, SimTime};

/// The window state a controller shapes, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcState {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
}

pub trait Controller: Send {
    fn name(&self) -> &'static str;
    /// `acked` new bytes were acknowledged outside loss recovery.
    fn on_ack(&mut self, s: &mut CcState, now: SimTime, acked: u64, rtt: Option<Duration>);
    /// A loss was detected by duplicate ACKs with `flight` bytes outstanding:
    /// the new slow-start threshold.
    fn ssthresh_after_loss(&mut self, s: &CcState, now: SimTime, flight: u64) -> u64;
    /// The retransmission timer expired (RFC 5681, eq. 4 and the loss window).
    fn on_timeout(&mut self, s: &mut CcState, now: SimTime, flight: u64) {
        s.ssthresh = self.ssthresh_after_loss(s, now, flight);
        s.cwnd = s.mss;
    }
    /// Loss recovery ended (the recovery point was acknowledged).
    fn on_recovery_exit(&mut self, _s: &mut CcState, _now: SimTime) {}
}

/// The controllers known by name.
pub const NAMES: &[&str] = &["newreno"];

pub fn build(name: &str) -> Result<Box<dyn Controller>, String> {
    match name {
        "newreno" | "reno" => Ok(Box::new(newreno::NewReno::default())),
        other => Err(format!("unknown congestion control '{other}' (expected one of: {})", NAMES.join(", "))),
    }
}
