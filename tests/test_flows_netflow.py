"""NetFlow v5 / v9 (RFC 3954) and IPFIX (RFC 7011) decoding, encoding,
pcap reading and the ``alphaqos flows collect`` UDP collector."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from alphaqos import cli
from alphaqos.flows import netflow, schema
from alphaqos.flows.netflow import Decoder, decode, encode_ipfix, encode_v5, encode_v9
from alphaqos.flows.pcap import read_pcap, write_pcap

PYTHON_DIR = Path(__file__).resolve().parents[1] / "python"
EXPORT_S = 1_700_000_000  # 2023-11-14T22:13:20Z
UTC = dt.UTC


def us(value: int) -> dt.datetime:
    """A UTC datetime from microseconds since the epoch."""
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=value)


def ipfix(domain: int, *sets: bytes, export_s: int = EXPORT_S) -> bytes:
    body = b"".join(sets)
    return struct.pack(">HHIII", 10, 16 + len(body), export_s, 0, domain) + body


def v9(source_id: int, uptime_ms: int, *flowsets: bytes, count: int = 0) -> bytes:
    return struct.pack(">HHIIII", 9, count, uptime_ms, EXPORT_S, 0, source_id) + b"".join(flowsets)


def a_set(set_id: int, body: bytes) -> bytes:
    return struct.pack(">HH", set_id, 4 + len(body)) + body


def fields(*pairs) -> bytes:
    return b"".join(struct.pack(">HH", ident, length) for ident, length in pairs)


def canonical_frame(n: int, *, seed: int = 1, base: int = 1_700_000_000_000) -> pl.DataFrame:
    """``n`` random records within the hour after ``base`` (epoch ms)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        v6 = i % 4 == 3
        first = base + rng.randrange(0, 3_600_000)
        octets = rng.randrange(40, 1 << 40)
        rows.append({
            "exporter": "r1",
            "first": us(first * 1000),
            "last": us((first + rng.randrange(0, 60_000)) * 1000),
            "src_addr": str(ipaddress.ip_address(rng.getrandbits(128 if v6 else 32) | (1 << 125 if v6 else 1 << 24))),
            "dst_addr": str(ipaddress.ip_address(rng.getrandbits(128 if v6 else 32) | (1 << 125 if v6 else 1 << 24))),
            "src_port": rng.randrange(65536), "dst_port": rng.choice([22, 443, 2811, 50000]),
            "protocol": rng.choice([6, 17]), "bytes": octets, "packets": max(1, octets // rng.randrange(40, 1501)),  # packets of 40 to 1500 bytes
            "sampling_rate": rng.choice([1, 100, 1000]),
            "input_if": rng.randrange(1 << 16), "output_if": rng.randrange(1 << 16),
        })  # fmt: skip
    return schema.conform(pl.DataFrame(rows))


def same_rows(got: pl.DataFrame, want: pl.DataFrame) -> None:
    key = ["first", "src_addr", "src_port", "dst_addr"]
    got, want = got.drop("exporter").sort(key), want.drop("exporter").sort(key)
    assert got.schema == want.schema
    for column in got.columns:
        assert got[column].to_list() == want[column].to_list(), column


# --- NetFlow v5 -------------------------------------------------------------------


def v5_record(src, dst, packets, octets, first, last, sport, dport, proto, input_if=3, output_if=4) -> bytes:
    return struct.pack(">4s4sIHHIIIIHHBBBBHHBBH", socket.inet_aton(src), socket.inet_aton(dst), 0, input_if, output_if,
                       packets, octets, first, last, sport, dport, 0, 0x18, proto, 0, 0, 0, 24, 24, 0)  # fmt: skip


def test_v5_known_values_sampling_and_uptime_wrap():
    header = struct.pack(">HHIIIIBBH", 5, 2, 10_000, EXPORT_S, 500_000_000, 7, 0, 0, (1 << 14) | 100)
    records = v5_record("10.1.2.3", "192.0.2.9", 10, 1500, 4_000, 9_000, 1234, 80, 6)
    records += v5_record("10.1.2.4", "192.0.2.10", 1, 40, 2**32 - 1_000, 2**32 - 1, 53, 5353, 17)  # before the wrap
    frame, problems = decode([header + records], "198.51.100.1")
    assert problems == []
    export_us = EXPORT_S * 1_000_000 + 500_000
    assert frame.row(0, named=True) == {
        "exporter": "198.51.100.1", "first": us(export_us - 6_000_000), "last": us(export_us - 1_000_000),
        "src_addr": "10.1.2.3", "dst_addr": "192.0.2.9", "src_port": 1234, "dst_port": 80, "protocol": 6,
        "bytes": 1500, "packets": 10, "sampling_rate": 100, "bytes_scaled": 150_000, "packets_scaled": 1000,
        "input_if": 3, "output_if": 4,
    }  # fmt: skip
    # uptime 10 000 ms wrapped past 2**32: the flow started 11 s before the export
    assert frame["first"][1] == us(export_us - 11_000_000) and frame["last"][1] == us(export_us - 10_001_000)


def test_v5_round_trip_and_configured_sampling():
    want = canonical_frame(70).filter(~pl.col("src_addr").str.contains(":"))
    # a header sampling interval of 0 says nothing: the rate is unknown (0), not 1:1
    want = want.with_columns(pl.col("bytes") % (1 << 32), pl.col("packets") % (1 << 32), pl.lit(0, pl.Int64).alias("sampling_rate"))
    want = schema.conform(want.drop("bytes_scaled", "packets_scaled"))
    datagrams = encode_v5(want)
    assert len(datagrams) == -(-want.height // 30)
    same_rows(decode(datagrams, "r1")[0], want)
    got, _ = decode(datagrams, "r1", sampling={"r1": 64})
    assert got["sampling_rate"].unique().to_list() == [64]
    assert got["bytes_scaled"].sum() == 64 * want["bytes"].sum()


# --- NetFlow v9 --------------------------------------------------------------------


V9_TEMPLATE = a_set(0, struct.pack(">HH", 256, 11) + fields(
    (8, 4), (12, 4), (7, 2), (11, 2), (4, 1), (1, 4), (2, 4), (22, 4), (21, 4), (10, 2), (48, 1)))  # fmt: skip


def v9_data(*records) -> bytes:
    body = b"".join(
        struct.pack(">4s4sHHBIIIIHB", socket.inet_aton(s), socket.inet_aton(d), sp, dp, pr, by, pk, fs, ls, inp, sid)
        for s, d, sp, dp, pr, by, pk, fs, ls, inp, sid in records
    )
    return a_set(256, body + b"\x00" * (-len(body) % 4))


def test_v9_known_values_with_sampler_options():
    # RFC 3954 6.1: options template 300, scope System (type 1, 4 bytes);
    # FLOW_SAMPLER_ID 48, SAMPLING_ALGORITHM 35, SAMPLING_INTERVAL 34
    options_template = a_set(1, struct.pack(">HHH", 300, 4, 12) + fields((1, 4), (48, 1), (35, 1), (34, 4)) + b"\x00\x00")
    options_data = a_set(300, struct.pack(">IBBI", 0, 7, 2, 512) + struct.pack(">IBBI", 0, 8, 1, 10) + b"\x00" * 4)
    data = v9_data(("10.0.0.1", "10.0.0.2", 5000, 2811, 6, 1_000_000, 700, 40_000, 95_000, 12, 7),
                   ("10.0.0.3", "10.0.0.4", 5001, 443, 17, 64, 1, 99_000, 99_500, 13, 8),
                   ("10.0.0.5", "10.0.0.6", 1, 2, 6, 10, 1, 99_000, 99_000, 0, 9))  # fmt: skip
    frame, problems = decode([v9(42, 100_000, V9_TEMPLATE, options_template, options_data, data, count=7)], "r9")
    assert problems == []
    export_us = EXPORT_S * 1_000_000
    row = frame.row(0, named=True)
    assert row["first"] == us(export_us - 60_000_000) and row["last"] == us(export_us - 5_000_000)
    assert (row["src_addr"], row["dst_addr"], row["src_port"], row["dst_port"], row["protocol"]) == ("10.0.0.1", "10.0.0.2", 5000, 2811, 6)
    assert (row["bytes"], row["packets"], row["input_if"], row["output_if"]) == (1_000_000, 700, 12, 0)
    # sampler 7: 1 in 512; sampler 8: 1 in 10; sampler 9 unknown, and the
    # domain has two rates so none applies: unknown (0), counts as exported
    assert frame["sampling_rate"].to_list() == [512, 10, 0]
    assert frame["bytes_scaled"].to_list() == [512_000_000, 640, 10]


def test_v9_random_interval_without_sampler_ids_applies_to_the_source():
    template = a_set(0, struct.pack(">HH", 260, 4) + fields((8, 4), (12, 4), (1, 4), (2, 4)))
    options_template = a_set(1, struct.pack(">HHH", 301, 4, 8) + fields((1, 4), (48, 1), (50, 4)) + b"\x00\x00")
    options_data = a_set(301, struct.pack(">IBI", 0, 1, 2000) + b"\x00" * 3)
    data = a_set(260, struct.pack(">4s4sII", socket.inet_aton("10.9.9.9"), socket.inet_aton("10.8.8.8"), 100, 2))
    frame, problems = decode([v9(1, 5_000, template, options_template, options_data, data)], "r")
    assert problems == [] and frame["sampling_rate"].to_list() == [2000]
    # no time fields: the export time
    assert frame["first"].to_list() == [us(EXPORT_S * 1_000_000)]
    # a configured rate overrides the exported one
    frame, _ = decode([v9(1, 5_000, template, options_template, options_data, data)], "r", sampling={"r": 3})
    assert frame["sampling_rate"].to_list() == [3]


@pytest.mark.parametrize("encode", [encode_v9, encode_ipfix])
def test_round_trip_of_a_canonical_table(encode):
    want = canonical_frame(1500, seed=3)
    datagrams = encode(want)
    assert all(len(d) <= 1400 for d in datagrams)
    got, problems = decode(datagrams, "r1")
    assert problems == []
    same_rows(got, want)


# --- IPFIX --------------------------------------------------------------------------


def ipv6_variable_length_datagram() -> bytes:
    """Template 400: IPv6 addresses, ports, protocol, 8-byte counters,
    flowStart/EndMilliseconds, an enterprise field (enterprise bit, number
    9) and interfaceName (82) of variable length (RFC 7011 Section 7); two
    records, the second with a 3-byte length."""
    template = struct.pack(">HH", 400, 11) + fields((27, 16), (28, 16), (7, 2), (11, 2), (4, 1), (1, 8), (2, 8),
                                                    (152, 8), (153, 8)) + struct.pack(">HHI", 0x8000 | 100, 4, 9) + fields((82, 0xFFFF))  # fmt: skip

    def record(src, dst, name: bytes, octets, packets):
        head = struct.pack(">16s16sHHBQQQQI", socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst),
                           40000, 443, 6, octets, packets, 1_700_000_000_123, 1_700_000_000_456, 0xDEADBEEF)  # fmt: skip
        size = bytes([len(name)]) if len(name) < 255 else b"\xff" + struct.pack(">H", len(name))
        return head + size + name

    data = (record("2001:db8::1", "2001:db8::2", b"eth0", 123_456_789_012, 99_000_000)
            + record("fe80::1", "2001:db8:0:1::9", b"x" * 300, 5, 99))  # fmt: skip
    return ipfix(3, a_set(2, template), a_set(400, data + b"\x00\x00\x00"))


def test_ipfix_ipv6_variable_length_and_enterprise_fields():
    frame, problems = decode([ipv6_variable_length_datagram()], "2001:db8::ff")
    assert problems == []
    assert frame["src_addr"].to_list() == ["2001:db8::1", "fe80::1"]
    assert frame["dst_addr"].to_list() == ["2001:db8::2", "2001:db8:0:1::9"]
    assert frame["bytes"].to_list() == [123_456_789_012, 5] and frame["packets"].to_list() == [99_000_000, 99]
    assert frame["first"][0] == us(1_700_000_000_123_000) and frame["last"][0] == us(1_700_000_000_456_000)
    assert frame["exporter"].to_list() == ["2001:db8::ff"] * 2 and frame["sampling_rate"].to_list() == [0, 0]  # no sampler options


def test_ipfix_selector_options_seconds_and_reduced_size_encoding():
    # options template 401 (RFC 7011 3.4.2.2): scope selectorId (302), then
    # samplingPacketInterval 305 and samplingPacketSpace 306: 1 in (1+99)
    options_template = a_set(3, struct.pack(">HHH", 401, 3, 1) + fields((302, 8), (305, 4), (306, 4)))
    options_data = a_set(401, struct.pack(">QII", 5, 1, 99) + struct.pack(">QII", 6, 2, 6))
    # data template 402: selectorId, IPv4, octets in 3 bytes (reduced size,
    # RFC 7011 6.2), packets in 4, flowStart/EndSeconds
    template = a_set(2, struct.pack(">HH", 402, 7) + fields((302, 8), (8, 4), (12, 4), (1, 3), (2, 4), (150, 4), (151, 4)))
    data = a_set(402, struct.pack(">Q4s4s3sIII", 5, socket.inet_aton("192.0.2.1"), socket.inet_aton("198.51.100.7"),
                                  (70_000).to_bytes(3, "big"), 50, EXPORT_S - 30, EXPORT_S - 2)
                 + struct.pack(">Q4s4s3sIII", 6, socket.inet_aton("192.0.2.2"), socket.inet_aton("198.51.100.8"),
                               (1).to_bytes(3, "big"), 1, EXPORT_S, EXPORT_S))  # fmt: skip
    frame, problems = decode([ipfix(7, options_template, options_data, template, data)], "e")
    assert problems == []
    assert frame["sampling_rate"].to_list() == [100, 4]
    assert frame["bytes"].to_list() == [70_000, 1] and frame["packets_scaled"].to_list() == [5000, 4]
    assert frame["first"][0] == us((EXPORT_S - 30) * 1_000_000) and frame["last"][0] == us((EXPORT_S - 2) * 1_000_000)


def test_ipfix_sysuptime_with_system_init_time_from_options():
    options_template = a_set(3, struct.pack(">HHH", 404, 2, 1) + fields((149, 4), (160, 8)))
    options_data = a_set(404, struct.pack(">IQ", 1, 1_699_999_000_000))
    template = a_set(2, struct.pack(">HH", 403, 6) + fields((8, 4), (12, 4), (1, 4), (2, 4), (22, 4), (21, 4)))
    data = a_set(403, struct.pack(">4s4sIIII", socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), 1, 1, 5_000, 8_000))
    frame, problems = decode([ipfix(1, options_template, options_data, template, data)], "e")
    assert problems == []
    assert frame["first"][0] == us(1_699_999_005_000_000) and frame["last"][0] == us(1_699_999_008_000_000)


# Two IPFIX messages exported by softflowd 1.1.0 (Debian 1.1.0-1+b1, ``-v 10``) from
# 10.213.98.2, captured by tests/test_flows_exporter.py's set-up: templates 1024/1025
# (IPv4 with ports / ICMP), 2048/2049 (IPv6), flowStart/EndSysUpTime (22/21); an
# options template 256 scoped by meteringProcessId (143) giving
# systemInitTimeMilliseconds (160) and samplingPacketInterval/Space (305/306).
SOFTFLOWD_IPFIX = [
    bytes.fromhex(
        "000a02186b027f150000000400000000000200480400001000080004000c000400160004001500040001000400020004000a"
        "0004000e0004003d00010088000100070002000b00020004000100060001003c000100050001000200400401000e00080004"
        "000c000400160004001500040001000400020004000a0004000e0004003d0001008800010020000200040001003c00010005"
        "00010002004808000010001b0010001c001000160004001500040001000400020004000a0004000e0004003d000100880001"
        "00070002000b00020004000100060001003c000100050001000200400801000e001b0010001c001000160004001500040001"
        "000400020004000a0004000e0004003d000100880001008b000200040001003c00010005000100030022010000060001008f"
        "000400a00008013100040132000401300002005200100100002a00003b6a000001a201c06154000000010000000000016171"
        "7863617062000000000000000000040000ac0ad562010ad562020000042d000004310000037c000000110000000000000000"
        "000313899e20061304000ad562020ad562010000042d000004310010051c00000019000000000000000001039e201389061b"
        "04000ad562010ad562020000043100000432000000a40000000300000000000000000003138a9178061304000ad562020ad5"
        "62010000043100000432000008dc00000005000000000000000001039178138a061b0400"
    ),
    bytes.fromhex(
        "000a01846b027f150000000a000000000801004400000000000000000000000000000000ff0200000000000000000001ff9b"
        "cd0b000002670000026700000048000000010000000000000000000187003a060000040000300ad562020ad5620100000432"
        "0000043200000100000000020000000000000000010189c8138b110004000000080101000000000000000000000000000000"
        "0000ff02000000000000000000000000001600000327000007a7000000e400000003000000000000000000018f003a0600fe"
        "80000000000000e424aafffe9bcd0bff02000000000000000000000000001600000667000008a70000009800000002000000"
        "000000000000018f003a0600fe80000000000000e424aafffe9bcd0bff020000000000000000000000000002000006670000"
        "066700000038000000010000000000000000000185003a060000000000000000000000000000000000ff0200000000000000"
        "000001ff837eb3000006870000068700000048000000010000000000000000000187003a0600"
    ),
]


def test_softflowd_ipfix_messages_decode_with_their_uptime_times():
    decoder = Decoder()
    assert [decoder.feed(message, "10.213.98.2") for message in SOFTFLOWD_IPFIX] == [4, 6]
    frame = decoder.take()
    assert decoder.problems == [] and decoder.init_ms == {("10.213.98.2", 0): 1_795_325_714_772}
    boot_ms = 1_795_325_714_772
    v4 = frame.filter(pl.col("protocol") != 58)
    rows = [(r["src_addr"], r["src_port"], r["dst_addr"], r["dst_port"], r["protocol"], r["bytes"], r["packets"],
             r["first"], r["last"], r["sampling_rate"]) for r in v4.iter_rows(named=True)]  # fmt: skip
    a, b = "10.213.98.1", "10.213.98.2"
    assert rows == [
        (a, 5001, b, 40480, 6, 892, 17, us((boot_ms + 1069) * 1000), us((boot_ms + 1073) * 1000), 1),
        (b, 40480, a, 5001, 6, 1_049_884, 25, us((boot_ms + 1069) * 1000), us((boot_ms + 1073) * 1000), 1),
        (a, 5002, b, 37240, 6, 164, 3, us((boot_ms + 1073) * 1000), us((boot_ms + 1074) * 1000), 1),
        (b, 37240, a, 5002, 6, 2268, 5, us((boot_ms + 1073) * 1000), us((boot_ms + 1074) * 1000), 1),
        (b, 35272, a, 5003, 17, 256, 2, us((boot_ms + 1074) * 1000), us((boot_ms + 1074) * 1000), 1),
    ]  # fmt: skip
    icmp6 = frame.filter(pl.col("protocol") == 58)  # ICMP type/code fields (139), no ports
    assert icmp6.height == 5 and set(icmp6["src_port"].to_list()) == {0} and set(icmp6["src_addr"].str.slice(0, 2).to_list()) == {"::", "fe"}


def test_unknown_template_is_counted_then_recovered_when_the_template_arrives():
    table = canonical_frame(40).filter(~pl.col("src_addr").str.contains(":"))
    datagrams = encode_ipfix(table)
    sets = []
    for message in datagrams:
        pos = 16
        while pos < len(message):
            set_id, length = struct.unpack_from(">HH", message, pos)
            sets.append(message[pos:pos + length])
            pos += length
    templates = [s for s in sets if s[:2] in (b"\x00\x02", b"\x00\x03", b"\x01\x02")]
    data = [s for s in sets if s not in templates]
    decoder = Decoder()
    assert decoder.feed(ipfix(1, *data), "e") == 0
    assert decoder.counts["unknown_template"] == len(data)
    assert decoder.problems[0].reason == "unknown_template" and "256" in decoder.problems[0].detail
    decoder.feed(ipfix(1, *templates), "e")
    assert decoder.stats["recovered_sets"] == len(data) and decoder.take().height == table.height
    # another exporter's or domain's template does not apply
    decoder.feed(ipfix(2, *data), "e")
    decoder.feed(ipfix(1, *data), "other")
    assert decoder.counts["unknown_template"] == 3 * len(data) and decoder.take().height == 0


def test_sequence_gaps_count_what_was_lost_on_the_way():
    table = canonical_frame(400, seed=9).filter(~pl.col("src_addr").str.contains(":"))
    for encode, stat, lost in ((encode_ipfix, "lost_records", None), (encode_v9, "lost_datagrams", 1),
                               (encode_v5, "lost_records", 30)):  # fmt: skip
        datagrams = encode(table)
        assert len(datagrams) >= 4
        decoder = Decoder()
        for datagram in datagrams:
            decoder.feed(datagram, "e")
        assert decoder.stats[stat] == 0
        decoder = Decoder()
        for i, datagram in enumerate(datagrams):
            if i != 2:
                decoder.feed(datagram, "e")
        if lost is None:  # what the missing message held
            lost = table.height - decoder.take().height
        assert lost > 0 and decoder.stats[stat] == lost, encode.__name__
        # a datagram again (a duplicate or late one) is not a loss
        decoder.feed(datagrams[1], "e")
        assert decoder.stats[stat] == lost


# --- malformed input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("datagram", "reason"),
    [
        (b"\x00\x0a\x00", "truncated"),
        (b"\x00\x09" + bytes(10), "truncated"),
        (struct.pack(">HHIIIIBBH", 5, 3, 0, 0, 0, 0, 0, 0, 0) + bytes(48), "truncated"),
        (b"\x00\x07" + bytes(30), "unknown_version"),
        (b"", "truncated"),
        (ipfix(1, struct.pack(">HH", 256, 1000)), "bad_length"),
        (ipfix(1) + b"extra", "bad_length"),  # message length below the datagram's: fine; above: not
        (v9(1, 0, struct.pack(">HH", 256, 1000) + bytes(8)), "bad_length"),
        (v9(1, 0, a_set(0, struct.pack(">HH", 256, 0))), "empty_template"),
        (ipfix(1, a_set(2, struct.pack(">HH", 256, 3) + fields((8, 4)))), "truncated"),
        (ipfix(1, a_set(2, struct.pack(">HH", 256, 1) + fields((8, 0)))), "bad_template"),
        (ipfix(1, a_set(3, struct.pack(">HHH", 256, 1, 2) + fields((8, 4)))), "bad_template"),
        (ipfix(1, a_set(2, struct.pack(">HH", 12, 1) + fields((8, 4)))), "bad_template"),
        (ipfix(1, a_set(300, bytes(12))), "unknown_template"),
    ],
)
def test_malformed_datagrams_are_counted_by_reason(datagram, reason):
    if reason == "bad_length" and datagram.endswith(b"extra"):
        datagram = struct.pack(">HHIII", 10, 200, 0, 0, 1) + b"extra"
    decoder = Decoder()
    assert decoder.feed(datagram, "192.0.2.1") == 0
    assert dict(decoder.counts) == {reason: 1}
    problem = decoder.problems[0]
    assert (problem.exporter, problem.reason) == ("192.0.2.1", reason) and problem.detail
    assert decoder.take().height == 0


def mutated_datagrams(rng: random.Random, count: int, *, cut: float = 0.4, changes: int = 5):
    """Datagrams of every version (and IPv6 with variable-length fields)
    cut short (a share ``cut``), with up to ``changes`` bytes changed, or
    random (a tenth)."""
    valid = encode_ipfix(canonical_frame(60)) + encode_v9(canonical_frame(60)) + encode_v5(canonical_frame(60))
    valid += [ipv6_variable_length_datagram()] * 10
    for _ in range(count):
        datagram = bytearray(rng.choice(valid))
        action = rng.random()
        if action < cut:
            datagram = datagram[: rng.randrange(len(datagram))]
        elif action < 0.9:
            for _ in range(rng.randrange(1, changes + 1)):
                datagram[rng.randrange(len(datagram))] = rng.randrange(256)
        else:
            datagram = bytearray(rng.randbytes(rng.randrange(64)))
        yield bytes(datagram)


def test_mutated_and_random_datagrams_never_raise(tmp_path):
    rng = random.Random(7)
    decoder = Decoder()
    for datagram in mutated_datagrams(rng, 3000):
        decoder.feed(datagram, rng.choice(["a", "b"]))
    frame = decoder.take()
    assert frame.columns == list(schema.COLUMNS)
    schema.write_partitioned(frame, tmp_path)  # what the collector does with it
    assert sum(decoder.counts.values()) > 100 and decoder.stats["datagrams"] == 3000


# --- pcap ---------------------------------------------------------------------------------


def _to_pcapng(classic: bytes) -> bytes:
    """The same frames as a pcapng file (section header, one Ethernet
    interface, enhanced packet blocks)."""

    def block(kind: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)) + block(1, struct.pack("<HHI", 1, 0, 65535))
    pos = 24
    while pos < len(classic):
        sec, usec, captured, original = struct.unpack_from("<IIII", classic, pos)
        stamp = sec * 1_000_000 + usec
        out += block(6, struct.pack("<IIIII", 0, stamp >> 32, stamp & 0xFFFFFFFF, captured, original) + classic[pos + 16:pos + 16 + captured])
        pos += 16 + captured
    return out


def test_read_pcap_and_pcapng(tmp_path):
    table = canonical_frame(300, seed=5)
    v4, v6 = encode_ipfix(table), encode_v9(table)
    path = tmp_path / "exports.pcap"
    write_pcap(path, [("192.0.2.10", "192.0.2.1", d) for d in v4] + [("2001:db8::10", "2001:db8::1", d) for d in v6]
               + [("192.0.2.11", "192.0.2.1", b"\x00\x63junk")])  # fmt: skip
    for candidate in (path, tmp_path / "exports.pcapng"):
        if candidate.suffix == ".pcapng":
            candidate.write_bytes(_to_pcapng(path.read_bytes()))
        frame, problems = read_pcap(candidate)
        assert [p.reason for p in problems] == ["unknown_version"] and problems[0].exporter == "192.0.2.11"
        assert frame.group_by("exporter").len().sort("exporter").rows() == [("192.0.2.10", 300), ("2001:db8::10", 300)]
        same_rows(frame.filter(pl.col("exporter") == "2001:db8::10"), table)
    assert netflow.read_pcap(path, ports={9995})[0].height == 0
    (tmp_path / "bad.pcap").write_bytes(b"not a capture file")
    frame, problems = read_pcap(tmp_path / "bad.pcap")
    assert frame.height == 0 and [p.reason for p in problems] == ["pcap_format"]
    (tmp_path / "cut.pcap").write_bytes(path.read_bytes()[:-10])
    frame, problems = read_pcap(tmp_path / "cut.pcap")
    assert "pcap_truncated" in [p.reason for p in problems] and frame.height > 0


# --- the collector -------------------------------------------------------------------------


def _alphaqos(*args: str, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    return subprocess.Popen([sys.executable, "-m", "alphaqos", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kwargs)  # fmt: skip


@pytest.mark.parametrize(("stop", "decoder"), [(signal.SIGTERM, "native"), (signal.SIGINT, "python")])
def test_collector_writes_every_record_and_exits_0_when_stopped(tmp_path, stop, decoder):
    out = tmp_path / "flows"
    collector = _alphaqos("flows", "collect", "--listen", "127.0.0.1:0", "--out", str(out), "--flush-every", "300ms",
                          "--sampling", "127.0.0.1=7", "--decoder", decoder)  # fmt: skip
    try:
        banner = collector.stdout.readline()
        port = int(banner.split()[2].rsplit(":", 1)[1])
        table = canonical_frame(4000, seed=11, base=int(time.time() * 1000) - 3_700_000)  # the last hour
        datagrams = encode_ipfix(table.head(2000)) + encode_v9(table.tail(2000), source_id=3)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            for i, datagram in enumerate(datagrams):
                sender.sendto(datagram, ("127.0.0.1", port))
                if i == len(datagrams) // 2:
                    time.sleep(0.5)  # a periodic flush happens in between
            sender.sendto(b"\x00\x05\x00", ("127.0.0.1", port))
            # a sequence number from nowhere: a jump, not 2.7 billion lost records
            sender.sendto(encode_ipfix(table.head(0), sequence=2_700_000_000)[0], ("127.0.0.1", port))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:  # a second exporter, its records from 2023
            other.bind(("127.0.0.2", 0))
            for datagram in encode_ipfix(canonical_frame(20, seed=3)):
                other.sendto(datagram, ("127.0.0.1", port))
        collector.send_signal(stop)
        stdout, stderr = collector.communicate(timeout=20)
    finally:
        if collector.poll() is None:
            collector.kill()
    assert collector.returncode == 0, stderr
    assert "truncated 1" in stdout and "stopped after" in stdout
    last = stdout[stdout.rindex("stopped after"):].splitlines()
    mine = next(line for line in last if line.startswith("  127.0.0.1: "))
    assert "problems: truncated 1" in mine and "1 sequence-number jumps" in mine and "lost on the way" not in mine
    theirs = next(line for line in last if line.startswith("  127.0.0.2: "))
    assert "rejected: time outside the plausible window 20" in theirs and "truncated" not in theirs
    assert not list(out.glob("exporter=127.0.0.2/*"))
    files = list(out.glob("exporter=127.0.0.1/day=*/flows-*.parquet"))
    assert len(files) >= 2
    got = pl.read_parquet(files)
    assert got.height == 4000 and set(got["sampling_rate"].to_list()) == {7}
    same_rows(got.with_columns(pl.lit(1, pl.Int64).alias("sampling_rate")).drop("bytes_scaled", "packets_scaled").pipe(schema.conform),
              table.with_columns(pl.lit(1, pl.Int64).alias("sampling_rate")).drop("bytes_scaled", "packets_scaled").pipe(schema.conform))  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listen", "localhost"], "expected HOST:PORT"),
        (["--listen", "127.0.0.1:70000"], "port must be a number"),
        (["--listen", "not-an-address:4739"], "is not an IPv4 or IPv6 address"),
        (["--listen", "127.0.0.1:0", "--sampling", "x=0"], "--sampling"),
        (["--listen", "127.0.0.1:0", "--flush-every", "soon"], "--flush-every"),
        (["--listen", "127.0.0.1:0", "--duration", "-1s"], "--duration"),
        (["--listen", "127.0.0.1:0", "--flush-records", "0"], "--flush-records 0: must be at least 1"),
        (["--listen", "127.0.0.1:0", "--spool-limit", "lots"], "--spool-limit 'lots': expected a size"),
        (["--listen", "127.0.0.1:0", "--max-packet", "r1=jumbo"],
         "--max-packet 'r1=jumbo': expected EXPORTER=BYTES with BYTES a whole number of at least 1"),
    ],
)
def test_collector_bad_options_exit_2_with_one_line(tmp_path, capsys, args, message):
    assert cli.main(["flows", "collect", "--out", str(tmp_path / "o"), *args]) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("alphaqos: error: ") and message in stderr and stderr.count("\n") == 1


def test_collector_bad_listen_from_the_command_line_exits_2():
    collector = _alphaqos("flows", "collect", "--listen", "4739", "--out", "unused")
    _, stderr = collector.communicate(timeout=20)
    assert collector.returncode == 2
    assert stderr == "alphaqos: error: --listen '4739': expected HOST:PORT, e.g. 127.0.0.1:4739 or [::1]:4739\n"
    assert not Path("unused").exists()


def test_collector_stops_after_its_duration(tmp_path):
    collector = _alphaqos("flows", "collect", "--listen", "127.0.0.1:0", "--out", str(tmp_path), "--duration", "300ms")
    stdout, stderr = collector.communicate(timeout=20)
    assert collector.returncode == 0, stderr
    assert "stopped after 0.3 s: spooled 0 records" in stdout and list(tmp_path.iterdir()) == []  # no spool left either


def test_collector_address_in_use_exits_2(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        collector = _alphaqos("flows", "collect", "--listen", f"127.0.0.1:{port}", "--out", str(tmp_path / "o"))
        _, stderr = collector.communicate(timeout=20)
    assert collector.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in stderr


# --- what must never reach the store, and what must be counted (issue 11) ---------------------------

from alphaqos.flows import readers  # noqa: E402
from alphaqos.flows.schema import Reason  # noqa: E402

IMPOSSIBLE_TEMPLATE = a_set(2, struct.pack(">HH", 410, 7) + fields((8, 4), (12, 4), (1, 8), (2, 8), (152, 8), (153, 8), (34, 4)))


def impossible_records():
    """(octets, packets, first ms, last ms, sampling interval, what the store must make of it)."""
    t = EXPORT_S * 1000
    return [
        (1500, 1, t - 5000, t - 1000, 1, None),  # fine
        (2**63 + 1, 2**63 // 1000, t - 5000, t - 1000, 1, None),  # above 2^63: a large count, kept as it is
        (2**64 - 1, 2**64 // 1000, t - 5000, t - 1000, 100, Reason.OVERFLOW),  # x 100 does not fit in 64 bits
        (0, 0, t - 5000, t - 1000, 1, Reason.EMPTY),
        (1500, 0, t - 5000, t - 1000, 1, Reason.BYTES_WITHOUT_PACKETS),
        (65_536, 1, t - 5000, t - 1000, 1, Reason.BYTES_PER_PACKET),  # one byte more than an IPv4 packet can hold
        (2**63, 2**63 // 65_535, t - 5000, t - 1000, 1, Reason.BYTES_PER_PACKET),  # the 2^63-byte record
        (65_535 * 3, 3, t - 5000, t - 1000, 1, None),  # three packets of the largest size: possible
        (1500, 1, t - 1000, t - 5000, 1, Reason.LAST_BEFORE_FIRST),
        (1500, 1, t - 2 * 86_400_000, t - 2 * 86_400_000, 1, Reason.OUT_OF_WINDOW),  # 2 days before its export
        (1500, 1, 1000, 2000, 1, Reason.OUT_OF_WINDOW),  # 1970
        (1500, 1, 2_272_000_000_000, 2_272_000_000_000, 1, Reason.OUT_OF_WINDOW),  # 2042
    ]


def test_decoder_rejects_impossible_records_as_the_csv_reader_does(tmp_path):
    rows = impossible_records()
    body = b"".join(struct.pack(">4s4sQQQQI", socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), o, p, f, la, s)
                    for o, p, f, la, s, _ in rows)  # fmt: skip
    decoder = Decoder()
    decoder.feed(ipfix(1, IMPOSSIBLE_TEMPLATE, a_set(410, body)), "192.0.2.1")
    decoder.feed(ipfix(1, IMPOSSIBLE_TEMPLATE, a_set(410, body[:2 * 44])), "192.0.2.2")  # the first two only
    frame = decoder.take()
    assert frame.filter(pl.col("exporter") == "192.0.2.1")["bytes"].to_list() == [1500, 2**63 + 1, 65_535 * 3]
    assert frame.schema["bytes"] == pl.UInt64 and frame["bytes_scaled"].to_list() == [1500, 2**63 + 1, 65_535 * 3, 1500, 2**63 + 1]
    want = {}
    for *_, reason in rows:
        if reason is not None:
            want[("192.0.2.1", reason)] = want.get(("192.0.2.1", reason), 0) + 1
    assert dict(decoder.rejected) == want
    # the same records as CSV rows with a receive time: the same reasons
    csv = tmp_path / "same.jsonl"
    csv.write_text("".join(
        json.dumps({"sampler_address": "192.0.2.1", "time_received_ns": EXPORT_S * 10**9, "time_flow_start_ns": f * 10**6,
                    "time_flow_end_ns": la * 10**6, "bytes": o, "packets": p, "sampling_rate": s, "src_addr": "10.0.0.1",
                    "dst_addr": "10.0.0.2", "proto": 6}) + "\n" for o, p, f, la, s, _ in rows))  # fmt: skip
    report = readers.RejectReport()
    read = readers.read_goflow2(csv, report=report)
    assert {(e, Reason(r)): n for (e, r), n in report.by_exporter.items()} == want
    assert read["bytes"].to_list() == [1500, 2**63 + 1, 65_535 * 3]
    # with the window off, only 1970-2199 is required
    decoder = Decoder(window_us=None)
    decoder.feed(ipfix(1, IMPOSSIBLE_TEMPLATE, a_set(410, body)), "e")
    kept = sum(1 for row in rows if row[-1] in (None, Reason.OUT_OF_WINDOW))
    assert decoder.take().height == kept and sum(decoder.rejected.values()) == len(rows) - kept


def test_v9_record_ending_after_its_export_is_impossible():
    # LAST_SWITCHED 2 s after sys_uptime: the record would end after the datagram was written
    frame, _ = decode([v9(1, 100_000, V9_TEMPLATE, v9_data(("10.0.0.1", "10.0.0.2", 1, 2, 6, 100, 1, 90_000, 102_000, 1, 0),
                                                           ("10.0.0.3", "10.0.0.4", 1, 2, 6, 100, 1, 90_000, 100_500, 1, 0)))], "r")  # fmt: skip
    assert frame["src_addr"].to_list() == ["10.0.0.3"]  # within the second of slack the header's whole seconds allow


def test_fuzzed_datagrams_never_put_an_impossible_record_in_the_store(tmp_path):
    rng = random.Random(11)
    valid = encode_ipfix(canonical_frame(60)) + encode_v9(canonical_frame(60)) + encode_v5(canonical_frame(60))
    received = EXPORT_S * 1_000_000  # the collector's clock (the exports' times are within the hour before)
    decoder = Decoder()
    for _ in range(2000):
        datagram = bytearray(rng.choice(valid))
        for _ in range(rng.randrange(1, 8)):
            datagram[rng.randrange(len(datagram))] = rng.randrange(256)
        decoder.feed(bytes(datagram), rng.choice(["a", "b"]), received)
    frame = decoder.take()
    assert frame.height > 100 and sum(decoder.rejected.values()) > 0
    assert (frame["last"] >= frame["first"]).all()
    window = dt.timedelta(days=1)
    assert frame["first"].min() >= us(received) - window and frame["last"].max() <= us(received) + window
    assert (frame["sampling_rate"] >= 0).all()
    days = {p.parent.name for p in schema.write_partitioned(frame, tmp_path)}
    assert len(days) <= 3  # no partition per bogus day


def test_bad_data_that_is_dropped_is_counted():
    # a v5 header whose count disagrees with the datagram's length (either way)
    header = struct.pack(">HHIIIIBBH", 5, 1, 10_000, EXPORT_S, 0, 0, 0, 0, 0)
    record = v5_record("10.0.0.1", "10.0.0.2", 1, 60, 9_000, 9_500, 1, 2, 6)
    decoder = Decoder()
    assert decoder.feed(header + record + record, "r") == 0
    assert decoder.counts == {"bad_length": 1} and "count 1 means 72 bytes" in decoder.problems[0].detail
    # an IPFIX variable-length field that runs past its set
    template = a_set(2, struct.pack(">HH", 420, 3) + fields((8, 4), (12, 4), (82, 0xFFFF)))
    good = socket.inet_aton("10.0.0.1") + socket.inet_aton("10.0.0.2") + b"\x04eth0"
    overrun = socket.inet_aton("10.0.0.3") + socket.inet_aton("10.0.0.4") + b"\x20abc"  # says 32 bytes, has 3
    decoder = Decoder()
    assert decoder.feed(ipfix(1, template, a_set(420, good + overrun)), "r") == 1
    assert decoder.counts == {"truncated": 1} and "runs past its set" in decoder.problems[0].detail
    # a data set shorter than its template's record (a template longer than its set)
    decoder = Decoder()
    decoder.feed(ipfix(1, a_set(2, struct.pack(">HH", 421, 2) + fields((8, 4), (12, 4)))), "r")
    assert decoder.feed(ipfix(1, a_set(421, socket.inet_aton("10.0.0.1") + b"\x0a\x00")), "r") == 0
    assert decoder.counts == {"truncated": 1} and "ends 6 bytes into a record of 8 bytes" in decoder.problems[0].detail
    decoder.feed(ipfix(1, a_set(421, socket.inet_aton("10.0.0.1") * 2 + b"\x00\x00\x00")), "r")  # zero padding: fine
    assert decoder.counts == {"truncated": 1}
    # an options record giving sampling interval 0: counted, and the rate stays unknown (not 1:1)
    options_template = a_set(1, struct.pack(">HHH", 300, 4, 8) + fields((1, 4), (48, 1), (34, 4)) + b"\x00\x00")
    options_data = a_set(300, struct.pack(">IBI", 0, 7, 0) + b"\x00" * 3)
    data = v9_data(("10.0.0.1", "10.0.0.2", 1, 2, 6, 100, 1, 9_000, 9_500, 1, 7))
    decoder = Decoder()
    decoder.feed(v9(1, 10_000, V9_TEMPLATE, options_template, options_data, data), "r")
    assert decoder.counts == {"zero_sampling_interval": 1} and "sampler 7" in decoder.problems[0].detail
    assert decoder.take()["sampling_rate"].to_list() == [0]
    assert decoder.exporter_counts == {"r": {"zero_sampling_interval": 1}}


def test_icmp_type_and_code_are_kept_in_dst_port():
    # v9: ICMP_TYPE (32) = type x 256 + code; protocol 1; no L4 ports
    template = a_set(0, struct.pack(">HH", 430, 5) + fields((8, 4), (12, 4), (4, 1), (32, 2), (1, 4)))
    body = struct.pack(">4s4sBHI", socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), 1, 8 * 256, 84)
    body += struct.pack(">4s4sBHI", socket.inet_aton("10.0.0.2"), socket.inet_aton("10.0.0.1"), 1, 3 * 256 + 3, 84)
    frame, problems = decode([v9(1, 10_000, template, a_set(430, body + b"\x00" * (-len(body) % 4)))], "r")
    assert problems == [] and frame["dst_port"].to_list() == [2048, 771] and frame["src_port"].to_list() == [0, 0]
    # IPFIX: icmpTypeIPv6 / icmpCodeIPv6 (178/179) apart; protocol 58
    template = a_set(2, struct.pack(">HH", 431, 6) + fields((27, 16), (28, 16), (4, 1), (178, 1), (179, 1), (1, 4)))
    body = struct.pack(">16s16sBBBI", socket.inet_pton(socket.AF_INET6, "2001:db8::1"), socket.inet_pton(socket.AF_INET6, "2001:db8::2"),
                       58, 135, 0, 72)  # fmt: skip
    frame, _ = decode([ipfix(1, template, a_set(431, body))], "r")
    assert frame["dst_port"].to_list() == [135 * 256]
    # softflowd's IPFIX (icmpTypeCodeIPv6, 139): MLDv2 reports (143) and neighbour solicitations (135)
    frame, _ = decode(SOFTFLOWD_IPFIX, "10.213.98.2")
    types = sorted({port >> 8 for port in frame.filter(pl.col("protocol") == 58)["dst_port"].to_list()})
    assert types and set(types) <= {133, 135, 136, 143}


def test_sequence_jumps_are_not_losses_and_counters_are_per_exporter():
    table = canonical_frame(200, seed=4).filter(~pl.col("src_addr").str.contains(":"))
    first, second = encode_ipfix(table), encode_ipfix(table, sequence=2_700_000_000)
    decoder = Decoder()
    for datagram in first[:3]:
        decoder.feed(datagram, "a")
    decoder.feed(first[3], "b")  # another exporter: its own stream
    for datagram in second:  # exporter a restarts with garbage numbers
        decoder.feed(datagram, "a")
    for datagram in first:  # and again from 0: a jump backwards, not a reordering
        decoder.feed(datagram, "a")
    stats = decoder.exporter_stats
    assert stats["a"]["lost_records"] == 0 and stats["a"]["sequence_jumps"] == 2
    assert stats["b"]["datagrams"] == 1 and stats["b"].get("sequence_jumps", 0) == 0
    assert decoder.stats["lost_records"] == 0 and decoder.stats["datagrams"] == 3 + 1 + len(second) + len(first)
    # a real gap is still a loss
    decoder = Decoder()
    for i, datagram in enumerate(first):
        if i != 1:
            decoder.feed(datagram, "a")
    assert 0 < decoder.exporter_stats["a"]["lost_records"] < 200
