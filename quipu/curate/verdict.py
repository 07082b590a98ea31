"""The model's verdict on a pair of memories, and the four guards that decide whether it may act.

Contract:
- ``SCHEMA`` is the fixed JSON shape every backend must answer in; ``build_prompt`` renders the
  two memories (older first) as fenced data and says "when in doubt, say partial".
- ``Verdict.create`` turns an answer into a ``Verdict`` or raises ``BadVerdict`` with the reason
  to log: a confidence outside 0..1, a winner or loser that is not one of the pair's two ids.
- ``check_guards`` runs the guards as code, never as prompt text. A supersession is applied
  only when every guard passes; anything else the model saw tension in goes to review.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from quipu.curate.corpus import Entry
from quipu.store.memory import Memory

# The guarded curator's four guards and their thresholds come from the article's sweep
# (docs: mission.md, "Self-healing memory is two systems"): unguarded, the model pass was ~55%
# right and every mistake was confident; with these four guards the same sweep auto-applied
# exactly one supersession, the right one. Never lower them to make the curator look productive.
MIN_CONFIDENCE = 0.75      # guard "confidence": the model's own confidence, 0..1
MIN_SHARED_TOPICS = 2      # guard "overlap": two shared topics...
MIN_SHARED_ENTITIES = 2    # ...or two shared entities; one shared technology word never counts
GUARDS = ("confidence", "overlap", "class", "scope")
ACTING_VERDICTS = ("supersedes", "duplicate")  # verdicts that would retire the loser
VERDICTS = ("supersedes", "partial", "duplicate", "unrelated")
MAX_BODY_CHARS = 2000      # per memory in a prompt; the budget counts what is sent

_CLAIMS = {"type": "array", "items": {"type": "string"}, "maxItems": 40}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict", "winner", "loser", "confidence", "covered_claims", "loser_claims",
                 "full_scope", "reason"],
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "winner": {"type": "string"},
        "loser": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "covered_claims": _CLAIMS,
        "loser_claims": _CLAIMS,
        "full_scope": {"type": "boolean"},
        "reason": {"type": "string"},
    },
}

INSTRUCTIONS = """\
Two memories from one person's memory store follow, older first. Decide how they relate.

verdict:
- "supersedes": the winner makes the loser outdated: same subject, same scope, newer or corrected,
  and the winner states or replaces every claim the loser makes.
- "duplicate": both say the same thing; the winner is the one to keep.
- "partial": they overlap or conflict on part of their content, one settles only some of the
  other's points, or one only points to the other.
- "unrelated": no tension between them.
winner / loser: the two ids below (for "unrelated", either order).
loser_claims: every separate claim the loser makes, one short sentence each.
covered_claims: the loser's claims that the winner also states or replaces, copied from loser_claims.
full_scope: true only when covered_claims holds every one of loser_claims.
confidence: from 0 to 1.
A standing rule the user gave and a note about something else are different subjects even when
they share words. One shared technology name (a service, a library, a product) does not make two
memories about the same subject. A note that points to another memory does not replace it.
When in doubt, say "partial".
"""


class BadVerdict(ValueError):
    """An answer that cannot be acted on; the message is the reason logged for skipping it."""


def _render(memory: Memory) -> str:
    body = memory.body.strip()
    if len(body) > MAX_BODY_CHARS:
        body = body[:MAX_BODY_CHARS] + " [...]"
    lines = [
        f'<memory id="{memory.id}">',
        f"class: {memory.cls}",
        f"created: {memory.created}",
        f"title: {memory.title}",
    ]
    if memory.description:
        lines.append(f"description: {memory.description}")
    if memory.topics:
        lines.append(f"topics: {', '.join(memory.topics)}")
    if memory.entities:
        lines.append(f"entities: {', '.join(memory.entities)}")
    if memory.project:
        lines.append(f"project: {memory.project}")
    lines += ["body:", body.replace("</memory", "</ memory"), "</memory>"]
    return "\n".join(lines)


def build_prompt(first: Memory, second: Memory) -> str:
    return f"{INSTRUCTIONS}\n{_render(first)}\n\n{_render(second)}\n"


def _claims(value: object) -> tuple[str, ...]:
    return tuple(str(c) for c in value) if isinstance(value, list) else ()


@dataclass(frozen=True)
class Verdict:
    verdict: str
    winner: str
    loser: str
    confidence: float
    covered_claims: tuple[str, ...]
    loser_claims: tuple[str, ...]
    full_scope: bool
    reason: str

    @classmethod
    def create(cls, answer: dict[str, Any], pair: tuple[str, str]) -> Verdict:
        verdict = answer.get("verdict")
        if verdict not in VERDICTS:
            raise BadVerdict(f"unknown verdict {verdict!r}")
        confidence = answer.get("confidence")
        if (isinstance(confidence, bool) or not isinstance(confidence, (int, float))
                or math.isnan(confidence) or not 0.0 <= confidence <= 1.0):
            raise BadVerdict(f"confidence {confidence!r} is outside 0..1")
        winner, loser = answer.get("winner"), answer.get("loser")
        if verdict == "unrelated":
            winner, loser = pair
        else:
            for role, value in (("winner", winner), ("loser", loser)):
                if value not in pair:
                    raise BadVerdict(f"{role} {value!r} is an unknown memory id (the pair is {pair[0]}, {pair[1]})")
            if winner == loser:
                raise BadVerdict(f"winner and loser are both {winner!r}")
        return cls(
            verdict=str(verdict), winner=str(winner), loser=str(loser), confidence=float(confidence),
            covered_claims=_claims(answer.get("covered_claims")), loser_claims=_claims(answer.get("loser_claims")),
            full_scope=answer.get("full_scope") is True, reason=str(answer.get("reason") or "").strip(),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict, "winner": self.winner, "loser": self.loser, "confidence": self.confidence,
            "covered_claims": list(self.covered_claims), "loser_claims": list(self.loser_claims),
            "full_scope": self.full_scope, "reason": self.reason,
        }


@dataclass(frozen=True)
class Guard:
    name: str
    passed: bool
    detail: str


def _claim_key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".;")


def check_guards(verdict: Verdict, winner: Entry, loser: Entry) -> list[Guard]:
    """The four guards, in order; a supersession may be applied only when all pass."""
    topics = sorted(winner.topics & loser.topics)
    entities = sorted(winner.entities & loser.entities)
    overlap = len(topics) >= MIN_SHARED_TOPICS or len(entities) >= MIN_SHARED_ENTITIES
    shared = ", ".join(topics + entities) or "nothing"
    loser_claims = {_claim_key(c) for c in verdict.loser_claims if c.strip()}
    covered = {_claim_key(c) for c in verdict.covered_claims}
    missing = loser_claims - covered
    scope = verdict.full_scope and bool(loser_claims) and not missing
    if not verdict.full_scope:
        scope_detail = "the verdict says the winner does not cover the loser's full scope"
    elif not loser_claims:
        scope_detail = "the verdict lists no claims of the loser"
    else:
        scope_detail = f"{len(loser_claims) - len(missing)} of {len(loser_claims)} loser claims covered"
    return [
        Guard("confidence", verdict.confidence >= MIN_CONFIDENCE,
              f"{verdict.confidence:.2f} (needs {MIN_CONFIDENCE})"),
        Guard("overlap", overlap,
              f"{len(topics)} shared topics, {len(entities)} shared entities ({shared})"),
        Guard("class", winner.memory.cls == loser.memory.cls, f"{winner.memory.cls} vs {loser.memory.cls}"),
        Guard("scope", scope, scope_detail),
    ]
