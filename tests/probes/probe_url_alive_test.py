from __future__ import annotations

import ast
import http.server
import threading
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Iterator
from typing import NamedTuple

import pytest

from quipu.probes import run
from quipu.probes import url_alive
from quipu.probes import validate_extraction
from quipu.probes.base import Context
from quipu.probes.base import ProbeResult
from quipu.probes.base import Refused

if TYPE_CHECKING:
    from conftest import MakeCtx

ROUTES: dict[str, tuple[int, dict[str, str]]] = {
    '/': (200, {}),
    '/moved': (301, {'Location': '/'}),
    '/to-file': (302, {'Location': 'file:///etc/passwd'}),
    '/to-metadata': (302, {'Location': 'http://169.254.169.254/latest/meta-data/'}),
    '/to-gopher': (302, {'Location': 'gopher://127.0.0.1:70/_x'}),
    '/loop': (302, {'Location': '/loop'}),
    '/login': (401, {}),
    '/gone': (404, {}),
    '/broken': (500, {}),
}


class Server(NamedTuple):
    base: str
    seen: list[tuple[str, str]]


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, str]]

    def _answer(self) -> None:
        self.seen.append((self.command, self.path))
        if self.path == '/head-refused' and self.command == 'HEAD':
            code, headers = 404, {}  # some servers mishandle HEAD
        elif self.path == '/head-refused':
            code, headers = 200, {}
        else:
            code, headers = ROUTES.get(self.path, (404, {}))
        self.send_response(code)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header('Content-Length', '0')
        self.end_headers()

    do_HEAD = do_GET = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    seen: list[tuple[str, str]] = []
    handler = type('Handler', (_Handler,), {'seen': seen})
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield Server(f'http://127.0.0.1:{httpd.server_address[1]}', seen)
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def lctx(make_ctx: MakeCtx) -> Context:
    """A context that lets URLs reach 127.0.0.1 (off by default)."""
    return make_ctx(allow_loopback=True, timeout=3.0)


def _check(ctx: Context, url: str) -> ProbeResult:
    return run(validate_extraction({'probe': 'url-alive', 'args': {'url': url}}, ctx), ctx)


def test_live_url_passes_on_head(lctx: Context, server: Server) -> None:
    assert _check(lctx, server.base + '/').status == 'pass'
    assert server.seen == [('HEAD', '/')]
    assert lctx.started == []


def test_redirect_within_allowed_hosts_is_followed(lctx: Context, server: Server) -> None:
    assert _check(lctx, server.base + '/moved').status == 'pass'
    assert [p for _, p in server.seen] == ['/moved', '/']


def test_head_refused_falls_back_to_get(lctx: Context, server: Server) -> None:
    assert _check(lctx, server.base + '/head-refused').status == 'pass'
    assert server.seen == [('HEAD', '/head-refused'), ('GET', '/head-refused')]


def test_auth_wall_counts_as_alive(lctx: Context, server: Server) -> None:
    assert _check(lctx, server.base + '/login').status == 'pass'


@pytest.mark.parametrize('path', ['/to-file', '/to-metadata', '/to-gopher'])
def test_redirect_to_a_refused_target_is_not_followed(lctx: Context, server: Server, path: str) -> None:
    url = server.base + path
    result = _check(lctx, url)
    assert result.status == 'pass'
    assert 'not followed' in result.detail
    assert all(p == path for _, p in server.seen)
    assert lctx.requests and all(r.split(' ', 1)[1] == url for r in lctx.requests)
    assert len(lctx.refusals) == 1  # the redirect target, logged like any refusal


@pytest.mark.parametrize('path', ['/gone', '/broken', '/loop'])
def test_answers_that_prove_nothing_are_unknown_not_fail(lctx: Context, server: Server, path: str) -> None:
    assert _check(lctx, server.base + path).status == 'unknown'


def test_closed_port_is_unknown_never_fail(lctx: Context, free_port: int) -> None:
    result = _check(lctx, f'http://127.0.0.1:{free_port}/')
    assert result.status == 'unknown'
    assert 'did not answer' in result.detail


def test_loopback_is_refused_by_default(ctx: Context, server: Server) -> None:
    with pytest.raises(Refused, match='loopback'):
        _check(ctx, server.base + '/')
    assert server.seen == []
    assert ctx.requests == []


def test_the_module_cannot_build_a_fail() -> None:
    """Unreachable is not down: url-alive never names a fail constructor or status."""
    tree = ast.parse(Path(url_alive.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert 'failed' not in imported | names
    assert 'fail' not in strings
    # results are built in one place only, _result(), and only as passed() or unknown()
    builders = {'passed', 'unknown', 'failed', 'ProbeResult'}
    result_fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == '_result')
    inside = {id(n) for n in ast.walk(result_fn)}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id in builders]
    assert sorted(c.func.id for c in calls) == ['passed', 'unknown']  # type: ignore[attr-defined]
    assert all(id(c) in inside for c in calls)
