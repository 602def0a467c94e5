"""The base connection on the real kernel against the simulator (issue 23,
"Validation"; docs/transfer-bpf.md, "Simulator against kernel").

The same path, emulated between network namespaces (``alphaqos emulate``'s
engine) for the kernel and simulated for ``base_flow``:

- ``af``: the third source document's path at 100 Mbit/s
  (``tests/_base_path.py``, ``af_scenario``: edge policer marking the base
  connection's excess red, RIO at the core, 60 Mbit/s of constant-rate
  background marked red); the base connection at a 50 Mbit/s target (the
  slides' 500 of 1000 Mbit/s, scaled), steady part 1.5-8 s.
- ``htb``: tests/test_transfer_bpf.py's path (200 Mbit/s, HTB, the base
  connection in the reserved class beside an unpaced CUBIC flow); 100
  Mbit/s, then 60 from 4 s; steady parts 1.5-4 s and 5.5-8 s.

The kernel's base connection is ``alphaqos-bpfcc send`` with alphaqos_base,
paced at the target (SO_MAX_PACING_RATE), as the data mover runs it
(``--no-pace``: the controller alone). Root, the built BPF object, the
emulator and iperf3 are needed. Prints one line per run and the table of
docs/transfer-bpf.md:

    sudo .venv/bin/python benches/base_crosscheck.py [--runs 3] [--paths af,htb] [--no-pace] [--obj FILE] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests"))

import yaml  # noqa: E402
from _base_path import (  # noqa: E402
    AF_PATH, HTB_PATH, background_bps, HTB_SCENARIO, OTHER_IP, af_scenario, base_run, emulated_path, held_up_s, in_flight, p99_late_s,
    steady_rate, udp_background,
)  # fmt: skip

import alphaqos  # noqa: E402
from alphaqos.transfer import bpf  # noqa: E402

HELPER = ROOT / "target" / "release" / "alphaqos-bpfcc"
AF_TARGET, AF_BACKGROUND, RUN_S = 50_000_000, 60_000_000, 8.0
HTB_TARGETS, HTB_CHANGE_S = (100_000_000, 60_000_000), 4.0
AF11_TOS = 10 << 2
#: (path, target, t0, t1) of each steady part.
PARTS = {"af": [(AF_TARGET, 1.5, RUN_S)], "htb": [(HTB_TARGETS[0], 1.5, HTB_CHANGE_S), (HTB_TARGETS[1], HTB_CHANGE_S + 1.5, RUN_S)]}


def kernel_run(path: str, pace: bool, cc: str = "alphaqos_base") -> dict:
    helper = str(HELPER)
    if path == "af":
        with emulated_path(af_scenario(AF_TARGET, background_bps=AF_BACKGROUND), AF_PATH) as (b, emu):
            t = time.monotonic()
            with udp_background(b, AF_BACKGROUND, RUN_S + 1):
                lines = base_run(b, helper, target_bps=AF_TARGET, seconds=RUN_S, pace=pace, tos=AF11_TOS, cc=cc)
            bg_s = time.monotonic() - t
            tables = emu.stop()
    else:
        with emulated_path(HTB_SCENARIO, HTB_PATH) as (b, emu):
            other = [helper, "send", f"{b.rcv_ip}:5001", "--cc", "cubic", "--bind", OTHER_IP, "--seconds", str(RUN_S + 0.5), "--interval-ms", "500"]
            lines = base_run(b, helper, target_bps=HTB_TARGETS[0], seconds=RUN_S, pace=pace, changes=((HTB_CHANGE_S, HTB_TARGETS[1]),), beside=other, cc=cc)
            tables = emu.stop()
    last = lines[-1]
    bg = background_bps(tables, bg_s) if path == "af" else (None, None)
    return {"background_in_bps": bg[0], "background_out_bps": bg[1],
        "parts": [{"target_bps": tgt, "t0": t0, "t1": t1, "rate_bps": steady_rate(lines, t0, t1), "in_flight": in_flight(lines, t0, t1),
                   **diagnostics(lines, t0, t1)} for tgt, t0, t1 in PARTS[path]],
        "retrans": last["total_retrans"], "segs": last["data_segs_out"],
        "held_up_s": held_up_s(tables), "p99_late_s": p99_late_s(tables),
        "load": os.getloadavg()[0],
    }  # fmt: skip


def diagnostics(lines: list[dict], t0: float, t1: float) -> dict:
    """Over a steady part: the least unsent bytes in the socket (0: the
    application fell behind), the mean pacing rate the stack used (bit/s),
    the time the receive window and the send buffer limited (share)."""
    steady = [x for x in lines if t0 <= x["t"] <= t1]
    span_us = (steady[-1]["t"] - steady[0]["t"]) * 1e6
    return {"notsent_min": min(x["notsent_bytes"] for x in steady),
            "pacing_bps": 8 * sum(x["pacing_rate"] for x in steady) / len(steady),
            "rwnd_limited": (steady[-1]["rwnd_limited_us"] - steady[0]["rwnd_limited_us"]) / span_us,
            "sndbuf_limited": (steady[-1]["sndbuf_limited_us"] - steady[0]["sndbuf_limited_us"]) / span_us}


def simulated(path: str) -> list[float]:
    out = []
    for tgt, t0, t1 in PARTS[path]:
        if path == "af":
            sc = af_scenario(AF_TARGET, background_bps=AF_BACKGROUND, ctr_bps=tgt, duration_s=t1)
        else:
            sc = yaml.safe_load(HTB_SCENARIO)
            sc["flows"][0]["tcp"]["cc_params"] = {"ctr": f"{tgt}bps"}
            sc["duration"] = f"{t1 - t0 + 1.5:g}s"
            t0, t1 = 1.5, t1 - t0 + 1.5
        tcp = alphaqos.run(sc).tables()["tcp"]
        base = tcp.filter(tcp["flow"] == "base").sort("time")
        rows = base.filter((base["time"] >= t0 - 1e-9) & (base["time"] <= t1 + 1e-9))
        out.append(8 * (rows["bytes_acked"][-1] - rows["bytes_acked"][0]) / (rows["time"][-1] - rows["time"][0]))
    return out


def table(results: dict, sims: dict, pace: bool) -> str:
    rows = ["| path | target | kernel, alphaqos_base" + (" paced" if pace else "") + ": min / median / max (Mbit/s) | runs within 5 % "
            "| simulator, base_flow (Mbit/s) | kernel / simulator: min / median / max | retransmissions |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for path, runs in results.items():
        for k, (tgt, _, _) in enumerate(PARTS[path]):
            rates = [r["parts"][k]["rate_bps"] for r in runs]
            ratios = [x / sims[path][k] for x in rates]
            within = sum(abs(x / tgt - 1) <= 0.05 for x in rates)
            retx = ", ".join(f"{r['retrans']}/{r['segs']}" for r in runs) if k == 0 else "(same runs)"
            rows.append(f"| {path} | {tgt / 1e6:.0f} Mbit/s | {min(rates) / 1e6:.1f} / {statistics.median(rates) / 1e6:.1f} / {max(rates) / 1e6:.1f} "
                        f"| {within} of {len(rates)} | {sims[path][k] / 1e6:.2f} | {min(ratios):.3f} / {statistics.median(ratios):.3f} / {max(ratios):.3f} "
                        f"| {retx} |")  # fmt: skip
    return "\n".join(rows)


def _bg(r: dict) -> str:
    if r["background_in_bps"] is None:
        return ""
    return f"background {r['background_in_bps'] / 1e6:.1f} Mbit/s in, {r['background_out_bps'] / 1e6:.1f} out; "


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--paths", default="af,htb")
    ap.add_argument("--no-pace", action="store_true")
    ap.add_argument("--cc", default="alphaqos_base", help="the base connection's congestion control (e.g. cubic: pacing alone binds)")
    ap.add_argument("--obj", help="the BPF object to register (default: the build's)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("base_crosscheck: needs root (namespaces, a BPF congestion control)", file=sys.stderr)
        return 2
    if args.obj:
        os.environ["ALPHAQOS_BPF_OBJ"] = args.obj
    paths = [p for p in args.paths.split(",") if p]
    if bpf.registered():
        print("base_crosscheck: alphaqos_base is already registered (by another process): not measuring someone else's object", file=sys.stderr)
        return 2
    ok, note = bpf.ensure_loaded()
    if not ok:
        print(f"base_crosscheck: {note}", file=sys.stderr)
        return 2
    results: dict[str, list] = {p: [] for p in paths}
    try:
        for i in range(args.runs):
            for path in paths:
                t = time.monotonic()
                r = kernel_run(path, not args.no_pace, args.cc)
                results[path].append(r)
                parts = "; ".join(f"{p['rate_bps'] / 1e6:.2f} Mbit/s of {p['target_bps'] / 1e6:.0f} (in flight {p['in_flight']:.3f} of cwnd, "
                                  f"pacing {p['pacing_bps'] / 1e6:.1f}, unsent min {p['notsent_min']}, rwnd-limited {p['rwnd_limited']:.3f}, "
                                  f"sndbuf-limited {p['sndbuf_limited']:.3f})" for p in r["parts"])  # fmt: skip
                print(f"run {i + 1} {path}: {parts}; retrans {r['retrans']}/{r['segs']}; {_bg(r)}emulator held up {r['held_up_s'] * 1e3:.2f} ms "
                      f"(p99 {r['p99_late_s'] * 1e3:.2f} ms); load {r['load']:.1f}; {time.monotonic() - t:.0f} s", flush=True)  # fmt: skip
    finally:
        bpf.unload()
    sims = {p: simulated(p) for p in paths}
    print(table(results, sims, not args.no_pace))
    if args.out:
        args.out.write_text(json.dumps({"pace": not args.no_pace, "kernel": results, "simulator": sims}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
