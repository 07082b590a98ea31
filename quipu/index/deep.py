"""The deep list: gather wide by words and by meaning, fuse by rank, then let labels and age re-order.

This is what ``quipu search`` (and the offline passes) read; the prompt hook keeps its own
precision layer (``quipu.prompt.recall``) and never comes here. Contract:
- Lexical gather: every content term of the query (``quipu.prompt.query.extract_terms``, generic words
  included), OR-ed in one FTS5 query ranked by ``bm25()`` with every field weighing the same
  (``LEXICAL_FIELD_WEIGHTS``), the top ``GATHER`` kept. No rarest-terms cut, no floor: every memory that shares a word with
  the query can be reached. A request of a sentence or more (more than ``reading.OPEN_MAX_TERMS``
  terms) is gathered by every word it has but the function words (``reading.every_word``), and
  ranked by those words alone: meaning takes no part (see ``reading.py`` for the figures).
- Meaning gather: the query's static-embedding vector against every memory's
  (``quipu.index.vectors``), the top ``GATHER`` by cosine, less memories longer than
  ``MEANING_MAX_WORDS`` (their one vector is the mean of too many words to say what they hold:
  words alone rank them). Off with ``words_only`` or when the embedding is not installed.
- Fusion by reciprocal rank (the constants below, with the figures that chose them), in one of
  two ways. A query that names something specific which the store has (a word outside the
  index's lexicon of ordinary English, such as an identifier, a tool or a project, that some
  memory contains) is answered by the words: meaning (the plain cosine) only re-orders them
  and adds nothing. Any other query may mean more than its words say: meaning is gathered about the
  store's mean (``quipu.index.closeness.CENTRE``), a memory it finds may enter with a closeness of
  at least ``OPEN_FLOOR`` and weighs twice a lexical hit holding every word, and each lexical
  hit counts by the share of the query it holds (the query's IDF mass its matched terms carry,
  squared): a memory that matches only "user" of "where does the user live now" is weak
  evidence, one that holds every word is full evidence. When such a query asks about the person
  ("the user", "I", "my"), memories in their own words (the first person) come closer by
  ``OWN_WORDS_BONUS`` before the meaning gather is cut.
- Either way, when the query has a topic (a word that is not generic, as "user", "live" and
  "based" are, or at least three generic ones), a memory that holds every word of it (every term some memory has) ranks above every
  memory that lacks one (``WHOLE_QUERY`` added to its fused score); the fused order holds within
  each part. A query of one or two generic words keeps the fused order: a note that happens to
  hold "user" and "based" says nothing of where the user is based.
- Nothing learnt re-orders the list: the order is the fused score's, then labels and age. A
  memory's neighbours in its session are never candidates by nearness alone, so a memory that
  holds the query's words is never outranked by one that holds none of them only for being
  written beside a hit (bench/bench_shapes.py measures every shape of store: conversation turns
  with and without sessions, one speaker, a reply after the evidence, one memory a session, the
  real notes).
- Then labels and age: superseded x ``SUPERSEDED_PENALTY``, unverified x ``UNVERIFIED_PENALTY``
  (the hook's factors), and age as a tiebreak of at most ``AGE_TIEBREAK``: a memory keeps
  ``1 - AGE_TIEBREAK * (1 - 0.5 ** (age / half-life))`` of its score, so an old event is never
  buried under a weak recent match. A superseded memory never ranks above its successor when
  both are listed. A retracted memory (``quipu retract``) is left out of the list.
- Each hit carries its lexical rank, meaning rank and cosine, the fused score and the factors,
  for ``quipu search --explain``.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from quipu.index import person
from quipu.index.reading import OPEN_MAX_TERMS, every_word, is_long, shares, words_decide
from quipu.prompt import inject, recall
from quipu.prompt.query import Term, extract_terms, fts_quote
from quipu.prompt.stem import fts_term

GATHER = 50
# bm25() weights of the fields title, aliases, tags, description, body in the lexical gather: a
# search for words half remembered from a note's body (600 real notes, six words of each:
# bench/bench_shapes.py) finds the note first 0.780 of the time with a title match worth eight
# body matches, 0.865 with every field alike, 0.855 with the title at 1.5, and plain FTS5 over
# the same text 0.887. The hook weighs every field alike too (scoring.BM25_WEIGHTS).
LEXICAL_FIELD_WEIGHTS = (1.0, 1.0, 1.0, 1.0, 1.0)
# Reciprocal rank fusion (Cormack et al. 2009), BM25 first, the form of the archive's
# (quipu.history.search). Chosen on LoCoMo with bench/bench_locomo.py (1,982 questions, one store
# per conversation, 24 cells: R@1, R@2, R@5, R@10 in five categories and overall). Alone, the
# lexical gather is at plain FTS5's level (R@5 0.543 / R@10 0.627 against 0.546 / 0.631) and
# meaning is below it (0.502 / 0.600). Fused, the archive's K 10 with weight 0.2 gives 0.557 /
# 0.637 but two cells below plain FTS5; K 36 to 48 with a meaning weight of 0.15 to 0.18 is the
# region where no cell is below it; K 40 with 0.17 sits in its middle (0.563 / 0.639). A larger
# weight buys depth (1.0: R@10 0.649) at the cost of the first ranks (R@1 0.303 against 0.312).
K = 40.0
LEXICAL_WEIGHT = 1.0
MEANING_WEIGHT = 0.17
# A memory that shares no word with the query is listed only when its cosine reaches this (the
# default of ``fuse``; the deep list lets none in for a specific query, and uses OPEN_FLOOR for
# the others). On LoCoMo the evidence that meaning alone finds has a median cosine of 0.20 and
# the top ten of a meaning list 0.28; with the weights above such hits rank below every lexical hit of a full
# lexical list (1 / (K + 50) > 0.17 / (K + 1)), so the floor matters only where words find few.
MEANING_ONLY_FLOOR = 0.35
# A query that names nothing specific: meaning weighs twice a lexical hit that holds every word
# of the query, and a lexical hit weighs the square of its share of the query's IDF. On twelve
# facts asked without their words among the 1,811 real notes (bench/bench_paraphrase.py), the
# shipped rule before (meaning weight 0.17, cosine floor 0.35) listed none in the top ten; this
# one lists six, the Melbourne move 7th (10th at weight 1, where LoCoMo's R@1 is 0.320 against
# 0.319); one share for every hit (the best hit's) lists five and leaves LoCoMo's single-hop R@1
# below plain FTS5. LoCoMo's 24 cells stay at or above plain FTS5 (79 of its 1,982 questions
# name nothing specific).
OPEN_MEANING_WEIGHT = 2.0
SHARE_POWER = 2.0
# ... and a memory found by meaning alone needs this closeness about the store's mean: the
# paraphrased facts meaning finds in the top ten score 0.28 to 0.50 there, the 50th of a meaning
# list 0.19 to 0.24; in a handful of memories it keeps what shares nothing with the query out.
OPEN_FLOOR = 0.25
# A question about the person ("the user", "I", "my"; quipu.index.person) that names nothing
# specific is most likely answered by what someone wrote about themselves: the meaning gather
# looks PERSONAL_GATHER deep, raises memories in the first person by OWN_WORDS_BONUS of closeness,
# then keeps GATHER. Eighteen facts asked without their words, each among the 1,811 real notes
# (bench/bench_paraphrase.py: the twelve cases and six more ways to tell or ask about a move):
# `quipu search` lists 7 in its top ten with no bonus, 12 with 0.05, 14 with 0.1 and 14 with 0.2;
# 0.1 is the smaller of the two. LoCoMo is unchanged (none of its questions asks about "the user").
PERSONAL_GATHER = 200
OWN_WORDS_BONUS = 0.1
# A memory that holds every word of the query (every term the store has, that is) gains this much
# fused score, more than any fused score (at most (1 + OPEN_MEANING_WEIGHT) / (K + 1)), so it ranks
# above every memory that lacks one of the words, by words or by meaning: coordination first, the
# fused order within. On every shape of bench/bench_shapes.py it is at or above plain FTS5 at
# every depth, where the fused order alone was not on the real notes (any@1 0.852, R@10 0.943
# against 0.887, 0.987: memories found by meaning crowded out the note holding the six words) nor
# on one memory a session (any@1 0.645 against 0.651). Only for a query with a topic (``has_topic``):
# applied to "where is the user based" too, notes holding "user" and "based" pushed the move to
# Melbourne out of the top ten (bench/bench_paraphrase.py: 13 of 18 listed, against 14); not
# applied to six generic words half remembered from a note, the note fell out of the top ten
# behind what meaning found (R@10 0.975 against plain FTS5's 0.987). Three generic words held
# together are the fewest that said what the note was about in both benches.
WHOLE_QUERY = 1.0
WHOLE_QUERY_GENERIC_TERMS = 3
# A memory longer than this many words takes no part in meaning search: its one vector is the mean
# of its words' (quipu.index.vectors), and over hundreds of words that mean says little of what it
# holds. On LoCoMo kept as one memory a session (243 to 1,182 words; bench/bench_shapes.py, all ten
# conversations) meaning moved sessions holding the answer out of the top five (any@5 0.8996
# against plain FTS5's 0.9001, 0.9026 without it) for a gain at rank 1 only. The real notes run to
# 169 words and conversation turns to 98: neither is touched.
MEANING_MAX_WORDS = 200
SUPERSEDED_PENALTY = recall.SUPERSEDED_PENALTY
UNVERIFIED_PENALTY = recall.UNVERIFIED_PENALTY
# Less than one rank step of the fused score near the top (1 / (K + 1) against 1 / (K + 2) is
# 2.4%), so age orders hits the ranks cannot tell apart and never overtakes
# better evidence.
AGE_TIEBREAK = 0.02
_SECONDS_PER_DAY = 86400.0
# (id, cosine) of the memories nearest a query, best first, at most ``depth`` of them; the flag:
# closeness about the store's mean (to find) rather than the plain cosine (to re-order).
Nearest = Callable[[str, int, bool], Sequence[tuple[str, float]]]


@dataclass(frozen=True)
class Hit:
    id: str
    title: str
    description: str
    cls: str
    status: str
    superseded_by: str | None
    labels: tuple[str, ...]
    snippet: str
    score: float  # the fused score x labels x age: the order of the list
    fused: float
    lexical_rank: int | None
    meaning_rank: int | None
    bm25: float | None
    cosine: float | None
    label_factor: float
    age_factor: float
    store: str = ""  # "project" or "user" when two stores are searched together (``merge``)

    def label_text(self) -> str:
        return recall.label_text(self.status, self.superseded_by, self.labels)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "description": self.description, "class": self.cls,
            "status": self.status, "superseded_by": self.superseded_by, "labels": list(self.labels),
            "snippet": self.snippet, "score": round(self.score, 6), "fused": round(self.fused, 6),
            "lexical_rank": self.lexical_rank, "meaning_rank": self.meaning_rank,
            "bm25": None if self.bm25 is None else round(self.bm25, 4),
            "cosine": None if self.cosine is None else round(self.cosine, 4),
            "label_factor": self.label_factor, "age_factor": round(self.age_factor, 4),
            **({"store": self.store} if self.store else {}),
        }


@dataclass
class Deep:
    query: str
    terms: list[str] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    meaning: bool = False  # whether meaning search ran
    reason: str = ""
    words_alone: str = ""  # why meaning took no part though it could have

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "terms": self.terms, "meaning": self.meaning, "reason": self.reason,
                "words_alone": self.words_alone, "hits": [h.to_json() for h in self.hits]}


def lexical(db: Any, terms: Sequence[str], depth: int = GATHER) -> list[tuple[int, float]]:
    """(rowid, -bm25) of the best ``depth`` memories matching any of ``terms``, best first; equal
    scores newest first (on LoCoMo that order kept every cell at or above plain FTS5, where ties
    by rowid or shared ranks left one a hair below)."""
    if not terms:
        return []
    weights = ", ".join(str(w) for w in LEXICAL_FIELD_WEIGHTS)
    expr = " OR ".join(fts_quote(t) for t in terms)
    sql = (f"SELECT f.rowid, -bm25(memory_fts, {weights}) AS s FROM memory_fts AS f"
           " JOIN memories AS m ON m.rowid = f.rowid WHERE memory_fts MATCH ?"
           " ORDER BY round(s, 9) DESC, m.created_ts DESC, f.rowid LIMIT ?")
    return [(int(r), float(s)) for r, s in db.execute(sql, (expr, depth))]


def ranks(scored: Sequence[tuple[str, float]]) -> dict[str, int]:
    """1-based ranks of a best-first list; equal scores share a rank (1, 2, 2, 4), so equal
    closeness in meaning earns the same share of the fused score."""
    out: dict[str, int] = {}
    previous: float | None = None
    rank = 0
    for n, (i, score) in enumerate(scored, 1):
        if previous is None or abs(score - previous) > 1e-9 * max(1.0, abs(score)):
            rank = n
        previous = score
        out[i] = rank
    return out


def fuse(lexical_ids: Sequence[str], meaning: Sequence[tuple[str, float]] | None, *, k: float = K,
         lexical_weight: float = LEXICAL_WEIGHT, meaning_weight: float = MEANING_WEIGHT,
         meaning_only_floor: float = MEANING_ONLY_FLOOR, lexical_scores: Sequence[float] | None = None,
         shares: Sequence[float] | None = None) -> list[tuple[str, float, int | None, int | None]]:
    """(id, fused score, lexical rank, meaning rank), best first; ranks are 1-based (tied scores
    share one when ``lexical_scores`` are given). ``shares``: each lexical hit's share of the
    query (``shares``), its weight then ``lexical_weight * share ** SHARE_POWER``. Ties go to the
    better lexical rank, then the id."""
    if lexical_scores is None:
        lex = {i: r for r, i in enumerate(lexical_ids, 1)}
    else:
        lex = ranks(list(zip(lexical_ids, lexical_scores, strict=True)))
    weight = dict.fromkeys(lexical_ids, lexical_weight)
    if shares is not None:
        weight = {i: lexical_weight * s ** SHARE_POWER for i, s in zip(lexical_ids, shares, strict=True)}
    mean = ranks(list(meaning or ()))
    cos = dict(meaning or ())
    out = []
    for i in {*lex, *mean}:
        if i not in lex and cos[i] < meaning_only_floor:
            continue
        score = ((weight[i] / (k + lex[i]) if i in lex else 0.0)
                 + (meaning_weight / (k + mean[i]) if i in mean else 0.0))
        out.append((i, score, lex.get(i), mean.get(i)))
    out.sort(key=lambda x: (-x[1], x[2] if x[2] is not None else len(lex) + 1, x[0]))
    return out


def age_factor(created_ts: float, half_life_days: float | None, now: float) -> float:
    """At most AGE_TIEBREAK off a score, by the class's half-life: age re-orders, never buries."""
    if half_life_days is None or half_life_days <= 0:
        return 1.0
    age_days = max(0.0, (now - created_ts) / _SECONDS_PER_DAY)
    kept: float = 0.5 ** (age_days / half_life_days)
    return 1.0 - AGE_TIEBREAK * (1.0 - kept)


def label_factor(status: str, labels: Sequence[str]) -> float:
    factor = SUPERSEDED_PENALTY if status == "superseded" else 1.0
    return factor * (UNVERIFIED_PENALTY if "unverified" in labels else 1.0)


def search(db: Any, query: str, *, limit: int = 10, nearest: Nearest | None = None,
           now: float | None = None, keep: Callable[[Hit], bool] | None = None,
           excerpts: int | None = None) -> Deep:
    """The deep list for ``query`` on the index ``db``; ``nearest`` runs meaning search (None:
    words only). ``keep``: only the hits it accepts are listed (a filter over the whole list,
    before the cut to ``limit``); ``excerpts``: only the first that many hits get an excerpt
    (default: every hit)."""
    result = Deep(query=query)
    fusion = fused_list(db, query, nearest)
    result.terms = fusion.gathered  # what the lexical gather looked for
    result.meaning = fusion.meaning_ran
    if nearest is not None and not fusion.meaning_ran:
        result.words_alone = f"a request of more than {OPEN_MAX_TERMS} terms is ranked by its words alone"
    fused = fusion.fused
    bm25, cosine = fusion.bm25, fusion.cosine
    if not fused:
        result.reason = "no memory shares a word with the query" + (" nor is near its meaning" if result.meaning else "")
        return result
    rows = _rows(db, [i for i, *_r in fused])
    now = time.time() if now is None else now
    hits = []
    for mid, score, lex_rank, mean_rank in fused:
        row = rows.get(mid)
        if row is None:
            continue
        title, desc, cls, status, sup_by, labels, created, half_life, body = row
        if status == "retracted":
            continue
        label_list = tuple(labels.split()) if labels else ()
        lf = label_factor(status, label_list)
        af = age_factor(created, half_life, now)
        hits.append(Hit(mid, title, desc, cls, status, sup_by, label_list, "",
                        score * lf * af, score, lex_rank, mean_rank, bm25.get(mid), cosine.get(mid), lf, af))
    hits.sort(key=lambda h: (-h.score, h.lexical_rank or GATHER + 1, h.id))
    hits = [h for h in _successors_first(hits) if keep is None or keep(h)][:limit]
    if not hits:
        result.reason = ("every memory it matches is retracted (`quipu list --status retracted` lists them)"
                         if keep is None else "no memory it matches is kept by the filter")
    stems = [s for s in (fts_term(t) for t in fusion.terms) if s]
    shown = len(hits) if excerpts is None else excerpts
    result.hits = [_with_snippet(h, rows[h.id][-1], stems) if n < shown else h for n, h in enumerate(hits)]
    # A superseded hit names the newest memory that replaces it, not a successor itself replaced.
    result.hits = [replace(h, superseded_by=inject.newest(db, h.superseded_by)) if h.superseded_by else h
                   for h in result.hits]
    return result


@dataclass
class Fusion:
    """The two gathers of a query fused (``fused_list``), before labels and age."""
    terms: list[str]  # the query's content terms (``extract_terms``)
    gathered: list[str]  # what the lexical gather looked for: the terms, or every word of a long request
    fused: list[tuple[str, float, int | None, int | None]]  # (id, fused score, lexical rank, meaning rank)
    bm25: dict[str, float]
    cosine: dict[str, float]
    meaning_ran: bool
    specific: bool  # answered by its words: meaning only re-orders them, or takes no part


def fused_list(db: Any, query: str, nearest: Nearest | None) -> Fusion:
    """Gather by words and by meaning and fuse (see the module contract); ``nearest`` None: words only."""
    extracted = extract_terms(query)
    terms = [t.text for t in extracted]
    long = is_long(terms)
    gathered = every_word(query) if long else terms
    found = lexical(db, gathered)
    rowids = [r for r, _s in found]
    ids_of = _ids(db, rowids)
    lexical_ids = [ids_of[r] for r, _s in found if r in ids_of]
    bm25 = {ids_of[r]: s for r, s in found if r in ids_of}
    specific = long or (bool(lexical_ids) and words_decide(db, terms, rowids))
    meaning = None
    if nearest is not None and not long:
        meaning = gather_meaning(db, query, nearest, specific)
    query_shares = shares(db, terms, rowids) if lexical_ids else None
    fused = rank(lexical_ids, meaning, specific, query_shares, topic=has_topic(extracted))
    return Fusion(terms, gathered, fused, bm25, dict(meaning or ()), meaning is not None, specific)


def rank(lexical_ids: Sequence[str], meaning: Sequence[tuple[str, float]] | None, specific: bool,
         query_shares: Sequence[float] | None, *, topic: bool) -> list[tuple[str, float, int | None, int | None]]:
    """The deep list's fusion (see the module contract): for a specific query meaning re-orders
    the words' hits; otherwise a memory meaning finds may enter (``OPEN_FLOOR``), at
    ``OPEN_MEANING_WEIGHT``, and each lexical hit counts by its share of the query. Either way,
    when the query has a ``topic`` (``has_topic``), a lexical hit holding every word
    of it (a share of 1) gains ``WHOLE_QUERY``."""
    if specific or not meaning or query_shares is None:
        fused = fuse(lexical_ids, meaning, meaning_only_floor=float("inf") if specific else MEANING_ONLY_FLOOR)
    else:
        fused = fuse(lexical_ids, meaning, meaning_weight=OPEN_MEANING_WEIGHT, meaning_only_floor=OPEN_FLOOR,
                     shares=query_shares)
    whole = {i for i, s in zip(lexical_ids, query_shares or (), strict=False) if topic and s >= 1.0 - 1e-9}
    if not whole:
        return fused
    raised = [(i, score + WHOLE_QUERY if i in whole else score, lex, mean) for i, score, lex, mean in fused]
    raised.sort(key=lambda x: (-x[1], x[2] if x[2] is not None else len(lexical_ids) + 1, x[0]))
    return raised


def has_topic(terms: Sequence[Term]) -> bool:
    """Whether holding every one of ``terms`` says what a memory is about: one of them is not a
    generic word, or there are at least ``WHOLE_QUERY_GENERIC_TERMS`` of them."""
    return any(not t.generic for t in terms) or len(terms) >= WHOLE_QUERY_GENERIC_TERMS


def gather_meaning(db: Any, query: str, nearest: Nearest, specific: bool) -> list[tuple[str, float]]:
    """The meaning gather: the plain cosine for a specific query, else closeness about the
    store's mean, looked for deeper and with memories in their own words first when the query
    asks about the person (see the module contract); memories longer than ``MEANING_MAX_WORDS``
    left out."""
    personal = not specific and person.asks_about_the_person(query)
    meaning = _short(db, list(nearest(query, PERSONAL_GATHER if personal else GATHER, not specific)))
    return _own_words_first(db, meaning)[:GATHER] if personal else meaning


def _short(db: Any, meaning: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """``meaning`` less the memories whose text runs past ``MEANING_MAX_WORDS`` words."""
    rows = _rows(db, [i for i, _c in meaning])
    long = {i for i, row in rows.items()
            if len(f"{row[0]} {row[1]} {row[-1]}".split(maxsplit=MEANING_MAX_WORDS)) > MEANING_MAX_WORDS}
    return [(i, c) for i, c in meaning if i not in long]


def _own_words_first(db: Any, meaning: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """The meaning list of a question about the person, memories in their own words raised by
    ``OWN_WORDS_BONUS`` (best first, ties by id)."""
    rows = _rows(db, [i for i, _c in meaning])
    own = {i for i, row in rows.items() if person.in_their_own_words(f"{row[0]}\n{row[1]}\n{row[-1]}")}
    raised = [(i, c + OWN_WORDS_BONUS if i in own else c) for i, c in meaning]
    return sorted(raised, key=lambda x: (-x[1], x[0]))


def _successors_first(hits: list[Hit]) -> list[Hit]:
    """Move each superseded memory just below its successor when the successor is listed lower."""
    out = list(hits)
    for hit in hits:
        if hit.status != "superseded" or not hit.superseded_by:
            continue
        pos = {h.id: n for n, h in enumerate(out)}
        successor = pos.get(hit.superseded_by)
        if successor is not None and successor > pos[hit.id]:
            out.remove(hit)
            out.insert(successor, hit)
    return out


def _with_snippet(hit: Hit, body: str, stems: Sequence[str]) -> Hit:
    if not body or not body.strip():
        return hit
    return replace(hit, snippet=inject.excerpt(body, stems))


def _ids(db: Any, rowids: Sequence[int]) -> dict[int, str]:
    if not rowids:
        return {}
    marks = ", ".join("?" * len(rowids))
    return {int(r): str(i) for r, i in db.execute(f"SELECT rowid, id FROM memories WHERE rowid IN ({marks})",
                                                  list(rowids))}


def _rows(db: Any, ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    for chunk in range(0, len(ids), 500):
        part = list(ids[chunk:chunk + 500])
        marks = ", ".join("?" * len(part))
        sql = ("SELECT id, title, description, class, status, superseded_by, labels, created_ts, half_life_days, body"
               f" FROM memories WHERE id IN ({marks})")
        for row in db.execute(sql, part):
            out[row[0]] = tuple(row[1:])
    return out
