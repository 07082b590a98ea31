"""A loopback fake of the Anthropic Messages API, for running the real Claude Code client offline.

It answers ``POST /v1/messages`` (streamed as server-sent events, or as one JSON message),
``POST /v1/messages/count_tokens`` and any other request the client makes at start (with an empty
JSON object), and records every request. What the "model" says comes from a ``quipu.model.Model``
(normally a ``ScriptedModel``): when the client offers the ``StructuredOutput`` tool (``claude -p
--json-schema``), the model is asked ``complete(prompt, schema, purpose="StructuredOutput")`` with the
user turns' text and the tool's input schema, and the answer goes back as a ``tool_use`` of that tool;
every other request gets the plain text of ``reply(request)``. A test that scripts a tool-using turn
(the model calling an MCP tool) passes ``respond``: whatever content blocks and stop reason it returns
for a request are sent instead (``None``: the usual answer).

It listens on a loopback address only (``127.0.0.1`` by default, a free port) and refuses any other.
"""
from __future__ import annotations

import ipaddress
import itertools
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from quipu.model import Model, ModelError

STRUCTURED_TOOL = "StructuredOutput"


class NotLoopback(ValueError):
    """The fake API was asked to listen on an address that is not loopback."""


@dataclass(frozen=True)
class Recorded:
    """One request the client made."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the decoded JSON body, or None

    @property
    def fields(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def is_message(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == "/v1/messages"

    def text(self) -> str:
        """Everything the client sent the model in this request, as one string (system, messages, tools)."""
        return json.dumps(self.body, ensure_ascii=False) if self.body is not None else ""

    def tools(self) -> list[str]:
        return [t.get("name", "") for t in self.fields.get("tools", []) or [] if isinstance(t, dict)]

    def tool(self, name: str) -> dict[str, Any] | None:
        for tool in self.fields.get("tools", []) or []:
            if isinstance(tool, dict) and tool.get("name") == name:
                return tool
        return None

    def user_texts(self) -> list[str]:
        """The text blocks of every turn that is not the model's, in order (hook context arrives as such
        blocks, in a user turn or, in newer clients, in a ``system`` turn of the messages)."""
        out: list[str] = []
        for message in self.fields.get("messages", []) or []:
            if not isinstance(message, dict) or message.get("role") == "assistant":
                continue
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return out

    def tool_results(self) -> list[dict[str, Any]]:
        """The ``tool_result`` blocks the client sent back (the answers of tools the model called)."""
        return [block for message in self.fields.get("messages", []) or [] if isinstance(message, dict)
                and isinstance(message.get("content"), list)
                for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]

    def answered_tool(self) -> bool:
        """The last user turn carries a tool result (the client reports back on a tool call)."""
        messages = [m for m in self.fields.get("messages", []) or [] if isinstance(m, dict)]
        if not messages or not isinstance(messages[-1].get("content"), list):
            return False
        return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in messages[-1]["content"])


def _default_reply(request: Recorded) -> str:
    return "Noted."


@dataclass
class FakeMessagesAPI:
    """Start with ``with FakeMessagesAPI(model) as api:``; ``api.base_url`` is what the client needs."""

    model: Model
    reply: Callable[[Recorded], str] = _default_reply
    respond: Callable[[Recorded], tuple[list[dict[str, Any]], str] | None] | None = None
    host: str = "127.0.0.1"
    requests: list[Recorded] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:
            loopback = ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise NotLoopback(f"the fake Messages API listens on loopback only, not {self.host!r}")
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> FakeMessagesAPI:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        handler = _handler_for(self)
        server_class = _IPv6Server if ":" in self.host else ThreadingHTTPServer
        self._server = server_class((self.host, 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-messages-api", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the fake Messages API is not running"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    # --- what was asked ----------------------------------------------------------------------

    def messages(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.is_message]

    def structured_calls(self) -> list[Recorded]:
        """The message requests that offered the StructuredOutput tool and were answered through it."""
        return [r for r in self.messages() if r.tool(STRUCTURED_TOOL) is not None and not r.answered_tool()]

    def elsewhere(self) -> list[Recorded]:
        """Requests meant for another host (a proxy tunnel or an absolute URL): none should ever come."""
        with self._lock:
            return [r for r in self.requests if r.method == "CONNECT" or not r.path.startswith("/")]

    def all_text(self) -> str:
        return "\n".join(r.text() for r in self.messages())

    # --- answering ---------------------------------------------------------------------------

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def forget(self) -> None:
        """Drop what was recorded so far."""
        with self._lock:
            self.requests.clear()

    def answer(self, request: Recorded) -> tuple[list[dict[str, Any]], str]:
        """The content blocks and stop reason for one message request."""
        scripted = self.respond(request) if self.respond is not None else None
        if scripted is not None:
            return scripted
        tool = request.tool(STRUCTURED_TOOL)
        if tool is not None and not request.answered_tool():
            try:
                value = self.model.complete("\n".join(request.user_texts()), dict(tool.get("input_schema") or {}),
                                            purpose=STRUCTURED_TOOL)
            except ModelError as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return [{"type": "text", "text": f"cannot answer: {exc}"}], "end_turn"
            block = {"type": "tool_use", "id": self.new_id("toolu_fake"), "name": STRUCTURED_TOOL,
                     "input": value}
            return [block], "tool_use"
        return [{"type": "text", "text": self.reply(request)}], "end_turn"


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _stream(message: dict[str, Any]) -> Iterator[bytes]:
    head = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}}
    yield _sse("message_start", {"type": "message_start", "message": head})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}})
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {key: value for key, value in block.items() if key != "input"}
            yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {**start, "input": {}}})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                 "usage": {"output_tokens": message["usage"]["output_tokens"]}})
    yield _sse("message_stop", {"type": "message_stop"})


class RecordingHandler(BaseHTTPRequestHandler):
    """What both loopback fakes (this one and ``fake_responses_api``) do with any request: read and
    record it (``_read``, given by each), answer JSON, and refuse a tunnel through the proxy variables."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def _parts(self) -> tuple[str, str, dict[str, str], Any]:
        """The request's method, path, headers (lower-cased names) and JSON body (None if it has none)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if raw and self.headers.get("Content-Encoding", "").lower() == "zstd":
            raw = b""  # compressed bodies are not decoded; the tests turn compression off
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body

    def _read(self) -> Any:
        raise NotImplementedError

    def _json(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_CONNECT(self) -> None:  # noqa: N802 - a tunnel through the proxy variables: refused
        self._read()
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.close_connection = True


def _handler_for(api: FakeMessagesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(RecordingHandler):
        def _read(self) -> Recorded:
            request = Recorded(*self._parts())
            api.record(request)
            return request

        def do_GET(self) -> None:  # noqa: N802 - the base class's naming
            self._read()
            self._json(200, {})

        def do_HEAD(self) -> None:  # noqa: N802
            self._read()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802
            request = self._read()
            path = self.path.split("?")[0]
            if not self.path.startswith("/"):  # an absolute URL: a request for elsewhere through the proxy
                self._json(403, {"error": "the fake Messages API forwards nothing"})
                return
            body = request.fields
            if path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": max(1, len(request.text()) // 4)})
                return
            if path != "/v1/messages":
                self._json(200, {})
                return
            content, stop = api.answer(request)
            message = {
                "id": api.new_id("msg_fake"), "type": "message", "role": "assistant",
                "model": str(body.get("model") or "fake"), "content": content, "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": max(1, len(request.text()) // 4),
                          "output_tokens": max(1, len(json.dumps(content)) // 4)},
            }
            if not body.get("stream"):
                self._json(200, message)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in _stream(message):
                self.wfile.write(chunk)
            self.wfile.flush()
            self.close_connection = True

    return Handler
