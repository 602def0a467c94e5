"""The engine's training runs for profile-guided optimisation (issue 25).

`make build` compiles the engine twice when Debian's ``llvm-profdata-19``
is present: once instrumented (``-Cprofile-generate``), which then runs the
resolved configurations in ``benches/pgo/`` (the bench cases of
``benches/run.py``, cut short), and once for real with the merged profile
(``-Cprofile-use``; ``Makefile``, target ``pgo``). The profile tells the
compiler which branches are taken and which calls are hot, so it lays out
the event loop's common path straight and inlines where the runs spend
their time; results do not change (``make golden``), only their speed.

The configurations are resolved by this tree's front, so they must follow
the engine's configuration format: ``--check`` (run by the test suite)
fails when one differs from what the front resolves now, ``--write``
writes them again.

Usage::

    python benches/pgo.py --check | --write
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIR = HERE / "pgo"
sys.path.insert(0, str(HERE))
from instructions import resolved  # noqa: E402  (a bench case resolved and cut, as instructions.py measures it)

# Bench case -> simulated seconds of its training run. One second covers a
# 20 ms path's start-up and steady state; the two 100 ms paths get four so
# that congestion avoidance is in the profile, not only slow start. About
# 15 s of instrumented running in all.
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


def configs() -> dict[str, str]:
    """File name -> the resolved configuration of each training run."""
    return {f"{case}.json": resolved(case, seconds) + "\n" for case, seconds in TRAINING.items()}


def stale(directory: Path = DIR) -> list[str]:
    """Training files missing, differing from what the front resolves now, or left over."""
    want = configs()
    have = {p.name for p in directory.glob("*.json")} if directory.is_dir() else set()
    out = [name for name, text in want.items() if not (directory / name).is_file() or (directory / name).read_text() != text]
    return sorted(out + sorted(have - set(want)))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true", help="exit 1 naming each training file that is not current")
    g.add_argument("--write", action="store_true", help=f"write the training files into {DIR.relative_to(HERE.parent)}/")
    a = p.parse_args(argv)
    if a.write:
        DIR.mkdir(exist_ok=True)
        for old in DIR.glob("*.json"):
            old.unlink()
        for name, text in configs().items():
            (DIR / name).write_text(text)
        print(f"wrote {len(TRAINING)} training configurations into {DIR}")
        return 0
    bad = stale()
    if bad:
        print(f"benches/pgo: not current: {', '.join(bad)} (python benches/pgo.py --write)")
        return 1
    print(f"benches/pgo: {len(TRAINING)} training configurations current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
