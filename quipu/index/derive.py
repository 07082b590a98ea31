"""State derived from the event log: each memory's status, labels and links, folded in order.

A memory labelled ``retracted`` (``quipu retract``) has the status ``retracted``, whatever else
holds: recall and search leave it out, and it stays in the store and its history. Otherwise a
supersession in force (an event file of the memory, which one undo reverts) makes it
``superseded``. Another memory's ``supersedes`` field decides nothing: a file a teammate pushes, or
one written by an older quipu, may say it replaces any memory, and only a decision is one
(``quipu doctor`` lists such claims, and ``quipu supersede`` records one).
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

_FEW = 500  # ids whose events are looked up by id; more are read in one pass
RETRACTED = "retracted"  # the label (and status) of a memory taken out of recall and search


def fold_events(events: Iterable[str]) -> tuple[str | None, dict[str, str]]:
    """Fold a memory's events (oldest first) into (superseded_by, {label: detail})."""
    superseded_by: str | None = None
    labels: dict[str, str] = {}
    for text in events:
        try:
            event = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not isinstance(event, dict):
            continue
        action = event.get("action")
        if action == "supersede" and _is_event_word(event.get("by")):
            superseded_by = event["by"]
        elif action == "label" and _is_event_word(event.get("label")):
            if event.get("set", True):
                detail = event.get("detail")
                labels[event["label"]] = clean_text(detail if isinstance(detail, str) else "")
            else:
                labels.pop(event["label"], None)
    return superseded_by, labels


def _is_event_word(value: object) -> bool:
    """An id or a label as an event file may name it: short, no spaces, valid Unicode."""
    return isinstance(value, str) and 0 < len(value) <= 64 and value.isprintable() and " " not in value \
        and value == clean_text(value)


def clean_text(text: str) -> str:
    """``text`` without lone surrogates (SQLite stores UTF-8 only), at most 2,000 characters."""
    return text[:2000].encode("utf-8", "replace").decode("utf-8")


# The memories whose own field claims to replace others, from their partial index alone.
SUPERSEDING = "SELECT rowid, id, supersedes FROM memories INDEXED BY memories_supersedes WHERE supersedes != ''"


def unrecorded_claims(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(old, new) for each memory a ``supersedes`` field names that no decision supersedes by it."""
    out = []
    for _rowid, new_id, supersedes in sorted(db.execute(SUPERSEDING)):
        for old in supersedes.split():
            row = db.execute("SELECT superseded_by FROM memories WHERE id = ?", (old,)).fetchone()
            if row is not None and row[0] != new_id:
                out.append((old, new_id))
    return out


def derive_state(db: sqlite3.Connection, ids: set[str] | None) -> None:
    """Recompute status, superseded_by and labels for ``ids`` (all when None)."""
    if ids is None:
        targets = [r[0] for r in db.execute("SELECT id FROM memories")]
    else:
        targets = sorted(ids)
    existing = {r[0] for r in db.execute("SELECT id FROM memories")} if ids is None else None
    events: dict[str, list[str]] = {}
    if ids is None or len(targets) > _FEW:  # many: one pass over the events (a statement has few variables)
        for mid, data in db.execute("SELECT memory, data FROM events ORDER BY memory, name"):
            if ids is None or mid in ids:
                events.setdefault(mid, []).append(data)
    else:
        query = f"SELECT memory, data FROM events WHERE memory IN ({', '.join('?' * len(targets))}) ORDER BY memory, name"
        for mid, data in db.execute(query, targets):
            events.setdefault(mid, []).append(data)
    updates = []
    for mid in targets:
        if existing is not None and mid not in existing:
            continue
        by, labels = fold_events(events.get(mid, []))
        updates.append((by, " ".join(sorted(labels)), json.dumps(labels, sort_keys=True), RETRACTED in labels, by,
                        mid))
    db.executemany(
        "UPDATE memories SET superseded_by = ?, labels = ?, label_details = ?,"
        " status = CASE WHEN ? THEN 'retracted' WHEN ? IS NOT NULL THEN 'superseded' ELSE fm_status END WHERE id = ?",
        updates,
    )

