"""``repo-visibility``: is this GitHub repository public (or private, or internal)?

Contract: ``{repo: owner/name, visibility: public|private|internal}``; runs
``gh repo view <owner/name> --json visibility``. ``pass`` on a match, ``fail`` on a mismatch,
and ``fail`` for a "public" claim about a repository this login cannot see (a public one would
be visible); ``unknown`` otherwise (no gh, no login, offline, an unseen repo claimed private).
"""
from __future__ import annotations

from typing import Mapping

from . import _gh
from . import validate as v
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import failed
from .base import passed
from .base import unknown

name = 'repo-visibility'
VISIBILITIES = ('public', 'private', 'internal')
schema: Mapping[str, ArgSpec] = {
    'repo': ArgSpec('string', 'GitHub repository as owner/name'),
    'visibility': ArgSpec('string', 'the claimed visibility', True, VISIBILITIES),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    return {
        'repo': v.gh_repo(raw['repo'], 'repo', ctx),
        'visibility': v.choice(raw['visibility'], 'visibility', ctx, VISIBILITIES),
    }


def check(args: Args, ctx: Context) -> ProbeResult:
    repo, claimed = args['repo'], args['visibility']
    data = _gh.gh_json(('repo', 'view', str(repo), '--json', 'visibility'), ctx)
    if isinstance(data, ProbeResult):
        return data
    if isinstance(data, _gh.NotFound):
        if claimed == 'public':
            return failed(f'{repo} is not visible to this gh login, so it is not public')
        return unknown(f'{repo} is not visible to this gh login: {data.message}')
    actual = str(data.get('visibility', '')).lower()
    if actual not in VISIBILITIES:
        return unknown(f'gh reported an unexpected visibility for {repo}: {actual[:40]!r}')
    if actual == claimed:
        return passed(f'{repo} is {actual}')
    return failed(f'{repo} is {actual}, not {claimed}')
