"""`quipu label ID LABEL`: set or clear a label on a memory (a commit of its own)."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.commands._common import add_json, open_store
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("label", help="set or clear a label", description="Set (or with --remove clear) a label such as 'unverified'.")
    p.add_argument("id", help="the memory's id")
    p.add_argument("label", help="the label")
    p.add_argument("--remove", action="store_true", help="clear the label instead of setting it")
    p.add_argument("--detail", default="", help="a note shown beside the label")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    sha = store.label(args.id, args.label, not args.remove, detail=args.detail)
    index.refresh_after_write(store)
    if args.json:
        print_json({"commit": sha, "id": args.id, "label": args.label, "set": not args.remove})
    else:
        print(f"{'Cleared' if args.remove else 'Set'} label {args.label} on {args.id}  [commit {sha[:12]}]")
    return 0
