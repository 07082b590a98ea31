from __future__ import annotations

import os
from pathlib import Path

import pytest

from quipu.probes import path_exists
from quipu.probes import run
from quipu.probes import validate_extraction
from quipu.probes.base import Context
from quipu.probes.base import Refused


def _check(ctx: Context, **args: object) -> tuple[str, str]:
    spec = validate_extraction({'probe': 'path-exists', 'args': args}, ctx)
    return run(spec, ctx)


def test_existing_file_in_project_passes(ctx: Context, project: Path) -> None:
    (project / 'docs').mkdir()
    (project / 'docs' / 'cli.md').write_text('x')
    assert _check(ctx, root='proj', path='docs/cli.md').status == 'pass'
    assert _check(ctx, root='proj', path='docs').status == 'pass'


def test_missing_path_fails(ctx: Context) -> None:
    result = _check(ctx, root='proj', path='docs/gone.md')
    assert result.status == 'fail'
    assert 'docs/gone.md' in result.detail


def test_home_is_the_default_root_and_tilde_means_home(ctx: Context, home: Path) -> None:
    (home / 'notes.md').write_text('x')
    assert _check(ctx, path='notes.md').status == 'pass'
    spec = validate_extraction({'probe': 'path-exists', 'args': {'root': 'proj', 'path': '~/notes.md'}}, ctx)
    assert dict(spec.args) == {'root': 'home', 'path': 'notes.md'}
    assert run(spec, ctx).status == 'pass'


def test_dotdot_inside_the_root_is_normalised(ctx: Context, project: Path) -> None:
    (project / 'a').mkdir()
    (project / 'b.txt').write_text('x')
    spec = validate_extraction({'probe': 'path-exists', 'args': {'root': 'proj', 'path': 'a/../b.txt'}}, ctx)
    assert spec.args['path'] == 'b.txt'


def test_absolute_path_only_under_allowed_roots(make_ctx, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    other = tmp_path / 'other'
    other.mkdir()
    (other / 'f').write_text('x')
    with pytest.raises(Refused):
        _check(make_ctx(), path=str(other / 'f'))
    allowed = make_ctx(allowed_roots=(str(other),))
    assert _check(allowed, path=str(other / 'f')).status == 'pass'
    assert _check(allowed, path=str(other / 'nope')).status == 'fail'


def test_an_absolute_path_needs_no_project_root(make_ctx, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 12: a memory of a project with no folder in this run still has its absolute paths checked."""
    other = tmp_path / 'other'
    other.mkdir()
    allowed = make_ctx(allowed_roots=(str(other),))
    spec = validate_extraction({'probe': 'path-exists', 'args': {'root': 'no-folder', 'path': str(other / 'gone')}}, allowed)
    assert dict(spec.args) == {'root': 'home', 'path': str(other / 'gone')}
    assert run(spec, allowed) == ('fail', f'{other}/gone does not exist')


def test_symlink_out_of_the_root_is_refused(ctx: Context, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'secret').write_text('x')
    (project / 'link').symlink_to(outside)
    with pytest.raises(Refused, match='through a link'):
        _check(ctx, root='proj', path='link/secret')
    assert any('through a link' in r for r in ctx.refusals)


def test_symlink_inside_the_root_is_followed(ctx: Context, project: Path) -> None:
    (project / 'real').mkdir()
    (project / 'real' / 'f').write_text('x')
    (project / 'alias').symlink_to(project / 'real')
    assert _check(ctx, root='proj', path='alias/f').status == 'pass'


def test_link_swapped_after_validation_is_not_followed(ctx: Context, project: Path, tmp_path: Path) -> None:
    (project / 'd').mkdir()
    spec = validate_extraction({'probe': 'path-exists', 'args': {'root': 'proj', 'path': 'd/passwd'}}, ctx)
    (project / 'd').rmdir()
    (project / 'd').symlink_to('/etc')
    result = run(spec, ctx)
    assert result.status == 'unknown'
    assert 'not checked' in result.detail


def test_unknown_root_is_refused(ctx: Context) -> None:
    with pytest.raises(Refused, match='unknown root'):
        path_exists.validate({'root': 'elsewhere', 'path': 'x'}, ctx)


def test_path_exists_starts_no_process(ctx: Context, project: Path) -> None:
    (project / 'f').write_text('x')
    _check(ctx, root='proj', path='f')
    _check(ctx, root='proj', path='g')
    assert ctx.started == []
    assert os.listdir(project) == ['f']
