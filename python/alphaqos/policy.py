"""QoS policies: the class-of-service configuration of a router, as one
document that a scenario simulates and that provisioning will render into
router configuration.

The vocabulary is Junos class-of-service (with Cisco MQC equivalents in
mind): forwarding classes, each with its queue's ``transmit_rate``,
``buffer_size``, ``priority`` and drop profile, and a firewall ``filter`` whose
terms classify and police packets::

    policies:
      two-queues:
        buffer: 125MB                  # the interface buffer the queues share
        classes:                       # queue order; the first is the default class
          beta:  {transmit_rate: 40%, buffer_size: 40%, priority: medium-low}
          alpha: {transmit_rate: 60%, buffer_size: 60%, priority: medium-high}
        filter:
          - name: alpha-transfers
            from: {source: 10.0.2.0/24, destination: 10.0.1.1/32, protocol: tcp}
            then: {class: alpha}

A router applies a policy's filter to every packet it forwards
(``nodes: {WR: {router: true, policy: two-queues}}``); an egress queue built
from the policy (``queue: {policy: two-queues}``) schedules the classes as
the Juniper routers of the first source document do (Yan et al. 2013,
Section III-A): a WFQ stage marks each queue in or out of profile against
its transmit rate, a priority stage serves in-profile queues first.
A policer (``then: {policer: {rate: 1Gbps, burst: 31KB, out_of_profile: ...}}``)
handles out-of-profile packets as the document's three options: ``discard``,
``loss_priority_high`` (kept, subject to the class's drop profile for high
loss priority), or ``{class: scavenger}``.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from pydantic import Field, PlainSerializer, PlainValidator, model_validator

from . import units
from .fields import Flag, Model, Name, PositiveRate, PositiveSize, QueueLimit

__all__ = ["Policy", "resolve_egress", "resolve_filter"]

PROTOCOLS = {"icmp": 1, "tcp": 6, "udp": 17}


def _prefix(value: object) -> str:
    try:
        return str(ipaddress.IPv4Network(value if isinstance(value, str) else "", strict=False))
    except ValueError:
        raise ValueError(f"expected an IPv4 prefix like '10.0.2.0/24', got {value!r}") from None


Prefix = Annotated[str, PlainValidator(_prefix)]


def _percent(value: object) -> float:
    text = str(value).strip()
    if not text.endswith("%"):
        raise ValueError(f"expected a percentage like '40%', got {value!r}")
    try:
        p = float(text[:-1])
    except ValueError:
        raise ValueError(f"expected a percentage like '40%', got {value!r}") from None
    if not 0 <= p <= 100:
        raise ValueError(f"a percentage must be between 0% and 100%, got {value!r}")
    return p


def _fmt_percent(p: float) -> str:
    return f"{p:g}%"


Percent = Annotated[float, PlainValidator(_percent), PlainSerializer(_fmt_percent, when_used="json")]


def _transmit_rate(value: object) -> float | int | str:
    """'40%' -> 40.0 (percent), '3Gbps' -> 3000000000 (bit/s), 'remainder'."""
    if value == "remainder":
        return "remainder"
    if isinstance(value, str) and value.strip().endswith("%"):
        return _percent(value)
    try:
        rate = units.parse_rate(value)
    except ValueError:
        raise ValueError(f"expected a percentage ('60%'), a rate ('3Gbps') or 'remainder', got {value!r}") from None
    if rate <= 0:
        raise ValueError("a transmit rate must be greater than 0bps")
    return rate


def _fmt_transmit_rate(value: float | int | str) -> str:
    if isinstance(value, float):
        return _fmt_percent(value)
    if isinstance(value, int):
        return units.fmt_rate(value, exact=True)
    return value


TransmitRate = Annotated[
    float | int | str, PlainValidator(_transmit_rate), PlainSerializer(_fmt_transmit_rate, when_used="json")
]

class DropProfile(Model):
    """Drop curves per loss priority against the queue's fill (Junos
    ``drop-profile`` with ``interpolate``): ``low`` for in-profile packets,
    ``high`` for out-of-profile ones. The first document's experiment 3 is
    ``high: [[0, 0], [100, 100]]``."""

    low: list[tuple[float, float]] | None = None
    high: list[tuple[float, float]] | None = None


class ForwardingClass(Model):
    """One forwarding class and its queue (Junos scheduler)."""

    transmit_rate: TransmitRate
    buffer_size: Percent
    priority: Literal["strict-high", "high", "medium-high", "medium-low", "low"] = "low"
    exact: Flag = False
    #: Depth of the meter that decides in/out of profile (default 1500B).
    burst: PositiveSize | None = None
    drop_profile: DropProfile | None = None


class ClassRef(Model):
    class_: Name = Field(alias="class")


class Policer(Model):
    """A single-rate two-colour policer (token bucket of ``rate`` and
    ``burst``) and what happens to out-of-profile packets."""

    rate: PositiveRate
    burst: PositiveSize
    out_of_profile: Literal["discard", "loss_priority_high"] | ClassRef


class Match(Model):
    source: Prefix | None = None
    destination: Prefix | None = None
    protocol: Literal["tcp", "udp", "icmp"] | None = None


class Then(Model):
    class_: Name | None = Field(default=None, alias="class")
    policer: Policer | None = None
    discard: Flag = False


class Term(Model):
    name: Name
    from_: Match = Field(default=Match(), alias="from")
    then: Then


class Policy(Model):
    buffer: QueueLimit = units.QueueLimit(pkts=1000)
    classes: Annotated[dict[Name, ForwardingClass], Field(min_length=1)]
    filter: list[Term] = []

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        shares = sum(c.buffer_size for c in self.classes.values())
        if shares > 100 + 1e-9:
            raise ValueError(f"buffer_size shares add up to {shares:g}%, more than 100%")
        rates = sum(c.transmit_rate for c in self.classes.values() if isinstance(c.transmit_rate, float))
        if rates > 100 + 1e-9:
            raise ValueError(f"transmit_rate percentages add up to {rates:g}%, more than 100%")
        for term in self.filter:
            refs = [term.then.class_]
            if term.then.policer is not None and isinstance(term.then.policer.out_of_profile, ClassRef):
                refs.append(term.then.policer.out_of_profile.class_)
            for ref in refs:
                if ref is not None and ref not in self.classes:
                    raise ValueError(
                        f"filter term {term.name!r}: unknown class {ref!r} (classes: {', '.join(self.classes)})"
                    )
        return self

    def class_index(self, name: str) -> int:
        return list(self.classes).index(name)


def resolve_filter(policy: Policy) -> list[dict[str, Any]]:
    """The engine's firewall filter terms (docs/engine-config.md)."""
    terms = []
    for term in policy.filter:
        then, match = term.then, term.from_
        policer = None
        if then.policer is not None:
            oop = then.policer.out_of_profile
            policer = {
                "rate_bps": then.policer.rate,
                "burst_bytes": then.policer.burst,
                "out_of_profile": {"fclass": policy.class_index(oop.class_)} if isinstance(oop, ClassRef) else oop,
            }
        terms.append({
            "name": term.name,
            "src": match.source,
            "dst": match.destination,
            "proto": PROTOCOLS[match.protocol] if match.protocol else None,
            "fclass": policy.class_index(then.class_) if then.class_ else None,
            "policer": policer,
            "discard": then.discard,
        })  # fmt: skip
    return terms


def resolve_egress(policy: Policy) -> dict[str, Any]:
    """The engine's Junos-style egress queue for this policy."""
    classes = []
    for name, c in policy.classes.items():
        rate = c.transmit_rate
        profile = c.drop_profile
        classes.append({
            "name": name,
            "transmit_rate_percent": rate if isinstance(rate, float) else None,
            "transmit_rate_bps": rate if isinstance(rate, int) else None,
            "transmit_rate_remainder": rate == "remainder",
            "priority": c.priority,
            "exact": c.exact,
            "buffer_percent": c.buffer_size,
            "burst_bytes": c.burst,
            "drop_green": [list(p) for p in profile.low] if profile and profile.low else None,
            "drop_red": [list(p) for p in profile.high] if profile and profile.high else None,
        })  # fmt: skip
    return {"junos": {"buffer_pkts": policy.buffer.pkts, "buffer_bytes": policy.buffer.bytes, "classes": classes}}
