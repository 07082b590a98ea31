"""From candidates to inert drafts: at most one model call per candidate, then the gate, then one commit.

Contract:
- ``draft_all(store, candidates, model, context)`` drafts each candidate not drafted or refused
  before, nor taken back: a candidate whose draft or refusal a person reverted is drafted again
  only when named in ``again`` (``quipu skills draft --again``). A candidate seen in fewer than
  three sessions, or with no error in its sessions for a skill to name, is refused without a
  model call; so is every candidate once the model is unavailable or the budget
  (``quipu.model.MeteredModel``) is spent: the run stops there.
- The model sees the steps, the sessions' projects and the error messages, all as data (its system
  prompt says so), and answers ``{name, description, failure, body}``; quipu writes the
  frontmatter itself, so a draft cannot add ``allowed-tools``, ``hooks`` or any other field, and
  the gate refuses any text Claude Code would act on as the skill loads (``gate.check_loading``).
- An admitted draft goes to ``skills/drafts/<name>/``, a refused one to the review queue with every
  reason (``quipu.skills.queue``); each is one commit. Its record (``draft.json`` or
  ``refusal.json``) holds the candidate's steps, session ids, projects and error messages, never
  the words of a prompt around them (``quipu.skills.detect.error_texts``).
"""
from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from quipu.model import BudgetExceeded, InvalidAnswer, Model, ModelError, ModelUnavailable
from quipu.prompt import fence
from quipu.skills import gate, queue
from quipu.skills.detect import Candidate
from quipu.store.store import Store

PURPOSE = "skill-draft"
SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["name", "description", "failure", "body"],
    "properties": {
        "name": {"type": "string"}, "description": {"type": "string"},
        "failure": {"type": "string"}, "body": {"type": "string"},
    },
}
PROMPT = """Write a Claude Code skill (the markdown body of a SKILL.md, no frontmatter) for the procedure below.
It was repeated in {sessions} separate sessions. Rules the answer is checked against, in code:
- name: lowercase words joined by hyphens, not a Claude Code built-in command.
- failure: quote, word for word, one of the errors listed below that this procedure resolved.
- body: {min_body} to {max_body} characters; the steps as a short numbered list with the exact commands,
  the failure it prevents, and when to use it. Cite only commands and paths that appear below.
- no claims such as "saves time"; nothing that weakens a safety check.

Steps (paths and values abstracted as <path>, <arg>, <n>):
{steps}

Projects: {projects}

Errors seen in those sessions:
{failures}
"""


@dataclass
class Outcome:
    candidate: str
    name: str
    admitted: bool
    reasons: list[str] = field(default_factory=list)
    commit: str | None = None
    called_model: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "name": self.name, "admitted": self.admitted,
                "reasons": self.reasons, "commit": self.commit, "called_model": self.called_model}


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: int = 0  # candidates drafted, refused or taken back in an earlier run
    stopped: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"outcomes": [o.to_json() for o in self.outcomes], "skipped": self.skipped, "stopped": self.stopped,
                "admitted": sum(o.admitted for o in self.outcomes)}


def prompt_for(candidate: Candidate) -> str:
    return PROMPT.format(sessions=len(candidate.sessions), min_body=gate.MIN_BODY_CHARS, max_body=gate.MAX_BODY_CHARS,
                         steps="\n".join(f"{i}. {s}" for i, s in enumerate(candidate.steps, 1)),
                         projects=", ".join(candidate.projects) or "(none recorded)",
                         failures="\n".join(f"- {f}" for f in candidate.failures) or "(none)")


def _record(candidate: Candidate, reasons: list[str], model: str | None) -> dict[str, Any]:
    return {**{k: v for k, v in candidate.to_json().items() if k not in ("id",)}, "candidate": candidate.id,
            "reasons": reasons, "model": model, "time": queue.now()}


def draft_one(store: Store, candidate: Candidate, model: Model, context: gate.Context) -> Outcome:
    """One candidate through the model (at most one call) and the gate; one commit either way.
    Raises ``ModelUnavailable`` and ``BudgetExceeded`` (the run stops); ``InvalidAnswer`` is a refusal."""
    model_name = str(getattr(model, "name", type(model).__name__))
    early = [r for r in (gate.check_sessions(candidate),
                         None if candidate.failures else "no error in its sessions for a skill to name") if r]
    if early:  # no model call can make these pass
        commit = queue.write_refusal(store, "", None, _record(candidate, early, None))
        return Outcome(candidate.id, "", False, early, commit)
    try:
        answer = model.complete(fence.visible(prompt_for(candidate)), SCHEMA, purpose=PURPOSE)
    except InvalidAnswer as e:
        reasons = [f"the model's answer was unusable: {str(e).splitlines()[0]}"]
        commit = queue.write_refusal(store, "", None, _record(candidate, reasons, model_name))
        return Outcome(candidate.id, "", False, reasons, commit, True)
    draft = gate.Draft(answer["name"].strip(), answer["description"], answer["failure"], answer["body"])
    reasons = gate.check(draft, candidate, context)
    data = {**_record(candidate, reasons, model_name), "name": draft.name, "failure": draft.failure}
    if draft.name in queue.draft_names(store):
        reasons = reasons + [f"a draft named {draft.name!r} is already in the store"]
        data["reasons"] = reasons
    if reasons:
        commit = queue.write_refusal(store, draft.name, draft.skill_md(), data)
        return Outcome(candidate.id, draft.name, False, reasons, commit, True)
    commit = queue.write_draft(store, draft.name, draft.skill_md(), data)
    return Outcome(candidate.id, draft.name, True, [], commit, True)


def draft_all(store: Store, candidates: Iterable[Candidate], model: Model | None, context: gate.Context,
              again: Collection[str] = ()) -> Report:
    """Draft each candidate not drafted, refused or taken back before; ``again``: candidates taken
    back that a person asks to have drafted anew."""
    report = Report()
    known = queue.known_candidates(store, again)
    for candidate in candidates:
        if candidate.id in known:
            report.skipped += 1
            continue
        if model is None:
            report.stopped = "no model chosen"
            break
        try:
            report.outcomes.append(draft_one(store, candidate, model, context))
        except (ModelUnavailable, BudgetExceeded) as e:
            report.stopped = str(e)
            break
        except ModelError as e:  # a failed call: this candidate waits for the next run
            report.stopped = None
            report.outcomes.append(Outcome(candidate.id, "", False, [f"model call failed: {e}"], None, True))
    return report


def as_text(outcome: Outcome) -> str:
    head = f"{'admitted' if outcome.admitted else 'refused'} {outcome.name or outcome.candidate}"
    return head + ("" if outcome.admitted else ": " + "; ".join(outcome.reasons))


