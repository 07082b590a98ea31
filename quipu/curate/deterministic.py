"""The deterministic curator pass: no model, only facts a machine can check.

Contract:
- ``find_duplicates``: memories whose files are identical once the provenance fields (id,
  created, session) are set aside, or whose bodies are byte-identical and at least
  ``MIN_DUPLICATE_BODY_CHARS`` long. In each group the oldest memory is the original; every
  other member is one finding naming it.
- ``find_dead_paths``: memories whose body names a file path that does not exist. A relative
  path is judged only under a known root (the memory's ``project`` field when it is an absolute
  folder, else the ``project_root`` given) and only when it stays under that root. An absolute
  path is judged only when it is not on a volatile or network mount and the folder two
  levels down (``/home/alice``) exists, so a note written on another machine is never flagged;
  a ``~/`` path is judged under the current home folder. A path the memory says was removed
  (``probes.extract.said_removed``) is never dead: its absence is the claim. A finding's detail
  names the paths as the memory writes them (one under the home folder from ``~``) and the root as
  "the project", never a local folder.
- A finding is only returned, never applied here: the caller labels it and queues it for review,
  unless a person took the same decision back (``quipu.curate.ledger``). Nothing is ever deleted.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from quipu.curate.corpus import Corpus, Entry
from quipu.store.memory import render_memory
from quipu.probes.extract import said_removed

# A short body ("TBD", "see title") is the same text in many unrelated notes; only a body with
# this much text is a duplicate on its own (identical files are duplicates at any length).
MIN_DUPLICATE_BODY_CHARS = 40
# Top-level folders whose contents come and go, or that may be slow network or removable mounts:
# a missing path there is no evidence, and stat() there may hang.
UNSAFE_TOPS = frozenset(
    "proc sys dev run tmp mnt media net afs Volumes private cygdrive var/tmp".split()
)
MAX_PATHS_PER_MEMORY = 20

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_BACKTICK = re.compile(r"`([^`\n]{1,300})`")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
# A bare token with at least one slash, made of path characters.
_SEG = r"/[\w.@+-]+"
_BARE = re.compile(rf"(?<![\w@:/.~-])((?:~|\.{{1,2}})(?:{_SEG})+/?|(?:{_SEG}){{2,}}/?|[\w.@+-]+(?:{_SEG})+/?)")
_EXTENSION = re.compile(r"\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,8}$")  # ".py", ".mp3"; not ".4" of "v1.2/3.4"
_NOT_A_PATH = set("*?[]{}<>$%|\\'\"=,;()")


@dataclass(frozen=True)
class Finding:
    kind: str  # "duplicate" or "dead-path"
    memory: str
    other: str | None  # the original a duplicate repeats
    detail: str
    paths: tuple[str, ...] = ()


# ------------------------------------------------------------------ duplicates


def _shape(entry: Entry) -> bytes:
    """The file as it would be without its provenance fields."""
    return render_memory(entry.memory.with_changes(id="-", created="", session=None))


def find_duplicates(
    corpus: Corpus,
    *,
    focus: frozenset[str] | None = None,
    is_decided: Callable[[str, str], bool] = lambda a, b: False,
) -> list[Finding]:
    active = corpus.active()  # oldest first, so the first of a group is the original
    parent: dict[str, str] = {e.id: e.id for e in active}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first: dict[tuple[str, str], str] = {}
    how: dict[str, str] = {}
    for entry in active:
        keys = [("file", hashlib.sha256(_shape(entry)).hexdigest())]
        if len(entry.memory.body.strip()) >= MIN_DUPLICATE_BODY_CHARS:
            keys.append(("body", hashlib.sha256(entry.memory.body.encode("utf-8")).hexdigest()))
        for key in keys:
            if key in first:
                a, b = root(first[key]), root(entry.id)
                if a != b:
                    parent[b] = a
                how.setdefault(entry.id, "same file" if key[0] == "file" else "same body")
            else:
                first[key] = entry.id
    groups: dict[str, list[Entry]] = {}
    for entry in active:
        groups.setdefault(root(entry.id), []).append(entry)
    out = []
    for members in groups.values():
        original = members[0]
        for entry in members[1:]:
            if focus is not None and entry.id not in focus and original.id not in focus:
                continue
            if "duplicate" in entry.labels or is_decided(entry.id, original.id):
                continue
            text = "text" if how.get(entry.id) == "same file" else "body"
            out.append(Finding("duplicate", entry.id, original.id, f"same {text} as {original.id}"))
    return out


# ------------------------------------------------------------------ dead paths


def path_tokens(body: str) -> list[str]:
    """Path-like tokens of a memory body, in order, each once (fenced code blocks are skipped)."""
    text = _FENCE.sub(" ", body)
    found: dict[str, None] = {}
    for span in _BACKTICK.findall(text):
        span = span.strip()
        if span and not any(c.isspace() for c in span) and "/" in span and "://" not in span:
            found.setdefault(span)
    text = _URL.sub(" ", _BACKTICK.sub(" ", text))
    for token in _BARE.findall(text):
        token = token.rstrip(".:")
        relative = not token.startswith(("/", "~/"))
        if relative and not token.startswith(("./", "../")) and not _EXTENSION.search(token):
            continue  # "and/or", "CI/CD", "blue/green": a bare relative token needs a file extension
        if token.startswith("/") and len(PurePosixPath(token).parts) < 3:
            continue  # "/compact" is a slash command, not a path
        found.setdefault(token)
    return [t for t in found if not (set(t) & _NOT_A_PATH) and "..." not in t]


def _root_for(entry: Entry, project_root: Path | None) -> Path | None:
    project = entry.memory.project
    if project and os.path.isabs(os.path.expanduser(project)):
        path = Path(os.path.expanduser(project))
        return path if path.is_dir() else None  # a project folder that is gone says nothing
    return project_root if project_root is not None and project_root.is_dir() else None


def _judgeable_absolute(path: Path) -> bool:
    parts = path.parts
    if len(parts) < 3 or ".." in parts:
        return False
    if parts[1] in UNSAFE_TOPS or "/".join(parts[1:3]) in UNSAFE_TOPS:
        return False
    anchor = Path(*parts[: min(3, len(parts) - 1)])
    try:
        return anchor.is_dir()
    except OSError:
        return False


def dead_path(token: str, root: Path | None, home: Path) -> str | None:
    """The resolved path when ``token`` certainly does not exist, else None (exists or cannot tell)."""
    if token.startswith("/"):
        path = Path(os.path.normpath(token))
        if not _judgeable_absolute(path):
            return None
    else:
        base = home if token.startswith("~/") else root
        if base is None or not base.is_dir():
            return None
        path = Path(os.path.normpath(base / token.removeprefix("~/")))
        if base not in path.parents:
            return None  # "../../elsewhere" leaves the known root
    try:
        return None if os.path.lexists(path) else str(path)
    except OSError:
        return None


def find_dead_paths(
    corpus: Corpus,
    *,
    project_root: Path | None = None,
    home: Path | None = None,
    focus: frozenset[str] | None = None,
    flagged_before: Callable[[str], Iterable[frozenset[str]]] = lambda memory_id: (),
) -> list[Finding]:
    home = home if home is not None else Path(os.path.expanduser("~"))
    out = []
    for entry in corpus.active():
        if focus is not None and entry.id not in focus:
            continue
        if "dead-path" in entry.labels:
            continue
        root = _root_for(entry, project_root)
        dead = []
        for token in path_tokens(entry.memory.body)[: MAX_PATHS_PER_MEMORY * 3]:
            if said_removed(entry.memory.body, token):
                continue  # "the old `x` was removed": its absence is what the memory says
            if dead_path(token, root, home) is not None:
                dead.append(token)
            if len(dead) >= MAX_PATHS_PER_MEMORY:
                break
        if not dead or frozenset(dead) in set(flagged_before(entry.id)):
            continue  # nothing missing, or a person already looked at exactly these paths
        # The detail is committed and shared: the root by a name, never the folder it is on this machine.
        where = " (under the project)" if root is not None and any(not d.startswith(("/", "~/")) for d in dead) else ""
        shown = ", ".join(_home_as_tilde(d, home) for d in dead)
        out.append(Finding("dead-path", entry.id, None, f"missing: {shown}{where}", tuple(dead)))
    return out


def _home_as_tilde(token: str, home: Path) -> str:
    """An absolute path under the home folder written from ``~``, as a shared detail shows it."""
    base = os.path.normpath(home)
    if token.startswith("/") and base != os.sep and (token == base or token.startswith(base + "/")):
        return "~" + token[len(base):]
    return token
