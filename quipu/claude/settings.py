"""quipu's hook entries in Claude Code's settings files: merge them in, take them out.

Contract:
- ``install`` merges one matcher group per event (UserPromptSubmit, SessionStart, PreCompact,
  SessionEnd) into the ``hooks`` of a settings file. It is idempotent: when quipu's entries are
  already exactly there, nothing is written (no backup either), so a second run changes no byte.
  Every other key, event, matcher group and handler is kept as it was, in its place.
- ``uninstall`` removes exactly the handlers quipu added, recognised by ``MARKER`` at the end of
  the command (a shell comment), and drops only the groups, event lists and ``hooks`` object
  that removing them left empty. A user's own handler is never touched, even one that runs the
  same script. When a backup holds exactly the resulting settings, its text is written back, so
  the file returns byte for byte (formatting included); otherwise the JSON is re-indented like
  the file was. A file quipu created is left as ``{}``.
- Before any write the previous file is copied to a timestamped backup under
  ``$QUIPU_HOME/backups/claude-settings/`` (outside the project, so a backup never shows up in
  the project's ``git status``). Writes are atomic (temporary file + rename) and go through a
  symlinked settings file to its target.
- A settings file that is not valid JSON, or whose ``hooks`` do not have Claude Code's shape,
  raises ``FatalError`` and is never overwritten.

Why the shell form rather than the exec form (``"command"`` plus ``"args"``): the exec form needs
Claude Code v2.1.139 or newer, and older versions would ignore ``args`` and run the bare
interpreter. A command of the user and local scopes (``guarded``) names the interpreter and the
script by absolute path, single-quoted for ``sh -c`` (spaces and quotes in paths are safe)::

    p='/abs/python' s='/abs/prompt_submit.py'; [ -x "$p" ] && [ -r "$s" ] && exec "$p" -I -S "$s" 2>/dev/null; exit 0 # quipu-managed-hook
    p='/abs/python' s='/abs/quipu_hook.py'; [ -x "$p" ] && [ -r "$s" ] && "$p" "$s" session-start 2>/dev/null; exit 0 # quipu-managed-hook

Hooks fail open: a missing, unreadable or non-executable interpreter or script (``pip uninstall``
without ``quipu uninstall``, a tool's virtual environment rebuilt on another Python) ends in
``exit 0`` with no output, never in Python's exit 2 ("can't open file"), which would block every
prompt (UserPromptSubmit) or compaction (PreCompact). The checks are shell builtins. The prompt
hook is then exec'd, so its path costs no process more than before; ``prompt_submit.py`` exits 0
on any error of its own, and an interpreter that is there but dies before running it exits with
its own code (waiting to map that to 0 would cost every prompt a shell fork: about 0.5 ms under
dash, 1 ms under bash). A session hook is waited for, so no exit code of it reaches Claude Code.
``quipu doctor`` runs them without the guard (``quipu.claude.wiring``). The trailing comment is
inert in the shell.

Portable commands: the ``project`` scope writes ``<project>/.claude/settings.json``, which a team
commits, so its commands name no path of this machine: ``quipu hook EVENT`` (``quipu.commands.hook``),
found on PATH wherever the project is checked out, and failing open (exit 0) where there is none.
The prompt hook first runs the interpreter and ``prompt_submit.py`` that the session launcher
recorded in ``$QUIPU_HOME/python`` and ``$QUIPU_HOME/prompt-hook``, with ``-I -S`` like everywhere
else, behind the same guard; ``quipu hook EVENT`` is waited for, so an older ``quipu`` without
that command (argparse's exit 2) blocks nothing. The user and local scopes use absolute paths.

Interpreters: elsewhere both hooks run the interpreter quipu itself runs under, by absolute path: a
virtual environment's ``bin/python`` (a symlink to the real binary, so it starts as fast) or the
real binary, never a pyenv-style ``shims`` script (a shell script that costs ~50 ms). The prompt
hook adds ``-I -S``: no site-packages are loaded, because ``prompt_submit.py`` finds the quipu
package beside it. Keeping the environment's path (rather than resolving the symlink) matters
for the detached index refresh the prompt hook may start: it re-uses ``sys.executable`` and
needs quipu's dependencies.
"""
from __future__ import annotations

import copy
import datetime as _dt
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quipu.store import assets
from quipu.prompt import locate
from quipu.errors import FatalError

MARKER = "# quipu-managed-hook"
PROMPT_SCRIPT = "prompt_submit.py"
SESSION_SCRIPT = "quipu_hook.py"
SCOPES = ("user", "project", "local")
# How to (re)install quipu: from its repository, since the PyPI project named "quipu" is another one.
INSTALL_HINT = ("install quipu as a tool from a clone of its repository: `pipx install ./quipu` or "
                "`uv tool install ./quipu` (the PyPI project named quipu is another one)")


@dataclass(frozen=True)
class HookSpec:
    """One event quipu hooks into; ``argument`` is the launcher's argument (None: the prompt hook)."""

    event: str
    matcher: str | None
    argument: str | None
    timeout: int  # seconds, as Claude Code reads it


# The same events and timeouts as the plugin's hooks/hooks.json (a test keeps them equal).
# UserPromptSubmit: 10 s is far above the hook's ~20 ms and far below the event's 30 s default.
# SessionEnd: a settings-file timeout raises the shared 1.5 s SessionEnd budget (up to 60 s).
HOOKS = (
    HookSpec("UserPromptSubmit", None, None, 10),
    HookSpec("SessionStart", "startup|resume|clear|compact", "session-start", 30),
    HookSpec("PreCompact", None, "pre-compact", 60),
    HookSpec("SessionEnd", None, "session-end", 15),
)


@dataclass(frozen=True)
class Result:
    path: Path
    scope: str
    changed: bool
    existed: bool
    dry_run: bool
    backup: Path | None
    added: list[dict[str, str]] = field(default_factory=list)
    removed: list[dict[str, str]] = field(default_factory=list)
    before: str = ""
    after: str = ""

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                f"{self.path} (before)",
                f"{self.path} (after)",
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "scope": self.scope,
            "changed": self.changed,
            "dry_run": self.dry_run,
            "backup": str(self.backup) if self.backup else None,
            "added": self.added,
            "removed": self.removed,
        }


# ---------------------------------------------------------------- where and what


def claude_dir() -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def project_root(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The git work tree containing ``cwd`` (a worktree's own top), else ``cwd`` itself."""
    here = Path(cwd or os.getcwd()).absolute()
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return here
    return Path(out) if out else here


def settings_path(scope: str, project_dir: str | os.PathLike[str] | None = None) -> Path:
    if scope == "user":
        return claude_dir() / "settings.json"
    root = project_root(project_dir)
    name = "settings.local.json" if scope == "local" else "settings.json"
    return root / ".claude" / name


def _is_shim(path: str) -> bool:
    return "shims" in Path(path).parts


def session_python() -> str:
    """The interpreter quipu runs under, by absolute path; never a shim script."""
    python = os.path.abspath(sys.executable)
    if not _is_shim(python) and os.path.isfile(python):
        return python
    real = os.path.realpath(sys.executable)
    if not real or _is_shim(real) or not os.path.isfile(real):
        raise FatalError(f"cannot find the real Python interpreter (got {sys.executable!r})\n- run quipu from a real Python install")
    return real


def prompt_python() -> str:
    """The interpreter for the prompt hook (run with -I -S, so no site-packages are loaded)."""
    return session_python()


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


# What runs an interpreter $p on a script $s only when both are there: shell builtins, no process.
GUARD = '[ -x "$p" ] && [ -r "$s" ] && '
# The prompt hook of a committed settings file: the interpreter and prompt_submit.py that quipu's
# session launcher recorded in $QUIPU_HOME (so the prompt path still runs under -I -S), else the
# `quipu` on PATH, else nothing (it fails open, like every quipu hook).
PORTABLE_PROMPT = ('h="${QUIPU_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/quipu}"; p=; s=; '
                   '{ read -r p < "$h/python"; read -r s < "$h/prompt-hook"; } 2>/dev/null; '
                   f'{GUARD}exec "$p" -I -S "$s" 2>/dev/null; ')


def portable_command(spec: HookSpec) -> str:
    """The command a committed settings file holds: nothing of this machine, only ``quipu hook EVENT``
    from each machine's PATH (the prompt hook first tries what quipu recorded in $QUIPU_HOME)."""
    event = spec.argument or "prompt"
    first = PORTABLE_PROMPT if spec.argument is None else ""
    return f"{first}command -v quipu >/dev/null 2>&1 && quipu hook {event} 2>/dev/null; exit 0 {MARKER}"


def guarded(python: str, script: str, argument: str | None) -> str:
    """The command of one hook of this machine: it exits 0 with no output unless the interpreter is
    executable and the script readable; the prompt hook (no ``argument``) is then exec'd with -I -S,
    and a session hook waited for, so that whatever it exits with, the command exits 0."""
    head = f"p={_quote(python)} s={_quote(script)}; {GUARD}"
    run = 'exec "$p" -I -S "$s"' if argument is None else f'"$p" "$s" {argument}'
    return f"{head}{run} 2>/dev/null; exit 0 {MARKER}"


def commands(hooks_dir: Path | None = None, *, portable: bool = False) -> list[tuple[HookSpec, str]]:
    """quipu's (spec, command) pairs: for this install of quipu by absolute path, or ``portable``
    (``quipu hook EVENT`` on PATH, for a file a team commits)."""
    if portable:
        return [(spec, portable_command(spec)) for spec in HOOKS]
    directory = (hooks_dir or assets.hooks_dir()).resolve()
    prompt, launcher = directory / PROMPT_SCRIPT, directory / SESSION_SCRIPT
    for script in (prompt, launcher):
        if not script.is_file():
            raise FatalError(f"quipu's hook script {script} is missing\n- {INSTALL_HINT}")
    out = []
    for spec in HOOKS:
        if spec.argument is None:
            out.append((spec, guarded(prompt_python(), str(prompt), None)))
        else:
            out.append((spec, guarded(session_python(), str(launcher), spec.argument)))
    return out


def is_ours(handler: object) -> bool:
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and command.rstrip().endswith(MARKER)


# ---------------------------------------------------------------- pure merging


def _group(spec: HookSpec, command: str) -> dict[str, Any]:
    group: dict[str, Any] = {}
    if spec.matcher is not None:
        group["matcher"] = spec.matcher
    group["hooks"] = [{"type": "command", "command": command, "timeout": spec.timeout}]
    return group


def _checked_hooks(settings: dict[str, Any], where: str) -> dict[str, Any] | None:
    hooks = settings.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise FatalError(f"{where}: \"hooks\" is not an object\n- fix the file by hand; nothing was changed")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise FatalError(f"{where}: hooks.{event} is not a list\n- fix the file by hand; nothing was changed")
        for n, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise FatalError(
                    f"{where}: hooks.{event}[{n}] is not a matcher group with a \"hooks\" list\n"
                    "- fix the file by hand; nothing was changed"
                )
    return hooks


def _strip_ours(groups: list[Any]) -> tuple[list[Any], list[str]]:
    kept, removed = [], []
    for group in groups:
        handlers = group.get("hooks", [])
        mine = [h for h in handlers if is_ours(h)]
        if not mine:
            kept.append(group)
            continue
        removed += [h["command"] for h in mine]
        rest = [h for h in handlers if not is_ours(h)]
        if rest:
            kept.append({**group, "hooks": rest})
    return kept, removed


def merge(settings: dict[str, Any], wanted: list[tuple[HookSpec, str]], where: str = "settings") -> tuple[dict[str, Any], list[dict[str, str]], list[dict[str, str]]]:
    """Return (new settings, added, removed); ``settings`` itself is not modified."""
    out = copy.deepcopy(settings)
    hooks = _checked_hooks(out, where)
    if hooks is None:
        hooks = out["hooks"] = {}
    added: list[dict[str, str]] = []
    removed: list[dict[str, str]] = []
    for spec, command in wanted:
        groups = hooks.get(spec.event, [])
        desired = _group(spec, command)
        places = [g for g in groups if any(is_ours(h) for h in g.get("hooks", []))]
        count = sum(1 for g in places for h in g["hooks"] if is_ours(h))
        if count == 1 and places[0] == desired:
            continue
        kept, gone = _strip_ours(groups)
        removed += [{"event": spec.event, "command": c} for c in gone]
        hooks[spec.event] = kept + [desired]
        added.append({"event": spec.event, "command": command})
    return out, added, removed


def remove(settings: dict[str, Any], where: str = "settings") -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Return (settings without quipu's handlers, removed)."""
    out = copy.deepcopy(settings)
    hooks = _checked_hooks(out, where)
    if not hooks:
        return out, []
    removed: list[dict[str, str]] = []
    for event in list(hooks):
        kept, gone = _strip_ours(hooks[event])
        if not gone:
            continue
        removed += [{"event": event, "command": c} for c in gone]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if removed and not hooks:
        del out["hooks"]
    return out, removed


# ---------------------------------------------------------------- files


def load(path: Path) -> tuple[dict[str, Any], str | None]:
    """(settings, original text or None when the file does not exist)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        raise FatalError(f"cannot read {path}: {exc}\n- check the file's permissions and encoding") from None
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FatalError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})\n"
            "- fix the file by hand, then run the command again; nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise FatalError(f"{path} does not hold a JSON object\n- fix the file by hand; nothing was changed")
    return data, text


def _indent(text: str | None) -> int | str:
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def render(settings: dict[str, Any], like: str | None) -> str:
    """JSON text in the original file's indentation (two spaces for a new file)."""
    text = json.dumps(settings, indent=_indent(like), ensure_ascii=False)
    return text + "\n" if like is None or like.endswith("\n") or not like.strip() else text


def _backup_dir() -> Path:
    return Path(locate.quipu_home()) / "backups" / "claude-settings"


def _slug(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", str(path.absolute())).strip("-")[-120:]


def _backup(path: Path, text: str) -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    directory = _backup_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{stamp}-{_slug(path)}"
    target.write_text(text, encoding="utf-8")
    return target


def _original_text(path: Path, settings: dict[str, Any]) -> str | None:
    """The newest backup of ``path`` holding exactly ``settings``, so uninstall restores its bytes."""
    try:
        candidates = sorted(_backup_dir().glob(f"*-{_slug(path)}"), reverse=True)[:20]
    except OSError:
        return None
    for candidate in candidates:
        try:
            text = candidate.read_text(encoding="utf-8")
            if json.loads(text) == settings:
                return text
        except (OSError, UnicodeDecodeError, ValueError):
            continue
    return None


def _write(path: Path, text: str) -> None:
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.quipu-tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        if target.exists():
            shutil.copymode(target, tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_change(path: Path, scope: str, before: str | None, after_settings: dict[str, Any], dry_run: bool, added: list[dict[str, str]], removed: list[dict[str, str]]) -> Result:
    """Write ``after_settings`` to ``path`` (backed up first; the old bytes when a backup holds exactly
    them), unless nothing changed or ``dry_run``; also used for the MCP configuration files."""
    changed = bool(added or removed)
    after = before or ""
    if changed:
        after = (not added and _original_text(path, after_settings)) or render(after_settings, before)
    backup = None
    if changed and not dry_run:
        if before is not None:
            backup = _backup(path, before)
        _write(path, after)
    return Result(path, scope, changed, before is not None, dry_run, backup, added, removed, before or "", after)


def install(path: Path, *, scope: str = "user", dry_run: bool = False, hooks_dir: Path | None = None) -> Result:
    """Merge quipu's hooks into ``path``; the ``project`` scope (a committed file) gets the portable commands."""
    settings, before = load(path)
    merged, added, removed = merge(settings, commands(hooks_dir, portable=scope == "project"), str(path))
    return write_change(path, scope, before, merged, dry_run, added, removed)


def uninstall(path: Path, *, scope: str = "user", dry_run: bool = False) -> Result:
    settings, before = load(path)
    if before is None:
        return Result(path, scope, False, False, dry_run, None)
    cleaned, removed = remove(settings, str(path))
    return write_change(path, scope, before, cleaned, dry_run, [], removed)
