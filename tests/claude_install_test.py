from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from quipu.claude import settings as claude_settings
from quipu.claude import wiring
from quipu.store import assets
from testing.fixtures import git, quipu

USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git diff *)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/prompt-log.sh", "timeout": 5}]}],
    },
}


@pytest.fixture(autouse=True)
def no_claude_config_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings go to the tmp HOME's .claude, never to a real CLAUDE_CONFIG_DIR."""
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


def user_settings(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def write_settings(path: Path, data: dict[str, Any], indent: int = 4) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=indent) + "\n"
    path.write_text(text, encoding="utf-8")
    return text.encode()


def ours(settings: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                if claude_settings.is_ours(handler):
                    out.setdefault(event, []).append(handler["command"])
    return out


def without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    cleaned, _ = claude_settings.remove(settings)
    return cleaned


def backups(home: Path) -> list[Path]:
    directory = home / ".quipu-home" / "backups" / "claude-settings"
    return sorted(directory.iterdir()) if directory.is_dir() else []


def test_second_install_changes_no_byte_and_writes_no_second_backup(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    write_settings(path, USER_SETTINGS)

    first = quipu("install", "claude", "--user")
    after_first = path.read_bytes()
    second = quipu("install", "claude", "--user", "--json")

    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert path.read_bytes() == after_first
    assert json.loads(second.stdout)["changed"] is False
    assert len(backups(quipu_env)) == 1
    assert sorted(ours(json.loads(after_first))) == ["PreCompact", "SessionEnd", "SessionStart", "UserPromptSubmit"]


def test_install_keeps_other_settings_and_hooks_in_place(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    write_settings(path, USER_SETTINGS)

    assert quipu("install", "claude").returncode == 0
    installed = json.loads(path.read_text())

    assert without_ours(installed) == USER_SETTINGS
    assert installed["hooks"]["UserPromptSubmit"][0] == USER_SETTINGS["hooks"]["UserPromptSubmit"][0]
    assert list(installed) == ["model", "permissions", "hooks"]
    group = installed["hooks"]["SessionStart"][0]
    assert group["matcher"] == "startup|resume|clear|compact"
    assert all(isinstance(h["timeout"], int) and h["timeout"] <= 60 for g in installed["hooks"].values() for x in g for h in x["hooks"] if "timeout" in h)
    assert path.read_text().startswith('{\n    "model"')  # the file's own four-space indentation


def test_backup_holds_the_previous_file_byte_for_byte(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    original = write_settings(path, USER_SETTINGS, indent=2)

    result = json.loads(quipu("install", "claude", "--json").stdout)

    assert result["backup"] and Path(result["backup"]).read_bytes() == original
    assert backups(quipu_env) == [Path(result["backup"])]


def test_uninstall_restores_the_original_bytes(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    original = write_settings(path, USER_SETTINGS)
    path.write_bytes(original.replace(b'"model": "opus",', b'"model":"opus",'))  # hand formatting
    original = path.read_bytes()

    assert quipu("install", "claude").returncode == 0
    assert path.read_bytes() != original
    removed = json.loads(quipu("uninstall", "claude", "--json").stdout)["removed"]

    assert path.read_bytes() == original
    assert len(removed) == 4
    assert json.loads(quipu("uninstall", "claude", "--json").stdout)["changed"] is False


def test_uninstall_keeps_a_users_own_entry_even_when_it_runs_the_same_script(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    assert quipu("install", "claude").returncode == 0
    settings = json.loads(path.read_text())
    prompt_command = ours(settings)["UserPromptSubmit"][0]
    own = prompt_command.replace(claude_settings.MARKER, "").rstrip()
    settings["hooks"]["UserPromptSubmit"].append({"hooks": [{"type": "command", "command": own}]})
    path.write_text(json.dumps(settings, indent=2) + "\n")

    assert quipu("uninstall", "claude").returncode == 0

    assert json.loads(path.read_text()) == {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": own}]}]}}


def test_uninstall_after_quipu_created_the_file_leaves_an_empty_object(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    assert not path.exists()

    assert quipu("install", "claude").returncode == 0
    assert path.exists() and backups(quipu_env) == []
    assert quipu("uninstall", "claude").returncode == 0

    assert json.loads(path.read_text()) == {}


def test_malformed_settings_are_refused_and_never_overwritten(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    path.parent.mkdir(parents=True)
    broken = b'{\n  "model": "opus",\n  "hooks": {\n}\n'
    path.write_bytes(broken)

    for verb in ("install", "uninstall"):
        proc = quipu(verb, "claude")
        assert proc.returncode == 1
        assert "is not valid JSON (line 5" in proc.stderr and "nothing was changed" in proc.stderr
    assert path.read_bytes() == broken
    assert backups(quipu_env) == []

    path.write_text('{"hooks": {"Stop": {"command": "x"}}}')
    proc = quipu("install", "claude")
    assert proc.returncode == 1 and "hooks.Stop is not a list" in proc.stderr


def test_dry_run_shows_the_change_and_writes_nothing(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    original = write_settings(path, USER_SETTINGS)

    proc = quipu("install", "claude", "--dry-run")

    assert proc.returncode == 0 and "+" in proc.stdout and "prompt_submit.py" in proc.stdout
    assert path.read_bytes() == original and backups(quipu_env) == []


def test_prompt_hook_command_is_the_real_interpreter_with_no_site_packages() -> None:
    (prompt_spec, prompt), *session = claude_settings.commands()
    found = wiring.direct(prompt)

    assert prompt_spec.event == "UserPromptSubmit" and found is not None
    argv, fails_open = found
    python = argv[0]
    assert fails_open and prompt.startswith(f"p='{python}' ") and 'exec "$p" -I -S "$s"' in prompt
    assert python == os.path.abspath(sys.executable)
    assert os.path.isabs(python) and os.path.isfile(os.path.realpath(python))
    assert "shims" not in Path(python).parts
    assert argv[1:3] == ["-I", "-S"] and Path(argv[3]).is_file() and argv[3].endswith("prompt_submit.py")
    for spec, command in session:
        launched = wiring.direct(command)
        assert launched is not None and launched[1] and launched[0][2:] == [spec.argument]
        launcher_python = launched[0][0]
        assert os.path.isabs(launcher_python) and os.access(launcher_python, os.X_OK)
        assert "shims" not in Path(launcher_python).parts


def test_installed_commands_run_under_sh_and_exit_zero(quipu_env: Path, tmp_path: Path) -> None:
    """Each command is run the way Claude Code runs a shell-form hook: `sh -c COMMAND`, event on stdin;
    the prompt hook recalls through it."""
    assert quipu("init", cwd=tmp_path).returncode == 0
    added = quipu("add", "The billing service deploys with a blue-green rollout through Argo.", "--title",
                  "Billing deploys go blue-green through Argo", "--topic", "deploy", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert quipu("install", "claude").returncode == 0
    commands = ours(json.loads(user_settings(quipu_env).read_text()))
    event = {"session_id": "s1", "transcript_path": str(tmp_path / "none.jsonl"), "cwd": str(tmp_path)}
    prompt = {**event, "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy the billing service?"}

    for name, [command] in commands.items():
        payload = prompt if name == "UserPromptSubmit" else {**event, "hook_event_name": name}
        proc = subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (name, proc.stderr)
        if name == "UserPromptSubmit":
            assert "Billing deploys go blue-green" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        elif proc.stdout.strip():
            assert json.loads(proc.stdout)["hookSpecificOutput"]["hookEventName"] == name


def test_project_scope_writes_to_the_git_root_from_a_subfolder(tmp_path: Path, quipu_env: Path) -> None:
    project = tmp_path / "proj"
    (project / "src" / "deep").mkdir(parents=True)
    git(project, "init", "-q")

    assert quipu("install", "claude", "--project", cwd=project / "src" / "deep").returncode == 0
    assert quipu("install", "claude", "--local", "--project-dir", str(project / "src")).returncode == 0

    assert len(ours(json.loads((project / ".claude" / "settings.json").read_text()))) == 4
    assert len(ours(json.loads((project / ".claude" / "settings.local.json").read_text()))) == 4
    assert not user_settings(quipu_env).exists()


def test_reinstall_replaces_an_entry_left_by_an_older_install(quipu_env: Path) -> None:
    path = user_settings(quipu_env)
    stale = f"'/opt/old/bin/python3' -I -S '/opt/old/hooks/prompt_submit.py' {claude_settings.MARKER}"
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": stale, "timeout": 10}]}]}}
    write_settings(path, settings)

    result = json.loads(quipu("install", "claude", "--json").stdout)

    assert {"event": "UserPromptSubmit", "command": stale} in result["removed"]
    installed = ours(json.loads(path.read_text()))
    assert len(installed["UserPromptSubmit"]) == 1 and stale not in installed["UserPromptSubmit"]


def test_install_over_an_older_install_replaces_every_command_and_uninstall_takes_out_both_forms(
    quipu_env: Path,
) -> None:
    """Before the commands failed open, quipu wrote the bare interpreter and script: a reinstall
    replaces them in place of adding beside them, and uninstall recognises either form."""
    path = user_settings(quipu_env)
    python, hooks = os.path.abspath(sys.executable), assets.hooks_dir().resolve()
    old = {"UserPromptSubmit": f"'{python}' -I -S '{hooks / 'prompt_submit.py'}' {claude_settings.MARKER}"}
    for event, argument in (("SessionStart", "session-start"), ("PreCompact", "pre-compact"),
                            ("SessionEnd", "session-end")):
        old[event] = f"'{python}' '{hooks / 'quipu_hook.py'}' {argument} {claude_settings.MARKER}"
    settings = copy.deepcopy(USER_SETTINGS)
    for event, command in old.items():
        settings["hooks"].setdefault(event, []).append({"hooks": [{"type": "command", "command": command, "timeout": 5}]})
    write_settings(path, settings)

    result = json.loads(quipu("install", "claude", "--json").stdout)

    assert sorted((r["event"], r["command"]) for r in result["removed"]) == sorted(old.items())
    installed = ours(json.loads(path.read_text()))
    assert sorted(installed) == sorted(old) and all(len(c) == 1 for c in installed.values())
    assert all(wiring.fails_open(c) for [c] in installed.values())
    assert without_ours(json.loads(path.read_text())) == USER_SETTINGS

    mixed = json.loads(path.read_text())  # one old command left beside the new ones, as a hand merge might
    mixed["hooks"]["PreCompact"].append({"hooks": [{"type": "command", "command": old["PreCompact"]}]})
    path.write_text(json.dumps(mixed, indent=4) + "\n")
    removed = json.loads(quipu("uninstall", "claude", "--json").stdout)["removed"]
    assert len(removed) == 5 and json.loads(path.read_text()) == USER_SETTINGS


def test_a_symlinked_settings_file_stays_a_symlink(quipu_env: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    write_settings(dotfiles, {"model": "opus"})
    link = user_settings(quipu_env)
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)

    assert quipu("install", "claude").returncode == 0

    assert link.is_symlink() and len(ours(json.loads(dotfiles.read_text()))) == 4
