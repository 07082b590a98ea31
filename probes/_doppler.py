"""Shared plumbing of the Doppler probes: run ``doppler`` and read its errors.

Contract: ``doppler()`` runs ``doppler <args> --json --no-check-version`` through ``run_tool``
and returns its output, or a ``ProbeResult``: ``unknown`` when the CLI is missing, not logged
in ("you must provide a token", a rejected token) or cannot answer, and ``fail`` when Doppler
answers that the named project or config does not exist. With ``--json`` the CLI reports errors
on stderr as ``{"error": "..."}``.
"""
from __future__ import annotations

import json
from typing import Sequence

from .base import Context
from .base import ProbeResult
from .base import ToolOutput
from .base import failed
from .base import first_line
from .base import run_tool
from .base import unknown

LOGIN = 'run `doppler login` (or set DOPPLER_TOKEN)'
_NOT_LOGGED_IN = (
    'provide a token', 'invalid auth token', 'invalid token', 'doppler login', 'unauthorized',
)
_ENV = {'DOPPLER_ENABLE_VERSION_CHECK': 'false', 'NO_COLOR': '1'}


def error_message(stderr: str) -> str:
    try:
        data = json.loads(stderr)
    except ValueError:
        return first_line(stderr)
    if isinstance(data, dict) and isinstance(data.get('error'), str):
        return first_line(data['error'])
    return first_line(stderr)


def doppler(args: Sequence[str], ctx: Context) -> ToolOutput | ProbeResult:
    out = run_tool(('doppler', *args, '--json', '--no-check-version'), ctx, extra_env=_ENV)
    if isinstance(out, ProbeResult) or out.returncode == 0:
        return out
    message = error_message(out.stderr)
    lowered = message.lower()
    if 'could not find requested' in lowered:
        return failed(f'Doppler says: {message}')
    if any(s in lowered for s in _NOT_LOGGED_IN):
        return unknown(f'doppler is not logged in: {LOGIN}')
    return unknown(f'doppler could not answer: {message}')
