"""From a memory file to its index row: the schema, and the rows written and removed."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from quipu.errors import FatalError, InvalidMemory
from quipu.prompt.stem import TOKENIZE
from quipu.store.memory import Memory, parse_created, parse_memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = "7"
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
    always_on INTEGER NOT NULL,
    -- The title and body as the near-duplicate check folds them (quipu.index.near), kept only for
    -- a memory whose words the full-text tokenizer may split otherwise (``fold_of``); NULL for the rest.
    fold TEXT
);
CREATE INDEX memories_class ON memories(class, status);
-- Newest first, a page at a time (the viewer's memories list): read from the end, never sorted.
CREATE INDEX memories_created ON memories(created_ts, id);
-- The memories of a session in the order they were written.
CREATE INDEX memories_thread ON memories(session, created_ts, id) WHERE session IS NOT NULL;
-- The memories the near-duplicate check reads beside the full-text index's hits.
CREATE INDEX memories_folded ON memories(status) WHERE fold IS NOT NULL;
-- The memories that supersede others (quipu.index.derive reads them all on every refresh).
CREATE INDEX memories_supersedes ON memories(supersedes, id) WHERE supersedes != '';
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


COLUMNS = (
    "id", "path", "title", "description", "aliases", "tags", "body", "class", "origin", "fm_status",
    "status", "superseded_by", "supersedes", "labels", "label_details", "created_ts", "half_life_days",
    "session", "project", "always_on", "fold",
)


FTS_COLUMNS = ("title", "aliases", "tags", "description", "body")


def text_fields(memory: Memory) -> tuple[str, str, str, str, str]:
    """A memory's row's ``FTS_COLUMNS``: title, aliases, tags, description and body."""
    return (memory.title, " | ".join(memory.aliases), " | ".join(memory.topics + memory.entities),
            memory.description, memory.body)


def memory_row(memory: Memory, path: str) -> dict[str, Any]:
    title, aliases, tags, description, body = text_fields(memory)
    return {
        "id": memory.id,
        "path": path,
        "title": title,
        "description": description,
        "aliases": aliases,
        "tags": tags,
        "body": body,
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
        "fold": fold_of(f"{memory.title} {memory.body}"),
    }


_WORD = re.compile(r"\w+")
# Categories whose characters both split words alike: the tokenizer (unicode61's token characters
# are letters, numbers, private use and whatever its Unicode 6.1 tables do not know, so a character
# counts only when Unicode 3.2 had it too) and ``\w`` (letters, numbers, "_") take them as
# separators, and case folding leaves them outside ASCII.
_SEPARATORS_ALIKE = frozenset("PZS")


def fold_words(text: str) -> str:
    """``text``'s words, case-folded, one space between them: what the near-duplicate check compares."""
    return " ".join(_WORD.findall(text.casefold()))


def fold_of(text: str) -> str | None:
    r"""``fold_words(text)`` when the full-text tokenizer may not find each of those words in
    ``text`` (a letter, number, mark or control character outside ASCII: "ﬁle" folds to "file",
    "abc\ue000" is one token to it and "abc" to ``\w``), else None: on ASCII text, and on text
    whose other characters are punctuation, spaces or symbols, every ASCII word of ``fold_words``
    is one of the tokenizer's."""
    if text.isascii():
        return None
    import unicodedata  # only for text outside ASCII

    now, old = unicodedata.category, unicodedata.ucd_3_2_0.category  # the tokenizer knows Unicode 6.1
    if all(ch.isascii() or (now(ch)[0] in _SEPARATORS_ALIKE and old(ch)[0] in _SEPARATORS_ALIKE and not ch.isalnum()
                            and not ch.casefold().isascii()) for ch in set(text)):
        return None
    return fold_words(text)


def is_memory_path(rel: str) -> bool:
    """Every ``memories/**.md`` file is indexed or reported, wherever a person committed it."""
    return rel.startswith("memories/") and rel.endswith(".md")


def indexable_memory(data: bytes, rel: str) -> Memory:
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


def insert_rows(db: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    placeholders = ", ".join(f":{c}" for c in COLUMNS)
    db.executemany(f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({placeholders})", rows)
    cols = ", ".join(FTS_COLUMNS)
    db.execute(f"INSERT INTO memory_fts(rowid, {cols}) SELECT rowid, {cols} FROM memories")


def memory_id_of_event(rel: str) -> str | None:
    parts = rel.split("/")
    if len(parts) == 4 and parts[0] == "events" and parts[3].endswith(".json"):
        return parts[2]
    return None


def delete_row(db: sqlite3.Connection, rowid: int) -> None:
    note_changed_row(db, rowid, "removed")
    cols = ", ".join(FTS_COLUMNS)
    db.execute(
        f"INSERT INTO memory_fts(memory_fts, rowid, {cols}) SELECT 'delete', rowid, {cols} FROM memories WHERE rowid = ?",
        (rowid,),
    )
    db.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))


def connect(path: Path | str, *, any_thread: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode; ``any_thread`` for a caller that serialises its use itself."""
    db = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=not any_thread)
    db.execute("PRAGMA busy_timeout = 30000")
    return db


# The files SQLite keeps beside a database while it writes (rollback journal, write-ahead log and
# its shared memory). Under the index lock nobody is writing, so any of them is a killed writer's.
SIDE_FILES = ("-journal", "-wal", "-shm")


def leftovers(path: Path) -> list[Path]:
    """The side files beside the index ``path`` that exist now."""
    return [side for side in (path.with_name(path.name + suffix) for suffix in SIDE_FILES) if side.exists()]


def discard_leftovers(path: Path) -> None:
    """Settle what a killed writer left beside ``path`` (call it under the index lock, before a new
    file is renamed over ``path``): a hot journal is rolled back into the file it belongs to by
    opening it for writing, and whatever is still there is removed, so that a journal of an old
    file is never played into a new one."""
    if not leftovers(path):
        return
    if path.is_file():  # (opening a missing file would create one)
        try:
            db = sqlite3.connect(str(path), timeout=5, isolation_level=None)
            try:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # rolls a hot journal back
            finally:
                db.close()
        except sqlite3.Error:
            pass  # a damaged file: it is being replaced, its journal goes with it
    for side in leftovers(path):
        try:
            side.unlink()
        except FileNotFoundError:
            pass


def read_meta(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT key, value FROM meta").fetchall())


def note_changed_row(db: sqlite3.Connection, rowid: int, side: str) -> None:
    cols = ", ".join(FTS_COLUMNS)
    db.execute(f"INSERT INTO temp.{side}_text({cols}) SELECT {cols} FROM memories WHERE rowid = ?", (rowid,))


def optimize_fts(db: sqlite3.Connection) -> None:
    """Merge the full-text index into one segment. Every FTS5 query reads each segment's b-tree,
    so a bulk load's many segments (or those incremental refreshes add) slow every prompt's
    lookups: one segment halves their cost at 10,000 memories."""
    db.execute("INSERT INTO memory_fts(memory_fts) VALUES('optimize')")
    db.execute("INSERT OR REPLACE INTO meta VALUES ('fts_changes', '0')")
