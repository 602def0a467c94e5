"""Helpers for tests that need the machine itself: root, and Debian packages
installed on demand.

A test that needs a tool installs it itself (``make test`` sets up
everything from nothing): :func:`ensure_debian_package` runs ``apt-get
install`` when the package is missing, after ``apt-get update`` if the
package lists do not know it, and skips the test with the reason only when
installing is impossible (not root, no apt, no such package, no network).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

__all__ = ["ensure_debian_package", "namespaces", "need_root", "package_installed"]

#: Longest wait for apt/dpkg held by another process (other tests, unattended upgrades), seconds.
APT_LOCK_WAIT_S = 300


def need_root(what: str) -> None:
    """Skip the calling test unless it runs as root."""
    if os.geteuid() != 0:
        pytest.skip(f"{what} needs root (run the tests as root, as CI does)")


@contextlib.contextmanager
def namespaces(prefix: str, roles: tuple[str, ...] = ("ns",)) -> Iterator[list[str]]:
    """Network namespaces for a test, ``<prefix>-<tag>-<role>``
    (:func:`alphaqos.netns.namespaces`, the emulator's and the capture's
    set-up): removed at the end with every process left in them, also when
    the test fails; the test is skipped, saying why, only when they cannot
    be made (not root, no iproute2, a kernel that refuses)."""
    need_root("network namespaces")
    from alphaqos import netns

    with contextlib.ExitStack() as stack:
        try:
            names = stack.enter_context(netns.namespaces(prefix, roles))
        except netns.NetnsError as exc:
            pytest.skip(f"cannot create a network namespace here: {exc}")
        yield names


def package_installed(name: str) -> bool:
    """Whether dpkg has the Debian package ``name`` installed."""
    if shutil.which("dpkg-query") is None:
        return False
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip().endswith(" installed")


def _apt_get(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    command = ["apt-get", "-q", "-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S}", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=APT_LOCK_WAIT_S + 600)


def _candidate(name: str) -> bool:
    """Whether the apt lists know a version of ``name`` to install."""
    done = subprocess.run(["apt-cache", "policy", name], capture_output=True, text=True)
    return any(line.strip().startswith("Candidate:") and "(none)" not in line for line in done.stdout.splitlines())


def ensure_debian_package(name: str, *, binary: str | None = None) -> None:
    """Install the Debian package ``name`` unless it is there (``binary``,
    if given, must then be on PATH); skip the calling test, saying why,
    only when it cannot be installed."""
    if package_installed(name) and (binary is None or shutil.which(binary)):
        return
    if shutil.which("apt-get") is None:
        pytest.skip(f"the Debian package {name} is missing and there is no apt-get to install it")
    if os.geteuid() != 0:
        pytest.skip(f"the Debian package {name} is missing and installing it needs root (apt-get install -y {name})")
    if not _candidate(name):
        update = _apt_get("update")
        if update.returncode != 0:
            pytest.skip(f"apt-get update failed, so {name} cannot be installed: {_last_line(update.stderr)}")
    install = _apt_get("install", "-y", "--no-install-recommends", name)
    if install.returncode != 0 and "Unable to locate" not in install.stderr:
        _apt_get("update")  # lists gone stale (a 404 on a mirror): refresh them once and retry
        install = _apt_get("install", "-y", "--no-install-recommends", name)
    if install.returncode != 0:
        pytest.skip(f"apt-get install {name} failed: {_last_line(install.stderr)}")
    if binary is not None and shutil.which(binary) is None:
        pytest.fail(f"the Debian package {name} was installed but {binary} is not on PATH")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"
