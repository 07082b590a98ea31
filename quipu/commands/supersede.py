"""`quipu supersede OLD NEW`: mark OLD as replaced by NEW (a commit; OLD stays, labelled)."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.prompt.inject import successors
from quipu.capture import profile_remove
from quipu.commands._common import add_json, as_recorded, open_store
from quipu.errors import FatalError
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
    ahead = index.query(store, lambda db: successors(db, args.new))
    retracted = index.rows(store, "SELECT 1 FROM memories WHERE id = ? AND status = 'retracted'", (args.new,))
    if retracted:
        raise FatalError(f"{args.new} is retracted: superseding {args.old} by it would leave neither current; "
                         f"nothing was written\n- bring {args.new} back first (`quipu undo --memory {args.new}`), "
                         "or supersede by a memory in force")
    if args.old in ahead:
        chain = " by ".join([args.new, *ahead[:ahead.index(args.old) + 1]])
        raise FatalError(f"{args.new} is itself superseded by {args.old} ({chain}): superseding {args.old} by "
                         f"{args.new} would leave neither current; nothing was written\n"
                         f"- to make {args.new} current again, undo that decision: `quipu undo --memory {args.new}`")
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
