"""Commits into the store's git repository without touching anyone else's work.

Contract:
- ``commit_files`` writes one commit that sets (bytes) or removes (None) the given repository
  paths. It runs under an exclusive ``flock`` on ``<gitdir>/quipu.lock`` (so quipu writers queue
  instead of losing each other's work), builds the new tree with pygit2 without the shared git
  index, and moves the branch with a compare-and-swap (a person's ``git commit`` at the same
  moment makes the swap fail; the commit is rebuilt on the new tip and retried).
- After the branch moved, the touched worktree files and git index entries are brought in line
  with HEAD, so ``git status`` stays clean. A journal file records the paths first: a writer
  killed at any point leaves a store whose branch is consistent, and the next writer re-syncs
  the journalled paths before it does anything else.
- ``revert_commits`` undoes commits the same way (a revert commit each), refusing cleanly when a
  revert would conflict.
- libgit2 never collects garbage, so now and then a detached ``git gc --auto`` is started.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pygit2

from quipu.errors import ConflictError, NoStore

LOCK_NAME = "quipu.lock"
JOURNAL_NAME = "quipu-pending.json"
MAX_CAS_RETRIES = 50
STALE_GIT_LOCK_SECONDS = 30.0
_FILEMODE_BLOB = pygit2.enums.FileMode.BLOB if hasattr(pygit2, "enums") else pygit2.GIT_FILEMODE_BLOB
_FILEMODE_TREE = pygit2.enums.FileMode.TREE if hasattr(pygit2, "enums") else pygit2.GIT_FILEMODE_TREE


def open_repo(root: Path) -> pygit2.Repository:
    try:
        repo = pygit2.Repository(str(root))
    except (pygit2.GitError, KeyError):
        raise NoStore(
            f"{root} is not a git repository\n- run `quipu init {root}` to create a store there"
        ) from None
    if repo.is_bare or repo.workdir is None:
        raise NoStore(f"{root} is a bare repository; a store needs a working tree\n- run `quipu init` elsewhere")
    return repo


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("quipu", "quipu@localhost")


def branch_ref(repo: pygit2.Repository) -> pygit2.Reference:
    """The branch HEAD points at; refuses a detached HEAD."""
    if repo.head_is_detached:
        raise ConflictError(
            f"the store's HEAD is detached ({str(repo.head.target)[:12]})\n"
            f"- run `git -C {repo.workdir} checkout main` (or your store's branch) and try again"
        )
    try:
        return repo.lookup_reference(repo.references["HEAD"].target)  # type: ignore[arg-type]
    except (KeyError, pygit2.GitError):
        raise ConflictError(
            f"the store at {repo.workdir} has no commits on its branch\n- run `quipu init {repo.workdir}`"
        ) from None


@contextlib.contextmanager
def writer_lock(repo: pygit2.Repository) -> Iterator[None]:
    path = os.path.join(repo.path, LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _tree_with(
    repo: pygit2.Repository, tree: pygit2.Tree | None, parts: list[str], blob: pygit2.Oid | None
) -> pygit2.Oid | None:
    """Copy-on-write of the trees along one path; returns None when the tree ends up empty."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    name = parts[0]
    if len(parts) == 1:
        if blob is None:
            if tree is not None and name in tree:
                builder.remove(name)
        else:
            builder.insert(name, blob, _FILEMODE_BLOB)
    else:
        sub = None
        if tree is not None and name in tree:
            entry = tree[name]
            sub = repo[entry.id] if entry.type_str == "tree" else None
        new_sub = _tree_with(repo, sub, parts[1:], blob)  # type: ignore[arg-type]
        if new_sub is None:
            if tree is not None and name in tree:
                builder.remove(name)
        else:
            builder.insert(name, new_sub, _FILEMODE_TREE)
    if len(builder) == 0:
        return None
    return builder.write()


def _build_tree(
    repo: pygit2.Repository, base: pygit2.Tree | None, changes: Mapping[str, bytes | None]
) -> pygit2.Oid:
    tree = base
    oid: pygit2.Oid | None = base.id if base is not None else None
    for path, data in changes.items():
        blob = repo.create_blob(data) if data is not None else None
        oid = _tree_with(repo, tree, path.split("/"), blob)
        if oid is None:
            oid = repo.TreeBuilder().write()
        tree = repo[oid]  # type: ignore[assignment]
    assert oid is not None
    return oid


def commit_files(
    root: Path, changes: Mapping[str, bytes | None], message: str, *, repo: pygit2.Repository | None = None
) -> str | None:
    """Commit ``changes`` on the current branch; returns the new commit id, or None if nothing changed."""
    repo = repo or open_repo(root)
    with writer_lock(repo):
        recover(repo)
        sig = signature(repo)
        for _attempt in range(MAX_CAS_RETRIES):
            ref = branch_ref(repo)
            parent = repo[ref.target]
            tree_id = _build_tree(repo, parent.tree, changes)  # type: ignore[attr-defined]
            if tree_id == parent.tree.id:  # type: ignore[attr-defined]
                return None
            oid = repo.create_commit(None, sig, sig, message, tree_id, [parent.id])
            _write_journal(repo, str(oid), list(changes))
            if _swap(repo, ref, oid):
                if _sync_paths(repo, list(changes)):
                    _clear_journal(repo)
                _maybe_gc(repo, str(oid))
                return str(oid)
        raise ConflictError(
            "the store's branch kept moving under quipu; nothing was written\n"
            "- stop the other program writing to the store with git, then try again"
        )


def revert_commits(root: Path, commits: list[str], message_for: dict[str, str]) -> list[str]:
    """Revert each commit (in the order given) as its own commit; all or nothing per commit."""
    repo = open_repo(root)
    made: list[str] = []
    with writer_lock(repo):
        recover(repo)
        sig = signature(repo)
        for sha in commits:
            for _attempt in range(MAX_CAS_RETRIES):
                ref = branch_ref(repo)
                head = repo[ref.target]
                target = repo[sha]
                if len(target.parents) != 1:  # type: ignore[attr-defined]
                    raise ConflictError(f"commit {sha[:12]} is a merge or root commit; quipu cannot undo it")
                index = repo.revert_commit(target, head)  # type: ignore[arg-type]
                if index.conflicts is not None:
                    paths = sorted({(c[1] or c[0] or c[2]).path for c in index.conflicts})
                    raise ConflictError(
                        f"undoing {sha[:12]} conflicts with later changes to {', '.join(paths)}\n"
                        "- undo the later commits first (see `quipu log`), or edit the memory by hand"
                    )
                tree_id = index.write_tree(repo)
                changed = [
                    d.delta.new_file.path if d.delta.status_char() != "D" else d.delta.old_file.path
                    for d in repo.diff(head.tree, repo[tree_id])  # type: ignore[attr-defined]
                ]
                oid = repo.create_commit(None, sig, sig, message_for[sha], tree_id, [head.id])
                _write_journal(repo, str(oid), changed)
                if _swap(repo, ref, oid):
                    if _sync_paths(repo, changed):
                        _clear_journal(repo)
                    made.append(str(oid))
                    break
            else:
                raise ConflictError("the store's branch kept moving under quipu; stop other writers and retry")
    return made


def _swap(repo: pygit2.Repository, ref: pygit2.Reference, oid: pygit2.Oid) -> bool:
    """Compare-and-swap the branch from the tip ``ref`` was read at to ``oid``."""
    deadline = time.monotonic() + 5.0
    while True:
        try:
            ref.set_target(oid, "quipu: commit")
            return True
        except pygit2.GitError as exc:
            text = str(exc).lower()
            if "lock" in text and time.monotonic() < deadline:
                _remove_stale_lock(os.path.join(repo.path, ref.name + ".lock"))
                time.sleep(0.01)
                continue
            if "lock" in text:
                raise ConflictError(
                    f"git's lock on {ref.name} is held by another program\n"
                    f"- if no git command is running, remove {os.path.join(repo.path, ref.name)}.lock"
                ) from None
            return False  # the branch moved: rebuild on the new tip


def _remove_stale_lock(path: str) -> None:
    """Under quipu's own lock, a git lock file this old was left by a killed process."""
    try:
        if time.time() - os.stat(path).st_mtime > STALE_GIT_LOCK_SECONDS:
            os.unlink(path)
    except OSError:
        pass


def _write_journal(repo: pygit2.Repository, commit: str, paths: list[str]) -> None:
    path = os.path.join(repo.path, JOURNAL_NAME)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"commit": commit, "paths": paths}, fh)
    os.replace(tmp, path)


def _clear_journal(repo: pygit2.Repository) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(repo.path, JOURNAL_NAME))


def recover(repo: pygit2.Repository) -> None:
    """Finish the worktree/index sync of a writer that died; call with the writer lock held."""
    path = os.path.join(repo.path, JOURNAL_NAME)
    try:
        with open(path, encoding="utf-8") as fh:
            pending = json.load(fh)
        paths = [p for p in pending.get("paths", []) if isinstance(p, str)]
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        paths = []
    if not paths or _sync_paths(repo, paths):
        _clear_journal(repo)


def _safe_worktree_path(workdir: str, rel: str) -> str:
    full = os.path.normpath(os.path.join(workdir, rel))
    if not full.startswith(os.path.normpath(workdir) + os.sep):
        raise ConflictError(f"refusing to write outside the store: {rel!r}")
    return full


def _sync_paths(repo: pygit2.Repository, paths: list[str]) -> bool:
    """Make worktree files and git index entries of ``paths`` match HEAD; False if git's index was busy."""
    tree = repo[branch_ref(repo).target].tree  # type: ignore[attr-defined]
    workdir = repo.workdir
    present: list[str] = []
    for rel in paths:
        full = _safe_worktree_path(workdir, rel)
        try:
            entry = tree[rel]
        except KeyError:
            entry = None
        if entry is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full)
            _prune_empty_dirs(workdir, os.path.dirname(full))
            continue
        data = repo[entry.id].data  # type: ignore[attr-defined]
        os.makedirs(os.path.dirname(full), exist_ok=True)
        tmp = f"{full}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, full)
        present.append(rel)
    return _update_git_index(repo, paths, set(present))


def _prune_empty_dirs(workdir: str, directory: str) -> None:
    stop = os.path.normpath(workdir)
    while os.path.normpath(directory).startswith(stop + os.sep):
        try:
            os.rmdir(directory)
        except OSError:
            return
        directory = os.path.dirname(directory)


def _update_git_index(repo: pygit2.Repository, paths: list[str], present: set[str]) -> bool:
    deadline = time.monotonic() + 3.0
    lock = os.path.join(repo.path, "index.lock")
    while True:
        try:
            index = repo.index
            index.read(True)
            for rel in paths:
                if rel in present:
                    index.add(rel)
                else:
                    with contextlib.suppress(OSError, KeyError, pygit2.GitError):
                        index.remove(rel)
            index.write()
            return True
        except pygit2.GitError:
            if time.monotonic() > deadline:
                # A person's git holds the index: HEAD is right, and the journal stays so the
                # next quipu write re-syncs these entries; only `git status` is briefly off.
                return False
            _remove_stale_lock(lock)
            time.sleep(0.02)


def _maybe_gc(repo: pygit2.Repository, oid: str) -> None:
    """About one commit in 256 starts a detached ``git gc --auto`` (libgit2 never collects)."""
    if not oid.startswith("00"):
        return
    with contextlib.suppress(OSError):
        subprocess.Popen(
            ["git", "-C", repo.workdir, "gc", "--auto", "--quiet"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
