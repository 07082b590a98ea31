"""``path-exists``: does this file or directory exist?

Contract: ``{root?: project name or "home", path}``; the path is confined to its root (or an
allowed absolute root) at validation and again, with links resolved, at check time. An
absolute or ``~/`` path needs no root: its ``root`` is ignored (canonically ``home``).
``pass`` if it exists, ``fail`` if not: a missing path is evidence. With ``expect: "absent"``
(the memory says the path was removed, deleted or renamed away) it is the other way round: the
path's absence verifies the claim, and its presence refutes it. Runs no process.
"""
from __future__ import annotations

import os.path
from typing import Mapping

from . import validate as v
from .base import HOME
from .base import ArgSpec
from .base import Args
from .base import Context
from .base import ProbeResult
from .base import Refused
from .base import failed
from .base import shown
from .base import passed
from .base import unknown

name = 'path-exists'
EXPECT = ('present', 'absent')
schema: Mapping[str, ArgSpec] = {
    'root': ArgSpec('string', f'project name, or "{HOME}" (default)', required=False),
    'path': ArgSpec('string', 'path relative to root, ~/..., or absolute under an allowed root'),
    'expect': ArgSpec('string', '"present" (default), or "absent" when the memory says the path was removed',
                      required=False, enum=EXPECT),
}


def validate(raw_args: object, ctx: Context) -> Args:
    raw = v.fields(raw_args, schema, ctx)
    if is_rootless(raw['path']):  # an absolute or ~/ path is no project's: its root is never needed
        root = HOME
    else:
        root = v.root_name(raw.get('root', HOME), 'root', ctx)
    root, path = v.confined_path(root, raw['path'], 'path', ctx)
    if v.choice(raw.get('expect', 'present'), 'expect', ctx, EXPECT) == 'absent':
        return {'root': root, 'path': path, 'expect': 'absent'}
    return {'root': root, 'path': path}


def is_rootless(path: object) -> bool:
    """An absolute or ``~``-relative path: checked wherever the run allows, whatever its root."""
    return isinstance(path, str) and path.startswith(('/', '~'))


def check(args: Args, ctx: Context) -> ProbeResult:
    path = str(args['path'])
    where = shown(path, str(args['root']))
    try:
        real = v.resolve_path(str(args['root']), str(args['path']), ctx)
    except Refused as e:
        return unknown(f'not checked: {e.reason}')
    exists = os.path.lexists(real)
    if args.get('expect') == 'absent':
        if exists:
            return failed(f'{where} still exists, though the memory says it was removed')
        return passed(f'{where} is gone, as the memory says')
    if exists:
        return passed(f'{where} exists')
    return failed(f'{where} does not exist')
