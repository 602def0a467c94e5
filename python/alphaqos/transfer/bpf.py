"""Registering ``alphaqos_base``, the base connection's congestion control in
BPF (``bpf/alphaqos_base.bpf.c``; docs/transfer-bpf.md).

``ensure_loaded()`` registers the struct_ops from
``target/bpf/alphaqos_base.bpf.o`` (built by ``make build`` with Debian's
clang) with ``bpftool struct_ops register``, which also pins the
controller's socket-storage map at ``/sys/fs/bpf/alphaqos_cc_sk`` (mounting
the BPF file system there first if it is not); the data mover's native code
(``crates/alphaqos-bpfcc``) then writes each base connection's committed
target rate into that map. ``unload()`` unregisters it and removes the pin
(and unmounts the BPF file system if ``ensure_loaded`` mounted it and
nothing else is pinned there).

Both need root. Neither raises on a host that cannot do it: ``ensure_loaded``
returns ``(False, why)`` and the caller falls back to pacing alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CC_NAME = "alphaqos_base"
MAP_NAME = "alphaqos_cc_sk"
BPFFS = Path("/sys/fs/bpf")
PIN_PATH = BPFFS / MAP_NAME
AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")

# Whether this process mounted the BPF file system (unload() unmounts it again).
_mounted_bpffs = False


def object_path() -> Path:
    """The compiled controller: ``$ALPHAQOS_BPF_OBJ``, else the workspace's
    ``target/bpf/alphaqos_base.bpf.o``."""
    env = os.environ.get("ALPHAQOS_BPF_OBJ")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "target" / "bpf" / "alphaqos_base.bpf.o"


def registered() -> bool:
    """Whether ``alphaqos_base`` is in the kernel's list of congestion controls."""
    try:
        return CC_NAME in AVAILABLE_CC.read_text().split()
    except OSError:
        return False


def _bpffs_mounted() -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    return any(len(f) > 2 and f[1] == str(BPFFS) and f[2] == "bpf" for f in (m.split() for m in mounts))


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, str(e)
    out = (p.stderr.strip() or p.stdout.strip()).splitlines()
    return p.returncode, (out[-1] if out else "")


def ensure_loaded() -> tuple[bool, str]:
    """Registers ``alphaqos_base`` unless it is already; returns
    ``(available, note)``: available when the controller is registered and
    its map pinned, the note saying what was done or why it is not available."""
    global _mounted_bpffs
    if not AVAILABLE_CC.exists():
        return False, f"{CC_NAME} unavailable: no {AVAILABLE_CC} (not Linux?); pacing alone"
    if registered():
        if PIN_PATH.exists():
            return True, f"{CC_NAME} already registered (map {PIN_PATH})"
        return False, (
            f"{CC_NAME} is registered but its map is not pinned at {PIN_PATH} "
            "(registered by something else than alphaqos?); pacing alone"
        )
    if os.geteuid() != 0:
        return False, f"{CC_NAME} unavailable: registering a BPF congestion control needs root; pacing alone"
    obj = object_path()
    if not obj.is_file():
        return False, f"{CC_NAME} unavailable: {obj} is not built (make build, with clang, bpftool and libbpf-dev); pacing alone"
    bpftool = shutil.which("bpftool") or next(
        (p for p in ("/usr/sbin/bpftool", "/sbin/bpftool") if os.access(p, os.X_OK)), None
    )
    if bpftool is None:
        return False, f"{CC_NAME} unavailable: bpftool is not installed (apt-get install bpftool); pacing alone"
    if not _bpffs_mounted():
        BPFFS.mkdir(parents=True, exist_ok=True)
        rc, msg = _run(["mount", "-t", "bpf", "bpf", str(BPFFS)])
        if rc != 0:
            return False, f"{CC_NAME} unavailable: cannot mount the BPF file system at {BPFFS}: {msg}; pacing alone"
        _mounted_bpffs = True
    # A pin left behind by an earlier registration (no longer registered):
    # its entries belong to closed sockets; the registration makes a new map.
    PIN_PATH.unlink(missing_ok=True)
    rc, msg = _run([bpftool, "struct_ops", "register", str(obj)])
    if rc != 0 or not registered():
        PIN_PATH.unlink(missing_ok=True)
        _unmount_if_ours()
        return False, f"{CC_NAME} unavailable: bpftool struct_ops register {obj} failed: {msg or f'exit {rc}'}; pacing alone"
    if not PIN_PATH.exists():
        unload()
        return False, f"{CC_NAME} unavailable: registered, but its map was not pinned at {PIN_PATH}; pacing alone"
    return True, f"{CC_NAME} registered from {obj} (map {PIN_PATH})"


def _unmount_if_ours() -> None:
    global _mounted_bpffs
    # The kernel's preloaded iterators show as maps.debug and progs.debug.
    if _mounted_bpffs and _bpffs_mounted() and all(p.name.endswith(".debug") for p in BPFFS.iterdir()):
        subprocess.run(["umount", str(BPFFS)], capture_output=True)
        _mounted_bpffs = False


def unload() -> str:
    """Unregisters ``alphaqos_base`` and removes its pinned map; sockets
    still using it keep it until they close. Returns a note of what it did."""
    done = []
    if registered():
        bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
        rc, msg = _run([bpftool, "struct_ops", "unregister", "name", CC_NAME])
        if rc != 0 and registered():
            return f"{CC_NAME}: bpftool struct_ops unregister failed: {msg or f'exit {rc}'}"
        done.append("unregistered")
    if PIN_PATH.exists():
        PIN_PATH.unlink()
        done.append(f"removed {PIN_PATH}")
    _unmount_if_ours()
    return f"{CC_NAME}: " + (", ".join(done) if done else "was not registered")
