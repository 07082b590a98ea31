"""The index boundary over generated frontmatter: whatever a person commits, a file is either a
memory the index can hold and rank, or a problem naming the file and the field; never a crash.

Issue 12: one hand-committed `created: 2026-13-45`, or a `half_life_days` of 5,001 digits, made
`index --rebuild`, `search` and `doctor` fail and `quipu add` exit 3 after its commit."""
from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quipu.index import schema
from quipu.prompt import scoring
from quipu.errors import InvalidMemory
from quipu.store.memory import FIELDS, Memory, parse_memory
from quipu.store.store import Store
from testing.fixtures import git, make_store, memory, quipu

REL = "memories/ab/abc-one.md"
VALID = {"id": "abc-one", "title": "A valid memory", "class": "fact", "created": "2026-01-05"}

# Values of every type and size YAML or JSON can carry, and text in every awkward encoding.
_text = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x1F), max_size=5),
    st.sampled_from(["", " ", "never", "2026-13-45", "2026-02-30", "0001-01-01", "9999-12-31T23:59:59-12:00",
                     "\ud800", "a\x00b", "x" * 5000, "rule", "fact", "active", "superseded", "user", "\u202e"]),
)
_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**320),
    st.floats(allow_nan=True, allow_infinity=True), _text,
    st.dates(min_value=dt.date(1, 1, 1)), st.datetimes(timezones=st.timezones()),
)
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=3),
                      max_leaves=8)
_field = st.sampled_from(FIELDS)


def _yaml_text(fields: dict[str, object], body: str) -> bytes:
    try:
        head = yaml.safe_dump(fields, allow_unicode=True, sort_keys=False)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):
        head = "\n".join(f"{k}: {json.dumps(v, default=str)}" for k, v in fields.items()) + "\n"
    return f"---\n{head}---\n{body}".encode("utf-8", "surrogatepass")


def _json_lines(fields: dict[str, object], body: str) -> bytes:
    """The ``key: <json>`` lines quipu writes, so the fast path is fuzzed too."""
    head = "".join(f"{k}: {json.dumps(v, default=str)}\n" for k, v in fields.items())
    return f"---\n{head}---\n{body}".encode("utf-8", "surrogatepass")


def _index_row(memory: Memory) -> None:
    """What the index does with a memory: the row goes into a real SQLite index of the real
    schema, and its rank can be computed."""
    db = sqlite3.connect(":memory:")
    db.executescript(schema.SCHEMA)
    schema.insert_rows(db, [schema.memory_row(memory, REL)])
    created, half_life = db.execute("SELECT created_ts, half_life_days FROM memories").fetchone()
    assert math.isfinite(scoring.decay(created, half_life, time.time()))
    db.close()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=_field, value=_value, shape=st.sampled_from([_yaml_text, _json_lines]), body=st.text(max_size=50))
def test_one_generated_field_either_indexes_or_names_that_field(field: str, value: object, shape: object,
                                                                body: str) -> None:
    fields = {**VALID, field: value}
    data = shape(fields, body)  # type: ignore[operator]
    try:
        parsed = parse_memory(data, REL)
    except InvalidMemory as exc:
        message = str(exc)
        assert message.startswith(REL)
        assert f"'{field}'" in message or "frontmatter" in message or "UTF-8" in message or "NUL" in message, message
        return
    _index_row(parsed)


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(lambda t: ("---\n" + t).encode("utf-8", "surrogatepass"))))
def test_any_bytes_at_all_are_a_memory_or_an_invalid_memory(data: bytes) -> None:
    try:
        parsed = parse_memory(data, REL)
    except InvalidMemory:
        return
    _index_row(parsed)


@settings(max_examples=60, deadline=None)
@given(fields=st.dictionaries(_field, _value, max_size=6))
def test_generated_frontmatter_mappings_never_break_the_boundary(fields: dict[str, object]) -> None:
    for shape in (_yaml_text, _json_lines):
        try:
            parsed = parse_memory(shape({**VALID, **fields}, "body"), REL)
        except InvalidMemory:
            continue
        _index_row(parsed)


# ---------------------------------------------------------------- through a real store


BAD_FILES = {
    "created": "created: 2026-13-45\n",
    "half_life_days": "created: 2026-01-05\nhalf_life_days: " + "9" * 5001 + "\n",
}


def _commit_by_hand(store: Store, rel: str, text: str) -> None:
    path = store.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    git(store.root, "add", rel)
    git(store.root, "commit", "-q", "-m", "a hand-written memory")


@pytest.mark.parametrize("field", sorted(BAD_FILES))
def test_a_bad_hand_committed_file_is_skipped_named_and_listed_never_breaking_a_command(tmp_path: Path,
                                                                                       field: str) -> None:
    store = make_store(tmp_path / "store")
    store.add(memory("good-one", "Deploys go through the pipeline"))
    rel = "memories/ba/bad-one.md"
    _commit_by_hand(store, rel, f"---\nid: bad-one\ntitle: Broken\nclass: fact\n{BAD_FILES[field]}---\nbody\n")
    at = ["--store", str(store.root)]

    rebuilt = quipu(*at, "index", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rel in rebuilt.stderr and f"'{field}'" in rebuilt.stderr  # the warning names file and field

    found = quipu(*at, "search", "--json", "pipeline")
    assert found.returncode == 0, found.stderr
    assert [h["id"] for h in json.loads(found.stdout)] == ["good-one"]

    added = quipu(*at, "add", "Another note about the pipeline", "--title", "Pipeline note")
    assert added.returncode == 0, added.stderr

    checked = quipu(*at, "doctor", "--json")
    assert checked.returncode in (0, 1), checked.stderr
    problems = next(c for c in json.loads(checked.stdout)["checks"] if c["name"] == "schema")
    assert any(rel in line and f"'{field}'" in line for line in problems["details"]), problems

    recalled = quipu(*at, "recall", "--json", "how do deploys go through the pipeline?")
    assert recalled.returncode == 0, recalled.stderr


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.text(), st.text().map(json.dumps), st.text().map(lambda t: json.dumps(t, ensure_ascii=False))))
def test_a_field_read_without_json_reads_as_json_would(value: str) -> None:
    """The frontmatter reader takes a plain quoted string as it is, without json.loads: for any
    value at all it must read what json.loads reads, or (a value JSON refuses) what YAML reads,
    or send the file to YAML as before."""
    from quipu.store.frontmatter import _fast_fields
    from quipu.store.frontmatter_yaml import yaml_fields

    if "\n" in value:
        return
    got = _fast_fields(f"title: {value}")
    try:
        expected: object = json.loads(value)
    except (ValueError, RecursionError):
        if got is not None:  # a value a person writes in YAML (a date, plain words): read as YAML reads it
            assert got == yaml_fields(f"title: {value}", "note.md")
            return
        expected = None
    # Compared as JSON text: NaN, which JSON reads from "NaN", is unequal to itself as a float.
    assert json.dumps(None if got is None else got["title"], sort_keys=True) == json.dumps(expected, sort_keys=True)
