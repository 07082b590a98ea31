"""How much each hit of the deep list looks like what was asked: its features, and trees that weigh them.

Contract:
- The candidates of a query that names something specific are the fused list (``quipu.index.deep``)
  and the thread neighbours (``quipu.index.thread``: the memory written just before or just after
  in the same session) of its best ``THREAD_DEPTH`` hits that the list lacks. In a conversation
  an answer follows its question and shares none of its words ("That road trip sounds great!
  Where did you go?" / "I went to Woodhaven, a small town in the Midwest."); in a store of
  captured notes, what one session wrote belongs together. A memory without a session has no
  thread and brings no one.
- ``candidates_and_features`` gives each candidate one row, in the order of ``FEATURES``: its own evidence (the
  fused score, BM25 and closeness, each against the list's; whether it asks a question; its
  length up to ``LENGTH_CAP`` words; its share of the query), that of the memories before and
  after it in its thread, and the best of its session among the candidates. Missing parts (no
  thread, no meaning search) are 0; a memory without a session is its own session.
- ``Model`` is a sum of regression trees (``quipu/data/rerank_trees.json``), fitted by
  ``bench/bench_locomo.py --fit`` with LightGBM's LambdaRank and read here with the standard
  library. A candidate's evidence is the logistic of its trees' sum: it orders the list, and
  labels and age then multiply it (``quipu.index.deep``).
- ``from_lightgbm`` turns a LightGBM model dump into that file's trees; it refuses a split it
  cannot read the same way (anything but "<=", or zero read as a missing value; no feature is
  ever missing, so where a missing value would go does not matter).
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from quipu.index import thread
from quipu.prompt import indexread
from quipu.prompt.query import fts_quote

# Neighbours are gathered around this many of the fused list's best hits. In a side study on
# LoCoMo (trees fitted on nine conversations, measured on the tenth), the threads of the best 20
# gave R@5 0.727 and those of the best 40 0.730, with up to 40 more candidates to score; with none
# the candidates hold 0.768 of the evidence, with 20 0.879.
THREAD_DEPTH = 20
# Learnt from conversation turns of 2 to 98 words (the 1,797 real notes run from 8 to 172, median
# 20), so the length stops growing where they stop: a long note is not more of an answer for its
# length beyond what the fit has seen.
LENGTH_CAP = 100
OWN = ("fused", "words", "meaning", "asks", "length", "share")
FEATURES = (*OWN, "before_fused", "before_words", "before_asks", "before_share", "after_fused", "after_share",
            "session_fused", "session_share")
_FUSED, _WORDS, _ASKS, _SHARE = (OWN.index(name) for name in ("fused", "words", "asks", "share"))
MODEL_FILE = "rerank_trees.json"
# FTS5 answers "MATCH ? AND rowid IN (...)" by seeking each listed row (about 14 us each here),
# and a plain MATCH by reading the term's list (about 0.3 us an entry): for a term in fewer than
# this many memories per listed row, the whole list is read and the rows picked out of it.
WHOLE_LIST_PER_ROW = 40
# One of the deep list's fused hits: (id, fused score, lexical rank, meaning rank).
Fused = tuple[str, float, int | None, int | None]
# A tree: a leaf's value, or (split feature, threshold, the tree where the feature is at most the
# threshold, the tree where it is more).
Node = float | tuple[int, float, "Node", "Node"]


class Scored(NamedTuple):
    id: str
    evidence: float  # the logistic of the trees' sum: how much the memory looks like what was asked
    thread_of: str | None  # the fused hit whose thread brought it, when the fused list lacked it


class _Memory(NamedTuple):
    rowid: int
    session: str | None
    text: str


class Model:
    """A sum of regression trees over ``FEATURES``. In the file each tree is five lists (split
    features, thresholds, left children, right children, leaf values; a child below 0 is leaf
    ``~child``); here each node is a tuple (feature, threshold, left, right) and each leaf its value."""

    def __init__(self, trees: list[Node]) -> None:
        self.trees = trees

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Model:
        if list(data.get("features", ())) != list(FEATURES):
            raise ValueError(f"the re-ranking's trees were fitted on features {data.get('features')}, not {list(FEATURES)}")
        trees = []
        for t in data["trees"]:
            feature, threshold, left, right, leaf = t["feature"], t["threshold"], t["left"], t["right"], t["leaf"]
            if not leaf or not (len(feature) == len(threshold) == len(left) == len(right) == len(leaf) - 1):
                raise ValueError("a tree of the re-ranking is malformed")
            trees.append(_nested(0 if feature else -1, feature, threshold, left, right, leaf))
        return cls(trees)

    def score(self, rows: Sequence[Sequence[float]]) -> list[float]:
        """The trees' sum for each row."""
        out = []
        for row in rows:
            total = 0.0
            for tree in self.trees:
                node: Any = tree  # type() is tested rather than isinstance(): a third faster here
                while type(node) is tuple:
                    feature, threshold, left, right = node
                    node = left if row[feature] <= threshold else right
                total += node
            out.append(total)
        return out


def _nested(at: int, feature: list[int], threshold: list[float], left: list[int], right: list[int],
            leaf: list[float]) -> Node:
    if at < 0:
        return float(leaf[~at])
    return (int(feature[at]), float(threshold[at]), _nested(left[at], feature, threshold, left, right, leaf),
            _nested(right[at], feature, threshold, left, right, leaf))


_MODEL: Model | None = None


def model() -> Model:
    """The shipped model, read once per process."""
    global _MODEL
    if _MODEL is None:
        # A plain read beside the package: importlib.resources would cost a search more than the file.
        text = (Path(__file__).resolve().parent.parent / "data" / MODEL_FILE).read_text(encoding="utf-8")
        _MODEL = Model.from_json(json.loads(text))
    return _MODEL


def by_evidence(db: Any, terms: Sequence[str], fused: Sequence[Fused], bm25: dict[str, float],
                meaning: Sequence[tuple[str, float]] | None, *, scorer: Model | None = None) -> list[Scored]:
    """The candidates (the fused list and its best hits' thread neighbours), best first by their
    evidence (ties keep the fused order, neighbours after it)."""
    ids, rows, thread_of = candidates_and_features(db, terms, fused, bm25, meaning)
    raw = (scorer or model()).score(rows)
    order = sorted(range(len(ids)), key=lambda n: (-raw[n], n))
    return [Scored(ids[n], _logistic(raw[n]), thread_of.get(ids[n])) for n in order]


def candidates_and_features(db: Any, terms: Sequence[str], fused: Sequence[Fused], bm25: dict[str, float],
                            meaning: Sequence[tuple[str, float]] | None
                            ) -> tuple[list[str], list[list[float]], dict[str, str]]:
    """(candidate ids, their ``FEATURES`` rows, {a neighbour the fused list lacked: the hit that brought it})."""
    fused_ids = [mid for mid, *_r in fused]
    near = thread.neighbours(db, fused_ids)
    thread_of: dict[str, str] = {}
    listed = set(fused_ids)
    for mid in fused_ids[:THREAD_DEPTH]:
        for other in near.get(mid, (None, None)):
            if other is not None and other not in listed and other not in thread_of:
                thread_of[other] = mid
    ids = fused_ids + list(thread_of)
    near.update(thread.neighbours(db, list(thread_of)))
    around = {other for mid in ids for other in near.get(mid, (None, None)) if other is not None}
    memories = _memories(db, [*ids, *(around - set(ids))])
    share = dict(zip(memories, shares(db, terms, [m.rowid for m in memories.values()]), strict=True))

    score = {mid: s for mid, s, *_r in fused}
    top_fused = max(score.values(), default=0.0) or 1.0
    top_words = max((bm25.get(mid, 0.0) for mid in fused_ids), default=0.0) or 1.0
    closeness = [c for _i, c in meaning or ()]
    mean = sum(closeness) / len(closeness) if closeness else 0.0
    spread = math.sqrt(sum((c - mean) ** 2 for c in closeness) / len(closeness)) if closeness else 0.0
    cosine = dict(meaning or ())

    def own(mid: str | None) -> list[float]:
        found = memories.get(mid) if mid is not None else None
        if mid is None or found is None:
            return [0.0] * len(OWN)
        near_mean = (cosine[mid] - mean) / spread if mid in cosine and spread > 0 else 0.0
        return [score.get(mid, 0.0) / top_fused, max(0.0, bm25.get(mid, 0.0)) / top_words, near_mean,
                1.0 if "?" in found.text else 0.0,
                math.log1p(min(LENGTH_CAP, len(found.text.split(maxsplit=LENGTH_CAP)))), share.get(mid, 0.0)]

    mine = {mid: own(mid) for mid in ids}
    best: dict[str, tuple[float, float]] = {}
    for mid in ids:
        session = memories[mid].session if mid in memories else None
        if session is not None:
            f, s = best.get(session, (0.0, 0.0))
            best[session] = (max(f, mine[mid][_FUSED]), max(s, mine[mid][_SHARE]))
    rows = []
    for mid in ids:
        before, after = near.get(mid, (None, None))
        b = mine[before] if before in mine else own(before)
        a = mine[after] if after in mine else own(after)
        session = memories[mid].session if mid in memories else None
        f, s = best[session] if session is not None else (mine[mid][_FUSED], mine[mid][_SHARE])
        rows.append([*mine[mid], b[_FUSED], b[_WORDS], b[_ASKS], b[_SHARE], a[_FUSED], a[_SHARE], f, s])
    return ids, rows, thread_of


def shares(db: Any, terms: Sequence[str], rowids: Sequence[int]) -> list[float]:
    """Each of ``rowids``' share of the query: the IDF (``ln((N + 1) / (df + 0.5))``) of the
    ``terms`` it matches over that of them all (a term no memory has counts in the whole)."""
    if not rowids or not terms:
        return [0.0] * len(rowids)
    total = indexread.store_size_of(db)
    df = indexread.document_frequencies(db, list(dict.fromkeys(terms)))
    marks = ", ".join("?" * len(rowids))
    held = [0.0] * len(rowids)
    place = {r: n for n, r in enumerate(rowids)}
    whole = 0.0
    for term, n in df.items():
        quoted = fts_quote(term)
        idf = math.log((total + 1) / (n + 0.5))
        whole += idf
        if n <= WHOLE_LIST_PER_ROW * len(rowids):  # reading the term's whole list is cheaper than seeking each row
            matched = db.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (quoted,))
        else:
            matched = db.execute(f"SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid IN ({marks})",
                                 [quoted, *rowids])
        for (rowid,) in matched:
            at = place.get(int(rowid))
            if at is not None:
                held[at] += idf
    return [h / whole if whole > 0 else 0.0 for h in held]


def from_lightgbm(dump: dict[str, Any]) -> list[dict[str, list[Any]]]:
    """The trees of a LightGBM ``Booster.dump_model()``, in the form ``Model.from_json`` reads."""
    trees = []
    for info in dump["tree_info"]:
        tree: dict[str, list[Any]] = {"feature": [], "threshold": [], "left": [], "right": [], "leaf": []}
        _flatten(info["tree_structure"], tree)
        trees.append(tree)
    return trees


def _flatten(node: dict[str, Any], tree: dict[str, list[Any]]) -> int:
    """Append ``node`` and what lies below it to ``tree``: its index, or ``~leaf`` for a leaf."""
    if "leaf_value" in node:
        tree["leaf"].append(float(node["leaf_value"]))
        return ~(len(tree["leaf"]) - 1)
    if node.get("decision_type") != "<=" or node.get("missing_type") not in ("None", "NaN"):
        raise ValueError(f"a split this model cannot read: {node.get('decision_type')} "
                         f"(missing values: {node.get('missing_type')})")
    at = len(tree["feature"])
    tree["feature"].append(int(node["split_feature"]))
    tree["threshold"].append(float(node["threshold"]))
    tree["left"].append(0)
    tree["right"].append(0)
    tree["left"][at] = _flatten(node["left_child"], tree)
    tree["right"][at] = _flatten(node["right_child"], tree)
    return at


def _memories(db: Any, ids: Sequence[str]) -> dict[str, _Memory]:
    out: dict[str, _Memory] = {}
    for start in range(0, len(ids), 500):
        part = list(ids[start:start + 500])
        marks = ", ".join("?" * len(part))
        for mid, rowid, session, title, description, body in db.execute(
                f"SELECT id, rowid, session, title, description, body FROM memories WHERE id IN ({marks})", part):
            out[mid] = _Memory(int(rowid), session, "\n".join(p for p in (title, description, body) if p))
    return out


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))
