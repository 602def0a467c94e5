"""``alphaqos transfer`` on loopback (issue 23): integrity, resume after the
sender is killed, corrupted blocks detected and re-sent, bad input, and two
transfers against one circuit's capacity (the reservation service refuses
the second up front)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from _transfer import binary, make_file, receiver, send

MiB = 1 << 20


@pytest.fixture(scope="module")
def rx(tmp_path_factory):
    with receiver(tmp_path_factory.mktemp("rx") / "in") as r:
        yield r


def test_integrity_and_report(tmp_path, rx, capsys):
    src = make_file(tmp_path / "a.bin", 9 * MiB + 12345)
    status, lines, err = send(capsys, str(src), rx.addr, "--deadline", "30s", "--rate", "2Gbps", "--block", "1MiB",
                              "--interval", "100ms")  # fmt: skip
    assert status == 0, err
    report = lines[-1]
    assert report["event"] == "report" and report["met"]
    assert (rx.dir / "a.bin").read_bytes() == src.read_bytes()
    assert report["blocks"] == 10 and report["blocks_sent"] == 10 and report["blocks_held"] == 0
    assert not list(rx.dir.glob(".a.bin*")), "the part file and its map are gone once complete"
    # The reservation's integral over the transfer, from its steps.
    steps = [*report["reservation_steps"], [report["elapsed_s"], 0]]
    integral = sum(r * (nxt[0] - t) for (t, r), nxt in zip(steps, steps[1:]))
    assert report["reserved_bits"] == pytest.approx(integral, rel=0.01)
    assert report["reserved_ratio"] == pytest.approx(integral / (8 * src.stat().st_size), rel=0.01)
    # The same again without --force: refused, the file kept.
    status, _, err = send(capsys, str(src), rx.addr, "--deadline", "30s", "--rate", "2Gbps")
    assert status == 2 and "exists on the receiver" in err and "--force" in err
    status, lines, err = send(capsys, str(src), rx.addr, "--deadline", "30s", "--rate", "2Gbps", "--force", "--block", "4MiB")
    assert status == 0, err


def _held(mapfile) -> int:
    try:
        doc = json.loads(mapfile.read_text())
    except (OSError, ValueError):
        return 0
    return sum(b - a for a, b in doc["done"])


def test_resume_after_kill_sends_only_missing_blocks(tmp_path, rx, capsys):
    src = make_file(tmp_path / "r.bin", 16 * MiB, seed=2)
    # One paced connection at 40 Mbit/s: about 3.4 s for the file, killed after 4 blocks.
    proc = subprocess.Popen([binary(), "send", str(src), rx.addr, "--streams", "1", "--block", str(MiB), "--rate-bps",
                             "40000000", "--cc", "pacing-only"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    mapfile = rx.dir / ".r.bin.part.map"
    try:
        deadline = time.monotonic() + 30
        while _held(mapfile) < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert not (rx.dir / "r.bin").exists(), "the name appears only when complete"
    assert (rx.dir / ".r.bin.part").exists()
    time.sleep(0.3)  # the receiver notices the sender's end
    held = _held(mapfile)
    assert 4 <= held < 16
    # Corrupt a held block on disk: the whole-file check at the end finds it
    # (its stored xxh3 differs) and asks for it again.
    done = json.loads(mapfile.read_text())["done"]
    victim = done[0][0]
    with open(rx.dir / ".r.bin.part", "r+b") as f:
        f.seek(victim * MiB + 100)
        byte = f.read(1)
        f.seek(victim * MiB + 100)
        f.write(bytes([byte[0] ^ 0x5A]))
    status, lines, err = send(capsys, str(src), rx.addr, "--deadline", "60s", "--rate", "2Gbps", "--block", "1MiB")
    assert status == 0, err
    report = lines[-1]
    assert report["blocks_held"] >= held
    assert report["blocks_sent"] - report["blocks_resent"] == 16 - report["blocks_held"]
    assert report["blocks_resent"] == 1
    assert (rx.dir / "r.bin").read_bytes() == src.read_bytes()
    assert any(e.get("event") == "stored-blocks-bad" and e["blocks"] == [victim] for e in rx.events())


def test_block_corrupted_on_arrival_is_resent(tmp_path, capsys):
    src = make_file(tmp_path / "c.bin", 6 * MiB, seed=3)
    with receiver(tmp_path / "in", env={"ALPHAQOS_XFER_CORRUPT_BLOCK": "2"}) as r:
        status, lines, err = send(capsys, str(src), r.addr, "--deadline", "30s", "--rate", "1Gbps", "--block", "1MiB")
        assert status == 0, err
        assert lines[-1]["blocks_resent"] == 1
        assert (r.dir / "c.bin").read_bytes() == src.read_bytes()
        assert [e["block"] for e in r.events() if e.get("event") == "block-bad"] == [2]


def test_bad_input(tmp_path, rx, capsys):
    src = make_file(tmp_path / "b.bin", MiB, seed=4)
    cases = [
        ([str(tmp_path / "missing.bin"), rx.addr, "--deadline", "10s", "--rate", "1Gbps"], "cannot read"),
        ([str(src), f"127.0.0.1:{_closed_port()}", "--deadline", "10s", "--rate", "1Gbps"], "cannot connect to"),
        ([str(src), rx.addr, "--by", "2001-01-01T00:00:00Z", "--rate", "1Gbps"], "in the past"),
        ([str(src), rx.addr, "--deadline", "1s", "--rate", "1Mbps"], "infeasible at --rate 1Mbps"),
        ([str(src), rx.addr, "--deadline", "10s"], "--circuit URL"),
        ([str(src), "nohostport", "--deadline", "10s", "--rate", "1Gbps"], "expected HOST:PORT"),
    ]
    for args, expected in cases:
        status, lines, err = send(capsys, *args)
        assert status == 2, (args, err)
        assert expected in err and err.count("\n") == 1, (expected, err)
    assert not (rx.dir / "b.bin").exists() and not list(rx.dir.glob(".b.bin*"))
    # Protocol version mismatch (the binary's hidden flag): refused, nothing written.
    done = subprocess.run([binary(), "send", str(src), rx.addr, "--protocol-version", "99"], capture_output=True, text=True)
    assert done.returncode == 2 and "protocol version mismatch" in done.stderr
    assert not list(rx.dir.glob("*b.bin*"))
    # A receiver directory that cannot be written.
    done = subprocess.run([binary(), "serve", "--listen", "127.0.0.1:0", "--dir", "/proc/1"], capture_output=True, text=True)
    assert done.returncode == 2 and "not writable" in done.stderr


def _closed_port() -> int:
    from _transfer import free_port

    return free_port()


def test_deadline_loop_rule():
    """needed = bytes left x 8 / (time left - guard) x margin (the third
    document's dynamic reservation), applied past the hysteresis only; the
    integral is the step function's."""
    from alphaqos.transfer.loop import MIN_RATE_BPS, DeadlineLoop, needed_rate_bps

    assert needed_rate_bps(10**9, 100.0, 1.1) == 88_000_000
    assert needed_rate_bps(0, 10.0, 1.1) == 0
    loop = DeadlineLoop(size=10**9, deadline_s=100.0, margin=1.1, hysteresis=0.05, guard_s=0.0)
    loop.start(88_000_000)
    assert loop.proposal(0.0, 0) is None  # on plan
    assert loop.proposal(50.0, 5 * 10**8) is None  # still 88 Mbit/s needed
    assert loop.proposal(50.0, 6 * 10**8) == 70_400_000  # ahead: 4e8 B x 8 / 50 s x 1.1
    loop.applied(50.0, 70_400_000)
    assert loop.proposal(60.0, 681 * 10**6) is None  # 70.18 Mbit/s: within 5 %
    assert loop.integral_bits(100.0) == 88_000_000 * 50 + 70_400_000 * 50
    assert loop.mean_bps(100.0) == (88_000_000 + 70_400_000) / 2
    assert loop.proposal(99.99, 10**9 - 10) == MIN_RATE_BPS  # the floor near the end
    assert loop.proposal(100.5, 0) is None  # past the deadline: nothing to modify
    capped = DeadlineLoop(size=10**9, deadline_s=100.0, cap_bps=50_000_000)
    capped.start(50_000_000)
    assert capped.proposal(10.0, 0) is None  # needs more than the cap: stays at the cap
    guarded = DeadlineLoop(size=10**9, deadline_s=100.0, margin=1.0, guard_s=20.0)
    guarded.start(1)
    assert guarded.proposal(0.0, 0) == 100_000_000  # plans for 80 s


def test_full_disk_refused_up_front(tmp_path, capsys):
    """A receiver without room for the file refuses it at the hello (its
    space is reserved with fallocate before any data moves): one line, exit
    status 2, nothing left behind."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)], check=True)
    try:
        src = make_file(tmp_path / "f.bin", 4 * MiB, seed=8)
        with receiver(small / "in") as r:
            status, _, err = send(capsys, str(src), r.addr, "--deadline", "30s", "--rate", "1Gbps", "--block", "1MiB")
            assert status == 2 and "no space left on the receiver" in err, err
            assert err.count("\n") == 1
            assert list(r.dir.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=False)
