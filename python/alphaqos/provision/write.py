"""Writing the rendered targets of ``alphaqos provision`` into a directory
(the command line's parser is :mod:`alphaqos.cli.provision`).

:func:`provision` renders each target (:data:`TARGETS`) of a
:class:`~.model.Plan` and writes one file per target into ``DIR``
(``junos.conf``, ``cisco.cfg``, ``tc.sh``, ``alphaqos.nft``, ``dtn.sh``)
and beside each a unified diff against the file the previous run left
there (``junos.conf.diff``, ...; against nothing on the first run), so
that a change of the table is reviewed before it is loaded. The files are
written into a staging directory beside ``DIR`` that is then renamed into
place (a new ``DIR``) or exchanged with it in one step
(``renameat2(RENAME_EXCHANGE)``; the other files of an existing ``DIR``
are carried over), so a reader sees the old set of files or the new, never
a part. A policy element a target cannot express (unless
``allow_partial``) and a rendered file that fails its own checker
(:func:`.check.check`: the Junos and Cisco grammars, the tc scripts' ``sh
-n`` and tc commands, ``nft -c`` where nft exists) are a UsageError
naming the file and line, and leave ``DIR`` untouched.
"""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

from ..output import staging_name, write_atomic
from . import cisco, dtn, junos, nftables, tc
from .check import check
from .model import Plan

__all__ = ["TARGETS", "provision"]

TARGETS = {"junos": junos, "cisco": cisco, "tc": tc, "nftables": nftables, "dtn": dtn}


def provision(plan: Plan, targets: list[str], out: Path, *, allow_partial: bool = False) -> dict[str, tuple[int, int]]:
    """Render ``targets`` into ``out`` with a diff each; returns (added,
    removed) line counts per file. A policy element a target cannot express
    is a UsageError, and nothing is written, unless ``allow_partial``; so is
    a rendered file its checker (:func:`.check.check`) finds fault with,
    named by file and line."""
    from ..errors import RunFailure, UsageError
    from ..output import new_output_directory

    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} exists and is not a directory")
    rendered = {}
    for t in targets:
        name = TARGETS[t].FILENAME
        previous = out / name if out.is_dir() else None
        old = previous.read_text(encoding="utf-8", errors="replace") if previous is not None and previous.is_file() else None
        rendered[name] = TARGETS[t].render(plan, previous=old)
    if plan.missing and not allow_partial:
        raise UsageError(
            "; ".join(map(str, plan.missing))
            + ". Nothing written: leave those targets out of --target, or pass --allow-partial to write the files"
            " with what is missing stated in them"
        )
    problems = [f"{name}:{problem}" if problem[:1].isdigit() else f"{name}: {problem}"
                for name, text in rendered.items() for problem in check(name, text)]  # fmt: skip
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise UsageError(f"a rendered file fails its check, nothing written: {'; '.join(problems[:3])}{more}")
    counts: dict[str, tuple[int, int]] = {}

    def write_all(directory: Path, previous_dir: Path | None) -> None:
        for name, text in rendered.items():
            old_path = previous_dir / name if previous_dir is not None else None
            old = old_path.read_text(encoding="utf-8") if old_path is not None and old_path.is_file() else None
            diff = list(difflib.unified_diff(
                (old or "").splitlines(keepends=True), text.splitlines(keepends=True),
                fromfile=f"a/{name}" if old is not None else "/dev/null", tofile=f"b/{name}",
            ))  # fmt: skip
            counts[name] = (
                sum(1 for d in diff if d.startswith("+") and not d.startswith("+++")),
                sum(1 for d in diff if d.startswith("-") and not d.startswith("---")),
            )
            write_atomic(directory / name, text, mode=0o755 if name.endswith(".sh") else None)
            write_atomic(directory / f"{name}.diff", "".join(diff))

    try:
        if out.is_dir():
            _swap_in(out, lambda staging: write_all(staging, out), keep=set(rendered) | {f"{n}.diff" for n in rendered})
        else:
            with new_output_directory(out) as staging:
                write_all(staging, None)
    except OSError as exc:
        raise RunFailure(f"cannot write into {str(out)!r}: {exc.strerror or exc}") from None
    return counts


def _swap_in(out: Path, fill, keep: set[str]) -> None:
    """Replace the directory ``out`` as one step: a staging directory
    beside it gets ``out``'s other entries (hard links, or copies across
    devices) and what ``fill`` writes, and is then exchanged with ``out``
    atomically (``renameat2(RENAME_EXCHANGE)``, Linux 3.15), so a reader
    sees the old set of files or the new, never a mix; the old directory
    is then removed. Where the exchange is not available, the files are
    renamed into ``out`` one by one (each file whole)."""
    import shutil

    out = out.resolve()  # a symlink to the directory stays one: its target is what is exchanged
    staging = staging_name(out)
    staging.mkdir()
    try:
        for entry in out.iterdir():
            if entry.name in keep:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, staging / entry.name, symlinks=True)
            else:
                try:
                    os.link(entry, staging / entry.name, follow_symlinks=False)
                except OSError:
                    shutil.copy2(entry, staging / entry.name, follow_symlinks=False)
        fill(staging)
        staging.chmod(out.stat().st_mode & 0o7777)
        if _exchange(staging, out):
            shutil.rmtree(staging, ignore_errors=True)  # the old directory, now under the staging name
            return
        for name in keep:
            if (staging / name).exists():
                os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` atomically; False where the system
    cannot (not Linux, an old kernel or libc, a file system without it)."""
    import ctypes

    if sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return result == 0
