"""`quipu install claude`: merge quipu's hooks into a Claude Code settings file."""
from __future__ import annotations

import argparse

from quipu.claude import settings as claude_settings
from quipu.claude import mcp_config
from quipu.commands._common import add_json
from quipu.output import print_json


def add_scope(p: argparse.ArgumentParser) -> None:
    """The target and scope flags shared by install and uninstall."""
    p.add_argument("target", choices=("claude",), help="what to hook into (Claude Code)")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--user", dest="scope", action="store_const", const="user",
        help="~/.claude/settings.json (or $CLAUDE_CONFIG_DIR): every project (the default)",
    )
    scope.add_argument(
        "--project", dest="scope", action="store_const", const="project",
        help="<project>/.claude/settings.json and <project>/.mcp.json: this project only; the files are "
        "usually committed, so they run `quipu hook EVENT` and `quipu mcp` from each machine's PATH",
    )
    scope.add_argument(
        "--local", dest="scope", action="store_const", const="local",
        help="<project>/.claude/settings.local.json: this project, this machine only",
    )
    p.set_defaults(scope="user")
    p.add_argument("--project-dir", metavar="DIR", help="the project (default: the git work tree of the current directory)")
    p.add_argument("--dry-run", action="store_true", help="show what would change and write nothing")
    add_json(p)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "install",
        help="hook quipu into Claude Code's settings",
        description="Merge quipu's hooks (UserPromptSubmit recall; SessionStart, PreCompact and SessionEnd "
        "through a fail-open launcher) into a Claude Code settings file. Running it again changes nothing; "
        "other settings and hooks are kept; the previous file is backed up under $QUIPU_HOME/backups. "
        "For --user and --local the commands use this interpreter's real path, and the prompt hook runs with "
        "-I -S; --project writes `quipu hook EVENT` and `quipu mcp`, found on each teammate's PATH. "
        "It also registers quipu's MCP server (`quipu mcp`) where Claude Code reads MCP servers for the scope: "
        "~/.claude.json for --user and --local (under the project for --local), <project>/.mcp.json for "
        "--project. Alternatively load this repository as a Claude Code plugin (claude --plugin-dir), not both.",
    )
    add_scope(p)
    p.add_argument("--no-mcp", action="store_true", help="only the hooks; do not register the MCP server")
    p.set_defaults(func=run)


def report(result: claude_settings.Result, verb: str, as_json: bool, mcp: claude_settings.Result | None = None) -> None:
    if as_json:
        print_json({**result.to_json(), "mcp": mcp.to_json() if mcp else None})
        return
    for one, what in ((result, "quipu hooks"), (mcp, "quipu MCP server")):
        if one is not None:
            _report_one(one, verb, what)


def _report_one(result: claude_settings.Result, verb: str, what: str) -> None:
    if not result.changed:
        print(f"{result.path}: nothing to do ({'already installed' if verb == 'install' else 'no ' + what})")
        return
    if result.dry_run:
        print(f"Would change {result.path}:")
        print(result.diff(), end="")
        return
    for item in result.removed:
        print(f"removed {item['event']}: {item['command']}")
    for item in result.added:
        print(f"added   {item['event']}: {item['command']}")
    print(f"Wrote {result.path}" + (f" (previous version saved as {result.backup})" if result.backup else ""))


def run(args: argparse.Namespace) -> int:
    path = claude_settings.settings_path(args.scope, args.project_dir)
    mcp = None if args.no_mcp else mcp_config.install(args.scope, args.project_dir, dry_run=True)  # refuses early
    result = claude_settings.install(path, scope=args.scope, dry_run=args.dry_run)
    if mcp is not None and not args.dry_run:
        mcp = mcp_config.install(args.scope, args.project_dir)
    report(result, "install", args.json, mcp)
    if args.scope == "project" and not args.json and not args.dry_run:
        print(PROJECT_NOTE)
    return 0


PROJECT_NOTE = (
    "These files name no path of this machine: commit them. Each teammate needs `quipu` on PATH: "
    f"{claude_settings.INSTALL_HINT}.\n"
    "Claude Code asks once per machine whether to use the project's MCP server, and its default answer "
    "leaves it off: choose to use it, or add \"enabledMcpjsonServers\": [\"quipu\"] to "
    ".claude/settings.local.json. `quipu doctor` checks both.")
