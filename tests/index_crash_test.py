"""The index's writes are not synced (it is a cache of commits that have landed), so what must
hold is that a `quipu add` killed at any step of its SQLite transaction leaves the index (the
file with its rollback journal) intact at the commit before, behind HEAD, that the next read
catches up with the memory the commit landed, and that a file last written before the machine
restarted (a power loss may have cut its writes short) is checked before it is trusted.

The kill is real: strace delivers SIGKILL to the `quipu add` process as it enters one write of
the index file, or the removal of the index's rollback journal (the moment SQLite's commit holds).
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from quipu.index import index
from testing.fixtures import TOPIC_NOTES, add_all, git, make_store, memory, quipu

STRACE = shutil.which("strace")
needs_strace = pytest.mark.skipif(STRACE is None, reason="strace is not installed (apt-get install strace): "
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


@needs_strace
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
    # What SQLite makes of the file and its journal (a copy of both, so that quipu meets them as left):
    # intact, and behind HEAD, never half of the update.
    copy = tmp_path / "copy"
    copy.mkdir()
    for side in (db_path, db_path.with_name(db_path.name + "-journal")):
        if side.exists():
            shutil.copy(side, copy / side.name)
    assert _meta_head(copy / db_path.name) == before
    found = quipu("--store", str(store.root), "search", "kiln Thursdays", "--json")
    assert found.returncode == 0, found.stderr
    assert "eeee00000001" in [hit["id"] for hit in json.loads(found.stdout)]
    assert _meta_head(db_path) == head


@pytest.mark.skipif(not os.path.exists("/proc/sys/kernel/random/boot_id"), reason="no boot id here (Linux only)")
def test_an_index_last_written_before_the_machine_restarted_is_checked_before_it_is_trusted(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s")
    add_all(store, [memory(mid, title, f"{title} notes.") for mid, title in TOPIC_NOTES])
    assert index.ensure_fresh(store).action in ("rebuilt", "incremental", "fresh")
    db_path = store.index_path
    stamp = db_path.with_name(db_path.name + ".stamp")
    written = stamp.read_text().strip()
    assert index.ensure_fresh(store).action == "fresh"
    # A write the power loss cut short: a page of an index b-tree no read here touches is lost,
    # and the file keeps its inode, size and mtime (only its contents were not all on disk).
    db = sqlite3.connect(str(db_path))
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memories_supersedes'").fetchone()[0]
    db.close()
    st = os.stat(db_path)
    with open(db_path, "r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(b"\xff" * page_size)
    os.utime(db_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert index._file_stamp(db_path) == written  # nothing but the contents tells
    assert index.ensure_fresh(store).action == "fresh"  # in this boot the stamp vouches for the file
    ino_size_mtime, boot = written.rsplit(":", 1)
    assert boot and boot != "0" * len(boot)
    stamp.write_text(f"{ino_size_mtime}:{'0' * len(boot)}")  # as written in an earlier boot
    assert index.ensure_fresh(store).action == "rebuilt"  # quick_check found the lost page
    db = sqlite3.connect(str(db_path))
    assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    db.close()
    assert index._file_stamp(db_path) == stamp.read_text().strip()
