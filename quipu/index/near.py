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
"""
from __future__ import annotations

import difflib
import re
from typing import NamedTuple

from quipu.index import index
from quipu.store.store import Store

MIN_RATIO = 0.9
SMALL = frozenset("a an the is are was were be been of to in on at for and or so it its this that these those "
                  "we our us you your they their there here also just then".split())
_WORD = re.compile(r"\w+")


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
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= MIN_RATIO


def near_duplicate(store: Store, title: str, body: str) -> Near | None:
    index.ensure_fresh(store)
    rows = index.rows(store, "SELECT id, title, body FROM memories WHERE status = 'active' ORDER BY created_ts, id")
    for row in rows:
        if same_claim(title, body, row["title"], row["body"]):
            return Near(row["id"], row["title"])
    return None
