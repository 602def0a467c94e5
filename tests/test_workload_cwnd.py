"""Issue 20, the congestion window of workload streams: the engine records
each workload stream's TCP series (``workload_tcp.parquet``) at every
sample while the stream is open, named by its workload, transfer and
stream, and ``cwnd.png`` draws them beside the flows, never after a stream
closed.

Checked against slow start (RFC 5681, Section 3.1): a stream alone on a
lossless path with room in the buffer sends its initial window, and every
round trip its window doubles (one segment more per segment acknowledged),
so n round trips after the handshake it is IW 2^n, until the sender leaves
slow start (here HyStart, the default CUBIC's, before any loss: ``ssthresh``
becomes finite).
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
import yaml

alphaqos = pytest.importorskip("alphaqos")
pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from alphaqos import columns as col  # noqa: E402
from alphaqos import plots  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

IW = 10 * 1448  # the default initial window: 10 segments of the default MSS
START = 0.1  # s

# Two 1 Gbit/s paths of 20 ms round trip, each with a 100 MB buffer (no
# loss in slow start): one transfer of one stream on A -> B, one of four
# parallel streams on C -> D. Sampled every millisecond.
SCENARIO = """\
name: streams-cwnd
duration: 700ms
metric_interval: 1ms
nodes:
  A: {address: 10.0.0.1}
  B: {address: 10.0.0.2}
  C: {address: 10.0.0.3}
  D: {address: 10.0.0.4}
  R: {router: true}
links:
  - {between: [A, R], rate: 10Gbps, delay: 10us}
  - {between: [C, R], rate: 10Gbps, delay: 10us}
  - {between: [R, B], rate: 1Gbps, delay: 10ms, queues: {R: {fifo: {limit: 100MB}}}}
  - {between: [R, D], rate: 1Gbps, delay: 10ms, queues: {R: {fifo: {limit: 100MB}}}}
# The RFC host (`host_profile: default`), whose slow start is RFC 5681's:
# under linux-6, the default since issue 21, TSO autosizing left this
# stream one segment short of doubling each round trip (1.9x; not yet
# explained, reported with issue 21).
workloads:
  - name: single
    transfer: {from: A, to: B, size: 30MB}
    tcp: {host_profile: default}
    start: 100ms
  - name: gridftp
    transfer: {from: C, to: D, size: 20MB}
    tcp: {host_profile: default}
    streams: 4
    start: 100ms
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """The run directory as ``alphaqos run`` writes it (Results.save), read back."""
    where = tmp_path_factory.mktemp("cwnd") / "run"
    alphaqos.run(yaml.safe_load(SCENARIO)).save(where)
    return where


@pytest.fixture(scope="module")
def results(run) -> alphaqos.Results:
    return alphaqos.Results.load(run)


def _stream(results, workload: str, stream: int = 0) -> pl.DataFrame:
    return results.workload_tcp.filter((pl.col(col.WORKLOAD) == workload) & (pl.col(col.STREAM) == stream)).sort(col.TIME)


def test_the_parquet_names_each_stream_by_workload_transfer_and_stream(run, results):
    table = pl.read_parquet(run / "workload_tcp.parquet")
    assert table.columns[:4] == [col.WORKLOAD, col.TRANSFER, col.STREAM, col.TIME]
    assert {col.CWND_BYTES, col.SSTHRESH_BYTES, col.SRTT, col.RETRANSMITS} <= set(table.columns)
    named = table.select(col.WORKLOAD, col.TRANSFER, col.STREAM).unique().sort(col.WORKLOAD, col.STREAM)
    # The same (workload, transfer, stream) as transfer_streams.parquet: one series per connection.
    expected = results.transfer_streams.select(col.WORKLOAD, col.TRANSFER, col.STREAM).sort(col.WORKLOAD, col.STREAM)
    assert named.equals(expected), named
    assert named[col.WORKLOAD].to_list() == ["gridftp"] * 4 + ["single"]
    # Flows and workload streams do not mix: the tcp table holds no stream.
    assert results.tcp.is_empty()


def test_a_stream_is_recorded_only_while_it_is_open(results):
    rows = results.workload_tcp.group_by(col.WORKLOAD, col.TRANSFER, col.STREAM).agg(
        pl.col(col.TIME).min().alias("first"), pl.col(col.TIME).max().alias("last"), pl.len().alias("n")
    )
    spans = rows.join(results.transfer_streams, on=[col.WORKLOAD, col.TRANSFER, col.STREAM])
    assert spans.height == 5
    for row in spans.iter_rows(named=True):
        assert row[col.END] is not None, row  # every stream finished in the run
        assert row["first"] == pytest.approx(START), row  # the sample at its opening
        # Its last row is the last sample before it closed: none after.
        assert row[col.END] - 0.001 <= row["last"] < row[col.END], row
        assert row["n"] == pytest.approx((row["last"] - row["first"]) / 0.001 + 1), row  # every sample in between


def test_a_stream_alone_doubles_its_window_every_round_trip_in_slow_start(results):
    single = _stream(results, "single")
    assert single[col.CWND_BYTES][0] == IW  # at its opening: the initial window
    rtt = single[col.SRTT].drop_nulls()[0]  # the handshake's round trip: the base RTT
    assert 0.0200 < rtt < 0.0201  # 2 x (10 us + 10 ms) and serialization
    sending = START + rtt  # the handshake done, the first window leaves
    slow = single.filter(pl.col(col.SSTHRESH_BYTES).is_null() & (pl.col(col.TIME) >= sending))
    rounds = 0
    for t, cwnd in slow.select(col.TIME, col.CWND_BYTES).iter_rows():
        n = math.floor((t - sending) / rtt + 1e-9)  # round trips since the first window left
        # The ACKs of round n - 1 arrive from n RTT on: IW 2^(n-1) to IW 2^n.
        assert IW * 2 ** max(n - 1, 0) <= cwnd <= IW * 2**n, (t, n, cwnd / IW)
        if t + 0.001 >= sending + (n + 1) * rtt:  # the last sample of round n: all its ACKs in
            assert cwnd == IW * 2**n, (t, n, cwnd / IW)
            rounds = n
    # Slow start ran long enough to show it: 10 segments to 1,280, then left
    # it before any loss, near the path's bandwidth-delay product (2.5 MB).
    assert rounds >= 7, rounds
    left = single.filter(pl.col(col.SSTHRESH_BYTES).is_not_null())
    assert left[col.RETRANSMITS].max() == 0
    assert 1.5e6 < left[col.SSTHRESH_BYTES][0] < 6e6


def test_parallel_streams_start_at_the_initial_window_and_grow(results):
    for stream in range(4):
        rows = _stream(results, "gridftp", stream)
        cwnd = rows[col.CWND_BYTES]
        assert cwnd[0] == IW
        slow = rows.filter(pl.col(col.SSTHRESH_BYTES).is_null())[col.CWND_BYTES]
        assert (slow.diff().drop_nulls() >= 0).all()  # never shrinks in slow start
        assert cwnd.max() >= 32 * IW, (stream, cwnd.max() / IW)


def test_cwnd_png_draws_every_stream_until_it_closed(run, results):
    assert (run / "plots" / "cwnd.png").stat().st_size > 10_000
    axes = Figure().add_subplot()
    assert plots._cwnd(results, axes)
    lines = {line.get_label(): line for line in axes.get_lines()}
    assert set(lines) == {"single stream 0", *(f"gridftp stream {s}" for s in range(4))}
    scale, unit = plots.size_unit(results.workload_tcp[col.CWND_BYTES].max())
    assert axes.get_ylabel() == f"cwnd ({unit})"
    ends = {(r[col.WORKLOAD], r[col.STREAM]): r[col.END] for r in results.transfer_streams.iter_rows(named=True)}
    for label, line in lines.items():
        workload, _, stream = label.split(" ")
        rows = _stream(results, workload, int(stream))
        # The line is the stream's series, drawn to its last sample and no further.
        assert list(line.get_xdata()) == rows[col.TIME].to_list()
        assert list(line.get_ydata()) == pytest.approx((rows[col.CWND_BYTES] / scale).to_list())
        assert max(line.get_xdata()) < ends[(workload, int(stream))]


def test_streams_of_many_transfers_are_labelled_with_their_transfer_and_ranked():
    doc = yaml.safe_load(SCENARIO)
    doc["duration"], doc["metric_interval"] = "300ms", "10ms"
    # One-stream transfers of one workload, 50 a second: beyond the
    # plot's handful of series, the largest windows are drawn.
    doc["workloads"] = [{"name": "bulk", "poisson": {"rate": 50, "pairs": {"list": [["A", "B"]]},
                                                     "size": {"fixed": "2MB"}}}]  # fmt: skip
    results = alphaqos.run(doc)
    transfers = results.workload_tcp[col.TRANSFER].n_unique()
    assert transfers > plots.TOP_SERIES + 1
    axes = Figure().add_subplot()
    assert plots._cwnd(results, axes)
    labels = [line.get_label() for line in axes.get_lines()]
    assert len(labels) == plots.TOP_SERIES and all(lab.startswith("bulk transfer ") and lab.endswith(" stream 0") for lab in labels)
    assert f"({transfers - plots.TOP_SERIES} more flows and streams not drawn)" in axes.get_title()
    peaks = results.workload_tcp.group_by(col.TRANSFER).agg(pl.col(col.CWND_BYTES).max()).sort(col.CWND_BYTES, descending=True)
    drawn = {int(lab.split(" ")[2]) for lab in labels}
    assert drawn == set(peaks[col.TRANSFER][: plots.TOP_SERIES])
