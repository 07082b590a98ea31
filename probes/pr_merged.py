"""``pr-merged``: was this pull request merged?

Contract: ``{repo: owner/name, number, state?: "merged"}``. A PR's state is a mood, not a fact:
only the terminal claim "merged" is accepted; "open" or "closed" is refused at validation.
Runs ``gh pr view <n> --repo <owner/name> --json state,mergedAt``. ``pass`` if merged, ``fail``
if it is open or closed unmerged, or if the repository answers but has no such PR; ``unknown``
without gh, without a login, offline, or when the repository is not visible to this login.
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

name = 'pr-merged'
MAX_NUMBER = 99_999_999
schema: Mapping[str, ArgSpec] = {
    'repo': ArgSpec('string', 'GitHub repository as owner/name'),
    'number': ArgSpec('integer', 'pull request number'),
    'state': ArgSpec('string', 'the claimed state; only "merged" is accepted', False, ('merged',)),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    if 'state' in raw:
        v.choice(raw['state'], 'state', ctx, ('merged',))
    return {
        'repo': v.gh_repo(raw['repo'], 'repo', ctx),
        'number': v.integer(raw['number'], 'number', ctx, lo=1, hi=MAX_NUMBER),
    }


def check(args: Args, ctx: Context) -> ProbeResult:
    pr = f'{args["repo"]}#{args["number"]}'
    data = _gh.gh_json(
        ('pr', 'view', str(args['number']), '--repo', str(args['repo']),
         '--json', 'state,mergedAt'),
        ctx,
    )
    if isinstance(data, ProbeResult):
        return data
    if isinstance(data, _gh.NotFound):
        if data.what == 'pull request':
            return failed(f'{pr} does not exist ({data.message})')
        return unknown(f'{args["repo"]} is not visible to this gh login: {data.message}')
    state = data.get('state')
    if state == 'MERGED':
        return passed(f'{pr} was merged at {data.get("mergedAt")}')
    if state in ('OPEN', 'CLOSED'):
        return failed(f'{pr} is {str(state).lower()}, not merged')
    return unknown(f'gh reported an unexpected state for {pr}: {str(state)[:40]!r}')
