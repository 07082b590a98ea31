"""Consistency across boundaries: profile against store, store rules against the project's CLAUDE.md.

The curator compares memories with memories. This deterministic pass (no model) compares the
things that live outside the store's own pairs: each profile line against the store's active
memories, and each active rule against the project's instruction files (``CLAUDE.md``,
``.claude/CLAUDE.md``, ``CLAUDE.local.md``). Contradictions are queued for review, never
resolved here.

Contract:
- ``find_tensions(store, project)`` returns ``Tension`` values; ``queue(store, tensions)``
  commits one event per new tension on the memory involved, shaped like every review item of
  ``quipu.curate.review`` (``{"action": "review", "review_id": "rv-...", "kind": "consistency",
  "other": null, "detail": ...}``, trailers ``Quipu-Action: review`` and ``Quipu-Review``), so
  ``quipu review`` lists it and ``accept``/``reject`` close it. The other side is a profile
  line or a CLAUDE.md line, not a memory, so ``other`` is null and the texts are in
  ``claim``, ``other_text`` and ``where``. A tension already queued (same fingerprint) is not
  queued again. Texts are redacted and cut to ``MAX_TEXT`` before they are written.
- Two clauses are about the same thing when they share at least ``MIN_SHARED`` content words
  and their content-word sets overlap by ``MIN_JACCARD`` or more (after stemming; negation
  words, opposite-pair words and numbers left out of the comparison). Same-thing clauses are
  in tension when:
  * ``negation``: one is negated (never, not, don't, avoid...) and the other is not
    ("never X" against "always X");
  * ``opposite``: each uses one side of a known opposite pair (tabs/spaces, enable/disable...);
  * ``number``: they state different numbers ("line length 100" against "88");
  * ``earlier-value`` (profile only): the line states a value a fact note records as earlier,
    not its current value.
  A clause that some other clause of the memory agrees with is not reported: a memory that
  says one thing twice in different words is read by its agreeing wording.

Limits, by design of a cheap deterministic check: English only; no synonyms ("forbid" and
"allow" pair only through the lexicon); no scope reasoning ("in tests" against "in
production" counts as the same thing when the rest matches); a clause that agrees while using
a negation ("run tests, don't skip them" against "the user runs tests") is a false alarm. The
review queue is where a person settles these; nothing is changed automatically.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quipu.capture import enrich
from quipu.capture import facts
from quipu.index import index
from quipu.capture import profile
from quipu.store import secrets_scan
from quipu.curate.apply import new_review_id
from quipu.errors import InvalidMemory
from quipu.store.store import Store

MIN_SHARED = 2
MIN_JACCARD = 0.5
MAX_TEXT = 300
MAX_SENTENCES = 20
CLAUDE_FILES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
COMPARED_CLASSES = ("rule", "preference", "fact", "reference", "project-note")

NEGATIONS = frozenset("""
not never no don't dont doesn't doesnt didn't isn't aren't won't wouldn't shouldn't mustn't can't cannot avoid
avoids avoided without nobody none nothing neither nor forbid forbids forbidden prohibit prohibited refuse
banned disallowed
""".split())
OPPOSITES = (
    ("tab", "space"), ("enable", "disable"), ("on", "off"), ("true", "false"), ("yes", "no"), ("allow", "deny"),
    ("allow", "forbid"), ("light", "dark"), ("public", "private"), ("sync", "async"), ("include", "exclude"),
    ("required", "optional"), ("before", "after"), ("local", "remote"), ("squash", "merge"), ("rebase", "merge"),
    ("single", "double"), ("upper", "lower"), ("short", "long"), ("verbose", "terse"),
)
_OPPOSITE_OF: dict[str, set[str]] = {}
for _a, _b in OPPOSITES:
    _OPPOSITE_OF.setdefault(_a, set()).add(_b)
    _OPPOSITE_OF.setdefault(_b, set()).add(_a)
_WORD = re.compile(r"[a-z0-9']+")
_OFF_LIMITS = re.compile(r"\boff[\s-]limits?\b|\bnot\s+allowed\b")
_NUMBER = re.compile(r"^\d+(\.\d+)?$")
_CLAUSE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+|;\s*|,\s+but\s+|\s+but\s+")
_MARKUP = re.compile(r"^[\s\-*•>#\d.)]+|`")


@dataclass(frozen=True)
class Tension:
    memory: str      # the memory the review item is queued on
    against: str     # "profile" or "claude-md"
    claim: str       # the memory's clause
    other: str       # the profile line or the CLAUDE.md clause
    where: str       # profile.md, or the CLAUDE.md file (relative to the project) and line
    why: str         # negation | opposite | number | earlier-value

    @property
    def fingerprint(self) -> str:
        text = "\x00".join((self.memory, self.against, self.claim, self.other))
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]

    def event(self, review_id: str) -> dict[str, Any]:
        claim, other = _cut(self.claim), _cut(self.other)
        where = "the profile" if self.against == "profile" else self.where
        return {"action": "review", "review_id": review_id, "kind": "consistency", "other": None,
                "detail": f"{self.why}: {claim!r} against {where}: {other!r}",
                "against": self.against, "claim": claim, "other_text": other, "where": _cut(self.where),
                "why": self.why, "fingerprint": self.fingerprint}

    def to_json(self) -> dict[str, Any]:
        return {"memory": self.memory, "against": self.against, "claim": _cut(self.claim),
                "other_text": _cut(self.other), "where": self.where, "why": self.why,
                "fingerprint": self.fingerprint}


def _cut(text: str) -> str:
    text = " ".join(secrets_scan.redact(text).split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


@dataclass(frozen=True)
class Clause:
    text: str
    words: frozenset[str]     # stemmed content words, without negations, opposites and numbers
    negated: bool
    sides: frozenset[str]     # opposite-pair words present (stemmed)
    numbers: frozenset[str]

    @classmethod
    def create(cls, text: str) -> Clause:
        low = _OFF_LIMITS.sub(" forbidden ", text.lower().replace("’", "'"))
        raw = _WORD.findall(low)
        negated = sum(w in NEGATIONS for w in raw) % 2 == 1
        stems = [enrich.stem(w.strip("'")) for w in raw if w not in NEGATIONS]
        numbers = frozenset(w for w in stems if _NUMBER.match(w))
        sides = frozenset(w for w in stems if w in _OPPOSITE_OF)
        words = frozenset(
            w for w in stems
            if w not in enrich.STOPWORDS and len(w) > 1 and w not in numbers and w not in sides
            and w not in ("always", "user", "prefer", "must", "should")
        )
        return cls(text.strip(), words, negated, sides, numbers)


def clauses(text: str) -> list[Clause]:
    out = []
    for part in _CLAUSE_SPLIT.split(text):
        part = _MARKUP.sub("", part).strip()
        if len(part) >= 8:
            out.append(Clause.create(part))
    return out[:MAX_SENTENCES]


def same_thing(a: Clause, b: Clause) -> bool:
    shared = a.words & b.words
    return len(shared) >= MIN_SHARED and len(shared) / len(a.words | b.words) >= MIN_JACCARD


def conflict(a: Clause, b: Clause) -> str | None:
    """Why two clauses contradict each other, or None."""
    if not same_thing(a, b):
        return None
    if a.negated != b.negated:
        return "negation"
    if any(_OPPOSITE_OF[s] & b.sides and s not in b.sides for s in a.sides):
        return "opposite"
    if a.numbers and b.numbers and not (a.numbers & b.numbers):
        return "number"
    return None


# ------------------------------------------------------------------------------ sources

def _memory_rows(store: Store, classes: Sequence[str]) -> list[Any]:
    marks = ", ".join("?" * len(classes))
    return index.rows(
        store,
        "SELECT id, title, description, body, class, path FROM memories"
        f" WHERE status = 'active' AND class IN ({marks}) ORDER BY id",
        classes,
    )


def _memory_clauses(row: Any) -> list[Clause]:
    return clauses("\n".join([row["title"], row["description"] or "", row["body"] or ""]))


def claude_files(project: Path) -> list[Path]:
    return [project / rel for rel in CLAUDE_FILES if (project / rel).is_file()]


def _claude_clauses(project: Path) -> list[tuple[str, Clause]]:
    out: list[tuple[str, Clause]] = []
    for path in claude_files(project):
        shown = path.relative_to(project).as_posix()  # what reaches the shared store names no local folder
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        in_fence = False
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip().startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence or not line.strip() or line.lstrip().startswith("#"):
                continue
            out += [(f"{shown}:{number}", clause) for clause in clauses(line)]
    return out


# ------------------------------------------------------------------------------ the checks

def profile_tensions(store: Store) -> list[Tension]:
    card = profile.read_card(store)
    if not card.lines:
        return []
    rows = _memory_rows(store, COMPARED_CLASSES)
    found: list[Tension] = []
    memory_clauses = [(row, _memory_clauses(row)) for row in rows]
    for line in card.ordered():
        mine = clauses(line.text)
        for row, theirs in memory_clauses:
            if row["class"] == "fact" and row["id"].startswith("fact-"):
                tension = _earlier_value(row, line)
                if tension is not None:
                    found.append(tension)
                    continue
            hit = _first_conflict(theirs, mine)
            if hit is not None:
                found.append(Tension(row["id"], "profile", hit[0].text, line.entry, profile.PROFILE_PATH, hit[2]))
    return found


def _earlier_value(row: Any, line: profile.Line) -> Tension | None:
    """A profile line that states a value the fact note records as earlier, not current."""
    try:
        history = facts.parse_body(row["body"] or "", row["path"])
    except InvalidMemory:
        return None
    subject = row["title"].rsplit(":", 1)[0]
    subject_words = set(enrich.content_words(subject))
    text = line.text.casefold()
    if not subject_words & set(enrich.content_words(line.text)):
        return None
    current = history[-1].value.casefold()
    if current in text:
        return None
    for older in history[:-1]:
        if older.value.casefold() in text and len(older.value) >= 2:
            claim = f"{row['title']} (earlier: {older.value}, until a later value began)"
            return Tension(row["id"], "profile", claim, line.entry, profile.PROFILE_PATH, "earlier-value")
    return None


def _first_conflict(a: Iterable[Clause], b: Sequence[Clause]) -> tuple[Clause, Clause, str] | None:
    """The first contradiction between the two texts, unless some clause of one agrees with the
    same clause of the other (a memory that says a thing twice, once in other words, is not a
    contradiction because the heuristics misread one wording)."""
    found: tuple[Clause, Clause, str] | None = None
    for y in b:
        for x in a:
            if not same_thing(x, y):
                continue
            why = conflict(x, y)
            if why is None:
                found = None
                break  # this clause of ``b`` agrees with ``a``
            if found is None:
                found = (x, y, why)
        if found is not None:
            return found
    return None


def claude_md_tensions(store: Store, project: Path) -> list[Tension]:
    theirs = _claude_clauses(project)
    if not theirs:
        return []
    found: list[Tension] = []
    for row in _memory_rows(store, ("rule", "preference")):
        mine = _memory_clauses(row)
        for where, clause in theirs:
            hit = _first_conflict(mine, [clause])
            if hit is not None:
                found.append(Tension(row["id"], "claude-md", hit[0].text, clause.text, where, hit[2]))
                break
    return found


def find_tensions(store: Store, project: Path | None = None) -> list[Tension]:
    found = profile_tensions(store)
    if project is not None:
        found += claude_md_tensions(store, project)
    return found


def queued_fingerprints(store: Store, memory_id: str) -> set[str]:
    return {str(data.get("fingerprint")) for _name, data in store.events(memory_id)
            if data.get("action") == "review" and data.get("kind") == "consistency"}


def queue(store: Store, tensions: Iterable[Tension], *, sweep: str | None = None) -> list[str]:
    """Commit a review event for each tension not queued before; returns the commits."""
    commits: list[str] = []
    for tension in tensions:
        if tension.fingerprint in queued_fingerprints(store, tension.memory):
            continue
        review_id = new_review_id()
        event = tension.event(review_id)
        event["sweep"] = sweep
        commits.append(store.add_event(
            tension.memory, event,
            summary=f"quipu: review {tension.memory} consistency with {tension.against} ({tension.why})",
            trailers={"Quipu-Action": "review", "Quipu-Review": review_id, "Quipu-Sweep": sweep},
        ))
    if commits:
        index.ensure_fresh(store)
    return commits
