"""Private native module of alphaqos: the Rust engine (crates/alphaqos-sim).

The configuration is the resolved JSON document of docs/engine-config.md;
results are {table: {column: list}} with integer nanosecond times.
"""

class ConfigError(ValueError):
    """A configuration the engine refuses; ``str()`` is ``"path: msg"``."""

    loc: tuple[str | int, ...]
    """Where: field names and list indices, outermost first (``("flows", 3, "tcp", "mss_bytes")``); empty for the whole configuration."""
    msg: str
    """What is wrong."""

class Simulation:
    def __init__(self, config_json: str) -> None:
        """Build the network; raises :class:`ConfigError` at the faulty field."""
    @property
    def duration_ns(self) -> int: ...
    @property
    def now_ns(self) -> int: ...
    @property
    def events(self) -> int:
        """Events processed so far."""
    def advance(self, until_ns: int) -> None:
        """Run the event loop up to until_ns (capped at the duration); releases the GIL."""
    def advance_before(self, until_ns: int) -> None:
        """Run every event before ``until_ns`` (capped at the duration)."""
    def get(self, handle: str, what: str) -> float:
        """A measurement or knob of the component ``handle`` names (base units); ValueError if none."""
    def set(self, agent: str, handle: str, knob: str, value: float) -> float:
        """Change a knob as ``agent`` (logged in the control table); the old value. ValueError if refused."""
    def results(self) -> dict[str, dict[str, list]]:
        """The tables tcp, udp, ping, queue, queue_summary, flow_summary,
        workload, workload_tcp, transfers, transfer_streams, filter, run, yaqs, yaqs_series,
        monitor, qlen_hist."""

def version() -> str: ...
def check(config_json: str, pairs: list[tuple[str, str]] = []) -> tuple[list[tuple[tuple[str | int, ...], str]], dict]:
    """Check a configuration without running it (no tap is opened): every
    problem as (its location, as :attr:`ConfigError.loc`, e.g. ``("flows", 3,
    "tcp", "mss_bytes")``; message), and what the engine applies on its own: ``{"addresses": {node:
    dotted address}, "paths": [link indices from a to b, or None, per pair]}``.
    A problem of the nodes or links stops the check there; each flow,
    workload and agent is reported on its own."""
def cc_names() -> list[str]:
    """The congestion controls the engine implements."""
def cc_params(name: str, params_json: str) -> str:
    """A controller's parameters (JSON, base units) with every default the
    engine applies; raises ValueError if the engine refuses them."""
def applied_config(config_json: str) -> str:
    """A configuration (JSON) as the engine applies it: every key it leaves
    out given the engine's default; raises ValueError if the engine cannot
    read it."""
def knobs() -> list[tuple[str, str, str]]:
    """Every knob: (name, unit, what it does)."""
def trace_info(path: str) -> tuple[int, float, int, int, int]:
    """(packets, mean rate in bit/s, span in ns, skipped non-IPv4 frames,
    pcap records put back in time order) of a pcap or CSV trace; ValueError
    naming the file and byte offset."""
def trace_replay(path: str, beta: float, queue_json: str, interval_ns: int, seed: int) -> dict[str, dict[str, list]]:
    """Replay a trace into a link of beta times its mean rate with the queue
    queue_json (engine configuration): tables replay, replay_series,
    qlen_hist and, for YAQS, yaqs."""

class Bookings:
    """Booked bandwidth per link as step functions of time (the admission core
    shared with the engine's ``call_admission`` agent). ``links`` are
    ``[(link_index, reservable_bps), ...]``; times ns, rates bit/s."""

    def __init__(self) -> None: ...
    def peak(self, link: int, start: int, end: int) -> int: ...
    def fits(self, links: list[tuple[int, int]], start: int, end: int, rate: int) -> bool: ...
    def change(self, links: list[tuple[int, int]], start: int, end: int, delta: int) -> None: ...
    def fits_profile(self, links: list[tuple[int, int]], profile: list[tuple[int, int]], end: int) -> bool: ...
    def change_profile(self, links: list[tuple[int, int]], profile: list[tuple[int, int]], end: int, sign: int) -> None: ...
    def steps(self, link: int, start: int, end: int) -> list[tuple[int, int]]: ...

class FlowDecoder:
    """The native NetFlow v5/v9 and IPFIX decoder of ``flows collect``
    (``crates/alphaqos-py/src/flows.rs``; wrapped by
    :class:`alphaqos.flows.native.NativeDecoder`, the interface of the Python
    reference decoder). ``sampling``: {exporter: N} ("*": all);
    ``window_us``: half-width of the plausible time window (None: 1970-2199
    only); ``caps``: the netflow.py caps by lower-case name."""

    def __init__(self, sampling: dict[str, int] | None = None, window_us: int | None = None,
                 caps: dict[str, int] | None = None) -> None: ...
    def feed(self, datagram: bytes, exporter: str, received_us: int | None = None) -> int:
        """Decode one datagram; the flow records it added."""
    def recv(self, fd: int, limit: int, timeout_ms: int, pending: int) -> int:
        """Wait up to timeout_ms for the non-blocking UDP socket fd, then read
        (recvmmsg) and decode up to limit datagrams, or until pending records
        wait; the GIL released throughout. The datagrams read."""
    @property
    def pending(self) -> int: ...
    def detach(self, max_packet_bytes: dict[str, int] | None = None) -> dict:
        """The records so far, the impossible ones left out: table (a
        FlowColumns, the canonical columns grouped by exporter and day), parts
        [(exporter, day since the epoch, first row, rows)], n, exporters,
        counted, rejected, unknown."""
    def counters(self) -> dict:
        """counts, stats, exporter_counts, exporter_stats (non-zero), held_bytes,
        held_sets, templates, template_fields, sequences, sampler_states, names."""
    def problems(self) -> list[tuple[str, str, str]]:
        """The problems kept (the first 10,000): (exporter, reason, detail)."""

class FlowColumns:
    """The canonical columns of a ``FlowDecoder.detach()`` for
    ``polars.DataFrame`` (the Arrow PyCapsule interface); taken once."""

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...
