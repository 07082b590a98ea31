"""The history index: SQLite FTS5 over the archived turns plus one vector per turn; a cache.

Files, beside the archive: ``index.sqlite`` and ``vectors.i16``: one row of ``WIDTH`` 16-bit
integers per turn, its unit vector's ``embed.DIM`` numbers over the row's scale, rounded, then the
scale's float32 (the row's largest magnitude over ``LEVEL``). Row ``id - 1`` belongs to the turn
with that rowid, so a search reads the whole matrix with one memory map, in slices
(``similarities``: 100,000 turns in about 10 ms). Half of float32's bytes, and a rounding of at most
1/65,534 of a row's largest number: on LoCoMo's 1,982 questions the history search gave the same
hits as with float32, in the same order but for one near tie (see docs/history.md).

Contract:
- Built only from the archive: ``rebuild`` recreates both files from ``archive.all_turns``;
  ``upsert`` and ``delete`` keep them in step with each archive write, under the archive lock.
- The FTS5 table uses the memory index's tokenizer (``quipu.prompt.stem.TOKENIZE``), so words match
  the same way in both. Rowids are never reused (``AUTOINCREMENT``): a replaced or deleted turn's
  vector row is zeroed, and a zero vector matches nothing.
- Deleting is for good: ``secure_delete`` zeroes freed pages, the FTS5 segments are merged
  ("optimize") so no old segment keeps a forgotten word, and vector rows are overwritten.
- The embedding is optional: without wordllama the index is lexical only and says so
  (``meta.vectors = 'none'``); ``quipu history index --rebuild`` adds vectors later.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import pickle
import signal
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from quipu.index import embed
from quipu.index.rebuild import gc_paused
from quipu.index.schema import discard_leftovers
from quipu.history.archive import Layout, Turn, all_turns
from quipu.prompt.stem import TOKENIZE

SCHEMA_VERSION = "3"  # 2: the agent each turn came from; 3: vectors as int16 and a scale (vectors.i16)
_BATCH = 4096
LEVEL = 32767  # a row's largest magnitude, as stored (the int16 maximum)
WIDTH = embed.DIM + 2  # int16 of one turn's vector: its DIM numbers, then the two halves of its float32 scale
ROW = WIDTH * 2  # its bytes
OLD_VECTORS = "vectors.f32"  # float32 rows, before schema 3: removed when the index is rebuilt
# A rebuild of more than one batch is written by a forked child (``_write_apart``): on Linux only,
# where fork is safe for what the child uses (SQLite and numpy, opened anew in it).
_APART = sys.platform == "linux" and hasattr(os, "fork")
_SLICE = 8192  # rows read and widened at once by ``similarities`` (4 MB of int16, 8 MB of float32)

_DDL = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE turns(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    session TEXT NOT NULL,
    turn INTEGER NOT NULL,
    role TEXT NOT NULL,
    project TEXT NOT NULL,
    branch TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT 'claude',
    ts TEXT NOT NULL,
    text TEXT NOT NULL
);
-- External content: the text is stored once (in turns); the FTS table keeps only the index.
CREATE VIRTUAL TABLE turns_fts USING fts5(text, content='turns', content_rowid='id', tokenize='{TOKENIZE}');
"""
# Made once the rows are in (sorting them is faster than keeping the b-trees in step row by row).
_INDEXES = ("CREATE UNIQUE INDEX turns_key ON turns(key)", "CREATE INDEX turns_session ON turns(session, turn)",
            "CREATE INDEX turns_project ON turns(project)")


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA secure_delete = ON")
    return db


def is_current(layout: Layout) -> bool:
    if not layout.index.is_file():
        return False
    try:
        db = connect(layout.index)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return False
    return row is not None and row[0] == SCHEMA_VERSION


class Writer:
    """Writes turns into the index and the vector file (the caller holds the archive lock)."""

    def __init__(self, layout: Layout, *, bulk: bool = False, path: Path | None = None, fresh: bool = False) -> None:
        self.layout = layout
        self._fresh = fresh  # a new, empty index (a rebuild): no key can be there already
        self.db = connect(path or layout.index)
        if fresh:  # a new file, renamed into place only once complete: no page is written twice, none synced
            self.db.execute("PRAGMA cache_size = -262144")
            self.db.execute("PRAGMA synchronous = OFF")
        self._bulk = bulk
        self._embedder: embed.Embedder | None = None
        self._vectors_on = self._meta("vectors") not in (None, "none")
        self._next_id = 1
        self._ids: dict[str, int] = {}  # a fresh index's rows by key, until ``commit`` makes the key index

    @classmethod
    def create(cls, path: Path, layout: Layout) -> Writer:
        """A new, empty index at ``path``, recording whether it will hold vectors."""
        db = connect(path)
        db.execute("PRAGMA page_size = 16384")  # a quarter of the pages to write of 4 KB ones; a search reads few rows
        db.executescript(_DDL)
        files = embed.locate()
        db.execute("BEGIN")
        db.executemany("INSERT INTO meta VALUES (?, ?)",
                       [("schema", SCHEMA_VERSION), ("vectors", embed.NAME if files else "none"),
                        ("dim", str(embed.DIM))])
        db.execute("COMMIT")
        db.close()
        return cls(layout, bulk=True, path=path, fresh=True)

    def behind(self, on: bool | None = None) -> bool:
        """Whether the archive may hold turns this index lacks (a backfill marks it before it
        archives anything and clears it once every turn is indexed: a run stopped between the
        two leaves the mark, and the next one rebuilds). ``on``: set or clear the mark first."""
        if on is not None:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM meta WHERE key = 'behind'")
            if on:
                self.db.execute("INSERT INTO meta VALUES ('behind', '1')")
            self.db.execute("COMMIT")
        return self._meta("behind") is not None

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def embedder(self) -> embed.Embedder | None:
        if not self._vectors_on:
            return None
        if self._embedder is None:
            files = embed.locate()
            if files is None:
                self._vectors_on = False
                return None
            self._embedder = embed.Embedder.load(files, bulk=self._bulk)
        return self._embedder

    def upsert(self, turns: Sequence[Turn], vectors_path: Path | None = None) -> None:
        """Insert or replace ``turns`` (by key), in batches, each batch one transaction; into a
        fresh index (a rebuild), every batch goes into one transaction that ``commit`` ends."""
        path = vectors_path or self.layout.vectors
        for start in range(0, len(turns), _BATCH):
            batch = list({t.key: t for t in turns[start:start + _BATCH]}.values())  # a key once: its last version
            if self._fresh:  # one transaction for all; a key read again (a session in two files) replaces its row
                if not self.db.in_transaction:
                    self.db.execute("BEGIN IMMEDIATE")
                again = [self._ids[t.key] for t in batch if t.key in self._ids]
                if again:
                    self._delete_rows(self.db.execute("SELECT id, text FROM turns WHERE id IN (SELECT value FROM "
                                                      "json_each(?))", (json.dumps(again),)).fetchall())
                _zero_rows(path, again)
                self._insert(batch, path)
                continue
            self.db.execute("BEGIN IMMEDIATE")
            try:
                stale = self._delete_keys([t.key for t in batch])
                self._insert(batch, path)
                _zero_rows(path, stale)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _insert(self, batch: list[Turn], path: Path) -> None:
        if self._fresh:  # rowids follow on from the last one given
            first = self._next_id
            ids = list(range(first, first + len(batch)))
            self._next_id += len(batch)
            self._ids.update(zip((t.key for t in batch), ids, strict=True))
            self.db.executemany(
                "INSERT INTO turns(id, key, session, turn, role, project, branch, agent, ts, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(i, t.key, t.session, t.turn, t.role, t.project, t.branch, t.agent, t.ts, t.text)
                 for i, t in zip(ids, batch, strict=True)])
        else:
            last = int(self.db.execute("SELECT coalesce(max(id), 0) FROM turns").fetchone()[0])
            self.db.executemany(
                "INSERT INTO turns(key, session, turn, role, project, branch, agent, ts, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ((t.key, t.session, t.turn, t.role, t.project, t.branch, t.agent, t.ts, t.text) for t in batch))
            new_ids = dict(self.db.execute("SELECT key, id FROM turns WHERE id > ?", (last,)).fetchall())
            ids = [int(new_ids[t.key]) for t in batch]
        self.db.executemany("INSERT INTO turns_fts(rowid, text) VALUES (?, ?)",
                            zip(ids, (t.text for t in batch), strict=True))
        embedder = self.embedder()
        if embedder is not None:
            _write_rows(path, ids, embedder.many([t.text for t in batch]))

    def commit(self) -> None:
        """End the one transaction of a fresh index's writes, its indexes made and its full-text
        index merged (nothing to do otherwise)."""
        if self._fresh:
            if not self.db.in_transaction:
                self.db.execute("BEGIN IMMEDIATE")
            for statement in _INDEXES:
                self.db.execute(statement)
            self._ids.clear()
            self.optimize()  # merged in the same transaction: no page of it is journalled
            self.db.execute("COMMIT")
            self._fresh = False

    def _delete_keys(self, keys: Iterable[str]) -> list[int]:
        """Remove the rows of ``keys`` that are there, and their full-text entries (found with one
        query, however many keys)."""
        return self._delete_rows(self.db.execute("SELECT id, text FROM turns WHERE key IN (SELECT value FROM "
                                                 "json_each(?))", (json.dumps(list(keys)),)).fetchall())

    def _delete_rows(self, rows: Sequence[sqlite3.Row]) -> list[int]:
        """Remove ``rows`` (id, text) and their full-text entries; their ids."""
        self.db.executemany("INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', ?, ?)",
                            [(r["id"], r["text"]) for r in rows])
        self.db.executemany("DELETE FROM turns WHERE id = ?", [(r["id"],) for r in rows])
        return [int(r["id"]) for r in rows]

    def delete(self, keys: Iterable[str]) -> int:
        """Remove turns for good (see the module contract); returns how many rows went."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            gone = self._delete_keys(keys)
            _zero_rows(self.layout.vectors, gone)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        if gone:
            self.optimize()
        return len(gone)

    def optimize(self) -> None:
        self.db.execute("INSERT INTO turns_fts(turns_fts) VALUES ('optimize')")

    def close(self) -> None:
        self.db.close()


def encode(rows: object) -> npt.NDArray[np.int16]:
    """Unit vectors as stored, one row of ``WIDTH`` int16 each (see the module docstring); a zero
    vector is all zero."""
    matrix = np.asarray(rows, dtype=np.float32)
    scale = np.abs(matrix).max(axis=1, initial=0.0) / np.float32(LEVEL)
    out = np.empty((len(matrix), WIDTH), dtype="<i2")
    out[:, :embed.DIM] = np.rint(matrix / np.where(scale > 0, scale, np.float32(1.0))[:, None])  # |n| <= LEVEL
    out[:, embed.DIM:] = scale.astype("<f4").view("<i2").reshape(-1, 2)  # the scale's own bytes
    return out


def similarities(path: Path, query: npt.NDArray[np.float32], rows: int) -> npt.NDArray[np.float32]:
    """The dot product of ``query`` with each of the first ``rows`` vectors of the file at
    ``path``, slice by slice (each slice widened to float32 at once, its scales' columns
    multiplied by zero, then each row's sum by its scale)."""
    matrix = np.memmap(path, dtype="<i2", mode="r", shape=(rows, WIDTH))
    out = np.empty(rows, dtype=np.float32)
    q = np.zeros(WIDTH, dtype=np.float32)
    q[:embed.DIM] = query
    for start in range(0, rows, _SLICE):
        part = matrix[start:start + _SLICE]
        scale = np.ascontiguousarray(part[:, embed.DIM:]).view("<f4")[:, 0]
        np.multiply(part.astype(np.float32) @ q, scale, out=out[start:start + len(part)])
    return out


def _write_rows(path: Path, ids: Sequence[int], rows: object) -> None:
    matrix = encode(rows)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        # Rowids of one batch are consecutive: one write for the run, else one per row.
        if ids and ids[-1] - ids[0] == len(ids) - 1:
            os.pwrite(fd, matrix.data, (ids[0] - 1) * ROW)  # the array's own bytes, not a copy of them
        else:
            for i, row in zip(ids, matrix, strict=True):
                os.pwrite(fd, row.tobytes(), (i - 1) * ROW)
    finally:
        os.close(fd)


def _zero_rows(path: Path, ids: Iterable[int]) -> None:
    ids = list(ids)
    if not ids or not path.exists():
        return
    size = path.stat().st_size
    fd = os.open(path, os.O_RDWR)
    try:
        for i in ids:
            if (i - 1) * ROW < size:
                os.pwrite(fd, bytes(ROW), (i - 1) * ROW)
    finally:
        os.close(fd)


def rebuild(layout: Layout, turns: Iterable[Turn] | None = None,
            progress: Callable[[int, int], None] | None = None) -> int:
    """Recreate the index and the vector file from the archive (into temporary files, then
    renamed into place). The caller holds the archive lock. Returns the number of turns;
    ``progress(done, total)`` is told of each session file read from the archive.

    The file is new, so all of it is one transaction: rows, their full-text entries and vectors
    in batches (a key read again found in memory), then the indexes on the rows made and the
    full-text index merged ("optimize"). More than one batch of turns is written by a
    child process (``_write_apart``) while this one goes on reading them."""
    layout.root.mkdir(parents=True, exist_ok=True)
    tmp_index = layout.index.with_name(layout.index.name + ".new")
    tmp_vectors = layout.vectors.with_name(layout.vectors.name + ".new")
    for p in (tmp_index, tmp_vectors, *(tmp_index.with_name(tmp_index.name + end) for end in ("-journal", "-wal"))):
        p.unlink(missing_ok=True)  # what a killed rebuild left
    with gc_paused():
        source = iter(all_turns(layout, progress) if turns is None else turns)
        first = list(itertools.islice(source, _BATCH))
        batches = itertools.chain([first], _batches(source))
        if len(first) == _BATCH and _APART:
            count = _write_apart(layout, tmp_index, tmp_vectors, batches)
        else:
            count = _write(layout, tmp_index, tmp_vectors, batches)
    # A killed writer's journal beside an old file would be played into the new one: it goes first.
    discard_leftovers(layout.vectors)
    if tmp_vectors.exists():
        os.replace(tmp_vectors, layout.vectors)
    else:
        layout.vectors.unlink(missing_ok=True)
    discard_leftovers(layout.index)
    os.replace(tmp_index, layout.index)
    (layout.root / OLD_VECTORS).unlink(missing_ok=True)  # an index of schema 2's vectors, replaced
    return count


def _batches(source: Iterator[Turn]) -> Iterator[list[Turn]]:
    while batch := list(itertools.islice(source, _BATCH)):
        yield batch


def _write(layout: Layout, path: Path, vectors: Path, batches: Iterable[Sequence[Turn]]) -> int:
    """A new index at ``path`` (and its vectors) of every turn of ``batches``; their number."""
    writer = Writer.create(path, layout)
    count = 0
    try:
        for batch in batches:
            writer.upsert(batch, vectors)
            count += len(batch)
        writer.commit()
    finally:
        writer.close()
    return count


def _write_apart(layout: Layout, path: Path, vectors: Path, batches: Iterable[Sequence[Turn]]) -> int:
    """``_write`` in a forked child, fed the batches through a pipe as this process makes them
    (reading transcripts, redacting and archiving on one core; embedding and SQLite on the
    other). The child renames nothing: a parent that stops or is killed leaves no index in
    place, and the child, finding the pipe closed before the end mark, commits nothing. An
    error in the child is raised here."""
    import fcntl  # Linux only, as _APART

    rows_r, rows_w = os.pipe()
    done_r, done_w = os.pipe()
    with contextlib.suppress(OSError):  # a batch or two in flight: neither side waits on the other's every step
        fcntl.fcntl(rows_w, fcntl.F_SETPIPE_SZ, 1 << 20)
    pid = os.fork()
    if pid == 0:  # the child: it never returns
        status = 1
        try:
            os.close(rows_w)
            os.close(done_r)
            with open(rows_r, "rb") as feed:
                _write(layout, path, vectors, _received(feed))
            status = 0
        except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent, which raises it
            with contextlib.suppress(BaseException):
                _send_error(done_w, exc)
        finally:
            os._exit(status)
    os.close(rows_r)
    os.close(done_w)
    count = 0
    try:
        try:
            with open(rows_w, "wb") as out:
                for batch in batches:
                    pickle.dump(list(map(tuple, batch)), out, pickle.HIGHEST_PROTOCOL)
                    count += len(batch)
                pickle.dump(None, out)  # the end mark
        except BrokenPipeError:
            pass  # the child stopped: its report says why
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(done_r)
        raise
    with open(done_r, "rb") as fh:
        report = fh.read()
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if report:
        raise pickle.loads(report)  # noqa: S301 - written by this process's own child
    if status != 0:
        raise RuntimeError(f"the history index writer stopped with status {status}")
    return count


def _received(feed: BinaryIO) -> Iterator[list[Turn]]:
    """The batches the parent sends, until its end mark (``EOFError`` if it stopped before)."""
    while (batch := pickle.load(feed)) is not None:  # noqa: S301 - sent by this process's own parent
        yield list(map(Turn._make, batch))


def _send_error(fd: int, exc: BaseException) -> None:
    try:
        data = pickle.dumps(exc, pickle.HIGHEST_PROTOCOL)
        pickle.loads(data)  # noqa: S301 - just made: it must come back as it went
    except Exception:  # noqa: BLE001 - an exception that does not pickle goes as its text
        data = pickle.dumps(RuntimeError(f"the history index writer failed: {type(exc).__name__}: {exc}"))
    with open(fd, "wb") as out:
        out.write(data)


def open_writer(layout: Layout, *, bulk: bool = False) -> Writer:
    """A writer on the current index, rebuilding it first when it is missing or of another
    schema. The caller holds the archive lock."""
    if not is_current(layout):
        rebuild(layout)
    return Writer(layout, bulk=bulk)
