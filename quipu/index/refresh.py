"""The incremental refresh: only the paths that differ between the indexed commit and HEAD.

``refresh_changed`` finds them by diffing the two trees (pygit2); ``apply_written`` takes them as
a write of this process made them (``quipu.store.gitstore.Landed``), with no git read at all."""
from __future__ import annotations

import sqlite3
import sys
from collections.abc import Mapping

from quipu.errors import FatalError
from quipu.index.derive import derive_state
from quipu.index.rebuild import write_meta
from quipu.index.schema import (
    COLUMNS,
    FTS_COLUMNS,
    delete_row,
    indexable_memory,
    is_memory_path,
    memory_id_of_event,
    memory_row,
    note_changed_row,
    optimize_fts,
    read_meta,
)
from quipu.prompt.stem import TOKENIZE
from quipu.store.safepath import LINK_MODE
from quipu.store.store import Store

OPTIMIZE_AFTER_ROWS = 200  # rows an incremental refresh changed since the FTS5 index was last merged


def refresh_changed(store: Store, db: sqlite3.Connection, indexed: str | None, head: str | None) -> int | None:
    """Apply the tree difference between ``indexed`` and ``head``; None means rebuild instead."""
    if not indexed or not head:
        return None
    import pygit2

    repo = store.repo
    try:
        old_tree = repo[indexed].peel(pygit2.Tree)
        new_tree = repo[head].peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    deltas = list(old_tree.diff_to_tree(new_tree).deltas)
    changes: list[tuple[str | None, str | None, bytes]] = []
    for delta in deltas:
        removed = delta.status_char() == "D" or delta.new_file.mode == LINK_MODE  # a symlink is not read
        gone = delta.old_file.path if removed or delta.status_char() == "R" else None
        data = b"" if removed else repo[delta.new_file.id].data  # type: ignore[attr-defined]
        changes.append((gone, None if removed else delta.new_file.path, data))
    return _apply(store, db, head, changes)


def apply_written(store: Store, db: sqlite3.Connection, head: str, written: Mapping[str, bytes | None]) -> int:
    """Apply the files a write set (bytes) or removed (None) to an index at the write's parent."""
    return _apply(store, db, head, [(rel, None, b"") if data is None else (None, rel, data)
                                    for rel, data in written.items()])


def _apply(store: Store, db: sqlite3.Connection, head: str, changes: list[tuple[str | None, str | None, bytes]]) -> int:
    """Apply (path removed, path set, its bytes) changes and move the index to ``head``."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if read_meta(db).get("head") == head:  # another process refreshed while we waited
            db.execute("COMMIT")
            return 0
        affected: set[str] = set()
        _start_changed_terms(db)
        for gone, rel, data in changes:
            if gone is not None:
                forget_path(db, gone, affected)
            if rel is not None:
                apply_change(db, rel, data, affected)
        if affected:
            derive_state(db, affected)
        note_fts_changes(db, _recount_changed_terms(db))
        write_meta(db, store, head)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return len(changes)


def forget_path(db: sqlite3.Connection, rel: str, affected: set[str]) -> None:
    if rel.startswith("memories/"):
        old = db.execute("SELECT rowid, id, supersedes FROM memories WHERE path = ?", (rel,)).fetchone()
        if old:
            delete_row(db, old[0])
            affected.add(old[1])
            affected.update(old[2].split())
        db.execute("DELETE FROM problems WHERE path = ?", (rel,))
    elif (mid := memory_id_of_event(rel)) is not None:
        db.execute("DELETE FROM events WHERE memory = ? AND name = ?", (mid, rel.rsplit("/", 1)[1]))
        affected.add(mid)


def _start_changed_terms(db: sqlite3.Connection) -> None:
    """Two scratch FTS5 tables (the index's tokenizer) that collect the text of every row an
    incremental refresh removes and adds, so that term_df moves by exactly their terms."""
    cols = ", ".join(FTS_COLUMNS)
    for side in ("removed", "added"):
        db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{side}_text USING fts5({cols}, tokenize='{TOKENIZE}')")
        db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{side}_vocab USING fts5vocab(temp, {side}_text, 'row')")
        db.execute(f"DELETE FROM temp.{side}_text")


def _recount_changed_terms(db: sqlite3.Connection) -> int:
    """Move term_df by the documents removed and added since ``_start_changed_terms`` (each
    term's count of noted rows, from fts5vocab over the scratch tables: no posting list of the
    index is read); returns how many rows were noted."""
    rows = sum(db.execute(f"SELECT count(*) FROM temp.{side}_text").fetchone()[0] for side in ("removed", "added"))
    db.execute(
        "INSERT INTO term_df(term, df) SELECT term, doc FROM temp.added_vocab WHERE true"
        " ON CONFLICT(term) DO UPDATE SET df = df + excluded.df"
    )
    db.execute(
        "UPDATE term_df SET df = df - (SELECT doc FROM temp.removed_vocab AS r WHERE r.term = term_df.term)"
        " WHERE term IN (SELECT term FROM temp.removed_vocab)"
    )
    db.execute("DELETE FROM term_df WHERE df <= 0")
    for side in ("removed", "added"):
        db.execute(f"DELETE FROM temp.{side}_text")
    return int(rows)


def note_fts_changes(db: sqlite3.Connection, rows: int) -> None:
    """Count rows changed since the last optimize; past OPTIMIZE_AFTER_ROWS, optimize again."""
    row = db.execute("SELECT value FROM meta WHERE key = 'fts_changes'").fetchone()
    total = (int(row[0]) if row and str(row[0]).isdigit() else 0) + rows
    if total >= OPTIMIZE_AFTER_ROWS:
        optimize_fts(db)
    else:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('fts_changes', ?)", (str(total),))


def apply_change(db: sqlite3.Connection, rel: str, data: bytes, affected: set[str]) -> None:
    if is_memory_path(rel):
        old = db.execute("SELECT rowid, id, supersedes FROM memories WHERE path = ?", (rel,)).fetchone()
        if old:
            delete_row(db, old[0])
            affected.add(old[1])
            affected.update(old[2].split())
        try:
            memory = indexable_memory(data, rel)
            row = memory_row(memory, rel)
        except FatalError as exc:
            db.execute("INSERT OR REPLACE INTO problems VALUES (?, ?)", (rel, str(exc)))
            print(f"quipu: skipped {exc}", file=sys.stderr)
            return
        db.execute("DELETE FROM problems WHERE path = ?", (rel,))
        placeholders = ", ".join(f":{c}" for c in COLUMNS)
        cur = db.execute(f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({placeholders})", row)
        cols = ", ".join(FTS_COLUMNS)
        db.execute(
            f"INSERT INTO memory_fts(rowid, {cols}) SELECT rowid, {cols} FROM memories WHERE rowid = ?",
            (cur.lastrowid,),
        )
        assert cur.lastrowid is not None  # an INSERT's row
        note_changed_row(db, cur.lastrowid, "added")
        affected.add(memory.id)
        affected.update(memory.supersedes)
    elif (mid := memory_id_of_event(rel)) is not None:
        db.execute(
            "INSERT OR REPLACE INTO events VALUES (?, ?, ?)",
            (mid, rel.rsplit("/", 1)[1], data.decode("utf-8", "replace")),
        )
        affected.add(mid)
