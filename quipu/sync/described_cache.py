"""What ``described.walk`` read each commit to have done, kept between runs in the store's cache
folder, so a long log reads each commit's trees once, not at every run.

Contract:
- A commit never changes, and neither does what it did: a record is keyed by the commit's full
  id and holds what ``Described.of`` found from its trees (its changes, the commit it verifiably
  undoes, that commit's changes in words). What its trailers claim, and whether that agrees, is
  read again from the commit every time.
- The file ``<cache folder>/NAME`` is one header line (``FORMAT``, ``stamp()``, the hash of the
  body) and a JSON body. ``stamp()`` names the code that reads commits (the source of the modules
  in ``CODE``, pygit2's and libgit2's versions): a change to any of them makes every record stale.
  A file that is missing, damaged, of another format or stamp, or whose body does not hash to
  its header, is ignored whole, and replaced at the next ``save``; a record that is not one
  ``valid`` allows is ignored alone. The cache only ever saves work: without it the log is the same.
- Not kept: a shallow repository's (a commit at its edge reads as a root until it is deepened).
- ``save`` writes a new file and renames it into place (a file, never through a symlink); a store
  it cannot write to (read-only) is left as it is. ``only``: keep just these commits' records
  (those of a whole walk of the branch), so records of rewritten history do not pile up.
- Nothing here reads git objects (pygit2 is asked only for its version).
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

NAME = "log-described.json"
FORMAT = 1
# The modules whose code decides what a record holds.
CODE = ("quipu.sync.described", "quipu.sync.treediff", "quipu.sync.policy", "quipu.store.effects",
        "quipu.store.decisions", "quipu.store.memory", "quipu.store.trailers")
MAX_BYTES = 1 << 30
_COMMIT = re.compile(r"[0-9a-f]{40}")
Record = tuple[tuple[tuple[str, str, str, str, bool], ...], "str | None", str]


def stamp() -> str | None:
    """The code that reads commits, as a hash; None when its source cannot be read."""
    import pygit2

    digest = hashlib.sha256(f"{FORMAT} {getattr(pygit2, '__version__', '')} {pygit2.LIBGIT2_VERSION}".encode())
    for name in CODE:
        path = getattr(importlib.import_module(name), "__file__", None)
        if not isinstance(path, str):
            return None
        try:
            digest.update(Path(path).read_bytes())
        except OSError:
            return None
    return digest.hexdigest()


def valid(value: object, kinds: Collection[str]) -> Record | None:
    """A record as ``save`` writes it, else None: its changes (each of one of ``kinds``, its memory
    and detail printable), the commit it undoes (a full id) or None, that commit's changes in words."""
    if not (type(value) is list and len(value) == 3 and type(value[0]) is list and type(value[2]) is str
            and value[2].isprintable()
            and (value[1] is None or type(value[1]) is str and _COMMIT.fullmatch(value[1]))):
        return None
    found = []
    for change in value[0]:
        if not (type(change) is list and len(change) == 5 and type(change[0]) is str and change[0] in kinds
                and type(change[1]) is str and change[1].isprintable() and type(change[2]) is str
                and type(change[3]) is str and change[3].isprintable() and type(change[4]) is bool):
            return None
        found.append((change[0], change[1], change[2], change[3], change[4]))
    return tuple(found), value[1], value[2]


class Kept:
    """The records of one cache folder; read on first ``get``."""

    def __init__(self, folder: Path, shallow: bool) -> None:
        self.path = folder / NAME
        self.stamp = None if shallow else stamp()
        self.records: dict[str, Any] | None = None
        self.added: dict[str, Record] = {}

    def get(self, commit: str) -> object:
        """The record of ``commit`` as read (check it with ``valid``), or None."""
        if self.stamp is None:
            return None
        if self.records is None:
            self.records = self._read()
        return self.records.get(commit)

    def put(self, commit: str, record: Record) -> None:
        if self.stamp is not None:
            self.added[commit] = record

    def _read(self) -> dict[str, Any]:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return {}
        try:
            with os.fdopen(fd, "rb") as f:
                header, _, body = f.read(MAX_BYTES).partition(b"\n")
            head = json.loads(header)
            if head != {"format": FORMAT, "stamp": self.stamp, "body": hashlib.sha256(body).hexdigest()}:
                return {}
            records = json.loads(body)
        except (OSError, ValueError, RecursionError):
            return {}
        return records if isinstance(records, dict) else {}

    def save(self, only: Collection[str] | None = None) -> None:
        """Write the records read and added (see the module contract), when any was added."""
        if self.stamp is None or not self.added:
            return
        records = dict(self.records or {})
        records.update((commit, [[list(c) for c in changes], reverts, undid])
                       for commit, (changes, reverts, undid) in self.added.items())
        if only is not None:
            records = {commit: record for commit, record in records.items() if commit in only}
        body = json.dumps(records, separators=(",", ":")).encode("ascii")
        header = json.dumps({"format": FORMAT, "stamp": self.stamp, "body": hashlib.sha256(body).hexdigest()})
        tmp = self.path.with_name(f"{NAME}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(header.encode("ascii") + b"\n" + body)
            os.replace(tmp, self.path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
