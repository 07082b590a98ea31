"""The review queue page: each open item with both memories side by side, a word diff, the model's
verdict, its confidence, the guards, and Accept / Reject.

Contract:
- The queue is ``quipu.curate.review.items``, newest first, ``PAGE`` items a page; and a resolution is ``review.accept`` or
  ``review.reject``: exactly what `quipu review accept|reject` does, one commit each.
- A memory missing from the store shows as such; every field shows as text.
"""
from __future__ import annotations

from typing import Any

from quipu.curate import review
from quipu.errors import NotFound
from quipu.serve.html import Safe, esc, form, h, join, pager, url, word_diff
from quipu.serve.state import Viewer
from quipu.store.memory import Memory

PAGE = 20
ROLES = {"tension": ("old (loser)", "new (winner)"), "proposal": ("old (loser)", "new (winner)"),
         "duplicate": ("flagged", "original"), "dead-path": ("flagged", "")}


def _memory(viewer: Viewer, memory_id: str | None) -> Memory | None:
    if not memory_id:
        return None
    try:
        return viewer.store.get(memory_id)
    except NotFound:
        return None


def _text(memory: Memory | None) -> str:
    return "" if memory is None else f"{memory.title}\n\n{memory.body.strip()}"


def _column(role: str, memory_id: str | None, memory: Memory | None, diffed: Safe) -> Safe:
    if not role:
        return Safe("")
    if memory is None:
        return h('<section class="side"><h3>{role}: {id}</h3><p class="missing">(not in the store)</p></section>',
                 role=role, id=memory_id or "-")
    facts = [memory.cls, f"created {memory.created[:10]}", f"status {memory.status}"]
    if memory.topics:
        facts.append("topics: " + ", ".join(memory.topics))
    return h('<section class="side"><h3>{role}: <a href="{u}">{id}</a></h3><p class="facts">{facts}</p>'
             '<pre class="text">{diffed}</pre></section>',
             role=role, u=url(f"/memories/{memory.id}"), id=memory.id, facts=" · ".join(facts), diffed=diffed)


def _guards(event: dict[str, Any]) -> Safe:
    guards = event.get("guards")
    if not isinstance(guards, dict) or not guards:
        return Safe("")
    rows = []
    for name, guard in guards.items():
        passed = guard.get("passed") if isinstance(guard, dict) else guard
        detail = guard.get("detail", "") if isinstance(guard, dict) else ""
        rows.append(h('<li class="{css}"><span class="mark">{mark}</span> {name} <span class="detail">{detail}'
                      '</span></li>', css="pass" if passed else "fail", mark="pass" if passed else "fail",
                      name=name, detail=detail))
    return h('<ul class="guards">{rows}</ul>', rows=join(rows))


def _verdict(item: review.ReviewItem) -> Safe:
    e = item.event
    parts = [h("<strong>{v}</strong>", v=item.verdict)]
    if "confidence" in e:
        try:
            parts.append(h(" confidence {c}", c=f"{float(e['confidence']):.2f}"))
        except (TypeError, ValueError):
            parts.append(h(" confidence {c}", c=e["confidence"]))
    if e.get("sweep"):
        parts.append(h(' · sweep <span class="id">{s}</span>', s=e["sweep"]))
    reason = e.get("reason") or e.get("detail") or ""
    return h('<p class="verdict">{parts}</p>{reason}', parts=join(parts),
             reason=h('<p class="reason">{r}</p>', r=reason) if reason else Safe(""))


def item_html(viewer: Viewer, item: review.ReviewItem) -> Safe:
    left_role, right_role = ROLES.get(item.kind, ("memory", "other"))
    old, new = _memory(viewer, item.memory), _memory(viewer, item.other)
    left, right = word_diff(_text(old), _text(new)) if new is not None else (esc(_text(old)), Safe(""))
    actions = Safe("")
    if item.is_open:
        rid = item.review_id
        actions = h('<div class="actions">{a}{r}</div>',
                    a=form(url(f"/review/{rid}/accept"), viewer.csrf, "Accept", css="accept"),
                    r=form(url(f"/review/{rid}/reject"), viewer.csrf, "Reject", css="reject"))
    status = "open" if item.is_open else f"{item.resolution}ed {item.resolved_at or ''}".strip()
    return h('<article class="review-item" id="{rid}" data-review="{rid}"><h2>{kind} <span class="id">{rid}</span>'
             ' <span class="status">{status}</span></h2>{verdict}{guards}<div class="pair">{left}{right}</div>'
             '{actions}</article>',
             rid=item.review_id, kind=item.kind, status=status, verdict=_verdict(item), guards=_guards(item.event),
             left=_column(left_role, item.memory, old, left), right=_column(right_role, item.other, new, right),
             actions=actions)


def body(viewer: Viewer, *, show_all: bool = False, page: int = 1) -> Safe:
    queue = review.items(viewer.store, include_closed=show_all)
    toggle = h('<p><a href="{u}">{t}</a></p>', u=url("/review", all="" if show_all else "1"),
               t="only open items" if show_all else "show resolved items too")
    if not queue:
        return h('{toggle}<p class="empty">Nothing to review.</p>', toggle=toggle)
    open_count = sum(i.is_open for i in queue)
    newest = queue[::-1][(page - 1) * PAGE: page * PAGE]
    return h('{toggle}<p>{n} open item{s}, newest first.</p>{items}{pager}', toggle=toggle, n=open_count,
             s="" if open_count == 1 else "s", items=join(item_html(viewer, i) for i in newest),
             pager=pager("/review", page, len(queue) > page * PAGE, all="1" if show_all else ""))


def resolve(viewer: Viewer, review_id: str, action: str) -> str:
    """Accept or reject ``review_id`` as `quipu review accept|reject` does; the commit it made."""
    item = review.find(viewer.store, review_id)
    sha = (review.accept if action == "accept" else review.reject)(viewer.store, item.review_id)
    viewer.after_write()
    return sha
