"""Objects in the repository's own pack files, read with the standard library.

After git's auto-gc (``quipu.store.packing``) most trees a write reads are packed, often as deltas;
without this reader each fresh process that writes would start a ``git cat-file`` for them.

Contract:
- ``Packs(objects_folder).read(oid)`` is (kind, content) of a SHA-1 object from any pack in
  ``<objects>/pack`` with a version 2 index, following offset and reference deltas (a reference
  delta's base may be packed or loose, through ``base``); None when it is in none of them.
- What it returns is checked: the content hashes to ``oid`` as git hashes objects, else None.
  Anything it cannot read (another index version, a damaged or vanished pack, a delta chain
  deeper than ``MAX_CHAIN``) is None too, and the caller asks git.
- Pack and index files are mapped, not read, and only when first needed; a pack removed by a
  repack meanwhile stays readable through its mapping, and an object not found is looked for
  again once the pack folder has changed (a long-lived process after git's gc).
"""
from __future__ import annotations

import mmap
import os
import zlib

from quipu.lite import sha1

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

KINDS = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}
OFS_DELTA, REF_DELTA = 6, 7
MAX_CHAIN = 500  # deltas on deltas; git's own packs stay far below (pack.depth is 50 by default)
_IDX_MAGIC = b"\377tOc\x00\x00\x00\x02"
_CHUNK = 1 << 16


class _Pack:
    """One ``pack-*.idx`` and its ``.pack``, mapped."""

    def __init__(self, idx_path: str) -> None:
        self.idx = _mapped(idx_path)
        self.pack = _mapped(idx_path[:-4] + ".pack")
        if self.idx[:8] != _IDX_MAGIC or self.pack[:4] != b"PACK":
            raise ValueError(f"not a version 2 pack index: {idx_path}")
        self.count = int.from_bytes(self.idx[8 + 255 * 4:8 + 256 * 4], "big")

    def offset(self, oid: bytes) -> int | None:
        """Where ``oid`` starts in the pack, or None."""
        idx, first = self.idx, oid[0]
        lo = int.from_bytes(idx[8 + (first - 1) * 4:8 + first * 4], "big") if first else 0
        hi = int.from_bytes(idx[8 + first * 4:12 + first * 4], "big")
        names = 8 + 256 * 4
        while lo < hi:
            mid = (lo + hi) // 2
            here = idx[names + mid * 20:names + mid * 20 + 20]
            if here < oid:
                lo = mid + 1
            elif here > oid:
                hi = mid
            else:
                at = names + self.count * 24 + mid * 4  # past the names and their CRCs
                value = int.from_bytes(idx[at:at + 4], "big")
                if value & 0x80000000:  # an index into the table of large offsets
                    large = names + self.count * 28 + (value & 0x7FFFFFFF) * 8
                    value = int.from_bytes(idx[large:large + 8], "big")
                return value
        return None


def _mapped(path: str) -> mmap.mmap:
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


class Packs:
    """Every pack of one objects folder (see the module contract)."""

    def __init__(self, folder: str, base: Callable[[str], tuple[str, bytes] | None]) -> None:
        self.folder = os.path.join(folder, "pack")
        self.base = base  # a reference delta's base when it is not in these packs (a loose object)
        self._packs: list[_Pack] | None = None
        self._seen: int | None = None  # the pack folder's mtime when it was listed

    def _stamp(self) -> int | None:
        try:
            return os.stat(self.folder).st_mtime_ns
        except OSError:
            return None

    def _all(self) -> list[_Pack]:
        if self._packs is None:
            self._packs = []
            self._seen = self._stamp()
            try:
                names = sorted(n for n in os.listdir(self.folder) if n.endswith(".idx"))
            except OSError:
                names = []
            for name in names:
                try:
                    self._packs.append(_Pack(os.path.join(self.folder, name)))
                except (OSError, ValueError):
                    continue  # unreadable here: git reads it
        return self._packs

    def read(self, oid: str) -> tuple[str, bytes] | None:
        try:
            raw = bytes.fromhex(oid)
            found = self._find(raw, 0)
        except (ValueError, IndexError, OSError, zlib.error, RecursionError):
            return None
        if found is None and self._packs is not None and self._stamp() != self._seen:
            self._packs = None  # a repack since the folder was listed: list it again, once
            return self.read(oid)
        if found is None:
            return None
        kind, data = found
        if sha1(f"{kind} {len(data)}\x00".encode("ascii") + data).digest() != raw:
            return None
        return found

    def _find(self, oid: bytes, depth: int) -> tuple[str, bytes] | None:
        for pack in self._all():
            at = pack.offset(oid)
            if at is not None:
                return _object(self, pack, at, depth)
        if depth:  # a reference delta's base outside the packs
            return self.base(oid.hex())
        return None


def _object(packs: Packs, pack: _Pack, at: int, depth: int) -> tuple[str, bytes] | None:
    if depth > MAX_CHAIN:
        return None
    data = pack.pack
    byte = data[at]
    kind, size, shift, pos = (byte >> 4) & 7, byte & 15, 4, at + 1
    while byte & 0x80:
        byte = data[pos]
        size |= (byte & 0x7F) << shift
        shift += 7
        pos += 1
    if kind in KINDS:
        return KINDS[kind], _inflate(data, pos, size)
    if kind == OFS_DELTA:
        byte = data[pos]
        back = byte & 0x7F
        pos += 1
        while byte & 0x80:
            byte = data[pos]
            back = ((back + 1) << 7) | (byte & 0x7F)
            pos += 1
        base = _object(packs, pack, at - back, depth + 1)
    elif kind == REF_DELTA:
        base = packs._find(bytes(data[pos:pos + 20]), depth + 1)
        pos += 20
    else:
        return None
    if base is None:
        return None
    return base[0], apply_delta(base[1], _inflate(data, pos, size))


def _inflate(data: mmap.mmap, pos: int, size: int) -> bytes:
    """The ``size`` bytes that the zlib stream at ``pos`` inflates to; never more than ``size`` + 1
    are inflated (a stream that would give more is refused, whatever it would grow to)."""
    stream = zlib.decompressobj()
    out: list[bytes] = []
    total = 0
    feed = data[pos:pos + size + 64]
    pos += size + 64
    while True:
        piece = stream.decompress(feed, size + 1 - total)
        out.append(piece)
        total += len(piece)
        if stream.eof or total > size:
            break
        feed = stream.unconsumed_tail
        if not feed:
            feed = data[pos:pos + _CHUNK]
            pos += _CHUNK
            if not feed:
                raise zlib.error("the pack ends inside an object")
    if total != size or not stream.eof:
        raise zlib.error("an object's size differs from its header")
    return b"".join(out)


def _varint(delta: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = delta[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta: copies of ranges of ``base`` and inserted bytes; ValueError if it does not fit."""
    source, pos = _varint(delta, 0)
    target, pos = _varint(delta, pos)
    if source != len(base):
        raise ValueError("a delta for another base")
    out = bytearray()
    end = len(delta)
    while pos < end:
        op = delta[pos]
        pos += 1
        if op & 0x80:  # copy: the offset and size bytes present are flagged in op
            offset = size = 0
            for bit in range(4):
                if op & (1 << bit):
                    offset |= delta[pos] << (8 * bit)
                    pos += 1
            for bit in range(3):
                if op & (0x10 << bit):
                    size |= delta[pos] << (8 * bit)
                    pos += 1
            size = size or 0x10000
            if offset + size > len(base):
                raise ValueError("a delta copies past its base")
            out += base[offset:offset + size]
        elif op:  # insert the next op bytes
            out += delta[pos:pos + op]
            pos += op
        else:
            raise ValueError("a reserved delta instruction")
    if len(out) != target:
        raise ValueError("a delta's result has another size")
    return bytes(out)
