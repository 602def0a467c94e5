"""The collector's spool (``flows/spool.py``): compaction into the store is
atomic and idempotent (a kill at any point neither loses nor duplicates a
record), the spool is bounded on disk, and the collector's final drain
counts what it could not decode."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from alphaqos.flows import collect, schema, spool, synth
from alphaqos.flows.netflow import Decoder, encode_ipfix

PYTHON_DIR = Path(__file__).resolve().parents[1] / "python"


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    """Two exporters over two days: four (exporter, day) groups a flush."""
    return schema.conform(synth.synthesize(days=2, exporters=2, beta_flows_per_day=3000, alpha_transfers_per_day=4))


def store(root: Path) -> pl.DataFrame:
    return pl.read_parquet(sorted(root.glob("exporter=*/day=*/*.parquet"))).pipe(schema.conform)


def same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """The same rows, each as often (no record lost, none duplicated)."""
    order = list(schema.COLUMNS)
    assert got.height == want.height
    assert got.sort(order).equals(want.sort(order))


def spooled(root: Path, table: pl.DataFrame, files: int) -> list[Path]:
    writer = spool.Spool(root)
    step = -(-table.height // files)
    return [path for i in range(files) for path in writer.write(table.slice(i * step, step))]


def test_compaction_writes_the_store_and_empties_the_spool(tmp_path, table):
    paths = spooled(tmp_path, table, 3)
    assert spool.pending_files(tmp_path) == paths and all(p.suffix == ".arrow" for p in paths)
    assert spool.compact_all(tmp_path) == (3, table.height)
    assert spool.pending_files(tmp_path) == []
    same(store(tmp_path), table)
    step = -(-table.height // 3)
    groups = sum(table.slice(i * step, step).select("exporter", pl.col("first").dt.date()).n_unique() for i in range(3))
    assert len(list(tmp_path.glob("exporter=*/day=*/flows-*.parquet"))) == groups >= 4  # one per exporter and day of each
    # the readers' glob never sees the spool or a staging file
    assert not [p for p in tmp_path.rglob("*.parquet") if "_spool" in p.parts or p.name.startswith(".")]


def test_a_flush_grouped_by_exporter_and_day_is_spooled_and_compacted_per_group(tmp_path, table):
    grouped = table.with_columns(pl.col("first").dt.date().alias("_day")).sort("exporter", "_day", maintain_order=True)
    spans = grouped.group_by("exporter", "_day", maintain_order=True).len()
    starts = [0, *spans["len"].cum_sum().to_list()[:-1]]
    groups = [(e, d, s, n) for (e, d, n), s in zip(spans.iter_rows(), starts)]
    assert len(groups) == 4
    paths = spool.Spool(tmp_path).write(grouped.drop("_day"), groups)
    assert len(paths) == 4 and len(spool.pending_files(tmp_path)) == 4
    assert spool.compact_all(tmp_path) == (4, table.height)
    for exporter, day, _, n in groups:  # each group's file in its partition, whole
        (file,) = tmp_path.glob(f"exporter={exporter}/day={day.isoformat()}/*.parquet")
        assert pl.read_parquet(file).height == n
    same(store(tmp_path), table)


@pytest.mark.parametrize("fail_at", ["third file", "delete"])
def test_a_compaction_killed_midway_is_redone_without_loss_or_duplicates(tmp_path, table, monkeypatch, fail_at):
    (path,) = spooled(tmp_path, table, 1)
    calls = {"n": 0}

    class Killed(BaseException):
        pass

    if fail_at == "third file":  # two of the four groups' files are in the store, the spool file is not deleted
        original = schema.write_parquet

        def dying(frame, target, **kwargs):
            calls["n"] += 1
            if calls["n"] == 3:
                raise Killed
            original(frame, target, **kwargs)

        monkeypatch.setattr(schema, "write_parquet", dying)
    else:  # every file in place, killed before the spool file is deleted
        original_unlink = Path.unlink

        def dying_unlink(self, *args, **kwargs):
            if self == path:
                raise Killed
            original_unlink(self, *args, **kwargs)

        monkeypatch.setattr(Path, "unlink", dying_unlink)
    with pytest.raises(Killed):
        spool.compact_file(path, tmp_path)
    monkeypatch.undo()
    assert path.exists()
    before = store(tmp_path).height
    assert (before < table.height) if fail_at == "third file" else (before == table.height)
    assert spool.compact_all(tmp_path) == (1, table.height)
    same(store(tmp_path), table)


def compactor(root: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    return subprocess.Popen([sys.executable, "-m", "alphaqos.flows.spool", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip


def test_the_compactor_process_killed_at_any_time_loses_and_duplicates_nothing(tmp_path, table):
    spooled(tmp_path, table, 8)
    first = compactor(tmp_path)
    try:  # killed once it has begun: some spool files compacted, perhaps one half
        deadline = time.monotonic() + 20
        while len(spool.pending_files(tmp_path)) == 8 and time.monotonic() < deadline:
            time.sleep(0.002)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=20)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    left = spool.pending_files(tmp_path)
    assert len(left) < 8
    records = sum(pl.read_ipc(p).height for p in left)
    assert spool.compact_all(tmp_path) == (len(left), records)  # what the next compactor does first
    assert spool.pending_files(tmp_path) == []
    same(store(tmp_path), table)


def test_the_spool_is_bounded_the_writer_waits_for_the_compactor(tmp_path, table):
    alive = {"yes": True}
    writer = spool.Spool(tmp_path, limit=1, compactor_alive=lambda: alive["yes"])
    writer.write(table.head(100))  # under the limit yet: written
    compacting = threading.Timer(0.3, spool.compact_all, (tmp_path,))
    compacting.start()
    started = time.monotonic()
    writer.write(table.slice(100, 100))  # over it: waits until the compactor has emptied the spool
    compacting.join()
    assert time.monotonic() - started >= 0.25 and writer.waits == 1 and writer.waited_s >= 0.25
    alive["yes"] = False
    with pytest.raises(RuntimeError, match="spool .* is full and its compactor has stopped"):
        writer.write(table.head(1))
    spool.compact_all(tmp_path)
    same(store(tmp_path), table.head(200))


def test_a_killed_collectors_unfinished_spool_file_is_removed_at_start(tmp_path, table):
    (tmp_path / spool.SPOOL).mkdir()
    (tmp_path / spool.SPOOL / ".spool-1-2-000000.arrow.partial").write_bytes(b"half a file")
    spool.Spool(tmp_path)
    assert list((tmp_path / spool.SPOOL).iterdir()) == []


@pytest.mark.parametrize("decoder", [Decoder, collect.NativeDecoder])
def test_the_final_drain_counts_what_it_could_not_decode(tmp_path, monkeypatch, decoder):
    monkeypatch.setattr(collect, "FINAL_DRAIN_S", 0.0)  # the drain's time is over after its first batch
    monkeypatch.setattr(collect, "BATCH", 16)
    n = 200 * 30
    t0 = time.time()
    frame = pl.DataFrame({"exporter": ["x"] * n, "first": [t0] * n, "last": [t0] * n,
                          "src_addr": [f"10.0.{i >> 8}.{i & 255}" for i in range(n)], "dst_addr": ["10.1.0.1"] * n,
                          "src_port": list(range(n)), "dst_port": [443] * n, "protocol": [6] * n,
                          "bytes": [1500] * n, "packets": [1] * n, "sampling_rate": [1] * n})  # fmt: skip
    frame = frame.with_columns(pl.from_epoch(pl.col("first"), "s").dt.replace_time_zone("UTC").alias("first"),
                               pl.from_epoch(pl.col("last"), "s").dt.replace_time_zone("UTC").alias("last"))  # fmt: skip
    datagrams = encode_ipfix(frame, mtu=16 + 4 + 30 * 54)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        collect.receive_buffer(sock, 8 * 2**20)
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        for datagram in datagrams:
            sender.sendto(datagram, sock.getsockname())
        queued = collect.socket_state(sock)[1]
        assert queued and collect.socket_state(sock)[0] == 0  # all of them queued, none dropped
        out = tmp_path / "out"
        lines = []
        monkeypatch.setattr(collect, "print", lambda *a, **k: lines.append(" ".join(map(str, a))), raising=False)
        collector = collect.Collector(sock, out, decoder(window_us=None), 3600.0, 1e-9, flush_records=10**6)
        assert collector.run() == 0
    final = next(line for line in lines if line.startswith("stopped after"))
    read = 16  # the one batch the drain read before its time was over (the template's datagram among them)
    stored = store(out).height
    reference = Decoder(window_us=None)
    assert stored == sum(reference.feed(d, "x") for d in datagrams[:read]) > 0
    assert f"not decoded at close: {len(datagrams) - read:,} datagrams read after the 0 s drain, 0 bytes still queued;" in final


def test_the_compacted_store_reads_as_the_directly_written_one(tmp_path, table):
    """polars, DuckDB and ``flows identify`` give the same answers on the
    store the compactor wrote (spool files of a flush each) as on the same
    table written directly (``--spool-limit 0``)."""
    import duckdb

    from alphaqos.flows.identify import identify

    spooled(tmp_path / "spooled", table, 3)
    spool.compact_all(tmp_path / "spooled")
    schema.write_partitioned(table, tmp_path / "direct", tag="flows", level=1)
    answers = []
    for name in ("spooled", "direct"):
        root = tmp_path / name
        files = sorted(root.glob("exporter=*/day=*/*.parquet"))
        with duckdb.connect() as con:
            listing = "[" + ", ".join(f"'{f}'" for f in files) + "]"
            rows = con.execute(f"SELECT epoch_us(first), src_addr, dst_addr, src_port, bytes, exporter FROM read_parquet({listing}) "
                               "ORDER BY ALL").fetchall()  # fmt: skip
        summary = identify(root, tmp_path / f"{name}.duckdb", threshold_bytes=10**8)
        with duckdb.connect(str(tmp_path / f"{name}.duckdb"), read_only=True) as con:
            flows = con.execute("SELECT * FROM alpha_flows ORDER BY ALL").fetchall()
            prefixes = con.execute("SELECT * FROM prefixes ORDER BY ALL").fetchall()
        answers.append((rows, summary.records, summary.alpha_intervals, flows, prefixes))
        assert pl.read_parquet(files).schema == pl.Schema(schema.SCHEMA)
    assert answers[0] == answers[1]
    assert answers[0][1] == table.height and answers[0][3]  # every record, and α flows found
