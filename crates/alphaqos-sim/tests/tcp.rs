//! TCP NewReno through a dumbbell: full utilization with a buffer of one
//! bandwidth-delay product, the window law when the window is below the
//! pipe, a single loss repaired by fast retransmit, and finite transfers
//! that complete with every byte acknowledged.

mod common;
use common::*;
use serde_json::json;

const MSS: u64 = 1448;
/// A data segment: MSS + IP/TCP/timestamps (52 B); on an Ethernet link + 38 B.
const SEG: u64 = MSS + 52;
const SEG_WIRE: u64 = SEG + ETH;
const ACK_WIRE: u64 = 52 + ETH;
const ACCESS_DELAY: u64 = 10 * US;

/// S - R1 - R2 - D; the bottleneck is R1 -> R2 with a FIFO of `buffer_pkts`.
fn dumbbell(duration: u64, interval: u64, access_bps: u64, bottleneck_bps: u64, one_way_ns: u64, buffer_pkts: u64) -> Cfg {
    Cfg::new(duration, interval)
        .host("S")
        .router("R1")
        .router("R2")
        .host("D")
        .link("S", "R1", access_bps, ACCESS_DELAY, ETH)
        .link_q("R1", "R2", bottleneck_bps, one_way_ns - 2 * ACCESS_DELAY, ETH, fifo(Some(buffer_pkts), None), unlimited())
        .link("R2", "D", access_bps, ACCESS_DELAY, ETH)
}

/// Round-trip time of the empty dumbbell: propagation plus the serialization
/// of one data segment forward and one ACK back on every hop.
fn base_rtt(access_bps: u64, bottleneck_bps: u64, one_way_ns: u64) -> u64 {
    2 * one_way_ns
        + 2 * tx_ns(SEG_WIRE, access_bps)
        + tx_ns(SEG_WIRE, bottleneck_bps)
        + 2 * tx_ns(ACK_WIRE, access_bps)
        + tx_ns(ACK_WIRE, bottleneck_bps)
}

/// Bandwidth-delay product of the bottleneck in data frames, rounded up.
fn bdp_pkts(rate: u64, rtt: u64) -> u64 {
    (rate as u128 * rtt as u128).div_ceil(SEG_WIRE as u128 * 8 * 1_000_000_000) as u64
}

const RATE: u64 = 10 * GBPS;
const ACCESS: u64 = 40 * GBPS;
const ONE_WAY: u64 = 10 * MS;

#[test]
fn newreno_fills_a_10g_bottleneck_with_a_bdp_buffer() {
    // Pipe + buffer hold 2 BDP. rwnd caps the flight just above that, so
    // slow start ends with a handful of losses instead of overshooting by
    // megabytes (NewReno without SACK repairs one hole per RTT). After the
    // loss the window halves to ~1 BDP: with a BDP of buffer the link stays busy.
    let rtt = 2 * ONE_WAY;
    let bdp = bdp_pkts(RATE, rtt);
    let rwnd = (2 * bdp + 8) * MSS;
    let res = dumbbell(10 * S, 100 * MS, ACCESS, RATE, ONE_WAY, bdp)
        .flow(tcp("tcp", "S", "D", 0, None, json!({"cc": "newreno", "rwnd_bytes": rwnd})))
        .run();
    let t = res.series("tcp", "tcp", "time_ns");
    let acked = res.series("tcp", "tcp", "bytes_acked");
    let g = res.series("tcp", "tcp", "goodput_bps");
    let cwnd = res.series("tcp", "tcp", "cwnd_bytes");
    let capacity = RATE as f64 * MSS as f64 / SEG_WIRE as f64;
    let (i3, i10) = (t.iter().position(|&x| x == 3 * S).unwrap(), t.len() - 1);
    assert_eq!(t[i10], 10 * S);
    let steady: Vec<f64> = g[i3 + 1..=i10].iter().map(|&x| x as f64).collect();
    let mean = steady.iter().sum::<f64>() / steady.len() as f64;
    let min = steady.iter().cloned().fold(f64::MAX, f64::min);
    let by_acks = (acked[i10] - acked[i3]) as f64 * 8.0 / 7.0;
    let fr = *res.series("tcp", "tcp", "fast_retransmits").last().unwrap();
    let to = *res.series("tcp", "tcp", "timeouts").last().unwrap();
    println!(
        "NewReno 10G/20ms, buffer {bdp} pkts, rwnd {rwnd} B: goodput 3-10 s {:.4} Gbps = {:.2}% of {:.4} (min interval {:.2}%, by bytes_acked {:.2}%); cwnd {} -> {} pkts; drops {}, fast rtx {fr}, timeouts {to}",
        mean / 1e9, 100.0 * mean / capacity, capacity / 1e9, 100.0 * min / capacity, 100.0 * by_acks / capacity,
        cwnd[i3] / MSS, cwnd[i10] / MSS, res.queue("R1->R2", "drop_pkts")
    );
    assert!(res.queue("R1->R2", "drop_tail_pkts") > 0, "the window grew until the buffer overflowed");
    assert!(fr + to >= 1, "the loss was detected");
    assert!(mean >= 0.95 * capacity, "utilization {:.4}", mean / capacity);
    assert!(by_acks >= 0.95 * capacity, "utilization by bytes_acked {:.4}", by_acks / capacity);
    assert!(min >= 0.90 * capacity, "an interval at {:.3} of capacity", min / capacity);
    assert!(mean <= 1.002 * capacity, "goodput {mean} above the bottleneck's {capacity}");
    // Congestion avoidance: one MSS per RTT, 7 s / 20 ms = 350 MSS.
    let growth = (cwnd[i10] - cwnd[i3]) as f64 / MSS as f64;
    let expected = 7.0 * S as f64 / base_rtt(ACCESS, RATE, ONE_WAY) as f64;
    assert!((growth - expected).abs() <= 0.1 * expected, "cwnd grew {growth} MSS in 7 s, expected ~{expected}");
}

#[test]
fn newreno_below_the_bdp_sends_one_window_per_rtt() {
    // Default rwnd (64 MiB = 2.8 BDP): slow start overshoots the 2-BDP pipe
    // by thousands of packets; NewReno repairs one hole per RTT and falls
    // back on timeouts, and congestion avoidance resumes below the BDP.
    // There the queue is empty and the rate is exactly cwnd / RTT.
    let rtt0 = base_rtt(ACCESS, RATE, ONE_WAY);
    let bdp = bdp_pkts(RATE, 2 * ONE_WAY);
    let res = dumbbell(5 * S, 100 * MS, ACCESS, RATE, ONE_WAY, bdp)
        .flow(tcp("tcp", "S", "D", 0, None, json!({})))
        .run();
    let t = res.series("tcp", "tcp", "time_ns");
    let g = res.series("tcp", "tcp", "goodput_bps");
    let cwnd = res.series("tcp", "tcp", "cwnd_bytes");
    let ssthresh = res.series("tcp", "tcp", "ssthresh_bytes");
    let srtt = res.series("tcp", "tcp", "srtt_ns");
    let capacity = RATE as f64 * MSS as f64 / SEG_WIRE as f64;
    assert!(res.queue("R1->R2", "drop_pkts") > 0, "slow start ended in losses");
    let mut checked = 0;
    for i in 1..t.len() {
        if t[i] <= 2 * S {
            continue;
        }
        assert!(cwnd[i] >= ssthresh[i], "congestion avoidance");
        // The window over the interval: cwnd grows ~5 MSS per 100 ms; use the mean.
        let w = (cwnd[i] + cwnd[i - 1]) as f64 / 2.0;
        let law = (w * 8.0 * 1e9 / rtt0 as f64).min(capacity);
        assert!(rel(g[i] as f64, law) < 0.01, "t {}: goodput {} vs window law {law} (cwnd {})", t[i], g[i], cwnd[i]);
        if w < bdp as f64 * MSS as f64 {
            // Nothing queues: the measured RTT is the base RTT.
            assert!(rel(srtt[i] as f64, rtt0 as f64) < 0.001, "srtt {} vs {rtt0}", srtt[i]);
        }
        checked += 1;
    }
    assert_eq!(checked, 30);
    println!(
        "NewReno default rwnd: drops {}, cwnd at 5 s {} pkts (BDP {bdp}), goodput {:.3} Gbps = {:.1}% of capacity",
        res.queue("R1->R2", "drop_pkts"),
        cwnd.last().unwrap() / MSS,
        *g.last().unwrap() as f64 / 1e9,
        100.0 * *g.last().unwrap() as f64 / capacity
    );
}

/// Backlog the bottleneck R -> D finds at the arrival of segment k of a
/// back-to-back burst: segments arrive every `ta`, the bottleneck starts one
/// every `tb` from the first arrival; k - (number started by then).
fn burst_backlog(k: u64, ta: u64, tb: u64) -> u64 {
    k - (k * ta / tb + 1)
}

#[test]
fn a_single_loss_is_repaired_by_fast_retransmit() {
    // The initial window of W segments leaves S at 1 Gbps into a 150 Mbps
    // bottleneck whose FIFO is one packet too small for the burst: exactly
    // the last segment of the burst is dropped. RTT 5 ms > W segments at
    // 150 Mbps, so the window-limited flow never queues again.
    let (access, bottleneck) = (GBPS, 150 * MBPS);
    let w = 40u64;
    let (ta, tb) = (tx_ns(SEG_WIRE, access), tx_ns(SEG_WIRE, bottleneck));
    let peak = burst_backlog(w - 1, ta, tb);
    assert!(burst_backlog(w - 2, ta, tb) < peak, "only the last arrival finds the peak");
    let size = 3_000_000u64; // 2071.8 segments: the last one is short
    let res = Cfg::new(2 * S, 10 * MS)
        .host("S")
        .router("R")
        .host("D")
        .link("S", "R", access, 100 * US, ETH)
        .link_q("R", "D", bottleneck, 2400 * US, ETH, fifo(Some(peak), None), unlimited())
        .flow(tcp("tcp", "S", "D", 0, None, json!({"init_cwnd_pkts": w, "rwnd_bytes": w * MSS, "size_bytes": size})))
        .run();
    let last = |c: &str| *res.series("tcp", "tcp", c).last().unwrap();
    println!(
        "single loss: burst peak backlog {peak}, drops {}, fast rtx {}, retransmits {}, timeouts {}, ooo arrivals {}, bytes acked {}",
        res.queue("R->D", "drop_pkts"),
        last("fast_retransmits"),
        last("retransmits"),
        last("timeouts"),
        last("ooo_arrivals"),
        last("bytes_acked")
    );
    assert_eq!(res.queue("R->D", "drop_pkts"), 1, "exactly one segment lost");
    assert_eq!(last("fast_retransmits"), 1);
    assert_eq!(last("retransmits"), 1, "only the lost segment was sent twice");
    assert_eq!(last("timeouts"), 0);
    assert!(last("dup_acks_sent") >= 3, "the segments after the hole produced the duplicate ACKs");
    // As tcptrace counts at the receiver: the repair arrives below the highest byte seen.
    assert_eq!(last("ooo_arrivals"), 1);
    assert_eq!(last("bytes_acked"), size, "the transfer completed");
    let segments = size.div_ceil(MSS);
    assert_eq!(res.flow("tcp", "tx_pkts"), segments + 1);
    assert_eq!(res.flow("tcp", "rx_pkts"), segments);
    assert_eq!(res.flow("tcp", "tx_bytes"), size + 52 * (segments + 1) + MSS, "the lost segment was a full one");
    // After the repair ssthresh is half the flight at the loss (W/2 segments).
    let ssthresh = last("ssthresh_bytes");
    assert!(ssthresh.abs_diff(w / 2 * MSS) <= MSS, "ssthresh {ssthresh}");
}

#[test]
fn finite_transfers_complete_in_the_time_slow_start_allows() {
    // 1 Gbps, 2 ms RTT, a BDP of buffer, rwnd 1.5 BDP: the window never
    // overflows the buffer, so the transfer is loss-free and its completion
    // time is bounded by physics (one RTT plus the serialization of every
    // segment) and by slow start (the window doubles each RTT from 10 segments).
    let (access, rate, one_way) = (10 * GBPS, GBPS, MS);
    let rtt0 = base_rtt(access, rate, one_way);
    let bdp = bdp_pkts(rate, 2 * one_way);
    let rwnd = (bdp + bdp / 2) * MSS;
    let duration = S;
    for size in [1_448u64, 1_000_001, 20_000_000] {
        let res = dumbbell(duration, MS, access, rate, one_way, bdp)
            .flow(tcp("tcp", "S", "D", 0, None, json!({"size_bytes": size, "rwnd_bytes": rwnd})))
            .run();
        let t = res.series("tcp", "tcp", "time_ns");
        let acked = res.series("tcp", "tcp", "bytes_acked");
        assert_eq!(*acked.last().unwrap(), size, "size {size}: all bytes acknowledged");
        assert!(acked.iter().all(|&a| a <= size));
        let done = t[acked.iter().position(|&a| a == size).unwrap()];
        // In-order bytes at the receiver: the flow-level goodput is exactly
        // size * 8 over the flow's window (the run's duration).
        let goodput = res.flow_opt("tcp", "goodput_bps").unwrap();
        assert_eq!(goodput as u128, size as u128 * 8 * 1_000_000_000 / duration as u128);
        let segments = size.div_ceil(MSS);
        assert_eq!(res.queue("R1->R2", "drop_pkts"), 0);
        assert_eq!(*res.series("tcp", "tcp", "retransmits").last().unwrap(), 0);
        assert_eq!(res.flow("tcp", "tx_pkts"), segments, "every segment sent exactly once");
        assert_eq!(res.flow("tcp", "rx_pkts"), segments);
        assert_eq!(res.flow("tcp", "tx_bytes"), size + 52 * segments);
        let lower = rtt0 + tx_ns(segments * SEG_WIRE, rate);
        // Slow start: after k rounds 10 (2^k - 1) segments are out; then the
        // rest at the bottleneck rate; one delayed-ACK timeout for an odd tail.
        let rounds = (1..).find(|&k| 10 * ((1u64 << k) - 1) >= segments.min(bdp)).unwrap();
        let upper = lower + (rounds + 2) * rtt0 + 40 * MS;
        let mean_goodput = size as f64 * 8e9 / done as f64;
        println!(
            "transfer {size} B: done by {:.1} ms (bounds {:.1}..{:.1} ms), {:.0} Mbps",
            done as f64 / 1e6, lower as f64 / 1e6, upper as f64 / 1e6, mean_goodput / 1e6
        );
        assert!(done >= lower, "size {size}: done at {done} before the physical minimum {lower}");
        // Samples every ms: the completion is seen up to 1 ms late.
        assert!(done <= upper + MS, "size {size}: done at {done}, expected by {upper}");
    }
}

#[test]
fn a_finite_transfer_completes_through_slow_start_losses() {
    // The default 64 MiB rwnd: slow start at 10 Gbps into 1 Gbps overflows
    // the BDP buffer and NewReno needs fast recovery and timeouts; the
    // transfer still completes, every byte acknowledged once.
    let (access, rate, one_way) = (10 * GBPS, GBPS, MS);
    let bdp = bdp_pkts(rate, 2 * one_way);
    let size = 20_000_000u64;
    let res = dumbbell(2 * S, MS, access, rate, one_way, bdp)
        .flow(tcp("tcp", "S", "D", 0, None, json!({"size_bytes": size})))
        .run();
    let t = res.series("tcp", "tcp", "time_ns");
    let acked = res.series("tcp", "tcp", "bytes_acked");
    let last = |c: &str| *res.series("tcp", "tcp", c).last().unwrap();
    assert_eq!(last("bytes_acked"), size);
    let done = t[acked.iter().position(|&a| a == size).unwrap()];
    let segments = size.div_ceil(MSS);
    let rtx = last("retransmits");
    assert!(res.queue("R1->R2", "drop_pkts") > 0 && rtx > 0, "slow start lost packets");
    assert_eq!(res.flow("tcp", "tx_pkts"), segments + rtx);
    assert_eq!(res.flow("tcp", "tx_pkts"), res.flow("tcp", "rx_pkts") + res.queue("R1->R2", "drop_pkts"));
    let capacity = rate as f64 * MSS as f64 / SEG_WIRE as f64;
    let mean = size as f64 * 8e9 / done as f64;
    println!(
        "lossy transfer: done by {:.1} ms, {:.0} Mbps ({:.0}% of capacity), drops {}, retransmits {rtx}, fast rtx {}, timeouts {}",
        done as f64 / 1e6, mean / 1e6, 100.0 * mean / capacity, res.queue("R1->R2", "drop_pkts"), last("fast_retransmits"), last("timeouts")
    );
    assert!(mean <= capacity && mean >= 0.2 * capacity, "goodput {mean}");
}

#[test]
fn tcp_sharing_its_host_queue_with_a_udp_flood_still_sends() {
    // TCP Small Queues limits the bytes *one connection* has queued below it
    // (Linux: sk_wmem_alloc against tcp_limit_output_bytes). A connection with
    // nothing queued is never held back: here a UDP flood keeps the host's
    // FIFO full (1000 x 1500 B > 256 KiB), and the TCP flow must still put
    // its initial window into that queue (and suffer its tail drops).
    let res = Cfg::new(2 * S, 100 * MS)
        .host("H")
        .router("R")
        .host("D")
        .link("H", "R", GBPS, 100 * US, ETH)
        .link("R", "D", 10 * GBPS, 100 * US, ETH)
        .flow(udp("flood", "H", "D", 0, None, 1500, 1500 * MBPS))
        .flow(tcp("tcp", "H", "D", 100 * MS, None, json!({"init_cwnd_pkts": 10})))
        .run();
    assert!(res.flow("flood", "drop_pkts") > 0, "the host queue overflows");
    let tx = res.flow("tcp", "tx_pkts");
    assert!(tx >= 10, "TCP sent {tx} segments: starved by another flow's backlog");
}
