"""A memory's standing, read from the event files the tip holds: whether it is retracted, the
memories that supersede it in turn, and whether a supersession may be written.

Contract:
- ``retracted(store, id)``: its latest ``retracted`` label event sets it (the index folds them the
  same way).
- ``ahead(store, id)``: the chain of memories that supersede it, nearest first, each by its latest
  ``supersede`` event; a loop already in the store ends the chain.
- ``check_supersession(store, old, new)`` raises before anything is written when OLD may not be
  superseded by NEW: the same memory, NEW not in the store, NEW retracted, or NEW itself superseded
  (directly or through others) by OLD. In each of the last two neither would be current. Every
  writer of a supersession calls it: ``quipu supersede``, a review accepted, the sweep's verdicts,
  a sync's edit on two machines.
- Only reads.
"""
from __future__ import annotations

from quipu.errors import ConflictError, InvalidMemory

TYPE_CHECKING = False  # `typing` is not loaded by the one-memory commands that import this module
if TYPE_CHECKING:
    from quipu.store.store import Store

RETRACTED = "retracted"
MAX_CHAIN = 256


def retracted(store: Store, memory_id: str) -> bool:
    """Whether the memory's latest ``retracted`` label event sets it."""
    found = False
    for _name, event in store.events(memory_id):
        if event.get("action") == "label" and event.get("label") == RETRACTED:
            found = bool(event.get("set", True))
    return found


def superseded_by(store: Store, memory_id: str) -> str | None:
    """The memory its latest ``supersede`` event names, if any."""
    by = None
    for _name, event in store.events(memory_id):
        if event.get("action") == "supersede" and isinstance(event.get("by"), str):
            by = event["by"]
    return by


def ahead(store: Store, memory_id: str) -> list[str]:
    """The memories that supersede ``memory_id`` in turn, nearest first."""
    chain: list[str] = []
    at = memory_id
    while len(chain) < MAX_CHAIN:
        by = superseded_by(store, at)
        if by is None or by == memory_id or by in chain:
            if by == memory_id:
                chain.append(by)
            break
        chain.append(by)
        at = by
    return chain


def check_supersession(store: Store, old: str, new: str) -> None:
    """Raise when ``old`` may not be superseded by ``new`` (see the module contract)."""
    if old == new:
        raise InvalidMemory("a memory cannot supersede itself")
    if not store.exists(new):
        raise store.missing(new)
    if retracted(store, new):
        raise ConflictError(f"{new} is retracted: superseding {old} by it would leave neither current; "
                            f"nothing was written\n- bring {new} back first (`quipu undo --memory {new}`), "
                            "or supersede by a memory in force")
    chain = ahead(store, new)
    if old in chain:
        said = " by ".join([new, *chain[:chain.index(old) + 1]])
        raise ConflictError(f"{new} is itself superseded by {old} ({said}): superseding {old} by {new} would "
                            f"leave neither current; nothing was written\n"
                            f"- to make {new} current again, undo that decision: `quipu undo --memory {new}`")
