"""`quipu history index` in bulk: one pass that archives, redacts and indexes, and loses nothing
when a session comes twice, a run is killed, or a turn holds what JSON escapes."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from quipu.history import archive, feed
from quipu.history import index as hindex
from quipu.history.archive import Layout, Turn
from quipu.history.search import search
from testing.transcripts import Transcript

KEY = "sk-ant-api03-Zq8vX2mN4pL7rT1wY6uB3cK9dF5gH0jS"
TEXT = st.text(st.sampled_from(['a', 'Z', ' ', '"', '\\', '/', '\n', '\t', '\x00', '\x1f', '\x7f', 'é', '—', '\u2028',
                                '\U0001F600', '{', '}']), max_size=30)


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT, st.integers(0, 10**6), TEXT)
def test_an_archive_line_is_what_json_writes(key: str, text: str, number: int, project: str) -> None:
    turn = Turn(key, "s-1", number, "user", text, "2026-05-04T10:00:00Z", project, "main", "claude")
    assert turn.line() == json.dumps(turn.to_json(), ensure_ascii=False)
    shared = (json.dumps("s-1", ensure_ascii=False), json.dumps(project, ensure_ascii=False), '"claude"')
    assert turn.line(shared) == turn.line()  # a session's shared fields written once for all its turns
    assert Turn.create(json.loads(turn.line())) == turn


def quipu(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "quipu", *argv], capture_output=True, text=True, env=os.environ.copy(),
                          timeout=600)


def index_rows(layout: Layout) -> list[tuple[str, str]]:
    db = sqlite3.connect(layout.index)
    try:
        return db.execute("SELECT key, text FROM turns ORDER BY key").fetchall()
    finally:
        db.close()


def write_sessions(projects: Path, first: int, count: int) -> None:
    for n in range(first, first + count):
        t = Transcript(f"5d1c2a10-{n:04d}-4c21-9d0a-3e4f5a6b7c01", f"/home/dev/p{n % 7}")
        for k in range(12):
            t.user(f"Question {k} of session {n}: why does build {n * 100 + k} fail on the runner?")
            t.assistant(f"Build {n * 100 + k} fails because the cache key changed in step {k}.")
        t.write(projects)


def test_a_session_in_two_files_is_one_session_in_the_first_index(tmp_path: Path) -> None:
    """A transcript copied before it grew (a resumed session): each turn is archived and indexed
    once, the grown reply in its last version, redacted."""
    projects = tmp_path / "projects"
    t = Transcript("5d1c2a10-aaaa-4c21-9d0a-3e4f5a6b7c01", "/home/dev/api")
    t.user(f"The deploy fails with 401; the key is {KEY}")
    t.assistant("The token in the staging secret has expired.")
    t.write(projects, "a-first.jsonl")
    t.assistant("I rotated it and the canary deploy went through.")  # the same reply, grown
    t.user("Good. Write it down in the runbook.")
    t.write(projects, "b-later.jsonl")

    done = quipu("history", "index", "--projects", str(projects), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["turns_added"], summary["turns_updated"], summary["redactions"]) == (3, 1, 1)
    layout = Layout.default()
    turns = list(archive.all_turns(layout))
    assert [(x.turn, x.role) for x in turns] == [(0, "user"), (1, "assistant"), (2, "user")]
    rows = index_rows(layout)
    assert sorted(k for k, _ in rows) == sorted(x.key for x in turns)  # one row per key
    assert "canary deploy" in dict(rows)[turns[1].key]
    assert not any(KEY in text for _, text in rows) and KEY.encode() not in b"".join(
        p.read_bytes() for p in layout.root.rglob("*") if p.is_file())
    assert [h.turn for h in search("canary rotated").hits][:1] == [1]


def test_a_killed_first_backfill_is_redone_whole(tmp_path: Path) -> None:
    """Killed while it writes (archive half written, the new index not yet in place), the next
    run archives the rest and indexes every turn exactly once."""
    projects = tmp_path / "projects"
    write_sessions(projects, 0, 400)
    layout = Layout.default()
    child = subprocess.Popen([sys.executable, "-m", "quipu", "history", "index", "--projects", str(projects), "--json"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    deadline = time.monotonic() + 120
    while child.poll() is None and time.monotonic() < deadline:
        if len(archive.session_files(layout)) >= 50:  # part of the archive is written
            child.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    child.wait()
    killed = child.returncode == -signal.SIGKILL
    if killed:
        assert not layout.index.exists()  # nothing half-built is ever in place

    done = quipu("history", "index", "--projects", str(projects), "--json")
    assert done.returncode == 0, done.stderr
    turns = list(archive.all_turns(layout))
    assert len(turns) == 400 * 24 and len({x.key for x in turns}) == len(turns)
    rows = index_rows(layout)
    assert sorted(k for k, _ in rows) == sorted(x.key for x in turns)
    vectors = layout.vectors.stat().st_size // hindex.ROW
    assert vectors >= len(turns)
    assert [h.text for h in search("build 39911 cache key").hits][:1] == [
        "Build 39911 fails because the cache key changed in step 11."]


def test_a_character_cut_in_half_is_archived_as_a_replacement_character(tmp_path: Path) -> None:
    """JavaScript strings are UTF-16: a reply cut in the middle of an emoji leaves half of it,
    which JSON carries as an escape and UTF-8 cannot hold. The backfill goes on; the turn keeps
    the rest of its text."""
    projects = tmp_path / "projects"
    sid, cwd = "5d1c2a10-bbbb-4c21-9d0a-3e4f5a6b7c0\ud83d", "/home/dev/\ud83dsite"
    envelope = {"sessionId": sid, "cwd": cwd, "gitBranch": "main", "timestamp": "2026-05-04T10:00:00.000Z"}
    records = [{**envelope, "type": "user", "uuid": "u-1", "promptSource": "typed",
                "message": {"role": "user", "content": "Ship the release notes \ud83d and tag it"}},
               {**envelope, "type": "assistant", "uuid": "a-1", "message": {
                   "role": "assistant", "model": "claude-sonnet-5", "content": [{"type": "text", "text": "Tagged v2.4 \ude00."}]}}]
    folder = projects / "-home-dev-site"
    folder.mkdir(parents=True)
    (folder / "cut.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))  # \ud83d: an escape, as JSON writes it
    done = quipu("history", "index", "--projects", str(projects), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turns_added"] == 2
    turns = list(archive.all_turns(Layout.default()))
    assert [x.text for x in turns] == ["Ship the release notes \ufffd and tag it", "Tagged v2.4 \ufffd."]
    assert turns[0].project == "/home/dev/\ufffdsite" and turns[0].session.endswith("\ufffd")
    assert [h.turn for h in search("release notes tag").hits][:1] == [0]


def test_a_killed_later_backfill_is_redone_from_the_archive(tmp_path: Path) -> None:
    """An index is in place; a later backfill is killed after archiving turns it had not indexed
    yet. The next run finds the index marked as behind and rebuilds it from the archive: every
    archived turn is searchable, once."""
    projects = tmp_path / "projects"
    write_sessions(projects, 0, 5)
    assert quipu("history", "index", "--projects", str(projects), "--json").returncode == 0
    layout = Layout.default()
    write_sessions(projects, 5, 400)
    child = subprocess.Popen([sys.executable, "-m", "quipu", "history", "index", "--projects", str(projects), "--json"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    deadline = time.monotonic() + 120
    while child.poll() is None and time.monotonic() < deadline:
        if len(archive.session_files(layout)) >= 60:  # archived, and not yet indexed (a flush is 4,096 turns)
            child.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    child.wait()

    done = quipu("history", "index", "--projects", str(projects), "--json")
    assert done.returncode == 0, done.stderr
    turns = list(archive.all_turns(layout))
    assert len(turns) == 405 * 24 and len({x.key for x in turns}) == len(turns)
    assert sorted(k for k, _ in index_rows(layout)) == sorted(x.key for x in turns)
    assert [h.text for h in search("build 1007 cache key").hits][:1] == [
        "Build 1007 fails because the cache key changed in step 7."]
    again = quipu("history", "index", "--projects", str(projects), "--json")  # the mark is gone: nothing to redo
    assert json.loads(again.stdout)["turns_added"] == 0 and len(index_rows(layout)) == len(turns)


def test_an_archive_of_one_file_per_session_is_read_then_moved_onto_shelves(tmp_path: Path) -> None:
    """The layout before shelves: `show` reads it, the next writer moves it onto the shelves, a
    session in it goes on growing with its turn numbers, and forgetting it removes it for good."""
    layout = Layout.default()
    old = "5d1c2a10-cccc-4c21-9d0a-3e4f5a6b7c01"
    lines = [Turn(f"{old}/u-{n}", old, n, "user" if n % 2 == 0 else "assistant", f"Turn {n} about the pgbouncer pool",
                  f"2026-05-0{n + 1}T10:00:00Z", "/home/dev/db", "main").line() for n in range(3)]
    lines.append(Turn(f"{old}/u-1", old, 1, "assistant", "Turn 1, grown: raise pgbouncer's pool to 40",
                      "2026-05-02T10:00:00Z", "/home/dev/db", "main").line())  # the later line wins
    folder = layout.root / "sessions" / old[:2]
    folder.mkdir(parents=True)
    (folder / f"{old}.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    (folder / f"{old}.tmp").write_text("a rewrite a crash cut short")

    shown = quipu("history", "show", old[:13], "--json")
    assert shown.returncode == 0, shown.stderr
    assert [t["text"] for t in json.loads(shown.stdout)["turns"]] == [
        "Turn 0 about the pgbouncer pool", "Turn 1, grown: raise pgbouncer's pool to 40", "Turn 2 about the pgbouncer pool"]
    assert not (layout.root / "sessions").exists() and len(archive.session_files(layout)) == 1

    projects = tmp_path / "projects"
    t = Transcript(old, "/home/dev/db")
    t.user("And the statement timeout?")
    t.write(projects)
    write_sessions(projects, 0, 3)
    done = quipu("history", "index", "--projects", str(projects), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turns_added"] == 1 + 3 * 24
    mine = sorted((x.turn, x.text) for x in archive.session_turns(layout, old).values())
    assert mine[1:] == [(1, "Turn 1, grown: raise pgbouncer's pool to 40"), (2, "Turn 2 about the pgbouncer pool"),
                        (3, "And the statement timeout?")]
    assert [h.turn for h in search("pgbouncer pool 40").hits][:1] == [1]

    gone = quipu("history", "forget", old, "--json")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)["removed_turns"] == 4
    assert not any(b"pgbouncer" in p.read_bytes() for p in archive.session_files(layout))
    assert len(list(archive.all_turns(layout))) == 3 * 24


def test_a_line_cut_by_a_crash_takes_no_turn_of_another_session_with_it(tmp_path: Path) -> None:
    """Sessions share a shelf: a write cut short by a crash leaves a part line, and the next
    session's append still puts every one of its turns on lines of their own."""
    first, other = (f"5d1c2a10-{n:04d}-4c21-9d0a-3e4f5a6b7c01" for n in range(2))
    ids = (f"5d1c2a10-{n:04d}-4c21-9d0a-3e4f5a6b7c01" for n in range(2, 10_000))
    other = next(i for i in ids if archive.shelf_name(i) == archive.shelf_name(first))
    projects = tmp_path / "projects"
    layout = Layout.default()
    for sid in (first, other):
        t = Transcript(sid, "/home/dev/app")
        t.user(f"Why does session {sid[9:13]} time out?")
        t.assistant(f"Session {sid[9:13]} waits on the lock held by the migration.")
        path = t.write(projects)
        if sid == first:
            assert feed.append_transcript(path).added == 2
            with layout.shelf(first).open("ab") as fh:
                fh.write(b'{"key": "' + first.encode() + b'/cut", "session": "')  # what a killed write left
        else:
            assert feed.append_transcript(path).added == 2
    assert len(archive.session_files(layout)) == 1
    assert sorted(x.text for x in archive.session_turns(layout, other).values()) == [
        f"Session {other[9:13]} waits on the lock held by the migration.", f"Why does session {other[9:13]} time out?"]
    assert len(list(archive.all_turns(layout))) == 4


LINE = st.lists(st.sampled_from(['{"type": "user", "n": 1}', '{"a": [1, 2.5, null, true]}', ' ', '\t', '\r', 'x', '}',
                                 '{', '"s"', 'NaN', '[1]', '{"k": "\\u00e9\\ud83d"}', '\\', '"', ',', '1e400', '\u2028',
                                 'é']), max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=6))
def test_a_transcript_line_is_read_as_json_loads_reads_it(lines: list[str]) -> None:
    """The reader's own scan of each line keeps what json.loads keeps (an object) and counts
    what it cannot read, whatever surrounds the value."""
    from quipu.history import reader

    folder = Path(os.environ["HOME"]) / "lines"
    folder.mkdir(exist_ok=True)
    path = folder / "t.jsonl"
    path.write_bytes(b"".join(line.encode("utf-8", "surrogatepass") + b"\n" for line in lines))
    expected, bad = [], 0
    with path.open("rb") as fh:  # split as the reader's file is: at each b"\n" only
        raws = list(fh)
    for raw in raws:
        if raw.isspace():
            continue
        try:
            value = json.loads(raw)
        except UnicodeDecodeError:
            try:
                value = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                bad += 1
                continue
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict):
            expected.append(value)
    counter = [0]
    assert json.dumps(list(reader._records(path, counter))) == json.dumps(expected) and counter[0] == bad
