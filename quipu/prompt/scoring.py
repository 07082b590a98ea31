"""The arithmetic of a score: BM25 per term, the natural log, decay, and how the rarest terms carry a memory."""
from quipu.prompt.indexread import frequencies_of, stems_of
from quipu.prompt.query import forms_of, fts_any, fts_quote, long_form

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from sqlite3 import Connection


# BM25 column weights, in the FTS column order title, aliases, tags, description, body: every
# field alike. What a memory is about still counts (an alias or a title said whole ranks first:
# ``evidence.phrase_hits``), but a word of a title is no surer a sign than one of the body: real
# notes' titles are often a first line cut short ("If this is a new feature, include a
# convincing…"). Measured with bench/bench_precision.py on real notes and prompts: weights 8, 6,
# 4, 3, 1 put the relevant note in the top two of the candidates for 37 of 40 paired prompts
# and 28 of 46 and 22 of 60 held-out ones; every field alike 38, 31 and 26 (plain FTS5 over the
# same text: 40, 32, 32), silence unchanged (0 of 336 conversational, 4 of 159 unrelated), and
# LoCoMo's hook hit@2 the same (its titles hold no word of a question). ``quipu search`` found
# the same for its lexical gather (quipu.index.deep.LEXICAL_FIELD_WEIGHTS).
BM25_WEIGHTS = (1.0, 1.0, 1.0, 1.0, 1.0)
IDF_MIN_DOCS = 100
READ_WHOLE_DF = 5000          # below this many matches, read a term's rows whole (see rows_matching)
TERM_READ_LIMIT = 400         # in a large store, a chosen term's best rows read at most
GATHER_ROWS = 400             # in a large store, the rarest chosen terms are read up to this many memories in all
# A store of at most this many memories is read whole, term by term: its rows are few, and there a
# word in 300 memories is common yet may be what a question asks about (LoCoMo's hit@2 fell from
# 0.471 to 0.463 with the budget on its stores of about 600 turns; bench/bench_locomo.py).
GATHER_WHOLE_STORE = 5000
_SECONDS_PER_DAY = 86400.0
_LN2 = 0.6931471805599453
_SQRT2 = 1.4142135623730951


def ln(x: float) -> float:
    """The natural logarithm, to double precision, without ``math``: loading that shared library
    (``math`` is not built into every interpreter; here it is lib-dynload) costs the prompt hook
    more than all of its uses here (bench/bench_stand_ins.py). x = m * 2**k with m in [1/sqrt 2, sqrt 2),
    then ln m = 2 atanh(s), s = (m - 1) / (m + 1) (|s| < 0.18), summed until the terms vanish."""
    if not x > 0.0 or x == float("inf"):
        raise ValueError(f"ln({x!r}) is not a finite real number")
    k = 0
    while x >= _SQRT2:
        x *= 0.5
        k += 1
    while x < _SQRT2 * 0.5:
        x *= 2.0
        k -= 1
    s = (x - 1.0) / (x + 1.0)
    s2 = s * s
    power = s
    total = 0.0
    n = 1
    while True:
        step = power / n
        if total + step == total:
            break
        total += step
        power *= s2
        n += 2
    return k * _LN2 + 2.0 * total


def decay(created_ts: float, half_life_days: float | None, now: float) -> float:
    if half_life_days is None or half_life_days <= 0:
        return 1.0
    age_days = max(0.0, (now - created_ts) / _SECONDS_PER_DAY)
    kept: float = 0.5 ** (age_days / half_life_days)
    return kept


def carried_scores(raw: dict[int, dict[str, float]], scale: dict[str, float], rarest: int) -> dict[int, float]:
    """Per memory, the score its best ``rarest`` term summands (each scaled to the smoothed idf)
    carry: any of the gathered terms may carry it, but no more than ``rarest`` of them, so a long
    prompt is not rewarded for its length. One pass, on every matching row: keep it lean."""
    out: dict[int, float] = {}
    for rowid, terms in raw.items():
        if len(terms) <= rarest:
            out[rowid] = sum(v * scale[t] for t, v in terms.items())
        else:
            out[rowid] = sum(sorted((v * scale[t] for t, v in terms.items()), reverse=True)[:rarest])
    return out


def match_expr(terms: "Sequence[str]") -> str:
    return " OR ".join(fts_any(t) for t in terms)


def fts_idf(total: int, df: int) -> float:
    """The idf FTS5's bm25() uses (clamped to 1e-6 for terms in half the rows or more)."""
    value = ln((total - df + 0.5) / (df + 0.5)) if total > 0 else 0.0
    return value if value > 0 else 1e-6


def idf(total: int, df: int) -> float:
    """Smoothed idf, never zero. Small stores are treated as holding at least IDF_MIN_DOCS
    memories: in a store of three notes, a word found in one of them is still a real signal."""
    total = max(total, IDF_MIN_DOCS)
    return ln(1.0 + (total - df + 0.5) / (df + 0.5))


def rows_matching(db: "Connection", expr: str, rowids: "Sequence[int]", df: int) -> list[tuple[int, float]]:
    """(rowid, -bm25) of the candidates matching ``expr``.

    FTS5 answers ``rowid IN (...)`` slowly (about 0.1 ms per listed row at 100,000 memories), so a
    term found in few memories is read whole and filtered here; only a common one uses IN."""
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    wanted = set(rowids)
    if df <= READ_WHOLE_DF:
        sql = f"SELECT rowid, -bm25(memory_fts, {weights}) FROM memory_fts WHERE memory_fts MATCH ?"
        return [(r, score) for r, score in db.execute(sql, (expr,)) if r in wanted]
    marks = ", ".join("?" * len(rowids))
    sql = f"SELECT rowid, -bm25(memory_fts, {weights}) FROM memory_fts WHERE memory_fts MATCH ? AND rowid IN ({marks})"
    return list(db.execute(sql, [expr, *rowids]))


class Matches:
    """What ``term_matches`` read: per memory the summand of each term it holds (``summands``),
    the terms read whole (``gathered``, the rarest) and, per memory, the sum of FTS5's summands of
    every form of them it holds (``base``: what ``bm25()`` of an expression ANDed with them adds)."""

    __slots__ = ("summands", "gathered", "base")

    def __init__(self) -> None:
        self.summands: dict[int, dict[str, float]] = {}
        self.gathered: list[str] = []
        self.base: dict[int, float] = {}


def term_matches(db: "Connection", terms: "Sequence[str]", df: dict[str, int],
                 form_df: "dict[str, int] | None" = None, total: int = 0) -> Matches:
    """Per memory matching the rarest of ``terms`` (given rarest first): FTS5's BM25 summand of
    each term it contains.

    FTS5's bm25() is a sum over the query's phrases of idf(phrase) x a saturated,
    length-normalised, field-weighted term frequency; one single-term query per term recovers
    each summand. In a store of more than GATHER_WHOLE_STORE memories the cost is bounded by
    GATHER_ROWS: the rarest terms are read whole while their memories add up to at most that
    many (the first always, its best TERM_READ_LIMIT rows when it is more common); a more common
    term only adds its summand to the memories those found, through ``term AND (the rarest)``
    (its summand is that bm25() less ``base``). A prompt whose words each match thousands of
    memories so reads about GATHER_ROWS rows, not thousands a term.
    A term with other forms (``forms_of``) is read form by form: a memory's summand is its best
    form's, each form's idf exchanged for the term's (``form_df``: each form's frequency), so a
    rare short form ("db") does not outweigh the term it stands for."""
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    found = Matches()
    read = 0
    large = total > GATHER_WHOLE_STORE
    for term in terms:
        forms = forms_of(term) if form_df is not None else (term,)
        gather = not large or not found.gathered or read + df.get(term, 0) <= GATHER_ROWS
        narrow = "" if gather else f" AND ({match_expr(found.gathered)})"
        present = [f for f in forms if len(forms) == 1 or (form_df or {}).get(f, 0)]
        limit = TERM_READ_LIMIT // max(len(present), 1)  # the forms of one term share its rows
        for form in present:
            count = df.get(term, 0) if len(forms) == 1 else (form_df or {}).get(form, 0)
            sql = f"SELECT rowid, -bm25(memory_fts, {weights}) AS s FROM memory_fts WHERE memory_fts MATCH ?"
            if large and gather and count > limit:
                sql += f" ORDER BY s DESC LIMIT {limit}"
            factor = 1.0 if len(forms) == 1 else fts_idf(total, df.get(term, 0)) / fts_idf(total, count)
            for rowid, score in db.execute(sql, (fts_quote(form) + narrow,)):
                if gather:
                    found.base[rowid] = found.base.get(rowid, 0.0) + float(score)
                elif rowid not in found.base:
                    continue  # past the rarest term's best rows
                else:
                    score = max(0.0, score - found.base[rowid])
                summands = found.summands.setdefault(rowid, {})
                summands[term] = max(summands.get(term, 0.0), float(score) * factor)
        if gather:
            found.gathered.append(term)
            read += min(df.get(term, 0), TERM_READ_LIMIT)
    return found


def share_of(
    db: "Connection", rowids: "Sequence[int]", terms: "Sequence[str]", gathered: "Sequence[str]",
    base: dict[int, float], rare: int,
) -> dict[int, float]:
    """Each candidate's BM25 for ``terms`` as a share (0..1) of the best candidate's.

    The query is ANDed with the gathered terms, so it reads no more rows than they match
    (``rare``); their own summands (``base``) are then taken off again (bm25 is additive)."""
    if not terms or not rowids or not gathered:
        return {}
    expr = f"({match_expr(terms)}) AND ({match_expr(gathered)})"
    found = [(rowid, score - base.get(rowid, 0.0)) for rowid, score in rows_matching(db, expr, rowids, rare)]
    best = max((score for _, score in found), default=0.0)
    return {rowid: max(0.0, score) / best for rowid, score in found} if best > 1e-9 else {}


def stems_and_frequencies(db: "Connection", words: "Sequence[str]", total: int,
                           form_df: dict[str, int]) -> "tuple[dict[str, str], dict[str, int]]":
    """Each word's stem and document frequency. A word with other forms ("prod", "production")
    takes its long form's stem, so two forms in one prompt are one term, and the memories holding
    any of its forms (at most the store) as its frequency; ``form_df`` gets each form's own."""
    every = list(dict.fromkeys(f for w in words for f in forms_of(w)))
    own = stems_of(db, every)
    found = frequencies_of(db, every, own)
    stems = dict(own)
    df: dict[str, int] = {}
    form_df.update(found)
    for word in words:
        forms = forms_of(word)
        if len(forms) == 1:
            df[word] = found.get(word, 0)
            continue
        stems[word] = own.get(long_form(word), word)
        by_stem = {own.get(f, f): found.get(f, 0) for f in forms}
        df[word] = min(sum(by_stem.values()), max(total, 1))
    return stems, df
