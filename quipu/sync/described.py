"""What a commit did to which memories, read from its trees, and whether its trailers say so.

Contract:
- ``Described.of(repo, commit, trees, own=)`` reads a commit's effect from its trees, never from
  its message: against its first parent (a root: against nothing). With ``own``, a merge's effect
  is only what it did itself, the paths where it differs from every parent (a change it took from
  one parent is the effect of the commits on that parent's line). Two trees are compared by their
  entries, and a subtree whose id did not change is not opened (``Trees`` and ``tree_changes``,
  from ``quipu.sync.treediff``).
- Each change is a ``Change``: a memory added, its text changed or its file removed; a decision
  written (an event file added, its JSON read: a label set or taken off and which, a retraction,
  a supersession and by which memory, a review item) or removed or changed; the profile card, a
  skill's files, any other file. Ids and labels read from a commit are shown only when they are
  plain (``decisions.plain``, ``label_of``); paths are shown printable.
- ``Claim`` is what the commit's trailers say it is (``Quipu-Action`` with its memory, label,
  superseding memory, the commit it reverts); a commit without ``Quipu-Action`` or
  ``Quipu-Reverts`` claims nothing (the line ``git revert`` writes only names a commit to compare
  with). ``agrees`` checks the claim against the changes: an undo must be a verified one
  (``effects.verified_revert``), a sync a merge, a decision (label, unlabel, retract, supersede,
  review...) only event files of the memory and decision it names (a retraction or supersession
  may take lines off the profile card in the same commit), a write of a memory (add, capture,
  fact-set, import, enrich...) that memory's file added or changed and nothing removed, a profile
  or skill action only those files. A claim that disagrees is never taken as what happened.
- ``words(changes)`` says them in words: "added a1", "changed the text of a1", "labelled a2
  reviewed", "superseded a3 by a4", "retracted a5", "changed the profile card"; changes a sync
  did not take are marked "(refused)", or with what kept them out (``Change.why``, set by
  ``quipu.sync.landed``). ``Described.words`` says a verified undo by the commit it undid and
  what that commit did, and the retractions the undo made itself (an undo of a commit that
  created memories keeps them and retracts them). ``Described.claim_words`` says the claim
  ("claims retract of a2").
- ``said(entry, described)``: what the commit did in words, its message's first line following as
  a note only when its trailers agree, and a claim that disagrees first, marked "(not verified)".
- ``walk(repo, sweep=, action=, limit=, cache=)``: the branch's commits newest first, each described;
  with ``sweep`` or ``action``, only those whose trailers record it and agree with what they did.
  With ``cache`` (the store's cache folder) and no ``limit`` up to ``KEPT_AFTER``, what a commit
  did is taken from the record a former walk kept there (``quipu.sync.described_cache``), what it
  claims read again from it, and the records of the commits described anew are kept; a commit
  whose event file could not be read is not kept. The output is the same with or without it.
- Only reads objects (and, with ``cache``, that folder's one file).
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import pygit2

from quipu.errors import ConflictError
from quipu.store import effects
from quipu.store.decisions import plain
from quipu.store.memory import ID_RE
from quipu.store.trailers import LogEntry, cut_words, parse_trailers
from quipu.sync import described_cache
from quipu.sync.policy import shown
from quipu.sync.treediff import Trees as Trees  # the names this module has always offered
from quipu.sync.treediff import tree_changes as tree_changes

_LABEL = re.compile(r"[\w-]{1,64}")
MAX_EVENT = 1 << 20  # an event file larger than the schema allows is not read
# The order a commit's changes are named in, and the first of them says what kind of commit it is.
KINDS = ("undo", "add", "edit", "supersede", "retract", "label", "unlabel", "review", "review-resolved",
         "decision", "remove", "decision-removed", "decision-changed", "profile", "skill", "file")
_RANK = {kind: rank for rank, kind in enumerate(KINDS)}
_CHANGES = frozenset(KINDS) - {"undo"}
KEPT_AFTER = 100  # a walk of at most this many commits (``limit``) neither reads nor keeps records
DECISIONS = frozenset({"supersede", "retract", "label", "unlabel", "review", "review-resolved", "decision"})
_SORT = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME


def label_of(text: object) -> str:
    """A label as a commit holds it, when it is one quipu could have written (letters, digits, '-'
    and '_'), else "?"."""
    return text if isinstance(text, str) and _LABEL.fullmatch(text) and text.isprintable() else "?"


def first_line(message: str, limit: int = 100) -> str:
    """A commit message's first line, cut at a word (the CLI's output escapes what does not print)."""
    return cut_words(message.split("\n", 1)[0].strip(), limit)


class Change(NamedTuple):
    kind: str  # one of KINDS (not "undo")
    memory: str  # the memory's id; "profile" for the card; "store" for any other file
    path: str  # as the tree has it
    detail: str = ""  # the label, the superseding memory, the decision's action; a file's path, printable
    gone: bool = False  # the path is absent after the commit
    refused: bool = False  # a sync did not take it: it is not in the store as the commit wrote it
    why: str = ""  # with ``refused``: what kept it out, in words ('' for the sync's own merge, which lists why)
    by: str = ""  # with ``refused``: the commit that kept it out

    def to_json(self) -> dict[str, str | bool]:
        out: dict[str, str | bool] = {"change": self.kind, "memory": self.memory, "path": shown(self.path)}
        if self.detail and self.kind not in ("file", "skill"):
            out["label" if self.kind in ("label", "unlabel") else "by" if self.kind == "supersede" else "detail"] \
                = self.detail
        if self.refused:
            out["refused"] = True
            if self.why:
                out["why"] = self.why
            if self.by:
                out["refused_by"] = self.by
        return out


class Claim(NamedTuple):
    action: str
    memory: str
    label: str
    by: str
    supersedes: frozenset[str]
    reverts: str

    @classmethod
    def of(cls, trailers: dict[str, str]) -> Claim | None:
        action, reverts = trailers.get("Quipu-Action", ""), trailers.get("Quipu-Reverts", "")
        if not action and not reverts:
            return None
        olds = frozenset(s.strip() for s in trailers.get("Quipu-Supersedes", "").split(",") if s.strip())
        return cls(action or "undo", trailers.get("Quipu-Memory", ""), trailers.get("Quipu-Label", ""),
                   trailers.get("Quipu-Superseded-By", ""), olds, reverts)

    def words(self) -> str:
        said = f"claims {plain(self.action, 'an unreadable action')}"
        if self.action == "undo" and self.reverts:
            said += f" of commit {plain(self.reverts[:12], '?')}"
        elif self.memory and self.memory != "store":
            said += f" of {plain(self.memory)}"
        if self.label:
            said += f" ({label_of(self.label)})"
        if self.by:
            said += f" by {plain(self.by)}"
        return said


def _event(repo: pygit2.Repository, memory: str, path: str, entry: effects.Entry) -> Change:
    try:
        blob = repo[entry[0]]
        event = json.loads(blob.data) if isinstance(blob, pygit2.Blob) and blob.size <= MAX_EVENT else None
    except (KeyError, ValueError, RecursionError, UnicodeDecodeError):
        event = None
    if not isinstance(event, dict):
        return Change("decision", memory, path, "unreadable")
    action = event.get("action")
    if action == "label":
        label = label_of(event.get("label"))
        if event.get("set", True) is False:
            return Change("unlabel", memory, path, label)
        return Change("retract", memory, path) if label == "retracted" else Change("label", memory, path, label)
    if action == "supersede":
        return Change("supersede", memory, path, plain(event.get("by")))
    if action in ("review", "review-resolved"):
        return Change(str(action), memory, path)
    return Change("decision", memory, path, plain(action, "unknown"))


def changes(repo: pygit2.Repository, effect: effects.Effect) -> list[Change]:
    """The changes of an effect, in KINDS order (see the module contract)."""
    out: list[Change] = []
    for path, (old, new) in sorted(effect.items()):
        parts = path.split("/")
        memory = effects.memory_id_of(path)
        if memory is not None:
            out.append(Change("add" if old is None else "remove" if new is None else "edit", memory, path,
                              gone=new is None))
        elif len(parts) == 4 and parts[0] == "events" and ID_RE.match(parts[2]) and parts[1] == parts[2][:2]:
            if old is None and new is not None:
                out.append(_event(repo, parts[2], path, new))
            else:
                out.append(Change("decision-removed" if new is None else "decision-changed", parts[2], path,
                                  gone=new is None))
        elif path == "profile.md":
            out.append(Change("profile", "profile", path, gone=new is None))
        else:
            out.append(Change("skill" if parts[0] == "skills" else "file", "store", path, shown(path), gone=new is None))
    return sorted(out, key=lambda c: _RANK[c.kind]) if len(out) > 1 else out


_VERBS = {"add": "added {m}", "edit": "changed the text of {m}", "remove": "removed {m}",
          "supersede": "superseded {m} by {d}", "retract": "retracted {m}", "label": "labelled {m} {d}",
          "unlabel": "took the label {d} off {m}", "review": "queued {m} for review",
          "review-resolved": "resolved a review of {m}", "decision": "recorded a decision ({d}) about {m}",
          "decision-removed": "removed a decision about {m}", "decision-changed": "changed a decision about {m}",
          "profile": "changed the profile card"}
SHOWN = 3  # ids named per kind of change; the rest are counted
_GONE = "not in the store:"  # how a ``Change.why`` of a change kept out of the store begins


def words(found: Iterable[Change]) -> str:
    """The changes in words, the same kind of change on several memories said once."""
    found = tuple(found)
    whys = {c.why if c.refused else "" for c in found}
    once = next(iter(whys)) if len(found) > 1 and len(whys) == 1 else ""
    once = once if once.startswith(_GONE) else ""  # kept out of the store, all by the same commit: said once
    groups: dict[tuple[str, str, str], list[str]] = {}
    for change in found:
        mark = "" if once else f" ({change.why})" if change.refused and change.why else \
            " (refused)" if change.refused else ""
        if change.kind in ("file", "skill"):
            verb = "removed" if change.gone else "wrote"
            groups.setdefault((f"{verb} {{m}}", "", mark), []).append(change.detail)
        else:
            groups.setdefault((_VERBS[change.kind], change.detail, mark), []).append(change.memory)
    said = []
    for (verb, detail, mark), names in groups.items():
        names = list(dict.fromkeys(names))
        listed = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
        said.append(verb.format(m=listed, d=detail) + mark)
    return "; ".join(said) + (f" (none of it {once.replace(_GONE, 'is in the store:', 1)})" if once else "") \
        or "nothing of its own"


def _decision_of(claim: Claim, change: Change, memories: set[str]) -> bool:
    if change.memory not in memories:
        return False
    if claim.action == "label" and claim.label == "retracted":
        return change.kind == "retract"  # what `quipu retract` writes, labelled by its name
    if claim.action in ("label", "unlabel"):
        return change.kind == claim.action and (not claim.label or change.detail == label_of(claim.label))
    if claim.action == "retract":
        return change.kind == "retract"
    if claim.action == "supersede":
        return change.kind == "supersede" and (not claim.by or change.detail == claim.by)
    return change.kind in DECISIONS  # review, review-accept, review-reject


def agrees(claim: Claim, found: list[Change], *, merge: bool, reverts: str | None) -> bool:
    """Whether the trailers' claim says what the commit did (see the module contract)."""
    action = claim.action
    if action == "undo" or claim.reverts:
        return reverts is not None
    if reverts is not None or merge or action == "sync":
        return action == "sync" and merge
    if not found:
        return False
    if action == "init":  # the store's own files, in its first commit or added to a repository
        return all(c.kind == "file" for c in found)
    if action in ("label", "unlabel", "retract", "supersede") or action.startswith("review"):
        named = {claim.memory} | (claim.supersedes if action == "supersede" else set())
        card = action in ("retract", "supersede")
        return all(_decision_of(claim, c, named) or (card and c.kind == "profile") for c in found) and any(
            c.kind != "profile" for c in found)
    if action.startswith("skill-"):
        return all(c.kind == "skill" for c in found)
    if action == "refuse":
        return all(c.gone for c in found)
    written = {c.memory for c in found if c.kind in ("add", "edit")}
    if action.startswith("profile-"):
        return all(c.kind in ("profile", "add", "edit") for c in found)
    return bool(written) and (claim.memory in written or claim.memory in ("", "store")) and all(
        c.kind in ("add", "edit", "profile") or (c.kind == "supersede" and c.detail in written) for c in found)


class Described(NamedTuple):
    commit: pygit2.Commit
    changes: tuple[Change, ...]
    claim: Claim | None
    agrees: bool | None  # None: it claims nothing
    reverts: str | None  # the commit it verifiably undoes
    undid: str  # that commit's changes in words
    own: bool  # a merge: its changes are only what it did itself

    @classmethod
    def of(cls, repo: pygit2.Repository, commit: pygit2.Commit, trees: Trees, *, own: bool = False,
           trailers: dict[str, str] | None = None) -> Described:
        parents = commit.parent_ids
        message = commit.message
        effect = tree_changes(trees, commit.parents[0].tree_id if parents else None, commit.tree_id)
        if own and len(parents) > 1:
            others = [repo[p].tree for p in parents[1:]]
            effect = {p: v for p, v in effect.items() if all(effects.entry_at(t, p) != v[1] for t in others)}
        # A message can name a commit only in these words (``effects.named_revert``).
        named = ("Quipu-Reverts" in message or "This reverts commit " in message) and effects.named_revert(message)
        reverts = effects.verified_revert(repo, commit) if len(parents) == 1 and named else None
        undid = ""
        if reverts is not None:
            target: pygit2.Commit = repo[reverts]  # type: ignore[assignment]
            undid = words(changes(repo, tree_changes(trees, target.parents[0].tree_id, target.tree_id)))
        found = tuple(changes(repo, effect))
        claim = Claim.of(parse_trailers(message) if trailers is None else trailers)
        agreed = None if claim is None else agrees(claim, list(found), merge=len(parents) > 1, reverts=reverts)
        return cls(commit, found, claim, agreed, reverts, undid, own)

    @property
    def merge(self) -> bool:
        return len(self.commit.parent_ids) > 1

    def kind(self) -> str:
        """What kind of commit it is, by what it did: "undo", "merge", its first change's kind, or ''."""
        if self.reverts is not None:
            return "undo"
        if self.merge:
            return "merge"
        return self.changes[0].kind if self.changes else ""

    def memory(self) -> str:
        """The one memory it changed, "several", or '' (none)."""
        named = {c.memory for c in self.changes}
        return named.pop() if len(named) == 1 else "several" if named else ""

    def words(self, found: Iterable[Change] | None = None) -> str:
        """What it did, in words (``found``: those of its changes, marked as refused where they were)."""
        found = self.changes if found is None else tuple(found)
        if self.reverts is not None:
            # An undo of a commit that created memories keeps them and retracts them: said too.
            retracted = [c._replace(refused=False) for c in found if c.kind == "retract"]
            whys = {c.why for c in found if c.refused}
            kept_out = "" if not found or not all(c.refused for c in found) else \
                f" ({whys.pop()})" if len(whys) == 1 and "" not in whys else " (refused)"
            return f"undid commit {self.reverts[:12]} ({self.undid})" + (f"; {words(retracted)}" if retracted else "") \
                + kept_out
        said = words(found)
        if not self.merge or not found:
            return said
        return f"in a merge, of its own: {said}" if self.own else f"a merge that brought in: {said}"

    def claim_words(self) -> str:
        return self.claim.words() if self.claim is not None else ""


def said(entry: LogEntry, described: Described) -> str:
    """What the commit did; its message as a note when its trailers agree, its claim when they do not."""
    did = described.words()
    if described.agrees is False:
        return f"{described.claim_words()}; {did} (not verified)"
    return did + (f' (message: "{entry.summary}")' if described.agrees and entry.summary else "")


def _kept(kept: described_cache.Kept, commit: pygit2.Commit, sha: str, trailers: dict[str, str]) -> Described | None:
    """The commit described from its record in ``kept`` (its claim read again), or None."""
    record = described_cache.valid(kept.get(sha), _CHANGES)
    if record is None:
        return None
    found = tuple(Change(*change) for change in record[0])
    claim = Claim.of(trailers)
    merge = len(commit.parent_ids) > 1
    agreed = None if claim is None else agrees(claim, list(found), merge=merge, reverts=record[1])
    return Described(commit, found, claim, agreed, record[1], record[2], False)


def walk(repo: pygit2.Repository, *, sweep: str | None = None, action: str | None = None,
         limit: int | None = None, cache: Path | None = None) -> Iterator[tuple[LogEntry, Described]]:
    """The branch's commits, newest first, each with what it did (see the module contract)."""
    from quipu.store import gitstore

    try:
        tip = gitstore.branch_ref(repo).target
    except ConflictError:
        tip = repo.head.target
    trees = Trees(repo)
    # A short log describes its few commits sooner than it reads the records of all.
    kept = None if cache is None or limit and limit <= KEPT_AFTER else described_cache.Kept(cache, repo.is_shallow)
    shown_so_far = 0
    seen: set[str] = set()
    for commit in repo.walk(tip, _SORT):
        message = commit.message
        trailers = parse_trailers(message)
        if (sweep and trailers.get("Quipu-Sweep") != sweep) or (action and trailers.get("Quipu-Action") != action):
            continue
        sha = str(commit.id)
        described = None if kept is None else _kept(kept, commit, sha, trailers)
        if described is None:
            described = Described.of(repo, commit, trees, trailers=trailers)
            if kept is not None and not any(c.detail == "unreadable" for c in described.changes):
                kept.put(sha, (tuple((c.kind, c.memory, c.path, c.detail, c.gone) for c in described.changes),
                               described.reverts, described.undid))
        seen.add(sha)
        if (sweep or action) and not described.agrees:
            continue
        when = _dt.datetime.fromtimestamp(commit.commit_time, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        yield LogEntry(sha, when, first_line(message), trailers), described
        shown_so_far += 1
        if limit and shown_so_far >= limit:
            break
    else:
        if kept is not None:  # the whole branch was read: only its records stay
            kept.save(None if sweep or action else seen)
        return
    if kept is not None:
        kept.save()
