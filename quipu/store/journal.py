"""The writer's crash journal, recovery after a writer that died mid-commit, and the worktree files of
a write (``write_worktree``; a bulk write's new files made in two threads while its tree is built: ``NewFiles``)."""
from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from quipu.errors import InvalidMemory
from quipu.store import safepath
from quipu.store.gitrefs import common_dir
from quipu.store.trees import check_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

JOURNAL_NAME = "quipu-pending.json"
CHILD_GRACE = 0.5  # seconds a git child of a dead writer gets to finish before its lock is taken for a leftover
DEAD_LOCK_WINDOW = 10.0  # a dead writer creates its lock file within this long after its step began


class Journal:
    """``<gitdir>/quipu-pending.json``: what the writer holding the lock is doing, for recovery.

    ``index_lock_at`` / ``ref_lock_at`` are set just before quipu may create git's ``index.lock``
    or the branch's ref lock and cleared when it no longer holds them: a lock file created after
    that moment by a writer that then died is the dead writer's.

    Each step appends one JSON line (a single small ``write``, so a writer killed mid-step leaves
    the previous line intact) and the last whole line is the state; no temporary file and rename
    per step. ``clear`` removes the file."""

    def __init__(self, gitdir: str, commit: str, ref: str, paths: list[str]) -> None:
        self.path = os.path.join(gitdir, JOURNAL_NAME)
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


def recover(gitdir: str, workdir: str) -> list[str]:
    """Clean up after a writer that died or could not finish; call with the writer lock held.

    Returns the journalled paths still to be synced to HEAD (the caller's write syncs them)."""
    _remove_dead_writers_scratch(gitdir)
    # libgit2 writes a new index as index.lock.lock; only a quipu writer holding the flock (ours
    # now) ever makes that file, so one that exists is a dead writer's.
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(gitdir, "index.lock.lock"))
    path = os.path.join(gitdir, JOURNAL_NAME)
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
    if isinstance(pid, int) and pid != os.getpid() and not alive(pid):
        _remove_dead_writers_files(gitdir, workdir, pending, pid, paths)
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
    if isinstance(pid, int) and not isinstance(pid, bool) and pid != os.getpid() and alive(pid):
        return None
    return pending


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


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _remove_dead_writers_files(gitdir: str, workdir: str, pending: dict[str, Any], pid: int, paths: list[str]) -> None:
    """Remove the git lock files a killed quipu writer held, and its temporary files.

    A lock counts as the dead writer's only when its journal says it was about to take that
    lock and the file is newer than that moment: a lock a person's git took before (an editor
    open in ``git commit``) is left alone."""
    candidates = [(os.path.join(gitdir, "index.lock"), pending.get("index_lock_at"))]
    ref = pending.get("ref")
    if isinstance(ref, str) and ref.startswith("refs/") and ".." not in ref.split("/"):
        candidates.append((os.path.join(common_dir(gitdir), ref + ".lock"), pending.get("ref_lock_at")))
    for lock, since in candidates:
        if isinstance(since, (int, float)) and not isinstance(since, bool):
            # The branch is moved by a `git update-ref` child, which may outlive its killed parent by
            # a few milliseconds: give it the time to finish and drop its own lock.
            deadline = time.monotonic() + CHILD_GRACE
            while os.path.exists(lock) and time.monotonic() < deadline:
                time.sleep(0.01)
            with contextlib.suppress(OSError):
                # The ctime: when the lock file was made or last written, whatever mtime it carries.
                if since - 0.01 <= os.stat(lock).st_ctime <= since + DEAD_LOCK_WINDOW:
                    os.unlink(lock)
    for rel in paths:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(workdir, f"{rel}.{pid}.tmp"))


_SCRATCH = re.compile(r"\A(?:quipu-pending\.json|quipu-index)\.(\d+)\.tmp(?:\.lock)?\Z")


def _remove_dead_writers_scratch(gitdir: str) -> None:
    """Scratch files in the git dir carry their writer's pid; remove those of dead writers."""
    with contextlib.suppress(OSError):
        for name in os.listdir(gitdir):
            match = _SCRATCH.match(name)
            if match and int(match.group(1)) != os.getpid() and not alive(int(match.group(1))):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(gitdir, name))


def safe_worktree_path(workdir: str, rel: str, checked: set[str] | None = None, *, new: bool = False) -> str:
    """``checked``: the folders this write has already found real (see ``safepath.worktree_path``);
    ``new``: the caller creates the file with ``O_EXCL`` and ``O_NOFOLLOW``, which refuse anything
    at the path, so only its folders are checked."""
    root = os.path.normpath(workdir)
    full = os.path.normpath(os.path.join(root, check_path(rel)))
    if not full.startswith(root + os.sep):
        raise InvalidMemory(f"refusing to write outside the store: {rel!r}")
    return safepath.worktree_path(Path(root), rel, checked, folders_only=new)  # no symlinked folder on the way


def write_worktree(workdir: str, paths: list[str], data_of: Callable[[str], bytes | None]) -> dict[str, os.stat_result]:
    """Make the worktree files of ``paths`` hold what ``data_of`` gives (the new tree's files: atomic
    renames; None means removed). Returns the status of each file written, taken from its open
    descriptor once written (what git's index records of it)."""
    checked: set[str] = set()
    written: dict[str, os.stat_result] = {}
    for rel in paths:
        full = safe_worktree_path(workdir, rel, checked)
        data = data_of(rel)
        if data is None:
            if os.path.isfile(full) or os.path.islink(full):
                os.unlink(full)
            _prune_empty_dirs(workdir, os.path.dirname(full))
            continue
        made = _create(full, data)
        if made is not None:
            written[rel] = made
            continue
        try:
            with open(full, "rb") as fh:
                if fh.read(len(data) + 1) == data:
                    continue
        except OSError:
            pass
        tmp = f"{full}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            written[rel] = os.fstat(fh.fileno())
        os.replace(tmp, full)
    return written


class NewFiles:
    """The files of a write that are new to its tree, created in a thread of their own while the
    caller builds the tree and its pack (the kernel's work of creating 100,000 files beside
    Python's). Only a path free in the worktree is created (``O_EXCL`` with ``O_NOFOLLOW``:
    anything there, a symlink included, is left to ``write_worktree``), in folders checked as
    ``write_worktree`` checks them. Call after the paths are journalled: the next writer removes them if
    this write does not land. ``join`` gives each created file's status."""

    THREADS = 2  # the kernel creates files in two folders at once on two cores

    def __init__(self, workdir: str, files: Mapping[str, bytes]) -> None:
        self.made: dict[str, os.stat_result] = {}
        self._error: BaseException | None = None
        shares: list[list[tuple[str, bytes]]] = [[] for _ in range(self.THREADS)]
        for rel, data in files.items():  # each folder's files in one thread
            shares[hash(rel.rpartition("/")[0]) % self.THREADS].append((rel, data))
        import threading  # only a bulk write: a single add loads no threading

        self._threads = [threading.Thread(target=self._run, args=(workdir, share), daemon=True) for share in shares]
        for thread in self._threads:
            thread.start()

    def _run(self, workdir: str, items: list[tuple[str, bytes]]) -> None:
        checked: set[str] = set()
        folders: dict[str, str] = {}  # each folder checked once, by its first file's whole path
        try:
            for rel, data in items:
                parent, _, name = check_path(rel).rpartition("/")
                folder = folders.get(parent)
                if folder is None:
                    folder = folders[parent] = os.path.dirname(safe_worktree_path(workdir, rel, checked, new=True))
                made = _create(os.path.join(folder, name), data)
                if made is not None:
                    self.made[rel] = made
        except BaseException as exc:  # noqa: BLE001 - raised again in the writer's own thread by ``join``
            self._error = exc

    def join(self) -> dict[str, os.stat_result]:
        for thread in self._threads:
            thread.join()
        if self._error is not None:
            raise self._error
        return self.made

    def undo(self, workdir: str) -> None:
        """Remove the files made here (a write that did not land; each was made new, ``O_EXCL``)."""
        for thread in self._threads:
            thread.join()
        for rel in self.made:
            full = os.path.join(workdir, rel)
            with contextlib.suppress(OSError):
                os.unlink(full)
            _prune_empty_dirs(workdir, os.path.dirname(full))


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _create(full: str, data: bytes) -> os.stat_result | None:
    """Write a file that is not there yet in one step (its status); None when something is at
    ``full`` (it is compared and replaced by a rename). A writer killed mid-file leaves a journalled
    path, which the next writer writes again from the branch."""
    try:
        fd = os.open(full, _NEW_FILE, 0o666)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(full), exist_ok=True)
        try:
            fd = os.open(full, _NEW_FILE, 0o666)
        except OSError:
            return None
    except OSError:
        return None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return os.fstat(fd)
    finally:
        os.close(fd)


def _prune_empty_dirs(workdir: str, directory: str) -> None:
    stop = os.path.normpath(workdir)
    while os.path.normpath(directory).startswith(stop + os.sep):
        try:
            os.rmdir(directory)
        except OSError:
            return
        directory = os.path.dirname(directory)
