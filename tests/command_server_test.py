"""The one-memory commands through the command server (quipu/warm/): real `quipu` processes, a
real server process, real sockets and passed descriptors. A served command must do and print what
the command run alone does, with the client's environment, folder and streams; and every way the
server can be missing, old, unusable or cut off must leave the command run once, here or there."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from quipu.prompt import server as places
from quipu.store import gitstore
from quipu.store.store import Store
from quipu.warm import client, server
from testing.fixtures import alive, example_store, git, make_store, quipu, real_python, wait_for

OFF = {"QUIPU_COMMAND_SERVER": "off"}


@pytest.fixture
def home(quipu_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """QUIPU_HOME with the command server on (the default a user gets); any server stopped after."""
    monkeypatch.delenv("QUIPU_COMMAND_SERVER")
    path = Path(os.environ["QUIPU_HOME"])
    yield path
    pid = places.pid_of(str(path), "command")
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def run(*args: str, stdin: str = "", cwd: Path | None = None, **env: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    """(the finished `python -m quipu ARGS`, whether it ran the command itself: False means served)."""
    done = subprocess.run([real_python(), "-X", "importtime", "-m", "quipu", *args], input=stdin, text=True,
                          capture_output=True, env={**os.environ, **env}, cwd=cwd, timeout=120)
    lines = done.stderr.splitlines()
    loaded = any(line.startswith("import time:") and line.rstrip().endswith("| quipu.cli") for line in lines)
    done.stderr = "".join(line + "\n" for line in lines if not line.startswith("import time:"))
    return done, loaded


def started(home: Path) -> int:
    wait_for(lambda: (home / "run" / "command.sock").exists() and alive(places.pid_of(str(home), "command")),
             "the command server")
    return places.pid_of(str(home), "command") or 0


def serving(home: Path, store: Store) -> int:
    """Start the server the way a user does (a first command), and wait until it listens."""
    run("--store", str(store.root), "show", "deploy-procedure")
    return started(home)


def age_start_mark(home: Path) -> None:
    os.utime(home / "command-server.started", (time.time() - 3600, time.time() - 3600))


def log_of(home: Path) -> str:
    path = home / "logs" / "hook.log"
    return path.read_text() if path.exists() else ""


def test_a_served_command_does_and_prints_what_it_does_alone(tmp_path: Path, home: Path) -> None:
    alone_store = example_store(tmp_path / "alone")
    served_store = example_store(tmp_path / "served")
    serving(home, served_store)
    note = tmp_path / "note.md"
    note.write_text("---\ntitle: Rotate the staging keys\ntopics: [keys]\n---\nThe staging keys rotate monthly.\n")
    cases: list[tuple[list[str], str]] = [
        (["add", "-t", "Deploy freeze on Fridays", "--id", "freeze", "No deploys after noon on Fridays."], ""),
        (["add", "--id", "rotate", "-f", str(note), "--json"], ""),
        (["add", "-t", "From stdin", "--id", "piped", "-"], "Piped text, with ünïcode.\n"),
        (["add", "-t", "Deploy freeze on Fridays", "No deploys after noon on Fridays."], ""),  # near-identical: exit 1
        (["show", "freeze"], ""),
        (["show", "rotate", "--json"], ""),
        (["label", "freeze", "pinned"], ""),
        (["retract", "piped", "--reason", "a test"], ""),
        (["show", "no-such-memory"], ""),
        (["add", "--class", "nonsense", "x"], ""),  # a usage error: exit 2
        (["add", "--help"], ""),
    ]
    for args, stdin in cases:
        alone, alone_loaded = run("--store", str(alone_store.root), *args, stdin=stdin, **OFF)
        served, served_loaded = run("--store", str(served_store.root), *args, stdin=stdin)
        assert alone_loaded and not served_loaded, args
        assert served.returncode == alone.returncode, (args, served.stderr)
        assert _same(served.stdout, served_store) == _same(alone.stdout, alone_store), args
        assert _same(served.stderr, served_store) == _same(alone.stderr, alone_store), args
    for store in (alone_store, served_store):
        assert all(store.exists(memory_id) for memory_id in ("freeze", "rotate", "piped"))
    assert json.loads(run("--store", str(served_store.root), "show", "piped", "--json")[0].stdout)["current_status"] == "retracted"


def _same(text: str, store: Store) -> str:
    """``text`` without what differs between two stores (their paths, commit ids, times)."""
    import re

    text = text.replace(str(store.root), "STORE")
    return re.sub(r"\b[0-9a-f]{12,40}\b|\d{4}-\d\d-\d\dT[\d:.]+Z?", "#", text)


def test_the_command_runs_with_the_clients_environment_folder_and_streams(tmp_path: Path, home: Path) -> None:
    user = example_store(home / "store")
    serving(home, user)
    project = tmp_path / "proj"
    make_store(project / ".quipu")
    (project / "src").mkdir()
    done, loaded = run("add", "-t", "Found from the folder", "--id", "from-cwd", "body", cwd=project / "src")
    assert done.returncode == 0 and not loaded, done.stderr
    assert Store(project / ".quipu").exists("from-cwd") and not user.exists("from-cwd")
    helps = []
    for columns in ("60", "200"):  # the help is as wide as the client's terminal says
        served, loaded = run("add", "--help", COLUMNS=columns)
        assert not loaded and served.stdout == run("add", "--help", COLUMNS=columns, **OFF)[0].stdout
        helps.append(served.stdout)
    assert helps[0] != helps[1]
    # A variable the server's own start did not have reaches the command: QUIPU_STORE picks the store.
    done, loaded = run("add", "-t", "Pinned by the variable", "--id", "by-env", "body", cwd=project,
                       QUIPU_STORE=str(user.root))
    assert done.returncode == 0 and not loaded and user.exists("by-env")
    # The umask the files are written with is the client's.
    os.umask(old := os.umask(0o077))
    done, _ = run("add", "-t", "Private file", "--id", "private", "body", cwd=project)
    os.umask(old)
    assert done.returncode == 0


def test_ctrl_c_reaches_the_command_and_nothing_is_committed(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")
    serving(home, store)
    head = git(store.root, "rev-parse", "HEAD")
    lock = os.open(store.root / ".git" / gitstore.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the add waits for the store's lock, in the server's child
    try:
        proc = subprocess.Popen([real_python(), "-m", "quipu", "--store", str(store.root), "add", "-t", "Waits",
                                 "--id", "waits", "a body"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        server_pid = places.pid_of(str(home), "command")
        wait_for(lambda: _children_of(server_pid or 0), "the server's child to run the add")
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(lock)
    assert proc.returncode == 130 and "interrupted" in err
    assert git(store.root, "rev-parse", "HEAD") == head and not store.exists("waits")


def _children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def test_the_quipu_script_and_python_m_quipu_share_one_server(tmp_path: Path, home: Path) -> None:
    """A venv's `quipu` script runs `python3`, `python -m quipu` often `python`: one interpreter."""
    store = example_store(tmp_path / "store")
    script = Path(real_python()).parent / "quipu"
    twin = Path(real_python()).parent / ("python3" if Path(real_python()).name == "python" else "python")
    if not script.exists() or not twin.exists():
        pytest.skip("no `quipu` script or no second name for the interpreter beside it")
    subprocess.run([str(script), "--store", str(store.root), "show", "deploy-procedure"], capture_output=True,
                   check=True, timeout=120)
    started(home)
    for python in (real_python(), str(twin)):
        done = subprocess.run([python, "-X", "importtime", "-m", "quipu", "--store", str(store.root), "show",
                               "deploy-procedure"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "| quipu.cli" not in done.stderr, python


def test_a_client_that_gives_up_before_the_go_ahead_runs_nothing_there(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")
    pid = serving(home, store)
    head = git(store.root, "rev-parse", "HEAD")
    argv = ["--store", str(store.root), "add", "-t", "Never run", "--id", "never", "a body"]
    probe = "import sys; from quipu.warm import client; sys.stdout.buffer.write(client.identity(sys.path[1:]))"
    identity = subprocess.run([real_python(), "-c", probe], capture_output=True, check=True).stdout  # as `-m quipu` has it
    fields = [identity, os.getcwdb(), b"\0".join(k + b"=" + v for k, v in os.environb.items()),
              b"\0".join(a.encode() for a in argv), b"18", b"utf-8\0strict\x000\x000\n" * 2 + b"utf-8\0strict\x001\x000"]
    request = client.encode(fields)
    assert server.decode(request).argv == argv
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(home / "run" / "command.sock"))
        with open(os.devnull, "rb") as null_in, open(os.devnull, "wb") as null_out:
            socket.send_fds(conn, [request], [null_in.fileno(), null_out.fileno(), null_out.fileno()])
        assert conn.recv(32).startswith(b"P")
    time.sleep(1)
    assert git(store.root, "rev-parse", "HEAD") == head and not store.exists("never")
    assert not _children_of(pid)
    done, _loaded = run(*argv)
    assert done.returncode == 0 and store.exists("never")
    # and the server goes on serving: a client waits ANSWER_SECONDS for it, then runs the command
    # itself, so on a loaded machine one request may be run here; one of a few is served there
    for n in range(3):
        done, loaded = run("--store", str(store.root), "add", "-t", f"Served {n}", "--id", f"served-{n}", "a body")
        assert done.returncode == 0 and store.exists(f"served-{n}"), done.stderr
        if not loaded:
            break
    assert not loaded


def test_a_server_of_another_kind_declines_and_makes_way(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")
    pid = serving(home, store)
    other = tmp_path / "elsewhere"
    other.mkdir()
    # Another sys.path, warnings made errors, another encoding: each runs alone, correctly.
    kinds = [{"PYTHONPATH": str(other)}, {"PYTHONWARNINGS": "error"}, {"PYTHONUTF8": "1", "LC_ALL": "C"}]
    assert len(kinds) == places_decline()
    for n, env in enumerate(kinds):
        done, loaded = run("--store", str(store.root), "add", "-t", f"Other kind {n}", "--id", f"other-{n}", "body", **env)
        assert done.returncode == 0 and loaded and store.exists(f"other-{n}"), done.stderr
    wait_for(lambda: not alive(pid), "the server to make way")


def places_decline() -> int:
    return server.DECLINE_AT_MOST


def test_changed_code_stops_the_server(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")
    pid = serving(home, store)
    loaded_file = Path(client.__file__).parent.parent / "store" / "notes.py"
    stat = loaded_file.stat()
    try:
        os.utime(loaded_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        done, loaded = run("--store", str(store.root), "show", "deploy-procedure")
        assert done.returncode == 0 and loaded  # declined: run here, with the code as it is now
    finally:
        os.utime(loaded_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    wait_for(lambda: not alive(pid), "the old server to stop")


def test_no_server_when_turned_off_or_when_its_folder_is_open_to_others(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")
    done, loaded = run("--store", str(store.root), "show", "deploy-procedure", **OFF)
    assert done.returncode == 0 and loaded
    assert not (home / "run").exists() and not (home / "command-server.started").exists()
    (home / "run").mkdir(parents=True)
    (home / "run").chmod(0o755)
    done, loaded = run("--store", str(store.root), "show", "deploy-procedure")
    assert done.returncode == 0 and loaded
    wait_for(lambda: "chmod 700" in log_of(home), "the server's refusal in the log")
    assert not (home / "run" / "command.sock").exists()
    doctor = json.loads(quipu("--store", str(store.root), "doctor", "--json").stdout)["checks"]
    found = next(c for c in doctor if c["name"] == "command server")
    assert not found["ok"] and found["details"] == [f"chmod 700 {home / 'run'}"]


def test_doctor_says_whether_the_command_server_runs(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")

    def check(**env: str) -> dict[str, object]:
        checks = json.loads(quipu("--store", str(store.root), "doctor", "--json", env=env).stdout)["checks"]
        return next(c for c in checks if c["name"] == "command server")

    assert "not running" in str(check()["summary"])
    pid = serving(home, store)
    found = check()
    assert found["ok"] and f"process {pid}" in str(found["summary"])
    assert "off" in str(check(**OFF)["summary"])
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not (home / "run" / "command.sock").exists(), "the server to remove its socket")


def test_twenty_terminals_adding_at_once_lose_nothing(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")
    serving(home, store)
    procs = [subprocess.Popen([real_python(), "-m", "quipu", "--store", str(store.root), "add", "-t", f"Terminal {n}",
                               "--id", f"terminal-{n}", f"Written by terminal number {n} of twenty."],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(20)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert all(store.exists(f"terminal-{n}") for n in range(20))


def test_the_server_has_loaded_every_module_the_commands_load() -> None:
    """What a served command imports in the child is paid on every command: the warm list must cover it."""
    probe = ("import sys, json\nfrom quipu.warm import server\nserver.warm()\nprint(json.dumps(sorted(sys.modules)))")
    warm = set(json.loads(subprocess.run([real_python(), "-c", probe], capture_output=True, text=True,
                                         check=True).stdout))
    run_alone = ("import sys, json, io, contextlib\nfrom quipu import cli\nargv = sys.argv[1:]\n"
                 "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
                 "    cli.main(argv)\nprint(json.dumps(sorted(sys.modules)))")
    store = Path(os.environ["HOME"]) / "store"
    example_store(store)
    for argv in (["add", "-t", "Warm check", "--id", "warm-check", "body"], ["show", "warm-check"],
                 ["label", "warm-check", "pinned"], ["supersede", "deploy-procedure", "warm-check"],
                 ["retract", "warm-check", "--reason", "test"]):
        done = subprocess.run([real_python(), "-c", run_alone, "--store", str(store), *argv], capture_output=True,
                              text=True, check=True)
        missing = sorted(m for m in set(json.loads(done.stdout.splitlines()[-1])) - warm if m.startswith("quipu"))
        assert missing == [], argv


def test_an_add_that_opens_the_editor_runs_in_the_terminals_own_process(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")
    serving(home, store)
    editor = "/bin/sh -c 'printf -- \"---\\ntitle: Written in the editor\\n---\\nThe body from the editor.\\n\" > \"$0\"'"
    primary, secondary = os.openpty()  # a terminal on stdin: `quipu add` with no text opens $EDITOR
    try:
        done = subprocess.run([real_python(), "-X", "importtime", "-m", "quipu", "--store", str(store.root), "add"],
                              stdin=secondary, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "EDITOR": editor, "VISUAL": ""})
    finally:
        os.close(secondary)
        os.close(primary)
    assert done.returncode == 0, done.stderr
    assert any(line.rstrip().endswith("| quipu.cli") for line in done.stderr.splitlines())  # run here, not served
    assert "Written in the editor" in done.stdout
    assert git(store.root, "log", "-1", "--format=%s").startswith("quipu: add")
