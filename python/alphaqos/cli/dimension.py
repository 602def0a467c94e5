"""``alphaqos dimension relative --profile NAME=RATE/BURST ... --link RATE --rtt T``:
dimension a Relative Service (the fifth source document): weight_REL for
equation 1, WRED per colour from equation 2, a policy document for
``alphaqos provision`` (see :mod:`alphaqos.dimension`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from .. import units
from ..errors import UsageError
from ..output import new_output_directory


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("dimension", help="dimension a service for customer profiles (Relative Service)")
    kinds = p.add_subparsers(dest="service", required=True, metavar="SERVICE")
    r = kinds.add_parser("relative", help="weight_REL (equation 1) and WRED per colour (equation 2), Bouras & Sevasti")
    r.add_argument("--profile", metavar="NAME=RATE/BURST[@PREFIX]", action="append", required=True,
                   help="a customer's token bucket, e.g. C1=240kbps/5000B@10.1.1.0/24 (repeat per customer)")
    r.add_argument("--link", metavar="RATE", required=True, help="the link rate, e.g. 10Mbps")
    r.add_argument("--hp-load", metavar="RATE", default="0bps", help="high-priority load served first (default 0)")
    r.add_argument("--rtt", metavar="TIME", required=True, help="mean round-trip time of the Relative traffic, e.g. 180ms")
    r.add_argument("--mtu", metavar="BYTES", type=int, default=1500, help="the link MTU (default 1500)")
    r.add_argument("--headroom", metavar="PERCENT", default="10%", help="r above sum r_i by this share (default 10%%)")
    r.add_argument("--be-weight", metavar="N", type=int, default=20, help="the best-effort queue's MDRR weight (default 20)")
    r.add_argument("--wred", metavar="COLOUR=MIN/MAX/MAXP", action="append", default=[],
                   help="set a colour's thresholds by hand, e.g. yellow=15/100/0.4")
    r.add_argument("--out", metavar="DIR", type=Path, help="write policy.yaml, prefixes.txt and dimension.json here (must not exist)")
    r.add_argument("--check", action="store_true", help="run the scenario it implies and report each customer's rate and the delay")
    r.add_argument("--duration", metavar="TIME", default="120s", help="--check: the run's length (default 120s, measured after 20 s)")
    r.set_defaults(handler=run)


def _parse_profile(text: str):
    from ..dimension import Customer, DimensionError

    name, sep, rest = text.partition("=")
    rest, _, prefix = rest.partition("@")
    rate, slash, burst = rest.partition("/")
    if not sep or not name or not slash:
        raise DimensionError(f"--profile {text!r}: expected NAME=RATE/BURST[@PREFIX], e.g. C1=240kbps/5000B")
    try:
        r, b = units.parse_rate(rate), units.parse_size(burst)
    except ValueError as exc:
        raise DimensionError(f"--profile {name}: {exc}") from None
    if r <= 0 or b <= 0:
        raise DimensionError(f"--profile {name}: rate and burst must be positive")
    if prefix:
        import ipaddress

        try:
            prefix = str(ipaddress.IPv4Network(prefix, strict=False))
        except ValueError:
            raise DimensionError(f"--profile {name}: {prefix!r} is not an IPv4 prefix") from None
    return Customer(name, int(r), int(b), prefix or None)


def _parse_wred(text: str):
    from ..dimension import COLOURS, Colour, DimensionError

    colour, sep, rest = text.partition("=")
    parts = rest.split("/")
    if not sep or colour not in COLOURS or len(parts) != 3:
        raise DimensionError(f"--wred {text!r}: expected COLOUR=MIN/MAX/MAXP with COLOUR one of {', '.join(COLOURS)}")
    try:
        lo, hi, p = (float(x) for x in parts)
    except ValueError:
        raise DimensionError(f"--wred {colour}: thresholds and max_p must be numbers, got {rest!r}") from None
    if not 0 < p <= 1 or lo < 0:
        raise DimensionError(f"--wred {colour}: need min_th >= 0 and 0 < max_p <= 1, got {rest!r}")
    if lo >= hi:
        raise DimensionError(f"--wred {colour}: min_th ({lo:g}) must be below max_th ({hi:g})")
    return colour, Colour(lo, hi, p)


def run(args: argparse.Namespace) -> int:
    from ..dimension import DimensionError, check, dimension, junos_policy, policy, summary

    try:
        customers = [_parse_profile(p) for p in args.profile]
        names = [c.name for c in customers]
        if len(set(names)) != len(names):
            raise DimensionError(f"--profile: customer names must differ, got {', '.join(names)}")
        try:
            link, hp = units.parse_rate(args.link), units.parse_rate(args.hp_load)
        except ValueError as exc:
            raise DimensionError(f"--link/--hp-load: {exc}") from None
        try:
            rtt = units.parse_time(args.rtt) / 1e9
        except ValueError as exc:
            raise DimensionError(f"--rtt: {exc}") from None
        try:
            headroom = float(args.headroom.strip().removesuffix("%")) / 100
        except ValueError:
            raise DimensionError(f"--headroom: expected a percentage like 10%, got {args.headroom!r}") from None
        if headroom < 0 or rtt <= 0 or link <= 0:
            raise DimensionError("--headroom must be >= 0, --rtt and --link positive")
        if not 68 <= args.mtu <= 65535:
            raise DimensionError(f"--mtu: {args.mtu} is not an IPv4 MTU (68..65535)")
        wred = dict(_parse_wred(w) for w in args.wred)
        d = dimension(customers, link_bps=int(link), hp_bps=int(hp), mtu=args.mtu, headroom=headroom, rtt_s=rtt,
                      be_weight=args.be_weight, wred=wred)  # fmt: skip
        duration = units.parse_time(args.duration) / 1e9 if args.check else 0.0
    except (DimensionError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print("\n".join(summary(d)))
    checked = check(d, duration) if args.check else None
    if checked is not None:
        print("\n".join(checked["lines"]))
    if args.out is not None:
        with new_output_directory(args.out) as staging:
            for name, document in (("policy.yaml", policy(d)), ("policy-junos.yaml", junos_policy(d))):
                (staging / name).write_text(yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=100))
            prefixes = [f"src {c.prefix}" for c in d.customers if c.prefix]
            (staging / "prefixes.txt").write_text("".join(f"{line}\n" for line in prefixes))
            document = d.to_json() | ({"check": {k: v for k, v in checked.items() if k != "lines"}} if checked else {})
            (staging / "dimension.json").write_text(json.dumps(document, indent=2) + "\n")
        for policy_file, target in (("policy.yaml", "cisco"), ("policy-junos.yaml", "junos")):
            print(f"wrote {args.out}/{policy_file}; render it with: alphaqos provision --policy {args.out}/{policy_file} "
                  f"--prefix-list {args.out}/prefixes.txt --alpha-class relative --target {target} --out CONFIG_DIR")  # fmt: skip
    if checked is not None and not checked["ok"]:
        return 1
    return 0
