"""The prompt path's JSON reader and writer agree with the json module on everything they meet."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quipu.prompt import _fastjson

FIXTURES = Path(__file__).parent / "fixtures"
ALPHABET = ['a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\x00', '\x1f', 'é', '—', '\u2028', '\U0001F600',
            '\ud83d', '\ude00', '{', '[', ':', ',']


def _random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(12)))
    if kind == 1:
        return rng.randint(-10**20, 10**20)
    if kind == 2:
        return rng.choice([0.0, -0.5, 1e-300, 6.02e23, rng.uniform(-1e6, 1e6)])
    if kind in (3, 4, 5):
        return rng.choice([True, False, None])
    if kind in (6, 7):
        return {"".join(rng.choice(ALPHABET) for _ in range(rng.randrange(6))): _random_value(rng, depth + 1)
                for _ in range(rng.randrange(5))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]


def test_every_document_reads_as_json_reads_it() -> None:
    rng = random.Random(20261129)
    for _ in range(3000):
        value = _random_value(rng)
        for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=rng.choice([None, 2]))):
            assert _fastjson.loads(text) == json.loads(text), text
            if text.isascii():
                assert _fastjson.loads(text.encode()) == json.loads(text)


def test_the_repositorys_own_json_and_transcripts_read_the_same() -> None:
    documents = [p.read_text(encoding="utf-8") for p in FIXTURES.rglob("*.json")]
    lines = [line for p in FIXTURES.rglob("*.jsonl") for line in p.read_text(encoding="utf-8").splitlines() if line]
    assert documents and lines
    for text in documents + lines:
        assert _fastjson.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", " ", "{", "[1,", '{"a" 1}', '{"a":1,}', "[1,]", "[1 2]", '"abc', '"\\x"',
                                  '"\\u12"', '"\\u12G4"', "01", "-", "1.", ".5", "1e", "1e+", "+1", "--1", "1.2.3",
                                  "tru", "nul", "[] []", '{"a":1} x', "{'a': 1}",
                                  "0x10", "1_000"])
def test_what_json_refuses_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        _fastjson.loads(text)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "[1, NaN]"])
def test_nan_and_infinity_are_refused_though_json_takes_them(text: str) -> None:
    with pytest.raises(ValueError):
        _fastjson.loads(text)


def test_written_json_is_ascii_and_reads_back_as_the_value() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        value = _random_value(rng)
        text = _fastjson.dumps(value)
        assert text.isascii()
        assert json.loads(text) == json.loads(json.dumps(value))  # (two lone surrogates pair up in both)
    with pytest.raises(ValueError):
        _fastjson.dumps(float("nan"))


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400), limit=st.integers(min_value=20, max_value=300), ascii_only=st.booleans())
def test_a_long_string_is_read_as_its_head_and_tail_and_a_short_one_whole(text: str, limit: int, ascii_only: bool) -> None:
    """Issue 12: a huge prompt cost the hook seconds; only its head and tail are read now."""
    raw = json.dumps({"prompt": text, "cwd": "/x"}, ensure_ascii=ascii_only)
    got = _fastjson.loads(raw, long_strings=limit)
    assert isinstance(got, dict) and got["cwd"] == "/x"
    written = len(json.dumps(text, ensure_ascii=ascii_only)) - 2
    if written <= limit:
        assert got["prompt"] == text
    else:
        head, _, _tail = got["prompt"].partition("\n") if "\n" not in text else (got["prompt"], "", "")
        assert len(got["prompt"]) <= limit + 1
        if "\n" not in text:
            assert text.startswith(head)
    assert _fastjson.loads(raw) == json.loads(raw)  # without the limit, nothing changes


def test_a_megabyte_string_keeps_its_opening_and_its_end() -> None:
    for filler in ("x" * 1_000_000, "\\u0041" * 160_000, '\\"' * 400_000):
        raw = '{"prompt": "deploy ' + filler + ' trace: OOMKilled"}'
        prompt = _fastjson.loads(raw, long_strings=1000)["prompt"]
        assert prompt.startswith("deploy ") and prompt.endswith(" trace: OOMKilled") and len(prompt) <= 1001


@pytest.mark.parametrize("line", [b"[" * 100_000 + b"]" * 100_000, b'{"a": ' * 50_000 + b"1" + b"}" * 50_000])
def test_a_value_nested_too_deep_is_a_value_error_like_any_unreadable_line(line: bytes) -> None:
    """The json module raises RecursionError here; the readers skip lines on ValueError."""
    with pytest.raises(ValueError, match="nested too deep"):
        _fastjson.loads(line)
