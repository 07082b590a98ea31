"""Typed values every probe shares, and the one door to a subprocess.

Contract:
- A probe answers a claim with a ``ProbeResult``: ``pass`` (reality agrees), ``fail`` (reality
  disagrees: evidence the memory is stale) or ``unknown`` (no evidence either way: tool missing,
  not logged in, network down, timeout). Expected outcomes are results, never exceptions.
- A result's detail names a place as the claim wrote it, and a root by its name (``shown``):
  never the folder it stands for here, since a detail may be committed to a shared store.
- ``Refused`` is raised only while validating untrusted arguments, before anything runs.
- Every subprocess goes through ``run_tool``: an argv list (never a shell) whose first item is one
  of ``TOOLS``, ``stdin=DEVNULL``, a timeout, an environment without inherited ``GIT_*`` state,
  and an entry in ``Context.log`` *before* it starts. A tool absent from ``PATH`` becomes
  ``unknown`` with an instruction to install it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from dataclasses import field
from types import MappingProxyType
from typing import Callable
from typing import Literal
from typing import Mapping
from typing import NamedTuple
from typing import Protocol
from typing import Sequence
from typing import Union

Status = Literal['pass', 'fail', 'unknown']
ArgValue = Union[str, int]
Args = Mapping[str, ArgValue]

HOME = 'home'
"""The reserved root name meaning ``Context.home``; a project cannot be called this."""

INSTALL_HINTS: Mapping[str, str] = MappingProxyType({
    'git': 'install git (https://git-scm.com/downloads)',
    'gh': 'install the GitHub CLI (gh, https://cli.github.com) and run `gh auth login`',
    'doppler': (
        'install the Doppler CLI (https://docs.doppler.com/docs/install-cli) '
        'and run `doppler login`'
    ),
    'aws': (
        'install the AWS CLI (https://aws.amazon.com/cli/) and run `aws configure` '
        '(or `aws sso login`)'
    ),
})
TOOLS = frozenset(INSTALL_HINTS)
"""The only executables a probe may start."""

# Variables of the caller's git (a hook sets GIT_DIR, GIT_INDEX_FILE...) that would
# silently point ``git -C repo`` somewhere else, or inject configuration.
_GIT_ENV_KEPT = frozenset({'GIT_EXEC_PATH', 'GIT_SSL_CAINFO', 'GIT_SSL_NO_VERIFY'})
_MAX_DETAIL = 200


class ProbeResult(NamedTuple):
    status: Status
    detail: str


def passed(detail: str) -> ProbeResult:
    return ProbeResult('pass', detail)


def failed(detail: str) -> ProbeResult:
    return ProbeResult('fail', detail)


def unknown(detail: str) -> ProbeResult:
    return ProbeResult('unknown', detail)


class Refused(ValueError):
    """Untrusted arguments were rejected before anything ran; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ArgSpec(NamedTuple):
    """One argument of a probe, as a model filling it should see it."""

    type: Literal['string', 'integer']
    description: str
    required: bool = True
    enum: tuple[str, ...] = ()


class ProbeSpec(NamedTuple):
    """A probe name plus arguments that passed that probe's ``validate``."""

    probe: str
    args: Args

    @classmethod
    def create(cls, raw: object, ctx: Context) -> ProbeSpec:
        """Parse the model's untrusted ``{"probe": ..., "args": {...}}``; raise ``Refused``."""
        from .validate import validate_extraction

        return validate_extraction(raw, ctx)


class LogEntry(NamedTuple):
    kind: Literal['refused', 'started', 'missing', 'timeout', 'request']
    detail: str
    argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class Context:
    """Everything a probe may touch.

    ``roots`` maps project names to directories; the name ``"home"`` always means ``home``.
    Absolute paths are accepted only under ``allowed_roots`` (or the named root).
    ``env`` is the environment for subprocesses (``None``: inherit this process's); its
    ``PATH`` decides which tools exist. ``allow_loopback`` lets URLs reach 127.0.0.1/::1
    (tests); it is off by default. ``log`` records refusals, started argv and requests;
    ``on_log`` is called with each entry as well.
    """

    roots: Mapping[str, str]
    home: str
    allowed_roots: tuple[str, ...] = ()
    timeout: float = 10.0
    env: Mapping[str, str] | None = None
    allow_loopback: bool = False
    log: list[LogEntry] = field(default_factory=list)
    on_log: Callable[[LogEntry], None] | None = None

    def record(self, entry: LogEntry) -> None:
        self.log.append(entry)
        if self.on_log is not None:
            self.on_log(entry)

    @property
    def started(self) -> list[tuple[str, ...]]:
        return [e.argv for e in self.log if e.kind == 'started']

    @property
    def refusals(self) -> list[str]:
        return [e.detail for e in self.log if e.kind == 'refused']

    @property
    def requests(self) -> list[str]:
        return [e.detail for e in self.log if e.kind == 'request']

    def root_path(self, name: str) -> str | None:
        if name == HOME:
            return self.home
        return self.roots.get(name)


class Probe(Protocol):
    """A probe module: ``name``, ``schema``, ``validate`` and ``check``."""

    @property
    def name(self) -> str: ...

    @property
    def schema(self) -> Mapping[str, ArgSpec]: ...

    def validate(self, raw_args: object, ctx: Context) -> Args:
        """Return canonical arguments or raise ``Refused``; never starts anything."""

    def check(self, args: Args, ctx: Context) -> ProbeResult:
        """Look at reality; ``args`` came from ``validate``."""


class ToolOutput(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def shown(path: str, root: str) -> str:
    """A claim's path for a detail: as written when absolute, else with the name of its root
    (``home``, a project's name, or "the project" for a root that is a folder); the root itself
    by that name alone."""
    if os.path.isabs(path):
        return path
    name = 'the project' if os.path.isabs(root) else root
    return name if path == '.' else f'{path} (under {name})'


def first_line(text: str) -> str:
    """The first non-empty line of a tool's message, bounded, for a result's detail."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:_MAX_DETAIL]
    return '(no message)'


def tool_env(ctx: Context, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    base = os.environ if ctx.env is None else ctx.env
    env = {
        k: v for k, v in base.items()
        if not k.startswith('GIT_') or k in _GIT_ENV_KEPT
    }
    env.update(extra or {})
    return env


def run_tool(
        argv: Sequence[str],
        ctx: Context,
        *,
        extra_env: Mapping[str, str] | None = None,
) -> ToolOutput | ProbeResult:
    """Run one allowed tool; ``unknown`` if it is missing or times out."""
    argv = tuple(argv)
    if argv[0] not in TOOLS:
        raise AssertionError(f'probes may not run {argv[0]!r}')
    if not all(isinstance(a, str) and '\0' not in a for a in argv):
        raise AssertionError('argv items must be strings without NUL')
    env = tool_env(ctx, extra_env)
    exe = shutil.which(argv[0], path=env.get('PATH', os.defpath))
    hint = INSTALL_HINTS[argv[0]]
    if exe is None:
        ctx.record(LogEntry('missing', f'{argv[0]} not found on PATH', argv))
        return unknown(f'{argv[0]} is not installed: {hint}')
    ctx.record(LogEntry('started', ' '.join(argv), argv))
    try:
        proc = subprocess.run(
            (exe, *argv[1:]),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            timeout=ctx.timeout,
            check=False,
        )
    except FileNotFoundError:
        return unknown(f'{argv[0]} is not installed: {hint}')
    except PermissionError:
        return unknown(f'{argv[0]} at {exe} cannot be executed: {hint}')
    except subprocess.TimeoutExpired:
        ctx.record(LogEntry('timeout', f'{argv[0]} timed out after {ctx.timeout:g}s', argv))
        return unknown(f'{argv[0]} did not answer within {ctx.timeout:g}s')
    return ToolOutput(
        proc.returncode,
        proc.stdout.decode('utf-8', 'replace'),
        proc.stderr.decode('utf-8', 'replace'),
    )
