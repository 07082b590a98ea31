"""The history index: SQLite FTS5 over the archived turns plus one vector per turn; a cache.

Files, beside the archive: ``index.sqlite`` and ``vectors.i16``: one row of ``WIDTH`` 16-bit
integers per turn, its unit vector's ``embed.DIM`` numbers over the row's scale, rounded, then the
scale's float32 (the row's largest magnitude over ``LEVEL``). Row ``id - 1`` belongs to the turn
with that rowid, so a search reads the whole matrix with one memory map
(``similarities``: 100,000 turns in about 10 ms). Half of float32's bytes, and a rounding of at most
1/65,534 of a row's largest number: on LoCoMo's 1,982 questions the history search gave the same
hits as with float32, in the same order but for one near tie (see docs/history.md).

Contract:
- Built only from the archive: ``rebuild`` recreates both files from ``archive.all_turns`` (or
  the turns a first backfill archives as it goes); ``upsert`` and ``delete`` keep them in step
  with each archive write, under the archive lock. A rebuild of more than one batch, where
  ``apart.usable``, embeds here and writes in a child process (``apart.taken``): the same files.
- The FTS5 table uses the memory index's tokenizer (``quipu.prompt.stem.TOKENIZE``), so words match
  the same way in both. Rowids are never reused (``AUTOINCREMENT``): a replaced or deleted turn's
  vector row is zeroed, and a zero vector matches nothing.
- Deleting is for good: ``secure_delete`` zeroes freed pages, the FTS5 segments are merged
  ("optimize") so no old segment keeps a forgotten word, and vector rows are overwritten.
- The embedding is optional: without wordllama the index is lexical only and says so
  (``meta.vectors = 'none'``); ``quipu history index --rebuild`` adds vectors later.
"""
from __future__ import annotations

import itertools
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from quipu.index.rebuild import gc_paused
from quipu.index.schema import discard_leftovers
from quipu.history import apart
from quipu.history.archive import Layout, Turn, all_turns
from quipu.prompt.stem import TOKENIZE

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from quipu.index import embed

SCHEMA_VERSION = "3"  # 2: the agent each turn came from; 3: vectors as int16 and a scale (vectors.i16)
_BATCH = 4096
LEVEL = 32767  # a row's largest magnitude, as stored (the int16 maximum)
DIM = 256  # numbers of a vector: embed.DIM, which is imported with numpy when first needed (a test checks)
_SLICE = 1024  # rows of ``similarities``' buffer: 1 MB (4 MB took 20 times as long on a 2-core machine)
WIDTH = DIM + 2  # int16 of one turn's vector: its DIM numbers, then the two halves of its float32 scale
ROW = WIDTH * 2  # its bytes
OLD_VECTORS = "vectors.f32"  # float32 rows, before schema 3: removed when the index is rebuilt

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
        from quipu.index import embed

        files = embed.locate()
        db.execute("BEGIN")
        db.executemany("INSERT INTO meta VALUES (?, ?)",
                       [("schema", SCHEMA_VERSION), ("vectors", embed.NAME if files else "none"),
                        ("dim", str(DIM))])
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
            from quipu.index import embed

            files = embed.locate()
            if files is None:
                self._vectors_on = False
                return None
            self._embedder = embed.Embedder.load(files, bulk=self._bulk)
        return self._embedder

    def upsert(self, turns: Sequence[Turn], vectors_path: Path | None = None,
               rows: npt.NDArray[np.int16] | None = None) -> None:
        """Insert or replace ``turns`` (by key), in batches, each batch one transaction; into a
        fresh index (a rebuild), every batch goes into one transaction that ``commit`` ends.
        ``rows``: the turns' vectors as stored (``encode``), made already (one batch of turns,
        each key once)."""
        path = vectors_path or self.layout.vectors
        for start in range(0, len(turns), _BATCH):
            batch = list({t.key: t for t in turns[start:start + _BATCH]}.values())  # a key once: its last version
            if rows is not None and len(batch) != len(turns):
                raise ValueError("vectors made already are for one batch of turns, each key once")
            if self._fresh:  # one transaction for all; a key read again (a session in two files) replaces its row
                if not self.db.in_transaction:
                    self.db.execute("BEGIN IMMEDIATE")
                again = [self._ids[t.key] for t in batch if t.key in self._ids]
                if again:
                    self._delete_rows(self.db.execute("SELECT id, text FROM turns WHERE id IN (SELECT value FROM "
                                                      "json_each(?))", (json.dumps(again),)).fetchall())
                _zero_rows(path, again)
                self._insert(batch, path, rows)
                continue
            self.db.execute("BEGIN IMMEDIATE")
            try:
                stale = self._delete_keys([t.key for t in batch])
                self._insert(batch, path, rows)
                _zero_rows(path, stale)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _insert(self, batch: list[Turn], path: Path, rows: npt.NDArray[np.int16] | None = None) -> None:
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
        if rows is not None:
            _write_encoded(path, ids, rows)
            return
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
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    scale = np.abs(matrix).max(axis=1, initial=0.0) / np.float32(LEVEL)
    out = np.empty((len(matrix), WIDTH), dtype="<i2")
    out[:, :DIM] = np.rint(matrix / np.where(scale > 0, scale, np.float32(1.0))[:, None])  # |n| <= LEVEL
    out[:, DIM:] = scale.astype("<f4").view("<i2").reshape(-1, 2)  # the scale's own bytes
    return out


def similarities(path: Path, query: npt.NDArray[np.float32], rows: int) -> npt.NDArray[np.float32]:
    """The dot product of ``query`` with each of the first ``rows`` vectors of the file at
    ``path``: ``_SLICE`` rows at a time widened into one float32 buffer that stays in the cache
    and multiplied there (the scales' columns by zero), then each row's sum by its scale. A
    float32 copy of the whole file, or of slices of megabytes, costs more than the product."""
    import numpy as np

    matrix = np.memmap(path, dtype="<i2", mode="r", shape=(rows, WIDTH))
    q = np.zeros(WIDTH, dtype=np.float32)
    q[:DIM] = query
    out = np.empty(rows, dtype=np.float32)
    buffer = np.empty((min(_SLICE, rows), WIDTH), dtype=np.float32)
    for start in range(0, rows, _SLICE):
        part = matrix[start:start + _SLICE]
        widened = buffer[:len(part)]
        np.copyto(widened, part)
        np.matmul(widened, q, out=out[start:start + len(part)])
    out *= np.ascontiguousarray(matrix[:, DIM:]).view("<f4")[:, 0]
    return out


def _write_rows(path: Path, ids: Sequence[int], rows: object) -> None:
    _write_encoded(path, ids, encode(rows))


def _write_encoded(path: Path, ids: Sequence[int], matrix: npt.NDArray[np.int16]) -> None:
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
    child process (``apart.taken``) while this one goes on making them."""
    layout.root.mkdir(parents=True, exist_ok=True)
    tmp_index = layout.index.with_name(layout.index.name + ".new")
    tmp_vectors = layout.vectors.with_name(layout.vectors.name + ".new")
    for p in (tmp_index, tmp_vectors, *(tmp_index.with_name(tmp_index.name + end) for end in ("-journal", "-wal"))):
        p.unlink(missing_ok=True)  # what a killed rebuild left
    with gc_paused():
        source = iter(all_turns(layout, progress) if turns is None else turns)
        first = list(itertools.islice(source, _BATCH))
        batches = itertools.chain([first], _batches(source))
        if len(first) == _BATCH and apart.usable():
            count = _write_apart(layout, tmp_index, tmp_vectors, batches)
        else:
            count = _write(layout, tmp_index, tmp_vectors, ((batch, None) for batch in batches))
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


def _write(layout: Layout, path: Path, vectors: Path,
           batches: Iterable[tuple[Sequence[Turn], npt.NDArray[np.int16] | None]]) -> int:
    """A new index at ``path`` (and its vectors) of every turn of ``batches`` (each with its
    vectors as stored, when made already); their number."""
    writer = Writer.create(path, layout)
    count = 0
    try:
        for batch, rows in batches:
            writer.upsert(batch, vectors, rows)
            count += len(batch)
        writer.commit()
    finally:
        writer.close()
    return count


def _write_apart(layout: Layout, path: Path, vectors: Path, batches: Iterable[Sequence[Turn]]) -> int:
    """``_write`` by a child process (``apart.taken``) while this one goes on making the turns and
    embeds each batch (the two halves of the work, each on a core); the child renames nothing, so
    a run stopped here leaves no index in place. Returns the number of turns."""
    count = 0

    def sent() -> Iterator[tuple[list[tuple[object, ...]], npt.NDArray[np.int16] | None]]:
        nonlocal count
        # Loaded once the child is forked: it is then forked from a process with one thread
        # (numpy's import starts the threads of its linear algebra library).
        from quipu.index import embed

        files = embed.locate()
        embedder = embed.Embedder.load(files, bulk=True) if files is not None else None
        for batch in batches:
            count += len(batch)
            once = list({t.key: t for t in batch}.values())  # a key once: its last version, as upsert does
            rows = encode(embedder.many([t.text for t in once])) if embedder is not None else None
            yield list(map(tuple, once)), rows  # plain tuples: a third of the pickling

    def take(received: Iterator[tuple[list[tuple[object, ...]], npt.NDArray[np.int16] | None]]) -> None:
        _write(layout, path, vectors, ((list(map(Turn._make, batch)), rows) for batch, rows in received))

    apart.taken(take, sent())
    return count


def open_writer(layout: Layout, *, bulk: bool = False) -> Writer:
    """A writer on the current index, rebuilding it first when it is missing or of another
    schema. The caller holds the archive lock."""
    if not is_current(layout):
        rebuild(layout)
    return Writer(layout, bulk=bulk)
