"""Every hostile extraction is refused before anything runs, and the refusal is logged."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from quipu.probes import validate_extraction
from quipu.probes.base import Refused

if TYPE_CHECKING:
    from conftest import Fakes
    from conftest import MakeCtx

CORPUS = json.loads((Path(__file__).parent / 'fixtures' / 'hostile_extractions.json').read_text())
TOOLS = ('git', 'gh', 'doppler', 'aws')


def test_the_corpus_is_large_and_annotated() -> None:
    assert len(CORPUS) >= 30
    assert all(set(e) == {'note', 'extraction'} and e['note'] for e in CORPUS)
    assert len({e['note'] for e in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize('entry', CORPUS, ids=[e['note'] for e in CORPUS])
def test_hostile_extraction_is_refused_and_nothing_runs(
        entry: dict[str, object], make_ctx: MakeCtx, fakes: Fakes, project: Path,
) -> None:
    (project / 'link-out').symlink_to('/etc')
    for tool in TOOLS:  # every tool a probe could start is a logging fake, first on PATH
        fakes.add(tool)
    ctx = make_ctx()

    with pytest.raises(Refused) as excinfo:
        validate_extraction(entry['extraction'], ctx)

    assert ctx.refusals == [excinfo.value.reason]
    assert ctx.started == []
    assert ctx.requests == []
    for tool in TOOLS:
        assert not fakes.log_path(tool).exists(), f'{tool} was started'


BENIGN = [
    {'probe': 'path-exists', 'args': {'root': 'proj', 'path': 'docs/cli.md'}},
    {'probe': 'git-branch-exists', 'args': {'root': 'proj', 'repo': '.', 'branch': 'feature/login-v2'}},
    {'probe': 'git-remote-branch-exists', 'args': {'remote_url': 'https://github.com/octo/hello.git', 'branch': 'main'}},
    {'probe': 'git-commit-exists', 'args': {'repo': '~/code/x', 'commit': 'ABCDEF1'}},
    {'probe': 'file-at-commit', 'args': {'root': 'proj', 'repo': '.', 'commit': 'abcdef1', 'path': 'src/app.py'}},
    {'probe': 'pr-merged', 'args': {'repo': 'octo/hello.js', 'number': 1234, 'state': 'merged'}},
    {'probe': 'repo-visibility', 'args': {'repo': 'octo/hello', 'visibility': 'private'}},
    {'probe': 'doppler-project-exists', 'args': {'project': 'backend_api'}},
    {'probe': 'doppler-secret-exists', 'args': {'project': 'backend', 'config': 'dev_personal', 'name': 'DATABASE_URL'}},
    {'probe': 'instance-exists', 'args': {'provider': 'aws', 'instance_id': 'i-0123456789abcdef0', 'region': 'us-gov-west-1'}},
    {'probe': 'url-alive', 'args': {'url': 'https://docs.example.com/a?b=1&c=2#frag'}},
    {'probe': 'url-alive', 'args': {'url': 'http://10.0.0.1.nip.io:8080/'}},
]


@pytest.mark.parametrize('extraction', BENIGN, ids=[e['probe'] for e in BENIGN])
def test_ordinary_extractions_pass_validation(extraction: dict[str, object], make_ctx: MakeCtx) -> None:
    """The control group: the corpus is refused for what it tries, not for its shape."""
    ctx = make_ctx()
    spec = validate_extraction(extraction, ctx)
    assert spec.probe == extraction['probe']
    assert ctx.log == []
