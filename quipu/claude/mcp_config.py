"""quipu's MCP server entry in Claude Code's MCP configuration: add it, take it out.

Where Claude Code reads stdio MCP servers from, by scope:
- ``project``: ``<project>/.mcp.json``, ``{"mcpServers": {...}}`` (the file is usually committed);
- ``user``: ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set), top-level
  ``mcpServers``;
- ``local``: the same ``~/.claude.json``, under ``projects.<project root>.mcpServers``.

Contract (the same as ``quipu.claude.settings`` for hooks, whose file handling it uses):
- ``install`` puts one entry, ``mcpServers.quipu``, there: this interpreter by absolute path,
  run with ``-I`` (no environment variables, no user site, no working directory on ``sys.path``)
  on quipu's ``quipu_mcp.py`` launcher; for ``project`` (a file a team commits) it is
  ``quipu mcp``, found on PATH on each machine, with no path of this one. Running it again when the entry is exactly there writes
  nothing. Every other key and server is kept. A ``quipu`` server that is not quipu's (it does not
  run the launcher) is never overwritten: that is an error naming the fix.
- ``uninstall`` removes exactly that entry, and the ``mcpServers`` object or ``projects`` entry
  only when removing it left them empty; a file that then holds nothing else is deleted again
  (quipu created it). The previous bytes come back from the backup when it holds exactly the
  resulting configuration.
- Before any write the previous file is backed up under ``$QUIPU_HOME/backups``; writes are atomic.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, NoReturn

from quipu.store import assets
from quipu.claude import settings as claude_settings
from quipu.errors import FatalError

SERVER = "quipu"
LAUNCHER = "quipu_mcp.py"


def config_path(scope: str, project_dir: str | os.PathLike[str] | None = None) -> Path:
    if scope == "project":
        return claude_settings.project_root(project_dir) / ".mcp.json"
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(configured).expanduser() if configured else Path.home()) / ".claude.json"


PORTABLE = {"type": "stdio", "command": "quipu", "args": ["mcp"], "env": {}}


def entry(hooks_dir: Path | None = None, *, portable: bool = False) -> dict[str, Any]:
    """quipu's server entry: this interpreter on the launcher, or ``quipu mcp`` on PATH (``portable``)."""
    if portable:
        return copy.deepcopy(PORTABLE)
    launcher = (hooks_dir or assets.hooks_dir()).resolve() / LAUNCHER
    if not launcher.is_file():
        raise FatalError(f"quipu's MCP launcher {launcher} is missing\n- {claude_settings.INSTALL_HINT}")
    return {"type": "stdio", "command": claude_settings.session_python(), "args": ["-I", str(launcher)], "env": {}}


def is_ours(server: object) -> bool:
    if not isinstance(server, dict):
        return False
    args = server.get("args")
    if server.get("command") == PORTABLE["command"] and args == PORTABLE["args"]:
        return True
    return isinstance(args, list) and any(isinstance(a, str) and Path(a).name == LAUNCHER for a in args)


def _bad(where: str) -> NoReturn:
    raise FatalError(f'"{where}" is not an object\n- fix the file by hand; nothing was changed')


def _child(parent: dict[str, Any], key: str, create: bool) -> dict[str, Any] | None:
    value = parent.get(key)
    if value is None and create:
        value = parent[key] = {}
    if value is not None and not isinstance(value, dict):
        _bad(key)
    return value


def _servers(config: dict[str, Any], scope: str, root: Path, create: bool) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the object holding this scope's ``mcpServers``, the ``mcpServers`` object); None when absent."""
    holder: dict[str, Any] | None = config
    if scope == "local":
        projects = _child(config, "projects", create)
        holder = _child(projects, str(root), create) if projects is not None else None
    return holder, (_child(holder, "mcpServers", create) if holder is not None else None)


def _summary(server: dict[str, Any]) -> dict[str, str]:
    return {"event": f"mcpServers.{SERVER}", "command": " ".join([server.get("command", ""), *server.get("args", [])])}


def install(scope: str = "user", project_dir: str | os.PathLike[str] | None = None, *, dry_run: bool = False,
            hooks_dir: Path | None = None) -> claude_settings.Result:
    path = config_path(scope, project_dir)
    config, before = claude_settings.load(path)
    wanted = entry(hooks_dir, portable=scope == "project")
    out = copy.deepcopy(config)
    _holder, servers = _servers(out, scope, claude_settings.project_root(project_dir), create=True)
    assert servers is not None
    current = servers.get(SERVER)
    added, removed = [], []
    if current is not None and not is_ours(current):
        raise FatalError(f'{path} already has an MCP server named "{SERVER}" that is not quipu\'s\n'
                         f"- rename or remove it, then run the command again; nothing was changed")
    if current != wanted:
        if current is not None:
            removed.append(_summary(current))
        servers[SERVER] = wanted
        added.append(_summary(wanted))
    return claude_settings.write_change(path, scope, before, out, dry_run, added, removed)


def uninstall(scope: str = "user", project_dir: str | os.PathLike[str] | None = None, *,
              dry_run: bool = False) -> claude_settings.Result:
    path = config_path(scope, project_dir)
    config, before = claude_settings.load(path)
    if before is None:
        return claude_settings.Result(path, scope, False, False, dry_run, None)
    out = copy.deepcopy(config)
    root = claude_settings.project_root(project_dir)
    holder, servers = _servers(out, scope, root, create=False)
    if not servers or not is_ours(servers.get(SERVER)):
        return claude_settings.Result(path, scope, False, True, dry_run, None, before=before, after=before)
    removed = [_summary(servers.pop(SERVER))]
    if not servers and holder is not None:
        del holder["mcpServers"]
        if scope == "local" and not holder:
            del out["projects"][str(root)]
            if not out["projects"]:
                del out["projects"]
    result = claude_settings.write_change(path, scope, before, out, dry_run, [], removed)
    if not out and not dry_run:
        path.unlink()  # it held nothing but quipu's server: quipu created it
    return result
