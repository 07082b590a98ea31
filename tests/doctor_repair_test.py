"""`quipu doctor --repair` mends in one run what can be mended, each step once the steps it needs
are done, and says what is left; `quipu doctor` says why it rebuilt the index.

A stale ``.git/index.lock`` made the next `quipu add` leave its write unfinished (HEAD moved, git's
index did not); one `--repair` settled the write behind the lock (which could not work), moved
the lock aside after, exited 1 and left `git status` with the memory deleted and untracked. A
lock too young to be stale was not mentioned at all, and a damaged index.sqlite was reported as
"behind HEAD"."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quipu.store.memory import memory_path, render_memory
from testing.fixtures import add_all, git, make_store, memory, quipu


def _doctor(root: Path, *more: str) -> tuple[int, dict[str, dict[str, object]]]:
    done = quipu("--store", str(root), "doctor", "--json", *more)
    return done.returncode, {c["name"]: c for c in json.loads(done.stdout)["checks"]}


def _details(check: dict[str, object]) -> list[str]:
    return [str(d) for d in check["details"]]  # type: ignore[attr-defined]


def _store_with_an_add_behind_a_lock(tmp_path: Path) -> tuple[Path, Path]:
    """A store whose second `quipu add` ran while a left-over index.lock blocked git's index."""
    root = tmp_path / "store"
    assert quipu("init", str(root)).returncode == 0
    assert quipu("--store", str(root), "add", "-t", "first", "The first memory is about the build.").returncode == 0
    lock = root / ".git" / "index.lock"
    lock.write_bytes(b"")  # left by a killed git
    added = quipu("--store", str(root), "add", "-t", "second", "Deploys go through the release branch.")
    assert added.returncode == 0 and added.stdout.startswith("Added"), added.stderr
    assert lock.exists() and git(root, "status", "--porcelain") != ""  # HEAD moved, git's index did not
    return root, lock


def _age(lock: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(lock, (then, then))


def test_one_repair_moves_a_stale_lock_aside_then_settles_the_write_behind_it(tmp_path: Path) -> None:
    root, lock = _store_with_an_add_behind_a_lock(tmp_path)
    _age(lock, 60)

    code, checks = _doctor(root)
    repo = checks["git repository"]
    assert code == 1 and repo["ok"] is False
    assert repo["summary"] == "a stale git lock blocks git; a write did not finish; run `quipu doctor --repair`"

    code, checks = _doctor(root, "--repair")
    repo = checks["git repository"]
    assert code == 0 and repo["ok"] is True, repo
    assert repo["summary"] == "intact after repair (2 fix(es))"
    done = _details(repo)
    assert [d.split(" (")[0].split(":")[0:2] for d in done] == [
        ["repaired", " the stale index.lock moved aside into quipu-damaged/"],
        ["repaired", " the unfinished write was settled"]]
    assert all(c["ok"] for c in checks.values()), [c for c in checks.values() if not c["ok"]]
    assert git(root, "status", "--porcelain") == "" and not lock.exists()
    assert list((root / ".git" / "quipu-damaged").rglob("index.lock"))

    code, checks = _doctor(root)
    assert code == 0 and checks["git repository"]["summary"] == "intact"
    found = quipu("--store", str(root), "search", "--json", "release branch deploys")
    assert "second" in [hit["title"] for hit in json.loads(found.stdout)]


def test_a_lock_that_is_not_stale_is_named_and_a_repair_behind_it_says_it_could_not_settle(tmp_path: Path) -> None:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("processes holding a file cannot be listed here (no /proc)")
    root, lock = _store_with_an_add_behind_a_lock(tmp_path)
    _age(lock, 60)
    # A live process holds it (a `git commit` with its editor open): not stale, whatever its age.
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(lock)!r}); print('open', flush=True); "
                               "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        code, checks = _doctor(root)
        repo = checks["git repository"]
        assert code == 1 and repo["summary"] == "a write did not finish; run `quipu doctor --repair`"
        assert any(d.startswith("note: a write is in progress (index.lock, ") and
                   d.endswith(f" s old, held by process {holder.pid})") for d in _details(repo)), _details(repo)

        code, checks = _doctor(root, "--repair")
        repo = checks["git repository"]
        assert code == 1 and repo["ok"] is False
        said = _details(repo)
        assert not any(d.startswith("repaired:") for d in said), said
        assert any(d.startswith("not repaired: the unfinished write could not be settled: git's index is locked "
                                "(index.lock, ") and f"held by process {holder.pid}" in d for d in said), said
        assert any(d.startswith("write: a write did not finish") for d in said) and lock.exists()
    finally:
        holder.communicate("")

    # The holder gone, the lock is stale once old enough; young, it is named and left alone.
    os.utime(lock, None)
    code, checks = _doctor(root)
    assert any(d.startswith("note: a write is in progress (index.lock, ") and "no process holds it, so it is stale "
               "once 5 s old" in d for d in _details(checks["git repository"]))
    _age(lock, 60)
    code, checks = _doctor(root, "--repair")
    assert code == 0 and checks["git repository"]["ok"] is True
    assert git(root, "status", "--porcelain") == ""


def _damage(path: Path) -> None:
    """A few KB of garbage in the middle of the file, as a bad disk or another program leaves it."""
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(bytes((n * 37 + 11) % 256 for n in range(4096)))


def test_doctor_says_the_index_was_damaged_missing_or_behind_when_it_rebuilds_it(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    add_all(store, [memory(f"note-{n:02d}", f"Note {n} about the build pipeline",
                           f"Step {n} of the pipeline runs the {n}th stage of the build.") for n in range(40)])
    _code, checks = _doctor(store.root)
    assert str(checks["index"]["summary"]).startswith("fresh at ")

    _damage(store.index_path)
    _code, checks = _doctor(store.root)
    summary = str(checks["index"]["summary"])
    assert checks["index"]["ok"] is True
    assert summary.startswith("was damaged (unreadable: ") and "; rebuilt from git (40 memories, " in summary, summary
    assert "behind HEAD" not in summary
    _code, checks = _doctor(store.root)
    assert str(checks["index"]["summary"]).startswith("fresh at ")

    store.index_path.unlink()
    _code, checks = _doctor(store.root)
    assert str(checks["index"]["summary"]).startswith("was missing; rebuilt from git (40 memories, ")

    by_hand = store.root / memory_path("by-hand")
    by_hand.parent.mkdir(parents=True, exist_ok=True)
    by_hand.write_bytes(render_memory(memory("by-hand", "By hand", "Written by hand.")))
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "by hand")
    _code, checks = _doctor(store.root)
    assert str(checks["index"]["summary"]).startswith("was behind HEAD; incremental (1 change(s), ")
