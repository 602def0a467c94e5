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
    assert "random-detect-label 1 4.1 27.4 2" in printed  # yellow: 1 / max_p 0.4, rounded
    assert (out / "prefixes.txt").read_text().split("\n")[:3] == ["src 10.1.1.0/24", "src 10.1.2.0/24", "src 10.1.3.0/24"]
    assert json.loads((out / "dimension.json").read_text())["weight_rel"] == 19
    common = ["--prefix-list", str(out / "prefixes.txt"), "--alpha-class", "relative"]
    assert cli.main(["provision", "--policy", str(out / "policy.yaml"), *common, "--target", "cisco", "--out", str(tmp_path / "c")]) == 0
    cisco = (tmp_path / "c" / "cisco.cfg").read_text()
    # MDRR shares by quantum, the strict queue apart: 41436 : 10716 -> 79 % : 21 %.
    assert re.findall(r"bandwidth remaining percent (\d+)", cisco) == ["79", "20"]
    assert "random-detect discard-class 1 4.1 27.4 2" in cisco
    assert "police cir 240000 bc 5000" in cisco
    assert cli.main(["provision", "--policy", str(out / "policy-junos.yaml"), *common, "--target", "junos", "--out", str(tmp_path / "j")]) == 0
    junos = (tmp_path / "j" / "junos.conf").read_text()
    # 4.1 and 27.4 packets of the Relative queue's 350: fills 1.17 % and 7.83 %.
    assert "interpolate fill-level [ 0 1.17 7.83 100 ] drop-probability [ 0 0 40 100 ]" in junos


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
