"""``alphaqos transfer`` over the emulated circuit of issue 23's validation:
``alphaqos emulate``'s engine between network namespaces the test makes, on
the third source document's path scaled to 100 Mbit/s (``_base_path``,
``af_scenario``): the edge router's policer marks the base connection's
excess over its reservation red, the core runs RIO on the bottleneck, and
constant-rate UDP background (50 Mbit/s, iperf3) is marked red.

A transfer with a feasible deadline meets it, the mean of its reservation is
at most 1.1 x size / deadline, the receiver's file and hash are the
sender's; its base connection (paced, and with ``alphaqos_base`` when the
controller is built) holds its paced rate within 5 % over the steady part
with retransmissions below 0.1 % of its segments. The file's integrity is
asserted in every run; the timing claims are not graded (skipped, with the
hold-up named) when the emulator was held up beyond zurawski's threshold
(5 ms), i.e. the machine could not hold the path's rate."""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator

import pytest
from _base_path import AF_PATH, DISTURBED_S, RCV_IP, af_scenario, background_bps, emulated_path, held_up_s, p99_late_s, udp_background
from _system import need_root
from _transfer import binary, make_file, receiver

from alphaqos.cli import main
from alphaqos.provision.shape import netns
from alphaqos.transfer import bpf

pytestmark = pytest.mark.serial

MiB = 1 << 20
#: The path's rate for the transfer (--rate) and the edge policer's
#: reservation: half the 100 Mbit/s bottleneck, as the slides' 500 of 1000.
PATH_RATE_BPS, BACKGROUND_BPS = 50_000_000, 50_000_000
SIZE, DEADLINE_S = 24 * MiB, 8


@pytest.fixture(scope="module")
def transfer(tmp_path_factory):
    """One transfer over the emulated circuit: (report, JSON lines, the
    receiver's events, files equal, emulator's hold-up s, p99 delay error s, cc note)."""
    need_root("network namespaces and a BPF congestion control")
    binary()
    tmp = tmp_path_factory.mktemp("xfer-emu")
    src = make_file(tmp / "big.bin", SIZE, seed=11)
    t0 = time.monotonic()
    ok, note = bpf.ensure_loaded()  # pacing alone (noted) where the controller is not built
    marks = [("register", time.monotonic())]
    try:
        with emulated_path(af_scenario(PATH_RATE_BPS, background_bps=BACKGROUND_BPS, duration_s=DEADLINE_S), AF_PATH, prefix="aqxe") as (b, emu):
            marks.append(("namespaces and emulator", time.monotonic()))
            bg_start = time.monotonic()
            with udp_background(b, BACKGROUND_BPS, DEADLINE_S + 4), receiver(tmp / "in", netns=b.rcv, listen=RCV_IP) as rx:
                marks.append(("background and receiver", time.monotonic()))
                # In-process (no Python start-up, seconds on a loaded
                # machine), in the sender's namespace: the data mover it
                # starts inherits it.
                out = io.StringIO()
                with netns(b.snd), contextlib.redirect_stdout(out):
                    status = main(["transfer", "send", str(src), rx.addr, "--deadline", f"{DEADLINE_S}s", "--rate", f"{PATH_RATE_BPS}bps",
                                   "--block", "1MiB", "--interval", "250ms", "--json"])  # fmt: skip
                marks.append(("transfer", time.monotonic()))
                events = rx.events()
                same = (rx.dir / "big.bin").is_file() and (rx.dir / "big.bin").read_bytes() == src.read_bytes()
            bg_s = time.monotonic() - bg_start
            tables = emu.stop()
    finally:
        if ok:
            bpf.unload()
    marks.append(("stop and clean up", time.monotonic()))
    print("set-up and run: " + ", ".join(f"{k} {t - (marks[i - 1][1] if i else t0):.1f} s" for i, (k, t) in enumerate(marks)))
    assert status == 0, out.getvalue()[-2000:]
    lines = [json.loads(x) for x in out.getvalue().splitlines() if x.startswith("{")]
    report = lines[-1]
    # The background was there: what entered the emulator while it ran (its
    # start-up and stop in the span: a lower bound of its rate).
    bg_in, bg_out = background_bps(tables, bg_s)
    print(f"background {bg_in / 1e6:.1f} Mbit/s in, {bg_out / 1e6:.1f} out over {bg_s:.1f} s")
    assert bg_in >= 0.7 * BACKGROUND_BPS, f"the background did not run: {bg_in / 1e6:.1f} Mbit/s"
    return report, lines[:-1], events, same, held_up_s(tables), p99_late_s(tables), note


@contextlib.contextmanager
def _graded(held_up: float, p99: float) -> Iterator[None]:
    """A timing claim that fails in a run the emulator was held up in beyond
    DISTURBED_S is not graded (skipped, with the hold-up named): the
    machine did not hold the path's rate. One that holds passes as is."""
    try:
        yield
    except AssertionError as exc:
        if held_up > DISTURBED_S:
            pytest.skip(f"not graded: the emulator was held up {held_up * 1e3:.1f} ms (p99 delay error {p99 * 1e3:.2f} ms), "
                        f"above the {DISTURBED_S * 1e3:.0f} ms threshold: the machine did not hold the path's rate ({exc})")  # fmt: skip
        raise


def test_the_file_arrives_whole(transfer):
    report, _, events, same, *_ = transfer
    assert same, "the receiver's file differs from the sender's"
    (complete,) = [e for e in events if e.get("event") == "complete"]
    assert complete["hash"] == report["hash"] and report["blocks_resent"] == 0, (complete, report)


def test_a_feasible_deadline_is_met_with_a_small_reservation(transfer):
    report, lines, _, _, held_up, p99, note = transfer
    print(json.dumps({k: report[k] for k in ("cc", "elapsed_s", "mean_reserved_bps", "constant_bps", "base", "additional_bytes")}),
          f"held up {held_up * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms; {note}")  # fmt: skip
    with _graded(held_up, p99):
        assert report["met"], report
        assert report["mean_reserved_bps"] <= 1.1 * SIZE * 8 / DEADLINE_S, report
        # The reservation followed the bytes left: it came down as the
        # additional connection (red, beside the red background) carried its part.
        assert report["additional_bytes"] > 0 and len(report["reservation_steps"]) >= 2, report


def test_the_base_connection_holds_its_rate(transfer):
    report, _, _, _, held_up, p99, note = transfer
    base = report["base"]
    with _graded(held_up, p99):
        assert base["steady_bps"] == pytest.approx(base["steady_paced_bps"], rel=0.05), (base, report["cc"])
        assert base["retrans_ratio"] < 0.001, base
