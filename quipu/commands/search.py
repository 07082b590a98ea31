"""`quipu search QUERY`: the deep list over the whole store (words and meaning fused; no floor,
no session)."""
from __future__ import annotations

import argparse
import os
import sqlite3

from quipu.index import deep
from quipu.index import index
from quipu.index import layered
from quipu.commands._common import add_json, count, open_stores
from quipu.output import print_json
from quipu.store.store import Store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "search",
        help="search memories",
        description="Search memories by words (stemmed, whole words) and by meaning (a static embedding, "
        "when installed), fused by rank, then labels and age. Unlike the prompt hook, search has no score floor and shows "
        "superseded memories too (below their successors). Inside a project with its own store, the per-user "
        "store is searched too and each hit names its store.",
    )
    p.add_argument("query", help="words to search for")
    p.add_argument("--limit", type=count(), default=10, help="at most this many results (default 10)")
    p.add_argument("--words-only", action="store_true", help="no meaning search: words alone")
    p.add_argument("--explain", action="store_true", help="show each hit's lexical and meaning ranks, the "
                   "fused score and what labels and age did")
    add_json(p)
    p.set_defaults(func=run)


def search(store: Store, query: str, *, limit: int = 10, words_only: bool = False) -> deep.Deep:
    """The deep list: every content term by BM25, plus meaning search, fused by rank."""

    def read(db: sqlite3.Connection) -> deep.Deep:
        nearest = None if words_only else _nearest(store, db)
        return deep.search(db, query, limit=limit, nearest=nearest)

    return index.query(store, read)


def _nearest(store: Store, db: sqlite3.Connection) -> deep.Nearest | None:
    """Meaning search over the store's vectors (brought up to the index first), or None when the
    embedding is not installed or the vectors cannot be kept."""
    from quipu.index import vectors

    cache = index.index_file(store).parent
    found = vectors.ensure_vectors(cache, db)
    if found is None:
        return None
    encoder = vectors.encoder(cache)
    if encoder is None:  # pragma: no cover - ensure_vectors checked it
        return None

    def nearest(query: str, depth: int, centred: bool) -> list[tuple[str, float]]:
        return vectors.nearest(found, found.embed(encoder, query), depth, centred)

    return nearest


def run(args: argparse.Namespace) -> int:
    # One query vector against the store's: waking OpenBLAS's threads (at numpy's import and at
    # the product) costs more than they save; read when numpy loads (bench/bench_deep.py).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    result = layered.merge([(store.layer, search(store, args.query, limit=args.limit, words_only=args.words_only))
                            for store in open_stores(args)], args.limit)
    if args.json:
        print_json(result.to_json() if args.explain else [h.to_json() for h in result.hits])
        return 0
    if not result.hits:
        print(f"No memories match: {result.reason or 'nothing was found'}.")
        return 0
    if args.explain:
        print(f"terms: {', '.join(result.terms) or '(none)'}; meaning search: "
              f"{'on' if result.meaning else 'off'}" + (f" ({result.words_alone})" if result.words_alone else ""))
    for hit in result.hits:
        labels = hit.label_text()
        print(f"{hit.id}  {hit.title}" + (f"  [{labels}]" if labels else "") + f"  score {hit.score:.4f}"
              + (f"  store: {hit.store}" if hit.store else ""))
        if args.explain:
            print("    " + _explain(hit))
        if hit.snippet:
            print(f"    {hit.snippet}")
    return 0


def _explain(hit: deep.Hit) -> str:
    lexical = f"lexical #{hit.lexical_rank} (bm25 {hit.bm25:.2f})" if hit.lexical_rank else "lexical -"
    meaning = f"meaning #{hit.meaning_rank} (cosine {hit.cosine:.3f})" if hit.meaning_rank else "meaning -"
    parts = [lexical, meaning]
    parts.append(f"fused {hit.fused:.4f}")
    if hit.label_factor != 1.0:
        parts.append(f"labels x{hit.label_factor:g}")
    if hit.age_factor < 0.9995:  # what shows at three decimals
        parts.append(f"age x{hit.age_factor:.3f}")
    return "; ".join(parts)
