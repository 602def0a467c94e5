"""``alphaqos shape``: HTB over netlink on a veth in a namespace the test
makes: apply, read back, change in place (the same qdisc and class, the
counters go on), remove (the previous root comes back); 64-bit rates read
back exactly; bad input is one line, exit status 2, nothing changed; the
derivation of a burst from a router's policer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_provision import SEND, _ns, _veth, netns  # noqa: F401

from alphaqos.cli import main
from alphaqos.provision.shape import ShapeError, parse_match, plan_shape
from alphaqos.provision.tc import MTU_FRAME

pytest.importorskip("pyroute2")


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ALPHAQOS_SHAPE_STATE", str(tmp_path / "state"))


def _shape(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(["shape", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def _show(capsys, ns: str, dev: str) -> dict:
    status, out, _ = _shape(capsys, dev, "--netns", ns, "--show", "--json")
    assert status == 0
    return json.loads(out)


def _send(tmp_path: Path, ns: str, n: int) -> None:
    script = tmp_path / "send.py"
    script.write_text(SEND)
    _ns(ns, sys.executable, str(script), "10.0.2.5", "10.0.1.7", str(n))


def _route(ns: str, dev: str) -> None:
    _ns(ns, "ip", "addr", "add", "10.0.2.5/24", "dev", dev)
    _ns(ns, "ip", "route", "add", "10.0.1.0/24", "dev", dev)
    _ns(ns, "ip", "neigh", "add", "10.0.1.7", "lladdr", "02:00:00:00:00:07", "dev", dev, "nud", "permanent")


def test_apply_show_change_in_place_and_remove(tmp_path, netns, capsys):
    dev, _peer = _veth(netns)
    _route(netns, dev)
    _ns(netns, "tc", "qdisc", "replace", "dev", dev, "root", "handle", "7:", "pfifo", "limit", "77")

    status, out, err = _shape(capsys, dev, "--netns", netns, "--rate", "1Gbps", "--share", "90%", "--match", "src=10.0.2.5/32")
    assert status == 0, err
    assert "900mbit (90% of 1gbit)" in out and "txqueuelen 1000" in out
    tc = _ns(netns, "tc", "-s", "class", "show", "dev", dev).stdout
    assert "class htb 1:10 root leaf 10: prio 0 rate 900Mbit ceil 900Mbit" in tc, tc
    filters = _ns(netns, "tc", "filter", "show", "dev", dev).stdout
    assert "match 0a000205/ffffffff at 12" in filters and "flowid 1:10" in filters

    _send(tmp_path, netns, 40)
    state = _show(capsys, netns, dev)
    shaped = {c["classid"]: c for c in state["classes"]}["1:10"]
    assert state["ours"] and state["root"]["kind"] == "htb"
    assert shaped["rate_bps"] == shaped["ceil_bps"] == 900_000_000
    assert shaped["packets"] >= 40 and shaped["leaf"]["kind"] == "pfifo"
    assert state["filters"] == [{"prio": 16, "protocol": 0x0800, "keys": ["0a000205/ffffffff+12"], "flowid": "1:10"}]
    leaf_handle = shaped["leaf"]["handle"]

    # A second call changes the class in place: same leaf qdisc, counters go on.
    status, out, _ = _shape(capsys, dev, "--netns", netns, "--rate", "1Gbps", "--share", "92%", "--match", "src=10.0.2.5/32")
    assert status == 0 and "changed in place to 920mbit" in out
    _send(tmp_path, netns, 25)
    after = {c["classid"]: c for c in _show(capsys, netns, dev)["classes"]}["1:10"]
    assert after["rate_bps"] == 920_000_000
    assert after["leaf"]["handle"] == leaf_handle
    assert after["packets"] >= shaped["packets"] + 25, "the counters were reset: the class was re-created"

    status, out, _ = _shape(capsys, dev, "--netns", netns, "--remove")
    assert status == 0 and "before shaping: pfifo" in out
    qdisc = _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout
    assert "qdisc pfifo 7: root" in qdisc and "limit 77p" in qdisc and "htb" not in qdisc


def test_rates_of_10_gbps_and_above_are_exact(netns, capsys):
    # An IFB reports no speed, so rates above a veth's 10 Gbit/s are allowed;
    # 40 Gbit/s is past the 32-bit field (2^32 B/s): TCA_HTB_RATE64.
    _ns(netns, "ip", "link", "add", "aqifb", "type", "ifb")
    _ns(netns, "ip", "link", "set", "aqifb", "up")
    for rate, want in (("10Gbps", 10**10), ("40Gbps", 4 * 10**10), ("100Gbps", 10**11)):
        status, _, err = _shape(capsys, "aqifb", "--netns", netns, "--rate", rate, "--share", "100%")
        assert status == 0, err
        shaped = {c["classid"]: c for c in _show(capsys, netns, "aqifb")["classes"]}["1:10"]
        assert shaped["rate_bps"] == shaped["ceil_bps"] == want
        tc = _ns(netns, "tc", "class", "show", "dev", "aqifb", "classid", "1:10").stdout
        assert f"rate {want // 10**9}Gbit ceil {want // 10**9}Gbit" in tc, tc


def test_dry_run_prints_tc_and_changes_nothing(netns, capsys):
    dev, _ = _veth(netns)
    status, out, _ = _shape(capsys, dev, "--netns", netns, "--rate", "1Gbps", "--dry-run", "--match", "dscp=46")
    assert status == 0
    assert f"tc qdisc replace dev {dev} root handle 1: htb default 20" in out
    assert f"tc class add dev {dev} parent 1: classid 1:10 htb rate 900mbit ceil 900mbit" in out
    assert "u32 match ip dsfield 0xb8 0xfc flowid 1:10" in out
    assert "htb" not in _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout


@pytest.mark.parametrize(("argv", "message"), [
    (["aqnone", "--rate", "1Gbps"], "no network device 'aqnone'"),
    (["{dev}", "--rate", "1Gbps", "--share", "0%"], "--share must be above 0% and at most 100%, got 0%"),
    (["{dev}", "--rate", "1Gbps", "--share", "120"], "got 120%"),
    (["{dev}", "--rate", "20Gbps"], "the shaped rate 18gbit is above the device's speed 10gbit"),
    (["{dev}", "--rate", "1Gbps", "--policer-burst", "2KB"], "under two 1514-byte frames"),
    (["{dev}", "--rate", "1Gbps", "--match", "src=10.0.0.300/8"], "not an IPv4 prefix"),
    (["{dev}"], "give the circuit's rate"),
])  # fmt: skip
def test_bad_input_is_one_line_and_changes_nothing(netns, capsys, argv, message):
    dev, _ = _veth(netns)
    before = _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout
    status, _, err = _shape(capsys, *[a.format(dev=dev) for a in argv], "--netns", netns)
    assert status == 2
    assert err.count("\n") == 1 and message in err, err
    assert _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout == before


def test_unknown_namespace_and_no_permission(netns, capsys):
    status, _, err = _shape(capsys, "aq0", "--netns", "aq-no-such-ns", "--rate", "1Gbps")
    assert status == 2 and "no network namespace 'aq-no-such-ns'" in err
    dev, _ = _veth(netns)
    # Not root: entering the namespace is refused, and nothing changes.
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "alphaqos",
         "shape", dev, "--netns", netns, "--rate", "1Gbps"],
        capture_output=True, text=True, env={**os.environ, "ALPHAQOS_SHAPE_STATE": "/nonexistent"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "permission denied" in done.stderr, done.stderr
    assert "htb" not in _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout


def test_burst_from_the_routers_policer():
    # Zurawski's circuit, a 1 Gbit/s reservation: 90% with the default burst (1 ms at the rate).
    plan = plan_shape("eth0", 10**9, 90)
    assert plan.rate_bps == 900_000_000 and plan.burst_bytes == 75 * MTU_FRAME
    # A router policing with a 64 KB bucket: the burst plus the one frame HTB
    # may send beyond it fits the bucket.
    plan = plan_shape("eth0", 10**9, 90, policer_burst=64_000)
    assert plan.burst_bytes + MTU_FRAME <= 64_000 and plan.burst_bytes == 64_000 - MTU_FRAME
    # A large bucket does not raise the burst above the default.
    assert plan_shape("eth0", 10**9, 90, policer_burst=10**7).burst_bytes == 75 * MTU_FRAME
    with pytest.raises(ShapeError, match="under two"):
        plan_shape("eth0", 10**9, 90, policer_burst=3000)
    assert parse_match("dscp=46").keys() == ["0x00b80000/0x00fc0000+0"]


def test_rate_and_burst_from_a_policy(tmp_path, capsys):
    policy = tmp_path / "circuit.yaml"
    policy.write_text(
        "classes:\n  be: {transmit_rate: 100%, buffer_size: 100%}\n"
        "filter:\n  - name: circuit\n    from: {source: 10.10.200.20/32}\n"
        "    then: {policer: {rate: 1Gbps, burst: 128KB, out_of_profile: discard}}\n"
    )  # fmt: skip
    status, out, err = _shape(capsys, "eth0", "--policy", str(policy), "--dry-run", "--netns", "aq-absent")
    assert status == 2 and "no network namespace" in err  # checked before anything is printed
    from alphaqos.provision.shape import from_policy

    rate, burst, match = from_policy(policy, None)
    assert (rate, burst, match.field, match.value) == (10**9, 128_000, "src", "10.10.200.20/32")
