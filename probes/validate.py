"""Validation of the untrusted arguments a model (or the extractor) fills for a probe.

Contract: every function here either returns a canonical value or calls ``refuse``, which
records the reason in ``ctx.log`` and raises ``Refused``. Nothing here starts a process or
opens a connection; the only filesystem access is ``realpath`` for path confinement.

Rules, all applied before a probe runs:
- strings: non-empty, bounded, no control characters (NUL, newlines, bidi marks) or lone
  surrogates, no shell substitution (``$(``, ``${``, backtick), no leading ``-`` (option
  injection), no padding;
- identifiers (owner/repo, branches, shas, Doppler names, AWS ids and regions) match a pattern;
- objects: exactly the schema's fields, each of the schema's JSON type (``true`` is no integer);
- paths: relative to a named project root or ``~``, ``..`` may not escape, absolute paths only
  under ``ctx.allowed_roots`` or the named root, symlinks resolved before the check;
- URLs: http(s) only, no userinfo, a port in range, no link-local, metadata, private or reserved
  address literal, IPv4 or IPv6 in brackets (loopback only when ``ctx.allow_loopback``; an IPv6
  address that carries an IPv4 one, mapped, compatible, 6to4, Teredo or NAT64, is judged by that
  IPv4 address too), no ``localhost`` (or IPv6 alias) or metadata host name;
- a claim no parser can read (a URL Python's parser rejects, a number too long to print, a
  character a path cannot hold) is refused like any other: ``validate_extraction`` turns every
  error of a probe's validation into ``Refused``, so one claim never stops the others.
"""
from __future__ import annotations

import ipaddress
import os.path
import posixpath
import re
import socket
import urllib.parse
from types import MappingProxyType
from typing import Iterable
from typing import Mapping
from typing import NoReturn

from .base import HOME
from .base import ArgSpec
from .base import Context
from .base import LogEntry
from .base import ProbeSpec
from .base import Refused

MAX_TEXT = 512
MAX_LONG_TEXT = 2048  # paths and URLs

# C0/C1 controls (NUL, newlines, ESC), zero-width and bidi marks, line separators, BOM
_CONTROL = re.compile(r'[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]')
_SURROGATE = re.compile(r'[\ud800-\udfff]')
_SHELL_SUBST = ('$(', '${', '`')
_BRACKETED = re.compile(r'\[[^\[\]]*\](?::[0-9]*)?')  # the whole netloc around an IPv6 address
_SHELL_META = frozenset(';|&$<>`\\')
_URL_FORBIDDEN = frozenset(' <>"{}|\\^`')

GH_REPO = re.compile(r'[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}/[A-Za-z0-9._-]{1,100}')
SHA = re.compile(r'[0-9a-fA-F]{7,64}')
DOPPLER_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]{0,79}')
DOPPLER_SECRET = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,255}')
AWS_INSTANCE_ID = re.compile(r'i-[0-9a-f]{8,17}')
AWS_REGION = re.compile(r'[a-z]{2}(?:-[a-z]+){1,3}-[0-9]{1,2}')
_LABEL = r'[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?'
_HOST_NAME = re.compile(rf'{_LABEL}(?:\.{_LABEL})*')
_BRANCH_BAD = frozenset(' ~^:?*[\\') | _SHELL_META

METADATA_HOSTS = frozenset({
    'metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data',
    'instance-data.ec2.internal', 'metadata.azure.com', 'metadata.tencentyun.com',
})
LOOPBACK_HOSTS = frozenset({
    'localhost', 'localhost6', 'ip6-localhost', 'ip6-loopback', 'localhost.localdomain',
    'localhost6.localdomain6',
})
# IPv6 prefixes whose last 32 bits are an IPv4 address a packet may end up at: IPv4-compatible
# (deprecated), IPv4-translated (SIIT) and the NAT64 prefixes. Mapped, 6to4 and Teredo addresses
# have their own properties in ``ipaddress``.
_IPV4_CARRIERS = tuple(
    ipaddress.IPv6Network(n) for n in ('::/96', '::ffff:0:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48')
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ('169.254.169.254', '169.254.170.2', 'fd00:ec2::254', '100.100.100.200')
)


def refuse(ctx: Context, reason: str) -> NoReturn:
    ctx.record(LogEntry('refused', reason))
    raise Refused(reason)


def _show(value: object) -> str:
    """A bounded, printable rendering of a hostile value for a refusal reason."""
    try:
        text = repr(value)
    except (ValueError, RecursionError, MemoryError):  # an integer of 5,000 digits, a deep nest
        text = f'<{type(value).__name__} too large to show>'
    return text if len(text) <= 60 else f'{text[:57]}...'


def _error(exc: BaseException) -> str:
    """What a parser said about a value, bounded, for a refusal reason."""
    try:
        said = str(exc)
    except Exception:  # noqa: BLE001 - the message itself cannot be made: its kind says enough
        said = ''
    said = _SURROGATE.sub(' ', _CONTROL.sub(' ', said))
    said = said if len(said) <= 120 else f'{said[:117]}...'
    return f'{type(exc).__name__}: {said}' if said else type(exc).__name__


def text(value: object, field: str, ctx: Context, *, max_len: int = MAX_TEXT) -> str:
    if not isinstance(value, str):
        refuse(ctx, f'{field}: expected a string, got {type(value).__name__}')
    if not value:
        refuse(ctx, f'{field}: empty')
    if len(value) > max_len:
        refuse(ctx, f'{field}: {len(value)} characters, more than {max_len}')
    if _CONTROL.search(value):
        refuse(ctx, f'{field}: control character (NUL, newline, invisible mark) in {_show(value)}')
    if _SURROGATE.search(value):
        refuse(ctx, f'{field}: half of a UTF-16 pair, which is no character, in {_show(value)}')
    if any(s in value for s in _SHELL_SUBST):
        refuse(ctx, f'{field}: shell substitution in {_show(value)}')
    if value.startswith('-'):
        refuse(ctx, f'{field}: starts with "-" (would read as an option): {_show(value)}')
    if value != value.strip():
        refuse(ctx, f'{field}: leading or trailing whitespace in {_show(value)}')
    return value


def _no_shell_meta(value: str, field: str, ctx: Context) -> str:
    if _SHELL_META.intersection(value):
        refuse(ctx, f'{field}: shell metacharacter in {_show(value)}')
    return value


def identifier(value: object, field: str, ctx: Context, pattern: re.Pattern[str], what: str) -> str:
    v = text(value, field, ctx)
    if not pattern.fullmatch(v):
        refuse(ctx, f'{field}: not {what}: {_show(v)}')
    return v


def integer(value: object, field: str, ctx: Context, *, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(ctx, f'{field}: expected an integer, got {type(value).__name__}')
    if not lo <= value <= hi:
        refuse(ctx, f'{field}: {_show(value)} outside {lo}..{hi}')
    return value


def choice(value: object, field: str, ctx: Context, options: Iterable[str]) -> str:
    v = text(value, field, ctx).lower()
    allowed = tuple(options)
    if v not in allowed:
        refuse(ctx, f'{field}: {_show(value)} is not one of {", ".join(allowed)}')
    return v


def fields(raw: object, schema: Mapping[str, ArgSpec], ctx: Context) -> dict[str, object]:
    """Check the shape of an args object: a JSON object with exactly the schema's fields."""
    if not isinstance(raw, dict):
        refuse(ctx, f'args: expected an object, got {type(raw).__name__}')
    for key in raw:
        if not isinstance(key, str) or key not in schema:
            refuse(ctx, f'args: unknown field {_show(key)}')
    for key, spec in schema.items():
        if key not in raw:
            if spec.required:
                refuse(ctx, f'args: missing field {key!r}')
            continue
        value = raw[key]
        if spec.type == 'integer':
            if isinstance(value, bool) or not isinstance(value, int):
                refuse(ctx, f'{key}: expected an integer, got {type(value).__name__}')
        elif not isinstance(value, str):
            refuse(ctx, f'{key}: expected a string, got {type(value).__name__}')
    return dict(raw)


# -- identifiers ---------------------------------------------------------------------------

def gh_repo(value: object, field: str, ctx: Context) -> str:
    v = identifier(value, field, ctx, GH_REPO, 'owner/name')
    if v.split('/')[1] in ('.', '..'):
        refuse(ctx, f'{field}: not owner/name: {_show(v)}')
    return v


def sha(value: object, field: str, ctx: Context) -> str:
    return identifier(value, field, ctx, SHA, 'a commit sha (7 to 64 hex digits)').lower()


def branch(value: object, field: str, ctx: Context) -> str:
    """A branch name under the rules of ``git check-ref-format --branch``, stricter."""
    v = text(value, field, ctx, max_len=255)
    if v.startswith('refs/heads/'):
        v = v[len('refs/heads/'):]
    bad = _BRANCH_BAD.intersection(v)
    if (
            bad or not v or v == '@' or '..' in v or '@{' in v or '//' in v
            or v.startswith('/') or v.endswith('/') or v.endswith('.')
            or any(c.startswith('.') or c.endswith('.lock') for c in v.split('/'))
    ):
        refuse(ctx, f'{field}: not a valid branch name: {_show(value)}')
    return v


def doppler_name(value: object, field: str, ctx: Context) -> str:
    return identifier(value, field, ctx, DOPPLER_NAME, 'a Doppler project or config name')


def doppler_secret(value: object, field: str, ctx: Context) -> str:
    return identifier(value, field, ctx, DOPPLER_SECRET, 'a Doppler secret name').upper()


def aws_instance_id(value: object, field: str, ctx: Context) -> str:
    return identifier(value, field, ctx, AWS_INSTANCE_ID, 'an EC2 instance id (i-...)')


def aws_region(value: object, field: str, ctx: Context) -> str:
    return identifier(value, field, ctx, AWS_REGION, 'an AWS region name')


# -- paths ---------------------------------------------------------------------------------

def root_name(value: object, field: str, ctx: Context) -> str:
    v = text(value, field, ctx)
    if ctx.root_path(v) is None:
        refuse(ctx, f'{field}: unknown root {_show(v)} (use "{HOME}" or a project name)')
    return v


def _within(path: str, base: str) -> bool:
    try:
        return os.path.commonpath((path, base)) == base
    except ValueError:
        return False


def resolve_path(root: str, path: str, ctx: Context, field: str = 'path') -> str:
    """The real absolute path for a canonical ``(root, path)``; refuse if it escapes.

    Symlinks are resolved before the confinement check, so a link inside a project that
    points outside of it is refused too.
    """
    base = ctx.root_path(root)
    if base is None:
        refuse(ctx, f'{field}: unknown root {_show(root)}')
    bases = [base, *ctx.allowed_roots] if os.path.isabs(path) else [base]
    candidate = os.path.normpath(os.path.join(base, path))
    if not any(_within(candidate, os.path.normpath(b)) for b in bases):
        refuse(ctx, f'{field}: {_show(path)} is outside the allowed roots')
    real = os.path.realpath(candidate)
    if not any(_within(real, os.path.realpath(b)) for b in bases):
        refuse(ctx, f'{field}: {_show(path)} resolves (through a link) outside the allowed roots')
    return real


def confined_path(root: str, value: object, field: str, ctx: Context) -> tuple[str, str]:
    """Canonical ``(root, path)`` for a path relative to ``root``, ``~/...`` or absolute."""
    v = _no_shell_meta(text(value, field, ctx, max_len=MAX_LONG_TEXT), field, ctx)
    if v == '~' or v.startswith('~/'):
        root, v = HOME, v[2:] or '.'
    elif v.startswith('~'):
        refuse(ctx, f'{field}: another user\'s home: {_show(v)}')
    path = os.path.normpath(v)
    if path == '..' or path.startswith('../'):
        refuse(ctx, f'{field}: {_show(v)} climbs out of its root with ".."')
    resolve_path(root, path, ctx, field)
    return root, path


def repo_relative_path(value: object, field: str, ctx: Context) -> str:
    """A path inside a git tree (for ``<commit>:<path>``): relative, no escape."""
    v = _no_shell_meta(text(value, field, ctx, max_len=MAX_LONG_TEXT), field, ctx)
    path = posixpath.normpath(v)
    if v.startswith('/') or path == '.' or path == '..' or path.startswith('../'):
        refuse(ctx, f'{field}: not a path inside the repository: {_show(v)}')
    return path


# -- URLs ----------------------------------------------------------------------------------

def _ip_literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host string denotes by itself, including ``2852039166``/``0xa9.0xfe...``."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if re.fullmatch(r'[0-9a-fA-FxX.]+', host) and re.search(r'[0-9]', host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def address_refusal(
        addr: ipaddress.IPv4Address | ipaddress.IPv6Address,
        ctx: Context,
        *,
        allow_private: bool = False,
) -> str | None:
    """Why a connection to ``addr`` is not allowed, or ``None``.

    ``allow_private`` is for addresses a host *name* resolved to (an intranet wiki is a fair
    claim); a private address written as a literal is refused, and so is a reserved or
    site-local IPv6 one. An IPv6 address that carries an IPv4 address (``embedded_ipv4``) is
    refused when that IPv4 address would be.
    """
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if addr in METADATA_ADDRESSES:
        return f'{addr} is a cloud metadata address'
    if addr.is_link_local:
        return f'{addr} is link-local'
    if addr.is_unspecified:
        return f'{addr} is unspecified (it reaches this machine)'
    if addr.is_loopback:
        return None if ctx.allow_loopback else f'{addr} is loopback'
    inner = embedded_ipv4(addr) if isinstance(addr, ipaddress.IPv6Address) else None
    if inner is not None:
        why = address_refusal(inner, ctx, allow_private=allow_private)
        if why is not None:
            return f'{addr} carries the IPv4 address {inner}, and {why}'
    odd = isinstance(addr, ipaddress.IPv6Address) and (addr.is_reserved or addr.is_site_local)
    if (not addr.is_global or odd) and not allow_private:
        return f'{addr} is private or reserved'
    return None


def embedded_ipv4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (6to4, Teredo client, compatible, NAT64), or None."""
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr.teredo is not None:
        return addr.teredo[1]
    if any(addr in net for net in _IPV4_CARRIERS):
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


def url(
        value: object,
        field: str,
        ctx: Context,
        *,
        schemes: tuple[str, ...] = ('http', 'https'),
) -> str:
    v = text(value, field, ctx, max_len=MAX_LONG_TEXT)
    if _URL_FORBIDDEN.intersection(v) or not v.isascii():
        refuse(ctx, f'{field}: characters a URL may not hold unencoded: {_show(v)}')
    try:
        parts = urllib.parse.urlsplit(v)
        parts.hostname  # noqa: B018 - raises ValueError on a malformed host in brackets
    except ValueError as e:
        refuse(ctx, f'{field}: not a URL ({_error(e)}): {_show(v)}')
    if parts.scheme.lower() not in schemes:
        scheme = parts.scheme or '(none)'
        refuse(ctx, f'{field}: scheme {scheme!r} not allowed (only {", ".join(schemes)})')
    if '@' in parts.netloc:
        refuse(ctx, f'{field}: credentials (userinfo) in a URL: {_show(v)}')
    try:
        _ = parts.port  # raises ValueError on a bad port
    except ValueError:
        refuse(ctx, f'{field}: bad port (not a number from 0 to 65535) in {_show(v)}')
    host = (parts.hostname or '').rstrip('.')
    if not host:
        refuse(ctx, f'{field}: no host in {_show(v)}')
    if '%' in host:
        refuse(ctx, f'{field}: zone or encoded host in {_show(v)}')
    addr = _ip_literal(host)
    bracketed = '[' in parts.netloc or ']' in parts.netloc
    if bracketed and not (isinstance(addr, ipaddress.IPv6Address) and _BRACKETED.fullmatch(parts.netloc)):
        refuse(ctx, f'{field}: brackets hold no IPv6 address (and an optional port) in {_show(v)}')
    if addr is not None:
        why = address_refusal(addr, ctx)
        if why is not None:
            refuse(ctx, f'{field}: {why}')
        return v
    if not _HOST_NAME.fullmatch(host):
        refuse(ctx, f'{field}: not a host name: {_show(host)}')
    if host in METADATA_HOSTS:
        refuse(ctx, f'{field}: {host} is a cloud metadata host')
    if (host in LOOPBACK_HOSTS or host.endswith('.localhost')) and not ctx.allow_loopback:
        refuse(ctx, f'{field}: {host} is loopback')
    return v


def remote(root: str, value: object, field: str, ctx: Context) -> tuple[str, str]:
    """A git remote: an ``https://`` URL, or a local repository path (confined)."""
    v = text(value, field, ctx, max_len=MAX_LONG_TEXT)
    if v.lower().startswith('https://'):
        return root, url(v, field, ctx, schemes=('https',))
    if '://' in v or re.match(r'[^/]*:', v):
        refuse(ctx, f'{field}: only https:// remotes or local paths: {_show(v)}')
    return confined_path(root, v, field, ctx)


# -- the extraction boundary ---------------------------------------------------------------

def validate_extraction(raw: object, ctx: Context) -> ProbeSpec:
    """Turn the model's untrusted ``{"probe": name, "args": {...}}`` into a ``ProbeSpec``."""
    from . import PROBES

    if not isinstance(raw, dict):
        refuse(ctx, f'extraction: expected an object, got {type(raw).__name__}')
    extra = [k for k in raw if k not in ('probe', 'args')]
    if extra:
        refuse(ctx, f'extraction: unknown field {_show(extra[0])}')
    name = raw.get('probe')
    if not isinstance(name, str):
        refuse(ctx, f'extraction: probe must be a string, got {type(name).__name__}')
    if name not in PROBES:
        refuse(ctx, f'extraction: unknown probe {_show(name)}')
    if 'args' not in raw:
        refuse(ctx, 'extraction: missing field \'args\'')
    try:
        args = PROBES[name].validate(raw['args'], ctx)
    except Refused:
        raise
    except Exception as e:  # noqa: BLE001 - what a memory says may break a parser; it is refused alone
        refuse(ctx, f'{name}: its arguments could not be read ({_error(e)})')
    return ProbeSpec(name, MappingProxyType(dict(args)))
