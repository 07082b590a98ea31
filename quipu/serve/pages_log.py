"""The audit log page: the store's git history as a timeline of what each commit did, each with
its diff and an Undo button.

Contract:
- What a commit did is read from its trees, never from its message or trailers ("words are not
  authority"). Without a memory filter the entries are ``quipu.sync.described.walk`` (newest
  first, a page at a time; ``sweep`` and ``action`` keep the commits whose trailers record them and
  agree with what they did): the kind column and the memory are what the commit changed
  (``Described.kind``, ``Described.memory``; the memory is a link only when it is one plain memory
  id), the summary is ``quipu.sync.described.said``: what it did in words, its message as a note
  when its trailers agree, their claim and "(not verified)" when they do not.
- With a memory filter the entries are ``Store.log(memory=...)`` (``quipu.store.audit``), whose
  summary says what each commit did to that memory; each shown commit is described as above for
  its kind, its credit and its chips.
- Each entry shows who or what decided: a sweep, a session's capture or a person's review, and the
  trailers as chips, only when the trailers agree with what the commit did; otherwise the commit's
  author. Its diff is loaded when expanded (``/commit/SHA``; at most ``MAX_FILES`` files and
  ``MAX_LINES`` lines).
- Undo is offered for a commit that changed something and is neither a merge nor the first. It is
  ``Store.undo(commit=...)``, exactly what `quipu undo COMMIT` runs: its refusals are shown as
  messages, and what it made is shown after it. A commit named in a notice ("Done:", "Undid") is
  said as in the log, by what it did (``describe``).
- Only a full or abbreviated hexadecimal commit id is ever looked up.
"""
from __future__ import annotations

import re
from typing import Any

from quipu.serve.html import Safe, form, h, join, message, pager, url
from quipu.serve.state import Viewer
from quipu.store.decisions import plain
from quipu.store.trailers import LogEntry
from quipu.sync.described import Described, Trees, first_line, said, walk

PAGE = 50
MAX_FILES = 40
MAX_LINES = 600
HEX = re.compile(r"\A[0-9a-f]{7,40}\Z")
SHOWN_TRAILERS = ("Quipu-Sweep", "Quipu-Session", "Quipu-Review", "Quipu-Verdict", "Quipu-Confidence",
                  "Quipu-Supersedes", "Quipu-Superseded-By", "Quipu-Label", "Quipu-Reverts", "Quipu-Skill",
                  "Quipu-Remote", "Quipu-By")
NOT_MEMORIES = frozenset({"profile", "skill", "file"})  # kinds of change whose "memory" is no memory's id


def who(entry: LogEntry, author: str, *, agrees: bool | None) -> str:
    """Who or what decided: the trailers' sweep, review or session only when they agree with what
    the commit did, else its author."""
    t = entry.trailers if agrees else {}
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


def _memory_html(memory: str, *, linked: bool) -> Safe:
    """The memory a commit changed, a link only when ``linked`` and it is a plain memory id."""
    if not memory:
        return Safe("")
    if not linked or plain(memory, "") != memory:
        return h('<span class="id">{m}</span>', m=memory)
    return h('<a href="{u}" class="id">{m}</a>', u=url(f"/memories/{memory}"), m=memory)


def _one_memory(described: Described) -> bool:
    """Whether a commit changed one memory, by its file or its event files (not the profile card,
    a skill or another file)."""
    return described.memory() not in ("", "several") and described.changes[0].kind not in NOT_MEMORIES


def entry_html(viewer: Viewer, entry: LogEntry, described: Described, *, summary: str, memory: Safe) -> Safe:
    """One commit: ``summary`` and ``memory`` as the page has them, the rest from what it did."""
    agrees = described.agrees
    chips = join(h('<span class="chip"><span class="k">{k}</span> {v}</span>', k=k.removeprefix("Quipu-").lower(), v=v)
                 for k, v in entry.trailers.items() if k in SHOWN_TRAILERS) if agrees else Safe("")
    kind = described.kind()
    undo = form(url("/log/undo"), viewer.csrf, "Undo", fields={"commit": entry.commit}, css="undo",
                confirm=f"Undo {entry.commit[:12]}: {summary}?") if kind not in ("", "merge") and described.commit.parent_ids \
        else Safe("")
    return h('<li class="entry" data-commit="{sha}"><div class="line"><time>{time}</time> '
             '<span class="action">{action}</span> {memory} <span class="summary">{summary}</span></div>'
             '<div class="meta">decided by {who} · <span class="id">{short}</span> {chips}</div>'
             '<details data-diff="{diff}"><summary>diff</summary><div class="diff-body">'
             '<a href="{diff}">show the diff</a></div></details>{undo}</li>',
             sha=entry.commit, time=entry.time, action=kind or "-", memory=memory,
             summary=summary, who=who(entry, described.commit.author.name, agrees=agrees), short=entry.commit[:12],
             chips=chips, diff=url(f"/commit/{entry.commit}"), undo=undo)


def _rows(viewer: Viewer, *, page: int, memory: str, sweep: str, action: str) -> tuple[list[Safe], bool]:
    """The page's entries and whether more follow."""
    wanted = page * PAGE + 1
    repo = viewer.store.repo
    if not memory:
        found = list(walk(repo, sweep=sweep or None, action=action or None, limit=wanted))
        return [entry_html(viewer, e, d, summary=said(e, d),
                           memory=_memory_html(d.memory(), linked=_one_memory(d)))
                for e, d in found[(page - 1) * PAGE: page * PAGE]], len(found) > page * PAGE
    entries = viewer.store.log(memory=memory, sweep=sweep or None, action=action or None, limit=wanted)
    trees = Trees(repo)
    rows = []
    for entry in entries[(page - 1) * PAGE: page * PAGE]:
        commit = _commit(viewer, entry.commit)
        if commit is not None:
            rows.append(entry_html(viewer, entry, Described.of(repo, commit, trees), summary=entry.summary,
                                   memory=_memory_html(memory, linked=True)))
    return rows, len(entries) > page * PAGE


def body(viewer: Viewer, *, page: int = 1, memory: str = "", sweep: str = "", action: str = "",
         notice: Safe | None = None) -> Safe:
    rows, more = _rows(viewer, page=page, memory=memory, sweep=sweep, action=action)
    filters = h('<form method="get" action="/log" class="filters"><input name="memory" value="{m}" '
                'placeholder="memory id"><input name="sweep" value="{s}" placeholder="sweep id">'
                '<input name="action" value="{a}" placeholder="action"><button>filter</button></form>',
                m=memory, s=sweep, a=action)
    items = join(rows) if rows else h('<li class="empty">No commits.</li>')
    return h('{notice}{filters}<ol class="timeline">{items}</ol>{pager}', notice=notice or Safe(""), filters=filters,
             items=items, pager=pager("/log", page, more, memory=memory, sweep=sweep, action=action))


def describe(viewer: Viewer, shas: list[str]) -> list[str]:
    """``SHORT what-it-did`` (``said``) for each of ``shas`` that is a commit of the store."""
    out = []
    trees = Trees(viewer.store.repo)
    for sha in shas:
        commit = _commit(viewer, sha)
        if commit is not None:
            entry = LogEntry(str(commit.id), "", first_line(commit.message), {})
            out.append(f"{entry.commit[:12]} {said(entry, Described.of(viewer.store.repo, commit, trees))}")
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
