"""The audit log page: the store's git history as a timeline of decisions, each with its diff and
an Undo button.

Contract:
- Entries are ``Store.log`` (newest first), a page at a time; each shows who or what decided (a
  sweep, a session's capture, a person's review, the commit's author), its trailers, and its diff
  loaded when expanded (``/commit/SHA``; at most ``MAX_FILES`` files and ``MAX_LINES`` lines).
- Undo is ``Store.undo(commit=...)``, exactly what `quipu undo COMMIT` runs: its refusals are
  shown as messages, and what it made is shown after it.
- Only a full or abbreviated hexadecimal commit id is ever looked up.
"""
from __future__ import annotations

import re
from typing import Any

from quipu.serve.html import Safe, form, h, join, message, pager, url
from quipu.serve.state import Viewer
from quipu.store.trailers import LogEntry

PAGE = 50
MAX_FILES = 40
MAX_LINES = 600
HEX = re.compile(r"\A[0-9a-f]{7,40}\Z")
SHOWN_TRAILERS = ("Quipu-Sweep", "Quipu-Session", "Quipu-Review", "Quipu-Verdict", "Quipu-Confidence",
                  "Quipu-Supersedes", "Quipu-Superseded-By", "Quipu-Label", "Quipu-Reverts", "Quipu-Skill",
                  "Quipu-Remote", "Quipu-By")


def who(entry: LogEntry, author: str) -> str:
    t = entry.trailers
    if t.get("Quipu-Sweep"):
        return f"the curator (sweep {t['Quipu-Sweep']})"
    if t.get("Quipu-Review"):
        return f"a person's review ({author})"
    if t.get("Quipu-Session"):
        return f"capture of session {t['Quipu-Session']}"
    return author or "unknown"


def _commit(viewer: Viewer, sha: str) -> Any:
    if not HEX.match(sha):
        return None
    try:
        import pygit2

        return viewer.store.repo.revparse_single(sha).peel(pygit2.Commit)
    except (KeyError, ValueError, TypeError, OSError):
        return None


def entry_html(viewer: Viewer, entry: LogEntry) -> Safe:
    commit = _commit(viewer, entry.commit)
    author = commit.author.name if commit is not None else ""
    chips = join(h('<span class="chip"><span class="k">{k}</span> {v}</span>', k=k.removeprefix("Quipu-").lower(), v=v)
                 for k, v in entry.trailers.items() if k in SHOWN_TRAILERS)
    memory = (h('<a href="{u}" class="id">{m}</a>', u=url(f"/memories/{entry.memory}"), m=entry.memory)
              if entry.memory else Safe(""))
    undo = form(url("/log/undo"), viewer.csrf, "Undo", fields={"commit": entry.commit}, css="undo",
                confirm=f"Undo {entry.commit[:12]}: {entry.summary}?") if entry.action else Safe("")
    return h('<li class="entry" data-commit="{sha}"><div class="line"><time>{time}</time> '
             '<span class="action">{action}</span> {memory} <span class="summary">{summary}</span></div>'
             '<div class="meta">decided by {who} · <span class="id">{short}</span> {chips}</div>'
             '<details data-diff="{diff}"><summary>diff</summary><div class="diff-body">'
             '<a href="{diff}">show the diff</a></div></details>{undo}</li>',
             sha=entry.commit, time=entry.time, action=entry.action or "-", memory=memory, summary=entry.summary,
             who=who(entry, author), short=entry.commit[:12], chips=chips, diff=url(f"/commit/{entry.commit}"),
             undo=undo)


def body(viewer: Viewer, *, page: int = 1, memory: str = "", sweep: str = "", action: str = "",
         notice: Safe | None = None) -> Safe:
    wanted = page * PAGE + 1
    entries = viewer.store.log(memory=memory or None, sweep=sweep or None, action=action or None, limit=wanted)
    shown = entries[(page - 1) * PAGE: page * PAGE]
    filters = h('<form method="get" action="/log" class="filters"><input name="memory" value="{m}" '
                'placeholder="memory id"><input name="sweep" value="{s}" placeholder="sweep id">'
                '<input name="action" value="{a}" placeholder="action"><button>filter</button></form>',
                m=memory, s=sweep, a=action)
    items = join(entry_html(viewer, e) for e in shown) if shown else h('<li class="empty">No commits.</li>')
    return h('{notice}{filters}<ol class="timeline">{items}</ol>{pager}', notice=notice or Safe(""), filters=filters,
             items=items,
             pager=pager("/log", page, len(entries) > page * PAGE, memory=memory, sweep=sweep, action=action))


def describe(viewer: Viewer, shas: list[str]) -> list[str]:
    """``SHORT summary`` for each of ``shas`` that is a commit of the store."""
    out = []
    for sha in shas:
        commit = _commit(viewer, sha)
        if commit is not None:
            out.append(f"{str(commit.id)[:12]} {commit.message.splitlines()[0] if commit.message else ''}")
    return out


def undo(viewer: Viewer, sha: str) -> list[str]:
    """Revert ``sha`` as `quipu undo SHA` does; the commits it made (raises the library's refusals)."""
    made = viewer.store.undo(commit=sha)
    viewer.after_write()
    return made


def diff_html(viewer: Viewer, sha: str) -> Safe | None:
    """The commit's patch as escaped lines, cut at ``MAX_FILES`` files and ``MAX_LINES`` lines."""
    commit = _commit(viewer, sha)
    if commit is None:
        return None
    if commit.parents:
        diff = viewer.store.repo.diff(commit.parents[0], commit)
    else:
        diff = commit.tree.diff_to_tree(swap=True)
    lines: list[Safe] = []
    total = len(diff)
    for i in range(min(total, MAX_FILES)):
        patch = diff[i]
        if patch is None:
            continue
        for line in (patch.text or "").splitlines():
            if len(lines) >= MAX_LINES:
                break
            css = "add" if line.startswith("+") else "del" if line.startswith("-") else "hunk" if line.startswith("@@") else ""
            lines.append(h('<span class="{css}">{line}</span>', css=css, line=line))
    more = total - MAX_FILES if total > MAX_FILES else 0
    note = h('<p class="cut">{n} more files not shown</p>', n=more) if more else Safe("")
    return h('<p class="id">{sha}</p><pre class="commit-message">{msg}</pre><pre class="diff">{lines}</pre>{note}',
             sha=str(commit.id), msg=commit.message, lines=join(lines, "\n"), note=note)


def undone_notice(viewer: Viewer, target: str, made: list[str]) -> Safe:
    """What an undo did, in the store's own words (only commits of the store are named)."""
    what = describe(viewer, [target])
    if not what:
        return Safe("")
    return message("Undid " + what[0] + "".join(f"\n- made {m}" for m in describe(viewer, made)))
