"""The index heals after a killed writer: a hot journal never reaches a new index file, the hook
stays silent (and starts a refresh) while one is there, and `quipu doctor` names it."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from quipu.index import index
from quipu.store.locks import is_held
from quipu.errors import EXIT_SOME_SKIPPED
from quipu.store.store import Store
from testing.fixtures import REPO_ROOT, make_store, quipu, run_prompt_hook

REAL_NOTES = Path("/work/shared/data/memories-real/notes.jsonl")
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # the first bytes of a journal SQLite will roll back
SUBJECT = "The zanzibar-kiln rotation runbook"
ASK = "how does the zanzibar-kiln rotation work?"


def _note_folder(folder: Path) -> int:
    """The real notes as markdown files when they are here, else as many made-up ones; plus one
    note on a subject of its own, which the prompt asks about."""
    folder.mkdir()
    if REAL_NOTES.is_file():
        notes = [json.loads(line) for line in REAL_NOTES.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        notes = [{"title": f"Service {n} notes", "body": f"Service {n} deploys with step {n % 7} and owner team {n % 13}."}
                 for n in range(1800)]
    for n, note in enumerate(notes):
        (folder / f"n{n:04d}.md").write_text(f"# {note['title']}\n\n{note['body']}\n", encoding="utf-8")
    (folder / "zanzibar.md").write_text(f"# {SUBJECT}\n\nRotate the zanzibar-kiln keys every Monday with "
                                        "`kiln rotate --all`, then restart the zanzibar-kiln workers.\n", encoding="utf-8")
    return len(notes) + 1


def _hot_journal(index_path: Path) -> bytes:
    with open(index_path.with_name(index_path.name + "-journal"), "rb") as fh:
        return fh.read(8)


def _hook(store: Store, session: str) -> str:
    payload = json.dumps({"prompt": ASK, "cwd": str(store.root), "session_id": session, "hook_event_name": "UserPromptSubmit"})
    done = run_prompt_hook(payload, env={"QUIPU_STORE": str(store.root)})
    assert done.returncode == 0 and done.stderr == b""
    return done.stdout.decode()


def _doctor_index(store: Store) -> dict[str, object]:
    done = quipu("--store", str(store.root), "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    return checks["index"]


def _wait_for(condition: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not condition():  # type: ignore[operator]
        time.sleep(0.1)


def test_an_import_killed_while_its_journal_is_hot_is_healed_by_a_rebuild(tmp_path: Path) -> None:
    """A SIGKILL mid-write leaves a hot journal; `quipu index --rebuild` must not put a new file
    beside it (the next writer would play it into the new file, the hook could not read it)."""
    store = make_store(tmp_path / "store")
    count = _note_folder(tmp_path / "notes")
    journal = store.index_path.with_name("index.sqlite-journal")
    for _attempt in range(5):
        child = subprocess.Popen([sys.executable, "-m", "quipu", "--store", str(store.root), "import", "markdown",
                                  str(tmp_path / "notes")], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while child.poll() is None:
            try:
                if _hot_journal(store.index_path) == JOURNAL_MAGIC:
                    os.kill(child.pid, signal.SIGKILL)
                    break
            except OSError:
                pass
        child.wait()
        if journal.exists():
            break
        subprocess.run(["git", "-C", str(store.root), "reset", "-q", "--hard", "HEAD~1"], check=True)
    assert child.returncode == -signal.SIGKILL and _hot_journal(store.index_path) == JOURNAL_MAGIC

    # While the journal is there: doctor names it and the fix; the hook is silent and asks for a refresh.
    found = _doctor_index(store)
    assert found["ok"] is False and "index.sqlite-journal" in str(found["summary"])
    assert "quipu index --rebuild" in str(found["summary"])

    done = quipu("--store", str(store.root), "index", "--rebuild")
    assert done.returncode == 0, done.stderr
    assert not journal.exists() and not store.index_path.with_name("index.sqlite-wal").exists()
    assert SUBJECT in _hook(store, "s-after-rebuild")
    assert _doctor_index(store)["ok"] is True
    db = sqlite3.connect(store.index_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        in_index = db.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        db.close()
    in_git = subprocess.run(["git", "-C", str(store.root), "ls-tree", "-r", "--name-only", "HEAD", "memories"],
                            capture_output=True, text=True, check=True).stdout.count(".md")
    # The import is one commit: all or nothing (of the notes the secret scanner lets in: a real note
    # may be skipped, as `quipu import` lists it).
    assert in_index == in_git and (in_git == 0 or count - 2 <= in_git <= count)
    assert not journal.exists()


def _plant_hot_journal(index_path: Path, elsewhere: Path) -> Path:
    """A hot journal of another index file (a copy of this one, changed by a writer killed
    mid-transaction), put beside ``index_path`` as an older quipu's rebuild left it."""
    elsewhere.mkdir()
    other = elsewhere / index_path.name
    other.write_bytes(index_path.read_bytes())
    writer = ("import sqlite3, os, signal, sys\n"
              "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "db.execute('PRAGMA cache_size = 2')\n"  # pages spill to the file mid-transaction
              "db.execute('BEGIN')\n"
              "db.execute(\"UPDATE memories SET body = body || ' changed', title = 'planted'\")\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", writer, str(other)], check=False)
    assert done.returncode == -signal.SIGKILL
    left = elsewhere / (index_path.name + "-journal")
    assert _hot_journal(other) == JOURNAL_MAGIC
    target = index_path.with_name(index_path.name + "-journal")
    os.replace(left, target)
    return target


def test_a_hot_journal_planted_beside_a_fresh_index_is_never_played_into_it(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    _note_folder(tmp_path / "notes")
    done = quipu("--store", str(store.root), "import", "markdown", str(tmp_path / "notes"))
    assert done.returncode in (0, EXIT_SOME_SKIPPED), done.stderr
    index.ensure_fresh(store)
    assert SUBJECT in _hook(store, "s-before")
    journal = _plant_hot_journal(store.index_path, tmp_path / "elsewhere")

    # The hook cannot read the index (a read-only connection cannot roll a hot journal back): it
    # stays silent and starts a refresh, which heals the index in the background.
    assert _hook(store, "s-planted") == ""
    log = (Path(os.environ["QUIPU_HOME"]) / "logs" / "hook.log").read_text()
    assert "refresh was started" in log
    lock = store.index_path.with_name("index.lock")
    _wait_for(lambda: not journal.exists() and not is_held(lock))
    assert not journal.exists()
    assert SUBJECT in _hook(store, "s-healed")

    db = sqlite3.connect(store.index_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM memories WHERE title = 'planted'").fetchone()[0] == 0
    finally:
        db.close()
    assert _doctor_index(store)["ok"] is True


def test_a_journal_planted_beside_the_index_is_rebuilt_over_by_the_next_read(tmp_path: Path) -> None:
    """The same without the hook: the first command that reads the index (under its lock) rebuilds
    it from git instead of letting SQLite play a journal it cannot prove belongs to the file."""
    store = make_store(tmp_path / "store")
    _note_folder(tmp_path / "notes")
    assert quipu("--store", str(store.root), "import", "markdown", str(tmp_path / "notes")).returncode in (
        0, EXIT_SOME_SKIPPED)
    index.ensure_fresh(store)
    journal = _plant_hot_journal(store.index_path, tmp_path / "elsewhere")
    found = _doctor_index(store)
    assert found["ok"] is False and "index.sqlite-journal" in str(found["summary"])
    done = quipu("--store", str(store.root), "search", "--json", "zanzibar-kiln rotation")
    assert done.returncode == 0, done.stderr
    assert [hit["title"] for hit in json.loads(done.stdout)][:1] == [SUBJECT]
    assert not journal.exists()
    db = sqlite3.connect(store.index_path)
    try:
        assert db.execute("SELECT count(*) FROM memories WHERE title = 'planted'").fetchone()[0] == 0
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
    assert _doctor_index(store)["ok"] is True


def test_the_history_index_rebuilt_beside_a_journal_never_takes_it(tmp_path: Path) -> None:
    """The past-conversation index is rebuilt the same way (a new file renamed into place): a
    journal a killed writer left beside the old file goes before the new file takes the name."""
    from quipu.history.archive import Layout
    from testing.transcripts import Transcript

    projects = tmp_path / "claude" / "projects"
    t = Transcript("5d1c2a10-5b7e-4c21-9d0a-3e4f5a6b7c31", "/home/dev/shop")
    t.user("Why is the zanzibar-kiln rotation failing on Mondays?")
    t.assistant("The kiln keys expired before the rotation job ran.")
    t.write(projects)
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    assert quipu("history", "index", env=env).returncode == 0
    layout = Layout.default()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = elsewhere / layout.index.name
    other.write_bytes(layout.index.read_bytes())
    writer = ("import sqlite3, os, signal, sys\n"
              "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "db.execute('PRAGMA cache_size = 2')\n"
              "db.execute('BEGIN')\n"
              "db.execute(\"UPDATE meta SET value = 'planted'\")\n"
              "db.execute('CREATE TABLE filler(x)')\n"
              "db.executemany('INSERT INTO filler VALUES (?)', [('x' * 900,)] * 2000)\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    assert subprocess.run([sys.executable, "-c", writer, str(other)], check=False).returncode == -signal.SIGKILL
    journal = layout.index.with_name(layout.index.name + "-journal")
    os.replace(elsewhere / (other.name + "-journal"), journal)
    assert _hot_journal(layout.index) == JOURNAL_MAGIC

    done = quipu("history", "index", "--rebuild", env=env)
    assert done.returncode == 0, done.stderr
    assert not journal.exists()
    found = quipu("history", "search", "--json", "zanzibar-kiln rotation", env=env)
    assert found.returncode == 0, found.stderr
    assert any("zanzibar-kiln" in hit["text"] for hit in json.loads(found.stdout)["hits"])
    db = sqlite3.connect(layout.index)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert "planted" not in [row[0] for row in db.execute("SELECT value FROM meta")]
    finally:
        db.close()


def test_the_hook_treats_a_damaged_index_as_absent_and_a_refresh_heals_it(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "zanzibar.md").write_text(f"# {SUBJECT}\n\nRotate the zanzibar-kiln keys every Monday.\n")
    assert quipu("--store", str(store.root), "import", "markdown", str(tmp_path / "notes")).returncode == 0
    index.ensure_fresh(store)
    store.index_path.write_bytes(b"not a database at all" * 500)
    assert _hook(store, "s-damaged") == ""
    assert "refresh was started" in (Path(os.environ["QUIPU_HOME"]) / "logs" / "hook.log").read_text()
    _wait_for(lambda: SUBJECT in _hook(store, f"s-{time.monotonic_ns()}"))
    assert SUBJECT in _hook(store, "s-healed")
