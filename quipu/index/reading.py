"""How the deep list reads a query's words against the index (``quipu.index.deep``).

- ``shares(db, terms, rowids)``: each lexical hit's share of the query, the IDF mass of the
  query's terms it holds.
- ``is_long(terms)``: whether the query is a request of a sentence or more (more than
  ``OPEN_MAX_TERMS`` terms): every word of it but the function words (``every_word``) is
  gathered, ranked by BM25 alone, and meaning takes no part.
- ``words_decide(db, terms, rowids)``: whether a shorter query is answered by its words, meaning
  only re-ordering their hits: it names something specific (a word outside the index's lexicon
  of ordinary English) that one of the hits holds.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from quipu.prompt import indexread
from quipu.prompt.query import fts_quote
from quipu.prompt.stem import fts_term

# FTS5 answers "MATCH ? AND rowid IN (...)" by seeking each listed row (about 14 us each here),
# and a plain MATCH by reading the term's list (about 0.3 us an entry): for a term in fewer than
# this many memories per listed row, ``shares`` reads the whole list and picks the rows out of it.
WHOLE_LIST_PER_ROW = 40

# A query of more than this many terms (a request of a sentence or more) is answered by its words
# alone. Its one vector is the mean of many words, and each lexical hit holds a small share of
# them: with the open rule meaning decided alone (on the held-out pairs of bench_bounds, real notes
# and the prompts a developer would type for them, the deep list put 154 of 346 notes in its top
# two against plain FTS5's 159, top ten 223 against 242). Chosen on the first three sets (top two
# 79 as shipped; 90 with 4, 5 or 6 terms, 89 with 8, 87 with 10). Even re-ordering the words' hits
# (the specific rule, at any meaning weight from 0.03 to 0.17) left the first three sets below
# plain FTS5 at some depth (top ten 121 to 123 against 125); so meaning takes no part.
OPEN_MAX_TERMS = 6
# ... and its words are every word of it but these function words (NLTK's English stop words),
# not the content terms the hook keeps: in a long request the conversational words the hook
# sets aside ("actually", "remind", "md", a path's folders) are weighed by BM25's IDF as plain
# FTS5 weighs them; the hook's content terms alone left the first three sets below plain FTS5 at
# the top one and the top ten (top ten 119 to 122 against 125).
FUNCTION_WORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his
himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom this
that that'll these those am is are was were be been being have has had having do does did doing a an the and but
if or because as until while of at by for with about against between into through during before after above below
to from up down in out on off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will just don don't should
should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't
haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't
weren weren't won won't wouldn wouldn't
""".split())
# A request's words past this many (a long paste's tail) are not looked for: the OR of every word
# costs a read of each word's rows. Plain FTS5 in the benches reads as many.
_MAX_WORDS = 200
_WORD = re.compile(r"\w+")


def is_long(terms: Sequence[str]) -> bool:
    """Whether a query of these content terms is a request of a sentence or more."""
    return len(terms) > OPEN_MAX_TERMS


def every_word(query: str) -> list[str]:
    """The words of ``query`` in order, each once, less ``FUNCTION_WORDS``: what a long request is
    gathered by. An identifier joined by underscores stays one word (``max_turns``), which FTS5
    reads as the phrase of its parts."""
    return list(dict.fromkeys(w for w in _WORD.findall(query.lower()) if w not in FUNCTION_WORDS))[:_MAX_WORDS]


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
    """Whether a shorter query is answered by its words, meaning only re-ordering their hits: a
    term outside the lexicon of ordinary words occurs in one of the lexical hits ``rowids``."""
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
