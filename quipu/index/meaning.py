"""Meaning search for a long-lived server (the MCP server, the viewer): the encoder and the store's
vectors kept between calls.

Contract:
- Nothing here is imported at the server's start beyond the standard library: numpy, the
  encoder and the vectors load at the first ``nearest`` call.
- The vectors are brought up to the index (``vectors.ensure_vectors``) only when the index may
  have changed (the server reopened it: HEAD moved or the file was replaced) or the vectors file
  changed under the server; a call where neither happened costs no sync. The vectors read into
  memory are kept, and read again only when a sync embedded or removed something, or the file
  changed since the last sync (another process synced it first).
- The encoder is loaded once. When the embedding is not installed, or the vectors cannot be kept
  this time, ``nearest`` returns None and search runs on words alone.
- Calls may come from any thread (the server runs each on a worker thread of its pool): the
  kept state is read and changed under one lock, and the search ``nearest`` returns holds it
  too, so the kept vectors are read by one thread at a time.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

    from quipu.index.deep import Nearest


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


@dataclass
class Meaning:
    vectors: Any = None  # the kept ``vectors.Vectors``
    syncs: int = 0  # how many times they were brought up to the index
    _encoder: Any = None
    _synced: tuple[object, tuple[int, int, int] | None] | None = None  # (index key, vectors file) last synced
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def nearest(self, cache_dir: Path, db: sqlite3.Connection, key: object) -> Nearest | None:
        """Meaning search over the vectors of the index ``db``, or None (words alone). ``key``
        names the index's state (it changes when the index may have): with the same key and an
        untouched vectors file, the kept vectors answer without a sync."""
        with self._lock:
            return self._nearest(cache_dir, db, key)

    def _nearest(self, cache_dir: Path, db: sqlite3.Connection, key: object) -> Nearest | None:
        from quipu.index import vectors

        path = cache_dir / vectors.FILE_NAME
        if self.vectors is None or self._synced != (key, _stamp(path)):
            synced = vectors.ensure_vectors(cache_dir, db)
            self.syncs += 1
            if synced is None:
                self._synced = None
                return None
            stamp = _stamp(path)
            last = self._synced[1] if self._synced is not None else None
            if self.vectors is None or synced.embedded or synced.removed or stamp != last:
                self.vectors = synced  # its rows are read at the first search
            self._synced = (key, stamp)
        if self._encoder is None:
            self._encoder = vectors.encoder(cache_dir)
            if self._encoder is None:  # pragma: no cover - ensure_vectors checked it
                return None
        kept, encoder = self.vectors, self._encoder

        def nearest(query: str, depth: int, centred: bool) -> Sequence[tuple[str, float]]:
            with self._lock:
                return vectors.nearest(kept, kept.embed(encoder, query), depth, centred)

        return nearest
