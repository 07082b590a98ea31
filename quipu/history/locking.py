"""The archive lock: one ``flock`` on ``history/lock`` that every writer of the archive holds.

Contract:
- ``hold(path, wait=, quiet=)`` takes the lock, waiting at most ``wait`` seconds; then it raises
  ``ArchiveBusy`` (a ``FatalError``: exit 1), naming the process that holds it. Nothing is
  changed before the lock is taken, so a command that gives up changed nothing.
- The holder writes its pid into the lock file (``pid N``) and empties it when it lets go; the
  lock is the ``flock`` alone (a pid left by a killed holder holds nothing, and is only named
  while its process lives).
- A command that waits more than ``NOTICE`` seconds says so once on stderr, with the holder's pid
  and how long it will wait; ``quiet`` (a worker a hook started, whose stderr nobody reads) says
  nothing, and the caller logs the ``ArchiveBusy``.
- ``WAIT`` seconds for a command, ``WORKER_WAIT`` for a hook's worker (it queues behind a
  backfill); ``$QUIPU_HISTORY_LOCK_WAIT`` (seconds), when set, is the wait of both.
- The lock file is opened without following a symbolic link (it is written to).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from quipu.errors import FatalError

WAIT = 60.0  # seconds a command waits for the archive lock
WORKER_WAIT = 600.0  # seconds a hook's worker waits (a backfill of thousands of transcripts takes minutes)
NOTICE = 1.0  # seconds of waiting before a command says so
SETTING = "QUIPU_HISTORY_LOCK_WAIT"
_POLL = 0.05


class ArchiveBusy(FatalError):
    """Another process held the archive lock for the whole wait."""


def wait_for(default: float) -> float:
    """The wait in seconds: ``$QUIPU_HISTORY_LOCK_WAIT`` when it is a number of seconds, else ``default``."""
    raw = os.environ.get(SETTING, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


def holder(path: Path) -> int | None:
    """The pid the lock's holder wrote into ``path``, if that process is alive."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        words = os.read(fd, 64).split()
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(words) < 2 or words[0] != b"pid" or not words[1].isdigit():
        return None
    pid = int(words[1])
    try:
        os.kill(pid, 0)
    except PermissionError:
        return pid  # alive, another user's
    except (OSError, OverflowError):
        return None
    return pid


def _who(pid: int | None) -> str:
    return f"pid {pid}" if pid else "another process"


@contextlib.contextmanager
def hold(path: Path, *, wait: float = WAIT, quiet: bool = False) -> Iterator[None]:
    """Hold the archive lock at ``path`` (see the module contract)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FatalError(f"{path} is a symbolic link; quipu never writes through one\n"
                             f"- remove it (nothing else is in it: it is the archive's lock)") from None
        raise
    try:
        start = time.monotonic()
        said = quiet
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            waited = time.monotonic() - start
            if waited >= wait:
                pid = holder(path)
                raise ArchiveBusy(
                    f"the past-conversation archive is busy: {_who(pid)} held its lock ({path}) for the "
                    f"{wait:g} s this command waited; nothing was changed\n"
                    "- run the command again once that process is done (a backfill takes minutes)"
                    + (f"\n- if it hangs, stop it: kill {pid}" if pid else "")
                    + f"\n- or wait longer: set {SETTING} to a number of seconds")
            if not said and waited >= NOTICE:
                print(f"quipu: waiting for the past-conversation archive: {_who(holder(path))} holds its lock "
                      f"({path}); giving up after {wait:g} s", file=sys.stderr, flush=True)
                said = True
            time.sleep(min(_POLL, max(wait - waited, 0.0)))
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the flock (also when the process is killed)
