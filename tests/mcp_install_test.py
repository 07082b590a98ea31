"""`quipu install claude` registers the MCP server where Claude Code reads it; uninstall restores the files."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from quipu.claude import mcp_config
from testing.fixtures import REPO_ROOT, example_store, git, quipu, real_python

CLAUDE_JSON: dict[str, Any] = {
    "numStartups": 41,
    "theme": "dark",
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": ["--read-only"]}},
    "projects": {"/src/other": {"allowedTools": [], "mcpServers": {}}},
}


@pytest.fixture(autouse=True)
def no_claude_config_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    return root


def write(path: Path, data: dict[str, Any], indent: int = 4) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n", encoding="utf-8")
    return path.read_bytes()


def install(*args: str, cwd: Path) -> dict[str, Any]:
    proc = quipu("install", "claude", *args, "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def uninstall(*args: str, cwd: Path) -> dict[str, Any]:
    proc = quipu("uninstall", "claude", *args, "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_user_scope_goes_to_claude_json_idempotently_and_uninstall_restores_every_byte(quipu_env: Path, project: Path) -> None:
    path = quipu_env / ".claude.json"
    original = write(path, CLAUDE_JSON)
    settings = quipu_env / ".claude" / "settings.json"

    first = install("--user", cwd=project)
    data = json.loads(path.read_text())
    installed = path.read_bytes()
    second = install("--user", cwd=project)
    assert path.read_bytes() == installed
    removed = uninstall("--user", cwd=project)

    assert first["mcp"]["changed"] and first["mcp"]["path"] == str(path)
    server = data["mcpServers"]["quipu"]
    assert server == {"type": "stdio", "command": real_python(),
                      "args": ["-I", str(REPO_ROOT / "hooks" / "quipu_mcp.py")], "env": {}}
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {k: v for k, v in CLAUDE_JSON.items() if k != "mcpServers"}
    assert data["mcpServers"]["github"] == CLAUDE_JSON["mcpServers"]["github"]
    assert not second["mcp"]["changed"]
    assert removed["mcp"]["changed"] and removed["mcp"]["removed"][0]["event"] == "mcpServers.quipu"
    assert path.read_bytes() == original
    assert json.loads(settings.read_text()) == {}  # the hooks came out of settings.json too


def test_project_scope_writes_mcp_json_and_uninstall_leaves_no_file_behind(project: Path) -> None:
    (project / "src").mkdir()

    install("--project", cwd=project / "src")
    data = json.loads((project / ".mcp.json").read_text())
    uninstall("--project", cwd=project / "src")

    assert list(data["mcpServers"]) == ["quipu"] and mcp_config.is_ours(data["mcpServers"]["quipu"])
    assert not (project / ".mcp.json").exists()


def test_project_scope_keeps_the_projects_own_servers_and_restores_its_bytes(project: Path) -> None:
    path = project / ".mcp.json"
    original = write(path, {"mcpServers": {"db": {"command": "db-mcp", "env": {"DB": "${HOME}/db"}}}}, indent=2)

    install("--project", cwd=project)
    data = json.loads(path.read_text())
    uninstall("--project", cwd=project)

    assert set(data["mcpServers"]) == {"db", "quipu"}
    assert path.read_bytes() == original


def test_local_scope_goes_under_the_project_in_claude_json(quipu_env: Path, project: Path) -> None:
    path = quipu_env / ".claude.json"
    original = write(path, CLAUDE_JSON, indent=2)

    install("--local", cwd=project)
    data = json.loads(path.read_text())
    uninstall("--local", cwd=project)

    assert "quipu" not in data["mcpServers"]
    assert mcp_config.is_ours(data["projects"][str(project)]["mcpServers"]["quipu"])
    assert data["projects"]["/src/other"] == CLAUDE_JSON["projects"]["/src/other"]
    assert path.read_bytes() == original


def test_a_foreign_server_named_quipu_is_never_overwritten(quipu_env: Path, project: Path) -> None:
    path = quipu_env / ".claude.json"
    original = write(path, {"mcpServers": {"quipu": {"command": "someone-elses-quipu"}}})

    proc = quipu("install", "claude", "--user", cwd=project)

    assert proc.returncode == 1 and "not quipu's" in proc.stderr and "rename or remove it" in proc.stderr
    assert path.read_bytes() == original
    assert not (quipu_env / ".claude" / "settings.json").exists()  # refused before anything was written
    assert quipu("uninstall", "claude", "--user", cwd=project).returncode == 0
    assert path.read_bytes() == original


def test_no_mcp_installs_only_the_hooks(quipu_env: Path, project: Path) -> None:
    result = install("--user", "--no-mcp", cwd=project)

    assert result["mcp"] is None and result["changed"]
    assert not (quipu_env / ".claude.json").exists()


def test_the_registered_command_starts_a_working_server(quipu_env: Path, project: Path, tmp_path: Path) -> None:
    store = example_store(tmp_path / "store")
    install("--user", cwd=project)
    entry = json.loads((quipu_env / ".claude.json").read_text())["mcpServers"]["quipu"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(project),
                                   env={**os.environ, **entry["env"], "QUIPU_STORE": str(store.root)})

    async def conversation() -> tuple[list[str], str]:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            found = await client.call_tool("search_memory", {"query": "force-push to main"})
            return names, found.content[0].text

    names, found = asyncio.run(conversation())

    assert "search_memory" in names and "(id force-push-rule, rule, " in found


def test_the_plugin_ships_its_mcp_json_with_the_plugin_root() -> None:
    data = json.loads((REPO_ROOT / ".mcp.json").read_text(encoding="utf-8"))

    assert data == {"mcpServers": {"quipu": {"type": "stdio", "command": "python3",
                                             "args": ["${CLAUDE_PLUGIN_ROOT}/hooks/quipu_mcp.py"]}}}
    assert (REPO_ROOT / "hooks" / mcp_config.LAUNCHER).is_file()
    assert mcp_config.is_ours(data["mcpServers"]["quipu"])


def test_a_launcher_whose_interpreter_lacks_the_git_library_says_so_instead_of_starting(tmp_path: Path) -> None:
    """The tools load pygit2 at their first write; the launcher asks first, so a server never
    starts only to fail the first `remember`."""
    launcher = REPO_ROOT / "hooks" / mcp_config.LAUNCHER
    no_git = ("import runpy, sys; sys.modules['pygit2'] = None; "  # `import pygit2` raises ImportError
              f"sys.argv = [{str(launcher)!r}]; runpy.run_path(sys.argv[0], run_name='__main__')")
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run([real_python(), "-I", "-c", no_git], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env={**os.environ, "PATH": str(empty)}, timeout=60)

    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "cannot import quipu" in done.stderr and "pygit2" in done.stderr
    assert "pipx install ./quipu" in done.stderr
