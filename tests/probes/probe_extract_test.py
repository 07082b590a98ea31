from __future__ import annotations

from pathlib import Path

from quipu.probes import run
from quipu.probes import validate_extraction
from quipu.probes.base import Context
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
