"""Wall-clock speed of two builds of the engine, side by side: simulated
seconds per wall second of two ``run_config`` binaries (e.g. the build
before issue 25 and this one) on the same bench case, in alternating runs
on one core.

Wall time on a shared machine moves by a third between runs of the same
binary, so the two builds are run in pairs, one right after the other (the
order alternating from pair to pair), pinned to one core (``taskset``);
the ratio of their medians and the median of the pairs' ratios are
printed, with every run's figure and the machine's load before and after.

The case is the bench scenario resolved by this tree's front and cut to
``--seconds`` (as ``benches/instructions.py`` makes it). An older runner
refuses the fields it does not know; those that are unset (null) in the
resolved configuration are left out for both builds, one at a time as the
older runner names them; a field it does not know that is set stops the
comparison. Both builds must then run the same number of events.

Usage::

    python benches/speed_ab.py --old BIN --new BIN [--case reference]
        [--seconds 5] [--pairs 9] [--cpu 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from instructions import cut, resolved  # noqa: E402  (the cases as instructions.py makes them)
from run import CASES  # noqa: E402

UNKNOWN = re.compile(r"unknown field `([A-Za-z0-9_]+)`")
RUN = re.compile(r"^(\d+) events in .*?([\d.]+) simulated s per wall s", re.M)


def drop_unset(value, field: str) -> tuple[object, int, int]:
    """`value` without the key `field` wherever it is null; the number of
    nulls dropped and of places where it is set."""
    if isinstance(value, dict):
        out, dropped, kept = {}, 0, 0
        for k, v in value.items():
            if k == field:
                if v is None:
                    dropped += 1
                    continue
                kept += 1
            v, d, s = drop_unset(v, field)
            out[k] = v
            dropped, kept = dropped + d, kept + s
        return out, dropped, kept
    if isinstance(value, list):
        items = [drop_unset(v, field) for v in value]
        return [i[0] for i in items], sum(i[1] for i in items), sum(i[2] for i in items)
    return value, 0, 0


def run(binary: Path, config: Path, cpu: int | None) -> subprocess.CompletedProcess:
    cmd = (["taskset", "-c", str(cpu)] if cpu is not None else []) + [str(binary), str(config)]
    return subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, RUST_BACKTRACE="0"))


def accepted(config: dict, binaries: list[Path], tmp: Path) -> dict:
    """`config` with the unset fields the binaries do not know left out."""
    probe = tmp / "probe.json"
    for _ in range(100):
        refused = None
        for b in binaries:
            # A short run: only the parse matters here.
            probe.write_text(json.dumps(cut(config, 1e-4)))
            r = run(b, probe, None)
            m = UNKNOWN.search(r.stderr)
            if m:
                refused = (b, m.group(1))
                break
            if r.returncode != 0:
                raise SystemExit(f"{b}: exit {r.returncode}: {r.stderr.strip().splitlines()[-2:]}")
        if refused is None:
            return config
        b, field = refused
        config, dropped, kept = drop_unset(config, field)
        if kept or not dropped:
            raise SystemExit(f"{b} does not know the field {field!r}, which this case sets: not comparable")
        print(f"left out {field!r}: unset here ({dropped} places), unknown to {b}")
    raise SystemExit("too many unknown fields")


def median_interval(ratios: list[float], level: float = 0.95, draws: int = 10_000, seed: int = 1) -> tuple[float, float]:
    """A percentile-bootstrap interval of the median of the pairs' ratios
    (Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993, ch.
    13): the pairs resampled with replacement `draws` times, the median of
    each resample, the central `level` of those medians. Seeded: the same
    ratios give the same interval. A target is shown when the interval's
    lower end clears it, not when the median alone does."""
    rng = random.Random(seed)
    n = len(ratios)
    meds = sorted(statistics.median(rng.choices(ratios, k=n)) for _ in range(draws))
    tail = (1 - level) / 2
    return meds[int(tail * draws)], meds[min(draws - 1, int((1 - tail) * draws))]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", type=Path, required=True, help="run_config of the build to compare against")
    p.add_argument("--new", type=Path, required=True, help="run_config of the build measured")
    p.add_argument("--case", default="reference", help=f"bench case ({', '.join(CASES)}; default reference)")
    p.add_argument("--seconds", type=float, default=5.0, help="simulated seconds per run (default 5)")
    p.add_argument("--pairs", type=int, default=9, help="pairs of runs (default 9)")
    p.add_argument("--cpu", type=int, default=1, help="core to pin the runs to (default 1; -1: not pinned)")
    a = p.parse_args(argv)
    if a.case not in CASES:
        p.error(f"unknown case {a.case!r}: one of {', '.join(CASES)}")
    if a.seconds <= 0 or a.pairs < 1:
        p.error("--seconds must be positive and --pairs at least 1")
    for b in (a.old, a.new):
        if not b.is_file():
            p.error(f"{b}: no such run_config binary")
    cpu = None if a.cpu < 0 else a.cpu
    builds = {"old": a.old, "new": a.new}
    speeds: dict[str, list[float]] = {"old": [], "new": []}
    events: dict[str, set[int]] = {"old": set(), "new": set()}
    with tempfile.TemporaryDirectory() as tmp:
        config = accepted(json.loads(resolved(a.case, a.seconds)), [a.old, a.new], Path(tmp))
        path = Path(tmp) / f"{a.case}.json"
        path.write_text(json.dumps(config))
        load = os.getloadavg()
        print(f"{a.case}, {a.seconds:g} simulated s, {a.pairs} pairs, cpu {cpu}; load before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(f"{'pair':>4} {'old':>8} {'new':>8} {'new/old':>8}")
        for k in range(a.pairs):
            order = ["old", "new"] if k % 2 == 0 else ["new", "old"]
            for name in order:
                r = run(builds[name], path, cpu)
                m = RUN.search(r.stdout)
                if r.returncode != 0 or not m:
                    raise SystemExit(f"{builds[name]}: exit {r.returncode}: {r.stderr.strip().splitlines()[-2:]}")
                events[name].add(int(m.group(1)))
                speeds[name].append(float(m.group(2)))
            # Refused at the first pair that disagrees, not after the sitting.
            if events["old"] != events["new"] or len(events["old"]) != 1:
                raise SystemExit(f"event counts differ: old {sorted(events['old'])}, new {sorted(events['new'])}: not the same run")
            print(f"{k + 1:>4} {speeds['old'][-1]:>8.3f} {speeds['new'][-1]:>8.3f} {speeds['new'][-1] / speeds['old'][-1]:>8.3f}")
    ratios = [n / o for n, o in zip(speeds["new"], speeds["old"])]
    mo, mn = statistics.median(speeds["old"]), statistics.median(speeds["new"])
    load = os.getloadavg()
    print(f"events per run: {events['old'].pop():,} (both)")
    print(f"median simulated s per wall s: old {mo:.3f}, new {mn:.3f}; ratio of medians {mn / mo:.3f}")
    lo, hi = median_interval(ratios)
    print(f"pair ratios {min(ratios):.3f}-{max(ratios):.3f}, median {statistics.median(ratios):.3f} (95 % bootstrap interval {lo:.3f}-{hi:.3f})")
    print(f"load after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
