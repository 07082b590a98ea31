"""git's automatic garbage collection for a store, which quipu's writes (loose objects, as
libgit2's) never run.

Contract:
- ``maybe_pack(repo)`` runs after a quipu write has landed, never on the prompt path. It costs a
  listing of two folders: like ``git gc --auto``, it estimates the loose objects from
  ``objects/17`` (one of 256 fan-out folders) and counts the packs. Past git's default limits
  (``LOOSE_LIMIT`` loose objects, ``PACK_LIMIT`` packs) it starts ``git gc --auto`` detached.
- The collection runs under the store's writer lock (``<gitdir>/quipu.lock``): the lock is taken
  without waiting here and handed to the git process, which holds it until it and its children
  end, so no quipu write runs while objects are packed and pruned; a busy lock means another
  writer is at work, and the next write tries again. At most one start per
  ``START_EVERY_SECONDS`` (the mtime of ``<gitdir>/quipu-gc.started``).
- What runs is fixed here, not by the store: the absolute git found on PATH, a clean environment
  (no ``GIT_*`` variables, no system or global git config), and ``-c`` flags that switch off what
  config could otherwise start (hooks, fsmonitor) and pin the limits, so a store that sets
  ``gc.auto = 0`` is still packed. git is not detached again (``gc.autoDetach=false``): a
  detached git writes ``gc.log`` and stops collecting for a day after any warning.
- ``write_blobs(gitdir, datas)`` stores many blobs at once for a bulk write (call it under the
  writer lock): one ``git fast-import`` (the same fixed git, environment and flags) writes them
  into one pack, not one loose file each. It says whether that run succeeded; when it did not
  (no git, a failed run) the caller writes them loose (``quipu.store.gitobj.build_tree`` does,
  from ``BULK_BLOBS`` new blobs on).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time

LOOSE_LIMIT = 6700  # git's gc.auto default
PACK_LIMIT = 50  # git's gc.autoPackLimit default
START_EVERY_SECONDS = 60.0
MARK_NAME = "quipu-gc.started"

_FLAGS = (
    f"gc.auto={LOOSE_LIMIT}",
    f"gc.autoPackLimit={PACK_LIMIT}",
    "gc.autoDetach=false",
    "gc.pruneExpire=2.weeks.ago",
    "core.hooksPath=/dev/null",  # no pre-auto-gc hook
    "core.fsmonitor=false",
    "maintenance.auto=false",
)


def loose_estimate(gitdir: str) -> int:
    """Loose objects as ``git gc --auto`` estimates them: those in ``objects/17``, times 256."""
    try:
        names = os.listdir(os.path.join(gitdir, "objects", "17"))
    except OSError:
        return 0
    return 256 * sum(1 for name in names if len(name) == 38)


def pack_count(gitdir: str) -> int:
    folder = os.path.join(gitdir, "objects", "pack")
    try:
        names = set(os.listdir(folder))
    except OSError:
        return 0
    return sum(1 for name in names if name.endswith(".pack") and name[:-5] + ".keep" not in names)


def needs_packing(gitdir: str) -> bool:
    # git's own test: more than gc.auto/256 (rounded up) objects in the sample folder.
    return loose_estimate(gitdir) > 256 * -(-LOOSE_LIMIT // 256) or pack_count(gitdir) > PACK_LIMIT


def maybe_pack(gitdir: str, writer_lock: str) -> bool:
    """Start a detached ``git gc --auto`` holding ``writer_lock`` (the store's ``flock`` file) if
    the store needs it; True if started."""
    if not needs_packing(gitdir):
        return False
    mark = os.path.join(gitdir, MARK_NAME)
    with contextlib.suppress(OSError):
        if time.time() - os.stat(mark).st_mtime < START_EVERY_SECONDS:
            return False
    import shutil  # past git's limits only: a write that needs no packing does not load them
    import subprocess

    git = shutil.which("git")
    if git is None:
        return False
    git = os.path.abspath(git)
    try:
        fd = os.open(writer_lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a writer is at work (this process's own, too): the next write tries again
        with open(mark, "w", encoding="utf-8"):
            pass
        env = _git_env(git)
        argv = [git, "--git-dir", gitdir]
        for flag in _FLAGS:
            argv += ["-c", flag]
        subprocess.Popen(
            [*argv, "gc", "--auto", "--quiet"],
            cwd=gitdir, env=env, pass_fds=(fd,), start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # the git process keeps the lock through its own copy of the descriptor


BULK_BLOBS = 256  # from this many new blobs on, one pack instead of a loose file each


def _git_env(git: str) -> dict[str, str]:
    return {
        "PATH": os.pathsep.join(dict.fromkeys([os.path.dirname(git), "/usr/bin", "/bin"])),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }


def write_blobs(gitdir: str, datas: list[bytes]) -> bool:
    """Store ``datas`` as blobs in one pack through one ``git fast-import``; False when that could not
    be done (no git, a failed run), and the caller writes them as loose objects."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return False
    git = os.path.abspath(git)
    argv = [git, "--git-dir", gitdir, *(x for flag in _FLAGS for x in ("-c", flag)),
            "-c", "fastimport.unpackLimit=100", "fast-import", "--quiet", "--depth=0"]
    try:
        with subprocess.Popen(argv, cwd=gitdir, env=_git_env(git), stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as child:
            assert child.stdin is not None
            try:
                for start in range(0, len(datas), 256):  # one write of 256 blobs' commands
                    child.stdin.write(b"".join(b"blob\ndata %d\n%s\n" % (len(data), data)
                                               for data in datas[start:start + 256]))
                child.stdin.close()
            except BrokenPipeError:
                pass
            return child.wait() == 0
    except (OSError, subprocess.SubprocessError):
        return False
