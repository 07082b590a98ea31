"""Share a store through an ordinary git remote: fetch, merge under the sync policy, push.

Contract:
- ``sync`` holds the store's writer lock from the fetch to the push, so quipu writers on this
  machine queue behind it and nothing they write is lost. The remote's branch is fetched into
  ``refs/quipu/incoming/<remote>/``; it is merged by ``quipu.sync.merge`` (what the policy
  refuses is listed and left out, the rest still merges); the branch moves by the same
  compare-and-swap as every quipu write, so the worktree and git's index stay clean; then the
  branch is pushed. A push the remote rejects because it moved meanwhile starts over (fetch,
  merge, push), up to ``MAX_ATTEMPTS`` times.
- Nothing a remote says about itself is taken on its word: each incoming commit is listed by
  what it did to which memories, read from its trees (``quipu.sync.described``), and counted
  only for what landed in this store's tree (``quipu.sync.landed``: a change a merge on the way
  refused, on a fast-forward too, is marked so with that merge, and the merge says what it
  refused); one whose trailers claim something else (an undo that is not the exact inverse of
  the commit it names, a retraction that edited a text...) is listed with its claim, as not
  verified (``Incoming.verified``); a removal is applied only as ``quipu.sync.policy`` allows. A
  file this store's own history removed that came back because a remote's merge refused the
  removal is listed (``SyncResult.restored``, read from that merge's effect), and a merge of ours
  that refuses a removal says so in its first line, as many whole ids as fit and the rest counted.
- A remote commit whose tree holds a name git itself refuses (``quipu.sync.history``) is not
  taken, nor anything built on it: what came before it merges, nothing is pushed, and
  ``SyncResult.held_back`` names the remote's tip. ``clone`` takes what came before it likewise.
- A memory edited on both sides keeps both versions (see ``quipu.sync.policy``); the older one
  is superseded by the newer with an ordinary supersession commit, which ``quipu undo`` reverts.
- ``refs/quipu/synced/<remote>/<branch>`` records the remote tip this store last merged or
  pushed. A remote whose branch no longer contains it was rewritten (force-pushed): the sync
  refuses before changing anything, unless ``accept_rewrite`` is given.
- A remote URL or name that starts with ``-`` is refused (git would read it as an option), and
  a URL is passed to git after ``--``.
- ``clone`` makes a new store from a remote: the tip's files pass the same policy before
  anything is checked out (refused files are removed in one commit of their own), the clone
  keeps symbolic links as plain files (``core.symlinks=false``), and its hooks and index are set up.
- The search index is brought up to date before ``sync`` returns, so the prompt hook sees the
  new commits at once.
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pygit2

from quipu.store import effects
from quipu.store import githooks
from quipu.store import schema
from quipu.store import gitstore
from quipu.store import gitobj
from quipu.index import index
from quipu.sync import history, landed, merge as sync_merge
from quipu.errors import ConflictError, FatalError, NoStore
from quipu.store.store import CONFIG_NAME, Store
from quipu.store.trailers import format_message
from quipu.sync.landed import Incoming
from quipu.sync.history import Restored
from quipu.sync.policy import KeptBoth, Refusal

MAX_ATTEMPTS = 20
INCOMING_PREFIX = "refs/quipu/incoming"
SYNCED_PREFIX = "refs/quipu/synced"
DEFAULT_REMOTE = "origin"
SUBJECT_IDS = 3  # memories a sync merge's first line names at most
SUBJECT_CHARS = 100  # what `quipu log` shows of a first line (``described.first_line``)


class SyncError(ConflictError):
    """A sync that could not be done (the remote refused, was rewritten, or is unreachable)."""


@dataclass(frozen=True)
class SyncResult:
    store: str
    remote: str
    branch: str
    before: str | None
    after: str | None
    pushed: bool
    attempts: int
    incoming: list[Incoming] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    kept_both: list[KeptBoth] = field(default_factory=list)
    supersessions: list[str] = field(default_factory=list)
    restored: list[Restored] = field(default_factory=list)  # files a remote's merge kept against a removal here
    held_back: str = ""  # the remote's tip, when a commit up to it holds a name git refuses (nothing of it taken)

    def counts(self) -> dict[str, int]:
        """How many changes of each kind came in (``Incoming.counted``), and files put back."""
        out = Counter(kind for i in self.incoming for kind in i.counted())
        out.update("put-back" for _r in self.restored)
        return dict(out)

    def came(self) -> list[Incoming]:
        """The incoming commits that did something of their own, refused what others did (a merge),
        or claim what they did not do."""
        return [i for i in self.incoming if i.changes or i.refusals or not i.verified]

    def authors(self) -> list[str]:
        return sorted({i.author for i in self.came()} | {r.author for r in self.restored})

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store, "remote": self.remote, "branch": self.branch, "before": self.before,
            "after": self.after, "pushed": self.pushed, "attempts": self.attempts, "counts": self.counts(),
            "authors": self.authors(), "incoming": [i.to_json() for i in self.incoming],
            "refused": [r.to_json() for r in self.refused], "kept_both": [k.to_json() for k in self.kept_both],
            "supersessions": self.supersessions, "restored": [r.to_json() for r in self.restored],
            "held_back": self.held_back,
        }


# ---------------------------------------------------------------- remotes


def git(cwd: Path | str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git; never waits for a password prompt when nobody is at a terminal (cron, hooks)."""
    env = dict(os.environ)
    if not sys.stdin or not sys.stdin.isatty():
        env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise FatalError(f"cannot run git: {exc}\n- install git and make sure it is on PATH") from None
    if check and proc.returncode != 0:
        raise SyncError(f"`git {' '.join(args[:2])}` failed: {proc.stderr.strip() or proc.stdout.strip()}\n"
                        "- check the remote's URL (`git -C STORE remote -v`) and your access to it")
    return proc


def default_remote(repo: pygit2.Repository) -> str:
    names = list(repo.remotes.names())
    if DEFAULT_REMOTE in names:
        return DEFAULT_REMOTE
    if len(names) == 1:
        return str(names[0])
    if not names:
        raise SyncError("the store has no remote to sync with\n- run `quipu sync --set-remote URL` once")
    raise SyncError(f"the store has several remotes ({', '.join(str(n) for n in names)}) and none is called {DEFAULT_REMOTE}\n"
                    "- name one: `quipu sync REMOTE`")


def check_url(url: str) -> None:
    """Refuse a remote URL git would read as an option (``--upload-pack=...`` runs a command)."""
    if url.startswith("-") or not url.strip() or any(c in url for c in "\0\n\r"):
        raise FatalError(f"refusing the remote URL {url!r}: git would read it as an option, or it is not one URL\n"
                         "- give the remote's URL or path (write a path that starts with '-' as ./-name)")


def set_remote(store: Store, url: str, name: str = DEFAULT_REMOTE) -> None:
    check_url(url)
    if name.startswith("-"):
        raise FatalError(f"refusing the remote name {name!r}: git would read it as an option\n- choose a plain name")
    repo = store.repo
    if name in repo.remotes.names():
        repo.remotes.set_url(name, url)
    else:
        repo.remotes.create(name, url)


def _ref(prefix: str, remote: str, branch: str) -> str:
    return f"{prefix}/{remote}/{branch}"


def _fetch(store: Store, remote: str, branch: str) -> pygit2.Oid | None:
    git(store.root, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "--refmap=", "--", remote,
        f"+refs/heads/*:{INCOMING_PREFIX}/{remote}/*")
    return _target(store.repo, _ref(INCOMING_PREFIX, remote, branch))


def _target(repo: pygit2.Repository, name: str) -> pygit2.Oid | None:
    try:
        return repo.references[name].target  # type: ignore[return-value]
    except KeyError:
        return None


def _record(repo: pygit2.Repository, name: str, oid: pygit2.Oid) -> None:
    repo.references.create(name, oid, force=True)


def _check_not_rewritten(repo: pygit2.Repository, remote: str, branch: str, theirs: pygit2.Oid | None) -> None:
    """Refuse a remote branch that no longer holds what this store last merged from it or pushed."""
    last = _target(repo, _ref(SYNCED_PREFIX, remote, branch)) or _target(repo, f"refs/remotes/{remote}/{branch}")
    if last is None or last == theirs or (theirs is not None and repo.descendant_of(theirs, last)):
        return
    what = "no longer has the branch" if theirs is None else f"was rewritten (force-pushed) to {str(theirs)[:12]}"
    raise SyncError(
        f"the branch {branch} of remote {remote} {what}: it no longer contains commit {str(last)[:12]}, "
        "which this store synced last; nothing was changed here\n"
        "- if that was a mistake, push the old history back from a clone that still has it (`quipu sync` there)\n"
        f"- if it was meant, run `quipu sync {remote} --accept-rewrite`: this store's memories are merged into "
        "the new history, and nothing here is lost"
    )


def _push(store: Store, remote: str, branch: str) -> bool:
    """Push the branch; False when the remote moved meanwhile (fetch and merge again)."""
    proc = git(store.root, "push", "--porcelain", "--quiet", "--", remote, f"refs/heads/{branch}:refs/heads/{branch}",
               check=False)
    if proc.returncode == 0:
        return True
    out = proc.stdout + proc.stderr
    if "[rejected]" in out or ("[remote rejected]" in out and "lock" in out):
        return False  # the remote moved, or another clone's push holds its ref lock
    raise SyncError(f"pushing to {remote} failed: {(proc.stderr or proc.stdout).strip()}\n"
                    f"- check your access to the remote, or run `quipu sync {remote} --no-push`")


# ---------------------------------------------------------------- merging


class _Merged:
    """What the landed merge did (filled in by the tree builder the branch swap finally used)."""

    def __init__(self) -> None:
        self.parent: pygit2.Oid | None = None
        self.plan: sync_merge.MergePlan | None = None


def _merge(store: Store, remote: str, theirs_id: pygit2.Oid) -> tuple[list[Incoming], sync_merge.MergePlan | None]:
    repo = store.repo
    theirs: pygit2.Commit = repo[theirs_id]  # type: ignore[assignment]
    merged = _Merged()

    def build(parent: pygit2.Commit) -> tuple[pygit2.Oid, list[str]]:
        merged.parent, merged.plan = parent.id, None
        if parent.id == theirs.id or repo.descendant_of(parent.id, theirs.id):
            return parent.tree.id, []
        merged.plan = sync_merge.plan(repo, parent, theirs)
        return merged.plan.tree, merged.plan.touched

    def make_commit(parent: pygit2.Commit, tree: pygit2.Oid) -> pygit2.Oid | None:
        plan = merged.plan
        if plan is None:
            return None
        if tree == theirs.tree.id and repo.descendant_of(theirs.id, parent.id):
            return theirs.id  # a fast-forward: the remote's own commit
        body = "\n".join([*(f"Merged {path}: both sides changed it ("
                            + ("line by line" if path == schema.PROFILE_PATH else "one side only its aliases") + ")"
                            for path in plan.merged),
                          *(f"Refused {r.line()}" for r in plan.refused)])
        # What this merge keeps that the remote removed, said where `quipu log` shows it on every clone.
        kept = [r.path for r in plan.refused
                if effects.entry_at(parent.tree, r.path) and not effects.entry_at(theirs.tree, r.path)]
        summary = _subject(remote, len(kept), sorted({history.memory_of(p) for p in kept}))
        message = format_message(summary, {"Quipu-Action": "sync", "Quipu-Memory": "store", "Quipu-Remote": remote},
                                 body=body)
        sig = gitstore.signature(repo)
        return repo.create_commit(None, sig, sig, message, tree, [parent.id, theirs.id])

    gitstore.land(repo, build, make_commit)
    if merged.plan is None or merged.parent is None:
        return [], None
    return landed.incoming(repo, theirs.id, merged.parent, {r.path for r in merged.plan.refused},
                              repo[merged.plan.tree]), merged.plan  # type: ignore[arg-type]


def _subject(remote: str, kept: int, ids: list[str]) -> str:
    """A sync merge's first line: the remote, and the memories whose removal it refused, as many
    whole ids as fit in what `quipu log` shows of a line, the rest counted (the body lists each file)."""
    head = f"quipu: sync from {remote}"
    if not kept:
        return head
    head += f"; refused removing {kept} file(s)"
    for shown_ids in range(min(len(ids), SUBJECT_IDS), 0, -1):
        more = len(ids) - shown_ids
        line = f"{head} of {', '.join(ids[:shown_ids])}" + (f" and {more} more" if more else "")
        if len(line) <= SUBJECT_CHARS:
            return line
    return head


def _keep_both(store: Store, remote: str, kept: list[KeptBoth]) -> list[str]:
    made = []
    for item in kept:
        if any(e.get("action") == "supersede" and e.get("by") == item.memory for _n, e in store.events(item.copy)):
            continue  # another clone already decided this pair
        made.append(store.supersede(
            item.copy, item.memory,
            reason=f"edited on two machines; the {item.newer} edit is newer. Undo this commit to keep both active.",
            extra_trailers={"Quipu-Remote": remote},
        ))
    return made


def sync(store: Store, remote: str | None = None, *, push: bool = True, accept_rewrite: bool = False,
         attempts: int = MAX_ATTEMPTS) -> SyncResult:
    """Fetch, merge and push (see the module contract); returns what came in and what was refused."""
    repo = store.repo
    name = remote or default_remote(repo)
    if name not in repo.remotes.names():
        raise SyncError(f"the store has no remote called {name!r}\n- run `quipu sync --set-remote URL` "
                        f"(or `git -C {store.root} remote add {name} URL`)")
    incoming: list[Incoming] = []
    refused: list[Refusal] = []
    kept: list[KeptBoth] = []
    supersessions: list[str] = []
    held_back = ""
    with gitstore.writer_lock(repo):
        ref = gitstore.branch_ref(repo)
        branch = ref.name.removeprefix("refs/heads/")
        before = str(ref.target)
        pushed = False
        for attempt in range(1, attempts + 1):
            theirs = _fetch(store, name, branch)
            if not accept_rewrite:
                _check_not_rewritten(repo, name, branch, theirs)
            accept_rewrite = False
            take = theirs
            if theirs is not None:
                # A commit whose tree git refuses never enters the store: what came before it merges.
                take, held = history.takeable(repo, theirs, pygit2.Oid(hex=str(gitstore.branch_ref(repo).target)))
                held_back = str(theirs) if held else ""
                refused += held
            if take is not None:
                came, plan = _merge(store, name, take)
                incoming += came
                if plan is not None:
                    refused += plan.refused
                    kept += plan.kept_both
                    supersessions += _keep_both(store, name, plan.kept_both)
                _record(repo, _ref(SYNCED_PREFIX, name, branch), take)
                _record(repo, f"refs/remotes/{name}/{branch}", take)
            head = pygit2.Oid(hex=str(gitstore.branch_ref(repo).target))
            if not push or head == theirs or held_back:
                break  # a remote holding a commit not taken would refuse the push (not a fast-forward)
            if _push(store, name, branch):
                pushed = True
                _record(repo, _ref(SYNCED_PREFIX, name, branch), head)
                _record(repo, f"refs/remotes/{name}/{branch}", head)
                break
            time.sleep(random.uniform(0.01, min(1.0, 0.02 * 2 ** attempt)))
        else:
            raise SyncError(f"the remote {name} kept moving during {attempts} attempts; what came in so far "
                            "is merged here, nothing of this store was pushed\n- run `quipu sync` again")
        after = str(gitstore.branch_ref(repo).target)
        restored = history.put_back(repo, pygit2.Oid(hex=before), pygit2.Oid(hex=after)) if after != before else []
    index.ensure_fresh(store)
    return SyncResult(str(store.root), name, branch, before, after, pushed, attempt, incoming, refused, kept,
                      supersessions, restored, held_back)


# ---------------------------------------------------------------- cloning


class Cloned(NamedTuple):
    store: Store
    refused: list[Refusal]
    held_back: str = ""  # the remote's tip, when a commit up to it holds a name git refuses (not taken)


def clone(url: str, path: Path, *, hooks: bool = True) -> Cloned:
    """A new store at ``path`` from the store at ``url`` (see the module contract)."""
    path = Path(path).expanduser().absolute()
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise NoStore(f"{path} exists and is not empty\n- choose a new or empty folder for the clone")
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    check_url(url)
    git(path.parent, "clone", "--quiet", "--no-checkout", "-c", "core.symlinks=false", "--origin", DEFAULT_REMOTE,
        "--", url, str(path))
    try:
        return _set_up_clone(url, path, hooks=hooks)
    except BaseException:
        # Only the clone just made is removed; a store is never touched here.
        shutil.rmtree(path / ".git", ignore_errors=True)
        if not existed and not any(path.iterdir()):
            path.rmdir()
        raise


def _clone_tip(url: str, path: Path, repo: pygit2.Repository) -> pygit2.Commit:
    """The remote's branch; a bare remote whose HEAD names a branch it lacks still has one."""
    if repo.head_is_unborn:
        branches = [b for b in repo.branches.remote if b != f"{DEFAULT_REMOTE}/HEAD"]
        wanted = f"{DEFAULT_REMOTE}/main" if f"{DEFAULT_REMOTE}/main" in branches else (
            branches[0] if len(branches) == 1 else None)
        if wanted is None:
            raise NoStore(f"{url} holds no store branch to clone\n"
                          f"- run `quipu init {path}` and then `quipu sync --set-remote {url}` there")
        remote_branch = repo.branches.remote[wanted]
        local = repo.branches.local.create(wanted.split("/", 1)[1], repo[remote_branch.target])  # type: ignore[arg-type]
        local.upstream = remote_branch
        repo.set_head(local.name)
    return repo.head.peel(pygit2.Commit)


def _set_up_clone(url: str, path: Path, *, hooks: bool) -> Cloned:
    repo = gitstore.open_repo(path)
    tip = _clone_tip(url, path, repo)
    branch = gitstore.branch_ref(repo).name.removeprefix("refs/heads/")
    take, held = history.takeable(repo, tip.id, None) if history.fsck_finds_names(path) else (tip.id, [])
    if take is None:
        raise NoStore(f"{url} cannot be cloned: {held[0].path} in the tree of its commit {held[0].commit[:12]} is "
                      f"{history.REASON}, and every commit of its branch is built on it\n"
                      "- remove that commit from the remote's history, then clone again")
    held_back = str(tip.id) if held else ""
    if held:  # what came before the commit git refuses, as a sync would take it
        tip = repo[take]  # type: ignore[assignment]
        gitstore.branch_ref(repo).set_target(take, "quipu: clone")
        _record(repo, f"refs/remotes/{DEFAULT_REMOTE}/{branch}", take)
    if CONFIG_NAME not in tip.tree:
        raise NoStore(f"{url} is a git repository but not a quipu store (no {CONFIG_NAME})\n"
                      "- clone a store made with `quipu init`")
    refused = []
    for rel, (oid, mode) in sync_merge.entries(tip.tree).items():
        data = repo[oid].data if mode != 0o160000 else b""  # type: ignore[attr-defined]
        # A new clone takes the store's own settings as they are; everything else as a sync would.
        reason = schema.refusal(rel, mode, data, remote=False)
        if reason:
            refused.append(Refusal(rel, reason))
    if refused:
        tree = pygit2.Oid(hex=gitobj.build_tree(gitobj.Objects(repo.path), str(tip.tree.id),
                                                {r.path: None for r in refused}))
        sig = gitstore.signature(repo)
        message = format_message(f"quipu: clone refused {len(refused)} file(s) from {DEFAULT_REMOTE}",
                                 {"Quipu-Action": "refuse", "Quipu-Memory": "store", "Quipu-Remote": DEFAULT_REMOTE},
                                 body="\n".join(f"Refused {r.line()}" for r in refused))
        gitstore.branch_ref(repo).set_target(repo.create_commit(None, sig, sig, message, tree, [tip.id]),
                                             "quipu: clone")
    git(path, "reset", "--quiet", "--hard", "HEAD")
    _record(repo, _ref(SYNCED_PREFIX, DEFAULT_REMOTE, branch), tip.id)
    store = Store(path, "clone")
    store.check()
    if hooks:
        githooks.install(store.root)
    index.ensure_fresh(store)
    return Cloned(store, held + refused, held_back)
