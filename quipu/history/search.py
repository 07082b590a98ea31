"""Searching past turns: a wide lexical gather and a meaning search, fused by rank.

Contract:
- ``search(query, project=, since=, role=, limit=)`` is the library entry point (the CLI and an
  MCP server call it). It never builds or changes anything but a missing index, and it never
  runs on the prompt path.
- Lexical: every content term of the query (``quipu.prompt.query.extract_terms``: stop words and filler
  out), OR-ed in one FTS5 query ranked by ``bm25()``, the top ``GATHER`` kept. With a filter, each
  term's weight is its rarity among the filtered turns, not the whole archive's (``_lexical_local``).
- Meaning: the query's static-embedding vector against every turn's (one matrix-vector product
  over the memory-mapped vector file), the top ``GATHER`` kept; off when the embedding is not
  installed or the index has no vectors.
- Fusion by reciprocal rank, BM25 first: score = LEXICAL_WEIGHT / (K + lexical rank) +
  MEANING_WEIGHT / (K + meaning rank); ties go to the better lexical rank. Filters (project,
  since, role) apply to both lists before they are cut, so a filter never empties a list that
  has matches.
- Hits carry the session, turn number, role, the agent it came from (``claude``, ``codex``, ``chatgpt``, ``claude.ai``),
  project, branch and time, and both ranks.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from quipu.errors import UsageError
from quipu.history.archive import Layout, parse_ts
from quipu.prompt.query import extract_terms, fts_quote

GATHER = 50
# Reciprocal rank fusion (Cormack et al. 2009), BM25 first. Chosen on LoCoMo with
# bench/bench_history.py (1,982 questions, each within its conversation's project; R@5 / R@10):
# words only 0.545 / 0.632, meaning only 0.295 / 0.364. The static embedding is about half as good
# as BM25 on its own, and the textbook constants (K 60, equal weights) cost 0.13 of R@5. K 10 with
# the meaning list at a fifth of the weight was the best of the grid (K 10 and 60, weights 0.1 to
# 1): 0.555 / 0.635, above plain FTS5 of the conversation in every category. It still brings up
# what shares no word with the query: a hit found only by meaning, at meaning rank 1, ranks with
# lexical rank 45.
K = 10.0
LEXICAL_WEIGHT = 1.0
MEANING_WEIGHT = 0.2
ROLES = ("user", "assistant")
_RELATIVE = re.compile(r"\A(\d+)\s*([dwmy])\Z")


@dataclass(frozen=True)
class Hit:
    session: str
    turn: int
    role: str
    project: str
    branch: str
    ts: str
    text: str
    score: float
    lexical_rank: int | None
    meaning_rank: int | None
    agent: str = "claude"

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "turn": self.turn, "ref": f"{self.session}:{self.turn}",
                "role": self.role, "agent": self.agent, "project": self.project, "branch": self.branch, "ts": self.ts,
                "score": round(self.score, 6), "lexical_rank": self.lexical_rank,
                "meaning_rank": self.meaning_rank, "text": self.text}


@dataclass
class Result:
    query: str
    hits: list[Hit] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    meaning: bool = False  # whether meaning search ran
    turns: int = 0  # turns in the index

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "terms": self.terms, "meaning": self.meaning, "turns": self.turns,
                "hits": [h.to_json() for h in self.hits]}


def parse_since(text: str, now: _dt.datetime | None = None) -> _dt.datetime:
    """``2026-05-01``, an ISO time, or an age: ``7d``, ``2w``, ``3m``, ``1y``; anything else, or a time
    out of a datetime's range, is a ``UsageError`` (exit 2) naming what is accepted."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    m = _RELATIVE.match(text.strip().lower())
    if m:
        try:
            days = int(m.group(1).lstrip("0")[:13] or "0") * {"d": 1, "w": 7, "m": 30, "y": 365}[m.group(2)]
            if len(m.group(1).lstrip("0")) > 12:
                raise OverflowError(text)
            return now - _dt.timedelta(days=days)
        except OverflowError:  # an age from before the year 1
            raise UsageError(f"the age {text!r} reaches back before the year 1\n- give an age of at most "
                             f"{(now - _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)).days:,}d, or a date") from None
    value = parse_ts(text.strip())
    if value is None:
        raise UsageError(f"cannot read the date {text!r}\n- give a date (2026-05-01), an ISO time, or an age (7d, 2w, 3m, 1y)")
    try:
        return value.astimezone(_dt.timezone.utc)
    except OverflowError:  # 9999-12-31T23:00-05:00 is past the last time a datetime holds
        raise UsageError(f"the date {text!r} is out of range\n- give a date from 0001-01-02 to 9999-12-30") from None


def _filters(project: str | None, since: _dt.datetime | None, role: str | None) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if project:
        clauses.append("(t.project = ? OR t.project LIKE ? ESCAPE '\\')")
        folder = project.rstrip("/")
        params += [folder, folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"]
    if since is not None:
        clauses.append("t.ts >= ?")
        params.append(since.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"))
    if role:
        clauses.append("t.role = ?")
        params.append(role)
    return (" AND ".join(clauses), params)


def _lexical(db: sqlite3.Connection, terms: Sequence[str], where: str, params: list[object]) -> list[int]:
    if not terms:
        return []
    if where:
        return _lexical_local(db, terms, where, params)
    expr = " OR ".join(fts_quote(t) for t in terms)
    sql = ("SELECT t.id FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid WHERE turns_fts MATCH ?"
           + (f" AND {where}" if where else "") + " ORDER BY bm25(turns_fts) LIMIT ?")
    return [int(r[0]) for r in db.execute(sql, [expr, *params, GATHER])]


def _idf(total: int, df: int) -> float:
    """FTS5's BM25 idf, with its floor for words in more than half of the rows."""
    return max(math.log((total - df + 0.5) / (df + 0.5)), 1e-6)


def _lexical_local(db: sqlite3.Connection, terms: Sequence[str], where: str, params: list[object]) -> list[int]:
    """BM25 with the filtered turns' own word statistics: FTS5 weighs a word by its rarity in the
    whole archive, where a project's everyday word may be rare. Each term's FTS5 score over its
    matches is divided by the archive-wide idf (leaving the term-frequency part) and multiplied by
    the idf among the filtered turns. On LoCoMo (each question within its conversation): words-only
    R@5 0.535 with the archive's statistics, 0.545 with the conversation's (plain FTS5 over the
    conversation alone: 0.546)."""
    total = int(db.execute("SELECT count(*) FROM turns").fetchone()[0])
    local = int(db.execute(f"SELECT count(*) FROM turns t WHERE {where}", params).fetchone()[0])
    scores: dict[int, float] = {}
    for term in terms:
        quoted = fts_quote(term)
        df = int(db.execute("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH ?", (quoted,)).fetchone()[0])
        if not df:
            continue
        rows = db.execute("SELECT t.id, bm25(turns_fts) FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
                          f" WHERE turns_fts MATCH ? AND {where}", [quoted, *params]).fetchall()
        if not rows:
            continue
        weight = _idf(local, len(rows)) / _idf(total, df)
        for rowid, score in rows:
            scores[rowid] = scores.get(rowid, 0.0) - score * weight
    return sorted(scores, key=lambda i: (-scores[i], i))[:GATHER]


def _meaning(db: sqlite3.Connection, layout: Layout, query: str, where: str, params: list[object]) -> list[int] | None:
    row = db.execute("SELECT value FROM meta WHERE key = 'vectors'").fetchone()
    if row is None or row[0] == "none" or not layout.vectors.is_file():
        return None
    from quipu.index import embed

    files = embed.locate()
    if files is None:
        return None
    import numpy as np

    from quipu.history.index import ROW, similarities

    size = layout.vectors.stat().st_size // ROW
    if size == 0:
        return []
    pieces = embed.pieces_db(layout.pieces, files.tokenizer)
    try:
        q = embed.Embedder.load(files, embed.Pieces.from_db(pieces)).one(query)
    finally:
        pieces.close()
    if not q.any():
        return []
    scores = similarities(layout.vectors, q, size)
    if where:
        allowed = np.fromiter((int(r[0]) - 1 for r in db.execute(f"SELECT t.id FROM turns t WHERE {where}", params)),
                              dtype=np.int64)
        allowed = allowed[allowed < size]
        mask = np.full(size, -np.inf, dtype=np.float32)
        mask[allowed] = 0.0
        scores = scores + mask
    depth = min(GATHER * 2, size)  # extra depth: zeroed (deleted) rows drop out below
    top = np.argpartition(-scores, depth - 1)[:depth]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [int(i) + 1 for i in top if scores[i] > 0.0][:GATHER]


def fuse(lexical: Sequence[int], meaning: Sequence[int] | None, *, k: float = K,
         lexical_weight: float = LEXICAL_WEIGHT, meaning_weight: float = MEANING_WEIGHT,
         ) -> list[tuple[int, float, int | None, int | None]]:
    """(id, fused score, lexical rank, meaning rank), best first; ranks are 1-based."""
    lex = {i: r for r, i in enumerate(lexical, 1)}
    mean = {i: r for r, i in enumerate(meaning or (), 1)}
    out = []
    for i in {*lex, *mean}:
        score = ((lexical_weight / (k + lex[i]) if i in lex else 0.0)
                 + (meaning_weight / (k + mean[i]) if i in mean else 0.0))
        out.append((i, score, lex.get(i), mean.get(i)))
    out.sort(key=lambda x: (-x[1], x[2] if x[2] is not None else GATHER + 1, x[0]))
    return out


class Gathered(NamedTuple):
    terms: list[str]
    lexical: list[int]  # turn rowids, best first
    meaning: list[int] | None  # None: meaning search did not run


def gather(db: sqlite3.Connection, layout: Layout, query: str, *, project: str | None = None,
           since: _dt.datetime | None = None, role: str | None = None, meaning: bool = True) -> Gathered:
    """Both ranked lists, each cut at ``GATHER`` after the filters."""
    terms = [t.text for t in extract_terms(query)]
    where, params = _filters(project, since, role)
    lexical = _lexical(db, terms, where, params)
    dense = _meaning(db, layout, query, where, params) if meaning else None
    return Gathered(terms, lexical, dense)


def search(query: str, *, project: str | None = None, since: str | _dt.datetime | None = None,
           role: str | None = None, limit: int = 10, layout: Layout | None = None,
           meaning: bool = True) -> Result:
    """Search the archived turns (see the module contract)."""
    layout = layout or Layout.default()
    if role is not None and role not in ROLES:
        raise UsageError(f"unknown role {role!r}\n- use --role user or --role assistant")
    when = parse_since(since) if isinstance(since, str) else since
    result = Result(query=query)
    from quipu.history import index

    if not index.is_current(layout):
        if not layout.exists():
            return result
        with layout.lock():
            if not index.is_current(layout):
                index.rebuild(layout)
    db = index.connect(layout.index)
    try:
        db.execute("BEGIN")  # one read snapshot for both lists and the rows
        found = gather(db, layout, query, project=project, since=when, role=role, meaning=meaning)
        result.terms = found.terms
        result.meaning = found.meaning is not None
        result.turns = int(db.execute("SELECT count(*) FROM turns").fetchone()[0])
        for i, score, lex_rank, mean_rank in fuse(found.lexical, found.meaning):
            if len(result.hits) >= limit:
                break
            row = db.execute("SELECT * FROM turns WHERE id = ?", (i,)).fetchone()
            if row is None:
                continue
            result.hits.append(Hit(row["session"], row["turn"], row["role"], row["project"], row["branch"],
                                   row["ts"], row["text"], score, lex_rank, mean_rank, row["agent"]))
        db.execute("COMMIT")
    finally:
        db.close()
    return result
