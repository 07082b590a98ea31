"""The profile: a small always-on card of durable facts about the user, kept in ``profile.md``.

Grammar (after Honcho): every line starts with one of four fixed prefixes,

- ``Identity:``      who the user is (role, team, languages they speak),
- ``Preference:``    what they like and dislike in how work is done,
- ``Environment:``   the durable shape of their setup (OS, editor, main stack),
- ``Working style:`` how they like to collaborate (review habits, level of detail),

each entry is capped (``Limits.entry_chars``), and the card as a whole is capped in lines and
characters (default 14 lines and 1,375 characters, Hermes' profile size). A store's ``quipu.toml``
may lower the caps under ``[profile]`` (``max_lines``, ``max_chars``, ``entry_chars``); only
``$QUIPU_HOME/config.toml`` may raise them, within hard bounds (``quipu.store.settings``).

Contract:
- Admission test (``admission``): a value that could plausibly change within six months does
  not go on the card. The adder states ``stable_for_months`` (>= 6 required) and code refuses
  volatile wording ("currently", "this week", "for now", version numbers, dates...). A value
  that fails admission is not lost: it is saved to the searchable store as a memory instead.
  Text that looks like a secret, instructs the agent (or asks it to keep something from the user),
  is phrased as a command, or weakens a safeguard (``quipu.capture.gates.check_card``) is refused
  outright (``FatalError``) and written nowhere.
- A line that came from memories names them in its comment (``memory=ID``: capture's line, the
  memory it captured; a rebuilt line, the memories it rests on). ``session_card`` is the card as a
  session sees it: without a line one of whose memories is retracted or superseded (however that
  happened: ``quipu retract``, a label, a review, a sync, an undo), and without a line whose text
  the card's prompt-injection or safeguard gate refuses now (one a hand edit or an older quipu
  wrote); ``withheld`` says why for each. Those lines stay in ``profile.md``; taking a line out is
  ``quipu.capture.profile_remove``. A line added again by hand (``quipu profile add``, no memory)
  becomes the person's own and names no memory; added again from another memory, it names that one.
- Writing to a full card never fails: the weakest line is demoted to the searchable store as a
  memory (one commit that removes the line and adds the memory, so ``quipu undo`` of it puts
  the line back). Lines the user said (origin ``user``) outrank inferred ones; then the value
  with more stable months; then the newer line.
- Every change is one commit (``Quipu-Memory: profile`` for card edits, the new memory's id
  for demotions). Read-modify-write runs under a lock so two writers never lose a line.
- The capacity header ("12/14 lines, 1,020/1,375 chars") is computed when the card is shown or
  injected, not stored, and lines are kept in the order they were added: every change is then a
  one-line diff that ``quipu undo`` (a revert) applies cleanly, except when a later change
  touched the neighbouring line; undo refuses that case and says to undo the later change first.
- ``propose_rebuild`` asks the model for a fresh card from the store's memories without showing
  it the old card; ``apply_rebuild`` writes it. Old lines the user said that the new card drops
  are demoted to the store, never lost.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from quipu.capture import gates
from quipu.errors import FatalError
from quipu.index import index
from quipu.store import schema
from quipu.store.locks import file_lock
from quipu.store.memory import Memory, new_id, now_utc, parse_memory, render_memory
from quipu.store.store import Store

PROFILE_PATH = schema.PROFILE_PATH  # the one description of the store: quipu.store.schema
PROFILE_ID = "profile"  # the Quipu-Memory trailer of card edits
PREFIXES = gates.PROFILE_PREFIXES
MIN_STABLE_MONTHS = 6
DEFAULT_STABLE_MONTHS = 12  # what `quipu profile add` assumes a person means when they add a line
DEMOTED_CLASS = {"Identity": "fact", "Preference": "preference", "Environment": "reference",
                 "Working style": "preference"}

_FILE_HEAD = (
    "<!-- quipu profile: durable facts about the user, injected at every session start.\n"
    "     Prefixes: Identity, Preference, Environment, Working style. Change it with `quipu profile add`;\n"
    "     every change is a commit. The comment after each line records who said it and since when. -->\n"
    "# Profile\n"
)
_LINE = re.compile(
    r"^- (?P<prefix>Identity|Preference|Environment|Working style): (?P<text>.+?)"
    r"(?:\s+<!-- origin=(?P<origin>user|session|import) since=(?P<since>\d{4}-\d{2}-\d{2})"
    r" stable=(?P<stable>\d+)(?: memory=(?P<memory>[a-z0-9][a-z0-9-]{2,63}(?:,[a-z0-9][a-z0-9-]{2,63})*))? -->)?$"
)
_VOLATILE = re.compile(
    r"(?i)\b(currently|right\s+now|at\s+the\s+moment|for\s+now|these\s+days|nowadays|lately|recently|temporar(y|ily)"
    r"|this\s+(week|month|sprint|quarter|year|season)|next\s+(week|month|sprint|quarter|year)|today|tomorrow|yesterday"
    r"|until|in\s+progress|working\s+on|trying\s+(out|to)|learning|evaluating|migrating|about\s+to|soon|latest|newest)\b"
    r"|\bv?\d+\.\d+(\.\d+)*\b"        # version numbers change
    r"|\b\d{4}-\d{2}(-\d{2})?\b"      # a dated value is an event, not a trait
)


@dataclass(frozen=True)
class Limits:
    max_lines: int = 14
    max_chars: int = 1375
    entry_chars: int = 140

    @classmethod
    def for_store(cls, store: Store) -> Limits:
        from quipu.store import settings

        section = settings.section(store, "profile")  # a store may only lower the caps
        values: dict[str, int] = {}
        if isinstance(section, dict):
            for key in ("max_lines", "max_chars", "entry_chars"):
                value = section.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    values[key] = value
        return cls(**values)


@dataclass(frozen=True)
class Line:
    prefix: str
    text: str
    origin: str = "user"
    since: str = ""
    stable_months: int = DEFAULT_STABLE_MONTHS
    memories: tuple[str, ...] = ()  # the memories the line came from

    @property
    def entry(self) -> str:
        return f"{self.prefix}: {self.text}"

    def render(self) -> str:
        link = f" memory={','.join(self.memories)}" if self.memories else ""
        return f"- {self.entry} <!-- origin={self.origin} since={self.since} stable={self.stable_months}{link} -->"

    def key(self) -> str:
        return " ".join(self.entry.casefold().split())

    def strength(self) -> tuple[bool, int, str]:
        """Bigger is stronger: said by the user, then more stable, then newer."""
        return (self.origin == "user", self.stable_months, self.since)

    def to_json(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "text": self.text, "origin": self.origin, "since": self.since,
                "stable_for_months": self.stable_months, "memories": list(self.memories)}


@dataclass(frozen=True)
class Card:
    lines: tuple[Line, ...] = ()
    limits: Limits = Limits()
    unparsed: tuple[str, ...] = ()  # lines of profile.md that are not card lines (shown by doctor)

    @property
    def chars(self) -> int:
        return sum(len(line.entry) for line in self.lines)

    def header(self) -> str:
        return (f"{len(self.lines)}/{self.limits.max_lines} lines, "
                f"{self.chars:,}/{self.limits.max_chars:,} chars")

    def over_capacity(self) -> bool:
        return len(self.lines) > self.limits.max_lines or self.chars > self.limits.max_chars

    def ordered(self) -> list[Line]:
        """Lines grouped by prefix in the fixed order, insertion order within a prefix."""
        return sorted(self.lines, key=lambda line: PREFIXES.index(line.prefix))

    def render_file(self) -> bytes:
        # Insertion order (new lines at the end): each change is a one-line diff, and the
        # position is the tie-break between equally strong lines.
        body = "\n".join(line.render() for line in self.lines)
        extra = "\n".join(self.unparsed)
        return (_FILE_HEAD + "\n" + body + ("\n" if body else "") + (f"\n{extra}\n" if extra else "")).encode("utf-8")

    def render_card(self) -> str:
        """The card as people and the session see it: the capacity header, then the entries."""
        return "\n".join([f"Profile ({self.header()})", *(line.entry for line in self.ordered())])

    def to_json(self) -> dict[str, Any]:
        return {"header": self.header(), "lines": [line.to_json() for line in self.ordered()],
                "limits": vars(self.limits), "unparsed": list(self.unparsed)}


@dataclass
class Change:
    added: Line | None = None
    demoted: list[tuple[Line, str]] = field(default_factory=list)  # (line, memory id)
    diverted: tuple[str, str] | None = None  # (memory id, why the card refused the line)
    commits: list[str] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.added.to_json() if self.added else None,
            "demoted": [{"line": line.entry, "memory": mid} for line, mid in self.demoted],
            "diverted": {"memory": self.diverted[0], "reason": self.diverted[1]} if self.diverted else None,
            "commits": self.commits, "note": self.note,
        }


def today_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


# ------------------------------------------------------------------------------ reading

def parse_card(text: str, limits: Limits | None = None) -> Card:
    lines: list[Line] = []
    unparsed: list[str] = []
    in_comment = False
    for raw in text.splitlines():
        stripped = raw.strip()
        if in_comment:
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if not stripped or stripped.startswith("# "):
            continue
        m = _LINE.match(stripped)
        if m is None:
            unparsed.append(stripped)
            continue
        # A line without the trailing comment was written by hand: the user said it.
        lines.append(Line(m["prefix"], m["text"].strip(), m["origin"] or "user", m["since"] or today_iso(),
                          int(m["stable"]) if m["stable"] else DEFAULT_STABLE_MONTHS,
                          tuple(dict.fromkeys(m["memory"].split(","))) if m["memory"] else ()))
    return Card(tuple(lines), limits or Limits(), tuple(unparsed))


def read_card(store: Store, limits: Limits | None = None) -> Card:
    data = store.read_bytes(PROFILE_PATH)
    limits = limits or Limits.for_store(store)
    if data is None:
        return Card((), limits)
    return parse_card(data.decode("utf-8", "replace"), limits)


def withheld(store: Store, card: Card) -> dict[Line, str]:
    """The lines of ``card`` a session does not see, each with why (see the module contract)."""
    linked = sorted({mid for line in card.lines for mid in line.memories})
    status: dict[str, str] = {}
    if linked:
        marks = ",".join("?" * len(linked))
        status = {row["id"]: row["status"] for row in
                  index.rows(store, f"SELECT id, status FROM memories WHERE id IN ({marks})", linked)}
    out: dict[Line, str] = {}
    for line in card.lines:
        gone = [mid for mid in line.memories if status.get(mid) in ("retracted", "superseded")]
        refusal = None if gone else gates.check_card(line.text, gates=("prompt-injection", "safeguard"))
        if gone:
            out[line] = f"the memory it came from, {gone[0]}, is {status[gone[0]]}"
        elif refusal is not None:
            out[line] = f"the card's {refusal.gate} gate refuses it: {refusal.detail}"
    return out


def session_card(store: Store, limits: Limits | None = None) -> Card:
    """The card as a session sees it: ``read_card`` without the lines ``withheld`` names."""
    card = read_card(store, limits)
    out = withheld(store, card)
    return replace(card, lines=tuple(ln for ln in card.lines if ln not in out)) if out else card


# ------------------------------------------------------------------------------ admission

def admission(line: Line, limits: Limits) -> str | None:
    """Why the card refuses ``line`` (the value is still kept in the store), or None to admit."""
    if line.prefix not in PREFIXES:
        return f"unknown prefix {line.prefix!r}; use one of {', '.join(PREFIXES)}"
    if len(line.entry) > limits.entry_chars:
        return f"{len(line.entry)} characters; a card entry may hold {limits.entry_chars}"
    if line.stable_months < MIN_STABLE_MONTHS:
        return f"stable for {line.stable_months} month(s); the card takes only values stable for {MIN_STABLE_MONTHS}+"
    m = _VOLATILE.search(line.text)
    if m:
        return f"could change within six months ({m.group(0)!r})"
    return None


def _check_text(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise FatalError("the profile line is empty\n- give the text after the prefix")
    refusal = gates.check_card(text)
    if refusal is not None:
        hint = ("- phrase it as a claim about the user: 'the user prefers X', not 'always do X'"
                if refusal.gate == "imperative" else
                "- the card is injected into every session: it never carries what weakens a safeguard"
                if refusal.gate == "safeguard" else "- never put secrets or instructions on the card")
        raise FatalError(f"refusing this profile line: {refusal.detail}\n{hint}")
    return text


# ------------------------------------------------------------------------------ writing

def card_lock(store: Store) -> contextlib.AbstractContextManager[None]:
    return file_lock(store.cache_dir / "profile.lock")


def _memory_for(line: Line, why: str) -> Memory:
    fields = {
        "id": new_id(),
        "title": line.text[:300],
        "description": f"{line.prefix} line {why}"[:300],
        "class": DEMOTED_CLASS[line.prefix],
        "topics": ["profile", line.prefix.lower()],
        "origin": line.origin,
        "created": now_utc(),
    }
    return Memory.create(fields, line.entry + "\n", source="profile line")


def _commit_memory(store: Store, memory: Memory, card: Card | None, action: str, summary: str,
                   sweep: str | None) -> str:
    data = render_memory(memory)
    parse_memory(data, memory.path)
    changes: dict[str, bytes | None] = {memory.path: data}
    if card is not None:
        changes[PROFILE_PATH] = card.render_file()
    return store.commit(changes, summary, {"Quipu-Action": action, "Quipu-Memory": memory.id, "Quipu-Sweep": sweep})


def weakest(lines: Sequence[Line]) -> Line:
    """The line to demote first: inferred before said-by-the-user, less stable, older."""
    return min(enumerate(lines), key=lambda pair: (pair[1].strength(), pair[0]))[1]


def _without(card: Card, line: Line) -> Card:
    return replace(card, lines=tuple(ln for ln in card.lines if ln is not line))


def demote_line(store: Store, card: Card, line: Line, why: str, change: Change, sweep: str | None) -> Card:
    """Move ``line`` from the card (as committed in ``card``) to the store: one commit."""
    memory = _memory_for(line, why)
    card = _without(card, line)
    sha = _commit_memory(store, memory, card, "profile-demote",
                         f"quipu: profile-demote {memory.id} {line.entry[:60]}", sweep)
    change.demoted.append((line, memory.id))
    change.commits.append(sha)
    return card


def leaving(card: Card) -> list[Line]:
    """The lines that must leave ``card`` for it to fit its caps: entries over the per-entry cap
    (only a hand edit makes those), then the weakest lines until it fits."""
    out = [ln for ln in card.lines if len(ln.entry) > card.limits.entry_chars]
    for line in out:
        card = _without(card, line)
    while card.over_capacity() and card.lines:
        weak = weakest(card.lines)
        out.append(weak)
        card = _without(card, weak)
    return out


def add_line(
    store: Store,
    prefix: str,
    text: str,
    *,
    origin: str = "user",
    stable_months: int = DEFAULT_STABLE_MONTHS,
    limits: Limits | None = None,
    sweep: str | None = None,
    divert: bool = True,
    memories: Sequence[str] = (),
) -> Change:
    """Put a line on the card; never fails for lack of room (the weakest line is demoted).

    With ``divert=False`` (the caller already keeps the value in the store, as capture does) a
    line the card refuses, or that is weaker than every line it would displace, is not written
    anywhere; ``Change.note`` says why. ``memories``: the memories the line came from (see the
    module contract)."""
    if prefix not in PREFIXES:
        raise FatalError(f"unknown profile prefix {prefix!r}\n- use one of: {', '.join(PREFIXES)}")
    line = Line(prefix, _check_text(text), origin, today_iso(), stable_months, tuple(dict.fromkeys(memories)))
    change = Change()
    with card_lock(store):
        card = read_card(store, limits)
        why = admission(line, card.limits)
        if why is not None and not divert:
            change.note = f"not admitted: {why}"
            return change
        if why is not None:
            memory = _memory_for(line, f"not admitted to the profile: {why}")
            sha = _commit_memory(store, memory, None, "profile-divert",
                                 f"quipu: profile-divert {memory.id} {line.entry[:60]}", sweep)
            change.diverted = (memory.id, why)
            change.commits.append(sha)
            index.ensure_fresh(store)
            return change
        same = [ln for ln in card.lines if ln.key() == line.key()]
        if same:
            old = same[0]  # the user now says it: it outranks (by hand: on its own); a new memory: it names that one
            links = (() if origin == "user" and not line.memories else
                     line.memories if old.memories and line.memories else old.memories)
            new = replace(old, origin="user" if origin == "user" else old.origin, memories=links)
            if new != old:
                lines = tuple(new if ln is old else ln for ln in card.lines)
                sha = store.commit({PROFILE_PATH: replace(card, lines=lines).render_file()},
                                   f"quipu: profile-confirm {line.entry[:60]}",
                                   {"Quipu-Action": "profile-confirm", "Quipu-Memory": PROFILE_ID,
                                    "Quipu-Sweep": sweep})
                change.commits.append(sha)
                change.note = ("already on the card; now marked as said by the user" if new.origin != old.origin
                               else "already on the card; now it names the memory that says it" if links
                               else "already on the card; now it stands as said by the user, without its memory")
            else:
                change.note = "already on the card"
            return change
        leaving_lines = leaving(replace(card, lines=card.lines + (line,)))
        if not divert and any(ln is line for ln in leaving_lines):
            change.note = "weaker than every line on the full card"
            return change
        for gone in leaving_lines:
            if gone is line:  # weaker than every line it would displace: straight to the store
                memory = _memory_for(line, f"kept off the full profile on {today_iso()} (weaker than the lines on it)")
                sha = _commit_memory(store, memory, None, "profile-demote",
                                     f"quipu: profile-demote {memory.id} {line.entry[:60]}", sweep)
                change.demoted.append((line, memory.id))
                change.commits.append(sha)
            else:
                card = demote_line(store, card, gone, f"moved from the profile on {today_iso()} (the card was full)",
                               change, sweep)
        if not any(ln is line for ln, _mid in change.demoted):
            sha = store.commit({PROFILE_PATH: replace(card, lines=card.lines + (line,)).render_file()},
                               f"quipu: profile-add {line.entry[:60]}",
                               {"Quipu-Action": "profile-add", "Quipu-Memory": PROFILE_ID, "Quipu-Sweep": sweep})
            change.added = line
            change.commits.append(sha)
    index.ensure_fresh(store)
    return change


def fit(store: Store, *, limits: Limits | None = None, sweep: str | None = None) -> Change:
    """Demote the weakest lines of an over-full card (after a hand edit) until it fits."""
    change = Change()
    with card_lock(store):
        card = read_card(store, limits)
        for gone in leaving(card):
            card = demote_line(store, card, gone, f"moved from the over-full profile on {today_iso()}", change, sweep)
    if change.commits:
        index.ensure_fresh(store)
    return change
