"""Junos configuration, as ``set`` commands for ``load set`` (a merge of the
commands into the candidate configuration).

Each replaced container is first deleted (``delete policy-options
prefix-list alpha-src``, the filter, the policers, the class-of-service
parts named here), so that loading the file again after the table changed
also removes the prefixes that aged out: a plain ``load merge`` of a
curly-brace file would only ever add.

Network control
    A router that is given forwarding classes of its own keeps only those,
    and the routing engine's own traffic (routing protocols) goes to the
    ``network-control`` class, queue 3 by default. So the file always
    defines ``network-control`` on queue 3 (the policy's classes take
    queues 0, 1, 2, 4, ...) with a scheduler of ``--network-control``
    percent of the link and of the buffer (5%, the share Junos's default
    scheduler map gives queue 3); where the policy's percentages and this
    share add up to more than 100, the policy's are scaled to what is left
    (whole percents, as Junos takes them), which the file states. A policy
    with a class named ``network-control`` keeps its own.

Policers
    A two-colour policer (``firewall policer``) takes every action the
    policy has: ``then discard``, ``then loss-priority high``, ``then
    forwarding-class X`` (with ``loss-priority high`` too, as the simulator
    keeps an out-of-profile packet red). A three-colour meter is a
    ``three-color-policer`` (``single-rate`` RFC 2697, ``two-rate`` RFC
    2698, colour-blind or colour-aware), which marks yellow packets loss
    priority medium-high and red ones high and can only discard red ones
    besides: any other action for yellow or red is something Junos cannot
    express (Junos OS documentation, "Policer Color-Marking and Actions").

Syntax from the Junos OS documentation: "prefix-list (Policy Options)",
"Firewall Filter Match Conditions for IPv4 Traffic" (``source-prefix-list``,
``destination-prefix-list``, ``dscp``, ``protocol``, ports), "Policer
Overview" (``firewall policer ... if-exceeding bandwidth-limit
burst-size-limit``, ``then discard | loss-priority high |
forwarding-class``), "three-color-policer", and the class-of-service
statements ``forwarding-classes class ... queue-num``, ``schedulers``
(``transmit-rate percent|rate|remainder [exact]``, ``buffer-size
percent``, ``priority``, ``drop-profile-map loss-priority ... protocol any
drop-profile``), ``drop-profiles ... interpolate fill-level [..]
drop-probability [..]`` and ``scheduler-maps``.

Rounding
    Junos takes a drop profile's fill levels and drop probabilities as
    whole percents: :func:`.model.junos_curve` rounds each to the nearest,
    keeps the fill levels distinct and rising and the probabilities not
    falling, and a comment gives the policy's own points when they differ.
"""

from __future__ import annotations

import math

from ..fields import DSCP_NAMES
from ..policy import ClassRef, Policer, Term
from .model import ClassPlan, Plan, action_name, junos_curve

__all__ = ["FILENAME", "NETWORK_CONTROL", "render"]

FILENAME = "junos.conf"
TARGET = "junos"
FILTER = "alphaqos"
SCHEDULER_MAP = "alphaqos"
#: The forwarding class of the routing engine's own traffic, and its queue.
NETWORK_CONTROL = "network-control"
NETWORK_CONTROL_QUEUE = 3
#: Junos routers have eight queues per interface.
QUEUES = 8
#: Our loss-priority curve names -> Junos loss priorities.
LOSS_PRIORITIES = {"low": "low", "medium_high": "medium-high", "high": "high"}
_DSCP_NAME = {v: k for k, v in reversed(DSCP_NAMES.items()) if k not in ("default", "le", "va")}
THREE_COLOUR_REASON = "a Junos three-color-policer marks yellow medium-high and red high, and can only discard red besides"


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


def _policer(plan: Plan, term: Term, name: str, p: Policer, lines: list[str]) -> str:
    """Define the policer; returns the filter action that uses it."""
    if p.srtcm is None and p.trtcm is None:
        base = f"set firewall policer {name}"
        lines.append(f"{base} if-exceeding bandwidth-limit {p.rate} burst-size-limit {p.burst}")
        action = p.out_of_profile
        if isinstance(action, ClassRef):
            # The simulator keeps an out-of-profile packet red in its new class.
            lines += [f"{base} then forwarding-class {action.class_}", f"{base} then loss-priority high"]
        else:
            lines.append(f"{base} then {'discard' if action == 'discard' else 'loss-priority high'}")
        return f"policer {name}"
    base = f"set firewall three-color-policer {name}"
    if p.srtcm is not None:
        kind, m = "single-rate", p.srtcm
        meter = [f"committed-information-rate {m.cir}", f"committed-burst-size {m.cbs}", f"excess-burst-size {m.ebs}"]
    else:
        kind, m = "two-rate", p.trtcm
        meter = [f"committed-information-rate {m.cir}", f"committed-burst-size {m.cbs}",
                 f"peak-information-rate {m.pir}", f"peak-burst-size {m.pbs}"]  # fmt: skip
    lines.append(f"{base} {kind} {'color-aware' if p.color_aware else 'color-blind'}")
    lines += [f"{base} {kind} {statement}" for statement in meter]
    # Yellow goes on at loss priority medium-high ("transmit" keeps that
    # colour); red at high ("transmit" or "loss_priority_high"), or is dropped.
    red, yellow = p.red or "discard", p.yellow or "transmit"
    if red == "discard":
        lines.append(f"{base} action loss-priority high then discard")
    elif red not in ("transmit", "loss_priority_high"):
        element = f"term {term.name!r}: red packets to {action_name(red)}"
        lines.append(f"# {plan.note(TARGET, element, THREE_COLOUR_REASON)}; they stay in the term's class at loss priority high")
    if yellow != "transmit":
        element = f"term {term.name!r}: yellow packets to {action_name(yellow)}"
        lines.append(f"# {plan.note(TARGET, element, THREE_COLOUR_REASON)}; they go on at loss priority medium-high")
    return f"three-color-policer {kind} {name}"


def queues(plan: Plan) -> dict[str, int]:
    """Queue number of each forwarding class: the policy's in order,
    skipping the network-control queue unless the policy names that class."""
    if NETWORK_CONTROL in (c.name for c in plan.classes):
        return {c.name: c.index for c in plan.classes}
    free = [q for q in range(QUEUES) if q != NETWORK_CONTROL_QUEUE]
    out = {c.name: free[i] for i, c in enumerate(plan.classes) if i < len(free)}
    out[NETWORK_CONTROL] = NETWORK_CONTROL_QUEUE
    return out


def _shares(plan: Plan) -> tuple[dict[str, int], dict[str, int], int, int, bool]:
    """Whole transmit-rate and buffer percents of the policy's classes and
    of network-control: scaled down where the policy's and network-control's
    would pass 100 (network-control then takes what is left), rounded down
    to whole percents; and whether any changed."""
    own = NETWORK_CONTROL in (c.name for c in plan.classes)
    nc = 0 if own else math.ceil(plan.network_control_percent)

    def whole(values: dict[str, float]) -> tuple[dict[str, int], int, bool]:
        floors = {n: math.floor(v + 1e-9) for n, v in values.items()}
        changed = any(floors[n] != v for n, v in values.items())
        if sum(floors.values()) + nc <= 100:
            return floors, nc, changed
        factor = (100 - nc) / sum(values.values())
        scaled = {n: math.floor(v * factor + 1e-9) for n, v in values.items()}
        return scaled, 0 if own else 100 - sum(scaled.values()), True

    rates, nc_rate, rates_changed = whole({c.name: c.percent for c in plan.classes if c.percent is not None})
    buffers, nc_buffer, buffers_changed = whole({c.name: c.buffer_percent for c in plan.classes})
    return rates, buffers, nc_rate, nc_buffer, rates_changed or buffers_changed


def render(plan: Plan, previous: str | None = None) -> str:
    lines = [
        "# alphaqos provision: α prefixes and QoS policy for Junos.",
        "# Load with: load set <this file>; then commit check, commit.",
        f"# {len(plan.alpha_src)} α source and {len(plan.alpha_dst)} α destination prefixes.",
    ]
    header_at = len(lines)
    policers = [t for t in plan.terms if t.then.policer is not None]
    lines += [
        "delete policy-options prefix-list alpha-src",
        "delete policy-options prefix-list alpha-dst",
        f"delete firewall family inet filter {FILTER}",
    ]
    lines += [f"delete firewall policer {t.name}-policer" for t in policers]
    lines += [f"delete firewall three-color-policer {t.name}-policer" for t in policers]
    queue = queues(plan)
    lines += [f"delete class-of-service scheduler-maps {SCHEDULER_MAP}"]
    lines += [f"delete class-of-service schedulers {name}-sched" for name in queue]
    lines += [f"delete class-of-service drop-profiles {c.name}-{lp}" for c in plan.classes for lp in LOSS_PRIORITIES.values()
              if c.drop_profile is not None]  # fmt: skip
    # A prefix list with no entries would match nothing; declare it anyway
    # so that the filter's references always resolve.
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
            lines.append(f"{t} then {_policer(plan, term, f'{term.name}-policer', then.policer, lines)}")
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
    default = plan.default_class.name
    lines += [
        f"# Junos has no class-default. A packet this filter sees that no term above claims goes to {default}",
        f"# (queue {queue[default]}) by the term 'default' (a filter would otherwise end in a discard).",
        "# Traffic that does not pass this filter (arriving on other interfaces, or sent by the routing",
        f"# engine) is classified by the interface's default classifier: best effort into queue 0 ({_on_queue(queue, 0)}),",
        f"# routing protocols into {NETWORK_CONTROL} (queue {queue.get(NETWORK_CONTROL, NETWORK_CONTROL_QUEUE)}).",
    ]
    t = f"{base} term default"
    lines += [f"{t} then forwarding-class {default}", f"{t} then accept"]

    lines += _class_of_service(plan, queue)
    ingress, egress = plan.ingress.get("junos"), plan.egress.get("junos")
    if ingress:
        lines.append(f"set interfaces {_ifd(ingress)} unit {_unit(ingress)} family inet filter input {FILTER}")
    if egress:
        lines.append(f"set class-of-service interfaces {_ifd(egress)} scheduler-map {SCHEDULER_MAP}")
    if not (ingress and egress):
        lines.append("# apply with --ingress-interface junos=IF and --egress-interface junos=IF: "
                     "filter input on the ingress unit, scheduler-map on the egress")  # fmt: skip
    lines[header_at:header_at] = plan.partial_header(TARGET, "#")
    return "\n".join(lines) + "\n"


def _on_queue(queue: dict[str, int], number: int) -> str:
    return next((name for name, q in queue.items() if q == number), "no class of this policy")


def _ifd(name: str) -> str:
    """``xe-0/0/1.0`` -> ``xe-0/0/1``: the physical interface."""
    return name.split(".", 1)[0]


def _unit(name: str) -> str:
    return name.split(".", 1)[1] if "." in name else "0"


def _class_of_service(plan: Plan, queue: dict[str, int]) -> list[str]:
    cos = "set class-of-service"
    lines = []
    if len(plan.classes) + (NETWORK_CONTROL not in (c.name for c in plan.classes)) > QUEUES:
        for c in plan.classes[QUEUES - 1:]:
            lines.append(f"# {plan.note(TARGET, f'class {c.name!r}', f'a Junos interface has {QUEUES} queues, one of them {NETWORK_CONTROL}')}")
    rates, buffers, nc_rate, nc_buffer, scaled = _shares(plan)
    if scaled:
        lines.append(f"# The policy's transmit-rate and buffer shares, in whole percents (as Junos takes them), scaled to "
                     f"what {NETWORK_CONTROL}'s {nc_rate}% of rate and {nc_buffer}% of buffer leave.")  # fmt: skip
    for name, q in sorted(queue.items(), key=lambda kv: kv[1]):
        lines.append(f"{cos} forwarding-classes class {name} queue-num {q}")
    for c in plan.classes:
        if c.name not in queue:
            continue
        s = f"{cos} schedulers {c.name}-sched"
        exact = " exact" if c.exact else ""
        if c.remainder:
            lines.append(f"{s} transmit-rate remainder")
        elif c.rate_bps is not None:
            lines.append(f"{s} transmit-rate {c.rate_bps}{exact}")
        elif c.percent is not None:
            lines.append(f"{s} transmit-rate percent {rates[c.name]}{exact}")
        lines.append(f"{s} buffer-size percent {buffers[c.name]}")
        lines.append(f"{s} priority {c.priority}")
        notes = plan.class_notes(TARGET, c, "the depth of the transmit-rate meter is the router's own",
                                 "Junos has no alternating queue; it is served as its weight's share")  # fmt: skip
        lines += [f"# {n}" for n in notes]
        lines += _drop_profiles(plan, c, s, cos)
        lines.append(f"{cos} scheduler-maps {SCHEDULER_MAP} forwarding-class {c.name} scheduler {c.name}-sched")
    if NETWORK_CONTROL not in (c.name for c in plan.classes):
        s = f"{cos} schedulers {NETWORK_CONTROL}-sched"
        lines += [f"{s} transmit-rate percent {nc_rate}", f"{s} buffer-size percent {nc_buffer}", f"{s} priority high",
                  f"{cos} scheduler-maps {SCHEDULER_MAP} forwarding-class {NETWORK_CONTROL} scheduler {NETWORK_CONTROL}-sched"]  # fmt: skip
    return lines


def _drop_profiles(plan: Plan, c: ClassPlan, scheduler: str, cos: str) -> list[str]:
    d = c.drop_profile
    if d is None:
        return []
    if d.wred is not None or d.rio is not None or d.gred is not None:
        form = "wred" if d.wred is not None else "rio" if d.rio is not None else "gred"
        element = f"class {c.name!r}: {form} drop profile"
        return [f"# {plan.note(TARGET, element, 'Junos drop profiles are interpolated curves on the queue fill')}"]
    out = []
    for ours, lp in LOSS_PRIORITIES.items():
        curve = getattr(d, ours)
        if curve is None:
            continue
        name = f"{c.name}-{lp}"
        whole = junos_curve(curve)
        if whole != [tuple(point) for point in curve]:
            given = " ".join(f"({f:g}, {p:g})" for f, p in curve)
            out.append(f"# {name}: the policy's points {given} in whole percents, as Junos takes them")
        fills = " ".join(str(f) for f, _ in whole)
        drops = " ".join(str(p) for _, p in whole)
        out.append(f"{cos} drop-profiles {name} interpolate fill-level [ {fills} ] drop-probability [ {drops} ]")
        out.append(f"{scheduler} drop-profile-map loss-priority {lp} protocol any drop-profile {name}")
    return out
