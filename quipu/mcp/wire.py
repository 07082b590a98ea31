"""The wire between stdin/stdout and the server: every frame is answered, and no answer is larger
than a tool's.

The SDK's stdio transport hands the server an exception for a line it cannot parse, which the
server drops, and reads a request whose id is null (or any id that is not a string or an
integer) as a notification, which nothing answers: either way the client is left waiting. And
the server sends whatever an error says, however long. So quipu reads stdin itself (fd 0 is
pointed at the null device while it serves, as the SDK's transport does, so a child process
never reads the wire) and leaves stdout to the SDK's transport, through the filter below.

Contract:
- One message per line, parsed by the SDK's own JSON-RPC model; a blank line is skipped.
- A line that is not JSON is answered with a JSON-RPC parse error (-32700, id null). JSON that
  is not a JSON-RPC message, or a request whose id is not a string or an integer, is answered
  with an invalid-request error (-32600), with its id when it has one that can be echoed (an
  integer, or a string of at most ``MAX_ID_CHARS`` characters), else null. A request holding a
  string that is not Unicode text (a lone surrogate: JSON can escape one, UTF-8 cannot carry
  it, and the SDK's parser refuses the whole line) is answered with an invalid-params error
  (-32602) naming where the string is, never repeating it. A request whose id is a string
  longer than ``MAX_ID_CHARS`` is refused too (its answer would repeat it). A notification or
  a response that cannot be read is dropped (JSON-RPC answers neither). Nothing of a refused
  line reaches the server, and the server keeps serving.
- Every message the server sends is bounded by ``MAX_ANSWER_CHARS`` (the bound of a tool's
  answer, ``quipu.mcp.answers``): an error's message is cut to it and its data dropped when the
  two would exceed it; a tool result's text parts are cut to it in all. A string no UTF-8 can
  carry has its lone surrogates replaced (U+FFFD), so every message can be written.
"""
from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from quipu.mcp.answers import MAX_ANSWER_CHARS
from quipu.mcp.tools import not_text

MAX_ID_CHARS = 200
_SURROGATES = re.compile("[\ud800-\udfff]")
_NOT_JSON = "Parse error: a line of input is not JSON\n- send one JSON-RPC 2.0 message per line, as UTF-8 JSON"
_NOT_A_MESSAGE = "Invalid Request: {what}\n- send one JSON-RPC 2.0 request, notification or response per line"


async def serve(server: Any, options: Any) -> None:
    """``server.run`` on this process's stdin and stdout, through the filters of the contract;
    returns when stdin ends."""
    from mcp.server.stdio import stdio_server

    with _claimed_stdin() as wire_in:
        lines = anyio.wrap_file(io.TextIOWrapper(wire_in, encoding="utf-8", errors="replace"))
        async with stdio_server(stdin=cast(Any, _NoInput())) as (_unused, write):
            to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](0)
            replies = server_writes.clone()  # refusals go out the way the server's answers do
            async with anyio.create_task_group() as tg:
                tg.start_soon(_inbound, lines, to_server, replies)
                tg.start_soon(_outbound, from_server, write)
                await server.run(server_reads, server_writes, options)


class _NoInput:
    """What the SDK's transport reads in quipu's place: nothing (``_inbound`` reads the wire)."""

    def __aiter__(self) -> _NoInput:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """The wire's input, read through a private copy of fd 0 while fd 0 itself points at the null
    device (restored on the way out); stdin as it is when fd 0 cannot be copied. The copy is
    never closed: a worker thread may still be blocked reading it."""
    try:
        wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        yield sys.stdin.buffer
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)


async def _inbound(lines: Any, to_server: MemoryObjectSendStream[SessionMessage | Exception],
                   replies: MemoryObjectSendStream[SessionMessage]) -> None:
    async with to_server, replies:
        async for line in lines:
            if not line.strip():
                continue
            try:
                message: types.JSONRPCMessage | None = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError:  # pydantic's ValidationError: not JSON, or not a message
                message = None
            refusal = refuse(line, message)
            if refusal is not None:
                await replies.send(SessionMessage(refusal))
            elif message is not None:
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await to_server.send(SessionMessage(message))


async def _outbound(from_server: MemoryObjectReceiveStream[SessionMessage], write: Any) -> None:
    async with write:
        async for item in from_server:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):  # the client went away
                await write.send(SessionMessage(bounded(item.message), item.metadata))


def _error(request_id: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _echoable_id(frame: Any) -> int | str | None:
    rid = frame.get("id") if isinstance(frame, dict) else None
    if isinstance(rid, int) and not isinstance(rid, bool) and abs(rid) < 2**63:
        return rid
    if isinstance(rid, str) and len(rid) <= MAX_ID_CHARS and not _SURROGATES.search(rid):
        return rid
    return None


def refuse(line: str, message: types.JSONRPCMessage | None) -> types.JSONRPCError | None:
    """The answer to a line the server must not see (see the module contract), or None: the
    line goes on to the server as ``message``, or is dropped (an unreadable notification or
    response). ``message``: the line as the SDK's model reads it, None when it cannot."""
    if isinstance(message, types.JSONRPCRequest) and isinstance(message.id, str) and len(message.id) > MAX_ID_CHARS:
        return _error(None, types.INVALID_REQUEST, _NOT_A_MESSAGE.format(
            what=f"a request id may be at most {MAX_ID_CHARS} characters long"))
    if message is not None and not (isinstance(message, types.JSONRPCNotification) and '"id"' in line):
        return None
    try:  # Python's parser takes what the SDK's refuses (lone surrogates, NaN)
        frame = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, types.PARSE_ERROR, _NOT_JSON)
    if not isinstance(frame, dict):
        what = "a batch (an array); MCP takes one message per line" if isinstance(frame, list) else "not a JSON object"
        return _error(None, types.INVALID_REQUEST, _NOT_A_MESSAGE.format(what=what))
    if "id" not in frame and "method" in frame:
        return None  # a notification: nothing answers it
    if "method" not in frame and ("result" in frame or "error" in frame):
        return None  # a response: nothing answers it either
    if message is not None or not isinstance(frame.get("id"), (int, str)) or isinstance(frame["id"], bool):
        return _error(None, types.INVALID_REQUEST, _NOT_A_MESSAGE.format(
            what="a request id must be a string or an integer"))
    problem = not_text(frame, "")
    if problem is not None and problem.startswith("params"):
        return _error(_echoable_id(frame), types.INVALID_PARAMS, f"Invalid params: {problem}")
    what = problem or "not a JSON-RPC 2.0 message (it needs \"jsonrpc\": \"2.0\", an id and a method)"
    return _error(_echoable_id(frame), types.INVALID_REQUEST, _NOT_A_MESSAGE.format(what=what))


def _cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, saying how much was cut when there is room to."""
    if len(text) <= limit:
        return text
    kept = max(0, limit - 40)
    out = f"{text[:kept].rstrip()}\n[... {len(text) - kept:,} characters cut]"
    return out if len(out) <= limit else text[:limit]


def bounded(message: types.JSONRPCMessage) -> types.JSONRPCMessage:
    """``message`` within the bound of the module contract, and writable as UTF-8."""
    if isinstance(message, types.JSONRPCError):
        error = message.error
        text = _cut(error.message, MAX_ANSWER_CHARS)
        data = error.data
        if data is not None and len(text) + len(json.dumps(data, default=str)) > MAX_ANSWER_CHARS:
            data = None
        if text != error.message or data is not error.data:
            message = types.JSONRPCError(jsonrpc="2.0", id=message.id,
                                         error=types.ErrorData(code=error.code, message=text, data=data))
    elif isinstance(message, types.JSONRPCResponse) and isinstance(message.result.get("content"), list):
        room, content = MAX_ANSWER_CHARS, []
        for part in message.result["content"]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                part = {**part, "text": _cut(part["text"], room)}
                room = max(0, room - len(part["text"]))
            content.append(part)
        if content != message.result["content"]:
            message = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result={**message.result, "content": content})
    try:
        message.model_dump_json(by_alias=True, exclude_unset=True)
    except ValueError:  # pydantic cannot write a lone surrogate
        message = type(message).model_validate(_text_only(message.model_dump(by_alias=True, exclude_unset=True)))
    return message


def _text_only(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_text_only(k): _text_only(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_text_only(v) for v in value]
    return value
