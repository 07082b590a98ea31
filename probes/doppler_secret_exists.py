"""``doppler-secret-exists``: does this config of this Doppler project hold a secret so named?

Contract: ``{project, config, name}``. The secret's value is never asked for, printed or kept:
the probe runs ``doppler secrets --only-names --project <p> --config <c> --json
--no-check-version`` (names only, ``{"NAME": {}, ...}``), keeps the set of names and drops the
rest of the output at once. ``pass`` if the name is listed, ``fail`` if not or if Doppler says
the project or config does not exist, ``unknown`` without the CLI, a login, or the network.
"""
from __future__ import annotations

import json
from typing import Mapping

from . import _doppler
from . import validate as v
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import failed
from .base import passed
from .base import unknown

name = 'doppler-secret-exists'
schema: Mapping[str, ArgSpec] = {
    'project': ArgSpec('string', 'Doppler project name, e.g. backend'),
    'config': ArgSpec('string', 'Doppler config name, e.g. prd'),
    'name': ArgSpec('string', 'secret name, e.g. STRIPE_API_KEY (never its value)'),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    return {
        'project': v.doppler_name(raw['project'], 'project', ctx),
        'config': v.doppler_name(raw['config'], 'config', ctx),
        'name': v.doppler_secret(raw['name'], 'name', ctx),
    }


def _names(stdout: str) -> frozenset[str] | None:
    """Only the keys of the names listing; anything else in the output is discarded."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    return frozenset(k for k in data if isinstance(k, str))


def check(args: Args, ctx: Context) -> ProbeResult:
    where = f'{args["project"]}/{args["config"]}'
    out = _doppler.doppler(
        ('secrets', '--only-names',
         '--project', str(args['project']), '--config', str(args['config'])),
        ctx,
    )
    if isinstance(out, ProbeResult):
        return out
    names = _names(out.stdout)
    del out  # the listing holds names only, but keep nothing past this line
    if names is None:
        return unknown('doppler printed something other than a JSON object of names')
    if args['name'] in names:
        return passed(f'secret {args["name"]} exists in {where}')
    return failed(f'no secret {args["name"]} in {where}')
