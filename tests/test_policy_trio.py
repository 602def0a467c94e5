"""The MX Series Trio options of the junos scheduler (``excess:
proportional``, ``excess_rate``, ``excess_priority``, ``meter_window``,
``buffer_size: {temporal: ...}``): the schema resolves them to the engine
configuration, rejects what does not fit with the field named, and a short
run through the engine shares the excess in proportion to the transmit
rates where the document's priority model shares it evenly."""

from __future__ import annotations

import copy
import importlib.util
import json

import pytest

from alphaqos import ScenarioError, load_scenario, resolve
from alphaqos.provision.model import load_policy
from test_policy_schedulers import _scenario as scenario_with

needs_engine = pytest.mark.skipif(
    importlib.util.find_spec("alphaqos._core") is None,
    reason="the engine is not built (make build)",
)

# S1 (class lo) and S2 (class hi) send 1 Gbps each through router R to D
# over a 1 Gbps link whose egress at R is the policy's (the scenario of
# test_policy_schedulers.py).
POLICY = {
    "buffer": "1000p",
    "classes": {
        "lo": {"transmit_rate": "10%", "buffer_size": "50%", "priority": "low"},
        "hi": {"transmit_rate": "30%", "buffer_size": "50%", "priority": "low"},
    },
    "filter": [
        {"name": "lo", "from": {"source": "10.0.1.1/32"}, "then": {"class": "lo"}},
        {"name": "hi", "from": {"source": "10.0.2.1/32"}, "then": {"class": "hi"}},
    ],
}


def _scenario(policy: dict) -> dict:
    return scenario_with(policy, duration="0.3s")


def _policy(excess: str | None = None, lo: dict | None = None, hi: dict | None = None) -> dict:
    policy = copy.deepcopy(POLICY)
    if excess is not None:
        policy["excess"] = excess
    policy["classes"]["lo"].update(lo or {})
    policy["classes"]["hi"].update(hi or {})
    return policy


def _egress(policy: dict) -> dict:
    return resolve(load_scenario(_scenario(policy)))["links"][2]["queue_ab"]["junos"]


def test_trio_options_resolve_to_the_engine_queue():
    junos = _egress(_policy(
        "proportional",
        lo={"excess_rate": "25%", "excess_priority": "high", "meter_window": "1ms"},
        hi={"buffer_size": {"temporal": "100ms"}, "excess_priority": "none", "burst": "3KB"},
    ))  # fmt: skip
    lo, hi = junos["classes"]
    assert junos["excess"] == "proportional"
    assert (lo["excess_rate_percent"], lo["excess_priority"], lo["meter_window_ns"], lo["burst_bytes"]) == (25.0, "high", 1_000_000, None)
    assert (lo["buffer_percent"], "buffer_temporal_ns" in lo) == (50.0, False)
    assert (hi["buffer_temporal_ns"], "buffer_percent" in hi, hi["excess_priority"], hi["burst_bytes"]) == (100_000_000, False, "none", 3000)
    # Unset, nothing changes: no excess key, the percent buffer.
    plain = _egress(_policy())
    assert "excess" not in plain and plain["classes"][0]["buffer_percent"] == 50.0


def test_a_trio_policy_writes_back_and_reads_the_same():
    policy = _policy("proportional", lo={"meter_window": "1ms", "excess_rate": "5%"}, hi={"buffer_size": {"temporal": "50ms"}})
    scenario = load_scenario(_scenario(policy))
    dumped = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped["policies"]["p"]["classes"]["hi"]["buffer_size"] == {"temporal": "50ms"}
    assert resolve(load_scenario(dumped)) == resolve(scenario)


@pytest.mark.parametrize(
    ("policy", "where", "message"),
    [
        (_policy(lo={"excess_rate": "5%"}), "policies.p.classes.lo.excess_rate", "set the policy's excess: proportional"),
        (_policy("equal"), "policies.p.excess", "'priority' or 'proportional'"),
        (_policy(lo={"excess_priority": "strict-high"}), "policies.p.classes.lo.excess_priority", "'none'"),
        (_policy(lo={"burst": "3KB", "meter_window": "1ms"}), "policies.p.classes.lo", "burst (the meter depth) or meter_window"),
        (_policy(lo={"meter_window": "0s"}), "policies.p.classes.lo.meter_window", "greater than"),
        (_policy(lo={"buffer_size": {"temporal": "0s"}}), "policies.p.classes.lo.buffer_size", "greater than 0s"),
        (_policy(lo={"buffer_size": {"temporal": "1ms", "percent": 5}}), "policies.p.classes.lo.buffer_size", "{temporal: 100ms}"),
        (_policy(lo={"excess_rate": "120%"}), "policies.p.classes.lo.excess_rate", "between 0% and 100%"),
    ],
)  # fmt: skip
def test_bad_trio_options_name_the_field(policy, where, message):
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_scenario(policy))
    issues = [str(issue) for issue in caught.value.issues]
    assert any(issue.startswith(where) and message in issue for issue in issues), issues


def test_trio_options_belong_to_the_junos_scheduler():
    wrr = {"buffer": "1000p", "scheduler": "wrr", "excess": "proportional",
           "classes": {"lo": {"weight": 1, "buffer_size": {"temporal": "1ms"}}, "hi": {"weight": 1, "buffer_size": "50%", "meter_window": "1ms"}}}  # fmt: skip
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_scenario(wrr))
    issues = [str(issue) for issue in caught.value.issues]
    for where, message in [("policies.p.excess", "junos scheduler parameter"), ("policies.p.classes.lo.buffer_size", "temporal"),
                           ("policies.p.classes.hi.meter_window", "not used by the wrr")]:  # fmt: skip
        assert any(issue.startswith(where) and message in issue for issue in issues), issues


def test_provisioning_refuses_a_temporal_buffer_it_cannot_render(tmp_path):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(_policy(lo={"buffer_size": {"temporal": "1ms"}})))
    with pytest.raises(ScenarioError, match=r"classes\.lo\.buffer_size: class 'lo': provisioning renders buffer_size percentages only"):
        load_policy(path)


def _rx(policy: dict) -> dict[str, int]:
    from alphaqos import _core

    sim = _core.Simulation(json.dumps(resolve(load_scenario(_scenario(policy)))))
    sim.advance(sim.duration_ns)
    fs = sim.results()["flow_summary"]
    return dict(zip(fs["flow"], fs["rx_bytes"], strict=True))


@needs_engine
def test_the_excess_goes_in_proportion_to_the_transmit_rates_on_trio():
    # 10 % and 30 % both above their rates: the 60 % excess goes 1:3 (25 /
    # 75 %) on Trio, evenly by round robin in the priority model (40 / 60).
    rx = _rx(_policy("proportional"))
    assert rx["lo"] / (rx["lo"] + rx["hi"]) == pytest.approx(0.25, rel=0.03)
    rx = _rx(_policy())
    assert rx["lo"] / (rx["lo"] + rx["hi"]) == pytest.approx(0.40, rel=0.03)
    # excess_rate overrides the weights: 45:15 makes it 10 + 45, 30 + 15.
    rx = _rx(_policy("proportional", lo={"excess_rate": "45%"}, hi={"excess_rate": "15%"}))
    assert rx["lo"] / (rx["lo"] + rx["hi"]) == pytest.approx(0.55, rel=0.03)
