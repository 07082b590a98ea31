"""The `quipu` command line: help everywhere, --json on reads, errors that say how to fix them (issue 2)."""
from __future__ import annotations

import argparse
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from quipu import cli
from quipu.store.store import Store
from testing.fixtures import add_all, git, make_store, memory, quipu


@pytest.fixture
def store(store_path: Path) -> Store:
    store = make_store(store_path)
    add_all(store, [
        memory("rule-push", "Never push to main directly", "Open a pull request instead.", cls="rule",
               topics=["git"]),
        memory("fact-port", "The API listens on port 9090", "Port 9090 since the move.", cls="reference",
               topics=["api"]),
        memory("fact-old", "The API listens on port 8080", "Old port.", cls="reference", topics=["api"]),
    ])
    store.supersede("fact-old", "fact-port")
    return store


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_sub_command_has_help(capsys: pytest.CaptureFixture[str], name: str) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: quipu {name}")
    assert len(out.split("\n\n", 1)[-1].strip()) > 20  # a description, not just the usage line


def test_version_is_what_the_parser_says_without_building_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    short = capsys.readouterr().out
    with pytest.raises(SystemExit) as done:  # the parser's own --version, reached with another option beside it
        cli.main(["--store", "somewhere", "--version"])
    assert done.value.code == 0 and capsys.readouterr().out == short == f"quipu {cli.__version__}\n"


def test_the_top_level_help_lists_every_command_with_a_summary() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {action.dest: action.help for action in sub._choices_actions}
    assert set(summaries) == set(cli.COMMANDS)
    assert all(summary and len(summary) > 5 for summary in summaries.values()), summaries


READS = [
    ("show", "fact-old"),
    ("list",),
    ("list", "--class", "reference", "--status", "superseded"),
    ("search", "port"),
    ("log",),
    ("log", "--memory", "fact-old"),
    ("doctor",),
    ("index",),
    ("hooks", "status"),
    ("recall", "which port does the API listen on"),
]


@pytest.mark.parametrize("argv", READS, ids=[" ".join(a) for a in READS])
def test_read_commands_print_json(capsys: pytest.CaptureFixture[str], store: Store, argv: tuple[str, ...]) -> None:
    code, out, _err = run(capsys, "--store", str(store.root), *argv, "--json")
    assert code in (0, 1)  # doctor exits 1 when a check fails (no hooks here); its JSON still prints
    json.loads(out)


def test_json_of_reads_carries_the_derived_state(capsys: pytest.CaptureFixture[str], store: Store) -> None:
    shown = json.loads(run(capsys, "--store", str(store.root), "show", "fact-old", "--json")[1])
    assert (shown["current_status"], shown["superseded_by"]) == ("superseded", "fact-port")
    listed = json.loads(run(capsys, "--store", str(store.root), "list", "--class", "reference", "--json")[1])
    assert {r["id"]: r["status"] for r in listed} == {"fact-port": "active", "fact-old": "superseded"}
    topic = json.loads(run(capsys, "--store", str(store.root), "list", "--topic", "git", "--json")[1])
    assert [r["id"] for r in topic] == ["rule-push"]
    found = json.loads(run(capsys, "--store", str(store.root), "search", "port", "--json")[1])
    assert [h["id"] for h in found] == ["fact-port", "fact-old"]  # the superseded one ranks below
    log = json.loads(run(capsys, "--store", str(store.root), "log", "--memory", "fact-old", "--json")[1])
    assert [e["trailers"]["Quipu-Action"] for e in log] == ["supersede", "add"]


def test_add_reads_the_body_from_stdin_and_from_the_editor(store: Store, tmp_path: Path) -> None:
    done = quipu("--store", str(store.root), "add", "-t", "Stdin note", "--json", "-", input="The body came from stdin\n")
    assert done.returncode == 0, done.stderr
    added = json.loads(done.stdout)
    assert Store(store.root).get(added["id"]).body == "The body came from stdin\n"

    editor = _editor(tmp_path, "title: From the editor\nclass: preference\ntopics: [editors]\n", "Typed in vim.")
    done = _in_a_terminal("--store", str(store.root), "add", "--json", editor=editor)
    assert done.returncode == 0, done.stderr
    edited = Store(store.root).get(json.loads(done.stdout)["id"])
    assert (edited.title, edited.cls, edited.topics, edited.body.strip()) == ("From the editor", "preference", ("editors",), "Typed in vim.")


def _in_a_terminal(*argv: str, editor: Path) -> subprocess.CompletedProcess[str]:
    """`quipu add` with no body opens $EDITOR only when stdin is a terminal: give it one."""
    leader, follower = os.openpty()
    try:
        return subprocess.run([sys.executable, "-m", "quipu", *argv], stdin=follower, capture_output=True, text=True,
                              env={**os.environ, "EDITOR": str(editor)}, timeout=60)
    finally:
        os.close(leader)
        os.close(follower)


def _editor(tmp_path: Path, frontmatter: str, body: str) -> Path:
    script = tmp_path / "fake-editor"
    script.write_text(f"#!/bin/sh\ncat > \"$1\" <<'EOF'\n---\n{frontmatter}---\n{body}\nEOF\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _error(done: object) -> str:
    rc, err = done.returncode, done.stderr  # type: ignore[attr-defined]
    assert rc == 1, err
    assert err.startswith("quipu: error: ") and "Traceback" not in err
    return err  # type: ignore[no-any-return]


def test_errors_exit_1_with_a_message_that_says_how_to_fix_it(store: Store, tmp_path: Path) -> None:
    s = str(store.root)
    assert "- run `quipu init" in _error(quipu("--store", str(tmp_path / "nowhere"), "search", "port"))
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "not a git repository" in _error(quipu("--store", str(plain), "list"))
    (tmp_path / "a-file").write_text("not a folder\n")
    as_file = _error(quipu("--store", str(tmp_path / "a-file"), "list"))
    assert "it is a file: pass --store" in as_file and "quipu init" not in as_file
    for args in (["init", str(tmp_path / "a-file" / "sub")], ["clone", s, str(tmp_path / "a-file" / "sub")]):
        assert "a part of it is a file where a folder must be" in _error(quipu(*args))  # exit 1, never 3
    assert "- run `quipu list`" in _error(quipu("--store", s, "show", "no-such-memory"))
    assert "no '/', '..'" in _error(quipu("--store", s, "add", "--id", "../../etc/passwd", "text"))
    assert "invalid id" in _error(quipu("--store", s, "add", "--id", "/abs/path", "text"))
    assert "- choose another id" in _error(quipu("--store", s, "add", "--id", "rule-push", "again"))
    assert "- run `quipu log`" in _error(quipu("--store", s, "undo", "0123456789abcdef"))
    too_big = quipu("--store", s, "add", "-t", "Huge", "-", input="word " * 250_000)
    assert "a memory file may hold at most 1,000,000" in _error(too_big)
    editor = _editor(tmp_path, "title: Bad class\nclass: opinion\n", "x")
    err = _error(_in_a_terminal("--store", s, "add", editor=editor))
    assert "field 'class'" in err and "allowed values: rule, preference, fact, reference, project-note, event" in err
    git(store.root, "checkout", "-q", "--detach")
    assert "switch main" in _error(quipu("--store", s, "add", "on a detached head"))
    assert len(store.log()) == 5  # init, three adds, one supersession: none of the above wrote anything


def test_an_unexpected_failure_exits_3_with_a_log_path(store: Store) -> None:
    """A damaged repository (a memory's blob deleted from .git/objects) is not something quipu
    expects; the CLI says so, exits 3, and leaves the traceback in a log file."""
    blob = git(store.root, "rev-parse", "HEAD:memories/fa/fact-port.md").strip()
    os.unlink(store.root / ".git" / "objects" / blob[:2] / blob[2:])
    done = quipu("--store", str(store.root), "show", "fact-port")
    assert done.returncode == 3
    assert "quipu: unexpected error" in done.stderr
    log = Path(done.stderr.rsplit("details were written to ", 1)[1].strip())
    assert log.is_file() and "Traceback" in log.read_text()
    assert str(log).startswith(os.environ["QUIPU_HOME"])


def test_python_dash_m_quipu_and_init_create_a_working_store(tmp_path: Path) -> None:
    target = tmp_path / "fresh"
    done = quipu("init", str(target), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["created"] and set(report["hooks"]) >= {"post-commit", "post-merge", "post-checkout", "post-rewrite"}
    assert (target / "quipu.toml").is_file() and git(target, "status", "--porcelain") == ""
    again = quipu("init", str(target), "--json")
    assert again.returncode == 0 and not json.loads(again.stdout)["created"]


def test_init_inside_a_project_keeps_the_store_out_of_the_projects_repository(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    done = quipu("init", str(project / ".quipu"))
    assert done.returncode == 0, done.stderr
    assert git(project, "status", "--porcelain") == ""  # .quipu is ignored through .git/info/exclude
    found = quipu("add", "-t", "Project memory", "found from a subfolder", cwd=project)
    assert found.returncode == 0, found.stderr
    assert "memories/" in git(project / ".quipu", "ls-tree", "-r", "--name-only", "HEAD")


def _doctor(root: Path, *more: str) -> tuple[int, dict[str, dict[str, object]]]:
    out = quipu("--store", str(root), "doctor", "--json", *more)
    return out.returncode, {c["name"]: c for c in json.loads(out.stdout)["checks"]}


def test_doctor_says_which_switches_of_the_environment_turn_memory_off(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    _code, checks = _doctor(store.root)
    assert checks["switches"]["ok"] and "memory is on" in str(checks["switches"]["summary"])
    out = quipu("--store", str(store.root), "doctor", "--json", env={"QUIPU_RECALL": "off", "QUIPU_CAPTURE": "0"})
    found = {c["name"]: c for c in json.loads(out.stdout)["checks"]}["switches"]
    assert found["ok"] and "QUIPU_RECALL, QUIPU_CAPTURE off" in found["summary"]
    assert any("QUIPU_CAPTURE=0: nothing of a session is captured" in d for d in found["details"])
    explained = quipu("--store", str(store.root), "recall", "--explain", "how do we deploy?", env={"QUIPU_RECALL": "no"})
    assert "QUIPU_RECALL is off here" in explained.stdout
    assert "QUIPU_RECALL" not in quipu("--store", str(store.root), "recall", "--explain", "how do we deploy?").stdout


def test_doctor_names_a_stale_git_index_lock_and_repair_moves_it_aside(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    lock = store.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    os.utime(lock, (os.path.getmtime(lock) - 60, os.path.getmtime(lock) - 60))  # left by a killed `git add`
    blocked = subprocess.run(["git", "-C", str(store.root), "add", "-A"], capture_output=True, text=True)
    assert blocked.returncode != 0 and "index.lock" in blocked.stderr

    code, checks = _doctor(store.root)
    repo_check = checks["git repository"]
    assert code == 1 and repo_check["ok"] is False and "stale git lock" in str(repo_check["summary"])
    detail = " ".join(map(str, repo_check["details"]))  # type: ignore[call-overload]
    assert str(lock) in detail and "no process holds it" in detail and f"rm -- {lock}" in detail

    # A live process holding it (a `git commit -a` with its editor open) makes it not stale.
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("processes holding a file cannot be listed here (no /proc)")
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(lock)!r}); print('open', flush=True); "
                               "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        code, checks = _doctor(store.root)
        assert checks["git repository"]["ok"] is True and lock.exists()
    finally:
        holder.communicate("")

    code, checks = _doctor(store.root, "--repair")
    assert checks["git repository"]["ok"] is True and not lock.exists()
    assert "stale index.lock moved aside" in " ".join(map(str, checks["git repository"]["details"]))  # type: ignore[call-overload]
    assert list((store.root / ".git" / "quipu-damaged").rglob("index.lock"))
    assert subprocess.run(["git", "-C", str(store.root), "add", "-A"]).returncode == 0


def test_doctor_lists_committed_files_outside_the_stores_schema(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    (store.root / "notes").mkdir()
    (store.root / "notes" / "todo.txt").write_text("not a memory\n")
    (store.root / "skills" / "drafts" / "some-skill").mkdir(parents=True)
    (store.root / "skills" / "drafts" / "some-skill" / "draft.json").write_text("not json\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "by hand")
    code, checks = _doctor(store.root)
    tree = checks["store tree"]
    assert code == 1 and tree["ok"] is False
    details = "\n".join(map(str, tree["details"]))  # type: ignore[call-overload]
    assert "notes/todo.txt: it is outside the store's schema" in details
    assert "skills/drafts/some-skill/draft.json: it is not UTF-8 JSON" in details
    with pytest.raises(Exception, match="outside the store's schema"):
        store.commit({"notes/more.txt": b"x\n"}, "quipu: a path outside the schema", {"Quipu-Action": "add"})


@pytest.mark.parametrize(("args", "code", "words"), [
    (["show", "no-such-memory"], 1, "no memory 'no-such-memory'"),
    (["undo"], 2, "one of the arguments commit --memory --sweep is required"),
    (["undo", "--memory", ""], 2, "an empty value names nothing"),
    (["log", "--memory", ""], 2, "an empty value names nothing"),
    (["add", "text", "--file", "notes.md"], 2, "give the text or --file, not both"),
    (["list", "--limit", "-3"], 2, "quipu list"),
    (["import", "markdown", "no-such-folder"], 1, "no-such-folder"),
])
def test_a_json_command_that_fails_still_answers_json_on_stdout(store: Store, tmp_path: Path, args: list[str],
                                                               code: int, words: str) -> None:
    result = quipu("--store", str(store.root), *args, "--json", cwd=tmp_path)

    assert result.returncode == code, result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["exit"] == code and words in error["message"] + " ".join(error["fix"])
    assert "quipu" in result.stderr  # the person's message is where it always was
