"""The decision to speak: whether the prompt's own words are evidence enough for a memory, and
which memories a short prompt names whole by an alias or title."""
from quipu.prompt.files import named_files
from quipu.prompt.indexread import ordinary_of
from quipu.prompt.inject import word_starts
from quipu.prompt.query import FILE_EXTS, forms_of, fts_any, fts_quote, is_stopword, long_form, phrase_words
from quipu.prompt.scoring import idf, match_expr, rows_matching
from quipu.prompt.stem import fts_term

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from sqlite3 import Connection

    from quipu.prompt.query import Term
    from quipu.prompt.recall import Hit


# The decision to speak. A memory is injected only when the prompt's own words are evidence
# for it, not one incidental match. Measured in bench/bench_precision.py on real developer notes
# (memories-real) and real prompts (prompts-dev): conversational follow-ups, topical prompts
# that the store holds nothing for, and topical prompts paired with a relevant note.
# - Each distinct prompt term the memory contains counts: a specific term SPECIFIC_VALUE (not
#   an ordinary English word nor shared developer jargon, by the index's lexicon table, and the
#   memory has the word itself, not only its stem: a project, a tool, an identifier, a name),
#   another topic term TOPIC_VALUE, a generic word GENERIC_VALUE (everyday vocabulary of working
#   on code, a number, a token of three characters or fewer: quipu.prompt.query.is_generic). A memory
#   whose matches are all generic speaks only when COMBINED_WORDS or more of them are held
#   together by at most COMBINED_DF memories of the store: each everyday word names nothing,
#   but "go", "mod", "modules" and "sdk" found together in one note are its subject.
# - It speaks with STRONG_EVIDENCE (two specific terms, four topic terms, a specific term and
#   two topic terms), or with EVIDENCE_NEEDED when its topic terms carry COVERAGE_NEEDED of the
#   prompt's topic weight (each topic term weighs its idf in the store; a specific term the store
#   lacks weighs the most, an ordinary word it lacks half that): a long prompt about something
#   else is not answered by the two words it mentions in passing.
# - A question ("when did Jon visit Rome?", or one inside a short prompt: ``is_question``) names
#   what it asks about, so QUESTION_EVIDENCE is enough whatever the coverage, and so is one topic
#   term that carries SOLE_TERM_SHARE of its topic weight. A follow-up is rarely a question with
#   a topic ("what's next?" has none).
# - A memory whose alias (PHRASE_WORDS words other than stop words) or title
#   (TITLE_PHRASE_WORDS) a short prompt says whole, in order, speaks (``phrase_hits``).
# - A short question in everyday words only ("which package manager do we use?") has no topic
#   term, yet a memory may have been written for exactly that question: it speaks when its title
#   or aliases have TITLE_WORDS of the question's words, and no other memory does.
# - A memory that names, as a file, a file the person's own words name ("@TODO.md", "./cleanup.py":
#   ``quipu.prompt.files``) is a candidate; it speaks when it is of the project the prompt is
#   typed in, and a memory of another project is not a candidate at all: its file is another.
# - A memory of another project than the one the prompt is typed in (its ``project`` field names
#   a folder that does not hold the prompt's) speaks only with STRONG_EVIDENCE: what is true of
#   one project is often not of another, and such a note would take the place of this one's.
# - A prompt that opens by agreeing with the agent ("yes, address the review comments":
#   ``opens_with_assent``) and asks nothing carries on with the agent's own proposal: only
#   STRONG_EVIDENCE (or a phrase said whole) speaks for a memory. A store whose memories carry
#   aliases (everyday words by design) otherwise answers such follow-ups on a word or two.
# - A prompt that is mostly pasted output is read by the person's own words
#   (``quipu.prompt.query.split_pasted``); each of the paste's rarest topic words the memory
#   holds adds PASTE_VALUE, for at most PASTE_WORDS of them.
# - A term written with accents counts only where the memory has it with the same accents:
#   the index folds them, so "marché" would otherwise be "March".
SPECIFIC_VALUE = 2.0
TOPIC_VALUE = 1.0
GENERIC_VALUE = 0.5
STRONG_EVIDENCE = 4.0
EVIDENCE_NEEDED = 2.0
COVERAGE_NEEDED = 0.6
QUESTION_EVIDENCE = 2.0
TITLE_WORDS = 3               # a question in everyday words: this many of them in a title or alias
QUESTION_WORDS_MAX = 30
QUESTION_OPENING_MAX = 12     # "when do we deploy": a question word opens a short prompt without "?"
SOLE_TERM_SHARE = 0.5
ABSENT_ORDINARY_WEIGHT = 0.5  # in a request: an ordinary word the store lacks, against a specific one
EVIDENCE_TERMS = 8            # the rarest unchosen prompt terms checked per memory
EVIDENCE_CHECKS = 12          # candidates (best first) whose evidence is weighed: past them, none speaks
PHRASE_WORDS = 2              # an alias said whole in the prompt: this many words other than stop words
TITLE_PHRASE_WORDS = 3        # a title said whole
PHRASE_PROMPT_WORDS = 30      # phrases are looked for in prompts of at most this many words
PHRASE_PAIRS = 4              # neighbouring content words of the prompt that find phrase candidates (rarest)
PHRASE_GAP = 3                # stop words between them in a title or alias ("ship to production")
PHRASE_ROWS = 200             # phrase candidates read
COMBINED_WORDS = 3            # everyday words of the prompt that, held together by few memories, name a subject
COMBINED_DF = 2               # ... by at most this many
COMBINED_CHECKS = 4           # combinations looked up per prompt
PASTE_VALUE = 0.5             # a prompt read by the person's words: each word the memory shares with the paste
PASTE_WORDS = 2               # ... for at most this many of them


def names_a_subject(prompt: str, terms: "Sequence[Term]", files: "Sequence[str] | None" = None) -> bool:
    """Whether the prompt may be answered at all: it has a topic term, it names a file ("update
    @TODO.md": ``quipu.prompt.files``), or it is a short question of at least PHRASE_WORDS
    everyday words ("which package manager do we use?", "how do we ship to production?"), which
    may be answered by a memory whose title or aliases say the same (and by nothing else).
    ``files``: ``named_files(prompt)`` when the caller has it already."""
    if any(not t.generic for t in terms) or (named_files(prompt) if files is None else files):
        return True
    words = {t.text for t in terms if len(t.text) > 3 and not t.text.isdigit()}
    return len(words) >= PHRASE_WORDS and is_question(prompt)


def _key(word: str) -> str:
    """A word as a phrase compares it: its long form ("prod": "production"), stemmed as the index stems."""
    long = long_form(word)
    return fts_term(long) or long


def _content(words: "Sequence[str]") -> "list[str]":
    """The words of a phrase that say something: no stop word, number or file extension."""
    return [w for w in words if len(w) > 2 and not is_stopword(w) and not w.isdigit() and w not in FILE_EXTS]


def _near(groups: "list[tuple[str, ...]]", gap: int) -> "list[str]":
    """FTS5 NEAR groups for each run of words in ``groups`` (each word with its other forms)."""
    out: list[str] = []
    for run in groups:
        combos: list[list[str]] = [[]]
        for word in run:
            combos = [c + [f] for c in combos for f in forms_of(word)]
        for combo in combos:
            near = "NEAR(" + " ".join(fts_quote(w) for w in combo) + f", {gap})"
            if near not in out:
                out.append(near)
    return out


def phrase_hits(db: "Connection", prompt: str, df: "dict[str, int]") -> "dict[int, str]":
    """The memories an alias or title of which the prompt says whole, in order: {rowid: phrase}.

    An alias needs PHRASE_WORDS words other than stop words, numbers and file extensions, a
    title TITLE_PHRASE_WORDS (a title of two everyday words, "Lint fix", is a heading, not a way
    to ask); each counts whatever its words are ("ship to production" is everyday vocabulary,
    yet a person who wrote it as an alias said that is how they will ask). Only a prompt of at
    most PHRASE_PROMPT_WORDS words is looked at (a paste says "main entry point" in passing).
    Candidates: the memories whose aliases have two neighbouring content words of the prompt
    near each other, or whose title has three (the PHRASE_PAIRS rarest runs, the first
    PHRASE_ROWS rows); each is then checked word by word."""
    if len(prompt.split(None, PHRASE_PROMPT_WORDS)) > PHRASE_PROMPT_WORDS:
        return {}
    words = phrase_words(prompt)
    content = [w for w in _content(words) if df.get(w, 1)]  # a word no memory has is in no alias either
    if len(content) < PHRASE_WORDS:
        return {}
    unknown = 1 << 30

    def rarest(runs: "list[tuple[str, ...]]") -> "list[tuple[str, ...]]":
        # any run of a phrase finds it: the rarest first (``df``: the prompt's words in the store)
        return sorted(runs, key=lambda run: min(df.get(w, 0) or unknown for w in run))[:PHRASE_PAIRS]

    pairs = rarest(list(zip(content, content[1:], strict=False)))
    triples = rarest(list(zip(content, content[1:], content[2:], strict=False)))
    exprs = ["{aliases} : (" + " OR ".join(_near(pairs, PHRASE_GAP)) + ")"]
    if triples:
        exprs.append("{title} : (" + " OR ".join(_near(triples, 2 * PHRASE_GAP)) + ")")
    # rowids only, unranked, in one query: FTS5 then stops at the limit instead of scoring every
    # match, and a column of its external-content table would cost a read of the row for each match.
    sql = f"SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT {PHRASE_ROWS * len(exprs)}"
    found = list(dict.fromkeys(r for (r,) in db.execute(sql, (" OR ".join(exprs),))))
    if not found:
        return {}
    marks = ", ".join("?" * len(found))
    rows = db.execute(f"SELECT rowid, title, aliases FROM memories WHERE rowid IN ({marks})", found)
    keys: dict[str, str] = {}

    def key(word: str) -> str:
        if word not in keys:
            keys[word] = _key(word)
        return keys[word]

    said_keys = [key(w) for w in words]
    said = " " + " ".join(said_keys) + " "
    heads = set(said_keys)
    out: dict[int, str] = {}
    for rowid, title, aliases in rows:
        for n, phrase in enumerate([title or "", *(aliases or "").split(" | ")]):
            first = phrase_words(phrase.split(None, 1)[0]) if phrase.strip() else []
            if not first or key(first[0]) not in heads:
                continue  # the prompt does not even have its first word
            mine = phrase_words(phrase)
            enough = TITLE_PHRASE_WORDS if n == 0 else PHRASE_WORDS
            if len(_content(mine)) >= enough and f" {' '.join(key(w) for w in mine)} " in said:
                out[rowid] = phrase.strip()
                break
    return out


_QUESTION_WORDS = frozenset("who whom whose what when where which why how".split())
# A request for something the person once knew ("can you remind me what the deploy process is")
# asks a question whatever its punctuation.
_ASKING = ("remind me", "tell me", "do you remember", "do you know", "any idea", "i forgot", "i forget")


# A prompt that opens by agreeing with the agent ("yes, address the review comments", "sounds
# right, go for the changes you proposed") carries on with what the agent proposed: its words
# name that work, not a memory. In English and the other languages people write prompts in.
_ASSENT = frozenset("""yes yeah yep yup ok okay sure alright great perfect nice cool good agreed lgtm thanks
thank sounds correct exactly indeed absolutely si sí oui ja sim vale claro genau parfait perfekt perfeito
perfecto bueno danke merci gracias obrigado obrigada""".split())


def opens_with_assent(prompt: str) -> bool:
    """Whether the prompt's first word agrees ("yes, ...", "ok so ...", "sounds good, ...")."""
    words = phrase_words(prompt[:40])
    return bool(words) and words[0] in _ASSENT


def is_question(prompt: str) -> bool:
    """A short prompt (at most QUESTION_WORDS_MAX words) that asks: it ends with "?", has a
    sentence ending with "?" inside ("... what the deploy process is? I think there was a
    gate"), asks to be reminded or told ("remind me how we deploy"), or has at most
    QUESTION_OPENING_MAX words and opens with a question word. A short question names what it
    asks about ("When did Jon visit Rome?"); a follow-up naming one everyday thing ("yes, merge
    it") is not a question, nor is a long request, even with a question in it."""
    text = prompt.strip()
    words = text.split(None, QUESTION_WORDS_MAX)
    if not words or len(words) > QUESTION_WORDS_MAX:
        return False  # a long, multi-clause prompt is a request, even with a question in it
    if text.endswith("?") or any(w.endswith("?") and w.rstrip("?") for w in words):
        return True
    low = " ".join(w.lower().strip(",.!:;") for w in words)
    if any(f" {phrase} " in f" {low} " for phrase in _ASKING):
        return True
    return len(words) <= QUESTION_OPENING_MAX and words[0].lower().strip(",.!:;") in _QUESTION_WORDS


def _holds(text: str, stem: str) -> bool:
    """Whether the lower-cased ``text`` has a word the index stems to ``stem`` (ASCII): each word
    starting like the stem (less its last letter: "happy" is "happi", "hoping" is "hope") is
    stemmed and compared."""
    head = stem[:-1] if len(stem) > 3 else stem
    for at in word_starts(text, head, 50):
        end = at
        while end < len(text) and (text[end].isalnum()):
            end += 1
        if fts_term(text[at:end]) == stem:
            return True
    return False


def _root(word: str) -> str:
    """The start a memory's own word must have for ``word`` to be the same specific term: the
    word less a plural ending. Stemming rules made for English would otherwise join words of
    other languages to English ones ("terminou" and "terminal" share the stem "termin")."""
    if word.endswith("es") and len(word) > 5:
        return word[:-2]
    return word[:-1] if word.endswith("s") and len(word) > 4 else word


class Evidence:
    """Which prompt terms each candidate contains, and whether that is enough to speak."""

    def __init__(self, db: "Connection", prompt_terms: "Sequence[Term]", stems: dict[str, str],
                 df: dict[str, int], chosen: "Sequence[str]", rest: "Sequence[Term]", rare: int, total: int,
                 question: bool, by_title: bool = False,
                 phrased: "dict[int, str] | None" = None, from_paste: bool = False,
                 follow_up: bool = False, elsewhere: "set[int] | None" = None) -> None:
        self.db = db
        self.follow_up = follow_up  # it opens by agreeing with the agent: only strong evidence speaks
        self.elsewhere = elsewhere or set()  # memories of another project: only strong evidence speaks
        self.from_paste = from_paste
        self.phrased = phrased or {}
        self.by_title = by_title
        self.terms = {t.text: t for t in prompt_terms}
        self.stems = stems
        self.chosen = list(chosen)
        self.rest = [t.text for t in rest[:EVIDENCE_TERMS]]
        self.rare = rare
        self.matched: "dict[int, set[str]] | None" = None
        self.texts: dict[int, str] = {}
        self.rowids: list[int] = []
        self.refused: list[str] = []
        self.combined: dict[str, bool] = {}
        topic: dict[str, float] = {}
        for term in prompt_terms:
            stem = stems.get(term.text, term.text)
            if not term.generic and stem not in topic:
                topic[stem] = idf(total, df.get(term.text, 0))
        self.ordinary = ordinary_of(db, list(topic))
        # A word of the prompt that the store lacks weighs in fully when it is specific (a project
        # or a tool the store knows nothing of says the prompt is about something else); a missing
        # ordinary word may be the prompt's phrasing: in a short question it weighs nothing, in a
        # request ABSENT_ORDINARY_WEIGHT of a specific one.
        present = {stems.get(t.text, t.text) for t in prompt_terms if df.get(t.text, 0) > 0}
        self.question = question
        absent = 0.0 if question else ABSENT_ORDINARY_WEIGHT
        self.topic_weight = {s: w if s in present or s not in self.ordinary else w * absent
                             for s, w in topic.items()}
        self.total_weight = sum(self.topic_weight.values())

    def _match(self, rowids: "Sequence[int]") -> dict[int, set[str]]:
        """Which of the prompt's other terms each weighed candidate holds. An ASCII term is looked
        for in the candidates' own text (read once for all of them), a word counting when the
        index's stemmer makes the term's stem of it: one query for every term, where asking FTS5
        term by term costs a query each, reading every memory the term shares with the chosen
        ones (hundreds in a large store). Any other term is asked of FTS5."""
        matched: dict[int, set[str]] = {r: set() for r in rowids}
        if not rowids or not self.chosen:
            return matched
        expr_chosen = match_expr(self.chosen)
        for term in self.rest:
            stems = [fts_term(f) for f in forms_of(term)]
            if all(stems):
                for rowid in rowids:
                    text = self._text(rowid)
                    if any(_holds(text, stem) for stem in stems if stem):
                        matched[rowid].add(term)
                continue
            for rowid, _score in rows_matching(self.db, f"{fts_any(term)} AND ({expr_chosen})", rowids, self.rare):
                matched[rowid].add(term)
        return matched

    def _text(self, rowid: int) -> str:
        """The memory's searchable text, lower-cased; read for every weighed candidate at once."""
        if rowid not in self.texts:
            wanted = [rowid, *(r for r in self.rowids if r != rowid and r not in self.texts)]
            marks = ", ".join("?" * len(wanted))
            sql = f"SELECT rowid, title, aliases, tags, description, body FROM memory_fts WHERE rowid IN ({marks})"
            for row in self.db.execute(sql, wanted):
                self.texts[row[0]] = " ".join(x or "" for x in row[1:]).lower()
            self.texts.setdefault(rowid, "")
        return self.texts[rowid]

    def weigh(self, hit: "Hit", eligible: "Sequence[Hit]") -> "tuple[float, int, float, list[str]]":
        """(evidence value, distinct topic terms, share of the prompt's topic weight, words) of ``hit``."""
        if self.matched is None:
            self.rowids = [h.rowid for h in eligible]
            self.matched = self._match(self.rowids)
        words = set(hit.matched) | self.matched.get(hit.rowid, set())
        value = 0.0
        topic = 0
        covered = 0.0
        seen: set[str] = set()
        for word in sorted(words):
            stem = self.stems.get(word, word)
            if stem in seen:
                continue
            if not word.isascii() and not word_starts(self._text(hit.rowid), word, 1):
                continue  # accents folded by the index: not the same word
            seen.add(stem)
            term = self.terms.get(word)
            if term is None or term.generic:
                value += GENERIC_VALUE
                continue
            topic += 1
            covered += self.topic_weight.get(stem, 0.0)
            text = self._text(hit.rowid)
            specific = stem not in self.ordinary and any(word_starts(text, _root(f), 1) for f in forms_of(word))
            value += SPECIFIC_VALUE if specific else TOPIC_VALUE
        if self.from_paste:  # what the person pasted corroborates what they wrote
            value += PASTE_VALUE * min(len(hit.context_matched), PASTE_WORDS)
        share = covered / self.total_weight if self.total_weight else 0.0
        return value, topic, share, sorted(words)

    def _rare_together(self, words: "Sequence[str]") -> bool:
        """Whether the prompt's everyday words that a memory holds are, together, a subject: at
        least COMBINED_WORDS of them (numbers and short tokens aside), and at most COMBINED_DF
        memories of the store hold them all ("go", "mod", "modules", "sdk" and "pkg" each name
        nothing; the few notes holding every one of them are about one thing)."""
        kept = sorted({w for w in words if len(w) > 2 and not w.isdigit()})
        if len(kept) < COMBINED_WORDS:
            return False
        key = " ".join(kept)
        if key not in self.combined and len(self.combined) >= COMBINED_CHECKS:
            return False  # each check reads the words' rows: a few per prompt
        if key not in self.combined:
            expr = " AND ".join(fts_any(w) for w in kept)
            rows = self.db.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?",
                                   (expr, COMBINED_DF + 1)).fetchall()
            self.combined[key] = len(rows) <= COMBINED_DF
        return self.combined[key]

    def _named(self, hit: "Hit", words: "Sequence[str]") -> list[str]:
        """The prompt's words that the memory's title or aliases (what it is about) contain."""
        row = self.db.execute("SELECT title, aliases FROM memory_fts WHERE rowid = ?", (hit.rowid,)).fetchone()
        about = " ".join(x or "" for x in row).lower() if row else ""
        stems = {self.stems.get(w, w): w for w in words if len(w) > 3 and not w.isdigit()}
        return sorted(w for stem, w in stems.items() if word_starts(about, stem, 1))

    def lacking(self, hit: "Hit", eligible: "Sequence[Hit]") -> str:
        """Why ``hit`` may not be injected, or '' when the prompt's words are evidence enough."""
        if hit.rowid in self.phrased:
            return ""  # the prompt says its title or an alias whole
        value, topic, share, words = self.weigh(hit, eligible)
        why = ""
        if self.by_title:
            named = self._named(hit, words)
            if len(named) < TITLE_WORDS:
                why = (f"a question in everyday words speaks only for a memory whose title or aliases have "
                       f"{TITLE_WORDS} of them (this one has {', '.join(named) or 'none'})")
        elif self.follow_up and value < STRONG_EVIDENCE:
            why = (f"the prompt carries on with the agent's work (it opens by agreeing): its {value:g} of "
                   f"evidence is not the {STRONG_EVIDENCE:g} it needs")
        elif hit.rowid in self.elsewhere and value < STRONG_EVIDENCE:
            why = (f"a memory of another project than this folder's: its {value:g} of evidence is not the "
                   f"{STRONG_EVIDENCE:g} it needs")
        elif not topic:
            if not self._rare_together(words):
                why = "matches only generic words of the prompt (" + ", ".join(words) + ")"
        elif value >= STRONG_EVIDENCE or (value >= EVIDENCE_NEEDED and share >= COVERAGE_NEEDED):
            pass
        elif self.question and (value >= QUESTION_EVIDENCE or (topic == 1 and share >= SOLE_TERM_SHARE)):
            pass
        elif value < EVIDENCE_NEEDED:
            why = f"too little evidence: {value:g} from {', '.join(words)} (needs {EVIDENCE_NEEDED:g})"
        else:
            why = (f"its matches ({', '.join(words)}) carry {share:.0%} of the prompt's topic weight "
                   f"(needs {COVERAGE_NEEDED:.0%}, or evidence {STRONG_EVIDENCE:g} where it has {value:g})")
        if why:
            self.refused.append(f"{hit.id} {why}")
        return why
