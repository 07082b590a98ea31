"""`quipu install claude|codex`: merge quipu's hooks and MCP server into Claude Code's or Codex CLI's settings."""
from __future__ import annotations

import argparse

from quipu.claude import settings as claude_settings
from quipu.claude import mcp_config
from quipu.codex import config as codex_config
from quipu.commands._common import add_json
from quipu.errors import FatalError
from quipu.output import print_json


def add_scope(p: argparse.ArgumentParser) -> None:
    """The target and scope flags shared by install and uninstall."""
    p.add_argument("target", choices=("claude", "codex"), help="what to hook into: Claude Code, or Codex CLI")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--user", dest="scope", action="store_const", const="user",
        help="~/.claude/settings.json (or $CLAUDE_CONFIG_DIR); for codex ~/.codex/hooks.json and config.toml "
        "(or $CODEX_HOME): every project (the default)",
    )
    scope.add_argument(
        "--project", dest="scope", action="store_const", const="project",
        help="<project>/.claude/settings.json and <project>/.mcp.json: this project only; the files are "
        "usually committed, so they run `quipu hook EVENT` and `quipu mcp` from each machine's PATH. For codex "
        "<project>/.codex/hooks.json and config.toml, with no path of this machine in them (each machine runs "
        "this once; Codex reads them in a trusted project)",
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
        help="hook quipu into Claude Code's or Codex CLI's settings",
        description="Merge quipu's hooks (UserPromptSubmit recall; SessionStart, PreCompact and SessionEnd "
        "through a fail-open launcher) into a Claude Code settings file. Running it again changes nothing; "
        "other settings and hooks are kept; the previous file is backed up under $QUIPU_HOME/backups. "
        "For --user and --local the commands use this interpreter's real path, and the prompt hook runs with "
        "-I -S; --project writes `quipu hook EVENT` and `quipu mcp`, found on each teammate's PATH. "
        "It also registers quipu's MCP server (`quipu mcp`) where Claude Code reads MCP servers for the scope: "
        "~/.claude.json for --user and --local (under the project for --local), <project>/.mcp.json for "
        "--project. Alternatively load this repository as a Claude Code plugin (claude --plugin-dir), not both. "
        "`install codex` does the same for Codex CLI: quipu's hooks in hooks.json and [mcp_servers.quipu] in "
        "config.toml (the rest of the file kept byte for byte); Codex runs a new hook only once you trust it "
        "(`/hooks` in Codex).",
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


def run_codex(args: argparse.Namespace) -> int:
    if args.scope == "local":
        raise FatalError("Codex has no --local scope\n- use --user (every project) or --project (this project)")
    mcp = None if args.no_mcp else codex_config.install_mcp(args.scope, args.project_dir, dry_run=True)  # refuses early
    result = codex_config.install_hooks(args.scope, args.project_dir, dry_run=args.dry_run)
    if mcp is not None and not args.dry_run:
        mcp = codex_config.install_mcp(args.scope, args.project_dir)
    if not args.dry_run:
        codex_config.record_pointers()
    report(result, "install", args.json, mcp)
    if not args.json and not args.dry_run and result.changed:
        print("Codex runs a new or changed hook only once you trust it: start `codex` and review quipu's hooks in "
              "/hooks" + (" (and trust this project when Codex asks)" if args.scope == "project" else ""))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.target == "codex":
        return run_codex(args)
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
