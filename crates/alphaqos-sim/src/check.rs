//! Checking a configuration without running it: every problem the builder
//! finds, each with its path into the configuration, and what the engine
//! decides for the user (router addresses, routes), so that a front end
//! shows both without re-implementing either.
//!
//! The check is the build itself ([`Simulation::build`]): what it accepts
//! is exactly what `Simulation::new` accepts. Taps are not opened (no file
//! is written).

use crate::builder::{fmt_ipv4, link_of, node_addresses};
use crate::config::Config;
use crate::error::ConfigError;
use crate::network::Net;
use crate::sim::Simulation;

/// What the engine applies on its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Every node's address (dotted), in node order: its own, or a
    /// router's from the engine's pool ([`crate::builder::ROUTER_POOL`]).
    pub addresses: Vec<(String, String)>,
    /// For each pair asked, the links (indices into `links`) packets
    /// take from the first node to the second; None if either is unknown
    /// or no route joins them.
    pub paths: Vec<Option<Vec<u32>>>,
}

/// Every problem of a configuration, and what the engine applies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Each located in the configuration ([`ConfigError::loc`]).
    pub problems: Vec<ConfigError>,
    pub applied: Applied,
}

/// Check `cfg` as [`Simulation::new`] would build it, collecting every
/// problem (see [`Simulation::build`] for which stop the check early), and
/// the routes between the `pairs` of node names.
pub fn check(cfg: &Config, pairs: &[(String, String)]) -> Checked {
    check_owned(cfg.clone(), pairs)
}

/// [`check`] of a configuration the caller gives up (no copy of it).
fn check_owned(mut cfg: Config, pairs: &[(String, String)]) -> Checked {
    cfg.tap_dir = None;
    for l in &mut cfg.links {
        l.tap_ab = None;
        l.tap_ba = None;
    }
    let mut problems = Vec::new();
    let mut applied = Applied { addresses: Vec::new(), paths: vec![None; pairs.len()] };
    // The network is built once: what the engine applies is read off it
    // (also when a flow has problems).
    let mut net_built = false;
    Simulation::build_seeing(&cfg, &mut problems, |net| {
        net_built = true;
        applied.addresses = net.nodes.iter().map(|n| (n.name.clone(), fmt_ipv4(n.addr))).collect();
        applied.paths = pairs.iter().map(|(a, b)| route(net, a, b)).collect();
    });
    if !net_built {
        // A problem of the network: the addresses, if they alone are sound.
        if let Ok(addrs) = node_addresses(&cfg) {
            applied.addresses = cfg.nodes.iter().zip(addrs).map(|(n, a)| (n.name.clone(), fmt_ipv4(a))).collect();
        }
    }
    Checked { problems, applied }
}

/// Check the configuration in JSON text; a text that is not a
/// configuration is one problem.
pub fn check_json(text: &str, pairs: &[(String, String)]) -> Checked {
    match serde_json::from_str::<Config>(text) {
        Ok(cfg) => check_owned(cfg, pairs),
        Err(e) => Checked { problems: vec![ConfigError::at("config", e.to_string())], applied: Applied::default() },
    }
}

/// The links from node `a` to node `b`.
fn route(net: &Net, a: &str, b: &str) -> Option<Vec<u32>> {
    let id = |name: &str| net.nodes.iter().position(|n| n.name == name).map(|i| i as u32);
    let (a, b) = (id(a)?, id(b)?);
    if a == b {
        return Some(Vec::new());
    }
    let path = net.path(a, b);
    (!path.is_empty()).then(|| path.into_iter().map(link_of).collect())
}

/// The configuration as the engine applies it: `json` parsed (every key it
/// leaves out given the engine's default) and written back as JSON. The
/// Python front takes the engine's defaults from here instead of keeping
/// its own copy, and its tests compare what it sends with them.
pub fn applied(json: &str) -> Result<serde_json::Value, ConfigError> {
    // serde's message names the line and column of the JSON.
    let mut c: Config = serde_json::from_str(json).map_err(|e| ConfigError::new(e.to_string()))?;
    for l in &mut c.links {
        let rate = Some(crate::units::DataRate(l.rate_bps));
        crate::qos::applied_queue(&mut l.queue_ab, l.mtu_bytes, rate);
        crate::qos::applied_queue(&mut l.queue_ba, l.mtu_bytes, rate);
    }
    serde_json::to_value(&c).map_err(|e| ConfigError::new(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A--R--B and a lone host C; R has no address.
    fn config() -> serde_json::Value {
        let link = |a: &str, b: &str, mtu: u32| {
            json!({"a": a, "b": b, "rate_bps": 1_000_000_000u64, "delay_ns": 1_000_000u64, "mtu_bytes": mtu,
                   "queue_ab": {"fifo": {"limit_pkts": 100}}, "queue_ba": {"fifo": {"limit_pkts": 100}}})
        };
        json!({
            "duration_ns": 1_000_000_000u64,
            "nodes": [
                {"name": "A", "address": "10.255.0.1"},
                {"name": "R", "router": true},
                {"name": "B", "address": "10.0.0.2"},
                {"name": "C", "address": "10.0.0.3"},
            ],
            "links": [link("A", "R", 1500), link("R", "B", 1400)],
            "flows": [],
        })
    }

    fn checked(cfg: &serde_json::Value, pairs: &[(&str, &str)]) -> Checked {
        let pairs: Vec<_> = pairs.iter().map(|&(a, b)| (a.to_string(), b.to_string())).collect();
        check_json(&cfg.to_string(), &pairs)
    }

    fn udp(name: &str, src: &str, dst: &str, size: u32) -> serde_json::Value {
        json!({"name": name, "src": src, "dst": dst, "start_ns": 0, "udp": {"size_bytes": size, "schedule": [[0, 1_000_000u64]]}})
    }

    #[test]
    fn every_bad_flow_is_reported_not_only_the_first() {
        let mut cfg = config();
        cfg["flows"] = json!([
            udp("big", "A", "B", 1450),
            udp("ok", "A", "B", 1000),
            udp("lost", "A", "C", 1000),
            {"name": "tcp", "src": "A", "dst": "B", "start_ns": 0, "tcp": {"mss_bytes": 1400}},
        ]);
        let c = checked(&cfg, &[]);
        let paths: Vec<_> = c.problems.iter().map(|p| p.path()).collect();
        assert_eq!(paths, ["flows[0].udp.size_bytes", "flows[2]", "flows[3].tcp.mss_bytes"], "{:?}", c.problems);
        assert_eq!(c.problems[0].msg, "1450B packets do not fit the 1400B MTU of links[1] (R-B) on the path from 'A' to 'B'");
        assert_eq!(c.problems[1].msg, "no path from 'A' to 'C' over the links (only routers forward packets)");
        assert!(c.problems[2].msg.starts_with("1452B packets do not fit the 1400B MTU of links[1]"), "{}", c.problems[2].msg);
        assert!(c.problems[2].msg.ends_with("(mss + 52B of IP and TCP headers)"));
        // The first is what Simulation::new refuses.
        let err = Simulation::from_json(&cfg.to_string()).err().expect("refused");
        assert_eq!(err.to_string(), "flows[0].udp.size_bytes: 1450B packets do not fit the 1400B MTU of links[1] (R-B) on the path from 'A' to 'B'");
    }

    #[test]
    fn every_bad_workload_and_agent_is_reported() {
        let mut cfg = config();
        let transfer = |name: &str, to: &str, mss: u32| {
            json!({"name": name, "tcp": {"mss_bytes": mss}, "transfer": {"src": "A", "dst": to, "size_bytes": 1_000_000u64}})
        };
        cfg["workloads"] = json!([transfer("w0", "C", 1000), transfer("w1", "B", 1000), transfer("w2", "B", 1400), transfer("w3", "B", 0)]);
        let c = checked(&cfg, &[]);
        let paths: Vec<_> = c.problems.iter().map(|p| p.path()).collect();
        assert_eq!(paths, ["workloads[0]", "workloads[2].tcp.mss_bytes", "workloads[3].tcp.mss_bytes"], "{:?}", c.problems);
        // Sound flows and workloads: each agent is checked on its own.
        cfg["workloads"] = json!([transfer("w1", "B", 1000)]);
        let agent = |name: &str, transfer: &str| {
            json!({"deadline_reservation": {"name": name, "transfer": transfer, "deadline_ns": 1_000_000_000u64, "interval_ns": 1_000_000u64, "policer": "R/none"}})
        };
        cfg["control"] = json!([agent("a0", "nope"), agent("a1", "nope2")]);
        let c = checked(&cfg, &[]);
        let paths: Vec<_> = c.problems.iter().map(|p| p.path()).collect();
        assert_eq!(paths, ["control[0].deadline_reservation.transfer", "control[1].deadline_reservation.transfer"], "{:?}", c.problems);
    }

    #[test]
    fn every_duplicate_workload_name_is_reported_at_its_own_index() {
        let mut cfg = config();
        let transfer = |name: &str| json!({"name": name, "tcp": {"mss_bytes": 1000}, "transfer": {"src": "A", "dst": "B", "size_bytes": 1_000_000u64}});
        cfg["workloads"] = json!([transfer("w0"), transfer("w1"), transfer("w0"), transfer("w1"), transfer("w2"), transfer("w0")]);
        let c = checked(&cfg, &[]);
        let found: Vec<_> = c.problems.iter().map(|p| (p.path(), p.msg.as_str())).collect();
        assert_eq!(
            found,
            [
                ("workloads[2].name".to_string(), "duplicate workload 'w0'"),
                ("workloads[3].name".to_string(), "duplicate workload 'w1'"),
                ("workloads[5].name".to_string(), "duplicate workload 'w0'"),
            ]
        );
    }

    #[test]
    fn applied_gives_router_addresses_and_routes() {
        let c = checked(&config(), &[("A", "B"), ("B", "A"), ("A", "C"), ("A", "Z")]);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        // R draws the first free address of 10.255.0.0/16: A holds .1.
        let addrs: Vec<_> = c.applied.addresses.iter().map(|(n, a)| format!("{n}={a}")).collect();
        assert_eq!(addrs, ["A=10.255.0.1", "R=10.255.0.2", "B=10.0.0.2", "C=10.0.0.3"]);
        assert_eq!(c.applied.paths, [Some(vec![0, 1]), Some(vec![1, 0]), None, None]);
        // The world built uses the same addresses.
        let sim = Simulation::from_json(&config().to_string()).expect("builds");
        assert_eq!(fmt_ipv4(sim.net.nodes[1].addr), "10.255.0.2");
    }

    #[test]
    fn a_structural_problem_stops_the_check_with_its_path() {
        let mut cfg = config();
        cfg["links"][1]["b"] = json!("X");
        let c = checked(&cfg, &[("A", "B")]);
        assert_eq!(c.problems, [ConfigError::at("b", "unknown node 'X'").with_outer(1usize).with_outer("links")]);
        assert_eq!(c.applied.paths, [None]);
        // The addresses are sound: they are still applied.
        assert_eq!(c.applied.addresses.len(), 4);
        let c = check_json("{\"nodes\": []}", &[]);
        assert_eq!(c.problems[0].path(), "config");
    }
}
