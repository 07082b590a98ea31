"""``instance-exists``: does this cloud instance exist (and is it not terminated)?

Contract: ``{provider: "aws", instance_id: i-..., region?}``; runs ``aws ec2
describe-instances --instance-ids <id> --output json [--region <r>]`` with the pager and
auto-prompt off. ``pass`` if listed and not terminated; ``fail`` if terminated, or if AWS says
``InvalidInstanceID.NotFound`` in the region the claim names (without a region, "not found in
the default region" is no evidence: ``unknown``); ``unknown`` without the CLI, credentials,
a region, or the network.
"""
from __future__ import annotations

import json
from typing import Mapping

from . import validate as v
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import failed
from .base import first_line
from .base import passed
from .base import run_tool
from .base import unknown

name = 'instance-exists'
PROVIDERS = ('aws',)
LOGIN = 'configure AWS credentials: run `aws configure` or `aws sso login`'
schema: Mapping[str, ArgSpec] = {
    'provider': ArgSpec('string', 'cloud provider', True, PROVIDERS),
    'instance_id': ArgSpec('string', 'EC2 instance id, e.g. i-0abc12345def67890'),
    'region': ArgSpec('string', 'AWS region, e.g. eu-west-1', required=False),
}
_CREDENTIAL_ERRORS = (
    'Unable to locate credentials', 'ExpiredToken', 'RequestExpired', 'AuthFailure',
    'UnauthorizedOperation', 'InvalidClientTokenId', 'UnrecognizedClientException',
    'Token has expired', 'SSO session', 'aws sso login',
)


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    args: dict[str, str | int] = {
        'provider': v.choice(raw['provider'], 'provider', ctx, PROVIDERS),
        'instance_id': v.aws_instance_id(raw['instance_id'], 'instance_id', ctx),
    }
    if 'region' in raw:
        args['region'] = v.aws_region(raw['region'], 'region', ctx)
    return args


def _state(stdout: str, instance_id: str) -> str | None:
    """The state name of ``instance_id`` in a describe-instances answer, or None."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    reservations = data.get('Reservations') if isinstance(data, dict) else None
    for reservation in reservations if isinstance(reservations, list) else ():
        instances = reservation.get('Instances') if isinstance(reservation, dict) else None
        for instance in instances if isinstance(instances, list) else ():
            if isinstance(instance, dict) and instance.get('InstanceId') == instance_id:
                state = instance.get('State')
                return str(state.get('Name')) if isinstance(state, dict) else 'unknown'
    return None


def check(args: Args, ctx: Context) -> ProbeResult:
    iid = str(args['instance_id'])
    argv = ['aws', 'ec2', 'describe-instances', '--instance-ids', iid, '--output', 'json']
    if 'region' in args:
        argv += ['--region', str(args['region'])]
    where = f' in {args["region"]}' if 'region' in args else ''
    out = run_tool(argv, ctx, extra_env={'AWS_PAGER': '', 'AWS_CLI_AUTO_PROMPT': 'off'})
    if isinstance(out, ProbeResult):
        return out
    if out.returncode != 0:
        if any(e in out.stderr for e in _CREDENTIAL_ERRORS):
            return unknown(f'aws has no usable credentials: {LOGIN}')
        if 'InvalidInstanceID.NotFound' in out.stderr:
            if 'region' in args:
                return failed(f'{iid} does not exist{where}')
            return unknown(f'{iid} not found in the default region; name the region to check')
        if 'You must specify a region' in out.stderr:
            return unknown('aws has no default region: name the region, or run `aws configure`')
        return unknown(f'aws could not answer: {first_line(out.stderr)}')
    state = _state(out.stdout, iid)
    if state is None:
        return unknown(f'aws answered without listing {iid}')
    if state == 'terminated':
        return failed(f'{iid}{where} is terminated')
    return passed(f'{iid}{where} exists ({state})')
