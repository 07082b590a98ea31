"""A folder of hundreds of real notes imported as a person runs it: one commit whose blobs are one
pack, the notes that may not enter listed and the rest landed, an index equal to a rebuild of the
same commit, and the refresh and the secret scan's one-pass keyword test equal to what they replace."""
from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from quipu.index import index
from quipu.store.memory import MAX_FILE_BYTES
from testing.fixtures import git, make_store, quipu
from testing.realistic import MISSING_DATA, data_dir, real_notes

NOTES = 420  # past packing.BULK_BLOBS: the blobs go through one pack


def _write_real_notes(folder: Path, count: int) -> list[str]:
    """``count`` notes of memories-real (a third with frontmatter, a third with a heading); their paths."""
    data = data_dir()
    if data is None:
        pytest.skip(MISSING_DATA)
    source = [n for n in real_notes(data) if n.body.strip()]
    paths = []
    for n in range(count):
        note = source[n % len(source)]
        title = " ".join(note.title.split())[:80] or "note"
        body = f"{note.body.strip()}\n\n(copy {n})\n"
        rel = f"part-{n // 100}/note-{n:04d}.md"
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if n % 3 == 0:
            text = f"---\ntitle: {json.dumps(title)}\ntags: [imported]\ndate: 2026-01-{n % 28 + 1:02d}\n---\n{body}"
        else:
            text = f"# {title}\n\n{body}" if n % 3 == 1 else body
        path.write_text(text, encoding="utf-8")
        paths.append(rel)
    return paths


def _bad_notes(folder: Path) -> set[str]:
    bad = folder / "bad"
    bad.mkdir()
    rng = random.Random(7)
    key = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(40))
    (bad / "secret.md").write_text(f"# AWS\n\naws_secret_access_key = {key}\n", encoding="utf-8")
    (bad / "too-big.md").write_text("# Big\n\n" + "words of a long note\n" * (MAX_FILE_BYTES // 20 + 10))
    (bad / "latin1.md").write_bytes("# Caf\xe9\n\nnot UTF-8\n".encode("latin-1"))
    (bad / "empty.md").write_text("---\ntitle: Nothing here\n---\n\n", encoding="utf-8")
    return {"bad/secret.md", "bad/too-big.md", "bad/latin1.md", "bad/empty.md"}


def _index_state(root: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], list[int]]:
    """The index's rows, its term counts, and what a few full-text queries find."""
    db = sqlite3.connect(str(root / ".cache" / "index.sqlite"))
    try:
        rows = db.execute("SELECT id, path, title, description, aliases, tags, body, class, status, labels,"
                          " supersedes, created_ts FROM memories ORDER BY id").fetchall()
        terms = db.execute("SELECT term, df FROM term_df ORDER BY term").fetchall()
        found = [db.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", (q,)).fetchone()[0]
                 for q in ("test", "docker", "migration OR deploy", "copy")]
    finally:
        db.close()
    return rows, terms, found


def test_hundreds_of_real_notes_land_in_one_commit_and_one_pack_and_the_index_equals_a_rebuild(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    good = _write_real_notes(folder, NOTES)
    bad = _bad_notes(folder)
    store = make_store(tmp_path / "store")
    before = store.head()
    done = quipu("--store", str(store.root), "import", "markdown", str(folder), "--json")
    assert done.returncode == 4, done.stderr  # some notes skipped, the rest imported
    report = json.loads(done.stdout)
    skipped = {s["path"] for s in report["skipped"]}
    assert bad <= skipped
    # A real note that itself looks like a credential is skipped too, by its path, and nothing else is.
    assert skipped - bad <= set(good) and len(skipped - bad) <= NOTES // 100
    assert len(report["imported"]) == NOTES - len(skipped - bad)
    assert git(store.root, "rev-parse", "HEAD~1").strip() == before  # one commit
    assert git(store.root, "status", "--porcelain").strip() == ""
    git(store.root, "fsck", "--strict", "--no-dangling")
    packed = {line.split()[0] for idx in (store.root / ".git" / "objects" / "pack").glob("*.idx")
              for line in git(store.root, "verify-pack", "-v", str(idx)).splitlines() if " blob " in line}
    blobs = {line.split()[2] for line in git(store.root, "ls-tree", "-r", "HEAD", "memories").splitlines()}
    assert len(blobs) == len(report["imported"]) and blobs <= packed  # one pack, not a loose file each
    listed = json.loads(quipu("--store", str(store.root), "list", "--limit", "0", "--json").stdout)
    assert sorted(m["id"] for m in listed) == sorted(report["imported"])

    incremental = _index_state(store.root)
    assert len(incremental[0]) == len(report["imported"]) and all(incremental[2])
    rebuilt = quipu("--store", str(store.root), "index", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert _index_state(store.root) == incremental

    again = quipu("--store", str(store.root), "import", "markdown", str(folder), "--json")
    assert again.returncode == 4 and json.loads(again.stdout)["imported"] == []
    assert len(json.loads(again.stdout)["already_in_the_store"]) == len(report["imported"])


def test_a_refresh_over_many_memories_and_their_events_equals_a_rebuild(tmp_path: Path) -> None:
    """More memories change than a statement has variables for, some with events and some removed:
    the refresh (rows in a batch, events read in one pass) leaves what a rebuild builds."""
    from quipu.commands import import_

    folder = tmp_path / "notes"
    _write_real_notes(folder, 700)
    store = make_store(tmp_path / "store")
    index.ensure_fresh(store)
    indexed = store.head()
    done = import_.import_markdown(store, folder)  # committed, not indexed yet
    ids = sorted(m.id for m in done.imported)
    store.retract(ids[3], reason="wrong")
    store.label(ids[5], "verified", detail="checked")
    store.commit({f"memories/{ids[7][:2]}/{ids[7]}.md": None}, "quipu: drop one", {"Quipu-Action": "test"})
    assert index.ensure_fresh(store).action == "incremental"
    assert store.head() != indexed
    incremental = _index_state(store.root)
    statuses = {row[0]: (row[8], row[9]) for row in incremental[0]}
    assert statuses[ids[3]] == ("retracted", "retracted") and statuses[ids[5]][1] == "verified"
    assert ids[7] not in statuses and len(statuses) == len(ids) - 1
    assert index.ensure_fresh(store, force_rebuild=True).action == "rebuilt"
    assert _index_state(store.root) == incremental


def test_the_keywords_of_a_text_are_found_in_one_pass_exactly() -> None:
    from quipu.store import secrets_scan

    words = (*secrets_scan._KEYWORDS, *sorted(secrets_scan._LITERALS))  # and the token families' literals
    rng = random.Random(11)
    texts = ["", "nothing to see", "PASSWORD", "passwd password pass", "admin /root: one-time"]
    data = data_dir()
    if data is not None:
        texts += [n.body for n in real_notes(data)[:400]]
    for _ in range(2000):  # keywords run together, cut short, overlapping
        picked = rng.sample(words, 4)
        texts.append("".join(w[: rng.randint(1, len(w))] + rng.choice(["", " ", "_", w[-2:]]) for w in picked))
    for text in texts:
        low = text.lower()
        assert secrets_scan._keywords_in(low) == {w for w in words if w in low}, text


def test_a_long_import_shows_its_progress_on_a_terminal_and_nowhere_else(tmp_path: Path) -> None:
    from tests.importers_test import _stderr_on_a_terminal

    folder = tmp_path / "notes"
    _write_real_notes(folder, NOTES)
    (folder / "bad").mkdir()
    (folder / "bad" / "empty.md").write_text("\n", encoding="utf-8")
    seen = _stderr_on_a_terminal("--store", str(make_store(tmp_path / "a").root), "import", "markdown", str(folder))
    assert "Reading notes [" in seen and f"] {NOTES + 1}/{NOTES + 1}" in seen and "Committing" in seen
    piped = quipu("--store", str(make_store(tmp_path / "b").root), "import", "markdown", str(folder))
    assert piped.returncode == 4 and piped.stderr == "" and "skipped bad/empty.md" in piped.stdout


def test_without_git_on_path_a_bulk_import_still_lands_its_blobs_one_by_one(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    _write_real_notes(folder, 300)
    store = make_store(tmp_path / "store")
    empty = tmp_path / "no-programs"
    empty.mkdir()
    done = quipu("--store", str(store.root), "import", "markdown", str(folder), "--json", env={"PATH": str(empty)})
    assert done.returncode in (0, 4), done.stderr
    imported = json.loads(done.stdout)["imported"]
    assert len(imported) >= 297
    assert not list((store.root / ".git" / "objects" / "pack").glob("*.pack"))  # libgit2's loose files
    git(store.root, "fsck", "--strict", "--no-dangling")
    assert git(store.root, "status", "--porcelain").strip() == ""
    listed = json.loads(quipu("--store", str(store.root), "list", "--limit", "0", "--json").stdout)
    assert sorted(m["id"] for m in listed) == sorted(imported)
