//! CoDel, Controlled Delay: the per-queue drop decision made at dequeue.
//!
//! K. Nichols, V. Jacobson, A. McGregor, J. Iyengar, "Controlled Delay
//! Active Queue Management", RFC 8289 (2018), Section 5 and its reference
//! pseudo-code; the state machine as Linux runs it
//! (`include/net/codel_impl.h`, `codel_should_drop` and `codel_dequeue`):
//!
//! - a packet's sojourn time is `now - pkt.enqueued`. While it is below
//!   `target`, or the queue holds at most one MTU after the packet left,
//!   CoDel is content (`first_above_time` cleared). Once the sojourn stays
//!   at or above `target` for `interval`, it is *ok to drop*;
//! - entering the dropping state, CoDel drops the head packet and sets the
//!   next drop at `now + interval / sqrt(count)`; while dropping, every time
//!   `now >= drop_next` it drops a head packet, `count += 1`, and the next
//!   drop is at `drop_next + interval / sqrt(count)` (the control law,
//!   RFC 8289 Section 5.5); a packet whose sojourn is below target ends the
//!   dropping state;
//! - re-entering soon after leaving (`now - drop_next < 16 interval`), the
//!   count restarts at `count - lastcount` if that is above 1 (the Linux
//!   rule the RFC's pseudo-code adopts), else at 1.
//!
//! The control law is computed exactly (`interval / sqrt(count)` rounded
//! down to the nanosecond) as the RFC's arithmetic states it; Linux uses a
//! 16-bit Newton iteration of `1/sqrt(count)` and a 1024 ns clock, within
//! a fraction of a per cent of it. No ECN (the engine has none): every
//! decision is a drop.
//!
//! Parameters ([`CodelParams`]): `target` (5 ms), `interval` (100 ms),
//! `mtu` (bytes: the queue is never below one MTU when CoDel drops; Linux's
//! `psched_mtu`, 1514 B on Ethernet).
//!
//! Users: FQ-CoDel (`qos/fq/fq_codel.rs`), one state per flow. Tests
//! (below): the drop times against the RFC's arithmetic, the hysteresis of
//! `first_above_time`, the count restart, and the exit on a short queue.

use crate::packet::Packet;
use crate::time::{Duration, SimTime};

/// CoDel's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    /// Acceptable standing queue delay. RFC 8289: 5 ms.
    pub target: Duration,
    /// Window over which the delay must stay above target. RFC 8289: 100 ms.
    pub interval: Duration,
    /// Bytes: no drop while the queue holds at most this much (Linux
    /// `cparams.mtu`, the device MTU plus its link-layer header).
    pub mtu: u32,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams { target: Duration::from_millis(5), interval: Duration::from_millis(100), mtu: 1514 }
    }
}

impl CodelParams {
    pub fn validate(&self) -> Result<(), String> {
        if self.target.as_nanos() == 0 || self.interval.as_nanos() == 0 {
            return Err(format!("codel: target and interval must be positive, got {} ns and {} ns", self.target.as_nanos(), self.interval.as_nanos()));
        }
        if self.target >= self.interval {
            return Err(format!("codel: target ({} ns) must be below interval ({} ns)", self.target.as_nanos(), self.interval.as_nanos()));
        }
        Ok(())
    }
}

/// `t + interval / sqrt(count)` (RFC 8289 Section 5.5), rounded down to
/// the nanosecond; `count` >= 1.
pub fn control_law(t: SimTime, interval: Duration, count: u32) -> SimTime {
    let step = (interval.as_nanos() as f64 / (count.max(1) as f64).sqrt()) as u64;
    t + Duration(step)
}

/// The queue CoDel works on: it takes the head packet (accounting it as
/// gone) and disposes of the packets CoDel drops.
pub trait CodelQueue {
    /// Remove and return the head packet, if any.
    fn pop(&mut self) -> Option<Packet>;
    /// Bytes still held (after the packets popped so far).
    fn backlog_bytes(&self) -> u64;
    /// CoDel dropped `pkt`.
    fn drop_packet(&mut self, pkt: Packet);
}

/// The state of one CoDel queue (Linux `struct codel_vars`).
#[derive(Clone, Debug, Default)]
pub struct Codel {
    /// Drops since entering the dropping state (with the restart rule).
    pub count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    pub dropping: bool,
    /// When the delay will have been above target for an interval.
    first_above_time: Option<SimTime>,
    /// When the next drop is due, in the dropping state.
    pub drop_next: SimTime,
    /// The sojourn time of the last packet looked at.
    pub ldelay: Duration,
}

impl Codel {
    /// `codel_should_drop`: is it ok to drop `pkt` (just popped at `now`)?
    fn should_drop(&mut self, pkt: Option<&Packet>, p: &CodelParams, backlog: u64, now: SimTime) -> bool {
        let Some(pkt) = pkt else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now.since(pkt.enqueued);
        if self.ldelay < p.target || backlog <= p.mtu as u64 {
            // Went below: stay below for at least an interval.
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + p.interval);
                false
            }
            Some(t) => now > t,
        }
    }

    /// `codel_dequeue`: the next packet to send from `q` at `now`, after
    /// the drops the state machine decides.
    pub fn dequeue(&mut self, p: &CodelParams, now: SimTime, q: &mut dyn CodelQueue) -> Option<Packet> {
        let mut pkt = q.pop();
        if pkt.is_none() {
            self.dropping = false;
            return None;
        }
        let drop = self.should_drop(pkt.as_ref(), p, q.backlog_bytes(), now);
        if self.dropping {
            if !drop {
                // Sojourn below target: leave the dropping state.
                self.dropping = false;
            } else {
                while self.dropping && now >= self.drop_next {
                    self.count = self.count.wrapping_add(1);
                    q.drop_packet(pkt.take().expect("a packet to drop"));
                    pkt = q.pop();
                    if !self.should_drop(pkt.as_ref(), p, q.backlog_bytes(), now) {
                        self.dropping = false;
                    } else {
                        self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    }
                }
            }
        } else if drop {
            q.drop_packet(pkt.take().expect("a packet to drop"));
            pkt = q.pop();
            self.should_drop(pkt.as_ref(), p, q.backlog_bytes(), now);
            self.dropping = true;
            // Re-entering soon after the last cycle: start from the drop
            // rate that controlled the queue then.
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = if delta > 1 && now.since(self.drop_next) < Duration(16 * p.interval.as_nanos()) { delta } else { 1 };
            self.lastcount = self.count;
            self.drop_next = control_law(now, p.interval, self.count);
        }
        pkt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A FIFO of equal packets with their enqueue times.
    struct Q {
        pkts: VecDeque<Packet>,
        dropped: Vec<(SimTime, SimTime)>,
        now: SimTime,
    }

    impl CodelQueue for Q {
        fn pop(&mut self) -> Option<Packet> {
            self.pkts.pop_front()
        }
        fn backlog_bytes(&self) -> u64 {
            self.pkts.iter().map(|p| p.size as u64).sum()
        }
        fn drop_packet(&mut self, pkt: Packet) {
            self.dropped.push((self.now, pkt.enqueued));
        }
    }

    fn at(t: u64, size: u32) -> Packet {
        Packet { enqueued: SimTime(t), ..Packet::test(0, size) }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn control_law_is_interval_over_sqrt_count() {
        let i = Duration::from_millis(100);
        assert_eq!(control_law(SimTime(0), i, 1), SimTime(100 * MS));
        assert_eq!(control_law(SimTime(0), i, 4), SimTime(50 * MS));
        assert_eq!(control_law(SimTime(7), i, 2), SimTime(7 + 70_710_678)); // 1e8 / sqrt(2) = 70710678.1
        assert_eq!(control_law(SimTime(0), i, 100), SimTime(10 * MS));
        assert!(CodelParams::default().validate().is_ok());
        assert!(CodelParams { target: Duration::from_millis(200), ..Default::default() }.validate().is_err());
        assert!(CodelParams { interval: Duration(0), ..Default::default() }.validate().is_err());
    }

    /// A queue whose every packet has waited 20 ms (above the 5 ms target),
    /// dequeued once a millisecond: CoDel waits one interval above target,
    /// drops, then drops at the RFC's times t_k = t_{k-1} + 100 ms / sqrt(k).
    #[test]
    fn drops_follow_the_control_law() {
        let p = CodelParams::default();
        let mut c = Codel::default();
        let mut q = Q { pkts: VecDeque::new(), dropped: vec![], now: SimTime::ZERO };
        let mut sent = 0;
        for ms in 20..1_000u64 {
            let now = SimTime(ms * MS);
            q.now = now;
            // Keep the queue long, every packet 20 ms old at its dequeue.
            while q.pkts.len() < 10 {
                let t = now.as_nanos() - 20 * MS + q.pkts.len() as u64 * MS;
                q.pkts.push_back(at(t, 1500));
            }
            for pk in q.pkts.iter_mut() {
                pk.enqueued = SimTime(now.as_nanos() - 20 * MS);
            }
            if c.dequeue(&p, now, &mut q).is_some() {
                sent += 1;
            }
        }
        assert!(sent > 900);
        // First look at 20 ms: first_above_time = 120 ms; first drop at the
        // first dequeue after it, 121 ms; then the control law from there.
        let times: Vec<u64> = q.dropped.iter().map(|d| d.0.as_nanos()).collect();
        assert_eq!(times[0], 121 * MS);
        let mut want = 121 * MS;
        for (k, &t) in times.iter().enumerate().skip(1) {
            // The k-th scheduled drop is due at drop_next; it happens at the
            // first dequeue (whole ms) at or after it.
            want = control_law(SimTime(want), p.interval, k as u32).as_nanos();
            assert_eq!(t, want.div_ceil(MS) * MS, "drop {k}");
            // Carry the scheduled time, not the dequeue time.
        }
        assert!(times.len() >= 10, "{times:?}");
    }

    #[test]
    fn a_short_or_young_queue_is_never_dropped_from() {
        let p = CodelParams::default();
        let mut c = Codel::default();
        let mut q = Q { pkts: VecDeque::new(), dropped: vec![], now: SimTime::ZERO };
        // One old packet at a time (backlog after it: 0 <= one MTU).
        for ms in 0..1_000u64 {
            let now = SimTime(ms * MS + 500 * MS);
            q.pkts.push_back(at(ms * MS, 1500));
            assert!(c.dequeue(&p, now, &mut q).is_some());
        }
        // Young packets (1 ms) in a long queue.
        for ms in 0..1_000u64 {
            let now = SimTime(ms * MS);
            while q.pkts.len() < 20 {
                q.pkts.push_back(at(0, 1500));
            }
            for pk in q.pkts.iter_mut() {
                pk.enqueued = SimTime(now.as_nanos().saturating_sub(MS));
            }
            c.dequeue(&p, now, &mut q);
        }
        assert!(q.dropped.is_empty());
        assert!(!c.dropping);
    }

    #[test]
    fn leaving_and_reentering_soon_restarts_from_the_last_rate() {
        let p = CodelParams::default();
        let mut c = Codel { count: 10, lastcount: 2, drop_next: SimTime(1_000 * MS), ..Default::default() };
        let mut q = Q { pkts: VecDeque::new(), dropped: vec![], now: SimTime::ZERO };
        // first_above_time already passed: ok to drop at once.
        c.first_above_time = Some(SimTime(1_050 * MS));
        let now = SimTime(1_100 * MS);
        q.now = now;
        for _ in 0..5 {
            q.pkts.push_back(at(1_000 * MS, 1500));
        }
        assert!(c.dequeue(&p, now, &mut q).is_some());
        assert_eq!(q.dropped.len(), 1);
        // delta = 10 - 2 = 8 > 1 and 100 ms since drop_next < 1.6 s.
        assert_eq!((c.count, c.dropping), (8, true));
        assert_eq!(c.drop_next, control_law(now, p.interval, 8));
    }
}
