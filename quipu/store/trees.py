"""The paths a write may touch, and what must (not) exist in the tree it is built on."""
from __future__ import annotations

from collections.abc import Collection, Mapping

from quipu.errors import ChangedSinceRead, ConflictError, InvalidMemory, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from quipu.store.gitobj import Tree


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


def check_preconditions(tree: Tree, create_only: Collection[str], require: Collection[str],
                        unchanged: Mapping[str, str] | None = None) -> None:
    """``create_only`` paths must not exist, ``require`` paths must; each path of ``unchanged``
    must still be the blob it names (a write made from what was read, not over a newer version)."""
    for rel, oid in (unchanged or {}).items():
        entry = tree.blob(rel)
        if entry is None or entry[1] != oid:
            raise ChangedSinceRead(f"{rel} changed since it was read\n- read it again; nothing was written")
    for rel in create_only:
        if tree.has(rel):
            raise ConflictError(f"{rel} already exists in the store\n- choose another id")
    for rel in require:
        if not tree.has(rel):
            raise NotFound(f"{rel} is not in the store\n- run `quipu list` to see what is there")
