"""nftables: the α prefix sets, aging out by themselves, and rules that
classify packets for the HTB tree of :mod:`.tc`, loaded with ``nft -f``.

Sets ``alpha_src`` and ``alpha_dst`` (``type ipv4_addr; flags interval,
timeout``) hold the prefix table; each element's ``timeout`` is what is
left of its aging period (``aging - (reference - last_seen)``, see
:mod:`.model`), so an element the next identification run does not renew
leaves the set when the table would have dropped it, and the set's own
``timeout`` (the full aging period) applies to elements added later by
hand. A ``postrouting`` chain at mangle priority sets ``meta priority``
(skb->priority) to the class's HTB class id: HTB puts a packet whose
priority names one of its leaf classes straight into that class, before
any filter (tc-htb(8), "Classification"). The policy's terms come first,
each ending in ``accept`` so that the first matching term decides, as in
a Junos filter. With a ``linux`` ingress interface the rules classify only
packets that came in by it (``iifname``), as a Junos input filter does;
with an egress interface, only packets leaving by it (``oifname``).

Policers
    A policer is metered here, on the way out, before the packet reaches
    the qdisc: the closest equivalent of a router's ingress policer. Each
    step of :func:`.tc.meter_steps` is a rule ``limit rate over <bytes/
    second> burst <bytes>`` ahead of the term's own rule: a packet above the
    step's bucket matches it and is dropped or sent to its class, one
    within takes tokens and goes on to the next rule (nft(8), "limit";
    each rule has its own bucket). The colour a packet leaves with (the
    policy's loss priority) is kept in the two low bits of the packet mark
    (``meta mark``; 0 green, 1 yellow, 2 red, the values of the Cisco
    file's discard-class) for a later stage to read, the rest of the mark
    untouched.

The file starts by creating and deleting the table, so that loading it
again replaces the table whole (the idiom of the nft(8) manual's
"table" section for a scripted ruleset). Syntax from nft(8): sets
(``flags interval, timeout``, ``timeout``, element ``timeout``), ``meta
priority set``, ``limit rate over``, ``ip dscp``, ``th dport``.
"""

from __future__ import annotations

from ..policy import Term
from .model import Plan, fmt_duration
from .tc import classid, meter_steps

__all__ = ["FILENAME", "render"]

FILENAME = "alphaqos.nft"
TABLE = "inet alphaqos"
TARGET = "nftables"
#: The packet-mark bits that carry the colour, and each colour's value.
COLOUR_MASK = 0x3
COLOUR_MARK = {"green": 0, "yellow": 1, "red": 2}


def _mark(colour: str) -> str:
    keep = 0xFFFFFFFF & ~COLOUR_MASK
    return f"meta mark set meta mark & 0x{keep:08x} | 0x{COLOUR_MARK[colour]:08x}"


def _set(plan: Plan, name: str, entries) -> list[str]:
    out = [f"    set {name} {{", "        type ipv4_addr", "        flags interval, timeout",
           f"        timeout {fmt_duration(plan.aging_s)}"]  # fmt: skip
    if entries:
        out.append("        elements = {")
        out += [f"            {e.prefix} timeout {fmt_duration(plan.timeout_s(e))}," for e in entries]
        out[-1] = out[-1].rstrip(",")
        out.append("        }")
    out.append("    }")
    return out


def _match(term: Term) -> str:
    m, parts = term.from_, []
    if m.source:
        parts.append(f"ip saddr {m.source}")
    if m.destination:
        parts.append(f"ip daddr {m.destination}")
    if m.protocol:
        parts.append(f"meta l4proto {m.protocol}")
    for name, ports in (("sport", m.source_port), ("dport", m.destination_port)):
        if ports:
            low, high = ports
            parts.append(f"th {name} {low}" if low == high else f"th {name} {low}-{high}")
    if m.dscp is not None:
        values = [m.dscp] if isinstance(m.dscp, int) else m.dscp
        parts.append("ip dscp " + (str(values[0]) if len(values) == 1 else "{ " + ", ".join(map(str, values)) + " }"))
    return " ".join(parts)


def render(plan: Plan, previous: str | None = None) -> str:
    out = [
        "#!/usr/sbin/nft -f",
        "# alphaqos provision: α prefix sets (aging by timeout) and classification for the HTB tree of tc.sh.",
        f"# aging {fmt_duration(plan.aging_s)}"
        + (f", timeouts counted from {plan.reference:%Y-%m-%d %H:%M:%S} UTC" if plan.reference else ""),
    ]
    header_at = len(out)
    out += [f"table {TABLE}", f"delete table {TABLE}", f"table {TABLE} {{"]
    out += _set(plan, "alpha_src", plan.alpha_src)
    out += _set(plan, "alpha_dst", plan.alpha_dst)
    out += ["    chain classify {", "        type filter hook postrouting priority mangle; policy accept;"]
    ingress, egress = plan.ingress.get("linux"), plan.egress.get("linux")
    if egress:
        out.append(f'        oifname != "{egress}" accept')
    if ingress:
        out.append(f'        iifname != "{ingress}" accept comment "the policy applies to what {ingress} receives"')
    for term in plan.terms:
        match, then = _match(term), term.then
        prefix = f"        {match} " if match else "        "
        if then.discard:
            out.append(f'{prefix}counter drop comment "{term.name}"')
            continue
        own = then.class_ or plan.default_class.name
        if then.policer is not None:
            out.append("        # policer: metered on the way out, before the qdisc, the closest equivalent of the "
                       "router's ingress policer; the colour is kept in mark bits 0-1")  # fmt: skip
            for rate, burst, colour, outcome in meter_steps(plan, term, TARGET):
                limit = f"limit rate over {round(rate / 8)} bytes/second burst {burst} bytes"
                if outcome is None:
                    out.append(f'{prefix}{limit} counter drop comment "{term.name} {colour}"')
                else:
                    klass = classid(plan.klass(outcome).index)
                    out.append(f"{prefix}{limit} {_mark(colour)} meta priority set {klass} "
                               f'counter accept comment "{term.name} {colour}"')  # fmt: skip
        colour = {"high": "red", "low": "green"}.get(then.loss_priority or "")
        mark = f"{_mark(colour)} " if colour else ""
        klass = classid(plan.klass(own).index)
        out.append(f'{prefix}{mark}meta priority set {klass} counter accept comment "{term.name}"')
    alpha = classid(plan.klass(plan.alpha_class).index)
    out.append(f'        ip saddr @alpha_src ip daddr @alpha_dst meta priority set {alpha} counter comment "alpha"')
    out += ["    }", "}"]
    out[header_at:header_at] = plan.partial_header(TARGET, "#")
    return "\n".join(out) + "\n"
