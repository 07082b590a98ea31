"""Git hooks in the store: chained with the user's own, restored byte for byte (issue 2)."""
from __future__ import annotations

import json
import shlex
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quipu.store import githooks
from quipu.index import index
from quipu.errors import FatalError
from quipu.store.store import Store
from testing.fixtures import git, indexed_head, make_store, memory, quipu

USER_HOOK = b"#!/bin/sh\n# the user's own post-commit hook\necho \"ran $(git rev-parse HEAD)\" >> \"$(git rev-parse --git-dir)/user-hook.log\"\n"


@pytest.fixture
def store(store_path: Path) -> Store:
    return make_store(store_path)


def _hooks(store: Store) -> Path:
    return store.root / ".git" / "hooks"


def _commit_by_hand(store: Store, name: str) -> str:
    (store.root / name).write_text(f"{name}\n")
    git(store.root, "add", name)
    git(store.root, "commit", "-q", "-m", f"by hand: {name}")
    return git(store.root, "rev-parse", "HEAD").strip()


def test_install_keeps_an_existing_post_commit_hook_running_and_uninstall_restores_it(store: Store) -> None:
    hook = _hooks(store) / "post-commit"
    hook.write_bytes(USER_HOOK)
    hook.chmod(0o750)
    before = (hook.read_bytes(), stat.S_IMODE(hook.stat().st_mode))

    installed = githooks.install(store.root)
    assert set(installed) == set(githooks.HOOKS)
    assert githooks.is_ours(hook)
    assert (_hooks(store) / "post-commit.quipu-legacy").read_bytes() == USER_HOOK

    sha = _commit_by_hand(store, "first.txt")
    log = store.root / ".git" / "user-hook.log"
    assert log.read_text() == f"ran {sha}\n"  # the user's hook ran, through quipu's stub

    assert set(githooks.uninstall(store.root)) == set(githooks.HOOKS)
    assert (hook.read_bytes(), stat.S_IMODE(hook.stat().st_mode)) == before
    assert not (_hooks(store) / "post-commit.quipu-legacy").exists()
    assert [p.name for p in _hooks(store).iterdir() if not p.name.endswith(".sample")] == ["post-commit"]
    sha = _commit_by_hand(store, "second.txt")
    assert log.read_text().splitlines()[-1] == f"ran {sha}"


def test_reinstalling_is_idempotent(store: Store) -> None:
    (_hooks(store) / "post-commit").write_bytes(USER_HOOK)
    (_hooks(store) / "post-commit").chmod(0o755)
    githooks.install(store.root)
    first = {p.name: p.read_bytes() for p in _hooks(store).iterdir()}
    githooks.install(store.root)
    assert {p.name: p.read_bytes() for p in _hooks(store).iterdir()} == first
    githooks.uninstall(store.root)
    assert (_hooks(store) / "post-commit").read_bytes() == USER_HOOK


def test_a_second_foreign_hook_where_a_legacy_one_exists_is_a_clear_error(store: Store) -> None:
    (_hooks(store) / "post-commit").write_bytes(USER_HOOK)
    githooks.install(store.root)
    (_hooks(store) / "post-commit").write_bytes(b"#!/bin/sh\necho another tool took over\n")  # e.g. a hook manager
    with pytest.raises(FatalError) as err:
        githooks.install(store.root)
    assert "post-commit.quipu-legacy already exists" in str(err.value)
    assert "merge the two by hand" in str(err.value)
    assert (_hooks(store) / "post-commit.quipu-legacy").read_bytes() == USER_HOOK  # nothing was lost


def test_a_failing_pre_commit_hook_of_the_user_still_stops_the_commit(store: Store) -> None:
    pre = _hooks(store) / "pre-commit"
    pre.write_text("#!/bin/sh\necho 'user says no' >&2\nexit 1\n")
    pre.chmod(0o755)
    githooks.install(store.root)
    (store.root / "x.txt").write_text("x")
    git(store.root, "add", "x.txt")
    done = git_run(store, "commit", "-q", "-m", "should be refused")
    assert done.returncode != 0 and "user says no" in done.stderr
    assert git(store.root, "log", "--format=%s", "-1").strip() == "quipu: init store"


def test_pre_commit_restages_a_memory_that_gits_own_index_race_dropped(store: Store) -> None:
    """`git commit` writes back the index it read before taking the lock; a quipu write that
    landed in between loses its staged entry (the memory is still in the worktree, unchanged).
    The hook stages it again, so the person's commit does not delete the memory."""
    githooks.install(store.root)
    store.add(memory("raced-note", "A memory git's index lost"))
    rel = "memories/ra/raced-note.md"
    git(store.root, "update-index", "--force-remove", rel)  # what the race leaves behind
    assert git(store.root, "status", "--porcelain", "-uall").splitlines() == [f"D  {rel}", f"?? {rel}"]
    _commit_by_hand(store, "person.txt")
    assert rel in git(store.root, "ls-tree", "-r", "--name-only", "HEAD")
    assert git(store.root, "status", "--porcelain") == ""


def test_a_deliberate_git_rm_of_a_memory_is_left_alone(store: Store) -> None:
    githooks.install(store.root)
    store.add(memory("unwanted", "A memory a person removes by hand"))
    git(store.root, "rm", "-q", "memories/un/unwanted.md")
    git(store.root, "commit", "-q", "-m", "remove by hand")
    assert not store.exists("unwanted")


def test_hooks_refresh_the_index_after_a_plain_git_commit(store: Store) -> None:
    githooks.install(store.root)
    index.ensure_fresh(store)
    rel = store.root / "memories/ha/hand-made.md"
    rel.parent.mkdir(parents=True)
    rel.write_text("---\nid: hand-made\ntitle: written by hand\nclass: fact\ncreated: 2026-01-01\n---\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-q", "-m", "by hand")
    head = git(store.root, "rev-parse", "HEAD").strip()
    deadline = time.monotonic() + 30
    while indexed_head(store.root) != head:  # the post-commit stub refreshes in the background
        assert time.monotonic() < deadline, "the post-commit hook never refreshed the index"
        time.sleep(0.05)
    db = sqlite3.connect(store.index_path)
    assert db.execute("SELECT title FROM memories WHERE id = 'hand-made'").fetchone() == ("written by hand",)
    db.close()


def test_hooks_go_where_core_hookspath_points(store: Store) -> None:
    git(store.root, "config", "core.hooksPath", "my-hooks")
    githooks.install(store.root)
    assert githooks.is_ours(store.root / "my-hooks" / "post-commit")
    assert githooks.status(store.root) == {name: "installed" for name in githooks.HOOKS}


def test_hooks_cli_install_status_uninstall(store: Store) -> None:
    assert quipu("--store", str(store.root), "hooks", "install").returncode == 0
    done = quipu("--store", str(store.root), "hooks", "status", "--json")
    assert done.returncode == 0 and set(json.loads(done.stdout).values()) == {"installed"}
    assert quipu("--store", str(store.root), "hooks", "uninstall").returncode == 0
    assert not any(p.exists() for p in (_hooks(store) / name for name in githooks.HOOKS))


def test_the_stub_runs_the_interpreter_that_installed_it() -> None:
    """Regression (issue 2): the stub named the venv's interpreter by its realpath, which is the
    base interpreter without quipu installed."""
    assert f"py={shlex.quote(sys.executable)}\n" in githooks._stub("post-commit")


def git_run(store: Store, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(store.root), *args], capture_output=True, text=True)
