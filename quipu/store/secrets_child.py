"""The secret check of a bulk import in a second process, while the first reads the next notes.

Contract:
- ``ScanChild.start(allow)`` starts the child, or returns None (one processor, no interpreter,
  any error starting it): the caller then checks each note itself. The child is the absolute
  interpreter of this process run with ``-I`` (no working directory, ``PYTHONPATH`` or user
  site-packages on its path) and this package's folder put first on ``sys.path``, from ``/``:
  nothing in a store or a project can stand in for the scanner.
- ``check(data, fields)`` hands over one rendered memory file and the values of the fields it was
  made from, as the texts they are scanned as (``scanned.rendered_parts``), and returns None; when
  the child is behind (``BACKLOG`` bytes the pipe has not taken) or gone, it checks the note here
  instead and returns whether it holds a secret: the reader never waits for the child, and the two
  processes share the work. ``verdicts()`` ends the child and returns, in the order handed over,
  each note's ``scanned.rendered_holds_secret(data, fields, allow, marker=True)`` as the child found
  it, or None for every note it did not answer (it crashed, was killed, wrote something else): the
  caller checks those itself, so a note is never let through unchecked. ``close()`` ends it at once
  (an import that stops on an error leaves no child behind).
- The child reads framed notes on stdin and writes one byte for each (``0`` clean, ``1`` not) on
  stdout; a frame it cannot read ends it. Its answers are read by a thread, so neither pipe fills;
  its input pipe holds 1 MiB where the system allows, so a child a moment behind does not stop
  the reader.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable

from quipu.prompt import launch
from quipu.store import scanned

_LENGTH = struct.Struct("<I")
BACKLOG = 1 << 16  # bytes of notes waiting for the pipe past which the reader checks notes itself
BOOT = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
        "from quipu.store.secrets_child import serve; serve(sys.argv[1:])")


def _frame(parts: list[bytes]) -> bytes:
    return _LENGTH.pack(len(parts)) + b"".join(_LENGTH.pack(len(p)) + p for p in parts)


class ScanChild:
    def __init__(self, child: subprocess.Popen[bytes], allow: tuple[str, ...]) -> None:
        self._child = child
        self._allow = allow
        self._sent = 0
        self._backlog = bytearray()  # framed notes the pipe has not taken yet
        self._gone = False
        self._answers = bytearray()
        assert child.stdin is not None
        self._fd = child.stdin.fileno()
        os.set_blocking(self._fd, False)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, allow: Iterable[str] = ()) -> ScanChild | None:
        if not launch.spare_processor():
            return None  # one processor: the second process would only take turns with the first
        try:
            child = subprocess.Popen(
                launch.child_argv(BOOT, *allow),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd="/",
                close_fds=True)
        except (OSError, ValueError, subprocess.SubprocessError):
            return None
        if hasattr(fcntl, "F_SETPIPE_SZ") and child.stdin is not None:  # slack for a child a moment behind
            with contextlib.suppress(OSError):
                fcntl.fcntl(child.stdin.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
        return cls(child, tuple(allow))

    @property
    def pid(self) -> int:
        return self._child.pid

    def _read(self) -> None:
        out = self._child.stdout
        assert out is not None
        try:
            while chunk := os.read(out.fileno(), 65536):
                self._answers += chunk
        except (OSError, ValueError):
            pass

    def check(self, data: bytes, fields: Iterable[str]) -> bool | None:
        """Hand a note to the child (None), or, while the child is behind, check it here (whether
        it holds a secret): the reader never waits for the child."""
        parts = scanned.rendered_parts(data, fields)
        self._push()  # what the child has taken since the last note
        if len(self._backlog) >= BACKLOG or self._gone:
            return scanned.parts_hold_secret(parts, self._allow, marker=True)
        self._sent += 1
        self._backlog += _frame(parts)
        self._push()
        return None

    def _push(self) -> None:
        """Write what the pipe takes now."""
        while self._backlog and not self._gone:
            try:
                taken = os.write(self._fd, self._backlog)
            except BlockingIOError:
                return
            except OSError:  # the child has gone: what it did not answer is checked by the caller
                self._gone = True
                return
            del self._backlog[:taken]

    def close(self) -> None:
        """End the child at once (the import stopped): nothing it found is used."""
        launch.end_child(self._child)
        self._reader.join()

    def verdicts(self) -> list[bool | None]:
        """The child's answer for each note handed to it, in order (None: not answered)."""
        with contextlib.suppress(OSError):
            os.set_blocking(self._fd, True)
        self._push()
        with contextlib.suppress(OSError, ValueError):
            assert self._child.stdin is not None
            self._child.stdin.close()
        self._reader.join()
        self._child.wait()
        answers = bytes(self._answers[:self._sent])
        answers = answers[:len(answers) - len(answers.lstrip(b"01"))]  # up to anything but an answer
        return [answers[n] == ord("1") if n < len(answers) else None for n in range(self._sent)]


def _read_exactly(stream: object, size: int) -> bytes:
    data = stream.read(size)  # type: ignore[attr-defined]
    if len(data) != size:
        raise EOFError
    return data  # type: ignore[no-any-return]


def serve(allow: list[str]) -> None:
    """The child: each note's parts in, its verdict out, until its input ends."""
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    done = 0
    while header := source.read(4):
        if len(header) != 4:
            raise SystemExit(2)
        parts = [_read_exactly(source, _LENGTH.unpack(_read_exactly(source, 4))[0])
                 for _ in range(_LENGTH.unpack(header)[0])]
        sink.write(b"1" if scanned.parts_hold_secret(parts, tuple(allow), marker=True) else b"0")
        done += 1
        if done % 64 == 0:
            sink.flush()
    sink.flush()
