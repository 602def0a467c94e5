//! RIO, RED with In and Out.
//!
//! D. D. Clark, W. Fang, "Explicit allocation of best-effort packet
//! delivery service", IEEE/ACM ToN 6(4), 1998, the RIO algorithm: two RED
//! curves; an In (green) packet is judged on `avg_in`, the average number
//! of In packets in the queue (updated on In arrivals), an Out (yellow or
//! red) packet on `avg_total`, the average of the whole queue (updated on
//! every arrival). With the Out curve below the In curve, Out packets are
//! dropped first. Each curve spreads its drops as RED does
//! ([`super::red`]), on averages of [`super::ewma`]; the In queue's idle
//! time is taken as the whole queue's.
//!
//! The profile counts the In packets held exactly: the queue tells it
//! every packet admitted and every packet sent.
//!
//! Parameters: [`RioParams`]: two [`RedParams`], `in_profile` and
//! `out_profile` (Clark & Fang's `(min_in, max_in, P_max_in)` and
//! `(min_out, max_out, P_max_out)`, with RED's other settings; their
//! `limit` is unused: the queue's own applies).
//!
//! Tests (below): the In count against a real FIFO with random departures;
//! RIO against colour-blind RED on an overloaded queue: Out packets are
//! dropped and In packets are not.

use super::red::red_curves_knob;
use crate::knob::{KnobOp, KnobResult};
use super::ewma::{Ewma, FillUnit};
use super::red::{red_drop, unit_of, RedParams};
use crate::error::{ConfigError, Outer};
use crate::packet::{Color, Packet};
use crate::qos::fifo::Limit;
use crate::qos::{Backlog, DropProfile, QueueCtx};
use crate::time::SimTime;

/// User parameters of [`Rio`] (Clark & Fang's `(min_in, max_in, P_max_in)`
/// and `(min_out, max_out, P_max_out)`, with RED's other settings).
#[derive(Clone, Debug, PartialEq)]
pub struct RioParams {
    /// The curve for In (green) packets, on the average of In packets.
    pub in_profile: RedParams,
    /// The curve for Out (yellow, red) packets, on the average of the queue.
    pub out_profile: RedParams,
}

/// RED with In and Out (Clark & Fang 1998, the RIO algorithm). Per arrival:
/// if In, update `avg_in`; update `avg_total`; an In packet is dropped by
/// the In curve on `avg_in`, an Out packet by the Out curve on `avg_total`.
#[derive(Clone, Debug)]
pub struct Rio {
    p: RioParams,
    in_unit: FillUnit,
    total_unit: FillUnit,
    avg_in: Ewma,
    avg_total: Ewma,
    count_in: i64,
    count_out: i64,
    /// The In packets held, as the queue reports them.
    in_backlog: Backlog,
}

impl Rio {
    /// A problem is located at the curve's parameter (`in_profile.max_p`).
    pub fn new(p: RioParams) -> Result<Rio, ConfigError> {
        p.in_profile.check().outer("in_profile")?;
        p.out_profile.check().outer("out_profile")?;
        Ok(Rio {
            in_unit: unit_of(&p.in_profile),
            total_unit: unit_of(&p.out_profile),
            avg_in: Ewma::new(p.in_profile.w_q, p.in_profile.mean_pkt_bytes),
            avg_total: Ewma::new(p.out_profile.w_q, p.out_profile.mean_pkt_bytes),
            count_in: -1,
            count_out: -1,
            in_backlog: Backlog::default(),
            p,
        })
    }
    /// In packets (and bytes) in the queue.
    pub fn in_backlog(&self) -> Backlog {
        self.in_backlog
    }
    /// `(avg_in, avg_total)`, each in its curve's unit.
    pub fn averages(&self) -> (f64, f64) {
        (self.avg_in.avg, self.avg_total.avg)
    }

}

impl DropProfile for Rio {
    fn early_drop(&mut self, pkt: &Packet, held: Backlog, _limit: Limit, ctx: &mut QueueCtx) -> bool {
        let is_in = pkt.color == Color::Green;
        let empty = held.pkts == 0;
        // Clark & Fang's RIO algorithm: avg_in on In arrivals only,
        // avg_total on every arrival. The In queue's idle time is taken as
        // the whole queue's.
        if is_in {
            let q_in = self.in_unit.of(self.in_backlog) as f64;
            self.avg_in.update(q_in, empty, ctx.now, ctx.link_rate);
        } else if empty && self.avg_in.is_idle() {
            // An Out packet ends the idle period: avg_in takes its decay now.
            self.avg_in.update(0.0, true, ctx.now, ctx.link_rate);
        }
        let avg_total = self.avg_total.update(self.total_unit.of(held) as f64, empty, ctx.now, ctx.link_rate);
        if is_in {
            red_drop(&self.p.in_profile, self.avg_in.avg, &mut self.count_in, pkt.size, held, ctx.rng)
        } else {
            red_drop(&self.p.out_profile, avg_total, &mut self.count_out, pkt.size, held, ctx.rng)
        }
    }
    fn on_enqueue(&mut self, pkt: &Packet, _held: Backlog, _now: SimTime) {
        self.avg_in.busy();
        self.avg_total.busy();
        if pkt.color == Color::Green {
            self.in_backlog.pkts += 1;
            self.in_backlog.bytes += pkt.size as u64;
        }
    }
    fn on_dequeue(&mut self, pkt: &Packet, held: Backlog, now: SimTime) {
        if pkt.color == Color::Green {
            self.in_backlog.pkts -= 1;
            self.in_backlog.bytes -= pkt.size as u64;
        }
        self.avg_in.on_departure(held, now);
        self.avg_total.on_departure(held, now);
    }
    /// Knobs: `min_th.green` etc. change the In curve, `.yellow` or `.red`
    /// the Out curve, no suffix both; `avg` reads the total average.
    fn knob(&mut self, name: &str, op: KnobOp) -> KnobResult {
        if let Some(r) = self.avg_total.avg_knob(name, op) {
            return r;
        }
        let name = name.replace(".red", ".yellow");
        red_curves_knob(&mut [Some(&mut self.p.in_profile), Some(&mut self.p.out_profile), None], &name, op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::aqm::color_red::ColorRed;
    use crate::qos::aqm::testutil::*;
    use crate::qos::fifo::Fifo;
    use crate::qos::{Dequeued, Qdisc};
    use crate::rng::Rng;
    use crate::units::DataRate;
    use Color::{Green as G, Red as R, Yellow as Y};

    #[test]
    fn rio_counts_the_in_packets_held() {
        // A queue of our own: arrivals through the profile, departures from
        // any position (the count no longer assumes FIFO order).
        let limit = Limit::from_opts(Some(50), None);
        let params = RioParams { in_profile: red(20.0, 40.0, 0.1), out_profile: red(5.0, 15.0, 0.5) };
        let mut rio = Rio::new(params).unwrap();
        let mut rng = Rng::stream(4, "rio-shadow");
        let mut held_pkts: Vec<Packet> = Vec::new();
        let backlog = |q: &[Packet]| Backlog { pkts: q.len() as u64, bytes: q.iter().map(|p| p.size as u64).sum() };
        for i in 0..100_000u64 {
            let now = SimTime(i * 1000);
            let u = rng.uniform();
            let color = if u < 0.4 { G } else if u < 0.7 { Y } else { R };
            let p = pkt(color, 500 + (i % 1000) as u32);
            let held = backlog(&held_pkts);
            let mut ctx = QueueCtx::new(now, DataRate::gbps(1), &mut rng);
            if !rio.early_drop(&p, held, limit, &mut ctx) && limit.admits(held, p.size) {
                held_pkts.push(p);
                rio.on_enqueue(&p, backlog(&held_pkts), now);
            }
            let real_in = held_pkts.iter().filter(|p| p.color == G);
            let want = Backlog { pkts: real_in.clone().count() as u64, bytes: real_in.map(|p| p.size as u64).sum() };
            assert_eq!(rio.in_backlog(), want, "arrival {i}");
            // Departures: 0, 1 or 2 per arrival, on average slightly fewer than arrivals.
            for _ in 0..(rng.next_u64() % 3) {
                if !held_pkts.is_empty() {
                    let k = (rng.next_u64() % held_pkts.len() as u64) as usize;
                    let p = held_pkts.remove(k);
                    rio.on_dequeue(&p, backlog(&held_pkts), now);
                }
            }
        }
    }

    /// A slotted queue: per slot, an In arrival with probability `a_in`, an
    /// Out arrival with probability `a_out`, then one departure. Returns
    /// the drop fraction of In and of Out packets.
    fn overload(profile: Box<dyn DropProfile>, a_in: f64, a_out: f64) -> (f64, f64) {
        let mut q = Fifo::with_profile(Limit::from_opts(Some(200), None), profile);
        let mut rng = Rng::stream(8, "rio-overload");
        let mut arrivals = Rng::stream(9, "rio-arrivals");
        // (offered, dropped) of In and of Out packets.
        let (mut n_in, mut n_out) = ((0u64, 0u64), (0u64, 0u64));
        for i in 0..400_000u64 {
            let mut ctx = QueueCtx::new(SimTime(i * 12_000), DataRate::gbps(1), &mut rng);
            let (u, v) = (arrivals.uniform(), arrivals.uniform());
            if u < a_in {
                n_in.0 += 1;
                n_in.1 += q.enqueue(pkt(G, 1500), &mut ctx).is_err() as u64;
            }
            if v < a_out {
                n_out.0 += 1;
                n_out.1 += q.enqueue(pkt(R, 1500), &mut ctx).is_err() as u64;
            }
            assert!(!matches!(q.dequeue(&mut ctx), Dequeued::NotBefore(_)));
        }
        (n_in.1 as f64 / n_in.0 as f64, n_out.1 as f64 / n_out.0 as f64)
    }

    #[test]
    fn rio_drops_out_of_profile_packets_first() {
        // 120 % load: In 50 % of the service rate, Out 70 %. With Clark &
        // Fang's kind of settings (Out curve far below the In curve), RIO
        // holds the queue near the Out thresholds by dropping Out packets
        // (about 0.2 / 0.7 of them) and never reaches the In thresholds.
        let rio = RioParams { in_profile: red(40.0, 70.0, 0.02), out_profile: red(10.0, 30.0, 0.5) };
        let (d_in, d_out) = overload(Box::new(Rio::new(rio).unwrap()), 0.5, 0.7);
        assert_eq!(d_in, 0.0, "no In packet dropped");
        assert!((d_out - 0.2 / 0.7).abs() < 0.03, "Out drop fraction {d_out}");
        // The same load on colour-blind RED (one curve for every colour)
        // drops In and Out alike.
        let same = red(10.0, 30.0, 0.5);
        let blind = ColorRed::gred([Some(same.clone()), Some(same.clone()), Some(same)]).unwrap();
        let (d_in, d_out) = overload(Box::new(blind), 0.5, 0.7);
        assert!(d_in > 0.1 && (d_in - d_out).abs() < 0.03, "RED: In {d_in}, Out {d_out}");
    }

}
