"""Golden summaries: results that hold through refactors.

For every bundled scenario (``scenarios/``) and every bench case
(``benches/*.yaml``) a short run's summary tables (``queue_summary``,
``flow_summary``, ``transfers``, ``transfer_streams``,
``reservation_summary``) and its headline (``summary.json``) are stored in
``tests/golden/`` as canonical JSON. Floats are written with ``repr``, which
reads back to the same IEEE 754 double, so comparing the text is comparing
the results bit for bit. The test suite (``tests/test_golden.py``) runs every
case and compares; a change to the engine that moves any number fails it.

A deliberate model change is reviewed and accepted with one command::

    make golden           # runs every case, prints what moved (field path: old -> new)
    make golden-accept    # the same, then writes the new files

(``python -m alphaqos.golden [--accept] [CASE ...]`` underneath.) The
commit that accepts a change says why the numbers moved.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = ROOT / "tests" / "golden"

# Each case runs this long: long enough that slow start is over and the
# queues have filled on the 10 Gbps bench cases, short enough for the suite
# (about a second of wall time each on this project's 2-core machine).
SCENARIO_DURATION = "2s"
BENCH_DURATION = "1s"

TABLES = ("queue_summary", "flow_summary", "transfers", "transfer_streams", "reservation_summary")


# Scenarios whose traffic starts later than a short run reaches: every flow
# starts at this time instead (and runs to the end), so the case still covers
# what the scenario is about (Yan et al.'s α flow starts at 53 s).
EARLY_START = "0.5s"
LATE_STARTERS = ("scenario-yan2013-exp1-1queue", "scenario-yan2013-exp1-2queues")


def cases() -> dict[str, tuple[Path, str]]:
    """Case name -> (scenario file, run duration), every bundled scenario and bench case."""
    out: dict[str, tuple[Path, str]] = {}
    for path in sorted((ROOT / "scenarios").rglob("*.yaml")):
        name = "scenario-" + path.relative_to(ROOT / "scenarios").with_suffix("").as_posix().replace("/", "-")
        out[name] = (path, SCENARIO_DURATION)
    for path in sorted((ROOT / "benches").glob("*.yaml")):
        out["bench-" + path.stem] = (path, BENCH_DURATION)
    return out


def _canonical(value: Any) -> Any:
    """Values JSON can hold exactly; non-finite floats as strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def _scenario(name: str, path: Path) -> Path | dict:
    if name not in LATE_STARTERS:
        return path
    import yaml

    doc = yaml.safe_load(path.read_text())
    for flow in doc["flows"]:
        flow["start"] = EARLY_START
        flow.pop("stop", None)
    return doc


def compute(name: str, path: Path, duration: str) -> dict[str, Any]:
    """The golden record of one run: headline and summary tables, in canonical form."""
    import alphaqos

    res = alphaqos.run(_scenario(name, path), duration=duration)
    record: dict[str, Any] = {"scenario": path.relative_to(ROOT).as_posix(), "duration": duration}
    record["summary"] = res.summary
    for table in TABLES:
        frame = getattr(res, table)
        record[table] = None if frame is None else frame.to_dicts()
    return _canonical(record)


def dumps(record: dict[str, Any]) -> str:
    """Canonical text: the headline indented, each table row on a line of its own (readable diffs)."""

    def one(value: Any) -> str:
        return json.dumps(value, sort_keys=True, allow_nan=False, separators=(", ", ": "))

    lines = ["{"]
    keys = sorted(record)
    for i, key in enumerate(keys):
        value, comma = record[key], "," if i < len(keys) - 1 else ""
        if isinstance(value, list) and value:
            lines.append(f"{json.dumps(key)}: [")
            lines.extend(f"  {one(row)}{',' if j < len(value) - 1 else ''}" for j, row in enumerate(value))
            lines.append(f"]{comma}")
        elif key == "summary":
            body = json.dumps(value, indent=1, sort_keys=True, allow_nan=False)
            lines.append(f"{json.dumps(key)}: {body}{comma}")
        else:
            lines.append(f"{json.dumps(key)}: {one(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Every leaf that differs, as 'path: old -> new' (field paths a person can follow)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old:
                out.append(f"{sub}: (absent) -> {new[key]!r}")
            elif key not in new:
                out.append(f"{sub}: {old[key]!r} -> (absent)")
            else:
                out.extend(differences(old[key], new[key], sub))
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: {len(old)} items -> {len(new)} items"]
        out = []
        for i, (a, b) in enumerate(zip(old, new)):
            out.extend(differences(a, b, f"{path}[{i}{_label(a)}]"))
        return out
    if type(old) is not type(new) or old != new:
        return [f"{path}: {old!r} -> {new!r}"]
    return []


def _label(row: Any) -> str:
    """A table row's name beside its index: its queue, flow or workload (with transfer)."""
    if isinstance(row, dict):
        for key in ("queue", "flow", "workload", "agent"):
            if isinstance(row.get(key), str):
                extra = f"/{row['transfer']}" if "transfer" in row else ""
                return f" {row[key]}{extra}"
        for value in row.values():
            if isinstance(value, str):
                return f" {value}"
    return ""


def golden_file(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.json"


def check(name: str) -> tuple[dict[str, Any], list[str]]:
    """Run a case; return its record and what differs from the stored file."""
    path, duration = cases()[name]
    record = compute(name, path, duration)
    stored = golden_file(name)
    if not stored.exists():
        return record, [f"(no golden file {stored.relative_to(ROOT)})"]
    if stored.read_text() == dumps(record):
        return record, []
    found = differences(json.loads(stored.read_text()), record)
    return record, found or ["(same values, different text: re-accept to normalise)"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m alphaqos.golden", description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all); --list shows them")
    parser.add_argument("--accept", action="store_true", help="write the new records as the golden files")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--max-lines", type=int, default=20, help="differences shown per case (default 20)")
    args = parser.parse_args(argv)
    known = cases()
    if args.list:
        for name, (path, duration) in known.items():
            print(f"{name:40s} {path.relative_to(ROOT)} ({duration})")
        return 0
    unknown = [c for c in args.cases if c not in known]
    if unknown:
        print(f"error: unknown case {unknown[0]!r} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    moved = 0
    for name in args.cases or list(known):
        record, found = check(name)
        if not found:
            print(f"{name}: unchanged")
            continue
        moved += 1
        print(f"{name}: {len(found)} difference(s)")
        for line in found[: args.max_lines]:
            print(f"  {line}")
        if len(found) > args.max_lines:
            print(f"  ... and {len(found) - args.max_lines} more")
        if args.accept:
            GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
            tmp = golden_file(name).with_suffix(".json.tmp")
            tmp.write_text(dumps(record))
            tmp.replace(golden_file(name))
            print(f"  accepted -> {golden_file(name).relative_to(ROOT)}")
    if moved and not args.accept:
        print(f"{moved} case(s) moved; review the differences, then `make golden-accept` and say why in the commit")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
