"""``git-remote-branch-exists``: does a remote repository have this branch?

Contract: ``{root?, remote_url, branch}``; the remote is an ``https://`` URL (no credentials,
no private or metadata host) or a confined local repository path. Runs
``git ls-remote --exit-code --heads -- <remote> refs/heads/<branch>`` with only that one
transport allowed (``GIT_ALLOW_PROTOCOL`` and ``protocol.*.allow``), no redirects, no terminal
prompt. ``pass`` if the exact ref is listed; ``fail`` if the remote answers without it (or a
local remote is gone); ``unknown`` when the network, credentials or git get in the way.
"""
from __future__ import annotations

import os.path
from typing import Mapping

from . import _git
from . import validate as v
from .base import HOME
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import Refused
from .base import failed
from .base import first_line
from .base import passed
from .base import run_tool
from .base import shown
from .base import unknown

name = 'git-remote-branch-exists'
schema: Mapping[str, ArgSpec] = {
    'root': _git.ROOT,
    'remote_url': ArgSpec('string', 'https:// clone URL, or a local repository path'),
    'branch': ArgSpec('string', 'branch name, e.g. main'),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    root = v.root_name(raw.get('root', HOME), 'root', ctx)
    root, remote = v.remote(root, raw['remote_url'], 'remote_url', ctx)
    return {'root': root, 'remote_url': remote, 'branch': v.branch(raw['branch'], 'branch', ctx)}


def _is_https(remote: str) -> bool:
    return remote.lower().startswith('https://')


def check(args: Args, ctx: Context) -> ProbeResult:
    remote = str(args['remote_url'])
    if _is_https(remote):
        protocol = 'https'
    else:
        protocol = 'file'
        try:
            remote = v.resolve_path(str(args['root']), remote, ctx, 'remote_url')
        except Refused as e:
            return unknown(f'not checked: {e.reason}')
        if not os.path.isdir(remote):
            return failed(f'no repository at {shown(str(args["remote_url"]), str(args["root"]))}')
    ref = f'refs/heads/{args["branch"]}'
    argv = (
        'git', '-c', 'protocol.allow=never', '-c', f'protocol.{protocol}.allow=always',
        '-c', 'http.followRedirects=false', '-c', 'core.fsmonitor=false',
        'ls-remote', '--exit-code', '--heads', '--', remote, ref,
    )
    out = run_tool(argv, ctx, extra_env={
        'GIT_TERMINAL_PROMPT': '0', 'GIT_ALLOW_PROTOCOL': protocol, 'GCM_INTERACTIVE': 'never',
    })
    if isinstance(out, ProbeResult):
        return out
    where = remote if protocol == 'https' else shown(str(args['remote_url']), str(args['root']))
    if out.returncode == 0 and any(
            line.split('\t')[-1] == ref for line in out.stdout.splitlines()
    ):
        return passed(f'branch {args["branch"]} exists on {where}')
    if out.returncode in (0, 2):
        return failed(f'{where} has no branch {args["branch"]}')
    if protocol == 'file':
        return _git.not_a_repo(out, where)
    return unknown(f'could not list {where}: {first_line(out.stderr)}')
