"""alphaqos.output: a file or directory is written whole or not at all. An
exception, Ctrl-C or SIGTERM in the middle of a write leaves neither a half
file under the final name nor a hidden partial beside it, and a replaced
target keeps its old content."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from alphaqos.errors import UsageError
from alphaqos.output import atomic_directory, atomic_file, new_output_directory, write_atomic


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_a_file_is_written_whole_with_its_mode(tmp_path):
    path = tmp_path / "out.sh"
    write_atomic(path, "#!/bin/sh\n", mode=0o755)
    assert path.read_text() == "#!/bin/sh\n"
    assert path.stat().st_mode & 0o777 == 0o755
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new"
    assert _names(tmp_path) == ["out.sh"]


@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt])
def test_an_interrupted_file_write_leaves_the_old_file_and_no_partial(tmp_path, failure):
    path = tmp_path / "table.json"
    path.write_text("old")
    with pytest.raises(failure), atomic_file(path) as staging:
        staging.write_text("half of the ne")
        assert staging.parent == tmp_path and staging.name.startswith(".table.json.partial-")
        raise failure("boom")
    assert path.read_text() == "old"
    assert _names(tmp_path) == ["table.json"]


def test_an_interrupted_directory_leaves_the_old_one(tmp_path):
    target = tmp_path / "plots"
    target.mkdir()
    (target / "a.png").write_text("old")
    with pytest.raises(RuntimeError), atomic_directory(target, replace=True) as staging:
        (staging / "b.png").write_text("new")
        raise RuntimeError("boom")
    assert _names(tmp_path) == ["plots"] and _names(target) == ["a.png"]
    with atomic_directory(target, replace=True) as staging:
        (staging / "b.png").write_text("new")
    assert _names(tmp_path) == ["plots"] and _names(target) == ["b.png"]
    with pytest.raises(FileExistsError), atomic_directory(target) as staging:
        pass
    assert _names(tmp_path) == ["plots"]


def test_an_output_directory_is_new_and_its_parents_go_with_it(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(UsageError, match="already exists"), new_output_directory(tmp_path / "taken"):
        pass
    with pytest.raises(RuntimeError), new_output_directory(tmp_path / "a" / "b" / "run") as staging:
        (staging / "x").write_text("x")
        raise RuntimeError("boom")
    assert _names(tmp_path) == ["taken"]
    with pytest.raises(UsageError, match="appeared during the run"), new_output_directory(tmp_path / "r") as staging:
        (tmp_path / "r").mkdir()
    assert _names(tmp_path) == ["r", "taken"]


# A process that writes through atomic_file or atomic_directory and is sent
# SIGTERM in the middle (its default action: no handler of its own).
WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from alphaqos.output import atomic_directory, atomic_file
    target, kind = Path(sys.argv[1]), sys.argv[2]
    opened = atomic_file(target) if kind == "file" else atomic_directory(target, replace=True)
    with opened as staging:
        if kind == "file":
            staging.write_text("half")
        else:
            (staging / "half").write_text("half")
        print("writing", flush=True)
        time.sleep(60)
""")


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_sigterm_during_a_write_leaves_nothing_half_written(tmp_path, kind):
    target = tmp_path / "out"
    if kind == "file":
        target.write_text("old")
    else:
        target.mkdir()
        (target / "old").write_text("old")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "python")}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target), kind], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline() == "writing\n"
        assert len(_names(tmp_path)) == 2  # the target and its staging copy
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode != 0 and time.monotonic() - started < 30
    assert _names(tmp_path) == ["out"]
    assert (target.read_text() if kind == "file" else _names(target)) == ("old" if kind == "file" else ["old"])
