"""The profile card rebuilt by a model from the store: the proposal, and applying it as commits.

Each rebuilt line cites the active memories it rests on and names them (``memory=ID``), so it
leaves the session's card when one of them is retracted or superseded; it passes the card's gates
(``quipu.capture.gates.check_card``) like any line.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from quipu.capture import gates
from quipu.capture.profile import (
    PREFIXES,
    PROFILE_ID,
    PROFILE_PATH,
    Card,
    Change,
    Limits,
    Line,
    admission,
    card_lock,
    demote_line,
    read_card,
    today_iso,
)
from quipu.errors import FatalError
from quipu.index import index
from quipu.model import Model
from quipu.prompt import fence
from quipu.store.store import Store

REBUILD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["lines"],
    "properties": {
        "lines": {
            "type": "array",
            "maxItems": 30,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["prefix", "text", "stable_for_months", "source_ids"],
                "properties": {
                    "prefix": {"enum": list(PREFIXES)},
                    "text": {"type": "string"},
                    "stable_for_months": {"type": "integer"},
                    "source_ids": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}


REBUILD_SOURCE_CHARS = 40_000


@dataclass
class Proposal:
    old: Card
    new: Card
    refused: list[tuple[str, str]] = field(default_factory=list)  # (entry, reason)
    to_demote: list[Line] = field(default_factory=list)           # old user lines the new card drops

    def diff(self) -> str:
        old = self.old.render_card().splitlines()
        new = self.new.render_card().splitlines()
        return "\n".join(difflib.unified_diff(old, new, "profile (now)", "profile (rebuilt)", lineterm=""))

    def to_json(self) -> dict[str, Any]:
        return {"old": self.old.to_json(), "new": self.new.to_json(), "diff": self.diff(),
                "refused": [{"line": e, "reason": r} for e, r in self.refused],
                "demote": [ln.entry for ln in self.to_demote]}


def rebuild_sources(store: Store) -> tuple[str, dict[str, str]]:
    rows = index.rows(
        store,
        "SELECT id, title, description, class, origin FROM memories WHERE status = 'active' "
        "AND class IN ('preference', 'fact', 'rule', 'reference') "
        "ORDER BY origin = 'user' DESC, class = 'preference' DESC, created_ts DESC, id",
    )
    lines: list[str] = []
    origins: dict[str, str] = {}
    used = 0
    for row in rows:
        text = f"[{row['id']}] ({row['class']}, said by {row['origin']}) {row['title']}"
        if row["description"]:
            text += f" — {row['description']}"
        if used + len(text) > REBUILD_SOURCE_CHARS:
            break
        lines.append(text)
        origins[row["id"]] = row["origin"]
        used += len(text) + 1
    return "\n".join(lines), origins


def rebuild_prompt(limits: Limits, memories: str) -> str:
    return (
        "Build a short profile card of durable facts about the user of this memory store, using only the "
        "memories below. Each line starts with one prefix: Identity (who they are), Preference (how they "
        "like work done), Environment (their durable setup), Working style (how they collaborate). "
        f"At most {limits.max_lines} lines of at most {limits.entry_chars} characters each, written as claims "
        "about the user ('The user prefers X'), never as commands. Leave out anything that could change "
        "within six months; give stable_for_months honestly. Cite the ids of the memories each line "
        f"rests on in source_ids.\n\n<memories>\n{memories}\n</memories>"
    )


def propose_rebuild(store: Store, model: Model, *, limits: Limits | None = None) -> Proposal:
    """A fresh card from the store's memories; the model never sees the old card."""
    with card_lock(store):
        old = read_card(store, limits)
    memories, origins = rebuild_sources(store)
    answer = model.complete(fence.visible(rebuild_prompt(old.limits, memories)), REBUILD_SCHEMA,
                            purpose="profile-rebuild")
    refused: list[tuple[str, str]] = []
    admitted: list[Line] = []
    for item in answer["lines"]:
        text = " ".join(str(item["text"]).split())
        entry = f"{item['prefix']}: {text}"
        sources = [s for s in item["source_ids"] if s in origins]
        if not sources:
            refused.append((entry, "cites no memory of the store"))
            continue
        refusal = gates.check_card(text)
        if refusal is not None:
            refused.append((entry, refusal.detail))
            continue
        origin = "user" if any(origins[s] == "user" for s in sources) else "session"
        line = Line(item["prefix"], text, origin, today_iso(), int(item["stable_for_months"]),
                    tuple(dict.fromkeys(sources)))
        why = admission(line, old.limits)
        if why is not None:
            refused.append((entry, why))
        elif line.key() not in {ln.key() for ln in admitted}:
            admitted.append(line)
    # Fit by strength: the strongest lines that fit the caps, in the model's order.
    kept: list[Line] = []
    for line in sorted(admitted, key=lambda ln: ln.strength(), reverse=True):
        trial = Card(tuple(kept) + (line,), old.limits)
        if trial.over_capacity():
            refused.append((line.entry, "no room left on the card (its sources stay searchable)"))
        else:
            kept.append(line)
    kept.sort(key=admitted.index)
    # Keep each surviving line's history (origin, since) when the same entry was already there.
    before = {ln.key(): ln for ln in old.lines}
    kept = [before.get(ln.key(), ln) for ln in kept]
    new = Card(tuple(kept), old.limits, old.unparsed)
    keys = {ln.key() for ln in kept}
    to_demote = [ln for ln in old.lines if ln.origin == "user" and ln.key() not in keys and not line_in_store(store, ln)]
    return Proposal(old, new, refused, to_demote)


def line_in_store(store: Store, line: Line) -> bool:
    """Whether an active memory already says exactly this line (so demoting it would duplicate)."""
    rows = index.rows(store, "SELECT title, body FROM memories WHERE status = 'active' AND title = ?", (line.text,))
    return bool(rows)


def apply_rebuild(store: Store, proposal: Proposal, *, sweep: str | None = None) -> Change:
    change = Change()
    with card_lock(store):
        current = read_card(store, proposal.old.limits)
        if current.render_file() != proposal.old.render_file():
            raise FatalError("the profile changed while the rebuild was proposed\n- run `quipu profile rebuild` again")
        card = current
        for line in proposal.to_demote:
            same = [ln for ln in card.lines if ln.key() == line.key()]
            if same:
                card = demote_line(store, card, same[0],
                               f"dropped by a profile rebuild on {today_iso()} (the user said it; kept searchable)",
                               change, sweep)
        data = proposal.new.render_file()
        if store.read_bytes(PROFILE_PATH) != data:
            sha = store.commit({PROFILE_PATH: data}, f"quipu: profile-rebuild ({proposal.new.header()})",
                               {"Quipu-Action": "profile-rebuild", "Quipu-Memory": PROFILE_ID, "Quipu-Sweep": sweep})
            change.commits.append(sha)
    index.ensure_fresh(store)
    return change
