"""Forgetting past turns: the one place quipu deletes, because the archive is the user's own data.

Contract:
- ``forget`` selects turns by session (an id or a unique prefix), project folder (and the folders
  under it), time (``before``) or text (``matching``, case-insensitive, on the archived, redacted
  text); several selectors must all hold. With no selector it refuses (a ``UsageError``).
- The selected turns leave the archive's shelves (rewritten atomically), the FTS index (with
  ``secure_delete`` and an FTS5 merge) and the vector file (rows zeroed), in one locked section,
  and their keys go to ``forgotten``, so a later backfill of a transcript still on disk never
  brings them back; a whole forgotten session stays forgotten as it grows. So do their numbers:
  a turn archived later never takes the number of a forgotten one (``SESSION:TURN`` names one turn
  for good).
- ``dry_run`` reports what would go and changes nothing. The report names every session and turn.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from quipu.errors import FatalError, NotFound, UsageError
from quipu.history import archive, index
from quipu.history.archive import Layout, Turn


@dataclass
class ForgetReport:
    dry_run: bool
    turns: list[Turn] = field(default_factory=list)
    sessions_whole: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        by_session: dict[str, list[int]] = {}
        for t in self.turns:
            by_session.setdefault(t.session, []).append(t.turn)
        return {"dry_run": self.dry_run, "removed_turns": len(self.turns),
                "sessions": [{"session": s, "turns": n, "whole": s in self.sessions_whole}
                             for s, n in sorted(by_session.items())]}


def resolve_session(layout: Layout, text: str) -> str:
    """A session id from an id or a unique prefix of one."""
    archive.upgrade(layout)
    if archive.session_turns(layout, text):
        return text
    found = sorted(archive.session_ids(layout, text))
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(f"no archived session {text!r}\n- find one with `quipu history search WORDS`")
    raise FatalError(f"{text!r} names {len(found)} sessions ({', '.join(found[:5])}...)\n- give more of the id")


def forget(layout: Layout | None = None, *, session: str | None = None, project: str | None = None,
           before: _dt.datetime | None = None, matching: str | None = None, dry_run: bool = False) -> ForgetReport:
    layout = layout or Layout.default()
    if not any((session, project, before, matching)):
        raise UsageError("forget needs something to select\n- name a SESSION, or give --project, --before or --matching")
    report = ForgetReport(dry_run=dry_run)
    with layout.lock():
        sid = resolve_session(layout, session) if session else None
        needle = matching.casefold() if matching else None
        folder = project.rstrip("/") if project else None

        def drop(t: Turn) -> bool:
            if sid is not None and t.session != sid:
                return False
            if folder is not None and t.project != folder and not t.project.startswith(folder + "/"):
                return False
            if before is not None:
                when = t.when
                if when is None or when >= before:
                    return False
            return not (needle is not None and needle not in t.text.casefold())

        paths = [layout.shelf(sid)] if sid else archive.session_files(layout)
        for path in paths:
            if dry_run:
                report.turns += sorted((t for t in archive.read_file(path).values() if drop(t)), key=lambda t: t.turn)
            else:
                report.turns += archive.rewrite_without(layout, path, drop)
        whole = sid is not None and not any((project, before, matching))
        if whole and sid is not None:
            report.sessions_whole.append(sid)
        if dry_run or not report.turns:
            return report
        archive.remember_forgotten(layout, [*(f"{s}/*" for s in report.sessions_whole), *(t.key for t in report.turns),
                                            *archive.numbered(report.turns)])
        if index.is_current(layout):
            writer = index.Writer(layout)
            try:
                writer.delete(t.key for t in report.turns)
            finally:
                writer.close()
    return report


def turns_around(layout: Layout, session: str, turn: int | None, context: int) -> tuple[str, list[Turn]]:
    """The session's id and its turns in order, or only the ``context`` turns either side of
    ``turn``; NotFound names a session or turn the archive does not hold."""
    sid = resolve_session(layout, session)
    turns = sorted(archive.session_turns(layout, sid).values(), key=lambda t: t.turn)
    if turn is None:
        return sid, turns
    at = [i for i, t in enumerate(turns) if t.turn == turn]
    if not at:
        raise NotFound(f"session {sid} has no turn {turn}\n- see its turns with `quipu history show {sid}`")
    context = max(context, 0)
    return sid, turns[max(0, at[0] - context): at[0] + context + 1]
