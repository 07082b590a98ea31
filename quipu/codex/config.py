"""quipu's hooks and MCP server in Codex CLI's configuration: add them, take them out, check them.

Where Codex reads them (Codex 0.171.0; a project's ``.codex/`` only when the person trusts the
project, and every hook only once the person has trusted it in Codex's ``/hooks``):
- ``user``: ``$CODEX_HOME/hooks.json`` and ``$CODEX_HOME/config.toml`` (``CODEX_HOME`` defaults to
  ``~/.codex``);
- ``project``: ``<project>/.codex/hooks.json`` and ``<project>/.codex/config.toml``.

Contract:
- ``hooks.json`` has Claude Code's shape (event, matcher groups, command handlers), so quipu's
  handlers are merged and removed by ``quipu.claude.settings`` (recognised by the marker comment at
  the end of their command); every other handler and key is kept.
- In ``config.toml`` only the table ``[mcp_servers.quipu]`` is quipu's: it is added, replaced or
  removed through ``tomlkit``, which keeps every other byte of the file (comments, order, quoting).
  A ``quipu`` server that does not run quipu's launcher is never overwritten: that is an error
  naming the fix. Uninstall restores the exact previous bytes when a backup holds the same TOML.
- ``user`` commands name this interpreter and this install's hook scripts by absolute path. What
  ``project`` writes holds no path of this machine: its commands are ``sh -c`` lines that read the
  hooks folder and the interpreters from ``$QUIPU_HOME/hooks-dir``, ``$QUIPU_HOME/session-python``
  and ``$QUIPU_HOME/python`` (written by every ``install codex``), and exit 0 silently on a
  machine without them. Every hook command fails open as Claude Code's do
  (``quipu.claude.settings.guarded``): a missing interpreter or script ends in exit 0 with no
  output; the prompt hook is exec'd (no process more on its path), a session hook waited for, so
  no exit code of it reaches Codex.
- Before any write the previous file is backed up under ``$QUIPU_HOME/backups``; writes are atomic.
- ``tomlkit`` (about 40 ms to import) is imported only by what reads or writes ``config.toml``, so
  ``codex_home`` costs the history archive's writers nothing.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quipu.claude import settings as claude_settings
from quipu.claude.settings import HookSpec, Result
from quipu.errors import FatalError
from quipu.prompt import locate
from quipu.store import assets

if TYPE_CHECKING:
    import tomlkit

SERVER = "quipu"
ENV_VARS = ("QUIPU_HOME", "QUIPU_STORE", "XDG_DATA_HOME")
LAUNCHER = "quipu_mcp.py"
POINTER = "hooks-dir"
PYTHON_FILE = "python"  # the real interpreter, for the prompt hook (-I -S: no packages needed)
SESSION_PYTHON_FILE = "session-python"  # the interpreter quipu is installed in (a venv's bin/python)
MARKER = claude_settings.MARKER

# Codex's events, with its limits: a SessionEnd hook gets at most 3 s (Codex clamps a longer
# timeout and warns); the launcher returns at once anyway and leaves the work to a detached child.
HOOKS = (
    HookSpec("UserPromptSubmit", None, None, 10),
    HookSpec("SessionStart", None, "session-start", 30),
    HookSpec("PreCompact", None, "pre-compact", 60),
    HookSpec("SessionEnd", None, "session-end", 3),
)

# The sh prologue of a project's commands: find this machine's quipu through $QUIPU_HOME, else exit 0.
_FIND = ('h="${QUIPU_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/quipu}"; d=; py=; '
         'read -r d < "$h/hooks-dir" 2>/dev/null; read -r py < "$h/session-python" 2>/dev/null; '
         '[ -n "$d" ] && [ -r "$d/quipu_hook.py" ] || exit 0; [ -x "$py" ] || py=python3; ')
# A project's prompt hook: the real interpreter recorded in $QUIPU_HOME/python (else the session's).
_PROMPT = ('p=; read -r p < "$h/python" 2>/dev/null; [ -x "$p" ] || p=$py; s="$d/prompt_submit.py"; '
           'command -v "$p" >/dev/null 2>&1 && [ -r "$s" ] && exec "$p" -I -S "$s" 2>/dev/null; exit 0')


def codex_home() -> Path:
    configured = os.environ.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".codex"


def config_dir(scope: str, project_dir: str | os.PathLike[str] | None = None) -> Path:
    if scope == "user":
        return codex_home()
    if scope == "project":
        return claude_settings.project_root(project_dir) / ".codex"
    raise FatalError(f"Codex has no {scope!r} scope\n- use --user or --project")


def _hooks_dir(hooks_dir: Path | None) -> Path:
    directory = (hooks_dir or assets.hooks_dir()).resolve()
    for name in (claude_settings.PROMPT_SCRIPT, claude_settings.SESSION_SCRIPT, LAUNCHER):
        if not (directory / name).is_file():
            raise FatalError(f"quipu's hook script {directory / name} is missing\n"
                             "- reinstall quipu (pip install --force-reinstall quipu)")
    return directory


def _sh(script: str) -> str:
    return "sh -c " + claude_settings._quote(script)


def commands(scope: str, hooks_dir: Path | None = None) -> list[tuple[HookSpec, str]]:
    """quipu's (event, command) pairs for Codex in ``scope``."""
    if scope == "user":
        by_argument = {s.argument: c for s, c in claude_settings.commands(_hooks_dir(hooks_dir))}
        return [(spec, by_argument[spec.argument]) for spec in HOOKS]
    out = []
    for spec in HOOKS:
        if spec.argument is None:
            script = _FIND + _PROMPT
        else:
            script = _FIND + f'"$py" "$d/quipu_hook.py" {spec.argument} 2>/dev/null; exit 0'
        out.append((spec, f"{_sh(script)} {MARKER}"))
    return out


def mcp_entry(scope: str, hooks_dir: Path | None = None) -> dict[str, Any]:
    """The server's table. Codex starts an MCP server with a bare environment; ``env_vars`` names
    what it passes on from its own (where quipu's home and the store are)."""
    directory = _hooks_dir(hooks_dir)
    if scope == "user":
        entry = {"command": claude_settings.session_python(), "args": ["-I", str(directory / LAUNCHER)]}
    else:
        entry = {"command": "sh", "args": ["-c", _FIND + f'exec "$py" -I "$d/{LAUNCHER}"']}
    return {**entry, "env_vars": list(ENV_VARS)}


def is_ours_server(server: object) -> bool:
    if not isinstance(server, dict):
        return False
    args = server.get("args")
    return isinstance(args, list) and any(isinstance(a, str) and LAUNCHER in a for a in args)


def record_pointers(hooks_dir: Path | None = None) -> None:
    """Write ``$QUIPU_HOME/hooks-dir`` and ``$QUIPU_HOME/python``, which a project's commands read."""
    home = Path(locate.quipu_home())
    home.mkdir(parents=True, exist_ok=True)
    python = claude_settings.session_python()
    for name, value in ((POINTER, str(_hooks_dir(hooks_dir))), (PYTHON_FILE, os.path.realpath(python)),
                        (SESSION_PYTHON_FILE, python)):
        path = home / name
        try:
            if path.read_text(encoding="utf-8").strip() == value:
                continue
        except OSError:
            pass
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_text(value + "\n", encoding="utf-8")
        os.replace(tmp, path)


# ---------------------------------------------------------------- hooks.json


def hooks_path(scope: str, project_dir: str | os.PathLike[str] | None = None) -> Path:
    return config_dir(scope, project_dir) / "hooks.json"


def install_hooks(scope: str, project_dir: str | os.PathLike[str] | None = None, *, dry_run: bool = False,
                  hooks_dir: Path | None = None) -> Result:
    path = hooks_path(scope, project_dir)
    current, before = claude_settings.load(path)
    merged, added, removed = claude_settings.merge(current, commands(scope, hooks_dir), str(path))
    return claude_settings.write_change(path, scope, before, merged, dry_run, added, removed)


def uninstall_hooks(scope: str, project_dir: str | os.PathLike[str] | None = None, *, dry_run: bool = False) -> Result:
    path = hooks_path(scope, project_dir)
    current, before = claude_settings.load(path)
    if before is None:
        return Result(path, scope, False, False, dry_run, None)
    cleaned, removed = claude_settings.remove(current, str(path))
    result = claude_settings.write_change(path, scope, before, cleaned, dry_run, [], removed)
    if removed and not cleaned and not dry_run:
        path.unlink()  # it held nothing but quipu's hooks: quipu created it
    return result


# ---------------------------------------------------------------- config.toml


def toml_path(scope: str, project_dir: str | os.PathLike[str] | None = None) -> Path:
    return config_dir(scope, project_dir) / "config.toml"


def load_toml(path: Path) -> tuple[tomlkit.TOMLDocument, str | None]:
    import tomlkit

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document(), None
    except (OSError, UnicodeDecodeError) as exc:
        raise FatalError(f"cannot read {path}: {exc}\n- check the file's permissions and encoding") from None
    return load_text(text, path), text


def load_text(text: str, path: Path) -> tomlkit.TOMLDocument:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise FatalError(f"{path} is not valid TOML ({exc})\n"
                         "- fix the file by hand, then run the command again; nothing was changed") from None


def _servers(doc: tomlkit.TOMLDocument, path: Path) -> Any:
    servers = doc.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise FatalError(f'{path}: "mcp_servers" is not a table\n- fix the file by hand; nothing was changed')
    return servers


def _plain(value: Any) -> Any:
    """A tomlkit item as plain Python values (None stays None)."""
    return value.unwrap() if hasattr(value, "unwrap") else value


def _summary(server: dict[str, Any]) -> dict[str, str]:
    return {"event": f"mcp_servers.{SERVER}", "command": " ".join([str(server.get("command", "")),
                                                                    *map(str, server.get("args", []))])}


def _toml_write(path: Path, scope: str, before: str | None, after: str, dry_run: bool,
                added: list[dict[str, str]], removed: list[dict[str, str]]) -> Result:
    changed = bool(added or removed)
    if changed and not added:
        after = _original_toml(path, after) or after
    backup = None
    if changed and not dry_run:
        if before is not None:
            backup = claude_settings._backup(path, before)
        claude_settings._write(path, after)
    return Result(path, scope, changed, before is not None, dry_run, backup, added, removed, before or "",
                  after if changed else before or "")


def _original_toml(path: Path, text: str) -> str | None:
    """The newest backup of ``path`` holding the same TOML as ``text``: its exact bytes."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        wanted = tomlkit.parse(text).unwrap()
        candidates = sorted(claude_settings._backup_dir().glob(f"*-{claude_settings._slug(path)}"), reverse=True)[:20]
    except (OSError, TOMLKitError):
        return None
    for candidate in candidates:
        try:
            old = candidate.read_text(encoding="utf-8")
            if tomlkit.parse(old).unwrap() == wanted:
                return old
        except (OSError, UnicodeDecodeError, TOMLKitError):
            continue
    return None


def install_mcp(scope: str, project_dir: str | os.PathLike[str] | None = None, *, dry_run: bool = False,
                hooks_dir: Path | None = None) -> Result:
    import tomlkit
    from tomlkit.items import InlineTable

    path = toml_path(scope, project_dir)
    doc, before = load_toml(path)
    wanted = mcp_entry(scope, hooks_dir)
    servers = _servers(doc, path)
    plain = _plain(servers.get(SERVER) if servers is not None else None)
    if plain is not None and not is_ours_server(plain):
        raise FatalError(f'{path} already has an MCP server named "{SERVER}" that is not quipu\'s\n'
                         "- rename or remove it, then run the command again; nothing was changed")
    if plain == wanted:
        return Result(path, scope, False, before is not None, dry_run, None, before=before or "", after=before or "")
    table = tomlkit.table()
    table.update(wanted)
    if plain is None and (servers is None or not isinstance(servers, InlineTable)):
        # A new table goes at the end of the file, as text: every byte before it stays where it was.
        alone = tomlkit.document()
        alone["mcp_servers"] = tomlkit.table(is_super_table=True)
        alone["mcp_servers"][SERVER] = table
        text = before or ""
        after = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text.strip() else "") + \
            tomlkit.dumps(alone)
    else:
        if servers is None:
            servers = doc["mcp_servers"] = tomlkit.table(is_super_table=True)
        servers[SERVER] = table  # replaced where it stands
        after = tomlkit.dumps(doc)
    if _plain(_servers(load_text(after, path), path).get(SERVER)) != wanted:
        raise FatalError(f"{path}: quipu's server could not be added without changing the rest of the file\n"
                         f"- add [mcp_servers.{SERVER}] by hand (see `quipu install codex --dry-run`); nothing was changed")
    removed = [_summary(plain)] if plain else []
    return _toml_write(path, scope, before, after, dry_run, [_summary(wanted)], removed)


def uninstall_mcp(scope: str, project_dir: str | os.PathLike[str] | None = None, *, dry_run: bool = False) -> Result:
    import tomlkit

    path = toml_path(scope, project_dir)
    doc, before = load_toml(path)
    servers = _servers(doc, path) if before is not None else None
    plain = _plain(servers.get(SERVER) if servers is not None else None)
    if servers is None or plain is None or not is_ours_server(plain):
        return Result(path, scope, False, before is not None, dry_run, None, before=before or "", after=before or "")
    del servers[SERVER]
    if not servers:
        del doc["mcp_servers"]
    after = tomlkit.dumps(doc)
    result = _toml_write(path, scope, before, after, dry_run, [], [_summary(plain)])
    if not result.after.strip() and not dry_run:
        path.unlink()  # it held nothing but quipu's server: quipu created it
    return result


# ---------------------------------------------------------------- doctor


def wiring(project_dir: str | os.PathLike[str] | None = None) -> list[tuple[str, bool, str]]:
    """(where, ok, what) for each Codex file that holds quipu's wiring: the hooks and the server."""
    found: list[tuple[str, bool, str]] = []
    for scope in ("user", "project"):
        path = hooks_path(scope, project_dir)
        try:
            current, before = claude_settings.load(path)
        except FatalError as exc:
            found.append((str(path), False, str(exc).splitlines()[0]))
            continue
        if before is not None:
            ours = {event for event, groups in (current.get("hooks") or {}).items() if isinstance(groups, list)
                    for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if claude_settings.is_ours(h)}
            if ours:
                missing = sorted({s.event for s in HOOKS} - ours)
                stale = [c for s, c in commands(scope) if s.event in ours and c not in _commands_in(current, s.event)]
                ok = not missing and not stale
                found.append((str(path), ok, "quipu's hooks are in place" if ok else
                              f"quipu's hooks are incomplete or stale (missing: {', '.join(missing) or '-'}); "
                              f"run `quipu install codex --{scope}`"))
        tpath = toml_path(scope, project_dir)
        try:
            doc, text = load_toml(tpath)
        except FatalError as exc:
            found.append((str(tpath), False, str(exc).splitlines()[0]))
            continue
        servers = doc.get("mcp_servers") if text is not None else None
        server = servers.get(SERVER) if isinstance(servers, dict) else None
        if server is not None:
            ok = _plain(server) == mcp_entry(scope)
            found.append((str(tpath), ok, "quipu's MCP server is registered" if ok else
                          f"the quipu MCP server entry is not this install's; run `quipu install codex --{scope}`"))
    return found


def _commands_in(current: dict[str, Any], event: str) -> list[str]:
    groups = (current.get("hooks") or {}).get(event) or []
    return [str(h.get("command")) for g in groups if isinstance(g, dict) for h in g.get("hooks", [])
            if isinstance(h, dict)]
