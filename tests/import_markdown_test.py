"""The store's own format as input: a memory document on stdin or in a file, and a folder of notes.

Issue 12: `quipu add -` given a memory document stored its frontmatter as body text, and there
was no bulk input at all."""
from __future__ import annotations

import json
import os
from pathlib import Path

from testing.fixtures import git, make_store, quipu

DOCUMENT = """---
title: Deploys go through CI
class: rule
topics: [deploy]
aliases: [ship to production]
---
Run scripts/deploy.sh --dry-run first.
"""


def _show(store_root: Path, memory_id: str) -> dict[str, object]:
    return json.loads(quipu("--store", str(store_root), "show", "--json", memory_id).stdout)


def test_a_memory_document_on_stdin_or_in_a_file_is_read_as_a_memory(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    at = ["--store", str(store.root)]
    from_stdin = quipu(*at, "add", "-", "--json", input=DOCUMENT)
    assert from_stdin.returncode == 0, from_stdin.stderr
    shown = _show(store.root, json.loads(from_stdin.stdout)["id"])
    assert (shown["title"], shown["class"], shown["topics"], shown["aliases"]) == (
        "Deploys go through CI", "rule", ["deploy"], ["ship to production"])
    assert str(shown["body"]).strip() == "Run scripts/deploy.sh --dry-run first."

    note = tmp_path / "NOTE.md"
    note.write_text(DOCUMENT.replace("class: rule", "class: fact").replace("Deploys", "Releases"))
    from_file = quipu(*at, "add", "--file", str(note), "--topic", "release", "--json")
    assert from_file.returncode == 0, from_file.stderr
    shown = _show(store.root, json.loads(from_file.stdout)["id"])
    assert (shown["title"], shown["class"], shown["topics"]) == ("Releases go through CI", "fact", ["release"])


def test_a_bad_field_in_a_memory_document_names_the_field_and_its_allowed_values(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    head = store.head()
    bad_class = quipu("--store", str(store.root), "add", "-", input=DOCUMENT.replace("class: rule", "class: rumour"))
    assert bad_class.returncode == 1
    assert "'class'" in bad_class.stderr and "allowed values: rule, preference" in bad_class.stderr
    unknown = quipu("--store", str(store.root), "add", "-", input=DOCUMENT.replace("class: rule", "colour: red"))
    assert unknown.returncode == 1 and "unknown field(s) colour" in unknown.stderr and "allowed fields" in unknown.stderr
    assert store.head() == head


def test_a_folder_of_notes_is_imported_in_one_commit_reporting_what_it_skipped(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "ops").mkdir(parents=True)
    (notes / ".obsidian").mkdir()
    (notes / "ops" / "deploy.md").write_text("---\ntags: [deploy, ci]\ndate: 2025-03-04\nlayout: post\n---\n"
                                             "# How we deploy\nThrough the CI pipeline, never by hand.\n")
    (notes / "postgres.md").write_text("Local postgres listens on port 5433.\n")
    (notes / "empty.md").write_text("")
    (notes / "latin.md").write_bytes(b"caf\xe9\n")
    (notes / ".obsidian" / "workspace.md").write_text("app state, not a note\n")
    os.symlink("/etc/hostname", notes / "link.md")
    store = make_store(tmp_path / "store")
    at = ["--store", str(store.root)]
    before = int(git(store.root, "rev-list", "--count", "HEAD"))

    done = quipu(*at, "import", "markdown", str(notes), "--json")

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report["imported"]) == 2
    assert {s["path"]: s["reason"].split(" (")[0] for s in report["skipped"]} == {
        "empty.md": "empty note", "latin.md": "not UTF-8 text", "link.md": "not a regular file"}
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == before + 1  # one commit for the folder
    assert git(store.root, "status", "--porcelain") == ""
    titles = {_show(store.root, i)["title"]: _show(store.root, i) for i in report["imported"]}
    assert set(titles) == {"How we deploy", "postgres"}
    assert titles["How we deploy"]["topics"] == ["deploy", "ci"]
    assert str(titles["How we deploy"]["created"]).startswith("2025-03-04")
    found = quipu(*at, "search", "--json", "postgres port")
    assert [h["id"] for h in json.loads(found.stdout)][:1] == [i for i in report["imported"] if titles["postgres"]["id"] == i]

    again = json.loads(quipu(*at, "import", "markdown", str(notes), "--json").stdout)
    assert again["imported"] == [] and sorted(again["already_in_the_store"]) == sorted(report["imported"])
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == before + 1
