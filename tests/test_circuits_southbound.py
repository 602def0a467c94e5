"""Circuits southbound (issue 22, C2): the edge router's policer (Junos,
Cisco MQC) and the source host's HTB shaping rendered from one
reservation, with matched rates and bursts; applied to a veth in a
namespace the test made and changed in place on a modify."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_provision import _ns, _veth, netns  # noqa: F401

from alphaqos.circuits import southbound as sb
from alphaqos.provision import check
from alphaqos.provision.tc import MTU_FRAME


class Topo:
    """The part of circuits.topology.Topology the southbound reads."""

    nodes = {"H1": {"address": "10.0.1.1"}, "H2": {"address": "10.0.2.1"}, "R1": {"router": True}}

    def edge_router_of(self, host):
        return "R1"


def resv(**kw):
    base = {"id": "7", "version": 1, "owner": "alice", "state": "provisioned", "src": "H1", "dst": "H2",
            "path": ["H1-R1", "R1-H2"], "start": "2026-11-27T01:00:00Z", "end": "2026-11-27T03:00:00Z",
            "rate_bps": 1_000_000_000, "profile": [["2026-11-27T01:00:00Z", 1_000_000_000]], "policing": "soft"}  # fmt: skip
    return {**base, **kw}


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ALPHAQOS_SHAPE_STATE", str(tmp_path / "shape-state"))


# --- the numbers ---------------------------------------------------------------


def test_matching_at_one_gigabit_is_the_documents_numbers():
    m, plan = sb.match_rates(1_000_000_000)
    # Yan et al. 2013: a 31 KB bucket at 1 Gbit/s; Zurawski 2013: HTB at 90 %.
    assert m.policer_bucket_bytes == 31_000
    assert m.shaped_rate_bps == plan.rate_bps == 900_000_000
    # provision's 1 ms burst at 900 Mbit/s is 75 frames (113,550 B): the
    # bucket bounds it to 31,000 - 1514 = 29,486 B.
    assert m.shaped_burst_bytes == plan.burst_bytes == 31_000 - MTU_FRAME
    assert m.host_bucket_bytes == 31_000


@pytest.mark.parametrize("rate", [8_000_000, 100_000_000, 999_999_999, 2_500_000_000, 10**10, 40 * 10**9])
def test_host_token_bucket_lies_within_the_policer(rate):
    m, _ = sb.match_rates(rate)
    assert m.policer_rate_bps == rate
    assert m.shaped_rate_bps == round(rate * 0.9)
    assert m.policer_bucket_bytes >= sb.MIN_BUCKET_FRAMES * sb.POLICED_FRAME
    assert m.policer_bucket_bytes >= round(31_000 * rate / 1e9) - 1
    # RFC 2697: output conforming to (r, b + frame) with r <= R, b + frame <= P is all green.
    assert m.shaped_burst_bytes + MTU_FRAME <= m.policer_bucket_bytes
    assert m.shaped_burst_bytes >= MTU_FRAME


def test_a_bucket_the_host_cannot_keep_within_is_refused():
    with pytest.raises(sb.SouthboundError, match="under two"):
        sb.match_rates(1_000_000_000, bucket=2000)


def test_a_profile_is_policed_at_its_peak_or_at_the_step_in_force():
    from datetime import UTC, datetime

    r = resv(rate_bps=3_000_000_000, profile=[["2026-11-27T01:00:00Z", 1_000_000_000],
                                               ["2026-11-27T02:00:00Z", 3_000_000_000]])  # fmt: skip
    assert sb.policed_rate(r) == (3_000_000_000, None)
    rate, nxt = sb.policed_rate(r, datetime(2026, 11, 27, 1, 30, tzinfo=UTC))
    assert rate == 1_000_000_000 and nxt == datetime(2026, 11, 27, 2, 0, tzinfo=UTC)
    assert sb.policed_rate(r, datetime(2026, 11, 27, 2, 30, tzinfo=UTC)) == (3_000_000_000, None)


# --- the router files ------------------------------------------------------------


@pytest.mark.parametrize(("mode", "junos_then", "cisco_exceed"), [
    ("hard", ["then discard"], "exceed-action drop"),
    ("soft", ["then forwarding-class best-effort", "then loss-priority high"], "exceed-action set-qos-transmit 0"),
    ("scavenger", ["then forwarding-class scavenger", "then loss-priority high"], "exceed-action set-qos-transmit 2"),
])  # fmt: skip
def test_router_files_per_mode_pass_the_checkers(tmp_path, mode, junos_then, cisco_exceed):
    out = sb.render_southbound(resv(policing=mode), Topo(), tmp_path / "r7")
    junos, cisco = out["junos"].read_text(), out["cisco"].read_text()
    assert check.check("junos.conf", junos) == []
    assert check.check("cisco.cfg", cisco) == []
    # The circuit's own filter, its term matching the two hosts, policed at the reservation.
    assert "set firewall family inet filter circuit-7 term circuit-7 from source-address 10.0.1.1/32" in junos
    assert "set firewall family inet filter circuit-7 term circuit-7 from destination-address 10.0.2.1/32" in junos
    assert "set firewall policer circuit-7-policer if-exceeding bandwidth-limit 1000000000 burst-size-limit 31000" in junos
    for then in junos_then:
        assert f"set firewall policer circuit-7-policer {then}" in junos
    assert " filter alphaqos" not in junos and "prefix-list alpha-" not in junos
    assert "permit ip 10.0.1.1 0.0.0.0 10.0.2.1 0.0.0.0" in cisco
    police = next(line for line in cisco.splitlines() if line.strip().startswith("police "))
    assert police.strip() == f"police cir 1000000000 bc 31000 conform-action transmit {cisco_exceed}"
    manifest = json.loads(out["manifest"].read_text())
    assert manifest["policing"] == mode and manifest["edge_router"] == "R1"
    assert (manifest["policer_rate_bps"], manifest["policer_bucket_bytes"]) == (1_000_000_000, 31_000)
    assert (manifest["shaped_rate_bps"], manifest["shaped_burst_bytes"]) == (900_000_000, 29_486)


def test_edge_port_interfaces_attach_the_circuits_filter_and_policy(tmp_path):
    class WithPorts(Topo):
        def edge_port_of(self, host):
            return {"junos": "xe-0/0/0.3001", "cisco": "TenGigabitEthernet0/0.3001", "policing": "scavenger"}

    out = sb.render_southbound(resv(policing=None), WithPorts(), tmp_path)
    junos, cisco = out["junos"].read_text(), out["cisco"].read_text()
    assert check.check("junos.conf", junos) == [] and check.check("cisco.cfg", cisco) == []
    assert "set interfaces xe-0/0/0 unit 3001 family inet filter input circuit-7" in junos
    assert re.search(r"interface TenGigabitEthernet0/0.3001\n service-policy input ALPHAQOS-IN-[0-9a-f]{8}", cisco)
    # The port's policing applies when the reservation names none.
    assert "set firewall policer circuit-7-policer then forwarding-class scavenger" in junos


def test_host_script_matches_the_policer(tmp_path):
    text = sb.render_southbound(resv(rate_bps=2_000_000_000), Topo(), tmp_path)["shaping"].read_text()
    m, _ = sb.match_rates(2_000_000_000)
    assert 'ip link set dev "$DEV" gso_max_segs 1' in text
    line = next(x for x in text.splitlines() if "classid 1:10" in x)
    assert f"rate 1800mbit ceil 1800mbit burst {m.shaped_burst_bytes} cburst {m.shaped_burst_bytes}" in line
    assert m.shaped_burst_bytes == 62_000 - MTU_FRAME
    assert "match ip dst 10.0.2.1/32 flowid 1:10" in text


def test_modify_renders_a_new_cisco_version_and_removes_the_old(tmp_path):
    d = tmp_path / "r7"
    first = sb.render_southbound(resv(), Topo(), d)["cisco"].read_text()
    old = re.search(r"ALPHAQOS-IN-([0-9a-f]{8})", first).group(1)
    second = sb.render_southbound(resv(version=2, rate_bps=2_000_000_000), Topo(), d)["cisco"].read_text()
    assert check.check("cisco.cfg", second) == []
    assert "police cir 2000000000 bc 62000" in second
    assert f"no policy-map ALPHAQOS-IN-{old}" in second
    diff = (d / "junos.conf.diff").read_text()
    assert "+set firewall policer circuit-7-policer if-exceeding bandwidth-limit 2000000000 burst-size-limit 62000" in diff


@pytest.mark.parametrize(("change", "message"), [
    ({"policing": "gentle"}, "policing: expected one of hard, soft, scavenger"),
    ({"dst": "H9"}, "dst: no IPv4 address for endpoint 'H9'"),
    ({"rate_bps": 0, "profile": []}, "rate_bps: must be a positive"),
    ({"id": "///"}, "id: a reservation needs an id"),
])  # fmt: skip
def test_bad_reservations_write_nothing(tmp_path, change, message):
    with pytest.raises(sb.SouthboundError, match=re.escape(message)):
        sb.render_southbound(resv(**change), Topo(), tmp_path / "r7")
    assert not (tmp_path / "r7").exists()


def test_unknown_backend_and_missing_device(tmp_path):
    with pytest.raises(sb.SouthboundError, match="backend: expected one of dry-run, linux"):
        sb.render_southbound(resv(), Topo(), tmp_path, backend="netconf")
    with pytest.raises(sb.SouthboundError, match="device: the linux back-end needs"):
        sb.render_southbound(resv(), Topo(), tmp_path, backend="linux")


# --- the linux back-end on a veth -------------------------------------------------


def _readback(ns: str, dev: str) -> dict:
    """The HTB classes as the kernel reports them over netlink (pyroute2)."""
    from alphaqos.provision.shape import netns as in_netns
    from alphaqos.provision.shape import read_state

    state = read_state(dev, ns)
    with in_netns(ns):
        from pyroute2 import IPRoute

        with IPRoute() as ipr:
            index = ipr.link_lookup(ifname=dev)[0]
            gso = ipr.get_links(index)[0].get_attr("IFLA_GSO_MAX_SEGS")
            root = [q for q in ipr.get_qdiscs(index=index) if q["parent"] == 0xFFFFFFFF][0]
            handles = sorted((c["handle"], c["parent"]) for c in ipr.get_classes(index=index))
    return {"classes": {c["classid"]: c for c in state["classes"]}, "filters": state["filters"], "gso": gso,
            "root": (root.get_attr("TCA_KIND"), root["handle"]), "handles": handles}  # fmt: skip


def _gso(ns: str, dev: str) -> int:
    """gso_max_segs as ip -d link shows it."""
    return int(re.search(r"gso_max_segs (\d+)", _ns(ns, "ip", "-d", "link", "show", dev).stdout).group(1))


def test_linux_backend_applies_reads_back_and_changes_in_place(tmp_path, netns):  # noqa: F811
    dev, _peer = _veth(netns)
    gso_default = _gso(netns, dev)
    assert gso_default > 1
    r = resv()
    out = sb.render_southbound(r, Topo(), tmp_path / "r7", backend="linux", device=dev, netns=netns)
    m, _ = sb.match_rates(r["rate_bps"])
    got = _readback(netns, dev)
    shaped = got["classes"]["1:10"]
    assert shaped["rate_bps"] == shaped["ceil_bps"] == 900_000_000
    # The burst goes to the kernel as a time at the rate (psched ticks): it reads back within a few bytes.
    assert abs(shaped["burst_bytes"] - m.shaped_burst_bytes) <= 200
    assert shaped["burst_bytes"] + MTU_FRAME <= m.policer_bucket_bytes + 200
    assert got["gso"] == 1
    assert got["root"] == ("htb", 0x10000)
    assert got["filters"][0]["flowid"] == "1:10" and got["filters"][0]["keys"] == ["0a000201/ffffffff+16"]
    manifest = json.loads(out["manifest"].read_text())
    assert manifest["applied"]["changed_in_place"] is False and manifest["applied"]["gso_max_segs"] == 1

    # A modify: a new rate, the same tree, the class changed in place.
    r2 = resv(version=2, rate_bps=2_000_000_000, profile=[["2026-11-27T01:00:00Z", 2_000_000_000]])
    out2 = sb.render_southbound(r2, Topo(), tmp_path / "r7", backend="linux", device=dev, netns=netns)
    m2, _ = sb.match_rates(2_000_000_000)
    after = _readback(netns, dev)
    assert after["handles"] == got["handles"] and after["root"] == got["root"]
    assert after["classes"]["1:10"]["rate_bps"] == 1_800_000_000
    assert abs(after["classes"]["1:10"]["burst_bytes"] - m2.shaped_burst_bytes) <= 400
    assert json.loads(out2["manifest"].read_text())["applied"]["changed_in_place"] is True
    tc = _ns(netns, "tc", "class", "show", "dev", dev, "classid", "1:10").stdout
    assert "rate 1800Mbit ceil 1800Mbit" in tc or "rate 1.8Gbit ceil 1.8Gbit" in tc

    # Release: the tree goes, the device's root qdisc is no longer ours.
    sb.release_southbound(r2, tmp_path / "r7", backend="linux", device=dev, netns=netns)
    assert json.loads((tmp_path / "r7" / "released.json").read_text())["removed"] is True
    assert "htb" not in _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout
    assert _gso(netns, dev) == gso_default


def test_linux_backend_unknown_device_changes_nothing(tmp_path, netns):  # noqa: F811
    with pytest.raises(sb.SouthboundError, match="no network device 'aq-nope'"):
        sb.render_southbound(resv(), Topo(), tmp_path / "r7", backend="linux", device="aq-nope", netns=netns)
    assert not (tmp_path / "r7").exists()


def test_with_the_services_topology(tmp_path):
    from alphaqos.circuits.topology import Topology

    scenario = tmp_path / "net.yaml"
    scenario.write_text(
        "name: t\nduration: 1s\nnodes:\n  H1: {address: 10.0.1.1}\n  H2: {address: 10.0.2.1}\n  R1: {router: true}\n"
        "links:\n  - between: [H1, R1]\n    rate: 10Gbps\n    delay: 1ms\n  - between: [R1, H2]\n    rate: 10Gbps\n    delay: 1ms\n"
        "circuits:\n  policing:\n    R1-H1: hard\n"
    )
    topo = Topology.from_scenario(scenario)
    out = sb.render_southbound(resv(policing=None), topo, tmp_path / "r7")
    manifest = json.loads(out["manifest"].read_text())
    assert (manifest["edge_router"], manifest["src_address"], manifest["dst_address"]) == ("R1", "10.0.1.1", "10.0.2.1")
    assert manifest["policing"] == "hard"
    assert "set firewall policer circuit-7-policer then discard" in out["junos"].read_text()
    # The reservation's own policing wins over the port's.
    out = sb.render_southbound(resv(policing="scavenger"), topo, tmp_path / "r8")
    assert "then forwarding-class scavenger" in out["junos"].read_text()
