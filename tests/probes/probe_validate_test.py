from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from quipu.probes import validate as v
from quipu.probes import validate_extraction
from quipu.probes.base import Context
from quipu.probes.base import ProbeSpec
from quipu.probes.base import Refused

if TYPE_CHECKING:
    from conftest import MakeCtx


@pytest.mark.parametrize('name', [
    'main', 'feature/login', 'release-1.2', 'user/jo/fix_#12', 'v2.0.0-rc.1', 'ünïcode', 'a@b',
])
def test_valid_branch_names(ctx: Context, name: str) -> None:
    assert v.branch(name, 'branch', ctx) == name


def test_refs_heads_prefix_is_dropped(ctx: Context) -> None:
    assert v.branch('refs/heads/main', 'branch', ctx) == 'main'


@pytest.mark.parametrize('name', [
    '', '-x', '.hidden', 'a/.b', 'a..b', 'a/', '/a', 'a//b', 'a.', 'a.lock', 'a/b.lock/c', '@',
    'a@{1}', 'a b', 'a~1', 'a^', 'a:b', 'a?', 'a*', 'a[b', 'a\\b', 'a\tb', 'x' * 256,
    'a;b', 'a|b', 'a&b', 'a$b', 'a>b',
])
def test_invalid_branch_names(ctx: Context, name: str) -> None:
    with pytest.raises(Refused):
        v.branch(name, 'branch', ctx)
    assert len(ctx.refusals) == 1


def test_sha_is_normalised(ctx: Context) -> None:
    assert v.sha('ABCDEF0', 'commit', ctx) == 'abcdef0'
    for bad in ('abcdef', 'g' * 7, 'a' * 65, 7654321):
        with pytest.raises(Refused):
            v.sha(bad, 'commit', ctx)


def test_doppler_secret_names_are_upper_case(ctx: Context) -> None:
    assert v.doppler_secret('stripe_key', 'name', ctx) == 'STRIPE_KEY'
    with pytest.raises(Refused):
        v.doppler_secret('1PASSWORD', 'name', ctx)


@pytest.mark.parametrize('region', ['us-east-1', 'eu-central-2', 'ap-southeast-3', 'us-gov-west-1', 'cn-north-1'])
def test_aws_regions(ctx: Context, region: str) -> None:
    assert v.aws_region(region, 'region', ctx) == region


@pytest.mark.parametrize('iid', ['i-1234abcd', 'i-0123456789abcdef0'])
def test_aws_instance_ids(ctx: Context, iid: str) -> None:
    assert v.aws_instance_id(iid, 'instance_id', ctx) == iid


@pytest.mark.parametrize('iid', ['i-1234abc', 'i-0123456789abcdef01', 'I-1234ABCD', 'ami-12345678'])
def test_bad_aws_instance_ids(ctx: Context, iid: str) -> None:
    with pytest.raises(Refused):
        v.aws_instance_id(iid, 'instance_id', ctx)


def test_loopback_urls_need_the_explicit_flag(make_ctx: MakeCtx) -> None:
    strict, lenient = make_ctx(), make_ctx(allow_loopback=True)
    for url in ('http://127.0.0.1:8000/', 'http://[::1]/', 'http://localhost/', 'http://127.1/'):
        with pytest.raises(Refused):
            v.url(url, 'url', strict)
        assert v.url(url, 'url', lenient) == url


def test_flag_never_opens_metadata_or_link_local(make_ctx: MakeCtx) -> None:
    lenient = make_ctx(allow_loopback=True)
    for url in ('http://169.254.169.254/', 'http://[fe80::1]/', 'http://metadata/'):
        with pytest.raises(Refused):
            v.url(url, 'url', lenient)


def test_host_names_are_allowed_even_if_they_look_internal(ctx: Context) -> None:
    assert v.url('https://wiki.corp.example:8443/page', 'url', ctx)
    assert v.url('HTTPS://Example.COM/', 'url', ctx)


def test_args_must_match_the_schema_exactly(ctx: Context) -> None:
    with pytest.raises(Refused, match='unknown field'):
        validate_extraction({'probe': 'url-alive', 'args': {'url': 'https://example.com', 'method': 'POST'}}, ctx)
    with pytest.raises(Refused, match='missing field'):
        validate_extraction({'probe': 'url-alive', 'args': {}}, ctx)
    with pytest.raises(Refused, match='unknown field'):
        validate_extraction({'probe': 'url-alive', 'args': {1: 'x'}}, ctx)


def test_spec_is_canonical_and_read_only(ctx: Context) -> None:
    spec = ProbeSpec.create({'probe': 'repo-visibility', 'args': {'repo': 'octo/hello', 'visibility': 'PUBLIC'}}, ctx)
    assert spec == ProbeSpec('repo-visibility', {'repo': 'octo/hello', 'visibility': 'public'})
    with pytest.raises(TypeError):
        spec.args['repo'] = 'evil/repo'  # type: ignore[index]


def test_pr_state_may_be_omitted_or_merged(ctx: Context) -> None:
    for args in ({'repo': 'a/b', 'number': 7}, {'repo': 'a/b', 'number': 7, 'state': 'MERGED'}):
        spec = validate_extraction({'probe': 'pr-merged', 'args': args}, ctx)
        assert dict(spec.args) == {'repo': 'a/b', 'number': 7}
