"""``alphaqos dimension relative``: equation 1 by MDRR quanta, equation 2's
WRED thresholds, the policy it writes as ``alphaqos provision`` renders it,
``--check`` in the simulator, and bad input (one line, exit 2, nothing
written)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

alphaqos = pytest.importorskip("alphaqos")

from alphaqos import cli  # noqa: E402
from alphaqos.dimension import Colour, Customer, DimensionError, dimension, equation2, quantum  # noqa: E402

DOCUMENT = [Customer("C1", 240_000, 5000, "10.1.1.0/24"), Customer("C2", 400_000, 5000, "10.1.2.0/24"),
            Customer("C3", 1_000_000, 5000, "10.1.3.0/24")]  # fmt: skip
ARGS = ["dimension", "relative", "--profile", "C1=240kbps/5000B@10.1.1.0/24", "--profile", "C2=400kbps/5000B@10.1.2.0/24",
        "--profile", "C3=1Mbps/5000B@10.1.3.0/24", "--link", "10Mbps", "--hp-load", "1.1Mbps", "--rtt", "180ms",
        "--be-weight", "79"]  # fmt: skip


def test_quantum_follows_ciscos_rule():
    assert quantum(1, 1500) == 1500
    assert quantum(20, 1500) == 1500 + 19 * 512 == 11228
    assert quantum(2048, 4470) == 4470 + 2047 * 512
    for bad in (0, 2049):
        with pytest.raises(DimensionError, match="outside Cisco's MDRR range 1..2048"):
            quantum(bad, 1500)


def test_equation2_by_hand():
    # 10 Mb/s x 180 ms / (1500 B x 8) = 150 packets; 1 Mb/s x 96 ms / (500 B x 8) = 24.
    assert equation2(10e6, 0.180, 1500) == pytest.approx(150)
    assert equation2(1e6, 0.096, 500) == pytest.approx(24)


def test_the_documents_customers_by_hand():
    d = dimension(DOCUMENT, link_bps=10_000_000, hp_bps=1_100_000, rtt_s=0.180, be_weight=79, headroom=0.10)
    # Need r >= 1.1 x 1.64 = 1.804 Mb/s of the 8.9 left; q_BE = 1500 + 78 x 512 = 41436 B;
    # q_REL >= 41436 x 1.804 / (8.9 - 1.804) = 10534.2 B -> weight ceil(17.64) + 1 = 19, quantum 10716 B.
    assert (d.quantum_be, d.weight_rel, d.quantum_rel) == (41436, 19, 10716)
    assert d.service_rate_bps == pytest.approx(8.9e6 * 10716 / (10716 + 41436))  # 1.8288 Mb/s
    # One weight less would miss equation 1 with the headroom.
    q = quantum(d.weight_rel - 1, 1500)
    assert 8.9e6 * q / (q + d.quantum_be) < 1.1 * 1.64e6
    # Equation 2 on r: 1.8288 Mb/s x 0.18 s / 12000 b = 27.43; min_th 0.15 of it.
    assert d.wred["green"] == Colour(4.1, 27.4, 0.2) and d.wred["yellow"] == Colour(4.1, 27.4, 0.4)
    # Equation 3's bound on the mean delay: 0.25 x 27.43 packets of 1500 B at r.
    assert d.delay_bound_s == pytest.approx(0.25 * 27.4 * 12000 / d.service_rate_bps)


def test_the_policy_renders_as_cisco_mqc_and_junos(tmp_path, capsys):
    out = tmp_path / "dim"
    assert cli.main([*ARGS, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "weight_REL 19 (quantum 10716 B)" in printed and "queue 1 19" in printed
    # Whole packets, as the 12000 takes them; yellow's max_p 0.4 as 1/3 (nearer than 1/2).
    assert "random-detect-label 0 4 27 5" in printed and "random-detect-label 1 4 27 3" in printed
    assert (out / "prefixes.txt").read_text().split("\n")[:3] == ["src 10.1.1.0/24", "src 10.1.2.0/24", "src 10.1.3.0/24"]
    assert json.loads((out / "dimension.json").read_text())["weight_rel"] == 19
    common = ["--prefix-list", str(out / "prefixes.txt"), "--alpha-class", "relative"]
    assert cli.main(["provision", "--policy", str(out / "policy.yaml"), *common, "--target", "cisco", "--out", str(tmp_path / "c")]) == 0
    cisco = (tmp_path / "c" / "cisco.cfg").read_text()
    # MDRR shares by quantum, the strict queue apart: 41436 : 10716 -> 79 % : 21 %.
    assert re.findall(r"bandwidth remaining percent (\d+)", cisco) == ["79", "20"]
    assert "random-detect discard-class 0 4 27 5" in cisco and "random-detect discard-class 1 4 27 3" in cisco
    assert not re.search(r"random-detect discard-class \d+ \S*\.", cisco)  # no fraction anywhere
    assert "police cir 240000 bc 5000" in cisco
    assert cli.main(["provision", "--policy", str(out / "policy-junos.yaml"), *common, "--target", "junos", "--out", str(tmp_path / "j")]) == 0
    junos = (tmp_path / "j" / "junos.conf").read_text()
    # 4.1 and 27.4 packets of the Relative queue's 350: fills 1.17 % and 7.83 %, in whole percents.
    assert "interpolate fill-level [ 0 1 8 100 ] drop-probability [ 0 0 40 100 ]" in junos
    assert "interpolate fill-level [ 0 1 8 100 ] drop-probability [ 0 0 20 100 ]" in junos


def test_check_runs_the_implied_scenario(capsys):
    d = dimension(DOCUMENT, link_bps=10_000_000, hp_bps=1_100_000, rtt_s=0.180, be_weight=79, headroom=0.10)
    from alphaqos.dimension import check

    good = check(d, 60)
    assert good["ok"], good["lines"]
    assert all(good["rates_bps"][c.name] >= 0.9 * c.rate_bps for c in DOCUMENT)
    # Under-provisioned (weight 8: r = 1.0 Mb/s < 1.64), the contracts fail.
    q = quantum(8, 1500)
    starved = dataclasses.replace(d, weight_rel=8, quantum_rel=q, service_rate_bps=8.9e6 * q / (q + d.quantum_be))
    bad = check(starved, 60)
    assert not bad["ok"] and sum(bad["rates_bps"].values()) < 0.9 * 1.64e6


@pytest.mark.parametrize(("extra", "message"), [
    (["--profile", "C4=8Mbps/5000B"], "--profile: the contracted rates add up to 9.64 Mbps, at or above the 8.9 Mbps"),
    (["--be-weight", "3000"], "--be-weight: 3000 is outside Cisco's MDRR range 1..2048"),
    (["--be-weight", "2048", "--profile", "C4=5Mbps/5000B"], "weight_REL: the contracts need weight"),
    (["--wred", "yellow=50/40/0.4"], "--wred yellow: min_th (50) must be below max_th (40)"),
    (["--profile", "C5=fast/5000B"], "--profile C5:"),
])  # fmt: skip
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, extra, message):
    out = tmp_path / "dim"
    assert cli.main([*ARGS, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists() and list(tmp_path.iterdir()) == []


# --- rounding to what the routers take --------------------------------------------------


def test_platform_rounding_rules():
    from alphaqos.provision.model import cisco_wred, junos_curve

    assert cisco_wred(4.1, 27.4, 0.2) == (4, 27, 5)
    assert cisco_wred(4.5, 27.5, 0.4) == (5, 28, 3)  # halves up; 1/3 is nearer 0.4 than 1/2
    assert cisco_wred(0.2, 0.9, 1.0) == (1, 2, 1)  # min at least 1 and below max
    assert cisco_wred(10.4, 10.6, 0.1) == (10, 11, 10)
    assert junos_curve([(0, 0), (1.17, 0), (7.83, 40), (100, 100)]) == [(0, 0), (1, 0), (8, 40), (100, 100)]
    # Fill levels that round together are kept distinct and rising; probabilities never fall.
    assert junos_curve([(0, 0), (0.2, 0), (0.4, 10.4), (99.6, 10.2), (100, 100)]) == [(0, 0), (1, 0), (2, 10), (99, 10), (100, 100)]
    assert junos_curve([(98.6, 0), (99.2, 5), (99.7, 50)]) == [(98, 0), (99, 5), (100, 50)]


def test_provision_refuses_a_file_its_checker_rejects(tmp_path, capsys, monkeypatch):
    """A renderer that writes what the router refuses is an error, and
    nothing is written: the checks run before any file."""
    from alphaqos.provision import cisco

    policy = tmp_path / "p.yaml"
    policy.write_text(
        "scheduler: wrr\nbuffer: 1000p\nclasses:\n  be: {weight: 1, buffer_size: 50%}\n"
        "  alpha: {weight: 1, buffer_size: 50%, drop_profile: {wred: {green: {min_th: 4.1, max_th: 27.4, max_p: 0.2}}}}\n"
    )
    prefixes = tmp_path / "prefixes.txt"
    prefixes.write_text("src 10.0.0.0/24\ndst 10.0.1.0/24\n")
    common = ["provision", "--policy", str(policy), "--prefix-list", str(prefixes), "--target", "cisco"]
    assert cli.main([*common, "--out", str(tmp_path / "good")]) == 0
    assert "random-detect discard-class 0 4 27 5" in (tmp_path / "good" / "cisco.cfg").read_text()
    capsys.readouterr()
    # The renderer as it was before the rounding: fractional thresholds.
    original = cisco._wred

    def fractional(plan, c):
        return [line.replace(" 4 27 5", " 4.1 27.4 5") for line in original(plan, c)]

    monkeypatch.setattr(cisco, "_wred", fractional)
    assert cli.main([*common, "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a rendered file fails its check, nothing written: cisco.cfg:" in err[0], err
    assert "random-detect discard-class 0 4.1 27.4 5" in err[0]
    assert not (tmp_path / "bad").exists()
    # An existing directory keeps its files as they were.
    before = {p.name: p.read_text() for p in (tmp_path / "good").iterdir()}
    assert cli.main([*common, "--out", str(tmp_path / "good")]) == 2
    assert {p.name: p.read_text() for p in (tmp_path / "good").iterdir()} == before
    # A good run into it (through a symlink) replaces its files and keeps the others.
    monkeypatch.setattr(cisco, "_wred", original)
    (tmp_path / "good" / "notes.txt").write_text("mine\n")
    (tmp_path / "link").symlink_to(tmp_path / "good")
    assert cli.main([*common, "--target", "cisco,nftables", "--out", str(tmp_path / "link")]) == 0
    assert (tmp_path / "link").is_symlink() and (tmp_path / "good" / "notes.txt").read_text() == "mine\n"
    assert sorted(p.name for p in (tmp_path / "good").iterdir()) == [
        "alphaqos.nft", "alphaqos.nft.diff", "cisco.cfg", "cisco.cfg.diff", "notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# --- the classes of the document's design, on every target and in the engine -----------

def test_the_policy_classifies_each_traffic_type_on_every_target(tmp_path, capsys):
    out = tmp_path / "dim"
    assert cli.main([*ARGS, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # The 12000's lines: unmarked (precedence 0) is best effort, EF (5) the strict queue,
    # the customers' traffic marked 2 (in profile) or 1 (beyond it) at the edge by CAR.
    gsr = [line.strip() for line in printed.splitlines()]
    assert "precedence 0 queue 0" in gsr and "precedence 0 queue 1" not in gsr
    assert {"precedence 2 queue 1", "precedence 1 queue 1", "precedence 5 queue low-latency"} <= set(gsr)
    assert ("rate-limit input access-group 151 240000 5000 5000 conform-action set-prec-transmit 2 "
            "exceed-action set-prec-transmit 1") in gsr  # fmt: skip
    assert gsr.index("rate-limit input access-group 150 10000000 8000 8000 conform-action transmit exceed-action transmit") < \
        gsr.index("rate-limit input 10000000 8000 8000 conform-action set-prec-transmit 0 exceed-action set-prec-transmit 0")
    common = ["--prefix-list", str(out / "prefixes.txt"), "--alpha-class", "relative", "--allow-partial"]
    assert cli.main(["provision", "--policy", str(out / "policy.yaml"), *common, "--target", "cisco,tc,nftables",
                     "--out", str(tmp_path / "c")]) == 0  # fmt: skip
    assert cli.main(["provision", "--policy", str(out / "policy-junos.yaml"), *common, "--target", "junos",
                     "--out", str(tmp_path / "j")]) == 0  # fmt: skip
    cisco = (tmp_path / "c" / "cisco.cfg").read_text()
    # EF -> qos-group 2 (hp), served by priority; a customer's prefix -> 1; the rest -> 0.
    assert re.search(r"class-map match-all TERM-hp-\w+\n match access-group name TERM-hp-\w+\n match dscp 46\n", cisco)
    assert re.search(r" class TERM-hp-\w+\n  set qos-group 2\n", cisco)
    assert re.search(r" class TERM-C1-relative-\w+\n  set qos-group 1\n", cisco)
    assert re.search(r" class class-default\n  set qos-group 0\n", cisco)
    assert re.search(r" class CLASS-hp-\w+\n  priority\n", cisco)
    junos = (tmp_path / "j" / "junos.conf").read_text()
    assert "term hp from dscp ef" in junos and "term hp then forwarding-class hp" in junos
    assert junos.index("term hp from") < junos.index("term C1-relative from")
    assert "schedulers hp-sched priority strict-high" in junos
    tc = (tmp_path / "c" / "tc.sh").read_text()
    assert "match ip dsfield 0xb8 0xfc flowid 1:12" in tc and "classid 1:12 htb" in tc and "prio 0" in tc
    assert "ip dscp 46 meta priority set 1:12" in (tmp_path / "c" / "alphaqos.nft").read_text()


def test_each_traffic_type_lands_in_its_class_in_the_engine():
    """The dimensioned policy on the backbone router of a small scenario:
    each traffic type alone as UDP, and the queue (and colour) it reaches."""
    import polars as pl

    from alphaqos import columns as col
    from alphaqos.dimension import policy
    from alphaqos.engine import simulate
    from alphaqos.scenario import load_scenario

    d = dimension(DOCUMENT, link_bps=10_000_000, hp_bps=1_100_000, rtt_s=0.180, be_weight=79, headroom=0.10)
    senders = {  # name: (address, dscp, rate, the class it must reach)
        "ef-voice": ("10.250.0.2", 46, "300Kbps", "hp"),
        "ef-from-customer": ("10.1.1.5", 46, "200Kbps", "hp"),
        "c1-in-profile": ("10.1.1.6", 0, "120Kbps", "relative"),
        "c2-beyond-profile": ("10.1.2.6", 0, "800Kbps", "relative"),
        "c3-marked-af21": ("10.1.3.6", 18, "200Kbps", "relative"),
        "be-unmarked": ("10.250.0.1", 0, "400Kbps", "be"),
        "be-marked-af21": ("10.250.0.3", 18, "300Kbps", "be"),
    }
    nodes = {"PE": {"router": True, "policy": "relative"}, "P1": {"router": True}, "D": {"address": "10.252.0.1"}}
    links = [{"between": ["PE", "P1"], "rate": "10Mbps", "delay": "5ms", "queues": {"PE": {"policy": "relative"}}},
             {"between": ["P1", "D"], "rate": "1Gbps", "delay": "1ms"}]  # fmt: skip
    flows = []
    for i, (name, (address, dscp, rate, _)) in enumerate(senders.items()):
        nodes[f"H{i}"] = {"address": address}
        links.append({"between": [f"H{i}", "PE"], "rate": "100Mbps", "delay": "1ms"})
        flows.append({"name": name, "udp": {"from": f"H{i}", "to": "D", "rate": rate, "size": "500B"}, "dscp": dscp})
    scenario = {"name": "relative-classes", "duration": "3s", "nodes": nodes, "links": links, "flows": flows,
                "policies": {"relative": policy(d)}}  # fmt: skip
    results = simulate(load_scenario(scenario), command="test")
    sent = dict(results.flow_summary.select(col.FLOW, col.TX_PKTS).iter_rows())
    queues = dict(results.queue_summary.filter(pl.col(col.QUEUE).str.starts_with("PE->P1/")).select(col.QUEUE, col.ENQ_PKTS).iter_rows())
    for klass in ("hp", "relative", "be"):
        expected = sum(sent[name] for name, spec in senders.items() if spec[3] == klass)
        assert expected > 0
        assert queues[f"PE->P1/{klass}"] == expected, (klass, queues, sent)
    terms = {row[col.TERM]: row for row in results.filter.iter_rows(named=True)}
    assert terms["hp"][col.MATCHED_PKTS] == sent["ef-voice"] + sent["ef-from-customer"]
    # Within its profile C1 stays green; C2 at twice its contract is partly yellow.
    assert terms["C1-relative"][col.YELLOW_PKTS] == 0 and terms["C1-relative"][col.GREEN_PKTS] == sent["c1-in-profile"]
    assert 0 < terms["C2-relative"][col.YELLOW_PKTS] < sent["c2-beyond-profile"]
