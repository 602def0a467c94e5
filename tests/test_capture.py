"""A trace of real TCP traffic captured between two network namespaces
(:mod:`alphaqos.capture`): tcpdump and the engine both read it, it holds
many flows of heavy-tailed sizes, and nothing (namespaces, processes) is
left behind, also when the senders fail. About 10 s, as root."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from _system import need_root, require_debian_package  # noqa: E402

from alphaqos import _core  # noqa: E402
from alphaqos import capture as C  # noqa: E402

PREFIX = "aqtest"


def _ours_left(prefix: str, path: Path) -> list[str]:
    """Namespaces of ``prefix`` and processes naming ``path`` or the capture script still there."""
    left = [line.split()[0] for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
            if line.startswith(f"{prefix}-")]  # fmt: skip
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmdline or str(Path(C.__file__).resolve()) in cmdline:
            left.append(f"process {pid}: {cmdline}")
    return left


def _capture(path: Path, **kw) -> C.CaptureResult:
    need_root("network namespaces")
    require_debian_package("tcpdump", binary="tcpdump")
    try:
        return C.capture_trace(path, prefix=PREFIX, **kw)
    except C.CaptureError as exc:
        if "cannot create the network namespace" in str(exc):
            pytest.skip(f"the kernel refuses network namespaces here: {exc}")
        raise


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> C.CaptureResult:
    path = tmp_path_factory.mktemp("cap") / "ns.pcap"
    return _capture(path, duration_s=2.5, load_bps=30e6, long_flows=2, seed=3)


def test_tcpdump_and_the_engine_read_the_capture(captured):
    result = captured
    assert result.dropped == 0 and result.captured > 2000
    lines = subprocess.run(["tcpdump", "-nn", "-r", str(result.path)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(lines) == result.captured
    assert all(" IP 10.77.0.1." in line for line in lines)  # what crossed the link from the senders
    packets, mean_bps, span_ns, skipped, _ = _core.trace_info(str(result.path))
    assert packets == result.captured and skipped == 0
    assert 2.0e9 < span_ns <= 2.6e9
    # The senders' offered bytes crossed the 155 Mbit/s link (with 4% of headers).
    assert mean_bps == pytest.approx(result.sender["bytes_written"] * 8 / (span_ns / 1e9), rel=0.25)
    assert mean_bps < 155e6


def test_many_flows_of_heavy_tailed_sizes(captured):
    flows = C.flow_bytes(captured.path)
    sizes = sorted(flows.values(), reverse=True)
    assert len(flows) > 200 and captured.sender["started"] >= len(flows) * 0.9
    assert len({key[2] for key in flows}) > 200  # from many source ports
    # Heavy tail: the largest tenth of the flows carries most bytes (for
    # Pareto of shape 1.2, 0.1^(1 - 1/1.2) = 68%), the median flow is tiny
    # beside the largest, and Hill's estimate of the tail index is near 1.2.
    assert sum(sizes[: len(sizes) // 10]) > 0.5 * sum(sizes)
    assert sizes[0] > 100 * sizes[len(sizes) // 2]
    assert 0.6 < C.hill_tail_index(sizes, 50) < 2.2


def test_nothing_is_left_behind(captured):
    assert _ours_left(PREFIX, captured.path) == []


def test_a_failure_leaves_nothing_behind(tmp_path):
    path = tmp_path / "fail.pcap"
    with pytest.raises(C.CaptureError, match="the senders failed"):
        _capture(path, duration_s=1.0, ports=0)  # the senders cannot pick a port
    assert _ours_left(PREFIX, path) == []


def test_stamps_out_of_order_are_put_in_order(tmp_path):
    """tcpdump can stamp a packet a little before the one written before it
    (per-CPU stamps): the engine reads such a capture in time order and
    counts the records it moved; sort_pcap rewrites the file in order."""
    import struct

    def frame(port: int) -> bytes:
        ip = struct.pack("!BBHHHBBH4s4sHH", 0x45, 0, 1500, 0, 0, 64, 6, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), port, 80)
        return b"\0" * 12 + b"\x08\x00" + ip

    stamps = [(1, 100), (1, 300), (1, 200), (1, 400), (0, 999_999)]  # (seconds, µs)
    body = b"".join(struct.pack("<IIII", sec, usec, 38, 1514) + frame(port) for port, (sec, usec) in enumerate(stamps))
    path = tmp_path / "t.pcap"
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 96, 1) + body)
    packets, _, span_ns, _, out_of_order = _core.trace_info(str(path))
    assert (packets, out_of_order) == (5, 2)  # 1.000200 after 1.000300, 0.999999 after 1.000400
    assert span_ns == 401_000  # from 0.999999 s to 1.000400 s
    assert C.sort_pcap(path) == (2, 401_000)  # 1.000400 s, then 0.999999 s
    assert [p for _, _, p, _, _ in C.flow_bytes(path)] == [4, 0, 2, 1, 3]
    assert _core.trace_info(str(path))[0] == 5 and _core.trace_info(str(path))[4] == 0
    assert C.sort_pcap(path) == (0, 0)


def test_sort_pcap_reads_either_byte_order_and_nanosecond_stamps(tmp_path):
    """One pcap reader (:func:`alphaqos.flows.pcap.pcap_records`) for the
    capture's rewriting: a big-endian file with nanosecond stamps is put in
    order too, and a record cut short is an error naming the file."""
    import struct

    def frame(port: int) -> bytes:
        ip = struct.pack("!BBHHHBBH4s4sHH", 0x45, 0, 40 + port, 0, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), port, 53)
        return b"\0" * 12 + b"\x08\x00" + ip

    stamps = [(5, 700), (5, 500), (5, 900)]  # (seconds, ns)
    body = b"".join(struct.pack(">IIII", sec, nsec, 38, 38) + frame(port) for port, (sec, nsec) in enumerate(stamps))
    path = tmp_path / "be.pcap"
    path.write_bytes(struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 96, 1) + body)
    assert C.flow_bytes(path) == {("10.0.0.1", "10.0.0.2", p, 53, 17): 40 + p for p in (0, 1, 2)}
    assert C.sort_pcap(path) == (1, 200)
    assert [p for _, _, p, _, _ in C.flow_bytes(path)] == [1, 0, 2]
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(ValueError, match=r"be\.pcap: record at offset 132 cut short"):
        C.sort_pcap(path)


def test_pareto_sizes_have_the_asked_mean_and_tail():
    import random

    sizes = C.pareto_sizes(random.Random(1), 200_000, shape=1.2, mean=8000, max_size=10**6)
    mean = sum(sizes) / len(sizes)
    assert mean == pytest.approx(C.truncated_pareto_mean(1.2, 8000, 10**6), rel=0.05)
    assert min(sizes) >= 1333 and max(sizes) == 10**6
    assert C.hill_tail_index(sizes, 2000) == pytest.approx(1.2, rel=0.15)
