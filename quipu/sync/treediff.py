"""Two trees of a commit compared by their entries, read from the tree objects themselves.

Contract:
- ``tree_changes(trees, old, new)`` is each file path that differs between the trees ``old`` and
  ``new`` (None: no tree): (entry before, entry after) as ``effects.Effect`` has them, None where
  the path is absent; a subtree is opened only where its id differs between the two sides, and
  paths come in the order of the trees' names, each folder's files after its subfolders' at one
  name. (libgit2's diff reads every entry of both trees: milliseconds a commit in a store of
  10,000 memories.)
- ``Trees`` keeps the tree objects it has read, the latest ``KEEP_BYTES`` of them at least: a
  commit's trees are read again as its child's parent's, and a shard folder's as the tree of the
  commit that last changed it, further back. ``entries(tree)`` is a tree's entries, each as its
  bytes in the tree object.
- Of two trees, only the bytes between what their objects share at the start and at the end are
  read entry by entry: the entries before are the same in both, and so are those after once both
  sides are read to the same distance from their end. The changes are those of the two trees'
  entries compared as sets; where that cannot be told from the span alone (bytes that are no
  entry, an entry that may also stand outside the span), and for small trees, the whole trees
  are read and compared.
- Only reads objects.
"""
from __future__ import annotations

import re

import pygit2

from quipu.store import effects

TREE = b"40000"
_ENTRY = re.compile(rb"[0-7]+ [^\0]*\0.{20}", re.S)  # one entry of a tree object
_ENTRIES = re.compile(rb"(?:[0-7]++ [^\0]*+\0.{20})*+", re.S)  # whole entries from the start
_SMALL = 1024  # two trees of at most this many bytes together are read whole


class Trees:
    """Each tree object as read, the latest kept (in two generations, of ``KEEP_BYTES`` each): a
    commit's trees are read again as its child's parent's, and a shard folder's as the tree of the
    commit that last changed it, further back. ``entries`` is a tree's entries, each as its bytes."""

    KEEP_BYTES = 8 << 20

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.kept: dict[pygit2.Oid, bytes] = {}
        self.older: dict[pygit2.Oid, bytes] = {}
        self.size = 0

    def raw(self, tree: pygit2.Oid | None) -> bytes:
        if tree is None:
            return b""
        found = self.kept.get(tree)
        if found is None:
            found = self.older.get(tree)
            if found is None:
                found = self.repo.odb.read(tree)[1]
            if self.size >= self.KEEP_BYTES:
                self.older, self.kept, self.size = self.kept, {}, 0
            self.kept[tree] = found
            self.size += len(found)
        return found

    def entries(self, tree: pygit2.Oid | None) -> frozenset[bytes]:
        return frozenset(_ENTRY.findall(self.raw(tree)))


def _common(a: bytes, b: bytes) -> tuple[int, int]:
    """How many bytes two trees' objects share at their start, and at their end after that."""
    la, lb = len(a), len(b)
    lo, hi = 0, min(la, lb)
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    head, lo, hi = lo, 0, min(la, lb) - lo
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return head, lo


def _differing(a: bytes, b: bytes) -> tuple[frozenset[bytes], frozenset[bytes]]:
    """The entries only in tree ``a`` and those only in ``b``, as ``Trees.entries`` has them. Only
    the bytes between the two objects' common start and end are read entry by entry (the entries
    before are the same in both, and so are those after, once both are read up to the same
    distance from their end); an entry that may also be outside that span, or bytes that are no
    entry, make both trees read whole."""
    if len(a) + len(b) <= _SMALL:
        whole_a, whole_b = frozenset(_ENTRY.findall(a)), frozenset(_ENTRY.findall(b))
        return whole_a - whole_b, whole_b - whole_a
    head, tail = _common(a, b)
    whole = _ENTRIES.match(a, 0, head)
    at = bt = start = whole.end() if whole else 0
    only_a: list[bytes] = []
    only_b: list[bytes] = []
    la, lb = len(a), len(b)
    while la - at != lb - bt or la - at > tail:
        on_a = la - at >= lb - bt
        found = _ENTRY.match(a, at) if on_a else _ENTRY.match(b, bt)
        if found is None:
            break
        if on_a:
            only_a.append(found.group())
            at = found.end()
        else:
            only_b.append(found.group())
            bt = found.end()
    else:
        gone, came = frozenset(only_a).difference(only_b), frozenset(only_b).difference(only_a)
        if not any(b.find(e, 0, start) >= 0 or b.find(e, bt) >= 0 for e in gone) and not any(
                a.find(e, 0, start) >= 0 or a.find(e, at) >= 0 for e in came):
            return gone, came
    whole_a, whole_b = frozenset(_ENTRY.findall(a)), frozenset(_ENTRY.findall(b))
    return whole_a - whole_b, whole_b - whole_a


def tree_changes(trees: Trees, old: pygit2.Oid | None, new: pygit2.Oid | None, prefix: str = "",
                 out: effects.Effect | None = None) -> effects.Effect:
    """Each file path that differs between two trees: (entry before, entry after), None for absent;
    a subtree whose id is the same on both sides is not read."""
    out = {} if out is None else out
    if old == new:
        return out
    gone, came = _differing(trees.raw(old), trees.raw(new))
    before: dict[bytes, tuple[bytes, bytes]] = {}
    after: dict[bytes, tuple[bytes, bytes]] = {}
    for found, parts in ((gone, before), (came, after)):
        for entry in found:  # mode, ' ', name, NUL, 20 bytes of id: a whole entry
            mode, _, rest = entry.partition(b" ")
            parts[rest[:-21]] = (mode, rest[-20:])
    names = before.keys() | after.keys()
    for name in sorted(names) if len(names) > 1 else names:
        x, y = before.get(name), after.get(name)
        path = prefix + name.decode("utf-8", "replace")
        x_tree, y_tree = x is not None and x[0] == TREE, y is not None and y[0] == TREE
        if x_tree or y_tree:
            tree_changes(trees, pygit2.Oid(raw=x[1]) if x is not None and x_tree else None,
                         pygit2.Oid(raw=y[1]) if y is not None and y_tree else None, path + "/", out)
        x_file = (x[1].hex(), int(x[0], 8)) if x is not None and not x_tree else None
        y_file = (y[1].hex(), int(y[0], 8)) if y is not None and not y_tree else None
        if x_file is not None or y_file is not None:
            out[path] = (x_file, y_file)
    return out
