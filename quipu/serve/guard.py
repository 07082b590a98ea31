"""The viewer's gate: every request is checked here before any page sees it.

Contract:
- ``loopback(host)`` accepts only a loopback address (127.0.0.0/8, ::1, or ``localhost``) and raises
  ``FatalError`` for anything else: the viewer never listens beyond this machine.
- ``Guard`` wraps the app (plain ASGI). A request passes only when:
  - its ``Host`` is the address the server listens on, with its port (or ``localhost:PORT``), so a
    DNS-rebound name never reaches a page;
  - its ``Origin``, when sent, is ``http://`` and such a host, and ``Sec-Fetch-Site``, when sent, is
    not ``cross-site`` or ``same-site``;
  - it carries the run's token: the ``quipu_token_PORT`` cookie, or a ``token`` query parameter,
    which is answered with the cookie and a redirect to the same page without it.
  Anything else is answered 403 (421 for a wrong host) with a short text, and nothing runs.
- A state change is a POST whose form carries the CSRF token (checked by the app, ``same_secret``).
- Every answer carries a strict Content-Security-Policy (``default-src 'self'``, no inline script
  or style, no frames, forms only to the viewer), ``nosniff``, a referrer only to itself, no caching.
"""
from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from quipu.errors import FatalError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" would make a browser send its own forms as "Origin: null"
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


CHECKED = ("host", "origin", "sec-fetch-site", "cookie")


def loopback(host: str) -> str:
    """``host`` as an address to bind, when it is a loopback one (raises ``FatalError`` otherwise)."""
    name = host.strip().strip("[]")
    if name.lower() == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise FatalError(f"quipu serve listens on this machine only, not on {host!r}\n"
                         "- leave out --host (127.0.0.1), or give another loopback address such as ::1")
    return str(address)


def host_names(address: str, port: int) -> set[str]:
    """The ``Host`` values a request to the server at ``address``:``port`` may carry."""
    shown = f"[{address}]" if ":" in address else address
    names = {f"{shown}:{port}"}
    if address in ("127.0.0.1", "::1"):
        names.add(f"localhost:{port}")
    return names


def cookie_name(port: int) -> str:
    return f"quipu_token_{port}"


def same_secret(sent: object, expected: str) -> bool:
    return isinstance(sent, str) and hmac.compare_digest(sent.encode(), expected.encode())


class Guard:
    def __init__(self, app: ASGIApp, *, token: str, address: str, port: int) -> None:
        self.app = app
        self.token = token
        self.hosts = host_names(address, port)
        self.cookie = cookie_name(port)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        headers: dict[str, str] = {}
        for key, value in scope.get("headers", []):
            name = key.decode("latin-1").lower()
            if name in CHECKED and name in headers:  # a repeated Host or Origin is refused outright
                return 400, "a header the viewer checks was sent twice"
            headers[name] = value.decode("latin-1")
        if headers.get("host", "").lower() not in self.hosts:
            return 421, "this viewer answers only to the address quipu serve printed"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in self.hosts}:
            return 403, "a request from another site was refused"
        if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            return 403, "a request from another site was refused"
        return None

    def _token(self, scope: Scope) -> tuple[bool, bool]:
        """(a valid token came with it, it came in the query)."""
        for key, value in scope.get("headers", []):
            if key.lower() == b"cookie":
                jar: SimpleCookie = SimpleCookie()
                try:
                    jar.load(value.decode("latin-1"))
                except Exception:  # noqa: BLE001 - an unreadable cookie header is no token
                    continue
                sent = jar.get(self.cookie)
                if sent is not None and same_secret(sent.value, self.token):
                    return True, False
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        return same_secret(query.get("token"), self.token), True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # the viewer has no WebSocket
            await send({"type": "websocket.close", "code": 1008})
            return
        refusal = self._refusal(scope)
        valid, in_query = self._token(scope)
        if refusal is None and not valid:
            refusal = 403, "open the address quipu serve printed (it carries this run's key)"
        if refusal is not None:
            await _drain(receive)
            await _answer(send, refusal[0], refusal[1].encode() + b"\n", [(b"content-type", b"text/plain")])
            return
        if in_query:
            rest = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1")) if k != "token"]
            path = scope.get("raw_path") or scope["path"].encode()
            target = path.decode("latin-1") + ("?" + urlencode(rest) if rest else "")
            cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            await _answer(send, 303, b"", [(b"location", target.encode()), (b"set-cookie", cookie.encode())])
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, guarded)


async def _drain(receive: Receive, limit: int = 1 << 20) -> None:
    """Read a refused request's body (up to ``limit`` bytes), so the answer is not lost to a reset
    connection (closing a socket with unread data resets it)."""
    seen = 0
    while seen <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        seen += len(message.get("body", b""))
        if not message.get("more_body"):
            return


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode()), *HEADERS]})
    await send({"type": "http.response.body", "body": body})
