"""What a sync brought in: each incoming commit by what it did, and what of that landed in this store.

Contract:
- ``incoming(repo, theirs, hide, refused=, tree=)``: the commits from ``theirs`` (not from
  ``hide``, the store's tip before the merge), oldest first, each by what it did itself, read
  from its trees and never from its message (``Described.of`` with ``own``: a merge only where
  it differs from every parent).
- ``tree`` (the store's tree after the merge: the merge the sync made, or ``theirs``' own on a
  fast-forward) decides what landed. A change landed when that tree's entry at its path is what
  the change wrote; a removal, when the path is absent there and this store held it before or an
  earlier incoming change that landed brought it. A change a later incoming commit changed again
  landed when that later change did and the path is still there; a change a later incoming
  verified undo of its own commit took back is listed as it is, beside the undo that says so.
  Every other change is marked refused (``Change.refused``) with what kept it out
  (``Change.why``, ``Change.by``): a merge on the way that took another side's version ("not in
  the store: refused by merge <id> of <author>"), a later commit that changed or removed it, or
  this sync's own merge (its ``refused`` paths are only marked "(refused)": the sync lists why).
- An incoming merge that kept out changes of the commits below it says which
  (``Incoming.refusals``): a fast-forward to another clone's merge names that merge.
- ``Incoming.counted`` counts only what landed: one per change; a verified undo once, and each
  retraction it made itself (an undo of a commit that created memories keeps and retracts them).
- Only reads objects.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import pygit2

from quipu.store import effects
from quipu.sync.described import Change, Described, Trees, first_line, words
from quipu.sync.policy import shown

_ORDER = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
SHOWN = 3  # commits a merge's refusals name; the rest are counted


class Incoming(NamedTuple):
    """A commit a sync brought in, by what it did (see ``incoming``)."""

    commit: str
    action: str  # what it did: "undo" (verified), the kind of its first change that landed, '' for none
    memory: str  # the memory of that change ('' for none)
    author: str
    summary: str  # what it did, in words; a claim its trailers make and it did not do comes first
    verified: bool = True  # False: its trailers claim what it did not do
    changes: tuple[Change, ...] = ()
    claimed: str = ""  # the action its trailers claim ('' for none)
    claim: str = ""  # that claim in words
    reverts: str = ""  # the commit it verifiably undoes
    message: str = ""  # its message's first line
    refusals: tuple[tuple[str, Change], ...] = ()  # a merge: (commit, change) of the commits below it kept out

    @property
    def kind(self) -> str:
        return "undo-unverified" if self.claimed == "undo" and not self.verified else self.action

    def counted(self) -> list[str]:
        """What it adds to a sync's counts: one per change that landed (an undo: one, and the
        retractions it made), and a claimed undo that is not one as such."""
        out = ["undo-unverified"] if self.kind == "undo-unverified" else []
        landed = [c.kind for c in self.changes if not c.refused]
        if self.reverts:
            return out + (["undo"] if landed else []) + [kind for kind in landed if kind == "retract"]
        return out + landed

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "commit": self.commit, "action": self.action, "memory": self.memory, "author": self.author,
            "summary": self.summary, "verified": self.verified, "changes": [c.to_json() for c in self.changes],
            "claims": self.claim, "reverts": self.reverts, "message": self.message}
        if self.refusals:
            out["kept_out"] = [{"commit": commit, **change._replace(refused=False).to_json()}
                               for commit, change in self.refusals]
        return out


Entry = tuple[str, int] | None


class _Judge:
    """Whether each incoming change landed in ``final`` (see the module contract)."""

    def __init__(self, repo: pygit2.Repository, found: list[Described], final: pygit2.Tree, before: pygit2.Tree,
                 refused: set[str]) -> None:
        self.repo, self.found, self.final, self.before, self.refused = repo, found, final, before, refused
        self.judged: dict[tuple[int, str], Change] = {}
        self.entries: dict[tuple[pygit2.Oid, str], Entry] = {}
        self.kept_out: dict[str, list[tuple[str, Change]]] = {}  # a merge's id: what it refused
        # Only a commit with a change of its own at a path, or a merge, can change what is there.
        self.touching: dict[str, list[int]] = {}
        for j, d in enumerate(found):
            for c in d.changes:
                self.touching.setdefault(c.path, []).append(j)
        self.merges = [j for j, d in enumerate(found) if d.merge]

    def entry(self, tree: pygit2.Tree, path: str) -> Entry:
        key = (tree.id, path)
        if key not in self.entries:
            self.entries[key] = effects.entry_at(tree, path)
        return self.entries[key]

    def landed(self, i: int, change: Change) -> Change:
        """``change``, a change of the ``i``-th commit, marked refused unless it landed."""
        key = (i, change.path)
        if key not in self.judged:
            self.judged[key] = change._replace(refused=True)  # while judged: no judgement it asks for comes back to it
            self.judged[key] = self._judge(i, change)
        return self.judged[key]

    def _judge(self, i: int, change: Change) -> Change:
        path = change.path
        wrote = self.entry(self.found[i].commit.tree, path)
        if self.entry(self.final, path) != wrote:
            return self._after(i, change, wrote)
        if wrote is not None or self.entry(self.before, path) is not None or any(
                not c.gone and not self.landed(k, c).refused
                for k in self.touching[path] if k < i for c in self.found[k].changes if c.path == path):
            return change  # a removal of what this store had, or of what this sync brought
        return change._replace(refused=True, why="this store never had it")

    def _next(self, i: int, path: str, wrote: Entry) -> int | None:
        """The first commit after the ``i``-th, on its line, that changed ``path`` from what it wrote."""
        start = self.found[i].commit.id
        later: set[int] = {j for j in (*self.touching.get(path, []), *self.merges) if j > i}
        for j in sorted(later):
            commit = self.found[j].commit
            if self.entry(commit.tree, path) == wrote:
                continue
            if any(self.entry(p.tree, path) == wrote and (p.id == start or self.repo.descendant_of(p.id, start))
                   for p in commit.parents):
                return j
        return None

    def _after(self, i: int, change: Change, wrote: Entry) -> Change:
        path, final = change.path, self.entry(self.final, change.path)
        j = self._next(i, path, wrote)
        if j is None:  # this sync's own merge kept another version
            if path in self.refused:
                return change._replace(refused=True)
            own = final == self.entry(self.before, path)
            return change._replace(refused=True, why="not in the store: this store's own version stays" if own
                                   else "not in the store as written: merged with this store's version")
        later = self.found[j]
        commit, here = later.commit, self.entry(later.commit.tree, path)
        name = f"{str(commit.id)[:12]} of {shown(commit.author.name)} <{shown(commit.author.email)}>"
        if len(commit.parents) > 1 and any(self.entry(p.tree, path) == here for p in commit.parents):
            marked = change._replace(refused=True, why=f"not in the store: refused by merge {name}", by=str(commit.id))
            self.kept_out.setdefault(str(commit.id), []).append((str(self.found[i].commit.id), marked))
            return marked
        if later.reverts == str(self.found[i].commit.id):
            return change  # its undo came in with it, and says what it took back
        again = next((c for c in later.changes if c.path == path), None)
        if wrote is not None and here is not None and final is not None and again is not None \
                and not self.landed(j, again).refused:
            return change  # changed again since, and that is what the store holds
        verb = "removed" if here is None else "added again" if wrote is None else "changed again"
        stays = "; this store's own version stays" if final is not None and final == self.entry(self.before, path) \
            else ""
        return change._replace(refused=True, why=f"not in the store: {verb} by commit {name}{stays}",
                               by=str(commit.id))


def _refusals_words(refusals: Iterable[tuple[str, Change]]) -> str:
    by_commit: dict[str, list[Change]] = {}
    for commit, change in refusals:
        by_commit.setdefault(commit, []).append(change._replace(refused=False, why="", by=""))
    said = [f"what commit {commit[:12]} did ({words(found)})" for commit, found in list(by_commit.items())[:SHOWN]]
    more = len(by_commit) - SHOWN
    return "refused " + ", ".join(said) + (f" and what {more} more commit(s) did" if more > 0 else "")


def incoming(repo: pygit2.Repository, theirs: pygit2.Oid, hide: pygit2.Oid, refused: Iterable[str] = (),
             tree: pygit2.Tree | None = None) -> list[Incoming]:
    """The commits from ``theirs`` (not from ``hide``), oldest first, each by what it did itself,
    its changes marked by whether they landed in ``tree`` (see the module contract)."""
    walker = repo.walk(theirs, _ORDER)
    walker.hide(hide)
    trees = Trees(repo)
    found = [Described.of(repo, commit, trees, own=True) for commit in walker]
    final = tree if tree is not None else repo[theirs].tree
    judge = _Judge(repo, found, final, repo[hide].tree, set(refused))
    marked = [tuple(judge.landed(i, c) for c in d.changes) for i, d in enumerate(found)]
    out = []
    for d, changes in zip(found, marked, strict=True):
        landed = [c for c in changes if not c.refused]
        action = ("undo" if landed else "") if d.reverts else landed[0].kind if landed else ""
        refusals = tuple(judge.kept_out.get(str(d.commit.id), ()))
        said = d.words(changes)
        if refusals:
            said = f"{said}; it {_refusals_words(refusals)}" if changes else f"a merge that {_refusals_words(refusals)}"
        if d.agrees is False:
            said = f"{d.claim_words()}; {said}"
        author = d.commit.author
        out.append(Incoming(str(d.commit.id), action, landed[0].memory if landed else "",
                            f"{author.name} <{author.email}>", said,
                            d.agrees is not False, changes, d.claim.action if d.claim else "", d.claim_words(),
                            d.reverts or "", first_line(d.commit.message), refusals))
    return out
