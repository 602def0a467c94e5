"""The real kernel as the judge of the engine's TCP (issue 21).

Each case runs the same path twice: in the simulator, once per host
profile of :data:`PROFILES`, and with this machine's Linux TCP (CUBIC,
RACK-TLP, PRR, as the running kernel has them) between network
namespaces through ``alphaqos emulate`` (:func:`alphaqos.emulate.bench`,
:class:`alphaqos.emulate.Emulator`, iperf3 as
:mod:`alphaqos.reproduce.zurawski` runs it). Reported side by side, the
kernel = 1: goodput, retransmissions and the time-sequence (bytes
delivered at the receiver: the simulator's every 100 ms, iperf3's server
intervals). The hosts' interfaces into the
emulator send without TSO/GSO/GRO (:func:`alphaqos.emulate.wire_like`),
so every simulated profile is run with ``tso: 0`` and ``gro: false``.

Usage: ``kernel_crosscheck.py [--cases a,b] [--seconds S] [--out DIR]``
(root; ``make bench`` runs every case). Writes ``DIR/results.json``, one
plot per case (``DIR/CASE.png``) and prints the table that
``docs/kernel-crosscheck.md`` carries.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: The simulated host profiles. "near-linux-6" is the closest combination
#: of single options to Linux 6 the engine has today (no linux-6 profile
#: yet): CUBIC, SACK, D-SACK and undo, the adaptive reordering metric,
#: RACK (RFC 8985) and pacing.
PROFILES: dict[str, dict[str, Any]] = {
    "default": {},
    "linux-2.6.33": {"host_profile": "linux-2.6.33"},
    "near-linux-6": {"sack": True, "rack": True, "pacing": True, "dsack": True, "undo": True, "adaptive_reordering": True},
    "linux-6": {"host_profile": "linux-6"},
}
#: As the emulated hosts send and receive (wire_like: no offloads).
HOST = {"tso": "0B", "gro": False}
#: The simulator's receive window: the kernel's hosts' socket buffers go up
#: to 32 MB (zurawski's TCP_MEM, set by its _socket_buffers).
RWND = "32MiB"
TARGET = 0.15
SND, RCV = "10.10.200.20", "10.10.200.10"


def case_spec(name: str, seconds: float) -> dict[str, Any]:
    """The case's path (rate, RTT, bottleneck queue, router policy) and its flows."""
    bdp = lambda rate, rtt: int(rate / 8 * rtt)  # noqa: E731  bytes
    if name == "droptail":
        rate, rtt = 50_000_000, 0.020
        return {"rate": rate, "rtt": rtt, "queue": {"fifo": {"limit": f"{bdp(rate, rtt)}B"}}, "seconds": seconds}
    if name in ("policer", "policer-htb"):
        rate, rtt = 200_000_000, 0.020
        police = 100_000_000
        return {"rate": rate, "rtt": rtt, "queue": {"fifo": {"limit": f"{bdp(rate, rtt)}B"}}, "seconds": seconds,
                "policy": {"classes": {"be": {"transmit_rate": "100%", "buffer_size": "100%"}},
                           "filter": [{"name": "circuit", "from": {"source": f"{SND}/32"},
                                       "then": {"policer": {"rate": f"{police}bps", "burst": "31KB", "out_of_profile": "discard"}}}]},
                "shape": (police, 90.0, 31_000) if name == "policer-htb" else None}  # fmt: skip
    if name == "scavenger":
        rate, rtt = 100_000_000, 0.020
        return {"rate": rate, "rtt": rtt, "seconds": seconds, "queue": {"policy": "wr"},
                "policy": {"buffer": f"{2 * bdp(rate, rtt)}B", "excess": "proportional",
                           "classes": {"alpha": {"transmit_rate": "95%", "buffer_size": "80%", "priority": "medium-high"},
                                       "scavenger": {"transmit_rate": "5%", "buffer_size": "20%", "priority": "low"}},
                           "filter": [{"name": "alpha", "from": {"source": f"{SND}/32"},
                                       "then": {"class": "alpha", "policer": {"rate": "60Mbps", "burst": "31KB",
                                                                              "out_of_profile": {"class": "scavenger"}}}}]}}  # fmt: skip
    if name == "red":
        rate, rtt = 100_000_000, 0.020
        return {"rate": rate, "rtt": rtt, "seconds": seconds,
                "queue": {"red": {"limit": f"{2 * bdp(rate, rtt)}B", "min_th": 20, "max_th": 120, "max_p": 0.1}}}  # fmt: skip
    if name == "twoflows":
        rate, rtt = 100_000_000, 0.020
        return {"rate": rate, "rtt": rtt, "seconds": seconds, "flows": 2, "queue": {"fifo": {"limit": f"{bdp(rate, rtt)}B"}}}
    raise SystemExit(f"kernel_crosscheck: unknown case {name!r} (cases: {', '.join(CASES)})")


CASES = ("droptail", "policer", "policer-htb", "twoflows", "scavenger", "red")


def scenario(spec: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    """The path snd - rtr - rcv: a 1 Gbit/s host link (the sender's HTB
    class if the case shapes), the bottleneck at ``rtr`` with the RTT's delay."""
    rtr: dict[str, Any] = {"router": True}
    sc: dict[str, Any] = {"name": "kernel-crosscheck", "duration": f"{spec['seconds']:g}s", "seed": 1, "metric_interval": "100ms"}
    if "policy" in spec:
        rtr["policy"] = "wr"
        sc["policies"] = {"wr": spec["policy"]}
    host_link: dict[str, Any] = {"between": ["snd", "rtr"], "rate": "1Gbps", "delay": "0.01ms"}
    if spec.get("shape"):
        plan = shape_plan(spec, None)
        host_link["queues"] = {"snd": {"htb": {
            "classes": {"1:10": {"rate": f"{plan.rate_bps}bps", "burst": f"{plan.burst_bytes}B", "cburst": f"{plan.burst_bytes}B"},
                        "1:20": {"rate": "1Gbps"}},
            "filters": [{"src": f"{SND}/32", "class": "1:10"}], "default": "1:20"}}}  # fmt: skip
    tcp = {"from": "snd", "to": "rcv", "cc": "cubic", "rwnd": RWND, **HOST, **profile}
    sc |= {
        "nodes": {"snd": {"address": SND}, "rtr": rtr, "rcv": {"address": RCV}},
        "links": [host_link, {"between": ["rtr", "rcv"], "rate": f"{spec['rate']}bps", "delay": f"{spec['rtt'] / 2 * 1e3:g}ms",
                              "queues": {"rtr": spec["queue"]}}],
        "flows": [{"name": f"f{i}", "tcp": tcp} for i in range(spec.get("flows", 1))],
    }  # fmt: skip
    return sc


def shape_plan(spec: dict[str, Any], netns: str | None):
    """The class ``alphaqos shape`` applies: ``share`` % of the policer's rate, the burst bounded by its bucket."""
    from alphaqos.provision.shape import parse_match, plan_shape

    rate, share, bucket = spec["shape"]
    return plan_shape("s0", rate, share, match=parse_match(f"src={SND}/32"), policer_burst=bucket, netns_name=netns, gso_max_segs=None)


def simulated(spec: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    """Goodput (bit/s, bytes acked over the run), retransmissions and bytes acked every 100 ms (summed over the flows)."""
    import alphaqos

    tcp = alphaqos.run(scenario(spec, profile)).tables()["tcp"].sort("time")
    per_t: dict[float, int] = {}
    retx = 0
    for flow in tcp["flow"].unique():
        rows = tcp.filter(tcp["flow"] == flow)
        for t, b in zip(rows["time"], rows["bytes_acked"]):
            per_t[round(t, 3)] = per_t.get(round(t, 3), 0) + int(b)
        retx += int(rows["retransmits"].max())
    times = sorted(per_t)
    acked = [per_t[t] for t in times]
    return {"goodput_bps": 8 * acked[-1] / spec["seconds"], "retransmits": retx, "time": times, "bytes": acked}


def kernel(spec: dict[str, Any]) -> dict[str, Any]:
    """The same path with real TCP: namespaces, the emulator, iperf3
    (``-P`` flows), everything removed after, also on failure."""
    from alphaqos.emulate import Emulator, EmuError, bench, emu_config, timing, wait_for
    from alphaqos.provision.shape import apply
    from alphaqos.reproduce.zurawski import _end, _iperf_report, _listening, _socket_buffers, _spawn
    from alphaqos.scenario import load_scenario, resolve

    engine = resolve(load_scenario(scenario({**spec, "shape": None}, {})))  # the shaping is the host's own here
    procs: list[subprocess.Popen] = []
    load0 = os.getloadavg()[0]
    with bench("aqkx") as b:
        try:
            _socket_buffers(b)
            if spec.get("shape"):
                apply(shape_plan(spec, b.snd))
            # The sender's host link is the veth itself: the path the emulator runs starts at rtr.
            with Emulator(emu_config(engine, ["snd", "rtr", "rcv"], b.ifaces, lag_ns=2_000_000)) as emu:
                server = _spawn(procs, b.rcv, "iperf3", "-s", "-1", "-B", b.rcv_ip, "-J", "-i", "0.1")
                if not wait_for(lambda: _listening(b, 5201), 10):
                    raise EmuError("iperf3 -s did not start listening in the receiver's namespace")
                client = b.run(b.snd, "iperf3", "-c", b.rcv_ip, "-t", f"{spec['seconds']:g}", "-i", "0.1", "-J", "-C", "cubic",
                               "-P", str(spec.get("flows", 1)), "--get-server-output", timeout=spec["seconds"] + 60)  # fmt: skip
                tables = emu.stop()
            if client.returncode == 0:
                # Its JSON (which would fill the pipe) is also in the client's
                # --get-server-output: a server that does not exit is only killed.
                try:
                    server.communicate(timeout=20)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            _end(procs)
    report = _iperf_report(client)
    server_intervals = (report.get("server_output_json") or {}).get("intervals") or report["intervals"]
    times, acked, total = [], [], 0
    for iv in server_intervals:
        total += int(iv["sum"]["bytes"])
        times.append(round(iv["sum"]["end"], 3))
        acked.append(total)
    received = report["end"]["sum_received"]
    held = timing(tables)
    return {
        "goodput_bps": 8 * received["bytes"] / spec["seconds"],
        "retransmits": int(report["end"]["sum_sent"].get("retransmits", 0)),
        "time": times, "bytes": acked,
        "delay_error_p99_s": max((t["delay_error_p99_s"] or 0.0) for t in held),
        "load_avg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)],
    }  # fmt: skip


def at(series: dict[str, Any], t: float) -> int:
    """Bytes delivered by time ``t`` (the last sample at or before it; iperf3's
    intervals end a few ms after their nominal time, taken as at it)."""
    out = 0
    for ts, b in zip(series["time"], series["bytes"]):
        if ts > t + 0.05:
            break
        out = b
    return out


def seq_error(k: dict[str, Any], s: dict[str, Any], seconds: float) -> float:
    """The time-sequence's largest gap, simulator against kernel, each
    whole second from 2 s to the last but one (iperf3's server intervals
    end up to a second before the run does), as a share of the kernel's
    bytes then."""
    gaps = [abs(at(s, t) - at(k, t)) / max(1, at(k, t)) for t in range(2, int(seconds))]
    return max(gaps) if gaps else float("nan")


def run_case(name: str, seconds: float) -> dict[str, Any]:
    spec = case_spec(name, seconds)
    out: dict[str, Any] = {"case": name, "spec": {k: v for k, v in spec.items() if k != "policy"}, "kernel": kernel(spec), "sim": {}}
    k = out["kernel"]
    for prof, opts in PROFILES.items():
        s = simulated(spec, opts)
        s["goodput_ratio"] = s["goodput_bps"] / k["goodput_bps"]
        s["retx_ratio"] = s["retransmits"] / k["retransmits"] if k["retransmits"] else None
        s["seq_max_error"] = seq_error(k, s, seconds)
        s["within_target"] = abs(s["goodput_ratio"] - 1) <= TARGET
        out["sim"][prof] = s
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4))
    k = result["kernel"]
    ax.plot(k["time"], [b / 1e6 for b in k["bytes"]], "k-", lw=2, label="kernel (Linux 6.18)")
    for prof, s in result["sim"].items():
        ax.plot(s["time"], [b / 1e6 for b in s["bytes"]], lw=1, label=f"sim {prof} (x{s['goodput_ratio']:.2f})")
    ax.set(xlabel="time (s)", ylabel="bytes delivered (MB)", title=f"kernel cross-check: {result['case']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| case | source | goodput Mbit/s | ratio | retx | retx ratio | time-seq max gap | within 15 % |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        k = r["kernel"]
        lines.append(f"| {r['case']} | kernel | {k['goodput_bps'] / 1e6:.1f} | 1 | {k['retransmits']} | 1 | - | - |")
        for prof, s in r["sim"].items():
            rr = "-" if s["retx_ratio"] is None else f"{s['retx_ratio']:.2f}"
            miss = "yes" if s["within_target"] else f"no ({abs(s['goodput_ratio'] - 1) * 100 - TARGET * 100:.0f} pts over)"
            lines.append(f"| | {prof} | {s['goodput_bps'] / 1e6:.1f} | {s['goodput_ratio']:.2f} | {s['retransmits']} | {rr} | "
                         f"{s['seq_max_error'] * 100:.0f} % | {miss} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--out", type=Path, default=Path("runs/kernel-crosscheck"))
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("kernel_crosscheck: the kernel's runs make network namespaces, which needs root", file=sys.stderr)
        return 2
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        case_spec(c, args.seconds)  # unknown names refused before anything runs
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for c in cases:
        t0 = time.perf_counter()
        r = run_case(c, args.seconds)
        r["wall_time_s"] = round(time.perf_counter() - t0, 1)
        results.append(r)
        plot(r, args.out / f"{c}.png")
        print(f"{c}: kernel {r['kernel']['goodput_bps'] / 1e6:.1f} Mbit/s retx {r['kernel']['retransmits']}, load {r['kernel']['load_avg_1min']}, "
              f"emulator p99 delay error {r['kernel']['delay_error_p99_s'] * 1e3:.2f} ms; "
              + ", ".join(f"{p} x{s['goodput_ratio']:.2f} retx {s['retransmits']}" for p, s in r["sim"].items()), flush=True)  # fmt: skip
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
