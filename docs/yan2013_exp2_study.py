"""The experiment-2 study of docs/yan2013-exp2-study.md: every host
behaviour of the ``linux-2.6.33`` profile alone, the profile, and the
profile less each one, over Table I's 3-queue cells at 1 and 3 Gbps of UDP
and Table III's two scavenger rows, on the reproduction's quick timelines
(the reproduction's runner: one process per run).

    .venv/bin/python docs/yan2013_exp2_study.py OUT_DIR [--jobs N]

writes OUT_DIR/study.json (every run's measurements) and the figures
docs/img/exp2-study-*.png.
"""

from __future__ import annotations

import argparse
import copy
import json
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
            for flow in scenario["flows"]:
                if flow["name"] == "alpha":
                    flow["tcp"].update({"host_profile": "default", **opts})
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


if __name__ == "__main__":
    main()
