"""The link tap from the user's side: ``tap:`` on a link writes a pcap of
what that direction sends, with real Ethernet/IPv4/TCP/UDP/ICMP headers,
which Debian's tcpdump reads packet for packet (the counts per protocol and
the flows' addresses, ports and sequence numbers match the run's tables);
the YAQS queue kind and the monitor in a scenario; bad keys named."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

sys.path.insert(0, str(Path(__file__).parent))
from _system import require_debian_package  # noqa: E402

from alphaqos import cli  # noqa: E402

SCENARIO = """\
name: tap
duration: 2s
nodes:
  A: {address: 10.0.1.1}
  B: {address: 10.0.2.1}
  R: {router: true}
links:
  - {between: [A, R], rate: 100Mbps, delay: 1ms, tap: a-side}
  - between: [R, B]
    rate: 20Mbps
    delay: 1ms
    queues: {R: {yaqs: {c_f: 16500B, r: 0.5, limit: 512p, epsilon: 0.5}}}
    taps: {R: true}
    monitors: {R: true}
flows:
  - {name: bulk, tcp: {from: A, to: B, cc: cubic, size: 6MB}, start: 0.1s}
  - {name: cbr, udp: {from: A, to: B, rate: 1Mbps, size: 500B}}
  - {name: p, ping: {from: A, to: B, interval: 10ms}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("tap")
    (base / "s.yaml").write_text(SCENARIO)
    out = base / "out"
    assert cli.main(["run", str(base / "s.yaml"), "--out", str(out), "--quiet"]) == 0
    return out


def tcpdump(path: Path, *args: str) -> list[str]:
    require_debian_package("tcpdump", binary="tcpdump")
    done = subprocess.run(
        ["tcpdump", "-nn", "-S", "-r", str(path), *args], capture_output=True, text=True, timeout=60, check=True
    )
    return [line for line in done.stdout.splitlines() if line.strip()]


def test_tcpdump_parses_every_packet_and_the_counts_match(run):
    taps = sorted(p.name for p in (run / "taps").iterdir())
    assert taps == ["R-B.pcap", "a-side-A-R.pcap", "a-side-R-A.pcap"]
    summary = pl.read_parquet(run / "queue_summary.parquet")
    sent = summary.filter(pl.col("link") == "R->B")["deq_pkts"].sum()
    lines = tcpdump(run / "taps" / "R-B.pcap", "-v")
    # -v prints two lines per IPv4 packet: the IP header, then the payload.
    headers = [line for line in lines if re.match(r"^\d+:\d+:\d+\.\d+ IP \(", line)]
    assert len(headers) == sent > 1000
    assert not any("bad cksum" in line or "truncated-ip" in line for line in lines)
    kinds = Counter(re.search(r"proto (\w+)", h)[1] for h in headers)
    flows = pl.read_parquet(run / "flow_summary.parquet")
    rx = dict(zip(flows["flow"], flows["rx_pkts"]))
    # Everything that went R->B reached B but the frames still propagating
    # on its 1 ms (20 Mbps: at most three) when the run ended.
    assert sum(kinds.values()) == sent
    for proto, flow in (("UDP", "cbr"), ("ICMP", "p"), ("TCP", "bulk")):
        assert 0 <= kinds[proto] - rx[flow] <= 3, (proto, kinds, rx)


def test_flows_addresses_ports_and_sequence_numbers(run):
    lines = tcpdump(run / "taps" / "R-B.pcap", "tcp")
    data = [line for line in lines if "length 1448" in line]
    flows = {re.search(r"IP (\S+) > (\S+?):", line).groups() for line in lines}
    assert len(flows) == 1
    src, dst = next(iter(flows))
    assert src.startswith("10.0.1.1.") and dst == "10.0.2.1.5001"
    # Absolute sequence numbers: byte offsets + 1 (the SYN takes 0), each
    # segment's range its 1448 bytes, the first at 1.
    ranges = [tuple(map(int, re.search(r"seq (\d+):(\d+)", line).groups())) for line in data]
    assert ranges[0][0] == 1 and all(b - a == 1448 for a, b in ranges)
    assert all(r[0] < 6_000_001 for r in ranges) and len(data) > 1000
    assert all("TS val" in line for line in data)
    # The reverse direction (R->A) carries B's ACKs with timestamps.
    acks = tcpdump(run / "taps" / "a-side-R-A.pcap", "tcp")
    assert len(acks) > 500 and all(re.search(r"ack \d+", a) and "TS val" in a for a in acks[1:])


def test_yaqs_and_the_monitor_report(run):
    yaqs = pl.read_parquet(run / "yaqs.parquet")
    assert yaqs["queue"].to_list() == ["R->B"]
    assert yaqs["classified_slow"][0] > 0 and yaqs["false_positives"][0] is not None
    monitor = pl.read_parquet(run / "monitor.parquet")
    assert monitor["reordered_pkts"][0] == 0 and monitor["data_pkts"][0] > 1000
    series = pl.read_parquet(run / "yaqs_series.parquet")
    assert series.height == 20 and series["time"][0] == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("edit", "bad", "says"),
    [
        ("r: 0.5", "r: 1.5", "links[1].queues.R.yaqs.r: expected less than or equal to 1"),
        ("c_f: 16500B", "c_f: -5B", "links[1].queues.R.yaqs.c_f: negative value"),
        ("r: 0.5", "r: 0.5, sketch_rows: 0", "links[1].queues.R.yaqs.sketch_rows: expected greater than or equal to 1"),
        ("r: 0.5", "r: 0.5, sketch_buckets: 0", "links[1].queues.R.yaqs.sketch_buckets: expected greater"),
        ("taps: {R: true}", "taps: {R: ../x.pcap}", "links[1].taps.R: a tap is true or a file name"),
        ("taps: {R: true}", "taps: {Q: true}", "links[1].taps.Q: 'Q' is not an end of this link"),
    ],
)
def test_bad_yaqs_and_tap_keys_exit_2_naming_the_field(tmp_path, capsys, edit, bad, says):
    (tmp_path / "s.yaml").write_text(SCENARIO.replace(edit, bad))
    assert cli.main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"s\.yaml:1[23]: ", err) and says in err, err
    assert not (tmp_path / "out").exists()
