"""Benchmark of ``alphaqos.flows.identify`` on a synthetic day of flow records.

Generates one day of N canonical records (default 50 million) straight to
Parquet in chunks (numpy + polars, never the whole day in memory): random
β flows of a few kB to a few MB lasting up to two minutes, plus a number of
α transfers (2 GB per minute cut by a 60 s active timeout into one record
per minute, sampled 1 in 100). Then runs ``identify`` into a fresh database,
checks that exactly the planted α transfers were found, and prints records
per second and peak memory (this process and DuckDB's threads share it).

    PYTHONPATH=python python benches/flows_identify.py --records 50000000
    PYTHONPATH=python python benches/flows_identify.py --records 5000000 --keep /tmp/flows

Target on the 2-core development machine: >= 2 M records/s. Measured
(2 cores shared with other jobs, load average 2-3): 5 M records 2.1 M/s
(peak RSS 0.5 GB); 50 M records 1.2-1.4 M/s (peak RSS 4.2 GB). The first
pass (grouping every record by a 64-bit hash of its 5-tuple) is the cost;
see ``alpha_sql`` in ``alphaqos.flows.identify``.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from alphaqos.flows import identify as idm
from alphaqos.flows import schema

DAY = datetime(2024, 3, 1, tzinfo=UTC)
DAY_US = 86_400_000_000
TRANSFERS = 200


def _chunk(rng: np.random.Generator, n: int, exporter: str) -> pl.DataFrame:
    start = DAY.timestamp() * 1e6
    first = (start + rng.integers(0, DAY_US - 180_000_000, n)).astype("int64")
    duration = rng.integers(0, 120_000_000, n)
    sampled = rng.integers(40, 20_000, n)  # bytes as exported, 1 in 100 sampled
    frame = pl.DataFrame(
        {
            "first_us": first,
            "last_us": first + duration,
            "src": rng.integers(0x0A000000, 0x0AFFFFFF, n, dtype=np.int64),
            "dst": rng.integers(0xC0A80000, 0xC0A8FFFF, n, dtype=np.int64),
            "src_port": rng.integers(1024, 65535, n, dtype=np.int32),
            "dst_port": rng.integers(1, 1024, n, dtype=np.int32),
            "bytes": sampled,
        }
    )
    return _canonical(frame, exporter, 100)


def _canonical(frame: pl.DataFrame, exporter: str, rate: int) -> pl.DataFrame:
    def dotted(column: str) -> pl.Expr:
        return pl.concat_str([((pl.col(column) // (1 << s)) % 256).cast(pl.String) for s in (24, 16, 8, 0)],
                             separator=".")  # fmt: skip

    return frame.select(
        pl.lit(exporter).alias("exporter"),
        pl.from_epoch("first_us", time_unit="us").dt.replace_time_zone("UTC").alias("first"),
        pl.from_epoch("last_us", time_unit="us").dt.replace_time_zone("UTC").alias("last"),
        dotted("src").alias("src_addr"),
        dotted("dst").alias("dst_addr"),
        pl.col("src_port").cast(pl.Int32),
        pl.col("dst_port").cast(pl.Int32),
        pl.lit(6, pl.Int16).alias("protocol"),
        pl.col("bytes").cast(pl.Int64),
        (pl.col("bytes") // 1000 + 1).cast(pl.Int64).alias("packets"),
        pl.lit(rate, pl.Int64).alias("sampling_rate"),
        (pl.col("bytes") * rate).cast(pl.Int64).alias("bytes_scaled"),
        ((pl.col("bytes") // 1000 + 1) * rate).cast(pl.Int64).alias("packets_scaled"),
        pl.lit(1, pl.Int32).alias("input_if"),
        pl.lit(2, pl.Int32).alias("output_if"),
    )


def _alpha(rng: np.random.Generator, transfers: int, exporter: str) -> tuple[pl.DataFrame, int]:
    """``transfers`` α transfers of 3 to 10 minutes, one record per minute
    aligned on minutes, each carrying 2 GB (20 MB sampled 1 in 100)."""
    rows = []
    intervals = 0
    for k in range(transfers):
        minute0 = int(rng.integers(0, 24 * 60 - 12))
        minutes = int(rng.integers(3, 11))
        for m in range(minute0, minute0 + minutes):
            rows.append((m * 60_000_000 + int(DAY.timestamp() * 1e6), (m + 1) * 60_000_000 + int(DAY.timestamp() * 1e6),
                         0x83000000 + 256 * k, 0x84000000 + 256 * k, 50_000 + k, 2811, 20_000_000))  # fmt: skip
        intervals += minutes
    frame = pl.DataFrame(rows, schema=["first_us", "last_us", "src", "dst", "src_port", "dst_port", "bytes"], orient="row")
    return _canonical(frame, exporter, 100), intervals


def generate(root: Path, records: int, *, chunk: int = 5_000_000, transfers: int = TRANSFERS, seed: int = 1) -> int:
    """Write the synthetic day under ``root``; returns the number of α
    intervals planted."""
    rng = np.random.default_rng(seed)
    alpha, intervals = _alpha(rng, transfers, "bench")
    directory = root / "exporter=bench" / f"day={DAY:%Y-%m-%d}"
    directory.mkdir(parents=True)
    done, n = 0, 0
    while done < records:
        size = min(chunk, records - done)
        frame = _chunk(rng, size, "bench")
        if n == 0:
            frame = pl.concat([alpha, frame.head(size - len(alpha))])
        frame.write_parquet(directory / f"part-{n:05d}.parquet", compression="zstd", statistics=True)
        done += size
        n += 1
    assert list(schema.COLUMNS) == frame.columns
    return intervals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000_000)
    parser.add_argument("--keep", type=Path, help="generate into (or reuse) this directory and keep it")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="alphaqos-bench-"))
    root = args.keep or work / "flows"
    try:
        marker = root / "planted.txt"
        if marker.exists():
            planted = int(marker.read_text())
            print(f"reusing {root}")
        else:
            t0 = time.perf_counter()
            planted = generate(root, args.records)
            marker.write_text(str(planted))
            print(f"generated {args.records:,} records in {time.perf_counter() - t0:.1f} s under {root}")
        db = work / "bench.duckdb"
        t0 = time.perf_counter()
        summary = idm.identify(root, db)
        elapsed = time.perf_counter() - t0
        assert summary.alpha_intervals == planted, (summary.alpha_intervals, planted)
        assert summary.prefixes == 2 * TRANSFERS, summary.prefixes  # distinct src and dst /24s
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"identify: {summary.records:,} records in {elapsed:.2f} s = "
              f"{summary.records / elapsed / 1e6:.2f} M records/s; {summary.alpha_intervals} α intervals, "
              f"{summary.prefixes} prefixes; peak RSS {peak_mb:.0f} MB")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
