"""The past-conversations pages and the health page.

Contract:
- Search is ``quipu.history.search`` (words and meaning, fused), a turn is shown with its context
  (``turns_around``), as `quipu history search` and `quipu history show` print them.
- Forget is ``quipu.history.forget.forget`` for one session, the one deletion: the first POST is a
  dry run that lists what would go, and only a second POST with ``confirm`` removes it.
- Health is ``quipu.doctor.run_checks`` (the always-on layer's budget among them) and the store's
  last capture and last sweep from its log.
"""
from __future__ import annotations

from quipu import doctor
from quipu.history.archive import Layout
from quipu.history.forget import ForgetReport, forget, turns_around
from quipu.history.search import search
from quipu.serve.html import Safe, form, h, join, table, url
from quipu.serve.state import Viewer
from quipu.store.trailers import LogEntry

LAST_LOOKED = 2000  # commits read back to find the last capture and sweep


def search_body(query: str, *, limit: int = 30) -> Safe:
    box = h('<form method="get" action="/history" class="filters" role="search"><input type="search" name="q" '
            'value="{q}" placeholder="search past conversations"><button type="submit">search</button></form>',
            q=query)
    if not query.strip():
        return box
    result = search(query, limit=limit)
    if not result.hits:
        why = "No past turns match." if result.turns else \
            "No past turns are archived yet.\n- run `quipu history index` to archive every transcript"
        return h('{box}<p class="empty">{why}</p>', box=box, why=why)
    rows = [[h('<a href="{u}">{s}:{t}</a>', u=url("/history/turn", session=hit.session, turn=hit.turn),
               s=hit.session[:12], t=hit.turn), hit.ts[:16], hit.project or "(no project)", hit.role,
             " ".join(hit.text.split())[:300]] for hit in result.hits]
    return h('{box}<p class="count">{n} turns; meaning search {m}.</p>{table}', box=box, n=len(result.hits),
             m="on" if result.meaning else "off",
             table=table(("turn", "when", "project", "role", "text"), rows, css="turns"))


def turn_body(viewer: Viewer, session: str, turn: int | None, *, context: int = 3) -> Safe:
    sid, turns = turns_around(Layout.default(), session, turn, context)
    shown = join(h('<article class="turn{cur}" data-turn="{n}"><p class="meta">[{n}] {ts} {role}{branch}</p>'
                   '<pre class="text">{text}</pre></article>', cur=" current" if t.turn == turn else "", n=t.turn,
                   ts=t.ts[:19], role=t.role, branch=f" ({t.branch})" if t.branch else "", text=t.text)
                 for t in turns)
    project = turns[0].project if turns else ""
    forget_form = form(url("/history/forget"), viewer.csrf, "Forget this whole session…", fields={"session": sid},
                       css="danger")
    return h('<p>session <span class="id">{sid}</span> · {project}</p>{shown}<h2>Forget</h2>'
             '<p>Removes every turn of this session from the archive and its index, for good.</p>{form}',
             sid=sid, project=project or "(no project)", shown=shown, form=forget_form)


def forget_body(viewer: Viewer, session: str, *, confirm: bool) -> tuple[Safe, ForgetReport]:
    report = forget(session=session, dry_run=not confirm)
    data = report.to_json()
    listed = join(h("<li>{s}: {what}</li>", s=s["session"],
                    what="the whole session" if s["whole"] else "turns " + ", ".join(map(str, s["turns"][:50])))
                  for s in data["sessions"])
    if confirm:
        return h('<p class="notice">Removed {n} turns:</p><ul>{listed}</ul>', n=data["removed_turns"],
                 listed=listed), report
    again = form(url("/history/forget"), viewer.csrf, f"Yes, forget {data['removed_turns']} turns for good",
                 fields={"session": session, "confirm": "1"}, css="danger")
    return h('<p class="warning">This would remove {n} turns, for good:</p><ul>{listed}</ul>{again}'
             '<p><a href="/history">No, keep them</a></p>', n=data["removed_turns"], listed=listed, again=again), report


def _last(viewer: Viewer) -> list[list[object]]:
    capture: LogEntry | None = None
    sweep: LogEntry | None = None
    for entry in viewer.store.log(limit=LAST_LOOKED):
        if capture is None and entry.trailers.get("Quipu-Session") and entry.action == "capture":
            capture = entry
        if sweep is None and entry.trailers.get("Quipu-Sweep"):
            sweep = entry
        if capture and sweep:
            break
    rows: list[list[object]] = []
    for name, last in (("last capture", capture), ("last sweep", sweep)):
        if last is None:
            rows.append([name, f"none in the last {LAST_LOOKED} commits", ""])
        else:
            ref = last.trailers.get("Quipu-Sweep") or last.trailers.get("Quipu-Session") or ""
            rows.append([name, last.time, h('<a href="{u}">{r}</a>', u=url("/log", sweep=ref) if name == "last sweep"
                                           else url("/log", action="capture"), r=ref)])
    return rows


def health_body(viewer: Viewer) -> Safe:
    checks = doctor.run_checks(viewer.store)
    rows = [[h('<span class="{c}">{t}</span>', c="pass" if c.ok else "fail", t="ok" if c.ok else "problem"), c.name,
             c.summary, join((h("<div>{d}</div>", d=d) for d in c.details))] for c in checks]
    return h('<h2>Checks</h2>{checks}<h2>Capture and sweep</h2>{last}',
             checks=table(("", "check", "summary", "details"), rows, css="checks"),
             last=table(("", "when", ""), _last(viewer)))
