"""The full rebuild: every memory blob of HEAD into a new index file, in one transaction.

The file is built under a temporary name and renamed over the index; before the rename, the old
file's journal, write-ahead log and shared memory (left by a killed writer) are rolled back or
removed, so none of them is ever applied to the new file."""
from __future__ import annotations

import contextlib
import gc
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from quipu.errors import FatalError
from quipu.index.derive import derive_state
from quipu.index.schema import (
    SCHEMA,
    SCHEMA_VERSION,
    connect,
    discard_leftovers,
    indexable_memory,
    insert_rows,
    is_memory_path,
    memory_row,
    optimize_fts,
)
from quipu.store.memory import Memory
from quipu.store.safepath import LINK_MODE
from quipu.store.store import Store


def lexicon_words() -> list[str]:
    """The stems of ordinary English words shipped with quipu (see quipu/data/lexicon.txt)."""
    from importlib import resources

    text = resources.files("quipu").joinpath("data", "lexicon.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile: a bulk pass (an import, a history backfill) keeps
    every record it has read until it ends, makes no cycles, and the collector would walk them all
    again at each collection (half the reading time at 100,000 notes)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rebuild_index(store: Store, head: str | None, path: Path,
                  known: Mapping[str, Memory] | None = None) -> tuple[int, int]:
    """Build the index of ``head`` into a new file that replaces ``path``; (rows, files skipped).
    ``known``: memories already read from the blob of that id (a bulk writer parsed what it
    committed): such a blob is neither read nor parsed again."""
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
        for rel, blob_id, data in memory_blobs(store):
            memory = known.get(blob_id) if known else None
            try:
                if memory is None or memory.path != rel:
                    memory = indexable_memory(data(), rel)
                rows.append(memory_row(memory, rel))
            except FatalError as exc:
                problems.append((rel, str(exc)))
        insert_rows(db, rows)
        optimize_fts(db)
        db.execute("INSERT INTO term_df SELECT term, doc FROM memory_vocab")
        db.executemany("INSERT OR IGNORE INTO lexicon VALUES (?)", ((term,) for term in lexicon_words()))
        db.executemany("INSERT OR REPLACE INTO problems VALUES (?, ?)", problems)
        db.executemany("INSERT INTO events VALUES (?, ?, ?)", all_events(store))
        derive_state(db, None)
        write_meta(db, store, head)
        db.execute("COMMIT")
        db.execute("PRAGMA journal_mode = DELETE")
        db.close()
        for item in problems:
            print(f"quipu: skipped {item[1]}", file=sys.stderr)
        # A killed writer's journal beside the old file would be played into the new one by the
        # next connection that writes: it goes first, then the new file takes the name at once.
        discard_leftovers(path)
        os.replace(tmp, path)
        return len(rows), len(problems)
    except BaseException:
        db.close()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def memory_blobs(store: Store) -> Iterator[tuple[str, str, Callable[[], bytes]]]:
    """All ``memories/**.md`` blobs at HEAD, sharded or not (a misplaced file becomes a problem):
    (path, blob id, a call that reads the blob)."""
    repo = store.repo
    try:
        top = store.head_tree()["memories"]
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
                yield rel, str(entry.id), lambda oid=entry.id: repo[oid].data  # type: ignore[attr-defined,misc]


def all_events(store: Store) -> Iterator[tuple[str, str, str]]:
    repo = store.repo
    try:
        events = store.head_tree()["events"]
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


def write_meta(db: sqlite3.Connection, store: Store, head: str | None) -> None:
    """The index's meta rows for ``head``. The recall settings are read again unless their files
    are exactly as they were when the recorded values were read (``settings.files_stamp``)."""
    from quipu.store import settings

    stamp = settings.files_stamp(store.root)
    kept = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('config', 'config_stamp')").fetchall())
    values = {
        "schema": SCHEMA_VERSION,
        "store": str(store.root.resolve()),
        "head": head or "",
        "built_at": str(time.time()),
        "count": str(db.execute("SELECT count(*) FROM memories").fetchone()[0]),
    }
    if kept.get("config_stamp") != stamp or "config" not in kept:
        recall_cfg = settings.section(store, "recall")  # a store's own values only within bounds
        values["config"] = json.dumps(recall_cfg if isinstance(recall_cfg, dict) else {})
        values["config_stamp"] = stamp
    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())
