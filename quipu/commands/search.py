"""`quipu search QUERY`: ranked full-text search over the whole store (no floor, no session)."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.prompt import recall
from quipu.commands._common import add_json, open_store
from quipu.output import print_json
from quipu.store.store import Store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "search",
        help="search memories",
        description="Search memories by words (stemmed, whole words). Unlike the prompt hook, search "
        "has no score floor and shows superseded memories too.",
    )
    p.add_argument("query", help="words to search for")
    p.add_argument("--limit", type=int, default=10, help="at most this many results (default 10)")
    add_json(p)
    p.set_defaults(func=run)


def search(store: Store, query: str, *, limit: int = 10) -> recall.Recall:
    """Ranked full-text search over the whole store: no score floor, superseded memories too."""
    options = recall.Options(limit=limit, min_score=0.0, rarest=8, fact_slots=None, require_topic=False)
    return index.query(store, lambda db: recall.recall(db, query, "", options))


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    result = search(store, args.query, limit=args.limit)
    if args.json:
        print_json([h.to_json() for h in result.hits])
        return 0
    if not result.hits:
        print(f"No memories match ({result.reason}).")
        return 0
    for hit in result.hits:
        labels = hit.label_text()
        print(f"{hit.id}  {hit.title}" + (f"  [{labels}]" if labels else "") + f"  score {hit.score:.2f}")
        if hit.snippet:
            print(f"    {hit.snippet}")
    return 0
