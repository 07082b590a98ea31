"""`quipu supersede OLD NEW`: mark OLD as replaced by NEW (a commit; OLD stays, labelled)."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.capture import profile_remove
from quipu.commands._common import add_json, as_recorded, open_store
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "supersede",
        help="mark a memory as replaced by another",
        description="Mark OLD as superseded by NEW. Nothing is deleted: OLD stays searchable with a label "
        "and a ranking penalty; `quipu undo` reverts the decision. When OLD is already superseded by NEW, "
        "nothing is written and the decision in force is named; when NEW is itself replaced, directly or "
        "through others, by OLD, nothing is written either (neither would be current).",
    )
    p.add_argument("old", help="the id of the outdated memory")
    p.add_argument("new", help="the id of the memory that replaces it")
    p.add_argument("--reason", default="", help="why (kept in the event)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    before = store.supersession(args.old)
    reason = as_recorded(args.reason, "reason") if args.reason else ""
    sha, off_card = profile_remove.supersede(store, args.old, args.new, reason=reason)
    already = before == (args.new, sha)
    index.refresh_after_write(store)
    if args.json:
        print_json({"commit": sha, "old": args.old, "new": args.new, "already": already,
                    "profile_lines_removed": [line.entry for line in off_card]})
    elif already:
        print(f"{args.old} is already superseded by {args.new}; nothing was written  [commit {sha[:12]}]")
    else:
        print(f"{args.old} is now superseded by {args.new}  [commit {sha[:12]}; undo with `quipu undo {sha[:12]}`]")
        for line in off_card:
            print(f"Also took {args.old}'s line off the profile card, in the same commit: {line.entry}")
    return 0
