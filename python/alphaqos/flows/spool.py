"""The collector's spool and its compactor: what lets ``alphaqos flows
collect`` store 1 M records/s with its receive path on one core.

The receive path (receive, decode, check, hand over) costs about half a
microsecond a record; the store's Parquet write (:func:`.schema.write_parquet`,
zstd, statistics, delta pages) costs 0.6-0.9 us a record of realistic
records, more than what is left of one core at 1 M records/s. So, as
nfcapd does with its files, the collector only appends each flush to a
spool of Arrow IPC files (uncompressed: close to a copy of the columns it
already holds) and a separate process, the compactor, turns every closed
spool file into the zstd Parquet store and deletes it:

``<out>/_spool/spool-<id>.arrow``
    one flush, or one exporter and day of a flush where the decoder grouped
    it so (the native decoder: the compactor then writes it as it is, with
    no grouping again), written as ``.spool-<id>.arrow.partial`` and
    renamed when complete (a spool file that exists is closed). ``<id>`` is
    the collector's start (ns) and pid, the flush's number and the group's:
    never reused.
``<out>/exporter=<e>/day=<d>/flows-<id>-00000.parquet``
    what the compactor makes of it: one file per exporter and day of the
    spool file (:func:`.schema.write_partitioned` with ``replace=True``:
    the names follow from ``<id>``, each written beside its target and
    renamed over it).

Compaction is idempotent, so a kill at any point loses and duplicates
nothing: the spool file is deleted only after all its Parquet files are in
place, and compacting it again (the next compactor, at the collector's
next start) writes the same names with the same contents, replacing what a
killed compactor had already renamed in. Readers see the store; records
still in the spool are not in it yet (``_spool`` starts with ``_``, which
pyarrow, Spark and the readers' ``*.parquet`` globs skip).

The spool is bounded on disk: when its closed files pass ``limit`` bytes
(``--spool-limit``), the collector's writer waits for the compactor (and
the receive loop for the writer, then the kernel drops what its buffer
cannot hold: counted as kernel drops), and the time it waited is reported.
The compactor runs as ``python -m alphaqos.flows.spool OUT``: SCHED_OTHER
at nice 19 (never at the collector's real-time priority), on the CPUs the
collector is not confined to when it is pinned; it compacts until its
standard input closes (the collector stopping, or dying), then compacts
what is left and exits, printing one line of what it did and its CPU.
"""

from __future__ import annotations

import os
import resource
import select
import sys
import time
from pathlib import Path

import polars as pl

from . import schema

__all__ = ["SPOOL", "Spool", "compact_file", "compact_all", "pending_files"]

#: The spool's directory under the store's root.
SPOOL = "_spool"
#: Default cap of the spool's closed files on disk, bytes (about 40 s of
#: 1 M records/s at ~100 bytes a record).
LIMIT = 4 * 2**30
_POLL_S = 0.05


def pending_files(root: Path) -> list[Path]:
    """The closed spool files under ``root``, oldest first."""
    directory = Path(root) / SPOOL
    return sorted(directory.glob("spool-*.arrow")) if directory.is_dir() else []


class Spool:
    """The collector's side: :meth:`write` one flush as a closed spool file."""

    def __init__(self, root: Path, limit: int = LIMIT, compactor_alive=lambda: True):
        self.directory = Path(root) / SPOOL
        self.directory.mkdir(parents=True, exist_ok=True)
        for stale in self.directory.glob(".spool-*.partial"):  # a killed collector's unfinished flush
            stale.unlink(missing_ok=True)
        self.limit, self.compactor_alive = limit, compactor_alive
        self.prefix = f"{time.time_ns():020d}-{os.getpid()}"
        self.count = 0
        self.waited_s = 0.0  # time the writer waited for the spool to fall below its limit
        self.waits = 0

    def size(self) -> int:
        """Bytes of the closed spool files now."""
        total = 0
        with os.scandir(self.directory) as entries:
            for entry in entries:
                if entry.name.endswith(".arrow"):
                    try:
                        total += entry.stat().st_size
                    except FileNotFoundError:  # compacted meanwhile
                        pass
        return total

    def write(self, frame: pl.DataFrame, groups=None) -> list[Path]:
        """Append ``frame`` (canonical) as closed spool files, one per group
        of ``groups`` (``(exporter, day, first row, rows)``, as
        :func:`.schema.write_grouped` takes them) or one if None, after
        waiting while the spool holds more than its limit; RuntimeError if
        the compactor is gone while the spool is full."""
        if self.size() > self.limit:
            self.waits += 1
            started = time.monotonic()
            while self.size() > self.limit:
                if not self.compactor_alive():
                    raise RuntimeError(f"the spool {str(self.directory)!r} is full and its compactor has stopped")
                time.sleep(_POLL_S)
            self.waited_s += time.monotonic() - started
        parts = [(0, frame.height)] if groups is None else [(start, n) for _, _, start, n in groups]
        written = []
        for k, (start, n) in enumerate(parts):
            name = f"spool-{self.prefix}-{self.count:06d}-{k:05d}.arrow"
            partial = self.directory / f".{name}.partial"
            frame.slice(start, n).write_ipc(partial, compression="uncompressed", compat_level=pl.CompatLevel.newest())
            target = self.directory / name
            partial.rename(target)
            written.append(target)
        self.count += 1
        return written


def compact_file(path: Path, root: Path, level: int = 1) -> int:
    """Write spool file ``path`` into the store under ``root`` (one Parquet
    file per exporter and day, named after the spool file), then delete
    it; the records compacted. Safe to repeat after a kill at any point."""
    frame = schema.conform(pl.read_ipc(path))
    tag = "flows-" + path.stem.removeprefix("spool-")
    one = _one_group(frame)
    if one is not None:  # as the native decoder spools: written as it is
        schema.write_grouped(frame, [(*one, 0, frame.height)], root, tag=tag, level=level, replace=True)
    else:
        schema.write_partitioned(frame, root, tag=tag, level=level, replace=True)
    path.unlink()
    return frame.height


def _one_group(frame: pl.DataFrame):
    """(exporter, day) if every record of ``frame`` has that exporter and
    day of ``first`` (UTC), else None; without grouping."""
    if frame.height == 0:
        return None
    exporter = frame["exporter"][0]
    span = frame.select(pl.col("first").dt.date().min().alias("a"), pl.col("first").dt.date().max().alias("b"),
                        (pl.col("exporter") == exporter).all().alias("same")).row(0)  # fmt: skip
    return (exporter, span[0]) if span[2] and span[0] == span[1] else None


def compact_all(root: Path, level: int = 1) -> tuple[int, int]:
    """Compact every closed spool file under ``root``; (files, records)."""
    files = records = 0
    for path in pending_files(root):
        records += compact_file(path, root, level)
        files += 1
    return files, records


def _lower_priority() -> None:
    """SCHED_OTHER at nice 19: below the collector, whatever it runs at."""
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, AttributeError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """The compactor process: ``python -m alphaqos.flows.spool OUT [LEVEL]``."""
    argv = sys.argv[1:] if argv is None else argv
    root, level = Path(argv[0]), int(argv[1]) if len(argv) > 1 else 1
    _lower_priority()
    started = time.process_time()
    files = records = 0
    stdin = sys.stdin.fileno()
    open_ = True
    while open_:
        done, n = compact_all(root, level)
        files, records = files + done, records + n
        if done:
            continue
        readable, _, _ = select.select([stdin], [], [], _POLL_S * 4)
        if readable and not os.read(stdin, 4096):  # the collector closed our input: stopping
            open_ = False
    done, n = compact_all(root, level)
    files, records = files + done, records + n
    cpu = time.process_time() - started
    per = f"{cpu * 1e6 / records:.2f} us per record" if records else "no records"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"compacted {records:,} records from {files:,} spool files into the store: {cpu:.2f} s CPU ({per}), "
          f"peak RSS {peak:,.0f} MiB", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
