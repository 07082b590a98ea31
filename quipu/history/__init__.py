"""Past conversations: every turn of every Claude Code session, redacted, searchable.

Modules, each with one job: ``reader`` (a transcript as turns), ``redact`` (every field of a
session redacted before it is archived), ``archive`` (the JSONL truth under
``$QUIPU_HOME/history``), ``locking`` (the archive's lock, its holder and its bounded wait), ``index`` (FTS5 and vectors, a cache of the archive), ``embed``
(the static embedding), ``search`` (lexical and meaning lists fused by rank), ``feed`` (hooks and
backfill), ``exports`` (ChatGPT and Claude.ai data exports), ``forget`` and ``promote``. The
prompt hook imports none of them.

``search_history(query, project=, since=, limit=)`` and ``show_history(session, turn, context=)``
are the entry points for other front ends (the MCP server): they return plain JSON-ready
dictionaries; an unknown session or turn raises ``quipu.errors.NotFound``. ``one_line(text)`` is
how a front end shows a field of one (a project folder, a branch, a session id): on one printable
line, whatever the transcript held.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: str) -> str:
    """``text`` on one printable line: each line break, tab and other control character (C0, DEL,
    C1, and the line and paragraph separators U+2028 and U+2029) written as its escape (``\\n``,
    ``\\u001b``), so a field of a past turn never starts a line of its own, in a terminal or in
    what a model is given."""
    if text.isprintable():
        return text
    return "".join(_ESCAPES.get(ch) or (f"\\u{ord(ch):04x}" if ch < " " or "\x7f" <= ch < "\xa0" or ch in "\u2028\u2029"
                                        else ch) for ch in text)


def search_history(query: str, *, project: str | None = None, since: str | _dt.datetime | None = None,
                   limit: int = 10, role: str | None = None) -> list[dict[str, Any]]:
    """The best ``limit`` past turns for ``query``, as dictionaries (see ``search.Hit.to_json``)."""
    from quipu.history.search import search

    return [h.to_json() for h in search(query, project=project, since=since, role=role, limit=limit).hits]


def show_history(session: str, turn: int | None = None, *, context: int = 2) -> list[dict[str, Any]]:
    """A session's turns (``session`` may be a unique prefix of its id), or the ``context`` turns
    either side of ``turn``, as dictionaries (see ``archive.Turn.to_json``)."""
    from quipu.history.archive import Layout
    from quipu.history.forget import turns_around

    return [t.to_json() for t in turns_around(Layout.default(), session, turn, context)[1]]
