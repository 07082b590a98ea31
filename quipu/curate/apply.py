"""Writing the curator's decisions: each one its own commit, nothing ever deleted.

Contract:
- ``apply_supersession``: a verdict that passed all four guards becomes ``Store.supersede`` (an
  event on the loser naming the winner) with the sweep id, verdict, confidence and the guards in
  the commit trailers, so ``git show`` of the commit is the decision as a diff.
- ``queue_tension``: a verdict the model saw tension in but that may not act (``partial``, or a
  supersession that failed a guard) becomes a review item: an event ``{"action": "review",
  "review_id": "rv-...", ...}`` on the loser naming the winner, in a commit of its own.
- ``flag_finding``: a deterministic finding becomes a label event (``duplicate`` or
  ``dead-path``) that is also a review item.
- Commit trailers: ``Quipu-Sweep``, ``Quipu-Verdict``, ``Quipu-Confidence``, ``Quipu-Guards`` (the
  guards that passed, or ``none``), ``Quipu-Guards-Failed`` (which failed and why),
  ``Quipu-Review`` and ``Quipu-Other`` (the second memory of a review item).
"""
from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from quipu.curate.deterministic import Finding
from quipu.curate.verdict import Guard, Verdict
from quipu.store.store import Store


def new_review_id() -> str:
    return f"rv-{secrets.token_hex(4)}"


def guard_trailers(guards: Sequence[Guard]) -> dict[str, str | None]:
    passed = [g.name for g in guards if g.passed]
    failed = [f"{g.name} ({g.detail})" for g in guards if not g.passed]
    return {"Quipu-Guards": ",".join(passed) or "none", "Quipu-Guards-Failed": "; ".join(failed) or None}


def _verdict_trailers(verdict: Verdict, guards: Sequence[Guard], sweep: str | None) -> dict[str, str | None]:
    return {
        "Quipu-Sweep": sweep,
        "Quipu-Verdict": verdict.verdict,
        "Quipu-Confidence": f"{verdict.confidence:.2f}",
        **guard_trailers(guards),
    }


def apply_supersession(store: Store, verdict: Verdict, guards: Sequence[Guard], sweep: str | None) -> str:
    if not all(g.passed for g in guards):  # the guards are the law here, whatever the caller thought
        raise ValueError("a supersession may be applied only when every guard passed")
    return store.supersede(
        verdict.loser, verdict.winner, sweep=sweep, reason=verdict.reason,
        extra_trailers=_verdict_trailers(verdict, guards, sweep),
    )


def queue_tension(store: Store, verdict: Verdict, guards: Sequence[Guard], sweep: str | None) -> tuple[str, str]:
    """Queue a tension for review; returns (review id, commit)."""
    review_id = new_review_id()
    event: dict[str, Any] = {
        "action": "review", "review_id": review_id, "kind": "tension", "other": verdict.winner,
        "sweep": sweep, **verdict.to_json(),
        "guards": {g.name: {"passed": g.passed, "detail": g.detail} for g in guards},
    }
    why = ", ".join(g.name for g in guards if not g.passed) or verdict.verdict
    sha = store.add_event(
        verdict.loser, event,
        summary=f"quipu: review {verdict.loser} vs {verdict.winner}: {verdict.verdict} ({why})",
        trailers={"Quipu-Action": "review", "Quipu-Other": verdict.winner, "Quipu-Review": review_id,
                  **_verdict_trailers(verdict, guards, sweep)},
        also_require=(verdict.winner,),
    )
    return review_id, sha


def flag_finding(store: Store, finding: Finding, sweep: str | None) -> tuple[str, str]:
    """Label a deterministic finding and queue it for review in one commit; returns (review id, commit)."""
    review_id = new_review_id()
    event: dict[str, Any] = {
        "action": "label", "label": finding.kind, "set": True, "detail": finding.detail, "sweep": sweep,
        "review_id": review_id, "kind": finding.kind, "other": finding.other,
    }
    if finding.paths:
        event["paths"] = list(finding.paths)
    sha = store.add_event(
        finding.memory, event,
        summary=f"quipu: label {finding.memory} {finding.kind}: {finding.detail}",
        trailers={"Quipu-Action": "label", "Quipu-Label": finding.kind, "Quipu-Sweep": sweep,
                  "Quipu-Other": finding.other, "Quipu-Review": review_id},
        also_require=(finding.other,) if finding.other else (),
    )
    return review_id, sha
