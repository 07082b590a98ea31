"""`quipu show ID`: a memory with its current labels, links and history (the commits that changed
it, read from what each did: ``quipu.store.audit``)."""
from __future__ import annotations

import argparse

from quipu.commands._common import add_json, open_stores
from quipu.errors import NotFound
from quipu.output import print_json
from quipu.verify.report import details, text_lines


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("show", help="show one memory", description="Show a memory, its labels, links and history "
                       "(inside a project with its own store, from the per-user store when the project's lacks it). "
                       "The history is the commits that changed the memory, by hand, by sync or by undo too, each "
                       "said by what it did to it, as `quipu log --memory ID` lists them.")
    p.add_argument("id", help="the memory's id")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    stores = open_stores(args)
    for store in stores:  # the project's store first, then the user's
        try:
            d = details(store, args.id)
            break
        except NotFound:
            if store is stores[-1]:
                raise
    if args.json:
        print_json(d)
    else:
        print("\n".join(text_lines(d)))
    return 0
