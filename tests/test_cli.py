"""The ``alphaqos`` command end to end. Runs need the compiled engine
(``alphaqos._core``) and are skipped without it; validating the bundled
scenarios does not need it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from alphaqos import Results, cli
from alphaqos import columns as col

REPO = Path(__file__).resolve().parents[1]
BUNDLED = sorted((REPO / "scenarios").glob("**/*.yaml"))

try:
    from alphaqos import _core  # noqa: F401

    ENGINE_ERROR = None
except ImportError as exc:
    ENGINE_ERROR = str(exc)

needs_engine = pytest.mark.skipif(
    ENGINE_ERROR is not None, reason=f"engine alphaqos._core not built ({ENGINE_ERROR}); run `make build`"
)

TINY = {
    "name": "tiny-udp-ping",
    "description": "two hosts through one router: a UDP flow that overloads its 1 Gbps link, and a ping",
    "duration": "2s",
    "seed": 3,
    "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}, "R": {"router": True}},
    "links": [
        {"between": ["A", "R"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["R", "B"], "rate": "1Gbps", "delay": "1ms", "queues": {"R": {"fifo": {"limit": "100p"}}}},
    ],
    "flows": [
        {"name": "cbr", "udp": {"from": "A", "to": "B", "rate": "1.2Gbps"}, "start": "0.1s"},
        {"name": "probe", "ping": {"from": "B", "to": "A", "interval": "100ms"}},
    ],
}

RUN_FILES = sorted(
    [*(f"{table}.parquet" for table in col.TABLES), "summary.json", "scenario.yaml", "manifest.json", "plots"]
)


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY, sort_keys=False))
    return path


def run_cli(*args: str) -> int:
    return cli.main(["run", *args])


def test_bundled_scenarios_exist():
    assert REPO / "scenarios" / "yan2013" / "exp1-1queue.yaml" in BUNDLED


@pytest.mark.parametrize("scenario", BUNDLED, ids=[str(p.relative_to(REPO)) for p in BUNDLED])
def test_validate_every_bundled_scenario(scenario, capsys):
    assert cli.main(["validate", str(scenario)]) == 0
    assert capsys.readouterr().out.startswith(f"{scenario}: ok: ")


def test_python_dash_m_runs_the_cli():
    scenario = str(REPO / "scenarios" / "yan2013" / "exp1-1queue.yaml")
    done = subprocess.run([sys.executable, "-m", "alphaqos", "validate", scenario], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "yan2013-exp1-1queue, 5 hosts, 2 routers, 6 links, 3 flows" in done.stdout


@needs_engine
def test_run_writes_a_complete_run_directory(tiny, tmp_path, capsys):
    out = tmp_path / "runs" / "tiny"
    assert run_cli(str(tiny), "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert f"results: {out}/" in printed and "cbr" in printed and "R->B" in printed
    assert sorted(p.name for p in out.iterdir()) == RUN_FILES
    plots = sorted(p.name for p in (out / "plots").iterdir())
    assert plots == ["ping_rtt.png", "queue_length.png", "throughput.png"]  # no TCP flow, no cwnd plot
    assert sorted(p.name for p in out.parent.iterdir()) == ["tiny"]  # the staging directory is gone
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 3 and manifest["command"].startswith("alphaqos run ")
    assert manifest["engine_version"] and manifest["python_version"]


@needs_engine
def test_summary_agrees_with_the_tables(tiny, tmp_path):
    out = tmp_path / "run"
    assert run_cli(str(tiny), "--out", str(out), "--quiet") == 0
    summary = json.loads((out / "summary.json").read_text())
    flows = pl.read_parquet(out / "flow_summary.parquet")
    udp = pl.read_parquet(out / "udp.parquet")
    ping = pl.read_parquet(out / "ping.parquet")
    queues = pl.read_parquet(out / "queue_summary.parquet")
    series = pl.read_parquet(out / "queue.parquet")

    assert (summary[col.NAME], summary[col.SEED], summary[col.DURATION]) == ("tiny-udp-ping", 3, 2.0)
    assert summary[col.SIM_TIME] == 2.0 and summary[col.EVENTS] > 0
    assert set(summary[col.FLOWS]) == set(flows[col.FLOW])
    for row in flows.iter_rows(named=True):
        headline = summary[col.FLOWS][row[col.FLOW]]
        for column in (col.KIND, col.TX_PKTS, col.RX_PKTS, col.DROP_PKTS, col.GOODPUT_BPS, col.DELAY_MEAN):
            assert headline[column] == row[column], (row[col.FLOW], column)

    cbr = summary[col.FLOWS]["cbr"]
    last = udp.filter(pl.col(col.FLOW) == "cbr").row(-1, named=True)
    assert (cbr[col.RX_PKTS], cbr[col.TX_PKTS], cbr[col.DROP_PKTS]) == (
        last[col.RX_PKTS], last[col.TX_PKTS], last[col.DROP_PKTS],
    )  # fmt: skip
    # 1.2 Gbps offered to a 1 Gbps link that also carries 38 B of framing per
    # 1500 B packet: the receiver gets 1500/1538 of the link rate.
    assert cbr[col.GOODPUT_BPS] == pytest.approx(1e9 * 1500 / 1538, rel=0.02)
    assert cbr[col.LOSS] == pytest.approx(cbr[col.DROP_PKTS] / cbr[col.TX_PKTS]) and cbr[col.LOSS] > 0.1
    # Every drop, of either direction, happened in some queue.
    dropped = flows[col.DROP_PKTS].sum() + flows[col.DROP_REV_PKTS].sum()
    assert sum(q[col.DROP_PKTS] for q in summary[col.QUEUES].values()) == dropped

    probe = summary[col.FLOWS]["probe"]
    rtts = ping.filter(pl.col(col.FLOW) == "probe")[col.RTT]
    assert probe[col.PINGS_SENT] == 20 and probe[col.PINGS_LOST] == rtts.null_count()
    assert probe[col.RTT_MEAN] == pytest.approx(rtts.mean())
    assert probe[col.RTT_MIN] > 0.004  # 2 x (1 ms + 1 ms) of propagation, plus transmission

    assert set(summary[col.QUEUES]) == set(queues[col.QUEUE])
    for row in queues.iter_rows(named=True):
        headline = summary[col.QUEUES][row[col.QUEUE]]
        assert headline[col.ENQ_PKTS] == row[col.ENQ_PKTS]
        assert headline[col.DROP_TAIL_PKTS] == row[col.DROP_TAIL_PKTS]
        lengths = series.filter(pl.col(col.QUEUE) == row[col.QUEUE])
        assert headline[col.MAX_LEN_BYTES] == lengths[col.LEN_BYTES].max()

    loaded = Results.load(out)
    assert loaded.summary == summary and loaded.scenario.name == "tiny-udp-ping"


@needs_engine
def test_same_seed_gives_byte_identical_tables(tiny, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert run_cli(str(tiny), "--out", str(first), "--quiet") == 0
    assert run_cli(str(tiny), "--out", str(second), "--quiet") == 0
    for name in [*(f"{table}.parquet" for table in col.TABLES), "summary.json", "scenario.yaml"]:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


@needs_engine
def test_overrides_reach_the_run(tiny, tmp_path):
    out = tmp_path / "run"
    assert run_cli(str(tiny), "--out", str(out), "--quiet", "--seed", "9", "--duration", "1s") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary[col.SEED], summary[col.DURATION], summary[col.SIM_TIME]) == (9, 1.0, 1.0)
    resolved = yaml.safe_load((out / "scenario.yaml").read_text())
    assert (resolved["seed"], resolved["duration"]) == (9, "1s")
    assert resolved["flows"][1]["stop"] == "1s"


@needs_engine
def test_default_run_directory(tiny, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run_cli(str(tiny), "--quiet") == 0
    out = Path(capsys.readouterr().out.strip())
    assert out.parent == Path("runs") and out.name.startswith("tiny-udp-ping-")
    assert sorted(p.name for p in out.iterdir()) == RUN_FILES


@needs_engine
def test_python_api_runs_without_writing(tmp_path, monkeypatch):
    import alphaqos

    monkeypatch.chdir(tmp_path)
    results = alphaqos.run(TINY, duration="500ms")
    assert results.summary[col.DURATION] == 0.5
    assert results.udp[col.TIME].max() == 0.5
    assert list(tmp_path.iterdir()) == []


@needs_engine
def test_a_shortened_run_leaves_out_flows_that_start_after_it_with_a_note(tmp_path, capsys):
    scenario = {**TINY, "flows": [*TINY["flows"], {"name": "late", "ping": {"from": "A", "to": "B"}, "start": "1.5s"}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    out = tmp_path / "run"
    assert cli.main(["run", str(path), "--duration", "1s", "--out", str(out), "--quiet"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    line = path.read_text().splitlines().index("- name: late") + 1
    assert err == (f"alphaqos: note: {path}:{line}: flows[2]: flow 'late' starts at 1.5s, not before the end of "
                   "the shortened run (1s): left out\n")  # fmt: skip
    ran = yaml.safe_load((out / "scenario.yaml").read_text())
    assert (ran["duration"], [f["name"] for f in ran["flows"]]) == ("1s", ["cbr", "probe"])
