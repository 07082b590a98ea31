"""A memory file's text split into its frontmatter mapping and its body.

Contract: ``split_frontmatter`` takes the ``---`` block off the top (a leading BOM allowed);
``parse_fields`` reads the block: ``key: <json>`` lines as ``render_memory`` writes them on a fast
path without YAML, anything else (frontmatter a person wrote) with the safe YAML loader of
``quipu.store.frontmatter_yaml``. Nothing is validated here: that is ``Memory.create``'s.
Every problem is an ``InvalidMemory`` naming the source.
"""
from __future__ import annotations

import json

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
            return None
    return out


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
