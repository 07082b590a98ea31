"""A `quipu add` killed while it brings the index up to its commit: the refresh writes without an
fsync (the index is a cache of commits that have landed), so what must hold is that a process
killed at any step of that SQLite transaction leaves the index intact at the commit before, behind
HEAD, and that the next read catches up with the memory the commit landed.

The kill is real: strace delivers SIGKILL to the `quipu add` process as it enters one write of
the index file, or the removal of the index's rollback journal (the moment SQLite's commit holds).
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from testing.fixtures import TOPIC_NOTES, add_all, git, make_store, memory, quipu

STRACE = shutil.which("strace")
pytestmark = pytest.mark.skipif(STRACE is None, reason="strace is not installed (apt-get install strace): "
                                "it is what kills the process at a chosen write")


def _meta_head(db_path: Path) -> str:
    db = sqlite3.connect(str(db_path))  # opening it rolls a hot journal back, as any reader's open does
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return str(db.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()[0])
    finally:
        db.close()


# (the file whose syscall kills, the syscall, which call of it): the first and a later page
# written into the index, and the journal's removal, SQLite's commit point.
KILLS = [
    ("index.sqlite", "pwrite64", 1),
    ("index.sqlite", "pwrite64", 4),
    ("index.sqlite-journal", "unlink", 1),
]


@pytest.mark.parametrize(("name", "syscall", "when"), KILLS)
def test_an_add_killed_inside_the_index_update_leaves_it_behind_head_and_the_next_read_catches_up(
        tmp_path: Path, name: str, syscall: str, when: int) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory(mid, title, f"{title} notes for the crash test.") for mid, title in TOPIC_NOTES])
    warm = quipu("--store", str(store.root), "search", "notes", "--json")
    assert warm.returncode == 0, warm.stderr
    db_path = store.index_path
    before = git(store.root, "rev-parse", "HEAD").strip()
    assert _meta_head(db_path) == before
    watched = db_path.with_name(name)
    killed = subprocess.run(
        [str(STRACE), "-f", "-qq", "-o", "/dev/null", "-P", str(watched), "-e", f"trace={syscall}",
         "-e", f"inject={syscall}:signal=SIGKILL:when={when}",
         sys.executable, "-m", "quipu", "--store", str(store.root), "add", "--id", "eeee00000001",
         "-t", "Kiln schedule", "The kiln fires on Thursdays at six."],
        capture_output=True, text=True, timeout=120,
    )
    assert killed.returncode != 0 and "Added" not in killed.stdout, (killed.returncode, killed.stdout, killed.stderr)
    head = git(store.root, "rev-parse", "HEAD").strip()
    assert head != before and git(store.root, "rev-parse", "HEAD~1").strip() == before  # the commit landed
    assert git(store.root, "status", "--porcelain") == ""
    assert git(store.root, "fsck", "--strict", "--no-dangling", check=False) == ""
    assert _meta_head(db_path) == before  # intact, and behind HEAD: never half of the update
    found = quipu("--store", str(store.root), "search", "kiln Thursdays", "--json")
    assert found.returncode == 0, found.stderr
    assert "eeee00000001" in [hit["id"] for hit in json.loads(found.stdout)]
    assert _meta_head(db_path) == head
