"""A success is never reported as a failure, and a read-only store can still be read.

Issue 12: with `.cache` not writable, `quipu add` committed and then exited 3 ("unexpected
error ... index.lock"), so a retry added the memory twice. The folders are mounted read-only in
a private mount namespace, which refuses writes even to root (EROFS), as a read-only disk does."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testing.fixtures import git, make_store, memory, quipu, quipu_read_only, read_only_mounts_work

pytestmark = pytest.mark.skipif(not read_only_mounts_work(), reason="no unprivileged read-only mounts here")


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for base, _dirs, files in os.walk(root):
        for name in files:
            st = os.stat(os.path.join(base, name))
            found[os.path.relpath(os.path.join(base, name), root)] = (st.st_size, st.st_mtime_ns)
    return found


def test_an_add_whose_index_cannot_be_written_reports_its_commit_and_exits_0(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    store.add(memory("first-one", "Deploys go through the pipeline"))
    assert quipu("--store", str(store.root), "search", "pipeline").returncode == 0  # the index exists
    before = git(store.root, "rev-list", "--count", "HEAD")

    added = quipu_read_only([store.root / ".cache"], "--store", str(store.root), "add", "--json",
                            "A second note about the pipeline", "--title", "Second pipeline note")

    assert added.returncode == 0, added.stderr
    assert "commit landed" in added.stderr and "catch up" in added.stderr
    assert "unexpected error" not in added.stderr
    new_id = json.loads(added.stdout)["id"]
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == int(before) + 1  # exactly one commit
    found = quipu("--store", str(store.root), "search", "--json", "pipeline")  # the index caught up
    assert {h["id"] for h in json.loads(found.stdout)} == {"first-one", new_id}


def test_search_and_doctor_work_on_a_read_only_store_without_writing_to_it(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    store.add(memory("first-one", "Deploys go through the pipeline"))
    assert quipu("--store", str(store.root), "search", "pipeline").returncode == 0
    (store.root / "memories" / "se").mkdir()
    (store.root / "memories" / "se" / "second-one.md").write_bytes(
        (store.root / "memories" / "fi" / "first-one.md").read_bytes().replace(b"first-one", b"second-one"))
    git(store.root, "add", "memories/se/second-one.md")
    git(store.root, "commit", "-q", "-m", "a memory committed by hand")  # the index is now behind HEAD
    before = _snapshot(store.root)

    found = quipu_read_only([store.root], "--store", str(store.root), "search", "--json", "pipeline")
    checked = quipu_read_only([store.root], "--store", str(store.root), "doctor", "--json")

    assert found.returncode == 0, found.stderr
    assert {h["id"] for h in json.loads(found.stdout)} == {"first-one", "second-one"}
    assert "private copy" in found.stderr
    assert checked.returncode in (0, 1), checked.stderr
    assert {c["name"]: c["ok"] for c in json.loads(checked.stdout)["checks"]}["schema"] is True
    assert _snapshot(store.root) == before
