"""Deadline transfers as users write them (``deadline_transfers:``,
:mod:`alphaqos.deadline`): what they become for the engine (a workload over
a base and an additional connection, the edge router's marking terms), the
methods the slides compare, a run in which the receiver merges the blocks,
and bad input (one line naming the field, exit 2, nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from _cli import cli  # noqa: E402
from alphaqos import columns as col  # noqa: E402

SCENARIO = """\
name: deadline
duration: 3s
nodes:
  S: {address: 10.0.1.1}
  D: {address: 10.0.2.1}
  E: {router: true, policy: edge}
  C: {router: true}
policies:
  edge:
    classes: {be: {transmit_rate: 100%, buffer_size: 100%}}
    filter:
      - {name: rest, from: {protocol: udp}, then: {loss_priority: high}}
links:
  - {between: [S, E], rate: 10Gbps, delay: 0.5ms}
  - {between: [E, C], rate: 10Gbps, delay: 0.5ms}
  - {between: [C, D], rate: 200Mbps, delay: 4ms, queues: {C: {fifo: {limit: 3000}}}}
deadline_transfers:
  - name: backup
    from: S
    to: D
    size: 20MB
    deadline: 2s
    method: two-connections
    base: {dscp: af11}
    block: 500KB
    reservation: {edge: E, rate: 50Mbps}
"""


def doc() -> dict:
    return yaml.safe_load(SCENARIO)


def resolved(d: dict) -> dict:
    return alphaqos.resolve(alphaqos.load_scenario(d))


@pytest.mark.parametrize(
    ("method", "ccs", "rtt_filter"),
    [
        ("two-connections", ["newreno", "newreno"], None),
        ("conventional", ["newreno"], None),
    ],
)
def test_a_deadline_transfer_becomes_a_workload_and_edge_marking(method, ccs, rtt_filter):
    d = doc()
    d["deadline_transfers"][0]["method"] = method
    r = resolved(d)
    (w,) = r["workloads"]
    assert (w["name"], w["striping"], w["block_bytes"], w["streams"]) == ("backup", "dynamic", 500_000, len(ccs))
    assert [o["cc"] for o in w["stream_options"]] == ccs
    assert [o["dscp"] for o in w["stream_options"]] == [10, 14][: len(ccs)]
    edge = next(n for n in r["nodes"] if n["name"] == "E")
    names = [t["name"] for t in edge["filter"]]
    # The transfer's terms come first, the router's own after them.
    assert names == ["backup-base", *(["backup-additional"] if len(ccs) == 2 else []), "rest"]
    base = edge["filter"][0]
    assert (base["src"], base["dst"], base["dscp"], base["proto"]) == ("10.0.1.1/32", "10.0.2.1/32", [10], 6)
    # 50 Mbit/s of payload is 50 x (1448 + 52) / 1448 of IP bytes at the policer.
    assert base["policer"] == {"rate_bps": 51_795_581, "burst_bytes": 65_536, "out_of_profile": "loss_priority_high"}
    if len(ccs) == 2:
        assert edge["filter"][1]["loss_priority"] == "high" and edge["filter"][1]["dscp"] == [14]


def test_the_fixed_window_method_holds_ctr_times_the_smallest_rtt():
    d = doc()
    d["deadline_transfers"][0].update(method="fixed-cwnd", reservation={"edge": "E", "dynamic": False})
    (w,) = resolved(d)["workloads"]
    base = w["stream_options"][0]
    assert base["cc"] == "base_flow" and base["cc_params"]["rtt_filter"] == "base"
    # Default static reservation: size x 8 / deadline x margin = 80 Mbit/s x 1.05.
    assert base["cc_params"]["ctr_bps"] == 84_000_000
    d["deadline_transfers"][0]["base"]["window"] = "binary"
    assert resolved(d)["workloads"][0]["stream_options"][0]["cc_params"]["rtt_filter"] == "latest"


def test_the_receiver_merges_the_blocks_of_both_connections():
    res = alphaqos.run(doc())
    (t,) = res.transfers.iter_rows(named=True)
    streams = res.transfer_streams
    assert streams[col.SIZE_BYTES].sum() == 20_000_000 == t[col.BYTES_ACKED]
    assert all(s > 0 for s in streams[col.SIZE_BYTES]), "both connections carried blocks"
    # The receiver holds the file before the sender hears of it, within the deadline.
    assert t[col.RECEIVER_END] < t[col.END] <= 2.0
    # The base connection is policed at its reservation: green up to it, red beyond.
    base = res.filter.filter(res.filter[col.TERM] == "backup-base").row(0, named=True)
    assert base[col.GREEN_PKTS] > 0 and base[col.RED_PKTS] > 0


def test_a_paced_base_connection_sends_at_the_policers_rate_and_stays_green():
    """``base.pacing``: the base connection's maximum pacing rate is the
    edge policer's rate (IP bytes, as the engine paces whole packets), so
    none of its packets is marked red; unpaced, its bursts are."""
    d = doc()
    d["deadline_transfers"][0]["base"]["pacing"] = True
    r = resolved(d)
    base = r["workloads"][0]["stream_options"][0]
    policer = next(n for n in r["nodes"] if n["name"] == "E")["filter"][0]["policer"]
    assert base["max_pacing_rate_bps"] == policer["rate_bps"] == 51_795_581
    assert r["workloads"][0]["stream_options"][1].get("max_pacing_rate_bps") is None
    res = alphaqos.run(d)
    term = res.filter.filter(res.filter[col.TERM] == "backup-base").row(0, named=True)
    assert term[col.GREEN_PKTS] > 1000 and term[col.RED_PKTS] == 0


def _write(tmp_path: Path, d: dict) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (lambda t: t.pop("base"), "deadline_transfers[0].base", "required"),
        (lambda t: t.update(block="30MB"), "deadline_transfers[0].block", "larger than the file"),
        (lambda t: t.update(deadline="0.5s"), "deadline_transfers[0].deadline", "arrives 8"),
        (lambda t: t["reservation"].update(edge="C2"), "deadline_transfers[0].reservation.edge", "not a router"),
        (lambda t: t["reservation"].update(dynamic=True), "deadline_transfers[0].reservation.dynamic", "binary or fixed window"),
        (lambda t: t.update(method="proposed", base={"pacing": True}), "deadline_transfers[0].base.pacing", "static reservation"),
    ],
)
def test_bad_deadline_transfers_are_one_line_naming_the_field(tmp_path: Path, edit, where, what):
    d = doc()
    edit(d["deadline_transfers"][0])
    out = tmp_path / "run"
    done = cli("run", str(_write(tmp_path, d)), "--out", str(out), "--quiet")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and where in lines[0] and what in lines[0], done.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("connection", "key", "where", "what"),
    [
        ({"base": {"window": "binary", "cc_params": {"min_increment_segments": 8, "max_increment_segments": 4}}},
         "max_increment_segments: 4", "base.cc_params.max_increment_segments", "must be at least min_increment_segments (8) for base_flow, got 4"),
        ({"additional": {"cc": "highspeed", "cc_params": {"low_window": 50, "high_window": 40}}},
         "high_window: 40", "additional.cc_params.high_window", "must be larger than low_window (50) for highspeed, got 40"),
    ],
)
def test_a_connections_controller_parameters_are_checked_by_the_engine_at_their_line(tmp_path: Path, capsys, connection,
                                                                                      key, where, what):
    """The engine refuses the controller's parameters of the workload a
    transfer becomes (its stream_options); the error names the transfer's
    connection the user gave them for, at their line."""
    from alphaqos import cli as command

    d = doc()
    d["deadline_transfers"][0].update(connection)
    path = _write(tmp_path, d)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if key in text)
    assert command.main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"alphaqos: error: {path}:{line}: deadline_transfers[0].{where}: {what}"]


def test_the_edge_must_be_on_the_engines_path_and_the_path_must_exist(tmp_path: Path):
    """The engine routes the transfer: an edge router beside the path, and
    a destination no link reaches, are each named at the transfer's field."""
    d = doc()
    d["nodes"]["X"] = {"router": True}
    d["links"].append({"between": ["E", "X"], "rate": "10Gbps", "delay": "1ms"})
    d["deadline_transfers"][0]["reservation"]["edge"] = "X"
    done = cli("validate", str(_write(tmp_path, d)))
    assert done.returncode == 2
    assert done.stderr.strip().endswith("deadline_transfers[0].reservation.edge: router 'X' is not on the path from S to D"), done.stderr
    d = doc()
    d["nodes"]["Z"] = {"address": "10.0.3.1"}
    d["deadline_transfers"][0]["to"] = "Z"
    done = cli("validate", str(_write(tmp_path, d)))
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "deadline_transfers[0]: no path from 'S' to 'Z' over the links (only routers forward packets)"
    ), done.stderr


def test_the_proposed_method_recomputes_the_reservation_from_bytes_left_and_time_left():
    """Every interval the agent sets R = (bytes left) x 8 / (time to the
    deadline) x margin, the deadline taken one interval early, capped at the
    path's payload rate; stepped from outside, each update is checked
    against the bytes left just before it."""
    d = doc()
    d["deadline_transfers"][0].update(method="proposed", start="0.2s", reservation={"edge": "E", "margin": 1.1, "interval": "100ms"})
    scenario = alphaqos.load_scenario(d)
    agents = alphaqos.resolve(scenario)["control"]
    assert agents == [{"deadline_reservation": {
        "name": "backup-reservation", "transfer": "backup", "deadline_ns": 2_000_000_000, "margin": 1.1,
        "interval_ns": 100_000_000, "policer": "E/backup-base"}}]  # fmt: skip
    sim = alphaqos.Simulation(scenario)
    start, interval, due = 200_000_000 + 1_000, 100_000_000, 200_000_000 + 2_000_000_000 - 100_000_000
    cap = 200e6 * 1448 / 1500  # the 200 Mbit/s bottleneck's payload rate
    expected = []
    at = start
    while at < sim.duration:
        sim.advance(at)  # every event before `at`; the agent acts first at `at`
        if at > start and sim.get("backup#0", "done") == 1:
            break
        if at > start:
            # The previous reservation is the base connection's whole CTR
            # (the additional connection, NewReno, has none).
            assert sim.get("backup#0", "ctr_bps") == expected[-1][1]
        left = sim.get("backup#0", "bytes_left") if at > start else 20_000_000
        r = min(left * 8 / ((due - at) / 1e9) * 1.1, cap) if at < due else cap
        expected.append((at, max(round(r), 1000)))
        at += interval
    res = sim.run()
    got = [(round(t * 1e9), r) for t, r in res.reservation.select(col.TIME, col.RESERVATION_BPS).iter_rows()]
    assert got == expected
    # The first, by hand: 20 MB over 1.9 s - 1 us, x 1.1.
    assert got[0][1] == round(20e6 * 8 / (1.9 - 1e-6) * 1.1) == 92_631_628
    # Each one reached the base connection's target rate and the edge policer (x 1500 / 1448).
    changes = res.control
    ctr = changes.filter(changes[col.KNOB] == "ctr_bps")[col.NEW_VALUE].to_list()
    policer = changes.filter(changes[col.KNOB] == "rate_bps")[col.NEW_VALUE].to_list()
    assert ctr == [r for _, r in got]
    assert policer == [round(r * 1500 / 1448) for _, r in got]
    (t,) = res.transfers.iter_rows(named=True)
    assert t[col.END] - t[col.START] <= 2.0, "the deadline is met"
    # Bytes left count both connections' blocks: with the additional
    # connection moving most of the file on the idle path, the reservation
    # falls as the file drains (it would climb if only one block per
    # connection were counted).
    rates = [r for _, r in got]
    assert len(rates) >= 5 and rates[len(rates) // 2] < 0.8 * rates[0], rates
