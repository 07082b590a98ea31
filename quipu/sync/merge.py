"""Merge a remote's commit into the store's tip under the sync policy (``quipu.sync.policy``).

Contract:
- ``plan(repo, ours, theirs)`` returns the tree of the merge and what it decided; it writes only
  git objects (blobs and trees), never a ref, the worktree or git's index.
- git's three-way merge (libgit2, rename detection off, virtual bases for criss-cross histories)
  proposes a result; every path where that result differs from ``ours`` is then decided here:
  a file from the remote enters only if ``sync_policy.refusal`` accepts it; a removal only if
  ``sync_policy.removal_refusal`` accepts the commit that made it (``removers``: judged by its
  effects, never by its message; a merge that carries a removal from one parent's line is judged
  by the commit on that line that made it, through any number of merges); a memory file changed
  on both sides keeps both versions (``sync_policy.keep_both``), but one side's aliases alone
  meet the other's version (``sync_policy.merge_aliases``); ``profile.md`` changed on both sides
  is merged line by line (``sync_policy.merge_profile``); any other path changed on both sides
  keeps the local version.
  What is refused is listed with the remote commit that made the change, never silently
  dropped, and the rest still merges.
- New memories never collide (ids are random) and event files are append-only with unique
  names, so those merge as plain files without any custom driver.
"""
from __future__ import annotations

from typing import NamedTuple

import pygit2

from quipu.store import effects, schema
from quipu.store.trailers import parse_trailers
from quipu.sync import history, policy as sync_policy
from quipu.sync.policy import KeptBoth, Refusal, Remover

Entry = tuple[pygit2.Oid, int]
_SORT = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME


class MergePlan(NamedTuple):
    tree: pygit2.Oid
    touched: list[str]  # paths whose content differs from ours
    refused: list[Refusal]
    kept_both: list[KeptBoth]
    merged: list[str]  # paths both sides changed whose versions were merged (line by line, or aliases joined)


def entries(tree: pygit2.Tree) -> dict[str, Entry]:
    index = pygit2.Index()
    index.read_tree(tree)
    return {e.path: (e.id, e.mode) for e in index}


def removers(repo: pygit2.Repository, tip: pygit2.Oid, hide: pygit2.Oid, paths: set[str]) -> dict[str, Remover]:
    """For each of ``paths``, the commit from ``tip`` (not from ``hide``) that removed it, judged by
    what it did (``quipu.store.effects``), never by its message. A merge that carries the removal
    from one of its parents is not the remover: the commit on that parent's line that made it is
    (``history.removed_by``); where several lines made it, one whose removal the policy accepts
    is named, else the first."""
    judged: dict[tuple[pygit2.Oid, bool], Remover] = {}

    def judge(commit: pygit2.Commit, strict: bool) -> Remover:
        if (commit.id, strict) not in judged:
            merge = len(commit.parents) != 1
            reverts = None if merge else effects.verified_revert(repo, commit, strict=strict)
            seen = reverts is not None and (str(hide) == reverts or repo.descendant_of(hide, pygit2.Oid(hex=reverts)))
            line = commit.message.split("\n", 1)[0].strip()
            summary = "".join(c if c.isprintable() else " " for c in line)[:80] or "no message"
            claims = parse_trailers(commit.message).get("Quipu-Action") == "undo" or bool(
                effects.named_revert(commit.message))
            judged[commit.id, strict] = Remover(str(commit.id), summary, claims, merge, reverts, seen)
        return judged[commit.id, strict]

    out: dict[str, Remover] = {}
    for path, commits in history.removed_by(repo, tip, hide, paths).items():
        found = [judge(c, path.startswith("memories/")) for c in commits]
        passed = [r for r in found if sync_policy.removal_refusal(path, r) is None]
        if passed or found:
            out[path] = (passed or found)[0]
    return out


def writers(repo: pygit2.Repository, tip: pygit2.Oid, hide: pygit2.Oid, wanted: dict[str, Entry]) -> dict[str, str]:
    """For each path, the newest commit from ``tip`` (not from ``hide``) that wrote the entry given."""
    out: dict[str, str] = {}
    walker = repo.walk(tip, _SORT)
    walker.hide(hide)
    for commit in walker:
        if len(out) == len(wanted):
            break
        for path, (oid, _mode) in wanted.items():
            if path not in out and _entry_at(commit.tree, path) == oid and all(
                    _entry_at(parent.tree, path) != oid for parent in commit.parents):
                out[path] = str(commit.id)
    return out


def changed_at(repo: pygit2.Repository, tip: pygit2.Oid, hide: pygit2.Oid, path: str) -> int:
    """Commit time of the newest commit from ``tip`` (not from ``hide``) that changed ``path``."""
    walker = repo.walk(tip, _SORT)
    walker.hide(hide)
    for commit in walker:
        mine = _entry_at(commit.tree, path)
        if not commit.parents or all(_entry_at(p.tree, path) != mine for p in commit.parents):
            return int(commit.commit_time)
    return 0


def _entry_at(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
    except KeyError:
        return None


def plan(repo: pygit2.Repository, ours: pygit2.Commit, theirs: pygit2.Commit) -> MergePlan:
    index = repo.merge_commits(ours, theirs, flags=pygit2.enums.MergeFlag(0))
    conflicted: set[str] = set()
    if index.conflicts is not None:
        for sides in list(index.conflicts):
            conflicted.update(e.path for e in sides if e is not None)
        for path in conflicted:
            del index.conflicts[path]
    o_map, t_map = entries(ours.tree), entries(theirs.tree)
    m_map = {e.path: (e.id, e.mode) for e in index}
    paths = conflicted | {p for p in o_map.keys() | m_map.keys() if o_map.get(p) != m_map.get(p)}
    removed = {p for p in paths if p not in conflicted and p in o_map and p not in m_map and p not in t_map}
    by = removers(repo, theirs.id, ours.id, removed) if removed else {}
    base_id = repo.merge_base(ours.id, theirs.id)
    bases = repo[base_id].tree if base_id is not None else None
    final: dict[str, Entry | None] = {}
    refused: list[Refusal] = []
    kept: list[KeptBoth] = []
    line_merged: list[str] = []

    def incoming(path: str, entry: Entry | None) -> bool:
        """Take the remote's version of ``path`` if the policy allows it."""
        commit = ""
        if entry is None:
            reason = sync_policy.removal_refusal(path, by.get(path))
            commit = by[path].commit if path in by else ""
        else:
            data = repo[entry[0]].data if entry[1] != 0o160000 else b""  # type: ignore[attr-defined]
            reason = sync_policy.refusal(path, entry[1], data, replaces=path in o_map)
        if reason:
            refused.append(Refusal(path, reason, commit))
            return False
        final[path] = entry
        return True

    for path in sorted(paths):
        mine, merged, remote = o_map.get(path), m_map.get(path), t_map.get(path)
        if path not in conflicted and merged == remote:
            incoming(path, remote)
        elif mine is None or remote is None:
            # Changed on one side, removed on the other: the changed version stays (nothing lost).
            if mine is None and remote is not None:
                incoming(path, remote)
        elif path == schema.PROFILE_PATH and mine[1] == remote[1] == sync_policy.MODE_FILE:
            base = _entry_at(bases, path) if bases is not None else None
            data = sync_policy.merge_profile(repo[base].data if base else None,  # type: ignore[attr-defined]
                                             repo[mine[0]].data, repo[remote[0]].data)  # type: ignore[attr-defined]
            reason = sync_policy.refusal(path, remote[1], data, replaces=True)
            if reason:
                refused.append(Refusal(path, f"the two versions merged line by line are refused: {reason}"))
                continue
            final[path] = (repo.create_blob(data), sync_policy.MODE_FILE)
            line_merged.append(path)
        elif path.startswith("memories/") and mine[1] == remote[1] == sync_policy.MODE_FILE:
            reason = sync_policy.refusal(path, remote[1], repo[remote[0]].data, replaces=True)  # type: ignore[attr-defined]
            base = _entry_at(bases, path) if bases is not None else None
            joined = None if reason else sync_policy.merge_aliases(
                repo[base].data if base else None, repo[mine[0]].data, repo[remote[0]].data, path)  # type: ignore[attr-defined]
            if joined is not None and not sync_policy.refusal(path, sync_policy.MODE_FILE, joined, replaces=True):
                final[path] = (repo.create_blob(joined), sync_policy.MODE_FILE)
                line_merged.append(path)
                continue
            ours_newer = changed_at(repo, ours.id, theirs.id, path) >= changed_at(repo, theirs.id, ours.id, path)
            done = reason or sync_policy.keep_both(repo, path, mine[0], remote[0], ours_newer=ours_newer)
            if isinstance(done, str):
                refused.append(Refusal(path, done))
                continue
            newer, copy_path, copy_blob, record = done
            final[path] = (newer, sync_policy.MODE_FILE)
            final[copy_path] = (copy_blob, sync_policy.MODE_FILE)
            kept.append(record)
        else:
            refused.append(Refusal(path, "changed on both sides; the local version is kept"))

    touched: list[str] = []
    for path in sorted(paths | final.keys()):
        want = final[path] if path in final else o_map.get(path)
        if want is None:
            if path in m_map or path in conflicted:
                index.remove(path)
        else:
            index.add(pygit2.IndexEntry(path, want[0], pygit2.enums.FileMode(want[1])))
        if want != o_map.get(path):
            touched.append(path)
    unnamed = {r.path: t_map[r.path] for r in refused if not r.commit and r.path in t_map}
    if unnamed:
        named = writers(repo, theirs.id, ours.id, unnamed)
        refused = [r._replace(commit=named.get(r.path, "")) if not r.commit else r for r in refused]
    return MergePlan(index.write_tree(repo), touched, refused, kept, line_merged)
