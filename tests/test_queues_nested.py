"""Per-flow queues (``fq_codel``, ``sfq``) and disciplines nested in classes
(a policy class's or an HTB leaf's ``child``): the schema with units, its
resolution to the engine configuration, bad input with its field path, and
a run through the engine reporting per-queue sojourn times."""

from __future__ import annotations

import copy
import importlib.util
import json

import pytest

from alphaqos import ScenarioError, cli, load_scenario, resolve
from alphaqos import columns as col

needs_engine = pytest.mark.skipif(
    importlib.util.find_spec("alphaqos._core") is None,
    reason="the engine is not built (make build)",
)

BASE = {
    "name": "nested",
    "duration": "1s",
    "nodes": {"A": {"address": "10.0.1.1"}, "B": {"address": "10.0.2.1"}, "D": {"address": "10.0.3.1"}, "R": {"router": True}},
    "links": [
        {"between": ["A", "R"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["B", "R"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["R", "D"], "rate": "100Mbps", "delay": "2ms"},
    ],
    "flows": [
        {"name": "a", "udp": {"from": "A", "to": "D", "rate": "80Mbps", "size": "1500B"}},
        {"name": "b", "udp": {"from": "B", "to": "D", "rate": "50Mbps", "size": "1000B"}},
    ],
}


def _with_queue(queue: dict, policies: dict | None = None) -> dict:
    s = copy.deepcopy(BASE)
    s["links"][2]["queues"] = {"R": queue}
    if policies is not None:
        s["policies"] = policies
    return s


def _bottleneck(scenario: dict) -> dict:
    return resolve(load_scenario(scenario))["links"][2]["queue_ab"]


def test_fq_codel_and_sfq_resolve_with_units():
    q = _bottleneck(_with_queue({"fq_codel": {"target": "5ms", "interval": "100ms", "quantum": "1514B", "limit": 10240}}))
    assert q == {"fq_codel": {
        "limit_pkts": 10240, "limit_bytes": None, "buckets": 1024, "quantum_bytes": 1514,
        "target_ns": 5_000_000, "interval_ns": 100_000_000, "drop_batch": 64,
    }}  # fmt: skip
    # The limit is the engine's own default (10240p on a link, as Linux), taken
    # from the engine at resolution; the quantum is left to it (MTU + 14 B).
    q = _bottleneck(_with_queue({"fq_codel": {}}))["fq_codel"]
    assert (q["limit_pkts"], q["quantum_bytes"], q["target_ns"]) == (10240, None, 5_000_000)
    q = _bottleneck(_with_queue({"sfq": {"buckets": 128, "quantum": "3000B", "limit": "300KB"}}))
    assert q == {"sfq": {"limit_pkts": None, "limit_bytes": 300_000, "buckets": 128, "quantum_bytes": 3000}}


def test_children_of_policy_classes_and_htb_leaves_resolve():
    policies = {"p": {"scheduler": "drr", "buffer": "500p", "classes": {
        "bulk": {"quantum": "1514B", "buffer_size": "60%", "child": {"fq_codel": {"buckets": 64}}},
        "web": {"quantum": "1514B", "buffer_size": "30%", "child": {"red": {"min_th": 5, "max_th": 15}}},
        "rest": {"quantum": "1514B", "buffer_size": "10%", "child": {"sfq": {}}},
    }}}  # fmt: skip
    classes = _bottleneck(_with_queue({"policy": "p"}, policies))["drr"]["classes"]
    assert classes[0]["child"]["fq_codel"]["buckets"] == 64
    assert classes[1]["child"] == {"red": {
        "min_th": 5.0, "max_th": 15.0, "thresholds_in_bytes": False, "max_p": 0.1, "w_q": 0.002,
        "gentle": True, "byte_mode": False, "mean_pkt_bytes": 1000,
    }}  # fmt: skip
    # Without a limit of its own, the child holds the class's buffer: 10 % of 500p.
    assert classes[2]["child"] == {"sfq": {"limit_pkts": 50, "limit_bytes": None, "buckets": 1024, "quantum_bytes": None}}
    # A class without a child resolves as before (no key).
    policies["p"]["classes"]["rest"].pop("child")
    assert "child" not in _bottleneck(_with_queue({"policy": "p"}, policies))["drr"]["classes"][2]
    htb = {"htb": {"classes": {"1:1": {"rate": "100Mbps"}, "1:10": {"parent": "1:1", "rate": "60Mbps", "child": {"fq_codel": {}}}}, "default": "1:10"}}
    assert "fq_codel" in _bottleneck(_with_queue(htb))["htb"]["classes"][1]["child"]


@pytest.mark.parametrize(
    ("queue", "policies", "message"),
    [
        ({"fq_codel": {"target": "100ms", "interval": "50ms"}}, None,
         r"links\[2\]\.queues\.R\.fq_codel: target \(100 ms\) must be below interval \(50 ms\)"),
        ({"fq_codel": {"quantum": "0B"}}, None, r"links\[2\]\.queues\.R\.fq_codel\.quantum: must be greater than 0B"),
        ({"fq_codel": {"target": "5"}}, None, r"links\[2\]\.queues\.R\.fq_codel\.target: missing unit"),
        ({"fq_codel": {"flows": 1024}}, None, r"links\[2\]\.queues\.R\.fq_codel\.flows"),
        ({"sfq": {"buckets": 0}}, None, r"links\[2\]\.queues\.R\.sfq\.buckets"),
        ({"policy": "p"}, {"p": {"classes": {"be": {"transmit_rate": "100%", "buffer_size": "100%",
                                                      "drop_profile": {"high": [[0, 0], [100, 100]]}, "child": {"sfq": {}}}}}},
         r"policies\.p\.classes\.be: give drop_profile \(a FIFO with that profile\) or child, not both"),
        ({"policy": "p"}, {"p": {"classes": {"be": {"transmit_rate": "100%", "buffer_size": "100%",
                                                      "child": {"sfq": {}, "fifo": {}}}}}},
         r"policies\.p\.classes\.be\.child: expected exactly one of: fifo, red, fq_codel, sfq, yaqs \(got fifo, sfq\)"),
        ({"htb": {"classes": {"1:1": {"rate": "100Mbps", "child": {"sfq": {}}}, "1:10": {"parent": "1:1", "rate": "60Mbps"}}}}, None,
         r"links\[2\]\.queues\.R\.htb\.classes\.1:1\.child: '1:1' is an inner class"),
    ],
)  # fmt: skip
def test_bad_per_flow_and_child_queues_name_the_field(queue, policies, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(_with_queue(queue, policies))


def test_validate_exits_2_on_a_bad_child(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(_with_queue({"fq_codel": {"target": "1s"}})))  # JSON is YAML
    assert cli.main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "links[2].queues.R.fq_codel" in err and "must be below interval" in err, err


@needs_engine
def test_fq_codel_bottleneck_runs_and_reports_sojourn_times():
    from alphaqos.engine import simulate

    def run(queue: dict):
        s = _with_queue(queue)
        s["duration"] = "3s"
        s["flows"] = [{"name": "bulk", "tcp": {"from": "A", "to": "D", "cc": "cubic"}}]
        return simulate(load_scenario(s))

    fq = run({"fq_codel": {"target": "5ms", "interval": "100ms", "quantum": "1514B"}})
    fifo = run({"fifo": {"limit": "1000p"}})

    def bottleneck(res):
        return res.queue_summary.filter(res.queue_summary[col.QUEUE] == "R->D").row(0, named=True)

    q, f = bottleneck(fq), bottleneck(fifo)
    # Seconds, as every time column: CoDel keeps a TCP flow's queue near
    # 5 ms; the 1000-packet FIFO lets it fill (up to 120 ms at 100 Mbps).
    assert 0 < q[col.SOJOURN_MEAN] < 0.02 and f[col.SOJOURN_MEAN] > 0.05, (q, f)
    assert q[col.SOJOURN_P99] >= q[col.SOJOURN_MEAN]
    assert q[col.DROP_QUEUED_PKTS] > 0 and f[col.DROP_QUEUED_PKTS] == 0
    assert q[col.ENQ_PKTS] == q[col.DEQ_PKTS] + q[col.DROP_QUEUED_PKTS] + q["backlog_pkts"]
