"""Validation of many items (issue 20: "validation of 10^4 items stays under
a second"). The wall time itself is ``make bench``'s (``benches/validate_many.py``);
here, how it grows: ten times the items may cost at most about ten times
the time (20x allowed for noise and cache effects), which a check quadratic in the items (the
engine's duplicate-name scan was) breaks. And what the speed-ups rest on:
shared defaults are frozen, parsed units and controller parameters are
remembered without changing any answer or error.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from alphaqos import _core, units
from alphaqos.errors import ScenarioError
from alphaqos.scenario import DEFAULT_WORKLOAD_TCP, load_scenario, resolve

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
from validate_many import flows_scenario, scenario  # noqa: E402

#: Ten times the items may take this many times as long (linear: ~10;
#: 10-14x measured alone on an idle machine, 19.8x once under two pytest
#: workers: the larger text's parse leaves the cache). A quadratic step
#: makes it ~100x.
GROWTH = 20
#: The same for the whole of ``load_scenario``, whose CPU time also carries
#: the allocator and cache effects of a ten times larger heap (16x seen
#: under two pytest workers); a quadratic step makes it ~100x.
LOAD_GROWTH = 25


def cpu_seconds(f, repeat: int = 3) -> float:
    """The least CPU time of ``repeat`` calls (CPU, not wall: the machine is shared)."""
    best = float("inf")
    for _ in range(repeat):
        begin = time.process_time()
        f()
        best = min(best, time.process_time() - begin)
    return best


@pytest.mark.parametrize("build", [scenario, flows_scenario], ids=["workloads", "flows"])
def test_loading_grows_linearly_with_the_items(build):
    small, large = build(1000), build(10_000)
    load_scenario(small)  # warm: imports, caches of the schema
    ratio = cpu_seconds(lambda: load_scenario(large), 2) / cpu_seconds(lambda: load_scenario(small))
    assert ratio < LOAD_GROWTH, f"10x the items took {ratio:.1f}x the time"


def test_the_engines_check_grows_linearly_with_the_workloads():
    # The engine's configuration of one workload, copied under other names
    # (no Python validation in the measure: the engine's part alone).
    config = resolve(load_scenario(scenario(1)))
    workload = config["workloads"][0]

    def text(n: int) -> str:
        return json.dumps({**config, "workloads": [{**workload, "name": f"w{i}"} for i in range(n)]})

    small, large = text(1000), text(10_000)
    assert _core.check(large, [])[0] == []
    ratio = cpu_seconds(lambda: _core.check(large, []), 5) / cpu_seconds(lambda: _core.check(small, []), 5)
    assert ratio < GROWTH, f"10x the workloads took {ratio:.1f}x the engine's check"


def test_duplicate_workload_names_are_still_found_among_many():
    doc = scenario(3000)
    doc["workloads"][2999]["name"] = "w17"
    with pytest.raises(ScenarioError) as err:
        load_scenario(doc)
    assert [(i.loc, i.message) for i in err.value.issues] == [
        (("workloads", 2999, "name"), "duplicate workload name 'w17' (also workloads[17])")
    ]


def test_workloads_without_tcp_share_one_frozen_default_and_resolve_apart():
    loaded = load_scenario(scenario(3))
    assert all(wl.tcp is DEFAULT_WORKLOAD_TCP for wl in loaded.workloads)
    # Shared is safe: nothing can change it in place...
    with pytest.raises(ValidationError, match="frozen"):
        loaded.workloads[0].tcp.cc = "newreno"
    # ...and a change is a copy, the others untouched.
    changed = loaded.workloads[0].tcp.model_copy(update={"cc": "newreno"})
    assert changed.cc == "newreno" and DEFAULT_WORKLOAD_TCP.cc == "cubic"
    # The engine's configuration still gives each workload dicts of its own.
    config = resolve(loaded)
    first, second = (w["tcp"] for w in config["workloads"][:2])
    assert first == second and first is not second and first["cc_params"] is not second["cc_params"]
    first["cc_params"]["beta"] = 0.5
    assert second["cc_params"]["beta"] == 0.7


def test_an_explicit_tcp_is_its_own():
    doc = scenario(2)
    doc["workloads"][1]["tcp"] = {"cc": "htcp"}
    loaded = load_scenario(doc)
    assert loaded.workloads[0].tcp is DEFAULT_WORKLOAD_TCP
    assert loaded.workloads[1].tcp.cc == "htcp"
    assert [w["tcp"]["cc"] for w in resolve(loaded)["workloads"]] == ["cubic", "htcp"]


def test_remembered_units_give_the_same_values_and_the_same_errors():
    assert units.parse_time("0.05ms") == units.parse_time("0.05ms") == 50_000
    assert units.parse_size("48MiB") == 48 * 2**20 and units.parse_rate("1.25GBps") == 10**10
    assert units.parse_time("123456789ms") == 123_456_789 * 10**6  # digits only: integer arithmetic
    assert units.parse_time("1e2ms") == 100 * 10**6 and units.parse_time(".5s") == 5 * 10**8
    for _ in range(2):  # an error is raised every time, never remembered as a value
        with pytest.raises(ValueError, match=r"'0.5ns' is not a whole number of nanoseconds"):
            units.parse_time("0.5ns")
        with pytest.raises(ValueError, match=r"is too large"):
            units.parse_size("18446744073709551616B")
    # Not a string: refused as before, and not taken for the equal string.
    assert units.parse_queue_limit(1000) == units.QueueLimit(pkts=1000)
    with pytest.raises(ValueError, match="expected a size"):
        units.parse_size(20)


def test_controller_parameters_are_checked_once_per_value_and_each_error_reported():
    doc = scenario(4)
    # True and 1 are equal in Python; the check tells them apart (a flag is strict).
    params = [{"hystart": True}, {"hystart": 1}, {"hystart": True}, {"hystart": 1}]
    for wl, p in zip(doc["workloads"], params):
        wl["tcp"] = {"cc": "cubic", "cc_params": p}
    with pytest.raises(ScenarioError) as err:
        load_scenario(doc)
    found = [(i.loc, i.message) for i in err.value.issues]
    assert [loc for loc, _ in found] == [("workloads", 1, "tcp", "cc_params"), ("workloads", 3, "tcp", "cc_params")]
    assert found[0][1] == found[1][1] and "hystart" in found[0][1]
