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


@pytest.mark.parametrize(('url', 'why'), [
    ('http://[::ffff:127.0.0.1]/', '127.0.0.1 is loopback'),
    ('http://[::127.0.0.1]/', 'carries the IPv4 address 127.0.0.1'),
    ('http://[2002:7f00:1::]/', 'carries the IPv4 address 127.0.0.1'),
    ('http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', 'carries the IPv4 address 127.0.0.1'),
    ('http://[64:ff9b::a9fe:a9fe]/', '169.254.169.254 is a cloud metadata address'),
    ('http://[64:ff9b::808:808]/', 'private or reserved'),
    ('http://[fd00::1]/', 'private or reserved'),
    ('http://[fec0::1]/', 'private or reserved'),
    ('http://[::]/', 'unspecified'),
    ('http://localhost6/', 'loopback'),
    ('http://ip6-loopback:80/', 'loopback'),
])
def test_ipv6_forms_of_this_machine_and_private_networks_are_refused(ctx: Context, url: str, why: str) -> None:
    with pytest.raises(Refused, match=why):
        v.url(url, 'url', ctx)


def test_a_public_ipv6_literal_is_a_url_like_any_other(ctx: Context) -> None:
    for url in ('https://[2606:4700:4700::1111]/dns-query', 'http://[::ffff:8.8.8.8]:8080/',
                'http://[2001:4860::8888]'):
        assert v.url(url, 'url', ctx) == url
    assert ctx.log == []


@pytest.mark.parametrize(('url', 'why'), [
    ('http://[::1', 'not a URL'),
    ('http://[::1]x/', 'brackets hold no IPv6 address'),
    ('http://[not-an-address]/', 'not a URL'),
    ('http://[127.0.0.1]/', 'not a URL'),
    ('http://[v1.x]/', 'brackets hold no IPv6 address'),
    ('http://example.com:65536/', 'bad port'),
    ('http://example.com:' + '9' * 60 + '/', 'bad port'),
    ('http://example.com:-1/', 'bad port'),
])
def test_a_url_python_cannot_parse_is_refused_with_the_reason(ctx: Context, url: str, why: str) -> None:
    with pytest.raises(Refused, match=why):
        v.url(url, 'url', ctx)
    assert len(ctx.refusals) == 1


def test_a_value_too_large_to_print_is_refused_and_named_by_its_kind(ctx: Context) -> None:
    with pytest.raises(Refused, match='<int too large to show> outside'):
        validate_extraction({'probe': 'pr-merged', 'args': {'repo': 'a/b', 'number': 10 ** 5000}}, ctx)
    with pytest.raises(Refused, match='half of a UTF-16 pair'):
        validate_extraction({'probe': 'path-exists', 'args': {'root': 'proj', 'path': 'a\udc80.md'}}, ctx)


class _Unreadable(str):
    """A string no parser can read: every question asked of it fails."""

    def startswith(self, *args: object) -> bool:  # type: ignore[override]
        raise UnicodeError('cannot be read')


def test_any_error_of_a_probe_s_validation_becomes_that_claim_s_refusal(ctx: Context) -> None:
    """A parser a memory's text reaches may raise anything: the claim is refused, never the run ended."""
    with pytest.raises(Refused) as excinfo:
        validate_extraction({'probe': 'path-exists', 'args': {'path': _Unreadable('notes.md')}}, ctx)
    assert excinfo.value.reason == 'path-exists: its arguments could not be read (UnicodeError: cannot be read)'
    assert ctx.refusals == [excinfo.value.reason]
