"""Linux traffic control: a shell script building an HTB tree with u32
filters, run as ``sh tc.sh [DEVICE]`` (default: the ``linux`` egress
interface, if one was given).

Tree
    ``1:`` HTB root (``default`` the policy's default class), ``1:1`` the
    link (``--rate``), one leaf per forwarding class, ``1:10`` + queue
    number (hex minor, as tc reads class ids), each with ``rate`` its share
    of the link (transmit-rate percentage or rate; weights and quanta as
    their share; strict priority an equal share of what is left), ``ceil``
    the link (the class's own rate if ``exact``), ``prio`` from the Junos
    priority (strict-high 0 ... low 4: HTB lends spare bandwidth to lower
    prio values first) and a ``quantum`` proportional to the rate.

Bursts
    Every class has an explicit ``burst`` (at ``rate``) and ``cburst`` (at
    ``ceil``): the bytes the rate sends in :data:`BURST_S` (1 ms), rounded
    up to whole :data:`MTU_FRAME` frames, at least one (and at least the
    class's own ``burst`` if the policy gives one). tc's own default is
    ``rate / HZ + MTU`` (iproute2 ``tc/q_htb.c``), which depends on the
    kernel's timer frequency and is far too small at 10 Gbit/s for HTB to
    keep its rate between two timer events; a number in the file is also
    one a reader can check.

Leaf queues (``--tc-leaf``)
    The policy's ``buffer`` is a router's interface buffer (125 MB in the
    first document): a host's qdisc of that size would hold seconds of
    traffic. So a leaf is ``fq_codel`` (the default: per-flow queues with
    CoDel's 5 ms target, Linux's own default qdisc), or ``bfifo`` of the
    class's rate x :data:`LEAF_DELAY_S` (10 ms), at least two frames; or
    ``policy``: the class's share of the policy's buffer (``bfifo`` or
    ``pfifo``), to emulate the router on a Linux box.

Filters
    The policy's terms first (``u32 match ip src|dst|protocol|sport|dport|
    dsfield``; a port range is split into aligned blocks u32 can mask),
    then the α term as two u32 levels: a hash table (``ht 100:``) of the α
    destinations pointing to the α class, linked from one filter per α
    source, so a table of S sources and D destinations takes S + D filters
    rather than S x D. Traffic no filter claims goes to the default class.

Policers
    The closest faithful equivalent of a router's ingress policer: the
    term's filters meter on this egress qdisc, before the packet is
    queued, with the kernel's ``police`` action (a token bucket,
    tc-police(8)) in its own u32 table (``ht 101:`` ...) that every block
    of the term's match links to, so the term has one bucket. A meter is
    one or two steps, each a filter at its own ``prio`` whose exceeding
    packets get the step's outcome (``drop``, or its ``flowid``) and whose
    conforming packets ``continue`` to the next step:

    - single rate: ``rate`` / ``burst``, out of profile -> the action;
    - srTCM (RFC 2697): red is a bucket of ``cir`` and ``cbs + ebs`` (the
      sum of srTCM's two buckets, which refill at ``cir`` together; a
      packet fits the sum though neither bucket alone at most once per
      refill), then yellow the ``cir`` / ``cbs`` bucket of the packets
      that were not red, which is srTCM's committed bucket;
    - trTCM (RFC 2698): red is the ``pir`` / ``pbs`` bucket, then yellow
      the ``cir`` / ``cbs`` bucket of the rest, as the RFC meters.

    Steps at the end that change nothing (the packet stays in the term's
    class) are left out. Linux keeps no colour, so a colour only a drop
    profile would read is not rendered (drop profiles are not either), and
    colour-aware metering cannot be expressed.

Syntax from the tc-htb(8), tc-u32(8), tc-bfifo(8), tc-fq_codel(8) and
tc-police(8) manual pages (iproute2).
"""

from __future__ import annotations

import math

from ..units import fmt_rate_tc
from ..policy import PROTOCOLS, ClassRef, Term
from .model import Plan, priority_rank

__all__ = ["FILENAME", "bits", "burst_bytes", "classid", "class_rates", "leaf", "quantum_bytes", "render", "script"]

FILENAME = "tc.sh"
TARGET = "tc"
ALPHA_TABLE = "100:"
#: First u32 table of the policers (hex handles 101:, 102:, ...).
POLICER_TABLE = 0x101
#: HTB's largest sensible quantum (bytes; the kernel warns above 200000).
MAX_QUANTUM = 200_000
#: An Ethernet frame as HTB counts it (1500 bytes of IP and the 14-byte header).
MTU_FRAME = 1514
#: HTB bursts hold this long at their rate (see the module doc).
BURST_S = 0.001
#: A bfifo leaf holds this long at its class's rate.
LEAF_DELAY_S = 0.010
LEAVES = ("fq_codel", "bfifo", "policy")


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
    return fmt_rate_tc(bps)


def burst_bytes(rate_bps: int, floor: int = 0) -> int:
    """HTB burst for ``rate_bps``: :data:`BURST_S` of it in whole frames,
    at least one frame and at least ``floor`` bytes."""
    frames = max(1, math.ceil(rate_bps * BURST_S / 8 / MTU_FRAME), math.ceil(floor / MTU_FRAME))
    return frames * MTU_FRAME


def leaf(kind: str, rate_bps: int, buffer=None, share: float = 100.0) -> str | None:
    """The leaf qdisc (after ``tc qdisc add ... parent X handle Y:``)."""
    if kind == "fq_codel":
        return "fq_codel"
    if kind == "bfifo":
        return f"bfifo limit {max(2 * MTU_FRAME, math.ceil(rate_bps * LEAF_DELAY_S / 8))}"
    if buffer is not None and buffer.bytes is not None:
        return f"bfifo limit {max(MTU_FRAME, round(buffer.bytes * share / 100))}"
    if buffer is not None and buffer.pkts is not None:
        return f"pfifo limit {max(1, round(buffer.pkts * share / 100))}"
    return None


def htb_class(parent: str, cid: str, rate: int, ceil: int, extra: str = "", burst_floor: int = 0) -> str:
    return (f'class add dev $1 parent {parent} classid {cid} htb rate {bits(rate)} ceil {bits(ceil)} '
            f"burst {burst_bytes(rate, burst_floor)} cburst {burst_bytes(ceil, burst_floor)}{extra}")  # fmt: skip


def quantum_bytes(rate_bps: int) -> int:
    """An HTB class's ``quantum``, given explicitly: tc's own is ``rate /
    r2q`` bytes (r2q 10), which the kernel warns about ("quantum of class
    ... is big") above :data:`MAX_QUANTUM` and which below one frame lets a
    class send less than a frame a round; so the rate's bytes / 10, bounded
    to [:data:`MTU_FRAME`, :data:`MAX_QUANTUM`]."""
    return max(MTU_FRAME, min(MAX_QUANTUM, rate_bps // 8 // 10))


def _heredoc_safe(line: str) -> str:
    """``line`` inside an unquoted here-document: only ``$1`` (the device)
    expands; a ``$``, backquote or backslash of a comment stays literal."""
    return line.replace("\\", "\\\\").replace("`", "\\`").replace("$", "\\$").replace("\\$1", "$1")


def script(plan: Plan, what: str, filename: str, usage: str, body: list[str], comments: tuple[str, ...] = (),
           gso_max_segs: int | None = None) -> str:
    """A tc script that changes its device all or nothing.

    ``body`` is tc commands in ``tc -batch`` form (``qdisc add dev $1
    ...``) and ``#`` comments, which tc's batch reader skips. The script
    runs them first as one batch on the loopback device of a throwaway
    network namespace (``unshare --net``): a qdisc or action the kernel
    lacks, or an argument it refuses, stops the script there, with the
    device untouched. Then it removes the device's root qdisc and applies
    the batch to the device; should that fail (a refusal only this device
    makes), the root qdisc is removed again, which leaves the kernel's
    default, and the script says what the device had. ``gso_max_segs`` (the
    zurawski-tc study's host setting, ``ip link set DEV gso_max_segs 1``) is
    set after the tree, and put back on failure."""
    device = plan.egress.get("linux")
    out = [
        "#!/bin/sh",
        f"# alphaqos provision: {what}.",
        f"# Usage: sh {filename} {'[DEVICE]' if device else 'DEVICE'} ({usage}). Replaces DEVICE's root qdisc.",
        "# All or nothing: the commands are first run as one tc batch on the loopback of a throwaway network",
        "# namespace (unshare --net), so a qdisc, action or argument this kernel refuses stops the script before",
        "# DEVICE is touched; if applying them to DEVICE fails after that, its root qdisc is removed again.",
        *comments,
        "set -eu",
        f"DEV=${{1:-{device}}}" if device else "DEV=${1:?usage: sh " + filename + " DEVICE}",
        f'fail() {{ echo "{filename}: $*" >&2; exit 1; }}',
        "# The tc commands for device $1, one a line (tc -batch; '#' starts a comment).",
        "batch() {",
        "cat <<EOF",
        *(_heredoc_safe(line) for line in body),
        "EOF",
        "}",
        'command -v tc >/dev/null 2>&1 || fail "tc (iproute2) is not installed; nothing changed"',
        'ip link show dev "$DEV" >/dev/null 2>&1 || fail "no network device $DEV; nothing changed"',
        "if command -v unshare >/dev/null 2>&1; then",
        '    out=$(batch lo | unshare --net tc -batch - 2>&1) ||',
        '        fail "this kernel refuses the commands (tried in a throwaway network namespace); nothing changed on $DEV: $out"',
    ]
    if gso_max_segs is not None:
        out += [f'    out=$(unshare --net ip link set dev lo gso_max_segs {gso_max_segs} 2>&1) ||',
                f'        fail "this kernel cannot set gso_max_segs {gso_max_segs}; nothing changed on $DEV: $out"']  # fmt: skip
    out += [
        "else",
        f'    echo "{filename}: warning: no unshare: the commands are not tried before they change $DEV" >&2',
        "fi",
        'before=$(tc qdisc show dev "$DEV" root)',
    ]
    if gso_max_segs is not None:
        out.append('gso_before=$(ip -d link show dev "$DEV" | sed -n "s/.* gso_max_segs \\([0-9]*\\).*/\\1/p")')
    out += ["undo() {", '    tc qdisc del dev "$DEV" root 2>/dev/null || true']
    if gso_max_segs is not None:
        out.append('    [ -z "$gso_before" ] || ip link set dev "$DEV" gso_max_segs "$gso_before" 2>/dev/null || true')
    out += [
        '    fail "applying to $DEV failed; its root qdisc is removed (the kernel\'s default; before: ${before:-none})"',
        "}",
        'tc qdisc del dev "$DEV" root 2>/dev/null || true',
        'batch "$DEV" | tc -batch - || undo',
    ]
    if gso_max_segs is not None:
        out += [f"# The study's host setting (zurawski-tc): one frame per packet into the qdisc, so HTB's",
                "# bursts are frames and not GSO packets of up to 64 KB sent back to back at the line rate.",
                f'ip link set dev "$DEV" gso_max_segs {gso_max_segs} || undo']  # fmt: skip
    return "\n".join(out) + "\n"


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


def meter_steps(plan: Plan, term: Term, target: str) -> list[tuple[int, int, str, str | None]]:
    """The policer of ``term`` as (rate bit/s, burst bytes, colour,
    outcome) steps, in the order a packet meets them: a packet above the
    step's bucket is ``colour`` and goes to the outcome (a class name, or
    None: dropped); one within goes on to the next step, and after the last
    is green in the term's class. Records what ``target`` cannot express."""
    p = term.then.policer
    own = term.then.class_ or plan.default_class.name

    def outcome(action) -> str | None:
        if action == "discard":
            return None
        return action.class_ if isinstance(action, ClassRef) else own

    if p.srtcm is None and p.trtcm is None:
        steps = [(p.rate, p.burst, "red", outcome(p.out_of_profile))]
    else:
        m = p.srtcm or p.trtcm
        red = (m.cir, m.cbs + m.ebs) if p.srtcm is not None else (m.pir, m.pbs)
        steps = [(*red, "red", outcome(p.red or "discard")), (m.cir, m.cbs, "yellow", outcome(p.yellow or "transmit"))]
    if p.color_aware:
        plan.note(target, f"term {term.name!r}: color_aware metering", "Linux keeps no colour from upstream; metered colour-blind")
    return steps


def _filters(plan: Plan, term: Term, prio: int, table: int) -> tuple[list[str], int, int]:
    """The filters of ``term`` from ``prio`` on; returns them, the next
    free prio and the next free policer table."""
    f = f'filter add dev $1 parent 1: protocol ip prio'
    matches = _term_matches(term)
    then = term.then
    if then.discard:
        return [f"{f} {prio} u32 {m} action drop" for m in matches], prio + 1, table
    own = classid(plan.klass(then.class_ or plan.default_class.name).index)
    out = []
    if then.policer is not None:
        steps = meter_steps(plan, term, TARGET)
        while steps and steps[-1][3] == (then.class_ or plan.default_class.name):
            steps.pop()  # changes nothing: the colour is not kept
        if steps:
            out.append("# policer: metered here, on egress before the queue, the closest equivalent of the router's "
                       "ingress policer (one bucket per step; conforming packets continue to the next)")  # fmt: skip
        for rate, burst, _colour, outcome in steps:
            flowid = own if outcome is None else classid(plan.klass(outcome).index)
            handle = f"{table:x}:"
            exceed = "drop" if outcome is None else "ok"
            out.append(f"# step: above {bits(rate)} (burst {burst} B) -> {'drop' if outcome is None else outcome}")
            out.append(f"{f} {prio} handle {handle} u32 divisor 1")
            out.append(f"{f} {prio} u32 ht {handle} match u32 0 0 flowid {flowid} "
                       f"action police rate {bits(rate)} burst {burst} conform-exceed {exceed}/continue")  # fmt: skip
            out += [f"{f} {prio} u32 ht 800: {m} link {handle}" for m in matches]
            prio, table = prio + 1, table + 1
    out += [f"{f} {prio} u32 {m} flowid {own}" for m in matches]
    return out, prio + 1, table


def render(plan: Plan, previous: str | None = None) -> str:
    link = plan.link_rate_bps
    rates = class_rates(plan)
    out = [
        f'qdisc add dev $1 root handle 1: htb default {0x10 + plan.default_class.index:x}',
        htb_class("1:", "1:1", link, link, f" quantum {MAX_QUANTUM}"),
    ]
    buffer = plan.policy.buffer
    for c, rate in zip(plan.classes, rates):
        ceil = rate if c.exact else link
        quantum = max(MTU_FRAME, min(MAX_QUANTUM, round(MAX_QUANTUM * rate / link)))
        out.append(f"# class {c.name}: queue {c.index}, priority {c.priority}")
        floor = plan.policy.classes[c.name].burst or 0
        out.append(htb_class("1:1", classid(c.index), rate, ceil, f" prio {priority_rank(c.priority)} quantum {quantum}", floor))
        qdisc = leaf(plan.tc_leaf, rate, buffer, c.buffer_percent)
        if qdisc:
            out.append(f'qdisc add dev $1 parent {classid(c.index)} handle {0x10 + c.index:x}: {qdisc}')
        if c.drop_profile is not None:
            reason = f"the leaf is {plan.tc_leaf}; Linux has no per-colour drop profile without a colour to read"
            out.append(f"# {plan.note(TARGET, f'class {c.name!r}: drop profile', reason)}")
        notes = plan.class_notes(TARGET, c, None, "HTB has no alternating queue; it is served as its weight's share")
        out += [f"# {n}" for n in notes]

    prio, table = 1, POLICER_TABLE
    for term in plan.terms:
        out.append(f"# term {term.name}")
        lines, prio, table = _filters(plan, term, prio, table)
        out += lines
    if plan.alpha_src and plan.alpha_dst:
        alpha = classid(plan.klass(plan.alpha_class).index)
        f = f'filter add dev $1 parent 1: protocol ip prio {prio}'
        out.append(f"# α: source in alpha-src and destination in alpha-dst -> {plan.alpha_class} ({alpha})")
        out.append(f"{f} handle {ALPHA_TABLE} u32 divisor 1")
        out += [f"{f} u32 ht {ALPHA_TABLE} match ip dst {e.prefix} flowid {alpha}" for e in plan.alpha_dst]
        out += [f"{f} u32 ht 800: match ip src {e.prefix} link {ALPHA_TABLE}" for e in plan.alpha_src]
    else:
        out.append("# no α filters: the α source or destination list is empty")
    return script(plan, "α prefixes and QoS policy as a Linux HTB tree", FILENAME, f"link rate {bits(link)}", out,
                  tuple(plan.partial_header(TARGET, "#")))
