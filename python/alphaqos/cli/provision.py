"""``alphaqos provision``: render the α prefix table and a QoS policy into
router and host configuration.

::

    alphaqos provision (--prefixes DB | --prefix-list FILE) [--policy FILE]
        [--target junos,cisco,tc,nftables,dtn] --out DIR [--rate 10gbit]
        [--alpha-class alpha] [--aging-days N] [--reference TIME]
        [--ingress-interface junos=IF,cisco=IF,linux=IF]
        [--egress-interface junos=IF,cisco=IF,linux=IF] [--allow-partial]
        [--tc-leaf fq_codel|bfifo|policy] [--network-control 5%]
        [--circuit-rate RATE] [--host-share 90%] [--host-shaper htb|fq]

Writes one file per target into ``DIR`` (``junos.conf``, ``cisco.cfg``,
``tc.sh``, ``alphaqos.nft``, ``dtn.sh``) and beside each a unified diff against the
file the previous run left there (``junos.conf.diff``, ...; against
nothing on the first run), so that a change of the table is reviewed
before it is loaded. The files are written into a staging directory
beside ``DIR`` that is then renamed into place (a new ``DIR``) or
exchanged with it in one step (``renameat2(RENAME_EXCHANGE)``; the other
files of an existing ``DIR`` are carried over), so a reader sees the old
set of files or the new, never a part.
Everything is validated before anything is written: a bad policy (file,
line and field), a bad prefix list line, an unknown target or class, a
bad interface list, a policy element a target cannot express (unless
``--allow-partial``), and a rendered file that fails its own checker
(:func:`.check.check`: the Junos and Cisco grammars, the tc scripts' ``sh
-n`` and tc commands, ``nft -c`` where nft exists) are reported with exit
status 2, naming the file and line, and leave ``DIR`` untouched.

This module is the parser and its handler; the writing is
:mod:`alphaqos.provision.write`, the plan :mod:`alphaqos.provision.model`.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from ..errors import UsageError
from ..provision import tc
from ..provision.model import (
    DEFAULT_AGING_DAYS,
    HOST_SHARE_PERCENT,
    PLATFORMS,
    InputError,
    build_plan,
    load_policy,
    read_prefix_db,
    read_prefix_list,
)
from ..provision.write import TARGETS, provision
from .cmdline import percent_argument, rate_argument

#: A Linux interface name is at most IFNAMSIZ - 1 bytes (include/uapi/linux/if.h).
LINUX_IFNAME_MAX = 15
INTERFACE_EXAMPLE = "junos=xe-0/0/1,cisco=TenGigabitEthernet0/1,linux=eth2"


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("provision", help="render the α prefix table and a policy as router/host configuration")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--prefixes", metavar="DB", type=Path, help="database of 'alphaqos flows identify'")
    source.add_argument("--prefix-list", metavar="FILE", type=Path, help="lines 'src|dst PREFIX [LAST_SEEN]'")
    p.add_argument("--policy", metavar="FILE", type=Path, help="one policy document (YAML); default: two queues, α 60%%")
    p.add_argument("--target", metavar="LIST", default=",".join(TARGETS), help=f"comma-separated, of {', '.join(TARGETS)} (default: all)")
    p.add_argument("--out", metavar="DIR", type=Path, required=True, help="directory for the files (created or updated)")
    p.add_argument("--rate", metavar="RATE", type=rate_argument, default=10**10, help="link rate for tc (default 10gbit)")
    p.add_argument("--alpha-class", metavar="NAME", default="alpha", help="the policy's class for α traffic (default alpha)")
    p.add_argument("--aging-days", metavar="N", type=float, help=f"aging period (default: the database's, else {DEFAULT_AGING_DAYS})")
    p.add_argument("--reference", metavar="TIME", type=_time, help="time the aging is counted to (default: the database's data end)")
    p.add_argument("--ingress-interface", metavar="T=IF,...",
                   help=f"per platform (junos, cisco, linux), where the filter/input policy applies: {INTERFACE_EXAMPLE}")
    p.add_argument("--egress-interface", "--interface", metavar="T=IF,...", dest="egress_interface",
                   help="per platform, where the schedulers/output policy/tc tree apply (same form)")
    p.add_argument("--allow-partial", action="store_true",
                   help="write a target's file although it cannot express every policy element (each is listed in it)")
    p.add_argument("--tc-leaf", choices=tc.LEAVES, default="fq_codel",
                   help="tc leaf queues: fq_codel (default), bfifo of the class's rate x 10 ms, or the policy's buffer shares")
    p.add_argument("--network-control", metavar="PERCENT", type=percent_argument, default=5.0,
                   help="Junos: share of rate and buffer kept for network-control, queue 3 (default 5%%)")
    p.add_argument("--circuit-rate", metavar="RATE", type=rate_argument, help="dtn: the circuit's reserved rate (default: --rate)")
    p.add_argument("--host-share", metavar="PERCENT", type=percent_argument, default=HOST_SHARE_PERCENT,
                   help="dtn: shape to this share of the circuit (default 90%%, Zurawski 2013)")
    p.add_argument("--host-shaper", choices=("htb", "fq"), default="htb", help="dtn: HTB class (default) or fq maxrate (per flow)")
    p.set_defaults(handler=_handler)


def interfaces(text: str | None, option: str) -> dict[str, str]:
    """``junos=xe-0/0/1,cisco=Te0/1,linux=eth2`` as {platform: name}; a bad
    item is a UsageError naming the option and the item."""
    out: dict[str, str] = {}
    if text is None:
        return out
    for item in text.split(","):
        key, sep, name = (part.strip() for part in item.partition("="))
        if not sep or not key:
            raise UsageError(f"{option}: expected TARGET=NAME pairs like {INTERFACE_EXAMPLE}, got {item.strip()!r}")
        if key not in PLATFORMS:
            raise UsageError(f"{option}: unknown target {key!r} in {item.strip()!r} (targets: {', '.join(PLATFORMS)})")
        if key in out:
            raise UsageError(f"{option}: {key} is given twice ({out[key]!r} and {name!r})")
        if not name or any(c.isspace() or c in "\"'!;#" for c in name):
            raise UsageError(f"{option}: {key}: not an interface name: {name!r}")
        if key == "linux" and (len(name.encode()) > LINUX_IFNAME_MAX or "/" in name):
            raise UsageError(f"{option}: linux: {name!r} is not a Linux interface name (at most {LINUX_IFNAME_MAX} bytes, no '/')")
        out[key] = name
    return out


def _time(text: str) -> datetime:
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time like 2026-01-31T00:00:00, got {text!r}") from None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _handler(args: argparse.Namespace) -> int:
    targets = _targets(args.target)
    ingress = interfaces(args.ingress_interface, "--ingress-interface")
    egress = interfaces(args.egress_interface, "--egress-interface")
    try:
        policy = load_policy(args.policy)
        if args.prefixes is not None:
            entries, aging_s, reference = read_prefix_db(args.prefixes)
        else:
            entries, aging_s, reference = read_prefix_list(args.prefix_list), None, None
    except InputError as exc:
        raise UsageError(str(exc)) from None
    if args.aging_days is not None:
        if args.aging_days <= 0:
            raise UsageError(f"--aging-days must be positive, got {args.aging_days:g}")
        aging_s = round(args.aging_days * 86_400)
    if args.reference is not None:
        reference = args.reference
    try:
        plan = build_plan(
            policy, entries, alpha_class=args.alpha_class, aging_s=aging_s or DEFAULT_AGING_DAYS * 86_400,
            reference=reference, link_rate_bps=args.rate, ingress=ingress, egress=egress, tc_leaf=args.tc_leaf,
            network_control_percent=args.network_control, circuit_rate_bps=args.circuit_rate,
            host_share_percent=args.host_share, host_shaper=args.host_shaper,
        )  # fmt: skip
    except InputError as exc:
        raise UsageError(str(exc)) from None
    written = provision(plan, targets, args.out, allow_partial=args.allow_partial)
    for name, (added, removed) in written.items():
        print(f"{args.out / name}: +{added} -{removed} lines (diff: {name}.diff)")
    if plan.skipped_v6:
        print(f"alphaqos: warning: {plan.skipped_v6} IPv6 prefixes not rendered (IPv4 only)", file=sys.stderr)
    for missing in plan.missing:
        print(f"alphaqos: warning: --allow-partial: {missing}; the file says so", file=sys.stderr)
    return 0


def _targets(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in names if t not in TARGETS]
    if unknown or not names:
        raise UsageError(f"unknown target {', '.join(map(repr, unknown)) or repr(text)} (targets: {', '.join(TARGETS)})")
    return list(dict.fromkeys(names))
