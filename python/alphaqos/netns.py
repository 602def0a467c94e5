"""Network namespaces and veth pairs for a bench or a test, removed on the
way out: one set-up for the emulator's bench (:func:`alphaqos.emulate.bench`),
the trace capture (:mod:`alphaqos.capture`) and the tests that need a
namespace.

:func:`namespaces` makes ``<prefix>-<tag>-<role>`` for each role (a random
tag, so that runs side by side do not meet) and, at the end of the block,
also when it fails, stops every process still in them (``ip netns pids``:
ours, since we made them) and deletes them, which takes their interfaces
with them. :func:`veth`, :func:`address`, :func:`up` and :func:`mac` are
the ``ip`` calls the benches make; each failure is one line naming the
command (:class:`NetnsError`). Needs root and iproute2.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator

__all__ = ["NetnsError", "address", "exec_argv", "ip", "kill_all_in", "mac", "namespaces", "up", "veth"]

#: How long the processes left in a namespace get after SIGTERM, then SIGKILL, seconds.
STOP_WAIT_S = 2.0


class NetnsError(Exception):
    """An ``ip`` command failed (one line: the command and its message)."""


def ip(*argv: str) -> str:
    """Run ``ip ARGV``; its output, or NetnsError naming the command."""
    try:
        done = subprocess.run(["ip", *argv], capture_output=True, text=True)
    except FileNotFoundError:
        raise NetnsError("ip (iproute2) is not installed") from None
    if done.returncode:
        message = done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}"
        raise NetnsError(f"ip {' '.join(argv)}: {message}")
    return done.stdout


def exec_argv(ns: str) -> list[str]:
    """The prefix that runs a command inside the namespace ``ns``."""
    return ["ip", "netns", "exec", ns]


@contextlib.contextmanager
def namespaces(prefix: str, roles: tuple[str, ...] | list[str]) -> Iterator[list[str]]:
    """Make one namespace per role, ``<prefix>-<tag>-<role>``, with ``lo``
    up; yield their names in the order of ``roles``; remove them and every
    process left in them at the end, also on failure."""
    if os.geteuid() != 0:
        raise NetnsError("network namespaces need root")
    tag = secrets.token_hex(3)
    names = [f"{prefix}-{tag}-{role}" for role in roles]
    made: list[str] = []
    try:
        for ns in names:
            ip("netns", "add", ns)
            made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        yield names
    finally:
        for ns in made:
            kill_all_in(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def veth(ns_a: str, dev_a: str, ns_b: str, dev_b: str) -> None:
    """A veth pair: ``dev_a`` in ``ns_a``, its peer ``dev_b`` in ``ns_b``."""
    ip("-n", ns_a, "link", "add", dev_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b)


def address(ns: str, dev: str, cidr: str) -> None:
    ip("-n", ns, "addr", "add", cidr, "dev", dev)


def up(ns: str, *devs: str) -> None:
    for dev in devs:
        ip("-n", ns, "link", "set", dev, "up")


def mac(ns: str, dev: str) -> str:
    """The hardware address of ``dev`` in ``ns``."""
    return json.loads(ip("-n", ns, "-j", "link", "show", "dev", dev))[0]["address"]


def kill_all_in(ns: str) -> None:
    """Stop every process still in the namespace ``ns`` (SIGTERM, then
    SIGKILL after :data:`STOP_WAIT_S`)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        done = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        pids = [int(p) for p in done.stdout.split()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + STOP_WAIT_S
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.02)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, stopped and waiting for its
    parent to reap it, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
