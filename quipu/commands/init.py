"""`quipu init [PATH]`: create a store (a git repository of its own) from the template."""
from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

from quipu.store import githooks
from quipu.index import index
from quipu.prompt import locate
from quipu.commands._common import add_json
from quipu.output import print_json
from quipu.store.store import Store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "init",
        help="create a memory store",
        description="Create a memory store at PATH (default: the per-user store, or --store). "
        "Use PATH=.quipu inside a project to keep memory beside it; quipu adds it to the project's "
        ".git/info/exclude so the project's repository ignores it.",
    )
    p.add_argument("path", nargs="?", help="where to create the store")
    p.add_argument("--no-hooks", action="store_true", help="do not install the git hooks that keep the index fresh")
    add_json(p)
    p.set_defaults(func=run)


def _exclude_from_project(store_root: Path) -> str | None:
    """If the store sits inside another git work tree, ignore it there (locally, uncommitted)."""
    parent = store_root.parent
    try:
        top = subprocess.run(
            ["git", "-C", str(parent), "rev-parse", "--show-toplevel", "--git-path", "info/exclude"],
            capture_output=True, text=True, check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return None
    toplevel, exclude = Path(top[0]), Path(top[1])
    if not exclude.is_absolute():
        exclude = parent / exclude
    rel = "/" + store_root.relative_to(toplevel).as_posix() + "/"
    existing = exclude.read_text(encoding="utf-8") if exclude.is_file() else ""
    if rel not in existing.split("\n"):
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a", encoding="utf-8") as fh:
            fh.write(("" if not existing or existing.endswith("\n") else "\n") + rel + "\n")
    return str(exclude)


def run(args: argparse.Namespace) -> int:
    target = args.path or args.store or os.environ.get("QUIPU_STORE") or locate.default_store()
    store, created = Store.init(Path(target))
    hooks = [] if args.no_hooks else githooks.install(store.root)
    hook_notes = githooks.notes(store.root) if hooks else []
    index.ensure_fresh(store)
    excluded = _exclude_from_project(store.root) if created else None
    from quipu.store import gitstore

    identity = gitstore.identity_note(store.repo) if created else None
    if args.json:
        print_json({"store": str(store.root), "created": created, "hooks": hooks, "excluded_in": excluded,
                    "hook_notes": hook_notes, "identity": identity})
        return 0
    if created:
        print(f"Created a quipu store at {store.root}")
    else:
        print(f"{store.root} is already a quipu store; nothing to do")
    if excluded:
        print(f"Ignored it in the surrounding project through {excluded}")
    if hooks:
        print(f"Installed git hooks: {', '.join(hooks)}")
        for note in hook_notes:
            print(f"Note: {note}")
    if identity:
        print(f"Note: {identity}")
    return 0
