"""``alphaqos provision``: what a target cannot express, the policers each
target renders, interfaces per target, Cisco versions across runs, tc
bursts and leaves, DTN host shaping, the Junos/Cisco checker, and the
nftables file loaded by ``nft -c`` and the DTN script applied in a network
namespace."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from _system import require_debian_package
from test_provision import PREFIXES, SEND, _lines, _ns, _provision, _unversioned, _veth, _write, netns  # noqa: F401

from alphaqos.provision.check import check_cisco, check_junos
from alphaqos.provision.cisco import version_of
from alphaqos.provision.tc import burst_bytes

#: The issue's case: an srTCM policer whose red packets go to a scavenger class.
SCAVENGER = """\
buffer: 100MB
classes:
  be: {transmit_rate: 30%, buffer_size: 30%, priority: low}
  alpha: {transmit_rate: 50%, buffer_size: 50%, priority: medium-high}
  scavenger: {transmit_rate: 20%, buffer_size: 20%, priority: low}
filter:
  - name: scavenge
    from: {source: 10.0.9.0/24}
    then: {class: be, policer: {srtcm: {cir: 200Mbps, cbs: 30KB, ebs: 60KB}, red: {class: scavenger}}}
"""

POLICERS = """\
buffer: 1000p
classes:
  be: {transmit_rate: 40%, buffer_size: 40%}
  alpha: {transmit_rate: 40%, buffer_size: 40%}
  scavenger:
    transmit_rate: 20%
    buffer_size: 20%
    drop_profile: {wred: {red: {min_th: 10, max_th: 40}}}
filter:
  - name: bulk
    from: {protocol: tcp, destination_port: 2811}
    then: {class: alpha, policer: {rate: 1Gbps, burst: 125KB, out_of_profile: {class: scavenger}}}
  - name: peak
    from: {source: 10.0.8.0/24}
    then: {class: be, policer: {trtcm: {cir: 100Mbps, cbs: 30KB, pir: 200Mbps, pbs: 60KB}, yellow: {class: scavenger}}}
"""


def _policy(tmp_path: Path, text: str) -> str:
    return str(_write(tmp_path / "policy.yaml", text))


# --- what a target cannot express --------------------------------------------------


def test_unexpressible_element_is_an_error_naming_it(tmp_path, capsys):
    status, out = _provision(tmp_path, "--policy", _policy(tmp_path, SCAVENGER))
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line
    assert "junos cannot express term 'scavenge': red packets to class scavenger" in err
    assert "--allow-partial" in err and "ClassRef" not in err
    assert not out.exists()
    # The targets that can express it render it without complaint.
    assert _provision(tmp_path, "--policy", _policy(tmp_path, SCAVENGER), "--target", "cisco,tc,nftables")[0] == 0


def test_allow_partial_says_what_is_missing_and_renders_the_scavenger_path(tmp_path, capsys):
    status, out = _provision(tmp_path, "--policy", _policy(tmp_path, SCAVENGER), "--allow-partial")
    assert status == 0
    assert "warning: --allow-partial: junos cannot express term 'scavenge'" in capsys.readouterr().err
    for path in out.iterdir():
        assert "ClassRef" not in path.read_text(), path.name
    junos = _lines(out / "junos.conf")
    header = junos[: junos.index("delete policy-options prefix-list alpha-src")]
    assert "# PARTIAL (--allow-partial): this file does not do everything the policy does." in header
    assert any("term 'scavenge': red packets to class scavenger" in x for x in header)
    # The other files have the path to the scavenger class (queue 2).
    cisco = (out / "cisco.cfg").read_text()
    assert "violate-action set-qos-transmit 2" in cisco and "PARTIAL" not in cisco
    tc = _lines(out / "tc.sh")
    assert any("flowid 1:12 action police rate 200mbit burst 90000 conform-exceed ok/continue" in x for x in tc)
    nft = (out / "alphaqos.nft").read_text()
    assert ("ip saddr 10.0.9.0/24 limit rate over 25000000 bytes/second burst 90000 bytes "
            "meta mark set meta mark & 0xfffffffc | 0x00000002 meta priority set 1:12 counter accept") in nft  # fmt: skip


# --- policers ---------------------------------------------------------------------


def test_policer_actions_per_target(tmp_path):
    status, out = _provision(tmp_path, "--policy", _policy(tmp_path, POLICERS), "--target", "junos,cisco,nftables",
                             "--allow-partial")  # fmt: skip
    assert status == 0
    junos = _lines(out / "junos.conf")
    for line in [
        "set firewall policer bulk-policer if-exceeding bandwidth-limit 1000000000 burst-size-limit 125000",
        "set firewall policer bulk-policer then forwarding-class scavenger",
        "set firewall policer bulk-policer then loss-priority high",
        "set firewall family inet filter alphaqos term peak then three-color-policer two-rate peak-policer",
        "set firewall three-color-policer peak-policer two-rate color-blind",
        "set firewall three-color-policer peak-policer two-rate peak-information-rate 200000000",
        "set firewall three-color-policer peak-policer action loss-priority high then discard",
    ]:
        assert line in junos, line
    cisco = _unversioned(out / "cisco.cfg")
    # The scavenger class reads the colour (WRED), so the block form sets both.
    assert (" class TERM-bulk-V\n  set qos-group 1\n  police cir 1000000000 bc 125000\n   conform-action transmit\n"
            "   exceed-action set-qos-transmit 2\n   exceed-action set-discard-class-transmit 2\n") in cisco  # fmt: skip
    assert ("  police cir 100000000 bc 30000 pir 200000000 be 60000\n   conform-action transmit\n"
            "   exceed-action set-qos-transmit 2\n   exceed-action set-discard-class-transmit 1\n"
            "   violate-action drop\n") in cisco  # fmt: skip
    nft = (out / "alphaqos.nft").read_text()
    # trTCM: red above pir/pbs, then yellow above cir/cbs among the rest.
    peak = [x.strip() for x in nft.splitlines() if x.strip().startswith("ip saddr 10.0.8.0/24")]
    assert peak == [
        'ip saddr 10.0.8.0/24 limit rate over 25000000 bytes/second burst 60000 bytes counter drop comment "peak red"',
        "ip saddr 10.0.8.0/24 limit rate over 12500000 bytes/second burst 30000 bytes meta mark set meta mark & 0xfffffffc "
        '| 0x00000001 meta priority set 1:12 counter accept comment "peak yellow"',
        'ip saddr 10.0.8.0/24 meta priority set 1:10 counter accept comment "peak"',
    ]


def test_junos_cannot_send_yellow_elsewhere_tc_can(tmp_path, capsys):
    assert _provision(tmp_path, "--policy", _policy(tmp_path, POLICERS), "--target", "junos")[0] == 2
    assert "junos cannot express term 'peak': yellow packets to class scavenger" in capsys.readouterr().err
    # tc (no drop profile on the leaves: the scavenger's WRED is what it cannot express)
    assert _provision(tmp_path, "--policy", _policy(tmp_path, POLICERS), "--target", "tc")[0] == 2
    assert "tc cannot express class 'scavenger': drop profile" in capsys.readouterr().err
    status, out = _provision(tmp_path, "--policy", _policy(tmp_path, POLICERS), "--target", "tc", "--allow-partial")
    assert status == 0
    filters = [x.split("u32 ", 1)[1] for x in _lines(out / "tc.sh") if "filter add" in x and "10.0.8.0/24" not in x
               and "match u32 0 0" in x]  # fmt: skip
    assert filters == [
        "ht 101: match u32 0 0 flowid 1:12 action police rate 1gbit burst 125000 conform-exceed ok/continue",
        "ht 102: match u32 0 0 flowid 1:10 action police rate 200mbit burst 60000 conform-exceed drop/continue",
        "ht 103: match u32 0 0 flowid 1:12 action police rate 100mbit burst 30000 conform-exceed ok/continue",
    ]


# --- interfaces per target ------------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    ("xe-0/0/1", "--egress-interface: expected TARGET=NAME pairs like junos=xe-0/0/1,cisco=TenGigabitEthernet0/1,linux=eth2, got 'xe-0/0/1'"),
    ("junos=xe-0/0/1,ios=Te0/1", "--egress-interface: unknown target 'ios' in 'ios=Te0/1' (targets: junos, cisco, linux)"),
    ("linux=eth0,linux=eth1", "--egress-interface: linux is given twice ('eth0' and 'eth1')"),
    ("linux=a-very-long-interface", "--egress-interface: linux: 'a-very-long-interface' is not a Linux interface name"),
    ("cisco=", "--egress-interface: cisco: not an interface name: ''"),
])  # fmt: skip
def test_bad_interface_lists(tmp_path, capsys, value, message):
    status, out = _provision(tmp_path, "--interface", value)
    assert status == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_interfaces_go_to_their_own_targets(tmp_path):
    status, out = _provision(tmp_path, "--ingress-interface", "junos=xe-0/0/0.100,linux=eth1",
                             "--egress-interface", "junos=xe-0/0/1,cisco=TenGigabitEthernet0/1,linux=eth2")  # fmt: skip
    assert status == 0
    junos = _lines(out / "junos.conf")
    assert "set interfaces xe-0/0/0 unit 100 family inet filter input alphaqos" in junos
    assert "set class-of-service interfaces xe-0/0/1 scheduler-map alphaqos" in junos
    cisco = _unversioned(out / "cisco.cfg")
    assert "interface TenGigabitEthernet0/1\n service-policy output ALPHAQOS-OUT-V\n" in cisco
    assert not [x for x in cisco.splitlines() if x.startswith(" service-policy input")]
    for name in ("tc.sh", "dtn.sh"):
        assert "DEV=${1:-eth2}" in _lines(out / name)
    nft = (out / "alphaqos.nft").read_text()
    assert 'oifname != "eth2" accept' in nft and 'iifname != "eth1" accept' in nft
    for name in ("junos.conf", "tc.sh", "alphaqos.nft", "dtn.sh"):
        assert "TenGigabitEthernet" not in (out / name).read_text()


# --- Cisco: versions instead of replacing what may be attached ----------------------


def test_cisco_versions_across_runs(tmp_path):
    iface = ("--ingress-interface", "cisco=Te0/0", "--egress-interface", "cisco=Te0/1")
    assert _provision(tmp_path, *iface)[0] == 0
    first = (tmp_path / "out" / "cisco.cfg").read_text()
    old = version_of(first)
    assert re.fullmatch(r"[0-9a-f]{8}", old) and f"policy-map ALPHAQOS-OUT-{old}" in first
    assert not [x for x in first.splitlines() if x.startswith("no ")]
    # The table changes: new objects beside the old, interfaces moved, then the old removed.
    status, out = _provision(tmp_path, *iface, prefixes=PREFIXES.replace("10.0.3.0/24", "10.0.4.0/24"))
    assert status == 0
    lines = _lines(out / "cisco.cfg")
    new = version_of("\n".join(lines))
    assert new != old
    move = lines.index(f" no service-policy output ALPHAQOS-OUT-{old}")
    assert lines[move - 1 : move + 2] == ["interface Te0/1", f" no service-policy output ALPHAQOS-OUT-{old}",
                                          f" service-policy output ALPHAQOS-OUT-{new}"]  # fmt: skip
    assert lines.index(f"policy-map ALPHAQOS-OUT-{new}") < move < lines.index(f"no policy-map ALPHAQOS-OUT-{old}")
    assert f"no object-group network ALPHA-SRC-{old}" in lines
    # The same table again: the same version, nothing to move or remove.
    assert _provision(tmp_path, *iface, prefixes=PREFIXES.replace("10.0.3.0/24", "10.0.4.0/24"))[0] == 0
    third = _lines(out / "cisco.cfg")
    assert version_of("\n".join(third)) == new and not [x for x in third if x.startswith("no ")]


def test_cisco_without_interfaces_leaves_removal_to_the_operator(tmp_path):
    assert _provision(tmp_path, "--target", "cisco")[0] == 0
    status, out = _provision(tmp_path, "--target", "cisco", prefixes="src 10.0.2.0/24\ndst 10.0.1.0/24\n")
    assert status == 0
    lines = _lines(out / "cisco.cfg")
    assert not [x for x in lines if x.startswith("no ")]
    assert any(x.startswith("!   no policy-map ALPHAQOS-IN-") for x in lines)


# --- tc: bursts and leaves --------------------------------------------------------


def test_burst_is_a_millisecond_in_whole_frames():
    assert burst_bytes(10**10) == 826 * 1514  # 1.25 MB -> 825.6 frames, rounded up
    assert burst_bytes(10**6) == 1514  # 125 B: at least one frame
    assert burst_bytes(12_112_000) == 1514  # exactly one frame's worth
    assert burst_bytes(12_112_001) == 2 * 1514
    assert burst_bytes(10**6, floor=4000) == 3 * 1514  # a class's own burst is a floor


@pytest.mark.parametrize(("leaf", "alpha_leaf"), [
    ("bfifo", "bfifo limit 7500000"),  # 6 Gbit/s x 10 ms
    ("policy", "bfifo limit 75000000"),  # 60% of the policy's 125 MB, as a router would hold
    ("fq_codel", "fq_codel"),
])  # fmt: skip
def test_tc_leaf_options(tmp_path, leaf, alpha_leaf):
    status, out = _provision(tmp_path, "--target", "tc", "--tc-leaf", leaf)
    assert status == 0
    assert f'qdisc add dev $1 parent 1:11 handle 11: {alpha_leaf}' in _lines(out / "tc.sh")


# --- DTN host shaping --------------------------------------------------------------


def test_dtn_shapes_to_a_share_of_the_circuit(tmp_path, capsys):
    status, out = _provision(tmp_path, "--target", "dtn", "--circuit-rate", "1gbit")
    assert status == 0
    lines = _lines(out / "dtn.sh")
    assert 'qdisc add dev $1 root handle 1: htb default 10' in lines
    assert 'class add dev $1 parent 1: classid 1:10 htb rate 900mbit ceil 900mbit burst 113550 cburst 113550 quantum 200000' in lines
    assert 'qdisc add dev $1 parent 1:10 handle 10: fq_codel' in lines
    status, out = _provision(tmp_path, "--target", "dtn", "--circuit-rate", "10gbit", "--host-share", "92%",
                             "--host-shaper", "fq", out="fq")  # fmt: skip
    assert status == 0
    assert 'qdisc add dev $1 root handle 1: fq maxrate 9200mbit quantum 3028' in _lines(out / "dtn.sh")
    capsys.readouterr()
    assert _provision(tmp_path, "--target", "dtn", "--host-share", "120%", out="bad")[0] == 2
    assert "a share must be above 0% and at most 100%, got '120%'" in capsys.readouterr().err


def test_dtn_script_applied_in_a_namespace(tmp_path, netns):
    dev, _ = _veth(netns)
    status, out = _provision(tmp_path, "--target", "dtn", "--circuit-rate", "100mbit", "--tc-leaf", "bfifo")
    assert status == 0
    _ns(netns, "sh", str(out / "dtn.sh"), dev)
    classes = _ns(netns, "tc", "class", "show", "dev", dev).stdout
    assert "class htb 1:10 root leaf 10: prio 0 rate 90Mbit ceil 90Mbit" in classes
    assert "qdisc bfifo 10: parent 1:10 limit 112500b" in _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout
    # Every packet leaving the device takes the shaped class.
    _ns(netns, "ip", "addr", "add", "10.0.2.5/24", "dev", dev)
    _ns(netns, "ip", "neigh", "add", "10.0.2.7", "lladdr", "02:00:00:00:00:07", "dev", dev, "nud", "permanent")
    _ns(netns, sys.executable, str(_write(tmp_path / "send.py", SEND)), "10.0.2.5", "10.0.2.7", "20")
    sent = re.search(r"class htb 1:10 .*\n Sent (\d+)", _ns(netns, "tc", "-s", "class", "show", "dev", dev).stdout)
    assert int(sent.group(1)) >= 20 * 1000


# --- the checker --------------------------------------------------------------------


def test_junos_checker_finds_broken_references():
    text = "\n".join([
        "set firewall family inet filter f term a from source-prefix-list nowhere",
        "set firewall family inet filter f term a then forwarding-class gold",
        "set firewall family inet filter f term a then policer p",
        "set class-of-service forwarding-classes class be queue-num 0",
        "set class-of-service forwarding-classes class ef queue-num 0",
        "set class-of-service scheduler-maps m forwarding-class be scheduler be-sched",
        "set class-of-service schedulers be-sched transmit-rate percent 80",
        "set class-of-service scheduler-maps m forwarding-class ef scheduler ef-sched",
        "set class-of-service schedulers ef-sched transmit-rate percent 30",
        "set firewall family inet filter f term a then forwardingclass be",
        "delete class-of-service schedulers be-sched",
    ])  # fmt: skip
    problems = "\n".join(check_junos(text))
    for expected in ["prefix-list 'nowhere' is used but not defined", "class 'gold' is used but not defined",
                     "policer 'p' is used but not defined", "queue 0 is already class be's",
                     "term a needs exactly one of accept or discard", "transmit-rate percents add up to 110",
                     "10: not a Junos statement of the grammar", "11: 'delete class-of-service schedulers be-sched' comes after it is set"]:  # fmt: skip
        assert expected in problems, expected


def test_cisco_checker_finds_unsafe_replacement_and_broken_references():
    text = "\n".join([
        "no policy-map ALPHAQOS-OUT", "policy-map ALPHAQOS-OUT", " class CLASS-gold", "  bandwidth percent 60",
        "  bandwidth remaining percent 50", " class CLASS-be", "  priority", "  bandwidth percent 50",
        "  random-detect discard-class 2 10 40 10", "class-map match-any CLASS-be", " match access-group name NOPE",
        "policy-map IN", " class class-default", "  set qos-group 7",
        "interface Te0/1", " service-policy output ALPHAQOS-OUT", " service-policy input MISSING", "end",
    ])  # fmt: skip
    problems = "\n".join(check_cisco(text))
    for expected in ["1: 'no policy-map ALPHAQOS-OUT' before any 'no service-policy' detaches it",
                     "removes policy-map ALPHAQOS-OUT that this file defines or uses",
                     "class-map 'CLASS-gold' is used but not defined", "class-map 'CLASS-be' is used before it is defined",
                     "class CLASS-be has both priority and bandwidth", "random-detect discard-class needs",
                     "ip access-list extended 'NOPE' is used but not defined", "mixes bandwidth kinds",
                     "qos-group 7 is set but no class-map matches it", "policy-map 'MISSING' is used but not defined"]:  # fmt: skip
        assert expected in problems, expected


# --- nftables: the real nft parses every variant --------------------------------------


def test_nftables_files_load_with_nft_check(tmp_path, netns):
    require_debian_package("nftables", binary="nft")
    variants = {
        "default": (),
        "scavenger": ("--policy", _policy(tmp_path, SCAVENGER), "--allow-partial"),
        "policers": ("--policy", _policy(tmp_path, POLICERS), "--allow-partial",
                     "--ingress-interface", "linux=eth1", "--egress-interface", "linux=eth2"),
    }  # fmt: skip
    for name, extra in variants.items():
        status, out = _provision(tmp_path, "--target", "nftables", *extra, out=name)
        assert status == 0
        done = subprocess.run(["ip", "netns", "exec", netns, "nft", "-c", "-f", str(out / "alphaqos.nft")],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, f"{name}: {done.stderr}"
    # Loaded for real, a marking rule reads back as nft understood it.
    _ns(netns, "nft", "-f", str(tmp_path / "policers" / "alphaqos.nft"))
    listing = _ns(netns, "nft", "list", "chain", "inet", "alphaqos", "classify").stdout
    assert "limit rate over 12500000 bytes/second burst 30000 bytes meta mark set" in listing
