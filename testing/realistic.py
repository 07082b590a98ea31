"""Realistic stores and prompts for silence and precision tests and benchmarks.

Reads ``../shared/data/`` beside the repository at run time (``QUIPU_SHARED_DATA`` points
elsewhere); nothing from there is copied into the repository:
- ``memories-real/notes.jsonl``: notes developers committed for their coding agents (CLAUDE.md,
  AGENTS.md, rule files) from 45 public repositories, MIT or Apache-2.0;
- ``prompts-dev/*.jsonl``: real developer prompts from public coding-agent chat logs, each with
  the assistant text before it.

``realistic_memories`` turns the notes into memories (optionally leaving out the notes of some
repository owners, so that a prompt meets a store holding nothing of its own project);
``realistic_store`` writes them, plus the example store, into one store in a single commit.
Callers skip with ``MISSING_DATA`` when ``data_dir()`` is None.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from quipu.index import index
from quipu.store.memory import Memory
from quipu.store.store import Store
from testing.fixtures import REPO_ROOT, bulk_store, example_memories

MISSING_DATA = (
    "realistic data is absent: put the shared data folder beside the repository (../shared/data with "
    "memories-real/ and prompts-dev/) or set QUIPU_SHARED_DATA"
)
# kind_guess of the source data -> quipu class
_CLASSES = {"rule": "rule", "fact": "fact", "reference": "reference", "preference": "preference",
            "project-note": "project-note", "event": "event"}
# Notes are dated the day the store is built: decay treats them all alike.
CREATED = "2026-11-01T00:00:00Z"


def repo_of(source: str) -> str:
    """``owner/repo`` of a data record's ``owner/repo@commit:path`` source."""
    return source.split("@", 1)[0]


class Note(NamedTuple):
    title: str
    body: str
    source: str  # owner/repo@commit:path
    kind: str

    @property
    def repo(self) -> str:
        return repo_of(self.source)

    @property
    def owner(self) -> str:
        return repo_of(self.source).split("/", 1)[0]


class Prompt(NamedTuple):
    text: str
    source: str
    previous: str  # the assistant text before the prompt ("" when unknown)
    kind: str      # subtype (conversational sets) or "topical"
    lang: str
    kinds: tuple[str, ...] = ()  # topical: filepath, code, error, prose, url

    @property
    def repo(self) -> str:
        return repo_of(self.source)

    @property
    def owner(self) -> str:
        return repo_of(self.source).split("/", 1)[0]


def data_dir() -> Path | None:
    """The shared data folder, or None when it is not there."""
    configured = os.environ.get("QUIPU_SHARED_DATA")
    path = Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"
    if (path / "memories-real" / "notes.jsonl").is_file() and (path / "prompts-dev").is_dir():
        return path
    return None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def real_notes(data: Path) -> list[Note]:
    return [Note(r["title"], r["body"], r["source"], r.get("kind_guess", "fact"))
            for r in _jsonl(data / "memories-real" / "notes.jsonl")]


def real_prompts(data: Path, name: str) -> list[Prompt]:
    """``name``: conversational, conversational_borderline or topical."""
    out = []
    for r in _jsonl(data / "prompts-dev" / f"{name}.jsonl"):
        kind = r.get("subtype") or "topical"
        out.append(Prompt(r["prompt"], r["source"], r.get("prev_assistant") or "", kind, r.get("lang") or "en",
                          tuple(r.get("kinds") or ())))
    return out


def note_id(note: Note) -> str:
    digest = hashlib.sha1(f"{note.source}\n{note.title}\n{note.body}".encode()).hexdigest()
    return f"real-{digest[:12]}"


PROJECTS = "/home/dev/src"  # where the repositories of the notes and prompts are checked out


def project_dir(repo: str) -> str:
    """The folder the repository ``repo`` (owner/name) is checked out in: a note's ``project``,
    and the folder a prompt of that repository is typed in."""
    return f"{PROJECTS}/{repo}"


def realistic_memories(notes: Iterable[Note], exclude_owners: Iterable[str] = ()) -> list[Memory]:
    """One memory per note, leaving out the notes of ``exclude_owners``; duplicates dropped. Each
    is a note of its repository's project (``project_dir``), as the repository's instruction file
    that holds it is."""
    skip = set(exclude_owners)
    out: dict[str, Memory] = {}
    for note in notes:
        if note.owner in skip:
            continue
        mid = note_id(note)
        fields = {"id": mid, "title": note.title[:200], "class": _CLASSES.get(note.kind, "fact"),
                  "origin": "import", "created": CREATED, "project": project_dir(note.repo)}
        out.setdefault(mid, Memory.create(fields, note.body.strip() + "\n"))
    return list(out.values())


def realistic_store(path: Path, notes: Iterable[Note], exclude_owners: Iterable[str] = (),
                    extra: Iterable[Memory] = ()) -> Store:
    """A store of the real notes (less ``exclude_owners``), the example store's memories and
    ``extra``, in one commit, indexed."""
    memories = [*realistic_memories(notes, exclude_owners), *example_memories(), *extra]
    store, _count = bulk_store(path, memories, checkout=False, message="quipu: realistic store")
    index.ensure_fresh(store)
    return store
