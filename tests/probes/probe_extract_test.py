from __future__ import annotations

from pathlib import Path

from quipu.probes import run
from quipu.probes import validate_extraction
from quipu.probes.base import Context
from quipu.probes.base import Refused
from quipu.probes.extract import extract

BODY = '''\
Deploy notes live in `docs/deploy.md` and the runbook in `~/notes/runbook.md`.
The CLI entry point is `quipu/cli.py:42`; the old one, `scripts/legacy/run.sh`, still runs nightly.
See https://docs.example.com/deploy. Also <https://status.example.com> and
[the board](https://board.example.com/x?y=1). Run `git push origin main` and `make test`.
Again: `docs/deploy.md`, https://docs.example.com/deploy
```sh
cat `config/secret.yml`  # inside a fence: a command, not a claim
curl https://fenced.example.com/
```
'''


def test_extracts_paths_and_urls_in_order_without_duplicates() -> None:
    assert list(extract(BODY, root='proj')) == [
        {'probe': 'path-exists', 'args': {'root': 'proj', 'path': 'docs/deploy.md'}},
        {'probe': 'path-exists', 'args': {'root': 'home', 'path': '~/notes/runbook.md'}},
        {'probe': 'path-exists', 'args': {'root': 'proj', 'path': 'quipu/cli.py'}},
        {'probe': 'path-exists', 'args': {'root': 'proj', 'path': 'scripts/legacy/run.sh'}},
        {'probe': 'url-alive', 'args': {'url': 'https://docs.example.com/deploy'}},
        {'probe': 'url-alive', 'args': {'url': 'https://status.example.com'}},
        {'probe': 'url-alive', 'args': {'url': 'https://board.example.com/x?y=1'}},
    ]


def test_commands_and_prose_in_backticks_are_not_paths() -> None:
    body = '`git push origin main` `make test` `foo` `a/b` `*.py` `$(id)/x.md` `x=1/2`'
    assert list(extract(body, root='proj')) == []


def test_extractions_go_through_validation_and_run(ctx: Context, project: Path) -> None:
    (project / 'docs').mkdir()
    (project / 'docs' / 'deploy.md').write_text('x')
    (project / 'quipu').mkdir()
    (project / 'quipu' / 'cli.py').write_text('x')
    results = {}
    for raw in extract(BODY, root='proj'):
        if raw['probe'] != 'path-exists':
            continue
        spec = validate_extraction(raw, ctx)
        results[spec.args['path']] = run(spec, ctx).status
    assert results == {
        'docs/deploy.md': 'pass', 'notes/runbook.md': 'fail', 'quipu/cli.py': 'pass',
        'scripts/legacy/run.sh': 'fail',
    }


def test_a_url_with_an_ipv6_host_is_taken_whole() -> None:
    body = ('The dev server listens on http://[::1]:8080/ when IPv6 is on; see [it](http://[fe80::1]/x), '
            '<https://[2606:4700::1111]/dns>, http://u@[::1]:80/a. Broken: http://[::1 and https://example.com/a]b')
    assert [e['args'] for e in extract(body, root='proj')] == [
        {'url': 'http://[::1]:8080/'}, {'url': 'http://[fe80::1]/x'}, {'url': 'https://[2606:4700::1111]/dns'},
        {'url': 'http://u@[::1]:80/a'}, {'url': 'http://[::1'}, {'url': 'https://example.com/a'},
    ]


def test_every_ipv6_url_a_memory_writes_is_refused_or_accepted_never_an_error(ctx: Context) -> None:
    body = ('http://[::1]:8080/ http://[::ffff:127.0.0.1]/ http://[fe80::1]/ http://[::1 http://[zz]/ '
            'http://[::127.0.0.1]/ http://u@[::1]/ https://[2606:4700::1111]/')
    outcomes = []
    for raw in extract(body, root='proj'):
        try:
            outcomes.append(validate_extraction(raw, ctx).args['url'])
        except Refused as e:
            outcomes.append(e.reason)
    expected = [
        'url: ::1 is loopback', 'url: 127.0.0.1 is loopback', 'url: fe80::1 is link-local', 'url: not a URL (',
        'url: not a URL (', 'url: ::7f00:1 carries the IPv4 address 127.0.0.1', 'url: credentials (userinfo)',
        'https://[2606:4700::1111]/',
    ]
    assert len(outcomes) == len(expected)
    assert all(got.startswith(want) for got, want in zip(outcomes, expected, strict=True)), outcomes
