"""The SQLite FTS5 index: a cache of the store that can always be rebuilt from git.

Contract:
- ``<store>/.cache/index.sqlite`` holds one row per memory with every field recall ranks or
  filters by as a plain column (class, status, labels, created, half-life...), so nothing parses
  YAML at query time, and an FTS5 table over title, aliases, tags, description and body.
- ``meta.head`` records the commit the index was built from. ``ensure_fresh`` compares it with
  HEAD (read from git's files) and re-indexes only the paths that differ between the two trees;
  when HEAD is the commit this thread's last write landed (``Store.landed``) on top of the
  indexed one, it takes that write's files as written, with no git read (``refresh.apply_written``).
  A missing, corrupt, foreign or unreadable index, or one whose commit git no longer has, is
  rebuilt (into a new file that replaces the old one atomically); it never surfaces as an error.
- A journal, write-ahead log or shared-memory file found beside the index under the index lock is
  a killed writer's: the index is rebuilt, and the rebuild rolls back or removes those files
  before its new file takes the name, so a hot journal of an old file never reaches a new one.
- After every write quipu records the file's identity (inode, size, mtime) and the machine's boot
  beside it in ``index.sqlite.stamp``. A file changed by anything else (bytes overwritten, a copy
  dropped in), or last written in an earlier boot (its writes are not synced: a power loss may
  have cut them short), must pass ``PRAGMA quick_check`` before it is trusted again. ``query`` and ``rows`` rebuild and
  retry once if SQLite still reports the file damaged mid-query.
- Files with malformed frontmatter are skipped and listed in ``problems`` (``quipu doctor``).
- Index writers serialise on an ``flock``; readers never write.
- A store whose ``.cache`` cannot be written (a read-only store, a folder another user owns) is
  still read: ``ensure_fresh`` builds a private index in a temporary folder for the process and
  warns once; nothing is written in the store. ``refresh_after_write`` is the refresh a command
  runs after its commit landed: if the index cannot be written it warns that the index will
  catch up on the next read, and the command still reports its commit.
- The schema, table names and the ranking SQL live in ``quipu.prompt.recall``'s stdlib-only world:
  this module may load pygit2 (to diff trees, to rebuild) and yaml; the prompt path never imports it.
"""
from __future__ import annotations

import atexit
import contextlib
import errno
import os
import sqlite3
import sys
import time
from _thread import _local as thread_local
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from quipu.errors import FatalError
from quipu.index.derive import fold_events
from quipu.lite import NamedTuple
from quipu.index.schema import SCHEMA, SCHEMA_VERSION, connect, leftovers, read_meta
from quipu.prompt import locate
from quipu.store.locks import file_lock
from quipu.store.memory import Memory
from quipu.store.store import CONFIG_NAME, Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


class RefreshResult(NamedTuple):
    action: str  # "fresh", "incremental", "rebuilt"
    head: str | None
    changed: int
    problems: int
    seconds: float


# Stores whose own cache cannot be written: {store root: the private index file used instead}.
_PRIVATE: dict[str, Path] = {}
# Inside ``one_connection``: this thread's kept connection, as (index path, its stamp, connection).
_KEPT = thread_local()
_UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def index_file(store: Store) -> Path:
    """The index this process reads: the store's own, or a private one when that is unwritable."""
    return _PRIVATE.get(str(store.root), store.index_path)


def _index_lock(store: Store) -> contextlib.AbstractContextManager[None]:
    return file_lock(index_file(store).with_name("index.lock"))


class IndexUnwritable(FatalError):
    """The store's index folder cannot be written."""


def _is_unwritable(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in _UNWRITABLE
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("readonly" in text or "unable to open" in text)


def _use_private_index(store: Store, exc: BaseException) -> None:
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="quipu-index-")
    atexit.register(shutil.rmtree, folder, True)
    _PRIVATE[str(store.root)] = Path(folder) / store.index_path.name
    print(f"quipu: warning: cannot write the index in {store.cache_dir} ({_reason(exc)}); "
          "reading from a private copy for this command", file=sys.stderr)


def _reason(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__


def refresh_after_write(store: Store, known: Mapping[str, Memory] | None = None) -> bool:
    """Bring the index up to a commit that has landed; False (and a warning) when the index cannot
    be written now: the commit stands, and the next read catches up with it. ``known``: the
    memories the writer read from the blobs it committed (by blob id), not parsed again."""
    try:
        ensure_fresh(store, private_ok=False, known=known)
        return True
    except (OSError, sqlite3.Error, IndexUnwritable) as exc:
        print(f"quipu: warning: the commit landed, but the index could not be updated ({_reason(exc)}); "
              "it will catch up on the next read\n- or run `quipu index --refresh` once the store's "
              ".cache folder can be written", file=sys.stderr)
        return False


def _open_valid(store: Store) -> sqlite3.Connection | None:
    """The existing index if it is ours and readable, else None (it will be rebuilt)."""
    path = index_file(store)
    held = _take(path)
    if held is not None:
        return held  # validated by this thread, and the file has not changed since
    if not path.is_file():
        return None
    db: sqlite3.Connection | None = None
    try:
        db = connect(path)
        meta = read_meta(db)
        if meta.get("schema") != SCHEMA_VERSION or meta.get("store") != str(store.root.resolve()):
            db.close()
            return None
        if _read_stamp(store) != _file_stamp(path):
            # Changed by something other than quipu: trust it only if SQLite finds it intact.
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                db.close()
                return None
            _write_stamp(store)
        db.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'quipu'").fetchone()
        return db
    except sqlite3.DatabaseError:
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()
        return None


def _stamp_path(store: Store) -> Path:
    path = index_file(store)
    return path.with_name(path.name + ".stamp")


def _file_stamp(path: Path) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{_boot()}"


_BOOT: list[str] = []


def _boot() -> str:
    """This boot of the machine (Linux's boot id; empty elsewhere). A stamp names the boot its file
    was written in: the index is written without an fsync, so a file from an earlier boot may have
    lost writes in a power loss, and must pass ``PRAGMA quick_check`` like a file changed by another."""
    if not _BOOT:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
                _BOOT.append(fh.read().strip())
        except (OSError, ValueError):
            _BOOT.append("")
    return _BOOT[0]


def _read_stamp(store: Store) -> str:
    try:
        return _stamp_path(store).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


_STAMP_WIDTH = 128  # a stamp is written in place, padded: never a shorter text over a longer one


def _write_stamp(store: Store) -> None:
    """Written in place under the index lock (its only readers hold it too), not as a new file
    renamed over the old one: on ext4 that rename flushes the new file, milliseconds on a busy disk.
    A write cut short leaves a stamp that matches nothing: the file is checked, as after any change."""
    data = _file_stamp(index_file(store)).ljust(_STAMP_WIDTH).encode("ascii")
    with contextlib.suppress(OSError):
        fd = os.open(_stamp_path(store), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            os.pwrite(fd, data, 0)
            if os.fstat(fd).st_size > len(data):
                os.ftruncate(fd, len(data))
        finally:
            os.close(fd)


def ensure_fresh(store: Store, *, force_rebuild: bool = False, private_ok: bool = True,
                 known: Mapping[str, Memory] | None = None) -> RefreshResult:
    """Bring the index up to HEAD, rebuilding it when it cannot be trusted. When the store's index
    cannot be written, a fresh index it already has is read as it is, and otherwise (with
    ``private_ok``) a private one is built; without ``private_ok`` that raises IndexUnwritable."""
    try:
        return _ensure_fresh(store, force_rebuild, known)
    except (OSError, sqlite3.OperationalError) as exc:
        if not _is_unwritable(exc) or str(store.root) in _PRIVATE:
            raise
        if not force_rebuild:
            fresh = _fresh_as_it_is(store)
            if fresh is not None:
                return fresh
        if not private_ok:
            raise IndexUnwritable(f"cannot write the index in {store.cache_dir}: {_reason(exc)}") from exc
        _use_private_index(store, exc)
    return _ensure_fresh(store, force_rebuild)


def _fresh_as_it_is(store: Store) -> RefreshResult | None:
    """The store's own index when it already matches HEAD (read only: no lock, no stamp)."""
    path = store.index_path
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            meta = read_meta(db)
        finally:
            db.close()
    except sqlite3.Error:
        return None
    head = store.head()
    if meta.get("head") == head and meta.get("schema") == SCHEMA_VERSION and meta.get("store") == str(store.root.resolve()):
        return RefreshResult("fresh", head, 0, 0, 0.0)
    return None


def _ensure_fresh(store: Store, force_rebuild: bool, known: Mapping[str, Memory] | None = None) -> RefreshResult:
    start = time.perf_counter()
    with _index_lock(store):
        head = store.head()
        # Under this lock nobody writes the index: a journal, WAL or shared-memory file beside it
        # is a killed writer's, which cannot be proven to belong to the file it sits beside (an
        # older rebuild may have renamed a new file under it). The index is rebuilt from git.
        stale = bool(leftovers(index_file(store)))
        db = None if force_rebuild or stale else _open_valid(store)
        if db is not None:
            try:
                indexed = read_meta(db).get("head")
                if indexed == head:
                    _release(db, index_file(store))
                    return RefreshResult("fresh", head, 0, 0, time.perf_counter() - start)
                from quipu.index import refresh  # loaded only when the index must change

                landed = store.landed()
                if landed is not None and landed.commit == head and landed.parent == indexed and landed.changes:
                    changed: int | None = refresh.apply_written(store, db, head, landed.changes, known)  # as written
                else:
                    changed = refresh.refresh_changed(store, db, indexed, head, known)  # read from git
                problems = db.execute("SELECT count(*) FROM problems").fetchone()[0]
                _write_stamp(store)
                _release(db, index_file(store))
                if changed is not None:
                    return RefreshResult("incremental", head, changed, problems, time.perf_counter() - start)
            except sqlite3.DatabaseError:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
        from quipu.index.rebuild import rebuild_index

        count, problems = rebuild_index(store, head, index_file(store), known)
        _write_stamp(store)
        return RefreshResult("rebuilt", head, count, problems, time.perf_counter() - start)


@contextlib.contextmanager
def one_connection() -> Iterator[None]:
    """Within it, this thread's reads of an index and its refreshes share one connection, checked
    once: the connection each is done with is kept while the file stays as it left it (its inode,
    size and mtime), and the next takes it instead of opening and checking the file again. A
    command that reads the index, commits and refreshes it (``quipu add``) opens it once."""
    _KEPT.on = True
    try:
        yield
    finally:
        _KEPT.on = False
        held, _KEPT.held = getattr(_KEPT, "held", None), None
        if held is not None:
            held[2].close()


def _take(path: Path) -> sqlite3.Connection | None:
    """The kept connection to ``path`` if the file is still as it was left, else None (and it is closed)."""
    held: tuple[str, str, sqlite3.Connection] | None = getattr(_KEPT, "held", None)
    _KEPT.held = None
    if held is None:
        return None
    if held[0] == str(path) and held[1] == _file_stamp(path):
        return held[2]
    held[2].close()
    return None


def _release(db: sqlite3.Connection, path: Path) -> None:
    """Done with ``db``: kept inside ``one_connection``, else closed."""
    if not getattr(_KEPT, "on", False):
        db.close()
        return
    db.row_factory = None
    _take(path)  # closes another kept connection
    _KEPT.held = (str(path), _file_stamp(path), db)


def open_fresh(store: Store) -> sqlite3.Connection:
    """A read connection to an index that matches HEAD."""
    ensure_fresh(store)
    try:
        return _take(index_file(store)) or connect(index_file(store))
    except sqlite3.DatabaseError as exc:  # pragma: no cover - the file was just rebuilt
        raise FatalError(f"cannot open the index {store.index_path}: {exc}\n- run `quipu index --rebuild`") from exc


def query(store: Store, read: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``read`` on a fresh index; if SQLite finds the file damaged, rebuild it and run again."""
    for attempt in (1, 2):
        db = open_fresh(store)
        try:
            result = read(db)
        except sqlite3.DatabaseError:
            db.close()
            if attempt == 2:
                raise
        except BaseException:
            db.close()
            raise
        else:
            _release(db, index_file(store))
            return result
        ensure_fresh(store, force_rebuild=True)
    raise AssertionError("unreachable")  # pragma: no cover


# ---------------------------------------------------------------- derived state


def rows(store: Store, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
    def read(db: sqlite3.Connection) -> list[sqlite3.Row]:
        db.row_factory = sqlite3.Row
        return list(db.execute(sql, tuple(params)))

    return query(store, read)


def config_changed(rel: str) -> bool:
    return rel == CONFIG_NAME


__all__ = ["ensure_fresh", "open_fresh", "query", "rows", "fold_events", "RefreshResult", "SCHEMA", "locate"]
