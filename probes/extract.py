"""A deterministic extractor: the claims a memory body makes without needing a model.

Contract: ``extract(body, root=...)`` yields raw extraction dicts, in order of first appearance
and without duplicates: ``{"probe": "url-alive", "args": {"url": ...}}`` for each http(s) URL
(bare, in ``<...>``, in a Markdown link or in backticks; a host in brackets, an IPv6 address, is
taken whole) and ``{"probe": "path-exists", "args": {"root": ..., "path": ...}}`` for each
backticked span that looks like a path (``~/...`` becomes root "home"; an absolute path is
checked only under an allowed root, see path-exists). Fenced code blocks are skipped: they hold
commands, not claims. A path the sentence says was removed (removed, deleted, dropped, is gone,
no longer exists, renamed or moved away from) gets ``"expect": "absent"``; the target of a
rename or move ("... to `new`") does not. The output is as untrusted as the body it came from:
pass each item through ``validate_extraction``.
"""
from __future__ import annotations

import re
from typing import Iterator

from .base import HOME

_FENCE = re.compile(r'^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$', re.MULTILINE | re.DOTALL)
_BACKTICKED = re.compile(r'`([^`\n]+)`')
# A URL runs to a space, quote, bracket or parenthesis; a host in brackets (an IPv6 address,
# ``http://[::1]:8080/``) is taken whole, with any userinfo before it.
_URL_CHARS = r'[^\s<>"`\')\]]'
_URL = re.compile(
    rf'https?://(?:[^\s<>"`\'()\[\]/?#@]*@)?\[[^\s<>"`\'()\[\]/?#]*\]{_URL_CHARS}*|https?://{_URL_CHARS}+',
    re.IGNORECASE,
)
_LINE_SUFFIX = re.compile(r':\d+(?::\d+)?$')
_PATHY = re.compile(r'/?[\w.@+~-]+(?:/[\w.@+ -]*)*')
_HAS_EXTENSION = re.compile(r'\.[A-Za-z0-9]{1,8}$')
_SENTENCE_END = re.compile(r'[.!?;](?:\s|$)|\n\s*\n')
_REMOVED = re.compile(r'\b(?:removed|deleted|dropped|retired|is gone|are gone|was gone|no longer exists?|'
                      r'does not exist any ?more|got rid of|renamed|moved)\b', re.IGNORECASE)
_TARGET = re.compile(r'\b(?:to|into|as)\s*$', re.IGNORECASE)


def said_removed(body: str, path: str) -> bool:
    """Whether ``body`` says ``path`` was removed (at its first backticked or bare mention)."""
    text = _FENCE.sub('', body)
    at = text.find(path)
    return at >= 0 and _said_removed(text, at, at + len(path))


def _said_removed(text: str, start: int, end: int) -> bool:
    """Whether the sentence around ``text[start:end]`` says that path was removed (not its new name)."""
    left = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    right_match = _SENTENCE_END.search(text, end)
    right = right_match.start() if right_match else len(text)
    if _TARGET.search(text[left:start]) and re.search(r'\b(?:renamed|moved)\b', text[left:start], re.IGNORECASE):
        return False  # "renamed `a` to `b`": b is the new place
    return bool(_REMOVED.search(text[left:start]) or _REMOVED.search(text[end:right]))


def _clean_url(url: str) -> str:
    return url.rstrip('.,;:!?*_')


def _as_path(span: str) -> str | None:
    """The path a backticked span names, or None when it looks like code or prose."""
    span = _LINE_SUFFIX.sub('', span.strip())
    if not span or ' ' in span or '://' in span or any(c in span for c in '*?{}$()=<>|;&'):
        return None
    if not _PATHY.fullmatch(span):
        return None
    if span.startswith(('~/', '/', './', '../')) or span.endswith('/'):
        return span
    if '/' in span and (_HAS_EXTENSION.search(span) or span.count('/') >= 2):
        return span
    return None


def extract(body: str, *, root: str) -> Iterator[dict[str, object]]:
    """Yield raw path-exists and url-alive extractions found in ``body``."""
    text = _FENCE.sub('', body)
    seen: set[tuple[str, str]] = set()
    found: list[tuple[int, str, str, bool]] = []
    for m in _URL.finditer(text):
        found.append((m.start(), 'url', _clean_url(m.group()), False))
    for m in _BACKTICKED.finditer(text):
        path = _as_path(m.group(1))
        if path is not None:
            found.append((m.start(), 'path', path, _said_removed(text, m.start(), m.end())))
    for _, kind, value, removed in sorted(found):
        if (kind, value) in seen:
            continue
        seen.add((kind, value))
        if kind == 'url':
            yield {'probe': 'url-alive', 'args': {'url': value}}
            continue
        args: dict[str, str] = {'root': HOME if value.startswith('~/') else root, 'path': value}
        if removed:
            args['expect'] = 'absent'
        yield {'probe': 'path-exists', 'args': args}
