"""``doppler-project-exists``: does this Doppler project exist?

Contract: ``{project}``; runs ``doppler projects get --project <p> --json --no-check-version``.
``pass`` if Doppler returns the project, ``fail`` if it answers "Could not find requested
project", ``unknown`` without the CLI, without a login, or offline.
"""
from __future__ import annotations

from typing import Mapping

from . import _doppler
from . import validate as v
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import passed

name = 'doppler-project-exists'
schema: Mapping[str, ArgSpec] = {
    'project': ArgSpec('string', 'Doppler project name, e.g. backend'),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    return {'project': v.doppler_name(raw['project'], 'project', ctx)}


def check(args: Args, ctx: Context) -> ProbeResult:
    out = _doppler.doppler(('projects', 'get', '--project', str(args['project'])), ctx)
    if isinstance(out, ProbeResult):
        return out
    return passed(f'Doppler project {args["project"]} exists')
