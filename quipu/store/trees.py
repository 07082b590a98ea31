"""Git trees built from a set of path changes, without git's shared index."""
from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import pygit2

from quipu.errors import ConflictError, InvalidMemory, NotFound
from quipu.store.packing import write_blobs

FILEMODE_BLOB = pygit2.enums.FileMode.BLOB if hasattr(pygit2, "enums") else pygit2.GIT_FILEMODE_BLOB
FILEMODE_TREE = pygit2.enums.FileMode.TREE if hasattr(pygit2, "enums") else pygit2.GIT_FILEMODE_TREE


def tree_with(
    repo: pygit2.Repository, tree: pygit2.Tree | None, parts: list[str], blob: pygit2.Oid | None
) -> pygit2.Oid | None:
    """Copy-on-write of the trees along one path; returns None when the tree ends up empty."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    name = parts[0]
    if len(parts) == 1:
        if blob is None:
            if tree is not None and name in tree:
                builder.remove(name)
        else:
            builder.insert(name, blob, FILEMODE_BLOB)
    else:
        sub = None
        if tree is not None and name in tree:
            entry = tree[name]
            sub = repo[entry.id] if entry.type_str == "tree" else None
        new_sub = tree_with(repo, sub, parts[1:], blob)  # type: ignore[arg-type]
        if new_sub is None:
            if tree is not None and name in tree:
                builder.remove(name)
        else:
            builder.insert(name, new_sub, FILEMODE_TREE)
    if len(builder) == 0:
        return None
    return builder.write()


_BATCH = 8  # from this many changes on, each touched tree is written once, not once per path


def build_tree(
    repo: pygit2.Repository, base: pygit2.Tree | None, changes: Mapping[str, bytes | None]
) -> pygit2.Oid:
    if len(changes) >= _BATCH:
        written = [data for data in changes.values() if data is not None]
        blobs = iter(write_blobs(repo, written))  # many: one pack (``quipu.store.packing``)
        nested: dict[str, Any] = {}
        for path, data in changes.items():
            *folders, name = path.split("/")
            node = nested
            for folder in folders:
                node = node.setdefault(folder, {})
                if not isinstance(node, dict):
                    raise InvalidMemory(f"refusing to write {path!r}: a file and a folder of one name")
            node[name] = next(blobs) if data is not None else None
        return tree_with_all(repo, base, nested) or repo.TreeBuilder().write()
    tree = base
    oid: pygit2.Oid | None = base.id if base is not None else None
    for path, data in changes.items():
        blob = repo.create_blob(data) if data is not None else None
        oid = tree_with(repo, tree, path.split("/"), blob)
        if oid is None:
            oid = repo.TreeBuilder().write()
        tree = repo[oid]  # type: ignore[assignment]
    assert oid is not None
    return oid


def tree_with_all(repo: pygit2.Repository, tree: pygit2.Tree | None, node: dict[str, Any]) -> pygit2.Oid | None:
    """``tree_with`` for many paths at once: ``node`` maps names to blobs (None: remove) or to
    the changes inside a folder; each tree on the way is written once."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    for name, change in node.items():
        present = tree is not None and name in tree
        if isinstance(change, dict):
            sub = None
            if present:
                entry = tree[name]  # type: ignore[index]
                sub = repo[entry.id] if entry.type_str == "tree" else None
            new_sub = tree_with_all(repo, sub, change)  # type: ignore[arg-type]
            if new_sub is None:
                if present:
                    builder.remove(name)
            else:
                builder.insert(name, new_sub, FILEMODE_TREE)
        elif change is None:
            if present:
                builder.remove(name)
        else:
            builder.insert(name, change, FILEMODE_BLOB)
    if len(builder) == 0:
        return None
    return builder.write()


def check_path(rel: object) -> str:
    """A repository path quipu may write: relative, '/'-separated, inside the store, not in .git."""
    parts = rel.split("/") if isinstance(rel, str) else []
    if (
        not parts
        or "\x00" in rel  # type: ignore[operator]
        or "\\" in rel  # type: ignore[operator]
        or any(p in ("", ".", "..") for p in parts)
        or parts[0].lower() == ".git"
    ):
        raise InvalidMemory(
            f"refusing to write {rel!r}: store paths are relative, '/'-separated, with no '..', "
            "NUL or .git parts\n- use the store's API (Store.add, Store.label) instead of raw paths"
        )
    return rel  # type: ignore[return-value]


def check_preconditions(tree: pygit2.Tree, create_only: Collection[str], require: Collection[str]) -> None:
    for rel in create_only:
        if tree_has(tree, rel):
            raise ConflictError(f"{rel} already exists in the store\n- choose another id")
    for rel in require:
        if not tree_has(tree, rel):
            raise NotFound(f"{rel} is not in the store\n- run `quipu list` to see what is there")


def tree_has(tree: pygit2.Tree, rel: str) -> bool:
    try:
        tree[rel]
    except KeyError:
        return False
    return True


def blob_entry(tree: pygit2.Tree, rel: str) -> pygit2.Object | None:
    try:
        entry = tree[rel]
    except KeyError:
        return None
    return entry if entry.type_str == "blob" else None


class BlobEntries:
    """``blob_entry`` for many paths of one tree: each folder's tree is looked up once, so a
    write of thousands of memories walks ``memories/<xx>`` once per shard, not once per file."""

    def __init__(self, tree: pygit2.Tree) -> None:
        self._tree = tree
        self._folders: dict[str, pygit2.Tree | None] = {"": tree}

    def __call__(self, rel: str) -> pygit2.Object | None:
        folder, _, name = rel.rpartition("/")
        if folder not in self._folders:
            try:
                found = self._tree[folder]
            except KeyError:
                found = None
            self._folders[folder] = found if found is not None and found.type_str == "tree" else None  # type: ignore[assignment]
        sub = self._folders[folder]
        if sub is None:
            return None
        try:
            entry = sub[name]
        except KeyError:
            return None
        return entry if entry.type_str == "blob" else None
