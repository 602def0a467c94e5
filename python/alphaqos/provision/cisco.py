"""Cisco IOS Modular QoS CLI (MQC).

Two policy-maps, as the Junos filter and scheduler-map split the work:
``ALPHAQOS-IN`` (``service-policy input``) classifies and polices, setting
``qos-group`` to the forwarding class's queue number; ``ALPHAQOS-OUT``
(``service-policy output``) matches the qos-groups and queues. A loss
priority (Junos ``loss-priority high``, a policer's out-of-profile or red
packets) becomes ``discard-class 2`` (yellow ``1``), which
``random-detect discard-class-based`` drops early by its thresholds.

Syntax from Cisco's "QoS: Modular QoS Command-Line Interface Configuration
Guide" and command references: ``object-group network``, ``ip access-list
extended ... permit ip object-group A object-group B``, ``class-map
match-any``/``match access-group name``/``match dscp``/``match
qos-group``, ``police cir <bit/s> bc <bytes> [pir <bit/s>] [be <bytes>]
conform-action ... exceed-action ... violate-action``
(``set-discard-class-transmit``, ``set-qos-transmit``, ``drop``),
``bandwidth percent``/``bandwidth <kbit/s>``, ``priority``,
``queue-limit <n> packets|bytes``, ``random-detect discard-class <value>
<min> <max> <mark-probability-denominator>``,
``random-detect exponential-weighting-constant``.
"""

from __future__ import annotations

import ipaddress

from ..policy import Term
from .model import Plan

__all__ = ["FILENAME", "render"]

FILENAME = "cisco.cfg"
DISCARD_CLASS = {"green": 0, "yellow": 1, "red": 2}


def _ports(ports) -> str:
    low, high = ports
    return f" eq {low}" if low == high else f" range {low} {high}"


def _ace(term: Term) -> str:
    m = term.from_
    src = f"{m.source.split('/')[0]} {_wildcard(m.source)}" if m.source else "any"
    dst = f"{m.destination.split('/')[0]} {_wildcard(m.destination)}" if m.destination else "any"
    if m.protocol in ("tcp", "udp"):
        return (f" permit {m.protocol} {src}{_ports(m.source_port) if m.source_port else ''}"
                f" {dst}{_ports(m.destination_port) if m.destination_port else ''}")  # fmt: skip
    return f" permit {m.protocol or 'ip'} {src} {dst}"


def _wildcard(prefix: str) -> str:
    return str(ipaddress.IPv4Network(prefix).hostmask)


def _action(plan: Plan, action) -> str:
    if action == "discard":
        return "drop"
    if action == "transmit":
        return "transmit"
    if action == "loss_priority_high":
        return f"set-discard-class-transmit {DISCARD_CLASS['red']}"
    return f"set-qos-transmit {plan.klass(action.class_).index}"


def _police(plan: Plan, term: Term) -> str:
    p = term.then.policer
    if p.srtcm is None and p.trtcm is None:
        return f"  police cir {p.rate} bc {p.burst} conform-action transmit exceed-action {_action(plan, p.out_of_profile)}"
    yellow, red = p.yellow or "transmit", p.red or "discard"
    if yellow == "transmit":  # keep the colour for WRED
        yellow = f"set-discard-class-transmit {DISCARD_CLASS['yellow']}"
    else:
        yellow = _action(plan, yellow)
    red = f"set-discard-class-transmit {DISCARD_CLASS['red']}" if red == "transmit" else _action(plan, red)
    if p.srtcm is not None:
        m = p.srtcm
        meter = f"police cir {m.cir} bc {m.cbs} be {m.ebs}"
    else:
        m = p.trtcm
        meter = f"police cir {m.cir} bc {m.cbs} pir {m.pir} be {m.pbs}"
    line = f"  {meter} conform-action transmit exceed-action {yellow} violate-action {red}"
    if p.color_aware:
        line += f"\n  ! {plan.note('cisco', f'term {term.name}: color-aware metering')}"
    return line


def render(plan: Plan) -> str:
    out = ["! alphaqos provision: α prefixes and QoS policy for Cisco IOS (MQC).",
           f"! {len(plan.alpha_src)} α source and {len(plan.alpha_dst)} α destination prefixes."]  # fmt: skip
    alpha = bool(plan.alpha_src and plan.alpha_dst)
    # The access list goes first: IOS refuses to remove an object group in use.
    out.append("no ip access-list extended ALPHA")
    for role, entries in (("SRC", plan.alpha_src), ("DST", plan.alpha_dst)):
        out += [f"no object-group network ALPHA-{role}", f"object-group network ALPHA-{role}"]
        out += [f" {e.prefix.split('/')[0]} {_netmask(e.prefix)}" for e in entries]
    out.append("ip access-list extended ALPHA")
    out += [" permit ip object-group ALPHA-SRC object-group ALPHA-DST"] if alpha else [" deny ip any any"]
    for term in plan.terms:
        out += [f"no ip access-list extended TERM-{term.name}", f"ip access-list extended TERM-{term.name}", _ace(term)]
        out += [f"class-map match-all TERM-{term.name}", f" match access-group name TERM-{term.name}"]
        dscp = term.from_.dscp
        if dscp is not None:
            out.append(" match dscp " + " ".join(str(v) for v in ([dscp] if isinstance(dscp, int) else dscp)))
    out += ["class-map match-any ALPHA", " match access-group name ALPHA"]
    for c in plan.classes:
        out += [f"class-map match-any CLASS-{c.name}", f" match qos-group {c.index}"]

    out += ["no policy-map ALPHAQOS-IN", "policy-map ALPHAQOS-IN"]
    for term in plan.terms:
        then = term.then
        out.append(f" class TERM-{term.name}")
        if then.discard:
            out.append("  drop")
            continue
        if then.class_:
            out.append(f"  set qos-group {plan.klass(then.class_).index}")
        if then.loss_priority == "high":
            out.append(f"  set discard-class {DISCARD_CLASS['red']}")
        if then.policer is not None:
            out.append(_police(plan, term))
    out += [" class ALPHA", f"  set qos-group {plan.klass(plan.alpha_class).index}",
            " class class-default", f"  set qos-group {plan.default_class.index}"]  # fmt: skip

    out += ["no policy-map ALPHAQOS-OUT", "policy-map ALPHAQOS-OUT"]
    buffer = plan.policy.buffer
    for c in plan.classes:
        out.append(f" class CLASS-{c.name}")
        if c.priority == "strict-high":
            out.append("  priority")
        elif c.rate_bps is not None:
            out.append(f"  bandwidth {c.rate_bps // 1000}")  # kbit/s
        elif c.remainder:
            out.append("  bandwidth remaining percent 100")
        elif c.percent is not None:
            out.append(f"  bandwidth percent {round(c.percent)}")
        if buffer.bytes is not None:
            out.append(f"  queue-limit {round(buffer.bytes * c.buffer_percent / 100)} bytes")
        elif buffer.pkts is not None:
            out.append(f"  queue-limit {max(1, round(buffer.pkts * c.buffer_percent / 100))} packets")
        out += _wred(plan, c)
    if plan.ingress:
        out += [f"interface {plan.ingress}", " service-policy input ALPHAQOS-IN"]
    if plan.egress:
        out += [f"interface {plan.egress}", " service-policy output ALPHAQOS-OUT"]
    if not (plan.ingress and plan.egress):
        out.append("! apply with --ingress/--egress: service-policy input ALPHAQOS-IN, service-policy output ALPHAQOS-OUT")
    return "\n".join(out) + "\nend\n"


def _netmask(prefix: str) -> str:
    return str(ipaddress.IPv4Network(prefix).netmask)


def _wred(plan: Plan, c) -> list[str]:
    d = c.drop_profile
    if d is None:
        return []
    if d.wred is None:
        form = "Junos curves" if d.rio is None and d.gred is None else "rio" if d.rio is not None else "gred"
        return [f"  ! {plan.note('cisco', f'class {c.name}: {form} drop profile (IOS takes WRED thresholds)')}"]
    out = ["  random-detect discard-class-based",
           f"  random-detect exponential-weighting-constant {d.wred.exponential_weighting_constant}"]  # fmt: skip
    for colour, value in DISCARD_CLASS.items():
        t = getattr(d.wred, colour)
        if t is not None:
            denominator = t.mark_prob_denominator or round(1 / t.probability())
            out.append(f"  random-detect discard-class {value} {t.min_th:g} {t.max_th:g} {denominator}")
    return out
