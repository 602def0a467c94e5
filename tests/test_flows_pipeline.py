"""Every input path ends in the same prefix table: synthetic records written
as IPFIX and NetFlow v9 export datagrams in a capture file, read back with
``alphaqos flows ingest --format pcap``, identify the same α prefixes as the
canonical table they came from."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest

from alphaqos import cli
from alphaqos.flows import netflow, pcap, schema, synth
from alphaqos.flows.identify import identify


def _prefixes(db) -> dict[tuple, float]:
    """(prefix, role, sightings) -> α bytes (a float sum: DuckDB's parallel
    aggregation may add in another order, so compare it approximately)."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select prefix, role, sightings, alpha_bytes from prefixes").fetchall()
    return {(prefix, role, sightings): alpha for prefix, role, sightings, alpha in rows}


def test_pcap_of_ipfix_and_v9_exports_identifies_what_the_canonical_table_does(tmp_path):
    # One day, small: two exporters, one IPFIX (unsampled) and one v9 (1:10).
    table = synth.synthesize(days=1, exporters=2, seed=3, beta_flows_per_day=20_000, sampling=(1, 10))
    exporters = sorted(table["exporter"].unique())
    datagrams = []
    for i, exporter in enumerate(exporters):
        rows = table.filter(pl.col("exporter") == exporter)
        encoded = netflow.encode_ipfix(rows) if i == 0 else netflow.encode_v9(rows)
        datagrams += [(exporter, "192.0.2.200", d) for d in encoded]
    capture = tmp_path / "exports.pcap"
    pcap.write_pcap(capture, datagrams)

    status = cli.main(["flows", "ingest", str(capture), "--format", "pcap", "--out", str(tmp_path / "from-pcap")])
    assert status == cli.EXIT_OK
    schema.write_partitioned(table, tmp_path / "direct")

    identify(tmp_path / "from-pcap", tmp_path / "a.duckdb")
    identify(tmp_path / "direct", tmp_path / "b.duckdb")
    learnt, direct = _prefixes(tmp_path / "a.duckdb"), _prefixes(tmp_path / "b.duckdb")
    assert learnt and learnt.keys() == direct.keys()
    for key, alpha in learnt.items():
        assert alpha == pytest.approx(direct[key], rel=1e-9), key
    # Sampling came through the v9 options: the 1:10 exporter's α counts are scaled back.
    back = pl.read_parquet(tmp_path / "from-pcap" / "**" / "*.parquet")
    assert back.height == table.height
    assert back["bytes_scaled"].sum() == table["bytes_scaled"].sum()


def test_synth_writes_a_capture_of_exports_that_ingest_reads_back(tmp_path):
    argv = ["flows", "synth", "--days", "1", "--exporters", "3", "--beta-flows", "3000", "--seed", "5"]
    assert cli.main([*argv, "--format", "pcap", "--out", str(tmp_path / "cap")]) == cli.EXIT_OK
    assert cli.main([*argv, "--format", "parquet", "--out", str(tmp_path / "direct")]) == cli.EXIT_OK
    capture = tmp_path / "cap" / "exports.pcap"
    assert cli.main(["flows", "ingest", str(capture), "--format", "pcap", "--out", str(tmp_path / "back")]) == cli.EXIT_OK
    key = ["exporter", "first", "src_addr", "dst_addr", "src_port", "dst_port"]
    back = pl.read_parquet(tmp_path / "back" / "**" / "*.parquet").sort(key)
    direct = pl.read_parquet(tmp_path / "direct" / "**" / "*.parquet").sort(key)
    assert back.height == direct.height > 1000
    for column in ("bytes", "packets", "sampling_rate", "bytes_scaled", "protocol"):
        assert back[column].to_list() == direct[column].to_list(), column
