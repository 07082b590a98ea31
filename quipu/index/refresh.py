"""The incremental refresh: only the paths that differ between the indexed commit and HEAD.

``refresh_changed`` finds them by diffing the two trees (pygit2); ``apply_written`` takes them as
a write of this process made them (``quipu.store.gitstore.Landed``), with no git read at all."""
from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping

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
    optimize_fts,
    read_meta,
)
from quipu.prompt.stem import TOKENIZE
from quipu.store.gitobj import object_id
from quipu.store.safepath import LINK_MODE
from quipu.store.memory import Memory
from quipu.store.store import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OPTIMIZE_AFTER_ROWS = 200  # rows an incremental refresh changed since the FTS5 index was last merged


# (path, the memory its bytes were already read as or None, the bytes when asked: a diff of
# 100,000 files is never all in memory)
Landed = tuple[str, "Memory | None", Callable[[], bytes]]


def refresh_changed(store: Store, db: sqlite3.Connection, indexed: str | None, head: str | None,
                    known: Mapping[str, Memory] | None = None) -> int | None:
    """Apply the tree difference between ``indexed`` and ``head``, a batch at a time; None means
    rebuild instead. ``known``: memories already read from the blob of that id (a bulk writer
    parsed what it committed), not parsed again."""
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
    gone: list[str] = []
    landed: list[Landed] = []
    for delta in deltas:
        removed = delta.status_char() == "D" or delta.new_file.mode == LINK_MODE  # a symlink is not read
        if removed or delta.status_char() == "R":
            gone.append(delta.old_file.path)
        if not removed:
            oid = delta.new_file.id
            landed.append((delta.new_file.path, (known or {}).get(str(oid)),
                           lambda oid=oid: repo[oid].data))  # type: ignore[attr-defined,misc]
    return _apply(store, db, head, gone, landed, len(deltas))


def apply_written(store: Store, db: sqlite3.Connection, head: str, written: Mapping[str, bytes | None],
                  known: Mapping[str, Memory] | None = None) -> int:
    """Apply the files a write set (bytes) or removed (None) to an index at the write's parent;
    ``known`` as for ``refresh_changed``."""
    gone = [rel for rel, data in written.items() if data is None]
    landed: list[Landed] = [(rel, known.get(object_id("blob", data)) if known else None, lambda data=data: data)  # type: ignore[misc]
                            for rel, data in written.items() if data is not None]
    return _apply(store, db, head, gone, landed, len(written))


def _apply(store: Store, db: sqlite3.Connection, head: str, gone: list[str], landed: list[Landed], count: int) -> int:
    """Remove the rows of ``gone`` and of every path in ``landed``, index ``landed`` anew, and move
    the index to ``head``."""
    # No fsync (it was two thirds of an add's index update): the index is a cache of commits that
    # have landed. A process killed anywhere in this transaction leaves the file and its rollback
    # journal holding the index at its old commit, behind HEAD (no fsync is needed for that while
    # the machine runs); the next read takes the journal for a killed writer's and rebuilds from
    # git (tests/index_crash_test.py kills one at each step). A power loss may cut the last writes
    # short, as it may git's own loose objects and refs (quipu syncs neither): the stamp names the
    # boot, and the first read after a restart checks the file (``index._file_stamp``).
    db.execute("PRAGMA synchronous = OFF")
    db.execute("BEGIN IMMEDIATE")
    try:
        if read_meta(db).get("head") == head:  # another process refreshed while we waited
            db.execute("COMMIT")
            return 0
        affected: set[str] = set()
        _start_changed_terms(db)
        forget_paths(db, [*gone, *(rel for rel, _, _ in landed)], affected)
        # A write that at least doubles the rows (a bulk import): the terms are counted again from
        # the FTS5 index, as a rebuild counts them, instead of indexing its text a second time.
        recount = len(landed) >= db.execute("SELECT count(*) FROM memories").fetchone()[0]
        apply_changes(db, landed, affected, note_terms=not recount)
        if affected:
            derive_state(db, affected)
        if recount:
            optimize_fts(db)
            db.execute("DELETE FROM term_df")
            db.execute("INSERT INTO term_df SELECT term, doc FROM memory_vocab")
            _clear_changed_terms(db)  # the counts were taken whole: the removed rows' terms are out already
        else:
            note_fts_changes(db, _recount_changed_terms(db))
        write_meta(db, store, head)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return count


def forget_paths(db: sqlite3.Connection, paths: list[str], affected: set[str]) -> None:
    """Remove the rows of ``paths`` (a memory file or an event file), each found through an index:
    a row's path is always its id's path (``indexable_memory``), so its id is the file's name."""
    memory_paths = [rel for rel in paths if rel.startswith("memories/")]
    ids = {rel.rsplit("/", 1)[-1].removesuffix(".md"): rel for rel in memory_paths}
    found: list[tuple[int, str, str, str]] = []
    keys = list(ids)
    for chunk in range(0, len(keys), 500):  # 500 ids a statement, each found through the id's index
        part = keys[chunk:chunk + 500]
        found += db.execute(f"SELECT rowid, id, supersedes, path FROM memories WHERE id IN ({', '.join('?' * len(part))})",
                            part).fetchall()
    for rowid, row_id, supersedes, path in found:
        if ids.get(row_id) == path:
            delete_row(db, rowid)
            affected.add(row_id)
            affected.update(supersedes.split())
    db.executemany("DELETE FROM problems WHERE path = ?", ((rel,) for rel in memory_paths))
    for rel in paths:
        if not rel.startswith("memories/") and (mid := memory_id_of_event(rel)) is not None:
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
    db.execute("DELETE FROM term_df WHERE df <= 0 AND term IN (SELECT term FROM temp.removed_vocab)")  # only they fell
    _clear_changed_terms(db)
    return int(rows)


def _clear_changed_terms(db: sqlite3.Connection) -> None:
    for side in ("removed", "added"):
        db.execute(f"DELETE FROM temp.{side}_text")


def note_fts_changes(db: sqlite3.Connection, rows: int) -> None:
    """Count rows changed since the last optimize; past OPTIMIZE_AFTER_ROWS, optimize again."""
    row = db.execute("SELECT value FROM meta WHERE key = 'fts_changes'").fetchone()
    total = (int(row[0]) if row and str(row[0]).isdigit() else 0) + rows
    if total >= OPTIMIZE_AFTER_ROWS:
        optimize_fts(db)
    else:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('fts_changes', ?)", (str(total),))


def apply_changes(db: sqlite3.Connection, changes: Iterable[Landed], affected: set[str], *,
                  note_terms: bool = True) -> None:
    """Index the files ``changes`` names (see ``Landed``), whose old rows are gone: the rows in one
    batch, their full text in one statement (and in the scratch table of added terms, with
    ``note_terms``)."""
    events: list[tuple[str, str, str]] = []
    problems: list[tuple[str, str]] = []

    def rows() -> Iterator[dict[str, Any]]:  # one row at a time: 100,000 rows are never all in memory
        for rel, memory, load in changes:
            if is_memory_path(rel):
                try:
                    if memory is None or memory.path != rel:
                        memory = indexable_memory(load(), rel)
                    row = memory_row(memory, rel)
                except FatalError as exc:
                    problems.append((rel, str(exc)))
                    print(f"quipu: skipped {exc}", file=sys.stderr)
                    continue
                affected.add(memory.id)
                affected.update(memory.supersedes)
                yield row
            elif (mid := memory_id_of_event(rel)) is not None:
                events.append((mid, rel.rsplit("/", 1)[1], load().decode("utf-8", "replace")))
                affected.add(mid)

    # New rows take rowids past every row there is (no AUTOINCREMENT: max + 1), so they are the rows past it.
    last = db.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
    placeholders = ", ".join(f":{c}" for c in COLUMNS)
    db.executemany(f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({placeholders})", rows())
    db.executemany("INSERT OR REPLACE INTO events VALUES (?, ?, ?)", events)
    db.executemany("INSERT OR REPLACE INTO problems VALUES (?, ?)", problems)
    cols = ", ".join(FTS_COLUMNS)
    db.execute(f"INSERT INTO memory_fts(rowid, {cols}) SELECT rowid, {cols} FROM memories WHERE rowid > ?", (last,))
    if note_terms:
        db.execute(f"INSERT INTO temp.added_text({cols}) SELECT {cols} FROM memories WHERE rowid > ?", (last,))
