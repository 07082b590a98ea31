"""`quipu undo`: revert a commit, a memory's last action, or a whole sweep."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.commands._common import add_json, open_store
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "undo",
        help="revert a change",
        description="Revert one commit, the last action on a memory (--memory), or every commit of a "
        "sweep (--sweep). Each revert is a commit of its own, so undo can be undone too.",
    )
    p.add_argument("commit", nargs="?", help="a commit id (see `quipu log`)")
    p.add_argument("--memory", metavar="ID", help="undo the last action on this memory")
    p.add_argument("--sweep", metavar="ID", help="undo every commit of this sweep")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    made = store.undo(commit=args.commit, memory=args.memory, sweep=args.sweep)
    index.refresh_after_write(store)
    if args.json:
        print_json({"reverts": made})
    else:
        for sha in made:
            print(f"Reverted  [commit {sha[:12]}]")
    return 0
