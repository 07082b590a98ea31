"""Verification probes: typed, validated checks of the claims a memory makes.

Contract: ``PROBES`` maps each probe name to its module (a ``Probe``). The model (or
``extract``) proposes ``{"probe": name, "args": {...}}``; ``validate_extraction`` turns that into
a ``ProbeSpec`` or raises ``Refused`` before anything runs; ``run(spec, ctx)`` returns a
``ProbeResult`` and never raises for an expected outcome. See ``README.md`` beside this file.
"""
from __future__ import annotations

from typing import Mapping

from . import doppler_project_exists
from . import doppler_secret_exists
from . import file_at_commit
from . import git_branch_exists
from . import git_commit_exists
from . import git_remote_branch_exists
from . import instance_exists
from . import path_exists
from . import pr_merged
from . import repo_visibility
from . import url_alive
from .base import Context
from .base import Probe
from .base import ProbeResult
from .base import ProbeSpec
from .base import Refused
from .validate import validate_extraction

PROBES: dict[str, Probe] = {
    'path-exists': path_exists,
    'git-branch-exists': git_branch_exists,
    'git-remote-branch-exists': git_remote_branch_exists,
    'git-commit-exists': git_commit_exists,
    'file-at-commit': file_at_commit,
    'pr-merged': pr_merged,
    'repo-visibility': repo_visibility,
    'doppler-project-exists': doppler_project_exists,
    'doppler-secret-exists': doppler_secret_exists,
    'instance-exists': instance_exists,
    'url-alive': url_alive,
}


def run(spec: ProbeSpec, ctx: Context) -> ProbeResult:
    """Check one validated claim."""
    return PROBES[spec.probe].check(spec.args, ctx)


def describe() -> dict[str, dict[str, object]]:
    """Each probe's arguments as a JSON-schema-like object, for the extraction prompt."""
    out: dict[str, dict[str, object]] = {}
    for probe_name, probe in PROBES.items():
        properties: dict[str, Mapping[str, object]] = {}
        for arg, spec in probe.schema.items():
            prop: dict[str, object] = {'type': spec.type, 'description': spec.description}
            if spec.enum:
                prop['enum'] = list(spec.enum)
            properties[arg] = prop
        out[probe_name] = {
            'type': 'object',
            'properties': properties,
            'required': [a for a, s in probe.schema.items() if s.required],
            'additionalProperties': False,
        }
    return out


__all__ = [
    'PROBES', 'Context', 'Probe', 'ProbeResult', 'ProbeSpec', 'Refused', 'describe', 'run',
    'validate_extraction',
]
