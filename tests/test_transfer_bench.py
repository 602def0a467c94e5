"""`benches/transfer.py`'s CPU accounting: the whole machine's busy
core-seconds from /proc/stat (softirq and steal counted, idle and iowait
not) and the cores a tool needs at its measured cost per GB."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

bench = pytest.importorskip("transfer", reason="benches/transfer.py needs the front (make build)")


def test_busy_core_seconds_count_everything_but_idle_and_iowait():
    hz = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal guest guest_nice
    line = f"cpu  {3 * hz} {1 * hz} {2 * hz} {50 * hz} {7 * hz} 0 {4 * hz} {1 * hz} {9 * hz} 0"
    assert bench.busy_core_seconds(line) == pytest.approx(3 + 1 + 2 + 4 + 1)
    # Older kernels print fewer fields: the missing ones count as zero.
    assert bench.busy_core_seconds(f"cpu {hz} 0 {hz} {10 * hz}") == pytest.approx(2)
    # This machine's own counter only grows.
    a = bench.busy_core_seconds()
    sum(i * i for i in range(200_000))
    assert bench.busy_core_seconds() >= a > 0


def test_cores_for_a_rate_at_a_cost_per_gb():
    # 1.5 busy core-seconds per GB at 10 Gbit/s (1.25 GB/s): 1.875 cores.
    assert bench.cores_for(1.5, 10e9) == pytest.approx(1.875)
    # Twice the rate, twice the cores; no cost, no cores.
    assert bench.cores_for(1.5, 20e9) == pytest.approx(3.75)
    assert bench.cores_for(0.0, 20e9) == 0
