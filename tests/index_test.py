"""The index is a self-validating cache: whatever happens to it, the next read is right (issue 2)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from quipu.index import index
from quipu.index import refresh
from quipu.commands.search import search
from quipu.store.store import Store
from testing.fixtures import add_all, git, make_store, memory, quipu



def cli_search(store: Store, query: str) -> list[str]:
    done = quipu("--store", str(store.root), "search", "--json", query)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return [hit["id"] for hit in json.loads(done.stdout)]


def ids(store: Store, query: str) -> list[str]:
    return [hit.id for hit in search(store, query).hits]


def test_a_deleted_index_is_rebuilt_by_the_next_search(store: Store) -> None:
    store.index_path.unlink()
    assert cli_search(store, "pipeline") == ["deploy-note"]
    assert store.index_path.is_file()


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "page"])
def test_a_corrupt_index_is_rebuilt_by_the_next_search(store: Store, damage: str) -> None:
    data = store.index_path.read_bytes()
    if damage == "garbage":
        store.index_path.write_bytes(bytes(range(256)) * 64)
    elif damage == "empty":
        store.index_path.write_bytes(b"")
    elif damage == "truncated":
        store.index_path.write_bytes(data[: len(data) // 2])
    else:  # one page in the middle overwritten: the header still says "SQLite format 3"
        middle = len(data) // 4096 // 2 * 4096
        store.index_path.write_bytes(data[:middle] + b"\xa5" * 4096 + data[middle + 4096 :])
    assert cli_search(store, "docker") == ["docker-note"]
    assert ids(store, "pytest") == ["pytest-note"]


def test_every_page_of_the_index_damaged_in_turn_never_breaks_search(store: Store) -> None:
    good = store.index_path.read_bytes()
    for offset in range(0, len(good), 4096):
        store.index_path.write_bytes(good[:offset] + b"\x00\xff" * 2048 + good[offset + 4096 :])
        assert ids(store, "docker") == ["docker-note"], f"page at {offset}"
        assert ids(store, "yaml") == ["yaml-note"], f"page at {offset}"
        good = store.index_path.read_bytes()  # the rebuilt file is the next round's start


def test_a_foreign_index_is_replaced(store: Store, tmp_path: Path) -> None:
    other = make_store(tmp_path / "other")
    add_all(other, [memory("other-note", "A pipeline in some other store")])
    shutil.copyfile(other.index_path, store.index_path)
    assert cli_search(store, "pipeline") == ["deploy-note"]
    assert index.ensure_fresh(store).action == "fresh"


def test_git_reset_hard_and_mixed_move_the_index_with_head(store: Store) -> None:
    add_all(store, [memory("late-one", "A late pipeline note"), memory("late-two", "Another late pipeline note")])
    assert sorted(cli_search(store, "pipeline")) == ["deploy-note", "late-one", "late-two"]

    git(store.root, "reset", "-q", "--hard", "HEAD~2")
    assert cli_search(store, "pipeline") == ["deploy-note"]

    git(store.root, "reset", "-q", "--hard", "HEAD@{1}")  # and forward again
    assert sorted(cli_search(store, "pipeline")) == ["deploy-note", "late-one", "late-two"]

    git(store.root, "reset", "-q", "HEAD~1")  # mixed: the file stays in the worktree, not in HEAD
    assert sorted(cli_search(store, "pipeline")) == ["deploy-note", "late-one"]
    assert (store.root / "memories/la/late-two.md").exists()


def test_index_rebuild_from_the_cli_matches_the_incremental_index(store: Store) -> None:
    store.supersede("docker-note", "deploy-note")
    store.label("pytest-note", "unverified", detail="no xdist")
    index.ensure_fresh(store)
    columns = "id, title, status, superseded_by, labels, label_details, class, half_life_days"
    incremental = [tuple(r) for r in index.rows(store, f"SELECT {columns} FROM memories ORDER BY id")]
    done = quipu("--store", str(store.root), "index", "--rebuild", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["action"] == "rebuilt"
    assert [tuple(r) for r in index.rows(store, f"SELECT {columns} FROM memories ORDER BY id")] == incremental
    assert ("docker-note", "superseded") in [(r[0], r[2]) for r in incremental]


def test_hand_committed_malformed_files_are_skipped_with_a_warning_and_listed_by_doctor(store: Store) -> None:
    bad = {
        "memories/ba/bad-class.md": b"---\nid: bad-class\ntitle: pipeline with a bad class\nclass: opinion\ncreated: 2026-01-01\n---\nx\n",
        "memories/no/not-mapping.md": b"---\n- pipeline\n---\nx\n",
        "memories/la/latin1.md": b"---\nid: latin1\ntitle: caf\xe9 pipeline\nclass: fact\ncreated: 2026-01-01\n---\n",
        "memories/bi/big-one.md": b"---\nid: big-one\ntitle: t\nclass: fact\ncreated: 2026-01-01\n---\n" + b"pipeline " * 120_000,
        "memories/misplaced.md": b"---\nid: misplaced\ntitle: pipeline in the wrong folder\nclass: fact\ncreated: 2026-01-01\n---\n",
    }
    for rel, data in bad.items():
        (store.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (store.root / rel).write_bytes(data)
    git(store.root, "add", "-A")
    git(store.root, "commit", "-q", "--no-verify", "-m", "a person commits broken files")

    done = quipu("--store", str(store.root), "search", "--json", "pipeline")
    assert done.returncode == 0
    assert [hit["id"] for hit in json.loads(done.stdout)] == ["deploy-note"]
    for rel in bad:  # each warning names the file
        assert f"quipu: skipped {rel}" in done.stderr

    for rebuilt in (False, True):  # the same list whether the index was refreshed or rebuilt
        if rebuilt:
            index.ensure_fresh(store, force_rebuild=True)
        doctor = quipu("--store", str(store.root), "doctor", "--json")
        schema = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "schema")
        assert not schema["ok"]
        assert sorted(line.split(":")[0] for line in schema["details"]) == sorted(bad)
        assert any("allowed values" in line for line in schema["details"])
    assert ids(store, "pipeline") == ["deploy-note"]


def test_a_fixed_file_leaves_the_problem_list(store: Store) -> None:
    rel = store.root / "memories/fi/fixme.md"
    rel.parent.mkdir(parents=True)
    rel.write_text("---\nid: fixme\ntitle: broken\nclass: nope\ncreated: 2026-01-01\n---\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-q", "-m", "broken")
    assert len(index.rows(store, "SELECT * FROM problems")) == 1
    rel.write_text("---\nid: fixme\ntitle: mended sprocket\nclass: fact\ncreated: 2026-01-01\n---\n")
    git(store.root, "commit", "-q", "-am", "fixed")
    assert index.rows(store, "SELECT * FROM problems") == []
    assert ids(store, "sprocket") == ["fixme"]


def _df_tables(store: Store) -> tuple[dict[str, int], dict[str, int]]:
    """(term_df, what fts5vocab counts) of the index as it is now."""
    index.ensure_fresh(store)
    kept = {r[0]: r[1] for r in index.rows(store, "SELECT term, df FROM term_df")}
    counted = {r[0]: r[1] for r in index.rows(store, "SELECT term, doc FROM memory_vocab")}
    return kept, counted


def test_the_document_frequency_table_stays_exact_through_adds_edits_deletes_and_resets(store: Store) -> None:
    kept, counted = _df_tables(store)
    assert kept == counted and kept["pipelin"] == 1  # after the rebuild that made the index
    add_all(store, [memory("ci-note", "The pipeline runs pytest on every push", "Café crème for the pipeline team.")])
    kept, counted = _df_tables(store)
    assert kept == counted and kept["pipelin"] == 2 and kept["cafe"] == 1
    # A person edits one note and deletes another by hand: both rows' terms are recounted.
    path = store.root / "memories" / "de" / "deploy-note.md"
    path.write_text(path.read_text().replace("blue green pipeline", "canary rollout"))
    git(store.root, "rm", "-q", "memories/ya/yaml-note.md")
    git(store.root, "commit", "-qam", "edit and delete by hand")
    kept, counted = _df_tables(store)
    assert kept == counted and kept["pipelin"] == 1 and "yaml" not in kept and kept["canari"] == 1
    git(store.root, "reset", "-q", "--hard", "HEAD~2")
    kept, counted = _df_tables(store)
    assert kept == counted and kept["pipelin"] == 1 and "canari" not in kept and "cafe" not in kept


def test_the_full_text_index_is_merged_after_a_rebuild_and_after_enough_changed_rows(store: Store) -> None:
    from quipu.store.memory import render_memory

    def fts_changes() -> int:
        index.ensure_fresh(store)
        return int(index.rows(store, "SELECT value FROM meta WHERE key = 'fts_changes'")[0][0])

    assert fts_changes() == 0  # the rebuild that made the index merged it
    add_all(store, [memory("one-more", "One more pipeline note")])
    assert fts_changes() == 1
    # One commit of many new notes (as a sync from another machine brings): past the threshold.
    batch = [memory(f"bulk-{n:03d}", f"Bulk note {n} about pipelines") for n in range(refresh.OPTIMIZE_AFTER_ROWS)]
    store.commit({m.path: render_memory(m) for m in batch}, "bulk import", {"Quipu-Action": "import"})
    assert fts_changes() == 0
    assert len(ids(store, "bulk pipelines")) > 0
    with index.open_fresh(store) as db:
        db.execute("INSERT INTO memory_fts(memory_fts) VALUES('integrity-check')")  # raises if damaged
