from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import quipu
from quipu import cli
from quipu.claude import settings as claude_settings
from testing.fixtures import REPO_ROOT, make_store, real_python

LAUNCHER = REPO_ROOT / "hooks" / "quipu_hook.py"
_SCRIPT = re.compile(r'"\$\{CLAUDE_PLUGIN_ROOT\}/([^"]+)"')


def plugin_hooks() -> dict[str, list[dict[str, object]]]:
    data = json.loads((REPO_ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    assert set(data) <= {"description", "hooks"}
    return data["hooks"]  # type: ignore[no-any-return]


def plugin_commands() -> list[tuple[str, dict[str, object]]]:
    return [(event, h) for event, groups in plugin_hooks().items() for g in groups for h in g["hooks"]]  # type: ignore[index,union-attr]


def scripts_named() -> set[str]:
    named = set()
    for _, handler in plugin_commands():
        found = _SCRIPT.findall(str(handler["command"]))
        assert len(found) == 1, f"each command names one script, double-quoted for sh: {handler['command']}"
        named.add(found[0])
    return named


def run_launcher(*args: str, stdin: bytes = b"{}", env: dict[str, str] | None = None, python: str | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [python or sys.executable, *args], input=stdin, capture_output=True, env={**os.environ, **(env or {})}, timeout=60
    )


def hook_log(home: Path) -> str:
    path = home / ".quipu-home" / "logs" / "hook.log"
    return path.read_text() if path.exists() else ""


def all_logs(home: Path) -> str:
    folder = home / ".quipu-home" / "logs"
    return "".join(p.read_text() for p in sorted(folder.glob("*.log"))) if folder.is_dir() else ""


def test_plugin_manifest_names_quipu_at_the_package_version() -> None:
    manifest = json.loads((REPO_ROOT / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    assert manifest["name"] == "quipu" and manifest["license"] == "MIT"
    assert manifest["version"] == quipu.__version__ == project["version"]
    assert manifest["description"] and manifest["author"]["name"]
    assert not (REPO_ROOT / ".claude-plugin" / "hooks.json").exists()  # hooks.json belongs at the plugin root


def test_plugin_hooks_match_what_install_writes() -> None:
    hooks = plugin_hooks()
    assert list(hooks) == [spec.event for spec in claude_settings.HOOKS]
    for spec in claude_settings.HOOKS:
        [group] = hooks[spec.event]
        assert group.get("matcher") == spec.matcher
        [handler] = group["hooks"]  # type: ignore[misc]
        assert handler["type"] == "command" and handler["timeout"] == spec.timeout
        command = str(handler["command"])
        if spec.argument is None:
            assert command == 'sh "${CLAUDE_PLUGIN_ROOT}/hooks/prompt_submit.sh"'
        else:
            assert command == f'python3 "${{CLAUDE_PLUGIN_ROOT}}/hooks/quipu_hook.py" {spec.argument}'


def test_every_script_the_plugin_names_exists_in_the_repository() -> None:
    named = scripts_named()
    assert named == {"hooks/prompt_submit.sh", "hooks/quipu_hook.py"}
    for rel in named:
        assert (REPO_ROOT / rel).is_file()
        assert (quipu.store.assets.hooks_dir() / Path(rel).name).is_file()


@pytest.mark.slow
def test_every_script_the_plugin_names_is_in_the_built_wheel(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO_ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [wheel] = tmp_path.glob("quipu-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())

    for rel in scripts_named():
        assert f"quipu/_assets/{rel}" in names
    assert "quipu/_assets/hooks/hooks.json" in names
    assert {"quipu/claude/settings.py", "quipu/claude/memorymd.py", "quipu/claude/precommit.py"} <= names


def test_launcher_does_nothing_inside_quipus_own_children(quipu_env: Path) -> None:
    proc = run_launcher(str(LAUNCHER), "session-start", env={"QUIPU_CHILD": "1"})
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert hook_log(quipu_env) == ""


@pytest.mark.parametrize(
    "args,stdin",
    [
        (["session-end"], b"\xff\xfe not json \x00"),
        (["pre-compact"], b'{"session_id": '),
        (["SessionStart"], b"[]"),
        (["no-such-event"], b"{}"),
        ([], b""),
    ],
)
def test_launcher_fails_open_on_bad_input(args: list[str], stdin: bytes, quipu_env: Path) -> None:
    proc = run_launcher(str(LAUNCHER), *args, stdin=stdin)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    logs = all_logs(quipu_env)
    assert logs and "launcher failed" not in logs


def test_launcher_hands_the_event_to_the_real_command(quipu_env: Path) -> None:
    if "session-end" not in cli.COMMANDS:
        pytest.skip("`quipu session-end` is not built yet")
    proc = run_launcher(str(LAUNCHER), "SessionEnd", stdin=b"not an event")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    session_log = (quipu_env / ".quipu-home" / "logs" / "session-hook.log").read_text()
    assert " session-end " in session_log and hook_log(quipu_env) == ""


def test_launcher_fails_open_when_quipu_cannot_be_imported(quipu_env: Path) -> None:
    """`-S` leaves quipu's dependencies out; with no `quipu` on PATH either, it exits 0 silently."""
    event = next((e for e in ("session-end", "pre-compact", "session-start") if e in cli.COMMANDS), None)
    if event is None:
        pytest.skip("no session command is built yet")
    proc = run_launcher("-S", str(LAUNCHER), event, env={"PATH": ""}, python=real_python())
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    log = hook_log(quipu_env)
    assert f"{event}: quipu is not importable" in log and "no quipu executable on PATH" in log


def test_launcher_passes_the_session_start_output_through(tmp_path: Path, quipu_env: Path) -> None:
    if "session-start" not in cli.COMMANDS:
        pytest.skip("`quipu session-start` is not built yet")
    store = make_store(tmp_path / "store")
    event = {"session_id": "s1", "transcript_path": "", "cwd": str(tmp_path), "hook_event_name": "SessionStart", "source": "startup"}

    proc = run_launcher(str(LAUNCHER), "session-start", stdin=json.dumps(event).encode(), env={"QUIPU_STORE": str(store.root)})

    assert proc.returncode == 0
    if proc.stdout.strip():
        assert json.loads(proc.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


PLUGIN_PROMPT = REPO_ROOT / "hooks" / "prompt_submit.sh"


def fake_python3(folder: Path, marker: Path) -> Path:
    """A `python3` on PATH, as a shim would be, that leaves a mark and then runs the real one."""
    folder.mkdir(exist_ok=True)
    shim = folder / "python3"
    shim.write_text(f'#!/bin/sh\necho used >> "{marker}"\nexec "{real_python()}" "$@"\n')
    shim.chmod(0o755)
    return folder


def plugin_prompt(store: Path, path: str) -> subprocess.CompletedProcess[bytes]:
    event = {"session_id": os.urandom(4).hex(), "transcript_path": "", "cwd": str(store),
             "hook_event_name": "UserPromptSubmit", "prompt": "where is the sprocket?"}
    return subprocess.run(["/bin/sh", str(PLUGIN_PROMPT)], input=json.dumps(event).encode(), capture_output=True,
                          env={**os.environ, "QUIPU_STORE": str(store), "PATH": path}, timeout=60)


def test_the_plugins_prompt_hook_runs_the_interpreter_the_session_hook_recorded(tmp_path: Path, quipu_env: Path) -> None:
    store = make_store(tmp_path / "store")
    from testing.fixtures import add_all, memory

    add_all(store, [memory("sprocket", "Where the sprocket is", "The sprocket is in the left drawer.")])
    marker = tmp_path / "shim-used"
    shims = fake_python3(tmp_path / "shims", marker)
    # Before any session hook ran: the python3 on PATH, whatever it is.
    done = plugin_prompt(store.root, str(shims))
    assert done.returncode == 0 and b"sprocket" in done.stdout and marker.read_text() == "used\n"
    # A session hook (started through that same python3) records the real interpreter ...
    run_launcher(str(LAUNCHER), "session-start", python=str(shims / "python3"), env={"PATH": str(shims)})
    recorded = (quipu_env / ".quipu-home" / "python").read_text().strip()
    assert recorded == os.path.realpath(real_python())
    # ... and from then on the prompt hook starts it directly, never the shim.
    marker.unlink()
    done = plugin_prompt(store.root, str(shims))
    assert done.returncode == 0 and b"sprocket" in done.stdout and not marker.exists()


def test_the_plugins_prompt_hook_fails_open_without_any_python(tmp_path: Path, quipu_env: Path) -> None:
    (quipu_env / ".quipu-home").mkdir(parents=True)
    (quipu_env / ".quipu-home" / "python").write_text("/nonexistent/python3.11\n")  # uninstalled since
    done = plugin_prompt(tmp_path, str(tmp_path / "empty-path"))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
