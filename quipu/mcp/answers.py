"""What every MCP tool answers with: the tool's shape, its answer, and the fence around store text."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quipu.mcp.tools import Service


MAX_ANSWER_CHARS = 12_000     # far below Claude Code's 25,000-token MCP output limit
MAX_SEARCH_CHARS = 6_000
MAX_HIT_CHARS = 700
MAX_BODY_CHARS = 8_000
MAX_LIMIT = 25
DEFAULT_LIMIT = 8
_FENCE_TAG = re.compile(r"(?i)quipu\s*-\s*memory")  # the fence's tag, however it is spelt


@dataclass(frozen=True)
class Answer:
    text: str
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    schema: dict[str, Any]
    read_only: bool
    run: Callable[[Service, dict[str, Any]], Answer]


def object_schema(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


ID_SCHEMA = {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{2,63}$", "description": "a memory's id, as search_memory shows it"}


def defuse(text: str) -> str:
    """``text`` made safe as the prompt hook makes it (``quipu.prompt.fence.safe``: no escape
    sequence or invisible character, nothing that reads as a quipu tag however it is spelt:
    look-alike letters and brackets, invisible characters inside, HTML references), and the
    fence's name itself renamed (in any case or spacing), so stored text can never open or close
    a fence."""
    from quipu.prompt import fence

    return _FENCE_TAG.sub("quipu_memory", fence.safe(text))


def fenced(body: str, limit: int = MAX_ANSWER_CHARS) -> str:
    from quipu.prompt.inject import FENCE_CLOSE, FENCE_OPEN

    room = limit - len(FENCE_OPEN) - len(FENCE_CLOSE) - 2
    body = defuse(body)
    if len(body) > room:
        body = body[: room - 60].rstrip() + f"\n[... {len(body) - room + 60:,} characters cut ...]"
    return f"{FENCE_OPEN}\n{body}\n{FENCE_CLOSE}"


def cut_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
