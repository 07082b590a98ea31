"""Facts that update themselves: one note per subject, the current value on top, history below.

Contract:
- A fact note is a memory of class ``fact`` whose id is derived from its subject alone
  (``fact_ids``), so every update of "Maria's employer" lands in the same file. Subjects are the
  same when they differ only in case and spacing (``subject_key``); punctuation counts, so
  "C++ standard" and "C standard" are two subjects. A subject's note has ``fact_id(subject)``, or,
  when a note of another subject holds that id, the id with a hash of the subject; the note's title
  ("<subject>: <current value>", or after a hand edit its entities) says whose it is, so a lookup
  (``find_fact``) finds it under either.
- The title and description carry the current value, so recall shows it first; the body holds
  the current value with the day it began and every earlier value with its dates (from–to),
  newest first, so the wording of an old value still finds the note and answers "what was it
  before". The note does not decay (its updates keep it current; ``created`` is the day the
  current value began); recall caps how many slots fact notes take (``quipu.prompt.recall.FACT_SLOTS``).
- ``set_fact`` writes one commit per change (``store.add``, action ``fact-set``), made only over
  the version it read: a concurrent change (another ``fact set`` of the subject, the sweep's
  aliases) makes it read the note again and apply its value to that (WRITE_ATTEMPTS tries).
  A value goes into the history after every value dated on or before its day (so on a tie it is
  the newer one, and a value set without a date becomes current); a value dated after today in
  the store counts as today's, so a later value set today still becomes current. When the value
  it follows there is the same one, already begun by its day, nothing changes (setting the current
  value again is a no-op; setting an earlier value again makes it current again). A day after
  tomorrow (a day of slack for time zones) is refused. Values and subjects pass the secret and
  prompt-injection gates first.
- The body format is ``FORMAT`` below; ``parse_history`` reads it back in the order it was
  written, which is the order the values were set in when days tie. A note edited by hand into
  something else is refused with a message naming the file.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from quipu.capture import gates
from quipu.errors import ChangedSinceRead, ConflictError, FatalError, InvalidMemory, NotFound
from quipu.store.gitobj import object_id
from quipu.store.memory import Memory, memory_path, parse_memory
from quipu.store.store import Store

FORMAT = """Current: <value> (since <YYYY-MM-DD>)

Earlier values:
- <value> (<YYYY-MM-DD> to <YYYY-MM-DD>)"""
_CURRENT = re.compile(r"^Current: (?P<value>.+) \(since (?P<since>\d{4}-\d{2}-\d{2})\)$")
_EARLIER = re.compile(r"^- (?P<value>.+) \((?P<since>\d{4}-\d{2}-\d{2}) to (?P<until>\d{4}-\d{2}-\d{2})\)$")
MAX_SLUG = 50
MAX_TITLE = 300
WRITE_ATTEMPTS = 8


@dataclass(frozen=True)
class Value:
    value: str
    since: str  # YYYY-MM-DD


@dataclass(frozen=True)
class FactChange:
    id: str
    subject: str
    current: Value
    earlier: tuple[Value, ...]
    commit: str | None  # None: nothing changed
    already: Value | None = None  # nothing changed: the recorded value that already held from that day

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "subject": self.subject, "commit": self.commit,
            "current": {"value": self.current.value, "since": self.current.since},
            "earlier": [{"value": v.value, "since": v.since} for v in self.earlier],
            "already": {"value": self.already.value, "since": self.already.since} if self.already else None,
        }


def subject_key(subject: str) -> str:
    """The form in which two subjects are the same: case and spacing aside, every character counts."""
    return " ".join(subject.casefold().split())


def fact_id(subject: str) -> str:
    """``fact-`` plus a slug of the subject; a hash keeps long or non-Latin subjects unique."""
    norm = subject_key(subject)
    slug = re.sub(r"[^a-z0-9]+", "-", norm).strip("-")
    digest = hashlib.sha1(norm.encode("utf-8")).hexdigest()[:8]
    if not slug:
        return f"fact-{digest}"
    if len(slug) > MAX_SLUG:
        return f"fact-{slug[:MAX_SLUG].rstrip('-')}-{digest}"
    return f"fact-{slug}"


def fact_ids(subject: str) -> tuple[str, str]:
    """The ids the subject's note may have: ``fact_id``, then that id with a hash of the whole
    subject, for a subject whose slug another subject's note holds ("C++ standard", "C standard")."""
    base = fact_id(subject)
    digest = hashlib.sha1(subject_key(subject).encode("utf-8")).hexdigest()[8:16]
    return base, f"{base[:55].rstrip('-')}-{digest}"


def today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def latest_day() -> str:
    """The last day a value may begin: tomorrow, as some time zone is already there."""
    return (_dt.datetime.now(_dt.timezone.utc).date() + _dt.timedelta(days=1)).isoformat()


def check_since(text: str) -> str:
    """``text`` as the day a value began: a date, and not after tomorrow."""
    day = check_date(text)
    if day > latest_day():
        raise InvalidMemory(f"{day} is after today ({today()}): a value is recorded from the day it began, "
                            "not a day to come\n- give the day it began as YYYY-MM-DD, or leave --since out for today")
    return day


def check_date(text: str) -> str:
    try:
        return _dt.date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        raise InvalidMemory(f"{text!r} is not a date\n- use YYYY-MM-DD, for example 2026-05-01") from None


def parse_history(memory: Memory) -> list[Value]:
    """The note's values, oldest first (the order they were set in when days tie)."""
    return parse_body(memory.body, memory.path)


def parse_body(body: str, source: str) -> list[Value]:
    """The values a fact note's body records, oldest first, in the body's own order (it lists them
    newest first); ``InvalidMemory`` if it has none."""
    current: Value | None = None
    earlier: list[Value] = []
    for line in body.splitlines():
        line = line.strip()
        if m := _CURRENT.match(line):
            current = Value(m["value"], m["since"])
        elif m := _EARLIER.match(line):
            earlier.append(Value(m["value"], m["since"]))
    if current is None:
        raise InvalidMemory(
            f"{source}: a fact note must start with 'Current: <value> (since YYYY-MM-DD)'\n"
            f"- fix the body to the format:\n{FORMAT}"
        )
    return [*reversed(earlier), current]


def render_body(history: list[Value]) -> str:
    """Body text for ``history`` (oldest first): current on top, earlier values newest first."""
    current = history[-1]
    lines = [f"Current: {current.value} (since {current.since})"]
    if len(history) > 1:
        lines += ["", "Earlier values:"]
        for older, newer in reversed(list(zip(history, history[1:], strict=False))):
            lines.append(f"- {older.value} ({older.since} to {newer.since})")
    return "\n".join(lines) + "\n"


def _clean(text: str, what: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise InvalidMemory(f"the fact's {what} is empty\n- give a {what}")
    if len(text) > 200:
        raise InvalidMemory(f"the fact's {what} is {len(text)} characters; keep it under 200")
    refusal = gates.check_text(text, gates=("secret", "prompt-injection"))
    if refusal is not None:
        raise FatalError(f"refusing to store this {what}: {refusal.detail}\n"
                         "- never store secrets or instructions in a fact")
    return text


def records(memory: Memory, history: list[Value], subject: str) -> bool:
    """Whether the fact note ``memory`` (with values ``history``) is ``subject``'s: its title is
    "<subject>: <current value>" as ``set_fact`` writes it. A title edited by hand leaves the
    subjects the note was set under, in its entities; a note one of them names in its title is that
    one's (an older quipu put "C++ standard" and "C standard" in one note)."""
    def titled(name: str) -> bool:
        return subject_key(memory.title) == subject_key(f"{name}: {history[-1].value}"[:MAX_TITLE])

    if titled(subject):
        return True
    if any(titled(entity) for entity in memory.entities):
        return False
    return any(subject_key(entity) == subject_key(subject[:80]) for entity in memory.entities)


def find_fact(store: Store, subject: str) -> tuple[str, bytes | None, Memory | None]:
    """The subject's note: its id, the file's bytes and the note, or (the id a new note takes, None,
    None). A note at one of its ids that is not in the fact format is refused (``InvalidMemory``)."""
    free: str | None = None
    for mid in fact_ids(subject):
        data = store.read_bytes(memory_path(mid))
        if data is None:
            free = free or mid
            continue
        memory = parse_memory(data, memory_path(mid))
        if records(memory, parse_history(memory), subject):
            return mid, data, memory
    if free is None:
        ids = " and ".join(fact_ids(subject))
        raise ConflictError(f"the ids for the fact {subject!r}, {ids}, hold facts of other subjects\n"
                            "- word the subject differently")
    return free, None, None


def get_fact(store: Store, subject: str) -> tuple[Memory, list[Value]]:
    subject = " ".join(subject.split())
    mid, _data, memory = find_fact(store, subject)
    if memory is None:
        base = fact_id(subject)
        if mid == base:
            raise store.missing(base)
        raise NotFound(f"no fact about {subject!r} in {store.root}; {base} is a fact of another subject\n"
                       "- run `quipu list` to see the ids")
    return memory, parse_history(memory)


def set_fact(
    store: Store,
    subject: str,
    value: str,
    *,
    since: str | None = None,
    origin: str = "user",
    session: str | None = None,
    sweep: str | None = None,
) -> FactChange:
    """Record ``value`` as the subject's value from ``since`` (default today): one commit, or none."""
    subject, value = _clean(subject, "subject"), _clean(value, "value")
    since = check_since(since) if since else today()
    mid = fact_id(subject)
    for _attempt in range(WRITE_ATTEMPTS):
        mid, data, old = find_fact(store, subject)
        try:
            return _set(store, mid, subject, value, since, old, data, origin, session, sweep)
        except ChangedSinceRead:
            continue  # another writer changed the note (a second `fact set`, the sweep): read it again
        except ConflictError:
            if old is None and store.exists(mid):
                continue  # another writer created it first
            raise
    raise ConflictError(f"the fact note {mid} kept changing while it was written; nothing was lost\n"
                        "- run the command again")


def _set(store: Store, mid: str, subject: str, value: str, since: str, old: Memory | None, data: bytes | None,
         origin: str, session: str | None, sweep: str | None) -> FactChange:
    """One attempt of ``set_fact`` on the version read (``data``), written only over that version."""
    history = parse_history(old) if old is not None else []
    now = today()
    at = max((i + 1 for i, v in enumerate(history) if min(v.since, now) <= since), default=0)
    before = history[at - 1] if at else None
    if before is not None and before.value.casefold() == value.casefold() and before.since <= since:
        return _change(mid, subject, history, None, before)  # that value already held from that day
    history = [*history[:at], Value(value, since), *history[at:]]
    current = history[-1]
    earlier = len(history) - 1
    fields: dict[str, Any] = {
        "id": mid,
        "title": f"{subject}: {current.value}"[:MAX_TITLE],
        "description": (f"current value since {current.since}"
                        + (f"; {earlier} earlier value{'s' if earlier != 1 else ''} below" if earlier else "")),
        "class": "fact",
        "topics": list(old.topics) if old else ["fact"],
        "entities": list(dict.fromkeys([*(old.entities if old else ()), subject[:80]])),
        "aliases": list(old.aliases) if old else [],
        "origin": old.origin if old and old.origin == "user" else origin,
        "created": current.since,
        # Updates keep the note current, so it does not fade with age; FACT_SLOTS keeps it from crowding.
        "half_life_days": None,
        "session": session or (old.session if old else None),
        "project": old.project if old else None,
    }
    memory = Memory.create(fields, render_body(history), source=f"fact {subject!r}")
    sha = store.add(memory, action="fact-set", session=session, sweep=sweep, overwrite=old is not None,
                    unchanged={memory.path: object_id("blob", data)} if data is not None else None)
    return _change(mid, subject, history, sha)


def _change(mid: str, subject: str, history: list[Value], sha: str | None, already: Value | None = None) -> FactChange:
    return FactChange(mid, subject, history[-1], tuple(reversed(history[:-1])), sha, already)
