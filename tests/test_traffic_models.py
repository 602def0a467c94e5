"""The fifth document's traffic models from the user's side: UDP ON/OFF
(VoIP with ITU-T P.59 talk spurts, Pareto VBR), MPEG-like video and the
HTTP workload as scenario keys, what they produce, and bad input (exit 2,
file line and path, nothing written). The engine's tests
(crates/alphaqos-sim/tests/traffic_models.rs) check each model against its
parameters over long runs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from _cli import refused  # noqa: E402
from alphaqos import columns as col  # noqa: E402
from alphaqos import load_scenario, resolve  # noqa: E402

SCENARIO = """\
name: table1
duration: 30s
nodes:
  C: {address: 10.0.0.1}
  S: {address: 10.0.0.2}
  W: {address: 10.0.0.3}
  R: {router: true}
links:
  - {between: [C, R], rate: 10Mbps, delay: 1ms}
  - {between: [S, R], rate: 10Mbps, delay: 1ms}
  - {between: [W, R], rate: 10Mbps, delay: 1ms}
flows:
  - {name: voip, onoff: {from: C, to: S, rate: 80kbps, size: 188B}}
  - {name: vbr, onoff: {from: C, to: S, rate: 896kbps, size: 1500B, on_mean: 500ms, off_mean: 500ms, pareto_shape: 1.5}}
  - {name: mpeg, video: {from: C, to: S, rate: 333kbps, size: 200B}}
workloads:
  - name: web
    http: {server: W, clients: [C], sessions: 4, think: 500ms}
"""


def test_the_models_resolve_with_their_documented_defaults():
    config = resolve(load_scenario(yaml.safe_load(SCENARIO)))
    voip, vbr, mpeg = config["flows"]
    # ITU-T P.59: talk spurts of 1.004 s, pauses of 1.587 s.
    assert voip["onoff"] == {"rate_bps": 80_000, "size_bytes": 188, "on_mean_ns": 1_004_000_000,
                             "off_mean_ns": 1_587_000_000, "pareto_shape": None}  # fmt: skip
    assert vbr["onoff"]["pareto_shape"] == 1.5
    assert mpeg["video"] == {"mean_rate_bps": 333_000, "size_bytes": 200, "fps": 25.0, "sigma": 0.3}
    http = config["workloads"][0]["http"]
    assert http["request_bytes"] == 350 and http["response"] == {"pareto": {"shape": 1.2, "mean_bytes": 12_000.0, "max_bytes": None}}


def test_sources_report_as_udp_flows_and_pages_as_request_response_pairs():
    results = alphaqos.run(yaml.safe_load(SCENARIO))
    summary = results.flow_summary
    assert dict(zip(summary[col.FLOW], summary[col.KIND], strict=True)) == {"voip": "onoff", "vbr": "onoff", "mpeg": "video"}
    voip = summary.filter(pl.col(col.FLOW) == "voip").row(0, named=True)
    assert voip[col.RX_BYTES] == 188 * voip[col.RX_PKTS] > 0
    # While ON, never above 80 kb/s in a 100 ms sample (one packet of slack).
    assert results.udp.filter(pl.col(col.FLOW) == "voip")[col.RX_RATE_BPS].max() <= 80_000 + 188 * 8 * 10
    transfers = results.transfers
    requests = transfers.filter(pl.col(col.SRC) == "C")
    responses = transfers.filter(pl.col(col.SRC) == "W")
    assert requests.height > 20 and requests.height - responses.height in range(0, 5)
    assert set(requests[col.SIZE_BYTES]) == {350}


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (lambda d: d["workloads"][0]["http"].update(clients=["W"]), "workloads[0].http.clients[0]", "is the server"),
        (lambda d: d["workloads"][0]["http"].update(mean_rate="1Mbps"), "workloads[0].http", "exactly one of"),
        (lambda d: d["workloads"][0]["http"].update(server="R"), "workloads[0].http.server", "is a router"),
        (lambda d: d["flows"][1]["onoff"].update(pareto_shape=1.0), "flows[1].onoff.pareto_shape", "greater than 1"),
        (lambda d: d["flows"][2]["video"].update(size="20B"), "flows[2].video.size", "between 28B"),
        (lambda d: d["flows"][0]["onoff"].update(size="2000B"), "flows[0].onoff.size", "MTU"),
    ],
)
def test_bad_models_are_refused_before_anything_runs(tmp_path: Path, edit, where, what):
    doc = yaml.safe_load(SCENARIO)
    edit(doc)
    first = refused(tmp_path, doc)
    assert "bad.yaml:" in first and where in first and what in first, first
