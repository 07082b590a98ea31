"""Commits into the store's git repository without touching anyone else's work.

Contract:
- ``commit_files`` writes one commit that sets (bytes) or removes (None) the given repository
  paths. It runs under an exclusive ``flock`` on ``<gitdir>/quipu.lock`` (so quipu writers queue
  instead of losing each other's work), builds the new tree without the shared git index, and
  moves the branch with git's compare-and-swap (``quipu.store.gitrefs.update_ref``: the ref's
  ``.lock``, the check, the reflog, as git does; a person's ``git commit`` at the same moment
  makes the swap fail, and the commit is rebuilt on the new tip and retried). Trees, blobs and the
  commit are written as loose objects by ``quipu.store.gitobj`` (the standard library: loose files
  and the repository's own packs, ``quipu.store.gitpack``; anything else from one ``git cat-file
  --batch``), so a write never loads
  libgit2: only ``revert_commits`` (git's revert) and a sync's merge use pygit2, to build their
  trees; they land the same way.
- Paths are repository-relative, '/'-separated, and may not leave the store (no absolute paths,
  no '.' or '..' parts, no NUL, nothing under ``.git``). ``create_only`` paths must not exist and
  ``require`` paths must exist in the parent commit; both are checked under the lock, against
  the tip the commit is built on.
- The worktree files of the touched paths are written first (a bulk write's new files while its
  tree and pack are built, in two threads, once journalled, and removed again if the write does not
  land; git's index takes each file's status as it was written); then quipu takes git's own
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
- ``write_files`` is ``commit_files`` returning the ``Landed`` write (the commit, its parent and
  the files written), so the index can take the new files as written instead of diffing trees.
- Loose objects are never collected by quipu's writes: after each write ``quipu.store.packing`` checks the loose
  objects as git's auto-gc does and, past git's limits, packs them in a detached ``git gc --auto``
  that holds the writer lock while it runs.
"""
from __future__ import annotations

import contextlib
import os
import time
from _thread import _local as thread_local  # threading.local itself, without the threading module
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path

from quipu.errors import ConflictError, NoStore
from quipu.prompt import locate
from quipu.store import gitobj, gitrefs, packing
from quipu.store.indexlock import GitIndexLock, compact_index
from quipu.store.journal import Journal, NewFiles, recover, safe_worktree_path, write_worktree
from quipu.store.locks import file_lock
from quipu.store.trees import check_path, check_preconditions
from quipu.lite import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pygit2

LOCK_NAME = "quipu.lock"
MAX_CAS_RETRIES = 50
LOCK_WAIT_SECONDS = 5.0  # git holds a ref lock for milliseconds; longer means a stuck program
REFLOG_MESSAGE = "quipu: commit"
NEW_FILES = 256  # from this many new files on, they are created while the tree is built

# (parent commit id, its tree) -> (new tree id, repository paths the new tree changes)
Build = Callable[[str, gitobj.Tree], "tuple[str, list[str]]"]
# (parent commit id, new tree id) -> the commit the branch moves to, or None for nothing to do
MakeCommit = Callable[[str, str], "str | None"]
# The same two for callers that work in pygit2 (a sync's merge).
TreeBuilder = Callable[["pygit2.Commit"], "tuple[pygit2.Oid, list[str]]"]
CommitMaker = Callable[["pygit2.Commit", "pygit2.Oid"], "pygit2.Oid | None"]


class Landed(NamedTuple):
    """A write that moved the branch: the new commit, the commit it was built on, and the files
    it set (bytes) or removed (None), when the caller gave them."""

    commit: str
    parent: str
    changes: Mapping[str, bytes | None]


def open_repo(root: Path) -> pygit2.Repository:
    import pygit2

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


def identity(gitdir: str) -> tuple[str, str]:
    """git's own identity (user.name, user.email), else ``quipu <quipu@localhost>``."""
    found = gitrefs.identity(gitdir)
    if found is None or any(c in "".join(found) for c in "<>"):
        return FALLBACK_NAME, FALLBACK_EMAIL
    return found


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """``identity`` as a pygit2 signature, for the writes made with pygit2 (a merge, a clone)."""
    import pygit2

    return pygit2.Signature(*identity(repo.path))


def identity_note(repo: pygit2.Repository) -> str | None:
    """What to tell the user when git has no identity for this repository, or None."""
    if identity(repo.path) != (FALLBACK_NAME, FALLBACK_EMAIL):
        return None
    return (f"git has no user.name / user.email here, so quipu commits as {FALLBACK_NAME} <{FALLBACK_EMAIL}>\n"
            '- to sign them as you: git config --global user.name "Your Name"; '
            "git config --global user.email you@example.com")


def branch_ref(repo: pygit2.Repository) -> pygit2.Reference:
    """The branch HEAD points at; refuses a detached HEAD."""
    import pygit2

    if repo.head_is_detached:
        raise _detached(repo.workdir, str(repo.head.target))
    try:
        return repo.lookup_reference(repo.references["HEAD"].target)  # type: ignore[arg-type]
    except (KeyError, pygit2.GitError):
        raise _unborn(repo.workdir) from None


def _detached(workdir: str, head: str) -> ConflictError:
    return ConflictError(
        f"the store's HEAD is detached ({head[:12]}), so quipu does not know which branch to write to\n"
        f"- run `git -C {workdir} switch main` (or your store's branch) and try again"
    )


def _unborn(workdir: str) -> ConflictError:
    return ConflictError(f"the store at {workdir} has no commits on its branch\n- run `quipu init {workdir}`")


class Writer:
    """One store's git dir, worktree and objects, for a write."""

    def __init__(self, root: Path | str, objects: gitobj.Objects | None = None) -> None:
        gitdir = locate.git_dir(str(root))
        if gitdir is None or not os.path.isdir(gitdir):
            raise NoStore(f"{root} is not a git repository\n- run `quipu init {root}` to create a store there")
        self.gitdir = os.path.normpath(gitdir)
        self.workdir = os.path.normpath(str(root))
        self.objects = objects if objects is not None and objects.gitdir == self.gitdir else gitobj.Objects(self.gitdir)
        self._who: tuple[str, str] | None = None

    def tip(self) -> tuple[str, str]:
        """(the branch HEAD names, its commit); refuses a detached HEAD and an unborn branch."""
        ref = gitrefs.branch(self.gitdir)
        if ref is None:
            raise _detached(self.workdir, locate.read_head(self.gitdir) or "unreadable")
        commit = gitrefs.read_ref(self.gitdir, ref)
        if commit is None:
            raise _unborn(self.workdir)
        return ref, commit

    def tree_of(self, commit: str) -> gitobj.Tree:
        return gitobj.Tree(self.objects, self.objects.commit_tree(commit))

    def who(self) -> tuple[str, str]:
        if self._who is None:
            self._who = identity(self.gitdir)
        return self._who

    def commit(self, tree: str, parents: list[str], message: str) -> str:
        return self.objects.write("commit", gitobj.commit_bytes(tree, parents, self.who(), message))


_HELD = thread_local()  # the writer locks this thread holds: {lock path: depth}


@contextlib.contextmanager
def writer_lock(where: str | pygit2.Repository) -> Iterator[None]:
    """The store's exclusive writer lock (``where``: its git dir, or its pygit2 repository);
    re-entrant within one thread (``quipu sync`` holds it across its fetch, merge, the commits of
    its decisions and its push)."""
    path = os.path.join(os.path.normpath(where if isinstance(where, str) else where.path), LOCK_NAME)
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


def commit_files(root: Path, changes: Mapping[str, bytes | None], message: str, *, objects: gitobj.Objects | None = None,
                 create_only: Collection[str] = (), require: Collection[str] = ()) -> str | None:
    """Commit ``changes`` on the current branch; returns the new commit id, or None if nothing changed.

    ``create_only``: paths that must not exist yet (ConflictError if they do); ``require``: paths
    that must exist (NotFound if they do not). Both are checked against the parent commit."""
    landed = write_files(root, changes, message, objects=objects, create_only=create_only, require=require)
    return landed.commit if landed is not None else None


def write_files(root: Path, changes: Mapping[str, bytes | None], message: str, *, objects: gitobj.Objects | None = None,
                create_only: Collection[str] = (), require: Collection[str] = (),
                unchanged: Mapping[str, str] | None = None) -> Landed | None:
    """``commit_files``, returning the landed write (None when nothing changed); ``unchanged``:
    paths whose blob must still be the one named (``ConflictError`` otherwise, nothing written)."""
    for rel in [*changes, *create_only, *require, *(unchanged or {})]:
        check_path(rel)
    w = Writer(root, objects)
    checked: set[str] = set()
    for rel in changes:  # before anything is written: a committed symlinked folder is refused
        safe_worktree_path(w.workdir, rel, checked)

    def build(parent: str, base: gitobj.Tree) -> tuple[str, list[str]]:
        return gitobj.build_tree(w.objects, base.id, changes), list(changes)

    with writer_lock(w.gitdir):
        pending = recover(w.gitdir, w.workdir)
        compact_index(w.gitdir, w.workdir)
        landed = _land(w, build, message, pending, written=changes, check=lambda base: check_preconditions(
            base, create_only, require, unchanged), new={rel: data for rel in create_only if (data := changes.get(rel))})
    if landed is None:
        return None
    _maybe_gc(w.gitdir)
    return landed._replace(changes=changes)


def revert_commits(root: Path, commits: list[str], message_for: dict[str, str],
                   keep: Mapping[str, tuple[Collection[str], Mapping[str, bytes]]] | None = None) -> list[str]:
    """Revert each commit (in the order given) as its own commit; all or nothing per commit.

    ``keep``: for a commit, paths the revert leaves as the branch has them, and files it adds
    (``quipu undo`` keeps the memories a commit created, and retracts them)."""
    from quipu.store import revert

    repo = open_repo(root)
    w = Writer(root)
    made: list[str] = []

    def builder(sha: str) -> Build:
        kept, added = (keep or {}).get(sha, ((), {}))
        return lambda parent, _base: revert.revert_tree(repo, sha, parent, kept, added)

    with writer_lock(w.gitdir):
        pending = recover(w.gitdir, w.workdir)
        for sha in commits:
            landed = _land(w, builder(sha), message_for[sha], pending)
            pending = []
            if landed is not None:
                made.append(landed.commit)
    if made:
        _maybe_gc(w.gitdir)
    return made


def land(repo: pygit2.Repository, build: TreeBuilder, make_commit: CommitMaker) -> str | None:
    """Move the branch to the commit ``make_commit`` returns for the tree ``build`` made on the
    tip (a merge, or an existing commit to fast-forward to), with the worktree and git's index
    kept in step as for any write; rebuilt on the new tip if the branch moved meanwhile."""
    import pygit2

    def light_build(parent: str, _base: gitobj.Tree) -> tuple[str, list[str]]:
        tree, touched = build(repo[parent])  # type: ignore[arg-type]
        return str(tree), touched

    def light_make(parent: str, tree: str) -> str | None:
        made = make_commit(repo[parent], pygit2.Oid(hex=tree))  # type: ignore[arg-type]
        return None if made is None else str(made)

    w = Writer(repo.workdir)
    with writer_lock(w.gitdir):
        pending = recover(w.gitdir, w.workdir)
        compact_index(w.gitdir, w.workdir)
        landed = _land(w, light_build, "", pending, make_commit=light_make)
    if landed is None:
        return None
    _maybe_gc(w.gitdir)
    return landed.commit


def _land(w: Writer, build: Build, message: str, pending: list[str], *, make_commit: MakeCommit | None = None,
          written: Mapping[str, bytes | None] | None = None, check: Callable[[gitobj.Tree], None] | None = None,
          new: Mapping[str, bytes] | None = None) -> Landed | None:
    """Build a commit on the branch tip and move the branch to it; call with the writer lock held.

    Order: write the touched worktree files; take git's ``index.lock`` and prepare the new index
    in it; compare-and-swap the branch; rename the prepared index into place. Holding git's index
    lock across the swap means no ``git commit`` can sweep quipu's staged file into its own
    commit, and none can commit a tree without it on top of quipu's commit. A swap that fails
    because someone moved the branch starts over on the new tip. Returns None (and writes
    nothing) when the tree would not change. ``written``: the bytes ``build`` put at its paths,
    which the worktree takes as they are. ``check``: the preconditions, on the tip's tree; ``new``:
    files it says are not there, from ``NEW_FILES`` on created while the tree is built (``NewFiles``)."""
    paths = list(pending)
    early: NewFiles | None = None
    try:
        for _attempt in range(MAX_CAS_RETRIES):
            ref, parent = w.tip()
            base = w.tree_of(parent)
            if check is not None:
                check(base)
            if early is None and new is not None and len(new) >= NEW_FILES:
                paths = list(dict.fromkeys([*pending, *new]))
                Journal(w.gitdir, "", ref, paths).write("worktree")
                early = NewFiles(w.workdir, new)
            tree_id, touched = build(parent, base)
            paths = list(dict.fromkeys([*pending, *touched]))
            made = (
                make_commit(parent, tree_id) if make_commit is not None
                else None if tree_id == base.id
                else w.commit(tree_id, [parent], message)
            )
            if made is None:
                _settle(w, ref, pending, base)
                return None
            journal = Journal(w.gitdir, made, ref, paths)
            journal.write("worktree")
            tree = gitobj.Tree(w.objects, tree_id)
            made_early = early.join() if early is not None else {}
            stats = write_worktree(w.workdir, [p for p in paths if p not in made_early], _files(tree, written))
            index_lock = GitIndexLock(w.gitdir, w.workdir, journal)
            try:
                if index_lock.acquire():
                    index_lock.prepare(paths, tree.blob, {**made_early, **stats})
                swapped = _swap(w, ref, parent, made, journal)
            except BaseException:
                index_lock.rollback()
                raise
            if swapped:
                if index_lock.held:
                    index_lock.commit()
                    journal.clear()
                else:
                    journal.write("index-busy")  # the next write stages these paths
                return Landed(made, parent, {})
            index_lock.rollback()
        raise ConflictError(
            "the store's branch kept moving under quipu; nothing was written\n"
            "- stop the other program writing to the store with git, then try again"
        )
    except BaseException:
        # Whatever stopped us, put the worktree and git's index back in line with the branch.
        with contextlib.suppress(Exception):
            if early is not None:
                early.undo(w.workdir)  # then the branch's files are written
        with contextlib.suppress(Exception):
            ref, tip = w.tip()
            _settle(w, ref, paths, w.tree_of(tip))
        raise


def _files(tree: gitobj.Tree, written: Mapping[str, bytes | None] | None) -> Callable[[str], bytes | None]:
    """Each path's bytes in ``tree``: those of ``written`` as they are, the rest read from git."""
    if not written:
        return tree.data
    return lambda rel: written[rel] if rel in written else tree.data(rel)


def finish_unfinished_write(root: Path) -> list[str]:
    """Do what the next write would: clean up after a writer that did not finish and bring the
    worktree and git's index for its paths in line with the branch. Returns those paths."""
    w = Writer(root)
    with writer_lock(w.gitdir):
        paths = recover(w.gitdir, w.workdir)
        ref, tip = w.tip()
        _settle(w, ref, paths, w.tree_of(tip))
    return paths


def _settle(w: Writer, ref: str, paths: list[str], tree: gitobj.Tree) -> None:
    """Make the worktree and git's index match ``tree`` for ``paths`` (left over by an earlier writer)."""
    journal = Journal(w.gitdir, "", ref, paths)
    if not paths:
        journal.clear()
        return
    journal.write("worktree")
    write_worktree(w.workdir, paths, tree.data)
    index_lock = GitIndexLock(w.gitdir, w.workdir, journal)
    if not index_lock.acquire():
        journal.write("index-busy")
        return
    try:
        index_lock.prepare(paths, tree.blob)
    except BaseException:
        index_lock.rollback()
        raise
    index_lock.commit()
    journal.clear()


def _swap(w: Writer, ref: str, old: str, new: str, journal: Journal) -> bool:
    """Compare-and-swap the branch ``ref`` from ``old`` to ``new`` (``git update-ref``).

    False when the branch moved (the caller rebuilds on the new tip). A git lock on the ref is
    waited for; one held longer than the deadline is an error."""
    lock = os.path.join(gitrefs.common_dir(w.gitdir), ref + ".lock")
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    try:
        while True:
            # A ref lock that appears after this stamp is ours (for recovery); one already there is not.
            journal.write("swap", ref_lock_at=None if os.path.exists(lock) else time.time())
            outcome = gitrefs.update_ref(w.gitdir, ref, new, old, REFLOG_MESSAGE, w.who())
            if outcome == "ok":
                return True
            if outcome == "moved":
                return False  # rebuild on the new tip
            if time.monotonic() > deadline:
                raise ConflictError(
                    f"git's lock on {ref} is held by another program; nothing was written\n"
                    f"- if no git command is running, remove {lock} and try again"
                )
            time.sleep(0.01)
    finally:
        journal.data["ref_lock_at"] = None


def _maybe_gc(gitdir: str) -> None:
    """Pack the store's loose objects as git's auto-gc would, detached, when there are too many."""
    if getattr(_HELD, "paths", None):
        return  # this thread still holds the writer lock (a sync's commits): its last write checks
    packing.maybe_pack(gitdir, os.path.join(gitdir, LOCK_NAME))
