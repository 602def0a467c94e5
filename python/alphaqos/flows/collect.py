"""``alphaqos flows collect``: a UDP collector of NetFlow v5/v9 and IPFIX
exports writing the canonical flow table (:mod:`.schema`) as Parquet.

``alphaqos flows collect [--listen HOST:PORT] --out DIR [--flush-every 10s]
[--flush-records N] [--sampling EXPORTER=N ...] [--max-packet EXPORTER=BYTES ...]
[--time-window D|off] [--duration D] [--decoder native|python]``

One non-blocking UDP socket with a large receive buffer (asked for
:data:`RECEIVE_BUFFER` bytes; the kernel caps it at ``net.core.rmem_max``
unless the collector may exceed that, CAP_NET_ADMIN, when it is forced with
``SO_RCVBUFFORCE``; the size granted is printed at start) is drained in
batches. By default (``--decoder native``) the batches are
read with ``recvmmsg`` and decoded by :class:`.native.NativeDecoder` (Rust,
the GIL released while it waits and decodes); ``--decoder python`` reads
them with ``recvfrom_into`` and decodes them with :class:`.netflow.Decoder`,
the reference both are tested against. The exporter of a datagram is its
source address; the
records are handed every ``--flush-every``, or as soon as
``--flush-records`` are waiting (default :data:`FLUSH_RECORDS`), to a
writer thread that builds the table and writes it with
:func:`.schema.write_partitioned` under ``DIR`` (``exporter=.../day=...``),
while the socket keeps being read (the writer runs :data:`WRITER_NICE`
nicer than the receive loop, so on one core the receive loop goes first).
At most :data:`QUEUED_FLUSHES` flushes wait for the writer; beyond them
the receive loop waits too (and the kernel drops what its buffer cannot
hold, counted below), so memory is bounded by ``--flush-records``
whatever the rate and the flush interval. The decoder's own caps (held data, templates) are in
:mod:`.netflow` and ``docs/flows.md``.
Each flush prints one line: records written, datagrams and records so far,
the decoding rate (records per second of decoding time), problems by
reason, and the datagrams the kernel dropped on this socket (from
``/proc/net/udp``); then one line per exporter heard from: its datagrams
and records, its problems by reason, the records rejected as impossible
(:func:`.schema.impossible`) by reason, what its sequence numbers say was
lost on the way, the jumps of its sequence numbers that no loss explains
(a restart, or garbage; see :meth:`.netflow.Decoder._sequence`), and the
records whose sampling rate is unknown (stored with rate 0).

Each datagram's receive time (the collector's clock) and its header's
export time are the centres of the plausible window of its records'
times: a record more than ``--time-window`` (default 1 day) from either
is rejected, so a garbage time never makes a partition of its own.

By default the flushes go to a spool (``--spool-limit``, :mod:`.spool`):
the writer thread appends each as an Arrow IPC file under ``DIR/_spool``
(close to a copy) and a compactor process of its own (nice 19, on the
CPUs the collector is not pinned to) writes them into the Parquet store
and deletes them, so that the receive path's core does not carry the
Parquet write; ``--spool-limit 0`` writes the Parquet in the writer
thread instead.

SIGTERM or SIGINT (or the end of ``--duration``) stops the collector: it
reads what is still queued on the socket (for up to :data:`FINAL_DRAIN_S`;
what is queued after that is read without decoding for up to
:data:`DISCARD_S` and counted, with the bytes the kernel still holds, as
not decoded in the final line), writes every record decoded, waits for the
compactor to empty the spool and exits 0. ``--listen`` with port 0 takes a free port (printed at start).
A bad option, or an address it cannot listen on, exits 2 with one line.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from .. import units
from ..errors import RunFailure, UsageError
from . import schema, spool
from .ingest import time_window
from .native import NativeDecoder
from .netflow import Decoder

__all__ = ["collect_command", "parse_listen", "receive_buffer", "RECEIVE_BUFFER"]

#: Socket receive buffer asked for, bytes.
RECEIVE_BUFFER = 64 * 1024 * 1024
#: Datagrams read per wake-up before the clock is looked at again.
BATCH = 2048
#: Records decoded and waiting that trigger a flush before ``--flush-every``.
FLUSH_RECORDS = 200_000
#: Flushes that may wait for the writer thread before the receive loop waits.
QUEUED_FLUSHES = 2
#: Nice value the writer thread adds to the collector's: on a core of its
#: own the scheduler gives the receive loop three quarters while both run
#: (CFS weights 1024 and 335), so a write never keeps the socket unread for
#: long; the writer has whatever the receive loop leaves, and when it falls
#: behind the receive loop waits for it (QUEUED_FLUSHES). Not more: on a
#: core shared with other work the writer competes with that work at this
#: nice value too.
WRITER_NICE = 5
#: Longest time spent, once stopping, reading what is still queued on the socket.
FINAL_DRAIN_S = 5.0
#: Then the longest time spent reading, without decoding, what is queued
#: still (a sender that never stops): counted as not decoded at close.
DISCARD_S = 1.0
_SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)  # Linux, asm-generic/socket.h (Python does not name it)
_TICK_S = 0.1  # longest sleep in select, so a signal is noticed promptly


def parse_listen(text: str) -> tuple[int, tuple]:
    """``HOST:PORT`` or ``[V6]:PORT`` as (address family, socket address);
    UsageError if malformed or not a numeric address."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise UsageError(f"--listen {text!r}: expected HOST:PORT, e.g. 127.0.0.1:4739 or [::1]:4739")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {text!r}: port must be a number from 0 to 65535")
    try:
        info = socket.getaddrinfo(host, int(port), type=socket.SOCK_DGRAM, flags=socket.AI_NUMERICHOST)
    except socket.gaierror:
        raise UsageError(f"--listen {text!r}: {host!r} is not an IPv4 or IPv6 address") from None
    family, _, _, _, address = info[0]
    return family, address


def _per_exporter(items: list[str], option: str, what: str) -> dict[str, int]:
    """``EXPORTER=N`` options (``--sampling``, ``--max-packet``) as {exporter: N}, N at least 1."""
    rates = {}
    for item in items:
        exporter, sep, rate = item.rpartition("=")
        if not sep or not exporter or not rate.isdigit() or int(rate) < 1:
            raise UsageError(f"{option} {item!r}: expected {what} with {what.split('=')[1]} a whole number of at least 1")
        rates[exporter] = int(rate)
    return rates


def _seconds(option: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = units.parse_time(text) / 1e9
    except ValueError as exc:
        raise UsageError(f"{option} {text!r}: {exc}") from None
    if value <= 0:
        raise UsageError(f"{option} {text!r}: must be positive")
    return value


def collect_command(args) -> int:
    """``alphaqos flows collect`` with its parsed options (:mod:`alphaqos.cli.flows`)."""
    family, address = parse_listen(args.listen)
    sampling = _per_exporter(args.sampling, "--sampling", "EXPORTER=N")
    max_packet = _per_exporter(args.max_packet, "--max-packet", "EXPORTER=BYTES") or None
    if args.flush_records < 1:
        raise UsageError(f"--flush-records {args.flush_records}: must be at least 1")
    flush_every = _seconds("--flush-every", args.flush_every)
    duration = _seconds("--duration", args.duration)
    window = None if args.time_window == "off" else time_window("--time-window", args.time_window)
    try:
        spool_limit = units.parse_size(args.spool_limit) if args.spool_limit.strip() != "0" else 0
    except ValueError as exc:
        raise UsageError(f"--spool-limit {args.spool_limit!r}: {exc}") from None
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {str(args.out)!r} exists and is not a directory")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {str(args.out)!r}: {exc.strerror or exc}") from None
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        receive_buffer(sock, RECEIVE_BUFFER)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {args.listen}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    with sock:
        kind = NativeDecoder if args.decoder == "native" else Decoder
        decoder = kind(sampling, window_us=window, max_packet_bytes=max_packet)
        compactor = start_compactor(args.out) if spool_limit else None
        try:
            spooled = spool.Spool(args.out, spool_limit, lambda: compactor.poll() is None) if compactor else None
            collector = Collector(sock, args.out, decoder, flush_every, duration, flush_records=args.flush_records,
                                  spool=spooled)  # fmt: skip
            return collector.run()
        finally:
            if compactor is not None:
                finish_compactor(compactor)


def start_compactor(out: Path) -> subprocess.Popen:
    """The spool's compactor (:mod:`.spool`) as a process of its own: its
    own session (a terminal's Ctrl-C reaches the collector, which stops it
    in order), on the CPUs this process is not confined to if there are
    any (the collector pinned to a core: the compactor on the others)."""
    mine = os.sched_getaffinity(0)
    others = set(range(os.cpu_count() or 1)) - mine

    def prepare():
        if others:
            try:
                os.sched_setaffinity(0, others)
            except OSError:
                pass

    package = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, "-m", "alphaqos.flows.spool", str(out)], stdin=subprocess.PIPE,
                            start_new_session=True, preexec_fn=prepare, env=env)  # fmt: skip


def finish_compactor(compactor: subprocess.Popen) -> None:
    """Tell the compactor to compact what is left and stop (its input
    closes), and wait for it; RunFailure if it failed (the spool files it
    left are compacted by the next one: nothing is lost)."""
    if compactor.stdin is not None:
        compactor.stdin.close()
    if compactor.wait() == 0:
        try:  # an empty spool leaves no trace in the store's directory
            (Path(compactor.args[-1]) / spool.SPOOL).rmdir()
        except OSError:
            pass
    else:
        raise RunFailure(f"the spool's compactor failed (exit {compactor.returncode}); "
                         "what it left in the spool is compacted at the next start")  # fmt: skip


def receive_buffer(sock: socket.socket, size: int) -> int:
    """Ask for a receive buffer of ``size`` bytes on ``sock``: ``SO_RCVBUF``
    (capped by the kernel at ``net.core.rmem_max``), then, if that gave
    less, ``SO_RCVBUFFORCE`` (beyond the cap; needs CAP_NET_ADMIN, else
    the capped size stays). Returns the size the kernel reports (twice what
    was granted: Linux counts its bookkeeping in, socket(7))."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) < 2 * size:
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, size)
        except PermissionError:
            pass
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)


class Collector:
    """The receive loop; see the module doc. Records are turned into a table
    and written by a writer thread, so that a flush does not stop the
    receiving (numpy, polars and Parquet writing release the GIL for most of
    their work)."""

    def __init__(self, sock: socket.socket, out: Path, decoder: Decoder, flush_every: float, duration: float | None,
                 flush_records: int = FLUSH_RECORDS, spool: spool.Spool | None = None):  # fmt: skip
        self.sock, self.out, self.decoder, self.spool = sock, out, decoder, spool
        self.discarded = 0  # datagrams read and not decoded at close (the final drain's time was over)
        self.longest_write_s = 0.0  # the longest one flush's write took (wall clock): what could stall the receive loop
        self.flush_every, self.duration, self.flush_records = flush_every, duration, flush_records
        self.peak_pending = 0  # most records waiting in the decoder at once (the bound's own accounting)
        self.stopping = False
        self.decode_s = 0.0  # receiving and decoding (receive loop)
        self.build_s = 0.0  # building the tables (writer thread)
        self.detach_s = 0.0  # the receive loop's CPU detaching flushes (the checks and columns, in Rust)
        self._writer_cpu_start = 0.0  # the writer thread's CPU clock at its start (its own clock: read in that thread)
        self.written = 0
        self.unwritten: list = []  # frames a failed write left behind, retried at the next flush
        self.failure: str | None = None
        self.batches: queue.Queue = queue.Queue(maxsize=QUEUED_FLUSHES)
        self.started = time.monotonic()

    def _stop(self, signum, frame) -> None:
        self.stopping = True

    def run(self) -> int:
        previous = {s: signal.signal(s, self._stop) for s in (signal.SIGTERM, signal.SIGINT)}
        writer = threading.Thread(target=self._writer, name="flows-writer", daemon=True)
        writer.start()
        try:
            host, port = self.sock.getsockname()[:2]
            buffer = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
            print(f"collecting on {host}:{port} (receive buffer {buffer:,} bytes) into {self.out}/", flush=True)
            next_flush = self.started + self.flush_every
            end = None if self.duration is None else self.started + self.duration
            while not self.stopping:
                now = time.monotonic()
                if end is not None and now >= end:
                    break
                wait = min(next_flush, end if end is not None else next_flush) - now
                self._receive(BATCH, max(0.0, min(wait, _TICK_S)))
                if time.monotonic() >= next_flush or self.decoder.pending >= self.flush_records:
                    self._flush(False)
                    next_flush = time.monotonic() + self.flush_every
            deadline = time.monotonic() + FINAL_DRAIN_S
            while self._drain(None, deadline=deadline):  # what the kernel holds was received: keep it
                self._flush(False)
            self.discarded = self._discard(time.monotonic() + DISCARD_S)
            self._flush(True)
            writer.join()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        if self.failure:
            raise RunFailure(self.failure)
        return 0

    def _flush(self, final: bool) -> None:
        """Hand what is decoded to the writer (waits while QUEUED_FLUSHES are
        queued). Records only accumulate between flushes: the most waiting
        at once is what waits now."""
        self.peak_pending = max(self.peak_pending, self.decoder.pending)
        started = time.thread_time()
        batch = self.decoder.detach()
        self.detach_s += time.thread_time() - started
        self.batches.put((batch, final))

    def _receive(self, limit: int, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for datagrams, then read up to ``limit``."""
        if isinstance(self.decoder, NativeDecoder):
            started = time.thread_time()  # this thread's CPU time: the wait in poll is not counted
            self.decoder.recv(self.sock, limit, timeout, self.flush_records)
            self.decode_s += time.thread_time() - started
            return
        readable, _, _ = select.select([self.sock], [], [], timeout)
        if readable:
            self._drain(limit)

    def _discard(self, deadline: float) -> int:
        """Read, without decoding, what is still queued (until ``deadline``):
        the datagrams read, counted as not decoded in the final line."""
        count, buffer = 0, bytearray(65536)
        while time.monotonic() < deadline:
            try:
                for _ in range(256):
                    self.sock.recv_into(buffer)
                    count += 1
            except (BlockingIOError, InterruptedError):
                break
        return count

    def _drain(self, limit: int | None, deadline: float | None = None) -> bool:
        """Read up to ``limit`` datagrams (None: all queued, until
        ``deadline``); returns True if it stopped because ``--flush-records``
        records are waiting."""
        decoder = self.decoder
        if isinstance(decoder, NativeDecoder):
            started = time.thread_time()  # the clock _receive's native read counts on
            count, full = 0, False
            while True:
                read = decoder.recv(self.sock, BATCH, 0.0, self.flush_records)
                count += read
                full = decoder.pending >= self.flush_records
                if full or read == 0 or (limit is not None and count >= limit) or (deadline is not None and time.monotonic() > deadline):
                    break
            self.decode_s += time.thread_time() - started
            return full
        buffer = bytearray(65536)
        view = memoryview(buffer)
        recv, feed = self.sock.recvfrom_into, self.decoder.feed
        count = 0
        started = time.perf_counter()
        while limit is None or count < limit:
            try:
                size, source = recv(buffer)
            except (BlockingIOError, InterruptedError):
                break
            exporter = source[0]
            if exporter.startswith("::ffff:") and "." in exporter:  # IPv4-mapped, on a socket bound to [::]
                exporter = exporter[7:]
            feed(bytes(view[:size]), exporter, time.time_ns() // 1000)
            count += 1
            if count % 64 == 0:
                if decoder.pending >= self.flush_records:
                    self.decode_s += time.perf_counter() - started
                    return True
            if deadline is not None and count % BATCH == 0 and time.monotonic() > deadline:
                break  # a sender that never stops must not keep us from stopping
        self.decode_s += time.perf_counter() - started
        return False

    def _writer(self) -> None:
        try:  # Linux: a thread's own nice value (see WRITER_NICE)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + WRITER_NICE)
        except OSError:
            pass
        self._writer_cpu_start = time.thread_time()
        final = False
        while not final:
            chunks, final = self.batches.get()
            try:
                started = time.perf_counter()
                if isinstance(self.decoder, NativeDecoder):  # already grouped by exporter and day
                    frame, groups = self.decoder.build_parts(chunks)
                else:
                    frame, groups = self.decoder.build(chunks), None
                self.build_s += time.perf_counter() - started  # its own sum: two threads must not share one
                self._write(frame, groups, final)
            except Exception as exc:  # noqa: BLE001 - reported, and the collector exits 1
                self.failure = f"cannot write the flows: {type(exc).__name__}: {exc}"
                if final:
                    return

    def _write(self, frame, groups, final: bool) -> None:
        if frame.height:
            self.unwritten.append((frame, groups))
        written = 0
        while self.unwritten:
            frame, groups = self.unwritten[0]
            started = time.perf_counter()
            try:
                if self.spool is not None:  # the compactor writes the Parquet
                    self.spool.write(frame, groups)
                elif groups is None:
                    schema.write_partitioned(frame, self.out, tag="flows", level=1)
                else:
                    schema.write_grouped(frame, groups, self.out, tag="flows", level=1)
            except OSError as exc:
                message = f"cannot write into {str(self.out)!r}: {exc.strerror or exc}"
                if final:
                    self.failure = message
                    return
                print(f"alphaqos: warning: {message}; retrying at the next flush", file=sys.stderr, flush=True)
                break
            self.longest_write_s = max(self.longest_write_s, time.perf_counter() - started)
            written += self.unwritten.pop(0)[0].height
        self.written += written
        self._report(written, final)

    def _report(self, written: int, final: bool) -> None:
        decoder = self.decoder.snapshot()  # the counters once, not once per exporter and figure
        stats = decoder.stats
        busy = self.decode_s + self.build_s
        rate = stats["records"] / busy if busy > 0 else 0.0
        elapsed = time.monotonic() - self.started
        drops, queued = socket_state(self.sock)
        head = "stopped after" if final else "at"
        where = "spooled" if self.spool is not None else "wrote"
        line = (f"{head} {elapsed:.1f} s: {where} {written:,} records ({self.written:,} in all); "
                f"{stats['datagrams']:,} datagrams, {stats['records']:,} records, decoding {rate:,.0f} records/s; "
                f"problems: {_counts(decoder.counts)}; kernel drops: {'?' if drops is None else f'{drops:,}'}; ")  # fmt: skip
        if final:  # what the kernel still held when the socket closed is lost: say how much
            line += (f"not decoded at close: {self.discarded:,} datagrams read after the {FINAL_DRAIN_S:g} s drain, "
                     f"{'?' if queued is None else f'{queued:,}'} bytes still queued; ")  # fmt: skip
        if self.spool is not None and self.spool.waits:
            line += f"waited {self.spool.waited_s:.1f} s for the spool ({self.spool.waits:,} times over its limit); "
        if final:  # _report runs in the writer thread: thread_time is the writer's CPU
            line += (f"longest write of a flush: {self.longest_write_s * 1000:,.0f} ms; CPU: receive and decode "
                     f"{self.decode_s:.2f} s, detach {self.detach_s:.2f} s, build and {'spool' if self.spool else 'Parquet'} write "
                     f"{time.thread_time() - self._writer_cpu_start:.2f} s; ")  # fmt: skip
        lines = [line + f"most records waiting at once: {self.peak_pending:,}"]
        lines += [f"  {exporter_line(decoder, exporter)}" for exporter in decoder.exporters()]
        print("\n".join(lines), flush=True)


def _counts(counter) -> str:
    return ", ".join(f"{reason} {n:,}" for reason, n in sorted(list(counter.items())) if n) or "none"


def exporter_line(decoder: Decoder, exporter: str) -> str:
    """One exporter's counters, as the collector prints them."""
    stats = decoder.exporter_stats.get(exporter, {})
    parts = [f"{exporter}: {stats.get('datagrams', 0):,} datagrams, {stats.get('records', 0):,} records",
             f"problems: {_counts(decoder.exporter_counts.get(exporter, {}))}"]  # fmt: skip
    rejected = {str(why): n for (e, why), n in decoder.rejected.items() if e == exporter}
    if rejected:
        parts.append(f"rejected: {_counts(rejected)}")
    lost = [f"{stats[k]:,} {k[5:]}" for k in ("lost_records", "lost_datagrams") if stats.get(k)]
    if lost:  # sequence-number gaps: lost between the exporter and us
        parts.append(f"lost on the way: {', '.join(lost)}")
    if stats.get("sequence_jumps"):
        parts.append(f"{stats['sequence_jumps']:,} sequence-number jumps (restart or garbage, not counted as loss)")
    if stats.get("sampling_unknown"):
        parts.append(f"sampling unknown for {stats['sampling_unknown']:,} records")
    return "; ".join(parts)


def socket_state(sock: socket.socket) -> tuple[int | None, int | None]:
    """(datagrams the kernel dropped, bytes it holds queued) of ``sock``
    (Linux ``/proc/net/udp*``: ``drops`` and ``rx_queue``); None, None if
    not found."""
    inode = str(os.fstat(sock.fileno()).st_ino)
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) >= 13 and fields[9] == inode:
                return int(fields[-1]), int(fields[4].split(":")[1], 16)
    return None, None
