//! Queueing theory: a FIFO fed by Poisson arrivals is an M/M/1 (exponential
//! sizes) or M/D/1 (fixed sizes) queue whose mean sojourn time is known in
//! closed form; RED under an unresponsive overload settles where its drop
//! function matches the excess load.

mod common;
use common::*;

const LINK: u64 = GBPS;
const MEAN_SIZE: u64 = 1000;
const RHO: f64 = 0.7;
/// 1.05 million packets at lambda = 87 500 /s.
const STOP: u64 = 12 * S;

fn mm1_run(exp_size: bool) -> Res {
    let lambda_bps = (RHO * LINK as f64) as u64;
    Cfg::new(STOP + 10 * MS, MS)
        .host("A")
        .host("B")
        .link_q("A", "B", LINK, 0, 0, unlimited(), unlimited())
        .flow(poisson("p", "A", "B", 0, Some(STOP), MEAN_SIZE, lambda_bps, exp_size))
        .run()
}

/// Little's law on the queue series: the time-average number waiting
/// (sampled every 1 ms, independently of the arrivals) is lambda * W_q.
fn littles_law(res: &Res, mean_sojourn_ns: f64, mean_service_ns: f64) -> (f64, f64) {
    let len = res.series("queue", "A->B", "len_pkts");
    let t = res.series("queue", "A->B", "time_ns");
    let samples: Vec<f64> = t.iter().zip(&len).filter(|(t, _)| **t <= STOP).map(|(_, l)| *l as f64).collect();
    let mean_len = samples.iter().sum::<f64>() / samples.len() as f64;
    let lambda = res.flow("p", "tx_pkts") as f64 / STOP as f64; // per ns
    (mean_len, lambda * (mean_sojourn_ns - mean_service_ns))
}

#[test]
fn mm1_mean_sojourn_time() {
    let res = mm1_run(true);
    let n = res.flow("p", "rx_pkts");
    assert!(n >= 1_000_000, "{n} packets");
    assert_eq!(n, res.flow("p", "tx_pkts"), "unlimited queue: no loss");
    // Sizes are whole bytes, at least 1: for X ~ Exp(1000 B),
    // E[max(1, round(X))] = 1000.0005 B, so mu from the nominal mean is exact
    // to 1e-6; the realised mean must agree to sampling noise (sd 0.1%).
    let mean_size = res.flow("p", "rx_bytes") as f64 / n as f64;
    assert!(rel(mean_size, MEAN_SIZE as f64) < 0.005, "mean size {mean_size}");
    let mu = LINK as f64 / (MEAN_SIZE as f64 * 8.0) / 1e9; // per ns
    let lambda = RHO * mu;
    let t_theory = 1.0 / (mu - lambda);
    let t = res.flow_opt("p", "delay_mean_ns").unwrap() as f64;
    println!("M/M/1 rho {RHO}: mean sojourn {t:.0} ns, theory {t_theory:.0} ns ({:+.2}%), {n} packets", 100.0 * (t / t_theory - 1.0));
    assert!(rel(t, t_theory) < 0.05, "M/M/1 sojourn {t} vs {t_theory}");
    // The sojourn time of M/M/1 FIFO is exponential with mean T: its
    // standard deviation is T, its median T ln 2 and its 99th percentile T ln 100.
    let sd = res.flow_opt("p", "delay_std_ns").unwrap() as f64;
    let p50 = res.flow_opt("p", "delay_p50_ns").unwrap() as f64;
    let p99 = res.flow_opt("p", "delay_p99_ns").unwrap() as f64;
    println!("M/M/1: std {sd:.0} (theory {t_theory:.0}), p50 {p50:.0} ({:.0}), p99 {p99:.0} ({:.0})", t_theory * 2f64.ln(), t_theory * 100f64.ln());
    assert!(rel(sd, t_theory) < 0.07, "std {sd}");
    assert!(rel(p50, t_theory * 2f64.ln()) < 0.05, "p50 {p50}");
    assert!(rel(p99, t_theory * 100f64.ln()) < 0.07, "p99 {p99}");
    let (l, lw) = littles_law(&res, t, 1.0 / mu);
    println!("M/M/1: mean waiting {l:.3} pkts, lambda W_q {lw:.3}, theory rho^2/(1-rho) {:.3}", RHO * RHO / (1.0 - RHO));
    assert!(rel(l, lw) < 0.05, "Little: L_q {l} vs lambda W_q {lw}");
}

#[test]
fn md1_mean_sojourn_time() {
    let res = mm1_run(false);
    let n = res.flow("p", "rx_pkts");
    assert!(n >= 1_000_000, "{n} packets");
    assert_eq!(res.flow("p", "rx_bytes"), n * MEAN_SIZE);
    let service_ns = tx_ns(MEAN_SIZE, LINK) as f64; // 8 us, exact
    let mu = 1.0 / service_ns;
    let t_theory = 1.0 / mu + RHO / (2.0 * mu * (1.0 - RHO));
    let t = res.flow_opt("p", "delay_mean_ns").unwrap() as f64;
    println!("M/D/1 rho {RHO}: mean sojourn {t:.0} ns, theory {t_theory:.0} ns ({:+.2}%), {n} packets", 100.0 * (t / t_theory - 1.0));
    assert!(rel(t, t_theory) < 0.05, "M/D/1 sojourn {t} vs {t_theory}");
    // A packet that finds the system empty (30% of arrivals) spends exactly
    // its service time: the minimum.
    assert_eq!(res.flow_opt("p", "delay_min_ns"), Some(service_ns as u64));
    let (l, lw) = littles_law(&res, t, service_ns);
    println!("M/D/1: mean waiting {l:.3} pkts, lambda W_q {lw:.3}, theory rho^2/(2(1-rho)) {:.3}", RHO * RHO / (2.0 * (1.0 - RHO)));
    assert!(rel(l, lw) < 0.05, "Little: L_q {l} vs lambda W_q {lw}");
}

// ------------------------------------------------------------------ RED

const RED_MIN: f64 = 5.0;
const RED_MAX: f64 = 15.0;
const RED_MAXP: f64 = 0.1;
const HARD_LIMIT: u64 = 100;

/// RED's drop probability p_b (gentle), as Floyd & Jacobson and Floyd 2000 define it.
fn red_pb(avg: f64) -> f64 {
    if avg < RED_MIN {
        0.0
    } else if avg < RED_MAX {
        RED_MAXP * (avg - RED_MIN) / (RED_MAX - RED_MIN)
    } else if avg < 2.0 * RED_MAX {
        RED_MAXP + (1.0 - RED_MAXP) * (avg - RED_MAX) / RED_MAX
    } else {
        1.0
    }
}

/// Long-run drop fraction at a constant average: with p_a = p_b / (1 - count p_b)
/// the gap between drops is uniform on 1..1/p_b, so the fraction is 1 / E[gap].
fn red_drop_fraction(avg: f64) -> f64 {
    let pb = red_pb(avg);
    if pb <= 0.0 {
        return 0.0;
    }
    let (mut survive, mut mean_gap) = (1.0, 0.0);
    for c in 1..1_000_000 {
        mean_gap += survive;
        let denom = 1.0 - c as f64 * pb;
        let pa = if denom <= pb { 1.0 } else { (pb / denom).min(1.0) };
        survive *= 1.0 - pa;
        if survive < 1e-15 {
            break;
        }
    }
    1.0 / mean_gap
}

/// H -> R1 -> R2 -> D with a 1 Gbps bottleneck R1 -> R2 fed 1.25 Gbps of CBR.
fn overload(queue: serde_json::Value) -> Res {
    Cfg::new(2 * S, MS)
        .host("H")
        .router("R1")
        .router("R2")
        .host("D")
        .link("H", "R1", 10 * GBPS, 10 * US, ETH)
        .link_q("R1", "R2", GBPS, 100 * US, ETH, queue, unlimited())
        .link("R2", "D", 10 * GBPS, 10 * US, ETH)
        .flow(udp("cbr", "H", "D", 0, Some(2 * S - 10 * MS), 1500, 1_250 * MBPS))
        .run()
}

/// Mean queue length at R1 -> R2 over [from, to].
fn mean_len(res: &Res, from: u64, to: u64) -> (f64, u64) {
    let t = res.series("queue", "R1->R2", "time_ns");
    let l = res.series("queue", "R1->R2", "len_pkts");
    let v: Vec<u64> = t.iter().zip(&l).filter(|(t, _)| **t >= from && **t <= to).map(|(_, l)| *l).collect();
    (v.iter().sum::<u64>() as f64 / v.len() as f64, *v.iter().max().unwrap())
}

#[test]
fn red_holds_the_queue_where_its_drop_function_meets_the_excess_load() {
    // Unresponsive overload: the fraction dropped must be 1 - capacity / offered.
    let offered_pps = 1.25e9 / (1500.0 * 8.0);
    let capacity_pps = 1e9 / ((1500 + ETH) as f64 * 8.0);
    let excess = 1.0 - capacity_pps / offered_pps;
    // Equilibrium average: red_drop_fraction(avg) = excess (bisection; monotone).
    let (mut lo, mut hi) = (RED_MIN, 2.0 * RED_MAX);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if red_drop_fraction(mid) < excess {
            lo = mid
        } else {
            hi = mid
        }
    }
    let avg_theory = lo;

    let res = overload(red(HARD_LIMIT, RED_MIN, RED_MAX, RED_MAXP));
    let q = "R1->R2";
    let arrivals = res.queue(q, "enq_pkts") + res.queue(q, "drop_pkts");
    let drop_frac = res.queue(q, "drop_pkts") as f64 / arrivals as f64;
    let (mean, max) = mean_len(&res, 200 * MS, 1900 * MS);
    println!(
        "RED: drop fraction {drop_frac:.4} (excess load {excess:.4}), mean queue {mean:.2} pkts (equilibrium avg {avg_theory:.2}), max {max}, aqm drops {}, tail drops {}",
        res.queue(q, "drop_aqm_pkts"),
        res.queue(q, "drop_tail_pkts")
    );
    assert!(res.queue(q, "drop_aqm_pkts") > 0);
    assert_eq!(res.queue(q, "drop_tail_pkts"), 0, "RED never let the queue reach its hard limit");
    assert!(rel(drop_frac, excess) < 0.01, "drop fraction {drop_frac} vs {excess}");
    assert!(max < HARD_LIMIT / 2, "max queue {max}");
    assert!((mean - avg_theory).abs() < 2.0, "mean queue {mean} vs RED equilibrium {avg_theory}");

    // The same overload through a drop-tail FIFO: the queue sits at its limit
    // and every drop is a tail drop.
    let res = overload(fifo(Some(HARD_LIMIT), None));
    let arrivals = res.queue(q, "enq_pkts") + res.queue(q, "drop_pkts");
    let drop_frac = res.queue(q, "drop_pkts") as f64 / arrivals as f64;
    let (mean, max) = mean_len(&res, 200 * MS, 1900 * MS);
    println!("FIFO: drop fraction {drop_frac:.4}, mean queue {mean:.2} pkts, max {max}");
    assert_eq!(res.queue(q, "drop_aqm_pkts"), 0);
    assert_eq!(res.queue(q, "drop_tail_pkts"), res.queue(q, "drop_pkts"));
    assert!(rel(drop_frac, excess) < 0.01, "drop fraction {drop_frac} vs {excess}");
    assert!(max <= HARD_LIMIT && mean >= (HARD_LIMIT - 2) as f64, "FIFO queue mean {mean}, max {max}");
}
