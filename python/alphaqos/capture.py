"""A packet trace of real TCP traffic between two network namespaces.

Why
    The trace study of V. Liberatore, "Local Flow Separation" (Section IV,
    Table I) replays NLANR traces logged on OC-3 links; those are not
    available. Beside the traces the project simulates, this one is made by
    the kernel's own TCP: real connections, real congestion control, real
    timing, on a link shaped to an OC-3's rate.

The bench (:func:`capture_trace`)
    Two namespaces, ``<prefix>-<tag>-a`` (senders, ``a0``, 10.77.0.1) and
    ``-b`` (receivers, ``b0``, 10.77.0.2), joined by a veth pair. ``a0``
    sends through the project's host shaping (:mod:`alphaqos.provision.
    shape`: an HTB class at ``rate_bps``, 155 Mbit/s by default as an OC-3,
    its pfifo holding 10 ms), and both ends send without segmentation or
    checksum offload and receive without GRO (:func:`alphaqos.emulate.
    wire_like`), so each packet on the veth is one a wire would carry.
    tcpdump on ``b0`` (``-Q in``: what crossed the link from ``a``; 96-byte
    snapshots, the headers) writes the pcap, whose IP total lengths keep
    each packet's real size.

The traffic (this file run as a script, ``send`` and ``serve``, in the
namespaces)
    Open-loop transfers: starts form a Poisson process, each a new TCP
    connection (a new source port: a new flow) to one of ``ports`` ports,
    of a Pareto size of shape 1.2 and mean 8 KB (the document's web
    traffic, Section IV), cut at ``max_size``; plus ``long_flows`` long
    transfers of ``long_size`` starting at even intervals. The starts'
    rate makes the offered load ``load_bps`` (the long transfers' bytes
    counted in it). A transfer is an 8-byte length and the payload; the
    receiver closes once it has it all (its side keeps TIME_WAIT, so the
    senders' ports are not used up). Poisson flow arrivals with
    heavy-tailed sizes are the usual model of aggregated web traffic
    (Paxson & Floyd, "Wide-Area Traffic: The Failure of Poisson Modeling",
    1995: connection arrivals within sessions are close to Poisson, their
    sizes heavy-tailed).

Clean-up
    The senders, the receiver and tcpdump are stopped by their process ids,
    any process still in the namespaces (``ip netns pids``) too, and both
    namespaces deleted, also when something fails. Needs root and a kernel
    that allows network namespaces; otherwise :class:`CaptureError` says
    why and nothing is left.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CaptureError", "CaptureResult", "capture_trace", "flow_bytes", "pareto_sizes"]

#: An OC-3's rate (SONET STS-3c, 155.52 Mbit/s line rate), as the document's traces.
OC3_BPS = 155_000_000
SENDER_IP, RECEIVER_IP = "10.77.0.1", "10.77.0.2"
#: Snapshot length: Ethernet 14 + IPv4 20 + TCP 20 + options 12 = 66 bytes of headers, with room.
SNAPLEN = 96
#: The first receiving port; ``ports`` consecutive ones are used.
BASE_PORT = 5001


class CaptureError(Exception):
    """The trace could not be captured (no root, no namespaces, no tcpdump)."""


@dataclass
class CaptureResult:
    path: Path
    duration_s: float
    rate_bps: int
    load_bps: float
    #: What the sender reports: transfers started, completed, bytes written.
    sender: dict[str, Any] = field(default_factory=dict)
    #: tcpdump's own counts: captured, dropped by the kernel.
    captured: int = 0
    dropped: int = 0
    #: Records whose timestamp was before the previous one's, and the
    #: largest such step back (ns), put in time order (:func:`sort_pcap`).
    reordered: int = 0
    max_step_back_ns: int = 0


def pareto_sizes(rng: random.Random, n: int, *, shape: float = 1.2, mean: float = 8000, max_size: int | None = None) -> list[int]:
    """``n`` Pareto (type I) sizes of tail index ``shape`` and ``mean``
    (scale ``mean (shape - 1) / shape``), at least one byte, cut at ``max_size``."""
    scale = mean * (shape - 1) / shape
    sizes = [max(1, round(scale / (1.0 - rng.random()) ** (1 / shape))) for _ in range(n)]
    return [min(s, max_size) for s in sizes] if max_size else sizes


def truncated_pareto_mean(shape: float, mean: float, max_size: float) -> float:
    """E[min(X, max_size)] for X Pareto of ``shape`` and ``mean``:
    scale·α/(α-1) - scale^α·M^(1-α)/(α-1)."""
    scale = mean * (shape - 1) / shape
    if max_size <= scale:
        return max_size
    return mean - scale**shape * max_size ** (1 - shape) / (shape - 1)


# --- the bench ------------------------------------------------------------------


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        raise CaptureError(f"{what}: {done.stderr.strip() or done.stdout.strip() or f'exit status {done.returncode}'}")


@contextlib.contextmanager
def _namespaces(prefix: str, rate_bps: int) -> Iterator[tuple[str, str]]:
    """Two namespaces joined by a veth, ``a0`` shaped with HTB
    (:func:`alphaqos.netns.namespaces`: deleted at the end with every
    process left in them)."""
    from . import netns
    from .emulate import EmuError, wire_like
    from .provision.shape import plan_shape, tc_commands

    if os.geteuid() != 0:
        raise CaptureError("capturing between network namespaces needs root")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise CaptureError(f"{tool} (iproute2) is not installed")
    try:
        with netns.namespaces(prefix, ("a", "b")) as (a, b):
            netns.veth(a, "a0", b, "b0")
            for ns, dev, addr in ((a, "a0", SENDER_IP), (b, "b0", RECEIVER_IP)):
                netns.address(ns, dev, f"{addr}/24")
                netns.up(ns, dev)
                wire_like(dev, ns)
            for key, value in (("net.ipv4.ip_local_port_range", "10000 65000"), ("net.ipv4.tcp_tw_reuse", "1")):
                _run([*netns.exec_argv(a), "sysctl", "-qw", f"{key}={value}"], key)
            # The project's host shaping (alphaqos shape), every packet of a0 in the class.
            for command in tc_commands(plan_shape("a0", rate_bps, 100.0, netns_name=a, gso_max_segs=None)):
                _run(shlex.split(command), "HTB on a0")
            yield a, b
    except (netns.NetnsError, EmuError) as exc:
        message = str(exc)
        if message.startswith("ip netns add"):
            message = f"cannot create the network namespace: {message}"
        raise CaptureError(message) from None


def _stop(proc: subprocess.Popen | None, sig: int = signal.SIGTERM) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_line(proc: subprocess.Popen, stream, needle: str, timeout_s: float, what: str) -> None:
    """Read ``stream`` of ``proc`` until a line holds ``needle``."""
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    deadline, seen = time.monotonic() + timeout_s, []
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = stream.readline()
            if not line:
                break
            seen.append(line.strip())
            if needle in line:
                return
    finally:
        sel.close()
    raise CaptureError(f"{what} did not start: {' / '.join(seen[-3:]) or 'no output'}")


def capture_trace(
    path: str | Path, *, duration_s: float = 10.0, rate_bps: int = OC3_BPS, load_bps: float = 44.7e6,
    long_flows: int = 3, long_size: int = 4_000_000, ports: int = 8, mean_size: int = 8000, shape: float = 1.2,
    max_size: int = 20_000_000, seed: int = 1, prefix: str = "aqtrace",
) -> CaptureResult:  # fmt: skip
    """Capture ``duration_s`` seconds of real TCP traffic between two
    namespaces into the pcap ``path`` (see the module doc); CaptureError
    if the machine cannot (nothing is left behind either way)."""
    if shutil.which("tcpdump") is None:
        raise CaptureError("tcpdump is not installed (apt-get install tcpdump)")
    path = Path(path)
    procs: list[subprocess.Popen] = []
    with _namespaces(prefix, rate_bps) as (a, b):
        try:
            dump = subprocess.Popen(
                ["ip", "netns", "exec", b, "tcpdump", "-i", "b0", "-Q", "in", "-s", str(SNAPLEN), "-nn", "-U",
                 "-B", "8192", "--time-stamp-precision", "nano", "-w", str(path), "tcp"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            procs.append(dump)
            _wait_line(dump, dump.stderr, "listening on", 10, "tcpdump")
            # This file run as a script: the two ends need nothing but the standard library.
            module = [sys.executable, str(Path(__file__).resolve())]
            serve = subprocess.Popen(["ip", "netns", "exec", b, *module, "serve", RECEIVER_IP, str(BASE_PORT), str(ports)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
            procs.append(serve)
            _wait_line(serve, serve.stdout, "ready", 20, "the receiver")
            plan = {"dst": RECEIVER_IP, "base_port": BASE_PORT, "ports": ports, "duration_s": duration_s, "load_bps": load_bps,
                    "long_flows": long_flows, "long_size": long_size, "mean_size": mean_size, "shape": shape,
                    "max_size": max_size, "seed": seed}  # fmt: skip
            send = subprocess.Popen(["ip", "netns", "exec", a, *module, "send", json.dumps(plan)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
            procs.append(send)
            try:
                out, err = send.communicate(timeout=duration_s + 30)
            except subprocess.TimeoutExpired:
                raise CaptureError(f"the senders did not finish within {duration_s + 30:.0f} s") from None
            if send.returncode:
                raise CaptureError(f"the senders failed: {err.strip().splitlines()[-1] if err.strip() else send.returncode}")
            sender = json.loads(out.strip().splitlines()[-1])
            time.sleep(0.2)  # the last packets reach tcpdump
            _stop(dump, signal.SIGINT)  # tcpdump flushes and prints its counts
            counts = dump.stderr.read()
        finally:
            for proc in reversed(procs):
                _stop(proc)
    captured = _count(counts, "packets captured")
    dropped = _count(counts, "packets dropped by kernel")
    reordered, back = sort_pcap(path)
    return CaptureResult(path, duration_s, rate_bps, load_bps, sender, captured, dropped, reordered, back)


def _count(text: str, what: str) -> int:
    for line in text.splitlines():
        if what in line:
            return int(line.split()[0])
    return 0


# --- reading a capture ---------------------------------------------------------------


def _read_records(path: Path) -> tuple[bytes, list[tuple[int, int, int, int]]]:
    """A classic pcap's bytes and its records (:func:`alphaqos.flows.pcap.
    pcap_records`: link type, stamp in ns, start, end); ValueError naming
    the file when it is not one or is cut short."""
    from .flows.pcap import pcap_records

    data = path.read_bytes()
    problems: list = []
    records = list(pcap_records(data, problems))
    if problems:
        raise ValueError(f"{path}: {problems[0].detail}")
    return data, records


def sort_pcap(path: str | Path) -> tuple[int, int]:
    """Put a capture's records in time order, in place (stable). tcpdump
    stamps packets as the kernel hands them over, per CPU, so a stamp can be
    a few microseconds before the previous record's; the engine reads a
    trace only in time order. Returns how many records stepped back and
    the largest step back in ns."""
    path = Path(path)
    data, records = _read_records(path)
    back, largest, last = 0, 0, 0
    for _, stamp, _, _ in records:
        if stamp < last:
            back += 1
            largest = max(largest, last - stamp)
        last = max(last, stamp)
    if back:
        records.sort(key=lambda r: r[1])
        staging = path.with_name(f".{path.name}.sorting")
        staging.write_bytes(data[:24] + b"".join(data[start:end] for _, _, start, end in records))
        staging.replace(path)
    return back, largest


def flow_bytes(path: str | Path) -> dict[tuple[str, str, int, int, int], int]:
    """IP bytes per 5-tuple (src, dst, sport, dport, proto) of the IPv4
    packets of a pcap (as tcpdump writes on a veth), from the IP total
    length, in the order the flows first appear."""
    from .flows.pcap import network_header

    path = Path(path)
    data, records = _read_records(path)
    out: dict[tuple[str, str, int, int, int], int] = {}
    for link, _, start, end in records:
        frame = data[start + 16 : end]
        found = network_header(link, frame, [])
        if found is None or found[0] != 0x0800 or len(frame) < found[1] + 20:
            continue
        ip = frame[found[1] :]
        ihl = (ip[0] & 0x0F) * 4
        size, proto = struct.unpack("!H", ip[2:4])[0], ip[9]
        sport, dport = struct.unpack("!HH", ip[ihl : ihl + 4]) if len(ip) >= ihl + 4 else (0, 0)
        key = (".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20])), sport, dport, proto)
        out[key] = out.get(key, 0) + size
    return out


def hill_tail_index(sizes: list[int], k: int) -> float:
    """Hill's estimator of the tail index from the ``k`` largest of
    ``sizes`` (B. M. Hill, "A Simple General Approach to Inference About
    the Tail of a Distribution", Ann. Statist. 1975): k / sum(ln(x_i / x_(k+1)))."""
    top = sorted(sizes, reverse=True)[: k + 1]
    return k / sum(math.log(x / top[k]) for x in top[:k])


# --- the two ends (run in the namespaces) ---------------------------------------------------


def _serve(address: str, base_port: int, ports: int) -> None:
    """Accept on ``ports`` ports; read each connection's 8-byte length and
    that many bytes, then close."""
    import selectors
    import socket

    sel = selectors.DefaultSelector()
    for port in range(base_port, base_port + ports):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((address, port))
        ls.listen(4096)
        ls.setblocking(False)
        sel.register(ls, selectors.EVENT_READ, None)
    print("ready", flush=True)
    buf = bytearray(1 << 16)
    while True:
        for key, _ in sel.select():
            if key.data is None:
                with contextlib.suppress(BlockingIOError):
                    conn, _ = key.fileobj.accept()
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ, [None, 0, b""])
                continue
            conn, state = key.fileobj, key.data
            try:
                n = conn.recv_into(buf)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                n = 0
            if n and state[0] is None:
                state[2] += bytes(buf[: min(n, 8 - len(state[2]))])
                if len(state[2]) == 8:
                    state[0] = struct.unpack("!Q", state[2])[0] + 8
            state[1] += n
            if n == 0 or (state[0] is not None and state[1] >= state[0]):
                sel.unregister(conn)
                conn.close()


def _send(plan: dict[str, Any]) -> None:
    """Open-loop transfers as the module doc says; print a JSON summary."""
    import resource
    import selectors
    import socket

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rng = random.Random(plan["seed"])
    duration, ports = plan["duration_s"], plan["ports"]
    long_bytes = plan["long_flows"] * plan["long_size"]
    short_load = max(plan["load_bps"] - long_bytes * 8 / duration, 0.3 * plan["load_bps"])
    mean = truncated_pareto_mean(plan["shape"], plan["mean_size"], plan["max_size"])
    rate = short_load / 8 / mean  # transfer starts per second
    starts, t = [], rng.expovariate(rate)
    while t < duration:
        starts.append(t)
        t += rng.expovariate(rate)
    sizes = pareto_sizes(rng, len(starts), shape=plan["shape"], mean=plan["mean_size"], max_size=plan["max_size"])
    schedule = sorted([*zip(starts, sizes), *((duration * (i + 0.5) / max(plan["long_flows"], 1), plan["long_size"])
                                              for i in range(plan["long_flows"]))])  # fmt: skip
    payload = memoryview(bytes(1 << 20))
    sel = selectors.DefaultSelector()
    stats = {"started": 0, "completed": 0, "failed": 0, "bytes_written": 0, "offered_bytes": sum(s for _, s in schedule),
             "planned": len(schedule), "late_starts_s_max": 0.0}  # fmt: skip
    t0 = time.monotonic()
    i = 0
    while True:
        now = time.monotonic() - t0
        while i < len(schedule) and schedule[i][0] <= now:
            start, size = schedule[i]
            i += 1
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect_ex((plan["dst"], plan["base_port"] + rng.randrange(ports)))
            except OSError:
                stats["failed"] += 1
                s.close()
                continue
            stats["started"] += 1
            stats["late_starts_s_max"] = max(stats["late_starts_s_max"], now - start)
            first = min(size, len(payload) - 8)  # the length and the payload's start in one write
            sel.register(s, selectors.EVENT_WRITE, [struct.pack("!Q", size) + bytes(first), size - first])
        if now >= duration:
            break
        timeout = 0.05 if i == len(schedule) else max(0.0, min(0.05, schedule[i][0] - now))
        for key, mask in sel.select(timeout=timeout):
            s, state = key.fileobj, key.data
            try:
                if mask & selectors.EVENT_WRITE:
                    while state[0] or state[1]:
                        chunk = state[0] or payload[: min(state[1], len(payload))]
                        n = s.send(chunk)
                        stats["bytes_written"] += n
                        if state[0]:
                            state[0] = state[0][n:]
                        else:
                            state[1] -= n
                    sel.modify(s, selectors.EVENT_READ, state)
                elif not s.recv(4096):  # the receiver closed: it has it all
                    stats["completed"] += 1
                    sel.unregister(s)
                    s.close()
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                stats["failed"] += 1
                sel.unregister(s)
                s.close()
    stats["unfinished"] = len(sel.get_map())  # cut at the end of the window, as a trace's are
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    print(json.dumps(stats), flush=True)


def _main(argv: list[str]) -> None:
    if argv[0] == "serve":
        _serve(argv[1], int(argv[2]), int(argv[3]))
    elif argv[0] == "send":
        _send(json.loads(argv[1]))
    else:
        raise SystemExit("usage: capture.py serve ADDRESS BASE_PORT PORTS | send PLAN_JSON")


if __name__ == "__main__":
    _main(sys.argv[1:])
