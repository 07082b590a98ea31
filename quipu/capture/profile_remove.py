"""Taking lines off the profile card: by hand, and with the memory a line came from.

Contract:
- ``remove_line(store, what)`` takes one line off the card (``quipu profile remove``): the line
  whose entry ("Prefix: text") or text is ``what`` (case and spacing aside; every copy of it), or
  else the one line that contains ``what``. One commit (``Quipu-Action: profile-remove``,
  ``Quipu-Memory: profile``) that changes only ``profile.md``, so ``quipu undo`` of it puts the
  line back; nothing else is deleted, and the memory the line came from stays as it is. No line,
  or several, matching: ``NotFound`` or ``FatalError`` naming them, and nothing written.
- ``retract(store, id)`` and ``supersede(store, old, new)`` take the decision and, in the same
  commit, the lines that came from the memory (``came_from``) off the card: one ``quipu undo``
  (of the commit, or ``--memory ID``) puts both back. The commit is the one ``Store.retract`` or
  ``Store.supersede`` makes (the same event file and trailers) with ``profile.md`` changed too;
  with no such line on the card it is exactly theirs. They return the commit and the lines taken.
- A line came from a memory when it names it (``memory=ID``), or, for a line that names none (an
  older quipu's capture wrote it so), when its text is the memory's statement or title and the
  memory was captured from a session (a person's own line, or a demoted one, never matches).
- Reads and writes of the card run under the card's lock. The module imports the card lazily:
  ``quipu retract`` and ``quipu supersede`` of a store without a card load nothing more.
"""
from __future__ import annotations

from quipu.store.schema import PROFILE_PATH
from quipu.store.standing import check_supersession

TYPE_CHECKING = False  # `typing` is not loaded by the one-memory commands that import this module
if TYPE_CHECKING:
    from typing import Any

    from quipu.capture.profile import Card, Line
    from quipu.store.memory import Memory
    from quipu.store.store import Store

def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def came_from(line: Line, memory: Memory) -> bool:
    """Whether ``line`` came from ``memory`` (see the module contract)."""
    if line.memories:
        return memory.id in line.memories
    return memory.session is not None and _norm(line.text) in (_norm(memory.body), _norm(memory.title))


def _without(card: Card, gone: list[Line]) -> Card:
    from dataclasses import replace  # the card module loads it anyway

    return replace(card, lines=tuple(ln for ln in card.lines if not any(ln is g for g in gone)))


def remove_line(store: Store, what: str, *, sweep: str | None = None) -> tuple[tuple[Line, ...], str]:
    """Take the line ``what`` names off the card (see the module contract): (the lines, the commit)."""
    from quipu.capture import profile
    from quipu.errors import FatalError, NotFound

    key = _norm(what)
    if not key:
        raise FatalError("no line given\n- give the line as `quipu profile show` prints it")
    with profile.card_lock(store):
        card = profile.read_card(store)
        hits = [ln for ln in card.lines if key in (ln.key(), _norm(ln.text))]
        if not hits:
            hits = [ln for ln in card.lines if key in ln.key()]
            if len(hits) > 1:
                raise FatalError(f"{len(hits)} lines of the profile card contain {what!r}; nothing was removed\n"
                                 + "\n".join(f"- {ln.entry}" for ln in hits)
                                 + "\n- give the whole line, as `quipu profile show` prints it")
        if not hits:
            raise NotFound(f"no line of the profile card matches {what!r}\n"
                           "- run `quipu profile show` to see the lines")
        sha = store.commit({PROFILE_PATH: _without(card, hits).render_file()},
                           f"quipu: profile-remove {hits[0].entry[:60]}",
                           {"Quipu-Action": "profile-remove", "Quipu-Memory": profile.PROFILE_ID, "Quipu-Sweep": sweep})
    return tuple(hits), sha


def _decide(store: Store, memory_id: str, event: dict[str, Any], summary: str, trailers: dict[str, str | None],
            also_require: tuple[str, ...], card: Card, gone: list[Line]) -> str:
    """``Store.add_event``'s commit with the card's change in it too."""
    import datetime as _dt
    import json
    import os

    from quipu.store import secrets_scan
    from quipu.store.memory import memory_path
    from quipu.store.trailers import event_dir, trailer_stamp

    at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    event = secrets_scan.redact_values({"memory": memory_id, "at": at, **event})
    name = f"{event_dir(memory_id)}/{trailer_stamp()}-{os.urandom(3).hex()}.json"
    data = (json.dumps(event, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    lines = "its profile line" if len(gone) == 1 else f"its {len(gone)} profile lines"
    return store.commit({name: data, PROFILE_PATH: _without(card, gone).render_file()},
                        secrets_scan.redact(f"{summary} (and {lines})"), {"Quipu-Memory": memory_id, **trailers},
                        require=[memory_path(m) for m in (memory_id, *also_require)])


def _from_card(store: Store, memory_id: str) -> tuple[Card, list[Line]] | None:
    """The card and the lines on it that came from ``memory_id`` (None: no card, or no such line)."""
    if not store.read_bytes(PROFILE_PATH):
        return None
    from quipu.capture import profile

    if not store.exists(memory_id):
        raise store.missing(memory_id)
    memory = store.get(memory_id)
    card = profile.read_card(store)
    gone = [ln for ln in card.lines if came_from(ln, memory)]
    return (card, gone) if gone else None


def retract(store: Store, memory_id: str, *, reason: str = "") -> tuple[str, tuple[Line, ...]]:
    """``Store.retract``, and the lines that came from the memory off the card in the same commit."""
    if _from_card(store, memory_id) is None:
        return store.retract(memory_id, reason=reason), ()
    from quipu.capture import profile

    with profile.card_lock(store):
        found = _from_card(store, memory_id)  # again, under the lock
        if found is None:
            return store.retract(memory_id, reason=reason), ()
        card, gone = found
        sha = _decide(store, memory_id, {"action": "label", "label": "retracted", "set": True, "detail": reason},
                      f"quipu: retract {memory_id}", {"Quipu-Action": "retract", "Quipu-Label": "retracted"},
                      (), card, gone)
    return sha, tuple(gone)


def supersede(store: Store, old: str, new: str, *, reason: str = "") -> tuple[str, tuple[Line, ...]]:
    """``Store.supersede``, and the lines that came from OLD off the card in the same commit."""
    if old == new or _from_card(store, old) is None:
        return store.supersede(old, new, reason=reason), ()
    check_supersession(store, old, new)
    in_force = store.supersession(old)
    if in_force is not None and in_force[0] == new and in_force[1]:
        return in_force[1], ()  # already decided: nothing is written
    from quipu.capture import profile

    with profile.card_lock(store):
        found = _from_card(store, old)
        if found is None:
            return store.supersede(old, new, reason=reason), ()
        card, gone = found
        sha = _decide(store, old, {"action": "supersede", "by": new, "reason": reason, "sweep": None},
                      f"quipu: supersede {old} by {new}",
                      {"Quipu-Action": "supersede", "Quipu-Supersedes": old, "Quipu-Superseded-By": new},
                      (new,), card, gone)
    return sha, tuple(gone)
