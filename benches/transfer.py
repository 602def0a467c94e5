"""``make bench``: the data mover's loopback throughput (``alphaqos-xfer``,
1 and 4 connections, unpaced) against iperf3 on the same path, CPU seconds
per GB (sender + receiver), and the deadline loop's cost per interval.

    .venv/bin/python benches/transfer.py [--size 1GiB]

Without iperf3 (Debian package ``iperf3``) the ratio is left out, with a note."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from alphaqos import units  # noqa: E402
from alphaqos.transfer.cli import xfer_binary  # noqa: E402
from alphaqos.transfer.loop import DeadlineLoop  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def xfer(src: Path, dst: Path, streams: int) -> tuple[float, float, float]:
    """(bit/s, CPU seconds of sender + receiver, hash seconds) for one transfer of ``src``."""
    port = free_port()
    rx = subprocess.Popen([str(xfer_binary()), "serve", "--listen", f"127.0.0.1:{port}", "--dir", str(dst)],
                          stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        rx.stdout.readline()  # listening
        rx_cpu0 = cpu_s(rx.pid)
        before = os.times()
        done = subprocess.run([str(xfer_binary()), "send", str(src), f"127.0.0.1:{port}", "--streams", str(streams),
                               "--rate-bps", "0", "--cc", "cubic", "--force", "--interval-ms", "1000"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        after = os.times()
        rx_cpu = cpu_s(rx.pid) - rx_cpu0
    finally:
        rx.terminate()
        rx.wait()
    final = [json.loads(x) for x in done.stdout.splitlines() if '"done"' in x][-1]
    start = [json.loads(x) for x in done.stdout.splitlines() if '"start"' in x][-1]
    # The sender's CPU includes its whole-file BLAKE3 (hash s, before "start").
    sender_cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return final["size"] * 8 / final["seconds"], sender_cpu + rx_cpu, start["hash_s"]


def iperf(size: int, streams: int) -> float | None:
    if shutil.which("iperf3") is None:
        return None
    port = free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-P", str(streams), "-n", str(size), "-J"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    finally:
        server.wait(timeout=30)
    return json.loads(out)["end"]["sum_received"]["bits_per_second"]


def loop_cost(n: int = 100_000) -> float:
    loop = DeadlineLoop(size=10**12, deadline_s=3600, margin=1.1, hysteresis=0.05, guard_s=2)
    loop.start(3 * 10**9)
    t0 = time.perf_counter()
    for i in range(n):
        p = loop.proposal(i * 0.01, i * 10**6)
        if p is not None:
            loop.applied(i * 0.01, p)
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", default="1GiB")
    args = ap.parse_args()
    size = units.parse_size(args.size)
    # /dev/shm when there is room: the path, not the disk, is measured.
    shm = Path("/dev/shm")
    where = shm if shm.is_dir() and shutil.disk_usage(shm).free > 3 * size else None
    work = Path(tempfile.mkdtemp(prefix="aq-xfer-bench-", dir=where))
    try:
        src = work / "src.bin"
        with open(src, "wb") as f:
            chunk = os.urandom(1 << 20)
            for _ in range(size >> 20):
                f.write(chunk)
        (work / "dst").mkdir()
        print("CPU s/GB: sender + receiver, including both whole-file BLAKE3 passes")
        print(f"alphaqos-xfer loopback, {units.fmt_size(size)}, load {os.getloadavg()[0]:.1f}")
        print(f"{'streams':>7} {'xfer':>12} {'iperf3':>12} {'ratio':>6} {'CPU s/GB':>9} {'hash s':>7}")
        for streams in (1, 4):
            bps, cpu, hash_s = xfer(src, work / "dst", streams)
            ref = iperf(size, streams)
            ratio = f"{bps / ref:.2f}" if ref else "-"
            print(f"{streams:>7} {units.fmt_rate(bps):>12} {units.fmt_rate(ref) if ref else 'no iperf3':>12} {ratio:>6} "
                  f"{cpu / (size / 1e9):>9.2f} {hash_s:>7.2f}")  # fmt: skip
        print(f"deadline loop: {loop_cost() * 1e6:.1f} us per interval (the decision; a circuit modify adds an HTTP round trip)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
