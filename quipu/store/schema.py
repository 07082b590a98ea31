"""The store's schema: every path quipu writes into a store, and what a file must be to enter one.

A store is shared through git, so every file in it is someone else's input. This module is the one
description of what a store holds; ``Store.commit`` writes nothing outside it, ``quipu clone`` and
``quipu sync`` take nothing from a remote that fails it, and ``quipu doctor`` lists what in HEAD's
tree fails it. The kinds, each a regular, non-executable file:

- ``settings``: ``quipu.toml`` and ``.gitignore`` (from the template). A clone takes them as they
  are; a sync never takes them from a remote (a store's settings are its own).
- ``readme``: ``README.md``, UTF-8 text.
- ``memory``: ``memories/<first 2 chars of the id>/<id>.md`` whose frontmatter parses and names
  that id (capture, ``quipu add``, facts, imports, profile demotions, sync's kept copies).
- ``event``: ``events/<2 chars>/<id>/<name>.json``, one JSON object about that id (labels,
  supersessions, the review queue); never changed once written.
- ``profile``: ``profile.md``, the always-on card: UTF-8 text without control characters, at most
  ``PROFILE_MAX_BYTES``. Two sides' edits meet line by line (``quipu.sync.policy.merge_profile``).
- ``skill-draft``: ``skills/drafts/<name>/SKILL.md`` (text) and ``draft.json`` (a JSON object);
  inert data: nothing runs or loads it until a person runs ``quipu skills promote``, which checks
  it again.
- ``skill-refusal``: ``skills/refused/<folder>/refusal.json`` and ``SKILL.md``; never changed.
- ``skill-event``: ``skills/events/<name>/<stamp>-<action>.json``, a JSON object; never changed.

Every file is at most ``MAX_FILE_BYTES``; every folder and file name is a plain name (letters,
digits, ``.``, ``-``, ``_``; no leading dot), so no path leaves its folder. ``.gitattributes`` and
``.gitmodules`` are never part of a store. Nothing here touches a repository; ``tree_problems``
only reads one.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable

from quipu.errors import InvalidMemory
from quipu.store.memory import ID_RE, MAX_FILE_BYTES, parse_memory
from quipu.lite import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pygit2

MODE_FILE = 0o100644
MODE_NAMES = {0o120000: "a symbolic link", 0o160000: "a submodule", 0o100755: "an executable file",
              0o040000: "a folder"}
PROFILE_PATH = "profile.md"
# The card's hard caps are 40 lines of at most 400 characters (quipu.store.settings); with the
# comment quipu writes after each line and a person's notes, 64 KiB is far above any real card.
PROFILE_MAX_BYTES = 65_536
SETTINGS_FILES = ("quipu.toml", ".gitignore")
FOREIGN_SETTINGS = (".gitattributes", ".gitmodules")
SETTINGS_REASON = "a store's settings never arrive from a remote; copy the settings you want by hand"

_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_JSON_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.json\Z")
_SKILL_NAME = re.compile(r"\A[a-z0-9]+(?:-[a-z0-9]+)*\Z")  # quipu.skills.gate.NAME
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # C0 controls but tab, newline, form feed, CR

Content = Callable[[list[str], bytes], "str | None"]


class Kind(NamedTuple):
    name: str
    shape: str  # where its files live, the message when a path does not fit
    fits: Callable[[list[str]], bool]  # path parts -> whether the path has the kind's shape
    content: Content  # (path parts, data) -> why the file's content does not fit, or None
    append_only: bool = False  # never changed once written
    from_remote: bool = True  # a sync may take it from a remote


def text_problem(data: bytes, limit: int = MAX_FILE_BYTES) -> str | None:
    """Why ``data`` is not a text file of at most ``limit`` bytes (None: it is)."""
    if len(data) > limit:
        return f"it is {len(data):,} bytes; at most {limit:,} are allowed"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"it is not UTF-8 text (byte {exc.start:,})"
    found = _CONTROL.search(text)
    if found:
        return f"it holds a control character ({found.group(0)!r})"
    return None


def json_problem(data: bytes) -> str | None:
    """Why ``data`` is not one JSON object in a file of at most ``MAX_FILE_BYTES`` (None: it is)."""
    if len(data) > MAX_FILE_BYTES:
        return f"it is larger than {MAX_FILE_BYTES:,} bytes"
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "it is not UTF-8 JSON"
    return None if isinstance(value, dict) else "it holds no JSON object"


def _sized(parts: list[str], data: bytes) -> str | None:
    return f"it is {len(data):,} bytes; at most {MAX_FILE_BYTES:,} are allowed" if len(data) > MAX_FILE_BYTES else None


def _text(parts: list[str], data: bytes) -> str | None:
    return text_problem(data, PROFILE_MAX_BYTES if parts == [PROFILE_PATH] else MAX_FILE_BYTES)


def _memory_fits(parts: list[str]) -> bool:
    memory_id = parts[-1][:-3]
    return (len(parts) == 3 and parts[2].endswith(".md") and ID_RE.match(memory_id) is not None
            and parts[1] == memory_id[:2])


def _memory(parts: list[str], data: bytes) -> str | None:
    try:
        memory = parse_memory(data, "/".join(parts))
    except InvalidMemory as exc:
        return str(exc).split("\n", 1)[0]
    if memory.id != parts[2][:-3]:
        return f"its frontmatter names id {memory.id!r}, not the file's {parts[2][:-3]!r}"
    return None


def _event_fits(parts: list[str]) -> bool:
    return (len(parts) == 4 and ID_RE.match(parts[2]) is not None and parts[1] == parts[2][:2]
            and _JSON_NAME.match(parts[3]) is not None)


def _event(parts: list[str], data: bytes) -> str | None:
    problem = json_problem(data)
    if problem:
        return problem
    event = json.loads(data)
    if event.get("memory", parts[2]) != parts[2]:
        return f"it is about memory {event.get('memory')!r}, not {parts[2]!r}"
    return None


def _skill_name(name: str) -> bool:
    return len(name) <= 64 and _SKILL_NAME.match(name) is not None


def _skill_file(parts: list[str], data: bytes) -> str | None:
    return text_problem(data) if parts[3] == "SKILL.md" else json_problem(data)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("settings", "quipu.toml, .gitignore", lambda p: True, _sized, from_remote=False),
    Kind("readme", "README.md", lambda p: True, _text),
    Kind("profile", PROFILE_PATH, lambda p: True, _text),
    Kind("memory", "memory files live at memories/<first 2 chars of the id>/<id>.md", _memory_fits, _memory),
    Kind("event", "event files live at events/<first 2 chars of the id>/<id>/<stamp>-<random>.json", _event_fits,
         _event, append_only=True),
    Kind("skill-draft", "skill drafts live at skills/drafts/<name>/SKILL.md and draft.json",
         lambda p: len(p) == 4 and _skill_name(p[2]) and p[3] in ("SKILL.md", "draft.json"), _skill_file),
    Kind("skill-refusal", "refused skill drafts live at skills/refused/<candidate>-<stamp>/refusal.json and SKILL.md",
         lambda p: len(p) == 4 and p[3] in ("SKILL.md", "refusal.json"), _skill_file, append_only=True),
    Kind("skill-event", "skill events live at skills/events/<name>/<stamp>-<action>.json",
         lambda p: len(p) == 4 and _skill_name(p[2]) and _JSON_NAME.match(p[3]) is not None, _skill_file,
         append_only=True),
)}
_TOP_FILES = {"quipu.toml": "settings", ".gitignore": "settings", "README.md": "readme", PROFILE_PATH: "profile"}
_TOP_FOLDERS = {"memories": "memory", "events": "event"}
_SKILL_FOLDERS = {"drafts": "skill-draft", "refused": "skill-refusal", "events": "skill-event"}
OUTSIDE = ("it is outside the store's schema (memories/, events/, skills/, profile.md, README.md; "
           "see docs/sync.md)")


def kind_of(path: str) -> Kind | None:
    """The kind whose part of the store ``path`` lies in (its shape is not checked yet)."""
    parts = path.split("/")
    if len(parts) == 1:
        name = _TOP_FILES.get(path)
    elif parts[0] == "skills":
        name = _SKILL_FOLDERS.get(parts[1]) if len(parts) > 2 else None
    else:
        name = _TOP_FOLDERS.get(parts[0])
    return KINDS[name] if name else None


def _bad_part(path: str) -> bool:
    parts = path.split("/")
    return any(not _NAME.match(part) for part in (parts if len(parts) > 1 else ()))


def place_problem(path: str) -> str | None:
    """Why no file of the store may be at ``path`` (None: the path fits a kind of the schema)."""
    if path in FOREIGN_SETTINGS:
        return SETTINGS_REASON
    kind = kind_of(path)
    if kind is None or _bad_part(path):
        return OUTSIDE
    return None if kind.fits(path.split("/")) else kind.shape


def refusal(path: str, mode: int, data: bytes, *, replaces: bool = False, remote: bool = True) -> str | None:
    """Why the file at ``path`` (git ``mode``, content ``data``) may not be in a store (None: it may).

    ``replaces``: a file is already at ``path`` and this one would change it. ``remote``: the file
    arrives by ``quipu sync`` (settings never do); ``False`` for a new clone and for a store's own
    tree."""
    if mode != MODE_FILE:
        return f"it is {MODE_NAMES.get(mode, f'of mode {mode:o}')}; a store holds only regular, non-executable files"
    place = place_problem(path)
    if place:
        return place
    kind = kind_of(path)
    assert kind is not None
    if remote and not kind.from_remote:
        return SETTINGS_REASON
    if replaces and kind.append_only:
        return f"{kind.shape.split(' live at ')[0]} are never changed once written"
    return kind.content(path.split("/"), data)


def tree_problems(repo: pygit2.Repository, *, skip: tuple[str, ...] = ("memory",)) -> list[str]:
    """Every file of HEAD's tree that the schema refuses, as 'path: reason'. Files of the ``skip``
    kinds are checked for their place and mode only (``quipu doctor`` reports memory files that do
    not parse from the index)."""
    import pygit2

    try:
        tree = repo.head.peel(pygit2.Tree)
    except (pygit2.GitError, KeyError, ValueError):
        return []
    index = pygit2.Index()
    index.read_tree(tree)
    out = []
    for entry in index:
        kind = kind_of(entry.path)
        if entry.mode != MODE_FILE or kind is None or kind.name in skip:
            reason = refusal(entry.path, entry.mode, b"", remote=False) if entry.mode != MODE_FILE else place_problem(entry.path)
        else:
            reason = refusal(entry.path, entry.mode, repo[entry.id].data, remote=False)  # type: ignore[attr-defined]
        if reason:
            out.append(f"{entry.path}: {reason}")
    return out
