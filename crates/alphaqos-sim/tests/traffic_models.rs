//! The traffic models of the fifth source document (Bouras & Sevasti,
//! "Performance analysis for a DiffServ-enabled network: The case of
//! Relative Service", Table 1 and Section 5), each against its parameters
//! over a long run:
//!
//! - VoIP ON/OFF (`apps/onoff.rs`): 188-byte packets, 80 kb/s while ON,
//!   ITU-T P.59 periods: a long-run mean of 80 x 1.004 / 2.591 kb/s within
//!   3 %, never more than 80 kb/s in any second;
//! - MPEG-like video (`apps/video.rs`): 333 kb/s mean in 200-byte packets
//!   within 3 %;
//! - HTTP (`workload/mod.rs`): the response sizes' tail index, by the Hill
//!   estimator, within 3 % of the Pareto shape; the response's first byte
//!   leaves the server 1.5 round trips after the client opens its request.

mod common;
use alphaqos_sim::workload::dist::hill_estimator;
use common::*;
use serde_json::json;

/// H1, H2 -- R -- H3 on `rate` links with `delay` each way.
fn star(rate: u64, delay: u64, dur: u64, interval: u64) -> Cfg {
    Cfg::new(dur, interval)
        .host("H1")
        .host("H2")
        .host("H3")
        .router("R")
        .link_q("H1", "R", rate, delay, 0, fifo(Some(100_000), None), fifo(Some(100_000), None))
        .link_q("H2", "R", rate, delay, 0, fifo(Some(100_000), None), fifo(Some(100_000), None))
        .link_q("R", "H3", rate, delay, 0, fifo(Some(100_000), None), fifo(Some(100_000), None))
}

#[test]
fn voip_on_off_follows_p59_talk_spurts() {
    let dur = 2_500 * S;
    let mut cfg = star(10 * MBPS, MS, dur, S);
    let n = 8;
    for i in 0..n {
        cfg = cfg.flow(json!({"name": format!("voip{i}"), "src": "H1", "dst": "H3", "start_ns": 0,
                              "onoff": {"rate_bps": 80_000, "size_bytes": 188}}));
    }
    let r = cfg.run();
    let mean = 80_000.0 * 1.004 / (1.004 + 1.587); // 31.0 kb/s
    let (mut bytes, mut pkts) = (0u64, 0u64);
    for i in 0..n {
        let f = format!("voip{i}");
        bytes += r.flow(&f, "rx_bytes");
        pkts += r.flow(&f, "rx_pkts");
        // Never above the ON rate in any second (one packet of phase slack).
        let peak = r.series("udp", &f, "rx_rate_bps").into_iter().max().unwrap();
        assert!(peak <= 80_000 + 188 * 8, "{f}: {peak} b/s in one second");
    }
    assert_eq!(bytes, pkts * 188, "every packet is 188 B");
    let rate = bytes as f64 * 8.0 / (n as f64 * dur as f64 / 1e9);
    assert!(rel(rate, mean) < 0.03, "mean rate {rate} b/s vs P.59 {mean} b/s");
    // Silences are real: a flow is idle in a good share of the seconds.
    let idle = r.series("udp", "voip0", "rx_rate_bps").iter().filter(|&&x| x == 0).count() as f64 / 2_500.0;
    assert!((0.3..0.6).contains(&idle), "idle in {idle} of the seconds");
}

#[test]
fn video_averages_its_mean_rate_in_its_packet_size() {
    let dur = 1_000 * S;
    let r = star(10 * MBPS, MS, dur, S)
        .flow(json!({"name": "mpeg", "src": "H1", "dst": "H3", "start_ns": 0,
                     "video": {"mean_rate_bps": 333_000, "size_bytes": 200}}))
        .run();
    let (bytes, pkts) = (r.flow("mpeg", "rx_bytes"), r.flow("mpeg", "rx_pkts"));
    assert_eq!(bytes, pkts * 200);
    let rate = bytes as f64 * 8.0 / 1_000.0;
    assert!(rel(rate, 333_000.0) < 0.03, "{rate} b/s");
    // Variable: per-second rates spread around the mean (I frames, lognormal sizes).
    let per_s = r.series("udp", "mpeg", "rx_rate_bps");
    let (lo, hi) = (per_s.iter().min().unwrap(), per_s.iter().max().unwrap());
    assert!(*lo < 320_000 && *hi > 345_000, "per-second rates {lo}..{hi}");
}

#[test]
fn http_responses_have_the_pareto_tail_and_follow_their_requests() {
    // 100 sessions on two clients offering 200 Mb/s of responses on 1 Gb/s:
    // about 100 000 responses in 48 s.
    let dur = 48 * S;
    let w = json!({"name": "web", "tcp": {"mss_bytes": 1448},
                   "http": {"server": "H3", "clients": ["H1", "H2"], "sessions": 50,
                            "response": {"pareto": {"shape": 1.2, "mean_bytes": 12_000.0}},
                            "mean_rate_bps": 200 * MBPS}});
    let r = star(GBPS, 100 * US, dur, S).workload(w).run();
    let t = r.table("transfers");
    let src = t.strs("src");
    let sizes = r.col("transfers", "size_bytes");
    let mut responses: Vec<f64> = src.iter().zip(&sizes).filter(|(s, _)| *s == "H3").map(|(_, &b)| b as f64).collect();
    let requests: Vec<u64> = src.iter().zip(&sizes).filter(|(s, _)| *s != "H3").map(|(_, &b)| b).collect();
    assert!(requests.iter().all(|&b| b == 350), "requests are 350 B");
    assert!(responses.len() > 80_000 && responses.len() <= requests.len(), "{} responses, {} requests", responses.len(), requests.len());
    let k = 5_000;
    let shape = hill_estimator(&mut responses, k);
    assert!(rel(shape, 1.2) < 0.03, "Hill estimate {shape} from the {k} largest of {} responses", t.strs("src").len());

    // One session, a long think time: request and response alternate, and
    // the response starts 1.5 round trips after the request (SYN, SYN-ACK,
    // then the request reaches the server), plus serialization.
    let w = json!({"name": "one", "tcp": {"mss_bytes": 1448},
                   "http": {"server": "H3", "clients": ["H1"], "response": {"fixed": {"bytes": 20_000}},
                            "think_mean_ns": 200 * MS}});
    let r = star(100 * MBPS, 5 * MS, 10 * S, S).workload(w).run();
    let src = r.table("transfers").strs("src").to_vec();
    let start = r.col("transfers", "start_ns");
    let rtt = 4.0 * 5e6;
    assert!(src.len() > 20);
    for i in (0..src.len() - 1).step_by(2) {
        assert_eq!((src[i].as_str(), src[i + 1].as_str()), ("H1", "H3"), "request then response");
        let gap = (start[i + 1] - start[i]) as f64;
        assert!(gap >= 1.5 * rtt && gap < 1.5 * rtt + 1e5, "response {gap} ns after its request");
    }
}
