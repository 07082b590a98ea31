"""The real Claude Code (from the npm registry) calls quipu's MCP server; only the model is scripted.

The loopback fake of the Messages API (testing/fake_messages_api.py) answers the first request
that offers quipu's ``search_memory`` tool with a ``tool_use`` of it; Claude Code runs the server
registered by ``quipu.claude.mcp_config`` in its ``.claude.json`` and sends the tool result in its next
request.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quipu.claude import mcp_config
from quipu.model import ScriptedModel
from quipu.prompt.inject import FENCE_CLOSE, FENCE_OPEN
from testing import claude_code
from testing.fake_messages_api import FakeMessagesAPI, Recorded
from testing.fixtures import example_store

TOOL = "mcp__quipu__search_memory"
TOOL_USE_ID = "toolu_01QuipuSearchMemory"
WAIT = "WaitForMcpServers"
WAIT_ID = "toolu_01WaitForQuipu"
ANSWER = "The billing client retries with backoff."


def _answered(request: Recorded) -> set[str]:
    return {str(b.get("tool_use_id")) for b in request.tool_results()}


def search_then_answer(request: Recorded) -> tuple[list[dict[str, Any]], str]:
    """The scripted model: call quipu's search_memory once (waiting for the server first if the
    client says it is still starting), then answer in text."""
    offered, answered = set(request.tools()), _answered(request)
    if TOOL in offered and TOOL_USE_ID not in answered:
        return [{"type": "tool_use", "id": TOOL_USE_ID, "name": TOOL, "input": {"query": "retry policy billing"}}], "tool_use"
    if TOOL not in offered and WAIT in offered and WAIT_ID not in answered:
        return [{"type": "tool_use", "id": WAIT_ID, "name": WAIT, "input": {"servers": ["quipu"]}}], "tool_use"
    return [{"type": "text", "text": ANSWER}], "end_turn"


@pytest.fixture(scope="module")
def claude_exe() -> Path:
    try:
        return claude_code.install()
    except claude_code.NpmMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI(ScriptedModel(), respond=search_then_answer) as server:
        yield server
    assert server.elsewhere() == []


def _text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


@pytest.mark.slow
def test_claude_code_sends_quipus_search_memory_result_back_to_the_model(
    claude_exe: Path, api: FakeMessagesAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = example_store(tmp_path / "store")
    project = tmp_path / "project"
    project.mkdir()
    sandbox = claude_code.Sandbox.create(claude_exe, tmp_path / "home", api, logged_in=False, extra={
        "QUIPU_STORE": str(store.root), "MCP_TIMEOUT": "60000", "ENABLE_TOOL_SEARCH": "false",
        "ANTHROPIC_API_KEY": "test-key-for-the-loopback-fake"})
    # With a custom OAuth address set the client offers no MCP server of the user's at all, so
    # this session authenticates with a key (the fake accepts any) instead of the trapped login.
    sandbox = dataclasses.replace(
        sandbox, env={k: v for k, v in sandbox.env.items() if k != "CLAUDE_CODE_CUSTOM_OAUTH_URL"})
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(sandbox.config_dir))
    mcp_config.install("user")  # what `quipu install claude --user` registers

    proc = sandbox.run(["-p", "What did we decide about retries when the billing API throttles us?",
                        "--output-format", "json", "--allowedTools", f"{TOOL},{WAIT}", "--max-turns", "4"],
                       cwd=project)

    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    requests = api.messages()
    offering = [r for r in requests if TOOL in r.tools()]
    assert offering, f"no request offered {TOOL}: {[sorted(r.tools()) for r in requests]}"
    tool = offering[0].tool(TOOL)
    assert tool is not None and tool["input_schema"]["required"] == ["query"]
    answered = [b for r in requests for b in r.tool_results() if b.get("tool_use_id") == TOOL_USE_ID]
    assert answered, "the next request carried no result for quipu's tool_use"
    text = _text(answered[0])
    assert not answered[0].get("is_error"), text
    assert text.startswith(FENCE_OPEN) and text.rstrip().endswith(FENCE_CLOSE)
    assert "[1] Billing API rate limits" in text and "(id billing-api-limits, reference, " in text
    assert json.loads(proc.stdout)["result"] == ANSWER
