"""The prompt hook with its server (quipu/prompt/server.py): real hook processes, a real server
process, real sockets. The server's answer must be the hook's own, byte for byte, and every way
the server can be missing, old, dead, slow or wrong must leave the prompt answered in process."""
from __future__ import annotations

import compileall
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from quipu.prompt import server
from quipu.store.store import Store
from testing.fixtures import REPO_ROOT, add_all, alive, example_store, make_store, memory, quipu, real_python, wait_for

DEPLOY = "how do we deploy shop-api to production?"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return example_store(tmp_path_factory.mktemp("shop") / "store")


@pytest.fixture
def home(quipu_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """QUIPU_HOME with the prompt server on (the default a user gets); any server stopped after."""
    monkeypatch.delenv("QUIPU_PROMPT_SERVER")
    path = Path(os.environ["QUIPU_HOME"])
    yield path
    pid = server_pid(path)
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def server_pid(home: Path) -> int | None:
    return server.pid_of(str(home))


def event(prompt: str, cwd: str = "", **extra: str) -> str:
    return json.dumps({"session_id": f"s-{os.urandom(6).hex()}", "transcript_path": "", "cwd": cwd,
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt, **extra})


def imported(argv: list[str], payload: str = "", **env: str) -> tuple[str, set[str]]:
    """(stdout, every module the process imported, from ``-X importtime``)."""
    done = subprocess.run([real_python(), "-I", "-S", "-X", "importtime", *argv], input=payload.encode(),
                          capture_output=True, env={**os.environ, **env}, timeout=60)
    assert done.returncode == 0
    return done.stdout.decode(), {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if "|" in line}


def run(payload: str, hook: Path = REPO_ROOT / "hooks" / "prompt_submit.py", **env: str) -> tuple[str, bool]:
    """(the hook's stdout, whether this process loaded quipu itself: False means the server answered)."""
    out, modules = imported([str(hook)], payload, **env)
    return out, "quipu" in modules


def started(home: Path) -> None:
    wait_for(lambda: (home / "run" / "prompt.sock").exists() and alive(server_pid(home)), "the prompt server")


def log_of(home: Path) -> str:
    path = home / "logs" / "hook.log"
    return path.read_text() if path.exists() else ""


def test_the_server_answers_every_kind_of_event_as_the_hook_alone_does(shop: Store, home: Path) -> None:
    env = {"QUIPU_STORE": str(shop.root)}
    out, loaded = run(event(DEPLOY, str(shop.root)), **env)
    assert loaded and "deploy-procedure" in out  # no server yet: answered in process, one started
    started(home)
    cwd = str(shop.root)
    payloads = [  # each made twice: a session of its own for each way of answering
        lambda: event(DEPLOY, cwd),
        lambda: event("thanks, that works", cwd),
        lambda: event("ok", cwd),
        lambda: event("how do we rotate the stripe webhook secret?", cwd),
        lambda: event(DEPLOY + "\n" + "pasted log line with tokens 1234 abcd\n" * 2000, cwd),
        lambda: event(DEPLOY + "\n" + "2024-05-01 12:00:00 INFO worker heartbeat ok\n" * 50_000, cwd),  # 2 MB
        lambda: json.dumps({"hook_event_name": "SessionStart", "prompt": DEPLOY}),
        lambda: "{not json",
        lambda: "",
    ]
    outputs = []
    for make in payloads:
        served, loaded = run(make(), **env)
        alone, alone_loaded = run(make(), QUIPU_PROMPT_SERVER="off", **env)
        assert not loaded and alone_loaded
        assert served == alone, make()[:80]
        outputs.append(served)
    assert all("deploy-procedure" in outputs[i] for i in (0, 4, 5))
    # Answered by the server, the hook process loads nothing of quipu but its client (which ends
    # the process while it is still being imported, so -X importtime never lists it): the socket
    # module and gc (to turn the collector off) alone.
    bare = imported(["-c", "pass"])[1]
    out, modules = imported([str(REPO_ROOT / "hooks" / "prompt_submit.py")], event(DEPLOY, cwd), **env)
    assert "deploy-procedure" in out and modules - bare == {"gc", "_socket"}
    assert outputs[1:3] == ["", ""] and outputs[6:] == ["", "", ""]


def test_each_prompt_is_answered_with_its_own_environment_and_session(tmp_path: Path, shop: Store, home: Path) -> None:
    other = example_store(tmp_path / "other")
    other.add(memory("kiln-firing", "Kiln firing schedule for stoneware", "Cone 6 glaze firing: ramp 150 an hour."))
    quipu("--store", str(other.root), "index", "--refresh")
    run(event(DEPLOY), QUIPU_STORE=str(shop.root))
    started(home)
    kiln = event("what is the kiln firing schedule for stoneware?")
    assert "kiln-firing" in run(kiln, QUIPU_STORE=str(other.root))[0]
    assert run(kiln, QUIPU_STORE=str(shop.root)) == ("", False)  # one server, the store the client names
    # One session: what was shown once is not shown again; the server keeps the same record the hook does.
    again = event(DEPLOY, session_id="s-one-session")
    first, loaded = run(again, QUIPU_STORE=str(shop.root))
    assert "deploy-procedure" in first and not loaded
    assert "deploy-procedure" not in run(again, QUIPU_STORE=str(shop.root))[0]
    # inside quipu's own model child the client stops at once: silent, nothing of quipu loaded
    assert run(event(DEPLOY), QUIPU_STORE=str(shop.root), QUIPU_CHILD="1") == ("", False)


def test_the_server_sees_each_write_and_a_rebuilt_index(tmp_path: Path, home: Path) -> None:
    store = example_store(tmp_path / "store")
    env = {"QUIPU_STORE": str(store.root)}
    prompt = event("what glaze do we use on the kiln stoneware?")
    run(prompt, **env)
    started(home)
    assert run(prompt, **env) == ("", False)
    done = quipu("--store", str(store.root), "add", "--id", "kiln-glaze", "--title", "Kiln stoneware glaze",
                 "--class", "project-note", "Stoneware in the kiln gets the celadon glaze.")
    assert done.returncode == 0, done.stderr
    out, loaded = run(event("what glaze do we use on the kiln stoneware?"), **env)
    assert "kiln-glaze" in out and not loaded  # a write in place, seen through the kept connection
    inode = (store.root / ".cache" / "index.sqlite").stat().st_ino
    assert quipu("--store", str(store.root), "index", "--rebuild").returncode == 0
    assert (store.root / ".cache" / "index.sqlite").stat().st_ino != inode  # a new file
    out, loaded = run(event("what glaze do we use on the kiln stoneware?"), **env)
    assert "kiln-glaze" in out and not loaded


def test_a_dead_server_a_silent_one_and_a_wrong_one_leave_the_prompt_answered(shop: Store, home: Path) -> None:
    env = {"QUIPU_STORE": str(shop.root)}
    run(event(DEPLOY), **env)
    started(home)
    pid = server_pid(home)
    assert pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), "the server to die")
    assert (home / "run" / "prompt.sock").exists()  # a dead server's socket, refusing connections
    os.utime(home / "prompt-server.started", (time.time() - 3600, time.time() - 3600))  # the start mark is old
    out, loaded = run(event(DEPLOY), **env)
    assert "deploy-procedure" in out and loaded
    wait_for(lambda: alive(server_pid(home)) and server_pid(home) != pid, "a new server")
    assert "deploy-procedure" in run(event(DEPLOY), **env)[0]
    # Something else listening on the socket: one that closes at once, one that answers nonsense.
    new = server_pid(home)
    assert new
    os.kill(new, signal.SIGKILL)
    wait_for(lambda: not alive(new), "the server to die")
    path = str(home / "run" / "prompt.sock")
    os.unlink(path)
    for reply in (b"", b"?garbage"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            listener.listen(1)
            child = subprocess.Popen([real_python(), "-I", "-S", str(REPO_ROOT / "hooks" / "prompt_submit.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, **env})
            assert child.stdin is not None
            child.stdin.write(event(DEPLOY).encode())
            child.stdin.close()
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(30)
                while conn.recv(65536):
                    pass
                conn.sendall(reply)
            assert child.stdout is not None and child.wait(timeout=60) == 0
            assert "deploy-procedure" in child.stdout.read().decode()
        os.unlink(path)


def test_a_server_that_takes_the_prompt_and_never_answers_costs_one_silent_prompt(shop: Store, home: Path) -> None:
    run_dir = home / "run"
    run_dir.mkdir(parents=True, mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(run_dir / "prompt.sock"))
        listener.listen(1)
        child = subprocess.Popen([real_python(), "-I", "-S", str(REPO_ROOT / "hooks" / "prompt_submit.py")],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 env={**os.environ, "QUIPU_STORE": str(shop.root)})
        out, _ = child.communicate(event(DEPLOY).encode(), timeout=60)
        assert child.returncode == 0 and out == b""
    assert "did not answer in time" in log_of(home)


def test_new_code_stops_the_old_server(tmp_path: Path, shop: Store, home: Path) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO_ROOT / "quipu", checkout / "quipu", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "hooks", checkout / "hooks", ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(str(checkout / "quipu"), quiet=1)
    hook = checkout / "hooks" / "prompt_submit.py"
    env = {"QUIPU_STORE": str(shop.root)}
    run(event(DEPLOY), hook, **env)
    started(home)
    pid = server_pid(home)
    assert run(event(DEPLOY), hook, **env)[1] is False
    recall_py = checkout / "quipu" / "prompt" / "recall.py"
    recall_py.write_text(recall_py.read_text() + "\n# upgraded\n")
    time.sleep(server.SOURCE_CHECK_SECONDS + 0.2)  # the server looks at its sources once a second
    out, loaded = run(event(DEPLOY), hook, **env)
    assert "deploy-procedure" in out and loaded  # the old server declined; recalled with the new code
    wait_for(lambda: not alive(pid), "the old server to stop")
    # A hook of another install does not get this server's answer either.
    os.utime(home / "prompt-server.started", (time.time() - 3600, time.time() - 3600))
    run(event(DEPLOY), hook, **env)
    started(home)
    other = server_pid(home)
    for _ in range(server.DECLINE_AT_MOST):  # the repository's own hook: another package folder
        out, loaded = run(event(DEPLOY), **env)
        assert "deploy-procedure" in out and loaded
    wait_for(lambda: not alive(other), "the other install's server to make way")
    os.utime(home / "prompt-server.started", (time.time() - 3600, time.time() - 3600))
    run(event(DEPLOY), **env)
    started(home)
    assert run(event(DEPLOY), **env)[1] is False  # now answered by a server of its own


def test_no_server_when_turned_off_or_when_its_folder_is_open_to_others(shop: Store, home: Path) -> None:
    env = {"QUIPU_STORE": str(shop.root)}
    assert "deploy-procedure" in run(event(DEPLOY), QUIPU_PROMPT_SERVER="off", **env)[0]
    assert not (home / "run").exists() and not (home / "prompt-server.started").exists()
    (home / "run").mkdir(parents=True)
    (home / "run").chmod(0o755)
    assert "deploy-procedure" in run(event(DEPLOY), **env)[0]
    wait_for(lambda: "chmod 700" in log_of(home), "the server's refusal in the log")
    assert not (home / "run" / "prompt.sock").exists()


def test_a_malformed_request_is_refused_and_the_server_keeps_answering(shop: Store, home: Path) -> None:
    env = {"QUIPU_STORE": str(shop.root)}
    run(event(DEPLOY), **env)
    started(home)
    for junk in (b"GET / HTTP/1.1\r\n\r\n", server.PROTOCOL + b"5\nabc", server.PROTOCOL + b"x\n"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(30)
            client.connect(str(home / "run" / "prompt.sock"))
            client.sendall(junk)
            client.shutdown(socket.SHUT_WR)
            assert client.recv(10) == b""
    out, loaded = run(event(DEPLOY), **env)
    assert "deploy-procedure" in out and not loaded


def test_requests_are_read_field_by_field() -> None:
    fields = (b"/pkg\0/usr/bin/python3", b"/work", b"A=1\0B=x=y", b'{"prompt": "hi"}')
    data = server.PROTOCOL + b"".join(b"%d\n" % len(f) + f for f in fields)
    assert server.decode_request(data) == (fields[0], fields[1], {b"A": b"1", b"B": b"x=y"}, fields[3])
    for bad in (data[:-1], data + b"x", b"QUIPU-PROMPT 2\n" + data[len(server.PROTOCOL):], data.replace(b"A=1", b"=11")):
        with pytest.raises(ValueError):
            server.decode_request(bad)


def test_twenty_terminals_at_once_each_get_their_own_answer(shop: Store, home: Path) -> None:
    env = {**os.environ, "QUIPU_STORE": str(shop.root)}
    run(event(DEPLOY), QUIPU_STORE=str(shop.root))
    started(home)
    prompts = [DEPLOY if i % 2 else "thanks, looks good" for i in range(20)]
    children = [subprocess.Popen([real_python(), "-I", "-S", str(REPO_ROOT / "hooks" / "prompt_submit.py")],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) for _ in prompts]
    for child, prompt in zip(children, prompts, strict=True):
        assert child.stdin is not None
        child.stdin.write(event(prompt).encode())
        child.stdin.close()
    for child, prompt in zip(children, prompts, strict=True):
        out = child.stdout.read().decode() if child.stdout else ""
        assert child.wait(timeout=60) == 0
        assert ("deploy-procedure" in out) == (prompt == DEPLOY)


def test_doctor_says_whether_the_prompt_server_answers(shop: Store, home: Path) -> None:
    def doctor(**env: str) -> dict[str, object]:
        done = quipu("--store", str(shop.root), "doctor", "--json", env=env)
        checks = json.loads(done.stdout)["checks"]
        return next(c for c in checks if c["name"] == "prompt server")

    assert "not running" in str(doctor()["summary"])
    run(event(DEPLOY), QUIPU_STORE=str(shop.root))
    started(home)
    found = doctor()
    assert found["ok"] and f"process {server_pid(home)}" in str(found["summary"])
    assert "off" in str(doctor(QUIPU_PROMPT_SERVER="off")["summary"])
    os.kill(server_pid(home) or 0, signal.SIGTERM)
    wait_for(lambda: not (home / "run" / "prompt.sock").exists(), "the server to remove its socket")
    (home / "run").chmod(0o755)
    found = doctor()
    assert not found["ok"] and found["details"] == [f"chmod 700 {home / 'run'}"]


def test_a_project_inside_the_user_store_is_answered_from_both_with_the_clients_folder(tmp_path: Path, home: Path) -> None:
    user = make_store(home / "store")
    add_all(user, [memory("kestrel-keys", "Kestrel signing keys rotation",
                          "The kestrel signing keys are rotated every quarter with the vault rotate job.")])
    project = tmp_path / "proj"
    add_all(make_store(project / ".quipu"), [memory("orbital-ledger", "Orbital ledger reconciliation",
                                                     "The orbital ledger reconciles payments nightly.")])
    (project / "src").mkdir()
    cwd = str(project / "src")
    run(event("when are the kestrel signing keys rotated?", cwd))
    started(home)
    for prompt in ("when are the kestrel signing keys rotated?", "how does the orbital ledger reconciliation run?"):
        served, loaded = run(event(prompt, cwd))
        alone = run(event(prompt, cwd), QUIPU_PROMPT_SERVER="off")[0]
        assert not loaded and served == alone
    assert "store: user" in run(event("when are the kestrel signing keys rotated?", cwd))[0]
    assert "store: project" in run(event("how does the orbital ledger reconciliation run?", cwd))[0]
    # Outside the project (the server's own folder stays wherever the last client was): the user store alone.
    out = run(event("how does the orbital ledger reconciliation run?", str(tmp_path)))[0]
    assert "orbital-ledger" not in out
    # The project's index removed: that prompt is silent and its refresh starts; the next sees it rebuilt.
    (project / ".quipu" / ".cache" / "index.sqlite").unlink()
    assert "orbital-ledger" not in run(event("how does the orbital ledger reconciliation run?", cwd))[0]
    wait_for(lambda: (project / ".quipu" / ".cache" / "index.sqlite").exists(), "the refresh the server started")
    wait_for(lambda: "orbital-ledger" in run(event("how does the orbital ledger reconciliation run?", cwd))[0],
             "the rebuilt index to answer")


def test_a_session_started_with_recall_off_is_silent_served_or_alone(shop: Store, home: Path) -> None:
    """`QUIPU_RECALL=off` in the session's environment: nothing injected, whether the server is up or
    the hook recalls alone; any other value, or none, recalls."""
    env = {"QUIPU_STORE": str(shop.root)}
    assert "deploy-procedure" in run(event(DEPLOY), **env)[0]
    started(home)
    for value in ("off", "0", "no", "FALSE", " Off "):
        for server_switch in ("on", "off"):
            out, _loaded = run(event(DEPLOY), QUIPU_RECALL=value, QUIPU_PROMPT_SERVER=server_switch, **env)
            assert out == "", (value, server_switch)
    out, loaded = run(event(DEPLOY), QUIPU_RECALL="on", **env)
    assert "deploy-procedure" in out and not loaded  # still served
    # the event is read whole even so: the agent writing a long prompt never meets a closed pipe
    big = event(DEPLOY + "\n" + "pasted line\n" * 400_000).encode()  # about 5 MB, past any pipe buffer
    child = subprocess.Popen([real_python(), "-I", "-S", str(REPO_ROOT / "hooks" / "prompt_submit.py")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, **env, "QUIPU_RECALL": "off"})
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(big)  # BrokenPipeError here if the hook left before reading
    child.stdin.close()
    assert child.stdout.read() == b"" and child.wait(timeout=60) == 0
