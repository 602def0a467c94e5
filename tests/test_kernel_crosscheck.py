"""The kernel cross-check (benches/kernel_crosscheck.py, issue 21) at its
one small case: one CUBIC flow through a drop-tail queue of one BDP, 50
Mbit/s, 20 ms RTT, 10 s; real Linux TCP between namespaces through the
emulator against the simulator's profiles. Goodput within 15 % of the
kernel's; the namespaces and processes the run made are gone after it
(also when it fails). ``make bench`` runs the other cases."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest
from _system import need_root

pytestmark = pytest.mark.serial

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("kernel_crosscheck", ROOT / "benches" / "kernel_crosscheck.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _ours() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("aqkx-")]


def _children() -> list[str]:
    """This test process's child processes still alive (the emulator, iperf3, ...), as 'pid command'."""
    me, out = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            out.append(f"{stat.parent.name} {text.split('(', 1)[1].split(')', 1)[0]}")
    return out


def test_droptail_kernel_and_simulator_agree():
    need_root("network namespaces for the kernel's run")
    kx = _module()
    before = _ours()
    try:
        result = kx.run_case("droptail", 10.0)
    finally:
        assert _ours() == before, "the cross-check left its namespaces behind"
        assert not _children(), f"processes left running: {_children()}"
    k = result["kernel"]
    # The sender's counters come from its namespace: every retransmission of
    # this loss-only path belongs to a recovery, a probe or a timeout.
    c = k["counters"]
    assert c is not None and set(c) == set(kx.COUNTERS)
    if k["retransmits"]:
        assert c["TcpExtTCPSackRecovery"] + c["TcpExtTCPLossProbes"] + c["TcpExtTCPTimeouts"] >= 1, c
    # The path holds 50 Mbit/s: the kernel fills most of it.
    assert 0.8 * 50e6 <= k["goodput_bps"] <= 50e6, k["goodput_bps"]
    # linux-6-paced: the kernel's own sender as iperf3 sets it up (see PROFILES).
    for prof in ("default", "near-linux-6", "linux-6-paced"):
        s = result["sim"][prof]
        print(f"{prof}: sim {s['goodput_bps'] / 1e6:.2f} Mbit/s, kernel {k['goodput_bps'] / 1e6:.2f} Mbit/s, "
              f"retx {s['retransmits']} vs {k['retransmits']}, load {k['load_avg_1min']}")  # fmt: skip
        assert abs(s["goodput_ratio"] - 1) <= kx.TARGET, f"{prof}: goodput x{s['goodput_ratio']:.3f} of the kernel's"
        # The time-sequence is sampled over the whole run, in both.
        assert s["time"][-1] >= 9.9 and k["time"][-1] >= 9.9


def test_a_failed_run_leaves_nothing_behind(monkeypatch):
    """The kernel's run failing after the namespaces, the emulator and the
    iperf3 server are up: all three are gone after, and the error says why."""
    need_root("network namespaces for the kernel's run")
    import alphaqos.emulate as emulate

    kx = _module()
    before = _ours()
    monkeypatch.setattr(emulate, "wait_for", lambda *a, **k: False)
    with pytest.raises(emulate.EmuError, match="did not start listening"):
        kx.kernel(kx.case_spec("droptail", 5.0))
    assert _ours() == before
    assert not _children(), f"processes left running: {_children()}"


def test_the_two_rtts_case_gives_each_flow_its_own_rtt():
    """The case of two RTTs (no root: its simulated path and the kernel's
    flow delays): flow 1's sender is 15 ms further away each way, in the
    simulator a host link of its own, in the emulator a delay of its
    address's packets; the smallest smoothed RTTs of the two flows are
    10 and 40 ms apart by about the 30 ms that adds (the FIFO they share
    adds up to 25 ms to both)."""
    import alphaqos

    kx = _module()
    spec = kx.case_spec("two-rtts", 1.0)
    assert kx.access_delays(spec) == [0.0, pytest.approx(0.015)]
    sc = kx.scenario(spec, {})
    assert [f["tcp"]["from"] for f in sc["flows"]] == ["snd", "snd1"]
    assert sc["nodes"]["snd1"]["address"] == kx.sender_ip(1) == "10.10.200.21"
    tcp = alphaqos.run(sc).tables()["tcp"]
    lo = {f: tcp.filter(tcp["flow"] == f)["srtt"].min() for f in ("f0", "f1")}
    assert 0.010 <= lo["f0"] < 0.035 and 0.040 <= lo["f1"] < 0.065, lo
    assert 0.020 <= lo["f1"] - lo["f0"] <= 0.040, lo


def test_several_kernel_runs_make_one_reference_with_its_ranges():
    """``--repeat``: the kernel is not deterministic, so several runs give
    the reference: medians of goodput and retransmissions, the median
    bytes at each 0.1 s, each run's time-sequence gap from that median; a
    simulated figure more than 15 % off the median but inside the runs'
    range is told apart from one outside it."""
    kx = _module()

    def run(bps, retx, scale):
        t = [round(0.1 * i, 3) for i in range(1, 51)]
        return {"goodput_bps": bps, "retransmits": retx, "time": t, "bytes": [int(scale * 1e6 * x) for x in t],
                "delay_error_p99_s": 1e-5, "load_avg_1min": [0.1, 0.2], "flow_bps": None, "path": {"queues": {}}}  # fmt: skip

    runs = [run(80e6, 300, 1.0), run(90e6, 200, 1.2), run(70e6, 420, 0.9)]
    for r, n in zip(runs, (4, 5, 3)):
        r["counters"] = kx.parse_nstat(f"TcpExtTCPSackRecovery {n} 0.0")
    k = kx.combine(runs, 5.0)
    assert k["goodput_bps"] == 80e6 and k["retransmits"] == 300
    assert k["spread"]["goodput_bps"] == [70e6, 90e6] and k["spread"]["retransmits"] == [200, 420]
    assert k["bytes"][19] == 2_000_000  # at 2 s: the median of 2.0, 2.4 and 1.8 MB
    assert k["spread"]["seq"] == pytest.approx(0.2)  # the 1.2x run, 20 % above the median from 2 s on
    assert kx.verdict({"retransmits": 340}, k, "retransmits", 340 / 300) == "yes"
    assert kx.verdict({"retransmits": 400}, k, "retransmits", 400 / 300) == "in kernel range"
    assert kx.verdict({"retransmits": 500}, k, "retransmits", 500 / 300) == "no (51.7 pts over)"
    assert kx.combine(runs[:1], 5.0) is runs[0], "one run is its own reference"
    table = kx.table([{"case": "red", "kernel": k, "sim": {}}])
    assert "| red | kernel x3 | 80.0 (70.0-90.0) | 1 | - | 300 (200-420) |" in table, table
    assert "| red | kernel | 4 / 5 / 3 |" in kx.recovery_table([{"case": "red", "kernel": k, "sim": {}}]), "each run's counters"


def test_the_senders_counters_are_read_from_nstat():
    """The kernel sender's counters (``nstat -az`` in its namespace): the
    ones named in COUNTERS, 0 where nstat lists none, other lines ignored;
    the recovery table sets each run's beside the engine's recoveries."""
    kx = _module()
    text = ("#kernel\nTcpExtTCPSackRecovery           4                  0.0\n"
            "TcpExtTCPHystartTrainDetect     1                  0.0\nTcpExtTCPHystartTrainCwnd       463                0.0\n"
            "TcpExtTCPSackShifted            332                0.0\nIpInReceives 9 0.0\n")  # fmt: skip
    c = kx.parse_nstat(text)
    assert set(c) == set(kx.COUNTERS)
    assert c["TcpExtTCPSackRecovery"] == 4 and c["TcpExtTCPHystartTrainCwnd"] == 463 and c["TcpExtTCPTimeouts"] == 0
    k = {"counters": c}
    table = kx.recovery_table([{"case": "red", "kernel": k, "sim": {"linux-6-paced": {"recoveries": 3}}}])
    assert "| red | kernel | 4 | 1 (463), 0 (0) | 0 | 0 |" in table, table
    assert "| | linux-6-paced | 3 |" in table
