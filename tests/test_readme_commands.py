"""The README's commands for the gallery, ``shape``, ``plan-transfer`` and
``emulate``, run as written (an output directory of the test's own added
where the command would write into the checkout; the emulator's
interfaces those of namespaces the test makes), and the output the README
shows compared with what the command prints."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(heading: str) -> str:
    return README.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]


def _commands(text: str, verb: str) -> list[list[str]]:
    """Every ``alphaqos VERB ...`` line of the section's code blocks
    (continuations joined, ``sudo`` and ``$`` dropped), as argv after ``alphaqos``."""
    blocks = re.findall(r"```(?:sh|console)\n(.*?)```", text, flags=re.S)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    found = []
    for line in lines:
        line = line.removeprefix("$ ").removeprefix("sudo ").split("#")[0].strip()
        if line.startswith(f"alphaqos {verb} "):
            found.append(shlex.split(line)[1:])
    assert found, f"no `alphaqos {verb}` command in the README section"
    return found


def _alphaqos(argv: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "alphaqos", *argv], cwd=cwd, capture_output=True, text=True)


def test_the_gallery_command_runs(tmp_path):
    (argv,) = _commands(_section("### Examples to start from"), "run")
    done = _alphaqos([*argv, "--out", str(tmp_path / "run"), "--quiet"])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / "summary.json").exists()


def test_every_file_of_the_gallery_is_in_the_readme_table():
    table = _section("### Examples to start from")
    for path in sorted((ROOT / "scenarios" / "examples").glob("*.yaml")):
        assert f"(scenarios/examples/{path.name})" in table, path.name


def test_shape_dry_run_prints_the_tc_commands_of_90_percent():
    section = _section("### Hosts and circuits")
    dry = [argv for argv in _commands(section, "shape") if "--dry-run" in argv]
    assert len(dry) == 1
    done = _alphaqos(dry[0])
    assert done.returncode == 0, done.stderr
    assert "htb rate 900mbit ceil 900mbit" in done.stdout
    # The burst stays within the 31 KB bucket of the policer.
    burst = int(re.search(r"classid 1:10 htb .* burst (\d+)", done.stdout).group(1))
    assert burst <= 31_000


def test_plan_transfer_prints_what_the_readme_shows(tmp_path):
    section = _section("### Hosts and circuits")
    (argv,) = _commands(section, "plan-transfer")
    done = _alphaqos(argv, cwd=tmp_path)  # --out plan.yaml lands in tmp_path
    assert done.returncode == 0, done.stderr
    shown = re.search(r"\$ alphaqos plan-transfer .*?\n(.*?)```", section, flags=re.S).group(1).splitlines()
    printed = done.stdout.splitlines()
    for line in shown:
        if line.strip() != "...":
            assert line in printed, f"README shows {line!r}; the command printed:\n{done.stdout}"
    assert (tmp_path / "plan.yaml").exists()


def test_emulate_runs_the_gallery_uplink(tmp_path):
    from _system import need_root

    from alphaqos import emulate as E

    need_root("the emulator's namespaces and raw sockets")
    try:
        E.emu_binary()
    except E.EmuError as exc:
        pytest.skip(str(exc))
    (argv,) = _commands(_section("### Hosts and circuits"), "emulate")
    out = tmp_path / "run"
    with E.bench("aqreadme") as b:
        argv = [a for a in argv]
        argv[argv.index("--ifaces") + 1] = f"{b.emu}:e0,{b.emu}:e1"
        argv[argv.index("--duration") + 1] = "0.3s"
        argv[argv.index("--out") + 1] = str(out)
        done = _alphaqos(argv)
    assert done.returncode == 0, done.stderr
    assert "gw->campus:" in done.stdout and (out / "queue_summary.parquet").exists()
