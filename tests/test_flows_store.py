"""The flow store's Parquet files (schema.write_partitioned / write_grouped,
written by pyarrow with statistics only on the pruned columns and
dictionaries only on the low-cardinality ones, delta encoding on times and
counts): what polars, DuckDB and
``flows identify`` read back, and the layout itself; the collector's
receive buffer."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from alphaqos.flows import schema
from alphaqos.flows.collect import WRITER_NICE, receive_buffer
from alphaqos.flows.identify import identify

T0 = datetime(2024, 3, 1, 23, 58, tzinfo=UTC)  # two minutes before a day's end: two partitions per exporter


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    """A canonical table of 3,000 records: two exporters, two days, IPv4 and
    IPv6, counts at and above 2^63, every protocol kind, a 30-GB α flow."""
    n = 3000
    rows = {
        "exporter": ["192.0.2.1" if k % 3 else "2001:db8::1" for k in range(n)],
        "first": [T0 + timedelta(seconds=k % 240, microseconds=k) for k in range(n)],
        "last": [T0 + timedelta(seconds=k % 240 + 30, microseconds=k) for k in range(n)],
        "src_addr": [f"10.{k >> 8 & 255}.{k & 255}.7" if k % 5 else f"2001:db8:{k:x}::{k % 7:x}" for k in range(n)],
        "dst_addr": [f"192.168.{k % 200}.{k % 251}" if k % 5 else "2001:db8:ffff::1" for k in range(n)],
        "src_port": [1024 + k * 7 % 60000 for k in range(n)],
        "dst_port": [(443, 2811, 53, 2048)[k % 4] for k in range(n)],
        "protocol": [(6, 6, 17, 1)[k % 4] for k in range(n)],
        "bytes": [2**63 + k if k % 997 == 0 else 40 + 1500 * k for k in range(n)],
        "packets": [2**62 if k % 997 == 0 else k + 1 for k in range(n)],
        "sampling_rate": [(1, 1, 100, 0)[k % 4] if k % 997 else 1 for k in range(n)],
        "input_if": [k % 8 for k in range(n)],
        "output_if": [k % 3 for k in range(n)],
    }
    frame = schema.conform(pl.DataFrame(rows, schema_overrides={"bytes": pl.UInt64, "packets": pl.UInt64}))
    alpha = frame.head(1).with_columns(pl.lit("10.9.9.9").alias("src_addr"), pl.lit(30 * 10**9, pl.UInt64).alias("bytes"),
                                       pl.lit(30 * 10**9, pl.UInt64).alias("bytes_scaled"), pl.lit(1, pl.Int64).alias("sampling_rate"))  # fmt: skip
    return pl.concat([frame, alpha])


@pytest.fixture(scope="module")
def store(table, tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    files = schema.write_partitioned(table, root, tag="flows", level=1)
    return root, files


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort("first", "src_addr", "src_port")


def test_store_reads_back_identically_in_polars_and_duckdb(table, store):
    root, files = store
    assert len(files) == 4  # two exporters x two days
    back = pl.read_parquet(files)
    assert back.schema == pl.Schema(schema.SCHEMA)
    assert _sorted(back).equals(_sorted(table))
    # DuckDB: the same types as polars' own files had, the same values, the same answer to a filter
    with duckdb.connect() as con:
        listing = "[" + ", ".join(f"'{f}'" for f in files) + "]"
        types = dict(con.execute(f"DESCRIBE SELECT * FROM read_parquet({listing})").fetchall()[i][:2] for i in range(15))
        assert types["first"] == "TIMESTAMP WITH TIME ZONE" and types["bytes"] == "UBIGINT"
        assert types["src_addr"] == "VARCHAR" and types["protocol"] == "SMALLINT" and types["src_port"] == "INTEGER"
        total, big = con.execute(f"SELECT sum(bytes)::HUGEINT, count(*) FILTER (bytes >= 2::UBIGINT ** 63) "
                                 f"FROM read_parquet({listing})").fetchone()  # fmt: skip
        hits = con.execute(f"SELECT count(*) FROM read_parquet({listing}) WHERE src_addr LIKE '2001:db8:%'").fetchone()[0]
        rows = con.execute(f"SELECT epoch_us(first), src_addr, bytes FROM read_parquet({listing}) ORDER BY 1, 2, 3").fetchall()
    assert total == sum(table["bytes"].to_list()) and big == (table["bytes"] >= 2**63).sum()
    assert hits == table["src_addr"].str.starts_with("2001:db8:").sum()
    expected = table.select(pl.col("first").dt.epoch("us"), "src_addr", "bytes").sort(pl.all()).rows()
    assert rows == expected


def test_store_layout_statistics_on_pruned_columns_dictionary_on_few_valued_delta_on_counts(store):
    _, files = store
    for path in files:
        meta = pq.ParquetFile(path).metadata
        assert meta.num_row_groups == 1  # a file of fewer than ROW_GROUP_ROWS records
        group = meta.row_group(0)
        for i in range(group.num_columns):
            column = group.column(i)
            name = column.path_in_schema
            assert column.compression == "ZSTD", name
            assert column.is_stats_set == (name in schema.PRUNED), name
            if name in schema.PRUNED:  # what a reader skips a row group on: the file's true minimum and maximum
                values = pl.read_parquet(path, columns=[name])[name]
                assert (column.statistics.min, column.statistics.max) == (values.min(), values.max()), name
            dictionary = any("DICTIONARY" in e for e in column.encodings)
            assert dictionary == (name in schema.DICTIONARY), (name, column.encodings)
            assert ("DELTA_BINARY_PACKED" in column.encodings) == (name in schema.DELTA), (name, column.encodings)


def test_identify_reads_the_store_as_polars_written_files(table, store, tmp_path):
    # the same table written by polars' writer (the store's former layout): the same α flows and prefixes
    root, _ = store
    reference = tmp_path / "reference"
    day = pl.col("first").dt.date()
    for (exporter, when), part in table.with_columns(day.alias("_d")).group_by("exporter", "_d"):
        directory = reference / f"exporter={schema._safe(exporter)}" / f"day={when.isoformat()}"
        directory.mkdir(parents=True)
        part.drop("_d").write_parquet(directory / "flows-00000.parquet", statistics=True)
    answers = []
    for store_root, db in ((root, tmp_path / "new.duckdb"), (reference, tmp_path / "old.duckdb")):
        summary = identify(store_root, db, threshold_bytes=10**9)
        with duckdb.connect(str(db), read_only=True) as con:
            flows = con.execute("SELECT * FROM alpha_flows ORDER BY ALL").fetchall()
            prefixes = con.execute("SELECT * FROM prefixes ORDER BY ALL").fetchall()
        answers.append((summary.records, summary.alpha_intervals, flows, prefixes))
    assert answers[0] == answers[1]
    assert answers[0][0] == table.height and answers[0][1] >= 1 and answers[0][2]


def test_receive_buffer_asks_beyond_rmem_max_when_allowed():
    rmem_max = int(open("/proc/sys/net/core/rmem_max").read())
    size = 2 * rmem_max + 4096
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        granted = receive_buffer(sock, size)
    if os.geteuid() == 0:  # CAP_NET_ADMIN: forced past the cap (Linux reports twice the size)
        assert granted == 2 * size
    else:
        assert granted == 2 * rmem_max


def test_collector_writer_thread_runs_nicer_than_its_receive_loop(tmp_path):
    # on one core the receive loop goes first: the writer thread's nice value is above the process's
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "python"))
    collector = subprocess.Popen([sys.executable, "-m", "alphaqos", "flows", "collect", "--listen", "127.0.0.1:0", "--out",
                                  str(tmp_path / "o"), "--duration", "60s"], stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        assert "receive buffer" in collector.stdout.readline()  # the writer thread is started before this line
        deadline = time.monotonic() + 10
        while True:
            nice = {}
            for task in Path(f"/proc/{collector.pid}/task").iterdir():
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                nice[int(task.name)] = int(fields[16])
            main = nice.pop(collector.pid)
            if max(nice.values()) > main or time.monotonic() > deadline:
                break
            time.sleep(0.05)  # the writer sets its own value as it starts
        collector.send_signal(signal.SIGTERM)
        assert collector.wait(timeout=30) == 0
    finally:
        if collector.poll() is None:
            collector.kill()
            collector.wait()
    assert max(nice.values()) == min(19, main + WRITER_NICE), (main, nice)
