"""Undo: revert one commit, a memory's last action not yet undone, or every commit of a sweep.

Contract: exactly one of ``commit``, ``memory`` and ``sweep``. The reverts are made newest first
by ``quipu.store.gitstore.revert_commits``; each carries ``Quipu-Action: undo`` and
``Quipu-Reverts`` (and ``Quipu-Undo-Sweep`` for a sweep). A commit already undone and the
store's first commit are refused, and so is a skill's promotion or demotion (the file it wrote
or removed is outside the store: ``quipu skills demote`` or ``promote`` takes it back).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pygit2

from quipu.errors import ConflictError, InvalidMemory, NotFound
from quipu.store import gitstore
from quipu.store.memory import ID_RE, check_id
from quipu.store.trailers import LogEntry, format_message

if TYPE_CHECKING:
    from quipu.store.store import Store

# Commits that record a change made outside the store (a promoted SKILL.md), and the command
# that takes that change back: reverting the commit alone would leave the file in place.
OUTSIDE_THE_STORE = {"skill-promote": "demote", "skill-demote": "promote"}


def undo(store: Store, *, commit: str | None = None, memory: str | None = None, sweep: str | None = None) -> list[str]:
    """Revert one commit, a memory's last action, or every commit of a sweep (newest first)."""
    history = store.log()
    reverted = {e.trailers.get("Quipu-Reverts") for e in history if e.action == "undo"}
    if sum(x is not None for x in (commit, memory, sweep)) != 1:
        raise InvalidMemory("undo needs exactly one of a commit, --memory ID or --sweep ID")
    targets: list[LogEntry]
    if commit:
        try:
            full = str(store.repo.revparse_single(commit).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError):
            raise NotFound(f"no commit {commit!r} in the store\n- run `quipu log` to see commits") from None
        targets = [e for e in history if e.commit == full]
        if not targets:
            raise NotFound(f"commit {commit} is not on the store's branch")
    elif memory:
        check_id(memory)
        mine = [e for e in history if e.memory == memory and e.action not in ("undo", "init")]
        mine = [e for e in mine if e.commit not in reverted]
        if not mine:
            raise NotFound(f"memory {memory!r} has no action left to undo\n- run `quipu log --memory {memory}`")
        targets = mine[:1]
    else:
        targets = [e for e in history if e.trailers.get("Quipu-Sweep") == sweep and e.action != "undo"]
        targets = [e for e in targets if e.commit not in reverted]
        if not targets:
            raise NotFound(f"sweep {sweep!r} has no commits left to undo\n- run `quipu log --sweep {sweep}`")
    for entry in targets:
        if entry.commit in reverted:
            raise ConflictError(f"commit {entry.commit[:12]} was already undone")
        if entry.action == "init":
            raise ConflictError("the store's first commit cannot be undone")
        if entry.action in OUTSIDE_THE_STORE:
            # The name comes from a commit, which a shared store lets anyone write: it is shown in
            # a command to run only when it is a plain name.
            name = entry.trailers.get("Quipu-Skill", "")
            fix = (f"run `quipu skills {OUTSIDE_THE_STORE[entry.action]} {name}` instead" if ID_RE.match(name)
                   else f"run `quipu skills list`, then `quipu skills {OUTSIDE_THE_STORE[entry.action]} NAME`")
            raise ConflictError(f"commit {entry.commit[:12]} {entry.action.split('-')[1]}d a skill file outside "
                                f"the store, which a revert cannot take back\n- {fix}")
    messages = {
        e.commit: format_message(
            f"quipu: undo {e.summary.removeprefix('quipu: ')}",
            {
                "Quipu-Action": "undo",
                "Quipu-Memory": e.memory or "store",
                "Quipu-Reverts": e.commit,
                "Quipu-Undo-Sweep": sweep,
            },
            body=f'This reverts commit {e.commit}.',
        )
        for e in targets
    }
    return gitstore.revert_commits(store.root, [e.commit for e in targets], messages)

