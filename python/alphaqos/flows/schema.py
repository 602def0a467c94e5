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

import polars as pl

__all__ = ["COLUMNS", "SCHEMA", "empty", "conform"]

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
