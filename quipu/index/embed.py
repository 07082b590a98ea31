"""Meaning search without a model: an averaged static embedding table, read with numpy.

The table is wordllama's ``l2_supercat_256`` (MIT): one 256-number vector per piece of the
Llama-2 BPE vocabulary (32,000 pieces), shipped inside the ``wordllama`` wheel, so it installs
from the package registry and nothing is downloaded at run time. wordllama itself is never
imported (it pulls in pydantic, requests and a hub client); only its two data files are read.

Contract:
- ``locate()`` finds the weights and the tokenizer file of the installed wheel without importing
  it; ``None`` when it is not installed (meaning search is then off and says so).
- A text's vector is the weighted mean of its pieces' rows, scaled to unit length. Each piece
  weighs ``id / (id + ZIPF_C)``: Llama-2's BPE ids follow merge order, roughly frequency order, so
  this is a smooth inverse-frequency weight (SIF-like) that lets "the", "now" and punctuation
  count for little. With every weight 1 it is exactly wordllama's ``embed(..., norm=True)`` (a
  test checks that). A text with no piece is the zero vector (it matches nothing), never NaN.
- ``Pieces`` is the BPE of the tokenizer file (merge ranks, byte fallback), run in Python word by
  word with a cache: the ``tokenizers`` package costs about 250 ms to load its file, more than a
  whole search. For one query, ``Pieces.from_db`` reads the merge ranks it needs from a small
  SQLite copy of the file (``pieces_db``), so a search never parses the 1.8 MB file; a long text
  (a session's body of thousands of words) reads both tables whole into dicts after
  ``BULK_AFTER`` look-ups, never one query per pair of symbols.
- ``Pieces`` and ``Embedder`` may be kept and used from any thread (a long-lived server runs
  each call on a worker thread of its pool): ``pieces_db``'s connection is not tied to the
  thread that opened it and ``Pieces.from_db`` reads it under a lock of its own; an
  ``Embedder`` is never changed by a query (``weighed`` gives a view with other weights), except
  that a bulk one widens each row of the table the first time a text needs it (the same values,
  whichever thread writes them). A bulk embedder's ``many`` keeps the summed rows of up to
  ``WORDS_KEPT`` words between calls (a backfill's batches share most of their words): it is for
  one thread at a time.
- numpy is imported here and by the history index only: never on the prompt path.
"""
from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sqlite3
import struct
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

NAME = "wordllama-l2_supercat_256"
DIM = 256
_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
_SPACE = "\u2581"  # SentencePiece's word-start mark
_GROUP = 256  # texts summed at once while embedding many (a 256 KB buffer of float32 rows: it stays in the cache)
# Measured once on LoCoMo's turns (text without speaker names), dense only within each
# conversation, 1,982 questions: R@5 0.238 with plain means, 0.256 with ZIPF_C = 3000; 1000 and
# 10000 were no better, and removing stop words or the common direction made it worse.
ZIPF_C = 3000.0
_NO_RANK = 1 << 62  # a pair with no merge
MAX_WORDS = 2_000  # words of one text that count (a pasted log says nothing more after that)
WORDS_KEPT = 50_000  # distinct words whose summed rows a bulk embedder keeps between calls (50 MB at most)
BULK_AFTER = 2_000  # look-ups of one Pieces.from_db after which its tables are read whole (about 40 ms)

Vector = npt.NDArray[np.float32]


class Files(NamedTuple):
    weights: Path
    tokenizer: Path


def locate() -> Files | None:
    """The wheel's weights and tokenizer files, or None when wordllama is not installed."""
    try:
        spec = importlib.util.find_spec("wordllama")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        files = Files(Path(folder).joinpath(*_WEIGHTS), Path(folder).joinpath(*_TOKENIZER))
        if files.weights.is_file() and files.tokenizer.is_file():
            return files
    return None


def load_table(path: Path) -> npt.NDArray[np.float16]:
    """The embedding table of a safetensors file, memory-mapped (8-byte header length, a JSON
    header, then the raw little-endian array)."""
    with path.open("rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
    name = next(k for k in header if k != "__metadata__")
    info = header[name]
    if info["dtype"] != "F16" or len(info["shape"]) != 2:
        raise ValueError(f"{path}: expected a 2-d float16 table, found {info['dtype']} {info['shape']}")
    start, end = info["data_offsets"]
    rows, dim = info["shape"]
    return np.memmap(path, dtype="<f2", mode="r", offset=8 + size + start, shape=(rows, dim))


class Pieces:
    """Llama-2 BPE: a word becomes vocabulary ids (merges by rank, unknown characters as bytes)."""

    def __init__(self, rank: Callable[[str], int | None], piece_id: Callable[[str], int | None]) -> None:
        self._rank = rank
        self._id = piece_id
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_file(cls, path: Path) -> Pieces:
        model = json.loads(path.read_text(encoding="utf-8"))["model"]
        ranks = {pair: i for i, pair in enumerate(model["merges"])}
        vocab: dict[str, int] = model["vocab"]
        return cls(ranks.get, vocab.get)

    @classmethod
    def from_db(cls, db: sqlite3.Connection) -> Pieces:
        """Pieces read from ``pieces_db``'s connection, one query at a time whatever the thread
        (the connection must allow other threads, as ``pieces_db``'s does). A short query costs a
        few look-ups; once a long text has needed ``BULK_AFTER`` of them, both tables are read
        whole (one query each) into dicts and the rest is looked up in memory."""
        lock = threading.Lock()
        asked = [0]
        tables: list[tuple[dict[str, int], dict[str, int]]] = []

        def loaded() -> tuple[dict[str, int], dict[str, int]] | None:
            if tables:
                return tables[0]
            asked[0] += 1
            if asked[0] < BULK_AFTER:
                return None
            tables.append((dict(db.execute("SELECT pair, rank FROM bpe_merge").fetchall()),
                           dict(db.execute("SELECT piece, id FROM bpe_vocab").fetchall())))
            return tables[0]

        def rank(pair: str) -> int | None:
            with lock:
                whole = loaded()
                if whole is not None:
                    return whole[0].get(pair)
                row = db.execute("SELECT rank FROM bpe_merge WHERE pair = ?", (pair,)).fetchone()
            return None if row is None else int(row[0])

        def piece_id(piece: str) -> int | None:
            with lock:
                whole = loaded()
                if whole is not None:
                    return whole[1].get(piece)
                row = db.execute("SELECT id FROM bpe_vocab WHERE piece = ?", (piece,)).fetchone()
            return None if row is None else int(row[0])

        return cls(rank, piece_id)

    def word(self, word: str) -> tuple[int, ...]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        symbols = list(_SPACE + word)
        # Each step merges the adjacent pair of lowest rank (the leftmost on a tie); only the two
        # pairs beside a merge change, so only they are looked up again.
        rank = self._rank
        ranks = [_NO_RANK if (r := rank(f"{a} {b}")) is None else r for a, b in zip(symbols, symbols[1:], strict=False)]
        while ranks:
            best_rank = min(ranks)
            if best_rank == _NO_RANK:
                break
            best = ranks.index(best_rank)
            symbols[best:best + 2] = [symbols[best] + symbols[best + 1]]
            del ranks[best]
            if best < len(ranks):
                ranks[best] = _NO_RANK if (r := rank(f"{symbols[best]} {symbols[best + 1]}")) is None else r
            if best > 0:
                ranks[best - 1] = _NO_RANK if (r := rank(f"{symbols[best - 1]} {symbols[best]}")) is None else r
        ids: list[int] = []
        for s in symbols:
            found = self._id(s)
            if found is not None:
                ids.append(found)
                continue
            for byte in s.encode("utf-8"):  # byte fallback: <0x41>
                b = self._id(f"<0x{byte:02X}>")
                if b is not None:
                    ids.append(b)
        out = tuple(ids)
        if len(self._cache) < 500_000:
            self._cache[word] = out
        return out

    def text(self, text: str) -> list[int]:
        ids: list[int] = []
        cache = self._cache
        for w in text.split()[:MAX_WORDS]:
            found = cache.get(w)
            ids.extend(self.word(w) if found is None else found)
        return ids

    def known(self, words: dict[str, tuple[int, ...]]) -> None:
        """Words whose pieces are known already (a cache kept elsewhere)."""
        self._cache.update(words)


def pieces_db(path: Path, tokenizer: Path) -> sqlite3.Connection:
    """A read connection to the tokenizer's merge ranks and vocabulary (for ``Pieces.from_db``),
    built from the wheel's file the first time (into a temporary file, then renamed); usable
    from any thread (``Pieces.from_db`` serialises its queries)."""
    if not path.is_file():
        model = json.loads(tokenizer.read_text(encoding="utf-8"))["model"]
        tmp = path.with_name(f"{path.name}.{os.getpid()}.new")
        db = sqlite3.connect(tmp)
        db.execute("CREATE TABLE bpe_merge(pair TEXT PRIMARY KEY, rank INTEGER NOT NULL) WITHOUT ROWID")
        db.execute("CREATE TABLE bpe_vocab(piece TEXT PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID")
        db.executemany("INSERT OR IGNORE INTO bpe_merge VALUES (?, ?)", ((p, i) for i, p in enumerate(model["merges"])))
        db.executemany("INSERT OR IGNORE INTO bpe_vocab VALUES (?, ?)", model["vocab"].items())
        db.commit()
        db.close()
        os.replace(tmp, path)
    return sqlite3.connect(path, check_same_thread=False)


class Bag(NamedTuple):
    """Texts as lists of word numbers, and each distinct word's pieces: splitting a word into
    pieces and adding up its rows are then paid once per distinct word, not once per occurrence
    (a text has about a third as many words as pieces)."""

    rows: list[list[int]]  # each text's words (at most MAX_WORDS), by number
    words: list[tuple[int, ...]]  # each numbered word's pieces

    @classmethod
    def of(cls, texts: Sequence[str], pieces: Pieces) -> Bag:
        split = [t.split()[:MAX_WORDS] for t in texts]
        distinct = list(dict.fromkeys(itertools.chain.from_iterable(split)))
        number = {w: n for n, w in enumerate(distinct)}
        return cls([list(map(number.__getitem__, words)) for words in split], [pieces.word(w) for w in distinct])

    def piece_counts(self) -> npt.NDArray[np.int64]:
        """How often each piece id occurs over all the texts (index: piece id)."""
        flat = np.fromiter(itertools.chain.from_iterable(self.words), dtype=np.int64)
        if not flat.size:
            return np.zeros(0, dtype=np.int64)
        uses = np.bincount(np.fromiter(itertools.chain.from_iterable(self.rows), dtype=np.int64),
                           minlength=len(self.words))
        lengths = np.fromiter(map(len, self.words), dtype=np.int64, count=len(self.words))
        return np.rint(np.bincount(flat, weights=np.repeat(uses, lengths))).astype(np.int64)


class Embedder:
    """Texts to unit vectors with the static table."""

    def __init__(self, table: npt.NDArray[np.float16], pieces: Pieces, *, zipf_c: float = ZIPF_C,
                 bulk: bool = False, weights: npt.NDArray[np.float32] | None = None) -> None:
        self.pieces = pieces
        self.zipf_c = zipf_c
        self.weights = weights  # one weight per piece id, in place of the Zipf weight (quipu.index.vectors)
        self.dim = int(table.shape[1])
        self.rows = int(table.shape[0])  # the vocabulary's size: one row per piece id
        self._table = table
        # Bulk embedding gathers millions of rows: each row of the table is weighed and widened
        # once, the first time a text needs it (most texts use a fraction of the 32,000 pieces).
        # Plus one zero row, the padding of _gather_sum. Filling a row twice writes the same values.
        self._bulk: npt.NDArray[np.float32] | None = None
        self._widened = np.zeros(0, dtype=bool)
        self._words: dict[str, int] = {}  # a bulk embedder's words by number, their rows summed in _summed
        self._summed = np.zeros((0, self.dim), dtype=np.float32)
        if bulk:
            self._bulk = np.zeros((self.rows + 1, self.dim), dtype=np.float32)
            self._widened = np.zeros(self.rows + 1, dtype=bool)
            self._widened[-1] = True

    def _bulk_rows(self, lists: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        """The bulk table, with every row ``lists`` name weighed and widened."""
        assert self._bulk is not None
        ids = np.unique(np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64))
        todo = ids[~self._widened[ids]]
        if todo.size:
            self._bulk[todo] = self._weighted(self._table[todo], todo)
            self._widened[todo] = True
        return self._bulk

    def _word_rows(self, every: list[str]) -> npt.NDArray[np.float32]:
        """A bulk embedder's sum of each word's rows, by the word's number in ``_words``, with a
        zero row last (the padding of ``_sum_runs``): the words of ``every`` not summed yet are
        summed now. Past ``WORDS_KEPT`` words, the ones kept are let go first."""
        new = set(every)
        new.difference_update(self._words)
        if len(self._words) + len(new) > WORDS_KEPT:
            self._words = {}
            new = set(every)
        first = len(self._words)
        fresh = list(new)
        self._words.update(zip(fresh, itertools.count(first)))
        size = first + len(fresh) + 1
        if self._summed.shape[0] < size:
            grown = np.zeros((max(size, 2 * self._summed.shape[0], 4096), self.dim), dtype=np.float32)
            grown[:first] = self._summed[:first]
            self._summed = grown
        rows = self._summed[:size]
        rows[first:] = 0.0
        # The new words' pieces, weighed and widened here (a few thousand rows, once each):
        # the bulk table would be written all over for them.
        word_pieces = [self.pieces.word(w) for w in fresh]
        counts = np.fromiter(map(len, word_pieces), dtype=np.int64, count=len(word_pieces))
        flat = np.fromiter(itertools.chain.from_iterable(word_pieces), dtype=np.int64, count=int(counts.sum()))
        ids, where = np.unique(flat, return_inverse=True)
        source = np.zeros((len(ids) + 1, self.dim), dtype=np.float32)  # a zero row last: the padding
        source[:-1] = self._weighted(self._table[ids], ids)
        _sum_runs(source, where.reshape(-1), counts, rows[first:-1])
        return rows

    def weighed(self, weights: npt.NDArray[np.float32]) -> Embedder:
        """This embedder with one weight per piece id (shares the table and the pieces; never bulk)."""
        return Embedder(self._table, self.pieces, zipf_c=self.zipf_c, weights=weights)

    @classmethod
    def load(cls, files: Files, pieces: Pieces | None = None, *, bulk: bool = False,
             weights: npt.NDArray[np.float32] | None = None) -> Embedder:
        return cls(load_table(files.weights), pieces or Pieces.from_file(files.tokenizer), bulk=bulk, weights=weights)

    def _weighted(self, rows: npt.NDArray[np.float16], ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32] = np.asarray(rows, dtype=np.float32)
        if self.weights is not None:
            out = out * self.weights[ids][:, None]
        elif self.zipf_c:
            out = out * (ids / (ids + self.zipf_c)).astype(np.float32)[:, None]
        return out

    def one(self, text: str) -> Vector:
        vector: Vector = self.many([text])[0]
        return vector

    def many(self, texts: Sequence[str], pieces: list[list[int]] | None = None) -> npt.NDArray[np.float32]:
        """Unit vectors of ``texts`` (rows in the same order); ``pieces``: their pieces, when known."""
        if self._bulk is not None and pieces is None:
            # Every word of every text numbered in one flat array (no list per text): each
            # distinct word's rows are added up once for all the calls, then each text's words.
            split = [t.split() for t in texts]
            split = [words if len(words) <= MAX_WORDS else words[:MAX_WORDS] for words in split]
            counts = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
            every = list(itertools.chain.from_iterable(split))
            rows = self._word_rows(every)
            out = np.zeros((len(texts), self.dim), dtype=np.float32)
            _sum_runs(rows, np.fromiter(map(self._words.__getitem__, every), dtype=np.int64, count=len(every)),
                      counts, out)
            return _unit(out)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if pieces is None:
            pieces = [self.pieces.text(t) for t in texts]
        if self._bulk is None:
            for i, ids in enumerate(pieces):
                if ids:
                    flat = np.array(ids, dtype=np.int64)
                    out[i] = self._weighted(self._table[flat], flat).sum(axis=0)
        else:
            _gather_sum(self._bulk_rows(pieces), pieces, out)
        return _unit(out)

    def word_rows(self, bag: Bag) -> npt.NDArray[np.float32]:
        """Each of the bag's words as the weighted sum of its pieces' rows, plus a zero row last
        (the padding of ``of_bag``). Bulk embedders only."""
        assert self._bulk is not None
        words = np.zeros((len(bag.words) + 1, self.dim), dtype=np.float32)
        _gather_sum(self._bulk_rows(bag.words), bag.words, words[:-1])
        return words

    def of_bag(self, word_rows: npt.NDArray[np.float32], rows: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        """Unit vectors of texts given as word numbers, from ``word_rows`` of their bag."""
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        _gather_sum(word_rows, rows, out)
        return _unit(out)


def _unit(out: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out /= norms
    return out


def _gather_sum(source: npt.NDArray[np.float32], lists: Sequence[Sequence[int]], out: npt.NDArray[np.float32]) -> None:
    """``out[i]`` = the sum of ``source``'s rows ``lists[i]``, for many lists (``_sum_runs``);
    rows of empty lists are left as they are."""
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(counts.sum()))
    _sum_runs(source, flat, counts, out)


def _sum_runs(source: npt.NDArray[np.float32], flat: npt.NDArray[np.int64], counts: npt.NDArray[np.int64],
              out: npt.NDArray[np.float32]) -> None:
    """``out[i]`` = the sum of ``source``'s rows named by the i-th run of ``flat`` (``counts[i]``
    long): runs sorted by length, each group of ``_GROUP`` padded to its longest with
    ``source``'s last row (zero), and summed one column of rows at a time into a (group, dim)
    buffer that stays in the cache (faster than gathering a (group, length, dim) array and
    summing it, ten times faster than ``np.add.reduceat`` over ragged runs). Rows of empty runs
    are left as they are."""
    if not counts.any():
        return
    starts = np.cumsum(counts) - counts
    order = np.argsort(counts, kind="stable")
    order = order[counts[order] > 0]
    pad = source.shape[0] - 1
    buffer = np.empty((min(_GROUP, len(order)), source.shape[1]), dtype=np.float32)
    for first in range(0, len(order), _GROUP):
        group = order[first:first + _GROUP]
        lengths = counts[group]
        columns = np.arange(int(lengths[-1]))
        inside = columns < lengths[:, None]
        idx = np.full((len(group), len(columns)), pad, dtype=np.int64)
        idx[inside] = flat[(starts[group][:, None] + columns)[inside]]
        total = np.zeros((len(group), source.shape[1]), dtype=np.float32)
        row = buffer[:len(group)]
        for column in idx.T:
            np.take(source, column, axis=0, out=row)
            total += row
        out[group] = total
