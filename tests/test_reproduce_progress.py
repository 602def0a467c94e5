"""``alphaqos reproduce``'s counts: the progress bar, the report's head and
the closing line count the same runs, follow-ups of an iterative method
included (yan2013 said "10/10 runs" then "22 runs": its on-off runs are
split into steps; bouras "1/18" then 21: its iterations restarted the
count). The reproduction is tests/_fake_reproduction.py."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from alphaqos import reproduce as package  # noqa: E402

TESTS = Path(__file__).resolve().parent


def test_progress_report_and_closing_line_count_every_run_once(monkeypatch, tmp_path, capsys):
    # The workers (child interpreters) import it by name too.
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    monkeypatch.setitem(package.REPRODUCTIONS, "fake", "_fake_reproduction")
    plans, done = [], []
    made = package.reproduce("fake", quick=True, jobs=1, on_plan=plans.append,
                             on_done=lambda key, n, total: done.append((n, total)))  # fmt: skip
    assert made.runs == 4 and len(made.measured) == 12
    assert plans == [2, 3, 4]  # the follow-ups add to the total
    assert [n for n, _ in done] == [1, 2, 3, 4]  # never restarts at 1
    assert [total for _, total in done] == [2, 2, 3, 4]
    assert done[-1] == (4, 4)
    assert "; 4 runs," in made.report_md


def _planned(name: str, quick: bool) -> tuple[int, int]:
    """(runs planned, most follow-ups) of reproduction ``name``, without
    running it; the emulated runs are counted even where they cannot run."""
    from alphaqos.reproduce import bouras, zurawski

    mod = package.module(name)
    live = (len(zurawski.live_runs(quick=quick)) if name == "zurawski-tc"
            else len(mod.live_plan(quick=quick)) if hasattr(mod, "live_plan") else 0)  # fmt: skip
    follow = bouras.ITERATIONS_51[quick] if name == "bouras-relative" else 0
    return len(mod.plan(quick=quick)) + live, follow


def test_the_readme_states_the_run_counts_of_every_reproduction():
    readme = (TESTS.parent / "README.md").read_text(encoding="utf-8")
    lines = re.findall(r"^(?:sudo )?alphaqos reproduce (\S+)( --quick)?\s+# (.*)$", readme, flags=re.MULTILINE)
    assert {name for name, _, _ in lines} == set(package.REPRODUCTIONS)
    for name, quick, comment in lines:
        planned, follow = _planned(name, bool(quick))
        counts = [int(n) for n in re.findall(r"(\d+) (?:shortened )?runs", comment)]
        assert counts and counts[0] == planned, f"README: {name}{quick}: {comment!r}, the plan has {planned} runs"
        if follow:
            assert f"up to {follow} of the iterative method" in comment, comment
