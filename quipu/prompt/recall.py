"""Recall: rank memories for a prompt from the SQLite index, standard library only.

This is the prompt path. It imports nothing outside the standard library and never parses YAML
or opens git objects. Contract:
- The prompt must carry a topic of its own: with no content terms other than generic words
  (``quipu.prompt.query.is_generic``: request verbs, the everyday vocabulary of working on code, stop
  words of the languages people write in, numbers, tokens of three characters or fewer) the
  answer is empty, however rich the context. The one exception is a short question in everyday
  words, answered only by a memory whose title or aliases say the same (``names_a_subject``).
- The GATHER_TERMS rarest topic terms of the prompt present in the store (document frequency,
  stemmed the way the index stems; an abbreviation and its long form are one term,
  ``quipu.prompt.query.forms_of``) find candidates; a memory's best RAREST_TERMS of their
  summands carry its score, so a long prompt is not rewarded for its length. The rows read are
  bounded (``quipu.prompt.scoring.term_matches``): the rarest terms up to GATHER_ROWS memories,
  a more common term only where they matched.
- A memory whose alias (or title) the prompt says whole is a candidate and speaks
  (``quipu.prompt.evidence.phrase_hits``), ranked first. The prompt's other
  terms can at most double that score (``REST_BOOST``); context terms (previous human turn, last
  assistant text) can lift it by at most ``CONTEXT_BOOST``. Neither can make a memory a candidate.
- A memory naming a file the person names ("@TODO.md") is a candidate, the file weighing its idf;
  one of the prompt's project (``Options.cwd``, ``own_store``) speaks, one of another project
  needs strong evidence to speak at all (``quipu.prompt.files``).
- Scores are BM25 (every field alike), then multiplied by decay (half-life from the class and
  created date; no decay when the half-life is NULL), a superseded penalty and an unverified
  penalty. A floor keeps weak matches out. A retracted memory (``quipu retract``) is never recalled.
  A superseded hit is shown after the memory in force that replaces it (``inject.with_successors``).
- A memory is injected only when the prompt's own words are evidence for it (``Evidence``:
  how many distinct topic terms it has, how specific they are, and what share of the prompt's
  topic they cover); a single incidental match never speaks.
- ``recall`` returns ``Recall`` with hits and an explanation (the terms chosen, their document
  frequencies, the scores and why anything was left out, down to the rule that kept a memory
  out) for ``quipu recall --explain``.
"""
# Only the cheapest modules: ``sqlite3``, ``json``, ``dataclasses``, ``typing`` and even ``os`` each
# cost a large part of the hook's budget. ``_sqlite3`` (what ``sqlite3`` wraps) is loaded by
# ``open_index`` only, so a prompt with no topic never pays for it.
import time

from quipu.prompt.evidence import (
    EVIDENCE_CHECKS,
    Evidence,
    is_question,
    names_a_subject,
    opens_with_assent,
    phrase_hits,
)
from quipu.prompt.files import file_hits, named_files, of_other_projects
from quipu.prompt.indexread import store_size_of
from quipu.prompt.inject import DEFAULT_MAX_CHARS, HARD_MAX_CHARS, show, with_successors
from quipu.prompt.query import extract_terms, forms_of, fts_any, split_pasted
from quipu.prompt.scoring import (
    carried_scores,
    decay,
    fts_idf,
    idf,
    match_expr,
    rows_matching,
    share_of,
    stems_and_frequencies,
    term_matches,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from sqlite3 import Connection
    from typing import Any

    from quipu.prompt.query import Term

# The best this many term summands carry a memory's score. LoCoMo's hook hit@2: 0.458 with 3, 0.471
# with 4, 0.474 with 6 (plain FTS5 0.465); with every field alike, 6 rather than 4 put 32 rather
# than 30 of 46 held-out notes in the top two (a natural question says its subject in more words).
RAREST_TERMS = 6
GATHER_TERMS = 12              # the rarest topic terms that find candidates
SHORT_WORDS = 30              # a prompt of at most this many words ranks memories holding all its terms first
CONTEXT_TERMS = 2
PASTE_TERMS = 8               # a pasted log's words that may sharpen the person's own
CONTEXT_BOOST = 0.25          # context can lift a score by at most a quarter
# The prompt's other terms can at most double a score the rarest terms earned, never create one.
# LoCoMo recall@5: 0.25 -> 0.528, 0.5 -> 0.540, 1.0 -> 0.546, 1.5 -> 0.543.
REST_TERMS = 6
REST_BOOST = 1.0
SUPERSEDED_PENALTY = 0.25     # still reachable, clearly below its successor
UNVERIFIED_PENALTY = 0.6      # a claim failed a probe: shown, but behind verified peers
CANDIDATES = 50
DEFAULT_LIMIT = 2
DEFAULT_MIN_SCORE = 1.0
# Hard bounds no setting passes (Claude Code cuts hook context at 10,000 characters); the index's
# copy of the settings is clamped again here, so even a forged index cannot lift them.
HARD_LIMIT = 5
FACT_SLOTS = 1                # self-updating fact notes may take at most this many slots
FACT_ID_PREFIX = "fact-"      # their ids (quipu.capture.facts.fact_id); other facts are not capped


def label_text(status: str, superseded_by: "str | None", labels: "Sequence[str]") -> str:
    """A hit's labels as shown to a person or the model: "superseded by X", then the rest."""
    out = []
    if status == "superseded":
        out.append(f"superseded by {superseded_by}" if superseded_by else "superseded")
    out.extend(labels)
    return ", ".join(out)


class Hit:
    """One recalled memory with its score and why it matched."""

    __slots__ = ("id", "title", "description", "cls", "status", "superseded_by", "labels", "snippet",
                 "bm25", "score", "matched", "context_matched", "rowid", "store")

    def __init__(self, id: str, title: str, description: str, cls: str, status: str, superseded_by: str | None,
                 labels: tuple[str, ...], snippet: str, bm25: float, score: float, matched: tuple[str, ...],
                 context_matched: tuple[str, ...], rowid: int = 0) -> None:
        self.rowid = rowid
        self.store = ""  # "project" or "user" when two stores are read together (``merge``)
        self.id = id
        self.title = title
        self.description = description
        self.cls = cls
        self.status = status
        self.superseded_by = superseded_by
        self.labels = labels
        self.snippet = snippet
        self.bm25 = bm25
        self.score = score
        self.matched = matched
        self.context_matched = context_matched

    def __repr__(self) -> str:
        return f"Hit({self.id!r}, score={self.score:.3f})"

    def label_text(self) -> str:
        return label_text(self.status, self.superseded_by, self.labels)

    @property
    def self_updating(self) -> bool:
        """A self-updating fact note, whose slots ``FACT_SLOTS`` caps (two facts a person wrote
        may both answer a question)."""
        return self.cls == "fact" and self.id.startswith(FACT_ID_PREFIX)

    def to_json(self) -> "dict[str, Any]":
        return {
            **({"store": self.store} if self.store else {}),
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "class": self.cls,
            "status": self.status,
            "superseded_by": self.superseded_by,
            "labels": list(self.labels),
            "snippet": self.snippet,
            "bm25": round(self.bm25, 4),
            "score": round(self.score, 4),
            "matched": list(self.matched),
        }


class Recall:
    """The outcome of one recall: hits, every scored candidate, and the explanation."""

    def __init__(self, reason: str = "") -> None:
        self.hits: list[Hit] = []
        self.candidates: list[Hit] = []  # every scored match, best first
        self.terms: list[tuple[str, int, bool]] = []  # (term, df, chosen)
        self.files: list[tuple[str, int]] = []  # (a file the prompt names, memories naming it)
        self.generic: list[str] = []  # the prompt's terms that name no subject on their own
        self.context_terms: list[str] = []
        self.left_out: list[str] = []
        self.reason = reason

    def to_json(self) -> "dict[str, Any]":
        return {
            "hits": [h.to_json() for h in self.hits],
            "terms": [{"term": t, "df": df, "chosen": c, "generic": t in self.generic} for t, df, c in self.terms],
            "files": [{"file": name, "df": df} for name, df in self.files],
            "context_terms": self.context_terms,
            "left_out": self.left_out,
            "reason": self.reason,
        }


class Options:
    """How many memories, how strict, and which to leave out."""

    __slots__ = ("limit", "min_score", "max_chars", "exclude", "now", "rarest", "fact_slots", "require_topic",
                 "store_size", "gather", "cwd", "own_store")

    def __init__(self, limit: int = DEFAULT_LIMIT, min_score: float = DEFAULT_MIN_SCORE,
                 max_chars: int = DEFAULT_MAX_CHARS, exclude: frozenset[str] = frozenset(),
                 now: float | None = None, rarest: int = RAREST_TERMS, fact_slots: int | None = FACT_SLOTS,
                 require_topic: bool = True, store_size: "int | None" = None, gather: int = GATHER_TERMS,
                 cwd: "str | None" = None, own_store: bool = False) -> None:
        self.gather = max(gather, rarest)
        self.cwd = cwd  # the folder the prompt is typed in: which memories are of its project
        self.own_store = own_store  # the store is that project's own: every memory in it is
        self.limit = limit
        self.min_score = min_score
        self.max_chars = max_chars
        self.exclude = exclude
        self.now = now
        self.rarest = rarest
        self.fact_slots = fact_slots  # None: fact notes may take every slot (search)
        self.require_topic = require_topic  # False: generic words count as topic words (search)
        self.store_size = store_size  # memories in the index, when the caller read it already

    @classmethod
    def from_config(cls, config: "dict[str, Any]", **overrides: "Any") -> "Options":
        values: dict[str, Any] = {}
        for key, kind in (("limit", int), ("min_score", float), ("max_chars", int)):
            value = config.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                values[key] = kind(value)
        values.update({k: v for k, v in overrides.items() if v is not None})
        options = cls(**values)
        options.limit = min(options.limit, HARD_LIMIT)
        options.max_chars = min(options.max_chars, HARD_MAX_CHARS)
        return options


def merge(results: "Sequence[tuple[str, Recall]]", limit: int, fact_slots: "int | None" = FACT_SLOTS) -> "Recall":
    """One answer from the recalls of several stores (``[(label, result)]``, the first store
    first): each hit is labelled with its store, the best scores win, the first store on ties, a
    copy both hold (one id, title and description) is shown once, at most ``limit`` hits and
    ``fact_slots`` fact notes. Each store's rules (the floor, the evidence) decided its hits."""
    if len(results) == 1 and not results[0][0]:  # one store read alone: its answer as it is
        return results[0][1]
    merged = Recall()
    pool: list[Hit] = []
    for label, result in results:
        for hit in result.hits:
            hit.store = label
        pool += result.hits
        merged.terms = merged.terms or result.terms
        merged.files = merged.files or result.files
        merged.generic = merged.generic or result.generic
        merged.context_terms = merged.context_terms or result.context_terms
        merged.left_out += [f"{line} ({label} store)" for line in result.left_out]
        merged.candidates += result.candidates
    pool.sort(key=lambda h: -h.score)  # stable: the first store keeps ties
    facts = 0
    taken: set[tuple[str, str, str]] = set()
    for hit in pool:
        if (hit.id, hit.title, hit.description) in taken:  # a copy in both stores: shown once, the better-ranked
            continue
        taken.add((hit.id, hit.title, hit.description))
        if hit.self_updating and fact_slots is not None and facts >= fact_slots and limit > fact_slots:
            merged.left_out.append(f"{hit.id}: self-updating fact notes may take only {fact_slots} slot(s) ({hit.store} store)")
            continue
        if len(merged.hits) >= limit:
            merged.left_out.append(f"{hit.id}: past the limit of {limit} ({hit.store} store)")
            continue
        facts += hit.self_updating
        merged.hits.append(hit)
    if not merged.hits:
        merged.reason = "; ".join(f"{label} store: {r.reason}" for label, r in results if r.reason)
    return merged


def recall(
    db: "Connection",
    prompt: str,
    context: str = "",
    options: "Options | None" = None,
    prompt_terms: "list[Term] | None" = None,
) -> "Recall":
    """Rank memories for ``prompt`` (optionally sharpened by ``context``); ``prompt_terms`` may
    pass ``extract_terms(prompt)`` when the caller already has it.

    A prompt that is mostly pasted output (a log, a listing, code) is first read by the person's
    own words, the paste only sharpening like the transcript does: a log's many rare tokens would
    otherwise pick the candidates and outweigh what the person asks. When the person's words
    alone find nothing to say, the whole prompt is read as before."""
    options = options or Options()
    own, pasted = split_pasted(prompt) if options.require_topic else ("", "")
    files = named_files(own or prompt) if options.require_topic else []
    named = file_hits(db, files, options.cwd, options.own_store) if files else ({}, {})
    if own:
        first = _recall(db, own, pasted, options, None, from_paste=True, files=named)
        if first.hits:
            return first
    return _recall(db, prompt, context, options, prompt_terms, files=named)


def _recall(db: "Connection", prompt: str, context: str, options: "Options",
            prompt_terms: "list[Term] | None", from_paste: bool = False,
            files: "tuple[dict[int, tuple[str, bool]], dict[str, int]]" = ({}, {})) -> "Recall":
    """One reading of ``prompt``; ``from_paste``: ``context`` is what the person pasted, and a
    memory sharing none of its words is not shown (the person's words alone are often the
    everyday words of a request: "we get this error, how can I resolve this?")."""
    result = Recall()
    if prompt_terms is None:
        prompt_terms = extract_terms(prompt)
    if not options.require_topic:
        prompt_terms = [t.__class__(t.text, t.strong, False) for t in prompt_terms]
    result.generic = [t.text for t in prompt_terms if t.generic]
    if not names_a_subject(prompt, prompt_terms, list(files[1])):
        result.reason = "the prompt has no topic of its own (no content terms)"
        if result.generic:
            result.reason = ("the prompt has no topic of its own: its words (" + ", ".join(result.generic[:12])
                             + ") are everyday vocabulary, numbers or short tokens, which never stand alone")
        return result
    by_title = all(t.generic for t in prompt_terms) and not files[0]  # a question in everyday words
    context_terms = [t for t in extract_terms(context) if t.text not in {p.text for p in prompt_terms}]
    words = [t.text for t in prompt_terms] + [t.text for t in context_terms]
    total = store_size_of(db, options.store_size)
    form_df: dict[str, int] = {}
    stems, df = stems_and_frequencies(db, words, total, form_df)
    # The score: the rarest topic terms (never a generic word: "fix", "error"); rarest first, then a
    # strong signal (path, error name), then word order; one stem takes one place. In a short
    # question its generic words follow where there is room ("what did Jon design for his store?");
    # in a request they would only find noise. The evidence decision never counts them as a topic.
    topic = [t for t in prompt_terms if not t.generic and df.get(t.text, 0) > 0]
    topic.sort(key=lambda t: (df[t.text], not t.strong))
    question = options.require_topic and is_question(prompt)
    if (topic or by_title) and question:
        support = [t for t in prompt_terms if t.generic and df.get(t.text, 0) > 0 and len(t.text) > 2
                   and not t.text.isdigit()]
        topic += sorted(support, key=lambda t: df[t.text])
    chosen: list[str] = []
    for term in topic:
        if len(chosen) < options.gather and all(stems.get(c) != stems.get(term.text) for c in chosen):
            chosen.append(term.text)
    result.terms = [(t.text, df.get(t.text, 0), t.text in chosen) for t in prompt_terms]
    # A title or alias said whole in the prompt makes its memory a candidate, and is evidence.
    phrased = phrase_hits(db, prompt, df) if options.require_topic and (question or not by_title) else {}
    filed = {r: name for r, (name, _tied) in files[0].items() if r not in phrased}
    speaks = {**{r: name for r, name in filed.items() if files[0][r][1]}, **phrased}
    result.files = list(files[1].items())
    if not chosen and not phrased and not filed:
        result.reason = "no topic term of the prompt occurs in the store"
        return result
    # The rest of the prompt, then the transcript tail, may only sharpen: each re-orders the
    # candidates the chosen terms found, by a bounded factor.
    chosen_stems = {stems.get(c) for c in chosen}
    rest = sorted(
        (t for t in prompt_terms if stems.get(t.text) not in chosen_stems and df.get(t.text, 0) > 0),
        key=lambda t: df[t.text],
    )
    rest_terms = [t.text for t in rest[:REST_TERMS]]
    ctx_present = sorted((t for t in context_terms if df.get(t.text, 0) > 0), key=lambda t: df[t.text])
    if from_paste:  # a paste's numbers and short tokens are noise: its rarest topic words, more of them
        ctx_present = [t for t in ctx_present if not t.generic]
    ctx_chosen = [t.text for t in ctx_present[:PASTE_TERMS if from_paste else CONTEXT_TERMS]]
    result.context_terms = ctx_chosen

    # Candidates: the memories with the best sum of the chosen terms' BM25 summands, each summand
    # re-weighted with the smoothed idf (FTS5's own vanishes in small stores and for common words).
    matches = term_matches(db, chosen, df, form_df, total)
    raw = matches.summands
    gathered = matches.gathered
    scale = {t: idf(total, df[t]) / fts_idf(total, df[t]) for t in chosen}
    carry = carried_scores(raw, scale, options.rarest)
    # A memory whose alias or title the prompt says whole ranks first.
    top = max(carry.values(), default=0.0)
    for rowid in phrased:
        carry[rowid] = max(top, options.min_score) + carry.get(rowid, 0.0)
        raw.setdefault(rowid, {})
    weight = {name: idf(total, n) for name, n in files[1].items()}
    for rowid, name in filed.items():
        carry[rowid] = weight[name] + carry.get(rowid, 0.0)
        raw.setdefault(rowid, {})[name] = 0.0
    best = sorted(carry, key=lambda r: (-carry[r], r))[:CANDIDATES]
    best += [r for r in phrased if r not in best]
    if not best:
        result.reason = "no memory matches the chosen terms"
        return result
    marks = ", ".join("?" * len(best))
    found = {
        row[0]: row
        for row in db.execute(
            "SELECT rowid, id, title, description, class, status, superseded_by, labels, created_ts, half_life_days,"
            f" project FROM memories WHERE rowid IN ({marks})",
            best,
        )
    }
    rows = [found[r] for r in best if r in found]
    rowids = [r[0] for r in rows]
    rare = sum(df[c] for c in gathered)
    rest_share = share_of(db, rowids, rest_terms, gathered, matches.base, rare)
    ctx_matched: dict[int, list[str]] = {r: [] for r in rowids}
    for word in ctx_chosen if gathered else ():
        for rowid, _score in rows_matching(db, f"{fts_any(word)} AND ({match_expr(gathered)})", rowids, rare):
            ctx_matched[rowid].append(word)
    now = options.now if options.now is not None else time.time()
    scored: list[Hit] = []
    elsewhere = of_other_projects({r[0]: r[10] for r in rows}, options.cwd, options.own_store)
    for (rowid, mid, title, desc, cls, status, sup_by, labels, created, half_life, _project) in rows:
        if status == "retracted":
            result.left_out.append(f"{mid}: retracted")
            continue
        base = carry[rowid]
        score = base * decay(created, half_life, now) * (1.0 + REST_BOOST * rest_share.get(rowid, 0.0))
        label_list = tuple(labels.split()) if labels else ()
        if status == "superseded":
            score *= SUPERSEDED_PENALTY
        if "unverified" in label_list:
            score *= UNVERIFIED_PENALTY
        if ctx_chosen:
            score *= 1.0 + CONTEXT_BOOST * len(ctx_matched[rowid]) / len(ctx_chosen)
        scored.append(
            Hit(mid, title, desc, cls, status, sup_by, label_list, "", base, score,
                tuple(raw[rowid]), tuple(ctx_matched[rowid]), rowid)
        )
    # A phrase said whole first; then, in a short prompt (not a paste), a memory in good standing
    # holding every chosen term above one lacking any, as ``quipu search`` ranks.
    every = {stems.get(c) for c in chosen} if len(prompt.split(None, SHORT_WORDS)) <= SHORT_WORDS else set()
    scored.sort(key=lambda h: (h.rowid not in phrased, h.status == "superseded" or "unverified" in h.labels
                               or not every <= {stems.get(m) for m in h.matched}, -h.score, h.id))
    result.candidates = scored
    evidence = (Evidence(db, prompt_terms, stems, df, gathered, rest, rare, total, question, by_title, speaks,
                         from_paste, follow_up=not question and opens_with_assent(prompt), elsewhere=elsewhere)
                if options.require_topic else None)
    eligible = [h for h in scored if h.score >= options.min_score or h.rowid in phrased][:EVIDENCE_CHECKS]
    checked = {h.rowid for h in eligible} | set(phrased) | set(filed)
    facts = 0
    for hit in scored:
        if hit.score < options.min_score and hit.rowid not in phrased:
            result.left_out.append(f"{hit.id}: score {hit.score:.2f} below the floor {options.min_score:g}")
            continue
        if hit.id in options.exclude:
            result.left_out.append(f"{hit.id}: already injected in this session")
            continue
        if from_paste and not hit.context_matched:
            result.left_out.append(f"{hit.id}: shares no word with what was pasted")
            continue
        if evidence is not None and len(result.hits) < options.limit:
            why = evidence.lacking(hit, eligible) if hit.rowid in checked else (
                f"not among the {EVIDENCE_CHECKS} best candidates whose evidence is weighed")
            if why:
                result.left_out.append(f"{hit.id}: {why}")
                continue
        slots = options.fact_slots
        if hit.self_updating and slots is not None and facts >= slots and options.limit > slots:
            result.left_out.append(f"{hit.id}: self-updating fact notes may take only {slots} slot(s)")
            continue
        if len(result.hits) >= options.limit:
            result.left_out.append(f"{hit.id}: past the limit of {options.limit}")
            continue
        facts += hit.self_updating
        result.hits.append(hit)
    if result.hits:  # excerpts (and the newest successor of a superseded hit) only for what is shown
        result.hits = with_successors(db, result.hits, options.limit, options.exclude)
        show(db, result.hits, [stems[f] for c in chosen for f in forms_of(c) if f in stems])
    if not result.hits:
        result.reason = "every candidate was left out"
        if evidence is not None and evidence.refused:
            result.reason = f"no memory has enough evidence to speak: {evidence.refused[0]}"
    return result


