"""The real Claude Code (from the npm registry) calls quipu's MCP server; only the model is scripted.

A loopback fake of the Messages API answers the first request that offers quipu's
``search_memory`` tool with a ``tool_use`` of it; Claude Code runs the server registered by
``quipu.mcp_config`` in ``~/.claude.json`` and sends the tool result in its next request.
"""
from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quipu import mcp_config
from quipu.recall import FENCE_CLOSE, FENCE_OPEN
from testing.fixtures import REPO_ROOT, example_store

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.332"
TOOL = "mcp__quipu__search_memory"
TOOL_USE_ID = "toolu_01QuipuSearchMemory"
WAIT = "WaitForMcpServers"
WAIT_ID = "toolu_01WaitForQuipu"


def claude_binary() -> str:
    """Claude Code installed from npm once per virtual environment ($QUIPU_TEST_CLAUDE overrides)."""
    if os.environ.get("QUIPU_TEST_CLAUDE"):
        return os.environ["QUIPU_TEST_CLAUDE"]
    folder = REPO_ROOT / ".venv" / ("claude-code-" + CLAUDE_CODE.rsplit("@", 1)[1])
    binary = folder / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed")
        folder.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), CLAUDE_CODE],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            pytest.skip(f"could not install Claude Code from npm: {proc.stderr[-500:]}")
    return str(binary)


def _events(blocks: list[dict[str, Any]], stop: str) -> bytes:
    """One streamed Messages API answer."""
    out = [("message_start", {"type": "message_start", "message": {
        "id": "msg_quipu", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 20, "output_tokens": 1}}})]
    for n, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        out += [("content_block_start", {"type": "content_block_start", "index": n, "content_block": start}),
                ("content_block_delta", {"type": "content_block_delta", "index": n, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": n})]
    out += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 12}}),
            ("message_stop", {"type": "message_stop"})]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in out).encode()


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body.get("messages", []) if isinstance(m.get("content"), list)
            for b in m["content"] if b.get("type") == "tool_result"]


class FakeModel(http.server.BaseHTTPRequestHandler):
    requests: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
            self._json({"input_tokens": 10} if "count_tokens" in self.path else {})
            return
        self.requests.append(body)
        offered = {t.get("name") for t in body.get("tools", [])}
        answered = {b.get("tool_use_id") for b in _tool_results(body)}
        if TOOL in offered and TOOL_USE_ID not in answered:
            blocks = [{"type": "tool_use", "id": TOOL_USE_ID, "name": TOOL, "input": {"query": "retry policy billing"}}]
            stop = "tool_use"
        elif TOOL not in offered and WAIT in offered and WAIT_ID not in answered:
            # The server is still starting: wait for it, as the tool's own description asks.
            blocks, stop = [{"type": "tool_use", "id": WAIT_ID, "name": WAIT, "input": {"servers": ["quipu"]}}], "tool_use"
        else:
            blocks, stop = [{"type": "text", "text": "The billing client retries with backoff."}], "end_turn"
        if body.get("stream"):
            data = _events(blocks, stop)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self._json({"id": "msg_quipu", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": blocks, "stop_reason": stop, "stop_sequence": None,
                        "usage": {"input_tokens": 20, "output_tokens": 12}})

    def do_GET(self) -> None:  # noqa: N802
        self._json({})

    def do_HEAD(self) -> None:  # noqa: N802
        self._json({})

    def _json(self, value: object) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


@pytest.fixture
def fake_model() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    FakeModel.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", FakeModel.requests
    finally:
        server.shutdown()
        server.server_close()


def _text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


@pytest.mark.slow
def test_claude_code_sends_quipus_search_memory_result_back_to_the_model(
    quipu_env: Path, tmp_path: Path, fake_model: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    claude = claude_binary()
    url, requests = fake_model
    store = example_store(tmp_path / "store")
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(quipu_env / ".claude"))
    mcp_config.install("user")  # what `quipu install claude --user` registers
    env = {
        "PATH": os.environ["PATH"], "HOME": str(quipu_env), "CLAUDE_CONFIG_DIR": str(quipu_env / ".claude"),
        "QUIPU_HOME": os.environ["QUIPU_HOME"], "QUIPU_STORE": str(store.root),
        "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "test-key-for-the-loopback-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "MCP_TIMEOUT": "60000", "ENABLE_TOOL_SEARCH": "false",
    }

    proc = subprocess.run(
        [claude, "-p", "What did we decide about retries when the billing API throttles us?",
         "--output-format", "json", "--allowedTools", f"{TOOL},{WAIT}", "--max-turns", "4"],
        cwd=project, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )

    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    offering = [r for r in requests if TOOL in {t.get("name") for t in r.get("tools", [])}]
    assert offering, f"no request offered {TOOL}: {[sorted(t.get('name') for t in r.get('tools', [])) for r in requests]}"
    tool = next(t for t in offering[0]["tools"] if t["name"] == TOOL)
    assert tool["input_schema"]["required"] == ["query"]
    answered = [b for r in requests for b in _tool_results(r) if b.get("tool_use_id") == TOOL_USE_ID]
    assert answered, "the next request carried no result for quipu's tool_use"
    text = _text(answered[0])
    assert not answered[0].get("is_error"), text
    assert text.startswith(FENCE_OPEN) and text.rstrip().endswith(FENCE_CLOSE)
    assert "[1] Billing API rate limits" in text and "(id billing-api-limits, reference, " in text
    assert json.loads(proc.stdout)["result"] == "The billing client retries with backoff."
