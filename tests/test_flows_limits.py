"""Issue 20, the flows part: counts that are large but possible go through
identification without overflow; physically impossible records, times that
overflow and captures without time stamps never reach the store; what a
hostile exporter can make the decoder hold is capped."""

from __future__ import annotations

import socket
import struct
import tracemalloc
from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl
import pytest

from alphaqos.flows import netflow, schema
from alphaqos.flows.identify import identify
from alphaqos.flows.netflow import Decoder
from alphaqos.flows.pcap import read_pcap, write_pcap
from alphaqos.flows.readers import ReadOptions, RejectReport, read_goflow2
from alphaqos.flows.schema import Reason

T0 = datetime(2024, 1, 1, tzinfo=UTC)
EXPORT_S = 1_795_000_000  # 2026-11-18, the export time of the datagrams below


def fields(*pairs):
    return b"".join(struct.pack(">HH", ident, length) for ident, length in pairs)


def a_set(set_id, body):
    return struct.pack(">HH", set_id, 4 + len(body)) + body


def ipfix(domain, *sets, export_s=EXPORT_S, sequence=0):
    body = b"".join(sets)
    return struct.pack(">HHIII", 10, 16 + len(body), export_s, sequence, domain) + body


# --- 1. counters: unsigned 64-bit end to end, summed without overflow --------------------------


def test_identify_sums_records_of_2_to_the_63_bytes_and_more(tmp_path):
    # one record of 2^64 - 1 bytes (over 2^48 packets of 65,535 bytes: possible) beside a plain
    # 2 GB α flow; "round(sum(share))::BIGINT" failed on the whole store
    rows = [dict(exporter="r1", first=T0, last=T0 + timedelta(seconds=30), src_addr="10.0.0.1", dst_addr="10.0.1.1",
                 src_port=1, dst_port=2, protocol=6, bytes=2**64 - 1, packets=2**64 // 65_535 + 1, sampling_rate=1),
            dict(exporter="r1", first=T0, last=T0 + timedelta(seconds=30), src_addr="10.0.0.2", dst_addr="10.0.1.2",
                 src_port=1, dst_port=2, protocol=6, bytes=2 * 10**9, packets=2 * 10**6, sampling_rate=1)]  # fmt: skip
    schema.write_partitioned(pl.DataFrame(rows, schema_overrides={"bytes": pl.UInt64, "packets": pl.UInt64}), tmp_path / "s")
    assert pl.read_parquet(tmp_path / "s" / "**" / "*.parquet")["bytes"].max() == 2**64 - 1  # unsigned on disk
    summary = identify(tmp_path / "s", tmp_path / "a.duckdb")
    assert summary.alpha_intervals == 2
    with duckdb.connect(str(tmp_path / "a.duckdb"), read_only=True) as con:
        found = dict(con.execute("SELECT src_addr, bytes FROM alpha_flows").fetchall())
    assert found["10.0.0.2"] == 2e9 and found["10.0.0.1"] == pytest.approx(2.0**64)


# --- 1. physically impossible records ----------------------------------------------------------

ADDRESS_TEMPLATE = a_set(2, struct.pack(">HH", 420, 6) + fields((8, 8), (12, 4), (1, 4), (2, 4), (152, 8), (153, 8)))
V6_SHORT_TEMPLATE = a_set(2, struct.pack(">HH", 421, 6) + fields((27, 8), (28, 16), (1, 4), (2, 4), (152, 8), (153, 8)))


def test_address_fields_of_the_wrong_length_are_rejected_and_counted():
    t = EXPORT_S * 1000
    v4 = struct.pack(">Q4sIIQQ", 0x0A000001, socket.inet_aton("10.0.0.2"), 1500, 1, t - 2000, t - 1000)
    v6 = struct.pack(">Q16sIIQQ", 1, socket.inet_pton(socket.AF_INET6, "2001:db8::2"), 1500, 1, t - 2000, t - 1000)
    decoder = Decoder()
    decoder.feed(ipfix(1, ADDRESS_TEMPLATE, a_set(420, v4), V6_SHORT_TEMPLATE, a_set(421, v6)), "192.0.2.1")
    assert decoder.take().height == 0
    assert decoder.rejected == {("192.0.2.1", Reason.ADDRESS_LENGTH): 2}


def test_jumbo_exporter_is_given_its_mtu():
    template = a_set(2, struct.pack(">HH", 422, 6) + fields((8, 4), (12, 4), (1, 8), (2, 8), (152, 8), (153, 8)))
    t = EXPORT_S * 1000
    body = struct.pack(">4s4sQQQQ", socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), 9000 * 10, 10, t - 2000, t - 1000)
    body += struct.pack(">4s4sQQQQ", socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.3"), 9001 * 10, 10, t - 2000, t - 1000)
    datagram = ipfix(1, template, a_set(422, body))
    plain = Decoder()  # 65,535 bytes a packet: both possible
    plain.feed(datagram, "r")
    assert plain.take().height == 2
    jumbo = Decoder(max_packet_bytes={"r": 9000})  # an MTU of 9,000: the second carries 9,001 a packet
    jumbo.feed(datagram, "r")
    assert jumbo.take()["dst_addr"].to_list() == ["10.0.0.2"]
    assert jumbo.rejected == {("r", Reason.BYTES_PER_PACKET): 1}


def test_readers_take_the_mtu_too(tmp_path):
    import json

    path = tmp_path / "g.jsonl"
    record = {"sampler_address": "192.0.2.9", "time_received_ns": EXPORT_S * 10**9, "time_flow_start_ns": EXPORT_S * 10**9,
              "time_flow_end_ns": EXPORT_S * 10**9, "bytes": 90_000, "packets": 10, "sampling_rate": 1,
              "src_addr": "10.0.0.1", "dst_addr": "10.0.0.2", "proto": 6}  # fmt: skip
    path.write_text(json.dumps(record) + "\n")
    assert read_goflow2(path).height == 1
    report = RejectReport()
    assert read_goflow2(path, ReadOptions(max_packet_bytes={"192.0.2.9": 1500}), report).height == 0
    assert report.counts == {Reason.BYTES_PER_PACKET: 1}
    assert report.examples[Reason.BYTES_PER_PACKET][0].detail == "bytes='90000' packets='10'"


# --- 2. times ----------------------------------------------------------------------------------

TIMES_MS = a_set(2, struct.pack(">HH", 430, 6) + fields((8, 4), (12, 4), (1, 8), (2, 8), (152, 8), (153, 8)))
TIMES_S = a_set(2, struct.pack(">HH", 431, 6) + fields((8, 4), (12, 4), (1, 8), (2, 8), (150, 8), (151, 8)))


def times_record(first, last, dst="10.0.0.2"):
    return struct.pack(">4s4sQQQQ", socket.inet_aton("10.0.0.1"), socket.inet_aton(dst), 1500, 1, first, last)


def test_8_byte_times_far_in_the_future_are_an_overflow_never_a_wrap():
    now_us = EXPORT_S * 10**6 - 2 * 10**6
    # x 1000 (x 10^6) wraps in int64 to 2 s before the export: stored as "now" before the fix
    wrap_ms, wrap_s = (now_us + 2**64) // 1000 + 1, (now_us + 2**64) // 10**6 + 1
    assert (wrap_ms * 1000) % 2**64 - now_us < 1000 and (wrap_s * 10**6) % 2**64 - now_us < 10**6
    good_ms, good_s = now_us // 1000, now_us // 10**6
    datagram = ipfix(1, TIMES_MS, TIMES_S, a_set(430, times_record(good_ms, good_ms) + times_record(wrap_ms, wrap_ms, "10.0.0.3")),
                     a_set(431, times_record(good_s, good_s, "10.0.0.4") + times_record(good_s, wrap_s, "10.0.0.5")))  # fmt: skip
    decoder = Decoder()
    decoder.feed(datagram, "r", EXPORT_S * 10**6)
    assert sorted(decoder.take()["dst_addr"].to_list()) == ["10.0.0.2", "10.0.0.4"]
    assert decoder.rejected == {("r", Reason.TIME_OVERFLOW): 2}
    # a systemInitTimeMilliseconds beyond int64 with sysUpTime times: the same
    options = a_set(3, struct.pack(">HHH", 432, 2, 1) + fields((149, 4), (160, 8))) + a_set(432, struct.pack(">IQ", 1, 2**64 - 5))
    uptime = a_set(2, struct.pack(">HH", 433, 6) + fields((8, 4), (12, 4), (1, 8), (2, 8), (22, 4), (21, 4)))
    body = struct.pack(">4s4sQQII", socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), 1500, 1, 5, 6)
    decoder.feed(ipfix(2, options, uptime, a_set(433, body)), "r", EXPORT_S * 10**6)
    assert decoder.take().height == 0 and decoder.rejected[("r", Reason.TIME_OVERFLOW)] == 3


def test_pcap_without_capture_stamps_makes_no_1970_partition(tmp_path):
    t = EXPORT_S * 1000
    datagram = ipfix(1, TIMES_MS, a_set(430, times_record(t - 5000, t - 1000) + times_record(1000, 2000, "10.0.0.9")))
    path = tmp_path / "zero.pcap"
    write_pcap(path, [("192.0.2.1", "192.0.2.2", datagram)] * 3, time_s=0)  # every stamp in the first second of 1970
    decoder = Decoder()
    frame, _ = read_pcap(path, decoder=decoder)
    # the 1970 record is more than a day from its export header's time; the 2026 one is kept
    assert frame["dst_addr"].to_list() == ["10.0.0.2"] * 3
    assert decoder.rejected == {("192.0.2.1", Reason.OUT_OF_WINDOW): 3}
    assert decoder.stats["unstamped_datagrams"] == 3
    schema.write_partitioned(frame, tmp_path / "store")
    assert [p.name for p in (tmp_path / "store" / "exporter=192.0.2.1").iterdir()] == ["day=2026-11-18"]


def test_receive_time_and_export_time_both_centre_the_window():
    t = EXPORT_S * 1000
    later = t + 3 * 86_400_000  # three days after the export header's time
    datagram = ipfix(1, TIMES_MS, a_set(430, times_record(t - 5000, t - 1000) + times_record(later, later, "10.0.0.3")))
    decoder = Decoder()
    decoder.feed(datagram, "r", later * 1000)  # received (by a clock far off) at the second record's time
    # the second fits its receive time but not its export time; the first fits neither
    assert decoder.take().height == 0 and decoder.rejected == {("r", Reason.OUT_OF_WINDOW): 2}
    decoder.feed(datagram, "r", (EXPORT_S + 60) * 10**6)
    assert decoder.take()["dst_addr"].to_list() == ["10.0.0.2"]


# --- 3. memory: what a hostile exporter can make the decoder hold ------------------------------


def test_held_sets_of_unknown_templates_stay_under_their_caps():
    # 40 sources x 300 data sets of 60 KB for templates never announced: 720 MB unbounded before
    set_60k = a_set(999, b"\x01" * 60_000)
    decoder = Decoder()
    tracemalloc.start()
    try:
        for source in range(40):
            for i in range(300):
                decoder.feed(ipfix(1, set_60k, sequence=i), f"198.51.100.{source}")
            assert decoder._held_bytes[f"198.51.100.{source}"] <= netflow.HELD_BYTES_PER_EXPORTER
            assert decoder.held_bytes <= netflow.HELD_BYTES
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoder.held_bytes <= netflow.HELD_BYTES and decoder.held_bytes > netflow.HELD_BYTES - 120_000
    assert peak < netflow.HELD_BYTES + (16 << 20)  # the held bytes and what the decoder keeps beside them
    per_exporter = netflow.HELD_BYTES_PER_EXPORTER // 60_004
    assert decoder.counts["unknown_template"] == 40 * 300
    evicted = decoder.counts["held_evicted"]
    assert evicted == 40 * 300 - decoder.held_sets and decoder.held_sets == netflow.HELD_BYTES // 60_004
    assert decoder.exporter_counts["198.51.100.0"]["held_evicted"] == 300  # the oldest, evicted for the others
    assert decoder.exporter_counts["198.51.100.39"]["held_evicted"] == 300 - per_exporter
    # a template that comes still recovers what is held for it
    template = a_set(2, struct.pack(">HH", 999, 6) + fields((8, 4), (12, 4), (1, 4), (2, 4), (152, 8), (153, 8)))
    decoder.feed(ipfix(1, template, sequence=300), "198.51.100.39")
    assert decoder.stats["recovered_sets"] == per_exporter and decoder._held_bytes["198.51.100.39"] == 0


def test_template_table_stays_under_its_caps(monkeypatch):
    # 100 datagrams of 50 templates, every template id new (5,000 templates), from one exporter, and as
    # many from 100 others; the caps are made small so that the test is quick (the code reads them at use)
    for name, value in (("TEMPLATES_PER_EXPORTER", 400), ("TEMPLATES", 1000), ("TEMPLATE_FIELDS_PER_EXPORTER", 6000),
                        ("TEMPLATE_FIELDS", 16_000)):  # fmt: skip
        monkeypatch.setattr(netflow, name, value)

    def templates(first_id, count=20):
        body = b"".join(struct.pack(">HH", tid, count) + fields(*[(1, 4)] * count) for tid in range(first_id, first_id + 50))
        return a_set(2, body)

    decoder = Decoder()
    tracemalloc.start()
    try:
        for datagram in range(100):
            decoder.feed(ipfix(datagram, templates(256 + datagram * 50)), "203.0.113.1")
            assert len(decoder._exporter_templates["203.0.113.1"]) <= 300  # 6,000 fields of 20
            assert decoder._exporter_fields["203.0.113.1"] <= 6000
            decoder.feed(ipfix(datagram, templates(256, 30)), f"203.0.113.{2 + datagram}")  # and from many sources
            assert decoder.template_fields <= 16_000 and len(decoder.templates) <= 1000
            if datagram == 49:
                middle, _ = tracemalloc.get_traced_memory()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # at the cap: what the second half of the flood adds is the bounded problem list and per-exporter counters
    assert end - middle < 3 << 20 and end < 8 << 20
    assert decoder.template_fields == sum(len(t.fields) for t in decoder.templates.values())
    assert decoder.counts["template_evicted"] == 100 * 50 * 2 - len(decoder.templates)
    assert decoder.exporter_counts["203.0.113.1"]["template_evicted"] >= 5000 - 300
    # the newest templates are those kept: data for the last one decodes
    t = EXPORT_S * 1000
    template = a_set(2, struct.pack(">HH", 256 + 99 * 50 + 49, 6) + fields((8, 4), (12, 4), (1, 4), (2, 4), (152, 8), (153, 8)))
    body = struct.pack(">4s4sIIQQ", socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), 1500, 1, t - 2000, t - 1000)
    decoder.feed(ipfix(7, template, a_set(256 + 99 * 50 + 49, body)), "203.0.113.1")
    assert decoder.take().height == 1


# --- 5. the backtest plot ----------------------------------------------------------------------


def test_backtest_plot_draws_only_judged_days_and_marks_the_training_day(tmp_path):
    from matplotlib import dates as mdates

    from alphaqos.flows.backtest import backtest, figures

    rows = [dict(exporter="r1", first=T0 + timedelta(days=d, hours=1), last=T0 + timedelta(days=d, hours=1),
                 src_addr="10.1.2.3", dst_addr="192.168.5.6", src_port=40000, dst_port=2811, protocol=6,
                 bytes=2 * 10**9, packets=2 * 10**6, sampling_rate=1) for d in range(3)]  # fmt: skip
    schema.write_partitioned(pl.DataFrame(rows), tmp_path / "flows")
    table = backtest(tmp_path / "flows", prefix_v4=[24])
    axes = figures(table)["catch_ratio"].axes[0]
    days = {mdates.num2date(x).date() for line in axes.lines for x in line.get_xdata(orig=False)}
    assert days == {T0.date() + timedelta(days=1), T0.date() + timedelta(days=2)}  # day 1 was drawn as 0% before
    assert all(y == 1.0 for line in axes.lines for y in line.get_ydata())
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert "training: no earlier rules, not judged" in labels
    rules = figures(table)["rules"].axes[0]
    assert {mdates.num2date(x).date() for x in rules.lines[0].get_xdata(orig=False)} == {T0.date() + timedelta(days=d) for d in range(3)}


# --- 4. the collector flushes by size as well as by time ---------------------------------------


def test_collector_flushes_by_record_count_whatever_the_interval(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from alphaqos.flows.netflow import encode_ipfix

    now = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    n = 6000
    table = pl.DataFrame({"exporter": ["x"] * n, "first": [now] * n, "last": [now] * n,
                          "src_addr": [f"10.0.{i >> 8}.{i & 255}" for i in range(n)], "dst_addr": ["10.1.0.1"] * n,
                          "src_port": list(range(n)), "dst_port": [443] * n, "protocol": [6] * n,
                          "bytes": [1500] * n, "packets": [1] * n, "sampling_rate": [1] * n})  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "python"))
    collector = subprocess.Popen([sys.executable, "-m", "alphaqos", "flows", "collect", "--listen", "127.0.0.1:0",
                                  "--out", str(tmp_path / "out"), "--flush-every", "1h", "--flush-records", "1000"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        port = int(collector.stdout.readline().split()[2].rsplit(":", 1)[1])
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            for datagram in encode_ipfix(table):
                sender.sendto(datagram, ("127.0.0.1", port))
                time.sleep(0.0005)
        time.sleep(1.0)
        collector.send_signal(signal.SIGTERM)
        stdout, stderr = collector.communicate(timeout=60)
    finally:
        if collector.poll() is None:
            collector.kill()
    assert collector.returncode == 0, stderr
    flushes = [line for line in stdout.splitlines() if line.startswith("at ")]
    assert len(flushes) >= 4  # an hour's interval, yet written every 1,000 records or so
    final = [line for line in stdout.splitlines() if line.startswith("stopped after")][-1]
    assert f"({n:,} in all)" in final
    assert int(final.rsplit(": ", 1)[1].replace(",", "")) < 1000 + 64 * 30  # checked every 64 datagrams of ~30 records


# --- 4. nfdump CSV and GoFlow2 are read and written block by block -----------------------------


def test_nfdump_csv_is_streamed_in_bounded_blocks_with_the_right_line_numbers(tmp_path, monkeypatch, capsys):
    from alphaqos.cli import main
    from alphaqos.flows import readers, synth

    def line(i, packets=1):
        values = dict.fromkeys(synth.NFDUMP_HEADER, "0")
        values.update(ts="2026-11-18 11:00:00.000", te="2026-11-18 11:00:30.000", td="30.000", sa=f"10.0.{i >> 8 & 255}.{i & 255}",
                      da="10.1.0.1", sp=i % 60000, dp=443, pr="TCP", flg=".AP.SF", ipkt=packets, ibyt=1500, ra="192.0.2.1",
                      eng="0/0", tr="1970-01-01 00:00:00.000", nh="0.0.0.0", nhb="0.0.0.0", **{"in": 3, "out": 4})  # fmt: skip
        return ",".join(str(values[c]) for c in synth.NFDUMP_HEADER)

    lines = [",".join(synth.NFDUMP_HEADER)] + [line(i, packets=0 if i == 4321 else 1) for i in range(5000)]
    lines += ["Summary", "flows,bytes,packets,avg_bps,avg_pps,avg_bpp", "5000,7500000,5000,0,0,1500"]
    path = tmp_path / "flows.csv"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(readers, "BLOCK_BYTES", 16_384)  # about 70 lines a block
    report = RejectReport()
    blocks = list(readers.iter_nfdump_csv(path, ReadOptions(sampling=1), report))
    assert len(blocks) > 60 and max(b.height for b in blocks) < 120
    assert sum(b.height for b in blocks) == 4999
    assert report.counts == {Reason.BYTES_WITHOUT_PACKETS: 1}
    assert report.examples[Reason.BYTES_WITHOUT_PACKETS][0].location == f"{path}:4323"  # line 1 is the header
    # the whole ingest, block by block, gives the same store and summary
    assert main(["flows", "ingest", str(path), "--format", "nfdump", "--sampling", "1", "--out", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "4,999 records into" in out and "192.0.2.1  2026-11-18       4,999 records" in out
    stored = pl.read_parquet(tmp_path / "s" / "**" / "*.parquet")
    assert stored.height == 4999 and len(list((tmp_path / "s").glob("**/*.parquet"))) == len(blocks)
    # bad input in a later file leaves an existing store as it was
    bad = tmp_path / "bad.csv"
    bad.write_text("not,nfdump\n")
    assert main(["flows", "ingest", str(path), str(bad), "--format", "nfdump", "--out", str(tmp_path / "s")]) == 2
    assert len(list((tmp_path / "s").glob("**/*.parquet"))) == len(blocks)
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["exporter=192.0.2.1"]


def test_ingest_takes_the_mtu_of_jumbo_exporters_from_the_command_line(tmp_path, capsys):
    import json

    from alphaqos.cli import main

    path = tmp_path / "g.jsonl"
    record = {"sampler_address": "192.0.2.9", "time_received_ns": EXPORT_S * 10**9, "time_flow_start_ns": EXPORT_S * 10**9,
              "time_flow_end_ns": EXPORT_S * 10**9, "bytes": 90_000, "packets": 10, "sampling_rate": 1,
              "src_addr": "10.0.0.1", "dst_addr": "10.0.0.2", "proto": 6}  # fmt: skip
    path.write_text(json.dumps(record) + "\n" + json.dumps(record | {"bytes": 10 * 65_536}) + "\n")
    assert main(["flows", "ingest", str(path), "--format", "goflow2", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "1 records into" in out and "more bytes than packets x maximum packet size" in out
    assert main(["flows", "ingest", str(path), "--format", "goflow2", "--out", str(tmp_path / "b"),
                 "--max-packet", "192.0.2.9=1500"]) == 2  # fmt: skip
    assert "no usable records" in capsys.readouterr().err and not (tmp_path / "b").exists()
    assert main(["flows", "ingest", str(path), "--format", "goflow2", "--out", str(tmp_path / "c"), "--max-packet", "0"]) == 2
    assert "--max-packet '0': expected BYTES or EXPORTER=BYTES,... with BYTES >= 1" in capsys.readouterr().err
