"""α-flow identification on a Spark cluster: the prefix table of
:mod:`.identify`, computed with PySpark DataFrame operations.

What it computes
    The same ``prefixes`` table as :func:`.identify.identify` on a fresh
    database for the same data and parameters (see that module's doc for
    the model): each record's ``bytes_scaled`` spread over the fixed
    intervals its span overlaps in proportion to the overlap; the shares
    summed per (partition, exporter, 5-tuple, interval), a partition being
    one ``exporter=<e>/day=<d>`` directory; an α sighting where the sum is
    strictly more than H, its bytes rounded to whole bytes; the sightings
    mapped to the prefixes of their source and destination; per (prefix,
    role) the latest run of sightings (a gap of at least the aging period
    starts a new run), dropped when the aging period has elapsed between
    its ``last_seen`` and the end of the data.

How
    The Parquet files are those :func:`.identify.partitions` finds, read by
    Spark (the executors must see the same paths). Spreading explodes a
    ``sequence`` of interval indices per record; grouping, the threshold,
    the runs of sightings (window functions) and aging are Spark
    operations. IPv4 prefixes are integer arithmetic in Spark SQL; the
    distinct IPv6 addresses of the α sightings (few) are collected to the
    driver and mapped with :mod:`ipaddress`, then joined back. Nothing runs
    Python on the executors.

PySpark is not a dependency of alphaqos: it is imported when
:func:`identify_spark` runs, which raises ``ImportError`` saying how to
install it if it is missing (or install the extra ``alphaqos[spark]``).

Tests: ``tests/test_flows_spark.py``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from .identify import (
    DEFAULT_AGING_DAYS,
    DEFAULT_INTERVAL_S,
    DEFAULT_PREFIX_V4,
    DEFAULT_PREFIX_V6,
    DEFAULT_THRESHOLD_BYTES,
    _prefix,
    check_parameters,
    partitions,
)

__all__ = ["PREFIX_SCHEMA", "identify_spark"]

#: Columns and types of the returned prefix table.
PREFIX_SCHEMA = {
    "prefix": pl.String(),
    "role": pl.String(),
    "family": pl.Int8(),
    "first_seen": pl.Datetime("us"),
    "last_seen": pl.Datetime("us"),
    "alpha_bytes": pl.Float64(),
    "sightings": pl.Int64(),
}

_KEYS = ("partition", "exporter", "src_addr", "dst_addr", "src_port", "dst_port", "protocol")

# An IPv4 address as ipaddress accepts it: four decimal octets 0-255, no leading zeros.
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4_RE = rf"^{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}$"


def _pyspark():
    try:
        from pyspark.sql import SparkSession, Window
        from pyspark.sql import functions as F
    except ImportError:
        raise ImportError(
            "identify_spark needs PySpark, which alphaqos does not install: pip install 'pyspark==4.*' "
            "(and a Java 17+ runtime)"
        ) from None
    return SparkSession, Window, F


def session(master: str, *, app_name: str = "alphaqos-identify", conf: dict[str, str] | None = None):
    """A Spark session on ``master`` (``local[*]``, ``spark://host:port``,
    ...) with the session time zone UTC; ``conf`` adds settings."""
    SparkSession, _, _ = _pyspark()
    builder = SparkSession.builder.master(master).appName(app_name).config("spark.sql.session.timeZone", "UTC")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def identify_spark(
    root: str | Path,
    *,
    master: str | None = None,
    spark=None,
    threshold_bytes: float = DEFAULT_THRESHOLD_BYTES,
    interval_s: float = DEFAULT_INTERVAL_S,
    prefix_v4: int = DEFAULT_PREFIX_V4,
    prefix_v6: int = DEFAULT_PREFIX_V6,
    aging_days: float = DEFAULT_AGING_DAYS,
) -> pl.DataFrame:
    """The prefix table (columns of :data:`PREFIX_SCHEMA`, ordered by role,
    family, prefix) of the partitions under ``root``, computed on Spark:
    on the session ``spark`` if given, else on one opened on ``master``
    (and left open: :meth:`SparkSession.stop` it when done). Raises
    ``ValueError`` for bad input, ``ImportError`` without PySpark."""
    interval_us, aging_us = check_parameters(threshold_bytes, interval_s, prefix_v4, prefix_v6, aging_days)
    found = partitions(root)
    _, Window, F = _pyspark()
    if spark is None:
        if master is None:
            raise ValueError("give a Spark master (e.g. 'local[*]' or 'spark://host:7077') or a session")
        spark = session(master)

    files = [str(Path(f).resolve()) for part in found for f in part.files]
    iv = F.lit(int(interval_us))
    records = (
        spark.read.parquet(*files)
        # the partition: the directory exporter=<e>/day=<d> of the file
        .withColumn("partition", F.regexp_extract(F.col("_metadata.file_path"), r"^(.*)/[^/]*$", 1))
        .withColumn("f", F.unix_micros("first"))
        .withColumn("l", F.greatest(F.unix_micros("last"), F.col("f")))
        .withColumn("b", F.col("bytes_scaled"))
        .select(*_KEYS, "f", "l", "b")
    )
    (reference_us,) = records.agg(F.max("l")).first()
    if reference_us is None:
        return _empty()

    # Spreading: one row per (record, interval overlapped).
    n = int(interval_us)
    first_i = F.expr(f"f div {n}")
    last_i = F.expr(f"CASE WHEN l > f THEN (l - 1) div {n} ELSE f div {n} END")
    spread = (
        records.withColumn("i0", first_i).withColumn("i1", last_i)
        .withColumn("i", F.explode(F.sequence("i0", "i1")))
        .withColumn(
            "share",
            F.when(F.col("i0") == F.col("i1"), F.col("b").cast("double")).otherwise(
                F.col("b")
                * (F.least(F.col("l"), (F.col("i") + 1) * iv) - F.greatest(F.col("f"), F.col("i") * iv)).cast("double")
                / (F.col("l") - F.col("f"))
            ),
        )
    )
    # Stitching and the threshold: strictly above H, bytes rounded to whole bytes.
    alpha = (
        spread.groupBy(*_KEYS, "i")
        .agg(F.sum("share").alias("total"))
        .where(F.col("total") > F.lit(float(threshold_bytes)))
        .select(
            "src_addr", "dst_addr",
            (F.col("i") * iv).alias("t0"), ((F.col("i") + 1) * iv).alias("t1"),
            F.round("total").cast("long").cast("double").alias("bytes"),
        )  # fmt: skip
        .cache()
    )

    sightings = _with_prefix(alpha, "src_addr", prefix_v4, F).withColumn("role", F.lit("src")).unionByName(
        _with_prefix(alpha, "dst_addr", prefix_v4, F).withColumn("role", F.lit("dst"))
    )
    sightings = _map_v6(spark, alpha, sightings, prefix_v6, F)

    # Runs of sightings: a gap of at least the aging period starts a new one.
    by_entry = Window.partitionBy("prefix", "role")
    ordered = by_entry.orderBy("t0", "t1")
    before = ordered.rowsBetween(Window.unboundedPreceding, -1)
    runs = (
        sightings.withColumn(
            "fresh",
            F.when(F.col("t0") - F.max("t1").over(before) >= F.lit(int(aging_us)), 1).otherwise(0),
        )
        .withColumn("run", F.sum("fresh").over(ordered.rowsBetween(Window.unboundedPreceding, 0)))
        .withColumn("latest", F.max("run").over(by_entry))
        .where(F.col("run") == F.col("latest"))
    )
    table = (
        runs.groupBy("prefix", "role")
        .agg(
            F.first("family").alias("family"),
            F.min("t0").alias("first_us"),
            F.max("t1").alias("last_us"),
            F.sum("bytes").alias("alpha_bytes"),
            F.count(F.lit(1)).alias("sightings"),
        )
        .where(F.lit(int(reference_us)) - F.col("last_us") < F.lit(int(aging_us)))
    )
    rows = table.collect()
    alpha.unpersist()
    if not rows:
        return _empty()
    frame = pl.DataFrame(
        [(r["prefix"], r["role"], r["family"], r["first_us"], r["last_us"], r["alpha_bytes"], r["sightings"]) for r in rows],
        schema={"prefix": pl.String, "role": pl.String, "family": pl.Int8, "first_us": pl.Int64,
                "last_us": pl.Int64, "alpha_bytes": pl.Float64, "sightings": pl.Int64},  # fmt: skip
        orient="row",
    )
    return (
        frame.with_columns(
            pl.col("first_us").cast(pl.Datetime("us")).alias("first_seen"),
            pl.col("last_us").cast(pl.Datetime("us")).alias("last_seen"),
        )
        .select(list(PREFIX_SCHEMA))
        .sort("role", "family", "prefix")
    )


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=PREFIX_SCHEMA)


def _with_prefix(alpha, column: str, prefix_v4: int, F):
    """The sightings of ``alpha`` whose ``column`` is an IPv4 address, with
    its /``prefix_v4`` network in ``prefix`` and ``family`` 4, plus those
    whose address holds a ':' (IPv6, mapped later) with ``prefix`` null and
    ``family`` 6; other addresses are left out."""
    addr = F.col(column)
    is_v4 = addr.rlike(_IPV4_RE)
    octets = [F.regexp_extract(addr, _IPV4_RE, k + 1).cast("long") for k in range(4)]
    value = ((octets[0] * 256 + octets[1]) * 256 + octets[2]) * 256 + octets[3]
    block = 1 << (32 - int(prefix_v4))
    network = value - value % F.lit(block)
    text = F.concat(
        F.concat_ws(".", *[(F.shiftright(network, shift) % 256).cast("string") for shift in (24, 16, 8, 0)]),
        F.lit(f"/{int(prefix_v4)}"),
    )
    return alpha.where(is_v4 | addr.contains(":")).select(
        addr.alias("addr"),
        F.when(is_v4, text).alias("prefix"),
        F.when(is_v4, F.lit(4)).otherwise(F.lit(6)).cast("tinyint").alias("family"),
        "t0", "t1", "bytes",
    )  # fmt: skip


def _map_v6(spark, alpha, sightings, prefix_v6: int, F):
    """``sightings`` with the IPv6 prefixes filled in: the distinct IPv6
    addresses of the α sightings are mapped on the driver with
    :mod:`ipaddress` (unparsable ones are dropped)."""
    v6 = sightings.where(F.col("family") == 6)
    addresses = [r["addr"] for r in v6.select("addr").distinct().collect()]
    mapping = []
    for address in addresses:
        prefix, family = _prefix(address, 0, prefix_v6)
        if prefix is not None and family == 6:
            mapping.append((address, prefix))
    v4 = sightings.where(F.col("family") == 4).drop("addr")
    if not mapping:
        return v4
    table = spark.createDataFrame(mapping, "addr string, prefix6 string")
    mapped = (
        v6.join(F.broadcast(table), "addr")
        .withColumn("prefix", F.col("prefix6"))
        .drop("prefix6", "addr")
    )
    return v4.unionByName(mapped)
