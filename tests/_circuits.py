"""Helpers for the circuits service's tests: a throw-away PostgreSQL cluster
(Debian's ``postgresql``: ``initdb`` and ``pg_ctl`` in a temp dir, on a free
127.0.0.1 port, as the ``postgres`` user since PostgreSQL refuses to run as
root), and ``alphaqos circuits serve`` as a child process."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from _system import ensure_debian_package

CLI = [sys.executable, "-m", "alphaqos", "circuits"]

# H1 and H3 reach H2 over two routes (R1-R2-R4 and R1-R3-R4); R1-R2 and
# R1-R3 are the bottlenecks: 1 Gbit/s, reservable at 80%.
TOPOLOGY = """\
name: circuits-test
duration: 1s
nodes:
  H1: {address: 10.0.1.1}
  H3: {address: 10.0.3.1}
  H2: {address: 10.0.2.1}
  R1: {router: true}
  R2: {router: true}
  R3: {router: true}
  R4: {router: true}
links:
  - {between: [H1, R1], rate: 10Gbps, delay: 1ms}
  - {between: [H3, R1], rate: 10Gbps, delay: 1ms}
  - {between: [R1, R2], rate: 1Gbps, delay: 1ms}
  - {between: [R1, R3], rate: 1Gbps, delay: 2ms}
  - {between: [R2, R4], rate: 10Gbps, delay: 1ms}
  - {between: [R3, R4], rate: 10Gbps, delay: 1ms}
  - {between: [R4, H2], rate: 10Gbps, delay: 1ms}
circuits:
  policing: {R1-H1: hard}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresCluster:
    """``initdb`` + ``pg_ctl start`` in a temp dir; :meth:`stop` removes it all."""

    def __init__(self) -> None:
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            pytest.skip("PostgreSQL's initdb is missing (Debian package postgresql)")
        self.bin = Path(bins[-1]).parent
        self.dir = Path(tempfile.mkdtemp(prefix="aq-pg-"))
        self.port = free_port()
        self.user = "postgres"
        os.chmod(self.dir, 0o755)
        shutil.chown(self.dir, self.user, self.user)
        self.data = self.dir / "data"
        self._as_user(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync",
                      "-E", "UTF8")  # fmt: skip
        options = f"-c listen_addresses=127.0.0.1 -c port={self.port} -k {self.dir} -c fsync=off -c max_connections=200"
        self._as_user(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-o", options,
                      "-w", "-t", "60", "start")  # fmt: skip

    def _as_user(self, *command: str) -> None:
        done = subprocess.run(["runuser", "-u", self.user, "--", *command], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            self.stop()
            raise AssertionError(f"{command[0]} failed: {done.stderr[-2000:]}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(["runuser", "-u", self.user, "--", str(self.bin / "pg_ctl"), "-D", str(self.data), "-m",
                            "immediate", "-w", "stop"], capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def postgres_cluster():
    ensure_debian_package("postgresql")
    if os.geteuid() != 0:
        pytest.skip("the throw-away PostgreSQL cluster runs as the postgres user, which needs root (runuser)")
    cluster = PostgresCluster()
    try:
        yield cluster
    finally:
        cluster.stop()


class Server:
    """``alphaqos circuits serve`` on 127.0.0.1 with its own database and state
    dir; ``workers`` server processes (``serve --workers``)."""

    def __init__(self, tmp: Path, db: str, *, hold_timeout: float = 120.0, workers: int = 1) -> None:
        self.tmp, self.db = tmp, db
        self.topology(TOPOLOGY)
        self.env = dict(os.environ, ALPHAQOS_CIRCUITS_DB=db, ALPHAQOS_CIRCUITS_TOPOLOGY=str(tmp / "topology.yaml"),
                        ALPHAQOS_CIRCUITS_STATE_DIR=str(tmp / "state"),
                        ALPHAQOS_CIRCUITS_HOLD_TIMEOUT=str(hold_timeout), ALPHAQOS_CIRCUITS_WORKERS=str(workers))  # fmt: skip
        self.env.pop("ALPHAQOS_CIRCUITS_TOKEN", None)
        self.env.pop("ALPHAQOS_CIRCUITS_URL", None)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def topology(self, text: str) -> None:
        (self.tmp / "topology.yaml").write_text(text)

    def token(self, role: str, name: str | None = None, *, cli: bool = False) -> str:
        """A new token: through ``alphaqos circuits token create`` with ``cli``,
        else in-process (the same function, without a Python start-up)."""
        if not cli:
            from alphaqos.circuits.db import make_engine, migrate
            from alphaqos.circuits.service import create_token, now_ns

            engine = make_engine(self.db)
            try:
                migrate(engine)
                return create_token(engine, role, name, now_ns())[0]
            finally:
                engine.dispose()
        extra = ["--name", name] if name else []
        done = subprocess.run([*CLI, "token", "create", "--role", role, *extra], env=self.env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.split()[-1]

    def start(self, timeout: float = 60) -> Server:
        self.log = self.tmp / f"serve-{self.port}.log"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([*CLI, "serve", "--listen", f"127.0.0.1:{self.port}"], env=self.env,
                                         stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(self.url + "/openapi.json", timeout=2).close()
                return self
            except urllib.error.HTTPError as exc:
                self.stop()
                raise AssertionError(f"alphaqos circuits serve: /openapi.json: {exc}: {self.log.read_text()[-2000:]}") from None
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"alphaqos circuits serve did not come up: {self.log.read_text()[-2000:]}") from None
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cli(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess:
        env = dict(self.env, ALPHAQOS_CIRCUITS_URL=self.url)
        if token:
            env["ALPHAQOS_CIRCUITS_TOKEN"] = token
        return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)
