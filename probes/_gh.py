"""Shared plumbing of the GitHub probes: run ``gh`` and read what it says.

Contract: ``gh_json()`` runs ``gh <args>`` through ``run_tool`` with prompts, update notices and
colour off, and returns the parsed JSON object, or a ``ProbeResult``: ``unknown`` for a missing
``gh``, no login (exit code 4 or "gh auth login"), network trouble or unparseable output. The
two "could not resolve" answers GitHub gives are returned as ``NotFound`` for the caller to
weigh, because what absence proves differs per claim.
"""
from __future__ import annotations

import json
from typing import NamedTuple
from typing import Sequence

from .base import Context
from .base import ProbeResult
from .base import first_line
from .base import run_tool
from .base import unknown

_ENV = {
    'GH_PROMPT_DISABLED': '1', 'GH_NO_UPDATE_NOTIFIER': '1', 'GH_SPINNER_DISABLED': '1',
    'NO_COLOR': '1', 'CLICOLOR': '0', 'GH_PAGER': 'cat',
}
LOGIN = 'run `gh auth login` (or set GH_TOKEN)'


class NotFound(NamedTuple):
    what: str  # 'repository' or 'pull request'
    message: str


def gh_json(args: Sequence[str], ctx: Context) -> dict[str, object] | NotFound | ProbeResult:
    out = run_tool(('gh', *args), ctx, extra_env=_ENV)
    if isinstance(out, ProbeResult):
        return out
    if out.returncode == 4 or 'gh auth login' in out.stderr:
        return unknown(f'gh is not logged in: {LOGIN}')
    if out.returncode != 0:
        if 'Could not resolve to a PullRequest' in out.stderr:
            return NotFound('pull request', first_line(out.stderr))
        if 'Could not resolve to a Repository' in out.stderr:
            return NotFound('repository', first_line(out.stderr))
        return unknown(f'gh could not answer: {first_line(out.stderr)}')
    try:
        data = json.loads(out.stdout)
    except ValueError:
        return unknown('gh printed something other than JSON')
    if not isinstance(data, dict):
        return unknown('gh printed JSON of an unexpected shape')
    return data
