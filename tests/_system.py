"""Helpers for tests that need the machine itself: root, and Debian packages.

Tests do not install anything: ``make test`` (its ``test-deps`` target)
installs the Debian packages the suite needs, once, before pytest runs. A
test whose package is missing fails with :func:`require_debian_package`'s
message naming that target.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

__all__ = ["namespaces", "need_root", "package_installed", "require_debian_package"]

#: The make target that installs the Debian packages of the tests (Makefile, DEBIAN_TEST_PACKAGES).
PREPARE = "make test-deps"


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


def require_debian_package(name: str, *, binary: str | None = None) -> None:
    """Fail the calling test, naming the make target that installs it,
    unless the Debian package ``name`` is installed (and ``binary``, if
    given, is on PATH)."""
    if package_installed(name) and (binary is None or shutil.which(binary)):
        return
    what = f"the Debian package {name}" + (f" ({binary})" if binary else "")
    pytest.fail(f"{what} is missing: `{PREPARE}` installs it (as root; `make test` runs it before pytest)", pytrace=False)
