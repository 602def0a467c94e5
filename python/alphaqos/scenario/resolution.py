"""Resolution: a valid scenario as the engine's configuration
(``docs/engine-config.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from .. import units
from ..policy import Policy, resolve_yaqs, child_config, fq_codel_config, resolve_egress, resolve_filter, sfq_config
from ..agents import resolve_agent
from ..cc import resolve_cc_params
from ..deadline import expand as _expand_deadline_transfers
from .loading import _link_between, _validated_cc_params
from .models import Htb, Queue, Impair, Link, TcpOptions, Tcp, Flow, SizeDist, LinkShare, StreamOptions, Workload, Scenario, profile_unset


# --- the engine's resolved configuration -----------------------------------


def resolve(scenario: Scenario, *, tap_dir: str | Path | None = None) -> dict[str, Any]:
    """The engine configuration of ``docs/engine-config.md``: plain JSON
    types, integers in base units (ns, bit/s, bytes), all defaults filled.
    Link taps are written into ``tap_dir``; without it nothing is captured."""
    scenario = _expand_deadline_transfers(scenario)
    tcp_memo: dict[int, dict[str, Any]] = {}  # workloads share their TCP options (DEFAULT_WORKLOAD_TCP)
    return {
        "tap_dir": None if tap_dir is None else str(tap_dir),
        "name": scenario.name,
        "seed": scenario.seed,
        "duration_ns": scenario.duration,
        "metric_interval_ns": scenario.metric_interval,
        "nodes": [
            {
                "name": name,
                "router": node.router,
                "address": node.address,
                "filter": resolve_filter(scenario.policies[node.policy]) if node.policy else [],
            }
            for name, node in scenario.nodes.items()
        ],
        "links": [_resolve_link(link, scenario.policies, taps=tap_dir is not None) for link in scenario.links],
        "flows": [_resolve_flow(flow, scenario.stop_of(flow)) for flow in scenario.flows],
        "workloads": [_resolve_workload(wl, scenario, tcp_memo) for wl in scenario.workloads],
        "control": [resolve_agent(a) for a in scenario.control],
    }


def _tap_file(link: Link, sender: str, receiver: str) -> str | None:
    """``taps: {X: FILE}`` is that direction's file; ``tap: NAME`` (both
    directions) writes ``NAME-<from>-<to>.pcap``; ``true``, ``<from>-<to>.pcap``."""
    direction = f"{sender}-{receiver}.pcap"
    if sender in link.taps:
        tap = link.taps[sender]
        return None if tap is False else direction if tap is True else tap
    if link.tap is False:
        return None
    return direction if link.tap is True else f"{link.tap.removesuffix('.pcap')}-{direction}"


def _resolve_link(link: Link, policies: dict[str, Policy], *, taps: bool = False) -> dict[str, Any]:
    a, b = link.between
    return {
        "monitor_ab": link.monitor_from(a),
        "monitor_ba": link.monitor_from(b),
        "tap_ab": _tap_file(link, a, b) if taps else None,
        "tap_ba": _tap_file(link, b, a) if taps else None,
        "a": a,
        "b": b,
        "rate_bps": link.rate,
        "delay_ns": link.delay,
        "mtu_bytes": link.mtu,
        "overhead_bytes": link.overhead,
        "queue_ab": _resolve_queue(link.queue_from(a), policies),
        "queue_ba": _resolve_queue(link.queue_from(b), policies),
        "impair_ab": _resolve_impair(link.impair_from(a)),
        "impair_ba": _resolve_impair(link.impair_from(b)),
    }


def _resolve_impair(impair: Impair) -> dict[str, Any]:
    reorder = impair.reorder
    return {
        "loss": impair.loss,
        "reorder_fraction": reorder.fraction if reorder else 0.0,
        "reorder_by": reorder.by if reorder else 0,
    }


def _resolve_queue(queue: Queue, policies: dict[str, Policy]) -> dict[str, Any]:
    if queue.policy is not None:
        return resolve_egress(policies[queue.policy])
    if queue.htb is not None:
        return {"htb": _resolve_htb(queue.htb)}
    if queue.fifo is not None:
        return {"fifo": _resolve_limit(queue.fifo.limit)}
    if queue.fq_codel is not None:
        return {"fq_codel": fq_codel_config(queue.fq_codel)}
    if queue.sfq is not None:
        return {"sfq": sfq_config(queue.sfq)}
    if queue.yaqs is not None:
        return {"yaqs": resolve_yaqs(queue.yaqs)}
    red = queue.red
    return {
        "red": {
            **_resolve_limit(red.limit),
            "min_th": red.min_th.value,
            "max_th": red.max_th.value,
            "thresholds_in_bytes": red.min_th.in_bytes,
            "max_p": red.max_p,
            "w_q": red.w_q,
            "gentle": red.gentle,
            "byte_mode": red.byte_mode,
            "mean_pkt_bytes": red.mean_pkt_size,
            "wait": red.wait,
        }
    }


def _resolve_htb(htb: Htb) -> dict[str, Any]:
    protocols = {"icmp": 1, "tcp": 6, "udp": 17}
    return {
        "classes": [
            {
                "name": name, "parent": c.parent, "rate_bps": c.rate, "ceil_bps": c.ceil, "burst_bytes": c.burst,
                "cburst_bytes": c.cburst, "quantum_bytes": c.quantum, "prio": c.prio,
                "limit_pkts": c.limit.pkts, "limit_bytes": c.limit.bytes, **child_config(c.child),
            }
            for name, c in htb.classes.items()
        ],
        "filters": [
            {"src": f.src, "dst": f.dst, "proto": protocols[f.protocol] if f.protocol else None, "class": f.class_}
            for f in htb.filters
        ],
        "default_class": htb.default,
    }  # fmt: skip


def _resolve_limit(limit: units.QueueLimit) -> dict[str, int | None]:
    return {"limit_pkts": limit.pkts, "limit_bytes": limit.bytes}


def _profile_defaults(tcp: TcpOptions) -> TcpOptions:
    """``tcp`` with the host profile's values for the keys it leaves unset
    (validation gives them, :meth:`TcpOptions._profile_values`; again here
    for options copied with another profile)."""
    unset = profile_unset(tcp)
    return tcp.model_copy(update=unset) if unset else tcp


def _resolve_tcp(tcp: TcpOptions) -> dict[str, Any]:
    tcp = _profile_defaults(tcp)
    return {
        "cc": tcp.cc,
        "mss_bytes": tcp.mss,
        "init_cwnd_pkts": tcp.init_cwnd,
        "rwnd_bytes": tcp.rwnd,
        "delayed_ack": tcp.delayed_ack,
        "ack_every": tcp.ack_every,
        "delack_timeout_ns": tcp.delack_timeout,
        "min_rto_ns": tcp.min_rto,
        "initial_rto_ns": tcp.initial_rto,
        "max_rto_ns": tcp.max_rto,
        "rto_style": tcp.rto,
        "dupthresh": tcp.dupthresh,
        "size_bytes": tcp.size if isinstance(tcp, Tcp) else None,
        "sack": tcp.sack,
        "window_scaling": tcp.window_scaling,
        "limited_transmit": tcp.limited_transmit,
        "sndbuf_bytes": tcp.sndbuf,
        "max_pacing_rate_bps": tcp.max_pacing_rate,
        "pacing": tcp.pacing,
        "rack": tcp.rack,
        "cc_params": resolve_cc_params(_validated_cc_params(tcp.cc, tcp.cc_params)),
        "host_profile": tcp.host_profile,
        "fack": tcp.fack,
        "adaptive_reordering": tcp.adaptive_reordering,
        "max_reordering": tcp.max_reordering,
        "undo": tcp.undo,
        "dsack": tcp.dsack,
        "moderate_cwnd": tcp.moderate_cwnd,
        "rate_halving": tcp.rate_halving,
        "tso_max_bytes": tcp.tso,
        "quickack_after_dup": tcp.quickack_after_dup,
        "ts_tick_ns": tcp.ts_tick,
        "gro": tcp.gro,
        "napi_interval_ns": tcp.napi_interval,
        "per_ack_growth": tcp.per_ack_growth,
        "sack1": tcp.sack1,
        "ns2_delack": tcp.ns2_delack,
        "tcp_tick_ns": tcp.tcp_tick,
        "tlp": tcp.tlp,
        "prr": tcp.prr,
        "tso_autosize": tcp.tso_autosize,
    }


def _resolve_size(size: SizeDist) -> dict[str, Any]:
    if size.fixed is not None:
        body: dict[str, Any] = {"fixed": {"bytes": size.fixed}}
    elif size.exponential is not None:
        body = {"exponential": {"mean_bytes": float(size.exponential.mean)}}
    elif size.pareto is not None:
        body = {"pareto": {"shape": size.pareto.shape, "mean_bytes": float(size.pareto.mean)}}
    elif size.lognormal is not None:
        body = {"lognormal": {"mean_bytes": float(size.lognormal.mean), "sigma": size.lognormal.sigma}}
    else:
        body = {"empirical": {"cdf": [[float(x), p] for x, p in size.empirical]}}
    next(iter(body.values()))["max_bytes"] = size.max
    return body


def _resolve_stream_options(o: StreamOptions, tcp: TcpOptions) -> dict[str, Any]:
    cc = o.cc or tcp.cc
    params = o.cc_params if o.cc_params is not None else ({} if o.cc else tcp.cc_params)
    return {
        "cc": o.cc, "cc_params": resolve_cc_params(_validated_cc_params(cc, params)) if (o.cc or o.cc_params is not None) else None,
        "dscp": o.dscp, "max_pacing_rate_bps": o.max_pacing_rate,
    }  # fmt: skip


def _resolve_workload(wl: Workload, scenario: Scenario, tcp_memo: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The engine's workload; ``tcp_memo`` keeps the resolved TCP options
    of each options object seen (by identity), so that workloads sharing
    one are resolved once; each still gets dicts of its own."""
    memo = {} if tcp_memo is None else tcp_memo
    base = memo.get(id(wl.tcp))
    if base is None:
        base = memo[id(wl.tcp)] = {**_resolve_tcp(wl.tcp), "quickack_segments": _profile_defaults(wl.tcp).quickack}
        base.pop("size_bytes")
    tcp = {**base, "cc_params": dict(base["cc_params"])}
    out: dict[str, Any] = {
        "name": wl.name, "tcp": tcp, "handshake": wl.handshake, "streams": wl.streams,
        "start_ns": wl.start, "stop_ns": wl.stop, "dscp": wl.dscp, "dst_port": wl.dst_port,
        "app_rate_bps": wl.app_rate, "write_bytes": wl.write_size,
        "striping": wl.striping, "block_bytes": wl.block,
        "stream_options": [_resolve_stream_options(o, wl.tcp) for o in wl.stream_options],
    }  # fmt: skip
    if wl.transfer is not None:
        out["transfer"] = {"src": wl.transfer.src, "dst": wl.transfer.dst, "size_bytes": wl.transfer.size}
    elif wl.poisson is not None:
        p = wl.poisson
        pairs = p.pairs
        if pairs.all is not None:
            pairs_cfg: dict[str, Any] = {"all": list(pairs.all)}
        elif pairs.list_ is not None:
            pairs_cfg = {"list": [list(x) for x in pairs.list_]}
        else:
            pairs_cfg = {"groups": {"from": list(pairs.src), "to": list(pairs.dst)}}
        load = p.load
        if isinstance(load, LinkShare):
            load = round(load.share * _link_between(scenario, *load.link).rate)
        out["poisson"] = {"rate_per_s": p.rate, "load_bps": load, "pairs": pairs_cfg, "size": _resolve_size(p.size)}
    elif wl.http is not None:
        h = wl.http
        out["http"] = {
            "server": h.server, "clients": list(h.clients), "sessions": h.sessions, "request_bytes": h.request,
            "response": _resolve_size(h.response), "think_mean_ns": h.think, "mean_rate_bps": h.mean_rate,
        }  # fmt: skip
    else:
        o = wl.onoff
        out["onoff"] = {
            "hosts": list(o.hosts), "peers": list(o.peers), "size": _resolve_size(o.size),
            "idle_mean_ns": o.idle, "mean_rate_bps": o.mean_rate,
        }  # fmt: skip
    return out


def _resolve_flow(flow: Flow, stop: int) -> dict[str, Any]:
    """The engine's flow, active from its start to ``stop`` (ns)."""
    spec = flow.spec
    common = {
        "name": flow.name, "src": spec.src, "dst": spec.dst, "start_ns": flow.start, "stop_ns": stop,
        "dscp": flow.dscp, "src_port": flow.src_port, "dst_port": flow.dst_port,
    }  # fmt: skip
    if flow.tcp is not None:
        app = _resolve_tcp(flow.tcp)
    elif flow.udp is not None:
        udp = flow.udp
        schedule = udp.schedule if udp.schedule is not None else [(flow.start, udp.rate)]
        app = {"size_bytes": udp.size, "schedule": [[time, rate] for time, rate in schedule]}
    elif flow.poisson is not None:
        poisson = flow.poisson
        app = {"rate_bps": poisson.rate, "size_bytes": poisson.size, "exp_size": poisson.sizes == "exponential"}
    elif flow.onoff is not None:
        o = flow.onoff
        app = {"rate_bps": o.rate, "size_bytes": o.size, "on_mean_ns": o.on_mean, "off_mean_ns": o.off_mean, "pareto_shape": o.pareto_shape}
    elif flow.video is not None:
        v = flow.video
        app = {"mean_rate_bps": v.rate, "size_bytes": v.size, "fps": v.fps, "sigma": v.sigma}
    else:
        app = {"interval_ns": flow.ping.interval, "size_bytes": flow.ping.size}
    return {**common, flow.kind: app}
