"""The ``control:`` key of a scenario: the engine's control agents.

Each item names exactly one agent (see ``crates/alphaqos-sim/src/control``
and ``docs/engine-config.md``)::

    control:
      - wred_rtt_tuning: {class: "R->H2/rel", traffic: [web], interval: 50ms}
      - deadline_reservation: {transfer: backup, deadline: 20s, policer: R/edge}
      - call_admission: {workload: calls, rate: 400Mbps, edge: R}

Handles are the names of the results: ``A->B`` (an interface), ``A->B/class``,
``router/term`` (a filter term and its policer), a flow, a workload,
``workload#k`` (its k-th transfer). The engine checks that they exist and
have the knobs the agent sets; its error names ``control[i]``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, Strict, model_validator

from .fields import Flag, Model, PositiveRate, PositiveSize, PositiveTime

__all__ = ["ControlAgent", "resolve_agent"]

Handle = Annotated[str, Strict(), Field(min_length=1)]
Fraction = Annotated[float, Field(gt=0, le=1)]
Margin = Annotated[float, Field(ge=1)]
AGENT_KINDS = ("wred_rtt_tuning", "deadline_reservation", "call_admission")
MS = 1_000_000


class WredRttTuning(Model):
    """Bouras & Sevasti's RTT-tuned WRED: every ``interval`` max_th = r RTT /
    (MTU 8), min_th = ``min_fraction`` max_th. A per-colour profile keeps
    each colour's max_th in its configured ratio to the first (green)
    curve's; ``max_p``, if given, is set on every curve, else the first
    curve takes the document's 0.2 and the others keep theirs."""

    name: str | None = None
    class_: Handle = Field(alias="class")
    traffic: Annotated[list[Handle], Field(min_length=1)]
    interval: PositiveTime = 50 * MS
    max_p: Fraction | None = None
    min_fraction: Annotated[float, Field(ge=0, lt=1)] = 0.15
    rate: PositiveRate | None = None
    mtu: PositiveSize | None = None


class DeadlineReservation(Model):
    """A transfer's reservation = bytes left / time to deadline x margin,
    applied to its base_flow target rate and its edge policer."""

    name: str | None = None
    transfer: Handle
    deadline: PositiveTime
    margin: Margin = 1.05
    interval: PositiveTime = 50 * MS
    policer: Handle | None = None


class CallAdmission(Model):
    """Admit a workload's transfers on time-sliced link bookings; an admitted
    transfer's first stream (its base connection) is policed at ``edge``,
    green within its rate and red beyond, its other streams marked red; a
    booking is released when its transfer completes and, with
    ``reservation``, follows the transfer's reservation agent."""

    name: str | None = None
    workload: Handle
    rate: PositiveRate | None = None
    duration: PositiveTime | None = None
    deadline: PositiveTime | None = None
    margin: Margin = 1.05
    capacity_fraction: Fraction = 1.0
    edge: Handle | None = None
    burst: PositiveSize | None = None
    reservation: Flag = False
    interval: PositiveTime = 50 * MS

    @model_validator(mode="after")
    def _request(self) -> CallAdmission:
        if (self.rate is None) == (self.deadline is None):
            raise ValueError("give rate (and optionally duration), or deadline")
        if self.duration is not None and self.rate is None:
            raise ValueError("duration goes with rate")
        if self.reservation and self.deadline is None:
            raise ValueError("reservation needs deadline")
        return self


class ControlAgent(Model):
    """Exactly one agent."""

    wred_rtt_tuning: WredRttTuning | None = None
    deadline_reservation: DeadlineReservation | None = None
    call_admission: CallAdmission | None = None

    @model_validator(mode="after")
    def _one(self) -> ControlAgent:
        given = [k for k in AGENT_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(AGENT_KINDS)}")
        return self


def resolve_agent(a: ControlAgent) -> dict[str, Any]:
    """The engine's form: base units, field names with their unit."""
    if (w := a.wred_rtt_tuning) is not None:
        return {"wred_rtt_tuning": {
            "name": w.name, "class": w.class_, "traffic": list(w.traffic), "interval_ns": w.interval,
            "max_p": w.max_p, "min_fraction": w.min_fraction, "rate_bps": w.rate, "mtu_bytes": w.mtu,
        }}  # fmt: skip
    if (d := a.deadline_reservation) is not None:
        return {"deadline_reservation": {
            "name": d.name, "transfer": d.transfer, "deadline_ns": d.deadline, "margin": d.margin,
            "interval_ns": d.interval, "policer": d.policer,
        }}  # fmt: skip
    c = a.call_admission
    return {"call_admission": {
        "name": c.name, "workload": c.workload, "rate_bps": c.rate, "duration_ns": c.duration,
        "deadline_ns": c.deadline, "margin": c.margin, "capacity_fraction": c.capacity_fraction,
        "edge": c.edge, "burst_bytes": c.burst, "reservation": c.reservation, "interval_ns": c.interval,
    }}  # fmt: skip
