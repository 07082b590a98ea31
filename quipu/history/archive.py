"""The archive of past turns: the truth the history index is rebuilt from.

Layout, under ``$QUIPU_HOME/history/`` (never inside a memory store: it is private and large):
- ``shelves/<2 hex>.jsonl``: one JSON line per archived turn, ``{key, session, turn, role, text,
  ts, project, branch, agent}`` (``agent``: ``claude`` or ``codex``, the client the session ran
  in, or ``chatgpt`` / ``claude.ai`` for an imported export; a line without it is Claude Code's).
  A session's turns are all on one shelf, chosen by a checksum of its id (``shelf_name``): 64
  shelves whatever the number of sessions, so a first backfill of thousands of sessions creates
  64 files, not one per session (creating a file costs the file system far more than writing a
  line). Lines are only appended, except by ``forget``; a later line with the same key replaces
  an earlier one (an assistant turn that grew after a PreCompact).
- ``sessions/<2 chars>/<session>.jsonl``: the layout before shelves (one file per session, same
  lines). The first writer to take the lock moves such files onto their shelves (``upgrade``);
  a move stopped half way is finished by the next one (a line on a shelf twice is one turn).
- ``forgotten``: the keys (``<session>/<uuid>``) and whole sessions (``<session>/*``) removed by
  ``forget``; they are never archived again, even if the transcript is read again. A line
  ``#turns N <session>`` records the highest turn number forgotten in a session, so that a number
  is never given again (``Forgotten.last``).
- ``pieces.sqlite``: the embedding's tokenizer tables, copied from the installed wheel (no text
  of any session).
- ``lock``: one ``flock`` held by every writer (appends, backfill, forget), so twenty sessions
  ending at once queue up and lose nothing; its holder's pid is written in it, and a waiter
  gives up after a bounded wait (``quipu.history.locking``).

Contract:
- A lone surrogate in any field (a character cut in half) is written as U+FFFD (``whole``).
- Every turn's text, and every other field kept from a transcript (project folder, branch, time,
  session id and key: ``quipu.history.redact``), is redacted by ``quipu.store.secrets_scan`` (the
  detector capture uses) before it is written; the number of redactions is reported, the secret
  never is.
- ``append_session`` is idempotent: a turn whose key is archived with the same text is skipped;
  turn numbers are given once, in transcript order, and never change; the number of a forgotten
  turn is never given to another. A write that a crash cut
  short leaves a part line, which reading skips and the next append ends before writing its own.
- ``Known`` is what a run of many appends (a backfill) knows of the archive: each shelf is read
  once, the first time one of its sessions is appended, and only keys, turn numbers and a hash of
  each text are kept. A backfill's ``Known`` also keeps the lines it appends, up to ``FLUSH_AT``
  bytes, and writes each shelf's at once (``flush``) before they are indexed.
- ``forget`` removes turns for good: their shelves are rewritten without them (atomically),
  and the caller removes them from the index in the same locked section.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from quipu.prompt import locate
from quipu.store import secrets_scan
from quipu.history import locking
from quipu.history.reader import Session
# Redaction is the archive's own step (a backfill runs ``redact_turns`` apart, in a child).
from quipu.history.redact import may_hold_secret as may_hold_secret
from quipu.history.redact import redact_fields
from quipu.history.redact import redact_turns as redact_turns
from quipu.history.redact import whole as whole

_STR = json.encoder.encode_basestring  # a str as a JSON string, non-ASCII kept (C)
SHELVES = 64  # shelves of an archive: each about 1/64 of it (read whole by one append of a session)
_ROLES = {role: _STR(role) for role in ("user", "assistant")}  # each turn's role, written once
_NUMBERED = "#turns "  # a line of ``forgotten``: the highest turn number forgotten in a session


@dataclass(frozen=True)
class Layout:
    root: Path

    @classmethod
    def default(cls) -> Layout:
        return cls(Path(locate.quipu_home()) / "history")

    @property
    def shelves(self) -> Path:
        return self.root / "shelves"

    @property
    def sessions(self) -> Path:
        """The folder of the layout before shelves (one file per session)."""
        return self.root / "sessions"

    @property
    def index(self) -> Path:
        return self.root / "index.sqlite"

    @property
    def vectors(self) -> Path:
        return self.root / "vectors.i16"

    @property
    def pieces(self) -> Path:
        return self.root / "pieces.sqlite"

    @property
    def forgotten(self) -> Path:
        return self.root / "forgotten"

    @property
    def lock_path(self) -> Path:
        return self.root / "lock"

    def shelf(self, session_id: str) -> Path:
        """The file that holds the session's turns."""
        return self.shelves / f"{shelf_name(session_id)}.jsonl"

    def exists(self) -> bool:
        """Whether anything was ever archived here (in either layout)."""
        return self.shelves.is_dir() or self.sessions.is_dir()

    @contextlib.contextmanager
    def lock(self, *, wait: float = locking.WAIT, quiet: bool = False) -> Iterator[None]:
        """The archive lock (``locking.hold``: ``ArchiveBusy`` after ``wait`` seconds, or
        ``$QUIPU_HISTORY_LOCK_WAIT``'s); an archive in the layout before shelves is moved onto them first."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)  # private: only its owner reads it
        with locking.hold(self.lock_path, wait=locking.wait_for(wait), quiet=quiet):
            if self.before_shelves():
                _move_to_shelves(self)
            yield

    def before_shelves(self) -> bool:
        """Whether files of the layout before shelves are still to be moved onto them."""
        return self.sessions.is_dir() and next(self.sessions.glob("*/*.jsonl"), None) is not None


def shelf_name(session_id: str) -> str:
    """The shelf of a session: a checksum of its id (ids made in time order, as UUIDv7s, spread
    out as well as random ones)."""
    return f"{zlib.crc32(session_id.encode('utf-8', 'surrogatepass')) % SHELVES:02x}"


def upgrade(layout: Layout) -> None:
    """Move an archive in the layout before shelves onto them (under the lock), for a reader that
    does not hold the lock; nothing to do otherwise (and nothing to lock)."""
    if layout.before_shelves():
        with layout.lock():
            pass


class Turn(NamedTuple):  # a tuple: a backfill makes one per turn, five times faster than a frozen dataclass
    key: str
    session: str
    turn: int
    role: str
    text: str
    ts: str
    project: str
    branch: str
    agent: str = "claude"

    def line(self, shared: tuple[str, str, str] | None = None) -> str:
        """``json.dumps(self.to_json(), ensure_ascii=False)``, written out field by field (an
        archive line: five times faster than the encoder for a backfill's many turns); ``shared``:
        the session, project and agent already written so (the same for all of a session's turns)."""
        session, project, agent = shared or (_STR(self.session), _STR(self.project), _STR(self.agent))
        role = _ROLES.get(self.role) or _STR(self.role)
        return (f'{{"key": {_STR(self.key)}, "session": {session}, "turn": {int(self.turn)}, '
                f'"role": {role}, "text": {_STR(self.text)}, "ts": {_STR(self.ts)}, '
                f'"project": {project}, "branch": {_STR(self.branch)}, "agent": {agent}}}')

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


def read_file(path: Path, session: str | None = None) -> dict[str, Turn]:
    """The turns of one archive file by key (a later line with a key replaces an earlier one);
    ``session``: only that session's (lines of others are skipped before they are parsed)."""
    turns: dict[str, Turn] = {}
    needle = f'"session": {_STR(session)}, '.encode() if session is not None else b""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return turns
    with fh:
        for raw in fh:
            if needle not in raw:  # b"" is in every line
                continue
            try:
                turn = Turn.create(json.loads(raw))
            except (ValueError, RecursionError):
                continue  # a line cut by a crash (the next append repeats that turn), or nested past reading
            if turn is not None and (session is None or turn.session == session):
                turns[turn.key] = turn
    return turns


def session_turns(layout: Layout, session_id: str) -> dict[str, Turn]:
    """The archived turns of one session, by key."""
    return read_file(layout.shelf(session_id), session_id)


def session_ids(layout: Layout, prefix: str = "") -> set[str]:
    """The ids of the archived sessions that start with ``prefix`` (a line is parsed only when it
    names such a session)."""
    found: set[str] = set()
    needle = f'"session": {_STR(prefix)[:-1]}'.encode()  # the id's opening quote, not its closing one
    for path in session_files(layout):
        with path.open("rb") as fh:
            for raw in fh:
                if needle in raw:
                    try:
                        turn = Turn.create(json.loads(raw))
                    except (ValueError, RecursionError):
                        continue
                    if turn is not None and turn.session.startswith(prefix):
                        found.add(turn.session)
    return found


def session_files(layout: Layout) -> list[Path]:
    """The archive's shelves (an archive in the old layout is moved onto them by ``upgrade``)."""
    return sorted(layout.shelves.glob("*.jsonl")) if layout.shelves.is_dir() else []


def all_turns(layout: Layout, progress: Callable[[int, int], None] | None = None) -> Iterator[Turn]:
    """Every archived turn, shelf by shelf, each shelf's in order of session and turn."""
    files = session_files(layout)
    for n, path in enumerate(files, 1):
        yield from sorted(read_file(path).values(), key=lambda t: (t.session, t.turn))
        if progress:
            progress(n, len(files))


class Forgotten(set[str]):
    """The lines of ``forgotten``: keys and whole sessions; ``last``: the highest turn number
    forgotten in each session (its ``#turns N <session>`` lines)."""

    def __init__(self, lines: Iterable[str] = ()) -> None:
        super().__init__(lines)
        self.last: dict[str, int] = {}
        for line in self:
            if line.startswith(_NUMBERED):
                number, _, session = line[len(_NUMBERED):].partition(" ")
                if number.isdigit() and session:
                    self.last[session] = max(self.last.get(session, -1), int(number))


def forgotten_keys(layout: Layout) -> Forgotten:
    try:
        text = layout.forgotten.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Forgotten()
    return Forgotten(line.strip() for line in text.splitlines() if line.strip())


def numbered(turns: Iterable[Turn]) -> list[str]:
    """The ``forgotten`` lines that keep the numbers of ``turns`` (being forgotten) from being given again."""
    last: dict[str, int] = {}
    for t in turns:
        last[t.session] = max(last.get(t.session, -1), t.turn)
    return [f"{_NUMBERED}{n} {session}" for session, n in sorted(last.items())]


def is_forgotten(key: str, session: str, forgotten: set[str]) -> bool:
    return key in forgotten or f"{session}/*" in forgotten


def _append(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except FileNotFoundError:  # the shelves' folder is not there yet
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a line a crash cut short ends here: it cannot take the next one with it
        os.write(fd, data)
    finally:
        os.close(fd)


class Known:
    """What the archive holds, for a run of many appends under one lock (see the module
    contract): per session, each key's turn number and the hash of its text. ``buffered``: the
    lines appended are kept here, shelf by shelf, and written by ``flush`` (one write per shelf,
    not one per session), which the run calls before it indexes them and at its end; lines a
    killed run had not written are archived by the next run, which reads the transcripts again."""

    FLUSH_AT = 4 << 20  # bytes kept before they are written whatever the caller does

    def __init__(self, layout: Layout, *, buffered: bool = False) -> None:
        self.layout = layout
        self._shelves: dict[str, dict[str, dict[str, tuple[int, int]]]] = {}
        self._buffered = buffered
        self._lines: dict[str, list[bytes]] = {}  # by shelf name
        self._size = 0

    def session(self, session_id: str) -> dict[str, tuple[int, int]]:
        """The session's archived turns (key -> turn number, hash of the text); the caller
        records each turn it appends in it."""
        name = shelf_name(session_id)
        sessions = self._shelves.get(name)
        if sessions is None:
            sessions = {}
            for t in read_file(self.layout.shelves / f"{name}.jsonl").values():
                sessions.setdefault(t.session, {})[t.key] = (t.turn, hash(t.text))
            self._shelves[name] = sessions
        return sessions.setdefault(session_id, {})

    def append(self, session_id: str, data: bytes) -> None:
        """Append ``data`` (whole lines) to the session's shelf, now or at the next ``flush``."""
        name = shelf_name(session_id)
        if not self._buffered:
            _append(self.layout.shelves / f"{name}.jsonl", data)
            return
        self._lines.setdefault(name, []).append(data)
        self._size += len(data)
        if self._size >= self.FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        """Write every line kept, each shelf's in one append."""
        lines, self._lines, self._size = self._lines, {}, 0
        for name, parts in lines.items():
            _append(self.layout.shelves / f"{name}.jsonl", b"".join(parts))


def append_session(layout: Layout, session: Session, forgotten: set[str] | None = None,
                   known: Known | None = None, redacted: list[int] | None = None) -> AppendResult:
    """Archive the session's new (or grown) turns, redacted. The caller holds ``layout.lock()``;
    ``known``: what a run of appends knows of the archive (else the session's shelf is read);
    ``redacted``: what ``redact_turns`` returned for the session (its turns are redacted already)."""
    forgotten = forgotten_keys(layout) if forgotten is None else forgotten
    counts = redact_fields(session) if redacted is None else redacted
    sid, project, agent = whole(session.session_id), whole(session.project), whole(session.agent)
    if known is not None:
        archived = known.session(sid)
    else:
        archived = {t.key: (t.turn, hash(t.text)) for t in session_turns(layout, sid).values()}
    last = (forgotten if isinstance(forgotten, Forgotten) else Forgotten(forgotten)).last.get(sid, -1)
    next_turn = max(max((number for number, _ in archived.values()), default=-1), last) + 1
    added: list[Turn] = []
    updated: list[Turn] = []
    redactions = 0
    kept = [(raw, n) for raw, n in zip(session.turns, counts, strict=True)
            if not (forgotten and is_forgotten(raw.key, sid, forgotten))]
    if redacted is None:  # the fields are redacted; the texts of the turns not forgotten are now
        found = secrets_scan.find_secrets_many([raw.text for raw, _ in kept])
        texts = [(raw, secrets_scan.redact(raw.text, spans) if spans else raw.text, len(spans) + n)
                 for (raw, n), spans in zip(kept, found, strict=True)]
    else:
        texts = [(raw, raw.text, n) for raw, n in kept]
    skipped = len(session.turns) - len(texts)
    for raw, text, count in texts:
        old = archived.get(raw.key)
        digest = hash(text)
        if old is not None and old[1] == digest:
            continue
        redactions += count
        number = old[0] if old is not None else next_turn
        if old is None:
            next_turn += 1
        archived[raw.key] = (number, digest)
        turn = Turn(raw.key, sid, number, raw.role, text, raw.ts, project, raw.branch, agent)
        (updated if old is not None else added).append(turn)
    if added or updated:
        shared = (_STR(sid), _STR(project), _STR(agent))
        data = "".join(t.line(shared) + "\n" for t in [*updated, *added]).encode("utf-8")
        if known is not None:
            known.append(sid, data)
        else:
            _append(layout.shelf(sid), data)
    return AppendResult(sid, added, updated, redactions, skipped)


def rewrite_without(layout: Layout, path: Path, drop: Callable[[Turn], bool]) -> list[Turn]:
    """Rewrite one archive file without the turns ``drop`` selects; returns them."""
    turns = read_file(path)
    gone = [t for t in turns.values() if drop(t)]
    if not gone:
        return []
    keep = sorted((t for t in turns.values() if not drop(t)), key=lambda t: (t.session, t.turn))
    if keep:
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            fh.writelines(t.line() + "\n" for t in keep)
        os.replace(tmp, path)
    else:
        path.unlink()
    return sorted(gone, key=lambda t: (t.session, t.turn))


def _move_to_shelves(layout: Layout) -> None:
    """Put every file of the layout before shelves onto the shelves, then remove it (the caller
    holds the lock). Stopped half way, the next call appends a file's lines again: a key twice
    on a shelf is one turn, and its text is the same."""
    for path in sorted(layout.sessions.glob("*/*.jsonl")):
        turns = sorted(read_file(path).values(), key=lambda t: (t.session, t.turn))
        by_shelf: dict[str, list[str]] = {}
        for t in turns:
            by_shelf.setdefault(shelf_name(t.session), []).append(t.line() + "\n")
        for name, lines in by_shelf.items():
            _append(layout.shelves / f"{name}.jsonl", "".join(lines).encode("utf-8"))
        path.unlink()
    for leftover in sorted(layout.sessions.glob("*/*.tmp")):  # a rewrite a crash cut short: its file was whole
        leftover.unlink()
    for folder in [*sorted(layout.sessions.iterdir()), layout.sessions]:
        with contextlib.suppress(OSError):  # a file quipu did not write stays where it is
            folder.rmdir()


def remember_forgotten(layout: Layout, entries: Iterable[str]) -> None:
    lines = "".join(f"{e}\n" for e in entries)
    if lines:
        layout.root.mkdir(parents=True, exist_ok=True)
        with layout.forgotten.open("a", encoding="utf-8") as fh:
            fh.write(lines)
