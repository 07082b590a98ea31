"""The real Claude Code CLI for tests: installed from the npm registry once, run offline against a fake API.

``install()`` puts ``@anthropic-ai/claude-code@<version>`` into ``<cache>/claude-code-<version>``
(``npm install`` with a lock, so parallel runs install once; a later run reuses the folder). The
version is ``CLAUDE_CODE_VERSION`` unless ``QUIPU_CLAUDE_CODE_VERSION`` names another; the cache is
``QUIPU_TEST_CACHE``, else ``.test-cache`` in the repository (git-ignored).

``Sandbox`` is one isolated user of the client: a temporary ``HOME`` and ``CLAUDE_CONFIG_DIR``
holding a subscription login (an OAuth credentials file, the way ``/login`` leaves it; the token
means nothing anywhere but the fake), and an environment with ``ANTHROPIC_BASE_URL`` and the
OAuth endpoint on the fake Messages API and every proxy variable on it too, so a connection to
anywhere else arrives at the fake and is recorded instead of leaving the machine. Nothing of the
machine's own Claude Code settings, credentials or transcripts is read or written.

``python -m testing.claude_code install --require`` installs it, and fails without npm (CI runs it
before the tests; the tests install it themselves too, and skip without npm).
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from testing.fake_messages_api import FakeMessagesAPI

CLAUDE_CODE_VERSION = "2.1.332"
VERSION_SETTING = "QUIPU_CLAUDE_CODE_VERSION"
CACHE_SETTING = "QUIPU_TEST_CACHE"
PACKAGE = "@anthropic-ai/claude-code"
REPO_ROOT = Path(__file__).resolve().parent.parent
OAUTH_TOKEN = "sk-ant-oat01-fake-subscription-token-for-the-loopback-api"
RUN_TIMEOUT = 180.0
INSTALL_TIMEOUT = 600.0


class NpmMissing(RuntimeError):
    """npm is not on PATH, so the client cannot be installed."""


class InstallFailed(RuntimeError):
    """npm ran but left no working client."""


def version() -> str:
    return os.environ.get(VERSION_SETTING, "").strip() or CLAUDE_CODE_VERSION


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_SETTING, "").strip()
    return Path(configured).expanduser().resolve() if configured else REPO_ROOT / ".test-cache"


def _installed_version(exe: Path) -> str | None:
    if not os.access(exe, os.X_OK):
        return None
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "DISABLE_AUTOUPDATER": "1"}).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.split()[0] if out.split() else None


def install(wanted: str | None = None) -> Path:
    """The path of the ``claude`` executable of version ``wanted`` (default ``version()``), installing it once."""
    return npm_install(PACKAGE, wanted or version(), "claude-code", "claude", _installed_version)


def npm_install(package: str, wanted: str, folder: str, binary: str,
                installed_version: Callable[[Path], str | None]) -> Path:
    """``npm install package@wanted`` into ``<cache>/<folder>-<wanted>`` once (under a lock); its ``binary``."""
    prefix = cache_dir() / f"{folder}-{wanted}"
    exe = prefix / "node_modules" / ".bin" / binary
    if installed_version(exe) == wanted:
        return exe
    npm = shutil.which("npm")
    if npm is None:
        raise NpmMissing("npm is not on PATH: install Node.js and npm to run the tests through the real "
                         f"client ({package}@{wanted})")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / f"{folder}-{wanted}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_version(exe) != wanted:
            (prefix / "package.json").write_text(f'{{"name": "quipu-test-{folder}", "private": true}}\n')
            result = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(prefix),
                 f"{package}@{wanted}"], capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
            found = installed_version(exe)
            if found != wanted:
                raise InstallFailed(f"npm install {package}@{wanted} left {found or 'no client'} in {prefix}: "
                                    f"{(result.stderr or result.stdout)[-2000:]}")
    return exe


@dataclass(frozen=True)
class Sandbox:
    """One throw-away Claude Code user: its home, config folder and environment."""

    exe: Path
    home: Path
    api: FakeMessagesAPI
    env: Mapping[str, str]

    @property
    def config_dir(self) -> Path:
        return Path(self.env["CLAUDE_CONFIG_DIR"])

    @classmethod
    def create(cls, exe: Path, home: Path, api: FakeMessagesAPI, *, logged_in: bool = True,
               extra: Mapping[str, str] | None = None) -> Sandbox:
        config = home / "claude-config"  # not ~/.claude: what reads the default place instead is caught
        config.mkdir(parents=True, exist_ok=True)
        if logged_in:
            log_in(config)
        # The interpreter quipu runs under first, then the client, then the machine's own PATH.
        path = os.pathsep.join([str(Path(sys.executable).parent), str(exe.parent), os.environ.get("PATH", "")])
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("ANTHROPIC_", "CLAUDE", "QUIPU_")) and key.upper() not in _PROXY_KEYS}
        env.update({
            "PATH": path, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config),
            "ANTHROPIC_BASE_URL": api.base_url, "CLAUDE_CODE_CUSTOM_OAUTH_URL": api.base_url,
            "HTTPS_PROXY": api.base_url, "HTTP_PROXY": api.base_url, "ALL_PROXY": api.base_url,
            "https_proxy": api.base_url, "http_proxy": api.base_url, "all_proxy": api.base_url,
            "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "QUIPU_HOME": str(home / ".quipu-home"),
            # A session's hooks start quipu workers that outlive the client: once the test has
            # stopped the fake API, their `claude -p` would retry for minutes before giving up.
            "QUIPU_MODEL_TIMEOUT": "30",
        })
        env.update(extra or {})
        return cls(exe, home, api, env)

    def run(self, args: Sequence[str], *, cwd: Path, input: str | None = None,
            env: Mapping[str, str] | None = None, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Run the real client (``claude ARGS``) in ``cwd``."""
        return subprocess.run([str(self.exe), *args], cwd=cwd, input=input, capture_output=True, text=True,
                              env={**self.env, **(env or {})}, timeout=timeout)

    def prompt(self, text: str, *, cwd: Path, args: Sequence[str] = (), session_id: str | None = None,
               resume: str | None = None, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``claude -p TEXT`` as a person would run it (hooks and session file on)."""
        extra = [*args]
        if session_id:
            extra += ["--session-id", session_id]
        if resume:
            extra += ["--resume", resume]
        return self.run(["-p", *extra, text], cwd=cwd, env=env)

    def transcripts(self) -> list[Path]:
        return sorted((self.config_dir / "projects").glob("*/*.jsonl"))


_PROXY_KEYS = {"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"}


def log_in(config_dir: Path) -> Path:
    """Leave the credentials a subscription ``/login`` leaves, with a token that only the fake accepts."""
    path = config_dir / ".credentials.json"
    expires = int((time.time() + 365 * 24 * 3600) * 1000)
    path.write_text(json.dumps({"claudeAiOauth": {
        "accessToken": OAUTH_TOKEN, "refreshToken": "sk-ant-ort01-fake-refresh", "expiresAt": expires,
        "scopes": ["user:inference", "user:profile", "user:sessions:claude_code"], "subscriptionType": "pro",
    }}), encoding="utf-8")
    path.chmod(0o600)
    return path


def main(argv: Sequence[str]) -> int:
    """``install [--require]``: install the pinned client; without npm, skip (or fail with --require)."""
    args = list(argv)
    if not args or args[0] != "install" or set(args[1:]) - {"--require"}:
        print("usage: python -m testing.claude_code install [--require]", file=sys.stderr)
        return 2
    try:
        exe = install()
    except NpmMissing as exc:
        print(f"{'error' if '--require' in args else 'skipped'}: {exc}", file=sys.stderr)
        return 1 if "--require" in args else 0
    except InstallFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Claude Code {version()}: {exe}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
