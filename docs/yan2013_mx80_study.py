"""The router study of docs/yan2013-mx80-study.md: each MX80 (Trio) knob of
the junos scheduler alone, and together, over Table I's 3-queue cells at 1
and 3 Gbps of UDP and Table III's two scavenger rows, on the
reproduction's quick timelines and its default host model (the
reproduction's runner: one process per run).

    .venv/bin/python docs/yan2013_mx80_study.py OUT_DIR [--jobs N] [--variants A,B]

writes OUT_DIR/study.json (every run's measurements) and prints the tables
of the study document.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

from alphaqos.reproduce import RunSpec, run_specs
from alphaqos.reproduce import yan2013 as y

CELLS = {
    "T1 (49,50,1) @3": ("3q (49,50,1)", 3.0),
    "T1 (30,50,20) @3": ("3q (30,50,20)", 3.0),
    "T1 (10,30,60) @3": ("3q (10,30,60)", 3.0),
    "T1 (49,50,1) @1": ("3q (49,50,1)", 1.0),
    "T1 (10,30,60) @1": ("3q (10,30,60)", 1.0),
    "T3 policing1": ("3queues+policing1", 3.0),
    "T3 policing2": ("3queues+policing2", 3.0),
}


def _classes(**extra: Any):
    def edit(policy: dict[str, Any]) -> None:
        for c in policy["classes"].values():
            c.update(copy.deepcopy(extra))

    return edit


def _policy(**extra: Any):
    def edit(policy: dict[str, Any]) -> None:
        policy.update(extra)

    return edit


#: Each variant: the edits of the policy (and of the α flow's tcp options).
VARIANTS: dict[str, tuple[list, dict[str, Any]]] = {
    "default": ([], {}),
    "excess proportional": ([_policy(excess="proportional")], {}),
    "meter_window 10us": ([_classes(meter_window="10us")], {}),
    "meter_window 100us": ([_classes(meter_window="100us")], {}),
    "meter_window 1ms": ([_classes(meter_window="1ms")], {}),
    "meter_window 10ms": ([_classes(meter_window="10ms")], {}),
    "meter_window 100ms": ([_classes(meter_window="100ms")], {}),
    "buffer temporal 100ms": ([_classes(buffer_size={"temporal": "100ms"})], {}),
    "buffer temporal 10ms": ([_classes(buffer_size={"temporal": "10ms"})], {}),
    "proportional + window 100us": ([_policy(excess="proportional"), _classes(meter_window="100us")], {}),
    "proportional + linux-2.6.33": ([_policy(excess="proportional")], {"host_profile": "linux-2.6.33"}),
    # What Juniper documents for Trio: proportional excess, 100 ms of
    # guaranteed-rate credit ("Traffic Burst Management on MIC and MPC
    # Interfaces Overview"), 100 ms delay buffers (equal to the percent
    # buffers here).
    "trio documented": ([_policy(excess="proportional"), _classes(meter_window="100ms")], {}),
    "trio documented + linux-2.6.33": ([_policy(excess="proportional"), _classes(meter_window="100ms")], {"host_profile": "linux-2.6.33"}),
    "linux-2.6.33": ([], {"host_profile": "linux-2.6.33"}),
    "window 100us + linux-2.6.33": ([_classes(meter_window="100us")], {"host_profile": "linux-2.6.33"}),
    "window 1ms + linux-2.6.33": ([_classes(meter_window="1ms")], {"host_profile": "linux-2.6.33"}),
}


def specs(names: list[str]) -> list[RunSpec]:
    t = y.EXP2_TIMELINE[True]
    out = []
    for cell, (config, rate) in CELLS.items():
        for variant in names:
            edits, tcp = VARIANTS[variant]
            policy = copy.deepcopy(y.EXP2_CONFIGS.get(config) or y.EXP3_CONFIGS[config])
            for edit in edits:
                edit(policy)
            scenario = y.testbed(f"mx80-{y._slug(cell)}-{y._slug(variant)}", policy, rate, t)
            for flow in scenario["flows"]:
                if flow["name"] == "alpha":
                    flow["tcp"].update(tcp)
            window = (t.tcp[0] + y.EXP2_SETTLE[True], t.tcp[1])
            out.append(RunSpec(f"{cell}/{variant}", scenario, {"window": window, "tcp": t.tcp, "cost": t.duration}))
    return out


def paper(config: str) -> float:
    name, rate = CELLS[config]
    return y._paper1(name, rate) if name in y.PAPER_TABLE1 else y.PAPER_TABLE3[name][0]


def tables(measured: dict[str, dict[str, Any]], names: list[str]) -> str:
    head = "| variant | " + " | ".join(CELLS) + " |\n|---|" + "---|" * len(CELLS) + "\n"
    doc = "| **document** | " + " | ".join(f"**{paper(c):g}**" for c in CELLS) + " |\n"
    thr, ooo = [], []
    for v in names:
        cells, counts = [], []
        for c in CELLS:
            m = measured.get(f"{c}/{v}")
            if m is None:
                cells.append("-")
                counts.append("-")
                continue
            g = m["throughput_bps"] / 1e9
            r = g / paper(c)
            cells.append(f"{g:.2f} (×{r:.2f}{' †' if not 0.5 <= r <= 2 else ''})")
            counts.append(f"{m['ooo_arrivals']:,} / {m['ooo_extent_max']} / {m['fast_retransmits']} / {m['egress_lost']:,}")
        thr.append(f"| {v} | " + " | ".join(cells) + " |")
        ooo.append(f"| {v} | " + " | ".join(counts) + " |")
    return head + doc + "\n".join(thr) + "\n\n" + head + "\n".join(ooo) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    a = ap.parse_args()
    names = a.variants.split(",")
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "study.json"
    measured = json.loads(path.read_text()) if path.exists() else {}
    todo = [s for s in specs(names) if s.key not in measured]
    measured |= run_specs("alphaqos.reproduce.yan2013", todo, jobs=a.jobs)
    path.write_text(json.dumps(measured, indent=1, default=str))
    print(tables(measured, [v for v in VARIANTS if any(k.endswith(f"/{v}") for k in measured)]))


if __name__ == "__main__":
    main()
