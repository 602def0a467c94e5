"""`benches/speed_ab.py`: the configuration an older runner accepts is the
resolved one without the unset fields it does not know, and a set field it
does not know stops the comparison; two builds that run different numbers
of events are refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

speed_ab = pytest.importorskip("speed_ab")


def test_only_unset_occurrences_are_left_out_and_set_ones_counted():
    config = {"flows": [{"tcp": {"tlp": None, "cc": "newreno"}}, {"tcp": {"tlp": True}}], "tlp": None, "seed": 1}
    out, dropped, kept = speed_ab.drop_unset(config, "tlp")
    assert out == {"flows": [{"tcp": {"cc": "newreno"}}, {"tcp": {"tlp": True}}], "seed": 1}
    assert (dropped, kept) == (2, 1)
    # Nothing to drop: the configuration as it was.
    assert speed_ab.drop_unset(config, "gro") == (config, 0, 0)


def fake_runner(tmp_path: Path, name: str, events: int, refuses: str | None = None) -> Path:
    """A stand-in for run_config: refuses `refuses` if the config has it,
    else prints `events` events at 2 simulated s per wall s."""
    script = tmp_path / name
    check = f"if {refuses!r} in text: sys.exit('config: unknown field `{refuses}`, expected one of ...')" if refuses else ""
    script.write_text(
        f"#!{sys.executable}\nimport sys\ntext = open(sys.argv[1]).read()\n{check}\n"
        f"print('{events} events in 0.50 s: 1.00 M events/s, 2.00 simulated s per wall s')\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.skipif(not (ROOT / ".venv").exists(), reason="needs the front (make build) to resolve the case")
def test_the_older_runner_gets_the_unset_fields_left_out_and_event_counts_must_agree(tmp_path):
    pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")
    old = fake_runner(tmp_path, "old", 100, refuses="tlp")
    new = fake_runner(tmp_path, "new", 100)
    cmd = [sys.executable, str(ROOT / "benches" / "speed_ab.py"), "--case", "reference", "--seconds", "0.01", "--pairs", "2", "--cpu", "-1"]
    r = subprocess.run(cmd + ["--old", str(old), "--new", str(new)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "left out 'tlp'" in r.stdout
    assert "ratio of medians 1.000" in r.stdout
    other = fake_runner(tmp_path, "other", 101)
    r = subprocess.run(cmd + ["--old", str(old), "--new", str(other)], capture_output=True, text=True)
    assert r.returncode != 0 and "event counts differ" in r.stderr
    assert "   1 " not in r.stdout, "refused at the first pair, before printing it"


def test_the_bootstrap_interval_holds_the_median_and_narrows_with_more_pairs():
    import statistics

    ratios = [1.2, 1.9, 1.5, 1.7, 1.6, 2.1, 1.4, 1.8, 1.65]
    lo, hi = speed_ab.median_interval(ratios)
    assert lo <= statistics.median(ratios) <= hi
    assert min(ratios) <= lo < hi <= max(ratios)
    assert speed_ab.median_interval(ratios) == (lo, hi), "seeded: the same ratios, the same interval"
    # Four times the pairs from the same spread: a narrower interval.
    lo4, hi4 = speed_ab.median_interval(ratios * 4)
    assert hi4 - lo4 < hi - lo
    # All pairs alike: no spread to resample.
    assert speed_ab.median_interval([1.7] * 5) == (1.7, 1.7)
