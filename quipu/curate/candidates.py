"""Candidate pairs for the model pass: related memories found through the index, never all pairs.

Contract:
- Two active memories are related when they share a topic or entity (case-insensitive; topics
  and entities are pooled here, the overlap guard tells them apart later) or when one's title has
  a strong full-text overlap with the other: at least two of its rarest title terms occur in the
  other's title, aliases, tags or description (FTS5, stemmed as recall stems), or, when the
  static embedding is installed (``quipu.index.vectors``), when one is among the other's
  ``MEANING_NEIGHBOURS`` nearest memories by the plain cosine of their vectors, at least
  ``MEANING_FLOOR`` (``quipu.index.closeness.neighbours``: products in blocks of rows, memory
  bounded at any size); numpy and the vectors load only when pairs are made.
- A pair's score is the idf-weighted sum of the subjects it shares plus ``FTS_BONUS`` for a title
  overlap and ``MEANING_BONUS`` for closeness in meaning. A subject
  carried by more than ``MAX_POSTING`` memories is too generic to pair on by itself (it still
  adds to the score of pairs found otherwise). Each memory proposes at most ``PER_MEMORY``
  partners, so the work and the number of pairs grow linearly with the store.
- Each memory picks its partners among all its related memories, decided or not, superseded or
  not, and only then are decided pairs and pairs with a superseded member removed: a store that
  did not change yields no new pairs, so a daily sweep does not dig ever deeper into weaker pairs. The result is ordered strongest first (then by
  ids), so a budget spends itself on the likeliest tensions and the next run continues where
  this one stopped.
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from quipu.index import index
from quipu.prompt import indexread
from quipu.curate.corpus import Corpus, Entry
from quipu.curate.ledger import pair_key
from quipu.prompt.query import extract_terms, fts_quote
from quipu.store.store import Store

PER_MEMORY = 3       # partners each memory may propose (pairs <= 3 x memories, linear in the store)
MAX_POSTING = 50     # a subject shared by more memories than this is too generic to pair on alone
FTS_TERMS = 3        # rarest title terms a memory looks for in others
FTS_BONUS = 2.0      # what a strong title overlap adds to a pair's score (about one rare shared tag)
FTS_ROWS = 20        # partners one title query may return
FTS_COLUMNS = "{title aliases tags description}"
# Meaning. Among the 1,815 real notes (testing/realistic.py), plain cosine of two notes from
# different repositories: median 0.09, p99 0.35; of two notes from the same file: median 0.14,
# p90 0.34. At >= 0.35 stand 1.0% of the random pairs and 8.9% of the same-file ones (at 0.45:
# 0.21% and 3.6%); each note's 3 nearest at >= 0.35 give 3,602 pairs (2.0 per note). "Postgres
# backups run nightly" against "The primary DB is snapshotted each evening" (bodies sharing one
# word) meet at 0.49 among the real notes and at 0.40 in a store of seven (the weights follow the
# store's counts), where unrelated notes stay at or below 0.22. A paraphrase sharing no word at
# all is beyond the static embedding: "Releases go out on Fridays" against "We ship to production
# at the end of each week" meet at 0.22, the level of one random pair in ten.
MEANING_NEIGHBOURS = 3
MEANING_FLOOR = 0.35
# Closeness in meaning adds the weight of a subject every memory carries (idf weight 1): weaker
# evidence than a title overlap or any subject specific enough to pair on (weights > 1), so a pair
# found by meaning alone comes after those and spends the budget last.
MEANING_BONUS = 1.0


@dataclass(frozen=True)
class Pair:
    a: str  # the older memory
    b: str
    score: float
    shared: tuple[str, ...]
    title_overlap: bool
    close_in_meaning: bool = False

    def to_json(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "score": round(self.score, 3), "shared": list(self.shared),
                "title_overlap": self.title_overlap, "close_in_meaning": self.close_in_meaning}


def _title_query(db: sqlite3.Connection, entry: Entry, total: int) -> str | None:
    words = [t.text for t in extract_terms(entry.memory.title)]
    if len(words) < 2:
        return None
    df = indexread.document_frequencies(db, words)
    usable = sorted((w for w in words if 2 <= df.get(w, 0) <= min(MAX_POSTING, max(2, total // 2))),
                    key=lambda w: (df[w], w))[:FTS_TERMS]
    if len(usable) < 2:
        return None
    quoted = [fts_quote(w) for w in usable]
    pairs = [f"({x} AND {y})" for i, x in enumerate(quoted) for y in quoted[i + 1:]]
    return f"{FTS_COLUMNS} : ({' OR '.join(pairs)})"


def _title_overlaps(store: Store, entries: Sequence[Entry], known: set[str]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    db = indexread.open_index(str(store.index_path))
    try:
        total = len(entries)
        for entry in entries:
            expr = _title_query(db, entry, total)
            if expr is None:
                continue
            for (other,) in db.execute(
                "SELECT m.id FROM memory_fts JOIN memories m ON m.rowid = memory_fts.rowid"
                f" WHERE memory_fts MATCH ? LIMIT {FTS_ROWS}",
                (expr,),
            ):
                if other != entry.id and other in known:
                    out.add(pair_key(entry.id, other))
    finally:
        db.close()
    return out


def _meaning_neighbours(store: Store, entries: Sequence[Entry], known: set[str]) -> set[tuple[str, str]]:
    """Pairs of memories close in meaning (see the module contract); none without the embedding."""
    from quipu.index import closeness, vectors  # numpy: only when pairs are made

    db = indexread.open_index(str(store.index_path))
    try:
        found = vectors.ensure_vectors(index.index_file(store).parent, db)
    finally:
        db.close()
    if found is None or not found.ids:
        return set()
    ids, matrix = found.ids, found.matrix
    if matrix.shape[0] != len(ids):  # changed by another process since: words alone this time
        return set()
    row = {mid: i for i, mid in enumerate(ids)}
    rows = [row[e.id] for e in entries if e.id in row]
    among = [i for i, mid in enumerate(ids) if mid in known]
    return {pair_key(ids[i], ids[j])
            for i, j, _cos in closeness.neighbours(matrix, ids, rows, among, MEANING_NEIGHBOURS, MEANING_FLOOR)}


def candidate_pairs(
    store: Store,
    corpus: Corpus,
    *,
    focus: frozenset[str] | None = None,
    is_decided: Callable[[str, str], bool] = lambda a, b: False,
) -> list[Pair]:
    """Related, undecided pairs of active memories, strongest first (see the module contract)."""
    index.ensure_fresh(store)
    entries = corpus.active()
    # Superseded memories keep their places in their partners' lists (their pairs are dropped
    # below), so retiring a memory does not pull a weaker pair into the next sweep.
    every = sorted(corpus.entries.values(), key=lambda e: (e.created_ts, e.id))
    by_id = {e.id: e for e in every}
    postings: dict[str, list[str]] = {}
    for entry in every:
        for subject in entry.topics | entry.entities:
            postings.setdefault(subject, []).append(entry.id)
    n = max(len(every), 2)
    weight = {s: math.log(n / len(ids)) + 1.0 for s, ids in postings.items()}
    scores: dict[tuple[str, str], float] = {}
    for subject, ids in postings.items():
        if not 2 <= len(ids) <= MAX_POSTING:
            continue
        for i, x in enumerate(ids):
            for y in ids[i + 1:]:
                key = pair_key(x, y)
                scores[key] = scores.get(key, 0.0) + weight[subject]
    askers = entries if focus is None else [e for e in entries if e.id in focus]
    titled = _title_overlaps(store, askers, set(by_id))
    meant = _meaning_neighbours(store, askers, set(by_id))
    for found, bonus in ((titled, FTS_BONUS), (meant, MEANING_BONUS)):
        for key in found:
            if key not in scores:  # shares only generic subjects, or none: score what it shares
                common = (by_id[key[0]].topics | by_id[key[0]].entities) & (by_id[key[1]].topics | by_id[key[1]].entities)
                scores[key] = sum(weight[s] for s in common)
            scores[key] += bonus
    partners: dict[str, list[tuple[float, str]]] = {}
    for (x, y), score in scores.items():
        if focus is not None and x not in focus and y not in focus:
            continue
        partners.setdefault(x, []).append((score, y))
        partners.setdefault(y, []).append((score, x))
    chosen: set[tuple[str, str]] = set()
    for x, options in partners.items():
        for _score, y in sorted(options, key=lambda o: (-o[0], o[1]))[:PER_MEMORY]:
            chosen.add(pair_key(x, y))
    out = []
    for key in chosen:
        if is_decided(*key) or not (corpus.is_active(key[0]) and corpus.is_active(key[1])):
            continue
        first, second = sorted((by_id[key[0]], by_id[key[1]]), key=lambda e: (e.created_ts, e.id))
        common = (first.topics | first.entities) & (second.topics | second.entities)
        out.append(Pair(first.id, second.id, scores[key], tuple(sorted(common)), key in titled, key in meant))
    out.sort(key=lambda p: (-p.score, p.a, p.b))
    return out
