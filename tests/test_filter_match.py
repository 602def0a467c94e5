"""Firewall filter terms beyond addresses: port ranges, DSCP values (by
name or number), and setting the loss priority; the flows' markings; the
per-term counters in the results' filter table."""

from __future__ import annotations

import importlib.util

import polars as pl
import pytest

import alphaqos
from alphaqos import ScenarioError, load_scenario, resolve

needs_engine = pytest.mark.skipif(
    importlib.util.find_spec("alphaqos._core") is None, reason="the engine is not built (make build)"
)


def _scenario(filter_terms: list[dict], flows: list[dict], classes: dict | None = None) -> dict:
    policy = {
        "buffer": "1000p",
        "classes": classes or {
            "be": {"transmit_rate": "50%", "buffer_size": "50%"},
            "bulk": {"transmit_rate": "50%", "buffer_size": "50%"},
        },
        "filter": filter_terms,
    }  # fmt: skip
    return {
        "name": "filters",
        "duration": "1s",
        "policies": {"p": policy},
        "nodes": {"S": {"address": "10.0.1.1"}, "D": {"address": "10.0.3.1"}, "R": {"router": True, "policy": "p"}},
        "links": [
            {"between": ["S", "R"], "rate": "10Gbps", "delay": "0.1ms"},
            {"between": ["R", "D"], "rate": "1Gbps", "delay": "0.1ms", "queues": {"R": {"policy": "p"}}},
        ],
        "flows": flows,
    }


def _udp(name: str, rate: str = "100Mbps", **marking) -> dict:
    return {"name": name, "udp": {"from": "S", "to": "D", "rate": rate}, "stop": "0.8s", **marking}


def test_ports_and_dscp_resolve_to_the_engine_filter():
    doc = _scenario(
        [
            {"name": "gridftp", "from": {"protocol": "tcp", "destination_port": "50000-51000"}, "then": {"class": "bulk"}},
            {"name": "voice", "from": {"dscp": ["ef", "af41", 10]}, "then": {"loss_priority": "low"}},
            {"name": "ssh", "from": {"source_port": 22}, "then": {"class": "be", "loss_priority": "high"}},
        ],
        [_udp("a", dscp="af11", src_port=40000, dst_port=5201)],
    )
    resolved = resolve(load_scenario(doc))
    router = next(n for n in resolved["nodes"] if n["name"] == "R")
    gridftp, voice, ssh = router["filter"]
    assert gridftp["dst_port"] == [50000, 51000] and gridftp["proto"] == 6
    assert voice["dscp"] == [46, 34, 10] and voice["loss_priority"] == "low"
    assert ssh["src_port"] == [22, 22] and ssh["loss_priority"] == "high" and ssh["fclass"] == 0
    flow = resolved["flows"][0]
    assert (flow["dscp"], flow["src_port"], flow["dst_port"]) == (10, 40000, 5201)  # af11 = 10
    # And back to YAML in the operator's words.
    assert "af11" in load_scenario(doc).to_yaml() and "50000-51000" in load_scenario(doc).to_yaml()


@pytest.mark.parametrize(
    ("term", "flow_marking", "where", "message"),
    [
        ({"dscp": 64}, {}, "dscp", "expected a DSCP value 0..63 or a name"),
        ({"dscp": "gold"}, {}, "dscp", "expected a DSCP value 0..63 or a name"),
        ({"destination_port": "6000-5000"}, {}, "destination_port", "is empty"),
        ({"source_port": 70000}, {}, "source_port", "expected a port or a range"),
        ({}, {"dscp": -1}, "flows[0].dscp", "expected a DSCP value"),
        ({}, {"dst_port": 0}, "flows[0].dst_port", "expected a port number 1..65535"),
    ],
)
def test_bad_matches_and_markings_are_named(term, flow_marking, where, message):
    doc = _scenario([{"name": "t", "from": term, "then": {"class": "bulk"}}], [_udp("a", **flow_marking)])
    with pytest.raises(ScenarioError) as err:
        load_scenario(doc)
    assert where in str(err.value) and message in str(err.value)


def test_a_ping_has_no_ports():
    doc = _scenario([], [{"name": "p", "ping": {"from": "S", "to": "D"}, "dst_port": 7}])
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.dst_port.*a ping \(ICMP\) has no ports"):
        load_scenario(doc)


@needs_engine
def test_terms_match_on_ports_and_dscp_and_count_what_they_match():
    doc = _scenario(
        [
            {"name": "drop-ef", "from": {"dscp": "ef"}, "then": {"discard": True}},
            {"name": "bulk-ports", "from": {"destination_port": "6000-6010"}, "then": {"class": "bulk"}},
        ],
        [
            _udp("voice", dscp="ef"),
            _udp("bulk", dst_port=6005),
            _udp("other", dst_port=6011),  # one past the range: default class
        ],
    )
    res = alphaqos.run(doc)
    flows = {row["flow"]: row for row in res.flow_summary.iter_rows(named=True)}
    terms = {row["term"]: row for row in res.filter.iter_rows(named=True)}
    assert flows["voice"]["rx_pkts"] == 0 and terms["drop-ef"]["discarded_pkts"] == flows["voice"]["tx_pkts"]
    assert terms["bulk-ports"]["matched_pkts"] == flows["bulk"]["tx_pkts"]
    assert flows["other"]["rx_pkts"] == flows["other"]["tx_pkts"]
    enqueued = dict(res.queue_summary.select("queue", "enq_pkts").iter_rows())
    assert enqueued["R->D/bulk"] == flows["bulk"]["tx_pkts"]
    assert enqueued["R->D/be"] == flows["other"]["tx_pkts"]


@needs_engine
def test_loss_priority_high_meets_the_class_drop_profile():
    """A term that sets loss priority high exposes its packets to the high
    curve; here every red packet is dropped, every green one kept."""
    classes = {
        "be": {"transmit_rate": "100%", "buffer_size": "100%",
               "drop_profile": {"high": [[0, 100], [100, 100]]}},
    }  # fmt: skip
    doc = _scenario(
        [{"name": "scavenge", "from": {"destination_port": 9}, "then": {"loss_priority": "high"}}],
        [_udp("discardable", dst_port=9), _udp("kept", dst_port=5001)],
        classes,
    )
    res = alphaqos.run(doc)
    flows = {row["flow"]: row for row in res.flow_summary.iter_rows(named=True)}
    assert flows["discardable"]["tx_pkts"] > 1000 and flows["discardable"]["rx_pkts"] == 0
    assert flows["kept"]["rx_pkts"] == flows["kept"]["tx_pkts"]
    assert res.queue_summary.filter(pl.col("queue") == "R->D/be")["drop_aqm_pkts"][0] == flows["discardable"]["tx_pkts"]
