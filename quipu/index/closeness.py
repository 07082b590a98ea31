"""How close a query is to each memory: the query side of meaning search over ``quipu.index.vectors``.

Contract:
- ``nearest(vectors, query, depth, centred)`` ranks the memories by the plain cosine, or
  (``centred``) by the cosine about ``CENTRE`` times the memories' mean vector (``Centre``, taken
  from the stored vectors when they are read; nothing more is kept on disk): what every memory of
  the store shares then counts for nothing, so a text unlike the rest of the store stands out.
  Positive scores only, best first, ties by id.
- ``neighbours(matrix, ids, rows, among, depth, floor)`` finds, for each of the ``rows``, its
  ``depth`` closest other memories of ``among`` by the plain cosine (at least ``floor``; ties by
  id), from products of ``BLOCK`` rows with the whole matrix at a time, so the memory it takes
  stays bounded however large the store.
- numpy is imported here: this module is never on the prompt path.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from quipu.index.vectors import Matrix, Vectors

# Meaning search that must find what the words missed measures closeness about this multiple of
# the memories' mean vector. Twelve facts asked without their words among the 1,811 real notes
# (the cases of bench/bench_paraphrase.py in one store), median rank by meaning (of 12, how many
# in the top ten): plain cosine 36.5 (3), about the mean x1.0 12 (6), x1.5 9 (6), x2.0 7.5 (7,
# but the project cases lower); removing the first 1, 2, 4 or 8 principal components instead, or
# the mean of the table, did not help. On LoCoMo's questions the plain cosine ranks better (dense
# R@10 0.616 against 0.605 at x1.5), so the deep list re-orders what the words found by the plain one.
CENTRE = 1.5
BLOCK = 1_024  # rows multiplied with the whole matrix at a time: 1,024 x 10,000 float32 is 40 MB


class Centre(NamedTuple):
    """``CENTRE`` times the memories' mean vector, each memory's product with it, and which
    memories have no text (the zero row)."""

    vector: npt.NDArray[np.float32]
    products: npt.NDArray[np.float32]
    empty: npt.NDArray[np.bool_]

    @classmethod
    def of(cls, matrix: Matrix) -> Centre:
        vector = (CENTRE * matrix.mean(axis=0, dtype=np.float64)).astype(np.float32)
        return cls(vector, matrix @ vector, np.logical_not(matrix.any(axis=1)))


def centred_scores(matrix: Matrix, centre: Centre, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Cosines of ``query`` with every memory, both taken about ``c`` (the centre):
    ``(m - c) . (q - c) / (|m - c| |q - c|)`` for unit ``m`` and ``q``, from one product with the
    stored matrix (SIF's common component; the mean measured better here than removing the first
    principal components)."""
    c, mc = centre.vector, centre.products
    cc = float(c @ c)
    q_norm = float(np.linalg.norm(query - c))
    if q_norm == 0.0:
        return np.zeros(matrix.shape[0], dtype=np.float32)
    m_norm = np.sqrt(np.maximum(1.0 - 2.0 * mc + cc, 1e-12))
    scores: npt.NDArray[np.float32] = ((matrix @ query - mc - float(c @ query) + cc) / (m_norm * q_norm)).astype(np.float32)
    scores[centre.empty] = 0.0  # a memory with no text sits at -c: it gets no score
    return scores


def nearest(vectors: Vectors, query: npt.NDArray[np.float32], depth: int,
            centred: bool = False) -> list[tuple[str, float]]:
    """The ``depth`` memories closest to ``query`` (cosine, best first; ties by id), positive only;
    ``centred``: about the store's mean."""
    if not vectors.ids or not query.any():
        return []
    matrix = vectors.matrix
    if matrix.shape[0] != len(vectors.ids):  # changed by another process since: read it again
        return []
    query = query.astype(np.float32)
    scores = centred_scores(matrix, vectors.centre, query) if centred else matrix @ query
    depth = min(depth, len(vectors.ids))
    top = np.argpartition(-scores, depth - 1)[:depth]
    order = sorted(top.tolist(), key=lambda i: (-float(scores[i]), vectors.ids[i]))
    return [(vectors.ids[i], float(scores[i])) for i in order if scores[i] > 0.0]


def neighbours(matrix: Matrix, ids: list[str], rows: list[int], among: list[int], depth: int,
               floor: float) -> list[tuple[int, int, float]]:
    """(row, neighbour, cosine) for each of ``rows``: its ``depth`` closest memories of ``among``
    (never itself) with a plain cosine of at least ``floor``, best first, ties by id."""
    if not rows or not among or depth <= 0:
        return []
    mask = np.full(matrix.shape[0], -np.inf, dtype=np.float32)
    mask[np.asarray(among, dtype=np.int64)] = 0.0
    out: list[tuple[int, int, float]] = []
    for start in range(0, len(rows), BLOCK):
        block = np.asarray(rows[start:start + BLOCK], dtype=np.int64)
        scores = matrix[block] @ matrix.T + mask
        scores[np.arange(len(block)), block] = -np.inf
        k = min(depth, scores.shape[1]) - 1
        kth = np.partition(scores, -1 - k, axis=1)[:, -1 - k]
        for n, row in enumerate(block.tolist()):
            line = scores[n]
            close = np.flatnonzero(line >= max(float(kth[n]), floor))  # ties at the cut included, then cut by id
            best = sorted(close.tolist(), key=lambda j: (-float(line[j]), ids[j]))[:depth]
            out.extend((row, j, float(line[j])) for j in best)
    return out
