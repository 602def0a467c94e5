//! A workload's transfers and their streams at run time: arrivals, opening
//! the streams of a transfer (ports, striping, the ideal completion time),
//! acting on what each stream's application reports after its events
//! (blocks fed to it, the file whole at the receiver, an HTTP response,
//! the stream closed), and the ON/OFF hosts' next transfers.
//!
//! The records ([`super::TransferRec`], [`super::StreamRec`]) are the rows
//! of the `transfers` and `transfer_streams` tables (`summary.rs`).

use super::{ideal_fct, Kind, PathInfo, StreamRec, TransferRec, EPHEMERAL_HIGH, EPHEMERAL_LOW};
use crate::apps::bulk::{AppWriter, BulkTcp};
use crate::apps::{End, Report};
use crate::conn::ConnId;
use crate::event::{Event, FlowTimer};
use crate::network::{Ends, FlowIo};
use crate::packet::{PROTO_TCP, TCP_HEADER_BYTES};
use crate::sim::{Conn, Owner, Simulation};
use crate::time::Duration;

impl Simulation {
    /// The first event of workload `w`.
    pub(crate) fn schedule_first(&mut self, w: usize) {
        let wl = &mut self.workloads[w];
        let start = wl.start;
        match &mut wl.kind {
            Kind::Transfer { .. } => self.net.events.schedule(start, Event::Workload(w as u32, 0)),
            Kind::Poisson { mean_gap_ns, .. } => {
                let at = start + Duration(wl.arrivals.exponential(*mean_gap_ns).round() as u64);
                self.net.events.schedule(at, Event::Workload(w as u32, 0));
            }
            Kind::OnOff { hosts, mean_gap_ns, .. } | Kind::Http { sessions: hosts, mean_gap_ns, .. } => {
                for (h, host) in hosts.iter_mut().enumerate() {
                    let at = start + Duration(host.rng.exponential(*mean_gap_ns).round() as u64);
                    host.next_due = at;
                    self.net.events.schedule(at, Event::Workload(w as u32, h as u32));
                }
            }
        }
    }

    /// After an event of stream `s` (connection `id`), what its application
    /// reported: feed it blocks if it wants data, note the file whole at
    /// the receiver, answer an HTTP request, close the stream that has
    /// finished or given up.
    pub(crate) fn after(&mut self, id: ConnId, s: usize, mut report: Report) {
        self.streams[s].delivered = report.delivered;
        let t = self.streams[s].transfer as usize;
        let tr = &self.transfers[t];
        if report.wants_data && tr.block.is_some() && tr.assigned < tr.size {
            self.feed(id, t, &mut report);
        }
        let tr = &self.transfers[t];
        // The file is whole at the receiver only once this stream, whose
        // event may have completed it, holds all it was fed: only then is
        // it worth summing the transfer's streams (not on every packet).
        if tr.receiver_end.is_none() && report.delivered >= report.written {
            self.note_receiver(t);
        }
        // An HTTP server answers once it holds the whole request.
        let tr = &mut self.transfers[t];
        if tr.awaiting_response && report.delivered >= tr.size {
            tr.awaiting_response = false;
            self.start_response(t);
        }
        if report.end.is_some() {
            self.close_stream(id, s);
        }
    }

    /// The server of HTTP request `t` sends its response.
    fn start_response(&mut self, t: usize) {
        let r = &self.transfers[t];
        let (w, client, host) = (r.workload as usize, r.src, r.host);
        let Kind::Http { server, sessions, sizes, .. } = &mut self.workloads[w].kind else { unreachable!("only HTTP requests await a response") };
        let size = sizes.sample(&mut sessions[host as usize].rng);
        let server = *server;
        self.start_transfer(w, server, client, size, host, false);
    }

    /// The bytes the receiver of transfer `t` holds in order, summed over
    /// its streams (each stream's in-order bytes: its blocks are whole).
    pub fn transfer_delivered(&self, t: usize) -> u64 {
        self.streams[self.transfers[t].stream_rows()].iter().map(|r| r.delivered).sum()
    }

    /// The receiver of transfer `t` merges its streams' blocks: the file is
    /// complete the moment their in-order bytes add up to its size.
    fn note_receiver(&mut self, t: usize) {
        if self.transfer_delivered(t) >= self.transfers[t].size {
            self.transfers[t].receiver_end = Some(self.net.now);
        }
    }

    /// Dynamic striping: offer stream `id` of transfer `t` the file's next
    /// blocks (it takes them while its unacknowledged data is under two
    /// windows, or one block); when the file has no more blocks, every
    /// stream's size becomes what it was fed.
    fn feed(&mut self, id: ConnId, t: usize, report: &mut Report) {
        let tr = &mut self.transfers[t];
        let block = tr.block.expect("dynamic");
        let c = self.conns.get_mut(id).expect("live");
        let mut io = FlowIo::new(&mut self.net, id, c.ends);
        let taken = c.app.offer(block, tr.size - tr.assigned, &mut io);
        tr.assigned += taken;
        report.written += taken;
        if tr.assigned < tr.size {
            return;
        }
        // The last block is out: seal every stream of the transfer.
        let rows = tr.stream_rows();
        for (r, finished) in rows.clone().zip(self.seal_streams(rows)) {
            let sid = self.streams[r].id;
            if sid == id {
                if finished {
                    report.end = Some(End::Finished);
                }
            } else if finished {
                self.close_stream(sid, r);
            }
        }
    }

    pub(crate) fn on_workload(&mut self, w: usize, arg: u32) {
        let now = self.net.now;
        let wl = &mut self.workloads[w];
        if now >= wl.stop {
            return;
        }
        let (src, dst, size) = match &mut wl.kind {
            Kind::Transfer { src, dst, size } => (*src, *dst, *size),
            Kind::Poisson { mean_gap_ns, pairs, sizes } => {
                let (a, b) = pairs.draw(&mut wl.pairs_rng);
                let size = sizes.sample(&mut wl.sizes_rng);
                let next = now + Duration(wl.arrivals.exponential(*mean_gap_ns).round() as u64);
                self.net.events.schedule(next, Event::Workload(w as u32, 0));
                (a, b, size)
            }
            Kind::OnOff { hosts, peers, sizes, mean_gap_ns, think } => {
                let h = &mut hosts[arg as usize];
                let others = peers.iter().filter(|&&p| p != h.node).count();
                let k = ((h.rng.uniform() * others as f64) as usize).min(others - 1);
                let peer = *peers.iter().filter(|&&p| p != h.node).nth(k).expect("a peer");
                let size = sizes.sample(&mut h.rng);
                if *think {
                    h.next_due = now + Duration(h.rng.exponential(*mean_gap_ns).round() as u64);
                }
                (h.node, peer, size)
            }
            Kind::Http { server, sessions, request, mean_gap_ns, think, .. } => {
                let h = &mut sessions[arg as usize];
                if *think {
                    h.next_due = now + Duration(h.rng.exponential(*mean_gap_ns).round() as u64);
                }
                let (client, server, request) = (h.node, *server, *request);
                let handshake = wl.handshake;
                // Pages are not subject to call admission (no agent books them).
                let t = self.start_transfer(w, client, server, request, arg, handshake);
                self.transfers[t as usize].awaiting_response = true;
                return;
            }
        };
        let req = self.admit(w as u32, src, dst, size);
        if req.as_ref().is_some_and(|r| !r.admitted) {
            // Refused: an ON/OFF host goes on as if it had completed.
            self.host_next(w, arg);
            return;
        }
        let handshake = self.workloads[w].handshake;
        let t = self.start_transfer(w, src, dst, size, arg, handshake);
        if let Some(r) = req {
            self.admitted(w as u32, &r, t);
        }
    }

    /// What the path from `src` to `dst` offers one transfer alone.
    fn path_info(&mut self, src: u32, dst: u32, mss: u32) -> PathInfo {
        if let Some(p) = self.paths.get(&(src, dst)) {
            return *p;
        }
        let net = &self.net;
        let seg = (mss + TCP_HEADER_BYTES) as u64;
        let mut rtt = Duration::ZERO;
        let mut rate = f64::INFINITY;
        for i in net.path(src, dst) {
            let ifc = &net.ifaces[i as usize];
            rtt = rtt + ifc.delay + ifc.rate.tx_time(seg + ifc.overhead as u64);
            rate = rate.min(ifc.rate.as_bps() as f64 * mss as f64 / (seg + ifc.overhead as u64) as f64);
        }
        for i in net.path(dst, src) {
            let ifc = &net.ifaces[i as usize];
            rtt = rtt + ifc.delay + ifc.rate.tx_time(TCP_HEADER_BYTES as u64 + ifc.overhead as u64);
        }
        let p = PathInfo { rtt, rate_bps: rate };
        self.paths.insert((src, dst), p);
        p
    }

    fn next_port(&mut self, host: u32) -> u16 {
        let p = &mut self.ports[host as usize];
        let port = *p;
        *p = if *p >= EPHEMERAL_HIGH { EPHEMERAL_LOW } else { *p + 1 };
        port
    }

    /// Open the `streams` connections of a new transfer of workload `w`
    /// (each with a three-way handshake if `handshake`); its index.
    fn start_transfer(&mut self, w: usize, src: u32, dst: u32, size: u64, host: u32, handshake: bool) -> u32 {
        let now = self.net.now;
        let (mss, iw, block) = {
            let wl = &self.workloads[w];
            (wl.tcp.mss_bytes, wl.tcp.init_cwnd_pkts, wl.block_bytes)
        };
        // No stream without bytes: at most one per byte, or per block.
        let k = (self.workloads[w].streams as u64).min(block.map_or(size, |b| size.div_ceil(b))).max(1) as u32;
        let path = self.path_info(src, dst, mss);
        let t = self.transfers.len() as u32;
        self.transfers.push(TransferRec {
            workload: w as u32,
            src,
            dst,
            size,
            start: now,
            end: None,
            receiver_end: None,
            streams: k,
            open: k,
            ideal: ideal_fct(size, k, iw, mss, path, handshake),
            host,
            failed: false,
            awaiting_response: false,
            block,
            assigned: 0,
            first_stream: self.streams.len() as u32,
        });
        let wl = &mut self.workloads[w];
        wl.started += 1;
        wl.offered_bytes += size;
        wl.active_conns += k as u64;
        for s in 0..k {
            let wl = &self.workloads[w];
            let (tcp, dscp) = wl.stream(s);
            let mut cfg = tcp.clone();
            // Static stripes: the first `size mod k` one byte longer.
            // Dynamic: a first block each; the rest as they make room.
            let part = match block {
                None => size / k as u64 + ((s as u64) < size % k as u64) as u64,
                Some(b) => b.min(size - self.transfers[t as usize].assigned),
            };
            cfg.size_bytes = Some(part);
            let mut app = BulkTcp::new(&cfg).expect("checked when the workload was built");
            if handshake {
                app = app.with_handshake(Duration(cfg.initial_rto_ns));
            }
            if let Some(rate) = wl.app_rate_bps {
                let chunk = wl.write_bytes;
                let gap = Duration((chunk as u128 * 8 * 1_000_000_000 / rate as u128) as u64);
                app = app.with_writer(AppWriter::new(part, chunk, gap));
            }
            if let Some(b) = block {
                app = app.fed_by_blocks(b, part);
                self.transfers[t as usize].assigned += part;
            }
            let dst_port = wl.dst_port;
            let src_port = self.next_port(src);
            let n = &self.net.nodes;
            let ends = Ends { src, dst, src_ip: n[src as usize].addr, dst_ip: n[dst as usize].addr, proto: PROTO_TCP, dscp, src_port, dst_port };
            let rec = self.streams.len() as u32;
            let id = self.conns.insert(Conn { ends, app: Box::new(app), owner: Owner::Stream(rec) });
            self.net.open_slot(id);
            self.conns_opened += 1;
            self.streams.push(StreamRec {
                transfer: t,
                stream: s,
                id,
                src_port,
                size: part,
                start: now,
                end: None,
                acked: 0,
                delivered: 0,
                retransmits: 0,
                resent: 0,
                spurious: 0,
                timeouts: 0,
                failed: false,
                prev_delivered: 0,
            });
            self.net.events.schedule(now, Event::Conn(id, FlowTimer::Start));
        }
        // A file that fits the first blocks: every stream is sealed now.
        let tr = &self.transfers[t as usize];
        if tr.block.is_some() && tr.assigned >= tr.size {
            // Just opened, none is done yet.
            self.seal_streams(tr.stream_rows());
        }
        t
    }

    /// No more blocks: the streams of these rows are done once what they
    /// were fed is acknowledged. Whether each (still open) is done now.
    fn seal_streams(&mut self, rows: std::ops::Range<usize>) -> Vec<bool> {
        let now = self.net.now;
        rows.map(|r| self.conns.get_mut(self.streams[r].id).is_some_and(|c| c.app.seal(now))).collect()
    }

    /// Stream `s` (connection `id`) finished or gave up: record it, free its
    /// slot, and complete its transfer with its last stream.
    fn close_stream(&mut self, id: ConnId, s: usize) {
        let now = self.net.now;
        let c = self.conns.remove(id).expect("a live connection");
        let k = c.app.counters().expect("a transfer's stream is TCP");
        let r = &mut self.streams[s];
        r.end = Some(now);
        if self.transfers[r.transfer as usize].block.is_some() {
            r.size = k.written;
        }
        r.acked = k.bytes_acked.min(r.size);
        r.retransmits = k.retransmits;
        r.resent = k.retransmitted_bytes;
        r.spurious = k.spurious_retransmits;
        r.timeouts = k.timeouts;
        r.failed = k.failed;
        let (n, sum) = (k.rtt_samples, k.rtt_sum_ns);
        let delivered = k.delivered;
        r.delivered = delivered;
        let t = &mut self.transfers[r.transfer as usize];
        t.failed |= r.failed;
        t.open -= 1;
        let w = t.workload as usize;
        self.rtt_done[w].0 += n;
        self.rtt_done[w].1 += sum;
        let wl = &mut self.workloads[w];
        wl.active_conns -= 1;
        wl.delivered_done += delivered;
        if t.open > 0 {
            return;
        }
        t.end = Some(now);
        wl.completed += 1;
        let host = t.host;
        // An HTTP session goes idle after its response, or after a request
        // that failed before the server held it; not after a request.
        let page_over = match &wl.kind {
            Kind::Http { server, .. } => t.src == *server || t.awaiting_response,
            _ => true,
        };
        t.awaiting_response = false;
        if page_over {
            self.host_next(w, host);
        }
    }

    /// An ON/OFF host's transfer (an HTTP session's page) completed, or was
    /// refused: it goes idle, then starts its next one.
    fn host_next(&mut self, w: usize, host: u32) {
        let now = self.net.now;
        let wl = &mut self.workloads[w];
        if now >= wl.stop {
            return;
        }
        if let Kind::OnOff { hosts, mean_gap_ns, think, .. } | Kind::Http { sessions: hosts, mean_gap_ns, think, .. } = &mut wl.kind {
            let h = &mut hosts[host as usize];
            let at = if *think { h.next_due.max(now) } else { now + Duration(h.rng.exponential(*mean_gap_ns).round() as u64) };
            self.net.events.schedule(at, Event::Workload(w as u32, host));
        }
    }
}
