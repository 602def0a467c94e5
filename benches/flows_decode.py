"""Benchmark of flow export decoding and of ``alphaqos flows collect``.

    PYTHONPATH=python python benches/flows_decode.py [--records 300000] [--seconds 5] [--writes]

Records are realistic (:func:`realistic`: ``flows synth``'s day of one
exporter, by their end: varied times, counts, ports and addresses); the
former regular table (:func:`synthetic`, one time, consecutive addresses)
compressed so well that the Parquet write looked half as dear.

1. In-process: IPFIX (12-field IPv4 template: addresses, ports, protocol,
   8-byte counters, interfaces, flowStart/EndMilliseconds, samplerId) and
   NetFlow v9 datagrams of ``--records`` records are decoded by
   the Python :class:`alphaqos.flows.netflow.Decoder` and by the native
   :class:`alphaqos.flows.native.NativeDecoder` (feed every datagram, then
   ``take()``: the time to a polars DataFrame); records/s printed, after
   the result is checked against the table encoded; then the CPU of the
   Parquet write (the collector with ``--spool-limit 0``), of the spool
   write (Arrow IPC: what the collector's core does by default) and of
   the compaction of the spool into Parquet (the compactor process's).
2. ``alphaqos flows ingest --format nfdump`` of a CSV of ``--nfdump-mb``
   MB (the 200,000 records above, repeated) in a subprocess: time and peak
   RSS (its ``VmHWM``, polled).
3. Over loopback (127.0.0.1 only): a collector subprocess (``--decoders``:
   native, then python; ``--writers``: spool, the default, and/or direct;
   alone on CPU ``--pin``, the sender and the compactor on the others;
   ``--realtime``: collector and sender at SCHED_FIFO 50, the compactor
   resets itself to nice 19) receives 30-record IPFIX messages from a
   separate sender process paced at 20,000, 34,000 (about 1 M records/s),
   37,000 (1.11 M) and 40,000 datagrams/s, then unpaced (``--rates``), for
   ``--seconds`` each; printed per run: the rate offered, records sent and
   stored (counted in the Parquet store, after the compactor has emptied
   the spool), the share lost, kernel drops, the collector's CPU per
   record stored (its own process: the receive path; the compactor's CPU
   per record is its own column), both peak RSS, and the peak of its
   socket's queue (polled every 10 ms in ``/proc/net/udp``). The collector forces a large receive
   buffer where it may (``SO_RCVBUFFORCE``; 64 MiB, 1.7 s of 1 M records/s
   here), which could hide a collector that falls behind for the length of
   a run; a run counts as lossless only if every record was stored and
   the queue never held more than a buffer of ``net.core.rmem_max`` would
   (what a collector without CAP_NET_ADMIN gets), so a sustained deficit
   shows. The sender is one Python process: unpaced, it is the limit.

The figures end in one table (``make bench`` prints it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from alphaqos.flows import netflow  # noqa: E402

SENDER = r"""
import socket, struct, sys, time
port, rate, seconds, path = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
data, datagrams, pos = open(path, "rb").read(), [], 0
while pos < len(data):
    (n,) = struct.unpack_from(">H", data, pos)
    datagrams.append(data[pos + 2:pos + 2 + n]); pos += 2 + n
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
target, sent, start = ("127.0.0.1", port), 0, time.perf_counter()
total = int(rate * seconds)
if rate == 0:  # unpaced: as fast as this process can send, for the seconds given
    while time.perf_counter() - start < seconds:
        for _ in range(256):
            sock.sendto(datagrams[sent % len(datagrams)], target); sent += 1
while sent < total:
    due = min(total, int((time.perf_counter() - start) * rate) + 1)
    while sent < due:
        sock.sendto(datagrams[sent % len(datagrams)], target); sent += 1
    time.sleep(0.0005)
print(sent, time.perf_counter() - start)
"""


def realistic(n: int) -> pl.DataFrame:
    """``n`` records of ``flows synth``'s day of one exporter (varied times,
    counts, ports and addresses; IPv4), in the order a collector receives
    them (by their end): what the figures are measured on. The regular
    :func:`synthetic` table compresses far better than real records and
    made the Parquet write look half as dear."""
    from alphaqos.flows import synth

    day = synth.synthesize(days=1, exporters=1, beta_flows_per_day=max(n * 10 // 11, 1000) + 1000)
    assert day.height >= n, (day.height, n)
    return day.sort("last").head(n)


def synthetic(n: int) -> pl.DataFrame:
    t0 = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
    i = pl.int_range(0, n, eager=True)
    return pl.DataFrame({
        "exporter": ["bench"] * n,
        "first": [t0] * n,
        "last": [t0 + dt.timedelta(seconds=30)] * n,
        "src_addr": [f"10.{k >> 16 & 255}.{k >> 8 & 255}.{k & 255}" for k in range(n)],
        "dst_addr": [f"192.168.{k >> 8 & 255}.{k & 255}" for k in range(n)],
        "src_port": (i % 60000 + 1024).to_list(), "dst_port": [2811] * n, "protocol": [6] * n,
        "bytes": (i * 1500 + 40).to_list(), "packets": (i + 1).to_list(), "sampling_rate": [1] * n,
        "input_if": [3] * n, "output_if": [4] * n,
    })  # fmt: skip


def in_process(records: int) -> list[tuple]:
    """Wall time, then the CPU time per record of each step (this process's
    CPU time, all its threads: what one core must do) of decoding and of
    writing the collector's Parquet (zstd level 1); best of two for the
    native decoder. Returns the table rows of the native decoder."""
    from alphaqos.flows import schema
    from alphaqos.flows.native import NativeDecoder

    from alphaqos.flows import spool

    table = realistic(records)
    rows, best = [], {}
    for (name, encode), kind, _ in itertools.product((("IPFIX", netflow.encode_ipfix), ("NetFlow v9", netflow.encode_v9)),
                                                     (netflow.Decoder, NativeDecoder), range(2)):  # fmt: skip
        if kind is netflow.Decoder and _:
            continue  # the reference decoder once: it is not what the collector runs
        datagrams = encode(table)
        decoder = kind()
        start, cpu_start = time.perf_counter(), time.process_time()
        for datagram in datagrams:
            decoder.feed(datagram, "192.0.2.1")
        fed, cpu_fed = time.perf_counter(), time.process_time()
        batch = decoder.detach()  # native: the checks and the canonical columns; Python: nothing yet
        cpu_detached = time.process_time()
        frame, groups = decoder.build_parts(batch) if kind is NativeDecoder else (decoder.build(batch), None)
        done, cpu_done = time.perf_counter(), time.process_time()
        with tempfile.TemporaryDirectory() as tmp:  # as the collector writes without a spool
            if groups is None:
                schema.write_partitioned(frame, tmp, tag="flows", level=1)
            else:
                schema.write_grouped(frame, groups, tmp, tag="flows", level=1)
        cpu_written = time.process_time()
        with tempfile.TemporaryDirectory() as tmp:  # the spool: the receive path's write, then the compactor's work
            spool.Spool(Path(tmp)).write(frame, groups)
            cpu_spooled = time.process_time()
            spool.compact_all(Path(tmp))
        cpu_compacted = time.process_time()
        assert frame.height == records and frame["bytes"].sum() == table["bytes"].sum(), "decoding is wrong"
        assert frame.sort("src_port", "src_addr")["src_addr"].equals(table.sort("src_port", "src_addr")["src_addr"])
        per = 1e6 / frame.height
        print(f"{name}, {kind.__name__}: {frame.height:,} records in {len(datagrams):,} datagrams: "
              f"{frame.height / (done - start):,.0f} records/s (feed {fed - start:.2f} s, take {done - fed:.2f} s); "
              f"CPU per record: feed {(cpu_fed - cpu_start) * per:.2f} us, take {(cpu_done - cpu_fed) * per:.2f} us "
              f"(detach {(cpu_detached - cpu_fed) * per:.2f} us, build {(cpu_done - cpu_detached) * per:.2f} us), "
              f"Parquet {(cpu_written - cpu_done) * per:.2f} us: {frame.height / (cpu_written - cpu_start):,.0f} records/s "
              f"of one core; spool (Arrow IPC) {(cpu_spooled - cpu_written) * per:.2f} us, its compaction "
              f"{(cpu_compacted - cpu_spooled) * per:.2f} us", flush=True)  # fmt: skip
        if kind is NativeDecoder:
            steps = [(c1 - c0) * per for c0, c1 in ((cpu_start, cpu_fed), (cpu_fed, cpu_detached), (cpu_detached, cpu_done),
                                                    (cpu_done, cpu_written), (cpu_written, cpu_spooled), (cpu_spooled, cpu_compacted))]  # fmt: skip
            if name not in best or sum(steps) < sum(best[name]):
                best[name] = steps
    for name, steps in best.items():
        receive = steps[0] + steps[1] + steps[2] + steps[4]  # what the collector's core does with the spool
        rows.append((f"in-process {name} (native, {records:,} realistic records)", *(f"{v:.2f} us" for v in steps),
                     f"{receive:.2f} us", f"{1 / receive:.2f} M", f"{1 / (receive - steps[4] + steps[3]):.2f} M"))  # fmt: skip
    return rows


def write_options(records: int) -> None:
    """CPU per record (this process, all threads) and bytes per record of
    writing the collector's table: the store's writer (first), other codecs
    and statistics, polars' writer (the store's before pyarrow's), and Arrow
    IPC as a staging format (cheap on the receive path, but its compaction
    to Parquet costs the Parquet write again on the same core). Best of two
    each."""
    import pyarrow.parquet as pq

    from alphaqos.flows import schema
    from alphaqos.flows.native import NativeDecoder

    from alphaqos.flows import synth

    decoder = NativeDecoder()
    for datagram in netflow.encode_ipfix(synthetic(records), mtu=MTU_30):
        decoder.feed(datagram, "192.0.2.1")
    tables = {"the bench's table": decoder.take()}
    # a realistic one as well: flows synth's day of one exporter (varied times, counts, ports, addresses), in the
    # order a collector receives records (by their end); the bench's table is regular and compresses unrealistically
    day = synth.synthesize(days=1, exporters=1, beta_flows_per_day=max(records * 10 // 11, 1000))
    tables["flows synth's day"] = day.sort("last").head(records)
    def arrow(p, **options):  # pyarrow's writer fed polars' buffers (string views), as schema.write_parquet
        pq.write_table(frame.to_arrow(compat_level=pl.CompatLevel.newest()), p, **options)

    delta = dict(column_encoding=dict.fromkeys(schema.DELTA, "DELTA_BINARY_PACKED"))

    store = dict(write_statistics=list(schema.PRUNED), use_dictionary=list(schema.DICTIONARY), row_group_size=schema.ROW_GROUP_ROWS)
    variants = {
        "the store's (schema.write_parquet: pyarrow zstd-1, statistics on exporter/times/addresses, dictionary on few-valued columns, delta on times/counts)":
            lambda p: schema.write_parquet(frame, p, level=1),
        "pyarrow lz4, the store's encodings": lambda p: arrow(p, compression="lz4", **store, **delta),
        "pyarrow uncompressed, the store's encodings": lambda p: arrow(p, compression="none", **store, **delta),
        "pyarrow zstd-1, the store's without delta encoding": lambda p: arrow(p, compression="zstd", compression_level=1, **store),
        "pyarrow zstd-1, statistics and dictionary on every column": lambda p: arrow(p, compression="zstd", compression_level=1),
        "polars zstd-1, statistics (the former writer)": lambda p: frame.write_parquet(p, compression="zstd", compression_level=1, statistics=True),
        "polars zstd-1, no statistics": lambda p: frame.write_parquet(p, compression="zstd", compression_level=1, statistics=False),
        "Arrow IPC uncompressed (staging)": lambda p: frame.write_ipc(p, compression="uncompressed"),
        "Arrow IPC lz4 (staging)": lambda p: frame.write_ipc(p, compression="lz4"),
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x"
        for table, frame in tables.items():
            for name, write in variants.items():
                best = float("inf")
                for _ in range(2):
                    start = time.process_time()
                    write(path)
                    best = min(best, time.process_time() - start)
                print(f"write of {table} ({frame.height:,} records), {name}: {best * 1e6 / frame.height:.2f} us CPU and "
                      f"{path.stat().st_size / frame.height:.1f} bytes per record", flush=True)  # fmt: skip


def _wait_rss(process: subprocess.Popen, stream, cpu: list | None = None) -> tuple[str, int]:
    """Read ``stream`` (the process's output) to its end while polling the
    process's peak resident set (``VmHWM`` of ``/proc/PID/status``, every
    20 ms: the kernel's rusage of a child would include the RSS of this
    large parent, inherited through fork); returns (output, peak bytes).
    ``cpu``, if given, gets the CPU seconds the process used (user +
    system, all its threads; the last ``/proc/PID/stat`` read)."""
    import threading

    peak = 0
    done = threading.Event()

    def poll():
        nonlocal peak
        status = Path(f"/proc/{process.pid}/status")
        while not done.is_set():
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
                if cpu is not None:
                    cpu[:] = [_cpu_seconds(process.pid)]
            except (OSError, ValueError, IndexError):
                pass
            time.sleep(0.02)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    output = stream.read()
    process.wait()
    done.set()
    watcher.join()
    return output, peak


def collector_run(path: Path, counts: list[int], rate: float, seconds: float, out: Path, decoder: str = "native",
                  pin: int | None = None, spool: bool = True, realtime: bool = False):  # fmt: skip
    """One collector (on CPU ``pin`` alone, if given; the sender then on
    the others) fed by a sender process at ``rate`` datagrams/s (0:
    unpaced) for ``seconds``; returns (records sent, records stored in the
    Parquet store, kernel drops, decoding rate, datagrams/s achieved, peak
    RSS)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    cpus = os.sched_getaffinity(0)

    def on(chosen):
        def prepare():
            if pin is not None and chosen:
                os.sched_setaffinity(0, chosen)
            if realtime:  # chrt -f 50: the others' builds cannot take the core (the compactor resets itself to nice 19)
                try:
                    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
                except PermissionError:  # without CAP_SYS_NICE: at the normal priority (the table's load figure says so)
                    pass
        return prepare

    collector = subprocess.Popen([sys.executable, "-m", "alphaqos", "flows", "collect", "--listen", "127.0.0.1:0",
                                  "--out", str(out), "--flush-every", "5s", "--decoder", decoder,
                                  "--time-window", "off",  # the records are of synth's day
                                  "--spool-limit", "4GiB" if spool else "0"],
                                 stdout=subprocess.PIPE, text=True, env=env, preexec_fn=on({pin}))  # fmt: skip
    try:
        port = collector.stdout.readline().split()[2].rsplit(":", 1)[1]
        started = _cpu_seconds(collector.pid)  # its start (imports): not the collecting
        queue = _QueueWatch(int(port))
        try:
            sender = subprocess.run([sys.executable, "-c", SENDER, port, str(rate), str(seconds), str(path)],
                                    capture_output=True, text=True, check=True, preexec_fn=on(cpus - {pin}))  # fmt: skip
        finally:
            queue.stop()
        sent, elapsed = int(sender.stdout.split()[0]), float(sender.stdout.split()[1])
        time.sleep(0.5)
        collector.send_signal(signal.SIGTERM)
        cpu: list = [0.0]
        output, rss = _wait_rss(collector, collector.stdout, cpu)
    finally:
        if collector.poll() is None:
            collector.kill()
            collector.wait()
    final = [line for line in output.splitlines() if line.startswith("stopped after")][-1]  # then per exporter
    stored = pl.scan_parquet(str(out / "**" / "*.parquet")).select(pl.len()).collect().item() if any(out.rglob("*.parquet")) else 0
    drops = re.search(r"kernel drops: ([\d,?]+)", final).group(1)
    compacted = re.search(r"compacted [\d,]+ records .*\(([\d.]+) us per record\), peak RSS ([\d,]+) MiB", output)
    compaction = (float(compacted.group(1)), int(compacted.group(2).replace(",", ""))) if compacted else (None, None)
    split = re.search(r"CPU: receive and decode ([\d.]+) s, detach ([\d.]+) s, build and \w+ write ([\d.]+) s", final)
    split = tuple(float(v) for v in split.groups())
    decoding = re.search(r"decoding ([\d,]+) records/s", final).group(1)
    expected = sum(counts) * (sent // len(counts)) + sum(counts[: sent % len(counts)])
    return expected, stored, drops, decoding, sent / elapsed, rss, cpu[0] - started, queue.peak, compaction, split


class _QueueWatch:
    """The peak of a UDP socket's receive queue (bytes the kernel holds for
    it, ``rx_queue`` of ``/proc/net/udp``; each datagram counted with its
    buffer overhead), polled every 10 ms until :meth:`stop`."""

    def __init__(self, port: int):
        import threading

        self.port, self.peak, self._done = f"{port:04X}", 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._done.is_set():
            for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[1].endswith(":" + self.port):
                    self.peak = max(self.peak, int(fields[4].split(":")[1], 16))
            time.sleep(0.01)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: IPFIX messages of 30 records (the 54-byte IPv4 records of encode_ipfix's template 256).
MTU_30 = 16 + 4 + 30 * 54


def over_loopback(seconds: float, decoders: list[str], pin: int | None, writers: list[str] = ("spool",),
                  rates: tuple[int, ...] = (20_000, 34_000, 37_000, 40_000, 0), realtime: bool = False) -> list[tuple]:  # fmt: skip
    """Each decoder and writer (``spool``: the collector spools Arrow IPC
    and its compactor process writes the Parquet on the other CPUs;
    ``direct``: the collector writes the Parquet itself), fed with
    30-record IPFIX of realistic records at each of ``rates`` datagrams/s
    (0: unpaced); per run: records/s offered and stored, the share lost,
    kernel drops, the collector's CPU per record stored (its receive path:
    receive, decode, checks, spool or Parquet), the compactor's CPU per
    record, peak RSS of both and the socket's peak queue. Returns the
    runs' table rows."""
    datagrams = netflow.encode_ipfix(realistic(30_000), mtu=MTU_30)  # the templates first, then full data sets
    decoder = netflow.Decoder()
    counts = [decoder.feed(d, "x") for d in datagrams]
    assert counts[0] == 0 and max(counts) == 30, counts[:3]
    capped = 2 * int(Path("/proc/sys/net/core/rmem_max").read_text())  # the buffer SO_RCVBUF alone gets (Linux doubles it)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "datagrams.bin"
        path.write_bytes(b"".join(struct.pack(">H", len(d)) + d for d in datagrams))
        for kind, writer in itertools.product(decoders, writers):
            lossless = 0
            for rate in rates:  # x 30 records: 0.6, 1.02, 1.11, 1.2 M records/s
                out = Path(tmp) / f"out-{kind}-{writer}-{rate}"
                expected, stored, drops, decoding, achieved, rss, cpu, queue, (compaction, compactor_rss), split = collector_run(
                    path, counts, rate, seconds, out, kind, pin, spool=writer == "spool", realtime=realtime)  # fmt: skip
                lost = 100 * (1 - stored / expected) if expected else 0.0
                kept_up = stored == expected and queue <= capped
                if kept_up:
                    lossless = max(lossless, achieved * 30)
                pace = f"paced {rate:,} datagrams/s" if rate else "unpaced"
                per = 1e6 * cpu / max(stored, 1)
                steps = "/".join(f"{1e6 * v / max(stored, 1):.2f}" for v in split)  # per thread; polars pool threads only in the total
                compacting = "" if compaction is None else f"; the compactor {compaction:.2f} us per record, peak RSS {compactor_rss:,} MiB"
                print(f"collector ({kind} decoder, {writer}{'' if pin is None else f', on CPU {pin}'}{', SCHED_FIFO 50' if realtime else ''}), "
                      f"{pace} (achieved {achieved:,.0f} datagrams/s = {achieved * 30:,.0f} records/s offered) for {seconds:g} s: "
                      f"{expected:,} records sent, {stored:,} stored, {lost:.1f}% lost, kernel drops {drops}, decoding {decoding} "
                      f"records/s of busy time, peak RSS {rss / 2**20:,.0f} MiB, peak socket queue {queue / 2**20:.1f} MiB; "
                      f"the collector's CPU {cpu:.1f} s after its start ({per:.2f} us per record stored; receive and decode / "
                      f"detach / build and write {steps} us){compacting}", flush=True)  # fmt: skip
                rows.append((f"collector {kind}, {writer}, {pace}", f"{achieved * 30 / 1e6:.2f} M", f"{stored / max(expected, 1) * achieved * 30 / 1e6:.2f} M",
                             f"{lost:.1f} %", drops, f"{queue / 2**20:.1f} MiB", f"{per:.2f} us", f"{steps} us",
                             "-" if compaction is None else f"{compaction:.2f} us", f"{rss / 2**20:,.0f} MiB",
                             "-" if compactor_rss is None else f"{compactor_rss:,} MiB", "yes" if kept_up else "no"))  # fmt: skip
                shutil.rmtree(out, ignore_errors=True)
            print(f"collector ({kind} decoder, {writer}): highest rate offered with every record stored and the queue within "
                  f"{capped / 2**20:.0f} MiB: {lossless:,.0f} records/s", flush=True)
    return rows


def nfdump_ingest(megabytes: int) -> None:
    """Peak RSS of ``alphaqos flows ingest --format nfdump`` on a CSV of
    about ``megabytes`` MB (read and written block by block)."""
    from alphaqos.flows import synth

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "flows.csv"
        one = Path(tmp) / "one.csv"
        synth.write_nfdump_csv(synthetic(200_000), one, summary=False)
        header, _, body = one.read_text().partition("\n")
        one.unlink()
        copies = max(1, megabytes * 10**6 // len(body))
        with path.open("w") as handle:
            handle.write(header + "\n")
            for _ in range(copies):
                handle.write(body)
        size = path.stat().st_size
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        start = time.perf_counter()
        ingest = subprocess.Popen([sys.executable, "-m", "alphaqos", "flows", "ingest", str(path), "--format", "nfdump",
                                   "--sampling", "1", "--time-window", "off", "--out", str(Path(tmp) / "store")],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
        output, rss = _wait_rss(ingest, ingest.stdout)
        code = ingest.returncode
        elapsed = time.perf_counter() - start
        first = output.splitlines()[0] if output else "(no output)"
        print(f"nfdump ingest of {size / 1e6:,.0f} MB ({first}; exit {code}): {elapsed:.1f} s, peak RSS {rss / 2**20:,.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # the defaults keep `make bench` under a minute; the figures in docs/flows.md name their options
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--skip-collector", action="store_true")
    parser.add_argument("--decoders", default="native", help="collector decoders to run (comma-separated: native,python)")
    parser.add_argument("--pin", type=int, default=0, help="CPU the collector runs on alone (-1: any)")
    parser.add_argument("--nfdump-mb", type=int, default=50, help="size of the nfdump CSV ingested (0: skip)")
    parser.add_argument("--writes", action="store_true", help="also measure other Parquet settings and Arrow IPC staging")
    parser.add_argument("--writers", default="spool", help="collector writers to run (comma-separated: spool,direct)")
    parser.add_argument("--rates", default="20000,34000,37000,40000,0", help="datagrams/s offered (30 records each; 0: unpaced)")
    parser.add_argument("--realtime", action="store_true", help="collector and sender at SCHED_FIFO 50 where permitted (CAP_SYS_NICE), as `make bench` runs it")
    args = parser.parse_args()
    steps = in_process(args.records)
    if args.writes:
        write_options(args.records)
    if args.nfdump_mb:
        nfdump_ingest(args.nfdump_mb)
    runs = [] if args.skip_collector else over_loopback(args.seconds, args.decoders.split(","), None if args.pin < 0 else args.pin,
                                                        args.writers.split(","), tuple(int(r) for r in args.rates.split(",")),
                                                        args.realtime)  # fmt: skip
    load = os.getloadavg()
    print(f"\nflow collector figures (load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs; "
          f"CPU time per record, all threads)")  # fmt: skip
    _table(("in-process, per record", "decode", "detach", "build", "Parquet", "spool", "compaction", "receive path (spool)",
            "records/s of one core (spool)", "(Parquet)"), steps)  # fmt: skip
    if runs:
        _table(("collector on one core", "offered records/s", "stored records/s", "lost", "kernel drops", "peak socket queue",
                "CPU per stored record", "of which receive+decode/detach/writer thread", "compaction (other core)", "peak RSS",
                "compactor RSS", "lossless"), runs)  # fmt: skip


def _table(header: tuple, rows: list[tuple]) -> None:
    """``rows`` under ``header`` as a plain text table (left column left-aligned)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(row, widths))))


if __name__ == "__main__":
    main()
