"""The tree of git's revert of one commit on a tip, with paths kept and files added (libgit2)."""
from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping

import pygit2

from quipu.errors import ConflictError
from quipu.store.trees import check_path


def revert_tree(repo: pygit2.Repository, sha: str, parent: str, kept: Collection[str],
                added: Mapping[str, bytes]) -> tuple[str, list[str]]:
    """(the tree of reverting ``sha`` on the commit ``parent``, the paths it changes).

    ``kept`` paths stay as ``parent`` has them; ``added`` files are added. A merge or root commit,
    or a revert that conflicts, is refused."""
    head: pygit2.Commit = repo[parent]  # type: ignore[assignment]
    target = repo[sha]
    if len(target.parents) != 1:  # type: ignore[attr-defined]
        raise ConflictError(f"commit {sha[:12]} is a merge or root commit; quipu cannot undo it")
    index = repo.revert_commit(target, head)  # type: ignore[arg-type]
    for path in kept:
        if index.conflicts is not None:
            with contextlib.suppress(KeyError):
                del index.conflicts[path]
        try:
            item = head.tree[path]
            index.add(pygit2.IndexEntry(path, item.id, item.filemode))
        except KeyError:
            with contextlib.suppress(OSError, KeyError):
                index.remove(path)
    for path, data in added.items():
        check_path(path)
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.enums.FileMode.BLOB))
    if index.conflicts is not None and list(index.conflicts):
        paths = sorted({(c[1] or c[0] or c[2]).path for c in index.conflicts})
        raise ConflictError(
            f"undoing {sha[:12]} conflicts with later changes to {', '.join(paths)}\n"
            "- undo the later commits first (see `quipu log`), or edit the memory by hand"
        )
    tree_id = index.write_tree(repo)
    changed = [
        d.delta.old_file.path if d.delta.status_char() == "D" else d.delta.new_file.path
        for d in repo.diff(head.tree, repo[tree_id])  # type: ignore[call-overload]  # pygit2's stubs: Object, not Tree
    ]
    return str(tree_id), changed
