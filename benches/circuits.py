"""Benchmark of the circuits service: reserve latency with many bookings, and
requests per second with concurrent clients.

    .venv/bin/python benches/circuits.py [--bookings 10000,100000] [--requests 300] [--clients 32] [--db sqlite,postgresql] [--workers 1,2]

For each database (SQLite in WAL mode; PostgreSQL in a throw-away cluster,
as the tests start it) and each number N of existing reservations:
N reservations (one hour each, 1 kbit/s, starts spread over 30 days,
alternately over the two routes of the tests' topology) are written into
the database directly, ``alphaqos circuits serve`` is started on
127.0.0.1 (it loads them into its index), then ``--requests`` reserve
requests are sent one after the other over one HTTP connection (latency
p50/p99, client-side, each a full transaction with admission on four
links) and ``--clients`` connections send reserve requests together for a
fixed count (requests/s), with ``--workers`` server processes. The client
is a lean asyncio HTTP/1.1 keep-alive client (:class:`LeanClient`); the
server's and the client's CPU per request are reported apart, since both
run on the same cores. Targets of issue 22: p99 under 20 ms at 10^5
bookings on SQLite; at least 300 reserve requests/s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

NS = 10**9
HOUR = 3600 * NS
PATHS = (["H1-R1", "R1-R2", "R2-R4", "R4-H2"], ["H1-R1", "R1-R3", "R3-R4", "R4-H2"])


def preload(url: str, n: int, t0: int) -> float:
    """Write ``n`` committed reservations and their bookings; seconds taken."""
    from sqlalchemy import insert, update

    from alphaqos.circuits.db import make_engine, migrate
    from alphaqos.circuits.models import BookingRow, LinkRow, Reservation

    started = time.perf_counter()
    engine = make_engine(url)
    migrate(engine)
    rng = random.Random(1)
    import yaml
    from _circuits import TOPOLOGY

    from alphaqos.circuits.topology import Topology

    links = [{"id": link.id, "version": 0} for link in Topology.from_scenario(yaml.safe_load(TOPOLOGY)).links]
    with engine.begin() as c:
        c.execute(insert(LinkRow.__table__), links)
        for first in range(0, n, 5000):
            res, books = [], []
            for i in range(first, min(n, first + 5000)):
                start = t0 + rng.randrange(30 * 24) * HOUR + rng.randrange(3600) * NS
                path = PATHS[i % 2]
                profile = [[start, 1000]]
                res.append({"id": i + 1, "version": 1, "owner": "bench", "state": "reserved", "src": "H1", "dst": "H2",
                            "path": path, "start_ns": start, "end_ns": start + HOUR, "rate_bps": 1000,
                            "profile": profile, "policing": "soft", "created_ns": t0, "updated_ns": t0})  # fmt: skip
                books += [{"reservation_id": i + 1, "link_id": link, "profile": profile, "end_ns": start + HOUR} for link in path]
            c.execute(insert(Reservation.__table__), res)
            c.execute(insert(BookingRow.__table__), books)
        c.execute(update(LinkRow.__table__).values(version=LinkRow.__table__.c.version + 1))
        if engine.dialect.name == "postgresql":
            c.exec_driver_sql("SELECT setval(pg_get_serial_sequence('reservations', 'id'), (SELECT max(id) FROM reservations))")
    engine.dispose()
    return time.perf_counter() - started


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its children (the server's
    worker processes; /proc/PID/stat): what requests cost the server whatever
    else the machine is doing."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else ():
        with contextlib.suppress(OSError):
            total += cpu_s(int(child))
    return total


class LeanClient:
    """A lean HTTP/1.1 keep-alive client on asyncio streams, for the load
    phase: the bench's clients share the machine's cores with the server,
    and httpx costs about a millisecond of CPU per request, as much as the
    server's work. One connection per client, TCP_NODELAY (RFC 896), each
    request written at once, the answer read by its Content-Length."""

    def __init__(self, url: str, token: str) -> None:
        host, _, port = url.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)
        self.head = (f"POST /api/v1/reservations HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                     "Content-Type: application/json\r\nContent-Length: ").encode()  # fmt: skip

    async def connect(self):
        reader, writer = await asyncio.open_connection(self.host, self.port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    async def post(self, conn, body: bytes) -> tuple[int, bytes]:
        reader, writer = conn
        writer.write(self.head + str(len(body)).encode() + b"\r\n\r\n" + body)
        status = int((await reader.readline()).split()[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return status, await reader.readexactly(length)


def iso(ns: int) -> str:
    from alphaqos.circuits.service import iso as _iso

    return _iso(ns)


def measure(db: str, n: int, requests: int, clients: int, tmp: Path, workers: int = 1) -> dict:
    import orjson
    from _circuits import Server

    server = Server(tmp, db)
    server.env["ALPHAQOS_CIRCUITS_WORKERS"] = str(workers)
    t0 = (time.time_ns() // HOUR + 2) * HOUR
    load_s = preload(db, n, t0)
    token = server.token("user", "bench")
    started = time.perf_counter()
    server.start(timeout=600)
    start_s = time.perf_counter() - started
    rng = random.Random(2)

    def body() -> dict:
        start = t0 + rng.randrange(30 * 24) * HOUR
        return {"src": "H1", "dst": "H2", "rate": 1000, "start": iso(start), "end": iso(start + HOUR)}

    lean = LeanClient(server.url, token)

    async def sequential() -> tuple[list[float], float]:
        conn = await lean.connect()
        for _ in range(20 * workers):  # warm-up (each process its first requests)
            assert (await lean.post(conn, orjson.dumps(body())))[0] == 201
        lat = []
        cpu0 = cpu_s(server.proc.pid)
        for _ in range(requests):
            b = orjson.dumps(body())
            s = time.perf_counter()
            status, text = await lean.post(conn, b)
            lat.append(time.perf_counter() - s)
            assert status == 201, text
        cpu_ms = (cpu_s(server.proc.pid) - cpu0) / requests * 1e3
        conn[1].close()
        return lat, cpu_ms

    async def concurrent(per_client: int) -> tuple[float, float, float]:
        conns = [await lean.connect() for _ in range(clients)]
        bodies = [[orjson.dumps(body()) for _ in range(per_client)] for _ in range(clients)]
        errors: list[bytes] = []

        async def one(conn, mine) -> None:
            for b in mine:
                status, text = await lean.post(conn, b)
                if status != 201:
                    errors.append(text)

        cpu0, own0, s = cpu_s(server.proc.pid), time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(c, b) for c, b in zip(conns, bodies)))
        elapsed = time.perf_counter() - s
        server_cpu, own_cpu = cpu_s(server.proc.pid) - cpu0, time.process_time() - own0
        for _, writer in conns:
            writer.close()
        assert not errors, errors[:3]
        n_req = clients * per_client
        return n_req / elapsed, server_cpu / n_req * 1e3, own_cpu / n_req * 1e3

    try:
        lat, cpu_ms = asyncio.run(sequential())
        lat.sort()
        per_client = max(1, requests // clients * 2)
        rps, load_cpu_ms, client_cpu_ms = asyncio.run(concurrent(per_client))
        return {"db": db.split(":")[0], "bookings": n, "load_s": load_s, "start_s": start_s, "workers": workers,
                "p50_ms": statistics.median(lat) * 1e3, "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1e3,
                "rps": rps, "concurrent": clients * per_client, "cpu_ms": cpu_ms, "load_cpu_ms": load_cpu_ms,
                "client_cpu_ms": client_cpu_ms, "load": os.getloadavg()[0]}  # fmt: skip
    finally:
        server.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bookings", default="10000,100000")
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--db", default="sqlite,postgresql")
    p.add_argument("--workers", default="1", help="server processes, one run each: 1,2")
    args = p.parse_args()
    sizes = [int(x) for x in args.bookings.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="aq-bench-circuits-") as tmp:
        cluster = None
        try:
            for kind in args.db.split(","):
                if kind == "postgresql" and cluster is None:
                    from _circuits import PostgresCluster

                    cluster = PostgresCluster()
                for n in sizes:
                    for workers in (int(w) for w in args.workers.split(",")):
                        where = Path(tmp) / f"{kind}-{n}-{workers}"
                        where.mkdir()
                        db = f"sqlite:///{where / 'c.db'}" if kind == "sqlite" else cluster.create_database(f"bench{n}_{workers}")
                        r = measure(db, n, args.requests, args.clients, where, workers)
                        results.append(r)
                        print(f"{r['db']:<10} {n:>7} bookings, {workers} process(es): reserve p50 {r['p50_ms']:.1f} ms, "
                              f"p99 {r['p99_ms']:.1f} ms ({args.requests} sequential, server CPU {r['cpu_ms']:.2f} ms each, "
                              f"load average {r['load']:.1f}); {r['rps']:.0f} reserve/s with {args.clients} clients "
                              f"({r['concurrent']} requests; server CPU {r['load_cpu_ms']:.2f} ms, client CPU "
                              f"{r['client_cpu_ms']:.2f} ms per request); preload {r['load_s']:.1f} s, "
                              f"server start {r['start_s']:.1f} s", flush=True)  # fmt: skip
        finally:
            if cluster is not None:
                cluster.stop()
    print(f"measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; targets: p99 < 20 ms at 10^5 on SQLite, >= 300 reserve/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
