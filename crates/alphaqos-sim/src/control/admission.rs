//! Call admission over time-sliced link bookings: the admission control of
//! an advance-reservation circuit service (OSCARS-like), as the third
//! source document's deadline-driven transfers use it.
//!
//! A transfer arrives (from a workload) asking for a rate over an
//! interval: `rate_bps` for `duration_ns` (default: its size at that
//! rate), or, with `deadline_ns`, `size x 8 / deadline x margin` until the
//! deadline. Every link of its path keeps its bookings as a step function
//! of time ([`Bookings`], in `crate::bookings`, shared with the circuit
//! service); the request is admitted if, on every link, the
//! largest booking over its interval plus its rate stays within
//! `capacity_fraction` of the link's rate, and booked for that whole
//! interval; else it is refused (a call loss) and opens no connection. An
//! admitted transfer is policed at its rate at the `edge` router, as the
//! third document's edge router marks a reservation: its base connection
//! (the transfer's first stream) by a policing term placed ahead of the
//! router's filter, green within the rate and red (loss priority high)
//! beyond it, and its other connections (the additional ones, without a
//! reservation) red by a marking term each; the terms go when it completes.
//! With `reservation` it gets its own deadline reservation agent
//! (`deadline.rs`).
//!
//! A booking follows the reservation it stands for: when the transfer
//! completes, what is left of it is released (from then to its end); with
//! `reservation`, every `interval_ns` it is set, from then on, to the rate
//! the transfer's agent reserves now (its base connection's target rate),
//! so that a dynamic reservation's falling rate frees capacity for later
//! requests. A later rise may book a link above its capacity (the deadline
//! agent must finish its transfer); new requests are refused while it is.
//!
//! Bookings are whole bit/s; a booking holds on `[start, end)`.
//!
//! Tests (below): random request sequences never book a link above its
//! capacity at any instant, and the decisions equal a brute-force check of
//! every earlier admitted request; `tests/control.rs` end to end.

use super::deadline::Deadline;
use super::{Agent, Control, Handle, Target, World};
use crate::error::{ConfigError, Whole};
use crate::config::{AdmissionConfig, ColorAction, FilterTermConfig, PolicerConfig};
use crate::metrics::{Column, Table};
use crate::packet::{PROTO_TCP, TCP_HEADER_BYTES};
use crate::time::{Duration, SimTime};
pub use crate::bookings::Bookings;

/// One request for admission.
#[derive(Clone, Debug)]
pub struct Request {
    pub workload: u32,
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub time: SimTime,
    pub rate_bps: u64,
    pub end: SimTime,
    pub admitted: bool,
    /// The transfer's handle, once admitted.
    pub transfer: Option<String>,
    pub agent: String,
}

impl Request {
    pub fn new(workload: u32, src: u32, dst: u32, size: u64, time: SimTime) -> Request {
        Request { workload, src, dst, size, time, rate_bps: 0, end: time, admitted: false, transfer: None, agent: String::new() }
    }
}

pub struct Admission {
    name: String,
    rate_bps: Option<u64>,
    duration: Option<Duration>,
    deadline: Option<Duration>,
    margin: f64,
    fraction: f64,
    edge: Option<u32>,
    burst_bytes: u64,
    wire_factor: f64,
    reservation: bool,
    interval: Duration,
    start: SimTime,
    bookings: Bookings,
    requests: Vec<Request>,
    /// Policing and marking terms of admitted transfers: (router, term, transfer).
    terms: Vec<(u32, String, Handle)>,
    /// Admitted transfers still running: their booking's links, end and rate now.
    live: Vec<Booked>,
    admitted: u64,
}

/// An admitted transfer's booking, as it stands.
struct Booked {
    transfer: Handle,
    links: Vec<(u32, u64)>,
    end: SimTime,
    rate_bps: u64,
}

impl Admission {
    pub fn build(c: &AdmissionConfig, i: usize, sim: &mut dyn World) -> Result<(Admission, u32), ConfigError> {
        let h = sim.handles().resolve(&c.workload).at("workload")?;
        let Target::Workload(w) = *sim.handles().target(h) else {
            return Err(ConfigError::at("workload", format!("'{}' is not a workload", c.workload)));
        };
        match (c.rate_bps, c.duration_ns, c.deadline_ns) {
            (Some(0), _, _) => return Err(ConfigError::at("rate_bps", "must be positive")),
            (_, _, Some(0)) => return Err(ConfigError::at("deadline_ns", "must be positive")),
            (_, Some(0), _) => return Err(ConfigError::at("duration_ns", "must be positive")),
            (Some(_), _, None) | (None, None, Some(_)) => {}
            _ => return Err(ConfigError::new("give rate_bps (and optionally duration_ns), or deadline_ns")),
        }
        if !(c.margin >= 1.0 && c.margin.is_finite()) {
            return Err(ConfigError::at("margin", format!("must be at least 1, got {}", c.margin)));
        }
        if !(c.capacity_fraction > 0.0 && c.capacity_fraction <= 1.0) {
            return Err(ConfigError::at("capacity_fraction", format!("must be in (0, 1], got {}", c.capacity_fraction)));
        }
        if c.interval_ns == 0 {
            return Err(ConfigError::at("interval_ns", "must be positive"));
        }
        let edge = match &c.edge {
            None => None,
            Some(n) => {
                let (id, router) = sim.node(n).ok_or_else(|| ConfigError::at("edge", format!("unknown node '{n}'")))?;
                if !router {
                    return Err(ConfigError::at("edge", format!("'{n}' is a host; policers run on routers")));
                }
                Some(id)
            }
        };
        if c.reservation && c.deadline_ns.is_none() {
            return Err(ConfigError::at("reservation", "needs deadline_ns"));
        }
        let wl = sim.workload_info(w);
        let base_cc = &wl.base_cc;
        if c.reservation && base_cc != "base_flow" {
            return Err(ConfigError::at(
                "reservation",
                format!("the reservation sets ctr_bps, which needs the base_flow congestion control on the first stream (it uses {base_cc})"),
            ));
        }
        let mss = wl.mss_bytes as f64;
        let a = Admission {
            name: c.name.clone().unwrap_or_else(|| format!("call_admission[{i}]")),
            rate_bps: c.rate_bps,
            duration: c.duration_ns.map(Duration),
            deadline: c.deadline_ns.map(Duration),
            margin: c.margin,
            fraction: c.capacity_fraction,
            edge,
            burst_bytes: c.burst_bytes.unwrap_or(64 * 1024),
            wire_factor: (mss + TCP_HEADER_BYTES as f64) / mss,
            reservation: c.reservation,
            interval: Duration(c.interval_ns),
            start: wl.start,
            bookings: Bookings::default(),
            requests: Vec::new(),
            terms: Vec::new(),
            live: Vec::new(),
            admitted: 0,
        };
        Ok((a, w))
    }

    /// The rate and interval end a request asks for.
    fn ask(&self, size: u64, now: SimTime) -> (u64, SimTime) {
        match (self.deadline, self.rate_bps) {
            (Some(d), _) => ((size as f64 * 8e9 / d.as_nanos() as f64 * self.margin).ceil() as u64, now + d),
            (None, Some(r)) => {
                let d = self.duration.unwrap_or_else(|| Duration((size as u128 * 8_000_000_000).div_ceil(r as u128) as u64));
                (r, now + d)
            }
            (None, None) => unreachable!("checked when built"),
        }
    }
}

impl Agent for Admission {
    fn name(&self) -> &str {
        &self.name
    }
    fn first_wake(&self) -> Option<SimTime> {
        Some(self.start + self.interval)
    }
    /// Release the bookings of completed transfers, follow the reservations
    /// of running ones, and remove the terms of completed transfers.
    fn on_timer(&mut self, now: SimTime, ctl: &mut Control) -> Option<SimTime> {
        let t = now.as_nanos();
        for b in std::mem::take(&mut self.live) {
            let done = ctl.get(b.transfer, "done").unwrap_or(0.0) == 1.0;
            let rate = if done {
                0
            } else if self.reservation {
                ctl.get(b.transfer, "ctr_bps").map_or(b.rate_bps, |r| r.round() as u64)
            } else {
                b.rate_bps
            };
            self.bookings.change(&b.links, t, b.end.as_nanos(), rate as i128 - b.rate_bps as i128);
            if !done && t < b.end.as_nanos() {
                self.live.push(Booked { rate_bps: rate, ..b });
            }
        }
        let mut keep = Vec::new();
        for (node, term, h) in std::mem::take(&mut self.terms) {
            if ctl.get(h, "done").unwrap_or(0.0) == 1.0 {
                ctl.remove_term(node, &term);
            } else {
                keep.push((node, term, h));
            }
        }
        self.terms = keep;
        Some(now + self.interval)
    }
    fn on_request(&mut self, req: &mut Request, ctl: &mut Control) -> bool {
        let (rate, end) = self.ask(req.size, req.time);
        let links: Vec<(u32, u64)> = ctl.path_rates(req.src, req.dst).into_iter().map(|(l, r)| (l, (r as f64 * self.fraction).floor() as u64)).collect();
        let ok = self.bookings.fits(&links, req.time.as_nanos(), end.as_nanos(), rate);
        if ok {
            self.bookings.book(&links, req.time.as_nanos(), end.as_nanos(), rate);
            self.live.push(Booked { transfer: Handle::MAX, links, end, rate_bps: rate });
        }
        req.rate_bps = rate;
        req.end = end;
        req.admitted = ok;
        req.agent = self.name.clone();
        self.requests.push(req.clone());
        ok
    }
    fn on_admitted(&mut self, req: &Request, h: Handle, ctl: &mut Control) {
        let name = ctl.handle_name(h).to_string();
        if let Some(r) = self.requests.last_mut() {
            r.transfer = Some(name.clone());
        }
        if let Some(b) = self.live.last_mut().filter(|b| b.transfer == Handle::MAX) {
            b.transfer = h;
        }
        let k = self.admitted;
        self.admitted += 1;
        let mut policer = None;
        if let Some(node) = self.edge {
            let ports = ctl.transfer_ports(h);
            let ip = |n: u32| {
                let a = ctl.node_addr(n);
                format!("{}.{}.{}.{}/32", a >> 24, a >> 16 & 255, a >> 8 & 255, a & 255)
            };
            let term = format!("{}-{k}", self.name);
            // The base connection (the first stream): green within the
            // reservation, red beyond it.
            let base = FilterTermConfig {
                name: term.clone(),
                src: Some(ip(req.src)),
                dst: Some(ip(req.dst)),
                proto: Some(PROTO_TCP),
                src_port: ports.first().map(|&p| (p, p)),
                dst_port: None,
                dscp: None,
                loss_priority: None,
                fclass: None,
                policer: Some(PolicerConfig {
                    rate_bps: Some((req.rate_bps as f64 * self.wire_factor).ceil() as u64),
                    burst_bytes: Some(self.burst_bytes),
                    out_of_profile: Some(ColorAction::LossPriorityHigh),
                    ..Default::default()
                }),
                discard: false,
            };
            // Every other connection has no reservation: red.
            let extra: Vec<FilterTermConfig> = ports
                .iter()
                .enumerate()
                .skip(1)
                .map(|(s, &p)| FilterTermConfig { name: format!("{term}-s{s}"), src_port: Some((p, p)), policer: None, loss_priority: Some(crate::config::LossPriority::High), ..base.clone() })
                .collect();
            for cfg in extra.iter().chain(std::iter::once(&base)) {
                ctl.add_policer_term(node, cfg).expect("a valid policing term");
                self.terms.push((node, cfg.name.clone(), h));
            }
            let th = ctl.handle(&format!("{}/{term}", ctl.node_name(node))).expect("just added");
            policer = Some(th);
        }
        if self.reservation {
            let d = self.deadline.expect("checked when built");
            let agent = Deadline::new(format!("{}/{name}", self.name), h, d, self.margin, self.interval, policer, self.wire_factor, ctl);
            ctl.spawn(Box::new(agent), req.time + Duration(1_000));
        }
    }
    fn report(&self, out: &mut super::Reports) {
        out.admission.extend(self.requests.iter().cloned());
    }
}

/// The `admission` table: one row per request.
pub fn request_table(r: &[Request]) -> Table {
    Table::default()
        .with("agent", Column::Str(r.iter().map(|x| x.agent.clone()).collect()))
        .with("time_ns", Column::U64(r.iter().map(|x| x.time.as_nanos()).collect()))
        .with("size_bytes", Column::U64(r.iter().map(|x| x.size).collect()))
        .with("rate_bps", Column::U64(r.iter().map(|x| x.rate_bps).collect()))
        .with("end_ns", Column::U64(r.iter().map(|x| x.end.as_nanos()).collect()))
        .with("admitted", Column::U64(r.iter().map(|x| x.admitted as u64).collect()))
        .with("transfer_handle", Column::Str(r.iter().map(|x| x.transfer.clone().unwrap_or_default()).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn bookings_never_exceed_capacity_and_refuse_exactly_what_does_not_fit() {
        let mut rng = Rng::stream(5, "admission-prop");
        for case in 0..300 {
            let caps: Vec<(u32, u64)> = (0..4).map(|l| (l, 1 + rng.next_u64() % 10_000)).collect();
            let mut b = Bookings::default();
            let mut admitted: Vec<(Vec<(u32, u64)>, u64, u64, u64)> = Vec::new();
            for _ in 0..60 {
                // A random path (a non-empty subset of the links), interval, rate.
                let path: Vec<(u32, u64)> = caps.iter().copied().filter(|_| rng.uniform() < 0.6).collect();
                let path = if path.is_empty() { vec![caps[0]] } else { path };
                let start = rng.next_u64() % 1000;
                let end = start + 1 + rng.next_u64() % 300;
                let rate = 1 + rng.next_u64() % 5_000;
                // Brute force: the booked rate at every integer instant of the interval.
                let fits = path.iter().all(|&(l, cap)| {
                    (start..end).all(|t| {
                        let used: u64 = admitted
                            .iter()
                            .filter(|(p, s, e, _)| p.iter().any(|x| x.0 == l) && *s <= t && t < *e)
                            .map(|x| x.3)
                            .sum();
                        used + rate <= cap
                    })
                });
                assert_eq!(b.fits(&path, start, end, rate), fits, "case {case}");
                if fits {
                    b.book(&path, start, end, rate);
                    admitted.push((path, start, end, rate));
                }
            }
            // Never above capacity at any instant.
            for &(l, cap) in &caps {
                for t in 0..1400 {
                    assert!(b.peak(l, t, t + 1) <= cap, "case {case}: link {l} at {t}");
                }
            }
        }
    }
}
