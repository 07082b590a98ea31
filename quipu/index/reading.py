"""How the deep list reads a query's words against the index (``quipu.index.deep``).

- ``shares(db, terms, rowids)``: each lexical hit's share of the query, the IDF mass of the
  query's terms it holds.
- ``words_decide(db, terms, rowids)``: whether the query is answered by its words, meaning only
  re-ordering their hits: it has more than ``OPEN_MAX_TERMS`` terms, or it names something
  specific (a word outside the index's lexicon of ordinary English) that one of the hits holds.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from quipu.prompt import indexread
from quipu.prompt.query import fts_quote
from quipu.prompt.stem import fts_term

# FTS5 answers "MATCH ? AND rowid IN (...)" by seeking each listed row (about 14 us each here),
# and a plain MATCH by reading the term's list (about 0.3 us an entry): for a term in fewer than
# this many memories per listed row, ``shares`` reads the whole list and picks the rows out of it.
WHOLE_LIST_PER_ROW = 40

# The deep list's open rule (``deep.OPEN_MEANING_WEIGHT``) applies only to a query of at most this
# many terms. A longer one (a request of a sentence or more) is answered by its words as a specific
# query is: its one vector is the mean of many words, and each lexical hit holds a small share of
# them, so the open rule let meaning decide alone. On the held-out pairs (bench_bounds: real notes,
# the prompts a developer would type for them, on the 1,797 real notes) the deep list put 154 of
# 346 notes in its top two against plain FTS5's 159 (top ten 223 against 242); on the 139 open
# prompts it found 51 where words alone found 62. Chosen on the first three sets (top two 79 as
# shipped; 90 with 4, 5 or 6 terms, 89 with 8, 87 with 10), measured on the other three (top two
# 75 -> 78, top ten 111 -> 117), on LoCoMo and on every shape of bench_shapes (its notes are asked
# by six words: unchanged). The paraphrased facts of bench_paraphrase are asked in two to four terms.
OPEN_MAX_TERMS = 6


def shares(db: Any, terms: Sequence[str], rowids: Sequence[int]) -> list[float]:
    """Each of ``rowids``' share of the query: the IDF (``ln((N + 1) / (df + 0.5))``) of the
    ``terms`` it matches over that of them all (a term no memory has counts in the whole)."""
    if not rowids or not terms:
        return [0.0] * len(rowids)
    total = indexread.store_size_of(db)
    df = indexread.document_frequencies(db, list(dict.fromkeys(terms)))
    marks = ", ".join("?" * len(rowids))
    held = [0.0] * len(rowids)
    place = {r: n for n, r in enumerate(rowids)}
    whole = 0.0
    for term, n in df.items():
        quoted = fts_quote(term)
        idf = math.log((total + 1) / (n + 0.5))
        whole += idf
        if n <= WHOLE_LIST_PER_ROW * len(rowids):  # reading the term's whole list is cheaper than seeking each row
            matched = db.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (quoted,))
        else:
            matched = db.execute(f"SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid IN ({marks})",
                                 [quoted, *rowids])
        for (rowid,) in matched:
            at = place.get(int(rowid))
            if at is not None:
                held[at] += idf
    return [h / whole if whole > 0 else 0.0 for h in held]


def words_decide(db: Any, terms: Sequence[str], rowids: Sequence[int]) -> bool:
    """Whether the query is answered by its words, meaning only re-ordering their hits: it has
    more than ``OPEN_MAX_TERMS`` terms, or it names something specific that one of the lexical
    hits ``rowids`` holds (``_names_something_specific``)."""
    return len(terms) > OPEN_MAX_TERMS or _names_something_specific(db, terms, rowids)


def _names_something_specific(db: Any, terms: Sequence[str], rowids: Sequence[int]) -> bool:
    """Whether a term outside the lexicon of ordinary words occurs in one of the lexical hits."""
    stems = {s: t for t in terms if (s := fts_term(t))}
    if not stems:
        return False
    marks = ", ".join("?" * len(stems))
    try:
        ordinary = {r[0] for r in db.execute(f"SELECT term FROM lexicon WHERE term IN ({marks})", list(stems))}
    except Exception:  # noqa: BLE001 - an index without a lexicon: nothing is specific
        return False
    specific = [t for s, t in stems.items() if s not in ordinary]
    if not specific or not rowids:
        return False
    marks = ", ".join("?" * len(rowids))
    expr = " OR ".join(fts_quote(t) for t in specific)
    sql = f"SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? AND rowid IN ({marks}) LIMIT 1"
    return db.execute(sql, [expr, *rowids]).fetchone() is not None
