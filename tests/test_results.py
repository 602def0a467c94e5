"""The results layer on hand-made engine tables: unit conversion, the
summary, the run directory, determinism and plots. No engine needed."""

from __future__ import annotations

import json

import polars as pl
import pytest

from alphaqos import Results, load_scenario, resolve
from alphaqos import columns as col

MS = 1_000_000

SCENARIO = {
    "name": "handmade",
    "duration": "300ms",
    "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}, "R": {"router": True}},
    "links": [
        {"between": ["A", "R"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["R", "B"], "rate": "1Gbps", "delay": "1ms", "queues": {"R": {"fifo": {"limit": "1MB"}}}},
    ],
    "flows": [
        {"name": "t", "tcp": {"from": "A", "to": "B", "cc": "newreno"}},
        {"name": "u", "udp": {"from": "A", "to": "B", "rate": "100Mbps"}},
        {"name": "p", "ping": {"from": "B", "to": "A", "interval": "100ms"}},
    ],
}


def engine_tables(with_tcp: bool = True) -> dict[str, dict[str, list]]:
    """Tables shaped as docs/engine-config.md specifies them."""
    times = [100 * MS, 200 * MS, 300 * MS]
    tcp = {
        "flow": ["t"] * 3, "time_ns": times, "bytes_acked": [10_000, 30_000, 60_000],
        "goodput_bps": [800_000, 1_600_000, 2_400_000], "cwnd_bytes": [14_480, 28_960, 14_480],
        "ssthresh_bytes": [None, None, 14_480], "srtt_ns": [None, 2 * MS, 3 * MS],
        "rto_ns": [1000 * MS, 202 * MS, 203 * MS], "retransmits": [0, 0, 2], "retransmitted_bytes": [0, 0, 2896],
        "spurious_retransmits": [0, 0, 0], "fast_retransmits": [0, 0, 1],
        "timeouts": [0, 0, 1], "ooo_arrivals": [0, 1, 1], "ooo_extent_max": [0, 2, 2], "ooo_extent_3plus": [0, 0, 0], "dup_acks_sent": [0, 3, 3],
    }  # fmt: skip
    return {
        "tcp": tcp if with_tcp else {key: [] for key in tcp},
        "udp": {
            "flow": ["u"] * 3, "time_ns": times, "tx_pkts": [834, 1667, 2500], "rx_pkts": [830, 1660, 2490],
            "rx_bytes": [1_245_000, 2_490_000, 3_735_000], "rx_rate_bps": [99_600_000] * 3, "drop_pkts": [0, 2, 4],
        },  # fmt: skip
        "ping": {"flow": ["p"] * 3, "seq": [0, 1, 2], "time_ns": [0, 100 * MS, 200 * MS], "rtt_ns": [4 * MS, None, 5 * MS]},
        "queue": {
            "queue": ["A->R", "R->B"] * 3, "time_ns": [t for t in times for _ in range(2)],
            "len_pkts": [0, 3, 0, 7, 0, 1], "len_bytes": [0, 4500, 0, 10_500, 0, 1500],
            "tx_bytes": [10, 20, 30, 40, 50, 60], "len_green_pkts": [0, 3, 0, 6, 0, 1],
            "len_yellow_pkts": [0, 0, 0, 1, 0, 0], "len_red_pkts": [0] * 6,
        },  # fmt: skip
        "queue_summary": {
            "queue": ["A->R", "R->B"], "link": ["A->R", "R->B"], "enq_pkts": [2600, 2590], "enq_bytes": [1, 2],
            "deq_pkts": [2600, 2585], "deq_bytes": [1, 2], "drop_pkts": [0, 5], "drop_bytes": [0, 7500],
            "drop_tail_pkts": [0, 5], "drop_aqm_pkts": [0, 0], "drop_policer_pkts": [0, 0],
            "backlog_pkts": [0, 1], "backlog_bytes": [0, 1500], "rate_bps": [10**9, 10**9], "link_loss_pkts": [0, 0],
            "drop_queued_pkts": [0, 0], "drop_queued_bytes": [0, 0], "sojourn_mean_ns": [12_000, 2 * MS],
            "sojourn_p99_ns": [20_000, 4 * MS],
        },  # fmt: skip
        "flow_summary": {
            "flow": ["t", "u", "p"], "kind": ["tcp", "udp", "ping"], "src": ["A", "A", "B"], "dst": ["B", "B", "A"],
            "tx_pkts": [45, 2500, 3], "tx_bytes": [67_500, 3_750_000, 252], "rx_pkts": [43, 2490, 2],
            "rx_bytes": [64_500, 3_735_000, 168], "drop_pkts": [2, 4, 1], "drop_rev_pkts": [1, 0, 0],
            "delay_mean_ns": [2 * MS, 1 * MS, None], "delay_std_ns": [0, 0, None], "delay_p50_ns": [2 * MS, MS, None],
            "delay_p99_ns": [3 * MS, MS, None], "delay_min_ns": [MS, MS, None], "delay_max_ns": [4 * MS, 2 * MS, None],
            "goodput_bps": [1_600_000, 99_600_000, None],
        },  # fmt: skip
        "run": {"events": [12_345], "sim_time_ns": [300 * MS]},
    }


@pytest.fixture
def results() -> Results:
    return Results.from_engine(load_scenario(SCENARIO), engine_tables(), {"command": "test"})


def test_tables_have_the_documented_columns(results):
    for name, frame in results.tables().items():
        assert tuple(frame.columns) == col.TABLES[name]


def test_ns_columns_become_float_seconds(results):
    assert results.tcp[col.TIME].to_list() == [0.1, 0.2, 0.3]
    assert results.tcp[col.SRTT].to_list() == [None, 0.002, 0.003]
    assert results.tcp[col.SSTHRESH_BYTES][0] is None
    assert results.ping[col.RTT].to_list() == [0.004, None, 0.005]
    assert results.flow_summary[col.DELAY_P99].to_list() == [0.003, 0.001, None]
    assert results.ping[col.TIME].dtype == pl.Float64
    assert results.udp[col.RX_PKTS].dtype == pl.Int64


def test_summary_headlines(results):
    summary = results.summary
    assert (summary[col.NAME], summary[col.SEED], summary[col.DURATION]) == ("handmade", 1, 0.3)
    assert (summary[col.EVENTS], summary[col.SIM_TIME]) == (12_345, 0.3)
    tcp, udp, ping = (summary[col.FLOWS][name] for name in ("t", "u", "p"))
    assert tcp[col.LOSS] == pytest.approx(2 / 45)
    assert (tcp[col.RETRANSMITS], tcp[col.TIMEOUTS], tcp[col.BYTES_ACKED]) == (2, 1, 60_000)
    assert udp[col.GOODPUT_BPS] == 99_600_000 and udp[col.DELAY_MEAN] == 0.001
    assert (ping[col.PINGS_SENT], ping[col.PINGS_LOST]) == (3, 1)
    assert ping[col.RTT_MEAN] == pytest.approx(0.0045)
    assert ping[col.RTT_STD] == pytest.approx(0.0005)
    assert (ping[col.RTT_MIN], ping[col.RTT_MAX]) == (0.004, 0.005)
    queue = summary[col.QUEUES]["R->B"]
    assert (queue[col.MAX_LEN_PKTS], queue[col.MAX_LEN_BYTES], queue[col.DROP_TAIL_PKTS]) == (7, 10_500, 5)


def test_engine_tables_missing_a_column_are_refused():
    tables = engine_tables()
    del tables["udp"]["rx_pkts"]
    with pytest.raises(ValueError, match="'udp' lacks the columns \\['rx_pkts'\\]"):
        Results.from_engine(load_scenario(SCENARIO), tables)


def test_extra_engine_columns_are_kept_and_converted():
    tables = engine_tables()
    tables["ping"]["ttl_ns"] = [1, 2, 3]
    frame = Results.from_engine(load_scenario(SCENARIO), tables).ping
    assert frame.columns[-1] == "ttl" and frame["ttl"].to_list() == [1e-9, 2e-9, 3e-9]


def test_run_directory_round_trip(results, tmp_path):
    directory = results.save(tmp_path / "run")
    names = sorted(p.name for p in directory.iterdir())
    assert names == sorted([*(f"{t}.parquet" for t in col.TABLES), "summary.json", "scenario.yaml", "manifest.json", "plots"])
    assert sorted(p.name for p in (directory / "plots").iterdir()) == [
        "cwnd.png", "ping_rtt.png", "queue_length.png", "throughput.png",
    ]  # fmt: skip
    loaded = Results.load(directory)
    for name, frame in results.tables().items():
        assert loaded.tables()[name].equals(frame), name
    assert loaded.summary == results.summary
    assert loaded.manifest == {"command": "test"}
    assert resolve(loaded.scenario) == resolve(results.scenario.resolved())  # with the engine's router addresses
    assert json.loads((directory / "summary.json").read_text()) == results.summary


def test_saved_files_are_byte_identical(tmp_path):
    scenario = load_scenario(SCENARIO)
    first = Results.from_engine(scenario, engine_tables(), {"started_utc": "then"}).save(tmp_path / "a", plots=False)
    second = Results.from_engine(scenario, engine_tables(), {"started_utc": "now"}).save(tmp_path / "b", plots=False)
    for name in [*(f"{t}.parquet" for t in col.TABLES), "summary.json", "scenario.yaml"]:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_plots_with_nothing_to_show_are_skipped(tmp_path):
    results = Results.from_engine(load_scenario(SCENARIO), engine_tables(with_tcp=False))
    results.save(tmp_path / "run")
    assert not (tmp_path / "run" / "plots" / "cwnd.png").exists()
    assert (tmp_path / "run" / "plots" / "throughput.png").exists()
