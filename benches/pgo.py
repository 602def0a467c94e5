"""The engine's training runs for profile-guided optimisation (issue 25).

`make build` compiles the engine twice when Debian's ``llvm-profdata-19``
is present: once instrumented (``-Cprofile-generate``), which then runs the
resolved configurations in ``benches/pgo/`` (below), and once for real with the merged profile
(``-Cprofile-use``; ``Makefile``, target ``pgo``). The profile tells the
compiler which branches are taken and which calls are hot, so it lays out
the event loop's common path straight and inlines where the runs spend
their time; results do not change (``make golden``), only their speed.

The training covers the bench cases, every bundled scenario
(``scenarios/``: the first document's experiments, the examples) and the
first two runs of four documents' quick reproductions, so that the code
those exercise (Junos WFQ and priority queues, MDRR, policers, HTB, RIO,
the ns-2 and Linux 2.6 host profiles, the control agents) is not
left out of the profile, where the compiler would take it for cold and
optimise it for size.

The configurations are resolved by this tree's front, so they must follow
the engine's configuration format: ``--check`` (run by the test suite)
fails when one differs from what the front resolves now, ``--write``
writes them again.

Usage::

    python benches/pgo.py --check | --write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIR = HERE / "pgo"
sys.path.insert(0, str(HERE))
from instructions import cut, resolved  # noqa: E402  (a bench case resolved and cut, as instructions.py measures it)

ROOT = HERE.parent

# Bench case -> simulated seconds of its training run. One second covers a
# 20 ms path's start-up and steady state; the two 100 ms paths get four so
# that congestion avoidance is in the profile, not only slow start. About
# 15 s of instrumented running, the scenarios and reproductions 5 s more.
TRAINING = {
    "reference": 1.0,
    "cubic-8flows": 1.0,
    "red-10g": 1.0,
    "wred-10g": 1.0,
    "yaqs": 1.0,
    "fqcodel": 1.0,
    "manyflows": 1.0,
    "cubic-100ms": 4.0,
    "cubic-100g": 4.0,
}


# Every bundled scenario, cut to this many simulated seconds (past TCP's
# start-up at their 1-10 Gbps rates; about 2 M events each).
SCENARIO_SECONDS = 5.0


# Documents' quick reproductions (`alphaqos reproduce NAME --quick`, names
# of alphaqos.reproduce.REPRODUCTIONS): their first runs with a scenario,
# cut like the bundled scenarios. Not liberatore-yaqs: its YAQS is in the
# bench cases and the examples already, and its runs' configurations are
# 110 KB each.
REPRODUCTIONS = ("yan2013", "bouras-relative", "zurawski-tc", "deadline-af")
RUNS_PER_REPRODUCTION = 2


def scenarios() -> list[Path]:
    return sorted((ROOT / "scenarios").rglob("*.yaml"))


def reproduction_runs() -> list[tuple[str, dict]]:
    """(name, scenario) of the reproductions' training runs."""
    sys.path.insert(0, str(ROOT / "python"))
    from alphaqos import reproduce

    out = []
    for name in REPRODUCTIONS:
        plan = reproduce.module(name).plan(quick=True)
        runs = [r for r in plan if r.scenario is not None][:RUNS_PER_REPRODUCTION]
        out += [(f"reproduce-{name}-{k}", r.scenario) for k, r in enumerate(runs)]
    return out


def configs() -> dict[str, str]:
    """File name -> the resolved configuration of each training run."""
    sys.path.insert(0, str(ROOT / "python"))
    from alphaqos import load_scenario, resolve

    out = {f"{case}.json": resolved(case, seconds) + "\n" for case, seconds in TRAINING.items()}
    for path in scenarios():
        name = "scenario-" + "-".join(path.relative_to(ROOT / "scenarios").with_suffix("").parts) + ".json"
        out[name] = json.dumps(cut(resolve(load_scenario(path)), SCENARIO_SECONDS)) + "\n"
    for name, scenario in reproduction_runs():
        out[f"{name}.json"] = json.dumps(cut(resolve(load_scenario(scenario)), SCENARIO_SECONDS)) + "\n"
    return out


def stale(directory: Path | None = None) -> list[str]:
    """Training files missing, differing from what the front resolves now,
    or left over (in ``directory``, by default :data:`DIR`)."""
    directory = directory or DIR
    want = configs()
    have = {p.name for p in directory.glob("*.json")} if directory.is_dir() else set()
    out = [name for name, text in want.items() if not (directory / name).is_file() or (directory / name).read_text() != text]
    return sorted(out + sorted(have - set(want)))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true", help="exit 1 naming each training file that is not current")
    g.add_argument("--write", action="store_true", help="write the training files into benches/pgo/")
    a = p.parse_args(argv)
    if a.write:
        DIR.mkdir(exist_ok=True)
        for old in DIR.glob("*.json"):
            old.unlink()
        want = configs()
        for name, text in want.items():
            (DIR / name).write_text(text)
        print(f"wrote {len(want)} training configurations into {DIR}")
        return 0
    bad = stale()
    if bad:
        print(f"benches/pgo: not current: {', '.join(bad)} (python benches/pgo.py --write)")
        return 1
    print(f"benches/pgo: {len(list(DIR.glob('*.json')))} training configurations current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
