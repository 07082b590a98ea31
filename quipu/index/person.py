"""Questions about the person, and memories in their own words (standard library only).

Contract:
- ``first_person(query)`` puts a question about "the user" in the first person before it is
  embedded ("where does the user live" -> "where does I live", "the user's" -> "my"), as people
  write about themselves. Only "the user" is rewritten: a bare "user" or "users" is most often
  the users of the software ("user sessions", "how do users log in") and stays.
- ``asks_about_the_person(query)``: the query, so rewritten, speaks of the person in the first
  person singular ("I", "my", "me", ...).
- ``in_their_own_words(text)``: a memory written in the first person ("I", "my", "we", "our"
  ...), as what someone said about themselves is. In a store of project notes such memories are
  few (19 of the 1,797 real notes), so for a question about the person they are the likely
  answers (``quipu.index.deep``).
"""
from __future__ import annotations

import re

_THE_USER = re.compile(r"\bthe user(?:'s)?(?![\w'])", re.IGNORECASE)
_I = r"\bI(?:'m|'ve|'d|'ll)?(?![\w'/-])"  # not the I of "I/O"
_ASKS = re.compile(_I + r"|\b(?i:me|my|mine|myself)\b")
_OWN_WORDS = re.compile(_I + r"|\b(?i:me|my|mine|myself|we|our|ours|us)\b")


def first_person(query: str) -> str:
    """On the twelve paraphrase cases of bench/bench_paraphrase.py the median rank by meaning went
    from 16.5 to 9; LoCoMo's questions name people, not "the user"."""
    return _THE_USER.sub(lambda m: "my" if m.group(0).lower().endswith("'s") else "I", query)


def asks_about_the_person(query: str) -> bool:
    return _ASKS.search(first_person(query)) is not None


def in_their_own_words(text: str) -> bool:
    return _OWN_WORDS.search(text) is not None
