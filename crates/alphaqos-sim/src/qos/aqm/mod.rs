//! Active queue management: drop decisions made before the buffer is full.
//!
//! Each mechanism is an early-drop [`crate::qos::DropProfile`] that a FIFO
//! (or a class's FIFO) consults on every arrival and tells of every packet
//! admitted and sent; CoDel, which decides at dequeue, is the exception and
//! lives inside the per-flow queues of `qos/fq`.
//!
//! | file | profile | reference |
//! |---|---|---|
//! | [`ewma`] | RED's average with the idle-time correction | Floyd & Jacobson 1993, Section 4 |
//! | [`red`] | RED, one curve (and the RED queue) | Floyd & Jacobson 1993; gentle RED, Floyd 2000 |
//! | [`piecewise`] | Junos-style WRED curves per colour | Junos "Configuring RED Drop Profiles" |
//! | [`color_red`] | one RED curve per colour on a shared average: GRED, Cisco WRED | Linux `sch_gred.c`; Cisco IOS WRED |
//! | [`rio`] | RED with In and Out | Clark & Fang, ToN 6(4), 1998 |
//! | [`codel`] | CoDel's control law, per queue at dequeue | RFC 8289 |


pub mod codel;
pub mod color_red;
pub mod ewma;
pub mod piecewise;
pub mod red;
pub mod rio;

/// Helpers shared by the profiles' unit tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::red::{spread_probability, RedParams};
    use crate::packet::{Color, Packet};
    use crate::qos::fifo::Limit;
    use crate::qos::{Backlog, DropProfile, QueueCtx};
    use crate::rng::Rng;
    use crate::time::SimTime;
    use crate::units::DataRate;
    use Color::{Green as G, Red as R, Yellow as Y};

    pub(crate) fn pkt(color: Color, size: u32) -> Packet {
        Packet { color, ..Packet::test(0, size) }
    }

    pub(crate) fn red(min_th: f64, max_th: f64, max_p: f64) -> RedParams {
        RedParams {
            limit: Limit::UNLIMITED,
            min_th,
            max_th,
            thresholds_in_bytes: false,
            max_p,
            w_q: 0.002,
            gentle: false,
            byte_mode: false,
            mean_pkt_bytes: 1000,
            wait: false,
        }
    }

    /// Drop fraction of a RED curve held at `avg`: 1 / E[G], the gap G
    /// between drops having P(G > k) = prod_{c=1..k} (1 - p_a(c)).
    pub(crate) fn spread_fraction(p: &RedParams, avg: f64) -> f64 {
        let pb = p.base_probability(avg);
        if pb <= 0.0 {
            return 0.0;
        }
        if pb >= 1.0 {
            return 1.0;
        }
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

    /// Offer `n` packets of each colour, round robin, to `prof` at a queue
    /// held at `held` out of `limit`, one every microsecond; return the drop
    /// fraction per colour after `warm` rounds.
    pub(crate) fn measure(prof: &mut dyn DropProfile, held: Backlog, limit: Limit, warm: usize, n: usize, seed: u64) -> [f64; 3] {
        let mut rng = Rng::stream(seed, "wred-test");
        let mut drops = [0u64; 3];
        for i in 0..warm + n {
            for c in [G, Y, R] {
                let mut ctx = QueueCtx::new(SimTime(i as u64 * 1000), DataRate::gbps(1), &mut rng);
                if prof.early_drop(&pkt(c, 1500), held, limit, &mut ctx) && i >= warm {
                    drops[c as usize] += 1;
                }
            }
        }
        drops.map(|d| d as f64 / n as f64)
    }

    pub(crate) fn bytes(b: u64) -> Backlog {
        Backlog { pkts: b.div_ceil(1500), bytes: b }
    }
}
