//! TCP as bulk-transfer hosts run it: a sender (`sender.rs`) with RFC 6298
//! timers and loss recovery by SACK (RFC 6675), NewReno (RFC 6582) or Reno,
//! a receiver (`receiver.rs`) with delayed ACKs, SACK blocks and window
//! scaling, and a pluggable congestion controller (`cc/`); host profiles
//! change parts of them (`linux.rs`: Linux 2.6.33; `linux6.rs`: Linux 6; `ns2.rs`: ns-2.35). Sequence numbers are 64-bit byte offsets that never
//! wrap; segments carry an RFC 7323 timestamp for RTT samples.
//!
//! Sender and receiver talk to the network only through [`Wire`], so they
//! can be tested alone and reused by any application.

pub mod cc;
pub mod gro;
pub mod linux;
pub mod linux6;
pub mod ns2;
pub mod ranges;
pub mod receiver;
pub mod rtt;
pub mod sender;

use crate::event::FlowTimer;
use crate::packet::Payload;
use crate::time::SimTime;

/// What a TCP endpoint may do to the world.
pub trait Wire {
    fn now(&self) -> SimTime;
    /// Send a TCP packet of `size` IP bytes.
    fn send(&mut self, payload: Payload, size: u32);
    /// Fire `timer` for this flow at `at`.
    fn schedule(&mut self, at: SimTime, timer: FlowTimer);
    /// May the host's interface queue take another segment now? When it
    /// answers no, the endpoint is woken (`FlowTimer::Wake`) once there is
    /// room again: the counterpart of Linux's TCP Small Queues.
    fn tx_room(&mut self) -> bool;
    /// Set this connection's TSQ limit, bytes (the `linux-6` profile sizes
    /// it from the pacing rate, `linux6.rs`; else a fixed shim).
    fn set_tx_limit(&mut self, _bytes: u64) {}
}

/// A timer kept with lazy cancellation: at most one event is scheduled per
/// pending deadline; moving the deadline later costs nothing, and an event
/// that fires early re-arms itself for the current deadline.
#[derive(Clone, Copy, Debug, Default)]
pub struct LazyTimer {
    deadline: Option<SimTime>,
    scheduled: Option<SimTime>,
}

impl LazyTimer {
    pub fn deadline(&self) -> Option<SimTime> {
        self.deadline
    }
    pub fn set(&mut self, at: SimTime, kind: FlowTimer, w: &mut impl Wire) {
        self.deadline = Some(at);
        if self.scheduled.is_none_or(|s| s > at) {
            self.scheduled = Some(at);
            w.schedule(at, kind);
        }
    }
    pub fn clear(&mut self) {
        self.deadline = None;
    }
    /// Called when an event of this timer fires; true when the deadline has
    /// truly passed and the timer's action should run.
    pub fn fire(&mut self, kind: FlowTimer, w: &mut impl Wire) -> bool {
        let now = w.now();
        if self.scheduled != Some(now) {
            return false; // superseded by an earlier event
        }
        self.scheduled = None;
        match self.deadline {
            Some(d) if d > now => {
                self.scheduled = Some(d);
                w.schedule(d, kind);
                false
            }
            Some(_) => {
                self.deadline = None;
                true
            }
            None => false,
        }
    }
}
