//! Workloads: connections created at run time, checked against what theory
//! predicts for them.
//!
//! - a single transfer alone on a path completes in the time slow start
//!   and the bottleneck rate give (`workload::ideal_fct`), within one round
//!   trip;
//! - k parallel streams share a bottleneck fairly and finish one file;
//! - an application-limited sender never sends what was not written;
//! - the offered load of Poisson arrivals and of ON/OFF sources matches its
//!   target within 3% over a long run (exponential sizes: the sum of
//!   Pareto sizes of shape 1.2 has infinite variance and would not settle;
//!   the shape itself is checked by the Hill estimator in `workload/dist.rs`);
//! - completion times of Poisson transfers at load 0.5 follow processor
//!   sharing, E[T | x] = x / (C (1 - rho)), for large x;
//! - bad workloads are refused with their field path;
//! - the TCP series of many streams stays within its row budget by
//!   keeping every other sample of every stream, whole lifetimes.

mod common;
use common::*;
use serde_json::{json, Value};

/// H1 -- R -- H2: 10 Gbps access, a `rate` bottleneck R -> H2 with `buf` packets,
/// `delay` one way on the bottleneck.
fn path(rate: u64, delay: u64, buf: u64, dur: u64) -> Cfg {
    Cfg::new(dur, 100 * MS)
        .host("H1")
        .host("H2")
        .router("R")
        .link_q("H1", "R", 10 * GBPS, 10 * US, 0, fifo(Some(10_000), None), fifo(Some(10_000), None))
        .link_q("R", "H2", rate, delay, 0, fifo(Some(buf), None), fifo(Some(10_000), None))
}

fn transfer(name: &str, size: u64, streams: u32, extra: Value) -> Value {
    let mut w = json!({"name": name, "streams": streams, "tcp": {"mss_bytes": 1448},
                       "transfer": {"src": "H1", "dst": "H2", "size_bytes": size}});
    w.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    w
}

#[test]
fn a_single_transfer_takes_the_time_slow_start_and_the_rate_predict() {
    // RTT 2 x (10 us + 5 ms) + serialization; 1 Gbps, a buffer too large to lose.
    for size in [20_000u64, 1_000_000, 20_000_000] {
        for handshake in [true, false] {
            let r = path(GBPS, 5 * MS, 20_000, 5 * S).workload(transfer("t", size, 1, json!({"handshake": handshake}))).run();
            let fct = r.col_opt("transfers", "fct_ns")[0].expect("finished") as f64;
            let ideal = r.col("transfers", "ideal_fct_ns")[0] as f64;
            let rtt = 2.0 * 5.02e6;
            assert!((fct - ideal).abs() <= rtt, "{size} B, handshake {handshake}: {fct} ns vs ideal {ideal} ns");
            assert_eq!(r.col("transfers", "bytes_acked")[0], size);
            assert_eq!(r.col("transfers", "retransmits")[0], 0);
        }
    }
}

#[test]
fn parallel_streams_share_fairly_and_finish_one_file() {
    let size = 50_000_000;
    let r = path(100 * MBPS, 5 * MS, 200, 10 * S).workload(transfer("g", size, 4, json!({}))).run();
    let ends = r.col_opt("transfer_streams", "end_ns");
    let rates: Vec<f64> = r.col_opt("transfer_streams", "mean_rate_bps").iter().map(|x| x.expect("finished") as f64).collect();
    assert_eq!(rates.len(), 4);
    assert_eq!(r.col("transfer_streams", "size_bytes").iter().sum::<u64>(), size);
    let jain = rates.iter().sum::<f64>().powi(2) / (4.0 * rates.iter().map(|x| x * x).sum::<f64>());
    assert!(jain > 0.98, "stream rates {rates:?}: Jain {jain}");
    // The file is done when its last stream is.
    let end = r.col_opt("transfers", "end_ns")[0].unwrap();
    assert_eq!(end, ends.iter().map(|e| e.unwrap()).max().unwrap());
    // Together they fill the bottleneck: 50 MB at ~96.5 Mbps of payload is ~4.1 s.
    let fct = r.col_opt("transfers", "fct_ns")[0].unwrap() as f64 / 1e9;
    assert!((4.1..4.7).contains(&fct), "{fct} s");
}

#[test]
fn an_application_limited_sender_never_sends_what_was_not_written() {
    // 2 MB written at 10 Mbps in 1000-byte writes on a 1 Gbps path.
    let (size, rate) = (2_000_000u64, 10 * MBPS);
    let w = transfer("app", size, 1, json!({"app_rate_bps": rate, "write_bytes": 1000}));
    let r = path(GBPS, 5 * MS, 20_000, 4 * S).workload(w).run();
    let fct = r.col_opt("transfers", "fct_ns")[0].unwrap() as f64;
    let written_by = size as f64 * 8.0 / rate as f64 * 1e9; // 1.6 s
    assert!(fct >= written_by, "finished at {fct} before the last write at {written_by}");
    assert!(fct <= written_by + 3.0 * 10.04e6, "{fct} vs {written_by}");
    // Delivered per interval never exceeds what was written: 10 Mbps plus one write.
    let t = r.table("workload");
    for (d, time) in t.u64s("delivered_bps").iter().zip(t.u64s("time_ns")) {
        assert!(*d <= rate + 1000 * 8 * 10, "{d} bit/s at {time}");
    }
}

fn offered(r: &Res, from_ns: u64, to_ns: u64) -> f64 {
    let starts = r.col("transfers", "start_ns");
    let sizes = r.col("transfers", "size_bytes");
    let bytes: u64 = starts.iter().zip(&sizes).filter(|(s, _)| (from_ns..to_ns).contains(*s)).map(|(_, b)| b).sum();
    bytes as f64 * 8.0 / ((to_ns - from_ns) as f64 / 1e9)
}

#[test]
fn poisson_arrivals_offer_their_target_load() {
    let load = 50 * MBPS;
    let w = json!({"name": "p", "poisson": {"load_bps": load, "pairs": {"list": [["H1", "H2"]]},
                                          "size": {"exponential": {"mean_bytes": 20000.0}}}});
    let r = path(GBPS, 1 * MS, 1000, 200 * S).workload(w).run();
    let got = offered(&r, 0, 200 * S);
    assert!(rel(got, load as f64) < 0.03, "offered {got} bit/s for {load}");
    // The series says the same.
    let offered_series: Vec<u64> = r.table("workload").u64s("offered_bps").to_vec();
    let mean = offered_series.iter().sum::<u64>() as f64 / offered_series.len() as f64;
    assert!(rel(mean, got) < 0.01, "{mean} vs {got}");
}

#[test]
fn onoff_sources_offer_their_target_rate() {
    // 10 hosts at 2 Mbps each to one server: 20 Mbps.
    let mut cfg = Cfg::new(200 * S, 100 * MS).host("S").router("R").link("R", "S", GBPS, 1 * MS, 0);
    let hosts: Vec<String> = (0..10).map(|i| format!("C{i}")).collect();
    for h in &hosts {
        cfg = cfg.host(h).link(h, "R", 100 * MBPS, 1 * MS, 0);
    }
    let w = json!({"name": "web", "onoff": {"hosts": hosts, "peers": ["S"], "mean_rate_bps": 2 * MBPS,
                                             "size": {"exponential": {"mean_bytes": 20000.0}}}});
    let r = cfg.workload(w).run();
    let got = offered(&r, 0, 200 * S);
    assert!(rel(got, 20e6) < 0.03, "offered {got} bit/s for 20 Mbit/s");
    let done = r.col_opt("transfers", "fct_ns").iter().filter(|x| x.is_some()).count();
    assert!(done as f64 > 0.99 * r.col("transfers", "start_ns").len() as f64);
}

#[test]
fn completion_times_follow_processor_sharing() {
    // 100 Mbps bottleneck, RTT ~2 ms: slow start costs little next to
    // transfers of megabytes. Exponential sizes of mean 1 MB at rho = 0.5 of
    // the payload capacity. Processor sharing: E[T | x] = x / (C (1 - rho)).
    // Tolerance 20%: TCP is not an ideal PS server (slow start, a finite
    // buffer and its losses, packet granularity).
    let cap = 100e6 * 1448.0 / 1500.0;
    let rho = 0.5;
    let w = json!({"name": "ps", "tcp": {"mss_bytes": 1448},
                   "poisson": {"load_bps": (rho * cap) as u64, "pairs": {"list": [["H1", "H2"]]},
                               "size": {"exponential": {"mean_bytes": 1e6}}}});
    let r = path(100 * MBPS, 500 * US, 100, 400 * S).workload(w).run();
    let sizes = r.col("transfers", "size_bytes");
    let fct = r.col_opt("transfers", "fct_ns");
    let (mut t_sum, mut ps_sum, mut n) = (0.0, 0.0, 0);
    for (x, t) in sizes.iter().zip(&fct) {
        if let (true, Some(t)) = (*x >= 2_000_000, t) {
            t_sum += *t as f64 / 1e9;
            ps_sum += *x as f64 * 8.0 / (cap * (1.0 - rho));
            n += 1;
        }
    }
    assert!(n > 100, "{n} large transfers");
    let ratio = t_sum / ps_sum;
    assert!((0.8..1.2).contains(&ratio), "mean FCT of {n} large transfers / PS prediction = {ratio}");
}

#[test]
fn bad_workloads_are_refused_with_their_path() {
    let err = |w: Value| path(GBPS, MS, 100, S).workload(w).build().err().expect("refused");
    let e = err(json!({"name": "x", "poisson": {"rate_per_s": 1.0, "pairs": {"list": [["H1", "H2"]]}, "size": {"pareto": {"shape": 1.0, "mean_bytes": 8000.0}}}}));
    assert!(e.starts_with("workloads[0].poisson.size.pareto.shape: must be above 1"), "{e}");
    let e = err(json!({"name": "x", "poisson": {"rate_per_s": -2.0, "pairs": {"list": [["H1", "H2"]]}, "size": {"fixed": {"bytes": 10}}}}));
    assert!(e.contains("workloads[0].poisson.rate_per_s: must be positive"), "{e}");
    let e = err(json!({"name": "x", "poisson": {"rate_per_s": 1.0, "pairs": {"list": [["H1", "H2"]]}, "size": {"empirical": {"cdf": [[10, 0.5], [20, 0.2], [30, 1]]}}}}));
    assert!(e.contains("workloads[0].poisson.size.empirical.cdf[1]: the CDF is not monotone"), "{e}");
    let e = err(json!({"name": "x", "transfer": {"src": "H1", "dst": "R", "size_bytes": 10}}));
    assert!(e.contains("workloads[0].transfer.dst: 'R' is a router"), "{e}");
    // Unconnected hosts.
    let cfg = path(GBPS, MS, 100, S).host("H3");
    let e = cfg.workload(transfer("x", 10, 1, json!({}))).workload(json!({"name": "y", "transfer": {"src": "H1", "dst": "H3", "size_bytes": 10}})).build().err().unwrap();
    assert!(e.contains("workloads[1]: no path from 'H1' to 'H3'"), "{e}");
    let e = err(json!({"name": "x", "streams": 0, "transfer": {"src": "H1", "dst": "H2", "size_bytes": 10}}));
    assert!(e.contains("workloads[0].streams"), "{e}");
}

#[test]
fn stale_packets_never_reach_the_connection_that_took_their_slot() {
    // Many short transfers with lossy reverse traffic: slots are reused while
    // retransmissions of finished connections may still be in flight. Every
    // transfer must deliver exactly its size.
    let w = json!({"name": "p", "poisson": {"rate_per_s": 200.0, "pairs": {"all": ["H1", "H2"]},
                                          "size": {"exponential": {"mean_bytes": 30000.0}}}});
    let r = path(100 * MBPS, 2 * MS, 30, 20 * S).workload(w).run();
    let sizes = r.col("transfers", "size_bytes");
    let acked = r.col("transfers", "bytes_acked");
    let fct = r.col_opt("transfers", "fct_ns");
    let mut done = 0;
    for ((s, a), f) in sizes.iter().zip(&acked).zip(&fct) {
        if f.is_some() {
            assert_eq!(s, a);
            done += 1;
        }
    }
    assert!(done > 3500, "{done}");
    let max = r.col("run", "max_conns")[0];
    assert!(max < 200, "slots are reused: {max} at most");
}

#[test]
fn dynamic_striping_hands_blocks_to_the_stream_with_room() {
    // Two streams, the second paced at 10 Mbps: static halves wait for the
    // slow one (5 MB at 10 Mbps = 4 s); dynamic blocks go to the fast one.
    let size = 10_000_000u64;
    let opts = json!({"stream_options": [{}, {"max_pacing_rate_bps": 10 * MBPS}]});
    let mut dynamic = opts.clone();
    dynamic["striping"] = json!("dynamic");
    dynamic["block_bytes"] = json!(256 * 1024);
    let stat = path(GBPS, 5 * MS, 20_000, 10 * S).workload(transfer("s", size, 2, opts)).run();
    let dyna = path(GBPS, 5 * MS, 20_000, 10 * S).workload(transfer("d", size, 2, dynamic)).run();
    let fct = |r: &Res| r.col_opt("transfers", "fct_ns")[0].expect("finished") as f64 / 1e9;
    assert!(fct(&stat) > 3.9, "static: {}", fct(&stat));
    assert!(fct(&dyna) < 0.5 * fct(&stat), "dynamic {} vs static {}", fct(&dyna), fct(&stat));
    // Every byte went exactly once: the streams' shares add up to the file,
    // nothing was retransmitted, and all of it was acknowledged.
    let shares = dyna.col("transfer_streams", "size_bytes");
    assert_eq!(shares.iter().sum::<u64>(), size);
    assert!(shares[0] > 4 * shares[1], "the fast stream carries most: {shares:?}");
    assert_eq!(dyna.col("transfers", "bytes_acked")[0], size);
    assert_eq!(dyna.col("transfers", "retransmits")[0], 0);
    // The file completes with its last block, whichever stream carried it.
    let ends: Vec<u64> = dyna.col_opt("transfer_streams", "end_ns").iter().map(|e| e.unwrap()).collect();
    assert_eq!(dyna.col_opt("transfers", "end_ns")[0].unwrap(), *ends.iter().max().unwrap());
}

#[test]
fn a_file_smaller_than_its_blocks_opens_only_the_streams_it_needs() {
    let w = transfer("d", 300_000, 4, json!({"striping": "dynamic", "block_bytes": 200_000}));
    let r = path(GBPS, 5 * MS, 20_000, 2 * S).workload(w).run();
    assert_eq!(r.col("transfers", "streams")[0], 2);
    assert_eq!(r.col("transfer_streams", "size_bytes"), [200_000, 100_000]);
    assert_eq!(r.col("transfers", "bytes_acked")[0], 300_000);
}

/// A base connection (base_flow) and an additional one (NewReno) sharing
/// a file block by block over a lossy bottleneck, stepped event by event:
/// `(size, simulation)` after the run, with the receiver's completion
/// checked at every step.
fn stepped_two_connection_transfer(loss: f64) -> (u64, alphaqos_sim::Simulation, alphaqos_sim::SimTime) {
    let size = 6_000_000u64;
    let opts = json!({"striping": "dynamic", "block_bytes": 100_000, "stream_options": [
        {"cc": "base_flow", "cc_params": {"ctr_bps": 40 * MBPS}, "dscp": 10},
        {"cc": "newreno", "dscp": 14}]});
    let cfg = Cfg::new(20 * S, 100 * MS)
        .host("H1")
        .host("H2")
        .router("R")
        .link_q("H1", "R", 10 * GBPS, 10 * US, 0, fifo(Some(10_000), None), fifo(Some(10_000), None))
        .link_q("R", "H2", 100 * MBPS, 5 * MS, 0, fifo(Some(10_000), None), fifo(Some(10_000), None))
        .impair_last(loss, 0.0, 0)
        .workload(transfer("d", size, 2, opts));
    let mut sim = cfg.build().expect("valid");
    let mut complete = None;
    while let Some(t) = sim.net.events.peek_time() {
        if t > sim.duration() {
            break;
        }
        sim.advance(t);
        if sim.transfers.is_empty() {
            continue;
        }
        let have = sim.transfer_delivered(0);
        match (sim.transfers[0].receiver_end, complete) {
            (None, _) => assert!(have < size, "{have} B held at {t} and not complete"),
            // Complete in the very step where the last block arrived.
            (Some(end), None) => {
                assert_eq!((end, have), (t, size), "completion noted late or early");
                complete = Some(end);
            }
            (Some(end), Some(first)) => assert_eq!(end, first, "completion is noted once"),
        }
    }
    (size, sim, complete.expect("the file arrived"))
}

#[test]
fn the_receiver_completes_when_every_block_has_arrived_whichever_stream_carried_it() {
    for loss in [0.0, 0.01] {
        let (size, sim, at) = stepped_two_connection_transfer(loss);
        let r = Res(sim.results());
        let shares = r.col("transfer_streams", "size_bytes");
        // Each block went to exactly one stream: the shares are whole blocks
        // (but for the file's last) and add up to the file; both carried some.
        assert_eq!(shares.iter().sum::<u64>(), size, "loss {loss}");
        assert_eq!(shares.iter().map(|s| s % 100_000).sum::<u64>(), 0);
        assert!(shares.iter().all(|&s| s > 0), "{shares:?}");
        // The sender learns of it at the last ACK, a one-way trip (5 ms) later at least.
        let end = r.col_opt("transfers", "end_ns")[0].expect("finished");
        assert_eq!(r.col_opt("transfers", "receiver_end_ns")[0], Some(at.as_nanos()));
        assert!(end >= at.as_nanos() + 5 * MS, "sender done {end}, receiver {at}");
        // Nothing is sent twice unless lost: without loss nothing is resent
        // and the receiver gets nothing twice; with loss every resend but
        // those the receiver got twice (the sender's recovery guessing
        // wrong) replaced a lost segment of the same stream.
        let resent = r.col("transfer_streams", "retransmitted_bytes").iter().sum::<u64>();
        let twice = r.col("transfer_streams", "spurious_retransmits").iter().sum::<u64>();
        let lost = r.queue("R->H2", "link_loss_pkts") + r.queue("R->H2", "drop_pkts");
        if loss == 0.0 {
            assert_eq!((resent, twice, lost), (0, 0, 0));
        } else {
            assert!(lost > 0 && resent > 0, "lost {lost}, resent {resent}");
            assert!(resent.div_ceil(1448) <= lost + twice, "{resent} B resent for {lost} lost, {twice} received twice");
        }
    }
}

#[test]
fn many_streams_are_sampled_whole_at_a_coarser_step_within_the_row_budget() {
    // 300 streams open for the whole 1 s run, sampled every millisecond:
    // 300,000 rows would pass the budget (2^18); from then on every other
    // sample is kept, of every stream, and the run's last sample too.
    let cfg = Cfg::new(S, MS).host("H1").host("H2").link("H1", "H2", 100 * MBPS, MS, 0);
    let r = cfg.workload(transfer("many", 1_000_000_000, 300, json!({}))).run();
    let t = r.table("workload_tcp");
    assert_eq!(r.col("run", "stream_sample_every"), [2]);
    assert!(t.rows() <= 1 << 18, "{} rows", t.rows());
    let (streams, times) = (t.u64s("stream"), t.u64s("time_ns"));
    assert!(t.strs("workload").iter().all(|w| w == "many") && t.u64s("transfer").iter().all(|&x| x == 0));
    for s in 0..300 {
        let mine: Vec<u64> = streams.iter().zip(times).filter(|(&x, _)| x == s).map(|(_, &t)| t).collect();
        // Samples 1, 3, 5, ... 999 ms (the 1st, 3rd, ...) and the last, 1000 ms.
        let expect: Vec<u64> = (0..500).map(|k| (2 * k + 1) * MS).chain([S]).collect();
        assert_eq!(mine, expect, "stream {s}");
    }
    // The windows are windows: at least one segment; the first, at 1 ms, the initial 10.
    let cwnd = t.u64s("cwnd_bytes");
    assert!(cwnd.iter().all(|&c| c >= 1448));
    assert!(cwnd.iter().zip(times).filter(|(_, &t)| t == MS).all(|(&c, _)| c == 10 * 1448));
}
