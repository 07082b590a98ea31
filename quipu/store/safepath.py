"""Paths inside a store that quipu may follow: real folders and regular files, never a symlink.

A store's committed tree is someone else's input, and git checks a committed symlink out as a
symlink, so a store could point ``.cache``, ``.cache/sessions`` or a shard folder
``memories/<xx>`` anywhere on the machine. Contract:
- ``real_dir(root, rel)`` returns ``root/rel`` after checking, with ``lstat``, that it and each
  folder between it and ``root`` is a real folder (``create`` makes missing ones); anything else
  raises ``UnsafeStore`` naming the path and how to remove it.
- ``worktree_path(root, rel)`` is the same check for a file quipu writes into the worktree: every
  folder above it is real, and the file itself is not a symlink or a special file.
- ``cache_dir(root)`` is ``root/.cache`` checked as a real folder whose entries (and those of its
  sub-folders, one level down) are regular files or real folders only.
- ``special_entries(repo)`` lists the committed paths of HEAD's tree that are symlinks or
  submodules (``quipu doctor`` reports them; the pre-commit hook refuses them).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from quipu.errors import UnsafeStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pygit2

CACHE = ".cache"
# git's modes of a symlink and a submodule (pygit2.enums.FileMode.LINK, .COMMIT): written out so
# that finding the cache, on every search, never imports pygit2.
LINK_MODE = 0o120000
SUBMODULE_MODE = 0o160000


def _refuse(root: Path, rel: str, what: str) -> UnsafeStore:
    return UnsafeStore(
        f"refusing to use {root / rel}: it is {what}, and quipu never follows a path out of the store\n"
        f"- remove it: `git -C {root} rm --cached -r -- {rel}; rm -r -- {root / rel}` (then commit), "
        f"and quipu will make a real one"
    )


def _kind(mode: int) -> str | None:
    """None for a real folder; otherwise what the entry is."""
    if stat.S_ISDIR(mode):
        return None
    return "a symlink" if stat.S_ISLNK(mode) else "a file, not a folder"


def real_dir(root: Path, rel: str, *, create: bool = False) -> Path:
    here = Path(root)
    done = []
    for part in rel.split("/"):
        done.append(part)
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            if not create:
                return Path(root) / rel
            try:
                os.mkdir(here)
            except FileExistsError:
                pass
            mode = os.lstat(here).st_mode
        what = _kind(mode)
        if what:
            raise _refuse(Path(root), "/".join(done), what)
    return here


def worktree_path(root: Path, rel: str, checked: set[str] | None = None, *, folders_only: bool = False) -> str:
    """``checked``: folders already found real by this write (each is checked once per write);
    ``folders_only``: the file itself is not looked at (the caller opens it so that nothing there
    is followed or written through)."""
    parent, _, _name = rel.rpartition("/")
    if parent and (checked is None or parent not in checked):
        real_dir(root, parent)
        if checked is not None:
            checked.add(parent)
    full = os.path.join(root, rel)
    if folders_only:
        return full
    try:
        mode = os.lstat(full).st_mode
    except FileNotFoundError:
        return full
    if not stat.S_ISREG(mode):
        raise _refuse(Path(root), rel, "a symlink" if stat.S_ISLNK(mode) else "not a regular file")
    return full


def _check_entries(root: Path, folder: Path, rel: str, depth: int) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                if depth > 0:
                    _check_entries(root, Path(entry.path), f"{rel}/{entry.name}", depth - 1)
            elif not stat.S_ISREG(mode):
                raise _refuse(root, f"{rel}/{entry.name}", "a symlink" if stat.S_ISLNK(mode) else "a special file")


def cache_dir(root: Path) -> Path:
    folder = real_dir(Path(root), CACHE, create=True)
    _check_entries(Path(root), folder, CACHE, 1)
    return folder


def special_entries(repo: pygit2.Repository) -> list[str]:
    """Committed symlinks and submodules in HEAD's tree, as 'path (kind)'."""
    import pygit2

    try:
        tree = repo.head.peel(pygit2.Tree)
    except (pygit2.GitError, KeyError, ValueError):
        return []
    out: list[str] = []

    def walk(tree: pygit2.Tree, prefix: str) -> None:
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.filemode == LINK_MODE:
                out.append(f"{path} (symlink)")
            elif entry.filemode == SUBMODULE_MODE:
                out.append(f"{path} (submodule)")
            elif entry.type_str == "tree":
                walk(repo[entry.id], path + "/")  # type: ignore[arg-type]
            if path == CACHE or path.startswith(CACHE + "/"):
                if entry.type_str == "blob" and entry.filemode != LINK_MODE:
                    out.append(f"{path} (committed cache file)")

    walk(tree, "")
    return out
