"""Linux traffic control: a shell script building an HTB tree with u32
filters, run as ``sh tc.sh DEVICE``.

Tree
    ``1:`` HTB root (``default`` the policy's default class), ``1:1`` the
    link (``--rate``), one leaf per forwarding class, ``1:10`` + queue
    number (hex minor, as tc reads class ids), each with ``rate`` its share
    of the link (transmit-rate percentage or rate; weights and quanta as
    their share; strict priority an equal share), ``ceil`` the link (the
    class's own rate if ``exact``), ``prio`` from the Junos priority
    (strict-high 0 ... low 4: HTB lends spare bandwidth to lower prio values
    first), a ``quantum`` proportional to the rate, and a ``bfifo`` (or
    ``pfifo``) of its ``buffer_size`` share of the policy buffer.

Filters
    The policy's terms first (``u32 match ip src|dst|protocol|sport|dport|
    dsfield``; a port range is split into aligned blocks u32 can mask), then
    the α term as two u32 levels: a hash table (``ht 100:``) of the α
    destinations pointing to the α class, linked from one filter per α
    source, so a table of S sources and D destinations takes S + D filters
    rather than S x D. Traffic no filter claims goes to the default class.
    Policers become ``action police ... conform-exceed drop`` (only the
    discard action; other actions and three-colour meters are noted as not
    rendered).

Syntax from the tc-htb(8), tc-u32(8), tc-bfifo(8) and tc-police(8) manual
pages (iproute2).
"""

from __future__ import annotations

from ..policy import PROTOCOLS, Term
from .model import Plan, priority_rank

__all__ = ["FILENAME", "classid", "class_rates", "render"]

FILENAME = "tc.sh"
ALPHA_TABLE = "100:"
#: HTB's largest sensible quantum (bytes; the kernel warns above 200000).
MAX_QUANTUM = 200_000
MTU_FRAME = 1514


def classid(index: int) -> str:
    return f"1:{0x10 + index:x}"


def class_rates(plan: Plan) -> list[int]:
    """Each class's HTB rate in bit/s."""
    link = plan.link_rate_bps
    fixed = []
    for c in plan.classes:
        if c.rate_bps is not None:
            fixed.append(min(c.rate_bps, link))
        elif c.percent is not None:
            fixed.append(round(link * c.percent / 100))
        else:
            fixed.append(None)
    unset = [i for i, r in enumerate(fixed) if r is None]
    left = max(link - sum(r for r in fixed if r is not None), 0)
    for i in unset:  # remainder (or strict priority): share what is left
        fixed[i] = max(left // len(unset), 8_000)
    return [max(r, 8_000) for r in fixed]


def bits(bps: int) -> str:
    """tc rate: the largest unit that keeps it exact (``6gbit``, ``1500kbit``)."""
    for unit, size in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps % size == 0:
            return f"{bps // size}{unit}"
    return f"{bps}bit"


def port_blocks(low: int, high: int) -> list[tuple[int, int]]:
    """[low, high] as (value, mask) blocks a 16-bit u32 match can express."""
    out = []
    while low <= high:
        size = low & -low if low else 1 << 16
        while size > high - low + 1:
            size //= 2
        out.append((low, 0xFFFF & ~(size - 1)))
        low += size
    return out


def _term_matches(term: Term) -> list[str]:
    """One u32 match list per filter needed for ``term``."""
    m = term.from_
    base = []
    if m.source:
        base.append(f"match ip src {m.source}")
    if m.destination:
        base.append(f"match ip dst {m.destination}")
    if m.protocol:
        base.append(f"match ip protocol {PROTOCOLS[m.protocol]} 0xff")
    variants = [base]
    for name, ports in (("sport", m.source_port), ("dport", m.destination_port)):
        if ports:
            blocks = port_blocks(*ports)
            variants = [v + [f"match ip {name} {value} 0x{mask:04x}"] for v in variants for value, mask in blocks]
    if m.dscp is not None:
        values = [m.dscp] if isinstance(m.dscp, int) else m.dscp
        variants = [v + [f"match ip dsfield 0x{d << 2:02x} 0xfc"] for v in variants for d in values]
    return [" ".join(v) or "match u32 0 0" for v in variants]


def _term_action(plan: Plan, term: Term) -> tuple[str, list[str]]:
    then, notes = term.then, []
    if then.discard:
        return " action drop", notes
    target = then.class_ or plan.default_class.name
    action = f" flowid {classid(plan.klass(target).index)}"
    p = then.policer
    if p is not None:
        if p.srtcm is None and p.trtcm is None and p.out_of_profile == "discard":
            action += f" action police rate {bits(p.rate)} burst {p.burst} conform-exceed drop"
        else:
            notes.append(plan.note("tc", f"term {term.name}: policer (tc polices with discard only, two colours)"))
    if then.loss_priority:
        notes.append(plan.note("tc", f"term {term.name}: loss-priority {then.loss_priority}"))
    return action, notes


def render(plan: Plan) -> str:
    link = plan.link_rate_bps
    rates = class_rates(plan)
    out = [
        "#!/bin/sh",
        "# alphaqos provision: α prefixes and QoS policy as a Linux HTB tree.",
        f"# Usage: sh {FILENAME} DEVICE (link rate {bits(link)}). Replaces DEVICE's root qdisc.",
        "set -eu",
        "DEV=${1:?device}",
        'tc qdisc del dev "$DEV" root 2>/dev/null || true',
        f'tc qdisc add dev "$DEV" root handle 1: htb default {0x10 + plan.default_class.index:x}',
        f'tc class add dev "$DEV" parent 1: classid 1:1 htb rate {bits(link)} ceil {bits(link)} quantum {MAX_QUANTUM}',
    ]
    buffer = plan.policy.buffer
    for c, rate in zip(plan.classes, rates):
        ceil = rate if c.exact else link
        quantum = max(MTU_FRAME, min(MAX_QUANTUM, round(MAX_QUANTUM * rate / link)))
        out.append(f"# class {c.name}: queue {c.index}, priority {c.priority}")
        out.append(f'tc class add dev "$DEV" parent 1:1 classid {classid(c.index)} htb rate {bits(rate)} '
                   f"ceil {bits(ceil)} prio {priority_rank(c.priority)} quantum {quantum}")  # fmt: skip
        handle = f"{0x10 + c.index:x}:"
        if buffer.bytes is not None:
            leaf = f"bfifo limit {max(MTU_FRAME, round(buffer.bytes * c.buffer_percent / 100))}"
        elif buffer.pkts is not None:
            leaf = f"pfifo limit {max(1, round(buffer.pkts * c.buffer_percent / 100))}"
        else:
            leaf = None
        if leaf:
            out.append(f'tc qdisc add dev "$DEV" parent {classid(c.index)} handle {handle} {leaf}')
        if c.drop_profile is not None:
            out.append(f"# {plan.note('tc', f'class {c.name}: drop profile')}")

    for prio, term in enumerate(plan.terms, 1):
        action, notes = _term_action(plan, term)
        out.append(f"# term {term.name}")
        out += [f"# {n}" for n in notes]
        for matches in _term_matches(term):
            out.append(f'tc filter add dev "$DEV" parent 1: protocol ip prio {prio} u32 {matches}{action}')
    prio = len(plan.terms) + 1
    if plan.alpha_src and plan.alpha_dst:
        alpha = classid(plan.klass(plan.alpha_class).index)
        f = f'tc filter add dev "$DEV" parent 1: protocol ip prio {prio}'
        out.append(f"# α: source in alpha-src and destination in alpha-dst -> {plan.alpha_class} ({alpha})")
        out.append(f"{f} handle {ALPHA_TABLE} u32 divisor 1")
        out += [f"{f} u32 ht {ALPHA_TABLE} match ip dst {e.prefix} flowid {alpha}" for e in plan.alpha_dst]
        out += [f"{f} u32 ht 800: match ip src {e.prefix} link {ALPHA_TABLE}" for e in plan.alpha_src]
    else:
        out.append("# no α filters: the α source or destination list is empty")
    return "\n".join(out) + "\n"

