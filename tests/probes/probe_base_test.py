from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import quipu.probes
from quipu.probes import PROBES
from quipu.probes import describe
from quipu.probes.base import Context
from quipu.probes.base import LogEntry
from quipu.probes.base import run_tool

if TYPE_CHECKING:
    from conftest import Fakes


PROBES_DIR = Path(quipu.probes.__file__).parent


def test_every_probe_is_registered_under_its_own_name() -> None:
    assert sorted(PROBES) == sorted({
        'path-exists', 'git-branch-exists', 'git-remote-branch-exists', 'git-commit-exists',
        'file-at-commit', 'pr-merged', 'repo-visibility', 'doppler-project-exists',
        'doppler-secret-exists', 'instance-exists', 'url-alive',
    })
    for key, probe in PROBES.items():
        assert probe.name == key
        assert callable(probe.validate) and callable(probe.check)
        assert probe.schema


def test_every_module_states_its_contract() -> None:
    for path in sorted(PROBES_DIR.glob('*.py')):
        tree = ast.parse(path.read_text())
        assert ast.get_docstring(tree), path.name
        future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == '__future__']
        assert future and future[0].names[0].name == 'annotations', path.name


def test_only_base_starts_processes() -> None:
    for path in sorted(PROBES_DIR.glob('*.py')):
        if path.name == 'base.py':
            continue
        source = path.read_text()
        assert 'subprocess' not in source and 'os.system' not in source, path.name
        assert 'shell=True' not in source, path.name


def test_describe_gives_a_closed_schema_per_probe() -> None:
    schema = describe()
    assert schema['pr-merged']['required'] == ['repo', 'number']
    assert schema['pr-merged']['properties']['state']['enum'] == ['merged']  # type: ignore[index]
    assert all(s['additionalProperties'] is False for s in schema.values())
    json.dumps(schema)


def test_run_tool_records_the_argv_before_running(ctx: Context, fakes: Fakes) -> None:
    fakes.add('gh', stdout='gh/repo_view_public.json')
    out = run_tool(('gh', 'repo', 'view', 'a/b'), ctx)
    assert not isinstance(out, tuple) or out[0] == 0
    assert ctx.started == [('gh', 'repo', 'view', 'a/b')]
    assert fakes.argvs('gh') == [['repo', 'view', 'a/b']]


def test_run_tool_missing_tool_is_unknown_with_instructions(ctx: Context) -> None:
    out = run_tool(('doppler', 'projects'), ctx)
    assert out == ('unknown', out[1])
    assert 'doppler login' in out[1] and 'install' in out[1]
    assert ctx.started == []
    assert ctx.log[-1].kind == 'missing'


def test_run_tool_times_out_to_unknown(make_ctx, fakes: Fakes) -> None:  # type: ignore[no-untyped-def]
    fakes.add('aws', sleep=5)
    ctx = make_ctx(timeout=0.5)
    out = run_tool(('aws', 'ec2', 'describe-instances'), ctx)
    assert out[0] == 'unknown' and 'within 0.5s' in out[1]
    assert [e.kind for e in ctx.log] == ['started', 'timeout']


def test_run_tool_refuses_any_other_executable(ctx: Context) -> None:
    with pytest.raises(AssertionError):
        run_tool(('sh', '-c', 'id'), ctx)
    with pytest.raises(AssertionError):
        run_tool(('git', 'a\0b'), ctx)
    assert ctx.started == []


def test_run_tool_drops_the_callers_git_state(make_ctx, fakes: Fakes) -> None:  # type: ignore[no-untyped-def]
    fakes.add('gh', stdout='gh/repo_view_public.json')
    ctx = make_ctx(env={'GIT_DIR': '/somewhere/else/.git'})
    run_tool(('gh', 'api'), ctx)
    assert fakes.calls('gh')[0]['env']['GIT_DIR'] is None  # type: ignore[index]


def test_on_log_sees_every_entry(make_ctx) -> None:  # type: ignore[no-untyped-def]
    seen: list[LogEntry] = []
    ctx = make_ctx(on_log=seen.append)
    run_tool(('doppler', 'projects'), ctx)
    assert seen == ctx.log and len(seen) == 1
