"""Offline α-flow identification on the canonical flow table, in DuckDB.

What it models
    HNTES's offline analysis of NetFlow records (Yan, Veeraraghavan, Tracy,
    Guok, "On How to Provision Quality of Service (QoS) for Large Dataset
    Transfers", CTRQ 2013, Section II): a flow that moves more than H bytes
    (1 GB) within a fixed interval (1 min) is an α flow; the address
    prefixes of its source and destination (/24 and /32 there) enter a table
    used to configure ingress routers; an entry not seen again within an
    aging-out period (30 days) is removed.

How
    *Spreading.* A record's ``bytes_scaled`` (bytes already multiplied by
    the sampling rate) is spread over the fixed intervals, aligned to the
    Unix epoch, that its span ``[first, last]`` overlaps, in proportion to
    the overlap: a 2-minute record of 3 GB aligned on minutes puts 1.5 GB in
    each minute. A record with ``first == last`` puts everything in the
    interval holding ``first``; a record ending exactly on a boundary does
    not reach into the next interval.

    *Stitching.* An exporter's active timeout cuts a long transfer into
    several records of the same 5-tuple. After spreading, the shares of all
    records of one (exporter, 5-tuple) are summed per interval, so the
    pieces add up again wherever they share an interval; no explicit
    stitching of records is needed. Pieces are stitched within one
    (exporter, day) partition only: a transfer whose records fall on both
    sides of midnight UTC is judged per partition.

    *Sightings.* Each (α 5-tuple, interval) is stored in the table
    ``alpha_flows`` of the database with the partition it came from. The
    prefix table is a function of those sightings, so reprocessing a day
    replaces its sightings and the table follows; the table is rebuilt
    after each run, for the prefix lengths and aging period of that run.

    *Prefix table* (``prefixes``): one row per (prefix, role) with
    ``family`` (4 or 6), ``first_seen`` (start of the first α interval of
    the current run of sightings), ``last_seen`` (end of the latest α
    interval), ``alpha_bytes`` and ``sightings`` (α bytes and count of
    (α flow, interval) pairs in that run). A run of sightings is broken, and
    the entry starts afresh, when a gap of at least the aging period
    separates the end of one sighting from the start of the next. The entry
    is dropped when the aging period has elapsed between its ``last_seen``
    and the reference time (``reference - last_seen >= aging``); the
    reference is the end of the data processed (the latest ``last`` of any
    record in a processed partition) unless given.

    *Idempotence.* The table ``processed`` records each (exporter, day)
    partition with a fingerprint of its files (names and sizes); a
    partition whose fingerprint has not changed is skipped, one whose
    fingerprint changed has its sightings replaced. Each partition is
    processed in one transaction.

    DuckDB reads the Parquet files itself, in two passes per partition
    (hash buckets first, then the exact search among the records of the
    buckets heavy enough, see :func:`alpha_sql`); only the (few) α rows
    reach Python, to compute their prefixes with :mod:`ipaddress`.

    *Settings.* The table ``settings`` holds H and the interval the
    sightings were computed with (a run with others is refused: use another
    database) and the prefix lengths and aging period of the latest
    rebuild of ``prefixes``.

Parameters (defaults)
    ``threshold_bytes`` H = 1e9 bytes (strictly more than H is α);
    ``interval_s`` 60 s; ``prefix_v4`` 24; ``prefix_v6`` 48;
    ``aging_days`` 30 days.

Tests: ``tests/test_flows_identify.py``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl

__all__ = [
    "DEFAULT_AGING_DAYS",
    "DEFAULT_INTERVAL_S",
    "DEFAULT_PREFIX_V4",
    "DEFAULT_PREFIX_V6",
    "DEFAULT_THRESHOLD_BYTES",
    "Partition",
    "Summary",
    "identify",
    "partitions",
    "prefix_table",
    "top_prefixes",
]

# Yan et al., CTRQ 2013, Section II: H = 1 GB in 1 min, /24 and /32
# prefixes, 30 days of aging. The IPv6 default /48 is ours (a site prefix).
DEFAULT_THRESHOLD_BYTES = 10**9
DEFAULT_INTERVAL_S = 60
DEFAULT_PREFIX_V4 = 24
DEFAULT_PREFIX_V6 = 48
DEFAULT_AGING_DAYS = 30

US_PER_S = 1_000_000
US_PER_DAY = 86_400 * US_PER_S

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS settings (name VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS processed (
    exporter VARCHAR NOT NULL,   -- the partition's directory name (exporter=<e>)
    day DATE NOT NULL,
    fingerprint VARCHAR NOT NULL,
    records BIGINT NOT NULL,
    data_end_us BIGINT,          -- latest record end in the partition (epoch microseconds)
    processed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (exporter, day)
);
CREATE TABLE IF NOT EXISTS alpha_flows (
    partition_exporter VARCHAR NOT NULL,
    day DATE NOT NULL,
    exporter VARCHAR NOT NULL,
    interval_start_us BIGINT NOT NULL,
    interval_end_us BIGINT NOT NULL,
    src_addr VARCHAR NOT NULL,
    dst_addr VARCHAR NOT NULL,
    src_port INTEGER,
    dst_port INTEGER,
    protocol SMALLINT,
    bytes DOUBLE NOT NULL,       -- bytes (sampling-corrected) in the interval
    records BIGINT NOT NULL      -- record shares summed (pieces stitched)
);
CREATE TABLE IF NOT EXISTS prefixes (
    prefix VARCHAR NOT NULL,
    role VARCHAR NOT NULL,       -- 'src' or 'dst'
    family TINYINT NOT NULL,
    first_seen TIMESTAMP NOT NULL,
    last_seen TIMESTAMP NOT NULL,
    alpha_bytes DOUBLE NOT NULL,
    sightings BIGINT NOT NULL
);
"""


@dataclass(frozen=True)
class Partition:
    """One ``exporter=<e>/day=<d>`` directory and its Parquet files."""

    exporter: str
    day: date
    files: tuple[Path, ...]

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for path in self.files:
            digest.update(f"{path.name}\0{path.stat().st_size}\n".encode())
        return digest.hexdigest()


@dataclass
class Summary:
    """What a run of :func:`identify` did."""

    partitions_processed: int = 0
    partitions_skipped: int = 0
    partitions_replaced: int = 0
    records: int = 0
    alpha_intervals: int = 0
    prefixes: int = 0
    reference: datetime | None = None
    processed: list[tuple[str, date]] = field(default_factory=list)


def partitions(root: str | Path, days: list[date] | None = None) -> list[Partition]:
    """The partitions under ``root`` (those of ``days`` only, if given),
    sorted by day then exporter. Raises ``ValueError`` if there are none."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{str(root)!r} is not a directory")
    found = []
    for exporter_dir in sorted(root.glob("exporter=*")):
        for day_dir in sorted(exporter_dir.glob("day=*")):
            files = tuple(sorted(p for p in day_dir.glob("*.parquet") if not p.name.startswith(".")))
            if not files:
                continue
            try:
                day = date.fromisoformat(day_dir.name.removeprefix("day="))
            except ValueError:
                continue
            if days is None or day in days:
                found.append(Partition(exporter_dir.name.removeprefix("exporter="), day, files))
    if not found:
        which = "" if days is None else " for the days " + ", ".join(d.isoformat() for d in sorted(days))
        raise ValueError(f"no Parquet partitions exporter=*/day=*/*.parquet under {str(root)!r}{which}")
    return sorted(found, key=lambda p: (p.day, p.exporter))


def _files_sql(files) -> str:
    return "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"


_TUPLE_HASH = "hash(exporter, src_addr, dst_addr, src_port, dst_port, protocol, 'alphaqos')"


def records_sql(files, where: str = "") -> str:
    """A SELECT of the canonical records in ``files`` with ``f`` and ``l``,
    the record's first and last instants in epoch microseconds (``l`` never
    before ``f``); ``where`` filters the records."""
    return f"""
        SELECT exporter, src_addr, dst_addr, src_port, dst_port, protocol,
               bytes_scaled AS b, epoch_us("first") AS f,
               greatest(epoch_us("last"), epoch_us("first")) AS l
        FROM read_parquet({_files_sql(files)}, hive_partitioning = false)
        {where}
    """


def spread_sql(files, interval_us: int, where: str = "") -> str:
    """A SELECT of the records' bytes spread over the intervals: one row per
    (record, interval overlapped) with the interval index ``i`` and the
    record's ``share`` of bytes in it (see the module doc)."""
    iv = int(interval_us)
    last_index = f"(CASE WHEN l > f THEN (l - 1) // {iv} ELSE f // {iv} END)"
    keys = "exporter, src_addr, dst_addr, src_port, dst_port, protocol"
    return f"""
        WITH r AS ({records_sql(files, where)})
        -- most records lie within one interval: all their bytes go there
        SELECT {keys}, f // {iv} AS i, b::DOUBLE AS share
        FROM r WHERE f // {iv} = {last_index}
        UNION ALL
        -- share = bytes x overlap([first, last], [i I, (i+1) I]) / (last - first)
        SELECT {keys}, i,
               b * (least(l, (i + 1) * {iv}) - greatest(f, i * {iv}))::DOUBLE / (l - f) AS share
        FROM (SELECT *, unnest(range(f // {iv}, {last_index} + 1)) AS i
              FROM r WHERE f // {iv} <> {last_index})
    """


#: Buckets of the first pass of :func:`alpha_sql`: with T bytes in a
#: partition, a bucket holds T / 2^22 bytes on average, far below H for
#: any plausible day of one router (1e15 bytes gives 2.4e8), so few buckets
#: pass the threshold without holding an α flow.
CANDIDATE_BUCKETS = 1 << 22


def _bucket_sql() -> str:
    return f"({_TUPLE_HASH} % {int(CANDIDATE_BUCKETS)})::BIGINT"


def candidates_sql(files, threshold_bytes: float) -> str:
    """A SELECT of the candidate buckets ``k`` of ``files``: those whose
    records total more than H over the partition."""
    return f"""
        SELECT {_bucket_sql()} AS k
        FROM read_parquet({_files_sql(files)}, hive_partitioning = false)
        GROUP BY k HAVING sum(bytes_scaled) > {float(threshold_bytes)!r}
    """


def alpha_sql(files, interval_us: int, threshold_bytes: float, candidates: str = "candidates") -> str:
    """A SELECT of the α (exporter, 5-tuple, interval)s of ``files``: the
    spread shares summed per interval (stitching) above the threshold.

    Two passes keep the expensive part small. The first
    (:func:`candidates_sql`, into the table ``candidates``) hashes each
    record's 5-tuple into one of :data:`CANDIDATE_BUCKETS` buckets and sums
    the bytes per bucket over the whole partition: only a bucket totalling
    more than H can hold a 5-tuple moving more than H in one interval (a
    bucket's total is at least that of each of its 5-tuples, so no α flow
    is lost). The second reads only the records of those buckets, spreads
    them and groups them exactly by 5-tuple and interval. Grouping into a
    few million integer buckets is much cheaper than grouping tens of
    millions of distinct 5-tuples."""
    iv = int(interval_us)
    where = f"WHERE {_bucket_sql()} IN (SELECT k FROM {candidates})"
    return f"""
        SELECT exporter, i * {iv} AS interval_start_us, (i + 1) * {iv} AS interval_end_us,
               src_addr, dst_addr, src_port, dst_port, protocol,
               -- Whole bytes: every later sum is then exact in any order, so
               -- a rerun gives a bit-identical table however DuckDB parallelises.
               -- HUGEINT (128 bits): counts are unsigned 64-bit, so one record
               -- alone may pass 2^63 and the sum of several 2^64.
               round(sum(share))::HUGEINT AS bytes, count(*) AS records
        FROM ({spread_sql(files, iv, where)})
        GROUP BY exporter, src_addr, dst_addr, src_port, dst_port, protocol, i
        HAVING sum(share) > {float(threshold_bytes)!r}
    """


def open_db(db: str | Path | None) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) an identification database; ``None`` for
    one in memory. Raises ``ValueError`` if the file is not one."""
    try:
        con = duckdb.connect(":memory:" if db is None else str(db))
        con.execute(_SCHEMA_SQL)
    except (duckdb.Error, OSError) as exc:
        raise ValueError(f"cannot use {str(db)!r} as an identification database: {exc}") from None
    return con


def _check_settings(con, threshold_bytes: float, interval_us: int) -> None:
    """Sightings depend on H and the interval: refuse to mix them."""
    wanted = {"threshold_bytes": repr(float(threshold_bytes)), "interval_us": str(int(interval_us))}
    stored = dict(con.execute("SELECT name, value FROM settings").fetchall())
    for name, value in wanted.items():
        if name in stored and stored[name] != value:
            raise ValueError(
                f"the database was built with {name} = {stored[name]}, not {value}; use another --db"
            )
        if name not in stored:
            con.execute("INSERT INTO settings VALUES (?, ?)", [name, value])


def process_partition(con, part: Partition, *, threshold_bytes: float, interval_us: int) -> int:
    """Replace the sightings of ``part`` by those of its current files;
    returns its record count. Runs inside the caller's transaction."""
    con.execute("DELETE FROM alpha_flows WHERE partition_exporter = ? AND day = ?", [part.exporter, part.day])
    con.execute("DELETE FROM processed WHERE exporter = ? AND day = ?", [part.exporter, part.day])
    con.execute(f"CREATE OR REPLACE TEMP TABLE candidates AS {candidates_sql(part.files, threshold_bytes)}")
    con.execute(
        f"INSERT INTO alpha_flows SELECT ?, ?, * FROM ({alpha_sql(part.files, interval_us, threshold_bytes)})",
        [part.exporter, part.day],
    )
    con.execute("DROP TABLE candidates")
    records, data_end = con.execute(f"SELECT count(*), max(l) FROM ({records_sql(part.files)})").fetchone()
    con.execute(
        "INSERT INTO processed VALUES (?, ?, ?, ?, ?, now()::TIMESTAMP)",
        [part.exporter, part.day, part.fingerprint, records, data_end],
    )
    return records


def _prefix(address: str, v4: int, v6: int) -> tuple[str | None, int | None]:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None, None
    length = v4 if ip.version == 4 else v6
    return str(ipaddress.ip_network(f"{ip}/{length}", strict=False)), ip.version


def address_prefixes(addresses, prefix_v4: int, prefix_v6: int) -> pl.DataFrame:
    """A table (addr, prefix, family) for ``addresses`` (unparsable ones
    are left out)."""
    rows = [(a, *_prefix(a, prefix_v4, prefix_v6)) for a in addresses]
    rows = [r for r in rows if r[1] is not None]
    return pl.DataFrame(rows, schema={"addr": pl.String, "prefix": pl.String, "family": pl.Int8}, orient="row")


def fetch_frame(cursor) -> pl.DataFrame:
    """A DuckDB result as a polars frame (through Python rows: results
    here are small, and pyarrow is not a dependency)."""
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    return pl.DataFrame(rows, schema=names, orient="row") if rows else pl.DataFrame({n: [] for n in names})


def load_frame(con, name: str, frame: pl.DataFrame) -> None:
    """Copy ``frame`` into the temporary DuckDB table ``name`` (through a
    Parquet file, as DuckDB cannot scan polars frames without pyarrow)."""
    with tempfile.TemporaryDirectory(prefix="alphaqos-") as directory:
        path = Path(directory) / f"{name}.parquet"
        frame.write_parquet(path)
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM read_parquet('{path}')")


def prefix_table(
    con,
    *,
    prefix_v4: int,
    prefix_v6: int,
    aging_us: int,
    reference_us: int,
    before_day: date | None = None,
) -> pl.DataFrame:
    """The prefix table learnt from the sightings in ``con`` (those of days
    before ``before_day`` only, if given), aged at ``reference_us``."""
    where = "" if before_day is None else "WHERE day < ?"
    params = [] if before_day is None else [before_day]
    addresses = con.execute(
        f"SELECT DISTINCT a FROM (SELECT src_addr AS a FROM alpha_flows {where} "
        f"UNION SELECT dst_addr FROM alpha_flows {where})",
        params * 2,
    ).fetchall()
    load_frame(con, "mapping", address_prefixes([a for (a,) in addresses], prefix_v4, prefix_v6))
    aging = int(aging_us)
    table = fetch_frame(con.execute(
        f"""
        WITH s AS (
            SELECT m.prefix, 'src' AS role, m.family, interval_start_us AS t0, interval_end_us AS t1, bytes
            FROM alpha_flows JOIN mapping m ON m.addr = src_addr {where}
            UNION ALL
            SELECT m.prefix, 'dst', m.family, interval_start_us, interval_end_us, bytes
            FROM alpha_flows JOIN mapping m ON m.addr = dst_addr {where}
        ), gaps AS (
            -- a new run of sightings starts after a gap of at least the aging period
            SELECT *, CASE WHEN t0 - max(t1) OVER (PARTITION BY prefix, role ORDER BY t0, t1
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) >= {aging}
                           THEN 1 ELSE 0 END AS fresh
            FROM s
        ), runs AS (
            SELECT *, sum(fresh) OVER (PARTITION BY prefix, role ORDER BY t0, t1
                                       ROWS UNBOUNDED PRECEDING) AS run
            FROM gaps
        ), latest AS (
            SELECT * FROM runs QUALIFY run = max(run) OVER (PARTITION BY prefix, role)
        )
        SELECT prefix, role, any_value(family)::TINYINT AS family,
               make_timestamp(min(t0)) AS first_seen, make_timestamp(max(t1)) AS last_seen,
               sum(bytes) AS alpha_bytes, count(*) AS sightings
        FROM latest
        GROUP BY prefix, role
        HAVING {int(reference_us)} - max(t1) < {aging}
        ORDER BY role, family, prefix
        """,
        params * 2,
    ))
    con.execute("DROP TABLE mapping")
    return table


def identify(
    root: str | Path,
    db: str | Path,
    *,
    threshold_bytes: float = DEFAULT_THRESHOLD_BYTES,
    interval_s: float = DEFAULT_INTERVAL_S,
    prefix_v4: int = DEFAULT_PREFIX_V4,
    prefix_v6: int = DEFAULT_PREFIX_V6,
    aging_days: float = DEFAULT_AGING_DAYS,
    days: list[date] | None = None,
) -> Summary:
    """Process the partitions under ``root`` (of ``days`` only, if given)
    into the database ``db`` and rebuild its prefix table; see the module
    doc. Raises ``ValueError`` for bad input, before writing anything."""
    interval_us, aging_us = check_parameters(threshold_bytes, interval_s, prefix_v4, prefix_v6, aging_days)
    found = partitions(root, days)
    db = Path(db)
    created = not db.exists()
    try:
        con = open_db(db)
    except ValueError:
        if created:
            _remove_db(db)
        raise
    summary = Summary()
    try:
        with con:
            con.execute("BEGIN")
            _check_settings(con, threshold_bytes, interval_us)
            con.execute("COMMIT")
            done = dict(((e, d), f) for e, d, f in con.execute("SELECT exporter, day, fingerprint FROM processed").fetchall())
            for part in found:
                previous = done.get((part.exporter, part.day))
                if previous == part.fingerprint:
                    summary.partitions_skipped += 1
                    continue
                con.execute("BEGIN")
                summary.records += process_partition(con, part, threshold_bytes=threshold_bytes, interval_us=interval_us)
                con.execute("COMMIT")
                summary.partitions_processed += 1
                summary.partitions_replaced += previous is not None
                summary.processed.append((part.exporter, part.day))
            summary.reference, summary.prefixes, summary.alpha_intervals = rebuild_prefixes(
                con, prefix_v4=prefix_v4, prefix_v6=prefix_v6, aging_us=aging_us
            )
    except (duckdb.Error, OSError) as exc:
        if created:
            _remove_db(db)
        raise ValueError(f"identification failed on {str(db)!r}: {exc}") from None
    except BaseException:
        if created:
            _remove_db(db)
        raise
    return summary


def rebuild_prefixes(con, *, prefix_v4: int, prefix_v6: int, aging_us: int, reference_us: int | None = None):
    """Replace the ``prefixes`` table; returns (reference, prefix count,
    α interval count)."""
    if reference_us is None:
        (reference_us,) = con.execute("SELECT max(data_end_us) FROM processed").fetchone()
    if reference_us is None:
        reference_us = 0
    table = prefix_table(con, prefix_v4=prefix_v4, prefix_v6=prefix_v6, aging_us=aging_us, reference_us=reference_us)
    load_frame(con, "new_prefixes", table)
    con.execute("BEGIN")
    for name, value in (("prefix_v4", prefix_v4), ("prefix_v6", prefix_v6), ("aging_us", aging_us)):
        con.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", [name, str(int(value))])
    con.execute("DELETE FROM prefixes")
    con.execute("INSERT INTO prefixes SELECT * FROM new_prefixes")
    con.execute("COMMIT")
    con.execute("DROP TABLE new_prefixes")
    (alpha,) = con.execute("SELECT count(*) FROM alpha_flows").fetchone()
    reference = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(reference_us))
    return reference, len(table), alpha


def _remove_db(db: Path) -> None:
    for path in (db, db.with_name(db.name + ".wal")):
        try:
            os.remove(path)
        except OSError:
            pass


def check_parameters(threshold_bytes, interval_s, prefix_v4, prefix_v6, aging_days) -> tuple[int, int]:
    """Check the identification parameters; returns (interval, aging
    period) in microseconds. Raises ``ValueError`` naming a bad one."""
    _check_lengths(prefix_v4, prefix_v6)
    interval_us = round(interval_s * US_PER_S)
    if interval_us <= 0:
        raise ValueError(f"the interval must be positive, not {interval_s} s")
    if threshold_bytes < 0:
        raise ValueError(f"the threshold must not be negative, not {threshold_bytes}")
    aging_us = round(aging_days * US_PER_DAY)
    if aging_us <= 0:
        raise ValueError(f"the aging period must be positive, not {aging_days} days")
    return interval_us, aging_us


def _check_lengths(prefix_v4: int, prefix_v6: int) -> None:
    if not 0 <= int(prefix_v4) <= 32 or int(prefix_v4) != prefix_v4:
        raise ValueError(f"an IPv4 prefix length is a whole number from 0 to 32, not {prefix_v4}")
    if not 0 <= int(prefix_v6) <= 128 or int(prefix_v6) != prefix_v6:
        raise ValueError(f"an IPv6 prefix length is a whole number from 0 to 128, not {prefix_v6}")


def top_prefixes(db: str | Path, count: int) -> pl.DataFrame:
    """The ``count`` entries of the prefix table with the most α bytes
    (ties by prefix and role): prefix, role, alpha_bytes, sightings, last_seen."""
    with duckdb.connect(str(db), read_only=True) as con:
        return fetch_frame(con.execute(
            "SELECT prefix, role, alpha_bytes, sightings, last_seen FROM prefixes "
            "ORDER BY alpha_bytes DESC, prefix, role LIMIT ?", [int(count)],
        ))  # fmt: skip
