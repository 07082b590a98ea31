"""What the curator has already decided, so a sweep never asks about a pair twice.

Contract:
- A pair is decided when the store holds a decision about it: a supersession event (applied by a
  sweep, a review or a person), a review-queue item naming both memories, or a decision of either
  kind that a person undid (an undone decision is a "no", never re-applied automatically,
  whether it was taken back with ``quipu undo`` or a plain ``git revert``). All of this is
  derived from git (the index's events table, and the decisions' event files that the store no
  longer holds: ``quipu.store.effects``, never a trailer alone), so a sweep killed midway loses
  nothing: every decision that reached a commit is seen by the next sweep.
- Verdicts that change nothing in the store ("unrelated") are remembered in the git-ignored
  ``<store>/.cache/curate-verdicts.jsonl`` under both memories' content fingerprints: when either
  memory changes, the pair is asked again. Losing the cache costs model calls, never correctness.
- ``dead_path_flags`` lists the path sets each memory was ever flagged for, so a finding a person
  rejected is not raised again for the same paths.
- ``taken_back`` holds, by memory, the decisions made without a model (a finding's label and
  review item, ``duplicate`` or ``dead-path``; a ``consistency`` review item) whose event file a
  commit added and the store no longer holds: a person took it back (``quipu undo`` in any of
  its forms, a plain ``git revert``, removing the file by hand; nothing else removes an event).
  Each carries the memory's ``form`` as the decision's commit holds it. ``took_back`` names the
  one a new finding would repeat: the same kind about the same memory in the same form, and the
  same original (a duplicate), no path outside those taken back (a dead path), or the same
  tension (consistency). A memory whose form changed since is judged again. Read from the trees
  and the event files, in this store or a clone, with or without the cache.
- The branch's history is read once (``history``) for all of this, and the enrichment reads its
  own "no" from the same list. A decision's commit is read by lookups of its memory's event
  folder (its ``Quipu-Memory`` trailer says which) in its tree and its parent's, not by a diff
  of the whole trees.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from quipu.errors import FatalError
from quipu.index import index
from quipu.store import effects
from quipu.store.memory import ID_RE, Memory, memory_path, parse_memory, render_memory
from quipu.store.store import Store
from quipu.store.trailers import LogEntry, event_dir

VERDICT_CACHE = "curate-verdicts.jsonl"
# The kinds of review item the sweep queues without a model, and whose take-back it keeps to.
FINDING_KINDS = ("duplicate", "dead-path")
CONSISTENCY = "consistency"


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def form(memory: Memory) -> str:
    """The memory as a decision about it saw it: its file as quipu renders it, aliases set aside
    (words to find it by, which the sweep's own enrichment writes: gaining them is no change of
    what the memory says)."""
    return hashlib.sha1(render_memory(memory.with_changes(aliases=()))).hexdigest()[:12]


@dataclass(frozen=True)
class TakenBack:
    """A decision made without a model that a person took back, and what it was about."""

    kind: str  # duplicate | dead-path | consistency
    memory: str
    form: str  # ``form`` of the memory when the decision was made
    commit: str  # the decision's commit
    other: str | None = None  # the original a duplicate repeats
    paths: frozenset[str] = frozenset()  # a dead-path finding's paths (none: any)
    fingerprint: str = ""  # a consistency tension's

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "memory": self.memory, "other": self.other, "decision": self.commit}


@dataclass
class Ledger:
    decided: dict[tuple[str, str], str] = field(default_factory=dict)  # pair -> how it was decided
    cached: set[tuple[str, str, str, str]] = field(default_factory=set)  # (a, fp_a, b, fp_b)
    dead_path_flags: dict[str, set[frozenset[str]]] = field(default_factory=dict)
    taken_back: dict[str, list[TakenBack]] = field(default_factory=dict)  # memory -> its taken-back decisions
    history: list[LogEntry] = field(default_factory=list)  # the branch's commits, newest first
    cache_path: Path | None = None

    def is_decided(self, a: str, b: str, fingerprints: dict[str, str] | None = None) -> bool:
        key = pair_key(a, b)
        if key in self.decided:
            return True
        if fingerprints is None:
            return False
        return (key[0], fingerprints.get(key[0], ""), key[1], fingerprints.get(key[1], "")) in self.cached

    def note(self, a: str, b: str, how: str) -> None:
        self.decided.setdefault(pair_key(a, b), how)

    def remember(self, a: str, fp_a: str, b: str, fp_b: str, verdict: str, sweep: str) -> None:
        """Cache a verdict that changed nothing in the store."""
        (x, fx), (y, fy) = sorted(((a, fp_a), (b, fp_b)))
        self.cached.add((x, fx, y, fy))
        if self.cache_path is None:
            return
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        line = {"pair": [x, y], "fingerprints": [fx, fy], "verdict": verdict, "sweep": sweep,
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with self.cache_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    def flagged_paths(self, memory_id: str) -> Iterable[frozenset[str]]:
        return self.dead_path_flags.get(memory_id, set())

    def took_back(self, kind: str, memory: Memory, *, other: str | None = None,
                  paths: Iterable[str] = (), fingerprint: str = "") -> TakenBack | None:
        """The decision a person took back that this one would repeat (see the module contract)."""
        mine = self.taken_back.get(memory.id)
        if not mine:
            return None
        now, wanted = form(memory), frozenset(paths)
        for decision in mine:
            if decision.kind != kind or decision.form != now:
                continue
            if (kind == "duplicate" and decision.other == other
                    or kind == "dead-path" and (not decision.paths or wanted <= decision.paths)
                    or kind == CONSISTENCY and decision.fingerprint == fingerprint):
                return decision
        return None


def _events(store: Store) -> Iterable[tuple[str, dict[str, object]]]:
    found = index.rows(
        store,
        "SELECT memory, data FROM events WHERE data LIKE '%\"supersede\"%' OR data LIKE '%\"review_id\"%'",
    )
    for row in found:
        try:
            data = json.loads(row["data"])
        except ValueError:
            continue
        if isinstance(data, dict):
            yield row["memory"], data


# The commits that add a decision: a supersession's event, a review item's, a finding's label
# (only those that name a review item: a person's own labels are not the curator's).
DECISION_ACTIONS = ("supersede", "review")


def _is_decision(entry: LogEntry) -> bool:
    return entry.action in DECISION_ACTIONS or (entry.action == "label" and "Quipu-Review" in entry.trailers)


def _taken_back_events(store: Store, history: Iterable[LogEntry]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(commit, memory, event) of each decision's event file that a commit added and the store no
    longer holds: a person reverted it (``quipu undo``, a plain ``git revert``, a removal by hand;
    nothing else removes an event). Read from the trees and the event files themselves, never
    from trailers alone: they only say which commits to read, and in which memory's folder."""
    repo, head = store.repo, store.head_tree()
    for entry in history:
        memory = entry.memory
        if not _is_decision(entry) or not ID_RE.fullmatch(memory):
            continue
        for path, blob in _added_events(repo, entry.commit, event_dir(memory)):
            if effects.entry_at(head, path) is not None:
                continue  # in force, or put back
            try:
                event = json.loads(repo[blob].data)  # type: ignore[attr-defined]
            except (ValueError, RecursionError, UnicodeDecodeError):
                continue
            if isinstance(event, dict):
                yield entry.commit, memory, event


def _added_events(repo: pygit2.Repository, sha: str, folder: str) -> list[tuple[str, str]]:
    """(path, blob id) of the files the one-parent commit ``sha`` added to ``folder``: the folder
    in its tree and in its parent's, read by lookups of that folder alone, not a diff of the
    whole trees (each costs about a millisecond on a store of 10,000 memories)."""
    commit = repo[sha]
    if not isinstance(commit, pygit2.Commit) or len(commit.parent_ids) != 1:
        return []
    parent: pygit2.Commit = repo[commit.parent_ids[0]]
    after = effects.entry_at(commit.tree, folder)
    before = effects.entry_at(parent.tree, folder)
    if after is None or after == before:
        return []
    old = _blobs(repo, before)
    return [(f"{folder}/{name}", blob) for name, blob in _blobs(repo, after).items() if name not in old]


def _blobs(repo: pygit2.Repository, folder: effects.Entry | None) -> dict[str, str]:
    """{name: blob id} of the files of a folder (its tree's entry), none for no folder."""
    tree = repo[folder[0]] if folder is not None else None
    if not isinstance(tree, pygit2.Tree):
        return {}
    return {item.name: str(item.id) for item in tree if item.type_str == "blob" and item.name}


def _decision_taken_back(repo: pygit2.Repository, commit: str, memory: str,
                         event: dict[str, Any]) -> TakenBack | None:
    """The finding or consistency item ``event`` was, with the memory's form in its commit; None
    for any other event, or when that form cannot be read."""
    kind = event.get("kind")
    if event.get("action") == "label":
        if kind not in FINDING_KINDS or event.get("label") != kind or not isinstance(event.get("review_id"), str):
            return None
    elif kind != CONSISTENCY or not isinstance(event.get("fingerprint"), str):
        return None
    path = memory_path(memory)
    then = effects.entry_at(repo[commit].tree, path)
    if then is None:
        return None
    try:
        memory_then = parse_memory(repo[then[0]].data, path)  # type: ignore[attr-defined]
    except FatalError:
        return None
    other, paths = event.get("other"), event.get("paths")
    return TakenBack(str(kind), memory, form(memory_then), commit,
                     other=other if isinstance(other, str) else None,
                     paths=frozenset(str(p) for p in paths) if isinstance(paths, list) else frozenset(),
                     fingerprint=str(event.get("fingerprint") or ""))


def load_ledger(store: Store) -> Ledger:
    ledger = Ledger(cache_path=store.cache_dir / VERDICT_CACHE, history=store.log())
    for memory, event in _events(store):
        other = event.get("by") if event.get("action") == "supersede" else event.get("other")
        if isinstance(other, str) and other:
            ledger.note(memory, other, str(event.get("action")))
        paths = event.get("paths")
        if event.get("label") == "dead-path" and isinstance(paths, list):
            ledger.dead_path_flags.setdefault(memory, set()).add(frozenset(str(p) for p in paths))
    for commit, memory, event in _taken_back_events(store, ledger.history):
        if event.get("action") == "label" or event.get("kind") == CONSISTENCY:
            found = _decision_taken_back(store.repo, commit, memory, event)
            if found is not None:
                ledger.taken_back.setdefault(memory, []).append(found)
            continue
        other = event.get("by") if event.get("action") == "supersede" else event.get("other")
        if isinstance(other, str) and other:
            ledger.note(memory, other, "undone")
    path = ledger.cache_path
    if path is not None and path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                item = json.loads(line)
                (x, y), (fx, fy) = item["pair"], item["fingerprints"]
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a killed sweep
            ledger.cached.add((str(x), str(fx), str(y), str(fy)))
    return ledger
