"""`quipu index`: refresh or rebuild the search index from git."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.commands._common import add_json, open_store
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "index",
        help="refresh or rebuild the search index",
        description="The index is a cache of the store; every read refreshes it. --rebuild recreates it from git.",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--rebuild", action="store_true", help="rebuild from scratch")
    group.add_argument("--refresh", action="store_true", help="bring it up to HEAD (the default)")
    p.add_argument("--quiet", action="store_true", help="print nothing")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    result = index.ensure_fresh(store, force_rebuild=args.rebuild)
    if args.quiet:
        return 0
    if args.json:
        print_json(result._asdict() if hasattr(result, "_asdict") else result.__dict__)
    else:
        print(f"Index {result.action}: {result.changed} change(s), {result.problems} problem file(s), "
              f"{result.seconds * 1000:.0f} ms, at {(result.head or '')[:12]}")
    return 0
