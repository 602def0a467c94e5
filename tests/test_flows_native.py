"""Issue 20, collector speed: the native decode path (Rust,
``alphaqos.flows.native.NativeDecoder``) against the Python decoder, the
reference. Each test feeds the same datagrams to both and asserts the
same records, the same records per datagram, the same problem counters
(overall, per exporter, rejected by reason) and the same problems."""

from __future__ import annotations

import random
import socket
import struct
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from alphaqos.flows import netflow, schema
from alphaqos.flows.native import REASONS, NativeDecoder
from alphaqos.flows.netflow import Decoder, encode_ipfix, encode_v5, encode_v9

sys.path.insert(0, str(Path(__file__).parent))
import test_flows_limits as limits  # noqa: E402
from test_flows_netflow import (EXPORT_S, V9_TEMPLATE, a_set, canonical_frame, fields, ipfix,  # noqa: E402
                                ipv6_variable_length_datagram, mutated_datagrams, v9, v9_data)


def _nonzero(counter) -> dict:
    return {k: v for k, v in counter.items() if v}


def both(items, **options) -> tuple[pl.DataFrame, Decoder]:
    """Feed ``(exporter, datagram, received_us)`` to both decoders (taking
    the records every 500 datagrams, as a collector flushes) and assert
    they agree; the Python decoder's table and the decoder."""
    reference, native = Decoder(**options), NativeDecoder(**options)
    frames: list[list[pl.DataFrame]] = [[], []]
    for i, (exporter, datagram, received) in enumerate(items):
        assert reference.feed(datagram, exporter, received) == native.feed(datagram, exporter, received), f"datagram {i}"
        if i % 500 == 499:
            frames[0].append(reference.take())
            frames[1].append(native.take())
    frames[0].append(reference.take())
    frames[1].append(native.take())
    want, got = pl.concat(frames[0]), pl.concat(frames[1])
    assert got.schema == want.schema
    assert got.sort(want.columns).equals(want.sort(want.columns))
    assert _nonzero(native.counts) == _nonzero(reference.counts)
    assert _nonzero(native.stats) == _nonzero(reference.stats)
    for name in ("exporter_counts", "exporter_stats"):
        mine = {e: _nonzero(c) for e, c in getattr(native, name).items() if _nonzero(c)}
        theirs = {e: _nonzero(c) for e, c in getattr(reference, name).items() if _nonzero(c)}
        assert mine == theirs, name
    assert native.rejected == reference.rejected
    assert native.exporters() == reference.exporters()
    assert Counter(native.problems) == Counter(reference.problems)
    return want, reference


def _stream(datagrams, exporter="192.0.2.1", received=None):
    return [(exporter, d, received) for d in datagrams]


@pytest.mark.parametrize("encode", [encode_ipfix, encode_v9, encode_v5])
def test_valid_exports_decode_alike(encode):
    table = canonical_frame(400, seed=3)  # IPv4 and IPv6 rows (v5 keeps the IPv4 ones)
    items = _stream(encode(table)) + _stream(encode(canonical_frame(100, seed=4)), "2001:db8::7")
    items += _stream([ipv6_variable_length_datagram()] * 3, "198.51.100.1")
    frame, decoder = both(items)
    assert frame.height >= 300 and not decoder.counts


def test_templates_arriving_late_decode_alike():
    # every data set before its template: held, then recovered when the templates come
    for encode in (encode_ipfix, encode_v9):
        datagrams = encode(canonical_frame(300, seed=5))
        frame, decoder = both(_stream(datagrams[1:] + datagrams[:1]))
        assert frame.height == 300 and decoder.stats["recovered_sets"] > 0 and decoder.counts["unknown_template"] > 0


def test_sampling_options_sequence_gaps_and_configured_rates_decode_alike():
    options_template = a_set(1, struct.pack(">HHH", 300, 4, 8) + fields((1, 4), (48, 1), (34, 4)) + b"\x00\x00")
    options = [a_set(300, struct.pack(">IBI", 0, 7, rate) + b"\x00" * 3) for rate in (0, 100)]
    data = v9_data(("10.0.0.1", "10.0.0.2", 1, 2, 6, 100, 1, 9_000, 9_500, 1, 7), ("10.0.0.3", "10.0.0.2", 1, 2, 1, 100, 1, 9_000, 9_500, 1, 9))
    items = [("r", v9(1, 10_000, V9_TEMPLATE, options_template, options[0], data), None),
             ("r", v9(1, 10_000, V9_TEMPLATE, options_template, options[1], data), None),
             ("s", v9(1, 10_000, V9_TEMPLATE, data), None)]  # fmt: skip
    both(items)
    both(items, sampling={"s": 10})
    table = canonical_frame(600, seed=9).filter(~pl.col("src_addr").str.contains(":"))
    for encode in (encode_ipfix, encode_v9, encode_v5):
        datagrams = encode(table)
        _, decoder = both(_stream(datagrams[:2] + datagrams[3:] + datagrams[1:2] + datagrams[:1]))  # a loss, late and repeated ones
        assert decoder.stats["lost_records"] + decoder.stats["lost_datagrams"] > 0


def test_hostile_datagrams_decode_alike():
    # the corpus of the fuzz tests of test_flows_netflow: truncated, mutated and random datagrams
    rng = random.Random(7)
    items = [(rng.choice(["a", "b", "2001:db8::1"]), datagram, EXPORT_S * 1_000_000 if rng.random() < 0.7 else None)
             for datagram in mutated_datagrams(rng, 4000, cut=0.3, changes=7)]  # fmt: skip
    frame, decoder = both(items)
    assert frame.height > 100 and sum(decoder.rejected.values()) > 0 and len(decoder.counts) >= 5


def test_impossible_records_of_issue_20_decode_alike():
    # the datagrams of test_flows_limits: addresses of the wrong length, times that overflow, both window centres
    t = limits.EXPORT_S * 1000
    now_us = limits.EXPORT_S * 10**6 - 2 * 10**6
    wrap_ms, wrap_s, good_ms, good_s = (now_us + 2**64) // 1000 + 1, (now_us + 2**64) // 10**6 + 1, now_us // 1000, now_us // 10**6
    v4 = struct.pack(">Q4sIIQQ", 0x0A000001, socket.inet_aton("10.0.0.2"), 1500, 1, t - 2000, t - 1000)
    v6 = struct.pack(">Q16sIIQQ", 1, socket.inet_pton(socket.AF_INET6, "2001:db8::2"), 1500, 1, t - 2000, t - 1000)
    options = a_set(3, struct.pack(">HHH", 432, 2, 1) + fields((149, 4), (160, 8))) + a_set(432, struct.pack(">IQ", 1, 2**64 - 5))
    uptime = a_set(2, struct.pack(">HH", 433, 6) + fields((8, 4), (12, 4), (1, 8), (2, 8), (22, 4), (21, 4)))
    body = struct.pack(">4s4sQQII", socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"), 1500, 1, 5, 6)
    later = t + 3 * 86_400_000
    # empty, bytes without packets, above 9000 and 65,535 bytes a packet, ok, last before first, 2^30 bytes (x 2^40: above 2^64)
    counts = b"".join(struct.pack(">4s4sQQQQ", socket.inet_aton("10.0.0.1"), socket.inet_aton(f"10.0.1.{i}"), octets, packets, t - 9 + swap * 8, t - 1 - swap * 8)
                      for i, (octets, packets, swap) in enumerate([(0, 0, 0), (100, 0, 0), (65_536, 1, 0), (2**64 - 1, 2**48, 0), (9000, 1, 0),
                                                                   (100, 1, 1), (2**30, 2**20, 0)]))  # fmt: skip
    received = limits.EXPORT_S * 10**6
    items = [
        ("r", limits.ipfix(1, limits.ADDRESS_TEMPLATE, a_set(420, v4)), received),
        ("r", limits.ipfix(1, limits.V6_SHORT_TEMPLATE, a_set(421, v6)), received),
        ("r", limits.ipfix(1, limits.TIMES_MS, limits.TIMES_S,
                           a_set(430, limits.times_record(good_ms, good_ms) + limits.times_record(wrap_ms, wrap_ms, "10.0.0.3")),
                           a_set(431, limits.times_record(good_s, good_s, "10.0.0.4") + limits.times_record(good_s, wrap_s, "10.0.0.5"))), received),
        ("r", limits.ipfix(2, options, uptime, a_set(433, body)), received),
        ("r", limits.ipfix(3, limits.TIMES_MS, a_set(430, limits.times_record(t - 5000, t - 1000) + limits.times_record(later, later, "10.0.0.3"))), later * 1000),
        ("j", limits.ipfix(4, limits.TIMES_MS, a_set(430, counts)), received),
        ("r", limits.ipfix(5, limits.TIMES_MS, a_set(430, limits.times_record(1000, 2000))), 0),
        ("r", limits.ipfix(7, limits.TIMES_MS, a_set(430, limits.times_record(5_680_281_600_000, 5_680_281_600_001))), None),  # 2150
        # after 2199 (7,289,654,400,000 ms: 2201-01-01), and a v9 flow ending 0.5 s and 2 s after its export
        ("r", limits.ipfix(6, limits.TIMES_MS, a_set(430, limits.times_record(7_289_654_400_000, 7_289_654_400_000))), None),
        ("v", v9(1, 100_000, V9_TEMPLATE, v9_data(("10.0.0.1", "10.0.0.2", 1, 2, 6, 100, 1, 90_000, 102_000, 1, 0),
                                                  ("10.0.0.3", "10.0.0.4", 1, 2, 6, 100, 1, 90_000, 100_500, 1, 0))), None),
    ]  # fmt: skip
    both(items, max_packet_bytes={"j": 9000})
    both(items, window_us=None)
    # every check the native decoder applies itself (REASONS) rejects records here, and its counts match the reference's
    _, decoder = both(items, max_packet_bytes={"j": 9000, "*": 65_000}, sampling={"j": 2**40})
    assert {why for _, why in decoder.rejected} == set(REASONS[1:])


def test_caps_on_held_data_and_templates_decode_alike(monkeypatch):
    for name, value in (("TEMPLATES_PER_EXPORTER", 40), ("TEMPLATES", 100), ("TEMPLATE_FIELDS_PER_EXPORTER", 600),
                        ("TEMPLATE_FIELDS", 1600), ("HELD_SETS", 8), ("HELD_BYTES_PER_EXPORTER", 20_000),
                        ("HELD_BYTES", 100_000)):  # fmt: skip
        monkeypatch.setattr(netflow, name, value)

    def templates(first_id, count):
        return a_set(2, b"".join(struct.pack(">HH", tid, count) + fields(*[(1, 4)] * count) for tid in range(first_id, first_id + 10)))

    items = []
    for i in range(30):
        items.append(("203.0.113.1", ipfix(i, templates(256 + i * 10, 20)), None))
        items.append((f"203.0.113.{2 + i}", ipfix(i, templates(256, 30)), None))
        for source in range(3):  # data for templates not (yet) announced, some of it too large to hold
            sets = [a_set(999 - k, bytes([1]) * (2000 + 4000 * k)) for k in range(3)]
            items.append((f"198.51.100.{(i + source) % 12}", ipfix(1, *sets), None))
    # a template that comes recovers what is still held for it
    template = a_set(2, struct.pack(">HH", 999, 6) + fields((8, 4), (12, 4), (1, 4), (2, 4), (152, 8), (153, 8)))
    items += [(f"198.51.100.{s}", ipfix(1, template), None) for s in range(12)]
    _, decoder = both(items)
    assert {"template_evicted", "held_evicted", "unknown_template"} <= set(decoder.counts)
    assert decoder.stats["recovered_sets"] > 0


def test_recv_reads_a_socket_in_batches_with_the_source_as_exporter():
    datagrams = encode_ipfix(canonical_frame(200, seed=6))
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with receiver, sender:
        receiver.bind(("127.0.0.1", 0))
        receiver.setblocking(False)
        for datagram in datagrams:
            sender.sendto(datagram, receiver.getsockname())
        native = NativeDecoder(window_us=None)
        read = 0
        while read < len(datagrams):
            got = native.recv(receiver, 5, 1.0, 10**9)
            assert 0 < got <= 5
            read += got
        assert native.recv(receiver, 5, 0.01, 10**9) == 0  # nothing more: back after the timeout
    reference = Decoder(window_us=None)
    for datagram in datagrams:
        reference.feed(datagram, "127.0.0.1")
    want, got = reference.take(), native.take()
    assert got.sort(want.columns).equals(want.sort(want.columns))
    assert native.exporters() == ["127.0.0.1"] and native.stats["datagrams"] == len(datagrams)


def test_counters_of_many_source_addresses_are_bounded_alike(monkeypatch):
    # 30 sources, counters kept apart for the first 8: the others' are summed, their records keep their name
    monkeypatch.setattr(netflow, "EXPORTERS", 8)
    rng = random.Random(5)
    datagrams = encode_ipfix(canonical_frame(100, seed=8))
    items = [(f"198.51.100.{i}", d, None) for i in range(30) for d in datagrams[:1] + rng.sample(datagrams[1:], 3)]
    items += [(f"198.51.100.{i}", datagram, None) for i, datagram in enumerate(mutated_datagrams(rng, 300))]
    frame, decoder = both(items)
    assert len(decoder.exporter_stats) == 9 and netflow.OTHER_EXPORTERS in decoder.exporter_stats
    assert sum(s["datagrams"] for s in decoder.exporter_stats.values()) == len(items)
    assert frame["exporter"].n_unique() > 9


def test_sequence_and_sampler_state_of_many_sources_is_bounded_alike(monkeypatch):
    # 40 sources, each with its sequence numbers and sampler options, state kept for 8: the least recently
    # set is forgotten (state_evicted), then their records' rate is unknown until the options come again
    monkeypatch.setattr(netflow, "EXPORTERS", 8)
    options_template = a_set(1, struct.pack(">HHH", 300, 4, 8) + fields((1, 4), (48, 1), (34, 4)) + b"\x00\x00")
    data = v9_data(("10.0.0.1", "10.0.0.2", 1, 2, 6, 100, 1, 9_000, 9_500, 1, 7))
    items = [(f"198.51.100.{i}", v9(i, 10_000, V9_TEMPLATE, options_template,
                                    a_set(300, struct.pack(">IBI", 0, 7, 100 + i) + b"\x00" * 3), data), None) for i in range(40)]  # fmt: skip
    items += [(f"198.51.100.{i}", v9(i, 10_000, data), None) for i in range(40)]
    frame, reference = both(items)
    native = NativeDecoder()
    for exporter, datagram, received in items:
        native.feed(datagram, exporter, received)
    assert reference.counts["state_evicted"] == native.counts["state_evicted"] > 0
    assert len(reference._next_sequence) <= 8 and len(reference.sampler_rates) <= 8 and len(reference.init_ms) <= 8
    assert native._counters()["sequences"] <= 8 and native._counters()["sampler_states"] <= 8
    # the last 8 sources kept their rate; the others' second records have it unknown
    assert frame.filter(pl.col("sampling_rate") == 0).height == 32


def test_names_of_spoofed_sources_are_forgotten_once_they_hold_nothing(monkeypatch):
    # 400 source addresses, most sending garbage: the native decoder keeps the names of at most
    # 2 x EXPORTERS exporters at a time (those holding templates, state or records come back as they were)
    monkeypatch.setattr(netflow, "EXPORTERS", 8)
    rng = random.Random(11)
    datagrams = encode_ipfix(canonical_frame(60, seed=3))
    items = []
    for i in range(400):
        items.append((f"203.0.113.{i % 250}.{i}" if i % 2 else f"2001:db8::{i:x}", rng.randbytes(40), None))
        if i % 50 == 0:
            items += [("192.0.2.1", d, None) for d in datagrams]
    frame, _ = both(items)
    native = NativeDecoder()
    for exporter, datagram, received in items:
        native.feed(datagram, exporter, received)
    assert native._counters()["names"] <= 16
    assert native.take()["exporter"].unique().to_list() == ["192.0.2.1"] and frame.height > 0


def test_grouped_write_makes_the_partitions_of_write_partitioned(tmp_path):
    # two exporters, records on both sides of midnight UTC, interleaved: the native groups written as
    # slices (schema.write_grouped) make the files the Python decoder's table makes through write_partitioned
    datagrams = encode_ipfix(canonical_frame(400, seed=12, base=1_700_000_000_000 + 5_400_000))
    reference, native = Decoder(window_us=None), NativeDecoder(window_us=None)
    for datagram in datagrams:
        for exporter in ("192.0.2.1", "2001:db8::7"):
            reference.feed(datagram, exporter)
            native.feed(datagram, exporter)
    frame, groups = native.build_parts(native.detach())
    assert len(groups) == 4 and sum(n for *_, n in groups) == frame.height == 800
    schema.write_grouped(frame, groups, tmp_path / "native", tag="flows")
    schema.write_partitioned(reference.take(), tmp_path / "python", tag="flows")
    files = sorted(p.relative_to(tmp_path / "python") for p in (tmp_path / "python").rglob("*.parquet"))
    assert len(files) == 4 and files == sorted(p.relative_to(tmp_path / "native") for p in (tmp_path / "native").rglob("*.parquet"))
    for name in files:
        want, got = pl.read_parquet(tmp_path / "python" / name), pl.read_parquet(tmp_path / "native" / name)
        assert got.schema == want.schema and got.sort(want.columns).equals(want.sort(want.columns))


def test_ipv6_text_is_inet_ntop_text():
    # the hand-written IPv6 formatting against glibc's inet_ntop: RFC 5952 zero runs (longest, first of equals,
    # single zero words kept), IPv4-mapped and -compatible tails, no leading zeros, random words
    rng = random.Random(20)
    edges = ["::", "::1", "::2", "1::", "::ffff:10.0.0.1", "::10.0.0.1", "::1:0:0:0", "1:0:0:2:0:0:0:3", "1:0:0:2:0:0:3:4",
             "1:0:2:0:3:0:4:0", "0:1:0:1:0:1:0:1", "ffff::", "::ffff:0:1", "0:0:0:0:0:1:0:0", "f:f0:f00:f000:a:ab:abc:abcd",
             "2001:db8::2", "fe80::1:0:0:0:1", "::ffff:0.0.0.0"]  # fmt: skip
    packed = [socket.inet_pton(socket.AF_INET6, a) for a in edges]
    for _ in range(300):  # words of 0 with probability 1/2: many runs of every length
        packed.append(b"".join(struct.pack(">H", 0 if rng.random() < 0.5 else rng.choice([rng.randrange(1, 16), rng.randrange(1, 65536)]))
                               for _ in range(8)))  # fmt: skip
    template = a_set(2, struct.pack(">HH", 440, 6) + fields((27, 16), (28, 16), (1, 4), (2, 4), (152, 8), (153, 8)))
    t = EXPORT_S * 1000
    decoder = NativeDecoder()
    for start in range(0, len(packed), 20):
        chunk = packed[start:start + 20]
        body = b"".join(struct.pack(">16s16sIIQQ", a, a[::-1], 1500, 1, t - 2000, t - 1000) for a in chunk)
        decoder.feed(ipfix(1, template, a_set(440, body)), "192.0.2.1")
    frame = decoder.take()
    assert frame["src_addr"].to_list() == [socket.inet_ntop(socket.AF_INET6, a) for a in packed]
    assert frame["dst_addr"].to_list() == [socket.inet_ntop(socket.AF_INET6, a[::-1]) for a in packed]
