"""`quipu import claude-mem DB` and `quipu import basic-memory DIR`: other memory tools' stores as memories.

Contract:
- claude-mem's SQLite database (``~/.claude-mem/claude-mem.db``) is opened read only
  (``file:...?mode=ro``), never written. Each row of ``observations`` (``title``, ``subtitle``,
  ``narrative`` or the older ``text``, ``facts`` and ``concepts`` as JSON lists, ``type``,
  ``files_read``, ``files_modified``, ``created_at``) becomes one memory: its title the
  observation's, its concepts and type topics. Each row of ``session_summaries`` (``request``,
  ``investigated``, ``learned``, ``completed``, ``next_steps``, ``notes``) becomes one memory
  titled by its request. Columns a version of claude-mem lacks are read as empty. A row's
  ``project`` (claude-mem's name for the folder the session ran in) becomes the memory's project,
  a name (``quipu add --project``) or, when absolute, a folder; one that is neither is dropped.
  ``--project`` replaces it on every memory, of both tools.
- A basic-memory project is a folder of markdown notes with frontmatter ``title``, ``type``,
  ``permalink`` and ``tags``, and ``- [category] text #tag`` observation lines and ``- relation
  [[Target]]`` relation lines. Each note is read like ``quipu import markdown`` reads one
  (``quipu.store.notes``); its tags and the ``#tags`` of its observations become topics, its
  permalink an alias, its ``type`` the class when it names one (user, feedback, project, reference).
- Both go through ``import_notes``, the gates of ``quipu import markdown``: the secret scan, one
  commit, each entry that may not enter (no text, a secret, too large, malformed) skipped and
  listed by where it came from (``observations/12``, a note's path), exit code 4 when any was.
- Ids are derived from where each entry came from and its text: importing again adds nothing.
- A text of the database that is not UTF-8 (a file's name in ``files_read``, say) is read with each
  byte that is not UTF-8 written as ``\\xNN``, as a note's file name is (``notes.printable_path``).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from quipu.commands.import_ import TYPE_CLASSES, report_folder
from quipu.commands.import_folder import FolderImport, import_notes
from quipu.errors import FatalError, InvalidMemory
from quipu.store import notes
from quipu.store.memory import Memory, check_project, parse_created
from quipu.store.store import Store

_OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\]\n]{1,80})\]\s+(.+)$", re.MULTILINE)
_TAG = re.compile(r"(?<![\w#&/])#([A-Za-z0-9][\w/-]{0,79})")
_TITLE_CHARS = 120


def _str(row: sqlite3.Row, name: str) -> str:
    """A text column; one that is not UTF-8 (a file's name another tool stored) with each byte that
    is not UTF-8 written as ``\\xNN``, as ``notes.printable_path`` names a file."""
    return notes.printable_path(_raw(row, name))


def _raw(row: sqlite3.Row, name: str) -> str:
    """A text column as stored (bytes that are not UTF-8 kept as ``surrogateescape`` reads them)."""
    value = row[name] if name in row.keys() else None
    return value.strip() if isinstance(value, str) else ""


def _list(row: sqlite3.Row, name: str) -> list[str]:
    """A column holding a JSON list of texts (claude-mem's facts, concepts, files)."""
    text = _raw(row, name)
    if not text:
        return []
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return [notes.printable_path(text)]
    items = value if isinstance(value, list) else [value]
    return [notes.printable_path(" ".join(v.split())) for v in items if isinstance(v, str) and v.strip()]


def _topics(values: list[str]) -> list[str]:
    seen: list[str] = []
    for value in values:
        topic = " ".join(value.split()).lstrip("#")
        if 0 < len(topic) <= 80 and topic.isprintable() and topic not in seen:
            seen.append(topic)
    return seen[:50]


def _clip(text: str, limit: int = _TITLE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _created(row: sqlite3.Row) -> str:
    text = _str(row, "created_at")
    try:
        parse_created(text)
        return text
    except (ValueError, OverflowError):
        pass
    epoch = row["created_at_epoch"] if "created_at_epoch" in row.keys() else None
    if isinstance(epoch, (int, float)) and not isinstance(epoch, bool):
        seconds = epoch / 1000 if epoch > 10**11 else epoch  # claude-mem writes milliseconds
        try:
            return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (ValueError, OverflowError, OSError):
            pass
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _project(row: sqlite3.Row) -> str | None:
    """A row's ``project``: a folder's name, or an absolute folder; None when it is neither."""
    value = _str(row, "project")
    if not value or (not value.startswith("/") and "/" in value):
        return None
    try:
        return check_project(value, "project")
    except InvalidMemory:
        return None


def _note(where: str, title: str, body: str, topics: list[str], created: str,
          project: str | None = None) -> notes.Note | notes.Skipped:
    if not title or not body.strip():
        return notes.Skipped(where, "no title or no text: nothing to remember")
    digest = hashlib.sha256(f"{where}\n{title}\n\n{body}".encode("utf-8", "replace")).hexdigest()[:16]
    values: dict[str, Any] = {"id": digest, "title": title, "class": "project-note", "topics": _topics(topics),
                              "origin": "import", "created": created, "project": project}
    try:
        memory = Memory.create(values, body.strip("\n") + "\n", source=where)
    except InvalidMemory as exc:
        return notes.Skipped(where, str(exc).split("\n", 1)[0].removeprefix(f"{where}: "))
    return notes.Note(where, f"{title}\n\n{body}", memory)


def _observation(row: sqlite3.Row) -> notes.Note | notes.Skipped:
    where = f"observations/{row['id']}"
    text = _str(row, "narrative") or _str(row, "text")
    subtitle = _str(row, "subtitle")
    facts = _list(row, "facts")
    title = _clip(_str(row, "title") or subtitle or (text or (facts[0] if facts else "")).split("\n", 1)[0])
    parts = [subtitle] if subtitle and subtitle != title else []
    parts += [text] if text else []
    parts += ["\n".join(f"- {fact}" for fact in facts)] if facts else []
    for label, column in (("Files read", "files_read"), ("Files modified", "files_modified")):
        files = _list(row, column)
        if files and parts:
            parts.append(f"{label}: " + ", ".join(files[:50]))
    kind = _str(row, "type")
    return _note(where, title, "\n\n".join(parts), _list(row, "concepts") + ([kind] if kind else []), _created(row),
                 _project(row))


_SUMMARY = (("Request", "request"), ("Investigated", "investigated"), ("Learned", "learned"),
            ("Completed", "completed"), ("Next steps", "next_steps"), ("Notes", "notes"))


def _summary(row: sqlite3.Row) -> notes.Note | notes.Skipped:
    where = f"session_summaries/{row['id']}"
    parts = [f"{label}: {_str(row, column)}" for label, column in _SUMMARY if _str(row, column)]
    request = _str(row, "request") or _str(row, "completed") or _str(row, "learned")
    title = _clip(f"Session: {request}") if request else ""
    return _note(where, title, "\n\n".join(parts), ["session summary"], _created(row), _project(row))


def read_claude_mem(path: Path) -> list[notes.Note | notes.Skipped]:
    """Every observation and session summary of claude-mem's database, read only."""
    if path.is_symlink() or not path.is_file():
        raise FatalError(f"{path} is not a file\n- give claude-mem's database, usually ~/.claude-mem/claude-mem.db")
    try:
        db = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise FatalError(f"cannot open {path}: {exc}\n- give claude-mem's database file") from None
    found: list[notes.Note | notes.Skipped] = []
    try:
        db.row_factory = sqlite3.Row
        db.text_factory = lambda data: data.decode("utf-8", "surrogateescape")
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables & {"observations", "session_summaries"}:
            raise FatalError(f"{path} has no observations or session_summaries table\n"
                             "- give claude-mem's database, usually ~/.claude-mem/claude-mem.db")
        for table, read in (("observations", _observation), ("session_summaries", _summary)):
            if table not in tables:
                continue
            for row in db.execute(f"SELECT * FROM {table} ORDER BY id"):  # noqa: S608 - a fixed name
                try:
                    found.append(read(row))
                except Exception as exc:  # noqa: BLE001 - one row never stops an import; its reason is listed
                    found.append(notes.Skipped(f"{table}/{row['id']}", f"cannot be read: {type(exc).__name__}"))
    except sqlite3.Error as exc:
        raise FatalError(f"cannot read {path}: {exc}\n- give claude-mem's database file (it is only read)") from None
    finally:
        db.close()
    return found


def basic_memory_note(note: notes.Note) -> notes.Note | notes.Skipped:
    """A note of a basic-memory project: its observations' #tags topics too, its permalink an alias."""
    try:
        fields, body = notes.memory_document(note.text, note.path)
    except InvalidMemory:
        fields, body = {}, note.text
    tags = [tag for _, text in _OBSERVATION.findall(body) for tag in _TAG.findall(text)]
    memory = note.memory
    changes: dict[str, Any] = {"topics": tuple(_topics([*memory.topics, *tags]))}
    permalink = fields.get("permalink")
    if isinstance(permalink, str) and 0 < len(permalink.strip()) <= 80 and permalink.strip().isprintable():
        changes["aliases"] = tuple(_topics([*memory.aliases, permalink.strip()]))
    kind = fields.get("type")
    if isinstance(kind, str) and kind.strip().lower() in TYPE_CLASSES:
        changes["cls"] = TYPE_CLASSES[kind.strip().lower()]
    return notes.Note(note.path, note.text, memory.with_changes(**changes))


def read_basic_memory(root: Path) -> list[notes.Note | notes.Skipped]:
    if root.is_symlink() or not root.is_dir():
        raise FatalError(f"{root} is not a folder\n- give the basic-memory project's folder (~/basic-memory by default)")
    found = list(notes.scan_folder(root))
    return [basic_memory_note(item) if isinstance(item, notes.Note) else item for item in found]


def import_peer(store: Store, kind: str, path: Path, *, dry_run: bool = False,
                allow_secret_like: tuple[str, ...] = (), project: str | None = None) -> FolderImport:
    found = read_claude_mem(path) if kind == "claude-mem" else read_basic_memory(path)
    return import_notes(store, found, f"{kind} {notes.printable_path(path.name)}", dry_run=dry_run,
                        allow_secret_like=allow_secret_like, project=project)


def run_peer(store: Store, args: argparse.Namespace) -> int:
    path = Path(args.file).expanduser().absolute()
    done = import_peer(store, args.kind, path, dry_run=args.dry_run, allow_secret_like=tuple(args.allow_secret_like),
                       project=args.project)
    return report_folder(store, done, path, args, "entries" if args.kind == "claude-mem" else "note(s)")
