"""The native decode path of NetFlow v5/v9 and IPFIX: :class:`NativeDecoder`,
the interface of :class:`.netflow.Decoder` over ``alphaqos._core.FlowDecoder``
(``crates/alphaqos-py/src/flows.rs``).

The Rust side decodes datagrams (fed one by one, or read from a UDP socket
in batches of ``recvmmsg`` with the GIL released) into columns with the same
rules, caps and problem reasons as the Python decoder, which stays the
reference. The native side also rejects the impossible records (the checks
of :func:`.schema.impossible`, in its order, with its reason names: codes
in :data:`REASONS`) and counts them and the records of unknown sampling
rate; the records left cross as the canonical table's columns, built in
Rust (types, masks, scaled counts, grouped by exporter and day) and taken
by polars through the Arrow C data interface without a copy. ``tests/test_flows_native.py`` feeds both decoders
the same datagrams (every rejection reason among them) and asserts the same
records and counters.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter

import polars as pl

from .. import _core
from . import netflow, schema
from .netflow import KEPT_PROBLEMS, Problem

__all__ = ["NativeDecoder"]

_CAPS = ("HELD_SETS", "HELD_BYTES_PER_EXPORTER", "HELD_BYTES", "TEMPLATES_PER_EXPORTER", "TEMPLATES",
         "TEMPLATE_FIELDS_PER_EXPORTER", "TEMPLATE_FIELDS", "EXPORTERS")  # fmt: skip
#: the reasons of the native checks by their code (``reason`` in flows.rs), in schema.impossible's order
REASONS = (None, schema.Reason.ADDRESS_LENGTH, schema.Reason.EMPTY, schema.Reason.BYTES_WITHOUT_PACKETS,
           schema.Reason.BYTES_PER_PACKET, schema.Reason.OVERFLOW, schema.Reason.TIME_OVERFLOW,
           schema.Reason.LAST_BEFORE_FIRST, schema.Reason.OUT_OF_WINDOW)  # fmt: skip
_EPOCH = dt.date(1970, 1, 1)


class NativeDecoder:
    """A :class:`.netflow.Decoder` whose decoding is native; ``recv(sock)``
    reads and decodes straight from a UDP socket."""

    def __init__(self, sampling: dict[str, int] | None = None, *, window_us: int | None = schema.WINDOW_US,
                 max_packet_bytes: int | dict[str, int] | None = None):  # fmt: skip
        self.sampling = dict(sampling or {})
        self.window_us = window_us
        self.max_packet_bytes = max_packet_bytes
        # as schema.packet_limit reads the setting: {exporter: bytes}, "*" the others
        self._limits = {"*": schema.MAX_PACKET_BYTES}
        if isinstance(max_packet_bytes, int):
            self._limits["*"] = max_packet_bytes
        elif max_packet_bytes:
            self._limits.update({k: int(v) for k, v in max_packet_bytes.items()})
        # the caps as netflow.py has them now (read at construction)
        caps = {name.lower(): getattr(netflow, name) for name in _CAPS}
        self._native = _core.FlowDecoder(self.sampling, window_us, caps)
        # what build() counts (it may run in another thread than feed/recv): under this lock
        self._lock = threading.Lock()
        self.rejected: Counter = Counter()  # (exporter, schema.Reason) -> records
        self._unknown: Counter = Counter()  # exporter -> records of unknown sampling rate
        self._build_problems: list[Problem] = []

    # --- input ----------------------------------------------------------

    def feed(self, datagram: bytes, exporter: str, received_us: int | None = None) -> int:
        """Decode one datagram (see :meth:`.netflow.Decoder.feed`)."""
        return self._native.feed(datagram, exporter, received_us)

    def recv(self, sock, limit: int, timeout_s: float, pending: int) -> int:
        """Wait up to ``timeout_s`` for ``sock`` (non-blocking UDP) to be
        readable, then read and decode what is queued until ``limit``
        datagrams are read or ``pending`` records wait; the datagrams read.
        The exporter is the source address; the receive time the clock's."""
        return self._native.recv(sock.fileno(), limit, int(timeout_s * 1000), pending)

    # --- output ---------------------------------------------------------

    @property
    def pending(self) -> int:
        """Records decoded and not yet detached."""
        return self._native.pending

    def detach(self) -> dict:
        """The records decoded so far, the impossible ones left out and
        counted by reason (columns as bytes; see ``FlowDecoder.detach``)."""
        return self._native.detach(self._limits)

    def take(self) -> pl.DataFrame:
        return self.build(self.detach())

    def build(self, batch: dict) -> pl.DataFrame:
        """The canonical table of records from ``detach()``."""
        return self.build_parts(batch)[0]

    def build_parts(self, batch: dict) -> tuple[pl.DataFrame, list[tuple[str, dt.date, int, int]]]:
        """The canonical table of records from ``detach()``, grouped by
        exporter and day of ``first``, and the groups as ``(exporter, day,
        first row, rows)`` (for :func:`.schema.write_grouped`). The columns
        are the native side's vectors, taken by polars as they are (the
        Arrow C data interface): no copy, no conversion."""
        names = batch["exporters"]
        rejected = {(names[e], REASONS[why]): count for e, why, count in batch["rejected"]}
        unknown = {names[e]: count for e, count in batch["unknown"]}
        frame = pl.DataFrame(batch["table"])
        parts = [(exporter, _EPOCH + dt.timedelta(days=day), start, n) for exporter, day, start, n in batch["parts"]]
        counted = dict(zip(batch["exporters"], batch["counted"]))  # counters of exporters beyond EXPORTERS: summed
        summed: Counter = Counter()
        for exporter, n in unknown.items():
            summed[counted[exporter]] += n
        with self._lock:
            for (exporter, why), count in rejected.items():
                self.rejected[(counted[exporter], why)] += count
                if len(self._build_problems) < KEPT_PROBLEMS:
                    self._build_problems.append(Problem(exporter, "rejected", f"{count} records: {why}"))
            self._unknown.update(summed)
        return frame, parts

    # --- counters, as the Python decoder has them --------------------------

    def _counters(self) -> dict:
        return self._native.counters()

    def snapshot(self) -> netflow.Snapshot:
        """The counters as they are now: one call into Rust."""
        counters = self._counters()
        with self._lock:
            unknown, rejected = Counter(self._unknown), Counter(self.rejected)
        stats = Counter(counters["stats"])
        if unknown:
            stats["sampling_unknown"] += sum(unknown.values())
        exporter_stats = {e: Counter(c) for e, c in counters["exporter_stats"].items()}
        for exporter, n in unknown.items():
            exporter_stats.setdefault(exporter, Counter())["sampling_unknown"] += n
        exporter_counts = {e: Counter(c) for e, c in counters["exporter_counts"].items()}
        return netflow.Snapshot(Counter(counters["counts"]), stats, exporter_counts, exporter_stats, rejected)

    @property
    def counts(self) -> Counter:
        return self.snapshot().counts

    @property
    def stats(self) -> Counter:
        return self.snapshot().stats

    @property
    def exporter_counts(self) -> dict[str, Counter]:
        return self.snapshot().exporter_counts

    @property
    def exporter_stats(self) -> dict[str, Counter]:
        return self.snapshot().exporter_stats

    @property
    def problems(self) -> list[Problem]:
        with self._lock:
            built = list(self._build_problems)
        return [Problem(*p) for p in self._native.problems()] + built

    @property
    def held_bytes(self) -> int:
        return self._counters()["held_bytes"]

    @property
    def template_fields(self) -> int:
        return self._counters()["template_fields"]

    def exporters(self) -> list[str]:
        """Every exporter heard from, sorted."""
        return self.snapshot().exporters()
