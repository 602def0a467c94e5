"""Helpers for tests that run the ``alphaqos`` command as a user would: in
its own process, and with a scenario it must refuse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

__all__ = ["cli", "refused"]


def cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m alphaqos ARGS...``, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "alphaqos", *args], capture_output=True, text=True)


def refused(tmp_path: Path, doc: dict[str, Any]) -> str:
    """Write ``doc`` as ``bad.yaml`` and ``alphaqos run`` it: it must exit
    2 and create nothing; the first line of its error comes back."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "run"
    done = cli("run", str(path), "--out", str(out), "--quiet")
    assert done.returncode == 2, done.stderr
    assert not out.exists(), "a refused run wrote its directory"
    return done.stderr.splitlines()[0]
