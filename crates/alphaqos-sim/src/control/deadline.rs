//! Deadline reservation: the third source document's deadline-driven
//! transfer keeps its reservation just large enough.
//!
//! Every interval (default 50 ms) the agent sets the transfer's
//! reservation to
//!
//! ```text
//! R = (bytes left) x 8 / (time to deadline) x margin
//! ```
//!
//! (at most the bottleneck rate of its path; the whole path rate once the
//! deadline has passed), where the deadline is taken one interval early (the
//! last bytes are acknowledged a round trip after they leave, and the next
//! correction comes an interval later), applies it to the base connection's committed
//! target rate (`ctr_bps` of `base_flow`, split over the transfer's
//! streams) and, if given, to the edge policer's rate (`rate_bps` or
//! `cir_bps`), raised by the headers' share (`(MSS + 52) / MSS`: the
//! policer counts IP bytes, the target rate payload). It stops when the
//! transfer completes. It reports the reservation at every step (the
//! `reservation` table) and, per transfer, the integral of the reserved
//! rate over the transfer, its mean, and whether the deadline was met
//! (`reservation_summary`).
//!
//! Parameters: `transfer` ("workload#k", or a workload's name for its
//! first transfer), `deadline_ns` (from the transfer's start), `margin`
//! (1.05), `interval_ns` (50 ms), `policer` ("node/term").
//!
//! Tests: `tests/control.rs` (a feasible deadline met with a mean
//! reservation at most 1.1 x size / deadline on a path with CBR background).

use super::{Agent, Control, Handle, Target, World};
use crate::error::{ConfigError, Whole};
use crate::config::DeadlineConfig;
use crate::metrics::{Column, Table};
use crate::packet::TCP_HEADER_BYTES;
use crate::time::{Duration, SimTime};

/// One deadline agent's account of its transfer.
#[derive(Clone, Debug)]
pub struct Summary {
    pub agent: String,
    pub transfer: String,
    pub start: Option<SimTime>,
    pub deadline: Duration,
    pub end: Option<SimTime>,
    /// Integral of the reservation over the transfer, bits.
    pub reserved_bits: f64,
}

pub struct Deadline {
    name: String,
    transfer: Handle,
    /// The transfer's handle name.
    label: String,
    deadline: Duration,
    margin: f64,
    interval: Duration,
    policer: Option<(Handle, &'static str)>,
    wire_factor: f64,
    first: SimTime,
    start: Option<SimTime>,
    cap_bps: f64,
    /// The reservation in force and since when.
    last: Option<(SimTime, f64)>,
    reserved_bits: f64,
    series: Vec<(SimTime, f64)>,
    end: Option<SimTime>,
}

impl Deadline {
    pub fn build(c: &DeadlineConfig, i: usize, sim: &mut dyn World) -> Result<Deadline, ConfigError> {
        let name = if c.transfer.contains('#') { c.transfer.clone() } else { format!("{}#0", c.transfer) };
        let h = sim.handles().resolve(&name).at("transfer")?;
        let Target::Transfer(w, _) = *sim.handles().target(h) else {
            return Err(ConfigError::at("transfer", format!("'{}' is not a workload's transfer", c.transfer)));
        };
        sim.check_knob(h, "ctr_bps").at("transfer")?;
        if c.deadline_ns == 0 {
            return Err(ConfigError::at("deadline_ns", "must be positive"));
        }
        if !(c.margin >= 1.0 && c.margin.is_finite()) {
            return Err(ConfigError::at("margin", format!("must be at least 1, got {}", c.margin)));
        }
        if c.interval_ns == 0 {
            return Err(ConfigError::at("interval_ns", "must be positive"));
        }
        let policer = match &c.policer {
            None => None,
            Some(p) => {
                let ph = sim.handles().resolve(p).at("policer")?;
                let knob = ["rate_bps", "cir_bps"].into_iter().find(|k| sim.check_knob(ph, k).is_ok());
                Some((ph, knob.ok_or_else(|| ConfigError::at("policer", format!("'{p}' has no policer with rate_bps or cir_bps")))?))
            }
        };
        let wl = sim.workload_info(w);
        let mss = wl.mss_bytes as f64;
        let mut d = Deadline::with(
            c.name.clone().unwrap_or_else(|| format!("deadline_reservation[{i}]")),
            h,
            Duration(c.deadline_ns),
            c.margin,
            Duration(c.interval_ns),
            (mss + TCP_HEADER_BYTES as f64) / mss,
        );
        d.policer = policer;
        d.label = name;
        // Just after the workload starts its transfer.
        d.first = wl.start + Duration(1_000);
        Ok(d)
    }

    fn with(name: String, transfer: Handle, deadline: Duration, margin: f64, interval: Duration, wire_factor: f64) -> Deadline {
        Deadline {
            name,
            transfer,
            label: String::new(),
            deadline,
            margin,
            interval,
            policer: None,
            wire_factor,
            first: SimTime::ZERO,
            start: None,
            cap_bps: f64::INFINITY,
            last: None,
            reserved_bits: 0.0,
            series: Vec::new(),
            end: None,
        }
    }

    /// An agent for a transfer that already exists (started by admission).
    #[allow(clippy::too_many_arguments)]
    pub fn new(name: String, transfer: Handle, deadline: Duration, margin: f64, interval: Duration, policer: Option<Handle>, wire_factor: f64, ctl: &mut Control) -> Deadline {
        let mut d = Deadline::with(name, transfer, deadline, margin, interval, wire_factor);
        d.label = ctl.handle_name(transfer).to_string();
        d.policer = policer.map(|h| (h, "rate_bps"));
        d
    }

    /// Account for the reservation in force up to `t`.
    fn integrate(&mut self, t: SimTime) {
        if let Some((since, r)) = self.last {
            self.reserved_bits += r * t.since(since).as_secs_f64();
        }
    }
}

impl Agent for Deadline {
    fn name(&self) -> &str {
        &self.name
    }
    fn first_wake(&self) -> Option<SimTime> {
        Some(self.first)
    }
    fn on_timer(&mut self, now: SimTime, ctl: &mut Control) -> Option<SimTime> {
        let h = self.transfer;
        let Ok(start) = ctl.get(h, "start_ns") else {
            return Some(now + self.interval); // not started yet
        };
        let start = SimTime(start as u64);
        if self.start.is_none() {
            self.start = Some(start);
            let (src, dst) = ctl.transfer_ends(h).expect("a started transfer");
            self.cap_bps = ctl.path_rates(src, dst).iter().map(|x| x.1 as f64).fold(f64::INFINITY, f64::min) / self.wire_factor;
        }
        if ctl.get(h, "done").expect("a transfer") == 1.0 {
            let end = SimTime(ctl.get(h, "end_ns").expect("a transfer") as u64);
            self.integrate(end);
            self.end = Some(end);
            return None;
        }
        let left = ctl.get(h, "bytes_left").expect("a transfer");
        // Aim one interval ahead of the deadline: the last bytes are
        // acknowledged a round trip after they are sent, and the next
        // correction comes an interval later.
        let due = start + Duration(self.deadline.as_nanos().saturating_sub(self.interval.as_nanos()));
        let r = if now < due {
            // R = (bytes left) x 8 / (time to deadline) x margin.
            (left * 8.0 / due.since(now).as_secs_f64() * self.margin).min(self.cap_bps)
        } else {
            self.cap_bps
        };
        let r = r.round().max(1000.0);
        self.integrate(now);
        self.last = Some((now, r));
        self.series.push((now, r));
        ctl.set(h, "ctr_bps", r).expect("checked when built");
        if let Some((p, knob)) = self.policer {
            ctl.set(p, knob, (r * self.wire_factor).round()).expect("a policer's rate");
        }
        Some(now + self.interval)
    }
    fn report(&self, out: &mut super::Reports) {
        let t = self.label.clone();
        for &(time, r) in &self.series {
            out.reservation.push((self.name.clone(), time, t.clone(), r));
        }
        out.reservation_summary.push(Summary {
            agent: self.name.clone(),
            transfer: t,
            start: self.start,
            deadline: self.deadline,
            end: self.end,
            reserved_bits: self.reserved_bits,
        });
    }
}

/// The `reservation_summary` table: one row per deadline agent.
pub fn summary_table(s: &[Summary]) -> Table {
    let mean = |x: &Summary| match (x.start, x.end) {
        (Some(a), Some(b)) if b > a => Some((x.reserved_bits / b.since(a).as_secs_f64()).round() as u64),
        _ => None,
    };
    Table::default()
        .with("agent", Column::Str(s.iter().map(|x| x.agent.clone()).collect()))
        .with("transfer_handle", Column::Str(s.iter().map(|x| x.transfer.clone()).collect()))
        .with("start_ns", Column::OptU64(s.iter().map(|x| x.start.map(|t| t.as_nanos())).collect()))
        .with("deadline_ns", Column::U64(s.iter().map(|x| x.deadline.as_nanos()).collect()))
        .with("end_ns", Column::OptU64(s.iter().map(|x| x.end.map(|t| t.as_nanos())).collect()))
        .with("met", Column::U64(s.iter().map(|x| matches!((x.start, x.end), (Some(a), Some(b)) if b <= a + x.deadline) as u64).collect()))
        .with("reserved_bits", Column::F64(s.iter().map(|x| x.reserved_bits).collect()))
        .with("mean_reservation_bps", Column::OptU64(s.iter().map(mean).collect()))
}
