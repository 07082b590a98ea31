"""git's index file held as bytes, so a process that commits again and again can splice its few
changed entries in instead of having libgit2 rewrite (and re-hash) the whole file each time.

Why: libgit2 hashes the index with collision-detecting SHA-1, about 30 instructions a byte; at
10,000 memories that alone is half the cost of a commit. OpenSSL's SHA-1 is 15 times faster (the
interpreter's own, for an index short enough that loading OpenSSL would cost more: ``quipu.lite.sha1``),
and joining 10,000 cached entry byte strings is cheaper still.

Contract:
- ``IndexFile.parse(data)`` reads index versions 2, 3 and 4 with SHA-1 object ids. It raises
  ``Unsupported`` for anything it must not rewrite: a file cut short, entries out of order,
  unmerged entries (a conflict), a split or sparse index, or any other required extension.
  Optional extensions (the cache tree, the untracked cache, offset tables) are dropped on write;
  git rebuilds them. Like git, it does not hash the whole file to check the trailing checksum on
  read (only ``git fsck`` does): the file is only ever replaced whole, by a rename.
- ``set(path, ...)`` stages a blob entry with the file's stat data exactly as ``git add`` would;
  ``remove(path)`` unstages; both keep the entries sorted as git sorts them (bytewise).
  ``set_many(items)`` is ``set`` of each, merged into the sorted entries at once (a bulk write's
  100,000 files are not inserted one by one).
- ``serialize()`` gives the whole file: header, entries in the version read, trailing SHA-1.
  ``trailer`` is the SHA-1 of the file last parsed or serialized (git's checksum of the file).
- ``set`` returns the entry's fixed part; ``set_fixed`` stages such a part again (replaying
  another writer's change, see quipu.store.gitstore).
- ``smudge_racy(since, workdir, uptodate)`` does what git does before it writes an index (git's
  Documentation/technical/racy-git.txt): an entry whose mtime is not older than the index file
  being replaced (``since``, whole seconds, as git compares them) may hide an edit made in the
  same tick, because its stat data still matches the file. Its file is hashed; if the content
  differs from the staged blob, the entry's size is set to 0, which no later stat matches, so
  git looks at the content. Once a newer index is written, nothing else would catch that edit.
  As in git, an entry staged by this very write from the bytes it wrote (``uptodate``) is not
  hashed again: it is checked by the next index written after it.
"""
from __future__ import annotations

import bisect
import operator
import os
import struct
from collections.abc import Collection

from quipu.lite import sha1

_HEADER = struct.Struct(">4sII")
_STAT = struct.Struct(">10I")
_FLAGS = struct.Struct(">H")
_OID_LEN = 20
_FIXED = 40 + _OID_LEN + 2  # stat data, object id, flags
_EXTENDED = 0x4000
_STAGE_MASK = 0x3000
_NAME_MASK = 0x0FFF
_MTIME_SECONDS = slice(8, 12)
_SIZE = slice(36, 40)
_MODE = slice(24, 28)
_OID = slice(40, 60)
_S_IFMT = 0o170000
_S_IFREG = 0o100000
_S_IFLNK = 0o120000
_MTIME_OF = operator.itemgetter(_MTIME_SECONDS)


class Unsupported(Exception):
    """An index this module will not rewrite; the caller uses libgit2 instead."""


def _varint(value: int) -> bytes:
    """git's offset varint (the v4 "bytes to strip" number)."""
    out = [value & 127]
    value >>= 7
    while value:
        value -= 1
        out.append(128 | (value & 127))
        value >>= 7
    return bytes(reversed(out))


class IndexFile:
    """The entries of one index file: sorted paths, each with its encoded bytes (which begin with
    the entry's fixed part: stat data, object id, flags and, when extended, the extended flags)."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.paths: list[bytes] = []
        self.encoded: list[bytes] = []  # the entry as it is written (v4: relative to the previous path)
        self.trailer = b""  # the SHA-1 at the end of the file this was last parsed from or written as

    @classmethod
    def parse(cls, data: bytes) -> IndexFile:
        if len(data) < _HEADER.size + _OID_LEN:
            raise Unsupported("not a whole index file")
        signature, version, count = _HEADER.unpack_from(data, 0)
        if signature != b"DIRC" or version not in (2, 3, 4):
            raise Unsupported(f"index version {version}")
        index = cls(version)
        end = len(data) - _OID_LEN
        try:
            pos = index._read_entries(data, count)
        except (IndexError, ValueError):
            raise Unsupported("entries run past the end of the file") from None
        if pos > end:
            raise Unsupported("entries run past the end of the file")
        while pos < end:  # extensions: optional ones (uppercase) are dropped, required ones refused
            name, size = struct.unpack_from(">4sI", data, pos)
            if not (65 <= name[0] <= 90):
                raise Unsupported(f"index extension {name!r}")
            pos += 8 + size
        if pos != end:
            raise Unsupported("extensions run past the end of the file")
        if index.paths != sorted(index.paths):
            raise Unsupported("entries out of order")
        index.trailer = data[-_OID_LEN:]
        return index

    def _read_entries(self, data: bytes, count: int) -> int:
        """Read ``count`` entries from offset 12; returns where they end (one pass, the fewest steps
        an entry: at 10,000 memories this loop is most of the cost of reading)."""
        paths, encoded = self.paths, self.encoded
        pos, previous = _HEADER.size, b""
        version = self.version
        find = data.index
        for _ in range(count):
            start = pos
            high = data[pos + 60]  # the flags' high byte: assume-valid, extended, the stage
            if high & 0x70:
                if high & 0x30:
                    raise Unsupported("unmerged entries")
                if version < 3:
                    raise Unsupported("extended flags in a version 2 index")
                pos += _FIXED + 2
            else:
                pos += _FIXED
            if version == 4:
                strip = data[pos]
                pos += 1
                if strip & 128:  # a varint past one byte: a path that drops 128 bytes or more
                    strip &= 127
                    while True:
                        strip = ((strip + 1) << 7) | (data[pos] & 127)
                        pos += 1
                        if not data[pos - 1] & 128:
                            break
                if strip > len(previous):
                    raise Unsupported("a path that drops more than the path before it holds")
                nul = find(b"\x00", pos)
                path = previous[: len(previous) - strip] + data[pos:nul]
                pos = nul + 1
            else:
                name = pos
                nul = find(b"\x00", pos)
                path = data[name:nul]
                pos = start + ((name - start + len(path) + 8) & ~7)
            paths.append(path)
            encoded.append(data[start:pos])
            previous = path
        return pos

    def _fixed(self, i: int) -> bytes:
        entry = self.encoded[i]
        return entry[:_FIXED + 2] if entry[60] & 0x40 else entry[:_FIXED]

    def _encode(self, i: int, fixed: bytes) -> bytes:
        path = self.paths[i]
        if self.version == 4:
            previous = self.paths[i - 1] if i > 0 else b""
            common = len(os.path.commonprefix([previous, path]))
            return fixed + _varint(len(previous) - common) + path[common:] + b"\x00"
        size = (len(fixed) + len(path) + 8) & ~7
        return fixed + path + b"\x00" * (size - len(fixed) - len(path))

    def _reencode(self, i: int) -> None:
        if self.version == 4 and i < len(self.paths):
            self.encoded[i] = self._encode(i, self._fixed(i))

    def set(self, path: str, oid: bytes, mode: int, st: os.stat_result) -> bytes:
        """Stage ``path`` as a blob ``oid`` with ``mode`` and the worktree file's stat data; returns
        the entry's fixed part."""
        fixed = self._fixed_part(path, oid, mode, st)
        self.set_fixed(path, fixed)
        return fixed

    def set_many(self, items: list[tuple[str, bytes, int, os.stat_result]]) -> list[bytes]:
        """``set`` of each item (distinct paths), merged into the entries at once: a bulk write's
        100,000 files are not inserted one by one into the sorted entries."""
        if len(items) < 64 or len(set(self.paths)) != len(self.paths):  # few, or a path entered twice
            return [self.set(*item) for item in items]
        made = [self._fixed_part(*item) for item in items]
        merged = dict(zip(self.paths, map(self._fixed, range(len(self.paths))), strict=True))
        merged.update(zip((item[0].encode("utf-8") for item in items), made, strict=True))
        self.paths = sorted(merged)
        self.encoded = [b""] * len(self.paths)
        for i, path in enumerate(self.paths):
            self.encoded[i] = self._encode(i, merged[path])
        return made

    def _fixed_part(self, path: str, oid: bytes, mode: int, st: os.stat_result) -> bytes:
        raw = path.encode("utf-8")
        if len(oid) != _OID_LEN:
            raise Unsupported("object ids that are not SHA-1")
        fixed = (
            _STAT.pack(
                st.st_ctime_ns // 1_000_000_000 & 0xFFFFFFFF, st.st_ctime_ns % 1_000_000_000,
                st.st_mtime_ns // 1_000_000_000 & 0xFFFFFFFF, st.st_mtime_ns % 1_000_000_000,
                st.st_dev & 0xFFFFFFFF, st.st_ino & 0xFFFFFFFF, mode, st.st_uid & 0xFFFFFFFF,
                st.st_gid & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF,
            )
            + oid
            + _FLAGS.pack(min(len(raw), _NAME_MASK))
        )
        return fixed

    def set_fixed(self, path: str, fixed: bytes) -> None:
        """Stage ``path`` with an entry's fixed part (stat data, object id, flags) as ``set`` made it."""
        raw = path.encode("utf-8")
        if len(fixed) != _FIXED or _FLAGS.unpack_from(fixed, 60)[0] & (_EXTENDED | _STAGE_MASK):
            raise Unsupported("not an entry this module makes")
        i = bisect.bisect_left(self.paths, raw)
        if i < len(self.paths) and self.paths[i] == raw:
            self.encoded[i] = self._encode(i, fixed)
            return
        self.paths.insert(i, raw)
        self.encoded.insert(i, b"")
        self.encoded[i] = self._encode(i, fixed)
        self._reencode(i + 1)

    def remove(self, path: str) -> None:
        raw = path.encode("utf-8")
        i = bisect.bisect_left(self.paths, raw)
        if i < len(self.paths) and self.paths[i] == raw:
            del self.paths[i], self.encoded[i]
            self._reencode(i)

    def smudge_racy(self, since: int, workdir: str, uptodate: Collection[str] = ()) -> list[tuple[str, bytes]]:
        """Set the size of racily clean entries whose file no longer holds the staged blob to 0;
        returns the entries changed (path, fixed part). ``uptodate``: paths this write staged from
        the very bytes it wrote, with the status taken as it wrote them, which git marks up to date
        and leaves out (``do_write_index``): the next index written checks them."""
        stamp = struct.pack(">I", since & 0xFFFFFFFF)
        skip = {path.encode("utf-8") for path in uptodate}
        changed: list[tuple[str, bytes]] = []
        for i in _at_least(list(map(_MTIME_OF, self.encoded)), stamp):  # (the fixed part leads)
            if self.paths[i] in skip:
                continue
            fixed = self._fixed(i)
            if fixed[_SIZE] == b"\x00\x00\x00\x00":
                continue
            path = self.paths[i].decode("utf-8", "surrogateescape")
            if _still_clean(os.path.join(workdir, path), fixed):
                continue
            fixed = fixed[:_SIZE.start] + b"\x00\x00\x00\x00" + fixed[_SIZE.stop:]
            self.encoded[i] = self._encode(i, fixed)
            changed.append((path, fixed))
        return changed

    def serialize(self) -> bytes:
        body = _HEADER.pack(b"DIRC", self.version, len(self.paths)) + b"".join(self.encoded)
        self.trailer = sha1(body).digest()
        return body + self.trailer


def _at_least(values: list[bytes], floor: bytes) -> list[int]:
    """The positions of the values not below ``floor``, in order: the entries as new as the index
    are few (most often none, or the one the last write staged), so they are found by the list's
    own searches instead of a Python step per entry."""
    found: list[int] = []
    for value in set(filter(floor.__le__, values)):
        at = -1
        try:
            while True:
                at = values.index(value, at + 1)
                found.append(at)
        except ValueError:
            pass
    return sorted(found)


def _still_clean(full: str, fixed: bytes) -> bool:
    """Whether the worktree file still holds the entry's blob (a missing file or another kind of
    file is a change git sees from the stat data alone: nothing to smudge)."""
    (mode,) = struct.unpack(">I", fixed[_MODE])
    try:
        if mode & _S_IFMT == _S_IFLNK:
            data = os.fsencode(os.readlink(full))
        elif mode & _S_IFMT == _S_IFREG:
            with open(full, "rb") as fh:
                data = fh.read()
        else:
            return True  # a gitlink: git always looks inside
    except OSError:
        return True
    return sha1(b"blob %d\x00" % len(data) + data).digest() == fixed[_OID]
