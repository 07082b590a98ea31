"""The sync summary lists each incoming commit by what it did to which memories, read from its
trees, never from its trailers: a teammate's plain `git commit` with a false `Quipu-Action` is
listed as what it did, with its claim shown as not verified, and counted as what it did.

Remotes are real bare repositories; the teammates are a real quipu clone and a plain `git clone`
that commits and pushes with git; the victim runs the real `quipu` as a process."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pygit2
import pytest

from quipu.index import index
from quipu.store import effects
from quipu.store.memory import memory_path, render_memory
from quipu.store.store import Store
from quipu.sync import described, sync
from testing.fixtures import git, hand_commit, make_store, memory, plain_clone, quipu

A1, A2 = "api-port", "db-owner"


def _remote_with(tmp_path: Path) -> tuple[Store, Path]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    victim = make_store(tmp_path / "victim")
    victim.add(memory(A1, "API port", "The API listens on port 8080"))
    victim.add(memory(A2, "DB owner", "Maria owns the database"))
    sync.set_remote(victim, str(remote))
    sync.sync(victim)
    return victim, remote


def _commit(clone: Path, message: str, files: dict[str, bytes | None] | None = None, push: bool = True) -> str:
    sha = hand_commit(clone, message, files or {}, author=f"{clone.name} <{clone.name}@example.com>")
    if push:
        git(clone, "push", "-q", "origin", "HEAD:main")
    return sha


def _edit(clone: Path, memory_id: str, old: str, new: str) -> dict[str, bytes | None]:
    data = (clone / memory_path(memory_id)).read_text()
    assert old in data
    return {memory_path(memory_id): data.replace(old, new).encode()}


def _sync(store: Store, *args: str) -> str:
    out = quipu("--store", str(store.root), "sync", *args)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _rows(store: Store) -> dict[str, dict[str, Any]]:
    index.ensure_fresh(store)
    return {r["id"]: dict(r) for r in index.rows(store, "SELECT id, status, labels, body FROM memories")}


@pytest.mark.parametrize("claimed", ["retract", "label"])
def test_a_text_edit_under_a_false_trailer_is_listed_as_the_edit_it_is(tmp_path: Path, claimed: str) -> None:
    """The reported case: `git commit -am "quipu: retract A2"` with Quipu trailers naming A2, for
    what was an edit of A1's text, pushed from a plain clone."""
    victim, remote = _remote_with(tmp_path)
    other = sync.clone(str(remote), tmp_path / "other")[0]  # a second quipu clone, for the text summary
    mallory = plain_clone(tmp_path, remote)
    forged = _commit(mallory, f"quipu: {claimed} {A2}\n\nQuipu-Memory: {A2}\nQuipu-Action: {claimed}\n",
                     _edit(mallory, A1, "8080", "9090"))

    result = json.loads(_sync(victim, "--json"))

    said = f"claims {claimed} of {A2}; changed the text of {A1}"
    assert result["incoming"] == [{
        "commit": forged, "action": "edit", "memory": A1, "author": "mallory <mallory@example.com>",
        "summary": said, "verified": False, "claims": f"claims {claimed} of {A2}", "reverts": "",
        "changes": [{"change": "edit", "memory": A1, "path": memory_path(A1)}], "message": f"quipu: {claimed} {A2}"}]
    assert result["counts"] == {"edit": 1}
    rows = _rows(victim)
    assert rows[A2]["status"] == "active" and not rows[A2]["labels"]
    assert "9090" in rows[A1]["body"]

    out = _sync(other)
    assert f"{forged[:12]}  mallory <mallory@example.com>: {said} (not verified)" in out
    assert re.search(rf"^  text edited\s+1  {A1}$", out, re.M), out
    assert "labelled" not in out and "retracted" not in out


def test_each_kind_of_change_a_teammate_makes_is_read_from_its_commit(tmp_path: Path) -> None:
    victim, remote = _remote_with(tmp_path)
    right = sync.clone(str(remote), tmp_path / "right")[0]
    made: dict[str, str] = {}
    made["add"] = right.add(memory("new-note", "A new note", "Deploys go out on Tuesdays"))
    old = right.get(A1)
    made["edit"] = right.add(old.with_changes(body="The API listens on port 8443\n"), action="fact-set",
                             overwrite=True)
    made["label"] = right.label(A1, "reviewed")
    made["unlabel"] = right.label(A1, "reviewed", on=False)
    made["supersede"] = right.supersede(A2, "new-note")
    made["retract"] = right.retract("new-note")
    made["undo"] = right.undo(memory="new-note")[0]
    assert quipu("--store", str(right.root), "profile", "add", "preference", "The user wants short answers").returncode == 0
    made["profile"] = git(right.root, "rev-parse", "HEAD").strip()
    (right.root / memory_path(A2)).write_text((right.root / memory_path(A2)).read_text().replace("Maria", "Ana"))
    git(right.root, "commit", "-q", "--no-verify", "-am", "fix the owner")  # a hand edit: no trailers
    made["hand"] = git(right.root, "rev-parse", "HEAD").strip()
    sync.sync(right)

    result = json.loads(_sync(victim, "--json"))

    came = {i["commit"]: i for i in result["incoming"]}
    assert set(came) == set(made.values())
    seen = {name: (came[c]["action"], came[c]["memory"], came[c]["verified"], came[c]["summary"])
            for name, c in made.items()}
    assert seen == {
        "add": ("add", "new-note", True, "added new-note"),
        "edit": ("edit", A1, True, f"changed the text of {A1}"),
        "label": ("label", A1, True, f"labelled {A1} reviewed"),
        "unlabel": ("unlabel", A1, True, f"took the label reviewed off {A1}"),
        "supersede": ("supersede", A2, True, f"superseded {A2} by new-note"),
        "retract": ("retract", "new-note", True, "retracted new-note"),
        "undo": ("undo", "new-note", True, f"undid commit {made['retract'][:12]} (retracted new-note)"),
        "profile": ("profile", "profile", True, "changed the profile card"),
        "hand": ("edit", A2, True, f"changed the text of {A2}"),
    }
    assert came[made["hand"]]["claims"] == "" and came[made["undo"]]["reverts"] == made["retract"]
    assert came[made["label"]]["changes"] == [{"change": "label", "memory": A1, "label": "reviewed",
                                               "path": came[made["label"]]["changes"][0]["path"]}]
    assert result["counts"] == {"add": 1, "edit": 2, "label": 1, "unlabel": 1, "supersede": 1, "retract": 1,
                                "undo": 1, "profile": 1}


def test_a_decision_about_another_memory_than_claimed_and_merges_are_read_from_their_trees(tmp_path: Path) -> None:
    victim, remote = _remote_with(tmp_path)
    mallory = plain_clone(tmp_path, remote)
    event = json.dumps({"action": "label", "label": "unverified", "set": True, "memory": A2}).encode()
    wrong = _commit(mallory, f"quipu: label {A1} unverified\n\nQuipu-Action: label\nQuipu-Memory: {A1}\n"
                    "Quipu-Label: unverified\n", {f"events/db/{A2}/20260101T000000000000Z-abcdef.json": event},
                    push=False)
    # A clean merge brings nothing of its own; a merge whose tree differs from both parents does.
    git(mallory, "checkout", "-q", "-b", "side", "HEAD~1")
    side = _commit(mallory, "a note from the side", {memory_path("side-note"): render_memory(
        memory("side-note", "Side", "from a side branch"))}, push=False)
    git(mallory, "checkout", "-q", "main")
    git(mallory, "merge", "-q", "--no-ff", "--no-edit", "side")
    clean = git(mallory, "rev-parse", "HEAD").strip()
    git(mallory, "checkout", "-q", "-b", "side2", "HEAD~1")
    side2 = _commit(mallory, "another", {memory_path("side-two"): render_memory(memory("side-two", "Two", "two"))},
                    push=False)
    git(mallory, "checkout", "-q", "main")
    git(mallory, "merge", "-q", "--no-ff", "--no-commit", "side2")
    evil = _commit(mallory, "Merge branch side2\n\nQuipu-Action: sync\nQuipu-Memory: store\n",
                   _edit(mallory, A1, "8080", "7070"))
    assert len(pygit2.Repository(str(mallory))[evil].parent_ids) == 2

    result = json.loads(_sync(victim, "--json"))

    came = {i["commit"]: i for i in result["incoming"]}
    assert set(came) == {wrong, side, clean, side2, evil}
    assert (came[wrong]["action"], came[wrong]["memory"], came[wrong]["verified"]) == ("label", A2, False)
    assert came[wrong]["summary"] == f"claims label of {A1} (unverified); labelled {A2} unverified"
    assert (came[clean]["action"], came[clean]["changes"], came[clean]["verified"]) == ("", [], True)
    assert (came[evil]["action"], came[evil]["memory"], came[evil]["verified"]) == ("edit", A1, True)
    assert came[evil]["summary"] == f"in a merge, of its own: changed the text of {A1}"
    assert result["counts"] == {"label": 1, "add": 2, "edit": 1}
    assert _rows(victim)[A2]["labels"] == "unverified" and "7070" in _rows(victim)[A1]["body"]
    assert "mallory <mallory@example.com>" in result["authors"]


def test_the_text_summary_lists_the_first_commits_and_every_false_claim(tmp_path: Path) -> None:
    victim, remote = _remote_with(tmp_path)
    right = sync.clone(str(remote), tmp_path / "right")[0]
    for n in range(12):
        right.add(memory(f"note-{n:02d}", f"Note {n}", f"text {n}"))
    sync.sync(right)
    mallory = plain_clone(tmp_path, remote)
    forged = _commit(mallory, f"quipu: undo\n\nQuipu-Action: undo\nQuipu-Memory: {A2}\n", _edit(mallory, A2, "Maria", "Eve"))

    out = _sync(victim)

    listed = [line for line in out.splitlines() if re.match(r"^  [0-9a-f]{12}  ", line)]
    assert len(listed) == 11 and listed[-1].startswith(f"  {forged[:12]}  mallory")
    assert listed[-1].endswith(f"claims undo of {A2}; changed the text of {A2} (not verified)")
    assert "and 2 more (`--json` lists every one)" in out
    assert re.search(r"^  added\s+12  note-00, note-01", out, re.M) and "claimed undo, not verified" in out
    # --quiet still names the commit whose trailers claim what it did not do.
    mallory_again = _commit(mallory, f"quipu: add x\n\nQuipu-Action: add\nQuipu-Memory: {A1}\n",
                            _edit(mallory, A2, "Eve", "Bob"))
    quiet = _sync(victim, "--quiet")
    assert f"{mallory_again[:12]}  mallory <mallory@example.com>: claims add of {A1}; changed the text of {A2}" in quiet


def test_the_tree_comparison_finds_what_a_full_diff_finds(tmp_path: Path) -> None:
    """Files added, changed, removed, made executable, a file turned into a folder and back, deep
    folders, a symbolic link: each commit's changes, read folder by folder without opening what
    did not change, are the changes libgit2's full diff lists."""
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(root))
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.com")
    steps: list[dict[str, bytes | None]] = [
        {"a/b/c.txt": b"1", "a/d.txt": b"2", "top.txt": b"3", "z/y/x/w.txt": b"4"},
        {"a/b/c.txt": b"1 changed", "a/new.txt": b"5"},
        {"a/d.txt": None, "z/y/x/w.txt": None},
        {"top.txt": None, "top.txt/inside.md": b"now a folder"},
        {"top.txt/inside.md": None, "top.txt": b"a file again", "a/b/c.txt": b"1 again"},
    ]
    for n, step in enumerate(steps):
        for rel, data in step.items():
            if data is None:
                git(root, "rm", "-q", "-r", rel)
                continue
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
            git(root, "add", rel)
        git(root, "commit", "-q", "-m", f"step {n}")
    (root / "a/new.txt").chmod(0o755)
    (root / "link").symlink_to("a/new.txt")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "modes")
    repo = pygit2.Repository(str(root))
    trees = described.Trees(repo)
    walked = [c for c in repo.walk(repo.head.target) if c.parents]
    assert len(walked) == len(steps)
    for commit in walked:
        expected = effects.changes(repo, commit)
        assert expected and described.tree_changes(trees, commit.parents[0].tree_id, commit.tree_id) == expected


def test_changes_the_sync_did_not_take_are_listed_as_refused_and_not_counted(tmp_path: Path) -> None:
    victim, remote = _remote_with(tmp_path)
    mallory = plain_clone(tmp_path, remote)
    tidy = _commit(mallory, "tidy up", {memory_path(A2): None, "notes.txt": b"outside the schema\n"})

    result = json.loads(_sync(victim, "--json"))

    [came] = result["incoming"]
    assert (came["commit"], came["action"], came["verified"]) == (tidy, "", True)
    assert came["summary"] == f"removed {A2} (refused); wrote notes.txt (refused)"
    assert [(c["change"], c["path"], c.get("refused")) for c in came["changes"]] == [
        ("remove", memory_path(A2), True), ("file", "notes.txt", True)]
    assert result["counts"] == {} and victim.exists(A2)
