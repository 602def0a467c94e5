//! The builder: a resolved configuration turned into a world (nodes,
//! interfaces and their disciplines, routes, the scenario's flows, the
//! workloads), every name checked and given its handle (its index), before
//! anything runs.

use crate::apps::{bulk::BulkTcp, cbr::Cbr, onoff::{OnOffUdp, Periods}, ping::Ping, poisson::PoissonSource, video::Video, App};
use crate::config::{Config, FlowConfig};
use crate::error::{ConfigError, Outer};
use crate::event::EventQueue;
use crate::network::{Ends, Net};
use crate::packet::{PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP_HEADER_BYTES, UDP_HEADER_BYTES};
use crate::qos::classify::Filter;
use crate::qos;
use crate::rng::Rng;
use crate::time::{Duration, SimTime};
use crate::topology::{compute_routes, parse_ipv4, Iface, Node, NO_ROUTE};
use crate::units::DataRate;
use std::collections::{BTreeMap, VecDeque};

/// The network of `cfg`: nodes, interfaces, routes; no connections yet.
pub fn build_net(cfg: &Config) -> Result<Net, ConfigError> {
        if cfg.duration_ns == 0 {
            return Err(ConfigError::at("duration_ns", "must be positive"));
        }
        if cfg.metric_interval_ns == 0 {
            return Err(ConfigError::at("metric_interval_ns", "must be positive"));
        }
        let mut nodes: Vec<Node> = Vec::new();
        let mut filters = Vec::new();
        let mut index = BTreeMap::new();
        let addresses = node_addresses(cfg)?;
        for (i, n) in cfg.nodes.iter().enumerate() {
            if index.insert(n.name.clone(), i as u32).is_some() {
                return Err(ConfigError::at("name", format!("duplicate node '{}'", n.name)).with_outer(i).with_outer("nodes"));
            }
            let addr = addresses[i];
            if !n.filter.is_empty() && !n.router {
                return Err(ConfigError::at("filter", format!("only routers filter packets ('{}' is a host)", n.name)).with_outer(i).with_outer("nodes"));
            }
            filters.push(if n.filter.is_empty() {
                None
            } else {
                Some(Filter::new(&n.filter).outer("filter").outer(i).outer("nodes")?)
            });
            nodes.push(Node { name: n.name.clone(), router: n.router, addr, ifaces: Vec::new() });
        }
        let node_id = |name: &str, i: usize, end: &str| -> Result<u32, ConfigError> {
            index.get(name).copied().ok_or_else(|| ConfigError::at(end, format!("unknown node '{name}'")).with_outer(i).with_outer("links"))
        };
        let mut ifaces: Vec<Iface> = Vec::new();
        for (i, l) in cfg.links.iter().enumerate() {
            let a = node_id(&l.a, i, "a")?;
            let b = node_id(&l.b, i, "b")?;
            let link_err = |field: &str, msg: String| ConfigError::at(field, msg).with_outer(i).with_outer("links");
            if a == b {
                return Err(ConfigError::new("a link needs two different nodes").with_outer(i).with_outer("links"));
            }
            if l.rate_bps == 0 {
                return Err(link_err("rate_bps", "must be positive".into()));
            }
            if l.mtu_bytes < 68 {
                return Err(link_err("mtu_bytes", format!("{} is below the IPv4 minimum of 68", l.mtu_bytes)));
            }
            let dirs = [(a, b, &l.queue_ab, "queue_ab", l.impair_ab, l.monitor_ab, &l.tap_ab), (b, a, &l.queue_ba, "queue_ba", l.impair_ba, l.monitor_ba, &l.tap_ba)];
            for (from, to, q, key, imp, monitor, tap) in dirs {
                imp.validate().outer(format!("impair_{}", &key[6..])).outer(i).outer("links")?;
                let name = format!("{}->{}", nodes[from as usize].name, nodes[to as usize].name);
                let qdisc = qos::build_on(q, l.mtu_bytes, Some(DataRate(l.rate_bps))).outer(key).outer(i).outer("links")?;
                let tap = match tap {
                    Some(file) => {
                        let path = cfg.tap_dir.as_deref().map_or_else(|| std::path::PathBuf::from(file), |d| std::path::Path::new(d).join(file));
                        Some(Box::new(crate::tap::Tap::create(&path).outer(format!("tap_{}", &key[6..])).outer(i).outer("links")?))
                    }
                    None => None,
                };
                let id = ifaces.len() as u32;
                nodes[from as usize].ifaces.push(id);
                ifaces.push(Iface {
                    egress: crate::egress::Egress::new(qdisc, Rng::stream(cfg.seed, &format!("queue:{name}")), DataRate(l.rate_bps), l.overhead_bytes),
                    impair_rng: Rng::stream(cfg.seed, &format!("impair:{name}")),
                    name,
                    node: from,
                    peer: to,
                    delay: Duration(l.delay_ns),
                    mtu: l.mtu_bytes,
                    tx_event: SimTime::MAX,
                    pipe: VecDeque::new(),
                    next_deliver: SimTime::MAX,
                    // A wire that neither loses nor reorders: no impairment to ask.
                    impair: (imp.loses() || imp.reorders()).then_some(imp),
                    lost_pkts: 0,
                    monitor: monitor.then(Box::default),
                    tap,
                });
            }
        }
    let next_hop = compute_routes(&nodes, &ifaces);
    Ok(Net { now: SimTime::ZERO, events: EventQueue::new(), nodes, ifaces, next_hop, conns: Vec::new(), delay: Vec::new(), filters, stale_pkts: 0, dropped: Vec::new() })
}

/// The pool of router addresses: 10.255.0.0/16.
pub const ROUTER_POOL: (u32, u32) = (0x0AFF_0000, 16);

/// Every node's address: its own, or for a router without one the lowest
/// address of [`ROUTER_POOL`] (network and broadcast addresses excluded)
/// that no node was given and no earlier router drew, in node order.
pub fn node_addresses(cfg: &Config) -> Result<Vec<u32>, ConfigError> {
    let mut given = Vec::with_capacity(cfg.nodes.len());
    for (i, n) in cfg.nodes.iter().enumerate() {
        given.push(match &n.address {
            Some(a) => Some(parse_ipv4(a).ok_or_else(|| ConfigError::at("address", format!("'{a}' is not an IPv4 address")).with_outer(i).with_outer("nodes"))?),
            None if n.router => None,
            None => return Err(ConfigError::at("address", format!("host '{}' needs an IPv4 address", n.name)).with_outer(i).with_outer("nodes")),
        });
    }
    let taken: std::collections::HashSet<u32> = given.iter().flatten().copied().collect();
    let (base, len) = ROUTER_POOL;
    let mut pool = (base + 1..base + (1 << (32 - len)) - 1).filter(|a| !taken.contains(a));
    given
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            Some(a) => Ok(*a),
            None => pool.next().ok_or_else(|| {
                ConfigError::at("address", format!("no address of 10.255.0.0/16 is left for router '{}'", cfg.nodes[i].name)).with_outer(i).with_outer("nodes")
            }),
        })
        .collect()
}

/// Dotted IPv4.
pub fn fmt_ipv4(a: u32) -> String {
    let b = a.to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// The link an interface sends on (each link is two interfaces, a->b then b->a).
pub fn link_of(iface: u32) -> u32 {
    iface / 2
}

/// The smallest MTU on the path from `a` to `b`.
pub fn path_mtu(net: &Net, a: u32, b: u32) -> u32 {
    net.path(a, b).iter().map(|&i| net.ifaces[i as usize].mtu).min().unwrap_or(u32::MAX)
}

/// A host by name, for a connection's end.
pub fn host_id(net: &Net, name: &str, key: &str) -> Result<u32, ConfigError> {
    let id = net.nodes.iter().position(|n| n.name == name).ok_or_else(|| ConfigError::at(key, format!("unknown node '{name}'")))?;
    if net.nodes[id].router {
        return Err(ConfigError::at(key, format!("'{name}' is a router; connections run between hosts")));
    }
    Ok(id as u32)
}

/// Both directions between `a` and `b` are routed, and `max_size`-byte
/// packets fit every link of both paths; an MTU problem names `size_key`
/// (the field that sets the packets' size, as a path below the item
/// checked; `note` says how it does).
pub fn check_path(cfg: &Config, net: &Net, a: u32, b: u32, max_size: u32, size_key: &[&str], note: &str) -> Result<(), ConfigError> {
    let name = |n: u32| &net.nodes[n as usize].name;
    for (x, y) in [(a, b), (b, a)] {
        if net.route(x, y) == NO_ROUTE {
            return Err(ConfigError::new(format!("no path from '{}' to '{}' over the links (only routers forward packets)", name(x), name(y))));
        }
    }
    for (x, y) in [(a, b), (b, a)] {
        for i in net.path(x, y) {
            let ifc = &net.ifaces[i as usize];
            if max_size > ifc.mtu {
                let l = link_of(i) as usize;
                let link = &cfg.links[l];
                let msg = format!(
                    "{max_size}B packets do not fit the {}B MTU of links[{l}] ({}-{}) on the path from '{}' to '{}'{note}",
                    ifc.mtu, link.a, link.b, name(x), name(y)
                );
                return Err(size_key.iter().rev().fold(ConfigError::new(msg), |e, k| e.with_outer(*k)));
            }
        }
    }
    Ok(())
}

/// How a TCP segment's size follows from the MSS.
pub const MSS_NOTE: &str = " (mss + 52B of IP and TCP headers)";

/// The field that sets a packet flow's size.
fn kind_of(f: &FlowConfig) -> &'static str {
    if f.udp.is_some() {
        "udp"
    } else if f.poisson.is_some() {
        "poisson"
    } else if f.onoff.is_some() {
        "onoff"
    } else if f.video.is_some() {
        "video"
    } else {
        "ping"
    }
}

/// A UDP packet must hold the IP and UDP headers.
fn udp_size(size: u32, kind: &str) -> Result<(), ConfigError> {
    if size < UDP_HEADER_BYTES {
        return Err(ConfigError::at("size_bytes", format!("{size} is smaller than the IP+UDP headers ({UDP_HEADER_BYTES} B)")).with_outer(kind));
    }
    Ok(())
}

/// The ends and the application of flow `f` (`cfg.flows[index]`);
/// errors are located below the flow.
pub fn build_flow(cfg: &Config, index: usize, f: &FlowConfig, net: &Net) -> Result<(Ends, Box<dyn App>), ConfigError> {
    let find = |name: &str, key: &str| -> Result<u32, ConfigError> {
        let id = net.nodes.iter().position(|n| n.name == name).ok_or_else(|| ConfigError::at(key, format!("unknown node '{name}'")))?;
        if net.nodes[id].router {
            return Err(ConfigError::at(key, format!("'{name}' is a router; flows run between hosts")));
        }
        Ok(id as u32)
    };
    let src = find(&f.src, "src")?;
    let dst = find(&f.dst, "dst")?;
    if src == dst {
        return Err(ConfigError::new("a flow needs two different hosts"));
    }
    check_path(cfg, net, src, dst, 0, &[], "")?;
    let kinds = [f.tcp.is_some(), f.udp.is_some(), f.poisson.is_some(), f.ping.is_some(), f.onoff.is_some(), f.video.is_some()];
    if kinds.iter().filter(|&&k| k).count() != 1 {
        return Err(ConfigError::new("exactly one of tcp, udp, poisson, ping, onoff, video is needed"));
    }
    let rng = Rng::stream(cfg.seed, &format!("flow:{}", f.name));
    let (app, proto, max_size): (Box<dyn App>, u8, u32) = if let Some(t) = &f.tcp {
        (Box::new(BulkTcp::new(t).outer("tcp")?), PROTO_TCP, t.mss_bytes + TCP_HEADER_BYTES)
    } else if let Some(u) = &f.udp {
        udp_size(u.size_bytes, "udp")?;
        if u.schedule.is_empty() {
            return Err(ConfigError::at("schedule", "needs at least one (time, rate) step").with_outer("udp"));
        }
        if u.schedule.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(ConfigError::at("schedule", "step times must be strictly ascending").with_outer("udp"));
        }
        let sched = u.schedule.iter().map(|&(t, r)| (SimTime(t), DataRate(r))).collect();
        (Box::new(Cbr::new(u.size_bytes, sched)), PROTO_UDP, u.size_bytes)
    } else if let Some(p) = &f.poisson {
        if p.rate_bps == 0 || p.size_bytes == 0 {
            return Err(ConfigError::at("poisson", "rate_bps and size_bytes must be positive"));
        }
        // Exponential sizes have no maximum: they are cut at the smallest
        // MTU of the path (defect 3 of issue 9), the mean must fit it.
        let mtu = path_mtu(net, src, dst);
        (Box::new(PoissonSource::new(p.rate_bps, p.size_bytes, p.exp_size, rng).max_size(mtu)), PROTO_UDP, p.size_bytes)
    } else if let Some(o) = &f.onoff {
        udp_size(o.size_bytes, "onoff")?;
        if o.rate_bps == 0 || o.on_mean_ns == 0 || o.off_mean_ns == 0 {
            return Err(ConfigError::at("onoff", "rate_bps, on_mean_ns and off_mean_ns must be positive"));
        }
        let periods = match o.pareto_shape {
            None => Periods::Exponential,
            Some(a) if a.is_finite() && a > 1.0 => Periods::Pareto(a),
            Some(a) => return Err(ConfigError::at("pareto_shape", format!("must be above 1 for the mean to exist, got {a}")).with_outer("onoff")),
        };
        (Box::new(OnOffUdp::new(o.rate_bps, o.size_bytes, o.on_mean_ns, o.off_mean_ns, periods, rng)), PROTO_UDP, o.size_bytes)
    } else if let Some(v) = &f.video {
        udp_size(v.size_bytes, "video")?;
        if v.mean_rate_bps == 0 {
            return Err(ConfigError::at("mean_rate_bps", "must be positive").with_outer("video"));
        }
        if !(v.fps.is_finite() && v.fps > 0.0) {
            return Err(ConfigError::at("fps", format!("must be positive, got {}", v.fps)).with_outer("video"));
        }
        if !(v.sigma.is_finite() && v.sigma >= 0.0) {
            return Err(ConfigError::at("sigma", format!("must be non-negative, got {}", v.sigma)).with_outer("video"));
        }
        (Box::new(Video::new(v.mean_rate_bps, v.size_bytes, v.fps, v.sigma, rng)), PROTO_UDP, v.size_bytes)
    } else if let Some(p) = &f.ping {
        if p.interval_ns == 0 {
            return Err(ConfigError::at("interval_ns", "must be positive").with_outer("ping"));
        }
        (Box::new(Ping::new(Duration(p.interval_ns), p.size_bytes)), PROTO_ICMP, p.size_bytes)
    } else {
        unreachable!("checked above")
    };
    // Packets must fit every link on both paths.
    let (kind, note) = match proto {
        PROTO_TCP => (["tcp", "mss_bytes"], MSS_NOTE),
        _ => ([kind_of(f), "size_bytes"], ""),
    };
    check_path(cfg, net, src, dst, max_size, &kind, note)?;
    if f.dscp > 63 {
        return Err(ConfigError::at("dscp", format!("{} is not a DiffServ code point (0..63)", f.dscp)));
    }
    // ICMP has no ports; a flow without ports gets an ephemeral source port
    // from Linux's default range (32768..60999) by its index, and the
    // destination port 5001 (nuttcp's and iperf 2's).
    let (src_port, dst_port) = if proto == PROTO_ICMP {
        (0, 0)
    } else {
        (f.src_port.unwrap_or(32768 + (index % 28232) as u16), f.dst_port.unwrap_or(5001))
    };
    let ends = Ends { src, dst, src_ip: net.nodes[src as usize].addr, dst_ip: net.nodes[dst as usize].addr, proto, dscp: f.dscp, src_port, dst_port };
    Ok((ends, app))
}
