"""`quipu retract ID`: take a memory out of recall and search, kept in history (a decision `quipu undo` reverts)."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.capture import profile_remove
from quipu.commands._common import add_json, as_recorded, open_store
from quipu.commands.label import labelled
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "retract",
        help="take a memory out of recall and search (nothing is deleted)",
        description="Retract a memory written by mistake: it gets the label 'retracted', leaves recall, "
        "search and the always-on layer, and stays in the store and its history (`quipu show` still shows "
        "it). A profile line that came from it comes off the card in the same commit. A commit of its own: "
        "`quipu undo --memory ID` brings it back, with that line (`quipu label ID retracted --remove` brings "
        "back the memory alone).",
    )
    p.add_argument("id", help="the memory's id")
    p.add_argument("--reason", default="", help="why (kept in the event)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.id in labelled(store, "retracted"):
        if args.json:
            print_json({"commit": None, "id": args.id, "retracted": True, "already": True})
        else:
            print(f"{args.id} is already retracted; nothing was written (`quipu undo --memory {args.id}` brings it back)")
        return 0
    reason = as_recorded(args.reason, "reason") if args.reason else ""
    sha, off_card = profile_remove.retract(store, args.id, reason=reason)
    index.refresh_after_write(store)
    if args.json:
        print_json({"commit": sha, "id": args.id, "retracted": True, "already": False,
                    "profile_lines_removed": [line.entry for line in off_card]})
    else:
        print(f"Retracted {args.id}: out of recall and search, kept in the store  "
              f"[commit {sha[:12]}; undo with `quipu undo --memory {args.id}`]")
        for line in off_card:
            print(f"Also took its line off the profile card, in the same commit (the undo puts it back): {line.entry}")
    return 0
