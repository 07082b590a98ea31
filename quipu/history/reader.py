"""One Claude Code transcript, or one Codex CLI session file, as the turns a person would want to find again.

Contract:
- ``read_session(path)`` returns the session's turns in order: each human prompt is a turn
  (``quipu.prompt.transcript.human_text``, the prompt hook's own rules, so task notifications, hook
  output, slash commands, compaction summaries and tool results are left out), and everything
  the assistant wrote until the next prompt is one turn: its text blocks, and each tool call as
  ``[Tool: command or path]``. Tool output, thinking blocks, sub-agent (sidechain) records,
  synthetic and API-error messages are left out.
- A turn's ``key`` is stable across reads of a growing transcript: the session id and the uuid of
  the turn's first record (a hash of its timestamp and text when it has none), so appending the
  same transcript twice, or after it grew, never duplicates a turn.
- Bad lines never stop a read: a cut last line is skipped, a line that is not UTF-8 is decoded
  with replacement characters, lines of tool output are skipped before they are parsed.
- A Codex rollout (``quipu.prompt.codex.is_rollout``) is read by the same rules with Codex's record
  predicates: the prompts a person typed (not the environment context and instructions Codex adds),
  the assistant's messages and tool calls; tool output and reasoning are left out. Its session is
  labelled ``agent = "codex"`` (Claude Code's ``"claude"``); a sub-agent's session is ``sidechain``.
- Only a regular file is read (``open_regular``): it is opened without following a symbolic link
  and without waiting (a named pipe or a device would never end), and checked before a byte is
  read; anything else raises ``NotRegular``, an ``OSError``.
- Nothing here redacts: ``quipu.history.archive`` does, before anything is written.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from quipu.prompt import codex, transcript

MAX_TOOL_ARG = 200
# Lines of tool output start their content with this (quotes inside JSON strings are escaped, so
# these bytes only occur as structure): skipped unparsed, however large.
_TOOL_RESULT = b'"type":"tool_result"'
# The input field a tool call is summarised by, in order of preference.
# (value, end) of the JSON value at an index: the C scanner json.loads runs (typeshed omits the attribute)
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_TOOL_FIELDS = ("command", "file_path", "notebook_path", "path", "url", "pattern", "query", "description", "prompt")


class RawTurn(NamedTuple):  # a tuple: a backfill makes one per turn, five times faster than a frozen dataclass
    key: str
    role: str  # user | assistant
    text: str
    ts: str  # ISO 8601 as Claude Code wrote it ("" when absent)
    branch: str


@dataclass
class Session:
    session_id: str
    project: str  # the working folder of the session ("" when no record names one)
    turns: list[RawTurn] = field(default_factory=list)
    bad_lines: int = 0
    sidechain: bool = False  # a sub-agent transcript: no record of it is a human turn
    agent: str = "claude"  # the client the session ran in: claude or codex


class NotRegular(OSError):
    """A path that is not a regular file (a named pipe, a device, a socket, a folder)."""


def kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, for a person."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file (see the module contract)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(f"not a regular file ({kind(mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _records(path: Path, counter: list[int], skip: tuple[bytes, ...] = (_TOOL_RESULT,)) -> Iterator[dict[str, Any]]:
    skipped = re.compile(b"|".join(map(re.escape, skip))).search  # one search for every marker
    with open_regular(path) as fh:
        for raw in fh:
            if raw.isspace() or skipped(raw):
                continue
            try:  # one JSON value and the line's end: json.loads of a str without its checks around the scan
                text = raw.decode()
                record, end = _scan(text, 0)
                if end != len(text) and text[end:].strip(" \t\n\r"):  # JSON's own whitespace only
                    record = None
            except (ValueError, RecursionError, StopIteration):
                record = None
            if record is not None:
                if isinstance(record, dict):
                    yield record
                continue
            try:
                record = json.loads(raw)  # not UTF-8, or not JSON: read as before, or counted
            except UnicodeDecodeError:
                try:
                    record = json.loads(raw.decode("utf-8", "replace"))
                except (ValueError, RecursionError):
                    counter[0] += 1
                    continue
            except (ValueError, RecursionError):  # RecursionError: nested past what json parses
                counter[0] += 1
                continue
            if isinstance(record, dict):
                yield record


def tool_summary(block: dict[str, Any]) -> str:
    name = block["name"] if isinstance(block.get("name"), str) else "tool"
    args: dict[str, Any] = block["input"] if isinstance(block.get("input"), dict) else {}
    for key in _TOOL_FIELDS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            value = " ".join(value.split())
            if len(value) > MAX_TOOL_ARG:
                value = value[: MAX_TOOL_ARG - 1] + "…"
            return f"[{name}: {value}]"
    return f"[{name}]"


def _assistant_parts(record: dict[str, Any]) -> list[str] | None:
    if record.get("type") != "assistant" or record.get("isSidechain") or record.get("isApiErrorMessage"):
        return None
    message = record.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return None
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return None
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            text = block["text"].strip()
            if text and not transcript.is_machine_text(text):
                parts.append(text)
        elif block.get("type") == "tool_use":
            parts.append(tool_summary(block))
    return parts


def _key(session_id: str, record: dict[str, Any], text: str) -> str:
    uuid = record.get("uuid")
    if isinstance(uuid, str) and uuid:
        return f"{session_id}/{uuid}"
    digest = hashlib.sha256(f"{record.get('timestamp')}\0{text}".encode("utf-8", "replace")).hexdigest()[:24]
    return f"{session_id}/h-{digest}"


def _text_field(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    return value if isinstance(value, str) else ""


def read_session(path: str | Path) -> Session:
    """The turns of one transcript (see the module contract); ``OSError`` if it cannot be read."""
    path = Path(path)
    if codex.is_rollout(path.name):
        return _read_rollout(path)
    counter = [0]
    session = Session(session_id=path.stem, project="")
    pending: tuple[str, str, str, list[str]] | None = None  # key, ts, branch, parts
    named = False
    seen_any = False
    sidechain_only = True

    def flush() -> None:
        nonlocal pending
        if pending and pending[3]:
            key, ts, branch, parts = pending
            session.turns.append(RawTurn(key, "assistant", "\n".join(parts), ts, branch))
        pending = None

    for record in _records(path, counter):
        if not named and isinstance(record.get("sessionId"), str) and record["sessionId"]:
            session.session_id = record["sessionId"]
            named = True
        if not session.project and _text_field(record, "cwd"):
            session.project = record["cwd"]
        kind = record.get("type")
        if kind not in ("user", "assistant"):
            continue  # neither a prompt nor a reply
        seen_any = True
        if not (record.get("isSidechain") or record.get("agentId")):
            sidechain_only = False
        prompt = transcript.human_text(record) if kind == "user" else None
        if prompt is not None:
            flush()
            text = prompt.strip()
            session.turns.append(RawTurn(_key(session.session_id, record, text), "user", text,
                                         _text_field(record, "timestamp"), _text_field(record, "gitBranch")))
            continue
        parts = _assistant_parts(record)
        if parts is None:
            continue
        if pending is None:
            # keyed without its text: a reply without uuids keeps its key while it grows
            pending = (_key(session.session_id, record, "assistant"), _text_field(record, "timestamp"),
                       _text_field(record, "gitBranch"), [])
        pending[3].extend(parts)
    flush()
    session.bad_lines = counter[0]
    session.sidechain = seen_any and sidechain_only
    return session


def _hashed(session_id: str, ts: str, text: str) -> str:
    digest = hashlib.sha256(f"{ts}\0{text}".encode("utf-8", "replace")).hexdigest()[:24]
    return f"{session_id}/h-{digest}"


def _read_rollout(path: Path) -> Session:
    """The turns of one Codex session file (see the module contract)."""
    counter = [0]
    session = Session(session_id=path.stem[-36:], project="", agent=codex.AGENT)
    pending: tuple[str, str, list[str]] | None = None  # key, ts, parts

    def flush() -> None:
        nonlocal pending
        if pending and pending[2]:
            session.turns.append(RawTurn(pending[0], "assistant", "\n".join(pending[2]), pending[1], ""))
        pending = None

    for record in _records(path, counter, codex.SKIP):
        ts = _text_field(record, "timestamp")
        meta = codex.meta(record)
        if meta is not None:
            session.session_id = _text_field(meta, "id") or session.session_id
            session.project = session.project or _text_field(meta, "cwd")
            session.sidechain = session.sidechain or not isinstance(meta.get("source"), (str, type(None)))
            continue
        prompt = transcript.codex_human_text(record)
        if prompt is not None:
            flush()
            text = prompt.strip()
            ident = codex.human_id(record)
            key = f"{session.session_id}/{ident}" if ident else _hashed(session.session_id, ts, text)
            session.turns.append(RawTurn(key, "user", text, ts, ""))
            continue
        reply = codex.assistant_text(record)
        call = codex.tool_call(record) if reply is None else None
        if reply is None and call is None:
            continue
        part = reply if reply is not None and not transcript.is_machine_text(reply) else None
        if call is not None:
            part = tool_summary({"name": call[0], "input": call[1]})
        if part is None:
            continue
        if pending is None:
            ident = codex.item_id(record)
            pending = (f"{session.session_id}/{ident}" if ident else _hashed(session.session_id, ts, "assistant"), ts, [])
        pending[2].append(part)
    flush()
    session.bad_lines = counter[0]
    return session
