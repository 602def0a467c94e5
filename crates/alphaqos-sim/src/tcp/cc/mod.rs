//! Congestion controllers, one file per algorithm behind [`Controller`], in
//! the manner of smoltcp's `socket/tcp/congestion`. The sender owns loss
//! detection and recovery; a controller decides how the window grows on new
//! ACKs and how far it falls on a loss.

pub mod base_flow;
pub mod bic;
pub mod common;
pub mod cubic;
pub mod highspeed;
pub mod htcp;
pub mod newreno;

use crate::time::{Duration, SimTime};
use crate::error::ConfigError;

/// The window state a controller shapes, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcState {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
}

/// What the sender knows when an ACK acknowledges new data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub now: SimTime,
    /// Bytes newly acknowledged (cumulatively) by this ACK.
    pub acked: u64,
    /// The RTT sample this ACK gave (RFC 7323 timestamps), if any.
    pub rtt: Option<Duration>,
    /// The smallest RTT sample of the connection so far.
    pub min_rtt: Option<Duration>,
    /// Bytes outstanding before this ACK.
    pub in_flight: u64,
    /// The cumulative ACK (the new snd_una) and the highest byte sent plus
    /// one: a controller that works in rounds (HyStart) ends a round when
    /// `snd_una` passes the `snd_max` it noted at the round's start.
    pub snd_una: u64,
    pub snd_max: u64,
    /// The window limited sending (RFC 7661; Linux `tcp_is_cwnd_limited`):
    /// controllers grow cwnd only then.
    pub cwnd_limited: bool,
    /// The socket's pacing as Linux 5.7+ shows it to CUBIC's HyStart, in
    /// slow start (where HyStart runs); None outside it and for hosts that
    /// are not Linux 6 (HyStart then halves delay_min).
    pub pacing: Option<SockPacing>,
}

/// What Linux's `hystart_update` reads of the socket's pacing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockPacing {
    /// `sk_pacing_status != SK_PACING_NONE`: the socket paces (internal
    /// pacing, a maximum pacing rate, or fq).
    pub paced: bool,
    /// `sk_pacing_rate`, bytes/s; Linux computes it whether the socket paces
    /// or not (`tcp_update_pacing_rate`); 0 before the first RTT sample.
    pub rate: u64,
    /// `sk_gso_max_size`, bytes.
    pub gso_max: u64,
}

impl SockPacing {
    /// `hystart_ack_delay`: room for TSO/GRO batching in the ACK-train
    /// threshold, `min(1 ms, 4 gso_max_size / sk_pacing_rate)`, whole
    /// microseconds as the kernel computes it; 0 without a pacing rate.
    pub fn hystart_ack_delay(&self) -> Duration {
        if self.rate == 0 {
            return Duration::ZERO;
        }
        let us = (self.gso_max as u128 * 4 * 1_000_000 / self.rate as u128).min(1000) as u64;
        Duration::from_micros(us)
    }
}

pub trait Controller: Send {
    fn name(&self) -> &'static str;
    /// Every ACK of new data, in any state (also during loss recovery): for
    /// measurements (RTT range, throughput). Must not change the window.
    fn on_measure(&mut self, _s: &CcState, _ack: &Ack) {}
    /// An ACK of new data outside loss recovery: grow (or set) the window.
    fn on_ack(&mut self, s: &mut CcState, ack: &Ack);
    /// A loss was detected by duplicate ACKs or SACK with `flight` bytes
    /// outstanding: the new slow-start threshold.
    fn ssthresh_after_loss(&mut self, s: &CcState, now: SimTime, flight: u64) -> u64;
    /// The retransmission timer expired (RFC 5681, eq. 4 and the loss window).
    fn on_timeout(&mut self, s: &mut CcState, now: SimTime, flight: u64) {
        s.ssthresh = self.ssthresh_after_loss(s, now, flight);
        s.cwnd = s.mss;
    }
    /// Loss recovery ended (the recovery point was acknowledged).
    fn on_recovery_exit(&mut self, _s: &mut CcState, _now: SimTime) {}
    /// The committed target rate (`base_flow`'s CTR). Default: the
    /// controller has none.
    fn target_rate(&self) -> Option<crate::units::DataRate> {
        None
    }
    /// Change the committed target rate (at least 1 bit/s, checked by the
    /// knob registry); ignored by a controller without one.
    fn set_target_rate(&mut self, _rate: crate::units::DataRate) {}
    /// The last window reduction was undone as spurious (Linux's
    /// `undo_cwnd` hook): restore what the reduction reset.
    fn on_undo(&mut self, _now: SimTime) {}
}

/// The controllers known by name.
pub const NAMES: &[&str] = crate::config::Cc::ALL;

/// Build the controller `name` from its parameters (a JSON object, base
/// units) for a connection with segments of `mss` bytes. A problem is
/// located below the parameters (`beta`), or is theirs as a whole.
pub fn build(name: &str, params: &serde_json::Value, mss: u64) -> Result<Box<dyn Controller>, ConfigError> {
    match name {
        // Reno and NewReno grow and cut the window alike; they differ in
        // loss recovery, which the sender implements.
        "newreno" | "reno" => {
            no_params(name, params)?;
            Ok(Box::new(newreno::NewReno::default()))
        }
        "cubic" => {
            let p: cubic::Params = parse_params(name, params)?;
            p.validate()?;
            Ok(Box::new(cubic::Cubic::new(&p)))
        }
        "htcp" => {
            let p: htcp::Params = parse_params(name, params)?;
            p.validate()?;
            Ok(Box::new(htcp::Htcp::new(&p)))
        }
        "bic" => {
            let p: bic::Params = parse_params(name, params)?;
            p.validate()?;
            Ok(Box::new(bic::Bic::new(&p)))
        }
        "highspeed" => {
            let p: highspeed::Params = parse_params(name, params)?;
            p.validate()?;
            Ok(Box::new(highspeed::HighSpeed::new(&p)))
        }
        "base_flow" => {
            let p: base_flow::Params = parse_params(name, params)?;
            p.validate()?;
            Ok(Box::new(base_flow::BaseFlow::new(&p, mss)))
        }
        other => Err(unknown(other)),
    }
}

/// The parameters of controller `name` as the engine takes them: `params`
/// (base units) with every default the engine applies filled in, after the
/// controller's own checks. The Python front asks this instead of keeping
/// its own copy of the defaults.
pub fn resolved_params(name: &str, params: &serde_json::Value) -> Result<serde_json::Value, ConfigError> {
    fn resolve<T: serde::de::DeserializeOwned + serde::Serialize>(
        name: &str,
        params: &serde_json::Value,
        check: impl Fn(&T) -> Result<(), ConfigError>,
    ) -> Result<serde_json::Value, ConfigError> {
        let p: T = parse_params(name, params)?;
        check(&p)?;
        serde_json::to_value(&p).map_err(|e| ConfigError::new(e.to_string()))
    }
    match name {
        "newreno" | "reno" => no_params(name, params).map(|_| serde_json::json!({})),
        "cubic" => resolve(name, params, cubic::Params::validate),
        "htcp" => resolve(name, params, htcp::Params::validate),
        "bic" => resolve(name, params, bic::Params::validate),
        "highspeed" => resolve(name, params, highspeed::Params::validate),
        "base_flow" => resolve(name, params, base_flow::Params::validate),
        other => Err(unknown(other)),
    }
}

/// Parse a controller's parameters into its `Params` type (serde, with
/// `deny_unknown_fields` and defaults); errors name the controller.
pub fn parse_params<T: serde::de::DeserializeOwned>(name: &str, params: &serde_json::Value) -> Result<T, ConfigError> {
    serde_json::from_value(params.clone()).map_err(|e| ConfigError::new(format!("invalid parameters for {name}: {e}")))
}

/// The error of a controller not known by name.
fn unknown(name: &str) -> ConfigError {
    ConfigError::new(format!("unknown congestion control '{name}' (expected one of: {})", NAMES.join(", ")))
}

fn no_params(name: &str, params: &serde_json::Value) -> Result<(), ConfigError> {
    match params.as_object() {
        Some(m) if m.is_empty() => Ok(()),
        Some(m) => Err(ConfigError::new(format!("{name} takes no parameters, got {}", m.keys().cloned().collect::<Vec<_>>().join(", ")))),
        None => Err(ConfigError::new(format!("expected an object of {name}'s parameters"))),
    }
}
