"""The built wheel carries hooks/, probes/ and .quipu-template/ and works from a fresh venv (issue 2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from testing.fixtures import REPO_ROOT, indexed_head

pytestmark = pytest.mark.slow

MUST_CARRY = (
    "quipu/_assets/hooks/prompt_submit.py",
    "quipu/_assets/hooks/quipu_mcp.py",
    "quipu/_assets/template/quipu.toml",
    "quipu/_assets/template/gitignore",
    "quipu/probes/__init__.py",
    "quipu/serve/static/app.js",
    "quipu/serve/static/style.css",
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the bin folder of a fresh venv it was installed into)."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(REPO_ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = dist.glob("quipu-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # pygit2 and PyYAML come from the package index (or pip's cache), like a user's install.
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    return wheel, venv / "bin"


def test_the_wheel_carries_hooks_probes_and_the_store_template(installed: tuple[Path, Path]) -> None:
    wheel, _bin = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [name for name in MUST_CARRY if name not in names] == []
    assert not any("__pycache__" in name or name.startswith(("tests/", "testing/")) for name in names)


def test_a_fresh_venv_runs_init_add_search_log_retract_and_undo(installed: tuple[Path, Path], tmp_path: Path) -> None:
    _wheel, bin_dir = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"

    def quipu(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(bin_dir / "quipu"), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr
        return done

    where = subprocess.run([str(bin_dir / "python"), "-c", "import quipu, quipu.store.assets as a; print(quipu.__file__); print(a.template_dir())"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout.split()
    assert all("site-packages" in path for path in where)  # not the source checkout

    store = tmp_path / "store"
    init = json.loads(quipu("init", str(store), "--json").stdout)
    assert init["created"] and (store / "quipu.toml").is_file() and (store / ".gitignore").is_file()
    s = ("--store", str(store))
    added = json.loads(quipu(*s, "add", "-t", "Deploy accident", "--json", "We nuked production with a bad migration").stdout)
    assert [h["id"] for h in json.loads(quipu(*s, "search", "--json", "migration").stdout)] == [added["id"]]
    log = json.loads(quipu(*s, "log", "--json").stdout)
    assert [(e["trailers"]["Quipu-Action"], e["trailers"]["Quipu-Memory"]) for e in log] == [("add", added["id"]), ("init", "store")]

    retracted = json.loads(quipu(*s, "retract", added["id"], "--json").stdout)  # undo never deletes a memory
    assert json.loads(quipu(*s, "search", "--json", "migration").stdout) == []
    quipu(*s, "undo", "--memory", added["id"])
    assert [h["id"] for h in json.loads(quipu(*s, "search", "--json", "migration").stdout)] == [added["id"]]
    assert json.loads(quipu(*s, "log", "--json").stdout)[0]["trailers"]["Quipu-Reverts"] == retracted["commit"]
    assert subprocess.run(["git", "-C", str(store), "status", "--porcelain"], capture_output=True, text=True).stdout == ""

    # The git hooks init installed call back into this venv's quipu: a hand commit refreshes the index,
    # and a quipu/ package committed beside it (the hooks run in the store's folder) never runs.
    sentinel = tmp_path / "package-ran"
    (store / "quipu").mkdir()
    for name in ("__init__.py", "__main__.py"):
        (store / "quipu" / name).write_text(f"open({str(sentinel)!r}, 'a').write('ran')\n")
    memory = store / "memories" / "ha" / "hand-note.md"
    memory.parent.mkdir(parents=True)
    memory.write_text("---\nid: hand-note\ntitle: Written by hand\nclass: fact\ncreated: 2026-01-01\n---\nsprocket\n")
    subprocess.run(["git", "-C", str(store), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(store), "commit", "-q", "-m", "by hand"], check=True, env=env)
    head = subprocess.run(["git", "-C", str(store), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    deadline = time.monotonic() + 30
    while indexed_head(store) != head:
        assert time.monotonic() < deadline, "the post-commit hook did not refresh the index through the venv"
        time.sleep(0.1)
    assert not sentinel.exists()

    # The prompt hook runs from where the wheel put it, without site-packages (-I -S), and recalls.
    hook = Path(where[0]).parent / "_assets" / "hooks" / "prompt_submit.py"
    event = {"session_id": "wheel", "transcript_path": "", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
             "prompt": "where did we write down the sprocket?"}
    ran = subprocess.run([str(bin_dir / "python"), "-I", "-S", str(hook)], input=json.dumps(event), capture_output=True,
                         text=True, env={**env, "QUIPU_STORE": str(store)}, timeout=60)
    assert ran.returncode == 0 and ran.stderr == ""
    assert "hand-note" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
