"""Near-identical memories: what ``quipu add``, the MCP ``remember`` tool and capture check first.

Contract:
- ``near_duplicate(store, title, body)`` is the active memory whose text says the same as
  ``title`` + ``body`` (or None): after folding case, punctuation and spacing, either the texts
  (title and body) are equal, or they differ only by small words (``SMALL``: articles, "is", "the"...) and still match by
  at least ``MIN_RATIO`` (difflib's ratio, so the same words in another order, "A needs B" and "B
  needs A", stay apart). Two memories on one subject that say different things (another number,
  another tool, a negation: any other word) stay apart.
- Only active memories count (a superseded one may be said again: that is a correction); it reads
  the index, refreshed first, and never writes.
- The index gives the candidates: a near-identical text holds every word of ``title`` + ``body``
  that is not a small word, so only the memories whose title or body FTS5 finds holding all of
  them (the longest ``QUERY_WORDS`` plain ASCII ones) are compared. On ASCII text the tokenizer
  splits words exactly as the comparison does; a memory with other characters ("ﬁle" folds to
  "file") is compared when its case-folded text holds each of those words. With no such word,
  every active memory is compared.
"""
from __future__ import annotations

import re

from quipu.index import index
from quipu.store.store import Store
from quipu.lite import NamedTuple

MIN_RATIO = 0.9
QUERY_WORDS = 12
SMALL = frozenset("a an the is are was were be been of to in on at for and or so it its this that these those "
                  "we our us you your they their there here also just then".split())
_WORD = re.compile(r"\w+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_ACTIVE = "SELECT id, title, body, 1 AS hit FROM memories WHERE status = 'active' ORDER BY created_ts, id"
# hit: FTS5 found every word. Rows with other than ASCII text come too, for the check in Python.
_CANDIDATES = (
    "SELECT id, title, body, rowid IN (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?) AS hit"
    " FROM memories WHERE status = 'active' AND (hit OR length(title) != length(CAST(title AS BLOB))"
    " OR length(body) != length(CAST(body AS BLOB))) ORDER BY created_ts, id"
)


class Near(NamedTuple):
    id: str
    title: str


def _fold(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


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


def near_duplicate(store: Store, title: str, body: str) -> Near | None:
    sql, words = candidates_query(title, body)
    for row in index.rows(store, sql, (_match(words),) if words else ()):
        if not row["hit"]:
            text = f"{row['title']} {row['body']}".casefold()
            if not all(w in text for w in words):
                continue
        if same_claim(title, body, row["title"], row["body"]):
            return Near(row["id"], row["title"])
    return None


def candidates_query(title: str, body: str) -> tuple[str, list[str]]:
    """The SQL of the memories that may say the same as ``title`` + ``body``, and the words FTS5
    looks for (none: the SQL reads every active memory)."""
    words = sorted({w for w in _fold(f"{title} {body}").split() if w not in SMALL and _ASCII_WORD.fullmatch(w)},
                   key=lambda w: (-len(w), w))[:QUERY_WORDS]
    return (_CANDIDATES if words else _ACTIVE), words


def _match(words: list[str]) -> str:
    return "{title body} : " + " ".join(f'"{w}"' for w in words)
