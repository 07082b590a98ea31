"""``git-branch-exists``: does a local repository have this branch?

Contract: ``{root?, repo, branch}``; runs ``git -C <repo> rev-parse --verify --quiet
refs/heads/<branch>``. ``pass`` if the ref exists, ``fail`` if it does not or if the repository
is gone; ``unknown`` when git is missing or cannot read the repository.
"""
from __future__ import annotations

from typing import Mapping

from . import _git
from . import validate as v
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import failed
from .base import passed

name = 'git-branch-exists'
schema: Mapping[str, ArgSpec] = {
    'root': _git.ROOT,
    'repo': _git.REPO,
    'branch': ArgSpec('string', 'branch name, e.g. feature/login'),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    return {**_git.repo_args(raw, ctx), 'branch': v.branch(raw['branch'], 'branch', ctx)}


def check(args: Args, ctx: Context) -> ProbeResult:
    repo = _git.repo_dir(args, ctx)
    if isinstance(repo, ProbeResult):
        return repo
    ref = f'refs/heads/{args["branch"]}'
    out = _git.git(repo, ('rev-parse', '--verify', '--quiet', ref), ctx)
    if isinstance(out, ProbeResult):
        return out
    if out.returncode == 0:
        return passed(f'branch {args["branch"]} exists in {_git.where(args)}')
    if out.returncode == 1:
        return failed(f'no branch {args["branch"]} in {_git.where(args)}')
    return _git.not_a_repo(out, _git.where(args))
