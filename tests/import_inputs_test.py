"""What an import makes of awkward input: a MEMORY.md topic file that cannot be a note, input that
holds nothing to import, a note's own class, a byte-order mark.

A linked topic file too large, missing, empty or not UTF-8 became a memory holding only the index
line (Latin-1: U+FFFD), reported "0 skipped" with exit 0; an empty folder printed "Imported 0
note(s)" and exited 0 against the help's "1 nothing was imported"; `import markdown` made every
note a project note, and a byte-order mark before the first heading lost the title."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from quipu.store.memory import MAX_FILE_BYTES
from testing.fixtures import git, make_store, quipu


def _unreadable_notes(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "big.md").write_text("a" * (5 * MAX_FILE_BYTES))
    (folder / "latin.md").write_bytes(b"Caf\xe9 topic\n")
    (folder / "empty.md").write_text("")


def test_a_topic_file_that_cannot_be_a_note_skips_its_entry_with_the_reason_import_markdown_gives(
        tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    _unreadable_notes(folder)
    os.symlink("empty.md", folder / "link.md")  # a link that stays in the folder
    (tmp_path / "outside.md").write_text("private words\n")
    (folder / "MEMORY.md").write_text(
        "- [Big](big.md) — big\n- [Latin](latin.md) — l\n- [Gone](gone.md) — g\n- [Empty](empty.md) — e\n"
        "- [Link](link.md) — a link\n- [Out](../outside.md) — leaves the folder\n"
        "- Deploys go through CI, never by hand\n- [Docs](https://example.com/guide.md) — a web page\n")
    store = make_store(tmp_path / "store")
    commits = int(git(store.root, "rev-list", "--count", "HEAD"))

    done = quipu("--store", str(store.root), "import", "memory-md", str(folder / "MEMORY.md"), "--json")

    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    as_notes = json.loads(quipu("--store", str(store.root), "import", "markdown", str(folder), "--dry-run",
                                "--json").stdout)
    same = {s["path"]: s["reason"] for s in as_notes["skipped"]}
    for name in ("big.md", "latin.md", "empty.md", "link.md"):
        assert skipped[str(folder / name)] == same[name]  # the same reader, the same words
    assert skipped[str(folder / "gone.md")] == "cannot be read: No such file or directory"
    assert "leaves the folder" in skipped[f"{folder / 'MEMORY.md'}:6"]
    assert "links are not followed" in skipped[str(folder / "link.md")]
    assert len(skipped) == 6
    kept = {e["title"]: store.get(e["id"]).body for e in report["entries"]}
    assert kept == {"Deploys go through CI, never by hand": "Deploys go through CI, never by hand\n",
                    "Docs": "[Docs](https://example.com/guide.md) — a web page\n"}
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == commits + 2
    shown = quipu("--store", str(store.root), "import", "memory-md", str(folder / "MEMORY.md"))
    assert shown.returncode == 4 and f"  skipped {folder / 'latin.md'}: not UTF-8 text" in shown.stdout


def test_input_holding_nothing_to_import_exits_1_and_says_how_to_fix_it(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    at = ["--store", str(store.root), "import"]
    (tmp_path / "empty").mkdir()
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "todo.txt").write_text("not a markdown note\n")
    (tmp_path / "prose.md").write_text("# Memory\n\nNo list here.\n")
    db = sqlite3.connect(tmp_path / "claude-mem.db")
    db.execute("CREATE TABLE observations (id INTEGER PRIMARY KEY, title TEXT)")
    db.commit()
    db.close()
    head = store.head()
    for args in (["markdown", str(tmp_path / "empty")], ["markdown", str(tmp_path / "text")],
                 ["markdown", str(tmp_path / "text"), "--dry-run"], ["basic-memory", str(tmp_path / "empty")]):
        done = quipu(*at, *args)
        assert (done.returncode, done.stdout) == (1, ""), args
        assert "no *.md or *.markdown file" in done.stderr and "nothing was imported" in done.stderr
        assert "- check the path" in done.stderr
    for args, said in ((["memory-md", str(tmp_path / "prose.md")], "no entry in"),
                       (["claude-mem", str(tmp_path / "claude-mem.db")], "no observation or session summary")):
        done = quipu(*at, *args)
        assert done.returncode == 1 and said in done.stderr and "- check the path" in done.stderr
    assert store.head() == head


def test_when_every_note_is_skipped_the_import_exits_4_and_says_nothing_was_imported(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    _unreadable_notes(folder)
    store = make_store(tmp_path / "store")
    for extra in ([], ["--dry-run"]):
        done = quipu("--store", str(store.root), "import", "markdown", str(folder), *extra)
        assert done.returncode == 4, done.stderr
        assert "imported: all 3 were skipped" in done.stdout and "  skipped latin.md: not UTF-8" in done.stdout
    (folder / "MEMORY.md").write_text("- [Latin](latin.md) — l\n- [Empty](empty.md) — e\n")
    done = quipu("--store", str(store.root), "import", "memory-md", str(folder / "MEMORY.md"))
    assert done.returncode == 4 and "Nothing was imported: all 2 were skipped" in done.stdout


def test_a_note_keeps_its_own_class_and_a_byte_order_mark_is_not_part_of_it(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    rule = "---\nclass: rule\n---\n# Never force-push main\n\nUse --force-with-lease on your own branches.\n"
    (folder / "rule.md").write_text(rule)
    (folder / "rumour.md").write_text("---\nclass: rumour\n---\n# Cafeteria\n\nOpens at eight.\n")
    (folder / "plain.md").write_text("# Staging\n\nStaging lives at staging.internal.\n")
    (folder / "bom.md").write_bytes("\ufeff# Release train\n\nWe ship every other Tuesday.\n".encode())
    store = make_store(tmp_path / "store")
    done = quipu("--store", str(store.root), "import", "markdown", str(folder), "--json")
    assert done.returncode == 0, done.stderr

    made = {m.title: m for m in (store.get(i) for i in json.loads(done.stdout)["imported"])}
    assert {title: m.cls for title, m in made.items()} == {
        "Never force-push main": "rule", "Cafeteria": "project-note", "Staging": "project-note",
        "Release train": "project-note"}
    assert made["Release train"].body == "# Release train\n\nWe ship every other Tuesday.\n"
    by_hand = make_store(tmp_path / "by-hand")
    added = quipu("--store", str(by_hand.root), "add", "--file", str(folder / "rule.md"), "--json")
    assert by_hand.get(json.loads(added.stdout)["id"]).cls == made["Never force-push main"].cls


def test_a_memory_md_topic_file_keeps_its_own_class_before_claude_codes_type(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("- [Force push](force.md) — never to main\n- [Deploys](deploys.md) — how\n")
    (folder / "force.md").write_text("---\nclass: rule\ntype: project\n---\nNever force-push main.\n")
    (folder / "deploys.md").write_text("---\ntype: reference\n---\nDeploys go through the release train.\n")
    store = make_store(tmp_path / "store")

    done = quipu("--store", str(store.root), "import", "memory-md", str(folder / "MEMORY.md"), "--json")

    assert done.returncode == 0, done.stderr
    classes = {e["title"]: e["class"] for e in json.loads(done.stdout)["entries"]}
    assert classes == {"Force push": "rule", "Deploys": "reference"}


def test_a_memory_md_link_leading_outside_its_folder_is_listed_as_a_topic_file_not_read(tmp_path: Path) -> None:
    """Whatever file it names (a dotfile, an absolute path, a link in the folder to a file or folder
    outside it), a link leaving the folder is not followed: its entry is skipped and listed with the
    link, in the text and in --json, and no memory is made of the entry's line alone."""
    home = tmp_path / "h1"
    home.mkdir()
    (home / ".bashrc").write_text("export SHELL_WORD=zanzibar\n")
    (home / "topic.md").write_text("---\ntype: feedback\n---\nzanzibar outside words\n")
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "inside.md").write_text("---\ntype: feedback\n---\nReview every migration twice.\n")
    os.symlink(home / "topic.md", folder / "host.md")
    os.symlink(home, folder / "shared")
    (folder / "MEMORY.md").write_text(
        "- [Inside](inside.md) — the migration rule\n"
        "- [Escape](../h1/.bashrc) — the shell setup\n"
        "- [Abs](/etc/hostname) — the host's name\n"
        "- [Sym](host.md) — a topic file linked out\n"
        "- [Through](shared/topic.md) — through a linked folder\n"
        "- [Diagram](diagram.png) — a picture beside the index\n"
        "- [Docs](https://example.com/guide) — a web page\n", encoding="utf-8")
    store = make_store(tmp_path / "store")
    at = ["--store", str(store.root), "import", "memory-md", str(folder / "MEMORY.md")]

    done = quipu(*at, "--json")

    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    assert [e["title"] for e in report["entries"]] == ["Inside", "Diagram", "Docs"]
    index = folder / "MEMORY.md"
    listed = [(s["path"], s["topic_file"], s["reason"].split(" (")[0]) for s in report["skipped"]]
    assert listed == [(f"{index}:{line}", link, f"its link {link} leaves the folder of the MEMORY.md")
                      for line, link in ((2, "../h1/.bashrc"), (3, "/etc/hostname"), (4, "host.md"),
                                         (5, "shared/topic.md"))]
    assert all("that topic file was not read, and the entry was not imported" in s["reason"]
               for s in report["skipped"])
    assert "zanzibar" not in git(store.root, "log", "-p", "--all")  # nothing outside was read
    shown = quipu(*at, "--dry-run")
    assert f"  skipped {index}:2: its link ../h1/.bashrc leaves the folder of the MEMORY.md (through ..): " \
           "that topic file was not read" in shown.stdout
    assert "never followed: the file is not read, and its entry is skipped" in " ".join(
        quipu("import", "--help").stdout.split())
