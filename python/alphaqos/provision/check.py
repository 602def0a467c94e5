"""A parser-level check of the Junos and Cisco files, for the targets no
tool here can load: each line must be a statement of the grammar the
renderers use, and every name a statement uses must be defined.

This is not a router's parser: it knows the statements alphaqos writes
(the syntax cited in :mod:`.junos` and :mod:`.cisco`), and rejects any
other, so that a renderer that writes a misspelt or misplaced statement,
refers to a class, policer, prefix list, scheduler, drop profile, access
list, class-map or policy-map it never defined, or replaces an object in a
way a router refuses (IOS: ``no policy-map`` of a policy that may be
attached) fails its tests. A tc script is checked by ``sh -n`` and by the
grammar of the tc commands the renderers write (:func:`check_tc`; the
script itself then tries them on the kernel before it changes a device),
and the nftables file by ``nft -c`` where nft is installed.
``alphaqos provision`` runs :func:`check` on every file before it writes
any: a file that fails is an error naming the file and line.

:func:`check` returns the problems as ``LINE: message`` strings (empty
when the file passes).
"""

from __future__ import annotations

import ipaddress
import re
from collections import defaultdict

__all__ = ["check", "check_cisco", "check_junos", "check_nft", "check_tc"]

_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_NUM = r"\d+"
_LIST = r"\[(?: [^\[\]\s]+)+ \]"
_JUNOS_SET = [
    rf"policy-options prefix-list (?P<prefix_list>{_NAME}) (?P<prefix>\S+)",
    rf"firewall family inet filter (?P<filter>{_NAME}) term (?P<term>{_NAME}) from "
    rf"(?:source-address \S+|destination-address \S+|protocol (?:tcp|udp|icmp)|(?:source|destination)-port {_NUM}(?:-{_NUM})?"
    rf"|dscp (?:{_NAME}|{_LIST})|(?:source|destination)-prefix-list (?P<uses_prefix_list>{_NAME}))",
    rf"firewall family inet filter (?P<filter>{_NAME}) term (?P<term>{_NAME}) then "
    rf"(?P<then>accept|discard|count {_NAME}|forwarding-class (?P<uses_class>{_NAME})|loss-priority (?:low|medium-low|medium-high|high)"
    rf"|policer (?P<uses_policer>{_NAME})|three-color-policer (?P<uses_tcp_kind>single-rate|two-rate) (?P<uses_tcp>{_NAME}))",
    rf"firewall policer (?P<policer>{_NAME}) if-exceeding bandwidth-limit {_NUM} burst-size-limit {_NUM}",
    rf"firewall policer (?P<policer_then>{_NAME}) then (?:discard|loss-priority (?:low|high)|forwarding-class (?P<uses_class>{_NAME}))",
    rf"firewall three-color-policer (?P<tcp>{_NAME}) (?P<tcp_kind>single-rate|two-rate) (?:color-blind|color-aware)",
    rf"firewall three-color-policer (?P<tcp_rate>{_NAME}) single-rate (?:committed-information-rate|committed-burst-size|excess-burst-size) {_NUM}",
    rf"firewall three-color-policer (?P<tcp_rate2>{_NAME}) two-rate "
    rf"(?:committed-information-rate|committed-burst-size|peak-information-rate|peak-burst-size) {_NUM}",
    rf"firewall three-color-policer (?P<tcp_action>{_NAME}) action loss-priority high then discard",
    rf"class-of-service forwarding-classes class (?P<class>{_NAME}) queue-num (?P<queue>{_NUM})",
    rf"class-of-service schedulers (?P<scheduler>{_NAME}) transmit-rate (?:percent (?P<rate_percent>{_NUM})|{_NUM}|remainder)(?: exact)?",
    rf"class-of-service schedulers (?P<scheduler>{_NAME}) buffer-size percent (?P<buffer_percent>{_NUM})",
    rf"class-of-service schedulers (?P<scheduler>{_NAME}) priority (?:strict-high|high|medium-high|medium-low|low)",
    rf"class-of-service schedulers (?P<scheduler>{_NAME}) drop-profile-map loss-priority (?:low|medium-low|medium-high|high) "
    rf"protocol any drop-profile (?P<uses_drop_profile>{_NAME})",
    rf"class-of-service drop-profiles (?P<drop_profile>{_NAME}) interpolate fill-level (?P<fills>{_LIST}) drop-probability (?P<drops>{_LIST})",
    rf"class-of-service scheduler-maps (?P<scheduler_map>{_NAME}) forwarding-class (?P<uses_class>{_NAME}) scheduler (?P<uses_scheduler>{_NAME})",
    rf"interfaces (?P<interface>\S+) unit {_NUM} family inet filter input (?P<uses_filter>{_NAME})",
    rf"class-of-service interfaces (?P<interface>\S+) scheduler-map (?P<uses_scheduler_map>{_NAME})",
]
_JUNOS_DELETE = (
    rf"(?P<path>policy-options prefix-list {_NAME}|firewall family inet filter {_NAME}|firewall policer {_NAME}"
    rf"|firewall three-color-policer {_NAME}|class-of-service (?:scheduler-maps|schedulers|drop-profiles) {_NAME})"
)
#: Junos queue numbers.
JUNOS_QUEUES = range(8)


def check_junos(text: str) -> list[str]:
    """Problems of a Junos ``set`` file (see the module doc)."""
    problems: list[str] = []
    defined: dict[str, set[str]] = defaultdict(set)
    used: list[tuple[int, str, str]] = []  # (line, kind, name)
    terms: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    queues: dict[str, int] = {}
    rate_percent: dict[str, int] = {}
    buffer_percent: dict[str, int] = {}
    map_schedulers: dict[str, set[str]] = defaultdict(set)
    deleted: dict[str, int] = {}
    set_lines: list[tuple[int, str]] = []
    patterns = [re.compile(p) for p in _JUNOS_SET]
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("delete "):
            m = re.fullmatch(_JUNOS_DELETE, line[len("delete "):])
            if m is None:
                problems.append(f"{number}: not a delete statement alphaqos writes: {line!r}")
            else:
                deleted.setdefault(m["path"], number)
            continue
        if not line.startswith("set "):
            problems.append(f"{number}: neither a set nor a delete statement: {line!r}")
            continue
        body = line[len("set "):]
        m = next((m for p in patterns if (m := p.fullmatch(body))), None)
        if m is None:
            problems.append(f"{number}: not a Junos statement of the grammar: {line!r}")
            continue
        g = {k: v for k, v in m.groupdict().items() if v is not None}
        set_lines.append((number, body))
        for key in ("prefix_list", "filter", "policer", "class", "scheduler", "drop_profile", "scheduler_map"):
            if key in g:
                defined[key].add(g[key])
        if "policer_then" in g:
            defined["policer_then"].add(g["policer_then"])
        if "tcp" in g:
            defined[f"tcp:{g['tcp_kind']}"].add(g["tcp"])
        for key in ("tcp_rate", "tcp_rate2", "tcp_action"):
            if key in g:
                used.append((number, "three-color-policer (any kind)", g[key]))
        for key, kind in (("uses_prefix_list", "prefix_list"), ("uses_class", "class"), ("uses_policer", "policer"),
                          ("uses_drop_profile", "drop_profile"), ("uses_scheduler", "scheduler"),
                          ("uses_filter", "filter"), ("uses_scheduler_map", "scheduler_map")):  # fmt: skip
            if key in g:
                used.append((number, kind, g[key]))
        if "uses_tcp" in g:
            used.append((number, f"tcp:{g['uses_tcp_kind']}", g["uses_tcp"]))
        if "term" in g:
            terms[(g["filter"], g["term"])].append((number, g.get("then", "")))
        if "queue" in g:
            q = int(g["queue"])
            if q not in JUNOS_QUEUES:
                problems.append(f"{number}: queue-num {q} is not a queue (0-7)")
            clash = [c for c, other in queues.items() if other == q and c != g["class"]]
            if clash:
                problems.append(f"{number}: queue {q} is already class {clash[0]}'s")
            queues[g["class"]] = q
        if "rate_percent" in g:
            rate_percent[g["scheduler"]] = int(g["rate_percent"])
        if "buffer_percent" in g:
            buffer_percent[g["scheduler"]] = int(g["buffer_percent"])
        if "scheduler_map" in g:
            map_schedulers[g["scheduler_map"]].add(g["uses_scheduler"])
        if "fills" in g:
            fills, drops = g["fills"].split()[1:-1], g["drops"].split()[1:-1]
            if len(fills) != len(drops):
                problems.append(f"{number}: fill-level has {len(fills)} points, drop-probability {len(drops)}")
            if not all(re.fullmatch(r"\d+", v) for v in fills + drops):
                problems.append(f"{number}: fill levels and drop probabilities must be whole percents, got "
                                f"[ {' '.join(fills)} ] and [ {' '.join(drops)} ]")  # fmt: skip
                continue
            values, probabilities = [int(f) for f in fills], [int(d) for d in drops]
            if values != sorted(set(values)) or not all(0 <= v <= 100 for v in values + probabilities):
                problems.append(f"{number}: fill levels must increase within 0-100 and probabilities lie in 0-100")
            elif probabilities != sorted(probabilities):
                problems.append(f"{number}: drop probabilities must not fall as the fill level rises")
    tcp_any = defined["tcp:single-rate"] | defined["tcp:two-rate"]
    for number, kind, name in used:
        names = tcp_any if kind == "three-color-policer (any kind)" else defined[kind]
        if name not in names:
            what = {"tcp:single-rate": "single-rate three-color-policer", "tcp:two-rate": "two-rate three-color-policer"}.get(kind, kind.replace("_", "-"))
            problems.append(f"{number}: {what} {name!r} is used but not defined")
    for policer in defined["policer"] ^ defined["policer_then"]:
        problems.append(f"policer {policer!r} needs both if-exceeding and then")
    for (filt, term), actions in terms.items():
        ends = [a for _, a in actions if a in ("accept", "discard")]
        if len(ends) != 1:
            problems.append(f"{actions[0][0]}: filter {filt} term {term} needs exactly one of accept or discard, has {ends or 'none'}")
    for m, schedulers in map_schedulers.items():
        for name, shares in (("transmit-rate", rate_percent), ("buffer-size", buffer_percent)):
            total = sum(shares.get(s, 0) for s in schedulers)
            if total > 100:
                problems.append(f"scheduler-map {m}: {name} percents add up to {total}, more than 100")
    for path, number in deleted.items():
        earlier = [n for n, body in set_lines if n < number and body.startswith(path + " ")]
        if earlier:
            problems.append(f"{number}: 'delete {path}' comes after it is set (line {earlier[0]}), which it undoes")
    return problems


# --- Cisco MQC -----------------------------------------------------------------

_ACL_ADDR = rf"(?:any|host \S+|object-group (?P<{{g}}>{_NAME})|\d+\.\d+\.\d+\.\d+ \d+\.\d+\.\d+\.\d+)"
_ACL_PORTS = rf"(?: eq {_NUM}| range {_NUM} {_NUM})?"
_ACE = re.compile(
    rf" (?:permit|deny) (?P<proto>ip|tcp|udp|icmp) {_ACL_ADDR.format(g='src_group')}(?P<sport>{_ACL_PORTS})"
    rf" {_ACL_ADDR.format(g='dst_group')}(?P<dport>{_ACL_PORTS})"
)
_POLICE_ACTION = r"(?:transmit|drop|set-discard-class-transmit [0-7]|set-qos-transmit \d+|set-dscp-transmit \S+)"
_POLICE_METER = rf"police cir {_NUM} bc {_NUM}(?: pir {_NUM})?(?: be {_NUM})?"
_POLICE_LINE = re.compile(
    rf"  {_POLICE_METER} conform-action {_POLICE_ACTION} exceed-action {_POLICE_ACTION}(?: violate-action {_POLICE_ACTION})?"
)
_CLASS_LINES = [
    r"  set qos-group (?P<qos>\d+)", r"  set discard-class [0-7]", r"  drop", r"  priority(?: level [12])?",
    rf"  bandwidth (?P<bw_kind>percent|remaining percent) (?P<bw>{_NUM})", rf"  bandwidth (?P<bw_kbps>{_NUM})",
    rf"  shape average (?:percent {_NUM}|{_NUM})", rf"  queue-limit {_NUM} (?:bytes|packets)",
    r"  random-detect discard-class-based", rf"  random-detect exponential-weighting-constant {_NUM}",
    rf"  random-detect discard-class (?P<dc>[0-7]) (?P<min_th>{_NUM}) (?P<max_th>{_NUM}) (?P<denominator>{_NUM})",
]


def check_cisco(text: str) -> list[str]:
    """Problems of a Cisco MQC file (see the module doc)."""
    problems: list[str] = []
    defined: dict[str, dict[str, int]] = defaultdict(dict)  # kind -> name -> line
    removed: dict[str, dict[str, int]] = defaultdict(dict)
    used: list[tuple[int, str, str]] = []
    detached: dict[str, int] = {}
    attached: dict[str, int] = {}
    qos_set: list[tuple[int, int]] = []
    qos_matched: set[int] = set()
    mode, name, klass = None, None, None
    bw: dict[str, list[tuple[str, int]]] = defaultdict(list)
    class_stmts: dict[tuple[str, str], list[str]] = defaultdict(list)
    lines = text.splitlines()
    police_block = False
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("!"):
            continue
        if line == "end":
            if any(x.strip() for x in lines[number:]):
                problems.append(f"{number}: 'end' before the end of the file")
            continue
        if not line.startswith(" "):
            police_block = False
            klass = None
            m = re.fullmatch(rf"(no )?(object-group network|ip access-list extended|class-map(?: match-any| match-all)?|policy-map|interface) (\S+)", line)
            if m is None:
                problems.append(f"{number}: not a top-level statement of the grammar: {line!r}")
                mode = None
                continue
            kind = m[2].split(" match")[0]
            if m[1]:
                removed[kind][m[3]] = number
                if kind == "policy-map" and m[3] not in detached:
                    problems.append(f"{number}: 'no policy-map {m[3]}' before any 'no service-policy' detaches it: "
                                    "IOS refuses to remove a policy-map that is attached")  # fmt: skip
                mode = None
                continue
            mode, name = kind, m[3]
            if kind != "interface":
                if name in defined[kind]:
                    problems.append(f"{number}: {kind} {name} is defined twice (line {defined[kind][name]})")
                defined[kind][name] = number
            continue
        if mode == "object-group network":
            m = re.fullmatch(r" (\S+) (\S+)", line)
            try:
                ipaddress.IPv4Network(f"{m[1]}/{m[2]}") if m else None
            except ValueError:
                m = None
            if m is None:
                problems.append(f"{number}: not a network (address and mask) of an object group: {line!r}")
        elif mode == "ip access-list extended":
            m = _ACE.fullmatch(line)
            if m is None:
                problems.append(f"{number}: not an access-list entry of the grammar: {line!r}")
                continue
            if (m["sport"] or m["dport"]) and m["proto"] not in ("tcp", "udp"):
                problems.append(f"{number}: ports need tcp or udp")
            for group in (m["src_group"], m["dst_group"]):
                if group:
                    used.append((number, "object-group network", group))
        elif mode == "class-map":
            m = re.fullmatch(rf" match (?:access-group name (?P<acl>{_NAME})|dscp(?P<dscp>(?: \d+)+)|qos-group (?P<qos>\d+))", line)
            if m is None:
                problems.append(f"{number}: not a class-map match of the grammar: {line!r}")
            elif m["acl"]:
                used.append((number, "ip access-list extended", m["acl"]))
            elif m["qos"]:
                qos_matched.add(int(m["qos"]))
            elif any(int(d) > 63 for d in m["dscp"].split()):
                problems.append(f"{number}: a DSCP is 0-63")
        elif mode == "policy-map":
            if line.startswith(" class "):
                klass = line[len(" class "):]
                police_block = False
                if klass != "class-default":
                    used.append((number, "class-map", klass))
                continue
            if klass is None:
                problems.append(f"{number}: a policy-map statement outside a class: {line!r}")
                continue
            if police_block and re.fullmatch(rf"   (?:conform|exceed|violate)-action {_POLICE_ACTION}", line):
                qos_set += [(number, int(q)) for q in re.findall(r"set-qos-transmit (\d+)", line)]
                continue
            police_block = False
            if re.fullmatch(rf"  {_POLICE_METER}", line):
                police_block = True
                continue
            m = _POLICE_LINE.fullmatch(line)
            if m is None:
                m = next((m for p in _CLASS_LINES if (m := re.fullmatch(p, line))), None)
            if m is None:
                problems.append(f"{number}: not a policy-map class statement of the grammar: {line!r}")
                continue
            g = {k: v for k, v in m.groupdict().items() if v is not None}
            if "qos" in g:
                qos_set.append((number, int(g["qos"])))
            for q in re.findall(r"set-qos-transmit (\d+)", line):
                qos_set.append((number, int(q)))
            if "bw" in g:
                bw[name].append((g["bw_kind"], int(g["bw"])))
            if "bw_kbps" in g:
                bw[name].append(("kbps", int(g["bw_kbps"])))
            if "dc" in g and "  random-detect discard-class-based" not in class_stmts[(name, klass)]:
                problems.append(f"{number}: random-detect discard-class needs random-detect discard-class-based first")
            if "dc" in g and not 1 <= int(g["min_th"]) < int(g["max_th"]):
                problems.append(f"{number}: random-detect discard-class {g['dc']}: min threshold {g['min_th']} must be "
                                f"at least 1 and below max threshold {g['max_th']}")  # fmt: skip
            if "dc" in g and not 1 <= int(g["denominator"]) <= 65535:
                problems.append(f"{number}: random-detect discard-class {g['dc']}: mark-probability denominator "
                                f"{g['denominator']} is outside 1-65535")  # fmt: skip
            stmt = line.split()[0]
            if stmt in ("priority", "bandwidth") and {"priority", "bandwidth"} <= {s.split()[0] for s in class_stmts[(name, klass)]} | {stmt}:
                problems.append(f"{number}: class {klass} has both priority and bandwidth")
            class_stmts[(name, klass)].append(line)
        elif mode == "interface":
            m = re.fullmatch(rf" (no )?service-policy (input|output) ({_NAME})", line)
            if m is None:
                problems.append(f"{number}: not an interface statement of the grammar: {line!r}")
            elif m[1]:
                detached[m[3]] = number
            else:
                used.append((number, "policy-map", m[3]))
                attached[m[3]] = number
        else:
            problems.append(f"{number}: an indented line outside any block: {line!r}")
    for kind, names in removed.items():
        for gone, number in names.items():
            if gone in defined[kind] or any(x == gone for _, k, x in used if k == kind):
                problems.append(f"{number}: removes {kind} {gone} that this file defines or uses")
    for number, kind, used_name in used:
        if used_name not in defined[kind]:
            problems.append(f"{number}: {kind} {used_name!r} is used but not defined")
        elif defined[kind][used_name] > number:
            problems.append(f"{number}: {kind} {used_name!r} is used before it is defined (line {defined[kind][used_name]})")
    for policy, shares in bw.items():
        kinds = {k for k, _ in shares}
        if len(kinds) > 1:
            problems.append(f"policy-map {policy}: mixes bandwidth kinds ({', '.join(sorted(kinds))}), which IOS refuses")
        if "percent" in kinds and sum(v for k, v in shares if k == "percent") > 100:
            problems.append(f"policy-map {policy}: bandwidth percents add up to more than 100")
    for number, q in qos_set:
        if q not in qos_matched:
            problems.append(f"{number}: qos-group {q} is set but no class-map matches it")
    return problems


def check(filename: str, text: str) -> list[str]:
    """The problems of a rendered file, by its name: ``junos.conf`` and
    ``cisco.cfg`` by their grammars, a ``.sh`` tc script by
    :func:`check_tc`, an ``.nft`` file by ``nft -c -f`` where nft is
    installed (and the caller may use netlink; else it passes unchecked)."""
    if filename.endswith(".conf"):
        return check_junos(text)
    if filename.endswith(".cfg"):
        return check_cisco(text)
    if filename.endswith(".sh"):
        return check_tc(text)
    if filename.endswith(".nft"):
        return check_nft(text)
    return []


def check_nft(text: str) -> list[str]:
    """``nft -c -f`` on the file (nothing is loaded), where nft is installed;
    its messages name the line (``FILE:LINE:COL``), kept as ``LINE: ...``."""
    import os
    import shutil
    import subprocess
    import tempfile

    if shutil.which("nft") is None:
        return []
    with tempfile.NamedTemporaryFile("w", suffix=".nft", delete=False, encoding="utf-8") as f:
        f.write(text)
    try:
        done = subprocess.run(["nft", "-c", "-f", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if done.returncode == 0:
        return []
    problems = []
    for line in done.stderr.splitlines():
        m = re.match(rf"{re.escape(f.name)}:(\d+):\S*\s*(.*)", line)
        if m:
            problems.append(f"{m[1]}: nft -c: {m[2]}")
    return problems or [f"nft -c: {done.stderr.strip() or f'exit status {done.returncode}'}"]


# --- tc scripts ------------------------------------------------------------------

#: Qdisc kinds the renderers write, with the options each may take.
_TC_QDISCS = {
    "htb": {"default": "hex", "r2q": "int"},
    "fq": {"maxrate": "rate", "quantum": "int"},
    "fq_codel": {},
    "bfifo": {"limit": "int"},
    "pfifo": {"limit": "int"},
}
_HTB_CLASS = {"rate": "rate", "ceil": "rate", "burst": "int", "cburst": "int", "prio": "prio", "quantum": "quantum"}
#: HTB's quantum (bytes): the kernel warns above this (net/sched/sch_htb.c).
HTB_MAX_QUANTUM = 200_000
_HANDLE = re.compile(r"[0-9a-f]{1,4}:")
_CLASSID = re.compile(r"[0-9a-f]{1,4}:[0-9a-f]{1,4}")
_TC_RATE = re.compile(r"\d+(?:bit|kbit|mbit|gbit|tbit)")


def tc_batch(text: str) -> list[tuple[int, str]]:
    """The tc batch of a script of :func:`.tc.script`: (line number, line)
    of each line of its here-document."""
    lines = text.splitlines()
    try:
        start = lines.index("cat <<EOF")
        end = lines.index("EOF", start)
    except ValueError:
        return []
    return [(number, lines[number - 1]) for number in range(start + 2, end + 1)]


def check_tc(text: str) -> list[str]:
    """Problems of a tc script of :func:`.tc.script`: its shell syntax
    (``sh -n``), and each tc command of its batch against the forms the
    renderers write (tc-htb(8), tc-u32(8), tc-fq(8), tc-bfifo(8)): known
    objects, qdisc kinds and options, handles and class ids in tc's
    hexadecimal form, rates in tc's spelling with ``ceil`` at least
    ``rate``, an explicit HTB ``quantum`` within 1..200000 bytes, parents,
    flowids and linked u32 tables defined before use."""
    import shutil
    import subprocess

    problems: list[str] = []
    if shutil.which("sh") is not None:
        done = subprocess.run(["sh", "-n"], input=text, capture_output=True, text=True)
        if done.returncode:
            problems.append(f"sh -n: {done.stderr.strip() or 'syntax error'}")
    batch = tc_batch(text)
    if not batch:
        return problems + ["no tc batch (a 'cat <<EOF' here-document) in the script"]
    qdiscs: set[str] = set()  # handles "1:"
    classes: set[str] = set()
    tables: set[str] = {"800:"}
    for number, raw in batch:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if len(words) < 4 or words[0] not in ("qdisc", "class", "filter") or words[1] != "add" or words[2:4] != ["dev", "$1"]:
            problems.append(f"{number}: not a tc command of the grammar ('qdisc|class|filter add dev $1 ...'): {raw!r}")
            continue
        rest = words[4:]
        problem = {"qdisc": _tc_qdisc, "class": _tc_class, "filter": _tc_filter}[words[0]](rest, qdiscs, classes, tables)
        if problem:
            problems.append(f"{number}: {problem}: {raw!r}")
    return problems


def _pairs(words: list[str]) -> dict[str, str] | str:
    if len(words) % 2:
        return f"option {words[-1]!r} has no value"
    out: dict[str, str] = {}
    for key, value in zip(words[::2], words[1::2]):
        if key in out:
            return f"option {key!r} is given twice"
        out[key] = value
    return out


def _tc_value(kind: str, key: str, value: str) -> str | None:
    if kind == "rate":
        return None if _TC_RATE.fullmatch(value) else f"{key} {value!r} is not a rate in tc's spelling (e.g. 900mbit)"
    if kind == "hex":
        return None if re.fullmatch(r"[0-9a-f]{1,4}", value) else f"{key} {value!r} is not a hexadecimal minor"
    if not value.isdigit():
        return f"{key} {value!r} is not a whole number"
    if kind == "prio" and int(value) > 7:
        return f"prio {value} is outside HTB's 0-7"
    if kind == "quantum" and not 1 <= int(value) <= HTB_MAX_QUANTUM:
        return f"quantum {value} is outside 1-{HTB_MAX_QUANTUM} bytes"
    if kind == "int" and int(value) <= 0:
        return f"{key} must be positive"
    return None


def _tc_qdisc(words: list[str], qdiscs: set[str], classes: set[str], tables: set[str]) -> str | None:
    if words[:1] == ["root"]:
        where, words = None, words[1:]
        if qdiscs:
            return "a second root qdisc"
    elif words[:1] == ["parent"] and len(words) > 1:
        where, words = words[1], words[2:]
        if where not in classes:
            return f"parent {where} is not a class defined before"
    else:
        return "a qdisc needs 'root' or 'parent CLASSID'"
    if words[:1] != ["handle"] or len(words) < 3 or not _HANDLE.fullmatch(words[1]):
        return "a qdisc needs 'handle N:'"
    handle, kind, options = words[1], words[2], words[3:]
    if handle in qdiscs:
        return f"handle {handle} is used twice"
    if kind not in _TC_QDISCS:
        return f"qdisc kind {kind!r} is not one alphaqos writes ({', '.join(_TC_QDISCS)})"
    pairs = _pairs(options)
    if isinstance(pairs, str):
        return pairs
    for key, value in pairs.items():
        if key not in _TC_QDISCS[kind]:
            return f"{kind} has no option {key!r}"
        if (problem := _tc_value(_TC_QDISCS[kind][key], key, value)) is not None:
            return problem
    qdiscs.add(handle)
    return None


def _tc_class(words: list[str], qdiscs: set[str], classes: set[str], tables: set[str]) -> str | None:
    from .. import units

    if len(words) < 5 or words[0] != "parent" or words[2] != "classid" or words[4] != "htb":
        return "a class needs 'parent P classid C htb ...'"
    parent, cid = words[1], words[3]
    if parent not in qdiscs and parent not in classes:
        return f"parent {parent} is neither a qdisc nor a class defined before"
    if not _CLASSID.fullmatch(cid) or cid.split(":")[0] + ":" not in qdiscs:
        return f"classid {cid!r} is not N:M under a qdisc defined before"
    if cid in classes:
        return f"classid {cid} is defined twice"
    pairs = _pairs(words[5:])
    if isinstance(pairs, str):
        return pairs
    for key in ("rate", "quantum"):
        if key not in pairs:
            return f"an HTB class needs an explicit {key}"
    for key, value in pairs.items():
        if key not in _HTB_CLASS:
            return f"htb class has no option {key!r}"
        if (problem := _tc_value(_HTB_CLASS[key], key, value)) is not None:
            return problem
    if "ceil" in pairs and units.parse_rate(pairs["ceil"]) < units.parse_rate(pairs["rate"]):
        return f"ceil {pairs['ceil']} is below rate {pairs['rate']}"
    classes.add(cid)
    return None


_U32_MATCH = re.compile(
    r"match (?:ip (?:src|dst) \d+\.\d+\.\d+\.\d+/\d+|ip protocol \d+ 0xff|ip (?:sport|dport) \d+ 0x[0-9a-f]{4}"
    r"|ip dsfield 0x[0-9a-f]{2} 0xfc|u32 0 0)"
)


def _tc_filter(words: list[str], qdiscs: set[str], classes: set[str], tables: set[str]) -> str | None:
    text = " ".join(words)
    m = re.fullmatch(r"parent (\S+) protocol (?:ip|all) prio (\d+) (.*)", text)
    if m is None:
        return "a filter needs 'parent P protocol ip|all prio N ...'"
    if m[1] not in qdiscs:
        return f"parent {m[1]} is not a qdisc defined before"
    rest = m[3]
    if (d := re.fullmatch(r"handle ([0-9a-f]{1,3}:) u32 divisor 1", rest)) is not None:
        tables.add(d[1])
        return None
    words = rest.split()
    if words[:1] != ["u32"]:
        return "not a u32 filter"
    words = words[1:]
    table = flowid = link = action = None
    if words[:1] == ["ht"] and len(words) > 1:
        table, words = words[1], words[2:]
    found = []
    while words[:1] == ["match"]:
        size = 4 if words[1:2] == ["u32"] else 5 if words[2:3] in (["protocol"], ["sport"], ["dport"], ["dsfield"]) else 4
        found.append(" ".join(words[:size]))
        words = words[size:]
    if words[:1] == ["flowid"] and len(words) > 1:
        flowid, words = words[1], words[2:]
    elif words[:1] == ["link"] and len(words) > 1:
        link, words = words[1], words[2:]
    if words[:1] == ["action"]:
        action, words = " ".join(words[1:]), []
    if words:
        return f"unexpected {' '.join(words)!r} in a u32 filter"
    matches = " ".join(found)
    if table is not None and table not in tables:
        return f"ht {table} is not a table defined before"
    if not found or not all(_U32_MATCH.fullmatch(x) for x in found):
        return "a u32 filter needs matches of the grammar (ip src|dst PREFIX, protocol, sport|dport, dsfield)"
    for prefix in re.findall(r"ip (?:src|dst) (\S+)", matches):
        try:
            ipaddress.IPv4Network(prefix)
        except ValueError:
            return f"{prefix!r} is not an IPv4 prefix with its host bits clear"
    if flowid is not None and flowid not in classes:
        return f"flowid {flowid} is not a class defined before"
    if link is not None and link not in tables:
        return f"link {link} is not a table defined before"
    if action is not None and not re.fullmatch(
        r"drop|police rate \d+(?:bit|kbit|mbit|gbit|tbit) burst \d+ conform-exceed (?:drop|ok)/continue", action
    ):
        return f"action {action!r} is not one of the grammar (drop, police rate R burst B conform-exceed X/continue)"
    if flowid is None and link is None and action != "drop":
        return "a u32 filter needs a flowid, a link or 'action drop'"
    return None
