"""A removal that reaches a store inside a remote's merge is judged by the commit on the line that
made it: a teammate's verified undo comes through whatever shape the history has, and a removal
refused on one side shows on the other (its sync summary and `quipu log`)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from quipu.index import index
from quipu.store.store import Store
from quipu.sync import sync
from testing.fixtures import git, memory, quipu, synced_clones


def _status(store: Store, memory_id: str) -> str:
    index.ensure_fresh(store)
    return str(index.rows(store, "SELECT status FROM memories WHERE id = ?", (memory_id,))[0]["status"])


def _tree(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD^{tree}").strip()


def _run(store: Store, *args: str) -> str:
    out = quipu("--store", str(store.root), *args)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@pytest.mark.parametrize("decision", ["retract", "supersede"])
def test_a_teammates_undo_that_arrives_inside_a_merge_comes_through(tmp_path: Path, decision: str) -> None:
    """The reported case: B undoes a decision A already has, and B's sync has to merge first."""
    _remote, (a, b) = synced_clones(tmp_path, 2)
    a.add(memory("pg-port", "staging db port", "Postgres runs on port 5433 in staging"))
    a.add(memory("pg-port-new", "staging db port, newer", "Postgres runs on port 5434 in staging"))
    sync.sync(a)
    sync.sync(b)
    if decision == "retract":
        b.retract("pg-port")
    else:
        b.supersede("pg-port", "pg-port-new")
    sync.sync(b)
    sync.sync(a)
    assert _status(a, "pg-port") == _status(b, "pg-port") != "active"
    a.add(memory("lint-ruff", "Linter", "Use ruff for lint"))
    sync.sync(a)  # origin moves on
    b.undo(memory="pg-port")
    assert "Pushed main" in _run(b, "sync")  # B's sync merges, then pushes the merge
    out = _run(a, "sync")
    assert "Refused" not in out and "undone" in out
    _run(b, "sync")
    assert _status(a, "pg-port") == _status(b, "pg-port") == "active"
    assert _tree(a) == _tree(b)


def _undo_below_a_merge(a: Store, b: Store, c: Store) -> None:
    b.undo(memory="pg-port")
    b.add(memory("later-one", "Later", "one"))
    b.add(memory("later-two", "Later", "two"))
    sync.sync(b)


def _merge_of_merges(a: Store, b: Store, c: Store) -> None:
    b.undo(memory="pg-port")
    b.add(memory("from-b", "B", "b"))
    c.add(memory("from-c", "C", "c"))
    sync.sync(b)  # merges A's commit under B's undo
    sync.sync(c)  # merges B's merge under C's own commit


def _both_sides_undo(a: Store, b: Store, c: Store) -> None:
    b.undo(memory="pg-port")
    c.undo(memory="pg-port")  # the same decision, taken back on two clones
    sync.sync(b)
    sync.sync(c)


@pytest.mark.parametrize("shape", [_undo_below_a_merge, _merge_of_merges, _both_sides_undo])
def test_a_verified_undo_passes_through_any_shape_of_merges(tmp_path: Path, shape: object) -> None:
    _remote, (a, b, c) = synced_clones(tmp_path, 3)
    a.add(memory("pg-port", "staging db port", "5433"))
    a.retract("pg-port")
    sync.sync(a)
    sync.sync(b)
    sync.sync(c)
    a.add(memory("lint-ruff", "Linter", "ruff"))
    sync.sync(a)
    a.add(memory("not-pushed", "A's own", "A has not pushed this yet"))  # A's sync must merge too
    shape(a, b, c)  # type: ignore[operator]
    result = sync.sync(a)
    assert result.refused == [] and [i.kind for i in result.incoming if i.action == "undo"]
    for store in (a, b, c):
        sync.sync(store)
    assert {_status(s, "pg-port") for s in (a, b, c)} == {"active"}
    assert _tree(a) == _tree(b) == _tree(c)


def test_a_removal_under_a_merge_is_still_judged_and_refused_by_the_commit_that_made_it(tmp_path: Path) -> None:
    """Looking through merges lets no removal in that no verified undo made: a plain `git rm`
    several commits below a merge, and a merge that drops the file itself."""
    remote, (a, b) = synced_clones(tmp_path, 2)
    a.add(memory("pg-port", "staging db port", "5433"))
    a.retract("pg-port")
    a.add(memory("other-one", "Other", "other"))
    a.label("other-one", "reviewed")
    sync.sync(a)
    sync.sync(b)
    a.add(memory("lint-ruff", "Linter", "ruff"))
    sync.sync(a)
    forger = tmp_path / "forger"
    git(tmp_path, "clone", "-q", str(b.root), str(forger))
    git(forger, "rm", "-q", "-r", "events/pg")
    git(forger, "commit", "-qm", "undo retract pg-port", "-m", "Quipu-Action: undo")
    forged = git(forger, "rev-parse", "HEAD").strip()
    (forger / "note.txt").write_text("x")
    git(forger, "add", "note.txt")
    git(forger, "commit", "-qm", "a commit above it")
    git(forger, "fetch", "-q", str(remote), "main")
    # One merge that carries the forged removal from its first parent, and itself drops a file
    # both its parents have.
    git(forger, "merge", "-q", "--no-ff", "--no-commit", "FETCH_HEAD")
    git(forger, "rm", "-q", "-r", "events/ot")
    git(forger, "commit", "-qm", "merge")
    evil_merge = git(forger, "rev-parse", "HEAD").strip()
    git(forger, "push", "-q", str(remote), "HEAD:main")
    result = sync.sync(a)
    by_path = {r.path.split("/")[1]: r for r in result.refused if r.path.startswith("events/")}
    assert by_path["pg"].commit == forged and "not the exact inverse" in by_path["pg"].reason
    assert by_path["ot"].commit == evil_merge and "a merge" in by_path["ot"].reason
    assert _status(a, "pg-port") == "retracted"
    assert a.events("other-one")


def test_a_removal_refused_on_one_side_shows_on_the_other(tmp_path: Path) -> None:
    """When A's sync keeps a file B's history removed, B's next sync says it is back, and what
    removed it, and `quipu log` shows the merge that kept it."""
    _remote, (a, b) = synced_clones(tmp_path, 2)
    a.add(memory("pg-port", "staging db port", "5433"))
    a.retract("pg-port")
    sync.sync(a)
    sync.sync(b)
    a.add(memory("lint-ruff", "Linter", "ruff"))
    sync.sync(a)
    git(b.root, "rm", "-q", "-r", "events")
    git(b.root, "commit", "-q", "--no-verify", "-m", "drop the events")
    removal = git(b.root, "rev-parse", "HEAD").strip()
    sync.sync(b)
    assert _status(b, "pg-port") == "active"
    c = sync.clone(str(tmp_path / "remote.git"), tmp_path / "c")[0]  # has B's removal too
    assert "Refused the removal of 1 file(s)" in _run(a, "sync")
    b.add(memory("b-local", "B's own", "so that B's sync merges rather than fast-forwards"))
    out = _run(b, "sync")
    assert "put back        1  pg-port" in out
    assert "events/pg/pg-port/" in out and f"removed by commit {removal[:12]}" in out
    assert _status(b, "pg-port") == "retracted"
    assert "refused removing 1 file(s) of pg-port" in _run(b, "log")
    restored = json.loads(_run(c, "sync", "--json"))["restored"]
    assert [(r["memory"], r["removed_by"]) for r in restored] == [("pg-port", removal)]
    assert json.loads(_run(a, "sync", "--json"))["restored"] == []  # A never lacked it
