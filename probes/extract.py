"""A deterministic extractor: the claims a memory body makes without needing a model.

Contract: ``extract(body, root=...)`` yields raw extraction dicts, in order of first appearance
and without duplicates: ``{"probe": "url-alive", "args": {"url": ...}}`` for each http(s) URL
(bare, in ``<...>``, in a Markdown link or in backticks) and ``{"probe": "path-exists", "args":
{"root": ..., "path": ...}}`` for each backticked span that looks like a path (``~/...`` becomes
root "home"; an absolute path is checked only under an allowed root, see path-exists). Fenced code blocks are skipped: they hold commands, not claims. The output is as
untrusted as the body it came from: pass each item through ``validate_extraction``.
"""
from __future__ import annotations

import re
from typing import Iterator

from .base import HOME

_FENCE = re.compile(r'^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$', re.MULTILINE | re.DOTALL)
_BACKTICKED = re.compile(r'`([^`\n]+)`')
_URL = re.compile(r'https?://[^\s<>"`\')\]]+', re.IGNORECASE)
_LINE_SUFFIX = re.compile(r':\d+(?::\d+)?$')
_PATHY = re.compile(r'/?[\w.@+~-]+(?:/[\w.@+ -]*)*')
_HAS_EXTENSION = re.compile(r'\.[A-Za-z0-9]{1,8}$')


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
    found: list[tuple[int, str, str]] = []
    for m in _URL.finditer(text):
        found.append((m.start(), 'url', _clean_url(m.group())))
    for m in _BACKTICKED.finditer(text):
        path = _as_path(m.group(1))
        if path is not None:
            found.append((m.start(), 'path', path))
    for _, kind, value in sorted(found):
        if (kind, value) in seen:
            continue
        seen.add((kind, value))
        if kind == 'url':
            yield {'probe': 'url-alive', 'args': {'url': value}}
        elif value.startswith('~/'):
            yield {'probe': 'path-exists', 'args': {'root': HOME, 'path': value}}
        else:
            yield {'probe': 'path-exists', 'args': {'root': root, 'path': value}}
