"""Feeding the archive: one session at a hook, or every transcript on the machine at once.

Contract:
- ``projects_dir()`` is Claude Code's transcript folder, ``<claude dir>/projects``, where the
  claude dir is ``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` (Claude Code's own rule);
  ``codex_sessions_dir()`` is Codex CLI's, ``$CODEX_HOME/sessions`` (``~/.codex/sessions``).
  ``default_roots()`` is both: one archive holds the sessions of both agents, each turn labelled.
- ``append_transcript`` reads and redacts one session's transcript, then archives its new turns
  and indexes them under the archive lock (nothing a transcript can slow down is done while it
  is held): safe to run from twenty SessionEnd hooks at once, and again on the same transcript.
- Only regular files are read (``reader.open_regular``): a named pipe, a device or a socket is
  skipped unopened (and one that takes a file's place meanwhile is never waited on).
- ``backfill`` does the same for every ``*.jsonl`` under a folder, in one locked run with
  batched index writes; a run that is stopped is redone by the next one (a first backfill's new
  index is renamed into place only when complete; a later one marks the index as behind the
  archive until every turn is in it, and a run that finds the mark rebuilds the index from the
  archive). From 64 transcripts on (and where ``apart.usable``), a child process reads and redacts
  them while this one archives what it sent before; the summary is the same. It returns what it
  did: sessions, turns added and updated, redactions, and every file it skipped with why (sub-agent transcripts, files with no turn, unreadable files,
  files that are not regular files, symbolic links to files or folders, which are never followed).
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from quipu.claude.settings import claude_dir
from quipu.codex.config import codex_home
from quipu.history import apart, archive, index, locking
from quipu.history.archive import Layout, Turn
from quipu.history.reader import RawTurn, Session, kind, read_session

SUBAGENT = "a sub-agent transcript: its prompts come from the main session, not from a person"
NO_TURNS = "no human prompt and no assistant text"
LINK = "a symbolic link: not followed"
LINK_TO_FOLDER = "a symbolic link to a folder: not followed"
_FLUSH = 4096
_APART_FILES = 64  # transcripts from which a backfill reads them in a child process (quipu.history.apart)


def projects_dir() -> Path:
    return claude_dir() / "projects"


def codex_sessions_dir() -> Path:
    return codex_home() / "sessions"


def default_roots() -> list[Path]:
    return [projects_dir(), codex_sessions_dir()]


@dataclass
class Summary:
    sessions: int = 0  # sessions read that had turns (archived now, or before)
    files: int = 0
    added: int = 0
    updated: int = 0
    redactions: int = 0
    bad_lines: int = 0
    forgotten: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, "sessions": self.sessions, "turns_added": self.added,
                "turns_updated": self.updated, "redactions": self.redactions, "bad_lines": self.bad_lines,
                "forgotten_left_out": self.forgotten,
                "skipped": [{"path": p, "why": why} for p, why in self.skipped]}


def _is_subagent(path: Path) -> bool:
    return "subagents" in path.parts or path.name.startswith("agent-")


class Read(NamedTuple):
    """One transcript as read: its session, or why it is skipped."""

    path: str  # sent from a child as a string: a Path is parsed again when unpickled
    session: Session | None
    why: str  # why it is skipped ("" when it is not)
    bad_lines: int
    redacted: list[int] | None  # archive.redact_turns of the session, when it ran already

    def packed(self) -> tuple[object, ...]:
        """Plain tuples, lists and strings (``unpacked`` makes it again): pickled a quarter as fast
        as the named tuples and the dataclass, and read back twice as fast."""
        s = self.session
        return (self.path, self.why, self.bad_lines, self.redacted, None if s is None else (
            s.session_id, s.project, s.agent, s.bad_lines, s.sidechain, list(map(tuple, s.turns))))

    @classmethod
    def unpacked(cls, data: tuple[Any, ...]) -> Read:
        path, why, bad_lines, redacted, s = data
        if s is None:
            return cls(path, None, why, bad_lines, redacted)
        session_id, project, agent, session_bad, sidechain, turns = s
        session = Session(session_id, project, list(map(RawTurn._make, turns)), bad_lines=session_bad,
                          sidechain=sidechain, agent=agent)
        return cls(path, session, why, bad_lines, redacted)


def _read_one(path: Path, session_id: str | None = None, redact: bool = False) -> Read:
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return Read(str(path), None, f"cannot be read: {exc.strerror or exc}", 0, None)
    if stat.S_ISLNK(mode):
        return Read(str(path), None, LINK_TO_FOLDER if path.is_dir() else LINK, 0, None)
    if not stat.S_ISREG(mode):
        return Read(str(path), None, f"not a regular file ({kind(mode)}): not read", 0, None)
    if _is_subagent(path):
        return Read(str(path), None, SUBAGENT, 0, None)
    try:
        session = read_session(path)
    except OSError as exc:
        return Read(str(path), None, f"cannot be read: {exc.strerror or exc}", 0, None)
    except Exception as exc:  # noqa: BLE001 - one transcript quipu cannot read must not stop the others
        return Read(str(path), None, f"cannot be read as a transcript ({type(exc).__name__}: {str(exc)[:200]})", 0, None)
    if session_id:
        session.session_id = session_id
    if session.sidechain:
        return Read(str(path), None, SUBAGENT, session.bad_lines, None)
    if not session.turns:
        return Read(str(path), None, NO_TURNS, session.bad_lines, None)
    return Read(str(path), session, "", session.bad_lines, archive.redact_turns(session) if redact else None)


def _archive_read(layout: Layout, read: Read, summary: Summary, forgotten: set[str],
                  known: archive.Known | None = None) -> list[Turn]:
    summary.files += 1
    summary.bad_lines += read.bad_lines
    if read.session is None:
        summary.skipped.append((read.path, read.why))
        return []
    result = archive.append_session(layout, read.session, forgotten, known, read.redacted)
    summary.sessions += 1
    summary.added += len(result.added)
    summary.updated += len(result.updated)
    summary.redactions += result.redactions
    summary.forgotten += result.forgotten
    return [*result.updated, *result.added]


def append_transcript(path: str | Path, *, session_id: str | None = None, layout: Layout | None = None,
                      wait: float = locking.WAIT, quiet: bool = False) -> Summary:
    """Archive and index one transcript's new turns (the SessionEnd / PreCompact work): read and
    redacted first, then archived under the lock (``wait``, ``quiet``: ``Layout.lock``'s)."""
    layout = layout or Layout.default()
    summary = Summary()
    read = _read_one(Path(path), session_id, redact=True)
    with layout.lock(wait=wait, quiet=quiet):
        turns = _archive_read(layout, read, summary, archive.forgotten_keys(layout))
        if turns or not index.is_current(layout):
            writer = index.open_writer(layout)
            try:
                writer.upsert(turns)
            finally:
                writer.close()
    return summary


def transcripts(root: Path) -> list[Path]:
    """Every ``*.jsonl`` under ``root`` whatever its type (a symbolic link or a named pipe too, to
    be reported), and every symbolic link to a folder (reported, never entered), sorted:
    ``root.rglob`` with the file types the folder listing gives, no stat of each file."""
    found: list[Path] = []
    folders = [str(root)]
    while folders:
        try:
            entries = os.scandir(folders.pop())
        except OSError:
            continue  # a folder removed or unreadable meanwhile
        with entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif entry.name.endswith(".jsonl") or (entry.is_symlink() and entry.is_dir()):
                    found.append(Path(entry.path))
    return sorted(found)


def backfill(root: Path | list[Path] | None = None, *, layout: Layout | None = None,
             progress: Callable[[int, int], None] | None = None) -> Summary:
    """Archive and index every transcript under ``root`` (a folder or several; default:
    ``default_roots()``, Claude Code's and Codex CLI's)."""
    layout = layout or Layout.default()
    roots = default_roots() if root is None else [root] if isinstance(root, Path) else root
    summary = Summary()
    files = [path for folder in roots if folder.is_dir() for path in transcripts(folder)]
    with layout.lock():
        forgotten = archive.forgotten_keys(layout)
        fresh = not index.is_current(layout)
        # Each shelf read once, not once per session on it, and written once per flush.
        known = archive.Known(layout, buffered=True)

        def archived() -> Iterator[Turn]:
            try:
                if len(files) >= _APART_FILES and apart.usable():
                    # Read and redacted by a child while this process archives what it sent before.
                    packed = apart.made(lambda: (_read_one(path, redact=True).packed() for path in files))
                    reads: Iterable[Read] = map(Read.unpacked, packed)
                else:
                    reads = map(_read_one, files)
                for n, read in enumerate(reads, 1):
                    yield from _archive_read(layout, read, summary, forgotten, known)
                    if progress:
                        progress(n, len(files))
            finally:
                known.flush()

        if fresh and not archive.session_files(layout):
            # A first backfill: each transcript's turns are archived and indexed (words and
            # vectors, in batches) in one pass, never read back from the archive.
            index.rebuild(layout, archived())
            return summary
        pending: list[Turn] = []
        writer = None if fresh else index.Writer(layout, bulk=True)
        try:
            if writer is not None and writer.behind():
                # A backfill before this one stopped between archiving turns and indexing them:
                # they are in the archive only. The index is rebuilt from the archive at the end.
                writer.close()
                writer, fresh = None, True
            elif writer is not None:
                writer.behind(True)
            for turn in archived():
                if writer is not None:
                    pending.append(turn)
                    if len(pending) >= _FLUSH:
                        known.flush()  # archived before indexed
                        writer.upsert(pending)
                        pending = []
            if writer is not None:
                writer.upsert(pending)
                writer.optimize()
                writer.behind(False)
        finally:
            if writer is not None:
                writer.close()
        if fresh:
            index.rebuild(layout)  # no index yet (or one behind): built from the whole archive in one pass
    return summary
