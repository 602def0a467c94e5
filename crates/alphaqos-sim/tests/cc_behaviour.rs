//! The congestion controllers on real paths: recovery after a loss on a
//! long fat pipe against each algorithm's growth function, fairness between
//! flows of one algorithm, and the base flow holding its committed rate.

mod common;
use common::*;
use serde_json::json;

/// Jumbo frames (9000 B MTU) keep the 10 Gbps runs fast to simulate and are
/// what research networks run.
const JUMBO_MSS: u64 = 8948;
const JUMBO_WIRE: u64 = 9000 + ETH;

/// One flow S -> D over a 10 Gbps, 100 ms path with a 12.5 MB (0.1 BDP)
/// bottleneck buffer: a loss leaves the window well below the BDP, and the
/// controller must grow it back.
fn long_fat_pipe(cc: &str, duration: u64) -> Res {
    Cfg::new(duration, 100 * MS)
        .host("S")
        .router("R1")
        .router("R2")
        .host("D")
        .link("S", "R1", 40 * GBPS, US, ETH)
        .link_q("R1", "R2", 10 * GBPS, 50 * MS - 2 * US, ETH, fifo(None, Some(12_500_000)), fifo(Some(10_000), None))
        .link("R2", "D", 40 * GBPS, US, ETH)
        .flow(tcp("tcp", "S", "D", 0, None, json!({"cc": cc, "mss_bytes": JUMBO_MSS, "rwnd_bytes": 1u64 << 30})))
        .run()
}

/// (time of the first loss, ssthresh it set in segments, first time after it
/// that goodput reached 90% of the link's payload rate), times in s.
fn recovery(res: &Res) -> (f64, f64, Option<f64>) {
    let t = res.series("tcp", "tcp", "time_ns");
    let fr = res.series("tcp", "tcp", "fast_retransmits");
    let g = res.series("tcp", "tcp", "goodput_bps");
    let ss = res.series_opt("tcp", "tcp", "ssthresh_bytes");
    let i = fr.iter().position(|&n| n > 0).expect("a loss happens");
    let max = 10e9 * JUMBO_MSS as f64 / JUMBO_WIRE as f64;
    let reached = (i + 1..t.len()).find(|&k| g[k] as f64 >= 0.9 * max).map(|k| t[k] as f64 * 1e-9);
    (t[i] as f64 * 1e-9, ss[i].expect("ssthresh set") as f64 / JUMBO_MSS as f64, reached)
}

/// The window (segments) that carries 90% of the link's payload rate in one
/// 100 ms round trip.
fn w90() -> f64 {
    0.9 * 10e9 * JUMBO_MSS as f64 / JUMBO_WIRE as f64 * 0.1 / 8.0 / JUMBO_MSS as f64
}

#[test]
fn cubic_recovers_as_its_cubic_function_predicts() {
    let res = long_fat_pipe("cubic", 50 * S);
    let (t_loss, w0, reached) = recovery(&res);
    // RFC 9438: W(t) = C (t - K)^3 + W_max, K = cbrt(W_max (1 - beta) / C),
    // W_max = w0 / beta after the first loss; solve W(t) = W90.
    let (c, beta) = (0.4, 0.7);
    let w_max = w0 / beta;
    let k = (w_max * (1.0 - beta) / c).cbrt();
    let predicted = k + ((w90() - w_max) / c).cbrt();
    let took = reached.expect("CUBIC reaches 90% utilization") - t_loss;
    println!("cubic: loss at {t_loss:.1} s, W_max {w_max:.0} seg, K {k:.1} s, 90% after {took:.1} s, predicted {predicted:.1} s");
    assert!(took <= predicted * 1.1 + 0.5, "took {took} s, formula {predicted} s");
    assert!(took >= predicted * 0.8, "faster than the cubic allows: {took} s vs {predicted} s");
}

#[test]
fn htcp_recovers_as_its_alpha_function_predicts() {
    let res = long_fat_pipe("htcp", 25 * S);
    let (t_loss, w0, reached) = recovery(&res);
    // Leith & Shorten: alpha(D) = 2 (1 - beta) (1 + 10 (D - 1) + ((D - 1) / 2)^2)
    // segments per RTT once D > 1 s after the congestion event; beta = 0.5 at
    // the first loss (no RTT range measured yet). Integrate per 100 ms RTT.
    let beta = 0.5;
    let (mut w, mut d) = (w0, 0.0f64);
    while w < w90() {
        let x = (d - 1.0).max(0.0);
        let factor = if d > 1.0 { 1.0 + 10.0 * x + (x / 2.0).powi(2) } else { 1.0 };
        w += 2.0 * (1.0 - beta) * factor;
        d += 0.1;
    }
    let took = reached.expect("H-TCP reaches 90% utilization") - t_loss;
    println!("htcp: loss at {t_loss:.1} s, window {w0:.0} seg, 90% after {took:.1} s, predicted {d:.1} s");
    assert!(took <= d * 1.1 + 0.5, "took {took} s, formula {d} s");
}

#[test]
fn newreno_does_not_recover_on_the_long_fat_pipe() {
    let res = long_fat_pipe("newreno", 25 * S);
    let (t_loss, w0, reached) = recovery(&res);
    // One segment per RTT: (W90 - w0) round trips of 100 ms.
    let predicted = (w90() - w0) * 0.1;
    println!("newreno: loss at {t_loss:.1} s, window {w0:.0} seg, 90% predicted after {predicted:.0} s");
    assert!(predicted > 100.0);
    assert_eq!(reached, None, "NewReno cannot regain 90% within the run");
}

/// Jain's fairness index of the flows' goodput over [from, to).
fn jain(res: &Res, flows: &[&str], from: u64, to: u64) -> f64 {
    let rates: Vec<f64> = flows
        .iter()
        .map(|f| {
            let t = res.series("tcp", f, "time_ns");
            let g = res.series("tcp", f, "goodput_bps");
            let v: Vec<f64> = t.iter().zip(&g).filter(|(&t, _)| t > from && t <= to).map(|(_, &g)| g as f64).collect();
            v.iter().sum::<f64>() / v.len() as f64
        })
        .collect();
    let sum: f64 = rates.iter().sum();
    sum * sum / (rates.len() as f64 * rates.iter().map(|r| r * r).sum::<f64>())
}

#[test]
fn two_flows_of_one_controller_share_fairly() {
    // 100 Mbps, 20 ms, a BDP of buffer (250 KB); the second flow starts 2 s
    // late. (At this BDP a NewReno sawtooth lasts ~2 s: 60 s hold many.)
    for cc in ["newreno", "cubic", "htcp"] {
        let res = Cfg::new(62 * S, 100 * MS)
            .host("S")
            .router("R1")
            .router("R2")
            .host("D")
            .link("S", "R1", 10 * GBPS, US, ETH)
            .link_q("R1", "R2", 100 * MBPS, 10 * MS - 2 * US, ETH, fifo(None, Some(250_000)), fifo(Some(10_000), None))
            .link("R2", "D", 10 * GBPS, US, ETH)
            .flow(tcp("a", "S", "D", 0, None, json!({"cc": cc})))
            .flow(tcp("b", "S", "D", 2 * S, None, json!({"cc": cc})))
            .run();
        let j = jain(&res, &["a", "b"], 2 * S, 62 * S);
        println!("{cc}: Jain's index {j:.4}");
        assert!(j >= 0.95, "{cc}: Jain's index {j}");
    }
}

#[test]
fn base_flow_holds_its_committed_rate() {
    // Third source document (deadline-driven transfers over DiffServ AF):
    // a 500 Mbps committed target rate on a 1 Gbps link beside 400 Mbps of
    // CBR, 20 ms RTT, a large queue.
    let ctr = 500 * MBPS;
    let res = Cfg::new(20 * S, 100 * MS)
        .host("S")
        .host("U")
        .router("R")
        .host("D")
        .link("S", "R", 10 * GBPS, US, ETH)
        .link("U", "R", 10 * GBPS, US, ETH)
        .link_q("R", "D", GBPS, 10 * MS - US, ETH, fifo(Some(20_000), None), fifo(Some(20_000), None))
        .flow(udp("cbr", "U", "D", 0, None, 1500, 400 * MBPS))
        .flow(tcp("base", "S", "D", 0, None, json!({"cc": "base_flow", "cc_params": {"ctr_bps": ctr}})))
        .run();
    let t = res.series("tcp", "base", "time_ns");
    let g = res.series("tcp", "base", "goodput_bps");
    let drops = res.series("udp", "cbr", "drop_pkts");
    // After start-up (2 s): every 100 ms sample within 5% of the CTR. The
    // window is sized in payload bytes, so goodput is what meets the CTR.
    for (&t, &g) in t.iter().zip(&g).filter(|(&t, _)| t > 2 * S) {
        assert!(rel(g as f64, ctr as f64) < 0.05, "at {} ms: {g} bit/s", t / MS);
    }
    assert_eq!(res.queue("R->D", "drop_pkts"), 0, "no losses");
    assert_eq!(*drops.last().unwrap(), 0);
    assert_eq!(*res.series("tcp", "base", "retransmits").last().unwrap(), 0);
}
