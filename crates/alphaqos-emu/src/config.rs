//! The emulator's configuration, as `alphaqos emulate` (`alphaqos.emulate.
//! emu_config`) writes it: parsed with serde like the engine's, the pieces
//! they share being the engine's own types (`QueueConfig` for a hop's
//! discipline, `FilterTermConfig` for a router's filter, the engine's MTU
//! and framing defaults). Unknown fields are refused; an error names the
//! field path (`directions[0].hops[1].rate_bps: ...`).

use alphaqos_sim::config::{FilterTermConfig, QueueConfig, ETHERNET_OVERHEAD_BYTES};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmuConfig {
    /// Seeds the disciplines' random streams (one per hop, by its name).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// How long to run; 0: until SIGINT or SIGTERM.
    #[serde(default)]
    pub duration_ns: u64,
    /// The series' interval (at least 1 ms).
    #[serde(default = "default_interval")]
    pub sample_interval_ns: u64,
    /// Never sleep between events.
    #[serde(default)]
    pub spin: bool,
    /// Ask for SCHED_FIFO.
    #[serde(default)]
    pub realtime: bool,
    /// How far the hops run behind the wall clock (see `main.rs`).
    #[serde(default)]
    pub lag_ns: u64,
    /// The two real interfaces.
    pub ifaces: Vec<IfaceConfig>,
    pub directions: Vec<DirectionConfig>,
    /// The routers' firewall filters, referred to by index.
    #[serde(default)]
    pub filters: Vec<FilterConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IfaceConfig {
    /// Its network namespace (`ip netns` name); none: the emulator's own.
    #[serde(default)]
    pub netns: Option<String>,
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// The router it belongs to.
    pub node: String,
    pub terms: Vec<FilterTermConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    #[serde(default)]
    pub name: String,
    /// The interfaces (indices into `ifaces`) it reads and writes.
    pub rx: usize,
    pub tx: usize,
    pub hops: Vec<HopConfig>,
    /// The filter of the router at the far end.
    #[serde(default)]
    pub exit_filter: Option<usize>,
    /// Extra delays of some flows at the direction's entry, before the
    /// first hop (the first that matches applies): flows of different
    /// RTTs through one bottleneck.
    #[serde(default)]
    pub flow_delays: Vec<FlowDelayConfig>,
}

/// A constant delay for the frames a filter term's match fields select
/// (`src`, `dst`, `proto`, `src_port`, `dst_port`, `dscp`): the access
/// link of a sender further away, with no rate of its own.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowDelayConfig {
    #[serde(rename = "match")]
    pub matches: FilterTermConfig,
    pub delay_ns: u64,
}

/// One link of the scenario in one direction: its fields as the engine's
/// `LinkConfig` names them, the discipline of the node it leaves.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopConfig {
    #[serde(default)]
    pub name: String,
    /// The filter of the router forwarding onto it.
    #[serde(default)]
    pub filter: Option<usize>,
    pub queue: QueueConfig,
    pub rate_bps: u64,
    pub delay_ns: u64,
    #[serde(default = "default_mtu")]
    pub mtu_bytes: u32,
    #[serde(default = "default_overhead")]
    pub overhead_bytes: u32,
}

fn default_seed() -> u64 {
    1
}
fn default_interval() -> u64 {
    100_000_000
}
fn default_mtu() -> u32 {
    1500
}
fn default_overhead() -> u32 {
    ETHERNET_OVERHEAD_BYTES
}

impl EmuConfig {
    /// Parse the JSON text `text` (of the file `file`): an error names the
    /// field path, or the file, line and column where the JSON itself is bad.
    pub fn parse(text: &str, file: &str) -> Result<EmuConfig, String> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let cfg: EmuConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_syntax() || inner.is_eof() || path == "." {
                format!("{file}: not JSON: {inner}")
            } else {
                format!("{path}: {}", strip_position(&inner.to_string()))
            }
        })?;
        cfg.check()?;
        Ok(cfg)
    }

    /// What serde cannot say: indices in range, rates positive.
    fn check(&self) -> Result<(), String> {
        if self.ifaces.len() != 2 {
            return Err(format!("ifaces: expected two interfaces, got {}", self.ifaces.len()));
        }
        let n = self.ifaces.len();
        let filter_index = |f: Option<usize>, at: &str| match f {
            Some(i) if i >= self.filters.len() => Err(format!("{at}: {i} is not a filter index (there are {})", self.filters.len())),
            _ => Ok(()),
        };
        for (d, dir) in self.directions.iter().enumerate() {
            let at = format!("directions[{d}]");
            if dir.rx >= n || dir.tx >= n || dir.rx == dir.tx {
                return Err(format!("{at}: rx and tx must be two different interfaces of the {n} given"));
            }
            if dir.hops.is_empty() {
                return Err(format!("{at}.hops: at least one hop"));
            }
            filter_index(dir.exit_filter, &format!("{at}.exit_filter"))?;
            for (i, fd) in dir.flow_delays.iter().enumerate() {
                let m = &fd.matches;
                if m.policer.is_some() || m.discard || m.fclass.is_some() || m.loss_priority.is_some() {
                    return Err(format!("{at}.flow_delays[{i}].match: match fields only (src, dst, proto, src_port, dst_port, dscp), no actions"));
                }
            }
            for (h, hop) in dir.hops.iter().enumerate() {
                if hop.rate_bps == 0 {
                    return Err(format!("{at}.hops[{h}].rate_bps: must be positive"));
                }
                filter_index(hop.filter, &format!("{at}.hops[{h}].filter"))?;
            }
        }
        Ok(())
    }
}

/// serde_json's message without its " at line L column C" (the field path says where).
fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) if msg[i..].contains(" column ") => &msg[..i],
        _ => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"ifaces": [{"name": "e0"}, {"netns": "x", "name": "e1"}],
        "directions": [{"name": "a->b", "rx": 0, "tx": 1,
                        "hops": [{"name": "a->b", "queue": {"fifo": {}}, "rate_bps": 1000000, "delay_ns": 0}]}]}"#;

    #[test]
    fn defaults_are_the_engines() {
        let c = EmuConfig::parse(GOOD, "c.json").unwrap();
        let h = &c.directions[0].hops[0];
        assert_eq!((c.seed, c.sample_interval_ns, h.mtu_bytes, h.overhead_bytes), (1, 100_000_000, 1500, ETHERNET_OVERHEAD_BYTES));
        assert_eq!(c.ifaces[1].netns.as_deref(), Some("x"));
    }

    #[test]
    fn errors_name_the_field_path() {
        let bad = GOOD.replace(r#""rate_bps": 1000000"#, r#""rate_bps": "fast""#);
        let e = EmuConfig::parse(&bad, "c.json").unwrap_err();
        assert!(e.starts_with("directions[0].hops[0].rate_bps: invalid type: string \"fast\""), "{e}");
        let bad = GOOD.replace(r#""delay_ns": 0"#, r#""delay_ns": 0, "dealy": 1"#);
        let e = EmuConfig::parse(&bad, "c.json").unwrap_err();
        assert!(e.starts_with("directions[0].hops[0].dealy: unknown field `dealy`, expected one of"), "{e}");
        let bad = GOOD.replace(r#"{"fifo": {}}"#, r#"{"fifo": {"limit_pkts": -1}}"#);
        let e = EmuConfig::parse(&bad, "c.json").unwrap_err();
        assert!(e.starts_with("directions[0].hops[0].queue"), "{e}");
        let e = EmuConfig::parse(&GOOD.replace(r#""rate_bps": 1000000"#, r#""rate_bps": 0"#), "c.json").unwrap_err();
        assert_eq!(e, "directions[0].hops[0].rate_bps: must be positive");
        let e = EmuConfig::parse(&GOOD.replace(r#""delay_ns": 0"#, r#""delay_ns": 0, "filter": 3"#), "c.json").unwrap_err();
        assert_eq!(e, "directions[0].hops[0].filter: 3 is not a filter index (there are 0)");
        let fd = |m: &str| GOOD.replace(r#""hops""#, &format!(r#""flow_delays": [{{"match": {m}, "delay_ns": 15000000}}], "hops""#));
        let c = EmuConfig::parse(&fd(r#"{"name": "far", "src": "10.0.0.2/32"}"#), "c.json").unwrap();
        assert_eq!((c.directions[0].flow_delays[0].delay_ns, c.directions[0].flow_delays[0].matches.src.as_deref()), (15_000_000, Some("10.0.0.2/32")));
        let e = EmuConfig::parse(&fd(r#"{"name": "far", "discard": true}"#), "c.json").unwrap_err();
        assert_eq!(e, "directions[0].flow_delays[0].match: match fields only (src, dst, proto, src_port, dst_port, dscp), no actions");
        let e = EmuConfig::parse("{\"ifaces\": [", "c.json").unwrap_err();
        assert!(e.starts_with("c.json: not JSON: EOF while parsing"), "{e}");
    }
}
