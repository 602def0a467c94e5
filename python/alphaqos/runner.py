"""One runner for many independent simulations: ``alphaqos sweep`` and
``alphaqos reproduce`` hand it their runs.

A run is a :class:`Task`: a function named by its module and qualified name,
its arguments (picklable), a key and a cost estimate. Every task runs in a
fresh Python interpreter of its own (``python -m alphaqos.runner``), never in
the coordinating process and never in a fork of it: a fork of a process
whose polars or rayon thread pools are running can deadlock in the child.
The task goes to the child pickled on its stdin; the child sends its result
back pickled on its stdout (anything the task prints is sent to stderr
instead) and exits. So a run that crashes the interpreter (an engine panic,
a segfault, the kernel's OOM killer) fails alone: its :class:`Outcome`
says how it ended and ends with the last lines of its stderr, and the other
runs go on.

Where the interpreters run:

- locally (the default): ``jobs`` at a time (default: one per core), the
  most costly first, so the cores stay busy to the end;
- on a Dask distributed cluster (``dask=ADDRESS``, the scheduler's address,
  e.g. ``tcp://10.0.0.5:8786``): each task is a Dask task whose work is to
  start the same child interpreter on its worker. The workers need this
  version of alphaqos installed; they need no shared file system, since
  arguments and results travel through Dask.

The results depend only on the tasks, not on where or in what order they
ran. :func:`run_tasks` yields outcomes as they finish; closing the iterator
early (an interrupt, an error in the caller) kills the local children and
cancels the Dask tasks not yet started (one already running on a worker
finishes there, unrecorded). A child ended by SIGINT or SIGTERM was
stopped, not failing: its outcome says so (:attr:`Outcome.interrupted`),
and a caller should not record it as the run's result.
"""

from __future__ import annotations

import importlib
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Outcome", "RunError", "Task", "run_tasks"]

#: How much of a crashed child's stderr an outcome keeps.
STDERR_LINES = 5
STDERR_CHARS = 600
#: How long to wait for the Dask scheduler to answer.
DASK_CONNECT_TIMEOUT = "10s"


class RunError(RuntimeError):
    """A run could not be made (a failed run that its caller cannot go on
    without, or a cluster that cannot be reached)."""


@dataclass(frozen=True)
class Task:
    """One run: ``function(*args)`` in a child interpreter."""

    key: str  # unique among the tasks of one call
    function: str  # "package.module:qualified_name", importable in the child
    args: tuple = ()
    cost: float = 1.0  # relative, for scheduling: higher runs earlier


@dataclass(frozen=True)
class Outcome:
    """How a task ended: its return value, or why it failed."""

    key: str
    ok: bool
    value: Any = None  # the function's return value when ok
    error: str | None = None  # one line: "ScenarioError: ...", or how the child died and its stderr's end
    wall_time_s: float = 0.0
    status: int | None = None  # the child's exit status (negative: the signal that ended it)

    @property
    def interrupted(self) -> bool:
        """The child was stopped (SIGINT, SIGTERM), rather than failing."""
        return self.status in (-signal.SIGINT, -signal.SIGTERM)


def run_tasks(
    tasks: Iterable[Task], *, jobs: int | None = None, dask: str | None = None
) -> Iterator[Outcome]:
    """Run every task and yield its outcome as it finishes. ``jobs`` local
    child interpreters at a time (default: one per core), or on the Dask
    cluster whose scheduler is at ``dask``. Close the iterator to stop early
    (the local children are killed)."""
    tasks = sorted(tasks, key=lambda task: -task.cost)
    keys = [task.key for task in tasks]
    if len(set(keys)) != len(keys):
        raise ValueError("task keys must be unique")
    if not tasks:
        return
    if dask is not None:
        yield from _run_on_dask(tasks, dask)
    else:
        yield from _run_locally(tasks, max(1, min(jobs or os.cpu_count() or 1, len(tasks))))


def execute(task: Task, *, started: Callable[[subprocess.Popen], None] | None = None) -> Outcome:
    """Run one task in a fresh child interpreter and wait for it.
    ``started(process)`` is called once the child exists."""
    begin = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", __name__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_environment(),
    )
    if started:
        started(process)
    out, err = process.communicate(pickle.dumps((task.function, task.args)))
    wall = time.perf_counter() - begin
    if process.returncode == 0:
        try:
            ok, payload = pickle.loads(out)
        except Exception as exc:  # noqa: BLE001 - a garbled answer is the run's failure
            return Outcome(task.key, False, error=f"unreadable result from the run ({exc})", wall_time_s=wall, status=0)
        return Outcome(task.key, ok, value=payload if ok else None, error=None if ok else payload,
                       wall_time_s=wall, status=0)  # fmt: skip
    return Outcome(task.key, False, error=_death(process.returncode, err), wall_time_s=wall, status=process.returncode)


def _death(status: int, stderr: bytes) -> str:
    """``exit status 101: thread 'main' panicked at ...`` from a child's end."""
    if status < 0:
        try:
            how = f"killed by {signal.Signals(-status).name}"
        except ValueError:
            how = f"killed by signal {-status}"
    else:
        how = f"exit status {status}"
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    tail = " | ".join(lines[-STDERR_LINES:])
    if len(tail) > STDERR_CHARS:
        tail = "..." + tail[-STDERR_CHARS:]
    return f"{how}: {tail}" if tail else f"{how} (nothing on stderr)"


def _child_environment() -> dict[str, str]:
    """This environment, with this alphaqos first on the child's path."""
    package_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run_locally(tasks: list[Task], jobs: int) -> Iterator[Outcome]:
    children: set[subprocess.Popen] = set()
    lock = threading.Lock()
    stopping = threading.Event()

    def started(process: subprocess.Popen) -> None:
        with lock:
            children.add(process)
            if stopping.is_set():
                process.kill()

    def one(task: Task) -> Outcome | None:
        if stopping.is_set():
            return None
        return execute(task, started=started)

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="alphaqos-run")
    try:
        pending = {pool.submit(one, task) for task in tasks}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                yield future.result()
    finally:
        # Reached also when the caller stops early: no child outlives us.
        stopping.set()
        with lock:
            for process in children:
                if process.poll() is None:
                    process.kill()
        pool.shutdown(wait=True, cancel_futures=True)


def _run_on_dask(tasks: list[Task], address: str) -> Iterator[Outcome]:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        raise RunError(f"--dask needs the 'distributed' package ({exc}); pip install 'dask[distributed]'") from None
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise RunError(f"cannot reach the Dask scheduler at {address!r}: {exc}") from None
    with client:
        # Keys name the runs on the dashboard; pure=False: every task runs.
        futures = [client.submit(execute, task, key=f"alphaqos-{i}-{task.key}", pure=False)
                   for i, task in enumerate(tasks)]  # fmt: skip
        try:
            for future in as_completed(futures, loop=client.loop):
                yield future.result()
        finally:
            client.cancel(futures)


# --- the child interpreter ------------------------------------------------------


def _child() -> int:
    """Read ``(function, args)`` from stdin, run it, write ``(ok, result or
    error)`` to stdout. Whatever the task itself prints goes to stderr."""
    function, args = pickle.loads(sys.stdin.buffer.read())
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the engine or a library printing cannot garble the answer
    sys.stdout = sys.stderr
    try:
        module, _, qualname = function.partition(":")
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        result = (True, target(*args))
    except Exception as exc:  # noqa: BLE001 - reported as the run's failure
        result = (False, f"{type(exc).__name__}: {' '.join(str(exc).split())}")
    answer.write(pickle.dumps(result))
    answer.close()
    return 0


if __name__ == "__main__":
    sys.exit(_child())
