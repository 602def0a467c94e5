"""``alphaqos transfer`` on loopback (issue 23): integrity, resume after the
sender is killed, corrupted blocks detected and re-sent, bad input, and two
transfers against one circuit's capacity (the reservation service refuses
the second up front)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from _transfer import Receiver, binary, make_file, receiver, send

from alphaqos.cli import main

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


def _send_then_kill(src, addr: str, block: int, rate_bps: int, mapfile, held: int) -> None:
    """One paced connection, killed once the receiver's map holds ``held`` blocks."""
    proc = subprocess.Popen([binary(), "send", str(src), addr, "--streams", "1", "--block", str(block), "--rate-bps",
                             str(rate_bps), "--cc", "pacing-only"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while _held(mapfile) < held and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()


def test_resume_after_kill_sends_only_missing_blocks(tmp_path, rx, capsys):
    src = make_file(tmp_path / "r.bin", 16 * MiB, seed=2)
    # One paced connection at 40 Mbit/s: about 3.4 s for the file, killed after 4 blocks.
    mapfile = rx.dir / ".r.bin.part.map"
    _send_then_kill(src, rx.addr, MiB, 40_000_000, mapfile, 4)
    assert not (rx.dir / "r.bin").exists(), "the name appears only when complete"
    assert (rx.dir / ".r.bin.part").exists()
    time.sleep(0.3)  # the receiver notices the sender's end
    held = _held(mapfile)
    assert 4 <= held < 16
    # Corrupt a held block on disk: the whole-file check at the end finds it
    # (its stored check differs) and asks for it again.
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


def test_resume_of_a_changed_source_resends_only_changed_blocks(tmp_path, rx):
    """Protocol version 3 has no whole-file hash before sending: a resume is
    proved block by block. The source changed in one held block (same size)
    between the attempts: the sender's own check of that block differs from
    the receiver's record, so it alone of the held blocks is sent again; the
    others are kept, and the file arrives as it is now."""
    src = make_file(tmp_path / "c.bin", 8 * MiB, seed=11)
    mapfile = rx.dir / ".c.bin.part.map"
    _send_then_kill(src, rx.addr, MiB, 40_000_000, mapfile, 3)
    time.sleep(0.3)  # the receiver notices the sender's end
    done = json.loads(mapfile.read_text())["done"]
    held = _held(mapfile)
    assert 3 <= held < 8
    victim = done[0][0]
    with open(src, "r+b") as f:
        f.seek(victim * MiB + 7)
        byte = f.read(1)
        f.seek(victim * MiB + 7)
        f.write(bytes([byte[0] ^ 0xA5]))
    out = subprocess.run([binary(), "send", str(src), rx.addr, "--streams", "1", "--block", str(MiB), "--cc", "cubic"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    events = {e["event"]: e for e in (json.loads(x) for x in out.stdout.splitlines() if x.startswith("{"))}
    assert events["start"]["held_differ"] == 1 and events["start"]["held"] == held - 1
    assert events["done"]["blocks_sent"] == 8 - held + 1 and events["done"]["blocks_resent"] == 0
    assert (rx.dir / "c.bin").read_bytes() == src.read_bytes()
    complete = [e for e in rx.events() if e.get("event") == "complete" and e["name"] == "c.bin"]
    assert complete and complete[-1]["hash"] == events["done"]["hash"], "the receiver's whole-file check is the sender's"


@pytest.mark.parametrize("mode", ["splice", "pwrite"])
def test_block_corrupted_on_arrival_is_resent(tmp_path, capsys, mode):
    # pwrite: the receiver's default (through a buffer); splice: socket to
    # file, hashed through a map (ALPHAQOS_XFER_RECV=splice).
    src = make_file(tmp_path / "c.bin", 6 * MiB, seed=3)
    with receiver(tmp_path / "in", env={"ALPHAQOS_XFER_CORRUPT_BLOCK": "2", "ALPHAQOS_XFER_RECV": mode}) as r:
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
    # No receiving thread at all.
    assert main(["transfer", "serve", "--listen", "127.0.0.1:0", "--dir", str(tmp_path), "--threads", "0"]) == 2
    assert "--threads 0: at least 1" in capsys.readouterr().err
    done = subprocess.run([binary(), "serve", "--listen", "127.0.0.1:0", "--dir", str(tmp_path), "--threads", "0"], capture_output=True, text=True)
    assert done.returncode == 2 and "--threads: at least 1" in done.stderr


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_receiving_threads_share_the_connections(tmp_path, capsys, threads):
    """Four connections dealt to `threads` receiving threads in turn (0, 1,
    0, 1 for two): each thread that has connections receives a share of the
    bytes, a thread without any receives none, the shares add up to the
    file, and the file is whole."""
    src = make_file(tmp_path / "t.bin", 24 * MiB + 777, seed=9)
    with receiver(tmp_path / "in", args=["--threads", str(threads)]) as r:
        status, lines, err = send(capsys, str(src), r.addr, "--deadline", "60s", "--rate", "4Gbps", "--streams", "4",
                                  "--block", "1MiB")  # fmt: skip
        assert status == 0, err
        assert (r.dir / "t.bin").read_bytes() == src.read_bytes()
        done = [e for e in r.events() if e.get("event") == "complete"]
    assert len(done) == 1
    shares = done[0]["thread_bytes"]
    assert len(shares) == threads
    # Every byte once, and a block at most twice (the sender's endgame may send one on two connections).
    assert src.stat().st_size <= sum(shares) <= src.stat().st_size + 4 * MiB
    # The base connection is paced at the needed rate (24 MiB in 60 s: a few
    # Mbit/s) and may carry nothing; with two threads each has an unpaced
    # connection besides it. Four connections use at most four threads.
    used = [b > 0 for b in shares]
    if threads <= 2:
        assert all(used), shares
    else:
        assert shares[4:] == [0] * (threads - 4) and sum(used[:4]) >= 3, shares


def test_block_map_of_another_protocol_version(tmp_path, rx):
    """A partial file received under protocol version 2 (checks in the
    block header, the whole-file hash in the hello) is not resumed by
    version 3: the sender is refused with the version mismatch, exit 2, the
    partial file kept; --force starts over."""
    src = make_file(tmp_path / "v.bin", 2 * MiB, seed=5)
    # 8 Mbit/s, 256 KiB blocks: about 0.26 s a block; killed after the first.
    mapfile = rx.dir / ".v.bin.part.map"
    _send_then_kill(src, rx.addr, 256 << 10, 8_000_000, mapfile, 1)
    time.sleep(0.3)  # the receiver notices the sender's end
    doc = json.loads(mapfile.read_text())
    assert doc["version"] == 3 and all(len(h) == 64 for h in doc["hashes"] if h), "checks stored as 32-byte hex"
    # As version 2 wrote it: the same, with the whole-file hash.
    doc["version"], doc["hash"] = 2, "ab" * 32
    mapfile.write_text(json.dumps(doc))
    args = [binary(), "send", str(src), rx.addr, "--streams", "1", "--block", str(256 << 10), "--cc", "cubic"]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "protocol version mismatch" in done.stderr and "version 2" in done.stderr, done.stderr
    assert "--force" in done.stderr and ".v.bin.part" in done.stderr
    assert (rx.dir / ".v.bin.part").exists() and json.loads(mapfile.read_text())["version"] == 2, "kept as it was"
    done = subprocess.run([*args, "--force"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    final = next(json.loads(x) for x in done.stdout.splitlines() if '"done"' in x)
    assert final["held"] == 0 and final["blocks_sent"] == 8, "started over"
    assert (rx.dir / "v.bin").read_bytes() == src.read_bytes()


def test_mover_holds_until_go(tmp_path, rx):
    """``send --hold`` (the front books its circuit only after the hash):
    the mover hashes, says ``hashed`` and sends nothing until
    ``{"go_rate_bps": N}`` on stdin; without it, nothing reaches the receiver."""
    src = make_file(tmp_path / "h.bin", 3 * MiB, seed=8)
    args = [binary(), "send", str(src), rx.addr, "--hold", "--block", str(MiB), "--cc", "cubic"]
    done = subprocess.run(args, input="", capture_output=True, text=True, timeout=30)
    events = [json.loads(x)["event"] for x in done.stdout.splitlines() if x.startswith("{")]
    assert done.returncode == 1 and "no go" in done.stderr, done.stderr
    assert "hashed" in events and "start" not in events
    assert not list(rx.dir.glob("*h.bin*")), "no hello: nothing at the receiver"
    done = subprocess.run(args, input='{"go_rate_bps": 500000000}\n', capture_output=True, text=True, timeout=30)
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    events = [e["event"] for e in lines]
    assert done.returncode == 0, done.stderr
    assert events.index("hashed") < events.index("start")
    assert (rx.dir / "h.bin").read_bytes() == src.read_bytes()


@pytest.mark.parametrize("block", ["64MiB", "3MiB"])
def test_source_truncated_while_read(tmp_path, rx, block):
    """The source file shrinks (another process truncates it) while the
    sender reads it: one line naming the file, exit 2 (it was SIGBUS,
    status 135). 64 MiB blocks (BLAKE3 subtrees) are hashed through a
    read-only map as they are sent (protocol version 3): truncated as soon
    as the sending starts, the receiver keeps what it verified, resumable.
    3 MiB blocks (not subtrees) are hashed in one pass before anything is
    sent: truncated as soon as the sender says it hashes, nothing reaches
    the receiver. A sparse 2 GiB file takes over 0.4 s either way."""
    src = tmp_path / f"t{block}.bin"
    with open(src, "wb") as f:
        f.truncate(2 << 30)
    args = [binary(), "send", str(src), rx.addr, "--cc", "cubic", "--block", str(units_size(block))]
    sender = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = "start" if block == "64MiB" else "hashing"
    try:
        while json.loads(sender.stdout.readline())["event"] != first:
            pass
        os.truncate(src, MiB)
        out, err = sender.communicate(timeout=60)
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.wait()
    assert sender.returncode == 2, (sender.returncode, err)
    assert err.count("\n") == 1 and str(src) in err, err
    if first == "start":
        assert "truncated while being sent" in err and "receiver keeps" in err, err
        assert not (rx.dir / src.name).exists(), "not complete, not under its name"
    else:
        assert "truncated while being hashed" in err and "nothing was sent" in err, err
        assert '"start"' not in out and not list(rx.dir.glob(f"*{src.name}*")), "nothing sent"


def units_size(text: str) -> int:
    return int(text[:-3]) << 20


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


# A small file system of the receiver's own, mounted in a private mount
# namespace (unshare -m): it goes when the receiver does, also on failure.
# tmpfs preallocates (fallocate), so the part file's space is held and the
# disk fills for the block map; ext2 (a loop device) has no fallocate, so
# the part file is sparse and a block's write meets the full disk.
_MOUNT = {
    "tmpfs": 'mount -t tmpfs -o size=3m tmpfs "$0" && mkdir "$0/in" && exec "$@"',
    "ext2": 'mount -o loop "$IMG" "$0" && mkdir "$0/in" && exec "$@"',
}


@pytest.mark.parametrize("fs", ["tmpfs", "ext2"])
def test_full_disk_mid_transfer_then_resume(tmp_path, capsys, fs):
    """The receiver's disk fills in mid-transfer (another writer takes the
    room left): the sender stops with one line naming the receiver's disk,
    exit status 2; the part file and its block map stay; sent again with the
    same arguments once there is room, only the missing blocks go and the
    hash matches."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a private mount namespace and a mount need root and unshare")
    env = {}
    if fs == "ext2":
        if not shutil.which("mkfs.ext2"):
            pytest.skip("mkfs.ext2 (e2fsprogs) not installed")
        img = tmp_path / "ext2.img"
        with open(img, "wb") as f:
            f.truncate(4 * MiB)
        subprocess.run(["mkfs.ext2", "-q", "-F", "-m", "0", str(img)], check=True, capture_output=True)
        env["IMG"] = str(img)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    wrap = ["unshare", "-m", "--propagation", "private", "sh", "-c", _MOUNT[fs], str(mnt)]
    src = make_file(tmp_path / "full.bin", 2 * MiB, seed=9)
    args = [str(src), None, "--deadline", "20s", "--rate", "1Gbps", "--block", "256KiB"]
    try:
        r = Receiver(mnt / "in", env=env, wrap=wrap)
    except AssertionError as exc:
        pytest.skip(f"cannot mount {fs} in a private mount namespace here: {exc}")
    try:
        args[1] = r.addr
        # The receiver's view of its file system (its mount namespace).
        there = Path(f"/proc/{r.proc.pid}/root") / mnt.relative_to("/")
        mapfile = there / "in" / ".full.bin.part.map"
        # Paced at 8 Mbit/s (about 0.26 s a block), the mover itself: its
        # error line is what the front prints (test_bad_input).
        cmd = [binary(), "send", str(src), r.addr, "--streams", "1", "--block", str(256 << 10), "--rate-bps", "8000000", "--cc", "pacing-only"]
        sender = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while _held(mapfile) < 2 and time.monotonic() < deadline and sender.poll() is None:
                time.sleep(0.01)
            held_at_fill = _held(mapfile)
            filler = there / "filler"
            with open(filler, "wb", buffering=0) as f:
                with contextlib.suppress(OSError):
                    while True:
                        f.write(b"\xaa" * 4096)
            _, err = sender.communicate(timeout=60)
        finally:
            if sender.poll() is None:
                sender.kill()
                sender.wait()
        assert 2 <= held_at_fill < 8, "the disk filled in mid-transfer"
        assert sender.returncode == 2, err
        assert err.count("\n") == 1 and "no space left on the receiver's disk" in err and str(mnt / "in") in err, err
        assert "partial file" in err and "send again" in err
        # tmpfs held the part file's space: the block map met the full disk;
        # ext2's sparse part file: a block's write did.
        assert ("writing the block map" if fs == "tmpfs" else "writing block ") in err, err
        assert not (there / "in" / "full.bin").exists()
        assert (there / "in" / ".full.bin.part").exists() and mapfile.exists()
        held = _held(mapfile)
        assert held_at_fill <= held < 8
        assert not list((there / "in").glob("*.tmp")), "no half-written map left"
        # Room again: the same command resumes and sends only what is missing.
        filler.unlink()
        status, lines, err = send(capsys, *args)
        assert status == 0, err
        report = lines[-1]
        assert report["blocks_held"] == held and report["blocks_sent"] == 8 - held and report["blocks_resent"] == 0
        assert (there / "in" / "full.bin").read_bytes() == src.read_bytes()
    finally:
        r.stop()
