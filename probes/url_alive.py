"""``url-alive``: does this URL answer?

Contract: ``{url}`` (http or https; validated like every URL: no userinfo, no link-local,
metadata, private or loopback literal unless ``ctx.allow_loopback``). A HEAD request, then a GET
if HEAD got an answer that proves nothing, each with a short timeout, through an opener that
has only the HTTP(S) handlers: no file://, ftp://, data: and no proxy from the environment.
Every redirect target is validated again (and its host's addresses must not be link-local,
metadata or loopback) before it is followed; a refused redirect is not followed.

An unanswered URL is not evidence (unreachable from this machine is not down), so this probe is
mechanically unable to return ``fail``: every result is built by ``_result(alive, detail)``,
which maps to ``pass`` or ``unknown`` only, and a test checks that the module never names a
``fail`` constructor. ``pass``: a 2xx or 3xx answer, or 401/403/405/407/429 (alive, guarded).
A 404, 410, other 4xx and 5xx are ``unknown``: the host answered, but not for this page.
"""
from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import IO
from typing import Mapping
from typing import NamedTuple

from . import validate as v
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import LogEntry
from .base import ProbeResult
from .base import Refused
from .base import passed
from .base import unknown

name = 'url-alive'
schema: Mapping[str, ArgSpec] = {
    'url': ArgSpec('string', 'http:// or https:// URL'),
}
MAX_TIMEOUT = 5.0
MAX_REDIRECTS = 5
GUARDED = frozenset({401, 403, 405, 407, 429})
"""Statuses that prove a live endpoint which will not serve this request."""


class _Answer(NamedTuple):
    alive: bool
    detail: str
    answered: bool  # an HTTP status came back (so a GET might tell more than HEAD)


def _result(alive: bool, detail: str) -> ProbeResult:
    """The only way this module builds a result: alive is ``pass``, anything else ``unknown``."""
    return passed(detail) if alive else unknown(detail)


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    return {'url': v.url(raw['url'], 'url', ctx)}


def _refusal(url: str, ctx: Context) -> str | None:
    """Why ``url`` may not be requested now (validation, then its host's addresses)."""
    try:
        v.url(url, 'url', ctx)
    except Refused as e:
        return e.reason
    parts = urllib.parse.urlsplit(url)
    try:
        infos = socket.getaddrinfo(parts.hostname, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None  # unresolvable: the request itself will fail and say so
    for info in infos:
        try:
            addr = ipaddress.ip_address(str(info[4][0]).split('%')[0])
        except ValueError:
            continue
        why = v.address_refusal(addr, ctx, allow_private=True)
        if why is not None:
            reason = f'url: {parts.hostname} resolves to a refused address: {why}'
            ctx.record(LogEntry('refused', reason))
            return reason
    return None


class _Redirects(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.refused: str | None = None

    def http_error_302(
            self,
            req: urllib.request.Request,
            fp: IO[bytes],
            code: int,
            msg: str,
            headers: http.client.HTTPMessage,
    ) -> object:
        """Check the target before urllib looks at it (it would raise for file:// itself)."""
        location = headers.get('location') or headers.get('uri')
        if location is not None:
            why = _refusal(urllib.parse.urljoin(req.full_url, location), self.ctx)
            if why is not None:
                self.refused = why
                return None  # not followed: urllib raises HTTPError(code) instead
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    def redirect_request(
            self,
            req: urllib.request.Request,
            fp: IO[bytes],
            code: int,
            msg: str,
            headers: http.client.HTTPMessage,
            newurl: str,
    ) -> urllib.request.Request | None:
        why = _refusal(newurl, self.ctx)
        if why is not None:
            self.refused = why
            return None  # not followed: urllib raises HTTPError(code) instead
        self.ctx.record(LogEntry('request', f'{req.get_method()} {newurl}'))
        return super().redirect_request(
            req, fp, code, msg, headers, newurl,
        )


def _opener(redirects: _Redirects) -> urllib.request.OpenerDirector:
    opener = urllib.request.OpenerDirector()
    for handler in (
            urllib.request.HTTPHandler(),
            urllib.request.HTTPSHandler(context=ssl.create_default_context()),
            redirects,
            urllib.request.HTTPDefaultErrorHandler(),
            urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


def _status(code: int, url: str, method: str, refused: str | None) -> _Answer:
    if 300 <= code < 400:
        if refused is not None:
            detail = f'{url} answered {code}; its redirect was not followed ({refused})'
            return _Answer(True, detail, True)
        return _Answer(False, f'{url} answered {code} but its redirects did not settle', True)
    if code < 400 or code in GUARDED:
        return _Answer(True, f'{url} answered {code} to {method}', True)
    detail = f'{url} answered {code} to {method}: the host is up, the page proves nothing'
    return _Answer(False, detail, True)


def _ask(url: str, method: str, ctx: Context) -> _Answer:
    redirects = _Redirects(ctx)
    request = urllib.request.Request(url, method=method, headers={'User-Agent': 'quipu-verify'})
    ctx.record(LogEntry('request', f'{method} {url}'))
    try:
        response = _opener(redirects).open(request, timeout=min(ctx.timeout, MAX_TIMEOUT))
    except urllib.error.HTTPError as e:
        e.close()
        return _status(e.code, url, method, redirects.refused)
    except urllib.error.URLError as e:
        return _Answer(False, f'{url} did not answer: {e.reason}', False)
    except (OSError, http.client.HTTPException, ValueError) as e:
        return _Answer(False, f'{url} did not answer: {type(e).__name__}: {e}', False)
    if response is None:
        return _Answer(False, f'{url}: no handler for this URL', False)
    with response:
        return _status(response.status, url, method, redirects.refused)


def check(args: Args, ctx: Context) -> ProbeResult:
    url = str(args['url'])
    why = _refusal(url, ctx)
    if why is not None:
        return _result(False, f'not checked: {why}')
    answer = _ask(url, 'HEAD', ctx)
    if not answer.alive and answer.answered:
        answer = _ask(url, 'GET', ctx)
    return _result(answer.alive, answer.detail)
