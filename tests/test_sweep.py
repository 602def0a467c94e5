"""``alphaqos sweep`` end to end, its runner, and the same sweep on a real
Dask cluster (a scheduler and two workers on 127.0.0.1).

The scenario is tiny (half a second of a TCP flow, Poisson noise and a ping
through one router; well under a second of wall time per run), so the grid
of 8 runs costs a few seconds on two cores."""

from __future__ import annotations

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from alphaqos import Results, cli
from alphaqos import columns as col

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from alphaqos import sweep  # noqa: E402
from alphaqos.runner import Task, run_tasks  # noqa: E402

TINY = {
    "name": "tiny-sweep",
    "duration": "0.5s",
    "seed": 3,
    "nodes": {"A": {"address": "10.0.0.1"}, "B": {"address": "10.0.0.2"}, "R": {"router": True}},
    "links": [
        {"between": ["A", "R"], "rate": "1Gbps", "delay": "1ms"},
        {"between": ["R", "B"], "rate": "100Mbps", "delay": "5ms", "queues": {"R": {"fifo": {"limit": "50p"}}}},
    ],
    "flows": [
        {"name": "bulk", "tcp": {"from": "A", "to": "B", "cc": "newreno"}},
        {"name": "noise", "poisson": {"from": "A", "to": "B", "rate": "20Mbps"}},
        {"name": "probe", "ping": {"from": "B", "to": "A", "interval": "50ms"}},
    ],
}
RATES = ["50Mbps", "100Mbps"]
CCS = ["newreno", "cubic"]
SEEDS = [3, 4]  # the scenario's seed and the next
GRID = ["--set", f"links[1].rate={','.join(RATES)}", "--set", f"flows[bulk].tcp.cc={','.join(CCS)}", "--seeds", "2"]
RUNS = len(RATES) * len(CCS) * len(SEEDS)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("scenario") / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def local(scenario, tmp_path_factory) -> tuple[int, Path, pl.DataFrame]:
    out = tmp_path_factory.mktemp("local") / "sweep"
    status = cli.main(["sweep", str(scenario), *GRID, "--out", str(out), "--jobs", "2", "--quiet"])
    return status, out, pl.read_parquet(out / "sweep.parquet")


def variant(rate: str, cc: str) -> dict:
    """The grid's variant, made by hand."""
    data = copy.deepcopy(TINY)
    data["links"][1]["rate"] = rate
    data["flows"][0]["tcp"]["cc"] = cc
    return data


# --- the table ------------------------------------------------------------------------


def test_one_row_per_run_in_grid_order_with_the_swept_values_seed_and_status(local):
    status, _, table = local
    assert status == cli.EXIT_OK
    expected = [(r, c, s) for r in RATES for c in CCS for s in SEEDS]
    assert table.select("links[1].rate", "flows[bulk].tcp.cc", "seed").rows() == expected
    assert table["status"].to_list() == ["ok"] * RUNS
    assert table["error"].null_count() == RUNS
    assert table["run"].n_unique() == RUNS
    for column in ("goodput_bps[flow=bulk]", "goodput_bps[flow=noise]", "loss[flow=bulk]", "loss[flow=probe]",
                   "retransmits[flow=bulk]", "drop_pkts[queue=R->B]", "drop_pkts[queue=A->R]"):  # fmt: skip
        assert column in table.columns, column
    assert "goodput_bps[flow=probe]" not in table.columns  # a ping has no goodput
    assert table.schema["retransmits[flow=bulk]"] == pl.Int64
    assert table.schema["goodput_bps[flow=bulk]"] == pl.Float64
    # The Poisson noise follows the seed: the two seeds of a variant differ.
    pairs = table.group_by("links[1].rate", "flows[bulk].tcp.cc").agg(pl.col("goodput_bps[flow=noise]").n_unique())
    assert (pairs["goodput_bps[flow=noise]"] == 2).all()


@pytest.mark.parametrize(("rate", "cc", "seed"), [("50Mbps", "newreno", 4), ("100Mbps", "cubic", 3)])
def test_a_row_holds_what_alphaqos_run_of_that_variant_reports(local, tmp_path, rate, cc, seed):
    _, _, table = local
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(variant(rate, cc), sort_keys=False))
    assert cli.main(["run", str(path), "--seed", str(seed), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    results = Results.load(tmp_path / "run")
    flows = results.summary["flows"]
    row = table.filter(
        (pl.col("links[1].rate") == rate) & (pl.col("flows[bulk].tcp.cc") == cc) & (pl.col("seed") == seed)
    ).row(0, named=True)
    assert row["goodput_bps[flow=bulk]"] == flows["bulk"]["goodput_bps"]
    assert row["goodput_bps[flow=noise]"] == flows["noise"]["goodput_bps"]
    assert row["loss[flow=bulk]"] == flows["bulk"]["drop_pkts"] / flows["bulk"]["tx_pkts"]
    assert row["loss[flow=probe]"] == flows["probe"]["loss"]
    assert row["retransmits[flow=bulk]"] == flows["bulk"]["retransmits"] > 0
    queues = dict(results.queue_summary.select("queue", "drop_pkts").iter_rows())
    assert row["drop_pkts[queue=R->B]"] == queues["R->B"] > 0
    assert row["drop_pkts[queue=A->R]"] == queues["A->R"] == 0


def test_the_directory_holds_every_runs_scenario_and_record(local, scenario):
    _, out, table = local
    described = json.loads((out / "sweep.json").read_text())
    assert described["runs"] == table["run"].to_list()
    assert described["sets"] == [GRID[1], GRID[3]] and described["seeds"] == 2
    first = table.row(0, named=True)
    written = yaml.safe_load((out / "runs" / f"{first['run']}.yaml").read_text())
    assert written == {**variant(RATES[0], CCS[0]), "seed": SEEDS[0]}
    record = json.loads((out / "runs" / f"{first['run']}.json").read_text())
    assert record["status"] == "ok" and record["figures"]["goodput_bps[flow=bulk]"] == first["goodput_bps[flow=bulk]"]
    assert not list(out.glob(".*")) and not list((out / "runs").glob(".*")), "staging files must be gone"


def test_a_plot_per_figure_and_swept_path_and_its_curves_are_the_seed_means(local, scenario):
    _, out, table = local
    plots = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert "goodput_bps.bulk--links.1.rate.png" in plots
    assert "retransmits.bulk--flows.bulk.tcp.cc.png" in plots
    # Figures zero in every run (the idle queues, the ping's loss) are not drawn.
    assert not [p for p in plots if p.startswith(("drop_pkts.A-to-R", "loss.probe"))]
    drawn = [c for c in table.columns if "[" in c and "=" in c and (table[c].fill_null(0) != 0).any()]
    assert len(plots) == 2 * len(drawn)
    assert all((out / "plots" / p).stat().st_size > 10_000 for p in plots)

    plan = sweep.plan_sweep(scenario, [GRID[1], GRID[3]], seeds=2)
    rate = plan.dimensions[0]
    assert rate.numeric == (50e6, 100e6)  # parsed by the schema: a numeric axis
    assert plan.dimensions[1].numeric is None  # names: placed in order
    lines = sweep.curves(plan, table, "goodput_bps[flow=bulk]", rate)
    assert [line.label for line in lines] == ["flows[bulk].tcp.cc=newreno", "flows[bulk].tcp.cc=cubic"]
    for line, cc in zip(lines, CCS, strict=True):
        assert line.x == [50e6, 100e6]
        for i, r in enumerate(RATES):
            values = table.filter((pl.col("links[1].rate") == r) & (pl.col("flows[bulk].tcp.cc") == cc))[
                "goodput_bps[flow=bulk]"
            ].to_list()
            assert (line.mean[i], line.low[i], line.high[i]) == (np.mean(values), min(values), max(values))


# --- failures ---------------------------------------------------------------------------


def test_a_failing_variant_is_a_row_that_says_why_and_the_others_run(scenario, tmp_path, capsys):
    out = tmp_path / "sweep"
    # A 576-byte MTU cannot carry the TCP flow's 1500-byte packets: only
    # that combination is wrong, so the sweep runs and reports it.
    status = cli.main(["sweep", str(scenario), "--set", "links[1].mtu=1500B,576B", "--out", str(out)])
    assert status == cli.EXIT_FAILURE
    table = pl.read_parquet(out / "sweep.parquet")
    ok, failed = table.rows(named=True)
    assert (ok["links[1].mtu"], ok["status"], ok["error"]) == ("1500B", "ok", None)
    assert ok["goodput_bps[flow=bulk]"] > 0
    assert (failed["links[1].mtu"], failed["status"]) == ("576B", "failed")
    assert failed["error"].startswith("ScenarioError: flows[0].tcp.mss: 1500B packets do not fit the 576B MTU")
    assert failed["goodput_bps[flow=bulk]"] is None and failed["drop_pkts[queue=R->B]"] is None
    printed = capsys.readouterr().out
    assert "failed links[1].mtu=576B seed=3: ScenarioError" in printed
    assert "2 runs (2 run now, 0 done before, 1 failed)" in printed


def test_the_runner_reports_a_crash_with_its_stderr_and_an_exception_in_one_line():
    crash = "import os, sys; sys.stderr.write('warming up\\nengine panicked at src/event.rs\\n'); sys.stderr.flush(); os._exit(101)"
    tasks = [
        Task("crash", "builtins:exec", (crash,)),
        Task("killed", "builtins:exec", ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)",)),
        Task("stopped", "builtins:exec", ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)",)),
        Task("raises", "builtins:int", ("ten",)),
        Task("fine", "builtins:divmod", (7, 2)),
    ]
    outcomes = {outcome.key: outcome for outcome in run_tasks(tasks, jobs=2)}
    assert outcomes["fine"].ok and outcomes["fine"].value == (3, 1)
    assert not outcomes["crash"].ok
    assert outcomes["crash"].error == "exit status 101: warming up | engine panicked at src/event.rs"
    assert outcomes["killed"].error == "killed by SIGKILL (nothing on stderr)"
    assert outcomes["raises"].error == "ValueError: invalid literal for int() with base 10: 'ten'"
    # SIGKILL is how the OOM killer ends a run: a failure. SIGTERM stops it:
    # not a result to record.
    assert [key for key, o in outcomes.items() if o.interrupted] == ["stopped"]
    assert outcomes["stopped"].error == "killed by SIGTERM (nothing on stderr)"


# --- resuming -------------------------------------------------------------------------------


def test_an_interrupted_sweep_started_again_runs_only_what_is_missing(local, scenario, tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = [sys.executable, "-m", "alphaqos", "sweep", str(scenario), *GRID, "--out", str(out), "--jobs", "1", "--quiet"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    children: set[int] = set()
    try:
        deadline = time.monotonic() + 30
        while not list(out.glob("runs/*.json")) and time.monotonic() < deadline and process.poll() is None:
            children |= _children(process.pid)
            time.sleep(0.02)
        children |= _children(process.pid)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == cli.EXIT_INTERRUPTED, err.decode()
    done = {p: p.stat().st_mtime_ns for p in out.glob("runs/*.json")}
    assert 1 <= len(done) < RUNS
    assert not (out / "sweep.parquet").exists()
    assert children and not any(_alive(pid) for pid in children), "no run may outlive the sweep"

    assert cli.main(["sweep", str(scenario), *GRID, "--out", str(out), "--jobs", "2"]) == cli.EXIT_OK
    assert f"{RUNS} runs ({RUNS - len(done)} run now, {len(done)} done before, 0 failed)" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in done} == done, "finished runs are not made again"
    assert len(list(out.glob("runs/*.json"))) == RUNS
    assert pl.read_parquet(out / "sweep.parquet").equals(local[2])

    # Started again once more: nothing to run, the same table.
    assert cli.main(["sweep", str(scenario), *GRID, "--out", str(out), "--quiet"]) == cli.EXIT_OK
    assert pl.read_parquet(out / "sweep.parquet").equals(local[2])


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(child) for child in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("links[1].rat=1", "tiny.yaml:17: links[1].rat: not a scenario field (expected one of: between, rate,"),
        ("links[9].rate=1Gbps", "links: no item 9 (the list has 2)"),
        ("flows[nosuch].start=1s", "flows: no item named 'nosuch' (names: bulk, noise, probe)"),
        ("flows.start=1s", "flows: a list: select an item as flows[index]"),
        ("nodes.X.address=10.0.0.9", "nodes: no entry 'X' (entries: A, B, R)"),
        ("links[1].rate.x=1", "links[1].rate: a value, not a group of fields"),
        ("links[1].rate=1Gbps,fast", "links[1].rate: expected a rate like '10Gbps'"),
        ("flows[bulk].tcp.cc=cubic,foo", "flows[0].tcp.cc: unknown congestion control 'foo'"),
        ("seed=1,2", "seed: the seed is swept with --seeds N"),
        ("links[1].rate", "malformed --set 'links[1].rate': expected PATH=V1,V2,..."),
        ("=1Gbps", "malformed --set '=1Gbps'"),
        ("links[1].rate=1Gbps,,2Gbps", "expected one or more values after '='"),
        ("links[1.rate=1Gbps", "'links[1.rate' is not a path like links[2].rate"),
        ("links[1].rate=1Gbps,1Gbps", "a value is repeated"),
        ("links[1].queue.fifo.limit=[1,2", "a quote or bracket is not closed"),
    ],
)
def test_bad_sweep_input_is_one_line_naming_it_exit_2_and_nothing_written(scenario, tmp_path, capsys, option, message):
    out = tmp_path / "new" / "sweep"
    assert cli.main(["sweep", str(scenario), "--set", option, "--out", str(out)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("alphaqos: error: "), err
    assert message in err
    assert not (tmp_path / "new").exists()


def test_the_same_field_twice_jobs_with_dask_and_a_foreign_directory_are_refused(scenario, tmp_path, capsys):
    same = ["--set", "flows[bulk].start=0s,1ms", "--set", "flows[0].start=2ms"]
    assert cli.main(["sweep", str(scenario), *same, "--out", str(tmp_path / "a")]) == cli.EXIT_USAGE
    assert "flows[0].start: set twice (also by --set flows[bulk].start=...)" in capsys.readouterr().err
    both = ["--set", "flows[0].start=0s", "--jobs", "2", "--dask", "tcp://127.0.0.1:1"]
    assert cli.main(["sweep", str(scenario), *both, "--out", str(tmp_path / "b")]) == cli.EXIT_USAGE
    assert "not allowed with argument" in capsys.readouterr().err
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "mine.txt").write_text("keep")
    assert cli.main(["sweep", str(scenario), "--set", "flows[0].start=0s", "--out", str(tmp_path / "c")]) == 2
    assert "exists and holds no sweep (sweep.json)" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["mine.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


# --- figures ------------------------------------------------------------------------------------


def test_figures_read_queue_sojourn_and_workload_completion_times_when_present():
    import alphaqos

    results = alphaqos.run(TINY, duration="100ms")
    # The engine reports sojourn times per queue; the figures carry them.
    engine_row = sweep.figures(results)
    engine_mean = results.queue_summary.filter(pl.col("queue") == "R->B")["sojourn_mean"][0]
    assert engine_mean is not None and engine_row["sojourn_mean[queue=R->B]"] == pytest.approx(engine_mean)
    queues = results.queue_summary.height
    results.queue_summary = results.queue_summary.with_columns(
        pl.Series("sojourn_mean", [0.001 * (i + 1) for i in range(queues)]),
        pl.Series("sojourn_p99", [0.01 * (i + 1) for i in range(queues)]),
    )
    fct_ns = [10**9, 2 * 10**9, None, 4 * 10**9, 3 * 10**9]
    results.transfers = pl.DataFrame(
        {"workload": ["web", "web", "web", "web", "bulk"], "fct_ns": fct_ns, "bytes": [1000, 2000, 3000, 4000, 10**9]},
        schema={"workload": pl.String, "fct_ns": pl.Int64, "bytes": pl.Int64},
    )
    row = sweep.figures(results)
    index = results.queue_summary["queue"].to_list().index("R->B")
    assert row["sojourn_mean[queue=R->B]"] == pytest.approx(0.001 * (index + 1))
    assert row["sojourn_p99[queue=R->B]"] == pytest.approx(0.01 * (index + 1))
    web = [1.0, 2.0, 4.0]  # the unfinished transfer has no completion time
    assert row["fct_p50[workload=web]"] == pytest.approx(np.percentile(web, 50))
    assert row["fct_p99[workload=web]"] == pytest.approx(np.percentile(web, 99))
    assert row["unfinished[workload=web]"] == 1
    assert (row["fct_p50[workload=bulk]"], row["unfinished[workload=bulk]"]) == (3.0, 0)
    assert row["goodput_bps[flow=bulk]"] == results.summary[col.FLOWS]["bulk"][col.GOODPUT_BPS]


# --- the same sweep on a Dask cluster --------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A scheduler and two single-thread workers on 127.0.0.1; every one of
    them is stopped at the end, also when a test fails."""
    pytest.importorskip("distributed")
    logs = tmp_path_factory.mktemp("dask")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    processes: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        log = open(logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        processes.append(subprocess.Popen([sys.executable, "-m", "dask", *args, "--no-dashboard"], stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True))  # fmt: skip
        log.close()

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port))
        for i in (1, 2):
            start(f"worker{i}", "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny")
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def test_a_sweep_on_dask_writes_the_table_of_the_local_sweep(local, scenario, dask_cluster, tmp_path):
    from distributed import Client

    out = tmp_path / "sweep"
    assert cli.main(["sweep", str(scenario), *GRID, "--out", str(out), "--dask", dask_cluster, "--quiet"]) == 0
    assert pl.read_parquet(out / "sweep.parquet").equals(local[2])
    assert (out / "sweep.parquet").read_bytes() == (local[1] / "sweep.parquet").read_bytes()
    with Client(dask_cluster, timeout="10s") as client:
        executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert len(executed) == 2 and sum(executed.values()) == RUNS, executed


def test_reproduce_runs_on_dask_with_the_results_of_local_processes(dask_cluster):
    from alphaqos.reproduce import RunSpec, run_specs, yan2013

    timeline = yan2013.Timeline(1, (0.25, 1), udp_start=0.1, ping=False)
    specs = [
        RunSpec(f"r{rate}", yan2013.testbed(f"t{rate}", yan2013.three_queues(30, 50, 20), rate, timeline),
                {"window": (0.5, 1), "tcp": (0.25, 1)})
        for rate in (0.0, 2.0)
    ]  # fmt: skip
    local = run_specs(yan2013.__name__, specs, jobs=2)
    remote = run_specs(yan2013.__name__, specs, dask=dask_cluster)
    assert list(remote) == ["r0.0", "r2.0"]
    for key in local:
        assert local[key]["throughput_bps"] > 0
        for measure in ("throughput_bps", "ooo_arrivals", "egress_lost", "retransmits", "events"):
            assert local[key][measure] == remote[key][measure], (key, measure)
