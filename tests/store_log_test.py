"""`quipu log` of the whole store says what each commit did to which memories, read from its trees
against its first parent; a commit's message is a note only when its trailers agree with that, and
a commit whose trailers claim something else says so. Real stores, a real remote, a plain `git
clone` that commits with false trailers, and the real CLI."""
from __future__ import annotations

import json
from pathlib import Path

from quipu.store.memory import memory_path
from quipu.store.store import Store
from quipu.sync import sync
from testing.fixtures import git, make_store, memory, quipu, synced_clones


def run(store: Path, *args: str) -> str:
    proc = quipu("--store", str(store), *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def lines(store: Path, *args: str) -> dict[str, str]:
    """Each line of `quipu log`, by its commit's short id."""
    return {line[:12]: line for line in run(store, "log", *args).splitlines() if line[:12].isalnum()}


def _hostile_history(tmp_path: Path) -> tuple[Store, dict[str, str]]:
    """A store whose history holds quipu's own commits, a verified undo, a hand edit and a
    teammate's text edit pushed under a false `Quipu-Action: supersede`."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    store = make_store(tmp_path / "store")
    made = {"add": store.add(memory("api-port", "API port", "The API listens on port 8080"))}
    store.add(memory("db-owner", "DB owner", "Maria owns the database"))
    made["retract"] = store.retract("db-owner")
    made["label"] = store.label("api-port", "reviewed")
    made["undo"] = store.undo(commit=made["label"])[0]
    made["cased"] = store.label("api-port", "Needs_Check")  # a label quipu writes as it is given
    path = store.root / memory_path("db-owner")
    path.write_text(path.read_text().replace("Maria", "Ana"))
    git(store.root, "commit", "-q", "--no-verify", "-am", "owner changed")
    made["hand"] = git(store.root, "rev-parse", "HEAD").strip()
    sync.set_remote(store, str(remote))
    sync.sync(store)
    mallory = tmp_path / "mallory"
    git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(mallory))
    theirs = mallory / memory_path("api-port")
    theirs.write_text(theirs.read_text().replace("8080", "9090"))
    git(mallory, "commit", "-q", "--no-verify", "-am",
        "quipu: supersede db-owner by api-port\n\nQuipu-Action: supersede\nQuipu-Memory: db-owner\n"
        "Quipu-Supersedes: db-owner\nQuipu-Superseded-By: api-port\nQuipu-Sweep: sw-1\n")
    git(mallory, "push", "-q", "origin", "HEAD:main")
    made["forged"] = git(mallory, "rev-parse", "HEAD").strip()
    sync.sync(store)
    return store, made


def test_each_commit_is_said_by_what_it_did_and_a_false_claim_is_marked(tmp_path: Path) -> None:
    store, made = _hostile_history(tmp_path)
    shown = lines(store.root)
    short = {name: sha[:12] for name, sha in made.items()}

    forged = shown[short["forged"]]
    assert forged.split()[2:4] == ["edit", "api-port"]
    assert forged.endswith("claims supersede of db-owner by api-port; changed the text of api-port (not verified)")
    assert "message:" not in forged and "sweep=" not in forged  # neither its first line nor its trailers as fact
    assert shown[short["add"]].split()[2:4] == ["add", "api-port"]
    assert shown[short["add"]].endswith('added api-port (message: "quipu: add api-port API port")')
    assert shown[short["retract"]].split()[2:4] == ["retract", "db-owner"]
    assert shown[short["undo"]].split()[2:4] == ["undo", "api-port"]
    assert f"undid commit {short['label']} (labelled api-port reviewed)" in shown[short["undo"]]
    assert shown[short["cased"]].endswith('labelled api-port Needs_Check (message: "quipu: label api-port Needs_Check")'
                                          "  (label=Needs_Check)")
    hand = shown[short["hand"]]  # no trailers: what it did, and nothing it says
    assert hand.split()[2:4] == ["edit", "db-owner"] and hand.endswith("changed the text of db-owner")

    entries = {e["commit"]: e for e in json.loads(run(store.root, "log", "--json"))}
    entry = entries[made["forged"]]
    assert (entry["agrees"], entry["did"], entry["claims"]) == (
        False, "changed the text of api-port", "claims supersede of db-owner by api-port")
    assert entry["changes"] == [{"change": "edit", "memory": "api-port", "path": memory_path("api-port")}]
    assert entry["trailers"]["Quipu-Action"] == "supersede"  # what the message says, kept as data
    assert entries[made["hand"]]["agrees"] is None and entries[made["add"]]["agrees"] is True


def test_the_action_and_sweep_filters_keep_only_commits_that_did_what_their_trailers_say(tmp_path: Path) -> None:
    store, made = _hostile_history(tmp_path)
    real = store.supersede("db-owner", "api-port", sweep="sw-1")

    superseded = lines(store.root, "--action", "supersede")
    assert set(superseded) == {real[:12]}  # not the text edit that claims a supersession
    assert set(lines(store.root, "--sweep", "sw-1")) == {real[:12]}
    assert set(lines(store.root, "--action", "label")) == {made["label"][:12], made["cased"][:12]}
    assert lines(store.root, "--action", "undo", "--limit", "1").keys() == {made["undo"][:12]}


def test_a_teammates_sync_merge_is_said_by_what_it_brought_in(tmp_path: Path) -> None:
    _remote, (left, right) = synced_clones(tmp_path, 2)
    left.add(memory("left-note", "Left", "from the left"))
    right.add(memory("right-note", "Right", "from the right"))
    sync.sync(left)
    sync.sync(right)  # a merge: its first parent is right's line

    merge = git(right.root, "rev-parse", "HEAD").strip()
    line = lines(right.root)[merge[:12]]
    assert line.split()[2:4] == ["merge", "left-note"]
    assert "a merge that brought in: added left-note (message: \"quipu: sync from origin\")" in line
