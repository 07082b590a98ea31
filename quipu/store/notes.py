"""Markdown notes from outside the store (a folder of notes, a memory document on stdin) as memories.

Contract:
- ``memory_document(text, source)`` reads a memory document (YAML frontmatter and body, exactly
  what a memory file holds) into (fields, body); text without frontmatter is all body. The fields
  are validated later by ``Memory.create``, like any write.
- ``read_note(path, root)`` turns one note, with or without frontmatter, as other tools and
  note apps write them, into a memory with origin ``import``: the title is the frontmatter's
  ``title``, else the first heading, else the file name; ``tags`` (or ``topics``), ``aliases`` and
  ``description`` are kept when they are lists of short texts or one line; ``class`` when it is
  one of the store's classes, else ``project-note``; ``created`` (or ``date``), else the file's
  mtime. Other frontmatter keys are dropped. A leading byte-order mark is not part of the note.
- A note's id (``note_id``) is two halves of 12 hex characters: which note it is (the imported
  folder's name and the note's path in it) and which version (its path and text). Importing the
  same folder again adds nothing, and an edited note's id shares its first half with the earlier
  versions (``identity``), so an import finds them in one shard folder without any field of
  theirs. ``former_id`` is the id an earlier quipu gave the same note (16 hex characters of the
  second half's hash): a store imported then holds the note already.
- ``read_document(path, rel)`` reads one note file as ``scan_folder`` does (for a topic file a
  MEMORY.md links): its frontmatter fields, body and mtime, or a ``Skipped`` with the same reasons.
- ``scan_folder(root)`` lists every ``*.md`` and ``*.markdown`` file under ``root`` (hidden folders
  are not entered; its length is known before any note is read) and yields each, read as it is iterated,
  as a ``Note`` (its path in the folder, its text and the memory it becomes) or
  as a ``Skipped`` with its path in the folder and the reason: a link (to a file or a folder;
  links are never followed), a file too large, unreadable, not UTF-8, empty or without a title.
  One note never stops the scan: whatever goes wrong with one note is that note's reason.
- A path quipu names a note by (its path in the folder, the folder's name: what its id is made
  of, and what a report lists) is ``printable_path`` of the name on disk: the name itself when it
  is UTF-8, else with each byte that is not UTF-8 written as ``\\xNN``. So a file whose name is
  not UTF-8 is read like any other, named faithfully, and found under the same id next time.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from quipu.errors import InvalidMemory
from quipu.store.frontmatter import parse_fields
from quipu.store.memory import CLASSES, MAX_FILE_BYTES, Memory, parse_created
from quipu.lite import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
ID_HALF = 12  # hex characters of each half of an id that names a note and its version
# An id of a note and its version: "mm-" for an entry of a MEMORY.md (quipu.commands.import_).
_VERSIONED = re.compile(r"\A((?:mm-)?[0-9a-f]{12})[0-9a-f]{12}\Z")


class Skipped(NamedTuple):
    path: str  # the note's path in the folder
    reason: str
    link: str | None = None  # a link that was not followed, as written (a MEMORY.md entry's topic file)


class Note(NamedTuple):
    path: str  # the note's path in the folder
    text: str
    memory: Memory


def memory_document(text: str, source: str) -> tuple[dict[str, Any], str]:
    """(frontmatter fields, body) of a memory document; no frontmatter: ({}, text)."""
    if not text.lstrip("\ufeff").startswith("---"):
        return {}, text
    return parse_fields(text, source)


def _short_list(value: object) -> list[str]:
    if isinstance(value, str):
        value = [v for v in re.split(r"[,\s]+", value) if v]
    if not isinstance(value, list):
        return []
    return [v.strip().lstrip("#") for v in value if isinstance(v, str) and 0 < len(v.strip()) <= 80
            and v.isprintable()][:50]


def _one_line(value: object, limit: int = 300) -> str:
    if not isinstance(value, str):
        return ""
    text = " ".join(value.split())
    return text[:limit] if text.isprintable() else ""


def created_of(fields: dict[str, Any], path: Path | str, mtime: float | None = None) -> str:
    """A note's ``created`` (or ``date``, ``modified``) when it is a date, else the file's mtime
    (``mtime``, when the caller has it)."""
    for key in ("created", "date", "modified"):
        value = fields.get(key)
        try:
            if isinstance(value, _dt.datetime):
                value = value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
                return value.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            if isinstance(value, _dt.date):
                return value.isoformat()
            if isinstance(value, str):
                parse_created(value.strip())
                return value.strip()
        except (ValueError, OverflowError):
            continue
    when = _dt.datetime.fromtimestamp(os.stat(path).st_mtime if mtime is None else mtime, _dt.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def note_id(folder: str, rel: str, text: str) -> str:
    """The id of the note at ``rel`` in a folder named ``folder`` as it reads ``text``: which note
    (12 hex of its folder's name and path) and which version (12 hex of its path and text)."""
    import hashlib  # only here: an add does not load OpenSSL

    return (hashlib.sha256(f"{folder}/{rel}".encode()).hexdigest()[:ID_HALF]
            + hashlib.sha256(f"{rel}\n\n{text}".encode()).hexdigest()[:ID_HALF])


def former_id(rel: str, text: str) -> str:
    """The id an earlier quipu gave the same note: 16 hex of its path and text (``note_id``'s second
    half is the first 12 of them)."""
    import hashlib

    return hashlib.sha256(f"{rel}\n\n{text}".encode()).hexdigest()[:16]


def identity(memory_id: str) -> str | None:
    """The half of a versioned id (``note_id``, or a MEMORY.md entry's ``mm-`` id) that names the note
    whatever its version; None for any other id."""
    found = _VERSIONED.match(memory_id)
    return found.group(1) if found else None


def folder_name(root: Path | str) -> str:
    """The name of the imported folder, as a note's id takes it (``notes/..`` is the folder above)."""
    return printable_path(os.path.basename(os.path.normpath(os.path.abspath(root))))


def printable_path(path: str) -> str:
    """``path`` (a name as the file system gives it) as quipu names it: itself when it is UTF-8, else
    each byte that is not UTF-8 written as ``\\xNN``; the same bytes give the same text each time."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        pass
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name's byte stands for
        return path.encode("utf-8", "backslashreplace").decode("utf-8")


def _text(path: Path | str, rel: str, status: os.stat_result) -> str:
    """A note file's text, read without following a link; InvalidMemory when too large or not UTF-8."""
    if status.st_size > MAX_FILE_BYTES:
        raise InvalidMemory(f"{rel}: {status.st_size:,} bytes; a memory may hold at most {MAX_FILE_BYTES:,}")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = [os.read(fd, status.st_size + 1)]
        while chunks[-1] and sum(map(len, chunks)) <= MAX_FILE_BYTES:
            chunks.append(os.read(fd, MAX_FILE_BYTES + 1))
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise InvalidMemory(f"{rel}: {len(data):,} bytes; a memory may hold at most {MAX_FILE_BYTES:,}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMemory(f"{rel}: not UTF-8 text (byte {exc.start:,})") from None


def _document(text: str, rel: str) -> tuple[dict[str, Any], str]:
    """(frontmatter fields, body) of a note's text; InvalidMemory when the body is empty."""
    text = text.removeprefix("\ufeff")
    try:
        fields, body = memory_document(text, rel)
    except InvalidMemory:
        fields, body = {}, text  # frontmatter another tool wrote in a form quipu does not read: keep it all
    body = body.strip("\n")
    if not body.strip():
        raise InvalidMemory(f"{rel}: empty note")
    return fields, body


def read_document(path: Path | str, rel: str) -> tuple[dict[str, Any], str, float] | Skipped:
    """(frontmatter fields, body, mtime) of the note file at ``path``, read as ``scan_folder`` reads
    one, or Skipped (as ``rel``) with the reason it would give."""
    def document(text: str, status: os.stat_result) -> tuple[dict[str, Any], str, float]:
        return (*_document(text, rel), status.st_mtime)

    return _read(os.fspath(path), rel, document)


def read_note(path: Path | str, root: Path, rel: str | None = None, status: os.stat_result | None = None) -> Note:
    """One note and the memory it becomes; InvalidMemory (naming the file) when it cannot be one.
    ``rel``: the note's path in the folder, when the caller knows it; ``status``: its ``lstat``."""
    rel = rel or printable_path(Path(path).relative_to(root).as_posix())
    status = status or os.stat(path)
    return _note(_text(path, rel, status), os.fspath(path), rel, folder_name(root), status.st_mtime)


def _note(text: str, path: str, rel: str, folder: str, mtime: float) -> Note:
    fields, body = _document(text, rel)
    heading = _HEADING.search(body)
    title = (_one_line(fields.get("title")) or (_one_line(heading.group(1)) if heading else "")
             or _one_line(os.path.splitext(rel.rsplit("/", 1)[-1])[0]))
    if not title:
        raise InvalidMemory(f"{rel}: no title (no frontmatter title, heading or usable file name)")
    kind = fields.get("class")
    values: dict[str, Any] = {
        "id": note_id(folder, rel, text),  # hex: spread over the 256 shard folders like any other id
        "title": title,
        "description": _one_line(fields.get("description") or fields.get("summary")),
        "class": kind if isinstance(kind, str) and kind in CLASSES else "project-note",
        "topics": _short_list(fields.get("tags") if "tags" in fields else fields.get("topics")),
        "aliases": _short_list(fields.get("aliases")),
        "origin": "import",
        "created": created_of(fields, path, mtime),
    }
    return Note(rel, text, Memory.create(values, body + "\n", source=rel))


class FolderNotes:
    """The notes under a folder, counted first and read one at a time as they are iterated (a
    folder of 100,000 notes is never held in memory at once)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        top = os.fspath(root)
        found: list[tuple[str, str]] = []  # (the note's path in the folder, its full path)
        self.links: set[str] = set()
        self.unreadable: list[OSError] = []
        for base, dirs, files in os.walk(top, onerror=self.unreadable.append):  # follows no symlinked folder
            prefix = printable_path(os.path.relpath(base, top).replace(os.sep, "/")) + "/" if base != top else ""
            for d in dirs:
                if not d.startswith(".") and os.path.islink(os.path.join(base, d)):
                    self.links.add(prefix + printable_path(d))
                    found.append((prefix + printable_path(d), os.path.join(base, d)))
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(base, d)))
            found.extend((prefix + printable_path(name), os.path.join(base, name)) for name in files
                         if name.lower().endswith((".md", ".markdown")))
        self.paths = sorted(found, key=lambda item: item[0].split("/"))  # as paths sort: part by part

    def __len__(self) -> int:
        return len(self.unreadable) + len(self.paths)

    def __iter__(self) -> Iterator[Note | Skipped]:
        root = self.root
        for error in self.unreadable:
            where = Path(error.filename or root)
            yield Skipped(printable_path(where.relative_to(root).as_posix()) if where != root else ".",
                          f"a folder that cannot be read: {error.strerror or error}")
        folder = folder_name(root)
        for rel, full in self.paths:
            yield _read_one(full, folder, rel, rel in self.links)


def _read_one(path: str, folder: str, rel: str, link: bool) -> Note | Skipped:
    if link:
        return Skipped(rel, "not a regular folder (links are not followed): a link to a folder")
    return _read(path, rel, lambda text, status: _note(text, path, rel, folder, status.st_mtime))


def _read(path: str, rel: str, make: Callable[[str, os.stat_result], T]) -> T | Skipped:
    """``make`` of a note file's text and status, or Skipped with the reason it cannot be a note."""
    try:
        status = os.lstat(path)
        if not stat.S_ISREG(status.st_mode):
            return Skipped(rel, "not a regular file (links are not followed)")
        return make(_text(path, rel, status), status)
    except InvalidMemory as exc:
        return Skipped(rel, str(exc).split("\n", 1)[0].removeprefix(f"{rel}: "))
    except OSError as exc:
        return Skipped(rel, f"cannot be read: {exc.strerror or exc}")
    except Exception as exc:  # noqa: BLE001 - one note never stops an import; its reason is listed
        return Skipped(rel, f"cannot be read as a note: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:200] if str(exc) else ''}")


def scan_folder(root: Path) -> FolderNotes:
    """Every note under ``root``, in path order, as a Note or a Skipped (read as it is iterated)."""
    return FolderNotes(root)
