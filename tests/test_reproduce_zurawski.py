"""``alphaqos reproduce zurawski-tc --quick``: the second document's
circuit (Zurawski, Section 5) emulated between namespaces the run makes
(real TCP, iperf3, tcpdump, ``alphaqos-emu``) and simulated at 1 Gbit/s and
at the scaled rate; some forty seconds. Every namespace and process is
gone afterwards; the findings are graded as the rule says, and those the
model must show are asserted on its numbers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from _system import ensure_debian_package, need_root

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from alphaqos import cli  # noqa: E402
from alphaqos import emulate as E  # noqa: E402
from alphaqos.reproduce import zurawski as Z  # noqa: E402

from test_reproduce import regraded  # noqa: E402


def _namespaces() -> set[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> tuple[int, Path, dict]:
    need_root("the emulated circuit's namespaces and raw sockets")
    try:
        E.emu_binary()
    except E.EmuError as exc:
        pytest.skip(str(exc))
    ensure_debian_package("iperf3", binary="iperf3")
    ensure_debian_package("tcpdump", binary="tcpdump")
    before = _namespaces()
    out = tmp_path_factory.mktemp("reproduce") / "zurawski"
    try:
        status = cli.main(["reproduce", "zurawski-tc", "--quick", "--quiet", "--out", str(out)])
    finally:
        left = {ns for ns in _namespaces() - before if ns.startswith("aqzur-")}
    assert not left, f"namespaces left behind: {left}"
    return status, out, json.loads((out / "results.json").read_text())


def test_no_process_of_the_run_is_left(quick):
    # The runs' iperf3 and tcpdump ran inside namespaces named aqzur-*; none survives them.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not [line for line in ps.splitlines() if ("iperf3" in line or "tcpdump" in line) and "10.10.200." in line]


def test_every_finding_is_graded_and_the_exit_status_follows(quick):
    status, _, results = quick
    assert len(results["findings"]) == 3
    for found in results["findings"]:
        assert found["grade"] == regraded(found), found
    assert status == (0 if all(f["holds"] for f in results["findings"]) else 1)


def test_the_simulator_shows_the_three_findings_at_both_scales(quick):
    _, _, results = quick
    runs = Z.sources(results["measured"])
    for rate in (Z.RESERVATION_BPS, Z.SCALED_BPS):
        sim = runs[f"sim/{rate // 1_000_000}M/cubic"]
        for config, check in Z.CHECKS.items():
            assert check(sim), (rate, config, {c: Z.share(m) for c, m in sim.items()})
        # Scaling keeps every share within two points.
    full, scaled = runs["sim/1000M/cubic"], runs["sim/200M/cubic"]
    for config in (*Z.CONFIGS, "htb90-1ms"):
        assert abs(Z.share(full[config]) - Z.share(scaled[config])) < 0.02, config


def test_emulated_unshaped_tcp_falls_far_below_the_policed_reservation(quick):
    _, _, results = quick
    m = results["measured"]["emu/cubic/unshaped"]
    assert Z.share(m) < 0.25 and m["retransmits"] > 0
    # iperf3's retransmissions are the ones tcpdump saw, and the emulator's policer made them.
    assert m["wire_retransmits"] == m["retransmits"] <= m["policer_drops"]
    assert m["socket_drops"] == 0


def test_the_report_has_the_tables_timing_and_plots(quick):
    _, out, results = quick
    report = (out / "report.md").read_text()
    assert "vs 2.3% (×" in report and "vs 171 (×" in report  # the document's numbers beside the model's
    assert "## Scaling" in report and "## The emulator's timing" in report
    assert "the policer's bucket: 31 KB" in report  # the open parameters, stated
    assert {p.name for p in out.iterdir()} >= {"report.md", "results.json", "scenarios", "throughput.png", "time_sequence.png"}
    timing = results["measured"]["emu/cubic/htb90"]["timing"]
    assert timing[0]["delay_error_p50_s"] < 1e-3


def test_a_missing_tool_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    need_root("the emulated runs")
    real = Z.shutil.which
    monkeypatch.setattr(Z.shutil, "which", lambda name: None if name == "iperf3" else real(name))
    out = tmp_path / "out"
    assert cli.main(["reproduce", "zurawski-tc", "--quick", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "iperf3 is not installed" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
