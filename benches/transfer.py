"""``make bench``: the data mover's throughput (``alphaqos-xfer``, 1 and 4
connections, unpaced, cubic) against iperf3 on the same path and cores,
CPU seconds per GB at each end, system calls per MB, and the deadline
loop's cost per interval.

    .venv/bin/python benches/transfer.py [--size 1GiB] [--syscalls] [--repeat 3]
        [--path loopback,veth,veth:5Gbps,veth:1Gbps] [--compare OLD_BINARY] [--no-rt] [--no-pin]

Both tools run with the receiver pinned to one core and the sender to the
other (``taskset -c 0`` / ``-c 1``), at real-time priority when root
(``chrt -f 50``: other work on the machine cannot take the cores from
them; ``--no-rt`` to leave it; never with ``--no-pin``, see ``main``), on loopback (127.0.0.1) or a veth pair
between two namespaces (``veth:RATE`` adds an HTB root at RATE on the
sender's side: a circuit's rate), files in /dev/shm (``--no-pin``: both
tools unpinned, the scheduler spreading their threads over the cores;
each run's destination file is removed before it, untimed, for both
tools). Each case runs
``--repeat`` times, ours and iperf3 alternating; the table shows medians
and the spread (lowest-highest) of ours. ``--compare BIN`` runs another
build of ``alphaqos-xfer`` (e.g. main's) alternating with this one. iperf3 runs with the same number of streams (``-P``), as plain
(``write`` from a buffer, ``read`` and discard), with ``-Z`` (sendfile at
the sender) and with ``-Z`` and ``-F`` at the receiver (received data
written to a file, as the data mover does; iperf3 neither hashes nor
checks). With several connections one iperf3 server with ``-P`` and ``-F``
stores only a share (each stream truncates and rewrites the one file), so
the like-for-like reference there is "pairs": as many iperf3 pairs of one
stream each, started together, each server storing its share in its own
file, their rate the bytes over the slowest pair's time. Without iperf3 (Debian package ``iperf3``) its columns are left
out, with a note. ``--syscalls`` runs one more transfer per case under
``strace -c -f`` (slow: counts only) and prints the system calls per MB."""

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
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from alphaqos import units  # noqa: E402
from alphaqos.transfer.mover import xfer_binary  # noqa: E402
from alphaqos.transfer.loop import DeadlineLoop  # noqa: E402

RX_CORE, TX_CORE = "0", "1"
RT = ["chrt", "-f", "50"]  # cleared by --no-rt (and when not root)
RX_ARGS: list[str] = []  # the receiver's extra options (--rx-threads)
PIN = [True]  # [False] with --no-pin


class Net:
    """Where the two ends run: loopback, or the two ends of a veth pair
    between two network namespaces the bench makes (``ip netns``; the
    processes enter them with ``nsenter --net``)."""

    def __init__(self, kind: str):
        self.kind, self.host, self.ns = kind, "127.0.0.1", None
        kind, _, shape = kind.partition(":")
        if kind == "veth":
            tag = f"aqxb{os.getpid() % 100000}"
            self.ns = (f"{tag}s", f"{tag}r")
            try:
                for n in self.ns:
                    _ip("netns", "add", n)
                _ip("link", "add", f"{tag}a", "type", "veth", "peer", "name", f"{tag}b")
                for n, dev, a in ((self.ns[0], f"{tag}a", "10.251.7.1"), (self.ns[1], f"{tag}b", "10.251.7.2")):
                    _ip("link", "set", dev, "netns", n)
                    _ip("-n", n, "addr", "add", f"{a}/24", "dev", dev)
                    _ip("-n", n, "link", "set", dev, "up")
                    _ip("-n", n, "link", "set", "lo", "up")
                if shape:
                    # A circuit's rate: HTB at the sender's egress (burst of
                    # a few ms at the rate, room for GSO packets).
                    rate = units.parse_rate(shape)
                    burst = max(rate // 8 // 500, 256 << 10)
                    _ip("netns", "exec", self.ns[0], "tc", "qdisc", "add", "dev", f"{tag}a", "root", "handle", "1:", "htb", "default", "1")
                    _ip("netns", "exec", self.ns[0], "tc", "class", "add", "dev", f"{tag}a", "parent", "1:", "classid", "1:1", "htb",
                        "rate", f"{rate}bit", "ceil", f"{rate}bit", "burst", str(burst), "cburst", str(burst))  # fmt: skip
            except Exception:
                self.close()
                raise
            self.host = "10.251.7.2"

    def rx(self, cmd: list[str]) -> list[str]:
        return pinned(RX_CORE, (["nsenter", f"--net=/run/netns/{self.ns[1]}"] if self.ns else []) + cmd)

    def tx(self, cmd: list[str]) -> list[str]:
        return pinned(TX_CORE, (["nsenter", f"--net=/run/netns/{self.ns[0]}"] if self.ns else []) + cmd)

    def close(self) -> None:
        for n in self.ns or ():
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reap(proc: subprocess.Popen, timeout: float = 30) -> float:
    """Waits for ``proc`` to end; its CPU seconds (getrusage of the child: user + system, all threads)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return ru.ru_utime + ru.ru_stime
        time.sleep(0.01)
    raise RuntimeError(f"{proc.args} did not end")


def busy_core_seconds(stat: str | None = None) -> float:
    """Core-seconds the whole machine has spent busy since boot: the first
    line of /proc/stat (user, nice, system, idle, iowait, irq, softirq,
    steal, ...; in clock ticks), all but idle and iowait. Differences of it
    over a run count everything the run made the machine do, the kernel's
    softirq work of the path included, which getrusage of the two processes
    leaves out where ksoftirqd does it."""
    if stat is None:
        with open("/proc/stat") as f:
            stat = f.readline()
    fields = [int(x) for x in stat.split()[1:9]]
    fields += [0] * (8 - len(fields))
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def cores_for(cost_s_per_gb: float, rate_bps: float) -> float:
    """Cores a tool needs to move data at `rate_bps` at its measured cost
    (busy core-seconds per GB of the whole machine)."""
    return cost_s_per_gb * rate_bps / 8e9


def pinned(core: str, cmd: list[str]) -> list[str]:
    return [*RT, *(["taskset", "-c", core] if PIN[0] and shutil.which("taskset") else []), *cmd]


def strace(cmd: list[str], out: Path) -> list[str]:
    return ["strace", "-c", "-f", "-o", str(out), *cmd]


def syscall_counts(path: Path) -> dict[str, int]:
    """Calls per system call from ``strace -c`` (columns: % time, seconds,
    usecs/call, calls, [errors], syscall); "total" included."""
    out = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) >= 5 and f[3].isdigit() and not line.startswith("-"):
            out[f[-1]] = int(f[3])
    return out


def per_mb(counts: dict[str, int], mb: float, top: int = 4) -> str:
    rows = sorted(((n, c) for n, c in counts.items() if n != "total"), key=lambda x: -x[1])[:top]
    return f"{counts.get('total', 0) / mb:.2f} (" + ", ".join(f"{n} {c / mb:.2f}" for n, c in rows) + ")"


def wait_listening(proc: subprocess.Popen, port: int) -> None:
    """Until a socket listens on ``port`` (/proc/net/tcp, state 0A: no test
    connection, which iperf3 -s -1 would take for its one client)."""
    want = f":{port:04X} "
    for _ in range(1000):
        tcp = Path(f"/proc/{proc.pid}/net/tcp")  # the server's network namespace
        if tcp.exists() and any(want in line and line.split()[3] == "0A" for line in tcp.read_text().splitlines()[1:]):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited {proc.returncode}")
        time.sleep(0.01)
    raise RuntimeError(f"{proc.args}: nothing listens on port {port}")


def xfer(net: Net, src: Path, dst: Path, streams: int, trace: Path | None = None, binary: Path | None = None) -> dict:
    """One transfer of ``src``: bit/s over the data phase and including the
    sender's whole-file hash, CPU seconds of each end, its syscall counts."""
    port = free_port()
    binary = binary or xfer_binary()
    rx_cmd = [str(binary), "serve", "--listen", f"{net.host}:{port}", "--dir", str(dst), "--once", "1"]
    if binary == xfer_binary():
        rx_cmd += RX_ARGS  # --rx-threads: this build's option only
    tx_cmd = [str(binary), "send", str(src), f"{net.host}:{port}", "--streams", str(streams),
              "--rate-bps", "0", "--cc", "cubic", "--force", "--interval-ms", "1000"]  # fmt: skip
    if trace:
        rx_cmd, tx_cmd = strace(rx_cmd, trace / "rx"), strace(tx_cmd, trace / "tx")
    rx_cmd, tx_cmd = net.rx(rx_cmd), net.tx(tx_cmd)
    # The last round's copy goes first (untimed): replacing it would free its
    # pages inside the timed rename.
    (dst / src.name).unlink(missing_ok=True)
    rx = subprocess.Popen(rx_cmd, stdout=subprocess.PIPE, text=True)
    try:
        rx.stdout.readline()  # listening
        before, busy0 = os.times(), busy_core_seconds()
        t0 = time.perf_counter()
        done = subprocess.run(tx_cmd, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
        after = os.times()
        rx_cpu = reap(rx)  # --once 1: it ends after the file is complete (strace writes its counts)
        busy = busy_core_seconds() - busy0
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
    events = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    final = next(e for e in events if e.get("event") == "done")
    start = next(e for e in events if e.get("event") == "start")
    size = final["size"]
    out = {"bps": size * 8 / final["seconds"], "bps_all": size * 8 / (final["seconds"] + start["hash_s"]), "hash_s": start["hash_s"],
           "tx_cpu": (after.children_user - before.children_user) + (after.children_system - before.children_system),
           "rx_cpu": rx_cpu, "wall": wall, "busy": busy}  # fmt: skip
    if trace:
        out["rx_calls"], out["tx_calls"] = syscall_counts(trace / "rx"), syscall_counts(trace / "tx")
    return out


def iperf(net: Net, size: int, streams: int, zerocopy: bool, to_file: Path | None, trace: Path | None = None, procs: int = 1) -> dict | None:
    """iperf3 on the same path and cores: receiver-side bit/s, CPU seconds of
    each end. ``procs`` > 1 runs that many iperf3 pairs at once, the streams
    shared among them and each server writing its own file (``to_file``
    with a suffix): iperf3 storing every byte it receives over several
    connections, which one server with ``-P`` and ``-F`` does not (below).
    Their rate is the bytes received over the longest pair's time."""
    if shutil.which("iperf3") is None:
        return None
    pairs = []
    for k in range(procs):
        port = free_port()
        f = (to_file.with_name(f"{to_file.name}.{k}") if procs > 1 else to_file) if to_file else None
        s_cmd = ["iperf3", "-s", "-1", "-B", net.host, "-p", str(port), *(["-F", str(f)] if f else [])]
        c_cmd = ["iperf3", "-c", net.host, "-p", str(port), "-P", str(max(1, streams // procs)), "-n", str(size // procs), "-J", *(["-Z"] if zerocopy else [])]
        if trace:
            s_cmd, c_cmd = strace(s_cmd, trace / f"rx{k}"), strace(c_cmd, trace / f"tx{k}")
        if f:
            f.unlink(missing_ok=True)
        pairs.append((port, f, net.rx(s_cmd), net.tx(c_cmd)))
    servers: list[subprocess.Popen] = []
    try:
        for port, _, s_cmd, _ in pairs:
            servers.append(subprocess.Popen(s_cmd, stdout=subprocess.DEVNULL))
            wait_listening(servers[-1], port)
        before, busy0 = os.times(), busy_core_seconds()
        clients = [subprocess.Popen(c_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _, _, _, c_cmd in pairs]
        outs = [c.communicate() for c in clients]
        after = os.times()
        for c, (_, err) in zip(clients, outs):
            if c.returncode:
                raise subprocess.CalledProcessError(c.returncode, c.args, stderr=err)
        s_cpu = sum(reap(s) for s in servers)  # -s -1: each ends after its one test
        busy = busy_core_seconds() - busy0
    finally:
        for s in servers:
            if s.poll() is None:
                s.kill()
                s.wait()
    ends = [json.loads(out)["end"]["sum_received"] for out, _ in outs]
    r = {"bps": sum(e["bytes"] for e in ends) * 8 / max(e["seconds"] for e in ends),
         "tx_cpu": (after.children_user - before.children_user) + (after.children_system - before.children_system), "rx_cpu": s_cpu, "busy": busy}  # fmt: skip
    if to_file:
        # iperf3 3.12 opens the -F file once per stream, each from offset 0
        # with O_TRUNC: with -P 4 the streams overwrite one quarter of the
        # bytes (fewer page-cache pages to allocate than a mover storing all).
        r["file_bytes"] = sum(f.stat().st_size for _, f, _, _ in pairs if f.exists())
    if trace:
        calls = lambda end: dict(sum((Counter(syscall_counts(trace / f"{end}{k}")) for k in range(procs)), Counter()))  # noqa: E731
        r["rx_calls"], r["tx_calls"] = calls("rx"), calls("tx")
    return r


def decision_cost(n: int = 100_000) -> float:
    """The deadline rule alone (DeadlineLoop.proposal), seconds per call."""
    loop = DeadlineLoop(size=10**12, deadline_s=3600, margin=1.1, hysteresis=0.05, guard_s=2)
    loop.start(3 * 10**9)
    t0 = time.perf_counter()
    for i in range(n):
        p = loop.proposal(i * 0.01, i * 10**6)
        if p is not None:
            loop.applied(i * 0.01, p)
    return (time.perf_counter() - t0) / n


def interval_cost(src: Path, dst: Path) -> dict:
    """A paced transfer through the front (``alphaqos transfer send --json``)
    at a 50 ms interval: the front's cost per interval (parse the mover's
    report, decide, print the row: the report's ``loop_cost_us``) and the
    mover's (TCP_INFO per connection and its JSON line: ``report_us``)."""
    port = free_port()
    rx = subprocess.Popen([str(xfer_binary()), "serve", "--listen", f"127.0.0.1:{port}", "--dir", str(dst)], stdout=subprocess.DEVNULL)
    try:
        wait_listening(rx, port)
        done = subprocess.run([sys.executable, "-m", "alphaqos", "transfer", "send", str(src), f"127.0.0.1:{port}", "--deadline", "4s",
                               "--rate", "10Gbps", "--interval", "50ms", "--streams", "1", "--cc", "pacing-only", "--force", "--json"],
                              capture_output=True, text=True, check=True)  # fmt: skip
    finally:
        rx.terminate()
        rx.wait()
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    return {"front_us": lines[-1]["loop_cost_us"], "front_cpu_us": lines[-1]["loop_cpu_us"], "mover_us": lines[-1]["report_cost_us"], "intervals": len(lines) - 1}


def make_file(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(size >> 20):
            f.write(chunk)


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def case(net: Net, src: Path, dst: Path, sink: Path, size: int, streams: int, repeat: int, compare: Path | None) -> dict:
    """``repeat`` rounds of: ours, (the compared build,) iperf3, iperf3 -Z -F
    and, with several connections, as many iperf3 pairs -Z -F, one stream
    and one file each."""
    runs: dict[str, list[dict]] = {"ours": [], "before": [], "iperf3": [], "iperf3 -Z -F": [], "pairs -Z -F": []}
    refs = [("iperf3", False, None, 1), ("iperf3 -Z -F", True, sink, 1)] + ([("pairs -Z -F", True, sink, streams)] if streams > 1 else [])
    for _ in range(repeat):
        runs["ours"].append(xfer(net, src, dst, streams))
        if compare:
            runs["before"].append(xfer(net, src, dst, streams, binary=compare))
        for label, zc, f, procs in refs:
            r = iperf(net, size, streams, zc, f, procs=procs)
            if r:
                runs[label].append(r)
    return {k: v for k, v in runs.items() if v}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB", help="the file (1 GiB: 16 blocks of 64 MiB, four per connection with four)")
    ap.add_argument("--syscalls", action="store_true", help="also count system calls (strace -c -f), one more run per case")
    ap.add_argument("--path", default="loopback,veth,veth:5Gbps,veth:1Gbps",
                    help="loopback, veth (two namespaces, root), veth:RATE (HTB at RATE), comma-separated")  # fmt: skip
    ap.add_argument("--streams", default="1,4", help="connections per case, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per case (median and spread shown)")
    ap.add_argument("--compare", type=Path, help="another alphaqos-xfer build, run alternating with this one")
    ap.add_argument("--no-rt", action="store_true", help="no real-time priority (chrt) for the measured processes")
    ap.add_argument("--no-pin", action="store_true", help="no taskset: each tool's threads on any core")
    ap.add_argument("--rx-threads", type=int, help="the receiver's threads per transfer (serve --threads; default: its own)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    # Unpinned, real-time senders that spin in sendfile(2) can take both cores
    # from the (normal-priority) softirq work that would drain a veth: seen
    # here as two iperf3 clients at 95 % CPU for ten minutes with nothing
    # moving. So --no-pin runs at normal priority.
    if args.no_rt or args.no_pin or os.geteuid() != 0 or not shutil.which("chrt"):
        RT.clear()
    PIN[0] = not args.no_pin
    if args.rx_threads:
        RX_ARGS[:] = ["--threads", str(args.rx_threads)]
    size = units.parse_size(args.size)
    # /dev/shm when there is room: the path, not the disk, is measured.
    shm = Path("/dev/shm")
    where = shm if shm.is_dir() and shutil.disk_usage(shm).free > 4 * size else None
    work = Path(tempfile.mkdtemp(prefix="aq-xfer-bench-", dir=where))
    try:
        src = work / "src.bin"
        make_file(src, size)
        (work / "dst").mkdir()
        sink = work / "iperf.out"
        gb = size / 1e9
        cores = f"receiver on core {RX_CORE}, sender on core {TX_CORE}" if PIN[0] else "unpinned"
        print(f"{units.fmt_size(size)} in {work.parent}, {cores}"
              f"{', ' + ' '.join(RT) if RT else ', no real-time priority'}, load {os.getloadavg()[0]:.1f}, {args.repeat} rounds per case")  # fmt: skip
        print("ours: alphaqos-xfer's data phase (after any hash the sender takes before sending: protocol 2 the whole file, 3 none for a"
              " new file), the receiver hashing every byte into the file;"
              " iperf3: plain (write/read, discards); iperf3 -Z -F: sendfile, the receiver writing the file (no hash);"
              " pairs: with several connections, that many iperf3 -Z -F pairs of one stream, each storing its share in its own file")  # fmt: skip
        print("Gbit/s: median [lowest-highest]; CPU s/GB: median, user + system of all threads, sender/receiver;"
              " 'with hash': ours including the sender's hashing before the data phase (protocol 3: only blocks held at the receiver)")  # fmt: skip
        print(f"machine core-s/GB: busy core-seconds of the whole machine per GB (/proc/stat, softirq included), ours/iperf3 plain;"
              f" 'cores for 0.9': the cores ours would need at that cost to move 0.9 x iperf3 plain's rate (this machine has {os.cpu_count()})")  # fmt: skip
        head = f"{'path':<12} {'streams':>7} {'ours Gbit/s':>20} {'with hash':>9} {'iperf3':>7} {'ratio':>6} {'-Z -F':>7} {'ratio':>6} {'pairs':>7} {'ratio':>6} {'ours CPU tx/rx':>15} {'iperf3 CPU tx/rx':>17} {'machine core-s/GB':>17} {'cores for 0.9':>13}"
        if args.compare:
            head += f" {'before Gbit/s':>20} {'with hash':>9} {'ratio':>6} {'ratio with hash':>15}"
        print(head)
        for kind in args.path.split(","):
            if kind.startswith("veth") and os.geteuid() != 0:
                print(f"{kind}: skipped (network namespaces need root)")
                continue
            net = Net(kind)
            try:
                for streams in (int(x) for x in args.streams.split(",")):
                    runs = case(net, src, work / "dst", sink, size, streams, args.repeat, args.compare)
                    med = {k: median([r["bps"] for r in v]) for k, v in runs.items()}
                    cpu = lambda k, end: median([r[end] for r in runs[k]]) / gb  # noqa: E731
                    ours = [r["bps"] / 1e9 for r in runs["ours"]]
                    spread = f"{med['ours'] / 1e9:.2f} [{min(ours):.2f}-{max(ours):.2f}]"
                    ref = lambda k: (f"{med[k] / 1e9:>7.2f} {med['ours'] / med[k]:>6.2f}" if k in med else f"{'-':>7} {'-':>6}")  # noqa: E731
                    icpu = f"{cpu('iperf3', 'tx_cpu'):.2f}/{cpu('iperf3', 'rx_cpu'):.2f}" if "iperf3" in runs else "no iperf3"
                    ocpu = f"{cpu('ours', 'tx_cpu'):.2f}/{cpu('ours', 'rx_cpu'):.2f}"
                    with_hash = median([r["bps_all"] for r in runs["ours"]]) / 1e9
                    busy = lambda k: median([r["busy"] for r in runs[k]]) / gb  # noqa: E731
                    machine = f"{busy('ours'):.2f}/{busy('iperf3'):.2f}" if "iperf3" in runs else f"{busy('ours'):.2f}/-"
                    need = f"{cores_for(busy('ours'), 0.9 * med['iperf3']):.2f}" if "iperf3" in runs else "-"
                    line = f"{kind:<12} {streams:>7} {spread:>20} {with_hash:>9.2f} {ref('iperf3')} {ref('iperf3 -Z -F')} {ref('pairs -Z -F')} {ocpu:>15} {icpu:>17} {machine:>17} {need:>13}"
                    if "before" in runs:
                        b = [r["bps"] / 1e9 for r in runs["before"]]
                        before = f"{med['before'] / 1e9:.2f} [{min(b):.2f}-{max(b):.2f}]"
                        b_all = median([r["bps_all"] for r in runs["before"]]) / 1e9
                        line += f" {before:>20} {b_all:>9.2f} {med['ours'] / med['before']:>6.2f} {with_hash / b_all:>15.2f}"
                    print(line)
                    short = [r["file_bytes"] for r in runs.get("iperf3 -Z -F", []) if r["file_bytes"] < 0.9 * size]
                    if short:
                        print(f"{'':>12} iperf3 -Z -F wrote a file of {median(short) / size:.2f} x the bytes it received (its streams overwrite each other): not like for like")
                    if args.syscalls and shutil.which("strace"):
                        mb = size / 1e6
                        with tempfile.TemporaryDirectory() as t:
                            sx = xfer(net, src, work / "dst", streams, trace=Path(t))
                            si = iperf(net, size, streams, True, sink, trace=Path(t))
                        print(f"{'':>12} syscalls per MB, alphaqos-xfer: sender {per_mb(sx['tx_calls'], mb)}, receiver {per_mb(sx['rx_calls'], mb)}")
                        if si:
                            print(f"{'':>12} syscalls per MB, iperf3 -Z -F: sender {per_mb(si['tx_calls'], mb)}, receiver {per_mb(si['rx_calls'], mb)}")
            finally:
                net.close()
        RT.clear()
        print(f"deadline loop: the rule {decision_cost() * 1e6:.1f} us per interval", end="")
        ic = interval_cost(_small(work), work / "dst")
        print(f"; the front's whole interval (parse, rule, row) {ic['front_us']:.0f} us ({ic['front_cpu_us']:.0f} us CPU),"
              f" the mover's report {ic['mover_us']:.0f} us"
              f" ({ic['intervals']} intervals of 50 ms; a circuit modify adds an HTTP round trip)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _small(work: Path) -> Path:
    p = work / "small.bin"
    make_file(p, 32 << 20)
    return p


if __name__ == "__main__":
    main()
