"""The memories a curator pass looks at: one load of the store, joined with the index's derived state.

Contract:
- ``load`` reads every memory file at HEAD once (the bytes and the parsed ``Memory``) and joins it
  with the index row's derived ``status`` and ``labels``; files the index skipped as malformed are
  left out. The result is a snapshot: decisions made during a pass update it through ``retire``.
- ``active`` is what the passes consider: memories that are not superseded.
- Topic and entity comparison is case-insensitive (``norm``), so "CloudFront" and "cloudfront"
  are one subject.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from quipu.index import index
from quipu.errors import FatalError
from quipu.store.memory import Memory, parse_memory
from quipu.store.store import Store

_OUT = ("superseded", "retracted")  # statuses the curator leaves alone


def norm(values: Iterable[str]) -> frozenset[str]:
    return frozenset(" ".join(v.casefold().split()) for v in values if v.strip())


@dataclass(frozen=True)
class Entry:
    memory: Memory
    data: bytes
    status: str
    labels: dict[str, str]
    created_ts: float

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def topics(self) -> frozenset[str]:
        return norm(self.memory.topics)

    @property
    def entities(self) -> frozenset[str]:
        return norm(self.memory.entities)

    @property
    def fingerprint(self) -> str:
        """A short hash of the file's bytes: a decision cached under it is stale once the file changes."""
        return hashlib.sha1(self.data).hexdigest()[:12]


@dataclass
class Corpus:
    entries: dict[str, Entry]
    retired: set[str] = field(default_factory=set)

    def active(self) -> list[Entry]:
        """Not superseded (at load time or during this pass), oldest first then by id."""
        out = [e for e in self.entries.values() if e.status not in _OUT and e.id not in self.retired]
        return sorted(out, key=lambda e: (e.created_ts, e.id))

    def is_active(self, memory_id: str) -> bool:
        entry = self.entries.get(memory_id)
        return entry is not None and entry.status not in _OUT and memory_id not in self.retired

    def retire(self, memory_id: str) -> None:
        self.retired.add(memory_id)


def load(store: Store) -> Corpus:
    derived = {
        r["id"]: (r["status"], r["label_details"], r["created_ts"])
        for r in index.rows(store, "SELECT id, status, label_details, created_ts FROM memories")
    }
    entries: dict[str, Entry] = {}
    for rel, data in store.iter_memory_files():
        try:
            memory = parse_memory(data, rel)
        except FatalError:
            continue  # malformed files are `quipu doctor`'s business, not the curator's
        if memory.id not in derived or memory.path != rel:
            continue
        status, details, created_ts = derived[memory.id]
        try:
            labels = json.loads(details or "{}")
        except ValueError:
            labels = {}
        entries[memory.id] = Entry(memory, data, status, labels if isinstance(labels, dict) else {}, created_ts)
    return Corpus(entries)
