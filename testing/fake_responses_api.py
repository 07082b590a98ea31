"""A loopback fake of the OpenAI Responses API, for running the real Codex CLI offline.

It answers ``POST .../responses`` as a stream of server-sent events (``response.created``, one
``response.output_item.added`` / ``response.output_text.delta`` / ``response.output_item.done`` per
output item, ``response.completed``), and any other request the client makes with an empty JSON
list or object, and records every request. What the "model" says comes from ``reply(request)``
(plain text); a test that scripts a tool call (the model calling an MCP tool) passes ``respond``:
the output items it returns for a request are sent instead (``None``: the usual answer).

It listens on a loopback address only (``127.0.0.1`` by default, a free port) and refuses any other.
"""
from __future__ import annotations

import ipaddress
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from testing.fake_messages_api import NotLoopback, RecordingHandler


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
    def is_response(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0].endswith("/responses")

    def text(self) -> str:
        return json.dumps(self.body, ensure_ascii=False) if self.body is not None else ""

    def tools(self) -> list[str]:
        """The names of the tools offered (a namespace's tools as ``<namespace>__<tool>``: ``mcp__quipu__remember``)."""
        names: list[str] = []
        for tool in self.fields.get("tools", []) or []:
            if not isinstance(tool, dict):
                continue
            if isinstance(tool.get("name"), str):
                names.append(tool["name"])
            for inner in tool.get("tools", []) or []:  # a namespace of tools
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    names.append(f"{tool.get('name', '')}__{inner['name']}")
        return names

    def user_texts(self) -> list[str]:
        """The text of every input item that is not the model's (hook context arrives as such items)."""
        out: list[str] = []
        for item in self.fields.get("input", []) or []:
            if not isinstance(item, dict) or item.get("role") == "assistant":
                continue
            content = item.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [c.get("text", "") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
        return out

    def tool_outputs(self) -> list[dict[str, Any]]:
        """The ``function_call_output`` items the client sent back (answers of tools the model called)."""
        return [item for item in self.fields.get("input", []) or []
                if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output")]


def _default_reply(request: Recorded) -> str:
    return "Noted."


@dataclass
class FakeResponsesAPI:
    """Start with ``with FakeResponsesAPI() as api:``; ``api.base_url`` is the provider's ``base_url``."""

    reply: Callable[[Recorded], str] = _default_reply
    respond: Callable[[Recorded], list[dict[str, Any]] | None] | None = None
    host: str = "127.0.0.1"
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:
            loopback = ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise NotLoopback(f"the fake Responses API listens on loopback only, not {self.host!r}")
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> FakeResponsesAPI:
        self._server = ThreadingHTTPServer((self.host, 0), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-responses-api", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake Responses API is not running"
        return f"http://{self.host}:{int(self._server.server_address[1])}/v1"

    def responses(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.is_response]

    def elsewhere(self) -> list[Recorded]:
        """Requests meant for another host (a proxy tunnel or an absolute URL): none should ever come."""
        with self._lock:
            return [r for r in self.requests if r.method == "CONNECT" or not r.path.startswith("/")]

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def forget(self) -> None:
        with self._lock:
            self.requests.clear()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):06d}"

    def answer(self, request: Recorded) -> list[dict[str, Any]]:
        scripted = self.respond(request) if self.respond is not None else None
        if scripted is not None:
            return scripted
        return [message(self.reply(request))]


def message(text: str) -> dict[str, Any]:
    """An assistant message output item."""
    return {"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A tool call output item (``name`` as offered in the request's tools)."""
    return {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id,
            "status": "completed"}


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _stream(api: FakeResponsesAPI, request: Recorded, items: list[dict[str, Any]]) -> Iterator[bytes]:
    rid = api.new_id("resp")
    head = {"id": rid, "object": "response", "status": "in_progress", "model": request.fields.get("model", "fake"),
            "output": []}
    yield _sse({"type": "response.created", "response": head})
    done = []
    for index, item in enumerate(items):
        item = {"id": api.new_id("item"), **item}
        yield _sse({"type": "response.output_item.added", "output_index": index,
                    "item": {**item, "content": []} if item["type"] == "message" else item})
        if item["type"] == "message":
            for part in item["content"]:
                yield _sse({"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                            "content_index": 0, "delta": part["text"]})
        yield _sse({"type": "response.output_item.done", "output_index": index, "item": item})
        done.append(item)
    size = max(1, len(request.text()) // 4)
    usage = {"input_tokens": size, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 8,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": size + 8}
    yield _sse({"type": "response.completed",
                "response": {**head, "status": "completed", "output": done, "usage": usage}})


def _handler_for(api: FakeResponsesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(RecordingHandler):
        def _read(self) -> Recorded:
            request = Recorded(*self._parts())
            api.record(request)
            return request

        def do_GET(self) -> None:  # noqa: N802 - the base class's naming
            self._read()
            self._json(200, {"data": [], "models": []} if self.path.split("?")[0].endswith("/models") else {})

        def do_POST(self) -> None:  # noqa: N802
            request = self._read()
            if not self.path.startswith("/"):
                self._json(403, {"error": "the fake Responses API forwards nothing"})
                return
            if not request.is_response:
                self._json(200, {})
                return
            items = api.answer(request)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in _stream(api, request, items):
                self.wfile.write(chunk)
            self.wfile.flush()
            self.close_connection = True

    return Handler
