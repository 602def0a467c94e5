"""The scenario schema of TCP as hosts run it (SACK, windows, pacing, RACK,
RTO style, congestion controls with their parameters) and of wire
impairments (loss, reordering): resolution to the engine configuration,
errors, and short runs that show each option doing its job."""

from __future__ import annotations

import pytest

from alphaqos import ScenarioError, load_scenario, resolve


def _two_hosts(tcp: dict | None = None, link: dict | None = None, duration: str = "2s") -> dict:
    return {
        "name": "pair",
        "duration": duration,
        "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}, "R": {"router": True}},
        "links": [
            {"between": ["A", "R"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["R", "B"], "rate": "100Mbps", "delay": "9ms", **(link or {})},
        ],
        "flows": [{"name": "t", "tcp": {"from": "A", "to": "B", "cc": "newreno", **(tcp or {})}}],
    }


def test_tcp_defaults_are_linux_like():
    """Linux 6's host by default (issue 21): RACK on (since 4.18), no
    pacing (CUBIC paces only under fq); the RFC host leaves RACK off."""
    tcp = resolve(load_scenario(_two_hosts()))["flows"][0]["tcp"]
    assert tcp["host_profile"] == "linux-6"
    assert tcp["sack"] is True and tcp["window_scaling"] is True and tcp["limited_transmit"] is True
    assert tcp["rack"] is True and tcp["pacing"] is False and tcp["rto_style"] == "linux"
    assert resolve(load_scenario(_two_hosts({"host_profile": "default"})))["flows"][0]["tcp"]["rack"] is False
    assert tcp["min_rto_ns"] == 200_000_000 and tcp["dupthresh"] == 3
    assert tcp["sndbuf_bytes"] is None and tcp["max_pacing_rate_bps"] is None and tcp["cc_params"] == {}


def test_tcp_options_resolve_to_base_units():
    tcp = resolve(load_scenario(_two_hosts({
        "cc": "base_flow", "cc_params": {"ctr": "500Mbps"}, "sack": True, "rack": True, "window_scaling": False,
        "limited_transmit": False, "sndbuf": "4MiB", "max_pacing_rate": "2Gbps", "pacing": True, "rto": "rfc6298",
        "min_rto": "1s", "dupthresh": 5,
    })))["flows"][0]["tcp"]  # fmt: skip
    assert tcp["cc"] == "base_flow" and tcp["cc_params"]["ctr_bps"] == 500_000_000
    assert (tcp["rack"], tcp["window_scaling"], tcp["limited_transmit"], tcp["pacing"]) == (True, False, False, True)
    assert tcp["sndbuf_bytes"] == 4 * 2**20 and tcp["max_pacing_rate_bps"] == 2 * 10**9
    assert (tcp["rto_style"], tcp["min_rto_ns"], tcp["dupthresh"]) == ("rfc6298", 10**9, 5)


def test_impairments_resolve_per_direction():
    link = {"impair": {"loss": 0.01}, "impairs": {"B": {"reorder": {"fraction": 0.05, "by": 3}}}}
    config = resolve(load_scenario(_two_hosts(link=link)))
    r_to_b = config["links"][1]
    assert r_to_b["impair_ab"] == {"loss": 0.01, "reorder_fraction": 0.0, "reorder_by": 0}
    assert r_to_b["impair_ba"] == {"loss": 0.0, "reorder_fraction": 0.05, "reorder_by": 3}
    assert config["links"][0]["impair_ab"] == {"loss": 0.0, "reorder_fraction": 0.0, "reorder_by": 0}


@pytest.mark.parametrize(
    ("tcp", "link", "path", "message"),
    [
        ({"rack": True, "sack": False}, None, "flows[0].tcp.rack", "needs sack"),
        ({"cc": "cubic", "cc_params": {"c_f": 1}}, None, "flows[0].tcp.cc_params", "'c_f' is not a parameter of cubic"),
        ({"cc": "base_flow"}, None, "flows[0].tcp.cc_params", "base_flow"),
        ({"rto": "bsd"}, None, "flows[0].tcp.rto", "linux"),
        (None, {"impair": {"loss": 1.5}}, "links[1].impair.loss", "less than or equal to 1"),
        (None, {"impair": {"reorder": {"fraction": 0.1, "by": 0}}}, "links[1].impair.reorder.by", "greater than or equal to 1"),
        (None, {"impairs": {"A": {"loss": 0.1}}}, "links[1].impairs.A", "not an end of this link"),
    ],
)
def test_bad_options_name_the_field(tcp, link, path, message):
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_two_hosts(tcp, link))
    text = str(caught.value)
    assert text.startswith(path + ":"), text
    assert message in text, text


# --- short runs (need the engine) -------------------------------------------


@pytest.fixture(scope="module")
def alphaqos():
    pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")
    import alphaqos

    return alphaqos


def _counters(res, flow="t"):
    return res.summary["flows"][flow]


def test_every_congestion_control_fills_an_idle_path(alphaqos):
    from alphaqos.scenario import CONGESTION_CONTROLS

    # A buffer of one bandwidth-delay product (100 Mbps x 20 ms = 250 KB).
    link = {"queues": {"R": {"fifo": {"limit": "250KB"}}}}
    for cc in CONGESTION_CONTROLS:
        params = {"ctr": "50Mbps"} if cc == "base_flow" else {}
        res = alphaqos.run(_two_hosts({"cc": cc, "cc_params": params}, link=link, duration="5s"))
        goodput = res.tcp.filter(res.tcp["time"] > 3)["goodput_bps"].mean()
        target = 50e6 if cc == "base_flow" else 100e6 * 1448 / 1538
        assert goodput == pytest.approx(target, rel=0.06), cc


def test_link_loss_shows_in_the_summary_counters(alphaqos):
    res = alphaqos.run(_two_hosts(link={"impair": {"loss": 0.01}}, duration="5s"))
    flow = _counters(res)
    assert flow["retransmits"] > 0 and flow["fast_retransmits"] > 0
    assert flow["ooo_arrivals"] > 0 and flow["dup_acks_sent"] > 0
    assert res.summary["queues"]["R->B"]["drop_pkts"] == 0  # lost on the wire, not in the queue
    assert res.queue_summary.filter(res.queue_summary["queue"] == "R->B")["link_loss_pkts"][0] == flow["drop_pkts"]
