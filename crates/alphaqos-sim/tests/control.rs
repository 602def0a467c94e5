//! The control plane end to end: handles and knobs through the engine,
//! the log of changes, the agents against their documents, bad input.
//!
//! - a policer's rate changed mid-run: the bulk flow's goodput follows the
//!   new rate within 2% from one RTT after the change (with the flow's
//!   target rate set to match, as a reservation does);
//! - `wred_rtt_tuning` on a 10 Mbps link at 120% load of TCP traffic (the
//!   fifth document's first set-up): thresholds follow equation 2, the
//!   drop rate is Reno's for the flows' windows and the mean queue where
//!   RED's curve puts it, at the lower edge of equation 3's band;
//! - `deadline_reservation` meets a feasible deadline beside CBR
//!   background with a mean reservation at most 1.1 x size / deadline;
//! - `call_admission` refuses what does not fit its bookings, end to end;
//! - a run with agents is identical whatever the chunks it is stepped in;
//! - bad handles, knobs and values are refused with their path.

mod common;
use common::*;
use alphaqos_sim::Simulation;
use alphaqos_sim::control::ControlError;
use serde_json::{json, Value};

/// H1 -- R -- H2 (and C1 -- R for background): `rate` bottleneck R -> H2.
fn path(rate: u64, delay: u64, queue: Value, dur: u64) -> Cfg {
    Cfg::new(dur, 100 * MS)
        .host("H1")
        .host("H2")
        .host("C1")
        .router("R")
        .link("H1", "R", 10 * GBPS, 10 * US, 0)
        .link("C1", "R", 10 * GBPS, 10 * US, 0)
        .link_q("R", "H2", rate, delay, 0, queue, fifo(Some(10_000), None))
}

fn set_filter(cfg: &mut Cfg, router: &str, filter: Value) {
    let nodes = cfg.v["nodes"].as_array_mut().unwrap();
    nodes.iter_mut().find(|n| n["name"] == router).unwrap()["filter"] = filter;
}

fn control(cfg: &mut Cfg, agents: Value) {
    cfg.v["control"] = agents;
}

fn f64s(t: &alphaqos_sim::Table, c: &str) -> Vec<f64> {
    match t.get(c) {
        Some(alphaqos_sim::Column::F64(v)) => v.clone(),
        other => panic!("no f64 column {c}: {other:?}"),
    }
}

#[test]
fn a_policer_rate_change_is_followed_within_two_percent_after_one_rtt() {
    let mut cfg = path(GBPS, 5 * MS, fifo(Some(5000), None), 4 * S);
    set_filter(&mut cfg, "R", json!([{"name": "edge", "src": "10.0.0.2/32",
        "policer": {"rate_bps": 300_000_000u64, "burst_bytes": 200_000, "out_of_profile": "discard"}}]));
    let base = json!({"cc": "base_flow", "cc_params": {"ctr_bps": 280_000_000u64}, "mss_bytes": 1448});
    cfg = cfg.flow(tcp("bulk", "H1", "H2", 0, None, base));
    let mut sim = cfg.build().unwrap();
    let edge = sim.handles().resolve("R/edge").unwrap();
    let bulk = sim.handles().resolve("bulk").unwrap();
    sim.advance_before(SimTime(2 * S));
    // The reservation halves: the policer (IP bytes) and the target rate (payload).
    let new_payload = 140_000_000.0;
    let wire = (1448.0 + 52.0) / 1448.0;
    let tokens_before = sim.get(edge, "tokens").unwrap();
    assert_eq!(sim.set_as("test", edge, "rate_bps", (new_payload * wire as f64).round()).unwrap(), 300e6);
    assert_eq!(sim.set_as("test", bulk, "ctr_bps", new_payload).unwrap(), 280e6);
    assert!(sim.get(edge, "tokens").unwrap() >= tokens_before, "credited at the old rate up to the change");
    let acked_at = |sim: &mut Simulation, t: u64| {
        sim.advance_before(SimTime(t));
        sim.get(bulk, "bytes_acked").unwrap()
    };
    let rtt = 10 * MS + 1 * MS;
    let a = acked_at(&mut sim, 2 * S + rtt);
    let b = acked_at(&mut sim, 4 * S - 1);
    let goodput = (b - a) * 8.0 / ((2 * S - rtt - 1) as f64 / 1e9);
    assert!(rel(goodput, new_payload) < 0.02, "goodput {goodput} vs {new_payload}");
    sim.run();
    let r = sim.results();
    let c = &r["control"];
    assert_eq!(c.strs("handle"), ["R/edge", "bulk"]);
    assert_eq!(c.strs("knob"), ["rate_bps", "ctr_bps"]);
    assert_eq!(c.strs("agent"), ["test", "test"]);
    assert_eq!(c.u64s("time_ns"), [2 * S, 2 * S]);
    assert_eq!(f64s(c, "old_value"), [300e6, 280e6]);
}

use alphaqos_sim::SimTime;

/// The fifth document's first set-up: one WRED queue on a 10 Mbps link,
/// TCP traffic offered at 120% of it (six application-limited transfers at
/// 2 Mbps), 20 ms one way.
fn bouras(agent: bool, seed: u64) -> Cfg {
    let wred = json!({"strict_priority": {"buffer_pkts": 1000, "classes": [{"name": "rel", "buffer_percent": 100.0, "priority": 0,
        "drop_profile": {"cisco_wred": {"per_color": {"green": {"min_th": 30.0, "max_th": 200.0, "max_p": 0.1}}}}}]}});
    let mut cfg = path(10 * MBPS, 20 * MS, wred, 20 * S).seed(seed);
    for i in 0..6 {
        cfg = cfg.workload(json!({"name": format!("w{i}"), "start_ns": i * 100 * MS, "app_rate_bps": 2 * MBPS, "write_bytes": 1448,
            "tcp": {"mss_bytes": 1448}, "transfer": {"src": "H1", "dst": "H2", "size_bytes": 100_000_000u64}}));
    }
    if agent {
        let traffic: Vec<String> = (0..6).map(|i| format!("w{i}")).collect();
        control(&mut cfg, json!([{"wred_rtt_tuning": {"class": "R->H2/rel", "traffic": traffic, "mtu_bytes": 1500}}]));
    }
    cfg
}

#[test]
fn wred_rtt_tuning_sets_equation_2_and_holds_the_queue_near_equation_3() {
    let r = bouras(true, 1).run();
    let c = &r.table("control");
    let (knob, new) = (c.strs("knob"), f64s(c, "new_value"));
    assert_eq!(knob[0], "max_p");
    assert_eq!(new[0], 0.2);
    // Every max_th is followed or preceded by min_th = 0.15 max_th, each 50 ms.
    let maxes: Vec<f64> = knob.iter().zip(&new).filter(|(k, _)| *k == "max_th").map(|(_, v)| *v).collect();
    let mins: Vec<f64> = knob.iter().zip(&new).filter(|(k, _)| *k == "min_th").map(|(_, v)| *v).collect();
    assert!(maxes.len() > 300, "{} changes in 20 s", maxes.len());
    for (mx, mn) in maxes.iter().zip(&mins) {
        assert_eq!(*mn, 0.15 * mx);
    }
    // Equation 2 with the run's RTT: 10 Mbps x ~45 ms / 12000 bit ~ 37 packets.
    let mean_max = maxes.iter().sum::<f64>() / maxes.len() as f64;
    assert!((30.0..80.0).contains(&mean_max), "mean max_th {mean_max}");
    // Equation 3: the mean queue against r RTT / (MTU 8), measured after 2 s.
    let t = r.series("queue", "R->H2/rel", "time_ns");
    let len = r.series("queue", "R->H2/rel", "len_pkts");
    let after: Vec<f64> = t.iter().zip(&len).filter(|(t, _)| **t > 2 * S).map(|(_, l)| *l as f64).collect();
    let mean_q = after.iter().sum::<f64>() / after.len() as f64;
    let ratio = mean_q / mean_max;
    // Where Reno and RED put the queue. Equation 2 makes max_th the path's
    // window in packets (r RTT / MTU), so each of the N = 6 flows holds
    // W = max_th / N; a sender that halves its window at a loss runs at
    // the drop rate p = 3 / (2 W^2) (Mathis, Semke, Mahdavi, Ott, "The
    // macroscopic behavior of the TCP congestion avoidance algorithm",
    // 1997; growth of one segment per RTT, as byte counting gives with
    // delayed ACKs). RED spreads drops uniformly over 1..1/p_b packets
    // (Floyd & Jacobson 1993), so p = 2 p_b / (1 + p_b), and the average
    // sits where p_b = max_p (avg - min_th) / (max_th - min_th): with
    // min_th = 0.15 max_th and max_p = 0.2, avg / max_th = 0.15 + 0.85
    // p_b / 0.2. Here (W ~ 8.4) that is 0.195, just under the document's
    // band 0.2-0.25, which is this equilibrium for 5.7 to 8 packets per
    // flow (its HTTP and background mix, not this set-up's six flows).
    let n = 6.0;
    let p_reno = 1.5 * (n / mean_max).powi(2);
    let predicted = 0.15 + 0.85 * (p_reno / (2.0 - p_reno)) / 0.2;
    let (drops, enq) = (r.queue("R->H2/rel", "drop_pkts") as f64, r.queue("R->H2/rel", "enq_pkts") as f64);
    let p = drops / (drops + enq);
    eprintln!("wred_rtt_tuning: mean max_th {mean_max:.1} packets, mean queue {mean_q:.1} packets, ratio {ratio:.3} (Reno and RED: {predicted:.3}; equation 3: 0.2-0.25), drop rate {p:.4} (Reno: {p_reno:.4})");
    // The senders reduce as Reno does: measured 0.0202 against 0.0211
    // (seeds 1-5: 0.95-1.02 of it). Before the SACK fix of issue 21 a loss
    // halved the outstanding bytes, SACKed data above the holes included,
    // and the drop rate was 1.44-1.51 times Reno's (0.0297 at seed 1).
    assert!(rel(p, p_reno) < 0.15, "drop rate {p} against Reno's {p_reno}");
    // ... and the queue sits where RED's curve puts that drop rate: 0.199
    // (seeds 1-5: 0.199-0.215; 0.222-0.229 before the fix).
    assert!((ratio - predicted).abs() <= 0.025, "mean queue / (r RTT / (MTU 8)) = {ratio}, Reno and RED give {predicted}");
    assert!((0.2 - predicted).abs() < 0.01, "the set-up is one where equation 3's band applies (prediction {predicted})");
}

/// The same set-up with a per-colour WRED (green 60, yellow 40, red 20
/// packets at max_th; max_p 0.1, 0.2, 0.5) and the agent, `max_p` given
/// to it or not; 3 s.
fn bouras_per_colour(max_p: Option<f64>) -> Cfg {
    let mut cfg = bouras(true, 1);
    cfg.v["duration_ns"] = json!(3 * S);
    cfg.v["links"][2]["queue_ab"]["strict_priority"]["classes"][0]["drop_profile"] = json!({"cisco_wred": {"per_color": {
        "green": {"min_th": 9.0, "max_th": 60.0, "max_p": 0.1},
        "yellow": {"min_th": 6.0, "max_th": 40.0, "max_p": 0.2},
        "red": {"min_th": 3.0, "max_th": 20.0, "max_p": 0.5}}}});
    if let Some(p) = max_p {
        cfg.v["control"][0]["wred_rtt_tuning"]["max_p"] = json!(p);
    }
    cfg
}

#[test]
fn wred_rtt_tuning_tunes_every_colour_in_proportion_and_logs_each_curve() {
    let colours = [("green", 60.0, 0.1), ("yellow", 40.0, 0.2), ("red", 20.0, 0.5)];
    for max_p in [None, Some(0.3)] {
        let mut sim = bouras_per_colour(max_p).build().unwrap();
        sim.run();
        let r = Res(sim.results());
        let c = r.table("control");
        let (knob, old, new) = (c.strs("knob"), f64s(c, "old_value"), f64s(c, "new_value"));
        // max_p: given, on every curve; not given, the first curve takes the document's 0.2.
        let first: Vec<(&str, f64, f64)> = knob.iter().zip(&old).zip(&new).take_while(|((k, _), _)| k.starts_with("max_p")).map(|((k, o), n)| (k.as_str(), *o, *n)).collect();
        match max_p {
            None => assert_eq!(first, [("max_p.green", 0.1, 0.2)]),
            Some(p) => assert_eq!(first, [("max_p.green", 0.1, p), ("max_p.yellow", 0.2, p), ("max_p.red", 0.5, p)]),
        }
        for (colour, _, own_p) in colours {
            let want = max_p.unwrap_or(if colour == "green" { 0.2 } else { own_p });
            assert_eq!(sim.get_by_name("R->H2/rel", &format!("max_p.{colour}")).unwrap(), want, "{colour}");
        }
        // Each colour's max_th is green's times its configured ratio to green,
        // its min_th 0.15 of it; each change logs that curve's old value.
        let series = |k: &str| -> Vec<(f64, f64)> { knob.iter().zip(old.iter().zip(&new)).filter(|(x, _)| *x == k).map(|(_, (o, n))| (*o, *n)).collect() };
        let green = series("max_th.green");
        assert!(green.len() > 40, "{} changes in 3 s", green.len());
        for (colour, max_th, _) in colours {
            let (maxes, mins) = (series(&format!("max_th.{colour}")), series(&format!("min_th.{colour}")));
            assert_eq!(maxes.len(), green.len(), "{colour}: changed at every wake");
            assert_eq!(maxes[0].0, max_th, "{colour}: the first change logs the configured max_th");
            for (i, ((_, m), (_, mn))) in maxes.iter().zip(&mins).enumerate() {
                assert_eq!(*m, green[i].1 * (max_th / 60.0), "{colour}, wake {i}");
                assert_eq!(*mn, 0.15 * m, "{colour}, wake {i}");
                if i > 0 {
                    assert_eq!(maxes[i].0, maxes[i - 1].1, "{colour}: old value is the last new one");
                }
            }
            assert_eq!(sim.get_by_name("R->H2/rel", &format!("max_th.{colour}")).unwrap(), maxes.last().unwrap().1);
        }
        assert!(!knob.iter().any(|k| k == "max_th" || k == "min_th"), "per-colour knobs only");
    }
}

#[test]
fn stepping_in_chunks_changes_nothing() {
    let cfg = bouras(true, 3);
    let whole = {
        let mut s = cfg.build().unwrap();
        s.run();
        s.results()
    };
    for chunk in [7 * MS, 50 * MS, 333 * MS] {
        let mut s = cfg.build().unwrap();
        let mut t = 0;
        while t < 20 * S {
            t = (t + chunk).min(20 * S);
            s.advance_before(SimTime(t));
        }
        s.run();
        assert_eq!(s.results(), whole, "chunks of {chunk} ns");
    }
}

#[test]
fn deadline_reservation_meets_a_feasible_deadline_with_little_to_spare() {
    // 100 MB in 20 s on a 1 Gbps path with 500 Mbps of CBR background:
    // 40 Mbps needed, 500 available.
    let (size, deadline) = (100_000_000u64, 20 * S);
    let mut cfg = path(GBPS, 10 * MS, fifo(Some(5000), None), 30 * S);
    set_filter(&mut cfg, "R", json!([{"name": "edge", "src": "10.0.0.2/32",
        "policer": {"rate_bps": 1_000_000_000u64, "burst_bytes": 100_000, "out_of_profile": "discard"}}]));
    cfg = cfg.flow(udp("cbr", "C1", "H2", 0, None, 1500, 500 * MBPS));
    cfg = cfg.workload(json!({"name": "dt", "start_ns": 1 * S, "tcp": {"cc": "base_flow", "cc_params": {"ctr_bps": 1_000_000u64}, "mss_bytes": 1448},
        "transfer": {"src": "H1", "dst": "H2", "size_bytes": size}}));
    control(&mut cfg, json!([{"deadline_reservation": {"transfer": "dt", "deadline_ns": deadline, "policer": "R/edge"}}]));
    let r = cfg.run();
    let s = r.table("reservation_summary");
    assert_eq!(s.u64s("met"), [1], "deadline missed: {s:?}");
    let mean = opt_u64s(s, "mean_reservation_bps")[0].unwrap() as f64;
    let need = size as f64 * 8.0 / (deadline as f64 / 1e9);
    eprintln!("deadline_reservation: mean reservation {:.2} Mbps, size/deadline {:.2} Mbps", mean / 1e6, need / 1e6);
    assert!(mean <= 1.1 * need && mean >= need * 0.9, "mean reservation {mean} vs {need}");
    let series = r.table("reservation");
    assert!(series.rows() > 100);
    let fct = r.col_opt("transfers", "fct_ns")[0].unwrap();
    assert!(fct <= deadline && fct > deadline / 2, "completed in {fct} ns: just in time, not early");
}

#[test]
fn call_admission_refuses_what_does_not_fit() {
    // Transfers of 10 MB asking 400 Mbps each on a 1 Gbps path: at most two at once.
    let mut cfg = path(GBPS, 1 * MS, fifo(Some(5000), None), 3 * S);
    cfg = cfg.workload(json!({"name": "calls", "tcp": {"mss_bytes": 1448}, "poisson": {"rate_per_s": 40.0,
        "pairs": {"list": [["H1", "H2"]]}, "size": {"fixed": {"bytes": 10_000_000u64}}}}));
    control(&mut cfg, json!([{"call_admission": {"workload": "calls", "rate_bps": 400_000_000u64, "edge": "R"}}]));
    let r = cfg.run();
    let a = r.table("admission");
    let (t, end, ok) = (a.u64s("time_ns"), a.u64s("end_ns"), a.u64s("admitted"));
    assert!(ok.iter().any(|&x| x == 0) && ok.iter().any(|&x| x == 1), "{ok:?}");
    // Transfer k is the k-th admitted request; unfinished ones hold to the end.
    let done: Vec<u64> = r.col_opt("transfers", "end_ns").into_iter().map(|e| e.unwrap_or(u64::MAX / 2)).collect();
    let done_rank = |j: usize| ok[..j].iter().filter(|&&x| x == 1).count();
    // Brute force: a request is admitted iff fewer than two admitted ones overlap it.
    for i in 0..t.len() {
        let overlapping = (0..i).filter(|&j| ok[j] == 1 && t[j] < end[i] && t[i] < end[j]).count();
        let _ = overlapping;
        // A booking holds until its end or its release after the transfer completed.
        let until = |j: usize| end[j].min(released(done[done_rank(j)]));
        let busy_at = |x: u64| (0..i).filter(|&j| ok[j] == 1 && t[j] <= x && x < until(j)).count();
        let mut points: Vec<u64> = vec![t[i]];
        points.extend((0..i).filter(|&j| ok[j] == 1 && t[j] > t[i] && t[j] < end[i]).map(|j| t[j]));
        let fits = points.iter().all(|&x| busy_at(x) < 2);
        assert_eq!(ok[i] == 1, fits, "request {i}");
    }
    // Only admitted transfers opened connections, each policed at R.
    assert_eq!(r.col("transfers", "size_bytes").len() as u64, ok.iter().sum::<u64>());
}

/// When the admission agent (timer every 50 ms from 0) releases the
/// booking of a transfer that ended at `end`.
fn released(end: u64) -> u64 {
    (end / (50 * MS) + 1) * 50 * MS
}

/// A two-connection transfer (base + additional) admitted on an idle path.
fn two_connection_calls(cfg: Cfg, rate_per_s: f64, size: u64) -> Cfg {
    cfg.workload(json!({"name": "calls", "tcp": {"mss_bytes": 1448}, "streams": 2, "striping": "dynamic", "block_bytes": 1_000_000u64,
        "stream_options": [{"dscp": 10}, {"dscp": 14}],
        "poisson": {"rate_per_s": rate_per_s, "pairs": {"list": [["H1", "H2"]]}, "size": {"fixed": {"bytes": size}}}}))
}

#[test]
fn call_admission_polices_only_the_base_connection_and_marks_the_excess_red() {
    // One 20 MB transfer over a base and an additional connection, granted
    // 100 Mbps, alone on a 1 Gbps path: the base connection's excess is
    // marked red (forwarded: nothing is congested) and the additional one
    // is not policed, so the file moves far faster than its reservation.
    let mut cfg = two_connection_calls(path(GBPS, 1 * MS, fifo(Some(5000), None), 2 * S), 0.6, 20_000_000);
    control(&mut cfg, json!([{"call_admission": {"workload": "calls", "rate_bps": 100_000_000u64, "edge": "R"}}]));
    let r = cfg.run();
    assert_eq!(r.col("admission", "admitted")[0], 1);
    let fct = r.col_opt("transfers", "fct_ns")[0].expect("completed") as f64 / 1e9;
    let rate = 20e6 * 8.0 / fct;
    assert!(rate > 3.0 * 100e6, "{:.0} Mbps: policed down to the reservation", rate / 1e6);
    let sizes = r.col("transfer_streams", "size_bytes");
    assert!(sizes[0] as f64 * 8.0 / fct > 1.5 * 100e6, "the base connection's excess (red) went through: {sizes:?}");
    assert!(sizes[1] > 0, "the additional connection carried blocks");
    // No packet of the transfer was dropped by a policer.
    assert_eq!(r.queue("R->H2", "drop_policer_pkts"), 0);
}

#[test]
fn call_admission_releases_a_booking_when_its_transfer_completes() {
    // 600 Mbps for 2 s each on a 1 Gbps path: one booking at a time. The
    // 10 MB transfers finish in a fraction of a second; their bookings go
    // then, so a request arriving within 2 s of an admitted one is admitted
    // once that one has completed (and refused while it runs).
    let mut cfg = two_connection_calls(path(GBPS, 1 * MS, fifo(Some(5000), None), 8 * S), 2.0, 10_000_000);
    control(&mut cfg, json!([{"call_admission": {"workload": "calls", "rate_bps": 600_000_000u64, "duration_ns": 2 * S, "edge": "R"}}]));
    let r = cfg.run();
    let a = r.table("admission");
    let (t, ok) = (a.u64s("time_ns"), a.u64s("admitted"));
    let ends: Vec<u64> = r.col_opt("transfers", "end_ns").into_iter().map(|e| e.expect("completed")).collect();
    let mut admitted_ends: Vec<(u64, u64)> = Vec::new();
    let mut within = 0;
    for i in 0..t.len() {
        // The last admitted transfer before this request, and when it ended.
        // Released at the agent's first timer (every 50 ms) after the end.
        if let Some(&(start, end)) = admitted_ends.last() {
            let free = (start + 2 * S).min(released(end));
            if t[i] < end.min(free) {
                assert_eq!(ok[i], 0, "request {i} admitted while another booking ran");
            } else if t[i] >= free {
                assert_eq!(ok[i], 1, "request {i} refused after the booking was released");
            }
        }
        if ok[i] == 1 {
            if admitted_ends.last().is_some_and(|&(start, _)| t[i] < start + 2 * S) {
                within += 1;
            }
            admitted_ends.push((t[i], ends[admitted_ends.len()]));
        }
    }
    assert!(within >= 2, "{within} requests admitted within 2 s of an earlier one: bookings not released ({ok:?})");
}

#[test]
fn bad_handles_knobs_and_values_are_refused_with_their_path() {
    let wred = |min: f64, max: f64| json!({"strict_priority": {"buffer_pkts": 1000, "classes": [{"name": "rel", "buffer_percent": 100.0, "priority": 0,
        "drop_profile": {"cisco_wred": {"per_color": {"green": {"min_th": min, "max_th": max, "max_p": 0.1}}}}}]}});
    let base = || path(10 * MBPS, 20 * MS, wred(30.0, 200.0), S).flow(tcp("f", "H1", "H2", 0, None, json!({})));
    let err = |agents: Value| {
        let mut c = base();
        control(&mut c, agents);
        c.build().err().expect("refused")
    };
    let e = err(json!([{"wred_rtt_tuning": {"class": "R->H2/rell", "traffic": ["f"]}}]));
    assert!(e.starts_with("control[0].wred_rtt_tuning.class: unknown handle 'R->H2/rell'") && e.contains("nearest: R->H2/rel"), "{e}");
    let e = err(json!([{"wred_rtt_tuning": {"class": "R->H2", "traffic": ["f"]}}]));
    assert!(e.starts_with("control[0].wred_rtt_tuning.class: R->H2 has no knob or measurement 'min_th'"), "{e}");
    let e = err(json!([{"wred_rtt_tuning": {"class": "R->H2/rel", "traffic": ["nope"]}}]));
    assert!(e.starts_with("control[0].wred_rtt_tuning.traffic[0]: unknown handle 'nope'"), "{e}");
    let e = err(json!([{"deadline_reservation": {"transfer": "f", "deadline_ns": 1}}]));
    assert!(e.starts_with("control[0].deadline_reservation.transfer: unknown handle 'f#0'") || e.contains("not a workload"), "{e}");
    // Knob values out of range, through the API: one line naming the knob.
    let mut sim = base().build().unwrap();
    let h = sim.handles().resolve("R->H2/rel").unwrap();
    // The errors are typed; their text is what Python's ValueError says.
    let e = sim.set_as("t", h, "min_th", 500.0).unwrap_err();
    assert_eq!(e.to_string(), "R->H2/rel: min_th = 500: max_th: must be greater than min_th (500), got 200");
    assert!(matches!(&e, ControlError::Refused { handle, .. } if handle == "R->H2/rel"), "{e:?}");
    let e = sim.set_as("t", h, "max_thh", 5.0).unwrap_err();
    let ControlError::UnknownKnob { has, .. } = &e else { panic!("{e:?}") };
    assert!(has.iter().any(|k| k == "max_th") && e.to_string().starts_with("R->H2/rel has no knob or measurement 'max_thh' (it has: "), "{e}");
    let e = sim.set_as("t", h, "len_pkts", 5.0).unwrap_err();
    assert_eq!(e.to_string(), "R->H2/rel: len_pkts is a measurement, not a knob");
    assert_eq!(sim.get(h, "max_th").unwrap(), 200.0, "nothing changed");
    let f = sim.handles().resolve("f").unwrap();
    let e = sim.set_as("t", f, "pacing_rate_bps", -5.0).unwrap_err();
    assert_eq!(e.to_string(), "f: pacing_rate_bps = -5: must be a whole, non-negative number");
    let e = sim.handles().resolve("R->H2/rell").unwrap_err();
    assert!(matches!(&e, ControlError::UnknownHandle { nearest, .. } if nearest[0] == "R->H2/rel"), "{e:?}");
    assert!(sim.results()["control"].rows() == 0);
}
