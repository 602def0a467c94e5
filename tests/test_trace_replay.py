"""``alphaqos trace-replay``: a trace replayed into a link of beta x its
mean rate (Liberatore, "Local Flow Separation", Section IV) under several
disciplines, its figures checked against an independent computation of the
FIFO queue, its run directory, and its refusals of bad input. Seconds."""

from __future__ import annotations

import collections
import json
import random
import struct
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from alphaqos import cli  # noqa: E402
from alphaqos import trace as T  # noqa: E402

HEADER = "time,size,src,dst,sport,dport,proto\n"


def make_packets(seed: int = 7) -> list[tuple[float, int, str, str, int, int, int]]:
    """Web-like flows (Poisson starts, 400/s, Pareto packet counts of shape
    1.2 up to 40) for 1 s, and one aggressive flow sending 1500 B packets
    at 40 Mbit/s from 0.3 to 0.5 s."""
    rng = random.Random(seed)
    pkts, t, port = [], 0.0, 10000
    while t < 1.0:
        t += rng.expovariate(400)
        port += 1
        n = min(int(rng.paretovariate(1.2)), 40)
        for k in range(n):
            pkts.append((t + k * 0.0003, 1500 if k < n - 1 else 600, f"10.1.0.{port % 200 + 1}", "10.2.0.1", port, 80, 6))
    for k in range(int(0.2 * 40e6 / 12000)):
        pkts.append((0.3 + k * 12000 / 40e6, 1500, "10.3.0.1", "10.2.0.9", 5001, 5001, 6))
    return sorted(pkts)


def write_csv(path: Path, pkts) -> Path:
    path.write_text(HEADER + "".join(",".join(f"{v:.9f}" if i == 0 else str(v) for i, v in enumerate(p)) + "\n" for p in pkts))
    return path


def write_pcap(path: Path, pkts) -> Path:
    """The same packets as a pcap of raw IPv4 (link type 101), each cut
    after the IP header and the ports (24 bytes kept)."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)]
    for t, size, src, dst, sport, dport, proto in pkts:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, size, 0, 0, 64, proto, 0,
                         bytes(map(int, src.split("."))), bytes(map(int, dst.split(".")))) + struct.pack("!HH", sport, dport)  # fmt: skip
        usec = round(t * 1e6)
        out.append(struct.pack("<IIII", usec // 1_000_000, usec % 1_000_000, len(ip), size) + ip)
    path.write_bytes(b"".join(out))
    return path


def fifo_queue_seen(pkts, rate_bps: float) -> list[int]:
    """Bytes waiting (not in transmission) as each packet arrives at a FIFO
    sending at ``rate_bps``: the replay's measure, computed here packet by
    packet (times in whole ns, as the engine reads them)."""
    t0 = round(pkts[0][0] * 1e9)
    queue: collections.deque[int] = collections.deque()
    waiting, free_at, seen = 0, 0.0, []
    for p in pkts:
        now, size = round(p[0] * 1e9) - t0, p[1]
        while queue and free_at <= now:
            sent = queue.popleft()
            waiting -= sent
            free_at += sent * 8 * 1e9 / rate_bps
        if not queue:
            free_at = max(free_at, now)
        seen.append(waiting)
        queue.append(size)
        waiting += size
    return seen


@pytest.fixture(scope="module")
def packets():
    return make_packets()


@pytest.fixture(scope="module")
def csv_trace(tmp_path_factory, packets) -> Path:
    return write_csv(tmp_path_factory.mktemp("trace") / "t.csv", packets)


@pytest.fixture(scope="module")
def run(tmp_path_factory, csv_trace) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("replay") / "run"
    status = cli.main(["trace-replay", str(csv_trace), "--queue", "fifo", "--queue", "yaqs", "--queue",
                       "r01=yaqs: {r: 0.1, c_s: 16500B}", "--queue", "fq_codel", "--quiet", "--out", str(out)])  # fmt: skip
    return status, out


def test_the_fifo_queue_is_the_one_computed_packet_by_packet(run, packets):
    status, out = run
    assert status == 0
    summary = json.loads((out / "summary.json").read_text())
    rate = summary["downstream_rate_bps"]
    # beta x the mean rate: bytes over the span from the first packet to the last.
    span = packets[-1][0] - packets[0][0]
    assert rate == pytest.approx(1.15 * sum(p[1] for p in packets) * 8 / span, rel=1e-6)
    seen = fifo_queue_seen(packets, rate)
    fifo = summary["queues"]["fifo"]
    assert fifo["qmax_bytes"] == max(seen)
    assert fifo["qmean_bytes"] == pytest.approx(sum(seen) / len(seen), abs=1)
    p90 = sorted(seen)[int(0.9 * len(seen))]
    assert fifo["q90_bytes"] == pytest.approx(p90, rel=0.03)  # a histogram's quantile
    assert fifo["drops"] == 0 and fifo["packets"] == len(packets)


def test_yaqs_separates_the_aggressive_flow(run):
    _, out = run
    table = {row["queue"]: row for row in pl.read_parquet(out / "replay.parquet").iter_rows(named=True)}
    assert list(table) == ["fifo", "yaqs", "r01", "fq_codel"]
    fifo, yaqs, r01 = table["fifo"], table["yaqs"], table["r01"]
    # The 40 Mbit/s flow builds FIFO's queue; YAQS moves it to the slow queue.
    assert yaqs["qmax_bytes"] * 5 < fifo["qmax_bytes"] and r01["q90_bytes"] * 5 < fifo["q90_bytes"]
    assert 1 <= yaqs["slow_flows_max"] < 20 and 0 < yaqs["slow_share"] < 1
    assert 0 <= yaqs["nop_share"] < 0.2
    assert yaqs["false_positive_pct"] is not None and yaqs["strict_false_positive_pct"] is not None  # epsilon 1/2 by default
    assert fifo["slow_flows_max"] is None and fifo["kind"] == "fifo" and r01["kind"] == "yaqs"
    # FQ-CoDel's buffer is unbounded too: only CoDel drops.
    assert table["fq_codel"]["drops"] < 0.05 * fifo["packets"]


def test_run_directory_tables_and_plot(run):
    _, out = run
    series = pl.read_parquet(out / "replay_series.parquet")
    assert set(series["queue"].unique()) == {"fifo", "yaqs", "r01", "fq_codel"}
    assert series.columns[:2] == ["queue", "time"] and series["time"].max() >= 0.99
    y = series.filter(pl.col("queue") == "yaqs")
    assert (y["fast_bytes"] <= y["len_bytes"]).all() and y["slow_flows"].max() >= 1
    hist = pl.read_parquet(out / "qlen_hist.parquet")
    counts = hist.group_by("queue").agg(pl.col("count").sum())
    assert set(counts["count"]) == {json.loads((out / "summary.json").read_text())["packets"]}
    assert (out / "plots" / "queue_ccdf.png").stat().st_size > 10_000
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"].startswith("alphaqos trace-replay")
    assert not list(out.parent.glob(".*partial*"))


def test_one_fifo_alone_keeps_the_table_types(tmp_path, csv_trace):
    out = tmp_path / "run"
    assert cli.main(["trace-replay", str(csv_trace), "--queue", "fifo", "--quiet", "--out", str(out)]) == 0
    schema = pl.read_parquet(out / "replay.parquet").schema
    assert schema["slow_flows_max"] == pl.Int64 and schema["slow_share"] == pl.Float64 and schema["qmax_bytes"] == pl.Int64


def test_pcap_and_csv_of_the_same_packets_agree(tmp_path, packets):
    pcap = write_pcap(tmp_path / "t.pcap", packets)
    spec = T.parse_queue("yaqs")
    # Microsecond timestamps in the pcap: round the CSV's the same way.
    csv = write_csv(tmp_path / "t.csv", [(round(p[0] * 1e6) / 1e6, *p[1:]) for p in packets])
    a, b = (T.replay_summary(T.replay(path, spec.config)) for path in (pcap, csv))
    assert a == b and a["packets"] == len(packets)


def test_limits_are_lifted_unless_given(csv_trace):
    unbounded = T.replay_summary(T.replay(csv_trace, T.parse_queue("fifo").config))
    limited = T.replay_summary(T.replay(csv_trace, T.parse_queue("fifo: {limit: 20p}").config))
    assert unbounded["drops"] == 0 and limited["drops"] > 100
    assert limited["qmax_bytes"] <= 20 * 1500
    fq = T.parse_queue("fq_codel").config["fq_codel"]
    assert fq["limit_pkts"] > 10**9 and fq["quantum_bytes"] == 1514  # not the engine's 10240 packets or the replay's MTU


def test_specs_from_files_and_labels(tmp_path):
    (tmp_path / "q.yaml").write_text("yaqs:\n  r: 0.1\n")
    (tmp_path / "p.yaml").write_text("classes:\n  a: {transmit_rate: 60%, buffer_size: 60%}\n  b: {transmit_rate: 40%, buffer_size: 40%}\n")
    specs = T.number_labels([T.parse_queue(s) for s in (str(tmp_path / "q.yaml"), "yaqs", f"pol={tmp_path / 'p.yaml'}")])
    assert [s.label for s in specs] == ["yaqs", "yaqs-2", "pol"]
    assert specs[0].config["yaqs"]["r"] == 0.1 and specs[1].config["yaqs"]["r"] == 0.5
    assert specs[2].kind == "policy" and specs[2].config["junos"]["buffer_pkts"] is None  # unbounded
    bundled = Path(__file__).parent.parent / "scenarios" / "yan2013" / "exp1-2queues.yaml"
    two = T.parse_queue(f"{bundled}#two-queues")
    assert two.kind == "policy" and two.config["junos"]["buffer_bytes"] == 125_000_000  # the policy set its buffer


def test_beta_below_one_is_a_note(tmp_path, csv_trace, capsys):
    out = tmp_path / "run"
    assert cli.main(["trace-replay", str(csv_trace), "--queue", "fifo", "--beta", "0.9", "--quiet", "--out", str(out)]) == 0
    assert "note: --beta 0.9 is below 1" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["beta"] == 0.9


@pytest.mark.parametrize(("args", "message"), [
    (["missing.pcap", "--queue", "fifo"], "trace 'missing.pcap': no such file"),
    (["{bad_csv}", "--queue", "fifo"], "line 3: size \"abc\" is not an IP size"),
    (["{bad_pcap}", "--queue", "fifo"], "byte 0: not a pcap file"),
    (["{trace}", "--queue", "fifo", "--beta", "0"], "--beta must be above 0, got 0"),
    (["{trace}", "--queue", "fifo", "--beta", "-2"], "--beta must be above 0"),
    (["{trace}", "--queue", "red"], "red.min_th: Field required"),
    (["{trace}", "--queue", "yaqs: {{r: 2}}"], "yaqs.r: Input should be less than or equal to 1"),
    (["{trace}", "--queue", "wfq"], "unknown discipline 'wfq'"),
    (["{trace}", "--queue", "nofile.yaml"], "--queue 'nofile.yaml': no such file"),
    (["{trace}", "--queue", "fifo", "--queue", "{scenario}"], "declares 2 different queues"),
])  # fmt: skip
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, csv_trace, capsys, args, message):
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text(HEADER + "0.0,1500,10.0.0.1,10.0.0.2,1,2,6\n0.1,abc,10.0.0.1,10.0.0.2,1,2,6\n")
    bad_pcap = tmp_path / "bad.pcap"
    bad_pcap.write_bytes(b"this is not a capture file at all")
    scenario = Path(__file__).parent.parent / "scenarios" / "yan2013" / "exp1-2queues.yaml"
    names = {"bad_csv": bad_csv, "bad_pcap": bad_pcap, "trace": csv_trace, "scenario": scenario}
    out = tmp_path / "out" / "run"
    status = cli.main(["trace-replay", *(a.format(**names) for a in args), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and message in err[0], err
    assert err[0].startswith("alphaqos: error: ")
    assert not (tmp_path / "out").exists()
