"""``alphaqos plan-transfer``: the reservation a deadline transfer would
request, before it runs.

Given a file size, a deadline and a path, the planner runs the deadline
transfer (:mod:`alphaqos.deadline`) on the engine over that path and
reports:

- the reservation schedule the method requests: for a dynamic reservation,
  every update of the ``deadline_reservation`` agent (bytes left x 8 /
  time left x margin); for a static one, its single rate;
- the expected completion time (the receiver holding the whole file);
- the reserved-bandwidth integral (bits reserved over the transfer)
  against a constant reservation of size x 8 / deadline x margin held to
  the deadline;

and writes the scenario it ran (``--out``), which ``alphaqos run`` checks.

The path is a scenario holding the deadline transfer (``SCENARIO``, with
``--transfer NAME`` if it holds several), or a link rate, a round-trip time
and a background rate (``--rate``, ``--rtt``, ``--background``): the
slides' model, a sender behind an edge router that polices the base
connection, a core router whose egress runs RIO, and constant-rate UDP
background marked OUT at the edge. The same planner is what a reservation
service or a transfer tool calls (:func:`plan`).

Bad input (an infeasible deadline, with the earliest possible completion;
a transfer without a base connection; a block larger than the file) is one
line naming the field, exit status 2, and nothing is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from . import columns as col
from . import units
from .errors import Issue, ScenarioError

__all__ = ["Plan", "path_scenario", "plan"]

NS_PER_S = 10**9
#: Hops of the flag-given path: sender -- edge -- core -- receiver, the
#: one-way delays of the access and edge links (the rest is the core link's).
ACCESS_DELAY_NS = 500_000
#: RIO at the core (Clark & Fang's In and Out curves), in packets of the
#: core's buffer; the buffer is one bandwidth-delay product (at least 1000
#: packets): OUT packets go first, IN packets only when the IN backlog
#: itself is large.
#: Rows of the schedule printed at most.
SHOWN = 20
RIO_FRACTIONS = {"in": (0.5, 0.9, 0.02), "out": (0.1, 0.3, 0.1)}


@dataclass
class Plan:
    """What the planner found."""

    name: str
    method: str
    size: int
    deadline_ns: int
    schedule: list[tuple[float, float]]  # (seconds after the transfer's start, bit/s)
    completion_s: float | None  # the receiver held the whole file, after the start
    reserved_bits: float
    constant_bits: float  # size x 8 x margin: a constant rate held to the deadline
    constant_bps: float
    met: bool

    def lines(self) -> list[str]:
        out = [f"deadline transfer {self.name!r}: {units.fmt_size(self.size)} due {units.fmt_time_ns(self.deadline_ns)} after its start, method {self.method}"]
        shown = self.schedule
        if len(shown) > SHOWN:
            step = math.ceil(len(shown) / SHOWN)
            shown = shown[::step] + ([shown[-1]] if (len(shown) - 1) % step else [])
            out.append(f"reservation schedule (time after start, rate; {len(self.schedule)} updates, one in {step} shown and the last):")
        else:
            out.append("reservation schedule (time after start, rate):")
        out += [f"  {t:9.3f} s  {units.fmt_rate(round(r))}" for t, r in shown]
        done = "not within the planned run" if self.completion_s is None else f"{self.completion_s:.3f} s after its start"
        out.append(f"expected completion: {done} ({'meets' if self.met else 'misses'} the deadline)")
        ratio = self.reserved_bits / self.constant_bits if self.constant_bits else math.nan
        out.append(
            f"reserved-bandwidth integral: {self.reserved_bits / 1e9:.4g} Gbit against {self.constant_bits / 1e9:.4g} Gbit "
            f"for a constant {units.fmt_rate(round(self.constant_bps))} held to the deadline (x{ratio:.2f})"
        )
        return out

    def to_json(self) -> dict[str, Any]:
        """The plan as ``--json`` prints it: base units (bytes, seconds, bit/s, bits)."""
        return {
            "transfer": self.name, "method": self.method, "size_bytes": self.size, "deadline_s": self.deadline_ns / NS_PER_S,
            "schedule": [{"time_s": t, "rate_bps": r} for t, r in self.schedule],
            "completion_s": self.completion_s, "meets_deadline": self.met, "reserved_bits": self.reserved_bits,
            "constant_bits": self.constant_bits, "constant_bps": self.constant_bps,
        }  # fmt: skip


def path_scenario(
    *, size: int, deadline: int, rate: int, rtt: int, background: int = 0, method: str = "proposed",
    block: int = 1_000_000, margin: float = 1.05, interval: int = 50_000_000, start: int = 100_000_000,
) -> dict[str, Any]:
    """The scenario of a deadline transfer over the slides' path model
    (module doc): ``rate`` at the core link, ``rtt`` the round trip."""
    core_delay = max(rtt // 2 - 2 * ACCESS_DELAY_NS, 0)
    mss_wire = 1500
    buffer_pkts = max(1000, math.ceil(rate * rtt / NS_PER_S / 8 / mss_wire))

    def curve(kind: str) -> dict[str, Any]:
        lo, hi, p = RIO_FRACTIONS[kind]
        return {"min_th": max(1, round(lo * buffer_pkts)), "max_th": max(2, round(hi * buffer_pkts)), "max_p": p}

    access = {"rate": units.fmt_rate(10 * rate, exact=True), "delay": units.fmt_time_ns(ACCESS_DELAY_NS, exact=True)}
    scenario: dict[str, Any] = {
        "name": "plan-transfer",
        "description": "A deadline transfer planned by alphaqos plan-transfer",
        "duration": units.fmt_time_ns(start + 2 * deadline, exact=True),
        "nodes": {
            "S": {"address": "10.0.1.1"}, "B": {"address": "10.0.1.2"}, "D": {"address": "10.0.2.1"},
            "E": {"router": True, "policy": "edge"}, "C": {"router": True},
        },
        "policies": {
            "edge": {
                "classes": {"af": {"transmit_rate": "100%", "buffer_size": "100%"}},
                "filter": [{"name": "background", "from": {"protocol": "udp"}, "then": {"loss_priority": "high"}}],
            },
            "core": {
                "buffer": f"{buffer_pkts}p",
                "classes": {"af": {"transmit_rate": "100%", "buffer_size": "100%",
                                   "drop_profile": {"rio": {"in": curve("in"), "out": curve("out")}}}},
            },
        },
        "links": [
            {"between": ["S", "E"], **access}, {"between": ["B", "E"], **access}, {"between": ["E", "C"], **access},
            {"between": ["C", "D"], "rate": units.fmt_rate(rate, exact=True), "delay": units.fmt_time_ns(core_delay, exact=True),
             "queues": {"C": {"policy": "core"}}},
        ],
        "flows": [],
        "deadline_transfers": [{
            "name": "transfer", "from": "S", "to": "D", "size": units.fmt_size(size, exact=True),
            "deadline": units.fmt_time_ns(deadline, exact=True), "start": units.fmt_time_ns(start, exact=True),
            "method": method, "base": {"dscp": "af11"}, "block": units.fmt_size(block, exact=True),
            "reservation": {"edge": "E", "margin": margin, "interval": units.fmt_time_ns(interval, exact=True)},
        }],
    }  # fmt: skip
    if background:
        scenario["flows"].append({"name": "background", "udp": {"from": "B", "to": "D", "rate": units.fmt_rate(background, exact=True)}})
    return scenario


def plan(scenario: Any, transfer: str | None = None, *, progress: bool = False) -> tuple[Plan, Any]:
    """Run the deadline transfer ``transfer`` (the only one if None) of a
    scenario (a loaded :class:`~alphaqos.scenario.Scenario`, a dict or a
    file) and report its plan; also the scenario that was run. ``progress``
    draws the run's progress bar on stderr (a plan of a long deadline takes
    a while: 74 s for a 10 GB file due in a minute)."""
    from .deadline import static_rate
    from .engine import simulate
    from .scenario import Scenario, load_scenario

    loaded = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    names = [t.name for t in loaded.deadline_transfers]
    if not names:
        raise _bad("deadline_transfers", "the scenario has no deadline transfer to plan")
    if transfer is None and len(names) > 1:
        raise _bad("deadline_transfers", f"several deadline transfers ({', '.join(names)}): say which with --transfer")
    name = transfer or names[0]
    if name not in names:
        raise _bad("deadline_transfers", f"no deadline transfer {name!r} (have: {', '.join(names)})")
    t = loaded.deadline_transfers[names.index(name)]
    results = simulate(loaded, command="alphaqos plan-transfer", progress=progress)
    row = results.transfers.filter(results.transfers[col.WORKLOAD] == name).row(0, named=True)
    start = row[col.START]
    done = row[col.RECEIVER_END]
    completion = None if done is None else done - start
    constant = static_rate(t.model_copy(update={"reservation": t.reservation.model_copy(update={"rate": None})}))
    if t.dynamic:
        mine = results.reservation.filter(results.reservation[col.TRANSFER_HANDLE] == f"{name}#0")
        schedule = [(time - start, r) for time, r in mine.select(col.TIME, col.RESERVATION_BPS).iter_rows()]
        summary = results.reservation_summary.filter(results.reservation_summary[col.TRANSFER_HANDLE] == f"{name}#0")
        reserved = float(summary[col.RESERVED_BITS][0])
    else:
        rate = static_rate(t)
        schedule = [(0.0, float(rate))]
        # A static reservation is held from the start to the deadline.
        reserved = rate * t.deadline / NS_PER_S
    found = Plan(
        name=name, method=t.method, size=t.size, deadline_ns=t.deadline, schedule=schedule, completion_s=completion,
        reserved_bits=reserved, constant_bits=constant * t.deadline / NS_PER_S, constant_bps=constant,
        met=completion is not None and completion * NS_PER_S <= t.deadline,
    )  # fmt: skip
    return found, loaded


def _bad(where: str, message: str) -> ScenarioError:
    return ScenarioError([Issue((where,), message)])
