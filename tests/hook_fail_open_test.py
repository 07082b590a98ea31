"""quipu's hook commands fail open once the quipu they name is gone, and `quipu doctor` still finds it.

A quipu installed as a tool lives in a virtual environment of its own. `pip uninstall quipu`
without `quipu uninstall`, or pipx / uv rebuilding that environment on another Python
(lib/python3.11 becomes lib/python3.12), leaves the commands in ~/.claude/settings.json naming an
interpreter or a script that is not there. Python's "can't open file" is exit 2, and exit 2 from a
UserPromptSubmit or PreCompact hook blocks: every prompt would be erased. Each test here installs
such a tool for real (its own venv and its own copy of the package, under tmp), breaks it the way
those events do, and runs every installed command the way Claude Code does (`sh -c`, the event
JSON on stdin).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from quipu.claude import settings as claude_settings
from quipu.claude import wiring
from testing.fixtures import REPO_ROOT, quipu

SHELLS = [shell for shell in ("sh", "bash") if shutil.which(shell)]


@dataclass(frozen=True)
class Tool:
    python: Path  # the venv's bin/python, as the commands name it
    venv: Path
    checkout: Path  # quipu's package and hook scripts, inside the venv's site-packages
    site: Path  # the venv's lib/pythonX.Y


def events(cwd: Path) -> dict[str, dict[str, Any]]:
    """Each event as Claude Code sends it."""
    common = {"session_id": "0b8f1c1e-6a55-4d5e-9a3f-2f4c1f6a7b10", "transcript_path": str(cwd / "session.jsonl"),
              "cwd": str(cwd), "permission_mode": "default"}
    return {
        "UserPromptSubmit": {**common, "hook_event_name": "UserPromptSubmit",
                             "prompt": "how do we deploy the billing service?"},
        "SessionStart": {**common, "hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-5"},
        "PreCompact": {**common, "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""},
        "SessionEnd": {**common, "hook_event_name": "SessionEnd", "reason": "other"},
    }


def installed(home: Path) -> dict[str, str]:
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    found = {event: [h["command"] for g in groups for h in g["hooks"] if claude_settings.is_ours(h)]
             for event, groups in settings["hooks"].items()}
    assert all(len(commands) == 1 for commands in found.values()), found
    return {event: commands[0] for event, commands in found.items()}


def run(shell: str, command: str, event: dict[str, Any], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shell, "-c", command], input=json.dumps(event), capture_output=True, text=True,
                          cwd=cwd, timeout=60)


@pytest.fixture
def tool(tmp_path: Path, quipu_env: Path) -> Tool:
    """quipu installed as a tool, then `quipu install claude --user` run from it."""
    venv = tmp_path / "tool" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [purelib] = venv.glob("lib/python*/site-packages")
    checkout = purelib / "quipu-checkout"
    for name in ("quipu", "hooks", ".quipu-template"):
        shutil.copytree(REPO_ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
    # quipu from the copy; its dependencies from the environment running the tests
    (purelib / "quipu-under-test.pth").write_text(f"{checkout}\n{sysconfig.get_path('purelib')}\n")
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-m", "quipu", "install", "claude", "--user", "--no-mcp"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    commands = installed(quipu_env)
    assert all(str(python) in c and str(checkout / "hooks") in c for c in commands.values()), commands
    return Tool(python, venv, checkout, purelib.parent)


def test_the_tools_prompt_hook_recalls_through_its_installed_command(tool: Tool, quipu_env: Path,
                                                                      tmp_path: Path) -> None:
    for args in (["init"], ["add", "We deploy the billing service with a blue-green rollout through Argo.",
                            "--title", "Billing deploys go blue-green through Argo", "--topic", "deploy"]):
        done = subprocess.run([str(tool.python), "-m", "quipu", *args], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    prompt = installed(quipu_env)["UserPromptSubmit"]

    for shell in SHELLS:  # a session of its own each: a session is not told the same memory twice
        proc = run(shell, prompt, {**events(tmp_path)["UserPromptSubmit"], "session_id": f"session-{shell}"}, tmp_path)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "Billing deploys go blue-green through Argo" in context


def _uninstalled(tool: Tool) -> None:
    shutil.rmtree(tool.checkout)  # `pip uninstall quipu`, without `quipu uninstall`


def _rebuilt_on_another_python(tool: Tool) -> None:
    tool.site.rename(tool.site.with_name("python3.99"))  # the interpreter is there, the scripts' folder is not


def _interpreter_gone(tool: Tool) -> None:
    shutil.rmtree(tool.venv / "bin")


def _interpreter_not_executable(tool: Tool) -> None:
    tool.python.unlink()
    tool.python.write_text("not an interpreter\n")
    tool.python.chmod(0o644)


def _scripts_unreadable(tool: Tool) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode")
    for script in (tool.checkout / "hooks").glob("*.py"):
        script.chmod(0)


@pytest.mark.parametrize("breakage", [_uninstalled, _rebuilt_on_another_python, _interpreter_gone,
                                      _interpreter_not_executable, _scripts_unreadable])
def test_every_installed_command_exits_0_silently_once_what_it_names_is_gone(
    tool: Tool, quipu_env: Path, tmp_path: Path, breakage: Any,
) -> None:
    commands = installed(quipu_env)
    breakage(tool)

    for shell in SHELLS:
        for event, payload in events(tmp_path).items():
            proc = run(shell, commands[event], payload, tmp_path)
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), (shell, event, proc)


@pytest.mark.parametrize("code", [1, 2, 127])
def test_a_session_hook_exits_0_silently_whatever_its_interpreter_dies_with(
    tool: Tool, quipu_env: Path, tmp_path: Path, code: int,
) -> None:
    commands = installed(quipu_env)
    tool.python.unlink()
    tool.python.write_text(f"#!/bin/sh\necho 'Fatal Python error: init_fs_encoding' >&2\nexit {code}\n")
    tool.python.chmod(0o755)

    for shell in SHELLS:
        for event in ("SessionStart", "PreCompact", "SessionEnd"):
            proc = run(shell, commands[event], events(tmp_path)[event], tmp_path)
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), (shell, event, proc)


def test_the_guarded_command_reads_back_to_what_it_runs_whatever_the_paths_hold() -> None:
    python, script = "/opt/it's here/bin/python3", '/opt/a "b" $c `d`/prompt_submit.py'
    prompt = claude_settings.guarded(python, script, None)
    session = claude_settings.guarded(python, script, "session-end")

    assert wiring.direct(prompt) == ([python, "-I", "-S", script], True)
    assert wiring.direct(session) == ([python, script, "session-end"], True)
    old = f"'/opt/old/bin/python3' -I -S '/opt/old/hooks/prompt_submit.py' {claude_settings.MARKER}"
    assert wiring.direct(old) == (["/opt/old/bin/python3", "-I", "-S", "/opt/old/hooks/prompt_submit.py"], False)
    assert claude_settings.is_ours({"type": "command", "command": prompt})
    assert wiring.fails_open(prompt) and not wiring.fails_open(old)
    assert all(wiring.fails_open(c) for _, c in claude_settings.commands(portable=True))


# --- doctor -------------------------------------------------------------------------------------

def doctor(cwd: Path) -> subprocess.CompletedProcess[str]:
    return quipu("doctor", env={"PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
                                "QUIPU_MODEL": "scripted"}, cwd=cwd)


def claude_code_lines(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stdout.splitlines()
    start = next(n for n, line in enumerate(lines) if "] Claude Code" in line)
    end = next((n for n in range(start + 1, len(lines)) if lines[n].startswith("[")), len(lines))
    return "\n".join(lines[start:end])


def test_doctor_finds_a_hook_whose_script_is_gone_though_the_command_exits_0(tool: Tool, quipu_env: Path,
                                                                              tmp_path: Path) -> None:
    assert quipu("init").returncode == 0
    assert doctor(tmp_path).returncode == 0, doctor(tmp_path).stdout
    _uninstalled(tool)

    result = doctor(tmp_path)
    found = claude_code_lines(result)
    assert result.returncode == 1 and found.startswith("[!!] Claude Code"), result.stdout
    assert found.count("does not start") == 4 and "can't open file" in found, found
    assert "quipu install claude --user" in found


def test_doctor_fails_on_a_hook_an_older_quipu_wrote_and_install_replaces_it(quipu_env: Path, tmp_path: Path) -> None:
    assert quipu("init").returncode == 0
    python, hooks = os.path.abspath(sys.executable), claude_settings.commands()  # this quipu's scripts
    prompt = wiring.direct(hooks[0][1])
    assert prompt is not None
    old = f"'{python}' -I -S '{prompt[0][-1]}' {claude_settings.MARKER}"  # what quipu 0.1.0 wrote
    path = quipu_env / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": old}]}]}}))

    result = doctor(tmp_path)
    found = claude_code_lines(result)
    assert result.returncode == 1 and "written by an older quipu" in found and "blocks every prompt" in found, found
    assert "quipu install claude --user" in found

    assert quipu("install", "claude", "--user", "--no-mcp").returncode == 0
    assert old not in path.read_text()
    assert doctor(tmp_path).returncode == 0


def test_doctor_fails_when_the_settings_file_is_not_json_and_says_claude_code_ignores_it(
    quipu_env: Path, tmp_path: Path,
) -> None:
    assert quipu("init").returncode == 0
    assert quipu("install", "claude", "--user", "--no-mcp").returncode == 0
    path = quipu_env / ".claude" / "settings.json"
    path.write_text(path.read_text().replace('"timeout": 10\n', '"timeout": 10,\n', 1))  # a trailing comma
    with pytest.raises(json.JSONDecodeError) as error:
        json.loads(path.read_text())

    result = doctor(tmp_path)
    found = claude_code_lines(result)
    assert result.returncode == 1 and found.startswith("[!!] Claude Code"), result.stdout
    assert f"{path} is not valid JSON (line {error.value.lineno}," in found, found
    assert "Claude Code ignores the whole file, so none of its hooks run (quipu's among them)" in found
