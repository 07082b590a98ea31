"""`quipu clone URL [PATH]`: a new store from a remote, with its hooks and index set up."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from quipu.prompt import locate
from quipu.sync import sync
from quipu.commands._common import add_json
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "clone",
        help="make a new store from a git remote",
        description="Clone the store at URL into PATH (default: --store, $QUIPU_STORE, then the per-user store), "
        "install its git hooks and build its index. The remote's files pass the same checks as `quipu sync` "
        "before anything is checked out: refused files are removed in one commit of their own and listed. "
        "A commit whose tree holds a name git itself refuses (.git, ..) is not taken, nor anything built on "
        "it: the clone holds what came before it and exits 1, with how to take it off the remote. "
        "Afterwards `quipu sync` in PATH shares changes both ways.",
    )
    p.add_argument("url", help="the remote store (any URL or path git can clone)")
    p.add_argument("path", nargs="?", help="where to create the store")
    p.add_argument("--no-hooks", action="store_true", help="do not install the git hooks that keep the index fresh")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = args.path or args.store or os.environ.get("QUIPU_STORE") or locate.default_store()
    store, refused, held_back = sync.clone(args.url, Path(target), hooks=not args.no_hooks)
    if args.json:
        print_json({"store": str(store.root), "url": args.url, "head": store.head(),
                    "refused": [r.to_json() for r in refused], "held_back": held_back})
        return 1 if held_back else 0
    print(f"Cloned {args.url} into {store.root}")
    for refusal in refused:
        print(f"  refused {refusal.line()}" + (f" (commit {refusal.commit[:12]})" if refusal.commit else ""))
    if held_back:
        from quipu.store import gitstore

        first, branch = next(r.commit for r in refused if r.commit), gitstore.branch_ref(store.repo).shorthand
        print(f"Not taken: commit {first[:12]} and every commit built on it (the remote's tip is {held_back[:12]}); "
              "the store holds what came before it, and `quipu sync` takes nothing more until that commit is off "
              f"the remote\n- see what it holds: `git -C {store.root} show --stat {first[:12]}`\n"
              f"- take it off the remote: `git -C {store.root} push --force-with-lease=refs/heads/{branch}:"
              f"{held_back} -- origin {branch}` (commits built on it go too)")
        return 1
    return 0
