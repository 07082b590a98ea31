"""From a past turn to a memory, through the same gates as capture.

Contract:
- ``promote(store, ref)`` reads turn ``SESSION:TURN`` from the archive and offers it as a
  capture candidate (``quipu.capture.gates.check``: no secret, no injection, a claim and not a command,
  no question, no transient error, no one-off story...). A refusal raises ``FatalError`` naming
  the gate; a question's names the turn to promote instead.
- An admitted turn is one commit (action ``promote``), origin ``session``, tagged with the
  session id (``Memory.session`` and the ``Quipu-Session`` trailer); ``quipu retract`` takes it out
  of recall (``quipu undo`` never deletes a memory).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from quipu.capture import gates
from quipu.errors import FatalError, NotFound
from quipu.capture.gates import Candidate
from quipu.history import archive
from quipu.history.archive import Layout, Turn
from quipu.history.forget import resolve_session
from quipu.store.memory import Memory, new_id, now_utc
from quipu.store.store import Store

DEFAULT_CLASS = "project-note"
_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s")


class Ref(NamedTuple):
    session: str
    turn: int | None

    @classmethod
    def create(cls, text: str) -> Ref:
        head, sep, tail = text.rpartition(":")
        if sep and tail.isdigit() and head:
            return cls(head, int(tail))
        return cls(text, None)


def find_turn(layout: Layout, ref: str) -> Turn:
    parsed = Ref.create(ref)
    if parsed.turn is None:
        raise FatalError(f"{ref!r} names no turn\n- write SESSION:TURN, as `quipu history search` prints it")
    sid = resolve_session(layout, parsed.session)
    for turn in archive.session_turns(layout, sid).values():
        if turn.turn == parsed.turn:
            return turn
    raise NotFound(f"session {sid} has no turn {parsed.turn}\n- see its turns with `quipu history show {sid}`")


def default_title(text: str, limit: int = 80) -> str:
    first = _FIRST_SENTENCE.split(" ".join(text.split()), 1)[0].rstrip(".")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def promote(store: Store, ref: str, *, layout: Layout | None = None, title: str | None = None,
            cls: str = DEFAULT_CLASS, text: str | None = None) -> Memory:
    layout = layout or Layout.default()
    turn = find_turn(layout, ref)
    statement = (text or turn.text).strip()
    candidate = Candidate(cls=cls, title=" ".join((title or default_title(statement)).split()), statement=statement,
                          outcome="held", kind="durable", said_by=turn.role)
    refusal = gates.check(candidate)
    if refusal is not None and refusal.gate == "question":
        raise FatalError(f"turn {turn.session}:{turn.turn} is {refusal.detail}; a memory states what holds\n"
                         f"- promote the turn that answers it (`quipu history show {turn.session}:{turn.turn} "
                         "--context 1` shows it), or state the answer yourself with --text \"...\"")
    if refusal is not None:
        raise FatalError(f"turn {turn.session}:{turn.turn} was refused by the {refusal.gate} gate: {refusal.detail}\n"
                         "- promote a shorter, declarative excerpt with --text, or choose another turn")
    memory = Memory.create({
        "id": new_id(), "title": candidate.title, "class": cls, "origin": "session", "created": now_utc(),
        "session": turn.session,
    }, statement + "\n", source="promoted turn")
    store.add(memory, action="promote", session=turn.session)
    return memory
