"""The experiment-2 study of docs/yan2013-exp2-study.md: every host
behaviour of the ``linux-2.6.33`` profile alone, the profile, and the
profile less each one, over Table I's 3-queue cells at 1 and 3 Gbps of UDP
and Table III's two scavenger rows, on the reproduction's quick timelines
(the reproduction's runner: one process per run).

    .venv/bin/python docs/yan2013_exp2_study.py OUT_DIR [--jobs N]

writes OUT_DIR/study.json (every run's measurements) and the figures
docs/img/exp2-study-*.png.

Part 2 (the document's on-off procedure and GRO at the receiver):

    .venv/bin/python docs/yan2013_exp2_study.py onoff OUT_DIR [--full]

writes OUT_DIR/study2.json, run by run.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

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
PROFILE = {"host_profile": "linux-2.6.33"}
ALONE = {
    "tso": {"tso": "64KB"},
    "fack": {"fack": True},
    "fack+adaptive": {"fack": True, "adaptive_reordering": True},
    "undo+dsack": {"undo": True, "dsack": True},
    "moderate_cwnd": {"moderate_cwnd": True},
    "rate_halving": {"rate_halving": True},
    "quickack_after_dup": {"quickack_after_dup": True},
}
LESS = {
    "tso": {"tso": "0B"},
    "fack": {"fack": False},
    "adaptive": {"adaptive_reordering": False},
    "undo": {"undo": False},
    "moderate_cwnd": {"moderate_cwnd": False},
    "rate_halving": {"rate_halving": False},
}
VARIANTS: dict[str, dict] = {"default": {}}
VARIANTS |= {f"{k} alone": v for k, v in ALONE.items()}
VARIANTS |= {"tso+fack": {"tso": "64KB", "fack": True}, "tso+moderate": {"tso": "64KB", "moderate_cwnd": True}}
VARIANTS |= {"linux-2.6.33": PROFILE}
VARIANTS |= {f"profile - {k}": {**PROFILE, **v} for k, v in LESS.items()}
VARIANTS |= {"profile, HZ=1000": {**PROFILE, "ts_tick": "1ms"}}


def _alpha(scenario: dict, opts: dict) -> dict:
    """The α flow's host options: the engine's default hosts (without the
    reproduction's GRO) and then ``opts``."""
    for flow in scenario["flows"]:
        if flow["name"] == "alpha":
            flow["tcp"].pop("gro", None)
            flow["tcp"].update({"host_profile": "default", **opts})
    return scenario


def paper(config: str, rate: float) -> float:
    if config in y.PAPER_TABLE1:
        return y._paper1(config, rate)
    return y.PAPER_TABLE3[config][0]


def specs() -> list[RunSpec]:
    t = y.EXP2_TIMELINE[True]
    out = []
    for cell, (config, rate) in CELLS.items():
        policy = y.EXP2_CONFIGS.get(config) or y.EXP3_CONFIGS[config]
        for variant, opts in VARIANTS.items():
            scenario = y.testbed(f"study-{y._slug(cell)}-{y._slug(variant)}", copy.deepcopy(policy), rate, t)
            _alpha(scenario, {"gro": False, **opts})  # part 1: no GRO
            window = (t.tcp[0] + y.EXP2_SETTLE[True], t.tcp[1])
            out.append(RunSpec(f"{cell}/{variant}", scenario, {"window": window, "tcp": t.tcp, "series": True, "cost": t.duration}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    measured = run_specs("alphaqos.reproduce.yan2013", specs(), jobs=a.jobs)
    (a.out / "study.json").write_text(json.dumps(measured, indent=1, default=str))





# --- part 2: the document's procedure (on-off) and receive coalescing ------------

#: The variants of part 2: the engine's default hosts and the profile, each
#: with and without GRO at the receiver.
VARIANTS2: dict[str, dict] = {
    "default": {},
    "default + gro": {"gro": True},
    "linux-2.6.33 - gro": {**PROFILE, "gro": False},
    "linux-2.6.33 (with gro)": PROFILE,
    "linux-2.6.33, HZ=1000": {**PROFILE, "ts_tick": "1ms"},
}
ONOFF_CONFIGS = ("3q (49,50,1)", "3q (30,50,20)", "3q (10,30,60)")
ONOFF_RATES = (0.0, 1.0, 3.0)


def specs2(full: bool = False) -> list[RunSpec]:
    """On-off runs (one per 3-queue configuration: every Table I cell of it
    from one transfer), fresh runs of the Table I cells (the previous
    procedure) for the GRO variants, and Table III's scavenger rows as the
    reproduction runs them (experiment 3's quick timeline, a fresh transfer
    at 3 Gbps as in the document)."""
    quick = not full
    out = []
    t2, t3 = y.EXP2_TIMELINE[True], y.EXP3_TIMELINE[True]
    for variant, opts in VARIANTS2.items():
        for config in ONOFF_CONFIGS:
            scenario = _alpha(y.onoff_testbed(f"onoff-{y._slug(config)}", copy.deepcopy(y.EXP2_CONFIGS[config]), ONOFF_RATES, quick), opts)
            measure = {**y.onoff_measure(ONOFF_RATES, quick), "cwnd_series": True}
            out.append(RunSpec(f"onoff/{config}/{variant}", scenario, measure))
        if full:
            continue
        if "gro" in variant and "- gro" not in variant:
            for cell, (config, rate) in CELLS.items():
                if cell.startswith("T1"):
                    scenario = _alpha(y.testbed(f"fresh-{y._slug(cell)}", copy.deepcopy(y.EXP2_CONFIGS[config]), rate, t2), opts)
                    window = (t2.tcp[0] + y.EXP2_SETTLE[True], t2.tcp[1])
                    out.append(RunSpec(f"fresh/{cell}/{variant}", scenario, {"window": window, "tcp": t2.tcp, "cost": t2.duration}))
        for config in ("3queues+policing1", "3queues+policing2"):
            scenario = _alpha(y.testbed(f"t3-{y._slug(config)}", copy.deepcopy(y.EXP3_CONFIGS[config]), 3.0, t3), opts)
            out.append(RunSpec(f"t3/{config}/{variant}", scenario, {"window": t3.tcp, "tcp": t3.tcp, "series": True, "cwnd_series": True, "cost": t3.duration}))
    return out


def main2() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="the full on-off pattern (181 s runs) only")
    a = ap.parse_args(sys.argv[2:])
    a.out.mkdir(parents=True, exist_ok=True)
    specs = specs2(a.full)
    measured = {}
    for spec in specs:  # one at a time into the file, so a stopped study keeps what it ran
        measured |= run_specs("alphaqos.reproduce.yan2013", [spec], jobs=1)
        (a.out / "study2.json.tmp").write_text(json.dumps(y.split_steps(measured), indent=1, default=str))
        (a.out / "study2.json.tmp").replace(a.out / "study2.json")


if __name__ == "__main__":
    main2() if sys.argv[1:2] == ["onoff"] else main()


def traces2(measured: dict, path: Path) -> None:
    """cwnd and deep overtakes (late packets overtaken by 3 or more
    segments, per second) of the cells GRO moves most: (49,50,1) through
    the on-off pattern and Table III's policing1."""
    import numpy as np
    from matplotlib.figure import Figure

    runs = {"onoff/3q (49,50,1)": "(49,50,1), on-off: UDP 1 Gbps at 5-10 s, 3 Gbps at 12-17 s",
            "t3/3queues+policing1": "Table III policing1 (59,40,1), UDP 3 Gbps"}  # fmt: skip
    variants = ("default", "default + gro", "linux-2.6.33 (with gro)")
    fig = Figure(figsize=(12, 7), layout="constrained")
    axes = fig.subplots(2, len(runs), sharex="col")
    for j, (run, title) in enumerate(runs.items()):
        for k, variant in enumerate(variants):
            s = np.array(measured[f"{run}/{variant}"]["cwnd_series"], dtype=float)
            t, cwnd, deep = s[:, 0], s[:, 1], s[:, 3]
            axes[0, j].plot(t, cwnd / 1448, color=f"C{k}", linewidth=0.9, label=variant)
            axes[1, j].plot(t[1:], np.diff(deep) / np.diff(t), color=f"C{k}", linewidth=0.9, label=variant)
        axes[0, j].set(title=title, ylabel="cwnd (segments)", yscale="log")
        axes[1, j].set(xlabel="time (s)", ylabel="overtaken by ≥ 3 (per s)", yscale="symlog", ylim=(0, 3e5))
        for a in axes[:, j]:
            a.grid(True, alpha=0.3)
        axes[0, j].legend(fontsize="small")
    fig.savefig(path, dpi=100)
