"""``alphaqos transfer`` between two network namespaces over a shaped path
(issue 23): an HTB circuit of 100 Mbit/s on the sender's veth, the
reservation's class (AF11, the base connection) guaranteed 60 Mbit/s and
the rest (the additional connection, best effort) 40 Mbit/s, each
borrowing up to the whole. A feasible deadline is met with a mean
reservation of at most 1.1 x size / deadline (the additional connection
carries what the reservation does not need); the paced base connection
holds its rate within 5 % with retransmissions below 0.1 % of its
segments."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _system import need_root
from _transfer import binary, make_file, receiver

MiB = 1 << 20


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True)


@pytest.fixture
def path():
    need_root("network namespaces")
    tag = f"aqx{os.getpid() % 100000}"
    snd, rcv = f"{tag}s", f"{tag}r"
    try:
        _ip("netns", "add", snd)
        _ip("netns", "add", rcv)
        _ip("link", "add", f"{tag}a", "type", "veth", "peer", "name", f"{tag}b")
        _ip("link", "set", f"{tag}a", "netns", snd)
        _ip("link", "set", f"{tag}b", "netns", rcv)
        for ns, dev, addr in ((snd, f"{tag}a", "10.77.0.1/24"), (rcv, f"{tag}b", "10.77.0.2/24")):
            _ip("-n", ns, "addr", "add", addr, "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        dev = f"{tag}a"
        for cmd in (f"qdisc add dev {dev} root handle 1: htb default 20",
                    f"class add dev {dev} parent 1: classid 1:1 htb rate 100mbit ceil 100mbit",
                    f"class add dev {dev} parent 1:1 classid 1:10 htb rate 60mbit ceil 100mbit",
                    f"class add dev {dev} parent 1:1 classid 1:20 htb rate 40mbit ceil 100mbit",
                    f"filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip tos 0x28 0xfc flowid 1:10"):  # fmt: skip
            subprocess.run(["ip", "netns", "exec", snd, "tc", *cmd.split()], check=True, capture_output=True)
        yield snd, rcv
    finally:
        _ip("netns", "del", snd, check=False)
        _ip("netns", "del", rcv, check=False)


def test_deadline_met_over_shaped_path(tmp_path, path):
    """Paced alone (``--cc pacing-only``): the data path's part. With
    ``alphaqos_base`` the base connection's window also binds; see
    docs/transfer.md for that figure (``ALPHAQOS_TRANSFER_TEST_CC=alphaqos_base``
    runs this test with it)."""
    snd, rcv = path
    binary()
    src = make_file(tmp_path / "big.bin", 48 * MiB, seed=7)
    with receiver(tmp_path / "in", netns=rcv, listen="10.77.0.2") as rx:
        # 48 MiB by 10 s: 8 x 48 MiB / 10 s x 1.1 = 44 Mbit/s reserved at first.
        done = subprocess.run(["nsenter", f"--net=/run/netns/{snd}", sys.executable, "-m", "alphaqos", "transfer", "send", str(src),
                               rx.addr, "--deadline", "10s", "--rate", "100Mbps", "--block", "1MiB", "--interval", "250ms",
                               "--cc", os.environ.get("ALPHAQOS_TRANSFER_TEST_CC", "pacing-only"), "--json"], capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.splitlines()[-1])
        assert (rx.dir / "big.bin").read_bytes() == src.read_bytes()
    assert report["met"], report
    assert report["mean_reserved_bps"] <= 1.1 * report["constant_bps"], report
    base = report["base"]
    assert base["steady_bps"] == pytest.approx(base["steady_paced_bps"], rel=0.05), base
    assert base["retrans_ratio"] < 0.001, base
    assert report["additional_bytes"] > 0
    print(json.dumps({k: report[k] for k in ("cc", "elapsed_s", "mean_reserved_bps", "constant_bps", "base", "reserved_ratio")}))
