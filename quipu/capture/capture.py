"""Capture: what a session taught, committed at session end and before compaction.

Capture does not depend on the working model choosing to write a memory: the offline model
reads the whole session and proposes candidates, and code decides.

Contract:
- ``capture_session(store, transcript_path, session_id, model, budget)`` reads the human
  prompts and assistant text of the transcript (``quipu.prompt.transcript.conversation``), redacts
  anything that looks like a secret, bounds it to ``MAX_SESSION_CHARS`` (keeping the start and,
  with twice the room, the end: what held at the end matters most), and makes one model call
  (purpose ``capture``) asking for candidates in ``CANDIDATE_SCHEMA``, each with its outcome at
  the end of the session (held | refuted | unknown) and its class.
- Each candidate must pass every gate of ``quipu.capture.gates``; refusals are counted per gate and
  logged to ``<store>/.cache/capture.log`` (a JSON line each: reason and a redacted excerpt,
  never the secret; the cache is git-ignored). Admitted candidates are committed one commit
  each (action ``capture``) tagged with the session (``Memory.session`` and the
  ``Quipu-Session`` trailer). Aliases are filtered by ``quipu.capture.enrich.filter_aliases``. A
  ``fact`` with a subject updates that subject's fact note (``quipu.capture.facts``). A candidate the
  model marks for the profile, stable for six months or more, is also offered to the card, which
  takes more than a memory does: only what the user said (``said_by`` user, and the quoted words
  really occur in a human turn), and only text the card's gates pass
  (``quipu.capture.gates.check_card``: nothing that weakens a safeguard). A candidate the card
  refuses stays a memory, and the refusal is reported like the others (gate ``profile-...``). The
  line names the memory it came from, so it leaves the session's card with that memory.
- Running capture again on the same session (pre-compact, then session end) does not
  duplicate: the memories already captured from the session are shown to the model, and a
  candidate whose title matches one of them is skipped. A candidate near-identical to any active
  or retracted memory (``quipu.index.near``; a retracted one was taken out of recall by a person)
  is not written either: it is skipped and logged as a duplicate;
  inside a project with its own store, one of the per-user store too (the hook recalls both).
- Model failures and budget refusals are reported in ``CaptureReport.error``; nothing is
  committed then. Capture never raises for them.
"""
from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quipu.capture import enrich, facts, gates
from quipu.capture.gates import Candidate
from quipu.errors import FatalError
from quipu.index import index, near
from quipu.model import Budget, BudgetExceeded, MeteredModel, Model, ModelError
from quipu.prompt import codex, fence, locate, transcript
from quipu.store import layers, secrets_scan
from quipu.store.locks import file_lock
from quipu.store.memory import Memory, new_id, now_utc
from quipu.store.store import Store

MAX_SESSION_CHARS = 60_000
MAX_TURN_CHARS = 6_000
HEAD_SHARE = 1 / 3          # of the session budget for its start; the rest goes to its end
PROMPT_OVERHEAD = 6_000     # instructions and the schema, counted against a character budget
LOG_NAME = "capture.log"
CALLS_LOG = "model-calls.jsonl"
MAX_CANDIDATES = 20
LOCK_NAME = "capture.lock"

CANDIDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["candidates"],
    "properties": {
        "candidates": {
            "type": "array",
            "maxItems": MAX_CANDIDATES,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["class", "title", "statement", "outcome", "kind", "said_by", "quote", "topics",
                             "entities", "aliases", "subject", "value", "scope", "profile_prefix",
                             "stable_for_months"],
                "properties": {
                    "class": {"enum": [*gates.CAPTURE_CLASSES, "event"]},
                    "title": {"type": "string"},
                    "statement": {"type": "string"},
                    "description": {"type": "string"},
                    "outcome": {"enum": list(gates.OUTCOMES)},
                    "kind": {"enum": list(gates.KINDS)},
                    "said_by": {"enum": ["user", "assistant"]},
                    "quote": {"type": "string"},
                    "topics": {"type": "array", "maxItems": 6, "items": {"type": "string"}},
                    "entities": {"type": "array", "maxItems": 6, "items": {"type": "string"}},
                    "aliases": {"type": "array", "maxItems": 8, "items": {"type": "string"}},
                    "subject": {"type": "string"},
                    "value": {"type": "string"},
                    "scope": {"enum": ["user", "project"]},
                    "profile_prefix": {"enum": ["", *gates.PROFILE_PREFIXES]},
                    "stable_for_months": {"type": "integer"},
                },
            },
        }
    },
}

# One call per capture; room for the whole bounded session, the instructions and the schema.
DEFAULT_BUDGET = Budget(max_calls=1, max_chars=MAX_SESSION_CHARS + PROMPT_OVERHEAD + 6_000)

INSTRUCTIONS = """\
Below is one whole working session between a user and a coding assistant. Propose the memories worth
keeping for future sessions. Read to the end first: a hypothesis the session later refuted, or a fix that
never worked, is not a memory.

For each candidate give:
- class: preference (what the user likes), rule (a standing rule the user gave), fact (a durable fact about
  a person, organisation, product or project; give subject and value), reference (durable technical
  knowledge), project-note (durable knowledge about this project), event (a one-off happening).
- title (short) and statement: one or two declarative sentences that state a claim ("The user prefers X",
  "Deploys of shop-api go through CI"), never a command ("always do X", "never do X").
- outcome: held if it was still true at the end of the session, refuted if the session showed it wrong,
  unknown if the session never settled it.
- kind: durable, or what makes it not worth keeping: transient-error (timeouts, 503s, rate limits, network
  trouble), environment-failure (something failed only on this machine), tool-complaint ("X doesn't work"),
  one-off-story, hypothesis.
- said_by and quote: who stated it; if the user, their exact words copied from the session.
- topics, entities, aliases: aliases are phrases a person would type when they need this memory, in words
  the statement does not already use (paraphrases, symptoms, questions).
- subject and value: for a fact, what it is about and its current value; otherwise empty strings.
- scope: user (true across projects) or project (true of this project only).
- profile_prefix and stable_for_months: for a durable fact about the user themself, one of Identity,
  Preference, Environment, Working style, and how many months it will plausibly stay true; otherwise ""
  and 0.
Propose nothing rather than something weak. Never copy secrets, keys, tokens or passwords."""


@dataclass
class CaptureReport:
    session: str
    turns: int = 0
    chars_sent: int = 0
    candidates: int = 0
    captured: list[str] = field(default_factory=list)        # memory ids
    facts: list[str] = field(default_factory=list)           # fact note ids updated
    profile: list[str] = field(default_factory=list)         # profile entries added
    skipped: list[str] = field(default_factory=list)         # titles already captured from this session, or duplicates
    duplicate_of: dict[str, str] = field(default_factory=dict)  # a skipped title: the memory it nearly repeats
    refused: list[tuple[str, str]] = field(default_factory=list)  # (gate, redacted excerpt)
    error: str | None = None

    @property
    def refused_by_gate(self) -> dict[str, int]:
        return dict(Counter(gate for gate, _ in self.refused))

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session, "turns": self.turns, "chars_sent": self.chars_sent,
            "candidates": self.candidates, "captured": self.captured, "facts": self.facts,
            "profile": self.profile, "skipped": self.skipped, "duplicate_of": self.duplicate_of,
            "refused": [{"gate": g, "excerpt": e} for g, e in self.refused],
            "refused_by_gate": self.refused_by_gate, "error": self.error,
        }


# ------------------------------------------------------------------------------ the session text

def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit:,} characters cut ...]\n{text[-half:]}"


def session_text(turns: list[tuple[str, str]], max_chars: int = MAX_SESSION_CHARS) -> str:
    """The session as ``[user]``/``[assistant]`` blocks, secrets redacted, at most ~``max_chars``.

    When too long, whole turns are kept from the start (a third of the room) and from the end
    (the rest), with a marker saying how much of the middle was left out."""
    blocks = [f"[{role}]\n{_clip(secrets_scan.redact(text).strip(), MAX_TURN_CHARS)}" for role, text in turns]
    if sum(len(b) + 2 for b in blocks) <= max_chars:
        return "\n\n".join(blocks)
    head: list[str] = []
    used = 0
    for block in blocks:
        if used + len(block) + 2 > max_chars * HEAD_SHARE:
            break
        head.append(block)
        used += len(block) + 2
    tail: list[str] = []
    for block in reversed(blocks[len(head):]):
        if used + len(block) + 2 > max_chars:
            break
        tail.append(block)
        used += len(block) + 2
    tail.reverse()
    left = len(blocks) - len(head) - len(tail)
    marker = f"[... {left} turn(s) from the middle of the session left out for length ...]"
    return "\n\n".join([*head, marker, *tail])


def capture_prompt(session: str, already: list[str]) -> str:
    seen = ""
    if already:
        seen = ("\n\nAlready captured from this session (do not propose these again):\n"
                + "\n".join(f"- {title}" for title in already))
    return f"{INSTRUCTIONS}{seen}\n\n<session>\n{session}\n</session>"


# ------------------------------------------------------------------------------ the log

def _log(store: Store, record: dict[str, Any]) -> None:
    """One JSON line in <store>/.cache/capture.log; every text in it is redacted first."""
    clean = {k: secrets_scan.redact(v) if isinstance(v, str) else v for k, v in record.items()}
    clean = {"time": now_utc(), **clean}
    try:
        store.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(store.cache_dir / LOG_NAME, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(clean, ensure_ascii=False) + "\n")
    except OSError:
        pass  # a log that cannot be written never stops capture


# ------------------------------------------------------------------------------ capture

def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _already_captured(store: Store, session_id: str) -> list[str]:
    rows = index.rows(store, "SELECT title FROM memories WHERE session = ? ORDER BY created_ts, id", (session_id,))
    return [r["title"] for r in rows]


def _user_said(quote: str, user_turns: list[str]) -> bool:
    quote = _norm(quote)
    return len(quote) >= 8 and any(quote in _norm(turn) for turn in user_turns)


def _project_of(path: str) -> str | None:
    """The absolute folder a session ran in (``locate.project_field`` makes it a project)."""
    for record in transcript.records(path):
        meta = codex.meta(record)  # a Codex rollout names it in its first record
        cwd = meta.get("cwd") if meta is not None else record.get("cwd")
        if isinstance(cwd, str) and os.path.isabs(cwd):
            return cwd
    return None


def _memory_from(c: Candidate, session_id: str, origin: str, project: str | None) -> Memory:
    aliases, _dropped = enrich.filter_aliases(c.aliases, c.title, c.description, c.statement)
    fields: dict[str, Any] = {
        "id": new_id(),
        "title": c.title,
        "description": c.description,
        "class": c.cls,
        "topics": list(c.topics),
        "entities": list(c.entities),
        "aliases": aliases,
        "origin": origin,
        "created": now_utc(),
        "session": session_id,
        "project": project if c.scope == "project" else None,
    }
    return Memory.create(fields, c.statement.strip() + "\n", source="captured memory")


def _metered(store: Store, model: Model, budget: Budget | None) -> Model:
    if isinstance(model, MeteredModel) or budget is None:
        return model
    return MeteredModel(model, budget, store.cache_dir / CALLS_LOG)


def _capture_lock(store: Store) -> contextlib.AbstractContextManager[None]:
    """One capture at a time per store: a pre-compact and a session end of one session queue up,
    and the second sees what the first committed (and tells the model)."""
    return file_lock(store.cache_dir / LOCK_NAME)


def capture_session(
    store: Store,
    transcript_path: str | os.PathLike[str],
    session_id: str,
    model: Model,
    budget: Budget | None = None,
    *,
    max_chars: int = MAX_SESSION_CHARS,
    sweep: str | None = None,
) -> CaptureReport:
    """Propose, gate and commit the memories of one session; see the module contract."""
    with _capture_lock(store):
        return _capture(store, str(transcript_path), session_id, model, budget, max_chars, sweep)


def _capture(store: Store, path: str, session_id: str, model: Model, budget: Budget | None, max_chars: int,
             sweep: str | None) -> CaptureReport:
    from quipu.capture import (
        profile,  # the card is optional to capture; import it only when used
    )

    report = CaptureReport(session=session_id)
    try:
        turns = transcript.conversation(path)
    except OSError as exc:
        report.error = f"cannot read the transcript {path}: {exc}"
        return report
    report.turns = len(turns)
    user_turns = [text for role, text in turns if role == "user"]
    if not user_turns:
        _log(store, {"session": session_id, "decision": "nothing", "reason": "no human prompt in the transcript"})
        return report
    if budget is not None and budget.max_chars is not None:
        max_chars = max(1_000, min(max_chars, budget.max_chars - PROMPT_OVERHEAD - len(json.dumps(CANDIDATE_SCHEMA))))
    already = _already_captured(store, session_id)
    prompt = fence.visible(capture_prompt(session_text(turns, max_chars), already))
    report.chars_sent = len(prompt)
    try:
        answer = _metered(store, model, budget).complete(prompt, CANDIDATE_SCHEMA, purpose="capture")
    except (ModelError, BudgetExceeded) as exc:
        report.error = str(exc).split("\n", 1)[0]
        _log(store, {"session": session_id, "decision": "error", "reason": report.error})
        return report
    seen = {_norm(t) for t in already}
    kept = layers.read_together(store)  # inside a project with its own store the hook recalls both
    project = _project_of(path)
    project = locate.project_field(str(store.root.absolute()), project) if project else None
    for item in answer["candidates"]:
        c = Candidate.create(item)
        report.candidates += 1
        refusal = gates.check(c)
        if refusal is not None:
            report.refused.append((refusal.gate, c.excerpt()))
            _log(store, {"session": session_id, "decision": "refused", "gate": refusal.gate,
                         "reason": refusal.detail if refusal.gate != "secret" else "looks like a secret",
                         "excerpt": c.excerpt()})
            continue
        if _norm(c.title) in seen:
            report.skipped.append(c.title)
            continue
        found = near.near_duplicate_in(kept, c.title, c.statement, retracted=True) if c.cls != "fact" else None
        if found is not None:
            report.skipped.append(c.title)
            report.duplicate_of[c.title] = found[1].id
            _log(store, {"session": session_id, "decision": "duplicate", "of": found[1].id, "excerpt": c.excerpt(),
                         **({"retracted": True} if found[1].status == "retracted" else {})})
            continue
        seen.add(_norm(c.title))
        origin = "user" if c.said_by == "user" and _user_said(c.quote, user_turns) else "session"
        try:
            if c.cls == "fact":
                change = facts.set_fact(store, c.subject, c.value, origin=origin, session=session_id, sweep=sweep)
                memory_id = change.id
                if change.commit:
                    report.facts.append(change.id)
            else:
                memory = _memory_from(c, session_id, origin, project)
                store.add(memory, action="capture", session=session_id, sweep=sweep)
                memory_id = memory.id
                report.captured.append(memory.id)
        except FatalError as exc:
            report.refused.append(("invalid", c.excerpt()))
            _log(store, {"session": session_id, "decision": "refused", "gate": "invalid",
                         "reason": str(exc).split("\n", 1)[0], "excerpt": c.excerpt()})
            continue
        _log(store, {"session": session_id, "decision": "captured", "class": c.cls, "excerpt": c.excerpt()})
        if c.profile_prefix and c.stable_for_months >= profile.MIN_STABLE_MONTHS and c.scope == "user":
            _offer_to_card(store, report, c, origin, memory_id, sweep)
    index.ensure_fresh(store)
    return report


def _card_refusal(c: Candidate, origin: str, text: str) -> gates.Refusal | None:
    """Why the always-on card refuses the line ``text`` of ``c`` (it stays a memory), or None."""
    refusal = gates.check_card(f"{text}\n{c.claim_text()}")
    if refusal is not None:
        return refusal
    if origin != "user":
        said = "the model inferred it" if c.said_by != "user" else "the quoted words are not in any human turn"
        return gates.Refusal("not-said-by-user", f"{said}; the card takes only what the user said")
    return None


def _offer_to_card(store: Store, report: CaptureReport, c: Candidate, origin: str, memory_id: str,
                   sweep: str | None) -> None:
    from quipu.capture import profile

    text = c.statement if len(c.statement) < 120 else c.title
    refusal = _card_refusal(c, origin, text)
    reason = refusal.detail if refusal is not None else ""
    if refusal is None:
        try:
            added = profile.add_line(store, c.profile_prefix, text, origin=origin, stable_months=c.stable_for_months,
                                     sweep=sweep, divert=False, memories=(memory_id,)).added
        except FatalError as exc:
            reason = str(exc).split("\n", 1)[0]
        else:
            if added is not None:
                report.profile.append(added.entry)
            return
    gate = f"profile-{refusal.gate}" if refusal is not None else "profile-invalid"
    report.refused.append((gate, c.excerpt()))
    _log(store, {"session": report.session, "decision": "refused", "gate": gate, "reason": reason,
                 "excerpt": c.excerpt()})


def log_path(store: Store) -> Path:
    return store.cache_dir / LOG_NAME
