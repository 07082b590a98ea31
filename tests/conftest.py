from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from quipu.store.store import Store
from testing.fixtures import TOPIC_NOTES, add_all, make_store, memory


@pytest.fixture(scope="session", autouse=True)
def no_prompt_server_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests that run the hook or the CLI with an environment of their own (the real Claude Code
    and Codex CLIs, installs) get the prompt and command servers a user gets; each is stopped when
    the session ends."""
    yield
    from quipu.prompt import server

    for kind in ("prompt", "command"):
        for lock in tmp_path_factory.getbasetemp().glob(f"**/run/{kind}.lock"):
            pid = server.pid_of(str(lock.parent.parent), kind)
            cmdline = Path(f"/proc/{pid}/cmdline")
            if pid and cmdline.is_file() and b"server.main" in cmdline.read_bytes():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)


@pytest.fixture(autouse=True)
def quipu_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the real home: QUIPU_HOME, HOME and git identity point at tmp.

    The prompt hook recalls in its own process (QUIPU_PROMPT_SERVER=off), and so does every
    command (QUIPU_COMMAND_SERVER=off), so no test leaves a server behind;
    tests/prompt_server_test.py and tests/command_server_test.py run them with their servers."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("QUIPU_HOME", str(home / ".quipu-home"))
    monkeypatch.delenv("QUIPU_STORE", raising=False)
    monkeypatch.delenv("QUIPU_CHILD", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("QUIPU_PROMPT_SERVER", "off")
    monkeypatch.setenv("QUIPU_COMMAND_SERVER", "off")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Quipu Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Quipu Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[user]\n\tname = Quipu Test\n\temail = test@example.invalid\n")
    return home


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(store_path: Path) -> Store:
    """Four short notes on different topics (``TOPIC_NOTES``), where most index and search scenarios start."""
    store = make_store(store_path)
    add_all(store, [memory(mid, title, f"{title}. More words about {mid}.") for mid, title in TOPIC_NOTES])
    return store
