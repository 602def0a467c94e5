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
a Junos filter; a single-rate policer that discards is a ``limit rate
over <bytes/second> burst <bytes> drop`` rule ahead of its term.

The file starts by creating and deleting the table, so that loading it
again replaces the table whole (the idiom of the nft(8) manual's
"table" section for a scripted ruleset). Syntax from nft(8): sets
(``flags interval, timeout``, ``timeout``, element ``timeout``), ``meta
priority set``, ``limit rate over``, ``ip dscp``, ``th dport``.
"""

from __future__ import annotations

from ..policy import Term
from .model import Plan, fmt_duration
from .tc import classid

__all__ = ["FILENAME", "render"]

FILENAME = "alphaqos.nft"
TABLE = "inet alphaqos"


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


def render(plan: Plan) -> str:
    out = [
        "#!/usr/sbin/nft -f",
        "# alphaqos provision: α prefix sets (aging by timeout) and classification for the HTB tree of tc.sh.",
        f"# aging {fmt_duration(plan.aging_s)}"
        + (f", timeouts counted from {plan.reference:%Y-%m-%d %H:%M:%S} UTC" if plan.reference else ""),
        f"table {TABLE}",
        f"delete table {TABLE}",
        f"table {TABLE} {{",
    ]
    out += _set(plan, "alpha_src", plan.alpha_src)
    out += _set(plan, "alpha_dst", plan.alpha_dst)
    out += ["    chain classify {", "        type filter hook postrouting priority mangle; policy accept;"]
    for term in plan.terms:
        match, then = _match(term), term.then
        prefix = f"        {match} " if match else "        "
        if then.discard:
            out.append(f'{prefix}counter drop comment "{term.name}"')
            continue
        p = then.policer
        if p is not None:
            if p.srtcm is None and p.trtcm is None and p.out_of_profile == "discard":
                out.append(f"{prefix}limit rate over {round(p.rate / 8)} bytes/second burst {p.burst} bytes "
                           f'counter drop comment "{term.name} policer"')  # fmt: skip
            else:
                out.append(f"        # {plan.note('nftables', f'term {term.name}: policer (nft limits with drop only)')}")
        if then.loss_priority:
            out.append(f"        # {plan.note('nftables', f'term {term.name}: loss-priority {then.loss_priority}')}")
        klass = plan.klass(then.class_ or plan.default_class.name)
        out.append(f'{prefix}meta priority set {classid(klass.index)} counter accept comment "{term.name}"')
    alpha = classid(plan.klass(plan.alpha_class).index)
    out.append(f'        ip saddr @alpha_src ip daddr @alpha_dst meta priority set {alpha} counter comment "alpha"')
    out += ["    }", "}"]
    return "\n".join(out) + "\n"
