from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from quipu.probes import run
from quipu.probes import validate_extraction
from quipu.probes.base import Context
from quipu.probes.base import ProbeResult
from quipu.probes.base import Refused

if TYPE_CHECKING:
    from conftest import Fakes


def _pr(ctx: Context, **args: object) -> ProbeResult:
    args = {'repo': 'octo/hello', 'number': 42, **args}
    return run(validate_extraction({'probe': 'pr-merged', 'args': args}, ctx), ctx)


def _visibility(ctx: Context, repo: str, visibility: str) -> ProbeResult:
    args = {'repo': repo, 'visibility': visibility}
    return run(validate_extraction({'probe': 'repo-visibility', 'args': args}, ctx), ctx)


def test_merged_pr_passes(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stdout='gh/pr_view_merged.json')
    result = _pr(ctx, state='merged')
    assert result.status == 'pass'
    assert '2024-03-05' in result.detail
    assert fakes.argvs('gh') == [['pr', 'view', '42', '--repo', 'octo/hello', '--json', 'state,mergedAt']]
    assert fakes.calls('gh')[0]['env']['GH_PROMPT_DISABLED'] == '1'  # type: ignore[index]


@pytest.mark.parametrize(('fixture', 'word'), [('gh/pr_view_open.json', 'open'), ('gh/pr_view_closed.json', 'closed')])
def test_open_or_closed_pr_fails(ctx: Context, fakes: Fakes, fixture: str, word: str) -> None:
    fakes.add('gh', stdout=fixture)
    assert _pr(ctx) == ('fail', f'octo/hello#42 is {word}, not merged')


def test_pr_that_does_not_exist_fails(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stderr='gh/pr_not_found.stderr', code=1)
    assert _pr(ctx).status == 'fail'


def test_pr_in_a_repo_this_login_cannot_see_is_unknown(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stderr='gh/repo_not_found.stderr', code=1)
    assert _pr(ctx).status == 'unknown'


def test_not_logged_in_is_unknown_with_instructions(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stderr='gh/not_logged_in.stderr', code=4)
    result = _pr(ctx)
    assert result.status == 'unknown'
    assert 'gh auth login' in result.detail


def test_network_error_is_unknown(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stderr='gh/network.stderr', code=1)
    assert _pr(ctx) == ('unknown', 'gh could not answer: error connecting to api.github.com')


def test_gh_not_installed_is_unknown(ctx: Context) -> None:
    result = _pr(ctx)
    assert result.status == 'unknown'
    assert 'install the GitHub CLI' in result.detail and 'gh auth login' in result.detail
    assert ctx.started == []


@pytest.mark.parametrize('state', ['open', 'closed', 'OPEN', 'draft'])
def test_only_merged_claims_are_accepted(ctx: Context, fakes: Fakes, state: str) -> None:
    fakes.add('gh', stdout='gh/pr_view_open.json')
    with pytest.raises(Refused, match='state'):
        _pr(ctx, state=state)
    assert fakes.calls('gh') == []


def test_visibility_matches(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stdout='gh/repo_view_public.json')
    assert _visibility(ctx, 'octo/hello', 'public') == ('pass', 'octo/hello is public')
    assert fakes.argvs('gh') == [['repo', 'view', 'octo/hello', '--json', 'visibility']]


def test_visibility_mismatch_fails(ctx: Context, fakes: Fakes) -> None:
    """The memory said private; the repository is public."""
    fakes.add('gh', stdout='gh/repo_view_public.json')
    assert _visibility(ctx, 'octo/hello', 'Private') == ('fail', 'octo/hello is public, not private')


def test_unseen_repo_is_not_public_but_may_be_private(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stderr='gh/repo_not_found.stderr', code=1)
    assert _visibility(ctx, 'octo/nope', 'public').status == 'fail'
    assert _visibility(ctx, 'octo/nope', 'private').status == 'unknown'


def test_visibility_not_logged_in_is_unknown(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stderr='gh/not_logged_in.stderr', code=4)
    assert _visibility(ctx, 'octo/hello', 'private').status == 'unknown'
