"""The index's terms in Python: FTS5's tokenizer rules and its Porter stemmer, for the prompt path."""
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: nothing is imported at run time
    from typing import Any
# Recall looks a prompt's words up under the terms the FTS5 index stores ("porter unicode61
# remove_diacritics 2"); asking SQLite for them (a temporary FTS5 table per process) costs more
# than the lookups themselves, so ASCII words are stemmed here. The stemmer is the variant
# SQLite's FTS5 implements: the original Porter algorithm, with "logi" and "bli" in step 2 and
# "y" a vowel anywhere but first in the "contains a vowel" test. tests/query_terms_test.py
# compares it with SQLite term for term on a large vocabulary.
#
# The FTS5 tokenizer of the index (quipu.index.index) and of recall's fallback for non-ASCII words;
# fts_term makes the same terms in Python.
TOKENIZE = "porter unicode61 remove_diacritics 2"
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_VOWELS = frozenset("aeiou")
_MIN_STEM = 3
_MAX_STEM = 64


_TERMS: "dict[str, str | None]" = {}  # fts_term's answers: a prompt repeats its words, the prompt server its users'
_TERMS_AT_MOST = 50_000


def fts_term(word: str) -> "str | None":
    try:
        return _TERMS[word]
    except KeyError:
        pass
    token = _first_token(word)
    if token is not None and _MIN_STEM <= len(token) <= _MAX_STEM:
        token = porter_stem(token)
    if len(_TERMS) >= _TERMS_AT_MOST:
        _TERMS.clear()
    _TERMS[word] = token
    return token


def _first_token(text: str) -> "str | None":
    start = -1
    for i, c in enumerate(text):
        if c in _TOKEN_CHARS:
            if start < 0:
                start = i
        elif c >= "\x80":
            return None  # unicode61's own rules (letters, diacritics) apply: not ours to guess
        elif start >= 0:
            return text[start:i].lower()
    return text[start:].lower() if start >= 0 else ""


def _consonant_flags(w: str) -> list[bool]:
    """Per letter, whether it is a consonant; "y" is one first in the word or after a vowel."""
    flags = []
    cons = False
    for c in w:
        cons = not (c in _VOWELS or (c == "y" and cons))
        flags.append(cons)
    return flags


def _past_vc(flags: list[bool], start: int) -> int:
    """The position after the first vowels-then-consonant run from ``start``; 0 when there is none."""
    n = len(flags)
    i = start
    while i < n and flags[i]:
        i += 1
    i += 1
    while i < n:
        if flags[i]:
            return i + 1
        i += 1
    return 0


def _m_gt0(w: str) -> bool:
    return _past_vc(_consonant_flags(w), 0) > 0


def _m_gt1(w: str) -> bool:
    flags = _consonant_flags(w)
    first = _past_vc(flags, 0)
    return bool(first) and _past_vc(flags, first) > 0


def _m_eq1(w: str) -> bool:
    flags = _consonant_flags(w)
    first = _past_vc(flags, 0)
    return bool(first) and _past_vc(flags, first) == 0


def _cvc(w: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    if not w or w[-1] in "wxy" or len(w) < 3:
        return False
    return _consonant_flags(w)[-3:] == [True, False, True]


def _has_vowel(w: str) -> bool:
    return any(c in _VOWELS or (c == "y" and i > 0) for i, c in enumerate(w))


def _rules(w: str, table: "dict[str, tuple[tuple[Any, ...], ...]]", condition: "object") -> str:
    for rule in table.get(w[-2] if len(w) > 1 else "", ()):
        suffix = rule[0]
        if len(w) > len(suffix) and w.endswith(suffix):
            rest = w[: -len(suffix)]
            test = rule[2] if len(rule) > 2 else condition
            return rest + rule[1] if test(rest) else w  # type: ignore[operator]
    return w


def _ion_stem(rest: str) -> bool:
    return rest[-1] in "st" and _m_gt1(rest)


# Suffix rules per step, grouped by the word's last-but-one letter as SQLite groups them; within
# a group the first suffix that ends the word (leaving a non-empty stem) decides, met or not.
# A third item is a rule's own condition on the stem.
_STEP2 = {
    "a": (("ational", "ate"), ("tional", "tion")),
    "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),),
    "g": (("logi", "log"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
}


_STEP3 = {
    "a": (("ical", "ic"),),
    "s": (("ness", ""),),
    "t": (("icate", "ic"), ("iciti", "ic")),
    "u": (("ful", ""),),
    "v": (("ative", ""),),
    "z": (("alize", "al"),),
}


_STEP4 = {
    "a": (("al", ""),),
    "c": (("ance", ""), ("ence", "")),
    "e": (("er", ""),),
    "i": (("ic", ""),),
    "l": (("able", ""), ("ible", "")),
    "n": (("ant", ""), ("ement", ""), ("ment", ""), ("ent", "")),
    "o": (("ion", "", _ion_stem), ("ou", "")),
    "s": (("ism", ""),),
    "t": (("ate", ""), ("iti", "")),
    "u": (("ous", ""),),
    "v": (("ive", ""),),
    "z": (("ize", ""),),
}


def porter_stem(w: str) -> str:
    """Porter-stem a lower-case ASCII token of 3 to 64 letters, as FTS5 does."""
    # Step 1a: plurals.
    if w[-1] == "s":
        if w[-2] == "e":
            w = w[:-2] if (len(w) > 4 and w[-4:-2] == "ss") or (len(w) > 3 and w[-3] == "i") else w[:-1]
        elif w[-2] != "s":
            w = w[:-1]
    # Step 1b: -eed, -ed, -ing.
    stripped = False
    if len(w) > 3 and w.endswith("eed"):
        if _m_gt0(w[:-3]):
            w = w[:-1]
    elif len(w) > 2 and w.endswith("ed"):
        if _has_vowel(w[:-2]):
            w, stripped = w[:-2], True
    elif len(w) > 3 and w.endswith("ing"):
        if _has_vowel(w[:-3]):
            w, stripped = w[:-3], True
    if stripped:
        if len(w) > 2 and w[-2:] in ("at", "bl", "iz"):
            w += "e"
        elif len(w) > 1 and w[-1] not in _VOWELS and w[-1] not in "lsz" and w[-1] == w[-2]:
            w = w[:-1]
        elif _m_eq1(w) and _cvc(w):
            w += "e"
    # Step 1c: a final y becomes i when the rest has a vowel.
    if w[-1] == "y" and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    # Steps 2 to 4: double, single and removed suffixes.
    w = _rules(w, _STEP2, _m_gt0)
    w = _rules(w, _STEP3, _m_gt0)
    w = _rules(w, _STEP4, _m_gt1)
    # Step 5: a final e, a final double l.
    if w[-1] == "e":
        rest = w[:-1]
        if _m_gt1(rest) or (_m_eq1(rest) and not _cvc(rest)):
            w = rest
    if len(w) > 1 and w.endswith("ll") and _m_gt1(w[:-1]):
        w = w[:-1]
    return w
