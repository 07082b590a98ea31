"""Shared plumbing of the git probes: argument shapes and one way to run git in a repo.

Contract: ``git()`` runs ``git -c core.fsmonitor=false -C <repo> ...`` through ``run_tool``
(so never a shell, always logged, ``unknown`` when git is missing); callers pass validated,
canonical arguments only. ``missing_commit()`` turns "commit not found" into ``fail``, except
in a shallow clone, where absence is no evidence.
"""
from __future__ import annotations

import os.path
from typing import Mapping
from typing import Sequence

from . import validate as v
from .base import HOME
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import Refused
from .base import ToolOutput
from .base import failed
from .base import first_line
from .base import run_tool
from .base import shown
from .base import unknown

ROOT = ArgSpec(
    'string', f'project name, or "{HOME}" (default): what a relative repo path is under',
    required=False,
)
REPO = ArgSpec('string', 'local repository path: relative to root, ~/..., or absolute')


def repo_args(raw: Mapping[str, object], ctx: Context) -> dict[str, str]:
    root = v.root_name(raw.get('root', HOME), 'root', ctx)
    root, repo = v.confined_path(root, raw['repo'], 'repo', ctx)
    return {'root': root, 'repo': repo}


def repo_dir(args: Args, ctx: Context) -> str | ProbeResult:
    """The repository directory, or a result when it is gone or now escapes its root."""
    try:
        path = v.resolve_path(str(args['root']), str(args['repo']), ctx, 'repo')
    except Refused as e:
        return unknown(f'not checked: {e.reason}')
    if not os.path.isdir(path):
        return failed(f'no directory {where(args)}')
    return path


def where(args: Args) -> str:
    """The claim's repository as a detail names it: never the folder it resolved to here."""
    return shown(str(args['repo']), str(args['root']))


def git(repo: str, args: Sequence[str], ctx: Context) -> ToolOutput | ProbeResult:
    return run_tool(('git', '-c', 'core.fsmonitor=false', '-C', repo, *args), ctx)


def not_a_repo(out: ToolOutput, repo: str) -> ProbeResult:
    """``repo`` names the repository for the detail (``where``), not its folder."""
    if any(m in out.stderr for m in ('not a git repository', 'does not appear to be a git repo')):
        return failed(f'{repo} is not a git repository')
    return unknown(f'git could not read {repo}: {first_line(out.stderr)}')


def missing_commit(repo: str, commit: str, ctx: Context, named: str) -> ProbeResult:
    """``repo`` is the folder git reads; ``named`` the repository as the detail names it."""
    out = git(repo, ('rev-parse', '--is-shallow-repository'), ctx)
    if isinstance(out, ToolOutput) and out.stdout.strip() == 'false':
        return failed(f'commit {commit} not found in {named}')
    return unknown(f'commit {commit} not found, but {named} is a shallow clone (or unreadable)')
