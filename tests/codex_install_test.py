"""`quipu install codex` / `uninstall codex`, run as the CLI process, on a user's own Codex configuration."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit

from quipu.claude import settings as claude_settings
from quipu.claude import wiring

USER_TOML = """# my Codex settings
model = "o3"   # the one I like
approval_policy = 'on-request'

[mcp_servers.docs]
command = "npx"
args = [ "-y",   "docs-mcp" ]  # odd spacing kept
env = { DOCS_TOKEN_FILE = "~/.docs" }

[mcp_servers."my.server"]
command = "uvx"
args = ["my-server"]

[profiles.fast]
model = "o4-mini"
"""
USER_HOOKS = """{
  "hooks": {
    "UserPromptSubmit": [
      {"hooks": [{"type": "command", "command": "echo own-prompt-log", "timeout": 5}]}
    ],
    "Stop": [
      {"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}
    ]
  }
}
"""


def quipu(env: dict[str, str], *args: str, ok: bool | None = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "quipu", *args], capture_output=True, text=True, env=env)
    assert ok is None or (result.returncode == 0) == ok, result.stdout + result.stderr
    return result


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return {**os.environ, "CODEX_HOME": str(tmp_path / "codex-home"), "QUIPU_HOME": str(tmp_path / "quipu-home"),
            "HOME": str(tmp_path)}


def _folder(env: dict[str, str], scope: str) -> Path:
    return Path(env["CODEX_HOME"]) if scope == "user" else Path(env["HOME"]) / "project" / ".codex"


def _scope_args(env: dict[str, str], scope: str) -> list[str]:
    return ["--user"] if scope == "user" else ["--project", "--project-dir", str(Path(env["HOME"]) / "project")]


@pytest.mark.parametrize("scope", ["user", "project"])
def test_install_twice_then_uninstall_gives_back_the_users_own_files_byte_for_byte(env: dict[str, str], scope: str) -> None:
    folder = _folder(env, scope)
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(USER_TOML, encoding="utf-8")
    (folder / "hooks.json").write_text(USER_HOOKS, encoding="utf-8")

    quipu(env, "install", "codex", *_scope_args(env, scope))
    toml_text = (folder / "config.toml").read_text(encoding="utf-8")
    assert toml_text.startswith(USER_TOML), "the user's own tables must stay byte for byte, quipu's only appended"
    server = tomlkit.parse(toml_text)["mcp_servers"]["quipu"]
    assert any("quipu_mcp.py" in a for a in server["args"])
    hooks = json.loads((folder / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    assert hooks["UserPromptSubmit"][0] == json.loads(USER_HOOKS)["hooks"]["UserPromptSubmit"][0]
    assert hooks["Stop"] == json.loads(USER_HOOKS)["hooks"]["Stop"]
    assert {"UserPromptSubmit", "SessionStart", "PreCompact", "SessionEnd"} <= set(hooks)

    again = quipu(env, "install", "codex", *_scope_args(env, scope))
    assert again.stdout.count("nothing to do") == 2

    quipu(env, "uninstall", "codex", *_scope_args(env, scope))
    assert (folder / "config.toml").read_text(encoding="utf-8") == USER_TOML
    assert (folder / "hooks.json").read_text(encoding="utf-8") == USER_HOOKS


def test_uninstall_keeps_what_the_user_changed_after_install(env: dict[str, str]) -> None:
    folder = _folder(env, "user")
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(USER_TOML, encoding="utf-8")
    quipu(env, "install", "codex", "--user")
    edited = (folder / "config.toml").read_text(encoding="utf-8") + '\n[mcp_servers.later]\ncommand = "later"  # added after\n'
    (folder / "config.toml").write_text(edited, encoding="utf-8")

    quipu(env, "uninstall", "codex", "--user")
    after = (folder / "config.toml").read_text(encoding="utf-8")
    assert after.startswith(USER_TOML)
    assert '[mcp_servers.later]\ncommand = "later"  # added after\n' in after
    assert "quipu" not in tomlkit.parse(after)["mcp_servers"]


def test_project_files_hold_no_path_of_this_machine_and_a_fresh_project_is_left_empty(env: dict[str, str]) -> None:
    quipu(env, "install", "codex", *_scope_args(env, "project"))
    folder = _folder(env, "project")
    written = (folder / "hooks.json").read_text(encoding="utf-8") + (folder / "config.toml").read_text(encoding="utf-8")
    for machine_path in (env["HOME"], sys.executable, str(Path(__file__).resolve().parent.parent)):
        assert machine_path not in written
    pointer = Path(env["QUIPU_HOME"]) / "hooks-dir"
    assert (Path(pointer.read_text(encoding="utf-8").strip()) / "prompt_submit.py").is_file()

    quipu(env, "uninstall", "codex", *_scope_args(env, "project"))
    assert sorted(p.name for p in folder.iterdir()) == []


def test_a_server_named_quipu_that_is_not_quipus_is_refused_and_nothing_changes(env: dict[str, str]) -> None:
    folder = _folder(env, "user")
    folder.mkdir(parents=True)
    own = '[mcp_servers.quipu]\ncommand = "something-else"\n'
    (folder / "config.toml").write_text(own, encoding="utf-8")

    result = quipu(env, "install", "codex", "--user", ok=False)
    assert "not quipu's" in result.stderr and "- rename or remove it" in result.stderr
    assert (folder / "config.toml").read_text(encoding="utf-8") == own
    assert not (folder / "hooks.json").exists()


def test_codex_has_no_local_scope(env: dict[str, str]) -> None:
    result = quipu(env, "install", "codex", "--local", ok=False)
    assert "no --local scope" in result.stderr and "- use --user" in result.stderr


def test_doctor_checks_the_codex_wiring_and_names_the_fix_when_it_is_stale(env: dict[str, str], tmp_path: Path) -> None:
    store = tmp_path / "store"
    quipu(env, "init", str(store))
    env = {**env, "QUIPU_STORE": str(store)}
    quipu(env, "install", "codex", "--user")
    checks = {c["name"]: c for c in json.loads(quipu(env, "doctor", "--json", ok=None).stdout)["checks"]}
    assert checks["codex"]["ok"], checks["codex"]

    hooks = Path(env["CODEX_HOME"]) / "hooks.json"
    data = json.loads(hooks.read_text(encoding="utf-8"))
    del data["hooks"]["SessionEnd"]
    hooks.write_text(json.dumps(data), encoding="utf-8")
    checks = {c["name"]: c for c in json.loads(quipu(env, "doctor", "--json", ok=None).stdout)["checks"]}
    assert not checks["codex"]["ok"]
    assert any("SessionEnd" in d and "quipu install codex --user" in d for d in checks["codex"]["details"])


def _hook_commands(path: Path) -> dict[str, str]:
    hooks = json.loads(path.read_text(encoding="utf-8"))["hooks"]
    return {event: h["command"] for event, groups in hooks.items() for g in groups for h in g["hooks"]
            if h["command"].endswith(claude_settings.MARKER)}


def _run_hook(command: str, event: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    payload = {"session_id": "codex-session", "transcript_path": "", "cwd": str(Path(env["HOME"]) / "project"),
               "hook_event_name": event, "prompt": "how do we deploy the billing service?", "source": "startup"}
    return subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True, env=env,
                          cwd=Path(env["HOME"]) / "project", timeout=60)


def test_every_codex_command_fails_open_once_the_quipu_it_finds_is_gone(env: dict[str, str], tmp_path: Path) -> None:
    quipu(env, "install", "codex", "--user")
    assert all(wiring.fails_open(c) for c in _hook_commands(_folder(env, "user") / "hooks.json").values())
    quipu(env, "install", "codex", *_scope_args(env, "project"))
    project = _hook_commands(_folder(env, "project") / "hooks.json")
    quipu(env, "init")
    quipu(env, "add", "The billing service deploys with a blue-green rollout through Argo.", "--title",
          "Billing deploys go blue-green through Argo", "--topic", "deploy")
    recalled = _run_hook(project["UserPromptSubmit"], "UserPromptSubmit", env)
    assert recalled.returncode == 0 and "Billing deploys go blue-green" in recalled.stdout, recalled.stderr

    home = Path(env["QUIPU_HOME"])
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sh").symlink_to(shutil.which("sh") or "/bin/sh")
    bare = {**env, "PATH": str(tmp_path / "bin")}  # a shell, and no python3 to fall back on
    dead = tmp_path / "dead-python"
    dead.write_text("#!/bin/sh\necho 'Fatal Python error' >&2\nexit 2\n")
    dead.chmod(0o755)
    pointers = {name: (home / name).read_text(encoding="utf-8") for name in ("hooks-dir", "python", "session-python")}
    for broken in ({"hooks-dir": str(tmp_path / "uninstalled")},
                   {"python": str(tmp_path / "gone" / "python3"), "session-python": str(tmp_path / "gone" / "python")},
                   {"session-python": str(dead)}):
        for name, value in {**pointers, **broken}.items():
            (home / name).write_text(value + "\n", encoding="utf-8")
        for event, command in project.items():
            if event == "UserPromptSubmit" and "python" not in broken and "hooks-dir" not in broken:
                continue  # the prompt hook runs the real interpreter ($QUIPU_HOME/python), exec'd
            proc = _run_hook(command, event, bare)
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), (broken, event, proc)
