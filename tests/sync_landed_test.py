"""What `quipu sync` says came in is what came into this store: a change another clone's merge
refused, or a later commit changed again, is not reported as landed; the merge that refused it
is named; counts count what landed; "put back" speaks only of this store's own removals. Also:
an undo that keeps and retracts memories says so, a sync merge's first line is cut at a whole id,
and `quipu doctor` after a clone that held a commit back has no note about `quipu sync`.

Remotes are real bare repositories; the hostile party is a plain `git clone` that pushes with
git; the quipu clones run the real `quipu` as a process."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from quipu.store.memory import memory_path, render_memory
from quipu.store.store import Store
from quipu.sync import sync
from testing.fixtures import git, hand_commit, memory, plain_clone, quipu, synced_clones

EVIL = "eeaaaaaaaaaaaaaaaaaaaaaa"


def _push(clone: Path, message: str, files: dict[str, bytes | None]) -> str:
    git(clone, "add", "-A")
    sha = hand_commit(clone, message, files, author=f"{clone.name} <{clone.name}@example.com>")
    git(clone, "push", "-q", "origin", "HEAD:main")
    return sha


def _run(store: Store, *args: str) -> str:
    out = quipu("--store", str(store.root), *args)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _sync_json(store: Store) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(_run(store, "sync", "--json"))
    return result


def _head(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD").strip()


def _landed(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for i in result["incoming"] for c in i["changes"] if not c.get("refused")]


def test_a_fast_forward_to_a_merge_that_refused_reports_only_what_landed(tmp_path: Path) -> None:
    """The reported case: A's sync refuses what a plain-git pusher sent (a symbolic link as a
    memory, a file outside the schema, a setting) and takes the rest; two other quipu clones,
    fast-forwarding to A's merge, are not told the refused files came in, and are told which merge
    refused them."""
    remote, (a, b, third) = synced_clones(tmp_path, 3)
    mallory = plain_clone(tmp_path, remote)
    (mallory / "memories" / "ee").mkdir(parents=True)
    (mallory / memory_path(EVIL)).symlink_to("/etc/passwd")
    (mallory / "quipu.toml").write_bytes((mallory / "quipu.toml").read_bytes() + b"\n# changed by mallory\n")
    (mallory / "notes.txt").write_bytes(b"x\n")
    (mallory / memory_path("good-one")).parent.mkdir(parents=True, exist_ok=True)
    (mallory / memory_path("good-one")).write_bytes(render_memory(memory("good-one", "Good", "any clone may take it")))
    pushed = _push(mallory, "add things", {})  # everything above, added as git does it (the link as a link)

    refused = {r.path for r in sync.sync(a).refused}
    assert refused == {memory_path(EVIL), "notes.txt", "quipu.toml"}
    merge = _head(a)
    assert len(a.repo[merge].parent_ids) == 2 and git(remote, "rev-parse", "main").strip() == merge

    result = _sync_json(b)

    assert result["after"] == merge  # a fast-forward to A's merge
    assert {c["memory"] for c in _landed(result) if c["change"] == "add"} == {"good-one"}
    assert all(b.exists(c["memory"]) for c in _landed(result) if c["change"] in ("add", "edit"))
    assert not b.exists(EVIL) and not (b.root / "notes.txt").exists()
    assert result["counts"] == {"add": 1} and result["restored"] == []
    came = {i["commit"]: i for i in result["incoming"]}
    kept_out = {c["path"]: c for c in came[pushed]["changes"] if c.get("refused")}
    assert set(kept_out) == {memory_path(EVIL), "notes.txt", "quipu.toml"}
    assert {c["refused_by"] for c in kept_out.values()} == {merge}
    assert all(f"refused by merge {merge[:12]} of " in c["why"] for c in kept_out.values())
    assert came[pushed]["action"] == "add" and came[pushed]["memory"] == "good-one"
    assert {k["path"] for k in came[merge]["kept_out"]} == set(kept_out)
    assert {k["commit"] for k in came[merge]["kept_out"]} == {pushed}

    out = _run(third, "sync")

    assert re.search(r"^  added\s+1  good-one$", out, re.M), out
    counted = [line for line in out.splitlines() if re.match(r"^  \S[^:]*\s\d+  ", line)]
    assert counted == ["  added           1  good-one"], out
    line = next(line for line in out.splitlines() if line.startswith(f"  {pushed[:12]}  "))
    assert re.search(rf": added {EVIL} \(not in the store: refused by merge {merge[:12]} of [^)]*\); added good-one; "
                     rf"wrote notes.txt, quipu.toml \(not in the store: refused by merge {merge[:12]} of ", line), line
    merge_line = next(line for line in out.splitlines() if line.startswith(f"  {merge[:12]}  "))
    assert f"a merge that refused what commit {pushed[:12]} did (added {EVIL}; " in merge_line
    assert quipu("--store", str(third.root), "show", EVIL).returncode == 1
    assert f"(no commit changed {EVIL}" in _run(third, "log", "--memory", EVIL)


def test_a_memory_this_store_never_had_is_no_put_back_and_its_add_is_what_came_in(tmp_path: Path) -> None:
    """A adds a memory; a plain-git clone removes it; A's sync refuses the removal. B, which never
    had the memory, gets it by a fast-forward: it came in as A's add, not as a file "put back"."""
    remote, (a, b) = synced_clones(tmp_path, 2)
    added = a.add(memory("pg-port", "staging db port", "5433"))
    sync.sync(a)
    mallory = plain_clone(tmp_path, remote)
    removal = _push(mallory, "drop it", {memory_path("pg-port"): None})
    assert [r.path for r in sync.sync(a).refused] == [memory_path("pg-port")]
    merge = _head(a)

    result = _sync_json(b)

    assert result["restored"] == [] and result["counts"] == {"add": 1} and b.exists("pg-port")
    came = {i["commit"]: i for i in result["incoming"]}
    assert came[added]["changes"] == [{"change": "add", "memory": "pg-port", "path": memory_path("pg-port")}]
    [dropped] = came[removal]["changes"]
    assert dropped["refused"] and dropped["refused_by"] == merge
    out = _run(sync.clone(str(remote), tmp_path / "late")[0], "sync")
    assert "Put back" not in out


def test_a_legitimate_change_is_not_marked_refused_when_a_later_removal_of_it_is(tmp_path: Path) -> None:
    """B merges itself: A's add of a memory, then edited, lands and is counted as both; A's edit
    of another, which a plain-git commit then removed, is not in B's store (B's merge refuses the
    removal and keeps B's version): it is marked with that commit, and the removal as refused."""
    remote, (a, b) = synced_clones(tmp_path, 2)
    a.add(memory("pg-port", "staging db port", "5433"))
    sync.sync(a)
    sync.sync(b)
    edited = a.add(a.get("pg-port").with_changes(body="5434\n"), action="fact-set", overwrite=True)
    added = a.add(memory("lint", "Linter", "flake8"))
    again = a.add(a.get("lint").with_changes(body="ruff\n"), action="fact-set", overwrite=True)
    sync.sync(a)
    mallory = plain_clone(tmp_path, remote)
    removal = _push(mallory, "drop it", {memory_path("pg-port"): None})
    b.add(memory("b-own", "B's own", "so that B's sync merges"))

    result = _sync_json(b)

    came = {i["commit"]: i for i in result["incoming"]}
    assert [c.get("refused", False) for n in (added, again) for c in came[n]["changes"]] == [False, False]
    [kept_out] = came[edited]["changes"]
    assert kept_out["refused"] and kept_out["refused_by"] == removal
    assert came[edited]["summary"] == (f"changed the text of pg-port (not in the store: removed by commit "
                                       f"{removal[:12]} of mallory <mallory@example.com>; this store's own version stays)")
    assert came[removal]["summary"] == "removed pg-port (refused)"
    assert result["counts"] == {"add": 1, "edit": 1} and result["restored"] == []
    assert "5433" in b.get("pg-port").body and "ruff" in b.get("lint").body


def test_an_undo_that_keeps_and_retracts_a_memory_says_so(tmp_path: Path) -> None:
    """A re-import of a changed note makes a new memory superseding the old; its undo puts the old
    one back in force and keeps the new one, retracted. The other clone's sync says both."""
    remote, (a, b) = synced_clones(tmp_path, 2)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text("# Deploy\nDeploys go out on Tuesdays\n")
    _run(a, "import", "markdown", str(notes))
    sync.sync(a)
    sync.sync(b)
    (notes / "deploy.md").write_text("# Deploy\nDeploys go out on Wednesdays\n")
    _run(a, "import", "markdown", str(notes))
    imported = _head(a)
    _run(a, "undo", imported)
    undo = _head(a)
    retracts = a.repo[undo].message.split("Quipu-Retracts: ", 1)[1].split()[0]
    sync.sync(a)

    out = _run(b, "sync")

    undo_line = next(line for line in out.splitlines() if line.startswith(f"  {undo[:12]}  "))
    assert undo_line.endswith(f"; retracted {retracts}"), undo_line
    assert re.search(rf"^  retracted\s+1  {retracts}$", out, re.M), out
    undone = re.search(r"^  undone\s+1  (\S+)$", out, re.M)
    assert undone and undone.group(1) != retracts and b.exists(undone.group(1)) and b.exists(retracts)
    assert f"undid commit {imported[:12]} (added {retracts}; superseded {undone.group(1)} by {retracts})" in undo_line


def test_a_sync_merge_first_line_names_whole_ids_and_counts_the_rest(tmp_path: Path) -> None:
    """Six memories whose removal the merge refuses: the first line names what fits of their ids,
    each whole, and counts the rest; the body names every file."""
    remote, (a,) = synced_clones(tmp_path, 1)
    ids = [f"{n:02d}{'0123456789abcdef' * 2}"[:24] for n in range(6)]
    for memory_id in ids:
        a.add(memory(memory_id, f"Note {memory_id}", "kept"))
    sync.sync(a)
    mallory = plain_clone(tmp_path, remote)
    _push(mallory, "drop them", {memory_path(memory_id): None for memory_id in ids})

    assert len(sync.sync(a).refused) == len(ids)

    message = a.repo[_head(a)].message
    subject = message.split("\n", 1)[0]
    listed = re.fullmatch(r"quipu: sync from origin; refused removing 6 file\(s\) of (.+) and (\d+) more", subject)
    assert listed and len(subject) <= 100, subject
    names = listed.group(1).split(", ")
    assert set(names) <= set(ids) and int(listed.group(2)) == len(ids) - len(names)
    assert all(f"Refused {memory_path(memory_id)}: " in message for memory_id in ids)
    assert subject in _run(a, "log")  # shown whole


def _mktree(repo: Path, lines: list[str]) -> str:
    return subprocess.run(["git", "-C", str(repo), "mktree"], input="".join(lines), capture_output=True, text=True,
                          check=True).stdout.strip()


def test_doctor_after_a_clone_that_held_a_commit_back_has_no_note_about_sync(tmp_path: Path) -> None:
    """The clone fetched the commit it did not take; that is no sync's doing. Once a sync fetches
    it, the note is there."""
    remote, (a,) = synced_clones(tmp_path, 1)
    a.add(memory("pg-port", "staging db port", "5433"))
    sync.sync(a)
    blob = subprocess.run(["git", "-C", str(remote), "hash-object", "-w", "--stdin"], input="x", capture_output=True,
                          text=True, check=True).stdout.strip()
    folder = _mktree(remote, [f"100644 blob {blob}\tconfig\n"])
    root = [line + "\n" for line in git(remote, "ls-tree", "main").splitlines()] + [f"040000 tree {folder}\t.git\n"]
    evil = git(remote, "commit-tree", _mktree(remote, root), "-p", "main", "-m", "evil").strip()
    git(remote, "update-ref", "refs/heads/main", evil)

    cloned = quipu("clone", str(remote), str(tmp_path / "late"))
    assert cloned.returncode == 1 and f"Not taken: commit {evil[:12]}" in cloned.stdout, cloned.stdout + cloned.stderr
    late = Store(tmp_path / "late")
    doctor = quipu("--store", str(late.root), "doctor")
    assert "did not take" not in doctor.stdout and "hasDotgit" not in doctor.stdout, doctor.stdout
    assert json.loads(quipu("--store", str(late.root), "doctor", "--json").stdout)["checks"][0]["ok"]

    assert quipu("--store", str(late.root), "sync").returncode == 1  # held back again, and now fetched by a sync
    assert "fetched with a remote commit that `quipu sync` did not take" in quipu("--store", str(late.root),
                                                                                  "doctor").stdout
