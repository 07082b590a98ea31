"""The SQLite FTS5 index: a cache of the store that can always be rebuilt from git.

Contract:
- ``<store>/.cache/index.sqlite`` holds one row per memory with every field recall ranks or
  filters by as a plain column (class, status, labels, created, half-life...), so nothing parses
  YAML at query time, and an FTS5 table over title, aliases, tags, description and body.
- ``meta.head`` records the commit the index was built from. ``ensure_fresh`` compares it with
  HEAD (read from git's files) and re-indexes only the paths that differ between the two trees.
  A missing, corrupt, foreign or unreadable index, or one whose commit git no longer has, is
  rebuilt (into a new file that replaces the old one atomically); it never surfaces as an error.
- After every write quipu records the file's identity (inode, size, mtime) beside it in
  ``index.sqlite.stamp``. A file changed by anything else (bytes overwritten, a copy dropped in)
  must pass ``PRAGMA quick_check`` before it is trusted again. ``query`` and ``rows`` rebuild and
  retry once if SQLite still reports the file damaged mid-query.
- Files with malformed frontmatter are skipped and listed in ``problems`` (``quipu doctor``).
- Index writers serialise on an ``flock``; readers never write.
- A store whose ``.cache`` cannot be written (a read-only store, a folder another user owns) is
  still read: ``ensure_fresh`` builds a private index in a temporary folder for the process and
  warns once; nothing is written in the store. ``refresh_after_write`` is the refresh a command
  runs after its commit landed: if the index cannot be written it warns that the index will
  catch up on the next read, and the command still reports its commit.
- The schema, table names and the ranking SQL live in ``quipu.prompt.recall``'s stdlib-only world:
  this module imports pygit2 and may import yaml; the prompt path never imports it.
"""
from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import pygit2

from quipu.prompt import locate
from quipu.store.locks import file_lock
from quipu.errors import FatalError, InvalidMemory
from quipu.store.memory import Memory, parse_created, parse_memory
from quipu.prompt.query import TOKENIZE
from quipu.store.store import CONFIG_NAME, LINK_MODE, Store

SCHEMA_VERSION = "3"
OPTIMIZE_AFTER_ROWS = 200  # rows an incremental refresh changed since the FTS5 index was last merged
T = TypeVar("T")


SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories(
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    aliases TEXT NOT NULL,          -- joined with ' | '
    tags TEXT NOT NULL,             -- topics and entities, joined with ' | '
    body TEXT NOT NULL,
    class TEXT NOT NULL,
    origin TEXT NOT NULL,
    fm_status TEXT NOT NULL,        -- the status written in the file
    status TEXT NOT NULL,           -- after supersession events and links
    superseded_by TEXT,
    supersedes TEXT NOT NULL,       -- ids from the frontmatter, space separated
    labels TEXT NOT NULL,           -- current labels, space separated
    label_details TEXT NOT NULL,    -- JSON {label: detail}
    created_ts REAL NOT NULL,       -- unix seconds
    half_life_days REAL,            -- NULL: never decays
    session TEXT,
    project TEXT,
    always_on INTEGER NOT NULL
);
CREATE INDEX memories_class ON memories(class, status);
-- External-content FTS5 over the text columns of `memories`; rowids are shared.
-- porter: word-level matching with stemming, so "api" never matches "rapid" (no substrings)
-- and "deploys" matches "deploy". unicode61 with diacritics removed folds "café" to "cafe".
CREATE VIRTUAL TABLE memory_fts USING fts5(
    title, aliases, tags, description, body,
    content='memories', content_rowid='rowid',
    tokenize='{tokenize}'
);
-- Document frequency per stemmed term, for picking the rarest query terms.
CREATE VIRTUAL TABLE memory_vocab USING fts5vocab(memory_fts, 'row');
-- The same numbers as a plain table: fts5vocab counts a term's documents by reading its whole
-- posting list on every lookup (slow for common words); the prompt hook reads this instead.
-- Kept exact: a rebuild copies memory_vocab, an incremental refresh moves it by the terms of
-- the rows it removes and adds.
CREATE TABLE term_df(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE events(memory TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY(memory, name));
CREATE TABLE problems(path TEXT PRIMARY KEY, problem TEXT NOT NULL);
-- The stems of ordinary English words (quipu/data/lexicon.txt). Recall treats a prompt term
-- whose stem is not here (a project, a tool, an identifier) as specific: strong evidence alone.
-- In the index, not in a module, so the prompt hook pays one lookup for a prompt's few terms
-- instead of loading sixteen thousand words.
CREATE TABLE lexicon(term TEXT PRIMARY KEY) WITHOUT ROWID;
""".replace("{tokenize}", TOKENIZE)

_COLUMNS = (
    "id", "path", "title", "description", "aliases", "tags", "body", "class", "origin", "fm_status",
    "status", "superseded_by", "supersedes", "labels", "label_details", "created_ts", "half_life_days",
    "session", "project", "always_on",
)
_FTS_COLUMNS = ("title", "aliases", "tags", "description", "body")


@dataclass(frozen=True)
class RefreshResult:
    action: str  # "fresh", "incremental", "rebuilt"
    head: str | None
    changed: int
    problems: int
    seconds: float


def _row(memory: Memory, path: str) -> dict[str, Any]:
    return {
        "id": memory.id,
        "path": path,
        "title": memory.title,
        "description": memory.description,
        "aliases": " | ".join(memory.aliases),
        "tags": " | ".join(memory.topics + memory.entities),
        "body": memory.body,
        "class": memory.cls,
        "origin": memory.origin,
        "fm_status": memory.status,
        "status": memory.status,
        "superseded_by": None,
        "supersedes": " ".join(memory.supersedes),
        "labels": "",
        "label_details": "{}",
        "created_ts": parse_created(memory.created).timestamp(),
        "half_life_days": memory.half_life_days,
        "session": memory.session,
        "project": memory.project,
        "always_on": int(memory.always_on),
    }


# Stores whose own cache cannot be written: {store root: the private index file used instead}.
_PRIVATE: dict[str, Path] = {}
_UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def index_file(store: Store) -> Path:
    """The index this process reads: the store's own, or a private one when that is unwritable."""
    return _PRIVATE.get(str(store.root), store.index_path)


def _index_lock(store: Store) -> contextlib.AbstractContextManager[None]:
    return file_lock(index_file(store).with_name("index.lock"))


class IndexUnwritable(FatalError):
    """The store's index folder cannot be written."""


def _is_unwritable(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in _UNWRITABLE
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("readonly" in text or "unable to open" in text)


def _use_private_index(store: Store, exc: BaseException) -> None:
    folder = tempfile.mkdtemp(prefix="quipu-index-")
    atexit.register(shutil.rmtree, folder, True)
    _PRIVATE[str(store.root)] = Path(folder) / store.index_path.name
    print(f"quipu: warning: cannot write the index in {store.cache_dir} ({_reason(exc)}); "
          "reading from a private copy for this command", file=sys.stderr)


def _reason(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__


def refresh_after_write(store: Store) -> bool:
    """Bring the index up to a commit that has landed; False (and a warning) when the index cannot
    be written now: the commit stands, and the next read catches up with it."""
    try:
        ensure_fresh(store, private_ok=False)
        return True
    except (OSError, sqlite3.Error, IndexUnwritable) as exc:
        print(f"quipu: warning: the commit landed, but the index could not be updated ({_reason(exc)}); "
              "it will catch up on the next read\n- or run `quipu index --refresh` once the store's "
              ".cache folder can be written", file=sys.stderr)
        return False


def connect(path: Path | str, *, any_thread: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode; ``any_thread`` for a caller that serialises its use itself."""
    db = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=not any_thread)
    db.execute("PRAGMA busy_timeout = 30000")
    return db


def _meta(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT key, value FROM meta").fetchall())


def _open_valid(store: Store) -> sqlite3.Connection | None:
    """The existing index if it is ours and readable, else None (it will be rebuilt)."""
    path = index_file(store)
    if not path.is_file():
        return None
    db: sqlite3.Connection | None = None
    try:
        db = connect(path)
        meta = _meta(db)
        if meta.get("schema") != SCHEMA_VERSION or meta.get("store") != str(store.root.resolve()):
            db.close()
            return None
        if _read_stamp(store) != _file_stamp(path):
            # Changed by something other than quipu: trust it only if SQLite finds it intact.
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                db.close()
                return None
            _write_stamp(store)
        db.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'quipu'").fetchone()
        return db
    except sqlite3.DatabaseError:
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()
        return None


def _stamp_path(store: Store) -> Path:
    path = index_file(store)
    return path.with_name(path.name + ".stamp")


def _file_stamp(path: Path) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def _read_stamp(store: Store) -> str:
    try:
        return _stamp_path(store).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _write_stamp(store: Store) -> None:
    target = _stamp_path(store)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        tmp.write_text(_file_stamp(index_file(store)), encoding="utf-8")
        os.replace(tmp, target)


def _lexicon() -> list[str]:
    """The stems of ordinary English words shipped with quipu (see quipu/data/lexicon.txt)."""
    text = resources.files("quipu").joinpath("data", "lexicon.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def ensure_fresh(store: Store, *, force_rebuild: bool = False, private_ok: bool = True) -> RefreshResult:
    """Bring the index up to HEAD, rebuilding it when it cannot be trusted. When the store's index
    cannot be written, a fresh index it already has is read as it is, and otherwise (with
    ``private_ok``) a private one is built; without ``private_ok`` that raises IndexUnwritable."""
    try:
        return _ensure_fresh(store, force_rebuild)
    except (OSError, sqlite3.OperationalError) as exc:
        if not _is_unwritable(exc) or str(store.root) in _PRIVATE:
            raise
        if not force_rebuild:
            fresh = _fresh_as_it_is(store)
            if fresh is not None:
                return fresh
        if not private_ok:
            raise IndexUnwritable(f"cannot write the index in {store.cache_dir}: {_reason(exc)}") from exc
        _use_private_index(store, exc)
    return _ensure_fresh(store, force_rebuild)


def _fresh_as_it_is(store: Store) -> RefreshResult | None:
    """The store's own index when it already matches HEAD (read only: no lock, no stamp)."""
    path = store.index_path
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            meta = _meta(db)
        finally:
            db.close()
    except sqlite3.Error:
        return None
    head = store.head()
    if meta.get("head") == head and meta.get("schema") == SCHEMA_VERSION and meta.get("store") == str(store.root.resolve()):
        return RefreshResult("fresh", head, 0, 0, 0.0)
    return None


def _ensure_fresh(store: Store, force_rebuild: bool) -> RefreshResult:
    start = time.perf_counter()
    with _index_lock(store):
        head = store.head()
        db = None if force_rebuild else _open_valid(store)
        if db is not None:
            try:
                indexed = _meta(db).get("head")
                if indexed == head:
                    db.close()
                    return RefreshResult("fresh", head, 0, 0, time.perf_counter() - start)
                changed = _incremental(store, db, indexed, head)
                problems = db.execute("SELECT count(*) FROM problems").fetchone()[0]
                db.close()
                _write_stamp(store)
                if changed is not None:
                    return RefreshResult("incremental", head, changed, problems, time.perf_counter() - start)
            except sqlite3.DatabaseError:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
        count, problems = _rebuild(store, head)
        return RefreshResult("rebuilt", head, count, problems, time.perf_counter() - start)


def open_fresh(store: Store) -> sqlite3.Connection:
    """A read connection to an index that matches HEAD."""
    ensure_fresh(store)
    try:
        return connect(index_file(store))
    except sqlite3.DatabaseError as exc:  # pragma: no cover - the file was just rebuilt
        raise FatalError(f"cannot open the index {store.index_path}: {exc}\n- run `quipu index --rebuild`") from exc


def query(store: Store, read: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``read`` on a fresh index; if SQLite finds the file damaged, rebuild it and run again."""
    for attempt in (1, 2):
        db = open_fresh(store)
        try:
            return read(db)
        except sqlite3.DatabaseError:
            if attempt == 2:
                raise
        finally:
            db.close()
        ensure_fresh(store, force_rebuild=True)
    raise AssertionError("unreachable")  # pragma: no cover


# ---------------------------------------------------------------- full rebuild


def _rebuild(store: Store, head: str | None) -> tuple[int, int]:
    path = index_file(store)
    # Rebuilds run under the index lock, so any other temporary file is a killed rebuild's.
    for stale in path.parent.glob(f"{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    db = connect(tmp)
    try:
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.executescript(SCHEMA)
        db.execute("BEGIN")
        rows = []
        problems = []
        for rel, data in _memory_blobs(store):
            try:
                rows.append(_row(_indexable(data, rel), rel))
            except FatalError as exc:
                problems.append((rel, str(exc)))
        _insert_rows(db, rows)
        _optimize_fts(db)
        db.execute("INSERT INTO term_df SELECT term, doc FROM memory_vocab")
        db.executemany("INSERT OR IGNORE INTO lexicon VALUES (?)", ((term,) for term in _lexicon()))
        db.executemany("INSERT OR REPLACE INTO problems VALUES (?, ?)", problems)
        db.executemany("INSERT INTO events VALUES (?, ?, ?)", _all_events(store))
        _derive(db, None)
        _write_meta(db, store, head)
        db.execute("COMMIT")
        db.execute("PRAGMA journal_mode = DELETE")
        db.close()
        for item in problems:
            print(f"quipu: skipped {item[1]}", file=sys.stderr)
        os.replace(tmp, path)
        _write_stamp(store)
        return len(rows), len(problems)
    except BaseException:
        db.close()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def is_memory_path(rel: str) -> bool:
    """Every ``memories/**.md`` file is indexed or reported, wherever a person committed it."""
    return rel.startswith("memories/") and rel.endswith(".md")


def _memory_blobs(store: Store) -> Iterator[tuple[str, bytes]]:
    """All ``memories/**.md`` blobs at HEAD, sharded or not (a misplaced file becomes a problem)."""
    repo = store.repo
    try:
        top = store._head_tree()["memories"]
    except KeyError:
        return
    if top.type_str != "tree":
        return
    stack = [("memories", repo[top.id])]
    while stack:
        prefix, tree = stack.pop()
        for entry in tree:  # type: ignore[attr-defined]
            rel = f"{prefix}/{entry.name}"
            if entry.type_str == "tree":
                stack.append((rel, repo[entry.id]))
            elif entry.type_str == "blob" and is_memory_path(rel):
                yield rel, repo[entry.id].data  # type: ignore[attr-defined]


def _indexable(data: bytes, rel: str) -> Memory:
    """The memory a committed file holds, or InvalidMemory naming the file and the field: the
    boundary every file a person can commit passes before it reaches the index."""
    try:
        memory = parse_memory(data, rel)
    except FatalError:
        raise
    except Exception as exc:  # noqa: BLE001 - one bad file must never take the index down
        raise InvalidMemory(f"{rel}: cannot be read ({type(exc).__name__}: {str(exc)[:200]})") from None
    if memory.path != rel:
        raise InvalidMemory(f"{rel}: id '{memory.id}' does not match the file's path (expected {memory.path})")
    return memory


def _insert_rows(db: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    placeholders = ", ".join(f":{c}" for c in _COLUMNS)
    db.executemany(f"INSERT INTO memories ({', '.join(_COLUMNS)}) VALUES ({placeholders})", rows)
    cols = ", ".join(_FTS_COLUMNS)
    db.execute(f"INSERT INTO memory_fts(rowid, {cols}) SELECT rowid, {cols} FROM memories")


def _all_events(store: Store) -> Iterator[tuple[str, str, str]]:
    repo = store.repo
    try:
        events = store._head_tree()["events"]
    except KeyError:
        return
    for shard in repo[events.id]:  # type: ignore[attr-defined]
        if shard.type_str != "tree":
            continue
        for memory in repo[shard.id]:  # type: ignore[attr-defined]
            if memory.type_str != "tree":
                continue
            for entry in repo[memory.id]:  # type: ignore[attr-defined]
                if entry.type_str == "blob" and entry.name.endswith(".json") and entry.filemode != LINK_MODE:
                    yield memory.name, entry.name, repo[entry.id].data.decode("utf-8", "replace")  # type: ignore[attr-defined]


def _write_meta(db: sqlite3.Connection, store: Store, head: str | None) -> None:
    from quipu.store import settings

    recall_cfg = settings.section(store, "recall")  # a store's own values only within bounds
    values = {
        "schema": SCHEMA_VERSION,
        "store": str(store.root.resolve()),
        "head": head or "",
        "built_at": str(time.time()),
        "config": json.dumps(recall_cfg if isinstance(recall_cfg, dict) else {}),
        "count": str(db.execute("SELECT count(*) FROM memories").fetchone()[0]),
    }
    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())


# ---------------------------------------------------------------- incremental refresh


def _incremental(store: Store, db: sqlite3.Connection, indexed: str | None, head: str | None) -> int | None:
    """Apply the tree difference between ``indexed`` and ``head``; None means rebuild instead."""
    if not indexed or not head:
        return None
    repo = store.repo
    try:
        old_tree = repo[indexed].peel(pygit2.Tree)
        new_tree = repo[head].peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    deltas = list(old_tree.diff_to_tree(new_tree).deltas)
    db.execute("BEGIN IMMEDIATE")
    try:
        if _meta(db).get("head") == head:  # another process refreshed while we waited
            db.execute("COMMIT")
            return 0
        affected: set[str] = set()
        _start_changed_terms(db)
        for delta in deltas:
            removed = delta.status_char() == "D" or delta.new_file.mode == LINK_MODE  # a symlink is not read
            rel = delta.old_file.path if removed else delta.new_file.path
            if removed or delta.status_char() in ("R",):
                _forget(db, delta.old_file.path, affected)
            if removed:
                continue
            data = repo[delta.new_file.id].data  # type: ignore[attr-defined]
            _apply(db, rel, data, affected)
        if affected:
            _derive(db, affected)
        _note_fts_changes(db, _recount_changed_terms(db))
        _write_meta(db, store, head)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return len(deltas)


def _memory_id_of_event(rel: str) -> str | None:
    parts = rel.split("/")
    if len(parts) == 4 and parts[0] == "events" and parts[3].endswith(".json"):
        return parts[2]
    return None


def _forget(db: sqlite3.Connection, rel: str, affected: set[str]) -> None:
    if rel.startswith("memories/"):
        old = db.execute("SELECT rowid, id, supersedes FROM memories WHERE path = ?", (rel,)).fetchone()
        if old:
            _delete_row(db, old[0])
            affected.add(old[1])
            affected.update(old[2].split())
        db.execute("DELETE FROM problems WHERE path = ?", (rel,))
    elif (mid := _memory_id_of_event(rel)) is not None:
        db.execute("DELETE FROM events WHERE memory = ? AND name = ?", (mid, rel.rsplit("/", 1)[1]))
        affected.add(mid)


def _start_changed_terms(db: sqlite3.Connection) -> None:
    """Two scratch FTS5 tables (the index's tokenizer) that collect the text of every row an
    incremental refresh removes and adds, so that term_df moves by exactly their terms."""
    cols = ", ".join(_FTS_COLUMNS)
    for side in ("removed", "added"):
        db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{side}_text USING fts5({cols}, tokenize='{TOKENIZE}')")
        db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{side}_vocab USING fts5vocab(temp, {side}_text, 'row')")
        db.execute(f"DELETE FROM temp.{side}_text")


def _note_changed_row(db: sqlite3.Connection, rowid: int, side: str) -> None:
    cols = ", ".join(_FTS_COLUMNS)
    db.execute(f"INSERT INTO temp.{side}_text({cols}) SELECT {cols} FROM memories WHERE rowid = ?", (rowid,))


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


def _optimize_fts(db: sqlite3.Connection) -> None:
    """Merge the full-text index into one segment. Every FTS5 query reads each segment's b-tree,
    so a bulk load's many segments (or those incremental refreshes add) slow every prompt's
    lookups: one segment halves their cost at 10,000 memories."""
    db.execute("INSERT INTO memory_fts(memory_fts) VALUES('optimize')")
    db.execute("INSERT OR REPLACE INTO meta VALUES ('fts_changes', '0')")


def _note_fts_changes(db: sqlite3.Connection, rows: int) -> None:
    """Count rows changed since the last optimize; past OPTIMIZE_AFTER_ROWS, optimize again."""
    row = db.execute("SELECT value FROM meta WHERE key = 'fts_changes'").fetchone()
    total = (int(row[0]) if row and str(row[0]).isdigit() else 0) + rows
    if total >= OPTIMIZE_AFTER_ROWS:
        _optimize_fts(db)
    else:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('fts_changes', ?)", (str(total),))


def _delete_row(db: sqlite3.Connection, rowid: int) -> None:
    _note_changed_row(db, rowid, "removed")
    cols = ", ".join(_FTS_COLUMNS)
    db.execute(
        f"INSERT INTO memory_fts(memory_fts, rowid, {cols}) SELECT 'delete', rowid, {cols} FROM memories WHERE rowid = ?",
        (rowid,),
    )
    db.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))


def _apply(db: sqlite3.Connection, rel: str, data: bytes, affected: set[str]) -> None:
    if is_memory_path(rel):
        old = db.execute("SELECT rowid, id, supersedes FROM memories WHERE path = ?", (rel,)).fetchone()
        if old:
            _delete_row(db, old[0])
            affected.add(old[1])
            affected.update(old[2].split())
        try:
            memory = _indexable(data, rel)
            row = _row(memory, rel)
        except FatalError as exc:
            db.execute("INSERT OR REPLACE INTO problems VALUES (?, ?)", (rel, str(exc)))
            print(f"quipu: skipped {exc}", file=sys.stderr)
            return
        db.execute("DELETE FROM problems WHERE path = ?", (rel,))
        placeholders = ", ".join(f":{c}" for c in _COLUMNS)
        cur = db.execute(f"INSERT INTO memories ({', '.join(_COLUMNS)}) VALUES ({placeholders})", row)
        cols = ", ".join(_FTS_COLUMNS)
        db.execute(
            f"INSERT INTO memory_fts(rowid, {cols}) SELECT rowid, {cols} FROM memories WHERE rowid = ?",
            (cur.lastrowid,),
        )
        _note_changed_row(db, cur.lastrowid, "added")
        affected.add(memory.id)
        affected.update(memory.supersedes)
    elif (mid := _memory_id_of_event(rel)) is not None:
        db.execute(
            "INSERT OR REPLACE INTO events VALUES (?, ?, ?)",
            (mid, rel.rsplit("/", 1)[1], data.decode("utf-8", "replace")),
        )
        affected.add(mid)


# ---------------------------------------------------------------- derived state


def fold_events(events: Iterable[str]) -> tuple[str | None, dict[str, str]]:
    """Fold a memory's events (oldest first) into (superseded_by, {label: detail})."""
    superseded_by: str | None = None
    labels: dict[str, str] = {}
    for text in events:
        try:
            event = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not isinstance(event, dict):
            continue
        action = event.get("action")
        if action == "supersede" and _is_event_word(event.get("by")):
            superseded_by = event["by"]
        elif action == "label" and _is_event_word(event.get("label")):
            if event.get("set", True):
                detail = event.get("detail")
                labels[event["label"]] = _clean_text(detail if isinstance(detail, str) else "")
            else:
                labels.pop(event["label"], None)
    return superseded_by, labels


def _is_event_word(value: object) -> bool:
    """An id or a label as an event file may name it: short, no spaces, valid Unicode."""
    return isinstance(value, str) and 0 < len(value) <= 64 and value.isprintable() and " " not in value \
        and value == _clean_text(value)


def _clean_text(text: str) -> str:
    """``text`` without lone surrogates (SQLite stores UTF-8 only), at most 2,000 characters."""
    return text[:2000].encode("utf-8", "replace").decode("utf-8")


def _derive(db: sqlite3.Connection, ids: set[str] | None) -> None:
    """Recompute status, superseded_by and labels for ``ids`` (all when None)."""
    if ids is None:
        targets = [r[0] for r in db.execute("SELECT id FROM memories")]
    else:
        targets = sorted(ids)
    existing = {r[0] for r in db.execute("SELECT id FROM memories")} if ids is None else None
    links: dict[str, str] = {}
    for new_id, supersedes in db.execute("SELECT id, supersedes FROM memories WHERE supersedes != ''"):
        for old in supersedes.split():
            links[old] = new_id
    events: dict[str, list[str]] = {}
    query = "SELECT memory, data FROM events ORDER BY memory, name"
    if ids is not None:
        query = f"SELECT memory, data FROM events WHERE memory IN ({', '.join('?' * len(targets))}) ORDER BY memory, name"
    for mid, data in db.execute(query, [] if ids is None else targets):
        events.setdefault(mid, []).append(data)
    updates = []
    for mid in targets:
        if existing is not None and mid not in existing:
            continue
        by, labels = fold_events(events.get(mid, []))
        by = by or links.get(mid)
        updates.append((by, " ".join(sorted(labels)), json.dumps(labels, sort_keys=True), by, mid))
    db.executemany(
        "UPDATE memories SET superseded_by = ?, labels = ?, label_details = ?,"
        " status = CASE WHEN ? IS NOT NULL THEN 'superseded' ELSE fm_status END WHERE id = ?",
        updates,
    )


def rows(store: Store, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
    def read(db: sqlite3.Connection) -> list[sqlite3.Row]:
        db.row_factory = sqlite3.Row
        return list(db.execute(sql, tuple(params)))

    return query(store, read)


def config_changed(rel: str) -> bool:
    return rel == CONFIG_NAME


__all__ = ["ensure_fresh", "open_fresh", "query", "rows", "fold_events", "RefreshResult", "SCHEMA", "locate"]
