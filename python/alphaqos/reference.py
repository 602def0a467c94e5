"""``docs/scenario-reference.md``, generated from the schema: every key of a
scenario and of a policy, with its type and unit, default and an example.

``alphaqos reference [--out FILE]`` writes it. The generator walks the
pydantic models from :class:`~alphaqos.scenario.Scenario` down (and the
congestion controllers' ``cc_params`` models of :mod:`alphaqos.cc`), so a
key added to a model appears in the reference by itself; a test regenerates
the file and fails if the committed one differs.

What each part comes from:

- the section text: the model's docstring;
- a key's description: the comment lines just above the field (``#:`` or
  ``#``), or the string just below it, in the model's source;
- its type and unit: the field's annotation, through :data:`VALUE_TYPES`
  (the parsers of :mod:`alphaqos.units` and :mod:`alphaqos.fields` by
  name), ``Literal`` choices, numeric bounds and nested models;
- its default: the model's default, written as a scenario writes it;
- the example of a section: :data:`EXAMPLES` where one is written (every
  example is validated against its model by the tests), else one built from
  the required keys' examples.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from .cc import CC_PARAMS
from .scenario import MAX_PACKET_BYTES, MIN_IPV4_MTU_BYTES, MIN_PACKET_BYTES, Scenario

__all__ = ["DESCRIPTIONS", "EXAMPLES", "FIELD_EXAMPLES", "VALUE_TYPES", "generate", "models", "section_example"]

#: Value types by the name of the function that parses them:
#: (what it is, with its unit; an example as a user writes it).
VALUE_TYPES: dict[str, tuple[str, Any]] = {
    "parse_rate": ("rate (bit/s; bps, Kbps, Mbps, Gbps, Tbps)", "10Gbps"),
    "parse_size": ("size (bytes; B, KB, MB, GB, KiB, MiB, ...)", "1500B"),
    "parse_time": ("time (ns, us, ms, s, min, h, d)", "20ms"),
    "parse_queue_limit": ("queue limit: packets (`1000p`), bytes (`125MB`) or `unlimited`", "1000p"),
    "_parse_name": ("name (letters, digits, `.`, `_`, `-`)", "alpha"),
    "_parse_ipv4": ("IPv4 address", "10.0.1.1"),
    "_prefix": ("IPv4 prefix", "10.0.2.0/24"),
    "_congestion_control": (f"congestion control: {', '.join(f'`{c}`' for c in CC_PARAMS)}", "cubic"),
    "_dscp": ("DSCP: 0..63 or a name (`ef`, `af11`, `cs1`, `be`, ...)", "ef"),
    "_port": ("port 1..65535", 5001),
    "_port_range": ("port or port range", "5000-5010"),
    "_parse_threshold": ("packet count or size (both thresholds of one kind)", 30),
    "_percent": ("percentage", "40%"),
    "_transmit_rate": ("percentage, rate or `remainder`", "60%"),
    "_buffer_size": ("percentage, or `{temporal: TIME}` (junos)", "40%"),
}

#: Conditions that validators add, by the validator's qualified name.
CONDITIONS: dict[str, str] = {
    "_positive.<locals>.check": "> 0",
    "_packet_size": f"{MIN_PACKET_BYTES}B..{MAX_PACKET_BYTES}B",
    "_mtu": f"{MIN_IPV4_MTU_BYTES}B..{MAX_PACKET_BYTES}B",
    "_check_curve": "[fill %, drop %] points, fills increasing, drops not decreasing",
}

#: Section examples, as YAML, for the models where a built one would not do.
EXAMPLES: dict[str, str] = {
    "Scenario": """
        name: two-hosts
        duration: 20s
        nodes:
          H1: {address: 10.0.1.1}
          H2: {address: 10.0.2.1}
          R: {router: true}
        links:
          - {between: [H1, R], rate: 10Gbps, delay: 0.05ms}
          - {between: [R, H2], rate: 1Gbps, delay: 1ms, queues: {R: {fifo: {limit: 125MB}}}}
        flows:
          - {name: bulk, tcp: {from: H1, to: H2, cc: htcp}, start: 1s}
        """,
    "Node": "{router: true, policy: two-queues}",
    "Workload": """
        name: gridftp
        transfer: {from: DTN1, to: DTN2, size: 100GB}
        streams: 8
        start: 10s
        tcp: {cc: htcp, rwnd: 256MiB}
        """,
    "PoissonArrivals": """
        load: {share: 0.5, link: [R1, R2]}
        pairs: {from: [S1, S2], to: [D1, D2]}
        size: {pareto: {shape: 1.5, mean: 1MB}, max: 10GB}
        """,
    "DeadlineTransfer": """
        name: backup
        from: DTN1
        to: DTN2
        size: 20GB
        deadline: 10min
        method: two-connections
        base: {dscp: af11}
        additional: {cc: newreno, dscp: af13}
        block: 4MB
        reservation: {edge: R1, margin: 1.05}
        """,
    "OnOff": "{hosts: [C1, C2, C3], peers: [S], mean_rate: 100kbps, size: {pareto: {shape: 1.2, mean: 8KB}}}",
    "SizeDist": "{empirical: [[1KB, 0.5], [100KB, 0.9], [10MB, 1.0]]}",
    "Pairs": "{all: [H1, H2, H3]}",
    "Pareto": "{shape: 1.2, mean: 8KB}",
    "Lognormal": "{mean: 1MB, sigma: 1.5}",
    "Exponential": "{mean: 100KB}",
    "LinkShare": "{share: 0.5, link: [R1, R2]}",
    "Transfer": "{from: DTN1, to: DTN2, size: 100GB}",
    "WorkloadTcp": "{cc: cubic, rwnd: 64MiB, quickack: 16}",
    "ControlAgent": "{wred_rtt_tuning: {class: R->S/relative, traffic: [web], interval: 50ms, max_p: 0.2}}",
    "WredRttTuning": "{class: R->S/relative, traffic: [web, bulk], interval: 50ms}",
    "DeadlineReservation": "{transfer: gridftp#0, deadline: 60s, margin: 1.05, policer: ER/reserved}",
    "CallAdmission": "{workload: requests, rate: 500Mbps, duration: 30s, edge: ER}",
    "Child": "{fq_codel: {target: 5ms, interval: 100ms}}",
    "FqCodel": "{limit: 10240p, buckets: 1024, quantum: 1514B, target: 5ms, interval: 100ms}",
    "Sfq": "{limit: 127p, buckets: 1024, quantum: 1514B}",
    "Http": "{server: S, clients: [C1, C2], sessions: 4, think: 2s, response: {pareto: {shape: 1.2, mean: 12KB}}}",
    "StreamOptions": "{cc: base_flow, cc_params: {ctr: 500Mbps}, dscp: af11}",
    "Link": """
        between: [WR, W1]
        rate: 10Gbps
        delay: 0.05ms
        mtu: 9000B
        queues: {WR: {policy: two-queues}}
        impairs: {W1: {loss: 0.0001}}
        """,
    "Queue": "{red: {limit: 1000p, min_th: 30, max_th: 90, max_p: 0.1}}",
    "Red": "{limit: 125MB, min_th: 30KB, max_th: 90KB, max_p: 0.1, w_q: 0.002, gentle: true}",
    "Htb": """
        classes:
          "1:1": {rate: 900Mbps, ceil: 900Mbps}
          "1:10": {parent: "1:1", rate: 900Mbps, burst: 15KB}
        filters: [{src: 10.10.200.20/32, class: "1:10"}]
        default: "1:10"
        """,
    "HtbClass": '{parent: "1:1", rate: 600Mbps, ceil: 900Mbps, prio: 1}',
    "HtbFilter": '{src: 10.0.1.0/24, protocol: tcp, class: "1:10"}',
    "Impair": "{loss: 0.001, reorder: {fraction: 0.01, by: 3}}",
    "Flow": "{name: bulk, tcp: {from: E1, to: W1, cc: htcp, rwnd: 48MiB}, start: 53s, stop: 153s, dscp: af11}",
    "Udp": "{from: W2, to: W1, schedule: [[0s, 1Gbps], [10s, 3Gbps]], size: 1500B}",
    "Policy": """
        scheduler: mdrr
        buffer: 1000p
        classes:
          be: {weight: 1, buffer_size: 50%}
          af: {weight: 3, buffer_size: 30%, drop_profile: {wred: {red: {min_th: 10, max_th: 40}}}}
          voice: {buffer_size: 20%, low_latency: strict-priority}
        filter:
          - {name: voice, from: {dscp: ef}, then: {class: voice}}
          - name: af
            from: {dscp: [af11, af12]}
            then: {class: af, policer: {srtcm: {cir: 200Mbps, cbs: 30KB, ebs: 60KB}, red: {class: be}}}
        """,
    "ForwardingClass": "{weight: 3, buffer_size: 30%, drop_profile: {wred: {red: {min_th: 10, max_th: 40, max_p: 0.5}}}}",
    "DropProfile": "{rio: {in: {min_th: 40, max_th: 80}, out: {min_th: 10, max_th: 40, max_p: 0.5}}}",
    "Wred": "{exponential_weighting_constant: 9, green: {min_th: 40, max_th: 80, mark_prob_denominator: 10}, red: {min_th: 10, max_th: 40}}",
    "Gred": "{green: {min_th: 40, max_th: 80}, red: {min_th: 10, max_th: 40, max_p: 0.5}}",
    "Term": "{name: af, from: {dscp: [af11, af12]}, then: {class: af, policer: {trtcm: {cir: 200Mbps, cbs: 30KB, pir: 400Mbps, pbs: 60KB}, red: discard}}}",
    "Then": "{class: alpha, policer: {rate: 1Gbps, burst: 31KB, out_of_profile: {class: scavenger}}}",
    "Policer": "{srtcm: {cir: 200Mbps, cbs: 30KB, ebs: 60KB}, yellow: transmit, red: {class: scavenger}}",
    "BaseFlowParams": "{ctr: 500Mbps, rtt_filter: min}",
}


#: Key descriptions where the model's source has no comment, by
#: ``Model.key`` or, where a key means the same everywhere, by ``key``.
DESCRIPTIONS: dict[str, str] = {
    "Scenario.name": "The scenario's name (run directories and reports use it).",
    "description": "Free text.",
    "Scenario.duration": "Simulated time the run lasts.",
    "seed": "Seed of every random stream; same scenario and seed, same results bit for bit.",
    "metric_interval": "Interval of the time series (goodput, queue length, cwnd).",
    "nodes": "Hosts and routers by name.",
    "policies": "QoS policies by name, inline or a file (`policy.yaml`, or `scenario.yaml#name`).",
    "links": "Full-duplex links between nodes.",
    "flows": "Application flows.",
    "address": "IPv4 address; required for a host, drawn from 10.255.0.0/16 for a router without one.",
    "router": "A router forwards packets; a host does not.",
    "between": "The two nodes the link joins.",
    "Link.rate": "Line rate of each direction.",
    "delay": "One-way propagation delay.",
    "Link.mtu": "Largest IP packet the link carries.",
    "queue": "Egress queue of both directions.",
    "queues": "Egress queue of the direction leaving the named node (overrides `queue`).",
    "impair": "Wire impairment of both directions.",
    "impairs": "Wire impairment of the direction leaving the named node.",
    "limit": "Queue capacity.",
    "min_th": "RED minimum threshold (average queue).",
    "max_th": "RED maximum threshold (average queue).",
    "max_p": "Drop probability at max_th.",
    "WredRttTuning.max_p": "Drop probability at max_th the agent sets on the curve (the document: 0.2).",
    "w_q": "Weight of the average queue's moving average.",
    "gentle": "Probability rises from max_p to 1 between max_th and 2 max_th instead of jumping to 1.",
    "byte_mode": "Drop probability scaled by packet size / mean_pkt_size.",
    "mean_pkt_size": "Packet size of byte mode and of the idle-time correction.",
    "from": "Sending host.",
    "Term.from": "The conditions a packet must meet for the term to apply (all of those given; none: every packet).",
    "Pairs.from": "Senders to draw from (with `to`).",
    "to": "Receiving host.",
    "Pairs.to": "Receivers to draw from (with `from`).",
    "cc": "Congestion control algorithm; its parameters go in cc_params.",
    "rwnd": "Receive window (the receiver's buffer).",
    "mss": "Maximum segment size (TCP payload per packet).",
    "init_cwnd": "Initial congestion window, segments.",
    "delayed_ack": "Receiver delays ACKs (one per ack_every segments or delack_timeout).",
    "ack_every": "Segments per ACK with delayed ACKs.",
    "delack_timeout": "Longest an ACK is delayed.",
    "min_rto": "Lower bound of the retransmission timeout.",
    "initial_rto": "Retransmission timeout before the first RTT sample.",
    "max_rto": "Upper bound of the retransmission timeout.",
    "dupthresh": "Duplicate ACKs that trigger fast retransmit.",
    "Tcp.size": "Bytes to transfer; unset: until the flow stops.",
    "window_scaling": "RFC 7323 window scaling (without it the window is at most 64 KiB).",
    "limited_transmit": "RFC 3042 limited transmit.",
    "sndbuf": "Send buffer; unset: as large as needed.",
    "max_pacing_rate": "Pacing cap, as SO_MAX_PACING_RATE.",
    "pacing": "Linux internal pacing (cwnd / srtt).",
    "cc_params": "Parameters of the congestion control named by cc (sections below, by controller).",
    "Udp.rate": "Constant sending rate (or give schedule).",
    "schedule": "Rate steps `[time, rate]` from the start of the run, ascending.",
    "Udp.size": "IP packet size.",
    "Poisson.rate": "Mean rate.",
    "Poisson.size": "IP packet size (the mean, with sizes: exponential).",
    "sizes": "Fixed packet sizes, or exponentially distributed ones.",
    "Ping.interval": "Time between echo requests.",
    "Ping.size": "IP packet size.",
    "Flow.name": "Unique flow name (results are keyed by it).",
    "Flow.tcp": "A bulk TCP transfer.",
    "udp": "Constant-bit-rate UDP.",
    "ping": "ICMP echo probes.",
    "Flow.poisson": "Poisson UDP packets.",
    "Flow.start": "When the flow starts.",
    "stop": "When it stops; unset: at the end of the run.",
    "scheduler": "Egress scheduler (policy module doc: which class keys each one uses).",
    "buffer": "Interface buffer the classes share, strictly partitioned by buffer_size.",
    "Policy.classes": "Forwarding classes in queue order; the first is the default class.",
    "Htb.classes": "HTB classes by tc class id (`1:10`), parents before their children.",
    "filter": "Firewall filter terms, first match wins.",
    "buffer_size": "Share of the policy's buffer; junos also {temporal: T}: the bytes transmit_rate sends in T.",
    "excess": "junos: excess bandwidth above the transmit rates by priority (default) or proportional (MX Trio).",
    "meter_window": "junos: in/out-of-profile meter depth as transmit_rate x this time (instead of burst).",
    "excess_rate": "junos, excess proportional: weight in the excess; unset: the transmit rate.",
    "excess_priority": "junos: level above the transmit rate (Trio: high, medium-high excess high, others low); none: not demoted.",
    "transmit_rate": "junos: WFQ share (percentage of the line rate, a rate, or what is left).",
    "priority": "junos: priority of in-profile service; strict-priority: the level.",
    "exact": "junos: never exceed transmit_rate (shaped), even when the link is idle.",
    "weight": "wrr: packets per round; mdrr: Cisco weight 1..2048 (quantum MTU + (weight - 1) 512 B).",
    "ForwardingClass.quantum": "drr: bytes per round.",
    "low_latency": "mdrr: this class is the low-latency queue (at most one).",
    "drop_profile": "Early drops by colour (see DropProfile).",
    "loss": "Probability that a packet is lost on the wire.",
    "reorder": "Reordering on the wire.",
    "fraction": "Share of packets delayed.",
    "by": "Positions a delayed packet arrives late.",
    "parent": "Parent class (declared before this one); unset: a root class.",
    "HtbClass.rate": "Guaranteed rate.",
    "ceil": "Rate the class may borrow up to; unset: rate.",
    "HtbClass.burst": "Bytes sent at ceil in one go; unset: as tc computes it.",
    "cburst": "Bytes sent above ceil in one go; unset: as tc computes it.",
    "HtbClass.quantum": "Bytes per round when borrowing; unset: as tc computes it.",
    "prio": "Borrowing priority, 0 first.",
    "src": "Source prefix to match.",
    "dst": "Destination prefix to match.",
    "protocol": "Transport protocol to match.",
    "class": "The class packets go to.",
    "HtbFilter.class": "tc class id (`1:10`) that matching packets go to.",
    "WredRttTuning.class": "Handle of the class (`A->B/class`) or RED interface (`A->B`) whose WRED thresholds the agent sets.",
    "default": "Class of unmatched packets; unset: they go out unshaped.",
    "Term.name": "Term name (counted per term in filter.parquet).",
    "then": "What the term does with a matching packet.",
    "source": "Source prefix.",
    "destination": "Destination prefix.",
    "source_port": "Source port or range.",
    "destination_port": "Destination port or range.",
    "Match.dscp": "DSCP value(s) to match.",
    "Flow.dscp": "DiffServ marking of the flow's packets (both directions).",
    "policer": "Meter the term's packets (single rate, srtcm or trtcm).",
    "discard": "Drop matching packets.",
    "Policer.rate": "Token rate of the single-rate policer.",
    "Policer.burst": "Bucket depth of the single-rate policer.",
    "out_of_profile": "What happens to packets beyond rate and burst.",
    "color_aware": "Respect colours set upstream (never promote a packet).",
    "Policer.yellow": "Action for yellow packets (default transmit).",
    "Policer.red": "Action for red packets (default discard).",
    "yellow": "Parameters for yellow packets.",
    "red": "Parameters for red packets.",
    "fifo": "A drop-tail FIFO.",
    "htb": "Linux HTB shaping (classes and filters).",
    "srtcm": "RFC 2697 single-rate three-colour meter.",
    "trtcm": "RFC 2698 two-rate three-colour meter.",
    "cir": "Committed information rate.",
    "cbs": "Committed burst size.",
    "ebs": "Excess burst size.",
    "pir": "Peak information rate.",
    "pbs": "Peak burst size.",
    "green": "Parameters for green packets.",
    "low": "Junos curve for loss priority low (green).",
    "medium_high": "Junos curve for loss priority medium-high (yellow).",
    "high": "Junos curve for loss priority high (red).",
    "wred": "Cisco WRED per colour.",
    "rio": "RED with In and Out.",
    "gred": "Linux GRED per drop precedence.",
    "in": "Curve for in-profile (green) packets, on their own average.",
    "out": "Curve for out-of-profile (yellow, red) packets, on the whole queue's average.",
    "exponential_weighting_constant": "n: the average's weight is 2^-n.",
    "mark_prob_denominator": "Drop probability at max_th is 1 / this (Cisco's default 10).",
    "src_port": "Source port; unset: an ephemeral port.",
    "dst_port": "Destination port; unset: 5001.",
    "policy": "A policy by name: a router's filter (node) or the classes of an egress queue.",
    "rtt_samples": "RTT samples the min filter keeps.",
    "min_increment_segments": "Smallest window step of the binary search, segments.",
    "max_increment_segments": "Largest window step of the binary search, segments; at least min_increment_segments.",
    "fast_convergence": "Release bandwidth faster when the window at loss shrinks.",
    "filters": "u32-style filters, first match wins.",
    # Queues and their disciplines.
    "Child.red": "RED on the class's buffer (one curve for every colour).",
    "Child.fq_codel": "FQ-CoDel: a CoDel queue per hashed flow, served by deficit round robin (RFC 8290).",
    "Child.sfq": "SFQ-like hashed deficit round robin, a queue per hashed flow.",
    "Child.yaqs": "YAQS local flow separation: a fast and a slow queue (Liberatore).",
    "Queue.fq_codel": "FQ-CoDel: a CoDel queue per hashed flow, served by deficit round robin (RFC 8290).",
    "Queue.sfq": "SFQ-like hashed deficit round robin, a queue per hashed flow.",
    "Queue.yaqs": "YAQS local flow separation: a fast and a slow queue (Liberatore).",
    "Queue.red": "Random Early Detection on the whole queue.",
    "Queue.htb": "Linux HTB host shaping (classes, filters, default class).",
    "Queue.policy": "The classes of a QoS policy, by name.",
    "FqCodel.limit": "Packets (or bytes) all flow queues hold together; over it the fattest flow loses packets. Unset: 10240p on a link, the class's buffer inside a class.",
    "Sfq.limit": "Packets (or bytes) all flow queues hold together; over it the longest flow loses its last packet. Unset: 127p on a link, the class's buffer inside a class.",
    "Yaqs.limit": "Buffer of each of the two queues (fast and slow).",
    "HtbClass.limit": "Capacity of the leaf's queue.",
    "FqCodel.buckets": "Flow queues the flows are hashed into.",
    "Sfq.buckets": "Flow queues the flows are hashed into.",
    "FqCodel.quantum": "Bytes a flow queue may send per round of deficit round robin; unset: the link MTU + 14 B.",
    "Sfq.quantum": "Bytes a flow queue may send per round of deficit round robin; unset: the link MTU + 14 B.",
    "FqCodel.target": "CoDel's target: the queueing delay each flow queue is kept near (RFC 8289).",
    "FqCodel.interval": "CoDel's interval: how long the delay must stay above target before CoDel drops, and the scale of its drop spacing (RFC 8289).",
    "FqCodel.drop_batch": "Packets dropped from the fattest flow at once when the limit is reached.",
    "Yaqs.c_f": "A flow holding more than this many bytes of the fast queue (Count-Sketch estimate) is queued in the slow queue.",
    "Yaqs.c_s": "A flow holding more than this many bytes of the slow queue (exact count) stays in it; 0: no reordering at all.",
    "Yaqs.r": "Weight of the slow queue against the fast queue's 1 (service rates B/(1+r) and rB/(1+r)).",
    "Yaqs.sketch_rows": "Rows of the Count-Sketch (independent hashes; the estimate is their median).",
    "Yaqs.sketch_buckets": "Counters per row of the Count-Sketch.",
    "Yaqs.inflate": "Inflate slow packets' logical length with nop bytes, so no fast packet is overtaken (Algorithm 1, Proposition 2).",
    "Yaqs.counter": "`two` sketches (fast-queue bytes), or one `combined` count of both queues (the document's earlier version).",
    "Yaqs.slow_counts": "Slow-queue bytes per flow counted `exact`ly, or `approximate`d by a second sketch.",
    "Yaqs.epsilon": "Keep exact per-flow counts to measure false positives at this epsilon (Definitions 3 and 4); unset: not measured.",
    "Link.taps": "Per sending node: `true` or a file name for that direction's pcap (overrides `tap`).",
    "Link.monitors": "Per sending node: monitor that direction (overrides `monitor`).",
    # Flows.
    "Flow.onoff": "UDP ON/OFF source (VoIP talker or VBR).",
    "Flow.video": "MPEG-like video over UDP.",
    "OnOffUdp.rate": "Sending rate while ON.",
    "OnOffUdp.size": "IP packet size.",
    "Video.size": "IP packet size.",
    "OnOffUdp.on_mean": "Mean length of an ON period.",
    "OnOffUdp.off_mean": "Mean length of an OFF period.",
    "OnOffUdp.pareto_shape": "Pareto shape of ON and OFF periods; unset: exponential periods.",
    "Video.rate": "Mean rate over a GOP.",
    "Video.fps": "Frames a second.",
    "Video.sigma": "Log-deviation of the lognormal factor on frame sizes.",
    "fack": "Forward acknowledgement (Linux `tcp_fack`); unset: the host profile's.",
    "adaptive_reordering": "Raise the reordering metric (dupthresh) when reordering is seen, as Linux does; unset: the host profile's.",
    "max_reordering": "Upper bound of the adaptive reordering metric; unset: the host profile's.",
    "undo": "Undo a spurious recovery (timestamps, D-SACK); unset: the host profile's.",
    "dsack": "Receiver reports duplicate segments (D-SACK, RFC 2883); unset: the host profile's.",
    "moderate_cwnd": "Moderate cwnd to packets in flight + 3 in Disorder (Linux `tcp_moderate_cwnd`); unset: the host profile's.",
    "rate_halving": "Rate-halving in recovery instead of halving cwnd at once; unset: the host profile's.",
    "quickack_after_dup": "Receiver ACKs at once after a duplicate or out-of-order segment; unset: the host profile's.",
    "napi_interval": "Shortest time between the receiving NIC's interrupts (NAPI polls) with GRO; unset: the host profile's.",
    # Workloads.
    "Workload.name": "Unique workload name (results are keyed by it, `NAME#k` for its k-th transfer).",
    "Workload.transfer": "One file at the workload's start.",
    "Workload.poisson": "Transfers arriving as a Poisson process.",
    "Workload.onoff": "Web-like ON/OFF sources.",
    "Workload.http": "HTTP browsing sessions.",
    "Workload.tcp": "TCP options of the workload's connections.",
    "Workload.streams": "Parallel TCP connections each transfer is striped over.",
    "Workload.start": "No transfer starts before this time.",
    "Workload.dscp": "DiffServ marking of the workload's packets (a stream's stream_options may change it).",
    "Workload.write_size": "Size of the application's writes with app_rate; unset: one MSS.",
    "Workload.block": "Block handed to a stream under dynamic striping.",
    "Transfer.size": "Bytes of the file.",
    "PoissonArrivals.rate": "Transfers arriving per second (or give load).",
    "PoissonArrivals.load": "Offered load (a rate, or a share of a link's rate); the arrival rate follows from the mean size.",
    "PoissonArrivals.pairs": "Which hosts each transfer joins.",
    "PoissonArrivals.size": "Transfer sizes.",
    "LinkShare.share": "Share of the link's rate (0..1].",
    "LinkShare.link": "The link, by the two nodes it joins.",
    "Pairs.all": "Hosts of which every ordered pair of distinct hosts may be drawn.",
    "Pairs.list": "`[from, to]` pairs to draw from.",
    "SizeDist.fixed": "Every transfer this size.",
    "SizeDist.exponential": "Exponentially distributed sizes.",
    "SizeDist.pareto": "Pareto (heavy-tailed) sizes.",
    "SizeDist.lognormal": "Lognormal sizes.",
    "SizeDist.empirical": "A CDF `[[size, probability], ...]`, sizes increasing, probabilities up to 1.",
    "SizeDist.max": "Every draw is cut to this size.",
    "Exponential.mean": "Mean size.",
    "Pareto.shape": "Tail index (> 1, so the mean is finite; smaller: heavier tail).",
    "Pareto.mean": "Mean size.",
    "Lognormal.mean": "Mean size.",
    "Lognormal.sigma": "Deviation of the size's logarithm.",
    "OnOff.hosts": "Hosts that send, one source each.",
    "OnOff.peers": "Hosts a source's transfers go to, one at random each time.",
    "OnOff.size": "Transfer sizes.",
    "OnOff.idle": "Mean idle time after each transfer (or give mean_rate).",
    "OnOff.mean_rate": "Mean rate of each source, setting the think time between starts (or give idle).",
    "Http.server": "Host that serves the pages.",
    "Http.clients": "Hosts that browse.",
    "Http.sessions": "Sessions on each client.",
    "Http.request": "Bytes of each request.",
    "Http.response": "Sizes of the responses.",
    "Http.think": "Mean think time after a response (or give mean_rate).",
    "Http.mean_rate": "Rate of responses the whole workload offers, setting the think time between page starts (or give think).",
    "StreamOptions.dscp": "This stream's DiffServ marking; unset: the workload's.",
    # Control agents.
    "ControlAgent.wred_rtt_tuning": "RTT-tuned WRED (Bouras & Sevasti).",
    "ControlAgent.deadline_reservation": "A transfer's reservation recomputed towards its deadline.",
    "ControlAgent.call_admission": "Admission of a workload's transfers on link bookings.",
    "WredRttTuning.name": "The agent's name in control.parquet; unset: one is made up.",
    "DeadlineReservation.name": "The agent's name in control.parquet; unset: one is made up.",
    "CallAdmission.name": "The agent's name in control.parquet; unset: one is made up.",
    "WredRttTuning.traffic": "Flows and workloads whose TCP RTT samples give the class's mean RTT.",
    "WredRttTuning.interval": "How often max_th = r RTT / (MTU 8) is recomputed.",
    "WredRttTuning.min_fraction": "min_th as a fraction of max_th (the document: 0.15).",
    "WredRttTuning.rate": "r, the class's service rate; unset: its transmit rate, else the link's.",
    "WredRttTuning.mtu": "MTU of the equation; unset: the link's.",
    "DeadlineReservation.transfer": "Handle of the transfer (a flow or `workload#k`).",
    "DeadlineReservation.deadline": "When the transfer is due, from the start of the run.",
    "DeadlineReservation.margin": "Reservation above the bare need (bytes left / time left) as a factor.",
    "DeadlineReservation.interval": "How often the reservation is recomputed.",
    "DeadlineReservation.policer": "Handle of the edge policer (`router/term`) whose rate follows the reservation; unset: only the sender's target rate.",
    "CallAdmission.workload": "Handle of the workload whose transfers ask for admission.",
    "CallAdmission.rate": "Rate each transfer asks for (or give deadline).",
    "CallAdmission.duration": "How long each booking at `rate` lasts; unset: the transfer's size at that rate.",
    "CallAdmission.deadline": "Each transfer asks for size x 8 / deadline x margin until this long after its start (or give rate).",
    "CallAdmission.margin": "Reservation above the bare need (bytes left / time left) as a factor.",
    "CallAdmission.capacity_fraction": "Share of each link's rate that bookings may take.",
    "CallAdmission.edge": "Router whose filter polices each admitted transfer; unset: not policed.",
    "CallAdmission.burst": "Bucket depth of the admitted transfers' policers.",
    "CallAdmission.reservation": "Give each admitted transfer a deadline reservation agent that its booking follows (needs deadline).",
    "CallAdmission.interval": "How often bookings follow the reservation agents.",
    "Reservation.interval": "How often a dynamic reservation is recomputed.",
    "Reservation.margin": "Reservation above the bare need (bytes left / time left) as a factor.",
    # Deadline transfers.
    "DeadlineTransfer.name": "Unique name of the transfer (results are keyed by it).",
    "DeadlineTransfer.size": "Bytes of the file.",
    "DeadlineTransfer.deadline": "When the file is due, after its start.",
    "DeadlineTransfer.start": "When the transfer starts.",
    "DeadlineTransfer.method": "How the file is sent (the third document's methods; see the module doc).",
    "DeadlineTransfer.base": "The connection that carries the reservation.",
    "DeadlineTransfer.block": "Block of the file handed to whichever connection has room.",
    "DeadlineTransfer.reservation": "Where the reservation is policed and how it is controlled.",
    "BaseConnection.dscp": "The base connection's marking (af11).",
    "AdditionalConnection.dscp": "The additional connection's marking (af13).",
}

#: Example values where the type's own would mislead, by ``key``.
FIELD_EXAMPLES: dict[str, Any] = {
    "from": "E1", "to": "W1", "between": ["WR", "W1"], "rwnd": "48MiB", "mss": "8948B", "sndbuf": "64MiB",
    "Tcp.size": "10GB", "max_pacing_rate": "5Gbps", "delack_timeout": "40ms", "min_rto": "200ms",
    "initial_rto": "1s", "max_rto": "60s", "duration": "200s", "metric_interval": "100ms", "delay": "0.05ms",
    "mtu": "9000B", "overhead": "38B", "interval": "100ms", "start": "53s", "stop": "153s", "weight": 3,
    "Scenario.name": "yan2013-exp1", "Flow.name": "bulk", "Term.name": "alpha-flow", "policy": "two-queues",
    "class": "alpha", "parent": "1:1", "default": "1:10", "quantum": "1514B", "cbs": "30KB", "ebs": "60KB",
    "pbs": "60KB", "cir": "200Mbps", "pir": "400Mbps", "Policer.burst": "31KB", "Policer.rate": "1Gbps",
    "HtbClass.burst": "15KB", "cburst": "15KB", "HtbClass.quantum": "1514B", "ack_every": 2, "dupthresh": 3,
    "init_cwnd": 10, "mean_pkt_size": "1000B", "seed": 7, "description": "Yan et al. 2013, experiment 1",
    "loss": 0.0001, "fraction": 0.01, "max_p": 0.1, "w_q": 0.002, "high": [[0, 0], [100, 100]],
    "low": [[50, 0], [100, 100]], "medium_high": [[25, 0], [100, 100]], "exponential_weighting_constant": 9,
    "mark_prob_denominator": 10, "source": "10.0.2.0/24", "destination": "10.0.1.1/32", "src": "10.0.2.0/24",
    "dst": "10.0.1.0/24", "ceil": "900Mbps", "HtbClass.rate": "600Mbps", "Udp.rate": "3Gbps",
    "Poisson.rate": "500Mbps", "Link.rate": "10Gbps", "limit": "125MB", "buffer": "125MB", "min_th": 30,
    "max_th": 90, "ctr": "500Mbps", "beta": 0.7, "c": 0.4, "meter_window": "1ms", "excess_rate": "10%",
    "excess": "proportional", "excess_priority": "low",
    "margin": 1.05, "Pairs.from": ["S1", "S2"], "Pairs.to": ["D1", "D2"], "empirical": [["1KB", 0.5], ["10MB", 1.0]],
    "Transfer.size": "100GB", "DeadlineTransfer.size": "20GB", "epsilon": 0.1, "fps": 25, "Pairs.all": ["H1", "H2", "H3"], "traffic": ["web", "bulk"], "Yaqs.c_f": "16500B",
}  # fmt: skip


def models() -> list[tuple[type[BaseModel], list[str]]]:
    """Every model reachable from a scenario, in the order a reader meets
    them, with the paths where it appears (``links[].queues.<node>``)."""
    found: dict[type[BaseModel], list[str]] = {}

    def visit(model: type[BaseModel], path: str) -> None:
        first = model not in found
        found.setdefault(model, [])
        if path not in found[model]:
            found[model].append(path)
        if not first:
            return
        for key, info in _fields(model):
            for inner, suffix in _nested(info.annotation):
                visit(inner, f"{path}.{key}{suffix}" if path else f"{key}{suffix}")

    visit(Scenario, "")
    for name, params in CC_PARAMS.items():
        if params.model_fields:
            visit(params, f"flows[].tcp.cc_params (cc: {name})")
    return list(found.items())


def generate() -> str:
    """The whole reference, as markdown."""
    sections = models()
    out = [
        "# Scenario and policy reference",
        "",
        "Generated by `alphaqos reference --out docs/scenario-reference.md` from the schema",
        "(`python/alphaqos/scenario.py`, `policy.py`, `cc.py`): edit the models, not this file.",
        "",
        "Units are written as strings and parsed exactly: rates in bit/s (`10Gbps`, `500Mbps`),",
        "sizes in bytes (`1500B`, `125MB`, `48MiB`), times (`0.05ms`, `20s`), queue limits in",
        "packets (`1000p`) or bytes (`125MB`). A key marked *required* has no default; *unset*",
        "means the feature is off or, where the section says so, derived from other keys. An",
        "unknown key is an error that names the keys allowed where it stands.",
        "",
        "## Contents",
        "",
    ]
    out += [f"- [{model.__name__}](#{model.__name__.lower()}): `{paths[0] or 'the scenario file'}`" for model, paths in sections]
    for model, paths in sections:
        out += ["", f"## {model.__name__}", ""]
        doc = model.__dict__.get("__doc__")  # its own, not a base class's
        if doc:
            out += [inspect.cleandoc(doc), ""]
        where = ", ".join(f"`{p}`" for p in paths) if paths[0] else "the top level of a scenario file"
        out += [f"Where: {where}.", ""]
        fields = _fields(model)
        if fields:
            out += ["| key | type and unit | default | example | description |", "|---|---|---|---|---|"]
            notes = _field_notes(model)
            for key, info in fields:
                out.append("| " + " | ".join([
                    f"`{key}`", _describe(info.annotation, info.metadata), _default(info),
                    _cell_example(model, key, info), _note(model, key, notes).replace("|", "\\|"),
                ]) + " |")  # fmt: skip
        else:
            out.append("No keys.")
        example = section_example(model)
        if example is not None:
            text = yaml.safe_dump(example, sort_keys=False, default_flow_style=None, width=100, allow_unicode=True)
            out += ["", "Example:", "", "```yaml", text.rstrip(), "```"]
    return "\n".join(out) + "\n"


def _note(model: type[BaseModel], key: str, notes: dict[str, str]) -> str:
    """The key's comment in the source, else :data:`DESCRIPTIONS`."""
    found = notes.get(_attribute(model, key))
    return found or DESCRIPTIONS.get(f"{model.__name__}.{key}", DESCRIPTIONS.get(key, ""))


def _cell_example(model: type[BaseModel], key: str, info: FieldInfo) -> str:
    """A key's example for the table; a key holding a model points at its section."""
    inner = [m for m, _ in _nested(info.annotation)]
    if inner:
        return "see " + ", ".join(f"[{m.__name__}](#{m.__name__.lower()})" for m in dict.fromkeys(inner))
    return _inline(_example(info, model, key))


def section_example(model: type[BaseModel]) -> Any:
    """The section's example: the written one, or one from the required
    keys' examples (None for a model without keys)."""
    if model.__name__ in EXAMPLES:
        return yaml.safe_load(textwrap.dedent(EXAMPLES[model.__name__]))
    if not model.model_fields:
        return None
    required = {key: _example(info, model, key) for key, info in _fields(model) if info.is_required()}
    return required or {key: _example(info, model, key) for key, info in _fields(model)[:1]}


# --- the walk ----------------------------------------------------------------------


def _fields(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    """(key as written in a scenario, field info), in declaration order."""
    return [(info.alias or name, info) for name, info in model.model_fields.items()]


def _attribute(model: type[BaseModel], key: str) -> str:
    return next(name for name, info in model.model_fields.items() if (info.alias or name) == key)


def _nested(annotation: Any) -> Iterator[tuple[type[BaseModel], str]]:
    """Models inside an annotation, with the path suffix of each
    (``[]`` for a list item, ``.<name>`` for a mapping's value)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, ""
    elif origin is Annotated:
        yield from _nested(args[0])
    elif origin in (Union, types.UnionType):
        for arg in args:
            yield from _nested(arg)
    elif origin is list:
        yield from ((m, f"[]{s}") for m, s in _nested(args[0]))
    elif origin is dict:
        yield from ((m, f".<name>{s}") for m, s in _nested(args[1]))
    elif origin is tuple:
        for arg in args:
            yield from ((m, f"[]{s}") for m, s in _nested(arg))


def _describe(annotation: Any, metadata: list[Any] = ()) -> str:
    """A type as a reader wants it: what it is, its unit and bounds."""
    text, conditions = _describe_inner(annotation, list(metadata))
    return text + (f" ({', '.join(conditions)})" if conditions else "")


def _describe_inner(annotation: Any, metadata: list[Any]) -> tuple[str, list[str]]:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _describe_inner(args[0], [*metadata, *_flat(annotation.__metadata__)])
    conditions = [c for c in map(_condition, metadata) if c]
    parser = next((m.func for m in metadata if type(m).__name__ == "PlainValidator"), None)
    if parser is not None:
        name = getattr(parser, "__name__", "")
        if name in VALUE_TYPES:
            return VALUE_TYPES[name][0], conditions
        first = (inspect.getdoc(parser) or name).splitlines()[0]
        return first, conditions
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})", conditions
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args), conditions
    if origin in (Union, types.UnionType):
        parts = [_describe(a) for a in args if a is not type(None)]
        return " or ".join(parts), conditions
    if origin is list:
        return f"list of {_describe(args[0])}", conditions
    if origin is dict:
        return f"mapping of {_describe(args[0])} to {_describe(args[1])}", conditions
    if origin is tuple:
        return "[" + ", ".join(_describe(a) for a in args) + "]", conditions
    names = {bool: "true or false", int: "integer", float: "number", str: "text"}
    return names.get(annotation, "any"), conditions


def _flat(metadata: Any) -> list[Any]:
    """Annotated metadata with pydantic's ``Field(gt=...)`` opened into its
    bounds (inside a union, a field's bounds stay in its FieldInfo)."""
    return [m for meta in metadata for m in (meta.metadata if isinstance(meta, FieldInfo) else [meta])]


def _condition(meta: Any) -> str | None:
    bounds = {annotated_types.Ge: ">=", annotated_types.Gt: ">", annotated_types.Le: "<=", annotated_types.Lt: "<"}
    for kind, sign in bounds.items():
        if isinstance(meta, kind):
            value = getattr(meta, kind.__name__.lower())
            return f"{sign} {value:,}" if isinstance(value, int) and abs(value) >= 10_000 else f"{sign} {value}"
    if isinstance(meta, annotated_types.MinLen):
        return f"at least {meta.min_length}"
    if type(meta).__name__ == "AfterValidator":
        return CONDITIONS.get(getattr(meta.func, "__qualname__", ""))
    return None


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "*required*"
    if info.default is None:
        return "*unset*"
    # A default built by a factory (a fresh model per item) is shown as the value it builds.
    default = info.get_default(call_default_factory=True)
    if default is None:
        return "*unset*"
    adapter = TypeAdapter(Annotated[info.annotation, *info.metadata]) if info.metadata else TypeAdapter(info.annotation)
    return _inline(adapter.dump_python(default, mode="json", by_alias=True, exclude_none=True))


def _example(info: FieldInfo, model: type[BaseModel] | None = None, key: str = "") -> Any:
    """A value for this key, as a user writes it."""
    name = f"{model.__name__}.{key}" if model else ""
    if name in FIELD_EXAMPLES or key in FIELD_EXAMPLES:
        return FIELD_EXAMPLES.get(name, FIELD_EXAMPLES.get(key))
    found = _type_example(info.annotation, list(info.metadata))
    if found is not None:
        return found
    if not info.is_required() and info.default is not None:
        return yaml.safe_load(_default(info).strip("`")) if info.default != "" else "text"
    return "text"


def _type_example(annotation: Any, metadata: list[Any]) -> Any:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type_example(args[0], [*metadata, *_flat(annotation.__metadata__)])
    parser = next((m.func for m in metadata if type(m).__name__ == "PlainValidator"), None)
    if parser is not None:
        return VALUE_TYPES.get(getattr(parser, "__name__", ""), (None, None))[1]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return section_example(annotation)
    if origin is Literal:
        return args[0]
    if origin in (Union, types.UnionType):
        return next((e for a in args if a is not type(None) if (e := _type_example(a, [])) is not None), None)
    if origin is list:
        item = _type_example(args[0], [])
        return None if item is None else [item]
    if origin is tuple:
        items = [_type_example(a, []) for a in args]
        return None if None in items else items
    if origin is dict:
        value = _type_example(args[1], [])
        return {} if value is None else {"name": value}
    lower = next((getattr(m, type(m).__name__.lower()) for m in metadata
                  if isinstance(m, (annotated_types.Ge, annotated_types.Gt))), None)  # fmt: skip
    upper = next((getattr(m, type(m).__name__.lower()) for m in metadata
                  if isinstance(m, (annotated_types.Le, annotated_types.Lt))), None)  # fmt: skip
    if annotation is bool:
        return True
    if annotation is int:
        return max(1, int(lower or 1))
    if annotation is float:
        # Inside the bounds: a Pareto shape (> 1) is not 0.5.
        value = 0.5 if lower is None or lower < 0.5 else lower + 0.5
        return value if upper is None or value < upper else upper / 2
    return None


def _inline(value: Any) -> str:
    """A value as inline YAML in backquotes."""
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()
    text = text.removesuffix("\n...").removesuffix("...").strip()
    return f"`{text}`".replace("|", "\\|")


@functools.cache
def _field_notes(model: type[BaseModel]) -> dict[str, str]:
    """Each field's description from the model's source: the comment lines
    just above it, or the string just below it (inherited fields too)."""
    notes: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            lines, _ = inspect.getsourcelines(cls)
        except (OSError, TypeError):
            continue
        source = textwrap.dedent("".join(lines))
        body = ast.parse(source).body[0].body
        text = source.splitlines()
        for index, node in enumerate(body):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            comment = []
            row = node.lineno - 2
            while row >= 0 and text[row].strip().startswith("#"):
                comment.insert(0, text[row].strip().lstrip("#:").strip())
                row -= 1
            after = body[index + 1] if index + 1 < len(body) else None
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                comment.append(" ".join(after.value.value.split()))
            if comment:
                notes[node.target.id] = " ".join(comment)
    return notes
