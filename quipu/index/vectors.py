"""Meaning vectors of the store's memories: a cache beside the full-text index, rebuilt from it.

Contract:
- ``<store>/.cache/vectors.sqlite`` holds one unit vector per memory (float32 bytes), keyed by
  memory id, and apart (``links``) the sha1 of the text that was embedded and the index rowid it
  was read from. It is derived state: deleting it loses nothing, the next search rebuilds it
  from the index (which is rebuilt from git).
- ``ensure_vectors(cache_dir, db)`` brings it up to the index ``db`` (a connection to a fresh
  index): a memory whose (id, rowid) pair has no vector is read and hashed, and embedded only when
  its text changed; vectors of memories no longer in the index are dropped. SQLite finds both
  across the two files (the index attached), so an unchanged store costs two queries. An
  incremental index refresh gives a changed memory a new rowid, so after one commit only that
  memory is read; a rebuilt index renumbers every row, and the text hashes keep anything
  unchanged from being embedded again (from ``RELINK_FROM`` rows on, SQLite compares them in one
  statement). A bulk import builds its vectors before its rows exist
  (``quipu.index.vectors_aside``); they are linked the same way.
- The encoder is the static embedding of ``quipu.index.embed`` (the same table and the same
  code as the past-conversation archive); when it is not installed, ``ensure_vectors`` returns
  None and search runs on words alone.
- A text's vector weighs each word piece by its rarity in this store (``quipu.index.sif``), where
  the archive weighs by the piece's id (a proxy for its frequency in Llama-2's training text).
  The counts are taken when every vector is built and kept with them; queries and incremental
  updates use the same counts, and every vector is built again (with new counts) once the store
  has halved or doubled since.
- ``nearest`` (from ``quipu.index.closeness``) ranks the memories by closeness to a query, plain
  or about the store's mean; a query is embedded in the first person (``first_person``).
- Writers serialise on the index lock's neighbour ``vectors.lock``; a store whose cache cannot be
  written gets no vectors (search then runs on words alone) rather than an error.
- ``vectors.sqlite`` records the index state it was last brought up to (the index's head and
  build time), so a search on an unchanged store skips even the two queries; and every change
  gives it a new random ``generation``.
- Reading every vector out of SQLite row by row costs more than the rest of a search, so the
  first search after a change writes them out once more as one flat file,
  ``vectors.matrix`` (a header line naming the generation, the ids, then float32 rows), and
  later searches read that file in one go. A file whose generation is not the database's is
  never used: it is written again. Commits never pay for it.
- numpy is imported here: this module is never on the prompt path.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from quipu.index import closeness
from quipu.index import matrix as matrix_file
from quipu.index import sif
from quipu.index.closeness import nearest
from quipu.index.sif import PIECES_NAME, SIF_A
from quipu.index.person import first_person
from quipu.store.locks import file_lock

if TYPE_CHECKING:
    from quipu.index.embed import Bag, Embedder, Pieces

FILE_NAME = "vectors.sqlite"
BATCH = 2_000  # memories embedded and written per transaction during a build
RECOUNT_FACTOR = 2.0  # the store grew or shrank this much since the counts: build every vector again
LAYOUT = "2"  # the tables' layout, stored with the model's name: a file of another is emptied

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pieces(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);  -- counts in the store
CREATE TABLE IF NOT EXISTS words(word TEXT PRIMARY KEY, ids BLOB NOT NULL) WITHOUT ROWID;  -- int32 pieces
-- float32 little-endian, unit length (all zero: no text), by memory id
CREATE TABLE IF NOT EXISTS vectors(id TEXT PRIMARY KEY, vec BLOB NOT NULL);
-- each vector's index rowid its text was read from, and the sha1 of that text: apart from the
-- vectors, so linking 100,000 of them to new rows rewrites a narrow table
CREATE TABLE IF NOT EXISTS links(id TEXT PRIMARY KEY, src INTEGER NOT NULL, sha TEXT NOT NULL) WITHOUT ROWID;
"""

Matrix = npt.NDArray[np.float32]


class Vectors:
    """Every memory's vector (rows in ``ids`` order, read on first use), and how the last sync
    went. Not guarded: a keeper shared by threads reads it under its own lock (``quipu.mcp.meaning``)."""

    def __init__(self, path: Path, model: str, embedded: int, removed: int, generation: str = "") -> None:
        self.path = path
        self.model = model
        self.embedded = embedded  # memories embedded by this sync
        self.removed = removed  # vectors dropped by this sync
        self.generation = generation  # the database's, when this sync ended
        self._ids: list[str] = []
        self._matrix: Matrix | None = None
        self._centre: closeness.Centre | None = None

    def _read(self) -> None:
        matrix_path = self.path.with_name(matrix_file.FILE_NAME)
        flat = matrix_file.read(matrix_path, self.generation) if self.generation else None
        if flat is None:
            db = _connect(self.path)
            try:
                db.execute("BEGIN")
                generation = sif.meta_text(db, "generation")
                rows = db.execute("SELECT id, vec FROM vectors ORDER BY id").fetchall()
                db.execute("COMMIT")
            finally:
                db.close()
            dim = len(rows[0][1]) // 4 if rows else 0
            flat = ([r[0] for r in rows],
                    np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim))
            if generation:
                matrix_file.write(matrix_path, generation, *flat)
        self._ids, self._matrix = flat

    @property
    def ids(self) -> list[str]:
        if self._matrix is None:
            self._read()
        return self._ids

    @property
    def matrix(self) -> Matrix:
        if self._matrix is None:
            self._read()
        assert self._matrix is not None
        return self._matrix

    @property
    def centre(self) -> closeness.Centre:
        """What every memory of the store shares (``quipu.index.closeness``), kept for the next query."""
        if self._centre is None:
            self._centre = closeness.Centre.of(self.matrix)
        return self._centre

    def embed(self, encoder: Embedder, text: str) -> npt.NDArray[np.float32]:
        """``text``'s vector, weighed by the same counts as the memories' (and tokenized with
        the words the build already split, so a query reads few merge ranks)."""
        text = first_person(text)
        db = _connect(self.path)
        try:
            sif.prime(encoder.pieces, db, text.split())
            weights = sif.weights(db, encoder.rows, encoder.pieces.text(text))
        finally:
            db.close()
        return encoder.weighed(weights).one(text)  # the encoder itself is left as it is (it may be shared)


def memory_text(title: str, aliases: str, tags: str, description: str, body: str) -> str:
    """The text a memory is embedded from: what it is about first, then its body."""
    return "\n".join(part for part in (title, aliases, tags, description, body) if part)


def _sha(text: str) -> str:
    import hashlib  # only when texts are embedded: a search on unchanged vectors never pays for it (3 ms)
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


def encoder(cache_dir: Path) -> Embedder | None:
    """The static embedding for queries, or None when it is not installed: it reads the
    tokenizer's merge ranks from a small SQLite copy in the cache (``pieces.sqlite``), never the
    whole tokenizer file."""
    from quipu.index import embed

    files = embed.locate()
    if files is None:
        return None
    pieces = embed.pieces_db(cache_dir / PIECES_NAME, files.tokenizer)
    return embed.Embedder.load(files, embed.Pieces.from_db(pieces))


def model_name() -> str:
    from quipu.index import embed

    return f"{embed.NAME}-sif-{SIF_A:g}"


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=30, isolation_level=None)
    db.execute("PRAGMA busy_timeout = 30000")
    # A cache: a file a crash left damaged is dropped and built again (``_open``), so no fsync.
    db.execute("PRAGMA synchronous = OFF")
    return db


def _open(path: Path, model: str) -> sqlite3.Connection:
    """The vectors file, emptied when it was made by another model or cannot be read."""
    try:
        db = _connect(path)
        db.executescript(SCHEMA)
        row = db.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
        if row is not None and row[0] == f"{model} {LAYOUT}":
            return db
        db.executescript("DROP TABLE vectors; DROP TABLE links;" + SCHEMA)  # another model or layout
        db.execute("DELETE FROM meta WHERE key IN ('synced', 'generation')")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('model', ?)", (f"{model} {LAYOUT}",))
        return db
    except sqlite3.DatabaseError:  # its journal goes too: never played into the new file
        remove(path.parent)
        db = _connect(path)
        db.executescript(SCHEMA)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('model', ?)", (f"{model} {LAYOUT}",))
        return db


def ensure_vectors(cache_dir: Path, index_db: sqlite3.Connection) -> Vectors | None:
    """Vectors for every memory of ``index_db``, updated incrementally (see the module contract);
    None when the embedding is not installed or the cache cannot be written."""
    from quipu.index import embed

    if embed.locate() is None:
        return None
    model = model_name()
    path = cache_dir / FILE_NAME
    try:
        with file_lock(cache_dir / "vectors.lock"):
            db = _open(path, model)
            try:
                return _sync(db, cache_dir, index_db, model)
            finally:
                db.close()
    except sqlite3.OperationalError:  # locked, read-only, full: words alone this time
        return None
    except sqlite3.DatabaseError:  # damaged under us: dropped, built again by the next search
        remove(cache_dir)
        return None
    except OSError:
        return None


def _index_mark(index_db: sqlite3.Connection) -> str:
    """What identifies the index's state: the commit it is at and when it was last written."""
    meta = dict(index_db.execute("SELECT key, value FROM meta WHERE key IN ('head', 'built_at', 'count')"))
    return f"{meta.get('head', '')} {meta.get('built_at', '')} {meta.get('count', '')}" if meta else ""


def _main_file(db: sqlite3.Connection) -> str:
    return next(str(row[2]) for row in db.execute("PRAGMA database_list") if row[1] == "main")


def _shas(db: sqlite3.Connection, ids: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for chunk in range(0, len(ids), 500):
        part = ids[chunk:chunk + 500]
        out += db.execute(f"SELECT id, sha FROM links WHERE id IN ({', '.join('?' * len(part))})", part).fetchall()
    return out


_TEXT_SQL = "SELECT id, rowid, title, aliases, tags, description, body FROM memories"


_STALE_SQL = "SELECT m.id, m.rowid FROM idx.memories m LEFT JOIN links v ON v.id = m.id WHERE v.src IS NOT m.rowid"
RELINK_FROM = 1_000  # memories without their vector linked from which SQLite links them in one statement


def _relink(db: sqlite3.Connection) -> None:
    """Link each vector of the text its memory's row holds now to that row (index attached)."""
    db.create_function("memory_sha", 5, lambda *fields: _sha(memory_text(*fields)), deterministic=True)
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE links SET src = m.rowid FROM idx.memories m WHERE m.id = links.id"
               " AND links.src IS NOT m.rowid AND links.sha = memory_sha(m.title, m.aliases, m.tags,"
               " m.description, m.body)")
    db.execute("COMMIT")


def _sync(db: sqlite3.Connection, cache_dir: Path, index_db: sqlite3.Connection, model: str) -> Vectors:
    from quipu.index import embed

    files = embed.locate()
    assert files is not None  # checked by ensure_vectors
    table = embed.load_table(files.weights)
    count = int(index_db.execute("SELECT count(*) FROM memories").fetchone()[0])
    counted = sif.meta_int(db, "counted_memories")
    recount = not counted or not (counted / RECOUNT_FACTOR <= count <= counted * RECOUNT_FACTOR)
    mark = _index_mark(index_db)
    generation = sif.meta_text(db, "generation")
    if not recount and mark and generation and sif.meta_text(db, "synced") == mark:
        return Vectors(cache_dir / FILE_NAME, model, 0, 0, generation)  # nothing changed since
    pieces: Pieces | None = None
    bag: Bag | None = None
    texts: dict[str, tuple[int, str]] = {}
    if recount and count:
        texts = {mid: (rowid, memory_text(*fields)) for mid, rowid, *fields in index_db.execute(_TEXT_SQL)}
        pieces = sif.pieces_for(cache_dir, count > 200)
        db.execute("BEGIN IMMEDIATE")
        bag = sif.recount(db, texts, pieces)
        generation = _new_generation(db)
        db.execute("COMMIT")
    # What changed, found by SQLite across the two files: memories whose (id, rowid) pair has no
    # vector, and vectors whose memory is gone.
    db.execute("ATTACH DATABASE ? AS idx", (_main_file(index_db),))
    try:
        stale = dict(db.execute(_STALE_SQL).fetchall())
        if len(stale) >= RELINK_FROM and sqlite3.sqlite_version_info >= (3, 33):
            _relink(db)  # many rows renumbered (a rebuild) or vectors built before their rows
            stale = dict(db.execute(_STALE_SQL).fetchall())
        gone = [r[0] for r in db.execute("SELECT id FROM links WHERE id NOT IN (SELECT id FROM idx.memories)")]
    finally:
        db.execute("DETACH DATABASE idx")
    known = {mid: sha for mid, sha in _shas(db, list(stale))}
    embedded = 0
    if not stale and not gone:
        db.execute("BEGIN IMMEDIATE")
        generation = generation or _new_generation(db)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('synced', ?)", (mark,))
        db.execute("COMMIT")
        return Vectors(cache_dir / FILE_NAME, model, 0, 0, generation)
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany("DELETE FROM vectors WHERE id = ?", ((m,) for m in gone))
        db.executemany("DELETE FROM links WHERE id = ?", ((m,) for m in gone))
        todo: list[tuple[str, int, str, str]] = []
        if not texts:
            rows = list(stale.values())
            for chunk in range(0, len(rows), 500):
                part = rows[chunk:chunk + 500]
                sql = f"{_TEXT_SQL} WHERE rowid IN ({', '.join('?' * len(part))})"
                texts.update((mid, (rowid, memory_text(*fields))) for mid, rowid, *fields in index_db.execute(sql, part))
        linked: list[tuple[int, str]] = []  # a vector of the same text, kept and linked to its row
        for mid in stale:
            if mid not in texts:
                continue
            rowid, text = texts[mid]
            sha = _sha(text)
            if known.get(mid) == sha:
                linked.append((rowid, mid))
            else:
                todo.append((mid, rowid, sha, text))
        db.executemany("UPDATE links SET src = ? WHERE id = ?", linked)
        if todo:
            many = len(todo) > 200
            if pieces is None:
                pieces = sif.pieces_for(cache_dir, many)
                sif.prime(pieces, db, [w for t in todo for w in t[3].split()])
            if many:  # each distinct word's rows added up once (``embed.Bag``)
                enc = embed.Embedder(table, pieces, bulk=True, weights=sif.weights(db, int(table.shape[0])))
                if bag is None:  # no recount: the bag of these texts alone
                    bag = embed.Bag.of([t[3] for t in todo], pieces)
                    number = {t[0]: n for n, t in enumerate(todo)}
                else:  # the recount's bag, in ``texts`` order
                    number = {mid: n for n, mid in enumerate(texts)}
                vectors_of = _of_bag(enc, bag, number)
            else:
                lists = {t[0]: pieces.text(t[3]) for t in todo}
                weights = sif.weights(db, int(table.shape[0]), [p for ids in lists.values() for p in ids])
                enc = embed.Embedder(table, pieces, weights=weights)

                def vectors_of(batch: list[tuple[str, int, str, str]]) -> Matrix:
                    return enc.many([t[3] for t in batch], [lists[t[0]] for t in batch])

            embedded = _write(db, todo, vectors_of)
        if gone or todo or not generation:
            generation = _new_generation(db)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('synced', ?)", (mark,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return Vectors(cache_dir / FILE_NAME, model, embedded, len(gone), generation)


_Todo = list[tuple[str, int, str, str]]  # (memory id, index rowid, sha1 of its text, its text)


def _of_bag(enc: Embedder, bag: Bag, number: dict[str, int]) -> Callable[[_Todo], Matrix]:
    """The vectors of a batch of texts from ``bag`` (a text's row: ``number`` of its memory id)."""
    words, rows = enc.word_rows(bag), bag.rows

    def vectors_of(batch: _Todo) -> Matrix:
        return enc.of_bag(words, [rows[number[t[0]]] for t in batch])
    return vectors_of


def _write(db: sqlite3.Connection, todo: _Todo, vectors_of: Callable[[_Todo], Matrix]) -> int:
    """Embed and store ``todo`` a batch at a time (inside the caller's transaction); how many."""
    for start in range(0, len(todo), BATCH):
        batch = todo[start:start + BATCH]
        matrix = vectors_of(batch)
        db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                       ((t[0], matrix[i].astype("<f4").tobytes()) for i, t in enumerate(batch)))
        db.executemany("INSERT OR REPLACE INTO links VALUES (?, ?, ?)", (t[:3] for t in batch))
    return len(todo)


def prebuild(cache_dir: Path, texts: Mapping[str, str]) -> Vectors | None:
    """Every vector of a store to be, before the index has its rows: ``texts`` (each memory id's
    ``memory_text``) counted afresh and embedded, each vector linked to no index row yet (``src``
    0), so the next ``ensure_vectors`` finds each by its text's hash and only links it to its row.
    None when the embedding is not installed or there is nothing to build."""
    from quipu.index import embed

    files = embed.locate()
    if files is None or not texts:
        return None
    model = model_name()
    path = cache_dir / FILE_NAME
    table = embed.load_table(files.weights)
    keyed = {mid: (0, text) for mid, text in texts.items()}
    with file_lock(cache_dir / "vectors.lock"):
        db = _open(path, model)
        try:
            pieces = sif.pieces_for(cache_dir, True)
            db.execute("BEGIN IMMEDIATE")
            try:
                bag = sif.recount(db, keyed, pieces)
                enc = embed.Embedder(table, pieces, bulk=True, weights=sif.weights(db, int(table.shape[0])))
                todo = [(mid, 0, _sha(text), text) for mid, (_rowid, text) in keyed.items()]
                embedded = _write(db, todo, _of_bag(enc, bag, {mid: n for n, mid in enumerate(keyed)}))
                generation = _new_generation(db)
                db.execute("DELETE FROM meta WHERE key = 'synced'")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        finally:
            db.close()
    return Vectors(path, model, embedded, 0, generation)


def _new_generation(db: sqlite3.Connection) -> str:
    """Mark the vectors as changed (inside the caller's transaction): a flat copy of another
    generation is never read again."""
    generation = os.urandom(8).hex()
    db.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (generation,))
    return generation


def remove(cache_dir: Path) -> None:
    """Drop the vectors file (``quipu index --rebuild`` rebuilds it on the next search)."""
    for name in (FILE_NAME, f"{FILE_NAME}-journal", f"{FILE_NAME}-wal", f"{FILE_NAME}-shm", matrix_file.FILE_NAME):
        with contextlib.suppress(OSError):
            os.unlink(cache_dir / name)


__all__: Sequence[str] = ["Vectors", "ensure_vectors", "prebuild", "nearest", "first_person", "encoder", "memory_text", "remove"]
