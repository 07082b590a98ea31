"""`quipu log`: the audit trail (every mutation is a commit with Quipu-* trailers).

With ``--memory ID``, the commits that changed that memory's file or its event files, read from
what each did and said in those words (``quipu.store.audit``): a hand edit, a teammate's commit a
sync brought in and an undo are there, a commit that only names the memory in its trailers is not.
Without, every commit of the branch, each said by what it did to which memories, read from its
trees against its first parent (``quipu.sync.described``); its message follows as a note only when
its trailers agree with that, and a commit whose trailers claim something else says so.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from quipu.commands._common import add_json, count, named, open_store
from quipu.errors import UnsafeStore
from quipu.output import print_json

if TYPE_CHECKING:
    from quipu.store.store import Store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("log", help="show the audit trail", description="Show the store's history, newest first. "
                       "Inside a project with its own store, that store's; the last line names the command for the "
                       "per-user store's.")
    p.add_argument("--memory", metavar="ID", type=named, help="only the commits that changed this memory's file or its "
                   "decisions (by hand, by sync or by undo too), each said by what it did to it")
    p.add_argument("--sweep", metavar="ID", type=named, help="only commits of this sweep (with --memory: whose trailers agree "
                   "with what they did)")
    p.add_argument("--action", type=named, help="only this action (add, supersede, label, undo...), as for --sweep")
    p.add_argument("--limit", type=count(), default=50, help="at most this many (default 50, 0 for all)")
    add_json(p)
    p.set_defaults(func=run)


def _store_log(args: argparse.Namespace, store: Store) -> bool:
    """Print the whole store's log; whether anything more may follow (not with --json)."""
    from quipu.sync.described import said, walk
    from quipu.sync.policy import shown as printable

    try:
        cache = store.cache_dir  # what each commit did is kept there between runs; the log is the same without
    except (OSError, UnsafeStore):
        cache = None
    found = walk(store.repo, sweep=args.sweep, action=args.action, limit=args.limit or None, cache=cache)
    if args.json:
        print_json([{**entry.to_json(), "summary": said(entry, described), "message": entry.summary,
                     "did": described.words(), "changes": [c.to_json() for c in described.changes],
                     "agrees": described.agrees, "claims": described.claim_words()} for entry, described in found])
        return False
    for entry, described in found:
        extras = " ".join(f"{k.removeprefix('Quipu-').lower()}={printable(v)}" for k, v in entry.trailers.items()
                          if k not in ("Quipu-Action", "Quipu-Memory")) if described.agrees else ""
        print(f"{entry.commit[:12]}  {entry.time}  {described.kind() or '-':<10} {described.memory() or '-':<14} "
              f"{said(entry, described)}" + (f"  ({extras})" if extras else ""))
    return True


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    if not args.memory:
        if not _store_log(args, store):
            return 0
    else:
        entries = store.log(memory=args.memory, sweep=args.sweep, action=args.action, limit=args.limit or None)
        if args.json:
            print_json([e.to_json() for e in entries])
            return 0
        for entry in entries:  # the summary says what the commit did to the memory
            print(f"{entry.commit[:12]}  {entry.time}  {entry.summary}")
        if not entries:
            filtered = " of that --sweep or --action" if args.sweep or args.action else ""
            print(f"(no commit{filtered} changed {args.memory} in {store.root})")
    from quipu.store.layers import user_store

    user = user_store(store)  # inside a project with its own store, reads show the per-user store's memories too
    if user is not None:
        print(f"(the history of this project's store, {store.root}; the per-user store's: "
              f"`quipu --store {user.root} log" + (f" --memory {args.memory}`)" if args.memory else "`)"))
    return 0
