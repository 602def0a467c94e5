"""The circuit emulator (``alphaqos-emu``, ``alphaqos emulate``) between
namespaces the tests make: a short UDP transfer through a policed link
whose counters account for every packet the sender sent and the receiver
saw; the run directory's tables; bad input (one line, exit status 2,
nothing left behind)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from _system import need_root, require_debian_package

from alphaqos import emulate as E
from alphaqos import netns
from alphaqos.cli import main
from alphaqos.scenario import load_scenario, resolve

SCENARIO = """\
name: emu-policed
duration: 1s
nodes:
  snd: {address: 10.10.200.20}
  rtr: {router: true, policy: circuit}
  rcv: {address: 10.10.200.10}
policies:
  circuit:
    classes: {be: {transmit_rate: 100%%, buffer_size: 100%%}}
    filter:
      - name: circuit
        from: {source: 10.10.200.20/32}
        then: {policer: {rate: 20Mbps, burst: 30KB, out_of_profile: discard}}
links:
  - between: [snd, rtr]
    rate: 1Gbps
    delay: 0.01ms
  - between: [rtr, rcv]
    rate: %(rate)s
    delay: 5ms
    queues: {rtr: {fifo: {limit: 100}}, rcv: {fifo: {limit: 100}}}
"""

RECEIVE = """\
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind((sys.argv[1], 9000))
s.settimeout(float(sys.argv[2]))
print("ready", flush=True)
n = 0
try:
    while True:
        s.recv(65536)
        n += 1
except socket.timeout:
    pass
print(n, flush=True)
"""

SEND = """\
import socket, sys, time
dst, n, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
gap, t0 = 1000 * 8 / rate, time.perf_counter()
for i in range(n):
    while time.perf_counter() < t0 + i * gap:
        pass
    s.sendto(b"x" * 972, (dst, 9000))  # 1000 B IP packets
"""


@pytest.fixture
def scenario(tmp_path) -> Path:
    path = tmp_path / "policed.yaml"
    path.write_text(SCENARIO % {"rate": "100Mbps"})
    return path


@pytest.fixture
def emu_built():
    try:
        E.emu_binary()
    except E.EmuError as exc:
        pytest.skip(str(exc))


def test_policed_transfer_counts_every_packet(tmp_path, scenario, emu_built):
    need_root("the emulator's namespaces and raw sockets")
    (tmp_path / "rx.py").write_text(RECEIVE)
    (tmp_path / "tx.py").write_text(SEND)
    engine = resolve(load_scenario(scenario))
    sent = 2000
    with E.bench("aqtest") as b:
        config = E.emu_config(engine, ["rtr", "rcv"], b.ifaces)
        with E.Emulator(config) as emu:
            rx = subprocess.Popen(["ip", "netns", "exec", b.rcv, sys.executable, str(tmp_path / "rx.py"), b.rcv_ip, "0.6"],
                                  stdout=subprocess.PIPE, text=True)  # fmt: skip
            try:
                assert rx.stdout.readline().strip() == "ready"
                # 50 Mbit/s for 0.32 s into a 20 Mbit/s, 30 KB policer.
                b.run(b.snd, sys.executable, str(tmp_path / "tx.py"), b.rcv_ip, str(sent), "50e6", check=True)
                received = int(rx.communicate(timeout=30)[0].split()[-1])
            finally:
                rx.kill()
                rx.wait()
            tables = emu.stop()
    flows = pl.DataFrame(tables["emu_flows"])
    udp = flows.filter(pl.col("flow").str.ends_with(":9000/17")).row(0, named=True)
    run = {k: v[0] for k, v in tables["run"].items()}
    # Everything the sender sent reached the emulator or is counted as a socket drop.
    assert udp["rx_pkts"] + run["socket_drops"] == sent
    # Everything the emulator took is sent on or dropped for a counted reason ...
    assert udp["rx_pkts"] == udp["tx_pkts"] + udp["drop_pkts"]
    assert udp["drop_pkts"] == udp["drop_policer_pkts"] + udp["drop_tail_pkts"] + udp["drop_send_pkts"]
    assert udp["drop_filter_pkts"] == 0, "no term discards: the policer does"
    # ... and what it sent on is what the receiver saw.
    assert received == udp["tx_pkts"]
    # The policer passed about 20 Mbit/s + 30 KB of the 50 Mbit/s: most packets are its drops,
    # counted alike by the filter table.
    term = {k: v[0] for k, v in tables["filter"].items()}
    assert term["discarded_pkts"] == udp["drop_policer_pkts"] > 0
    duration = (sent - 1) * 1000 * 8 / 50e6
    allowed = (20e6 * duration / 8 + 30_000) / 1000
    assert allowed * 0.9 <= udp["tx_pkts"] <= allowed * 1.1 + 2, (udp, allowed)
    # The queue after the policer sent what the emulator sent on in that
    # direction (the transfer, and any frame the hosts' stacks send unasked),
    # but for frames still in the link's delay when the run stopped.
    summary = pl.DataFrame(tables["queue_summary"]).filter(pl.col("queue") == "rtr->rcv").row(0, named=True)
    # The policer's discards are counted at the queue they were bound for,
    # as what the emulator took and did not send on for that reason.
    policed = flows.filter(pl.col("direction") == "rtr->rcv")["drop_policer_pkts"].sum()
    assert summary["drop_policer_pkts"] == policed == term["discarded_pkts"]
    assert udp["rx_pkts"] - received == udp["drop_policer_pkts"] + udp["drop_tail_pkts"] + udp["drop_send_pkts"]
    in_flight = pl.DataFrame(tables["emu_timing"]).filter(pl.col("direction") == "rtr->rcv")["in_flight_pkts"][0]
    assert summary["deq_pkts"] == flows.filter(pl.col("direction") == "rtr->rcv")["tx_pkts"].sum() + in_flight
    timing = E.timing(tables)[0]
    assert timing["direction"] == "rtr->rcv" and timing["sent_pkts"] + in_flight == summary["deq_pkts"]
    print(json.dumps(timing))


def test_emulate_command_writes_a_run_directory(tmp_path, scenario, emu_built, capsys):
    need_root("the emulator's namespaces and raw sockets")
    with E.bench("aqtest") as b:
        out = tmp_path / "run"
        status = main(["emulate", str(scenario), "--link", "rtr-rcv", "--duration", "0.3s", "--out", str(out),
                       "--ifaces", f"{b.emu}:e0,{b.emu}:e1"])  # fmt: skip
    assert status == 0, capsys.readouterr().err
    assert "rtr->rcv:" in capsys.readouterr().out
    queue = pl.read_parquet(out / "queue.parquet")
    assert queue.columns[:5] == ["queue", "time", "len_pkts", "len_bytes", "tx_bytes"]
    assert set(queue["queue"]) == {"rtr->rcv", "rcv->rtr"} and queue["time"].max() == pytest.approx(0.3, abs=0.05)
    assert pl.read_parquet(out / "filter.parquet")["term"].to_list() == ["circuit"]
    assert "drop_policer_pkts" in pl.read_parquet(out / "queue_summary.parquet").columns
    summary = json.loads((out / "summary.json").read_text())
    assert [t["direction"] for t in summary["timing"]] == ["rtr->rcv", "rcv->rtr"]


@pytest.mark.parametrize(("link", "ifaces", "rate", "message"), [
    ("rtr-rcv", "{emu}:e0,{emu}:nosuch", "100Mbps", "interface \"nosuch\" in namespace"),
    ("rtr-rcv", "aq-no-such-ns:e0,{emu}:e1", "100Mbps", "no network namespace \"aq-no-such-ns\""),
    ("rtr-xyz", "{emu}:e0,{emu}:e1", "100Mbps", "no node 'xyz'"),
    ("snd-rcv", "{emu}:e0,{emu}:e1", "100Mbps", "no link between 'snd' and 'rcv'"),
    ("rtr-rcv", "{emu}:e0,{emu}:e1", "100Gbps", "hop rtr->rcv (rtr->rcv): 100Gbps is 8.13 million 1538-byte frames per second"),
])  # fmt: skip
def test_bad_input_is_one_line_and_leaves_nothing(tmp_path, emu_built, capsys, link, ifaces, rate, message):
    need_root("the emulator's namespaces and raw sockets")
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO % {"rate": rate})
    out = tmp_path / "run"
    with E.bench("aqtest") as b:
        status = main(["emulate", str(path), "--link", link, "--ifaces", ifaces.format(emu=b.emu), "--duration", "1s",
                       "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists() and list(tmp_path.iterdir()) == [path]


def test_a_lag_keeps_the_path_delay_and_must_fit_in_it(scenario, emu_built):
    # lag_ns: the hops run 2 ms behind the wall clock, taken off the 5 ms hop,
    # so a ping still sees the path's 2 x 5 ms; a lag longer than the longest
    # delay is refused in one line.
    need_root("the emulator's namespaces and raw sockets")
    require_debian_package("iputils-ping", binary="ping")
    engine = resolve(load_scenario(scenario))
    with E.bench("aqtest") as b:
        with pytest.raises(E.EmuError, match=r"^lag_ns: 6000000 ns is more than the longest delay of directions\[0\]"):
            with E.Emulator(E.emu_config(engine, ["rtr", "rcv"], b.ifaces, lag_ns=6_000_000)):
                pass
        with E.Emulator(E.emu_config(engine, ["rtr", "rcv"], b.ifaces, lag_ns=2_000_000)) as emu:
            done = b.run(b.snd, "ping", "-n", "-q", "-c", "5", "-i", "0.1", b.rcv_ip, timeout=30)
            tables = emu.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    rtt_min = float(done.stdout.split("min/avg/max")[1].split("=")[1].split("/")[0])
    assert 10.0 <= rtt_min < 11.0, done.stdout
    assert E.timing(tables)[0]["configured_delay_s"] == pytest.approx(0.005)


def test_a_flow_delay_gives_one_sender_a_longer_rtt(scenario, emu_built):
    # Two senders' addresses in one namespace; the emulator delays the second
    # one's packets by 15 ms each way before the path (5 ms each way): a ping
    # from the first sees 10 ms, from the second 40 ms, through the same hops.
    need_root("the emulator's namespaces and raw sockets")
    require_debian_package("iputils-ping", binary="ping")
    engine = resolve(load_scenario(scenario))
    far = "10.10.200.21"
    with E.bench("aqtest") as b:
        b.add_sender(far)
        config = E.emu_config(engine, ["rtr", "rcv"], b.ifaces, flow_delays=[({"src": f"{far}/32"}, 15_000_000)])
        assert config["directions"][1]["flow_delays"][0]["match"]["dst"] == f"{far}/32"
        with E.Emulator(config) as emu:
            pings = {ip: b.run(b.snd, "ping", "-n", "-q", "-c", "5", "-i", "0.1", "-I", ip, b.rcv_ip, timeout=30) for ip in (b.snd_ip, far)}
            emu.stop()
    rtt = {}
    for ip, done in pings.items():
        assert done.returncode == 0, done.stdout + done.stderr
        rtt[ip] = float(done.stdout.split("min/avg/max")[1].split("=")[1].split("/")[0])
    assert 10.0 <= rtt[b.snd_ip] < 11.0 and 40.0 <= rtt[far] < 41.0, rtt


def test_namespaces_go_with_their_processes_also_on_failure():
    # The one namespace set-up (alphaqos.netns) of the emulator's bench, the
    # capture and the tests: a failure inside the block still removes the
    # namespaces, their veth and every process started in them.
    need_root("network namespaces")
    with pytest.raises(RuntimeError, match="inside"):
        with netns.namespaces("aqtest", ("a", "b")) as (a, b):
            netns.veth(a, "x0", b, "x1")
            netns.up(a, "x0")
            assert netns.mac(a, "x0").count(":") == 5
            sleeper = subprocess.Popen([*netns.exec_argv(b), "sleep", "60"])
            raise RuntimeError("inside")
    assert sleeper.wait(timeout=10) != 0
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert a not in left and b not in left
    with pytest.raises(netns.NetnsError, match=r"^ip -n aq-no-such-ns link set lo up: "):
        netns.up("aq-no-such-ns", "lo")


def test_a_bad_configuration_is_one_line_naming_the_field(tmp_path, scenario, emu_built):
    # Parsed before any socket is opened (no root needed): serde with the
    # engine's queue and filter types; an unknown or mistyped field is named
    # by its path, exit status 2, nothing written.
    config = E.emu_config(resolve(load_scenario(scenario)), ["rtr", "rcv"], [("ns", "e0"), ("ns", "e1")])
    for mutate, message in [
        (lambda c: c["directions"][0]["hops"][0].update(rate_bps="fast"), "directions[0].hops[0].rate_bps: invalid type: string \"fast\""),
        (lambda c: c["directions"][1]["hops"][0].update(dealy_ns=1), "directions[1].hops[0].dealy_ns: unknown field `dealy_ns`"),
        (lambda c: c["directions"][0]["hops"][0]["queue"].update(fifo={"limit_pkts": -1}), "directions[0].hops[0].queue"),
        (lambda c: c["filters"][0]["terms"][0].update(policer={"rate_bps": 1}), "filters[0] (rtr): [0].policer: "),
        (lambda c: c["directions"][0].update(exit_filter=7), "directions[0].exit_filter: 7 is not a filter index (there are 1)"),
    ]:
        bad = json.loads(json.dumps(config))
        mutate(bad)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        done = subprocess.run([str(E.emu_binary()), str(path), "--out", str(tmp_path / "out.json")], capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"alphaqos-emu: error: {message}"), done.stderr
        assert not (tmp_path / "out.json").exists()
