"""Private native module of alphaqos: the Rust engine (crates/alphaqos-sim).

The configuration is the resolved JSON document of docs/engine-config.md;
results are {table: {column: list}} with integer nanosecond times.
"""

class Simulation:
    def __init__(self, config_json: str) -> None:
        """Build the network; raises ValueError naming the faulty field."""
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
        workload, transfers, transfer_streams, filter, run."""

def version() -> str: ...
def cc_names() -> list[str]:
    """The congestion controls the engine implements."""
def cc_params(name: str, params_json: str) -> str:
    """A controller's parameters (JSON, base units) with every default the
    engine applies; raises ValueError if the engine refuses them."""
def knobs() -> list[tuple[str, str, str]]:
    """Every knob: (name, unit, what it does)."""
