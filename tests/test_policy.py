"""QoS policies in scenarios: resolution to the engine's filter terms and
Junos-style egress, and the errors a mistyped policy gives."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from alphaqos import ScenarioError, load_scenario, resolve

POLICY = {
    "buffer": "10MB",
    "classes": {
        "beta": {"transmit_rate": "40%", "buffer_size": "40%", "priority": "medium-low"},
        "alpha": {"transmit_rate": "60%", "buffer_size": "50%", "priority": "medium-high",
                  "drop_profile": {"high": [[0, 0], [100, 100]]}},
        "ss": {"transmit_rate": "remainder", "buffer_size": "10%", "priority": "low"},
    },
    "filter": [
        {"name": "alpha", "from": {"source": "10.0.0.1/32", "destination": "10.0.0.0/24", "protocol": "tcp"},
         "then": {"class": "alpha", "policer": {"rate": "1Gbps", "burst": "31KB", "out_of_profile": {"class": "ss"}}}},
        {"name": "drop-udp", "from": {"protocol": "udp"}, "then": {"discard": True}},
    ],
}  # fmt: skip


def _scenario(**changes) -> dict:
    scenario = {
        "name": "policy",
        "duration": "1s",
        "policies": {"p": copy.deepcopy(POLICY)},
        "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}, "R": {"router": True, "policy": "p"}},
        "links": [
            {"between": ["A", "R"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["R", "B"], "rate": "1Gbps", "delay": "1ms", "queues": {"R": {"policy": "p"}}},
        ],
        "flows": [{"name": "t", "tcp": {"from": "A", "to": "B", "cc": "newreno"}}],
    }
    scenario.update(changes)
    return scenario


def test_policy_resolves_to_filter_terms_and_a_junos_egress():
    config = resolve(load_scenario(_scenario()))
    router = next(n for n in config["nodes"] if n["name"] == "R")
    alpha, drop = router["filter"]
    assert alpha == {
        "name": "alpha", "src": "10.0.0.1/32", "dst": "10.0.0.0/24", "proto": 6, "fclass": 1, "discard": False,
        "policer": {"rate_bps": 10**9, "burst_bytes": 31_000, "out_of_profile": {"fclass": 2}},
        "src_port": None, "dst_port": None, "dscp": None, "loss_priority": None,
    }  # fmt: skip
    assert drop["proto"] == 17 and drop["discard"] is True and drop["fclass"] is None
    egress = config["links"][1]["queue_ab"]["junos"]
    assert egress["buffer_bytes"] == 10_000_000
    beta, a, ss = egress["classes"]
    assert (beta["transmit_rate_percent"], beta["buffer_percent"], beta["priority"]) == (40.0, 40.0, "medium-low")
    assert a["drop_profile"] == {"curves": {"green": None, "yellow": None, "red": [[0, 0], [100, 100]]}}
    assert beta["drop_profile"] is None
    assert ss["transmit_rate_remainder"] is True and ss["transmit_rate_percent"] is None
    # The reverse direction keeps the default FIFO.
    assert config["links"][1]["queue_ba"] == {"fifo": {"limit_pkts": 1000, "limit_bytes": None}}


def _broken(path: list, value) -> dict:
    scenario = _scenario()
    target = scenario
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return scenario


@pytest.mark.parametrize(
    ("path", "value", "where", "message"),
    [
        (["nodes", "R", "policy"], "q", "nodes.R.policy", "unknown policy 'q'"),
        (["nodes", "A", "policy"], "p", "nodes.A.policy", "only routers"),
        (["links", 1, "queues"], {"R": {"policy": "zz"}}, "links[1].queues.R.policy", "unknown policy 'zz'"),
        (["policies", "p", "filter", 0, "then", "class"], "gold", "policies.p.filter[0].then.class", "unknown class 'gold'"),
        (["policies", "p", "filter", 0, "then", "policer", "out_of_profile"], {"class": "gold"},
         "policies.p.filter[0].then.policer.out_of_profile.class", "unknown class 'gold'"),
        (["policies", "p", "classes", "beta", "buffer_size"], "60%", "policies.p", "more than 100%"),
        (["policies", "p", "classes", "beta", "transmit_rate"], "fast", "policies.p.classes.beta.transmit_rate", "percentage"),
        (["policies", "p", "filter", 0, "from", "source"], "10.0.0/24", "policies.p.filter[0].from.source", "IPv4 prefix"),
        (["policies", "p", "classes", "beta", "priority"], "urgent", "policies.p.classes.beta.priority", "medium-low"),
    ],
)
def test_bad_policies_name_the_field(path, value, where, message):
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_broken(path, value))
    text = str(caught.value)
    assert text.startswith(where), text
    assert message in text, text


def test_a_policy_scenario_writes_back_as_yaml_and_reads_the_same(tmp_path, recwarn):
    scenario = load_scenario(_scenario())
    path = tmp_path / "resolved.yaml"
    path.write_text(scenario.to_yaml())
    assert resolve(load_scenario(path)) == resolve(scenario)
    assert not [w for w in recwarn if "serializ" in str(w.message).lower()], "clean serialization"


# --- host shaping with HTB (second source document) --------------------------


def _shaped(htb: dict) -> dict:
    return {
        "name": "htb",
        "duration": "3s",
        "nodes": {"H": {"address": "10.10.200.20"}, "R": {"router": True}, "D": {"address": "10.10.200.30"}},
        "links": [
            {"between": ["H", "R"], "rate": "10Gbps", "delay": "0.1ms", "queues": {"H": {"htb": htb}}},
            {"between": ["R", "D"], "rate": "10Gbps", "delay": "0.1ms"},
        ],
        "flows": [{"name": "flood", "udp": {"from": "H", "to": "D", "rate": "2Gbps", "size": "1500B"}}],
    }


# Zurawski's shaper: a 1 Gbit/s circuit, the host shaped to 90% of it.
HTB = {
    "classes": {"1:1": {"rate": "900Mbps", "ceil": "900Mbps"}, "1:10": {"parent": "1:1", "rate": "900Mbps"}},
    "filters": [{"src": "10.10.200.20/32", "class": "1:10"}],
}


def test_htb_shapes_a_host_to_its_circuit_rate():
    pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")
    import alphaqos

    res = alphaqos.run(_shaped(HTB))
    rx = res.udp.filter(res.udp["time"] > 1)["rx_rate_bps"].mean()
    assert rx == pytest.approx(900e6, rel=0.01)
    assert "H->R/1:10" in res.summary["queues"]


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        ({"classes": {"1:10": {"parent": "1:1", "rate": "1Gbps"}, "1:1": {"rate": "1Gbps"}}}, "classes.1:10.parent", "declared before"),
        ({"filters": [{"src": "10.10.200.20/32", "class": "1:1"}]}, "filters[0].class", "not a leaf"),
        ({"default": "9:9"}, "default", "not a leaf"),
        ({"classes": {"1:1": {"rate": "1Gbps", "ceil": "500Mbps"}}}, "classes.1:1.ceil", "must be >= rate"),
    ],
)
def test_bad_htb_names_the_field(change, where, message):
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_shaped({**HTB, **change}))
    text = str(caught.value)
    assert text.startswith(f"links[0].queues.H.htb.{where}"), text
    assert message in text, text


# --- policies kept in files of their own ------------------------------------------


def _write_split(tmp_path, policy_text: str) -> Path:
    """A scenario in tmp_path/scenarios that takes policy p from ../policies/p.yaml."""
    import yaml

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "p.yaml").write_text(policy_text)
    (tmp_path / "scenarios").mkdir()
    scenario = _scenario(policies={"p": "../policies/p.yaml"})
    path = tmp_path / "scenarios" / "s.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


def test_a_policy_file_resolves_exactly_as_the_same_policy_inline(tmp_path):
    import yaml

    path = _write_split(tmp_path, yaml.safe_dump(POLICY, sort_keys=False))
    assert resolve(load_scenario(path)) == resolve(load_scenario(_scenario()))
    # A run directory's scenario.yaml holds the policy inline: self-contained.
    assert "policies/p.yaml" not in load_scenario(path).resolved().to_yaml()


def test_an_error_inside_a_policy_file_names_that_file_and_line(tmp_path):
    text = "buffer: 10MB\nclasses:\n  beta: {transmit_rate: 40%, buffer_size: 40%, priority: urgent}\n"
    path = _write_split(tmp_path, text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    message = str(err.value)
    assert "p.yaml" in message and ":3" in message, message
    assert "policies.p.classes.beta.priority" in message


def test_a_missing_policy_file_is_named_and_validate_exits_2(tmp_path, capsys):
    from alphaqos import cli

    path = _write_split(tmp_path, "classes: {}\n")
    (tmp_path / "policies" / "p.yaml").unlink()
    assert cli.main(["validate", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "cannot read policy file" in err and "p.yaml" in err


def test_a_filter_terms_error_points_at_the_terms_line(tmp_path):
    import yaml

    scenario = _scenario()
    scenario["policies"]["p"]["filter"][1]["then"] = {"class": "gold"}
    path = tmp_path / "s.yaml"
    text = yaml.safe_dump(scenario, sort_keys=False)
    path.write_text(text)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    line = text[: text.index("class: gold")].count("\n") + 1
    assert str(caught.value) == (
        f"{path}:{line}: policies.p.filter[1].then.class: filter term 'drop-udp': unknown class 'gold' "
        "(classes: beta, alpha, ss)"
    )


# --- a policy read out of a scenario file -------------------------------------------

EXP1_2Q = Path(__file__).resolve().parents[1] / "scenarios" / "yan2013" / "exp1-2queues.yaml"


def test_a_scenario_can_take_its_policy_from_another_scenario(tmp_path):
    import yaml

    inline = load_scenario(EXP1_2Q)
    data = yaml.safe_load(EXP1_2Q.read_text())
    data["policies"] = {"two-queues": f"{EXP1_2Q}#two-queues"}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert resolve(load_scenario(path)) == resolve(inline)
    # ... and from a policy file that scenario names, relative to that scenario.
    (tmp_path / "pol.yaml").write_text(yaml.safe_dump(yaml.safe_load(EXP1_2Q.read_text())["policies"]["two-queues"], sort_keys=False))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({**data, "policies": {"two-queues": "pol.yaml"}}, sort_keys=False))
    data["policies"] = {"two-queues": "b.yaml#two-queues"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert resolve(load_scenario(path)) == resolve(inline)


def test_a_policy_reference_names_the_scenario_file_and_its_policies(tmp_path):
    from alphaqos.scenario import load_policy_file

    with pytest.raises(ScenarioError) as caught:
        load_policy_file(f"{EXP1_2Q}#three-queues")
    (issue,) = caught.value.issues
    assert str(issue).startswith(f"{EXP1_2Q}:")
    assert issue.path == "policies" and issue.message == "no policy 'three-queues' in this scenario (policies: two-queues)"
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXP1_2Q.read_text().replace("priority: medium-low", "priority: urgent"))
    with pytest.raises(ScenarioError) as caught:
        load_policy_file(f"{bad}#two-queues")
    line = bad.read_text()[: bad.read_text().index("priority: urgent")].count("\n") + 1
    assert str(caught.value).startswith(f"{bad}:{line}: policies.two-queues.classes.beta.priority: expected")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"clas": "ss"}, ["policies.p.filter[0].then.policer.out_of_profile.clas: unknown key 'clas': "
                          "did you mean 'class'? (expected one of: class)"]),
        ("dscard", ["policies.p.filter[0].then.policer.out_of_profile: expected 'discard' or "
                    "'loss_priority_high', got 'dscard'"]),
    ],
)  # fmt: skip
def test_a_value_of_several_forms_is_judged_by_the_form_written(value, expected):
    """``out_of_profile`` is a word or ``{class: X}``: a mapping gets the
    mapping's errors only, a word the words', at the value's own path (no
    pydantic union tags such as ``ClassRef`` or ``literal[...]``)."""
    scenario = _scenario()
    scenario["policies"]["p"]["filter"][0]["then"]["policer"]["out_of_profile"] = value
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario)
    assert [str(issue) for issue in caught.value.issues] == expected
