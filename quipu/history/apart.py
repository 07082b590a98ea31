"""Work on a second core: a forked child that makes a stream of items, or takes one.

A first backfill reads and redacts transcripts, archives their turns, and embeds and indexes them:
as three processes (a child reading, the parent archiving, a child writing the index), each stage
runs while the others do, on a machine's other cores.

Contract:
- ``made(make)`` yields what ``make()`` yields in a forked child, in order, sent in pickled chunks
  through a pipe. An exception in the child is raised here, after every item made before it; a child that dies raises
  ``RuntimeError``; a consumer that stops early (or is stopped) kills the child.
- ``taken(take, items)`` runs ``take(received)`` in a forked child, where ``received`` yields
  ``items`` as this process sends them; it returns once the child has ended, and raises what the
  child raised. The child sees the end of the items only after the last one: if this process stops
  or is killed first, ``received`` raises ``EOFError`` in the child, so what it does after the
  last item (a commit) never happens. If ``items`` raises, the child is killed and the error
  raised here.
- Only on Linux (``APART``), where fork is safe for what the children use (files, SQLite and numpy
  opened anew in them), and from a process with one thread (``usable``): the callers do the same
  work in one process otherwise. A child never
  returns into the caller's code: it ends with ``os._exit``, running no cleanup of the parent's.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, TypeVar

T = TypeVar("T")
APART = sys.platform == "linux" and hasattr(os, "fork")
_PIPE = 1 << 20  # a pipe's buffer: a batch or two in flight, so neither side waits on the other's every step


def usable() -> bool:
    """Whether to work apart now: on Linux, and from a process with one thread (a server's other
    threads may hold a lock at the fork that the child would then wait on for ever)."""
    return APART and threading.active_count() == 1


def _pipe() -> tuple[int, int]:
    import fcntl  # Linux only, as APART

    read, write = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, _PIPE)
    return read, write


def _exception(exc: BaseException) -> BaseException:
    """``exc`` if it pickles and comes back, else a ``RuntimeError`` with its text."""
    try:
        pickle.loads(pickle.dumps(exc, pickle.HIGHEST_PROTOCOL))  # noqa: S301 - just made here
    except Exception:  # noqa: BLE001 - the text goes instead
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def made(make: Callable[[], Iterable[T]], chunk: int = 64) -> Iterator[T]:
    """What ``make()`` yields, made in a forked child (see the module contract)."""
    read, write = _pipe()
    pid = os.fork()
    if pid == 0:  # the child: it never returns
        status = 1
        try:
            os.close(read)
            with open(write, "wb") as out:
                part: list[T] = []
                try:
                    for item in make():
                        part.append(item)
                        if len(part) >= chunk:
                            pickle.dump(("items", part), out, pickle.HIGHEST_PROTOCOL)
                            part = []
                    last: tuple[str, object] = ("end", None)
                except Exception as exc:  # noqa: BLE001 - raised in the parent, after what came before it
                    last = ("error", _exception(exc))
                pickle.dump(("items", part), out, pickle.HIGHEST_PROTOCOL)
                pickle.dump(last, out, pickle.HIGHEST_PROTOCOL)
            status = 0 if last[0] == "end" else 1
        finally:
            os._exit(status)
    os.close(write)
    done = False
    try:
        with open(read, "rb") as feed:
            while True:
                try:
                    kind, value = pickle.load(feed)  # noqa: S301 - sent by this process's own child
                except EOFError:
                    raise RuntimeError("the reading process stopped before the end") from None
                if kind == "items":
                    yield from value
                elif kind == "end":
                    break
                else:
                    raise value
        os.waitpid(pid, 0)
        done = True
    finally:
        if not done:
            _stop(pid)


def taken(take: Callable[[Iterator[Any]], object], items: Iterable[Any]) -> None:
    """``take`` run in a forked child over ``items`` sent from here (see the module contract)."""
    read, write = _pipe()
    report_read, report_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it never returns
        status = 1
        try:
            os.close(write)
            os.close(report_read)
            with open(read, "rb") as feed:
                take(_received(feed))
            status = 0
        except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent, which raises it
            with contextlib.suppress(BaseException), open(report_write, "wb") as out:
                pickle.dump(_exception(exc), out, pickle.HIGHEST_PROTOCOL)
        finally:
            os._exit(status)
    os.close(read)
    os.close(report_write)
    # A thread writes to the pipe while this one makes the next items: an item larger than the
    # pipe's buffer (a batch of vectors) then never holds this process up while the child works.
    outbox: queue.Queue[bytes | None] = queue.Queue(maxsize=2)
    broken: list[OSError] = []

    def send() -> None:
        try:
            while (data := outbox.get()) is not None:
                if not broken:
                    try:
                        _write_all(write, data)
                    except OSError as exc:  # the child stopped: its report says why
                        broken.append(exc)
        finally:
            os.close(write)

    sender = threading.Thread(target=send, name="quipu-apart-sender", daemon=True)
    sender.start()
    try:
        try:
            for item in items:
                outbox.put(pickle.dumps(item, pickle.HIGHEST_PROTOCOL))
            outbox.put(pickle.dumps(_END, pickle.HIGHEST_PROTOCOL))
        except BaseException:
            _stop(pid)  # a write the thread is in fails, and it ends at the None below
            os.close(report_read)
            raise
    finally:
        outbox.put(None)
        sender.join()
    with open(report_read, "rb") as fh:
        report = fh.read()
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if report:
        raise pickle.loads(report)  # noqa: S301 - written by this process's own child
    if status != 0:
        raise RuntimeError(f"the index writing process stopped with status {status}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


_END = "end of the items"


def _received(feed: BinaryIO) -> Iterator[Any]:
    """The items the parent sends, until its end mark (``EOFError`` if it stopped before)."""
    while (item := pickle.load(feed)) != _END:  # noqa: S301 - sent by this process's own parent
        yield item
