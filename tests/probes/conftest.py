"""Fixtures for the probe tests: real git repositories, real files, and fake CLIs.

The fakes (``gh``, ``doppler``, ``aws``) are small Python scripts written into a tmp ``bin``
directory that is first (and, with a link to the real git, only) on the ``PATH`` of the
``Context``. Each appends its argv and a few environment variables to ``<name>.log`` and answers
with recorded output from ``fixtures/``, the way the real CLI does.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable
from typing import Iterator

import pytest

try:
    import quipu  # noqa: F401
except ModuleNotFoundError:  # a checkout run without an install: make ``quipu`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from quipu.probes.base import Context

FIXTURES = Path(__file__).parent / 'fixtures'
GIT = shutil.which('git')
GIT_ENV = {
    'GIT_AUTHOR_NAME': 'Quipu Test', 'GIT_AUTHOR_EMAIL': 'test@quipu.invalid',
    'GIT_COMMITTER_NAME': 'Quipu Test', 'GIT_COMMITTER_EMAIL': 'test@quipu.invalid',
}
_LOGGED_ENV = (
    'GIT_DIR', 'GIT_TERMINAL_PROMPT', 'GIT_ALLOW_PROTOCOL', 'GH_PROMPT_DISABLED',
    'AWS_PAGER', 'AWS_CLI_AUTO_PROMPT',
)

_FAKE = '''#!{python} -I
import json, os, sys, time
with open({log!r}, 'a') as f:
    f.write(json.dumps({{'argv': sys.argv[1:], 'env': {{k: os.environ.get(k) for k in {env!r}}}}}) + '\\n')
time.sleep({sleep!r})
if {stdout!r}:
    sys.stdout.write(open({stdout!r}).read())
sys.stderr.write({stderr!r})
sys.exit({code!r})
'''


def git(cwd: Path, *args: str) -> str:
    """Run the real git CLI (a test setup step, not a probe)."""
    env = {**os.environ, **GIT_ENV, 'HOME': str(cwd)}
    env = {k: v for k, v in env.items() if k not in ('GIT_DIR', 'GIT_INDEX_FILE', 'GIT_WORK_TREE')}
    proc = subprocess.run(
        ('git', '-c', 'init.defaultBranch=main', '-c', 'protocol.file.allow=always', *args),
        cwd=cwd, env=env, check=True, capture_output=True, text=True,
    )
    return proc.stdout.strip()


class Fakes:
    """Writes fake CLIs into ``bin_dir`` and reads what they were called with."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir

    def add(
            self,
            name: str,
            *,
            stdout: str | None = None,
            stderr: str = '',
            code: int = 0,
            sleep: float = 0,
    ) -> Path:
        """A fake ``name`` printing ``fixtures/<stdout>`` and ``stderr`` (text or a fixture)."""
        if stderr and (FIXTURES / stderr).is_file():
            stderr = (FIXTURES / stderr).read_text()
        script = self.bin_dir / name
        script.write_text(_FAKE.format(
            python=sys.executable, log=str(self.log_path(name)), env=_LOGGED_ENV, sleep=sleep,
            stdout=str(FIXTURES / stdout) if stdout else '', stderr=stderr, code=code,
        ))
        script.chmod(0o755)
        return script

    def log_path(self, name: str) -> Path:
        return self.bin_dir / f'{name}.log'

    def calls(self, name: str) -> list[dict[str, object]]:
        path = self.log_path(name)
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def argvs(self, name: str) -> list[list[str]]:
        return [c['argv'] for c in self.calls(name)]  # type: ignore[misc]


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    bin_dir = tmp_path / 'fakebin'
    bin_dir.mkdir()
    return Fakes(bin_dir)


@pytest.fixture
def tools_dir(tmp_path: Path) -> Path:
    """A PATH entry holding only the real git."""
    d = tmp_path / 'tools'
    d.mkdir()
    assert GIT is not None, 'these tests need git'
    (d / 'git').symlink_to(GIT)
    return d


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / 'proj'
    p.mkdir()
    return p


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / 'home'  # tests/conftest.py may have made it already (QUIPU_HOME lives there)
    h.mkdir(exist_ok=True)
    return h


@pytest.fixture
def git_cli() -> Callable[..., str]:
    return git


MakeCtx = Callable[..., Context]


@pytest.fixture
def make_ctx(fakes: Fakes, tools_dir: Path, project: Path, home: Path) -> Iterator[MakeCtx]:
    def make(**kw: object) -> Context:
        env = {'PATH': f'{fakes.bin_dir}{os.pathsep}{tools_dir}', 'HOME': str(home), 'LANG': 'C'}
        env.update(kw.pop('env', {}))  # type: ignore[arg-type]
        defaults: dict[str, object] = {
            'roots': {'proj': str(project)}, 'home': str(home), 'env': env, 'timeout': 10.0,
        }
        defaults.update(kw)
        return Context(**defaults)  # type: ignore[arg-type]

    yield make


@pytest.fixture
def ctx(make_ctx: MakeCtx) -> Context:
    return make_ctx()


@pytest.fixture
def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    import socket

    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])
