"""The real Codex CLI for tests: installed from the npm registry once, run offline against a fake API.

``install()`` puts ``@openai/codex@<version>`` into ``<cache>/codex-<version>`` (``npm install``
with a lock, so parallel runs install once; a later run reuses the folder). The package's native
binary comes in a platform package npm picks itself. The version is ``CODEX_VERSION`` unless
``QUIPU_CODEX_VERSION`` names another; the cache is ``QUIPU_TEST_CACHE``, else ``.test-cache``.

``Sandbox`` is one isolated user of the client: a temporary ``HOME`` and ``CODEX_HOME`` whose
``config.toml`` selects a custom model provider on the loopback fake of the Responses API (an API
key in an environment variable that means nothing anywhere but the fake), and every proxy variable
on the fake too, so a connection to anywhere else arrives at the fake and is refused there instead
of leaving the machine. Nothing of the machine's own Codex settings, logins or sessions is read.

``python -m testing.codex_cli install --require`` installs it, and fails without npm (CI runs it
before the tests; the tests install it themselves too, and skip without npm).
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from testing import claude_code
from testing.claude_code import InstallFailed, NpmMissing
from testing.fake_responses_api import FakeResponsesAPI

CODEX_VERSION = "0.171.0"
VERSION_SETTING = "QUIPU_CODEX_VERSION"
PACKAGE = "@openai/codex"
API_KEY = "sk-fake-key-for-the-loopback-responses-api"
RUN_TIMEOUT = 180.0
# How long `codex exec` waits for MCP servers before its first request (Codex does not wait for
# an optional server otherwise, and a one-shot run would send its only request without them).
MCP_GRACE_MS = 30_000

__all__ = ["InstallFailed", "NpmMissing", "Sandbox", "install"]


def version() -> str:
    return os.environ.get(VERSION_SETTING, "").strip() or CODEX_VERSION


def _installed_version(exe: Path) -> str | None:
    if not os.access(exe, os.X_OK):
        return None
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    words = out.split()
    return words[-1] if words else None  # "codex-cli 0.171.0"


def install(wanted: str | None = None) -> Path:
    """The path of the ``codex`` executable of version ``wanted`` (default ``version()``), installing it once."""
    return claude_code.npm_install(PACKAGE, wanted or version(), "codex", "codex", _installed_version)


@dataclass(frozen=True)
class Sandbox:
    """One throw-away Codex user: its home, CODEX_HOME and environment."""

    exe: Path
    home: Path
    api: FakeResponsesAPI
    env: Mapping[str, str]

    @property
    def codex_home(self) -> Path:
        return Path(self.env["CODEX_HOME"])

    @classmethod
    def create(cls, exe: Path, home: Path, api: FakeResponsesAPI, *, trusted: Sequence[Path] = (),
               extra: Mapping[str, str] | None = None) -> Sandbox:
        codex_home = home / "codex-home"  # not ~/.codex: what reads the default place instead is caught
        codex_home.mkdir(parents=True, exist_ok=True)
        lines = ['model = "gpt-fake"', 'model_provider = "fake"', "", "[model_providers.fake]", 'name = "fake"',
                 f'base_url = "{api.base_url}"', 'env_key = "QUIPU_TEST_CODEX_KEY"', 'wire_api = "responses"',
                 "request_max_retries = 0", "stream_max_retries = 0", ""]
        for project in trusted:  # what trusting the folder in Codex writes
            lines += [f'[projects."{project}"]', 'trust_level = "trusted"', ""]
        (codex_home / "config.toml").write_text("\n".join(lines), encoding="utf-8")
        path = os.pathsep.join([str(Path(sys.executable).parent), str(exe.parent), os.environ.get("PATH", "")])
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("OPENAI_", "CODEX", "QUIPU_")) and key.upper() not in _PROXY_KEYS}
        proxy = api.base_url.rsplit("/v1", 1)[0]
        env.update({
            "PATH": path, "HOME": str(home), "CODEX_HOME": str(codex_home), "QUIPU_TEST_CODEX_KEY": API_KEY,
            "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "ALL_PROXY": proxy,
            "https_proxy": proxy, "http_proxy": proxy, "all_proxy": proxy,
            "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
            "QUIPU_HOME": str(home / ".quipu-home"),
        })
        env.update(extra or {})
        return cls(exe, home, api, env)

    def run(self, args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
            timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.exe), *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              env={**self.env, **(env or {})}, timeout=timeout)

    def prompt(self, text: str, *, cwd: Path, resume: str | None = None, args: Sequence[str] = (),
               env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``codex exec TEXT`` (or ``exec resume ID TEXT``) the way an automation runs it: hooks the
        person trusted run (``--dangerously-bypass-hook-trust`` stands in for that review in ``/hooks``),
        MCP servers get time to start."""
        head = ["exec", "resume", resume] if resume else ["exec"]
        return self.run([*head, "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
                         "-c", f"mcp_optional_startup_grace_ms={MCP_GRACE_MS}", *args, text], cwd=cwd, env=env)

    def rollouts(self) -> list[Path]:
        return sorted((self.codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))


_PROXY_KEYS = {"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"}


def main(argv: Sequence[str]) -> int:
    """``install [--require]``: install the pinned client; without npm, skip (or fail with --require)."""
    args = list(argv)
    if not args or args[0] != "install" or set(args[1:]) - {"--require"}:
        print("usage: python -m testing.codex_cli install [--require]", file=sys.stderr)
        return 2
    try:
        exe = install()
    except NpmMissing as exc:
        print(f"{'error' if '--require' in args else 'skipped'}: {exc}", file=sys.stderr)
        return 1 if "--require" in args else 0
    except InstallFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Codex CLI {version()}: {exe}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
