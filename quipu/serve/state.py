"""The viewer's state for one run: the store, the run's secrets, the open index and meaning search.

Contract:
- ``Viewer.create`` makes a fresh random token (the key in the printed URL, then a cookie) and a
  CSRF token derived from it; neither is written anywhere.
- ``read(fn)`` runs ``fn`` on the store's index, opened once and reopened only when HEAD moved or
  the file was replaced (``index.ensure_fresh`` first), so a page of a large store reads SQLite, never
  the memory files. A damaged index is rebuilt and ``fn`` run once more.
- ``after_write`` brings the index up to a commit the viewer just made (as the commands do).
- Requests are served one at a time (the app's handlers never run in parallel), so the one
  connection is never shared between threads.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from quipu.index import index, schema
from quipu.index.deep import Nearest
from quipu.index.meaning import Meaning
from quipu.prompt import locate
from quipu.store.store import Store

T = TypeVar("T")


@dataclass
class Viewer:
    store: Store
    token: str
    csrf: str
    meaning: Meaning = field(default_factory=Meaning)
    _db: sqlite3.Connection | None = None
    _key: tuple[str | None, int] = (None, 0)

    @classmethod
    def create(cls, store: Store) -> Viewer:
        token = secrets.token_urlsafe(32)
        csrf = hmac.new(token.encode(), b"quipu-serve-csrf", hashlib.sha256).hexdigest()
        return cls(store, token, csrf)

    def _inode(self) -> int:
        try:
            return os.stat(self.store.index_path).st_ino
        except OSError:
            return 0

    def db(self) -> sqlite3.Connection:
        gitdir = locate.git_dir(str(self.store.root))
        head = locate.read_head(gitdir) if gitdir else None
        if self._db is None or self._key != (head, self._inode()):
            index.ensure_fresh(self.store)
            self.close()
            self._db = schema.connect(self.store.index_path, any_thread=True)
            self._key = (head, self._inode())
        return self._db

    def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return fn(self.db())
        except sqlite3.DatabaseError:
            self.close()
            index.ensure_fresh(self.store, force_rebuild=True)
            return fn(self.db())

    def nearest(self, db: sqlite3.Connection) -> Nearest | None:
        return self.meaning.nearest(index.index_file(self.store).parent, db, self._key)

    def after_write(self) -> None:
        index.refresh_after_write(self.store)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
