"""The canonical flow table: one row per flow record, whatever its source.

=================  =====================  =========================================
column             polars type            meaning
=================  =====================  =========================================
``exporter``       String                 the exporting router (its address or a name)
``first``          Datetime(us, UTC)      first packet of the record
``last``           Datetime(us, UTC)      last packet of the record (>= first)
``src_addr``       String                 source address, IPv4 dotted or IPv6 text
``dst_addr``       String                 destination address
``src_port``       Int32                  0 for protocols without ports
``dst_port``       Int32
``protocol``       Int16                  IANA protocol number (6 TCP, 17 UDP, ...)
``bytes``          Int64                  octets as exported (sampled)
``packets``        Int64                  packets as exported (sampled)
``sampling_rate``  Int64                  1 in N packets sampled (1: unsampled)
``bytes_scaled``   Int64                  bytes x sampling_rate
``packets_scaled`` Int64                  packets x sampling_rate
``input_if``       Int32                  ingress interface index (0: unknown)
``output_if``      Int32                  egress interface index (0: unknown)
=================  =====================  =========================================

On disk: Parquet, partitioned by exporter and day
(``<root>/exporter=<exporter>/day=<YYYY-MM-DD>/part-*.parquet``), the day
being that of ``first`` in UTC.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

__all__ = ["COLUMNS", "SCHEMA", "conform", "empty", "write_partitioned"]

SCHEMA: dict[str, pl.DataType] = {
    "exporter": pl.String(),
    "first": pl.Datetime("us", "UTC"),
    "last": pl.Datetime("us", "UTC"),
    "src_addr": pl.String(),
    "dst_addr": pl.String(),
    "src_port": pl.Int32(),
    "dst_port": pl.Int32(),
    "protocol": pl.Int16(),
    "bytes": pl.Int64(),
    "packets": pl.Int64(),
    "sampling_rate": pl.Int64(),
    "bytes_scaled": pl.Int64(),
    "packets_scaled": pl.Int64(),
    "input_if": pl.Int32(),
    "output_if": pl.Int32(),
}
COLUMNS = tuple(SCHEMA)


def empty() -> pl.DataFrame:
    """A canonical table with no rows."""
    return pl.DataFrame(schema=SCHEMA)


def conform(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with exactly the canonical columns, in order and cast to
    their types; ``bytes_scaled``/``packets_scaled`` computed if missing.
    Raises ``ValueError`` naming any other missing column."""
    if "sampling_rate" not in frame.columns:
        frame = frame.with_columns(pl.lit(1, pl.Int64).alias("sampling_rate"))
    for base in ("bytes", "packets"):
        if f"{base}_scaled" not in frame.columns and base in frame.columns:
            frame = frame.with_columns((pl.col(base) * pl.col("sampling_rate")).alias(f"{base}_scaled"))
    for column in ("input_if", "output_if", "src_port", "dst_port"):
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(0, pl.Int32).alias(column))
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"flow table lacks the columns {', '.join(missing)}")
    return frame.select([pl.col(c).cast(t) for c, t in SCHEMA.items()])


def write_partitioned(frame: pl.DataFrame, root: str | Path, *, tag: str = "part") -> list[Path]:
    """Write a canonical table under ``root`` partitioned by exporter and
    day (of ``first``, UTC): ``exporter=<e>/day=<YYYY-MM-DD>/<tag>-<n>.parquet``.
    Each file is written beside its target and renamed, so a reader never
    sees half a file; existing files are never overwritten (the next free
    ``<n>`` is taken). Returns the files written."""
    root = Path(root)
    frame = conform(frame).with_columns(pl.col("first").dt.date().alias("_day"))
    written = []
    for (exporter, day), part in frame.group_by("exporter", "_day", maintain_order=True):
        directory = root / f"exporter={_safe(str(exporter))}" / f"day={day.isoformat()}"
        directory.mkdir(parents=True, exist_ok=True)
        n = 0
        while (directory / f"{tag}-{n:05d}.parquet").exists():
            n += 1
        target = directory / f"{tag}-{n:05d}.parquet"
        staging = directory / f".{target.name}.partial"
        part.drop("_day").write_parquet(staging, compression="zstd", statistics=True)
        staging.rename(target)
        written.append(target)
    return written


def _safe(name: str) -> str:
    """An exporter name as a directory name (":" of IPv6 and "/" replaced)."""
    return "".join(c if c.isalnum() or c in ".-_" else "_" for c in name)
