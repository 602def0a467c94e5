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
"""

from __future__ import annotations

import argparse
import difflib
import os
import secrets
import sys
from datetime import UTC, datetime
from pathlib import Path

from .. import units
from . import cisco, dtn, junos, nftables, tc
from .check import check
from .model import (
    DEFAULT_AGING_DAYS,
    HOST_SHARE_PERCENT,
    PLATFORMS,
    InputError,
    Plan,
    build_plan,
    load_policy,
    read_prefix_db,
    read_prefix_list,
)

__all__ = ["TARGETS", "add_provision_command", "provision"]

TARGETS = {"junos": junos, "cisco": cisco, "tc": tc, "nftables": nftables, "dtn": dtn}
#: A Linux interface name is at most IFNAMSIZ - 1 bytes (include/uapi/linux/if.h).
LINUX_IFNAME_MAX = 15
INTERFACE_EXAMPLE = "junos=xe-0/0/1,cisco=TenGigabitEthernet0/1,linux=eth2"


def add_provision_command(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("provision", help="render the α prefix table and a policy as router/host configuration")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--prefixes", metavar="DB", type=Path, help="database of 'alphaqos flows identify'")
    source.add_argument("--prefix-list", metavar="FILE", type=Path, help="lines 'src|dst PREFIX [LAST_SEEN]'")
    p.add_argument("--policy", metavar="FILE", type=Path, help="one policy document (YAML); default: two queues, α 60%%")
    p.add_argument("--target", metavar="LIST", default=",".join(TARGETS), help=f"comma-separated, of {', '.join(TARGETS)} (default: all)")
    p.add_argument("--out", metavar="DIR", type=Path, required=True, help="directory for the files (created or updated)")
    p.add_argument("--rate", metavar="RATE", type=_rate, default=10**10, help="link rate for tc (default 10gbit)")
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
    p.add_argument("--network-control", metavar="PERCENT", type=_percent, default=5.0,
                   help="Junos: share of rate and buffer kept for network-control, queue 3 (default 5%%)")
    p.add_argument("--circuit-rate", metavar="RATE", type=_rate, help="dtn: the circuit's reserved rate (default: --rate)")
    p.add_argument("--host-share", metavar="PERCENT", type=_percent, default=HOST_SHARE_PERCENT,
                   help="dtn: shape to this share of the circuit (default 90%%, Zurawski 2013)")
    p.add_argument("--host-shaper", choices=("htb", "fq"), default="htb", help="dtn: HTB class (default) or fq maxrate (per flow)")
    p.set_defaults(handler=_handler)


def _rate(text: str) -> int:
    """A rate in any spelling :func:`alphaqos.units.parse_rate` reads
    (``10gbit``, tc's; ``10Gbps``, the scenarios')."""
    try:
        value = units.parse_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a rate must be greater than 0, got {text!r}")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage like 90%, got {text!r}") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"a share must be above 0% and at most 100%, got {text!r}")
    return value


def interfaces(text: str | None, option: str) -> dict[str, str]:
    """``junos=xe-0/0/1,cisco=Te0/1,linux=eth2`` as {platform: name}; a bad
    item is a UsageError naming the option and the item."""
    from ..cli import UsageError

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
    from ..cli import UsageError

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
    from ..cli import UsageError

    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in names if t not in TARGETS]
    if unknown or not names:
        raise UsageError(f"unknown target {', '.join(map(repr, unknown)) or repr(text)} (targets: {', '.join(TARGETS)})")
    return list(dict.fromkeys(names))


def provision(plan: Plan, targets: list[str], out: Path, *, allow_partial: bool = False) -> dict[str, tuple[int, int]]:
    """Render ``targets`` into ``out`` with a diff each; returns (added,
    removed) line counts per file. A policy element a target cannot express
    is a UsageError, and nothing is written, unless ``allow_partial``; so is
    a rendered file its checker (:func:`.check.check`) finds fault with,
    named by file and line."""
    from ..cli import RunFailure, UsageError, _staged_directory

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} exists and is not a directory")
    rendered = {}
    for t in targets:
        name = TARGETS[t].FILENAME
        previous = out / name if out.is_dir() else None
        old = previous.read_text(encoding="utf-8", errors="replace") if previous is not None and previous.is_file() else None
        rendered[name] = TARGETS[t].render(plan, previous=old)
    if plan.missing and not allow_partial:
        raise UsageError(
            "; ".join(map(str, plan.missing))
            + ". Nothing written: leave those targets out of --target, or pass --allow-partial to write the files"
            " with what is missing stated in them"
        )
    problems = [f"{name}:{problem}" if problem[:1].isdigit() else f"{name}: {problem}"
                for name, text in rendered.items() for problem in check(name, text)]  # fmt: skip
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise UsageError(f"a rendered file fails its check, nothing written: {'; '.join(problems[:3])}{more}")
    counts: dict[str, tuple[int, int]] = {}

    def write_all(directory: Path, previous_dir: Path | None) -> None:
        for name, text in rendered.items():
            old_path = previous_dir / name if previous_dir is not None else None
            old = old_path.read_text(encoding="utf-8") if old_path is not None and old_path.is_file() else None
            diff = list(difflib.unified_diff(
                (old or "").splitlines(keepends=True), text.splitlines(keepends=True),
                fromfile=f"a/{name}" if old is not None else "/dev/null", tofile=f"b/{name}",
            ))  # fmt: skip
            counts[name] = (
                sum(1 for d in diff if d.startswith("+") and not d.startswith("+++")),
                sum(1 for d in diff if d.startswith("-") and not d.startswith("---")),
            )
            _replace(directory / name, text, executable=name.endswith(".sh"))
            _replace(directory / f"{name}.diff", "".join(diff))

    try:
        if out.is_dir():
            _swap_in(out, lambda staging: write_all(staging, out), keep=set(rendered) | {f"{n}.diff" for n in rendered})
        else:
            with _staged_directory(out) as staging:
                write_all(staging, None)
    except OSError as exc:
        raise RunFailure(f"cannot write into {str(out)!r}: {exc.strerror or exc}") from None
    return counts


def _swap_in(out: Path, fill, keep: set[str]) -> None:
    """Replace the directory ``out`` as one step: a staging directory
    beside it gets ``out``'s other entries (hard links, or copies across
    devices) and what ``fill`` writes, and is then exchanged with ``out``
    atomically (``renameat2(RENAME_EXCHANGE)``, Linux 3.15), so a reader
    sees the old set of files or the new, never a mix; the old directory
    is then removed. Where the exchange is not available, the files are
    renamed into ``out`` one by one (each file whole)."""
    import shutil

    out = out.resolve()  # a symlink to the directory stays one: its target is what is exchanged
    staging = out.with_name(f".{out.name}.partial-{secrets.token_hex(4)}")
    staging.mkdir()
    try:
        for entry in out.iterdir():
            if entry.name in keep:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, staging / entry.name, symlinks=True)
            else:
                try:
                    os.link(entry, staging / entry.name, follow_symlinks=False)
                except OSError:
                    shutil.copy2(entry, staging / entry.name, follow_symlinks=False)
        fill(staging)
        staging.chmod(out.stat().st_mode & 0o7777)
        if _exchange(staging, out):
            shutil.rmtree(staging, ignore_errors=True)  # the old directory, now under the staging name
            return
        for name in keep:
            if (staging / name).exists():
                os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` atomically; False where the system
    cannot (not Linux, an old kernel or libc, a file system without it)."""
    import ctypes

    if sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return result == 0


def _replace(path: Path, text: str, *, executable: bool = False) -> None:
    """Write ``text`` to ``path`` atomically (temporary file, then rename)."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if executable:
            temporary.chmod(0o755)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
