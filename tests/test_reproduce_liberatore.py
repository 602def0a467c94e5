"""``alphaqos reproduce liberatore-yaqs --quick``: the second document's
simulations (Fig. 2 dumbbell, n = 1) and trace study (the project's own
OC-3 traces from the link tap, replayed at beta = 1.15), graded beside the
document's numbers. Seconds on 2 cores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from alphaqos import cli  # noqa: E402


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> tuple[int, Path, dict]:
    out = tmp_path_factory.mktemp("lib") / "report"
    status = cli.main(["reproduce", "liberatore-yaqs", "--quick", "--quiet", "--out", str(out), "--jobs", "1"])
    return status, out, json.loads((out / "results.json").read_text())


def test_report_findings_and_files(quick):
    status, out, results = quick
    assert status in (0, 1)
    assert (out / "report.md").exists() and (out / "fig8_queue.png").exists() and (out / "fig4_ccdf.png").exists()
    assert len(list((out / "scenarios").glob("*.yaml"))) == len(results["measured"])
    claims = {f["claim"].split(" (")[0]: f for f in results["findings"]}
    for claim in ("YAQS keeps the fast queue far shorter than FIFO's and RED's queue",
                  "With c_s = 0 no packet of a flow is ever reordered",
                  "YAQS's fast-queue CCDF decays much faster than FIFO's"):  # fmt: skip
        assert claims[claim]["direction"], claims[claim]
    # Every graded number is beside the document's, with its ratio.
    goodput = next(f for f in results["findings"] if f["claim"].startswith("The aggressive flow"))
    assert {c["paper"] for c in goodput["cells"]} == {24.0, 29.0, 17.0}
    assert all(c["ratio"] is not None for c in goodput["cells"])


def test_measured_numbers_are_consistent(quick):
    _, _, results = quick
    m = results["measured"]
    y, f = m["sim/n1/yaqs"], m["sim/n1/fifo"]
    assert y["reordered"] == 0 and y["data_pkts"] > 1000
    assert y["qmax_bytes"] < f["qmax_bytes"] and y["slow_flows_max"] >= 1
    for key in ("trace/6", "trace/2", "trace/7"):
        t = m[key]
        assert t["packets"] > 1000
        assert t["yaqs_cs0"]["q90_bytes"] < t["fifo"]["q90_bytes"]
        assert 0 <= t["yaqs_cs0"]["strict_false_positive_pct"] < 5
