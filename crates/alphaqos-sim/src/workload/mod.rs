//! Workloads: traffic that opens TCP connections at run time.
//!
//! A *transfer* is a file of N bytes from one host to another over k
//! parallel TCP connections (GridFTP-style striping: the file is cut into
//! k stripes of N/k bytes, the first N mod k one byte longer), done when the
//! last byte of every stripe is acknowledged. A workload creates transfers:
//!
//! - `transfer`: one transfer at the workload's start;
//! - `poisson`: transfers arriving as a Poisson process (exponential gaps of
//!   mean 1/rate; a target load L in bit/s gives rate = L / (8 E[size])),
//!   each between a pair of hosts drawn uniformly from all ordered pairs of
//!   a list, a list of pairs, or one host of a group to one of another;
//! - `onoff`: web-like sources. Each host alternates between a transfer to a
//!   peer drawn uniformly (never itself) and an idle time. With
//!   `idle_mean_ns` the idle time is exponential and starts when the
//!   transfer completes (the classic ON/OFF source). With `mean_rate_bps`
//!   the gap is a think time of mean E[size] 8 / rate measured from the
//!   start of the previous transfer, and a transfer still running when its
//!   successor is due delays it until it completes: the offered rate is the
//!   target as long as transfers are shorter than the gaps. Each host's
//!   first transfer starts after one such gap, so the hosts do not start in
//!   step.
//!
//! - `http`: browsing sessions fetching pages from one server. Each
//!   session (there are `sessions` per client host) alternates a think time
//!   and a page: a request of `request_bytes` (350 B by default, the order
//!   of the median HTTP request of Mah, "An empirical model of HTTP network
//!   traffic", INFOCOM 1997) on a connection opened with a handshake from
//!   the client, then, as soon as the server has received the whole
//!   request, the response, of a size drawn from `response` (heavy-tailed:
//!   Pareto, as in Barford & Crovella's SURGE, "Generating representative
//!   Web workloads", SIGMETRICS 1998), from the server on a connection
//!   without a handshake of its own (it stands for the request's connection
//!   turned round: HTTP/1.0's one connection per object, whose response's
//!   first byte leaves the server 1.5 round trips after the client's SYN, as
//!   here). Think times are exponential: with `think_mean_ns` measured from
//!   the end of the response (the classic ON/OFF user), or with
//!   `mean_rate_bps` (the workload's whole offered response rate, split
//!   evenly over the sessions) between page starts, as the `onoff` sources'
//!   think-time mode does. Requests and responses are both transfers of the
//!   workload; a response is one whose source is the server.
//!
//! Sizes come from [`dist::Sizes`]. Every random choice of a workload draws
//! from its own stream: arrivals ("workload:<name>:arrivals"), sizes
//! (":sizes"), pairs (":pairs"); an ON/OFF host from ("workload:<name>:<host>"),
//! so that adding a host or a workload does not perturb another's draws.
//!
//! The completion time of each transfer is compared with [`ideal_fct`], the
//! time it would take alone on an idle path: the handshake's round trip,
//! slow start from the initial window doubling every round trip, then the
//! rest at the bottleneck's rate, plus a round trip for the last ACK. The
//! ratio is the slowdown.
//!
//! Tests: below (the ideal time against hand arithmetic); `tests/workload.rs`
//! (a single transfer against [`ideal_fct`], k streams sharing fairly,
//! application-limited writing, offered load of arrivals and ON/OFF
//! sources, completion times against processor sharing).

pub mod dist;
pub mod transfers;

use crate::conn::ConnId;
use crate::error::{ConfigError, Outer};
use crate::config::{Striping, HttpConfig, OnOffConfig, PairsConfig, PoissonArrivalsConfig, TcpConfig, WorkloadConfig};
use crate::rng::Rng;
use crate::time::{Duration, SimTime};
use dist::Sizes;

/// Which hosts a transfer joins (node indices).
#[derive(Clone, Debug)]
pub enum Pairs {
    All(Vec<u32>),
    List(Vec<(u32, u32)>),
    Groups(Vec<u32>, Vec<u32>),
}

impl Pairs {
    pub fn draw(&self, rng: &mut Rng) -> (u32, u32) {
        let pick = |n: usize, rng: &mut Rng| ((rng.uniform() * n as f64) as usize).min(n - 1);
        match self {
            Pairs::All(h) => {
                let a = pick(h.len(), rng);
                let mut b = pick(h.len() - 1, rng);
                if b >= a {
                    b += 1;
                }
                (h[a], h[b])
            }
            Pairs::List(l) => l[pick(l.len(), rng)],
            Pairs::Groups(f, t) => {
                let a = f[pick(f.len(), rng)];
                // Never a transfer to itself: draw again among the others.
                let others: Vec<u32> = t.iter().copied().filter(|&x| x != a).collect();
                (a, others[pick(others.len(), rng)])
            }
        }
    }
    /// Every pair that may be drawn.
    pub fn all(&self) -> Vec<(u32, u32)> {
        match self {
            Pairs::All(h) => h.iter().flat_map(|&a| h.iter().filter(move |&&b| b != a).map(move |&b| (a, b))).collect(),
            Pairs::List(l) => l.clone(),
            Pairs::Groups(f, t) => f.iter().flat_map(|&a| t.iter().filter(move |&&b| b != a).map(move |&b| (a, b))).collect(),
        }
    }
}

/// One ON/OFF host.
pub struct OnOffHost {
    pub node: u32,
    pub rng: Rng,
    /// Think-time mode: when the next transfer is due.
    pub next_due: SimTime,
}

pub enum Kind {
    Transfer { src: u32, dst: u32, size: u64 },
    Poisson { mean_gap_ns: f64, pairs: Pairs, sizes: Sizes },
    OnOff { hosts: Vec<OnOffHost>, peers: Vec<u32>, sizes: Sizes, mean_gap_ns: f64, think: bool },
    /// Sessions (`OnOffHost.node` is the client) fetching from `server`.
    Http { server: u32, sessions: Vec<OnOffHost>, request: u64, sizes: Sizes, mean_gap_ns: f64, think: bool },
}

/// A workload's parameters, streams and counters.
pub struct Workload {
    pub name: String,
    /// Its key in the workload series.
    pub key: u32,
    pub tcp: TcpConfig,
    pub handshake: bool,
    pub streams: u32,
    pub start: SimTime,
    pub stop: SimTime,
    pub dscp: u8,
    pub dst_port: u16,
    pub app_rate_bps: Option<u64>,
    pub write_bytes: u64,
    /// Dynamic striping: blocks of this many bytes (None: static stripes).
    pub block_bytes: Option<u64>,
    /// Per stream: its TCP options and DSCP.
    pub stream_tcp: Vec<(TcpConfig, u8)>,
    pub kind: Kind,
    pub arrivals: Rng,
    pub sizes_rng: Rng,
    pub pairs_rng: Rng,
    pub started: u64,
    pub completed: u64,
    pub active_conns: u64,
    /// Bytes of the transfers started so far.
    pub offered_bytes: u64,
    /// Bytes delivered by connections that have ended.
    pub delivered_done: u64,
    /// The cumulative counts at the previous sample.
    pub prev_offered: u64,
    pub prev_delivered: u64,
}

impl Workload {
    /// Build from the configuration; `host` resolves a host name (with the
    /// field path for its error) to a node index.
    pub fn new(
        c: &WorkloadConfig,
        seed: u64,
        duration: SimTime,
        key: u32,
        host: &mut dyn FnMut(&str, &str) -> Result<u32, ConfigError>,
    ) -> Result<Workload, ConfigError> {
        let stream = |what: &str| Rng::stream(seed, &format!("workload:{}:{what}", c.name));
        let kinds = [c.transfer.is_some(), c.poisson.is_some(), c.onoff.is_some(), c.http.is_some()];
        if kinds.iter().filter(|&&k| k).count() != 1 {
            return Err(ConfigError::new("exactly one of transfer, poisson, onoff, http is needed"));
        }
        if c.streams == 0 {
            return Err(ConfigError::at("streams", "at least one connection per transfer"));
        }
        if c.dscp > 63 {
            return Err(ConfigError::at("dscp", format!("{} is not a DiffServ code point (0..63)", c.dscp)));
        }
        let stop = c.stop_ns.map_or(duration, SimTime);
        if c.start_ns >= stop.as_nanos() || stop > duration {
            return Err(ConfigError::new(format!("need start < stop <= duration (start {}, stop {}, duration {duration})", SimTime(c.start_ns), stop)));
        }
        if c.tcp.size_bytes.is_some() {
            return Err(ConfigError::at_path("tcp.size_bytes", "a workload's sizes come from the workload, not from tcp"));
        }
        if c.app_rate_bps == Some(0) {
            return Err(ConfigError::at("app_rate_bps", "must be positive"));
        }
        if c.write_bytes == Some(0) {
            return Err(ConfigError::at("write_bytes", "must be positive"));
        }
        let kind = if let Some(t) = &c.transfer {
            if t.size_bytes == 0 {
                return Err(ConfigError::at_path("transfer.size_bytes", "must be positive"));
            }
            let (src, dst) = (host(&t.src, "transfer.src")?, host(&t.dst, "transfer.dst")?);
            if src == dst {
                return Err(ConfigError::at("transfer", "a transfer needs two different hosts"));
            }
            Kind::Transfer { src, dst, size: t.size_bytes }
        } else if let Some(p) = &c.poisson {
            poisson_kind(p, host)?
        } else if let Some(h) = &c.http {
            http_kind(h, seed, &c.name, host)?
        } else {
            onoff_kind(c.onoff.as_ref().expect("checked"), seed, &c.name, host)?
        };
        let mut tcp = c.tcp.clone();
        tcp.quickack_segments = Some(tcp.quickack_segments.unwrap_or(16));
        let block_bytes = match c.striping {
            Striping::Static => None,
            Striping::Dynamic if c.block_bytes > 0 => Some(c.block_bytes),
            Striping::Dynamic => return Err(ConfigError::at("block_bytes", "must be positive")),
        };
        if c.stream_options.len() > c.streams as usize {
            return Err(ConfigError::at("stream_options", format!("{} entries for {} streams", c.stream_options.len(), c.streams)));
        }
        if c.block_bytes > 0 && block_bytes.is_some() && c.app_rate_bps.is_some() {
            return Err(ConfigError::at("app_rate_bps", "an application-limited sender cannot take dynamic striping"));
        }
        let mut stream_tcp = Vec::new();
        for (i, o) in c.stream_options.iter().enumerate() {
            let mut t = tcp.clone();
            if let Some(cc) = &o.cc {
                t.cc = *cc;
                t.cc_params = o.cc_params.clone().unwrap_or_else(|| serde_json::json!({}));
            } else if let Some(p) = &o.cc_params {
                t.cc_params = p.clone();
            }
            if o.max_pacing_rate_bps.is_some() {
                t.max_pacing_rate_bps = o.max_pacing_rate_bps;
            }
            let dscp = o.dscp.unwrap_or(c.dscp);
            if dscp > 63 {
                return Err(ConfigError::at_path(&format!("stream_options[{i}].dscp"), format!("{dscp} is not a DiffServ code point (0..63)")));
            }
            crate::apps::bulk::BulkTcp::new(&t).outer(i).outer("stream_options")?;
            stream_tcp.push((t, dscp));
        }
        Ok(Workload {
            name: c.name.clone(),
            key,
            write_bytes: c.write_bytes.unwrap_or(tcp.mss_bytes as u64),
            tcp,
            handshake: c.handshake,
            streams: c.streams,
            start: SimTime(c.start_ns),
            stop,
            dscp: c.dscp,
            dst_port: c.dst_port.unwrap_or(5001),
            app_rate_bps: c.app_rate_bps,
            block_bytes,
            stream_tcp,
            kind,
            arrivals: stream("arrivals"),
            sizes_rng: stream("sizes"),
            pairs_rng: stream("pairs"),
            started: 0,
            completed: 0,
            active_conns: 0,
            offered_bytes: 0,
            delivered_done: 0,
            prev_offered: 0,
            prev_delivered: 0,
        })
    }

    /// The TCP options and DSCP of stream `s`.
    pub fn stream(&self, s: u32) -> (&TcpConfig, u8) {
        match self.stream_tcp.get(s as usize) {
            Some((t, d)) => (t, *d),
            None => (&self.tcp, self.dscp),
        }
    }

    /// Every (src, dst) pair this workload may join.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        match &self.kind {
            Kind::Transfer { src, dst, .. } => vec![(*src, *dst)],
            Kind::Poisson { pairs, .. } => pairs.all(),
            Kind::OnOff { hosts, peers, .. } => {
                hosts.iter().flat_map(|h| peers.iter().filter(move |&&p| p != h.node).map(move |&p| (h.node, p))).collect()
            }
            Kind::Http { server, sessions, .. } => sessions.iter().flat_map(|h| [(h.node, *server), (*server, h.node)]).collect(),
        }
    }
}

fn http_kind(h: &HttpConfig, seed: u64, name: &str, host: &mut dyn FnMut(&str, &str) -> Result<u32, ConfigError>) -> Result<Kind, ConfigError> {
    let sizes = Sizes::from_config(&h.response).outer("response").outer("http")?;
    let server = host(&h.server, "http.server")?;
    let clients = nodes(&h.clients, "http.clients", host)?;
    if let Some(i) = clients.iter().position(|&c| c == server) {
        return Err(ConfigError::at_path(&format!("http.clients[{i}]"), format!("'{}' is the server", h.clients[i])));
    }
    if h.sessions == 0 {
        return Err(ConfigError::at_path("http.sessions", "at least one session per client"));
    }
    if h.request_bytes == 0 {
        return Err(ConfigError::at_path("http.request_bytes", "must be positive"));
    }
    let n = clients.len() as u64 * h.sessions as u64;
    let (mean_gap_ns, think) = match (h.think_mean_ns, h.mean_rate_bps) {
        (Some(t), None) => (t as f64, false),
        // Each session offers mean_rate / n: a page every E[size] 8 n / rate.
        (None, Some(r)) if r > 0 => (sizes.mean() * 8.0 * 1e9 * n as f64 / r as f64, true),
        (None, Some(_)) => return Err(ConfigError::at_path("http.mean_rate_bps", "must be positive")),
        _ => return Err(ConfigError::at("http", "give exactly one of think_mean_ns and mean_rate_bps")),
    };
    let mut sessions = Vec::new();
    for (i, &node) in clients.iter().enumerate() {
        for k in 0..h.sessions {
            let rng = Rng::stream(seed, &format!("workload:{name}:{}:{k}", h.clients[i]));
            sessions.push(OnOffHost { node, rng, next_due: SimTime::ZERO });
        }
    }
    Ok(Kind::Http { server, sessions, request: h.request_bytes, sizes, mean_gap_ns, think })
}

fn nodes(names: &[String], key: &str, host: &mut dyn FnMut(&str, &str) -> Result<u32, ConfigError>) -> Result<Vec<u32>, ConfigError> {
    if names.is_empty() {
        return Err(ConfigError::at_path(key, "needs at least one host"));
    }
    names.iter().enumerate().map(|(i, n)| host(n, &format!("{key}[{i}]"))).collect()
}

fn poisson_kind(p: &PoissonArrivalsConfig, host: &mut dyn FnMut(&str, &str) -> Result<u32, ConfigError>) -> Result<Kind, ConfigError> {
    let sizes = Sizes::from_config(&p.size).outer("size").outer("poisson")?;
    let rate = match (p.rate_per_s, p.load_bps) {
        (Some(r), None) => r,
        (None, Some(l)) => l as f64 / (8.0 * sizes.mean()),
        _ => return Err(ConfigError::at("poisson", "give exactly one of rate_per_s and load_bps")),
    };
    if !(rate.is_finite() && rate > 0.0) {
        return Err(ConfigError::at_path("poisson.rate_per_s", format!("must be positive, got {rate}")));
    }
    let pairs = match &p.pairs {
        PairsConfig::All(h) => {
            let h = nodes(h, "poisson.pairs.all", host)?;
            if h.len() < 2 {
                return Err(ConfigError::at_path("poisson.pairs.all", "needs at least two hosts"));
            }
            Pairs::All(h)
        }
        PairsConfig::List(l) => {
            if l.is_empty() {
                return Err(ConfigError::at_path("poisson.pairs.list", "needs at least one pair"));
            }
            let mut out = Vec::new();
            for (i, (a, b)) in l.iter().enumerate() {
                let (a, b) = (host(a, &format!("poisson.pairs.list[{i}][0]"))?, host(b, &format!("poisson.pairs.list[{i}][1]"))?);
                if a == b {
                    return Err(ConfigError::at_path(&format!("poisson.pairs.list[{i}]"), format!("a transfer needs two different hosts")));
                }
                out.push((a, b));
            }
            Pairs::List(out)
        }
        PairsConfig::Groups { from, to } => {
            let (f, t) = (nodes(from, "poisson.pairs.groups.from", host)?, nodes(to, "poisson.pairs.groups.to", host)?);
            if f.iter().any(|a| t.iter().all(|b| b == a)) {
                return Err(ConfigError::at_path("poisson.pairs.groups", "every source needs a destination other than itself"));
            }
            Pairs::Groups(f, t)
        }
    };
    Ok(Kind::Poisson { mean_gap_ns: 1e9 / rate, pairs, sizes })
}

fn onoff_kind(o: &OnOffConfig, seed: u64, name: &str, host: &mut dyn FnMut(&str, &str) -> Result<u32, ConfigError>) -> Result<Kind, ConfigError> {
    let sizes = Sizes::from_config(&o.size).outer("size").outer("onoff")?;
    let hosts = nodes(&o.hosts, "onoff.hosts", host)?;
    let peers = nodes(&o.peers, "onoff.peers", host)?;
    if hosts.iter().any(|h| peers.iter().all(|p| p == h)) {
        return Err(ConfigError::at_path("onoff.peers", "every host needs a peer other than itself"));
    }
    let (mean_gap_ns, think) = match (o.idle_mean_ns, o.mean_rate_bps) {
        (Some(i), None) => (i as f64, false),
        (None, Some(r)) if r > 0 => (sizes.mean() * 8.0 * 1e9 / r as f64, true),
        (None, Some(_)) => return Err(ConfigError::at_path("onoff.mean_rate_bps", "must be positive")),
        _ => return Err(ConfigError::at("onoff", "give exactly one of idle_mean_ns and mean_rate_bps")),
    };
    let hosts = hosts
        .iter()
        .enumerate()
        .map(|(i, &node)| OnOffHost { node, rng: Rng::stream(seed, &format!("workload:{name}:{}", o.hosts[i])), next_due: SimTime::ZERO })
        .collect();
    Ok(Kind::OnOff { hosts, peers, sizes, mean_gap_ns, think })
}

/// What a path offers one transfer alone: its base round trip (propagation
/// both ways, a full segment's serialization on every hop out and an ACK's
/// back) and its bottleneck payload rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathInfo {
    pub rtt: Duration,
    /// Payload bit/s at the bottleneck: the link rate times MSS over the
    /// bytes a full segment occupies on the wire.
    pub rate_bps: f64,
}

/// The completion time of `bytes` over `streams` connections alone on a
/// path: `handshake` adds one round trip; each stream carries its stripe
/// at 1/streams of the rate, starting from `iw` segments and doubling every
/// round trip while the window is below the stream's bandwidth-delay
/// product; the round in which the rest fits sends it at the rate, and the
/// last ACK takes one more round trip. An estimate for the slowdown, not
/// a model of loss: within a round trip of a real idle-path transfer.
pub fn ideal_fct(bytes: u64, streams: u32, iw: u32, mss: u32, path: PathInfo, handshake: bool) -> Duration {
    let k = streams.max(1) as u64;
    let per = bytes.div_ceil(k) as f64;
    let rate = path.rate_bps / k as f64;
    let rtt = path.rtt.as_nanos() as f64;
    let bdp = rate * rtt / 8e9;
    let mut t = if handshake { rtt } else { 0.0 };
    let (mut w, mut sent) = (iw as f64 * mss as f64, 0.0);
    loop {
        let rest = per - sent;
        if rest <= w || w >= bdp {
            t += rest * 8e9 / rate + rtt;
            break;
        }
        sent += w;
        t += rtt;
        w *= 2.0;
    }
    Duration(t.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_time_by_hand() {
        let path = PathInfo { rtt: Duration(10_000_000), rate_bps: 1e9 };
        // 10 segments fit the initial window: serialization + one RTT.
        let t = ideal_fct(14_480, 1, 10, 1448, path, false);
        assert_eq!(t.as_nanos(), (14_480.0f64 * 8.0 + 10_000_000.0) as u64);
        // With the handshake: one more RTT.
        assert_eq!(ideal_fct(14_480, 1, 10, 1448, path, true).as_nanos(), t.as_nanos() + 10_000_000);
        // 30 segments: 10 in round 1, then 20 fit round 2 -> 2 RTT + 20 segments' serialization.
        let t = ideal_fct(30 * 1448, 1, 10, 1448, path, false).as_nanos();
        assert_eq!(t, 20_000_000 + (20.0 * 1448.0 * 8.0) as u64);
        // Huge file: BDP 1.25 MB reached after 7 doublings (14.5 KB -> 1.85 MB).
        let big = 1e9 as u64;
        let t = ideal_fct(big, 1, 10, 1448, path, false).as_nanos() as f64;
        let sent: f64 = (0..7).map(|r| 14_480.0 * 2f64.powi(r)).sum();
        let expect = 7.0 * 1e7 + (1e9 - sent) * 8.0 + 1e7;
        assert!((t - expect).abs() < 2.0, "{t} vs {expect}");
        // Four streams: each a quarter of the file at a quarter of the rate.
        let t4 = ideal_fct(big, 4, 10, 1448, path, false).as_nanos() as f64;
        assert!(t4 > 8.0e9 && t4 < 8.2e9, "{t4}");
    }

    #[test]
    fn pairs_are_never_a_host_to_itself() {
        let mut rng = Rng::stream(1, "p");
        for p in [Pairs::All(vec![1, 2, 3]), Pairs::Groups(vec![1, 2], vec![2, 3])] {
            let all = p.all();
            for _ in 0..1000 {
                let (a, b) = p.draw(&mut rng);
                assert_ne!(a, b);
                assert!(all.contains(&(a, b)));
            }
        }
        // Uniform over the 6 ordered pairs of three hosts.
        let p = Pairs::All(vec![0, 1, 2]);
        let mut n = std::collections::BTreeMap::new();
        for _ in 0..60_000 {
            *n.entry(p.draw(&mut rng)).or_insert(0u32) += 1;
        }
        assert_eq!(n.len(), 6);
        assert!(n.values().all(|&c| (9_400..10_600).contains(&c)), "{n:?}");
    }
}

/// Linux's ephemeral port range (`net.ipv4.ip_local_port_range`).
pub(crate) const EPHEMERAL_LOW: u16 = 32768;
pub(crate) const EPHEMERAL_HIGH: u16 = 60999;

/// One transfer of a workload.
#[derive(Clone, Debug)]
pub struct TransferRec {
    pub workload: u32,
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub start: SimTime,
    pub end: Option<SimTime>,
    /// When the receiver held the whole file in order, whichever streams
    /// carried its blocks (the sender learns it a one-way trip later).
    pub receiver_end: Option<SimTime>,
    pub streams: u32,
    /// Streams still open.
    pub open: u32,
    pub ideal: Duration,
    /// The ON/OFF host index that started it (0 otherwise).
    pub host: u32,
    pub failed: bool,
    /// An HTTP request whose response has not started yet.
    pub awaiting_response: bool,
    /// Dynamic striping: the block size, and the bytes handed out so far.
    pub block: Option<u64>,
    pub assigned: u64,
    /// Its first stream's row in the stream records (the others follow).
    pub first_stream: u32,
}

impl TransferRec {
    /// The rows of its streams in the stream records.
    pub fn stream_rows(&self) -> std::ops::Range<usize> {
        self.first_stream as usize..(self.first_stream + self.streams) as usize
    }
}

/// One connection (stream) of a transfer.
#[derive(Clone, Debug)]
pub struct StreamRec {
    pub transfer: u32,
    pub stream: u32,
    pub id: ConnId,
    pub src_port: u16,
    pub size: u64,
    pub start: SimTime,
    pub end: Option<SimTime>,
    pub acked: u64,
    /// Bytes its receiver delivered in order: as of its last event
    /// ([`Report::delivered`]), final once it ended.
    pub delivered: u64,
    pub retransmits: u64,
    /// Payload bytes sent again, and segments its receiver already had.
    pub resent: u64,
    pub spurious: u64,
    pub timeouts: u64,
    pub failed: bool,
    /// Bytes its receiver had delivered in order at its previous row of
    /// the streams' TCP series.
    pub prev_delivered: u64,
}
