"""`quipu undo`: revert a commit, a memory's latest decision, or a whole sweep; never delete a memory."""
from __future__ import annotations

import argparse

from quipu.index import index
from quipu.commands._common import add_json, named, open_store
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "undo",
        help="revert a decision",
        description="Revert one commit, the latest decision still in force about a memory (--memory: a "
        "supersession, a label, a review, a sweep's verdict, an edit of its text), or every commit of a "
        "sweep (--sweep). Each revert is a commit of its own, so undo can be undone too. Undo never "
        "deletes a memory: undoing a commit that created memories (an add, an import, a sweep's or a "
        "profile move's) keeps them, retracted, in one commit that one undo takes back; --memory never "
        "undoes a memory's creation (exit 1, with how to retract it: `quipu retract ID`). "
        "Whether a commit is already undone is read from what the store holds, not from commit messages.",
    )
    # Exactly one of the three: argparse says which is missing or which clash, and exits 2 (a usage error).
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("commit", nargs="?", type=named, help="a commit id (see `quipu log`)")
    which.add_argument("--memory", metavar="ID", type=named, help="undo the latest decision about this memory")
    which.add_argument("--sweep", metavar="ID", type=named, help="undo every commit of this sweep")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from quipu.store import undo

    store = open_store(args)
    done = undo.undo(store, commit=args.commit, memory=args.memory, sweep=args.sweep)
    index.refresh_after_write(store)
    if args.json:
        print_json(done.to_json())
        return 0
    for what in done.undid:
        print(f"Undid {what}")
    if done.retracted:
        kept = done.retracted
        print(f"Kept and retracted (undo never deletes a memory): {', '.join(kept[:10])}"
              + (f" and {len(kept) - 10} more (`quipu list --status retracted`)" if len(kept) > 10 else ""))
    if done.commits:
        print(f"  [{len(done.commits)} commit(s): {', '.join(sha[:12] for sha in done.commits)}]")
    if args.memory:
        if done.left:
            print(f"Left to undo for {args.memory}: " + "; ".join(
                f"{d.words} (commit {d.commit[:12]})" for d in done.left[:3])
                + (f" and {len(done.left) - 3} more" if len(done.left) > 3 else ""))
        else:
            print(f"Left to undo for {args.memory}: no decision"
                  + (" (its creation stays: undo never deletes a memory; "
                     f"`quipu retract {args.memory}` takes it out of recall)" if done.creation_left else ""))
    return 0
