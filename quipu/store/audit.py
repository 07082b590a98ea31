"""A memory's audit trail: the commits that changed it, read from what they did.

Contract:
- ``memory_log(repo, memory_id)`` lists, newest first, the commits of the branch's history that
  changed the memory's file (``memories/<shard>/<id>.md``) or its event files
  (``events/<shard>/<id>/``), decided from their trees (``quipu.store.effects``), never from their
  messages: quipu's own commits, a person's ``git commit``, a teammate's commit a sync brought in,
  the merge that brought a change in, and an undo of any of them. A commit whose trailers name
  the memory but that changed nothing of it is not listed.
- A merge is compared with its first parent. One whose memory paths are its first parent's
  brought nothing of the memory in: only that parent is followed, so a change the sync refused
  (and the remote commit that made it) is not listed. One whose paths differ is listed ("a merge
  that brought in ...") and every parent is followed, so the commits on each side that made the
  change are listed too.
- The trail ends at the memory's newest creation (the commit that added its file where nothing of
  it was), as ``quipu.store.decisions.about`` ends there for undo, unless that commit is a
  verified undo that brought the memory back: then it goes on.
- Each entry's ``summary`` says what the commit did to the memory, in the words of
  ``quipu.store.decisions.words`` ("the edit of X's text", "the label L on X", "the supersession
  of X by Y"), or "the undo of ..." for a verified undo (``effects.verified_revert``). The commit's
  own first line follows as a note only when it agrees: its trailers name the memory, it claims an
  undo exactly when it is one, and a decision's action (label, supersede, review...) wrote only
  event files while any other action wrote the memory's file and did not remove it.
- A memory that never had a file or an event file (the profile card's ``profile``) is followed by
  its ``Quipu-Memory`` trailer, only through commits that changed a file of the store's own (no
  memory file or event file), as ``quipu.store.decisions.about`` follows it for undo.
- ``log(repo, memory=, sweep=, action=, limit=)``: with ``memory``, its trail as above (``sweep``
  and ``action`` then keep the entries whose trailers record them and agree with what the commit
  did, as for the note: a trailer alone never puts a commit there); without, ``effects.log``: every
  commit of the branch, newest first, with its message's first line. That log reads no tree, so it
  costs what a walk of commit messages costs.
- Only reads objects.
"""
from __future__ import annotations

import datetime as _dt
import heapq
import itertools
from collections.abc import Iterator

import pygit2

from quipu.errors import ConflictError
from quipu.store import effects
from quipu.store.memory import check_id
from quipu.store.trailers import LogEntry, cut_words, parse_trailers

TREE_MODE = 0o040000
# Actions that record a decision about a memory in its event files, never in its file (any other
# action is taken as one that writes the file: its message is shown only when the file changed).
DECISION_ACTIONS = frozenset({"label", "unlabel", "retract", "supersede", "review", "review-accept", "review-reject"})

Paths = tuple[str, str]  # the memory's file and its event folder
State = tuple[effects.Entry | None, effects.Entry | None]  # the entries at those paths (None: absent)


def log(repo: pygit2.Repository, *, memory: str | None = None, sweep: str | None = None,
        action: str | None = None, limit: int | None = None) -> list[LogEntry]:
    """The audit log (see the module contract)."""
    if not memory:
        return effects.log(repo, memory=None, sweep=sweep, action=action, limit=limit)
    return memory_log(repo, memory, sweep=sweep, action=action, limit=limit)


def paths_of(memory_id: str) -> Paths:
    """The memory's file and its event folder."""
    check_id(memory_id)
    return f"memories/{memory_id[:2]}/{memory_id}.md", f"events/{memory_id[:2]}/{memory_id}"


def memory_log(repo: pygit2.Repository, memory_id: str, *, sweep: str | None = None, action: str | None = None,
               limit: int | None = None) -> list[LogEntry]:
    """The commits that changed the memory, newest first (see the module contract); ``sweep`` and
    ``action`` keep the entries whose trailers record them and agree with what they did."""
    paths = paths_of(memory_id)

    def wanted(entry: LogEntry, agrees: bool) -> bool:
        if not sweep and not action:
            return True
        return agrees and (not sweep or entry.trailers.get("Quipu-Sweep") == sweep) and (
            not action or entry.action == action)

    trail = (_entry(repo, commit, base, memory_id, paths) for commit, base in _simplified(repo, _tip(repo), paths))
    newest = next(trail, None)  # None: no commit ever changed a path of it (a file-less memory, or none)
    out: list[LogEntry] = []
    for entry, agrees in itertools.chain([newest], trail) if newest else _by_trailer(repo, memory_id):
        if wanted(entry, agrees):
            out.append(entry)
            if limit and len(out) >= limit:
                break
    return out


def _tip(repo: pygit2.Repository) -> pygit2.Oid | str:
    from quipu.store import gitstore

    try:
        return gitstore.branch_ref(repo).target
    except ConflictError:
        return repo.head.target


def _state(tree: pygit2.Tree, paths: Paths) -> State:
    return effects.entry_at(tree, paths[0]), effects.entry_at(tree, paths[1])


def _item(tree: pygit2.Tree, name: str) -> tuple[pygit2.Oid, int] | None:
    try:
        item = tree[name]
    except KeyError:
        return None
    return item.id, int(item.filemode)


class _States:
    """The entries at the memory's paths in each commit's tree, looked up one folder at a time and
    remembered by the folder's id: a folder no commit changed since the last one costs a lookup in
    a dict, so a walk pays for the folders that changed, not for the store's size."""

    def __init__(self, repo: pygit2.Repository, paths: Paths) -> None:
        self.repo = repo
        self.parts = [path.split("/") for path in paths]
        self.children: dict[tuple[pygit2.Oid, str], tuple[pygit2.Oid, int] | None] = {}
        self.states: dict[pygit2.Oid, State] = {}

    def _child(self, folder: pygit2.Oid, name: str) -> tuple[pygit2.Oid, int] | None:
        key = (folder, name)
        if key not in self.children:
            self.children[key] = _item(self.repo[folder], name)  # type: ignore[arg-type]
        return self.children[key]

    def of(self, commit: pygit2.Commit) -> State:
        found = self.states.get(commit.id)
        if found is None:
            root = commit.tree  # a tree of its own in nearly every commit: read once, for both paths
            entries: list[effects.Entry | None] = []
            for first, *rest in self.parts:
                at = _item(root, first)
                for name in rest:
                    at = self._child(at[0], name) if at is not None and at[1] == TREE_MODE else None
                entries.append(None if at is None else (str(at[0]), at[1]))
            found = self.states[commit.id] = (entries[0], entries[1])
        return found


def _simplified(repo: pygit2.Repository, tip: pygit2.Oid | str,
                paths: Paths) -> Iterator[tuple[pygit2.Commit, pygit2.Commit | None]]:
    """(commit, the parent it is described against, None for a root) for each commit that changed
    the memory against its first parent, newest first by commit time, back to its newest creation
    (see the module contract for which parents of a merge are followed)."""
    state = _States(repo, paths).of
    first: pygit2.Commit = repo[tip]  # type: ignore[assignment]
    queue = [(-first.commit_time, 0, first)]
    queued = {first.id}
    order = 1
    while queue:
        commit = heapq.heappop(queue)[2]
        mine = state(commit)
        parents = commit.parents
        if not parents:
            if mine != (None, None):
                yield commit, None
            continue
        if state(parents[0]) == mine:
            follow = parents[:1]  # nothing of the memory came in here, whatever the other parents hold
        else:
            yield commit, parents[0]
            follow = parents
            if len(parents) == 1 and state(parents[0]) == (None, None) \
                    and effects.verified_revert(repo, commit) is None:
                continue  # its creation: the trail ends here (an undo that brought it back goes on)
        for parent in follow:
            if parent.id not in queued:
                queued.add(parent.id)
                heapq.heappush(queue, (-parent.commit_time, order, parent))
                order += 1


def _folder(repo: pygit2.Repository, entry: effects.Entry | None) -> dict[str, effects.Entry]:
    if entry is None or entry[1] != TREE_MODE:
        return {}
    tree: pygit2.Tree = repo[entry[0]]  # type: ignore[assignment]
    return {item.name + ("/" if item.filemode == TREE_MODE else ""): (str(item.id), int(item.filemode))
            for item in tree if item.name is not None}


def restricted(repo: pygit2.Repository, before: pygit2.Tree | None, after: pygit2.Tree,
               paths: Paths) -> effects.Effect:
    """What changed between two trees at the memory's file and in its event folder, path by path
    (a tree entry inside the folder is named with a trailing '/': no event is a folder)."""
    out: effects.Effect = {}
    old = _state(before, paths) if before is not None else (None, None)
    new = _state(after, paths)
    if old[0] != new[0]:
        out[paths[0]] = (old[0], new[0])
    if old[1] != new[1]:
        before_file, after_file = (e if e is not None and e[1] != TREE_MODE else None for e in (old[1], new[1]))
        if before_file is not None or after_file is not None:  # a file where the folder belongs
            out[paths[1]] = (before_file, after_file)
        a, b = _folder(repo, old[1]), _folder(repo, new[1])
        for name in sorted(a.keys() | b.keys()):
            if a.get(name) != b.get(name):
                out[f"{paths[1]}/{name}"] = (a.get(name), b.get(name))
    return out


def _entry(repo: pygit2.Repository, commit: pygit2.Commit, base: pygit2.Commit | None, memory_id: str,
           paths: Paths) -> tuple[LogEntry, bool]:
    """The commit's entry in the memory's trail, and whether its trailers agree with what it did."""
    from quipu.store import decisions

    effect = restricted(repo, base.tree if base is not None else None, commit.tree, paths)
    trailers = parse_trailers(commit.message)
    said = decisions.words(repo, commit, effect)
    reverted = effects.verified_revert(repo, commit) if len(commit.parents) == 1 else None
    if reverted is not None:
        target: pygit2.Commit = repo[reverted]  # type: ignore[assignment]
        theirs = restricted(repo, target.parents[0].tree, target.tree, paths)
        if paths[0] in theirs and paths[0] not in effect:  # the memory it created was kept, retracted
            said = f"the retraction of {memory_id}, kept by the undo of commit {reverted[:12]} that created it"
        else:
            said = f"the undo of {decisions.words(repo, target, theirs)}"
    elif len(commit.parents) > 1:
        said = f"a merge that brought in {said}"
    agrees = _agrees(trailers, memory_id, effect, paths, reverted is not None)
    return _logged(commit, said, trailers, agrees), agrees


def _logged(commit: pygit2.Commit, said: str, trailers: dict[str, str], agrees: bool) -> LogEntry:
    """The entry, with the commit's first line as a note when it ``agrees`` with what it did."""
    line = cut_words("".join(c if c.isprintable() else " " for c in commit.message.split("\n", 1)[0]).strip(), 100)
    when = _dt.datetime.fromtimestamp(commit.commit_time, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return LogEntry(str(commit.id), when, said + (f' (message: "{line}")' if line and agrees else ""), trailers)


def _claims_undo(trailers: dict[str, str]) -> bool:
    return trailers.get("Quipu-Action") == "undo" or "Quipu-Reverts" in trailers


def _agrees(trailers: dict[str, str], memory_id: str, effect: effects.Effect, paths: Paths,
            is_undo: bool) -> bool:
    """Whether the commit's trailers say what it did to the memory (see the module contract)."""
    named = {trailers.get("Quipu-Memory"), trailers.get("Quipu-Superseded-By"),
             *trailers.get("Quipu-Supersedes", "").split(",")}
    if memory_id not in named or _claims_undo(trailers) != is_undo:
        return False
    if is_undo:
        return True
    if trailers.get("Quipu-Action", "") in DECISION_ACTIONS:
        return paths[0] not in effect
    return paths[0] in effect and effect[paths[0]][1] is not None


def _by_trailer(repo: pygit2.Repository, memory_id: str) -> Iterator[tuple[LogEntry, bool]]:
    """The entries of a memory that has no file: commits naming it that changed a file of the store's own."""
    from quipu.store import decisions

    for commit in repo.walk(_tip(repo), pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME):
        trailers = parse_trailers(commit.message)
        if trailers.get("Quipu-Memory") != memory_id or len(commit.parents) != 1:
            continue
        own = {p: v for p, v in (effects.changes(repo, commit) or {}).items()
               if not p.startswith(("memories/", "events/"))}
        if not own:
            continue
        said = decisions.words(repo, commit, own)
        reverted = effects.verified_revert(repo, commit)
        if reverted is not None:
            target: pygit2.Commit = repo[reverted]  # type: ignore[assignment]
            said = f"the undo of {decisions.words(repo, target, effects.changes(repo, target) or {})}"
        agrees = _claims_undo(trailers) == (reverted is not None)
        yield _logged(commit, said, trailers, agrees), agrees
