from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from quipu.probes import run
from quipu.probes import validate_extraction
from quipu.probes.base import Context
from quipu.probes.base import ProbeResult
from quipu.probes.base import Refused

if TYPE_CHECKING:
    from conftest import Fakes

IID = 'i-0123456789abcdef0'


def _check(ctx: Context, **extra: object) -> ProbeResult:
    args = {'provider': 'aws', 'instance_id': IID, **extra}
    return run(validate_extraction({'probe': 'instance-exists', 'args': args}, ctx), ctx)


def test_running_instance_passes(ctx: Context, fakes: Fakes) -> None:
    fakes.add('aws', stdout='aws/describe_running.json')
    assert _check(ctx, region='eu-west-1') == ('pass', f'{IID} in eu-west-1 exists (running)')
    assert fakes.argvs('aws') == [[
        'ec2', 'describe-instances', '--instance-ids', IID, '--output', 'json', '--region', 'eu-west-1',
    ]]
    env = fakes.calls('aws')[0]['env']
    assert env['AWS_PAGER'] == '' and env['AWS_CLI_AUTO_PROMPT'] == 'off'  # type: ignore[index]


def test_terminated_instance_fails(ctx: Context, fakes: Fakes) -> None:
    fakes.add('aws', stdout='aws/describe_terminated.json')
    assert _check(ctx).status == 'fail'


def test_not_found_in_the_named_region_fails(ctx: Context, fakes: Fakes) -> None:
    fakes.add('aws', stderr='aws/not_found.stderr', code=254)
    assert _check(ctx, region='us-east-1') == ('fail', f'{IID} does not exist in us-east-1')


def test_not_found_in_the_default_region_is_unknown(ctx: Context, fakes: Fakes) -> None:
    fakes.add('aws', stderr='aws/not_found.stderr', code=254)
    result = _check(ctx)
    assert result.status == 'unknown'
    assert 'region' in result.detail


def test_no_credentials_is_unknown(ctx: Context, fakes: Fakes) -> None:
    fakes.add('aws', stderr='aws/no_credentials.stderr', code=253)
    result = _check(ctx, region='eu-west-1')
    assert result.status == 'unknown'
    assert 'aws configure' in result.detail


def test_network_error_is_unknown(ctx: Context, fakes: Fakes) -> None:
    fakes.add('aws', stderr='aws/network.stderr', code=255)
    assert _check(ctx, region='eu-west-1').status == 'unknown'


def test_aws_not_installed_is_unknown(ctx: Context) -> None:
    result = _check(ctx)
    assert result.status == 'unknown'
    assert 'install the AWS CLI' in result.detail


def test_other_providers_are_refused(ctx: Context) -> None:
    with pytest.raises(Refused, match='provider'):
        _check(ctx, provider='gcp')
