"""Instructions the engine executes on a bench case (`make bench`): a
measure of its cost that does not move with the machine's load.

Wall time on a shared two-core machine varies by a third between two runs
of the same binary (other processes, the hypervisor's steal), so a 2 %
change cannot be seen in it. The number of instructions executed, counted
by valgrind's cachegrind (``--cache-sim=no``: the count alone), is the same
for the same binary and input, so two builds compare exactly. It is a
proxy: it counts neither cache misses nor branch mispredictions, so a
change that trades instructions for memory traffic shows here only in
part; wall-time figures (``benches/run.py``) remain the target's measure.

The case is the engine's own example runner (``run_config``, no Python)
on a bench scenario cut to ``--seconds`` of simulated time (flows end
there; workload items that start later are left out).

Usage::

    python benches/instructions.py [CASE ...] [--seconds 1] [--compare BIN]

``--compare BIN`` runs another build's ``run_config`` (e.g. a worktree at
the commit before a change: ``cargo build --release -p alphaqos-sim
--example run_config``) on the same input and prints the ratio.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = ROOT / "target" / "release" / "examples" / "run_config"

sys.path.insert(0, str(HERE))
from run import CASES  # noqa: E402  (the bench cases, one list)


def cut(config: dict, seconds: float) -> dict:
    """The resolved `config` ending after `seconds` of simulated time."""
    end = int(seconds * 1e9)
    config = dict(config, duration_ns=min(config["duration_ns"], end))
    end = config["duration_ns"]
    config["flows"] = [dict(f, stop_ns=min(f["stop_ns"], end)) for f in config["flows"] if f["start_ns"] < end]
    config["workloads"] = [w for w in config.get("workloads", []) if w.get("start_ns", 0) < end]
    return config


def resolved(case: str, seconds: float) -> str:
    sys.path.insert(0, str(ROOT / "python"))
    from alphaqos import load_scenario, resolve

    return json.dumps(cut(resolve(load_scenario(HERE / CASES[case][0])), seconds))


def count(binary: Path, config: Path) -> tuple[int, int]:
    """Instructions executed and events run by `binary` on `config`."""
    r = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", str(binary), str(config)],
        capture_output=True, text=True,
    )
    if r.returncode != 0:
        raise SystemExit(f"{binary}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
    refs = re.search(r"I\s+refs:\s+([\d,]+)", r.stderr)
    events = re.search(r"^(\d+) events", r.stdout, re.M)
    if not refs or not events:
        raise SystemExit(f"{binary}: no instruction count or event count in its output")
    return int(refs.group(1).replace(",", "")), int(events.group(1))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", default=["reference"], metavar="CASE", help=f"bench cases ({', '.join(CASES)})")
    p.add_argument("--seconds", type=float, default=1.0, help="simulated seconds to run (default 1)")
    p.add_argument("--bin", type=Path, default=BIN, help="run_config to measure (default: this tree's release build)")
    p.add_argument("--compare", type=Path, metavar="BIN", help="another build's run_config to compare with")
    a = p.parse_args(argv)
    unknown = [c for c in a.cases if c not in CASES]
    if unknown:
        p.error(f"unknown case {unknown[0]!r}: one of {', '.join(CASES)}")
    if a.seconds <= 0:
        p.error(f"--seconds must be positive, got {a.seconds}")
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (Debian: apt-get install valgrind); skipped")
        return 0
    if a.bin == BIN:
        # Through make, with the flags of every release build (the engine's profile).
        subprocess.run(["make", "--no-print-directory", "-s", "run-config"], cwd=ROOT, check=True)
    for b in [a.bin] + ([a.compare] if a.compare else []):
        if not b.is_file():
            p.error(f"{b}: no such run_config binary")
    head = f"instructions executed (cachegrind), {a.seconds:g} simulated s"
    if a.bin == BIN:
        # `make`'s pointer to the engine's profile (Makefile, target pgo).
        pgo = ROOT / "target" / "pgo" / "profile"
        head += f"; this tree's build profile-guided ({pgo.read_text().strip()})" if pgo.is_file() else "; this tree's build without its profile"
    print(head)
    print(f"{'case':<14} {'build':<8} {'instructions':>16} {'events':>11} {'instr/event':>12} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for case in a.cases:
            config = Path(tmp) / f"{case}.json"
            config.write_text(resolved(case, a.seconds))
            this = count(a.bin, config)
            rows = [("this", this)]
            if a.compare:
                rows.append(("compare", count(a.compare, config)))
            for name, (refs, events) in rows:
                ratio = f"{refs / rows[-1][1][0]:.4f}" if a.compare and name == "this" else ""
                print(f"{case:<14} {name:<8} {refs:>16,} {events:>11,} {refs / events:>12.1f} {ratio:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
