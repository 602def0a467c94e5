"""The emulated circuit of the transfer's validation (issue 23), shared by
``tests/test_transfer_emulated.py``, ``tests/test_transfer_bpf.py`` and
``benches/base_crosscheck.py``: ``alphaqos emulate``'s engine between the
three namespaces of :func:`alphaqos.emulate.bench`, a second sender address
(background or a competing flow) on the sender's namespace, and the
deadline-af path of the third source document scaled to a rate the
emulator holds on this machine's two cores.

The path (:func:`af_scenario`): the slides' edge router E marks the base
connection (its source and AF11) green within its reservation and red
beyond (a single-rate policer), everything else red; the core router C1
runs RIO (Clark & Fang's thresholds, as ``alphaqos reproduce deadline-af``
scales them) on the 100 Mbit/s bottleneck, 175 packets (100 Mbit/s x 21 ms);
the access hops run at 1 Gbit/s; 20 ms of propagation round trip (1 + 5 + 4
ms each way). 100 Mbit/s is the slides' 1 Gbit/s bottleneck scaled by ten,
which the emulator holds here with microseconds of delay error (it holds
200-500 Mbit/s on an idle machine; ``alphaqos.emulate``'s doc)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import yaml

from alphaqos.emulate import Bench, Emulator, _mac, bench, emu_config, timing
from alphaqos.reproduce.deadline_af import rio
from alphaqos.reproduce.zurawski import DISTURBED_S
from alphaqos.scenario import load_scenario, resolve

BASE_IP, OTHER_IP, RCV_IP = "10.10.200.20", "10.10.200.21", "10.10.200.10"
BOTTLENECK_BPS = 100_000_000
#: The bottleneck's queue: 100 Mbit/s x 21 ms in 1500 B packets.
QUEUE_PKTS = 175
#: IP bytes per payload byte of a full segment (MSS 1448: 1500 / 1448),
#: the policer's rate over the base connection's payload rate.
WIRE_FACTOR = 1500 / 1448
AF_PATH = ["snd", "E", "C1", "rcv"]
HTB_PATH = ["snd", "rtr", "rcv"]

#: The path of tests/test_transfer_bpf.py, for the emulator (snd-rtr-rcv) and the simulator alike. The
#: reserved class 1:10 carries the base connection (prio 0, rate above the
#: target by the frames' headers), the other class the competing flow.
HTB_SCENARIO = f"""\
name: bpf-base-flow
duration: 4s
seed: 1
nodes:
  snd: {{address: {BASE_IP}}}
  snd2: {{address: {OTHER_IP}}}
  rtr: {{router: true}}
  rcv: {{address: 10.10.200.10}}
links:
  - {{between: [snd, rtr], rate: 10Gbps, delay: 0.01ms}}
  - {{between: [snd2, rtr], rate: 10Gbps, delay: 0.01ms}}
  - between: [rtr, rcv]
    rate: 200Mbps
    delay: 10ms
    queues:
      rtr:
        htb:
          classes:
            "1:1": {{rate: 200Mbps}}
            "1:10": {{parent: "1:1", rate: 110Mbps, ceil: 200Mbps, prio: 0, limit: 1000p}}
            "1:20": {{parent: "1:1", rate: 90Mbps, ceil: 200Mbps, prio: 1, limit: 1000p}}
          filters: [{{src: {BASE_IP}/32, class: "1:10"}}]
          default: "1:20"
flows:
  - {{name: base, tcp: {{from: snd, to: rcv, cc: base_flow, cc_params: {{ctr: 100Mbps}}, rwnd: 16MiB}}}}
  - {{name: other, tcp: {{from: snd2, to: rcv, cc: cubic, rwnd: 16MiB}}}}
"""


def af_scenario(reservation_bps: int, *, background_bps: int = 0, ctr_bps: int | None = None,
                duration_s: float = 8.0, policer_burst: str = "48KB") -> dict[str, Any]:  # fmt: skip
    """The deadline-af path at 100 Mbit/s: the base connection (AF11 from
    BASE_IP) policed at ``reservation_bps`` of payload, red beyond; CBR
    background of ``background_bps`` from OTHER_IP, red; for the
    simulator, a ``base_flow`` connection at ``ctr_bps`` (default: the
    reservation). The policer's bucket (48 KB, 4 ms at the bottleneck)
    takes the bursts a real host's software segmentation makes (about 1 ms
    of the pacing rate per burst)."""
    ctr = ctr_bps or reservation_bps
    sc: dict[str, Any] = {
        "name": "transfer-af", "duration": f"{duration_s:g}s", "seed": 1, "metric_interval": "100ms",
        "nodes": {"snd": {"address": BASE_IP}, "bg": {"address": OTHER_IP}, "rcv": {"address": RCV_IP},
                  "E": {"router": True, "policy": "edge"}, "C1": {"router": True}},
        "policies": {
            "edge": {"classes": {"be": {"transmit_rate": "100%", "buffer_size": "100%"}},
                     "filter": [{"name": "base", "from": {"source": f"{BASE_IP}/32", "dscp": "af11"},
                                 "then": {"policer": {"rate": f"{round(reservation_bps * WIRE_FACTOR)}bps", "burst": policer_burst,
                                                      "out_of_profile": "loss_priority_high"}}},
                                {"name": "out", "from": {}, "then": {"loss_priority": "high"}}]},
            "core": {"buffer": f"{QUEUE_PKTS}p",
                     "classes": {"af": {"transmit_rate": "100%", "buffer_size": "100%", "drop_profile": {"rio": rio(QUEUE_PKTS)}}}},
        },
        "links": [
            {"between": ["snd", "E"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["bg", "E"], "rate": "1Gbps", "delay": "1ms"},
            {"between": ["E", "C1"], "rate": "1Gbps", "delay": "5ms"},
            {"between": ["C1", "rcv"], "rate": f"{BOTTLENECK_BPS}bps", "delay": "4ms", "queues": {"C1": {"policy": "core"}}},
        ],
        "flows": [{"name": "base", "dscp": "af11",
                   "tcp": {"from": "snd", "to": "rcv", "cc": "base_flow", "cc_params": {"ctr": f"{ctr}bps"}, "rwnd": "16MiB"}}],
    }  # fmt: skip
    if background_bps:
        sc["flows"].append({"name": "background", "udp": {"from": "bg", "to": "rcv", "rate": f"{background_bps}bps", "size": "1500B"}})
    return sc


def engine_of(scenario: dict[str, Any] | str) -> dict[str, Any]:
    raw = yaml.safe_load(scenario) if isinstance(scenario, str) else scenario
    return resolve(load_scenario(raw))


def held_up_s(tables: dict[str, dict[str, list]]) -> float:
    """How long the emulator was held up at most: the largest delay error of
    either direction (s); above :data:`DISTURBED_S` (zurawski's threshold)
    the run did not emulate the circuit."""
    return max([t["delay_error_max_s"] or 0.0 for t in timing(tables)] or [0.0])


def p99_late_s(tables: dict[str, dict[str, list]]) -> float:
    return max([t["delay_error_p99_s"] or 0.0 for t in timing(tables)] or [0.0])


def background_bps(tables: dict[str, dict[str, list]], seconds: float) -> tuple[float, float]:
    """The UDP background's rate into the emulator and out of it (bit/s over
    ``seconds``), from its per-flow counters (``emu_flows``)."""
    f = tables.get("emu_flows") or {}
    rows = [i for i, name in enumerate(f.get("flow", [])) if name.startswith(f"{OTHER_IP}:") and name.endswith("/17")]  # UDP from OTHER_IP
    return tuple(8 * sum(f[k][i] for i in rows) / seconds for k in ("rx_bytes", "tx_bytes"))  # type: ignore[return-value]


@contextlib.contextmanager
def emulated_path(scenario: dict[str, Any] | str, path: list[str], *, prefix: str = "aqxf",
                  buffers: int | None = 4_194_304) -> Iterator[tuple[Bench, Emulator]]:  # fmt: skip
    """The namespaces (sender with BASE_IP and OTHER_IP, receiver with
    RCV_IP) and the emulator running ``path`` of ``scenario``; yields
    (bench, emulator). ``buffers``: the hosts' default socket buffers
    (tcp_rmem/tcp_wmem), 4 MB unless None. The caller stops its processes;
    the emulator is stopped and the namespaces deleted here, also on failure."""
    with bench(prefix) as b:
        if buffers:
            for ns in (b.snd, b.rcv):
                for key in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"):
                    b.run(ns, "sysctl", "-qw", f"{key}=4096 {buffers} 16777216", check=True)
        subprocess.run(["ip", "-n", b.snd, "addr", "add", f"{OTHER_IP}/24", "dev", "s0"], check=True)
        subprocess.run(["ip", "-n", b.rcv, "neigh", "replace", OTHER_IP, "lladdr", _mac(b.snd, "s0"), "dev", "r0", "nud", "permanent"], check=True)
        with Emulator(emu_config(engine_of(scenario), path, b.ifaces)) as emu:
            yield b, emu


def base_run(b: Bench, helper: str, *, target_bps: int, seconds: float, pace: bool, cc: str = "alphaqos_base", changes: tuple[tuple[float, int], ...] = (),
             tos: int | None = None, port: int = 5001, beside: list[str] | None = None) -> list[dict]:  # fmt: skip
    """The base connection (``alphaqos-bpfcc send`` with alphaqos_base from
    BASE_IP, ``pace``: also SO_MAX_PACING_RATE at the target) to a sink in
    the receiver's namespace for ``seconds``: its samples every 100 ms.
    (nsenter --net keeps the mount namespace: ``ip netns exec`` remounts
    /sys, hiding the controller's pinned map.) ``beside``: a command run
    in the sender's namespace once the sink listens (a competing flow to
    the same sink), waited for after the base connection.)"""
    run = lambda ns: ["nsenter", f"--net=/run/netns/{ns}"]  # noqa: E731
    sink = subprocess.Popen([*run(b.rcv), helper, "sink", f"{b.rcv_ip}:{port}"], stdout=subprocess.PIPE, text=True)
    other = None
    try:
        assert sink.stdout.readline().startswith("listening")
        if beside:
            other = subprocess.Popen([*run(b.snd), *beside], stdout=subprocess.DEVNULL)
        argv = [*run(b.snd), helper, "send", f"{b.rcv_ip}:{port}", "--bind", BASE_IP, "--seconds", str(seconds), "--target", str(target_bps), "--cc", cc]
        argv += ["--pace"] if pace else []
        argv += ["--tos", str(tos)] if tos is not None else []
        for t, bps in changes:
            argv += ["--change", f"{t}:{bps}"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
        assert done.returncode == 0, done.stderr
        if other is not None:
            other.wait(timeout=30)
        return [json.loads(x) for x in done.stdout.splitlines()]
    finally:
        if other is not None and other.poll() is None:
            other.kill()
            other.wait()
        sink.kill()
        sink.wait()


def steady_rate(lines: list[dict], t0: float, t1: float, key: str = "bytes_acked") -> float:
    """Mean rate between the first samples at or after t0 and t1, bit/s."""
    a = next(x for x in lines if x["t"] >= t0)
    b = next((x for x in lines if x["t"] >= t1), lines[-1])
    return 8 * (b[key] - a[key]) / (b["t"] - a["t"])


def in_flight(lines: list[dict], t0: float, t1: float) -> float:
    """Mean of packets in flight over cwnd between t0 and t1."""
    steady = [x for x in lines if t0 <= x["t"] <= t1]
    return sum(x["unacked"] / x["snd_cwnd"] for x in steady) / len(steady)


@contextlib.contextmanager
def udp_background(b: Bench, rate_bps: int, seconds: float, port: int = 5201) -> Iterator[None]:
    """Constant-rate UDP from OTHER_IP to the receiver (iperf3 -u, 1472 B
    datagrams, 1500 B packets); stopped at the end, also on failure."""
    from _system import require_debian_package

    require_debian_package("iperf3", binary="iperf3")
    run = lambda ns: ["nsenter", f"--net=/run/netns/{ns}"]  # noqa: E731
    procs = [subprocess.Popen([*run(b.rcv), "iperf3", "-s", "-1", "-B", b.rcv_ip, "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]  # fmt: skip
    try:
        time.sleep(0.3)
        procs.append(subprocess.Popen([*run(b.snd), "iperf3", "-u", "-c", b.rcv_ip, "-p", str(port), "-B", OTHER_IP, "-b", str(rate_bps),
                                       "-l", "1472", "-t", f"{seconds:g}", "--pacing-timer", "1000"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
        yield
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


__all__ = ["background_bps", "HTB_PATH", "HTB_SCENARIO", "base_run", "in_flight", "steady_rate", "udp_background", "AF_PATH", "BASE_IP", "DISTURBED_S", "OTHER_IP", "RCV_IP", "af_scenario", "emulated_path", "engine_of", "held_up_s", "p99_late_s"]
