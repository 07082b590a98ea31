"""Skills: a resumed session's copied turns count once, and a draft's record keeps error text only.

Claude Code's `--resume` and `--continue` write a new session file that repeats the earlier turns
with the same message uuids under a new session id; the copies must not make one session three.
A draft's record (`draft.json`, `refusal.json`) is committed to a store that is synced and pushed,
so it keeps the error a person pasted, never the words of the prompt around it.
"""
from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest

from quipu import cli
from quipu.history.archive import Layout
from quipu.history.feed import backfill
from quipu.skills import gate, queue
from quipu.skills.detect import distinct_sessions, error_texts, find_candidates
from quipu.skills.draft import draft_all
from quipu.model import ScriptedModel
from quipu.store.store import Store
from testing.fixtures import git
from testing import skills
from testing.skills import ANSWER, FAILURE
from testing.transcripts import Transcript, project_slug

person, project = skills.person, skills.project  # the shared fixtures
PROCEDURE = ("git stash", "git pull --rebase <arg>", "git stash pop")

DAY = [dt.datetime(2026, 5, d, 10, 0, tzinfo=dt.timezone.utc) for d in (4, 5, 6)]
A, B, C = ("aaaa0000-0000-4000-8000-00000000000a", "bbbb0000-0000-4000-8000-00000000000b",
           "cccc0000-0000-4000-8000-00000000000c")


def rebase(t: Transcript, prompt: str, n: int) -> None:
    t.user(prompt)
    t.tool("Bash", "Saved working directory", command="git stash")
    t.tool("Bash", "Successfully rebased", command=f"git pull --rebase origin branch-{n}")
    t.tool("Bash", "Dropped refs/stash@{0}", command="git stash pop")
    t.assistant("Rebased on the latest main; your changes are back.")


def resumed(earlier: list[bytes], sid: str) -> list[bytes]:
    """The lines Claude Code copies into a resumed session's new file: the same records and uuids,
    the session id rewritten."""
    out = []
    for line in earlier:
        record = json.loads(line)
        if "sessionId" in record:
            record["sessionId"] = sid
        out.append(json.dumps(record, separators=(",", ":")).encode())
    return out


def write(projects: Path, cwd: Path, sid: str, lines: list[bytes]) -> None:
    folder = projects / project_slug(str(cwd))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sid}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))


def index(projects: Path) -> Path:
    layout = Layout.default()
    backfill(projects, layout=layout)
    return layout.index


def test_a_session_resumed_twice_is_one_session_not_three(
        project: Path, person: Path, store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    projects = person / "projects"
    first = Transcript(A, str(project), start=DAY[0])
    rebase(first, f"The pull failed: {FAILURE}", 0)
    write(projects, project, A, first.lines)
    second = Transcript(B, str(project), start=DAY[1])  # `claude --resume`: the earlier turns, then a question
    second.user("Thanks. Which branch am I on now?")
    second.assistant("You are on main.")
    write(projects, project, B, resumed(first.lines, B) + second.lines)
    third = Transcript(C, str(project), start=DAY[2])
    third.user("And is the work tree clean?")
    third.assistant("Yes, nothing is left to commit.")
    write(projects, project, C, resumed(first.lines, C) + second.lines + third.lines)
    path = index(projects)

    assert find_candidates(path) == []
    Store.init(store_path)
    sentinel = tmp_path / "model-was-called"
    model = tmp_path / "model.py"
    model.write_text(f"open({str(sentinel)!r}, 'w').close()\nprint('{{}}')\n")
    capsys.readouterr()
    assert cli.main(["skills", "candidates", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert cli.main(["--store", str(store_path), "skills", "draft", "--json",
                     "--model", f"command:{sys.executable} {model}"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["candidates"] == 0 and report["model"]["calls"] == 0 and not sentinel.exists()


def test_a_resumed_session_that_repeats_the_procedure_in_new_turns_counts(person: Path, project: Path) -> None:
    projects = person / "projects"
    first = Transcript(A, str(project), start=DAY[0])
    rebase(first, f"The pull failed: {FAILURE}", 0)
    write(projects, project, A, first.lines)
    second = Transcript(B, str(project), start=DAY[1])
    rebase(second, f"Again, the next day: {FAILURE}", 1)
    write(projects, project, B, resumed(first.lines, B) + second.lines)
    third = Transcript(C, str(project), start=DAY[2])
    rebase(third, f"And once more: {FAILURE}", 2)
    write(projects, project, C, resumed(first.lines, C) + resumed(second.lines, C) + third.lines)

    found = find_candidates(index(projects))
    assert [c.steps for c in found] == [PROCEDURE]
    assert set(found[0].sessions) == {A, B, C} and len(found[0].sessions) == 3
    # six copies of three turns: three occurrences, each in the session it was first run in
    assert len(found[0].occurrences) == 3 and len({o.session for o in found[0].occurrences}) == 3


def test_sessions_are_counted_by_turns_no_other_counted_session_shares() -> None:
    assert len(distinct_sessions([(A, "u1"), (B, "u1"), (C, "u1")])) == 1
    # whichever order the copies come in, each session that ran the procedure anew counts
    pairs = [(C, "u1"), (C, "u5"), (C, "u9"), (B, "u1"), (B, "u5"), (A, "u1")]
    for order in (pairs, pairs[::-1], sorted(pairs)):
        held = distinct_sessions(order)
        assert held == {A: "u1", B: "u5", C: "u9"}
    # two turns of one session never make two sessions
    assert len(distinct_sessions([(A, "u1"), (A, "u2"), (B, "u1"), (B, "u2")])) == 2
    assert len(distinct_sessions([(A, "u1"), (A, "u2")])) == 1


@pytest.mark.parametrize("line, kept", [
    (f"The pull fails: {FAILURE} Fix it, the release for Acme is tomorrow.", [FAILURE]),
    ("make lint says: error: line too long in shop/orders.py", ["error: line too long in shop/orders.py"]),
    ("I get `bash: deployx: command not found` when I run the deploy for Acme", ["bash: deployx: command not found"]),
    ("It says \"fatal: not a git repository\" and my boss is annoyed", ["fatal: not a git repository"]),
    ("ls: cannot access 'x': No such file or directory", ["No such file or directory"]),
    ("The build failed on CI yesterday for the Acme release, please look.", []),
    ("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
     ["json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"]),
])
def test_error_text_is_the_message_alone_never_the_prompt_around_it(line: str, kept: list[str]) -> None:
    assert error_texts(line) == kept


def test_error_text_is_redacted_before_it_is_cut() -> None:
    token = "ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
    found = error_texts(f"The push fails: error: authentication failed for token {token}. Please help.")
    assert found and token not in found[0] and found[0].startswith("error: authentication failed for token ")


def store_text(store_path: Path) -> str:
    """Every version of every file the store's history holds, and its commit messages."""
    return git(store_path, "log", "--all", "-p", "--format=%B")


def test_draft_and_refusal_records_hold_the_error_text_never_the_prompt(
        project: Path, person: Path, store_path: Path, tmp_path: Path) -> None:
    projects = person / "projects"
    private = "Fix it, the Acme release is tomorrow and Dana is waiting."
    for i, sid in enumerate((A, B, C)):
        t = Transcript(sid, str(project), start=DAY[i])
        rebase(t, f"The pull fails on the acme-payments branch: {FAILURE} {private}", i)
        t.write(projects)
    found = find_candidates(index(projects))
    assert found[0].failures == (FAILURE,)

    store = Store.init(store_path)[0]
    out = draft_all(store, found, ScriptedModel([ANSWER]), gate.Context()).outcomes
    assert out[0].admitted, out[0].reasons
    record = json.loads((store_path / "skills" / "drafts" / ANSWER["name"] / "draft.json").read_text())
    assert record["failures"] == [FAILURE] and record["failure"] == FAILURE
    assert set(record["sessions"]) == {A, B, C}

    other = Store.init(tmp_path / "other")[0]  # refused: the model's failure is not from the sessions
    out = draft_all(other, found, ScriptedModel([{**ANSWER, "failure": "error: something else went wrong"}]),
                    gate.Context()).outcomes
    assert not out[0].admitted
    refused = [e for e in queue.entries(other) if e.kind == "refused"]
    assert refused[0].data["failures"] == [FAILURE]

    for root in (store_path, tmp_path / "other"):
        history = store_text(root)
        assert FAILURE in history
        for words in ("Acme release", "Dana", "The pull fails", "acme-payments branch"):
            assert words not in history, (root, words)
