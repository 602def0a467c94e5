"""Helpers for the transfer tests: the receiver (``alphaqos-xfer serve``, the
binary itself, without a Python start-up) and ``alphaqos transfer send`` run
in-process."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from alphaqos.cli import main
from alphaqos.transfer.mover import TransferError, xfer_binary


def binary() -> str:
    try:
        return str(xfer_binary())
    except TransferError as exc:
        pytest.skip(str(exc))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    def __init__(self, directory: Path, env: dict | None = None, netns: str | None = None, listen: str = "127.0.0.1",
                 wrap: list[str] | None = None, args: list[str] | None = None):
        self.dir = directory
        self.port = free_port()
        self.addr = f"{listen}:{self.port}"
        self.log = directory.parent / f"serve-{self.port}.log"
        # nsenter --net keeps the mount namespace (ip netns exec remounts /sys,
        # hiding the pinned BPF map of alphaqos_base).
        prefix = ["nsenter", f"--net=/run/netns/{netns}"] if netns else []
        prefix += wrap or []  # e.g. a private mount namespace (tests/test_transfer.py's full disk)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([*prefix, binary(), "serve", "--listen", self.addr, "--dir", str(directory), *(args or [])],
                                         stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, **(env or {})))  # fmt: skip
        for _ in range(200):
            if "listening" in self.log.read_text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.025)
        self.stop()
        raise AssertionError(f"alphaqos-xfer serve did not come up: {self.log.read_text()}")

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def receiver(directory: Path, **kw):
    directory.mkdir(parents=True, exist_ok=True)
    r = Receiver(directory, **kw)
    try:
        yield r
    finally:
        r.stop()


def send(capsys, *args: str) -> tuple[int, list[dict], str]:
    """``alphaqos transfer send ... --json`` in-process: (status, JSON lines, stderr)."""
    capsys.readouterr()
    # Paced alone unless a test asks: the default would register the BPF
    # controller on the host and leave it there (tests/test_transfer_bpf.py's).
    cc = [] if "--cc" in args else ["--cc", "pacing-only"]
    status = main(["transfer", "send", *args, *cc, "--json"])
    out, err = capsys.readouterr()
    return status, [json.loads(line) for line in out.splitlines() if line.startswith("{")], err


def make_file(path: Path, size: int, seed: int = 1) -> Path:
    import random

    rnd = random.Random(seed)
    path.write_bytes(rnd.randbytes(size))
    return path


