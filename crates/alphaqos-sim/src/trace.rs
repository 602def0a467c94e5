//! Trace-driven queueing: a packet trace replayed into a downstream link.
//!
//! What it models: Liberatore, "Local Flow Separation", Section IV. A trace
//! logged on a link shows no queue (packets were logged as they left). The
//! link is assumed to feed a downstream link of rate `β` times the trace's
//! mean rate (Definition 2, the over-provisioning factor) with an unbounded
//! buffer, where queues do form; the queue is measured under a discipline.
//!
//! Traces: pcap (libpcap's `pcap-savefile(5)`: microsecond or nanosecond
//! magic, either byte order; link types Ethernet, raw IPv4 and Linux
//! cooked) of IPv4 packets, whose size is the IP total length (so that a
//! capture truncated after the headers keeps each packet's real size), or
//! CSV with a header `time,size,src,dst,sport,dport,proto` (time in
//! seconds, size in IP bytes, dotted IPv4 addresses, protocol number).
//! Non-IPv4 frames are skipped and counted. A pcap record stamped before
//! the one written before it (tcpdump stamps on the CPU that received the
//! packet, so a capture on a multi-core host has them) is put in time order
//! and counted; a CSV trace must ascend. A file that cannot be read is an
//! error naming the file and the byte offset of the fault.
//!
//! The replay ([`replay`]) is a single egress port (`egress.rs`, the
//! simulator's rules): arrivals at their trace times, the link sends back
//! to back at `rate` with no framing overhead.
//! Measured at every arrival: the queue's length in bytes before the packet
//! (for YAQS, its fast queue; its own counters carry the rest), and a
//! series every `interval`.

use crate::error::{ConfigError, Outer};
use crate::qos::Qdisc;
use crate::metrics::{col, Column, Histogram, Table};
use crate::packet::{Packet, PROTO_TCP, PROTO_UDP};
use crate::egress::Egress;
use crate::qos;
use crate::rng::Rng;
use crate::time::SimTime;
use crate::units::DataRate;
use std::path::Path;

/// One packet of a trace: its time (from the first packet), IP size, 5-tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracePacket {
    pub time_ns: u64,
    pub size: u32,
    pub src_ip: u32,
    pub dst_ip: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: u8,
}

/// A read trace.
#[derive(Debug, Default)]
pub struct Trace {
    pub packets: Vec<TracePacket>,
    /// Frames that were not IPv4 (skipped).
    pub skipped: u64,
    /// Pcap records stamped before the record written before them, put in
    /// time order.
    pub out_of_order: u64,
}

impl Trace {
    /// Bytes over the span from the first to the last packet, bit/s.
    pub fn mean_rate_bps(&self) -> f64 {
        let (Some(a), Some(b)) = (self.packets.first(), self.packets.last()) else { return 0.0 };
        let bytes: u64 = self.packets.iter().map(|p| p.size as u64).sum();
        let span = (b.time_ns - a.time_ns).max(1) as f64 / 1e9;
        bytes as f64 * 8.0 / span
    }
}

/// Read a pcap or (by its `.csv` extension) CSV trace.
// why String: the problem is a file's (its path and byte offset), not a configuration field's.
pub fn read(path: &Path) -> Result<Trace, String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let at = |off: usize, what: String| format!("{}: byte {off}: {what}", path.display());
    let mut t = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) { read_csv(&data) } else { read_pcap(&data) }
        .map_err(|(off, what)| at(off, what))?;
    if t.packets.is_empty() {
        return Err(at(data.len(), "no IPv4 packets in the trace".into()));
    }
    // Times from the first packet (the readers leave them in time order).
    let t0 = t.packets[0].time_ns;
    for p in &mut t.packets {
        p.time_ns -= t0;
    }
    Ok(t)
}

fn u16_at(d: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([d[o], d[o + 1]])
}
fn u32_at(d: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

/// Parse a pcap file; errors carry the byte offset.
pub fn read_pcap(d: &[u8]) -> Result<Trace, (usize, String)> {
    if d.len() < 24 {
        return Err((d.len(), "not a pcap file: shorter than the 24-byte file header".into()));
    }
    let magic = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    let (le, nanos) = match magic {
        0xa1b2_c3d4 => (true, false),
        0xa1b2_3c4d => (true, true),
        0xd4c3_b2a1 => (false, false),
        0x4d3c_b2a1 => (false, true),
        _ => return Err((0, format!("not a pcap file: magic number {magic:#010x}"))),
    };
    let rd = |o: usize| -> u32 {
        let b = [d[o], d[o + 1], d[o + 2], d[o + 3]];
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let linktype = rd(20) & 0x0fff_ffff;
    let l2 = match linktype {
        1 => 14,        // Ethernet
        101 | 228 => 0, // raw IP, raw IPv4
        113 => 16,      // Linux cooked capture
        other => return Err((20, format!("link type {other} is not supported (Ethernet, raw IPv4, Linux cooked)"))),
    };
    let mut t = Trace::default();
    let mut off = 24;
    let mut last = 0u64;
    while off < d.len() {
        if off + 16 > d.len() {
            return Err((off, "truncated record header".into()));
        }
        let (sec, frac, incl) = (rd(off) as u64, rd(off + 4) as u64, rd(off + 8) as usize);
        let body = off + 16;
        if body + incl > d.len() {
            return Err((off, format!("truncated record: {incl} bytes announced, {} in the file", d.len() - body)));
        }
        let time_ns = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        if time_ns < last {
            t.out_of_order += 1;
        }
        last = last.max(time_ns);
        let f = &d[body..body + incl];
        let ether_ok = match linktype {
            1 => incl >= 14 && u16_at(f, 12) == 0x0800,
            113 => incl >= 16 && u16_at(f, 14) == 0x0800,
            _ => true,
        };
        if !ether_ok || incl < l2 + 20 || f[l2] >> 4 != 4 {
            t.skipped += 1;
            off = body + incl;
            continue;
        }
        let ip = &f[l2..];
        let ihl = (ip[0] & 0x0f) as usize * 4;
        let size = u16_at(ip, 2) as u32;
        if ihl < 20 || size < ihl as u32 {
            return Err((body + l2, format!("bad IPv4 header (header length {ihl}, total length {size})")));
        }
        let proto = ip[9];
        let (src_port, dst_port) = if (proto == PROTO_TCP || proto == PROTO_UDP) && ip.len() >= ihl + 4 { (u16_at(ip, ihl), u16_at(ip, ihl + 2)) } else { (0, 0) };
        t.packets.push(TracePacket { time_ns, size, src_ip: u32_at(ip, 12), dst_ip: u32_at(ip, 16), src_port, dst_port, proto });
        off = body + incl;
    }
    if t.out_of_order > 0 {
        // Stable: packets with equal stamps keep the order they were written in.
        t.packets.sort_by_key(|p| p.time_ns);
    }
    Ok(t)
}

/// Parse a CSV trace `time,size,src,dst,sport,dport,proto`.
pub fn read_csv(d: &[u8]) -> Result<Trace, (usize, String)> {
    let text = std::str::from_utf8(d).map_err(|e| (e.valid_up_to(), "not UTF-8 text".to_string()))?;
    let mut t = Trace::default();
    let mut off = 0;
    let mut last = 0u64;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let start = off;
        off += line.len();
        let line = line.trim_end();
        if line.is_empty() || (n == 0 && line.starts_with("time")) {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let err = |what: String| (start, format!("line {}: {what}", n + 1));
        if f.len() != 7 {
            return Err(err(format!("expected 7 fields time,size,src,dst,sport,dport,proto, got {}", f.len())));
        }
        let secs: f64 = f[0].parse().map_err(|_| err(format!("time {:?} is not a number of seconds", f[0])))?;
        if !(secs >= 0.0 && secs.is_finite()) {
            return Err(err(format!("time {secs} must be a non-negative number of seconds")));
        }
        let time_ns = (secs * 1e9).round() as u64;
        if time_ns < last {
            return Err(err("times go back".into()));
        }
        last = time_ns;
        let size: u32 = f[1].parse().ok().filter(|&s| (20..=65535).contains(&s)).ok_or_else(|| err(format!("size {:?} is not an IP size (20..65535 bytes)", f[1])))?;
        let ip = |s: &str| crate::topology::parse_ipv4(s).ok_or_else(|| err(format!("{s:?} is not an IPv4 address")));
        let port = |s: &str| s.parse::<u16>().map_err(|_| err(format!("port {s:?} is not 0..65535")));
        let proto = f[6].parse::<u8>().map_err(|_| err(format!("protocol {:?} is not 0..255", f[6])))?;
        t.packets.push(TracePacket { time_ns, size, src_ip: ip(f[2])?, dst_ip: ip(f[3])?, src_port: port(f[4])?, dst_port: port(f[5])?, proto });
    }
    Ok(t)
}

/// Replay `trace` into a link of `rate` whose queue is `queue`; sample the
/// series every `interval_ns`. Tables: `replay` (one row: packets, rate,
/// the measured queue's maximum, mean and 90th percentile in bytes, the
/// most and mean packets held), `replay_series`, `qlen_hist`, and YAQS's
/// `yaqs` table when the queue is a YAQS.
pub fn replay(trace: &Trace, rate: DataRate, queue: &crate::config::QueueConfig, interval_ns: u64, seed: u64) -> Result<Vec<(&'static str, Table)>, ConfigError> {
    if rate.as_bps() == 0 {
        return Err(ConfigError::new("the downstream rate must be positive"));
    }
    // No framing overhead: the trace's sizes are what the link carries.
    let q = qos::build_on(queue, 65535, Some(rate)).outer("queue")?;
    let mut port = Egress::new(q, Rng::stream(seed, "queue:replay"), rate, 0);
    let mut measured: Histogram<6> = Histogram::default();
    let (mut s_time, mut s_len, mut s_fast, mut s_slow_flows) = (vec![], vec![], vec![], vec![]);
    let mut next_sample = 0u64;
    let mut dropped = vec![];
    let is_yaqs = {
        let mut y = false;
        port.qdisc.for_each_yaqs(&mut |_, _| y = true);
        y
    };
    let mut sample_until = |q: &dyn qos::Qdisc, t: u64| {
        while next_sample <= t {
            s_time.push(next_sample);
            s_len.push(q.backlog().bytes);
            let (mut fast, mut flows) = (q.backlog().bytes, 0);
            q.for_each_yaqs(&mut |_, y| {
                fast = y.fast_backlog().bytes;
                flows = y.stats().slow_flows;
            });
            s_fast.push(fast);
            s_slow_flows.push(flows);
            next_sample += interval_ns;
        }
    };
    // Every transmission up to `until`, the series sampled before each.
    // (Packets a discipline drops from inside are counted by it; not kept here.)
    let send_until = |port: &mut Egress, until: u64, sample_until: &mut dyn FnMut(&dyn qos::Qdisc, u64), dropped: &mut Vec<_>| {
        while let Some(t) = port.next_tx().filter(|t| t.0 <= until) {
            sample_until(port.qdisc.as_dyn(), t.0);
            port.transmit(t, dropped);
            dropped.clear();
        }
    };
    for tp in &trace.packets {
        send_until(&mut port, tp.time_ns, &mut sample_until, &mut dropped);
        sample_until(port.qdisc.as_dyn(), tp.time_ns);
        if !is_yaqs {
            measured.record(port.qdisc.backlog().bytes);
        }
        let mut p = Packet::test(0, tp.size);
        (p.src_ip, p.dst_ip, p.src_port, p.dst_port, p.proto) = (tp.src_ip, tp.dst_ip, tp.src_port, tp.dst_port, tp.proto);
        // A refused packet is counted by the discipline (its drop counters).
        let _ = port.enqueue(SimTime(tp.time_ns), p, &mut dropped);
        dropped.clear();
    }
    send_until(&mut port, u64::MAX, &mut sample_until, &mut dropped);
    let (q, sent) = (&port.qdisc, port.tx_pkts);
    let mut out = vec![];
    let mut yaqs_rows = None;
    q.for_each_yaqs(&mut |_, y| {
        measured = y.stats().fast_len_at_arrival.clone();
        yaqs_rows = Some(y.stats().clone());
    });
    let one = |v: u64| Column::U64(vec![v]);
    out.push((
        "replay",
        Table::default()
            .with(col::ARRIVALS, one(trace.packets.len() as u64))
            .with(col::TX_PKTS, one(sent))
            .with(col::RATE_BPS, one(rate.as_bps()))
            .with(col::QLEN_MAX_BYTES, one(measured.max().unwrap_or(0)))
            .with(col::QLEN_MEAN_BYTES, one(measured.mean().map_or(0, |m| m.round() as u64)))
            .with(col::QLEN_P90_BYTES, one(measured.quantile(0.9).unwrap_or(0))),
    ));
    out.push((
        "replay_series",
        Table::default()
            .with(col::TIME_NS, Column::U64(s_time))
            .with(col::LEN_BYTES, Column::U64(s_len))
            .with(col::FAST_BYTES, Column::U64(s_fast))
            .with(col::SLOW_FLOWS, Column::U64(s_slow_flows)),
    ));
    let (lows, counts): (Vec<u64>, Vec<u64>) = measured.buckets().unzip();
    out.push(("qlen_hist", Table::default().with(col::LOW_BYTES, Column::U64(lows)).with(col::COUNT, Column::U64(counts))));
    if let Some(s) = yaqs_rows {
        let mut queues = vec![];
        q.for_each_queue(&mut |name, c, _| queues.push((name.to_string(), c.enq_bytes)));
        let slow_bytes = queues.iter().find(|(n, _)| n == "slow").map_or(0, |x| x.1);
        let total: u64 = queues.iter().map(|x| x.1).sum();
        out.push((
            "yaqs",
            Table::default()
                .with(col::ARRIVALS, one(s.arrivals))
                .with(col::CLASSIFIED_SLOW, one(s.classified_slow))
                .with(col::SLOW_BYTES, one(slow_bytes))
                .with(col::ENQ_BYTES, one(total))
                .with(col::NOP_BYTES, one(s.nop_bytes))
                .with(col::NOP_BYTES_INTO_EMPTY, one(s.nop_bytes_into_empty))
                .with(col::SLOW_FLOWS_MAX, one(s.max_slow_flows))
                .with(col::SLOW_FLOWS_MEAN, Column::F64(vec![s.mean_slow_flows().unwrap_or(0.0)]))
                .with(col::FALSE_POSITIVES, Column::OptU64(vec![s.epsilon.map(|_| s.false_positives)]))
                .with(col::STRICT_FALSE_POSITIVES, Column::OptU64(vec![s.epsilon.map(|_| s.strict_false_positives)])),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Payload;
    use crate::tap::Tap;

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("alphaqos-trace-{}-{name}", std::process::id()))
    }

    #[test]
    fn records_stamped_out_of_order_are_sorted_and_counted() {
        // Raw-IPv4 pcap (link type 101), microsecond stamps 300, 100, 200 µs;
        // each packet's source port says which record it was.
        let mut d = Vec::new();
        for x in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 101] {
            d.extend_from_slice(&x.to_le_bytes());
        }
        for (port, usec) in [(1u16, 300u32), (2, 100), (3, 200)] {
            for x in [0u32, usec, 24, 1500] {
                d.extend_from_slice(&x.to_le_bytes());
            }
            let mut ip = [0u8; 24];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&1500u16.to_be_bytes());
            ip[9] = PROTO_UDP;
            ip[20..22].copy_from_slice(&port.to_be_bytes());
            d.extend_from_slice(&ip);
        }
        let t = read_pcap(&d).unwrap();
        assert_eq!(t.out_of_order, 2);
        assert_eq!(t.packets.iter().map(|p| (p.time_ns, p.src_port)).collect::<Vec<_>>(), vec![(100_000, 2), (200_000, 3), (300_000, 1)]);
    }

    #[test]
    fn a_tap_reads_back_as_a_trace() {
        let path = tmp("rt.pcap");
        let mut tap = Tap::create(&path).unwrap();
        for k in 0..50u64 {
            let mut p = Packet::test(0, 1500);
            (p.src_ip, p.dst_ip, p.src_port, p.dst_port, p.proto) = (0x0A00_0001, 0x0A00_0002 + (k % 3) as u32, 4000, 80, PROTO_TCP);
            p.payload = Payload::TcpData { seq: k * 1448, len: 1448, ts_val: SimTime(k), retx: false, push: false };
            tap.write(SimTime(1_000_000_000 + k * 120_000), 1, 2, &p);
        }
        tap.flush().unwrap();
        let t = read(&path).unwrap();
        assert_eq!(t.packets.len(), 50);
        assert_eq!(t.packets[3], TracePacket { time_ns: 360_000, size: 1500, src_ip: 0x0A00_0001, dst_ip: 0x0A00_0002, src_port: 4000, dst_port: 80, proto: PROTO_TCP });
        // 1500 B every 120 us: 50 packets over 49 gaps.
        assert!((t.mean_rate_bps() - 100e6 * 50.0 / 49.0).abs() < 1.0);
        // Truncated: the error names the record's offset.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        let e = read(&path).unwrap_err();
        let last = 24 + 49 * (16 + 66);
        assert!(e.contains(&format!("byte {last}: truncated record")), "{e}");
        std::fs::write(&path, b"garbage that is long enough to be a header").unwrap();
        assert!(read(&path).unwrap_err().contains("byte 0: not a pcap file"));
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn csv_traces_and_their_errors() {
        let path = tmp("t.csv");
        std::fs::write(&path, "time,size,src,dst,sport,dport,proto\n0.5,1500,10.0.0.1,10.0.0.2,1,2,6\n0.6,40,10.0.0.2,10.0.0.1,2,1,6\n").unwrap();
        let t = read(&path).unwrap();
        assert_eq!((t.packets.len(), t.packets[1].time_ns, t.packets[1].size), (2, 100_000_000, 40));
        std::fs::write(&path, "time,size,src,dst,sport,dport,proto\n0.5,1500,10.0.0.1,10.0.0.2,1,2,6\n0.6,40,10.0.0.300,10.0.0.1,2,1,6\n").unwrap();
        let e = read(&path).unwrap_err();
        assert!(e.contains("byte 69: line 3") && e.contains("10.0.0.300"), "{e}");
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn replay_queue_matches_the_fluid_backlog() {
        // 1000 B every 10 us (800 Mbit/s) for 1 ms into 400 Mbit/s: the
        // backlog grows by 500 B per arrival; unbounded FIFO.
        let mut trace = Trace::default();
        for k in 0..100u64 {
            trace.packets.push(TracePacket { time_ns: k * 10_000, size: 1000, src_ip: 1, dst_ip: 2, src_port: 1, dst_port: 2, proto: 17 });
        }
        let fifo: crate::config::QueueConfig = serde_json::from_str(r#"{"fifo": {}}"#).unwrap();
        let tables = replay(&trace, DataRate::mbps(400), &fifo, 100_000, 1).unwrap();
        let r = &tables[0].1;
        assert_eq!(r.u64s(col::TX_PKTS), [100]);
        // Before the k-th arrival: k packets came, about k/2 left: ~500 k
        // bytes (one packet of granularity).
        let max = r.u64s(col::QLEN_MAX_BYTES)[0];
        assert!((48_000..=51_000).contains(&max), "{max}");
    }
}
