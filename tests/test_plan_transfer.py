"""``alphaqos plan-transfer``: the plan of a deadline transfer over a path
given by flags or by a scenario, the scenario it writes, and bad input
(one line naming the field, exit 2, nothing written)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from alphaqos.plan import path_scenario, plan  # noqa: E402

FLAGS = ["--size", "200MB", "--deadline", "4s", "--rate", "1Gbps", "--rtt", "20ms"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "alphaqos", "plan-transfer", *args], capture_output=True, text=True)


def test_a_plan_prints_schedule_completion_and_integral_and_writes_its_scenario(tmp_path: Path):
    out = tmp_path / "plan" / "transfer.yaml"
    done = cli(*FLAGS, "--background", "300Mbps", "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "reservation schedule" in text and "expected completion:" in text and "meets the deadline" in text
    # The first request is size x 8 / (deadline - one interval) x margin: 200 MB over 3.95 s x 1.05.
    first = next(line for line in text.splitlines() if line.strip().startswith("0.000 s"))
    assert "425.3 Mbps" in first, first
    # The integral against 420 Mbit/s (200 MB x 8 / 4 s x 1.05) held for 4 s.
    assert "against 1.68 Gbit for a constant 420 Mbps held to the deadline" in text
    # The scenario written is the one planned, and runs as it is.
    written = alphaqos.load_scenario(out)
    assert written.deadline_transfers[0].size == 200_000_000
    assert [f.name for f in written.flows] == ["background"]


def test_the_plan_of_a_scenario_is_that_of_its_deadline_transfer():
    doc = path_scenario(size=100_000_000, deadline=3 * 10**9, rate=10**9, rtt=20 * 10**6)
    found, _ = plan(doc)
    assert found.met and found.completion_s is not None and found.completion_s <= 3.0
    assert found.schedule[0][0] == pytest.approx(1e-6)
    # On an idle path the additional connection moves most of the file: the
    # proposed method reserves less than a constant reservation would.
    assert found.reserved_bits < found.constant_bits


def test_an_infeasible_deadline_is_reported_with_the_earliest_completion(tmp_path: Path):
    out = tmp_path / "x.yaml"
    done = cli("--size", "1GB", "--deadline", "5s", "--rate", "1Gbps", "--rtt", "20ms", "--out", str(out))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "deadline_transfers[0].deadline" in line and "infeasible" in line and "8.6" in line, line
    assert not out.exists()


@pytest.mark.parametrize(
    ("edit", "where"),
    [(lambda t: t.pop("base"), "deadline_transfers[0].base"), (lambda t: t.update(block="300MB"), "deadline_transfers[0].block")],
)
def test_a_transfer_without_base_or_with_blocks_larger_than_the_file_writes_nothing(tmp_path: Path, edit, where):
    doc = path_scenario(size=200_000_000, deadline=4 * 10**9, rate=10**9, rtt=20 * 10**6)
    edit(doc["deadline_transfers"][0])
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "out.yaml"
    done = cli(str(path), "--out", str(out))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert where in line, line
    assert not out.exists() and not list(tmp_path.glob(".*partial"))


def test_blocks_larger_than_the_file_from_flags():
    done = cli(*FLAGS, "--block", "300MB")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "block" in line and "larger than the file" in line, line


def test_progress_for_people_on_stderr_and_json_for_scripts_quietly(tmp_path: Path):
    """The plan runs the transfer on the engine (74 s for a 10 GB file due
    in a minute): a progress bar on stderr says how far it is; --json
    prints one document on stdout and nothing on stderr."""
    done = cli(*FLAGS)
    assert done.returncode == 0, done.stderr
    assert "simulated" in done.stderr and "plan-transfer" in done.stderr, done.stderr
    out = tmp_path / "t.yaml"
    quiet = cli(*FLAGS, "--json", "--out", str(out))
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    import json

    doc = json.loads(quiet.stdout)
    assert doc["meets_deadline"] is True and doc["size_bytes"] == 200_000_000 and doc["deadline_s"] == 4.0
    assert doc["schedule"][0]["rate_bps"] == pytest.approx(200e6 * 8 / 3.95 * 1.05, rel=1e-3)
    assert doc["constant_bps"] == pytest.approx(420e6) and doc["scenario"] == str(out) and out.exists()
