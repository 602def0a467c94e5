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
