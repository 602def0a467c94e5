"""Cisco IOS Modular QoS CLI (MQC).

Two policy-maps, as the Junos filter and scheduler-map split the work: an
input policy (``service-policy input``) classifies and polices, setting
``qos-group`` to the forwarding class's queue number; an output policy
(``service-policy output``) matches the qos-groups and queues. A loss
priority (Junos ``loss-priority high``, a policer's out-of-profile or red
packets) becomes ``discard-class 2`` (yellow ``1``), which
``random-detect discard-class-based`` drops early by its thresholds.
Traffic that reaches the output policy without a qos-group (from an
interface without the input policy) has qos-group 0, the default class's.

Versions, not replacements
    IOS refuses to delete a policy-map that is attached to an interface,
    and changing an access list or object group in place changes the live
    policy line by line. So every object this file defines carries a
    version, the first 8 hex digits of the SHA-256 of the file's content
    (``ALPHAQOS-IN-1a2b3c4d``): the new objects are built beside the old
    ones, each interface is moved from the old policy to the new one
    (``no service-policy`` then ``service-policy``: the interface is
    without QoS between the two lines), and then the old objects are
    removed. The previous version is read from the file the previous run
    left in the output directory; without one, the file says how to find
    and remove older versions by hand.

Policers
    ``police cir <bit/s> bc <bytes> [be <bytes>]`` (single rate, srTCM) or
    ``police cir .. bc .. pir .. be ..`` (trTCM) with ``conform-action``,
    ``exceed-action`` (yellow, or out of profile) and ``violate-action``
    (red): ``transmit``, ``drop``, ``set-discard-class-transmit`` (the
    colour), ``set-qos-transmit`` (another class), or both of the last two
    in the block form when the new class has a drop profile that reads the
    colour.

Syntax from Cisco's "QoS: Modular QoS Command-Line Interface Configuration
Guide" and command references: ``object-group network``, ``ip access-list
extended ... permit ip object-group A object-group B``, ``class-map
match-any``/``match access-group name``/``match dscp``/``match
qos-group``, ``police`` with ``conform-action``/``exceed-action``/
``violate-action``, ``bandwidth percent``, ``shape average percent``,
``bandwidth remaining percent`` (an MDRR policy's classes: their quanta
share what the low-latency queue leaves), ``priority``, ``queue-limit <n>
packets|bytes``, ``random-detect
discard-class <value> <min> <max> <mark-probability-denominator>``,
``random-detect exponential-weighting-constant``.

Rounding
    IOS takes WRED thresholds in whole packets and the mark probability as
    a whole denominator: :func:`.model.cisco_wred` rounds them (nearest
    packet, ``min_th`` at least 1 and below ``max_th``; the denominator
    whose inverse is nearest the policy's probability), and a comment above
    the line gives the policy's own numbers when they differ.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import re

from ..policy import ClassRef, Term
from .model import ClassPlan, Plan, cisco_wred

__all__ = ["FILENAME", "render", "version_of"]

FILENAME = "cisco.cfg"
TARGET = "cisco"
DISCARD_CLASS = {"green": 0, "yellow": 1, "red": 2}
VERSION_LINE = "! alphaqos version: "
_VERSION = "@V@"  # placeholder until the content is hashed


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


def _netmask(prefix: str) -> str:
    return str(ipaddress.IPv4Network(prefix).netmask)


def _actions(plan: Plan, colour: str, action) -> list[str]:
    """The police actions for packets of ``colour`` given the policy's
    ``action``: the simulator keeps a packet's colour whatever the action."""
    mark = f"set-discard-class-transmit {DISCARD_CLASS[colour]}"
    if action == "discard":
        return ["drop"]
    if action == "transmit":
        return ["transmit"] if colour == "green" else [mark]
    if action == "loss_priority_high":
        return [f"set-discard-class-transmit {DISCARD_CLASS['red']}"]
    assert isinstance(action, ClassRef)
    out = [f"set-qos-transmit {plan.klass(action.class_).index}"]
    if colour != "green" and plan.colour_matters(action.class_):
        out.append(mark)
    return out


def _police(plan: Plan, term: Term) -> list[str]:
    p = term.then.policer
    if p.srtcm is None and p.trtcm is None:
        meter = f"police cir {p.rate} bc {p.burst}"
        colours = [("conform-action", _actions(plan, "green", "transmit")),
                   ("exceed-action", _actions(plan, "red", p.out_of_profile))]  # fmt: skip
    else:
        if p.srtcm is not None:
            meter = f"police cir {p.srtcm.cir} bc {p.srtcm.cbs} be {p.srtcm.ebs}"
        else:
            m = p.trtcm
            meter = f"police cir {m.cir} bc {m.cbs} pir {m.pir} be {m.pbs}"
        colours = [("conform-action", _actions(plan, "green", "transmit")),
                   ("exceed-action", _actions(plan, "yellow", p.yellow or "transmit")),
                   ("violate-action", _actions(plan, "red", p.red or "discard"))]  # fmt: skip
    out = []
    if p.color_aware:
        reason = "MQC colour-aware policing needs conform-color/exceed-color class-maps of the upstream marking"
        out.append(f"  ! {plan.note(TARGET, f'term {term.name!r}: color_aware metering', reason)}; metered colour-blind")
    if all(len(actions) == 1 for _, actions in colours):
        return out + [f"  {meter} " + " ".join(f"{kind} {actions[0]}" for kind, actions in colours)]
    out.append(f"  {meter}")
    out += [f"   {kind} {a}" for kind, actions in colours for a in actions]
    return out


def _bandwidths(plan: Plan) -> dict[str, int]:
    """``bandwidth percent`` of each class that is not strict priority:
    MQC takes one kind of bandwidth in a policy-map, so rates become their
    share of the link and ``remainder`` what the others leave, all in whole
    percents (rounded down) that add up to at most 100."""
    shares: dict[str, float | None] = {}
    for c in plan.classes:
        if c.priority == "strict-high":
            continue
        if c.rate_bps is not None:
            shares[c.name] = 100 * c.rate_bps / plan.link_rate_bps
        else:
            shares[c.name] = c.percent  # None: remainder or no share
    fixed = sum(v for v in shares.values() if v is not None)
    rest = [n for n, v in shares.items() if v is None]
    for n in rest:
        shares[n] = max(100 - fixed, 0) / len(rest)
    return {n: max(1, math.floor(v + 1e-9)) for n, v in shares.items()}


def render(plan: Plan, previous: str | None = None) -> str:
    body = _body(plan)
    version = hashlib.sha256("\n".join(body).encode()).hexdigest()[:8]
    old = version_of(previous) if previous else None
    lines = ["! alphaqos provision: α prefixes and QoS policy for Cisco IOS (MQC).",
             f"{VERSION_LINE}{version}",
             f"! {len(plan.alpha_src)} α source and {len(plan.alpha_dst)} α destination prefixes."]  # fmt: skip
    lines += plan.partial_header(TARGET, "!")
    lines += [x.replace(_VERSION, version) for x in body]
    attach, detached = _attach(plan, version, previous if old != version else None)
    lines += attach
    if old and old != version:
        lines += _remove(previous, old, detached)
    elif not old:
        lines += ["! Objects of earlier versions, if any, are not removed by this file: find them with",
                  "!   show running-config | include ALPHAQOS-|ALPHA-|TERM-|CLASS-",
                  "! and remove those whose version differs once no interface uses them."]  # fmt: skip
    return "\n".join(lines) + "\nend\n"


def version_of(text: str) -> str | None:
    """The version a file of this module carries, if it is one."""
    for line in text.splitlines()[:3]:
        if line.startswith(VERSION_LINE):
            return line[len(VERSION_LINE):].strip()
    return None


def _body(plan: Plan) -> list[str]:
    v = _VERSION
    alpha = bool(plan.alpha_src and plan.alpha_dst)
    out = []
    for role, entries in (("SRC", plan.alpha_src), ("DST", plan.alpha_dst)):
        out.append(f"object-group network ALPHA-{role}-{v}")
        out += [f" {e.prefix.split('/')[0]} {_netmask(e.prefix)}" for e in entries]
    out.append(f"ip access-list extended ALPHA-{v}")
    out += [f" permit ip object-group ALPHA-SRC-{v} object-group ALPHA-DST-{v}"] if alpha else [" deny ip any any"]
    for term in plan.terms:
        out += [f"ip access-list extended TERM-{term.name}-{v}", _ace(term)]
        out += [f"class-map match-all TERM-{term.name}-{v}", f" match access-group name TERM-{term.name}-{v}"]
        dscp = term.from_.dscp
        if dscp is not None:
            out.append(" match dscp " + " ".join(str(x) for x in ([dscp] if isinstance(dscp, int) else dscp)))
    out += [f"class-map match-any ALPHA-{v}", f" match access-group name ALPHA-{v}"]
    for c in plan.classes:
        out += [f"class-map match-any CLASS-{c.name}-{v}", f" match qos-group {c.index}"]

    out.append(f"policy-map ALPHAQOS-IN-{v}")
    for term in plan.terms:
        then = term.then
        out.append(f" class TERM-{term.name}-{v}")
        if then.discard:
            out.append("  drop")
            continue
        if then.class_:
            out.append(f"  set qos-group {plan.klass(then.class_).index}")
        if then.loss_priority == "high":
            out.append(f"  set discard-class {DISCARD_CLASS['red']}")
        if then.policer is not None:
            out += _police(plan, term)
    out += [f" class ALPHA-{v}", f"  set qos-group {plan.klass(plan.alpha_class).index}",
            " class class-default", f"  set qos-group {plan.default_class.index}"]  # fmt: skip

    out += ["! Output: a packet's qos-group picks its class; one without (from an interface without the input",
            f"! policy) has qos-group 0, {plan.default_class.name}'s. class-default takes only qos-groups other policies set.",
            "! Junos priorities other than strict-high have no MQC form: each class gets its bandwidth share.",
            "! Classic IOS reserves at most 75% of an interface: set max-reserved-bandwidth 100 there."]  # fmt: skip
    out.append(f"policy-map ALPHAQOS-OUT-{v}")
    buffer = plan.policy.buffer
    bandwidth = _bandwidths(plan)
    for c in plan.classes:
        out.append(f" class CLASS-{c.name}-{v}")
        if c.priority == "strict-high":
            out.append("  priority")
        elif plan.policy.scheduler == "mdrr":
            # MDRR's quanta share what its low-latency queue leaves.
            out.append(f"  bandwidth remaining percent {bandwidth[c.name]}")
        else:
            out.append(f"  bandwidth percent {bandwidth[c.name]}")
        if c.exact:
            out.append(f"  shape average {c.rate_bps}" if c.rate_bps is not None else f"  shape average percent {bandwidth[c.name]}")
        if buffer.bytes is not None:
            out.append(f"  queue-limit {round(buffer.bytes * c.buffer_percent / 100)} bytes")
        elif buffer.pkts is not None:
            out.append(f"  queue-limit {max(1, round(buffer.pkts * c.buffer_percent / 100))} packets")
        notes = plan.class_notes(TARGET, c, "CBWFQ has no burst for a bandwidth share",
                                 "MQC has strict priority only; it is served as its weight's share")  # fmt: skip
        out += [f"  ! {n}" for n in notes]
        out += _wred(plan, c)
    return out


def _attach(plan: Plan, version: str, previous: str | None) -> tuple[list[str], set[str]]:
    """Move each interface to this version's policies; returns the lines
    and the previous policies they detach."""
    old = _attachments(previous) if previous else {}
    out = []
    wanted = {}
    for direction, names, policy in (("input", plan.ingress, f"ALPHAQOS-IN-{version}"),
                                     ("output", plan.egress, f"ALPHAQOS-OUT-{version}")):  # fmt: skip
        if "cisco" in names:
            wanted[(names["cisco"], direction)] = policy
    detached = set()
    for (interface, direction), policy in old.items():
        if wanted.get((interface, direction)) != policy:
            out += [f"interface {interface}", f" no service-policy {direction} {policy}"]
            detached.add(policy)
            if (interface, direction) in wanted:
                out.append(f" service-policy {direction} {wanted.pop((interface, direction))}")
    for (interface, direction), policy in wanted.items():
        out += [f"interface {interface}", f" service-policy {direction} {policy}"]
    if "cisco" not in plan.ingress or "cisco" not in plan.egress:
        out.append(f"! apply with --ingress-interface cisco=IF and --egress-interface cisco=IF: service-policy input "
                   f"ALPHAQOS-IN-{version}, service-policy output ALPHAQOS-OUT-{version}")  # fmt: skip
    return out, detached


def _attachments(text: str) -> dict[tuple[str, str], str]:
    out, interface = {}, None
    for line in text.splitlines():
        if line.startswith("interface "):
            interface = line.split(None, 1)[1].strip()
        elif interface and (m := re.fullmatch(r" service-policy (input|output) (\S+)", line)):
            out[(interface, m.group(1))] = m.group(2)
        elif not line.startswith(" "):
            interface = None
    return out


def _remove(previous: str, old: str, detached: set[str]) -> list[str]:
    """Remove the previous version's objects, users before what they use:
    as commands if this file detached its policy-maps from every interface
    the previous file attached them to, else as comments to run once the
    interfaces use the new version."""
    kinds = {"policy-map": [], "class-map": [], "ip access-list extended": [], "object-group network": []}
    for line in previous.splitlines():
        for kind in kinds:
            m = re.fullmatch(rf"{kind}(?: match-any| match-all)? (\S+-{re.escape(old)})", line)
            if m:
                kinds[kind].append(m.group(1))
    commands = [f"no {kind} {name}" for kind, names in kinds.items() for name in dict.fromkeys(names)]
    if set(kinds["policy-map"]) <= detached:
        return [f"! remove the previous version, {old}"] + commands
    return [f"! the previous version, {old}, may still be attached to interfaces this file does not name;",
            "! once none uses it, remove it with:"] + [f"!   {c}" for c in commands]  # fmt: skip


def _wred(plan: Plan, c: ClassPlan) -> list[str]:
    d = c.drop_profile
    if d is None:
        return []
    if d.wred is None:
        form = "Junos curves" if d.rio is None and d.gred is None else "rio" if d.rio is not None else "gred"
        element = f"class {c.name!r}: {form} drop profile"
        return [f"  ! {plan.note(TARGET, element, 'IOS drop profiles are WRED thresholds per discard-class')}"]
    out = ["  random-detect discard-class-based",
           f"  random-detect exponential-weighting-constant {d.wred.exponential_weighting_constant}"]  # fmt: skip
    for colour, value in DISCARD_CLASS.items():
        t = getattr(d.wred, colour)
        if t is not None:
            low, high, denominator = cisco_wred(t.min_th, t.max_th, t.probability())
            if (low, high) != (t.min_th, t.max_th) or abs(1 / denominator - t.probability()) > 1e-12:
                out.append(f"  ! {colour}: min_th {t.min_th:g}, max_th {t.max_th:g}, probability {t.probability():g} "
                           f"as IOS takes them (whole packets, a whole denominator): {low} {high} 1/{denominator}")  # fmt: skip
            out.append(f"  random-detect discard-class {value} {low} {high} {denominator}")
    return out
