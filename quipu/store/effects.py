"""What a commit does to the store's files, read from its trees and never from its message.

Contract:
- ``changes(repo, commit)`` is a one-parent commit's effect: for each path it changed, the entry
  (blob id, mode) before and after (None: absent). Rename detection is off, so a move is a
  removal and an addition. A merge or root commit has no single effect here (None).
- ``is_inverse(a, b)``: ``a`` undoes exactly what ``b`` did (same paths, each entry swapped) and
  is not empty; ``undoes_keeping(a, b)``: the same, except that the memories ``b`` created stay
  and are retracted (new event files of theirs). ``verified_revert(repo, commit)``: the commit
  its ``Quipu-Reverts`` trailer names (``quipu undo``), or else the "This reverts commit ..."
  line of a plain ``git revert``, when that commit is an ancestor of ``commit`` (in this store's
  history) and ``commit`` undoes it in one of those two ways; else None. A trailer or a line
  alone never makes a commit an undo.
- ``effect_of(repo, sha)``: ``changes`` of a commit named by its id; ``change_at(repo, sha,
  path)``: what it did to one path alone.
- ``state(tree, effect)``: whether a commit's effect is what ``tree`` holds now ("in force"),
  what it replaced ("undone"), or neither ("changed since"). Whether a commit is already undone
  is decided by this, never by trailers.
- ``created_memories(effect)``: the memory ids whose files the commit added: undoing it would
  delete them, which no command does.
- ``log(repo, ...)``: the branch's commits as audit-log entries, filtered by their trailers;
  ``commit_adding(repo, path)``: the commit of HEAD's history that added a file.
- ``taken_back(repo, tree, entries, wanted)``: the JSON records (event files, skill drafts and
  refusals) that the commits ``entries`` added and ``tree`` no longer holds: a person reverted
  them, since nothing else removes a record. The entries' trailers only say which commits to read.
- Only reads objects; writes nothing.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pygit2

from quipu.errors import ConflictError
from quipu.store.memory import ID_RE
from quipu.store.trailers import LogEntry, parse_trailers

Entry = tuple[str, int]  # (blob id, mode)
Effect = dict[str, "tuple[Entry | None, Entry | None]"]


def changes(repo: pygit2.Repository, commit: pygit2.Commit) -> Effect | None:
    """The effect of a one-parent commit (see the module contract); None for a merge or root."""
    if len(commit.parent_ids) != 1:
        return None
    parent: pygit2.Commit = repo[commit.parent_ids[0]]  # type: ignore[assignment]
    out: Effect = {}
    for delta in repo.diff(parent.tree, commit.tree).deltas:  # type: ignore[call-overload]
        old = None if delta.status_char() == "A" else (str(delta.old_file.id), int(delta.old_file.mode))
        new = None if delta.status_char() == "D" else (str(delta.new_file.id), int(delta.new_file.mode))
        out[delta.new_file.path if new else delta.old_file.path] = (old, new)
    return out


def is_inverse(a: Mapping[str, tuple[Entry | None, Entry | None]],
               b: Mapping[str, tuple[Entry | None, Entry | None]]) -> bool:
    """``a`` is exactly the reverse of ``b`` (and not empty)."""
    return bool(b) and a.keys() == b.keys() and all(a[p] == (b[p][1], b[p][0]) for p in b)


def undoes_keeping(a: Mapping[str, tuple[Entry | None, Entry | None]],
                   b: Mapping[str, tuple[Entry | None, Entry | None]]) -> bool:
    """``a`` is the reverse of ``b`` except that the memories ``b`` created stay, each with new
    event files of its own (their retraction): how ``quipu undo`` takes back a commit that created
    memories (and maybe more), since no command deletes one. Something must be taken back."""
    created = created_memories(b)
    kept = {f"memories/{m[:2]}/{m}.md" for m in created}
    rest = {p: v for p, v in b.items() if p not in kept}
    dirs = tuple(f"events/{m[:2]}/{m}/" for m in created)
    extra = {p: v for p, v in a.items() if p not in rest}
    return (bool(created) and bool(rest or extra) and all(p in a and a[p] == (v[1], v[0]) for p, v in rest.items())
            and all(p.startswith(dirs) and old is None and new is not None for p, (old, new) in extra.items()))


# What `git revert` writes in the body of the commit it makes.
_GIT_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{40})\b", re.M)


def named_revert(message: str) -> str:
    """The commit a message says it reverts: its ``Quipu-Reverts`` trailer (``quipu undo``), else
    the line ``git revert`` writes; '' when it names none. A name only says which commit to
    compare with: ``verified_revert`` decides."""
    named = parse_trailers(message).get("Quipu-Reverts", "")
    if not named:
        found = _GIT_REVERTS.findall(message)
        named = found[-1] if found else ""
    return named if len(named) == 40 and all(c in "0123456789abcdef" for c in named) else ""


def verified_revert(repo: pygit2.Repository, commit: pygit2.Commit, *, strict: bool = False) -> str | None:
    """The commit that ``commit`` names (``named_revert``: ``quipu undo``'s trailer or ``git
    revert``'s line), when that commit is in this store's history before it and ``commit`` undoes
    exactly what it did (``strict``: the exact inverse; else also ``undoes_keeping``); otherwise
    None, whatever the message says."""
    named = named_revert(commit.message)
    if not named:
        return None
    try:
        target = repo[named]
        if not isinstance(target, pygit2.Commit) or not repo.descendant_of(commit.id, target.id):
            return None
    except (KeyError, ValueError, pygit2.GitError):
        return None
    mine, theirs = changes(repo, commit), changes(repo, target)
    if mine is None or theirs is None:
        return None
    return named if is_inverse(mine, theirs) or (not strict and undoes_keeping(mine, theirs)) else None


def effect_of(repo: pygit2.Repository, sha: str) -> Effect | None:
    """``changes`` of the commit ``sha`` (None for a merge, a root or an object that is no commit)."""
    commit = repo[sha]
    return changes(repo, commit) if isinstance(commit, pygit2.Commit) else None


def change_at(repo: pygit2.Repository, sha: str, path: str) -> tuple[Entry | None, Entry | None] | None:
    """What the one-parent commit ``sha`` did to ``path``: its entry before and after (None:
    absent), read by two lookups rather than a diff of the trees; None for a merge, a root or an
    object that is no commit."""
    commit = repo[sha]
    if not isinstance(commit, pygit2.Commit) or len(commit.parent_ids) != 1:
        return None
    parent: pygit2.Commit = repo[commit.parent_ids[0]]
    return entry_at(parent.tree, path), entry_at(commit.tree, path)


def taken_back(repo: pygit2.Repository, tree: pygit2.Tree, entries: Iterable[LogEntry],
               wanted: Callable[[str], bool]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, record) of each JSON object file the commits ``entries`` added at a path ``wanted``
    accepts and ``tree`` no longer holds (unreadable records are passed over)."""
    for entry in entries:
        for path, (old, new) in (effect_of(repo, entry.commit) or {}).items():
            if old is not None or new is None or not wanted(path) or entry_at(tree, path) is not None:
                continue
            try:
                record = json.loads(repo[new[0]].data)  # type: ignore[attr-defined]
            except (ValueError, RecursionError, UnicodeDecodeError):
                continue
            if isinstance(record, dict):
                yield path, record


def entry_at(tree: pygit2.Tree, path: str) -> Entry | None:
    try:
        item = tree[path]
    except KeyError:
        return None
    return (str(item.id), int(item.filemode))


def state(tree: pygit2.Tree, effect: Mapping[str, tuple[Entry | None, Entry | None]]) -> str:
    """"in force", "undone" or "changed since" (see the module contract)."""
    now = {path: entry_at(tree, path) for path in effect}
    if all(now[p] == new for p, (_old, new) in effect.items()):
        return "in force"
    if all(now[p] == old for p, (old, _new) in effect.items()):
        return "undone"
    return "changed since"


def memory_id_of(path: str) -> str | None:
    """The id of the memory file at ``path`` (``memories/<shard>/<id>.md``), else None."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != "memories" or not parts[2].endswith(".md"):
        return None
    memory_id = parts[2][:-3]
    return memory_id if ID_RE.match(memory_id) and parts[1] == memory_id[:2] else None


def created_memories(effect: Mapping[str, tuple[Entry | None, Entry | None]]) -> list[str]:
    """The ids of the memory files the commit added (undoing it would delete them)."""
    return sorted(m for p, (old, new) in effect.items()
                  if old is None and new is not None and (m := memory_id_of(p)) is not None)


def about(effect: Mapping[str, tuple[Entry | None, Entry | None]], memory_id: str) -> bool:
    """The commit changed the memory's file or its decisions (its event files)."""
    mine = f"memories/{memory_id[:2]}/{memory_id}.md"
    events = f"events/{memory_id[:2]}/{memory_id}/"
    return any(p == mine or p.startswith(events) for p in effect)


def commit_adding(repo: pygit2.Repository, path: str) -> str:
    """The commit of HEAD's history that added ``path`` (its parents lack it), or ''."""
    for commit in repo.walk(repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL):
        if entry_at(commit.tree, path) and all(entry_at(p.tree, path) is None for p in commit.parents):
            return str(commit.id)
    return ""


def log(repo: pygit2.Repository, *, memory: str | None, sweep: str | None, action: str | None,
        limit: int | None) -> list[LogEntry]:
    """The branch's commits, newest first, as audit-log entries, filtered by their trailers."""
    from quipu.store import gitstore

    out: list[LogEntry] = []
    try:
        tip = gitstore.branch_ref(repo).target
    except ConflictError:
        tip = repo.head.target
    for commit in repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME):
        trailers = parse_trailers(commit.message)
        if memory and trailers.get("Quipu-Memory") != memory and trailers.get("Quipu-Superseded-By") != memory:
            continue
        if sweep and trailers.get("Quipu-Sweep") != sweep:
            continue
        if action and trailers.get("Quipu-Action") != action:
            continue
        when = _dt.datetime.fromtimestamp(commit.commit_time, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append(LogEntry(str(commit.id), when, commit.message.split("\n", 1)[0], trailers))
        if limit and len(out) >= limit:
            break
    return out
