"""Junos configuration, as ``set`` commands for ``load set`` (a merge of the
commands into the candidate configuration).

Each replaced container is first deleted (``delete policy-options
prefix-list alpha-src``, the filter, the policers, the class-of-service
parts named here), so that loading the file again after the table changed
also removes the prefixes that aged out: a plain ``load merge`` of a
curly-brace file would only ever add.

Syntax from the Junos OS documentation: "prefix-list (Policy Options)",
"Firewall Filter Match Conditions for IPv4 Traffic" (``source-prefix-list``,
``destination-prefix-list``, ``dscp``, ``protocol``, ports), "Policer
Overview" (``firewall policer ... if-exceeding bandwidth-limit
burst-size-limit``, ``then discard | loss-priority high |
forwarding-class``), "three-color-policer" (``single-rate`` RFC 2697 and
``two-rate`` RFC 2698, ``action loss-priority high then discard``), and
the class-of-service statements ``forwarding-classes class ... queue-num``,
``schedulers`` (``transmit-rate percent|rate|remainder [exact]``,
``buffer-size percent``, ``priority``, ``drop-profile-map loss-priority
... protocol any drop-profile``), ``drop-profiles ... interpolate
fill-level [..] drop-probability [..]`` and ``scheduler-maps``.
"""

from __future__ import annotations

from ..fields import DSCP_NAMES
from ..policy import ClassRef, Policer, Term
from .model import Plan

__all__ = ["FILENAME", "render"]

FILENAME = "junos.conf"
FILTER = "alphaqos"
SCHEDULER_MAP = "alphaqos"
#: Our loss-priority curve names -> Junos loss priorities.
LOSS_PRIORITIES = {"low": "low", "medium_high": "medium-high", "high": "high"}
_DSCP_NAME = {v: k for k, v in reversed(DSCP_NAMES.items()) if k not in ("default", "le", "va")}


def _dscp(value: int) -> str:
    # Junos takes the standard names, or the 6-bit pattern for other values.
    return _DSCP_NAME.get(value, format(value, "06b"))


def _from(term: Term) -> list[str]:
    m, out = term.from_, []
    if m.source:
        out.append(f"source-address {m.source}")
    if m.destination:
        out.append(f"destination-address {m.destination}")
    if m.protocol:
        out.append(f"protocol {m.protocol}")
    for name, ports in (("source-port", m.source_port), ("destination-port", m.destination_port)):
        if ports:
            low, high = ports
            out.append(f"{name} {low}" if low == high else f"{name} {low}-{high}")
    if m.dscp is not None:
        values = [m.dscp] if isinstance(m.dscp, int) else m.dscp
        out.append("dscp " + (_dscp(values[0]) if len(values) == 1 else "[ " + " ".join(map(_dscp, values)) + " ]"))
    return out


def _policer(plan: Plan, name: str, p: Policer, lines: list[str]) -> str:
    """Define the policer; returns the filter action that uses it."""
    if p.srtcm is None and p.trtcm is None:
        base = f"set firewall policer {name}"
        lines.append(f"{base} if-exceeding bandwidth-limit {p.rate} burst-size-limit {p.burst}")
        action = p.out_of_profile
        if isinstance(action, ClassRef):
            lines.append(f"{base} then forwarding-class {action.class_}")
        else:
            lines.append(f"{base} then {'discard' if action == 'discard' else 'loss-priority high'}")
        return f"policer {name}"
    base = f"set firewall three-color-policer {name}"
    lines.append(f"{base} {'color-aware' if p.color_aware else 'color-blind'}")
    if p.srtcm is not None:
        kind, m = "single-rate", p.srtcm
        lines += [f"{base} single-rate committed-information-rate {m.cir}",
                  f"{base} single-rate committed-burst-size {m.cbs}",
                  f"{base} single-rate excess-burst-size {m.ebs}"]  # fmt: skip
    else:
        kind, m = "two-rate", p.trtcm
        lines += [f"{base} two-rate committed-information-rate {m.cir}",
                  f"{base} two-rate committed-burst-size {m.cbs}",
                  f"{base} two-rate peak-information-rate {m.pir}",
                  f"{base} two-rate peak-burst-size {m.pbs}"]  # fmt: skip
    # Junos colours yellow medium-high and red high by itself; the only
    # action it takes is to discard red ("action loss-priority high then discard").
    red, yellow = p.red or "discard", p.yellow or "transmit"
    if red == "discard":
        lines.append(f"{base} action loss-priority high then discard")
    elif red not in ("transmit", "loss_priority_high"):
        lines.append(f"# {plan.note('junos', f'three-color-policer {name}: red action {red!r}')}")
    if yellow != "transmit":
        lines.append(f"# {plan.note('junos', f'three-color-policer {name}: yellow action {yellow!r}')}")
    return f"three-color-policer {kind} {name}"


def render(plan: Plan) -> str:
    lines = [
        "# alphaqos provision: α prefixes and QoS policy for Junos.",
        "# Load with: load set <this file>; then commit check, commit.",
        f"# {len(plan.alpha_src)} α source and {len(plan.alpha_dst)} α destination prefixes.",
        "delete policy-options prefix-list alpha-src",
        "delete policy-options prefix-list alpha-dst",
        f"delete firewall family inet filter {FILTER}",
    ]
    lines += [f"delete firewall policer {t.name}-policer" for t in plan.terms if t.then.policer is not None]
    lines += [f"delete firewall three-color-policer {t.name}-policer" for t in plan.terms if t.then.policer is not None]
    lines += [f"delete class-of-service scheduler-maps {SCHEDULER_MAP}"]
    lines += [f"delete class-of-service schedulers {c.name}-sched" for c in plan.classes]
    lines += [f"delete class-of-service drop-profiles {c.name}-{lp}" for c in plan.classes for lp in LOSS_PRIORITIES.values()
              if c.drop_profile is not None]  # fmt: skip
    for role, entries in (("src", plan.alpha_src), ("dst", plan.alpha_dst)):
        lines += [f"set policy-options prefix-list alpha-{role} {e.prefix}" for e in entries]

    base = f"set firewall family inet filter {FILTER}"
    for term in plan.terms:
        t = f"{base} term {term.name}"
        lines += [f"{t} from {cond}" for cond in _from(term)]
        then = term.then
        if then.discard:
            lines.append(f"{t} then discard")
            continue
        if then.policer is not None:
            lines.append(f"{t} then {_policer(plan, f'{term.name}-policer', then.policer, lines)}")
        if then.class_:
            lines.append(f"{t} then forwarding-class {then.class_}")
        if then.loss_priority:
            lines.append(f"{t} then loss-priority {then.loss_priority}")
        lines += [f"{t} then count {term.name}", f"{t} then accept"]
    if plan.alpha_src and plan.alpha_dst:
        t = f"{base} term alpha"
        lines += [f"{t} from source-prefix-list alpha-src", f"{t} from destination-prefix-list alpha-dst",
                  f"{t} then forwarding-class {plan.alpha_class}", f"{t} then count alpha", f"{t} then accept"]  # fmt: skip
    else:
        lines.append("# no α term: the α source or destination list is empty")
    # A filter ends in an implicit discard: accept the rest into the default class.
    t = f"{base} term default"
    lines += [f"{t} then forwarding-class {plan.default_class.name}", f"{t} then accept"]

    cos = "set class-of-service"
    for c in plan.classes:
        lines.append(f"{cos} forwarding-classes class {c.name} queue-num {c.index}")
    for c in plan.classes:
        s = f"{cos} schedulers {c.name}-sched"
        exact = " exact" if c.exact else ""
        if c.remainder:
            lines.append(f"{s} transmit-rate remainder")
        elif c.rate_bps is not None:
            lines.append(f"{s} transmit-rate {c.rate_bps}{exact}")
        elif c.percent is not None:
            lines.append(f"{s} transmit-rate percent {c.percent:g}{exact}")
        lines.append(f"{s} buffer-size percent {c.buffer_percent:g}")
        lines.append(f"{s} priority {c.priority}")
        lines += _drop_profiles(plan, c, s, cos)
        lines.append(f"{cos} scheduler-maps {SCHEDULER_MAP} forwarding-class {c.name} scheduler {c.name}-sched")
    if plan.ingress:
        lines.append(f"set interfaces {plan.ingress} unit 0 family inet filter input {FILTER}")
    if plan.egress:
        lines.append(f"{cos} interfaces {plan.egress} scheduler-map {SCHEDULER_MAP}")
    if not (plan.ingress and plan.egress):
        lines.append("# apply with --ingress/--egress: filter input on the ingress unit, scheduler-map on the egress")
    return "\n".join(lines) + "\n"


def _drop_profiles(plan: Plan, c, scheduler: str, cos: str) -> list[str]:
    d = c.drop_profile
    if d is None:
        return []
    if d.wred is not None or d.rio is not None or d.gred is not None:
        form = "wred" if d.wred is not None else "rio" if d.rio is not None else "gred"
        return [f"# {plan.note('junos', f'class {c.name}: {form} drop profile (Junos takes interpolated curves)')}"]
    out = []
    for ours, lp in LOSS_PRIORITIES.items():
        curve = getattr(d, ours)
        if curve is None:
            continue
        name = f"{c.name}-{lp}"
        fills = " ".join(f"{f:g}" for f, _ in curve)
        drops = " ".join(f"{p:g}" for _, p in curve)
        out.append(f"{cos} drop-profiles {name} interpolate fill-level [ {fills} ] drop-probability [ {drops} ]")
        out.append(f"{scheduler} drop-profile-map loss-priority {lp} protocol any drop-profile {name}")
    return out
