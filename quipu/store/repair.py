"""What a crash of the machine or another program can leave in a store's git repository, and the repair.

A power cut during a write can leave files that were never flushed: a loose object cut short or
empty, an empty branch ref. Another tool can leave a corrupt ``.git/index``. Contract:
- ``diagnose(root)`` names each such problem (``Finding``); it changes nothing. It runs
  ``git fsck`` for the objects, so it reads every object once. A tree whose entry has a name git
  refuses (``.git``, ``..``) is a problem only when a branch of the store reaches it; one outside
  every branch is no part of the store: a note (kind ``outside``) when a remote commit `quipu
  sync` fetched and did not take holds it, and nothing at all when it only came with the clone
  (which said at the time what it did not take).
- ``repair(root)`` mends what it can, moving nothing out of existence: a damaged file is moved
  aside into ``<gitdir>/quipu-damaged/``, never deleted. An empty or garbled branch ref is set back
  to the newest commit its reflog names that is still whole. A corrupt git index is rebuilt from
  HEAD (``git read-tree``), then refreshed. Damaged objects are moved aside and written again from
  the worktree (every file's blob, and the trees of the worktree as it stands), which holds every
  committed memory once the write that was cut short is in it. A write that could not finish
  (its writer killed, or stopped by a full disk while git's index was written) leaves its journal:
  it is settled as the next write would settle it (the worktree and git's index brought in line
  with the branch for its paths). A stale git lock (``index.lock``, ``HEAD.lock``, the branch's
  ``.lock``... that no live process holds: on Linux, no process has it open and no git process
  works in the repository, and it is older than ``STALE_SECONDS``; elsewhere, older than
  ``UNKNOWN_HOLDERS_SECONDS``) is a finding, and moved aside; a lock that is not stale is a note
  (kind ``busy``: a write in progress, with the lock's age). Each step runs once the steps it needs
  are done: stale locks first (git's index cannot be rebuilt, nor a write settled, behind one),
  then the branch ref, the objects, git's index, and last the unfinished write. Returns what it
  did; a step that could not do its work says so rather than claiming it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

from quipu.prompt import locate

_OID = re.compile(r"\b[0-9a-f]{40}\b")
_BAD_OBJECT_FILE = re.compile(r"object file (\S+) is empty|(\S+/objects/[0-9a-f]{2}/[0-9a-f]{38})")


class Finding(NamedTuple):
    kind: str  # "ref", "index", "objects", "write", "lock"; a kind in NOTES is a note, not a problem
    detail: str


NOTES = frozenset({"outside", "busy"})


class Step(NamedTuple):
    """One thing ``repair`` did, or tried to do and could not (``done`` False, ``detail`` says why)."""
    done: bool
    detail: str


def _git(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=600, check=False)


def _gitdir(root: Path) -> Path:
    found = locate.git_dir(str(root))
    return Path(found) if found else root / ".git"


def _branch_ref(gitdir: Path) -> str | None:
    try:
        head = (gitdir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    ref = head[5:].strip() if head.startswith("ref: ") else ""
    # HEAD is a file of the repository: a name that leaves refs/ (``refs/heads/../../x``) names no branch,
    # so no lock is looked for, and nothing moved aside, outside the git folder.
    return ref if ref.startswith("refs/") and ".." not in ref.split("/") else None


def _ref_problem(root: Path, gitdir: Path) -> str | None:
    ref = _branch_ref(gitdir)
    if ref is None:
        return None
    path = gitdir / ref
    if not path.exists():
        return None  # packed, or no commit yet
    text = path.read_bytes()
    if _OID.fullmatch(text.decode("ascii", "replace").strip()):
        return None
    return f"{ref} is {'empty' if not text.strip() else 'garbled'} (a write cut short by a crash)"


def diagnose(root: Path) -> list[Finding]:
    gitdir = _gitdir(root)
    found = []
    problem = _ref_problem(root, gitdir)
    if problem:
        found.append(Finding("ref", problem))
    listed = _git(root, "ls-files", "--stage")
    index = gitdir / "index"
    if listed.returncode != 0:
        found.append(Finding("index", f"git's index is unreadable: {listed.stderr.strip().splitlines()[-1:] or ['?']}"))
    elif not index.is_file() and not problem:  # git reads a missing index as empty: every file would look removed
        found.append(Finding("index", "git's index is " + ("missing" if not os.path.lexists(index) else "not a file")))
    if not problem:
        # Not through git's index: a corrupt one is its own finding, not the objects'.
        fsck = _git(root, "fsck", "--no-dangling", "--no-progress",
                    env={**os.environ, "GIT_INDEX_FILE": str(gitdir / "quipu-no-index")})
        lines = [line for line in (fsck.stdout + fsck.stderr).splitlines() if line.strip()]
        outside = _outside_history(root, lines)
        lines = [line for line in lines if line not in outside]
        if lines or (fsck.returncode != 0 and not outside):
            found.append(Finding("objects", "; ".join(lines[:5]) + (f" (and {len(lines) - 5} more)" if len(lines) > 5 else "")))
        fetched = _fetched_by_sync(root, outside)  # what a clone brought and did not take is no note
        if fetched:
            found.append(Finding("outside", f"{len(fetched)} tree(s) outside the store's history hold a name git "
                                 "refuses (fetched with a remote commit that `quipu sync` did not take); they are "
                                 "no part of the store, and git's gc removes them in time once no fetched branch holds them"))
    unfinished = _unfinished_write(gitdir)
    if unfinished:
        found.append(Finding("write", unfinished))
    for lock, why, stale in _locks(root):
        if stale:
            found.append(Finding("lock", f"{lock} is stale ({why}); git commands in this store fail while it is "
                                         f"there: run `quipu doctor --repair`, or `rm -- {lock}`"))
        else:
            found.append(Finding("busy", f"a write is in progress ({lock.name}, {why})"))
    return found


# Lock files git leaves when it is killed; each blocks every later git command that needs it.
_LOCKS = ("index.lock", "HEAD.lock", "config.lock", "packed-refs.lock")
STALE_SECONDS = 5.0  # a git command holds its lock for milliseconds; an editor in `git commit` is a live holder
UNKNOWN_HOLDERS_SECONDS = 600.0  # where processes cannot be listed (no /proc), only an old lock is stale


def _holders(lock: Path, root: Path, gitdir: Path) -> list[int] | None:
    """Live processes that may hold ``lock``: those with it open, and git processes working in this
    repository; None when processes cannot be listed here."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    places = (str(root.resolve()), str(gitdir.resolve()))
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode("utf-8", "replace")
            cwd = os.readlink(entry / "cwd") if os.path.basename(argv0) == "git" else ""
            if cwd and any(cwd == p or cwd.startswith(p + os.sep) for p in places):
                out.append(int(entry.name))
                continue
            if any(os.readlink(fd) == str(lock) for fd in (entry / "fd").iterdir()):
                out.append(int(entry.name))
        except OSError:
            continue  # gone, or another user's
    return out


def stale_locks(root: Path) -> list[tuple[Path, str]]:
    """git lock files in the store's repository that no live process holds: (path, why)."""
    return [(lock, why) for lock, why, stale in _locks(root) if stale]


def _locks(root: Path) -> list[tuple[Path, str, bool]]:
    """git lock files in the store's repository: (path, its age and holders, whether it is stale)."""
    from quipu.store import journal

    gitdir = _gitdir(root)
    branch = _branch_ref(gitdir)
    names = [*_LOCKS, f"{branch}.lock"] if branch else list(_LOCKS)
    writer = journal.unfinished_write(str(gitdir)) is None and (gitdir / journal.JOURNAL_NAME).exists()
    out = []
    for name in names:
        lock = gitdir / name
        try:
            age = time.time() - lock.lstat().st_mtime
        except OSError:
            continue
        old = f"{max(age, 0.0):,.0f} s old"
        holders = _holders(lock, root, gitdir)
        if holders:
            held = ", ".join(map(str, holders[:3])) + (" ..." if len(holders) > 3 else "")
            out.append((lock, f"{old}, held by process {held}", False))
        elif holders is None:
            stale = age >= UNKNOWN_HOLDERS_SECONDS
            out.append((lock, f"it is {old}" if stale else
                        f"{old}; stale once {UNKNOWN_HOLDERS_SECONDS:.0f} s old", stale))
        elif writer:
            out.append((lock, f"{old}, taken by a quipu write still running", False))
        elif age >= STALE_SECONDS:
            out.append((lock, f"it is {old} and no process holds it", True))
        else:
            out.append((lock, f"{old}; no process holds it, so it is stale once {STALE_SECONDS:.0f} s old", False))
    return out


# fsck's findings about a tree entry's name (``.git``, ``..``...): what `quipu sync` refuses to take.
NAME_FINDING = re.compile(r"^(?:warning|error) in tree ([0-9a-f]{40}): "
                           r"(?:hasDot|hasDotdot|hasDotgit|emptyName|fullPathname|largePathname):")


def _outside_history(root: Path, lines: list[str]) -> set[str]:
    """The fsck lines about a tree entry's name whose tree is reachable from no branch of the store."""
    named = {line: m.group(1) for line in lines if (m := NAME_FINDING.match(line))}
    if not named:
        return set()
    listed = _git(root, "rev-list", "--objects", "--no-object-names", "--branches")
    if listed.returncode != 0:
        return set()
    reachable = set(listed.stdout.split())
    return {line for line, oid in named.items() if oid not in reachable}


def _fetched_by_sync(root: Path, outside: set[str]) -> set[str]:
    """Of the fsck lines ``outside`` names, those whose tree a fetch of `quipu sync` holds
    (``refs/quipu/incoming/``) beyond what the branches hold."""
    if not outside:
        return set()
    listed = _git(root, "rev-list", "--objects", "--no-object-names", "--glob=refs/quipu/incoming/*", "--not",
                  "--branches")
    fetched = set(listed.stdout.split()) if listed.returncode == 0 else set()
    return {line for line in outside if (m := NAME_FINDING.match(line)) and m.group(1) in fetched}


def _unfinished_write(gitdir: Path) -> str | None:
    from quipu.store import journal

    pending = journal.unfinished_write(str(gitdir))
    if pending is None:
        return None
    paths = [p for p in pending.get("paths", []) if isinstance(p, str)]
    named = ", ".join(paths[:3]) + (f" (and {len(paths) - 3} more)" if len(paths) > 3 else "")
    how = "its journal cannot be read" if pending.get("unreadable") else \
        f"stopped at step {str(pending.get('step'))[:40]!r}, its process is gone"
    return f"a write did not finish ({how})" + (f"; the worktree and git's index may not match HEAD for {named}" if paths else "")


def _aside(gitdir: Path, path: Path) -> None:
    target = gitdir / "quipu-damaged" / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}" / path.relative_to(gitdir)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), str(target))


def _repair_ref(root: Path, gitdir: Path) -> Step:
    ref = _branch_ref(gitdir)
    assert ref is not None
    try:
        log = (gitdir / "logs" / ref).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        log = []
    for line in reversed(log):
        parts = line.split()
        for oid in reversed(parts[:2]):
            if _OID.fullmatch(oid) and _git(root, "cat-file", "-e", f"{oid}^{{commit}}").returncode == 0 \
                    and _git(root, "rev-parse", "--verify", "-q", f"{oid}^{{tree}}").returncode == 0:
                _aside(gitdir, gitdir / ref)
                (gitdir / ref).write_text(oid + "\n", encoding="ascii")
                return Step(True, f"{ref} set back to {oid[:12]}, the newest whole commit its reflog names")
    return Step(False, f"{ref} could not be restored: no whole commit in its reflog")


def _repair_index(root: Path, gitdir: Path) -> Step:
    if os.path.lexists(gitdir / "index"):
        _aside(gitdir, gitdir / "index")
    _git(root, "read-tree", "HEAD")
    _git(root, "update-index", "-q", "--refresh")
    return Step(True, "git's index rebuilt from HEAD (the damaged one is kept in quipu-damaged/)")


def _repair_objects(root: Path, gitdir: Path, detail: str) -> Step:
    fsck = _git(root, "fsck", "--no-dangling", "--no-progress")
    moved = 0
    for match in _BAD_OBJECT_FILE.finditer(fsck.stdout + fsck.stderr):
        path = Path(match.group(1) or match.group(2))
        path = path if path.is_absolute() else root / path
        if path.is_file() and gitdir in path.parents:
            _aside(gitdir, path)
            moved += 1
    for oid in set(_OID.findall(fsck.stdout + fsck.stderr)):  # objects git could not read: loose copies aside
        loose = gitdir / "objects" / oid[:2] / oid[2:]
        if loose.is_file() and _git(root, "cat-file", "-t", oid).returncode != 0:
            _aside(gitdir, loose)
            moved += 1
    # Write every worktree file's blob and the worktree's trees again, through a scratch index.
    scratch = gitdir / f"quipu-repair.{os.getpid()}.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(scratch)}
    try:
        _git(root, "add", "-A", "--", ".", ":(exclude).cache", env=env)
        _git(root, "write-tree", env=env)
    finally:
        if scratch.exists():
            scratch.unlink()
    return Step(True, f"{moved} damaged object file(s) moved aside; objects written again from the worktree")


def repair(root: Path) -> list[Step]:
    gitdir = _gitdir(root)
    done = []
    # Stale locks first: behind one, git's index can be neither rebuilt nor brought in line.
    for lock, why in stale_locks(root):
        _aside(gitdir, lock)
        done.append(Step(True, f"the stale {lock.name} moved aside into quipu-damaged/ ({why})"))
    for finding in diagnose(root):
        if finding.kind == "ref":
            done.append(_repair_ref(root, gitdir))
    # Objects first: rebuilding git's index from HEAD needs HEAD's trees.
    for finding in sorted(diagnose(root), key=lambda f: f.kind != "objects"):
        if finding.kind == "objects":
            done.append(_repair_objects(root, gitdir, finding.detail))
        elif finding.kind == "index":
            done.append(_repair_index(root, gitdir))
    # Last: settling a write brings the worktree and git's index in line with the branch as repaired.
    if any(finding.kind == "write" for finding in diagnose(root)):
        done.append(_finish_write(root, gitdir))
    return done


def _finish_write(root: Path, gitdir: Path) -> Step:
    from quipu.store import gitstore

    paths = gitstore.finish_unfinished_write(root)
    if _unfinished_write(gitdir) is None:
        return Step(True, f"the unfinished write was settled: {len(paths)} path(s) brought in line with HEAD")
    held = [f"{lock.name}, {why}" for lock, why, _stale in _locks(root) if lock.name == "index.lock"]
    return Step(False, "the unfinished write could not be settled: " +
                (f"git's index is locked ({held[0]}); run `quipu doctor --repair` again once it is gone" if held
                 else "its journal is still there; run `quipu doctor --repair` again"))
