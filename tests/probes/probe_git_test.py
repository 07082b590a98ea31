from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Callable

import pytest

from quipu.probes import run
from quipu.probes import validate_extraction
from quipu.probes.base import Context
from quipu.probes.base import ProbeResult

if TYPE_CHECKING:
    from conftest import MakeCtx

Git = Callable[..., str]


@pytest.fixture
def repo(project: Path, git_cli: Git) -> dict[str, str]:
    """A real repository: two commits on main, a feature branch, one file added later."""
    git_cli(project, 'init', '-q')
    (project / 'README.md').write_text('hello\n')
    git_cli(project, 'add', 'README.md')
    git_cli(project, 'commit', '-q', '-m', 'first')
    first = git_cli(project, 'rev-parse', 'HEAD')
    (project / 'src').mkdir()
    (project / 'src' / 'app.py').write_text('print(1)\n')
    git_cli(project, 'add', 'src/app.py')
    git_cli(project, 'commit', '-q', '-m', 'second')
    git_cli(project, 'branch', 'feature/login')
    return {'first': first, 'second': git_cli(project, 'rev-parse', 'HEAD')}


def _check(ctx: Context, probe: str, **args: object) -> ProbeResult:
    return run(validate_extraction({'probe': probe, 'args': args}, ctx), ctx)


def test_branch_exists(ctx: Context, repo: dict[str, str], project: Path) -> None:
    result = _check(ctx, 'git-branch-exists', root='proj', repo='.', branch='feature/login')
    assert result.status == 'pass'
    assert ctx.started == [(
        'git', '-c', 'core.fsmonitor=false', '-C', str(project),
        'rev-parse', '--verify', '--quiet', 'refs/heads/feature/login',
    )]


def test_missing_branch_fails(ctx: Context, repo: dict[str, str]) -> None:
    result = _check(ctx, 'git-branch-exists', root='proj', repo='.', branch='feature/gone')
    assert result.status == 'fail'


def test_branch_in_a_directory_that_is_gone_fails(ctx: Context) -> None:
    result = _check(ctx, 'git-branch-exists', root='proj', repo='vanished', branch='main')
    assert result.status == 'fail'
    assert ctx.started == []


def test_branch_in_a_directory_that_is_no_repo_fails(ctx: Context, home: Path) -> None:
    (home / 'plain').mkdir()
    result = _check(ctx, 'git-branch-exists', repo='~/plain', branch='main')
    assert result == ('fail', 'plain (under home) is not a git repository')


def test_callers_git_dir_cannot_redirect_the_probe(
        make_ctx: MakeCtx, repo: dict[str, str], tmp_path: Path, git_cli: Git,
) -> None:
    """A git hook runs with GIT_DIR set; the probe must still look at the named repo."""
    other = tmp_path / 'other'
    other.mkdir()
    git_cli(other, 'init', '-q')
    git_cli(other, 'commit', '-q', '--allow-empty', '-m', 'x')
    ctx = make_ctx(env={'GIT_DIR': str(other / '.git')})
    assert _check(ctx, 'git-branch-exists', root='proj', repo='.', branch='feature/login').status == 'pass'


def test_git_missing_is_unknown(make_ctx: MakeCtx, repo: dict[str, str], fakes) -> None:  # type: ignore[no-untyped-def]
    ctx = make_ctx(env={'PATH': str(fakes.bin_dir)})
    result = _check(ctx, 'git-branch-exists', root='proj', repo='.', branch='main')
    assert result.status == 'unknown'
    assert 'install git' in result.detail


def test_remote_branch_on_a_local_remote(ctx: Context, repo: dict[str, str], project: Path) -> None:
    found = _check(ctx, 'git-remote-branch-exists', remote_url=str(project), root='proj', branch='feature/login')
    assert found.status == 'pass'
    argv = ctx.started[0]
    assert argv[-4:] == ('--heads', '--', str(project), 'refs/heads/feature/login')
    assert 'protocol.allow=never' in argv and 'protocol.file.allow=always' in argv
    gone = _check(ctx, 'git-remote-branch-exists', remote_url='.', root='proj', branch='nope')
    assert gone.status == 'fail'


def test_remote_branch_matches_the_exact_ref(ctx: Context, repo: dict[str, str], git_cli: Git, project: Path) -> None:
    """Only the exact ref counts: `login` is not `feature/login`."""
    result = _check(ctx, 'git-remote-branch-exists', remote_url='.', root='proj', branch='login')
    assert result.status == 'fail'


def test_local_remote_that_is_gone_fails(ctx: Context) -> None:
    result = _check(ctx, 'git-remote-branch-exists', remote_url='~/gone.git', branch='main')
    assert result.status == 'fail'


def test_unreachable_https_remote_is_unknown(make_ctx: MakeCtx, free_port: int) -> None:
    ctx = make_ctx(allow_loopback=True, timeout=5.0)
    result = _check(ctx, 'git-remote-branch-exists', remote_url=f'https://127.0.0.1:{free_port}/x.git', branch='main')
    assert result.status == 'unknown'
    argv = ctx.started[0]
    assert 'protocol.https.allow=always' in argv and 'http.followRedirects=false' in argv


def test_commit_exists_full_and_abbreviated(ctx: Context, repo: dict[str, str]) -> None:
    assert _check(ctx, 'git-commit-exists', root='proj', repo='.', commit=repo['first']).status == 'pass'
    assert _check(ctx, 'git-commit-exists', root='proj', repo='.', commit=repo['second'][:9].upper()).status == 'pass'


def test_missing_commit_fails_in_a_full_clone(ctx: Context, repo: dict[str, str]) -> None:
    result = _check(ctx, 'git-commit-exists', root='proj', repo='.', commit='deadbeef' * 5)
    assert result.status == 'fail'


def test_missing_commit_is_unknown_in_a_shallow_clone(
        ctx: Context, repo: dict[str, str], project: Path, git_cli: Git,
) -> None:
    git_cli(project, 'clone', '-q', '--depth', '1', f'file://{project}', 'shallow')
    result = _check(ctx, 'git-commit-exists', root='proj', repo='shallow', commit=repo['first'])
    assert result.status == 'unknown'
    assert 'shallow' in result.detail


def test_file_at_commit(ctx: Context, repo: dict[str, str]) -> None:
    at_second = _check(ctx, 'file-at-commit', root='proj', repo='.', commit=repo['second'], path='src/app.py')
    assert at_second.status == 'pass'
    at_first = _check(ctx, 'file-at-commit', root='proj', repo='.', commit=repo['first'], path='./src/app.py')
    assert at_first.status == 'fail'
    assert 'src/app.py' in at_first.detail
    no_commit = _check(ctx, 'file-at-commit', root='proj', repo='.', commit='0123456789abc', path='README.md')
    assert no_commit.status == 'fail'


def test_a_detail_names_the_repository_as_the_claim_does_never_its_folder(
        make_ctx: MakeCtx, repo: dict[str, str], project: Path,
) -> None:
    """A detail may be committed to a shared store: a root that is a folder is "the project"."""
    (project / 'plain').mkdir()
    ctx = make_ctx(roots={str(project): str(project)})
    missing = _check(ctx, 'git-commit-exists', root=str(project), repo='.', commit='deadbeef' * 5)
    no_repo = _check(ctx, 'git-commit-exists', root=str(project), repo='plain/..', commit='deadbeef' * 5)
    branch = _check(ctx, 'git-branch-exists', root=str(project), repo='.', branch='feature/gone')
    assert missing == ('fail', f'commit {"deadbeef" * 5} not found in the project')
    assert no_repo.status == 'fail' and str(project) not in no_repo.detail
    assert branch == ('fail', 'no branch feature/gone in the project')
    gone = _check(ctx, 'file-at-commit', root=str(project), repo='vanished', commit=repo['first'], path='x')
    assert gone == ('fail', 'no directory vanished (under the project)')
