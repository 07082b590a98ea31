"""A hooks folder git shares between repositories (a global core.hooksPath): quipu never writes into
it, the store runs its own hooks through a store-local core.hooksPath, and what an older quipu left
in that folder is reported and repaired."""
from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest

from quipu import doctor
from quipu.store import githooks
from quipu.store.store import Store
from testing.fixtures import git, make_store, quipu

GLOBAL_PRE_COMMIT = b"#!/bin/sh\n# the user's global pre-commit\necho \"global pre-commit in $(pwd)\" >> \"$HOME/global.log\"\n"
GLOBAL_COMMIT_MSG = b"#!/bin/sh\nexit 0\n"


@pytest.fixture
def shared(quipu_env: Path) -> Path:
    """A global core.hooksPath (as git-secrets or a company policy sets one) with the user's own hooks."""
    folder = quipu_env / ".githooks"
    folder.mkdir()
    for name, body in (("pre-commit", GLOBAL_PRE_COMMIT), ("commit-msg", GLOBAL_COMMIT_MSG)):
        (folder / name).write_bytes(body)
        (folder / name).chmod(0o755)
    subprocess.run(["git", "config", "--global", "core.hooksPath", "~/.githooks"], check=True)
    return folder


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in folder.iterdir()}


def _commit(root: Path, *, symlink: bool = False) -> subprocess.CompletedProcess[str]:
    name = f"f{len(list(root.iterdir()))}"
    (root / name).write_text("x\n")
    if symlink:
        (root / (name + "-link")).symlink_to(name)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    return subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", name], capture_output=True, text=True)


def _global_log(home: Path) -> list[str]:
    log = home / "global.log"
    return log.read_text().splitlines() if log.exists() else []


def _old_quipu_install(folder: Path) -> None:
    """What an older quipu's install did to the folder git named: the user's hook renamed beside
    quipu's stubs."""
    for name in githooks.HOOKS:
        if (folder / name).exists():
            (folder / name).rename(folder / (name + githooks.LEGACY_SUFFIX))
        (folder / name).write_text(githooks._stub(name))
        (folder / name).chmod(0o755)


def test_init_leaves_a_global_hooks_folder_and_other_repositories_alone(
        tmp_path: Path, quipu_env: Path, shared: Path) -> None:
    before = _snapshot(shared)
    done = quipu("init", str(tmp_path / "store"))
    assert done.returncode == 0, done.stderr
    assert "Installed git hooks: pre-commit" in done.stdout
    assert f"Note: the store runs its own hooks from {tmp_path / 'store' / '.git' / 'hooks'}" in done.stdout
    assert f"not those of the global core.hooksPath, {shared}" in done.stdout
    assert "its other hooks (commit-msg) do not run for the store" in done.stdout
    assert _snapshot(shared) == before

    project = tmp_path / "project"
    git(tmp_path, "init", "-q", str(project))
    (project / ".cache").mkdir()
    (project / ".cache" / "c").write_text("c\n")
    assert _commit(project, symlink=True).returncode == 0  # no quipu check in another repository
    assert git(project, "ls-tree", "-r", "--name-only", "HEAD").split() == [".cache/c", "f2", "f2-link"]
    assert _global_log(quipu_env) == [f"global pre-commit in {project}"]
    assert _snapshot(shared) == before

    store = tmp_path / "store"
    assert git(store, "config", "--local", "core.hooksPath").strip() == ".git/hooks"
    refused = _commit(store, symlink=True)
    assert refused.returncode == 1 and "quipu: refusing to commit a symlink" in refused.stderr
    assert len(_global_log(quipu_env)) == 1  # quipu's check came first and stopped the commit
    git(store, "reset", "-q")
    for link in store.glob("*-link"):
        link.unlink()
    assert _commit(store).returncode == 0
    assert _global_log(quipu_env)[-1] == f"global pre-commit in {store}"  # chained after quipu's checks

    status = quipu("--store", str(store), "hooks", "status", "--json")
    assert json.loads(status.stdout) == {name: "installed" for name in githooks.HOOKS}
    check = doctor.check_hooks(Store(store, "test"))
    assert check.ok and any(str(shared) in line for line in check.details)
    assert _snapshot(shared) == before


def test_a_failing_global_pre_commit_still_stops_a_commit_in_the_store(store_path: Path, shared: Path) -> None:
    (shared / "pre-commit").write_text("#!/bin/sh\necho 'policy says no' >&2\nexit 3\n")
    store = make_store(store_path)
    githooks.install(store.root)
    done = _commit(store.root)
    assert done.returncode != 0 and "policy says no" in done.stderr
    assert git(store.root, "log", "--format=%s", "-1").strip() == "quipu: init store"


def test_the_global_post_rewrite_gets_the_same_arguments_and_stdin(store_path: Path, quipu_env: Path,
                                                                   shared: Path) -> None:
    (shared / "post-rewrite").write_text("#!/bin/sh\n{ echo \"args: $*\"; cat; } >> \"$HOME/rewrite.log\"\n")
    (shared / "post-rewrite").chmod(0o755)
    store = make_store(store_path)
    githooks.install(store.root)
    assert _commit(store.root).returncode == 0
    old = git(store.root, "rev-parse", "HEAD").strip()
    git(store.root, "commit", "-q", "--amend", "-m", "amended")
    new = git(store.root, "rev-parse", "HEAD").strip()
    assert (quipu_env / "rewrite.log").read_text() == f"args: amend\n{old} {new}\n"


def test_uninstall_removes_only_the_hooks_path_quipu_set(store_path: Path, quipu_env: Path, shared: Path) -> None:
    store = make_store(store_path)
    config = (store.root / ".git" / "config").read_bytes()
    before = _snapshot(shared)
    assert quipu("--store", str(store.root), "hooks", "install").returncode == 0
    assert githooks.place(store.root).redirected
    done = quipu("--store", str(store.root), "hooks", "uninstall")
    assert done.returncode == 0, done.stderr
    assert "Removed the core.hooksPath quipu had set in the store's .git/config" in done.stdout
    assert (store.root / ".git" / "config").read_bytes() == config
    assert not any((store.root / ".git" / "hooks" / name).exists() for name in githooks.HOOKS)
    assert _snapshot(shared) == before
    assert _commit(store.root, symlink=True).returncode == 0  # git runs the global folder's hooks again
    assert _global_log(quipu_env) == [f"global pre-commit in {store.root}"]


def test_a_local_hooks_path_pointing_outside_is_replaced_and_put_back(
        store_path: Path, tmp_path: Path, shared: Path) -> None:
    store = make_store(store_path)
    team = tmp_path / "team-hooks"
    team.mkdir()
    git(store.root, "config", "--local", "core.hooksPath", str(team))
    config = (store.root / ".git" / "config").read_bytes()
    githooks.install(store.root)
    assert list(team.iterdir()) == []
    assert githooks.status(store.root) == {name: "installed" for name in githooks.HOOKS}
    assert f"shared={team}\n" in (store.root / ".git" / "hooks" / "post-commit").read_text()
    githooks.uninstall(store.root)
    assert (store.root / ".git" / "config").read_bytes() == config
    assert git(store.root, "config", "--local", "core.hooksPath").strip() == str(team)


def test_an_older_quipus_hooks_in_the_global_folder_are_reported_and_repaired(
        store_path: Path, tmp_path: Path, quipu_env: Path, shared: Path) -> None:
    original = _snapshot(shared)
    store = make_store(store_path)
    _old_quipu_install(shared)
    assert githooks.status(store.root) == {name: "outside" for name in githooks.HOOKS}
    check = doctor.check_hooks(store)
    assert not check.ok and "run `quipu hooks uninstall`, then `quipu hooks install`" in check.summary
    assert any(str(shared) in line and "older quipu" in line for line in check.details)

    left = _snapshot(shared)
    githooks.install(store.root)  # installing alone leaves that folder as it is, and still reports it
    assert _snapshot(shared) == left
    assert set(githooks.status(store.root).values()) == {"outside"}
    assert not doctor.check_hooks(store).ok

    done = quipu("--store", str(store.root), "hooks", "uninstall")
    assert done.returncode == 0, done.stderr
    assert f"Restored {shared}" in done.stdout
    assert _snapshot(shared) == original
    assert quipu("--store", str(store.root), "hooks", "install").returncode == 0
    assert _snapshot(shared) == original
    assert githooks.status(store.root) == {name: "installed" for name in githooks.HOOKS}
    assert doctor.check_hooks(store).ok
    project = tmp_path / "project"
    git(tmp_path, "init", "-q", str(project))
    assert _commit(project, symlink=True).returncode == 0


def test_a_global_hooks_path_set_after_install_makes_the_hooks_inactive(store_path: Path, shared: Path) -> None:
    subprocess.run(["git", "config", "--global", "--unset", "core.hooksPath"], check=True)
    store = make_store(store_path)
    githooks.install(store.root)
    assert githooks.status(store.root) == {name: "installed" for name in githooks.HOOKS}
    subprocess.run(["git", "config", "--global", "core.hooksPath", str(shared)], check=True)
    assert set(githooks.status(store.root).values()) == {"inactive"}
    assert not doctor.check_hooks(store).ok
    githooks.install(store.root)
    assert githooks.status(store.root) == {name: "installed" for name in githooks.HOOKS}


def test_a_relative_global_hooks_path_inside_the_store_is_neither_written_nor_run(
        store_path: Path, quipu_env: Path) -> None:
    """A relative core.hooksPath names a folder in each repository's work tree: in the store, that is
    store content a sync may bring, never run and never written."""
    subprocess.run(["git", "config", "--global", "core.hooksPath", ".githooks"], check=True)
    store = make_store(store_path)
    githooks.install(store.root)
    assert not (store.root / ".githooks").exists()
    assert "shared=''\n" in (store.root / ".git" / "hooks" / "pre-commit").read_text()
    assert githooks.status(store.root) == {name: "installed" for name in githooks.HOOKS}
    assert _commit(store.root, symlink=True).returncode == 1


def test_a_store_inside_a_project_keeps_the_project_and_the_global_folder_as_they_are(
        tmp_path: Path, quipu_env: Path, shared: Path) -> None:
    project = tmp_path / "project"
    git(tmp_path, "init", "-q", str(project))
    config = (project / ".git" / "config").read_bytes()
    hooks = _snapshot(project / ".git" / "hooks")
    before = _snapshot(shared)
    done = quipu("init", ".quipu", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / ".git" / "config").read_bytes() == config
    assert _snapshot(project / ".git" / "hooks") == hooks
    assert _snapshot(shared) == before
    assert git(project / ".quipu", "config", "--local", "core.hooksPath").strip() == ".git/hooks"
    assert _commit(project, symlink=True).returncode == 0
    assert _commit(project / ".quipu", symlink=True).returncode == 1
