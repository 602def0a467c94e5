"""A real exporter: traffic between two network namespaces, exported as IPFIX
or NetFlow v9 by softflowd (Debian's package, installed by make test-deps), received
by ``alphaqos flows collect`` and identified by :func:`alphaqos.flows.identify.identify`.

Namespace A holds the collector and the receiving ends; namespace B the
senders and softflowd, which watches B's end of the veth pair with libpcap
and exports to the collector over that same link (its own export datagrams
are left out by a BPF filter). One bulk TCP transfer (α with a lowered
threshold) and a few small flows (β) are sent from B to A.

Needs root and ``ip``; skipped with the reason otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

import alphaqos
from alphaqos import netns
from alphaqos.flows.identify import identify
from alphaqos.flows.schema import SCHEMA

from _system import namespaces, need_root, require_debian_package

PACKAGE_DIR = Path(alphaqos.__file__).resolve().parents[1]  # what to put on PYTHONPATH in the namespaces
BULK_BYTES = 100 * 1024 * 1024
SMALL_TCP_BYTES = 20_000
UDP_DATAGRAMS, UDP_SIZE = 5, 500
BULK_PORT, SMALL_PORT, UDP_PORT = 5001, 5002, 5003
# softflowd timeouts (one -t each), seconds: flows are checked for expiry every second and
# exported soon after they end; none lives long enough to be cut by maxlife.
SOFTFLOWD_TIMEOUTS = ("expint=1", "tcp=10", "tcp.fin=1", "tcp.rst=1", "udp=2", "icmp=2", "general=10", "maxlife=60")

# The receiving ends, in namespace A: a TCP sink on two ports and a UDP sink,
# printing one JSON line per connection or datagram received.
RECEIVER = r"""
import json, selectors, socket, sys
host = sys.argv[1]
sel = selectors.DefaultSelector()
for port in (int(sys.argv[2]), int(sys.argv[3])):
    s = socket.create_server((host, port))
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, "listen")
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((host, int(sys.argv[4])))
sel.register(u, selectors.EVENT_READ, "udp")
print("ready", flush=True)
counts = {}
while True:
    for key, _ in sel.select():
        sock = key.fileobj
        if key.data == "listen":
            conn, _ = sock.accept()
            conn.setblocking(False)
            sel.register(conn, selectors.EVENT_READ, "conn")
            counts[conn] = 0
        elif key.data == "udp":
            data, peer = sock.recvfrom(65536)
            print(json.dumps({"proto": 17, "peer": list(peer), "bytes": len(data)}), flush=True)
        else:
            data = sock.recv(1 << 20)
            if data:
                counts[sock] += len(data)
                continue
            peer = sock.getpeername()
            print(json.dumps({"proto": 6, "peer": list(peer), "port": sock.getsockname()[1], "bytes": counts.pop(sock)}), flush=True)
            sel.unregister(sock)
            sock.close()
"""

# The senders, in namespace B: one bulk TCP transfer, one small one, a few
# UDP datagrams from one socket; prints the source ports used.
SENDER = r"""
import json, socket, sys
host, bulk, small, udp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
bulk_bytes, small_bytes, udp_count, udp_size = (int(a) for a in sys.argv[5:9])
ports = {}
for name, port, size in (("bulk", bulk, bulk_bytes), ("small", small, small_bytes)):
    with socket.create_connection((host, port)) as s:
        ports[name] = s.getsockname()[1]
        block = b"\xa5" * (1 << 20)
        left = size
        while left:
            left -= s.send(block[:min(left, len(block))])
        s.shutdown(socket.SHUT_WR)
        s.recv(1)
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
    u.bind(("0.0.0.0", 0))
    ports["udp"] = u.getsockname()[1]
    for _ in range(udp_count):
        u.sendto(b"\x5a" * udp_size, (host, udp))
print(json.dumps(ports), flush=True)
"""

# Frames of the IEEE local experimental EtherType 0x88B5, broadcast on an
# interface (argv[1]): softflowd counts them as non-IP and makes no flow of them.
FILLER = r"""
import socket, sys
with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
    s.bind((sys.argv[1], 0))
    frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + bytes(1000)
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1000):
        s.send(frame)
"""


def _run(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


class Lab:
    """Two namespaces joined by a veth pair, and the processes started in
    them; everything is removed by :meth:`close`, even after a failure."""

    def __init__(self, tag: str, subnet: int):
        self.tag = tag
        self.ns_a = self.ns_b = ""
        self.if_a, self.if_b = f"aqx{tag}a", f"aqx{tag}b"  # at most 15 characters
        self.addr_a, self.addr_b = f"10.213.{subnet}.1", f"10.213.{subnet}.2"
        self.processes: list[subprocess.Popen] = []

    def build(self, stack: contextlib.ExitStack) -> None:
        """The namespaces (tests/_system.namespaces: removed by ``stack``,
        with every process in them) and the veth pair."""
        self.ns_a, self.ns_b = stack.enter_context(namespaces(f"aqx{self.tag}", ("a", "b")))
        netns.veth(self.ns_a, self.if_a, self.ns_b, self.if_b)
        for ns, interface, address in ((self.ns_a, self.if_a, self.addr_a), (self.ns_b, self.if_b, self.addr_b)):
            netns.address(ns, interface, f"{address}/24")
            netns.up(ns, interface)

    def start(self, ns: str, *command: str, **kwargs) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR))
        process = subprocess.Popen(["ip", "netns", "exec", ns, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env, **kwargs)  # fmt: skip
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            try:
                process.communicate(timeout=10)
            except (subprocess.TimeoutExpired, ValueError):
                pass


@pytest.fixture
def lab():
    need_root("building network namespaces")
    if shutil.which("ip") is None:
        require_debian_package("iproute2", binary="ip")
    require_debian_package("softflowd", binary="softflowd")
    pid = os.getpid()
    built = Lab(f"{pid % 100000}", 20 + pid % 200)
    with contextlib.ExitStack() as stack:
        built.build(stack)
        stack.callback(built.close)  # the processes first, then the namespaces
        yield built


def _softflowd_stats(control: Path) -> dict[str, int]:
    """The counters of ``softflowctl statistics`` ("Name: 12 ..." lines)."""
    stats = {}
    for line in _run("softflowctl", "-c", str(control), "statistics").stdout.splitlines():
        name, sep, rest = line.partition(":")
        if sep and rest.split() and rest.split()[0].isdigit():
            stats[name.strip()] = int(rest.split()[0])
    return stats


def _read_line(process: subprocess.Popen, what: str) -> str:
    line = process.stdout.readline()
    if not line:
        process.kill()
        raise AssertionError(f"{what} exited ({process.wait()}): {process.stderr.read().strip()}")
    return line


def _retrans_segs(ns: str) -> int:
    """TCP segments the kernel of namespace `ns` has retransmitted (RFC 4022
    tcpRetransSegs, /proc/net/snmp)."""
    text = _run("ip", "netns", "exec", ns, "cat", "/proc/net/snmp").stdout
    header, values = [line.split() for line in text.splitlines() if line.startswith("Tcp:")][:2]
    return int(values[header.index("RetransSegs")])


@pytest.mark.parametrize("version", ["10", "9"], ids=["ipfix", "v9"])
def test_softflowd_export_between_namespaces_is_collected_and_identified(lab, tmp_path, version):
    started = time.monotonic()
    out, db = tmp_path / "flows", tmp_path / "prefixes.duckdb"
    collector = lab.start(lab.ns_a, sys.executable, "-m", "alphaqos", "flows", "collect", "--listen", f"{lab.addr_a}:0",
                          "--out", str(out), "--flush-every", "1s")  # fmt: skip
    port = int(_read_line(collector, "the collector").split()[2].rsplit(":", 1)[1])

    control = tmp_path / "softflowd.ctl"
    # 16 MiB of capture buffer; softflowd's own export datagrams are filtered out
    softflowd = lab.start(lab.ns_b, "softflowd", "-d", "-i", lab.if_b, "-n", f"{lab.addr_a}:{port}", "-v", version,
                          *(a for t in SOFTFLOWD_TIMEOUTS for a in ("-t", t)), "-p", str(tmp_path / "softflowd.pid"), "-c", str(control),
                          "-B", str(16 << 20), f"not (udp and port {port})")  # fmt: skip
    deadline = time.monotonic() + 10
    while _run("softflowctl", "-c", str(control), "statistics", check=False).returncode != 0:
        assert softflowd.poll() is None, f"softflowd exited ({softflowd.returncode}): {softflowd.communicate()[1]}"
        assert time.monotonic() < deadline, "softflowd did not open its control socket within 10 s"
        time.sleep(0.1)

    receiver = lab.start(lab.ns_a, sys.executable, "-c", RECEIVER, lab.addr_a, str(BULK_PORT), str(SMALL_PORT), str(UDP_PORT))
    assert _read_line(receiver, "the receiver").strip() == "ready"
    retrans_before = _retrans_segs(lab.ns_b)
    sent_from = time.time()
    sender = subprocess.run(["ip", "netns", "exec", lab.ns_b, sys.executable, "-c", SENDER, lab.addr_a,
                             *map(str, (BULK_PORT, SMALL_PORT, UDP_PORT, BULK_BYTES, SMALL_TCP_BYTES, UDP_DATAGRAMS, UDP_SIZE))],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    sent_until = time.time()
    assert sender.returncode == 0, sender.stderr
    ports = json.loads(sender.stdout)
    received = [json.loads(_read_line(receiver, "the receiver")) for _ in range(2 + UDP_DATAGRAMS)]
    tcp = {r["port"]: r["bytes"] for r in received if r["proto"] == 6}
    assert tcp == {BULK_PORT: BULK_BYTES, SMALL_PORT: SMALL_TCP_BYTES}

    # Wait until softflowd has seen the end of every flow and expired them all
    # (on FIN, or after udp=2 s). libpcap hands packets over by blocks of its
    # ring (TPACKET_V3), and a block partly filled can stay with the kernel
    # (seen here: the last packets of a transfer, then any new ones, never
    # reached softflowd): non-IP frames, which softflowd ignores, fill it.
    deadline = time.monotonic() + 15
    while True:
        stats = _softflowd_stats(control)  # bytes by protocol count the flows expired
        if stats.get("tcp (6)", 0) > BULK_BYTES + SMALL_TCP_BYTES and stats.get("udp (17)", 0) >= UDP_DATAGRAMS * UDP_SIZE:
            break
        assert time.monotonic() < deadline, f"softflowd still tracks flows after 15 s: {stats}"
        _run("ip", "netns", "exec", lab.ns_b, sys.executable, "-c", FILLER, lab.if_b)
        time.sleep(0.3)
    _run("softflowctl", "-c", str(control), "shutdown")  # exports what is left, then exits
    softflowd.communicate(timeout=15)
    time.sleep(0.5)  # the export datagrams cross the veth and wait in the collector's socket
    collector.send_signal(signal.SIGTERM)
    stdout, stderr = collector.communicate(timeout=30)
    assert collector.returncode == 0, stderr
    # The collector's last line (the exporter's), then its compactor's
    # (which writes the store from the spool after the collector stops).
    lines = stdout.splitlines()
    assert "problems: none" in [line for line in lines if not line.startswith("compacted ")][-1], stdout
    assert any(line.startswith("compacted ") for line in lines), stdout

    files = list(out.glob("exporter=*/day=*/flows-*.parquet"))
    assert files and all(f.parts[-3] == f"exporter={lab.addr_b}" for f in files), files
    flows = pl.read_parquet(files)
    assert flows.schema == pl.Schema(SCHEMA)
    assert set(flows["exporter"].to_list()) == {lab.addr_b}

    def flow(src, sport, dst, dport, proto):
        rows = flows.filter((pl.col("src_addr") == src) & (pl.col("src_port") == sport) & (pl.col("dst_addr") == dst)
                            & (pl.col("dst_port") == dport) & (pl.col("protocol") == proto))  # fmt: skip
        assert rows.height >= 1, f"no record of {src}:{sport} -> {dst}:{dport} proto {proto} in\n{flows}"
        return rows

    bulk = flow(lab.addr_b, ports["bulk"], lab.addr_a, BULK_PORT, 6)
    # IP bytes: the payload plus 52 bytes of IP and TCP headers per segment of
    # at most 1448 bytes (3.6 %), fewer when offloaded super-segments are seen,
    # plus what the sender's kernel sent again (on a loaded machine a starved
    # receiver makes the sender retransmit; softflowd counts the wire), each
    # retransmitted segment at most a 64 KB offloaded one.
    assert stats["Packets dropped by libpcap"] == 0, stats
    resent = _retrans_segs(lab.ns_b) - retrans_before
    assert BULK_BYTES < bulk["bytes"].sum() < BULK_BYTES * 1.05 + resent * (65_536 + 52), (bulk, stats, resent)
    small = flow(lab.addr_b, ports["small"], lab.addr_a, SMALL_PORT, 6)
    assert SMALL_TCP_BYTES < small["bytes"].sum() < SMALL_TCP_BYTES * 1.2
    udp = flow(lab.addr_b, ports["udp"], lab.addr_a, UDP_PORT, 17)
    assert udp["bytes"].sum() == UDP_DATAGRAMS * (UDP_SIZE + 28) and udp["packets"].sum() == UDP_DATAGRAMS
    flow(lab.addr_a, BULK_PORT, lab.addr_b, ports["bulk"], 6)  # the acknowledgements
    assert (flows["first"] <= flows["last"]).all()
    # IPFIX times are exact to the millisecond (flowStart/EndSysUpTime and
    # systemInitTimeMilliseconds); v9 ones are relative to an export time in
    # whole seconds, so up to a second early.
    slack = 0.05 if version == "10" else 1.05
    for name, rows in (("bulk", bulk), ("small", small), ("udp", udp)):
        first, last = rows["first"].min().timestamp(), rows["last"].max().timestamp()
        assert sent_from - slack <= first <= last <= sent_until + slack, (name, sent_from, first, last, sent_until)

    # H between the β flows and the bulk one: bigger than any other flow, and
    # under half the bulk transfer, which may straddle an interval boundary.
    others = flows.filter(~((pl.col("src_addr") == lab.addr_b) & (pl.col("src_port") == ports["bulk"])))
    threshold = BULK_BYTES // 4
    assert others["bytes"].max() < threshold
    identify(out, db, threshold_bytes=threshold, interval_s=60)
    with duckdb.connect(str(db), read_only=True) as con:
        learnt = set(con.execute("SELECT prefix, role FROM prefixes").fetchall())
    subnet = lab.addr_a.rsplit(".", 1)[0] + ".0/24"
    assert learnt == {(subnet, "src"), (subnet, "dst")}
    # One IPv4 prefix length serves both roles: /24 above (source and
    # destination fall in the same /24 here), /32 now, rebuilt from the same sightings.
    identify(out, db, threshold_bytes=threshold, interval_s=60, prefix_v4=32)
    with duckdb.connect(str(db), read_only=True) as con:
        learnt = set(con.execute("SELECT prefix, role FROM prefixes").fetchall())
    assert learnt == {(f"{lab.addr_b}/32", "src"), (f"{lab.addr_a}/32", "dst")}
    assert time.monotonic() - started < 60
