"""Every queue discipline the schema offers, with only its defaults, runs
end to end through ``alphaqos run``: exit 0, results and plots written.

The disciplines are enumerated from the schema (the kinds of a link's
queue, a policy's schedulers, a class's children and drop-profile forms),
so that a new one is run here without a change to this file; a kind whose
required keys are not known below fails loudly, naming itself. Each
link queue kind and scheduler is a scenario of its own; the disciplines
inside a class share one scenario, a link each. The disciplines see an
overload (a 12 Mbit/s UDP flow and a TCP flow into a 10 Mbit/s link), so
that they queue.
"""

from __future__ import annotations

import json
from typing import Any, get_args

import polars as pl
import pytest
import yaml

from _cli import cli
from alphaqos.policy import CHILD_KINDS, SCHEDULER_REQUIRED, Child, DropProfile, Policy
from alphaqos.scenario import QUEUE_KINDS, Queue

#: What a kind needs beyond its defaults (the schema's required keys only).
REQUIRED: dict[str, Any] = {
    "red": {"min_th": 5, "max_th": 15},
    "htb": {"classes": {"1:1": {"rate": "8Mbps"}}, "default": "1:1"},
    "policy": "p",
}
#: A class's scheduler parameters, for the schedulers that require them.
CLASS_PARAMS = {"transmit_rate": "100%", "weight": 1, "quantum": "1514B"}
#: Drop-profile forms, each with the least it needs.
PROFILES: dict[str, Any] = {
    "low": [[0, 0], [100, 100]],
    "medium_high": [[0, 0], [100, 100]],
    "high": [[0, 0], [100, 100]],
    "wred": {"green": {"min_th": 5, "max_th": 15}},
    "rio": {"in": {"min_th": 10, "max_th": 30}, "out": {"min_th": 5, "max_th": 15}},
    "gred": {"green": {"min_th": 5, "max_th": 15}},
}


def _schedulers() -> tuple[str, ...]:
    return get_args(Policy.model_fields["scheduler"].annotation)


def _policy(scheduler: str, **extra: Any) -> dict[str, Any]:
    klass = {"buffer_size": "100%", **{k: CLASS_PARAMS[k] for k in SCHEDULER_REQUIRED[scheduler]}, **extra}
    return {"scheduler": scheduler, "classes": {"all": klass}}


def _link_variants() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(id, link queue, policies) for every kind of a link's queue and
    every scheduler of a policy."""
    assert set(Queue.model_fields) == set(QUEUE_KINDS), "every queue kind is in QUEUE_KINDS"
    out = []
    for kind in QUEUE_KINDS:
        if kind == "policy":
            out += [(f"policy-{s}", {"policy": "p"}, {"p": _policy(s)}) for s in _schedulers()]
        else:
            out.append((kind, {kind: REQUIRED.get(kind, {})}, {}))
    return out


def _class_variants() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The same for every discipline inside a class: each child kind (of a
    policy's class and of an HTB class), each drop-profile form."""
    assert set(Child.model_fields) == set(CHILD_KINDS)
    out = []
    child_of = {"red": REQUIRED["red"]}
    out += [(f"child-{k}", {"policy": "p"}, {"p": _policy("strict-priority", child={k: child_of.get(k, {})})}) for k in CHILD_KINDS]
    out += [(f"htb-child-{k}", {"htb": {**REQUIRED["htb"], "classes": {"1:1": {"rate": "8Mbps", "child": {k: child_of.get(k, {})}}}}}, {})
            for k in CHILD_KINDS]  # fmt: skip
    for form in DropProfile.model_fields:
        assert form in PROFILES, f"drop-profile form {form!r}: give its least parameters in PROFILES"
        out.append((f"profile-{form}", {"policy": "p"}, {"p": _policy("strict-priority", drop_profile={form: PROFILES[form]})}))
    return out


LINK_VARIANTS = _link_variants()
CLASS_VARIANTS = _class_variants()
VARIANTS = LINK_VARIANTS + CLASS_VARIANTS


def scenario(variants: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """H1 -> R -> H<i>, the i-th variant on R's egress to H<i> (10 Mbit/s),
    a 12 Mbit/s UDP flow and a TCP flow to each."""
    nodes: dict[str, Any] = {"H0": {"address": "10.0.0.1"}, "R": {"router": True}}
    links: list[dict[str, Any]] = [{"between": ["H0", "R"], "rate": "10Gbps", "delay": "1ms"}]
    policies: dict[str, Any] = {}
    flows: list[dict[str, Any]] = []
    for i, (_, queue, pols) in enumerate(variants, 1):
        nodes[f"H{i}"] = {"address": f"10.0.{i}.1"}
        if pols:
            policies[f"p{i}"] = pols["p"]
            queue = {"policy": f"p{i}"}
        links.append({"between": ["R", f"H{i}"], "rate": "10Mbps", "delay": "5ms", "queues": {"R": queue}})
        flows += [{"name": f"udp{i}", "udp": {"from": "H0", "to": f"H{i}", "rate": "12Mbps"}},
                  {"name": f"tcp{i}", "tcp": {"from": "H0", "to": f"H{i}", "cc": "cubic"}, "start": "10ms"}]  # fmt: skip
    return {"name": "every-discipline", "duration": "600ms", "nodes": nodes, **({"policies": policies} if policies else {}),
            "links": links, "flows": flows}  # fmt: skip


def run_through_cli(tmp_path, variants) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(variants), sort_keys=False))
    out = tmp_path / "run"
    done = cli("run", str(path), "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "summary.json").read_text())
    assert (out / "queue_summary.parquet").exists() and any((out / "plots").glob("*.png"))
    queues = pl.read_parquet(out / "queue_summary.parquet")
    for i, (name, _, _) in enumerate(variants, 1):
        # The discipline was there and sent what it was given.
        assert queues.filter(pl.col("link") == f"R->H{i}")["deq_pkts"].sum() > 0, name


def test_the_schema_offers_what_this_test_runs():
    ids = [v[0] for v in VARIANTS]
    # The list, as the schema names them.
    for expected in ("fifo", "red", "fq_codel", "sfq", "yaqs", "htb", "profile-wred", *(f"policy-{s}" for s in ("junos", "strict-priority", "wrr", "drr", "mdrr"))):
        assert expected in ids
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("variant", LINK_VARIANTS, ids=[v[0] for v in LINK_VARIANTS])
def test_every_queue_kind_and_scheduler_runs_end_to_end_with_its_defaults(tmp_path, variant):
    run_through_cli(tmp_path, [variant])


def test_every_class_discipline_runs_end_to_end_with_its_defaults(tmp_path):
    """The children and drop profiles, each on a link of its own, in one
    run (one run each would cost the suite a minute)."""
    run_through_cli(tmp_path, CLASS_VARIANTS)
