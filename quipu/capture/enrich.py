"""Enrichment: aliases, the words a person would actually type when they need a memory.

The design's measurement: paraphrases were the only expansion that helped recall; copying a
note's own words into its alias field made the battery worse. So the model proposes aliases
and code keeps only real paraphrases.

Contract:
- ``filter_aliases(aliases, title, description, body)`` returns ``(kept, dropped)``. An alias is
  dropped when it is empty, too long, a duplicate, looks like a secret, or when most of its
  content words (``COPY_RATIO`` or more, after light stemming) already occur in the memory's
  own title, description or body: such an alias adds nothing the index does not already hold.
  An alias that looks like a secret or instructs the agent (the prompt-injection gate of
  ``quipu.capture.gates``) is dropped too: aliases are recalled into prompts.
- ``enrich(model, memory)`` asks the model for aliases of one memory (one call, purpose
  ``enrich``) and returns the memory with the filtered aliases merged in. Model errors are the
  caller's to handle (``ModelError``); enrichment is optional and a failure never loses the memory.
- ``propose(model, memories)`` asks for the aliases of several memories in one call (the
  sweep's enrichment, ``quipu.curate.enrichment``): ``{id: kept aliases}`` for each memory the
  answer names by its number, filtered as above; a number the prompt did not hold is ignored.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from quipu.capture import gates
from quipu.model import Model
from quipu.prompt import fence
from quipu.store import secrets_scan
from quipu.store.memory import Memory

MAX_ALIASES = 6
MAX_ALIAS_CHARS = 80
COPY_RATIO = 0.6  # an alias whose content words are at least 60% the note's own words is a copy

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have how i if in into is it its
me my no not of on or our should so that the their them then there these they this to was we were what
when where which who why will with would you your about am any just also than too very
""".split())

MAX_NOTE_CHARS = 2000  # of a note's body shown to the model

ALIAS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["aliases"],
    "properties": {"aliases": {"type": "array", "maxItems": 10, "items": {"type": "string"}}},
}


BATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["notes"],
    "properties": {"notes": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["note", "aliases"],
        "properties": {"note": {"type": "integer"},
                       "aliases": {"type": "array", "maxItems": 10, "items": {"type": "string"}}},
    }}},
}
_ASK = ("list up to 6 short phrases a person would actually type when they need {it} but do not remember "
        "its words: paraphrases, symptoms, the question they would ask. Do not repeat {whose} own words; "
        "every phrase must use different words.")


def stem(word: str) -> str:
    """A deliberately crude stemmer: enough to see that "deploys" and "deploying" are "deploy"."""
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "es" and not word.endswith(("sses", "xes", "zes", "ches", "shes")):
                continue  # "spaces" -> "space" (by "s"), but "fixes" -> "fix"
            if suffix == "s" and word.endswith("ss"):
                return word  # "class", "access"
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word


def content_words(text: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1]


def copy_ratio(alias: str, own_words: Iterable[str]) -> float:
    """Share of the alias's content words already in the memory's own text (1.0 for no words)."""
    words = content_words(alias)
    if not words:
        return 1.0
    own = set(own_words)
    return sum(w in own for w in words) / len(words)


def filter_aliases(
    aliases: Sequence[str], title: str, description: str = "", body: str = "", existing: Sequence[str] = ()
) -> tuple[list[str], list[tuple[str, str]]]:
    own = set(content_words(f"{title}\n{description}\n{body}"))
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    seen = {" ".join(content_words(a)) for a in existing}
    for raw in aliases:
        alias = " ".join(str(raw).split())
        key = " ".join(content_words(alias))
        if not alias or len(alias) > MAX_ALIAS_CHARS:
            dropped.append((alias, "empty or too long"))
        elif secrets_scan.has_secret(alias):
            dropped.append(("[REDACTED]", "looks like a secret"))
        elif (refusal := gates.check_text(alias, gates=("prompt-injection",))) is not None:
            dropped.append((alias, refusal.detail))
        elif key in seen:
            dropped.append((alias, "duplicate"))
        elif copy_ratio(alias, own) >= COPY_RATIO:
            dropped.append((alias, "copies the memory's own words"))
        elif len(kept) + len(existing) >= MAX_ALIASES:
            dropped.append((alias, f"more than {MAX_ALIASES} aliases"))
        else:
            kept.append(alias)
            seen.add(key)
    return kept, dropped


def _note(memory: Memory, attrs: str = "") -> str:
    body = memory.body.strip()[:MAX_NOTE_CHARS].replace("</note", "</ note")
    return f"<note{attrs}>\nTitle: {memory.title}\nDescription: {memory.description}\n{body}\n</note>"


def alias_prompt(memory: Memory) -> str:
    ask = _ASK.format(it="this note", whose="the note's")
    return f"A memory store holds the note below. {ask[0].upper()}{ask[1:]}\n\n{_note(memory)}"


def batch_prompt(memories: Sequence[Memory]) -> str:
    """The prompt asking for the aliases of ``memories``, numbered from 1 in order."""
    ask = _ASK.format(it="that note", whose="a note's")
    notes = "\n\n".join(_note(m, f' n="{n}"') for n, m in enumerate(memories, 1))
    return (f"A memory store holds the notes below. For each note, {ask} Answer for every note, "
            f"by its number n.\n\n{notes}")


def propose(model: Model, memories: Sequence[Memory]) -> dict[str, list[str]]:
    """The kept aliases of each memory the model answered for, in one call (purpose ``enrich``)."""
    answer = model.complete(fence.visible(batch_prompt(memories)), BATCH_SCHEMA, purpose="enrich")
    out: dict[str, list[str]] = {}
    for item in answer["notes"]:
        n = item["note"]
        if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(memories):
            m = memories[n - 1]
            kept, _dropped = filter_aliases(item["aliases"], m.title, m.description, m.body, m.aliases)
            out.setdefault(m.id, kept)
    return out


def enrich(model: Model, memory: Memory) -> Memory:
    answer = model.complete(fence.visible(alias_prompt(memory)), ALIAS_SCHEMA, purpose="enrich")
    kept, _dropped = filter_aliases(answer["aliases"], memory.title, memory.description, memory.body, memory.aliases)
    return memory.with_changes(aliases=tuple(memory.aliases) + tuple(kept)) if kept else memory
