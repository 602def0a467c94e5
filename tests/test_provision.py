"""``alphaqos provision``: each target rendered for the default policy and
for a three-class policy with policers and drop profiles, the diff between
runs, bad input, and the tc script applied for real in a network namespace.
Every Junos and Cisco file a test renders passes the parser-level checker
(:mod:`alphaqos.provision.check`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from _system import namespaces

from alphaqos import cli
from alphaqos.flows.identify import open_db
from alphaqos.provision.check import check
from alphaqos.provision.cisco import version_of

PREFIXES = """\
# role prefix last_seen
src 10.0.2.0/24 2026-01-10T00:00:00
src 10.0.3.0/24 2026-01-20T12:00:00
dst 10.0.1.0/24 2026-01-24T00:00:00
dst 2001:db8::/48
"""

POLICY = """\
scheduler: junos
buffer: 100MB
classes:
  be:
    transmit_rate: 30%
    buffer_size: 30%
    priority: low
    drop_profile:
      wred:
        exponential_weighting_constant: 9
        green: {min_th: 40, max_th: 80, mark_prob_denominator: 10}
        red: {min_th: 10, max_th: 40, max_p: 0.5}
  alpha:
    transmit_rate: 50%
    buffer_size: 50%
    priority: medium-high
    drop_profile: {high: [[0, 0], [50, 20], [100, 100]]}
  voice: {transmit_rate: 20%, buffer_size: 20%, priority: strict-high}
filter:
  - name: voice
    from: {protocol: udp, destination_port: 5000-5010, dscp: ef}
    then: {class: voice, policer: {rate: 100Mbps, burst: 31KB, out_of_profile: discard}}
  - name: scavenge
    from: {source: 10.0.9.0/24}
    then: {class: be, policer: {srtcm: {cir: 200Mbps, cbs: 30KB, ebs: 60KB}}}
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _provision(tmp_path: Path, *extra: str, prefixes: str = PREFIXES, out: str = "out") -> tuple[int, Path]:
    listing = _write(tmp_path / "prefixes.txt", prefixes)
    status = cli.main(["provision", "--prefix-list", str(listing), "--out", str(tmp_path / out),
                       "--reference", "2026-01-25T00:00:00", *extra])  # fmt: skip
    if status == 0:
        for name in ("junos.conf", "cisco.cfg"):
            if (tmp_path / out / name).is_file():
                assert check(name, (tmp_path / out / name).read_text()) == [], name
    return status, tmp_path / out


def _unversioned(path: Path) -> str:
    """A Cisco file with its version suffix written as -V."""
    text = path.read_text()
    return text.replace(f"-{version_of(text)}", "-V")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture
def default_out(tmp_path):
    status, out = _provision(tmp_path, "--ingress-interface", "junos=xe-0/0/0,cisco=TenGigabitEthernet0/0",
                             "--egress-interface", "junos=xe-0/0/1,cisco=TenGigabitEthernet0/1,linux=eth2")  # fmt: skip
    assert status == 0
    return out


@pytest.fixture
def policy_out(tmp_path):
    policy = _write(tmp_path / "policy.yaml", POLICY)
    status, out = _provision(tmp_path, "--policy", str(policy), "--allow-partial")
    assert status == 0
    return out


# --- default policy: two queues, no policing ----------------------------------


def test_default_outputs_and_diffs_exist(default_out):
    names = sorted(p.name for p in default_out.iterdir())
    assert names == ["alphaqos.nft", "alphaqos.nft.diff", "cisco.cfg", "cisco.cfg.diff", "dtn.sh", "dtn.sh.diff",
                     "junos.conf", "junos.conf.diff", "tc.sh", "tc.sh.diff"]  # fmt: skip
    # First run: the diff adds the whole file.
    diff = _lines(default_out / "junos.conf.diff")
    assert diff[0] == "--- /dev/null" and diff[1] == "+++ b/junos.conf"
    assert [d[1:] for d in diff[3:]] == _lines(default_out / "junos.conf")


def test_junos_default(default_out):
    lines = _lines(default_out / "junos.conf")
    assert [x for x in lines if x.startswith("set policy-options prefix-list")] == [
        "set policy-options prefix-list alpha-src 10.0.2.0/24",
        "set policy-options prefix-list alpha-src 10.0.3.0/24",
        "set policy-options prefix-list alpha-dst 10.0.1.0/24",
    ]  # the IPv6 prefix is left out
    f = "set firewall family inet filter alphaqos"
    for line in [
        f"{f} term alpha from source-prefix-list alpha-src",
        f"{f} term alpha from destination-prefix-list alpha-dst",
        f"{f} term alpha then forwarding-class alpha",
        f"{f} term alpha then count alpha",
        f"{f} term default then forwarding-class beta",
        "set class-of-service forwarding-classes class beta queue-num 0",
        "set class-of-service forwarding-classes class alpha queue-num 1",
        # 60% and 40% scaled to the 95% network-control's 5% leaves.
        "set class-of-service schedulers alpha-sched transmit-rate percent 57",
        "set class-of-service schedulers alpha-sched buffer-size percent 57",
        "set class-of-service schedulers alpha-sched priority medium-high",
        "set class-of-service schedulers beta-sched transmit-rate percent 38",
        "set class-of-service schedulers beta-sched priority medium-low",
        "set class-of-service scheduler-maps alphaqos forwarding-class alpha scheduler alpha-sched",
        "set class-of-service forwarding-classes class network-control queue-num 3",
        "set class-of-service schedulers network-control-sched transmit-rate percent 5",
        "set class-of-service schedulers network-control-sched buffer-size percent 5",
        "set class-of-service scheduler-maps alphaqos forwarding-class network-control scheduler network-control-sched",
        "set interfaces xe-0/0/0 unit 0 family inet filter input alphaqos",
        "set class-of-service interfaces xe-0/0/1 scheduler-map alphaqos",
    ]:
        assert line in lines
    assert not any("policer" in x for x in lines)  # no policing by default
    assert "# Junos has no class-default. A packet this filter sees that no term above claims goes to beta" in lines
    # Reloading replaces the prefix lists rather than adding to them.
    assert lines.index("delete policy-options prefix-list alpha-src") < lines.index(
        "set policy-options prefix-list alpha-src 10.0.2.0/24")


def test_cisco_default(default_out):
    text = _unversioned(default_out / "cisco.cfg")
    assert "object-group network ALPHA-SRC-V\n 10.0.2.0 255.255.255.0\n 10.0.3.0 255.255.255.0\n" in text
    assert "object-group network ALPHA-DST-V\n 10.0.1.0 255.255.255.0\nip access-list extended ALPHA-V\n" in text
    assert " permit ip object-group ALPHA-SRC-V object-group ALPHA-DST-V\n" in text
    assert " class ALPHA-V\n  set qos-group 1\n class class-default\n  set qos-group 0\n" in text
    assert " class CLASS-alpha-V\n  bandwidth percent 60\n  queue-limit 75000000 bytes\n" in text
    assert " class CLASS-beta-V\n  bandwidth percent 40\n  queue-limit 50000000 bytes\n" in text
    assert "interface TenGigabitEthernet0/1\n service-policy output ALPHAQOS-OUT-V\n" in text
    assert "interface TenGigabitEthernet0/0\n service-policy input ALPHAQOS-IN-V\n" in text
    assert "xe-0/0" not in text  # the Junos names stay in the Junos file
    assert "police" not in text
    # Nothing is removed before it is replaced: a first run removes nothing.
    assert not any(x.startswith("no ") for x in text.splitlines())


def test_tc_default(default_out):
    lines = _lines(default_out / "tc.sh")
    assert "DEV=${1:-eth2}" in lines  # the linux egress interface
    assert 'qdisc add dev $1 root handle 1: htb default 10' in lines
    # burst: 1 ms at the rate in whole 1514-byte frames (4 Gbit/s: 500000 B -> 331 frames);
    # cburst the same at the ceil (10 Gbit/s: 1250000 B -> 826 frames); 6 Gbit/s: 496 frames.
    assert ('class add dev $1 parent 1:1 classid 1:10 htb rate 4gbit ceil 10gbit burst 501134 cburst 1250564 '
            "prio 3 quantum 80000") in lines  # fmt: skip
    assert ('class add dev $1 parent 1:1 classid 1:11 htb rate 6gbit ceil 10gbit burst 750944 cburst 1250564 '
            "prio 2 quantum 120000") in lines  # fmt: skip
    # Host-sized leaves, not the router's 75 MB.
    assert 'qdisc add dev $1 parent 1:11 handle 11: fq_codel' in lines
    assert not any("bfifo" in x for x in lines)
    filters = [x for x in lines if "match ip" in x]
    assert filters == [
        'filter add dev $1 parent 1: protocol ip prio 1 u32 ht 100: match ip dst 10.0.1.0/24 flowid 1:11',
        'filter add dev $1 parent 1: protocol ip prio 1 u32 ht 800: match ip src 10.0.2.0/24 link 100:',
        'filter add dev $1 parent 1: protocol ip prio 1 u32 ht 800: match ip src 10.0.3.0/24 link 100:',
    ]


def test_tc_rate_option(tmp_path):
    status, out = _provision(tmp_path, "--rate", "1gbit", "--target", "tc")
    assert status == 0
    text = (out / "tc.sh").read_text()
    assert "classid 1:11 htb rate 600mbit ceil 1gbit" in text and "classid 1:10 htb rate 400mbit ceil 1gbit" in text
    assert sorted(p.name for p in out.iterdir()) == ["tc.sh", "tc.sh.diff"]


def test_nftables_default_timeouts_from_aging(default_out):
    text = (default_out / "alphaqos.nft").read_text()
    # aging 30 days, reference 2026-01-25: 10.0.2.0/24 last seen 15 days
    # before, 10.0.3.0/24 4.5 days before, 10.0.1.0/24 1 day before.
    assert textwrap.dedent("""\
        set alpha_src {
                type ipv4_addr
                flags interval, timeout
                timeout 30d
                elements = {
                    10.0.2.0/24 timeout 15d,
                    10.0.3.0/24 timeout 25d12h
                }
            }""").replace("        ", "    ") in text.replace("        ", "    ")
    assert "10.0.1.0/24 timeout 29d" in text
    assert 'ip saddr @alpha_src ip daddr @alpha_dst meta priority set 1:11 counter comment "alpha"' in text


# --- a policy with policers, drop profiles and three classes ------------------


def test_junos_policy(policy_out):
    lines = _lines(policy_out / "junos.conf")
    f = "set firewall family inet filter alphaqos"
    for line in [
        f"{f} term voice from protocol udp",
        f"{f} term voice from destination-port 5000-5010",
        f"{f} term voice from dscp ef",
        f"{f} term voice then policer voice-policer",
        f"{f} term voice then forwarding-class voice",
        "set firewall policer voice-policer if-exceeding bandwidth-limit 100000000 burst-size-limit 31000",
        "set firewall policer voice-policer then discard",
        f"{f} term scavenge from source-address 10.0.9.0/24",
        f"{f} term scavenge then three-color-policer single-rate scavenge-policer",
        "set firewall three-color-policer scavenge-policer single-rate color-blind",
        "set firewall three-color-policer scavenge-policer single-rate committed-information-rate 200000000",
        "set firewall three-color-policer scavenge-policer single-rate committed-burst-size 30000",
        "set firewall three-color-policer scavenge-policer single-rate excess-burst-size 60000",
        "set firewall three-color-policer scavenge-policer action loss-priority high then discard",
        "set class-of-service schedulers be-sched transmit-rate percent 28",
        "set class-of-service schedulers alpha-sched transmit-rate percent 47",
        "set class-of-service schedulers voice-sched transmit-rate percent 19",
        "set class-of-service schedulers network-control-sched transmit-rate percent 6",
        "set class-of-service schedulers voice-sched priority strict-high",
        "set class-of-service drop-profiles alpha-high interpolate fill-level [ 0 50 100 ] drop-probability [ 0 20 100 ]",
        "set class-of-service schedulers alpha-sched drop-profile-map loss-priority high protocol any drop-profile alpha-high",
        "# not rendered: class 'be': wred drop profile (Junos drop profiles are interpolated curves on the queue fill)",
        "#   - class 'be': wred drop profile (Junos drop profiles are interpolated curves on the queue fill)",
    ]:
        assert line in lines, line
    # Term order: the policy's terms, then α, then the default.
    order = [x.split()[7] for x in lines if x.startswith(f + " term ")]
    assert list(dict.fromkeys(order)) == ["voice", "scavenge", "alpha", "default"]


def test_cisco_policy(policy_out):
    text = _unversioned(policy_out / "cisco.cfg")
    assert "ip access-list extended TERM-voice-V\n permit udp any any range 5000 5010\n" in text
    assert "class-map match-all TERM-voice-V\n match access-group name TERM-voice-V\n match dscp 46\n" in text
    assert " class TERM-voice-V\n  set qos-group 2\n  police cir 100000000 bc 31000 conform-action transmit exceed-action drop\n" in text
    assert ("  police cir 200000000 bc 30000 be 60000 conform-action transmit "
            "exceed-action set-discard-class-transmit 1 violate-action drop\n") in text  # fmt: skip
    assert (" class CLASS-be-V\n  bandwidth percent 30\n  queue-limit 30000000 bytes\n  random-detect discard-class-based\n"
            "  random-detect exponential-weighting-constant 9\n  random-detect discard-class 0 40 80 10\n"
            "  random-detect discard-class 2 10 40 2\n") in text  # fmt: skip
    assert " class CLASS-voice-V\n  priority\n" in text
    assert " class CLASS-alpha-V\n  bandwidth percent 50\n" in text


def test_tc_policy(policy_out):
    lines = _lines(policy_out / "tc.sh")
    classes = [x.split("classid ", 1)[1] for x in lines if "htb rate" in x]
    assert [" ".join(c.split()[:6] + c.split()[10:12]) for c in classes[1:]] == [
        "1:10 htb rate 3gbit ceil 10gbit prio 4", "1:11 htb rate 5gbit ceil 10gbit prio 2", "1:12 htb rate 2gbit ceil 10gbit prio 0",
    ]  # fmt: skip
    voice = [x.split("u32 ", 1)[1] for x in lines if "filter add" in x and "prio 1 " in x]
    # One bucket for the whole term: a table holding the policer, linked from
    # every block of the match. 5000-5010 as u32 blocks: 5000/13 bits,
    # 5008/15 bits, 5010/16 bits; DSCP ef = 0xb8 in the TOS byte.
    assert voice == ["divisor 1",
                     "ht 101: match u32 0 0 flowid 1:12 action police rate 100mbit burst 31000 conform-exceed drop/continue"] + [
        f"ht 800: match ip protocol 17 0xff match ip dport {port} {mask} match ip dsfield 0xb8 0xfc link 101:"
        for port, mask in (("5000", "0xfff8"), ("5008", "0xfffe"), ("5010", "0xffff"))
    ]  # fmt: skip
    assert [x.split("u32 ", 1)[1] for x in lines if "filter add" in x and "prio 2 " in x] == [
        f"match ip protocol 17 0xff match ip dport {port} {mask} match ip dsfield 0xb8 0xfc flowid 1:12"
        for port, mask in (("5000", "0xfff8"), ("5008", "0xfffe"), ("5010", "0xffff"))
    ]
    # srTCM, red discarded: a bucket of cir and cbs + ebs (30 KB + 60 KB).
    assert ('filter add dev $1 parent 1: protocol ip prio 3 u32 ht 102: match u32 0 0 flowid 1:10 '
            "action police rate 200mbit burst 90000 conform-exceed drop/continue") in lines  # fmt: skip
    assert any(x.endswith("prio 4 u32 match ip src 10.0.9.0/24 flowid 1:10") for x in lines)
    assert not any("not rendered: term" in x for x in lines)


def test_nftables_policy(policy_out):
    text = (policy_out / "alphaqos.nft").read_text()
    assert ('meta l4proto udp th dport 5000-5010 ip dscp 46 limit rate over 12500000 bytes/second burst 31000 bytes '
            'counter drop comment "voice red"') in text  # fmt: skip
    assert 'meta l4proto udp th dport 5000-5010 ip dscp 46 meta priority set 1:12 counter accept comment "voice"' in text
    assert 'ip saddr 10.0.9.0/24 meta priority set 1:10 counter accept comment "scavenge"' in text


def test_policy_warnings_on_stderr(tmp_path, capsys):
    policy = _write(tmp_path / "policy.yaml", POLICY)
    assert _provision(tmp_path, "--policy", str(policy), "--allow-partial")[0] == 0
    err = capsys.readouterr().err
    assert "junos cannot express class 'be': wred drop profile" in err and "1 IPv6 prefixes not rendered" in err


# --- the prefix database -------------------------------------------------------


def test_prefix_database(tmp_path):
    db = tmp_path / "alpha.duckdb"
    con = open_db(db)
    ts = lambda s: datetime.fromisoformat(s)  # noqa: E731
    con.executemany("INSERT INTO prefixes VALUES (?, ?, 4, ?, ?, 2e9, 3)", [
        ("10.0.2.0/24", "src", ts("2026-01-01"), ts("2026-01-20")),
        ("10.0.1.1/32", "dst", ts("2026-01-01"), ts("2026-01-24T12:00:00")),
    ])  # fmt: skip
    con.execute("INSERT INTO settings VALUES ('aging_us', ?)", [str(10 * 86_400 * 10**6)])
    end_us = int(datetime(2026, 1, 25, tzinfo=UTC).timestamp() * 10**6)
    con.execute("INSERT INTO processed VALUES ('r1', DATE '2026-01-24', 'x', 1, ?, now())", [end_us])
    con.close()
    out = tmp_path / "out"
    assert cli.main(["provision", "--prefixes", str(db), "--out", str(out), "--target", "nftables,junos"]) == 0
    text = (out / "alphaqos.nft").read_text()
    # 10 days of aging from the database, counted to its data end.
    assert "timeout 10d\n" in text
    assert "10.0.2.0/24 timeout 5d\n" in text and "10.0.1.1/32 timeout 9d12h\n" in text
    assert "set policy-options prefix-list alpha-dst 10.0.1.1/32" in _lines(out / "junos.conf")


def test_not_a_database(tmp_path, capsys):
    bogus = _write(tmp_path / "x.duckdb", "")
    duckdb.connect(str(bogus.with_name("empty.duckdb"))).close()
    assert cli.main(["provision", "--prefixes", str(tmp_path / "empty.duckdb"), "--out", str(tmp_path / "o")]) == 2
    assert "not a database of 'alphaqos flows identify'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# --- runs after runs -----------------------------------------------------------


def test_diff_shows_added_and_removed_prefix(tmp_path):
    assert _provision(tmp_path)[0] == 0
    changed = PREFIXES.replace("src 10.0.3.0/24", "src 10.0.4.0/24")
    status, out = _provision(tmp_path, prefixes=changed)
    assert status == 0
    junos = _lines(out / "junos.conf.diff")
    assert junos[:2] == ["--- a/junos.conf", "+++ b/junos.conf"]
    assert "-set policy-options prefix-list alpha-src 10.0.3.0/24" in junos
    assert "+set policy-options prefix-list alpha-src 10.0.4.0/24" in junos
    changes = [x for x in junos if x[:1] in "+-" and x[:3] not in ("+++", "---")]
    assert len(changes) == 2
    cisco = _lines(out / "cisco.cfg.diff")
    assert "- 10.0.3.0 255.255.255.0" in cisco and "+ 10.0.4.0 255.255.255.0" in cisco
    nft = _lines(out / "alphaqos.nft.diff")
    assert any(x.startswith("-") and "10.0.3.0/24" in x for x in nft)
    assert any(x.startswith("+") and "10.0.4.0/24" in x for x in nft)
    # A third identical run: empty diffs.
    assert _provision(tmp_path, prefixes=changed)[0] == 0
    assert (out / "junos.conf.diff").read_text() == ""
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary files left


# --- bad input: exit 2, nothing written ------------------------------------------


def test_bad_policy_names_file_and_line(tmp_path, capsys):
    bad = _write(tmp_path / "bad.yaml", "buffer: 125MB\nclasses:\n  alpha: {transmit_rate: 60%, buffer_size: 60%, colour: red}\n")
    status, out = _provision(tmp_path, "--policy", str(bad))
    assert status == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: classes.alpha.colour: unknown key 'colour'" in err
    assert not out.exists()


def test_bad_policy_leaves_existing_directory_untouched(tmp_path, capsys):
    assert _provision(tmp_path)[0] == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    bad = _write(tmp_path / "bad.yaml", "classes:\n  alpha: {transmit_rate: 160%, buffer_size: 60%}\n")
    assert _provision(tmp_path, "--policy", str(bad), prefixes="src 10.9.9.0/24\n")[0] == 2
    assert f"{bad}:2:" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def test_policy_scheduler_check_reported(tmp_path, capsys):
    bad = _write(tmp_path / "bad.yaml", "scheduler: wrr\nclasses:\n  alpha: {weight: 1, buffer_size: 50%, transmit_rate: 5%}\n")
    assert _provision(tmp_path, "--policy", str(bad))[0] == 2
    assert f"{bad}:3: classes.alpha.transmit_rate: class 'alpha': transmit_rate is not used" in capsys.readouterr().err


def test_policy_read_out_of_a_scenario_file(tmp_path):
    """``--policy scenario.yaml#two-queues``: the policy a scenario simulates,
    provisioned as it is, the same as from a file of its own."""
    import yaml

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "yan2013" / "exp1-2queues.yaml"
    alone = _write(tmp_path / "two-queues.yaml", yaml.safe_dump(yaml.safe_load(scenario.read_text())["policies"]["two-queues"], sort_keys=False))
    assert _provision(tmp_path, "--policy", f"{scenario}#two-queues", out="a")[0] == 0
    assert _provision(tmp_path, "--policy", str(alone), out="b")[0] == 0
    assert (tmp_path / "a" / "junos.conf").read_text() == (tmp_path / "b" / "junos.conf").read_text()


def test_unknown_target(tmp_path, capsys):
    status, out = _provision(tmp_path, "--target", "junos,ios-xr")
    assert status == 2
    assert "unknown target 'ios-xr' (targets: junos, cisco, tc, nftables, dtn)" in capsys.readouterr().err
    assert not out.exists()


def test_unknown_alpha_class_and_bad_prefix_line(tmp_path, capsys):
    assert _provision(tmp_path, "--alpha-class", "gold")[0] == 2
    assert "the α class 'gold' is not a class of the policy" in capsys.readouterr().err
    assert _provision(tmp_path, prefixes="src 10.0.2.0/24\nsrc 10.0.300.0/24\n")[0] == 2
    assert "prefixes.txt:2: not an address prefix: '10.0.300.0/24'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --- the tc script applied for real ----------------------------------------------


def _tc_skip_reason() -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0:
        return "needs root on Linux to create a network namespace"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    return None


@pytest.fixture
def netns():
    reason = _tc_skip_reason()
    if reason:
        pytest.skip(reason)
    with namespaces("aqprov") as (name,):
        yield name


def _ns(ns: str, *argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, check=True, **kw)


SEND = """\
import socket, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 0))
for _ in range(n):
    s.sendto(b"x" * 1000, (dst, 9))
"""


def _class_bytes(ns: str, dev: str) -> dict[str, int]:
    out, current = {}, None
    for line in _ns(ns, "tc", "-s", "class", "show", "dev", dev).stdout.splitlines():
        words = line.split()
        if words[:2] == ["class", "htb"]:
            current = words[2]
        elif words[:1] == ["Sent"] and current:
            out[current] = int(words[1])
    return out


def _qdisc_missing(ns: str, dev: str, qdisc: str) -> str | None:
    """Why ``qdisc`` cannot be used on ``dev`` (the kernel lacks it), or None."""
    probe = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", *qdisc.split()],
                           capture_output=True, text=True)  # fmt: skip
    subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root"], capture_output=True)
    return None if probe.returncode == 0 else f"this kernel has no {qdisc.split()[0]} qdisc ({probe.stderr.strip()})"


def _veth(ns: str) -> tuple[str, str]:
    dev, peer = "aq0", "aq1"  # names inside the test's own namespace
    _ns(ns, "ip", "link", "add", dev, "type", "veth", "peer", "name", peer)
    for link in (dev, peer, "lo"):
        _ns(ns, "ip", "link", "set", link, "up")
    return dev, peer


def _host_leaf(ns: str, dev: str) -> list[str]:
    """The tc leaf option to apply with: the default fq_codel where the
    kernel has it, else bfifo, saying why."""
    reason = _qdisc_missing(ns, dev, "fq_codel")
    if reason:
        print(f"applying with --tc-leaf bfifo: {reason}")
        return ["--tc-leaf", "bfifo"]
    return []


def test_tc_script_applied_in_a_namespace(tmp_path, netns):
    dev, peer = _veth(netns)
    leaf = _host_leaf(netns, dev)
    status, out = _provision(tmp_path, "--target", "tc", "--rate", "1gbit", *leaf)
    assert status == 0
    # An α source (10.0.2.5 in alpha-src) and a non-α one on the veth; the
    # destination (in alpha-dst) is reached through the veth with a static
    # neighbour entry, so the packets leave by aq0 and its qdisc, and go no
    # further than aq1 in the same namespace.
    _ns(netns, "ip", "addr", "add", "10.0.2.5/24", "dev", dev)
    _ns(netns, "ip", "addr", "add", "10.0.8.5/24", "dev", dev)
    _ns(netns, "ip", "route", "add", "10.0.1.0/24", "dev", dev)
    _ns(netns, "ip", "neigh", "add", "10.0.1.7", "lladdr", "02:00:00:00:00:07", "dev", dev, "nud", "permanent")
    _ns(netns, "sh", str(out / "tc.sh"), dev)

    classes = _ns(netns, "tc", "class", "show", "dev", dev).stdout
    assert "class htb 1:10 parent 1:1 leaf 10: prio 3 rate 400Mbit ceil 1Gbit" in classes
    assert "class htb 1:11 parent 1:1 leaf 11: prio 2 rate 600Mbit ceil 1Gbit" in classes
    qdiscs = _ns(netns, "tc", "qdisc", "show", "dev", dev).stdout
    if leaf:  # bfifo of 10 ms at the class's rate: 600 Mbit/s -> 750000 bytes
        assert "qdisc bfifo 11: parent 1:11 limit 750000b" in qdiscs
    else:
        assert "qdisc fq_codel 11: parent 1:11" in qdiscs
    # The bursts the kernel holds are the script's (1 ms of 600 Mbit/s: 50
    # frames, 75700 B; of 1 Gbit/s: 83 frames, 125662 B), as the kernel
    # keeps them: in time at the rate, shown rounded.
    detail = _ns(netns, "tc", "-d", "class", "show", "dev", dev, "classid", "1:11").stdout
    burst, cburst = (int(x) for x in re.search(r" burst (\d+)b.* cburst (\d+)b", detail).groups())
    assert abs(burst - 75700) < 757 and abs(cburst - 125662) < 1257, detail
    filters = _ns(netns, "tc", "filter", "show", "dev", dev).stdout
    assert "flowid 1:11" in filters and "match 0a000100/ffffff00 at 16" in filters  # dst 10.0.1.0/24
    assert "link 100:" in filters and "match 0a000200/ffffff00 at 12" in filters  # src 10.0.2.0/24
    assert "match 0a000300/ffffff00 at 12" in filters

    before = _class_bytes(netns, dev)
    script = _write(tmp_path / "send.py", SEND)
    _ns(netns, sys.executable, str(script), "10.0.2.5", "10.0.1.7", "50")
    mid = _class_bytes(netns, dev)
    assert mid["1:11"] - before["1:11"] >= 50 * 1000  # α: into the alpha class
    assert mid["1:10"] - before["1:10"] < 50 * 1000
    _ns(netns, sys.executable, str(script), "10.0.8.5", "10.0.1.7", "30")
    after = _class_bytes(netns, dev)
    assert after["1:10"] - mid["1:10"] >= 30 * 1000  # not α: the default class
    assert after["1:11"] == mid["1:11"]
    # An α source towards a destination not in alpha-dst: the linked table
    # does not match, so the packet falls through to the default class.
    _ns(netns, "ip", "route", "add", "10.0.7.0/24", "dev", dev)
    _ns(netns, "ip", "neigh", "add", "10.0.7.7", "lladdr", "02:00:00:00:00:08", "dev", dev, "nud", "permanent")
    _ns(netns, sys.executable, str(script), "10.0.2.5", "10.0.7.7", "20")
    last = _class_bytes(netns, dev)
    assert last["1:10"] - after["1:10"] >= 20 * 1000
    assert last["1:11"] == after["1:11"]


# --- a scenario's policy, and an empty table ---------------------------------------


def test_scenario_policy_renders(tmp_path):
    """The policy of the yan2013 2-queues scenario, as a file of its own."""
    import yaml

    root = Path(__file__).resolve().parent.parent
    scenario = yaml.safe_load((root / "scenarios/yan2013/exp1-2queues.yaml").read_text())
    policy = _write(tmp_path / "two-queues.yaml", yaml.safe_dump(scenario["policies"]["two-queues"]))
    status, out = _provision(tmp_path, "--policy", str(policy), "--target", "junos")
    assert status == 0
    lines = _lines(out / "junos.conf")
    f = "set firewall family inet filter alphaqos term alpha-flow"
    assert [x for x in lines if x.startswith(f)] == [
        f"{f} from source-address 10.0.2.1/32", f"{f} from destination-address 10.0.1.1/32",
        f"{f} from protocol tcp", f"{f} then forwarding-class alpha", f"{f} then count alpha-flow", f"{f} then accept",
    ]  # fmt: skip


def test_empty_table_renders_no_alpha_match(tmp_path):
    status, out = _provision(tmp_path, prefixes="# nothing identified yet\n")
    assert status == 0
    junos = _lines(out / "junos.conf")
    assert not any("prefix-list alpha-src " in x and x.startswith("set") for x in junos)
    assert "# no α term: the α source or destination list is empty" in junos
    assert " deny ip any any" in _lines(out / "cisco.cfg")
    assert "# no α filters: the α source or destination list is empty" in _lines(out / "tc.sh")
    nft = (out / "alphaqos.nft").read_text()
    assert "elements" not in nft and "set alpha_src {" in nft
