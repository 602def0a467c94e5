"""What ``alphaqos transfer serve`` and ``alphaqos transfer send`` do
(issue 23; ``docs/transfer.md``): :func:`serve` runs the receiver,
:func:`send` checks a send's options, reserves, drives the ``alphaqos-xfer``
sender through the deadline loop and reports. Their options are
:class:`ServeOptions` and :class:`SendOptions` (the command line's parser
is :mod:`alphaqos.cli.transfer`); bad input is a :class:`TransferError`
with exit status 2, a failure one with status 1."""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import units
from .circuit import Circuit, CircuitError, iso
from .loop import DeadlineLoop

__all__ = ["SendOptions", "ServeOptions", "TransferError", "send", "serve", "xfer_binary"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class TransferError(Exception):
    def __init__(self, message: str, status: int = EXIT_USAGE):
        super().__init__(message)
        self.status = status


def xfer_binary() -> Path:
    """``$ALPHAQOS_XFER``, the workspace's release build, or one on PATH."""
    from alphaqos.emulate import workspace_binary

    found = workspace_binary("alphaqos-xfer", "ALPHAQOS_XFER")
    if found is not None:
        return found
    raise TransferError("the data mover alphaqos-xfer is not built: run `make build` (cargo build --release -p alphaqos-xfer)",
                        EXIT_FAILURE)  # fmt: skip


@dataclass(frozen=True)
class ServeOptions:
    """``alphaqos transfer serve``'s options."""

    listen: str  # HOST:PORT
    dir: Path  # where files land
    json: bool  # the receiver's events as JSON lines
    once: int  # exit after this many complete transfers (0: never)
    threads: int | None = None  # receiving threads per transfer (None: one per core it may run on but one)


@dataclass(frozen=True)
class SendOptions:
    """``alphaqos transfer send``'s options (the command line's, by the same
    names; its parser, :mod:`alphaqos.cli.transfer`, holds their defaults)."""

    file: Path
    dest: str  # HOST:PORT
    deadline: str | None  # a duration from now; this or ``by``
    by: str | None  # an RFC 3339 time (no zone: UTC)
    circuit: str | None  # the circuits service (or a reservation's URL); this or ``rate``
    token: str | None
    src: str | None
    dst: str | None
    rate: str | None  # without a service: the rate the path allows
    streams: int  # connections: one base, the others additional
    block: str  # block size, e.g. 64MiB
    margin: float  # reserve the needed rate times this
    hysteresis: float  # modify the reservation when the need differs by more than this fraction
    interval: str  # the deadline loop's period, e.g. 1s
    guard: str | None  # default: two intervals
    cc: str | None  # default: alphaqos_base when available, else pacing alone
    dscp: str  # the base connection's
    excess_dscp: str  # the additional connections'
    force: bool  # overwrite the file at the receiver
    json: bool  # JSON lines instead of a progress bar and a summary


# --- serve ------------------------------------------------------------------------
def serve(args: ServeOptions) -> int:
    d = args.dir
    if not d.is_dir():
        raise TransferError(f"--dir {d}: not a directory")
    if not os.access(d, os.W_OK | os.X_OK):
        raise TransferError(f"--dir {d}: not writable")
    if args.threads is not None and args.threads < 1:
        raise TransferError(f"--threads {args.threads}: at least 1")
    cmd = [str(xfer_binary()), "serve", "--listen", args.listen, "--dir", str(d), "--once", str(args.once)]
    if args.threads is not None:
        cmd += ["--threads", str(args.threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            if args.json:
                print(line, end="", flush=True)
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            print(_serve_line(e), flush=True)
        proc.wait()
    except KeyboardInterrupt:
        return 130
    finally:  # also on SIGTERM (raised as an exception by alphaqos.cli)
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
    if proc.returncode != 0:
        err = (proc.stderr.read() if proc.stderr else "").strip().splitlines()  # type: ignore[union-attr]
        raise TransferError(err[-1].removeprefix("alphaqos-xfer: error: ") if err else f"alphaqos-xfer exited {proc.returncode}",
                            EXIT_USAGE if proc.returncode == 2 else EXIT_FAILURE)  # fmt: skip
    return EXIT_OK


def _serve_line(e: dict) -> str:
    kind = e.get("event")
    if kind == "listening":
        return f"listening on {e['addr']}, files into {e['dir']} (protocol {e['version']})"
    if kind == "session":
        how = f"resuming, {e['held']} of {e['blocks']} blocks held" if e.get("resume") else f"{e['blocks']} blocks"
        return f"{e['name']}: {units.fmt_size(e['size'])}, {how}"
    if kind == "complete":
        return f"{e['name']}: complete, {e['path']} (BLAKE3 {e['hash'][:16]}...; {e['blocks_bad']} bad blocks re-sent)"
    return " ".join(f"{k}={v}" for k, v in e.items())


# --- send -------------------------------------------------------------------------
def _deadline(args: SendOptions, now: float) -> float:
    """The deadline as a Unix time."""
    if args.deadline is not None:
        try:
            ns = units.parse_time(args.deadline)
        except ValueError as exc:
            raise TransferError(f"--deadline {args.deadline}: {exc}") from None
        if ns <= 0:
            raise TransferError(f"--deadline {args.deadline}: must be ahead of now")
        return now + ns / 1e9
    try:
        t = datetime.fromisoformat(args.by.replace("Z", "+00:00"))
    except ValueError:
        raise TransferError(f"--by {args.by}: expected an RFC 3339 time like 2026-12-01T12:00:00Z") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    if t.timestamp() <= now:
        raise TransferError(f"--by {args.by}: the deadline is in the past")
    return t.timestamp()


def _host_port(text: str) -> tuple[str, int]:
    m = re.match(r"^\[?([^\]]+?)\]?:(\d+)$", text)
    if not m or not 0 < int(m.group(2)) < 65536:
        raise TransferError(f"{text}: expected HOST:PORT")
    return m.group(1), int(m.group(2))


def _choose_cc(args: SendOptions) -> tuple[str, str | None]:
    """The base connection's controller and a note to print once."""
    wanted = args.cc
    if wanted in (None, "alphaqos_base"):
        try:
            from .bpf import ensure_loaded
        except ImportError:
            available, note = False, "the alphaqos_base BPF controller is not part of this installation"
        else:
            available, note = ensure_loaded()
        if available:
            return "alphaqos_base", None
        if wanted == "alphaqos_base":
            raise TransferError(f"--cc alphaqos_base: not available: {note}")
        return "pacing-only", f"the base connection is paced alone (alphaqos_base unavailable: {note})"
    return wanted, None


def send(args: SendOptions) -> int:
    # The mover first: finding it imports alphaqos.emulate (2.4 s of imports
    # here under load), which is start-up, not time towards the deadline.
    binary = xfer_binary()
    now = time.time()
    # Everything checkable is checked before anything is reserved or sent.
    try:
        with open(args.file, "rb") as f:
            f.read(1)
        size = os.stat(args.file).st_size
    except OSError as exc:
        raise TransferError(f"cannot read {args.file}: {exc.strerror}") from None
    if not args.file.is_file():
        raise TransferError(f"{args.file}: not a regular file")
    host, port = _host_port(args.dest)
    try:
        block = units.parse_size(args.block)
        interval = units.parse_time(args.interval) / 1e9
        guard = 2 * interval if args.guard is None else units.parse_time(args.guard) / 1e9
    except ValueError as exc:
        raise TransferError(f"--block/--interval/--guard: {exc}") from None
    if not 1 <= args.streams <= 64:
        raise TransferError(f"--streams {args.streams}: must be from 1 to 64")
    if not 1 <= args.margin <= 10:
        raise TransferError(f"--margin {args.margin}: must be from 1 to 10")
    deadline = _deadline(args, now)
    if (args.circuit is None) == (args.rate is None):
        raise TransferError("give --circuit URL (with --token) or --rate RATE, one of them")
    cap = None
    if args.rate is not None:
        try:
            cap = units.parse_rate(args.rate)
        except ValueError as exc:
            raise TransferError(f"--rate {args.rate}: {exc}") from None
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise TransferError(f"cannot connect to {args.dest}: {exc.strerror or exc}") from None
    cc, note = _choose_cc(args)

    circuit = None
    if args.circuit is not None:
        token = args.token or os.environ.get("ALPHAQOS_CIRCUITS_TOKEN")
        circuit = Circuit(args.circuit, token)
        if circuit.id is None and not (args.src and args.dst):
            raise TransferError("--circuit with the service's URL needs --src and --dst (the circuit's end nodes)")
    else:
        _plan_rate(args, size, deadline, cap, time.time())  # an infeasible deadline is refused before anything starts

    def reserve(t0: float) -> DeadlineLoop:
        """The reservation from ``t0`` on: once the mover has hashed the file
        (no circuit held while a large file is read), before anything is sent."""
        loop = DeadlineLoop(size=size, deadline_s=deadline - t0, margin=args.margin, hysteresis=args.hysteresis, cap_bps=cap,
                            guard_s=guard)  # fmt: skip
        if circuit is not None:
            loop.start(circuit.reserve(args.src, args.dst, size, t0, deadline, args.margin))
        else:
            loop.start(_plan_rate(args, size, deadline, cap, t0))
        return loop

    if note and not args.json:
        print(f"alphaqos: note: {note}", file=sys.stderr)
    try:
        return _run(args, binary, host, port, size, block, interval, cc, note, reserve, circuit, deadline)
    finally:
        if circuit is not None:
            try:
                circuit.terminate()
            except CircuitError as exc:
                print(f"alphaqos: warning: could not terminate the circuit {circuit.id}: {exc}", file=sys.stderr)


def _plan_rate(args: SendOptions, size: int, deadline: float, cap: int, t0: float) -> int:
    """The rate that meets the deadline from ``t0`` at ``--rate``'s cap; refused when infeasible."""
    need = math.ceil(size * 8 / (deadline - t0) * args.margin) if deadline > t0 else math.inf
    if need > cap:
        finish = t0 + size * 8 * args.margin / cap
        raise TransferError(f"deadline {iso(deadline)} infeasible at --rate {args.rate}: needs "
                            f"{units.fmt_rate(need) if math.isfinite(need) else 'more than any rate'}; the earliest finish is {iso(finish)}")  # fmt: skip
    return max(need, 1)


def _run(args: SendOptions, binary: Path, host, port, size, block, interval, cc, note, reserve, circuit, deadline) -> int:
    """The mover hashes the file and waits (``--hold``); then ``reserve(t0)``
    gives the deadline loop, its rate goes to the mover, and data flows."""
    cmd = [str(binary), "send", str(args.file), f"{host}:{port}", "--streams", str(args.streams), "--hold",
           "--block", str(block), "--cc", cc, "--dscp-base", args.dscp,
           "--dscp-excess", args.excess_dscp, "--interval-ms", str(max(10, round(interval * 1000)))]  # fmt: skip
    if args.force:
        cmd.append("--force")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    bar = None if args.json else _Bar(size, deadline)
    final: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    loop: DeadlineLoop | None = None
    t0 = time.time()
    loop_cost = [0.0, 0, 0.0, 0.0]  # the front's seconds, intervals, the mover's report microseconds, the front's CPU seconds
    base_samples: list[tuple[float, float, float]] = []
    ended = False
    try:
        while True:
            line = lines.get()
            if line is None:
                break
            c0, cpu0 = time.perf_counter(), time.thread_time()  # the loop's cost: the report's parse, the decision, the row
            try:
                e = json.loads(line)
            except ValueError:
                continue
            kind = e.get("event")
            if kind == "progress" and _newer_progress(lines):
                continue  # late: act on the newest report only
            if kind == "hashed":
                t0 = time.time()
                loop = reserve(t0)  # raises when refused: the mover is stopped below, nothing sent
                proc.stdin.write(json.dumps({"go_rate_bps": loop.reserved_bps}) + "\n")  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
            elif kind == "progress" and loop is not None:
                t = time.time() - t0
                proposal = loop.proposal(t, e["bytes_delivered"])
                changed = None
                if proposal is not None:
                    try:
                        bps = _modify(circuit, proposal, loop.reserved_bps) if circuit is not None else proposal
                    except CircuitError as exc:
                        print(f"alphaqos: note: the circuit kept {loop.reserved_bps} bit/s: {exc}", file=sys.stderr)
                    else:
                        loop.applied(t, bps)
                        with contextlib.suppress(OSError):  # the mover has just finished
                            proc.stdin.write(json.dumps({"rate_bps": bps}) + "\n")  # type: ignore[union-attr]
                            proc.stdin.flush()  # type: ignore[union-attr]
                        changed = bps
                base = e["conns"][0]
                extra = sum(c["bps"] for c in e["conns"][1:])
                base_samples.append((t, base["bps"], e["rate_bps"]))
                row = {"t": round(t, 3), "bytes_done": e["bytes_done"], "bytes_delivered": e["bytes_delivered"], "bytes_total": size,
                       "needed_bps": _need(size - e["bytes_delivered"], deadline - time.time(), loop.margin),
                       "reserved_bps": loop.reserved_bps, "base_bps": round(base["bps"]), "additional_bps": round(extra),
                       "rtt_us": [c["rtt_us"] for c in e["conns"]], "retrans": [c["total_retrans"] for c in e["conns"]],
                       "time_left_s": round(deadline - time.time(), 3), "changed_bps": changed}  # fmt: skip
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    bar.update(row)
                loop_cost[0] += time.perf_counter() - c0
                loop_cost[1] += 1
                loop_cost[2] += e.get("report_us", 0.0)
                loop_cost[3] += time.thread_time() - cpu0
            elif kind == "done":
                final = e
            elif kind == "error":
                error = e
        ended = True
    except KeyboardInterrupt:
        if bar:
            bar.close()
        print("alphaqos: interrupted (send again with the same arguments to resume)", file=sys.stderr)
        return 130
    finally:  # also on SIGTERM (raised as an exception by alphaqos.cli)
        if not ended and proc.poll() is None:
            proc.terminate()
            proc.wait()
    proc.wait()
    if bar:
        bar.close()
    if error is not None or final is None:
        message = error["message"] if error else ((proc.stderr.read() or "").strip() or f"alphaqos-xfer exited {proc.returncode}")  # type: ignore[union-attr]
        bad = bool(error and error.get("bad_input"))
        raise TransferError(message.removeprefix("alphaqos-xfer: error: "), EXIT_USAGE if bad else EXIT_FAILURE)
    assert loop is not None, "the mover reports done only after its go"
    end = time.time()
    elapsed = end - t0
    report = _report(final, loop, elapsed, deadline - t0, base_samples, loop_cost, cc, note)
    if args.json:
        print(json.dumps(report), flush=True)
    else:
        for text in _report_lines(report):
            print(text)
    return EXIT_OK


def _newer_progress(lines: queue.Queue) -> bool:
    """Whether a later progress report already waits (the front fell behind)."""
    with lines.mutex:
        return any(item is not None and '"progress"' in item for item in lines.queue)


def _modify(circuit: Circuit, bps: int, current: int) -> int:
    """Modify the circuit to ``bps``; refused for capacity, take the largest
    rate the path has if that is still an increase."""
    try:
        return circuit.modify(bps)
    except CircuitError as exc:
        most = exc.doc.get("max_bookable_bps")
        if exc.doc.get("status") == 409 and isinstance(most, int) and current < most < bps:
            return circuit.modify(most)
        raise


def _need(bytes_left: int, time_left: float, margin: float) -> int | None:
    if bytes_left <= 0:
        return 0
    return math.ceil(bytes_left * 8 / time_left * margin) if time_left > 0 else None


def _report(final: dict, loop: DeadlineLoop, elapsed: float, deadline_s: float, samples, loop_cost, cc, note) -> dict:
    base = final["conns"][0]
    steady = [s for s in samples if 0.2 * elapsed <= s[0] <= 0.9 * elapsed]
    # Elapsed time and the reservation's steps to the microsecond: a short
    # transfer on a fast path lasts tens of ms, where a millisecond moves the
    # integral its figures give by over 1 %.
    return {
        "event": "report", "met": elapsed <= deadline_s, "slack_s": round(deadline_s - elapsed, 3),
        "elapsed_s": round(elapsed, 6), "deadline_s": round(deadline_s, 3), "size": final["size"], "hash": final["hash"],
        "blocks": final["blocks"], "blocks_held": final["held"], "blocks_sent": final["blocks_sent"],
        "blocks_resent": final["blocks_resent"],
        "reserved_bits": round(loop.integral_bits(elapsed)), "constant_bits": final["size"] * 8,
        "reserved_ratio": loop.integral_bits(elapsed) / max(1, final["size"] * 8),
        "mean_reserved_bps": round(loop.mean_bps(elapsed)), "constant_bps": round(loop.constant_bps),
        "reservation_steps": [[round(t, 6), r] for t, r in loop.steps],
        "base": {"bytes": base["bytes"], "segs_out": base["data_segs_out"], "retrans": base["total_retrans"],
                 "retrans_ratio": base["total_retrans"] / max(1, base["data_segs_out"]),
                 "steady_bps": sum(s[1] for s in steady) / len(steady) if steady else None,
                 "steady_paced_bps": sum(s[2] for s in steady) / len(steady) if steady else None},
        "additional_bytes": sum(c["bytes"] for c in final["conns"][1:]),
        "cc": final.get("cc"), "loop_cost_us": round(loop_cost[0] / max(1, loop_cost[1]) * 1e6, 1),
        "loop_cpu_us": round(loop_cost[3] / max(1, loop_cost[1]) * 1e6, 1),
        "report_cost_us": round(loop_cost[2] / max(1, loop_cost[1]), 1),
    }  # fmt: skip


def _report_lines(r: dict) -> list[str]:
    verdict = "met" if r["met"] else "MISSED"
    by = abs(r["slack_s"])
    return [
        f"deadline {verdict}: {r['elapsed_s']:.1f} s of {r['deadline_s']:.1f} s ({by:.1f} s {'early' if r['met'] else 'late'})",
        f"{units.fmt_size(r['size'])} in {r['blocks']} blocks: {r['blocks_sent']} sent, {r['blocks_held']} already at the receiver, "
        f"{r['blocks_resent']} re-sent; BLAKE3 {r['hash'][:16]}... verified",
        f"reserved {r['reserved_bits'] / 8e9:.3f} GB-equivalent ({r['reserved_ratio']:.1%} of size/deadline held to the deadline); "
        f"mean reservation {units.fmt_rate(r['mean_reserved_bps'])} vs size/deadline {units.fmt_rate(r['constant_bps'])}",
        f"base connection ({r['cc']}): {units.fmt_size(r['base']['bytes'])}, {r['base']['retrans']} retransmissions "
        f"of {r['base']['segs_out']} segments; additional: {units.fmt_size(r['additional_bytes'])}",
    ]  # fmt: skip


class _Bar:
    """A rich progress bar on stderr: bytes, rate, time to the deadline, slack."""

    def __init__(self, size: int, deadline: float):
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

        self.deadline = deadline
        self.progress = Progress(TextColumn("[bold]send"), BarColumn(), DownloadColumn(), TextColumn("{task.fields[info]}"),
                                 console=_stderr_console(), transient=False)  # fmt: skip
        self.task = self.progress.add_task("send", total=size, info="")
        self.progress.start()
        self.last: tuple[float, int] | None = None

    def update(self, row: dict) -> None:
        now = time.time()
        rate = 0.0
        if self.last is not None and now > self.last[0]:
            rate = (row["bytes_done"] - self.last[1]) * 8 / (now - self.last[0])
        self.last = (now, row["bytes_done"])
        left = row["bytes_total"] - row["bytes_done"]
        eta = left * 8 / rate if rate > 0 else math.inf
        slack = row["time_left_s"] - eta
        info = (f"{units.fmt_rate(rate)}  reserved {units.fmt_rate(row['reserved_bps'])}  "
                f"deadline in {row['time_left_s']:.0f} s  slack {'?' if math.isinf(slack) else f'{slack:.0f} s'}")  # fmt: skip
        self.progress.update(self.task, completed=row["bytes_done"], info=info)

    def close(self) -> None:
        self.progress.stop()


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)
