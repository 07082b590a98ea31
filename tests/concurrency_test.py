"""Many writers, one store: nothing lost, history and worktree consistent (issue 2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quipu.store import githooks
from quipu.commands.search import search
from quipu.store.store import Store
from testing.fixtures import REPO_ROOT, git, make_store, quipu

WRITERS = 20
PER_WRITER = 50

# Each writer waits for "go" on stdin so all twenty start writing at the same moment.
_WRITER = """
import sys
from quipu.store.memory import Memory, now_utc
from quipu.store.store import Store
store, writer = Store(sys.argv[1]), int(sys.argv[2])
sys.stdin.readline()
for n in range(int(sys.argv[3])):
    token = f"w{writer:02d}n{n:03d}"
    store.add(Memory.create({"id": f"{token}-note", "title": f"writer {writer} note {n}",
                             "class": "reference", "created": now_utc()}, f"unique token {token}tok\\n"))
"""


def fsck_problems(root: Path) -> list[str]:
    """`git fsck` findings other than dangling objects."""
    done = subprocess.run(["git", "-C", str(root), "fsck", "--no-progress"], capture_output=True, text=True)
    problems = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip() and not ln.startswith("dangling ")]
    return problems + ([f"git fsck exited {done.returncode}"] if done.returncode else [])


def _start_writers(store: Store, count: int, per_writer: int) -> list[subprocess.Popen[str]]:
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(store.root), str(w), str(per_writer)],
                         stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
        for w in range(count)
    ]
    for proc in procs:
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
    for proc in procs:
        proc.stdin.close()  # type: ignore[union-attr]
    return procs


def _finish(procs: list[subprocess.Popen[str]]) -> None:
    failures = [(proc.wait(timeout=300), proc.stderr.read()) for proc in procs]  # type: ignore[union-attr]
    assert [f for f in failures if f[0] != 0] == []


@pytest.mark.slow
def test_twenty_processes_writing_fifty_memories_each_lose_nothing(store_path: Path) -> None:
    store = make_store(store_path)
    started = time.monotonic()
    _finish(_start_writers(store, WRITERS, PER_WRITER))
    elapsed = time.monotonic() - started

    expected = {f"w{w:02d}n{n:03d}" for w in range(WRITERS) for n in range(PER_WRITER)}
    files = git(store.root, "ls-tree", "-r", "--name-only", "HEAD", "memories").split()
    assert len(files) == len(expected) == 1000
    assert {Path(f).stem.removesuffix("-note") for f in files} == expected
    adds = git(store.root, "log", "--format=%(trailers:key=Quipu-Action,valueonly)", "--grep=^Quipu-Action: add$").split()
    assert len(adds) == 1000
    assert len(git(store.root, "rev-list", "HEAD").split()) == 1001  # and the init commit
    for sha in git(store.root, "rev-list", "HEAD~1000..HEAD").split()[:50]:  # one memory per commit
        assert len(git(store.root, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).split()) == 1
    assert git(store.root, "status", "--porcelain") == ""
    assert fsck_problems(store.root) == []

    missing = [token for token in sorted(expected) if [h.id for h in search(store, f"{token}tok").hits] != [f"{token}-note"]]
    assert missing == []
    for token in sorted(expected)[::250]:  # and a handful through the command line
        done = quipu("--store", str(store.root), "search", "--json", f"{token}tok")
        assert [h["id"] for h in json.loads(done.stdout)] == [f"{token}-note"]
    print(f"\n1,000 concurrent commits in {elapsed:.1f} s ({1000 / elapsed:.0f}/s)")


@pytest.mark.slow
def test_a_person_committing_by_hand_while_quipu_writes_loses_nothing_on_either_side(store_path: Path) -> None:
    """A person runs `git add` + `git commit` in a loop while two quipu writers add memories: every
    commit of theirs is kept, no staged file of theirs is dropped, no memory is deleted."""
    store = make_store(store_path)
    githooks.install(store.root)
    env = {**os.environ, "QUIPU_CHILD": "1"}  # no background index refresh per hand commit
    writers = _start_writers(store, 2, 40)
    person_files = []
    while any(proc.poll() is None for proc in writers) or len(person_files) < 10:
        name = f"person/p{len(person_files):03d}.txt"
        (store.root / "person").mkdir(exist_ok=True)
        (store.root / name).write_text(f"{name}\n")
        while _git(store, env, "add", name).returncode:  # git's index lock is busy: try again
            time.sleep(0.005)
        while (done := _git(store, env, "commit", "-q", "-m", f"person: {name}")).returncode:
            assert "nothing" not in done.stdout + done.stderr, f"{name} was unstaged: {done.stdout}"
            time.sleep(0.005)  # the branch moved or the index was busy: the person tries again
        person_files.append(name)
    _finish(writers)
    files = set(git(store.root, "ls-tree", "-r", "--name-only", "HEAD").split())
    assert [f for f in person_files if f not in files] == []
    memories = {f"memories/w0/w{w:02d}n{n:03d}-note.md" for w in range(2) for n in range(40)}
    assert sorted(memories - files) == []
    assert git(store.root, "status", "--porcelain") == ""
    assert fsck_problems(store.root) == []


def _git(store: Store, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(store.root), *args], capture_output=True, text=True, env=env)
