"""quipu.prompt.stem.fts_term makes the very terms SQLite's FTS5 tokenizer stores, so the prompt hook can
look words up without asking SQLite to tokenize them."""
from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path

from quipu.prompt.stem import TOKENIZE, fts_term

REPO = Path(__file__).resolve().parent.parent
SUFFIXES = ("", "s", "es", "ies", "sses", "ed", "eed", "ing", "ational", "tional", "ization", "ness", "ful", "ion",
            "tion", "sion", "ll", "e", "y", "ement", "ment", "iveness", "bli", "logi", "ate", "ize", "ly", "at", "bl",
            "iz", "alism", "aliti", "biliti", "icate", "ative", "alize", "ance", "ence", "able", "ism", "ous", "ive")


def _vocabulary() -> list[str]:
    """Every word of this repository's own text, and made-up words ending in every suffix the
    stemmer knows (stems of vowels, consonants and 'y' in all positions)."""
    words: set[str] = set()
    for path in [*REPO.glob("quipu/**/*.py"), *REPO.glob("docs/*.md"), *REPO.glob("tests/fixtures/**/*.json"),
                 REPO / "README.md"]:
        words.update(re.findall(r"[A-Za-z0-9]+", path.read_text(encoding="utf-8", errors="replace")))
    rng = random.Random(20261129)
    letters = "aeiouybcdlmnrstgzwx"
    for _ in range(30_000):
        stem = "".join(rng.choice(letters) for _ in range(rng.randint(1, 10)))
        words.add(stem + rng.choice(SUFFIXES))
    return sorted(words)


def _sqlite_terms(words: list[str]) -> dict[str, str]:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(w, tokenize='{TOKENIZE}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.executemany("INSERT INTO t(rowid, w) VALUES (?, ?)", [(i + 1, w) for i, w in enumerate(words)])
    return {words[doc - 1]: term for term, doc, offset in db.execute("SELECT term, doc, offset FROM v") if offset == 0}


def test_every_ascii_word_gets_the_term_sqlite_stores() -> None:
    words = _vocabulary()
    assert len(words) > 30_000
    expected = _sqlite_terms(words)
    differ = [(w, expected.get(w), fts_term(w)) for w in words if fts_term(w) != expected.get(w, "")]
    assert differ == []


def test_tokens_split_fold_and_pass_through_like_unicode61() -> None:
    words = ["Deploying", "shop-api", "ERRORS.log", "__init__", "go", "x" * 70, "2024s", "...", ""]
    expected = _sqlite_terms(words)
    assert [fts_term(w) for w in words] == [expected.get(w, "") for w in words]
    assert fts_term("shop-api") == "shop" and fts_term("go") == "go" and fts_term("...") == ""


def test_a_non_ascii_first_token_is_left_to_sqlite() -> None:
    assert fts_term("café") is None
    assert fts_term("naïve-approach") is None
    assert fts_term("api-café") == "api"  # the first token is plain ASCII
