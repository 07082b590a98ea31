"""Near-identical memories: what ``quipu add``, the MCP ``remember`` tool and capture check first.

Contract:
- ``near_duplicate(store, title, body)`` is the active memory whose text says the same as
  ``title`` + ``body`` (or None): after folding case, punctuation and spacing, either the texts
  (title and body) are equal, or they differ only by small words (``SMALL``: articles, "is", "the"...) and still match by
  at least ``MIN_RATIO`` (difflib's ratio, so the same words in another order, "A needs B" and "B
  needs A", stay apart). Two memories on one subject that say different things (another number,
  another tool, a negation: any other word) stay apart.
- ``near_duplicate_in(stores, ...)``: the same over several stores (a project's and the per-user
  store, read together: ``quipu.store.layers.read_together``), the first that holds one.
- Only active memories count (a superseded one may be said again: that is a correction); with
  ``retracted=True`` a retracted one counts too (``Near.status`` says which): a memory a person took
  out of recall is not written back by a model, a capture or a person who has not seen it was
  there. It reads the index, refreshed first, and never writes.
- The index gives the candidates: a near-identical text holds every word of ``title`` + ``body``
  that is not a small word, so only the memories whose title or body FTS5 finds holding all of
  them (the longest ``QUERY_WORDS`` plain ASCII ones) are compared. Where the tokenizer splits
  words exactly as the comparison does (ASCII, punctuation, spaces, symbols), FTS5 finds each of
  those words; a memory with other characters ("ﬁle" folds to "file") keeps its folded text in
  the index (``quipu.index.schema.fold_of``) and is compared when that holds each of them. No
  memory is read unless one of the two finds it; with no such word, every active memory is compared.
"""
from __future__ import annotations

import re

from quipu.index import index
from quipu.index.schema import fold_words
from quipu.store.store import Store
from quipu.lite import NamedTuple

MIN_RATIO = 0.9
QUERY_WORDS = 12
SMALL = frozenset("a an the is are was were be been of to in on at for and or so it its this that these those "
                  "we our us you your they their there here also just then".split())
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_ACTIVE = "SELECT id, title, body, status FROM memories WHERE status IN ({states}) ORDER BY created_ts, id"
# The full-text index's hits, and the folded memories holding every word ({held}: one instr each).
_CANDIDATES = (
    "SELECT id, title, body, status FROM memories WHERE status IN ({states}) AND rowid IN ("
    "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? UNION ALL"
    " SELECT rowid FROM memories WHERE fold IS NOT NULL AND status IN ({states}) AND {held}) ORDER BY created_ts, id"
)


class Near(NamedTuple):
    id: str
    title: str
    status: str = "active"  # or "retracted"


_fold = fold_words


def same_claim(title_a: str, body_a: str, title_b: str, body_b: str) -> bool:
    """Whether two memories' texts are near-identical (see the module contract)."""
    a, b = _fold(f"{title_a} {body_a}"), _fold(f"{title_b} {body_b}")
    if not a or not b:
        return False
    if a == b:
        return True
    if (set(a.split()) ^ set(b.split())) - SMALL:
        return False
    import difflib  # only for texts whose words agree

    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= MIN_RATIO


def near_duplicate(store: Store, title: str, body: str, *, retracted: bool = False) -> Near | None:
    sql, words = candidates_query(title, body, retracted=retracted)
    found = None
    for row in index.rows(store, sql, (_match(words), *words) if words else ()):
        if same_claim(title, body, row["title"], row["body"]):
            if row["status"] == "active":
                return Near(row["id"], row["title"])
            found = found or Near(row["id"], row["title"], row["status"])
    return found


def near_duplicate_in(stores: list[Store], title: str, body: str, *,
                      retracted: bool = False) -> tuple[Store, Near] | None:
    """The first of ``stores`` holding a memory near-identical to ``title`` + ``body``, with it."""
    for store in stores:
        same = near_duplicate(store, title, body, retracted=retracted)
        if same is not None:
            return store, same
    return None


def candidates_query(title: str, body: str, *, retracted: bool = False) -> tuple[str, list[str]]:
    """The SQL of the memories that may say the same as ``title`` + ``body``, and the words looked
    for (none: the SQL reads every active memory); its parameters are ``_match(words)``, then the words."""
    words = sorted({w for w in _fold(f"{title} {body}").split() if w not in SMALL and _ASCII_WORD.fullmatch(w)},
                   key=lambda w: (-len(w), w))[:QUERY_WORDS]
    states = "'active', 'retracted'" if retracted else "'active'"
    held = " AND ".join(["instr(fold, ?)"] * len(words))
    return (_CANDIDATES.format(held=held, states=states) if words else _ACTIVE.format(states=states)), words


def _match(words: list[str]) -> str:
    return "{title body} : " + " ".join(f'"{w}"' for w in words)
