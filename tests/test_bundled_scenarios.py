"""Every bundled scenario runs, shortened, with its headline outcome asserted.

The shortened runs keep each scenario's topology, queues and traffic, and
compress its timeline so the suite stays fast: the structure of the finding
must not depend on the length of the run.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").rglob("*.yaml"))


def test_every_bundled_scenario_has_a_headline_test():
    assert {p.relative_to(ROOT / "scenarios").as_posix() for p in SCENARIOS} == set(HEADLINES)


def shortened(path: Path, timeline: dict[str, tuple[str, str | None]], duration: str) -> dict:
    """The scenario with a new duration and new (start, stop) per flow."""
    doc = yaml.safe_load(path.read_text())
    doc["duration"] = duration
    for flow in doc["flows"]:
        start, stop = timeline[flow["name"]]
        flow["start"] = start
        if stop is None:
            flow.pop("stop", None)
        else:
            flow["stop"] = stop
    return doc


def yan2013_exp1_1queue():
    """Ping delay rises while the α flow shares the one FIFO, and falls back.

    Yan et al. 2013, experiment 1, 1-queue: 2.28 ms idle, 60.6 ms with the
    TCP flow active. Shortened: TCP from 5 s to 15 s of a 20 s run.
    """
    doc = shortened(
        ROOT / "scenarios/yan2013/exp1-1queue.yaml",
        {"background": ("1s", None), "alpha": ("5s", "15s"), "probe": ("1s", None)},
        "20s",
    )
    res = alphaqos.run(doc)
    ping = res.ping.filter(pl.col("flow") == "probe")
    assert ping["rtt"].null_count() == 0, "no probe may be lost: the FIFO is large"
    before = ping.filter(pl.col("time") < 5)["rtt"]
    during = ping.filter(pl.col("time").is_between(7, 15, closed="left"))["rtt"]
    after = ping.filter(pl.col("time") >= 16.5)["rtt"]
    # Idle: two 1.05 ms + 0.05 ms hops each way plus transmission, ~2.3 ms.
    assert 2.0e-3 < before.mean() < 2.6e-3
    assert before.std() < 0.1e-3
    # Active: the TCP window (48 MiB) waits in the shared queue; the paper saw 60.6 ms.
    assert during.mean() > 20 * before.mean()
    assert 40e-3 < during.mean() < 100e-3
    # And back once the flow stops and the queue drains.
    assert after.mean() < 1.2 * before.mean()
    # The α flow takes what the 3 Gbps background leaves of 10 Gbps.
    alpha = res.tcp.filter((pl.col("flow") == "alpha") & pl.col("time").is_between(8, 15))
    goodput = alpha["goodput_bps"].mean()
    assert 6.0e9 < goodput < 7.0e9


def yan2013_exp1_2queues():
    """With the α flow in a queue of its own, the ping delay does not move.

    Yan et al. 2013, experiment 1, 2-queues (60/40): the paper saw the same
    ping mean and jitter whether the TCP flow was active or not.
    """
    doc = shortened(
        ROOT / "scenarios/yan2013/exp1-2queues.yaml",
        {"background": ("1s", None), "alpha": ("5s", "15s"), "probe": ("1s", None)},
        "20s",
    )
    res = alphaqos.run(doc)
    ping = res.ping.filter(pl.col("flow") == "probe")
    before = ping.filter(pl.col("time") < 5)["rtt"]
    during = ping.filter(pl.col("time").is_between(7, 15, closed="left"))["rtt"]
    assert ping["rtt"].null_count() == 0
    # The β queue (UDP 3 Gbps + ping) stays under its 40%: served at once.
    assert abs(during.mean() - before.mean()) < 0.1e-3, (during.mean(), before.mean())
    assert during.std() < 0.1e-3
    # And the α flow still gets what the background leaves (work-conserving).
    alpha = res.tcp.filter((pl.col("flow") == "alpha") & pl.col("time").is_between(8, 15))
    assert 6.0e9 < alpha["goodput_bps"].mean() < 7.0e9
    # Classified at WR: the alpha term matched the flow's segments.
    assert res.summary["queues"]["WR->W1/alpha"]["enq_pkts"] > 0
    assert res.summary["queues"]["WR->W1/beta"]["enq_pkts"] > 0


HEADLINES = {
    "yan2013/exp1-1queue.yaml": yan2013_exp1_1queue,
    "yan2013/exp1-2queues.yaml": yan2013_exp1_2queues,
}


# --- the gallery (scenarios/examples): each run cut short with the runner's
# duration override, its comment's "what to look at" asserted ------------------

EXAMPLES = ROOT / "scenarios" / "examples"


def _flows(res) -> dict:
    return res.summary["flows"]


def example_dtn_policed_circuit():
    """Unshaped TCP falls far below the policed reservation; the same DTN
    shaped with HTB at 90 % holds near 90 % without a retransmission."""
    res = alphaqos.run(EXAMPLES / "dtn-policed-circuit.yaml", duration="5s")
    reservation = 200e6
    unshaped, shaped = _flows(res)["unshaped"], _flows(res)["shaped"]
    assert unshaped["goodput_bps"] < 0.25 * reservation and unshaped["retransmits"] > 0
    assert 0.75 * reservation < shaped["goodput_bps"] < 0.9 * reservation
    assert shaped["retransmits"] == 0
    # The policer's discards are counted on the unshaped circuit's term.
    terms = {row["term"]: row for row in res.filter.to_dicts()}
    assert terms["circuit-a"]["discarded_pkts"] > 0 and terms["circuit-b"]["discarded_pkts"] == 0


def example_campus_fq_codel():
    """Under FQ-CoDel the ping keeps the path's RTT while the α flow fills
    the uplink; under a FIFO of the same size it waits behind the α flow."""
    doc = yaml.safe_load((EXAMPLES / "campus-fq-codel.yaml").read_text())
    res = alphaqos.run(doc, duration="4s")
    base = 2 * (0.1 + 1 + 4) * 1e-3  # c1 - campus - gw - web, both ways
    assert _flows(res)["probe"]["rtt_mean"] < base + 2e-3
    assert _flows(res)["alpha"]["goodput_bps"] > 60e6  # the α flow takes what the web leaves of 100 Mbit/s
    web = res.summary["workloads"]["web"]
    assert web["transfers_completed"] >= 0.9 * web["transfers_started"] > 0
    doc["links"][4]["queues"] = {"gw": {"fifo": {"limit": "1000p"}}, "campus": {"fifo": {"limit": "1000p"}}}
    fifo = alphaqos.run(doc, duration="4s")
    assert _flows(fifo)["probe"]["rtt_mean"] > base + 20e-3


def example_relative_service_mdrr():
    """Voice in the strict-priority queue never waits; the Relative queue's
    WRED drops early and its thresholds follow equation 2 every 50 ms."""
    res = alphaqos.run(EXAMPLES / "relative-service-mdrr.yaml", duration="5s")
    queues = res.summary["queues"]
    assert queues["n0->n1/hp"]["enq_pkts"] > 0 and queues["n0->n1/hp"]["drop_pkts"] == 0
    assert queues["n0->n1/relative"]["drop_aqm_pkts"] > 0
    assert _flows(res)["voice"]["delay_mean"] < 0.030 + 0.005  # the path's 30 ms, hardly a wait
    tuned = res.control.filter(pl.col("knob") == "max_th.green")
    assert tuned.height > 10 and res.control["handle"].unique().to_list() == ["n0->n1/relative"]
    # Every colour is tuned (equation 2 sets green's max_th; yellow and red keep
    # their configured 150:100:50 ratio to it), min_th = 0.15 max_th on each
    # curve after each change (min_fraction), and the agent's max_p on each.
    last = {row["knob"]: row["new_value"] for row in res.control.filter(pl.col("time") == tuned["time"].max()).to_dicts()}
    for colour, share in (("green", 1.0), ("yellow", 100 / 150), ("red", 50 / 150)):
        max_th = last[f"max_th.{colour}"]
        assert abs(max_th - share * last["max_th.green"]) < 1e-6 * max_th, colour
        assert abs(last[f"min_th.{colour}"] - 0.15 * max_th) < 1e-6 * max_th, colour
    assert res.control.filter(pl.col("knob") == "max_p.red")["new_value"].to_list()[-1] == 0.2


def example_deadline_admission():
    """Requests are admitted at 105 Mbit/s (125 MB in 10 s x 1.05) and the
    first one is on its way to meet its deadline."""
    res = alphaqos.run(EXAMPLES / "deadline-admission.yaml", duration="8s")
    admitted = res.admission.filter(pl.col("admitted") == 1)
    assert admitted.height >= 1 and set(admitted["rate_bps"].to_list()) == {105_000_000}
    first = res.transfers.filter(pl.col("transfer") == 0).to_dicts()[0]
    start = admitted["time"].min()
    assert first["bytes_acked"] >= 125e6 * (8 - start) / 10  # at least the deadline's pace
    assert res.reservation.height > 0
    assert _flows(res)["background"]["goodput_bps"] > 100e6  # red background fills what is left


def example_yaqs_bottleneck():
    """The fast queue stays short, the bulk flow sits in the slow queue and
    keeps its goodput, the ping waits little."""
    res = alphaqos.run(EXAMPLES / "yaqs-bottleneck.yaml", duration="5s")
    yaqs = res.yaqs.to_dicts()[0]
    assert yaqs["classified_slow"] > 0 and yaqs["slow_flows_max"] >= 1
    assert yaqs["fast_len_p90_bytes"] < 16_500
    assert _flows(res)["aggressive"]["goodput_bps"] > 5e6
    assert _flows(res)["probe"]["rtt_mean"] < 24e-3 + 5e-3
    assert res.summary["workloads"]["web"]["transfers_completed"] > 0


def example_gridftp_parallel_streams():
    """Eight streams move several times what one moves on the same lossy
    path; the one stays near the Mathis et al. rate."""
    res = alphaqos.run(EXAMPLES / "gridftp-parallel-streams.yaml", duration="8s")
    acked = {row["workload"]: row["bytes_acked"] for row in res.transfers.to_dicts()}
    assert acked["striped"] > 4 * acked["single"]
    mathis = 1448 * 8 / 0.08 * 1.22 / 0.00002**0.5
    assert acked["single"] * 8 / 8 < 2 * mathis  # bit/s over the 8 s
    streams = res.transfer_streams.filter(pl.col("workload") == "striped")
    assert streams.height == 8 and streams["bytes_acked"].min() > 0


HEADLINES.update({
    "examples/dtn-policed-circuit.yaml": example_dtn_policed_circuit,
    "examples/campus-fq-codel.yaml": example_campus_fq_codel,
    "examples/relative-service-mdrr.yaml": example_relative_service_mdrr,
    "examples/deadline-admission.yaml": example_deadline_admission,
    "examples/yaqs-bottleneck.yaml": example_yaqs_bottleneck,
    "examples/gridftp-parallel-streams.yaml": example_gridftp_parallel_streams,
})


def test_every_example_says_what_it_shows_and_what_to_look_at():
    for path in sorted(EXAMPLES.glob("*.yaml")):
        head = path.read_text().split("\nname:", 1)[0]
        assert "# What it shows:" in head and "# What to look at:" in head, path.name


@pytest.mark.parametrize("name", sorted(HEADLINES))
def test_headline(name):
    HEADLINES[name]()


def test_readme_validate_example_prints_what_the_readme_shows(tmp_path):
    """The README's error example, run as written (the sed, then validate)."""
    import re
    import shlex
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```console\n(\$ sed .*?)```", readme, re.S).group(1).splitlines()
    sed, validate, expected = block[0][2:], block[1][2:], block[2]
    sed_args = shlex.split(sed.split(">")[0])
    (tmp_path / "bad.yaml").write_bytes(subprocess.run(sed_args, cwd=ROOT, check=True, capture_output=True).stdout)
    assert validate.endswith("alphaqos validate bad.yaml")
    out = subprocess.run([sys.executable, "-m", "alphaqos", "validate", "bad.yaml"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() == expected
