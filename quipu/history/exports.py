"""Conversations from other assistants' data exports, archived beside Claude Code's and Codex CLI's.

Formats (each a ``.zip`` as the service sends it, or the ``conversations.json`` inside it):
- ChatGPT (``chatgpt``): ``conversations.json`` is a list of conversations, each with ``id`` (or
  ``conversation_id``), ``title``, ``create_time`` (seconds since the epoch), ``mapping`` (node id
  -> ``{message, parent, children}``, a message being ``{author: {role}, content: {parts},
  create_time}``) and ``current_node``. The turns are the branch that ends at ``current_node``
  (the one the person last saw), root first; without it, every message in time order. Only the
  ``user`` and ``assistant`` messages with text are turns (system, tool and hidden messages are not).
- Claude.ai (``claude.ai``): ``conversations.json`` is a list of conversations, each with
  ``uuid``, ``name``, ``created_at`` and ``chat_messages`` (``{uuid, sender: human|assistant,
  text, content: [{type, text}], created_at}``), in order.

Contract:
- An export is untrusted input: the zip is read in memory, never extracted, and no member's
  name is used as a path; only ``conversations.json`` is read (at any depth), at most
  ``MAX_MEMBER`` bytes of it, however large its header says it is.
- Each conversation is one session, ``<agent>-<its id>``, labelled with the agent (``chatgpt`` or
  ``claude.ai``); each message one turn, keyed by the session and the message's id, so importing
  the same export again (or a later one) adds only what is new.
- A malformed conversation or message (not an object, no id, no text where text belongs) is
  skipped and counted, never stops the import; a conversation is listed with why.
- Redaction and indexing are the archive's own (``archive.append_session``, ``index``), under its
  lock; ``dry_run`` reads and counts, and writes nothing.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quipu.errors import FatalError
from quipu.history import archive, index
from quipu.history.archive import Layout, Turn
from quipu.history.feed import Summary
from quipu.history.reader import RawTurn, Session
from quipu.history.redact import redact_fields
from quipu.store import secrets_scan

AGENTS = {"chatgpt": "chatgpt", "claude": "claude.ai"}
MEMBER = "conversations.json"
MAX_MEMBER = 1 << 30  # bytes of conversations.json read at most (a large export is hundreds of MB)


def read_export(path: Path, *, limit: int = MAX_MEMBER) -> bytes:
    """The bytes of the export's ``conversations.json``; FatalError when there is none to read."""
    if path.is_symlink() or not path.is_file():
        raise FatalError(f"{path} is not a file\n- give the export's .zip (or its conversations.json)")
    size: int | None = None
    member = True
    try:
        if not zipfile.is_zipfile(path):
            with path.open("rb") as fh:
                data = fh.read(limit + 1)
        else:
            with zipfile.ZipFile(path) as zf:
                members = [i for i in zf.infolist() if not i.is_dir()
                           and i.filename.replace("\\", "/").rsplit("/", 1)[-1] == MEMBER]
                member = bool(members)
                info = min(members, key=lambda i: i.filename.count("/")) if members else None
                size = info.file_size if info is not None else None
                data = b""
                if info is not None and info.file_size <= limit:
                    with zf.open(info) as fh:
                        data = fh.read(limit + 1)  # a header may understate the size: read no further
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise FatalError(f"cannot read {path}: {exc}\n- give the export's .zip as downloaded") from None
    if not member:
        raise FatalError(f"{path} holds no {MEMBER}\n- give the data export as the service sent it")
    if size is not None and size > limit:
        raise FatalError(f"{path}: {MEMBER} is {size:,} bytes, more than the {limit:,} bytes read\n"
                         "- split the export, or import its conversations.json")
    if len(data) > limit:
        raise FatalError(f"{path}: {MEMBER} is more than the {limit:,} bytes read\n- split the export")
    return data


def _conversations(data: bytes, path: Path) -> list[Any]:
    try:
        value = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise FatalError(f"{path}: {MEMBER} is not JSON\n- give the data export as the service sent it") from None
    if isinstance(value, dict) and isinstance(value.get("conversations"), list):
        value = value["conversations"]
    if not isinstance(value, list):
        raise FatalError(f"{path}: {MEMBER} is not a list of conversations\n- check which service it came from")
    return value


def _iso(value: object) -> str:
    """An ISO time from seconds since the epoch or an ISO text ("" when neither)."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, (int, float)):
        try:
            return _dt.datetime.fromtimestamp(float(value), _dt.timezone.utc).isoformat().replace("+00:00", "Z")
        except (ValueError, OverflowError, OSError):
            return ""
    if isinstance(value, str) and archive.parse_ts(value.strip()) is not None:
        return value.strip()
    return ""


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _key(session: str, ident: object, ts: str, text: str) -> str:
    if isinstance(ident, str) and ident.strip() and ident.isprintable() and len(ident) <= 200:
        return f"{session}/{ident.strip()}"
    digest = hashlib.sha256(f"{ts}\0{text}".encode("utf-8", "replace")).hexdigest()[:24]
    return f"{session}/h-{digest}"


def _session_id(agent: str, ident: object) -> str | None:
    if not isinstance(ident, str) or not ident.strip() or len(ident) > 200:
        return None
    return f"{agent}-{ident.strip()}"


def _chatgpt_branch(mapping: dict[str, Any], current: object) -> list[Any]:
    """The nodes from the root to ``current``; every node in time order when there is no such path."""
    if isinstance(current, str) and current in mapping:
        chain: list[Any] = []
        seen: set[str] = set()
        node_id: object = current
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id]
            chain.append(node)
            node_id = node.get("parent") if isinstance(node, dict) else None
        return chain[::-1]

    def when(node: Any) -> float:
        message = node.get("message") if isinstance(node, dict) else None
        stamp = message.get("create_time") if isinstance(message, dict) else None
        return float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else 0.0

    return sorted(mapping.values(), key=when)


def _chatgpt_text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if not isinstance(content, dict):
        return None
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    return _text(content.get("text"))


def chatgpt_session(conv: object) -> tuple[Session | None, int, str]:
    """(the session, messages skipped as malformed, why the conversation was skipped)."""
    if not isinstance(conv, dict):
        return None, 0, "not a conversation object"
    sid = _session_id("chatgpt", conv.get("id") or conv.get("conversation_id"))
    mapping = conv.get("mapping")
    if sid is None or not isinstance(mapping, dict):
        return None, 0, "no id or no mapping of messages"
    session = Session(sid, "", agent=AGENTS["chatgpt"])
    bad = 0
    fallback = _iso(conv.get("create_time"))
    for node in _chatgpt_branch(mapping, conv.get("current_node")):
        message = node.get("message") if isinstance(node, dict) else None
        if message is None and isinstance(node, dict):
            continue  # the root of every mapping holds no message
        if not isinstance(message, dict):
            bad += 1
            continue
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if role not in ("user", "assistant"):
            continue
        metadata = message.get("metadata")
        if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation") is True:
            continue
        text = _chatgpt_text(message)
        if text is None:
            bad += 1
            continue
        if not text:
            continue
        ts = _iso(message.get("create_time")) or fallback
        session.turns.append(RawTurn(_key(sid, message.get("id") or node.get("id"), ts, text), role, text, ts, ""))
    return session, bad, ""


def _claude_text(message: dict[str, Any]) -> str | None:
    text = message.get("text")
    blocks = message.get("content")
    if isinstance(blocks, list):
        joined = "\n".join(b["text"].strip() for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                           and isinstance(b.get("text"), str) and b["text"].strip())
        if joined:
            return joined
    if isinstance(text, str):
        return text.strip()
    return None if blocks is None else ""


def claude_session(conv: object) -> tuple[Session | None, int, str]:
    if not isinstance(conv, dict):
        return None, 0, "not a conversation object"
    sid = _session_id("claude.ai", conv.get("uuid"))
    messages = conv.get("chat_messages")
    if sid is None or not isinstance(messages, list):
        return None, 0, "no uuid or no chat_messages"
    session = Session(sid, "", agent=AGENTS["claude"])
    bad = 0
    fallback = _iso(conv.get("created_at"))
    roles = {"human": "user", "user": "user", "assistant": "assistant"}
    for message in messages:
        sender = message.get("sender") if isinstance(message, dict) else None
        role = roles.get(sender) if isinstance(sender, str) else None
        text = _claude_text(message) if isinstance(message, dict) and role else None
        if not isinstance(message, dict) or role is None or text is None:
            bad += 1
            continue
        if not text:
            continue
        ts = _iso(message.get("created_at")) or fallback
        session.turns.append(RawTurn(_key(sid, message.get("uuid"), ts, text), role, text, ts, ""))
    return session, bad, ""


def _would_add(layout: Layout, session: Session, forgotten: set[str], summary: Summary) -> None:
    fields = redact_fields(session)  # keys and ids as they would be archived
    known = archive.session_turns(layout, session.session_id)
    for raw, found in zip(session.turns, fields, strict=True):
        if archive.is_forgotten(raw.key, session.session_id, forgotten):
            summary.forgotten += 1
        elif raw.key not in known:
            summary.added += 1
            summary.redactions += found
            if archive.may_hold_secret(raw.text):
                summary.redactions += len(secrets_scan.find_secrets(raw.text))


def import_export(kind: str, path: Path, *, layout: Layout | None = None, dry_run: bool = False,
                  progress: Callable[[int, int], None] | None = None) -> Summary:
    """Archive and index every conversation of a ``kind`` export (``chatgpt`` or ``claude``)."""
    layout = layout or Layout.default()
    read = chatgpt_session if kind == "chatgpt" else claude_session
    conversations = _conversations(read_export(path), path)
    summary = Summary(files=1)
    if dry_run:
        archive.upgrade(layout)  # an archive in the layout before shelves is read from them
    with contextlib.nullcontext() if dry_run else layout.lock():  # a dry run creates not even the lock file
        forgotten = archive.forgotten_keys(layout)
        known = archive.Known(layout)  # each shelf read once, not once per conversation on it
        turns: list[Turn] = []
        for n, conv in enumerate(conversations):
            try:
                session, bad, why = read(conv)
            except Exception as exc:  # noqa: BLE001 - one conversation of a shape not foreseen never stops the rest
                session, bad, why = None, 0, f"cannot be read ({type(exc).__name__})"
            summary.bad_lines += bad
            if session is None:
                summary.bad_lines += 1
                summary.skipped.append((f"{MEMBER}[{n}]", why))
            elif not session.turns:
                summary.skipped.append((f"{MEMBER}[{n}] {session.session_id}", "no message with text"))
            elif dry_run:
                summary.sessions += 1
                _would_add(layout, session, forgotten, summary)
            else:
                result = archive.append_session(layout, session, forgotten, known)
                summary.sessions += 1
                summary.added += len(result.added)
                summary.updated += len(result.updated)
                summary.redactions += result.redactions
                summary.forgotten += result.forgotten
                turns += [*result.updated, *result.added]
            if progress and ((n + 1) % 25 == 0 or n + 1 == len(conversations)):
                progress(n + 1, len(conversations))
        if not dry_run and (turns or not index.is_current(layout)):
            writer = index.open_writer(layout, bulk=True)
            try:
                writer.upsert(turns)
            finally:
                writer.close()
    return summary
