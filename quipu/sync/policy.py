"""What a sync accepts from a remote, and how two sides' changes to one path meet.

Contract (docs/sync.md states the same policy for people):
- ``refusal(path, mode, data, replaces)`` says why a file arriving from a remote may not enter
  the store, or None: the store's schema (``quipu.store.schema``, the one description of every
  path quipu writes) decides, for a file that arrives by sync. Refused: symlinks, submodules,
  executables, paths outside the schema, files that fail their kind's check (a memory that does
  not parse, an event that is not one JSON object about its id, a profile over its size...),
  changes to files that are never changed once written, and ``quipu.toml`` or ``.gitignore`` (a
  store's settings never arrive from a remote).
- ``merge_profile(base, ours, theirs)``: ``profile.md`` changed on both sides meets line by line,
  and no line either side added is lost (see the function).
- ``removal_refusal(path, remover)``: whether a removal arriving from a remote is applied, from
  what the commit that removed the file did (``Remover``), never from its message. An event file
  leaves only through a verified undo: a commit that is the exact inverse of the commit its
  ``Quipu-Reverts`` or its ``git revert`` line names (``quipu.store.effects.verified_revert``),
  which this store already
  has (the decision it had is the one taken back, not a copy the remote made of it). A
  memory file never leaves: a removal reaches the merge only for a file the common history held,
  so this store had it before any add the remote undid (a verified undo of a remote add this
  store never saw nets out on the remote's side and never reaches the merge: it syncs as it is).
  Each refusal names the commit and why, and the local file stays.
- ``merge_aliases(base, ours, theirs)``: the same memory file changed on both sides where at
  least one side only changed its ``aliases`` (the sweep's enrichment on one clone, an edit or
  another enrichment on the other) meets as one memory: the other side's version with the
  aliases merged three ways (what either side added, less what either removed: an undone
  enrichment stays undone; this store's first, the same words once). Anything else: None.
- ``keep_both(...)``: the same memory file changed on both sides, and not by aliases alone. Neither text is lost: the newer
  version (by the time of the last commit that changed the file on each side) stays at the id,
  the older one is kept as a memory of its own, ``<id>-<8 hex of its blob>`` (the same name on
  every clone that meets the same pair), and the caller then supersedes it by the id with an
  ordinary supersession commit, which one ``quipu undo`` reverts.
- Nothing here touches the repository's refs, worktree or index; it only reads objects and
  writes blobs.
"""
from __future__ import annotations

from typing import NamedTuple

import pygit2

from quipu.errors import InvalidMemory
from quipu.store import schema
from quipu.store.memory import parse_memory, render_memory

MODE_FILE = schema.MODE_FILE
COPY_HEX = 8


def shown(text: str) -> str:
    """``text`` as it may be printed or written into a commit message: what does not print (a
    control, a byte of a name that is not UTF-8) is written as its code point."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


class Refusal(NamedTuple):
    path: str  # as the tree has it; ``line()`` and ``to_json()`` show it printable
    reason: str
    commit: str = ""  # the remote commit that made the refused change, where one did

    def line(self) -> str:
        return f"{shown(self.path)}: {shown(self.reason)}"

    def to_json(self) -> dict[str, str]:
        return {"path": shown(self.path), "reason": shown(self.reason), "commit": self.commit}


class KeptBoth(NamedTuple):
    memory: str  # the id that keeps the newer text
    copy: str  # the id that keeps the older text
    newer: str  # "local" or "remote"

    def to_json(self) -> dict[str, str]:
        return {"memory": self.memory, "copy": self.copy, "newer": self.newer}


def refusal(path: str, mode: int, data: bytes, *, replaces: bool) -> str | None:
    """Why this incoming file may not enter the store (None: it may). ``replaces``: the store
    already has a file at ``path`` that this one would change."""
    return schema.refusal(path, mode, data, replaces=replaces, remote=True)


def _line_key(line: str) -> str:
    """What makes two lines of profile.md the same line: a card line is its entry (the comment
    after it, who said it and since when, may differ); any other line is its text."""
    text = line.strip()
    if text.startswith("- "):
        text = text.split(" <!--", 1)[0]
    return " ".join(text.casefold().split())


def _keyed(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            out.setdefault(_line_key(line), line)
    return out


def merge_profile(base: bytes | None, ours: bytes, theirs: bytes) -> bytes:
    """Both sides changed ``profile.md``: a line-wise three-way merge that loses no line either
    side added. A line stays removed when one side removed it and the other left it as it was
    (a demotion, which moved it into a memory, or a person's edit); a line one side changed and
    the other removed stays in its changed form; a line both sides have in different forms keeps
    the changed one (ours when both changed it). The remote's new lines go after our last card
    line. The card may end up over its caps: the always-on layer then shows its strongest lines,
    and ``quipu doctor`` says to run ``quipu profile fit``."""
    b = _keyed(base.decode("utf-8", "replace")) if base is not None else {}
    t = _keyed(theirs.decode("utf-8", "replace"))
    out: list[str] = []
    seen: set[str] = set()
    for line in ours.decode("utf-8", "replace").splitlines():
        if not line.strip():
            out.append(line)
            continue
        key = _line_key(line)
        if key in seen:
            continue
        seen.add(key)
        unchanged_here = b.get(key) == line
        if key in b and key not in t and unchanged_here:
            continue  # the remote removed it, and it was not changed here
        out.append(t[key] if key in t and unchanged_here else line)
    new = [line for key, line in t.items() if key not in seen and b.get(key) != line]
    last_card = max((i for i, line in enumerate(out) if line.strip().startswith("- ")), default=None)
    at = last_card + 1 if last_card is not None else len(out)
    while last_card is None and at > 0 and not out[at - 1].strip():
        at -= 1
    out[at:at] = new
    return ("\n".join(out).rstrip("\n") + "\n").encode("utf-8")


class Remover(NamedTuple):
    """The remote commit that removed a file, as far as its effects tell."""

    commit: str
    summary: str  # its first line, made printable (it is someone else's text)
    claims_undo: bool  # its message says Quipu-Action: undo
    merge: bool  # a merge commit dropped the file
    reverts: str | None  # the commit it verifiably undoes (exact inverse), or None
    seen: bool  # that commit is in this store's own history already


def removal_refusal(path: str, remover: Remover | None) -> str | None:
    """Why a removal arriving from a remote is not applied (None: it is); see the module contract."""
    if remover is None:
        return "the remote removed it in no commit this store can check; the local file is kept"
    by = f"removed by commit {remover.commit[:12]} ({remover.summary})"
    memory = path.startswith("memories/")
    if remover.merge:
        return f"{by}, a merge; a file leaves a store only through a verified undo, so the local file is kept"
    if remover.reverts is None:
        claim = ", which says it is an undo but is not the exact inverse of a commit in its history" \
            if remover.claims_undo else ""
        rule = "no command deletes a memory" if memory else \
            "a decision leaves a store only through an undo of the commit that made it (`quipu undo`, `git revert`)"
        return f"{by}{claim}; {rule}, so the local file is kept"
    if memory:
        # A removal reaches the merge only for a file the common history held, so this store had the
        # memory before any add the remote undid: an undo of an add it never saw nets out remotely.
        whose = "which this store already had" if remover.seen else "which added it again after this store had it"
        return (f"{by}, an undo of commit {remover.reverts[:12]} that created it, {whose}; no command deletes a "
                "memory here, so it is kept (`quipu retract` takes one out of recall)")
    if not remover.seen:
        return (f"{by}, an undo of commit {remover.reverts[:12]}, which this store never had, while the file "
                "was here before it; a decision leaves a store only through the undo of the commit that made "
                "it, so the local file is kept")
    return None


def copy_id(memory_id: str, blob: pygit2.Oid) -> str:
    """The id that keeps an older version of ``memory_id`` (same shard, at most 64 characters)."""
    return f"{memory_id[:64 - COPY_HEX - 1]}-{str(blob)[:COPY_HEX]}"


def _alias_key(alias: str) -> str:
    return " ".join(alias.casefold().split())


def merge_aliases(base: bytes | None, ours: bytes, theirs: bytes, path: str) -> bytes | None:
    """One memory from two versions of it where one side changed only its aliases (see the
    contract), or None: then ``keep_both`` decides."""
    if base is None:
        return None
    try:
        old, mine, other = (parse_memory(data, path) for data in (base, ours, theirs))
    except InvalidMemory:
        return None
    if mine.with_changes(aliases=old.aliases) == old:
        kept = other
    elif other.with_changes(aliases=old.aliases) == old:
        kept = mine
    else:
        return None
    # A three-way merge of the list: what either side removed (an undone enrichment) stays
    # removed, what either side added is kept, this store's first, the same words once.
    had = {_alias_key(a) for a in old.aliases}
    removed = (had - {_alias_key(a) for a in mine.aliases}) | (had - {_alias_key(a) for a in other.aliases})
    aliases: dict[str, str] = {}
    for alias in (*mine.aliases, *other.aliases):
        if _alias_key(alias) not in removed:
            aliases.setdefault(_alias_key(alias), alias)
    return render_memory(kept.with_changes(aliases=tuple(aliases.values())))


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
