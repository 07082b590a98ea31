"""The store's own format as input: a memory document on stdin or in a file, and a folder of notes.

Issue 12: `quipu add -` given a memory document stored its frontmatter as body text, and there
was no bulk input at all."""
from __future__ import annotations

import json
import os
import random
import re
import secrets
import string
from pathlib import Path

import pytest

from testing.fixtures import git, make_store, quipu
from testing.realistic import MISSING_DATA, data_dir, real_notes

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

    assert done.returncode == 4, done.stderr  # some notes were skipped
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


def _aws_secret_key(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "/+"
    while True:  # the shape of a real one: letters of both cases and digits
        key = "".join(rng.choice(alphabet) for _ in range(40))
        if any(c.isdigit() for c in key) and any(c.isupper() for c in key) and any(c.islower() for c in key):
            return key


def _secret_notes(folder: Path) -> dict[str, str]:
    """Three notes holding realistic secrets made of fresh random characters: {path: the secret}."""
    rng = random.Random(secrets.token_bytes(16))
    access = "AKIA" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    aws = _aws_secret_key(rng)
    github = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    password = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(22))
    written = {
        "ops/staging-aws.md": ("# Staging AWS access\n\nThe staging deploy user, for the nightly job:\n\n```ini\n"
                               f"[staging]\naws_access_key_id = {access}\naws_secret_access_key = {aws}\n```\n", aws),
        "tools/ci-token.md": ("---\ntags: [ci]\n---\n# CI release token\n\nThe release workflow pushes tags with "
                              f"`GITHUB_TOKEN={github}` (scope: repo).\n", github),
        "db/reporting.md": ("# Reporting database\n\nThe dashboards read from "
                            f"postgres://reporter:{password}@reports.internal:5432/metrics every hour.\n", password),
    }
    for rel, (text, _secret) in written.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return {rel: secret for rel, (_text, secret) in written.items()}


def test_notes_that_look_like_secrets_are_skipped_by_path_and_the_rest_lands_in_one_commit(tmp_path: Path) -> None:
    """One secret-like note among 1,873 made an import commit nothing, named an internal path, and
    --dry-run said nothing was skipped."""
    data = data_dir()
    if data is None:
        pytest.skip(MISSING_DATA)
    from quipu.store.secrets_scan import find_secrets

    folder = tmp_path / "notes"
    clean = [n for n in real_notes(data) if not find_secrets(f"# {n.title}\n\n{n.body}\n")][:197]
    assert len(clean) == 197
    for i, note in enumerate(clean):
        path = folder / note.repo.replace("/", "-") / f"{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {note.title}\n\n{note.body}\n")
    planted = _secret_notes(folder)
    store = make_store(tmp_path / "store")
    at = ["--store", str(store.root)]
    head = store.head()

    dry = quipu(*at, "import", "markdown", str(folder), "--dry-run")
    dry_json = quipu(*at, "import", "markdown", str(folder), "--dry-run", "--json")
    assert dry.returncode == dry_json.returncode == 4, dry.stderr + dry_json.stderr
    assert store.head() == head
    assert "Would import 197 note(s)" in dry.stdout and "3 skipped" in dry.stdout
    listed = {s["path"]: s["reason"] for s in json.loads(dry_json.stdout)["skipped"]}
    assert set(listed) == set(planted)
    for reason in listed.values():  # the rule is named (whatever the detector calls it), the secret masked
        assert re.match(r"it looks like it holds a secret \([a-z0-9-]+(, [a-z0-9-]+)*\), first on line \d+: ", reason)
    assert "line 7" in listed["ops/staging-aws.md"]  # the line of the note itself, not of a store file

    done = quipu(*at, "import", "markdown", str(folder))
    assert done.returncode == 4, done.stderr
    assert "Imported 197 note(s)" in done.stdout and "3 skipped" in done.stdout
    for rel in planted:
        assert f"  skipped {rel}: it looks like it holds a secret" in done.stdout
        assert f"  skipped {rel}: {listed[rel]}" in dry.stdout
    assert "memories/" not in done.stdout + dry.stdout + dry_json.stdout
    assert int(git(store.root, "rev-list", "--count", f"{head}..HEAD")) == 1
    added = git(store.root, "diff", "--name-only", head, "HEAD").split()
    assert len(added) == 197 and all(p.startswith("memories/") for p in added)
    everything = done.stdout + done.stderr + dry.stdout + dry.stderr + dry_json.stdout + dry_json.stderr
    for secret in planted.values():
        assert secret not in everything  # the reason names the rule, never the secret
        assert git(store.root, "log", "--all", "-p", "-S", secret, "--format=%H") == ""

    again = quipu(*at, "import", "markdown", str(folder), "--json")
    report = json.loads(again.stdout)
    assert again.returncode == 4 and report["imported"] == [] and len(report["already_in_the_store"]) == 197
    assert {s["path"]: s["reason"] for s in report["skipped"]} == listed


def test_a_folder_link_is_listed_and_a_memory_md_entry_with_a_secret_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kept.md").write_text("# Kept\n\nThe build cache lives in ~/.cache/build.\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "private.md").write_text("# Private\n\nnot part of the notes\n")
    os.symlink(outside, folder / "linked")
    store = make_store(tmp_path / "store")
    at = ["--store", str(store.root)]
    out = quipu(*at, "import", "markdown", str(folder), "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 4 and len(report["imported"]) == 1
    assert [s["path"] for s in report["skipped"]] == ["linked"] and "links are not followed" in report["skipped"][0]["reason"]

    token = "ghp_" + secrets.token_hex(18)
    index_md = tmp_path / "MEMORY.md"
    index_md.write_text("# Memory\n\n- Tests run with `pytest -q`\n"
                        f"- The bot pushes with {token}\n- Deploys need a green CI run\n")
    out = quipu(*at, "import", "memory-md", str(index_md), "--json")
    assert out.returncode == 4, out.stderr
    report = json.loads(out.stdout)
    assert [e["status"] for e in report["entries"]] == ["imported", "imported"]
    assert [s["path"] for s in report["skipped"]] == [f"{index_md}:4"]
    assert "looks like it holds a secret" in report["skipped"][0]["reason"] and token not in out.stdout


def test_a_folder_that_cannot_be_read_is_listed_and_the_rest_imported(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every folder, so an unreadable one cannot be made here")
    folder = tmp_path / "notes"
    (folder / "locked").mkdir(parents=True)
    (folder / "kept.md").write_text("# Kept\n\nThe build cache lives in ~/.cache/build.\n")
    (folder / "locked" / "hidden.md").write_text("# Hidden\n\nunreadable\n")
    (folder / "locked").chmod(0)
    try:
        store = make_store(tmp_path / "store")
        out = quipu("--store", str(store.root), "import", "markdown", str(folder), "--json")
    finally:
        (folder / "locked").chmod(0o755)
    report = json.loads(out.stdout)
    assert out.returncode == 4 and len(report["imported"]) == 1
    assert [s["path"] for s in report["skipped"]] == ["locked"]
    assert "cannot be read" in report["skipped"][0]["reason"]


def test_an_import_builds_the_vectors_and_the_query_tokenizer_so_the_first_search_builds_nothing(tmp_path: Path) -> None:
    """The first search after a large import used to embed every memory (seconds at 10,000 notes):
    the import now leaves every vector, the flat file a search reads and the tokenizer's copy."""
    import sqlite3

    from quipu.index import embed

    if embed.locate() is None:
        pytest.skip("the static embedding (wordllama) is not installed: no vectors to build")
    notes = tmp_path / "notes"
    notes.mkdir()
    for n, text in enumerate(["Deploys go through the CI pipeline.", "Local postgres listens on port 5433.",
                              "Run the migrations before the api service starts."]):
        (notes / f"note-{n}.md").write_text(f"# Note {n}\n\n{text}\n")
    store = make_store(tmp_path / "store")
    done = quipu("--store", str(store.root), "import", "markdown", str(notes), "--json")
    assert done.returncode == 0, done.stderr
    cache = store.root / ".cache"
    built = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    assert {"vectors.sqlite", "vectors.matrix", "pieces.sqlite"} <= set(built)
    with sqlite3.connect(cache / "vectors.sqlite") as db:
        ids = {row[0] for row in db.execute("SELECT id FROM vectors")}
    assert ids == set(json.loads(done.stdout)["imported"])

    found = quipu("--store", str(store.root), "search", "which port does postgres use", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)[0]["title"] == "Note 1"
    for name in ("vectors.sqlite", "vectors.matrix", "pieces.sqlite"):  # read by the search, not written again
        assert (cache / name).stat().st_mtime_ns == built[name], name


def test_pieces_read_from_sqlite_split_a_long_text_as_the_tokenizer_file_does(tmp_path: Path) -> None:
    """A long text is split from the tables read whole (past BULK_AFTER look-ups), the same as
    from the tokenizer file and as a short text's look-ups one by one."""
    from quipu.index import embed

    files = embed.locate()
    if files is None:
        pytest.skip("the static embedding (wordllama) is not installed")
    rng = random.Random(7)
    words = ["".join(rng.choice(string.ascii_letters + "äßé-_.") for _ in range(rng.randrange(1, 14)))
             for _ in range(3000)]
    text = " ".join(words)
    from_file = embed.Pieces.from_file(files.tokenizer)
    long_text = embed.Pieces.from_db(embed.pieces_db(tmp_path / "pieces.sqlite", files.tokenizer))
    assert long_text.text(text) == from_file.text(text)
    short = embed.Pieces.from_db(embed.pieces_db(tmp_path / "pieces.sqlite", files.tokenizer))
    assert [short.word(w) for w in words[:20]] == [from_file.word(w) for w in words[:20]]


def test_a_commit_trusts_only_the_exact_bytes_a_bulk_writer_checked(tmp_path: Path) -> None:
    """The import scans each note once and the commit does not scan those bytes again; any other
    bytes (the same file with a key added after its check) are scanned and refused."""
    from quipu.errors import SecretRefused
    from quipu.store import scanned
    from quipu.store.memory import Memory, render_memory

    store = make_store(tmp_path / "store")
    memory = Memory.create({"id": "a1b2c3d4e5f60718", "title": "Deploys", "class": "rule", "origin": "import",
                            "created": "2026-01-02"}, "Deploys go through the CI pipeline.\n")
    clean = render_memory(memory)
    assert scanned.find_secrets(clean) == []
    key = "ghp_" + secrets.token_hex(18)
    with pytest.raises(SecretRefused):
        store.commit({memory.path: clean + f"token {key}\n".encode()}, "quipu: import 1 note", {"Quipu-Action": "import"})
    assert store.commit({memory.path: clean}, "quipu: import 1 note", {"Quipu-Action": "import"})
    with pytest.raises(SecretRefused):  # the message is always scanned
        store.commit({memory.path: clean}, f"quipu: import {key}", {"Quipu-Action": "import"})
