"""`quipu hooks install|uninstall|status`: the store's git hooks (chained, never clobbered)."""
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
        "and run first; uninstall restores it byte for byte.",
    )
    p.add_argument("action", choices=("install", "uninstall", "status"))
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.action == "install":
        installed = githooks.install(store.root)
        result: object = installed
        text = f"Installed: {', '.join(installed)}"
    elif args.action == "uninstall":
        removed = githooks.uninstall(store.root)
        result = removed
        text = f"Removed: {', '.join(removed) or 'nothing'}"
    else:
        status = githooks.status(store.root)
        result = status
        text = "\n".join(f"{k}: {v}" for k, v in status.items())
    if args.json:
        print_json(result)
    else:
        print(text)
    return 0
