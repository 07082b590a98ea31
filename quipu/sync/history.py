"""What a remote's history holds beyond its tip's files: trees git itself refuses, the commits
that removed a file, and the files a remote's merge kept against a removal.

Contract:
- ``git_refuses(name)``: a tree entry's name that git will not check out and its fsck flags:
  ``.git`` in any case and in its NTFS and HFS spellings (``.git.``, ``git~1``, ``.git::$DATA``,
  ``.g\\u200cit``), ``.``, ``..``, an empty name, a name with ``/``. libgit2 cannot put most of
  them in an index (no merge could even read the tree), and git's fsck flags every one.
- ``takeable(repo, tip, hide)``: the commit of a remote's branch that a sync (a clone: no
  ``hide``) may take, with a ``Refusal`` for each entry of such a name and the commit whose tree
  first holds it. That is ``tip`` when no commit from ``tip`` (not from ``hide``) holds one; else
  the newest commit on ``tip``'s first-parent line none of whose incoming ancestors holds one
  (None: there is none). Such a commit never becomes part of the store's history: there it would
  stay in every clone's history for good, which git's fsck flags and forges refuse on push.
  ``fsck_finds_names(root)`` asks git's fsck the same of a whole repository, faster.
- ``removed_by(repo, tip, hide, paths)``: for each path absent at ``tip``, the commits that
  removed it, found on the lines of history that carry its absence into ``tip``: a one-parent
  commit whose parent has the file removed it; a merge that lacks the file like one of its
  parents takes the absence from that parent's line, followed down to the commit that made it;
  a merge that lacks it while each parent has it, or whose parent that has it changed it since
  the two lines split, removed it itself. Only commits from ``tip`` and not from ``hide`` are
  looked at (a line that leaves them names no commit).
- ``put_back(repo, before, after)``: the files ``after``'s tree holds and ``before``'s did not
  that a merge between the two (from ``after``, not from ``before``) kept against a removal made
  on its other parent's line by a commit of ``before``'s history (this store's own removal, not
  one that came in with the same sync): a removal another clone's sync refused, read from what
  that merge did, never from its message.
- Only reads objects (git's fsck too).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import NamedTuple

import pygit2

from quipu.store import effects, repair
from quipu.store.memory import ID_RE
from quipu.sync.policy import Refusal, shown

_TOPO = pygit2.enums.SortMode.TOPOLOGICAL
# Code points HFS+ ignores in a name, so that ".g\u200cit" is ".git" there (git's is_hfs_dotgit).
_HFS_IGNORED = frozenset("\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                         "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff")
_ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.S)
REASON = ("a name git itself refuses (it names git's own folder, or leaves its folder); a commit whose "
          "tree holds one is not taken, nor anything built on it, so it never enters this store's history")


class Restored(NamedTuple):
    """A file this store lacked that arrived because a remote's merge kept it against a removal."""

    path: str
    memory: str  # the memory whose file or decision it is, or "store"
    kept_by: str  # the merge that kept it
    author: str  # that merge's author
    removed_by: str  # the commit on the other line that removed it ('' when none is found)

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "memory": self.memory, "kept_by": self.kept_by, "author": self.author,
                "removed_by": self.removed_by}


def git_refuses(name: str) -> bool:
    """Whether git refuses a tree entry of this name (see the module contract)."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        return True
    for part in name.split("\\"):  # on NTFS a backslash separates folders
        bare = "".join(c for c in part if c not in _HFS_IGNORED).casefold().split(":", 1)[0].rstrip(" .")
        if part in (".", "..") or bare in (".git", "git~1"):
            return True
    return False


class _Trees:
    """Tree entries read from the objects themselves, the latest kept: a commit's trees are read
    again as its children's parents."""

    KEEP = 4096

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.kept: dict[bytes, list[tuple[bytes, bytes, bytes]]] = {}
        self.clean: set[bytes] = set()  # trees with no name git refuses anywhere below

    def entries(self, tree: pygit2.Oid) -> list[tuple[bytes, bytes, bytes]]:
        """(mode, name, raw id) of each entry of ``tree``."""
        found = self.kept.get(tree.raw)
        if found is None:
            if len(self.kept) >= self.KEEP:
                self.kept.clear()
            found = self.kept[tree.raw] = _ENTRY.findall(self.repo[tree].read_raw())
        return found

    def refused_in(self, tree: pygit2.Oid, parents: list[pygit2.Oid], prefix: str = "") -> list[str]:
        """The paths in ``tree`` whose name git refuses. An entry a parent tree holds as it is was
        looked at with that parent (or is the store's own), and a subtree found clean before is
        not looked into again."""
        if tree.raw in self.clean:
            return []
        theirs = [self.entries(p) for p in parents]
        out: list[str] = []
        for mode, raw, oid in sorted(set(self.entries(tree)).difference(*theirs), key=lambda e: e[1]):
            name = raw.decode("utf-8", "replace")
            if git_refuses(name):
                out.append(prefix + shown(name))
            elif int(mode, 8) == 0o40000 and oid not in self.clean:
                below = [pygit2.Oid(raw=o) for listing in theirs for _m, n, o in listing if n == raw]
                out += self.refused_in(pygit2.Oid(raw=oid), below, f"{prefix}{shown(name)}/")
        if not out:
            self.clean.add(tree.raw)
        return out


def takeable(repo: pygit2.Repository, tip: pygit2.Oid, hide: pygit2.Oid | None) -> tuple[pygit2.Oid | None, list[Refusal]]:
    """The commit that may be taken from ``tip``, and why the rest is not (see the module contract)."""
    walker = repo.walk(tip, _TOPO | pygit2.enums.SortMode.REVERSE)
    if hide is not None:
        walker.hide(hide)
    incoming: set[pygit2.Oid] = set()
    tainted: set[pygit2.Oid] = set()
    refused: list[Refusal] = []
    trees = _Trees(repo)
    for commit in walker:
        incoming.add(commit.id)
        bad = trees.refused_in(commit.tree_id, [p.tree_id for p in commit.parents])
        refused += [Refusal(path, REASON, str(commit.id)) for path in bad]
        if bad or any(p in tainted for p in commit.parent_ids):
            tainted.add(commit.id)
    good: pygit2.Oid | None = tip
    while good is not None and good in tainted:
        parents = repo[good].parent_ids  # type: ignore[attr-defined]
        good = parents[0] if parents else None
    return (good if good is not None and (good == tip or good in incoming) else None), refused


def fsck_finds_names(root: Path) -> bool:
    """Whether git's own fsck finds, among every object of the repository at ``root``, a tree
    entry of a name it refuses: the quick answer for a whole new clone (``takeable`` reads the
    trees in Python, at about a millisecond a commit)."""
    proc = subprocess.run(["git", "-C", str(root), "fsck", "--no-dangling", "--no-progress"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, check=False)
    return proc.returncode != 0 or any(repair.NAME_FINDING.match(line) for line in proc.stdout.splitlines()
                                       + proc.stderr.splitlines())


def _at(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
    except KeyError:
        return None


def removed_by(repo: pygit2.Repository, tip: pygit2.Oid, hide: pygit2.Oid | None,
               paths: set[str]) -> dict[str, list[pygit2.Commit]]:
    """For each of ``paths``, the commits that removed it (see the module contract), newest first."""
    out: dict[str, list[pygit2.Commit]] = {p: [] for p in paths}
    traced: dict[pygit2.Oid, set[str]] = {tip: set(paths)}
    bases: dict[tuple[pygit2.Oid, pygit2.Oid], pygit2.Tree | None] = {}

    def split(a: pygit2.Oid, b: pygit2.Oid) -> pygit2.Tree | None:
        if (a, b) not in bases:
            base = repo.merge_base(a, b)
            bases[a, b] = repo[base].tree if base is not None else None
        return bases[a, b]

    walker = repo.walk(tip, _TOPO)
    if hide is not None:
        walker.hide(hide)
    for commit in walker:  # a commit comes after every commit built on it
        if not traced:
            break
        here = traced.pop(commit.id, set())
        parents = commit.parents
        for path in sorted(here):
            having = [p for p in parents if _at(p.tree, path) is not None]
            lacking = [p for p in parents if p not in having]
            changed = any(_at(h.tree, path) != (_at(t, path) if (t := split(h.id, a.id)) is not None else None)
                          for h in having for a in lacking)
            if having and (not lacking or changed):
                out[path].append(commit)
                continue
            for parent in lacking:
                traced.setdefault(parent.id, set()).add(path)
    return out


def memory_of(path: str) -> str:
    """The memory a store path belongs to (its file, or its decisions' folder), else "store"."""
    parts = path.split("/")
    if parts[0] == "events" and len(parts) == 4 and ID_RE.match(parts[2]) and parts[1] == parts[2][:2]:
        return parts[2]
    return effects.memory_id_of(path) or "store"


def put_back(repo: pygit2.Repository, before: pygit2.Oid, after: pygit2.Oid) -> list[Restored]:
    """The files a remote's merge kept against a removal, as this store received them (see the contract)."""
    old, new = repo[before].tree, repo[after].tree
    added = sorted(d.new_file.path for d in repo.diff(old, new).deltas if d.status_char() == "A")  # type: ignore[call-overload]
    if not added:
        return []
    out: list[Restored] = []
    bases: dict[tuple[pygit2.Oid, pygit2.Oid], pygit2.Oid | None] = {}

    def split(a: pygit2.Oid, b: pygit2.Oid) -> pygit2.Oid | None:
        if (a, b) not in bases:
            bases[a, b] = repo.merge_base(a, b)
        return bases[a, b]

    walker = repo.walk(after, _TOPO)
    walker.hide(before)
    for commit in walker:
        if len(commit.parents) < 2 or not added:
            continue
        for path in list(added):
            if _at(commit.tree, path) is None:
                continue
            having = [p for p in commit.parents if _at(p.tree, path) is not None]
            for lacking in (p for p in commit.parents if p not in having):
                base = next((b for h in having if (b := split(h.id, lacking.id)) is not None
                             and _at(repo[b].tree, path) is not None), None)
                if base is None:
                    continue  # that line never had it: an ordinary merge of a new file
                # Only a removal this store's own history made is one it had: a removal on a line
                # that came in with this sync (another clone's) put nothing back here.
                ours = [r for r in removed_by(repo, lacking.id, base, {path})[path]
                        if r.id == before or repo.descendant_of(before, r.id)]
                if not ours:
                    continue
                out.append(Restored(path, memory_of(path), str(commit.id),
                                    f"{commit.author.name} <{commit.author.email}>", str(ours[0].id)))
                added.remove(path)
                break
    return out
