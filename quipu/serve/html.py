"""HTML built from literal templates with every value escaped: the viewer's template engine.

Contract:
- ``Safe`` is markup this package built; every other value that reaches a page goes through
  ``esc`` (``html.escape`` with quotes), so store text (a memory's title, a commit message, a past
  turn) is always shown as text: ``<script>``, ``onerror=`` and fence look-alikes are inert.
- ``h(template, **values)`` is the only way to make markup with values in it: the template is a
  literal of this package, each value is escaped unless it is ``Safe``. Attribute values are always
  quoted in the templates.
- ``url(path, **query)`` builds a link from a path of the viewer's own and query values; each part is
  percent-encoded, then escaped. Nothing read from a store is ever used as a whole URL: a memory's
  link fields show as text, never as ``href``.
- ``page`` wraps a body in the one layout (the stylesheet and the script served from the package,
  the CSRF token as a ``meta`` element for forms); no inline script or style anywhere.
"""
from __future__ import annotations

import difflib
import html
import re
from collections.abc import Iterable
from urllib.parse import quote, urlencode

NAV = (("/review", "Review"), ("/log", "Audit log"), ("/memories", "Memories"), ("/history", "Past conversations"),
       ("/health", "Health"))


class Safe(str):
    """Markup built by this package (already escaped)."""


def esc(value: object) -> Safe:
    if isinstance(value, Safe):
        return value
    return Safe(html.escape("" if value is None else str(value), quote=True))


def h(template: str, **values: object) -> Safe:
    return Safe(template.format(**{k: esc(v) for k, v in values.items()}))


def join(parts: Iterable[object], sep: str = "") -> Safe:
    return Safe(sep.join(esc(p) for p in parts))


def href(path: str, **query: object) -> str:
    """The viewer's own ``path`` (each segment percent-encoded) with ``query``: a URL, not yet escaped."""
    if not path.startswith("/") or path.startswith("//"):
        raise ValueError(f"not a path of the viewer: {path!r}")
    encoded = "/".join(quote(part, safe="") for part in path.split("/"))
    pairs = [(k, str(v)) for k, v in query.items() if v not in (None, "")]
    return encoded + ("?" + urlencode(pairs) if pairs else "")


def url(path: str, **query: object) -> Safe:
    """``href`` escaped for an attribute."""
    return esc(href(path, **query))


def form(action: Safe, csrf: str, label: str, *, fields: dict[str, str] | None = None, css: str = "",
         confirm: str = "") -> Safe:
    """A POST form with the CSRF token and one button; ``confirm`` asks first (app.js)."""
    hidden = join(h('<input type="hidden" name="{k}" value="{v}">', k=k, v=v) for k, v in (fields or {}).items())
    return h('<form method="post" action="{action}" class="inline"{confirm}>'
             '<input type="hidden" name="csrf" value="{csrf}">{hidden}'
             '<button type="submit" class="{css}">{label}</button></form>',
             action=action, csrf=csrf, hidden=hidden, css=css, label=label,
             confirm=h(' data-confirm="{c}"', c=confirm) if confirm else Safe(""))


def message(text: str, *, error: bool = False) -> Safe:
    """A notice: the first line as the message, further lines (``- how to fix it``) below it."""
    first, *rest = text.splitlines() or [""]
    return h('<div class="{css}" role="status"><p>{first}</p>{rest}</div>', css="error" if error else "notice",
             first=first, rest=join(h("<p>{line}</p>", line=line) for line in rest))


_WORD = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> tuple[Safe, Safe]:
    """``old`` and ``new`` with the words only one of them has marked (``del`` and ``ins``)."""
    a, b = _WORD.findall(old), _WORD.findall(new)
    left: list[Safe] = []
    right: list[Safe] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        one, other = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            left.append(esc(one))
            right.append(esc(other))
            continue
        if one:
            left.append(h("<del>{t}</del>", t=one))
        if other:
            right.append(h("<ins>{t}</ins>", t=other))
    return join(left), join(right)


def table(head: Iterable[str], rows: Iterable[Iterable[object]], css: str = "") -> Safe:
    return h('<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>', css=css,
             head=join(h("<th>{c}</th>", c=c) for c in head),
             rows=join(h("<tr>{cells}</tr>", cells=join(h("<td>{c}</td>", c=c) for c in row)) for row in rows))


def pager(path: str, page: int, more: bool, **query: object) -> Safe:
    links = []
    if page > 1:
        links.append(h('<a href="{u}" rel="prev">newer / previous</a>', u=url(path, **query, page=page - 1)))
    links.append(h("<span>page {p}</span>", p=page))
    if more:
        links.append(h('<a href="{u}" rel="next">next</a>', u=url(path, **query, page=page + 1)))
    return h('<nav class="pager">{links}</nav>', links=join(links, " "))


def page(title: str, body: Safe, *, csrf: str, here: str, store: str) -> Safe:
    nav = join(h('<a href="{u}"{cur}>{label}</a>', u=url(path), label=label,
                 cur=Safe(' aria-current="page"') if path == here else Safe("")) for path, label in NAV)
    return h(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="csrf" content="{csrf}"><title>{title} · quipu</title>'
        '<link rel="stylesheet" href="/static/style.css"><script src="/static/app.js" defer></script></head>'
        '<body><header><strong>quipu</strong> <span class="store">{store}</span><nav>{nav}</nav></header>'
        '<main><h1>{title}</h1>{body}</main></body></html>\n',
        csrf=csrf, title=title, store=store, nav=nav, body=body)
