"""``alphaqos reproduce deadline-af --quick``: the third document's
evaluation (deadline-driven transfers over DiffServ AF), run once through
the command line (under a minute on two cores), with its findings asserted
on the model's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from _cli import cli as run_cli  # noqa: E402
from alphaqos import cli, load_scenario  # noqa: E402
from alphaqos.reproduce import deadline_af  # noqa: E402

from test_reproduce import finding, regraded  # noqa: E402


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> tuple[int, Path, dict]:
    out = tmp_path_factory.mktemp("reproduce") / "deadline"
    status = cli.main(["reproduce", "deadline-af", "--quick", "--quiet", "--out", str(out)])
    return status, out, json.loads((out / "results.json").read_text())


def ctr(results: dict, method: str, bg: int = 1000) -> dict:
    return results["measured"][f"ctr/{method}/bg{bg}"]


def test_every_finding_is_graded_and_the_exit_status_follows(quick):
    status, _, results = quick
    assert len(results["findings"]) == 6
    for found in results["findings"]:
        assert found["grade"] == regraded(found), found
    assert status == (0 if all(f["holds"] for f in results["findings"]) else 1)


def test_the_proposed_base_flow_holds_the_ctr_and_beats_fixed_cwnd_and_newreno(quick):
    _, _, results = quick
    share = {m: ctr(results, m)["base_bps"]["dt"] / deadline_af.CTR_1 for m in deadline_af.METHODS}
    # Within a few percent of the CTR under congestion (slides: 98.6 %), and
    # not above it by more than the policer's slack.
    assert 0.95 <= share["proposed"] <= 1.02
    assert share["proposed"] > share["fixed-cwnd"] > share["conventional"]
    # Fixed max cwnd within a factor of 2 of the slides' 94.8 %. Conventional
    # NewReno runs ns-2's Agent/TCP/Newreno since the hosts were pinned
    # (no SACK, per-ACK growth): 37.5 % of the CTR against the slides' 79.0 %
    # (x0.47), so its size may fall outside the factor; the finding's grade
    # says which.
    assert 0.5 < share["fixed-cwnd"] / (deadline_af.PAPER_BASE_SHARE["fixed-cwnd"] / 100) < 2, share["fixed-cwnd"]
    within = 0.5 < share["conventional"] / (deadline_af.PAPER_BASE_SHARE["conventional"] / 100) < 2
    assert finding(results, "The proposed method's base flow beats")["grade"] == ("holds" if within else "direction only")
    # The fixed window loses what the queueing delay adds to the round trip:
    # the core queue's mean (packets of 12 us at 1 Gbps) over a 20 ms base RTT.
    queueing = ctr(results, "fixed-cwnd")["queue_mean_pkts"] * 1500 * 8 / 1e9
    assert share["fixed-cwnd"] == pytest.approx(0.0205 / (0.0205 + queueing), abs=0.05)
    # At 1000 Mbps of background the additional flow finds nothing; without
    # background it takes what the reservation leaves.
    for m in deadline_af.METHODS:
        assert ctr(results, m)["additional_bps"]["dt"] < 0.05 * deadline_af.CTR_1
    idle = ctr(results, "proposed", 0)
    assert idle["base_bps"]["dt"] + idle["additional_bps"]["dt"] > 0.85 * deadline_af.WIRE_BPS
    assert finding(results, "Under congestion")["holds"]
    assert finding(results, "The proposed method's base flow beats")["direction"]


def test_paced_base_flows_hold_their_reservation_on_every_queue(quick):
    """Study 2 paces the base flows at their reservation (the module doc):
    none of their packets is red, so both hold the reservation on every
    queue of the sweep, the 6,400-packet one included (seed 1 here; seeds 2
    and 3 in docs/ns2-crosscheck.md), and never exceed it. Unpaced, the
    SACK sender's line-rate bursts after a stall fell to 115 and 140 Mbit/s
    on that queue. The slides' need of a longer queue for the longer round
    trip therefore does not show, and the finding does not count it as
    shown when both flows hold from the shortest queue on."""
    _, _, results = quick
    runs = deadline_af.queue_runs(results["measured"])
    ctr2 = deadline_af.CTR_2
    assert [q for q, _ in runs] == list(deadline_af.QUEUES_2[True])
    for q, m in runs:
        for name in ("short", "long"):
            assert 0.95 * ctr2 <= m["base_bps"][name] <= 1.01 * ctr2, (q, name, m["base_bps"])
    found = finding(results, "With a long enough core queue")
    assert not found["direction"] and "held from 400 packets on (21 ms) and held from 400 packets on (101 ms)" in found["evidence"]


def test_the_proposed_method_reserves_the_least_at_no_call_loss(quick):
    _, _, results = quick
    table = deadline_af.admission_table(results["measured"])
    lam = deadline_af.zero_loss_rate(table)
    assert lam is not None and lam > 0.1
    used = {m: table[m][lam]["reserved_share"] for m in deadline_af.ADMISSION_METHODS}
    # The proposed method's dynamic reservation reserves the least (the
    # order of the other two is graded in the report, not asserted here).
    assert used["proposed"] < min(used["two-connections"], used["conventional"])
    # No deadline missed where no call is lost; every method loses calls at the highest rate.
    assert all(table[m][lam]["deadline_met"] == 1 for m in table)
    top = max(table["proposed"])
    assert all(table[m][top]["call_loss"] > 0 for m in table)


def test_the_report_states_the_open_parameters_and_every_run(quick):
    _, out, _ = quick
    report = (out / "report.md").read_text()
    for title in ("Study 1", "Study 2", "Study 3", "Parameters the slides leave open"):
        assert f"## {title}" in report
    assert " vs 493 (×" in report and " vs 32.9 (×" in report
    words = " ".join(report.split())
    assert "min_th 0.4 L" in words and "files of 125 MB" in words and "alpha 2 segments" in words
    assert {p.name for p in out.iterdir()} >= {"report.md", "results.json", "scenarios", "ctr_throughput.png", "queue_rtt.png", "reserved_bandwidth.png"}
    scenarios = list((out / "scenarios").iterdir())
    assert len(scenarios) == len(deadline_af.plan(quick=True))
    for scenario in scenarios:
        load_scenario(scenario)


def test_a_mid_run_snapshot_changes_nothing():
    """The stream snapshots the throughput window needs leave the run as it was."""
    spec = next(s for s in deadline_af.plan(quick=True) if s.key == "ctr/proposed/bg1000")
    scenario = load_scenario({**spec.scenario, "duration": "2s"})
    seen = {}
    plain = alphaqos.engine.simulate(scenario)
    snapped = alphaqos.engine.simulate(scenario, stops=[1_000_000_000], at_stop=lambda t, e: seen.update({t: e.results()["transfer_streams"]["bytes_acked"]}))
    assert plain.transfer_streams.equals(snapped.transfer_streams) and plain.queue.equals(snapped.queue)
    assert 0 < seen[1_000_000_000][0] < snapped.transfer_streams["bytes_acked"][0]


def test_an_unknown_reproduction_is_refused(tmp_path: Path):
    done = run_cli("reproduce", "deadline-afx", "--quick", "--out", str(tmp_path / "r"))
    assert done.returncode == 2 and "deadline-af" in done.stderr
    assert not (tmp_path / "r").exists()


def test_the_discussion_states_no_number_but_the_slides(quick):
    """The discussion explains mechanisms; the numbers are the findings'.
    It once quoted a run made while building the reproduction (9.92 s,
    12.56 s, 23 timeouts) that no report run reproduces."""
    import re

    _, out, _ = quick
    discussion = (out / "report.md").read_text().split("## What matches, what differs, and why", 1)[1].split("\n## ", 1)[0]
    numbers = re.findall(r"\d+(?:\.\d+)?", discussion.replace("problem 2", ""))
    assert numbers == [f"{deadline_af.PAPER_BASE_SHARE['fixed-cwnd']:g}"], numbers


def test_one_set_of_the_slides_numbers_supports_one_finding(quick):
    """493 Mbps and 98.6 % are one number (493 / 500), and 49.3 % is it
    again over 1 Gbps; 18.0 / 32.9 is 18.0 and 32.9 again: each counts in
    one finding only."""
    _, _, results = quick
    counted = [(f["claim"], c["paper"]) for f in results["findings"] for c in f["cells"] if c["paper"] is not None and not c["fitted"]]
    papers = sorted(p for _, p in counted)
    assert papers == sorted([98.6, 94.8, 79.0, 32.9, 18.0, 8.0]), counted
    slides = set(deadline_af.PAPER_BASE_MBPS.values()) | set(deadline_af.PAPER_WIRE_SHARE.values())
    assert not slides & set(papers)
    assert not [claim for claim in (f["claim"] for f in results["findings"]) if claim.startswith("Relative to one NewReno")]


def test_the_queue_finding_names_a_queue_where_both_flows_fall_below_95_percent(quick):
    """In the full sweep both base flows fall below 95 % of the CTR at
    12,800 packets, above queues where they held: the finding says so and
    its direction ("a long enough queue holds") needs the flows to hold at
    every longer queue."""
    _, _, results = quick
    measured = dict(results["measured"])
    runs = deadline_af.queue_runs(measured)
    (q, last), (q_before, before) = runs[-1], runs[-2]
    claim = "With a long enough core queue"
    held = {"short": deadline_af.CTR_2, "long": deadline_af.CTR_2}
    measured[f"queue/{q_before}"] = {**before, "base_bps": held}
    measured[f"queue/{q}"] = {**last, "base_bps": {k: 0.9 * v for k, v in held.items()}}
    found = next(f for f in deadline_af.findings(measured) if f.claim.startswith(claim))
    assert f"at {q:,} packets both fall below 95% of the CTR (225 and 225 Mbps)" in found.evidence
    assert "not held through the longest queue (21 ms) and not held through the longest queue (101 ms)" in found.evidence
    assert found.direction is False and found.grade == "fails"
    measured[f"queue/{q}"] = {**last, "base_bps": held}
    found = next(f for f in deadline_af.findings(measured) if f.claim.startswith(claim))
    assert "both fall below" not in found.evidence


def test_the_report_says_why_two_connections_reserve_as_much_as_one(quick):
    """Study 3 without dynamic control: the reservation is held from
    admission to completion, so the reserved share is the arrival rate x
    the request x the completion time (Little's law); the report gives
    each method's completion time and that product from its own runs."""
    _, out, results = quick
    report = " ".join((out / "report.md").read_text().split())
    section = report.split("## Why two connections without dynamic control reserve", 1)[1].split(" ## ", 1)[0]
    table = deadline_af.admission_table(results["measured"])
    lam = deadline_af.zero_loss_rate(table)
    for m in ("conventional", "two-connections"):
        fct = table[m][lam]["mean_fct_s"]
        assert f"{fct:.2f} s" in section
        little = lam * deadline_af.FILE_3 * 8 / deadline_af.DEADLINE_3 * deadline_af.MARGIN * fct / deadline_af.WIRE_BPS
        assert f"{100 * little:.1f} %" in section


def test_the_report_weighs_reservation_rule_pacing_and_window(quick):
    """Why two connections reserve as much as one: the report names the
    three suspects (the reservation rule, pacing, the window), and what it
    says of pacing is what the runs did: no study-3 run paces a connection."""
    _, out, _ = quick
    report = " ".join((out / "report.md").read_text().split())
    section = report.split("## Why two connections without dynamic control reserve", 1)[1].split(" ## ", 1)[0]
    assert "Of the three suspects: the reservation rule is the same for both" in section
    assert "pacing plays no part (the call-admission study paces no connection" in section
    assert "what decides is the window of one connection against the empty path" in section
    study3 = [yaml.safe_load(p.read_text()) for p in (out / "scenarios").glob("*.yaml") if p.name.startswith(("admission", "check"))]
    assert len(study3) == len([k for k in deadline_af.plan(quick=True) if k.key.startswith(("admission/", "check/"))])
    options = [o for s in study3 for w in s["workloads"] for o in [w.get("tcp") or {}, *(w.get("stream_options") or [])]]
    assert options and not any(o.get("max_pacing_rate") for o in options)
    assert not any(s.get("deadline_transfers") for s in study3)
