"""git's own index.lock, held across the branch swap, and the index written under it."""
from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping

from quipu.errors import FatalError
from quipu.store import gitindex
from quipu.store.journal import Journal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    import pygit2

INDEX_WAIT_SECONDS = 2.0  # a person's `git commit -a` holds index.lock while their editor is open


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


def _catch_up(kept: gitindex.IndexFile, index: str, log: str, since: int) -> bool:
    """Bring ``kept`` up to the index file ``index`` through the quipu writers' changes logged after
    offset ``since`` of the log (where this process's own last change ended).

    True only when a chain of changes leads from the checksum ``kept`` was written with to the
    checksum at the end of the file, and ``kept`` then serializes to exactly that checksum (a
    person's `git add` or `git status` wrote the file: no chain, and the caller reads it)."""
    with open(index, "rb") as fh:
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


class GitIndexLock:
    """git's own ``index.lock``, taken atomically as git takes it, and held across the swap.

    ``acquire`` creates the lock empty with O_EXCL, as git does; ``prepare`` reads ``.git/index``
    (stable: nobody writes it without this lock), stages the paths and writes the new index into
    the lock file itself (no second file renamed over it: on ext4 replacing a file flushes the new
    one, milliseconds on a busy disk); ``commit`` renames the lock over ``.git/index``, ``rollback``
    throws it away. A person's ``git add`` is therefore never undone. An index that
    quipu.store.gitindex does not rewrite is copied into the lock and written by libgit2."""

    def __init__(self, gitdir: str, workdir: str, journal: Journal) -> None:
        self.gitdir = gitdir
        self.workdir = workdir
        self.journal = journal
        self.lock = os.path.join(gitdir, "index.lock")
        self.index = os.path.join(gitdir, "index")
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
        os.close(os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))

    def prepare(self, paths: list[str], entry_of: Callable[[str], tuple[int, str] | None],
                stats: Mapping[str, os.stat_result] | None = None) -> None:
        """Stage ``paths`` as the new tree has them (``entry_of``: a file's mode and blob id, or None;
        ``stats``: the status of files this write made, taken as each was written)."""
        stats = stats or {}
        staged = self._current(_INDEX_CACHE.pop(self.index, None))
        self.staged = None
        changes: dict[str, list[Any]] = {"set": [], "rm": []}
        start = staged.trailer.hex() if isinstance(staged, gitindex.IndexFile) else ""
        setting: list[tuple[str, bytes, int, os.stat_result]] = []
        for rel in paths:
            entry = entry_of(rel)
            if entry is None:
                with contextlib.suppress(Exception):
                    staged.remove(rel)
                changes["rm"].append(rel)
                continue
            mode, oid = entry
            st = stats.get(rel) or os.lstat(os.path.join(self.workdir, rel))
            if isinstance(staged, gitindex.IndexFile):
                setting.append((rel, bytes.fromhex(oid), mode, st))
            else:
                staged.add(_stat_entry(rel, oid, mode, st))
        if isinstance(staged, gitindex.IndexFile):
            fixed = staged.set_many(setting)
            changes["set"].extend([item[0], part.hex()] for item, part in zip(setting, fixed, strict=True))
            # Entries as new as the index being replaced may hide a same-tick edit (racy git).
            since = _mtime_seconds(self.index)
            if since is not None:
                racy = staged.smudge_racy(since, self.workdir, [item[0] for item in setting if item[0] in stats])
                changes["set"].extend([rel, fixed.hex()] for rel, fixed in racy)
            _write_into(self.lock, staged.serialize())
            self.record = {"from": start, "to": staged.trailer.hex(), **changes}
        else:
            staged.write()  # libgit2 writes <lock>.lock and renames it over the lock
            self.record = None
        self.staged = staged

    def _current(self, cached: _Cached | None) -> pygit2.Index | gitindex.IndexFile:
        """The index as it is in ``.git/index`` now, kept by this process as bytes: still exact if
        nobody wrote since (same file key); else caught up with the other quipu writers' changes
        from their log and checked against the file's checksum; else read again. libgit2 reads
        and writes only an index quipu.store.gitindex will not rewrite (a copy in the lock)."""
        if cached is not None and isinstance(cached[1], gitindex.IndexFile):
            key, kept, through, since = cached
            assert isinstance(kept, gitindex.IndexFile)  # checked above; this tells the type checker
            if key == _file_key(self.index) and through == self.lock:
                return kept
            with contextlib.suppress(gitindex.Unsupported, OSError, ValueError, KeyError, TypeError):
                if _catch_up(kept, self.index, os.path.join(self.gitdir, INDEX_LOG_NAME), since):
                    return kept
        if not os.path.isfile(self.index):  # deleted, or something else in its place: nothing to stage onto
            what = "missing" if not os.path.lexists(self.index) else "not a file"
            raise FatalError(f"git's index of the store ({self.index}) is {what}; nothing was written\n- run "
                             "`quipu doctor --repair`: it rebuilds the index from the store's commits")
        try:
            with open(self.index, "rb") as fh:
                return gitindex.IndexFile.parse(fh.read())
        except (gitindex.Unsupported, OSError, ValueError, IndexError):
            import pygit2  # an index quipu.store.gitindex does not rewrite: libgit2's own reader

            with contextlib.suppress(FileNotFoundError):  # (no .git/index yet: the lock stays empty)
                with open(self.index, "rb") as src:
                    _write_into(self.lock, src.read())
            try:
                return pygit2.Index(self.lock)
            except pygit2.GitError as exc:  # git's own cache of the worktree, damaged: nothing is lost
                raise FatalError(f"git's index of the store ({self.index}) is damaged ({exc}); nothing was "
                                 "written\n- run `quipu doctor --repair`: it rebuilds the index from the "
                                 "store's commits and keeps the damaged file aside") from None

    def commit(self) -> None:
        os.replace(self.lock, self.index)
        self.held = False
        self.journal.data["index_lock_at"] = None
        since = -1
        if self.record is not None:
            since = _log_index_change(os.path.join(self.gitdir, INDEX_LOG_NAME), self.record)
        if self.staged is not None:
            _INDEX_CACHE[self.index] = (_file_key(self.index), self.staged, self.lock, since)

    def rollback(self) -> None:
        if self.held:
            with contextlib.suppress(OSError):
                os.unlink(self.lock)
            self.held = False
        self.journal.data["index_lock_at"] = None


def _write_into(lock: str, data: bytes) -> None:
    """Make the lock file this process created hold exactly ``data`` (written in place, as git
    writes its index into ``index.lock``; never truncated to nothing first, which on ext4 would
    flush it at close as a replacement does)."""
    fd = os.open(lock, os.O_WRONLY)
    try:
        view = memoryview(data)
        at = 0
        while at < len(data):
            at += os.pwrite(fd, view[at:], at)
        if os.fstat(fd).st_size > len(data):
            os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def _stat_entry(path: str, oid: str, mode: int, st: os.stat_result) -> pygit2.IndexEntry:
    """An index entry that carries the worktree file's stat data, as ``git add`` records it.

    Without it git would see the entry as possibly modified until something refreshes the index.
    pygit2 exposes no stat fields, so they are filled into its C struct; if that ever fails the
    entry is staged without them (still correct, only slower for git to check)."""
    import pygit2

    class StatEntry(pygit2.IndexEntry):
        def _to_c(self) -> Any:
            centry, keep = super()._to_c()
            with contextlib.suppress(Exception):
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

    return StatEntry(path, pygit2.Oid(hex=oid), mode)  # type: ignore[arg-type]


INDEX_VERSION = 4


_NOT_COMPACTED: set[str] = set()


def compact_index(gitdir: str, workdir: str) -> None:
    """Switch git's index to version 4 once, if it is older (``git update-index --index-version``).

    Version 4 stores each path as a change to the path before it: at 10,000 memories the file is a
    quarter smaller, and every quipu write (libgit2 keeps the version it read) hashes and writes a
    quarter less. Git has read it since 1.8.0; ``feature.manyFiles`` turns it on for the same reason.
    Without a git program, or while another one holds the index, the store simply stays as it is."""
    try:
        with open(os.path.join(gitdir, "index"), "rb") as fh:
            header = fh.read(8)
    except OSError:
        return
    if header[:4] != b"DIRC" or int.from_bytes(header[4:8], "big") >= INDEX_VERSION or gitdir in _NOT_COMPACTED:
        return
    _NOT_COMPACTED.add(gitdir)  # one try per process and store; the next process tries again
    import subprocess

    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            ["git", "-C", workdir, "update-index", "--index-version", str(INDEX_VERSION)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30,
        )
