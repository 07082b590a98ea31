"""What a sync accepts from a remote, and how two sides' changes to one path meet.

Contract (docs/sync.md states the same policy for people):
- ``refusal(path, mode, data, replaces)`` says why a file arriving from a remote may not enter
  the store, or None. Accepted: regular, non-executable files at ``memories/<shard>/<id>.md``
  whose frontmatter parses and names that id, new files at ``events/<shard>/<id>/<name>.json``
  holding one JSON object about that id (an event file is never changed once written), and the
  template's ``README.md``. Everything else is refused: symlinks, submodules, executables, paths
  outside that schema, and ``quipu.toml`` or ``.gitignore`` (a store's settings never arrive
  from a remote).
- ``removal_refusal(path, undone)``: a file leaves the store only through an undo (a commit
  carrying ``Quipu-Action: undo`` that removed it); any other removal arriving from a remote is
  refused and the local file stays.
- ``keep_both(...)``: the same memory file changed on both sides. Neither text is lost: the newer
  version (by the time of the last commit that changed the file on each side) stays at the id,
  the older one is kept as a memory of its own, ``<id>-<8 hex of its blob>`` (the same name on
  every clone that meets the same pair), and the caller then supersedes it by the id with an
  ordinary supersession commit, which one ``quipu undo`` reverts.
- Nothing here touches the repository's refs, worktree or index; it only reads objects and
  writes blobs.
"""
from __future__ import annotations

import json
import re
from typing import NamedTuple

import pygit2

from quipu.errors import InvalidMemory
from quipu.store.memory import ID_RE, MAX_FILE_BYTES, parse_memory, render_memory

MODE_FILE = 0o100644
_MODE_NAMES = {0o120000: "a symbolic link", 0o160000: "a submodule", 0o100755: "an executable file",
               0o040000: "a folder"}
_EVENT_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.json\Z")
PLAIN_FILES = ("README.md",)
SETTINGS_FILES = ("quipu.toml", ".gitignore", ".gitattributes", ".gitmodules")
COPY_HEX = 8


class Refusal(NamedTuple):
    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


class KeptBoth(NamedTuple):
    memory: str  # the id that keeps the newer text
    copy: str  # the id that keeps the older text
    newer: str  # "local" or "remote"

    def to_json(self) -> dict[str, str]:
        return {"memory": self.memory, "copy": self.copy, "newer": self.newer}


def refusal(path: str, mode: int, data: bytes, *, replaces: bool) -> str | None:
    """Why this incoming file may not enter the store (None: it may). ``replaces``: the store
    already has a file at ``path`` that this one would change."""
    if mode != MODE_FILE:
        return f"it is {_MODE_NAMES.get(mode, f'of mode {mode:o}')}; a store holds only regular files"
    parts = path.split("/")
    if len(parts) == 1:
        if path in SETTINGS_FILES:
            return "a store's settings never arrive from a remote; copy the settings you want by hand"
        return None if path in PLAIN_FILES else "it is outside the store's schema (memories/, events/)"
    if parts[0] == "memories":
        return _memory_refusal(parts, data)
    if parts[0] == "events":
        if replaces:
            return "an event file is never changed once written"
        return _event_refusal(parts, data)
    return "it is outside the store's schema (memories/, events/)"


def _memory_refusal(parts: list[str], data: bytes) -> str | None:
    if len(parts) != 3 or not parts[2].endswith(".md"):
        return "memory files live at memories/<2 chars>/<id>.md"
    memory_id = parts[2][:-3]
    if not ID_RE.match(memory_id) or parts[1] != memory_id[:2]:
        return "memory files live at memories/<first 2 chars of the id>/<id>.md"
    try:
        memory = parse_memory(data, "/".join(parts))
    except InvalidMemory as exc:
        return str(exc).split("\n", 1)[0]
    if memory.id != memory_id:
        return f"its frontmatter names id {memory.id!r}, not the file's {memory_id!r}"
    return None


def _event_refusal(parts: list[str], data: bytes) -> str | None:
    if len(parts) != 4 or not ID_RE.match(parts[2]) or parts[1] != parts[2][:2] or not _EVENT_NAME.match(parts[3]):
        return "event files live at events/<2 chars>/<id>/<stamp>-<random>.json"
    if len(data) > MAX_FILE_BYTES:
        return f"it is larger than {MAX_FILE_BYTES} bytes"
    try:
        event = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "it is not UTF-8 JSON"
    if not isinstance(event, dict):
        return "an event file holds one JSON object"
    if event.get("memory", parts[2]) != parts[2]:
        return f"it is about memory {event.get('memory')!r}, not {parts[2]!r}"
    return None


def removal_refusal(path: str, undone: set[str]) -> str | None:
    """Why a removal arriving from a remote is not applied (None: it is)."""
    if path in undone:
        return None
    return "a file leaves a store only through `quipu undo`; the local file is kept"


def copy_id(memory_id: str, blob: pygit2.Oid) -> str:
    """The id that keeps an older version of ``memory_id`` (same shard, at most 64 characters)."""
    return f"{memory_id[:64 - COPY_HEX - 1]}-{str(blob)[:COPY_HEX]}"


def keep_both(
    repo: pygit2.Repository, path: str, ours: pygit2.Oid, theirs: pygit2.Oid, *, ours_newer: bool
) -> tuple[pygit2.Oid, str, pygit2.Oid, KeptBoth] | str:
    """Both sides changed memory file ``path``: (blob kept at ``path``, the copy's path, the copy's
    blob, what was done), or why it cannot be done (then the local version stays)."""
    memory_id = path.rsplit("/", 1)[1][:-3]
    try:
        parse_memory(repo[ours].data, path)  # type: ignore[attr-defined]
        theirs_memory = parse_memory(repo[theirs].data, path)  # type: ignore[attr-defined]
    except InvalidMemory as exc:
        return f"changed on both sides, and one version cannot be read ({str(exc).splitlines()[0]})"
    older = theirs if ours_newer else ours
    older_memory = theirs_memory if ours_newer else parse_memory(repo[ours].data, path)  # type: ignore[attr-defined]
    kept_id = copy_id(memory_id, older)
    copy = older_memory.with_changes(id=kept_id)
    blob = repo.create_blob(render_memory(copy))
    newer = ours if ours_newer else theirs
    return newer, copy.path, blob, KeptBoth(memory_id, kept_id, "local" if ours_newer else "remote")
