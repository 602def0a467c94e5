"""The engine's cost against the work (issue 25): `benches/scaling.py`'s
smallest points, and the memory an open flow and a completed connection
take.

Memory is read in a child process given the resolved configuration, as
the resident set before the simulation is built and after it ran (before its results are turned into
Python objects), at two sizes: the slope is the bytes per flow or per
connection, whatever the interpreter itself holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benches" / "scaling.py"

CHILD = """
import json, sys
from pathlib import Path
from alphaqos import _core

def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

config = sys.stdin.read()
before = rss()
sim = _core.Simulation(config)
sim.advance(sim.duration_ns)
grown = rss() - before
done = sum(e is not None for e in sim.results().get("transfers", {}).get("fct_ns", []))
print(json.dumps({"grown": grown, "done": done}))
"""


def _grown(scenario: dict) -> dict:
    # Resolved here: the child holds the engine's configuration, not the
    # validated scenario (whose freed memory the engine would reuse).
    from alphaqos import load_scenario, resolve

    config = json.dumps(resolve(load_scenario(scenario)))
    out = subprocess.run([sys.executable, "-c", CHILD], input=config, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _dumbbell(rate: str, delay: str) -> dict:
    return {
        "seed": 1,
        "nodes": {"S": {"address": "10.0.0.1"}, "D": {"address": "10.0.1.1"}, "R1": {"router": True}, "R2": {"router": True}},
        "links": [
            {"between": ["S", "R1"], "rate": "400Gbps", "delay": "1us"},
            {"between": ["R1", "R2"], "rate": rate, "delay": delay, "queues": {"R1": {"fifo": {"limit": "1GB"}}}},
            {"between": ["R2", "D"], "rate": "400Gbps", "delay": "1us"},
        ],
    }


def test_an_open_flow_takes_kilobytes_not_its_delay_histogram():
    """N flows across a 10 ms one-way path, each with its first window
    delivered: a flow's delay histogram once held every bucket from zero
    up to 10 ms (14,500 u64, 116 KB); now the few its delays span."""

    def flows(n: int) -> dict:
        return _dumbbell("400Gbps", "9.998ms") | {
            "name": f"open-{n}", "duration": "25ms", "metric_interval": "5ms",
            "flows": [{"name": f"f{i}", "tcp": {"from": "S", "to": "D", "cc": "cubic"}} for i in range(n)],
        }

    small, large = _grown(flows(200)), _grown(flows(2000))
    per_flow = (large["grown"] - small["grown"]) / 1800
    print(f"{per_flow:,.0f} bytes per open flow")
    assert 0 < per_flow < 40_000, f"{per_flow:,.0f} bytes per open flow"


def test_completed_connections_leave_only_their_records():
    """Short transfers that complete: a finished connection's slot is
    reused and only its result rows remain (a transfer's and a stream's,
    about 200 bytes), not its TCP state (kilobytes)."""

    def short(rate: float) -> dict:
        return _dumbbell("10Gbps", "0.498ms") | {
            "name": f"short-{rate:g}", "duration": "0.5s",
            "workloads": [{"name": "w", "poisson": {"rate": rate, "pairs": {"list": [["S", "D"]]}, "size": "10KB"}}],
        }

    small, large = _grown(short(4_000)), _grown(short(16_000))
    assert small["done"] > 1_800 and large["done"] > 7_500, (small, large)
    per_conn = (large["grown"] - small["grown"]) / (large["done"] - small["done"])
    print(f"{per_conn:,.0f} bytes per completed connection")
    assert per_conn < 1_500, f"{per_conn:,.0f} bytes per completed connection"


def test_smallest_points_of_the_scaling_bench(tmp_path):
    out = tmp_path / "scaling.json"
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--flows", "1,10", "--routers", "4", "--warmup", "0.03", "--measure", "0.03", "--repeat", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "bytes per open connection" in r.stdout
    rows = json.loads(out.read_text())
    assert [(p["series"], p["size"]) for p in rows] == [("flows", 1), ("flows", 10), ("topology", 4)]
    for p in rows:
        assert p["events"] > 100 and p["wall_s"] > 0 and p["sim_s"] == 0.03, p
        assert p["events_per_s"] == pytest.approx(p["events"] / p["wall_s"])
        assert p["peak_mb"] > p["engine_mb"] > 0, p
    one, ten = rows[0], rows[1]
    # Slow start from ten times the initial windows: more events, but the
    # same 100 Gbps bottleneck bounds them (at most 8.3 M frames a second).
    assert one["events"] < ten["events"] < 12 * one["events"], (one["events"], ten["events"])
    assert rows[2]["transfers_done"] > 0
