"""Output written whole or not at all.

Every file and directory a command writes is first made under a hidden
sibling name, ``.<name>.partial-<random>``, in the same directory (so on
the same file system), flushed to disk, and renamed into place: a reader
sees the old content or the new, never half of it, and a failure, Ctrl-C
or SIGTERM removes the staging copy (rename(2) is atomic within a file
system, POSIX.1-2008; the fsync before it keeps a crash from exposing an
empty file under the final name on ext4 and XFS).

:func:`atomic_file` and :func:`write_atomic`
    One file, new or replacing an older one.
:func:`atomic_directory`
    A directory filled in one piece, optionally replacing an older one
    (the old one is renamed aside first, then removed).
:func:`new_output_directory`
    A command's run or report directory: it must not exist, its missing
    parents are made (and removed again on failure), and an existing or
    uncreatable target is a :class:`~alphaqos.errors.UsageError`.

SIGTERM: by default it ends a process where it stands, with no clean-up.
While one of these is open on the main thread and SIGTERM still has its
default action, it is raised as :class:`~alphaqos.errors.Terminated`
instead, so the staging copy is removed (the ``alphaqos`` command installs
the same handler for its whole run).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from .errors import RunFailure, Terminated, UsageError

__all__ = [
    "DEFAULT_RUNS_DIR",
    "atomic_directory",
    "atomic_file",
    "default_run_dir",
    "new_output_directory",
    "saving",
    "staging_name",
    "write_atomic",
]

#: Where a command's run directory goes when no ``--out`` is given.
DEFAULT_RUNS_DIR = Path("runs")

#: The marker of a staging copy's name (``.<name>.partial-<hex>``).
PARTIAL = ".partial-"

T = TypeVar("T")


def staging_name(target: Path) -> Path:
    """The hidden sibling a copy of ``target`` is staged under."""
    return target.with_name(f".{target.name}{PARTIAL}{secrets.token_hex(4)}")


def _raise_terminated(signum, frame) -> None:
    raise Terminated


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Inside the block, SIGTERM raises :class:`Terminated` where the
    program stands (only on the main thread, and only where SIGTERM has its
    default action: a handler someone installed stays theirs)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _fsync(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, *, mode: int | None = None) -> Iterator[Path]:
    """Yield the staging path to write ``path``'s new content into; when
    the block ends it is flushed to disk, given ``mode`` (e.g. ``0o755``)
    if asked, and renamed to ``path``. On any exception (also Ctrl-C and
    SIGTERM) it is removed and ``path`` keeps what it held."""
    path = Path(path)
    staging = staging_name(path)
    with sigterm_raises():
        try:
            yield staging
            _fsync(staging)
            if mode is not None:
                staging.chmod(mode)
            os.replace(staging, path)
        except BaseException:
            staging.unlink(missing_ok=True)
            raise
    with contextlib.suppress(OSError):
        _fsync(path.parent, directory=True)


def write_atomic(path: str | os.PathLike, data: str | bytes, *, mode: int | None = None) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, mode=mode) as staging:
        if isinstance(data, bytes):
            staging.write_bytes(data)
        else:
            staging.write_text(data, encoding="utf-8")


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike, *, replace: bool = False) -> Iterator[Path]:
    """Yield a fresh hidden directory beside ``target`` to fill; when the
    block ends it is renamed to ``target``. An existing ``target`` is
    renamed aside and removed when ``replace`` (else FileExistsError). On
    any exception (also Ctrl-C and SIGTERM) the staging directory is
    removed and ``target`` is as it was."""
    target = Path(target)
    staging = staging_name(target)
    staging.mkdir()  # unlike tempfile.mkdtemp, keeps the umask's permissions
    with _filled(staging, lambda: _put_in_place(staging, target, replace=replace)):
        yield staging


@contextlib.contextmanager
def _filled(staging: Path, finish: Callable[[], None]) -> Iterator[None]:
    """Run the block, then ``finish()`` (the rename); on any exception,
    also SIGTERM, remove the staging directory."""
    with sigterm_raises():
        try:
            yield
            finish()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def _put_in_place(staging: Path, target: Path, *, replace: bool) -> None:
    if not (target.exists() or target.is_symlink()):
        staging.rename(target)
        return
    if not replace:
        raise FileExistsError(f"{str(target)!r} appeared while it was being written")
    old = target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
    target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def new_output_directory(target: Path) -> Iterator[Path]:
    """A command's output directory (``--out``), filled as by
    :func:`atomic_directory`: an existing ``target`` is refused (a
    :class:`UsageError`), as is one that appears meanwhile; its missing
    parent directories are made, and removed again if the block fails."""
    if target.exists() or target.is_symlink():
        raise UsageError(f"output directory {str(target)!r} already exists")
    created: list[Path] = []
    try:
        created = _make_parents(target.parent)
        staging = staging_name(target)
        staging.mkdir()
    except OSError as exc:
        _remove_empty(created)
        raise UsageError(f"cannot create output directory {str(target)!r}: {exc.strerror or exc}") from None

    def finish() -> None:
        if target.exists() or target.is_symlink():
            raise UsageError(f"output directory {str(target)!r} appeared during the run; results not saved")
        staging.rename(target)

    try:
        with _filled(staging, finish):
            yield staging
    except BaseException:
        _remove_empty(created)
        raise


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents; return those created,
    outermost first."""
    missing = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    created: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            created.append(path)
    except OSError:
        _remove_empty(created)
        raise
    return created


def _remove_empty(directories: list[Path]) -> None:
    """Remove directories we made, innermost first; one that is no longer
    empty is not ours to force and stays."""
    for path in reversed(directories):
        with contextlib.suppress(OSError):
            path.rmdir()


def default_run_dir(name: str) -> Path:
    """``runs/<name>-<UTC time>``, with a counter if that is taken."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = DEFAULT_RUNS_DIR / f"{name}-{stamp}"
    candidate, counter = base, 1
    while candidate.exists():
        counter += 1
        candidate = base.with_name(f"{base.name}-{counter}")
    return candidate


def saving(what: str, target: Path, save: Callable[[], T]) -> T:
    """Return ``save()``; an OSError becomes a :class:`RunFailure` naming
    ``what`` and ``target``."""
    try:
        return save()
    except OSError as exc:
        raise RunFailure(f"cannot write {what} into {str(target)!r}: {exc.strerror or exc}") from None
