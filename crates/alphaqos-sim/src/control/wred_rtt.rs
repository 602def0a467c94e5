//! RTT-tuned WRED: the fifth source document's control loop.
//!
//! C. Bouras, A. Sevasti, "Performance enhancement of an AF service using
//! TCP-friendly marking and RTT-based WRED" (seed 004), Section 4: the
//! maximum threshold of the class's WRED is the bandwidth-delay product of
//! the class,
//!
//! ```text
//! max_th = r x RTT / (MTU x 8)        (equation 2, packets)
//! ```
//!
//! with `r` the class's service rate (bit/s) and RTT the mean round-trip
//! time of the class's TCP traffic, re-computed every 50 ms; `min_th =
//! 0.15 max_th` and `max_p = 0.2` (Section 5.1). Equation 3 says the mean
//! queue should then stay within 0.2-0.25 of `r RTT / (MTU 8)`.
//!
//! Here RTT is the mean of the RTT samples the class's TCP senders took
//! over the last interval (the difference of their `rtt_sum_ns` over the
//! difference of their `rtt_samples`); an interval without a sample leaves
//! the thresholds as they are. Thresholds are set so that `min_th <
//! max_th` holds after each change (the larger one first when growing).
//!
//! Per colour. The document tunes one curve; a per-colour profile (WRED
//! with green, yellow and red curves, RIO, GRED) has one per colour. Each
//! curve keeps its own place relative to the first (green) one: equation 2
//! gives the first curve's `max_th`, each other curve's `max_th` is that
//! times the ratio of the two curves' configured `max_th`, and the
//! `min_th = min_fraction max_th` rule applies to every curve alike (a
//! 60/40/20 profile stays 3:2:1). `max_p`, when the agent is given one, is
//! set on every curve; otherwise the first curve takes the document's 0.2
//! and the others keep their own. A profile of one curve is tuned through
//! the plain knobs (`max_th`, ...), one of several through each colour's
//! (`max_th.yellow`, ...), so that `control.parquet` logs every curve it
//! changes, with its old and new value.
//!
//! Parameters: `class` (handle of a class or RED interface), `traffic`
//! (flows and workloads), `interval_ns` (50 ms), `max_p` (see above),
//! `min_fraction` (0.15), `rate_bps` (default the class's transmit rate,
//! else the link's), `mtu_bytes` (default the link's).
//!
//! Tests: `tests/control.rs` (the thresholds against equation 2 by hand,
//! the mean queue on the document's first set-up, a per-colour WRED kept
//! in proportion), and the Python controller that reproduces this agent
//! bit for bit (`tests/test_control.py`).

use super::{Agent, Control, Handle, Target, World};
use crate::error::{ConfigError, Whole};
use crate::config::{WredRttConfig, DEFAULT_WRED_MAX_P};
use crate::knob::COLORS;
use crate::time::{Duration, SimTime};

pub struct WredRtt {
    name: String,
    class: Handle,
    traffic: Vec<Handle>,
    interval: Duration,
    /// The curves tuned: (knob suffix, "" for a one-curve profile or
    /// ".green" etc., max_th relative to the first curve's).
    curves: Vec<(String, f64)>,
    max_p: Option<f64>,
    min_fraction: f64,
    rate_bps: f64,
    mtu_bytes: f64,
    /// RTT samples and their sum at the last wake.
    prev: (u64, u64),
    started: bool,
}

impl WredRtt {
    pub fn build(c: &WredRttConfig, i: usize, sim: &mut dyn World) -> Result<WredRtt, ConfigError> {
        if c.interval_ns == 0 {
            return Err(ConfigError::at("interval_ns", "must be positive"));
        }
        if let Some(p) = c.max_p.filter(|p| !(*p > 0.0 && *p <= 1.0)) {
            return Err(ConfigError::at("max_p", format!("must be in (0, 1], got {p}")));
        }
        if !(0.0..1.0).contains(&c.min_fraction) {
            return Err(ConfigError::at("min_fraction", format!("must be in [0, 1), got {}", c.min_fraction)));
        }
        let class = sim.handles().resolve(&c.class).at("class")?;
        let iface = match *sim.handles().target(class) {
            Target::Iface(i) | Target::Class(i, _) => i,
            _ => return Err(ConfigError::at("class", format!("'{}' is not a class or an interface", c.class))),
        };
        for k in ["min_th", "max_th", "max_p"] {
            sim.check_knob(class, k).at("class")?;
        }
        // The profile's curves, by colour, and their max_th.
        let found: Vec<(String, f64)> =
            COLORS.iter().filter_map(|c| sim.get(class, &format!("max_th.{c}")).ok().map(|m| (format!(".{c}"), m))).collect();
        let curves = match found.as_slice() {
            [] | [_] => vec![(String::new(), 1.0)],
            [(_, first), ..] => found.iter().map(|(s, m)| (s.clone(), m / first)).collect(),
        };
        if c.traffic.is_empty() {
            return Err(ConfigError::at("traffic", "name at least one flow or workload"));
        }
        let mut traffic = Vec::new();
        for (j, t) in c.traffic.iter().enumerate() {
            let traffic_err = |msg: String| ConfigError::at(j, msg).with_outer("traffic");
            let h = sim.handles().resolve(t).map_err(|e| traffic_err(e.to_string()))?;
            if !matches!(sim.handles().target(h), Target::Flow(_) | Target::Workload(_)) {
                return Err(traffic_err(format!("'{t}' is not a flow or a workload")));
            }
            sim.check_knob(h, "rtt_samples").map_err(|e| traffic_err(format!("{e} (only TCP traffic has RTT samples)")))?;
            traffic.push(h);
        }
        let (link_rate, link_mtu) = sim.iface_rate_mtu(iface);
        let rate_bps = match c.rate_bps {
            Some(0) => return Err(ConfigError::at("rate_bps", "must be positive")),
            Some(r) => r as f64,
            None => sim.get(class, "transmit_rate_bps").unwrap_or(link_rate as f64),
        };
        let name = c.name.clone().unwrap_or_else(|| format!("wred_rtt_tuning[{i}]"));
        Ok(WredRtt {
            name,
            class,
            traffic,
            interval: Duration(c.interval_ns),
            curves,
            max_p: c.max_p,
            min_fraction: c.min_fraction,
            rate_bps,
            mtu_bytes: c.mtu_bytes.unwrap_or(link_mtu) as f64,
            prev: (0, 0),
            started: false,
        })
    }
}

impl Agent for WredRtt {
    fn name(&self) -> &str {
        &self.name
    }
    fn first_wake(&self) -> Option<SimTime> {
        Some(SimTime::ZERO + self.interval)
    }
    fn on_timer(&mut self, now: SimTime, ctl: &mut Control) -> Option<SimTime> {
        let set = |ctl: &mut Control, knob: &str, v: f64| ctl.set(self.class, knob, v).expect("checked when built");
        if !self.started {
            self.started = true;
            // Every curve the agent's max_p, or the first the document's.
            let n = if self.max_p.is_some() { self.curves.len() } else { 1 };
            for (s, _) in &self.curves[..n] {
                set(ctl, &format!("max_p{s}"), self.max_p.unwrap_or(DEFAULT_WRED_MAX_P));
            }
        }
        let (mut n, mut sum) = (0u64, 0u64);
        for &h in &self.traffic {
            n += ctl.get(h, "rtt_samples").expect("checked when built") as u64;
            sum += ctl.get(h, "rtt_sum_ns").expect("checked when built") as u64;
        }
        let (dn, ds) = (n - self.prev.0, sum - self.prev.1);
        self.prev = (n, sum);
        if dn > 0 {
            // Equation 2: max_th = r x RTT / (MTU x 8), RTT in seconds.
            let rtt_s = ds as f64 / dn as f64 / 1e9;
            let first = self.rate_bps * rtt_s / (self.mtu_bytes * 8.0);
            for (s, ratio) in &self.curves {
                let max_th = first * ratio;
                let min_th = self.min_fraction * max_th;
                let (min_k, max_k) = (format!("min_th{s}"), format!("max_th{s}"));
                let old_max = ctl.get(self.class, &max_k).expect("checked when built");
                if max_th > old_max {
                    set(ctl, &max_k, max_th);
                    set(ctl, &min_k, min_th);
                } else {
                    set(ctl, &min_k, min_th);
                    set(ctl, &max_k, max_th);
                }
            }
        }
        Some(now + self.interval)
    }
}
