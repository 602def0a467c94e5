//! Random Early Detection.
//!
//! Floyd & Jacobson, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM ToN 1(4), 1993, Section 4 and Fig. 2:
//!
//! - average queue on every arrival: `avg <- (1 - w_q) avg + w_q q`; when the
//!   packet finds the queue empty, the idle time counts as `m` arrivals of
//!   an empty queue: `avg <- (1 - w_q)^m avg`, `m = idle / s` with `s` the
//!   transmission time of a packet of `mean_pkt_bytes` on this link; the
//!   idle period lasts until a packet is admitted, so arrivals that are
//!   dropped at the still-empty queue go on decaying the average, each by
//!   the time since the previous one (ns-2 `queue/red.cc` and ns-3
//!   `red-queue-disc.cc` restart their idle clock whenever a dequeue finds
//!   the queue empty);
//! - no early drop (forced or random) into a queue holding at most one
//!   packet, as ns-2 and ns-3 do (`qlen > 1` beside `avg >= min_th`);
//! - `p_b = max_p (avg - min_th) / (max_th - min_th)` for `min_th <= avg < max_th`;
//!   in byte mode scaled by `size / mean_pkt_bytes` (Section 4, "byte mode");
//! - gentle RED (Floyd, "Recommendation on using the gentle variant of
//!   RED", 2000): `p_b = max_p + (1 - max_p) (avg - max_th) / max_th` for
//!   `max_th <= avg < 2 max_th`, every packet dropped above `2 max_th`;
//! - the drop probability `p_a = p_b / (1 - count p_b)` with `count` the
//!   packets since the last drop, which spreads drops evenly (the gap between
//!   drops is uniform on 1..1/p_b).
//!
//! Parameters: `min_th`, `max_th` in packets (or bytes with
//! `thresholds_in_bytes`), `max_p` (0.1), `w_q` (0.002), `gentle` (true),
//! `byte_mode` (false), `mean_pkt_bytes` (1000), and the hard limit of the
//! buffer. Validated by the unit tests below: the probability function and a
//! long run's drop fraction against the gap distribution it implies.

use crate::config::RedConfig;
use crate::qos::fifo::{Limit, PacketQueue};
use crate::qos::{Backlog, Dequeued, DropReason, Qdisc, QueueCounters, QueueCtx};
use crate::packet::Packet;
use crate::time::SimTime;

/// User parameters, validated once.
#[derive(Clone, Debug, PartialEq)]
pub struct RedParams {
    pub limit: Limit,
    pub min_th: f64,
    pub max_th: f64,
    pub thresholds_in_bytes: bool,
    pub max_p: f64,
    pub w_q: f64,
    pub gentle: bool,
    pub byte_mode: bool,
    pub mean_pkt_bytes: u32,
}

impl RedParams {
    pub fn from_config(c: &RedConfig) -> Result<Self, String> {
        let p = RedParams {
            limit: Limit::from_opts(c.limit_pkts, c.limit_bytes),
            min_th: c.min_th,
            max_th: c.max_th,
            thresholds_in_bytes: c.thresholds_in_bytes,
            max_p: c.max_p,
            w_q: c.w_q,
            gentle: c.gentle,
            byte_mode: c.byte_mode,
            mean_pkt_bytes: c.mean_pkt_bytes,
        };
        p.validate()?;
        Ok(p)
    }
    pub fn validate(&self) -> Result<(), String> {
        if !(self.min_th >= 0.0 && self.min_th < self.max_th) {
            return Err(format!("red: need 0 <= min_th < max_th, got {} and {}", self.min_th, self.max_th));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(format!("red: max_p must be in (0, 1], got {}", self.max_p));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(format!("red: w_q must be in (0, 1], got {}", self.w_q));
        }
        if self.mean_pkt_bytes == 0 {
            return Err("red: mean_pkt_bytes must be positive".into());
        }
        Ok(())
    }

    /// `p_b` for an average queue `avg` (before byte-mode scaling), in [0, 1].
    pub fn base_probability(&self, avg: f64) -> f64 {
        if avg < self.min_th {
            0.0
        } else if avg < self.max_th {
            self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        } else if self.gentle && avg < 2.0 * self.max_th {
            self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th
        } else {
            1.0
        }
    }
}

/// `p_a = p_b / (1 - count p_b)`, 1 once `count p_b >= 1`.
pub fn spread_probability(pb: f64, count: i64) -> f64 {
    let denom = 1.0 - count as f64 * pb;
    if denom <= pb {
        1.0
    } else {
        (pb / denom).min(1.0)
    }
}

pub struct Red {
    params: RedParams,
    q: PacketQueue,
    /// Average queue, in the thresholds' unit.
    avg: f64,
    /// Packets since the last drop; -1 while the average is below min_th.
    count: i64,
    /// When the queue last went empty (None while busy).
    idle_since: Option<SimTime>,
}

impl Red {
    pub fn new(params: RedParams) -> Self {
        Red { params, q: PacketQueue::default(), avg: 0.0, count: -1, idle_since: Some(SimTime::ZERO) }
    }
    pub fn avg(&self) -> f64 {
        self.avg
    }

    fn current(&self) -> f64 {
        let b = self.q.backlog();
        if self.params.thresholds_in_bytes {
            b.bytes as f64
        } else {
            b.pkts as f64
        }
    }

    fn update_avg(&mut self, ctx: &QueueCtx) {
        let w = self.params.w_q;
        match self.idle_since {
            Some(since) if self.q.is_empty() => {
                // Idle correction: the empty period counts as m small-packet arrivals.
                let s = ctx.link_rate.tx_time(self.params.mean_pkt_bytes as u64).as_nanos().max(1) as f64;
                let m = ctx.now.since(since).as_nanos() as f64 / s;
                self.avg *= (1.0 - w).powf(m);
                // The idle period goes on from now: if this packet is
                // dropped the queue stays empty, and the next arrival decays
                // the average by the time since this one (ns-2 and ns-3
                // restart the idle clock whenever a dequeue finds nothing).
                self.idle_since = Some(ctx.now);
            }
            _ => self.avg = (1.0 - w) * self.avg + w * self.current(),
        }
    }

    /// The early-drop decision for a packet of `size` bytes (Fig. 2 of the paper).
    fn early_drop(&mut self, size: u32, ctx: &mut QueueCtx) -> bool {
        // ns-2 `REDQueue::enque` and ns-3 `RedQueueDisc::DoEnqueue` never
        // drop early into a queue holding at most one packet.
        let mut pb = if self.q.backlog().pkts <= 1 { 0.0 } else { self.params.base_probability(self.avg) };
        if pb <= 0.0 {
            self.count = -1;
            return false;
        }
        if pb >= 1.0 {
            self.count = 0;
            return true;
        }
        if self.params.byte_mode {
            pb = (pb * size as f64 / self.params.mean_pkt_bytes as f64).min(1.0);
        }
        self.count += 1;
        let pa = spread_probability(pb, self.count);
        if ctx.rng.uniform() < pa {
            self.count = 0;
            true
        } else {
            false
        }
    }
}

impl Qdisc for Red {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QueueCtx) -> Result<(), (Packet, DropReason)> {
        self.update_avg(ctx);
        let reason = if self.early_drop(pkt.size, ctx) {
            Some(DropReason::Aqm)
        } else if !self.params.limit.admits(self.q.backlog(), pkt.size) {
            Some(DropReason::Tail)
        } else {
            None
        };
        if let Some(r) = reason {
            self.q.counters.on_drop(pkt.size, r);
            return Err((pkt, r));
        }
        self.idle_since = None;
        self.q.push(pkt);
        Ok(())
    }
    fn dequeue(&mut self, ctx: &mut QueueCtx) -> Dequeued {
        match self.q.pop() {
            Some(p) => {
                if self.q.is_empty() {
                    self.idle_since = Some(ctx.now);
                }
                Dequeued::Packet(p)
            }
            None => Dequeued::Empty,
        }
    }
    fn backlog(&self) -> Backlog {
        self.q.backlog()
    }
    fn for_each_queue(&self, f: &mut dyn FnMut(&str, &QueueCounters, Backlog)) {
        f("", &self.q.counters, self.q.backlog())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::units::DataRate;

    fn params() -> RedParams {
        RedParams {
            limit: Limit::UNLIMITED,
            min_th: 5.0,
            max_th: 15.0,
            thresholds_in_bytes: false,
            max_p: 0.1,
            w_q: 0.002,
            gentle: true,
            byte_mode: false,
            mean_pkt_bytes: 1000,
        }
    }

    fn pkt() -> Packet {
        Packet::test(0, 1000)
    }

    #[test]
    fn probability_function_matches_the_formula() {
        let p = params();
        assert_eq!(p.base_probability(4.99), 0.0);
        assert!((p.base_probability(10.0) - 0.05).abs() < 1e-12);
        assert!((p.base_probability(15.0) - 0.1).abs() < 1e-12);
        // Gentle: halfway between max_th and 2 max_th -> max_p + (1 - max_p)/2.
        assert!((p.base_probability(22.5) - 0.55).abs() < 1e-12);
        assert_eq!(p.base_probability(30.0), 1.0);
        let harsh = RedParams { gentle: false, ..p };
        assert_eq!(harsh.base_probability(15.0), 1.0);
        assert_eq!(spread_probability(0.1, 0), 0.1);
        assert!((spread_probability(0.1, 5) - 0.2).abs() < 1e-12);
        assert_eq!(spread_probability(0.1, 10), 1.0);
    }

    #[test]
    fn parameters_are_validated() {
        assert!(RedParams { min_th: 20.0, ..params() }.validate().is_err());
        assert!(RedParams { max_p: 0.0, ..params() }.validate().is_err());
        assert!(RedParams { w_q: 1.5, ..params() }.validate().is_err());
    }

    /// Expected drop fraction when the average stays at `avg`: the gap G
    /// between drops has P(G > k) = prod_{c=1..k} (1 - p_a(c)), and the drop
    /// fraction is 1 / E[G].
    fn expected_drop_fraction(p: &RedParams, avg: f64) -> f64 {
        let pb = p.base_probability(avg);
        let (mut survive, mut mean_gap) = (1.0, 0.0);
        for c in 1..100_000 {
            mean_gap += survive; // P(G >= c)
            survive *= 1.0 - spread_probability(pb, c);
            if survive < 1e-15 {
                break;
            }
        }
        1.0 / mean_gap
    }

    #[test]
    fn long_run_drop_fraction_follows_the_function() {
        for &level in &[7usize, 10, 13, 18] {
            let p = params();
            let mut red = Red::new(p.clone());
            let mut rng = Rng::stream(3, "red-test");
            let (mut drops, mut offered) = (0u64, 0u64);
            // Hold the instantaneous queue at `level` so that avg converges to it:
            // every arrival is followed by one departure.
            for i in 0..400_000u64 {
                let now = SimTime(i * 1000);
                let mut ctx = QueueCtx { now, link_rate: DataRate::gbps(1), rng: &mut rng };
                let measuring = i >= 20_000;
                while red.backlog().pkts < level as u64 {
                    red.q.push(pkt());
                    red.idle_since = None;
                }
                match red.enqueue(pkt(), &mut ctx) {
                    Ok(()) => {
                        red.dequeue(&mut ctx);
                    }
                    Err(_) => drops += measuring as u64,
                }
                offered += measuring as u64;
            }
            let measured = drops as f64 / offered as f64;
            let expected = expected_drop_fraction(&p, level as f64);
            assert!((measured - expected).abs() / expected < 0.05, "level {level}: measured {measured}, expected {expected}");
        }
    }

    #[test]
    fn idle_time_decays_the_average() {
        let mut red = Red::new(params());
        red.avg = 10.0;
        red.idle_since = Some(SimTime::ZERO);
        let mut rng = Rng::stream(1, "x");
        // 1000 B at 1 Gbps = 8 us; 8 ms idle = 1000 small-packet times.
        let mut ctx = QueueCtx { now: SimTime(8_000_000), link_rate: DataRate::gbps(1), rng: &mut rng };
        red.update_avg(&mut ctx);
        let expected = 10.0 * (1.0f64 - 0.002).powf(1000.0);
        assert!((red.avg - expected).abs() < 1e-9, "{} vs {}", red.avg, expected);
    }

    /// Issue 9, defect 0: with the average far above `max_th`, an arrival
    /// at an empty queue is still admitted, and arrivals at a queue that
    /// stays empty keep decaying the average from the previous one.
    #[test]
    fn an_empty_queue_admits_and_keeps_decaying() {
        let mut red = Red::new(RedParams { gentle: false, ..params() });
        let mut rng = Rng::stream(1, "x");
        red.avg = 100.0;
        for k in 1..=3u64 {
            // 1000 B at 1 Gbps = 8 us; each 8 ms of idleness is 1000 slots.
            let mut ctx = QueueCtx { now: SimTime(k * 8_000_000), link_rate: DataRate::gbps(1), rng: &mut rng };
            red.update_avg(&mut ctx);
            let want = 100.0 * (1.0f64 - 0.002).powf(1000.0 * k as f64);
            assert!((red.avg - want).abs() < 1e-9 * want, "arrival {k}: {} vs {want}", red.avg);
        }
        red.avg = 100.0;
        let mut ctx = QueueCtx { now: SimTime(30_000_000), link_rate: DataRate::gbps(1), rng: &mut rng };
        assert!(red.enqueue(pkt(), &mut ctx).is_ok(), "empty queue: admitted");
        assert!(red.enqueue(pkt(), &mut ctx).is_ok(), "one packet held: admitted");
        assert_eq!(red.enqueue(pkt(), &mut ctx).unwrap_err().1, DropReason::Aqm, "two held: forced drop");
    }
}
