"""The memory file format: what parses, and how each kind of bad input is refused (issue 2)."""
from __future__ import annotations

from pathlib import Path

import pytest

from quipu.errors import InvalidMemory
from quipu.store.memory import CLASSES, MAX_FILE_BYTES, Memory, check_id, memory_path, parse_memory, render_memory

HEAD = b"---\nid: abc123\ntitle: Deploys go through the pipeline\nclass: rule\ncreated: 2026-01-05\n"


def _file(extra: bytes = b"", body: bytes = b"body text\n") -> bytes:
    return HEAD + extra + b"---\n" + body


def test_hand_written_yaml_frontmatter_parses_with_class_defaults() -> None:
    memory = parse_memory(_file(b"topics: [deploy, ci]\naliases:\n  - nuke production\n"), "memories/ab/abc123.md")
    assert (memory.id, memory.cls, memory.topics, memory.aliases) == ("abc123", "rule", ("deploy", "ci"), ("nuke production",))
    assert memory.half_life_days is None  # a rule the user gave never decays
    assert memory.created == "2026-01-05"


def test_project_notes_halve_every_150_days_by_default() -> None:
    memory = Memory.create({"id": "pn1", "title": "t", "class": "project-note", "created": "2026-01-05"})
    assert memory.half_life_days == 150.0


def test_rendered_memory_round_trips() -> None:
    memory = Memory.create(
        {"id": "rt1", "title": "Round trip: \"quotes\" and: colons", "class": "fact", "created": "2026-01-05T10:00:00Z",
         "topics": ["a", "b"], "aliases": ["x y"], "supersedes": ["old1"], "always_on": True},
        "line one\nline two\n",
    )
    assert parse_memory(render_memory(memory), memory.path) == memory


@pytest.mark.parametrize("bad", ["../etc", "/abs", "ab\x00c", "a/b", "abc\n", "ABC", "a b", "..", "ab", ""])
def test_ids_that_could_leave_the_store_are_refused(bad: str) -> None:
    with pytest.raises(InvalidMemory, match="invalid id"):
        check_id(bad)
    with pytest.raises(InvalidMemory):
        memory_path(bad)
    with pytest.raises(InvalidMemory):
        Memory.create({"id": bad, "title": "t", "class": "fact", "created": "2026-01-05"})


def test_an_id_with_a_trailing_newline_is_refused() -> None:
    """Regression (issue 2): ``$`` in the id pattern matched before a trailing newline."""
    with pytest.raises(InvalidMemory):
        memory_path("abc123\n")


def test_unknown_class_names_the_field_and_the_allowed_values() -> None:
    with pytest.raises(InvalidMemory) as err:
        parse_memory(_file().replace(b"class: rule", b"class: opinion"), "memories/ab/abc123.md")
    message = str(err.value)
    assert "field 'class'" in message and "'opinion'" in message
    assert all(name in message for name in CLASSES)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("origin", "rumour", "allowed values: user, session, import"),
        ("status", "deleted", "allowed values: active, superseded"),
        ("half_life_days", -3, "positive number of days"),
        ("always_on", "yes", "true or false"),
        ("created", "last tuesday", "a date like"),
        ("topics", [{"nested": 1}], "entries must be one-line texts"),
        ("colour", "blue", "allowed fields:"),
    ],
)
def test_bad_fields_name_the_field_and_how_to_fix_it(field: str, value: object, expected: str) -> None:
    fields = {"id": "bf1", "title": "t", "class": "fact", "created": "2026-01-05", field: value}
    with pytest.raises(InvalidMemory) as err:
        Memory.create(fields, source="memories/bf/bf1.md")
    assert field in str(err.value) and expected in str(err.value)


@pytest.mark.parametrize(
    ("frontmatter", "problem"),
    [
        (b"- a list\n- not a mapping\n", "must be a mapping"),
        (b"just a sentence\n", "must be a mapping"),
        (b"id: abc123\ntitle: &anchor x\ndescription: *anchor\nclass: fact\ncreated: 2026-01-05\n", "anchors and aliases"),
        (b"id: abc123\ntitle: !!python/object/apply:os.system [id]\nclass: fact\ncreated: 2026-01-05\n", "tags are not allowed"),
        (b"id: abc123\ntitle: !!str x\nclass: fact\ncreated: 2026-01-05\n", "tags are not allowed"),
        (b"id: abc123\ntitle: [unclosed\nclass: fact\n", "not valid YAML"),
    ],
)
def test_frontmatter_that_is_not_a_plain_mapping_is_refused(frontmatter: bytes, problem: str) -> None:
    with pytest.raises(InvalidMemory, match=problem) as err:
        parse_memory(b"---\n" + frontmatter + b"---\nbody\n", "memories/ab/abc123.md")
    assert "memories/ab/abc123.md" in str(err.value)


def test_a_yaml_tag_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    payload = f"id: abc123\ntitle: !!python/object/apply:os.system ['touch {marker}']\nclass: fact\ncreated: 2026-01-05\n"
    with pytest.raises(InvalidMemory):
        parse_memory(b"---\n" + payload.encode() + b"---\n", "m.md")
    assert not marker.exists()


def test_a_file_over_one_megabyte_is_refused() -> None:
    data = _file(body=b"x" * MAX_FILE_BYTES)
    with pytest.raises(InvalidMemory, match="at most 1,000,000"):
        parse_memory(data, "memories/ab/abc123.md")


@pytest.mark.parametrize(("data", "problem"), [(_file(b"description: caf\xe9\n"), "not UTF-8"), (_file(body=b"a\x00b"), "NUL")])
def test_non_utf8_and_binary_files_are_refused(data: bytes, problem: str) -> None:
    with pytest.raises(InvalidMemory, match=problem):
        parse_memory(data, "memories/ab/abc123.md")


@pytest.mark.parametrize(
    ("data", "problem"),
    [(b"no frontmatter at all\n", "no frontmatter"), (b"---\nid: abc123\ntitle: never closed\n", "never closed")],
)
def test_missing_or_unclosed_frontmatter_is_refused(data: bytes, problem: str) -> None:
    with pytest.raises(InvalidMemory, match=problem):
        parse_memory(data, "memories/ab/abc123.md")
