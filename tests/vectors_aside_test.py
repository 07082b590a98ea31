"""A bulk import's meaning vectors built in a second process while it commits: the same vectors as
those built after the index, linked to the index rows without embedding again; a text the index
holds otherwise is embedded when linked; a file of the earlier layout is built again."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from quipu.commands import import_folder
from quipu.index import index, vectors, vectors_aside
from quipu.index.schema import text_fields
from quipu.store.store import Store
from testing.fixtures import TOPIC_NOTES, add_all, make_store, memory

NOTES = [memory(mid, title, f"{title}. More about it: {mid}.") for mid, title in TOPIC_NOTES]


def _stored(cache: Path) -> dict[str, bytes]:
    with sqlite3.connect(cache / vectors.FILE_NAME) as db:
        return {mid: bytes(vec) for mid, vec in db.execute("SELECT id, vec FROM vectors")}


def _sync(store: Store) -> vectors.Vectors:
    cache = index.index_file(store).parent
    found = index.query(store, lambda db: vectors.ensure_vectors(cache, db))
    assert found is not None
    return found


def test_an_import_builds_its_vectors_aside_the_same_as_after_the_index(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    for n in range(import_folder.CHILD_FROM + 20):
        (folder / f"part-{n // 100}").mkdir(parents=True, exist_ok=True)
        title = TOPIC_NOTES[n % len(TOPIC_NOTES)][1]
        (folder / f"part-{n // 100}" / f"note-{n}.md").write_text(
            f"# {title} {n}\n\n{title}, seen on day {n} by team {n % 7}\n", encoding="utf-8")
    store = make_store(tmp_path / "store")
    add_all(store, [memory("already-here", "Rollback steps", "Roll back with the previous image tag.")])
    done = import_folder.import_markdown(store, folder)
    assert done.vectors is not None and done.vectors.wait()
    assert index.refresh_after_write(store, done.known)
    linked = _sync(store)
    assert linked.embedded == 0  # every vector was built aside, the one already there too
    assert sorted(linked.ids) == sorted([m.id for m in done.imported] + ["already-here"])
    aside = _stored(index.index_file(store).parent)
    vectors.remove(index.index_file(store).parent)
    again = _sync(store)
    assert again.embedded == len(aside)
    assert _stored(index.index_file(store).parent) == aside


def test_a_text_the_index_holds_otherwise_is_embedded_when_linked(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, NOTES)
    cache = index.index_file(store).parent
    texts = {m.id: vectors.memory_text(*text_fields(store.get(m.id))) for m in NOTES}
    changed = NOTES[0].id
    texts[changed] = "a text the index does not hold"
    assert vectors.prebuild(cache, texts) is not None
    built = _stored(cache)
    linked = _sync(store)
    assert linked.embedded == 1
    after = _stored(cache)
    assert after[changed] != built[changed]  # embedded again, from the text the index holds
    assert {k: v for k, v in after.items() if k != changed} == {k: v for k, v in built.items() if k != changed}


def test_a_vectors_file_of_the_earlier_layout_is_built_again(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, NOTES)
    cache = index.index_file(store).parent
    with sqlite3.connect(cache / vectors.FILE_NAME) as db:
        db.executescript("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                         "CREATE TABLE vectors(id TEXT PRIMARY KEY, src INTEGER NOT NULL, sha TEXT NOT NULL,"
                         " vec BLOB NOT NULL);")
        db.execute("INSERT INTO meta VALUES ('model', ?)", (vectors.model_name(),))
        db.execute("INSERT INTO vectors VALUES (?, 1, 'x', ?)", (NOTES[0].id, b"\0" * 1024))
    found = _sync(store)
    assert found.embedded == len(NOTES)
    assert set(_stored(cache)) == {m.id for m in NOTES}


def test_an_aside_closed_is_gone(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    where = index.index_file(store)
    aside = vectors_aside.Aside.start(where.parent, where, [(f"id-{n}", f"text {n}") for n in range(3)], 3)
    assert aside is not None
    aside.close()
    try:
        os.kill(aside.pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError("the child still runs after close()")


def test_no_aside_when_the_index_holds_more_than_the_import_brings(tmp_path: Path) -> None:
    """Into a store of more memories than it brings, an import's few vectors are built after the
    index: the second process would embed every memory again."""
    store = make_store(tmp_path / "store")
    add_all(store, NOTES)
    where = index.index_file(store)
    assert vectors_aside.Aside.start(where.parent, where, [("id-0", "text")], 1) is None
    aside = vectors_aside.Aside.start(where.parent, where, [(f"id-{n}", f"text {n}") for n in range(20)], 20)
    assert aside is not None
    assert aside.wait()
