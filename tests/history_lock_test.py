"""The archive lock against what a transcript path can be: only regular files are read, nothing a
transcript can slow down is done while the lock is held, and a command that finds the archive busy
says who holds it and gives up (a hook's worker gives up silently and logs)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quipu.history import archive
from quipu.history.archive import Layout
from quipu.history.feed import append_transcript
from testing.transcripts import Transcript

S1 = "7a1b2c3d-5b7e-4c21-9d0a-3e4f5a6b7c01"
S2 = "7a1b2c3d-5b7e-4c21-9d0a-3e4f5a6b7c02"
# A process that holds the archive lock (quipu's own) until its stdin closes.
HOLD = ("import sys\nfrom quipu.history.archive import Layout\nwith Layout.default().lock():\n"
        "    print('held', flush=True)\n    sys.stdin.read()\n")


def run(*argv: str, env: dict[str, str] | None = None, input: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real `python -m quipu`; ``timeout`` only catches a hang."""
    return subprocess.run([sys.executable, "-m", "quipu", *argv], capture_output=True, text=True, input=input,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def hook_log() -> str:
    path = Path(os.environ["QUIPU_HOME"]) / "logs" / "session-hook.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def kiln_session(projects: Path, session: str = S1) -> Path:
    t = Transcript(session, "/home/dev/kiln")
    t.user("Why does the zanzibar kiln rotation fail on Mondays?")
    t.assistant("The kiln keys expire on Sunday night, before the rotation job runs.")
    return t.write(projects)


def test_a_named_pipe_for_a_transcript_is_never_opened_and_holds_up_no_one(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects"
    kiln_session(projects)
    fifo = projects / "-home-dev-kiln" / "0f0f0f0f-0000-4000-8000-000000000001.jsonl"
    os.mkfifo(fifo)
    try:
        event = {"session_id": "x", "transcript_path": str(fifo), "cwd": "/", "hook_event_name": "PreCompact",
                 "trigger": "auto"}
        hooked = run("pre-compact", "--hook", input=json.dumps(event), timeout=30)
        assert (hooked.returncode, hooked.stdout) == (0, "")
        assert "the transcript is not a regular file" in hook_log()  # no worker started for it

        # A worker given the pipe anyway (as an earlier hook would start it): it reads nothing and ends.
        worker = run("history", "append", "--worker", "--transcript", str(fifo), "--session", "x", timeout=30)
        assert (worker.returncode, worker.stdout, worker.stderr) == (0, "", "")
        assert "not a regular file (a named pipe)" in hook_log()
        shown = run("history", "append", "--transcript", str(fifo), "--json", timeout=30)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["skipped"] == [{"path": str(fifo), "why": "not a regular file (a named pipe): not read"}]

        # A backfill lists the pipe and archives the rest; every other writer goes on.
        done = run("history", "index", "--projects", str(projects), "--json", timeout=120)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["turns_added"] == 2
        assert {"path": str(fifo), "why": "not a regular file (a named pipe): not read"} in summary["skipped"]
        forgot = run("history", "forget", "--matching", "nothing says this", timeout=30)
        assert forgot.returncode == 0 and "waiting" not in forgot.stderr, forgot.stderr
    finally:
        try:  # a reader blocked on the pipe would take this writer: nothing may be there
            blocked = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            blocked = None
        if blocked is not None:
            os.close(blocked)
        assert blocked is None, "a process opened the named pipe and waited on it"


def test_the_transcript_is_read_before_the_lock_is_waited_for(tmp_path: Path) -> None:
    """Reading a transcript (what a slow disk or a huge file makes slow) is done before the lock
    is taken: an append waiting for the lock has read it already, so it archives the turns even
    when the transcript is gone by the time the lock is free."""
    path = kiln_session(tmp_path / "projects")
    holder = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=os.environ.copy())
    append = None
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        append = subprocess.Popen([sys.executable, "-m", "quipu", "history", "append", "--transcript", str(path), "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "QUIPU_HISTORY_LOCK_WAIT": "60"})
        assert append.stderr is not None
        assert "waiting for the past-conversation archive" in append.stderr.readline()
        path.unlink()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert append is not None
    out, _err = append.communicate(timeout=60)
    assert append.returncode == 0
    assert json.loads(out)["turns_added"] == 2
    assert len(archive.session_turns(Layout.default(), S1)) == 2


@pytest.mark.slow
def test_a_command_waiting_for_the_archive_says_who_holds_it_and_gives_up(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects"
    path = kiln_session(projects)
    append_transcript(path)
    layout = Layout.default()
    layout.index.unlink()  # a search must rebuild it, under the lock
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([{"uuid": "0a1b2c3d-0000-4000-8000-000000000001", "chat_messages": [
        {"uuid": "m1", "sender": "human", "text": "Which kiln runs on Mondays?"}]}]), encoding="utf-8")
    grown = kiln_session(projects, S2)
    shelves = {p: p.read_bytes() for p in archive.session_files(layout)}

    holder = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=os.environ.copy())
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert (layout.root / "lock").read_text() == f"pid {holder.pid}\n"
        wait = {"QUIPU_HISTORY_LOCK_WAIT": "1.5"}
        for argv in (("history", "forget", "--matching", "kiln"), ("history", "index", "--projects", str(projects)),
                     ("history", "index", "--rebuild"), ("history", "append", "--transcript", str(grown)),
                     ("history", "search", "kiln rotation"), ("history", "import", "claude", str(export))):
            done = run(*argv, env=wait)
            assert done.returncode == 1, (argv, done.stdout, done.stderr)
            said = done.stderr
            assert said.count("waiting for the past-conversation archive") == 1, (argv, said)
            assert f"pid {holder.pid} holds its lock" in said and "giving up after 1.5 s" in said, (argv, said)
            assert "is busy" in said and "nothing was changed" in said and f"kill {holder.pid}" in said, (argv, said)
            assert "QUIPU_HISTORY_LOCK_WAIT" in said, (argv, said)
        answer = run("history", "forget", "--matching", "kiln", "--json", env=wait)
        assert answer.returncode == 1
        error = json.loads(answer.stdout)["error"]
        assert error["exit"] == 1 and "is busy" in error["message"] and any("kill" in f for f in error["fix"])

        # A hook's worker gives up without a word on its stderr, and logs it.
        worker = run("history", "append", "--worker", "--transcript", str(grown), "--session", S2,
                     env={"QUIPU_HISTORY_LOCK_WAIT": "0.5"})
        assert (worker.returncode, worker.stdout, worker.stderr) == (0, "", "")
        assert f"gave up on session {S2}" in hook_log() and f"pid {holder.pid}" in hook_log()
        assert {p: p.read_bytes() for p in archive.session_files(layout)} == shelves  # nothing was changed
        assert not layout.index.exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0

    assert (layout.root / "lock").read_text() == ""  # its holder let go
    done = run("history", "append", "--transcript", str(grown), "--json")
    assert done.returncode == 0 and "waiting" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["turns_added"] == 2
    assert run("history", "forget", "--matching", "kiln").returncode == 0
