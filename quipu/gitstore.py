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
  revert would conflict.
- libgit2 never collects garbage, so now and then a detached ``git gc --auto`` is started.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

import pygit2

from quipu import gitindex, safepath
from quipu.locks import file_lock
from quipu.errors import ConflictError, InvalidMemory, NoStore, NotFound

LOCK_NAME = "quipu.lock"
JOURNAL_NAME = "quipu-pending.json"
MAX_CAS_RETRIES = 50
LOCK_WAIT_SECONDS = 5.0  # git holds a ref lock for milliseconds; longer means a stuck program
INDEX_WAIT_SECONDS = 2.0  # a person's `git commit -a` holds index.lock while their editor is open
DEAD_LOCK_WINDOW = 10.0  # a dead writer creates its lock file within this long after its step began
_FILEMODE_BLOB = pygit2.enums.FileMode.BLOB if hasattr(pygit2, "enums") else pygit2.GIT_FILEMODE_BLOB
_FILEMODE_TREE = pygit2.enums.FileMode.TREE if hasattr(pygit2, "enums") else pygit2.GIT_FILEMODE_TREE

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


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("quipu", "quipu@localhost")


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


# ---------------------------------------------------------------- trees


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


_BATCH = 8  # from this many changes on, each touched tree is written once, not once per path


def _build_tree(
    repo: pygit2.Repository, base: pygit2.Tree | None, changes: Mapping[str, bytes | None]
) -> pygit2.Oid:
    if len(changes) >= _BATCH:
        nested: dict[str, Any] = {}
        for path, data in changes.items():
            *folders, name = path.split("/")
            node = nested
            for folder in folders:
                node = node.setdefault(folder, {})
                if not isinstance(node, dict):
                    raise InvalidMemory(f"refusing to write {path!r}: a file and a folder of one name")
            node[name] = repo.create_blob(data) if data is not None else None
        return _tree_with_all(repo, base, nested) or repo.TreeBuilder().write()
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


def _tree_with_all(repo: pygit2.Repository, tree: pygit2.Tree | None, node: dict[str, Any]) -> pygit2.Oid | None:
    """``_tree_with`` for many paths at once: ``node`` maps names to blobs (None: remove) or to
    the changes inside a folder; each tree on the way is written once."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    for name, change in node.items():
        present = tree is not None and name in tree
        if isinstance(change, dict):
            sub = None
            if present:
                entry = tree[name]  # type: ignore[index]
                sub = repo[entry.id] if entry.type_str == "tree" else None
            new_sub = _tree_with_all(repo, sub, change)  # type: ignore[arg-type]
            if new_sub is None:
                if present:
                    builder.remove(name)
            else:
                builder.insert(name, new_sub, _FILEMODE_TREE)
        elif change is None:
            if present:
                builder.remove(name)
        else:
            builder.insert(name, change, _FILEMODE_BLOB)
    if len(builder) == 0:
        return None
    return builder.write()


def check_path(rel: object) -> str:
    """A repository path quipu may write: relative, '/'-separated, inside the store, not in .git."""
    parts = rel.split("/") if isinstance(rel, str) else []
    if (
        not parts
        or "\x00" in rel  # type: ignore[operator]
        or "\\" in rel  # type: ignore[operator]
        or any(p in ("", ".", "..") for p in parts)
        or parts[0].lower() == ".git"
    ):
        raise InvalidMemory(
            f"refusing to write {rel!r}: store paths are relative, '/'-separated, with no '..', "
            "NUL or .git parts\n- use the store's API (Store.add, Store.label) instead of raw paths"
        )
    return rel  # type: ignore[return-value]


def _check_preconditions(tree: pygit2.Tree, create_only: Collection[str], require: Collection[str]) -> None:
    for rel in create_only:
        if _tree_has(tree, rel):
            raise ConflictError(f"{rel} already exists in the store\n- choose another id")
    for rel in require:
        if not _tree_has(tree, rel):
            raise NotFound(f"{rel} is not in the store\n- run `quipu list` to see what is there")


def _tree_has(tree: pygit2.Tree, rel: str) -> bool:
    try:
        tree[rel]
    except KeyError:
        return False
    return True


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
    for rel in changes:  # before anything is written: a committed symlinked folder is refused
        _safe_worktree_path(repo.workdir, rel)

    def build(parent: pygit2.Commit) -> tuple[pygit2.Oid, list[str]]:
        _check_preconditions(parent.tree, create_only, require)
        return _build_tree(repo, parent.tree, changes), list(changes)

    with writer_lock(repo):
        pending = recover(repo)
        compact_index(repo)
        oid = _land(repo, build, message, pending)
    if oid is not None:
        _maybe_gc(repo, oid)
    return oid


def revert_commits(root: Path, commits: list[str], message_for: dict[str, str]) -> list[str]:
    """Revert each commit (in the order given) as its own commit; all or nothing per commit."""
    repo = open_repo(root)
    made: list[str] = []

    def builder(sha: str) -> TreeBuilder:
        def build(head: pygit2.Commit) -> tuple[pygit2.Oid, list[str]]:
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
                d.delta.old_file.path if d.delta.status_char() == "D" else d.delta.new_file.path
                for d in repo.diff(head.tree, repo[tree_id])  # type: ignore[attr-defined]
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
    return made


def land(repo: pygit2.Repository, build: TreeBuilder, make_commit: CommitMaker) -> str | None:
    """Move the branch to the commit ``make_commit`` returns for the tree ``build`` made on the
    tip (a merge, or an existing commit to fast-forward to), with the worktree and git's index
    kept in step as for any write; rebuilt on the new tip if the branch moved meanwhile."""
    with writer_lock(repo):
        pending = recover(repo)
        compact_index(repo)
        return _land(repo, build, "", pending, make_commit=make_commit)


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
            journal = _Journal(repo, str(oid), ref.name, paths)
            journal.write("worktree")
            tree: pygit2.Tree = repo[tree_id]  # type: ignore[assignment]
            _write_worktree(repo, paths, tree)
            index_lock = _GitIndexLock(repo, journal)
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
            _settle(repo, ref.name, paths, repo[ref.target].tree)  # type: ignore[attr-defined]
        raise


def _settle(repo: pygit2.Repository, ref: str, paths: list[str], tree: pygit2.Tree) -> None:
    """Make the worktree and git's index match ``tree`` for ``paths`` (left over by an earlier writer)."""
    journal = _Journal(repo, "", ref, paths)
    if not paths:
        journal.clear()
        return
    journal.write("worktree")
    _write_worktree(repo, paths, tree)
    index_lock = _GitIndexLock(repo, journal)
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


def _swap(repo: pygit2.Repository, ref: pygit2.Reference, oid: pygit2.Oid, journal: _Journal) -> bool:
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


# ---------------------------------------------------------------- journal and recovery


class _Journal:
    """``<gitdir>/quipu-pending.json``: what the writer holding the lock is doing, for recovery.

    ``index_lock_at`` / ``ref_lock_at`` are set just before quipu may create git's ``index.lock``
    or the branch's ref lock and cleared when it no longer holds them: a lock file created after
    that moment by a writer that then died is the dead writer's.

    Each step appends one JSON line (a single small ``write``, so a writer killed mid-step leaves
    the previous line intact) and the last whole line is the state; no temporary file and rename
    per step. ``clear`` removes the file."""

    def __init__(self, repo: pygit2.Repository, commit: str, ref: str, paths: list[str]) -> None:
        self.path = os.path.join(repo.path, JOURNAL_NAME)
        self.data: dict[str, Any] = {
            "commit": commit, "ref": ref, "paths": paths, "pid": os.getpid(),
            "index_lock_at": None, "ref_lock_at": None,
        }

    def write(self, step: str, **stamps: float | None) -> None:
        self.data.update(step=step, **stamps)
        line = ("\n" + json.dumps(self.data) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def recover(repo: pygit2.Repository) -> list[str]:
    """Clean up after a writer that died or could not finish; call with the writer lock held.

    Returns the journalled paths still to be synced to HEAD (the caller's write syncs them)."""
    _remove_dead_writers_scratch(repo)
    # libgit2 writes a new index as index.lock.lock; only a quipu writer holding the flock (ours
    # now) ever makes that file, so one that exists is a dead writer's.
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(repo.path, "index.lock.lock"))
    path = os.path.join(repo.path, JOURNAL_NAME)
    try:
        pending = _last_journal_entry(path)
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return []
    paths = [p for p in pending.get("paths", []) if isinstance(p, str) and _is_safe(p)]
    pid = pending.get("pid")
    if isinstance(pid, int) and pid != os.getpid() and not _alive(pid):
        _remove_dead_writers_files(repo, pending, pid, paths)
    # Syncing a path to HEAD is right whether or not the dead writer's commit landed.
    return paths


def unfinished_write(gitdir: str) -> dict[str, Any] | None:
    """The journal entry of a write that did not finish and whose writer is gone (killed, or
    stopped by an error it could not clean up after, such as a full disk while git's index was
    written); None when there is none or its writer is still running."""
    try:
        pending = _last_journal_entry(os.path.join(gitdir, JOURNAL_NAME))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"paths": [], "unreadable": True}
    pid = pending.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool) and pid != os.getpid() and _alive(pid):
        return None
    return pending


def finish_unfinished_write(root: Path) -> list[str]:
    """Do what the next write would: clean up after a writer that did not finish and bring the
    worktree and git's index for its paths in line with the branch. Returns those paths."""
    repo = open_repo(root)
    with writer_lock(repo):
        paths = recover(repo)
        ref = branch_ref(repo)
        _settle(repo, ref.name, paths, repo[ref.target].tree)  # type: ignore[attr-defined]
    return paths


def _last_journal_entry(path: str) -> dict[str, Any]:
    """The journal's last whole JSON line (a line cut short by a kill is skipped)."""
    with open(path, "rb") as fh:
        lines = fh.read().decode("utf-8", "replace").splitlines()
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            return entry
    raise ValueError(f"no whole entry in {path}")


def _is_safe(rel: str) -> bool:
    try:
        check_path(rel)
    except InvalidMemory:
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _remove_dead_writers_files(repo: pygit2.Repository, pending: dict[str, Any], pid: int, paths: list[str]) -> None:
    """Remove the git lock files a killed quipu writer held, and its temporary files.

    A lock counts as the dead writer's only when its journal says it was about to take that
    lock and the file is newer than that moment: a lock a person's git took before (an editor
    open in ``git commit``) is left alone."""
    candidates = [(os.path.join(repo.path, "index.lock"), pending.get("index_lock_at"))]
    ref = pending.get("ref")
    if isinstance(ref, str) and ref.startswith("refs/") and ".." not in ref.split("/"):
        candidates.append((os.path.join(repo.path, ref + ".lock"), pending.get("ref_lock_at")))
    for lock, since in candidates:
        if isinstance(since, (int, float)) and not isinstance(since, bool):
            with contextlib.suppress(OSError):
                # The ctime: a lock quipu took by linking .git/index keeps the index's old mtime.
                if since - 0.01 <= os.stat(lock).st_ctime <= since + DEAD_LOCK_WINDOW:
                    os.unlink(lock)
    for rel in paths:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(repo.workdir, f"{rel}.{pid}.tmp"))


_SCRATCH = re.compile(r"\A(?:quipu-pending\.json|quipu-index)\.(\d+)\.tmp(?:\.lock)?\Z")


def _remove_dead_writers_scratch(repo: pygit2.Repository) -> None:
    """Scratch files in the git dir carry their writer's pid; remove those of dead writers."""
    with contextlib.suppress(OSError):
        for name in os.listdir(repo.path):
            match = _SCRATCH.match(name)
            if match and int(match.group(1)) != os.getpid() and not _alive(int(match.group(1))):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(repo.path, name))


# ---------------------------------------------------------------- worktree and git's index


def _safe_worktree_path(workdir: str, rel: str) -> str:
    full = os.path.normpath(os.path.join(workdir, check_path(rel)))
    if not full.startswith(os.path.normpath(workdir) + os.sep):
        raise InvalidMemory(f"refusing to write outside the store: {rel!r}")
    return safepath.worktree_path(Path(os.path.normpath(workdir)), rel)  # no symlinked folder on the way


def _blob_entry(tree: pygit2.Tree, rel: str) -> pygit2.Object | None:
    try:
        entry = tree[rel]
    except KeyError:
        return None
    return entry if entry.type_str == "blob" else None


def _write_worktree(repo: pygit2.Repository, paths: list[str], tree: pygit2.Tree) -> None:
    """Make the worktree files of ``paths`` match ``tree`` (atomic renames; absent means removed)."""
    workdir = repo.workdir
    for rel in paths:
        full = _safe_worktree_path(workdir, rel)
        entry = _blob_entry(tree, rel)
        if entry is None:
            if os.path.isfile(full) or os.path.islink(full):
                os.unlink(full)
            _prune_empty_dirs(workdir, os.path.dirname(full))
            continue
        data = repo[entry.id].data  # type: ignore[attr-defined]
        try:
            with open(full, "rb") as fh:
                if fh.read(len(data) + 1) == data:
                    continue
        except OSError:
            pass
        os.makedirs(os.path.dirname(full), exist_ok=True)
        tmp = f"{full}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, full)


def _prune_empty_dirs(workdir: str, directory: str) -> None:
    stop = os.path.normpath(workdir)
    while os.path.normpath(directory).startswith(stop + os.sep):
        try:
            os.rmdir(directory)
        except OSError:
            return
        directory = os.path.dirname(directory)


# The git index this process wrote last: {.git/index: (its file key, libgit2's Index or the file
# as bytes, the path it was written through, where its change ended in the index log)}.
_Cached = tuple[tuple[int, ...] | None, "pygit2.Index | gitindex.IndexFile", str, int]
_INDEX_CACHE: dict[str, _Cached] = {}
# quipu writers' changes to git's index, one JSON line each: {"from": checksum, "to": checksum,
# "set": [[path, entry]], "rm": [path]}, so that another quipu process catches up with them
# instead of reading the whole file again.
INDEX_LOG_NAME = "quipu-index.log"
INDEX_LOG_MAX_BYTES = 512 * 1024


def _log_index_change(path: str, record: dict[str, Any]) -> int:
    """Append one change to the index log (started afresh past INDEX_LOG_MAX_BYTES); returns the
    log's length after it (where the next writer's changes will start), or -1."""
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    with contextlib.suppress(OSError):
        if os.stat(path).st_size > INDEX_LOG_MAX_BYTES:
            flags |= os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o644)
        try:
            os.write(fd, line)
            return os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
    except OSError:
        return -1


def _catch_up(kept: gitindex.IndexFile, lock: str, log: str, since: int) -> bool:
    """Bring ``kept`` up to the index in ``lock`` through the quipu writers' changes logged after
    offset ``since`` of the log (where this process's own last change ended).

    True only when a chain of changes leads from the checksum ``kept`` was written with to the
    checksum at the end of the file, and ``kept`` then serializes to exactly that checksum (a
    person's `git add` or `git status` wrote the file: no chain, and the caller reads it)."""
    with open(lock, "rb") as fh:
        fh.seek(-20, os.SEEK_END)
        target = fh.read(20).hex()
    with open(log, "rb") as fh:
        if since < 0 or since > os.fstat(fh.fileno()).st_size:
            return False  # the log was started afresh since
        fh.seek(since)
        lines = fh.read().splitlines()
    changes: dict[str, dict[str, Any]] = {}
    for line in lines:
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and isinstance(record.get("from"), str):
                changes[record["from"]] = record
    at = kept.trailer.hex()
    for _ in range(len(changes) + 1):
        if at == target:
            kept.serialize()
            return kept.trailer.hex() == target
        record = changes.get(at)
        if record is None:
            return False
        for rel in record["rm"]:
            kept.remove(rel)
        for rel, fixed in record["set"]:
            kept.set_fixed(rel, bytes.fromhex(fixed))
        at = record["to"]
    return False


def _mtime_seconds(path: str) -> int | None:
    try:
        return int(os.stat(path).st_mtime)
    except OSError:
        return None


def _file_key(path: str) -> tuple[int, ...] | None:
    """What changes whenever anyone replaces or rewrites the file (git and libgit2 always write a
    new file and rename it into place). Not the ctime: taking the lock links the file, which
    changes its ctime and nothing else."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class _GitIndexLock:
    """git's own ``index.lock``, taken atomically as git takes it, and held across the swap.

    ``acquire`` creates the lock as a hard link to ``.git/index`` (``link`` fails if the lock
    exists, like git's O_EXCL, and the lock starts out holding the index: nothing is copied);
    ``prepare`` reads it (stable: nobody writes ``.git/index`` without this lock), stages the
    paths and writes the new index over the lock; ``commit`` renames it over ``.git/index``,
    ``rollback`` throws it away. A person's ``git add`` is therefore never undone."""

    def __init__(self, repo: pygit2.Repository, journal: _Journal) -> None:
        self.repo = repo
        self.journal = journal
        self.lock = os.path.join(repo.path, "index.lock")
        self.index = os.path.join(repo.path, "index")
        self.held = False
        self.staged: pygit2.Index | gitindex.IndexFile | None = None
        self.record: dict[str, Any] | None = None

    def acquire(self) -> bool:
        """Take the lock, waiting a little for another program's git; False if it stays busy."""
        deadline = time.monotonic() + INDEX_WAIT_SECONDS
        while True:
            if not os.path.exists(self.lock):
                self.journal.write("index", index_lock_at=time.time())
                try:
                    self._take()
                    self.held = True
                    return True
                except FileExistsError:
                    pass
            if time.monotonic() > deadline:
                # Another program's git holds the index (a `git commit` waiting in an editor):
                # HEAD will be right, and the journal keeps the paths for the next write.
                self.journal.write("index-busy", index_lock_at=None)
                return False
            time.sleep(0.01)

    def _take(self) -> None:
        try:
            os.link(self.index, self.lock)
            return
        except FileNotFoundError:  # no .git/index yet: an empty lock, as git makes it
            pass
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: git's way, then a copy
            fd = os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            try:
                with open(self.index, "rb") as src:
                    while chunk := src.read(1 << 20):
                        os.write(fd, chunk)
            finally:
                os.close(fd)
            return
        os.close(os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))

    def prepare(self, paths: list[str], tree: pygit2.Tree) -> None:
        staged = self._current(_INDEX_CACHE.pop(self.index, None))
        self.staged = None
        changes: dict[str, list[Any]] = {"set": [], "rm": []}
        start = staged.trailer.hex() if isinstance(staged, gitindex.IndexFile) else ""
        for rel in paths:
            entry = _blob_entry(tree, rel)
            if entry is None:
                with contextlib.suppress(OSError, KeyError, ValueError, pygit2.GitError):
                    staged.remove(rel)
                changes["rm"].append(rel)
                continue
            st = os.lstat(os.path.join(self.repo.workdir, rel))
            if isinstance(staged, gitindex.IndexFile):
                changes["set"].append([rel, staged.set(rel, entry.id.raw, entry.filemode, st).hex()])
            else:
                staged.add(_StatEntry(rel, entry.id, entry.filemode, st))
        if isinstance(staged, gitindex.IndexFile):
            # Entries as new as the index being replaced may hide a same-tick edit (racy git).
            since = _mtime_seconds(self.index)
            if since is not None:
                changes["set"].extend([rel, fixed.hex()] for rel, fixed in staged.smudge_racy(since, self.repo.workdir))
            _write_over(self.lock, staged.serialize())
            self.record = {"from": start, "to": staged.trailer.hex(), **changes}
        else:
            staged.write()  # libgit2 writes <lock>.lock and renames it over the lock
            self.record = None
        self.staged = staged

    def _current(self, cached: _Cached | None) -> pygit2.Index | gitindex.IndexFile:
        """The index as it is in the lock file now, kept by this process as bytes: still exact if
        nobody wrote since (same file key); else caught up with the other quipu writers' changes
        from their log and checked against the file's checksum; else read again. libgit2 reads
        and writes only an index quipu.gitindex will not rewrite."""
        if cached is not None and isinstance(cached[1], gitindex.IndexFile):
            key, kept, through, since = cached
            if key == _file_key(self.index) and through == self.lock:
                return kept
            with contextlib.suppress(gitindex.Unsupported, OSError, ValueError, KeyError, TypeError):
                if _catch_up(kept, self.lock, os.path.join(self.repo.path, INDEX_LOG_NAME), since):
                    return kept
        try:
            with open(self.lock, "rb") as fh:
                return gitindex.IndexFile.parse(fh.read())
        except (gitindex.Unsupported, OSError, ValueError, IndexError):
            return pygit2.Index(self.lock)

    def commit(self) -> None:
        os.replace(self.lock, self.index)
        self.held = False
        self.journal.data["index_lock_at"] = None
        since = -1
        if self.record is not None:
            since = _log_index_change(os.path.join(self.repo.path, INDEX_LOG_NAME), self.record)
        if self.staged is not None:
            _INDEX_CACHE[self.index] = (_file_key(self.index), self.staged, self.lock, since)

    def rollback(self) -> None:
        if self.held:
            with contextlib.suppress(OSError):
                os.unlink(self.lock)
            self.held = False
        self.journal.data["index_lock_at"] = None


def _write_over(path: str, data: bytes) -> None:
    """Replace ``path`` with a new file holding ``data``, as libgit2 does: ``<path>.lock``, rename."""
    tmp = path + ".lock"
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)


class _StatEntry(pygit2.IndexEntry):
    """An index entry that carries the worktree file's stat data, as ``git add`` records it.

    Without it git would see the entry as possibly modified until something refreshes the index.
    pygit2 exposes no stat fields, so they are filled into its C struct; if that ever fails the
    entry is staged without them (still correct, only slower for git to check)."""

    def __init__(self, path: str, oid: pygit2.Oid, mode: int, st: os.stat_result) -> None:
        super().__init__(path, oid, mode)  # type: ignore[arg-type]
        self.st = st

    def _to_c(self) -> Any:
        centry, keep = super()._to_c()
        with contextlib.suppress(Exception):
            st = self.st
            for name, ns in (("ctime", st.st_ctime_ns), ("mtime", st.st_mtime_ns)):
                stamp = getattr(centry, name)
                stamp.seconds = min(ns // 1_000_000_000, 2**31 - 1)
                stamp.nanoseconds = ns % 1_000_000_000
            centry.dev = st.st_dev & 0xFFFFFFFF
            centry.ino = st.st_ino & 0xFFFFFFFF
            centry.uid = st.st_uid & 0xFFFFFFFF
            centry.gid = st.st_gid & 0xFFFFFFFF
            centry.file_size = st.st_size & 0xFFFFFFFF
        return centry, keep


INDEX_VERSION = 4
_NOT_COMPACTED: set[str] = set()


def compact_index(repo: pygit2.Repository) -> None:
    """Switch git's index to version 4 once, if it is older (``git update-index --index-version``).

    Version 4 stores each path as a change to the path before it: at 10,000 memories the file is a
    quarter smaller, and every quipu write (libgit2 keeps the version it read) hashes and writes a
    quarter less. Git has read it since 1.8.0; ``feature.manyFiles`` turns it on for the same reason.
    Without a git program, or while another one holds the index, the store simply stays as it is."""
    try:
        with open(os.path.join(repo.path, "index"), "rb") as fh:
            header = fh.read(8)
    except OSError:
        return
    if header[:4] != b"DIRC" or int.from_bytes(header[4:8], "big") >= INDEX_VERSION or repo.path in _NOT_COMPACTED:
        return
    _NOT_COMPACTED.add(repo.path)  # one try per process and store; the next process tries again
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            ["git", "-C", repo.workdir, "update-index", "--index-version", str(INDEX_VERSION)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30,
        )


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
