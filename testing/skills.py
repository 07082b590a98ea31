"""What the skills tests share: a real procedure a person repeats (stash, pull with rebase, pop),
the draft a model writes for it, the person's Claude Code folder and a project to promote into."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

FAILURE = "error: cannot pull with rebase: You have unstaged changes."
BODY = """Use this when `git pull --rebase` stops with "error: cannot pull with rebase: You have unstaged changes."

1. Put the local changes aside: `git stash`
2. Bring the branch up to date: `git pull --rebase origin main`
3. Take the changes back: `git stash pop`
4. Run the project's checks before going on: `scripts/check.sh`

If `git stash pop` reports a conflict, resolve the files it names, then `git add` them.
"""
ANSWER = {"name": "rebase-with-local-changes", "description": "Pull with rebase when the work tree has local changes.",
          "failure": FAILURE, "body": BODY}


@pytest.fixture(autouse=True)
def person(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The person's Claude Code folder, outside any session of Claude Code or quipu."""
    monkeypatch.delenv("CLAUDECODE", raising=False)
    monkeypatch.delenv("QUIPU_CHILD", raising=False)
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    return claude


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with the checks script the procedure runs."""
    root = tmp_path / "shop"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "check.sh").write_text("#!/bin/sh\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root
