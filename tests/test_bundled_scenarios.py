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
