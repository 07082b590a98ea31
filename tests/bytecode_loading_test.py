"""The prompt hook runs its modules from cached bytecode only when that bytecode matches the source."""
from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from quipu.store.store import Store
from testing.fixtures import REPO_ROOT, example_store, real_python

PROMPT = "how do we deploy shop-api to production?"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return example_store(tmp_path_factory.mktemp("shop") / "store")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the package and its hook, with freshly compiled bytecode."""
    root = tmp_path / "checkout"
    shutil.copytree(REPO_ROOT / "quipu", root / "quipu", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "hooks", root / "hooks", ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(str(root / "quipu"), quiet=1)
    return root


def run_hook(checkout: Path, store: Store) -> tuple[str, set[str]]:
    """(the hook's output, the quipu modules it imported through importlib) for the deploy prompt."""
    event = {"session_id": f"s-{os.urandom(4).hex()}", "transcript_path": "", "cwd": str(store.root),
             "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
    done = subprocess.run([real_python(), "-I", "-S", "-X", "importtime", str(checkout / "hooks" / "prompt_submit.py")],
                          input=json.dumps(event), capture_output=True, text=True,
                          env={**os.environ, "QUIPU_STORE": str(store.root)}, timeout=30)
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    return done.stdout, {name for name in imported if name.startswith("quipu")}


def test_fresh_bytecode_is_run_without_importlib(checkout: Path, shop: Store) -> None:
    out, imported = run_hook(checkout, shop)
    assert "deploy-procedure" in out
    assert imported == {"quipu", "quipu.prompt"}  # the two packages; every module from bytecode


def test_a_source_changed_after_its_bytecode_is_imported_the_usual_way(checkout: Path, shop: Store) -> None:
    expected, _ = run_hook(checkout, shop)
    recall = checkout / "quipu" / "prompt" / "recall.py"
    recall.write_text(recall.read_text() + "\n# edited after compiling\n")  # new size and mtime
    out, imported = run_hook(checkout, shop)
    assert "deploy-procedure" in out and out.split("additionalContext")[0] == expected.split("additionalContext")[0]
    assert {"quipu.prompt.recall", "quipu.prompt.hook"} <= imported  # recall and everything after it
    assert "quipu.prompt._fs" not in imported  # the modules before it still came from bytecode
    _, imported_again = run_hook(checkout, shop)  # that import cached new bytecode
    assert imported_again == {"quipu", "quipu.prompt"}


def test_bytecode_of_another_interpreter_or_none_at_all_is_never_run(checkout: Path, shop: Store) -> None:
    for pyc in (checkout / "quipu" / "prompt" / "__pycache__").glob("*.pyc"):
        data = bytearray(pyc.read_bytes())
        data[0] ^= 0xFF  # another magic number
        pyc.write_bytes(bytes(data))
    out, imported = run_hook(checkout, shop)
    assert "deploy-procedure" in out and "quipu.prompt.hook" in imported
    shutil.rmtree(checkout / "quipu" / "prompt" / "__pycache__")
    out, imported = run_hook(checkout, shop)
    assert "deploy-procedure" in out and "quipu.prompt.hook" in imported
