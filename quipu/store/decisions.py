"""A memory's decisions read from what commits did, and said in words.

Contract:
- ``Decision`` is one commit's effect on the store (``quipu.store.effects``) with what it is in
  words, built from the event files and memory files it changed, never from its message alone:
  "the supersession of X by Y", "the label L on X", "the retraction of X", "the edit of X's text".
  Text read from a commit (ids, labels, summaries) comes from other people through sync: it is
  shown only when it is a plain id or label, else summarised.
- ``about(store, memory_id)``: the commits that changed the memory's file or its event files,
  newest first, each with its state against the tip ("in force", "undone", "changed since").
  Commits that verifiably undo an earlier commit (``effects.verified_revert``) are left out:
  undoing an undo is `quipu undo COMMIT`, not the memory's next step back. A memory that has no
  file (the profile card's ``profile``) is followed by its ``Quipu-Memory`` trailer, and then
  only through commits that changed a file of the store's own (``profile.md``), never one that
  changed only memories and their decisions.
- Only reads.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pygit2

from quipu.store import effects
from quipu.store.memory import ID_RE
from quipu.store.trailers import parse_trailers

if TYPE_CHECKING:
    from quipu.store.store import Store

_SORT = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME


@dataclass(frozen=True)
class Decision:
    commit: str
    effect: effects.Effect
    words: str
    state: str  # "in force", "undone", "changed since" (of everything but the memories it created)
    created: tuple[str, ...]  # memories whose files it added

    @property
    def is_creation(self) -> bool:
        """Only memory files added (undoing it would only delete them)."""
        return bool(self.created) and len(self.created) == len(self.effect)

    def to_json(self) -> dict[str, object]:
        return {"commit": self.commit, "decision": self.words, "state": self.state,
                "created": list(self.created)}


def plain(text: object, fallback: str = "?") -> str:
    """``text`` when it is a plain id or label, else ``fallback``."""
    return text if isinstance(text, str) and ID_RE.match(text) else fallback


def _printable(text: str, limit: int = 80) -> str:
    return "".join(c if c.isprintable() else " " for c in text.strip())[:limit]


def _summary(commit: pygit2.Commit) -> str:
    line = _printable(commit.message.split("\n", 1)[0])
    return f'a commit of several changes ("{line}")' if line else "a commit of several changes"


def _event_words(memory_id: str, data: bytes) -> str | None:
    try:
        event = json.loads(data)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    if not isinstance(event, dict):
        return None
    action = event.get("action")
    if action == "supersede":
        return f"the supersession of {memory_id} by {plain(event.get('by'))}"
    if action == "label":
        label = plain(event.get("label"))
        if event.get("set", True):
            return f"the retraction of {memory_id}" if label == "retracted" else f"the label {label} on {memory_id}"
        return f"the removal of the label {label} from {memory_id}"
    if action == "review":
        return f"the review item {plain(event.get('review_id'))} about {memory_id}"
    if action == "review-resolved":
        return f"the resolution of a review item about {memory_id}"
    return f"a decision ({plain(action, 'of an unknown kind')}) about {memory_id}"


def words(repo: pygit2.Repository, commit: pygit2.Commit, effect: effects.Effect) -> str:
    """What ``commit`` did, in words, from its effect (see the module contract)."""
    said: list[str] = []
    created: list[str] = []
    for path, (old, new) in sorted(effect.items()):
        parts = path.split("/")
        mid = effects.memory_id_of(path)
        if mid is not None:
            if old is None:
                created.append(mid)  # named only when that is all the commit did
            else:
                said.append(f"the removal of {mid}" if new is None else f"the edit of {mid}'s text")
        elif len(parts) == 4 and parts[0] == "events" and ID_RE.match(parts[2]):
            text = (_event_words(parts[2], repo[new[0]].data) if old is None and new  # type: ignore[attr-defined]
                    else f"the removal of a decision about {parts[2]}" if new is None else None)
            said.append(text or f"a change to a decision about {parts[2]}")
        else:
            said.append(f"the change to {_printable(path)}")
    said = list(dict.fromkeys(said)) or [f"the creation of {m}" for m in created]
    if not said or len(said) > 3:
        return _summary(commit)
    return "; ".join(said)


def decision(repo: pygit2.Repository, commit: pygit2.Commit, tip: pygit2.Tree) -> Decision | None:
    effect = effects.changes(repo, commit)
    if effect is None or not effect:
        return None
    created = effects.created_memories(effect)
    kept = {f"memories/{m[:2]}/{m}.md" for m in created}
    rest = {p: v for p, v in effect.items() if p not in kept} or effect
    said = words(repo, commit, effect)
    reverted = effects.verified_revert(repo, commit)
    if reverted is not None:
        target: pygit2.Commit = repo[reverted]  # type: ignore[assignment]
        said = f"the undo of {words(repo, target, effects.changes(repo, target) or {})}"
    return Decision(str(commit.id), effect, said, effects.state(tip, rest), tuple(created))


def _touches(commit: pygit2.Commit, paths: tuple[str, ...]) -> bool:
    """Cheaply: does the commit change any of ``paths`` (files or folders) against its parent?"""
    parent = commit.parents[0]
    for path in paths:
        mine = effects.entry_at(commit.tree, path)
        if mine != effects.entry_at(parent.tree, path):
            return True
    return False


def about(store: Store, memory_id: str, *, follow_trailer: bool = False) -> list[Decision]:
    """The memory's decisions, newest first (see the module contract), up to its newest creation."""
    repo = store.repo
    tip = repo.head.peel(pygit2.Commit)
    paths = (f"memories/{memory_id[:2]}/{memory_id}.md", f"events/{memory_id[:2]}/{memory_id}")
    out: list[Decision] = []
    for commit in repo.walk(tip.id, _SORT):
        if len(commit.parents) != 1:
            continue
        if follow_trailer:
            if parse_trailers(commit.message).get("Quipu-Memory") != memory_id:
                continue
        elif not _touches(commit, paths):
            continue
        if effects.verified_revert(repo, commit) is not None:
            continue
        found = decision(repo, commit, tip.tree)
        if found is None or (follow_trailer and all(p.startswith(("memories/", "events/")) for p in found.effect)):
            continue  # a trailer names a file-less memory; it never makes a commit about other memories its
        out.append(found)
        if memory_id in found.created:
            break
    return out
