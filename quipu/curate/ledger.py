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
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from quipu.index import index
from quipu.store import effects
from quipu.store.store import Store

VERDICT_CACHE = "curate-verdicts.jsonl"


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


@dataclass
class Ledger:
    decided: dict[tuple[str, str], str] = field(default_factory=dict)  # pair -> how it was decided
    cached: set[tuple[str, str, str, str]] = field(default_factory=set)  # (a, fp_a, b, fp_b)
    dead_path_flags: dict[str, set[frozenset[str]]] = field(default_factory=dict)
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


# The commits that add a decision about a pair: a supersession's event, a review item's.
DECISION_ACTIONS = ("supersede", "review")


def _undone_pairs(store: Store) -> Iterable[tuple[str, str]]:
    """The pairs of the decisions a person took back: a decision's event file that a commit added
    and the store no longer holds was reverted (``quipu undo``, a plain ``git revert``; nothing
    else removes an event). Read from the trees and the event files themselves, never from
    trailers alone (they only say which commits to read)."""
    decisions = [e for e in store.log() if e.action in DECISION_ACTIONS]
    for path, event in effects.taken_back(store.repo, store.head_tree(), decisions, _is_event_file):
        other = event.get("by") if event.get("action") == "supersede" else event.get("other")
        if isinstance(other, str) and other:
            yield path.split("/")[2], other


def _is_event_file(path: str) -> bool:
    parts = path.split("/")
    return len(parts) == 4 and parts[0] == "events"


def load_ledger(store: Store) -> Ledger:
    ledger = Ledger(cache_path=store.cache_dir / VERDICT_CACHE)
    for memory, event in _events(store):
        other = event.get("by") if event.get("action") == "supersede" else event.get("other")
        if isinstance(other, str) and other:
            ledger.note(memory, other, str(event.get("action")))
        paths = event.get("paths")
        if event.get("label") == "dead-path" and isinstance(paths, list):
            ledger.dead_path_flags.setdefault(memory, set()).add(frozenset(str(p) for p in paths))
    for first, second in _undone_pairs(store):
        ledger.note(first, second, "undone")
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
