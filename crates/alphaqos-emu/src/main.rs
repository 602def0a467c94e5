//! alphaqos-emu: the circuit emulator. Forwards Ethernet frames between two
//! real interfaces (AF_PACKET on veth ends in network namespaces) and puts
//! every frame through what a scenario says the path between them is: per
//! direction a chain of hops, each with the forwarding router's firewall
//! filter (classification and policers: `qos::classify::Filter`), the
//! egress discipline (`qos::build` from the same `QueueConfig` the
//! simulator builds), a transmitter at the link's rate and the propagation
//! delay. The engine's own code decides; the wall clock drives it (see
//! `link.rs` for the time model).
//!
//! Usage: `alphaqos-emu CONFIG.json [--out RESULTS.json]`. The
//! configuration is written by `alphaqos emulate` (Python,
//! `alphaqos.emulate`), which turns a scenario's links into it; the
//! results are the simulator's tables (`queue`, `queue_summary`, `filter`)
//! and the emulator's own (`emu_flows`, `emu_flow_series`, `emu_timing`,
//! `emu_hops`), as columns, which the Python side writes as Parquet.
//! It runs for `duration_ns` (0: until SIGINT or SIGTERM).
//!
//! Timing: the hops run in ideal time; the error is the lateness of each
//! frame handed back to the kernel after its ideal departure (p50, p99,
//! max in `emu_timing`), and the achieved rate is measured on the frames
//! that left back to back at the bottleneck.
//!
//! Lag (`lag_ns`, default 0): the hops run only up to `lag_ns` behind the
//! wall clock, and every frame leaves `lag_ns` after its ideal departure,
//! taken off the delay of each direction's longest-delay hop (so the path's
//! delay is unchanged). A frame the kernel stamped on arrival but handed
//! to the emulator late (its receive softirq deferred to `ksoftirqd` on a
//! loaded machine) then still enters the path at its stamp, as long as it
//! is less than `lag_ns` late; without the lag it would enter when read,
//! together with the frames behind it: a burst no host sent
//! (`rx_late_frames` counts the frames given a later time than their stamp).
//!
//! Bad input (a bad configuration, an interface or namespace that does
//! not exist, no permission for raw sockets, a link it cannot run in real
//! time) is one line on stderr, `alphaqos-emu: error: ...`, exit status 2.

mod config;
mod link;
mod sock;
mod wire;

use alphaqos_sim::egress::Egress;
use alphaqos_sim::summary;
use alphaqos_sim::metrics::{col, Column, Histogram, Table};
use alphaqos_sim::qos::Qdisc;
use alphaqos_sim::qos::classify::Filter;
use alphaqos_sim::rng::Rng;
use alphaqos_sim::{DataRate, Duration, SimTime};
use config::EmuConfig;
use alphaqos_sim::qos::classify::Filter as TermFilter;
use link::{Direction, FlowDelay, Hop, Why};
use sock::RawSocket;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use wire::FlowKey;

/// The most MTU-sized frames per second a hop may be asked to carry: one
/// receive and one send system call per frame on one core.
const MAX_PPS: u64 = 1_000_000;
/// The most bytes a direction may hold in flight (its queues and delays).
const MAX_HELD_BYTES: u64 = 1 << 30;
/// Wait in the kernel (ppoll, timer slack 1 ns) when the next event is
/// further than this; closer events are met by spinning. Spinning longer
/// (60 µs was tried) lowers the median error to ~2 µs but, under
/// SCHED_FIFO at 1 Gbit/s, keeps a core busy until the kernel's real-time
/// throttling (sched_rt_runtime_us) stops the process for tens of ms.
const SPIN_NS: u64 = 5_000;
/// Largest frame read (jumbo frames and a VLAN tag).
const FRAME_MAX: usize = 9_216 + 18;
/// Frames read per interface per turn of the loop.
const RX_BATCH: usize = 64;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match run(&args[1..]) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("alphaqos-emu: error: {e}");
            std::process::exit(2);
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let mut config_path = None;
    let mut out_path = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out_path = Some(it.next().ok_or("--out needs a file")?.clone()),
            "-h" | "--help" => {
                println!("usage: alphaqos-emu CONFIG.json [--out RESULTS.json]");
                return Ok(());
            }
            s if config_path.is_none() && !s.starts_with('-') => config_path = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s:?} (usage: alphaqos-emu CONFIG.json [--out RESULTS.json])")),
        }
    }
    let config_path = config_path.ok_or("usage: alphaqos-emu CONFIG.json [--out RESULTS.json]")?;
    let text = std::fs::read_to_string(&config_path).map_err(|e| format!("cannot read {config_path}: {e}"))?;
    let cfg = EmuConfig::parse(&text, &config_path)?;
    let mut emu = Emulator::from_config(&cfg)?;
    emu.check_real_time()?;
    let socks = emu.open_sockets(&cfg)?;
    set_up_process(emu.realtime)?;
    println!("ready");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    emu.run(&socks)?;
    let tables = emu.tables();
    let json = serde_json::to_string(&tables).map_err(|e| e.to_string())?;
    match out_path {
        Some(p) => {
            let tmp = format!("{p}.partial");
            std::fs::write(&tmp, json).and_then(|_| std::fs::rename(&tmp, &p)).map_err(|e| format!("cannot write {p}: {e}"))?;
        }
        None => println!("{json}"),
    }
    Ok(())
}

/// Per-flow counters, by direction.
#[derive(Default, Clone)]
struct FlowStats {
    dir: usize,
    ethertype: u16,
    rx_pkts: u64,
    rx_bytes: u64,
    tx_pkts: u64,
    tx_bytes: u64,
    drops: BTreeMap<&'static str, u64>,
}

struct Emulator {
    duration_ns: u64,
    interval_ns: u64,
    spin: bool,
    realtime: bool,
    filters: Vec<Filter>,
    filter_nodes: Vec<String>,
    dirs: Vec<Direction>,
    /// Per direction: the interfaces (indices into the sockets) it reads and writes.
    ends: Vec<(usize, usize)>,
    slots: Vec<Vec<u8>>,
    free: Vec<usize>,
    flows: HashMap<(usize, FlowKey), u32>,
    flow_keys: Vec<(FlowKey, FlowStats)>,
    /// Series.
    queue_rows: Vec<(String, u64, u64, u64, u64, [u64; 3])>,
    flow_rows: Vec<(u32, u64, u64)>,
    flow_last_sampled: Vec<u64>,
    /// Timing per direction.
    lateness: Vec<Histogram>,
    last_out: Vec<Option<(SimTime, u64)>>,
    /// Per direction: the arrival time given to the last frame received.
    last_rx: Vec<SimTime>,
    b2b_bits: Vec<u128>,
    b2b_ns: Vec<u128>,
    rx_frames: u64,
    /// Frames read after the hops had run past their kernel time stamp, so
    /// given a later arrival time than the stamp (the receive softirq or the
    /// emulator ran late), and the largest such shift.
    rx_late_frames: u64,
    rx_late_max_ns: u64,
    /// How far the hops run behind the wall clock (see the module doc).
    lag_ns: u64,
    truncated: u64,
    /// Frames the kernel dropped before the emulator read them (receive buffer full).
    socket_drops: u64,
    elapsed_ns: u64,
}

impl Emulator {
    fn from_config(cfg: &EmuConfig) -> Result<Emulator, String> {
        let mut filters = vec![];
        let mut filter_nodes = vec![];
        for (i, f) in cfg.filters.iter().enumerate() {
            filters.push(Filter::new(&f.terms).map_err(|e| format!("filters[{i}] ({}): {e}", f.node))?);
            filter_nodes.push(f.node.clone());
        }
        let lag_ns = cfg.lag_ns;
        let mut dirs = vec![];
        let mut ends = vec![];
        for (d, dv) in cfg.directions.iter().enumerate() {
            let at = format!("directions[{d}]");
            let mut hops = vec![];
            for (h, hv) in dv.hops.iter().enumerate() {
                let rate = DataRate(hv.rate_bps);
                let qdisc = alphaqos_sim::qos::build_on(&hv.queue, hv.mtu_bytes, Some(rate)).map_err(|e| format!("{at}.hops[{h}] ({}).queue: {e}", hv.name))?;
                let rng = Rng::stream(cfg.seed, &format!("queue:{}", hv.name));
                let egress = Egress::new(qdisc, rng, rate, hv.overhead_bytes);
                hops.push(Hop::new(hv.name.clone(), hv.filter, egress, Duration(hv.delay_ns), hv.mtu_bytes));
            }
            if lag_ns > 0 {
                let longest = hops.iter_mut().max_by_key(|h| h.delay.0).expect("a hop");
                if longest.delay.0 < lag_ns {
                    return Err(format!(
                        "lag_ns: {lag_ns} ns is more than the longest delay of {at} ({} ns, {}), which it is taken off",
                        longest.delay.0, longest.name
                    ));
                }
                longest.delay = Duration(longest.delay.0 - lag_ns);
            }
            let mut flow_delays = vec![];
            for (i, fd) in dv.flow_delays.iter().enumerate() {
                let mut f = TermFilter::new(std::slice::from_ref(&fd.matches)).map_err(|e| format!("{at}.flow_delays[{i}].match: {e}"))?;
                flow_delays.push(FlowDelay { term: f.terms.remove(0), delay: Duration(fd.delay_ns), held: VecDeque::new() });
            }
            dirs.push(Direction::new(dv.name.clone(), hops, dv.exit_filter, flow_delays));
            ends.push((dv.rx, dv.tx));
        }
        let n = dirs.len();
        Ok(Emulator {
            duration_ns: cfg.duration_ns,
            interval_ns: cfg.sample_interval_ns.max(1_000_000),
            spin: cfg.spin,
            realtime: cfg.realtime,
            filters,
            filter_nodes,
            dirs,
            ends,
            slots: vec![],
            free: vec![],
            flows: HashMap::new(),
            flow_keys: vec![],
            queue_rows: vec![],
            flow_rows: vec![],
            flow_last_sampled: vec![],
            lateness: (0..n).map(|_| Histogram::default()).collect(),
            last_out: vec![None; n],
            last_rx: vec![SimTime::ZERO; n],
            b2b_bits: vec![0; n],
            b2b_ns: vec![0; n],
            rx_frames: 0,
            rx_late_frames: 0,
            rx_late_max_ns: 0,
            lag_ns,
            truncated: 0,
            socket_drops: 0,
            elapsed_ns: 0,
        })
    }

    /// Refuse a path this process cannot keep up with, naming the hop and why.
    fn check_real_time(&self) -> Result<(), String> {
        for d in &self.dirs {
            let mut held = 0u64;
            for h in &d.hops {
                let (rate, frame) = (h.egress.rate, (h.mtu + h.egress.overhead) as u64);
                let pps = rate.as_bps() / (8 * frame.max(1));
                if pps > MAX_PPS {
                    return Err(format!(
                        "hop {} ({}): {} is {:.2} million {}-byte frames per second, above the {:.1} million this emulator forwards in real time (one system call per frame and direction); scale the circuit down",
                        h.name, d.name, rate, pps as f64 / 1e6, frame, MAX_PPS as f64 / 1e6
                    ));
                }
                held += rate.bytes_in(h.delay);
            }
            if held > MAX_HELD_BYTES {
                return Err(format!("direction {}: its delays hold {} MB in flight at the link rates, above the {} MB this emulator keeps in memory", d.name, held >> 20, MAX_HELD_BYTES >> 20));
            }
        }
        Ok(())
    }

    fn open_sockets(&self, cfg: &EmuConfig) -> Result<Vec<RawSocket>, String> {
        cfg.ifaces.iter().map(|i| RawSocket::open(i.netns.as_deref(), &i.name)).collect()
    }

    fn alloc(&mut self) -> usize {
        self.free.pop().unwrap_or_else(|| {
            self.slots.push(vec![0u8; FRAME_MAX]);
            self.slots.len() - 1
        })
    }

    fn flow_id(&mut self, dir: usize, key: FlowKey, ethertype: u16) -> u32 {
        let next = self.flow_keys.len() as u32;
        let id = *self.flows.entry((dir, key)).or_insert(next);
        if id == next {
            self.flow_keys.push((key, FlowStats { dir, ethertype, ..Default::default() }));
            self.flow_last_sampled.push(0);
        }
        id
    }

    fn now(start: &libc::timespec) -> SimTime {
        let t = clock();
        SimTime(((t.tv_sec - start.tv_sec) as i64 * 1_000_000_000 + (t.tv_nsec - start.tv_nsec) as i64).max(0) as u64)
    }

    fn run(&mut self, socks: &[RawSocket]) -> Result<(), String> {
        let start = clock();
        let mut lens = vec![0usize; self.slots.len()];
        let mut dropped = vec![];
        let mut next_sample = 0u64;
        let end = if self.duration_ns == 0 { u64::MAX } else { self.duration_ns };
        let mut pfds: Vec<libc::pollfd> = socks.iter().map(|s| libc::pollfd { fd: s.fd, events: libc::POLLIN, revents: 0 }).collect();
        loop {
            let mut now = Self::now(&start);
            if STOP.load(Ordering::Relaxed) || now.0 >= end {
                self.elapsed_ns = now.0.min(end);
                break;
            }
            // Receive.
            for (i, s) in socks.iter().enumerate() {
                let Some(d) = self.ends.iter().position(|e| e.0 == i) else { continue };
                for _ in 0..RX_BATCH {
                    let slot = self.alloc();
                    let got = s.recv(&mut self.slots[slot]).map_err(|e| format!("recvmsg on the raw socket of {}: {e}", s.where_))?;
                    let Some((n, stamp)) = got else {
                        self.free.push(slot);
                        break;
                    };
                    now = Self::now(&start);
                    // The frame arrived when the kernel stamped it (realtime clock),
                    // taken onto this clock; never before the frame ahead of it.
                    if let Some(stamp) = stamp {
                        let age = (realtime_ns() - stamp).clamp(0, now.0 as i128) as u64;
                        let stamped = now.0 - age;
                        if stamped < self.last_rx[d].0 {
                            self.rx_late_frames += 1;
                            self.rx_late_max_ns = self.rx_late_max_ns.max(self.last_rx[d].0 - stamped);
                        }
                        now = SimTime(stamped.max(self.last_rx[d].0));
                    }
                    self.last_rx[d] = now;
                    self.rx_frames += 1;
                    if n > FRAME_MAX {
                        self.truncated += 1;
                        self.free.push(slot);
                        continue;
                    }
                    if lens.len() < self.slots.len() {
                        lens.resize(self.slots.len(), 0);
                    }
                    lens[slot] = n;
                    let (mut pkt, key, et) = wire::parse(&self.slots[slot][..n], slot as u64, now);
                    let f = self.flow_id(d, key, et);
                    pkt.flow = f;
                    let st = &mut self.flow_keys[f as usize].1;
                    st.rx_pkts += 1;
                    st.rx_bytes += pkt.size as u64;
                    self.dirs[d].receive(now, pkt);
                }
            }
            // Advance and send.
            now = Self::now(&start);
            let horizon = SimTime(now.0.saturating_sub(self.lag_ns));
            for d in 0..self.dirs.len() {
                self.dirs[d].advance(horizon, &mut self.filters, &mut dropped);
                // The hops have run to `horizon`: a frame read later is not put before it.
                self.last_rx[d] = self.last_rx[d].max(horizon);
                let tx = &socks[self.ends[d].1];
                while let Some((ideal, pkt)) = self.dirs[d].due(horizon, &mut self.filters, &mut dropped) {
                    let ideal = SimTime(ideal.0 + self.lag_ns);
                    let slot = wire::slot_of(&pkt);
                    let st = &mut self.flow_keys[pkt.flow as usize].1;
                    if tx.send(&self.slots[slot][..lens[slot]]) {
                        let sent = Self::now(&start);
                        st.tx_pkts += 1;
                        st.tx_bytes += pkt.size as u64;
                        self.lateness[d].record(sent.0.saturating_sub(ideal.0));
                        self.rate_sample(d, ideal, sent, &pkt);
                    } else {
                        *st.drops.entry(Why::Send.as_str()).or_default() += 1;
                    }
                    self.free.push(slot);
                }
            }
            for (pkt, why) in dropped.drain(..) {
                *self.flow_keys[pkt.flow as usize].1.drops.entry(why.as_str()).or_default() += 1;
                self.free.push(wire::slot_of(&pkt));
            }
            if now.0 >= next_sample {
                self.sample(now.0);
                next_sample = now.0 - now.0 % self.interval_ns + self.interval_ns;
            }
            // Wait for the next event or a frame.
            let next = self.dirs.iter().filter_map(|d| d.next_event()).min().map_or(u64::MAX, |t| t.0.saturating_add(self.lag_ns)).min(next_sample).min(end);
            let now = Self::now(&start).0;
            if self.spin || next <= now + SPIN_NS {
                continue;
            }
            let wait = next - now - SPIN_NS / 2;
            let ts = libc::timespec { tv_sec: (wait / 1_000_000_000) as i64, tv_nsec: (wait % 1_000_000_000) as i64 };
            if unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null()) } < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) {
                    return Err(format!("ppoll on the raw sockets: {e}"));
                }
            }
        }
        self.sample(self.elapsed_ns);
        self.socket_drops = socks.iter().map(|s| s.drops()).sum::<Result<u64, String>>()?;
        Ok(())
    }

    /// Count a frame that left back to back behind the previous one at the
    /// bottleneck: its wire bits over the real time between the two sends.
    fn rate_sample(&mut self, d: usize, ideal: SimTime, sent: SimTime, pkt: &alphaqos_sim::packet::Packet) {
        let slowest = &self.dirs[d].hops.iter().min_by_key(|h| h.egress.rate.as_bps()).expect("a hop").egress;
        let wire = pkt.size as u64 + slowest.overhead as u64;
        let gap = slowest.wire_time(pkt.size).0;
        if let Some((prev_ideal, prev_sent)) = self.last_out[d] {
            if ideal.0.saturating_sub(prev_ideal.0) <= gap && sent.0 > prev_sent {
                self.b2b_bits[d] += wire as u128 * 8;
                self.b2b_ns[d] += (sent.0 - prev_sent) as u128;
            }
        }
        self.last_out[d] = Some((ideal, sent.0));
    }

    fn sample(&mut self, t: u64) {
        for d in &self.dirs {
            for h in &d.hops {
                h.egress.qdisc.for_each_queue(&mut |class, c, b| {
                    let name = if class.is_empty() { h.name.clone() } else { format!("{}/{class}", h.name) };
                    self.queue_rows.push((name, t, b.pkts, b.bytes, c.deq_bytes, c.held_by_color));
                });
            }
        }
        for (i, (_, st)) in self.flow_keys.iter().enumerate() {
            if st.tx_bytes != self.flow_last_sampled[i] || t == self.elapsed_ns {
                self.flow_rows.push((i as u32, t, st.tx_bytes));
                self.flow_last_sampled[i] = st.tx_bytes;
            }
        }
    }

    fn tables(&self) -> BTreeMap<String, Table> {
        let mut out = BTreeMap::new();
        let q = &self.queue_rows;
        out.insert(
            "queue".into(),
            Table::default()
                .with(col::QUEUE, Column::Str(q.iter().map(|r| r.0.clone()).collect()))
                .with(col::TIME_NS, Column::U64(q.iter().map(|r| r.1).collect()))
                .with(col::LEN_PKTS, Column::U64(q.iter().map(|r| r.2).collect()))
                .with(col::LEN_BYTES, Column::U64(q.iter().map(|r| r.3).collect()))
                .with(col::TX_BYTES, Column::U64(q.iter().map(|r| r.4).collect()))
                .with(col::LEN_GREEN_PKTS, Column::U64(q.iter().map(|r| r.5[0]).collect()))
                .with(col::LEN_YELLOW_PKTS, Column::U64(q.iter().map(|r| r.5[1]).collect()))
                .with(col::LEN_RED_PKTS, Column::U64(q.iter().map(|r| r.5[2]).collect())),
        );
        out.insert("queue_summary".into(), self.queue_summary());
        out.insert("filter".into(), self.filter_table());
        let names: Vec<String> = self.flow_keys.iter().map(|(k, st)| k.name(st.ethertype)).collect();
        let reasons = ["tail", "aqm", "policer", "filter", "mtu", "send"];
        let mut flows = Table::default()
            .with(col::FLOW, Column::Str(names.clone()))
            .with("direction", Column::Str(self.flow_keys.iter().map(|(_, st)| self.dirs[st.dir].name.clone()).collect()))
            .with(col::RX_PKTS, Column::U64(self.flow_keys.iter().map(|(_, st)| st.rx_pkts).collect()))
            .with(col::RX_BYTES, Column::U64(self.flow_keys.iter().map(|(_, st)| st.rx_bytes).collect()))
            .with(col::TX_PKTS, Column::U64(self.flow_keys.iter().map(|(_, st)| st.tx_pkts).collect()))
            .with(col::TX_BYTES, Column::U64(self.flow_keys.iter().map(|(_, st)| st.tx_bytes).collect()))
            .with(col::DROP_PKTS, Column::U64(self.flow_keys.iter().map(|(_, st)| st.drops.values().sum()).collect()));
        for r in reasons {
            flows = flows.with(&format!("drop_{r}_pkts"), Column::U64(self.flow_keys.iter().map(|(_, st)| st.drops.get(r).copied().unwrap_or(0)).collect()));
        }
        out.insert("emu_flows".into(), flows);
        out.insert(
            "emu_flow_series".into(),
            Table::default()
                .with(col::FLOW, Column::Str(self.flow_rows.iter().map(|r| names[r.0 as usize].clone()).collect()))
                .with("direction", Column::Str(self.flow_rows.iter().map(|r| self.dirs[self.flow_keys[r.0 as usize].1.dir].name.clone()).collect()))
                .with(col::TIME_NS, Column::U64(self.flow_rows.iter().map(|r| r.1).collect()))
                .with(col::TX_BYTES, Column::U64(self.flow_rows.iter().map(|r| r.2).collect())),
        );
        let n = self.dirs.len();
        let q = |d: usize, x: f64| self.lateness[d].quantile(x);
        out.insert(
            "emu_timing".into(),
            Table::default()
                .with("direction", Column::Str(self.dirs.iter().map(|d| d.name.clone()).collect()))
                .with("sent_pkts", Column::U64((0..n).map(|d| self.lateness[d].count()).collect()))
                // Frames a hop had sent into its delay line that had not come
                // out of it when the run stopped: neither sent on nor dropped.
                .with("in_flight_pkts", Column::U64(self.dirs.iter().map(|d| d.hops.iter().map(|h| h.pipe.len() as u64).sum::<u64>() + d.held_pkts()).collect()))
                .with("delay_error_p50_ns", Column::OptU64((0..n).map(|d| q(d, 0.5)).collect()))
                .with("delay_error_p99_ns", Column::OptU64((0..n).map(|d| q(d, 0.99)).collect()))
                .with("delay_error_max_ns", Column::OptU64((0..n).map(|d| self.lateness[d].max()).collect()))
                .with("configured_rate_bps", Column::U64(self.dirs.iter().map(|d| d.hops.iter().map(|h| h.egress.rate.as_bps()).min().unwrap_or(0)).collect()))
                .with("back_to_back_bits", Column::U64(self.b2b_bits.iter().map(|&b| b as u64).collect()))
                .with("achieved_rate_bps", Column::OptU64((0..n).map(|d| (self.b2b_ns[d] > 0).then(|| (self.b2b_bits[d] * 1_000_000_000 / self.b2b_ns[d]) as u64)).collect()))
                .with("configured_delay_ns", Column::U64(self.dirs.iter().map(|d| d.hops.iter().map(|h| h.delay.0).sum::<u64>() + self.lag_ns).collect())),
        );
        let hops: Vec<&Hop> = self.dirs.iter().flat_map(|d| &d.hops).collect();
        out.insert(
            "emu_hops".into(),
            Table::default()
                .with(col::LINK, Column::Str(hops.iter().map(|h| h.name.clone()).collect()))
                .with(col::TX_PKTS, Column::U64(hops.iter().map(|h| h.egress.tx_pkts).collect()))
                .with(col::TX_BYTES, Column::U64(hops.iter().map(|h| h.egress.tx_bytes).collect()))
                .with("drop_mtu_pkts", Column::U64(hops.iter().map(|h| h.mtu_drops).collect())),
        );
        out.insert(
            "run".into(),
            Table::default()
                .with(col::SIM_TIME_NS, Column::U64(vec![self.elapsed_ns]))
                .with("rx_frames", Column::U64(vec![self.rx_frames]))
                .with("rx_late_frames", Column::U64(vec![self.rx_late_frames]))
                .with("rx_late_max_ns", Column::U64(vec![self.rx_late_max_ns]))
                .with("truncated_frames", Column::U64(vec![self.truncated]))
                .with("socket_drops", Column::U64(vec![self.socket_drops])),
        );
        out
    }

    fn queue_summary(&self) -> Table {
        let hops = self.dirs.iter().flat_map(|d| &d.hops);
        summary::queue_summary(hops.map(|h| summary::QueueSource { link: &h.name, rate: h.egress.rate, link_loss_pkts: 0, qdisc: h.egress.qdisc.as_dyn() }))
    }

    fn filter_table(&self) -> Table {
        summary::filter_table(self.filters.iter().zip(&self.filter_nodes).map(|(f, n)| (n.as_str(), f)))
    }
}

/// Signal handlers, timer slack and (if asked) SCHED_FIFO; an error names the call.
fn set_up_process(realtime: bool) -> Result<(), String> {
    let os_err = |call: &str| format!("{call}: {}", std::io::Error::last_os_error());
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        if unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) } == libc::SIG_ERR {
            return Err(os_err(&format!("signal({name})")));
        }
    }
    // Wake up from ppoll when asked, not up to 50 µs later (prctl(2)).
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) } != 0 {
        return Err(os_err("prctl(PR_SET_TIMERSLACK, 1)"));
    }
    if realtime {
        let p = libc::sched_param { sched_priority: 10 };
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
            return Err(format!("{} (run as root, or without real-time priority: --no-realtime)", os_err("sched_setscheduler(SCHED_FIFO, 10)")));
        }
    }
    Ok(())
}

fn realtime_ns() -> i128 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe {
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut t);
    }
    t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128
}

fn clock() -> libc::timespec {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t);
    }
    t
}
