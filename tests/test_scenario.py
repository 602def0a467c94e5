"""Units, the scenario schema and its errors, and the CLI's handling of bad
input. None of these tests needs the engine: validation and output-directory
checks happen before it is loaded."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
import yaml

from alphaqos import ScenarioError, cli, load_scenario, resolve
from alphaqos.errors import MAX_REPORTED, ScenarioNote
from alphaqos.scenario import Scenario
from alphaqos.units import (
    QueueLimit,
    fmt_rate,
    fmt_size,
    fmt_time_ns,
    parse_queue_limit,
    parse_rate,
    parse_size,
    parse_time,
)

REPO = Path(__file__).resolve().parents[1]
EXP1 = REPO / "scenarios" / "yan2013" / "exp1-1queue.yaml"

# --- units ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("10Gbps", 10_000_000_000),
        ("10gbit", 10_000_000_000),
        ("10 Gbps", 10_000_000_000),
        ("10Gbit/s", 10_000_000_000),
        ("2.5Gbps", 2_500_000_000),
        ("1.5Mbps", 1_500_000),
        ("500kbps", 500_000),
        ("1Tbps", 10**12),
        ("0bps", 0),
        ("64bit/s", 64),
        ("1e9bps", 10**9),
    ],
)
def test_parse_rate(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("1500B", 1500),
        ("125MB", 125_000_000),
        ("30KB", 30_000),
        ("30kB", 30_000),
        ("1GB", 10**9),
        ("48MiB", 48 * 2**20),
        ("64KiB", 65_536),
        ("1GiB", 2**30),
        ("0.5KB", 500),
    ],
)
def test_parse_size(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0.05ms", 50_000),
        ("1.05ms", 1_050_000),
        ("200s", 200_000_000_000),
        ("100ms", 100_000_000),
        ("40ms", 40_000_000),
        ("7us", 7_000),
        ("7µs", 7_000),
        ("12ns", 12),
        ("2min", 120_000_000_000),
        ("12h", 43_200_000_000_000),
        ("1.5d", 129_600_000_000_000),
        ("0.1s", 100_000_000),
        ("0s", 0),
    ],
)
def test_parse_time_is_exact(text, ns):
    assert parse_time(text) == ns


@pytest.mark.parametrize(
    ("value", "limit"),
    [
        (1000, QueueLimit(pkts=1000)),
        ("1000p", QueueLimit(pkts=1000)),
        ("1000pkts", QueueLimit(pkts=1000)),
        ("125MB", QueueLimit(bytes=125_000_000)),
        ("unlimited", QueueLimit()),
    ],
)
def test_parse_queue_limit(value, limit):
    assert parse_queue_limit(value) == limit


@pytest.mark.parametrize(
    ("parse", "value", "expected"),
    [
        (parse_rate, "-1Gbps", "negative value"),
        (parse_rate, "nan", "expected a rate like '10Gbps'"),
        (parse_rate, "NaNGbps", "expected a rate like '10Gbps'"),
        (parse_rate, "infGbps", "expected a rate like '10Gbps'"),
        (parse_rate, "", "empty string"),
        (parse_rate, "10", "missing unit"),
        (parse_rate, "10gbps", "ambiguous: tc reads 'gbps' as bytes per second"),
        (parse_rate, "10Gbytes", "unknown rate unit"),
        (parse_rate, 10_000, "expected a rate like '10Gbps'"),
        (parse_rate, True, "expected a rate like '10Gbps'"),
        (parse_rate, None, "expected a rate like '10Gbps'"),
        (parse_rate, "0.5bps", "not a whole number of bit/s"),
        (parse_size, "1500b", "unknown size unit 'b'"),
        (parse_size, "1.5B", "not a whole number of bytes"),
        (parse_size, "12XB", "expected a size like '1500B'"),
        (parse_time, "0.5ns", "not a whole number of nanoseconds"),
        (parse_time, "10 parsecs", "expected a time like '200ms'"),
        (parse_time, "-5s", "negative value"),
        (parse_time, "5", "missing unit"),
        (parse_time, 1.5, "expected a time like '200ms'"),
        (parse_time, "1e99s", "too large"),
        (parse_time, "18446744073709551616ns", "too large"),
        (parse_time, "1.0000000000000000000000000001ms", "not a whole number"),  # beyond float and default Decimal precision
        (parse_time, "1" * 41 + "ns", "too many digits"),
        (parse_queue_limit, 0, "must be positive"),
        (parse_queue_limit, "2.5p", "not a whole number of packets"),
        (parse_queue_limit, True, "expected a queue limit like '1000p'"),
        (parse_queue_limit, "-3p", "negative value"),
    ],
)
def test_unit_parsers_reject_with_what_was_expected(parse, value, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        parse(value)


def test_human_formats():
    assert fmt_rate(3e9) == "3 Gbps"
    assert fmt_rate(2.5e9) == "2.5 Gbps"
    assert fmt_rate(123_456_789) == "123.5 Mbps"
    assert fmt_rate(0) == "0 bps"
    assert fmt_time_ns(2_280_000) == "2.28 ms"
    assert fmt_time_ns(200e9) == "200 s"
    assert fmt_time_ns(50_000) == "50 us"
    assert fmt_size(125e6) == "125 MB"


def test_exact_formats():
    assert fmt_rate(1_500_000, exact=True) == "1.5Mbps"
    assert fmt_time_ns(1_050_000, exact=True) == "1.05ms"
    assert fmt_size(1500, exact=True) == "1500B"
    assert fmt_size(48 * 2**20, exact=True) == "48MiB"
    assert fmt_size(125_000_000, exact=True) == "125MB"
    assert fmt_size(0, exact=True) == "0B"


@pytest.mark.parametrize("value", [0, 1, 999, 1000, 1448, 1500, 50_000, 1_050_000, 65_536, 48 * 2**20, 10**12 + 1])
def test_exact_formats_parse_back(value):
    assert parse_rate(fmt_rate(value, exact=True)) == value
    assert parse_size(fmt_size(value, exact=True)) == value
    assert parse_time(fmt_time_ns(value, exact=True)) == value


# --- the scenario and its resolution ----------------------------------------


def test_bundled_experiment_resolves_to_the_documented_config():
    config = resolve(load_scenario(EXP1))
    assert config["duration_ns"] == 200 * 10**9
    assert config["metric_interval_ns"] == 100 * 10**6
    nodes = {node["name"]: node for node in config["nodes"]}
    assert nodes["W1"] == {"name": "W1", "router": False, "address": "10.0.1.1", "filter": []}
    # A router without an address is left to the engine, which assigns it.
    assert nodes["WR"]["router"] and nodes["WR"]["address"] is None
    links = {(link["a"], link["b"]): link for link in config["links"]}
    access = links[("WR", "W1")]
    assert access["delay_ns"] == 50_000
    assert access["rate_bps"] == 10**10
    assert access["overhead_bytes"] == 38 and access["mtu_bytes"] == 1500
    assert access["queue_ab"] == {"fifo": {"limit_pkts": None, "limit_bytes": 125_000_000}}
    assert access["queue_ba"] == {"fifo": {"limit_pkts": 1000, "limit_bytes": None}}
    assert links[("WR", "ER")]["delay_ns"] == 1_050_000
    assert links[("WR", "WA")]["rate_bps"] == 10**9
    flows = {flow["name"]: flow for flow in config["flows"]}
    assert flows["alpha"]["start_ns"] == 53 * 10**9 and flows["alpha"]["stop_ns"] == 153 * 10**9
    assert flows["alpha"]["tcp"]["rwnd_bytes"] == 48 * 2**20
    assert flows["alpha"]["tcp"]["size_bytes"] is None
    assert flows["background"]["udp"] == {"size_bytes": 1500, "schedule": [[10**9, 3 * 10**9]]}
    assert flows["probe"]["ping"] == {"interval_ns": 10**9, "size_bytes": 84}
    assert flows["probe"]["stop_ns"] == 200 * 10**9


def _tiny(**changes) -> dict:
    scenario = {
        "name": "tiny",
        "duration": "2s",
        "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}, "R": {"router": True}},
        "links": [
            {"between": ["A", "R"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["R", "B"], "rate": "1Gbps", "delay": "2ms"},
        ],
        "flows": [{"name": "bulk", "udp": {"from": "A", "to": "B", "rate": "500Mbps"}}],
    }
    scenario.update(changes)
    return scenario


def test_defaults_fill_the_engine_config():
    config = resolve(load_scenario(_tiny()))
    assert config["seed"] == 1
    link = config["links"][0]
    assert link["mtu_bytes"] == 1500 and link["overhead_bytes"] == 38
    assert link["queue_ab"] == link["queue_ba"] == {"fifo": {"limit_pkts": 1000, "limit_bytes": None}}
    flow = config["flows"][0]
    assert (flow["start_ns"], flow["stop_ns"]) == (0, 2 * 10**9)
    assert flow["udp"] == {"size_bytes": 1500, "schedule": [[0, 500_000_000]]}


def test_every_option_resolves():
    scenario = _tiny(
        seed=7,
        metric_interval="10ms",
        flows=[
            {
                "name": "t",
                "tcp": {"from": "A", "to": "B", "cc": "newreno", "size": "10MB", "init_cwnd": 4, "delayed_ack": False},
                "start": "0.5s",
            },
            {"name": "s", "udp": {"from": "B", "to": "A", "schedule": [["0s", "0bps"], ["1s", "100Mbps"]], "size": "1000B"}},
            {"name": "p", "poisson": {"from": "A", "to": "B", "rate": "5Mbps", "size": "600B", "sizes": "exponential"}},
            {"name": "q", "ping": {"from": "B", "to": "A", "interval": "10ms"}, "stop": "1s"},
        ],
    )
    scenario["links"][1]["queue"] = {"red": {"limit": "300KB", "min_th": "30KB", "max_th": "90KB", "max_p": 0.2}}
    scenario["links"][1]["queues"] = {"B": {"fifo": {"limit": "unlimited"}}}
    config = resolve(load_scenario(scenario))
    assert config["seed"] == 7 and config["metric_interval_ns"] == 10**7
    tcp, udp, poisson, ping = config["flows"]
    assert tcp["tcp"]["size_bytes"] == 10**7 and tcp["tcp"]["init_cwnd_pkts"] == 4
    assert tcp["tcp"]["delayed_ack"] is False and tcp["start_ns"] == 5 * 10**8
    assert udp["udp"]["schedule"] == [[0, 0], [10**9, 10**8]]
    assert poisson["poisson"] == {"rate_bps": 5 * 10**6, "size_bytes": 600, "exp_size": True}
    assert ping["stop_ns"] == 10**9
    link = config["links"][1]
    assert link["queue_ab"] == {
        "red": {
            "limit_pkts": None, "limit_bytes": 300_000, "min_th": 30_000.0, "max_th": 90_000.0,
            "thresholds_in_bytes": True, "max_p": 0.2, "w_q": 0.002, "gentle": True, "byte_mode": False,
            "mean_pkt_bytes": 1000, "wait": False,
        }
    }  # fmt: skip
    assert link["queue_ba"] == {"fifo": {"limit_pkts": None, "limit_bytes": None}}


def test_receive_coalescing_options_resolve():
    flow = {"name": "t", "tcp": {"from": "A", "to": "B", "cc": "newreno", "gro": True, "napi_interval": "50us"}}
    config = resolve(load_scenario(_tiny(flows=[flow])))
    tcp = config["flows"][0]["tcp"]
    assert (tcp["gro"], tcp["napi_interval_ns"]) == (True, 50_000)
    # Unset: the host profile decides (the engine's default hosts: off).
    plain = resolve(load_scenario(_tiny(flows=[{"name": "t", "tcp": {"from": "A", "to": "B", "cc": "newreno"}}])))
    assert plain["flows"][0]["tcp"]["gro"] is None
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.tcp\.napi_interval"):
        load_scenario(_tiny(flows=[{**flow, "tcp": {**flow["tcp"], "napi_interval": "0us"}}]))


def test_red_thresholds_in_packets():
    scenario = _tiny()
    scenario["links"][1]["queue"] = {"red": {"min_th": 5, "max_th": 15.5}}
    red = resolve(load_scenario(scenario))["links"][1]["queue_ab"]["red"]
    assert (red["min_th"], red["max_th"], red["thresholds_in_bytes"]) == (5.0, 15.5, False)
    assert (red["limit_pkts"], red["limit_bytes"]) == (1000, None)


@pytest.mark.parametrize("source", ["exp1", "every-option"])
def test_resolved_yaml_reads_back_to_the_same_config(source, tmp_path):
    if source == "exp1":
        scenario = load_scenario(EXP1)
    else:
        data = _tiny(flows=[{"name": "s", "udp": {"from": "B", "to": "A", "schedule": [["0s", "1.5Mbps"]]}}])
        data["links"][0]["queue"] = {"red": {"min_th": 5, "max_th": 15.5, "limit": "unlimited"}}
        data["links"][1]["queues"] = {"R": {"fifo": {"limit": "48MiB"}}}
        scenario = load_scenario(data)
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario.resolved().to_yaml())
    # The file holds the engine's router addresses: the same run.
    assert resolve(load_scenario(path)) == resolve(scenario.resolved())


def test_routers_get_the_engines_free_addresses_in_order():
    pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")
    nodes = {
        "A": {"address": "10.255.0.1"},
        "B": {"address": "10.0.0.2"},
        "R": {"router": True},
        "S": {"router": True, "address": "10.255.0.2"},
        "T": {"router": True},
    }
    links = [
        {"between": ["A", "R"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["R", "T"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["T", "B"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["S", "T"], "rate": "1Gbps", "delay": "1ms"},
    ]
    scenario = load_scenario(_tiny(nodes=nodes, links=links))
    addresses = {name: node.address for name, node in scenario.resolved().nodes.items()}
    assert addresses == {"A": "10.255.0.1", "B": "10.0.0.2", "R": "10.255.0.3", "S": "10.255.0.2", "T": "10.255.0.4"}
    # Without an engine nothing is made up: the routers stay without one.
    from alphaqos import engine

    def missing():
        raise engine.EngineMissingError("no engine")

    original, engine._core = engine._core, missing
    try:
        unassigned = {name: node.address for name, node in scenario.resolved().nodes.items()}
    finally:
        engine._core = original
    assert unassigned == {**addresses, "R": None, "T": None}


def test_overrides_replace_seed_and_duration():
    scenario = load_scenario(_tiny(), seed=42, duration="1500ms")
    assert (scenario.seed, scenario.duration) == (42, 1_500_000_000)
    assert resolve(scenario)["flows"][0]["stop_ns"] == 1_500_000_000  # the default stop follows the new end


def test_a_shorter_duration_cuts_the_timeline_without_rescaling():
    flows = [
        {"name": "late", "udp": {"from": "A", "to": "B", "rate": "1Mbps"}, "start": "0.5s", "stop": "1.8s"},
        {"name": "steps", "udp": {"from": "A", "to": "B", "schedule": [["0s", "1Mbps"], ["0.2s", "2Mbps"], ["1.5s", "0bps"]]}},
        {"name": "after", "udp": {"from": "B", "to": "A", "schedule": [["1.5s", "1Mbps"]]}},
    ]  # fmt: skip
    late, steps, after = resolve(load_scenario(_tiny(flows=flows), duration="1s"))["flows"]
    assert (late["start_ns"], late["stop_ns"]) == (500_000_000, 10**9)
    assert steps["udp"]["schedule"] == [[0, 10**6], [200_000_000, 2 * 10**6]]
    assert after["udp"]["schedule"] == [[0, 0]]


def test_flows_starting_at_or_after_the_shortened_end_are_left_out_with_a_note():
    flows = [
        {"name": "early", "udp": {"from": "A", "to": "B", "rate": "1Mbps"}, "start": "0.5s", "stop": "1.8s"},
        {"name": "at-end", "udp": {"from": "A", "to": "B", "rate": "1Mbps"}, "start": "1s"},
        {"name": "late", "ping": {"from": "B", "to": "A"}, "start": "1.5s", "stop": "2s"},
    ]  # fmt: skip
    with pytest.warns(ScenarioNote) as notes:
        scenario = load_scenario(_tiny(flows=flows), duration="1s")
    assert [flow.name for flow in scenario.flows] == ["early"]
    assert scenario.flows[0].stop == 10**9  # a flow that stops after the end is cut to it
    assert [str(note.message) for note in notes] == [
        "flows[1]: flow 'at-end' starts at 1s, not before the end of the shortened run (1s): left out",
        "flows[2]: flow 'late' starts at 1.5s, not before the end of the shortened run (1s): left out",
    ]


def test_override_errors_name_the_override():
    with pytest.raises(ScenarioError, match=r"^seed: .*greater than or equal to 0.*\(seed override\)$"):
        load_scenario(_tiny(), seed=-1)
    with pytest.raises(ScenarioError, match=r"^duration: must be greater than 0s, got '0s' \(duration override\)$"):
        load_scenario(_tiny(), duration="0s")
    with pytest.raises(ScenarioError, match=r"^duration: missing unit in '5': .*\(duration override\)$"):
        load_scenario(_tiny(), duration="5")


def test_dict_errors_give_the_path_without_a_line():
    data = _tiny(flows=[{"name": "t", "tcp": {"from": "A", "to": "B", "cc": "foo"}}])
    with pytest.raises(ScenarioError) as caught:
        load_scenario(data)
    assert str(caught.value) == "flows[0].tcp.cc: unknown congestion control 'foo' (expected one of: newreno, reno, cubic, htcp, bic, highspeed, base_flow)"


def test_all_problems_are_kept_and_counted():
    data = _tiny()
    data["nodes"]["B"] = {}
    data["flows"][0]["udp"]["rate"] = "0bps"
    data["flows"][0]["udp"]["size"] = "20B"
    with pytest.raises(ScenarioError) as caught:
        load_scenario(data)
    assert [issue.path for issue in caught.value.issues] == ["flows[0].udp.rate", "flows[0].udp.size"]
    assert str(caught.value).endswith("(and 1 more problem)")


def test_a_misspelt_key_gets_a_suggestion_and_no_missing_key_error():
    data = _tiny()
    data["links"][1]["dealy"] = data["links"][1].pop("delay")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(data)
    assert [str(issue) for issue in caught.value.issues] == [
        "links[1].dealy: unknown key 'dealy': did you mean 'delay'? "
        "(expected one of: between, rate, delay, mtu, overhead, queue, queues, impair, impairs, tap, taps, monitor, monitors)"
    ]


def test_an_unknown_key_comes_before_the_missing_key_it_causes(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("    rate: 1Gbps\n    delay: 2ms", "    speed: 1Gbps\n    delay: 2ms"))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    speed = _line_of(path.read_text(), "speed:")
    assert [str(issue) for issue in caught.value.issues] == [
        f"{path}:{speed}: links[1].speed: unknown key 'speed' (expected one of: between, rate, delay, mtu, "
        "overhead, queue, queues, impair, impairs, tap, taps, monitor, monitors)",
        f"{path}:{speed - 1}: links[1].rate: required key is missing",
    ]


def test_every_problem_of_a_file_is_reported_with_its_line_up_to_a_limit(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    text = BASE.replace("rate: 500Mbps", "rate: 0bps").replace("interval: 100ms", "interval: 100ms, colour: red")
    text = text.replace("duration: 2s", "duration: 2s\nmetric_intreval: 1s")
    path.write_text(text)
    assert cli.main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"alphaqos: error: {path}:3: metric_intreval: unknown key 'metric_intreval': did you mean 'metric_interval'? "
        "(expected one of: name, description, duration, seed, metric_interval, nodes, policies, links, flows, workloads, control, deadline_transfers)",
        f"alphaqos: error: {path}:{_line_of(text, 'rate: 0bps')}: flows[0].udp.rate: must be greater than 0bps, got 0bps",
        f"alphaqos: error: {path}:{_line_of(text, 'colour')}: flows[1].ping.colour: unknown key 'colour' "
        "(expected one of: from, to, interval, size)",
    ]
    # More than MAX_REPORTED problems: the first ones and a count of the rest.
    many = "\n".join(f"  H{i}: {{addres: 10.0.9.{i}}}" for i in range(MAX_REPORTED + 5))
    path.write_text(BASE.replace("  R: {router: true}", "  R: {router: true}\n" + many))
    assert cli.main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == MAX_REPORTED + 1
    assert lines[0] == (f"alphaqos: error: {path}:7: nodes.H0.addres: unknown key 'addres': did you mean 'address'? "
                        "(expected one of: address, router, policy)")  # fmt: skip
    assert lines[-1] == f"alphaqos: error: ... and 5 more problems ({MAX_REPORTED + 5} in all)"


def test_flows_do_not_cross_hosts():
    data = _tiny(
        nodes={"A": {"address": "10.0.0.1"}, "H": {"address": "10.0.0.3"}, "B": {"address": "10.0.0.2"}},
        links=[
            {"between": ["A", "H"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["H", "B"], "rate": "1Gbps", "delay": "1ms"},
        ],
    )
    with pytest.raises(ScenarioError, match="no path from 'A' to 'B'.*only routers forward"):
        load_scenario(data)


def test_packets_must_fit_the_mtu_of_the_routed_path():
    data = _tiny(flows=[{"name": "t", "tcp": {"from": "A", "to": "B", "cc": "newreno"}}])
    data["links"][1]["mtu"] = "1499B"
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.tcp\.mss: 1500B packets do not fit the 1499B MTU of links\[1\]"):
        load_scenario(data)
    data["flows"][0]["tcp"]["mss"] = "1447B"
    load_scenario(data)


def test_the_schema_docstring_example_is_valid():
    import textwrap

    import yaml

    from alphaqos import scenario as module

    example = textwrap.dedent(module.__doc__.split("::\n")[1].split("\nEvery key")[0])
    config = resolve(load_scenario(yaml.safe_load(example)))
    assert [flow["name"] for flow in config["flows"]] == ["bulk", "probe"]


def test_scenario_models_reject_direct_nonsense():
    with pytest.raises(ValueError):
        Scenario.model_validate({"name": "x", "duration": "1s", "nodes": {}})


# --- the CLI on bad input ----------------------------------------------------

# Line numbers of this text matter: the cases below point into it.
BASE = """\
name: tiny
duration: 2s
nodes:
  A: {address: 10.0.0.1}
  B: {address: 10.0.0.2}
  R: {router: true}
links:
  - between: [A, R]
    rate: 1Gbps
    delay: 1ms
  - between: [R, B]
    rate: 1Gbps
    delay: 2ms
    queues: {R: {fifo: {limit: 100p}}}
flows:
  - name: bulk
    udp: {from: A, to: B, rate: 500Mbps}
  - name: probe
    ping: {from: A, to: B, interval: 100ms}
    start: 0s
    stop: 2s
"""

# (id, edits to BASE, text on the line the error must point at, field path, message fragment)
BAD_INPUT = [
    # Checked by the engine alone: its error arrives at the user's field and line.
    ("rack-without-sack", [("udp: {from: A, to: B, rate: 500Mbps}", "tcp: {from: A, to: B, cc: cubic, rack: true, sack: false}")], "rack: true", "flows[0].tcp.rack", "RACK loss detection needs sack: true"),
    ("red-byte-thresholds-reversed", [("{fifo: {limit: 100p}}", "{red: {limit: 1MB, min_th: 30KB, max_th: 10KB}}")], "queues:", "links[1].queues.R.red.max_th", "must be greater than min_th (30KB), got 10KB"),
    ("agent-on-unknown-interface", [("flows:\n", "control:\n  - wred_rtt_tuning: {class: R->X, traffic: [bulk]}\nflows:\n")], "class: R->X", "control[0].wred_rtt_tuning.class", "unknown handle 'R->X'"),
    ("unknown-node-in-link", [("[R, B]", "[R, X]")], "[R, X]", "links[1].between[1]", "unknown node 'X' (nodes: A, B, R)"),
    ("highspeed-windows-reversed", [("udp: {from: A, to: B, rate: 500Mbps}", "tcp: {from: A, to: B, cc: highspeed, cc_params: {low_window: 50, high_window: 40}}")], "high_window: 40", "flows[0].tcp.cc_params.high_window", "must be larger than low_window (50) for highspeed, got 40"),
    ("base-flow-increments-reversed", [("udp: {from: A, to: B, rate: 500Mbps}", "tcp: {from: A, to: B, cc: base_flow, cc_params: {ctr: 100Mbps, min_increment_segments: 8, max_increment_segments: 4}}")], "max_increment_segments: 4", "flows[0].tcp.cc_params.max_increment_segments", "must be at least min_increment_segments (8) for base_flow, got 4"),
    ("cubic-beta-rounds-to-zero", [("udp: {from: A, to: B, rate: 500Mbps}", "tcp: {from: A, to: B, cc: cubic, cc_params: {beta: 0.0001}}")], "beta: 0.0001", "flows[0].tcp.cc_params.beta", "must be between 1/1024 and 1023/1024 for cubic, got 0.0001"),
    ("flow-from-router", [("udp: {from: A", "udp: {from: R")], "udp: {from: R", "flows[0].udp.from", "'R' is a router; flows run between hosts"),
    ("flow-to-unknown", [("udp: {from: A, to: B", "udp: {from: A, to: Z")], "to: Z", "flows[0].udp.to", "unknown node 'Z'"),
    ("host-without-address", [("B: {address: 10.0.0.2}", "B: {}")], "B: {}", "nodes.B", "a host needs an IPv4 address"),
    ("duplicate-address", [("10.0.0.2", "10.0.0.1")], "B: {address", "nodes.B.address", "address 10.0.0.1 is already used by node 'A'"),
    ("invalid-address", [("10.0.0.2", "10.0.0.300")], "B: {address", "nodes.B.address", "expected a dotted IPv4 address"),
    ("duplicate-flow-name", [("name: probe", "name: bulk")], "  - name: bulk\n    ping", "flows[1].name", "duplicate flow 'bulk'"),
    ("duplicate-link", [("[R, B]", "[R, A]")], "[R, A]", "links[1].between", "duplicate link: links[0] already joins"),
    ("link-to-itself", [("[R, B]", "[R, R]")], "[R, R]", "links[1].between", "two different nodes"),
    (
        "no-path",
        [("  R: {router: true}", "  R: {router: true}\n  C: {address: 10.0.0.3}"), ("ping: {from: A, to: B", "ping: {from: A, to: C")],
        "- name: probe", "flows[1]", "no path from 'A' to 'C' over the links (only routers forward packets)",
    ),
    ("start-not-before-stop", [("start: 0s", "start: 2s")], "start: 2s", "flows[1].start", "2s is not before its stop (2s)"),
    ("stop-after-duration", [("stop: 2s", "stop: 3s")], "stop: 3s", "flows[1].stop", "3s is after the end of the run (duration 2s)"),
    (
        "schedule-not-ascending",
        [("rate: 500Mbps", "schedule: [[0s, 1Mbps], [1s, 2Mbps], [0.5s, 0bps]]")],
        "schedule:", "flows[0].udp.schedule[2][0]", "schedule times must ascend: 500ms follows 1s",
    ),
    (
        "schedule-beyond-duration",
        [("rate: 500Mbps", "schedule: [[0s, 1Mbps], [5s, 0bps]]")],
        "schedule:", "flows[0].udp.schedule[1][0]", "5s is not before the end of the run (2s)",
    ),
    ("zero-rate", [("rate: 500Mbps", "rate: 0bps")], "rate: 0bps", "flows[0].udp.rate", "must be greater than 0bps"),
    ("zero-link-rate", [("    rate: 1Gbps\n    delay: 2ms", "    rate: 0Gbps\n    delay: 2ms")], "0Gbps", "links[1].rate", "must be greater than 0bps"),
    ("bad-rate-unit", [("rate: 500Mbps", "rate: 500Mbytes")], "500Mbytes", "flows[0].udp.rate", "expected a rate like '10Gbps'"),
    ("negative-delay", [("delay: 2ms", "delay: -2ms")], "-2ms", "links[1].delay", "negative value '-2ms'"),
    ("unknown-top-level-key", [("duration: 2s", "duration: 2s\ncolour: red")], "colour", "colour", "unknown key 'colour' (expected one of: name, description, duration"),
    ("unknown-nested-key", [("limit: 100p}", "limit: 100p, colour: red}")], "colour", "links[1].queues.R.fifo.colour", "unknown key 'colour' (expected one of: limit)"),
    ("unknown-cc", [("udp: {from: A, to: B, rate: 500Mbps}", "tcp: {from: A, to: B, cc: foo}")], "cc: foo", "flows[0].tcp.cc", "unknown congestion control 'foo' (expected one of: newreno, reno, cubic, htcp, bic, highspeed, base_flow)"),
    ("missing-key", [("    rate: 1Gbps\n    delay: 1ms\n", "    delay: 1ms\n")], "[A, R]", "links[0].rate", "required key is missing"),
    ("two-flow-kinds", [("interval: 100ms}", "interval: 100ms}\n    udp: {from: A, to: B, rate: 1Mbps}")], "- name: probe", "flows[1]", "expected exactly one of: tcp, udp, ping, poisson, onoff, video (got udp, ping)"),
    ("queue-of-a-stranger", [("queues: {R:", "queues: {A:")], "queues:", "links[1].queues.A", "'A' is not an end of this link (expected 'R' or 'B')"),
    ("red-thresholds-reversed", [("{fifo: {limit: 100p}}", "{red: {min_th: 30, max_th: 10}}")], "queues:", "links[1].queues.R.red.max_th", "must be greater than min_th (30), got 10"),
    ("red-max-p-above-one", [("{fifo: {limit: 100p}}", "{red: {min_th: 5, max_th: 15, max_p: 1.5}}")], "queues:", "links[1].queues.R.red.max_p", "less than or equal to 1"),
    ("red-mixed-thresholds", [("{fifo: {limit: 100p}}", "{red: {min_th: 5, max_th: 30KB}}")], "queues:", "links[1].queues.R.red.max_th", "both be packet counts or both be sizes"),
    # The engine's own checks of a mechanism's parameters arrive at the parameter.
    ("htb-class-zero-rate", [("{fifo: {limit: 100p}}", "{htb: {classes: {'1:1': {rate: 1Gbps}, '1:10': {parent: '1:1', rate: 0bps}}}}")], "queues:", "links[1].queues.R.htb.classes.1:10.rate", "must be greater than 0bps"),
    ("htb-ceil-below-rate", [("{fifo: {limit: 100p}}", "{htb: {classes: {'1:1': {rate: 1Gbps}, '1:10': {parent: '1:1', rate: 100Mbps, ceil: 50Mbps}}}}")], "queues:", "links[1].queues.R.htb.classes.1:10.ceil", 'must be >= rate (100Mbps) (class "1:10")'),
    ("htb-parent-declared-after", [("{fifo: {limit: 100p}}", "{htb: {classes: {'1:10': {parent: '1:1', rate: 100Mbps}, '1:1': {rate: 1Gbps}}}}")], "queues:", "links[1].queues.R.htb.classes.1:10.parent", 'parent "1:1" is not declared before it'),
    ("htb-child-of-inner-class", [("{fifo: {limit: 100p}}", "{htb: {classes: {'1:1': {rate: 1Gbps, child: {sfq: {}}}, '1:10': {parent: '1:1', rate: 100Mbps}}}}")], "queues:", "links[1].queues.R.htb.classes.1:1.child", "'1:1' is an inner class"),
    ("htb-filter-to-inner-class", [("{fifo: {limit: 100p}}", "{htb: {classes: {'1:1': {rate: 1Gbps}, '1:10': {parent: '1:1', rate: 100Mbps}}, filters: [{dst: 10.0.0.2/32, class: '1:1'}]}}")], "queues:", "links[1].queues.R.htb.filters[0].class", 'class "1:1" is not a leaf'),
    ("red-curve-reversed-in-htb-class", [("{fifo: {limit: 100p}}", "{htb: {classes: {'1:1': {rate: 1Gbps, child: {red: {min_th: 30, max_th: 10}}}}}}")], "queues:", "links[1].queues.R.htb.classes.1:1.child.red", "min_th (30) must be below max_th (10)"),
    (
        "wrr-zero-weight",
        [("queues: {R: {fifo: {limit: 100p}}}", "queues: {R: {policy: p}}"), ("flows:\n", "policies:\n  p:\n    scheduler: wrr\n    buffer: 100p\n    classes:\n      be: {weight: 0, buffer_size: 100%}\nflows:\n")],
        "be: {weight: 0", "policies.p.classes.be.weight", "greater than or equal to 1",
    ),
    ("cubic-beta-above-one", [("udp: {from: A, to: B, rate: 500Mbps}", "tcp: {from: A, to: B, cc: cubic, cc_params: {beta: 1.5}}")], "beta: 1.5", "flows[0].tcp.cc_params", "invalid 'beta' for cubic"),
    ("zero-queue-limit", [("limit: 100p", "limit: 0p")], "queues:", "links[1].queues.R.fifo.limit", "must be positive"),
    ("packet-over-mtu", [("rate: 500Mbps}", "rate: 500Mbps, size: 9000B}")], "size: 9000B", "flows[0].udp.size", "9000B packets do not fit the 1500B MTU of links[0] (A-R)"),
    ("tiny-packet", [("rate: 500Mbps}", "rate: 500Mbps, size: 20B}")], "size: 20B", "flows[0].udp.size", "between 28B"),
    ("metric-interval-too-long", [("duration: 2s", "duration: 2s\nmetric_interval: 5s")], "metric_interval", "metric_interval", "5s is longer than the run (2s)"),
    ("invalid-yaml", [("    rate: 1Gbps\n    delay: 1ms", "    rate: 1Gbps: 2\n    delay: 1ms")], "1Gbps: 2", "", "invalid YAML: mapping values are not allowed here"),
    ("duplicate-yaml-key", [("  B: {address", "  A: {address")], "  A: {address: 10.0.0.2", "", "invalid YAML: duplicate key 'A'"),
    ("not-a-mapping", [(BASE, "- just\n- a list\n")], "just", "", "expected a mapping with name, duration"),
]  # fmt: skip


def _write(tmp_path: Path, edits: list[tuple[str, str]]) -> tuple[Path, str]:
    text = BASE
    for old, new in edits:
        assert text.count(old) == 1, f"edit target {old!r} must occur once"
        text = text.replace(old, new)
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path, text


def _line_of(text: str, marker: str) -> int:
    assert text.count(marker) == 1, f"marker {marker!r} must occur once"
    return text[: text.index(marker)].count("\n") + 1


def _first_error_line(capsys) -> str:
    """The first problem reported (each one is a line of its own)."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines and all(line.startswith("alphaqos: error: ") for line in lines), captured.err
    return lines[0].removeprefix("alphaqos: error: ")


def test_the_base_scenario_is_valid(tmp_path, capsys):
    path, _ = _write(tmp_path, [])
    assert cli.main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: ok: tiny, 2 hosts, 1 router, 2 links, 2 flows (1 udp, 1 ping), 2 s, seed 1\n"


@pytest.mark.parametrize(("edits", "marker", "path", "fragment"), [case[1:] for case in BAD_INPUT], ids=[case[0] for case in BAD_INPUT])
def test_bad_scenario_exits_2_with_file_line_and_path(tmp_path, capsys, edits, marker, path, fragment):
    scenario, text = _write(tmp_path, edits)
    out = tmp_path / "run"
    assert cli.main(["run", str(scenario), "--out", str(out)]) == 2
    message = _first_error_line(capsys)
    where = f"{scenario}:{_line_of(text, marker)}: " + (f"{path}: " if path else "")
    assert message.startswith(where), message
    assert fragment in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scenario.yaml"]


def test_every_flow_the_engine_refuses_is_reported_at_its_own_line(tmp_path, capsys):
    """The engine checks every flow, not only up to the first bad one: two
    bad flows, two errors, each at its line and field."""
    pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")
    scenario, text = _write(tmp_path, [
        ("rate: 500Mbps}", "rate: 500Mbps, size: 9000B}"),
        ("  R: {router: true}", "  R: {router: true}\n  C: {address: 10.0.0.3}"),
        ("ping: {from: A, to: B", "ping: {from: A, to: C"),
    ])  # fmt: skip
    assert cli.main(["validate", str(scenario)]) == 2
    lines = [line.removeprefix("alphaqos: error: ") for line in capsys.readouterr().err.splitlines()]
    assert lines == [
        f"{scenario}:{_line_of(text, 'size: 9000B')}: flows[0].udp.size: 9000B packets do not fit the 1500B MTU of "
        "links[0] (A-R) on the path from 'A' to 'B'",
        f"{scenario}:{_line_of(text, '- name: probe')}: flows[1]: no path from 'A' to 'C' over the links (only routers forward packets)",
    ]


def test_engine_paths_map_to_the_users_fields():
    from alphaqos.scenario import user_loc

    scenario = load_scenario(_tiny(flows=[{"name": "t", "tcp": {"from": "A", "to": "B", "cc": "cubic"}}]))
    assert user_loc(("flows", 0, "tcp", "mss_bytes"), "m", scenario) == (("flows", 0, "tcp", "mss"), "m")
    assert user_loc(("flows", 0, "dst"), "m", scenario) == (("flows", 0, "tcp", "to"), "m")
    # Node indices become names; what names no field of the user's stays in the message.
    assert user_loc(("nodes", 2, "filter", 0, "src"), "m", scenario) == (("nodes", "R"), "filter[0].src: m")
    # A link's direction is the queue the user gave for it.
    assert user_loc(("links", 1, "queue_ab", "limit_pkts"), "m", scenario) == (("links", 1, "queue"), "limit_pkts: m")
    assert user_loc(("workloads", 4), "m", scenario) == ((), "the engine rejected the scenario: workloads[4]: m")
    assert user_loc(("config",), "bad", scenario) == ((), "the engine rejected the scenario: config: bad")
    assert user_loc((), "bad", scenario) == ((), "the engine rejected the scenario: bad")


def test_the_run_shows_the_router_addresses_the_engine_assigned(tmp_path):
    """A router without an address gets the engine's (the first free one of
    10.255.0.0/16: a host holds the first); the run directory's scenario
    shows that one, as the engine reports it."""
    core = pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")
    nodes = {"A": {"address": "10.255.0.1"}, "B": {"address": "10.0.0.2"}, "R": {"router": True}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_tiny(nodes=nodes, duration="200ms")))
    assert cli.main(["run", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    shown = yaml.safe_load((tmp_path / "run" / "scenario.yaml").read_text())["nodes"]
    _, applied = core.check(json.dumps(resolve(load_scenario(path))))
    assert applied["addresses"] == {"A": "10.255.0.1", "B": "10.0.0.2", "R": "10.255.0.2"}
    assert {name: node["address"] for name, node in shown.items()} == applied["addresses"]


def test_validate_reports_the_same_error(tmp_path, capsys):
    scenario, text = _write(tmp_path, [("rate: 500Mbps", "rate: 0bps")])
    assert cli.main(["validate", str(scenario)]) == 2
    line = _line_of(text, "rate: 0bps")
    assert _first_error_line(capsys) == f"{scenario}:{line}: flows[0].udp.rate: must be greater than 0bps, got 0bps"


def test_missing_scenario_file(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    assert cli.main(["run", str(missing), "--out", str(tmp_path / "run")]) == 2
    assert _first_error_line(capsys) == f"{missing}: cannot read scenario: No such file or directory"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        (["--duration", "10"], "argument --duration: missing unit in '10'"),
        (["--duration", "ten seconds"], "argument --duration: expected a time like"),
        (["--seed", "x"], "argument --seed: invalid int value: 'x'"),
        (["--seed", "-1"], "seed: expected greater than or equal to 0"),
        (["--duration", "0s"], "duration: must be greater than 0s"),
        (["--duration", "50ms"], "metric_interval: 100ms is longer than the run (50ms) (the duration override ends"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_options_exit_2(tmp_path, capsys, option, fragment):
    scenario, _ = _write(tmp_path, [])
    assert cli.main(["run", str(scenario), "--out", str(tmp_path / "run"), *option]) == 2
    assert fragment in _first_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scenario.yaml"]


def test_no_command_exits_2(capsys):
    assert cli.main([]) == 2
    assert "required" in _first_error_line(capsys)


def test_existing_out_dir_is_left_untouched(tmp_path, capsys):
    scenario, _ = _write(tmp_path, [])
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    assert cli.main(["run", str(scenario), "--out", str(out)]) == 2
    assert _first_error_line(capsys) == f"output directory {str(out)!r} already exists"
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "scenario.yaml"]


def test_out_dir_under_a_file_exits_2(tmp_path, capsys):
    scenario, _ = _write(tmp_path, [])
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    assert cli.main(["run", str(scenario), "--out", str(blocker / "deeper" / "run")]) == 2
    assert _first_error_line(capsys).startswith(f"cannot create output directory '{blocker / 'deeper' / 'run'}': ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "scenario.yaml"]
    assert blocker.read_text() == "a file, not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only directories")
def test_out_dir_under_a_read_only_dir_exits_2(tmp_path, capsys):
    scenario, _ = _write(tmp_path, [])
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    try:
        assert cli.main(["run", str(scenario), "--out", str(locked / "run")]) == 2
        assert "Permission denied" in _first_error_line(capsys)
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs")
def test_out_dir_where_even_root_cannot_write_exits_2(tmp_path, capsys):
    """sysfs refuses new directories to every user, root included."""
    scenario, _ = _write(tmp_path, [])
    out = Path("/sys/alphaqos-test/run")
    assert cli.main(["run", str(scenario), "--out", str(out)]) == 2
    assert _first_error_line(capsys).startswith(f"cannot create output directory '{out}': ")
    assert not out.parent.exists()


def test_missing_engine_exits_1_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "alphaqos._core", None)  # makes the import fail
    scenario, _ = _write(tmp_path, [])
    assert cli.main(["run", str(scenario), "--out", str(tmp_path / "run")]) == 1
    assert "the simulation engine alphaqos._core is not available" in _first_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scenario.yaml"]


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
def test_a_failed_run_leaves_no_directory(tmp_path, capsys, monkeypatch, failure):
    """Ctrl-C (exit 130) or a crash during the run removes the staging
    directory and the parents made for it."""
    scenario, _ = _write(tmp_path, [])
    staged = []

    def fail(*args, **kwargs):
        staged.extend(p for p in (tmp_path / "a" / "b").iterdir())
        raise failure("boom")

    from alphaqos import engine

    monkeypatch.setattr(engine, "simulate", fail)  # `alphaqos run` takes it from there when it runs
    out = tmp_path / "a" / "b" / "run"
    if failure is KeyboardInterrupt:
        assert cli.main(["run", str(scenario), "--out", str(out)]) == 130
        assert capsys.readouterr().err == "alphaqos: interrupted\n"
    else:
        with pytest.raises(RuntimeError):
            cli.main(["run", str(scenario), "--out", str(out)])
    assert len(staged) == 1 and staged[0].name.startswith(".run.partial-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scenario.yaml"]


def test_the_ns2_profile_gives_unset_keys_ns2s_values():
    """``host_profile: ns2``: ns-2.35's windowInit_ 2, DelAck interval_ 100
    ms, rtxcur_init_ 3 s, RFC 2988 timeouts and no quick ACKs, where the
    scenario leaves them unset; a key it sets stays."""
    scenario = _tiny(flows=[{"name": "t", "tcp": {"from": "A", "to": "B", "cc": "newreno", "host_profile": "ns2", "init_cwnd": 4}}])
    scenario["workloads"] = [{"name": "w", "transfer": {"from": "A", "to": "B", "size": "1MB"}, "tcp": {"host_profile": "ns2"}}]
    config = resolve(load_scenario(scenario))
    tcp = config["flows"][0]["tcp"]
    assert (tcp["host_profile"], tcp["init_cwnd_pkts"], tcp["delack_timeout_ns"]) == ("ns2", 4, 100_000_000)
    assert (tcp["initial_rto_ns"], tcp["rto_style"], tcp["min_rto_ns"]) == (3_000_000_000, "rfc6298", 200_000_000)
    wl = config["workloads"][0]["tcp"]
    assert (wl["init_cwnd_pkts"], wl["quickack_segments"]) == (2, 0)
    plain = resolve(load_scenario(_tiny(flows=[{"name": "t", "tcp": {"from": "A", "to": "B", "cc": "newreno"}}])))
    assert (plain["flows"][0]["tcp"]["init_cwnd_pkts"], plain["flows"][0]["tcp"]["delack_timeout_ns"]) == (10, 40_000_000)


def test_the_linux6_profile_gives_cubic_and_rack_where_unset():
    """``host_profile: linux-6``: RACK where the scenario leaves it unset
    (only with SACK); a key it sets stays; a workload's connections are
    CUBIC as before (a flow names its ``cc`` under every profile)."""
    flows = [
        {"name": "a", "tcp": {"from": "A", "to": "B", "cc": "cubic", "host_profile": "linux-6"}},
        {"name": "b", "tcp": {"from": "A", "to": "B", "cc": "newreno", "host_profile": "linux-6", "rack": False}},
        {"name": "c", "tcp": {"from": "A", "to": "B", "cc": "cubic", "host_profile": "linux-6", "sack": False}},
    ]
    scenario = _tiny(flows=flows)
    scenario["workloads"] = [{"name": "w", "transfer": {"from": "A", "to": "B", "size": "1MB"}, "tcp": {"host_profile": "linux-6"}}]
    config = resolve(load_scenario(scenario))
    tcp = [f["tcp"] for f in config["flows"]]
    assert [(t["cc"], t["rack"]) for t in tcp] == [("cubic", True), ("newreno", False), ("cubic", False)]
    assert tcp[0]["host_profile"] == "linux-6" and tcp[0]["tlp"] is None
    assert (config["workloads"][0]["tcp"]["cc"], config["workloads"][0]["tcp"]["rack"]) == ("cubic", True)


def test_a_connection_that_names_no_profile_runs_linux6_or_the_override():
    """Issue 21: hosts as they run today unless the scenario says otherwise;
    ``load_scenario(host_profile=...)`` (``alphaqos run --host-profile``)
    changes that default for every connection (flow, workload, deadline
    transfer) that names none, never for one that names its own."""
    flows = [
        {"name": "a", "tcp": {"from": "A", "to": "B", "cc": "cubic"}},
        {"name": "b", "tcp": {"from": "A", "to": "B", "cc": "newreno", "host_profile": "ns2"}},
        {"name": "u", "udp": {"from": "A", "to": "B", "rate": "1Mbps"}},
    ]
    scenario = _tiny(flows=flows)
    scenario["workloads"] = [{"name": "w", "transfer": {"from": "A", "to": "B", "size": "1MB"}},
                             {"name": "v", "transfer": {"from": "A", "to": "B", "size": "1MB"}, "tcp": {"cc": "newreno"}}]  # fmt: skip

    def profiles(config):
        return [f["tcp"]["host_profile"] for f in config["flows"] if f.get("tcp")], [w["tcp"]["host_profile"] for w in config["workloads"]]

    assert profiles(resolve(load_scenario(scenario))) == (["linux-6", "ns2"], ["linux-6", "linux-6"])
    config = resolve(load_scenario(scenario, host_profile="default"))
    assert profiles(config) == (["default", "ns2"], ["default", "default"])
    assert config["flows"][0]["tcp"]["rack"] is False, "the default profile's own unset keys follow it"
    assert "host_profile" not in scenario["flows"][0]["tcp"], "the caller's dict is left as it was"
    with pytest.raises(ValueError, match="host profile 'ns3': expected one of default, linux-2.6.33, linux-6, ns2"):
        load_scenario(scenario, host_profile="ns3")


def test_run_host_profile_option(tmp_path, capsys):
    """``alphaqos run --host-profile``: a bad name is a one-line usage error
    (status 2, nothing written); a good one reaches the run's scenario."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_tiny(flows=[{"name": "a", "tcp": {"from": "A", "to": "B", "cc": "cubic", "size": "10KB"}}], duration="100ms")))
    assert cli.main(["run", str(path), "--host-profile", "linux-7", "--out", str(tmp_path / "bad")]) == 2
    assert "argument --host-profile: invalid choice: 'linux-7'" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    assert cli.main(["run", str(path), "--host-profile", "linux-2.6.33", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    written = yaml.safe_load((tmp_path / "run" / "scenario.yaml").read_text())
    assert written["flows"][0]["tcp"]["host_profile"] == "linux-2.6.33"
