"""A memory file's text split into its frontmatter mapping and its body.

Contract: ``split_frontmatter`` takes the ``---`` block off the top (a leading BOM allowed);
``parse_fields`` reads the block: ``key: <json>`` lines as ``render_memory`` writes them on a fast
path without YAML (and lines a person commonly writes, read as YAML reads them: a date, plain words,
a flow list of plain words; ``tests/frontmatter_fast_test.py`` compares them), anything else (frontmatter a person wrote) with the safe YAML loader of
``quipu.store.frontmatter_yaml``. Nothing is validated here: that is ``Memory.create``'s.
Every problem is an ``InvalidMemory`` naming the source.
"""
from __future__ import annotations

import json
import re

from quipu.errors import InvalidMemory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def split_frontmatter(text: str, source: str) -> tuple[str, str]:
    """Split ``---`` frontmatter from the body."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        raise InvalidMemory(f"{source}: no frontmatter: the file must start with a '---' line")
    lines = text.split("\n")
    if lines[0].strip() != "---":
        raise InvalidMemory(f"{source}: the first line must be exactly '---'")
    for n, line in enumerate(lines[1:], start=1):
        if line.rstrip("\r") == "---":
            head = "\n".join(lines[1:n])
            body = "\n".join(lines[n + 1 :])
            return head, body.lstrip("\n")
    raise InvalidMemory(f"{source}: the frontmatter is never closed by a '---' line")


def plain_json_string(text: str) -> bool:
    """Whether JSON writes ``text`` between quotes exactly as it is (``render_memory`` writes such a
    string without ``json``, and ``parse_fields`` reads it back without ``json``)."""
    return text.isprintable() and '"' not in text and "\\" not in text


def _fast_fields(head: str) -> dict[str, Any] | None:
    """Parse frontmatter written by ``render_memory`` (``key: <json>`` lines) without YAML."""
    out: dict[str, Any] = {}
    for line in head.split("\n"):
        if not line.strip():
            continue
        key, sep, value = line.partition(": ")
        if not sep or not key.isidentifier():
            return None
        if len(value) > 1 and value[0] == value[-1] == '"' and plain_json_string(value[1:-1]):
            out[key] = value[1:-1]  # a plain JSON string, as most are: what json.loads would give
            continue
        try:
            out[key] = json.loads(value)
        except (ValueError, RecursionError):
            plain = _plain_yaml(value)
            if plain is None:
                return None
            out[key] = plain
    return out


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(?: [A-Za-z0-9_\-]+)*")
_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)")
_NOT_TEXT = {f(w) for w in ("yes", "no", "true", "false", "on", "off", "null") for f in (str.lower, str.title, str.upper)}


def _plain_yaml(value: str) -> Any:
    """What YAML's safe loader makes of a value a person commonly writes (a date, plain words, a
    flow list of plain words), or None for anything else (the loader reads the whole frontmatter).
    A word YAML reads as a boolean or null is anything else."""
    if (date := _DATE.fullmatch(value)) is not None:
        import datetime

        try:
            return datetime.date(*map(int, date.groups()))
        except ValueError:
            return None  # the loader names the field it cannot build
    if _WORDS.fullmatch(value):
        return None if value in _NOT_TEXT else value
    if value.startswith("[") and value.endswith("]"):
        words = [w.strip(" ") for w in value[1:-1].split(",")]
        if all(_WORD.fullmatch(w) and w not in _NOT_TEXT for w in words):
            return words
    return None


def parse_fields(text: str, source: str) -> tuple[dict[str, Any], str]:
    """Split a memory's text into its frontmatter mapping (not yet validated) and body."""
    head, body = split_frontmatter(text, source)
    fields = _fast_fields(head)
    if fields is None:
        from quipu.store.frontmatter_yaml import yaml_fields  # hand-written YAML only

        fields = yaml_fields(head, source)
    if not isinstance(fields, dict):
        raise InvalidMemory(f"{source}: frontmatter must be a mapping of field: value")
    return fields, body
