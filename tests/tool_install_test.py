"""quipu installed as a tool (pipx, uv tool) and as a Claude Code plugin from its own marketplace,
then used through the real Claude Code CLI against the loopback fake of the API.

A few real-CLI runs only: one prompt through a pipx install, one project installed on one
"machine" and run from a clone at another path with quipu installed elsewhere (hook and MCP
server), and the marketplace route (validate, marketplace add, plugin install, one prompt).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from quipu.model import ScriptedModel
from testing import claude_code
from testing.claude_code import Sandbox
from testing.fake_messages_api import FakeMessagesAPI, Recorded
from testing.fixtures import REPO_ROOT, git

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
PROMPT = "How do we roll out shop-api with the canary script?"
MEMORY = ("Rollouts of shop-api go through `scripts/canary.sh` first, then the full deploy after ten quiet minutes",
          "shop-api canary rollout")
TOOL, TOOL_USE_ID = "mcp__quipu__search_memory", "toolu_01QuipuSearchFromAClone"
WAIT, WAIT_ID = "WaitForMcpServers", "toolu_01WaitForQuipuFromAClone"


@pytest.fixture(scope="module")
def claude_exe() -> Path:
    try:
        return claude_code.install()
    except claude_code.NpmMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a fresh clone of the repository holds: its tracked and unignored files, nothing else."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    target = tmp_path_factory.mktemp("clone") / "quipu"
    for rel in filter(None, listed):
        source = REPO_ROOT / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory, checkout: Path) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(dist), str(checkout)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    (found,) = dist.glob("quipu-*.whl")
    return found


def _clean_env(home: Path, path: list[Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith(("QUIPU_", "CLAUDE", "ANTHROPIC_"))}
    env.update(HOME=str(home), PATH=os.pathsep.join([*map(str, path), "/usr/local/bin", "/usr/bin", "/bin"]),
               QUIPU_HOME=str(home / ".local" / "share" / "quipu"))
    return env


@pytest.fixture(scope="module")
def pipx_bin(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """`pipx install <wheel>` into a scratch HOME: the folder holding its `quipu`."""
    base = tmp_path_factory.mktemp("pipx")
    env = {**_clean_env(base / "home", []), "PIPX_HOME": str(base / "pipx"), "PIPX_BIN_DIR": str(base / "bin"),
           "PIPX_MAN_DIR": str(base / "man")}
    done = subprocess.run([str(BIN / "pipx"), "install", str(wheel)], capture_output=True, text=True, env=env,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (base / "bin" / "quipu").is_file()
    return base / "bin"


@pytest.fixture(scope="module")
def uv_bin(tmp_path_factory: pytest.TempPathFactory, checkout: Path) -> Path:
    """`uv tool install <the repository>` into a scratch HOME: the folder holding its `quipu`."""
    base = tmp_path_factory.mktemp("uv")
    env = {**_clean_env(base / "home", []), "UV_TOOL_DIR": str(base / "tools"), "UV_TOOL_BIN_DIR": str(base / "bin"),
           "UV_CACHE_DIR": str(base / "cache")}
    done = subprocess.run([str(BIN / "uv"), "tool", "install", str(checkout)], capture_output=True, text=True,
                          env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return base / "bin"


def run(bin_dir: Path, env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(bin_dir / "quipu"), *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _sandbox(claude_exe: Path, home: Path, api: FakeMessagesAPI, bin_dir: Path, **extra: str) -> Sandbox:
    box = Sandbox.create(claude_exe, home, api, extra=extra)
    env = dict(box.env)
    # Only the tool install's `quipu` and the client on PATH: not the test suite's interpreter.
    env["PATH"] = os.pathsep.join([str(bin_dir), str(claude_exe.parent), "/usr/local/bin", "/usr/bin", "/bin"])
    return dataclasses.replace(box, env=env)


def _prompt_requests(api: FakeMessagesAPI) -> list[Recorded]:
    return [r for r in api.messages() if any(PROMPT in t for t in r.user_texts())]


def _recalled(request: Recorded) -> bool:
    return any("<quipu-memory" in t and "scripts/canary.sh" in t for t in request.user_texts())


def test_a_pipx_install_runs_init_add_and_the_real_hook_recalls_into_the_request(
    claude_exe: Path, pipx_bin: Path, tmp_path: Path,
) -> None:
    with FakeMessagesAPI(ScriptedModel()) as api:
        box = _sandbox(claude_exe, tmp_path / "home", api, pipx_bin)
        env = dict(box.env)
        run(pipx_bin, env, "init")
        run(pipx_bin, env, "add", MEMORY[0], "--title", MEMORY[1], "--topic", "deploy", "--entity", "shop-api")
        installed = run(pipx_bin, env, "install", "claude", "--user")
        assert str(pipx_bin.parent) in installed.stdout  # the hooks run the pipx install's own interpreter
        project = tmp_path / "project"
        project.mkdir()
        proc = box.prompt(PROMPT, cwd=project)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert any(_recalled(r) for r in _prompt_requests(api)), [r.user_texts() for r in _prompt_requests(api)]
        assert api.elsewhere() == []


def _search_then_answer(request: Recorded) -> tuple[list[dict[str, Any]], str]:
    offered = set(request.tools())
    answered = {str(b.get("tool_use_id")) for b in request.tool_results()}
    if TOOL in offered and TOOL_USE_ID not in answered:
        return [{"type": "tool_use", "id": TOOL_USE_ID, "name": TOOL, "input": {"query": "canary rollout"}}], "tool_use"
    if TOOL not in offered and WAIT in offered and WAIT_ID not in answered:
        return [{"type": "tool_use", "id": WAIT_ID, "name": WAIT, "input": {"servers": ["quipu"]}}], "tool_use"
    return [{"type": "text", "text": "Noted."}], "end_turn"


def _no_absolute_path(value: object) -> bool:
    if isinstance(value, str):
        return not value.startswith("/") and "/tmp" not in value and "/home/" not in value
    if isinstance(value, dict):
        return all(_no_absolute_path(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_absolute_path(v) for v in value)
    return True


def test_a_project_installed_on_one_machine_works_from_a_clone_with_quipu_installed_elsewhere(
    claude_exe: Path, uv_bin: Path, tmp_path: Path,
) -> None:
    # Machine one: this checkout's quipu wires the project, and the files are committed.
    origin = tmp_path / "machine-one" / "shop"
    origin.mkdir(parents=True)
    git(origin, "init", "-q")
    wired = subprocess.run([sys.executable, "-m", "quipu", "install", "claude", "--project"], cwd=origin,
                           capture_output=True, text=True, env=_clean_env(tmp_path / "machine-one", [BIN]))
    assert wired.returncode == 0, wired.stderr
    git(origin, "add", ".claude/settings.json", ".mcp.json")
    git(origin, "-c", "user.name=One", "-c", "user.email=one@example.invalid", "commit", "-qm", "wire quipu")
    committed = [json.loads((origin / name).read_text()) for name in (".claude/settings.json", ".mcp.json")]
    assert all(_no_absolute_path(data) for data in committed), committed
    assert str(REPO_ROOT) not in json.dumps(committed) and str(BIN) not in json.dumps(committed)

    # Machine two: a clone elsewhere, quipu from `uv tool install`, its own store and Claude Code.
    clone = tmp_path / "machine-two" / "work" / "shop"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    with FakeMessagesAPI(ScriptedModel(), respond=_search_then_answer) as api:
        box = _sandbox(claude_exe, tmp_path / "machine-two" / "home", api, uv_bin, MCP_TIMEOUT="60000",
                       ENABLE_TOOL_SEARCH="false", ANTHROPIC_API_KEY="test-key-for-the-loopback-fake")
        # A key instead of the trapped login: with a custom OAuth address the client starts no MCP server.
        box = dataclasses.replace(box, env={k: v for k, v in box.env.items() if k != "CLAUDE_CODE_CUSTOM_OAUTH_URL"})
        env = dict(box.env)
        run(uv_bin, env, "init")
        run(uv_bin, env, "add", MEMORY[0], "--title", MEMORY[1], "--topic", "deploy", "--entity", "shop-api")
        proc = box.run(["-p", PROMPT, "--output-format", "json", "--allowedTools", f"{TOOL},{WAIT}",
                        "--max-turns", "4"], cwd=clone)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        requests = _prompt_requests(api)
        assert any(_recalled(r) for r in requests), "the committed prompt hook recalled nothing on machine two"
        # The session hook recorded the uv install's prompt script, which the prompt hook runs with -I -S.
        recorded = (Path(env["QUIPU_HOME"]) / "prompt-hook").read_text().strip()
        assert recorded.startswith(str(uv_bin.parent)) and recorded.endswith("prompt_submit.py"), recorded
        results = [b for r in api.messages() for b in r.tool_results() if b.get("tool_use_id") == TOOL_USE_ID]
        assert results and not results[0].get("is_error"), results
        assert "shop-api canary rollout" in json.dumps(results[0])
        doctor = subprocess.run([str(uv_bin / "quipu"), "doctor"], capture_output=True, text=True, env=env, cwd=clone)
        assert "is not approved yet" in doctor.stdout  # `claude -p` did not ask; an interactive start would
        (clone / ".claude" / "settings.local.json").write_text('{"enabledMcpjsonServers": ["quipu"]}')
        doctor = subprocess.run([str(uv_bin / "quipu"), "doctor"], capture_output=True, text=True, env=env, cwd=clone)
        assert doctor.returncode == 0, doctor.stdout
        assert "UserPromptSubmit hook in" in doctor.stdout and "MCP server in" in doctor.stdout, doctor.stdout


def test_the_repository_is_a_plugin_marketplace_the_real_cli_validates_adds_and_installs_from(
    claude_exe: Path, checkout: Path, pipx_bin: Path, tmp_path: Path,
) -> None:
    with FakeMessagesAPI(ScriptedModel()) as api:
        box = _sandbox(claude_exe, tmp_path / "home", api, pipx_bin)
        project = tmp_path / "project"
        project.mkdir()
        for args in (["plugin", "validate", str(checkout)], ["plugin", "marketplace", "add", str(checkout)],
                     ["plugin", "install", "quipu@quipu"]):
            done = box.run(args, cwd=project)
            assert done.returncode == 0, (args, done.stdout + done.stderr)
        listed = box.run(["plugin", "list"], cwd=project)
        assert "quipu@quipu" in listed.stdout, listed.stdout + listed.stderr
        env = dict(box.env)
        run(pipx_bin, env, "init")
        run(pipx_bin, env, "add", MEMORY[0], "--title", MEMORY[1], "--topic", "deploy", "--entity", "shop-api")
        proc = box.prompt(PROMPT, cwd=project)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert any(_recalled(r) for r in _prompt_requests(api)), "the installed plugin's prompt hook recalled nothing"


def test_an_opted_in_api_key_runs_the_offline_pass_without_a_login_and_under_the_budget(
    claude_exe: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from quipu.model import Budget, BudgetExceeded, ClaudeModel, MeteredModel, ModelUnavailable, offline_status

    key = "sk-ant-api03-the-users-own-metered-key"
    schema = {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]}
    with FakeMessagesAPI(ScriptedModel([{"echo": "hi"}])) as api:
        box = Sandbox.create(claude_exe, tmp_path / "user", api, logged_in=False, extra={"ANTHROPIC_API_KEY": key})
        for name, value in box.env.items():
            monkeypatch.setenv(name, value)
        assert offline_status("claude")[0] is False
        with pytest.raises(ModelUnavailable, match="use_api_key = true"):  # off by default, and says how to opt in
            ClaudeModel(timeout=120).complete("say hi", schema, purpose="test")

        assert offline_status("claude", use_api_key=True)[0] is True
        metered = MeteredModel(ClaudeModel(timeout=120, use_api_key=True), Budget(max_calls=1), tmp_path / "calls.jsonl")
        assert metered.complete("say hi", schema, purpose="test") == {"echo": "hi"}
        assert any(r.headers.get("x-api-key") == key for r in api.messages())
        with pytest.raises(BudgetExceeded):
            metered.complete("say hi again", schema, purpose="test")
