"""Flow-record ingest (:mod:`alphaqos.flows.readers`, ``alphaqos flows
ingest``) and the synthetic data set (:mod:`alphaqos.flows.synth`,
``alphaqos flows synth``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from alphaqos import cli
from alphaqos.flows import readers, schema, synth
from alphaqos.flows.readers import FlowFileError, ReadOptions, Reason, RejectReport

NFDUMP_HEADER = ",".join(synth.NFDUMP_HEADER)


def nfdump_line(ts, te, sa, da, sp, dp, pr, ipkt, ibyt, ra="192.0.2.1", in_if=3, out_if=4):
    """A record as nfdump -o csv prints it (the columns we do not read filled as nfdump does)."""
    values = dict.fromkeys(synth.NFDUMP_HEADER, "0")
    values.update(ts=ts, te=te, td="0.000", sa=sa, da=da, sp=sp, dp=dp, pr=pr, flg=".AP.SF", ipkt=ipkt, ibyt=ibyt,
                  ra=ra, eng="0/0", tr="1970-01-01 00:00:00.000", nh="0.0.0.0", nhb="0.0.0.0", **{"in": in_if, "out": out_if})  # fmt: skip
    return ",".join(str(values[c]) for c in synth.NFDUMP_HEADER)


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


T0 = datetime.fromtimestamp(1_795_000_000, UTC)  # 2026-11-18 11:06:40 UTC


def after(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def small():
    """Two days, 4 exporters (sampling 1, 100, 1000, 10), a few α transfers."""
    return synth.synthesize(days=2, exporters=4, seed=7, beta_flows_per_day=20_000, alpha_transfers_per_day=12)


# --- nfdump CSV -----------------------------------------------------------------------------


def test_nfdump_reads_records_ms_times_names_and_skips_summary(tmp_path):
    path = tmp_path / "nf.csv"
    lines = [
        NFDUMP_HEADER,
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:05.250", "10.0.0.1", "10.0.0.2", 1234, 80, "TCP", 10, 1500),
        nfdump_line("2026-11-22 10:00:01.007", "2026-11-22 10:00:01.007", "10.0.0.3", "8.8.8.8", 5353, 53, "UDP", 1, 70,
                    ra="0.0.0.0"),  # fmt: skip
        nfdump_line("2026-11-22 10:00:02.500", "2026-11-22 10:00:03", "10.0.0.4", "10.0.0.5", 0, 2048, "ICMP", 2, 168),
        nfdump_line("2026-11-22 10:00:04", "2026-11-22 10:00:09", "10.0.0.6", "10.0.0.7", 0, 0, "47", 5, 500),
        "",
        "Summary",
        "flows,bytes,packets,avg_bps,avg_pps,avg_bpp",
        "4,2238,18,1000,2,124",
    ]
    path.write_text("\n".join(lines) + "\n")
    report = RejectReport()
    table = readers.read_nfdump_csv(path, ReadOptions(exporter="edge-7", sampling={"192.0.2.1": 100}), report)
    assert table.columns == list(schema.COLUMNS)
    assert table.height == 4 and report.rows == 4 and report.rejected == 0
    assert table["first"].to_list() == [utc(2026, 11, 22, 10, 0, 0), utc(2026, 11, 22, 10, 0, 1, 7000),
                                        utc(2026, 11, 22, 10, 0, 2, 500000), utc(2026, 11, 22, 10, 0, 4)]  # fmt: skip
    assert table["last"][0] == utc(2026, 11, 22, 10, 0, 5, 250000)
    assert table["protocol"].to_list() == [6, 17, 1, 47]
    # ra when set, else --exporter (0.0.0.0 is nfdump's "unknown")
    assert table["exporter"].to_list() == ["192.0.2.1", "edge-7", "192.0.2.1", "192.0.2.1"]
    # edge-7's rate was not given: unknown (0), its counts stored as exported
    assert table["sampling_rate"].to_list() == [100, 0, 100, 100]
    assert table["bytes_scaled"].to_list() == [150_000, 70, 16_800, 50_000]
    assert table["packets_scaled"][0] == 1_000
    assert table["dst_port"].to_list() == [80, 53, 2048, 0]
    assert table["input_if"][0] == 3 and table["output_if"][0] == 4


def test_csv_line_numbers_count_blank_lines(tmp_path):
    path = tmp_path / "gaps.csv"
    row = nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "1.1.1.1", "2.2.2.2", 1, 2, "TCP", 1, 60)
    path.write_text("\n".join([NFDUMP_HEADER, row, "", "", row.replace(",TCP,", ",BOGUS,"), "", row]) + "\n")
    report = RejectReport()
    assert readers.read_nfdump_csv(path, report=report).height == 2
    assert report.rows == 3 and report.examples[Reason.UNKNOWN_PROTOCOL][0].location == f"{path}:5"


def test_nfdump_with_no_matched_flows_is_empty(tmp_path):
    path = tmp_path / "none.csv"
    path.write_text(NFDUMP_HEADER + "\nNo matched flows\n")
    report = RejectReport()
    table = readers.read_nfdump_csv(path, report=report)
    assert table.is_empty() and table.schema == pl.Schema(schema.SCHEMA) and report.rows == 0


def test_nfdump_without_router_address_needs_an_exporter(tmp_path):
    path = tmp_path / "noRa.csv"
    path.write_text("ts,te,sa,da,sp,dp,pr,ipkt,ibyt\n2026-11-22 10:00:00,2026-11-22 10:00:01,1.1.1.1,2.2.2.2,1,2,TCP,1,60\n")
    with pytest.raises(FlowFileError, match="noRa.csv.*--exporter"):
        readers.read_nfdump_csv(path)
    table = readers.read_nfdump_csv(path, ReadOptions(exporter="r1"))
    assert table["exporter"].to_list() == ["r1"] and table["bytes"].to_list() == [60]


def test_nfdump_rejects_a_file_in_another_format(tmp_path):
    path = tmp_path / "flows.jsonl"
    path.write_text('{"type":"IPFIX","bytes":1}\n')
    with pytest.raises(FlowFileError, match=r"flows\.jsonl: not nfdump CSV.*lacks ts, te"):
        readers.read_nfdump_csv(path)
    binary = tmp_path / "nfcapd.202611221000"
    binary.write_bytes(b"\x0c\xa5\x01\x00" + bytes(range(256)))
    with pytest.raises(FlowFileError, match="nfcapd.202611221000: not nfdump CSV"):
        readers.read_nfdump_csv(binary)


def test_bad_rows_are_counted_with_file_and_line(tmp_path):
    path = tmp_path / "bad.csv"
    rows = [
        NFDUMP_HEADER,
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 1, 60),  # 2 ok
        nfdump_line("2026-11-22 25:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 1, 60),  # 3 time
        nfdump_line("2026-11-22 10:00:05", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 1, 60),  # 4 order
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 1, -60),  # 5 negative
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "XTP9", 1, 60),  # 6 protocol
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "", "10.0.0.2", 1, 2, "TCP", 1, 60),  # 7 missing
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", "x", 2, "TCP", 1, 60),  # 8 number
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "UDP", 1, 60, ra="0.0.0.0"),  # 9
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 1, -1),  # 10 negative
        nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.300.2", 1, 2, "TCP", 1, 9),  # 11 address
    ]  # fmt: skip
    path.write_text("\n".join(rows) + "\n")
    report = RejectReport()
    table = readers.read_nfdump_csv(path, report=report)
    assert table.height == 1 and report.rows == 10 and report.accepted == 1 and report.rejected == 9
    assert report.counts == {Reason.BAD_TIME: 1, Reason.LAST_BEFORE_FIRST: 1, Reason.NEGATIVE: 2, Reason.BAD_ADDRESS: 1,
                             Reason.UNKNOWN_PROTOCOL: 1, Reason.MISSING: 1, Reason.BAD_NUMBER: 1, Reason.NO_EXPORTER: 1}  # fmt: skip
    assert [e.location for e in report.examples[Reason.BAD_ADDRESS]] == [f"{path}:11"]
    assert report.examples[Reason.BAD_ADDRESS][0].detail == "dst_addr='10.0.300.2'"
    where = {reason: [e.location for e in examples] for reason, examples in report.examples.items()}
    assert where[Reason.BAD_TIME] == [f"{path}:3"]
    assert where[Reason.LAST_BEFORE_FIRST] == [f"{path}:4"]
    assert where[Reason.NEGATIVE] == [f"{path}:5", f"{path}:10"]
    assert where[Reason.UNKNOWN_PROTOCOL] == [f"{path}:6"]
    assert where[Reason.MISSING] == [f"{path}:7"]
    assert where[Reason.BAD_NUMBER] == [f"{path}:8"]
    assert where[Reason.NO_EXPORTER] == [f"{path}:9"]
    assert report.examples[Reason.UNKNOWN_PROTOCOL][0].detail == "protocol='XTP9'"
    text = "\n".join(report.lines())
    assert "10 rows read, 1 accepted, 9 rejected" in text and f"{path}:6: protocol='XTP9'" in text


# --- GoFlow2 JSON lines -----------------------------------------------------------------------


def goflow2_record(**fields):
    record = {"type": "NETFLOW_V9", "time_received_ns": 1_795_000_000_000_000_000, "sequence_num": 1,
              "sampling_rate": 100, "sampler_address": "192.0.2.9", "time_flow_start_ns": 1_795_000_000_000_000_000,
              "time_flow_end_ns": 1_795_000_030_500_000_000, "bytes": 1500, "packets": 1, "src_addr": "10.0.0.1",
              "dst_addr": "10.0.0.2", "etype": "IPv4", "proto": "TCP", "src_port": 40000, "dst_port": 443,
              "in_if": 7, "out_if": 8, "src_mac": "00:00:00:00:00:00"}  # fmt: skip
    record.update(fields)
    return json.dumps(record)


def test_goflow2_reads_fields_scales_and_notes_unknown_sampling(tmp_path):
    path = tmp_path / "goflow2.jsonl"
    lines = [
        goflow2_record(),
        goflow2_record(proto=17, sampling_rate=0, bytes=80, src_addr="2001:db8::1", dst_addr="2001:db8::2", etype="IPv6"),
        "",
        goflow2_record(time_flow_start_ns=0, time_flow_end_ns=0, proto="ICMPv6", src_port=0, dst_port=0),
        '{"type":"NETFLOW_V9","bytes":',  # cut short
        goflow2_record(proto="XYZ"),
    ]
    path.write_text("\n".join(lines) + "\n")
    report = RejectReport()
    table = readers.read_goflow2(path, report=report)
    assert table.height == 3 and report.rows == 5 and report.rejected == 2
    assert table["exporter"].unique().to_list() == ["192.0.2.9"]
    assert table["protocol"].to_list() == [6, 17, 58]
    assert table["sampling_rate"].to_list() == [100, 0, 100]  # GoFlow2's 0: unknown, not 1:1
    assert table["bytes_scaled"].to_list() == [150_000, 80, 150_000]
    assert table["first"][0] == T0 and table["last"][0] == after(30.5)
    assert table["src_addr"][1] == "2001:db8::1"
    # no flow times (as from sFlow): the time received is used, and noted
    assert table["first"][2] == table["last"][2] == T0
    assert list(report.notes) == ["no flow start time: time_received_ns used"]
    assert report.notes["no flow start time: time_received_ns used"] == 1
    assert [e.location for e in report.examples[Reason.NOT_JSON]] == [f"{path}:5"]
    assert [e.location for e in report.examples[Reason.UNKNOWN_PROTOCOL]] == [f"{path}:6"]


def test_goflow2_object_without_fields_is_rejected_not_skipped(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text(goflow2_record() + "\n{}\n[1, 2]\n" + goflow2_record(src_addr=None) + "\n")
    report = RejectReport()
    assert readers.read_goflow2(path, report=report).height == 1
    assert report.counts == {Reason.MISSING: 2, Reason.NOT_JSON: 1}
    assert [e.location for e in report.examples[Reason.MISSING]] == [f"{path}:2", f"{path}:4"]
    assert report.examples[Reason.NOT_JSON][0].detail == "[1, 2]"


def test_goflow2_in_blocks_keeps_line_numbers(tmp_path, small, monkeypatch):
    path = synth.write_goflow2(small.head(300), tmp_path / "g.jsonl")
    lines = path.read_text().splitlines()
    lines[200] = lines[200].replace('"bytes":', '"bytes":-')
    lines.insert(250, "")
    lines.insert(270, "not json")
    path.write_text("\n".join(lines))  # and no newline at the end
    whole = RejectReport()
    expected = readers.read_goflow2(path, report=whole)
    monkeypatch.setattr(readers, "BLOCK_BYTES", 1000)  # a few lines per block
    report = RejectReport()
    assert readers.read_goflow2(path, report=report).equals(expected)
    assert expected.height == 299 and report.rows == whole.rows == 301
    assert report.examples[Reason.NEGATIVE][0].location == f"{path}:201"
    assert report.examples[Reason.NOT_JSON][0].location == f"{path}:271"


def test_goflow2_rejects_a_file_that_is_not_json_lines(tmp_path):
    path = tmp_path / "nf.csv"
    path.write_text(NFDUMP_HEADER + "\n")
    with pytest.raises(FlowFileError, match=r"nf\.csv: not GoFlow2 JSON lines"):
        readers.read_goflow2(path)


# --- generic CSV / Parquet ------------------------------------------------------------------


def test_mapped_csv_with_epoch_milliseconds(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text(
        "router,start_ms,end_ms,source,dest,sport,dport,proto,octets,pkts\n"
        "r1,1795000000000,1795000060000,10.0.0.1,10.0.0.2,5000,50001,6,2000000000,250000\n"
        "r2,1795000000500,1795000000400,10.0.0.1,10.0.0.2,5000,50001,6,10,1\n"
        "r2,notatime,1795000000400,10.0.0.1,10.0.0.2,5000,50001,udp,10,1\n"
    )
    mapping = readers.parse_mapping("exporter=router,first=start_ms,last=end_ms,src_addr=source,dst_addr=dest,"
                                    "src_port=sport,dst_port=dport,protocol=proto,bytes=octets,packets=pkts")  # fmt: skip
    report = RejectReport()
    table = readers.read_csv_mapped(path, ReadOptions(mapping=mapping, time_unit="ms", sampling=1), report)
    assert table.height == 1
    assert table.row(0, named=True) == {
        "exporter": "r1", "first": T0, "last": after(60),
        "src_addr": "10.0.0.1", "dst_addr": "10.0.0.2", "src_port": 5000, "dst_port": 50001, "protocol": 6,
        "bytes": 2_000_000_000, "packets": 250_000, "sampling_rate": 1, "bytes_scaled": 2_000_000_000,
        "packets_scaled": 250_000, "input_if": 0, "output_if": 0,
    }  # fmt: skip
    assert report.counts == {Reason.LAST_BEFORE_FIRST: 1, Reason.BAD_TIME: 1}
    assert report.examples[Reason.BAD_TIME][0].location == f"{path}:4"


def test_mapped_csv_iso_times_and_epoch_seconds(tmp_path):
    iso = tmp_path / "iso.csv"
    iso.write_text(
        "first,last,src_addr,dst_addr,protocol,bytes,packets\n"
        "2026-11-22T10:00:00Z,2026-11-22T11:00:30.5+01:00,10.1.2.3,2001:db8::7,TCP,1,1\n"
        "2026-11-22 10:00:00,2026-11-22 10:00:01,10.1.2.3,10.1.2.4,6,1,1\n"
    )
    table = readers.read_csv_mapped(iso, ReadOptions(exporter="r9"))
    assert table["last"].to_list() == [utc(2026, 11, 22, 10, 0, 30, 500000), utc(2026, 11, 22, 10, 0, 1)]
    assert table["exporter"].to_list() == ["r9", "r9"]
    seconds = tmp_path / "s.csv"
    seconds.write_text("first,last,src_addr,dst_addr,protocol,bytes,packets\n1795000000,1795000000.25,10.0.0.1,10.0.0.2,6,1,1\n")
    table = readers.read_csv_mapped(seconds, ReadOptions(exporter="r9", time_unit="s"))
    assert table["last"].to_list() == [after(0.25)]


def test_mapped_parquet_and_missing_columns(tmp_path, small):
    path = tmp_path / "t.parquet"
    renamed = small.head(500).rename({"first": "t0", "last": "t1", "exporter": "router"}).drop("bytes_scaled", "packets_scaled")
    renamed.write_parquet(path)
    table = readers.read_parquet_mapped(path, ReadOptions(mapping={"first": "t0", "last": "t1", "exporter": "router"}))
    assert table.equals(small.head(500))
    with pytest.raises(FlowFileError, match=r"t\.parquet: no column for first, last"):
        readers.read_parquet_mapped(path, ReadOptions(mapping={"exporter": "router"}))
    with pytest.raises(FlowFileError, match=r"t\.parquet: has no column 'start'"):
        readers.read_parquet_mapped(path, ReadOptions(mapping={"first": "start", "exporter": "router"}))
    text = tmp_path / "not.parquet"
    text.write_text("hello\n")
    with pytest.raises(FlowFileError, match=r"not\.parquet: cannot be read as Parquet"):
        readers.read_parquet_mapped(text, ReadOptions())


def test_parse_mapping_errors():
    assert readers.parse_mapping(" first = start , bytes=octets ") == {"first": "start", "bytes": "octets"}
    with pytest.raises(ValueError, match="expected CANONICAL=COLUMN"):
        readers.parse_mapping("first")
    with pytest.raises(ValueError, match="'begin' is not a flow column"):
        readers.parse_mapping("begin=start")


# --- round trips ------------------------------------------------------------------------------


def test_round_trip_through_nfdump_csv(tmp_path, small):
    path = synth.write_nfdump_csv(small, tmp_path / "flows.csv")
    assert path.read_text().splitlines()[-3] == "Summary"
    rates = dict(small.select("exporter", "sampling_rate").unique().iter_rows())
    report = RejectReport()
    back = readers.read_nfdump_csv(path, ReadOptions(sampling=rates), report)
    assert report.rejected == 0 and back.equals(small)
    # Counts scaled by the collector (nfcapd -s) read back with no sampling: the same true volume.
    scaled = readers.read_nfdump_csv(synth.write_nfdump_csv(small, tmp_path / "scaled.csv", scaled=True), ReadOptions(sampling=1))
    assert scaled["bytes_scaled"].equals(small["bytes_scaled"]) and set(scaled["sampling_rate"]) == {1}


def test_round_trip_through_goflow2(tmp_path, small):
    report = RejectReport()
    back = readers.read_goflow2(synth.write_goflow2(small, tmp_path / "flows.jsonl"), report=report)
    assert report.rejected == 0 and not report.notes and back.equals(small)
    numbers = readers.read_goflow2(synth.write_goflow2(small, tmp_path / "n.jsonl", protocol_names=False))
    assert numbers.equals(small)


# --- the synthetic data ------------------------------------------------------------------------


def test_synthesize_is_deterministic_and_canonical(small):
    again = synth.synthesize(days=2, exporters=4, seed=7, beta_flows_per_day=20_000, alpha_transfers_per_day=12)
    assert again.equals(small)
    other = synth.synthesize(days=2, exporters=4, seed=8, beta_flows_per_day=20_000, alpha_transfers_per_day=12)
    assert not other.equals(small)
    assert small.schema == pl.Schema(schema.SCHEMA)
    assert sorted(small["exporter"].unique()) == ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"]
    rates = dict(small.select("exporter", "sampling_rate").unique().iter_rows())
    assert rates == {"192.0.2.1": 1, "192.0.2.2": 100, "192.0.2.3": 1000, "192.0.2.4": 10}
    assert (small["bytes_scaled"] == small["bytes"] * small["sampling_rate"]).all()
    assert (small["packets"] >= 1).all() and (small["last"] >= small["first"]).all()


def test_default_day_is_about_200k_records():
    table = synth.synthesize(days=1, seed=1)
    assert 150_000 <= table.height <= 300_000
    assert table["first"].dt.date().min() == datetime(2026, 11, 1).date()


def test_alpha_streams_exceed_h_per_minute_and_beta_flows_do_not(small):
    alpha = small.filter(synth.is_alpha(small))
    beta = small.filter(~synth.is_alpha(small))
    assert alpha.height > 0 and beta.height > 1000
    full_minutes = alpha.filter((pl.col("last") - pl.col("first")) == pl.duration(seconds=60))
    # Every full minute of an α stream carries more than H = 1 GB (sampling-corrected),
    # also at the exporter that samples 1:1000 ...
    assert full_minutes["bytes_scaled"].min() > 1e9
    assert (full_minutes["sampling_rate"] == 1000).any()
    # ... and at most 2 GB/s x 60 s / 8 x 1.1 (binomial noise).
    assert full_minutes["bytes_scaled"].max() < 2e9 / 8 * 60 * 1.1
    # No β record (each at most 60 s long) reaches H.
    assert beta["bytes_scaled"].max() < 1e9
    # α transfers recur between a few pairs of the static hosts, on several parallel streams.
    pairs = alpha.select("src_addr", "dst_addr").unique()
    assert 1 <= pairs.height <= 4
    streams = alpha.group_by("exporter", "src_addr", "dst_addr", "src_port", "dst_port").len()
    assert streams.height > 12 * 2  # more streams than transfers
    assert set(alpha["dst_port"]) <= set(range(50_000, 50_008))
    # a pair always enters at one exporter
    assert alpha.group_by("src_addr", "dst_addr").agg(pl.col("exporter").n_unique())["exporter"].max() == 1


def test_beta_traffic_follows_the_day(small):
    beta = small.filter(~synth.is_alpha(small) & (pl.col("sampling_rate") == 1))
    hours = beta.group_by(pl.col("first").dt.hour().alias("hour")).len()
    count = dict(hours.iter_rows())
    afternoon = sum(count[h] for h in range(12, 18))
    night = sum(count[h] for h in range(0, 6))
    assert afternoon > 2.5 * night
    assert max(count, key=count.get) in (13, 14, 15, 16, 17)


@pytest.mark.parametrize("timeout", [60.0, 25.0])
def test_records_are_cut_at_the_active_timeout(timeout):
    table = synth.synthesize(days=1, exporters=1, seed=3, beta_flows_per_day=2_000, alpha_transfers_per_day=3,
                             active_timeout=timeout)  # fmt: skip
    durations = (table["last"] - table["first"]).dt.total_milliseconds()
    assert durations.max() == timeout * 1000
    # The records of one α stream start exactly one timeout apart and tile its life.
    alpha = table.filter(synth.is_alpha(table)).sort("first")
    for _, stream in alpha.group_by("src_port", "dst_port"):
        starts = stream["first"].dt.epoch("ms")
        assert stream.height >= 2
        assert set(starts.diff().drop_nulls()) == {int(timeout * 1000)}
        assert (stream["last"].head(stream.height - 1) == stream["first"].tail(stream.height - 1)).all()


# --- the command line -----------------------------------------------------------------------


def test_cli_synth_then_ingest_nfdump_and_goflow2(tmp_path, capsys):
    base = ["flows", "synth", "--days", "1", "--seed", "5", "--exporters", "2", "--beta-flows", "3000",
            "--alpha-transfers", "4"]  # fmt: skip
    assert cli.main([*base, "--out", str(tmp_path / "nf"), "--format", "nfdump"]) == 0
    out = capsys.readouterr().out
    assert "--sampling 192.0.2.1=1,192.0.2.2=100" in out
    assert cli.main([*base, "--out", str(tmp_path / "gf"), "--format", "goflow2"]) == 0
    assert cli.main([*base, "--out", str(tmp_path / "pq")]) == 0
    capsys.readouterr()
    expected = pl.read_parquet(tmp_path / "pq" / "**" / "*.parquet", hive_partitioning=False)

    store = tmp_path / "store"
    assert cli.main(["flows", "ingest", str(tmp_path / "nf" / "flows.csv"), "--format", "nfdump", "--out", str(store),
                     "--sampling", "192.0.2.1=1,192.0.2.2=100"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"{expected.height:,} records into {store}/" in out and "0 rejected" in out
    assert "192.0.2.2  2026-11-01" in out
    files = sorted(store.glob("exporter=*/day=*/part-*.parquet"))
    assert {f.parent.parent.name for f in files} == {"exporter=192.0.2.1", "exporter=192.0.2.2"}
    stored = pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files])
    key = ["first", "exporter", "src_port", "dst_port", "src_addr", "bytes"]
    assert stored.sort(key).equals(expected.sort(key))

    # Ingesting into an existing store adds part files beside the others.
    assert cli.main(["flows", "ingest", str(tmp_path / "gf" / "flows.jsonl"), "--format", "goflow2", "--out", str(store)]) == 0
    assert len(sorted(store.glob("exporter=*/day=*/part-00001.parquet"))) == len(files)


def test_cli_ingest_reports_rejects_with_locations(tmp_path, capsys):
    path = tmp_path / "g.jsonl"
    path.write_text(goflow2_record() + "\n" + goflow2_record(bytes=-5) + "\n")
    assert cli.main(["flows", "ingest", str(path), "--format", "goflow2", "--out", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "1 records into" in out and "1 rejected: negative count" in out and f"{path}:2: bytes='-5'" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.csv", "--format", "nfdump"], "missing.csv: cannot read: No such file or directory"),
        (["{ok}", "--format", "pcapng"], "argument --format: invalid choice: 'pcapng'"),
        (["{ok}", "--format", "csv", "--map", "start=ts"], "--map: bad mapping 'start=ts'"),
        (["{ok}", "--format", "csv", "--map", "first"], "expected CANONICAL=COLUMN"),
        (["{ok}", "--format", "csv", "--map", "first=nothere", "--exporter", "r"], "has no column 'nothere'"),
        (["{ok}", "--format", "nfdump", "--map", "first=ts"], "--map applies to --format csv or parquet"),
        (["{ok}", "--format", "goflow2"], "not GoFlow2 JSON lines"),
        (["{ok}", "--format", "nfdump", "--sampling", "0"], "--sampling '0': expected N"),
        (["{ok}", "{bad}", "--format", "nfdump"], "no usable records"),
    ],
)
def test_cli_ingest_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, arguments, message):
    ok = tmp_path / "ok.csv"
    ok.write_text(NFDUMP_HEADER + "\n" + nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "1.1.1.1",
                                                      "2.2.2.2", 1, 2, "TCP", 1, 60) + "\n")  # fmt: skip
    bad = tmp_path / "bad.csv"
    bad.write_text(NFDUMP_HEADER + "\n" + nfdump_line("x", "y", "1.1.1.1", "2.2.2.2", 1, 2, "TCP", 1, 60) + "\n")
    if message == "no usable records":
        arguments = [str(bad), "--format", "nfdump"]
    arguments = [a.replace("{ok}", str(ok)).replace("{bad}", str(bad)) for a in arguments]
    out = tmp_path / "out"
    assert cli.main(["flows", "ingest", *arguments, "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("alphaqos: error: ") and message in error and error.count("\n") == 1
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "ok.csv"]


def test_cli_synth_refuses_an_existing_directory(tmp_path, capsys):
    assert cli.main(["flows", "synth", "--days", "1", "--out", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert cli.main(["flows", "synth", "--days", "0", "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()


# --- unknown sampling, empty output, time zones, impossible rows (issue 11) ----------------------


def _two_exporter_csv(path):
    lines = [NFDUMP_HEADER,
             nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 10, 15_000),
             nfdump_line("2026-11-22 10:00:00", "2026-11-22 10:00:01", "10.0.0.3", "10.0.0.4", 1, 2, "TCP", 10, 15_000,
                         ra="192.0.2.2")]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def test_unknown_sampling_warns_per_exporter_and_can_be_required(tmp_path, capsys):
    csv = _two_exporter_csv(tmp_path / "nf.csv")
    assert cli.main(["flows", "ingest", str(csv), "--format", "nfdump", "--out", str(tmp_path / "a")]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "sampling rate unknown" in line]
    assert len(warnings) == 2 and "exporter 192.0.2.1:" in warnings[0] and "exporter 192.0.2.2:" in warnings[1]
    assert "(sampling unknown)" in captured.out and "sampling-corrected" not in captured.out
    stored = pl.read_parquet(tmp_path / "a" / "**" / "*.parquet", hive_partitioning=False)
    assert stored["sampling_rate"].to_list() == [0, 0] and stored["bytes_scaled"].to_list() == [15_000, 15_000]

    assert cli.main(["flows", "ingest", str(csv), "--format", "nfdump", "--out", str(tmp_path / "b"),
                     "--sampling", "192.0.2.1=1"]) == 0  # fmt: skip
    captured = capsys.readouterr()
    assert captured.err.count("sampling rate unknown") == 1 and "192.0.2.2" in captured.err
    assert "192.0.2.1  2026-11-22           1 records       15 KB (sampling-corrected)" in captured.out

    assert cli.main(["flows", "ingest", str(csv), "--format", "nfdump", "--out", str(tmp_path / "c"),
                     "--sampling", "192.0.2.1=1", "--require-sampling"]) == 2  # fmt: skip
    error = capsys.readouterr().err
    assert error.startswith("alphaqos: error: sampling rate unknown for exporter(s) 192.0.2.2") and error.count("\n") == 1
    assert not (tmp_path / "c").exists()
    assert cli.main(["flows", "ingest", str(csv), "--format", "nfdump", "--out", str(tmp_path / "d"),
                     "--sampling", "1", "--require-sampling"]) == 0  # fmt: skip
    assert "sampling rate unknown" not in capsys.readouterr().err


def test_nfdump_17_no_matching_flows_then_summary_is_an_empty_table(tmp_path, capsys):
    path = tmp_path / "none.csv"  # what nfdump 1.7's nfdump.c prints when the filter passes nothing
    path.write_text(NFDUMP_HEADER + "\nNo matching flows\nSummary\nflows,bytes,packets,avg_bps,avg_pps,avg_bpp\n0,0,0,0,0,0\n")
    report = RejectReport()
    table = readers.read_nfdump_csv(path, report=report)
    assert table.is_empty() and table.schema == pl.Schema(schema.SCHEMA) and report.rows == 0
    assert cli.main(["flows", "ingest", str(path), "--format", "nfdump", "--out", str(tmp_path / "s")]) == 0
    assert "0 records into" in capsys.readouterr().out


def test_nfdump_local_times_with_a_time_zone(tmp_path, capsys):
    path = tmp_path / "zurich.csv"  # nfdump run with TZ=Europe/Zurich: local times, no offset
    lines = [NFDUMP_HEADER,
             nfdump_line("2026-11-22 11:00:00", "2026-11-22 11:00:05", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 1, 60),  # CET
             nfdump_line("2026-07-01 12:00:00", "2026-07-01 12:00:01", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 1, 60),  # CEST
             nfdump_line("2026-10-25 02:30:00", "2026-10-25 02:30:01", "10.0.0.1", "10.0.0.2", 1, 2, "TCP", 1, 60)]  # twice
    path.write_text("\n".join(lines) + "\n")
    as_utc = readers.read_nfdump_csv(path)
    assert as_utc["first"][0] == utc(2026, 11, 22, 11)  # read as UTC: an hour off
    report = RejectReport()
    table = readers.read_nfdump_csv(path, ReadOptions(time_zone="Europe/Zurich"), report)
    assert table["first"].to_list() == [utc(2026, 11, 22, 10), utc(2026, 7, 1, 10)]
    assert table["last"][0] == utc(2026, 11, 22, 10, 0, 5)
    # the autumn hour that happens twice cannot be placed: rejected, not guessed
    assert report.counts == {Reason.BAD_TIME: 1} and report.examples[Reason.BAD_TIME][0].location == f"{path}:4"
    assert cli.main(["flows", "ingest", str(path), "--format", "nfdump", "--out", str(tmp_path / "s"),
                     "--time-zone", "Mars/Olympus"]) == 2  # fmt: skip
    assert "--time-zone: unknown time zone 'Mars/Olympus'" in capsys.readouterr().err


def test_impossible_rows_are_rejected_by_reason_and_exporter(tmp_path):
    path = tmp_path / "g.jsonl"
    big = 2**63 + 5  # above 2^63: a large unsigned count, not a negative one
    lines = [
        goflow2_record(bytes=big, packets=big // 1000, sampling_rate=1),  # kept
        goflow2_record(bytes=2**64 - 1, packets=2**64 // 1000, sampling_rate=100),  # x 100 does not fit in 64 bits
        goflow2_record(bytes=-1),  # negative
        goflow2_record(time_flow_end_ns=1_794_999_000_000_000_000, sampler_address="192.0.2.10"),  # last before first
        goflow2_record(time_flow_start_ns=1_795_000_000_000_000_000 - 3 * 86_400 * 10**9, sampler_address="192.0.2.10"),
        goflow2_record(bytes=2**64),  # not a 64-bit count at all
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    report = RejectReport()
    table = readers.read_goflow2(path, report=report)
    assert table["bytes"].to_list() == [big] and table.schema["bytes"] == pl.UInt64
    assert report.counts == {Reason.OVERFLOW: 1, Reason.NEGATIVE: 1, Reason.LAST_BEFORE_FIRST: 1,
                             Reason.OUT_OF_WINDOW: 1, Reason.BAD_NUMBER: 1}  # fmt: skip
    assert report.by_exporter[("192.0.2.10", Reason.OUT_OF_WINDOW)] == 1
    assert report.by_exporter[("192.0.2.9", Reason.OVERFLOW)] == 1
    text = "\n".join(report.lines())
    assert "192.0.2.10: 2 rejected (time outside the plausible window 1, last before first 1)" in text
    assert report.examples[Reason.OUT_OF_WINDOW][0].location == f"{path}:5"
    # the window is an option: off, the three-day-old record is kept
    kept = readers.read_goflow2(path, ReadOptions(window_us=None))
    assert kept.height == 2


# --- pmacct ------------------------------------------------------------------------------------

# nfacctd with print_output: csv and the aggregate of docs/flows.md: the header in the order of
# pmacct's print_plugin.c (P_write_stats_header_csv)
PMACCT_CSV = """\
PEER_SRC_IP,IN_IFACE,OUT_IFACE,SRC_IP,DST_IP,SRC_PORT,DST_PORT,PROTOCOL,SAMPLING_RATE,TIMESTAMP_START,TIMESTAMP_END,PACKETS,BYTES
192.0.2.7,3,4,10.0.0.1,10.0.0.2,40000,2811,tcp,100,2026-11-22 10:00:00.250000,2026-11-22 10:01:00.000000,700,1000000
192.0.2.7,3,4,2001:db8::1,2001:db8::2,0,34560,ipv6-icmp,0,1795000000.500000,1795000001.000000,1,72
192.0.2.8,0,0,10.0.0.5,10.0.0.6,53,5353,17,1,1795000000,1795000000,1,80
"""


def test_pmacct_preset_reads_the_print_plugin_csv(tmp_path, capsys):
    path = tmp_path / "nfacctd.csv"
    path.write_text(PMACCT_CSV)
    report = RejectReport()
    table = readers.read_pmacct_csv(path, report=report)
    assert report.rejected == 0 and table.height == 3
    assert table["exporter"].to_list() == ["192.0.2.7", "192.0.2.7", "192.0.2.8"]
    assert table["first"].to_list() == [utc(2026, 11, 22, 10, 0, 0, 250000), after(0.5), T0]
    assert table["protocol"].to_list() == [6, 58, 17] and table["dst_port"].to_list() == [2811, 34560, 5353]
    assert table["sampling_rate"].to_list() == [100, 0, 1]  # pmacct's 0: unknown
    assert table["bytes_scaled"].to_list() == [100_000_000, 72, 80]
    assert (table["input_if"][0], table["output_if"][0]) == (3, 4)
    assert cli.main(["flows", "ingest", str(path), "--format", "pmacct", "--out", str(tmp_path / "s")]) == 0
    assert "3 records into" in capsys.readouterr().out
    path.write_text("SRC_IP,DST_IP,PACKETS,BYTES\n10.0.0.1,10.0.0.2,1,60\n")
    with pytest.raises(FlowFileError, match=r"nfacctd\.csv: not pmacct print-plugin CSV.*lacks TIMESTAMP_START"):
        readers.read_pmacct_csv(path)
