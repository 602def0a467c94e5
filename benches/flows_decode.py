"""Benchmark of flow export decoding and of ``alphaqos flows collect``.

    PYTHONPATH=python python benches/flows_decode.py [--records 300000] [--seconds 5] [--writes]

1. In-process: IPFIX (12-field IPv4 template: addresses, ports, protocol,
   8-byte counters, interfaces, flowStart/EndMilliseconds, samplerId) and
   NetFlow v9 datagrams of ``--records`` distinct records are decoded by
   the Python :class:`alphaqos.flows.netflow.Decoder` and by the native
   :class:`alphaqos.flows.native.NativeDecoder` (feed every datagram, then
   ``take()``: the time to a polars DataFrame); records/s printed, after
   the result is checked against the table encoded.
2. ``alphaqos flows ingest --format nfdump`` of a CSV of ``--nfdump-mb``
   MB (the 200,000 records above, repeated) in a subprocess: time and peak
   RSS (its ``VmHWM``, polled).
3. Over loopback (127.0.0.1 only): a collector subprocess (``--decoders``:
   native, then python; alone on CPU ``--pin``, the sender on the others)
   receives 30-record IPFIX messages from a separate sender process paced
   at 20,000, 34,000 (about 1 M records/s) and 40,000 datagrams/s, then unpaced, for
   ``--seconds`` each; printed per run: the rate achieved, records sent
   and stored (counted in the Parquet store it wrote), the share lost,
   kernel drops, the collector's decoding rate and peak RSS; then the
   highest rate with every record stored. The sender is one Python
   process: unpaced, it is the limit. Runs much shorter than 8 s
   overstate the sustained rate: the socket buffer absorbs a fraction of
   a second.
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


def in_process(records: int) -> None:
    """Wall time, then the CPU time per record of each step (this process's
    CPU time, all its threads: what one core must do) of decoding and of
    writing the collector's Parquet (zstd level 1)."""
    from alphaqos.flows import schema
    from alphaqos.flows.native import NativeDecoder

    table = synthetic(records)
    for (name, encode), kind in itertools.product((("IPFIX", netflow.encode_ipfix), ("NetFlow v9", netflow.encode_v9)),
                                                  (netflow.Decoder, NativeDecoder)):  # fmt: skip
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
        with tempfile.TemporaryDirectory() as tmp:  # as the collector writes
            if groups is None:
                schema.write_partitioned(frame, tmp, tag="flows", level=1)
            else:
                schema.write_grouped(frame, groups, tmp, tag="flows", level=1)
        cpu_written = time.process_time()
        assert frame.height == records and frame["bytes"].sum() == table["bytes"].sum(), "decoding is wrong"
        assert frame.sort("src_port", "src_addr")["src_addr"].equals(table.sort("src_port", "src_addr")["src_addr"])
        per = 1e6 / frame.height
        print(f"{name}, {kind.__name__}: {frame.height:,} records in {len(datagrams):,} datagrams: "
              f"{frame.height / (done - start):,.0f} records/s (feed {fed - start:.2f} s, take {done - fed:.2f} s); "
              f"CPU per record: feed {(cpu_fed - cpu_start) * per:.2f} us, take {(cpu_done - cpu_fed) * per:.2f} us "
              f"(detach {(cpu_detached - cpu_fed) * per:.2f} us, build {(cpu_done - cpu_detached) * per:.2f} us), "
              f"Parquet {(cpu_written - cpu_done) * per:.2f} us: {frame.height / (cpu_written - cpu_start):,.0f} records/s "
              "of one core", flush=True)  # fmt: skip


def write_options(records: int) -> None:
    """CPU per record (this process, all threads) and bytes per record of
    writing the collector's table in other ways than the collector's
    (zstd level 1, statistics on every column, polars' row groups): other
    codecs, no statistics, one row group, and Arrow IPC as a staging format
    (cheap on the receive path, but its compaction to Parquet costs the
    Parquet write again on the same core). Best of two each."""
    from alphaqos.flows.native import NativeDecoder

    decoder = NativeDecoder()
    for datagram in netflow.encode_ipfix(synthetic(records), mtu=MTU_30):
        decoder.feed(datagram, "192.0.2.1")
    frame = decoder.take()
    variants = {
        "Parquet zstd-1, statistics (the collector's)": lambda p: frame.write_parquet(p, compression="zstd", compression_level=1, statistics=True),
        "Parquet zstd-1, no statistics": lambda p: frame.write_parquet(p, compression="zstd", compression_level=1, statistics=False),
        "Parquet zstd-1, one row group": lambda p: frame.write_parquet(p, compression="zstd", compression_level=1, row_group_size=records),
        "Parquet lz4, statistics": lambda p: frame.write_parquet(p, compression="lz4", statistics=True),
        "Parquet uncompressed, statistics": lambda p: frame.write_parquet(p, compression="uncompressed", statistics=True),
        "Arrow IPC uncompressed (staging)": lambda p: frame.write_ipc(p, compression="uncompressed"),
        "Arrow IPC lz4 (staging)": lambda p: frame.write_ipc(p, compression="lz4"),
    }
    try:  # pyarrow's writer (not a dependency: measured where it is installed), fed polars' buffers as string views
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    if pq is not None:
        import polars as pl

        pruned, low = ["first", "last", "src_addr", "dst_addr"], ["exporter", "protocol", "sampling_rate", "input_if", "output_if", "dst_port"]

        def arrow(p, **options):
            pq.write_table(frame.to_arrow(compat_level=pl.CompatLevel.newest()), p, compression="zstd", compression_level=1, **options)

        variants["pyarrow zstd-1, statistics and dictionary everywhere"] = lambda p: arrow(p)
        variants["pyarrow zstd-1, statistics on time and addresses, dictionary on low-cardinality columns"] = (
            lambda p: arrow(p, write_statistics=pruned, use_dictionary=low))
        variants["pyarrow zstd-1, the same in row groups of 2^20"] = lambda p: arrow(p, write_statistics=pruned, use_dictionary=low, row_group_size=1 << 20)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x"
        for name, write in variants.items():
            best = float("inf")
            for _ in range(2):
                start = time.process_time()
                write(path)
                best = min(best, time.process_time() - start)
            print(f"write, {name}: {best * 1e6 / frame.height:.2f} us CPU and {path.stat().st_size / frame.height:.1f} bytes per record", flush=True)


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
                  pin: int | None = None):  # fmt: skip
    """One collector (on CPU ``pin`` alone, if given; the sender then on
    the others) fed by a sender process at ``rate`` datagrams/s (0:
    unpaced) for ``seconds``; returns (records sent, records stored in the
    Parquet store, kernel drops, decoding rate, datagrams/s achieved, peak
    RSS)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    cpus = os.sched_getaffinity(0)

    def on(chosen):
        return None if pin is None or not chosen else (lambda: os.sched_setaffinity(0, chosen))

    collector = subprocess.Popen([sys.executable, "-m", "alphaqos", "flows", "collect", "--listen", "127.0.0.1:0",
                                  "--out", str(out), "--flush-every", "5s", "--decoder", decoder,
                                  "--time-window", "off"],  # the records are dated 2026-01-05
                                 stdout=subprocess.PIPE, text=True, env=env, preexec_fn=on({pin}))  # fmt: skip
    try:
        port = collector.stdout.readline().split()[2].rsplit(":", 1)[1]
        started = _cpu_seconds(collector.pid)  # its start (imports): not the collecting
        sender = subprocess.run([sys.executable, "-c", SENDER, port, str(rate), str(seconds), str(path)],
                                capture_output=True, text=True, check=True, preexec_fn=on(cpus - {pin}))  # fmt: skip
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
    decoding = re.search(r"decoding ([\d,]+) records/s", final).group(1)
    expected = sum(counts) * (sent // len(counts)) + sum(counts[: sent % len(counts)])
    return expected, stored, drops, decoding, sent / elapsed, rss, cpu[0] - started


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: IPFIX messages of 30 records (the 54-byte IPv4 records of encode_ipfix's template 256).
MTU_30 = 16 + 4 + 30 * 54


def over_loopback(seconds: float, decoders: list[str], pin: int | None) -> None:
    """Each decoder, fed at 20k, 34k and 40k datagrams/s of 30-record IPFIX
    and by an unpaced sender; per run: records/s offered and stored, the
    share lost, kernel drops and the collector's peak RSS."""
    datagrams = netflow.encode_ipfix(synthetic(30_000), mtu=MTU_30)  # the templates first, then full data sets
    decoder = netflow.Decoder()
    counts = [decoder.feed(d, "x") for d in datagrams]
    assert counts[0] == 0 and max(counts) == 30, counts[:3]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "datagrams.bin"
        path.write_bytes(b"".join(struct.pack(">H", len(d)) + d for d in datagrams))
        for kind in decoders:
            lossless = 0
            for rate in (20_000, 34_000, 40_000, 0):  # 34,000 x 30 records: about 1 M records/s
                out = Path(tmp) / f"out-{kind}-{rate}"
                expected, stored, drops, decoding, achieved, rss, cpu = collector_run(path, counts, rate, seconds, out, kind, pin)
                lost = 100 * (1 - stored / expected) if expected else 0.0
                if stored == expected:
                    lossless = max(lossless, expected / seconds)
                pace = f"paced {rate:,} datagrams/s" if rate else "unpaced"
                print(f"collector ({kind} decoder{'' if pin is None else f', on CPU {pin}'}), {pace} (achieved {achieved:,.0f} "
                      f"datagrams/s = {achieved * 30:,.0f} records/s offered) for {seconds:g} s: {expected:,} records sent, "
                      f"{stored:,} stored ({stored / seconds:,.0f} records/s), {lost:.1f}% lost, kernel drops {drops}, "
                      f"decoding {decoding} records/s of busy time, peak RSS {rss / 2**20:,.0f} MiB; the collector's CPU "
                      f"{cpu:.1f} s after its start ({1e6 * cpu / max(stored, 1):.2f} us per record stored, receive to Parquet)", flush=True)  # fmt: skip
                shutil.rmtree(out, ignore_errors=True)
            print(f"collector ({kind} decoder): highest rate with every record stored {lossless:,.0f} records/s", flush=True)


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
    args = parser.parse_args()
    in_process(args.records)
    if args.writes:
        write_options(args.records)
    if args.nfdump_mb:
        nfdump_ingest(args.nfdump_mb)
    if not args.skip_collector:
        over_loopback(args.seconds, args.decoders.split(","), None if args.pin < 0 else args.pin)


if __name__ == "__main__":
    main()
