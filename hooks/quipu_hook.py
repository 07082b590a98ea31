"""Claude Code and Codex CLI session hooks for quipu: SessionStart, SessionEnd and PreCompact.

Run as ``python quipu_hook.py EVENT`` with EVENT one of ``session-start``, ``session-end`` or
``pre-compact`` (Claude Code's names ``SessionStart``, ``SessionEnd`` and ``PreCompact`` are
accepted too) and the hook's event JSON on stdin (Codex CLI sends the same shape). It runs
``quipu EVENT --hook`` with that event on stdin and passes the command's stdout through only when
it succeeded.

Contract (a zero-logic launcher):
- It fails open: whatever goes wrong (quipu or its dependencies not importable, the command not
  existing in this quipu, a crash, bad input) it exits 0 with no output and writes one line to
  ``$QUIPU_HOME/logs/hook.log``.
- It does nothing when ``QUIPU_CHILD`` is set, so quipu's own ``claude -p`` children never
  re-enter quipu.
- It records the real path of the interpreter it runs under in ``$QUIPU_HOME/python``, which
  the plugin's prompt hook (``prompt_submit.sh``) starts instead of a ``python3`` shim, and the
  ``prompt_submit.py`` beside it in ``$QUIPU_HOME/prompt-hook``, which a project's committed
  prompt hook runs with it (``quipu.claude.settings.PORTABLE_PROMPT``).
- quipu is looked for beside this file first (a source checkout used as a Claude Code plugin,
  or an installed wheel, where this file is ``quipu/_assets/hooks/quipu_hook.py``), then in the
  interpreter's own packages, and last as a ``quipu`` executable on PATH (a pipx or uv tool
  install when the plugin's ``python3`` lacks quipu's dependencies).
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time

CHILD_ENV = "QUIPU_CHILD"
MAX_STDIN = 4_000_000
LOG_MAX_BYTES = 1_000_000
EVENTS = {
    "session-start": "session-start",
    "session-end": "session-end",
    "pre-compact": "pre-compact",
    "SessionStart": "session-start",
    "SessionEnd": "session-end",
    "PreCompact": "pre-compact",
}


def _home() -> str:
    home = os.environ.get("QUIPU_HOME")
    if home:
        return os.path.abspath(os.path.expanduser(home))
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "quipu")


def _record_interpreter() -> None:
    """Write this interpreter's real path to ``$QUIPU_HOME/python``, and the ``prompt_submit.py``
    beside this file to ``$QUIPU_HOME/prompt-hook``, for the prompt hooks that cannot name them
    (the plugin's hooks/prompt_submit.sh, a project's committed settings) and cannot afford a
    ``python3`` shim or the ``quipu`` command on every prompt."""
    real = os.path.realpath(sys.executable)
    if sys.version_info < (3, 11) or not os.access(real, os.X_OK):
        return
    _record("python", real)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prompt_submit.py")
    if os.path.isfile(script):
        _record("prompt-hook", script)


def _record(name: str, value: str) -> None:
    path = os.path.join(_home(), name)
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read().strip() == value:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(value + "\n")
    os.replace(tmp, path)


def _log(message: str) -> None:
    try:
        directory = os.path.join(_home(), "logs")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "hook.log")
        mode = "w" if os.path.exists(path) and os.path.getsize(path) > LOG_MAX_BYTES else "a"
        with open(path, mode, encoding="utf-8") as fh:
            line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} session-hook {message}"
            fh.write(line[:2000].replace("\n", " ") + "\n")
    except Exception:  # noqa: BLE001 - logging must never break the hook
        pass


def _package_parent() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    for _ in range(4):
        if os.path.isfile(os.path.join(here, "quipu", "cli.py")):
            return here
        here = os.path.dirname(here)
    return None


def _in_process(command: str, data: bytes) -> bytes | None:
    """Run the command with this interpreter; None when quipu cannot be imported here."""
    parent = _package_parent()
    if parent is not None and parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        from quipu import cli

        if command not in cli.COMMANDS:
            _log(f"{command}: this quipu has no `{command}` command; nothing done")
            return b""
        cli.build_parser(command)  # imports that command module, so missing dependencies show here
        cli.check_dependencies()  # and those it loads only when it writes
    except Exception as exc:  # noqa: BLE001 - missing dependencies mean "try elsewhere"
        _log(f"{command}: quipu is not importable by {sys.executable}: {type(exc).__name__}: {exc}")
        return None
    out, err = io.BytesIO(), io.BytesIO()
    wrappers = (
        io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", errors="replace", write_through=True),
    )
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = wrappers
    try:
        rc = cli.main([command, "--hook"])
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for wrapper in wrappers:
            wrapper.flush()
            wrapper.detach()  # keep the byte buffers open: closing a wrapper closes its buffer
    if rc != 0:
        last = err.getvalue().decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        _log(f"{command}: exit {rc}: {last[0]}")
        return b""
    return out.getvalue()


def _on_path(command: str, data: bytes) -> bytes:
    exe = shutil.which("quipu")
    if exe is None:
        _log(f"{command}: no quipu executable on PATH either; nothing done")
        return b""
    proc = subprocess.run([exe, command, "--hook"], input=data, capture_output=True)
    if proc.returncode != 0:
        last = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        _log(f"{command}: {exe} exited {proc.returncode}: {last[0]}")
        return b""
    return proc.stdout


def main(argv: list[str]) -> int:
    if os.environ.get(CHILD_ENV):
        return 0
    if len(argv) != 1 or argv[0] not in EVENTS:
        _log(f"bad arguments {argv!r}; expected one of {', '.join(EVENTS)}")
        return 0
    command = EVENTS[argv[0]]
    try:
        _record_interpreter()
    except OSError as exc:
        _log(f"{command}: could not record the interpreter for the prompt hook: {exc}")
    data = sys.stdin.buffer.read(MAX_STDIN + 1)
    if len(data) > MAX_STDIN:
        _log(f"{command}: event larger than {MAX_STDIN} bytes; nothing done")
        return 0
    out = _in_process(command, data)
    if out is None:
        out = _on_path(command, data)
    if out:
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except BaseException as exc:  # noqa: BLE001 - a session hook fails open
        _log(f"launcher failed: {type(exc).__name__}: {exc}")
    sys.exit(0)
