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
//!   RFC 8289 Section 5.5; computed as below); a packet whose sojourn is
//!   below target ends the dropping state;
//! - re-entering soon after leaving (`now - drop_next < 16 interval`), the
//!   count restarts at `count - lastcount` if that is above 1 (the Linux
//!   rule the RFC's pseudo-code adopts), else at 1.
//!
//! The control law uses Linux's arithmetic, not an exact square root
//! (`codel_Newton_step`, `codel_control_law`; ns-3's `CoDelQueueDisc` ports
//! it unchanged): `1/sqrt(count)` is kept as a 16-bit fraction
//! `rec_inv_sqrt` (Q0.16) that one Newton step
//! `y' = y (3 - count y^2) / 2` updates each time `count` grows by one, and
//! the next drop is `t + (interval * (rec_inv_sqrt << 16)) >> 32`. The
//! estimate lags at first: count 2 gives 0.5 (one step from 1.0), not
//! 0.707, so a cycle's second drop follows the first after 50 ms, not
//! 70.7 ms; counts 3 and 4 are 2.6 % and 2.4 % short, count 10 0.4 %,
//! count 100 0.01 %. Where `count` jumps the difference is larger:
//! - re-entering the dropping state with `count = count - lastcount`,
//!   Linux takes a single Newton step from the old estimate ("we dont care
//!   if rec_inv_sqrt approximation is not very precise"): from count 100
//!   to 2 it gives 0.149 instead of 0.707, so the next drop comes after
//!   14.9 ms, not 70.7 ms, and later steps converge to the exact value;
//! - FQ-CoDel's overflow drop adds the packets it dropped to `count`
//!   without touching `rec_inv_sqrt` ([`Codel::add_to_count`]), so the
//!   spacing of the next drop is unchanged and the next Newton step starts
//!   from the stale estimate.
//!
//! Time is kept in nanoseconds (Linux's CoDel clock counts 1024 ns units;
//! the difference is below a microsecond per interval). No ECN (the engine
//! has none): every decision is a drop.
//!
//! Parameters ([`CodelParams`]): `target` (5 ms), `interval` (100 ms),
//! `mtu` (bytes: the queue is never below one MTU when CoDel drops; Linux's
//! `psched_mtu`, 1514 B on Ethernet).
//!
//! Users: FQ-CoDel (`qos/fq/fq_codel.rs`), one state per flow. Tests
//! (below): the estimates and drop times against Linux's arithmetic
//! worked by hand, the hysteresis of
//! `first_above_time`, the count restart, and the exit on a short queue.

use crate::packet::Packet;
use crate::time::{Duration, SimTime};
use crate::error::ConfigError;

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
    /// Target and interval positive, target below interval; a problem
    /// located at the configuration's key (`target_ns`, `interval_ns`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.target.as_nanos() == 0 {
            return Err(ConfigError::at("target_ns", "must be positive"));
        }
        if self.interval.as_nanos() == 0 {
            return Err(ConfigError::at("interval_ns", "must be positive"));
        }
        if self.target >= self.interval {
            return Err(ConfigError::at("target_ns", format!("CoDel's target ({}) must be below its interval ({})", self.target, self.interval)));
        }
        Ok(())
    }
}

/// Bits of `rec_inv_sqrt` (Linux `REC_INV_SQRT_BITS`, a u16) and the shift
/// that makes it a Q0.32 fraction (`REC_INV_SQRT_SHIFT` = 32 - 16).
const REC_INV_SQRT_SHIFT: u32 = 32 - 16;
/// `rec_inv_sqrt` for count 1: 0xFFFF, just below 1.0 (`~0U >> REC_INV_SQRT_SHIFT`).
pub const REC_INV_SQRT_ONE: u16 = (u32::MAX >> REC_INV_SQRT_SHIFT) as u16;

/// One Newton step of `1/sqrt(count)` from the estimate `rec_inv_sqrt`
/// (Linux `codel_Newton_step`): `y' = y / 2 * (3 - count * y^2)` in Q0.32
/// fixed point, every intermediate wrapping as Linux's u32/u64 do.
pub fn newton_step(rec_inv_sqrt: u16, count: u32) -> u16 {
    let invsqrt = (rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
    let mut val = (3u64 << 32).wrapping_sub((count as u64).wrapping_mul(invsqrt2 as u64));
    val >>= 2; // "avoid overflow in following multiply"
    val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
    (val >> REC_INV_SQRT_SHIFT) as u16
}

/// `t + interval / sqrt(count)` (RFC 8289 Section 5.5) as Linux computes it
/// (`codel_control_law`): `interval` scaled by `rec_inv_sqrt` as a Q0.32
/// fraction (`reciprocal_scale`), rounded down to the nanosecond.
pub fn control_law(t: SimTime, interval: Duration, rec_inv_sqrt: u16) -> SimTime {
    let scale = ((rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT) as u128;
    t + Duration(((interval.as_nanos() as u128 * scale) >> 32) as u64)
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
    /// `1/sqrt(count)` as a Q0.16 fraction, Newton's estimate (see the
    /// module doc); 0 before the first drop, as Linux's `codel_vars_init`.
    rec_inv_sqrt: u16,
    pub dropping: bool,
    /// When the delay will have been above target for an interval.
    first_above_time: Option<SimTime>,
    /// When the next drop is due, in the dropping state.
    pub drop_next: SimTime,
    /// The sojourn time of the last packet looked at.
    pub ldelay: Duration,
}

impl Codel {
    /// `count += n` without touching `rec_inv_sqrt` (FQ-CoDel's overflow
    /// drop: "tell codel to increase its signal strength also").
    pub fn add_to_count(&mut self, n: u32) {
        self.count = self.count.wrapping_add(n);
    }

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
                    self.rec_inv_sqrt = newton_step(self.rec_inv_sqrt, self.count);
                    q.drop_packet(pkt.take().expect("a packet to drop"));
                    pkt = q.pop();
                    if !self.should_drop(pkt.as_ref(), p, q.backlog_bytes(), now) {
                        self.dropping = false;
                    } else {
                        self.drop_next = control_law(self.drop_next, p.interval, self.rec_inv_sqrt);
                    }
                }
            }
        } else if drop {
            q.drop_packet(pkt.take().expect("a packet to drop"));
            pkt = q.pop();
            self.should_drop(pkt.as_ref(), p, q.backlog_bytes(), now);
            self.dropping = true;
            // Re-entering soon after the last cycle: start from the drop
            // rate that controlled the queue then, with one Newton step from
            // the old estimate of 1/sqrt(count) (not an exact value).
            // (`lastcount` is 0 only before the first cycle: Linux's
            // `drop_next` of 0 is then ages ago, except in the first 1.6 s
            // after boot; the engine's clock starts at 0, so say so.)
            let delta = self.count.wrapping_sub(self.lastcount);
            let recent = self.lastcount > 0 && now.since(self.drop_next) < Duration(16 * p.interval.as_nanos());
            if delta > 1 && recent {
                self.count = delta;
                self.rec_inv_sqrt = newton_step(self.rec_inv_sqrt, self.count);
            } else {
                self.count = 1;
                self.rec_inv_sqrt = REC_INV_SQRT_ONE;
            }
            self.lastcount = self.count;
            self.drop_next = control_law(now, p.interval, self.rec_inv_sqrt);
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

    /// Linux's fixed-point values, worked by hand from `codel_Newton_step`
    /// (and checked against the kernel function compiled alone): count 2
    /// from 0xFFFF is y (3 - 2 y^2) / 2 with y = 1 - 2^-16, i.e. 0.50002 =
    /// 32769 / 65536, so the second drop of a cycle follows the first by
    /// 50 ms, not 100 / sqrt(2) = 70.7 ms; the estimate then approaches
    /// 1/sqrt(count) (count 100: 6553 / 65536 = 0.09999).
    #[test]
    fn control_law_follows_linux_newton_steps() {
        let i = Duration::from_millis(100);
        let mut rec = REC_INV_SQRT_ONE;
        assert_eq!(rec, 0xFFFF);
        assert_eq!(control_law(SimTime(0), i, rec), SimTime(99_998_474)); // 1e8 * 0xFFFF0000 / 2^32
        let mut seen = vec![];
        for count in 2..=100u32 {
            rec = newton_step(rec, count);
            seen.push(rec);
        }
        assert_eq!(&seen[..4], &[32_769, 36_864, 31_968, 28_935]);
        assert_eq!(seen[8], 20_647); // count 10
        assert_eq!(seen[98], 6_553); // count 100
        assert_eq!(control_law(SimTime(7), i, 32_769), SimTime(7 + 50_001_525));
        assert_eq!(control_law(SimTime(0), i, 6_553), SimTime(9_999_084));
        // One step from count 100's estimate to count 2: 9763 (0.149), far
        // from 1/sqrt(2); a step that starts from 0 stays at 0.
        assert_eq!(newton_step(6_553, 2), 9_763);
        assert_eq!(newton_step(0, 64), 0);
        assert!(CodelParams::default().validate().is_ok());
        assert!(CodelParams { target: Duration::from_millis(200), ..Default::default() }.validate().is_err());
        assert!(CodelParams { interval: Duration(0), ..Default::default() }.validate().is_err());
    }

    /// A queue whose every packet has waited 20 ms (above the 5 ms target),
    /// dequeued once a millisecond: CoDel waits one interval above target,
    /// drops, then drops at t_k = t_{k-1} + 100 ms x rec_inv_sqrt(k), the
    /// Newton estimate of 1/sqrt(k): worked by hand (see above), the drops
    /// are due at 121, 220.998474, 270.999999, 327.249999, 376.029295 and
    /// 420.180601 ms and happen at the first whole millisecond after (the
    /// exact square root would give 121, 221, 292, 350, 400, 445).
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
        let times: Vec<u64> = q.dropped.iter().map(|d| d.0.as_nanos() / MS).collect();
        assert_eq!(&times[..6], &[121, 221, 271, 328, 377, 421]);
        // Later drops (the k-th with count k + 1, due at the last due time
        // plus the law of count k): the scheduled time is carried, not the
        // dequeue time, each step from the last estimate.
        let (mut due, mut rec) = (420_180_601u64, 28_935u16);
        for (k, &t) in times.iter().enumerate().skip(6) {
            rec = newton_step(rec, k as u32);
            due = control_law(SimTime(due), p.interval, rec).as_nanos();
            assert_eq!(t, due.div_ceil(MS), "drop {k}");
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

    /// Re-entering 100 ms after the last scheduled drop with count 10 and
    /// lastcount 2: count restarts at 8, and 1/sqrt(8) is one Newton step
    /// from count 10's estimate (20647): 22773 / 65536 = 0.3475 (exact
    /// 0.3536). From count 100 to 2 the single step gives 9763 / 65536 =
    /// 0.149, so the next drop is due 14.9 ms later, where the exact
    /// 1/sqrt(2) would wait 70.7 ms.
    #[test]
    fn leaving_and_reentering_soon_restarts_from_the_last_rate() {
        let p = CodelParams::default();
        let mut c = Codel { count: 10, lastcount: 2, rec_inv_sqrt: 20_647, drop_next: SimTime(1_000 * MS), ..Default::default() };
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
        assert_eq!((c.count, c.dropping, c.rec_inv_sqrt), (8, true, 22_773));
        assert_eq!(c.drop_next, now + Duration(34_748_840));

        let reenter = |count: u32, lastcount: u32, rec: u16, drop_next: u64| {
            let mut c = Codel { count, lastcount, rec_inv_sqrt: rec, drop_next: SimTime(drop_next), ..Default::default() };
            c.first_above_time = Some(SimTime(1_050 * MS));
            let now = SimTime(1_100 * MS);
            let mut q = Q { pkts: (0..5).map(|_| at(1_000 * MS, 1500)).collect(), dropped: vec![], now };
            assert!(c.dequeue(&p, now, &mut q).is_some());
            assert_eq!(q.dropped.len(), 1);
            c
        };
        let c = reenter(100, 98, 6_553, 1_000 * MS);
        assert_eq!((c.count, c.rec_inv_sqrt, c.drop_next), (2, 9_763, now + Duration(14_897_155)));
        // Long after the last scheduled drop (1.6 s = 16 intervals): count 1.
        let c = reenter(100, 98, 6_553, 0);
        assert_eq!(c.count, 2, "1.1 s after drop_next is still recent");
        let mut c = Codel { count: 100, lastcount: 98, rec_inv_sqrt: 6_553, first_above_time: Some(SimTime(1_050 * MS)), ..Default::default() };
        let now = SimTime(1_600 * MS);
        c.dequeue(&p, now, &mut Q { pkts: (0..5).map(|_| at(1_000 * MS, 1500)).collect(), dropped: vec![], now });
        assert_eq!((c.count, c.rec_inv_sqrt, c.drop_next), (1, REC_INV_SQRT_ONE, now + Duration(99_998_474)));
        // Never in the dropping state, but count raised by FQ-CoDel's
        // overflow drops: no earlier rate to restart from (and no zero
        // estimate, which would drop every packet at once).
        let mut c = reenter(0, 0, 0, 0);
        assert_eq!(c.count, 1);
        c.add_to_count(64);
        assert_eq!((c.count, c.rec_inv_sqrt), (65, REC_INV_SQRT_ONE));
        let c = reenter(64, 0, 0, 1_000 * MS);
        assert_eq!((c.count, c.drop_next), (1, SimTime(1_100 * MS + 99_998_474)));
    }
}
