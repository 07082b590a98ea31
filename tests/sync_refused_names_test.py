"""A remote commit whose tree holds a name git itself refuses (``.git``, ``..``) is never taken:
sync and clone say so (exit 1, with how to go on) and take what came before it, nothing is
written or run, `quipu doctor` keeps calling the store intact, and once the remote is cleaned
every clone syncs again. Also: `quipu undo` of a remote commit a sync took only in part."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from quipu.store.memory import render_memory
from quipu.store.store import Store
from quipu.sync import history, sync
from testing.fixtures import git, make_store, memory, quipu


def _tree(remote: Path, lines: list[str]) -> str:
    return subprocess.run(["git", "-C", str(remote), "mktree"], input="".join(lines), capture_output=True,
                          text=True, check=True).stdout.strip()


def _blob(remote: Path, data: str) -> str:
    return subprocess.run(["git", "-C", str(remote), "hash-object", "-w", "--stdin"], input=data,
                          capture_output=True, text=True, check=True).stdout.strip()


def _listing(remote: Path, treeish: str) -> list[str]:
    return [line + "\n" for line in git(remote, "ls-tree", treeish).splitlines()]


def _hostile_commit(remote: Path, shape: str, marker: Path) -> str:
    """A commit on the remote's branch whose tree holds the entry ``shape`` names."""
    hook = _blob(remote, f"#!/bin/sh\ntouch {marker}\n")
    hooks = _tree(remote, [f"100755 blob {hook}\tpost-merge\n"])
    folder = _tree(remote, [f"040000 tree {hooks}\thooks\n"])
    root = _listing(remote, "main")
    memories = git(remote, "rev-parse", "main:memories").strip()
    if shape in (".git", ".GIT", "git~1", ".git.", ".g\u200cit"):
        root.append(f"040000 tree {folder}\t{shape}\n")
    else:  # memories/.. or memories/.git, beside the memories already there
        inner = _tree(remote, [*_listing(remote, memories), f"040000 tree {folder}\t{shape.split('/')[1]}\n"])
        root = [line for line in root if not line.endswith("\tmemories\n")] + [f"040000 tree {inner}\tmemories\n"]
    tip = git(remote, "rev-parse", "main").strip()
    commit = git(remote, "commit-tree", _tree(remote, root), "-p", tip, "-m", "evil").strip()
    git(remote, "update-ref", "refs/heads/main", commit)
    return commit


def _world(tmp_path: Path) -> tuple[Path, Store, Store]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a = make_store(tmp_path / "a")
    a.add(memory("pg-port", "staging db port", "5433"))
    sync.set_remote(a, str(remote))
    sync.sync(a)
    b = sync.clone(str(remote), tmp_path / "b")[0]
    b.add(memory("from-b", "B's memory", "made before the hostile commit"))
    sync.sync(b)
    return remote, a, b


@pytest.mark.parametrize("shape", [".git", "memories/..", "memories/.git", ".GIT", "git~1", ".g\u200cit"])
def test_a_commit_holding_a_name_git_refuses_is_not_taken_and_nothing_crashes(tmp_path: Path, shape: str) -> None:
    remote, a, _b = _world(tmp_path)
    marker = tmp_path / "PWNED"
    evil = _hostile_commit(remote, shape, marker)
    hooks = a.root / ".git" / "hooks"
    before_hooks = {p.name: p.read_bytes() for p in hooks.iterdir()}

    out = quipu("--store", str(a.root), "sync")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "unexpected error" not in out.stderr
    assert f"Not taken from origin: commit {evil[:12]}" in out.stdout
    assert f"force-with-lease=refs/heads/main:{evil}" in out.stdout and "Pushed nothing" in out.stdout
    assert a.exists("from-b")  # what came before it still merged
    assert subprocess.run(["git", "-C", str(a.root), "merge-base", "--is-ancestor", evil, "HEAD"]).returncode == 1
    assert {p.name: p.read_bytes() for p in hooks.iterdir()} == before_hooks
    assert git(a.root, "status", "--porcelain") == "" and not marker.exists()
    doctor = quipu("--store", str(a.root), "doctor", "--json")
    git_check = json.loads(doctor.stdout)["checks"][0]
    assert git_check["ok"], git_check  # the refused commit's trees are no part of the store

    out = quipu("clone", str(remote), str(tmp_path / "c"), "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    cloned = json.loads(out.stdout)
    assert cloned["held_back"] == evil and {r["commit"] for r in cloned["refused"]} == {evil}
    c = Store(tmp_path / "c")
    assert c.exists("from-b") and not marker.exists()
    assert subprocess.run(["git", "-C", str(c.root), "merge-base", "--is-ancestor", evil, "HEAD"]).returncode == 1
    assert json.loads(quipu("--store", str(c.root), "doctor", "--json").stdout)["checks"][0]["ok"]


def test_once_the_remote_is_cleaned_as_the_sync_says_every_clone_syncs_again(tmp_path: Path) -> None:
    remote, a, b = _world(tmp_path)
    evil = _hostile_commit(remote, ".git", tmp_path / "PWNED")
    b.add(memory("late-b", "late", "written while the remote held the hostile commit"))
    assert quipu("--store", str(b.root), "sync").returncode == 1  # B is held back too, and pushes nothing
    out = quipu("--store", str(a.root), "sync")
    fix = next(line for line in out.stdout.splitlines() if "push --force-with-lease" in line)
    command = fix.split("`")[1]
    subprocess.run(command, shell=True, check=True, capture_output=True)
    for store in (b, a, b):
        out = quipu("--store", str(store.root), "sync")
        assert out.returncode == 0, out.stdout + out.stderr
    assert a.exists("late-b") and b.exists("pg-port")
    assert evil not in git(remote, "rev-list", "main")
    assert json.loads(quipu("--store", str(a.root), "doctor", "--json").stdout)["checks"][0]["ok"]


def test_a_tree_git_refuses_on_the_stores_own_branch_is_still_reported(tmp_path: Path) -> None:
    """doctor's leniency is for objects outside the store's history only."""
    remote, a, _b = _world(tmp_path)
    evil = _hostile_commit(remote, "memories/..", tmp_path / "PWNED")
    git(a.root, "fetch", "-q", str(remote), "main")
    git(a.root, "update-ref", "refs/heads/main", evil)  # as if another tool had taken it
    doctor = quipu("--store", str(a.root), "doctor")
    assert doctor.returncode == 1 and "hasDotdot" in doctor.stdout and "[!!] git repository" in doctor.stdout


def test_a_remote_whose_first_commit_holds_a_name_git_refuses_cannot_be_cloned(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    folder = _tree(remote, [f"100644 blob {_blob(remote, 'x')}\tconfig\n"])
    root = _tree(remote, [f"100644 blob {_blob(remote, '')}\tquipu.toml\n", f"040000 tree {folder}\t.git\n"])
    git(remote, "update-ref", "refs/heads/main", git(remote, "commit-tree", root, "-m", "evil").strip())
    out = quipu("clone", str(remote), str(tmp_path / "c"))
    assert out.returncode == 1 and "cannot be cloned" in out.stderr and "unexpected" not in out.stderr
    assert not (tmp_path / "c").exists()


def test_names_git_refuses() -> None:
    refused = [".git", ".GIT", ".Git.", ".git ", "git~1", "GIT~1", ".git::$INDEX_ALLOCATION", ".g\u200cit",
               "\ufeff.git", "a\\.git", ".", "..", "", "a/b"]
    plain = [".gitignore", ".gitmodules", "git", "gitx", ".gitx", "git~2", "...", "a.md", "memories", ".github"]
    assert [n for n in refused if not history.git_refuses(n)] == []
    assert [n for n in plain if history.git_refuses(n)] == []


def test_undo_of_a_remote_commit_a_sync_took_only_in_part_says_what_is_left(tmp_path: Path) -> None:
    """The commit added a memory and a symlink; the sync refused the symlink. Its undo refuses as
    the undo of a memory's creation does, since that is all that is left."""
    remote, a, _b = _world(tmp_path)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    (other / "memories" / "ne").mkdir(parents=True)
    (other / "memories" / "ne" / "new-one.md").write_bytes(render_memory(memory("new-one", "New", "new")))
    (other / "memories" / "ne" / "evil-link.md").symlink_to("/etc/passwd")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "add new-one", "-m", "Quipu-Action: add\nQuipu-Memory: new-one")
    git(other, "push", "-q", "origin", "main")
    commit = git(other, "rev-parse", "HEAD").strip()
    assert [r.path for r in sync.sync(a).refused] == ["memories/ne/evil-link.md"]
    out = quipu("--store", str(a.root), "undo", commit)
    assert out.returncode == 1
    assert f"commit {commit[:12]} created new-one; undo never deletes a memory" in out.stderr
    assert "quipu retract new-one" in out.stderr and "already undone" not in out.stderr
    assert a.exists("new-one")


def test_a_name_that_is_not_utf8_is_refused_file_by_file_in_every_output(tmp_path: Path) -> None:
    """git takes such a name, so the commit is taken and the file refused; no message, commit or
    JSON chokes on its bytes."""
    remote, a, _b = _world(tmp_path)
    blob = _blob(remote, "x\n")
    folder = subprocess.run(["git", "-C", str(remote), "mktree"], input=f"100644 blob {blob}\t".encode() + b"\xff\xfe.md\n",
                            capture_output=True, check=True).stdout.decode().strip()
    root = _tree(remote, [*_listing(remote, "main"), f"040000 tree {folder}\tzz\n"])
    git(remote, "update-ref", "refs/heads/main", git(remote, "commit-tree", root, "-p", "main", "-m", "bytes").strip())
    out = quipu("clone", str(remote), str(tmp_path / "c"))
    assert out.returncode == 0 and "refused zz/\\udcff\\udcfe.md" in out.stdout, out.stdout + out.stderr
    out = quipu("--store", str(a.root), "sync", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert [r["path"] for r in json.loads(out.stdout)["refused"]] == ["zz/\\udcff\\udcfe.md"]
    assert "Refused zz/\\udcff\\udcfe.md" in git(a.root, "log", "-1", "--format=%B")
