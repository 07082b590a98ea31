"""git's objects and refs read and written with the standard library (and the git program), so a
write of one memory never loads libgit2.

Contract:
- ``Objects(gitdir)`` reads an object from its loose file or the repository's own packs
  (``quipu.store.gitpack``), and any other (in an alternate, or a pack that reader leaves to git)
  through one ``git cat-file --batch`` process started on first need and kept for the life of the
  ``Objects``; it writes loose objects as git does (zlib, a temporary file renamed
  into place, read-only). SHA-1 repositories only: ``Unsupported`` otherwise, and the caller
  uses libgit2.
- ``build_tree(objects, base, changes)`` is the one tree builder of quipu's writes: the tree
  ``base`` (a tree id, or None for none) with each path set to a blob of the given bytes or
  removed (None); every tree on the way is written once; folders left empty disappear; a path
  that needs a file and a folder of one name is refused. From ``packing.BULK_BLOBS`` new blobs
  on, they go into one pack (``packing.write_blobs``), else each into a loose file.
- ``Tree(objects, tree)`` looks up many paths of one tree, each folder read once.
- Refs, the reflog and git's identity are in ``quipu.store.gitrefs``.
"""
from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Mapping

from quipu.errors import InvalidMemory
from quipu.lite import sha1
from quipu.store import gitrefs
from quipu.store.gitrefs import common_dir, git_env

TYPE_CHECKING = False
if TYPE_CHECKING:
    from quipu.store import gitpack
    from typing import Any, IO
    import subprocess

TREE_MODE = 0o40000
BLOB_MODE = 0o100644
GITLINK_MODE = 0o160000
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
KEPT_OBJECTS = 4096  # trees, commits and blobs written, kept by an Objects (then all dropped at once)
KEPT_BLOB_BYTES = 65536
LOOSE_COMPRESSION = 1  # git's own default for loose objects (core.looseCompression): speed, not size


class Unsupported(Exception):
    """A repository this module does not write (another object format)."""


class Objects:
    """A repository's object database, read and written without libgit2 (see the module contract)."""

    def __init__(self, gitdir: str) -> None:
        self.gitdir = gitdir
        self.folder = os.path.join(common_dir(gitdir), "objects")
        self._batch: subprocess.Popen[bytes] | None = None
        self._packs: gitpack.Packs | None = None
        # Objects never change: the trees and commits read or written lately are kept (a writer
        # builds each commit on the trees its previous commit wrote).
        self._kept: dict[str, tuple[str, bytes]] = {}
        self._trees: dict[str, list[tuple[int, str, str]]] = {}

    def _keep(self, oid: str, kind: str, data: bytes) -> None:
        if len(self._kept) >= KEPT_OBJECTS:
            self._kept.clear()
            self._trees.clear()
        self._kept[oid] = (kind, data)

    def close(self) -> None:
        batch, self._batch = self._batch, None
        if batch is not None:
            for stream in (batch.stdin, batch.stdout):
                if stream is not None:
                    stream.close()
            batch.wait()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - at exit the process may already be gone
            pass

    def read(self, oid: str) -> tuple[str, bytes]:
        """(kind, content) of the object ``oid``; KeyError when the repository lacks it."""
        kept = self._kept.get(oid)
        if kept is not None:
            return kept
        if len(oid) != 40:
            raise Unsupported("object ids that are not SHA-1")
        found = self._loose(oid)
        if found is None:
            if self._packs is None:
                from quipu.store import gitpack

                self._packs = gitpack.Packs(self.folder, self._loose)
            found = self._packs.read(oid)
        kind, data = found if found is not None else self._read_batch(oid)
        if kind != "blob":
            self._keep(oid, kind, data)
        return kind, data

    def _loose(self, oid: str) -> tuple[str, bytes] | None:
        try:
            with open(os.path.join(self.folder, oid[:2], oid[2:]), "rb") as fh:
                raw = zlib.decompress(fh.read())
        except (OSError, zlib.error):
            return None
        header, _, data = raw.partition(b"\x00")
        return header.decode("ascii", "replace").partition(" ")[0], data

    def _read_batch(self, oid: str) -> tuple[str, bytes]:
        if self._batch is None:
            import subprocess  # only for objects not in a loose file

            self._batch = subprocess.Popen(
                ["git", "--git-dir", self.gitdir, "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_env(),
            )
        stdin, stdout = self._batch.stdin, self._batch.stdout
        assert stdin is not None and stdout is not None  # both are pipes
        try:
            stdin.write(oid.encode("ascii") + b"\n")
            stdin.flush()
            header = stdout.readline().split()
            if len(header) != 3:
                raise KeyError(oid)
            data = _read_exactly(stdout, int(header[2]))
            stdout.read(1)  # the newline after the content
        except (OSError, ValueError):
            self.close()
            raise KeyError(oid) from None
        return header[1].decode("ascii"), data

    def write(self, kind: str, data: bytes) -> str:
        raw = f"{kind} {len(data)}\x00".encode("ascii") + data
        oid = sha1(raw).hexdigest()
        if kind != "blob" or len(data) <= KEPT_BLOB_BYTES:  # the worktree is written from it next
            self._keep(oid, kind, data)
        folder = os.path.join(self.folder, oid[:2])
        path = os.path.join(folder, oid[2:])
        if os.path.exists(path):
            return oid
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f"tmp_obj_{os.getpid()}_{os.urandom(6).hex()}")  # git's own prefix
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            with open(fd, "wb", closefd=True) as fh:
                fh.write(zlib.compress(raw, LOOSE_COMPRESSION))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return oid

    def remember_tree(self, oid: str, entries: list[tuple[int, str, str]]) -> None:
        """Keep the entries of a tree just written (in git's order), so it is not parsed back."""
        if oid in self._kept:
            self._trees.setdefault(oid, entries)

    def tree(self, oid: str) -> list[tuple[int, str, str]]:
        """The entries (mode, name, id) of the tree ``oid``."""
        parsed = self._trees.get(oid)
        if parsed is None:
            kind, data = self.read(oid)
            if kind != "tree":
                raise KeyError(oid)
            parsed = self._trees[oid] = parse_tree(data)
        return parsed

    def commit_tree(self, oid: str) -> str:
        """The tree id of the commit ``oid``."""
        kind, data = self.read(oid)
        if kind != "commit" or not data.startswith(b"tree "):
            raise KeyError(oid)
        return data[5:45].decode("ascii")


def object_id(kind: str, data: bytes) -> str:
    """git's id of an object of ``kind`` holding ``data``."""
    return sha1(f"{kind} {len(data)}\x00".encode("ascii") + data).hexdigest()


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = stream.read(size)
        if not chunk:
            raise OSError("git cat-file ended early")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def parse_tree(data: bytes) -> list[tuple[int, str, str]]:
    out = []
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\x00", space)
        out.append((int(data[pos:space], 8), data[space + 1:nul].decode("utf-8", "surrogateescape"),
                    data[nul + 1:nul + 21].hex()))
        pos = nul + 21
    return out


def tree_bytes(entries: Mapping[str, tuple[int, str]]) -> bytes:
    """A tree's content from {name: (mode, id)}, in git's order (a folder sorts as ``name/``)."""
    return _tree_bytes(entries, _git_order(entries))


def _git_order(entries: Mapping[str, tuple[int, str]]) -> list[str]:
    def key(name: str) -> bytes:
        raw = name.encode("utf-8", "surrogateescape")
        return raw + b"/" if entries[name][0] == TREE_MODE else raw

    return sorted(entries, key=key)


def _tree_bytes(entries: Mapping[str, tuple[int, str]], names: list[str]) -> bytes:
    return b"".join(f"{entries[n][0]:o} ".encode("ascii") + n.encode("utf-8", "surrogateescape") + b"\x00"
                    + bytes.fromhex(entries[n][1]) for n in names)


def build_tree(objects: Objects, base: str | None, changes: Mapping[str, bytes | None]) -> str:
    from quipu.store import packing

    written = [data for data in changes.values() if data is not None]
    packed = len(written) >= packing.BULK_BLOBS and packing.write_blobs(objects.gitdir, written)
    nested: dict[str, Any] = {}
    for path, data in changes.items():
        *folders, name = path.split("/")
        node = nested
        for folder in folders:
            node = node.setdefault(folder, {})
            if not isinstance(node, dict):
                raise InvalidMemory(f"refusing to write {path!r}: a file and a folder of one name")
        if isinstance(node.get(name), dict):
            raise InvalidMemory(f"refusing to write {path!r}: a file and a folder of one name")
        if data is None:
            node[name] = None
        else:  # many blobs are in one pack already (``quipu.store.packing.write_blobs``)
            node[name] = object_id("blob", data) if packed else objects.write("blob", data)
    return _with_all(objects, base, nested) or objects.write("tree", b"")


def _with_all(objects: Objects, tree: str | None, node: dict[str, Any]) -> str | None:
    """The tree ``tree`` with the changes of ``node`` (names to blob ids, None to remove, or the
    changes inside a folder); None when it ends up empty."""
    entries = {name: (mode, oid) for mode, name, oid in objects.tree(tree)} if tree is not None else {}
    for name, change in node.items():
        present = entries.get(name)
        if isinstance(change, dict):
            sub = present[1] if present is not None and present[0] == TREE_MODE else None
            new_sub = _with_all(objects, sub, change)
            if new_sub is None:
                entries.pop(name, None)
            else:
                entries[name] = (TREE_MODE, new_sub)
        elif change is None:
            entries.pop(name, None)
        else:
            entries[name] = (BLOB_MODE, change)
    if not entries:
        return None
    names = _git_order(entries)
    oid = objects.write("tree", _tree_bytes(entries, names))
    objects.remember_tree(oid, [(entries[n][0], n, entries[n][1]) for n in names])
    return oid


class Tree:
    """Look-ups of many paths in one tree, each folder read once: ``blob(rel)`` is the (mode, id)
    of a file (a blob entry, a symlink included), or None."""

    def __init__(self, objects: Objects, tree: str) -> None:
        self.objects = objects
        self.id = tree
        self._folders: dict[str, dict[str, tuple[int, str]] | None] = {}

    def folder(self, rel: str) -> dict[str, tuple[int, str]] | None:
        if rel not in self._folders:
            if rel == "":
                found: dict[str, tuple[int, str]] | None = self._read(self.id)
            else:
                parent, _, name = rel.rpartition("/")
                above = self.folder(parent)
                entry = above.get(name) if above is not None else None
                found = self._read(entry[1]) if entry is not None and entry[0] == TREE_MODE else None
            self._folders[rel] = found
        return self._folders[rel]

    def _read(self, oid: str) -> dict[str, tuple[int, str]]:
        return {name: (mode, oid) for mode, name, oid in self.objects.tree(oid)}

    def entry(self, rel: str) -> tuple[int, str] | None:
        folder, _, name = rel.rpartition("/")
        entries = self.folder(folder)
        return entries.get(name) if entries is not None else None

    def has(self, rel: str) -> bool:
        """Whether ``rel`` names anything in the tree (a file, a folder, a submodule)."""
        return self.entry(rel) is not None

    def blob(self, rel: str) -> tuple[int, str] | None:
        entry = self.entry(rel)
        return entry if entry is not None and entry[0] not in (TREE_MODE, GITLINK_MODE) else None

    def data(self, rel: str) -> bytes | None:
        entry = self.blob(rel)
        return self.objects.read(entry[1])[1] if entry is not None else None


# ---------------------------------------------------------------- commits


def commit_bytes(tree: str, parents: list[str], who: tuple[str, str], message: str,
                 when: float | None = None) -> bytes:
    person = gitrefs.person(who, when)
    head = [f"tree {tree}", *(f"parent {p}" for p in parents), f"author {person}", f"committer {person}"]
    return ("\n".join(head) + "\n\n" + message).encode("utf-8")


