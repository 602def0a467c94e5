"""α-flow identification on Spark (flows.spark) gives the prefix table of
the DuckDB identification (flows.identify), on a local standalone Spark
cluster (one master, one worker, bound to 127.0.0.1) that the test starts.

PySpark is not a dependency of alphaqos: ``make test-deps`` (run by ``make
test`` before pytest) installs it; without it the test fails naming that
target. It skips, saying why, when no Java runtime is found."""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from alphaqos.flows import schema
from alphaqos.flows.identify import identify
from alphaqos.flows.synth import synthesize

START_TIMEOUT_S = 60
#: JVM options for quick starts of small JVMs (only the C1 compiler).
QUICK_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def _ensure_pyspark():
    try:
        return importlib.import_module("pyspark")
    except ImportError:
        pytest.fail("pyspark is missing: `make test-deps` installs it (`make test` runs it before pytest)", pytrace=False)


def _java_home() -> str | None:
    """A Java 17+ home: JAVA_HOME, else an OpenJDK 17 under /usr/lib/jvm,
    else the java on PATH."""
    candidates = [os.environ.get("JAVA_HOME")]
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates += [str(p) for p in sorted(jvm.glob("java-17-openjdk*"))]
        candidates += [str(p) for p in sorted(jvm.iterdir())]
    java = shutil.which("java")
    if java:
        candidates.append(str(Path(java).resolve().parent.parent))
    for home in candidates:
        if home and (Path(home) / "bin" / "java").is_file():
            return home
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"a Spark daemon exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"no Spark daemon on 127.0.0.1:{port} after {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    """A session on a standalone master and worker started here."""
    pyspark = _ensure_pyspark()
    java_home = _java_home()
    if java_home is None:
        pytest.skip("no Java runtime (JAVA_HOME, /usr/lib/jvm or java on PATH) for Spark")
    spark_home = Path(pyspark.__file__).parent
    spark_class = spark_home / "bin" / "spark-class"
    work = tmp_path_factory.mktemp("spark")
    env = dict(os.environ, JAVA_HOME=java_home, SPARK_HOME=str(spark_home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOCAL_DIRS=str(work / "local"), SPARK_LOG_DIR=str(work / "logs"),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               # small, quickly started daemons
               SPARK_DAEMON_MEMORY="256m", SPARK_DAEMON_JAVA_OPTS=QUICK_JVM)  # fmt: skip
    env["PATH"] = f"{java_home}/bin:{env.get('PATH', '')}"
    # the session started below launches its JVM from these
    for key in ("JAVA_HOME", "SPARK_HOME", "SPARK_LOCAL_IP", "PYSPARK_PYTHON"):
        os.environ[key] = env[key]
    daemons = []

    def start(name, *args, port):
        log = work / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([str(spark_class), *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, cwd=work, start_new_session=True)  # fmt: skip
        daemons.append(process)
        if port is not None:
            _wait_port(port, process, log)
        return process, log

    port = _free_port()
    session = None
    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(_free_port()), port=port)  # fmt: skip
        master = f"spark://127.0.0.1:{port}"
        # the session starts while the worker does; its executor comes when the worker registers
        worker, worker_log = start(
            "worker", "org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1",
            "--port", str(_free_port()), "--webui-port", str(_free_port()), "--cores", "1", "--memory", "1g",
            "--work-dir", str(work / "worker"), port=None,
        )  # fmt: skip
        from alphaqos.flows.spark import session as open_session

        session = open_session(master, conf={
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": "512m",
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": "1",
            "spark.ui.enabled": "false",
            "spark.driver.extraJavaOptions": QUICK_JVM,
            "spark.executor.extraJavaOptions": QUICK_JVM,
            "spark.sql.shuffle.partitions": "1",
            "spark.local.dir": str(work / "local"),
        })  # fmt: skip
        session.sparkContext.setLogLevel("ERROR")
        if worker.poll() is not None:
            pytest.fail(f"the Spark worker exited ({worker.returncode}):\n{worker_log.read_text()[-3000:]}")
        yield session
    finally:
        if session is not None:
            session.stop()
        for process in reversed(daemons):
            _stop(process)


def duckdb_prefixes(root: Path, db: Path, **options) -> pl.DataFrame:
    import duckdb

    identify(root, db, **options)
    with duckdb.connect(str(db), read_only=True) as con:
        cursor = con.execute("SELECT * FROM prefixes")
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    return pl.DataFrame(rows, schema=names, orient="row")


def normalised(frame: pl.DataFrame) -> pl.DataFrame:
    from alphaqos.flows.spark import PREFIX_SCHEMA

    return frame.select([pl.col(c).cast(t) for c, t in PREFIX_SCHEMA.items()]).sort("role", "family", "prefix")


def test_spark_prefix_table_equals_duckdb_on_synthetic_data(spark, tmp_path):
    from alphaqos.flows.spark import identify_spark

    root = tmp_path / "flows"
    schema.write_partitioned(synthesize(days=2, exporters=2, beta_flows_per_day=5000), root)
    expected = normalised(duckdb_prefixes(root, tmp_path / "alpha.duckdb"))
    # by the master's URL: the open session on it is reused
    got = identify_spark(root, master=spark.sparkContext.master)
    assert len(expected) > 0
    assert got.equals(normalised(got))  # the documented types and order
    assert got.equals(expected), f"Spark:\n{got}\nDuckDB:\n{expected}"


T0 = datetime(2024, 1, 1, tzinfo=UTC)
GB = 10**9


def rec(first, last=None, *, src, dst, sport=40000, nbytes=GB, exporter="r1"):
    return dict(exporter=exporter, first=first, last=first if last is None else last, src_addr=src, dst_addr=dst,
                src_port=sport, dst_port=2811, protocol=6, bytes=nbytes, packets=max(nbytes // 1500, 1),
                sampling_rate=1)  # fmt: skip


def test_spark_matches_duckdb_on_edge_cases(spark, tmp_path):
    """Overlap shares, stitched pieces, IPv6, /0 and /32, runs broken by
    the aging period, aged-out entries, unparsable addresses."""
    from alphaqos.flows.spark import identify_spark

    day = timedelta(days=1)
    rows = [
        rec(T0 + timedelta(seconds=20), T0 + timedelta(seconds=80), nbytes=4 * GB, src="10.1.2.3", dst="192.168.5.6"),
        *[rec(T0 + timedelta(seconds=20 * k), T0 + timedelta(seconds=20 * k + 19), nbytes=400_000_000,
              src="10.1.2.9", dst="192.168.5.7", sport=7) for k in range(3)],  # fmt: skip
        rec(T0, nbytes=GB, src="10.9.9.9", dst="10.8.8.8", sport=8),  # exactly H: not α
        rec(T0 + timedelta(seconds=59), nbytes=2 * GB, src="2001:db8:abcd:12::1", dst="2001:db8:ffff:1::2"),
        rec(T0, nbytes=3 * GB, src="not-an-address", dst="172.16.0.1", exporter="r2"),
        # an early sighting, then a gap of 3 days (the aging period below): a new run
        rec(T0 + day, nbytes=2 * GB, src="198.51.100.10", dst="203.0.113.5", exporter="r2"),
        rec(T0 + 4 * day + timedelta(minutes=5), nbytes=5 * GB, src="198.51.100.11", dst="203.0.113.5", exporter="r2"),
        rec(T0 + 6 * day, T0 + 6 * day + timedelta(minutes=3), nbytes=9 * GB, src="198.51.100.12", dst="203.0.113.9"),
    ]
    root = tmp_path / "flows"
    schema.write_partitioned(pl.DataFrame(rows), root)
    for n, options in enumerate([dict(aging_days=3), dict(aging_days=30, prefix_v4=32, prefix_v6=128),
                                 dict(prefix_v4=0, prefix_v6=0, interval_s=300, threshold_bytes=5e8)]):  # fmt: skip
        expected = normalised(duckdb_prefixes(root, tmp_path / f"alpha{n}.duckdb", **options))
        got = identify_spark(root, spark=spark, **options)
        assert got.equals(expected), f"{options}\nSpark:\n{got}\nDuckDB:\n{expected}"
