"""`quipu uninstall claude|codex`: remove exactly the hooks and MCP server `quipu install` added."""
from __future__ import annotations

import argparse

from quipu.claude import settings as claude_settings
from quipu.claude import mcp_config
from quipu.codex import config as codex_config
from quipu.errors import FatalError
from quipu.commands.install import add_scope, report


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "uninstall",
        help="remove quipu's hooks from Claude Code's settings",
        description="Remove the hook handlers `quipu install claude` added (recognised by the "
        f"'{claude_settings.MARKER}' comment at the end of their command) and quipu's MCP server entry "
        "from the MCP configuration of the same scope, and nothing else; the previous files are backed up "
        "under $QUIPU_HOME/backups. For codex: quipu's handlers in hooks.json and [mcp_servers.quipu] in "
        "config.toml, every other byte kept.",
    )
    add_scope(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.target == "codex":
        if args.scope == "local":
            raise FatalError("Codex has no --local scope\n- use --user or --project")
        result = codex_config.uninstall_hooks(args.scope, args.project_dir, dry_run=args.dry_run)
        report(result, "uninstall", args.json, codex_config.uninstall_mcp(args.scope, args.project_dir,
                                                                          dry_run=args.dry_run))
        return 0
    path = claude_settings.settings_path(args.scope, args.project_dir)
    result = claude_settings.uninstall(path, scope=args.scope, dry_run=args.dry_run)
    mcp = mcp_config.uninstall(args.scope, args.project_dir, dry_run=args.dry_run)
    report(result, "uninstall", args.json, mcp)
    return 0
