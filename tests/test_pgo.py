"""Profile-guided optimisation's training runs (`benches/pgo.py`, the
Makefile's `pgo` target): the configurations in benches/pgo/ are the bench
cases as this tree's front resolves them, so the instrumented engine can
run them; a stale or stray one is named."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

pgo = pytest.importorskip("pgo")


def test_the_training_configurations_are_the_bench_cases_as_resolved_now():
    assert pgo.stale() == [], "python benches/pgo.py --write, and commit benches/pgo/"
    files = sorted(p.name for p in pgo.DIR.glob("*.json"))
    assert files == sorted(pgo.configs())
    # Every bench case and every bundled scenario, each cut short.
    assert {f"{c}.json" for c in pgo.TRAINING} < set(files)
    runs = pgo.reproduction_runs()
    assert len(files) == len(pgo.TRAINING) + len(pgo.scenarios()) + len(runs) and pgo.scenarios()
    assert len(runs) == len(pgo.REPRODUCTIONS) * pgo.RUNS_PER_REPRODUCTION
    for name in files:
        config = json.loads((pgo.DIR / name).read_text())
        limit = pgo.TRAINING.get(name.removesuffix(".json"), pgo.SCENARIO_SECONDS)
        assert 0 < config["duration_ns"] <= int(limit * 1e9), name
        assert all(f["stop_ns"] <= config["duration_ns"] for f in config["flows"]), name


def test_a_changed_missing_or_stray_training_file_is_named(tmp_path, monkeypatch, capsys):
    for name in ("reference.json", "yaqs.json"):
        shutil.copy(pgo.DIR / name, tmp_path / name)
    config = json.loads((tmp_path / "yaqs.json").read_text())
    config["seed"] += 1
    (tmp_path / "yaqs.json").write_text(json.dumps(config) + "\n")
    (tmp_path / "old-case.json").write_text("{}\n")
    stale = pgo.stale(tmp_path)
    assert "reference.json" not in stale
    assert {"yaqs.json", "old-case.json", "manyflows.json"} <= set(stale)
    # The check the suite's users run: exit 1, naming the files and the fix.
    monkeypatch.setattr(pgo, "DIR", tmp_path)
    assert pgo.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "yaqs.json" in out and "old-case.json" in out and "--write" in out and "reference.json," not in out

