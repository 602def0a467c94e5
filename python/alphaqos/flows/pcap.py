"""Flow exports captured in packet files: classic libpcap and pcapng.

:func:`read_pcap` finds the UDP datagrams (over Ethernet, with or without
802.1Q/802.1ad tags, Linux cooked capture, or raw IP; IPv4 or IPv6) and
decodes their payloads with :class:`.netflow.Decoder`, the exporter being
the datagram's source address. :func:`write_pcap` writes datagrams as a
classic pcap of Ethernet/IPv4 or IPv6/UDP frames (for tests and synthetic
data).

Formats: libpcap (the "pcap" file format: a 24-byte global header whose
magic gives byte order and microsecond or nanosecond stamps, then 16-byte
record headers), pcapng (draft-ietf-opsawg-pcapng: section header, interface
description, enhanced and simple packet blocks; other blocks skipped).

Problems (counted with the decoder's, exporter "pcap" when the file is at
fault): ``pcap_format`` (not a capture file, an unsupported link type),
``pcap_truncated`` (a record or block cut short), ``ip_fragment`` (a
fragmented datagram, not reassembled), ``not_udp`` is not a problem: other
packets are skipped silently.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

from .netflow import Decoder, Problem

__all__ = ["frames", "network_header", "pcap_records", "read_pcap", "udp_datagrams", "write_pcap"]

ETHERNET, RAW, LINUX_SLL, IPV4_LINK, IPV6_LINK, LINUX_SLL2 = 1, 101, 113, 228, 229, 276
_RAW_ALIASES = {12, 14}  # DLT_RAW on some systems
#: Capture stamps before 1996-01-01 (NetFlow's first year: Cisco IOS 11.1CA)
#: are taken as no stamp: a capture tool without a clock, or relative times.
UNSTAMPED_BEFORE_US = 820_454_400 * 1_000_000


def read_pcap(path: str | Path, *, ports: set[int] | None = None, sampling: dict[str, int] | None = None,
              decoder: Decoder | None = None):  # fmt: skip
    """Decode the flow exports in a capture file; returns ``(canonical
    DataFrame, list of Problem)``. ``ports``: only UDP datagrams sent to
    these ports (default: every UDP datagram). Each datagram's capture
    time is its receive time (the centre of the plausible window of its
    records' times, beside the export header's time); a stamp before
    :data:`UNSTAMPED_BEFORE_US` (zero, or relative to the capture's start)
    is no time at all: the header's export time alone is then the
    reference, and the datagram is counted in
    ``decoder.stats["unstamped_datagrams"]``. ``decoder``: one to use (default: a new one with
    ``sampling``), whose counters the caller may read afterwards."""
    decoder = decoder or Decoder(sampling)
    problems: list[Problem] = []
    for item in udp_datagrams(path, problems):
        src, _, _, dport, payload, stamp_us = item
        if ports is None or dport in ports:
            if stamp_us is not None and stamp_us < UNSTAMPED_BEFORE_US:
                # no clock (zero or relative stamps): the export header's time is the only reference
                decoder.stats["unstamped_datagrams"] += 1
                stamp_us = None
            decoder.feed(payload, src, stamp_us)
    for problem in problems:
        decoder.counts[problem.reason] += 1
    return decoder.take(), problems + decoder.problems


def udp_datagrams(path: str | Path, problems: list[Problem]):
    """``(src, sport, dst, dport, payload, capture time in epoch
    microseconds)`` of each UDP datagram in the file; problems are appended
    to ``problems``."""
    data = Path(path).read_bytes()
    if len(data) < 4:
        problems.append(Problem("pcap", "pcap_format", f"{path}: {len(data)} bytes"))
        return
    for link, frame, stamp_us in frames(data, problems):
        found = _udp(link, frame, problems)
        if found is not None:
            yield *found, stamp_us


def frames(data: bytes, problems: list[Problem]):
    """``(link type, frame, capture time in epoch microseconds)`` of each
    record of a pcap or pcapng file's contents ``data``."""
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        return _pcapng_frames(data, problems)
    return _pcap_frames(data, problems)


def _pcap_frames(data: bytes, problems):
    for link, stamp_ns, start, end in pcap_records(data, problems):
        yield link, data[start + 16 : end], stamp_ns // 1000


def pcap_records(data: bytes, problems: list[Problem]):
    """``(link type, capture time in epoch ns, offset of the record's
    header, offset past its data)`` of each record of a classic pcap
    file's contents ``data`` (either byte order, µs or ns stamps)."""
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        order = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        order = ">"
    else:
        problems.append(Problem("pcap", "pcap_format", f"unknown magic {magic.hex()}"))
        return
    nanoseconds = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    if len(data) < 24:
        problems.append(Problem("pcap", "pcap_truncated", "global header cut short"))
        return
    link = struct.unpack_from(order + "I", data, 20)[0] & 0xFFFF  # upper bits: FCS length
    record = struct.Struct(order + "IIII")  # seconds, sub-seconds, captured length, original length
    pos = 24
    while pos + 16 <= len(data):
        seconds, fraction, captured, _ = record.unpack_from(data, pos)
        if pos + 16 + captured > len(data):
            problems.append(Problem("pcap", "pcap_truncated", f"record at offset {pos} cut short"))
            return
        yield link, seconds * 1_000_000_000 + (fraction if nanoseconds else fraction * 1000), pos, pos + 16 + captured
        pos += 16 + captured
    if pos != len(data):
        problems.append(Problem("pcap", "pcap_truncated", f"{len(data) - pos} bytes after the last record"))


def _pcapng_frames(data: bytes, problems):
    order, links, pos = "<", [], 0
    while pos + 12 <= len(data):
        block_type = struct.unpack_from(order + "I", data, pos)[0]
        if block_type == 0x0A0D0D0A:  # section header: its byte-order magic sets the order
            magic = data[pos + 8 : pos + 12]
            order = "<" if magic == b"\x4d\x3c\x2b\x1a" else ">"
            links = []
        length = struct.unpack_from(order + "I", data, pos + 4)[0]
        if length < 12 or pos + length > len(data):
            problems.append(Problem("pcap", "pcap_truncated", f"pcapng block at offset {pos} of length {length}"))
            return
        body = data[pos + 8 : pos + length - 4]
        if block_type == 1 and len(body) >= 2:  # interface description (time stamps in us: if_tsresol not read)
            links.append(struct.unpack_from(order + "H", body)[0])
        elif block_type == 6 and len(body) >= 20:  # enhanced packet
            interface, high, low, captured, _ = struct.unpack_from(order + "IIIII", body)
            if interface < len(links):
                yield links[interface], body[20 : 20 + captured], (high << 32) | low
        elif block_type == 3 and len(body) >= 4 and links:  # simple packet (interface 0; no time stamp)
            (original,) = struct.unpack_from(order + "I", body)
            yield links[0], body[4 : 4 + original], None
        pos += length


def _udp(link: int, frame: bytes, problems):
    """The UDP datagram in a link-layer frame, or None."""
    found = network_header(link, frame, problems)
    if found is None:
        return None
    ethertype, pos = found
    if ethertype == 0x0800:
        return _ipv4(frame, pos, problems)
    if ethertype == 0x86DD:
        return _ipv6(frame, pos, problems)
    return None


def network_header(link: int, frame: bytes, problems: list[Problem]) -> tuple[int, int] | None:
    """``(ethertype, offset)`` of the network-layer header in a link-layer
    frame (past any VLAN tags), or None."""
    if link == ETHERNET:
        if len(frame) < 14:
            return None
        ethertype, pos = (frame[12] << 8) | frame[13], 14
        while ethertype in (0x8100, 0x88A8) and len(frame) >= pos + 4:  # VLAN tags
            ethertype, pos = (frame[pos + 2] << 8) | frame[pos + 3], pos + 4
    elif link == LINUX_SLL:
        if len(frame) < 16:
            return None
        ethertype, pos = (frame[14] << 8) | frame[15], 16
    elif link == LINUX_SLL2:
        if len(frame) < 20:
            return None
        ethertype, pos = (frame[0] << 8) | frame[1], 20
    elif link in (RAW, IPV4_LINK, IPV6_LINK) or link in _RAW_ALIASES:
        if not frame:
            return None
        ethertype, pos = (0x0800 if frame[0] >> 4 == 4 else 0x86DD), 0
    else:
        problems.append(Problem("pcap", "pcap_format", f"link type {link} not supported"))
        return None
    return ethertype, pos


def _ipv4(frame: bytes, pos: int, problems):
    if len(frame) < pos + 20:
        return None
    header = (frame[pos] & 0x0F) * 4
    total = (frame[pos + 2] << 8) | frame[pos + 3]
    flags_offset = (frame[pos + 6] << 8) | frame[pos + 7]
    src = socket.inet_ntop(socket.AF_INET, frame[pos + 12 : pos + 16])
    if frame[pos + 9] != 17:
        return None
    if flags_offset & 0x3FFF:  # more fragments, or an offset
        problems.append(Problem(src, "ip_fragment", "fragmented IPv4 datagram (not reassembled)"))
        return None
    dst = socket.inet_ntop(socket.AF_INET, frame[pos + 16 : pos + 20])
    return _udp_payload(frame[pos + header : pos + total], src, dst, problems)


def _ipv6(frame: bytes, pos: int, problems):
    if len(frame) < pos + 40:
        return None
    payload_len = (frame[pos + 4] << 8) | frame[pos + 5]
    next_header = frame[pos + 6]
    src = socket.inet_ntop(socket.AF_INET6, frame[pos + 8 : pos + 24])
    dst = socket.inet_ntop(socket.AF_INET6, frame[pos + 24 : pos + 40])
    body = frame[pos + 40 : pos + 40 + payload_len]
    while next_header in (0, 43, 60):  # hop-by-hop, routing, destination options
        if len(body) < 8:
            return None
        next_header, body = body[0], body[(body[1] + 1) * 8 :]
    if next_header == 44:
        problems.append(Problem(src, "ip_fragment", "fragmented IPv6 datagram (not reassembled)"))
        return None
    if next_header != 17:
        return None
    return _udp_payload(body, src, dst, problems)


def _udp_payload(segment: bytes, src: str, dst: str, problems):
    if len(segment) < 8:
        problems.append(Problem(src, "pcap_truncated", "UDP header cut short"))
        return None
    sport, dport, length = struct.unpack_from(">HHH", segment)
    if length < 8 or length > len(segment):
        problems.append(Problem(src, "pcap_truncated", f"UDP length {length}, {len(segment)} bytes captured"))
        return None
    return src, sport, dst, dport, segment[8:length]


def _export_time(payload: bytes) -> int:
    """The export time (epoch seconds) in a v5/v9/IPFIX header; 0 if none."""
    version = int.from_bytes(payload[:2], "big")
    at = {5: 8, 9: 8, 10: 4}.get(version)
    return int.from_bytes(payload[at : at + 4], "big") if at is not None and len(payload) >= at + 4 else 0


def write_pcap(path: str | Path, datagrams, *, dport: int = 4739, sport: int = 50000, time_s: float | None = None) -> None:
    """Write ``(src, dst, payload)`` triples as a classic little-endian pcap
    (microsecond stamps) of Ethernet/IPv4 or IPv6/UDP frames, the i-th
    stamped ``time_s`` + i ms, or (``time_s`` None) at the export time in
    its NetFlow/IPFIX header, as if received the moment it was sent."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, ETHERNET)]
    for i, (src, dst, payload) in enumerate(datagrams):
        udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload
        if ":" in src:
            ip = struct.pack(">IHBB16s16s", 6 << 28, len(udp), 17, 64,
                             socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst))  # fmt: skip
            ethertype = 0x86DD
        else:
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0, 64, 17, 0,
                             socket.inet_aton(src), socket.inet_aton(dst))  # fmt: skip
            ethertype = 0x0800
        frame = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + struct.pack(">H", ethertype) + ip + udp
        stamp = _export_time(payload) if time_s is None else time_s + i * 1e-3
        out.append(struct.pack("<IIII", int(stamp), int(stamp % 1 * 1e6), len(frame), len(frame)) + frame)
    Path(path).write_bytes(b"".join(out))
