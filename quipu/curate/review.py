"""The review queue: tensions and findings the curator may not resolve alone.

Contract:
- A review item is an event carrying a ``review_id`` (written by ``quipu.curate.apply``, or
  by ``quipu.mcp.tools``): a tension between two memories (``kind`` "tension"), a supersession
  the assistant proposed through ``quipu mcp`` ("proposal"), or a labelled finding
  ("duplicate", "dead-path"). It is open until an event with the same ``review_id`` and a
  ``resolution`` exists. Everything is read from the index's events table, so the queue is derived from git.
- ``accept`` and ``reject`` are one commit each (``Quipu-Review`` trailer), so ``quipu undo``
  reverts a resolution like any other decision:
  - accept a tension, a proposal or a duplicate: the loser is superseded by the winner (nothing is
    deleted);
  - accept a dead-path finding: the label stays and the item is closed;
  - reject a tension or a proposal: the item is closed and both memories stay as they are;
  - reject a finding: its label is removed and the item is closed.
- A person's resolution carries no sweep id: ``quipu undo --sweep`` leaves it alone.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from quipu.index import index
from quipu.errors import ConflictError, NotFound
from quipu.store.standing import check_supersession
from quipu.store.store import Store


@dataclass(frozen=True)
class ReviewItem:
    review_id: str
    kind: str  # tension | proposal | duplicate | dead-path
    memory: str  # the loser, or the flagged memory
    other: str | None  # the winner, or the original a duplicate repeats
    event: dict[str, Any]
    resolution: str | None = None  # accept | reject, None while open
    resolved_at: str | None = None

    @property
    def is_open(self) -> bool:
        return self.resolution is None

    @property
    def verdict(self) -> str:
        return str(self.event.get("verdict") or self.kind)

    def to_json(self) -> dict[str, Any]:
        keys = ("verdict", "confidence", "reason", "detail", "guards", "covered_claims", "loser_claims",
                "full_scope", "sweep", "at", "paths")
        return {"review": self.review_id, "kind": self.kind, "memory": self.memory, "other": self.other,
                "status": "open" if self.is_open else self.resolution, "resolved_at": self.resolved_at,
                **{k: self.event[k] for k in keys if k in self.event}}


def items(store: Store, *, include_closed: bool = False) -> list[ReviewItem]:
    """Review items, oldest first; only open ones unless ``include_closed``."""
    found = index.rows(store, "SELECT memory, name, data FROM events WHERE data LIKE '%\"review_id\"%'"
                              " ORDER BY name")
    opened: dict[str, ReviewItem] = {}
    resolved: dict[str, tuple[str, str]] = {}
    for row in found:
        try:
            event = json.loads(row["data"])
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("review_id"), str):
            continue
        rid = event["review_id"]
        if event.get("resolution") in ("accept", "reject"):
            resolved[rid] = (event["resolution"], str(event.get("at", "")))
        elif rid not in opened:
            other = event.get("other")
            opened[rid] = ReviewItem(rid, str(event.get("kind") or "tension"), row["memory"],
                                     other if isinstance(other, str) else None, event)
    out = []
    for rid, item in opened.items():
        if rid in resolved:
            item = ReviewItem(item.review_id, item.kind, item.memory, item.other, item.event, *resolved[rid])
        if include_closed or item.is_open:
            out.append(item)
    return out  # event names start with a UTC stamp: the rows came oldest first


def find(store: Store, review_id: str) -> ReviewItem:
    """The item with this id, or the one whose id starts with it."""
    every = items(store, include_closed=True)
    exact = [i for i in every if i.review_id == review_id]
    matches = exact or [i for i in every if i.review_id.startswith(review_id) and review_id]
    if len(matches) != 1:
        what = "no review item" if not matches else f"{len(matches)} review items match"
        raise NotFound(f"{what} {review_id!r}\n- run `quipu review` to see the open items and their ids")
    return matches[0]


def _open(store: Store, review_id: str) -> ReviewItem:
    item = find(store, review_id)
    if not item.is_open:
        raise ConflictError(
            f"review {item.review_id} was already resolved ({item.resolution}ed {item.resolved_at})\n"
            f"- run `quipu log --memory {item.memory}` to see it, and `quipu undo COMMIT` to reopen it"
        )
    return item


def _trailers(item: ReviewItem, action: str) -> dict[str, str | None]:
    return {"Quipu-Action": action, "Quipu-Review": item.review_id, "Quipu-Other": item.other,
            "Quipu-Verdict": item.verdict}


def accept(store: Store, review_id: str, *, reason: str = "") -> str:
    """Resolve an item by accepting it (see the module contract); returns the commit."""
    item = _open(store, review_id)
    closing = {"review_id": item.review_id, "resolution": "accept", "reason": reason}
    if item.kind == "dead-path" or not item.other:
        return store.add_event(item.memory, {"action": "review-resolved", **closing},
                               summary=f"quipu: review {item.review_id} accepted: {item.memory} {item.kind}",
                               trailers=_trailers(item, "review-accept"))
    if not store.exists(item.other):
        raise NotFound(f"memory {item.other} of review {item.review_id} is not in the store\n"
                       f"- reject the item with `quipu review reject {item.review_id}`")
    try:
        check_supersession(store, item.memory, item.other)
    except ConflictError as exc:
        raise ConflictError(f"review {item.review_id} not accepted: {exc}\n"
                            f"- or reject the item with `quipu review reject {item.review_id}`") from None
    return store.add_event(
        item.memory, {"action": "supersede", "by": item.other, "sweep": None, **closing},
        summary=f"quipu: supersede {item.memory} by {item.other} (review {item.review_id} accepted)",
        trailers={**_trailers(item, "supersede"), "Quipu-Supersedes": item.memory,
                  "Quipu-Superseded-By": item.other},
        also_require=(item.other,),
    )


def reject(store: Store, review_id: str, *, reason: str = "") -> str:
    """Resolve an item by rejecting it (see the module contract); returns the commit."""
    item = _open(store, review_id)
    closing = {"review_id": item.review_id, "resolution": "reject", "reason": reason}
    if item.kind in ("duplicate", "dead-path"):
        event = {"action": "label", "label": item.kind, "set": False, "detail": "", **closing}
    else:
        event = {"action": "review-resolved", **closing}
    return store.add_event(item.memory, event,
                           summary=f"quipu: review {item.review_id} rejected: {item.memory} {item.kind}",
                           trailers=_trailers(item, "review-reject"))
