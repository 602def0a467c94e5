"""The circuit emulator from Python: ``alphaqos emulate``.

``alphaqos emulate SCENARIO --link A-B[-C...] --ifaces [NS:]IF,[NS:]IF
[--duration D] --out DIR``

puts the path the scenario gives between nodes A, B (, C ...) between two
real interfaces: frames received on the first interface leave on the
second as if they had crossed the scenario's links from A to the last
node, and the other way round. The emulator is the workspace binary
``alphaqos-emu`` (``crates/alphaqos-emu``), which runs the engine's own
filters, policers and disciplines on the wall clock; this module turns the
scenario into its configuration (:func:`emu_config`), runs it
(:class:`Emulator`) and writes a run directory whose tables carry the
simulator's names (:data:`SIM_TABLES`: ``queue``, ``queue_summary``,
``filter``, in seconds as :mod:`alphaqos.results` converts them), beside
the emulator's own (``emu_flows``, ``emu_flow_series``, ``emu_timing``,
``emu_hops``), so that an emulated run is read with the same tools as a
simulated one.

The path (as the simulator forwards)
    Each consecutive pair of nodes is a link of the scenario: a *hop* with
    the link's rate, delay, MTU, framing overhead and the egress queue of
    the node it leaves (``queue_ab`` or ``queue_ba``). A router applies
    its firewall filter to every packet it forwards, so a hop leaving a
    router starts with that router's filter, and a router at the far end
    of the path (which forwards onto the real interface) filters there
    too. The hosts at the two ends are real: give the path from the first
    node past the hosts' own interfaces (``--link SW-RTR-RCV``: the
    sender's NIC is its real veth).

Flows of different RTTs
    ``emu_config(..., flow_delays=[({"src": "10.10.200.21/32"}, 15_000_000)])``
    delays the packets of the flows a filter term's fields select by a
    constant before the path's first hop, both ways (a sender further
    away on an access link of its own); :meth:`Bench.add_sender` gives the
    sender namespace a second address for such flows.

Timing
    The emulator runs under SCHED_FIFO (priority 10) unless
    ``--no-realtime``: it sleeps in ppoll(2) between events and spins only
    within 60 µs of one, so it takes little CPU, but on a machine whose
    cores are shared it is otherwise preempted for milliseconds.
    ``summary.json`` gives, per direction, the achieved rate on frames
    that left back to back at the bottleneck against the configured rate,
    and the error of the delay (how late each frame was handed back to the
    kernel after its ideal departure): p50, p99, max.

Measured here (2 shared cores, load average 6-9 from other work; one TCP
flow through one hop, 18 ms delay, 8 MB FIFO, 6-8 s): at 200 Mbit/s the
achieved rate is 200.01 Mbit/s, delay error p50 24 µs, p99 74 µs, max
1.3 ms; at 500 Mbit/s 500.3 Mbit/s, p50 16 µs, p99 77 µs, max 1.3 ms; at
1 Gbit/s the rate holds (983 Mbit/s back to back, 906-919 Mbit/s of TCP)
with p50 2-14 µs, but p99 is 42-44 ms, max 53 ms: the emulator, the two
TCP stacks and the other work do not fit two cores, and the emulator is
stopped for tens of milliseconds at a time. The 200 µs p99 target is met
up to 500 Mbit/s on this machine, not at 1 Gbit/s.

Hosts' offloads
    The emulator must see frames as they would be on the wire, so the
    hosts' interfaces into it send without segmentation or checksum
    offload (a veth would otherwise hand over 64 KB TSO segments with
    checksums to fill in): :func:`wire_like` turns them off with the
    ethtool ioctl (ETHTOOL_STXCSUM, ETHTOOL_SSG, ETHTOOL_STSO,
    ETHTOOL_SGSO, ETHTOOL_SGRO; include/uapi/linux/ethtool.h).

Errors (one line, exit status 2, nothing left behind): an unknown node or
a pair of nodes without a link, an interface or namespace that does not
exist, no permission for raw sockets, a path the emulator cannot run in
real time (it names the hop and why).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from . import columns as col
from . import netns
from .provision.shape import ethtool
from .provision.shape import netns as enter_netns

__all__ = ["EmuError", "Emulator", "emu_binary", "emu_config", "save_run", "wire_like"]

#: The tables the emulator writes under the simulator's names and columns.
SIM_TABLES = ("queue", "queue_summary", "filter")
EMU_TABLES = ("emu_flows", "emu_flow_series", "emu_timing", "emu_hops", "run")
READY_TIMEOUT_S = 10


class EmuError(Exception):
    """Bad input or a refusal (one line)."""


def workspace_binary(name: str, env: str) -> Path | None:
    """A native binary of this workspace: ``$ENV``, the workspace's release
    build (``target/release/NAME``), or one on PATH; None if none runs."""
    given = os.environ.get(env)
    candidates = [Path(given)] if given else []
    candidates.append(Path(__file__).resolve().parents[2] / "target" / "release" / name)
    found = shutil.which(name)
    if found:
        candidates.append(Path(found))
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def emu_binary() -> Path:
    """The ``alphaqos-emu`` binary (:func:`workspace_binary`)."""
    found = workspace_binary("alphaqos-emu", "ALPHAQOS_EMU")
    if found is None:
        raise EmuError("the emulator alphaqos-emu is not built: run `make build` (cargo build --release -p alphaqos-emu)")
    return found


# --- the configuration -----------------------------------------------------------


def emu_config(engine: dict[str, Any], path: list[str], ifaces: list[tuple[str | None, str]], *,
               duration_ns: int = 0, sample_interval_ns: int | None = None, spin: bool = False,
               realtime: bool = True, lag_ns: int = 0, flow_delays: list[tuple[dict[str, Any], int]] = ()) -> dict[str, Any]:  # fmt: skip
    """The emulator's configuration for ``path`` (node names) of the
    resolved engine configuration ``engine``, between ``ifaces`` ((netns,
    name) of the interface at the path's first node, then its last);
    ``lag_ns``: how far its hops run behind the wall clock, taken off the
    longest delay of each direction (``crates/alphaqos-emu``: frames whose
    receive the kernel defers by less still enter at their time stamp);
    ``flow_delays``: (match, one-way delay in ns) of flows from a sender
    further away, the match a filter term's fields as the path's first
    node sees that sender's packets (``{"src": "10.0.0.2/32"}``): its
    packets wait that long before the first hop, and the replies to it
    (the match's source and destination swapped) before the first hop
    back. Flows of different RTTs through one bottleneck."""
    nodes = {n["name"]: n for n in engine["nodes"]}
    if len(path) < 2:
        raise EmuError(f"--link: give at least two nodes joined by '-', got {'-'.join(path)!r}")
    for name in path:
        if name not in nodes:
            raise EmuError(f"--link: no node {name!r} in the scenario (nodes: {', '.join(nodes)})")
    filters: list[dict[str, Any]] = []
    index: dict[str, int] = {}

    def filter_of(node: str) -> int | None:
        n = nodes[node]
        if not n.get("router") or not n.get("filter"):
            return None
        if node not in index:
            index[node] = len(filters)
            filters.append({"node": node, "terms": n["filter"]})
        return index[node]

    def hops(order: list[str]) -> list[dict[str, Any]]:
        out = []
        for a, b in zip(order, order[1:]):
            link = next((lk for lk in engine["links"] if (lk["a"], lk["b"]) in ((a, b), (b, a))), None)
            if link is None:
                raise EmuError(f"--link: the scenario has no link between {a!r} and {b!r}")
            forward = link["a"] == a
            out.append({
                "name": f"{a}->{b}", "filter": filter_of(a),
                "queue": link.get("queue_ab" if forward else "queue_ba") or {"fifo": {"limit_pkts": 1000}},
                "rate_bps": link["rate_bps"], "delay_ns": link["delay_ns"],
                "mtu_bytes": link["mtu_bytes"], "overhead_bytes": link["overhead_bytes"],
            })  # fmt: skip
        return out

    back = list(reversed(path))
    swap = {"src": "dst", "dst": "src", "src_port": "dst_port", "dst_port": "src_port"}
    forward_delays, back_delays = [], []
    for i, (match, delay_ns) in enumerate(flow_delays):
        name = f"flow-delay-{i}"
        forward_delays.append({"match": {"name": name, **match}, "delay_ns": int(delay_ns)})
        back_delays.append({"match": {"name": name, **{swap.get(k, k): v for k, v in match.items()}}, "delay_ns": int(delay_ns)})
    config = {
        "seed": engine.get("seed", 1),
        "duration_ns": duration_ns,
        "sample_interval_ns": sample_interval_ns or engine.get("metric_interval_ns", 100_000_000),
        "spin": spin,
        "lag_ns": lag_ns,
        # SCHED_FIFO: on a loaded machine, the difference between a delay
        # error of milliseconds and of microseconds (see the module doc).
        "realtime": realtime,
        "ifaces": [{"netns": ns, "name": name} for ns, name in ifaces],
        "directions": [
            {"name": f"{path[0]}->{path[-1]}", "rx": 0, "tx": 1, "hops": hops(path), "exit_filter": filter_of(path[-1]),
             "flow_delays": forward_delays},
            {"name": f"{back[0]}->{back[-1]}", "rx": 1, "tx": 0, "hops": hops(back), "exit_filter": filter_of(back[-1]),
             "flow_delays": back_delays},
        ],
    }
    config["filters"] = filters
    return config


# --- running it ----------------------------------------------------------------


@dataclass
class Emulator:
    """A running emulator (a context manager): started with its
    configuration, stopped (SIGTERM) at the end of the block or by
    :meth:`stop`, which returns its tables."""

    config: dict[str, Any]
    tables: dict[str, dict[str, list]] = field(default_factory=dict)
    _proc: subprocess.Popen | None = None
    _dir: Path | None = None

    def __enter__(self) -> Emulator:
        self._dir = Path(tempfile.mkdtemp(prefix="alphaqos-emu-"))
        (self._dir / "config.json").write_text(json.dumps(self.config))
        self._proc = subprocess.Popen(
            [str(emu_binary()), str(self._dir / "config.json"), "--out", str(self._dir / "results.json")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        line = self._proc.stdout.readline()
        if line.strip() != "ready":
            err = self._proc.stderr.read().strip()
            self._proc.wait()
            self._cleanup()
            raise EmuError(err.removeprefix("alphaqos-emu: error: ") or f"the emulator stopped before it was ready ({line!r})")
        return self

    def stop(self) -> dict[str, dict[str, list]]:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        if self._proc is not None:
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            err = self._proc.stderr.read().strip()
            results = self._dir / "results.json"
            if results.is_file():
                self.tables = json.loads(results.read_text())
            elif err:
                self._cleanup()
                raise EmuError(err.removeprefix("alphaqos-emu: error: "))
            self._proc = None
        self._cleanup()
        return self.tables

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            with contextlib.suppress(EmuError):
                self.stop()

    def _cleanup(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def timing(tables: dict[str, dict[str, list]]) -> list[dict[str, Any]]:
    """Per direction: frames sent, the delay error p50/p99/max (s), the
    configured and achieved rates (bit/s)."""
    t = tables.get("emu_timing") or {}
    out = []
    for i, name in enumerate(t.get("direction", [])):
        ns = {k: t[f"delay_error_{k}_ns"][i] for k in ("p50", "p99", "max")}
        out.append({
            "direction": name, "sent_pkts": t["sent_pkts"][i],
            **{f"delay_error_{k}_s": None if v is None else v / 1e9 for k, v in ns.items()},
            "configured_delay_s": t["configured_delay_ns"][i] / 1e9,
            "configured_rate_bps": t["configured_rate_bps"][i], "achieved_rate_bps": t["achieved_rate_bps"][i],
        })  # fmt: skip
    return out


def save_run(tables: dict[str, dict[str, list]], directory: Path, manifest: dict[str, Any]) -> None:
    """Write the run directory: the simulator's tables as
    :mod:`alphaqos.results` writes them, the emulator's own, and
    ``summary.json`` (timing and counters)."""
    from .results import _frame

    directory.mkdir(parents=True, exist_ok=True)
    for name in SIM_TABLES:
        _frame(name, tables.get(name)).write_parquet(directory / f"{name}.parquet")
    for name in EMU_TABLES:
        table = tables.get(name) or {}
        frame = pl.DataFrame({k.removesuffix(col.NS_SUFFIX): _seconds(k, v) for k, v in table.items()})
        frame.write_parquet(directory / f"{name}.parquet")
    run = tables.get("run") or {}
    summary = {
        "duration_s": (run.get("sim_time_ns") or [0])[0] / 1e9,
        "rx_frames": (run.get("rx_frames") or [0])[0],
        "socket_drops": (run.get("socket_drops") or [0])[0],
        "timing": timing(tables),
    }
    (directory / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _seconds(name: str, values: list) -> pl.Series:
    if name.endswith(col.NS_SUFFIX):
        return pl.Series(name.removesuffix(col.NS_SUFFIX), [None if v is None else v / 1e9 for v in values], dtype=pl.Float64)
    return pl.Series(name, values)


# --- the hosts' interfaces -------------------------------------------------------

_ETHTOOL = {"txcsum": 0x17, "sg": 0x19, "tso": 0x1F, "gso": 0x24, "gro": 0x2C}


def wire_like(device: str, netns_name: str | None = None) -> None:
    """Turn off checksum offload, scatter-gather, TSO, GSO and GRO on
    ``device``, so that what it sends is what a wire would carry."""
    with enter_netns(netns_name):
        for feature, cmd in _ETHTOOL.items():
            try:
                ethtool(device, bytearray(struct.pack("II", cmd, 0)))  # struct ethtool_value, data 0: off
            except OSError as exc:
                if feature in ("txcsum", "tso", "gso"):
                    raise EmuError(f"{device}: cannot turn {feature} off: {exc.strerror}") from None


# --- namespaces for a bench: sender | emulator | receiver -------------------------


@dataclass
class Bench:
    """Three namespaces: ``snd`` (``s0``, :attr:`snd_ip`), ``emu``
    (``e0`` and ``e1``, no addresses) and ``rcv`` (``r0``, :attr:`rcv_ip`),
    joined by the veth pairs s0-e0 and e1-r0; the emulator forwards e0 <-> e1."""

    snd: str
    emu: str
    rcv: str
    snd_ip: str = "10.10.200.20"
    rcv_ip: str = "10.10.200.10"

    @property
    def ifaces(self) -> list[tuple[str, str]]:
        return [(self.emu, "e0"), (self.emu, "e1")]

    def run(self, ns: str, *argv: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([*netns.exec_argv(ns), *argv], capture_output=True, text=True, **kw)

    def add_sender(self, ip: str) -> None:
        """A second sender address on ``s0`` (same /24), known to the
        receiver up front: a flow bound to it can be told apart on the path
        (:func:`emu_config`'s ``flow_delays``)."""
        try:
            netns.address(self.snd, "s0", f"{ip}/24")
            netns.ip("-n", self.rcv, "neigh", "replace", ip, "lladdr", netns.mac(self.snd, "s0"), "dev", "r0", "nud", "permanent")
        except netns.NetnsError as exc:
            raise EmuError(str(exc)) from None


def _mac(ns: str, dev: str) -> str:
    try:
        return netns.mac(ns, dev)
    except netns.NetnsError as exc:
        raise EmuError(str(exc)) from None


@contextlib.contextmanager
def bench(prefix: str = "aqemu", *, mtu: int = 1500) -> Iterator[Bench]:
    """Make the three namespaces of a :class:`Bench` (:func:`alphaqos.netns.
    namespaces`); delete them, with any process left in them, at the end
    (also on failure). EmuError if they cannot be made."""
    try:
        with netns.namespaces(prefix, ("snd", "emu", "rcv")) as (snd, emu, rcv):
            b = Bench(snd, emu, rcv)
            netns.veth(b.snd, "s0", b.emu, "e0")
            netns.veth(b.rcv, "r0", b.emu, "e1")
            for ns, dev, addr in ((b.snd, "s0", b.snd_ip), (b.rcv, "r0", b.rcv_ip)):
                netns.address(ns, dev, f"{addr}/24")
                netns.ip("-n", ns, "link", "set", dev, "mtu", str(mtu))
            netns.up(b.snd, "s0")
            netns.up(b.emu, "e0", "e1")
            netns.up(b.rcv, "r0")
            for ns, dev in ((b.snd, "s0"), (b.emu, "e0"), (b.emu, "e1"), (b.rcv, "r0")):
                wire_like(dev, ns)
            # Neighbours known up front: no packet waits (or is dropped) for ARP across the delay.
            for ns, dev, peer_ns, peer_dev, peer_ip in ((b.snd, "s0", b.rcv, "r0", b.rcv_ip), (b.rcv, "r0", b.snd, "s0", b.snd_ip)):
                netns.ip("-n", ns, "neigh", "replace", peer_ip, "lladdr", netns.mac(peer_ns, peer_dev), "dev", dev, "nud", "permanent")
            subprocess.run([*netns.exec_argv(b.emu), "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], capture_output=True)
            yield b
    except netns.NetnsError as exc:
        raise EmuError(str(exc)) from None


def wait_for(predicate, timeout_s: float, step_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step_s)
    return predicate()
