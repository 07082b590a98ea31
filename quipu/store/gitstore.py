"""Commits into the store's git repository without touching anyone else's work.

Contract:
- ``commit_files`` writes one commit that sets (bytes) or removes (None) the given repository
  paths. It runs under an exclusive ``flock`` on ``<gitdir>/quipu.lock`` (so quipu writers queue
  instead of losing each other's work), builds the new tree with pygit2 without the shared git
  index, and moves the branch with a compare-and-swap (a person's ``git commit`` at the same
  moment makes the swap fail; the commit is rebuilt on the new tip and retried).
- Paths are repository-relative, '/'-separated, and may not leave the store (no absolute paths,
  no '.' or '..' parts, no NUL, nothing under ``.git``). ``create_only`` paths must not exist and
  ``require`` paths must exist in the parent commit; both are checked under the lock, against
  the tip the commit is built on.
- The worktree files of the touched paths are written first; then quipu takes git's own
  ``index.lock`` (O_EXCL, as git does), prepares the new index in it from ``.git/index`` read under
  that lock (so a person's ``git add`` is never undone), swaps the branch, and renames the
  prepared index into place. Holding git's index lock across the swap means a person's
  ``git commit`` can neither sweep quipu's staged file into its own commit nor commit, on top of
  quipu's commit, an index without quipu's file. Afterwards ``git status`` is clean.
- A journal file (``<gitdir>/quipu-pending.json``) records the writer's pid, the paths and the
  step it is in (``index``, ``swap``) first: a writer killed at any point leaves a store whose
  branch is consistent, and the next writer, under the lock, removes the git lock file and the
  temporary files the dead writer left and syncs the journalled paths to HEAD before it does
  anything else. A git lock file that is not provably a dead quipu writer's is never removed (a
  person's ``git commit`` may hold ``index.lock`` while their editor is open); the paths stay in
  the journal and the next write syncs them instead.
- ``revert_commits`` undoes commits the same way (a revert commit each), refusing cleanly when a
  revert would conflict; ``keep`` leaves given paths as the branch has them and adds given files
  (``quipu.store.undo`` keeps the memories a commit created, and retracts them).
- libgit2 never collects garbage: after each write ``quipu.store.packing`` checks the loose
  objects as git's auto-gc does and, past git's limits, packs them in a detached ``git gc --auto``
  that holds the writer lock while it runs.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path

import pygit2

from quipu.errors import ConflictError, NoStore
from quipu.store.indexlock import GitIndexLock, compact_index
from quipu.store.journal import Journal, recover, safe_worktree_path, write_worktree
from quipu.store import packing
from quipu.store.locks import file_lock
from quipu.store.trees import build_tree, check_path, check_preconditions

LOCK_NAME = "quipu.lock"
MAX_CAS_RETRIES = 50
LOCK_WAIT_SECONDS = 5.0  # git holds a ref lock for milliseconds; longer means a stuck program

# (parent commit) -> (new tree id, repository paths the new tree changes)
TreeBuilder = Callable[[pygit2.Commit], "tuple[pygit2.Oid, list[str]]"]
# (parent commit, new tree id) -> the commit the branch moves to, or None for nothing to do
CommitMaker = Callable[[pygit2.Commit, pygit2.Oid], "pygit2.Oid | None"]


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


FALLBACK_NAME, FALLBACK_EMAIL = "quipu", "quipu@localhost"


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """git's own identity (user.name, user.email), else ``quipu <quipu@localhost>``."""
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature(FALLBACK_NAME, FALLBACK_EMAIL)


def identity_note(repo: pygit2.Repository) -> str | None:
    """What to tell the user when git has no identity for this repository, or None."""
    try:
        _ = repo.default_signature
        return None
    except (KeyError, pygit2.GitError):
        return (f"git has no user.name / user.email here, so quipu commits as {FALLBACK_NAME} <{FALLBACK_EMAIL}>\n"
                '- to sign them as you: git config --global user.name "Your Name"; '
                "git config --global user.email you@example.com")


def branch_ref(repo: pygit2.Repository) -> pygit2.Reference:
    """The branch HEAD points at; refuses a detached HEAD."""
    if repo.head_is_detached:
        raise ConflictError(
            f"the store's HEAD is detached ({str(repo.head.target)[:12]}), so quipu does not know "
            f"which branch to write to\n"
            f"- run `git -C {repo.workdir} switch main` (or your store's branch) and try again"
        )
    try:
        return repo.lookup_reference(repo.references["HEAD"].target)  # type: ignore[arg-type]
    except (KeyError, pygit2.GitError):
        raise ConflictError(
            f"the store at {repo.workdir} has no commits on its branch\n- run `quipu init {repo.workdir}`"
        ) from None


_HELD = threading.local()  # the writer locks this thread holds: {lock path: depth}


@contextlib.contextmanager
def writer_lock(repo: pygit2.Repository) -> Iterator[None]:
    """The store's exclusive writer lock; re-entrant within one thread (``quipu sync`` holds it
    across its fetch, merge, the commits of its decisions and its push)."""
    path = os.path.join(repo.path, LOCK_NAME)
    held: dict[str, int] = _HELD.__dict__.setdefault("paths", {})
    if held.get(path):
        held[path] += 1
        try:
            yield
        finally:
            held[path] -= 1
        return
    with file_lock(path):
        held[path] = 1
        try:
            yield
        finally:
            held.pop(path, None)


# ---------------------------------------------------------------- writing


def commit_files(
    root: Path,
    changes: Mapping[str, bytes | None],
    message: str,
    *,
    repo: pygit2.Repository | None = None,
    create_only: Collection[str] = (),
    require: Collection[str] = (),
) -> str | None:
    """Commit ``changes`` on the current branch; returns the new commit id, or None if nothing changed.

    ``create_only``: paths that must not exist yet (ConflictError if they do); ``require``: paths
    that must exist (NotFound if they do not). Both are checked against the parent commit."""
    for rel in [*changes, *create_only, *require]:
        check_path(rel)
    repo = repo or open_repo(root)
    checked: set[str] = set()
    for rel in changes:  # before anything is written: a committed symlinked folder is refused
        safe_worktree_path(repo.workdir, rel, checked)

    def build(parent: pygit2.Commit) -> tuple[pygit2.Oid, list[str]]:
        check_preconditions(parent.tree, create_only, require)
        return build_tree(repo, parent.tree, changes), list(changes)

    with writer_lock(repo):
        pending = recover(repo)
        compact_index(repo)
        oid = _land(repo, build, message, pending)
    if oid is not None:
        _maybe_gc(repo)
    return oid


def revert_commits(root: Path, commits: list[str], message_for: dict[str, str],
                   keep: Mapping[str, tuple[Collection[str], Mapping[str, bytes]]] | None = None) -> list[str]:
    """Revert each commit (in the order given) as its own commit; all or nothing per commit.

    ``keep``: for a commit, paths the revert leaves as the branch has them, and files it adds
    (``quipu undo`` keeps the memories a commit created, and retracts them)."""
    repo = open_repo(root)
    made: list[str] = []

    def builder(sha: str) -> TreeBuilder:
        kept, added = (keep or {}).get(sha, ((), {}))

        def build(head: pygit2.Commit) -> tuple[pygit2.Oid, list[str]]:
            target = repo[sha]
            if len(target.parents) != 1:  # type: ignore[attr-defined]
                raise ConflictError(f"commit {sha[:12]} is a merge or root commit; quipu cannot undo it")
            index = repo.revert_commit(target, head)  # type: ignore[arg-type]
            for path in kept:
                if index.conflicts is not None:
                    with contextlib.suppress(KeyError):
                        del index.conflicts[path]
                try:
                    item = head.tree[path]
                    index.add(pygit2.IndexEntry(path, item.id, item.filemode))
                except KeyError:
                    with contextlib.suppress(OSError, KeyError):
                        index.remove(path)
            for path, data in added.items():
                check_path(path)
                index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.enums.FileMode.BLOB))
            if index.conflicts is not None and list(index.conflicts):
                paths = sorted({(c[1] or c[0] or c[2]).path for c in index.conflicts})
                raise ConflictError(
                    f"undoing {sha[:12]} conflicts with later changes to {', '.join(paths)}\n"
                    "- undo the later commits first (see `quipu log`), or edit the memory by hand"
                )
            tree_id = index.write_tree(repo)
            changed = [
                d.delta.old_file.path if d.delta.status_char() == "D" else d.delta.new_file.path
                for d in repo.diff(head.tree, repo[tree_id])  # type: ignore[call-overload]  # pygit2's stubs: Object, not Tree
            ]
            return tree_id, changed

        return build

    with writer_lock(repo):
        pending = recover(repo)
        for sha in commits:
            oid = _land(repo, builder(sha), message_for[sha], pending)
            pending = []
            if oid is not None:
                made.append(oid)
    if made:
        _maybe_gc(repo)
    return made


def land(repo: pygit2.Repository, build: TreeBuilder, make_commit: CommitMaker) -> str | None:
    """Move the branch to the commit ``make_commit`` returns for the tree ``build`` made on the
    tip (a merge, or an existing commit to fast-forward to), with the worktree and git's index
    kept in step as for any write; rebuilt on the new tip if the branch moved meanwhile."""
    with writer_lock(repo):
        pending = recover(repo)
        compact_index(repo)
        oid = _land(repo, build, "", pending, make_commit=make_commit)
    if oid is not None:
        _maybe_gc(repo)
    return oid


def _land(
    repo: pygit2.Repository, build: TreeBuilder, message: str, pending: list[str],
    *, make_commit: CommitMaker | None = None,
) -> str | None:
    """Build a commit on the branch tip and move the branch to it; call with the writer lock held.

    Order: write the touched worktree files; take git's ``index.lock`` and prepare the new index
    in it; compare-and-swap the branch; rename the prepared index into place. Holding git's index
    lock across the swap means no ``git commit`` can sweep quipu's staged file into its own
    commit, and none can commit a tree without it on top of quipu's commit. A swap that fails
    because someone moved the branch starts over on the new tip. Returns None (and writes
    nothing) when the tree would not change."""
    sig = signature(repo)
    paths = list(pending)
    try:
        for _attempt in range(MAX_CAS_RETRIES):
            ref = branch_ref(repo)
            parent: pygit2.Commit = repo[ref.target]  # type: ignore[assignment]
            tree_id, touched = build(parent)
            paths = list(dict.fromkeys([*pending, *touched]))
            made = (
                make_commit(parent, tree_id) if make_commit is not None
                else None if tree_id == parent.tree.id
                else repo.create_commit(None, sig, sig, message, tree_id, [parent.id])
            )
            if made is None:
                _settle(repo, ref.name, pending, parent.tree)
                return None
            oid = made
            journal = Journal(repo, str(oid), ref.name, paths)
            journal.write("worktree")
            tree: pygit2.Tree = repo[tree_id]  # type: ignore[assignment]
            write_worktree(repo, paths, tree)
            index_lock = GitIndexLock(repo, journal)
            try:
                if index_lock.acquire():
                    index_lock.prepare(paths, tree)
                swapped = _swap(repo, ref, oid, journal)
            except BaseException:
                index_lock.rollback()
                raise
            if swapped:
                if index_lock.held:
                    index_lock.commit()
                    journal.clear()
                else:
                    journal.write("index-busy")  # the next write stages these paths
                return str(oid)
            index_lock.rollback()
        raise ConflictError(
            "the store's branch kept moving under quipu; nothing was written\n"
            "- stop the other program writing to the store with git, then try again"
        )
    except BaseException:
        # Whatever stopped us, put the worktree and git's index back in line with the branch.
        with contextlib.suppress(Exception):
            ref = branch_ref(repo)
            _settle(repo, ref.name, paths, repo[ref.target].peel(pygit2.Tree))
        raise


def finish_unfinished_write(root: Path) -> list[str]:
    """Do what the next write would: clean up after a writer that did not finish and bring the
    worktree and git's index for its paths in line with the branch. Returns those paths."""
    repo = open_repo(root)
    with writer_lock(repo):
        paths = recover(repo)
        ref = branch_ref(repo)
        _settle(repo, ref.name, paths, repo[ref.target].peel(pygit2.Tree))
    return paths


def _settle(repo: pygit2.Repository, ref: str, paths: list[str], tree: pygit2.Tree) -> None:
    """Make the worktree and git's index match ``tree`` for ``paths`` (left over by an earlier writer)."""
    journal = Journal(repo, "", ref, paths)
    if not paths:
        journal.clear()
        return
    journal.write("worktree")
    write_worktree(repo, paths, tree)
    index_lock = GitIndexLock(repo, journal)
    if not index_lock.acquire():
        journal.write("index-busy")
        return
    try:
        index_lock.prepare(paths, tree)
    except BaseException:
        index_lock.rollback()
        raise
    index_lock.commit()
    journal.clear()


def _swap(repo: pygit2.Repository, ref: pygit2.Reference, oid: pygit2.Oid, journal: Journal) -> bool:
    """Compare-and-swap the branch from the tip ``ref`` was read at to ``oid``.

    False when the branch moved (the caller rebuilds on the new tip). A git lock on the ref
    (libgit2 raises OSError for it) is waited for; one held longer than the deadline is an error."""
    lock = os.path.join(repo.path, ref.name + ".lock")
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    try:
        while True:
            # A ref lock that appears after this stamp is ours (for recovery); one already there is not.
            journal.write("swap", ref_lock_at=None if os.path.exists(lock) else time.time())
            try:
                ref.set_target(oid, "quipu: commit")
                return True
            except OSError:
                pass  # GIT_ELOCKED: another program holds <ref>.lock
            except pygit2.GitError as exc:
                if "lock" not in str(exc).lower():
                    return False  # the branch moved: rebuild on the new tip
            if time.monotonic() > deadline:
                raise ConflictError(
                    f"git's lock on {ref.name} is held by another program; nothing was written\n"
                    f"- if no git command is running, remove {lock} and try again"
                )
            time.sleep(0.01)
    finally:
        journal.data["ref_lock_at"] = None


# ---------------------------------------------------------------- worktree and git's index


def _maybe_gc(repo: pygit2.Repository) -> None:
    """Pack the store's loose objects as git's auto-gc would, detached, when there are too many."""
    if getattr(_HELD, "paths", None):
        return  # this thread still holds the writer lock (a sync's commits): its last write checks
    packing.maybe_pack(repo, os.path.join(repo.path, LOCK_NAME))
