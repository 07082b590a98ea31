"""The vectors of every memory as one flat file, ``.cache/vectors.matrix``: a copy of
``vectors.sqlite``'s rows that a search reads in one go.

Contract:
- The file is a header line (``MAGIC``, the generation of ``vectors.sqlite`` it was copied from,
  the row count, the dimension, the byte length of the ids), the ids (memory ids, one per line,
  UTF-8), zero padding to four bytes, then float32 little-endian rows in the ids' order.
- ``read`` maps the file (a search touches each row once) and returns None for a file that is
  missing, damaged in any way or of another generation: the caller then reads SQLite and
  writes the file again with ``write``, which replaces it atomically and never raises.
- It is a cache of a cache: deleting it loses nothing.
"""
from __future__ import annotations

import contextlib
import mmap
import os
from pathlib import Path

import numpy as np
import numpy.typing as npt

FILE_NAME = "vectors.matrix"
MAGIC = b"quipu-vectors 1 "

Matrix = npt.NDArray[np.float32]


def read(path: Path, generation: str) -> tuple[list[str], Matrix] | None:
    """The ids and rows of a ``vectors.matrix`` of that generation; None when the file is
    missing, of another generation or damaged in any way."""
    try:
        with open(path, "rb") as fh:  # mapped, not read: a search touches each row once
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        end = data.find(b"\n")
        if end < 0:
            return None
        fields = data[len(MAGIC):end].decode("ascii").split()
        if data[:len(MAGIC)] != MAGIC or len(fields) != 4 or fields[0] != generation:
            return None
        count, dim, ids_len = int(fields[1]), int(fields[2]), int(fields[3])
        start = end + 1
        ids = bytes(data[start:start + ids_len]).decode("utf-8").split("\n") if count else []
        offset = start + ids_len + (-(start + ids_len)) % 4
        rows = np.frombuffer(data, dtype="<f4", count=count * dim, offset=offset).reshape(count, dim)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return (ids, rows) if len(ids) == count else None


def write(path: Path, generation: str, ids: list[str], rows: Matrix) -> None:
    """Write the flat copy (best effort: a cache of a cache), atomically."""
    names = "\n".join(ids).encode("utf-8")
    head = MAGIC + f"{generation} {len(ids)} {rows.shape[1] if rows.ndim == 2 else 0} {len(names)}\n".encode()
    pad = b"\0" * ((-(len(head) + len(names))) % 4)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(head + names + pad)
            fh.write(np.ascontiguousarray(rows, dtype="<f4").tobytes())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
