"""Workloads from the user's side: the scenario keys, the tables and plots
they produce, determinism, and bad input (exit 2, file line and path,
nothing written). The engine's own tests (crates/alphaqos-sim/tests/
workload.rs) check the models against theory."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from _cli import cli, refused  # noqa: E402
from alphaqos import columns as col  # noqa: E402

SCENARIO = """\
name: mix
duration: 4s
seed: 3
nodes:
  H1: {address: 10.0.0.1}
  H2: {address: 10.0.0.2}
  H3: {address: 10.0.0.3}
  R: {router: true}
links:
  - {between: [H1, R], rate: 1Gbps, delay: 1ms}
  - {between: [H2, R], rate: 100Mbps, delay: 5ms, queues: {R: {fifo: {limit: 200}}}}
  - {between: [H3, R], rate: 1Gbps, delay: 1ms}
workloads:
  - name: grid
    transfer: {from: H1, to: H2, size: 10MB}
    streams: 4
  - name: bg
    poisson:
      load: {share: 0.3, link: [H2, R]}
      pairs: {from: [H1, H3], to: [H2]}
      size: {pareto: {shape: 1.5, mean: 100KB}}
  - name: web
    onoff: {hosts: [H3], peers: [H1, H2], mean_rate: 2Mbps}
"""


def test_a_mix_of_workloads_runs_and_reports_per_transfer(tmp_path: Path):
    path = tmp_path / "mix.yaml"
    path.write_text(SCENARIO)
    out = tmp_path / "run"
    done = cli("run", str(path), "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    transfers = pl.read_parquet(out / "transfers.parquet")
    streams = pl.read_parquet(out / "transfer_streams.parquet")
    assert set(transfers[col.WORKLOAD]) == {"grid", "bg", "web"}
    grid = transfers.filter(pl.col(col.WORKLOAD) == "grid").row(0, named=True)
    assert grid[col.STREAMS] == 4 and grid[col.SIZE_BYTES] == 10_000_000
    assert grid[col.BYTES_ACKED] == 10_000_000 and grid[col.FCT] > grid[col.IDEAL_FCT] > 0
    # The file's four stripes add up to it and the transfer ends with the last.
    mine = streams.filter(pl.col(col.TRANSFER) == grid[col.TRANSFER])
    assert mine[col.SIZE_BYTES].sum() == 10_000_000 and mine[col.END].max() == grid[col.END]
    # The background offers 30% of 100 Mbit/s; Pareto sizes of shape 1.5 make
    # four seconds noisy, so only the order of magnitude is asserted here (the
    # engine's tests check the load itself over long runs).
    bg = transfers.filter(pl.col(col.WORKLOAD) == "bg")
    offered = bg[col.SIZE_BYTES].sum() * 8 / 4
    assert 5e6 < offered < 150e6
    summary = json.loads((out / "summary.json").read_text())
    assert summary[col.WORKLOADS]["bg"][col.TRANSFERS_STARTED] == bg.height
    assert summary[col.WORKLOADS]["grid"][col.SLOWDOWN_MEAN] >= 1.0
    plots = {p.name for p in (out / "plots").iterdir()}
    assert {"fct_cdf.png", "slowdown.png", "workload_rate.png"} <= plots
    # The series: a row per workload per metric interval, never per connection.
    series = pl.read_parquet(out / "workload.parquet")
    assert series.height == 3 * 40
    assert series.filter(pl.col(col.WORKLOAD) == "web")[col.STARTED].max() == transfers.filter(pl.col(col.WORKLOAD) == "web").height


def test_same_seed_same_transfers_other_seed_other_ones():
    doc = yaml.safe_load(SCENARIO)
    a, b = alphaqos.run(doc).transfers, alphaqos.run(doc).transfers
    assert a.equals(b)
    c = alphaqos.run(doc, seed=4).transfers
    assert not a.equals(c)


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (lambda d: d["workloads"][1]["poisson"]["size"]["pareto"].update(shape=1.0), "workloads[1].poisson.size.pareto.shape", "greater than 1"),
        (lambda d: d["workloads"][1]["poisson"].update(load="-5Mbps"), "workloads[1].poisson.load", ""),
        (lambda d: d["workloads"][1]["poisson"].update(size={"empirical": [["1KB", 0.6], ["2KB", 0.4], ["3KB", 1.0]]}), "workloads[1].poisson.size", "not monotone"),
        (lambda d: d["workloads"][0]["transfer"].update(to="H9"), "workloads[0].transfer.to", "unknown node 'H9'"),
        (lambda d: d["workloads"][0]["transfer"].update(to="R"), "workloads[0].transfer.to", "is a router"),
        (lambda d: d["workloads"][2]["onoff"].update(mean_rate=None), "workloads[2].onoff", "exactly one of"),
    ],
)
def test_bad_workloads_are_refused_before_anything_runs(tmp_path: Path, edit, where, what):
    doc = yaml.safe_load(SCENARIO)
    edit(doc)
    first = refused(tmp_path, doc)
    assert "bad.yaml:" in first and where in first and what in first, first


def test_a_workload_between_unconnected_hosts_is_named_at_its_line(tmp_path: Path):
    doc = yaml.safe_load(SCENARIO)
    doc["nodes"]["H4"] = {"address": "10.0.0.4"}
    doc["workloads"].append({"name": "lost", "transfer": {"from": "H1", "to": "H4", "size": "1MB"}})
    path = tmp_path / "bad.yaml"
    text = yaml.safe_dump(doc, sort_keys=False)
    path.write_text(text)
    done = cli("run", str(path), "--out", str(tmp_path / "run"), "--quiet")
    assert done.returncode == 2
    line = next(i for i, l in enumerate(text.splitlines(), start=1) if "name: lost" in l)
    assert f"bad.yaml:{line}: workloads[3]: no path from 'H1' to 'H4'" in done.stderr, done.stderr
    assert not (tmp_path / "run").exists()


def test_every_workload_the_engine_refuses_is_reported_at_its_own_line(tmp_path: Path):
    """Paths and MTUs of workloads are the engine's to check; it reports
    every bad workload (and flow), not only the first."""
    doc = yaml.safe_load(SCENARIO)
    doc["nodes"]["H4"] = {"address": "10.0.0.4"}
    doc["links"][2]["mtu"] = "1000B"  # H3-R: too small for 1448 B segments
    doc["workloads"][0]["transfer"]["to"] = "H4"
    doc["workloads"][2]["onoff"]["hosts"] = ["H1"]
    doc["workloads"][2]["onoff"]["peers"] = ["H3"]
    doc["flows"] = [{"name": "late", "tcp": {"from": "H3", "to": "H1", "cc": "cubic"}}]
    path = tmp_path / "bad.yaml"
    text = yaml.safe_dump(doc, sort_keys=False)
    path.write_text(text)
    done = cli("validate", str(path))
    assert done.returncode == 2
    lines = [line.removeprefix(f"alphaqos: error: {tmp_path}/") for line in done.stderr.splitlines()]
    at = lambda marker, nth=0: [i for i, l in enumerate(text.splitlines(), start=1) if marker in l][nth]  # noqa: E731
    mtu = "1500B packets do not fit the 1000B MTU of links[2] (H3-R)"
    assert lines == [
        f"bad.yaml:{at('name: grid')}: workloads[0]: no path from 'H1' to 'H4' over the links (only routers forward packets)",
        f"bad.yaml:{at('name: bg')}: workloads[1].tcp.mss: {mtu} on the path from 'H3' to 'H2' (mss + 52B of IP and TCP headers)",
        f"bad.yaml:{at('name: web')}: workloads[2].tcp.mss: {mtu} on the path from 'H1' to 'H3' (mss + 52B of IP and TCP headers)",
        f"bad.yaml:{at('name: late') + 1}: flows[0].tcp.mss: {mtu} on the path from 'H3' to 'H1' (mss + 52B of IP and TCP headers)",
    ], done.stderr


def test_dynamic_striping_and_per_stream_options_reach_the_engine():
    """A base connection (base_flow, AF11) and an additional one (NewReno,
    AF13) sharing a file block by block: each stream's marking is its own,
    the shares add up to the file."""
    doc = yaml.safe_load(SCENARIO)
    doc["workloads"] = [{
        "name": "deadline", "transfer": {"from": "H1", "to": "H2", "size": "8MB"}, "streams": 2,
        "striping": "dynamic", "block": "512KB",
        "stream_options": [{"cc": "base_flow", "cc_params": {"ctr": "30Mbps"}, "dscp": "af11"}, {"cc": "newreno", "dscp": "af13"}],
    }]  # fmt: skip
    scenario = alphaqos.load_scenario(doc)
    resolved = alphaqos.resolve(scenario)["workloads"][0]
    assert resolved["striping"] == "dynamic" and resolved["block_bytes"] == 512_000
    assert [o["dscp"] for o in resolved["stream_options"]] == [10, 14]
    assert resolved["stream_options"][0]["cc_params"]["ctr_bps"] == 30_000_000
    res = alphaqos.run(doc)
    streams = res.transfer_streams
    assert streams[col.SIZE_BYTES].sum() == 8_000_000 == res.transfers[col.BYTES_ACKED][0]
    # Whole blocks, but for the file's last one.
    assert sum(size % 512_000 for size in streams[col.SIZE_BYTES]) == 8_000_000 % 512_000


def test_more_stream_options_than_streams_is_an_error(tmp_path: Path):
    doc = yaml.safe_load(SCENARIO)
    doc["workloads"][0]["stream_options"] = [{}] * 5
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = cli("validate", str(path))
    assert done.returncode == 2 and "workloads[0]" in done.stderr and "5 entries for 4 streams" in done.stderr, done.stderr
