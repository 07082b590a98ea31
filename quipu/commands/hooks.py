"""`quipu hooks install|uninstall|status`: the store's git hooks (chained, never clobbered; never written
into a hooks folder outside the store, which other repositories share)."""
from __future__ import annotations

import argparse

from quipu.store import githooks
from quipu.commands._common import add_json, open_store
from quipu.output import print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "hooks",
        help="install or remove the store's git hooks",
        description="Git hooks that keep the index fresh after git commands. An existing hook is kept "
        "and run first; uninstall restores it byte for byte. When git's core.hooksPath points outside the "
        "store (a global one, say), the hooks go into the store's own .git/hooks, a core.hooksPath in the "
        "store's .git/config points there, and each runs that folder's hook of the same name; uninstall "
        "removes that setting.",
    )
    p.add_argument("action", choices=("install", "uninstall", "status"))
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.action == "install":
        installed = githooks.install(store.root)
        result: object = installed
        text = "\n".join([f"Installed: {', '.join(installed)}", *githooks.notes(store.root)])
    elif args.action == "uninstall":
        where = githooks.place(store.root)
        outside = githooks.strays(where)
        removed = githooks.uninstall(store.root)
        result = removed
        lines = [f"Removed: {', '.join(removed) or 'nothing'}"]
        if where.redirected:
            lines.append("Removed the core.hooksPath quipu had set in the store's .git/config"
                         + (f" (it is {where.before} again)" if where.before else ""))
        if outside:
            lines.append(f"Restored {where.shared}: quipu's {', '.join(outside)} removed, your own hooks moved back")
        text = "\n".join(lines)
    else:
        status = githooks.status(store.root)
        result = status
        text = "\n".join([*(f"{k}: {v}" for k, v in status.items()), *githooks.notes(store.root)])
    if args.json:
        print_json(result)
    else:
        print(text)
    return 0
