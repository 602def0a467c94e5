"""``alphaqos reproduce``'s counts: the progress bar, the report's head and
the closing line count the same runs, follow-ups of an iterative method
included (yan2013 said "10/10 runs" then "22 runs": its on-off runs are
split into steps; bouras "1/18" then 21: its iterations restarted the
count). The reproduction is tests/_fake_reproduction.py."""

from __future__ import annotations

import os
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
