"""Does quipu's wiring into Claude Code actually run? The checks behind `quipu doctor`.

Contract:
- ``hook_findings(project)`` finds quipu's hook handlers (``settings.MARKER``) in the user,
  project and local settings files and runs each one with a harmless event on stdin and
  ``QUIPU_CHILD=1`` (every quipu hook then returns at once, so nothing is captured or injected),
  for at most ``HOOK_SECONDS``. Every command fails open (it exits 0 whatever is missing), so its
  exit says nothing: what it runs is run without its guard, the interpreter on the script
  (``direct``, read back from the command) or a project's ``quipu hook EVENT``. One that does not
  exit 0 (an interpreter or script that moved) is a problem naming the fix, and so is a project's
  ``quipu hook`` command with no ``quipu`` on PATH, and a command of an older quipu that does not
  fail open (it would block every prompt once quipu moved). A settings file that is not valid
  JSON is a problem too: Claude Code ignores the whole file, so none of its hooks run.
- ``mcp_findings(project)`` finds quipu's MCP server entries (``~/.claude.json`` at the top and
  under the project, ``<project>/.mcp.json``), starts each one and sends MCP's ``initialize``;
  no answer within ``MCP_SECONDS`` is a problem. It also reads Claude Code's switches for the
  project's servers: ``disabledMcpjsonServers``, ``enabledMcpjsonServers`` and
  ``enableAllProjectMcpServers`` in the settings files and in the project's entry of
  ``~/.claude.json`` (where ``/mcp`` also keeps ``disabledMcpServers``). A server switched off
  is a problem; a project server never approved is one too, because the first interactive
  start of Claude Code asks, and its default answer leaves the server off.
- Each finding is ``(ok, line)``; nothing here writes anything.
"""
from __future__ import annotations

import json
import os
import re
import select
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from quipu.claude import mcp_config
from quipu.claude import settings as claude_settings
from quipu.errors import FatalError

HOOK_SECONDS = 20.0
MCP_SECONDS = 30.0  # an MCP server takes 2-3 s to start on a loaded machine; Claude Code waits 30 s
_EVENTS = {"UserPromptSubmit": "prompt", "SessionStart": "session-start", "PreCompact": "pre-compact",
           "SessionEnd": "session-end"}
Finding = tuple[bool, str]


_QUOTED = "'(?:[^']|'\"'\"')*'"
# This version's form (``settings.guarded``), then the unguarded one of older versions.
_FORMS = (
    (True, re.compile(f"p=(?P<python>{_QUOTED}) s=(?P<script>{_QUOTED}); {re.escape(claude_settings.GUARD)}"
                      f'(?:exec )?"\\$p" (?P<flags>-I -S )?"\\$s"(?: (?P<argument>[a-z-]+))? 2>/dev/null; exit 0 '
                      f"{claude_settings.MARKER}")),
    (False, re.compile(f"(?P<python>{_QUOTED}) (?P<flags>-I -S )?(?P<script>{_QUOTED})(?: (?P<argument>[a-z-]+))? "
                       f"{claude_settings.MARKER}")),
)


def _unquote(quoted: str) -> str:
    return quoted[1:-1].replace("'\"'\"'", "'")


def direct(command: str) -> tuple[list[str], bool] | None:
    """What a user or local scope command runs once its guard passes (interpreter, flags, script,
    argument), and whether it fails open (this version's form); None for any other command."""
    for guarded, form in _FORMS:
        found = form.fullmatch(command.strip())
        if found:
            flags = found["flags"].split() if found["flags"] else []
            argument = [found["argument"]] if found["argument"] else []
            return [_unquote(found["python"]), *flags, _unquote(found["script"]), *argument], guarded
    return None


def fails_open(command: str) -> bool:
    """Whether a quipu command is of a form this version writes, which exits 0 whatever is missing."""
    found = direct(command)
    return found[1] if found else command in {claude_settings.portable_command(s) for s in claude_settings.HOOKS}


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _unreadable(path: Path, scope: str) -> str | None:
    """Why Claude Code cannot read a settings file that is there, and the fix (None: it can, or there
    is none): what ``quipu install`` refuses it for (``settings.load``)."""
    try:
        claude_settings.load(path)
        return None
    except FatalError as exc:
        why = str(exc).splitlines()[0]
    try:
        ours = " (quipu's among them)" if claude_settings.MARKER in path.read_text(encoding="utf-8", errors="replace") else ""
    except OSError:
        ours = ""
    return (f"{why}: Claude Code ignores the whole file, so none of its hooks run{ours} and none of its settings "
            f"apply\n- fix the file by hand; `quipu install claude --{scope}` refuses to change it until it parses")


def _settings_files(root: Path) -> list[tuple[str, Path]]:
    return [("user", claude_settings.settings_path("user")), ("project", root / ".claude" / "settings.json"),
            ("local", root / ".claude" / "settings.local.json")]


def _fix(scope: str) -> str:
    if scope == "project":
        return f"- `quipu` must be on PATH here: {claude_settings.INSTALL_HINT}; then run `quipu doctor` again"
    return f"- run `quipu install claude --{scope}` again with the quipu you use now"


def _harmless_event(event: str, root: Path) -> bytes:
    return json.dumps({"hook_event_name": event, "session_id": "quipu-doctor", "cwd": str(root),
                       "transcript_path": "", "prompt": "", "source": "startup", "reason": "other"}).encode()


def _run_hook(command: str, event: str, root: Path) -> str | None:
    found = direct(command)
    if found is not None:
        return _run(found[0], event, root)
    portable = re.search(r"quipu hook ([a-z-]+)", command)
    if portable is None:
        return _run(["sh", "-c", command], event, root)
    quipu = shutil.which("quipu")
    if quipu is None:
        return "finds no `quipu` on PATH, so it does nothing (it fails open)"
    return _run(["sh", "-c", command], event, root) or _run([quipu, "hook", portable[1]], event, root)


def _run(argv: list[str], event: str, root: Path) -> str | None:
    env = {**os.environ, "QUIPU_CHILD": "1"}
    try:
        proc = subprocess.run(argv, input=_harmless_event(event, root), capture_output=True,
                              timeout=HOOK_SECONDS, cwd=root, env=env)
    except subprocess.TimeoutExpired:
        return f"did not finish within {HOOK_SECONDS:g} s"
    except OSError as exc:
        return f"cannot be run: {exc}"
    if proc.returncode == 0:
        return None
    said = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    return f"exited {proc.returncode}: {said[0][:200]}"


def hook_findings(project: str | os.PathLike[str] | None = None, *, quick: bool = False) -> list[Finding]:
    """One finding per quipu hook handler, and one per settings file Claude Code cannot read; ``quick``
    only lists the handlers (each ``ok``), running none."""
    root = claude_settings.project_root(project)
    out: list[Finding] = []
    for scope, path in _settings_files(root):
        unread = _unreadable(path, scope)
        if unread:
            out.append((False, unread))
            continue
        hooks = _load(path).get("hooks")
        if not isinstance(hooks, dict):
            continue
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else []:
                for handler in (group.get("hooks") or []) if isinstance(group, dict) else []:
                    if not claude_settings.is_ours(handler):
                        continue
                    problem = None if quick else _run_hook(handler["command"], event, root)
                    if problem is None and not quick and not fails_open(handler["command"]):
                        out.append((False, f"{event} hook in {path} starts, but was written by an older quipu and "
                                           "does not fail open: once quipu's interpreter or script moved (`pip "
                                           "uninstall`, a tool's environment rebuilt on another Python) it would "
                                           f"exit 2, which blocks every prompt\n- run `quipu install claude --{scope}` "
                                           "again" + (" and commit the file" if scope == "project" else "")))
                    elif problem is None:
                        out.append((True, f"{event} hook in {path} starts"))
                    else:
                        out.append((False, f"{event} hook in {path} does not start: `{handler['command']}` "
                                           f"{problem}\n{_fix(scope)}"))
    return out


def _plugin_only(server: object) -> bool:
    """A plugin's own server (it names ``${CLAUDE_PLUGIN_ROOT}``): Claude Code starts it only as a plugin."""
    return "${CLAUDE_PLUGIN_ROOT}" in json.dumps(server)


def _servers(root: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    config_path = mcp_config.config_path("user")
    config = _load(config_path)
    found = []
    top = config.get("mcpServers")
    if isinstance(top, dict) and mcp_config.is_ours(top.get(mcp_config.SERVER)):
        found.append(("user", config_path, top[mcp_config.SERVER]))
    entry = (config.get("projects") or {}).get(str(root)) if isinstance(config.get("projects"), dict) else None
    local = entry.get("mcpServers") if isinstance(entry, dict) else None
    if isinstance(local, dict) and mcp_config.is_ours(local.get(mcp_config.SERVER)):
        found.append(("local", config_path, local[mcp_config.SERVER]))
    project = _load(root / ".mcp.json").get("mcpServers")
    if isinstance(project, dict) and mcp_config.is_ours(project.get(mcp_config.SERVER)) \
            and not _plugin_only(project[mcp_config.SERVER]):
        found.append(("project", root / ".mcp.json", project[mcp_config.SERVER]))
    return found


_INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "quipu-doctor", "version": "1"}}})


def _start_server(server: dict[str, Any], root: Path) -> str | None:
    """None when the server answered ``initialize``; else what went wrong."""
    argv = [os.path.expandvars(str(server.get("command", "")))]
    argv += [os.path.expandvars(str(a)) for a in server.get("args") or []]
    extra: dict[str, Any] = server["env"] if isinstance(server.get("env"), dict) else {}
    env = {**os.environ, **{str(k): os.path.expandvars(str(v)) for k, v in extra.items()}, "QUIPU_CHILD": "1"}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=root, env=env)
    except OSError as exc:
        return f"cannot be started: {exc.strerror or exc}"
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    answer = b""
    try:
        proc.stdin.write(_INITIALIZE.encode() + b"\n")
        proc.stdin.flush()
        end = time.monotonic() + MCP_SECONDS
        while b"\n" not in answer and time.monotonic() < end and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            if ready:
                answer += os.read(proc.stdout.fileno(), 65536)
    except OSError:
        pass
    finally:
        proc.kill()
        _, err = proc.communicate()
    try:
        reply = json.loads(answer.split(b"\n", 1)[0] or b"null")
    except ValueError:
        reply = None
    if isinstance(reply, dict) and "result" in reply:
        return None
    said = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["(no message)"]
    if proc.returncode is not None and not answer and said == ["(no message)"]:
        return f"gave no answer to MCP's initialize within {MCP_SECONDS:g} s"
    return f"did not answer MCP's initialize: {said[0][:200]}"


def _switches(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    config_path = mcp_config.config_path("user")
    projects = _load(config_path).get("projects")
    entry = projects.get(str(root)) if isinstance(projects, dict) else None
    found = [(path, _load(path)) for _scope, path in _settings_files(root)]
    if isinstance(entry, dict):
        found.append((config_path, entry))
    return found


def _listed(value: object) -> bool:
    return isinstance(value, list) and mcp_config.SERVER in value


def approval(root: Path, project_server: bool) -> Finding | None:
    """Whether Claude Code will start quipu's server in this project: disabled, pending or on."""
    switches = _switches(root)
    for path, data in switches:
        keys = ("disabledMcpjsonServers", "disabledMcpServers")
        for key in keys:
            if _listed(data.get(key)):
                where = f"the entry of {root} in {path}" if path.name == ".claude.json" else str(path)
                return (False, f"the quipu MCP server is disabled in Claude Code: \"{mcp_config.SERVER}\" is in "
                               f"{key} of {where}\n- remove it from that list, or enable it with /mcp in Claude Code")
    if not project_server:
        return None
    if any(_listed(d.get("enabledMcpjsonServers")) or d.get("enableAllProjectMcpServers") is True
           for _p, d in switches):
        return (True, "the project's quipu MCP server is approved in Claude Code")
    local = root / ".claude" / "settings.local.json"
    return (False, f"the project's quipu MCP server ({root / '.mcp.json'}) is not approved yet: the first interactive "
                   "start of Claude Code here asks, and its default answer leaves it off (`claude -p` does not ask)\n"
                   f"- choose to use it in that dialog, or add \"enabledMcpjsonServers\": [\"quipu\"] to {local}")


def mcp_findings(project: str | os.PathLike[str] | None = None) -> list[Finding]:
    root = claude_settings.project_root(project)
    out: list[Finding] = []
    servers = _servers(root)
    for scope, path, server in servers:
        command = " ".join(shlex.quote(str(p)) for p in [server.get("command", ""), *(server.get("args") or [])])
        problem = _start_server(server, root)
        if problem is None:
            out.append((True, f"MCP server in {path} starts (`{command}`)"))
        else:
            out.append((False, f"MCP server in {path} does not start: `{command}` {problem}\n{_fix(scope)}"))
    if servers:
        state = approval(root, any(scope == "project" for scope, _p, _s in servers))
        if state is not None:
            out.append(state)
    return out
