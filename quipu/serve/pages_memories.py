"""The memories pages: the list (filters by class, label and topic, or a search), one memory with
its history, labels, verification results and supersession chain, and what the prompt hook would
inject for a prompt typed there.

Contract:
- The list reads the index's ``memories`` table a page at a time (never the memory files), newest
  first; a search is the deep list `quipu search` reads (``deep.search`` with meaning search when
  the embedding is installed), filtered, then paged.
- A memory's page is ``quipu.verify.report.details`` (what `quipu show` prints) plus its chain.
- The recall panel runs exactly what `quipu recall --explain` runs and shows the injected text.
- Every field of a memory shows as text; none becomes a link target.
"""
from __future__ import annotations

import sqlite3
from typing import Any

from quipu.index import deep
from quipu.prompt import indexread, inject, locate, recall, transcript
from quipu.serve.html import Safe, h, join, pager, table, url
from quipu.serve.state import Viewer
from quipu.verify.report import details

PAGE = 50
CHAIN_STEPS = 20
CLASSES = ("rule", "preference", "fact", "reference", "project-note")


def _like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _where(cls: str, label: str, topic: str) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if cls:
        clauses.append("class = ?")
        params.append(cls)
    if label:
        clauses.append("(' ' || labels || ' ') LIKE ? ESCAPE '\\'")
        params.append(f"% {_like(label)} %")
    if topic:
        clauses.append("(' | ' || tags || ' | ') LIKE ? ESCAPE '\\'")
        params.append(f"% | {_like(topic)} | %")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


LISTED = ("id", "title", "description", "class", "status", "labels")


def listing(db: sqlite3.Connection, *, cls: str = "", label: str = "", topic: str = "", page: int = 1
            ) -> tuple[int, list[dict[str, Any]]]:
    """(how many match, the rows of ``page``), newest first."""
    where, params = _where(cls, label, topic)
    total = int(db.execute(f"SELECT count(*) FROM memories{where}", params).fetchone()[0])
    rows = db.execute(f"SELECT {', '.join(LISTED)} FROM memories{where} ORDER BY created_ts DESC, id DESC LIMIT ? OFFSET ?",
                      [*params, PAGE, (page - 1) * PAGE]).fetchall()
    return total, [dict(zip(LISTED, row, strict=True)) for row in rows]


def searching(viewer: Viewer, db: sqlite3.Connection, query: str, *, cls: str = "", label: str = "",
              topic: str = "", page: int = 1) -> tuple[deep.Deep, list[deep.Hit]]:
    """The deep list for ``query`` (as `quipu search` reads it), filtered; every hit it holds."""
    result = deep.search(db, query, limit=2 * deep.GATHER, nearest=viewer.nearest(db))
    hits = result.hits
    if cls or label or topic:
        where, params = _where(cls, label, topic)
        ids = [hit.id for hit in hits]
        marks = ", ".join("?" * len(ids))
        keep = {r[0] for r in db.execute(f"SELECT id FROM memories{where}{' AND' if where else ' WHERE'} "
                                         f"id IN ({marks})", [*params, *ids])} if ids else set()
        hits = [hit for hit in hits if hit.id in keep]
    return result, hits


def _filters(query: str, cls: str, label: str, topic: str) -> Safe:
    options = join(h('<option value="{c}"{sel}>{c}</option>', c=c, sel=Safe(" selected") if c == cls else Safe(""))
                   for c in ("", *CLASSES))
    return h('<form method="get" action="/memories" class="filters" role="search">'
             '<input type="search" name="q" value="{q}" placeholder="search memories" id="q">'
             '<select name="class" aria-label="class">{options}</select>'
             '<input name="label" value="{label}" placeholder="label"><input name="topic" value="{topic}" '
             'placeholder="topic"><button type="submit">search</button></form>',
             q=query, options=options, label=label, topic=topic)


def _link(memory_id: str, title: str) -> Safe:
    return h('<a href="{u}">{t}</a> <span class="id">{id}</span>', u=url(f"/memories/{memory_id}"), t=title,
             id=memory_id)


def body(viewer: Viewer, *, query: str = "", cls: str = "", label: str = "", topic: str = "", page: int = 1) -> Safe:
    form = _filters(query, cls, label, topic)
    if query.strip():
        result, hits = viewer.read(lambda db: searching(viewer, db, query, cls=cls, label=label, topic=topic))
        shown = hits[(page - 1) * PAGE: page * PAGE]
        rows = [[_link(hit.id, hit.title), hit.cls, hit.label_text(), f"{hit.score:.4f}", hit.snippet] for hit in shown]
        meaning = "on" if result.meaning else f"off ({result.words_alone})" if result.words_alone else "off"
        head = h('<p class="count">{n} found{why}; meaning search {m}.</p>', n=len(hits),
                 why=f" ({result.reason})" if not hits and result.reason else "", m=meaning)
        return h('{form}{head}{table}{pager}', form=form, head=head,
                 table=table(("memory", "class", "labels", "score", "snippet"), rows, css="memories"),
                 pager=pager("/memories", page, len(hits) > page * PAGE, q=query, **{"class": cls}, label=label,
                             topic=topic))
    total, found = viewer.read(lambda db: listing(db, cls=cls, label=label, topic=topic, page=page))
    rows = [[_link(r["id"], r["title"]), r["class"], " ".join(filter(None, [r["status"] if r["status"] != "active"
                                                                            else "", r["labels"]])), r["description"]]
            for r in found]
    return h('{form}<p class="count">{n} memories.</p>{table}{pager}', form=form, n=total,
             table=table(("memory", "class", "status / labels", "description"), rows, css="memories"),
             pager=pager("/memories", page, total > page * PAGE, **{"class": cls}, label=label, topic=topic))


def chain(viewer: Viewer, memory_id: str) -> list[str]:
    """The memory's supersession chain, oldest first: what it supersedes, it, what superseded it."""
    def walk(db: sqlite3.Connection) -> list[str]:
        out, seen = [memory_id], {memory_id}
        while len(out) < CHAIN_STEPS:
            row = db.execute("SELECT superseded_by FROM memories WHERE id = ?", (out[-1],)).fetchone()
            if row is None or not row[0] or row[0] in seen:
                break
            seen.add(row[0])
            out.append(row[0])
        while len(out) < 2 * CHAIN_STEPS:
            row = db.execute("SELECT id FROM memories WHERE superseded_by = ? ORDER BY created_ts LIMIT 1",
                             (out[0],)).fetchone()
            if row is None or row[0] in seen:
                break
            seen.add(row[0])
            out.insert(0, row[0])
        return out

    return viewer.read(walk)


def _recall(viewer: Viewer, prompt: str, memory_id: str) -> Safe:
    own = viewer.store.root.absolute().name == locate.STORE_DIR_NAME  # as if typed in the store's project

    def run(db: sqlite3.Connection) -> tuple[recall.Options, recall.Recall]:
        options = recall.Options.from_config(indexread.index_config(db), own_store=own)
        if transcript.is_machine_text(prompt):
            return options, recall.Recall(reason="machine text (task notification, hook output, slash command...)")
        return options, recall.recall(db, prompt, "", options)

    options, result = viewer.read(run)
    text = inject.format_context(result.hits, options.max_chars)
    terms = [["*" if chosen else "", term, df, "everyday" if term in result.generic else ""]
             for term, df, chosen in result.terms]
    hits = [[_link(hit.id, hit.id) if hit.id != memory_id else h("<strong>{i} (this memory)</strong>", i=hit.id),
             f"{hit.bm25:.2f}", f"{hit.score:.2f}", ", ".join(hit.matched)] for hit in result.hits]
    return h('<section class="recall-result"><h3>Prompt terms</h3>{terms}{context}<h3>Hits</h3>{hits}{left}{why}'
             '<h3>What the hook would inject</h3><pre class="inject">{text}</pre></section>',
             terms=table(("finds", "term", "df", ""), terms),
             context=h("<p>Context terms: {c}</p>", c=", ".join(result.context_terms)) if result.context_terms
             else Safe(""),
             hits=table(("memory", "bm25", "score", "matched"), hits),
             left=join(h('<p class="left-out">Left out {line}</p>', line=line) for line in result.left_out),
             why=h('<p class="reason">{r}</p>', r=result.reason) if result.reason else Safe(""),
             text=text or "(silent: nothing would be injected)")


def recall_form(memory_id: str, prompt: str) -> Safe:
    action = url(f"/memories/{memory_id}") if memory_id else url("/recall")
    return h('<form method="get" action="{a}" class="recall"><label>What would the prompt hook inject for '
             '<input name="prompt" value="{p}" placeholder="a prompt" size="60"></label>'
             '<button type="submit">recall</button></form>', a=action, p=prompt)


def recall_body(viewer: Viewer, prompt: str) -> Safe:
    return h("{f}{r}", f=recall_form("", prompt), r=_recall(viewer, prompt, "") if prompt.strip() else Safe(""))


def memory_body(viewer: Viewer, memory_id: str, prompt: str = "") -> Safe:
    d = details(viewer.store, memory_id)  # raises NotFound
    facts = [["class", d["class"]], ["origin", d["origin"]], ["created", d["created"]],
             ["status", d["current_status"]],
             ["half-life", "never decays" if d["half_life_days"] is None else f"{d['half_life_days']:g} days"]]
    for name in ("description", "topics", "entities", "aliases", "session", "project", "path"):
        value = d.get(name)
        if value:
            facts.append([name, ", ".join(value) if isinstance(value, list) else value])
    labels = [[label, detail or ""] for label, detail in d["labels"].items()]
    claims = [[c["status"], c["probe"], c["detail"], c["checked_at"]] for c in d["claims"]]
    history = [[h('<span class="id">{c}</span>', c=e["commit"][:12]), e["time"], e["summary"]] for e in d["history"]]
    steps = chain(viewer, d["id"])
    chain_html = join((h("<strong>{i}</strong>", i=i) if i == d["id"] else _link(i, i) for i in steps),
                      Safe(" &rarr; ")) if len(steps) > 1 else h("<p>None.</p>")
    return h('<p class="title-line">{title}</p>{facts}<h2>Body</h2><pre class="text">{body}</pre>'
             '<h2>Supersession chain</h2><p class="chain">{chain}</p><h2>Labels</h2>{labels}'
             '<h2>Verification</h2>{claims}<h2>History</h2>{history}<p><a href="{log}">full log of this memory</a>'
             '</p><h2>Recall</h2>{form}{recall}',
             title=d["title"], facts=table(("field", "value"), facts, css="facts"), body=d["body"], chain=chain_html,
             labels=table(("label", "detail"), labels) if labels else h("<p>None.</p>"),
             claims=table(("status", "probe", "detail", "checked"), claims) if claims else h("<p>No results.</p>"),
             history=table(("commit", "time", "summary"), history), log=url("/log", memory=d["id"]),
             form=recall_form(d["id"], prompt), recall=_recall(viewer, prompt, d["id"]) if prompt.strip() else Safe(""))

