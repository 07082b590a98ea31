"""A first backfill in three processes (quipu.history.apart): the same archive and index as in one,
and every failure of a child raised in the parent."""
from __future__ import annotations

import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from quipu.history import apart, feed
from quipu.history.archive import Layout
from testing.transcripts import Transcript

KEY = "sk-ant-api03-Zq8vX2mN4pL7rT1wY6uB3cK9dF5gH0jS"

pytestmark = pytest.mark.skipif(not apart.APART, reason="work apart is for Linux only")


def write_tree(projects: Path, sessions: int, turns: int) -> None:
    for s in range(sessions):
        t = Transcript(f"7c7c7c7c-0000-4000-8000-{s:012d}", f"/home/dev/p{s % 7}")
        for n in range(turns):
            if n % 2 == 0:
                t.user(f"Session {s} asks question {n}: why does build {s * 100 + n} fail on step {n % 13}?")
            else:
                t.assistant(f"Build {s * 100 + n} fails because cache key {n} changed; the key {KEY} "
                            "was rotated." if n == 3 else f"Step {n % 13} of session {s} needs the lockfile.")
        if s == 5:
            t.raw(b'{"type":"user","message":{"role":"user","content":"cut sho')  # a bad line, counted
        t.write(projects)
    # Files skipped, each with why: a sub-agent's, one with no turn, a symbolic link.
    agent = Transcript("7c7c7c7c-0000-4000-8000-999999999999", "/home/dev/p1", sidechain=True)
    agent.user("List every shortcode.")
    agent.write(projects, "7c7c7c7c-0000-4000-8000-000000000001/subagents/agent-a1.jsonl")
    (projects / "-home-dev-p1" / "empty.jsonl").write_text("")
    (projects / "-home-dev-p1" / "link.jsonl").symlink_to(next(projects.rglob("*.jsonl")))


def snapshot(layout: Layout) -> tuple[bytes, list[tuple[object, ...]], bytes, list[tuple[object, ...]]]:
    shelves = b"".join(p.read_bytes() for p in sorted(layout.shelves.glob("*.jsonl")))
    db = sqlite3.connect(layout.index)
    rows = db.execute("SELECT id, key, session, turn, role, project, branch, agent, ts, text FROM turns "
                      "ORDER BY id").fetchall()
    words = db.execute("SELECT rowid FROM turns_fts WHERE turns_fts MATCH 'lockfile' ORDER BY rowid").fetchall()
    db.close()
    return shelves, rows, layout.vectors.read_bytes(), words


def test_three_processes_archive_and_index_what_one_does(tmp_path: Path) -> None:
    write_tree(tmp_path / "projects", 80, 60)  # 4,800 turns: more than one batch, more than 64 files
    assert apart.usable()
    apart_layout = Layout(tmp_path / "apart")
    summary = feed.backfill(tmp_path / "projects", layout=apart_layout)
    # The same run from a process with a second thread: all of it in one process.
    waiting = threading.Event()
    other = threading.Thread(target=waiting.wait)
    other.start()
    try:
        assert not apart.usable()
        one_layout = Layout(tmp_path / "one")
        alone = feed.backfill(tmp_path / "projects", layout=one_layout)
    finally:
        waiting.set()
        other.join()
    assert summary.to_json() == alone.to_json()
    assert summary.added == 4_800 and summary.redactions == 80 and summary.bad_lines == 1
    assert sorted(why for _path, why in summary.skipped) == sorted([feed.SUBAGENT, feed.NO_TURNS,
                                                                    "a symbolic link: not followed"])
    first, second = snapshot(apart_layout), snapshot(one_layout)
    assert first == second
    assert KEY.encode() not in first[0] and len(first[3]) > 0


def test_an_error_in_the_reading_child_is_raised_in_the_parent() -> None:
    def make() -> Iterator[int]:
        yield from range(100)
        raise ValueError("transcript 100 is not what it seemed")

    got: list[int] = []
    with pytest.raises(ValueError, match="transcript 100"):
        for item in apart.made(make, chunk=7):
            got.append(item)
    assert got == list(range(100))  # everything before the error, in order


def test_a_reading_child_that_dies_is_an_error_not_an_early_end() -> None:
    def make() -> Iterator[int]:
        yield 1
        os.kill(os.getpid(), signal.SIGKILL)
        yield 2

    with pytest.raises(RuntimeError, match="stopped before the end"):
        list(apart.made(make, chunk=1))


def test_the_writing_child_ends_before_taken_returns_and_its_error_is_raised(tmp_path: Path) -> None:
    out = tmp_path / "taken"

    def take(received: Iterator[int]) -> None:
        out.write_text(",".join(map(str, received)))

    apart.taken(take, iter(range(5)))
    assert out.read_text() == "0,1,2,3,4"  # written by the child, which had ended

    def refuse(received: Iterator[int]) -> None:
        for item in received:
            if item == 3:
                raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        apart.taken(refuse, iter(range(10_000)))


def test_items_that_fail_stop_the_writing_child_before_its_last_step(tmp_path: Path) -> None:
    done = tmp_path / "committed"

    def take(received: Iterator[int]) -> None:
        for _ in received:
            pass
        done.write_text("the last step ran")  # only after the end mark, which never comes

    def items() -> Iterator[int]:
        yield from range(50)
        raise KeyError("a transcript vanished")

    with pytest.raises(KeyError, match="vanished"):
        apart.taken(take, items())
    assert not done.exists()


def test_a_server_with_threads_does_not_fork() -> None:
    waiting = threading.Event()
    other = threading.Thread(target=waiting.wait)
    other.start()
    try:
        assert not apart.usable()
    finally:
        waiting.set()
        other.join()
    assert apart.usable() == (sys.platform == "linux")
