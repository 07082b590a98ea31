"""An edited note imported again: its new version supersedes the earlier one in the same commit,
the earlier one stays (superseded, ranked below), and `quipu undo` of the import puts it back.

Re-importing an edited note added a second active memory, and recall showed the outdated one first
(`import markdown` and `import memory-md` alike)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from quipu.store.memory import Memory
from testing.fixtures import git, make_store, quipu

QUESTION = "where does the build cache cachevol live?"
OLD = "# Build cache\n\nThe build cache lives on the nfs share cachevol.\n"
NEW = "# Build cache\n\nThe build cache moved to s3 bucket cachevol-s3.\n"


def _import(store_root: Path, *args: str) -> dict[str, object]:
    done = quipu("--store", str(store_root), "import", *args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _statuses(store_root: Path) -> dict[str, str]:
    listed = quipu("--store", str(store_root), "list", "--limit", "0", "--json")
    return {m["id"]: m["status"] for m in json.loads(listed.stdout)}


def _commits(store_root: Path) -> int:
    return int(git(store_root, "rev-list", "--count", "HEAD"))


def test_an_edited_note_supersedes_exactly_its_earlier_version_and_undo_puts_it_back(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "ops").mkdir(parents=True)
    (notes / "cache.md").write_text(OLD)
    (notes / "ops" / "cache.md").write_text("# Build cache\n\nThe ops build cache is warmed nightly.\n")  # same title
    store = make_store(tmp_path / "store")
    first = _import(store.root, "markdown", str(notes))
    assert len(first["imported"]) == 2 and first["updated"] == []  # type: ignore[arg-type]
    old_id, ops_id = first["imported"]  # type: ignore[misc]

    again = _import(store.root, "markdown", str(notes))
    assert again["imported"] == [] and again["commit"] is None and again["updated"] == []

    (notes / "cache.md").write_text(NEW)
    commits = _commits(store.root)
    dry = _import(store.root, "markdown", str(notes), "--dry-run")
    assert dry["updated"] == [{"path": "cache.md", "id": dry["imported"][0], "supersedes": [old_id]}]  # type: ignore[index]
    assert _commits(store.root) == commits

    edited = _import(store.root, "markdown", str(notes))
    new_id = edited["imported"][0]  # type: ignore[index]
    assert edited["updated"] == [{"path": "cache.md", "id": new_id, "supersedes": [old_id]}]
    assert edited["already_in_the_store"] == [ops_id]
    assert _commits(store.root) == commits + 1  # the new version and the supersession: one commit
    assert _statuses(store.root) == {new_id: "active", old_id: "superseded", ops_id: "active"}
    recalled = json.loads(quipu("--store", str(store.root), "recall", QUESTION, "--json").stdout)["hits"]
    ranked = [hit["id"] for hit in recalled]
    assert ranked.index(new_id) < ranked.index(old_id)
    shown = quipu("--store", str(store.root), "import", "markdown", str(notes)).stdout
    assert "0 note(s)" in shown and "2 already in the store" in shown

    undone = quipu("--store", str(store.root), "undo", str(edited["commit"]))
    assert undone.returncode == 0, undone.stderr
    statuses = _statuses(store.root)
    assert statuses[old_id] == "active" and statuses[ops_id] == "active"
    assert statuses[new_id] == "retracted"  # undo never deletes a memory: it stays, out of recall


def test_each_edit_supersedes_only_the_version_in_force(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    store = make_store(tmp_path / "store")
    ids = []
    for text in (OLD, NEW, NEW + "\nIts bucket policy is in terraform.\n"):
        (notes / "cache.md").write_text(text)
        done = _import(store.root, "markdown", str(notes))
        ids.append(done["imported"][0])  # type: ignore[index]
        assert [u["supersedes"] for u in done["updated"]] == ([[ids[-2]]] if len(ids) > 1 else [])  # type: ignore[attr-defined]
    assert _statuses(store.root) == {ids[0]: "superseded", ids[1]: "superseded", ids[2]: "active"}

    quipu("--store", str(store.root), "retract", ids[2])
    (notes / "cache.md").write_text("# Build cache\n\nGone: builds are not cached any more.\n")
    done = _import(store.root, "markdown", str(notes))
    assert done["updated"] == []  # nothing in force to supersede: the last version was retracted
    assert _statuses(store.root)[done["imported"][0]] == "active"  # type: ignore[index]


def _former_memory(memory_id: str, title: str, body: str) -> Memory:
    return Memory.create({"id": memory_id, "title": title, "class": "project-note", "origin": "import",
                          "created": "2026-01-02"}, body)


def test_a_store_imported_with_the_former_ids_holds_the_unchanged_notes_already(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "cache.md").write_text(OLD)
    index = tmp_path / "claude" / "MEMORY.md"
    index.parent.mkdir()
    index.write_text("- [Cache](cache.md) — where the build cache is\n- Deploys: only on Tuesdays\n")
    (index.parent / "cache.md").write_text("The cache lives on cachevol.\n")
    store = make_store(tmp_path / "store")
    former = {  # the ids an earlier quipu gave them: 16 hex of path and text, "mm-" and 16 of title and body
        hashlib.sha256(f"cache.md\n\n{OLD}".encode()).hexdigest()[:16]: ("Build cache", OLD.split("\n", 2)[2]),
        "mm-" + hashlib.sha256(b"Cache\n\nThe cache lives on cachevol.").hexdigest()[:16]:
            ("Cache", "The cache lives on cachevol.\n"),
        "mm-" + hashlib.sha256(b"Deploys\n\nDeploys: only on Tuesdays").hexdigest()[:16]:
            ("Deploys", "Deploys: only on Tuesdays\n"),
    }
    for memory_id, (title, body) in former.items():
        store.add(_former_memory(memory_id, title, body), action="import")
    commits = _commits(store.root)

    folder = _import(store.root, "markdown", str(notes))
    entries = _import(store.root, "memory-md", str(index))

    assert folder["imported"] == [] and folder["already_in_the_store"] == [next(iter(former))]
    assert [(e["status"], e["id"]) for e in entries["entries"]] == [("exists", m) for m in list(former)[1:]]  # type: ignore[attr-defined]
    assert _commits(store.root) == commits


def test_an_edited_memory_md_entry_supersedes_its_earlier_version_and_not_its_namesake(tmp_path: Path) -> None:
    index = tmp_path / "memory" / "MEMORY.md"
    index.parent.mkdir()
    topic = index.parent / "cache.md"
    topic.write_text("The cache lives on cachevol.\n")
    lines = ["- [Cache](cache.md) — where the build cache is", "- Deploys: only on Tuesdays",
             "- Deploys: never on Fridays"]  # two entries of one title: neither is the other's version
    index.write_text("\n".join(lines) + "\n")
    store = make_store(tmp_path / "store")
    first = {e["line"]: e["id"] for e in _import(store.root, "memory-md", str(index))["entries"]}  # type: ignore[attr-defined]
    commits = _commits(store.root)

    topic.write_text("The cache moved to s3 bucket cachevol-s3.\n")
    index.write_text("\n".join([lines[0], "- Deploys: only on Wednesdays", lines[2]]) + "\n")
    report = _import(store.root, "memory-md", str(index))

    entries = {e["line"]: e for e in report["entries"]}  # type: ignore[attr-defined]
    assert [(line, e["status"], e["supersedes"]) for line, e in entries.items()] == [
        (1, "imported", [first[1]]), (2, "imported", [first[2]]), (3, "exists", [])]
    assert _commits(store.root) == commits + 2  # one commit an entry, its supersession in it
    statuses = _statuses(store.root)
    assert [statuses[first[n]] for n in (1, 2, 3)] == ["superseded", "superseded", "active"]
    assert statuses[entries[1]["id"]] == statuses[entries[2]["id"]] == "active"
    shown = quipu("--store", str(store.root), "import", "memory-md", str(index)).stdout
    assert "Imported 0 of 3 entries" in shown

    undone = quipu("--store", str(store.root), "undo", str(entries[1]["commit"]))
    assert undone.returncode == 0, undone.stderr
    assert _statuses(store.root)[first[1]] == "active"
