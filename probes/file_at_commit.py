"""``file-at-commit``: did this path exist in the tree of this commit?

Contract: ``{root?, repo, commit, path}``; ``path`` is relative to the repository top and may
not climb out. Runs ``git rev-parse`` (find the commit) then ``git cat-file -e <sha>:<path>``.
``pass`` if the path is in that tree, ``fail`` if not (or the commit is absent from a full
clone), ``unknown`` when git cannot answer.
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
from .base import first_line
from .base import passed
from .base import unknown
from .git_commit_exists import locate_commit

name = 'file-at-commit'
schema: Mapping[str, ArgSpec] = {
    'root': _git.ROOT,
    'repo': _git.REPO,
    'commit': ArgSpec('string', 'commit sha, full or abbreviated (at least 7 hex digits)'),
    'path': ArgSpec('string', 'path inside the repository, relative to its top'),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    return {
        **_git.repo_args(raw, ctx),
        'commit': v.sha(raw['commit'], 'commit', ctx),
        'path': v.repo_relative_path(raw['path'], 'path', ctx),
    }


def check(args: Args, ctx: Context) -> ProbeResult:
    located = locate_commit(args, ctx)
    if isinstance(located, ProbeResult):
        return located
    repo, found = located
    out = _git.git(repo, ('cat-file', '-e', f'{found}:{args["path"]}'), ctx)
    if isinstance(out, ProbeResult):
        return out
    if out.returncode == 0:
        return passed(f'{args["path"]} exists at {found[:12]}')
    if 'does not exist' in out.stderr or 'exists on disk, but not in' in out.stderr:
        return failed(f'{args["path"]} is not in the tree of {found[:12]}')
    return unknown(f'git could not read {args["path"]} at {found[:12]}: {first_line(out.stderr)}')
