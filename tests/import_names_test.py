"""Names that are not UTF-8, in every import format: a note file's name (`import markdown`,
`import basic-memory`), a topic file a MEMORY.md links (%-escaped), a path inside claude-mem's
database. Each is read, named with its bytes escaped (``\\xNN``), and found again by the next import.

A note named `caf\\xe9.md` (Latin-1) was skipped as `caf\\ufffd.md` (which file?) with the reason
"cannot be read as a note: UnicodeEncodeError ... surrogates not allowed", and one such byte in
claude-mem's files_read stopped the whole import."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from testing.fixtures import git, make_store, quipu


def _named(folder: Path, name: bytes, data: bytes) -> Path:
    path = folder / os.fsdecode(name)
    try:
        path.write_bytes(data)
    except OSError as exc:  # a file system that holds only UTF-8 names
        pytest.skip(f"this file system refuses a name that is not UTF-8: {exc}")
    return path


def _show(root: Path, memory_id: str) -> dict[str, object]:
    done = quipu("--store", str(root), "show", "--json", memory_id)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["markdown", "basic-memory"])
def test_a_note_whose_file_name_is_not_utf8_is_imported_named_by_its_escaped_bytes(tmp_path: Path, kind: str) -> None:
    store = make_store(tmp_path / "store")
    notes = tmp_path / "notes"
    notes.mkdir()
    latin = _named(notes, b"caf\xe9.md", b"# Latin name\n\nA note about the espresso machine.\n")
    _named(notes, b"r\xe9sum\xe9.md", b"No heading, so the file name is the title.\n")
    _named(notes, b"bad-\xff.md", b"\xff\xfe not text\n")
    at = ["--store", str(store.root), "import", kind, str(notes)]

    done = quipu(*at, "--json")
    assert done.returncode == 4, done.stderr  # only the note that is not UTF-8 text is skipped
    report = json.loads(done.stdout)
    assert report["skipped"] == [{"path": "bad-\\xff.md", "reason": "not UTF-8 text (byte 0)"}]
    titles = {_show(store.root, mid)["title"]: mid for mid in report["imported"]}
    assert set(titles) == {"Latin name", "r\\xe9sum\\xe9"}
    assert "espresso machine" in str(_show(store.root, titles["Latin name"])["body"])
    shown = quipu(*at)
    assert "  skipped bad-\\xff.md: not UTF-8 text (byte 0)" in shown.stdout.splitlines()

    head = store.head()
    again = json.loads(quipu(*at, "--json").stdout)  # the same names give the same ids
    assert again["imported"] == [] and set(again["already_in_the_store"]) == set(report["imported"])
    assert store.head() == head

    latin.write_bytes(b"# Latin name\n\nA note about the espresso machine, descaled monthly.\n")
    edited = json.loads(quipu(*at, "--json").stdout)
    assert [(u["path"], u["supersedes"]) for u in edited["updated"]] == [("caf\\xe9.md", [titles["Latin name"]])]
    found = quipu("--store", str(store.root), "search", "--json", "espresso descaled")
    assert [hit["id"] for hit in json.loads(found.stdout)][:1] == edited["imported"]


def test_a_topic_file_linked_by_its_escaped_bytes_is_read_and_named_faithfully(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    folder = tmp_path / "memory"
    folder.mkdir()
    _named(folder, b"caf\xe9.md", b"---\ntype: reference\n---\nThe espresso machine is descaled monthly.\n")
    (folder / "MEMORY.md").write_text("- [Espresso](caf%E9.md) \u2014 the machine\n", encoding="utf-8")
    at = ["--store", str(store.root), "import", "memory-md", str(folder / "MEMORY.md"), "--json"]

    done = quipu(*at)
    assert done.returncode == 0, done.stderr
    entry, = json.loads(done.stdout)["entries"]
    assert entry["topic_file"] == f"{folder}/caf\\xe9.md" and entry["class"] == "reference"
    assert _show(store.root, entry["id"])["body"] == "The espresso machine is descaled monthly.\n"
    again, = json.loads(quipu(*at).stdout)["entries"]
    assert (again["id"], again["status"]) == (entry["id"], "exists")


def test_a_path_in_claude_mems_database_that_is_not_utf8_is_kept_escaped_and_stops_nothing(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    path = tmp_path / "claude-mem.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE observations (id INTEGER PRIMARY KEY, title TEXT, narrative TEXT, files_read TEXT, "
               "project TEXT, created_at TEXT)")
    db.execute("INSERT INTO observations VALUES (1, 'Build cache', 'The build cache lives in /var/cache/b.', "
               "'[\"build.py\"]', 'shop', '2026-02-01T10:00:00Z')")
    db.execute("INSERT INTO observations VALUES (2, CAST(X'4c6174696e20e9' AS TEXT), 'Read a file named in Latin-1.', "
               "CAST(X'5b22636166e92e7079225d' AS TEXT), 'shop', '2026-02-01T10:00:00Z')")  # ["caf\xe9.py"]
    db.commit()
    db.close()

    done = quipu("--store", str(store.root), "import", "claude-mem", str(path), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report["imported"]) == 2 and report["skipped"] == []
    latin = {str(m["title"]): m for m in (_show(store.root, mid) for mid in report["imported"])}["Latin \\xe9"]
    assert "Files read: caf\\xe9.py" in str(latin["body"])
    assert git(store.root, "status", "--porcelain") == ""
    again = json.loads(quipu("--store", str(store.root), "import", "claude-mem", str(path), "--json").stdout)
    assert again["imported"] == [] and len(again["already_in_the_store"]) == 2
