"""The scenario schema: what users write, validated, then resolved for the engine.

A scenario is a YAML file (or a dict of the same shape) describing a
topology, its queues and the traffic that crosses it::

    name: two-hosts
    duration: 20s                    # seed (1) and metric_interval (100ms) optional
    nodes:
      H1: {address: 10.0.1.1}        # a host needs an IPv4 address
      H2: {address: 10.0.2.1}
      R:  {router: true}             # a router's address is optional
    links:
      - {between: [H1, R], rate: 10Gbps, delay: 0.05ms}
      - between: [R, H2]
        rate: 1Gbps
        delay: 1ms
        queues: {R: {fifo: {limit: 125MB}}}   # egress of R towards H2
    flows:
      - {name: bulk, tcp: {from: H1, to: H2, cc: newreno}, start: 1s}
      - {name: probe, ping: {from: H2, to: H1, interval: 100ms}}

Every key and its default is documented on the models below. Validation
happens in two passes, both reported through
:class:`~alphaqos.errors.ScenarioError` with the file, line and field path:

1. structure (pydantic models, ``extra='forbid'``): known keys, types, units
   (via :mod:`alphaqos.units`), ranges of single values;
2. cross-field checks (:func:`_cross_checks`): names that must exist,
   unique addresses, flow names and links, flows between hosts that a path
   joins (routed as the engine routes: fewest hops, only routers forward),
   packets that fit every MTU on that path, flow times within the run,
   ascending UDP schedules, consistent RED thresholds and TCP timers.

:func:`resolve` then turns a valid :class:`Scenario` into the engine's
resolved configuration (integers in base units, every default filled in),
as documented in ``docs/engine-config.md``.
"""

# The package: the models (:mod:`.models`), loading with the checks and
# the mapping of every problem to the user's file line and field path
# (:mod:`.loading`), and resolution into the engine's configuration
# (:mod:`.resolution`). Names other modules and the tests use are
# re-exported here.
from .loading import engine_issue, load_policy_file, load_scenario, user_loc
from .models import (
    CONGESTION_CONTROLS,
    DEFAULT_WORKLOAD_TCP,
    ENGINE_DEFAULTS,
    FLOW_KINDS,
    MAX_PACKET_BYTES,
    MIN_IPV4_MTU_BYTES,
    MIN_PACKET_BYTES,
    QUEUE_KINDS,
    Fifo,
    Flow,
    Http,
    Link,
    Node,
    OnOffUdp,
    Ping,
    Poisson,
    Queue,
    Red,
    Scenario,
    Tcp,
    Udp,
    Video,
    Workload,
)
from .resolution import resolve

__all__ = [
    "CONGESTION_CONTROLS",
    "DEFAULT_WORKLOAD_TCP",
    "ENGINE_DEFAULTS",
    "FLOW_KINDS",
    "MAX_PACKET_BYTES",
    "MIN_IPV4_MTU_BYTES",
    "MIN_PACKET_BYTES",
    "QUEUE_KINDS",
    "Fifo",
    "Flow",
    "Link",
    "Node",
    "Http",
    "OnOffUdp",
    "Ping",
    "Poisson",
    "Video",
    "Queue",
    "Red",
    "Scenario",
    "Tcp",
    "Udp",
    "Workload",
    "engine_issue",
    "load_policy_file",
    "load_scenario",
    "resolve",
    "user_loc",
]
