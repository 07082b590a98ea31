"""``git-commit-exists``: does a local repository contain this commit?

Contract: ``{root?, repo, commit}`` (7 to 64 hex digits); runs ``git -C <repo> rev-parse
--verify --quiet <sha>^{commit}``. ``pass`` if found, ``fail`` if absent from a full clone or the
repository is gone, ``unknown`` in a shallow clone or when git cannot answer.
"""
from __future__ import annotations

from typing import Mapping

from . import _git
from . import validate as v
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import passed

name = 'git-commit-exists'
schema: Mapping[str, ArgSpec] = {
    'root': _git.ROOT,
    'repo': _git.REPO,
    'commit': ArgSpec('string', 'commit sha, full or abbreviated (at least 7 hex digits)'),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    return {**_git.repo_args(raw, ctx), 'commit': v.sha(raw['commit'], 'commit', ctx)}


def find_commit(repo: str, commit: str, ctx: Context, named: str) -> str | ProbeResult:
    """The full sha of ``commit`` in ``repo`` (``named`` in a detail), or the result explaining why not."""
    out = _git.git(repo, ('rev-parse', '--verify', '--quiet', f'{commit}^{{commit}}'), ctx)
    if isinstance(out, ProbeResult):
        return out
    if out.returncode == 0:
        return out.stdout.strip()
    if out.returncode == 1:
        return _git.missing_commit(repo, commit, ctx, named)
    return _git.not_a_repo(out, named)


def locate_commit(args: Args, ctx: Context) -> tuple[str, str] | ProbeResult:
    """(repository folder, full sha) of the claim's commit, or the result explaining why not."""
    repo = _git.repo_dir(args, ctx)
    if isinstance(repo, ProbeResult):
        return repo
    found = find_commit(repo, str(args['commit']), ctx, _git.where(args))
    if isinstance(found, ProbeResult):
        return found
    return repo, found


def check(args: Args, ctx: Context) -> ProbeResult:
    located = locate_commit(args, ctx)
    if isinstance(located, ProbeResult):
        return located
    return passed(f'commit {located[1][:12]} exists in {_git.where(args)}')
