"""Undo: revert one commit, a memory's latest decision still in force, or every commit of a sweep.

Contract: exactly one of ``commit``, ``memory`` and ``sweep``. What a commit did and whether it
is still in force are read from its trees (``quipu.store.effects``, ``quipu.store.decisions``),
never from trailers alone: a forged ``Quipu-Reverts`` cannot make a decision look undone.

- No undo deletes a memory. ``undo COMMIT`` of a commit that only created memories (an import,
  an add) retracts them instead, in one commit that keeps their files and that one undo takes back;
  ``undo --memory`` never undoes a creation and points at ``quipu retract``; ``undo --sweep``
  retracts the memories the sweep created (kept in history, out of recall and search, undoable).
  A commit that created memories and did more (a profile line moved into a memory) is reverted
  except those memories, which stay and are retracted in the same commit.
- ``--memory X`` undoes X's latest decision still in force (a supersession, a label, a review,
  an edit of its text, a sweep's verdict...), never its creation, and says what is left.
- A commit whose effect is no longer in force is "already undone"; the store's first commit is
  refused, and so is a skill's promotion or demotion (the file it wrote or removed is outside the
  store: ``quipu skills demote`` or ``promote`` takes it back).
- Each revert is made by ``quipu.store.gitstore.revert_commits`` and carries ``Quipu-Action:
  undo`` and ``Quipu-Reverts`` (and ``Quipu-Undo-Sweep`` for a sweep), so it is the exact inverse
  of the commit it names (or that inverse keeping and retracting the memories it created).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pygit2

from quipu.errors import ConflictError, InvalidMemory, NotFound
from quipu.store import decisions, effects, gitstore
from quipu.store.decisions import Decision
from quipu.store.memory import ID_RE, check_id
from quipu.store.standing import RETRACTED, retracted
from quipu.store.trailers import LogEntry, event_dir, format_message, trailer_stamp

if TYPE_CHECKING:
    from quipu.store.store import Store

# Commits that record a change made outside the store (a promoted SKILL.md), and the command
# that takes that change back: reverting the commit alone would leave the file in place.
OUTSIDE_THE_STORE = {"skill-promote": "demote", "skill-demote": "promote"}


@dataclass
class Undone:
    commits: list[str] = field(default_factory=list)  # the commits made
    undid: list[str] = field(default_factory=list)  # what each undid, in words (with the commit)
    retracted: list[str] = field(default_factory=list)  # memories kept and retracted, not deleted
    left: list[Decision] = field(default_factory=list)  # --memory: what is left to undo, newest first
    creation_left: bool = False  # --memory: its creation is left (never undone)

    def to_json(self) -> dict[str, Any]:
        return {"reverts": self.commits, "undid": self.undid, "retracted": self.retracted,
                "left": [d.to_json() for d in self.left], "creation_left": self.creation_left}


def retract_event(memory_id: str, detail: str) -> tuple[str, bytes]:
    """The event file that retracts a memory (a ``retracted`` label), as (path, bytes)."""
    at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    event = {"action": "label", "label": RETRACTED, "set": True, "detail": detail, "memory": memory_id, "at": at}
    name = f"{event_dir(memory_id)}/{trailer_stamp()}-{os.urandom(3).hex()}.json"
    return name, (json.dumps(event, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def retract_hint(memory_id: str) -> str:
    return (f"- to take it out of recall and search, run `quipu retract {memory_id}` (kept in history; "
            f"`quipu undo --memory {memory_id}` brings it back)")


def undo(store: Store, *, commit: str | None = None, memory: str | None = None, sweep: str | None = None) -> Undone:
    """Revert one commit, a memory's latest decision, or every commit of a sweep (newest first)."""
    # An empty value names nothing: it must never read as "the commits of no sweep".
    if sum(bool(x) for x in (commit, memory, sweep)) != 1 or "" in (commit, memory, sweep):
        raise InvalidMemory("undo needs exactly one of a commit, --memory ID or --sweep ID")
    repo = store.repo
    tip = repo.head.peel(pygit2.Commit)
    history = store.log()
    by_sha = {e.commit: e for e in history}
    targets: list[Decision]
    if commit:
        try:
            full = str(repo.revparse_single(commit).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError):
            from quipu.store.layers import elsewhere

            raise NotFound(f"no commit {commit!r} in the store\n" + elsewhere(
                store, f"commit {commit} is", lambda other: _resolves(other, commit),
                "- run `quipu log` to see commits")) from None
        if full not in by_sha:
            raise NotFound(f"commit {commit} is not on the store's branch")
        target: pygit2.Commit = repo[full]  # type: ignore[assignment]
        if not target.parent_ids:  # by what it is, not by what its trailers say
            raise ConflictError("the store's first commit cannot be undone")
        _check(by_sha[full], None)
        found = decisions.decision(repo, target, tip.tree)
        if found is None:
            raise ConflictError(f"commit {full[:12]} is a merge; quipu undoes the commits it brought in, one by one"
                                "\n- run `quipu log` to see them" if len(target.parents) > 1 else
                                f"commit {full[:12]} changed no file, so there is nothing to undo")
        # A commit that only created memories (an import, an add) is undone by retracting them, in
        # one commit that keeps every file; one undo of that brings them all back. One whose other
        # effects never reached this store (a sync refused them) and no undo took back has only its
        # creation left, and so has one whose memories are all retracted: nothing to undo.
        left = found.created and found.state == "undone" and not _undone_by(store, history, full).startswith("by commit")
        if left or (found.is_creation and all(retracted(store, m) for m in found.created)):
            created = found.created
            names = ", ".join(created[:5]) + (f" and {len(created) - 5} more" if len(created) > 5 else "")
            what = f"{len(created)} memories ({names}); undo never deletes a memory, so they stay" if len(created) > 1 \
                else f"{names}; undo never deletes a memory, so it stays"
            raise ConflictError(f"commit {full[:12]} created {what}" + ("" if left else ", retracted") + "\n"
                                + retract_hint(found.created[0] if len(found.created) == 1 else "ID"))
        targets = [found]
    elif memory:
        check_id(memory)
        mine = decisions.about(store, memory, follow_trailer=not store.exists(memory))
        if not mine and not store.exists(memory):
            raise store.missing(memory)  # names the per-user store when that one holds it
        if not mine:
            raise NotFound(f"memory {memory!r} has no decision to undo\n- run `quipu log --memory {memory}`")
        if not store.exists(memory) and any(memory in d.created for d in mine):
            raise NotFound(f"memory {memory} is not in the store now (an older quipu's undo removed it)\n"
                           f"- run `quipu log --memory {memory}`: `quipu undo COMMIT` of the commit that removed it "
                           "brings it back")
        open_ = [d for d in mine if d.state != "undone" and not d.is_creation]
        if not open_:
            raise ConflictError(
                f"memory {memory} has no decision left to undo: only its creation is left, and undo never "
                f"deletes a memory, so {memory} stays\n" + retract_hint(memory)
                + f"\n- run `quipu log --memory {memory}` to see its history")
        targets = open_[:1]
    else:
        targets = []
        for entry in history:
            if entry.trailers.get("Quipu-Sweep") != sweep or entry.action == "undo":
                continue
            found = decisions.decision(repo, repo[entry.commit], tip.tree)  # type: ignore[arg-type]
            if found is not None and (found.state != "undone" or found.is_creation):
                targets.append(found)
        targets = [t for t in targets if not (t.is_creation and all(retracted(store, m) for m in t.created))]
        if not targets:
            raise NotFound(f"sweep {sweep!r} has no commits left to undo\n- run `quipu log --sweep {sweep}`")
    for chosen in targets:
        _check(by_sha.get(chosen.commit), chosen, lambda sha: _undone_by(store, history, sha))
    done = _revert(store, targets, by_sha, sweep, keep_created=bool(commit))
    if memory:
        after = decisions.about(store, memory, follow_trailer=not store.exists(memory))
        done.left = [d for d in after if d.state != "undone" and not d.is_creation]
        done.creation_left = any(d.is_creation or memory in d.created for d in after)
    return done




def _undone_by(store: Store, history: list[LogEntry], sha: str) -> str:
    """How ``sha`` was undone, for a message: the verified undo that names it, if one does."""
    for entry in history:
        commit: pygit2.Commit = store.repo[entry.commit]  # type: ignore[assignment]
        if effects.named_revert(commit.message) == sha and effects.verified_revert(store.repo, commit) == sha:
            return f"by commit {entry.commit[:12]}"
    return "what it did is no longer in the store"


def _check(entry: LogEntry | None, target: Decision | None, undone_by: Callable[[str], str] | None = None) -> None:
    if target is not None and target.state == "undone" and not target.is_creation:
        how = undone_by(target.commit) if undone_by else "what it did is no longer in the store"
        raise ConflictError(f"commit {target.commit[:12]} was already undone ({how})\n"
                            "- run `quipu log` to see the history; `quipu undo` of the undo takes it back")
    if entry is not None and entry.action in OUTSIDE_THE_STORE:
        # The name comes from a commit, which a shared store lets anyone write: it is shown in
        # a command to run only when it is a plain name.
        name = entry.trailers.get("Quipu-Skill", "")
        fix = (f"run `quipu skills {OUTSIDE_THE_STORE[entry.action]} {name}` instead" if ID_RE.match(name)
               else f"run `quipu skills list`, then `quipu skills {OUTSIDE_THE_STORE[entry.action]} NAME`")
        raise ConflictError(f"commit {entry.commit[:12]} {entry.action.split('-')[1]}d a skill file outside "
                            f"the store, which a revert cannot take back\n- {fix}")


def _revert(store: Store, targets: list[Decision], by_sha: dict[str, LogEntry], sweep: str | None,
            keep_created: bool = False) -> Undone:
    """Revert ``targets``; a commit that only created memories is reverted keeping them, retracted,
    when ``keep_created`` (one named commit), else each of its memories is retracted (a sweep)."""
    done = Undone()
    reverts = [t for t in targets if keep_created or not t.is_creation]
    messages: dict[str, str] = {}
    keep: dict[str, tuple[list[str], dict[str, bytes]]] = {}
    for t in reverts:
        entry = by_sha.get(t.commit)
        summary = entry.summary.removeprefix("quipu: ") if entry else t.commit[:12]
        retracts = [m for m in t.created if not retracted(store, m)]
        if t.created:
            keep[t.commit] = ([f"memories/{m[:2]}/{m}.md" for m in t.created],
                              dict(retract_event(m, f"undo of {t.commit[:12]} keeps the memory it created")
                                   for m in retracts))
        messages[t.commit] = format_message(
            f"quipu: undo {summary}",
            {"Quipu-Action": "undo", "Quipu-Memory": (entry.memory if entry else "") or "store",
             "Quipu-Reverts": t.commit, "Quipu-Retracts": ",".join(retracts) or None, "Quipu-Undo-Sweep": sweep},
            body=f"This reverts commit {t.commit}.",
        )
    if reverts:
        done.commits += gitstore.revert_commits(store.root, [t.commit for t in reverts], messages, keep)
        for t in reverts:
            created = t.created
            said = t.words if not t.is_creation or len(created) < 3 else (
                f"the creation of {len(created)} memories ({', '.join(created[:3])}"
                + (f" and {len(created) - 3} more" if len(created) > 3 else "") + ")")
            done.undid.append(f"{said} (commit {t.commit[:12]})")
            done.retracted += [m for m in t.created]
    for t in targets:
        if keep_created or not t.is_creation:
            continue
        for memory_id in t.created:
            if retracted(store, memory_id):
                continue
            done.commits.append(store.retract(memory_id, reason=f"undo of sweep {sweep}", undo_sweep=sweep))
            done.retracted.append(memory_id)
            done.undid.append(f"the creation of {memory_id}, retracted instead (commit {t.commit[:12]})")
    return done


def _resolves(store: Store, commit: str) -> bool:
    """Whether ``commit`` names a commit of ``store``."""
    try:
        store.repo.revparse_single(commit).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return False
    return True
