"""Policy schedulers (strict priority, WRR, DRR, MDRR), three-colour
policers (srTCM, trTCM) and drop profiles (Cisco WRED, RIO, GRED): the
schema accepts each form and resolves it to the engine configuration of
docs/engine-config.md, rejects what does not fit with the field named, and
short runs through the engine show each mechanism's behaviour."""

from __future__ import annotations

import copy
import importlib.util
import json

import pytest

from alphaqos import ScenarioError, cli, load_scenario, resolve

needs_engine = pytest.mark.skipif(
    importlib.util.find_spec("alphaqos._core") is None,
    reason="the engine is not built (make build)",
)

# S1 (class lo) and S2 (class hi) send through router R to D over a 1 Gbps
# link whose egress at R is the policy's.
BASE_POLICY = {
    "buffer": "1000p",
    "classes": {"lo": {"buffer_size": "50%"}, "hi": {"buffer_size": "50%"}},
    "filter": [
        {"name": "lo", "from": {"source": "10.0.1.1/32"}, "then": {"class": "lo"}},
        {"name": "hi", "from": {"source": "10.0.2.1/32"}, "then": {"class": "hi"}},
    ],
}


def _scenario(policy: dict, flows: list[dict] | None = None, duration: str = "2s") -> dict:
    return {
        "name": "sched",
        "duration": duration,
        "policies": {"p": policy},
        "nodes": {
            "S1": {"address": "10.0.1.1"},
            "S2": {"address": "10.0.2.1"},
            "D": {"address": "10.0.3.1"},
            "R": {"router": True, "policy": "p"},
        },
        "links": [
            {"between": ["S1", "R"], "rate": "10Gbps", "delay": "0.1ms"},
            {"between": ["S2", "R"], "rate": "10Gbps", "delay": "0.1ms"},
            {"between": ["R", "D"], "rate": "1Gbps", "delay": "0.1ms", "queues": {"R": {"policy": "p"}}},
        ],
        "flows": flows if flows is not None else [_udp("lo", "S1", "1Gbps"), _udp("hi", "S2", "1Gbps")],
    }


def _udp(name: str, src: str, rate: str, size: str = "1500B") -> dict:
    return {"name": name, "udp": {"from": src, "to": "D", "rate": rate, "size": size}}


def _policy(scheduler: str | None = None, lo: dict | None = None, hi: dict | None = None, **more) -> dict:
    policy = copy.deepcopy(BASE_POLICY)
    if scheduler is not None:
        policy["scheduler"] = scheduler
    policy["classes"]["lo"].update(lo or {})
    policy["classes"]["hi"].update(hi or {})
    policy.update(more)
    return policy


def _egress(policy: dict) -> dict:
    return resolve(load_scenario(_scenario(policy)))["links"][2]["queue_ab"]


def _filter(policy: dict) -> list[dict]:
    config = resolve(load_scenario(_scenario(policy)))
    return next(n for n in config["nodes"] if n["name"] == "R")["filter"]


# --- resolution ---------------------------------------------------------------


def test_each_scheduler_resolves_to_its_engine_queue():
    assert _egress(_policy("strict-priority", hi={"priority": "strict-high"})) == {
        "strict_priority": {"buffer_pkts": 1000, "buffer_bytes": None, "classes": [
            {"name": "lo", "priority": 0, "buffer_percent": 50.0, "drop_profile": None},
            {"name": "hi", "priority": 4, "buffer_percent": 50.0, "drop_profile": None},
        ]},
    }  # fmt: skip
    wrr = _egress(_policy("wrr", lo={"weight": 1}, hi={"weight": 3}))["wrr"]["classes"]
    assert [(c["name"], c["weight"]) for c in wrr] == [("lo", 1), ("hi", 3)]
    drr = _egress(_policy("drr", lo={"quantum": "1514B"}, hi={"quantum": "3KB"}))["drr"]["classes"]
    assert [c["quantum_bytes"] for c in drr] == [1514, 3000]
    mdrr = _egress(_policy("mdrr", lo={"weight": 2}, hi={"weight": 1, "low_latency": "alternate-priority"}))
    assert [(c["weight"], c["low_latency"]) for c in mdrr["mdrr"]["classes"]] == [(2, None), (1, "alternate")]
    # The default stays the Junos egress of before.
    junos = _egress(_policy(lo={"transmit_rate": "40%"}, hi={"transmit_rate": "60%", "priority": "high"}))
    lo, hi = junos["junos"]["classes"]
    assert (lo["priority"], hi["priority"], hi["transmit_rate_percent"], hi["exact"]) == ("low", "high", 60.0, False)


def test_three_colour_policers_resolve_with_their_actions():
    policy = _policy("wrr", lo={"weight": 1}, hi={"weight": 1})
    policy["filter"][0]["then"]["policer"] = {
        "srtcm": {"cir": "100Mbps", "cbs": "15KB", "ebs": "30KB"}, "yellow": {"class": "hi"}, "red": "loss_priority_high",
    }  # fmt: skip
    policy["filter"][1]["then"]["policer"] = {
        "trtcm": {"cir": "100Mbps", "cbs": "15KB", "pir": "200Mbps", "pbs": "30KB"}, "color_aware": True,
    }  # fmt: skip
    lo, hi = _filter(policy)
    assert lo["policer"] == {
        "srtcm": {"cir_bps": 100_000_000, "cbs_bytes": 15_000, "ebs_bytes": 30_000},
        "color_aware": False, "yellow": {"fclass": 1}, "red": "loss_priority_high",
    }  # fmt: skip
    assert hi["policer"] == {
        "trtcm": {"cir_bps": 100_000_000, "cbs_bytes": 15_000, "pir_bps": 200_000_000, "pbs_bytes": 30_000},
        "color_aware": True, "yellow": "transmit", "red": "discard",
    }  # fmt: skip


RED_CURVE = {"min_th": 10, "max_th": 30, "max_p": 0.5}
RED_ENGINE = {"min_th": 10.0, "max_th": 30.0, "thresholds_in_bytes": False, "max_p": 0.5, "w_q": 0.002,
              "gentle": True, "byte_mode": False, "mean_pkt_bytes": 1000}  # fmt: skip


@pytest.mark.parametrize(
    ("profile", "engine"),
    [
        ({"low": [[50, 0], [100, 20]], "high": [[0, 0], [100, 100]]},
         {"curves": {"green": [[50, 0], [100, 20]], "yellow": None, "red": [[0, 0], [100, 100]]}}),
        ({"wred": {"exponential_weighting_constant": 5, "green": {"min_th": 40, "max_th": 80},
                   "red": {"min_th": 10, "max_th": 30, "mark_prob_denominator": 4}}},
         {"cisco_wred": {"exp_weight": 5, "per_color": {
             "green": {"min_th": 40, "max_th": 80, "max_p": 0.1}, "yellow": None,
             "red": {"min_th": 10, "max_th": 30, "max_p": 0.25}}}}),
        ({"rio": {"in": {"min_th": 40, "max_th": 70, "max_p": 0.5}, "out": {**RED_CURVE, "min_th": "10KB", "max_th": "30KB"}}},
         {"rio": {"in_profile": {**RED_ENGINE, "min_th": 40.0, "max_th": 70.0},
                  "out_profile": {**RED_ENGINE, "min_th": 10_000.0, "max_th": 30_000.0, "thresholds_in_bytes": True}}}),
        ({"gred": {"red": RED_CURVE}}, {"gred": {"green": None, "yellow": None, "red": RED_ENGINE}}),
    ],
    ids=["junos-curves", "cisco-wred", "rio", "gred"],
)  # fmt: skip
def test_each_drop_profile_form_resolves(profile, engine):
    egress = _egress(_policy("drr", lo={"quantum": "1500B", "drop_profile": profile}, hi={"quantum": "1500B"}))
    assert egress["drr"]["classes"][0]["drop_profile"] == engine


def test_a_policy_with_every_new_form_writes_back_as_yaml_and_reads_the_same(tmp_path):
    policy = _policy("mdrr", lo={"weight": 3, "drop_profile": {"wred": {"red": {"min_th": 5, "max_th": 20}}}},
                     hi={"weight": 1, "low_latency": "strict-priority"})  # fmt: skip
    policy["filter"][0]["then"]["policer"] = {"trtcm": {"cir": "1Mbps", "cbs": "3KB", "pir": "2Mbps", "pbs": "6KB"}, "red": "transmit"}
    scenario = load_scenario(_scenario(policy))
    path = tmp_path / "resolved.yaml"
    path.write_text(scenario.to_yaml())
    assert resolve(load_scenario(path)) == resolve(scenario)


# --- errors -------------------------------------------------------------------


def _broken_policy(edit) -> dict:
    policy = _policy("wrr", lo={"weight": 1}, hi={"weight": 1})
    edit(policy)
    return _scenario(policy)


def _set(path: list, value):
    def edit(policy):
        target = policy
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _both(first, second):
    def edit(policy):
        first(policy)
        second(policy)

    return edit


def _policer(p: dict):
    return _set(["filter", 0, "then", "policer"], p)


SRTCM = {"cir": "100Mbps", "cbs": "15KB", "ebs": "15KB"}


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        (_set(["scheduler"], "wfq"), "policies.p.scheduler", "'mdrr'"),
        (_set(["classes", "lo", "priority"], "high"), "policies.p.classes.lo.priority",
         "class 'lo': priority is not used by the wrr scheduler"),
        (_set(["classes", "lo", "transmit_rate"], "40%"), "policies.p.classes.lo.transmit_rate", "not used by the wrr"),
        (_set(["classes", "hi", "weight"], None), "policies.p.classes.hi", "class 'hi': the wrr scheduler needs weight"),
        (_set(["classes", "hi", "weight"], 0), "policies.p.classes.hi.weight", "greater than or equal to 1"),
        (_set(["scheduler"], "junos"), "policies.p.classes.lo.weight", "weight is not used by the junos scheduler"),
        (_set(["scheduler"], "drr"), "policies.p.classes.lo", "the drr scheduler needs quantum"),
        (_both(_set(["scheduler"], "mdrr"), _set(["classes", "hi", "weight"], 2049)), "policies.p.classes.hi.weight",
         "an MDRR weight is at most 2048"),
        (_set(["classes", "hi", "weight"], 2**32), "policies.p.classes.hi.weight", "less than or equal to 4294967295"),
        (_set(["classes", "lo", "quantum"], "0B"), "policies.p.classes.lo.quantum", "greater than 0B"),
        (_set(["classes", "lo", "low_latency"], "strict-priority"), "policies.p.classes.lo.low_latency", "not used by the wrr"),
        (_set(["classes", "lo", "low_latency"], "strict"), "policies.p.classes.lo.low_latency", "'strict-priority'"),
        (_policer({"trtcm": {"cir": "200Mbps", "cbs": "15KB", "pir": "100Mbps", "pbs": "15KB"}}),
         "policies.p.filter[0].then.policer.trtcm", "pir (100Mbps) must be at least cir (200Mbps)"),
        (_policer({"trtcm": {"cir": "1Mbps", "cbs": "15KB", "pir": "2Mbps", "pbs": "0B"}}),
         "policies.p.filter[0].then.policer.trtcm.pbs", "greater than 0B"),
        (_policer({"srtcm": {**SRTCM, "cbs": "0B", "ebs": "0B"}}), "policies.p.filter[0].then.policer.srtcm",
         "at least one of cbs and ebs"),
        (_policer({"srtcm": {**SRTCM, "cir": "0bps"}}), "policies.p.filter[0].then.policer.srtcm.cir", "greater than"),
        (_policer({"srtcm": SRTCM, "rate": "1Gbps"}), "policies.p.filter[0].then.policer", "exactly one meter"),
        (_policer({"rate": "1Gbps", "burst": "31KB", "out_of_profile": "discard", "yellow": "discard"}),
         "policies.p.filter[0].then.policer", "yellow: only for the three-colour meters"),
        (_policer({"rate": "1Gbps", "out_of_profile": "discard"}), "policies.p.filter[0].then.policer", "missing: burst"),
        (_policer({"srtcm": SRTCM, "red": {"class": "gold"}}), "policies.p", "unknown class 'gold'"),
        (_policer({"srtcm": SRTCM, "yellow": "drop"}), "policies.p.filter[0].then.policer.yellow", "transmit"),
        (_set(["classes", "lo", "drop_profile"], {"low": [[0, 0]], "wred": {"red": {"min_th": 1, "max_th": 2}}}),
         "policies.p.classes.lo.drop_profile", "exactly one drop profile form"),
        (_set(["classes", "lo", "drop_profile"], {"high": [[50, 10], [40, 20]]}),
         "policies.p.classes.lo.drop_profile.high", "point 1: fill levels must increase"),
        (_set(["classes", "lo", "drop_profile"], {"low": [[50, 120]]}),
         "policies.p.classes.lo.drop_profile.low", "percentages in [0, 100]"),
        (_set(["classes", "lo", "drop_profile"], {"wred": {"red": {"min_th": 20, "max_th": 10}}}),
         "policies.p.classes.lo.drop_profile.wred.red", "min_th (20) must be below max_th (10)"),
        (_set(["classes", "lo", "drop_profile"], {"wred": {"red": {"min_th": 1, "max_th": 2, "max_p": 0.1, "mark_prob_denominator": 10}}}),
         "policies.p.classes.lo.drop_profile.wred.red", "not both"),
        (_set(["classes", "lo", "drop_profile"], {"wred": {}}), "policies.p.classes.lo.drop_profile", "at least one of green"),
        (_set(["classes", "lo", "drop_profile"], {"rio": {"in": RED_CURVE}}), "policies.p.classes.lo.drop_profile.rio.out", "required"),
        (_set(["classes", "lo", "drop_profile"], {"gred": {"red": {"min_th": 1, "max_th": "3KB"}}}),
         "policies.p.classes.lo.drop_profile.gred.red", "both be packet counts or both be sizes"),
        (_set(["classes", "lo", "drop_profile"], {"gred": {"green": RED_CURVE, "red": {**RED_CURVE, "w_q": 0.01}}}),
         "policies.p.classes.lo.drop_profile.gred", "red: the colours share one average"),
    ],
)  # fmt: skip
def test_bad_policies_name_the_field(edit, where, message):
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_broken_policy(edit))
    issues = [str(issue) for issue in caught.value.issues]
    assert any(issue.startswith(where) and message in issue for issue in issues), issues


def test_a_strict_priority_low_latency_queue_needs_no_weight():
    """Cisco's strict LLQ is served whenever it holds a packet: its weight
    (quantum) is never used, so none is asked for; the engine is given 1."""
    mdrr = _egress(_policy("mdrr", lo={"weight": 2}, hi={"low_latency": "strict-priority"}))
    assert [(c["weight"], c["low_latency"]) for c in mdrr["mdrr"]["classes"]] == [(2, None), (1, "strict")]
    # In alternate-priority mode the weight sets the LLQ's turn: still required.
    with pytest.raises(ScenarioError, match=r"policies\.p\.classes\.hi: class 'hi': the mdrr scheduler needs weight"):
        load_scenario(_scenario(_policy("mdrr", lo={"weight": 2}, hi={"low_latency": "alternate-priority"})))


def test_mdrr_allows_one_low_latency_queue():
    policy = _policy("mdrr", lo={"weight": 1, "low_latency": "strict-priority"}, hi={"weight": 1, "low_latency": "alternate-priority"})
    with pytest.raises(ScenarioError, match=r"policies\.p\.classes\.hi\.low_latency: only one low-latency queue"):
        load_scenario(_scenario(policy))


def test_validate_exits_2_naming_the_class_and_field(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    policy = _policy(lo={"transmit_rate": "40%", "weight": 2}, hi={"transmit_rate": "60%"})
    path.write_text(json.dumps(_scenario(policy)))  # JSON is YAML
    assert cli.main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "policies.p.classes.lo.weight" in err and "not used by the junos scheduler" in err, err


# --- through the engine -------------------------------------------------------


def _run(scenario: dict) -> dict[str, dict[str, list]]:
    """The engine's raw tables (the filter counters are not in Results)."""
    from alphaqos import _core

    sim = _core.Simulation(json.dumps(resolve(load_scenario(scenario))))
    sim.advance(sim.duration_ns)
    return sim.results()


def _flows(tables) -> dict[str, dict]:
    fs = tables["flow_summary"]
    return {name: {k: fs[k][i] for k in fs} for i, name in enumerate(fs["flow"])}


@needs_engine
def test_wrr_weights_split_the_link_3_to_1():
    flows = _flows(_run(_scenario(_policy("wrr", lo={"weight": 1}, hi={"weight": 3}))))
    assert flows["hi"]["rx_bytes"] / flows["lo"]["rx_bytes"] == pytest.approx(3, rel=0.02)


@needs_engine
def test_drr_shares_bytes_not_packets():
    # Equal quanta, 1500 B against 500 B packets: equal bytes, three times the packets.
    flows = [_udp("lo", "S1", "1Gbps", "1500B"), _udp("hi", "S2", "1Gbps", "500B")]
    res = _flows(_run(_scenario(_policy("drr", lo={"quantum": "1500B"}, hi={"quantum": "1500B"}), flows)))
    assert res["hi"]["rx_bytes"] / res["lo"]["rx_bytes"] == pytest.approx(1, rel=0.02)
    assert res["hi"]["rx_pkts"] / res["lo"]["rx_pkts"] == pytest.approx(3, rel=0.02)


@needs_engine
def test_strict_priority_starves_the_low_class():
    flows = [_udp("lo", "S1", "500Mbps"), _udp("hi", "S2", "1Gbps")]
    res = _flows(_run(_scenario(_policy("strict-priority", hi={"priority": "high"}), flows)))
    assert res["hi"]["rx_bytes"] > 230e6  # about the whole link for 2 s
    assert res["lo"]["rx_pkts"] < 0.001 * res["hi"]["rx_pkts"], res["lo"]


@needs_engine
def test_mdrr_serves_the_low_latency_queue_first_and_splits_the_rest_by_weight():
    voice = {"name": "voice", "udp": {"from": "S3", "to": "D", "rate": "100Mbps", "size": "200B"}}
    policy = _policy("mdrr", lo={"weight": 1, "buffer_size": "40%"}, hi={"weight": 3, "buffer_size": "40%"})
    policy["classes"]["voice"] = {"weight": 1, "buffer_size": "20%", "low_latency": "strict-priority"}
    policy["filter"].append({"name": "voice", "from": {"source": "10.0.4.1/32"}, "then": {"class": "voice"}})
    scenario = _scenario(policy, [_udp("lo", "S1", "1Gbps"), _udp("hi", "S2", "1Gbps"), voice])
    scenario["nodes"]["S3"] = {"address": "10.0.4.1"}
    scenario["links"].append({"between": ["S3", "R"], "rate": "10Gbps", "delay": "0.1ms"})
    res = _flows(_run(scenario))
    assert res["voice"]["drop_pkts"] == 0
    # Two links' propagation (0.2 ms) plus at most a packet or two on the wire,
    # while the backlogged classes wait milliseconds.
    assert res["voice"]["delay_max_ns"] < 0.2e6 + 30_000
    assert res["lo"]["delay_mean_ns"] > 2e6
    # Quanta from the 1500 B MTU: 1500 and 1500 + 2 * 512 bytes.
    assert res["hi"]["rx_bytes"] / res["lo"]["rx_bytes"] == pytest.approx(2524 / 1500, rel=0.02)


@needs_engine
@pytest.mark.parametrize(
    ("meter", "shares"),
    [
        # srTCM under a steady overload: C never fills, so E never refills:
        # a third green (CIR over the offered rate), yellow only the initial EBS.
        ({"srtcm": {"cir": "100Mbps", "cbs": "15KB", "ebs": "15KB"}}, (1 / 3, 0.0, 2 / 3)),
        # trTCM: green up to CIR, yellow up to PIR, red above.
        ({"trtcm": {"cir": "100Mbps", "cbs": "15KB", "pir": "200Mbps", "pbs": "15KB"}}, (1 / 3, 1 / 3, 1 / 3)),
    ],
    ids=["srtcm", "trtcm"],
)
def test_three_colour_policers_colour_a_flow(meter, shares):
    policy = _policy("wrr", lo={"weight": 1}, hi={"weight": 1})
    policy["filter"][0]["then"]["policer"] = {**meter, "yellow": "transmit", "red": "discard"}
    tables = _run(_scenario(policy, [_udp("lo", "S1", "300Mbps")], duration="1s"))
    f = tables["filter"]
    i = f["term"].index("lo")
    matched = f["matched_pkts"][i]
    colours = [f[k][i] / matched for k in ("green_pkts", "yellow_pkts", "red_pkts")]
    assert colours == pytest.approx(shares, abs=0.01)
    assert f["discarded_pkts"][i] == f["red_pkts"][i]
    assert f["out_of_profile_pkts"][i] == f["yellow_pkts"][i] + f["red_pkts"][i]
    assert _flows(tables)["lo"]["drop_pkts"] >= f["red_pkts"][i]


RED_FIRST = {
    "wred": {"wred": {"green": {"min_th": 40, "max_th": 80, "mark_prob_denominator": 10},
                      "red": {"min_th": 10, "max_th": 30, "max_p": 0.5}}},
    "rio": {"rio": {"in": {"min_th": 40, "max_th": 80, "max_p": 0.1}, "out": {"min_th": 10, "max_th": 30, "max_p": 0.5}}},
    "gred": {"gred": {"green": {"min_th": 40, "max_th": 80, "max_p": 0.1}, "red": {"min_th": 10, "max_th": 30, "max_p": 0.5}}},
}  # fmt: skip


@needs_engine
@pytest.mark.parametrize("form", list(RED_FIRST))
def test_drop_profiles_drop_red_before_green(form):
    # Both flows in class lo, 600 Mbps each on the 1 Gbps link; the policer
    # colours all of "red" red (a 1 kbps rate keeps no tokens to spare).
    policy = _policy("wrr", lo={"weight": 1, "buffer_size": "100%", "drop_profile": RED_FIRST[form]}, hi={"weight": 1, "buffer_size": "0%"})
    policy["filter"] = [
        {"name": "red", "from": {"source": "10.0.2.1/32"},
         "then": {"class": "lo", "policer": {"rate": "1kbps", "burst": "1500B", "out_of_profile": "loss_priority_high"}}},
    ]  # fmt: skip
    res = _flows(_run(_scenario(policy, [_udp("green", "S1", "600Mbps"), _udp("red", "S2", "600Mbps")], duration="1s")))
    assert res["green"]["drop_pkts"] == 0, res["green"]
    assert res["red"]["drop_pkts"] > 0.25 * res["red"]["tx_pkts"], res["red"]
