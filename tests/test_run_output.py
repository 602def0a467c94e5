"""Issue 20, run output: every traffic source in the summaries and plots,
unfinished transfers said to be unfinished, ping RTT per phase, interrupts
honoured at any duration with nothing half-written, sweeps that refuse to
replace another grid, many workloads aggregated, units from the data, and
numbers never cut in tables."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from _cli import cli  # noqa: E402
from alphaqos import columns as col  # noqa: E402
from alphaqos import plots  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# A 20 GB transfer over 10 Mbit/s starting at 1 s of a 2 s run: unfinished.
BIG = """\
name: big-transfer
duration: 2s
nodes:
  A: {address: 10.0.0.1}
  B: {address: 10.0.0.2}
  R: {router: true}
links:
  - {between: [A, R], rate: 1Gbps, delay: 1ms}
  - {between: [R, B], rate: 10Mbps, delay: 5ms, queues: {R: {fifo: {limit: 100}}}}
flows:
  - name: probe
    ping: {from: A, to: B, interval: 50ms}
workloads:
  - name: big
    transfer: {from: A, to: B, size: 20GB}
    start: 1s
"""


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    where = tmp_path_factory.mktemp("big")
    (where / "big.yaml").write_text(BIG)
    done = cli("run", str(where / "big.yaml"), "--out", str(where / "run"))
    assert done.returncode == 0, done.stderr
    return where, done


def test_an_unfinished_transfer_is_said_to_be_unfinished(big_run):
    where, done = big_run
    assert "workload big: 1 of 1 transfer unfinished when the run ended" in done.stdout
    assert "of 20 GB delivered" in done.stdout
    big = json.loads((where / "run" / "summary.json").read_text())[col.WORKLOADS]["big"]
    assert big[col.TRANSFERS_UNFINISHED] == 1 and big[col.TRANSFERS_COMPLETED] == 0
    assert big[col.BYTES_OFFERED] == 20_000_000_000
    # 1 s at most of 10 Mbit/s: at most 1.25 MB delivered, and some.
    assert 0 < big[col.BYTES_DELIVERED] <= 1_250_000


def test_validate_counts_the_workloads(big_run):
    where, _ = big_run
    done = cli("validate", str(where / "big.yaml"))
    assert done.returncode == 0
    assert "1 flow (1 ping), 1 workload (1 transfer)" in done.stdout


def test_the_ping_is_reported_per_phase_not_as_one_mean(big_run):
    where, done = big_run
    probe = json.loads((where / "run" / "summary.json").read_text())[col.FLOWS]["probe"]
    idle, loaded = probe[col.RTT_PHASES]
    assert (idle[col.START], idle[col.END], idle[col.ACTIVE]) == (0.0, 1.0, [])
    assert (loaded[col.START], loaded[col.END], loaded[col.ACTIVE]) == (1.0, 2.0, ["big"])
    # Idle: 2 x (1 + 5) ms of propagation plus transmission; loaded: the
    # transfer fills the 100-packet queue of 10 Mbit/s (up to 120 ms). Under
    # linux-6 (the default since issue 21) HyStart leaves slow start early
    # and the queue fills within the second: median 47.5 ms, max 70.9 ms
    # (the RFC host's overshoot: 84.8 and 106 ms).
    assert 0.012 <= idle[col.RTT_P50] < 0.013
    assert loaded[col.RTT_MAX] > 0.05 and loaded[col.RTT_P50] > 3 * idle[col.RTT_P50]
    assert "median" in done.stdout and "Ping RTT while other traffic runs" in done.stdout
    assert " ± " not in done.stdout


def _results(where: Path):
    return alphaqos.Results.load(where / "run")


def _draw(draw, results):
    axes = Figure().add_subplot()
    assert draw(results, axes)
    return axes


def test_plots_show_workloads_in_the_units_of_the_data(big_run):
    results = _results(big_run[0])
    axes = _draw(plots._throughput, results)
    assert [line.get_label() for line in axes.get_lines()] == ["big (workload delivered)"]
    assert axes.get_ylabel() == "rate (Mbit/s)"  # a 10 Mbit/s link, not Gbit/s
    assert 9 < max(axes.get_lines()[0].get_ydata()) <= 10
    # The offered spike (20 GB in one interval) has an axis of its own.
    axes = _draw(plots._workload_rate, results)
    assert max(axes.get_lines()[0].get_ydata()) > 9 and axes.get_ylim()[1] < 11
    axes = _draw(plots._queue_length, results)
    assert axes.get_ylabel() == "queue length (packets)"


def test_units_follow_the_peak():
    assert plots.rate_unit(10e6) == (1e6, "Mbit/s") and plots.rate_unit(4.999e9) == (1e9, "Gbit/s")
    assert plots.size_unit(4_000) == (1e3, "KB") and plots.size_unit(120) == (1.0, "B")
    assert plots.size_unit(100e6) == (1e6, "MB")


TCP_STOPS = """\
name: stops
duration: 3s
nodes:
  A: {address: 10.0.0.1}
  B: {address: 10.0.0.2}
links:
  - {between: [A, B], rate: 100Mbps, delay: 2ms}
flows:
  - name: t
    tcp: {from: A, to: B, cc: cubic}
    stop: 1s
"""


def test_cwnd_is_drawn_only_while_the_flow_runs(tmp_path):
    results = alphaqos.run(yaml.safe_load(TCP_STOPS))
    assert results.tcp[col.TIME].max() > 2  # the engine goes on reporting it
    axes = _draw(plots._cwnd, results)
    assert max(axes.get_lines()[0].get_xdata()) <= 1.0


def _many_workloads(n: int) -> dict:
    doc = yaml.safe_load(TCP_STOPS)
    doc["flows"] = []
    doc["duration"] = "1s"
    doc["workloads"] = [
        {"name": f"w{i}", "transfer": {"from": "A", "to": "B", "size": "20KB"}, "start": f"{i * 900 // n}ms"}
        for i in range(n)
    ]
    return doc


def test_many_workloads_draw_a_handful_of_series_quickly(tmp_path):
    results = alphaqos.run(_many_workloads(300))
    begin = time.perf_counter()
    written = plots.write_plots(results, tmp_path / "plots")
    took = time.perf_counter() - begin
    assert {p.name for p in written} >= {"throughput.png", "workload_rate.png", "fct_cdf.png"}
    for draw in (plots._throughput, plots._fct_cdf):
        labels = [line.get_label() for line in _draw(draw, results).get_lines()]
        assert len(labels) == plots.TOP_SERIES + 1, labels
        assert labels[-1].startswith("292 other")
    axes = _draw(plots._throughput, results)
    # The others are their sum: every byte delivered is on the plot.
    summed = sum(sum(line.get_ydata()) for line in axes.get_lines())
    assert summed == pytest.approx(results.workload[col.DELIVERED_BPS].sum() / 1e6)
    assert took < 20, f"plots took {took:.1f} s"


def test_many_knob_changes_are_a_step_line_not_ticks():
    times = [i * 0.001 for i in range(500)]
    control = pl.DataFrame({col.TIME: times, col.KNOB: ["max_th"] * 500})
    axes = Figure().add_subplot()
    assert plots.mark_changes(axes, control) == 500
    assert not axes.collections  # no ticks
    (twin,) = [a for a in axes.figure.axes if a is not axes]
    (line,) = twin.get_lines()
    assert line.get_ydata()[-1] == 500
    few = Figure().add_subplot()
    assert plots.mark_changes(few, control.head(5)) == 5 and len(few.collections) == 1


def test_duration_leaves_late_workloads_out_with_a_note(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump(_many_workloads(20)))
    out = tmp_path / "run"
    done = cli("run", str(path), "--duration", "500ms", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("alphaqos: note:")]
    # Starts at 0, 45, ... 855 ms: those at 540 ms and after (8 of them) are left out.
    assert len(notes) == 8 and "workload 'w12' starts at 540ms" in notes[0] and "left out" in notes[0]
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary[col.WORKLOADS], key=lambda n: int(n[1:])) == [f"w{i}" for i in range(12)]
    run = alphaqos.run(str(path), duration="500ms")
    assert len(run.scenario.workloads) == 12


def test_numbers_are_never_cut_in_tables():
    from alphaqos.cli._tables import _fit, _table
    from rich import box
    from rich.console import Console

    table = _table("t", box.SIMPLE_HEAD, ["flow"], ["rate", "enqueued"])
    table.add_row("a-rather-long-flow-name", "4.999 Gbps", "5,918,273,114")
    console = Console(width=40, record=True, file=open(os.devnull, "w"))
    console.print(_fit(table))
    text = console.export_text()
    assert "4.999 Gbps" in text and "5,918,273,114" in text and "…" not in text


LONG = """\
name: long
duration: 100d
nodes:
  A: {address: 10.0.0.1}
  B: {address: 10.0.0.2}
links:
  - {between: [A, B], rate: 1Gbps, delay: 1ms}
flows:
  - name: u
    udp: {from: A, to: B, rate: 500Mbps}
"""


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_ends_a_long_run_within_a_second_leaving_nothing(tmp_path, sig, status):
    path = tmp_path / "long.yaml"
    path.write_text(LONG)
    out = tmp_path / "runs" / "long"
    process = subprocess.Popen([sys.executable, "-m", "alphaqos", "run", str(path), "--out", str(out), "--quiet"],
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        # Wait until it simulates (its staged directory exists).
        while not any((tmp_path / "runs").glob(".long.partial-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        assert process.poll() is None
        # From the signal to the process's end (wait() returning), not to
        # its message: the clean-up and the interpreter's exit both count.
        # Start-up, however slow on a loaded machine, is not timed.
        sent = time.monotonic()
        process.send_signal(sig)
        try:
            process.wait(timeout=30)
        finally:
            took = time.monotonic() - sent
        err = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    assert process.returncode == status, err
    assert err.startswith("alphaqos: interrupted" if sig == signal.SIGINT else "alphaqos: terminated"), err
    assert took < 1.0, f"{took:.2f} s from the signal to the end of the process"
    # Nothing half-written: no run directory, no hidden .long.partial-*,
    # not even the runs/ directory made for it.
    assert not (tmp_path / "runs").exists(), list((tmp_path / "runs").iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.yaml"]


SWEEP = LONG.replace("name: long\nduration: 100d", "name: sw\nduration: 100ms")


def test_a_sweep_refuses_to_replace_another_grid(tmp_path):
    path = tmp_path / "sw.yaml"
    path.write_text(SWEEP)
    out = tmp_path / "sweep"
    assert cli("sweep", str(path), "--set", "links[0].delay=1ms", "--out", str(out), "--quiet", "--jobs", "1").returncode == 0
    before = (out / "sweep.json").read_text()
    done = cli("sweep", str(path), "--set", "links[0].delay=5ms", "--out", str(out), "--quiet", "--jobs", "1")
    assert done.returncode == 2
    assert "holds another sweep" in done.stderr and "--force" in done.stderr and "another --out" in done.stderr
    assert (out / "sweep.json").read_text() == before
    # The same grid resumes; --force replaces.
    assert cli("sweep", str(path), "--set", "links[0].delay=1ms", "--out", str(out), "--quiet").returncode == 0
    done = cli("sweep", str(path), "--set", "links[0].delay=5ms", "--out", str(out), "--quiet", "--force", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert pl.read_parquet(out / "sweep.parquet")["links[0].delay"].to_list() == ["5ms"]


def test_a_sweep_whose_runs_all_failed_exits_1(tmp_path):
    path = tmp_path / "sw.yaml"
    path.write_text(SWEEP)
    done = cli("sweep", str(path), "--set", "flows[0].udp.size=9000B,20000B", "--out", str(tmp_path / "s"), "--quiet")
    assert done.returncode == 1, done.stderr
