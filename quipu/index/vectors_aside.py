"""A bulk import's meaning vectors built in a second process while the first commits and indexes.

Contract:
- ``Aside.start(cache_dir, index_path, texts, count)`` starts the child and hands it ``texts``
  (each new memory's id and ``vectors.memory_text``), or returns None (one processor, no
  embedding installed, any error starting it, or an index already holding more memories than
  the import brings, whose vectors need not be built again): the vectors are then built after
  the index as before. The
  child is the absolute interpreter run with ``-I`` and this package's folder first on its path,
  from ``/`` (``launch.child_argv``): nothing in a store can stand in for quipu.
- The child adds the texts of the memories already in the index at ``index_path`` (read only;
  none when it cannot be read), and builds every vector of that whole store to be
  (``vectors.prebuild``), its flat copy (``vectors.matrix``) and the tokenizer's SQLite copy, under
  ``vectors.lock`` as any writer of the vectors.
- ``wait()`` returns once the child has ended (whether it built them); ``close()`` ends it at
  once (the import stopped). Either way the next ``vectors.ensure_vectors`` brings the vectors up
  to the index: a vector of the text a row holds is linked to it, any other text is embedded
  then, a vector of a memory the index lacks dropped. The child only saves time, never decides
  what a search finds.
"""
from __future__ import annotations

import sqlite3
import struct
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from quipu.index import vectors
from quipu.prompt import launch

_LENGTH = struct.Struct("<I")
BOOT = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
        "from quipu.index.vectors_aside import serve; serve(sys.argv[1], sys.argv[2])")
SEND = 1 << 20  # bytes of texts written to the child at a time


class Aside:
    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self._child = child

    @classmethod
    def start(cls, cache_dir: Path, index_path: Path, texts: Iterable[tuple[str, str]], count: int) -> Aside | None:
        """``count``: how many ``texts``; None too when the index already holds more memories
        (the vectors of those few are built after the index, without embedding the rest again)."""
        from quipu.index import embed

        if not launch.spare_processor() or embed.locate() is None or _indexed_count(index_path) > count:
            return None
        try:
            child = subprocess.Popen(launch.child_argv(BOOT, str(cache_dir), str(index_path)),
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     cwd="/", close_fds=True)
        except (OSError, ValueError, subprocess.SubprocessError):
            return None
        aside = cls(child)
        if not aside._send(texts):
            aside.close()
            return None
        return aside

    @property
    def pid(self) -> int:
        return self._child.pid

    def _send(self, texts: Iterable[tuple[str, str]]) -> bool:
        """Write every (id, text) framed, then end the child's input; False if it has gone."""
        sink = self._child.stdin
        assert sink is not None
        chunk = bytearray()
        try:
            for mid, text in texts:
                for part in (mid.encode("utf-8"), text.encode("utf-8", "replace")):
                    chunk += _LENGTH.pack(len(part))
                    chunk += part
                if len(chunk) >= SEND:
                    sink.write(chunk)
                    chunk.clear()
            sink.write(chunk)
            sink.close()
        except (OSError, ValueError):
            return False
        return True

    def wait(self) -> bool:
        """Wait for the child to end; whether it built the vectors."""
        return self._child.wait() == 0

    def close(self) -> None:
        """End the child at once: whatever it had not committed is rolled back."""
        launch.end_child(self._child)


def _read_texts(data: bytes) -> dict[str, str]:
    texts: dict[str, str] = {}
    at, end = 0, len(data)
    while at < end:
        parts = []
        for _ in range(2):
            (size,) = _LENGTH.unpack_from(data, at)
            at += _LENGTH.size
            parts.append(data[at:at + size].decode("utf-8"))
            at += size
        texts[parts[0]] = parts[1]
    return texts


def _read_only(index_path: Path, sql: str) -> list[tuple[str, ...]]:
    """The rows of ``sql`` in the index (none when it is missing or cannot be read)."""
    if not index_path.is_file():
        return []
    try:
        db = sqlite3.connect(f"{index_path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    except (OSError, sqlite3.Error):
        return []
    try:
        return db.execute(sql).fetchall()
    except sqlite3.Error:
        return []
    finally:
        db.close()


def _indexed_count(index_path: Path) -> int:
    rows = _read_only(index_path, "SELECT count(*) FROM memories")
    return int(rows[0][0]) if rows else 0


def _indexed(index_path: Path) -> dict[str, str]:
    """The texts of the memories the index already has."""
    return {mid: vectors.memory_text(*fields)
            for mid, *fields in _read_only(index_path, "SELECT id, title, aliases, tags, description, body FROM memories")}


def serve(cache_dir: str, index_path: str) -> None:
    """The child: the import's texts in, the store's vectors written; exits 0 once they are."""
    texts = _read_texts(sys.stdin.buffer.read())
    if not texts:
        raise SystemExit(1)
    every = _indexed(Path(index_path))
    every.update(texts)
    found = vectors.prebuild(Path(cache_dir), every)
    if found is None:
        raise SystemExit(1)
    _ = found.matrix  # the flat copy a search reads
    vectors.encoder(Path(cache_dir))  # and the tokenizer's copy a query is split with


__all__ = ["Aside", "serve"]
