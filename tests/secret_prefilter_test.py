"""The scanner's pre-filters drop nothing the full patterns find: a rule's gate holds wherever its
pattern matches, and the provider tokens chosen by their literals, searched bare first, find every
match the whole alternation finds. Over the secret corpus, its look-alikes written in other cases
and beside non-ASCII text, tokens cut and joined, and the real notes when they are there."""
from __future__ import annotations

import random
import re

import pytest

from quipu.store import secret_patterns, secret_rules, secrets_scan
from testing import realistic as R
from testing.secret_corpus import benign_cases, secret_cases


def _texts() -> list[str]:
    """The corpus, each text also in upper and title case and after a non-ASCII word (the gate's
    other search), and random joins of the token families' literals with key characters."""
    base = [case.text for case in [*secret_cases(), *benign_cases()]]
    texts = [*base, *(t.upper() for t in base), *(t.title() for t in base), *("Kelvin \u212a, \u00e9t\u00e9: " + t for t in base)]
    rng = random.Random(11)
    anchored = next(r.pattern for r in secret_rules.RULES if isinstance(r.pattern, secret_patterns.Anchored))
    assert isinstance(anchored, secret_patterns.Anchored)
    anchors = [a for group in anchored.anchors for a in group]
    key = "abcdefABCDEF0123456789_-."
    for _ in range(400):
        texts.append(" ".join(rng.choice(anchors) + "".join(rng.choice(key) for _ in range(rng.randint(0, 90)))
                              for _ in range(rng.randint(1, 4))))
    return texts


def _real_texts() -> list[str]:
    data = R.data_dir()
    if data is None:
        pytest.skip("the real notes (../shared/data/memories-real) are not here")
    return [f"{n.title}\n\n{n.body}" for n in R.real_notes(data)]


def _gated() -> list[secret_rules.Rule]:
    rules = [rule for rule in secret_rules.RULES if rule.gate is not None]
    assert rules, "no rule has a gate"
    return rules


def _check_gates(texts: list[str]) -> int:
    matched = 0
    for rule in _gated():
        assert rule.gate is not None and isinstance(rule.pattern, secret_patterns.Lazy)
        for text in texts:
            found = list(rule.pattern.compiled.finditer(text))
            if found:
                assert rule.gate.holds(text, text.lower()), (rule.name, text[:80])
            for match in found:  # the gate holds on the match alone: it needs nothing around it
                piece = match.group()
                assert rule.gate.holds(piece, piece.lower()), (rule.name, piece)
                matched += 1
    return matched


def test_the_literals_of_the_token_families_are_plain_ascii_found_lower_cased_in_the_scanner_s_pass() -> None:
    anchored = next(r.pattern for r in secret_rules.RULES if isinstance(r.pattern, secret_patterns.Anchored))
    assert isinstance(anchored, secret_patterns.Anchored)
    for word, pairs in anchored.lowered().items():
        for literal, _alternatives in pairs:
            assert literal.isascii() and literal.lower() == word
            assert word in secrets_scan._keywords_in(f"x {literal.upper()}{literal} y".lower())


def test_a_rule_s_gate_holds_wherever_its_pattern_matches() -> None:
    assert _check_gates(_texts()) > 200


def test_a_rule_s_gate_holds_wherever_its_pattern_matches_in_the_real_notes() -> None:
    _check_gates(_real_texts())


def test_a_gate_reads_ascii_text_lower_cased_and_other_text_ignoring_case() -> None:
    gate = secret_patterns.Gate(r"token[\w.\-]*[ \t]*[=:]")
    assert gate.holds("API_TOKEN = x", "api_token = x") and gate.holds("t\u00f6ken TOKEN: x", "t\u00f6ken token: x")
    assert not gate.holds("the token is here", "the token is here")
    assert gate.holds("\u00e9 TO\u212aEN=1", "\u00e9 to" + "\u212a".lower() + "en=1")  # the Kelvin sign, as re reads it


def _check_tokens(texts: list[str]) -> int:
    anchored = next(r.pattern for r in secret_rules.RULES if isinstance(r.pattern, secret_patterns.Anchored))
    assert isinstance(anchored, secret_patterns.Anchored)
    whole = re.compile(anchored.head + "|".join(anchored.alternatives) + anchored.tail)
    matched = 0
    for text in texts:
        expected = [m.span() for m in whole.finditer(text)]
        chosen = anchored.for_text(text)
        assert ([m.span() for m in chosen.finditer(text)] if chosen else []) == expected, text[:80]
        # and chosen by the literals the scanner's own pass over the lower-cased text found
        chosen = anchored.for_text(text, secrets_scan._keywords_in(text.lower()))
        assert ([m.span() for m in chosen.finditer(text)] if chosen else []) == expected, text[:80]
        matched += len(expected)
    return matched


def test_the_token_families_a_text_is_searched_for_find_what_all_of_them_find() -> None:
    assert _check_tokens(_texts()) > 150


def test_the_token_families_a_text_is_searched_for_find_what_all_of_them_find_in_the_real_notes() -> None:
    _check_tokens(_real_texts())


def test_the_scan_of_the_corpus_finds_each_secret_and_no_look_alike() -> None:
    for case in secret_cases():
        spans = secrets_scan.find_secrets(case.text)
        assert spans, (case.family, case.text[:80])
    for case in benign_cases():
        assert not secrets_scan.find_secrets(case.text), (case.family, case.text[:80])


def test_a_long_run_is_a_word_of_fifteen_characters_or_more_as_split_finds_it() -> None:
    rng = random.Random(17)
    alphabet = ["a", " ", "\t", "\n", "\u00a0", "\u2028", "\u3000", "\x1c", "\x85", "x", "\u200b", "\u00e9", "\u180e", "\ufeff"]
    for _ in range(50_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert secrets_scan._long_run(text) == (max(map(len, text.split()), default=0) >= 15), repr(text)
