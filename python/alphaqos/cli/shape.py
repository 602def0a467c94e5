"""``alphaqos shape DEV --rate RATE``: shape what a host sends to a share of
its circuit, the parser and its handler (:mod:`alphaqos.provision.shape`
does the work)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import UsageError
from ..provision.model import HOST_SHARE_PERCENT
from ..provision.shape import (
    GSO_MAX_SEGS,
    ShapeError,
    apply,
    check_device,
    from_policy,
    parse_match,
    plan_shape,
    read_state,
    remove,
    state_text,
    tc_commands,
)
from ..provision.tc import bits
from .cmdline import percent_value, rate_argument, size_argument


def register(commands: argparse._SubParsersAction) -> None:
    """``alphaqos shape DEV ...`` (see :mod:`alphaqos.provision.shape`)."""
    p = commands.add_parser(
        "shape", help="shape what a host sends on a device to a share of its circuit (HTB over netlink)",
        description="Apply, change in place (--rate/--share again), show (--show) or remove (--remove) an HTB "
        "class holding DEV's traffic to a share of a reserved circuit (Zurawski 2013: 90-92%%).",
    )  # fmt: skip
    p.add_argument("device", metavar="DEV", help="the circuit's interface (its VLAN device)")
    p.add_argument("--rate", metavar="RATE", type=rate_argument, help="the circuit's reserved rate (1Gbps, 10gbit)")
    # --share's range is plan_shape's to check, with its own message.
    p.add_argument("--share", metavar="PERCENT", type=percent_value, default=HOST_SHARE_PERCENT, help="shape to this share of --rate (default 90%%)")
    p.add_argument("--policer-burst", metavar="SIZE", type=size_argument, help="the router's policer bucket: the host's burst stays within it")
    p.add_argument("--policy", metavar="FILE", type=Path, help="take --rate and --policer-burst from a policy's policer term")
    p.add_argument("--term", metavar="NAME", help="with --policy: the policed term (default: the only one)")
    p.add_argument("--match", metavar="KEY=VALUE", help="shape only src=PREFIX, dst=PREFIX or dscp=N (default: everything)")
    p.add_argument("--netns", metavar="NAME", help="the device's network namespace (ip netns)")
    p.add_argument("--gso-max-segs", metavar="N|keep", type=_gso, default=GSO_MAX_SEGS,
                   help=f"set the device's gso_max_segs (default {GSO_MAX_SEGS}: one frame per packet into HTB, "
                   "as the zurawski-tc study needs; 'keep' leaves it)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--dry-run", action="store_true", help="print the equivalent tc commands; change nothing")
    what.add_argument("--show", action="store_true", help="print what the device has (as JSON with --json)")
    what.add_argument("--remove", action="store_true", help="remove the tree and restore the previous root qdisc")
    p.add_argument("--json", action="store_true", help="--show: JSON")
    p.set_defaults(handler=_handler)


def _gso(text: str) -> int | None:
    if text.strip() == "keep":
        return None
    if not text.strip().isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a segment count 1..65535 or 'keep', got {text!r}")
    return int(text)


def _handler(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ShapeError as exc:
        raise UsageError(str(exc)) from None


def _run(args: argparse.Namespace) -> int:
    if args.show:
        state = read_state(args.device, args.netns)
        print(json.dumps(state, indent=2) if args.json else state_text(state))
        return 0
    if args.remove:
        removed, now, previous = remove(args.device, args.netns)
        if not removed:
            print(f"{args.device}: no alphaqos shaping to remove (root qdisc: {now})")
        else:
            gso = f"; gso_max_segs {previous['gso_max_segs']} again" if previous.get("gso_max_segs") is not None else ""
            print(f"{args.device}: shaping removed; root qdisc now {now} (before shaping: {previous.get('kind')}){gso}")
        return 0
    rate, burst, match = args.rate, args.policer_burst, parse_match(args.match) if args.match else None
    if args.policy is not None:
        rate, burst, term_match = from_policy(args.policy, args.term)
        rate = args.rate or rate
        burst = args.policer_burst or burst
        match = match or term_match
    if rate is None:
        raise ShapeError("give the circuit's rate: --rate RATE (or --policy FILE)")
    plan = plan_shape(args.device, rate, args.share, match=match, policer_burst=burst, netns_name=args.netns,
                      gso_max_segs=args.gso_max_segs)
    if args.dry_run:
        print("\n".join(tc_commands(plan, check_device(plan))))
        return 0
    done = apply(plan)
    verb = "changed in place to" if done.changed_in_place else "shaped to"
    print(f"{args.device}: {verb} {plan.describe()}")
    print(f"{args.device}: txqueuelen {done.txqueuelen}; speed {bits(done.speed_bps) if done.speed_bps else 'unknown'}")
    for note in done.notes:
        print(f"alphaqos: warning: {note}", file=sys.stderr)
    return 0
